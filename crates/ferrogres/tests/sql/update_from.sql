--
-- UPDATE ... FROM and DELETE ... USING (cases borrowed from PostgreSQL's update.sql)
--
CREATE TABLE update_test (
    a   INT DEFAULT 10,
    b   INT,
    c   TEXT
);
INSERT INTO update_test VALUES (5, 10, 'foo');
INSERT INTO update_test(b, a) VALUES (15, 10);
-- Test VALUES in FROM
UPDATE update_test SET a=v.i FROM (VALUES(100, 20)) AS v(i, j)
  WHERE update_test.b = v.j;
SELECT * FROM update_test ORDER BY a, b;
UPDATE update_test SET a=v.i FROM (VALUES(100, 15)) AS v(i, j)
  WHERE update_test.b = v.j RETURNING *;
SELECT * FROM update_test ORDER BY a, b;
DROP TABLE update_test;
--
-- joins with tables
--
create table t (a int primary key, b int);
create table s (a int, c int);
insert into t values (1, 10), (2, 20), (3, 30);
insert into s values (1, 100), (1, 100), (2, 200);
update t set b = s.c from s where t.a = s.a returning *;
update t set b = t.b + 1 from s where t.a = s.a and s.c > 150 returning t.*, s.c;
update t set b = 0 from t where t.a = 1;
update t x set b = 0 from t where x.a = t.a and t.a = 5;
update t set b = s.nope from s where t.a = s.a;
update t set b = c from s where t.a = s.a and a = 1;
update t set b = c from s where t.a = s.a and t.a = 1 returning b, c, s.a;
-- several FROM items, a join and a subquery
create table r (c int, label text);
insert into r values (100, 'hundred'), (200, 'two hundred');
update t set b = length(r.label) from s join r on s.c = r.c where t.a = s.a;
select * from t order by a;
update t set b = 7 from s, r where t.a = s.a and s.c = r.c and r.label like 'two%' returning t.*;
update t set b = x.m from (select a, max(c) as m from s group by a) x where x.a = t.a returning t.*;
update t set b = 1 from s where false;
update t set a = t.a + 10 from s where s.a = t.a returning t.a;
select * from t order by a;
-- DELETE ... USING
delete from t using s where t.a = s.a + 10 and s.c = 200 returning *;
delete from t using s x where t.a = x.a + 10 returning t.a, x.*;
delete from t using t where t.a = 1;
delete from t as tt using s where tt.a = s.a;
select * from t order by a;
insert into t values (1, 1), (2, 2), (4, 4);
delete from t using (values (1), (4)) v(x) where v.x = t.a returning *;
delete from t using s, r where t.a = s.a and s.c = r.c;
select * from t order by a;
-- in a transaction, with a rollback
begin;
update t set b = s.c from s where t.a = 3;
select * from t order by a;
rollback;
select * from t order by a;
drop table t, s, r;
