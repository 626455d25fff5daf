//! Heavyweight lock semantics: the conflict table (through the fast path and the
//! shared table), waiting for a conflicting holder, NOWAIT, lock_timeout, cancel,
//! session vs transaction lifetimes, advisory locks, pg_locks rows.

#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use ferrogres_engine::config::Settings;
use ferrogres_engine::lmgr::lock::{
    nowait_relation_error, AdvisoryKey, LockAcquireResult, LockManager, LockMode, LockOptions,
    LockTag,
};
use ferrogres_engine::pgstat::BackendId;

const B0: BackendId = BackendId(0);
const B1: BackendId = BackendId(1);
const B2: BackendId = BackendId(2);

fn settings() -> Settings {
    Settings {
        deadlock_timeout_ms: 100,
        ..Settings::default()
    }
}

fn manager(fast_path: bool) -> Arc<LockManager> {
    let m = LockManager::with_fast_path(&settings(), 8, fast_path);
    for i in 0..8 {
        m.register_backend(BackendId(i), 1000 + i as i32).unwrap();
    }
    Arc::new(m)
}

const REL: LockTag = LockTag::Relation { db: 5, rel: 16384 };

fn nowait() -> LockOptions {
    LockOptions {
        dont_wait: true,
        ..LockOptions::default()
    }
}

use LockMode::*;

/// PostgreSQL's documented conflict table (13.3.1, "Conflicting Lock Modes"),
/// written out by row independently of the implementation.
fn expected_conflict(a: LockMode, b: LockMode) -> bool {
    let row: &[LockMode] = match a {
        AccessShare => &[AccessExclusive],
        RowShare => &[Exclusive, AccessExclusive],
        RowExclusive => &[Share, ShareRowExclusive, Exclusive, AccessExclusive],
        ShareUpdateExclusive => &[
            ShareUpdateExclusive,
            Share,
            ShareRowExclusive,
            Exclusive,
            AccessExclusive,
        ],
        Share => &[
            RowExclusive,
            ShareUpdateExclusive,
            ShareRowExclusive,
            Exclusive,
            AccessExclusive,
        ],
        ShareRowExclusive => &[
            RowExclusive,
            ShareUpdateExclusive,
            Share,
            ShareRowExclusive,
            Exclusive,
            AccessExclusive,
        ],
        Exclusive => &[
            RowShare,
            RowExclusive,
            ShareUpdateExclusive,
            Share,
            ShareRowExclusive,
            Exclusive,
            AccessExclusive,
        ],
        AccessExclusive => &LockMode::ALL,
    };
    row.contains(&b)
}

#[test]
fn conflict_table_exhaustive() {
    for fast_path in [true, false] {
        let m = manager(fast_path);
        for tag in [
            REL,
            LockTag::Object {
                db: 5,
                classid: 1259,
                objid: 42,
                objsubid: 0,
            },
        ] {
            for a in LockMode::ALL {
                for b in LockMode::ALL {
                    assert_eq!(
                        m.lock(B0, tag, a, LockOptions::default()).unwrap(),
                        LockAcquireResult::Acquired
                    );
                    let r = m.lock(B1, tag, b, nowait()).unwrap();
                    let want = if expected_conflict(a, b) {
                        LockAcquireResult::NotAvailable
                    } else {
                        LockAcquireResult::Acquired
                    };
                    assert_eq!(
                        r, want,
                        "holder {a:?} requester {b:?} fast_path {fast_path} {tag}"
                    );
                    m.check_invariants().unwrap();
                    m.release_all(B0, true).unwrap();
                    m.release_all(B1, true).unwrap();
                    assert!(
                        m.lock_status().is_empty(),
                        "all released: {:?}",
                        m.lock_status()
                    );
                    assert_eq!(m.strong_lock_count(tag), 0);
                    m.check_invariants().unwrap();
                }
            }
        }
        assert!(!expected_conflict(Share, Share));
        assert!(AccessShare.conflicts_with(AccessExclusive));
    }
}

#[test]
fn own_locks_never_conflict() {
    let m = manager(true);
    for a in LockMode::ALL {
        m.lock(B0, REL, a, LockOptions::default()).unwrap();
    }
    m.check_invariants().unwrap();
    assert_eq!(
        m.lock(B0, REL, AccessShare, nowait()).unwrap(),
        LockAcquireResult::AlreadyHeld
    );
    assert_eq!(
        m.lock(B1, REL, AccessShare, nowait()).unwrap(),
        LockAcquireResult::NotAvailable
    );
    m.release_all(B0, true).unwrap();
    assert_eq!(
        m.lock(B1, REL, AccessShare, nowait()).unwrap(),
        LockAcquireResult::Acquired
    );
    m.release_all(B1, true).unwrap();
    assert!(m.lock_status().is_empty());
}

