//! B-tree through the real engine (small buffer pool, so pages are evicted and read
//! back): sorted, unsorted and duplicate int8 keys against a BTreeMap model, range
//! scans with every bound kind, text keys of varying lengths, multi-column keys,
//! bulk_delete, and redo (the engine is dropped without shutdown and recovered).
#![cfg(not(loom))]

use ferrogres_engine::config::Settings;
use ferrogres_engine::engine::{Engine, DEFAULT_TABLESPACE_OID, POSTGRES_DATABASE_OID};
use ferrogres_engine::heap::tuple::{AttrDesc, Datum, Tid};
use ferrogres_engine::nbtree::{BTree, BuiltinComparator, IndexEntry, KeyKind, ScanBounds};
use ferrogres_engine::storage::RelFileLocator;
use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::Arc;

fn rel(n: u32) -> RelFileLocator {
    RelFileLocator { spc_oid: DEFAULT_TABLESPACE_OID, db_oid: POSTGRES_DATABASE_OID, rel_number: n }
}

fn settings() -> Settings {
    let mut s = Settings::default();
    s.set("shared_buffers", "64").unwrap();
    s.set("buffer_mapping_partitions", "8").unwrap();
    s
}

fn int8_tree(n: u32) -> BTree {
    BTree::new(rel(n), vec![AttrDesc::fixed(8)], Arc::new(BuiltinComparator(vec![KeyKind::Int8])), false)
}

fn tid_of(i: u64) -> Tid {
    Tid::new((i / 200) as u32, (i % 200 + 1) as u16)
}

fn int_of(e: &IndexEntry) -> i64 {
    match e.values(&[AttrDesc::fixed(8)]).unwrap()[0] {
        Some(Datum::ByVal(v)) => v as i64,
        ref other => panic!("bad key {other:?}"),
    }
}

fn scan_all(engine: &Engine, t: &BTree, bounds: ScanBounds) -> Vec<(i64, Tid)> {
    let mut s = t.scan(engine, bounds);
    let mut out = Vec::new();
    while let Some(e) = s.next_entry().unwrap() {
        out.push((int_of(&e), e.tid));
    }
    out
}

fn scan_all_back(engine: &Engine, t: &BTree, bounds: ScanBounds) -> Vec<(i64, Tid)> {
    let mut s = t.scan_backward(engine, bounds);
    let mut out = Vec::new();
    while let Some(e) = s.next_entry().unwrap() {
        out.push((int_of(&e), e.tid));
    }
    out.reverse();
    out
}

fn b(v: Bound<i64>) -> Bound<Vec<Option<Datum<'static>>>> {
    match v {
        Bound::Included(x) => Bound::Included(vec![Some(Datum::ByVal(x as u64))]),
        Bound::Excluded(x) => Bound::Excluded(vec![Some(Datum::ByVal(x as u64))]),
        Bound::Unbounded => Bound::Unbounded,
    }
}

fn check_ranges(engine: &Engine, t: &BTree, model: &BTreeSet<(i64, Tid)>, rng: &mut impl Rng, n: usize, span: i64) {
    for _ in 0..n {
        let a = rng.gen_range(-10..span + 10);
        let c = a + rng.gen_range(0..span / 10 + 2);
        let pick = |rng: &mut dyn rand::RngCore, x: i64| match rng.gen_range(0..3) {
            0 => Bound::Included(x),
            1 => Bound::Excluded(x),
            _ => Bound::Unbounded,
        };
        let (lo, hi) = (pick(rng, a), pick(rng, c));
        let got = scan_all(engine, t, ScanBounds::range(b(lo), b(hi)));
        let back = scan_all_back(engine, t, ScanBounds::range(b(lo), b(hi)));
        let want: Vec<(i64, Tid)> = model
            .iter()
            .filter(|(k, _)| {
                (match lo {
                    Bound::Included(x) => *k >= x,
                    Bound::Excluded(x) => *k > x,
                    Bound::Unbounded => true,
                }) && (match hi {
                    Bound::Included(x) => *k <= x,
                    Bound::Excluded(x) => *k < x,
                    Bound::Unbounded => true,
                })
            })
            .cloned()
            .collect();
        assert_eq!(got, want, "range {lo:?}..{hi:?}");
        assert_eq!(back, want, "backward range {lo:?}..{hi:?}");
    }
}

