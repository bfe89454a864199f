MATCH (c:Customer)-[:PLACED]->(o:Order)-[:CONTAINS]->(p:Product)
WITH c, sum(o.total) AS spent, collect(DISTINCT p.category) AS categories
WHERE spent > 100
RETURN c.id, spent, size(categories) AS breadth