#[test]
fn strong_waits_for_weak_holder() {
    for fast_path in [true, false] {
        let m = manager(fast_path);
        m.lock(B0, REL, RowExclusive, LockOptions::default())
            .unwrap();
        let rows = m.lock_status();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].fastpath, fast_path);
        let got = Arc::new(AtomicBool::new(false));
        let (m2, got2) = (m.clone(), got.clone());
        let t = thread::spawn(move || {
            m2.lock(B1, REL, AccessExclusive, LockOptions::default())
                .unwrap();
            got2.store(true, Ordering::SeqCst);
            m2.release_all(B1, true).unwrap();
        });
        // Wait until B1 is queued: pg_locks shows it not granted, with a waitstart.
        let t0 = Instant::now();
        loop {
            let rows = m.lock_status();
            if let Some(w) = rows.iter().find(|r| !r.granted) {
                assert_eq!(w.mode, "AccessExclusiveLock");
                assert_eq!(w.pid, Some(1001));
                assert!(w.waitstart.is_some());
                // The weak lock was transferred out of the fast path.
                let h = rows.iter().find(|r| r.granted).unwrap();
                assert_eq!(
                    (h.mode, h.fastpath, h.relation),
                    ("RowExclusiveLock", false, Some(16384))
                );
                break;
            }
            assert!(t0.elapsed() < Duration::from_secs(5), "B1 never queued");
            thread::sleep(Duration::from_millis(2));
        }
        thread::sleep(Duration::from_millis(30));
        assert!(
            !got.load(Ordering::SeqCst),
            "strong lock granted while weak held"
        );
        // Weak lockers now queue behind the strong waiter (FIFO).
        assert_eq!(
            m.lock(B2, REL, AccessShare, nowait()).unwrap(),
            LockAcquireResult::NotAvailable
        );
        m.release_all(B0, true).unwrap();
        t.join().unwrap();
        assert!(got.load(Ordering::SeqCst));
        assert_eq!(m.strong_lock_count(REL), 0);
        assert!(m.lock_status().is_empty());
        m.check_invariants().unwrap();
    }
}

