//! pg_stat_activity, pg_blocking_pids, pg_cancel_backend and
//! pg_terminate_backend (issue 13) against a real server: interleaving raw
//! protocol sessions and psql, results compared with PostgreSQL 15's.

mod common;

use common::server::Server;
use common::session_client::{ok, wait_blocked, Client};
use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// One row of pg_stat_activity for `pid`: (state, wait_event_type,
/// wait_event, query), NULLs as "".
fn activity(ctl: &mut Client, pid: i32) -> Vec<String> {
    let r = ctl.q(&format!(
        "SELECT coalesce(state, ''), coalesce(wait_event_type, ''), coalesce(wait_event, ''), query, \
         coalesce(application_name, ''), (xact_start IS NULL)::text, backend_type FROM pg_stat_activity WHERE pid = {pid}"
    ));
    ok(&r);
    assert_eq!(r.rows.len(), 1, "one row for pid {pid}: {:?}", r.rows);
    r.rows[0].iter().map(|v| v.clone().unwrap_or_default()).collect()
}

#[test]
fn columns_are_postgres_15s() {
    let srv = Server::start_temp(&[]);
    // psql's \gdesc describes the query's result (Describe of a statement).
    let mut child = srv
        .psql_cmd()
        .args(["-At", "-F", " "])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"SELECT * FROM pg_stat_activity \\gdesc\n").unwrap();
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    child.wait().unwrap();
    // PostgreSQL 15's columns, in order, with their types; the one
    // difference: client_addr is text here (PostgreSQL: inet; no inet type yet).
    let expected = "datid oid\ndatname name\npid integer\nleader_pid integer\nusesysid oid\nusename name\n\
        application_name text\nclient_addr text\nclient_hostname text\nclient_port integer\n\
        backend_start timestamp with time zone\nxact_start timestamp with time zone\n\
        query_start timestamp with time zone\nstate_change timestamp with time zone\n\
        wait_event_type text\nwait_event text\nstate text\nbackend_xid xid\nbackend_xmin xid\n\
        query_id bigint\nquery text\nbackend_type text";
    assert_eq!(out.trim(), expected);

    // pgAdmin-like and psql queries run unmodified.
    let (out, err) = srv.sql("select * from pg_stat_activity where state = 'active'");
    assert!(err.is_empty(), "{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1, "{out}");
    assert!(lines[0].contains("|select * from pg_stat_activity where state = 'active'|client backend"), "{out}");
    assert!(lines[0].contains("|postgres|"), "{out}");
    let (out, _) = srv.sql(
        "SELECT datname, usename, application_name, client_port, state, backend_type FROM pg_stat_activity WHERE pid = pg_backend_pid()",
    );
    // Through the Unix socket: client_port -1, client_addr NULL, as PostgreSQL.
    assert_eq!(out.trim(), "postgres|postgres|psql|-1|active|client backend");
    let (out, _) = srv.sql("SELECT client_addr IS NULL FROM pg_stat_activity WHERE pid = pg_backend_pid()");
    assert_eq!(out.trim(), "t");
}

