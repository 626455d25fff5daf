//! Hash indexes through the real engine (a small buffer pool, so pages are evicted
//! and read back): random inserts, deletes (VACUUM's bulk delete) and lookups
//! against a model, with the structure checker after every phase; growth by splits
//! from 2 buckets to hundreds; duplicate hash codes filling overflow chains, then
//! VACUUM after mass deletes squeezing them and the freed pages reused; an index
//! created for many entries; redo (the engine dropped without shutdown and
//! recovered) giving the same index.
#![cfg(not(loom))]

use ferrogres_engine::config::Settings;
use ferrogres_engine::engine::{Engine, DEFAULT_TABLESPACE_OID, POSTGRES_DATABASE_OID};
use ferrogres_engine::hash::{HashIndex, HashReport};
use ferrogres_engine::heap::tuple::Tid;
use ferrogres_engine::storage::{ForkNumber, RelFileLocator};
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};

fn rel(n: u32) -> RelFileLocator {
    RelFileLocator { spc_oid: DEFAULT_TABLESPACE_OID, db_oid: POSTGRES_DATABASE_OID, rel_number: n }
}

fn settings() -> Settings {
    let mut s = Settings::default();
    s.set("shared_buffers", "64").unwrap();
    s.set("buffer_mapping_partitions", "8").unwrap();
    s
}

fn tid_of(i: u64) -> Tid {
    Tid::new((i / 200) as u32, (i % 200 + 1) as u16)
}

fn no_interrupt() -> ferrogres_engine::Result<()> {
    Ok(())
}

type Model = BTreeMap<u32, BTreeSet<Tid>>;

fn lookup(engine: &Engine, ix: &HashIndex, hash: u32) -> BTreeSet<Tid> {
    let mut got = BTreeSet::new();
    for t in ix.scan(engine, hash) {
        assert!(got.insert(t.unwrap()), "a TID returned twice for {hash:#x}");
    }
    got
}

/// Checks the structure and that the index holds exactly the model's entries.
fn check(engine: &Engine, ix: &HashIndex, model: &Model) -> HashReport {
    let mut entries = Vec::new();
    let r = ix.check(engine, Some(&mut entries)).unwrap();
    entries.sort();
    let want: Vec<(u32, Tid)> = model.iter().flat_map(|(h, ts)| ts.iter().map(move |t| (*h, *t))).collect();
    assert_eq!(entries.len(), want.len(), "{r:?}");
    assert!(entries == want, "index contents differ from the model");
    r
}

#[test]
fn random_inserts_deletes_and_lookups_match_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    let ix = HashIndex::new(&engine, rel(50001));
    ix.create(&engine, 75, 0.0).unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(0x4a54);
    let mut model = Model::new();
    let mut next = 0u64;
    for round in 0..12 {
        // Inserts: mostly random codes, some from a small set (many equal codes,
        // long chains), some in one bucket's residue class.
        for _ in 0..1500 {
            let h: u32 = match rng.gen_range(0..10) {
                0..=5 => rng.gen(),
                6..=8 => rng.gen_range(0..40) * 0x0101_0101,
                _ => rng.gen::<u32>() << 12 | 0x5a5,
            };
            next += 1;
            ix.insert(&engine, h, tid_of(next)).unwrap();
            model.entry(h).or_default().insert(tid_of(next));
        }
        // Deletes: a random third of the TIDs of this round, or of everything.
        let frac = if round % 4 == 3 { 0.8 } else { 0.3 };
        let dead: BTreeSet<Tid> = model.values().flatten().filter(|_| rng.gen_bool(frac)).copied().collect();
        let stats = ix.bulk_delete(&engine, &|t| dead.contains(&t), &no_interrupt).unwrap();
        assert_eq!(stats.tuples_removed, dead.len() as u64);
        for ts in model.values_mut() {
            ts.retain(|t| !dead.contains(t));
        }
        model.retain(|_, ts| !ts.is_empty());
        let r = check(&engine, &ix, &model);
        assert_eq!(stats.tuples_remaining, r.entries);
        assert_eq!(ix.meta(&engine).unwrap().ntuples, r.entries, "VACUUM sets the entry count");
        // Lookups: present codes, and absent ones.
        let keys: Vec<u32> = model.keys().copied().collect();
        for _ in 0..300 {
            let h = if rng.gen_bool(0.7) && !keys.is_empty() { keys[rng.gen_range(0..keys.len())] } else { rng.gen() };
            assert_eq!(lookup(&engine, &ix, h), model.get(&h).cloned().unwrap_or_default(), "lookup of {h:#x}");
        }
    }
    let r = ix.check(&engine, None).unwrap();
    assert!(r.buckets > 8, "the index never split: {r:?}");
    assert!(r.overflow_pages > 0 || r.free_pages > 0, "no chain ever overflowed: {r:?}");
    eprintln!("{r:?}");
}

