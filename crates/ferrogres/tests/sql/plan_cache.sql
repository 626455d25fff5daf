-- Simple-query statements repeated with the same text reuse their plan; a plan
-- must never outlive the catalog or settings it was made from.
CREATE TABLE pc (a int, b text);
INSERT INTO pc VALUES (1, 'one'), (2, 'two');
SELECT * FROM pc ORDER BY a;
SELECT * FROM pc ORDER BY a;
DROP TABLE pc;
CREATE TABLE pc (b text, a int8, c bool);
INSERT INTO pc VALUES ('x', 10, true);
SELECT * FROM pc ORDER BY a;
CREATE INDEX pc_a ON pc (a);
SELECT * FROM pc ORDER BY a;
-- A plan made inside a transaction that is rolled back.
BEGIN;
DROP TABLE pc;
CREATE TABLE pc (z int);
SELECT * FROM pc;
ROLLBACK;
SELECT * FROM pc;
SELECT * FROM pc ORDER BY a;
BEGIN;
SAVEPOINT s;
DROP TABLE pc;
CREATE TABLE pc (y int);
SELECT * FROM pc;
ROLLBACK TO SAVEPOINT s;
SELECT * FROM pc;
COMMIT;
-- Settings change what analysis produces.
SET TimeZone = 'UTC';
SELECT '2024-01-01 12:00'::timestamptz;
SET TimeZone = 'America/New_York';
SELECT '2024-01-01 12:00'::timestamptz;
-- 'now' is read when the statement is analyzed: every transaction its own.
BEGIN;
SELECT 'now'::timestamptz = now() AS same;
COMMIT;
SELECT pg_sleep(0.01);
BEGIN;
SELECT 'now'::timestamptz = now() AS same;
COMMIT;
-- The statements of one query string each have their own plan.
SELECT 1 AS one\; SELECT 2 AS two\; SELECT 3 AS three;
SELECT 1 AS one\; SELECT 2 AS two\; SELECT 3 AS three;
BEGIN\; SELECT 4 AS four;
COMMIT;
BEGIN\; SELECT 4 AS four;
COMMIT;
-- Errors are not cached either.
SELECT nosuch FROM pc;
SELECT nosuch FROM pc;
DROP TABLE pc;
