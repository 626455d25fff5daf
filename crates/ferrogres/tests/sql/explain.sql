-- EXPLAIN in PostgreSQL's text format (COSTS OFF: estimates differ), the
-- planner's statistics (ANALYZE, pg_stats) and EXPLAIN ANALYZE's row counts.
CREATE TABLE ex (k int PRIMARY KEY, g int, v text);
INSERT INTO ex SELECT i, i % 2, 'v' || i FROM generate_series(1, 2000) i;
CREATE INDEX ex_g_idx ON ex (g);
CREATE TABLE ey (id int PRIMARY KEY, name text);
INSERT INTO ey SELECT i, 'n' || i FROM generate_series(1, 10) i;
ANALYZE ex;
ANALYZE ey;
-- A selective key: an index scan; a key with two values: a sequential scan.
EXPLAIN (COSTS OFF) SELECT * FROM ex WHERE k = 5;
EXPLAIN (COSTS OFF) SELECT * FROM ex WHERE g = 1;
EXPLAIN (COSTS OFF) SELECT * FROM ex WHERE k = 5 AND v = 'x';
EXPLAIN (COSTS OFF) SELECT * FROM ex WHERE g = 1 AND k < 10;
EXPLAIN (COSTS OFF) SELECT * FROM ex WHERE v = 'v7';
EXPLAIN (COSTS OFF) SELECT * FROM ex;
EXPLAIN (COSTS OFF) SELECT v FROM ex ORDER BY v LIMIT 3;
EXPLAIN (COSTS OFF) SELECT * FROM ex ORDER BY v DESC;
EXPLAIN (COSTS OFF) SELECT count(*) FROM ex;
EXPLAIN (COSTS OFF) SELECT g, count(*) FROM ex GROUP BY g ORDER BY g;
EXPLAIN (COSTS OFF) SELECT 1;
EXPLAIN (COSTS OFF) SELECT * FROM generate_series(1, 3);
EXPLAIN (COSTS OFF) SELECT * FROM ex JOIN ey ON ex.g = ey.id;
EXPLAIN (COSTS OFF) INSERT INTO ey VALUES (100, 'a');
EXPLAIN (COSTS OFF) INSERT INTO ey VALUES (100, 'a'), (101, 'b');
EXPLAIN (COSTS OFF) UPDATE ex SET v = 'w' WHERE k = 3;
EXPLAIN (COSTS OFF) DELETE FROM ex WHERE g = 0;
EXPLAIN (COSTS OFF, VERBOSE) SELECT k, v FROM ex WHERE v = 'v1';
EXPLAIN (COSTS OFF) SELECT 1 UNION ALL SELECT 2;
-- EXPLAIN ANALYZE runs the statement (deterministic without timing).
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM ex WHERE g = 1 AND k < 10;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM ex WHERE v LIKE 'v1%';
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM ex WHERE g = 0;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) UPDATE ex SET v = 'w' WHERE k = 3;
SELECT v FROM ex WHERE k = 3;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) DELETE FROM ex WHERE k > 1990;
SELECT count(*) FROM ex;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) INSERT INTO ey VALUES (100, 'a');
-- Options.
EXPLAIN (TIMING) SELECT 1;
EXPLAIN (NOSUCH) SELECT 1;
EXPLAIN (COSTS maybe) SELECT 1;
-- An aggregate over an index scan with a filter.
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT count(*) FROM ex WHERE k < 100 AND g = 1;
-- pg_stats (a full sample: exact figures).
SELECT attname, null_frac, avg_width, n_distinct, most_common_vals, most_common_freqs
  FROM pg_stats WHERE tablename = 'ex' ORDER BY attname;
SELECT attname, histogram_bounds FROM pg_stats WHERE tablename = 'ey' AND attname = 'id';
SELECT relpages > 0 AS has_pages, reltuples FROM pg_class WHERE relname = 'ex';
DROP TABLE ex, ey;
