--
-- INSERT ... ON CONFLICT (cases borrowed from PostgreSQL's insert_conflict.sql)
--
create table insertconflicttest(key int4, fruit text);
create unique index key_index on insertconflicttest(key);
insert into insertconflicttest values(0, 'Crowberry') on conflict (key) do nothing;
insert into insertconflicttest values(0, 'Crowberry') on conflict (key) do nothing;
insert into insertconflicttest values(0, 'Crowberry') on conflict (fruit) do nothing;
insert into insertconflicttest values (1, 'Apple'), (2, 'Orange') on conflict (key) do update set fruit = excluded.fruit;
-- Give good diagnostic message when EXCLUDED.* spuriously referenced from RETURNING:
-- insert into insertconflicttest values (1, 'Apple') on conflict (key) do update set fruit = excluded.fruit RETURNING excluded.fruit;
insert into insertconflicttest values (1, 'Apple') on conflict (key) do update set fruit = excluded.fruit returning *;
-- inference fails:
insert into insertconflicttest values (3, 'Kiwi') on conflict (key, fruit) do update set fruit = excluded.fruit;
insert into insertconflicttest values (4, 'Mango') on conflict (fruit, key) do update set fruit = excluded.fruit;
insert into insertconflicttest values (5, 'Lemon') on conflict (fruit) do update set fruit = excluded.fruit;
-- Check the target relation can be aliased
insert into insertconflicttest AS ict values (6, 'Passionfruit') on conflict (key) do update set fruit = excluded.fruit;
insert into insertconflicttest AS ict values (6, 'Passionfruit') on conflict (key) do update set fruit = ict.fruit;
insert into insertconflicttest AS ict values (6, 'Pear') on conflict (key) do update set fruit = ict.fruit || '+' || excluded.fruit returning ict.*, key * 10;
drop index key_index;
-- Composite key tests
create unique index comp_key_index on insertconflicttest(key, fruit);
insert into insertconflicttest values (7, 'Raspberry') on conflict (key, fruit) do update set fruit = excluded.fruit;
insert into insertconflicttest values (8, 'Lime') on conflict (fruit, key) do update set fruit = excluded.fruit;
insert into insertconflicttest values (9, 'Banana') on conflict (key) do update set fruit = excluded.fruit;
insert into insertconflicttest values (10, 'Blueberry') on conflict (key, key, key) do update set fruit = excluded.fruit;
drop index comp_key_index;
-- Non-spurious duplicate violation tests
create unique index key_index on insertconflicttest(key);
create unique index fruit_index on insertconflicttest(fruit);
insert into insertconflicttest values (26, 'Fig'), (27, 'Peach');
-- succeeds, since UPDATE happens to update "fruit" to existing value:
insert into insertconflicttest values (26, 'Fig') on conflict (key) do update set fruit = excluded.fruit;
-- fails, since UPDATE is to row with key value 26, and we're updating "fruit"
-- to a value that happens to exist in another row ('peach'):
insert into insertconflicttest values (26, 'Peach') on conflict (key) do update set fruit = excluded.fruit;
-- succeeds, since "key" isn't repeated/referenced in UPDATE, and "fruit"
-- arbitrates that statement updates existing "Fig" row:
insert into insertconflicttest values (25, 'Fig') on conflict (fruit) do update set fruit = excluded.fruit;
-- a conflict in a non-arbiter index is an error
insert into insertconflicttest values (99, 'Fig') on conflict (key) do nothing;
-- no target: every unique index arbitrates DO NOTHING
insert into insertconflicttest values (99, 'Fig') on conflict do nothing;
insert into insertconflicttest values (26, 'Durian') on conflict do nothing returning *;
insert into insertconflicttest values (26, 'Durian') on conflict do update set fruit = 'x';
drop index key_index;
drop index fruit_index;
select * from insertconflicttest order by key, fruit;
drop table insertconflicttest;
--
-- ON CONSTRAINT, WHERE, RETURNING, ambiguity, cardinality
--
create table upsert (k int primary key, v int not null, w text, unique (w));
insert into upsert values (1, 10, 'a'), (2, 20, 'b');
insert into upsert values (1, 5, 'x') on conflict (k) do update set v = v + 1;
insert into upsert values (1, 5, 'x') on conflict (k) do update set v = upsert.v + excluded.v returning *;
insert into upsert values (1, 5, 'x') on conflict on constraint upsert_pkey do update set v = 0 returning k, v, w;
insert into upsert values (1, 5, 'x') on conflict on constraint upsert_w_key do nothing returning *;
insert into upsert values (3, 5, 'a') on conflict on constraint upsert_w_key do update set v = excluded.v returning *;
insert into upsert values (1, 5, 'x') on conflict on constraint nope do nothing;
insert into upsert as u values (1, 5, 'x') on conflict (k) do update set v = 100 where u.w = 'zz' returning *;
insert into upsert as u values (1, 5, 'x') on conflict (k) do update set v = 100 where u.w = 'a' and excluded.v = 5 returning *;
insert into upsert values (1, 5, 'x') on conflict (k) where v > 0 do nothing;
insert into upsert values (1, 5, 'x') on conflict (nope) do nothing;
insert into upsert values (3, 5, 'b') on conflict (k) do update set v = upsert.nope;
insert into upsert values (3, 5, 'b') on conflict (k) do update set nope = 1;
insert into upsert values (3, 5, 'b') on conflict (k) do update set v = null;
insert into upsert values (1, 5, 'b') on conflict (k) do update set v = null;
-- a row proposed twice
insert into upsert values (5, 1, 'p'), (5, 2, 'q') on conflict (k) do update set v = excluded.v;
insert into upsert values (5, 1, 'p'), (5, 2, 'q') on conflict (k) do nothing returning *;
insert into upsert values (6, 1, 'r'), (7, 2, 'r') on conflict (w) do nothing returning *;
insert into upsert values (1, 7, 's') on conflict (k) do update set k = 8 returning *;
-- INSERT ... SELECT
insert into upsert select g, g * 100, 'g' || g from generate_series(1, 10) g
  on conflict (k) do update set v = excluded.v + upsert.v returning *;
-- DEFAULT VALUES and defaults in the proposed row
create table dflt (k int primary key default 1, n int default 0);
insert into dflt default values on conflict (k) do update set n = dflt.n + 1 returning *;
insert into dflt default values on conflict (k) do update set n = dflt.n + 1 returning *;
insert into dflt values (default, 5) on conflict (k) do update set n = excluded.n * 2 returning *;
-- transactions: a rolled-back upsert leaves nothing
begin;
insert into dflt values (2, 0) on conflict (k) do update set n = 99;
insert into dflt values (1, 0) on conflict (k) do update set n = 99;
rollback;
select * from dflt order by k;
begin;
savepoint s;
insert into dflt values (3, 0) on conflict (k) do nothing;
rollback to s;
insert into dflt values (3, 1) on conflict (k) do update set n = 42;
insert into dflt values (3, 1) on conflict (k) do update set n = 43;
commit;
select * from dflt order by k;
-- repeatable read: own inserts are visible conflicts
begin isolation level repeatable read;
insert into dflt values (4, 1) on conflict (k) do nothing;
insert into dflt values (4, 2) on conflict (k) do update set n = excluded.n returning *;
commit;
select * from upsert order by k;
drop table upsert;
drop table dflt;