#[test]
fn fifo_and_jump_ahead() {
    // A long deadlock_timeout: without the jump-ahead rule B0 would wait behind B1
    // (which waits for B0) until the deadlock check, 10 s later, failed it.
    let s = Settings {
        deadlock_timeout_ms: 10_000,
        ..Settings::default()
    };
    let m = Arc::new(LockManager::with_fast_path(&s, 4, false));
    // B0 holds Share; B1 queues for Exclusive; B2 (AccessShare, no conflict with the
    // granted Share) must still queue behind B1's conflicting request.
    m.lock(B0, REL, Share, LockOptions::default()).unwrap();
    let m1 = m.clone();
    let t1 = thread::spawn(move || {
        m1.lock(B1, REL, Exclusive, LockOptions::default()).unwrap();
        m1.release_all(B1, true).unwrap();
    });
    while !m.lock_status().iter().any(|r| !r.granted) {
        thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(
        m.lock(B2, REL, RowShare, nowait()).unwrap(),
        LockAcquireResult::NotAvailable
    );
    // Jump ahead: B0 already holds Share, which blocks B1; its new request
    // (RowShare) conflicts with nothing granted to others, so it is granted at once
    // instead of queueing behind B1 (which would deadlock).
    assert_eq!(
        m.lock(B0, REL, RowShare, nowait()).unwrap(),
        LockAcquireResult::Acquired
    );
    // A waiting request jumps ahead too (granted at once, no deadlock check needed).
    let t0 = Instant::now();
    assert_eq!(
        m.lock(B0, REL, RowExclusive, LockOptions::default())
            .unwrap(),
        LockAcquireResult::Acquired
    );
    assert!(
        t0.elapsed() < Duration::from_secs(5),
        "granted without waiting"
    );
    // B2, holding nothing, still may not pass B1.
    assert_eq!(
        m.lock(B2, REL, RowShare, nowait()).unwrap(),
        LockAcquireResult::NotAvailable
    );
    // AccessShare conflicts neither with granted modes nor with the queued Exclusive.
    assert_eq!(
        m.lock(B2, REL, AccessShare, nowait()).unwrap(),
        LockAcquireResult::Acquired
    );
    m.release_all(B2, true).unwrap();
    m.check_invariants().unwrap();
    m.release_all(B0, true).unwrap();
    t1.join().unwrap();
    assert!(m.lock_status().is_empty());
}

#[test]
fn nowait_and_lock_timeout() {
    let m = manager(true);
    m.lock(B0, REL, AccessExclusive, LockOptions::default())
        .unwrap();
    assert_eq!(
        m.lock(B1, REL, AccessShare, nowait()).unwrap(),
        LockAcquireResult::NotAvailable
    );
    let e = nowait_relation_error("t");
    assert_eq!(e.sqlstate().as_str(), "55P03");
    assert_eq!(e.to_string(), "could not obtain lock on relation \"t\"");

    let t0 = Instant::now();
    let opts = LockOptions {
        lock_timeout_ms: Some(50),
        ..LockOptions::default()
    };
    let e = m.lock(B1, REL, AccessShare, opts).unwrap_err();
    let waited = t0.elapsed();
    assert_eq!(e.sqlstate().as_str(), "55P03");
    assert_eq!(e.to_string(), "canceling statement due to lock timeout");
    assert!(
        waited >= Duration::from_millis(50) && waited < Duration::from_secs(2),
        "{waited:?}"
    );
    assert!(!m.holds(B1, REL, AccessShare));
    m.check_invariants().unwrap();
    assert_eq!(
        m.lock_status().len(),
        1,
        "the timed-out waiter left the queue"
    );
    m.release_all(B0, true).unwrap();
    assert_eq!(m.strong_lock_count(REL), 0);
    // After the strong lock is gone, weak locks use the fast path again.
    m.lock(B1, REL, AccessShare, LockOptions::default())
        .unwrap();
    assert!(m.lock_status()[0].fastpath);
    m.release_all(B1, true).unwrap();
}

#[test]
fn cancel_interrupts_wait() {
    let m = manager(true);
    m.lock(B0, REL, AccessExclusive, LockOptions::default())
        .unwrap();
    let m1 = m.clone();
    let t = thread::spawn(move || m1.lock(B1, REL, AccessShare, LockOptions::default()));
    while !m.lock_status().iter().any(|r| !r.granted) {
        thread::sleep(Duration::from_millis(1));
    }
    m.cancel(B1).unwrap();
    let e = t.join().unwrap().unwrap_err();
    assert_eq!(e.sqlstate().as_str(), "57014");
    assert_eq!(e.to_string(), "canceling statement due to user request");
    assert_eq!(m.lock_status().len(), 1);
    m.release_all(B0, true).unwrap();
    m.check_invariants().unwrap();
}

#[test]
fn session_locks_survive_commit() {
    let m = manager(true);
    let t = LockTag::Object {
        db: 5,
        classid: 1,
        objid: 2,
        objsubid: 0,
    };
    m.lock(
        B0,
        t,
        Exclusive,
        LockOptions {
            session: true,
            ..LockOptions::default()
        },
    )
    .unwrap();
    m.lock(B0, t, Exclusive, LockOptions::default()).unwrap();
    m.lock(B0, REL, AccessShare, LockOptions::default())
        .unwrap();
    m.release_all(B0, true).unwrap();
    assert!(m.holds(B0, t, Exclusive));
    assert!(!m.holds(B0, REL, AccessShare));
    assert_eq!(
        m.lock(B1, t, Share, nowait()).unwrap(),
        LockAcquireResult::NotAvailable
    );
    assert!(
        !m.unlock(B0, t, Exclusive, false).unwrap(),
        "no transaction hold left"
    );
    assert!(m.unlock(B0, t, Exclusive, true).unwrap());
    assert_eq!(
        m.lock(B1, t, Share, nowait()).unwrap(),
        LockAcquireResult::Acquired
    );
    m.release_all(B1, false).unwrap();
    assert!(m.lock_status().is_empty());
}

#[test]
fn repeated_locks_are_counted_locally() {
    let m = manager(true);
    assert_eq!(
        m.lock(B0, REL, AccessShare, LockOptions::default())
            .unwrap(),
        LockAcquireResult::Acquired
    );
    assert_eq!(
        m.lock(B0, REL, AccessShare, LockOptions::default())
            .unwrap(),
        LockAcquireResult::AlreadyHeld
    );
    assert!(m.unlock(B0, REL, AccessShare, false).unwrap());
    assert_eq!(m.lock_status().len(), 1, "still held once");
    assert!(m.unlock(B0, REL, AccessShare, false).unwrap());
    assert!(!m.unlock(B0, REL, AccessShare, false).unwrap());
    assert!(m.lock_status().is_empty());
}

#[test]
fn advisory_session_and_xact() {
    let m = manager(true);
    let db = 5;
    let k = AdvisoryKey::Int8(0x1_0000_0002);
    assert!(m.advisory_lock(B0, db, k, false, true, true).unwrap());
    assert!(
        m.advisory_lock(B0, db, k, false, true, true).unwrap(),
        "re-entrant"
    );
    assert!(
        !m.advisory_lock(B1, db, k, true, true, false).unwrap(),
        "try shared fails"
    );
    let rows = m.lock_status();
    assert_eq!(rows.len(), 1);
    let r = &rows[0];
    assert_eq!(
        (r.locktype, r.database, r.classid, r.objid, r.objsubid, r.mode),
        (
            "advisory",
            Some(5),
            Some(1),
            Some(2),
            Some(1),
            "ExclusiveLock"
        )
    );
    m.release_all(B0, true).unwrap(); // commit: session locks stay
    assert!(!m.advisory_lock(B1, db, k, false, false, false).unwrap());
    assert!(m.advisory_unlock(B0, db, k, false).unwrap().released);
    assert!(m.advisory_unlock(B0, db, k, false).unwrap().released);
    let u = m.advisory_unlock(B0, db, k, false).unwrap();
    assert!(!u.released);
    assert_eq!(
        u.warning.as_deref(),
        Some("you don't own a lock of type ExclusiveLock")
    );
    let u = m.advisory_unlock(B0, db, k, true).unwrap();
    assert_eq!(
        u.warning.as_deref(),
        Some("you don't own a lock of type ShareLock")
    );

    // Transaction-level: released at commit, not by advisory_unlock.
    let p = AdvisoryKey::Int4Pair(7, -1);
    assert!(m.advisory_lock(B1, db, p, true, false, true).unwrap());
    assert!(
        m.advisory_lock(B2, db, p, true, false, false).unwrap(),
        "shared + shared"
    );
    assert!(!m.advisory_lock(B0, db, p, false, false, false).unwrap());
    assert!(!m.advisory_unlock(B1, db, p, true).unwrap().released);
    let rows = m.lock_status();
    assert!(rows
        .iter()
        .all(|r| r.classid == Some(7) && r.objid == Some(u32::MAX) && r.objsubid == Some(2)));
    m.release_all(B1, true).unwrap();
    m.release_all(B2, true).unwrap();
    assert!(m.advisory_lock(B0, db, p, false, false, false).unwrap());
    m.release_all(B0, true).unwrap();

    // advisory_unlock_all drops session advisory locks only.
    assert!(m.advisory_lock(B0, db, k, true, true, true).unwrap());
    m.lock(
        B0,
        REL,
        AccessShare,
        LockOptions {
            session: true,
            ..LockOptions::default()
        },
    )
    .unwrap();
    m.advisory_unlock_all(B0).unwrap();
    let rows = m.lock_status();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].locktype, "relation");
    m.release_all(B0, false).unwrap();
    assert!(m.lock_status().is_empty());
    m.check_invariants().unwrap();
}

