MATCH path = shortestPath((s:Station {name: 'North'})-[:LINE*]-(t:Station {name: 'Harbour'}))
RETURN [n IN nodes(path) | n.name] AS stops, length(path) AS hops
