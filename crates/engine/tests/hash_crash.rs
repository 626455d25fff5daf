//! Crash recovery of hash indexes, splits interrupted: a child process (this test
//! binary re-executed) inserts entries from 4 threads in transactions and reports
//! each entry after its transaction committed, into an index that starts with 2
//! buckets and a low fill factor (so it splits all the time); the parent kills it
//! with SIGKILL at a random moment, or the child aborts itself right after a split
//! logged its allocation (no entry copied yet) or after a split copied a page of
//! entries (some copied, the split not marked finished). After each crash the
//! parent recovers and checks with the structure checker: the index is
//! consistent, an aborted split is there unfinished, every reported entry is found
//! by a lookup (through the unfinished split: scans read the old bucket), and
//! `finish_incomplete_splits` completes the splits without duplicating an entry.
//!
//! Rounds: `FERROGRES_HASH_CRASH_KILLS` (default 20).
#![cfg(not(loom))]

mod common;
use common::child::run_then_kill;
use ferrogres_engine::config::Settings;
use ferrogres_engine::engine::{Engine, DEFAULT_TABLESPACE_OID, POSTGRES_DATABASE_OID};
use ferrogres_engine::hash::{testing, HashIndex};
use ferrogres_engine::heap::tuple::Tid;
use ferrogres_engine::storage::{ForkNumber, RelFileLocator};
use ferrogres_engine::txn::IsolationLevel;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const CHILD_ENV: &str = "FERROGRES_HASH_CRASH_CHILD_DIR";
const REL: RelFileLocator = RelFileLocator { spc_oid: DEFAULT_TABLESPACE_OID, db_oid: POSTGRES_DATABASE_OID, rel_number: 52000 };

fn settings() -> Settings {
    let mut s = Settings::default();
    s.set("shared_buffers", "48").unwrap();
    s.set("buffer_mapping_partitions", "8").unwrap();
    // Below PostgreSQL's 30 s minimum, which only the configuration path checks.
    s.checkpoint_timeout_s = 1;
    s.set("bgwriter_delay", "10ms").unwrap();
    s.set("max_connections", "10").unwrap();
    s
}

/// The hash code of an entry, a function of its TID (duplicates: 3000 codes).
fn code_of(t: Tid) -> u32 {
    let n = t.block as u64 * 1000 + t.offset as u64;
    ((n % 3000) as u32).wrapping_mul(0x2545_f491).rotate_left(11)
}

