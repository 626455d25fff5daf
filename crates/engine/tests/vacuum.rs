//! VACUUM, pruning, free space and hint bits through the whole engine: dead rows
//! removed and their space reused without growing the relation, an old snapshot
//! keeping rows alive, freezing, pruning that never waits for a pinned page, crash
//! after VACUUM and after pruning, hint bits under a shared lock and a crash right
//! after, and autovacuum.
#![cfg(not(loom))]

use ferrogres_engine::config::Settings;
use ferrogres_engine::engine::{Backend, Engine, DEFAULT_TABLESPACE_OID, POSTGRES_DATABASE_OID};
use ferrogres_engine::heap::autovacuum::{self, pgstat_count_heap_delete, pgstat_count_heap_insert};
use ferrogres_engine::buffer::LockedBuffer;
use ferrogres_engine::heap::freespace::{
    fsm_vacuum, get_page_with_free_space, get_recorded_free_space, record_and_get_page_with_free_space,
    record_current_free_space, record_free_space, set_target_block,
};
use ferrogres_engine::heap::fsm::*;
use ferrogres_engine::heap::heapam;
use ferrogres_engine::heap::page::{heap_page_get_header, heap_page_tuples};
use ferrogres_engine::heap::pruneheap::{heap_page_prune_opt, scan_page_set_hints};
use ferrogres_engine::heap::tuple::{form_tuple, AttrDesc, Datum, Tid, FROZEN_TRANSACTION_ID, HEAP_XMIN_COMMITTED};
use ferrogres_engine::heap::vacuum::{vacuum_rel, VacuumOptions, VacuumStats};
use ferrogres_engine::storage::page::{page_get_item_id, page_max_offset_number, LpFlags};
use ferrogres_engine::storage::{BufferTag, ForkNumber, RelFileLocator};
use ferrogres_engine::txn::visibility::TmResult;
use ferrogres_engine::txn::IsolationLevel;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn rel(n: u32) -> RelFileLocator {
    RelFileLocator { spc_oid: DEFAULT_TABLESPACE_OID, db_oid: POSTGRES_DATABASE_OID, rel_number: n }
}

fn settings() -> Settings {
    let mut s = Settings::default();
    s.set("shared_buffers", "256").unwrap();
    s.set("buffer_mapping_partitions", "16").unwrap();
    s.set("autovacuum", "off").unwrap();
    s
}

fn row(k: u64, len: usize) -> Vec<u8> {
    let desc = [AttrDesc::fixed(8), AttrDesc::varlena()];
    let payload = vec![b'a' + (k % 26) as u8; len];
    form_tuple(&desc, &[Some(Datum::ByVal(k)), Some(Datum::Varlena(&payload))]).unwrap()
}

/// Inserts `n` rows (keys from `first`) in one transaction; counts them for
/// autovacuum as heapam will.
fn insert_rows(b: &mut Backend, r: RelFileLocator, first: u64, n: u64, len: usize) -> Vec<Tid> {
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let tids = (first..first + n)
        .map(|k| {
            let t = heapam::heap_insert(b, r, &row(k, len)).unwrap();
            pgstat_count_heap_insert(b.engine(), r);
            t
        })
        .collect();
    b.txn.commit().unwrap();
    tids
}

