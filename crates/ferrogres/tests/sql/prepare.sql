-- PREPARE / EXECUTE / DEALLOCATE (SQL-level prepared statements)
CREATE TABLE pp (id int PRIMARY KEY, name text, score float8);
PREPARE ins (int, text, float8) AS INSERT INTO pp VALUES ($1, $2, $3);
EXECUTE ins(1, 'one', 1.5);
EXECUTE ins(2, 'two', 2);
EXECUTE ins(3, 'three', NULL);
EXECUTE ins(1 + 3, 'fo' || 'ur', 4.25);
PREPARE sel AS SELECT * FROM pp WHERE id >= $1 ORDER BY id;
EXECUTE sel(2);
EXECUTE sel('3');
PREPARE one(int) AS SELECT name FROM pp WHERE id = $1;
EXECUTE one(4);
PREPARE upd(int) AS UPDATE pp SET score = score * 2 WHERE id = $1 RETURNING *;
EXECUTE upd(1);
PREPARE del AS DELETE FROM pp WHERE id = $1;
EXECUTE del(3);
PREPARE noparam AS SELECT count(*) FROM pp;
EXECUTE noparam;
-- errors
EXECUTE nosuch(1);
PREPARE ins AS SELECT 1;
EXECUTE ins(1, 'x');
EXECUTE ins(1, 'x', 1.0, 2);
EXECUTE one('abc');
EXECUTE one(1.5);
EXECUTE one(true);
PREPARE bad AS SELECT * FROM nosuch;
PREPARE bad2 (nosuchtype) AS SELECT $1;
EXECUTE ins(1, 'dup', 0);
-- the catalog changes under a prepared statement
DROP TABLE pp;
CREATE TABLE pp (id int, name text, score float8);
INSERT INTO pp VALUES (9, 'nine', 9);
EXECUTE one(9);
-- in a transaction block
BEGIN;
EXECUTE ins(10, 'ten', 10);
PREPARE intx AS SELECT count(*) FROM pp;
ROLLBACK;
EXECUTE intx;
SELECT count(*) FROM pp;
DEALLOCATE one;
EXECUTE one(9);
DEALLOCATE one;
DEALLOCATE PREPARE sel;
DEALLOCATE ALL;
EXECUTE ins(11, 'x', 0);
DROP TABLE pp;
