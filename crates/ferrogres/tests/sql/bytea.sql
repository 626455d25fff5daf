-- bytea: hex and escape input, hex output, comparisons, storage
SELECT '\x4142'::bytea, 'abc'::bytea, '\001\\x'::bytea, E'\\x41 42'::bytea, ''::bytea;
SELECT '\x4'::bytea;
SELECT '\xzz'::bytea;
SELECT '\9'::bytea;
SELECT 'abc'::bytea = '\x616263', 'abc'::bytea < 'abd'::bytea, length('abc'::bytea), octet_length('\x00ff'::bytea);
SELECT 'abc'::text::bytea, '\x41'::bytea::text;
SELECT 'a'::bytea = 1;
CREATE TABLE b (id int, v bytea);
INSERT INTO b VALUES (1, '\xdeadbeef'), (2, 'plain text'), (3, NULL), (4, '\x');
INSERT INTO b VALUES (5, '\xf');
SELECT * FROM b ORDER BY v, id;
SELECT id FROM b WHERE v = '\x' ORDER BY id;
SELECT id, length(v) FROM b WHERE v > 'a' ORDER BY id;
DROP TABLE b;