#[test]
fn states_wait_events_and_blocking_pids() {
    let srv = Server::start_temp(&[]);
    let mut ctl = Client::connect(srv.port);
    let mut a = Client::connect(srv.port);
    let mut b = Client::connect(srv.port);
    ok(&ctl.q("CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0)"));

    // TCP clients: the address and port they connect from.
    let port = a.s.local_addr().unwrap().port();
    let r = ctl.q(&format!("SELECT client_addr, client_port FROM pg_stat_activity WHERE pid = {}", a.pid));
    assert_eq!(r.rows, vec![vec![Some("127.0.0.1".to_string()), Some(port.to_string())]]);

    // Idle, no transaction.
    ok(&a.q("SET application_name = 'alpha'"));
    assert_eq!(activity(&mut ctl, a.pid), ["idle", "", "", "SET application_name = 'alpha'", "alpha", "true", "client backend"]);

    // Idle in transaction, holding a row lock (and an xid).
    ok(&a.q("BEGIN"));
    ok(&a.q("UPDATE t SET v = 1 WHERE id = 1"));
    assert_eq!(activity(&mut ctl, a.pid)[..6], ["idle in transaction", "", "", "UPDATE t SET v = 1 WHERE id = 1", "alpha", "false"]);
    let xid = ctl.q(&format!("SELECT backend_xid FROM pg_stat_activity WHERE pid = {}", a.pid)).one();
    assert!(xid.parse::<u32>().unwrap() > 0);

    // b waits for a's row lock: Lock / transactionid, active, its query.
    b.send("UPDATE t SET v = 2 WHERE id = 1");
    wait_blocked(&mut ctl, b.pid, &[a.pid]);
    assert_eq!(activity(&mut ctl, b.pid)[..4], ["active", "Lock", "transactionid", "UPDATE t SET v = 2 WHERE id = 1"]);
    assert_eq!(ctl.q(&format!("SELECT pg_blocking_pids({})", b.pid)).one(), format!("{{{}}}", a.pid));
    assert_eq!(ctl.q(&format!("SELECT pg_typeof(pg_blocking_pids({}))", b.pid)).one(), "integer[]");
    assert_eq!(ctl.q(&format!("SELECT pg_blocking_pids({})", a.pid)).one(), "{}");
    ok(&a.q("COMMIT"));
    ok(&b.reply());
    assert_eq!(activity(&mut ctl, b.pid)[..3], ["idle", "", ""]);

    // pg_sleep: Timeout / PgSleep.
    a.send("SELECT pg_sleep(1)");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let row = activity(&mut ctl, a.pid);
        if row[..3] == ["active", "Timeout", "PgSleep"] {
            break;
        }
        assert!(Instant::now() < deadline, "never seen sleeping: {row:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    ok(&a.reply());

    // A failed block.
    ok(&a.q("BEGIN"));
    assert_eq!(a.q("SELECT 1/0").code(), "22012");
    assert_eq!(activity(&mut ctl, a.pid)[0], "idle in transaction (aborted)");
    ok(&a.q("ROLLBACK"));

    // track_activities off: "disabled", no query.
    ok(&a.q("SET track_activities = off"));
    ok(&a.q("SELECT 42"));
    assert_eq!(activity(&mut ctl, a.pid)[..4], ["disabled", "", "", ""]);

    // A session that ended is gone from the view.
    let gone = b.pid;
    b.s.write_all(&common::client::terminate()).unwrap();
    drop(b);
    let deadline = Instant::now() + Duration::from_secs(5);
    while ctl.q(&format!("SELECT count(*) FROM pg_stat_activity WHERE pid = {gone}")).one() != "0" {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn cancel_and_terminate_across_sessions() {
    let srv = Server::start_temp(&[]);
    let mut ctl = Client::connect(srv.port);
    let mut a = Client::connect(srv.port);
    let mut b = Client::connect(srv.port);
    ok(&ctl.q("CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0)"));

    // Unknown pid: false and PostgreSQL's WARNING.
    let r = ctl.q("SELECT pg_cancel_backend(12345)");
    assert_eq!(r.one(), "f");
    assert_eq!(r.notices, vec![("WARNING".to_string(), "PID 12345 is not a PostgreSQL backend process".to_string())]);
    let r = ctl.q("SELECT pg_terminate_backend(12345)");
    assert_eq!(r.one(), "f");
    assert_eq!(r.notices.len(), 1);
    let r = ctl.q("SELECT pg_terminate_backend(12345, -1)");
    assert_eq!(r.error.unwrap(), ("22023".into(), "\"timeout\" must not be negative".into(), String::new()));

    // Cancel a sleeping statement: 57014, the session goes on.
    a.send("SELECT pg_sleep(10)");
    std::thread::sleep(Duration::from_millis(200));
    let t = Instant::now();
    assert_eq!(ctl.q(&format!("SELECT pg_cancel_backend({})", a.pid)).one(), "t");
    let r = a.reply();
    assert_eq!(r.error.unwrap().1, "canceling statement due to user request");
    assert!(t.elapsed() < Duration::from_secs(2));
    assert_eq!(a.q("SELECT 1").one(), "1");

    // Cancel a lock wait.
    ok(&a.q("BEGIN; UPDATE t SET v = 1 WHERE id = 1"));
    b.send("UPDATE t SET v = 2 WHERE id = 1");
    wait_blocked(&mut ctl, b.pid, &[a.pid]);
    assert_eq!(ctl.q(&format!("SELECT pg_cancel_backend({})", b.pid)).one(), "t");
    assert_eq!(b.reply().code(), "57014");
    // Own statement: canceled at once.
    assert_eq!(b.q("SELECT pg_cancel_backend(pg_backend_pid())").code(), "57014");
    assert_eq!(b.q("SELECT 2").one(), "2");

    // Terminate a session in a lock wait: FATAL 57P01, connection closed.
    b.send("UPDATE t SET v = 3 WHERE id = 1");
    wait_blocked(&mut ctl, b.pid, &[a.pid]);
    assert_eq!(ctl.q(&format!("SELECT pg_terminate_backend({}, 3000)", b.pid)).one(), "t");
    let (fatal, _) = until_closed(&mut b.s);
    assert_eq!(fatal, Some(("57P01".into(), "terminating connection due to administrator command".into())));
    // With a timeout it returned only once the backend was gone.
    assert_eq!(ctl.q(&format!("SELECT count(*) FROM pg_stat_activity WHERE pid = {}", b.pid)).one(), "0");

    // Terminate an idle-in-transaction session: its transaction rolls back.
    assert_eq!(ctl.q(&format!("SELECT pg_terminate_backend({}, 3000)", a.pid)).one(), "t");
    let (fatal, _) = until_closed(&mut a.s);
    assert_eq!(fatal.unwrap().0, "57P01");
    assert_eq!(ctl.q("SELECT v FROM t").one(), "0");
    ok(&ctl.q("SET lock_timeout = '2s'; UPDATE t SET v = 5 WHERE id = 1"));

    // A psql session idle between commands is terminated too.
    let mut child = srv
        .psql_cmd()
        .args(["-At", "-v", "ON_ERROR_STOP=1"])
        .env("PGAPPNAME", "victim")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"SELECT 'started';\n").unwrap();
    stdin.flush().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let pid = loop {
        // Idle after its first query (idle right after connecting is too
        // early: the query would then meet the terminated connection).
        let r = ctl.q("SELECT pid FROM pg_stat_activity WHERE application_name = 'victim' AND state = 'idle' AND query LIKE '%started%'");
        if let Some(row) = r.rows.first() {
            break row[0].clone().unwrap();
        }
        assert!(Instant::now() < deadline, "psql never idle");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(ctl.q(&format!("SELECT pg_terminate_backend({pid}, 3000)")).one(), "t");
    stdin.write_all(b"SELECT 'after';\n").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("terminating connection due to administrator command"), "{stderr}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("after"));
}

/// Reads until the server closes the connection; the FATAL's (code, message).
fn until_closed(s: &mut std::net::TcpStream) -> (Option<(String, String)>, Duration) {
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
            if f[&b'S'] == "FATAL" {
                fatal = Some((f[&b'C'].clone(), f[&b'M'].clone()));
            }
        }
    }
}

#[test]
fn auxiliary_threads_are_listed_with_their_wait_events() {
    let srv = Server::start_temp(&[]);
    let mut ctl = Client::connect(srv.port);
    // As PostgreSQL 15 lists them (its logical replication launcher aside):
    // no state, database or user, an empty query, their own Activity events.
    let expected = [
        ("autovacuum launcher", "AutoVacuumMain"),
        ("background writer", "BgWriterMain"),
        ("checkpointer", "CheckpointerMain"),
        ("walwriter", "WalWriterMain"),
    ];
    let q = "SELECT backend_type, coalesce(wait_event_type, ''), coalesce(wait_event, ''), state IS NULL, datname IS NULL, \
             usename IS NULL, query, pid > 0 FROM pg_stat_activity WHERE backend_type <> 'client backend' ORDER BY 1";
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = ctl.q(q);
        ok(&r);
        let got: Vec<Vec<String>> = r.rows.iter().map(|row| row.iter().map(|v| v.clone().unwrap_or_default()).collect()).collect();
        let want: Vec<Vec<String>> = expected
            .iter()
            .map(|(t, e)| vec![t.to_string(), "Activity".into(), e.to_string(), "t".into(), "t".into(), "t".into(), String::new(), "t".into()])
            .collect();
        if got == want {
            break;
        }
        // A round of work (a checkpoint, a bgwriter pass) shows no wait: retry.
        assert!(Instant::now() < deadline, "auxiliary rows: {got:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Their pids are distinct from each other and from the sessions'.
    let r = ctl.q("SELECT count(DISTINCT pid), count(*) FROM pg_stat_activity");
    assert_eq!(r.rows[0][0], r.rows[0][1]);
    // They are no client backends: signalling one is PostgreSQL's WARNING and false.
    let pid = ctl.q("SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'").one();
    let r = ctl.q(&format!("SELECT pg_cancel_backend({pid})"));
    assert_eq!(r.one(), "f");
    assert_eq!(r.notices, vec![("WARNING".to_string(), format!("PID {pid} is not a PostgreSQL backend process"))]);
}

#[test]
fn extended_protocol_statement_text_is_shown() {
    let srv = Server::start_temp(&[]);
    let mut ctl = Client::connect(srv.port);
    let mut e = common::client::Client::connect(srv.port);
    let pid = e.pid;
    assert_eq!(activity(&mut ctl, pid)[0], "idle");
    // Parse/Bind/Execute/Sync of a statement with a parameter, run on its own thread.
    let t = std::thread::spawn(move || {
        let r = e.bind_binary("SELECT pg_sleep($1)", &[701], &[Some(&0.6f64.to_be_bytes())]);
        assert!(r.error.is_none(), "{:?}", r.error);
        e
    });
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let row = activity(&mut ctl, pid);
        if row[..4] == ["active", "Timeout", "PgSleep", "SELECT pg_sleep($1)"] {
            break;
        }
        assert!(Instant::now() < deadline, "never seen running: {row:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let _e = t.join().unwrap(); // kept open: its row stays
    assert_eq!(activity(&mut ctl, pid)[..4], ["idle", "", "", "SELECT pg_sleep($1)"]);
}

/// An Execute's command stays "active" until Sync, as in PostgreSQL 15 (its
/// state changes at ReadyForQuery, not when the Execute completes): seen from
/// another session after CommandComplete and before Sync. (PostgreSQL 15
/// answered the same Parse/Bind/Execute/Flush with `active`, then `idle`
/// after Sync.)
#[test]
fn extended_protocol_stays_active_until_sync() {
    let srv = Server::start_temp(&[]);
    let mut ctl = Client::connect(srv.port);
    let mut e = common::client::Client::connect(srv.port);
    let pid = e.pid;
    // Flush, not Sync: the replies come, the pipeline stays open.
    e.send(&[common::parse("", "SELECT 1", &[]), common::bind("", "", &[], &[], &[]), common::execute("", 0), common::msg(b'H', &[])].concat());
    // ParseComplete, BindComplete, DataRow, CommandComplete; no ReadyForQuery yet.
    let mut seen = Vec::new();
    while seen.last() != Some(&b'C') {
        let (t, body) = common::read_message(&mut e.s);
        assert_ne!(t, b'E', "{:?}", common::fields(&body));
        seen.push(t);
    }
    assert_eq!(seen, b"12DC");
    assert_eq!(activity(&mut ctl, pid)[..4], ["active", "", "", "SELECT 1"]);
    e.send(&common::sync());
    assert_eq!(common::read_message(&mut e.s).0, b'Z');
    assert_eq!(activity(&mut ctl, pid)[..4], ["idle", "", "", "SELECT 1"]);
}

/// Waits until backend `pid` is active in pg_sleep (as a superuser sees it).
fn wait_sleeping(ctl: &mut Client, pid: i32) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while ctl.q(&format!("SELECT count(*) FROM pg_stat_activity WHERE pid = {pid} AND wait_event = 'PgSleep'")).one() != "1" {
        assert!(Instant::now() < deadline, "backend {pid} never slept");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The (SQLSTATE, message) of an error reply.
fn err(r: &common::session_client::Reply) -> (String, String) {
    let e = r.error.clone().unwrap_or_else(|| panic!("expected an error, got {:?}", r.rows));
    (e.0, e.1)
}

/// PostgreSQL 15's permission rules for pg_cancel_backend and
/// pg_terminate_backend, the masking of other roles' activity and
/// statement text, and the reset functions revoked from PUBLIC (texts
/// checked on PostgreSQL 15.18: they have no DETAIL there).
#[test]
fn signals_and_statistics_follow_the_role_rules() {
    let srv = Server::start_temp(&[]);
    let mut ctl = Client::connect(srv.port);
    ok(&ctl.q(
        "CREATE ROLE alice LOGIN; CREATE ROLE bob LOGIN; CREATE ROLE carol LOGIN; CREATE ROLE dave LOGIN; \
         GRANT pg_signal_backend TO carol; GRANT pg_read_all_stats TO dave",
    ));
    let mut alice = Client::connect_as(srv.port, "alice");
    let mut bob = Client::connect_as(srv.port, "bob");
    let mut bob2 = Client::connect_as(srv.port, "bob");
    let mut carol = Client::connect_as(srv.port, "carol");
    let mut dave = Client::connect_as(srv.port, "dave");
    let mut sup = Client::connect(srv.port);
    ok(&bob.q("SET application_name = 'bobs'"));
    sup.send("SELECT pg_sleep(60)");
    bob.send("SELECT pg_sleep(60) /* bob's secret */");
    wait_sleeping(&mut ctl, sup.pid);
    wait_sleeping(&mut ctl, bob.pid);

    // A plain role: neither a superuser's backend nor another role's.
    let den = |m: &str| ("42501".to_string(), m.to_string());
    assert_eq!(err(&alice.q(&format!("SELECT pg_cancel_backend({})", sup.pid))), den("must be a superuser to cancel superuser query"));
    assert_eq!(err(&alice.q(&format!("SELECT pg_terminate_backend({})", sup.pid))), den("must be a superuser to terminate superuser process"));
    assert_eq!(
        err(&alice.q(&format!("SELECT pg_cancel_backend({})", bob.pid))),
        den("must be a member of the role whose query is being canceled or member of pg_signal_backend")
    );
    assert_eq!(
        err(&alice.q(&format!("SELECT pg_terminate_backend({}, 100)", bob.pid))),
        den("must be a member of the role whose process is being terminated or member of pg_signal_backend")
    );
    // An unknown pid is still a WARNING and false; the session goes on.
    assert_eq!(alice.q("SELECT pg_cancel_backend(12345)").one(), "f");
    assert_eq!(alice.q("SELECT 7").one(), "7");

    // What alice sees of bob's backend: PostgreSQL 15's masked row.
    let masked = alice.q(&format!(
        "SELECT usename, application_name, query, state IS NULL, backend_start IS NULL, wait_event IS NULL, \
         backend_type IS NULL, query_id IS NULL, client_port IS NULL FROM pg_stat_activity WHERE pid = {}",
        bob.pid
    ));
    let row: Vec<String> = masked.rows[0].iter().map(|v| v.clone().unwrap_or_default()).collect();
    assert_eq!(row, ["bob", "bobs", "<insufficient privilege>", "t", "t", "t", "t", "t", "t"]);
    // Her own row is whole; the auxiliary processes (no role) are masked.
    assert_eq!(alice.q("SELECT state FROM pg_stat_activity WHERE pid = pg_backend_pid()").one(), "active");
    assert_eq!(
        alice.q("SELECT count(*) FROM pg_stat_activity WHERE usesysid IS NULL AND query <> '<insufficient privilege>'").one(),
        "0"
    );
    // pg_read_all_stats sees everything; so does the superuser.
    let q = format!("SELECT query FROM pg_stat_activity WHERE pid = {}", bob.pid);
    assert_eq!(dave.q(&q).one(), "SELECT pg_sleep(60) /* bob's secret */");
    assert_eq!(ctl.q(&q).one(), "SELECT pg_sleep(60) /* bob's secret */");

    // Same role: bob's other session may cancel his query.
    assert_eq!(bob2.q(&format!("SELECT pg_cancel_backend({})", bob.pid)).one(), "t");
    assert_eq!(err(&bob.reply()), ("57014".into(), "canceling statement due to user request".into()));
    // Membership in the role: alice, once granted bob, may too.
    ok(&ctl.q("GRANT bob TO alice"));
    bob.send("SELECT pg_sleep(60)");
    wait_sleeping(&mut ctl, bob.pid);
    assert_eq!(alice.q(&format!("SELECT pg_cancel_backend({})", bob.pid)).one(), "t");
    assert_eq!(bob.reply().code(), "57014");
    // pg_signal_backend: any non-superuser backend, no superuser's.
    bob.send("SELECT pg_sleep(60)");
    wait_sleeping(&mut ctl, bob.pid);
    assert_eq!(carol.q(&format!("SELECT pg_cancel_backend({})", bob.pid)).one(), "t");
    assert_eq!(bob.reply().code(), "57014");
    assert_eq!(err(&carol.q(&format!("SELECT pg_cancel_backend({})", sup.pid))), den("must be a superuser to cancel superuser query"));
    assert_eq!(carol.q(&format!("SELECT pg_terminate_backend({}, 3000)", bob2.pid)).one(), "t");
    let (fatal, _) = until_closed(&mut bob2.s);
    assert_eq!(fatal.unwrap().0, "57P01");
    // A superuser may signal anyone.
    assert_eq!(ctl.q(&format!("SELECT pg_cancel_backend({})", sup.pid)).one(), "t");
    assert_eq!(sup.reply().code(), "57014");

    // pg_stat_statements: other roles' text and id masked unless
    // pg_read_all_stats; own entries whole.
    ok(&bob.q("SELECT 'bob statement' AS x"));
    ok(&alice.q("SELECT 'alice statement' AS y"));
    let shown = "SELECT r.rolname, s.query, s.queryid IS NULL FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid \
                 WHERE r.rolname IN ('alice', 'bob') AND (s.query LIKE 'SELECT $1 AS %' OR s.query = '<insufficient privilege>') ORDER BY 1, 2";
    let view = |c: &mut Client| -> Vec<Vec<String>> {
        let r = c.q(shown);
        ok(&r);
        r.rows.iter().map(|row| row.iter().map(|v| v.clone().unwrap_or_default()).collect()).collect()
    };
    let masked_bob = view(&mut alice).into_iter().filter(|r| r[0] == "bob").collect::<Vec<_>>();
    assert!(!masked_bob.is_empty() && masked_bob.iter().all(|r| r[1] == "<insufficient privilege>" && r[2] == "t"), "{masked_bob:?}");
    let alice_own = view(&mut alice).into_iter().filter(|r| r[0] == "alice").collect::<Vec<_>>();
    assert!(alice_own.iter().any(|r| r[1] == "SELECT $1 AS y" && r[2] == "f"), "{alice_own:?}");
    let all = view(&mut dave);
    assert!(all.iter().any(|r| r[0] == "bob" && r[1] == "SELECT $1 AS x" && r[2] == "f"), "{all:?}");

    // The reset functions are the superuser's (EXECUTE revoked from PUBLIC).
    for f in ["pg_stat_statements_reset", "pg_stat_reset", "pg_stat_reset_shared", "pg_stat_reset_single_table_counters"] {
        let arg = match f {
            "pg_stat_reset_shared" => "'bgwriter'",
            "pg_stat_reset_single_table_counters" => "1259",
            _ => "",
        };
        assert_eq!(err(&dave.q(&format!("SELECT {f}({arg})"))), den(&format!("permission denied for function {f}")));
    }
    assert_eq!(dave.q("SELECT count(*) > 0 FROM pg_stat_statements").one(), "t");
    ok(&ctl.q("SELECT pg_stat_statements_reset()"));
    assert_eq!(dave.q("SELECT count(*) FROM pg_stat_statements WHERE query LIKE 'SELECT $1 AS %'").one(), "0");
}
