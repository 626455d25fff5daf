-- pg_lsn: text input and output, errors as PostgreSQL's
SELECT '16/B374D848'::pg_lsn;
SELECT '0/0'::pg_lsn, 'ffffffff/ffffffff'::pg_lsn, '0/01'::pg_lsn, 'a/b'::pg_lsn;
SELECT ' 0/1'::pg_lsn;
SELECT '0/1 '::pg_lsn;
SELECT '123456789/1'::pg_lsn;
SELECT '0/'::pg_lsn;
SELECT '/1'::pg_lsn;
SELECT 'G/1'::pg_lsn;
SELECT ''::pg_lsn;
SELECT pg_typeof('0/1'::pg_lsn);
-- casts: only through text
SELECT '1/2'::text::pg_lsn, '3/4'::pg_lsn::text, '5/6'::pg_lsn::varchar;
SELECT 1::pg_lsn;
SELECT 123::numeric::pg_lsn;
SELECT pg_lsn(123.5), pg_lsn(0), pg_lsn(18446744073709551615);
SELECT pg_lsn(-1);
SELECT pg_lsn(18446744073709551616);
-- comparisons
SELECT '0/1'::pg_lsn = '0/01', '0/1'::pg_lsn < '0/2', '1/0'::pg_lsn > '0/FFFFFFFF', '0/1'::pg_lsn <> '0/1';
SELECT 'FFFFFFFF/0'::pg_lsn > '7FFFFFFF/FFFFFFFF', '0/5'::pg_lsn >= '0/5', '0/5'::pg_lsn <= '0/4';
SELECT '0/1'::pg_lsn < 1;
-- arithmetic
SELECT '0/10'::pg_lsn - '0/5'::pg_lsn, '0/5'::pg_lsn - '0/10'::pg_lsn, '0/10'::pg_lsn - '0/5';
SELECT '0/10'::pg_lsn + 5, 5 + '0/10'::pg_lsn, '0/10'::pg_lsn - 5, '0/10'::pg_lsn + 1.5, '0/10'::pg_lsn + 1.4;
SELECT '0/10'::pg_lsn + 5::int8, '1/0'::pg_lsn - 1::numeric;
SELECT pg_typeof('0/10'::pg_lsn - '0/5'::pg_lsn), pg_typeof('0/10'::pg_lsn + 1);
SELECT 'FFFFFFFF/FFFFFFFF'::pg_lsn + 1;
SELECT '0/10'::pg_lsn - 17;
SELECT '0/10'::pg_lsn + 'NaN'::numeric;
SELECT '0/10'::pg_lsn - 'NaN'::numeric;
SELECT '0/10'::pg_lsn * 2;
SELECT pg_wal_lsn_diff('1/0', '0/1'), pg_wal_lsn_diff('0/1', '1/0'), pg_typeof(pg_wal_lsn_diff('0/1', '0/1'));
SELECT pg_wal_lsn_diff(NULL, '0/1') IS NULL;
-- a pg_lsn column: storage, ORDER BY, min/max, an index
CREATE TABLE lsns (id int, l pg_lsn);
INSERT INTO lsns VALUES (1, '0/10'), (2, '1/0'), (3, NULL), (4, 'FFFFFFFF/1'), (5, '0/2'), (6, '80000000/0');
SELECT * FROM lsns ORDER BY l;
SELECT * FROM lsns ORDER BY l DESC;
SELECT min(l), max(l), count(l) FROM lsns;
CREATE INDEX lsns_l ON lsns (l);
INSERT INTO lsns SELECT g, pg_lsn(g * 4096) FROM generate_series(10, 500) g;
SELECT id, l FROM lsns WHERE l = '0/1000';
SELECT id, l FROM lsns WHERE l > '0/1F0000' AND l < 'FFFFFFFF/0' ORDER BY l;
SELECT id, l FROM lsns WHERE l >= '0/1F2000' ORDER BY l LIMIT 3;
SELECT l - '0/0' AS bytes FROM lsns WHERE id = 2;
UPDATE lsns SET l = l + 1 WHERE id = 1 RETURNING l;
-- arrays
SELECT '{0/1,1/0}'::pg_lsn[], ('{0/1,1/0}'::pg_lsn[])[2], pg_typeof('{0/1}'::pg_lsn[]);
SELECT '{0/1,x}'::pg_lsn[];
-- catalogs
SELECT oid, typname, typlen, typbyval, typalign, typarray FROM pg_type WHERE typname IN ('pg_lsn', '_pg_lsn') ORDER BY oid;
SELECT format_type(3220, -1), format_type(3221, -1);
-- WAL positions: the insert position moves with an insert; flushed <= written <= inserted
SELECT pg_current_wal_insert_lsn() AS before_insert \gset
INSERT INTO lsns VALUES (1000, pg_current_wal_insert_lsn());
SELECT pg_current_wal_insert_lsn() > :'before_insert' AS insert_moved;
SELECT l >= :'before_insert' AS stored_position FROM lsns WHERE id = 1000;
SELECT pg_current_wal_flush_lsn() > l AS insert_committed_and_flushed FROM lsns WHERE id = 1000;
SELECT pg_current_wal_flush_lsn() > :'before_insert' AS commit_flushed, pg_current_wal_lsn() > :'before_insert' AS commit_written;
SELECT pg_current_wal_flush_lsn() <= pg_current_wal_lsn() AS flush_le_write, pg_current_wal_lsn() <= pg_current_wal_insert_lsn() AS write_le_insert;
SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), :'before_insert') > 0 AS diff_positive;
SELECT pg_typeof(pg_current_wal_lsn()), pg_typeof(pg_current_wal_insert_lsn()), pg_typeof(pg_current_wal_flush_lsn());
SELECT pg_is_in_recovery();
-- WAL segment file names (16 MB segments)
SELECT pg_walfile_name('0/1000000'), pg_walfile_name('0/1000001'), pg_walfile_name('1/2000010'), pg_walfile_name('0/0');
SELECT pg_walfile_name(NULL) IS NULL;
SELECT pg_walfile_name(pg_current_wal_lsn()) ~ '^00000001[0-9A-F]{16}$' AS walfile_name_form;
-- pg_stat_wal
SELECT pg_typeof(wal_records) AS records, pg_typeof(wal_fpi) AS fpi, pg_typeof(wal_bytes) AS bytes,
       pg_typeof(wal_buffers_full) AS buffers_full, pg_typeof(wal_write) AS write, pg_typeof(wal_sync) AS sync,
       pg_typeof(wal_write_time) AS write_time, pg_typeof(wal_sync_time) AS sync_time, pg_typeof(stats_reset) AS reset
  FROM pg_stat_wal;
SELECT count(*) FROM pg_stat_wal;
SELECT wal_records > 0 AS records, wal_fpi >= 0 AS fpi, wal_bytes > 0 AS bytes, wal_buffers_full >= 0 AS buffers_full,
       wal_write > 0 AS write, wal_sync > 0 AS sync, wal_write_time = 0 AS write_time, wal_sync_time = 0 AS sync_time,
       stats_reset IS NOT NULL AS reset
  FROM pg_stat_wal;
SELECT wal_bytes >= wal_records AS bytes_ge_records FROM pg_catalog.pg_stat_wal;
SELECT stats_reset AS reset_before FROM pg_stat_wal \gset
SELECT pg_stat_reset_shared('wal');
SELECT stats_reset > :'reset_before' AS reset_moved, wal_records >= 0 AS records FROM pg_stat_wal;
SELECT pg_stat_reset_shared('bgwriter'), pg_stat_reset_shared('archiver'), pg_stat_reset_shared('recovery_prefetch');
SELECT pg_stat_reset_shared(NULL);
SELECT pg_stat_reset_shared('WAL');
SELECT pg_stat_reset_shared('nothing');
DROP TABLE lsns;
