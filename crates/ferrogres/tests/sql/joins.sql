-- Joins: comma lists, INNER/LEFT/RIGHT/FULL, CROSS, USING, NATURAL, LATERAL,
-- subqueries and VALUES in FROM, name resolution errors.
CREATE TABLE j1 (i int4, j int4, t text);
CREATE TABLE j2 (i int4, k int4);
INSERT INTO j1 VALUES (1, 4, 'one'), (2, 3, 'two'), (3, 2, 'three'), (4, 1, 'four'),
  (5, 0, 'five'), (6, 6, 'six'), (7, 7, 'seven'), (8, 8, 'eight'), (0, NULL, 'zero'),
  (NULL, NULL, NULL), (NULL, 0, 'zero');
INSERT INTO j2 VALUES (1, -1), (2, 2), (3, -3), (2, 4), (5, -5), (5, -5), (0, NULL),
  (NULL, NULL), (NULL, 0);
SELECT * FROM j1, j2 WHERE j1.i = j2.i ORDER BY 1, 2, 3, 5;
SELECT * FROM j1 CROSS JOIN j2 WHERE j1.i = 1 ORDER BY 1, 2, 3, 4, 5;
SELECT count(*) FROM j1, j2;
SELECT * FROM j1 INNER JOIN j2 USING (i) ORDER BY 1, 2, 3, 4;
SELECT * FROM j1 JOIN j2 USING (i) WHERE k > 0 ORDER BY 1, 2, 3, 4;
SELECT * FROM j1 NATURAL JOIN j2 ORDER BY 1, 2, 3, 4;
SELECT * FROM j1 JOIN j2 ON (j1.i = j2.i) ORDER BY 1, 2, 3, 4, 5;
SELECT * FROM j1 JOIN j2 ON (j1.i <= j2.k) ORDER BY 1, 2, 3, 4, 5;
SELECT * FROM j1 LEFT OUTER JOIN j2 USING (i) ORDER BY i, k, t;
SELECT * FROM j1 LEFT JOIN j2 USING (i) WHERE k = 1;
SELECT * FROM j1 RIGHT OUTER JOIN j2 USING (i) ORDER BY i, k, t;
SELECT * FROM j1 RIGHT JOIN j2 USING (i) WHERE k = 1;
SELECT * FROM j1 FULL OUTER JOIN j2 USING (i) ORDER BY i, k, t;
SELECT * FROM j1 FULL JOIN j2 USING (i) WHERE k = 1;
SELECT * FROM j1 LEFT JOIN j2 ON j1.i = j2.i AND j2.k > 0 ORDER BY 1, 2, 3, 4, 5;
SELECT * FROM j1 FULL JOIN j2 ON j1.i = j2.i AND j1.j > 2 ORDER BY 1, 2, 3, 4, 5;
SELECT j1.t, j2.k FROM j1 LEFT JOIN j2 ON j1.i = j2.i WHERE j2.i IS NULL ORDER BY 1, 2;
SELECT a.i, b.i FROM j1 a JOIN j1 b ON a.i = b.j ORDER BY 1, 2;
SELECT * FROM j1 AS x (a, b) WHERE a < 3 ORDER BY a;
SELECT x.a, x.t FROM j1 x (a) WHERE a = 2;
SELECT * FROM (SELECT i, t FROM j1 WHERE i < 3) AS s ORDER BY i;
SELECT s.* FROM (SELECT i + 1, t FROM j1 WHERE i < 3) s (n, name) ORDER BY n;
SELECT * FROM (VALUES (1, 'a'), (2, 'b'), (3, NULL)) AS v (n, s) ORDER BY n DESC;
SELECT * FROM (VALUES (1, 'x'), (2, 'y')) v JOIN j1 ON v.column1 = j1.i ORDER BY 1;
VALUES (1, 'one'), (2, 'two'), (3, 'three');
VALUES (1, 2.5::float8), (2, 3);
VALUES (1), (2, 3);
VALUES (1), ('x');
SELECT * FROM j1 a, LATERAL (SELECT b.k FROM j2 b WHERE b.i = a.i) ss ORDER BY 1, 4;
SELECT a.i, ss.c FROM j1 a LEFT JOIN LATERAL (SELECT count(*) AS c FROM j2 b WHERE b.i = a.i) ss ON true ORDER BY 1, 2;
SELECT g.x, j1.t FROM generate_series(1, 3) g (x) JOIN j1 ON j1.i = g.x ORDER BY 1;
SELECT * FROM j1 JOIN j2 USING (i) JOIN j1 AS j3 USING (i) ORDER BY 1 LIMIT 3;
SELECT i FROM j1, j2;
SELECT z FROM j1, j2;
SELECT j3.i FROM j1, j2;
SELECT * FROM j1, j1;
SELECT * FROM j1 JOIN j2 USING (nope);
SELECT * FROM j1 JOIN j2 ON j1.i;
SELECT * FROM (SELECT 1);
SELECT * FROM j1 x (a, b, c, d);
SELECT j1.*, j2.k FROM j1 JOIN j2 ON j1.i = j2.i WHERE j1.i = 1;
SELECT j2.i, count(*), sum(j1.j) FROM j1 JOIN j2 ON j1.i = j2.i GROUP BY j2.i ORDER BY 1;
SELECT j1.t, count(j2.k) FROM j1 LEFT JOIN j2 USING (i) GROUP BY j1.t HAVING count(j2.k) > 0 ORDER BY 1;
SELECT j1.t, j2.k FROM j1 JOIN j2 USING (i) GROUP BY j1.t;
SELECT * FROM j1 t1 JOIN j2 t2 ON t1.i = t2.i JOIN j2 t3 ON t3.k = t2.k ORDER BY 1, 2, 4, 5, 6, 7;
SELECT * FROM j1 WHERE j1.i IN (1, 2) ORDER BY 1;
SELECT * FROM (j1 JOIN j2 USING (i)) AS jj WHERE jj.i = 2 ORDER BY k;
