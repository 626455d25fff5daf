//! Cumulative statistics (issue 13 part 3) against a real server: the
//! counters of pg_stat_user_tables, pg_stat_user_indexes, pg_statio_user_tables
//! and pg_stat_database move by exactly what a script did. The expected deltas
//! were checked against PostgreSQL 15 running the same script (with
//! enable_seqscan / enable_indexscan forcing the same scans).

mod common;

use common::server::Server;
use common::session_client::{ok, Client};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

const TABLE_COLS: &str = "seq_scan, seq_tup_read, idx_scan, idx_tup_fetch, n_tup_ins, n_tup_upd, n_tup_del, n_tup_hot_upd, \
     n_live_tup, n_dead_tup, n_mod_since_analyze, n_ins_since_vacuum";

fn nums(c: &mut Client, sql: &str) -> Vec<i64> {
    let r = c.q(sql);
    ok(&r);
    assert_eq!(r.rows.len(), 1, "{sql}: {:?}", r.rows);
    r.rows[0].iter().map(|v| v.as_deref().expect("not NULL").parse().unwrap()).collect()
}

fn table(c: &mut Client, rel: &str) -> Vec<i64> {
    nums(c, &format!("SELECT {TABLE_COLS} FROM pg_stat_user_tables WHERE relname = '{rel}'"))
}

fn index(c: &mut Client, ix: &str) -> Vec<i64> {
    nums(c, &format!("SELECT idx_scan, idx_tup_read, idx_tup_fetch FROM pg_stat_user_indexes WHERE indexrelname = '{ix}'"))
}

fn database(c: &mut Client) -> Vec<i64> {
    nums(
        c,
        "SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted, tup_returned, tup_fetched, blks_hit + blks_read \
         FROM pg_stat_database WHERE datname = current_database()",
    )
}

fn diff(after: &[i64], before: &[i64]) -> Vec<i64> {
    after.iter().zip(before).map(|(a, b)| a - b).collect()
}

#[test]
fn counters_move_by_exactly_what_the_script_did() {
    let srv = Server::start_temp(&["-c", "autovacuum=off"]);
    let mut c = Client::connect(srv.port);
    ok(&c.q("CREATE TABLE s (id int PRIMARY KEY, v int, w text)"));
    ok(&c.q("SELECT pg_stat_force_next_flush()"));
    // One session does everything, so xact_commit counts exactly its
    // statements; pg_stat_database is read first after the forced flush (and
    // first after the second one), so it sees exactly what came before.
    let d0 = database(&mut c);
    let t0 = table(&mut c, "s");
    let i0 = index(&mut c, "s_pkey");
    let script = [
        "INSERT INTO s SELECT g, g, 'x' FROM generate_series(1, 10) g",
        // Rolled back: 2 inserts and a HOT update become dead tuples.
        "BEGIN",
        "INSERT INTO s VALUES (100, 0, 'r'), (101, 0, 'r')",
        "UPDATE s SET w = 'y' WHERE id = 4",
        "ROLLBACK",
        // HOT (no indexed column changes), then non-HOT (the key changes).
        "UPDATE s SET v = v + 1 WHERE id = 1",
        "UPDATE s SET id = 50 WHERE id = 2",
        "DELETE FROM s WHERE id = 3",
        "SELECT * FROM s WHERE id = 5",
        // A sequential scan reading the 9 rows left.
        "SELECT count(*) FROM s WHERE v > 0",
    ];
    for q in script {
        ok(&c.q(q));
    }
    ok(&c.q("SELECT pg_stat_force_next_flush()"));
    let d1 = database(&mut c);
    let t1 = table(&mut c, "s");
    let i1 = index(&mut c, "s_pkey");

    // seq_scan, seq_tup_read, idx_scan, idx_tup_fetch, n_tup_ins, n_tup_upd,
    // n_tup_del, n_tup_hot_upd, n_live_tup (10 - 1), n_dead_tup (rolled back
    // 2 inserts + 1 update, committed 2 updates + 1 delete),
    // n_mod_since_analyze (committed changes: 10 + 2 + 1), n_ins_since_vacuum.
    assert_eq!(diff(&t1, &t0), [1, 9, 5, 5, 12, 3, 1, 2, 9, 6, 13, 12], "pg_stat_user_tables: {t0:?} -> {t1:?}");
    // Five index scans (the four WHERE id = ... statements and the rolled-back
    // update), one entry and one live row each.
    assert_eq!(diff(&i1, &i0), [5, 5, 5], "pg_stat_user_indexes");
    // Commits: the three reads before the script, its 6 autocommit statements
    // (the block rolled back), the forced flush: 3 + 6 + 1.
    let dd = diff(&d1, &d0);
    assert_eq!(&dd[..5], [10, 1, 12, 3, 1], "pg_stat_database: {d0:?} -> {d1:?}");
    // Rows returned by sequential scans include the catalog reads of the
    // views themselves; at least the 9 of the count(*) and the 5 fetched.
    assert!(dd[5] >= 9 && dd[6] >= 5 && dd[7] > 0, "{dd:?}");

    // pg_statio_user_tables: the heap pages the script read were found in the pool.
    let io = nums(&mut c, "SELECT heap_blks_read, heap_blks_hit FROM pg_statio_user_tables WHERE relname = 's'");
    assert!(io[1] >= 8, "heap_blks_hit {io:?}");

    // pg_stat_reset_single_table_counters and pg_stat_reset.
    // The table's counters go; idx_scan and idx_tup_fetch are the index's
    // (summed), which stay, as in PostgreSQL.
    ok(&c.q("SELECT pg_stat_reset_single_table_counters('s'::regclass)"));
    assert_eq!(table(&mut c, "s"), [0, 0, 5, 5, 0, 0, 0, 0, 0, 0, 0, 0]);
    ok(&c.q("SELECT count(*) FROM s"));
    ok(&c.q("SELECT pg_stat_force_next_flush()"));
    assert_eq!(table(&mut c, "s")[..2], [1, 9]);
    ok(&c.q("SELECT pg_stat_reset()"));
    let r = c.q("SELECT xact_commit, stats_reset IS NOT NULL FROM pg_stat_database WHERE datname = current_database()");
    ok(&r);
    assert_eq!(r.rows[0][1].as_deref(), Some("t"));
    assert!(r.rows[0][0].as_deref().unwrap().parse::<i64>().unwrap() < 5, "{:?}", r.rows);
}

