-- FOREIGN KEY constraints
CREATE TABLE p (id int PRIMARY KEY, name text);
CREATE TABLE c (cid int, p int REFERENCES p, note text);
INSERT INTO p VALUES (1, 'one'), (2, 'two'), (3, 'three');
INSERT INTO c VALUES (10, 1, 'a'), (11, 1, 'b'), (12, 2, 'c');
INSERT INTO c VALUES (13, 5, 'x');
INSERT INTO c VALUES (14, NULL, 'null refs nothing');
UPDATE c SET p = 7 WHERE cid = 10;
UPDATE c SET p = 3 WHERE cid = 10;
UPDATE c SET note = 'still ok' WHERE cid = 11;
DELETE FROM p WHERE id = 1;
UPDATE p SET id = 20 WHERE id = 2;
UPDATE p SET name = 'TWO' WHERE id = 2;
DELETE FROM p WHERE id = 3;
DELETE FROM c WHERE cid = 10;
DELETE FROM p WHERE id = 3;
SELECT * FROM p ORDER BY id;
SELECT * FROM c ORDER BY cid;
INSERT INTO c SELECT g, g, 'sel' FROM generate_series(1, 3) g;
COPY c FROM STDIN;
20	2	copy
21	9	copy
\.
SELECT count(*) FROM c;
-- table-level, named, referencing a UNIQUE column
CREATE TABLE u (code text UNIQUE, k int, v int, UNIQUE (k, v));
INSERT INTO u VALUES ('a', 1, 1), ('b', 1, 2);
CREATE TABLE r1 (code text, CONSTRAINT r1_to_u FOREIGN KEY (code) REFERENCES u (code));
INSERT INTO r1 VALUES ('a');
INSERT INTO r1 VALUES ('z');
CREATE TABLE r2 (x int, y int, FOREIGN KEY (x, y) REFERENCES u (k, v));
INSERT INTO r2 VALUES (1, 2);
INSERT INTO r2 VALUES (1, 3);
INSERT INTO r2 VALUES (1, NULL);
-- definition errors
CREATE TABLE bad (a int REFERENCES nosuch);
CREATE TABLE bad (a int REFERENCES u);
CREATE TABLE bad (a int REFERENCES u (v));
CREATE TABLE bad (a text REFERENCES p);
CREATE TABLE bad (a int, FOREIGN KEY (nosuch) REFERENCES p);
CREATE TABLE bad (a int, b int, FOREIGN KEY (a, b) REFERENCES p (id));
-- actions
CREATE TABLE pc (id int PRIMARY KEY);
INSERT INTO pc VALUES (1), (2), (3);
CREATE TABLE cc (id int REFERENCES pc ON DELETE CASCADE ON UPDATE CASCADE);
CREATE TABLE cn (id int REFERENCES pc ON DELETE SET NULL);
CREATE TABLE cr (id int REFERENCES pc ON DELETE RESTRICT);
INSERT INTO cc VALUES (1), (1), (2);
INSERT INTO cn VALUES (1), (2);
INSERT INTO cr VALUES (3);
DELETE FROM pc WHERE id = 1;
SELECT * FROM cc ORDER BY id;
SELECT * FROM cn ORDER BY id;
UPDATE pc SET id = 22 WHERE id = 2;
SELECT * FROM cc ORDER BY id;
SELECT * FROM cn ORDER BY id;
DELETE FROM pc WHERE id = 3;
-- DROP TABLE of a referenced table
DROP TABLE p;
DROP TABLE p, c;
DROP TABLE u;
DROP TABLE r1;
DROP TABLE r2;
DROP TABLE u;
-- rolled back with the transaction
BEGIN;
DELETE FROM cc;
DELETE FROM pc;
ROLLBACK;
SELECT count(*) FROM pc;
