//! A WHERE list and a join condition are evaluated as PostgreSQL's ExecQual
//! evaluates a qual: AND-ed conjuncts in order, stopping at the first that is
//! not true, false or NULL, so a later conjunct's error does not happen for
//! such a row. The same with and without EXPLAIN ANALYZE (the sequential scan
//! evaluates its filter itself outside EXPLAIN ANALYZE, conjunct by conjunct,
//! `exec::FilteredSeqScan`), and side by side with PostgreSQL 15.
//!
//! A date compared with a timestamp constant (TPC-H Q6's `l_shipdate < date
//! '1994-01-01' + interval '1' year`) is run as a comparison of dates
//! (`exec::prepare_qual`): the same rows as PostgreSQL's cross-type
//! comparison, at midnight and between, both ways round, with NULL and
//! infinite dates, and without an error for a date past timestamp's range.
//! A `character(n)` column compared with a string (TPC-H Q12's `l_shipmode
//! IN ('MAIL', 'SHIP')`) is compared without its trailing spaces, without the
//! cast's copy (`exec::trimmed_compare`): the same rows as PostgreSQL's.

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

const DATES: &str = "CREATE TABLE dd (i int, d date);
INSERT INTO dd VALUES (1, '1994-12-31'), (2, '1995-01-01'), (3, '1995-01-02'), (4, NULL),
  (5, 'infinity'), (6, '-infinity'), (7, '0044-03-15 BC'), (8, '0044-03-16 BC'), (9, '1970-01-01');
CREATE TABLE cc (i int, c char(6), v varchar(6));
INSERT INTO cc VALUES (1, 'MAIL', 'MAIL'), (2, 'SHIP', 'SHIP '), (3, NULL, NULL), (4, '', ''), (5, 'MAIL  ', 'MA'),
  (6, 'AIR RE', 'AIR'), (7, ' MAIL', 'mail');
CREATE TABLE far (i int, d date);
INSERT INTO far VALUES (1, '300000-01-01'), (2, '2000-01-01'), (3, '4714-11-24 BC'), (4, '1999-12-31');";

/// Each comparison operator against a midnight and a time between, and each
/// written both ways round; a timestamp(0) cast; the date + interval form;
/// `character(n)` cast to text against constants, a column and NULL.
fn date_queries() -> Vec<String> {
    let mut qs = Vec::new();
    for op in ["<", "<=", ">", ">=", "=", "<>"] {
        for t in ["1995-01-01", "1995-01-01 12:00", "1994-12-31 23:59:59.999999", "0044-03-15 12:00 BC", "1970-01-01", "infinity"] {
            qs.push(format!("SELECT string_agg(i::text, ',' ORDER BY i) FROM dd WHERE d {op} timestamp '{t}'"));
            qs.push(format!("SELECT string_agg(i::text, ',' ORDER BY i) FROM dd WHERE timestamp '{t}' {op} d AND i > 0"));
        }
    }
    qs.push("SELECT string_agg(i::text, ',' ORDER BY i) FROM dd WHERE d::timestamp(0) >= timestamp '1995-01-01 00:00:01'".into());
    qs.push("SELECT string_agg(i::text, ',' ORDER BY i) FROM dd WHERE d >= date '1994-01-01' AND d < date '1994-01-01' + interval '1' year".into());
    qs.push("SELECT i, d < timestamp '1995-01-01 06:00' FROM dd ORDER BY i".into());
    for op in ["<", "<=", ">", ">=", "=", "<>"] {
        for k in ["'MAIL'", "'MAIL '", "''", "'AIR'", "v", "NULL::text"] {
            qs.push(format!("SELECT string_agg(i::text, ',' ORDER BY i) FROM cc WHERE c::text {op} {k}"));
            qs.push(format!("SELECT string_agg(i::text, ',' ORDER BY i) FROM cc WHERE i > 0 AND {k} {op} c::text"));
        }
    }
    qs.push("SELECT string_agg(i::text, ',' ORDER BY i) FROM cc WHERE c IN ('MAIL', 'SHIP') OR v IN ('MAIL', 'SHIP')".into());
    qs.push("SELECT i, c::text = 'MAIL', c::text < v FROM cc ORDER BY i".into());
    // Past timestamp's range: compared, not cast (no error), as PostgreSQL does.
    for op in ["<", "<=", ">", ">=", "=", "<>"] {
        qs.push(format!("SELECT string_agg(i::text, ',' ORDER BY i) FROM far WHERE d {op} timestamp '2000-01-01'"));
        qs.push(format!("SELECT string_agg(i::text, ',' ORDER BY i) FROM far WHERE i <> 1 AND d {op} timestamp '2000-01-01 10:00'"));
    }
    qs
}

#[test]
fn date_and_char_comparisons_as_postgres_15() {
    let pg_dir = tempfile::tempdir().unwrap();
    let pg = Pg15::start(&pg_dir.path().join("pg"));
    let srv = Server::start_temp(&[]);
    run(pg.cmd("psql"), DATES);
    srv.sql_ok(DATES);
    for q in date_queries() {
        let want = run(pg.cmd("psql"), &q);
        assert!(!want.contains("ERROR"), "{q}: {want}");
        assert_eq!(run(srv.psql_cmd(), &q), want, "{q}");
    }
    // The plan prints the comparison with the timestamp as written (the
    // date comparison is made when the query runs), as PostgreSQL's does.
    let q = "EXPLAIN (COSTS OFF) SELECT * FROM dd WHERE d < date '1994-01-01' + interval '1' year";
    for plan in [run(srv.psql_cmd(), q), run(pg.cmd("psql"), q)] {
        assert!(plan.contains("'1995-01-01 00:00:00'::timestamp without time zone"), "{plan}");
    }
}
