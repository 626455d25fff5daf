//! Crash recovery of B-trees: a child process (this test binary re-executed)
//! inserts keys from 4 threads in transactions and reports each key after its
//! transaction committed; the parent kills it with SIGKILL at a random moment — or,
//! in some rounds, the child aborts itself right after a page split reached the WAL
//! but before the parent downlink did (a leaf or internal split; every 10th round
//! waits for the first split of an internal page). After each crash the parent recovers and
//! checks: the tree invariants hold, every reported key is found, incomplete splits
//! are there when the child died between split and downlink, and
//! `finish_incomplete_splits` completes them (invariants hold again, none left).
//!
//! Rounds: `FERROGRES_BTREE_CRASH_KILLS` (default 20).
#![cfg(not(loom))]

mod common;
use common::child::run_then_kill;
use ferrogres_engine::config::Settings;
use ferrogres_engine::engine::{Engine, DEFAULT_TABLESPACE_OID, POSTGRES_DATABASE_OID};
use ferrogres_engine::heap::tuple::{AttrDesc, Datum, Tid};
use ferrogres_engine::nbtree::{testing, BTree, BuiltinComparator, KeyKind, ScanBounds};
use ferrogres_engine::storage::{ForkNumber, RelFileLocator};
use ferrogres_engine::txn::IsolationLevel;
use rand::{Rng, SeedableRng};
use std::collections::HashSet;
use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

const CHILD_ENV: &str = "FERROGRES_BTREE_CRASH_CHILD_DIR";
const REL: RelFileLocator = RelFileLocator { spc_oid: DEFAULT_TABLESPACE_OID, db_oid: POSTGRES_DATABASE_OID, rel_number: 43000 };

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

fn tree() -> BTree {
    BTree::new(REL, vec![AttrDesc::fixed(8)], Arc::new(BuiltinComparator(vec![KeyKind::Int8])), false)
}

