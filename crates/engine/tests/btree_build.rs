//! Bottom-up B-tree build (`nbtree::build`) against the insert path: for random
//! data with duplicates, NULLs and long keys, an index built bottom-up holds the
//! same entries, in the same order, as one built by inserts; the structure checker
//! passes on every page of both; leaves are filled to the fill factor; an
//! out-of-order entry is refused; and the build's WAL (one full-page image per page)
//! replays into the same index after a crash (engine dropped without shutdown).
#![cfg(not(loom))]

use ferrogres_engine::config::{Settings, BLCKSZ};
use ferrogres_engine::engine::{Engine, DEFAULT_TABLESPACE_OID, POSTGRES_DATABASE_OID};
use ferrogres_engine::heap::tuple::{AttrDesc, Datum, Tid};
use ferrogres_engine::nbtree::page::KeyCtx;
use ferrogres_engine::nbtree::{BTree, BuiltinComparator, KeyKind, ScanBounds};
use ferrogres_engine::storage::RelFileLocator;
use rand::{Rng, SeedableRng};
use std::sync::Arc;

fn rel(n: u32) -> RelFileLocator {
    RelFileLocator { spc_oid: DEFAULT_TABLESPACE_OID, db_oid: POSTGRES_DATABASE_OID, rel_number: n }
}

fn settings() -> Settings {
    let mut s = Settings::default();
    // Small: pages are evicted and read back during the build and the checks.
    s.set("shared_buffers", "64").unwrap();
    s.set("buffer_mapping_partitions", "8").unwrap();
    s
}

/// (int8 nullable, text nullable, int4): duplicates, NULLs, long keys.
fn mixed_tree(n: u32) -> BTree {
    BTree::new(
        rel(n),
        vec![AttrDesc::fixed(8), AttrDesc::varlena(), AttrDesc::fixed(4)],
        Arc::new(BuiltinComparator(vec![KeyKind::Int8, KeyKind::Text, KeyKind::Int4])),
        false,
    )
}

type Row = (Option<i64>, Option<Vec<u8>>, i32, Tid);

fn random_rows(rng: &mut impl Rng, n: usize) -> Vec<Row> {
    (0..n)
        .map(|i| {
            let a = if rng.gen_bool(0.1) { None } else { Some(rng.gen_range(-50..50)) };
            let b = match rng.gen_range(0..10) {
                0 => None,
                // Long keys: a few per page at most.
                1 => Some(vec![b'x' + rng.gen_range(0..3u8); rng.gen_range(500..2000)]),
                _ => Some(format!("k{}", rng.gen_range(0..20)).into_bytes()),
            };
            (a, b, rng.gen_range(0..3), Tid::new((i / 100) as u32, (i % 100 + 1) as u16))
        })
        .collect()
}

fn datums(r: &Row) -> Vec<Option<Datum<'_>>> {
    vec![r.0.map(|v| Datum::ByVal(v as u64)), r.1.as_deref().map(Datum::Varlena), Some(Datum::ByVal(r.2 as u32 as u64))]
}

/// Sorts rows by the tree's own order: key columns (NULLS LAST), then heap TID.
fn sort_like_tree(t: &BTree, rows: &mut [Row]) {
    let ctx = KeyCtx { desc: &t.desc, cmp: &t.cmp, int0: None };
    rows.sort_by(|x, y| ctx.compare_values(&datums(x), &datums(y)).then(x.3.cmp(&y.3)));
}

fn entries(engine: &Engine, t: &BTree) -> Vec<(Vec<u8>, Tid)> {
    let mut s = t.scan(engine, ScanBounds::all());
    let mut out = Vec::new();
    while let Some(e) = s.next_entry().unwrap() {
        out.push((e.key, e.tid));
    }
    out
}

fn build(engine: &Engine, t: &BTree, rows: &[Row], fillfactor: u8) {
    let mut b = t.build(engine, fillfactor).unwrap();
    for r in rows {
        b.add(&datums(r), r.3).unwrap();
    }
    let stats = b.finish().unwrap();
    assert_eq!(stats.leaf_tuples, rows.len() as u64);
}

