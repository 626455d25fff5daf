//! Lock statistics, log_lock_waits and the built-in wait-event sampler
//! (issue 13 parts 5 and 6) against a real server, with raw-protocol
//! sessions: one session blocked on another's row lock shows up in
//! ferrogres_stat_locks, in the server log (as PostgreSQL 15 words it) and in
//! pg_wait_sampling_history / _profile as Lock / transactionid.

mod common;

use common::pg15::Pg15;
use common::server::Server;
use common::session_client::{ok, wait_blocked, Client};
use std::time::{Duration, Instant};

fn num(c: &mut Client, sql: &str) -> f64 {
    let r = c.q(sql);
    ok(&r);
    r.rows[0][0].as_deref().unwrap_or("0").parse().unwrap()
}

/// a holds a row lock; b waits for it for `hold`, then a commits.
fn block_for(srv: &Server, hold: Duration) -> (i32, i32, String) {
    let mut ctl = Client::connect(srv.port);
    let mut a = Client::connect(srv.port);
    let mut b = Client::connect(srv.port);
    ok(&ctl.q("CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0)"));
    ok(&a.q("BEGIN"));
    ok(&a.q("UPDATE t SET v = 1 WHERE id = 1"));
    let xid = ctl
        .q(&format!("SELECT transactionid FROM pg_locks WHERE locktype = 'transactionid' AND pid = {} AND granted", a.pid))
        .one();
    b.send("UPDATE t SET v = 2 WHERE id = 1");
    wait_blocked(&mut ctl, b.pid, &[a.pid]);
    std::thread::sleep(hold);
    ok(&a.q("COMMIT"));
    ok(&b.reply());
    (a.pid, b.pid, xid)
}

