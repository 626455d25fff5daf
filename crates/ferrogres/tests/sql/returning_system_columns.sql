-- RETURNING names the system columns of the version just written, as in
-- PostgreSQL: INSERT (VALUES, SELECT, in WITH), ON CONFLICT, UPDATE.
create table rs (a int primary key, b text);
begin;
insert into rs values (1, 'x') returning ctid, cmin, xmax, cmax, tableoid::regclass, *;
insert into rs values (2, 'y'), (3, 'z') returning ctid, cmin, xmax, a;
update rs set b = 'w' where a = 1 returning ctid, cmin, xmax, cmax, tableoid::regclass, *;
insert into rs values (9, 'c') on conflict (a) do update set b = 'u' returning ctid, cmin, xmax, a, b;
-- (the version ON CONFLICT DO UPDATE writes: PostgreSQL shows its locker in xmax)
insert into rs values (1, 'c') on conflict (a) do update set b = 'u' returning ctid, cmin, a, b;
insert into rs select 10, 'q' returning ctid, cmin, xmax, a;
with i as (insert into rs values (11, 'r') returning ctid, cmin, a) select * from i;
-- xmin is the inserting transaction's, as the row read back shows.
insert into rs values (12, 's') returning xmin as x \gset
select xmin::text = :'x' as same_xmin, ctid, cmin from rs where a = 12;
select ctid, cmin, a from rs order by a;
commit;
insert into rs values (13, 't') returning ctid, cmin, xmax, cmax;
-- oid is no system column (since PostgreSQL 12).
insert into rs values (14, 'u') returning oid;
drop table rs;
-- DELETE RETURNING shows the deleted version with the deleting (sub)transaction as xmax
create table rsc_del (a int, b text);
insert into rsc_del values (1, 'x'), (2, 'y'), (3, 'z');
begin;
select txid_current() as me \gset
delete from rsc_del where a = 1 returning a, xmax::text::bigint = :me as xmax_is_me, xmin::text::bigint <> :me as older, ctid, tableoid = 'rsc_del'::regclass as toid;
savepoint s;
delete from rsc_del where a = 3 returning xmax::text::bigint = :me as xmax_is_top, xmax::text::bigint > :me as xmax_is_sub;
rollback to savepoint s;
delete from rsc_del returning a, b, xmax::text::bigint = :me as xmax_is_me;
commit;
drop table rsc_del;