#[test]
fn splits_grow_the_index_from_two_buckets() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    let ix = HashIndex::new(&engine, rel(50002));
    ix.create(&engine, 10, 0.0).unwrap();
    assert_eq!(ix.meta(&engine).unwrap().maxbucket, 1);
    let ffactor = ix.meta(&engine).unwrap().ffactor as u64;
    let mut model = Model::new();
    let n = 60_000u64;
    for i in 0..n {
        let h = (i as u32).wrapping_mul(0x9e37_79b9).rotate_left(7);
        ix.insert(&engine, h, tid_of(i)).unwrap();
        model.entry(h).or_default().insert(tid_of(i));
    }
    let r = check(&engine, &ix, &model);
    // Splits keep up with the fill factor (one split per ffactor inserts).
    assert!(r.buckets as u64 * ffactor >= n * 9 / 10, "{r:?} with ffactor {ffactor}");
    assert_eq!(r.unfinished_splits, 0);
    for i in (0..n).step_by(97) {
        let h = (i as u32).wrapping_mul(0x9e37_79b9).rotate_left(7);
        assert_eq!(lookup(&engine, &ix, h), model[&h]);
    }
    eprintln!("{r:?}");
}

#[test]
fn vacuum_after_mass_deletes_frees_and_reuses_overflow_pages() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    let ix = HashIndex::new(&engine, rel(50003));
    ix.create(&engine, 75, 0.0).unwrap();
    // 20000 entries with 4 hash codes: four long chains (about 12 pages each).
    let codes = [7u32, 0x8000_0007, 11, 0x4000_000b];
    let mut model = Model::new();
    for i in 0..20_000u64 {
        let h = codes[(i % 4) as usize];
        ix.insert(&engine, h, tid_of(i)).unwrap();
        model.entry(h).or_default().insert(tid_of(i));
    }
    let before = check(&engine, &ix, &model);
    assert!(before.overflow_pages >= 40, "{before:?}");
    let size = engine.buffers.nblocks(rel(50003), ForkNumber::Main).unwrap();
    // Delete 90 %: the squeeze leaves each chain as short as its entries allow.
    let dead = |t: Tid| !(t.block * 200 + t.offset as u32).is_multiple_of(10);
    let stats = ix.bulk_delete(&engine, &dead, &no_interrupt).unwrap();
    for ts in model.values_mut() {
        ts.retain(|t| !dead(*t));
    }
    let after = check(&engine, &ix, &model);
    assert_eq!(stats.tuples_remaining, 2000);
    assert!(stats.pages_freed as u32 >= before.overflow_pages - after.overflow_pages && stats.pages_freed > 0);
    assert_eq!(after.free_pages, stats.pages_freed as u32, "{after:?}");
    assert!(after.overflow_pages <= 8, "chains not squeezed: {after:?}");
    for h in codes {
        assert_eq!(lookup(&engine, &ix, h), model[&h]);
    }
    // New entries reuse the freed pages: the file does not grow.
    for i in 20_000..30_000u64 {
        let h = codes[(i % 4) as usize];
        ix.insert(&engine, h, tid_of(i)).unwrap();
        model.entry(h).or_default().insert(tid_of(i));
    }
    let again = check(&engine, &ix, &model);
    assert!(again.free_pages < after.free_pages, "{again:?}");
    assert_eq!(engine.buffers.nblocks(rel(50003), ForkNumber::Main).unwrap(), size, "freed pages were not reused");
    // Delete everything: every chain back to its primary page.
    let stats = ix.bulk_delete(&engine, &|_| true, &no_interrupt).unwrap();
    assert_eq!(stats.tuples_remaining, 0);
    let empty = check(&engine, &ix, &Model::new());
    assert_eq!(empty.overflow_pages, 0, "{empty:?}");
}