#[test]
#[ignore = "child process of btree_crash_recovery"]
fn btree_crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else { return };
    let base: u32 = std::env::var("FERROGRES_BTREE_CRASH_BASE").unwrap().parse().unwrap();
    if let Ok(n) = std::env::var("FERROGRES_BTREE_ABORT_AFTER_SPLITS") {
        testing::abort_after_splits(n.parse().unwrap());
    }
    if std::env::var("FERROGRES_BTREE_ABORT_AFTER_UPPER_SPLIT").is_ok() {
        testing::abort_after_upper_splits(1);
    }
    let (engine, _) = Engine::open(&dir, settings()).unwrap();
    if !engine.smgr.exists(REL, ForkNumber::Main) {
        tree().create(&engine).unwrap();
        engine.checkpoint().unwrap();
    }
    println!("READY");
    let handles: Vec<_> = (0..4u32)
        .map(|thread| {
            let engine = engine.clone();
            std::thread::spawn(move || {
                let t = tree();
                let mut rng = rand::rngs::SmallRng::seed_from_u64((base ^ thread) as u64);
                let mut b = engine.backend(1000 + thread as i32).unwrap();
                let mut n: u32 = 0;
                loop {
                    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
                    b.txn.assign_xid_if_needed().unwrap();
                    let mut keys = Vec::new();
                    for _ in 0..rng.gen_range(1..20) {
                        let k: i64 = if thread == 0 { (base as i64) * 100_000 + n as i64 } else { rng.gen_range(0..2_000_000) };
                        let tid = Tid::new(base * 10 + thread, (n % 60_000 + 1) as u16);
                        let tid = Tid::new(tid.block + (n / 60_000) * 1_000_000, tid.offset);
                        n += 1;
                        t.insert(&engine, &[Some(Datum::ByVal(k as u64))], tid, None).unwrap();
                        keys.push((k, tid));
                    }
                    b.txn.commit().unwrap();
                    let out = std::io::stdout();
                    let mut o = out.lock();
                    for (k, tid) in keys {
                        writeln!(o, "C {k} {} {}", tid.block, tid.offset).unwrap();
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
#[derive(Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// SIGKILL after the run time.
    Kill,
    /// Aborts itself after this many splits (or SIGKILL first).
    AfterSplits(u64),
    /// Aborts itself after its first split of an internal page (or SIGKILL first).
    AfterUpperSplit,
}

fn run_child(dir: &Path, base: u32, run_for: Duration, fault: Fault, reported: &mut HashSet<(i64, Tid)>) -> bool {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--ignored", "--exact", "btree_crash_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, dir)
        .env("FERROGRES_BTREE_CRASH_BASE", base.to_string());
    match fault {
        Fault::Kill => {}
        Fault::AfterSplits(n) => {
            cmd.env("FERROGRES_BTREE_ABORT_AFTER_SPLITS", n.to_string());
        }
        Fault::AfterUpperSplit => {
            cmd.env("FERROGRES_BTREE_ABORT_AFTER_UPPER_SPLIT", "1");
        }
    }
    let end = run_then_kill(cmd, Duration::from_secs(60), run_for);
    for line in &end.lines {
        let f: Vec<&str> = line.split(' ').collect();
        if let ["C", k, b, o] = f.as_slice() {
            reported.insert((k.parse().unwrap(), Tid::new(b.parse().unwrap(), o.parse().unwrap())));
        }
    }
    use std::os::unix::process::ExitStatusExt;
    let (sig, err) = (end.status.signal(), &end.stderr);
    assert!(
        sig == Some(libc::SIGKILL) || (fault != Fault::Kill && sig == Some(libc::SIGABRT) && err.contains("aborting after a split")),
        "child ended by itself: {}; stderr: {err}",
        end.status
    );
    sig == Some(libc::SIGABRT)
}

fn verify(dir: &Path, reported: &HashSet<(i64, Tid)>, aborted_after_split: bool) -> (usize, usize) {
    let (engine, report) = Engine::open(dir, settings()).unwrap();
    assert!(report.recovered);
    let t = tree();
    let r = t.check_invariants(&engine).unwrap();
    if aborted_after_split {
        assert!(r.incomplete_splits >= 1, "the child died between a split and its downlink: {r:?}");
    }
    let finished = t.finish_incomplete_splits(&engine).unwrap();
    assert_eq!(finished, r.incomplete_splits);
    let r2 = t.check_invariants(&engine).unwrap();
    assert_eq!(r2.incomplete_splits, 0);
    assert_eq!(r2.leaf_tuples, r.leaf_tuples);
    let mut found = HashSet::new();
    let mut scan = t.scan(&engine, ScanBounds::all());
    let mut last: Option<(i64, Tid)> = None;
    while let Some(e) = scan.next_entry().unwrap() {
        let Some(Datum::ByVal(k)) = e.values(&t.desc).unwrap()[0] else { panic!() };
        let x = (k as i64, e.tid);
        assert!(last.is_none_or(|l| l < x));
        last = Some(x);
        found.insert(x);
    }
    for x in reported {
        assert!(found.contains(x), "committed key {x:?} not found after recovery");
    }
    engine.shutdown().unwrap();
    (r.incomplete_splits, r.incomplete_upper_splits)
}

#[test]
fn btree_crash_recovery() {
    let kills: u32 = std::env::var("FERROGRES_BTREE_CRASH_KILLS").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(0xB7EE);
    let mut reported = HashSet::new();
    let (mut incomplete, mut incomplete_upper) = (0, 0);
    let mut self_aborts = 0;
    for i in 0..kills {
        // Every third round the child dies right after a split; the 10th (and
        // every 10th) right after its first split of an internal page.
        let (fault, run_for) = if i % 10 == 9 {
            (Fault::AfterUpperSplit, Duration::from_secs(4))
        } else if i % 3 == 1 {
            (Fault::AfterSplits(rng.gen_range(1..30)), Duration::from_millis(rng.gen_range(5..250)))
        } else {
            (Fault::Kill, Duration::from_millis(rng.gen_range(5..250)))
        };
        let aborted = run_child(dir.path(), i + 1, run_for, fault, &mut reported);
        self_aborts += aborted as u32;
        let (inc, upper) = verify(dir.path(), &reported, aborted);
        incomplete += inc;
        incomplete_upper += upper;
    }
    eprintln!(
        "{kills} crashes: {} keys reported committed, {self_aborts} aborts between split and downlink, \
         {incomplete} incomplete splits finished ({incomplete_upper} of internal pages)",
        reported.len()
    );
    assert!(reported.len() as u32 >= kills * 10, "too little work to test anything");
    assert!(self_aborts >= 1 && incomplete >= 1, "no crash hit the split/downlink window");
    if kills >= 10 {
        assert!(incomplete_upper >= 1, "no crash hit the window of an internal page split");
    }
}
