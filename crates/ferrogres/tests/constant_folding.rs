//! Constant folding (issue 19, `crates/sql/src/optimizer/fold.rs`,
//! PostgreSQL's eval_const_expressions): immutable calls over constants are
//! replaced by their value before planning, visible in EXPLAIN and in the
//! row estimates; stable and volatile functions are not folded; errors of
//! folded expressions are raised when PostgreSQL 15 raises them; parameters
//! stay parameters. Against a real server through raw protocol clients.
//! Every expected plan line, estimate and error below was taken from a
//! PostgreSQL 15 server given the same statements.

mod common;
use common::session_client::{ok, rows, plan, Client};
use common::server::Server;

/// `rows=N` of a plan's first line.
fn top_rows(plan: &str) -> f64 {
    let first = plan.lines().next().expect("a plan line");
    let at = first.find("rows=").expect("rows=") + 5;
    first[at..].split(|c: char| !c.is_ascii_digit()).next().expect("digits").parse().expect("a number")
}

const DATES: &str = "CREATE TABLE od (k int PRIMARY KEY, d date);
INSERT INTO od SELECT i, date '1992-01-01' + (i % 2400) FROM generate_series(1, 20000) i;
ANALYZE od";

/// (statement, a line PostgreSQL 15's EXPLAIN [VERBOSE] prints for it).
const FOLDED: &[(&str, &str)] = &[
    ("SELECT * FROM od WHERE k = 2 + 3", "Index Cond: (k = 5)"),
    ("SELECT * FROM od WHERE k < abs(-5) + length('abc')", "Index Cond: (k < 8)"),
    ("SELECT * FROM od WHERE k = 1 OR 1 = 2", "Index Cond: (k = 1)"),
    ("SELECT * FROM od WHERE NOT (1 = 2) AND k = 1", "Index Cond: (k = 1)"),
    ("SELECT * FROM od WHERE k = CASE WHEN true THEN 7 ELSE 1/0 END", "Index Cond: (k = 7)"),
    ("SELECT * FROM od WHERE k = coalesce(3, k)", "Index Cond: (k = 3)"),
    (
        "VERBOSE SELECT 'a' || 'b', upper('x'), 10 % 3, -(4), 2.5::numeric * 2, int4 '5' + int8 '6', 'abc' LIKE 'a%', \
         greatest(1, 5, 3), nullif(1, 1), 1 IS DISTINCT FROM 2, null::int IS NULL, array[1,2], 3 = ANY(array[1,2,3]), \
         date '2020-01-31' + 1, round(2.567, 2), length('héllo'), 1 + null::int, '7'::int8::int4 FROM od LIMIT 1",
        "Output: 'ab'::text, 'X'::text, 1, '-4'::integer, 5.0, '11'::bigint, true, 5, NULL::integer, true, true, \
         '{1,2}'::integer[], true, '2020-02-01'::date, 2.57, 5, NULL::integer, 7",
    ),
    ("VERBOSE SELECT date '1994-01-01' + interval '1 year' FROM od LIMIT 1", "Output: '1995-01-01 00:00:00'::timestamp without time zone"),
    ("VERBOSE SELECT md5('x') FROM od LIMIT 1", "Output: '9dd4e461268c8034f5c8564e155c67a6'::text"),
];

