//! SIREAD locks on B-tree leaf pages (lmgr README "Predicate locks and SSI",
//! nbtree README "Predicate locks"), through a real engine: a serializable
//! scan locks the leaf pages it reads (a probe that finds nothing locks the
//! leaf where its key would be), not the index; past
//! max_pred_locks_per_relation pages the lock is promoted to the index; an
//! insert is checked against the locks of the page it lands on; a split
//! copies the locks of the old page to the new right page, so an insert
//! landing there still meets the reader. Threads released by barriers then
//! run transactions that read and write disjoint key ranges of one index
//! (both commit) and crossed ranges (write skew: never both).
#![cfg(not(loom))]

use ferrogres_engine::engine::{Engine, DEFAULT_TABLESPACE_OID, POSTGRES_DATABASE_OID};
use ferrogres_engine::heap::tuple::{AttrDesc, Datum, Tid};
use ferrogres_engine::lmgr::predicate::{PredTarget, SerializableXact};
use ferrogres_engine::nbtree::{BTree, BuiltinComparator, KeyKind, ScanBounds};
use ferrogres_engine::storage::{BlockNumber, RelFileLocator};
use std::ops::Bound;
use std::sync::Arc;

mod common;
use common::serializable::{lockstep_pairs, open_engine};

/// An index of a user relation (file number past the catalogs': tracked).
const INDEX: RelFileLocator = RelFileLocator { spc_oid: DEFAULT_TABLESPACE_OID, db_oid: POSTGRES_DATABASE_OID, rel_number: 16500 };

/// An int8 index holding `keys`, inserted outside any serializable transaction.
fn tree_with(engine: &Engine, keys: impl Iterator<Item = i64>) -> BTree {
    let t = BTree::new(INDEX, vec![AttrDesc::fixed(8)], Arc::new(BuiltinComparator(vec![KeyKind::Int8])), false);
    t.create(engine).unwrap();
    for k in keys {
        t.insert(engine, &[Some(Datum::ByVal(k as u64))], tid_of(k), None).unwrap();
    }
    t
}

fn tid_of(k: i64) -> Tid {
    Tid::new((k / 100) as u32, (k % 100 + 1) as u16)
}

fn key(k: i64) -> Vec<Option<Datum<'static>>> {
    vec![Some(Datum::ByVal(k as u64))]
}

/// Scans `lo..=hi` as `sx`; returns the number of entries.
fn scan(engine: &Engine, t: &BTree, sx: &Arc<SerializableXact>, lo: i64, hi: i64) -> usize {
    let bounds = ScanBounds::range(Bound::Included(key(lo)), Bound::Included(key(hi)));
    let mut n = 0;
    for r in t.scan(engine, bounds).serializable(Some(sx.clone())) {
        r.unwrap();
        n += 1;
    }
    n
}

fn insert(engine: &Engine, t: &BTree, sx: &SerializableXact, k: i64) -> ferrogres_engine::error::Result<()> {
    t.insert_serializable(engine, &key(k), tid_of(k), None, Some(sx))
}

fn pages(engine: &Engine, sx: &SerializableXact) -> Vec<BlockNumber> {
    engine
        .txn
        .predicate
        .held_targets(sx)
        .into_iter()
        .map(|t| match t {
            PredTarget::Page(r, b) if r == INDEX => b,
            other => panic!("expected only page locks of the index, got {other:?}"),
        })
        .collect()
}

/// The leaf a probe for `k` reads (through a throwaway transaction).
fn leaf_of(engine: &Engine, t: &BTree, k: i64) -> BlockNumber {
    let pm = &engine.txn.predicate;
    let x = pm.register(99, "99/1".into(), false);
    scan(engine, t, &x, k, k);
    let p = pages(engine, &x);
    pm.release(&x, false);
    assert_eq!(p.len(), 1, "a probe reads one leaf");
    p[0]
}

fn leaves(engine: &Engine, t: &BTree) -> usize {
    *t.check_invariants(engine).unwrap().pages_per_level.last().unwrap()
}

