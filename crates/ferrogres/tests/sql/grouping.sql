-- GROUP BY, HAVING, aggregates per group, DISTINCT and DISTINCT ON
CREATE TABLE g (id int NOT NULL, grp text, sub int, v int, f float8);
INSERT INTO g VALUES (1, 'a', 1, 10, 1.5), (2, 'a', 1, 20, 2.5), (3, 'a', 2, NULL, NULL),
  (4, 'b', 1, 5, -1), (5, 'b', 2, 5, 4), (6, NULL, 1, 7, 0.5), (7, NULL, NULL, NULL, NULL),
  (8, 'c', 3, 100, 10);
-- grouping by columns, expressions, positions and output names
SELECT grp, count(*), count(v), sum(v), min(v), max(v) FROM g GROUP BY grp ORDER BY grp;
SELECT grp, sub, count(*) FROM g GROUP BY grp, sub ORDER BY grp, sub;
SELECT sub % 2 AS parity, count(*) FROM g GROUP BY sub % 2 ORDER BY 1;
SELECT grp, sum(v) FROM g GROUP BY 1 ORDER BY 2 DESC NULLS LAST, 1;
SELECT upper(grp) AS big, count(*) FROM g GROUP BY big ORDER BY big;
SELECT grp FROM g GROUP BY grp ORDER BY grp;
SELECT count(*) FROM g GROUP BY grp ORDER BY count(*), 1;
SELECT grp || '!' AS x, max(f) FROM g GROUP BY grp ORDER BY x;
SELECT sub + 1, count(*) FROM g GROUP BY sub + 1 ORDER BY sub + 1;
SELECT grp, count(*) FROM g WHERE v > 5 GROUP BY grp ORDER BY grp;
SELECT grp, count(*) FROM g WHERE false GROUP BY grp;
SELECT count(*), sum(v) FROM g WHERE false;
-- HAVING
SELECT grp, sum(v) FROM g GROUP BY grp HAVING sum(v) > 10 ORDER BY grp;
SELECT grp, count(*) FROM g GROUP BY grp HAVING count(*) > 1 AND grp IS NOT NULL ORDER BY grp;
SELECT grp FROM g GROUP BY grp HAVING max(f) < 3 ORDER BY grp;
SELECT count(*) FROM g HAVING count(*) > 100;
SELECT count(*) FROM g HAVING count(*) > 1;
SELECT grp FROM g GROUP BY grp HAVING v > 1;
SELECT grp FROM g GROUP BY grp HAVING sum(v);
-- 42803 and 42P10
SELECT grp, v FROM g GROUP BY grp;
SELECT g.grp, sub FROM g GROUP BY grp;
SELECT x.grp, x.sub FROM g x GROUP BY x.grp;
SELECT sub + 1, sub FROM g GROUP BY sub + 1;
SELECT grp, count(*) FROM g GROUP BY grp ORDER BY v;
SELECT * FROM g GROUP BY grp;
SELECT v, count(*) FROM g;
SELECT grp FROM g GROUP BY 3;
SELECT grp FROM g GROUP BY 0;
SELECT count(*) FROM g GROUP BY count(*);
SELECT grp FROM g GROUP BY nosuch;
-- avg, FILTER, DISTINCT aggregates
SELECT grp, avg(f) FROM g GROUP BY grp ORDER BY grp;
SELECT avg(f), avg(f::real), avg(NULL::float8) FROM g;
SELECT count(*) FILTER (WHERE v > 5), sum(v) FILTER (WHERE grp = 'a'), count(*) FROM g;
SELECT grp, count(v) FILTER (WHERE f > 0) AS pos, min(id) FILTER (WHERE v IS NULL) FROM g GROUP BY grp ORDER BY grp;
SELECT count(DISTINCT v), count(DISTINCT grp), sum(DISTINCT v), count(v) FROM g;
SELECT sub, count(DISTINCT grp) FROM g GROUP BY sub ORDER BY sub;
SELECT count(*) FILTER (WHERE v) FROM g;
SELECT count(*) FILTER (WHERE count(*) > 1) FROM g;
-- DISTINCT
SELECT DISTINCT grp FROM g ORDER BY grp;
SELECT DISTINCT grp, sub FROM g ORDER BY grp, sub;
SELECT DISTINCT sub % 2 FROM g ORDER BY 1;
SELECT DISTINCT v FROM g ORDER BY v DESC;
SELECT DISTINCT grp FROM g ORDER BY grp DESC LIMIT 2;
SELECT DISTINCT grp FROM g ORDER BY v;
SELECT DISTINCT upper(grp) FROM g ORDER BY upper(grp);
-- DISTINCT ON
SELECT DISTINCT ON (grp) grp, id, v FROM g ORDER BY grp, v DESC NULLS LAST, id;
SELECT DISTINCT ON (grp) grp, id FROM g ORDER BY grp, id DESC;
SELECT DISTINCT ON (sub) id FROM g ORDER BY sub, id;
SELECT DISTINCT ON (1) sub, id FROM g ORDER BY 1, 2 DESC;
SELECT DISTINCT ON (grp, sub) grp, sub, id FROM g ORDER BY sub, grp, id;
SELECT DISTINCT ON (grp) grp, id FROM g ORDER BY id;
SELECT DISTINCT ON (grp) grp, id FROM g ORDER BY sub, grp;
SELECT DISTINCT ON (5) grp FROM g;
-- grouping with DISTINCT, LIMIT and CASE
SELECT DISTINCT count(*) FROM g GROUP BY grp ORDER BY 1;
SELECT DISTINCT ON (v) grp FROM g GROUP BY grp;
SELECT DISTINCT ON (max(v)) grp, max(v) FROM g GROUP BY grp ORDER BY max(v), grp;
SELECT grp, sum(CASE WHEN v > 6 THEN 1 ELSE 0 END) AS big FROM g GROUP BY grp ORDER BY grp LIMIT 3;
SELECT CASE WHEN sub IS NULL THEN 'none' ELSE 'some' END AS k, count(*) FROM g GROUP BY 1 ORDER BY 1;
CREATE INDEX g_grp ON g (grp);
SELECT grp, count(*) FROM g GROUP BY grp ORDER BY grp LIMIT 2;
SELECT DISTINCT grp FROM g ORDER BY grp LIMIT 2;
DROP TABLE g;
-- grouping by a primary key makes the other columns available
CREATE TABLE gk (id int PRIMARY KEY, name text, n int);
INSERT INTO gk VALUES (1, 'one', 1), (2, 'two', 2), (3, NULL, 3);
SELECT id, name, sum(n) FROM gk GROUP BY id ORDER BY id;
SELECT name, count(*) FROM gk GROUP BY id ORDER BY name;
SELECT id, name FROM gk GROUP BY name ORDER BY 1;
DROP TABLE gk;
-- string_agg, bool_and / every, bool_or
CREATE TABLE sa (g int, s text, v varchar(5), b bool);
INSERT INTO sa VALUES (1, 'a', 'x', true), (1, NULL, 'y', NULL), (1, 'c', NULL, false), (2, 'd', 'z', true), (3, NULL, NULL, NULL);
SELECT g, string_agg(s, ', '), string_agg(v, '-'), bool_and(b), bool_or(b), every(b) FROM sa GROUP BY g ORDER BY g;
SELECT string_agg(s, NULL), string_agg(DISTINCT v, '|') FILTER (WHERE g < 3) FROM sa;
SELECT string_agg(s, ',') FROM sa WHERE false;
SELECT string_agg(g, ',') FROM sa;
SELECT bool_and(g) FROM sa;
DROP TABLE sa;
