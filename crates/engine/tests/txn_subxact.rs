//! Subtransactions, isolation levels and the async-commit hint interlock, end to
//! end through TransactionManager and the visibility rules over a toy "heap" of
//! tuple headers.

#![cfg(not(loom))]

use ferrogres_engine::pgstat::BackendId;
use ferrogres_engine::txn::clog::CLOG_XACTS_PER_PAGE;
use ferrogres_engine::txn::visibility::*;
use ferrogres_engine::txn::xid::*;
use ferrogres_engine::txn::{IsolationLevel, MemWal, TransactionManager, TxnConfig, TxnShared};
use std::sync::Arc;

fn setup(next: FullTransactionId) -> (tempfile::TempDir, Arc<TxnShared>, Arc<MemWal>) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = TxnConfig::new(dir.path().join("pg_xact"), 8);
    let wal = Arc::new(MemWal::new(true));
    let sh = TxnShared::open(&cfg, next, wal.clone(), None).unwrap();
    if next != FullTransactionId::FIRST_NORMAL {
        sh.end_recovery().unwrap();
    }
    (dir, sh, wal)
}

/// Inserts a row as the current command of `tm`.
fn insert(tm: &mut TransactionManager) -> TupleVisibilityInfo {
    let xid = tm.assign_xid_if_needed().unwrap();
    let t = TupleVisibilityInfo { xmin: xid, xmax: 0, cid: tm.current_command_id(), infomask: HEAP_XMAX_INVALID, ctid_is_self: true };
    tm.command_counter_increment().unwrap();
    t
}

/// Deletes `t` as the current command of `tm`.
fn delete(tm: &mut TransactionManager, t: &mut TupleVisibilityInfo) {
    let xid = tm.assign_xid_if_needed().unwrap();
    let (cid, combo) = tm.cid_for_delete(t);
    t.xmax = xid;
    t.cid = cid;
    t.infomask &= !HEAP_XMAX_INVALID;
    if combo {
        t.infomask |= HEAP_COMBOCID;
    }
    tm.command_counter_increment().unwrap();
}

fn visible(tm: &mut TransactionManager, t: &TupleVisibilityInfo) -> bool {
    let s = tm.statement_snapshot().unwrap();
    satisfies_mvcc(t, &s, tm).unwrap().visible
}

#[test]
fn rollback_to_savepoint_hides_rows_release_keeps_them() {
    let (_d, sh, _w) = setup(FullTransactionId::FIRST_NORMAL);
    let mut t1 = sh.backend(BackendId(0)).unwrap();
    let mut t2 = sh.backend(BackendId(1)).unwrap();
    t1.begin(IsolationLevel::ReadCommitted).unwrap();
    let a = insert(&mut t1);
    t1.savepoint("s1").unwrap();
    let b = insert(&mut t1);
    assert!(visible(&mut t1, &b));
    t1.rollback_to("s1").unwrap();
    assert!(!visible(&mut t1, &b), "row of rolled-back subxact still visible to its own xact");
    let c = insert(&mut t1); // new subxact under the same savepoint
    assert_ne!(c.xmin, b.xmin);
    t1.savepoint("s2").unwrap();
    let d = insert(&mut t1);
    t1.release("s1").unwrap(); // releases s2 too
    assert_eq!(t1.nesting_level(), 1);
    assert!(visible(&mut t1, &a) && visible(&mut t1, &c) && visible(&mut t1, &d));
    t2.begin(IsolationLevel::ReadCommitted).unwrap();
    for t in [&a, &b, &c, &d] {
        assert!(!visible(&mut t2, t), "uncommitted row visible to another xact");
    }
    t1.commit().unwrap();
    assert!(visible(&mut t2, &a) && visible(&mut t2, &c) && visible(&mut t2, &d));
    assert!(!visible(&mut t2, &b));
    assert!(t1.release("nope").is_err());
    t1.begin(IsolationLevel::ReadCommitted).unwrap();
    let e = t1.rollback_to("nope").unwrap_err();
    assert_eq!(e.sqlstate().as_str(), "3B001");
    assert_eq!(e.to_string(), "savepoint \"nope\" does not exist");
}

#[test]
fn subxid_cache_overflow_still_correct() {
    let (_d, sh, _w) = setup(FullTransactionId::FIRST_NORMAL);
    let mut t1 = sh.backend(BackendId(0)).unwrap();
    let mut t2 = sh.backend(BackendId(1)).unwrap();
    let mut t3 = sh.backend(BackendId(2)).unwrap();
    t1.begin(IsolationLevel::ReadCommitted).unwrap();
    let mut rows = Vec::new();
    for i in 0..70 {
        t1.savepoint(&format!("s{i}")).unwrap();
        rows.push(insert(&mut t1));
    }
    // Make the subxids fall below xmax of later snapshots.
    t3.begin(IsolationLevel::ReadCommitted).unwrap();
    t3.assign_xid_if_needed().unwrap();
    t3.commit().unwrap();
    t2.begin(IsolationLevel::ReadCommitted).unwrap();
    let s = t2.statement_snapshot().unwrap();
    assert!(s.suboverflowed);
    for r in &rows {
        assert!(!satisfies_mvcc(r, &s, &t2).unwrap().visible);
        assert!(sh.procarray.xid_in_progress(r.xmin));
    }
    t1.rollback_to("s60").unwrap();
    // Rolled-back subxids are no longer running, though their top is and the
    // cache overflowed (found through subtrans, then the clog says aborted).
    assert!(!XidOracle::is_in_progress(&t2, rows[65].xmin));
    assert!(XidOracle::is_in_progress(&t2, rows[5].xmin));
    t1.commit().unwrap();
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(visible(&mut t2, r), i < 60, "row {i}");
    }
}

