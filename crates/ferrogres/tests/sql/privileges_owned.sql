-- REASSIGN OWNED, DROP OWNED and DROP ROLE's list of what depends on a role.
CREATE ROLE o1 LOGIN;
CREATE ROLE o2 LOGIN;
CREATE ROLE o3 LOGIN;
CREATE ROLE ogrp NOLOGIN;
GRANT ogrp TO o3;
GRANT CREATE ON SCHEMA public TO o1, o2;
CREATE SCHEMA os AUTHORIZATION o1;
SET ROLE o1;
CREATE TABLE ot1 (a int, b int);
INSERT INTO ot1 VALUES (1, 2);
CREATE VIEW ov AS SELECT a FROM ot1;
CREATE SEQUENCE osq;
CREATE TABLE os.ot2 (a int);
GRANT SELECT ON ot1 TO o2;
GRANT UPDATE (b) ON ot1 TO o2;
GRANT SELECT ON ov TO o2 WITH GRANT OPTION;
ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO o2;
SET ROLE o2;
GRANT SELECT ON ov TO o3;
RESET ROLE;
CREATE TABLE pt (a int);
GRANT SELECT ON pt TO o1;
GRANT USAGE ON SCHEMA os TO o2;
-- what depends on each role
DROP ROLE o1;
DROP ROLE o2;
-- the privileges these need
SET ROLE o3;
REASSIGN OWNED BY o1 TO o3;
DROP OWNED BY o1;
REASSIGN OWNED BY ogrp TO o3;
DROP OWNED BY ogrp;
REASSIGN OWNED BY o3 TO o1;
RESET ROLE;
REASSIGN OWNED BY nosuch TO o3;
REASSIGN OWNED BY o1 TO nosuch;
DROP OWNED BY nosuch;
DROP OWNED BY postgres;
REASSIGN OWNED BY postgres TO ogrp;
-- REASSIGN OWNED moves ownership and the owner's grants
REASSIGN OWNED BY o1 TO o3;
\dp ot1
\dp ov
\dn os
SELECT relname, pg_get_userbyid(relowner) AS owner FROM pg_class WHERE relname IN ('ot1', 'ov', 'osq', 'ot2') ORDER BY 1;
\ddp
SET ROLE o3;
SELECT * FROM ot1;
ALTER TABLE ot1 ADD COLUMN c int;
SET ROLE o1;
SELECT * FROM ot1;
RESET ROLE;
DROP ROLE o1;
-- DROP OWNED revokes what was granted to the role, with what depends on it
DROP OWNED BY o1;
DROP ROLE o1;
DROP OWNED BY o2;
\dp ot1
\dp ov
\dn+ os
\ddp
SET ROLE o3;
SELECT * FROM ov;
RESET ROLE;
DROP ROLE o2;
SELECT count(*) FROM pg_roles WHERE rolname IN ('o1', 'o2');
-- in a transaction: rolled back with it
BEGIN;
REASSIGN OWNED BY o3 TO ogrp;
SELECT pg_get_userbyid(relowner) AS owner FROM pg_class WHERE relname = 'ot1';
ROLLBACK;
SELECT pg_get_userbyid(relowner) AS owner FROM pg_class WHERE relname = 'ot1';
DROP VIEW ov;
DROP TABLE ot1, pt, os.ot2;
DROP SEQUENCE osq;
DROP SCHEMA os;
DROP ROLE o3;
DROP ROLE ogrp;
-- ALTER DATABASE ... OWNER TO
CREATE ROLE dbo1 LOGIN CREATEDB;
CREATE ROLE dbo2 LOGIN;
CREATE ROLE dbo3 LOGIN CREATEDB;
GRANT dbo2 TO dbo1;
CREATE DATABASE dbx OWNER dbo1;
GRANT CONNECT ON DATABASE dbx TO dbo3;
SELECT datname, pg_get_userbyid(datdba) AS owner, datacl FROM pg_database WHERE datname = 'dbx';
SET ROLE dbo3;
ALTER DATABASE dbx OWNER TO dbo3;
SET ROLE dbo2;
ALTER DATABASE dbx OWNER TO dbo2;
SET ROLE dbo1;
ALTER DATABASE dbx OWNER TO dbo3;
ALTER DATABASE dbx OWNER TO dbo2;
SELECT datname, pg_get_userbyid(datdba) AS owner, datacl FROM pg_database WHERE datname = 'dbx';
RESET ROLE;
ALTER DATABASE nosuch OWNER TO dbo1;
ALTER DATABASE dbx OWNER TO nosuch;
DROP ROLE dbo2;
REASSIGN OWNED BY dbo2 TO dbo1;
SELECT datname, pg_get_userbyid(datdba) AS owner, datacl FROM pg_database WHERE datname = 'dbx';
ALTER DATABASE dbx OWNER TO dbo3;
SELECT datname, pg_get_userbyid(datdba) AS owner, datacl FROM pg_database WHERE datname = 'dbx';
ALTER DATABASE dbx OWNER TO CURRENT_USER;
SELECT datname, pg_get_userbyid(datdba) AS owner, datacl FROM pg_database WHERE datname = 'dbx';
DROP DATABASE dbx;
DROP ROLE dbo1;
DROP ROLE dbo2;
DROP ROLE dbo3;
