//! ANALYZE works on every table and samples as PostgreSQL does (issue 20, item 4):
//! wide statistics rows go to pg_statistic's TOAST relation (they were 54000 "row
//! is too big" before), values wider than 1024 bytes stay out of the MCV list and
//! histogram, the row sample is bounded (30,000 rows: a reservoir over the sampled
//! blocks), and n_distinct is PostgreSQL's estimate (exact when every value
//! repeats, Haas-Stokes Duj1 otherwise, a negative fraction past a tenth of the
//! rows). Through a real server and psql.

mod common;
use common::server::Server;

fn ok(srv: &Server, sql: &str) -> String {
    let (out, err) = srv.sql(sql);
    assert_eq!(err, "", "{sql}");
    out
}

fn stat(srv: &Server, col: &str, what: &str) -> String {
    ok(srv, &format!("SELECT {what} FROM pg_stats WHERE tablename = 'w' AND attname = '{col}'")).trim().to_string()
}

#[test]
fn analyze_of_wide_rows_samples_and_estimates() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start_with(dir.path(), &[]);
    // 50,000 rows: more than the 30,000-row sample.
    ok(
        &srv,
        "CREATE TABLE w (id int, note text, grp int, half int, big text); \
         INSERT INTO w SELECT g, repeat(md5(g::text), 4), g % 1000, g % 20000, \
           CASE WHEN g % 10 = 0 THEN repeat(md5(g::text), 70) END \
         FROM generate_series(1, 50000) g",
    );
    // The MCV list and histogram of 128-character texts need the TOAST relation.
    ok(&srv, "ANALYZE w");
    assert_eq!(ok(&srv, "SELECT reltuples FROM pg_class WHERE relname = 'w'").trim(), "50000");
    // Unique columns: -1 (every row distinct).
    assert_eq!(stat(&srv, "id", "n_distinct"), "-1");
    assert_eq!(stat(&srv, "note", "n_distinct"), "-1");
    let hist = stat(&srv, "note", "histogram_bounds");
    assert!(hist.len() > 100 * 128, "note's histogram holds 101 values of 128 characters: {} characters", hist.len());
    // Every value of grp repeats in the sample: its count is exact.
    assert_eq!(stat(&srv, "grp", "n_distinct"), "1000");
    // half's 20,000 values appear 2.5 times each: the sample sees some once, and
    // Duj1 estimates the total from those; past a tenth of the rows it is stored
    // as minus a fraction of them (exactly -0.4).
    let half: f64 = stat(&srv, "half", "n_distinct").parse().unwrap();
    assert!((-0.5..=-0.3).contains(&half), "n_distinct of half: {half}");
    // 2,240-byte values: counted (null fraction 0.9, distinct), never kept.
    let nf: f64 = stat(&srv, "big", "null_frac").parse().unwrap();
    assert!((nf - 0.9).abs() < 0.01, "null_frac of big: {nf}");
    assert_eq!(stat(&srv, "big", "histogram_bounds"), "");
    assert_eq!(stat(&srv, "big", "most_common_vals"), "");
    // Again, after changes: the old rows (and their out-of-line chunks) go.
    ok(&srv, "DELETE FROM w WHERE id > 40000; ANALYZE w; ANALYZE w");
    assert_eq!(ok(&srv, "SELECT reltuples FROM pg_class WHERE relname = 'w'").trim(), "40000");
    assert_eq!(ok(&srv, "SELECT count(*) FROM pg_stats WHERE tablename = 'w'").trim(), "5");
    assert_eq!(stat(&srv, "grp", "n_distinct"), "1000");
}