fn delete_rows(b: &mut Backend, r: RelFileLocator, tids: &[Tid]) {
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    for &t in tids {
        assert_eq!(heapam::heap_delete(b, r, t).unwrap(), TmResult::Ok);
        pgstat_count_heap_delete(b.engine(), r);
    }
    b.txn.commit().unwrap();
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

fn vacuum(engine: &Arc<Engine>, r: RelFileLocator, freeze: bool, seen: &mut Vec<Tid>) -> VacuumStats {
    let mut opts = VacuumOptions::from_settings(engine.settings());
    opts.freeze = freeze;
    vacuum_rel(engine, None, r, opts, &mut |tids: &[Tid]| {
        seen.extend_from_slice(tids);
        Ok(())
    })
    .unwrap()
}

fn nblocks(engine: &Engine, r: RelFileLocator) -> u32 {
    engine.buffers.nblocks(r, ForkNumber::Main).unwrap()
}

/// Line-pointer states of a block: (normal, dead, unused or redirect).
fn line_pointers(engine: &Engine, r: RelFileLocator, block: u32) -> (usize, usize, usize) {
    let pin = engine.buffers.read_buffer(BufferTag::new(r, ForkNumber::Main, block), None).unwrap();
    let page = pin.lock_shared();
    let mut c = (0, 0, 0);
    for off in 1..=page_max_offset_number(&page[..]) {
        match page_get_item_id(&page[..], off).unwrap().flags {
            LpFlags::Normal => c.0 += 1,
            LpFlags::Dead => c.1 += 1,
            _ => c.2 += 1,
        }
    }
    c
}

#[test]
fn vacuum_removes_deleted_rows_and_their_space_is_reused() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    let r = rel(50000);
    engine.create_relation(r).unwrap();
    let mut b = engine.backend(1).unwrap();
    let tids = insert_rows(&mut b, r, 0, 2000, 100);
    let blocks = nblocks(&engine, r);
    assert!(blocks >= 20, "{blocks} blocks");
    // Delete three rows of every four.
    let deleted: Vec<Tid> = tids.iter().enumerate().filter(|(i, _)| i % 4 != 0).map(|(_, t)| *t).collect();
    delete_rows(&mut b, r, &deleted);
    assert_eq!(count_visible(&engine, r), 500);

    // Scans prune full pages on the way (heap_page_prune_opt): what they pruned is
    // already LP_DEAD; VACUUM prunes the rest. Together: every deleted row.
    let pruned_by_scans: usize = (0..blocks).map(|blk| line_pointers(&engine, r, blk).1).sum();
    let mut seen = Vec::new();
    let st = vacuum(&engine, r, false, &mut seen);
    assert_eq!(st.pages_scanned, blocks as u64);
    assert_eq!(st.tuples_removed as usize + pruned_by_scans, 1500);
    assert_eq!(st.dead_items_removed, 1500);
    assert_eq!(st.recently_dead, 0);
    assert_eq!(st.live_tuples, 500);
    assert_eq!(st.index_scans, 1);
    // The index callback got exactly the deleted rows' TIDs.
    let mut a = seen.clone();
    a.sort();
    let mut e = deleted.clone();
    e.sort();
    assert_eq!(a, e);
    assert_eq!(count_visible(&engine, r), 500);
    for blk in 0..blocks {
        let (_, dead, _) = line_pointers(&engine, r, blk);
        assert_eq!(dead, 0, "block {blk} still has dead line pointers");
    }
    // A second VACUUM finds nothing to do.
    let mut seen2 = Vec::new();
    let st2 = vacuum(&engine, r, false, &mut seen2);
    assert_eq!((st2.tuples_removed, st2.dead_items_removed, st2.index_scans), (0, 0, 0));
    assert!(seen2.is_empty());

    // Inserting 1500 rows again through the FSM (what heap_insert will do) fits in
    // the freed space: the relation does not grow.
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let len = row(0, 100).len();
    for k in 10_000..11_500u64 {
        let target = get_page_with_free_space(&engine, r, len).unwrap().expect("the FSM knows free space");
        set_target_block(&mut b, r, target);
        let t = heapam::heap_insert(&mut b, r, &row(k, 100)).unwrap();
        assert_eq!(t.block, target, "the FSM's page had room");
        record_current_free_space(&engine, r, t.block).unwrap();
    }
    b.txn.commit().unwrap();
    assert_eq!(nblocks(&engine, r), blocks, "free space was reused");
    assert_eq!(count_visible(&engine, r), 2000);
    drop(b);
    engine.shutdown().unwrap();
}

