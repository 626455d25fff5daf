-- Relation locks, LOCK TABLE, row locks and advisory locks in one session
-- (conflicts between sessions: tests/sql_locking.rs and tests/isolation.rs).
CREATE TABLE foo (id int, data text);
INSERT INTO foo VALUES (1, 'a'), (2, 'b'), (3, 'c');
LOCK TABLE foo;
LOCK nosuch;
BEGIN;
LOCK TABLE foo IN ACCESS SHARE MODE;
LOCK foo IN ROW SHARE MODE;
LOCK TABLE ONLY foo IN ROW EXCLUSIVE MODE;
LOCK TABLE foo IN SHARE UPDATE EXCLUSIVE MODE;
LOCK TABLE foo IN SHARE MODE NOWAIT;
LOCK TABLE foo IN SHARE ROW EXCLUSIVE MODE;
LOCK TABLE foo IN EXCLUSIVE MODE;
LOCK TABLE foo, foo IN ACCESS EXCLUSIVE MODE NOWAIT;
SELECT * FROM foo;
COMMIT;
BEGIN;
LOCK TABLE nosuch, foo;
ROLLBACK;
-- Row locks
SELECT * FROM foo WHERE id > 1 FOR UPDATE;
SELECT id FROM foo ORDER BY id DESC LIMIT 2 FOR SHARE;
SELECT id FROM foo ORDER BY id LIMIT 1 OFFSET 1 FOR NO KEY UPDATE;
SELECT * FROM foo f FOR UPDATE OF f NOWAIT;
SELECT * FROM foo FOR UPDATE OF bar;
SELECT count(*) FROM foo FOR UPDATE;
SELECT * FROM foo FOR KEY SHARE SKIP LOCKED;
BEGIN;
SELECT * FROM foo WHERE id = 1 FOR UPDATE;
UPDATE foo SET data = 'x' WHERE id = 1;
SELECT * FROM foo WHERE id = 1 FOR SHARE;
DELETE FROM foo WHERE id = 1 RETURNING *;
SELECT * FROM foo ORDER BY id FOR UPDATE;
ROLLBACK;
-- Advisory locks
SELECT pg_advisory_lock(1);
SELECT pg_advisory_lock(1);
SELECT pg_advisory_unlock(1), pg_advisory_unlock(1), pg_advisory_unlock(1);
SELECT pg_try_advisory_lock(2, 3), pg_try_advisory_lock_shared(4);
SELECT pg_advisory_unlock_shared(4), pg_advisory_unlock_shared(2, 3);
SELECT pg_advisory_unlock_all();
SELECT pg_advisory_unlock(2, 3);
SELECT pg_advisory_lock(NULL);
BEGIN;
SELECT pg_advisory_xact_lock(1), pg_advisory_xact_lock_shared(2);
SELECT pg_try_advisory_xact_lock(1, 2), pg_try_advisory_xact_lock_shared(3);
SELECT pg_advisory_unlock(1);
COMMIT;
SELECT pg_advisory_lock(1, 2, 3);
SELECT pg_advisory_lock(9) IS NOT NULL AS not_null, pg_advisory_unlock(9);
-- Settings
SHOW deadlock_timeout;
SET deadlock_timeout = '10ms';
SHOW deadlock_timeout;
SET deadlock_timeout = 0;
SET lock_timeout = '1s';
SHOW lock_timeout;
SET lock_timeout = 'soon';
RESET lock_timeout;
RESET deadlock_timeout;
DROP TABLE foo;
-- row locking clauses refused with grouping and DISTINCT, before the query is analyzed
CREATE TABLE lk_group (a int, b int);
SELECT a FROM lk_group GROUP BY a FOR UPDATE;
SELECT DISTINCT a FROM lk_group FOR SHARE;
SELECT a FROM lk_group HAVING count(*) > 0 FOR UPDATE;
SELECT count(*) FROM lk_group FOR KEY SHARE;
DROP TABLE lk_group;