#[test]
fn xact_lock_table_wait_waits_for_commit() {
    let m = manager(true);
    m.set_local_xid(B0, 3).unwrap();
    m.xact_lock_table_insert(B0, 1234).unwrap();
    let rows = m.lock_status();
    assert_eq!(rows[0].transactionid, Some(1234));
    assert_eq!(rows[0].virtualtransaction.as_deref(), Some("0/3"));
    assert_eq!(rows[0].mode, "ExclusiveLock");
    let done = Arc::new(AtomicBool::new(false));
    let (m1, d1) = (m.clone(), done.clone());
    let t = thread::spawn(move || {
        m1.xact_lock_table_wait(B1, 1234, LockOptions::default())
            .unwrap();
        d1.store(true, Ordering::SeqCst);
    });
    thread::sleep(Duration::from_millis(30));
    assert!(!done.load(Ordering::SeqCst));
    let w = m
        .lock_status()
        .into_iter()
        .find(|r| !r.granted)
        .expect("B1 waits");
    assert_eq!((w.locktype, w.mode), ("transactionid", "ShareLock"));
    m.release_all(B0, true).unwrap(); // commit
    t.join().unwrap();
    assert!(done.load(Ordering::SeqCst));
    assert!(
        m.lock_status().is_empty(),
        "the waiter released its ShareLock"
    );
}

