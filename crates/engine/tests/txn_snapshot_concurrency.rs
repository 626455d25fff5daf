//! Snapshots taken while writer threads commit and abort: no snapshot ever sees a
//! transaction as neither running nor finished (clog is set before the ProcArray
//! is cleared), snapshot bounds hold, and every commit acknowledged before a
//! snapshot started is visible to it. Run with and without the snapshot cache.

#![cfg(not(loom))]

use ferrogres_engine::pgstat::BackendId;
use ferrogres_engine::txn::xid::*;
use ferrogres_engine::txn::{IsolationLevel, MemWal, TxnConfig, TxnShared, XidStatus};
use rand::{Rng, SeedableRng};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

fn run(snapshot_cache: bool, group: bool) {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = TxnConfig::new(dir.path().join("pg_xact"), 16);
    cfg.snapshot_cache = snapshot_cache;
    cfg.clog_group_update = group;
    cfg.procarray_group_clear = group;
    let sh = TxnShared::open(&cfg, FullTransactionId::FIRST_NORMAL, Arc::new(MemWal::new(false)), None).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    // The latest 64 commits acknowledged to their writer.
    let acked: Arc<Mutex<VecDeque<TransactionId>>> = Arc::new(Mutex::new(VecDeque::new()));
    let checks = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..4u32)
        .map(|w| {
            let (sh, acked) = (sh.clone(), acked.clone());
            std::thread::spawn(move || {
                let mut tm = sh.backend(BackendId(w)).unwrap();
                let mut rng = rand::rngs::SmallRng::seed_from_u64(w as u64);
                for _ in 0..1500 {
                    tm.begin(IsolationLevel::ReadCommitted).unwrap();
                    let xid = tm.assign_xid_if_needed().unwrap();
                    if rng.gen_ratio(1, 4) {
                        tm.savepoint("s").unwrap();
                        tm.assign_xid_if_needed().unwrap();
                        if rng.gen_bool(0.5) {
                            tm.rollback_to("s").unwrap();
                        } else {
                            tm.release("s").unwrap();
                        }
                    }
                    if rng.gen_ratio(1, 5) {
                        tm.abort().unwrap();
                    } else {
                        tm.commit().unwrap();
                        let mut a = acked.lock().unwrap();
                        a.push_back(xid);
                        if a.len() > 64 {
                            a.pop_front();
                        }
                    }
                }
            })
        })
        .collect();
    let readers: Vec<_> = (4..6u32)
        .map(|r| {
            let (sh, acked, done, checks) = (sh.clone(), acked.clone(), done.clone(), checks.clone());
            std::thread::spawn(move || {
                let mut tm = sh.backend(BackendId(r)).unwrap();
                let mut n = 0u64;
                while !done.load(Ordering::SeqCst) || n < 50 {
                    tm.begin(IsolationLevel::ReadCommitted).unwrap();
                    for _ in 0..5 {
                        let before: Vec<_> = acked.lock().unwrap().iter().copied().collect();
                        let s = tm.statement_snapshot().unwrap();
                        for &x in s.xip.iter() {
                            assert!(xid_precedes_or_equals(s.xmin, x) && xid_precedes(x, s.xmax), "xip {x} outside [{}, {})", s.xmin, s.xmax);
                        }
                        assert!(xid_precedes(s.xmax, sh.next_full_xid().xid()) || s.xmax == sh.next_full_xid().xid());
                        // Everything not running for the snapshot has its final clog status.
                        let mut x = FIRST_NORMAL_XID;
                        while xid_precedes(x, s.xmax) {
                            if !s.xid_in_snapshot(x, &sh.subtrans) {
                                let st = sh.xid_status(x).unwrap();
                                assert!(
                                    st == XidStatus::Committed || st == XidStatus::Aborted,
                                    "xid {x} neither running for snapshot [{}, {}) {:?} nor finished: {st:?}",
                                    s.xmin, s.xmax, s.xip
                                );
                            }
                            x = xid_advance(x);
                        }
                        // Commits acknowledged before the snapshot are visible.
                        for x in before {
                            assert!(!s.xid_in_snapshot(x, &sh.subtrans), "acked commit {x} invisible");
                            assert_eq!(sh.xid_status(x).unwrap(), XidStatus::Committed);
                        }
                        checks.fetch_add(1, Ordering::Relaxed);
                        tm.command_counter_increment().unwrap();
                    }
                    tm.commit().unwrap();
                    n += 1;
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    done.store(true, Ordering::SeqCst);
    for r in readers {
        r.join().unwrap();
    }
    assert!(checks.load(Ordering::Relaxed) >= 500);
    // Everything finished: the horizon is past every xid handed out.
    assert_eq!(sh.oldest_xmin(), sh.next_full_xid().xid());
}

#[test]
fn snapshots_never_see_unfinished_outside_xip_with_cache() {
    run(true, true);
}

#[test]
fn snapshots_never_see_unfinished_outside_xip_without_cache_or_groups() {
    run(false, false);
}

#[test]
fn snapshot_reused_until_a_transaction_completes() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = TxnConfig::new(dir.path().join("pg_xact"), 4);
    let sh = TxnShared::open(&cfg, FullTransactionId::FIRST_NORMAL, Arc::new(MemWal::new(false)), None).unwrap();
    let mut w = sh.backend(BackendId(0)).unwrap();
    let mut r = sh.backend(BackendId(1)).unwrap();
    w.begin(IsolationLevel::ReadCommitted).unwrap();
    let x = w.assign_xid_if_needed().unwrap();
    r.begin(IsolationLevel::ReadCommitted).unwrap();
    let stats = &sh.procarray.stats;
    let s1 = r.statement_snapshot().unwrap();
    r.command_counter_increment().unwrap();
    let s2 = r.statement_snapshot().unwrap();
    assert_eq!(stats.snapshots_reused.load(Ordering::Relaxed), 1);
    assert!(Arc::ptr_eq(&s1.xip, &s2.xip), "reuse must not copy");
    assert_eq!((s2.curcid, s2.xmax), (1, s1.xmax));
    assert!(s2.xid_in_snapshot(x, &sh.subtrans));
    w.commit().unwrap();
    let s3 = r.statement_snapshot().unwrap();
    assert_eq!(stats.snapshots_computed.load(Ordering::Relaxed), 2);
    assert!(!s3.xid_in_snapshot(x, &sh.subtrans), "commit after the cached snapshot must be seen");
}