fn run_int8(order: &str, n: u64, rel_no: u32) {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(rel_no as u64);
    let t = int8_tree(rel_no);
    let mut model = BTreeSet::new();
    {
        let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
        t.create(&engine).unwrap();
        let mut keys: Vec<i64> = match order {
            "sorted" => (0..n as i64).collect(),
            "reverse" => (0..n as i64).rev().collect(),
            "random" => (0..n as i64).map(|i| i * 7919 % n as i64 - 100).collect(),
            _ => (0..n).map(|_| rng.gen_range(0..200)).collect(), // many duplicates
        };
        if order == "random" {
            for i in (1..keys.len()).rev() {
                keys.swap(i, rng.gen_range(0..=i));
            }
        }
        for (i, k) in keys.iter().enumerate() {
            let tid = tid_of(i as u64);
            t.insert(&engine, &[Some(Datum::ByVal(*k as u64))], tid, None).unwrap();
            model.insert((*k, tid));
        }
        let r = t.check_invariants(&engine).unwrap();
        assert_eq!(r.leaf_tuples, n);
        assert_eq!(r.incomplete_splits, 0);
        assert!(r.pages_per_level.len() >= 2, "{n} keys must need more than one level: {r:?}");
        let all = scan_all(&engine, &t, ScanBounds::all());
        assert_eq!(all, model.iter().cloned().collect::<Vec<_>>());
        assert_eq!(scan_all_back(&engine, &t, ScanBounds::all()), all);
        check_ranges(&engine, &t, &model, &mut rng, 100, if order == "dups" { 200 } else { n as i64 });
        // Dropped without shutdown: the next open replays the WAL.
    }
    let (engine, report) = Engine::open(dir.path(), settings()).unwrap();
    assert!(report.recovered);
    let r = t.check_invariants(&engine).unwrap();
    assert_eq!(r.leaf_tuples, n);
    assert_eq!(scan_all(&engine, &t, ScanBounds::all()), model.iter().cloned().collect::<Vec<_>>());
    // bulk_delete removes exactly the dead TIDs.
    let dead = |tid: Tid| (tid.block * 200 + tid.offset as u32).is_multiple_of(3);
    let st = t.bulk_delete(&engine, &dead).unwrap();
    model.retain(|(_, tid)| !dead(*tid));
    assert_eq!(st.tuples_remaining, model.len() as u64);
    assert_eq!(st.tuples_removed, n - model.len() as u64);
    t.check_invariants(&engine).unwrap();
    assert_eq!(scan_all(&engine, &t, ScanBounds::all()), model.iter().cloned().collect::<Vec<_>>());
    check_ranges(&engine, &t, &model, &mut rng, 30, if order == "dups" { 200 } else { n as i64 });
    engine.shutdown().unwrap();
}

#[test]
fn int8_sorted_keys() {
    run_int8("sorted", 50_000, 40001);
}

#[test]
fn int8_reverse_keys() {
    run_int8("reverse", 50_000, 40002);
}

#[test]
fn int8_random_keys() {
    run_int8("random", 50_000, 40003);
}

#[test]
fn int8_duplicate_keys() {
    run_int8("dups", 50_000, 40004);
}

