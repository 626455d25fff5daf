-- txid_current() and txid_current_if_assigned(): the top-level xid with its
-- epoch, assigned by the first txid_current() of a transaction.
begin;
select txid_current_if_assigned() is null as none_yet;
select txid_current() = txid_current() as stable, txid_current() > 0 as positive;
select txid_current_if_assigned() = txid_current() as assigned;
create table txid_t (a int);
insert into txid_t values (1);
-- the row's xmin is the low 32 bits of the transaction's full xid
select xmin::text::bigint = txid_current() % 4294967296 as row_xmin from txid_t;
savepoint s;
-- a subtransaction sees the top-level xid
select txid_current_if_assigned() = txid_current() as same_in_savepoint;
insert into txid_t values (2);
select count(*) as rows_of_this_xact from txid_t where xmin::text::bigint = txid_current() % 4294967296;
release savepoint s;
commit;
-- outside a transaction block each statement is its own transaction
select txid_current_if_assigned() is null as none_yet;
select pg_typeof(txid_current()), pg_typeof(txid_current_if_assigned());
drop table txid_t;