/// Another session's counts arrive without anything forcing them: the
/// session flushes at transaction end once a second, and when it has been idle
/// for that second.
#[test]
fn an_idle_session_flushes_within_a_second() {
    let srv = Server::start_temp(&["-c", "autovacuum=off"]);
    let mut a = Client::connect(srv.port);
    let mut ctl = Client::connect(srv.port);
    ok(&a.q("CREATE TABLE t (id int)"));
    ok(&a.q("INSERT INTO t VALUES (1), (2), (3)"));
    ok(&a.q("INSERT INTO t VALUES (4)"));
    // a is now idle with its counts pending; they show within about a second.
    let start = Instant::now();
    loop {
        let n = nums(&mut ctl, "SELECT n_tup_ins FROM pg_stat_user_tables WHERE relname = 't'")[0];
        if n == 4 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(5), "n_tup_ins stuck at {n}");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(start.elapsed() < Duration::from_millis(2500), "took {:?}", start.elapsed());
}

#[test]
fn views_have_postgres_15s_columns() {
    let srv = Server::start_temp(&[]);
    for (view, cols) in [
        ("pg_stat_user_tables", 23),
        ("pg_stat_all_tables", 23),
        ("pg_stat_sys_tables", 23),
        ("pg_stat_user_indexes", 8),
        ("pg_stat_all_indexes", 8),
        ("pg_statio_user_tables", 11),
        ("pg_statio_all_tables", 11),
        ("pg_stat_database", 28),
    ] {
        let mut child = srv
            .psql_cmd()
            .args(["-At", "-F", " "])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(format!("SELECT * FROM {view} \\gdesc\n").as_bytes()).unwrap();
        let mut out = String::new();
        child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
        child.wait().unwrap();
        assert_eq!(out.trim().lines().count(), cols, "{view}: {out}");
    }
    // psql-style queries run unmodified.
    let (out, err) = srv.sql("SELECT datname, numbackends > 0 FROM pg_stat_database WHERE datname = 'postgres'");
    assert!(err.is_empty(), "{err}");
    assert_eq!(out.trim(), "postgres|t");
    let (out, err) = srv.sql("SELECT count(*) > 0 FROM pg_stat_sys_tables WHERE schemaname = 'pg_catalog'");
    assert!(err.is_empty(), "{err}");
    assert_eq!(out.trim(), "t");
}

/// pg_stat_database's session counters (PostgreSQL 14+): sessions, their
/// time, their time active and idle in a transaction, and how they ended:
/// Terminate (normal), a lost connection (abandoned), a FATAL error (an idle
/// timeout) and pg_terminate_backend (killed), as PostgreSQL 15 counts them.
#[test]
fn session_counters_count_how_sessions_ended() {
    let srv = Server::start_temp(&["-c", "autovacuum=off"]);
    let mut ctl = Client::connect(srv.port);
    let counts = |c: &mut Client| {
        nums(
            c,
            "SELECT sessions, sessions_abandoned, sessions_fatal, sessions_killed, \
             session_time::bigint, active_time::bigint, idle_in_transaction_time::bigint \
             FROM pg_stat_database WHERE datname = current_database()",
        )
    };
    let before = counts(&mut ctl);

    // Normal: 300 ms active, 400 ms idle in a transaction, then Terminate.
    let mut a = Client::connect(srv.port);
    ok(&a.q("SELECT pg_sleep(0.3)"));
    ok(&a.q("BEGIN"));
    std::thread::sleep(Duration::from_millis(400));
    ok(&a.q("COMMIT"));
    a.s.write_all(b"X\0\0\0\x04").unwrap();
    let mut rest = Vec::new();
    let _ = a.s.read_to_end(&mut rest);
    // Abandoned: the socket closes without Terminate.
    let b = Client::connect(srv.port);
    drop(b);
    // FATAL: idle_session_timeout.
    let mut c = Client::connect(srv.port);
    ok(&c.q("SET idle_session_timeout = '100ms'"));
    let (t, body) = c.read();
    assert_eq!(t, b'E', "{}", String::from_utf8_lossy(&body));
    // Killed: pg_terminate_backend.
    let d = Client::connect(srv.port);
    ok(&ctl.q(&format!("SELECT pg_terminate_backend({})", d.pid)));

    let start = Instant::now();
    let after = loop {
        let now = counts(&mut ctl);
        if diff(&now, &before)[1..4] == [1, 1, 1] {
            break now;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "{before:?} -> {now:?}");
        std::thread::sleep(Duration::from_millis(50));
    };
    let d = diff(&after, &before);
    assert_eq!(d[0], 4, "four sessions started: {before:?} -> {after:?}");
    // Times in ms: a's 300 ms statement and 400 ms open transaction at least;
    // the sessions together lasted longer than a's 700 ms.
    assert!(d[5] >= 300, "active_time {d:?}");
    assert!(d[6] >= 400, "idle_in_transaction_time {d:?}");
    assert!(d[4] >= 700, "session_time {d:?}");
}