#[test]
fn text_and_multicolumn_keys() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
    // text keys of 0..600 bytes
    let t = BTree::new(rel(40010), vec![AttrDesc::varlena()], Arc::new(BuiltinComparator(vec![KeyKind::Text])), false);
    t.create(&engine).unwrap();
    let mut model: BTreeSet<(Vec<u8>, Tid)> = BTreeSet::new();
    for i in 0..8000u64 {
        let len = if i % 50 == 0 { rng.gen_range(200..600) } else { rng.gen_range(0..40) };
        let s: Vec<u8> = (0..len).map(|_| rng.gen_range(b'a'..=b'e')).collect();
        t.insert(&engine, &[Some(Datum::Varlena(&s))], tid_of(i), None).unwrap();
        model.insert((s, tid_of(i)));
    }
    t.check_invariants(&engine).unwrap();
    let mut s = t.scan(&engine, ScanBounds::all());
    let mut got = Vec::new();
    while let Some(e) = s.next_entry().unwrap() {
        let Some(Datum::Varlena(v)) = e.values(&t.desc).unwrap()[0] else { panic!() };
        got.push((v.to_vec(), e.tid));
    }
    assert_eq!(got, model.iter().cloned().collect::<Vec<_>>());
    // prefix range ["b", "c")
    let lo = b"b".to_vec();
    let hi = b"c".to_vec();
    let n = t
        .scan(
            &engine,
            ScanBounds::range(Bound::Included(vec![Some(Datum::Varlena(&lo))]), Bound::Excluded(vec![Some(Datum::Varlena(&hi))])),
        )
        .count();
    assert_eq!(n, model.iter().filter(|(k, _)| k.as_slice() >= &b"b"[..] && k.as_slice() < &b"c"[..]).count());

    // (int4, text, int8) with NULLs sorting last, equality on a prefix.
    let desc = vec![AttrDesc::fixed(4), AttrDesc::varlena(), AttrDesc::fixed(8)];
    let m = BTree::new(rel(40011), desc.clone(), Arc::new(BuiltinComparator(vec![KeyKind::Int4, KeyKind::Text, KeyKind::Int8])), false);
    m.create(&engine).unwrap();
    type K = (i32, Option<Vec<u8>>, i64);
    let mut mm: Vec<(K, Tid)> = Vec::new();
    for i in 0..6000u64 {
        let a: i32 = rng.gen_range(-20..20);
        let txt: Option<Vec<u8>> = if rng.gen_ratio(1, 10) { None } else { Some(format!("v{}", rng.gen_range(0..30)).into_bytes()) };
        let c: i64 = rng.gen_range(-1000..1000);
        let vals = [Some(Datum::ByVal(a as u32 as u64)), txt.as_deref().map(Datum::Varlena), Some(Datum::ByVal(c as u64))];
        m.insert(&engine, &vals, tid_of(i), None).unwrap();
        mm.push(((a, txt, c), tid_of(i)));
    }
    // model order: int4, then text with NULL last, then int8, then tid
    mm.sort_by(|x, y| {
        let o = x.0 .0.cmp(&y.0 .0);
        let o = o.then_with(|| match (&x.0 .1, &y.0 .1) {
            (None, None) => std::cmp::Ordering::Equal,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some(_), None) => std::cmp::Ordering::Less,
            (Some(p), Some(q)) => p.cmp(q),
        });
        o.then(x.0 .2.cmp(&y.0 .2)).then(x.1.cmp(&y.1))
    });
    m.check_invariants(&engine).unwrap();
    let got: Vec<Tid> = m.scan(&engine, ScanBounds::all()).map(|r| r.unwrap()).collect();
    assert_eq!(got, mm.iter().map(|x| x.1).collect::<Vec<_>>());
    for a in [-20, -3, 0, 7, 19, 25] {
        let got: Vec<Tid> =
            m.scan(&engine, ScanBounds::eq(vec![Some(Datum::ByVal(a as u32 as u64))])).map(|r| r.unwrap()).collect();
        let want: Vec<Tid> = mm.iter().filter(|x| x.0 .0 == a).map(|x| x.1).collect();
        assert_eq!(got, want, "prefix a = {a}");
    }
    let v5 = b"v5".to_vec();
    let got: Vec<Tid> = m
        .scan(&engine, ScanBounds::eq(vec![Some(Datum::ByVal(3u64)), Some(Datum::Varlena(&v5))]))
        .map(|r| r.unwrap())
        .collect();
    let want: Vec<Tid> = mm.iter().filter(|x| x.0 .0 == 3 && x.0 .1.as_deref() == Some(&b"v5"[..])).map(|x| x.1).collect();
    assert_eq!(got, want);
    // a key too large for a page is refused with 54000
    let big = vec![b'x'; 3000];
    let e = t.insert(&engine, &[Some(Datum::Varlena(&big))], tid_of(1), None).unwrap_err();
    assert_eq!(e.sqlstate().as_str(), "54000");
}

