//! Heavyweight locks taken by SQL, between real sessions: relation locks and
//! their conflicts, LOCK TABLE (NOWAIT, 25P01), lock_timeout, deadlocks between
//! two sessions, query cancel during a lock wait, advisory locks, and
//! pg_isolation_test_session_is_blocked. Each test starts the `ferrogres` binary
//! and talks the protocol through a small raw client, so one session can be
//! left waiting while another acts.

mod common;
use common::session_client::{ok, wait_blocked, Client, Reply};
use common::server::Server;
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

#[test]
fn select_waits_for_lock_table_and_drop_is_seen_after_the_wait() {
    let srv = Server::start_temp(&[]);
    let (mut a, mut b, mut ctl) = (Client::connect(srv.port), Client::connect(srv.port), Client::connect(srv.port));
    ok(&a.q("CREATE TABLE t (x int)"));
    ok(&a.q("INSERT INTO t VALUES (1), (2)"));
    ok(&a.q("BEGIN"));
    ok(&a.q("LOCK TABLE t IN ACCESS EXCLUSIVE MODE"));
    let before = ctl.q("SELECT clock_timestamp()").one();
    b.send("SELECT count(*) FROM t");
    wait_blocked(&mut ctl, b.pid, &[a.pid]);
    // pg_locks.waitstart: when the waiter began to wait; NULL for granted locks.
    let q = format!(
        "SELECT bool_and(waitstart >= '{before}' AND waitstart <= clock_timestamp()) FROM pg_locks WHERE pid = {} AND NOT granted",
        b.pid
    );
    assert_eq!(ctl.q(&q).one(), "t");
    assert_eq!(ctl.q(&format!("SELECT count(*) FROM pg_locks WHERE pid = {} AND granted AND waitstart IS NOT NULL", a.pid)).one(), "0");
    assert!(!ctl.q(&format!("SELECT pg_isolation_test_session_is_blocked({}, '{{{}}}')", b.pid, ctl.pid)).one().eq("t"));
    ok(&a.q("COMMIT"));
    assert_eq!(b.reply().one(), "2");

    // A writer's RowExclusiveLock blocks LOCK ... IN SHARE MODE; the table is
    // dropped while a SELECT waits: it sees the new catalog state.
    ok(&a.q("BEGIN"));
    ok(&a.q("DROP TABLE t"));
    b.send("SELECT count(*) FROM t");
    wait_blocked(&mut ctl, b.pid, &[a.pid]);
    ok(&a.q("COMMIT"));
    let r = b.reply();
    assert_eq!(r.error.as_ref().map(|e| (e.0.as_str(), e.1.as_str())), Some(("42P01", "relation \"t\" does not exist")));
}

#[test]
fn lock_table_nowait_outside_block_and_modes() {
    let srv = Server::start_temp(&[]);
    let (mut a, mut b) = (Client::connect(srv.port), Client::connect(srv.port));
    ok(&a.q("CREATE TABLE a1 (x int)"));
    let r = a.q("LOCK TABLE a1");
    assert_eq!(r.error.unwrap(), ("25P01".into(), "LOCK TABLE can only be used in transaction blocks".into(), String::new()));
    ok(&a.q("BEGIN"));
    ok(&a.q("INSERT INTO a1 VALUES (1)")); // RowExclusiveLock
    ok(&b.q("BEGIN"));
    // ROW EXCLUSIVE does not conflict with itself; SHARE does.
    ok(&b.q("LOCK TABLE a1 IN ROW EXCLUSIVE MODE NOWAIT"));
    let r = b.q("LOCK TABLE a1 IN SHARE MODE NOWAIT");
    assert_eq!(r.error.unwrap(), ("55P03".into(), "could not obtain lock on relation \"a1\"".into(), String::new()));
    // The failed block released b's locks at the error: a can take SHARE ROW EXCLUSIVE.
    ok(&a.q("LOCK TABLE a1 IN SHARE ROW EXCLUSIVE MODE NOWAIT"));
    assert_eq!(b.q("ROLLBACK").tags, vec!["ROLLBACK"]);
    ok(&a.q("COMMIT"));
    let r = a.q("BEGIN; LOCK nosuch; COMMIT");
    assert_eq!(r.code(), "42P01");
}

