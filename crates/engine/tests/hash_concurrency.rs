//! Concurrent inserters, scanners and VACUUM on one hash index that starts with 2
//! buckets and a low fill factor, so that buckets split all the time under the
//! scans: 6 threads insert (many entries per hash code, so chains overflow), 3
//! threads look codes up continuously, 1 thread runs VACUUM's bulk delete of the
//! entries marked dead. Every lookup must find every live entry whose insert had
//! returned before the lookup started, no TID twice, and nothing but entries of
//! the code sought; at the end the structure checker passes and every code's
//! lookup is exact.
#![cfg(not(loom))]

use ferrogres_engine::config::Settings;
use ferrogres_engine::engine::{Engine, DEFAULT_TABLESPACE_OID, POSTGRES_DATABASE_OID};
use ferrogres_engine::hash::HashIndex;
use ferrogres_engine::heap::tuple::Tid;
use ferrogres_engine::storage::RelFileLocator;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeSet, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

const INSERTERS: u32 = 6;
const PER_THREAD: u32 = 12_000;
/// Hash codes in use: each gets about INSERTERS * PER_THREAD / CODES entries.
const CODES: u32 = 4_000;

/// The hash code of the entry with TID `t` (a function of the TID, so that a
/// scan can tell whether a TID it got belongs to the code it sought).
fn code_of(t: Tid) -> u32 {
    let n = t.block * 1000 + t.offset as u32;
    (n % CODES).wrapping_mul(0x9e37_79b9) ^ 0x5bd1_e995
}

/// Entries whose TID number is a multiple of 5 are "dead" once inserted: VACUUM
/// removes them.
fn is_dead(t: Tid) -> bool {
    (t.block * 1000 + t.offset as u32).is_multiple_of(5)
}

#[test]
fn concurrent_inserts_lookups_splits_and_vacuum_never_lose_an_entry() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Settings::default();
    s.set("shared_buffers", "96").unwrap();
    s.set("buffer_mapping_partitions", "8").unwrap();
    let (engine, _) = Engine::open(dir.path(), s).unwrap();
    let rel = RelFileLocator { spc_oid: DEFAULT_TABLESPACE_OID, db_oid: POSTGRES_DATABASE_OID, rel_number: 51000 };
    HashIndex::new(&engine, rel).create(&engine, 10, 0.0).unwrap();
    // TIDs whose insert has returned, per thread, in insertion order.
    let done: Arc<Vec<Mutex<Vec<Tid>>>> = Arc::new((0..INSERTERS).map(|_| Mutex::new(Vec::new())).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let (lookups, vacuums) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let scanners: Vec<_> = (0..3)
        .map(|s| {
            let (engine, done, stop, lookups) = (engine.clone(), done.clone(), stop.clone(), lookups.clone());
            std::thread::spawn(move || {
                let ix = HashIndex::new(&engine, rel);
                let mut rng = rand::rngs::SmallRng::seed_from_u64(100 + s);
                while !stop.load(Ordering::Relaxed) {
                    let code = (rng.gen_range(0..CODES)).wrapping_mul(0x9e37_79b9) ^ 0x5bd1_e995;
                    let before: Vec<Tid> = done
                        .iter()
                        .flat_map(|d| d.lock().unwrap().iter().filter(|t| code_of(**t) == code && !is_dead(**t)).copied().collect::<Vec<_>>())
                        .collect();
                    let mut got = HashSet::new();
                    for t in ix.scan(&engine, code) {
                        let t = t.unwrap();
                        assert_eq!(code_of(t), code, "scan for {code:#x} returned {t:?}");
                        assert!(got.insert(t), "scan for {code:#x} returned {t:?} twice");
                    }
                    for t in &before {
                        assert!(got.contains(t), "entry {t:?} inserted before the lookup of {code:#x} was missed");
                    }
                    lookups.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let vacuum = {
        let (engine, stop, vacuums) = (engine.clone(), stop.clone(), vacuums.clone());
        std::thread::spawn(move || {
            let ix = HashIndex::new(&engine, rel);
            while !stop.load(Ordering::Relaxed) {
                ix.bulk_delete(&engine, &is_dead, &|| Ok(())).unwrap();
                vacuums.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        })
    };
    let inserters: Vec<_> = (0..INSERTERS)
        .map(|t| {
            let (engine, done) = (engine.clone(), done.clone());
            std::thread::spawn(move || {
                let ix = HashIndex::new(&engine, rel);
                for i in 0..PER_THREAD {
                    let tid = Tid::new(t * 100_000 + i / 999, (i % 999 + 1) as u16);
                    ix.insert(&engine, code_of(tid), tid).unwrap();
                    done[t as usize].lock().unwrap().push(tid);
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
    vacuum.join().unwrap();
    let ix = HashIndex::new(&engine, rel);
    ix.bulk_delete(&engine, &is_dead, &|| Ok(())).unwrap();
    let mut entries = Vec::new();
    let r = ix.check(&engine, Some(&mut entries)).unwrap();
    let all: BTreeSet<(u32, Tid)> = done.iter().flat_map(|d| d.lock().unwrap().clone()).filter(|t| !is_dead(*t)).map(|t| (code_of(t), t)).collect();
    let got: BTreeSet<(u32, Tid)> = entries.into_iter().collect();
    assert!(got == all, "index holds {} entries, {} live ones were inserted", got.len(), all.len());
    let (l, v) = (lookups.load(Ordering::Relaxed), vacuums.load(Ordering::Relaxed));
    eprintln!("{l} lookups, {v} vacuums during the inserts; {r:?}");
    assert!(r.buckets > 256, "too few splits to test anything: {r:?}");
    assert!(l > 100 && v >= 2, "too little concurrency: {l} lookups, {v} vacuums");
}