#[test]
fn near_maximum_size_keys_split_safely() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(99);
    let t = BTree::new(rel(40020), vec![AttrDesc::varlena()], Arc::new(BuiltinComparator(vec![KeyKind::Text])), false);
    t.create(&engine).unwrap();
    let mut model = BTreeSet::new();
    // The longest text key that fits: an 8-byte item header and a 4-byte varlena header.
    let max_len = ferrogres_engine::nbtree::page::BTREE_MAX_ITEM - 8 - 4;
    assert_eq!(max_len, 2693);
    for i in 0..1500u64 {
        // Mostly huge keys (up to the limit), some tiny ones in between.
        let len = if rng.gen_ratio(1, 4) { rng.gen_range(1..30) } else { rng.gen_range(1500..=max_len) };
        let s: Vec<u8> = (0..len).map(|_| rng.gen_range(b'a'..=b'c')).collect();
        t.insert(&engine, &[Some(Datum::Varlena(&s))], tid_of(i), None).unwrap();
        model.insert((s, tid_of(i)));
    }
    let r = t.check_invariants(&engine).unwrap();
    assert_eq!(r.leaf_tuples, 1500);
    assert!(r.pages_per_level.len() >= 3, "{r:?}");
    let got: Vec<Tid> = t.scan(&engine, ScanBounds::all()).map(|r| r.unwrap()).collect();
    assert_eq!(got, model.iter().map(|x| x.1).collect::<Vec<_>>());
    let too_big = vec![b'a'; max_len + 1];
    assert_eq!(t.insert(&engine, &[Some(Datum::Varlena(&too_big))], tid_of(1), None).unwrap_err().sqlstate().as_str(), "54000");
}

/// A scan keeps its pin on the leaf whose entries it has buffered; bulk_delete needs
/// a cleanup lock there, so it waits until the scan has moved on (README "Vacuum
/// and pins").
#[test]
fn bulk_delete_waits_for_a_scan_pin() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    let t = Arc::new(int8_tree(40030));
    t.create(&engine).unwrap();
    for i in 0..2000u64 {
        t.insert(&engine, &[Some(Datum::ByVal(i))], tid_of(i), None).unwrap();
    }
    let mut scan = t.scan(&engine, ScanBounds::all());
    let first = scan.next_entry().unwrap().unwrap();
    assert_eq!(int_of(&first), 0);
    let (tx, rx) = std::sync::mpsc::channel();
    let (e2, t2) = (engine.clone(), t.clone());
    let vacuum = std::thread::spawn(move || {
        let st = t2.bulk_delete(&e2, &|tid: Tid| tid.offset.is_multiple_of(2)).unwrap();
        tx.send(st).unwrap();
    });
    assert!(rx.recv_timeout(std::time::Duration::from_millis(300)).is_err(), "bulk_delete did not wait for the scan's pin");
    // The scan still returns what it buffered from the first leaf, then moves on.
    let mut n = 1;
    while scan.next_entry().unwrap().is_some() {
        n += 1;
    }
    assert!(n >= 1000, "scan returned {n} entries");
    drop(scan);
    let st = rx.recv_timeout(std::time::Duration::from_secs(10)).expect("bulk_delete still waiting");
    vacuum.join().unwrap();
    assert_eq!(st.tuples_removed + st.tuples_remaining, 2000);
    assert_eq!(st.tuples_removed, (0..2000u64).filter(|i| tid_of(*i).offset.is_multiple_of(2)).count() as u64);
    t.check_invariants(&engine).unwrap();
}
