-- Data-modifying statements in WITH: run once, to completion, with the
-- outer statement's snapshot; the outer query sees only their RETURNING rows.
CREATE TABLE t (a int, b text);
CREATE TABLE log (a int, b text);
INSERT INTO t VALUES (1, 'one'), (2, 'two'), (3, 'three'), (4, 'four');
WITH d AS (DELETE FROM t WHERE a > 2 RETURNING *) INSERT INTO log SELECT * FROM d;
SELECT * FROM t ORDER BY a;
SELECT * FROM log ORDER BY a;
WITH u AS (UPDATE t SET b = upper(b) RETURNING a, b) SELECT * FROM u ORDER BY a;
-- The outer query does not see the changes, only the RETURNING rows.
WITH i AS (INSERT INTO t VALUES (5, 'five') RETURNING a) SELECT (SELECT count(*) FROM t) AS before, count(*) AS inserted FROM i;
SELECT count(*) FROM t;
-- Run even when not read.
WITH i AS (INSERT INTO log VALUES (99, 'unread') RETURNING *) SELECT 1 AS one;
WITH i AS (INSERT INTO log VALUES (100, 'no returning')) SELECT 2 AS two;
SELECT * FROM log ORDER BY a;
-- Several, and renamed columns.
WITH x (k) AS (DELETE FROM log WHERE a >= 99 RETURNING a), y AS (INSERT INTO t VALUES (6, 'six') RETURNING *) SELECT sum(k) AS deleted, max(y.b) AS added FROM x, y;
SELECT * FROM t ORDER BY a;
-- Errors.
WITH i AS (INSERT INTO log VALUES (1, 'x')) SELECT * FROM i;
SELECT * FROM (WITH i AS (INSERT INTO log VALUES (1, 'x') RETURNING *) SELECT * FROM i) s;
SELECT (WITH i AS (DELETE FROM log RETURNING *) SELECT count(*) FROM i);
WITH i AS (INSERT INTO nope VALUES (1) RETURNING *) SELECT * FROM i;
SELECT * FROM log ORDER BY a;
-- Through a view.
CREATE VIEW big AS SELECT a, b FROM t WHERE a > 4;
WITH d AS (DELETE FROM big RETURNING *) SELECT * FROM d ORDER BY a;
SELECT * FROM t ORDER BY a;
