//! Deadlock detection: two- and three-way cycles on relations, a cycle through
//! transaction-id locks (the row-update deadlock), the DETAIL text, and that exactly
//! one backend of a cycle fails.

#![cfg(not(loom))]

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use ferrogres_engine::config::Settings;
use ferrogres_engine::lmgr::lock::{LockManager, LockMode, LockOptions, LockTag};
use ferrogres_engine::pgstat::BackendId;
use ferrogres_engine::Error;

fn manager() -> Arc<LockManager> {
    let s = Settings {
        deadlock_timeout_ms: 100,
        ..Settings::default()
    };
    let m = LockManager::new(&s, 8);
    for i in 0..8 {
        m.register_backend(BackendId(i), 4000 + i as i32).unwrap();
    }
    Arc::new(m)
}

fn rel(r: u32) -> LockTag {
    LockTag::Relation { db: 5, rel: r }
}

const AE: LockMode = LockMode::AccessExclusive;

fn detail(e: &Error) -> String {
    match e {
        Error::User {
            detail: Some(d), ..
        } => d.clone(),
        other => panic!("no detail: {other:?}"),
    }
}

fn wait_until_waiting(m: &LockManager, n: usize) {
    let t0 = Instant::now();
    while m.lock_status().iter().filter(|r| !r.granted).count() < n {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "waiters never queued"
        );
        thread::sleep(Duration::from_millis(1));
    }
}

/// A backend that locks `first`, then (after `delay`) `second`; on error it aborts
/// (releases everything) and returns the error; on success it commits.
fn worker(
    m: Arc<LockManager>,
    b: u32,
    first: LockTag,
    second: LockTag,
    barrier: Arc<Barrier>,
    delay: Duration,
) -> thread::JoinHandle<(Result<(), Error>, Duration)> {
    thread::spawn(move || {
        let me = BackendId(b);
        m.lock(me, first, AE, LockOptions::default()).unwrap();
        barrier.wait();
        thread::sleep(delay);
        let t0 = Instant::now();
        let r = m.lock(me, second, AE, LockOptions::default()).map(|_| ());
        let waited = t0.elapsed();
        if r.is_ok() {
            // Hold briefly, as a transaction would, then commit.
            thread::sleep(Duration::from_millis(5));
        }
        m.release_all(me, true).unwrap();
        (r, waited)
    })
}

#[test]
fn two_way_deadlock_has_one_victim_with_detail() {
    let m = manager();
    let bar = Arc::new(Barrier::new(2));
    // B0 starts waiting first; its check (after 100 ms) finds no cycle yet. B1 closes
    // the cycle 300 ms later and is the one whose check finds it.
    let t0 = worker(
        m.clone(),
        0,
        rel(100),
        rel(200),
        bar.clone(),
        Duration::ZERO,
    );
    let t1 = worker(
        m.clone(),
        1,
        rel(200),
        rel(100),
        bar,
        Duration::from_millis(300),
    );
    let (r0, _) = t0.join().unwrap();
    let (r1, w1) = t1.join().unwrap();
    assert!(r0.is_ok(), "B0 proceeds: {r0:?}");
    let e = r1.unwrap_err();
    assert_eq!(e.sqlstate().as_str(), "40P01");
    assert_eq!(e.to_string(), "deadlock detected");
    assert!(
        w1 >= Duration::from_millis(100) && w1 < Duration::from_secs(3),
        "{w1:?}"
    );
    assert_eq!(
        detail(&e),
        "Process 4001 waits for AccessExclusiveLock on relation 100 of database 5; blocked by process 4000.\n\
         Process 4000 waits for AccessExclusiveLock on relation 200 of database 5; blocked by process 4001."
    );
    match &e {
        Error::User { hint, .. } => {
            assert_eq!(hint.as_deref(), Some("See server log for query details."))
        }
        _ => unreachable!(),
    }
    assert!(m.lock_status().is_empty());
    m.check_invariants().unwrap();
}

