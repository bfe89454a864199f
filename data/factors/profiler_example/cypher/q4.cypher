MERGE (g:Gene {symbol: 'TP53'})
MERGE (d:Disease {name: 'Li-Fraumeni syndrome'})
MERGE (g)-[r:ASSOCIATED_WITH]->(d)
ON CREATE SET r.source = 'curated', r.score = 0.9
RETURN g, r, d
