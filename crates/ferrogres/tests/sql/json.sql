-- json: input validation with PostgreSQL's errors; the text is kept as written
SELECT '""'::json;
SELECT $$''$$::json;
SELECT '"abc"'::json;
SELECT '"abc'::json;
SELECT '"abc
def"'::json;
SELECT '"\n\"\\"'::json;
SELECT '"\v"'::json;
SELECT '"\u"'::json;
SELECT '"\u00"'::json;
SELECT '"\u000g"'::json;
SELECT '"\u0000"'::json;
SELECT '"\uaBcD"'::json;
SELECT '1'::json;
SELECT '0'::json;
SELECT '01'::json;
SELECT '0.1'::json;
SELECT '9223372036854775808'::json;
SELECT '1e100'::json;
SELECT '1.3e100'::json;
SELECT '1f2'::json;
SELECT '0.x1'::json;
SELECT '1.3ex100'::json;
SELECT '[]'::json;
SELECT '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]'::json;
SELECT '[1,2]'::json;
SELECT '[1,2,]'::json;
SELECT '[1,2'::json;
SELECT '[1,[2]'::json;
SELECT '{}'::json;
SELECT '{"abc"}'::json;
SELECT '{"abc":1}'::json;
SELECT '{1:"abc"}'::json;
SELECT '{"abc",1}'::json;
SELECT '{"abc"=1}'::json;
SELECT '{"abc"::1}'::json;
SELECT '{"abc":1,"def":2,"ghi":[3,4],"hij":{"klm":5,"nop":[6]}}'::json;
SELECT '{"abc":1:2}'::json;
SELECT '{"abc":1,3}'::json;
SELECT 'true'::json;
SELECT 'false'::json;
SELECT 'null'::json;
SELECT ' true '::json;
SELECT 'true false'::json;
SELECT 'true, false'::json;
SELECT 'truf'::json;
SELECT 'trues'::json;
SELECT ''::json;
SELECT '    '::json;
SELECT '[@]'::json;
SELECT E'"a\tb"'::json;
SELECT '{"a":1} 2'::json;
SELECT '{"a":1 "b"'::json;
SELECT '"\q"'::json;
-- multi-line input: the CONTEXT shows the offending line
SELECT '{
		"one": 1,
		"two":"two",
		"three":
		true}'::json;
SELECT '{
		"one": 1,
		"two":,"two",
		"three":
		true}'::json;
SELECT '[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25 x]'::json;
-- stored as written
CREATE TABLE js (id int, j json);
INSERT INTO js VALUES (1, '{"b":1,  "a": [1, 2.50, "x"], "b": 2}'), (2, '[1, {"k": null}, "str"]'), (3, '"just a string"'), (4, NULL);
SELECT * FROM js ORDER BY id;
INSERT INTO js VALUES (5, '{"bad"');
SELECT j FROM js WHERE id = 1;
-- the operators return members as written
SELECT j -> 'a', j ->> 'b', j -> 'a' -> 1, j -> 'a' ->> 2, j #> '{a,2}', j #>> '{a,1}' FROM js WHERE id = 1;
SELECT j -> 0, j -> 1 -> 'k', j ->> 2, j -> -1, j -> 5, j ->> 'x' FROM js WHERE id = 2;
SELECT j -> 'a', j ->> 0 FROM js WHERE id = 3;
SELECT '{"a": [1,  2]}'::json -> 'a', '{"a":1, "b":2, "a":3}'::json -> 'a';
SELECT '["\u00e9\n"]'::json ->> 0, '{"x": "\"q\""}'::json ->> 'x';
SELECT json_typeof(j), json_typeof(j -> 'a') FROM js ORDER BY id;
SELECT json_array_length('[1, 2, [3]]'), json_array_length('[]');
SELECT json_array_length('{"a":1}');
SELECT json_array_length('4');
SELECT json_array_elements('[1, "two", {"three": 3}, null]');
SELECT json_array_elements_text('[1, "two", {"three": 3}, null]');
SELECT json_object_keys('{"b": 1, "a": 2, "b": 3}');
SELECT json_object_keys('[1]');
-- building json
SELECT to_json(1), to_json('a b'::text), to_json(true), to_json(1.50), to_json(ARRAY[1, 2, 3]), to_json(ARRAY['a', NULL]);
SELECT to_json('2024-01-05'::date), to_json('2024-01-05 10:20:30'::timestamp), to_json('NaN'::float8), to_json(2.5::float8);
SELECT to_json('{"a": 1}'::json), to_json('{"a":1, "b": 2}'::jsonb);
SELECT json_build_object('a', 1, 'b', 'two', 'c', NULL, 'd', ARRAY[1, 2], 'e', '{"x": 1}'::json);
SELECT json_build_object();
SELECT json_build_object('a');
SELECT json_build_object(NULL, 1);
SELECT json_build_array(1, 'two', NULL, true, 2.50);
SELECT json_build_array();
SELECT json_object('{a, 1, b, 2, c, NULL}');
SELECT json_object('{a, b}', '{1, 2}');
SELECT json_object('{a, 1, b}');
SELECT json_object('{a, b}', '{1}');
-- casts
SELECT '{"b":1, "a":2}'::json::jsonb, '{"b":1, "a":2}'::json::text;
SELECT '[1]'::json = '[1]'::json;
DROP TABLE js;