#[test]
fn scans_lock_the_leaf_pages_they_read_and_inserts_check_their_page() {
    let (_dir, engine) = open_engine();
    let pm = &engine.txn.predicate;
    // Every tenth key, 0..40000: ~11 leaves of about 360 entries.
    let t = tree_with(&engine, (0..4000).map(|i| i * 10));
    let nleaves = leaves(&engine, &t);
    assert!((5..31).contains(&nleaves), "{nleaves} leaves");

    let r = pm.register(1, "3/1".into(), false);
    // A point probe that finds its key: one page, not the index.
    assert_eq!(scan(&engine, &t, &r, 20_000, 20_000), 1);
    assert_eq!(pages(&engine, &r), vec![leaf_of(&engine, &t, 20_000)]);
    // A probe that finds nothing locks the leaf where the key would be.
    assert_eq!(scan(&engine, &t, &r, 30_005, 30_005), 0);
    assert!(pages(&engine, &r).contains(&leaf_of(&engine, &t, 30_005)));
    assert_eq!(scan(&engine, &t, &r, 1_000_000, 2_000_000), 0, "past the last key: the rightmost leaf");
    let mut want = vec![leaf_of(&engine, &t, 20_000), leaf_of(&engine, &t, 30_005), leaf_of(&engine, &t, 1_000_000)];
    want.sort_unstable();
    want.dedup();
    let mut held = pages(&engine, &r);
    held.sort_unstable();
    assert_eq!(held, want);

    // An insert into a locked page is an rw-conflict; one elsewhere is not
    // (with the whole index locked, both were).
    let w = pm.register(2, "4/1".into(), false);
    insert(&engine, &t, &w, 20_001).unwrap();
    assert!(pm.has_rw_conflict(&r, &w), "insert next to the key read");
    let w2 = pm.register(3, "5/1".into(), false);
    insert(&engine, &t, &w2, 5).unwrap();
    assert_ne!(leaf_of(&engine, &t, 5), leaf_of(&engine, &t, 20_000));
    assert!(!pm.has_rw_conflict(&r, &w2), "insert into a leaf nobody read");
    // Inserting into the gap a probe found empty conflicts too.
    let w3 = pm.register(4, "6/1".into(), false);
    insert(&engine, &t, &w3, 30_006).unwrap();
    assert!(pm.has_rw_conflict(&r, &w3), "insert into the gap probed");
    // A transaction's own page locks do not stop its own inserts.
    insert(&engine, &t, &r, 20_002).unwrap();

    // A range over a few leaves locks each of them.
    let r2 = pm.register(5, "7/1".into(), false);
    assert_eq!(scan(&engine, &t, &r2, 0, 9_990), 1001, "with 5");
    let p = pages(&engine, &r2);
    assert!(p.len() >= 3 && p.len() < nleaves, "{p:?}");
    // Backward scans lock what they read too.
    let r3 = pm.register(6, "8/1".into(), false);
    let n = t.scan_backward(&engine, ScanBounds::all()).serializable(Some(r3.clone())).count();
    assert_eq!(n, 4004);
    assert_eq!(pages(&engine, &r3).len(), leaves(&engine, &t));

    // Non-serializable scans take nothing.
    let before = pm.lock_status().len();
    assert_eq!(t.scan(&engine, ScanBounds::all()).serializable(None).count(), 4004);
    assert_eq!(pm.lock_status().len(), before);

    for x in [&r, &w, &w2, &w3, &r2, &r3] {
        pm.release(x, false);
    }
    assert!(pm.lock_status().is_empty());
}

#[test]
fn many_leaf_locks_are_promoted_to_the_index() {
    let (_dir, engine) = open_engine();
    let pm = &engine.txn.predicate;
    let t = tree_with(&engine, 0..20_000);
    let nleaves = leaves(&engine, &t);
    // max_pred_locks_per_relation -2 with 64 per transaction: 31 pages.
    assert!(nleaves > 32, "{nleaves} leaves");
    let r = pm.register(1, "3/1".into(), false);
    assert_eq!(scan(&engine, &t, &r, 0, 20_000), 20_000);
    assert_eq!(pm.held_targets(&r), vec![PredTarget::Relation(INDEX)]);
    // Now every insert into the index conflicts.
    let w = pm.register(2, "4/1".into(), false);
    insert(&engine, &t, &w, 50_000).unwrap();
    assert!(pm.has_rw_conflict(&r, &w));
    pm.release(&r, false);
    pm.release(&w, false);
}

