//! statement_timeout, idle_in_transaction_session_timeout and
//! idle_session_timeout (issue 13) against a real server, through the raw
//! protocol (interleaving sessions) and psql: PostgreSQL 15's SQLSTATEs and
//! messages, the session going on after a statement timeout, the connection
//! ending after an idle timeout; set per session, per startup-packet option
//! and per SET LOCAL.

mod common;

use common::server::Server;
use common::session_client::{ok, wait_blocked, Client};
use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

const TIMEOUT_MSG: &str = "canceling statement due to statement timeout";

fn timed(c: &mut Client, q: &str) -> (common::session_client::Reply, Duration) {
    let t = Instant::now();
    let r = c.q(q);
    (r, t.elapsed())
}

#[test]
fn statement_timeout_stops_sleep_long_query_and_lock_wait() {
    let srv = Server::start_temp(&[]);
    let mut a = Client::connect(srv.port);
    ok(&a.q("SET statement_timeout = '300ms'"));
    assert_eq!(a.q("SHOW statement_timeout").one(), "300ms");

    // pg_sleep(5) stops at ~300 ms with 57014 and PostgreSQL's message.
    let (r, took) = timed(&mut a, "SELECT pg_sleep(5)");
    assert_eq!(r.error.as_ref().map(|e| (e.0.as_str(), e.1.as_str())), Some(("57014", TIMEOUT_MSG)));
    assert!(took >= Duration::from_millis(290) && took < Duration::from_millis(1500), "took {took:?}");
    // The session goes on; the next statement gets a fresh timer.
    assert_eq!(a.q("SELECT 1").one(), "1");
    let (r, _) = timed(&mut a, "SELECT pg_sleep(0.1)");
    ok(&r);

    // A long query (no sleeping): the executor's interrupt checks see it.
    let (r, took) = timed(&mut a, "SELECT count(*) FROM generate_series(1, 100000000) a, generate_series(1, 100) b");
    assert_eq!(r.code(), "57014", "{r:?}");
    assert_eq!(r.error.as_ref().unwrap().1, TIMEOUT_MSG);
    assert!(took < Duration::from_millis(2000), "took {took:?}");

    // A lock wait: b holds a row lock, a waits for it and times out.
    ok(&a.q("SET statement_timeout = 0"));
    ok(&a.q("CREATE TABLE t (id int PRIMARY KEY, v int)"));
    ok(&a.q("INSERT INTO t VALUES (1, 0)"));
    let mut b = Client::connect(srv.port);
    ok(&b.q("BEGIN"));
    ok(&b.q("UPDATE t SET v = 1 WHERE id = 1"));
    ok(&a.q("SET statement_timeout = '400ms'"));
    let (r, took) = timed(&mut a, "UPDATE t SET v = 2 WHERE id = 1");
    assert_eq!(r.error.as_ref().map(|e| (e.0.as_str(), e.1.as_str())), Some(("57014", TIMEOUT_MSG)));
    assert!(took >= Duration::from_millis(390) && took < Duration::from_millis(1500), "took {took:?}");
    // The waiter left the queue: once b commits, a updates at once.
    ok(&b.q("COMMIT"));
    let (r, _) = timed(&mut a, "UPDATE t SET v = 2 WHERE id = 1");
    ok(&r);
    assert_eq!(a.q("SELECT v FROM t").one(), "2");

    // A transaction block fails on the timeout, as after any error.
    ok(&a.q("BEGIN"));
    assert_eq!(a.q("SELECT pg_sleep(2)").code(), "57014");
    assert_eq!(a.q("SELECT 1").code(), "25P02");
    ok(&a.q("ROLLBACK"));
}

#[test]
fn statement_timeout_in_a_lock_wait_keeps_the_waiter_cancellable() {
    // With a lock_timeout longer than statement_timeout, statement_timeout wins;
    // with a shorter one, lock_timeout's 55P03 comes first.
    let srv = Server::start_temp(&[]);
    let mut a = Client::connect(srv.port);
    let mut b = Client::connect(srv.port);
    ok(&a.q("CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0)"));
    ok(&b.q("BEGIN; UPDATE t SET v = 1 WHERE id = 1"));
    ok(&a.q("SET statement_timeout = '300ms'; SET lock_timeout = '5s'"));
    assert_eq!(a.q("UPDATE t SET v = 2 WHERE id = 1").error.unwrap().1, TIMEOUT_MSG);
    ok(&a.q("SET statement_timeout = '5s'; SET lock_timeout = '200ms'"));
    let r = a.q("UPDATE t SET v = 2 WHERE id = 1");
    assert_eq!(r.error.unwrap(), ("55P03".into(), "canceling statement due to lock timeout".into(), String::new()));
    // A cancel still works while the statement timer is armed.
    ok(&a.q("SET lock_timeout = 0"));
    a.send("UPDATE t SET v = 2 WHERE id = 1");
    let mut ctl = Client::connect(srv.port);
    wait_blocked(&mut ctl, a.pid, &[b.pid]);
    a.cancel(srv.port);
    let r = a.reply();
    assert_eq!(r.error.unwrap().1, "canceling statement due to user request");
    ok(&b.q("ROLLBACK"));
}