#[test]
fn lock_timeout_and_cancel_end_a_lock_wait() {
    let srv = Server::start_temp(&[]);
    let (mut a, mut b, mut ctl) = (Client::connect(srv.port), Client::connect(srv.port), Client::connect(srv.port));
    ok(&a.q("CREATE TABLE t (x int)"));
    ok(&a.q("BEGIN"));
    ok(&a.q("LOCK TABLE t"));
    ok(&b.q("SET lock_timeout = '100ms'"));
    let started = Instant::now();
    let r = b.q("SELECT * FROM t");
    assert_eq!(r.error.unwrap().1, "canceling statement due to lock timeout");
    assert!(started.elapsed() >= Duration::from_millis(90));
    assert_eq!(r.tags.len(), 0);
    ok(&b.q("SET lock_timeout = 0"));
    b.send("SELECT * FROM t");
    wait_blocked(&mut ctl, b.pid, &[a.pid]);
    // CancelRequest on a new connection.
    let mut c = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
    let mut p = 16i32.to_be_bytes().to_vec();
    p.extend(80877102i32.to_be_bytes());
    p.extend(b.pid.to_be_bytes());
    p.extend(b.secret.to_be_bytes());
    c.write_all(&p).unwrap();
    let r = b.reply();
    assert_eq!(r.error.unwrap().0, "57014");
    ok(&a.q("COMMIT"));
    ok(&b.q("SELECT * FROM t"));
}

#[test]
fn deadlock_between_two_sessions_fails_one_and_lets_the_other_proceed() {
    let srv = Server::start_temp(&[]);
    let (mut a, mut b, mut ctl) = (Client::connect(srv.port), Client::connect(srv.port), Client::connect(srv.port));
    ok(&a.q("CREATE TABLE t1 (x int)"));
    ok(&a.q("CREATE TABLE t2 (x int)"));
    ok(&a.q("BEGIN; SET deadlock_timeout = '100s'"));
    ok(&b.q("BEGIN; SET deadlock_timeout = '10ms'"));
    ok(&a.q("LOCK TABLE t1"));
    ok(&b.q("LOCK TABLE t2"));
    a.send("LOCK TABLE t2");
    wait_blocked(&mut ctl, a.pid, &[b.pid]);
    let r = b.q("LOCK TABLE t1");
    let (code, msg, detail) = r.error.unwrap();
    assert_eq!((code.as_str(), msg.as_str()), ("40P01", "deadlock detected"));
    assert!(detail.starts_with(&format!("Process {} waits for AccessExclusiveLock on relation ", b.pid)), "{detail}");
    assert!(detail.contains(&format!("blocked by process {}.", a.pid)), "{detail}");
    // b's transaction failed and released its locks: a proceeds at once.
    assert_eq!(a.reply().tags, vec!["LOCK TABLE"]);
    ok(&b.q("ROLLBACK"));
    ok(&a.q("COMMIT"));
}

#[test]
fn advisory_locks() {
    let srv = Server::start_temp(&[]);
    let (mut a, mut b, mut ctl) = (Client::connect(srv.port), Client::connect(srv.port), Client::connect(srv.port));
    // void: not NULL, the empty string.
    assert_eq!(a.q("SELECT pg_advisory_lock(1)").rows, vec![vec![Some(String::new())]]);
    assert_eq!(a.q("SELECT pg_advisory_unlock_all() IS NOT NULL").one(), "t");
    assert_eq!(a.q("SELECT pg_advisory_lock(1)").rows.len(), 1);
    assert_eq!(b.q("SELECT pg_try_advisory_lock(1)").one(), "f");
    assert_eq!(b.q("SELECT pg_try_advisory_lock_shared(1)").one(), "f");
    assert_eq!(b.q("SELECT pg_try_advisory_lock(1, 1)").one(), "t");
    let r = b.q("SELECT pg_advisory_unlock(1)");
    assert_eq!(r.one(), "f");
    assert_eq!(r.notices, vec![("WARNING".to_string(), "you don't own a lock of type ExclusiveLock".to_string())]);
    b.send("SELECT pg_advisory_lock(1)");
    wait_blocked(&mut ctl, b.pid, &[a.pid]);
    assert_eq!(a.q("SELECT pg_advisory_unlock(1)").one(), "t");
    ok(&b.reply());
    ok(&b.q("SELECT pg_advisory_unlock_all()"));
    // Transaction-level locks end with the transaction; shared ones share.
    ok(&a.q("BEGIN"));
    ok(&a.q("SELECT pg_advisory_xact_lock_shared(7)"));
    assert_eq!(b.q("SELECT pg_try_advisory_xact_lock_shared(7)").one(), "t");
    assert_eq!(b.q("SELECT pg_try_advisory_xact_lock(7)").one(), "f");
    ok(&a.q("COMMIT"));
    assert_eq!(b.q("SELECT pg_try_advisory_xact_lock(7)").one(), "t");
}

