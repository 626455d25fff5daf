//! The clog's SLRU pool: with few buffers and many pages, pages are evicted
//! (written back) and read again from `pg_xact` segment files; a reopened clog
//! reads what was flushed; truncation removes whole old segments; concurrent
//! readers and writers across evictions see every status set.

#![cfg(not(loom))]

use ferrogres_engine::storage::Lsn;
use ferrogres_engine::txn::clog::*;
use ferrogres_engine::txn::xid::*;
use ferrogres_engine::txn::{MemWal, XidStatus};
use std::sync::atomic::Ordering;
use std::sync::Arc;

const PAGES: u32 = 40;

fn expected(xid: TransactionId) -> XidStatus {
    match xid % 3 {
        0 => XidStatus::Committed,
        1 => XidStatus::Aborted,
        _ => XidStatus::InProgress,
    }
}

/// Sets a few statuses on each of 40 pages.
fn fill(c: &Clog) -> Vec<TransactionId> {
    let mut xids = Vec::new();
    for p in 0..PAGES {
        let first = (p * CLOG_XACTS_PER_PAGE).max(FIRST_NORMAL_XID);
        c.extend(first).unwrap();
        for x in [first, first + 1, first + 2, first + 4097, (p + 1) * CLOG_XACTS_PER_PAGE - 1] {
            let st = expected(x);
            if st != XidStatus::InProgress {
                c.set_tree_status(0, x, &[], st, Lsn::INVALID).unwrap();
            }
            xids.push(x);
        }
    }
    xids
}

#[test]
fn eviction_writes_back_and_reload_reads_it() {
    let d = tempfile::tempdir().unwrap();
    let c = Clog::open(d.path(), 4, 4, true, Arc::new(MemWal::new(false))).unwrap();
    let xids = fill(&c);
    assert!(c.stats.page_writes.load(Ordering::Relaxed) >= (PAGES - 4) as u64);
    for &x in xids.iter().rev() {
        assert_eq!(c.xid_status(x).unwrap(), expected(x), "xid {x}");
    }
    assert!(c.stats.page_reads.load(Ordering::Relaxed) >= (PAGES - 4) as u64);
    // Two segment files: 0000 (pages 0..31) and 0001 (32..39).
    assert!(d.path().join("0000").exists() && d.path().join("0001").exists());
    c.flush().unwrap();
    drop(c);
    let c2 = Clog::open(d.path(), 8, 4, true, Arc::new(MemWal::new(false))).unwrap();
    for &x in &xids {
        assert_eq!(c2.xid_status(x).unwrap(), expected(x), "after reopen, xid {x}");
    }
}

#[test]
fn truncate_removes_old_segments() {
    let d = tempfile::tempdir().unwrap();
    let wal = Arc::new(MemWal::new(true));
    let c = Clog::open(d.path(), 4, 4, true, wal.clone()).unwrap();
    fill(&c);
    c.flush().unwrap();
    let cutoff = 33 * CLOG_XACTS_PER_PAGE;
    c.truncate(cutoff).unwrap();
    assert!(!d.path().join("0000").exists());
    assert!(d.path().join("0001").exists());
    assert_eq!(c.xid_status(cutoff + 1).unwrap(), expected(cutoff + 1));
    let e = c.xid_status(100).unwrap_err();
    assert_eq!(e.sqlstate().as_str(), "XX001");
    // The truncation was WAL-logged, and its redo is idempotent.
    let (_, _, rec) = wal.records().into_iter().last().unwrap();
    assert_eq!(rec[0], CLOG_TRUNCATE);
    c.redo(&rec).unwrap();
}

#[test]
fn concurrent_setters_and_readers_across_evictions() {
    let d = tempfile::tempdir().unwrap();
    let c = Arc::new(Clog::open(d.path(), 3, 8, true, Arc::new(MemWal::new(false))).unwrap());
    for p in 0..12 {
        c.extend((p * CLOG_XACTS_PER_PAGE).max(FIRST_NORMAL_XID)).unwrap();
    }
    let hs: Vec<_> = (0..4u32)
        .map(|t| {
            let c = c.clone();
            std::thread::spawn(move || {
                for i in 0..600u32 {
                    let page = (i * 7 + t) % 12;
                    let x = page * CLOG_XACTS_PER_PAGE + 10 + t * 1000 + i;
                    let st = if i % 2 == 0 { XidStatus::Committed } else { XidStatus::Aborted };
                    c.set_tree_status(t as usize, x, &[x + 20000], st, Lsn::INVALID).unwrap();
                    assert_eq!(c.xid_status(x).unwrap(), st);
                    assert_eq!(c.xid_status(x + 20000).unwrap(), st);
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    for t in 0..4u32 {
        for i in 0..600u32 {
            let page = (i * 7 + t) % 12;
            let x = page * CLOG_XACTS_PER_PAGE + 10 + t * 1000 + i;
            let st = if i % 2 == 0 { XidStatus::Committed } else { XidStatus::Aborted };
            assert_eq!(c.xid_status(x).unwrap(), st);
        }
    }
}
