-- date, time, timestamp, timestamptz, interval: input, output, errors,
-- arithmetic, comparisons, functions, time zones
SET TimeZone = 'UTC';
SHOW TimeZone;
SHOW DateStyle;
SHOW IntervalStyle;
SELECT date '2024-02-29', '2024-05-17'::date, 'epoch'::date, 'infinity'::date, '-infinity'::date, '0001-01-01 BC'::date;
SELECT timestamp '2024-05-17 10:20:30', '2024-05-17T10:20:30.5'::timestamp, '2021-01-01 10:00:00.1234567'::timestamp;
SELECT '2024-05-17'::timestamp, 'epoch'::timestamp, 'infinity'::timestamp, '-infinity'::timestamp;
SELECT '10:20:30'::time, '10:20'::time, '23:59:59.999999'::time, 'allballs'::time, '24:00:00'::time;
SELECT timestamptz '2024-01-01 00:00+05:30', '2024-01-01 10:00:00-0330'::timestamptz, '2024-01-01T10:00:00Z'::timestamptz;
SELECT '2024-01-01 10:00:00 PST'::timestamptz, '2024-07-01 10:00:00 America/New_York'::timestamptz;
SELECT interval '1 day 02:03:04', interval '3 hours', interval '@ 1 minute ago', interval '-1 day 2 hours';
SELECT interval '1 year 2 months 3 days 04:05:06.5', interval '-1 mons -2 days', interval '0', interval '100 hours';
SELECT interval '1.5 days', interval '1 week', interval '90 minutes', interval '2 years ago', interval '10';
-- errors
SELECT '2021-13-01'::date;
SELECT '2021-02-30'::date;
SELECT '2023-02-29'::date;
SELECT '2021-02-29 10:00'::timestamp;
SELECT '2021-01-01 25:00'::timestamp;
SELECT 'abc'::timestamp;
SELECT 'abc'::date;
SELECT 'abc'::interval;
SELECT 'abc'::timestamptz;
SELECT 'abc'::time;
SELECT '25:00'::time;
SELECT '294277-01-01'::timestamp;
SELECT '5874898-01-01'::date;
-- arithmetic
SELECT date '2024-02-28' + 1, date '2024-02-29' + 1, date '2023-02-28' + 1, date '2024-01-01' - 1;
SELECT date '2024-03-01' - date '2024-02-01', date '2023-03-01' - date '2023-02-01';
SELECT timestamp '2024-01-31 10:00' + interval '1 month', timestamp '2024-03-31' - interval '1 month';
SELECT timestamp '2024-01-01' - timestamp '2023-12-25 12:00', timestamp '2024-01-01 10:00' + interval '1 day 02:00';
SELECT date '2024-01-01' + interval '36 hours', date '2024-01-01' - interval '1 second';
SELECT interval '1 day' + interval '2 hours', interval '1 day' - interval '2 hours', interval '1 day' * 2, -interval '3 hours';
SELECT timestamp 'epoch' + interval '1 day', timestamptz '2024-01-01 00:00+00' + interval '1 hour';
SELECT timestamp '2024-01-01 10:00' + 1;
SELECT date '2024-01-01' + date '2024-01-02';
-- comparisons
SELECT date '2024-01-01' < date '2024-01-02', date '2024-01-01' = timestamp '2024-01-01 00:00', timestamp '2024-01-01' < '2024-01-02';
SELECT interval '1 day' = interval '24 hours', interval '1 mon' = interval '30 days', interval '1 hour' > interval '59 minutes';
SELECT timestamptz '2024-01-01 00:00+00' = timestamptz '2024-01-01 02:00+02', '2024-01-01'::date < 'infinity'::date;
-- functions
SELECT date_part('dow', timestamp '2024-01-01 10:20:30.5'), date_part('epoch', timestamp '2024-01-01'), date_part('second', timestamp '2024-01-01 10:20:30.5');
SELECT date_part('year', date '2024-05-17'), date_part('month', timestamp '2024-05-17'), date_part('day', timestamp '2024-05-17'), date_part('hour', interval '1 day 05:00');
SELECT date_part('doy', timestamp '2024-12-31'), date_part('week', timestamp '2024-12-30'), date_part('quarter', timestamp '2024-05-17'), date_part('isodow', timestamp '2024-05-19');
SELECT date_trunc('month', timestamp '2024-05-17 10:00'), date_trunc('hour', timestamptz '2024-05-17 10:30+02'), date_trunc('year', timestamp '2024-05-17'), date_trunc('week', timestamp '2024-05-17 10:00');
SELECT date_part('foo', timestamp '2024-01-01');
SELECT date_trunc('foo', timestamp '2024-01-01');
-- casts and time zones
SELECT '2024-01-01'::timestamptz::timestamp, '2024-01-01 10:00'::timestamp::timestamptz, '2024-05-17 23:00'::timestamp::date, '2024-05-17'::date::timestamp;
SELECT timestamp '2024-05-17 10:20:30'::time, '2024-05-17 10:20:30.123'::timestamp::text, '1 day'::interval::text;
SET TimeZone = 'America/New_York';
SHOW TimeZone;
SELECT timestamptz '2024-07-01 12:00', timestamptz '2024-01-01 12:00+00', '2024-03-10 02:30'::timestamptz, '2024-11-03 00:30'::timestamptz;
SELECT '2024-07-01 12:00+00'::timestamptz::timestamp, '2024-07-01 12:00'::timestamp::timestamptz, date_part('timezone', timestamptz '2024-07-01 12:00');
SELECT timestamptz '2024-03-09 12:00' + interval '1 day', timestamptz '2024-03-09 12:00' + interval '24 hours';
SET TimeZone = 'PST8PDT';
SELECT timestamptz '2024-01-01 00:00+00', timestamptz '2024-07-01 00:00+00';
SET TimeZone = 'foo';
SET TIME ZONE -8;
SHOW TimeZone;
SELECT timestamptz '2024-01-01 00:00+00';
SET TIME ZONE 'UTC';
-- now() is the transaction's start time
BEGIN;
SELECT now() = now(), now() = CURRENT_TIMESTAMP, now() = transaction_timestamp(), now() <= statement_timestamp(), now() <= clock_timestamp();
SELECT CURRENT_DATE = now()::date, LOCALTIMESTAMP = now()::timestamp, CURRENT_TIMESTAMP(0) <= now() + interval '1 second';
SELECT now() - interval '1 hour' < now(), 'now'::timestamptz = now(), 'today'::date = CURRENT_DATE, 'tomorrow'::date - 'yesterday'::date;
COMMIT;
CREATE TABLE nows (n int, t timestamptz, s timestamptz, c timestamptz);
BEGIN;
INSERT INTO nows VALUES (1, now(), statement_timestamp(), clock_timestamp());
SELECT pg_sleep(0.01);
INSERT INTO nows VALUES (2, CURRENT_TIMESTAMP, statement_timestamp(), clock_timestamp());
SELECT min(t) = max(t) AS same_now, min(s) < max(s) AS stmt_moves, min(c) < max(c) AS clock_moves FROM nows;
COMMIT;
INSERT INTO nows VALUES (3, now(), statement_timestamp(), clock_timestamp());
SELECT max(t) > min(t) AS next_txn_later, max(t) <= max(s) FROM nows;
DROP TABLE nows;
SELECT now() > '2020-01-01', now() < 'infinity', CURRENT_TIMESTAMP(2) > '2020-01-01';
-- storage
CREATE TABLE dt (id int, d date, t time, ts timestamp, tz timestamptz, iv interval, ts0 timestamp(0));
INSERT INTO dt VALUES (1, '2024-02-29', '10:20:30.5', '2024-05-17 10:20:30.123456', '2024-05-17 10:20:30+02', '1 year 2 mons 3 days 04:05:06', '2024-05-17 10:20:30.6');
INSERT INTO dt VALUES (2, 'infinity', 'allballs', '-infinity', 'infinity', '-1 day +02:00', '2024-01-01');
INSERT INTO dt VALUES (3, '1999-12-31', '23:59', '1999-12-31 23:59:59.999999', '1999-12-31 23:59:59Z', '0', '1999-12-31 23:59:59.4');
INSERT INTO dt (id) VALUES (4);
INSERT INTO dt (id, d) VALUES (5, 'nonsense');
SELECT * FROM dt ORDER BY id;
SELECT id, d FROM dt ORDER BY d, id;
SELECT id, iv FROM dt ORDER BY iv DESC NULLS LAST, id;
SELECT id FROM dt WHERE ts > '2000-01-01' ORDER BY id;
SELECT min(d), max(ts), min(iv), max(tz), count(t) FROM dt;
UPDATE dt SET ts = ts + interval '1 day' WHERE id = 1 RETURNING ts;
DELETE FROM dt WHERE d = '1999-12-31' RETURNING id;
DROP TABLE dt;
-- time with time zone
SET TimeZone = 'UTC';
SELECT '10:20:30+02'::timetz, '10:20:30.5-0330'::timetz, '10:20'::timetz, 'allballs'::timetz;
SELECT '10:00+02'::timetz = '08:00+00'::timetz, '10:00+02'::timetz < '09:00+00'::timetz, '10:20:30+02'::timetz::time, '10:20:30'::time::timetz;
SELECT 'x'::timetz;
SELECT current_time = current_time, current_time(2) IS NOT NULL, CURRENT_TIME::time = LOCALTIME;
SET TimeZone = 'America/New_York';
SELECT timestamptz '2024-07-01 12:00'::timetz;
CREATE TABLE ttz (id int, t timetz);
INSERT INTO ttz VALUES (1, '10:00+02'), (2, '08:30+00'), (3, '23:00-05'), (4, NULL);
SELECT * FROM ttz ORDER BY t, id;
DROP TABLE ttz;
-- AT TIME ZONE
SET TimeZone = 'UTC';
SELECT timestamptz '2024-07-01 12:00+00' AT TIME ZONE 'America/New_York', timestamp '2024-07-01 12:00' AT TIME ZONE 'America/New_York', timestamptz '2024-07-01 12:00+00' AT TIME ZONE 'PST';
SELECT timestamp '2024-01-01 00:00' AT TIME ZONE 'UTC', timestamptz '2024-01-01 00:00+00' AT TIME ZONE '+05', date '2024-01-01' AT TIME ZONE 'UTC';
SELECT now() AT TIME ZONE 'foo';
-- more operators
SELECT interval '1 hour' / 2, interval '1 day' / 3, interval '3 days' * 0.5, interval '1 mon' / 2;
SELECT interval '1 hour' / 0;
SELECT date '2024-01-01' + time '10:20', timestamp '2024-01-02 06:00' - date '2024-01-01', date '2024-01-02' - timestamp '2024-01-01 12:00';
SELECT timestamptz '2024-01-02 00:00+00' - timestamp '2024-01-01 00:00', timestamptz '2024-01-02 00:00+00' - date '2024-01-01';
-- zone names are case-insensitive; SHOW gives the canonical spelling
SET TimeZone = 'america/new_york';
SHOW TimeZone;
SET TimeZone = 'utc';
SHOW TimeZone;
SET TimeZone = 'pst8pdt';
SHOW TimeZone;
SELECT timestamptz '2024-07-01 00:00+00';
