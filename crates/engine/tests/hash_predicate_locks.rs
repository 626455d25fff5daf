//! SIREAD locks on hash index bucket pages (lmgr README "Predicate locks and
//! SSI", hash README "Predicate locks"), through a real engine: a
//! serializable scan locks the primary page of the bucket it reads (a scan
//! that finds nothing too), not the index; an insert is checked against the
//! locks of its bucket's primary page, also when the entry goes to an
//! overflow page of the chain; a bucket split copies the old bucket's locks
//! to the new bucket, so an insert of a key the reader probed still meets it
//! after the key moved. Threads released by barriers then run transactions
//! that probe and insert in different buckets of one index (both commit) and
//! crossed ones (write skew: never both).
#![cfg(not(loom))]

use ferrogres_engine::engine::{Engine, DEFAULT_TABLESPACE_OID, POSTGRES_DATABASE_OID};
use ferrogres_engine::hash::HashIndex;
use ferrogres_engine::heap::tuple::Tid;
use ferrogres_engine::lmgr::predicate::{PredTarget, SerializableXact};
use ferrogres_engine::storage::{BlockNumber, RelFileLocator};
use std::sync::Arc;

mod common;
use common::serializable::{lockstep_pairs, open_engine};

/// An index of a user relation (file number past the catalogs': tracked).
const INDEX: RelFileLocator = RelFileLocator { spc_oid: DEFAULT_TABLESPACE_OID, db_oid: POSTGRES_DATABASE_OID, rel_number: 16600 };

/// A new index with two buckets (0: even hash codes, 1: odd ones).
fn index(engine: &Engine, fillfactor: u16) -> HashIndex {
    let ix = HashIndex::new(engine, INDEX);
    ix.create(engine, fillfactor, 0.0).unwrap();
    assert_eq!(ix.meta(engine).unwrap().maxbucket, 1);
    ix
}

fn tid_of(i: u64) -> Tid {
    Tid::new((i / 200) as u32, (i % 200 + 1) as u16)
}

/// Scans for `hash` as `sx`; returns the number of entries.
fn scan(engine: &Engine, ix: &HashIndex, sx: &Arc<SerializableXact>, hash: u32) -> usize {
    let mut n = 0;
    for t in ix.scan(engine, hash).serializable(Some(sx.clone())) {
        t.unwrap();
        n += 1;
    }
    n
}

fn insert(engine: &Engine, ix: &HashIndex, sx: &SerializableXact, hash: u32, i: u64) -> ferrogres_engine::error::Result<()> {
    ix.insert_serializable(engine, hash, tid_of(i), Some(sx))
}