#[test]
fn an_old_snapshot_keeps_deleted_rows_until_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    let r = rel(50010);
    engine.create_relation(r).unwrap();
    let mut w = engine.backend(1).unwrap();
    let tids = insert_rows(&mut w, r, 0, 300, 50);
    let mut reader = engine.backend(2).unwrap();
    reader.txn.begin(IsolationLevel::RepeatableRead).unwrap();
    let snap = reader.txn.statement_snapshot().unwrap();
    delete_rows(&mut w, r, &tids[..100]);

    let mut seen = Vec::new();
    let st = vacuum(&engine, r, false, &mut seen);
    assert_eq!(st.tuples_removed, 0);
    assert_eq!(st.recently_dead, 100);
    assert_eq!(st.live_tuples, 200);
    assert!(seen.is_empty());
    // The reader still sees every deleted row.
    for &t in &tids[..100] {
        assert!(heapam::heap_fetch(&reader, r, t, &snap).unwrap().is_some());
    }
    let mut n = 0;
    heapam::heap_scan(&reader, r, &snap, &mut |_, _| {
        n += 1;
        Ok(())
    })
    .unwrap();
    assert_eq!(n, 300);
    reader.txn.commit().unwrap();

    let st = vacuum(&engine, r, false, &mut seen);
    assert_eq!(st.tuples_removed, 100);
    assert_eq!(st.dead_items_removed, 100);
    assert_eq!(st.recently_dead, 0);
    assert_eq!(count_visible(&engine, r), 200);
    drop((w, reader));
    engine.shutdown().unwrap();
}

#[test]
fn freeze_sets_frozen_xmin_and_rows_stay_visible() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    let r = rel(50020);
    engine.create_relation(r).unwrap();
    let mut b = engine.backend(1).unwrap();
    insert_rows(&mut b, r, 0, 400, 40);
    // Without FREEZE, xmins younger than vacuum_freeze_min_age stay.
    let st = vacuum(&engine, r, false, &mut Vec::new());
    assert_eq!(st.tuples_frozen, 0);
    let first_xmin = {
        let pin = engine.buffers.read_buffer(BufferTag::new(r, ForkNumber::Main, 0), None).unwrap();
        let page = pin.lock_shared();
        heap_page_get_header(&page[..], 1).unwrap().xmin
    };
    assert_eq!(st.new_relfrozenxid, first_xmin, "the oldest unfrozen xid bounds relfrozenxid");

    // A running transaction's rows are not frozen by VACUUM FREEZE.
    let mut other = engine.backend(2).unwrap();
    other.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    heapam::heap_insert(&mut other, r, &row(9999, 40)).unwrap();
    let st = vacuum(&engine, r, true, &mut Vec::new());
    assert_eq!(st.tuples_frozen, 400);
    assert_eq!(st.in_progress, 1);
    for blk in 0..nblocks(&engine, r) {
        let pin = engine.buffers.read_buffer(BufferTag::new(r, ForkNumber::Main, blk), None).unwrap();
        let page = pin.lock_shared();
        for item in heap_page_tuples(&page[..]) {
            let (off, _) = item.unwrap();
            let h = heap_page_get_header(&page[..], off).unwrap();
            if h.xmin == first_xmin {
                panic!("block {blk} offset {off} not frozen");
            }
            if h.xmin == FROZEN_TRANSACTION_ID {
                assert!(h.xmin_frozen());
            }
        }
    }
    // relfrozenxid can advance to the running inserter's xid.
    let running = other.txn.top_xid().unwrap();
    assert_eq!(st.new_relfrozenxid, running);
    other.txn.commit().unwrap();
    assert_eq!(count_visible(&engine, r), 401);
    // Frozen rows survive a crash (the freeze is WAL-logged).
    drop((b, other));
    drop(engine);
    let (engine, rep) = Engine::open(dir.path(), settings()).unwrap();
    assert!(rep.recovered);
    assert_eq!(count_visible(&engine, r), 401);
    let pin = engine.buffers.read_buffer(BufferTag::new(r, ForkNumber::Main, 0), None).unwrap();
    assert_eq!(heap_page_get_header(&pin.lock_shared()[..], 1).unwrap().xmin, FROZEN_TRANSACTION_ID);
    drop(pin);
    engine.shutdown().unwrap();
}

