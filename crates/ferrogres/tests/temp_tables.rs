//! Temporary tables end to end: each session has its own (same name, separate
//! rows), and they are gone once their session ends, whether it disconnects or
//! the server is killed (the next start removes them).

mod common;
use common::server::Server;
use std::io::Write;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// A psql session kept open: statements are written to its stdin.
fn open_session(srv: &Server) -> Child {
    srv.cmd("psql")
        .args(["-X", "-At", "-q", "-v", "ON_ERROR_STOP=1", "-d", "postgres"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The number of temporary relations named `name` of every session, and of temporary schemas.
fn temp_counts(srv: &Server, name: &str) -> String {
    srv.sql_ok(&format!(
        "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE c.relname = '{name}' AND n.nspname LIKE 'pg_temp%'; \
         SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'pg_temp%';"
    ))
}

fn wait_for(srv: &Server, name: &str, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got = temp_counts(srv, name);
        if got == want {
            return;
        }
        assert!(Instant::now() < deadline, "temporary relation counts: {got:?}, wanted {want:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn temp_tables_are_per_session_and_dropped_at_disconnect() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    srv.sql_ok("CREATE TABLE t (a int); INSERT INTO t VALUES (0);");
    let mut a = open_session(&srv);
    a.stdin.as_mut().unwrap().write_all(b"CREATE TEMP TABLE t (a int); INSERT INTO t VALUES (1);\n").unwrap();
    wait_for(&srv, "t", "1\n1\n");
    // Another session: its own t, and A's rows are not its rows.
    let b = srv.sql_ok("CREATE TEMP TABLE t (a int); INSERT INTO t VALUES (2); SELECT a FROM t; SELECT a FROM public.t;");
    assert_eq!(b, "CREATE TABLE\nINSERT 0 1\n2\n0\n");
    // B has disconnected: only A's temporary table is left.
    wait_for(&srv, "t", "1\n1\n");
    let mut stdin = a.stdin.take().unwrap();
    stdin.write_all(b"SELECT a FROM t;\n").unwrap();
    drop(stdin);
    let out = a.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "1\n");
    wait_for(&srv, "t", "0\n0\n");
    assert_eq!(srv.sql_ok("SELECT a FROM t;"), "0\n");
}

#[test]
fn temp_tables_are_gone_after_a_crash_and_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut srv = Server::start(dir.path());
    let mut a = open_session(&srv);
    a.stdin
        .as_mut()
        .unwrap()
        .write_all(b"CREATE TEMP TABLE crashy (id serial PRIMARY KEY, v text); INSERT INTO crashy (v) VALUES ('x');\n")
        .unwrap();
    wait_for(&srv, "crashy", "1\n1\n");
    srv.signal(libc::SIGKILL);
    let _ = a.kill();
    let _ = a.wait();
    let srv = Server::start(dir.path());
    assert_eq!(temp_counts(&srv, "crashy"), "0\n0\n");
    assert_eq!(srv.sql_ok("SELECT count(*) FROM pg_class WHERE relname LIKE 'crashy%';"), "0\n");
    // The name is free again, in a new session's temporary schema.
    assert_eq!(srv.sql_ok("CREATE TEMP TABLE crashy (a int); INSERT INTO crashy VALUES (7); SELECT a FROM crashy;"), "CREATE TABLE\nINSERT 0 1\n7\n");
}
