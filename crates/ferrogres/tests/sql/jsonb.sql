-- jsonb: normalized input, errors, operators, functions, ordering and a B-tree index
SELECT '{"a":1, "a":2, "bb":3, "c": [1, 2.50, {"x":null}]}'::jsonb;
SELECT '{"aaa": 1, "b": 2, "aa": 3, "ab": 4}'::jsonb;
SELECT '  [1,   "a" ,{"b" :  false}]  '::jsonb;
SELECT '1E+2'::jsonb, '-0.0'::jsonb, '[1e2, 1.50, -3]'::jsonb, '"\u00e9\n\t\"/"'::jsonb, '"\ud83d\ude00"'::jsonb;
SELECT '"\u0000"'::jsonb;
SELECT '"\uD800"'::jsonb;
SELECT '"\ude00"'::jsonb;
SELECT '"\ud83d\ud83d"'::jsonb;
SELECT '{"a" 1}'::jsonb;
SELECT '[1,2] x'::jsonb;
SELECT 'nul'::jsonb;
SELECT '{"a":1,}'::jsonb;
SELECT '[1,]'::jsonb;
SELECT ''::jsonb;
-- storage, TOAST for long values, equality and order
CREATE TABLE jb (id int, j jsonb);
INSERT INTO jb VALUES (1, '{"a": 1, "b": {"c": [1, 2, 3]}, "tags": ["x", "y"]}'),
  (2, '[1, 2, 3]'), (3, '"str"'), (4, '42'), (5, 'null'), (6, 'true'), (7, '{}'), (8, '[]'),
  (9, '{"a": 2}'), (10, '{"b": 1}'), (11, '{"aa": 1}'), (12, '[1, 2]'), (13, '1.0'), (14, NULL);