#[test]
fn opportunistic_pruning_skips_a_pinned_page_and_survives_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let r = rel(50030);
    let per_page;
    {
        let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
        engine.create_relation(r).unwrap();
        let mut b = engine.backend(1).unwrap();
        // Fill block 0 and spill into block 1.
        let tids = insert_rows(&mut b, r, 0, 120, 200);
        let on0: Vec<Tid> = tids.iter().copied().filter(|t| t.block == 0).collect();
        per_page = on0.len();
        assert!(per_page > 20 && per_page < 120);
        delete_rows(&mut b, r, &on0);
        let tag = BufferTag::new(r, ForkNumber::Main, 0);
        let pin = engine.buffers.read_buffer(tag, None).unwrap();
        // Another backend's pin (a reader in the middle of the page).
        let reader_pin = engine.buffers.read_buffer(tag, None).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                let b2 = engine.backend(2).unwrap();
                let out = heap_page_prune_opt(&b2, r, &engine.buffers.read_buffer(tag, None).unwrap()).unwrap();
                tx.send(out).unwrap();
            });
            let out = rx.recv_timeout(Duration::from_secs(10)).expect("pruning must not wait for a pin");
            assert!(out.attempted && out.skipped_lock && out.ndeleted == 0, "{out:?}");
        });
        drop(reader_pin);
        assert_eq!(line_pointers(&engine, r, 0), (per_page, 0, 0));
        let out = heap_page_prune_opt(&b, r, &pin).unwrap();
        assert!(out.attempted && !out.skipped_lock, "{out:?}");
        assert_eq!(out.ndeleted, per_page);
        assert!(out.freed > 4000, "{out:?}");
        assert_eq!(line_pointers(&engine, r, 0), (0, per_page, 0));
        // The freed space is in the FSM.
        assert!(ferrogres_engine::heap::freespace::get_recorded_free_space(&engine, r, 0).unwrap() > 4000);
        // A second call finds nothing to prune (pd_prune_xid cleared, room enough).
        let again = heap_page_prune_opt(&b, r, &pin).unwrap();
        assert!(!again.attempted);
        drop(pin);
        drop(b);
        engine.wal.background_flush().unwrap();
        // Crash: no shutdown checkpoint.
    }
    let (engine, rep) = Engine::open(dir.path(), settings()).unwrap();
    assert!(rep.recovered);
    assert_eq!(line_pointers(&engine, r, 0), (0, per_page, 0), "prune redo");
    assert_eq!(count_visible(&engine, r), 120 - per_page);
    engine.shutdown().unwrap();
}

#[test]
fn crash_after_vacuum_keeps_rows_correct() {
    let dir = tempfile::tempdir().unwrap();
    let r = rel(50040);
    {
        let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
        engine.create_relation(r).unwrap();
        let mut b = engine.backend(1).unwrap();
        let tids = insert_rows(&mut b, r, 0, 1000, 80);
        // A checkpoint first: the vacuum's page changes then log full-page images.
        engine.checkpoint().unwrap();
        let odd: Vec<Tid> = tids.iter().copied().skip(1).step_by(2).collect();
        delete_rows(&mut b, r, &odd);
        let st = vacuum(&engine, r, true, &mut Vec::new());
        assert_eq!(st.tuples_removed, 500);
        assert_eq!(st.tuples_frozen, 500);
        // VACUUM does not flush the WAL (nothing waits for it); the WAL writer
        // would within moments. Flush now so that redo has the records.
        engine.wal.background_flush().unwrap();
        drop(b);
    }
    let (engine, rep) = Engine::open(dir.path(), settings()).unwrap();
    assert!(rep.recovered && rep.redo_records > 0);
    assert_eq!(count_visible(&engine, r), 500);
    // Every page reads back (checksums valid) without dead line pointers.
    for blk in 0..nblocks(&engine, r) {
        assert_eq!(line_pointers(&engine, r, blk).1, 0);
    }
    // The relation keeps working: a new VACUUM finds nothing, inserts fit.
    let st = vacuum(&engine, r, false, &mut Vec::new());
    assert_eq!((st.tuples_removed, st.dead_items_removed, st.live_tuples), (0, 0, 500));
    let mut b = engine.backend(1).unwrap();
    insert_rows(&mut b, r, 5000, 10, 80);
    assert_eq!(count_visible(&engine, r), 510);
    drop(b);
    engine.shutdown().unwrap();
}

fn xmin_committed_hints(engine: &Engine, r: RelFileLocator, block: u32) -> (usize, usize) {
    let pin = engine.buffers.read_buffer(BufferTag::new(r, ForkNumber::Main, block), None).unwrap();
    let page = pin.lock_shared();
    let mut c = (0, 0);
    for item in heap_page_tuples(&page[..]) {
        let (off, _) = item.unwrap();
        let h = heap_page_get_header(&page[..], off).unwrap();
        c.1 += 1;
        c.0 += (h.infomask & HEAP_XMIN_COMMITTED != 0) as usize;
    }
    c
}