#[test]
fn simultaneous_two_way_deadlock_exactly_one_fails() {
    for _ in 0..3 {
        let m = manager();
        let bar = Arc::new(Barrier::new(2));
        let t0 = worker(
            m.clone(),
            2,
            rel(300),
            rel(400),
            bar.clone(),
            Duration::ZERO,
        );
        let t1 = worker(m.clone(), 3, rel(400), rel(300), bar, Duration::ZERO);
        let rs = [t0.join().unwrap().0, t1.join().unwrap().0];
        let failed: Vec<_> = rs.iter().filter_map(|r| r.as_ref().err()).collect();
        assert_eq!(failed.len(), 1, "{rs:?}");
        assert_eq!(failed[0].sqlstate().as_str(), "40P01");
        assert_eq!(detail(failed[0]).lines().count(), 2);
        assert!(m.lock_status().is_empty());
    }
}

#[test]
fn three_way_deadlock() {
    let m = manager();
    let bar = Arc::new(Barrier::new(3));
    let t0 = worker(m.clone(), 0, rel(10), rel(11), bar.clone(), Duration::ZERO);
    let t1 = worker(m.clone(), 1, rel(11), rel(12), bar.clone(), Duration::ZERO);
    let t2 = worker(
        m.clone(),
        2,
        rel(12),
        rel(10),
        bar,
        Duration::from_millis(300),
    );
    let r0 = t0.join().unwrap().0;
    let r1 = t1.join().unwrap().0;
    let e = t2.join().unwrap().0.unwrap_err();
    assert!(r0.is_ok() && r1.is_ok(), "{r0:?} {r1:?}");
    assert_eq!(e.sqlstate().as_str(), "40P01");
    assert_eq!(
        detail(&e),
        "Process 4002 waits for AccessExclusiveLock on relation 10 of database 5; blocked by process 4000.\n\
         Process 4000 waits for AccessExclusiveLock on relation 11 of database 5; blocked by process 4001.\n\
         Process 4001 waits for AccessExclusiveLock on relation 12 of database 5; blocked by process 4002."
    );
    assert!(m.lock_status().is_empty());
}

#[test]
fn row_update_deadlock_on_transaction_ids() {
    // Each transaction holds ExclusiveLock on its xid and waits for the other's
    // (xact_lock_table_wait), as two UPDATEs of the same rows in opposite order do.
    let m = manager();
    let bar = Arc::new(Barrier::new(2));
    let spawn = |b: u32, mine: u32, theirs: u32, delay: u64| {
        let (m, bar) = (m.clone(), bar.clone());
        thread::spawn(move || {
            let me = BackendId(b);
            m.xact_lock_table_insert(me, mine).unwrap();
            bar.wait();
            thread::sleep(Duration::from_millis(delay));
            let r = m.xact_lock_table_wait(me, theirs, LockOptions::default());
            m.release_all(me, true).unwrap();
            r
        })
    };
    let a = spawn(4, 1234, 1235, 0);
    let b = spawn(5, 1235, 1234, 300);
    assert!(a.join().unwrap().is_ok());
    let e = b.join().unwrap().unwrap_err();
    assert_eq!(
        detail(&e),
        "Process 4005 waits for ShareLock on transaction 1234; blocked by process 4004.\n\
         Process 4004 waits for ShareLock on transaction 1235; blocked by process 4005."
    );
}

#[test]
fn no_false_deadlock_on_plain_wait() {
    let m = manager();
    m.lock(BackendId(0), rel(1), AE, LockOptions::default())
        .unwrap();
    let m1 = m.clone();
    let t = thread::spawn(move || {
        m1.lock(
            BackendId(1),
            rel(1),
            LockMode::AccessShare,
            LockOptions::default(),
        )
    });
    wait_until_waiting(&m, 1);
    thread::sleep(Duration::from_millis(250)); // past deadlock_timeout
    m.release_all(BackendId(0), true).unwrap();
    t.join().unwrap().unwrap();
    m.release_all(BackendId(1), true).unwrap();
    assert!(m.lock_status().is_empty());
}

