//! TOAST chunk index (heap README "TOAST at relation level"): detoasting reads
//! only the value's chunks, an index is built for a TOAST relation written
//! without one, deleted and updated rows take their chunks with them (kept by a
//! rollback, freed by VACUUM), and all of it survives a crash.
#![cfg(not(loom))]

use ferrogres_engine::config::Settings;
use ferrogres_engine::engine::{Engine, DEFAULT_TABLESPACE_OID, POSTGRES_DATABASE_OID};
use ferrogres_engine::heap::heapam::{self, heap_insert, heap_insert_values, DeleteOptions, UpdateOptions, WaitPolicy};
use ferrogres_engine::heap::toast::{make_chunks, toast_plan};
use ferrogres_engine::heap::toastam;
use ferrogres_engine::heap::tuple::{deform_tuple, form_tuple, AttrDesc, Datum, Tid};
use ferrogres_engine::heap::vacuum::VacuumOptions;
use ferrogres_engine::storage::{ForkNumber, RelFileLocator};
use ferrogres_engine::txn::IsolationLevel;
use std::sync::Arc;

fn rel(n: u32) -> RelFileLocator {
    RelFileLocator { spc_oid: DEFAULT_TABLESPACE_OID, db_oid: POSTGRES_DATABASE_OID, rel_number: n }
}

fn settings() -> Settings {
    let mut s = Settings::default();
    s.set("shared_buffers", "128").unwrap();
    s
}

fn desc() -> Vec<AttrDesc> {
    vec![AttrDesc::fixed(4), AttrDesc::varlena()]
}

/// `len` pseudo-random bytes (xorshift64): they do not compress; different for each `k`.
fn value(k: u64, len: usize) -> Vec<u8> {
    let mut x = k.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn insert(b: &mut ferrogres_engine::engine::Backend, main: RelFileLocator, toast: RelFileLocator, k: u64, v: &[u8]) -> Tid {
    heap_insert_values(b, main, Some(toast), &desc(), &[Some(Datum::ByVal(k)), Some(Datum::Varlena(v))]).unwrap()
}

/// The value of row `tid` read in a new transaction (None if not visible).
fn read(engine: &Arc<Engine>, main: RelFileLocator, tid: Tid) -> Option<Vec<u8>> {
    let mut b = engine.backend(900).unwrap();
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let snap = b.txn.statement_snapshot().unwrap();
    let t = heapam::heap_fetch(&b, main, tid, &snap).unwrap()?;
    let d = deform_tuple(&desc(), &t).unwrap();
    let out = heapam::heap_detoast(&b, main, &d[1].unwrap(), &snap).unwrap().into_owned();
    b.txn.commit().unwrap();
    Some(out)
}

fn accesses(engine: &Engine) -> u64 {
    let s = engine.buffers.stats();
    s.hits + s.reads
}

#[test]
fn detoasting_one_value_reads_its_chunks_not_the_relation() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    let (main, toast) = (rel(30000), rel(30001));
    engine.create_relation(main).unwrap();
    engine.create_relation(toast).unwrap();
    let mut b = engine.backend(1).unwrap();
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    // 1500 values of 3 chunks each: about 1125 TOAST pages.
    let tids: Vec<Tid> = (0..1500u64).map(|k| insert(&mut b, main, toast, k, &value(k, 5000))).collect();
    b.txn.commit().unwrap();
    drop(b);
    let toast_pages = engine.buffers.nblocks(toast, ForkNumber::Main).unwrap();
    assert!(toast_pages > 1000, "{toast_pages} TOAST pages");
    assert!(engine.smgr.exists(toast, ForkNumber::ToastIndex));
    for k in [0u64, 749, 1499] {
        let before = accesses(&engine);
        assert_eq!(read(&engine, main, tids[k as usize]).unwrap(), value(k, 5000));
        let n = accesses(&engine) - before;
        // main page + metapage/root..leaf descent (3 levels at most here) + 3 chunk pages.
        assert!(n <= 12, "reading one value touched {n} buffers of a {toast_pages}-page TOAST relation");
    }
    let report = toastam::chunk_index_tree(toast).check_invariants(&engine).unwrap();
    assert_eq!(report.leaf_tuples, 4500, "{report:?}");
}

