-- EXECUTE on SQL functions: pg_proc.proowner / proacl, GRANT and REVOKE,
-- the check at call time, ALTER FUNCTION OWNER TO, default privileges,
-- has_function_privilege, and what depends on a role.
CREATE ROLE fa LOGIN;
CREATE ROLE fb LOGIN;
CREATE ROLE fgrp NOLOGIN;
GRANT fgrp TO fb;
CREATE TABLE ft (a int);
INSERT INTO ft VALUES (1), (2);
GRANT SELECT ON ft TO fa, fb;
CREATE FUNCTION f1(x int) RETURNS int LANGUAGE sql AS 'SELECT x + 1';
CREATE FUNCTION f2(int) RETURNS int LANGUAGE sql AS 'SELECT $1 * 2';
CREATE FUNCTION f2(text) RETURNS int LANGUAGE sql AS 'SELECT length($1)';
CREATE FUNCTION fsum() RETURNS bigint LANGUAGE sql AS 'SELECT sum(a) FROM ft';
SELECT proname, pg_get_userbyid(proowner), proacl, pronargs FROM pg_proc WHERE proname IN ('f1', 'f2', 'fsum') ORDER BY oid;
-- PUBLIC holds EXECUTE by default
SET ROLE fa;
SELECT f1(1), f2(2), f2('abc'), fsum();
RESET ROLE;
-- errors naming functions
GRANT EXECUTE ON FUNCTION f2 TO fa;
GRANT EXECUTE ON FUNCTION nosuch(int) TO fa;
GRANT EXECUTE ON FUNCTION nosuch TO fa;
GRANT EXECUTE ON FUNCTION f1(text) TO fa;
GRANT SELECT ON FUNCTION f1(int) TO fa;
GRANT USAGE ON FUNCTION f1 TO fa;
GRANT EXECUTE ON PROCEDURE f1(int) TO fa;
GRANT EXECUTE ON FUNCTION f1(int) TO nosuchrole;
GRANT EXECUTE ON FUNCTION f1(int) TO PUBLIC WITH GRANT OPTION;
-- revoke from PUBLIC, grant to a role
REVOKE EXECUTE ON FUNCTION f1(int) FROM PUBLIC;
SELECT proacl FROM pg_proc WHERE proname = 'f1';
SET ROLE fa;
SELECT f1(1);
SELECT a, f1(a) FROM ft ORDER BY a;
SELECT * FROM ft WHERE f1(a) > 2;
SELECT f2(2);
RESET ROLE;
GRANT EXECUTE ON FUNCTION f1(int) TO fa WITH GRANT OPTION;
SELECT proacl FROM pg_proc WHERE proname = 'f1';
SET ROLE fa;
SELECT f1(1);
GRANT EXECUTE ON FUNCTION f1(int) TO fb;
SET ROLE fb;
SELECT f1(5);
GRANT EXECUTE ON FUNCTION f1(int) TO fgrp;
RESET ROLE;
SELECT proacl FROM pg_proc WHERE proname = 'f1';
-- revoking a grant option others depend on
REVOKE EXECUTE ON FUNCTION f1(int) FROM fa;
REVOKE GRANT OPTION FOR EXECUTE ON FUNCTION f1(int) FROM fa CASCADE;
SELECT proacl FROM pg_proc WHERE proname = 'f1';
SET ROLE fb;
SELECT f1(5);
RESET ROLE;
-- through a group
GRANT EXECUTE ON FUNCTION f1(int) TO fgrp;
SET ROLE fb;
SELECT f1(6);
RESET ROLE;
REVOKE EXECUTE ON FUNCTION f1(int) FROM fgrp;
-- ON ROUTINE, several functions, GRANTED BY
REVOKE EXECUTE ON ROUTINE f2(int), f2(text) FROM PUBLIC;
GRANT ALL ON FUNCTION f2(int) TO fb GRANTED BY CURRENT_USER;
GRANT ALL PRIVILEGES ON ROUTINE f2(text) TO fb GRANTED BY fa;
SELECT proname, proacl FROM pg_proc WHERE proname = 'f2' ORDER BY oid;
SET ROLE fb;
SELECT f2(21);
SELECT f2('x');
RESET ROLE;
-- views call functions as the querying role
CREATE VIEW fv AS SELECT f1(a) AS b FROM ft;
GRANT SELECT ON fv TO fb;
SET ROLE fb;
SELECT * FROM fv;
RESET ROLE;
GRANT EXECUTE ON FUNCTION f1(int) TO fb;
SET ROLE fb;
SELECT * FROM fv ORDER BY b;
RESET ROLE;
-- a prepared statement checks EXECUTE at every execution
SET ROLE fb;
PREPARE pf AS SELECT f1(10);
EXECUTE pf;
RESET ROLE;
REVOKE EXECUTE ON FUNCTION f1(int) FROM fb;
SET ROLE fb;
EXECUTE pf;
RESET ROLE;
GRANT EXECUTE ON FUNCTION f1(int) TO fb;
SET ROLE fb;
EXECUTE pf;
DEALLOCATE pf;
RESET ROLE;
-- ON ALL FUNCTIONS IN SCHEMA
CREATE SCHEMA fs;
CREATE FUNCTION fs.g1() RETURNS int LANGUAGE sql AS 'SELECT 1';
CREATE FUNCTION fs.g2(int) RETURNS int LANGUAGE sql AS 'SELECT $1';
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA fs FROM PUBLIC;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA fs TO fa;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA nosuch TO fa;
SELECT proname, proacl FROM pg_proc WHERE pronamespace = 'fs'::regnamespace ORDER BY proname;
GRANT USAGE ON SCHEMA fs TO fa, fb;
\df+ fs.*
\df+ f1
SET ROLE fa;
SELECT fs.g1(), fs.g2(3);
SET ROLE fb;
SELECT fs.g1();
RESET ROLE;
-- has_function_privilege
SELECT has_function_privilege('fb', 'f1(int)', 'EXECUTE');
SELECT has_function_privilege('fb', 'fs.g1()', 'execute');
SELECT has_function_privilege('fa', 'fs.g2(integer)', 'execute with grant option');
SELECT has_function_privilege('f2(text)', 'execute');
SELECT has_function_privilege('fb', 'abs(int)', 'execute');
SELECT has_function_privilege('fb', 'now()', 'execute');
SELECT has_function_privilege('fb', 'f1', 'execute');
SELECT has_function_privilege('fb', 'f1(text)', 'execute');
SELECT has_function_privilege('fb', 'f1(int)', 'usage');
SELECT has_function_privilege('nosuchrole', 'f1(int)', 'execute');
SELECT has_function_privilege('fb', 999999::oid, 'execute');
SELECT r, has_function_privilege(r, p.oid, 'execute') FROM (VALUES ('fa'), ('fb')) AS v(r), pg_proc p WHERE p.proname = 'g2' ORDER BY r;
-- ownership: ALTER FUNCTION OWNER TO
GRANT CREATE ON SCHEMA public TO fa;
ALTER FUNCTION f2 OWNER TO fa;
ALTER FUNCTION nosuch(int) OWNER TO fa;
ALTER FUNCTION f1(int) OWNER TO nosuchrole;
ALTER FUNCTION fsum() OWNER TO fa;
SELECT proname, pg_get_userbyid(proowner), proacl FROM pg_proc WHERE proname IN ('f1', 'fsum') ORDER BY proname;
SET ROLE fb;
ALTER FUNCTION fsum() OWNER TO fb;
DROP FUNCTION fsum();
CREATE OR REPLACE FUNCTION fsum() RETURNS bigint LANGUAGE sql AS 'SELECT 0::bigint';
SET ROLE fa;
ALTER FUNCTION fsum() OWNER TO fb;
CREATE OR REPLACE FUNCTION fsum() RETURNS bigint LANGUAGE sql AS 'SELECT count(*) FROM ft';
SELECT fsum();
REVOKE EXECUTE ON FUNCTION fsum() FROM PUBLIC;
SELECT pg_get_userbyid(proowner), proacl FROM pg_proc WHERE proname = 'fsum';
-- a new function belongs to its creator, which needs CREATE on the schema
CREATE FUNCTION fmine() RETURNS int LANGUAGE sql AS 'SELECT 7';
SET ROLE fb;
CREATE FUNCTION fnot() RETURNS int LANGUAGE sql AS 'SELECT 8';
RESET ROLE;
SELECT proname, pg_get_userbyid(proowner), proacl FROM pg_proc WHERE proname IN ('fmine', 'fnot');
-- default privileges apply to new functions
ALTER DEFAULT PRIVILEGES FOR ROLE fa REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
ALTER DEFAULT PRIVILEGES FOR ROLE fa IN SCHEMA public GRANT EXECUTE ON FUNCTIONS TO fb;
SET ROLE fa;
CREATE FUNCTION fdef() RETURNS int LANGUAGE sql AS 'SELECT 9';
RESET ROLE;
SELECT proname, proacl FROM pg_proc WHERE proname = 'fdef';
SET ROLE fb;
SELECT fdef();
RESET ROLE;
-- what depends on a role
DROP ROLE fa;
DROP ROLE fb;
REASSIGN OWNED BY fa TO fb;
SELECT proname, pg_get_userbyid(proowner), proacl FROM pg_proc WHERE proname IN ('f2', 'fsum', 'fmine', 'fdef') ORDER BY oid;
DROP VIEW fv;
DROP OWNED BY fb;
SELECT proname, pg_get_userbyid(proowner), proacl FROM pg_proc WHERE pg_get_userbyid(proowner) LIKE 'f%' OR proacl::text LIKE '%fb%' ORDER BY oid;
DROP ROLE fb;
SELECT proname, proacl FROM pg_proc WHERE proname IN ('f1', 'g1', 'g2') ORDER BY proname;
-- superusers execute anything
REVOKE ALL ON FUNCTION f1(int) FROM PUBLIC;
SELECT f1(41);
