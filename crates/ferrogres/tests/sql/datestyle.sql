-- DateStyle and IntervalStyle: SET/SHOW and the text of date/time values in
-- result columns, casts to text, concat/format/||, arrays and COPY TO
SET TimeZone = 'America/Los_Angeles';
SHOW DateStyle;
CREATE TABLE ds (d date, ts timestamp, tstz timestamptz, t time, ttz timetz);
INSERT INTO ds VALUES ('2024-01-05', '2024-01-05 10:11:12.5', '2024-07-05 10:11:12', '10:00', '10:00:00+02'),
  ('0044-03-15 BC', '0044-03-15 10:00 BC', '2024-12-25 00:00:00.123456', '23:59:59.999999', '01:02:03-05:30'),
  ('infinity', '-infinity', 'infinity', '00:00', '00:00+00');
SET datestyle = 'Postgres, MDY';
SHOW DateStyle;
SELECT * FROM ds;
SELECT d::text, ts::text, tstz::text, concat(d, ' ', ts), format('%s|%s', tstz, d), 'at ' || ts FROM ds;
SELECT ARRAY[d] AS da, ARRAY[ts] AS tsa FROM ds;
SELECT concat(1, to_date('20100309', 'YYYYMMDD')), concat_ws('#', true, to_date('20100309', 'YYYYMMDD'));
COPY ds TO STDOUT;
SET datestyle = 'Postgres, DMY';
SELECT * FROM ds;
SET datestyle = 'SQL, MDY';
SELECT * FROM ds;
SET datestyle = 'SQL, DMY';
SELECT * FROM ds;
SET DateStyle TO European;
SHOW DateStyle;
SELECT * FROM ds;
SET datestyle = German;
SHOW datestyle;
SELECT * FROM ds;
SET datestyle = 'german, ymd';
SHOW datestyle;
SET datestyle = 'ymd';
SHOW datestyle;
SET datestyle = postgres, ymd;
SHOW datestyle;
SELECT * FROM ds;
SET datestyle = 'US';
SHOW datestyle;
SET datestyle = 'iso';
SHOW datestyle;
SET datestyle = 'nonEuropean, sql';
SHOW datestyle;
SET datestyle = DEFAULT;
SHOW datestyle;
-- errors
SET datestyle = 'iso, sql';
SET datestyle = 'dmy, mdy';
SET datestyle = 'foo';
SET datestyle = 'sql iso';
SET datestyle = 'sql;iso';
SHOW datestyle;
-- zone abbreviations
SET datestyle = 'Postgres';
SET TimeZone = 'UTC';
SELECT tstz FROM ds;
SET TimeZone = 'Asia/Kolkata';
SELECT tstz FROM ds;
SET TIME ZONE -8;
SELECT tstz FROM ds;
SET TimeZone = 'Europe/Berlin';
SELECT tstz FROM ds;
SELECT timestamptz '2024-03-31 01:59:59+01', timestamptz '2024-03-31 03:00:00+02';
RESET TimeZone;
RESET datestyle;
-- IntervalStyle
CREATE TABLE iv (i interval);
INSERT INTO iv VALUES ('0'), ('1 day 2 hours'), ('-1 day 2 hours'), ('1 year 2 mons 3 days 04:05:06.789'),
  ('-1 year -2 mons -3 days -04:05:06.789'), ('1 year -2 mons'), ('-00:00:01'), ('1 mon -1 day'),
  ('00:00:00.5'), ('-1 year 2 mons'), ('1 day -00:00:01'), ('3 mons'), ('-3 days'), ('-1 year'),
  ('10 years'), ('1.5 seconds'), ('-1 day -02:00:00'), ('-1 day +02:00:00'),
  ('1 year 2 mons -3 days +04:05:06'), ('200 hours'), ('-00:00:00.25'), ('00:01:00'), ('1 second');
SHOW IntervalStyle;
SET IntervalStyle = postgres_verbose;
SELECT i, i::text, concat(i) FROM iv;
SET IntervalStyle = sql_standard;
SELECT i FROM iv;
SET IntervalStyle = iso_8601;
SELECT i FROM iv;
SHOW IntervalStyle;
SET IntervalStyle = 'foo';
RESET IntervalStyle;
SELECT i FROM iv;
DROP TABLE ds, iv;
