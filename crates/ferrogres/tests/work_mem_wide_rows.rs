//! What `work_mem` counts in a hash join and a hash aggregate is the columns
//! the plan needs above them, not the whole width of the rows below (issue 19:
//! TPC-H Q10 and Q13 went to temporary files where PostgreSQL 15 stays in
//! memory, because the join's table and the groups held every column of the
//! tables joined, unread ones as NULLs).
//!
//! - A hash join of a wide table (ten text columns nobody reads) takes the same
//!   `Memory Usage` as the same join of a narrow copy holding only the columns
//!   read, and runs in one batch, as PostgreSQL 15's at the same `work_mem`.
//! - A GROUP BY over a join of the wide table, whose output reads only its
//!   key, writes no temporary block at a `work_mem` where PostgreSQL 15's HashAggregate stays
//!   in one batch (with `hash_mem_multiplier = 1`: the groups' own size
//!   decides); at 64kB it does spill (the count is live), with the same
//!   answer.
//! - `hash_mem_multiplier` (PostgreSQL 15's, default 2) bounds a hash table
//!   at `work_mem` times it: the join that fits in 256kB x 2 goes to batches
//!   at 256kB x 1, as PostgreSQL 15's does (the table's entries are about
//!   PostgreSQL's size: 420 kB here, its 480 kB).

mod common;
use common::pg15::Pg15;
use common::server::{ok_after_sets as ok, Server};

const ROWS: i64 = 10_000;

fn setup() -> String {
    let pads: Vec<String> = (1..=10).map(|i| format!("p{i} text")).collect();
    let fill: Vec<String> = (1..=10).map(|i| format!("repeat('{}', 40)", (b'a' + i as u8) as char)).collect();
    format!(
        "CREATE TABLE wide (id int, k int, v int, {});
         INSERT INTO wide SELECT g, g % 5000, g % 97, {} FROM generate_series(1, {ROWS}) g;
         CREATE TABLE narrow AS SELECT id, k, v FROM wide;
         ANALYZE wide; ANALYZE narrow;",
        pads.join(", "),
        fill.join(", ")
    )
}

/// psql `-At` through `cmd`; any error fails the test.
fn psql(mut cmd: std::process::Command, sql: &str) -> String {
    let out = cmd.args(["-X", "-At", "-v", "ON_ERROR_STOP=1", "-d", "postgres", "-c", sql]).output().unwrap();
    assert!(out.status.success(), "{sql}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The figure after `label` in the first plan line holding it.
fn figure(plan: &str, label: &str) -> u64 {
    let after = plan.split(label).nth(1).unwrap_or_else(|| panic!("no {label:?} in:\n{plan}"));
    after.trim_start().split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

const EXPLAIN: &str = "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)";

#[test]
fn a_hash_join_counts_only_the_columns_it_keeps() {
    let pg_dir = tempfile::tempdir().unwrap();
    let pg = Pg15::start(&pg_dir.path().join("pg"));
    let srv = Server::start_temp(&[]);
    psql(pg.cmd("psql"), &setup());
    srv.sql_ok(&setup());
    let join = |t: &str| format!("SELECT count(*), sum(b.v) FROM {t} a JOIN {t} b ON a.id = b.k");
    let answer = ok(&srv, &format!("{};", join("wide")));
    assert_eq!(answer, psql(pg.cmd("psql"), &join("wide")));
    assert_eq!(answer, ok(&srv, &format!("{};", join("narrow"))));
    let wide = ok(&srv, &format!("{EXPLAIN} {};", join("wide")));
    let narrow = ok(&srv, &format!("{EXPLAIN} {};", join("narrow")));
    eprintln!("ferrogres, wide:\n{wide}\nferrogres, narrow:\n{narrow}");
    assert_eq!(figure(&wide, "Memory Usage:"), figure(&narrow, "Memory Usage:"), "wide:\n{wide}\nnarrow:\n{narrow}");
    let theirs = psql(pg.cmd("psql"), &format!("{EXPLAIN} {}", join("wide")));
    eprintln!("PostgreSQL 15, wide:\n{theirs}");
    assert_eq!(figure(&theirs, "Batches:"), 1, "{theirs}");
    assert_eq!(figure(&wide, "Batches:"), 1, "{wide}");
    // The table (about 420 kB here, PostgreSQL 15's 480 kB) within 256kB x
    // hash_mem_multiplier: one batch at 2, more at 1. PostgreSQL 15 plans its
    // batches from estimates and takes more than one at 256kB x 2 as well.
    assert_eq!(ok(&srv, "SHOW hash_mem_multiplier;"), psql(pg.cmd("psql"), "SHOW hash_mem_multiplier"));
    let set = |multiplier: &str| format!("SET work_mem = '256kB'; SET hash_mem_multiplier = {multiplier}; {EXPLAIN} {}", join("wide"));
    let at = |multiplier: &str| figure(&ok(&srv, &format!("{};", set(multiplier))), "Batches:");
    let theirs_at = |multiplier: &str| figure(&psql(pg.cmd("psql"), &set(multiplier)), "Batches:");
    assert_eq!(at("2"), 1);
    assert!(at("1") > 1, "the table fits in 256kB x 1");
    assert!(theirs_at("1") > 1, "PostgreSQL's table fits in 256kB x 1");
}

#[test]
fn a_hash_aggregate_counts_only_the_columns_its_output_reads() {
    let pg_dir = tempfile::tempdir().unwrap();
    let pg = Pg15::start(&pg_dir.path().join("pg"));
    let srv = Server::start_temp(&[]);
    psql(pg.cmd("psql"), &setup());
    srv.sql_ok(&setup());
    // 5000 groups of two joined rows each; the output reads only the key.
    let q = "SELECT a.k, count(*), max(b.v) FROM wide a JOIN wide b ON a.id = b.id GROUP BY a.k ORDER BY a.k";
    let theirs = psql(pg.cmd("psql"), &format!("SET hash_mem_multiplier = 1; {EXPLAIN} {q}"));
    eprintln!("PostgreSQL 15:\n{theirs}");
    assert!(theirs.contains("HashAggregate"), "{theirs}");
    assert_eq!(figure(&theirs, "Batches:"), 1, "{theirs}");
    let want = psql(pg.cmd("psql"), q);
    assert_eq!(want.lines().count(), 5000);
    let temp_blocks = |work_mem: &str| -> (String, i64) {
        ok(&srv, "SELECT pg_stat_statements_reset();");
        let rows = ok(&srv, &format!("SET work_mem = '{work_mem}'; SET hash_mem_multiplier = 1; {q};"));
        let written = ok(&srv, "SELECT temp_blks_written FROM pg_stat_statements WHERE query LIKE 'SELECT a.k, count(*)%';");
        (rows, written.trim().parse().unwrap())
    };
    let (rows, written) = temp_blocks("4MB");
    assert_eq!(rows, want);
    assert_eq!(written, 0, "the grouping spilled at 4MB");
    let (rows, written) = temp_blocks("64kB");
    assert_eq!(rows, want);
    assert!(written > 0, "nothing spilled at 64kB");
}
