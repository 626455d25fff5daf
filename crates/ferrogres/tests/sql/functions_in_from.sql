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
drop table ff;
