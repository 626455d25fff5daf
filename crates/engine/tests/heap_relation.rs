//! The relation-level heap through the whole engine: big values (TOAST), restart
//! after a clean shutdown, many backends inserting through a small buffer pool, and
//! MVCC visibility across sessions (READ COMMITTED vs REPEATABLE READ).

#![cfg(not(loom))]

use ferrogres_engine::config::Settings;
use ferrogres_engine::engine::{Engine, DEFAULT_TABLESPACE_OID, POSTGRES_DATABASE_OID};
use ferrogres_engine::heap::heapam::{self, heap_detoast, heap_insert_values};
use ferrogres_engine::heap::tuple::{deform_tuple, AttrDesc, Datum};
use ferrogres_engine::storage::RelFileLocator;
use ferrogres_engine::txn::visibility::TmResult;
use ferrogres_engine::txn::IsolationLevel;
use std::sync::Arc;

fn rel(n: u32) -> RelFileLocator {
    RelFileLocator { spc_oid: DEFAULT_TABLESPACE_OID, db_oid: POSTGRES_DATABASE_OID, rel_number: n }
}

fn small_pool() -> Settings {
    let mut s = Settings::default();
    s.set("shared_buffers", "32").unwrap();
    s.set("buffer_mapping_partitions", "8").unwrap();
    s
}

fn desc() -> Vec<AttrDesc> {
    vec![AttrDesc::fixed(4), AttrDesc::varlena()]
}

fn count_visible(engine: &Arc<Engine>, r: RelFileLocator) -> usize {
    let mut b = engine.backend(99).unwrap();
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let snap = b.txn.statement_snapshot().unwrap();
    let mut n = 0;
    heapam::heap_scan(&b, r, &snap, &mut |_, _| {
        n += 1;
        Ok(())
    })
    .unwrap();
    b.txn.commit().unwrap();
    n
}

#[test]
fn big_values_go_out_of_line_and_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let (main, toast) = (rel(30000), rel(30001));
    // 10,000 characters that do not compress, and 1 MB that does.
    let text: Vec<u8> = (0..10_000u32).map(|i| b'a' + (i.wrapping_mul(2654435761) >> 27) as u8 % 26).collect();
    let big: Vec<u8> = (0..1_000_000u32).map(|i| b'0' + (i % 7) as u8).collect();
    {
        let (engine, _) = Engine::open(dir.path(), small_pool()).unwrap();
        engine.create_relation(main).unwrap();
        engine.create_relation(toast).unwrap();
        let mut b = engine.backend(1).unwrap();
        b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        for (k, v) in [(1u64, &text), (2, &big)] {
            heap_insert_values(&mut b, main, Some(toast), &desc(), &[Some(Datum::ByVal(k)), Some(Datum::Varlena(v))])
                .unwrap();
        }
        // Without a toast relation, a row that cannot fit is refused with 54000.
        let e = heap_insert_values(&mut b, main, None, &desc(), &[Some(Datum::ByVal(3)), Some(Datum::Varlena(&text))])
            .unwrap_err();
        assert_eq!(e.sqlstate().as_str(), "54000");
        b.txn.commit().unwrap();
        drop(b);
        engine.shutdown().unwrap();
    }
    // After a restart, both values read back identical.
    let (engine, report) = Engine::open(dir.path(), small_pool()).unwrap();
    assert!(!report.recovered, "a clean shutdown needs no redo");
    let mut b = engine.backend(1).unwrap();
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let snap = b.txn.statement_snapshot().unwrap();
    let mut rows = Vec::new();
    heapam::heap_scan(&b, main, &snap, &mut |_, t| {
        rows.push(t.to_vec());
        Ok(())
    })
    .unwrap();
    assert_eq!(rows.len(), 2);
    for t in &rows {
        let v = deform_tuple(&desc(), t).unwrap();
        let Some(Datum::ByVal(k)) = v[0] else { panic!() };
        assert!(t.len() < 2100, "row {k} was stored inline: {} bytes", t.len());
        let value = heap_detoast(&b, main, v[1].as_ref().unwrap(), &snap).unwrap();
        assert_eq!(&value[..], if k == 1 { &text[..] } else { &big[..] }, "value {k} changed");
    }
    b.txn.commit().unwrap();
}

