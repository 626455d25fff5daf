//! The query level an aggregate belongs to (issue 18, item 13), against a
//! real server: PostgreSQL 15's answers and 42803 errors for outer-level and
//! nested aggregates (`sql/aggregate_levels.sql`, expected output printed by
//! PostgreSQL 15), the nested query over 10,000 rows failing at once
//! with the session and a second one going on, and a nested subquery that
//! reads only an outer level running once per run of its parent.

mod common;
use common::session_client::{ok, Client};
use common::server::{check_script, Server};
use std::time::Instant;

#[test]
fn aggregate_levels_match_postgres_15() {
    check_script("aggregate_levels");
}

#[test]
fn nested_aggregates_over_10k_rows_fail_at_once_and_the_sessions_go_on() {
    let srv = Server::start_temp(&[]);
    let (mut a, mut b) = (Client::connect(srv.port), Client::connect(srv.port));
    ok(&a.q("CREATE TABLE tenk (g int); INSERT INTO tenk SELECT generate_series(1, 10000)"));
    let q = "select avg((select avg(a1.g order by (select avg(a2.g) from tenk a3)) from tenk a1(g))) from tenk a2(g)";
    let started = Instant::now();
    let r = a.q(q);
    println!("nested aggregates over 10k rows: {:?}", started.elapsed());
    let (code, msg, _) = r.error.clone().expect("42803");
    assert_eq!((code.as_str(), msg.as_str()), ("42803", "aggregate function calls cannot be nested"));
    // The session goes on, and so does another one.
    assert_eq!(a.q("SELECT count(*) FROM tenk").one(), "10000");
    assert_eq!(b.q("SELECT sum(g) FROM tenk").one(), "50005000");
}

/// `(select f(a1.x, (select g(a2.y) from a3)) from a1)` for each row of a2: the
/// innermost subquery reads only a2, so once a2's row is bound it runs once
/// per run of its parent (an InitPlan), not once per row of a1. Before, it
/// rescanned a3 for every (a2, a1) pair: 20 x 10,000 x 10,000 rows here,
/// hours. The time is logged, not asserted.
#[test]
fn a_subquery_reading_only_an_outer_level_runs_once_per_run_of_its_parent() {
    let srv = Server::start_temp(&[]);
    let mut a = Client::connect(srv.port);
    ok(&a.q("CREATE TABLE tenk (g int); INSERT INTO tenk SELECT generate_series(1, 10000)"));
    ok(&a.q("CREATE TABLE twenty (g int); INSERT INTO twenty SELECT generate_series(1, 20)"));
    let started = Instant::now();
    let r = a.q("SELECT sum((SELECT count(*) FROM tenk a1 WHERE a1.g < (SELECT max(a3.g) - a2.g FROM tenk a3))) FROM twenty a2(g)");
    println!("20 x (10k + 10k) rows: {:?}", started.elapsed());
    // PostgreSQL 15: 199770 (the sum over g of 9999 - g).
    assert_eq!(r.one(), "199770");
}