#[test]
fn pg_locks_columns_per_locktype() {
    let m = manager(true);
    let o = LockOptions::default();
    m.lock(
        B0,
        LockTag::Page {
            db: 5,
            rel: 10,
            blk: 3,
        },
        Exclusive,
        o,
    )
    .unwrap();
    m.lock(
        B0,
        LockTag::Tuple {
            db: 5,
            rel: 10,
            blk: 3,
            offset: 4,
        },
        Exclusive,
        o,
    )
    .unwrap();
    m.lock(B0, LockTag::RelationExtend { db: 5, rel: 10 }, Exclusive, o)
        .unwrap();
    m.lock(
        B0,
        LockTag::VirtualXid {
            backend: 0,
            lxid: 9,
        },
        Exclusive,
        o,
    )
    .unwrap();
    m.lock(
        B0,
        LockTag::Object {
            db: 0,
            classid: 1262,
            objid: 5,
            objsubid: 0,
        },
        AccessShare,
        o,
    )
    .unwrap();
    let mut rows = m.lock_status();
    rows.sort_by_key(|r| r.locktype);
    let types: Vec<_> = rows.iter().map(|r| r.locktype).collect();
    assert_eq!(types, ["extend", "object", "page", "tuple", "virtualxid"]);
    assert_eq!(
        (rows[2].relation, rows[2].page, rows[2].tuple),
        (Some(10), Some(3), None)
    );
    assert_eq!((rows[3].page, rows[3].tuple), (Some(3), Some(4)));
    assert_eq!(rows[4].virtualxid.as_deref(), Some("0/9"));
    assert_eq!(
        (rows[1].classid, rows[1].objid, rows[1].objsubid),
        (Some(1262), Some(5), Some(0))
    );
    assert!(rows
        .iter()
        .all(|r| r.granted && !r.fastpath && r.pid == Some(1000)));
    m.release_all(B0, true).unwrap();
    assert!(m.lock_status().is_empty());
}

#[test]
fn fast_path_slots_scale_and_overflow() {
    let s = Settings {
        max_locks_per_transaction: 256,
        ..settings()
    };
    let m = LockManager::new(&s, 2);
    assert_eq!(m.fast_path_slots(), 256);
    let m = manager(true);
    assert_eq!(m.fast_path_slots(), 64);
    // More relations than slots: the overflow goes to the shared table.
    for rel in 0..200 {
        m.lock(
            B0,
            LockTag::Relation { db: 5, rel },
            AccessShare,
            LockOptions::default(),
        )
        .unwrap();
    }
    let rows = m.lock_status();
    assert_eq!(rows.len(), 200);
    let fp = rows.iter().filter(|r| r.fastpath).count();
    assert!(fp > 0 && fp <= 64, "{fp}");
    m.check_invariants().unwrap();
    m.release_all(B0, true).unwrap();
    assert!(m.lock_status().is_empty());
}

#[test]
fn lock_timeout_setting_is_the_default() {
    let s = Settings {
        lock_timeout_ms: 40,
        deadlock_timeout_ms: 1000,
        ..Settings::default()
    };
    let m = LockManager::new(&s, 2);
    let t = LockTag::TransactionId { xid: 99 };
    m.lock(B0, t, Exclusive, LockOptions::default()).unwrap();
    let t0 = Instant::now();
    let e = m.lock(B1, t, Share, LockOptions::default()).unwrap_err();
    assert_eq!(e.to_string(), "canceling statement due to lock timeout");
    assert!(t0.elapsed() >= Duration::from_millis(40));
    // A per-request value overrides it (0 = wait forever; here a longer wait that
    // ends when the holder commits).
    let m = Arc::new(m);
    let m1 = m.clone();
    let h = thread::spawn(move || {
        m1.lock(
            B1,
            t,
            Share,
            LockOptions {
                lock_timeout_ms: Some(0),
                ..LockOptions::default()
            },
        )
    });
    thread::sleep(Duration::from_millis(80));
    m.release_all(B0, true).unwrap();
    assert_eq!(h.join().unwrap().unwrap(), LockAcquireResult::Acquired);
    m.release_all(B1, true).unwrap();
    m.check_invariants().unwrap();
}

