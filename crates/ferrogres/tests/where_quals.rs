//! A WHERE list and a join condition are evaluated as PostgreSQL's ExecQual
//! evaluates a qual: AND-ed conjuncts in order, stopping at the first that is
//! not true, false or NULL, so a later conjunct's error does not happen for
//! such a row. The same with and without EXPLAIN ANALYZE (the sequential scan
//! evaluates its filter itself outside EXPLAIN ANALYZE, conjunct by conjunct,
//! `exec::FilteredSeqScan`), and side by side with PostgreSQL 15.

mod common;
use common::pg15::Pg15;
use common::server::Server;

const SETUP: &str = "CREATE TABLE zz (a int, b int, c text);
INSERT INTO zz SELECT g, g % 3, repeat('x', g % 5) FROM generate_series(1, 300) g;
CREATE TABLE yy (a int, d int);
INSERT INTO yy SELECT g, g % 4 FROM generate_series(1, 100) g;";

const QUERIES: &[&str] = &[
    // NULL first: the division is not evaluated where b = 0.
    "SELECT count(*), sum(a) FROM zz WHERE (CASE WHEN b = 0 THEN NULL ELSE true END) AND 12 / b > 5",
    // false first.
    "SELECT count(*), sum(a) FROM zz WHERE b <> 0 AND 12 / b > 5 AND length(c) > 1",
    // Columns read only by a later conjunct, and the other columns out.
    "SELECT a, b, c FROM zz WHERE a % 7 = 0 AND c LIKE 'xx%' AND b <> 1 ORDER BY a",
    // OR at the top: one qual, evaluated whole (the division happens).
    "SELECT count(*) FROM zz WHERE b = 0 OR 12 / b > 5",
    // A join condition: the same rule.
    "SELECT count(*) FROM zz JOIN yy ON zz.a = yy.a AND (CASE WHEN yy.d = 0 THEN NULL ELSE true END) AND 12 / yy.d > 3",
    // A volatile function in the filter: evaluated once per row.
    "SELECT count(*) <= 300 FROM zz WHERE random() < 2 AND b = 1",
];

fn run(mut cmd: std::process::Command, sql: &str) -> String {
    let out = cmd.args(["-X", "-At", "-d", "postgres", "-c", sql]).output().unwrap();
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn where_lists_stop_at_the_first_conjunct_not_true_as_postgres_15() {
    let pg_dir = tempfile::tempdir().unwrap();
    let pg = Pg15::start(&pg_dir.path().join("pg"));
    let srv = Server::start_temp(&[]);
    run(pg.cmd("psql"), SETUP);
    srv.sql_ok(SETUP);
    for q in QUERIES {
        let want = run(pg.cmd("psql"), q);
        assert!(!want.contains("ERROR"), "{q}: {want}");
        assert_eq!(run(srv.psql_cmd(), q), want, "{q}");
        // Under EXPLAIN ANALYZE the query runs without error too.
        let plan = run(srv.psql_cmd(), &format!("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) {q}"));
        assert!(!plan.contains("ERROR"), "{q}: {plan}");
    }
    // An error that PostgreSQL raises (the division reached for b = 0) is raised.
    let q = "SELECT count(*) FROM zz WHERE b >= 0 AND 12 / b > 5";
    assert!(run(pg.cmd("psql"), q).contains("division by zero"));
    assert!(run(srv.psql_cmd(), q).contains("division by zero"), "{q}");
}
