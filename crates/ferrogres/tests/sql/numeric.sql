-- numeric: literals, I/O, typmods, arithmetic, functions, casts, aggregates, indexes
SELECT 1.50, '1e3'::numeric, '1.5e-3'::numeric, ' -0.00 '::numeric, '.5'::numeric, '5.'::numeric, 000123.4500;
SELECT 'NaN'::numeric, 'inf'::numeric, '-Infinity'::numeric, '+inFinity'::numeric;
SELECT 'abc'::numeric;
SELECT '1 2'::numeric;
SELECT ''::numeric;
SELECT '1e131072'::numeric;
SELECT '1e-16384'::numeric;
SELECT 99999999999999999999999999999999, -99999999999999999999.99999;
-- operator resolution: int op numeric is numeric, numeric op float8 is float8
SELECT (1 + 1.5) / 3, (1.5 + 1::float8) / 3, (1.5 * 2::int8) / 7, (1.5::real + 1.5) / 3, 2::int2 * 1.5, 99999999999999999999 / 3;
-- arithmetic and result scales
SELECT 1 + 1.5, 1.50 + 2.250, 1.5 - 3, 1.5 * 2.25, 2 * 0.5, -1.5 * -2;
SELECT 1.0 / 3, 10::numeric / 4, 1 / 3.0, 2 / 3::numeric, 100000 / 3.0, 1 / 7.000000000000000000000000, 12345678901234567890 / 3;
SELECT 0.000001 / 7, 1e-20 / 3, 123456.789 / 0.001;
SELECT 1.5 / 0;
SELECT 1.5 % 0;
SELECT 7.5 % 2, -7.5 % 2, 7 % -2.5, 10 % 3.0;
SELECT -(1.5), +(1.5), - -2.0, abs(-1.25), abs(2.5);
SELECT 'inf'::numeric + 1, 'inf'::numeric - 'inf'::numeric, 'inf'::numeric * 0, '-inf'::numeric * -2, 'NaN'::numeric + 1, 1 / 'inf'::numeric;
-- comparisons and ordering (NaN sorts last and equals NaN)
SELECT 1.5 = 1.50, 1.5 < 2, 2 > 1.999, 1 = 1.0, 'NaN'::numeric = 'NaN'::numeric, 'NaN'::numeric > 'inf'::numeric, 1 IN (1, 2.5), 2 IN (1, 2.5), 2.5 BETWEEN 2 AND 3;
SELECT 1.5 <> 1.5, 0.1 + 0.2 = 0.3, GREATEST(1, 2.5, 2), LEAST(1.5, 2, -3), COALESCE(NULL, 1.5), CASE WHEN true THEN 1 ELSE 2.5 END;
-- functions
SELECT round(2.5), round(-2.5), round(1234.5678, 2), round(1234.5678, -2), round(0.5, 0), round(9.995, 2), round(5, 1);
SELECT trunc(2.7), trunc(-2.7), trunc(1234.5678, 2), trunc(1234.5678, -2), ceil(-1.5), ceiling(1.2), floor(-1.5), floor(1.5), ceil(2.000);
SELECT sign(-3.2), sign(0.0), sign(7.1), sqrt(2.0), sqrt(100.0), sqrt(0.0001), sqrt(1e20::numeric);
SELECT sqrt(-1.0);
SELECT mod(7.5, 2), mod(-7, 2.5), div(7.5, 2), div(-7.5, 2), div(9, 4), scale(1.500), scale(15), min_scale(1.2300), trim_scale(1.2300), trim_scale(100.000);
SELECT div(1.0, 0);
CREATE TABLE ceil_floor_round (a numeric);
INSERT INTO ceil_floor_round VALUES ('-5.5');
INSERT INTO ceil_floor_round VALUES ('-5.499999');
INSERT INTO ceil_floor_round VALUES ('9.5');
INSERT INTO ceil_floor_round VALUES ('9.4999999');
INSERT INTO ceil_floor_round VALUES ('0.0');
INSERT INTO ceil_floor_round VALUES ('0.0000001');
INSERT INTO ceil_floor_round VALUES ('-0.000001');
SELECT a, ceil(a), ceiling(a), floor(a), round(a) FROM ceil_floor_round;
DROP TABLE ceil_floor_round;
-- casts
SELECT 2.5::int, (-2.5)::int, 2.4::int2, 1e10::int8, 1.5::float8, 0.1::real, 42::numeric, (-7)::int8::numeric, '12.50'::text::numeric, 12.50::text;
SELECT 0.1::float8::numeric, (0.1::float8 + 0.2::float8)::numeric, 1e-7::float8::numeric, 1e20::float8::numeric, 1.5::real::numeric, 123456789.123::float8::numeric;
SELECT (-9223372036854775808.5)::int8;
SELECT (-9223372036854775808.4)::int8;
SELECT 9223372036854775807.4::int8;
SELECT 9223372036854775807.5::int8;
SELECT (-2147483648.5)::int4;
SELECT (-2147483648.4)::int4;
SELECT 2147483647.4::int4;
SELECT 2147483647.5::int4;
SELECT (-32768.5)::int2;
SELECT (-32768.4)::int2;
SELECT 32767.4::int2;
SELECT 32767.5::int2;
SELECT 'NaN'::float8::numeric;
SELECT 'Infinity'::float8::numeric;
SELECT '-Infinity'::float8::numeric;
SELECT 'NaN'::numeric::float8;
SELECT 'Infinity'::numeric::float8;
SELECT '-Infinity'::numeric::float8;
SELECT 'NaN'::float4::numeric;
SELECT 'Infinity'::numeric::float4;
SELECT '42'::int2::numeric;
SELECT 'NaN'::numeric::int2;
SELECT 'Infinity'::numeric::int2;
SELECT '-Infinity'::numeric::int4;
SELECT 'NaN'::numeric::int8;
-- typmods
SELECT 123.456::numeric(5,2), 123.456::numeric(5), 0.5::numeric(1,0), 1.5::numeric(3,1)::numeric(2,0);
SELECT 999.999::numeric(5,2);
SELECT 'inf'::numeric(5,2);
SELECT 1.5::numeric(1000,1001);
SELECT 1.5::numeric(0);
CREATE TABLE fract_only (id int, val numeric(4,4));
INSERT INTO fract_only VALUES (1, '0.0');
INSERT INTO fract_only VALUES (2, '0.1');
INSERT INTO fract_only VALUES (3, '1.0');	-- should fail
INSERT INTO fract_only VALUES (4, '-0.9999');
INSERT INTO fract_only VALUES (5, '0.99994');
INSERT INTO fract_only VALUES (6, '0.99995');  -- should fail
INSERT INTO fract_only VALUES (7, '0.00001');
INSERT INTO fract_only VALUES (8, '0.00017');
INSERT INTO fract_only VALUES (9, 'NaN');
INSERT INTO fract_only VALUES (10, 'Inf');	-- should fail
INSERT INTO fract_only VALUES (11, '-Inf');	-- should fail
SELECT * FROM fract_only;
DROP TABLE fract_only;
CREATE TABLE num_input_test (n1 numeric);
INSERT INTO num_input_test(n1) VALUES (' 123');
INSERT INTO num_input_test(n1) VALUES ('   3245874    ');
INSERT INTO num_input_test(n1) VALUES ('  -93853');
INSERT INTO num_input_test(n1) VALUES ('555.50');
INSERT INTO num_input_test(n1) VALUES ('-555.50');
INSERT INTO num_input_test(n1) VALUES ('NaN ');
INSERT INTO num_input_test(n1) VALUES ('        nan');
INSERT INTO num_input_test(n1) VALUES (' inf ');
INSERT INTO num_input_test(n1) VALUES (' +inf ');
INSERT INTO num_input_test(n1) VALUES (' -inf ');
INSERT INTO num_input_test(n1) VALUES (' Infinity ');
INSERT INTO num_input_test(n1) VALUES (' +inFinity ');
INSERT INTO num_input_test(n1) VALUES (' -INFINITY ');
INSERT INTO num_input_test(n1) VALUES ('     ');
INSERT INTO num_input_test(n1) VALUES ('   1234   %');
INSERT INTO num_input_test(n1) VALUES ('xyz');
INSERT INTO num_input_test(n1) VALUES ('- 1234');
INSERT INTO num_input_test(n1) VALUES ('5 . 0');
INSERT INTO num_input_test(n1) VALUES ('5. 0   ');
INSERT INTO num_input_test(n1) VALUES ('');
INSERT INTO num_input_test(n1) VALUES (' N aN ');
INSERT INTO num_input_test(n1) VALUES ('+ infinity');
SELECT * FROM num_input_test;
DROP TABLE num_input_test;
CREATE TABLE num_typemod_test (
  millions numeric(3, -6),
  thousands numeric(3, -3),
  units numeric(3, 0),
  thousandths numeric(3, 3),
  millionths numeric(3, 6)
);
INSERT INTO num_typemod_test VALUES (123456, 123, 0.123, 0.000123, 0.000000123);
INSERT INTO num_typemod_test VALUES (654321, 654, 0.654, 0.000654, 0.000000654);
INSERT INTO num_typemod_test VALUES (2345678, 2345, 2.345, 0.002345, 0.000002345);
INSERT INTO num_typemod_test VALUES (7654321, 7654, 7.654, 0.007654, 0.000007654);
INSERT INTO num_typemod_test VALUES (12345678, 12345, 12.345, 0.012345, 0.000012345);
INSERT INTO num_typemod_test VALUES (87654321, 87654, 87.654, 0.087654, 0.000087654);
INSERT INTO num_typemod_test VALUES (123456789, 123456, 123.456, 0.123456, 0.000123456);
INSERT INTO num_typemod_test VALUES (987654321, 987654, 987.654, 0.987654, 0.000987654);
INSERT INTO num_typemod_test VALUES ('NaN', 'NaN', 'NaN', 'NaN', 'NaN');
SELECT scale(millions), * FROM num_typemod_test ORDER BY millions;
INSERT INTO num_typemod_test (millions) VALUES ('inf');
INSERT INTO num_typemod_test (millions) VALUES (999500000);
INSERT INTO num_typemod_test (thousands) VALUES (999500);
INSERT INTO num_typemod_test (units) VALUES (999.5);
INSERT INTO num_typemod_test (thousandths) VALUES (0.9995);
INSERT INTO num_typemod_test (millionths) VALUES (0.0009995);
DROP TABLE num_typemod_test;
select 4790999999999999999999999999999999999999999999999999999999999999999999999999999999999999 * 9999999999999999999999999999999999999999999999999999999999999999999999999999999999999999;
select 4789999999999999999999999999999999999999999999999999999999999999999999999999999999999999 * 9999999999999999999999999999999999999999999999999999999999999999999999999999999999999999;
select 4770999999999999999999999999999999999999999999999999999999999999999999999999999999999999 * 9999999999999999999999999999999999999999999999999999999999999999999999999999999999999999;
select 4769999999999999999999999999999999999999999999999999999999999999999999999999999999999999 * 9999999999999999999999999999999999999999999999999999999999999999999999999999999999999999;
select trim_scale((0.1 - 2e-16383) * (0.1 - 3e-16383));
-- columns, updates, aggregates, ORDER BY, GROUP BY, DISTINCT
CREATE TABLE acct (id int PRIMARY KEY, owner text, bal numeric(12,2), rate numeric, n int8);
INSERT INTO acct VALUES (1, 'a', 100.005, 0.035, 10), (2, 'b', 250.5, 0.04, 9223372036854775807), (3, 'a', -20, NULL, 9223372036854775807), (4, 'c', 0, 1.5, -5);
INSERT INTO acct VALUES (5, 'c', 12345678901.234, 0, 0);
INSERT INTO acct (id, owner, bal, rate) VALUES (6, 'b', '99.999', 'NaN');
SELECT * FROM acct ORDER BY id;
UPDATE acct SET bal = bal * (1 + rate) WHERE rate IS NOT NULL AND rate <> 'NaN';
SELECT id, bal, bal::int AS i, bal::float8 AS f, round(bal / 3, 4) FROM acct ORDER BY bal DESC;
SELECT sum(bal), avg(bal), min(bal), max(bal), count(bal), sum(n), avg(n), sum(id), avg(id) FROM acct;
SELECT owner, sum(bal), avg(bal), max(rate) FROM acct GROUP BY owner ORDER BY owner;
SELECT rate, count(*) FROM acct GROUP BY rate ORDER BY rate;
SELECT DISTINCT rate FROM acct ORDER BY rate;
SELECT avg(x) FROM generate_series(1, 2) AS x;
SELECT avg(x), sum(x::int8), avg(x::int2), avg(x::numeric(10,3)) FROM generate_series(1, 10) AS x;
SELECT avg(x) FROM generate_series(1, 3) AS x WHERE x > 5;
SELECT sum(x::int8) FROM generate_series(1, 3) AS x;
SELECT sum(bal) FILTER (WHERE owner = 'a'), avg(DISTINCT rate) FROM acct;
SELECT id FROM acct WHERE bal > 100 ORDER BY id;
SELECT id FROM acct WHERE bal = 100.01 OR rate = 0.04 ORDER BY id;
SELECT id, bal * 2 AS dbl FROM acct ORDER BY bal * 2 LIMIT 2;
-- indexes on numeric columns
CREATE TABLE prices (p numeric PRIMARY KEY, label text);
INSERT INTO prices VALUES (1.5, 'x'), (1.25, 'y'), (-3, 'z'), ('NaN', 'n'), (100, 'h'), (2, 'two');
INSERT INTO prices VALUES (1.50, 'dup');
CREATE INDEX prices_label ON prices (label);
SELECT * FROM prices WHERE p = 1.5;
SELECT * FROM prices WHERE p >= 1.25 AND p < 100 ORDER BY p;
SELECT * FROM prices ORDER BY p DESC LIMIT 3;
SELECT * FROM prices WHERE p = 2;
SELECT * FROM prices ORDER BY p;
-- assignment casts into integer columns and errors
CREATE TABLE ints (i int, s smallint, b bigint);
INSERT INTO ints VALUES (1.5, 2.5, 3.5), (-1.5, -2.4, 1e18);
INSERT INTO ints VALUES (3e9, 1, 1);
SELECT * FROM ints;
SELECT i + 0.5, s * 1.5, b / 2.0 FROM ints;
DROP TABLE ints;
DROP TABLE prices;
DROP TABLE acct;
-- EXTRACT returns numeric
SELECT EXTRACT(second FROM timestamp '2024-01-01 10:20:30.5'), EXTRACT(epoch FROM interval '1 day 1.5 seconds'), EXTRACT(year FROM date '2024-05-01'), EXTRACT(dow FROM timestamp '2024-01-01') + 1, EXTRACT(milliseconds FROM time '10:00:01.25') / 3;