#[test]
fn for_update_waits_then_follows_the_update_in_read_committed() {
    let srv = Server::start_temp(&[]);
    let (mut a, mut b, mut ctl) = (Client::connect(srv.port), Client::connect(srv.port), Client::connect(srv.port));
    ok(&a.q("CREATE TABLE foo (id int, v int)"));
    ok(&a.q("INSERT INTO foo VALUES (1, 10), (2, 20), (3, 30)"));
    ok(&a.q("BEGIN"));
    ok(&a.q("UPDATE foo SET v = v + 1 WHERE id = 1"));
    ok(&a.q("UPDATE foo SET v = 0 WHERE id = 2"));
    ok(&b.q("BEGIN"));
    b.send("SELECT id, v FROM foo WHERE v > 5 ORDER BY id FOR UPDATE");
    wait_blocked(&mut ctl, b.pid, &[a.pid]);
    ok(&a.q("COMMIT"));
    // Row 1 is returned as its new version; row 2 no longer qualifies.
    let r = b.reply();
    ok(&r);
    let rows: Vec<Vec<String>> = r.rows.iter().map(|r| r.iter().map(|v| v.clone().unwrap()).collect()).collect();
    assert_eq!(rows, vec![vec!["1", "11"], vec!["3", "30"]]);
    // b holds the row locks now: a's update of row 3 waits for b's commit.
    a.send("UPDATE foo SET v = 31 WHERE id = 3");
    wait_blocked(&mut ctl, a.pid, &[b.pid]);
    ok(&b.q("COMMIT"));
    assert_eq!(a.reply().tags, vec!["UPDATE 1"]);

    // NOWAIT and SKIP LOCKED against a row lock.
    ok(&a.q("BEGIN"));
    ok(&a.q("SELECT * FROM foo WHERE id = 1 FOR SHARE"));
    let r = b.q("SELECT * FROM foo WHERE id = 1 FOR UPDATE NOWAIT");
    assert_eq!(r.error.unwrap().1, "could not obtain lock on row in relation \"foo\"");
    let r = b.q("SELECT id FROM foo ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1");
    assert_eq!(r.one(), "2");
    ok(&a.q("COMMIT"));
}

#[test]
fn for_update_of_a_concurrently_updated_row_is_40001_in_repeatable_read() {
    let srv = Server::start_temp(&[]);
    let (mut a, mut b, mut ctl) = (Client::connect(srv.port), Client::connect(srv.port), Client::connect(srv.port));
    ok(&a.q("CREATE TABLE foo (id int, v int)"));
    ok(&a.q("INSERT INTO foo VALUES (1, 10)"));
    ok(&b.q("BEGIN ISOLATION LEVEL REPEATABLE READ"));
    ok(&b.q("SELECT * FROM foo"));
    ok(&a.q("BEGIN"));
    ok(&a.q("UPDATE foo SET v = 11"));
    b.send("SELECT * FROM foo FOR UPDATE");
    wait_blocked(&mut ctl, b.pid, &[a.pid]);
    ok(&a.q("COMMIT"));
    let r = b.reply();
    assert_eq!(r.error.map(|e| (e.0, e.1)), Some(("40001".into(), "could not serialize access due to concurrent update".into())));
    ok(&b.q("ROLLBACK"));
}

#[test]
fn delete_waits_for_the_updater_and_rechecks_the_new_version() {
    let srv = Server::start_temp(&[]);
    let (mut a, mut b, mut ctl) = (Client::connect(srv.port), Client::connect(srv.port), Client::connect(srv.port));
    ok(&a.q("CREATE TABLE foo (id int, v int)"));
    ok(&a.q("INSERT INTO foo VALUES (1, 10), (2, 20)"));
    ok(&a.q("BEGIN"));
    ok(&a.q("UPDATE foo SET v = 0 WHERE id = 1"));
    ok(&a.q("UPDATE foo SET v = 25 WHERE id = 2"));
    b.send("DELETE FROM foo WHERE v > 5 RETURNING id, v");
    wait_blocked(&mut ctl, b.pid, &[a.pid]);
    ok(&a.q("COMMIT"));
    let r = b.reply();
    ok(&r);
    assert_eq!(r.rows, vec![vec![Some("2".to_string()), Some("25".to_string())]]);
    assert_eq!(r.tags, vec!["DELETE 1"]);
    assert_eq!(a.q("SELECT count(*) FROM foo").one(), "1");
}

