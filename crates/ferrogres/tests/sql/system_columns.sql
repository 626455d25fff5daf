-- The system columns (ctid, xmin, cmin, xmax, cmax, tableoid) and the tid type.
CREATE TABLE t (a int, b text);
INSERT INTO t VALUES (1, 'x'), (2, 'y'), (1, 'x'), (3, 'z');
-- ctid is not in *, but can be named.
SELECT ctid, * FROM t;
SELECT t.ctid, t.* FROM t ORDER BY ctid DESC;
SELECT * FROM t WHERE ctid = '(0,2)';
SELECT a FROM t WHERE '(0,3)' = ctid;
SELECT a FROM t WHERE ctid = '(0,2)' AND a = 1;
SELECT a FROM t WHERE ctid = '(7,1)';
SELECT a FROM t WHERE ctid = '(0,99)';
SELECT a FROM t WHERE ctid = NULL;
SELECT a, ctid FROM t WHERE ctid > '(0,2)' ORDER BY ctid;
SELECT max(ctid), min(ctid), count(DISTINCT ctid) FROM t;
SELECT ctid::text, pg_typeof(ctid) FROM t WHERE a = 2;
-- A Tid Scan fetches the tuple by its place.
EXPLAIN (COSTS OFF) SELECT * FROM t WHERE ctid = '(0,2)';
EXPLAIN (COSTS OFF) SELECT * FROM t WHERE '(0,2)' = ctid;
EXPLAIN (COSTS OFF) SELECT * FROM t WHERE ctid = '(0,2)' AND a = 1;
EXPLAIN SELECT * FROM t WHERE ctid = '(0,2)';
-- The other system columns.
SELECT xmin = xmin AS x, xmin::text <> '0' AS set, cmin, xmax, cmax, tableoid = 't'::regclass AS tableoid FROM t WHERE a = 2;
SELECT tableoid::regclass, a FROM t WHERE a = 3;
SELECT pg_typeof(xmin), pg_typeof(cmin), pg_typeof(xmax), pg_typeof(cmax), pg_typeof(tableoid) FROM t LIMIT 1;
-- Qualified names in joins; a subquery does not carry them.
SELECT s.ctid, r.ctid FROM t s JOIN t r ON s.a = r.a AND s.ctid < r.ctid;
SELECT s.ctid, r.ctid FROM t s, t r WHERE s.a = r.a AND s.ctid < r.ctid;
SELECT ctid FROM (SELECT * FROM t) s;
SELECT ctid FROM t s, t r;
-- A system view read in a statement that names xmin (its rows have no system columns).
SELECT count(*) > 0 AS ok FROM pg_stat_activity WHERE backend_xmin IS NULL OR backend_xmin IS NOT NULL;
SELECT count(*) > 0 AS ok FROM pg_class c JOIN t ON t.tableoid = c.oid;
-- row_to_json and * leave them out.
SELECT row_to_json(t) FROM t WHERE a = 3;
-- UPDATE and DELETE by ctid.
UPDATE t SET b = 'w' WHERE ctid = '(0,4)' RETURNING a, b;
SELECT ctid, * FROM t ORDER BY a, ctid;
DELETE FROM t WHERE ctid = '(0,2)' RETURNING *;
SELECT ctid, * FROM t ORDER BY ctid;
-- Deleting duplicates.
DELETE FROM t a USING t b WHERE a.ctid < b.ctid AND a.a = b.a AND a.b = b.b;
SELECT ctid, * FROM t ORDER BY ctid;
-- RETURNING ctid after an UPDATE is the new version's place.
UPDATE t SET b = 'v' WHERE a = 1 RETURNING ctid, a, b;
UPDATE t SET b = 'u' FROM (VALUES (3)) v(x) WHERE t.a = v.x RETURNING t.ctid, t.a, t.b;
SELECT ctid, * FROM t ORDER BY ctid;
-- They cannot be assigned or created.
UPDATE t SET ctid = '(0,1)';
UPDATE t SET xmin = '1';
INSERT INTO t (ctid) VALUES ('(0,1)');
INSERT INTO t (a, tableoid) VALUES (1, 1);
CREATE TABLE u (ctid int);
CREATE TABLE u (a int, xmin int);
CREATE TABLE u (tableoid int);
CREATE TABLE u AS SELECT 1 AS cmax;
ALTER TABLE t ADD COLUMN xmax int;
ALTER TABLE t RENAME COLUMN a TO cmin;
-- The tid type.
SELECT '(0,1)'::tid, '(4294967295,65535)'::tid, ' (1,2)'::tid, '(+1, 2)junk'::tid, '(,)'::tid, '(-1,1)'::tid;
SELECT '( 1 , 2 )'::tid;
SELECT '(4294967296,1)'::tid;
SELECT '(1,65536)'::tid;
SELECT '(1,-1)'::tid;
SELECT 'x'::tid;
SELECT '(1,2'::tid;
SELECT '(1.5,2)'::tid;
SELECT '(0,1)'::tid < '(0,2)'::tid, '(1,1)'::tid > '(0,9)'::tid, '(0,1)'::tid <> '(0,1)'::tid,
       '(0,1)'::tid <= '(0,1)', '(0,1)'::tid >= '(0,1)', '(0,1)'::tid = '(0,1)';
SELECT typname, oid, typlen, typbyval, typalign, typarray, typcategory FROM pg_type WHERE oid IN (27, 1010) ORDER BY oid;
SELECT ARRAY['(0,1)'::tid, '(0,2)'];
SELECT '(0,1)'::text::tid;
CREATE TABLE tt (x tid);
INSERT INTO tt VALUES ('(1,2)'), ('(0,3)'), (NULL);
SELECT * FROM tt ORDER BY x;
SELECT x FROM tt WHERE x = '(0,3)';