#[test]
fn set_local_and_transactional_settings() {
    let srv = Server::start_temp(&[]);
    let mut a = Client::connect(srv.port);
    // SET LOCAL lasts until the end of the transaction block.
    ok(&a.q("BEGIN"));
    ok(&a.q("SET LOCAL statement_timeout = '300ms'"));
    let t = Instant::now();
    assert_eq!(a.q("SELECT pg_sleep(3)").code(), "57014");
    assert!(t.elapsed() < Duration::from_millis(1500));
    ok(&a.q("ROLLBACK"));
    assert_eq!(a.q("SHOW statement_timeout").one(), "0");
    ok(&a.q("SELECT pg_sleep(0.5)"));

    // Outside a block: PostgreSQL's WARNING, and no effect.
    let r = a.q("SET LOCAL statement_timeout = '300ms'");
    ok(&r);
    assert_eq!(r.notices, vec![("WARNING".to_string(), "SET LOCAL can only be used in transaction blocks".to_string())]);
    assert_eq!(a.q("SHOW statement_timeout").one(), "0");

    // In a multi-statement string (an implicit block): applies, no warning.
    let r = a.q("SET LOCAL statement_timeout = '300ms'; SELECT pg_sleep(3)");
    assert_eq!(r.code(), "57014");
    assert!(r.notices.is_empty(), "{:?}", r.notices);
    assert_eq!(a.q("SHOW statement_timeout").one(), "0");

    // SET LOCAL then SET: the SET survives the commit; SET then SET LOCAL too.
    ok(&a.q("BEGIN; SET LOCAL statement_timeout = '1s'; SET statement_timeout = '2s'; COMMIT"));
    assert_eq!(a.q("SHOW statement_timeout").one(), "2s");
    ok(&a.q("BEGIN"));
    ok(&a.q("SET statement_timeout = '3s'"));
    ok(&a.q("SET LOCAL statement_timeout = '1s'"));
    assert_eq!(a.q("SHOW statement_timeout").one(), "1s");
    ok(&a.q("COMMIT"));
    assert_eq!(a.q("SHOW statement_timeout").one(), "3s");
    // A SET in a rolled-back transaction is undone.
    ok(&a.q("BEGIN"));
    ok(&a.q("SET statement_timeout = '4s'"));
    ok(&a.q("ROLLBACK"));
    assert_eq!(a.q("SHOW statement_timeout").one(), "3s");
    // ... and so is one in a failed implicit transaction.
    assert_eq!(a.q("SET statement_timeout = '5s'; SELECT 1/0").code(), "22012");
    assert_eq!(a.q("SHOW statement_timeout").one(), "3s");
}