#[test]
fn pg_locks_shows_what_the_sessions_hold_and_await() {
    let srv = Server::start_temp(&[]);
    let (mut a, mut b, mut ctl) = (Client::connect(srv.port), Client::connect(srv.port), Client::connect(srv.port));
    ok(&a.q("CREATE TABLE t (x int)"));
    ok(&a.q("BEGIN"));
    ok(&a.q("SELECT * FROM t"));
    ok(&a.q("SELECT pg_advisory_xact_lock(1, 2)"));
    let q = |pid: i32| {
        format!(
            "SELECT locktype, mode, granted, fastpath, objid, objsubid FROM pg_locks \
             WHERE pid = {pid} AND (relation IS NULL OR relation <> '12073') ORDER BY locktype, mode"
        )
    };
    let rows = |r: Reply| -> Vec<String> {
        assert!(r.error.is_none(), "{:?}", r.error);
        r.rows.iter().map(|row| row.iter().map(|v| v.clone().unwrap_or_default()).collect::<Vec<_>>().join(" ")).collect()
    };
    // A weak relation lock on the fast path, the advisory lock in the shared table.
    // The transaction's own virtualxid, held in fast-path form.
    assert_eq!(
        rows(ctl.q(&q(a.pid))),
        vec!["advisory ExclusiveLock t f 2 2", "relation AccessShareLock t t  ", "virtualxid ExclusiveLock t t  "]
    );
    // b waits for ACCESS EXCLUSIVE: a's lock moved to the shared table, b's shows granted = f.
    ok(&b.q("BEGIN"));
    b.send("LOCK TABLE t");
    wait_blocked(&mut ctl, b.pid, &[a.pid]);
    assert_eq!(
        rows(ctl.q(&q(a.pid))),
        vec!["advisory ExclusiveLock t f 2 2", "relation AccessShareLock t f  ", "virtualxid ExclusiveLock t t  "]
    );
    assert_eq!(rows(ctl.q(&q(b.pid))), vec!["relation AccessExclusiveLock f f  ", "virtualxid ExclusiveLock t t  "]);
    let r = ctl.q("SELECT count(*) FROM pg_locks WHERE NOT granted");
    assert_eq!(r.one(), "1");
    ok(&a.q("COMMIT"));
    assert_eq!(b.reply().tags, vec!["LOCK TABLE"]);
    ok(&b.q("COMMIT"));
    assert_eq!(rows(ctl.q(&q(a.pid))), Vec::<String>::new());
}

/// Utility statements lock their tables as PostgreSQL does: CREATE INDEX
/// (ShareLock) waits for a transaction that inserted rows, so the index holds
/// them; TRUNCATE (AccessExclusiveLock) waits for a reader; COPY FROM
/// (RowExclusiveLock) waits for LOCK ... IN SHARE MODE.
#[test]
fn create_index_truncate_and_copy_take_relation_locks() {
    let srv = Server::start_temp(&[]);
    let (mut a, mut b, mut ctl) = (Client::connect(srv.port), Client::connect(srv.port), Client::connect(srv.port));
    ok(&a.q("CREATE TABLE t (k int, v text)"));
    ok(&a.q("INSERT INTO t VALUES (1, 'one')"));

    // A writer in progress: CREATE INDEX waits for it, then indexes its rows.
    ok(&a.q("BEGIN"));
    ok(&a.q("INSERT INTO t VALUES (2, 'two')"));
    b.send("CREATE INDEX t_k ON t (k)");
    wait_blocked(&mut ctl, b.pid, &[a.pid]);
    ok(&a.q("INSERT INTO t VALUES (3, 'three')"));
    ok(&a.q("COMMIT"));
    ok(&b.reply());
    // `k = c` reads through the index (an index scan is chosen for it).
    for k in 1..=3 {
        assert_eq!(ctl.q(&format!("SELECT count(*) FROM t WHERE k = {k}")).one(), "1", "k = {k}");
    }

    // A reader holds AccessShareLock: TRUNCATE waits for it.
    ok(&a.q("BEGIN"));
    assert_eq!(a.q("SELECT count(*) FROM t").one(), "3");
    b.send("TRUNCATE t");
    wait_blocked(&mut ctl, b.pid, &[a.pid]);
    assert_eq!(a.q("SELECT count(*) FROM t").one(), "3");
    ok(&a.q("COMMIT"));
    ok(&b.reply());
    assert_eq!(ctl.q("SELECT count(*) FROM t").one(), "0");

    // SHARE mode blocks writers, COPY FROM among them.
    ok(&a.q("BEGIN"));
    ok(&a.q("LOCK TABLE t IN SHARE MODE"));
    b.send("COPY t FROM '/dev/null'");
    wait_blocked(&mut ctl, b.pid, &[a.pid]);
    ok(&a.q("COMMIT"));
    ok(&b.reply());
}