#[test]
fn chunk_index_is_built_for_a_toast_relation_written_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let (main, toast) = (rel(30000), rel(30001));
    let mut tids = Vec::new();
    {
        let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
        engine.create_relation(main).unwrap();
        engine.create_relation(toast).unwrap();
        let mut b = engine.backend(1).unwrap();
        b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        // As before chunk indexes: chunks go straight into the TOAST heap.
        // Values with oids below and above 2^31 (the index compares int4).
        for k in 0..300u64 {
            let v = value(k, 4500);
            let d = desc();
            let vals = [Some(Datum::ByVal(k)), Some(Datum::Varlena(&v))];
            let plan = toast_plan(&d, &vals).unwrap();
            let oid = if k % 2 == 0 { 70_000 + k as u32 } else { 0x8000_0000 + k as u32 };
            let data: Vec<u8> = plan.externals().next().unwrap().1.to_vec();
            // Inserted in descending chunk order, so the heap is not in key order.
            for c in make_chunks(oid, &data).unwrap().iter().rev() {
                heap_insert(&mut b, toast, c).unwrap();
            }
            let fin = plan.finish(&vals, toast.rel_number, &[oid]).unwrap();
            tids.push(heap_insert(&mut b, main, &form_tuple(&d, &fin).unwrap()).unwrap());
        }
        b.txn.commit().unwrap();
        drop(b);
        assert!(!engine.smgr.exists(toast, ForkNumber::ToastIndex));
        engine.shutdown().unwrap();
    }
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    // The first read builds it (one run: sorted in memory).
    assert_eq!(read(&engine, main, tids[7]).unwrap(), value(7, 4500));
    let tree = toastam::chunk_index_tree(toast);
    assert_eq!(tree.check_invariants(&engine).unwrap().leaf_tuples, 900);
    // Rebuilt through spilled runs of 100 entries: the same entries.
    toastam::rebuild_chunk_index(&engine, toast, 100).unwrap();
    assert_eq!(tree.check_invariants(&engine).unwrap().leaf_tuples, 900);
    for (k, tid) in tids.iter().enumerate() {
        assert_eq!(read(&engine, main, *tid).unwrap(), value(k as u64, 4500), "value {k}");
    }
    // A crash in the middle of a build leaves a fork without a metapage: rebuilt.
    drop(engine);
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    engine.buffers.truncate(toast, ForkNumber::ToastIndex, 0).unwrap();
    engine.buffers.extend(toast, ForkNumber::ToastIndex, 3, None).unwrap();
    engine.buffers.flush_all_dirty().unwrap();
    drop(engine);
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    assert_eq!(read(&engine, main, tids[299]).unwrap(), value(299, 4500));
    assert_eq!(tree.check_invariants(&engine).unwrap().leaf_tuples, 900);
}

fn toast_live_chunks(engine: &Arc<Engine>, toast: RelFileLocator) -> usize {
    let mut b = engine.backend(901).unwrap();
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let snap = b.txn.statement_snapshot().unwrap();
    let mut n = 0;
    heapam::heap_scan(&b, toast, &snap, &mut |_, _| {
        n += 1;
        Ok(())
    })
    .unwrap();
    b.txn.commit().unwrap();
    n
}