#[test]
fn hint_bits_are_set_under_a_shared_lock_and_a_crash_after_is_harmless() {
    let dir = tempfile::tempdir().unwrap();
    let r = rel(50050);
    let n;
    {
        let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
        engine.create_relation(r).unwrap();
        let mut b = engine.backend(1).unwrap();
        let tids = insert_rows(&mut b, r, 0, 40, 40);
        n = tids.len();
        assert!(tids.iter().all(|t| t.block == 0));
        engine.checkpoint().unwrap();
        let tag = BufferTag::new(r, ForkNumber::Main, 0);
        let pin = engine.buffers.read_buffer(tag, None).unwrap();
        assert!(!pin.is_dirty());
        assert_eq!(xmin_committed_hints(&engine, r, 0), (0, n));
        // A scan with hint bits, while another shared locker reads the page.
        b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        let snap = b.txn.statement_snapshot().unwrap();
        let other = pin.lock_shared();
        let page = pin.lock_shared();
        let mut seen = 0;
        let hinted = scan_page_set_hints(&b, &page, 0, &snap, &mut |_, _| {
            seen += 1;
            Ok(())
        })
        .unwrap();
        assert_eq!((seen, hinted), (n, n));
        assert!(heap_page_tuples(&other[..]).all(|t| t.is_ok()));
        drop((page, other));
        b.txn.commit().unwrap();
        assert_eq!(xmin_committed_hints(&engine, r, 0), (n, n));
        // Hint-only changes leave the buffer clean (README: hint-bit policy).
        assert!(!pin.is_dirty());
        drop(pin);
        drop(b);
        // Crash right after.
    }
    {
        let (engine, rep) = Engine::open(dir.path(), settings()).unwrap();
        assert!(rep.recovered);
        // The page reads back (its checksum is valid); the hints were not written.
        assert_eq!(xmin_committed_hints(&engine, r, 0), (0, n));
        assert_eq!(count_visible(&engine, r), n);
        // count_visible does not set hints (heapam's scan does not yet): do it,
        // then a real change of the page carries the hints to disk.
        let mut b = engine.backend(1).unwrap();
        b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        let snap = b.txn.statement_snapshot().unwrap();
        let pin = engine.buffers.read_buffer(BufferTag::new(r, ForkNumber::Main, 0), None).unwrap();
        scan_page_set_hints(&b, &pin.lock_shared(), 0, &snap, &mut |_, _| Ok(())).unwrap();
        drop(pin);
        assert_eq!(heapam::heap_delete(&mut b, r, Tid::new(0, 1)).unwrap(), TmResult::Ok);
        b.txn.commit().unwrap();
        engine.checkpoint().unwrap();
        drop(b);
        // Crash again.
    }
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    assert_eq!(xmin_committed_hints(&engine, r, 0), (n, n));
    assert_eq!(count_visible(&engine, r), n - 1);
    engine.shutdown().unwrap();
}

