-- set-returning functions in FROM
CREATE TABLE docs (id int, j jsonb, t json, arr int[], words text);
INSERT INTO docs VALUES (1, '{"a": 1, "b": [1, 2], "c": null}', '{"x": "s", "y": 2}', '{10,20,30}', 'one two  three'),
  (2, '{"z": "last"}', '{"k": {"n": 1}}', '{}', 'solo'),
  (3, '{}', '{}', NULL, NULL);
-- json[b]_each[_text]: key, value
SELECT * FROM jsonb_each('{"a": 1, "b": "x", "c": null, "d": [1]}') ORDER BY key;
SELECT * FROM jsonb_each_text('{"a": 1, "b": "x", "c": null, "d": [1]}') ORDER BY key;
SELECT * FROM json_each('{"a": 1, "b": "x", "c": null}') ORDER BY key;
SELECT key, value FROM json_each_text('{"b": "x", "a": {"q": 1}}') ORDER BY 1;
SELECT e.key, e.value FROM jsonb_each('{"p": true}') AS e;
SELECT * FROM jsonb_each('{"a": 1, "b": 2}') AS e(k, v) ORDER BY k;
SELECT k FROM jsonb_each('{"a": 1, "b": 2}') AS e(k) ORDER BY k;
SELECT * FROM jsonb_each('{"a": 1, "b": 2}') WITH ORDINALITY ORDER BY 3;
SELECT * FROM jsonb_each('{"a": 1, "b": 2}') WITH ORDINALITY AS e(k, v, n) ORDER BY n;
SELECT * FROM jsonb_each(NULL);
-- arrays and keys
SELECT * FROM jsonb_array_elements('[1, "a", null, {"b": 2}]');
SELECT * FROM jsonb_array_elements_text('[1, "a", null, {"b": 2}]');
SELECT * FROM json_array_elements('[1, "a", null]') WITH ORDINALITY;
SELECT value FROM json_array_elements_text('["x", "y"]') AS v;
SELECT * FROM jsonb_object_keys('{"b": 1, "a": 2}') ORDER BY 1;
SELECT k FROM json_object_keys('{"b": 1, "a": 2}') AS k ORDER BY 1;
SELECT * FROM jsonb_object_keys('{"b": 1, "a": 2}') WITH ORDINALITY AS t(key, n) ORDER BY n;
-- LATERAL (implicit for functions) over a table
SELECT d.id, e.key, e.value FROM docs d, jsonb_each(d.j) AS e ORDER BY 1, 2;
SELECT d.id, e.k, e.v FROM docs d, LATERAL jsonb_each_text(d.j) AS e(k, v) ORDER BY 1, 2;
SELECT d.id, k FROM docs d CROSS JOIN json_object_keys(d.t) AS k ORDER BY 1, 2;
SELECT d.id, e.* FROM docs d LEFT JOIN LATERAL jsonb_each(d.j) e ON true ORDER BY 1, 2;
SELECT d.id, x.elem, x.n FROM docs d, jsonb_array_elements(d.j -> 'b') WITH ORDINALITY AS x(elem, n) ORDER BY 1, 3;
SELECT d.id, u FROM docs d, unnest(d.arr) AS u ORDER BY 1, 2;
SELECT d.id, w FROM docs d, regexp_split_to_table(d.words, '\s+') AS w ORDER BY 1, 2;
SELECT d.id, count(*) FROM docs d, jsonb_each(d.j) GROUP BY d.id ORDER BY 1;
-- generate_series over numeric and timestamps
SELECT * FROM generate_series(1.5, 3.5);
SELECT * FROM generate_series(0.1, 0.5, 0.15);
SELECT * FROM generate_series(5, 1, -2.5);
SELECT * FROM generate_series(1, 3) WITH ORDINALITY AS g(v, n);
SELECT * FROM generate_series('2024-01-30'::timestamp, '2024-04-01', '1 month');
SELECT * FROM generate_series('2024-03-10 00:00'::timestamp, '2024-03-10 03:00', interval '90 minutes') AS ts;
SET TimeZone = 'UTC';
SELECT * FROM generate_series('2024-01-01 00:00+00'::timestamptz, '2024-01-02 00:00+00', '12 hours') WITH ORDINALITY;
SELECT * FROM generate_series('2024-01-03'::timestamp, '2024-01-01', '-1 day');
SELECT g::date FROM generate_series('2024-02-27'::date, '2024-03-01'::date, '1 day') AS g;
-- generate_subscripts, unnest of several arrays, ROWS FROM
SELECT * FROM generate_subscripts(ARRAY[10, 20, 30], 1);
SELECT * FROM generate_subscripts(ARRAY['a', 'b'], 1, true) AS s(i);
SELECT * FROM generate_subscripts(ARRAY[1, 2], 2);
SELECT * FROM unnest(ARRAY[1, 2, 3], ARRAY['a', 'b']);
SELECT * FROM unnest(ARRAY[1, 2], ARRAY['x', 'y'], ARRAY[true]) WITH ORDINALITY AS u(n, s, b, o);
SELECT * FROM ROWS FROM (generate_series(1, 3), jsonb_object_keys('{"a": 1, "b": 2}'));
SELECT * FROM ROWS FROM (jsonb_each('{"a": 1}'), generate_series(1, 2)) WITH ORDINALITY AS r(k, v, g, n);
SELECT * FROM unnest(ARRAY['x', 'y']) WITH ORDINALITY;
SELECT * FROM regexp_split_to_table('a,b,,c', ',');
SELECT * FROM regexp_split_to_table('Hello World', 'o', 'i') WITH ORDINALITY;
SELECT * FROM regexp_split_to_table('abc', '');
-- errors
SELECT * FROM jsonb_each('[1, 2]');
SELECT * FROM jsonb_each('3');
SELECT * FROM json_each('[1]');
SELECT * FROM jsonb_each_text('"s"');
SELECT * FROM jsonb_array_elements('{"a": 1}');
SELECT * FROM jsonb_array_elements('5');
SELECT * FROM json_array_elements('{"a": 1}');
SELECT * FROM jsonb_object_keys('[1]');
SELECT * FROM generate_series(1.0, 2.0, 0);
SELECT * FROM generate_series('2024-01-01'::timestamp, '2024-01-02', '0 days');
SELECT * FROM jsonb_each('{"a": 1}') AS e(k, v, extra);
SELECT * FROM generate_series(1, 2) AS g(a, b);
SELECT * FROM docs d, jsonb_each(d.nope);
SELECT * FROM generate_subscripts('{1}'::int[]);
-- SELECT * over a table and a lateral function; functions in subqueries
SELECT * FROM docs d, jsonb_each(d.j) WHERE d.id = 1 ORDER BY key;
SELECT d.id, (SELECT count(*) FROM jsonb_each(d.j)) AS n FROM docs d ORDER BY 1;
SELECT id FROM docs d WHERE EXISTS (SELECT 1 FROM jsonb_object_keys(d.j) k WHERE k = 'z');
SELECT d.id, e.key, v.value FROM docs d, jsonb_each(d.j) e, jsonb_array_elements(CASE WHEN jsonb_typeof(e.value) = 'array' THEN e.value ELSE '[]' END) v ORDER BY 1, 2, 3;
SELECT x.key, count(*) FROM docs, jsonb_each(docs.j) x GROUP BY ROLLUP (x.key) ORDER BY 1;
PREPARE each_p(jsonb) AS SELECT key, value FROM jsonb_each($1) ORDER BY key;
EXECUTE each_p('{"b": 2, "a": 1}');
SELECT * FROM generate_series(1, 3) AS a, generate_series(a, 3) AS b ORDER BY 1, 2;
SELECT * FROM unnest(ARRAY[3, 1, 2]) WITH ORDINALITY AS t(v, n) WHERE v > 1 ORDER BY v;
SELECT * FROM regexp_split_to_table('a b', ' ', 'g');
SELECT * FROM generate_series('NaN'::numeric, 2);
SELECT * FROM generate_series(1.5, 2.5, 'NaN');
SELECT * FROM generate_series(1, 3, 0);
SELECT * FROM generate_series(now(), now(), 1);
