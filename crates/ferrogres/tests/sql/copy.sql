-- COPY FROM STDIN / TO STDOUT in text and CSV format, with PostgreSQL's errors.
CREATE TABLE c1 (a int NOT NULL, b text, c varchar(5));
COPY c1 FROM stdin;
1	one	x
2	\N	y
3	tab\there	\N
4	back\\slash	nl\nz
5	oct\101\x42	\b\f
\.
SELECT a, b, c, length(c) FROM c1 ORDER BY a;
COPY c1 TO stdout;
COPY c1 (c, a) TO stdout;
COPY c1 TO stdout WITH (FORMAT csv);
COPY c1 TO stdout WITH (FORMAT csv, HEADER, DELIMITER '|', NULL 'NULL');
COPY c1 TO stdout WITH CSV HEADER;
COPY c1 TO stdout DELIMITER ',';
COPY c1 TO stdout WITH (FORMAT csv, FORCE_QUOTE *);
COPY c1 TO stdout WITH (FORMAT csv, FORCE_QUOTE (b));
COPY (SELECT a * 10 AS ten, b FROM c1 WHERE a < 3 ORDER BY a DESC) TO stdout;
COPY (SELECT a, b FROM c1 WHERE a < 3 ORDER BY a) TO stdout WITH (FORMAT csv, HEADER);
-- Column lists and defaults.
CREATE TABLE c2 (x int DEFAULT 7, y text DEFAULT 'dflt', z int);
COPY c2 (z) FROM stdin;
1
2
\.
COPY c2 (y, x) FROM stdin WITH (DELIMITER ',');
a,10
b,20
\.
SELECT * FROM c2 ORDER BY z, x;
-- CSV input: quotes, embedded delimiters and newlines, empty vs NULL.
CREATE TABLE c3 (id int, t text);
COPY c3 FROM stdin WITH (FORMAT csv);
1,plain
2,"with, comma"
3,"with ""quotes"""
4,
5,""
6,"multi
line"
\.
COPY c3 FROM stdin WITH CSV HEADER;
id,t
7,after header
\.
COPY c3 FROM stdin WITH (FORMAT csv, NULL 'NULL', FORCE_NOT_NULL (t));
8,NULL
9,
\.
COPY c3 FROM stdin WITH (FORMAT csv, FORCE_NULL (t));
10,""
\.
SELECT id, t, t IS NULL AS isnull FROM c3 ORDER BY id;
COPY c3 TO stdout WITH (FORMAT csv);
COPY c3 TO stdout;
-- Errors, with their CONTEXT lines; nothing of a failed COPY stays.
COPY c1 FROM stdin;
10	ok	a
11	x
\.
COPY c1 FROM stdin;
12	a	b	extra
\.
COPY c1 FROM stdin;
13	a	b
x14	a	b
\.
COPY c1 FROM stdin;
\N	a	b
\.
COPY c1 FROM stdin;
15	a	toolong
\.
COPY c1 (a, nope) FROM stdin;
COPY c1 (a, a) FROM stdin;
COPY nosuch FROM stdin;
COPY c1 FROM stdin WITH (FORMAT xml);
COPY c1 FROM stdin WITH (bogus 1);
COPY c1 FROM stdin WITH (DELIMITER ',', DELIMITER ';');
COPY c1 FROM stdin WITH (DELIMITER 'ab');
COPY c1 FROM stdin WITH (QUOTE '"');
COPY c1 TO stdout WITH (FORMAT csv, FORCE_NOT_NULL (a));
COPY c1 FROM stdin WITH (FORMAT csv, FORCE_QUOTE (a));
COPY c1 FROM stdin WITH (FORMAT csv, FORCE_NULL (zz));
COPY c1 TO 'relative.txt';
COPY c3 FROM stdin WITH (FORMAT csv);
20,"never closed
\.
SELECT count(*) FROM c1;
SELECT count(*) FROM c3;
-- FREEZE needs a table created (or truncated) in the same transaction.
COPY c1 FROM stdin WITH (FREEZE);
16	a	b
\.
BEGIN;
CREATE TABLE c4 (a int, b text);
COPY c4 FROM stdin WITH (FREEZE on);
1	frozen
\.
COMMIT;
SELECT * FROM c4;
BEGIN;
COPY c4 FROM stdin WITH (FREEZE);
2	no
\.
ROLLBACK;
-- A COPY in a transaction block rolls back with it; errors fail the block.
BEGIN;
COPY c4 FROM stdin;
3	in block
\.
SELECT count(*) FROM c4;
ROLLBACK;
SELECT count(*) FROM c4;
BEGIN;
COPY c4 FROM stdin;
bad	row
\.
SELECT 1;
ROLLBACK;
-- HEADER in text format, HEADER MATCH, and psql's \copy.
CREATE TABLE c5 (k int, v text);
COPY c5 FROM stdin WITH (HEADER);
anything	here
1	a
\.
COPY c5 FROM stdin WITH (HEADER match);
k	v
2	b
\.
COPY c5 FROM stdin WITH (FORMAT csv, HEADER match);
k,w
3,c
\.
COPY c5 FROM stdin WITH (HEADER match, FORMAT csv);
k
\.
COPY c5 TO stdout WITH (HEADER match);
COPY c5 TO stdout WITH (HEADER);
\copy c5 to stdout with csv
DROP TABLE c1, c2, c3, c4, c5;