/// The primary page of `bucket`.
fn block_of(engine: &Engine, ix: &HashIndex, bucket: u32) -> BlockNumber {
    ix.meta(engine).unwrap().block_of(bucket).unwrap()
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

#[test]
fn scans_lock_their_bucket_page_and_inserts_check_their_bucket() {
    let (_dir, engine) = open_engine();
    let pm = &engine.txn.predicate;
    let ix = index(&engine, 75);
    for i in 0..100u64 {
        ix.insert(&engine, i as u32, tid_of(i)).unwrap();
    }
    let (b0, b1) = (block_of(&engine, &ix, 0), block_of(&engine, &ix, 1));
    assert_ne!(b0, b1);

    let r = pm.register(1, "3/1".into(), false);
    // A probe that finds its key: the primary page of its bucket.
    assert_eq!(scan(&engine, &ix, &r, 42), 1);
    assert_eq!(pages(&engine, &r), vec![b0]);
    // A probe that finds nothing locks its bucket too (already held).
    assert_eq!(scan(&engine, &ix, &r, 1000), 0);
    assert_eq!(pages(&engine, &r), vec![b0]);

    // An insert into the bucket read is an rw-conflict (any hash code of
    // the bucket: the page lock stands for the bucket); one into the other
    // bucket is not (with the whole index locked, both were).
    let w = pm.register(2, "4/1".into(), false);
    insert(&engine, &ix, &w, 2000, 1000).unwrap();
    assert!(pm.has_rw_conflict(&r, &w), "insert into the bucket read");
    let w2 = pm.register(3, "5/1".into(), false);
    insert(&engine, &ix, &w2, 2001, 1001).unwrap();
    assert!(!pm.has_rw_conflict(&r, &w2), "insert into a bucket nobody read");
    // A transaction's own lock does not stop its own inserts.
    insert(&engine, &ix, &r, 42, 1002).unwrap();

    // Non-serializable scans take nothing.
    let before = pm.lock_status().len();
    assert_eq!(ix.scan(&engine, 42).serializable(None).count(), 2);
    assert_eq!(pm.lock_status().len(), before);
    for x in [&r, &w, &w2] {
        pm.release(x, false);
    }
    assert!(pm.lock_status().is_empty());
}

#[test]
fn an_insert_into_an_overflow_page_checks_the_primary_page() {
    let (_dir, engine) = open_engine();
    let pm = &engine.txn.predicate;
    let ix = index(&engine, 75);
    // One hash code 600 times: bucket 0 gets a chain (407 entries a page);
    // the index may split, but hash code 0 stays in bucket 0.
    for i in 0..600u64 {
        ix.insert(&engine, 0, tid_of(i)).unwrap();
    }
    let r = pm.register(1, "3/1".into(), false);
    assert_eq!(scan(&engine, &ix, &r, 0), 600);
    let b0 = block_of(&engine, &ix, 0);
    assert_eq!(pages(&engine, &r), vec![b0], "one lock for the whole chain");
    // The primary page is full: the entry goes further down the chain.
    let w = pm.register(2, "4/1".into(), false);
    insert(&engine, &ix, &w, 0, 700).unwrap();
    assert!(pm.has_rw_conflict(&r, &w));
    assert_eq!(ix.check(&engine, None).unwrap().unfinished_splits, 0);
    pm.release(&r, false);
    pm.release(&w, false);
}

#[test]
fn a_bucket_split_copies_the_lock_to_the_new_bucket() {
    let (_dir, engine) = open_engine();
    let pm = &engine.txn.predicate;
    // Fill factor 10: a split every few dozen inserts.
    let ix = index(&engine, 10);
    let r = pm.register(1, "3/1".into(), false);
    // Hash code 2 is in bucket 0 of two buckets, in bucket 2 of three.
    assert_eq!(scan(&engine, &ix, &r, 2), 0);
    let old = block_of(&engine, &ix, 0);
    assert_eq!(pages(&engine, &r), vec![old]);
    // Odd hash codes from a non-serializable inserter until bucket 0 splits.
    let mut i = 0u64;
    while ix.meta(&engine).unwrap().maxbucket < 2 {
        ix.insert(&engine, (2 * i + 1) as u32, tid_of(i)).unwrap();
        i += 1;
        assert!(i < 10_000, "the index never split");
    }
    let new = block_of(&engine, &ix, 2);
    let mut want = vec![old, new];
    want.sort_unstable();
    let mut held = pages(&engine, &r);
    held.sort_unstable();
    assert_eq!(held, want, "the reader's lock was copied to the new bucket");
    // A serializable insert of hash code 2 lands in the new bucket: the
    // reader probed for it before the split, so it is an rw-conflict.
    let w = pm.register(2, "4/1".into(), false);
    insert(&engine, &ix, &w, 2, 50_000).unwrap();
    assert!(pm.has_rw_conflict(&r, &w), "conflict through the copied lock");
    // A bucket split from one nobody read gets no lock.
    let w2 = pm.register(3, "5/1".into(), false);
    while ix.meta(&engine).unwrap().maxbucket < 3 {
        ix.insert(&engine, (2 * i) as u32 * 2, tid_of(i)).unwrap();
        i += 1;
        assert!(i < 20_000, "the index never split again");
    }
    insert(&engine, &ix, &w2, 3, 50_001).unwrap();
    assert!(!pm.has_rw_conflict(&r, &w2), "bucket 3 (from bucket 1) was never read");
    for x in [&r, &w, &w2] {
        pm.release(x, false);
    }
    assert!(pm.lock_status().is_empty());
    ix.check(&engine, None).unwrap();
}

/// Pairs of threads, each a serializable transaction that probes one hash
/// code and then inserts one, released together by barriers. Side 0 probes
/// even codes (bucket 0), side 1 odd ones (bucket 1). `crossed`: each
/// inserts into the other's bucket (write skew); else into its own. Returns
/// how many rounds committed both.
fn run_pairs(engine: &Engine, ix: &HashIndex, crossed: bool, rounds: u32) -> usize {
    let read = |side, round: u32, x: &Arc<SerializableXact>| {
        scan(engine, ix, x, 1000 + 2 * round * 8 + side);
    };
    let write = |side, round: u32, x: &SerializableXact| {
        let mine = 1000 + 2 * round * 8 + side;
        let theirs = 1000 + 2 * round * 8 + (1 - side);
        let code = if crossed { theirs } else { mine };
        let i = (round * 2 + side) as u64 + if crossed { 1000 } else { 0 };
        insert(engine, ix, x, code, i).is_ok()
    };
    lockstep_pairs(engine, rounds, read, write)
}

#[test]
fn different_buckets_both_commit_crossed_ones_never_do() {
    let (_dir, engine) = open_engine();
    // Default fill factor: 2 x 307 entries before the first split, more
    // than the runs insert, so the two buckets stay apart.
    let ix = index(&engine, 75);
    const ROUNDS: u32 = 50;
    let both = run_pairs(&engine, &ix, false, ROUNDS);
    assert_eq!(both, ROUNDS as usize, "different buckets of one index: no false conflict");
    let both = run_pairs(&engine, &ix, true, ROUNDS);
    assert_eq!(both, 0, "write skew through the index: one of the two fails");
    assert_eq!(ix.meta(&engine).unwrap().maxbucket, 1, "no split happened");
    assert_eq!(engine.txn.predicate.xact_count(), 0);
    assert!(engine.txn.predicate.lock_status().is_empty());
    ix.check(&engine, None).unwrap();
}
