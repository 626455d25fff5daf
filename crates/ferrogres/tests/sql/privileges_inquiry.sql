CREATE ROLE regress_a;
CREATE ROLE regress_b;
CREATE SCHEMA regress_s;
CREATE TABLE regress_s.pt (x int, y text);
CREATE TABLE pt2 (x int);
CREATE SEQUENCE regress_seq;
CREATE TABLE role_list (r name);
INSERT INTO role_list VALUES ('regress_a'), ('regress_b'), ('postgres');
GRANT USAGE ON SCHEMA regress_s TO regress_a;
GRANT SELECT, INSERT ON regress_s.pt TO regress_a;
GRANT UPDATE ON pt2 TO regress_b WITH GRANT OPTION;
GRANT USAGE ON SEQUENCE regress_seq TO regress_b;
SELECT r, has_table_privilege(r, 'regress_s.pt', 'SELECT') AS sel,
       has_table_privilege(r, 'pt2', 'UPDATE WITH GRANT OPTION') AS upd_go,
       has_schema_privilege(r, 'regress_s', 'USAGE') AS usage,
       has_sequence_privilege(r, 'regress_seq', 'USAGE') AS seq,
       has_database_privilege(r, current_database(), 'CONNECT') AS conn,
       has_column_privilege(r, 'regress_s.pt', 'y', 'INSERT') AS col,
       has_any_column_privilege(r, 'pt2', 'UPDATE') AS anycol
  FROM role_list ORDER BY r;
SELECT c.relname, has_table_privilege('regress_a', c.oid, 'SELECT') AS a_sel,
       has_table_privilege('regress_b', c.oid, 'SELECT, UPDATE') AS b_any
  FROM pg_class c WHERE c.relname IN ('pt', 'pt2', 'regress_seq', 'role_list') ORDER BY 1;
SELECT has_table_privilege('regress_a', 999999::oid, 'SELECT') IS NULL AS no_such_oid;
SELECT has_table_privilege('regress_a', 'pg_authid', 'SELECT') AS authid,
       has_table_privilege('regress_a', 'pg_catalog.pg_roles', 'SELECT') AS roles,
       has_table_privilege('regress_a', 'pg_class', 'SELECT, UPDATE') AS class,
       has_table_privilege('regress_a', 'pg_class', 'UPDATE') AS class_upd,
       has_table_privilege('postgres', 'pg_authid', 'SELECT') AS su_authid;
SELECT has_column_privilege('regress_s.pt', 99::int2, 'SELECT') IS NULL AS no_such_attnum;
SELECT has_table_privilege('regress_a', 'nosuch', 'SELECT');
SELECT has_table_privilege('nosuch_role', 'pt2', 'SELECT');
SELECT has_table_privilege('pt2', 'USAGE');
SELECT has_column_privilege('pt2', 'nosuch', 'SELECT');
SELECT has_sequence_privilege('pt2', 'USAGE');
SELECT has_schema_privilege('nosuch', 'USAGE');
SELECT has_table_privilege('PT2', 'select, rule');
SELECT has_table_privilege(NULL::name, 'pt2', 'SELECT') IS NULL AS null_role;
SET ROLE regress_b;
SELECT has_table_privilege('pt2', 'UPDATE'), has_table_privilege('regress_s.pt', 'SELECT');
SELECT relname FROM pg_class WHERE relname IN ('pt', 'pt2', 'regress_seq') AND has_table_privilege(oid, 'UPDATE, USAGE') ORDER BY 1;
SELECT grantor, grantee, table_schema, table_name, privilege_type, is_grantable, with_hierarchy
  FROM information_schema.table_privileges WHERE table_name IN ('pt', 'pt2', 'pv')
  ORDER BY table_name, grantee, privilege_type;
SELECT grantor, grantee, table_name, privilege_type, is_grantable
  FROM information_schema.role_table_grants WHERE table_name IN ('pt', 'pt2', 'pv')
  ORDER BY table_name, grantee, privilege_type;
RESET ROLE;
CREATE VIEW pv AS SELECT * FROM pt2;
GRANT SELECT ON pv TO PUBLIC;
GRANT DELETE ON pv TO regress_b;
SELECT grantor, grantee, table_catalog = current_database() AS this_db, table_schema, table_name, privilege_type, is_grantable, with_hierarchy
  FROM information_schema.table_privileges WHERE table_name IN ('pt', 'pt2', 'pv')
  ORDER BY table_name, grantee, privilege_type;
SET ROLE regress_a;
SELECT grantor, grantee, table_name, privilege_type, is_grantable
  FROM information_schema.table_privileges WHERE table_name IN ('pt', 'pt2', 'pv')
  ORDER BY table_name, grantee, privilege_type;
SELECT grantor, grantee, table_name, privilege_type, is_grantable
  FROM information_schema.role_table_grants WHERE table_name IN ('pt', 'pt2', 'pv')
  ORDER BY table_name, grantee, privilege_type;
RESET ROLE;
DROP VIEW pv;
REVOKE UPDATE ON pt2 FROM regress_b;
SELECT has_table_privilege('regress_b', 'pt2', 'UPDATE');
DROP TABLE regress_s.pt, pt2, role_list;
DROP SEQUENCE regress_seq;
DROP SCHEMA regress_s;
DROP ROLE regress_a;
DROP ROLE regress_b;
