//! Cumulative statistics across a restart (issue 13), as in PostgreSQL: a
//! clean stop (SIGTERM) writes them to pg_stat/pgstat.stat and the next start
//! reads them back; after a crash (kill -9) they start again from zero.

mod common;
use common::server::Server;

/// What the script below moves: table, database, bgwriter and statement
/// counters, as one line.
const READ: &str = "SELECT seq_scan, n_tup_ins, n_tup_upd, n_tup_del, n_tup_hot_upd, n_live_tup, n_dead_tup FROM pg_stat_user_tables WHERE relname = 'k';
SELECT xact_commit >= 5, xact_rollback, tup_inserted >= 10 FROM pg_stat_database WHERE datname = 'postgres';
SELECT checkpoints_req >= 1 FROM pg_stat_bgwriter;
SELECT calls, rows, wal_records FROM pg_stat_statements WHERE query = 'UPDATE k SET v = v + $1 WHERE id <= $2';";

#[test]
fn statistics_survive_a_clean_restart_and_reset_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let mut srv = Server::start(dir.path());
    srv.sql_ok(
        "CREATE TABLE k (id int, v int);
         INSERT INTO k SELECT g, 0 FROM generate_series(1, 10) g;
         UPDATE k SET v = v + 1 WHERE id <= 4;
         UPDATE k SET v = v + 1 WHERE id <= 2;
         DELETE FROM k WHERE id = 10;
         BEGIN; INSERT INTO k VALUES (99, 0); ROLLBACK;
         SELECT count(*) FROM k;
         CHECKPOINT;
         SELECT pg_stat_force_next_flush();",
    );
    let before = srv.sql_ok(READ);
    // 1 seq scan of SELECT count(*), plus the UPDATEs' and DELETE's scans; 11
    // inserted (one rolled back: dead), 6 updated, 1 deleted.
    assert_eq!(before.lines().next().unwrap(), "4|11|6|1|6|9|8", "{before}");
    assert!(before.ends_with("t|1|t\nt\n2|6|6\n"), "{before}");

    srv.signal(libc::SIGTERM);
    assert!(dir.path().join("data/pg_stat/pgstat.stat").exists(), "the statistics file is written at a clean stop");
    let mut srv = Server::start(dir.path());
    // The file is consumed at start: a crash from here on finds none.
    assert!(!dir.path().join("data/pg_stat/pgstat.stat").exists());
    let after = srv.sql_ok(READ);
    // The same counters (this session's reads of the views are not flushed yet).
    assert_eq!(after, before);

    // A crash resets them.
    srv.signal(libc::SIGKILL);
    let srv = Server::start(dir.path());
    let crashed = srv.sql_ok(READ);
    assert_eq!(crashed.lines().next().unwrap(), "0|0|0|0|0|0|0", "{crashed}");
    assert!(!crashed.contains("2|6|6"), "{crashed}");
}
