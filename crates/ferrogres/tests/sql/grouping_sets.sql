-- GROUPING SETS, ROLLUP, CUBE, GROUPING(), GROUP BY DISTINCT
CREATE TABLE gs (a int, b text, c int, d numeric);
INSERT INTO gs VALUES (1, 'x', 10, 1.5), (1, 'y', 20, 2.5), (2, 'x', 30, 3.5), (2, NULL, 40, NULL), (3, 'z', 50, 5), (3, 'z', 60, 6);
CREATE TABLE gs_empty (a int, b text, c int);
-- ROLLUP
SELECT a, b, sum(c), count(*), grouping(a, b) FROM gs GROUP BY ROLLUP (a, b) ORDER BY 1, 2, 3;
SELECT a, b, sum(c) FROM gs GROUP BY ROLLUP (a, b) ORDER BY grouping(a, b), a, b;
-- CUBE
SELECT a, b, sum(c), grouping(a), grouping(b), grouping(b, a) FROM gs GROUP BY CUBE (a, b) ORDER BY 4, 5, 1, 2;
-- GROUPING SETS with the empty set and nested forms
SELECT a, b, count(*) FROM gs GROUP BY GROUPING SETS ((a, b), (a), ()) ORDER BY 1, 2, 3;
SELECT a, b, count(*) FROM gs GROUP BY GROUPING SETS (a, b) ORDER BY 1, 2, 3;
SELECT a, b, c, count(*) FROM gs GROUP BY GROUPING SETS (ROLLUP (a, b), CUBE (c), ()) ORDER BY 1, 2, 3, 4;
SELECT a, b, count(*) FROM gs GROUP BY GROUPING SETS (GROUPING SETS ((a), (b)), ()) ORDER BY 1, 2, 3;
SELECT a, b, c, sum(d) FROM gs GROUP BY ROLLUP ((a, b), c) ORDER BY 1, 2, 3, 4;
-- plain columns mixed with sets: the cross product
SELECT a, b, c, count(*) FROM gs GROUP BY a, ROLLUP (b, c) ORDER BY 1, 2, 3, 4;
SELECT a, b, count(*) FROM gs GROUP BY ROLLUP (a), CUBE (b) ORDER BY 1, 2, 3;
SELECT a, b, count(*) FROM gs GROUP BY (a, b) ORDER BY 1, 2;
-- duplicate sets, GROUP BY DISTINCT
SELECT a, count(*) FROM gs GROUP BY ROLLUP (a), ROLLUP (a) ORDER BY 1, 2;
SELECT a, count(*) FROM gs GROUP BY DISTINCT ROLLUP (a), ROLLUP (a) ORDER BY 1, 2;
SELECT a, b, count(*) FROM gs GROUP BY DISTINCT ROLLUP (a, b), ROLLUP (b, a) ORDER BY 1, 2, 3;
SELECT a, count(*) FROM gs GROUP BY DISTINCT a ORDER BY 1;
-- positions and output names inside sets
SELECT a AS x, count(*) FROM gs GROUP BY ROLLUP (1) ORDER BY 1;
SELECT a + 1 AS x, count(*) FROM gs GROUP BY ROLLUP (x) ORDER BY 1;
SELECT a + 1 AS x, (a + 1) * 2 AS y, coalesce(a, -1) AS z, count(*) FROM gs GROUP BY ROLLUP (a + 1, a) ORDER BY 1, 2, 3;
SELECT coalesce(b, 'all') AS b, sum(c) FROM gs GROUP BY ROLLUP (b) ORDER BY 1, 2;
-- HAVING and ORDER BY over grouping sets
SELECT a, b, sum(c) FROM gs GROUP BY ROLLUP (a, b) HAVING sum(c) > 50 ORDER BY 3 DESC, 1, 2;
SELECT a, b, sum(c) FROM gs GROUP BY CUBE (a, b) HAVING grouping(a, b) = 2 ORDER BY sum(c), b;
SELECT a, sum(c) FROM gs GROUP BY ROLLUP (a) HAVING a IS NULL OR a > 2 ORDER BY 1;
SELECT a, b, sum(c) FROM gs GROUP BY ROLLUP (a, b) ORDER BY a NULLS FIRST, b DESC LIMIT 4;
-- aggregates with FILTER, DISTINCT and ORDER BY inside sets
SELECT a, count(*) FILTER (WHERE c > 15), count(DISTINCT b), string_agg(b, ',' ORDER BY c DESC), avg(d) FROM gs GROUP BY ROLLUP (a) ORDER BY 1;
SELECT b, array_agg(c ORDER BY c), sum(DISTINCT a) FROM gs GROUP BY GROUPING SETS ((b), ()) ORDER BY 1;
-- the empty set gives one row even over an empty table
SELECT count(*), sum(c) FROM gs_empty GROUP BY ();
SELECT a, count(*) FROM gs_empty GROUP BY ROLLUP (a);
SELECT a, b, count(*) FROM gs_empty GROUP BY CUBE (a, b);
SELECT a, count(*) FROM gs_empty GROUP BY GROUPING SETS ((a));
SELECT count(*) FROM gs WHERE false GROUP BY GROUPING SETS ((), ());
SELECT 1 AS one FROM gs GROUP BY ();
-- GROUPING in a plain GROUP BY
SELECT a, grouping(a) FROM gs GROUP BY a ORDER BY 1;
-- subqueries and set operations over grouping sets
SELECT * FROM (SELECT a, sum(c) AS s FROM gs GROUP BY ROLLUP (a)) q WHERE s > 50 ORDER BY 1;
SELECT a, sum(c) FROM gs GROUP BY ROLLUP (a) UNION ALL SELECT 0, 0 ORDER BY 1;
-- errors
SELECT grouping(b) FROM gs GROUP BY a;
SELECT a, grouping(a, c) FROM gs GROUP BY ROLLUP (a);
SELECT grouping(a) FROM gs;
SELECT 1 FROM gs WHERE grouping(a) = 0;
SELECT sum(grouping(a)) FROM gs GROUP BY a;
SELECT grouping(sum(a)) FROM gs GROUP BY a;
SELECT a, c FROM gs GROUP BY ROLLUP (a);
SELECT a, b FROM gs GROUP BY GROUPING SETS ((a), ());
SELECT a FROM gs GROUP BY ROLLUP (2);
SELECT a FROM gs GROUP BY CUBE (a, a, a, a, a, a, a, a, a, a, a, a, a);
SELECT a FROM gs GROUP BY ROLLUP (sum(c));
-- EXPLAIN
EXPLAIN (COSTS OFF) SELECT a, b, sum(c) FROM gs GROUP BY ROLLUP (a, b);
EXPLAIN (COSTS OFF) SELECT a, b, sum(c) FROM gs GROUP BY GROUPING SETS ((a), (b));
EXPLAIN (COSTS OFF) SELECT a, b, sum(c) FROM gs GROUP BY CUBE (a, b) HAVING grouping(a, b) > 0 AND sum(c) > 1::bigint;
-- a table with a primary key: its columns depend on it only where it is grouped in every set
CREATE TABLE gs_pk (id int PRIMARY KEY, v text, n int);
INSERT INTO gs_pk VALUES (1, 'one', 5), (2, 'two', 7);
SELECT id, v, sum(n) FROM gs_pk GROUP BY id, ROLLUP (n) ORDER BY 1, 3;
SELECT id, v FROM gs_pk GROUP BY ROLLUP (id);