#[test]
fn subxact_tree_across_clog_pages_commits_atomically() {
    // Start two xids before a page boundary so subxids land on the next page.
    let (_d, sh, _w) = setup(FullTransactionId(2 * CLOG_XACTS_PER_PAGE as u64 - 2));
    let mut t1 = sh.backend(BackendId(0)).unwrap();
    let mut t2 = sh.backend(BackendId(1)).unwrap();
    t1.begin(IsolationLevel::ReadCommitted).unwrap();
    let a = insert(&mut t1);
    let mut subs = Vec::new();
    for i in 0..4 {
        t1.savepoint(&format!("s{i}")).unwrap();
        subs.push(insert(&mut t1));
    }
    assert!(subs.iter().any(|r| r.xmin / CLOG_XACTS_PER_PAGE != a.xmin / CLOG_XACTS_PER_PAGE));
    t1.commit().unwrap();
    t2.begin(IsolationLevel::ReadCommitted).unwrap();
    assert!(visible(&mut t2, &a));
    for r in &subs {
        assert!(visible(&mut t2, r));
    }
}

#[test]
fn read_committed_vs_repeatable_read() {
    let (_d, sh, _w) = setup(FullTransactionId::FIRST_NORMAL);
    let mut w = sh.backend(BackendId(0)).unwrap();
    let mut rc = sh.backend(BackendId(1)).unwrap();
    let mut rr = sh.backend(BackendId(2)).unwrap();
    rc.begin(IsolationLevel::ReadCommitted).unwrap();
    rr.begin(IsolationLevel::RepeatableRead).unwrap();
    rc.statement_snapshot().unwrap();
    rr.statement_snapshot().unwrap(); // the transaction snapshot
    w.begin(IsolationLevel::ReadCommitted).unwrap();
    let mut row = insert(&mut w);
    w.commit().unwrap();
    assert!(visible(&mut rc, &row), "READ COMMITTED: new snapshot per statement");
    assert!(!visible(&mut rr, &row), "REPEATABLE READ: one snapshot per transaction");
    // A delete committed now: RR still sees the row (and still not, since its
    // insert is after the snapshot); RC stops seeing it.
    w.begin(IsolationLevel::ReadCommitted).unwrap();
    delete(&mut w, &mut row);
    w.commit().unwrap();
    assert!(!visible(&mut rc, &row));
    rr.commit().unwrap();
    rr.begin(IsolationLevel::Serializable).unwrap();
    assert!(!visible(&mut rr, &row));
    // Update test from a new writer: the row was deleted by a committed xact.
    w.begin(IsolationLevel::ReadCommitted).unwrap();
    let (r, hints) = satisfies_update(&row, w.current_command_id(), &w).unwrap();
    assert_eq!(r, TmResult::Deleted);
    assert_ne!(hints & HEAP_XMIN_COMMITTED, 0);
}

#[test]
fn own_insert_then_delete_uses_combo_cid() {
    let (_d, sh, _w) = setup(FullTransactionId::FIRST_NORMAL);
    let mut t = sh.backend(BackendId(0)).unwrap();
    t.begin(IsolationLevel::ReadCommitted).unwrap();
    let mut row = insert(&mut t); // cmin 0
    let before_delete = t.statement_snapshot().unwrap(); // curcid 1
    delete(&mut t, &mut row); // cmax 1
    assert_ne!(row.infomask & HEAP_COMBOCID, 0);
    assert!(satisfies_mvcc(&row, &before_delete, &t).unwrap().visible);
    assert!(!visible(&mut t, &row));
    assert_eq!(satisfies_update(&row, t.current_command_id(), &t).unwrap().0, TmResult::Invisible);
    assert_eq!(satisfies_update(&row, 1, &t).unwrap().0, TmResult::SelfModified);
}

