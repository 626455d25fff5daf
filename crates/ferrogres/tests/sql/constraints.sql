-- CHECK constraints
CREATE TABLE c1 (a int CHECK (a > 0), b int, c text CONSTRAINT c_short CHECK (length(c) < 5), CHECK (b > a), CHECK (1 < 2), CHECK (1 < 3));
INSERT INTO c1 VALUES (1, 2, 'x');
INSERT INTO c1 VALUES (0, 2, 'x');
INSERT INTO c1 VALUES (1, 0, 'x');
INSERT INTO c1 VALUES (1, 2, 'toolong');
INSERT INTO c1 VALUES (NULL, NULL, NULL);
INSERT INTO c1 (b) VALUES (-5);
SELECT * FROM c1 ORDER BY a;
UPDATE c1 SET a = -1 WHERE a = 1;
UPDATE c1 SET b = 10 WHERE a = 1;
SELECT * FROM c1 ORDER BY a;
INSERT INTO c1 SELECT g, g - 1, 'y' FROM generate_series(1, 2) g;
COPY c1 FROM STDIN;
5	6	z
5	4	z
\.
SELECT count(*) FROM c1;
-- a named and an automatic name
CREATE TABLE c2 (x int CHECK (x <> 0), y int CHECK (y <> 0) CHECK (y < 100));
INSERT INTO c2 VALUES (1, 100);
INSERT INTO c2 VALUES (0, 0);
-- NOT NULL is checked first and keeps its message
CREATE TABLE c3 (a int NOT NULL CHECK (a > 0));
INSERT INTO c3 VALUES (NULL);
INSERT INTO c3 VALUES (-1);
-- errors at CREATE TABLE
CREATE TABLE bad (a int CHECK (a));
CREATE TABLE bad (a int CHECK (nosuch > 0));
CREATE TABLE bad (a int CONSTRAINT k CHECK (a > 0), b int CONSTRAINT k CHECK (b > 0));
CREATE TABLE c4 (a int CONSTRAINT c1_a_check CHECK (a > 0));
-- rolled back with its table
BEGIN;
CREATE TABLE c5 (a int CHECK (a > 0));
ROLLBACK;
CREATE TABLE c5 (a int CHECK (a < 0));
INSERT INTO c5 VALUES (-1);
INSERT INTO c5 VALUES (1);
DROP TABLE c5;
CREATE TABLE c5 (a int CHECK (a < 0));
INSERT INTO c5 VALUES (1);
-- with a primary key and a serial
CREATE TABLE c6 (id serial PRIMARY KEY, v int CHECK (v BETWEEN 1 AND 10));
INSERT INTO c6 (v) VALUES (5), (10);
INSERT INTO c6 (v) VALUES (11);
INSERT INTO c6 (v) VALUES (1);
SELECT * FROM c6 ORDER BY id;