#[test]
fn each_transaction_holds_its_virtualxid() {
    let srv = Server::start_temp(&[]);
    let (mut a, mut ctl) = (Client::connect(srv.port), Client::connect(srv.port));
    let vx = |ctl: &mut Client, pid: i32| -> Vec<String> {
        let r = ctl.q(&format!(
            "SELECT virtualxid, virtualtransaction, mode, granted, fastpath, virtualxid = virtualtransaction \
             FROM pg_locks WHERE locktype = 'virtualxid' AND pid = {pid}"
        ));
        assert!(r.error.is_none(), "{:?}", r.error);
        r.rows.iter().map(|row| row.iter().map(|v| v.clone().unwrap_or_default()).collect::<Vec<_>>().join(" ")).collect()
    };
    // Idle: no transaction, no virtualxid.
    assert!(vx(&mut ctl, a.pid).is_empty());
    ok(&a.q("BEGIN"));
    ok(&a.q("SELECT 1"));
    let first = vx(&mut ctl, a.pid);
    assert_eq!(first.len(), 1, "{first:?}");
    assert!(first[0].ends_with(" ExclusiveLock t t t"), "{first:?}");
    // The session sees its own, as in PostgreSQL.
    let own = a.q("SELECT count(*) FROM pg_locks WHERE locktype = 'virtualxid' AND pid = pg_backend_pid()");
    assert_eq!(own.one(), "1");
    ok(&a.q("COMMIT"));
    assert!(vx(&mut ctl, a.pid).is_empty());
    // The next transaction has the next local xid of the same backend.
    ok(&a.q("BEGIN"));
    let second = vx(&mut ctl, a.pid);
    ok(&a.q("SELECT 1"));
    let second = if second.is_empty() { vx(&mut ctl, a.pid) } else { second };
    let lxid = |s: &str| -> (String, u64) {
        let v = s.split(' ').next().unwrap();
        let (b, l) = v.split_once('/').unwrap();
        (b.to_string(), l.parse().unwrap())
    };
    let (b1, l1) = lxid(&first[0]);
    let (b2, l2) = lxid(&second[0]);
    assert_eq!(b1, b2);
    assert!(l2 > l1, "{first:?} then {second:?}");
    ok(&a.q("ROLLBACK"));
    assert!(vx(&mut ctl, a.pid).is_empty());
}

#[test]
fn rollback_to_savepoint_releases_locks_taken_after_it() {
    let srv = Server::start_temp(&[]);
    let (mut a, mut b, mut ctl) = (Client::connect(srv.port), Client::connect(srv.port), Client::connect(srv.port));
    ok(&a.q("CREATE TABLE t (x int); CREATE TABLE u (x int); INSERT INTO t VALUES (1), (2)"));
    ok(&a.q("BEGIN"));
    ok(&a.q("LOCK TABLE u IN ACCESS EXCLUSIVE MODE"));
    ok(&a.q("SAVEPOINT s"));
    ok(&a.q("LOCK TABLE t IN ACCESS EXCLUSIVE MODE"));
    ok(&a.q("SELECT pg_advisory_xact_lock(42)"));
    b.send("SELECT count(*) FROM t");
    wait_blocked(&mut ctl, b.pid, &[a.pid]);
    ok(&a.q("ROLLBACK TO SAVEPOINT s"));
    assert_eq!(b.reply().one(), "2");
    assert_eq!(b.q("SELECT pg_try_advisory_lock(42)").one(), "t");
    assert_eq!(b.q("SELECT pg_advisory_unlock(42)").one(), "t");
    // The lock taken before the savepoint is still held.
    b.send("SELECT count(*) FROM u");
    wait_blocked(&mut ctl, b.pid, &[a.pid]);

    // RELEASE SAVEPOINT hands the locks to the enclosing level: a later ROLLBACK TO
    // of that level releases them, a ROLLBACK TO of a deeper one does not.
    ok(&a.q("SAVEPOINT s1"));
    ok(&a.q("SAVEPOINT s2"));
    ok(&a.q("LOCK TABLE t IN SHARE MODE"));
    ok(&a.q("RELEASE SAVEPOINT s2"));
    ok(&a.q("SAVEPOINT s3"));
    ok(&a.q("ROLLBACK TO SAVEPOINT s3"));
    let mut c = Client::connect(srv.port);
    c.send("INSERT INTO t VALUES (3)");
    wait_blocked(&mut ctl, c.pid, &[a.pid]);
    ok(&a.q("ROLLBACK TO SAVEPOINT s1"));
    assert_eq!(c.reply().tags, vec!["INSERT 0 1"]);
    ok(&a.q("COMMIT"));
    assert_eq!(b.reply().one(), "0");
}

#[test]
fn rollback_to_a_deeper_savepoint_keeps_the_outer_levels_xid_locks() {
    let srv = Server::start_temp(&[]);
    let (mut a, mut b, mut ctl) = (Client::connect(srv.port), Client::connect(srv.port), Client::connect(srv.port));
    ok(&a.q("CREATE TABLE t (x int); INSERT INTO t VALUES (1), (2)"));
    ok(&a.q("BEGIN"));
    ok(&a.q("SAVEPOINT s1"));
    ok(&a.q("SAVEPOINT s2"));
    // The first write gets xids for the top level, s1 and s2 at once.
    ok(&a.q("UPDATE t SET x = 20 WHERE x = 2"));
    ok(&a.q("ROLLBACK TO SAVEPOINT s2"));
    ok(&a.q("RELEASE SAVEPOINT s2"));
    // This row version carries s1's xid, whose lock must still be held.
    ok(&a.q("UPDATE t SET x = 10 WHERE x = 1"));
    b.send("UPDATE t SET x = 11 WHERE x = 1");
    wait_blocked(&mut ctl, b.pid, &[a.pid]);
    ok(&a.q("COMMIT"));
    assert_eq!(b.reply().tags, vec!["UPDATE 0"]);
    assert_eq!(b.q("SELECT string_agg(x::text, ',') FROM (SELECT x FROM t ORDER BY x) s").one(), "2,10");
}