#[test]
fn autovacuum_vacuums_a_relation_past_its_threshold() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = settings();
    s.set("autovacuum", "on").unwrap();
    s.autovacuum_naptime_ms = 50; // below the 1 s minimum of the setting
    s.set("autovacuum_vacuum_threshold", "20").unwrap();
    s.set("autovacuum_vacuum_scale_factor", "0").unwrap();
    s.set("autovacuum_vacuum_insert_threshold", "100000").unwrap();
    let (engine, _) = Engine::open(dir.path(), s).unwrap();
    let r = rel(50060);
    engine.create_relation(r).unwrap();
    // Declare the relation index-free: full cleanup.
    autovacuum::set_index_cleanup(&engine, r, Some(Arc::new(|_: &[Tid]| Ok(()))));
    let mut b = engine.backend(1).unwrap();
    let tids = insert_rows(&mut b, r, 0, 100, 40);
    // Below the threshold: nothing happens.
    delete_rows(&mut b, r, &tids[..10]);
    std::thread::sleep(Duration::from_millis(300));
    let c = autovacuum::pgstat_rel(&engine, r);
    assert_eq!(c.autovacuum_count.load(std::sync::atomic::Ordering::Relaxed), 0);
    delete_rows(&mut b, r, &tids[10..40]);
    // A round may run while the deletes are in progress (counted per row, as
    // they happen); a later round then finishes the job.
    let start = Instant::now();
    let relaxed = std::sync::atomic::Ordering::Relaxed;
    while c.reltuples.load(relaxed) != 60 || c.dead_since_vacuum.load(relaxed) != 0 {
        assert!(start.elapsed() < Duration::from_secs(20), "autovacuum did not run: {c:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(c.autovacuum_count.load(relaxed) >= 1);
    // The deleted rows' line pointers are gone.
    let mut total = (0, 0, 0);
    for blk in 0..nblocks(&engine, r) {
        let (n, d, u) = line_pointers(&engine, r, blk);
        total = (total.0 + n, total.1 + d, total.2 + u);
    }
    assert_eq!(total, (60, 0, 40));
    assert_eq!(count_visible(&engine, r), 60);
    drop(b);
    engine.shutdown().unwrap();
}

/// FSM page `addr` of `r`, exclusive-locked (it must exist).
fn fsm_page(engine: &Engine, r: RelFileLocator, addr: FsmAddress) -> LockedBuffer<'_> {
    let tag = BufferTag::new(r, ForkNumber::Fsm, fsm_logical_to_physical(addr));
    engine.buffers.read_buffer(tag, None).unwrap().into_locked()
}

    #[test]
    fn fsm_record_search_and_stale_upper_levels() {
        let dir = tempfile::tempdir().unwrap();
        let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
        let r = rel(50070);
        engine.create_relation(r).unwrap();
        assert_eq!(get_page_with_free_space(&engine, r, 100).unwrap(), None);
        // A block on the second bottom page: the fork grows to reach it.
        let far = SLOTS_PER_FSM_PAGE as u32 + 5;
        record_free_space(&engine, r, far, 4000).unwrap();
        record_free_space(&engine, r, 3, 200).unwrap();
        assert_eq!(get_page_with_free_space(&engine, r, 3000).unwrap(), Some(far));
        assert_eq!(get_page_with_free_space(&engine, r, 8000).unwrap(), None);
        assert!(get_recorded_free_space(&engine, r, far).unwrap() >= 3900);
        // Block 3 found for small requests (either 3 or far qualifies).
        let b = get_page_with_free_space(&engine, r, 150).unwrap().unwrap();
        assert!(b == 3 || b == far);
        // The page filled up: the retry records it and finds nothing else big.
        assert_eq!(record_and_get_page_with_free_space(&engine, r, far, 0, 3000).unwrap(), None);
        // Make an upper level stale-high by hand: the search corrects it.
        let (addr, _) = fsm_get_location(far);
        let (parent, pslot) = fsm_get_parent(addr);
        {
            let mut p = fsm_page(&engine, r, parent);
            fsm_set_avail(&mut p[..], pslot, 200);
            drop(p);
            let mut root = fsm_page(&engine, r, FSM_ROOT_ADDRESS);
            fsm_set_avail(&mut root[..], 0, 200);
        }
        assert_eq!(get_page_with_free_space(&engine, r, 3000).unwrap(), None);
        let p = fsm_get_avail(&fsm_page(&engine, r, parent)[..], pslot);
        assert_eq!(p, 0, "the stale parent slot was corrected");
        let root = fsm_get_avail(&fsm_page(&engine, r, FSM_ROOT_ADDRESS)[..], 0);
        assert_eq!(root, fsm_space_avail_to_cat(200), "and the root's, level by level");
        // A stale-low upper level hides space until fsm_vacuum.
        let (addr0, slot7) = fsm_get_location(7);
        {
            let mut bottom = fsm_page(&engine, r, addr0);
            fsm_set_avail(&mut bottom[..], slot7, 200);
        }
        assert_eq!(get_page_with_free_space(&engine, r, 5000).unwrap(), None);
        fsm_vacuum(&engine, r).unwrap();
        assert_eq!(get_page_with_free_space(&engine, r, 5000).unwrap(), Some(7));
        drop(engine);
    }

