-- CREATE TABLE ... AS and SELECT ... INTO: columns from the query, rows streamed in.
CREATE TABLE src (a int, b text, c varchar(5), d numeric(6,2));
INSERT INTO src VALUES (1, 'x', 'ab', 1.5), (2, 'y', 'cd', 2.25), (3, NULL, NULL, NULL);
CREATE TABLE t1 AS SELECT * FROM src;
SELECT * FROM t1 ORDER BY a;
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 't1'::regclass AND attnum > 0 ORDER BY attnum;
-- An explicit column list renames the first columns.
CREATE TABLE t2 (x, y) AS SELECT a, b FROM src WHERE a > 1;
SELECT * FROM t2 ORDER BY x;
CREATE TABLE t3 (x) AS SELECT a, b FROM src;
SELECT x, b FROM t3 ORDER BY x;
-- Literals and NULL become text; expressions keep their type.
CREATE TABLE t4 AS SELECT 1 AS one, 'abc' AS lit, NULL AS n, a + 1, a::int8 * 2 AS big FROM src;
SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute
 WHERE attrelid = 't4'::regclass AND attnum > 0 ORDER BY attnum;
SELECT * FROM t4 ORDER BY big;
-- Errors.
CREATE TABLE t5 (x, y, z) AS SELECT a, b FROM src;
CREATE TABLE t5 AS SELECT a AS q, b AS q FROM src;
CREATE TABLE t5 (q, q) AS SELECT a, b FROM src;
CREATE TABLE t5 AS SELECT 1, 2;
CREATE TABLE t1 AS SELECT 1;
CREATE TABLE t5 AS SELECT * FROM nosuch;
CREATE TABLE nosuch.t5 AS SELECT 1;
CREATE TABLE t5 AS SELECT pg_sleep(0);
SELECT count(*) FROM pg_class WHERE relname = 't5';
-- IF NOT EXISTS: a NOTICE, the table untouched.
CREATE TABLE IF NOT EXISTS t1 AS SELECT 1;
CREATE TABLE IF NOT EXISTS t1 AS SELECT 1 WITH NO DATA;
SELECT count(*) FROM t1;
CREATE TABLE IF NOT EXISTS t6 AS SELECT 42 AS v;
SELECT * FROM t6;
-- WITH NO DATA: the columns, no rows.
CREATE TABLE t7 AS SELECT * FROM src WITH NO DATA;
SELECT count(*) FROM t7;
INSERT INTO t7 VALUES (9, 'z', 'toolong', 1);
INSERT INTO t7 VALUES (9, 'z', 'ok', 1);
SELECT * FROM t7;
CREATE TABLE t8 AS SELECT * FROM src WITH DATA;
SELECT count(*) FROM t8;
-- SELECT INTO, also of a set operation.
SELECT * INTO t9 FROM src WHERE a = 1;
SELECT * FROM t9;
SELECT 1 AS a INTO t10 UNION SELECT 2;
SELECT * FROM t10 ORDER BY a;
SELECT * INTO t9 FROM src;
-- VALUES, ORDER BY, LIMIT, aggregates, joins, set-returning functions.
CREATE TABLE t11 AS VALUES (1, 'a'), (2, 'b');
SELECT * FROM t11;
CREATE TABLE t12 AS SELECT a FROM src ORDER BY a DESC LIMIT 2;
SELECT * FROM t12;
CREATE TABLE t13 AS SELECT b, count(*) AS n, sum(d) AS s FROM src GROUP BY b;
SELECT * FROM t13 ORDER BY b;
CREATE TABLE t14 AS SELECT s.a, t2.y FROM src s JOIN t2 ON s.a = t2.x;
SELECT * FROM t14 ORDER BY a;
CREATE TABLE t15 AS SELECT generate_series(1, 3) AS g;
SELECT * FROM t15;
CREATE TABLE t16 AS SELECT g, g * g AS sq FROM generate_series(1, 20000) g;
SELECT count(*), sum(sq) FROM t16;
-- Temporary tables, storage options, schemas.
CREATE TEMP TABLE t17 AS SELECT 1 AS q;
SELECT n.nspname LIKE 'pg_temp%' AS temp FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE relname = 't17';
SELECT a INTO TEMP t18 FROM src;
SELECT count(*) FROM t18;
CREATE TABLE t19 WITH (fillfactor = 70) AS SELECT 1 AS a;
SELECT * FROM t19;
CREATE SCHEMA s1;
CREATE TABLE s1.t20 AS SELECT a FROM src WHERE a < 3;
SELECT * FROM s1.t20 ORDER BY a;
-- Transactions: rolled back with its rows, visible to the rest of its block.
BEGIN;
CREATE TABLE t21 AS SELECT 1 AS a;
INSERT INTO t21 SELECT a + 1 FROM t21;
SELECT * FROM t21 ORDER BY a;
ROLLBACK;
SELECT * FROM t21;
BEGIN;
CREATE TABLE t22 AS SELECT a FROM src;
COMMIT;
SELECT count(*) FROM t22;
-- A read-only transaction refuses it.
BEGIN READ ONLY;
CREATE TABLE t23 AS SELECT 1;
ROLLBACK;
BEGIN READ ONLY;
SELECT 1 INTO t23;
ROLLBACK;
-- The new table is an ordinary one.
CREATE INDEX t1_a ON t1 (a);
UPDATE t1 SET b = 'w' WHERE a = 3;
DELETE FROM t1 WHERE a = 1;
SELECT * FROM t1 ORDER BY a;
-- AS EXECUTE: a prepared query with its arguments.
PREPARE q(int) AS SELECT a, a * 10 AS b FROM src WHERE a >= $1;
CREATE TABLE x1 AS EXECUTE q(2);
SELECT * FROM x1 ORDER BY a;
CREATE TABLE x2 (k) AS EXECUTE q(1) WITH NO DATA;
SELECT * FROM x2;
CREATE TABLE IF NOT EXISTS x1 AS EXECUTE q(1);
SELECT count(*) FROM x1;
PREPARE ins AS INSERT INTO src VALUES (5);
CREATE TABLE x3 AS EXECUTE ins;
CREATE TABLE x3 AS EXECUTE nosuch;
CREATE TABLE x3 AS EXECUTE q;
CREATE TABLE x3 AS EXECUTE q('a');
-- EXPLAIN: the query's plan; only ANALYZE creates the table.
EXPLAIN (COSTS OFF) CREATE TABLE x4 AS SELECT * FROM src WHERE a > 1;
SELECT * FROM x4;
EXPLAIN (COSTS OFF) CREATE TABLE src AS SELECT 1;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) CREATE TABLE x5 AS SELECT * FROM src WHERE a > 1;
SELECT a FROM x5 ORDER BY a;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT a, b INTO x6 FROM src;
SELECT count(*) FROM x6;
DROP TABLE x1, x2, x5, x6;
DROP TABLE t1, t2, t3, t4, t6, t7, t8, t9, t10, t11, t12, t13, t14, t15, t16, t19, s1.t20, t22;
