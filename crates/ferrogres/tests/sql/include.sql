-- Unique indexes and constraints with INCLUDE columns: uniqueness over the key
-- columns only; the included columns are stored and kept up to date.
CREATE TABLE inc (k int, v text, w int, PRIMARY KEY (k) INCLUDE (v));
INSERT INTO inc VALUES (1, 'one', 10), (2, 'two', 20), (3, 'three', 30);
INSERT INTO inc VALUES (1, 'other', 11);
INSERT INTO inc VALUES (NULL, 'x', 0);
SELECT * FROM inc WHERE k = 2;
UPDATE inc SET v = 'TWO' WHERE k = 2;
SELECT * FROM inc WHERE k = 2;
UPDATE inc SET w = 21 WHERE k = 2;
UPDATE inc SET k = 3 WHERE k = 2;
UPDATE inc SET k = 4 WHERE k = 2;
SELECT * FROM inc ORDER BY k;
CREATE UNIQUE INDEX inc_w ON inc (w) INCLUDE (k, v);
INSERT INTO inc VALUES (5, 'five', 10);
INSERT INTO inc VALUES (5, 'five', 50);
SELECT * FROM inc WHERE w = 50;
CREATE TABLE inc2 (a int, b int, c text, UNIQUE (a, b) INCLUDE (c));
INSERT INTO inc2 VALUES (1, 1, 'x'), (1, 2, 'x'), (2, 1, 'x');
INSERT INTO inc2 VALUES (1, 2, 'y');
INSERT INTO inc2 VALUES (1, NULL, 'y'), (1, NULL, 'y');
SELECT count(*) FROM inc2;
SELECT indnatts, indnkeyatts, indisunique, indisprimary FROM pg_index WHERE indexrelid IN ('inc_pkey'::regclass, 'inc_w'::regclass, 'inc2_a_b_c_key'::regclass) ORDER BY indnatts;
SELECT pg_get_indexdef('inc_pkey'::regclass), pg_get_indexdef('inc2_a_b_c_key'::regclass);
DROP TABLE inc, inc2;