#[test]
fn bottom_up_build_equals_insert_build() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(20);
    let mut reln = 45000;
    for &(n, ff) in &[(0usize, 90u8), (1, 90), (7, 10), (3000, 90), (3000, 10), (3000, 100), (20000, 90), (20000, 55)] {
        let mut rows = random_rows(&mut rng, n);
        let inserted = mixed_tree(reln);
        let built = mixed_tree(reln + 1);
        reln += 2;
        inserted.create(&engine).unwrap();
        for r in &rows {
            inserted.insert(&engine, &datums(r), r.3, None).unwrap();
        }
        sort_like_tree(&built, &mut rows);
        build(&engine, &built, &rows, ff);
        let want = entries(&engine, &inserted);
        let got = entries(&engine, &built);
        assert_eq!(got.len(), n, "n={n} ff={ff}");
        assert_eq!(got, want, "n={n} ff={ff}: the built index differs from the inserted one");
        let ri = inserted.check_invariants(&engine).unwrap();
        let rb = built.check_invariants(&engine).unwrap();
        assert_eq!(rb.leaf_tuples, n as u64);
        assert_eq!(rb.incomplete_splits, 0);
        assert_eq!(rb.unused_pages, 0, "a build leaves no page outside the tree");
        assert_eq!(ri.leaf_tuples, rb.leaf_tuples);
        if n >= 20000 {
            assert!(rb.pages_per_level.len() >= 2, "n={n}: a multi-level tree: {rb:?}");
        }
        // Every key can be found again by a descent (not only by walking leaves).
        for r in rows.iter().step_by(97) {
            let vals = datums(r);
            let mut s = built.scan(&engine, ScanBounds::eq(vals.clone()));
            let mut tids = Vec::new();
            while let Some(e) = s.next_entry().unwrap() {
                tids.push(e.tid);
            }
            if vals.iter().all(|v| v.is_some()) {
                assert!(tids.contains(&r.3), "n={n} ff={ff}: entry {:?} not found by a descent", r.3);
            }
        }
    }
    engine.shutdown().unwrap();
}

/// int8 keys: leaves hold exactly as many entries as the fill factor allows.
#[test]
fn leaves_are_filled_to_the_fill_factor() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    let n = 50_000u64;
    for (i, ff) in [10u8, 50, 90, 100].into_iter().enumerate() {
        let t = BTree::new(rel(46000 + i as u32), vec![AttrDesc::fixed(8)], Arc::new(BuiltinComparator(vec![KeyKind::Int8])), false);
        let mut b = t.build(&engine, ff).unwrap();
        for k in 0..n {
            b.add(&[Some(Datum::ByVal(k))], Tid::new((k / 100) as u32, (k % 100 + 1) as u16)).unwrap();
        }
        let stats = b.finish().unwrap();
        let report = t.check_invariants(&engine).unwrap();
        let leaves = *report.pages_per_level.last().unwrap();
        assert_eq!(stats.pages_per_level[0], leaves);
        // An entry: 8-byte index tuple header + 8 bytes of key, maxaligned, plus
        // a 4-byte line pointer. A page takes items while the free space stays
        // at BLCKSZ * (100 - ff) / 100 or more; a closed page gives its last
        // item up as the high key.
        let item = 16 + 4;
        let cap = BLCKSZ - 24 - 16;
        let reserve = BLCKSZ * (100 - ff as usize) / 100;
        let per_leaf = (cap - reserve) / item - 1;
        let want = n.div_ceil(per_leaf as u64) as usize;
        assert!(leaves.abs_diff(want) <= 1, "ff={ff}: {leaves} leaves, expected about {want}");
        assert_eq!(entries(&engine, &t).len() as u64, n);
    }
    engine.shutdown().unwrap();
}

#[test]
fn out_of_order_entries_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    let t = BTree::new(rel(47000), vec![AttrDesc::fixed(8)], Arc::new(BuiltinComparator(vec![KeyKind::Int8])), false);
    let mut b = t.build(&engine, 90).unwrap();
    b.add(&[Some(Datum::ByVal(5))], Tid::new(0, 2)).unwrap();
    // Same key, same TID: not strictly increasing.
    assert!(b.add(&[Some(Datum::ByVal(5))], Tid::new(0, 2)).is_err());
    // Same key, lower TID.
    assert!(b.add(&[Some(Datum::ByVal(5))], Tid::new(0, 1)).is_err());
    // A lower key.
    assert!(b.add(&[Some(Datum::ByVal(4))], Tid::new(1, 1)).is_err());
    // NULL sorts last: after it, no non-NULL key may come.
    b.add(&[None], Tid::new(0, 1)).unwrap();
    assert!(b.add(&[Some(Datum::ByVal(9))], Tid::new(2, 1)).is_err());
    engine.shutdown().unwrap();
}

#[test]
fn build_is_replayed_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(21);
    let t = mixed_tree(48000);
    let mut rows = random_rows(&mut rng, 15000);
    sort_like_tree(&t, &mut rows);
    let before = {
        let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
        engine.checkpoint().unwrap();
        build(&engine, &t, &rows, 90);
        let e = entries(&engine, &t);
        engine.wal.flush(engine.wal.insert_position()).unwrap();
        e
        // Dropped without shutdown: the next open replays the build's WAL.
    };
    let (engine, report) = Engine::open(dir.path(), settings()).unwrap();
    assert!(report.recovered);
    let t = mixed_tree(48000);
    let r = t.check_invariants(&engine).unwrap();
    assert_eq!(r.leaf_tuples, rows.len() as u64);
    assert_eq!(entries(&engine, &t), before);
    // The tree takes inserts after recovery (the root is found through the metapage).
    for k in 0..2000i64 {
        t.insert(&engine, &[Some(Datum::ByVal(k as u64)), Some(Datum::Varlena(b"z")), Some(Datum::ByVal(1))], Tid::new(9000, 1 + (k % 200) as u16), None)
            .unwrap();
    }
    let r = t.check_invariants(&engine).unwrap();
    assert_eq!(r.leaf_tuples, rows.len() as u64 + 2000);
    engine.shutdown().unwrap();
}