#[test]
fn a_split_copies_page_locks_to_the_new_right_page() {
    let (_dir, engine) = open_engine();
    let pm = &engine.txn.predicate;
    // One leaf (the root), even keys 0..600: 300 entries, room for ~100 more.
    let t = tree_with(&engine, (0..300).map(|i| i * 2));
    assert_eq!(leaves(&engine, &t), 1);
    let old = leaf_of(&engine, &t, 590);
    let r = pm.register(1, "3/1".into(), false);
    assert_eq!(scan(&engine, &t, &r, 590, 590), 1);
    assert_eq!(pages(&engine, &r), vec![old]);
    // Odd keys in the lower part, from a non-serializable inserter, until the
    // page splits: the upper half (590 among it) moves to a new page.
    let mut k = 1;
    while leaves(&engine, &t) == 1 {
        t.insert(&engine, &key(k), tid_of(k), None).unwrap();
        k += 2;
        assert!(k < 400, "the page never split");
    }
    let new = leaf_of(&engine, &t, 591);
    assert_ne!(new, old, "591 lands on the new right page");
    let mut held = pages(&engine, &r);
    held.sort_unstable();
    let mut want = vec![old, new];
    want.sort_unstable();
    assert_eq!(held, want, "the reader's lock was copied to the new page");
    // A serializable insert of 591 lands on the new page: the reader read
    // that range before the split, so it is an rw-conflict.
    let w = pm.register(2, "4/1".into(), false);
    insert(&engine, &t, &w, 591).unwrap();
    assert!(pm.has_rw_conflict(&r, &w), "conflict through the copied lock");
    pm.release(&r, false);
    pm.release(&w, false);
    assert!(pm.lock_status().is_empty());
}

/// Pairs of threads, each a serializable transaction that reads a key range
/// of the index (through a scan) and then inserts a key, released together
/// by barriers. `crossed`: each inserts into the range the other read (write
/// skew); else into its own range, far from the other's. Returns how many
/// rounds committed both.
fn run_pairs(engine: &Engine, t: &BTree, crossed: bool, rounds: u32) -> usize {
    // Side 0 reads around 10_000, side 1 around 30_000; each round on fresh keys.
    let mine = |side: u32, round: u32| 10_000 + side as i64 * 20_000 + round as i64 * 40;
    let read = |side, round, x: &Arc<SerializableXact>| {
        scan(engine, t, x, mine(side, round), mine(side, round) + 20);
    };
    let write = |side, round, x: &SerializableXact| {
        let target = if crossed { mine(1 - side, round) + 3 + side as i64 } else { mine(side, round) + 1 };
        insert(engine, t, x, target).is_ok()
    };
    lockstep_pairs(engine, rounds, read, write)
}

#[test]
fn disjoint_key_ranges_both_commit_crossed_ones_never_do() {
    let (_dir, engine) = open_engine();
    // Every tenth key up to 60000: the two ranges are thousands of keys
    // (several leaves) apart.
    let t = tree_with(&engine, (0..6000).map(|i| i * 10));
    const ROUNDS: u32 = 50;
    let both = run_pairs(&engine, &t, false, ROUNDS);
    assert_eq!(both, ROUNDS as usize, "disjoint ranges of one index: no false conflict");
    let both = run_pairs(&engine, &t, true, ROUNDS);
    assert_eq!(both, 0, "write skew through the index: one of the two fails");
    assert_eq!(engine.txn.predicate.xact_count(), 0);
    assert!(engine.txn.predicate.lock_status().is_empty());
    t.check_invariants(&engine).unwrap();
}
