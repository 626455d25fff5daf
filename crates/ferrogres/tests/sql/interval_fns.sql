-- pg_typeof, age, justify_*, sum/avg(interval), make_*, date_bin, isfinite,
-- bytea || bytea and bytea_output
SET TimeZone = 'UTC';
SELECT pg_typeof(1), pg_typeof(1.5), pg_typeof('a'), pg_typeof('a'::text), pg_typeof(now()), pg_typeof(interval '1 day'),
  pg_typeof(NULL), pg_typeof(ARRAY[1]), pg_typeof(1::int8), pg_typeof(current_date), pg_typeof('x'::varchar(3)), pg_typeof(true);
CREATE TABLE tt (i int, s varchar(5), t timestamp);
SELECT pg_typeof(i), pg_typeof(s), pg_typeof(t), pg_typeof(i + 1.0) FROM (SELECT * FROM tt UNION ALL SELECT 1, 'a', now()::timestamp) x;
DROP TABLE tt;
SELECT age(timestamp '2024-03-01', timestamp '2023-01-31'), age(timestamp '2023-01-31', timestamp '2024-03-01'),
  age(timestamp '2024-01-01 10:00', timestamp '2024-01-01 11:30'), age(timestamp '2001-04-10', timestamp '1957-06-13');
SELECT age(timestamptz '2024-03-31 00:00+00', timestamptz '2024-02-29 12:00+00'), age(timestamp '2024-02-29', timestamp '2024-02-29');
SELECT age(current_date::timestamp) = interval '0', age(current_date::timestamp - interval '1 year 2 days') = interval '1 year 2 days';
SELECT justify_hours(interval '27 hours'), justify_hours(interval '-27 hours'), justify_hours(interval '1 day -1 hour'), justify_hours(interval '-1 day 1 hour');
SELECT justify_days(interval '35 days'), justify_days(interval '-35 days'), justify_days(interval '1 mon -1 day'), justify_days(interval '-1 mon 1 day');
SELECT justify_interval(interval '1 mon -1 hour'), justify_interval(interval '-1 mon 1 hour'), justify_interval(interval '1 mon 33 days 25 hours'), justify_interval(interval '-35 days -25 hours');
CREATE TABLE ivs (g int, i interval);
INSERT INTO ivs VALUES (1, '1 day'), (1, '2 hours'), (1, '1 mon'), (2, '-1 day 3 hours'), (2, NULL), (3, NULL);
SELECT g, sum(i), avg(i), count(i) FROM ivs GROUP BY g ORDER BY g;
SELECT sum(i), avg(i) FROM ivs;
SELECT avg(i) FROM ivs WHERE g = 3;
SELECT avg(x) FROM (VALUES (interval '1 mon'), (interval '2 mons'), (interval '2 mons')) v(x);
SELECT g, sum(i) OVER (ORDER BY g, i), avg(i) OVER (PARTITION BY g) FROM ivs ORDER BY g, i;
DROP TABLE ivs;
SELECT make_date(2024, 2, 29), make_date(-44, 3, 15), make_time(10, 30, 15.5), make_timestamp(2024, 1, 5, 10, 11, 12.5);
SELECT make_timestamptz(2024, 7, 5, 10, 11, 12), make_timestamptz(2024, 7, 5, 10, 11, 12, 'America/New_York');
SELECT make_date(2023, 2, 29);
SELECT make_date(0, 1, 1);
SELECT make_time(25, 0, 0);
SELECT make_time(10, 60, 0);
SELECT make_interval(1), make_interval(1, 2), make_interval(1, 2, 3), make_interval(1, 2, 3, 4, 5, 6, 7.5), make_interval();
SELECT date_bin(interval '15 minutes', timestamp '2024-01-05 10:37:12', timestamp '2000-01-01'),
  date_bin(interval '15 minutes', timestamp '2024-01-05 10:37:12', timestamp '2000-01-01 00:05'),
  date_bin(interval '1 day', timestamp '1999-12-30 10:00', timestamp '2000-01-01'),
  date_bin(interval '2 hours', timestamptz '2024-01-05 10:37:12+00', timestamptz '2001-01-01 00:00+00');
SELECT date_bin(interval '1 month', timestamp '2024-01-05', timestamp '2000-01-01');
SELECT date_bin(interval '0 days', timestamp '2024-01-05', timestamp '2000-01-01');
SELECT date_bin(interval '-1 hour', timestamp '2024-01-05', timestamp '2000-01-01');
SELECT isfinite(date '2024-01-01'), isfinite(date 'infinity'), isfinite(timestamp '-infinity'), isfinite(timestamptz '2024-01-01'), isfinite(interval '1 day');
SELECT '\x0102'::bytea || '\x03'::bytea, 'ab'::bytea || 'cd'::bytea, NULL::bytea || '\x01'::bytea;
SET bytea_output = 'escape';
SHOW bytea_output;
SELECT 'abc'::bytea, '\x00017f80ff5c27'::bytea, 'a\\b'::bytea, ''::bytea, E'\\001 x'::bytea;
SELECT ARRAY['\x0102'::bytea], ('\x41ff'::bytea)::text;
SET bytea_output = 'foo';
RESET bytea_output;
SELECT '\x41ff'::bytea;
