MATCH (a:Person {name: 'Ada'})-[:KNOWS*1..3]-(friend:Person)
WHERE friend <> a
RETURN DISTINCT friend.name AS name
