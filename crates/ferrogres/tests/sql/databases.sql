-- Databases: pg_database after initdb, CREATE / DROP / ALTER DATABASE and
-- their errors, per-database catalogs, psql's \c and \l.
SELECT oid, datname, datdba, encoding, datlocprovider, datistemplate, datallowconn,
       datconnlimit, dattablespace, datcollate, datctype, datacl
  FROM pg_database ORDER BY oid;
SELECT current_database(), current_catalog;
\l
CREATE DATABASE db_one;
CREATE DATABASE db_one;
CREATE DATABASE db_two WITH OWNER postgres TEMPLATE template0 ENCODING 'UTF8'
  LC_COLLATE 'C' LC_CTYPE 'C' CONNECTION LIMIT 5 STRATEGY file_copy;
CREATE DATABASE db_three LOCALE 'POSIX' IS_TEMPLATE false ALLOW_CONNECTIONS true STRATEGY = wal_log;
SELECT datname, datistemplate, datallowconn, datconnlimit, datcollate, datctype, datacl
  FROM pg_database WHERE datname LIKE 'db_%' ORDER BY datname;
-- errors
CREATE DATABASE x WITH foo = 1;
CREATE DATABASE x STRATEGY = 'bad';
CREATE DATABASE x TEMPLATE nosuch;
CREATE DATABASE x ENCODING 'LATIN1';
CREATE DATABASE x ENCODING 'bogus';
CREATE DATABASE x LOCALE 'en_US';
CREATE DATABASE x OWNER nobody;
CREATE DATABASE x TABLESPACE nosuch;
CREATE DATABASE x CONNECTION LIMIT = -5;
CREATE DATABASE x IS_TEMPLATE = maybe;
CREATE DATABASE x CONNECTION LIMIT 1 CONNECTION LIMIT 2;
CREATE DATABASE x OID 5;
BEGIN;
CREATE DATABASE x;
ROLLBACK;
BEGIN;
DROP DATABASE db_one;
ROLLBACK;
DROP DATABASE template1;
DROP DATABASE nosuch;
DROP DATABASE IF EXISTS nosuch;
DROP DATABASE postgres;
SELECT count(*) FROM pg_database WHERE datname = 'x';
-- each database has its own tables
CREATE TABLE shared_name (a int);
INSERT INTO shared_name VALUES (1);
\c db_one
SELECT current_database();
SELECT * FROM shared_name;
CREATE TABLE shared_name (b text);
INSERT INTO shared_name VALUES ('one'), ('two');
SELECT * FROM shared_name;
CREATE SEQUENCE s;
SELECT nextval('s'), nextval('s');
DROP DATABASE db_one;
\c postgres
SELECT * FROM shared_name;
SELECT nextval('s');
-- a database made from a template copies its tables
\c db_two
CREATE TABLE in_template (a int);
\c postgres
ALTER DATABASE db_two IS_TEMPLATE true;
CREATE DATABASE db_copy TEMPLATE db_two;
DROP DATABASE db_two;
ALTER DATABASE db_two IS_TEMPLATE false;
\c db_copy
SELECT * FROM in_template;
\c postgres
ALTER DATABASE db_copy RENAME TO db_renamed;
ALTER DATABASE db_renamed RENAME TO postgres;
ALTER DATABASE postgres RENAME TO z;
ALTER DATABASE nosuch RENAME TO z;
SELECT datname FROM pg_database WHERE datname LIKE 'db_%' ORDER BY 1;
\l
DROP DATABASE db_one;
DROP DATABASE db_two;
DROP DATABASE db_three;
DROP DATABASE db_renamed;
DROP DATABASE IF EXISTS db_renamed;
SELECT datname FROM pg_database ORDER BY 1;
DROP TABLE shared_name;
DROP SEQUENCE IF EXISTS s;
