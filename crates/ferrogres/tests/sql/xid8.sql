-- xid8 (a full transaction id: epoch and xid), pg_current_xact_id(),
-- pg_xact_status() and txid_status(), xid = int4.
select pg_current_xact_id_if_assigned() is null as none_yet;
begin;
select pg_current_xact_id_if_assigned() is null as none_yet;
select pg_current_xact_id() = pg_current_xact_id_if_assigned() as assigned;
select pg_current_xact_id()::text::bigint = txid_current() as same_as_txid;
select pg_typeof(pg_current_xact_id()), pg_typeof(pg_current_xact_id_if_assigned());
select pg_xact_status(pg_current_xact_id()) as mine, txid_status(txid_current()) as mine_txid;
select pg_current_xact_id()::xid = xid(pg_current_xact_id()) as low_bits;
commit;
-- statuses seen later: committed, aborted, subtransactions
create table xid8_t (a int, x xid8);
begin;
select pg_current_xact_id() as committed_xid \gset
commit;
begin;
select pg_current_xact_id() as aborted_xid \gset
rollback;
begin;
select pg_current_xact_id() as top \gset
savepoint s1;
insert into xid8_t values (1, pg_current_xact_id());
select xmin::text::bigint as sub_aborted from xid8_t where a = 1 \gset
rollback to savepoint s1;
savepoint s2;
insert into xid8_t values (2, pg_current_xact_id());
select xmin::text::bigint as sub_released from xid8_t where a = 2 \gset
release savepoint s2;
select x = :'top' as row_holds_top from xid8_t;
select pg_xact_status(:'committed_xid') as committed, pg_xact_status(:'aborted_xid') as aborted;
select txid_status(:sub_aborted) as sub_aborted, txid_status(:sub_released) as sub_released, pg_xact_status(:'top') as top;
commit;
select txid_status(:sub_aborted) as sub_aborted, txid_status(:sub_released) as sub_released, pg_xact_status(:'top') as top;
select pg_xact_status('1'::xid8) as bootstrap, pg_xact_status('2'::xid8) as frozen, pg_xact_status('0'::xid8) as invalid;
select txid_status(null), pg_xact_status(null);
select pg_xact_status('1000000000000'::xid8);
select txid_status(-5);
-- input and output (PostgreSQL 15 reads xid8 as strtoull does)
select '42'::xid8, '18446744073709551615'::xid8, '0'::xid8, ' +7'::xid8;
select '-1'::xid8, '18446744073709551616'::xid8, 'abc'::xid8, '12abc'::xid8;
-- xid and xid8 read as C's strtoul with base 0: hex, octal, garbage as 0
select '010'::xid, '0x1f'::xid, '0xffffffff'::xid, '-1'::xid, '4294967296'::xid, ''::xid, 'asdf'::xid;
select '010'::xid8, '0x1F'::xid8, '0xffffffffffffffff'::xid8, '0x'::xid8, '099'::xid8, ' 	12'::xid8;
select '010'::cid, '0x10'::cid;
select xid8cmp('1', '2'), xid8cmp('2', '2'), xid8cmp('2', '1');
select '42'::xid8 = '42'::xid8 as eq, '42'::xid8 < '43'::xid8 as lt, '42'::xid8 <> '43'::xid8 as ne,
       '5'::xid8 >= '4'::xid8 as ge, '5'::xid8 <= '4'::xid8 as le, '5'::xid8 > '4'::xid8 as gt;
select '42'::xid8::xid as low, xid('4294967338'::xid8) as wrapped;
select '42'::xid8 = 42;
select 42::bigint::xid8;
select '{1,2}'::xid8[] as arr, pg_typeof('{1,2}'::xid8[]);
-- a column of type xid8: storage, order, aggregates, grouping
insert into xid8_t values (3, '7'), (4, '100'), (5, '18446744073709551615'), (6, '100');
select a, x from xid8_t where a > 2 and x > '8' order by x, a;
select min(x), max(x), count(distinct x) from xid8_t where a > 2;
select x, count(*) from xid8_t where a > 2 group by x order by x;
select typname, typlen, typbyval, typalign, typcategory, typarray::regtype from pg_type where typname = 'xid8';
-- xid = int4 and xid <> int4
select '42'::xid = 42 as eq, '42'::xid <> 42 as ne, '42'::xid = 43 as eq2, '4294967295'::xid = -1 as wrapped;
select 42 = '42'::xid;
select '42'::xid = 42::bigint;
drop table xid8_t;
-- in defaults, INSERT ... SELECT's rows and every RETURNING
create table rt (a int primary key, x xid8 default pg_current_xact_id(), t bigint default txid_current());
begin;
insert into rt (a) values (1) returning a, x = pg_current_xact_id() as x_ok, t = txid_current() as t_ok, txid_current() = x::text::bigint as same;
insert into rt (a) select g from generate_series(2,3) g returning a, txid_current() = t as ok;
insert into rt (a, t) select g, txid_current() from generate_series(4,5) g returning a, t = txid_current() as ok;
update rt set a = a + 10 where a = 1 returning a, txid_current() = t as ok, (select count(*) from rt) as n;
delete from rt where a = 2 returning a, pg_current_xact_id() = x as ok;
insert into rt (a) values (3) on conflict (a) do update set t = 0 returning a, t, txid_current_if_assigned() = x::text::bigint as ok;
commit;
select count(*) from rt where x::text::bigint = t or t = 0;
drop table rt;