#[test]
fn update_through_a_view_waits_for_the_updater_and_rechecks_view_and_statement_conditions() {
    let srv = Server::start_temp(&[]);
    let (mut a, mut b, mut ctl) = (Client::connect(srv.port), Client::connect(srv.port), Client::connect(srv.port));
    ok(&a.q("CREATE TABLE foo (id int, v int)"));
    ok(&a.q("INSERT INTO foo VALUES (1, 10), (2, 20), (3, 30)"));
    ok(&a.q("CREATE VIEW big AS SELECT id, v, v * 2 AS v2 FROM foo WHERE v > 5"));
    ok(&a.q("BEGIN"));
    ok(&a.q("UPDATE foo SET v = v + 1 WHERE id = 1"));
    // Row 2 leaves the view (its WHERE), row 3 stops matching the statement's.
    ok(&a.q("UPDATE foo SET v = 0 WHERE id = 2"));
    ok(&a.q("UPDATE foo SET v = 29 WHERE id = 3"));
    b.send("UPDATE big SET v = v + 100 WHERE v2 >= 20 AND v2 <> 58 RETURNING id, v, v2");
    wait_blocked(&mut ctl, b.pid, &[a.pid]);
    ok(&a.q("COMMIT"));
    let r = b.reply();
    ok(&r);
    assert_eq!(r.rows, vec![vec![Some("1".to_string()), Some("111".to_string()), Some("222".to_string())]]);
    assert_eq!(r.tags, vec!["UPDATE 1"]);
    // DELETE through the view waits the same way.
    ok(&a.q("BEGIN"));
    ok(&a.q("UPDATE foo SET v = 1 WHERE id = 1"));
    b.send("DELETE FROM big WHERE id = 1");
    wait_blocked(&mut ctl, b.pid, &[a.pid]);
    ok(&a.q("COMMIT"));
    assert_eq!(b.reply().tags, vec!["DELETE 0"]);
    assert_eq!(a.q("SELECT string_agg(id || ':' || v, ',' ORDER BY id) FROM foo").one(), "1:1,2:0,3:29");
}

/// The relation locks `pid` holds, as `relname:mode` sorted (PostgreSQL's
/// pg_locks joined with pg_class).
fn relation_locks(ctl: &mut Client, pid: i32) -> String {
    ctl.q(&format!(
        "SELECT string_agg(c.relname || ':' || l.mode, ' ' ORDER BY c.relname, l.mode) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation \
         WHERE l.pid = {pid} AND l.locktype = 'relation' AND c.relname NOT LIKE 'pg_%'"
    ))
    .one()
}