#[test]
fn pending_cancel_interrupts_next_wait_only_if_it_waits() {
    let m = manager(true);
    m.cancel(B1).unwrap();
    // No wait: the request stays pending.
    m.lock(B1, REL, AccessShare, LockOptions::default())
        .unwrap();
    m.release_all(B1, true).unwrap();
    assert!(m.take_cancel(B1).unwrap());
    assert!(!m.take_cancel(B1).unwrap());
}

/// Waits (up to 10 s) until `b` shows as a waiter in pg_locks.
fn until_waiting(m: &LockManager, b: BackendId) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !m
        .lock_status()
        .iter()
        .any(|r| !r.granted && r.virtualtransaction.as_deref().is_some_and(|v| v.starts_with(&format!("{}/", b.0))))
    {
        assert!(Instant::now() < deadline, "backend {} never waited", b.0);
        thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn virtualxid_lock_is_held_on_the_fast_path_until_a_waiter_moves_it() {
    for fast_path in [true, false] {
        let m = manager(fast_path);
        let lxid = m.virtual_xact_begin(B0).unwrap();
        assert_eq!(lxid, 1);
        // The row: ExclusiveLock on its own virtualxid, fast path, in any mode of
        // the manager (PostgreSQL keeps it in the PGPROC regardless).
        let rows = m.lock_status();
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!(
            (r.locktype, r.mode, r.granted, r.fastpath),
            ("virtualxid", "ExclusiveLock", true, true)
        );
        assert_eq!(r.virtualxid.as_deref(), Some("0/1"));
        assert_eq!(r.virtualtransaction.as_deref(), Some("0/1"));
        // Without waiting: still running.
        assert!(!m.virtual_xact_lock(B1, B0, lxid, false).unwrap());
        // The probe moved the lock to the shared table.
        let r = m.lock_status().into_iter().find(|r| r.locktype == "virtualxid").unwrap();
        assert_eq!((r.granted, r.fastpath), (true, false));
        m.check_invariants().unwrap();

        let done = Arc::new(AtomicBool::new(false));
        let (m1, d1) = (m.clone(), done.clone());
        let t = thread::spawn(move || {
            assert!(m1.virtual_xact_lock(B1, B0, lxid, true).unwrap());
            d1.store(true, Ordering::SeqCst);
        });
        until_waiting(&m, B1);
        assert!(!done.load(Ordering::SeqCst));
        let w = m.lock_status().into_iter().find(|r| !r.granted).unwrap();
        assert_eq!((w.locktype, w.mode, w.virtualxid.as_deref()), ("virtualxid", "ShareLock", Some("0/1")));
        m.virtual_xact_end(B0).unwrap();
        m.release_all(B0, true).unwrap();
        t.join().unwrap();
        assert!(done.load(Ordering::SeqCst));
        assert!(m.lock_status().is_empty());
        m.check_invariants().unwrap();

        // The next transaction has the next local xid; an ended one is not waited for.
        assert_eq!(m.virtual_xact_begin(B0).unwrap(), 2);
        assert!(m.virtual_xact_lock(B1, B0, 1, false).unwrap());
        assert!(m.virtual_xact_lock(B1, B0, 1, true).unwrap());
        m.virtual_xact_end(B0).unwrap();
        assert!(m.lock_status().is_empty());
    }
}

#[test]
fn virtualxid_waits_take_part_in_deadlock_detection() {
    let m = manager(true);
    let lx0 = m.virtual_xact_begin(B0).unwrap();
    let lx1 = m.virtual_xact_begin(B1).unwrap();
    m.lock(B1, REL, AccessExclusive, LockOptions::default()).unwrap();
    // B0 waits for B1's transaction to end; B1 then waits for B0's: a cycle.
    // A victim aborts: its transaction ends, which lets the other one finish.
    let end = |m: &LockManager, b: BackendId| {
        m.virtual_xact_end(b).unwrap();
        m.release_all(b, true).unwrap();
    };
    let m0 = m.clone();
    let t = thread::spawn(move || {
        let r = m0.virtual_xact_lock(B0, B1, lx1, true);
        if r.is_err() {
            end(&m0, B0);
        }
        r
    });
    until_waiting(&m, B0);
    let r1 = m.virtual_xact_lock(B1, B0, lx0, true);
    if r1.is_err() {
        end(&m, B1);
    }
    let r0 = t.join().unwrap();
    let errs = [&r0, &r1].iter().filter(|r| r.is_err()).count();
    assert_eq!(errs, 1, "exactly one side is the deadlock victim: {r0:?} {r1:?}");
    let e = if let Err(e) = &r0 { e } else { r1.as_ref().unwrap_err() };
    assert_eq!(e.sqlstate().0, *b"40P01");
    assert!(e.to_string().contains("deadlock detected"), "{e}");
}

#[test]
fn rollback_to_savepoint_releases_the_locks_taken_after_it() {
    let rel2 = LockTag::Relation { db: 5, rel: 16385 };
    let rel3 = LockTag::Relation { db: 5, rel: 16386 };
    for fast_path in [true, false] {
        let m = manager(fast_path);
        m.virtual_xact_begin(B0).unwrap();
        m.lock(B0, REL, RowExclusive, LockOptions::default()).unwrap(); // level 1
        m.subxact_begin(B0, 2).unwrap(); // SAVEPOINT a
        m.lock(B0, REL, RowExclusive, LockOptions::default()).unwrap(); // again: stays level 1
        m.lock(B0, rel2, AccessExclusive, LockOptions::default()).unwrap(); // level 2
        assert!(m.advisory_lock(B0, 5, AdvisoryKey::Int8(7), false, false, true).unwrap());
        assert!(m.advisory_lock(B0, 5, AdvisoryKey::Int8(8), false, true, true).unwrap()); // session
        m.subxact_begin(B0, 3).unwrap(); // SAVEPOINT b
        m.lock(B0, rel3, Share, LockOptions::default()).unwrap(); // level 3
        m.subxact_commit(B0, 3).unwrap(); // RELEASE b: rel3 now belongs to a
        // A parent's xid lock taken while a deeper level is current belongs to the parent.
        m.subxact_begin(B0, 3).unwrap();
        m.xact_lock_table_insert_at(B0, 900, 1).unwrap();
        m.xact_lock_table_insert_at(B0, 901, 3).unwrap();
        m.subxact_abort(B0, 3).unwrap(); // ROLLBACK TO the level-3 savepoint
        assert!(m.holds(B0, LockTag::TransactionId { xid: 900 }, Exclusive));
        assert!(!m.holds(B0, LockTag::TransactionId { xid: 901 }, Exclusive));
        assert!(m.holds(B0, rel3, Share));
        m.subxact_begin(B0, 3).unwrap();

        // B1 waits for rel2, which ROLLBACK TO a releases.
        let done = Arc::new(AtomicBool::new(false));
        let (m1, d1) = (m.clone(), done.clone());
        let t = thread::spawn(move || {
            m1.lock(B1, rel2, AccessShare, LockOptions::default()).unwrap();
            d1.store(true, Ordering::SeqCst);
        });
        until_waiting(&m, B1);
        m.subxact_abort(B0, 2).unwrap(); // ROLLBACK TO a
        t.join().unwrap();
        assert!(done.load(Ordering::SeqCst));
        assert!(!m.holds(B0, rel2, AccessExclusive));
        assert!(!m.holds(B0, rel3, Share), "released into a, then rolled back with it");
        assert!(m.holds(B0, REL, RowExclusive), "taken before the savepoint");
        assert!(m.holds(B0, LockTag::TransactionId { xid: 900 }, Exclusive));
        let adv = |k: i64| AdvisoryKey::Int8(k).tag(5);
        assert!(!m.holds(B0, adv(7), Exclusive), "transaction advisory lock rolled back");
        assert!(m.holds(B0, adv(8), Exclusive), "session advisory lock survives");
        m.check_invariants().unwrap();
        // A lock taken again after the rollback belongs to the new level.
        m.subxact_begin(B0, 2).unwrap();
        m.lock(B0, rel2, RowShare, LockOptions::default()).unwrap();
        m.virtual_xact_end(B0).unwrap();
        m.release_all(B0, true).unwrap();
        m.release_all(B1, true).unwrap();
        assert!(m.holds(B0, adv(8), Exclusive));
        m.release_all(B0, false).unwrap();
        assert!(m.lock_status().is_empty());
    }
}
