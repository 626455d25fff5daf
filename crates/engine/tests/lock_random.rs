//! Randomized workload: backends lock 1-3 random relations and objects in random
//! modes (so deadlocks, soft cycles, fast-path transfers and jump-aheads all
//! happen), with a short deadlock_timeout. Checks: nobody hangs, every error is a
//! deadlock (40P01), pg_locks snapshots never show conflicting modes granted to two
//! backends on one object, the table's invariants hold throughout, and everything is
//! released at the end.

#![cfg(not(loom))]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use ferrogres_engine::config::Settings;
use ferrogres_engine::lmgr::lock::{LockManager, LockMode, LockOptions, LockTag};
use ferrogres_engine::pgstat::BackendId;

const BACKENDS: u32 = 4;

fn tag(i: u64) -> LockTag {
    match i % 5 {
        0..=2 => LockTag::Relation {
            db: 5,
            rel: 100 + (i % 3) as u32,
        },
        _ => LockTag::Object {
            db: 5,
            classid: 1,
            objid: (i % 2) as u32,
            objsubid: 0,
        },
    }
}

fn mode_of(name: &str) -> LockMode {
    *LockMode::ALL.iter().find(|m| m.name() == name).unwrap()
}

#[test]
fn random_workload_no_hang_no_conflict() {
    let s = Settings {
        deadlock_timeout_ms: 20,
        ..Settings::default()
    };
    let m = Arc::new(LockManager::new(&s, BACKENDS as usize));
    for b in 0..BACKENDS {
        m.register_backend(BackendId(b), 500 + b as i32).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let (done_tx, done_rx) = mpsc::channel();
    let deadlocks = Arc::new(AtomicU64::new(0));
    let commits = Arc::new(AtomicU64::new(0));
    for b in 0..BACKENDS {
        let (m, stop, tx, dl, cm) = (
            m.clone(),
            stop.clone(),
            done_tx.clone(),
            deadlocks.clone(),
            commits.clone(),
        );
        thread::spawn(move || {
            let me = BackendId(b);
            let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ (b as u64 + 1);
            let mut next = || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            while !stop.load(Ordering::Relaxed) {
                let n = 1 + next() % 3;
                let mut failed = false;
                for _ in 0..n {
                    let r = next();
                    // Mostly weak modes, sometimes strong ones.
                    let mode = if r % 4 == 0 {
                        LockMode::ALL[(r >> 8) as usize % 8]
                    } else {
                        LockMode::ALL[(r >> 8) as usize % 3]
                    };
                    match m.lock(me, tag(r >> 16), mode, LockOptions::default()) {
                        Ok(_) => {}
                        Err(e) => {
                            assert_eq!(e.sqlstate().as_str(), "40P01", "{e}");
                            dl.fetch_add(1, Ordering::Relaxed);
                            failed = true;
                            break;
                        }
                    }
                }
                if !failed {
                    cm.fetch_add(1, Ordering::Relaxed);
                    if next() % 4 == 0 {
                        thread::sleep(Duration::from_micros(200));
                    }
                }
                m.release_all(me, true).unwrap();
            }
            tx.send(b).unwrap();
        });
    }
    let end = Instant::now() + Duration::from_millis(1500);
    let mut snapshots = 0;
    while Instant::now() < end {
        let rows = m.lock_status();
        let granted: Vec<_> = rows.iter().filter(|r| r.granted).collect();
        for (i, a) in granted.iter().enumerate() {
            for b in &granted[i + 1..] {
                let same = (a.locktype, a.database, a.relation, a.classid, a.objid)
                    == (b.locktype, b.database, b.relation, b.classid, b.objid);
                if same && a.pid != b.pid {
                    assert!(
                        !mode_of(a.mode).conflicts_with(mode_of(b.mode)),
                        "conflicting grants in one snapshot: {a:?} {b:?}"
                    );
                }
            }
        }
        m.check_invariants().unwrap();
        snapshots += 1;
        thread::sleep(Duration::from_millis(3));
    }
    stop.store(true, Ordering::SeqCst);
    for _ in 0..BACKENDS {
        // A hang (lost wakeup, undetected deadlock) shows up here.
        done_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("a backend hung");
    }
    m.check_invariants().unwrap();
    assert!(m.lock_status().is_empty(), "{:?}", m.lock_status());
    for i in 0..5 {
        assert_eq!(m.strong_lock_count(tag(i)), 0);
    }
    let (c, d) = (
        commits.load(Ordering::Relaxed),
        deadlocks.load(Ordering::Relaxed),
    );
    eprintln!("commits {c}, deadlocks {d}, snapshots {snapshots}");
    assert!(c > 100, "too little progress: {c}");
}
