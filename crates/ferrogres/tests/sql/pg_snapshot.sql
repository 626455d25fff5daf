-- pg_snapshot and txid_snapshot: PostgreSQL 15's own statements from its
-- xid and txid regression files (their parts before PL/pgSQL), plus
-- storage, binary round trips and the current snapshot seeing a running transaction.
-- pg_snapshot data type and related functions

-- Note: another set of tests similar to this exists in txid.sql, for a limited
-- time (the relevant functions share C code)

-- i/o
select '12:13:'::pg_snapshot;
select '12:18:14,16'::pg_snapshot;
select '12:16:14,14'::pg_snapshot;

-- errors
select '31:12:'::pg_snapshot;
select '0:1:'::pg_snapshot;
select '12:13:0'::pg_snapshot;
select '12:16:14,13'::pg_snapshot;

create temp table snapshot_test (
	nr	integer,
	snap	pg_snapshot
);

insert into snapshot_test values (1, '12:13:');
insert into snapshot_test values (2, '12:20:13,15,18');
insert into snapshot_test values (3, '100001:100009:100005,100007,100008');
insert into snapshot_test values (4, '100:150:101,102,103,104,105,106,107,108,109,110,111,112,113,114,115,116,117,118,119,120,121,122,123,124,125,126,127,128,129,130,131');
select snap from snapshot_test order by nr;

select  pg_snapshot_xmin(snap),
	pg_snapshot_xmax(snap),
	pg_snapshot_xip(snap)
from snapshot_test order by nr;

select id, pg_visible_in_snapshot(id::text::xid8, snap)
from snapshot_test, generate_series(11, 21) id
where nr = 2;

-- test bsearch
select id, pg_visible_in_snapshot(id::text::xid8, snap)
from snapshot_test, generate_series(90, 160) id
where nr = 4;

-- test current values also
select pg_current_xact_id() >= pg_snapshot_xmin(pg_current_snapshot());

-- we can't assume current is always less than xmax, however

select pg_visible_in_snapshot(pg_current_xact_id(), pg_current_snapshot());

-- test 64bitness

select pg_snapshot '1000100010001000:1000100010001100:1000100010001012,1000100010001013';
select pg_visible_in_snapshot('1000100010001012', '1000100010001000:1000100010001100:1000100010001012,1000100010001013');
select pg_visible_in_snapshot('1000100010001015', '1000100010001000:1000100010001100:1000100010001012,1000100010001013');

-- test 64bit overflow
SELECT pg_snapshot '1:9223372036854775807:3';
SELECT pg_snapshot '1:9223372036854775808:3';

-- i/o
select '12:13:'::txid_snapshot;
select '12:18:14,16'::txid_snapshot;
select '12:16:14,14'::txid_snapshot;

-- errors
select '31:12:'::txid_snapshot;
select '0:1:'::txid_snapshot;
select '12:13:0'::txid_snapshot;
select '12:16:14,13'::txid_snapshot;

create temp table txid_snapshot_test (
	nr	integer,
	snap	txid_snapshot
);

insert into txid_snapshot_test values (1, '12:13:');
insert into txid_snapshot_test values (2, '12:20:13,15,18');
insert into txid_snapshot_test values (3, '100001:100009:100005,100007,100008');
insert into txid_snapshot_test values (4, '100:150:101,102,103,104,105,106,107,108,109,110,111,112,113,114,115,116,117,118,119,120,121,122,123,124,125,126,127,128,129,130,131');
select snap from txid_snapshot_test order by nr;

select  txid_snapshot_xmin(snap),
	txid_snapshot_xmax(snap),
	txid_snapshot_xip(snap)
from txid_snapshot_test order by nr;

select id, txid_visible_in_snapshot(id, snap)
from txid_snapshot_test, generate_series(11, 21) id
where nr = 2;

-- test bsearch
select id, txid_visible_in_snapshot(id, snap)
from txid_snapshot_test, generate_series(90, 160) id
where nr = 4;

-- test current values also
select txid_current() >= txid_snapshot_xmin(txid_current_snapshot());

-- we can't assume current is always less than xmax, however

select txid_visible_in_snapshot(txid_current(), txid_current_snapshot());

-- test 64bitness

select txid_snapshot '1000100010001000:1000100010001100:1000100010001012,1000100010001013';
select txid_visible_in_snapshot('1000100010001012', '1000100010001000:1000100010001100:1000100010001012,1000100010001013');
select txid_visible_in_snapshot('1000100010001015', '1000100010001000:1000100010001100:1000100010001012,1000100010001013');

-- test 64bit overflow
SELECT txid_snapshot '1:9223372036854775807:3';
SELECT txid_snapshot '1:9223372036854775808:3';

-- the current snapshot: a transaction of ours is running, and so invisible
begin;
select pg_current_xact_id() as mine \gset
select pg_visible_in_snapshot(:'mine', pg_current_snapshot()) as mine_visible,
       pg_snapshot_xmax(pg_current_snapshot()) > :'mine' as xmax_after_mine,
       txid_snapshot_xmax(txid_current_snapshot()) = pg_snapshot_xmax(pg_current_snapshot())::text::bigint as same_xmax;
commit;
select pg_visible_in_snapshot(:'mine', pg_current_snapshot()) as mine_visible_after_commit;
select pg_typeof(pg_current_snapshot()), pg_typeof(txid_current_snapshot());
select typname, typlen, typcategory, typarray::regtype from pg_type where typname in ('pg_snapshot', 'txid_snapshot') order by 1;
