MATCH (p:Person)-[:ACTED_IN]->(m:Movie)
WHERE m.released > 2000
RETURN p.name, count(m) AS movies
ORDER BY movies DESC
LIMIT 10