#[test]
fn delete_and_update_take_the_chunks_a_rollback_keeps_them_vacuum_frees_them() {
    let dir = tempfile::tempdir().unwrap();
    let (main, toast) = (rel(30000), rel(30001));
    let d = desc();
    let upd = |hot| UpdateOptions { hot_allowed: hot, keys_updated: false, wait_policy: WaitPolicy::Block, relname: "t", toast_desc: Some(&d) };
    let del = DeleteOptions { wait_policy: WaitPolicy::Block, relname: "t", toast_desc: Some(&d) };
    let big = 200_000;
    let (tid1, tid2);
    {
        let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
        engine.create_relation(main).unwrap();
        engine.create_relation(toast).unwrap();
        let mut b = engine.backend(1).unwrap();
        b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        tid1 = insert(&mut b, main, toast, 1, &value(1, big));
        tid2 = insert(&mut b, main, toast, 2, &value(2, big));
        b.txn.commit().unwrap();
        let per_value = toast_live_chunks(&engine, toast) / 2;
        assert_eq!(per_value, big.div_ceil(1996));

        // A rolled-back DELETE keeps the value.
        b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        assert_eq!(heapam::heap_delete_ext(&mut b, main, tid1, del).unwrap(), heapam::DeleteOutcome::Ok);
        b.txn.abort().unwrap();
        assert_eq!(read(&engine, main, tid1).unwrap(), value(1, big));
        assert_eq!(toast_live_chunks(&engine, toast), 2 * per_value);

        // Repeated UPDATEs of row 2 (HOT and not): the TOAST relation stays
        // bounded once VACUUM has run.
        let mut cur = tid2;
        let mut sizes = Vec::new();
        for round in 0..6u64 {
            for i in 0..5u64 {
                let k = 100 + round * 10 + i;
                b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
                let v = value(k, big);
                let plan_vals = [Some(Datum::ByVal(2)), Some(Datum::Varlena(&v[..]))];
                let plan = toast_plan(&d, &plan_vals).unwrap();
                let oid = toastam::toast_save_value(&mut b, toast, plan.externals().next().unwrap().1).unwrap();
                let t = form_tuple(&d, &plan.finish(&plan_vals, toast.rel_number, &[oid]).unwrap()).unwrap();
                match heapam::heap_update(&mut b, main, cur, &t, upd(i % 2 == 0)).unwrap() {
                    heapam::UpdateOutcome::Ok { new_tid, .. } => cur = new_tid,
                    o => panic!("{o:?}"),
                }
                b.txn.commit().unwrap();
            }
            toastam::vacuum_toast(&engine, Some(&b), toast, VacuumOptions::from_settings(engine.settings())).unwrap();
            sizes.push(engine.buffers.nblocks(toast, ForkNumber::Main).unwrap());
            assert_eq!(toast_live_chunks(&engine, toast), 2 * per_value, "round {round}");
        }
        assert!(sizes[5] <= sizes[1], "TOAST relation grew across vacuumed rounds: {sizes:?}");
        assert_eq!(read(&engine, main, cur).unwrap(), value(154, big));

        // A committed DELETE takes row 1's chunks; VACUUM frees them.
        b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        assert_eq!(heapam::heap_delete_ext(&mut b, main, tid1, del).unwrap(), heapam::DeleteOutcome::Ok);
        b.txn.commit().unwrap();
        assert_eq!(toast_live_chunks(&engine, toast), per_value);
        let st = toastam::vacuum_toast(&engine, Some(&b), toast, VacuumOptions::from_settings(engine.settings())).unwrap();
        assert!(st.tuples_removed + st.dead_items_removed >= per_value as u64, "{st:?}");
        let report = toastam::chunk_index_tree(toast).check_invariants(&engine).unwrap();
        assert_eq!(report.leaf_tuples as usize, per_value, "index entries of freed chunks are gone");
        drop(b);
        // Crash: no shutdown, no checkpoint.
        drop(engine);
    }
    let (engine, report) = Engine::open(dir.path(), settings()).unwrap();
    assert!(report.recovered);
    assert_eq!(read(&engine, main, tid1), None);
    let mut b = engine.backend(1).unwrap();
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let snap = b.txn.statement_snapshot().unwrap();
    let mut vals = Vec::new();
    heapam::heap_scan(&b, main, &snap, &mut |_, t| {
        let dd = deform_tuple(&desc(), t).unwrap();
        vals.push(heapam::heap_detoast(&b, main, &dd[1].unwrap(), &snap).unwrap().into_owned());
        Ok(())
    })
    .unwrap();
    assert_eq!(vals.len(), 1, "rows after recovery");
    assert!(vals[0] == value(154, big), "row 2's value after recovery differs (length {})", vals[0].len());
}
