//! Concurrent inserters and scanners on one B-tree: 6 threads insert disjoint and
//! overlapping int8 keys (so leaves and internal pages split under the scans) while
//! 2 threads scan ranges continuously (one forward, one backward), checking that every scan returns entries in
//! strictly increasing (key, TID) order and finds every entry whose insert had
//! returned before the scan started — no key is ever missed during a split.
#![cfg(not(loom))]

use ferrogres_engine::config::Settings;
use ferrogres_engine::engine::{Engine, DEFAULT_TABLESPACE_OID, POSTGRES_DATABASE_OID};
use ferrogres_engine::heap::tuple::{AttrDesc, Datum, Tid};
use ferrogres_engine::nbtree::{BTree, BuiltinComparator, IndexEntry, KeyKind, ScanBounds};
use ferrogres_engine::storage::RelFileLocator;
use rand::{Rng, SeedableRng};
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

const INSERTERS: u64 = 6;
const PER_THREAD: u64 = 8_000;

fn int_of(e: &IndexEntry) -> i64 {
    match e.values(&[AttrDesc::fixed(8)]).unwrap()[0] {
        Some(Datum::ByVal(v)) => v as i64,
        ref other => panic!("bad key {other:?}"),
    }
}

#[test]
fn concurrent_inserts_and_scans_never_miss_a_key() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Settings::default();
    s.set("shared_buffers", "96").unwrap();
    s.set("buffer_mapping_partitions", "8").unwrap();
    let (engine, _) = Engine::open(dir.path(), s).unwrap();
    let rel = RelFileLocator { spc_oid: DEFAULT_TABLESPACE_OID, db_oid: POSTGRES_DATABASE_OID, rel_number: 41000 };
    let tree = Arc::new(BTree::new(rel, vec![AttrDesc::fixed(8)], Arc::new(BuiltinComparator(vec![KeyKind::Int8])), false));
    tree.create(&engine).unwrap();
    // Entries whose insert has returned, per thread, in insertion order.
    type Done = Arc<Vec<Mutex<Vec<(i64, Tid)>>>>;
    let done: Done = Arc::new((0..INSERTERS).map(|_| Mutex::new(Vec::new())).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let scans = Arc::new(AtomicU64::new(0));
    let scanners: Vec<_> = (0..2)
        .map(|s| {
            let (engine, tree, done, stop, scans) = (engine.clone(), tree.clone(), done.clone(), stop.clone(), scans.clone());
            std::thread::spawn(move || {
                let mut rng = rand::rngs::SmallRng::seed_from_u64(100 + s);
                while !stop.load(Ordering::Relaxed) {
                    let lo: i64 = rng.gen_range(-1000..60_000);
                    let hi = lo + rng.gen_range(0..20_000);
                    let before: Vec<(i64, Tid)> = done
                        .iter()
                        .flat_map(|d| d.lock().unwrap().iter().filter(|(k, _)| *k >= lo && *k <= hi).cloned().collect::<Vec<_>>())
                        .collect();
                    let bounds = ScanBounds::range(
                        Bound::Included(vec![Some(Datum::ByVal(lo as u64))]),
                        Bound::Included(vec![Some(Datum::ByVal(hi as u64))]),
                    );
                    // Scanner 0 scans forward, scanner 1 backward.
                    let backward = s == 1;
                    let mut scan = if backward { tree.scan_backward(&engine, bounds) } else { tree.scan(&engine, bounds) };
                    let mut got = std::collections::HashSet::new();
                    let mut last: Option<(i64, Tid)> = None;
                    while let Some(e) = scan.next_entry().unwrap() {
                        let x = (int_of(&e), e.tid);
                        assert!(x.0 >= lo && x.0 <= hi, "entry {x:?} outside [{lo}, {hi}]");
                        if let Some(l) = last {
                            assert!(if backward { l > x } else { l < x }, "scan order broken: {l:?} then {x:?}");
                        }
                        last = Some(x);
                        got.insert(x);
                    }
                    for x in &before {
                        assert!(got.contains(x), "entry {x:?} inserted before the scan started was missed");
                    }
                    scans.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let inserters: Vec<_> = (0..INSERTERS)
        .map(|t| {
            let (engine, tree, done) = (engine.clone(), tree.clone(), done.clone());
            std::thread::spawn(move || {
                let mut rng = rand::rngs::SmallRng::seed_from_u64(t);
                for i in 0..PER_THREAD {
                    // Half the threads own disjoint ascending ranges; the others
                    // insert random keys over the whole space (overlapping).
                    let k: i64 = if t % 2 == 0 { (t as i64) * 10_000 + i as i64 } else { rng.gen_range(0..60_000) };
                    let tid = Tid::new(t as u32 * 1_000_000 + (i / 100) as u32, (i % 100 + 1) as u16);
                    tree.insert(&engine, &[Some(Datum::ByVal(k as u64))], tid, None).unwrap();
                    done[t as usize].lock().unwrap().push((k, tid));
                }
            })
        })
        .collect();
    for h in inserters {
        h.join().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for h in scanners {
        h.join().unwrap();
    }
    let r = tree.check_invariants(&engine).unwrap();
    assert_eq!(r.leaf_tuples, INSERTERS * PER_THREAD);
    assert_eq!(r.incomplete_splits, 0);
    let mut all: Vec<(i64, Tid)> = done.iter().flat_map(|d| d.lock().unwrap().clone()).collect();
    all.sort();
    let mut scan = tree.scan(&engine, ScanBounds::all());
    let mut got = Vec::new();
    while let Some(e) = scan.next_entry().unwrap() {
        got.push((int_of(&e), e.tid));
    }
    assert_eq!(got, all);
    eprintln!("{} scans during the inserts; tree {:?}", scans.load(Ordering::Relaxed), r.pages_per_level);
    assert!(scans.load(Ordering::Relaxed) >= 10, "scanners did too little to test anything");
    engine.shutdown().unwrap();
}
