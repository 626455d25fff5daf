-- Anonymous records: information_schema._pg_expandarray and field selection.
SELECT information_schema._pg_expandarray(ARRAY[10, 20]);
SELECT information_schema._pg_expandarray(ARRAY['a b', NULL, '', 'x"y']);
SELECT (information_schema._pg_expandarray(ARRAY['a', 'b'])).x, (information_schema._pg_expandarray(ARRAY['a', 'b'])).n;
SELECT pg_typeof(information_schema._pg_expandarray(ARRAY[1]));
SELECT pg_typeof((information_schema._pg_expandarray(ARRAY[1::int8])).x);
SELECT (information_schema._pg_expandarray(ARRAY[5])).z;
SELECT (1).x;
SELECT information_schema._pg_expandarray(1);
SELECT 1 WHERE (information_schema._pg_expandarray(ARRAY[1])).n = 1;
-- pgjdbc's getPrimaryKeys: the key's columns in key order.
CREATE TABLE two (a int, b int, c int, PRIMARY KEY (b, a));
SELECT result.TABLE_CAT, result.TABLE_SCHEM, result.TABLE_NAME, result.COLUMN_NAME, result.KEY_SEQ, result.PK_NAME
  FROM (SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM, ct.relname AS TABLE_NAME, a.attname AS COLUMN_NAME,
               (information_schema._pg_expandarray(i.indkey)).n AS KEY_SEQ, ci.relname AS PK_NAME,
               information_schema._pg_expandarray(i.indkey) AS KEYS, a.attnum AS A_ATTNUM
          FROM pg_catalog.pg_class ct JOIN pg_catalog.pg_attribute a ON (ct.oid = a.attrelid)
          JOIN pg_catalog.pg_namespace n ON (ct.relnamespace = n.oid)
          JOIN pg_catalog.pg_index i ON (a.attrelid = i.indrelid)
          JOIN pg_catalog.pg_class ci ON (ci.oid = i.indexrelid)
         WHERE true AND n.nspname = E'public' AND ct.relname = E'two' AND i.indisprimary) result
 WHERE result.A_ATTNUM = (result.KEYS).x
 ORDER BY result.table_name, result.pk_name, result.key_seq;