#[test]
fn lock_statistics_and_log_lock_waits() {
    let srv = Server::start_temp(&["-c", "log_lock_waits=on", "-c", "deadlock_timeout=100ms"]);
    let mut ctl = Client::connect(srv.port);
    let before = num(&mut ctl, "SELECT waits FROM ferrogres_stat_locks WHERE locktype = 'transactionid'");
    let (a, b, xid) = block_for(&srv, Duration::from_millis(400));
    // One more wait on a transaction lock, of at least the time it was held.
    let r = ctl.q("SELECT waits, wait_time, max_wait FROM ferrogres_stat_locks WHERE locktype = 'transactionid'");
    ok(&r);
    let row: Vec<f64> = r.rows[0].iter().map(|v| v.as_deref().unwrap().parse().unwrap()).collect();
    assert_eq!(row[0] - before, 1.0, "{row:?}");
    assert!(row[1] >= 350.0 && row[2] >= 350.0, "wait time in ms: {row:?}");
    // Relation locks go through the fast path (weak modes, no strong locker).
    assert!(num(&mut ctl, "SELECT fastpath_acquired FROM ferrogres_stat_locks WHERE locktype = 'relation'") > 0.0);
    let r = ctl.q("SELECT count(*) FROM ferrogres_stat_locks");
    assert_eq!(r.one(), "8");

    // The LOG lines PostgreSQL 15 writes for the same wait.
    let start = Instant::now();
    let log = loop {
        let log = srv.log();
        if log.contains(&format!("process {b} acquired ShareLock on transaction {xid} after")) || start.elapsed() > Duration::from_secs(5) {
            break log;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let still = format!("LOG:  process {b} still waiting for ShareLock on transaction {xid} after 1");
    let at = log.find(&still).unwrap_or_else(|| panic!("no {still:?} in the log:\n{log}"));
    let rest = &log[at + still.len() - 1..];
    // "after 100.123 ms" (deadlock_timeout, with three decimals).
    let ms: f64 = rest.split(" ms").next().unwrap().parse().unwrap();
    assert!((100.0..1000.0).contains(&ms), "{rest}");
    assert!(rest.contains(&format!("\nDETAIL:  Process holding the lock: {a}. Wait queue: {b}.\n")), "{rest}");
    assert!(log.contains(&format!("LOG:  process {b} acquired ShareLock on transaction {xid} after ")), "{log}");
}

#[test]
fn lwlock_statistics_view() {
    let srv = Server::start_temp(&[]);
    let mut c = Client::connect(srv.port);
    let r = c.q("SELECT tranche, blocked_shared + blocked_exclusive >= 0, wait_time >= 0 FROM ferrogres_stat_lwlocks WHERE tranche = 'BufferMapping'");
    ok(&r);
    assert_eq!(r.rows, vec![vec![Some("BufferMapping".into()), Some("t".into()), Some("t".into())]]);
    let r = c.q("SELECT count(*) > 5, count(DISTINCT tranche) = count(*) FROM ferrogres_stat_lwlocks");
    assert_eq!(r.rows, vec![vec![Some("t".into()), Some("t".into())]]);
    // The columns, in order.
    let all = c.q("SELECT * FROM ferrogres_stat_lwlocks WHERE tranche = 'WALInsert'");
    ok(&all);
    let named = c.q(
        "SELECT tranche, acquired_shared, acquired_exclusive, blocked_shared, blocked_exclusive, wait_time, max_wait \
         FROM ferrogres_stat_lwlocks WHERE tranche = 'WALInsert'",
    );
    ok(&named);
    assert_eq!(all.rows[0].len(), 7);
    assert_eq!(all.rows[0][0], named.rows[0][0]);
    // Counting every acquisition is off by default (setting lwlock_stats).
    assert_eq!(c.q("SHOW lwlock_stats").one(), "off");
    ok(&c.q("SELECT count(*) FROM pg_class"));
    assert_eq!(c.q("SELECT sum(acquired_shared + acquired_exclusive) FROM ferrogres_stat_lwlocks").one(), "0");
}

/// With lwlock_stats on, every LWLock acquisition is counted, waited or not:
/// reading pages takes buffer content locks shared, and writing them takes
/// them exclusive; the counts never fall below the blocked ones.
#[test]
fn lwlock_acquisitions_are_counted() {
    let srv = Server::start_temp(&["-c", "lwlock_stats=on"]);
    let mut c = Client::connect(srv.port);
    let content = "SELECT acquired_shared, acquired_exclusive FROM ferrogres_stat_lwlocks WHERE tranche = 'BufferContent'";
    let pair = |c: &mut Client| -> (f64, f64) {
        let r = c.q(content);
        ok(&r);
        let v: Vec<f64> = r.rows[0].iter().map(|v| v.as_deref().unwrap().parse().unwrap()).collect();
        (v[0], v[1])
    };
    ok(&c.q("CREATE TABLE acq (id int, pad text)"));
    let before = pair(&mut c);
    // 1000 rows of 200 bytes: about 30 pages, each locked exclusive at least once.
    ok(&c.q("INSERT INTO acq SELECT g, repeat('x', 200) FROM generate_series(1, 1000) g"));
    let inserted = pair(&mut c);
    assert!(inserted.1 - before.1 >= 25.0, "exclusive BufferContent acquisitions: {before:?} -> {inserted:?}");
    // A sequential scan locks each page shared at least once.
    ok(&c.q("SELECT count(*) FROM acq"));
    let scanned = pair(&mut c);
    assert!(scanned.0 - inserted.0 >= 25.0, "shared BufferContent acquisitions: {inserted:?} -> {scanned:?}");
    let r = c.q(
        "SELECT count(*) FROM ferrogres_stat_lwlocks WHERE acquired_shared < blocked_shared OR acquired_exclusive < blocked_exclusive",
    );
    assert_eq!(r.one(), "0");
    let r = c.q("SELECT sum(acquired_shared + acquired_exclusive) > 0 FROM ferrogres_stat_lwlocks WHERE tranche = 'BufferMapping'");
    assert_eq!(r.one(), "t");
}

/// Four sessions update one row: a holds it, b, c, d queue. What c and d wait
/// for once a committed and b updated the row (b still running), as a multiset
/// of wait events; and the row's final count (no update lost).
fn queue_behind_updater(port: u16) -> (Vec<String>, String) {
    let mut ctl = Client::connect(port);
    ok(&ctl.q("CREATE TABLE hot_row (id int PRIMARY KEY, n int); INSERT INTO hot_row VALUES (1, 0)"));
    let update = "UPDATE hot_row SET n = n + 1 WHERE id = 1";
    let mut a = Client::connect(port);
    let mut b = Client::connect(port);
    let mut c = Client::connect(port);
    let mut d = Client::connect(port);
    ok(&a.q("BEGIN"));
    ok(&a.q(update));
    ok(&b.q("BEGIN"));
    b.send(update);
    wait_blocked(&mut ctl, b.pid, &[a.pid]);
    // c and d in autocommit: each commits as soon as its update is done.
    c.send(update);
    wait_blocked(&mut ctl, c.pid, &[a.pid, b.pid]);
    d.send(update);
    wait_blocked(&mut ctl, d.pid, &[a.pid, b.pid, c.pid]);
    ok(&a.q("COMMIT"));
    ok(&b.reply());
    wait_blocked(&mut ctl, c.pid, &[b.pid, d.pid]);
    wait_blocked(&mut ctl, d.pid, &[b.pid, c.pid]);
    // A waiter is marked blocked in the lock table just before it reports its
    // wait event: read until both show one.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut waits: Vec<String> = loop {
        let w: Vec<String> = [c.pid, d.pid]
            .iter()
            .map(|pid| {
                ctl.q(&format!("SELECT coalesce(wait_event_type || ':' || wait_event, '') FROM pg_stat_activity WHERE pid = {pid}"))
                    .one()
            })
            .collect();
        if w.iter().all(|e| e.starts_with("Lock:")) || Instant::now() > deadline {
            break w;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    waits.sort();
    ok(&b.q("COMMIT"));
    ok(&c.reply());
    ok(&d.reply());
    (waits, ctl.q("SELECT n FROM hot_row").one())
}

/// The wait events of a queue on one row, ferrogres against PostgreSQL 15
/// (the heap README's "Waiting for a row that moved"). In both, the first
/// waiter on a version holds its tuple lock and waits for the updater's
/// transaction, and later ones queue on the tuple lock. When the updater
/// commits, the row has a new version: PostgreSQL's READ COMMITTED re-check
/// waits for the transaction modifying the newest version directly, so c and
/// d both wait on b's transactionid; ferrogres's re-check updates the newest
/// version through the same protocol, so one of them waits on b's transaction
/// and the other queues behind it on the new version's tuple lock.
#[test]
fn queue_on_an_updated_row_against_postgres() {
    let srv = Server::start_temp(&[]);
    let (waits, n) = queue_behind_updater(srv.port);
    assert_eq!(waits, ["Lock:transactionid", "Lock:tuple"]);
    assert_eq!(n, "4");
    let dir = tempfile::tempdir().unwrap();
    let pg = Pg15::start(&dir.path().join("pg"));
    let (waits, n) = queue_behind_updater(pg.port);
    assert_eq!(waits, ["Lock:transactionid", "Lock:transactionid"]);
    assert_eq!(n, "4");
}

#[test]
fn sampler_sees_a_row_lock_wait() {
    let srv = Server::start_temp(&["-c", "pg_wait_sampling.period=10"]);
    let mut ctl = Client::connect(srv.port);
    ok(&ctl.q("SELECT pg_wait_sampling_reset_profile()"));
    let (_, b, _) = block_for(&srv, Duration::from_millis(500));
    // About 50 samples at 10 ms; a loaded machine may take fewer.
    let hist = num(
        &mut ctl,
        &format!("SELECT count(*) FROM pg_wait_sampling_history WHERE pid = {b} AND event_type = 'Lock' AND event = 'transactionid'"),
    );
    assert!(hist >= 5.0, "history samples: {hist}");
    let prof = num(
        &mut ctl,
        &format!("SELECT sum(count) FROM pg_wait_sampling_profile WHERE pid = {b} AND event_type = 'Lock' AND event = 'transactionid'"),
    );
    assert!(prof >= hist.min(5000.0), "profile {prof} < history {hist}");
    // The timestamps are within the wait.
    let r = ctl.q(&format!(
        "SELECT max(ts) - min(ts) < interval '5 seconds', max(ts) <= now() FROM pg_wait_sampling_history WHERE pid = {b} AND event = 'transactionid'"
    ));
    assert_eq!(r.rows, vec![vec![Some("t".into()), Some("t".into())]]);
    // Folded stacks, as flamegraph.pl and inferno read them.
    let folded = ctl.q("SELECT ferrogres_wait_sampling_folded()").one();
    // The last frame is the waiting statement's query id (compute_query_id).
    let line = folded.lines().find(|l| l.starts_with("client backend;Lock;transactionid;")).unwrap_or_else(|| panic!("{folded}"));
    let id: i64 = line.split(';').nth(3).and_then(|f| f.split(' ').next()).and_then(|f| f.parse().ok()).unwrap_or(0);
    assert_ne!(id, 0, "{line}");
    let n: u64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(n as f64 >= prof, "{line} vs {prof}");
    assert!(folded.lines().all(|l| l.split(';').count() == 4 && l.rsplit(' ').next().unwrap().parse::<u64>().is_ok()), "{folded}");
    // Reset: the lock wait is gone from the profile, not from the history.
    ok(&ctl.q("SELECT pg_wait_sampling_reset_profile()"));
    let after = num(&mut ctl, &format!("SELECT count(*) FROM pg_wait_sampling_profile WHERE pid = {b} AND event = 'transactionid'"));
    assert_eq!(after, 0.0);
    assert!(num(&mut ctl, &format!("SELECT count(*) FROM pg_wait_sampling_history WHERE pid = {b} AND event = 'transactionid'")) >= hist);
}