/// ALTER TABLE ... ADD FOREIGN KEY ... NOT VALID takes ShareRowExclusiveLock
/// on both tables and VALIDATE CONSTRAINT ShareUpdateExclusiveLock (and
/// RowShareLock on the referenced table), as in PostgreSQL 15: readers go on
/// past either, writers past VALIDATE, also while a VALIDATE is running
/// (waiting for its lock); pg_locks shows those modes (issue 18, item 15).
#[test]
fn add_foreign_key_not_valid_and_validate_constraint_let_readers_through() {
    let srv = Server::start_temp(&[]);
    let (mut a, mut b, mut c, mut ctl) = (Client::connect(srv.port), Client::connect(srv.port), Client::connect(srv.port), Client::connect(srv.port));
    ok(&a.q("CREATE TABLE pa (i int PRIMARY KEY); CREATE TABLE ch (a_id int)"));
    ok(&a.q("INSERT INTO pa VALUES (0), (1), (2), (3); INSERT INTO ch SELECT g % 4 FROM generate_series(1, 1000) g; INSERT INTO ch VALUES (7)"));

    // ADD FOREIGN KEY ... NOT VALID: the existing row 7 is not checked.
    ok(&a.q("BEGIN"));
    ok(&a.q("ALTER TABLE ch ADD CONSTRAINT chfk FOREIGN KEY (a_id) REFERENCES pa (i) NOT VALID"));
    assert_eq!(relation_locks(&mut ctl, a.pid), "ch:ShareRowExclusiveLock pa:ShareRowExclusiveLock");
    assert_eq!(b.q("SELECT count(*) FROM ch").one(), "1001");
    assert_eq!(b.q("SELECT i FROM pa WHERE i = 1 FOR UPDATE").one(), "1");
    // A writer of either table waits.
    b.send("INSERT INTO ch VALUES (0)");
    wait_blocked(&mut ctl, b.pid, &[a.pid]);
    ok(&a.q("COMMIT"));
    ok(&b.reply());
    assert_eq!(b.q("SELECT convalidated::text FROM pg_constraint WHERE conname = 'chfk'").one(), "false");
    // Enforced on new rows at once.
    assert_eq!(b.q("INSERT INTO ch VALUES (9)").code(), "23503");

    // VALIDATE CONSTRAINT: readers and writers of both tables go on.
    ok(&a.q("BEGIN"));
    let r = a.q("ALTER TABLE ch VALIDATE CONSTRAINT chfk");
    let (code, msg, detail) = r.error.expect("row 7 has no parent");
    assert_eq!((code.as_str(), msg.as_str(), detail.as_str()), ("23503", "insert or update on table \"ch\" violates foreign key constraint \"chfk\"", "Key (a_id)=(7) is not present in table \"pa\"."));
    ok(&a.q("ROLLBACK"));
    ok(&b.q("DELETE FROM ch WHERE a_id = 7"));
    ok(&a.q("BEGIN"));
    ok(&a.q("ALTER TABLE ch VALIDATE CONSTRAINT chfk"));
    assert_eq!(relation_locks(&mut ctl, a.pid), "ch:ShareUpdateExclusiveLock pa:RowShareLock");
    assert_eq!(b.q("SELECT count(*) FROM ch").one(), "1001");
    ok(&b.q("INSERT INTO ch VALUES (1)"));
    ok(&b.q("UPDATE pa SET i = i WHERE i = 3"));
    // DDL that needs more waits.
    c.send("ALTER TABLE ch ADD COLUMN z int");
    wait_blocked(&mut ctl, c.pid, &[a.pid]);
    ok(&a.q("COMMIT"));
    ok(&c.reply());
    assert_eq!(b.q("SELECT convalidated::text FROM pg_constraint WHERE conname = 'chfk'").one(), "true");

    // A VALIDATE waiting for its lock holds back neither readers nor writers.
    ok(&a.q("ALTER TABLE ch ADD CONSTRAINT chfk2 FOREIGN KEY (a_id) REFERENCES pa (i) NOT VALID"));
    ok(&c.q("BEGIN; LOCK TABLE ch IN SHARE UPDATE EXCLUSIVE MODE"));
    a.send("ALTER TABLE ch VALIDATE CONSTRAINT chfk2");
    wait_blocked(&mut ctl, a.pid, &[c.pid]);
    assert_eq!(b.q("SELECT count(*) FROM ch").one(), "1002");
    ok(&b.q("INSERT INTO ch VALUES (2)"));
    ok(&c.q("COMMIT"));
    ok(&a.reply());
    assert_eq!(b.q("SELECT string_agg(conname || '=' || convalidated::text, ',' ORDER BY conname) FROM pg_constraint WHERE conrelid = 'ch'::regclass").one(), "chfk=true,chfk2=true");
}

