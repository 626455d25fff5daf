//! Cached plans under concurrent DDL: a session whose cached plan (simple-query
//! cache, or a prepared statement) names a table that another session drops and
//! re-creates, and that waits for that session's lock, must see the new table
//! once the lock is granted (the catalog version is re-checked after the plan's
//! locks are taken).

mod common;
use common::server::Server;
use std::io::Write;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

fn interactive(srv: &Server) -> Child {
    srv.cmd("psql")
        .args(["-X", "-At", "-v", "ON_ERROR_STOP=0", "-d", "postgres"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn send(c: &mut Child, sql: &str) {
    let stdin = c.stdin.as_mut().unwrap();
    stdin.write_all(sql.as_bytes()).unwrap();
    stdin.flush().unwrap();
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Session A runs `setup`, then `query` twice (the second run uses the cached
/// plan); session B replaces table t inside a transaction; A runs `query` again,
/// waits for B's lock, and must read B's table after B commits.
fn replanned_after_lock_wait(setup: &str, query: &str, new_table: &str, expect: &str) {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    srv.sql_ok("CREATE TABLE t (a int); INSERT INTO t VALUES (1);");

    let a_ready = dir.path().join("a_ready");
    let mut a = interactive(&srv);
    send(&mut a, &format!("{setup}{query}\n{query}\n\\! touch {}\n", a_ready.display()));
    wait_for("session A's first two queries", || a_ready.exists());

    let b_ready = dir.path().join("b_ready");
    let mut b = interactive(&srv);
    send(&mut b, &format!("BEGIN;\nDROP TABLE t;\n{new_table}\n\\! touch {}\n", b_ready.display()));
    wait_for("session B's DDL", || b_ready.exists());
    // A's cached plan is valid as far as it knows: B has not committed.
    send(&mut a, &format!("{query}\n"));
    wait_for("session A to wait for B's lock", || {
        srv.sql_ok("SELECT count(*) FROM pg_locks WHERE NOT granted").trim() != "0"
    });
    send(&mut b, "COMMIT;\n");
    drop(b.stdin.take());
    let bo = b.wait_with_output().unwrap();
    assert!(bo.status.success(), "{}", String::from_utf8_lossy(&bo.stderr));

    drop(a.stdin.take());
    let ao = a.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&ao.stdout);
    let err = String::from_utf8_lossy(&ao.stderr);
    assert_eq!(out, expect, "session A's output (stderr: {err})\nserver log: {}", srv.log());
    assert_eq!(err, "");
}

#[test]
fn a_cached_simple_query_plan_waiting_on_a_ddl_lock_is_replanned() {
    replanned_after_lock_wait(
        "",
        "SELECT * FROM t;",
        "CREATE TABLE t (x text);\nINSERT INTO t VALUES ('new');",
        "1\n1\nnew\n",
    );
}

#[test]
fn a_prepared_statement_waiting_on_a_ddl_lock_is_replanned() {
    replanned_after_lock_wait(
        "PREPARE q AS SELECT * FROM t;\n",
        "EXECUTE q;",
        "CREATE TABLE t (a int);\nINSERT INTO t VALUES (2);",
        "PREPARE\n1\n1\n2\n",
    );
}