#[test]
fn statement_timeout_from_startup_options_and_server_flag() {
    let srv = Server::start_temp(&["-c", "statement_timeout=250ms"]);
    let t = Instant::now();
    let (_, err) = srv.sql("SELECT pg_sleep(3)");
    assert!(err.contains("ERROR:  canceling statement due to statement timeout"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(2));

    let srv = Server::start_temp(&[]);
    let out = srv
        .psql_cmd()
        .env("PGOPTIONS", "-c statement_timeout=200")
        .args(["-At", "-c", "SHOW statement_timeout", "-c", "SELECT pg_sleep(3)"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "200ms");
    assert!(String::from_utf8_lossy(&out.stderr).contains("canceling statement due to statement timeout"));
}

/// Reads until the server closes the connection; returns the FATAL's
/// (SQLSTATE, message) and how long it took.
fn until_closed(s: &mut TcpStream) -> (Option<(String, String)>, Duration) {
    let t = Instant::now();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut fatal = None;
    loop {
        let mut h = [0u8; 5];
        if s.read_exact(&mut h).is_err() {
            return (fatal, t.elapsed());
        }
        let len = i32::from_be_bytes(h[1..5].try_into().unwrap()) as usize;
        let mut b = vec![0; len - 4];
        s.read_exact(&mut b).unwrap();
        if h[0] == b'E' {
            let f = common::fields(&b);
            assert_eq!(f[&b'S'], "FATAL");
            fatal = Some((f[&b'C'].clone(), f[&b'M'].clone()));
        }
    }
}

/// Like [`until_closed`], also collecting the NotificationResponses (channel,
/// payload) that came before the end.
fn notifications_until_closed(s: &mut TcpStream) -> (Vec<(String, String)>, Option<String>, Duration) {
    let t = Instant::now();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let (mut notes, mut fatal) = (Vec::new(), None);
    loop {
        let mut h = [0u8; 5];
        if s.read_exact(&mut h).is_err() {
            return (notes, fatal, t.elapsed());
        }
        let len = i32::from_be_bytes(h[1..5].try_into().unwrap()) as usize;
        let mut b = vec![0; len - 4];
        s.read_exact(&mut b).unwrap();
        match h[0] {
            b'E' => fatal = Some(common::fields(&b)[&b'C'].clone()),
            b'A' => {
                let mut parts = b[4..].split(|&c| c == 0).map(|p| String::from_utf8_lossy(p).into_owned());
                notes.push((parts.next().unwrap(), parts.next().unwrap()));
            }
            _ => {}
        }
    }
}

#[test]
fn a_listening_session_gets_notifications_and_still_times_out_when_idle() {
    // The idle wait of a listener watches the socket and the notification
    // wake-up together, and still ends at the idle-session timeout.
    let srv = Server::start_temp(&[]);
    let mut a = Client::connect(srv.port);
    let mut b = Client::connect(srv.port);
    ok(&a.q("LISTEN ch"));
    ok(&a.q("SET idle_session_timeout = '1500ms'"));
    std::thread::sleep(Duration::from_millis(300));
    ok(&b.q("NOTIFY ch, 'one'"));
    ok(&b.q("NOTIFY ch, 'two'"));
    let (notes, fatal, _) = notifications_until_closed(&mut a.s);
    assert_eq!(notes, [("ch".to_string(), "one".to_string()), ("ch".to_string(), "two".to_string())]);
    assert_eq!(fatal.as_deref(), Some("57P05"));
}

#[test]
fn idle_in_transaction_timeout_ends_the_connection() {
    let srv = Server::start_temp(&[]);
    let mut a = Client::connect(srv.port);
    ok(&a.q("CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0)"));
    ok(&a.q("SET idle_in_transaction_session_timeout = '300ms'"));
    // Idle outside a transaction: nothing happens.
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(a.q("SELECT 1").one(), "1");
    ok(&a.q("BEGIN"));
    ok(&a.q("UPDATE t SET v = 1 WHERE id = 1"));
    let (fatal, took) = until_closed(&mut a.s);
    assert_eq!(fatal, Some(("25P03".into(), "terminating connection due to idle-in-transaction timeout".into())));
    assert!(took < Duration::from_secs(2), "took {took:?}");
    // Its transaction was rolled back and its row lock released.
    let mut b = Client::connect(srv.port);
    ok(&b.q("SET lock_timeout = '2s'"));
    ok(&b.q("UPDATE t SET v = 2 WHERE id = 1"));
    assert_eq!(b.q("SELECT v FROM t").one(), "2");

    // A failed block is idle in transaction too.
    ok(&b.q("SET idle_in_transaction_session_timeout = 300"));
    ok(&b.q("BEGIN"));
    assert_eq!(b.q("SELECT 1/0").code(), "22012");
    let (fatal, _) = until_closed(&mut b.s);
    assert_eq!(fatal.unwrap().0, "25P03");
}

#[test]
fn idle_session_timeout_ends_the_connection() {
    let srv = Server::start_temp(&[]);
    let mut a = Client::connect(srv.port);
    ok(&a.q("SET idle_session_timeout = '300ms'"));
    // Activity resets it: a statement longer than the timeout is not idle time.
    ok(&a.q("SELECT pg_sleep(0.5)"));
    ok(&a.q("SELECT 1"));
    let (fatal, took) = until_closed(&mut a.s);
    assert_eq!(fatal, Some(("57P05".into(), "terminating connection due to idle-session timeout".into())));
    assert!(took >= Duration::from_millis(250) && took < Duration::from_secs(2), "took {took:?}");
    // Inside a transaction block it does not apply.
    let mut b = Client::connect(srv.port);
    ok(&b.q("SET idle_session_timeout = '200ms'"));
    ok(&b.q("BEGIN"));
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(b.q("SELECT 1").one(), "1");
    ok(&b.q("COMMIT"));
    let (fatal, _) = until_closed(&mut b.s);
    assert_eq!(fatal.unwrap().0, "57P05");
}
