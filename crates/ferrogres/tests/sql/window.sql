-- Window functions (cases from PostgreSQL's regress/sql/window.sql on small tables)
CREATE TABLE empsalary (depname varchar, empno bigint, salary int, enroll_date date);
INSERT INTO empsalary VALUES
('develop', 10, 5200, '2007-08-01'),
('sales', 1, 5000, '2006-10-01'),
('personnel', 5, 3500, '2007-12-10'),
('sales', 4, 4800, '2007-08-08'),
('personnel', 2, 3900, '2006-12-23'),
('develop', 7, 4200, '2008-01-01'),
('develop', 9, 4500, '2008-01-01'),
('sales', 3, 4800, '2007-08-01'),
('develop', 8, 6000, '2006-10-01'),
('develop', 11, 5200, '2007-08-15');
CREATE TABLE tenk (unique2 int, two int, four int, ten int, hundred int, thousand int);
INSERT INTO tenk SELECT (i * 37) % 100, i % 2, i % 4, i % 10, (i * 7) % 100, (i * 13) % 1000 FROM generate_series(0, 99) i;
-- OVER (PARTITION BY ...), OVER w, WINDOW clause
SELECT depname, empno, salary, sum(salary) OVER (PARTITION BY depname) FROM empsalary ORDER BY depname, salary, empno;
SELECT depname, empno, salary, rank() OVER (PARTITION BY depname ORDER BY salary) FROM empsalary ORDER BY depname, salary, empno;
SELECT depname, empno, salary, sum(salary) OVER w FROM empsalary WINDOW w AS (PARTITION BY depname) ORDER BY depname, empno;
SELECT depname, empno, salary, rank() OVER w FROM empsalary WINDOW w AS (PARTITION BY depname ORDER BY salary) ORDER BY rank() OVER w, empno;
SELECT COUNT(*) OVER () FROM tenk WHERE unique2 < 10;
SELECT COUNT(*) OVER w FROM tenk WHERE unique2 < 10 WINDOW w AS ();
SELECT four FROM tenk WHERE FALSE WINDOW w AS (PARTITION BY ten);
-- ranking and offset functions
SELECT sum(four) OVER (PARTITION BY ten ORDER BY unique2) AS sum_1, ten, four FROM tenk WHERE unique2 < 10 ORDER BY ten, unique2;
SELECT row_number() OVER (ORDER BY unique2) FROM tenk WHERE unique2 < 10 ORDER BY 1;
SELECT rank() OVER (PARTITION BY four ORDER BY ten) AS rank_1, ten, four FROM tenk WHERE unique2 < 20 ORDER BY four, ten, 1;
SELECT dense_rank() OVER (PARTITION BY four ORDER BY ten), ten, four FROM tenk WHERE unique2 < 20 ORDER BY four, ten, 1;
SELECT percent_rank() OVER (PARTITION BY four ORDER BY ten), ten, four FROM tenk WHERE unique2 < 20 ORDER BY four, ten, 1;
SELECT cume_dist() OVER (PARTITION BY four ORDER BY ten), ten, four FROM tenk WHERE unique2 < 20 ORDER BY four, ten, 1;
SELECT ntile(3) OVER (ORDER BY ten, four, unique2), ten, four FROM tenk WHERE unique2 < 10 ORDER BY ten, four, unique2;
SELECT ntile(7) OVER (ORDER BY unique2), unique2 FROM tenk WHERE unique2 < 17 ORDER BY unique2;
SELECT ntile(NULL) OVER (ORDER BY ten, four), ten, four FROM tenk ORDER BY ten, four LIMIT 2;
SELECT lag(ten) OVER (PARTITION BY four ORDER BY ten, unique2), ten, four FROM tenk WHERE unique2 < 10 ORDER BY four, ten, unique2;
SELECT lag(ten, four) OVER (PARTITION BY four ORDER BY ten, unique2), ten, four FROM tenk WHERE unique2 < 10 ORDER BY four, ten, unique2;
SELECT lag(ten, four, 0) OVER (PARTITION BY four ORDER BY ten, unique2), ten, four FROM tenk WHERE unique2 < 10 ORDER BY four, ten, unique2;
SELECT lag(ten, four, 0.7) OVER (PARTITION BY four ORDER BY ten, unique2), ten, four FROM tenk WHERE unique2 < 10 ORDER BY four, ten, unique2;
SELECT lead(ten) OVER (PARTITION BY four ORDER BY ten, unique2), ten, four FROM tenk WHERE unique2 < 10 ORDER BY four, ten, unique2;
SELECT lead(ten * 2, 1) OVER (PARTITION BY four ORDER BY ten, unique2), ten, four FROM tenk WHERE unique2 < 10 ORDER BY four, ten, unique2;
SELECT lead(ten * 2, 1, -1) OVER (PARTITION BY four ORDER BY ten, unique2), ten, four FROM tenk WHERE unique2 < 10 ORDER BY four, ten, unique2;
SELECT lead(ten * 2, 1, -1.4) OVER (PARTITION BY four ORDER BY ten, unique2), ten, four FROM tenk WHERE unique2 < 10 ORDER BY four, ten, unique2;
SELECT lag(ten, -1) OVER (ORDER BY unique2), lead(ten, -2, 99) OVER (ORDER BY unique2), unique2 FROM tenk WHERE unique2 < 6 ORDER BY unique2;
SELECT first_value(ten) OVER (PARTITION BY four ORDER BY ten, unique2), ten, four FROM tenk WHERE unique2 < 10 ORDER BY four, ten, unique2;
SELECT last_value(four) OVER (ORDER BY ten, unique2), ten, four FROM tenk WHERE unique2 < 10 ORDER BY ten, unique2;
SELECT last_value(ten) OVER (PARTITION BY four), ten, four FROM
	(SELECT * FROM tenk WHERE unique2 < 10 ORDER BY four, ten)s
	ORDER BY four, ten;
SELECT nth_value(ten, four + 1) OVER (PARTITION BY four ORDER BY ten, unique2 ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING), ten, four
	FROM tenk WHERE unique2 < 10 ORDER BY four, ten, unique2;
-- window functions over GROUP BY and aggregates
SELECT ten, two, sum(hundred) AS gsum, sum(sum(hundred)) OVER (PARTITION BY two ORDER BY ten) AS wsum
FROM tenk GROUP BY ten, two ORDER BY two, ten;
SELECT ten, two, sum(hundred) AS gsum, sum(sum(hundred)) OVER win AS wsum
FROM tenk GROUP BY ten, two WINDOW win AS (PARTITION BY two ORDER BY ten) ORDER BY two, ten;
SELECT four, ten, SUM(SUM(four)) OVER (PARTITION BY four), AVG(ten) FROM tenk
GROUP BY four, ten ORDER BY four, ten;
SELECT sum(salary),
	row_number() OVER (ORDER BY depname),
	sum(sum(salary)) OVER (ORDER BY depname DESC)
FROM empsalary GROUP BY depname ORDER BY 2;
SELECT depname, count(*), rank() OVER (ORDER BY count(*)) FROM empsalary GROUP BY depname ORDER BY 3, 1;
SELECT sum(sum(salary)) OVER () FROM empsalary;
SELECT count(*) OVER (PARTITION BY four), four FROM (SELECT * FROM tenk WHERE two = 1)s WHERE unique2 < 10 ORDER BY four;
SELECT (count(*) OVER (PARTITION BY four ORDER BY ten) +
  sum(hundred) OVER (PARTITION BY four ORDER BY ten))::varchar AS cntsum
  FROM tenk WHERE unique2 < 10 ORDER BY 1;
SELECT * FROM(
  SELECT count(*) OVER (PARTITION BY four ORDER BY ten) +
    sum(hundred) OVER (PARTITION BY two ORDER BY ten) AS total,
    count(*) OVER (PARTITION BY four ORDER BY ten) AS fourcount,
    sum(hundred) OVER (PARTITION BY two ORDER BY ten) AS twosum
    FROM tenk
)sub
WHERE total <> fourcount + twosum;
SELECT avg(four) OVER (PARTITION BY four ORDER BY thousand / 100) FROM tenk WHERE unique2 < 10 ORDER BY 1;
SELECT sum(salary) OVER w1, count(*) OVER w2
FROM empsalary WINDOW w1 AS (ORDER BY salary), w2 AS (ORDER BY salary) ORDER BY 1, 2;
SELECT lead(ten, (SELECT two FROM tenk WHERE s.unique2 = unique2)) OVER (PARTITION BY four ORDER BY ten, unique2)
FROM tenk s WHERE unique2 < 10 ORDER BY four, ten, unique2;
SELECT count(*) OVER (PARTITION BY four) FROM (SELECT * FROM tenk WHERE FALSE)s;
SELECT sum(salary) OVER w, rank() OVER w FROM empsalary WINDOW w AS (PARTITION BY depname ORDER BY salary DESC) ORDER BY 2, 1;
SELECT empno, depname, salary, bonus, depadj, MIN(bonus) OVER (ORDER BY empno), MAX(depadj) OVER () FROM(
	SELECT *,
		CASE WHEN enroll_date < '2008-01-01' THEN 2008 - extract(YEAR FROM enroll_date) END * 500 AS bonus,
		CASE WHEN
			AVG(salary) OVER (PARTITION BY depname) < salary
		THEN 200 END AS depadj FROM empsalary
)s ORDER BY empno;
-- window results in expressions and ORDER BY
SELECT empno, salary - lag(salary) OVER w AS diff FROM empsalary WINDOW w AS (ORDER BY empno) ORDER BY empno;
SELECT empno, salary, rank() OVER (ORDER BY salary DESC) r FROM empsalary ORDER BY r, empno;
SELECT empno FROM empsalary ORDER BY row_number() OVER (ORDER BY salary DESC, empno) DESC;
SELECT depname, row_number() OVER (PARTITION BY depname ORDER BY empno) * 10 + 1 AS x FROM empsalary ORDER BY depname, x;
SELECT DISTINCT depname, sum(salary) OVER (PARTITION BY depname) FROM empsalary ORDER BY 1;
SELECT empno, salary, sum(salary) OVER (ORDER BY empno) FROM empsalary ORDER BY empno LIMIT 3 OFFSET 2;
-- windows referring to other windows
SELECT empno, rank() OVER (w ORDER BY salary, empno), sum(salary) OVER (w) FROM empsalary WINDOW w AS (PARTITION BY depname) ORDER BY empno;
SELECT empno, count(*) OVER w2 FROM empsalary WINDOW w1 AS (PARTITION BY depname), w2 AS (w1 ORDER BY salary) ORDER BY empno;
SELECT empno, sum(salary) OVER (w ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM empsalary WINDOW w AS (ORDER BY empno) ORDER BY empno;
-- every aggregate as a window aggregate, with FILTER
SELECT empno, count(*) OVER w, count(salary) FILTER (WHERE salary > 4500) OVER w, sum(salary) OVER w, avg(salary) OVER w,
  min(salary) OVER w, max(salary) OVER w FROM empsalary WINDOW w AS (PARTITION BY depname ORDER BY empno) ORDER BY empno;
SELECT empno, string_agg(empno::text, ',') OVER w, array_agg(salary) OVER w, bool_and(salary > 4000) OVER w, bool_or(salary > 5000) OVER w
  FROM empsalary WINDOW w AS (ORDER BY empno ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) ORDER BY empno;
SELECT empno, sum(salary::float8) OVER w, avg(salary::numeric) OVER w, sum(empno) OVER w FROM empsalary WINDOW w AS (ORDER BY empno DESC) ORDER BY empno;
SELECT empno, count(*) FILTER (WHERE depname = 'develop') OVER (ORDER BY empno RANGE BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING) FROM empsalary ORDER BY empno;
-- frames
SELECT sum(unique2) over (order by unique2 rows between current row and unbounded following), unique2 FROM tenk WHERE unique2 < 10 ORDER BY unique2;
SELECT sum(unique2) over (rows between 2 preceding and 2 following), unique2 FROM (SELECT * FROM tenk WHERE unique2 < 10 ORDER BY unique2) s;
SELECT sum(unique2) over (order by unique2 rows between 2 preceding and 2 following exclude no others), unique2 FROM tenk WHERE unique2 < 10 ORDER BY unique2;
SELECT sum(unique2) over (order by unique2 rows between 2 preceding and 2 following exclude current row), unique2 FROM tenk WHERE unique2 < 10 ORDER BY unique2;
SELECT sum(unique2) over (order by four rows between 2 preceding and 2 following exclude group), unique2, four FROM (SELECT * FROM tenk WHERE unique2 < 10 ORDER BY four, unique2) s;
SELECT sum(unique2) over (order by four range between 2 preceding and 2 following exclude ties), unique2, four FROM tenk WHERE unique2 < 10 ORDER BY four, unique2;
SELECT first_value(unique2) over (order by four range between current row and unbounded following exclude current row), unique2, four FROM (SELECT * FROM tenk WHERE unique2 < 10 ORDER BY four, unique2) s ORDER BY four, unique2;
SELECT last_value(four) over (order by four groups between current row and 1 following), unique2, four FROM tenk WHERE unique2 < 10 ORDER BY four, unique2;
SELECT sum(unique2) over (order by four groups between unbounded preceding and current row), unique2, four FROM tenk WHERE unique2 < 10 ORDER BY four, unique2;
SELECT sum(unique2) over (order by four groups between 1 preceding and 1 following), unique2, four FROM tenk WHERE unique2 < 10 ORDER BY four, unique2;
SELECT sum(unique2) over (order by four groups between 2 following and 3 following), unique2, four FROM tenk WHERE unique2 < 10 ORDER BY four, unique2;
SELECT sum(unique2) over (order by four groups between 1 preceding and 1 following exclude ties), unique2, four FROM tenk WHERE unique2 < 10 ORDER BY four, unique2;
SELECT sum(unique2) over (order by unique2 rows between 1 following and 3 following), unique2 FROM tenk WHERE unique2 < 10 ORDER BY unique2;
SELECT sum(unique2) over (order by unique2 rows between unbounded preceding and 1 preceding), unique2 FROM tenk WHERE unique2 < 10 ORDER BY unique2;
SELECT sum(unique2) over (order by unique2 range between 2 preceding and 1 following), unique2 FROM tenk WHERE unique2 < 10 ORDER BY unique2;
SELECT sum(unique2) over (order by unique2 desc range between 2 preceding and 1 following), unique2 FROM tenk WHERE unique2 < 10 ORDER BY unique2;
SELECT sum(unique2) over (order by unique2 range between unbounded preceding and 3 following exclude group), unique2 FROM tenk WHERE unique2 < 10 ORDER BY unique2;
SELECT nth_value(unique2, 2) over (order by unique2 rows between 1 preceding and 2 following exclude current row), unique2 FROM tenk WHERE unique2 < 10 ORDER BY unique2;
SELECT empno, salary, sum(salary) OVER (ORDER BY salary), count(*) OVER (ORDER BY salary RANGE UNBOUNDED PRECEDING) FROM empsalary ORDER BY salary, empno;
SELECT empno, salary, sum(salary) OVER (ORDER BY salary, empno ROWS 1 PRECEDING) FROM empsalary ORDER BY salary, empno;
-- RANGE with offsets over integer, numeric, float, date and timestamp columns, NULLs
CREATE TABLE r (id int, i int, n numeric, f float8, d date, ts timestamp);
INSERT INTO r VALUES (1, 1, 1.5, 1.5, '2020-01-01', '2020-01-01 10:00'), (2, 3, 2.5, 2.25, '2020-01-03', '2020-01-01 12:00'),
  (3, 4, 4, 4, '2020-01-04', '2020-01-02 09:00'), (4, NULL, NULL, NULL, NULL, NULL), (5, 7, 7.25, 7.5, '2020-01-10', '2020-01-03 00:00'),
  (6, 8, 8, 'infinity', '2020-02-01', '2020-01-05 00:00'), (7, NULL, NULL, NULL, NULL, NULL);
SELECT id, i, sum(id) OVER (ORDER BY i RANGE BETWEEN 1 PRECEDING AND 2 FOLLOWING) FROM r ORDER BY i, id;
SELECT id, i, sum(id) OVER (ORDER BY i DESC NULLS LAST RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM r ORDER BY i, id;
SELECT id, i, sum(id) OVER (ORDER BY i NULLS FIRST RANGE BETWEEN CURRENT ROW AND 3 FOLLOWING) FROM r ORDER BY i, id;
SELECT id, n, sum(id) OVER (ORDER BY n RANGE BETWEEN 1.5 PRECEDING AND 0.5 FOLLOWING) FROM r ORDER BY n, id;
SELECT id, f, sum(id) OVER (ORDER BY f RANGE BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM r ORDER BY f, id;
SELECT id, f, sum(id) OVER (ORDER BY f RANGE BETWEEN 'infinity' PRECEDING AND CURRENT ROW) FROM r ORDER BY f, id;
SELECT id, d, count(*) OVER (ORDER BY d RANGE BETWEEN '2 days' PRECEDING AND '1 day' FOLLOWING) FROM r ORDER BY d, id;
SELECT id, ts, count(*) OVER (ORDER BY ts DESC RANGE BETWEEN '1 day' PRECEDING AND CURRENT ROW) FROM r ORDER BY ts, id;
SELECT id, i, first_value(id) OVER w, last_value(id) OVER w FROM r WINDOW w AS (ORDER BY i RANGE BETWEEN 2 PRECEDING AND 2 FOLLOWING EXCLUDE CURRENT ROW) ORDER BY i, id;
-- in subqueries, CTEs, joins, set operations, with DISTINCT ON, SRFs, INSERT ... SELECT, prepared offsets
CREATE TABLE e (a int, b int);
INSERT INTO e VALUES (1, 10), (2, 20), (3, 30), (1, 40);
SELECT a, (SELECT max(x) FROM (SELECT sum(b) OVER (ORDER BY b) AS x FROM e e2 WHERE e2.a = e.a) s) FROM e ORDER BY a, b;
SELECT * FROM (SELECT a, row_number() OVER (PARTITION BY a ORDER BY b) rn FROM e) s WHERE rn = 1 ORDER BY a;
WITH w AS (SELECT a, rank() OVER (ORDER BY a) r FROM e) SELECT * FROM w ORDER BY r, a;
SELECT a, rank() OVER (ORDER BY a) FROM e UNION ALL SELECT 9, 9 ORDER BY 1, 2;
SELECT e.a, x.b, sum(x.b) OVER (PARTITION BY e.a) FROM e JOIN e x ON e.a = x.a ORDER BY 1, 2;
SELECT DISTINCT ON (a) a, b, row_number() OVER (ORDER BY b DESC) FROM e ORDER BY a, b;
SELECT generate_series(1,2), rank() OVER (ORDER BY a), a FROM e ORDER BY 3, 1, 2;
PREPARE p(int) AS SELECT a, sum(b) OVER (ORDER BY a, b ROWS BETWEEN $1 PRECEDING AND CURRENT ROW) FROM e ORDER BY a, b;
EXECUTE p(1);
EXECUTE p(0);
SELECT a, count(*), lag(count(*)) OVER (ORDER BY a) FROM e GROUP BY a HAVING count(*) > 0 ORDER BY a;
SELECT sum(count(*)) OVER () FROM e WHERE a > 100;
INSERT INTO e SELECT row_number() OVER (ORDER BY a, b), 5 FROM e;
SELECT * FROM e ORDER BY a, b;
UPDATE e SET b = rank() OVER ();
SELECT a FROM e LIMIT rank() OVER ();
-- errors
SELECT * FROM empsalary WHERE row_number() OVER (ORDER BY salary) < 10;
SELECT * FROM empsalary GROUP BY row_number() OVER (ORDER BY salary);
SELECT depname FROM empsalary GROUP BY depname HAVING rank() OVER () > 1;
SELECT sum(rank() OVER ()) FROM empsalary;
SELECT rank() OVER (ORDER BY rank() OVER (ORDER BY salary)) FROM empsalary;
SELECT sum(salary) OVER (ORDER BY lag(salary) OVER ()) FROM empsalary;
SELECT lag(lead(salary) OVER ()) OVER () FROM empsalary;
SELECT depname, salary, rank() OVER (ORDER BY salary) FROM empsalary GROUP BY depname;
SELECT count(*), rank() OVER (ORDER BY salary) FROM empsalary;
SELECT rank() OVER w FROM empsalary;
SELECT rank() OVER (w ORDER BY salary) FROM empsalary;
SELECT rank() OVER w FROM empsalary WINDOW w AS (ORDER BY salary), w AS (ORDER BY empno);
SELECT rank() OVER (w ORDER BY salary) FROM empsalary WINDOW w AS (ORDER BY empno);
SELECT rank() OVER (w PARTITION BY depname) FROM empsalary WINDOW w AS (ORDER BY empno);
SELECT rank() OVER (w) FROM empsalary WINDOW w AS (ORDER BY empno ROWS UNBOUNDED PRECEDING);
SELECT rank() OVER (w ORDER BY empno) FROM empsalary WINDOW w AS (ROWS UNBOUNDED PRECEDING);
SELECT row_number() FROM empsalary;
SELECT ntile(2) FROM empsalary;
SELECT upper(depname) OVER () FROM empsalary;
SELECT nosuchfunc(salary) OVER () FROM empsalary;
SELECT count(DISTINCT salary) OVER () FROM empsalary;
SELECT rank() FILTER (WHERE salary > 1) OVER () FROM empsalary;
SELECT ntile(0) OVER (ORDER BY salary) FROM empsalary;
SELECT nth_value(salary, 0) OVER (ORDER BY salary) FROM empsalary;
SELECT sum(salary) OVER (ORDER BY salary ROWS BETWEEN -1 PRECEDING AND CURRENT ROW) FROM empsalary;
SELECT sum(salary) OVER (ORDER BY salary ROWS BETWEEN CURRENT ROW AND -1 FOLLOWING) FROM empsalary;
SELECT sum(salary) OVER (ORDER BY salary ROWS BETWEEN NULL PRECEDING AND CURRENT ROW) FROM empsalary;
SELECT sum(salary) OVER (ORDER BY salary RANGE BETWEEN -1 PRECEDING AND CURRENT ROW) FROM empsalary;
SELECT sum(salary) OVER (ORDER BY salary GROUPS BETWEEN -1 PRECEDING AND CURRENT ROW) FROM empsalary;
SELECT sum(salary) OVER (ORDER BY salary ROWS BETWEEN salary PRECEDING AND CURRENT ROW) FROM empsalary;
SELECT sum(salary) OVER (ORDER BY salary ROWS BETWEEN 'x' PRECEDING AND CURRENT ROW) FROM empsalary;
SELECT sum(salary) OVER (ORDER BY salary ROWS BETWEEN 1.5 PRECEDING AND CURRENT ROW) FROM empsalary;
SELECT sum(salary) OVER (RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM empsalary;
SELECT sum(salary) OVER (ORDER BY salary, empno RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM empsalary;
SELECT sum(salary) OVER (ORDER BY depname RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM empsalary;
SELECT sum(salary) OVER (ORDER BY salary RANGE BETWEEN 1.5 PRECEDING AND CURRENT ROW) FROM empsalary;
SELECT sum(salary) OVER (ORDER BY enroll_date RANGE BETWEEN 1 PRECEDING AND CURRENT ROW) FROM empsalary;
SELECT sum(salary) OVER (GROUPS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM empsalary;
SELECT sum(salary) OVER (ORDER BY salary ROWS BETWEEN UNBOUNDED FOLLOWING AND CURRENT ROW) FROM empsalary;
SELECT sum(salary) OVER (ORDER BY salary ROWS BETWEEN CURRENT ROW AND UNBOUNDED PRECEDING) FROM empsalary;
SELECT sum(salary) OVER (ORDER BY salary ROWS BETWEEN CURRENT ROW AND 1 PRECEDING) FROM empsalary;
SELECT sum(salary) OVER (ORDER BY salary ROWS BETWEEN 1 FOLLOWING AND CURRENT ROW) FROM empsalary;
SELECT sum(salary) OVER (ORDER BY salary ROWS UNBOUNDED FOLLOWING) FROM empsalary;
SELECT rank() OVER (ORDER BY salary) FROM empsalary FOR UPDATE;
SELECT 1 AS ok;