SELECT id, j FROM jb ORDER BY j, id;
SELECT id, j FROM jb ORDER BY j DESC, id;
SELECT '1.0'::jsonb = '1'::jsonb, '{"a":1,"b":2}'::jsonb = '{"b":2,"a":1}'::jsonb, '[1,2]'::jsonb = '[2,1]'::jsonb;
SELECT '[]'::jsonb < 'null'::jsonb, '"a"'::jsonb < '1'::jsonb, '1'::jsonb < 'true'::jsonb, '[1]'::jsonb < '{}'::jsonb;
INSERT INTO jb SELECT 100 + g, jsonb_build_object('n', g, 'pad', repeat('x', 3000)) FROM generate_series(1, 5) g;
SELECT id, j -> 'n', length(j ->> 'pad') FROM jb WHERE id > 100 ORDER BY id;
SELECT count(*) FROM jb WHERE j @> '{"n": 3}';
DELETE FROM jb WHERE id > 100;
CREATE INDEX jb_j ON jb (j);
SELECT id FROM jb WHERE j = '{"a": 2}';
SELECT id FROM jb WHERE j = '[1,2,3]';
SELECT min(id), max(id) FROM jb WHERE j > '{"a": 1}' AND id < 100;
-- field and element access
SELECT j -> 'a', j -> 'b', j ->> 'a', j -> 'b' -> 'c', j #> '{b,c,1}', j #>> '{tags,0}', j -> 'nope', j #> '{b,x}' FROM jb WHERE id = 1;
SELECT j -> 0, j -> -1, j -> 3, j ->> 1, j -> -4, j #> '{1}' FROM jb WHERE id = 2;
SELECT j -> 'a', j -> 0, j ->> 0, j #> '{}' FROM jb WHERE id = 3;
SELECT '{"a": "x\ny"}'::jsonb ->> 'a', '{"a": null}'::jsonb ->> 'a', '{"a": null}'::jsonb -> 'a';
SELECT '[{"a": 1}, {"a": 2}]'::jsonb #>> '{1,a}', '[{"a": 1}]'::jsonb #> '{-1,a}', '{"a": [1]}'::jsonb #> '{a,x}';
-- containment and existence
SELECT '{"a":1, "b":2}'::jsonb @> '{"b":2}', '{"a":1, "b":2}'::jsonb @> '{"b":3}', '{"b":2}'::jsonb <@ '{"a":1, "b":2}';
SELECT '[1, 2, [3, 4]]'::jsonb @> '[[3]]', '[1, 2]'::jsonb @> '[2, 1, 1]', '["foo", "bar"]'::jsonb @> '"foo"', '{"a": [1, 2]}'::jsonb @> '{"a": [2]}';
SELECT '[1]'::jsonb @> '1', '1'::jsonb @> '[1]', '{"a": {"b": 1, "c": 2}}'::jsonb @> '{"a": {"b": 1}}', '{"a": 1}'::jsonb @> '{}';
SELECT '{"a":1, "b":2}'::jsonb ? 'a', '{"a":1}'::jsonb ? 'b', '["x", "y"]'::jsonb ? 'y', '"x"'::jsonb ? 'x', '[1]'::jsonb ? '1';
SELECT '{"a":1, "b":2}'::jsonb ?| ARRAY['b', 'c'], '{"a":1, "b":2}'::jsonb ?& ARRAY['a', 'b'], '{"a":1, "b":2}'::jsonb ?& ARRAY['a', 'c'], '{"a":1}'::jsonb ?| '{}';
SELECT id FROM jb WHERE j ? 'a' ORDER BY id;
SELECT id FROM jb WHERE j @> '{"tags": ["y"]}';
-- concatenation and deletion
SELECT '{"a":1, "b":2}'::jsonb || '{"b":3, "c":4}', '[1, 2]'::jsonb || '[3]', '[1]'::jsonb || '{"a":1}', '{"a":1}'::jsonb || '[1]', '1'::jsonb || '2';
SELECT '{"a":1, "b":2}'::jsonb - 'a', '["a", "b", "a"]'::jsonb - 'a', '{"a":1, "b":2, "c":3}'::jsonb - ARRAY['a', 'c'], '[1, 2, 3]'::jsonb - 1, '[1, 2, 3]'::jsonb - -1, '[1, 2, 3]'::jsonb - 10;
SELECT '{"a":1}'::jsonb - 0;
SELECT '1'::jsonb - 'a';
SELECT '{"a": {"b": [1, 2, 3]}}'::jsonb #- '{a,b,0}', '{"a": 1, "b": 2}'::jsonb #- '{a}', '[1, [2, 3]]'::jsonb #- '{1,-1}', '{"a": 1}'::jsonb #- '{x,y}';
SELECT '"s"'::jsonb #- '{a}';
-- jsonb_set, jsonb_insert
SELECT jsonb_set('{"a": 1, "b": [1, 2]}', '{b,1}', '"x"'), jsonb_set('{"a": 1}', '{c}', '[3]'), jsonb_set('{"a": 1}', '{c}', '3', false);
SELECT jsonb_set('[1, 2, 3]', '{-1}', '9'), jsonb_set('[1, 2, 3]', '{10}', '9'), jsonb_set('[1, 2, 3]', '{-10}', '9'), jsonb_set('{"a": {"b": 1}}', '{a,b}', 'null');
SELECT jsonb_set('{"a": 1}', '{x,y}', '1'), jsonb_set(NULL, '{a}', '1'), jsonb_set('{"a": 1}', '{a}', NULL);
SELECT jsonb_insert('{"a": [0, 1, 2]}', '{a,1}', '"new"'), jsonb_insert('{"a": [0, 1, 2]}', '{a,1}', '"new"', true), jsonb_insert('{"a": [0, 1, 2]}', '{a,-1}', '"new"', true);
SELECT jsonb_insert('{"a": 1}', '{b}', '2');
SELECT jsonb_insert('{"a": 1}', '{a}', '2');
-- other functions
SELECT jsonb_typeof(j), jsonb_typeof(j -> 'a') FROM jb WHERE id < 20 ORDER BY id;
SELECT jsonb_array_length('[1, [2, 3], {}]'), jsonb_array_length('[]');
SELECT jsonb_array_length('{"a":1}');
SELECT jsonb_array_length('"x"');
SELECT jsonb_strip_nulls('{"a": null, "b": [1, null, {"c": null, "d": 2}], "e": {"f": null}}');
SELECT jsonb_pretty('{"a": 1, "b": [1, 2, {"c": "d"}], "e": {}, "f": []}');
SELECT jsonb_pretty('[]'), jsonb_pretty('"x"');
SELECT jsonb_array_elements('[1, "two", {"three": 3}, null, [4]]');
SELECT jsonb_array_elements_text('[1, "two", {"three": 3}, null, [4]]');
SELECT jsonb_array_elements('{"a": 1}');
SELECT jsonb_object_keys('{"b": 1, "aa": 2, "a": 3}');
SELECT jsonb_object_keys('[1]');
SELECT id, jsonb_object_keys(j) FROM jb WHERE id IN (1, 9, 10) ORDER BY 1, 2;
-- building jsonb
SELECT to_jsonb(1), to_jsonb('a b'::text), to_jsonb(true), to_jsonb(1.50), to_jsonb(ARRAY[1, 2, 3]), to_jsonb(ARRAY['a', NULL]);
SELECT to_jsonb('2024-01-05'::date), to_jsonb('NaN'::float8), to_jsonb('{"b":1,"a":2}'::json), to_jsonb(NULL::int);
SELECT jsonb_build_object('b', 1, 'a', 'two', 'c', NULL, 'd', ARRAY[1, 2], 'a', 3);
SELECT jsonb_build_object();
SELECT jsonb_build_object('a');
SELECT jsonb_build_array(1, 'two', NULL, true, 2.50, '{"x":1}'::jsonb);
-- casts
SELECT '1.5'::jsonb::int, '2.5'::jsonb::int2, '1e2'::jsonb::float4, 'true'::jsonb::bool, '12345678901'::jsonb::int8, '1.50'::jsonb::numeric, '3.25'::jsonb::float8;
SELECT '"a"'::jsonb::int;
SELECT 'null'::jsonb::int;
SELECT '"a"'::jsonb::numeric;
SELECT '[1]'::jsonb::bool;
SELECT '{}'::jsonb::float8;
SELECT '99999999999'::jsonb::int;
SELECT '1'::jsonb::text, '"a"'::jsonb::text, '{"b":1, "a":2}'::jsonb::json, '{"a":1}'::text::jsonb;
DROP TABLE jb;
