//! INSERT ... ON CONFLICT under real concurrent sessions: PostgreSQL's
//! guarantee that each statement inserts or updates (or, DO NOTHING, skips) and
//! never fails with a unique violation on its arbiter index, however the
//! sessions interleave. Several psql sessions upsert the same few keys at once;
//! every statement must succeed and the counters must add up.

mod common;
use common::server::Server;
use std::process::Stdio;

const SESSIONS: usize = 6;
const STATEMENTS: usize = 60;
const KEYS: usize = 4;

/// Runs `sql` in one psql session stopping at the first error; returns its stderr
/// (empty when every statement succeeded).
fn session(srv: &Server, sql: String) -> std::thread::JoinHandle<String> {
    let mut cmd = srv.cmd("psql");
    cmd.args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", "postgres"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    std::thread::spawn(move || {
        use std::io::Write;
        let mut p = cmd.spawn().unwrap();
        p.stdin.take().unwrap().write_all(sql.as_bytes()).unwrap();
        let o = p.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        if !o.status.success() && err.is_empty() {
            return format!("psql exited with {:?}", o.status);
        }
        err
    })
}

fn run_sessions(srv: &Server, script: impl Fn(usize) -> String) {
    let handles: Vec<_> = (0..SESSIONS).map(|s| session(srv, script(s))).collect();
    for h in handles {
        let err = h.join().unwrap();
        assert!(err.is_empty(), "a session failed: {err}");
    }
}

#[test]
fn concurrent_upserts_of_the_same_keys_insert_or_update_never_fail() {
    let srv = Server::start_temp(&[]);
    srv.sql_ok("CREATE TABLE counters (k int PRIMARY KEY, n int NOT NULL, last int);");
    // DO UPDATE: single-row statements, and multi-row statements whose keys are
    // in ascending order in every session (so they cannot deadlock).
    run_sessions(&srv, |s| {
        let mut sql = String::new();
        for i in 0..STATEMENTS {
            if i % 3 == 2 {
                let rows: Vec<String> = (0..KEYS).map(|k| format!("({k}, 1, {s})")).collect();
                sql += &format!(
                    "INSERT INTO counters VALUES {} ON CONFLICT (k) DO UPDATE SET n = counters.n + excluded.n, last = excluded.last;\n",
                    rows.join(", ")
                );
            } else {
                let k = (s + i) % KEYS;
                sql += &format!("INSERT INTO counters VALUES ({k}, 1, {s}) ON CONFLICT (k) DO UPDATE SET n = counters.n + 1, last = {s};\n");
            }
        }
        sql
    });
    let per_session = (0..STATEMENTS).map(|i| if i % 3 == 2 { KEYS } else { 1 }).sum::<usize>();
    let got = srv.sql_ok("SELECT count(*), sum(n) FROM counters;");
    assert_eq!(got.trim(), format!("{KEYS}|{}", per_session * SESSIONS));

    // DO NOTHING: every session proposes every key; exactly one row per key.
    srv.sql_ok("CREATE TABLE seen (k int PRIMARY KEY, by int);");
    run_sessions(&srv, |s| {
        let mut sql = String::new();
        for i in 0..STATEMENTS {
            let k = (s * 7 + i) % (STATEMENTS / 2);
            sql += &format!("INSERT INTO seen VALUES ({k}, {s}) ON CONFLICT DO NOTHING;\n");
        }
        sql
    });
    let got = srv.sql_ok("SELECT count(*), count(DISTINCT k) FROM seen;");
    assert_eq!(got.trim(), format!("{0}|{0}", STATEMENTS / 2));
}
