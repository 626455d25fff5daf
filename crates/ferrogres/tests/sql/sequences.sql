-- Sequences: CREATE/ALTER/DROP SEQUENCE, nextval/currval/setval/lastval, SERIAL
CREATE SEQUENCE s;
SELECT nextval('s'), nextval('s'), currval('s');
SELECT lastval();
SELECT setval('s', 10);
SELECT nextval('s');
SELECT setval('s', 20, false);
SELECT nextval('s'), currval('s');
CREATE SEQUENCE s;
CREATE SEQUENCE IF NOT EXISTS s;
CREATE SEQUENCE s2 INCREMENT BY 5 MINVALUE 10 MAXVALUE 24 START WITH 12;
SELECT nextval('s2'), nextval('s2'), nextval('s2');
SELECT nextval('s2');
SELECT currval('s2');
CREATE SEQUENCE s3 START 3 MAXVALUE 4 CYCLE;
SELECT nextval('s3'), nextval('s3'), nextval('s3'), nextval('s3');
CREATE SEQUENCE sdown INCREMENT -2;
SELECT nextval('sdown'), nextval('sdown');
CREATE SEQUENCE sneg INCREMENT -1 MINVALUE -2 MAXVALUE -1;
SELECT nextval('sneg'), nextval('sneg');
SELECT nextval('sneg');
CREATE SEQUENCE ssmall AS smallint START 32766;
SELECT nextval('ssmall'), nextval('ssmall');
SELECT nextval('ssmall');
CREATE SEQUENCE sint AS integer;
SELECT setval('sint', 2147483647);
SELECT nextval('sint');
SELECT setval('sint', 0);
-- option errors
CREATE SEQUENCE bad INCREMENT 0;
CREATE SEQUENCE bad MINVALUE 10 MAXVALUE 5;
CREATE SEQUENCE bad START 0;
CREATE SEQUENCE bad START 100 MAXVALUE 50;
CREATE SEQUENCE bad CACHE 0;
CREATE SEQUENCE bad AS smallint MAXVALUE 100000;
CREATE SEQUENCE bad AS text;
CREATE SEQUENCE bad INCREMENT 1 INCREMENT 2;
-- function errors
CREATE SEQUENCE fresh;
SELECT currval('fresh');
SELECT nextval('nosuch');
CREATE TABLE notseq (a int);
SELECT nextval('notseq');
SELECT nextval('S'), nextval('"s"');
SELECT nextval('public.s');
-- ALTER SEQUENCE
ALTER SEQUENCE s RESTART;
SELECT nextval('s');
ALTER SEQUENCE s RESTART WITH 100 INCREMENT 10;
SELECT nextval('s'), nextval('s');
ALTER SEQUENCE IF EXISTS nosuch RESTART;
ALTER SEQUENCE nosuch RESTART;
-- nextval is not rolled back
BEGIN;
SELECT nextval('fresh');
ROLLBACK;
SELECT nextval('fresh');
-- DROP SEQUENCE
DROP SEQUENCE s2, s3;
SELECT nextval('s2');
DROP SEQUENCE s2;
DROP SEQUENCE IF EXISTS s2;
DROP SEQUENCE notseq;
CREATE SEQUENCE notseq;
BEGIN;
CREATE SEQUENCE intx;
SELECT nextval('intx');
ROLLBACK;
SELECT nextval('intx');
-- SERIAL columns
CREATE TABLE ser (id serial, big bigserial, small smallserial, v text);
INSERT INTO ser (v) VALUES ('a'), ('b');
INSERT INTO ser VALUES (DEFAULT, DEFAULT, DEFAULT, 'c');
INSERT INTO ser (id, v) VALUES (100, 'd');
INSERT INTO ser (v) VALUES ('e') RETURNING id, big, small;
SELECT * FROM ser ORDER BY id;
SELECT currval('ser_id_seq'), nextval('ser_big_seq');
INSERT INTO ser (id, v) VALUES (NULL, 'x');
INSERT INTO ser (v) SELECT 'sel' || g FROM generate_series(1, 3) g;
SELECT id, v FROM ser WHERE v LIKE 'sel%' ORDER BY id;
UPDATE ser SET id = DEFAULT WHERE v = 'a' RETURNING id;
COPY ser (v) FROM STDIN;
copy1
copy2
\.
SELECT id, big, v FROM ser WHERE v LIKE 'copy%' ORDER BY id;
CREATE TABLE ser2 (id serial DEFAULT 1);
CREATE TABLE ser (id serial);
DROP SEQUENCE ser_id_seq;
DROP TABLE ser;
SELECT nextval('ser_id_seq');
CREATE TABLE ser (id serial PRIMARY KEY, v int);
INSERT INTO ser (v) VALUES (1), (2);
INSERT INTO ser VALUES (2, 3);
SELECT * FROM ser;
-- other volatile defaults
CREATE TABLE dflt (a int, t timestamptz DEFAULT now(), n bigint DEFAULT nextval('fresh') + 1000);
INSERT INTO dflt (a) VALUES (1), (2);
SELECT a, t = now() AS is_now, n FROM dflt ORDER BY a;
INSERT INTO dflt (a, n) VALUES (3, 0);
SELECT a, n FROM dflt ORDER BY a;
CREATE TABLE dflt2 (a int DEFAULT nextval('nosuch'));
