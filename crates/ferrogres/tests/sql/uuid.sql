-- uuid: input forms, output, errors, comparison, a B-tree primary key
CREATE TABLE guid1 (guid_field uuid, text_field text);
CREATE TABLE guid2 (guid_field uuid PRIMARY KEY, text_field text);
-- inputs too long, too short, with bad characters or misplaced hyphens
INSERT INTO guid1(guid_field) VALUES('11111111-1111-1111-1111-111111111111F');
INSERT INTO guid1(guid_field) VALUES('{11111111-1111-1111-1111-11111111111}');
INSERT INTO guid1(guid_field) VALUES('11111111-1111-1111-G111-111111111111');
INSERT INTO guid1(guid_field) VALUES('11+11111-1111-1111-1111-111111111111');
INSERT INTO guid1(guid_field) VALUES('111-11111-1111-1111-1111-111111111111');
INSERT INTO guid1(guid_field) VALUES('{22222222-2222-2222-2222-222222222222');
INSERT INTO guid1(guid_field) VALUES('22222222-2222-2222-2222-222222222222}');
SELECT 'x'::uuid;
SELECT ''::uuid;
-- the accepted forms
SELECT '{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}'::uuid, 'A0EEBC999C0B4EF8BB6D6BB9BD380A11'::uuid,
       'a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11'::uuid, '{a0eebc999c0b4ef8bb6d6bb9bd380a11}'::uuid;
INSERT INTO guid1(guid_field) VALUES('11111111-1111-1111-1111-111111111111');
INSERT INTO guid1(guid_field) VALUES('{22222222-2222-2222-2222-222222222222}');
INSERT INTO guid1(guid_field) VALUES('3f3e3c3b3a3030313233343536373839');
SELECT guid_field FROM guid1 ORDER BY guid_field;
SELECT guid_field FROM guid1 ORDER BY guid_field DESC;
SELECT COUNT(*) FROM guid1 WHERE guid_field = '3f3e3c3b-3a30-3031-3233-343536373839';
SELECT COUNT(*) FROM guid1 WHERE guid_field <> '11111111111111111111111111111111';
SELECT COUNT(*) FROM guid1 WHERE guid_field < '22222222-2222-2222-2222-222222222222';
SELECT COUNT(*) FROM guid1 WHERE guid_field <= '22222222-2222-2222-2222-222222222222';
SELECT COUNT(*) FROM guid1 WHERE guid_field > '22222222-2222-2222-2222-222222222222';
SELECT COUNT(*) FROM guid1 WHERE guid_field >= '22222222-2222-2222-2222-222222222222';
SELECT max(guid_field), min(guid_field) FROM guid1;
-- a uuid primary key: unique violations and index lookups
INSERT INTO guid2(guid_field, text_field) VALUES ('11111111-1111-1111-1111-111111111111', 'one');
INSERT INTO guid2(guid_field, text_field) VALUES ('{22222222-2222-2222-2222-222222222222}', 'two');
INSERT INTO guid2(guid_field, text_field) VALUES ('3f3e3c3b3a3030313233343536373839', 'three');
INSERT INTO guid2(guid_field, text_field) VALUES ('11111111111111111111111111111111', 'dup');
SELECT text_field FROM guid2 WHERE guid_field = '22222222-2222-2222-2222-222222222222';
SELECT g1.guid_field, g2.text_field FROM guid1 g1 JOIN guid2 g2 ON g1.guid_field = g2.guid_field ORDER BY 1;
-- casts to and from text
SELECT '11111111-1111-1111-1111-111111111111'::uuid::text, ('{' || 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11' || '}')::uuid;
SELECT '11111111-1111-1111-1111-111111111111'::uuid = '11111111-1111-1111-1111-111111111111'::text;
-- gen_random_uuid: version 4, different every call
SELECT length(gen_random_uuid()::text), substr(gen_random_uuid()::text, 15, 1) AS version;
SELECT gen_random_uuid() = gen_random_uuid() AS same;
INSERT INTO guid2 SELECT gen_random_uuid(), 'r' FROM generate_series(1, 20);
SELECT count(*), count(DISTINCT guid_field) FROM guid2;
SELECT ARRAY['11111111-1111-1111-1111-111111111111'::uuid, '{22222222-2222-2222-2222-222222222222}'];
DROP TABLE guid1, guid2;