#[test]
fn soft_edge_cycle_is_resolved_by_reordering() {
    // B0 holds AccessShare on R; B1 waits for AccessExclusive on R (behind B0);
    // B2 holds Exclusive on O and asks AccessShare on R: it queues behind B1 (FIFO,
    // soft edge). B0 then waits for O held by B2: B0 -> B2 -> B1 -> B0.
    // Moving B2 before B1 in R's queue breaks the cycle (B2's AccessShare is
    // compatible with B0's), so B0's check reorders the queue, B2 is granted R,
    // finishes and releases O, and everyone completes without an error.
    let m = manager();
    let r = rel(77);
    let o = LockTag::Object {
        db: 5,
        classid: 1,
        objid: 2,
        objsubid: 0,
    };
    let d = LockOptions::default();
    m.lock(BackendId(0), r, LockMode::AccessShare, d).unwrap();
    m.lock(BackendId(2), o, LockMode::Exclusive, d).unwrap();
    let m1 = m.clone();
    let t1 = thread::spawn(move || {
        let x = m1.lock(BackendId(1), r, AE, d);
        m1.release_all(BackendId(1), true).unwrap();
        x
    });
    wait_until_waiting(&m, 1);
    let m2 = m.clone();
    let t2 = thread::spawn(move || {
        let x = m2.lock(BackendId(2), r, LockMode::AccessShare, d);
        m2.release_all(BackendId(2), true).unwrap();
        x
    });
    wait_until_waiting(&m, 2);
    thread::sleep(Duration::from_millis(300)); // B1's and B2's checks find nothing
    let t0 = Instant::now();
    m.lock(BackendId(0), o, LockMode::Share, d).unwrap();
    let waited = t0.elapsed();
    assert!(
        waited >= Duration::from_millis(100),
        "resolved by the check: {waited:?}"
    );
    m.release_all(BackendId(0), true).unwrap();
    t1.join().unwrap().unwrap();
    t2.join().unwrap().unwrap();
    assert!(m.lock_status().is_empty());
    m.check_invariants().unwrap();
}

#[test]
fn soft_edge_cycle_that_reordering_cannot_fix() {
    // As above, but B2 asks for Share on R, which conflicts with B0's RowExclusive:
    // B0 -> B2 (O) and B2 -> B0 (R, hard) is a cycle whatever the queue order.
    let m = manager();
    let r = rel(78);
    let o = LockTag::Object {
        db: 5,
        classid: 1,
        objid: 3,
        objsubid: 0,
    };
    let d = LockOptions::default();
    m.lock(BackendId(0), r, LockMode::RowExclusive, d).unwrap();
    m.lock(BackendId(2), o, LockMode::Exclusive, d).unwrap();
    let m1 = m.clone();
    let t1 = thread::spawn(move || {
        let x = m1.lock(BackendId(1), r, AE, d);
        m1.release_all(BackendId(1), true).unwrap();
        x
    });
    wait_until_waiting(&m, 1);
    let m2 = m.clone();
    let t2 = thread::spawn(move || {
        let x = m2.lock(BackendId(2), r, LockMode::Share, d);
        m2.release_all(BackendId(2), true).unwrap();
        x
    });
    wait_until_waiting(&m, 2);
    thread::sleep(Duration::from_millis(300));
    let e = m.lock(BackendId(0), o, LockMode::Share, d).unwrap_err();
    assert_eq!(e.sqlstate().as_str(), "40P01");
    assert_eq!(
        detail(&e),
        "Process 4000 waits for ShareLock on object 3 of class 1 of database 5; blocked by process 4002.\n\
         Process 4002 waits for ShareLock on relation 78 of database 5; blocked by process 4000."
    );
    m.release_all(BackendId(0), true).unwrap();
    t1.join().unwrap().unwrap();
    t2.join().unwrap().unwrap();
    assert!(m.lock_status().is_empty());
}
