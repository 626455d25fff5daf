-- Arrays: text I/O, constructor, subscripts, ANY/ALL, ||, functions, storage.
SELECT '{1,2,NULL}'::int[], '{}'::int4[], '{a,"b c",NULL,"NULL",""}'::text[];
SELECT '{ 1 , 2 }'::int[] AS spaced, '[0:1]={7,8}'::int[] AS bounded;
SELECT '{"q\"x","back\\slash",x\,y}'::text[];
SELECT '{t,f}'::bool[], '{1.5,2}'::float8[], '{abc}'::varchar[], '{10,20}'::oid[], '{-1,32767}'::int2[], '{9000000000}'::int8[];
-- malformed literals
SELECT 'x'::int[];
SELECT '{1,2'::int[];
SELECT '{1,{2}}'::int[];
SELECT '{a,b}'::int[];
SELECT '{1} x'::int[];
SELECT '{1,,2}'::int[];
-- constructor and subscripts
SELECT ARRAY[1,2,3];
SELECT ARRAY['a','b'] AS letters, ARRAY[1,2.5::float8] AS mixed;
SELECT (ARRAY[10,20,30])[2], (ARRAY[10,20,30])[4], (ARRAY[10,20,30])[0];
SELECT (ARRAY[10,20,30])[2:3], (ARRAY[10,20,30])[:2], (ARRAY[10,20,30])[2:], (ARRAY[10,20,30])[5:6];
SELECT ('[0:2]={a,b,c}'::text[])[0];
SELECT (1)[1];
-- ANY / ALL
SELECT 1 = ANY (ARRAY[1,2]), 3 = ANY (ARRAY[1,2]), 3 = ANY (ARRAY[1,NULL]), 1 = ANY (ARRAY[1,NULL]);
SELECT 3 > ALL ('{1,2}'), 2 > ALL ('{1,2}'::int[]), 5 <> ALL (ARRAY[1,NULL]), NULL::int = ANY ('{}'::int[]), NULL::int = ALL ('{}'::int[]);
SELECT 'b' = ANY ('{a,b}'::text[]), 'b' = ANY ('{a,b}');
SELECT 1 = ANY (1);
-- concatenation
SELECT ARRAY[1,2] || 3, 0 || ARRAY[1,2], ARRAY[1] || ARRAY[2,3], '{}'::int[] || 1, NULL::int[] || ARRAY[5];
SELECT ARRAY['a'] || 'b'::text, '{x}'::text[] || '{y,z}';
SELECT array_cat(ARRAY[1], ARRAY[2]), array_append(ARRAY[1], 2), array_prepend(0, ARRAY[1]);
-- functions
SELECT array_length(ARRAY[1,2,3], 1), array_length(ARRAY[1,2,3], 2), array_length('{}'::int[], 1);
SELECT array_lower('[3:4]={1,2}'::int[], 1), array_upper('[3:4]={1,2}'::int[], 1), array_upper(ARRAY[1], 1);
SELECT cardinality(ARRAY[1,2,3]), cardinality('{}'::int[]), array_ndims(ARRAY[1]), array_dims('[2:3]={1,2}'::int[]);
SELECT array_position(ARRAY['a','b','c'], 'b'), array_position(ARRAY[1,NULL,3], NULL), array_position(ARRAY[1,2], 9);
SELECT array_to_string(ARRAY[1,NULL,3], ','), array_to_string(ARRAY[1,NULL,3], ',', '*'), array_to_string('{}'::int[], ',');
SELECT string_to_array('a,b,,c', ','), string_to_array('abc', NULL), string_to_array('', ','), string_to_array('a,NULL,b', ',', 'NULL'), string_to_array('a b', '');
-- comparison
SELECT ARRAY[1,2] = ARRAY[1,2], ARRAY[1,2] < ARRAY[1,3], ARRAY[1,2] < ARRAY[1,2,0], '{1,2,3}'::int[] < '{1,3}', ARRAY[1] <> '{1}';
SELECT ARRAY[1,2] = ARRAY[1,NULL], ARRAY[NULL::int] = ARRAY[NULL::int];
-- casts
SELECT '{1,2}'::int[]::bigint[], ARRAY[1,2]::text[], ARRAY[1,2]::text, '{1,2}'::text::int[];
SELECT ARRAY['1','x']::int[];
-- storage in tables
CREATE TABLE arr (id int, a int[], t text[] DEFAULT '{}', v varchar(3)[]);
INSERT INTO arr VALUES (1, '{1,2,3}', '{x,y}', '{ab}'), (2, ARRAY[4,NULL], DEFAULT, NULL), (3, NULL, '{"a b",NULL}', '{abc,d}');
INSERT INTO arr (id, v) VALUES (4, '{abcd}');
SELECT * FROM arr ORDER BY id;
SELECT id, a[1], a[2], t[1], cardinality(a) FROM arr ORDER BY id;
SELECT id FROM arr WHERE 2 = ANY (a) ORDER BY id;
SELECT id FROM arr WHERE a = '{1,2,3}';
SELECT id, a FROM arr ORDER BY a, id;
UPDATE arr SET a = a || 9 WHERE id <= 2;
SELECT id, a FROM arr ORDER BY id;
INSERT INTO arr (id, a) SELECT 5, ARRAY[id, id * 2] FROM arr WHERE id = 1;
SELECT id, a, array_to_string(a, '-') FROM arr WHERE id = 5;
CREATE TABLE big (a text[]);
INSERT INTO big VALUES (string_to_array('abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij,abcdefghij', ','));
SELECT cardinality(a), a[1], a[900], a[901] FROM big;
DROP TABLE big;
DROP TABLE arr;
-- types in messages
SELECT ARRAY[1] + 1;
SELECT ARRAY[1,2] = ARRAY['a'];
SELECT ARRAY[];
SELECT pg_blocking_pids(pg_backend_pid());
-- array_agg and unnest
CREATE TABLE agg (g int, v text);
INSERT INTO agg VALUES (1, 'a'), (2, 'b'), (1, NULL), (1, 'c');
SELECT array_agg(v) FROM agg;
SELECT g, array_agg(v), array_agg(DISTINCT g) FROM agg GROUP BY g ORDER BY g;
SELECT array_agg(v) FROM agg WHERE g > 5;
SELECT array_agg(g) FILTER (WHERE v IS NOT NULL) FROM agg;
SELECT * FROM unnest(ARRAY[1,2,NULL]);
SELECT x FROM unnest('{a,b}'::text[]) AS x ORDER BY x DESC;
SELECT u.e FROM unnest('{}'::int[]) AS u(e);
SELECT * FROM unnest(1);
DROP TABLE agg;