#[test]
fn an_index_created_for_many_entries_starts_with_enough_buckets() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    let ix = HashIndex::new(&engine, rel(50004));
    ix.create(&engine, 75, 1_000_000.0).unwrap();
    let m = ix.meta(&engine).unwrap();
    // PostgreSQL: 1M rows / ffactor 307 = 3258 buckets, rounded up to a unit.
    assert_eq!((m.ffactor, m.maxbucket + 1), (307, 3584));
    let r = ix.check(&engine, None).unwrap();
    assert_eq!((r.buckets, r.unused_pages), (3584, 0));
}

/// Inserts not yet folded into the metapage's count are among what VACUUM
/// counts: after it, refilling the index to its old size must not split (the
/// inserts would otherwise count twice and the buckets double).
#[test]
fn vacuum_resets_the_insert_count_so_refilling_does_not_split() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    let ix = HashIndex::new(&engine, rel(50005));
    ix.create(&engine, 75, 20_000.0).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    for i in 0..20_000u64 {
        ix.insert(&engine, rng.gen::<u32>(), tid_of(i)).unwrap();
    }
    let buckets = ix.meta(&engine).unwrap().maxbucket;
    let stats = ix.bulk_delete(&engine, &|t| t.block % 4 != 0, &no_interrupt).unwrap();
    assert_eq!(stats.tuples_remaining + stats.tuples_removed, 20_000);
    assert_eq!(ix.meta(&engine).unwrap().ntuples, stats.tuples_remaining);
    for i in 0..stats.tuples_removed {
        ix.insert(&engine, rng.gen::<u32>(), tid_of(100_000 + i)).unwrap();
    }
    assert_eq!(ix.meta(&engine).unwrap().maxbucket, buckets, "the refilled index split");
    ix.check(&engine, None).unwrap();
}

#[test]
fn redo_rebuilds_the_same_index() {
    let dir = tempfile::tempdir().unwrap();
    let mut model = Model::new();
    {
        let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
        let ix = HashIndex::new(&engine, rel(50005));
        ix.create(&engine, 50, 0.0).unwrap();
        engine.checkpoint().unwrap();
        for i in 0..30_000u64 {
            let h = if i % 3 == 0 { (i % 5) as u32 } else { (i as u32).wrapping_mul(0x2545_f491) };
            ix.insert(&engine, h, tid_of(i)).unwrap();
            model.entry(h).or_default().insert(tid_of(i));
        }
        let dead = |t: Tid| t.offset.is_multiple_of(3);
        ix.bulk_delete(&engine, &dead, &no_interrupt).unwrap();
        for ts in model.values_mut() {
            ts.retain(|t| !dead(*t));
        }
        model.retain(|_, ts| !ts.is_empty());
        for i in 30_000..31_000u64 {
            let h = (i % 5) as u32;
            ix.insert(&engine, h, tid_of(i)).unwrap();
            model.entry(h).or_default().insert(tid_of(i));
        }
        engine.wal.flush(engine.wal.insert_position()).unwrap();
        // Dropped without shutdown: the next open replays the WAL.
        std::mem::forget(engine);
    }
    let (engine, report) = Engine::open(dir.path(), settings()).unwrap();
    assert!(report.recovered && report.redo_records > 1000, "{report:?}");
    let ix = HashIndex::new(&engine, rel(50005));
    let r = check(&engine, &ix, &model);
    assert!(r.buckets > 64 && r.free_pages > 0 && r.overflow_pages > 0, "{r:?}");
    for h in (0..5).chain([7u32.wrapping_mul(0x2545_f491)]) {
        assert_eq!(lookup(&engine, &ix, h), model.get(&h).cloned().unwrap_or_default());
    }
}