#[test]
fn fsm_torn_page_reads_as_empty_and_is_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let r = rel(50080);
    {
        let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
        engine.create_relation(r).unwrap();
        record_free_space(&engine, r, 10, 5000).unwrap();
        assert_eq!(get_page_with_free_space(&engine, r, 4000).unwrap(), Some(10));
        engine.shutdown().unwrap();
    }
    // Tear the bottom FSM page on disk (what a crash mid-write can leave).
    let (bottom, _) = fsm_heap_block_location(10);
    let path = dir.path().join(ferrogres_engine::storage::smgr::Smgr::rel_path(r, ForkNumber::Fsm, 0));
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bottom as usize * 8192 + 4096;
    for b in &mut bytes[at..at + 512] {
        *b ^= 0x5a;
    }
    std::fs::write(&path, &bytes).unwrap();
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    // Searching treats the torn page as empty: no error, nothing found there.
    assert_eq!(get_page_with_free_space(&engine, r, 4000).unwrap(), None);
    assert_eq!(get_recorded_free_space(&engine, r, 10).unwrap(), 0);
    // Recording rebuilds it.
    record_free_space(&engine, r, 12, 6000).unwrap();
    assert_eq!(get_page_with_free_space(&engine, r, 4000).unwrap(), Some(12));
    engine.shutdown().unwrap();
}

/// Writers insert and delete while VACUUM runs in a loop and REPEATABLE READ
/// readers check that their snapshot's row count never changes under them.
#[test]
fn vacuum_concurrent_with_writers_and_old_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    let r = rel(50090);
    engine.create_relation(r).unwrap();
    let mut b = engine.backend(1).unwrap();
    insert_rows(&mut b, r, 0, 200, 60);
    drop(b);
    let stop = std::sync::atomic::AtomicBool::new(false);
    let vacuums = std::sync::atomic::AtomicU64::new(0);
    let writers_done = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for w in 0..3u32 {
            let (engine, writers_done) = (&engine, &writers_done);
            s.spawn(move || {
                let mut b = engine.backend(10 + w as i32).unwrap();
                for round in 0..15u64 {
                    let tids = insert_rows(&mut b, r, 1_000_000 * (w as u64 + 1) + round * 100, 40, 60);
                    delete_rows(&mut b, r, &tids);
                }
                writers_done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            });
        }
        for k in 0..2u32 {
            let (engine, stop) = (&engine, &stop);
            s.spawn(move || {
                let mut b = engine.backend(20 + k as i32).unwrap();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    b.txn.begin(IsolationLevel::RepeatableRead).unwrap();
                    let snap = b.txn.statement_snapshot().unwrap();
                    let count = |b: &Backend| {
                        let mut n = 0;
                        heapam::heap_scan(b, r, &snap, &mut |_, _| {
                            n += 1;
                            Ok(())
                        })
                        .unwrap();
                        n
                    };
                    let first = count(&b);
                    std::thread::sleep(Duration::from_millis(5));
                    assert_eq!(count(&b), first, "a snapshot's rows changed under VACUUM");
                    assert!(first >= 200);
                    b.txn.commit().unwrap();
                }
            });
        }
        let (engine, stop, vacuums) = (&engine, &stop, &vacuums);
        s.spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                vacuum(engine, r, false, &mut Vec::new());
                vacuums.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        });
        // Writers end first; then stop readers and the vacuum loop.
        let deadline = Instant::now() + Duration::from_secs(60);
        while writers_done.load(std::sync::atomic::Ordering::SeqCst) < 3
            || vacuums.load(std::sync::atomic::Ordering::Relaxed) < 3
        {
            std::thread::sleep(Duration::from_millis(20));
            assert!(Instant::now() < deadline, "writers did not finish");
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    assert!(vacuums.load(std::sync::atomic::Ordering::Relaxed) >= 3);
    // Everything deleted is removable now.
    let st = vacuum(&engine, r, false, &mut Vec::new());
    assert_eq!(st.recently_dead, 0);
    assert_eq!(st.live_tuples, 200);
    let total: usize = (0..nblocks(&engine, r)).map(|blk| line_pointers(&engine, r, blk).1).sum();
    assert_eq!(total, 0, "dead line pointers left");
    assert_eq!(count_visible(&engine, r), 200);
    engine.shutdown().unwrap();
}

