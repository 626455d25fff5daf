-- Column privileges: GRANT / REVOKE on columns, pg_attribute.attacl, the
-- checks of exactly the columns a statement reads and writes.
CREATE ROLE colu LOGIN;
CREATE ROLE colgrp NOLOGIN;
CREATE ROLE colv LOGIN;
CREATE TABLE ct (a int PRIMARY KEY, b text, c int DEFAULT 7, d int);
INSERT INTO ct VALUES (1, 'x', 10, 100), (2, 'y', 20, 200);
CREATE TABLE other (a int, z int);
INSERT INTO other VALUES (1, 5);
GRANT SELECT ON other TO colu;
-- nothing granted yet
SET ROLE colu;
SELECT a FROM ct;
SELECT count(*) FROM ct;
RESET ROLE;
GRANT SELECT (a, b), UPDATE (c), INSERT (a, b) ON ct TO colu;
GRANT REFERENCES (a) ON ct TO colu;
SELECT attname, attacl FROM pg_attribute WHERE attrelid = 'ct'::regclass AND attnum > 0 ORDER BY attnum;
SELECT relacl FROM pg_class WHERE relname = 'ct';
\dp ct
SET ROLE colu;
-- the SELECT list, WHERE, ORDER BY, GROUP BY
SELECT a, b FROM ct ORDER BY a;
SELECT a FROM ct WHERE b = 'x';
SELECT b, count(*) FROM ct GROUP BY b ORDER BY b;
SELECT a FROM ct ORDER BY c;
SELECT a FROM ct WHERE d > 0;
SELECT c FROM ct;
SELECT * FROM ct;
SELECT ct.* FROM ct;
-- no column named: any column with SELECT will do
SELECT count(*) FROM ct;
SELECT 1 FROM ct LIMIT 1;
-- joins: ON, USING, the other side
SELECT ct.a, o.z FROM ct JOIN other o ON o.a = ct.a;
SELECT a, z FROM ct JOIN other USING (a);
SELECT ct.a FROM ct JOIN other o ON o.z = ct.d;
-- subqueries reading the outer row
SELECT (SELECT o.z FROM other o WHERE o.a = ct.a) FROM ct ORDER BY 1;
SELECT a FROM ct WHERE EXISTS (SELECT 1 FROM other o WHERE o.z = ct.c);
SELECT a FROM (SELECT a, b FROM ct) s ORDER BY a;
SELECT a FROM (SELECT * FROM ct) s;
-- UPDATE: the SET targets need UPDATE, the columns read SELECT
UPDATE ct SET c = 11 WHERE a = 1;
UPDATE ct SET c = c + 1 WHERE a = 1;
UPDATE ct SET d = 1 WHERE a = 1;
UPDATE ct SET c = 12 WHERE d = 100;
UPDATE ct SET c = 13 WHERE a = 1 RETURNING a, b;
UPDATE ct SET c = 13 WHERE a = 1 RETURNING c;
-- UPDATE ... FROM and DELETE ... USING: the target's columns read
UPDATE ct SET c = o.z FROM other o WHERE o.a = ct.a;
UPDATE ct SET c = o.z FROM other o WHERE o.a = ct.d;
UPDATE ct SET c = o.z FROM other o WHERE o.a = ct.a RETURNING ct.b;
UPDATE ct SET c = o.z FROM other o WHERE o.a = ct.a RETURNING ct.c;
UPDATE ct SET d = o.z FROM other o WHERE o.a = ct.a;
DELETE FROM ct USING other o WHERE o.a = ct.a;
-- INSERT: the listed columns need INSERT; defaulted columns are not inserted
INSERT INTO ct (a, b) VALUES (3, 'z');
INSERT INTO ct VALUES (4, 'w');
INSERT INTO ct VALUES (5, 'v', 1);
INSERT INTO ct (a, c) VALUES (6, 1);
INSERT INTO ct (a, b) VALUES (7, 'u') RETURNING a;
INSERT INTO ct (a, b) VALUES (8, 't') RETURNING d;
INSERT INTO ct (a, b) SELECT a + 100, 'q' FROM other;
-- ON CONFLICT: the inferred columns and DO UPDATE's reads need SELECT
-- (excluded's columns too), its targets UPDATE
INSERT INTO ct (a, b) VALUES (1, 'x') ON CONFLICT (a) DO UPDATE SET c = 5;
INSERT INTO ct (a, b) VALUES (1, 'x') ON CONFLICT (a) DO UPDATE SET c = excluded.a;
INSERT INTO ct (a, b) VALUES (1, 'x') ON CONFLICT (a) DO UPDATE SET c = excluded.d;
INSERT INTO ct (a, b) VALUES (1, 'x') ON CONFLICT (a) DO UPDATE SET c = ct.c + 1;
INSERT INTO ct (a, b) VALUES (1, 'x') ON CONFLICT (a) DO UPDATE SET d = 5;
INSERT INTO ct (a, b) VALUES (1, 'x') ON CONFLICT (a) DO UPDATE SET c = 6 WHERE ct.b = 'x' RETURNING a, b;
INSERT INTO ct (a, b) VALUES (1, 'x') ON CONFLICT (a) DO UPDATE SET c = 6 WHERE ct.d = 1;
INSERT INTO ct (a, b) VALUES (1, 'x') ON CONFLICT (a) DO UPDATE SET c = 6 RETURNING d;
INSERT INTO ct (a, c) VALUES (1, 1) ON CONFLICT (a) DO NOTHING;
INSERT INTO ct (a, b) VALUES (1, 'x') ON CONFLICT DO NOTHING;
INSERT INTO ct (a, b) VALUES (1, 'x') ON CONFLICT ON CONSTRAINT ct_pkey DO UPDATE SET c = 7;
-- DELETE needs the table's DELETE
DELETE FROM ct WHERE a = 3;
-- COPY with and without column lists
COPY ct (a, b) TO STDOUT;
COPY ct TO STDOUT;
COPY ct (a, c) TO STDOUT;
-- has_column_privilege / has_any_column_privilege answer from attacl
SELECT has_column_privilege('ct', 'a', 'SELECT') AS a_sel,
       has_column_privilege('ct', 'c', 'SELECT') AS c_sel,
       has_column_privilege('ct', 'c', 'UPDATE') AS c_upd,
       has_column_privilege('ct', 'a', 'REFERENCES') AS a_ref,
       has_column_privilege('ct', 2::int2, 'INSERT') AS b_ins,
       has_any_column_privilege('ct', 'SELECT') AS any_sel,
       has_any_column_privilege('ct', 'UPDATE') AS any_upd,
       has_any_column_privilege('other', 'UPDATE') AS other_upd,
       has_table_privilege('ct', 'SELECT') AS tbl_sel;
RESET ROLE;
-- REFERENCES on the key column is enough for a foreign key
CREATE TABLE ct2 (k int UNIQUE, l int UNIQUE);
GRANT REFERENCES (k) ON ct2 TO colu;
GRANT CREATE ON SCHEMA public TO colu;
SET ROLE colu;
CREATE TABLE colu_child (x int REFERENCES ct (a));
DROP TABLE colu_child;
CREATE TABLE colu_child (x int REFERENCES ct2 (l));
CREATE TABLE colu_child (x int REFERENCES ct2 (k));
DROP TABLE colu_child;
RESET ROLE;
REVOKE CREATE ON SCHEMA public FROM colu;
-- errors of GRANT on columns
GRANT DELETE (a) ON ct TO colu;
GRANT SELECT (nosuch) ON ct TO colu;
GRANT ALL (d) ON ct TO colv;
SELECT attname, attacl FROM pg_attribute WHERE attrelid = 'ct'::regclass AND attnum > 0 ORDER BY attnum;
-- grant options on a column, granted on by its holder
GRANT SELECT (d) ON ct TO colu WITH GRANT OPTION;
SET ROLE colu;
GRANT SELECT (d) ON ct TO colv;
GRANT SELECT (c) ON ct TO colv;
GRANT SELECT (c, d) ON ct TO colv;
REVOKE SELECT (c) ON ct FROM colv;
RESET ROLE;
\dp ct
-- REVOKE of a column privilege
REVOKE SELECT (d) ON ct FROM colu CASCADE;
REVOKE UPDATE (c) ON ct FROM colu;
SET ROLE colu;
UPDATE ct SET c = 1 WHERE a = 1;
SELECT a, b FROM ct ORDER BY a;
RESET ROLE;
-- a table-level REVOKE takes the privilege from every column too
REVOKE SELECT ON ct FROM colu;
SET ROLE colu;
SELECT a FROM ct;
INSERT INTO ct (a, b) VALUES (9, 's');
RESET ROLE;
SELECT attname, attacl FROM pg_attribute WHERE attrelid = 'ct'::regclass AND attnum > 0 ORDER BY attnum;
-- through a group
GRANT SELECT (b) ON ct TO colgrp;
GRANT colgrp TO colu;
SET ROLE colu;
SELECT b FROM ct ORDER BY b;
SELECT a FROM ct;
RESET ROLE;
-- table-level privileges still cover every column
GRANT SELECT ON ct TO colu;
SET ROLE colu;
SELECT a, c, d FROM ct ORDER BY a;
RESET ROLE;
-- a prepared statement is checked again after a column REVOKE
REVOKE SELECT ON ct FROM colu;
GRANT SELECT (a) ON ct TO colu;
SET ROLE colu;
PREPARE colq AS SELECT a FROM ct ORDER BY a;
EXECUTE colq;
RESET ROLE;
REVOKE SELECT (a) ON ct FROM colu;
SET ROLE colu;
EXECUTE colq;
RESET ROLE;
-- a view reads its table's columns as the view's owner
REVOKE ALL (d) ON ct FROM colv;
GRANT SELECT (a) ON ct TO colv;
GRANT CREATE ON SCHEMA public TO colv;
SET ROLE colv;
CREATE VIEW cv AS SELECT a FROM ct;
CREATE VIEW cv2 AS SELECT a, b FROM ct;
GRANT SELECT ON cv, cv2 TO colu;
RESET ROLE;
SET ROLE colu;
SELECT * FROM cv ORDER BY a;
SELECT * FROM cv2;
SELECT * FROM ct;
RESET ROLE;
REVOKE SELECT (a) ON ct FROM colv;
SET ROLE colu;
SELECT * FROM cv;
RESET ROLE;
SELECT attname, attacl FROM pg_attribute WHERE attrelid = 'ct'::regclass AND attnum > 0 ORDER BY attnum;
DROP VIEW cv, cv2;
REVOKE CREATE ON SCHEMA public FROM colv;
-- information_schema.column_privileges: the table's items and the columns' own
SELECT grantor, grantee, table_name, column_name, privilege_type, is_grantable
  FROM information_schema.column_privileges WHERE table_name IN ('ct', 'ct2')
  ORDER BY table_name, column_name, grantee, privilege_type, grantor;
SET ROLE colu;
SELECT grantor, grantee, table_name, column_name, privilege_type, is_grantable
  FROM information_schema.column_privileges WHERE table_name IN ('ct', 'ct2', 'other')
  ORDER BY table_name, column_name, grantee, privilege_type, grantor;
RESET ROLE;
