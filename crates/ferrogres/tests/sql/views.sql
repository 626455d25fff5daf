-- Views: CREATE [OR REPLACE] [TEMP] VIEW, DROP VIEW, ALTER VIEW RENAME,
-- dependencies, expansion in FROM, the catalog rows.
CREATE TABLE t (a int, b text, c numeric(6,2));
INSERT INTO t VALUES (1, 'x', 1.50), (2, 'y', 2.25), (3, 'z', 3.00);
CREATE VIEW v AS SELECT a, b FROM t WHERE a > 1;
SELECT * FROM v ORDER BY a;
SELECT b FROM v WHERE a = 3;
SELECT count(*), max(a) FROM v;
SELECT v.a, t.c FROM v JOIN t ON t.a = v.a ORDER BY 1;
SELECT x.a FROM v AS x(a) ORDER BY 1;
SELECT * FROM (SELECT a * 10 AS ten FROM v) s ORDER BY ten;
WITH w AS (SELECT * FROM v) SELECT count(*) FROM w;
SELECT a FROM t WHERE a IN (SELECT a FROM v) ORDER BY a;
SELECT (SELECT max(b) FROM v);
-- The view sees later changes of the table.
INSERT INTO t VALUES (4, 'w', 4.75);
SELECT * FROM v ORDER BY a;
-- Duplicates, column lists, OR REPLACE rules.
CREATE VIEW v AS SELECT 1;
CREATE TABLE v (x int);
CREATE VIEW t AS SELECT 1;
CREATE VIEW w (x, y) AS SELECT a, b FROM t;
SELECT * FROM w ORDER BY x;
SELECT x FROM w WHERE y = 'y';
CREATE VIEW bad (x, y, z) AS SELECT 1, 2;
CREATE VIEW dup AS SELECT a, b AS a FROM t;
CREATE VIEW missing AS SELECT nope FROM t;
CREATE VIEW missing AS SELECT a FROM nope;
CREATE OR REPLACE VIEW v AS SELECT a FROM t;
CREATE OR REPLACE VIEW v AS SELECT b, a FROM t;
CREATE OR REPLACE VIEW v AS SELECT a::text, b FROM t;
CREATE OR REPLACE VIEW v AS SELECT a, b, c * 2 AS c2 FROM t WHERE a > 2;
SELECT * FROM v ORDER BY a;
CREATE OR REPLACE VIEW t AS SELECT 1 AS a;
-- Constants and expressions.
CREATE VIEW consts AS SELECT 1 AS one, 'a' AS two, 2.5 AS three, NULL::int AS four;
SELECT * FROM consts;
SELECT attname, atttypid::regtype, attnum FROM pg_attribute WHERE attrelid = 'consts'::regclass ORDER BY attnum;
SELECT relname, relkind, relnatts, relpages, relhasrules FROM pg_class WHERE relname IN ('v', 'w', 'consts', 't') ORDER BY relname;
-- Views on views, aggregates, joins, set operations.
CREATE VIEW w2 AS SELECT x, upper(y) AS uy FROM w WHERE x < 4;
SELECT * FROM w2 ORDER BY x;
CREATE VIEW agg AS SELECT count(*) AS n, sum(c) AS total FROM t;
SELECT * FROM agg;
CREATE VIEW j AS SELECT t1.a, t2.b FROM t t1 JOIN t t2 ON t1.a = t2.a + 1;
SELECT * FROM j ORDER BY a;
CREATE VIEW u AS SELECT a FROM t UNION SELECT 10;
SELECT * FROM u ORDER BY a;
-- Changing rows through a view.
INSERT INTO agg VALUES (1, 2);
UPDATE agg SET n = 1;
DELETE FROM agg;
DELETE FROM u;
UPDATE j SET a = 1;
-- Dependencies.
DROP TABLE t;
DROP VIEW w;
DROP VIEW t;
DROP TABLE v;
DROP TABLE IF EXISTS v;
DROP VIEW nope;
DROP VIEW IF EXISTS nope, consts;
SELECT * FROM consts;
DROP VIEW w2;
DROP VIEW w;
SELECT * FROM w;
-- Rename.
ALTER VIEW v RENAME TO v2;
SELECT a FROM v2 ORDER BY a;
SELECT * FROM v;
ALTER VIEW IF EXISTS nope RENAME TO nope2;
ALTER VIEW v2 RENAME TO j;
-- Transactions: CREATE VIEW and DROP VIEW roll back.
BEGIN;
CREATE VIEW tv AS SELECT a FROM t;
SELECT count(*) FROM tv;
ROLLBACK;
SELECT * FROM tv;
BEGIN;
DROP VIEW agg;
ROLLBACK;
SELECT n FROM agg;
-- Search path: names are bound when the view is created.
CREATE SCHEMA s;
CREATE TABLE s.t (a int);
INSERT INTO s.t VALUES (100);
CREATE VIEW s.sv AS SELECT a FROM t;
SET search_path = s, public;
SELECT * FROM t;
SELECT count(*) FROM sv;
SELECT count(*) FROM public.j;
RESET search_path;
SELECT count(*) FROM s.sv;
-- Temporary views.
CREATE TEMP VIEW tmpv AS SELECT a FROM t WHERE a = 1;
SELECT * FROM tmpv;
CREATE TEMP TABLE tt (q int);
CREATE VIEW vtt AS SELECT q FROM tt;
SELECT relpersistence FROM pg_class WHERE relname = 'vtt';
-- Catalog views.
SELECT schemaname, viewname, viewowner FROM pg_views WHERE schemaname IN ('public', 's') ORDER BY viewname;
SELECT table_schema, table_name, check_option, is_updatable, is_insertable_into FROM information_schema.views WHERE table_schema IN ('public', 's') ORDER BY table_name;
SELECT table_name, table_type, is_insertable_into FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name;
SELECT pg_get_viewdef('agg') IS NOT NULL AS has_def, pg_get_viewdef('t') IS NULL AS table_has_none;
-- CASCADE.
DROP VIEW j CASCADE;
DROP TABLE t CASCADE;
SELECT viewname FROM pg_views WHERE schemaname = 'public' ORDER BY 1;
DROP SCHEMA s CASCADE;
-- INSERT through automatically updatable views.
CREATE TABLE bt (a int, b text DEFAULT 'dflt', c int);
CREATE VIEW bv AS SELECT a, b, c * 2 AS c2 FROM bt WHERE a > 0;
INSERT INTO bv (a, c2) VALUES (1, 2);
INSERT INTO bv VALUES (1);
INSERT INTO bv (a) VALUES (5);
INSERT INTO bv VALUES (1, 'q', 3);
INSERT INTO bv (b, a) VALUES ('neg', -1), ('pos', 7);
INSERT INTO bv (nope) VALUES (1);
CREATE VIEW rn (x, y) AS SELECT a, b FROM bt;
INSERT INTO rn VALUES (10, 'ten');
INSERT INTO rn (y) SELECT 'sel';
CREATE VIEW vv AS SELECT x, y FROM rn WHERE x > 5;
INSERT INTO vv VALUES (20, 'twenty');
SELECT * FROM bt ORDER BY a NULLS FIRST, b;
SELECT * FROM bv ORDER BY a;
DROP TABLE bt CASCADE;