#[test]
fn many_backends_insert_through_a_small_pool() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(dir.path(), small_pool()).unwrap();
    let r = rel(30010);
    engine.create_relation(r).unwrap();
    let threads = 8;
    let per_thread = 600;
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let engine = engine.clone();
            std::thread::spawn(move || {
                let mut b = engine.backend(10 + t).unwrap();
                let payload = vec![b'x'; 300];
                for i in 0..per_thread {
                    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
                    let k = (t as u64) << 32 | i;
                    heap_insert_values(&mut b, r, None, &desc(), &[Some(Datum::ByVal(k)), Some(Datum::Varlena(&payload))])
                        .unwrap();
                    b.txn.commit().unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(count_visible(&engine, r), threads as usize * per_thread as usize);
    // ~25 rows a page: far more pages than the 32 buffers.
    let nblocks = engine.buffers.nblocks(r, ferrogres_engine::storage::ForkNumber::Main).unwrap();
    assert!(nblocks > 150, "only {nblocks} blocks");
    // Concurrent extension must not leave many pages unused.
    assert!(nblocks < 260, "{nblocks} blocks for {} rows: extension wasted pages", threads * per_thread as i32);
}

#[test]
fn read_committed_sees_new_commits_repeatable_read_does_not() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(dir.path(), small_pool()).unwrap();
    let r = rel(30020);
    engine.create_relation(r).unwrap();
    let mut writer = engine.backend(1).unwrap();
    let mut rc = engine.backend(2).unwrap();
    let mut rr = engine.backend(3).unwrap();
    rc.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    rr.txn.begin(IsolationLevel::RepeatableRead).unwrap();
    let rr_snap = rr.txn.statement_snapshot().unwrap();
    let rc_first = rc.txn.statement_snapshot().unwrap();

    writer.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let tid = heap_insert_values(&mut writer, r, None, &desc(), &[Some(Datum::ByVal(7)), Some(Datum::Varlena(b"v"))])
        .unwrap();
    // Uncommitted: nobody else sees it; the writer does (after its next command).
    writer.txn.command_counter_increment().unwrap();
    let w_snap = writer.txn.statement_snapshot().unwrap();
    assert!(heapam::heap_fetch(&writer, r, tid, &w_snap).unwrap().is_some());
    assert!(heapam::heap_fetch(&rc, r, tid, &rc_first).unwrap().is_none());
    writer.txn.commit().unwrap();

    // READ COMMITTED: a new statement sees the commit; the old snapshot does not.
    let rc_second = rc.txn.statement_snapshot().unwrap();
    assert!(heapam::heap_fetch(&rc, r, tid, &rc_first).unwrap().is_none());
    assert!(heapam::heap_fetch(&rc, r, tid, &rc_second).unwrap().is_some());
    // REPEATABLE READ: every statement uses the transaction's snapshot.
    let rr_again = rr.txn.statement_snapshot().unwrap();
    assert!(heapam::heap_fetch(&rr, r, tid, &rr_snap).unwrap().is_none());
    assert!(heapam::heap_fetch(&rr, r, tid, &rr_again).unwrap().is_none());
    rc.txn.commit().unwrap();
    rr.txn.commit().unwrap();

    // A delete by a running transaction: others get BeingModified and must wait.
    writer.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(heapam::heap_delete(&mut writer, r, tid).unwrap(), TmResult::Ok);
    let mut other = engine.backend(4).unwrap();
    other.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(heapam::heap_delete(&mut other, r, tid).unwrap(), TmResult::BeingModified);
    writer.txn.abort().unwrap();
    // The deleter aborted: the row is live again and the other can delete it.
    assert_eq!(heapam::heap_delete(&mut other, r, tid).unwrap(), TmResult::Ok);
    other.txn.commit().unwrap();
    assert_eq!(count_visible(&engine, r), 0);
}

/// Redo when the crash also lost the file's extension (unsynced writes and size,
/// as a power loss can): every page comes back from the WAL, whose first record
/// for each page after the checkpoint carries its full image. Later records of the
/// same page must apply to that restored image, not to a fresh zero page.
#[test]
fn redo_rebuilds_a_relation_whose_unsynced_extension_was_lost() {
    let dir = tempfile::tempdir().unwrap();
    let r = rel(30030);
    let rows = 1200u64;
    {
        let (engine, _) = Engine::open(dir.path(), small_pool()).unwrap();
        engine.create_relation(r).unwrap();
        engine.checkpoint().unwrap();
        let mut b = engine.backend(1).unwrap();
        let payload = vec![b'p'; 150];
        for k in 0..rows {
            b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
            heap_insert_values(&mut b, r, None, &desc(), &[Some(Datum::ByVal(k)), Some(Datum::Varlena(&payload))])
                .unwrap();
            b.txn.commit().unwrap();
        }
        drop(b);
        // A crash: no shutdown checkpoint.
    }
    // Nothing was fsynced since the checkpoint, so a power loss may take the file's
    // growth with it: simulate the worst case, the file back to empty.
    let path = dir.path().join(format!("base/{}/{}", r.db_oid, r.rel_number));
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(0).unwrap();
    let (engine, report) = Engine::open(dir.path(), small_pool()).unwrap();
    assert!(report.recovered);
    assert_eq!(count_visible(&engine, r), rows as usize, "rows lost when redo met blocks past the end of the file");
}

/// The page-at-a-time scan: the same tuples as the callback scan, in the same
/// order; a relation larger than a quarter of the pool is read through a
/// BulkRead ring, so the pages of another relation that were in the pool stay
/// there; and a scan stopped after its first page read one page.
#[test]
fn heap_scan_by_page_uses_a_ring_for_a_large_relation_and_can_stop() {
    let dir = tempfile::tempdir().unwrap();
    let (big, hot) = (rel(30100), rel(30101));
    let (engine, _) = Engine::open(dir.path(), small_pool()).unwrap();
    engine.create_relation(big).unwrap();
    engine.create_relation(hot).unwrap();
    let mut b = engine.backend(1).unwrap();
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let filler = vec![b'x'; 500];
    for k in 0..2000u64 {
        heap_insert_values(&mut b, big, None, &desc(), &[Some(Datum::ByVal(k)), Some(Datum::Varlena(&filler))]).unwrap();
    }
    heap_insert_values(&mut b, hot, None, &desc(), &[Some(Datum::ByVal(7)), Some(Datum::Varlena(b"hot"))]).unwrap();
    b.txn.commit().unwrap();
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let snap = b.txn.statement_snapshot().unwrap();

    let mut by_callback = Vec::new();
    heapam::heap_scan(&b, big, &snap, &mut |tid, _| {
        by_callback.push(tid);
        Ok(())
    })
    .unwrap();
    assert_eq!(by_callback.len(), 2000);

    // The hot relation's page is in the pool; a ring scan of `big` (far more
    // pages than the 32-buffer pool) must not evict it.
    assert_eq!(count_visible(&engine, hot), 1);
    let mut scan = heapam::HeapScan::new(&b, big).unwrap();
    assert!(scan.nblocks() as usize > 32, "the relation is larger than the pool: {} pages", scan.nblocks());
    assert!(scan.strategy().is_some(), "a relation larger than a quarter of the pool is scanned through a ring");
    let mut by_page = Vec::new();
    let mut pages = 0;
    while scan.next_page(&b, &snap, &mut |tid, _| {
        by_page.push(tid);
        Ok(())
    })
    .unwrap()
    {
        pages += 1;
    }
    assert_eq!(by_page, by_callback);
    assert_eq!(pages, scan.nblocks());
    assert!(scan.strategy().unwrap().ring_buffers().len() <= scan.strategy().unwrap().ring_size());
    let reads_before = engine.buffers.stats().reads;
    assert_eq!(count_visible(&engine, hot), 1);
    assert_eq!(engine.buffers.stats().reads, reads_before, "the other relation's page was evicted by the ring scan");

    // Stopping after the first page: one page read, its tuples only.
    let mut first = Vec::new();
    let mut scan = heapam::HeapScan::new(&b, big).unwrap();
    assert!(scan.next_page(&b, &snap, &mut |tid, _| {
        first.push(tid);
        Ok(())
    })
    .unwrap());
    assert!(!first.is_empty() && first.iter().all(|t| t.block == 0));
    assert_eq!(first[..], by_callback[..first.len()]);
    b.txn.commit().unwrap();
}
