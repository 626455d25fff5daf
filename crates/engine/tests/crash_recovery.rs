//! Crash recovery under load: a child process runs concurrent transactions against
//! the engine and reports each commit only after `commit()` returned; the parent kills
//! it with SIGKILL at a random moment, sometimes tears a data page written since the
//! last checkpoint (as a power loss might), then recovers the data directory and
//! checks, from the data itself:
//! - every transaction reported committed is there, all of its rows, intact;
//! - no transaction is partly there (atomicity), and none reported aborted is there;
//! - every page reads back with a valid checksum (no torn page survives redo).
//!
//! The kill count is `FERROGRES_CRASH_KILLS` (default 100, the bar). All kills
//! go to the same data directory, so recovery also runs over earlier recoveries.

#![cfg(not(loom))]

mod common;
use common::child::run_then_kill;
use ferrogres_engine::config::Settings;
use ferrogres_engine::engine::{Engine, DEFAULT_TABLESPACE_OID, POSTGRES_DATABASE_OID};
use ferrogres_engine::heap::heapam;
use ferrogres_engine::heap::tuple::{deform_tuple, form_tuple, AttrDesc, Datum};
use ferrogres_engine::storage::page::{page_lsn, page_verify};
use ferrogres_engine::storage::RelFileLocator;
use ferrogres_engine::txn::IsolationLevel;
use rand::{Rng, SeedableRng};
use std::collections::{HashMap, HashSet};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const CHILD_ENV: &str = "FERROGRES_CRASH_CHILD_DIR";
const THREADS: u32 = 4;
const REL: RelFileLocator =
    RelFileLocator { spc_oid: DEFAULT_TABLESPACE_OID, db_oid: POSTGRES_DATABASE_OID, rel_number: 20000 };

fn desc() -> Vec<AttrDesc> {
    // (thread int4, txn int8, row int4, rows_in_txn int4, payload text)
    vec![AttrDesc::fixed(4), AttrDesc::fixed(8), AttrDesc::fixed(4), AttrDesc::fixed(4), AttrDesc::varlena()]
}

fn settings() -> Settings {
    let mut s = Settings::default();
    // A pool far smaller than the data: evictions write pages all the time.
    s.set("shared_buffers", "48").unwrap();
    s.set("buffer_mapping_partitions", "16").unwrap();
    // Below PostgreSQL's 30 s minimum, which only the configuration path checks.
    s.checkpoint_timeout_s = 1;
    s.set("bgwriter_delay", "10ms").unwrap();
    s.set("max_connections", "10").unwrap();
    s
}

/// Deterministic payload of a row: its length and bytes follow from its key.
fn payload(thread: u32, txn: u64, row: u32) -> Vec<u8> {
    let mut x = (thread as u64) << 48 ^ txn << 8 ^ row as u64;
    x = x.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let len = match x % 10 {
        0 => 1500 + (x >> 8) % 1500, // a few big rows fill pages fast
        _ => (x >> 8) % 120,
    } as usize;
    (0..len).map(|i| b'a' + ((x as usize + i * 7) % 26) as u8).collect()
}

fn row_tuple(thread: u32, txn: u64, row: u32, rows: u32) -> Vec<u8> {
    let p = payload(thread, txn, row);
    form_tuple(
        &desc(),
        &[
            Some(Datum::ByVal(thread as u64)),
            Some(Datum::ByVal(txn)),
            Some(Datum::ByVal(row as u64)),
            Some(Datum::ByVal(rows as u64)),
            Some(Datum::Varlena(&p)),
        ],
    )
    .unwrap()
}