/// The folded constant in EXPLAIN, as PostgreSQL prints it.
#[test]
fn explain_shows_the_folded_constants() {
    let srv = Server::start_temp(&[]);
    let mut c = Client::connect(srv.port);
    ok(&c.q(DATES));
    let mut bad = Vec::new();
    for (sql, line) in FOLDED {
        let p = plan(&mut c, sql);
        if !p.lines().any(|l| l.trim() == *line) {
            bad.push(format!("{sql}\n  PostgreSQL: {line}\n  ours:\n{p}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The estimator sees the folded bound: TPC-H Q5's `o_orderdate <
/// date '1994-01-01' + interval '1 year'` (PostgreSQL: 2,990 and 9,566 rows;
/// before folding ours was the default 1/3 of the range).
#[test]
fn estimates_see_the_folded_constant() {
    let srv = Server::start_temp(&[]);
    let mut c = Client::connect(srv.port);
    ok(&c.q(DATES));
    for (clause, pg) in [
        ("d >= date '1994-01-01' AND d < date '1994-01-01' + interval '1 year'", 2990.0),
        ("d < date '1994-01-01' + interval '1 year'", 9566.0),
    ] {
        let p = plan(&mut c, &format!("SELECT * FROM od WHERE {clause}"));
        let ours = top_rows(&p);
        assert!((ours - pg).abs() <= pg * 0.05, "{clause}: ours {ours}, PostgreSQL {pg}\n{p}");
        assert!(p.contains("'1995-01-01 00:00:00'::timestamp without time zone"), "{p}");
    }
}

/// random() is volatile: evaluated per row; now() and statement_timestamp()
/// are stable: not folded into a kept plan (a prepared statement's or the
/// plan cache's) but read at each execution.
#[test]
fn volatile_and_stable_functions_are_not_folded() {
    let srv = Server::start_temp(&[]);
    let mut c = Client::connect(srv.port);
    ok(&c.q(DATES));
    assert_eq!(rows(&mut c, "SELECT count(DISTINCT random()) FROM generate_series(1, 100)"), ["100"]);
    assert!(plan(&mut c, "SELECT * FROM od WHERE k > random()").contains("random()"));
    ok(&c.q("PREPARE n AS SELECT now()::text, statement_timestamp()::text"));
    let a = rows(&mut c, "EXECUTE n");
    ok(&c.q("SELECT pg_sleep(0.02)"));
    let b = rows(&mut c, "EXECUTE n");
    assert_ne!(a, b, "now() of a prepared statement must change between transactions");
    // The plan cache of simple queries too.
    let a = rows(&mut c, "SELECT now()::text");
    ok(&c.q("SELECT pg_sleep(0.02)"));
    let b = rows(&mut c, "SELECT now()::text");
    assert_ne!(a, b);
    // timestamptz arithmetic depends on TimeZone: not folded.
    let p = rows(&mut c, "EXPLAIN VERBOSE SELECT timestamptz '2020-01-01' + interval '1 day' FROM od LIMIT 1").join("\n");
    assert!(p.contains("'1 day'::interval"), "{p}");
    ok(&c.q("SET TimeZone = 'UTC'"));
    let utc = rows(&mut c, "SELECT (timestamptz '2020-03-28 12:00' + interval '1 day')::text");
    assert_eq!(utc, ["2020-03-29 12:00:00+00"]);
}

/// Errors of folded expressions: PostgreSQL 15 raises 22012 at plan time
/// for `SELECT 1/0` and for a CASE arm it cannot prove unreachable, even
/// over no rows, but not for what simplification drops unread (a CASE arm
/// behind a constant false, AND after a constant false, COALESCE after a
/// non-null constant). A view definition is not planned: its error comes
/// when it is used. The session goes on after each error.
#[test]
fn folding_errors_match_postgresql() {
    let srv = Server::start_temp(&[]);
    let mut c = Client::connect(srv.port);
    ok(&c.q("CREATE TABLE e (a int)"));
    assert_eq!(rows(&mut c, "SELECT CASE WHEN false THEN 1/0 END"), ["NULL"]);
    assert_eq!(rows(&mut c, "SELECT count(*) FROM e WHERE false AND 1/0 = 1"), ["0"]);
    assert_eq!(rows(&mut c, "SELECT coalesce(1, 1/0)"), ["1"]);
    assert!(rows(&mut c, "SELECT coalesce(a, 1, 1/0) FROM e").is_empty());
    for sql in ["SELECT 1/0", "SELECT * FROM e WHERE 1/0 = 1 AND false", "SELECT CASE WHEN a > 0 THEN 1/0 ELSE 1 END FROM e", "SELECT 1 FROM e WHERE a = 1/0"] {
        let r = c.q(sql);
        assert_eq!(r.code(), "22012", "{sql}: {:?}", r.error);
        assert_eq!(r.error.as_ref().expect("error").1, "division by zero");
        assert_eq!(rows(&mut c, "SELECT 1"), ["1"], "the session goes on after {sql}");
    }
    ok(&c.q("CREATE VIEW v AS SELECT 1/0 AS x"));
    assert_eq!(c.q("SELECT * FROM v").code(), "22012");
    ok(&c.q("CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'SELECT 1/0'"));
    assert_eq!(c.q("SELECT f()").code(), "22012");
    // Out of range while folding: 22003 as at run time.
    assert_eq!(c.q("SELECT 2147483647 + 1").code(), "22003");
}

/// Parameters are not constants: a prepared statement's plan is generic and
/// gives the right answer for every value, through SQL PREPARE and the
/// extended protocol.
#[test]
fn prepared_statements_keep_their_parameters() {
    let srv = Server::start_temp(&[]);
    let mut c = Client::connect(srv.port);
    ok(&c.q(DATES));
    ok(&c.q("PREPARE p(int) AS SELECT count(*) FROM od WHERE k < $1 + 1 AND 1 = 1"));
    assert_eq!(rows(&mut c, "EXECUTE p(10)"), ["10"]);
    assert_eq!(rows(&mut c, "EXECUTE p(100)"), ["100"]);
    assert_eq!(rows(&mut c, "EXECUTE p(NULL)"), ["0"]);
    ok(&c.q("PREPARE q(date) AS SELECT count(*) FROM od WHERE d < $1 + interval '1 year'"));
    let pg = rows(&mut c, "SELECT count(*) FROM od WHERE d < date '1995-01-01'");
    assert_eq!(rows(&mut c, "EXECUTE q('1994-01-01')"), pg);
    let mut x = common::client::Client::connect(srv.port);
    for (v, want) in [(5i32, "6"), (41, "42")] {
        let b = v.to_be_bytes();
        let r = x.bind_binary("SELECT count(*) FROM od WHERE k <= $1 + (2 - 1)", &[23], &[Some(&b)]);
        assert_eq!(r.one(), want);
    }
}

/// A call whose value is large is left to run with the statement, under its
/// statement_memory_limit: planning never computes and keeps a large value
/// (a cached plan would hold it). EXPLAIN shows the call unfolded, a small
/// one folded, and the memory limit still fails the large one at execution.
#[test]
fn large_values_are_left_to_the_executor() {
    let srv = Server::start_temp(&[]);
    let mut c = Client::connect(srv.port);
    let p = plan(&mut c, "VERBOSE SELECT length(repeat('x', 2000000))");
    assert!(p.contains("repeat("), "{p}");
    let p = plan(&mut c, "VERBOSE SELECT length(repeat('x', 20))");
    assert!(!p.contains("repeat("), "{p}");
    assert_eq!(rows(&mut c, "SELECT length(repeat('x', 2000000))"), ["2000000"]);
    ok(&c.q("SET statement_memory_limit = '64MB'"));
    let r = c.q("SELECT length(repeat('u', 100000000))");
    assert_eq!(r.code(), "53200", "{:?}", r.error);
    assert_eq!(rows(&mut c, "SELECT 1"), ["1"]);
}
