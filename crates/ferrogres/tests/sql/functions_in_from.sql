-- Functions returning one value, in FROM: one row, the column named after
-- the function or the alias (PostgreSQL's function scan of a scalar function).
select * from upper('abc');
select * from upper('abc') as u;
select * from upper('abc') as u(x);
select u from lower('ABC') u;
select * from abs(-3), length('four');
select count(*) from pg_sleep(0);
select * from pg_blocking_pids(pg_backend_pid());
select pg_typeof(r) from round(2.5) r;
select * from upper('x') with ordinality;
select * from upper('x') as u(a, b);
select x, n from generate_series(1, 3) n, abs(-n) x order by n;
create table ff (a int);
insert into ff values (1), (2);
select * from ff, abs(-a) order by 1;
select * from nosuchfunction(1);
select * from ff, nullif(a, 2) n order by 1;
drop table ff;
-- Function-like expressions of the grammar: named as in the select list.
select * from nullif(1, 2);
select * from nullif(1, 1) x;
select * from coalesce(null, 3);
select * from coalesce(null, 'b') c(z);
select * from greatest(1, 5), least(1, 5);
select * from cast(1 as int);
select * from cast('1' as text);
select * from cast(upper('a') as varchar);
select * from current_user, current_schema;
select * from coalesce(1, 2) with ordinality;
select * from rows from (nullif(1, 2), coalesce(3));
select nullif.nullif from nullif(4, 5);