/// The relation locks DDL statements take, in a transaction, compared with
/// what PostgreSQL 15's pg_locks shows for the same statements (issue 18,
/// item 15). Left out of PostgreSQL's lists: the AccessShareLocks its internal
/// queries (RI checks, index builds) take besides the statement's own mode,
/// and the locks on relations the statement creates.
#[test]
fn ddl_lock_modes_match_postgres_15() {
    let srv = Server::start_temp(&[]);
    let mut a = Client::connect(srv.port);
    let setup = "DROP TABLE IF EXISTS lnew, lc, lp, lt; DROP SEQUENCE IF EXISTS ls; DROP SEQUENCE IF EXISTS ls2; \
                 CREATE TABLE lp (i int PRIMARY KEY, j int); CREATE TABLE lc (a int, b int, c text); CREATE TABLE lt (x int); \
                 CREATE INDEX lc_b ON lc (b); CREATE SEQUENCE ls; INSERT INTO lp VALUES (1, 1); INSERT INTO lc VALUES (1, 1, 'x'); \
                 ALTER TABLE lc ADD CONSTRAINT lc_fk FOREIGN KEY (a) REFERENCES lp (i) NOT VALID; ALTER TABLE lc ADD CONSTRAINT lc_chk CHECK (b > 0)";
    let cases: &[(&str, &str)] = &[
        ("ALTER TABLE lc ADD FOREIGN KEY (b) REFERENCES lp (i) NOT VALID", "lc:ShareRowExclusiveLock lp:ShareRowExclusiveLock"),
        ("ALTER TABLE lc ADD FOREIGN KEY (b) REFERENCES lp (i)", "lc:ShareRowExclusiveLock lp:ShareRowExclusiveLock"),
        ("ALTER TABLE lc VALIDATE CONSTRAINT lc_fk", "lc:ShareUpdateExclusiveLock lp:RowShareLock"),
        ("ALTER TABLE lc VALIDATE CONSTRAINT lc_chk", "lc:ShareUpdateExclusiveLock"),
        ("ALTER TABLE lc ADD CONSTRAINT c2 CHECK (b > 0)", "lc:AccessExclusiveLock"),
        ("ALTER TABLE lt ADD PRIMARY KEY (x)", "lt:AccessExclusiveLock"),
        ("ALTER TABLE lt ADD UNIQUE (x)", "lt:AccessExclusiveLock"),
        ("ALTER TABLE lc ADD COLUMN d int", "lc:AccessExclusiveLock"),
        ("ALTER TABLE lc DROP COLUMN c", "lc:AccessExclusiveLock"),
        ("ALTER TABLE lc ALTER COLUMN b SET DEFAULT 1", "lc:AccessExclusiveLock"),
        ("ALTER TABLE lc ALTER COLUMN b DROP DEFAULT", "lc:AccessExclusiveLock"),
        ("ALTER TABLE lc ALTER COLUMN b SET NOT NULL", "lc:AccessExclusiveLock"),
        ("ALTER TABLE lc ALTER COLUMN b DROP NOT NULL", "lc:AccessExclusiveLock"),
        ("ALTER TABLE lc ALTER COLUMN b TYPE bigint", "lc:AccessExclusiveLock"),
        ("ALTER TABLE lc ADD COLUMN d int, VALIDATE CONSTRAINT lc_fk", "lc:AccessExclusiveLock lp:RowShareLock"),
        ("ALTER TABLE lc VALIDATE CONSTRAINT lc_fk, ADD FOREIGN KEY (b) REFERENCES lp (i) NOT VALID", "lc:ShareRowExclusiveLock lp:RowShareLock lp:ShareRowExclusiveLock"),
        ("ALTER TABLE lc RENAME TO lc2", "lc2:AccessExclusiveLock"),
        ("ALTER TABLE lc RENAME COLUMN c TO c2", "lc:AccessExclusiveLock"),
        ("ALTER TABLE lc RENAME CONSTRAINT lc_chk TO lc_chk2", "lc:AccessExclusiveLock"),
        ("ALTER INDEX lc_b RENAME TO lc_b2", "lc_b2:ShareUpdateExclusiveLock"),
        ("ALTER TABLE lc_b RENAME TO lc_b2", "lc_b2:AccessExclusiveLock"),
        ("ALTER SEQUENCE ls RENAME TO ls2", "ls2:AccessExclusiveLock"),
        ("ALTER SEQUENCE ls INCREMENT BY 2", "ls:ShareRowExclusiveLock"),
        ("SELECT nextval('ls')", "ls:RowExclusiveLock"),
        ("CREATE INDEX lc_c ON lc (c)", "lc:ShareLock"),
        ("DROP INDEX lc_b", "lc:AccessExclusiveLock"),
        ("TRUNCATE lc", "lc:AccessExclusiveLock"),
        ("CREATE TABLE lnew (z int REFERENCES lp (i))", "lp:ShareRowExclusiveLock"),
        ("ANALYZE lc", "lc:ShareUpdateExclusiveLock"),
        ("LOCK TABLE lc IN SHARE MODE", "lc:ShareLock"),
    ];
    for (sql, want) in cases {
        ok(&a.q(setup));
        ok(&a.q("BEGIN"));
        let r = a.q(sql);
        assert!(r.error.is_none(), "{sql}: {:?}", r.error);
        // Asked in the same transaction, as PostgreSQL was (renamed relations
        // show their new names).
        let pid = a.pid;
        assert_eq!(relation_locks(&mut a, pid), *want, "{sql}");
        ok(&a.q("ROLLBACK"));
    }
}

/// VACUUM holds ShareUpdateExclusiveLock on each table while it works (at
/// session level: it runs outside a transaction): it waits for a
/// transaction holding a conflicting lock, and readers go on meanwhile.
#[test]
fn vacuum_waits_for_share_update_exclusive_and_readers_go_on() {
    let srv = Server::start_temp(&[]);
    let (mut a, mut b, mut ctl) = (Client::connect(srv.port), Client::connect(srv.port), Client::connect(srv.port));
    ok(&a.q("CREATE TABLE vt (x int); INSERT INTO vt SELECT generate_series(1, 100)"));
    ok(&a.q("BEGIN; LOCK TABLE vt IN SHARE UPDATE EXCLUSIVE MODE"));
    b.send("VACUUM vt");
    wait_blocked(&mut ctl, b.pid, &[a.pid]);
    let q = format!("SELECT mode || ':' || granted::text FROM pg_locks WHERE pid = {} AND locktype = 'relation'", b.pid);
    assert_eq!(ctl.q(&q).one(), "ShareUpdateExclusiveLock:false");
    assert_eq!(ctl.q("SELECT count(*) FROM vt").one(), "100");
    ok(&a.q("COMMIT"));
    assert_eq!(b.reply().tags, vec!["VACUUM"]);
    // Released when it ends.
    assert_eq!(ctl.q(&format!("SELECT count(*) FROM pg_locks WHERE pid = {} AND locktype = 'relation'", b.pid)).one(), "0");
}
