-- pg_catalog as psql reads it: PostgreSQL 15's columns, built-in OIDs and functions.
CREATE TABLE ct (ct_id int PRIMARY KEY, ct_name varchar(20) NOT NULL DEFAULT 'x', ct_tags text[], ct_when timestamp(3), ct_n bigint DEFAULT -1, ct_flag boolean DEFAULT true, ct_c char(4));
CREATE UNIQUE INDEX ct_name_idx ON ct (ct_name DESC, ct_n);
CREATE TABLE ct2 (ct2_a int);
SELECT relname, relkind, relnatts, relhasindex, relpersistence, relam, relowner, relchecks, relispartition, reloptions, relrowsecurity, relhasrules, relhastriggers, reltablespace, reloftype, relreplident
  FROM pg_catalog.pg_class WHERE relname LIKE 'ct%' ORDER BY relname;
SELECT relname FROM pg_class WHERE relkind = 'r' AND relname LIKE 'ct%' ORDER BY 1;
SELECT attname, attnum, atttypid, atttypmod, format_type(atttypid, atttypmod), attnotnull, atthasdef, attisdropped, attidentity, attgenerated, attcollation, attlen, attndims, attstorage, attalign, attbyval
  FROM pg_catalog.pg_attribute WHERE attname LIKE 'ct%' AND attnum > 0 ORDER BY attname, attnotnull, attnum;
SELECT adnum, pg_catalog.pg_get_expr(adbin, adrelid, true) FROM pg_catalog.pg_attrdef ORDER BY adnum;
SELECT indnatts, indnkeyatts, indisunique, indisprimary, indkey, indoption, indisvalid, indisready, indislive, indisclustered, indisreplident, pg_catalog.pg_get_indexdef(indexrelid, 0, true)
  FROM pg_catalog.pg_index WHERE pg_get_indexdef(indexrelid) LIKE '% ON public.ct %' ORDER BY indisprimary DESC, indnatts;
SELECT conname, contype, condeferrable, condeferred, convalidated, conkey, pg_catalog.pg_get_constraintdef(oid, true)
  FROM pg_catalog.pg_constraint WHERE conname LIKE 'ct%' ORDER BY 1;
SELECT nspname, pg_catalog.pg_get_userbyid(nspowner) FROM pg_catalog.pg_namespace ORDER BY nspname;
SELECT oid, nspname FROM pg_namespace WHERE nspname !~~ 'information%' ORDER BY oid;
SELECT oid, typname, typlen, typbyval, typtype, typcategory, typispreferred, typelem, typarray, typcollation, typalign, typstorage, typinput, typoutput, typreceive, typsend, typsubscript, typdelim, typnamespace
  FROM pg_catalog.pg_type WHERE oid IN (16, 17, 18, 19, 20, 21, 23, 25, 26, 700, 701, 1042, 1043, 1082, 1083, 1114, 1184, 1186, 1266, 1000, 1005, 1007, 1009, 1015, 1016, 1022, 1028) ORDER BY oid;
SELECT oid, amname, amhandler, amtype FROM pg_catalog.pg_am WHERE amname IN ('heap', 'btree', 'hash') ORDER BY oid;
SELECT datname, datdba, encoding, pg_catalog.pg_encoding_to_char(encoding), datcollate, datctype, daticulocale, datlocprovider, datallowconn, datconnlimit, datistemplate, dattablespace
  FROM pg_catalog.pg_database WHERE datname = 'postgres';
