-- Reference sample of SQL notation: schema, inserts and queries over a small shop database.
CREATE TABLE customers (
    id INTEGER PRIMARY KEY,
    name VARCHAR(100) NOT NULL,
    email VARCHAR(255) UNIQUE,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
);

CREATE TABLE orders (
    id INTEGER PRIMARY KEY,
    customer_id INTEGER NOT NULL REFERENCES customers(id),
    total DECIMAL(10, 2) NOT NULL,
    status VARCHAR(20) DEFAULT 'open',
    placed_at DATE
);

CREATE INDEX idx_orders_customer ON orders (customer_id);

INSERT INTO customers (id, name, email) VALUES (1, 'Ada', 'ada@example.org');
INSERT INTO customers (id, name, email) VALUES (2, 'Bob', 'bob@example.org');
INSERT INTO orders (id, customer_id, total, status, placed_at) VALUES (10, 1, 25.50, 'paid', '2024-01-05');
INSERT INTO orders (id, customer_id, total, status, placed_at) VALUES (11, 1, 7.25, 'open', '2024-02-11');

SELECT c.name, COUNT(o.id) AS orders, SUM(o.total) AS revenue
FROM customers c
LEFT JOIN orders o ON o.customer_id = c.id
WHERE o.status <> 'cancelled' OR o.status IS NULL
GROUP BY c.name
HAVING COUNT(o.id) > 0
ORDER BY revenue DESC
LIMIT 10;

UPDATE orders SET status = 'shipped' WHERE status = 'paid' AND placed_at < '2024-03-01';

DELETE FROM orders WHERE total = 0;

SELECT name FROM customers
WHERE id IN (SELECT customer_id FROM orders GROUP BY customer_id HAVING SUM(total) > 20);

WITH monthly AS (
    SELECT strftime('%Y-%m', placed_at) AS month, SUM(total) AS revenue
    FROM orders
    GROUP BY month
)
SELECT month, revenue, AVG(revenue) OVER (ORDER BY month ROWS 2 PRECEDING) AS moving_avg
FROM monthly
ORDER BY month;

SELECT DISTINCT status, CASE WHEN total > 20 THEN 'large' ELSE 'small' END AS size
FROM orders
WHERE placed_at BETWEEN '2024-01-01' AND '2024-12-31';