#[test]
fn async_commit_defers_committed_hints_until_wal_flushed() {
    let (_d, sh, wal) = setup(FullTransactionId::FIRST_NORMAL);
    sh.set_synchronous_commit(false);
    wal.set_auto_flush(false);
    let mut w = sh.backend(BackendId(0)).unwrap();
    let mut r = sh.backend(BackendId(1)).unwrap();
    w.begin(IsolationLevel::ReadCommitted).unwrap();
    let row = insert(&mut w);
    w.commit().unwrap();
    r.begin(IsolationLevel::ReadCommitted).unwrap();
    let s = r.statement_snapshot().unwrap();
    let v = satisfies_mvcc(&row, &s, &r).unwrap();
    assert!(v.visible);
    assert_eq!(v.hints & HEAP_XMIN_COMMITTED, 0, "hint set before the commit record is durable");
    let lsn = sh.clog.commit_lsn_for(row.xmin);
    assert!(lsn.is_valid());
    use ferrogres_engine::txn::XactWal;
    wal.flush(lsn).unwrap();
    let v = satisfies_mvcc(&row, &s, &r).unwrap();
    assert_eq!(v.hints & HEAP_XMIN_COMMITTED, HEAP_XMIN_COMMITTED);
}

#[test]
fn vacuum_horizon_follows_oldest_snapshot() {
    let (_d, sh, _w) = setup(FullTransactionId::FIRST_NORMAL);
    let mut old = sh.backend(BackendId(0)).unwrap();
    let mut w = sh.backend(BackendId(1)).unwrap();
    let mut v = sh.backend(BackendId(2)).unwrap();
    w.begin(IsolationLevel::ReadCommitted).unwrap();
    let mut row = insert(&mut w);
    w.commit().unwrap();
    old.begin(IsolationLevel::RepeatableRead).unwrap();
    old.statement_snapshot().unwrap();
    w.begin(IsolationLevel::ReadCommitted).unwrap();
    delete(&mut w, &mut row);
    w.commit().unwrap();
    v.begin(IsolationLevel::ReadCommitted).unwrap();
    let (r, _) = satisfies_vacuum(&row, sh.oldest_xmin(), &v).unwrap();
    assert_eq!(r, HtsvResult::RecentlyDead, "an open snapshot can still see it");
    assert!(visible(&mut old, &row));
    old.commit().unwrap();
    v.commit().unwrap();
    let (r, _) = satisfies_vacuum(&row, sh.oldest_xmin(), &v).unwrap();
    assert_eq!(r, HtsvResult::Dead);
}

#[test]
fn wraparound_stop_limit_refuses_xids() {
    let (_d, sh, _w) = setup(FullTransactionId::FIRST_NORMAL);
    let stop = FIRST_NORMAL_XID + i32::MAX as u32 - STOP_LIMIT_MARGIN;
    sh.set_next_full_xid(FullTransactionId(stop as u64));
    sh.set_oldest_frozen_xid(FIRST_NORMAL_XID, "postgres");
    let mut t = sh.backend(BackendId(0)).unwrap();
    t.begin(IsolationLevel::ReadCommitted).unwrap();
    let e = t.assign_xid_if_needed().unwrap_err();
    assert_eq!(e.sqlstate().as_str(), "54000");
    assert!(e.to_string().starts_with("database is not accepting commands to avoid wraparound data loss in database"));
    t.abort().unwrap();
}

#[test]
fn restart_replays_commits_from_wal() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = TxnConfig::new(dir.path().join("pg_xact"), 4);
    let wal = Arc::new(MemWal::new(true));
    let (committed, aborted, next) = {
        let sh = TxnShared::open(&cfg, FullTransactionId::FIRST_NORMAL, wal.clone(), None).unwrap();
        let mut t = sh.backend(BackendId(0)).unwrap();
        t.begin(IsolationLevel::ReadCommitted).unwrap();
        let c = t.assign_xid_if_needed().unwrap();
        t.savepoint("s").unwrap();
        let cs = t.assign_xid_if_needed().unwrap();
        t.commit().unwrap();
        t.begin(IsolationLevel::ReadCommitted).unwrap();
        let a = t.assign_xid_if_needed().unwrap();
        t.abort().unwrap();
        // crash: nothing flushed to pg_xact
        ((c, cs), a, sh.next_full_xid())
    };
    std::fs::remove_dir_all(dir.path().join("pg_xact")).unwrap();
    let sh = TxnShared::open(&cfg, FullTransactionId::FIRST_NORMAL, Arc::new(MemWal::new(false)), None).unwrap();
    sh.begin_recovery();
    for (rmgr, _, payload) in wal.records() {
        match rmgr {
            ferrogres_engine::txn::TxnRmgr::Clog => sh.clog.redo(&payload).unwrap(),
            ferrogres_engine::txn::TxnRmgr::Xact => sh.redo_xact(&payload).unwrap(),
            ferrogres_engine::txn::TxnRmgr::MultiXact => sh.multixacts.redo(&payload).unwrap(),
        }
    }
    sh.end_recovery().unwrap();
    assert_eq!(sh.next_full_xid(), next);
    use ferrogres_engine::txn::XidStatus;
    assert_eq!(sh.xid_status(committed.0).unwrap(), XidStatus::Committed);
    assert_eq!(sh.xid_status(committed.1).unwrap(), XidStatus::Committed);
    assert_eq!(sh.xid_status(aborted).unwrap(), XidStatus::Aborted);
    let mut t = sh.backend(BackendId(0)).unwrap();
    t.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(t.assign_xid_if_needed().unwrap(), next.xid());
    t.commit().unwrap();
}