SELECT oid, rolname, rolsuper, rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, rolreplication, rolbypassrls, rolconnlimit, rolpassword, rolvaliduntil FROM pg_catalog.pg_roles WHERE rolname = 'postgres';
SELECT oid, rolname, rolsuper, rolcanlogin FROM pg_catalog.pg_authid ORDER BY oid;
SELECT usename, usesysid, usecreatedb, usesuper, userepl, usebypassrls, passwd FROM pg_catalog.pg_user;
SELECT oid, spcname, pg_catalog.pg_get_userbyid(spcowner) FROM pg_catalog.pg_tablespace ORDER BY oid;
SELECT oid, collname, collprovider, collnamespace FROM pg_catalog.pg_collation WHERE oid IN (100, 950, 951) ORDER BY oid;
SELECT count(*) > 10 FROM pg_catalog.pg_settings;
SELECT name, setting, source FROM pg_settings WHERE name = 'search_path';
SELECT count(*) FROM pg_catalog.pg_inherits;
SELECT count(*) FROM pg_catalog.pg_trigger;
SELECT count(*) FROM pg_catalog.pg_policy;
SELECT count(*) FROM pg_catalog.pg_publication;
SELECT count(*) FROM pg_catalog.pg_publication_rel;
SELECT count(*) FROM pg_catalog.pg_publication_namespace;
SELECT count(*) FROM pg_catalog.pg_statistic_ext;
SELECT count(*) FROM pg_catalog.pg_foreign_table;
SELECT count(*) FROM pg_catalog.pg_partitioned_table;
-- functions psql calls
SELECT pg_catalog.format_type(23, -1), format_type(1043, 24), format_type(1043, -1), format_type(1007, -1), format_type(1015, 14), format_type(1042, 8), format_type(1114, 3), format_type(18, -1), format_type(19, -1), format_type(NULL, -1), format_type(25, NULL);
SELECT pg_catalog.pg_get_userbyid(10), pg_get_userbyid(6171), pg_encoding_to_char(6), pg_encoding_to_char(0);
SELECT current_schema(), current_database(), current_user, session_user, current_schemas(true), current_schemas(false);
SELECT pg_table_is_visible(1259), has_table_privilege('ct', 'SELECT'), has_schema_privilege('public', 'USAGE'), obj_description(1259, 'pg_class'), col_description(1259, 1);
SELECT quote_ident('foo'), quote_ident('Foo'), quote_ident('select'), quote_ident('a"b'), quote_ident('1a');
SELECT pg_size_pretty(0::bigint), pg_size_pretty(10239::bigint), pg_size_pretty(10240::bigint), pg_size_pretty(8192000::bigint), pg_size_pretty(1000000000::bigint), pg_size_pretty(-20000::bigint);
SELECT 'pg_class'::name, 'abc'::"char", 'ab' COLLATE "C" < 'b', 'x' COLLATE pg_catalog.default;
SELECT relname FROM pg_catalog.pg_class WHERE relname = 'ct' COLLATE pg_catalog.default;
-- transactional with DDL
BEGIN;
CREATE TABLE ct_tx (ct_tx_a int);
SELECT relname, relkind FROM pg_class WHERE relname = 'ct_tx';
SELECT attname FROM pg_attribute WHERE attname = 'ct_tx_a';
ROLLBACK;
SELECT count(*) FROM pg_class WHERE relname = 'ct_tx';
-- information_schema
SELECT table_catalog, table_schema, table_name, table_type, is_insertable_into, is_typed, commit_action FROM information_schema.tables WHERE table_schema = 'public' AND table_name LIKE 'ct%' ORDER BY table_name;
\x on
SELECT * FROM information_schema.columns WHERE table_name = 'ct' ORDER BY ordinal_position;
\x off
SELECT pg_relation_size(oid), pg_table_size(oid), pg_indexes_size(oid), pg_total_relation_size(oid) FROM pg_class WHERE relname = 'ct2';
SELECT pg_relation_size('ct2') = pg_relation_size(oid), pg_total_relation_size('public.ct2') = pg_total_relation_size(oid) FROM pg_class WHERE relname = 'ct2';
SELECT pg_relation_size('no_such_rel');
DROP TABLE ct2;
SELECT relname FROM pg_class WHERE relname LIKE 'ct%' ORDER BY 1;
DROP TABLE ct;
-- OID alias types
CREATE TABLE rc (a int);
SELECT relname FROM pg_class WHERE oid = 'rc'::regclass;
SELECT attname FROM pg_attribute WHERE attrelid = 'public.rc'::pg_catalog.regclass AND attnum > 0;
SELECT 1259::regclass, 1259::oid::regclass::text, 23::regtype, 1043::regtype::text, 1007::regtype, 11::regnamespace, 2200::regnamespace::text;
SELECT 'nosuch'::regclass;
SELECT 'nosuchtype'::regtype;
SELECT 'integer'::regtype::oid, '16384'::pg_catalog.oid;
DROP TABLE rc;
SELECT pg_get_statisticsobjdef_columns(0), pg_get_viewdef(0);
