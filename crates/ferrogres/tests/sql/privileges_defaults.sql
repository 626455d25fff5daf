-- Default privileges: ALTER DEFAULT PRIVILEGES, pg_default_acl, \ddp, and
-- the ACLs tables, views, sequences and schemas get from them when created.
CREATE ROLE da_owner LOGIN;
CREATE ROLE da_reader LOGIN;
CREATE ROLE da_writer LOGIN;
CREATE ROLE da_group NOLOGIN;
GRANT da_group TO da_reader;
CREATE SCHEMA da_s AUTHORIZATION da_owner;
GRANT CREATE ON SCHEMA public TO da_owner;
-- nothing yet: the hard-wired defaults
\ddp
SET ROLE da_owner;
GRANT USAGE ON SCHEMA da_s TO da_reader, da_writer;
CREATE TABLE t0 (a int);
INSERT INTO t0 VALUES (0);
\dp t0
-- a global entry replaces the owner's hard-wired default
ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO da_reader;
\ddp
SELECT pg_get_userbyid(defaclrole) AS role, defaclnamespace, defaclobjtype, defaclacl FROM pg_default_acl ORDER BY 1, 3;
CREATE TABLE t1 (a int);
INSERT INTO t1 VALUES (1);
\dp t1
SELECT has_table_privilege('da_reader', 't1', 'SELECT') AS t1_sel, has_table_privilege('da_reader', 't0', 'SELECT') AS t0_sel;
SET ROLE da_reader;
SELECT * FROM t1;
SELECT * FROM t0;
INSERT INTO t1 VALUES (2);
SET ROLE da_owner;
-- per-schema entries add to the global one
ALTER DEFAULT PRIVILEGES IN SCHEMA da_s GRANT INSERT, UPDATE ON TABLES TO da_writer;
ALTER DEFAULT PRIVILEGES IN SCHEMA da_s GRANT SELECT ON TABLES TO da_writer;
\ddp
CREATE TABLE da_s.t2 (a int);
\dp da_s.t2
CREATE TABLE t2 (a int);
\dp t2
SET ROLE da_writer;
INSERT INTO da_s.t2 VALUES (1);
UPDATE da_s.t2 SET a = 2;
SELECT * FROM da_s.t2;
DELETE FROM da_s.t2;
INSERT INTO t2 VALUES (1);
SET ROLE da_owner;
-- views are relations too; sequences have their own entries
CREATE VIEW v1 AS SELECT a FROM t1;
\dp v1
ALTER DEFAULT PRIVILEGES GRANT USAGE ON SEQUENCES TO da_reader;
CREATE SEQUENCE sq1;
CREATE TABLE t_serial (id serial, b int);
\dp sq1
\dp t_serial_id_seq
SET ROLE da_reader;
SELECT * FROM v1;
SELECT nextval('sq1');
SELECT setval('sq1', 10);
SET ROLE da_owner;
-- the owner may take privileges from itself
ALTER DEFAULT PRIVILEGES REVOKE TRUNCATE, DELETE ON TABLES FROM da_owner;
CREATE TABLE t3 (a int);
\dp t3
TRUNCATE t3;
DELETE FROM t3;
INSERT INTO t3 VALUES (3);
-- back to the hard-wired default: the entry goes away
ALTER DEFAULT PRIVILEGES GRANT ALL ON TABLES TO da_owner;
ALTER DEFAULT PRIVILEGES REVOKE SELECT ON TABLES FROM da_reader;
\ddp
CREATE TABLE t4 (a int);
\dp t4
SET ROLE da_reader;
SELECT * FROM t4;
SET ROLE da_owner;
-- grant options and a group
ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO da_reader WITH GRANT OPTION;
ALTER DEFAULT PRIVILEGES GRANT INSERT ON TABLES TO da_group;
CREATE TABLE t5 (a int);
\dp t5
SET ROLE da_reader;
INSERT INTO t5 VALUES (5);
GRANT SELECT ON t5 TO da_writer;
SET ROLE da_writer;
SELECT * FROM t5;
SET ROLE da_owner;
ALTER DEFAULT PRIVILEGES REVOKE GRANT OPTION FOR SELECT ON TABLES FROM da_reader;
\ddp
ALTER DEFAULT PRIVILEGES REVOKE ALL ON TABLES FROM da_reader, da_group;
\ddp
-- errors
ALTER DEFAULT PRIVILEGES GRANT EXECUTE ON TABLES TO da_reader;
ALTER DEFAULT PRIVILEGES GRANT INSERT ON SEQUENCES TO da_reader;
ALTER DEFAULT PRIVILEGES GRANT USAGE ON TABLES TO da_reader;
ALTER DEFAULT PRIVILEGES GRANT SELECT (a) ON TABLES TO da_reader;
ALTER DEFAULT PRIVILEGES IN SCHEMA da_s GRANT USAGE ON SCHEMAS TO da_reader;
ALTER DEFAULT PRIVILEGES IN SCHEMA nosuch GRANT SELECT ON TABLES TO da_reader;
ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO nosuch;
ALTER DEFAULT PRIVILEGES FOR ROLE nosuch GRANT SELECT ON TABLES TO da_reader;
ALTER DEFAULT PRIVILEGES FOR ROLE da_writer GRANT SELECT ON TABLES TO da_reader;
ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO PUBLIC WITH GRANT OPTION;
ALTER DEFAULT PRIVILEGES GRANT FOO ON TABLES TO da_reader;
-- a member of the group may set the group's defaults
SET ROLE da_reader;
ALTER DEFAULT PRIVILEGES FOR ROLE da_group GRANT SELECT ON TABLES TO da_writer;
RESET ROLE;
-- several roles and schemas at once; functions and types (stored: there
-- are no user-defined types, and functions get their ACLs elsewhere)
ALTER DEFAULT PRIVILEGES FOR ROLE da_owner, da_writer IN SCHEMA da_s, public GRANT DELETE ON TABLES TO PUBLIC;
ALTER DEFAULT PRIVILEGES FOR ROLE da_owner REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
ALTER DEFAULT PRIVILEGES FOR ROLE da_owner REVOKE USAGE ON TYPES FROM PUBLIC;
\ddp
-- schemas
ALTER DEFAULT PRIVILEGES FOR ROLE da_owner GRANT USAGE ON SCHEMAS TO da_reader;
ALTER DEFAULT PRIVILEGES FOR ROLE da_owner GRANT CREATE ON SCHEMAS TO da_writer WITH GRANT OPTION;
CREATE SCHEMA da_s2 AUTHORIZATION da_owner;
\dn+ da_s2
SET ROLE da_writer;
CREATE TABLE da_s2.w (a int);
RESET ROLE;
-- transactional
BEGIN;
ALTER DEFAULT PRIVILEGES FOR ROLE da_writer GRANT SELECT ON SEQUENCES TO da_reader;
SELECT count(*) FROM pg_default_acl WHERE defaclobjtype = 'S';
ROLLBACK;
SELECT count(*) FROM pg_default_acl WHERE defaclobjtype = 'S';
-- a dropped schema takes its entries with it
DROP SCHEMA da_s CASCADE;
\ddp
DROP TABLE t0, t1, t2, t3, t4, t5, t_serial, da_s2.w CASCADE;
DROP SEQUENCE sq1;