#[test]
fn fsm_page_with_inconsistent_inner_nodes_is_rebuilt_by_a_search() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    let r = rel(50100);
    engine.create_relation(r).unwrap();
    // A heap block on bottom page 2: level-1 slot 2 summarizes it.
    let blk = 2 * SLOTS_PER_FSM_PAGE as u32 + 3;
    record_free_space(&engine, r, blk, 5000).unwrap();
    // Zero the inner node above level-1 slots 2 and 3 (node 2048 of the page; nodes
    // start after the 24-byte header and the 4-byte next-slot field): the page's
    // root still says "space", the path to it says none.
    let (level1, _) = fsm_get_parent(fsm_get_location(blk).0);
    {
        let mut p = fsm_page(&engine, r, level1);
        p[24 + 4 + 2048] = 0;
    }
    assert_eq!(get_page_with_free_space(&engine, r, 4000).unwrap(), Some(blk));
    engine.shutdown().unwrap();
}

#[test]
fn vacuum_options_dead_tid_limit_index_cleanup_off_and_pinned_pages() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    let r = rel(50110);
    engine.create_relation(r).unwrap();
    let mut b = engine.backend(1).unwrap();
    let tids = insert_rows(&mut b, r, 0, 1000, 100);
    let blocks = nblocks(&engine, r);

    // Not inside a transaction block.
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let e = vacuum_rel(&engine, Some(&b), r, VacuumOptions::from_settings(engine.settings()), &mut |_: &[Tid]| Ok(()))
        .unwrap_err();
    assert_eq!(e.sqlstate().as_str(), "25001");
    b.txn.commit().unwrap();

    // INDEX_CLEANUP OFF: pruned to LP_DEAD, the callback never called, nothing unused.
    delete_rows(&mut b, r, &tids[..300]);
    let mut opts = VacuumOptions::from_settings(engine.settings());
    opts.index_cleanup = false;
    let mut calls = 0;
    let st = vacuum_rel(&engine, Some(&b), r, opts, &mut |_: &[Tid]| {
        calls += 1;
        Ok(())
    })
    .unwrap();
    assert_eq!((calls, st.tuples_removed, st.dead_items_left, st.dead_items_removed), (0, 300, 300, 0));
    let dead: usize = (0..blocks).map(|blk| line_pointers(&engine, r, blk).1).sum();
    assert_eq!(dead, 300);

    // A pinned page is not waited for in the scan: its LP_DEAD items are still
    // collected (read under a shared lock), and removed in phase 3 once unpinned.
    delete_rows(&mut b, r, &tids[300..600]);
    let first_block = tids[300].block;
    let pinned = engine.buffers.read_buffer(BufferTag::new(r, ForkNumber::Main, first_block), None).unwrap();
    let mut opts = VacuumOptions::from_settings(engine.settings());
    opts.max_dead_tids = 100;
    let (tx, rx) = std::sync::mpsc::channel();
    let mut batches = Vec::new();
    std::thread::scope(|s| {
        let engine = &engine;
        s.spawn(move || {
            let st = vacuum_rel(engine, None, r, opts, &mut |t: &[Tid]| {
                batches.push(t.len());
                Ok(())
            })
            .unwrap();
            tx.send((st, batches)).unwrap();
        });
        // Phase 3 waits for the pin on that page: let it go after a moment.
        std::thread::sleep(Duration::from_millis(200));
        drop(pinned);
    });
    let (st, batches) = rx.recv().unwrap();
    assert_eq!(st.pages_cleanup_skipped, 1);
    let unpruned_rows = tids[300..600].iter().filter(|t| t.block == first_block).count() as u64;
    assert_eq!((st.missed_dead, st.recently_dead), (unpruned_rows, 0));
    assert!(st.index_scans >= 3, "{st:?}");
    assert!(batches.iter().all(|&n| n > 0));
    // 300 older dead items, plus the 300 new rows, of which those on the pinned
    // page were not pruned (still normal tuples, counted as not yet removed).
    let unpruned = tids[300..600].iter().filter(|t| t.block == first_block).count() as u64;
    assert_eq!(st.tuples_removed, 300 - unpruned);
    assert_eq!(st.dead_items_removed, 600 - unpruned);
    assert_eq!(batches.iter().sum::<usize>() as u64, 600 - unpruned);
    // The next VACUUM removes the rest.
    let st = vacuum(&engine, r, false, &mut Vec::new());
    assert_eq!((st.tuples_removed, st.dead_items_removed), (unpruned, unpruned));
    assert_eq!(count_visible(&engine, r), 400);
    drop(b);
    engine.shutdown().unwrap();
}