#[test]
#[ignore = "child process of hash_crash_recovery"]
fn hash_crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else { return };
    let base: u32 = std::env::var("FERROGRES_HASH_CRASH_BASE").unwrap().parse().unwrap();
    if let Ok(n) = std::env::var("FERROGRES_HASH_ABORT_AFTER_SPLIT_ALLOCATIONS") {
        testing::abort_after_split_allocations(n.parse().unwrap());
    }
    if let Ok(n) = std::env::var("FERROGRES_HASH_ABORT_AFTER_SPLIT_PAGES") {
        testing::abort_after_split_pages(n.parse().unwrap());
    }
    let (engine, _) = Engine::open(&dir, settings()).unwrap();
    if !engine.smgr.exists(REL, ForkNumber::Main) {
        HashIndex::new(&engine, REL).create(&engine, 10, 0.0).unwrap();
        engine.checkpoint().unwrap();
    }
    println!("READY");
    let handles: Vec<_> = (0..4u32)
        .map(|thread| {
            let engine = engine.clone();
            std::thread::spawn(move || {
                let ix = HashIndex::new(&engine, REL);
                let mut rng = rand::rngs::SmallRng::seed_from_u64((base ^ thread) as u64);
                let mut b = engine.backend(1000 + thread as i32).unwrap();
                let mut n: u32 = 0;
                loop {
                    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
                    b.txn.assign_xid_if_needed().unwrap();
                    let mut tids = Vec::new();
                    for _ in 0..rng.gen_range(1..20) {
                        let tid = Tid::new((base * 4 + thread) * 1000 + n / 999, (n % 999 + 1) as u16);
                        n += 1;
                        ix.insert(&engine, code_of(tid), tid).unwrap();
                        tids.push(tid);
                    }
                    b.txn.commit().unwrap();
                    let out = std::io::stdout();
                    let mut o = out.lock();
                    for t in tids {
                        writeln!(o, "C {} {}", t.block, t.offset).unwrap();
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

/// How the child ends.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fault {
    /// SIGKILL after the run time.
    Kill,
    /// Aborts itself after this many split allocations (or SIGKILL first).
    AfterAllocations(u64),
    /// Aborts itself after this many pages copied by splits (or SIGKILL first).
    AfterSplitPages(u64),
}

fn run_child(dir: &Path, base: u32, run_for: Duration, fault: Fault, reported: &mut HashSet<Tid>) -> bool {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--ignored", "--exact", "hash_crash_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, dir)
        .env("FERROGRES_HASH_CRASH_BASE", base.to_string());
    match fault {
        Fault::Kill => {}
        Fault::AfterAllocations(n) => {
            cmd.env("FERROGRES_HASH_ABORT_AFTER_SPLIT_ALLOCATIONS", n.to_string());
        }
        Fault::AfterSplitPages(n) => {
            cmd.env("FERROGRES_HASH_ABORT_AFTER_SPLIT_PAGES", n.to_string());
        }
    }
    let end = run_then_kill(cmd, Duration::from_secs(60), run_for);
    for line in &end.lines {
        if let ["C", b, o] = line.split(' ').collect::<Vec<_>>().as_slice() {
            reported.insert(Tid::new(b.parse().unwrap(), o.parse().unwrap()));
        }
    }
    use std::os::unix::process::ExitStatusExt;
    let (sig, err) = (end.status.signal(), &end.stderr);
    assert!(
        sig == Some(libc::SIGKILL) || (fault != Fault::Kill && sig == Some(libc::SIGABRT) && err.contains("test fault injection")),
        "child ended by itself: {}; stderr: {err}",
        end.status
    );
    sig == Some(libc::SIGABRT)
}

/// Recovers, checks, looks every reported entry up, finishes the splits and
/// checks again. Returns the number of unfinished splits found.
fn verify(dir: &Path, reported: &HashSet<Tid>, aborted_in_split: bool) -> usize {
    let (engine, report) = Engine::open(dir, settings()).unwrap();
    assert!(report.recovered);
    let ix = HashIndex::new(&engine, REL);
    let mut entries = Vec::new();
    let r = ix.check(&engine, Some(&mut entries)).unwrap();
    if aborted_in_split {
        assert!(r.unfinished_splits >= 1, "the child died inside a split: {r:?}");
    }
    // Lookups, with the splits still unfinished.
    let mut by_code: BTreeMap<u32, BTreeSet<Tid>> = BTreeMap::new();
    for t in reported {
        by_code.entry(code_of(*t)).or_default().insert(*t);
    }
    let lookup = |code: u32| -> BTreeSet<Tid> {
        let mut got = BTreeSet::new();
        for t in ix.scan(&engine, code) {
            let t = t.unwrap();
            assert_eq!(code_of(t), code, "lookup of {code:#x} returned {t:?}");
            assert!(got.insert(t), "lookup of {code:#x} returned {t:?} twice");
        }
        got
    };
    for (code, want) in &by_code {
        let got = lookup(*code);
        for t in want {
            assert!(got.contains(t), "committed entry {t:?} not found by a lookup after recovery ({r:?})");
        }
    }
    let finished = ix.finish_incomplete_splits(&engine).unwrap();
    assert_eq!(finished as u32, r.unfinished_splits);
    let mut after = Vec::new();
    let r2 = ix.check(&engine, Some(&mut after)).unwrap();
    assert_eq!(r2.unfinished_splits, 0, "{r2:?}");
    entries.sort();
    after.sort();
    assert!(entries == after, "finishing the splits changed the index's contents");
    for (code, want) in &by_code {
        let got = lookup(*code);
        assert!(want.is_subset(&got), "an entry of {code:#x} lost by finishing the splits");
    }
    engine.shutdown().unwrap();
    r.unfinished_splits as usize
}

#[test]
fn hash_crash_recovery() {
    let kills: u32 = std::env::var("FERROGRES_HASH_CRASH_KILLS").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(0x4A54);
    let mut reported = HashSet::new();
    let (mut unfinished, mut self_aborts) = (0, 0);
    for i in 0..kills {
        // Every third round the child dies right after a split's allocation,
        // every third (shifted) in the middle of copying entries.
        let fault = match i % 3 {
            1 => Fault::AfterAllocations(rng.gen_range(1..40)),
            2 => Fault::AfterSplitPages(rng.gen_range(1..40)),
            _ => Fault::Kill,
        };
        let run_for = Duration::from_millis(rng.gen_range(20..400));
        let aborted = run_child(dir.path(), i + 1, run_for, fault, &mut reported);
        self_aborts += aborted as u32;
        unfinished += verify(dir.path(), &reported, aborted);
    }
    eprintln!("{kills} crashes: {} entries reported committed, {self_aborts} aborts inside a split, {unfinished} unfinished splits finished", reported.len());
    assert!(reported.len() as u32 >= kills * 10, "too little work to test anything");
    assert!(self_aborts >= 2 && unfinished >= 2, "no crash hit a split");
}
