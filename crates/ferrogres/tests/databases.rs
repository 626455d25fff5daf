//! Databases end to end: per-database catalogs and tables, CREATE / DROP
//! DATABASE with sessions connected, connection checks, a created database
//! across kill -9, and pgbench on a created database.

mod common;
use common::server::Server;
use std::io::{Read, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// psql -At -c `sql` on database `db`: (stdout, stderr).
fn sql_in(srv: &Server, db: &str, sql: &str) -> (String, String) {
    let out = srv.cmd("psql").args(["-X", "-At", "-v", "ON_ERROR_STOP=1", "-d", db, "-c", sql]).output().unwrap();
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

fn ok_in(srv: &Server, db: &str, sql: &str) -> String {
    let (out, err) = sql_in(srv, db, sql);
    assert_eq!(err, "", "{db}: {sql}\nserver log: {}", srv.log());
    out
}

#[test]
fn tables_with_the_same_name_in_two_databases_are_separate() {
    let srv = Server::start_temp(&[]);
    ok_in(&srv, "postgres", "CREATE DATABASE alpha");
    ok_in(&srv, "postgres", "CREATE DATABASE beta");
    for (db, v) in [("alpha", "a"), ("beta", "b"), ("postgres", "p")] {
        ok_in(&srv, db, &format!("CREATE TABLE t (id serial PRIMARY KEY, v text); INSERT INTO t (v) VALUES ('{v}1'), ('{v}2')"));
    }
    ok_in(&srv, "beta", "INSERT INTO t (v) VALUES ('b3'); CREATE INDEX t_v ON t (v)");
    assert_eq!(ok_in(&srv, "alpha", "SELECT id, v FROM t ORDER BY id"), "1|a1\n2|a2\n");
    assert_eq!(ok_in(&srv, "beta", "SELECT id, v FROM t WHERE v = 'b3'"), "3|b3\n");
    assert_eq!(ok_in(&srv, "postgres", "SELECT v FROM t ORDER BY v"), "p1\np2\n");
    assert_eq!(ok_in(&srv, "alpha", "SELECT current_database(), count(*) FROM pg_class WHERE relname = 't_v'"), "alpha|0\n");
    // Dropping the table in one database leaves the others'.
    ok_in(&srv, "alpha", "DROP TABLE t");
    assert_eq!(ok_in(&srv, "beta", "SELECT count(*) FROM t"), "3\n");
    assert_eq!(ok_in(&srv, "postgres", "SELECT count(*) FROM t"), "2\n");
    // A template's tables are in the databases made from it, and only there.
    ok_in(&srv, "template1", "CREATE TABLE from_template (x int); INSERT INTO from_template VALUES (7)");
    ok_in(&srv, "postgres", "CREATE DATABASE gamma");
    assert_eq!(ok_in(&srv, "gamma", "SELECT x FROM from_template"), "7\n");
    let (_, err) = sql_in(&srv, "alpha", "SELECT x FROM from_template");
    assert!(err.contains("relation \"from_template\" does not exist"), "{err}");
}

#[test]
fn connecting_to_a_missing_or_closed_database_is_fatal() {
    let srv = Server::start_temp(&[]);
    let (_, err) = sql_in(&srv, "nosuch", "SELECT 1");
    assert!(err.contains("FATAL:  database \"nosuch\" does not exist"), "{err}");
    let (_, err) = sql_in(&srv, "template0", "SELECT 1");
    assert!(err.contains("FATAL:  database \"template0\" is not currently accepting connections"), "{err}");
    ok_in(&srv, "postgres", "CREATE DATABASE limited CONNECTION LIMIT 0");
    let (_, err) = sql_in(&srv, "limited", "SELECT 1");
    assert!(err.contains("FATAL:  too many connections for database \"limited\""), "{err}");
    assert_eq!(ok_in(&srv, "template1", "SELECT current_database()"), "template1\n");
}

#[test]
fn drop_database_with_a_connected_session_fails_then_succeeds() {
    let srv = Server::start_temp(&[]);
    ok_in(&srv, "postgres", "CREATE DATABASE busy");
    let oid: u32 = ok_in(&srv, "postgres", "SELECT oid FROM pg_database WHERE datname = 'busy'").trim().parse().unwrap();
    let dir = srv.dir.join(format!("data/base/{oid}"));
    assert!(dir.is_dir());
    // A session stays connected to `busy` while psql's stdin is open.
    let mut open = srv
        .cmd("psql")
        .args(["-X", "-At", "-d", "busy"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = open.stdin.take().unwrap();
    stdin.write_all(b"SELECT 'connected';\n").unwrap();
    stdin.flush().unwrap();
    let mut stdout = open.stdout.take().unwrap();
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !String::from_utf8_lossy(&seen).contains("connected") {
        let mut buf = [0u8; 256];
        let n = stdout.read(&mut buf).unwrap();
        assert!(n > 0 && Instant::now() < deadline, "psql ended: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    let (_, err) = sql_in(&srv, "postgres", "DROP DATABASE busy");
    assert!(
        err.contains("ERROR:  database \"busy\" is being accessed by other users")
            && err.contains("DETAIL:  There is 1 other session using the database."),
        "{err}"
    );
    let (_, err) = sql_in(&srv, "postgres", "CREATE DATABASE copy TEMPLATE busy");
    assert!(err.contains("ERROR:  source database \"busy\" is being accessed by other users"), "{err}");
    let (_, err) = sql_in(&srv, "busy", "DROP DATABASE busy");
    assert!(err.contains("ERROR:  cannot drop the currently open database"), "{err}");
    assert!(dir.is_dir());
    drop(stdin);
    let _ = open.wait();
    ok_in(&srv, "postgres", "DROP DATABASE busy");
    assert_eq!(ok_in(&srv, "postgres", "SELECT count(*) FROM pg_database WHERE datname = 'busy'"), "0\n");
    assert!(!dir.exists(), "{} still exists", dir.display());
    let (_, err) = sql_in(&srv, "busy", "SELECT 1");
    assert!(err.contains("FATAL:  database \"busy\" does not exist"), "{err}");
}

#[test]
fn a_created_database_survives_kill_9() {
    let tmp = tempfile::tempdir().unwrap();
    let mut srv = Server::start(tmp.path());
    ok_in(&srv, "postgres", "CREATE DATABASE durable");
    ok_in(&srv, "durable", "CREATE TABLE kept (id int PRIMARY KEY, v text); INSERT INTO kept SELECT g, 'v' || g FROM generate_series(1, 500) g");
    ok_in(&srv, "durable", "CREATE SEQUENCE seq; SELECT nextval('seq')");
    ok_in(&srv, "postgres", "CREATE DATABASE doomed");
    ok_in(&srv, "postgres", "DROP DATABASE doomed");
    srv.signal(libc::SIGKILL);
    let srv = Server::start(tmp.path());
    assert!(srv.log().contains("automatic recovery"), "{}", srv.log());
    assert_eq!(ok_in(&srv, "durable", "SELECT count(*), max(v) FROM kept WHERE id > 0"), "500|v99\n");
    assert_eq!(ok_in(&srv, "durable", "SELECT v FROM kept WHERE id = 250"), "v250\n");
    assert!(ok_in(&srv, "durable", "SELECT nextval('seq')").trim().parse::<i64>().unwrap() > 1);
    assert_eq!(
        ok_in(&srv, "postgres", "SELECT datname FROM pg_database ORDER BY datname"),
        "durable\npostgres\ntemplate0\ntemplate1\n"
    );
    let (_, err) = sql_in(&srv, "postgres", "SELECT * FROM kept");
    assert!(err.contains("relation \"kept\" does not exist"), "{err}");
}

#[test]
fn pgbench_initializes_a_created_database() {
    let srv = Server::start_temp(&[]);
    ok_in(&srv, "postgres", "CREATE DATABASE newdb");
    let out = srv.cmd("pgbench").args(["-i", "-q", "-s", "1", "newdb"]).output().unwrap();
    assert!(out.status.success(), "pgbench -i: {}\n{}", String::from_utf8_lossy(&out.stderr), srv.log());
    assert_eq!(ok_in(&srv, "newdb", "SELECT count(*) FROM pgbench_accounts"), "100000\n");
    let out = srv.cmd("pgbench").args(["-n", "-t", "20", "-c", "2", "newdb"]).output().unwrap();
    assert!(out.status.success(), "pgbench: {}\n{}", String::from_utf8_lossy(&out.stderr), srv.log());
    let (_, err) = sql_in(&srv, "postgres", "SELECT count(*) FROM pgbench_accounts");
    assert!(err.contains("relation \"pgbench_accounts\" does not exist"), "{err}");
}
