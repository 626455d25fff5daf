//! Stress test of the fast-path transfer: weak lockers (table + index, as pgbench -S
//! does) against a strong locker taking AccessExclusive on the same relations, plus a
//! pg_locks reader checking that no snapshot shows a strong and a weak lock granted
//! together on one relation.
//!
//! The invariant is checked inside the strong holder's critical section: each
//! relation has a counter of weak holders, incremented right after a weak acquire
//! and decremented right before the release; the strong holder must read 0.

#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use ferrogres_engine::config::Settings;
use ferrogres_engine::lmgr::lock::{LockManager, LockMode, LockOptions, LockTag};
use ferrogres_engine::pgstat::BackendId;

const RELS: u32 = 3;
const WEAK_THREADS: u32 = 3;

fn rel(i: u32) -> LockTag {
    LockTag::Relation {
        db: 5,
        rel: 16384 + i,
    }
}

#[test]
fn fast_path_transfer_stress() {
    let s = Settings {
        deadlock_timeout_ms: 1000,
        ..Settings::default()
    };
    let m = Arc::new(LockManager::new(&s, 8));
    for i in 0..8 {
        m.register_backend(BackendId(i), 100 + i as i32).unwrap();
    }
    let weak_holders: Arc<Vec<AtomicI64>> =
        Arc::new((0..RELS).map(|_| AtomicI64::new(0)).collect());
    let strong_held: Arc<Vec<AtomicBool>> =
        Arc::new((0..RELS).map(|_| AtomicBool::new(false)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let weak_ops = Arc::new(AtomicU64::new(0));
    let strong_ops = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_millis(1500);

    let mut threads = Vec::new();
    for t in 0..WEAK_THREADS {
        let (m, wh, sh, stop, ops) = (
            m.clone(),
            weak_holders.clone(),
            strong_held.clone(),
            stop.clone(),
            weak_ops.clone(),
        );
        threads.push(thread::spawn(move || {
            let me = BackendId(t);
            let mut i = t as u64;
            while !stop.load(Ordering::Relaxed) {
                i = i
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let table = (i >> 33) as u32 % RELS;
                let index = (table + 1) % RELS;
                let mode = if (i >> 40) & 1 == 0 {
                    LockMode::AccessShare
                } else {
                    LockMode::RowExclusive
                };
                for r in [table, index] {
                    m.lock(me, rel(r), mode, LockOptions::default()).unwrap();
                    wh[r as usize].fetch_add(1, Ordering::SeqCst);
                    assert!(
                        !sh[r as usize].load(Ordering::SeqCst),
                        "weak lock granted under AccessExclusive"
                    );
                }
                if (i >> 45) & 7 == 0 {
                    thread::yield_now();
                }
                for r in [table, index] {
                    wh[r as usize].fetch_sub(1, Ordering::SeqCst);
                }
                m.release_all(me, true).unwrap();
                ops.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    {
        let (m, wh, sh, stop, ops) = (
            m.clone(),
            weak_holders.clone(),
            strong_held.clone(),
            stop.clone(),
            strong_ops.clone(),
        );
        threads.push(thread::spawn(move || {
            let me = BackendId(6);
            let mut k = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let r = k % RELS;
                k += 1;
                m.lock(
                    me,
                    rel(r),
                    LockMode::AccessExclusive,
                    LockOptions::default(),
                )
                .unwrap();
                sh[r as usize].store(true, Ordering::SeqCst);
                assert_eq!(
                    wh[r as usize].load(Ordering::SeqCst),
                    0,
                    "weak holder inside AccessExclusive"
                );
                thread::yield_now();
                assert_eq!(
                    wh[r as usize].load(Ordering::SeqCst),
                    0,
                    "weak holder inside AccessExclusive"
                );
                sh[r as usize].store(false, Ordering::SeqCst);
                m.release_all(me, true).unwrap();
                ops.fetch_add(1, Ordering::Relaxed);
                thread::sleep(Duration::from_micros(200));
            }
        }));
    }
    // pg_locks reader: no snapshot shows AccessExclusive granted together with a weak
    // lock on the same relation, and each weak lock appears at most once per backend.
    let mut snapshots = 0;
    while Instant::now() < deadline {
        let rows = m.lock_status();
        for r in 0..RELS {
            let on: Vec<_> = rows
                .iter()
                .filter(|x| x.relation == Some(16384 + r) && x.granted)
                .collect();
            let strong = on.iter().any(|x| x.mode == "AccessExclusiveLock");
            let weak = on.iter().any(|x| x.mode != "AccessExclusiveLock");
            assert!(
                !(strong && weak),
                "snapshot shows strong and weak together: {on:?}"
            );
            let mut seen = std::collections::HashSet::new();
            for x in &on {
                assert!(seen.insert((x.pid, x.mode)), "duplicate row {x:?}");
            }
        }
        snapshots += 1;
        thread::sleep(Duration::from_millis(2));
    }
    stop.store(true, Ordering::SeqCst);
    for t in threads {
        t.join().unwrap();
    }
    m.check_invariants().unwrap();
    assert!(m.lock_status().is_empty(), "{:?}", m.lock_status());
    for r in 0..RELS {
        assert_eq!(m.strong_lock_count(rel(r)), 0);
    }
    let (w, s) = (
        weak_ops.load(Ordering::Relaxed),
        strong_ops.load(Ordering::Relaxed),
    );
    eprintln!("weak iterations {w}, strong iterations {s}, pg_locks snapshots {snapshots}");
    assert!(
        w > 100 && s > 10,
        "too little progress: weak {w} strong {s}"
    );
}
