-- WITH and WITH RECURSIVE.
WITH q1 (x, y) AS (SELECT 1, 2) SELECT * FROM q1, q1 AS q2;
WITH t AS (SELECT 1 AS a UNION ALL SELECT 2) SELECT a * 10 FROM t ORDER BY 1;
WITH a AS (SELECT 1 AS n), b AS (SELECT n + 1 AS n FROM a) SELECT * FROM a, b;
WITH RECURSIVE t (n) AS (VALUES (1) UNION ALL SELECT n + 1 FROM t WHERE n < 100) SELECT sum(n) FROM t;
WITH RECURSIVE t (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 5) SELECT * FROM t;
WITH RECURSIVE t (n) AS (SELECT 1 UNION SELECT n % 3 + 1 FROM t) SELECT * FROM t ORDER BY n;
CREATE TABLE tree (id int4, parent int4, name text);
INSERT INTO tree VALUES (1, NULL, 'root'), (2, 1, 'a'), (3, 1, 'b'), (4, 2, 'a1'), (5, 4, 'a1x'), (6, 3, 'b1');
WITH RECURSIVE sub (id, name, depth) AS (
  SELECT id, name, 0 FROM tree WHERE id = 2
  UNION ALL
  SELECT tree.id, tree.name, sub.depth + 1 FROM tree JOIN sub ON tree.parent = sub.id
) SELECT * FROM sub ORDER BY depth, id;
WITH RECURSIVE path (id, p) AS (
  SELECT id, name FROM tree WHERE parent IS NULL
  UNION ALL
  SELECT tree.id, path.p || '/' || tree.name FROM tree, path WHERE tree.parent = path.id
) SELECT * FROM path ORDER BY p;
WITH t AS (SELECT id FROM tree WHERE id > 3) SELECT name FROM tree WHERE id IN (SELECT id FROM t) ORDER BY 1;
SELECT (WITH w AS (SELECT 42 AS v) SELECT v FROM w);
WITH RECURSIVE x (n) AS (SELECT n FROM x) SELECT * FROM x;
WITH RECURSIVE x (n) AS (SELECT 1 UNION ALL SELECT 1 FROM x INTERSECT SELECT 2) SELECT * FROM x;
WITH RECURSIVE x (n) AS (SELECT n FROM x UNION ALL SELECT 1) SELECT * FROM x;
WITH RECURSIVE x (n) AS (SELECT 1 UNION ALL SELECT n::int8 + 1 FROM x WHERE n < 3) SELECT * FROM x;
WITH a AS (SELECT 1), a AS (SELECT 2) SELECT * FROM a;
WITH a (x, y) AS (SELECT 1) SELECT * FROM a;
WITH t AS (SELECT 1 AS a) SELECT * FROM t JOIN tree ON tree.id = t.a;
