//! The two commit-time group protocols under real contention: the ProcArray group
//! xid clear and the clog group update. A test holds the lock while committers
//! pile up, so the group path is certainly taken (followers > 0); a stress run
//! checks that every commit is recorded and nobody sleeps forever.

#![cfg(not(loom))]

use ferrogres_engine::pgstat::BackendId;
use ferrogres_engine::txn::xid::*;
use ferrogres_engine::txn::{IsolationLevel, MemWal, TxnConfig, TxnShared, XidStatus};
use std::sync::{Arc, Barrier};
use std::time::Duration;

fn shared(n: usize, group: bool) -> (tempfile::TempDir, Arc<TxnShared>) {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = TxnConfig::new(dir.path().join("pg_xact"), n);
    cfg.clog_group_update = group;
    cfg.procarray_group_clear = group;
    let sh = TxnShared::open(&cfg, FullTransactionId::FIRST_NORMAL, Arc::new(MemWal::new(false)), None).unwrap();
    (dir, sh)
}

/// `n` threads each assign an xid, then commit while the test holds `which`
/// lock; returns their xids.
fn pile_up(sh: &Arc<TxnShared>, n: u32, hold_procarray: bool) -> Vec<TransactionId> {
    let ready = Arc::new(Barrier::new(n as usize + 1));
    let go = Arc::new(Barrier::new(n as usize + 1));
    let hs: Vec<_> = (0..n)
        .map(|b| {
            let (sh, ready, go) = (sh.clone(), ready.clone(), go.clone());
            std::thread::spawn(move || {
                let mut tm = sh.backend(BackendId(b)).unwrap();
                tm.begin(IsolationLevel::ReadCommitted).unwrap();
                let xid = tm.assign_xid_if_needed().unwrap();
                ready.wait();
                go.wait();
                tm.commit().unwrap();
                xid
            })
        })
        .collect();
    ready.wait();
    {
        let _held = if hold_procarray {
            sh.procarray.lock().exclusive()
        } else {
            sh.clog.control_lock().exclusive()
        };
        go.wait();
        std::thread::sleep(Duration::from_millis(300));
    }
    hs.into_iter().map(|h| h.join().unwrap()).collect()
}

#[test]
fn procarray_group_clear_used_under_contention() {
    let (_d, sh) = shared(16, true);
    let xids = pile_up(&sh, 8, true);
    let (leaders, followers) = sh.procarray.group_stats();
    assert!(followers > 0, "no follower: leaders {leaders}");
    assert!(leaders >= 1);
    for x in xids {
        assert!(!sh.procarray.xid_in_progress(x));
        assert_eq!(sh.xid_status(x).unwrap(), XidStatus::Committed);
    }
    assert_eq!(sh.oldest_xmin(), sh.next_full_xid().xid());
}

#[test]
fn clog_group_update_used_under_contention() {
    let (_d, sh) = shared(16, true);
    let xids = pile_up(&sh, 8, false);
    let (leaders, followers) = sh.clog.group_stats();
    assert!(followers > 0, "no follower: leaders {leaders}");
    for x in xids {
        assert_eq!(sh.xid_status(x).unwrap(), XidStatus::Committed);
        assert!(!sh.procarray.xid_in_progress(x));
    }
}

#[test]
fn group_paths_off_take_the_lock_each() {
    let (_d, sh) = shared(16, false);
    let mut xids = pile_up(&sh, 6, true);
    xids.extend(pile_up(&sh, 6, false));
    assert_eq!(sh.procarray.group_stats(), (0, 0));
    assert_eq!(sh.clog.group_stats(), (0, 0));
    assert!(sh.procarray.stats.blocking_clears.load(std::sync::atomic::Ordering::Relaxed) >= 6);
    for x in xids {
        assert_eq!(sh.xid_status(x).unwrap(), XidStatus::Committed);
    }
}

#[test]
fn group_commit_stress_every_commit_recorded() {
    let (_d, sh) = shared(16, true);
    let hs: Vec<_> = (0..8u32)
        .map(|b| {
            let sh = sh.clone();
            std::thread::spawn(move || {
                let mut tm = sh.backend(BackendId(b)).unwrap();
                let mut mine = Vec::new();
                for i in 0..1000 {
                    tm.begin(IsolationLevel::ReadCommitted).unwrap();
                    let x = tm.assign_xid_if_needed().unwrap();
                    if i % 7 == 0 {
                        tm.abort().unwrap();
                        mine.push((x, XidStatus::Aborted));
                    } else {
                        tm.commit().unwrap();
                        mine.push((x, XidStatus::Committed));
                    }
                }
                mine
            })
        })
        .collect();
    let all: Vec<_> = hs.into_iter().flat_map(|h| h.join().unwrap()).collect();
    assert_eq!(all.len(), 8000);
    for (x, st) in all {
        assert_eq!(sh.xid_status(x).unwrap(), st, "xid {x}");
        assert!(!sh.procarray.xid_in_progress(x));
    }
    // 8000 ends, each bumping the completion counter once (it starts at 1).
    assert_eq!(sh.procarray.completion_count(), 8001);
    assert_eq!(sh.oldest_xmin(), sh.next_full_xid().xid());
}