/// The child: runs until killed. Prints `C thread txn rows` after each commit
/// returned, `A thread txn` after each abort.
#[test]
#[ignore = "child process of crash_recovery_survives_random_kills"]
fn crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else { return };
    let base: u64 = std::env::var("FERROGRES_CRASH_TXN_BASE").unwrap().parse().unwrap();
    let (engine, _) = Engine::open(&dir, settings()).unwrap();
    if !engine.smgr.exists(REL, ferrogres_engine::storage::ForkNumber::Main) {
        engine.create_relation(REL).unwrap();
    }
    println!("READY");
    let handles: Vec<_> = (0..THREADS)
        .map(|thread| {
            let engine = engine.clone();
            std::thread::spawn(move || {
                let mut rng = rand::rngs::SmallRng::seed_from_u64(base ^ thread as u64);
                let mut backend = engine.backend(1000 + thread as i32).unwrap();
                for txn in base.. {
                    let rows = rng.gen_range(1..12);
                    backend.txn.begin(IsolationLevel::ReadCommitted).unwrap();
                    for row in 0..rows {
                        heapam::heap_insert(&mut backend, REL, &row_tuple(thread, txn, row, rows)).unwrap();
                    }
                    let out = std::io::stdout();
                    if rng.gen_ratio(1, 8) {
                        backend.txn.abort().unwrap();
                        writeln!(out.lock(), "A {thread} {txn}").unwrap();
                    } else {
                        backend.txn.commit().unwrap();
                        writeln!(out.lock(), "C {thread} {txn} {rows}").unwrap();
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

#[derive(Default)]
struct Reported {
    committed: HashMap<(u32, u64), u32>,
    aborted: HashSet<(u32, u64)>,
}

fn run_child(dir: &Path, base: u64, run_for: Duration, reported: &mut Reported) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--ignored", "--exact", "crash_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, dir)
        .env("FERROGRES_CRASH_TXN_BASE", base.to_string());
    // READY comes after startup, which includes recovery.
    let end = run_then_kill(cmd, Duration::from_secs(60), run_for);
    for line in &end.lines {
        let f: Vec<&str> = line.split(' ').collect();
        match f.as_slice() {
            ["C", t, x, n] => {
                reported.committed.insert((t.parse().unwrap(), x.parse().unwrap()), n.parse().unwrap());
            }
            ["A", t, x] => {
                reported.aborted.insert((t.parse().unwrap(), x.parse().unwrap()));
            }
            _ => {}
        }
    }
    // A child that died on its own (a panic) is a failure, not a crash we caused.
    assert!(end.status.signal_is_kill(), "child ended by itself: {}; stderr: {}", end.status, end.stderr);
}

trait KillStatus {
    fn signal_is_kill(&self) -> bool;
}

impl KillStatus for std::process::ExitStatus {
    fn signal_is_kill(&self) -> bool {
        use std::os::unix::process::ExitStatusExt;
        self.signal() == Some(libc::SIGKILL)
    }
}

/// Tears one page written since the last checkpoint's redo pointer: its second half
/// is zeroed, as if only the first sectors of the write reached the disk. Redo must
/// restore it from the full-page image logged at its first change after the
/// checkpoint. Returns whether a page was torn.
fn tear_a_page(dir: &Path, rng: &mut impl Rng) -> bool {
    let redo = ferrogres_engine::wal::ControlFile::read(dir).unwrap().redo;
    let path = dir.join(format!("base/{}/{}", REL.db_oid, REL.rel_number));
    let Ok(mut f) = std::fs::OpenOptions::new().read(true).write(true).open(&path) else { return false };
    let nblocks = f.metadata().unwrap().len() / 8192;
    let mut candidates = Vec::new();
    let mut page = vec![0u8; 8192];
    for b in 0..nblocks {
        f.seek(SeekFrom::Start(b * 8192)).unwrap();
        f.read_exact(&mut page).unwrap();
        if page_lsn(&page) > redo {
            candidates.push(b);
        }
    }
    if candidates.is_empty() {
        return false;
    }
    let b = candidates[rng.gen_range(0..candidates.len())];
    f.seek(SeekFrom::Start(b * 8192 + 4096)).unwrap();
    f.write_all(&[0u8; 4096]).unwrap();
    true
}

/// Recovers `dir` and checks it against what the child reported.
fn verify(dir: &Path, reported: &Reported, clean_shutdown: bool) {
    let (engine, report) = Engine::open(dir, settings()).unwrap();
    assert!(report.recovered, "an engine killed with SIGKILL must need recovery");
    let mut backend = engine.backend(1).unwrap();
    backend.txn.begin(IsolationLevel::RepeatableRead).unwrap();
    let snap = backend.txn.statement_snapshot().unwrap();
    let mut found: HashMap<(u32, u64), (u32, HashSet<u32>)> = HashMap::new();
    heapam::heap_scan(&backend, REL, &snap, &mut |tid, t| {
        let v = deform_tuple(&desc(), t)?;
        let int = |i: usize| match &v[i] {
            Some(Datum::ByVal(x)) => *x,
            other => panic!("bad integer column {i} at {tid:?}: {other:?}"),
        };
        let (thread, txn, row, rows) = (int(0) as u32, int(1), int(2) as u32, int(3) as u32);
        let Some(Datum::Varlena(p)) = &v[4] else { panic!("bad payload at {tid:?}") };
        assert_eq!(*p, &payload(thread, txn, row)[..], "payload of ({thread},{txn},{row}) at {tid:?} damaged");
        let e = found.entry((thread, txn)).or_insert((rows, HashSet::new()));
        assert_eq!(e.0, rows);
        assert!(e.1.insert(row), "row ({thread},{txn},{row}) present twice");
        Ok(())
    })
    .unwrap();
    for (key, rows) in &reported.committed {
        let got = found.get(key).map_or(0, |e| e.1.len() as u32);
        assert_eq!(got, *rows, "committed transaction {key:?} reported with {rows} rows; found {got}");
    }
    for (key, (rows, present)) in &found {
        assert_eq!(present.len() as u32, *rows, "transaction {key:?} is partly present: {} of {rows} rows", present.len());
        assert!(!reported.aborted.contains(key), "aborted transaction {key:?} is visible");
    }
    // Every page is readable with a valid checksum after redo and a checkpoint.
    let path = dir.join(format!("base/{}/{}", REL.db_oid, REL.rel_number));
    let bytes = std::fs::read(&path).unwrap();
    for (b, page) in bytes.chunks(8192).enumerate() {
        assert!(page_verify(page, b as u32), "block {b} has a bad checksum after recovery");
    }
    backend.txn.commit().unwrap();
    drop(backend);
    if clean_shutdown {
        engine.shutdown().unwrap();
    }
}

#[test]
fn crash_recovery_survives_random_kills() {
    let kills: u64 = std::env::var("FERROGRES_CRASH_KILLS").ok().and_then(|v| v.parse().ok()).unwrap_or(100);
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand::rngs::SmallRng::seed_from_u64(
        std::env::var("FERROGRES_CRASH_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x5EED),
    );
    let mut reported = Reported::default();
    let mut torn = 0;
    for i in 0..kills {
        let run_for = Duration::from_millis(rng.gen_range(5..250));
        run_child(dir.path(), (i + 1) * 1_000_000, run_for, &mut reported);
        if rng.gen_bool(0.5) && tear_a_page(dir.path(), &mut rng) {
            torn += 1;
        }
        verify(dir.path(), &reported, rng.gen_bool(0.5));
    }
    eprintln!(
        "{kills} kills survived: {} transactions reported committed, {} aborted, {torn} torn pages repaired",
        reported.committed.len(),
        reported.aborted.len()
    );
    assert!(reported.committed.len() as u64 >= kills, "too little work was done to test anything");
}
