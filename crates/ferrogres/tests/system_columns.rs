//! The system columns (`ctid`, `xmin`, `cmin`, `xmax`, `cmax`, `tableoid`),
//! the `tid` type and the Tid Scan (issue 22): `sql/system_columns.sql`
//! compared with PostgreSQL 15's output (`expected/system_columns.out`):
//! reading them by name (not in `*`), `WHERE ctid = ...` fetching one tuple
//! (EXPLAIN's `Tid Scan` and `TID Cond`), UPDATE and DELETE by ctid, deleting
//! duplicates with `a.ctid < b.ctid`, PostgreSQL's errors for assigning or
//! creating them, and tid's input, output, order and pg_type rows. Also
//! `sql/records.sql`: the anonymous records of
//! `information_schema._pg_expandarray` (record_out's quoting, `(f(x)).n`
//! field selection and its errors, pgjdbc's getPrimaryKeys query).

mod common;
use common::server::check_script;

#[test]
fn system_columns_match_postgres_15() {
    check_script("system_columns");
}

#[test]
fn record_fields_match_postgres_15() {
    check_script("records");
}
