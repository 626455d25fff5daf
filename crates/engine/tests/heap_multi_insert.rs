//! `heapam::heap_multi_insert` (COPY's and INSERT ... SELECT's batches): batches of
//! many sizes and tuple lengths read back intact and in order; TOASTed values in a
//! batch; the `HeapOp::MultiInsert` record replayed onto a relation whose file was
//! lost; frozen inserts visible to snapshots that predate them; and SIGKILLs in the
//! middle of batches: committed batches present, uncommitted ones absent, every
//! page with a valid checksum.

#![cfg(not(loom))]

mod common;
use common::child::run_then_kill;
use ferrogres_engine::config::Settings;
use ferrogres_engine::engine::{Engine, DEFAULT_TABLESPACE_OID, POSTGRES_DATABASE_OID};
use ferrogres_engine::heap::heapam::{self, heap_detoast, heap_multi_insert, heap_toast_form_tuple};
use ferrogres_engine::heap::tuple::{deform_tuple, form_tuple, AttrDesc, Datum, Tid, TupleHeader};
use ferrogres_engine::storage::page::page_verify;
use ferrogres_engine::storage::RelFileLocator;
use ferrogres_engine::txn::IsolationLevel;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

fn rel(n: u32) -> RelFileLocator {
    RelFileLocator { spc_oid: DEFAULT_TABLESPACE_OID, db_oid: POSTGRES_DATABASE_OID, rel_number: n }
}

fn small_pool() -> Settings {
    let mut s = Settings::default();
    s.set("shared_buffers", "48").unwrap();
    s.set("buffer_mapping_partitions", "8").unwrap();
    s
}

fn desc() -> Vec<AttrDesc> {
    vec![AttrDesc::fixed(8), AttrDesc::varlena()]
}

/// Deterministic payload of key `k`: 0 to ~1,900 bytes.
fn payload(k: u64) -> Vec<u8> {
    let x = k.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let len = match x % 16 {
        0 => 1000 + (x >> 8) % 900,
        1 => 0,
        _ => (x >> 8) % 200,
    } as usize;
    (0..len).map(|i| b'a' + ((x as usize + i * 7) % 26) as u8).collect()
}

fn tuple(k: u64) -> Vec<u8> {
    let p = payload(k);
    form_tuple(&desc(), &[Some(Datum::ByVal(k)), Some(Datum::Varlena(&p))]).unwrap()
}

/// (tid, key) of every visible row, in physical order; checks each payload.
fn scan(engine: &Arc<Engine>, r: RelFileLocator) -> Vec<(Tid, u64)> {
    let mut b = engine.backend(99).unwrap();
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let snap = b.txn.statement_snapshot().unwrap();
    let mut out = Vec::new();
    heapam::heap_scan(&b, r, &snap, &mut |tid, t| {
        let v = deform_tuple(&desc(), t)?;
        let (Some(Datum::ByVal(k)), Some(Datum::Varlena(p))) = (&v[0], &v[1]) else { panic!("bad row at {tid:?}") };
        assert_eq!(*p, &payload(*k)[..], "payload of {k} at {tid:?}");
        out.push((tid, *k));
        Ok(())
    })
    .unwrap();
    b.txn.commit().unwrap();
    out
}

#[test]
fn batches_of_many_sizes_read_back_intact() {
    let dir = tempfile::tempdir().unwrap();
    let r = rel(31000);
    let (engine, _) = Engine::open(dir.path(), small_pool()).unwrap();
    engine.create_relation(r).unwrap();
    let mut b = engine.backend(1).unwrap();
    let mut next = 0u64;
    let mut expect = Vec::new();
    // 1 tuple, less than a page, about a page, several pages, more than the pool.
    for n in [1usize, 2, 7, 60, 291, 292, 1000, 5000] {
        b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        let keys: Vec<u64> = (next..next + n as u64).collect();
        next += n as u64;
        let tuples: Vec<Vec<u8>> = keys.iter().map(|&k| tuple(k)).collect();
        let tids = heap_multi_insert(&mut b, r, &tuples, false).unwrap();
        assert_eq!(tids.len(), n);
        b.txn.commit().unwrap();
        expect.extend(keys.iter().copied().zip(tids));
    }
    let got = scan(&engine, r);
    assert_eq!(got.len(), expect.len());
    let by_tid: HashMap<Tid, u64> = got.iter().copied().collect();
    assert_eq!(by_tid.len(), got.len(), "two rows at one TID");
    for (k, tid) in &expect {
        assert_eq!(by_tid.get(tid), Some(k), "row {k} is not at the TID heap_multi_insert returned");
    }
    // Within a batch, a page's tuples are in input order: offsets increase
    // wherever consecutive rows share a page (a fresh relation: no free line
    // pointers to reuse).
    for w in expect.windows(2) {
        if w[0].1.block == w[1].1.block {
            assert!(w[0].1.offset < w[1].1.offset, "offsets out of order on one page: {w:?}");
        }
    }
    // Pages are full: the relation holds about as many pages as the data needs.
    let bytes: usize = (0..next).map(|k| tuple(k).len().next_multiple_of(8) + 4).sum();
    let nblocks = heapam::heap_nblocks(&b, r).unwrap() as usize;
    // (At most a tuple's worth of waste per page, and the pages of the last
    // multi-page extension that no batch needed.)
    assert!(nblocks * 8168 <= bytes * 115 / 100 + 8 * 8192, "{nblocks} pages for {bytes} bytes of tuples");
    drop(b);
    engine.shutdown().unwrap();
}

#[test]
fn toasted_values_in_a_batch_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let (main, toast) = (rel(31010), rel(31011));
    let (engine, _) = Engine::open(dir.path(), small_pool()).unwrap();
    engine.create_relation(main).unwrap();
    engine.create_relation(toast).unwrap();
    let mut b = engine.backend(1).unwrap();
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    // Values that do not compress (out of line), that compress, and small ones.
    let value = |k: u64| -> Vec<u8> {
        match k % 3 {
            0 => (0..20_000u64).map(|i| b'a' + ((i * 2654435761 + k) >> 7) as u8 % 26).collect(),
            1 => vec![b'0' + (k % 10) as u8; 50_000],
            _ => format!("small {k}").into_bytes(),
        }
    };
    let tuples: Vec<Vec<u8>> = (0..90u64)
        .map(|k| {
            let v = value(k);
            heap_toast_form_tuple(&mut b, Some(toast), &desc(), &[Some(Datum::ByVal(k)), Some(Datum::Varlena(&v))]).unwrap()
        })
        .collect();
    assert!(tuples.iter().all(|t| t.len() < 2100), "every tuple was toasted to fit");
    heap_multi_insert(&mut b, main, &tuples, false).unwrap();
    b.txn.commit().unwrap();
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let snap = b.txn.statement_snapshot().unwrap();
    let mut rows = Vec::new();
    heapam::heap_scan(&b, main, &snap, &mut |_, t| {
        rows.push(t.to_vec());
        Ok(())
    })
    .unwrap();
    assert_eq!(rows.len(), 90);
    for t in &rows {
        let v = deform_tuple(&desc(), t).unwrap();
        let Some(Datum::ByVal(k)) = v[0] else { panic!() };
        let d = v[1].unwrap();
        assert_eq!(&heap_detoast(&b, main, &d, &snap).unwrap()[..], &value(k)[..], "value of row {k}");
    }
    b.txn.commit().unwrap();
}

/// Redo of `HeapOp::MultiInsert`: the relation's file is lost after a crash (its
/// growth never fsynced), so every page must be rebuilt from the records.
#[test]
fn multi_insert_records_replay_onto_a_lost_file() {
    let dir = tempfile::tempdir().unwrap();
    let r = rel(31020);
    let n = 3000u64;
    {
        let (engine, _) = Engine::open(dir.path(), small_pool()).unwrap();
        engine.create_relation(r).unwrap();
        engine.checkpoint().unwrap();
        let mut b = engine.backend(1).unwrap();
        for chunk in (0..n).collect::<Vec<_>>().chunks(700) {
            b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
            let tuples: Vec<Vec<u8>> = chunk.iter().map(|&k| tuple(k)).collect();
            heap_multi_insert(&mut b, r, &tuples, false).unwrap();
            b.txn.commit().unwrap();
        }
        // An uncommitted batch whose records reach the WAL (the next commit
        // flushes them): redo replays it, visibility must hide it.
        let mut b2 = engine.backend(2).unwrap();
        b2.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        let tuples: Vec<Vec<u8>> = (n..n + 500).map(tuple).collect();
        heap_multi_insert(&mut b2, r, &tuples, false).unwrap();
        b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        heap_multi_insert(&mut b, r, &[tuple(n + 1000)], false).unwrap();
        b.txn.commit().unwrap();
        drop(b2);
        drop(b);
        // A crash: no shutdown checkpoint.
    }
    let path = dir.path().join(format!("base/{}/{}", r.db_oid, r.rel_number));
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(0).unwrap();
    let (engine, report) = Engine::open(dir.path(), small_pool()).unwrap();
    assert!(report.recovered);
    let mut keys: Vec<u64> = scan(&engine, r).into_iter().map(|(_, k)| k).collect();
    keys.sort_unstable();
    let mut want: Vec<u64> = (0..n).collect();
    want.push(n + 1000);
    assert_eq!(keys, want, "redo of multi-insert records");
    engine.checkpoint().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    for (blk, page) in bytes.chunks(8192).enumerate() {
        assert!(page_verify(page, blk as u32), "block {blk} has a bad checksum after redo");
    }
}

/// COPY FREEZE's engine half: frozen tuples carry HEAP_XMIN_FROZEN (and keep
/// their xmin), so a snapshot taken before the inserting transaction committed
/// sees them once it has; unfrozen ones it does not see.
#[test]
fn frozen_tuples_are_visible_to_older_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, frozen) = (rel(31030), rel(31031));
    let (engine, _) = Engine::open(dir.path(), small_pool()).unwrap();
    engine.create_relation(plain).unwrap();
    engine.create_relation(frozen).unwrap();
    let mut reader = engine.backend(2).unwrap();
    reader.txn.begin(IsolationLevel::RepeatableRead).unwrap();
    let old_snap = reader.txn.statement_snapshot().unwrap();
    let mut b = engine.backend(1).unwrap();
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let tuples: Vec<Vec<u8>> = (0..400).map(tuple).collect();
    heap_multi_insert(&mut b, plain, &tuples, false).unwrap();
    heap_multi_insert(&mut b, frozen, &tuples, true).unwrap();
    let xid = b.txn.current_xid();
    b.txn.commit().unwrap();
    let count = |r: RelFileLocator| {
        let mut n = 0;
        heapam::heap_scan(&reader, r, &old_snap, &mut |_, t| {
            let h = TupleHeader::read(t)?;
            assert_eq!(h.xmin, xid, "a frozen insert keeps its xmin");
            n += 1;
            Ok(())
        })
        .unwrap();
        n
    };
    assert_eq!(count(plain), 0, "an older snapshot does not see plain inserts");
    assert_eq!(count(frozen), 400, "an older snapshot sees frozen inserts");
    reader.txn.commit().unwrap();
}

// ---- SIGKILL in the middle of batches -------------------------------------------

const CHILD_ENV: &str = "FERROGRES_MULTI_INSERT_CHILD_DIR";
const CRASH_REL: u32 = 31040;

/// The child: batches of 1..3000 rows, one transaction each, until killed. Prints
/// `C first count` after each commit returned and `A first count` after an abort.
#[test]
#[ignore = "child process of sigkill_between_batches_keeps_committed_batches_only"]
fn multi_insert_crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else { return };
    let base: u64 = std::env::var("FERROGRES_MULTI_INSERT_BASE").unwrap().parse().unwrap();
    let (engine, _) = Engine::open(&dir, small_pool()).unwrap();
    let r = rel(CRASH_REL);
    if !engine.smgr.exists(r, ferrogres_engine::storage::ForkNumber::Main) {
        engine.create_relation(r).unwrap();
    }
    println!("READY");
    let mut b = engine.backend(1).unwrap();
    let mut first = base;
    for i in 0u64.. {
        let count = 1 + (i.wrapping_mul(2654435761) % 3000);
        b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        // In batches of at most 1000, as COPY does, several per transaction.
        let keys: Vec<u64> = (first..first + count).collect();
        for chunk in keys.chunks(1000) {
            let tuples: Vec<Vec<u8>> = chunk.iter().map(|&k| tuple(k)).collect();
            heap_multi_insert(&mut b, r, &tuples, false).unwrap();
        }
        if i % 5 == 4 {
            b.txn.abort().unwrap();
            println!("A {first} {count}");
        } else {
            b.txn.commit().unwrap();
            println!("C {first} {count}");
        }
        first += count;
    }
}

fn run_child(dir: &Path, base: u64, run_for: Duration, committed: &mut Vec<(u64, u64)>, aborted: &mut Vec<(u64, u64)>) {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--ignored", "--exact", "multi_insert_crash_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, dir)
        .env("FERROGRES_MULTI_INSERT_BASE", base.to_string());
    let end = run_then_kill(cmd, Duration::from_secs(120), run_for);
    for line in &end.lines {
        let f: Vec<&str> = line.split(' ').collect();
        match f.as_slice() {
            ["C", a, n] => committed.push((a.parse().unwrap(), n.parse().unwrap())),
            ["A", a, n] => aborted.push((a.parse().unwrap(), n.parse().unwrap())),
            _ => {}
        }
    }
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(end.status.signal(), Some(libc::SIGKILL), "child ended by itself: {}; stderr: {}", end.status, end.stderr);
}

#[test]
fn sigkill_between_batches_keeps_committed_batches_only() {
    let dir = tempfile::tempdir().unwrap();
    let r = rel(CRASH_REL);
    let (mut committed, mut aborted) = (Vec::new(), Vec::new());
    for (i, ms) in [300u64, 700, 150, 1000, 450].into_iter().enumerate() {
        let base = (i as u64 + 1) * 100_000_000;
        let before = committed.len();
        run_child(dir.path(), base, Duration::from_millis(ms), &mut committed, &mut aborted);
        let (engine, report) = Engine::open(dir.path(), small_pool()).unwrap();
        assert!(report.recovered, "a killed engine needs recovery");
        let found: HashSet<u64> = scan(&engine, r).into_iter().map(|(_, k)| k).collect();
        let mut reported = HashSet::new();
        for &(first, n) in &committed {
            for k in first..first + n {
                assert!(found.contains(&k), "row {k} of a committed batch is missing after kill {i}");
                reported.insert(k);
            }
        }
        for &(first, n) in &aborted {
            assert!((first..first + n).all(|k| !found.contains(&k)), "rows of an aborted transaction are visible");
        }
        // Rows no reported commit inserted: only the transaction whose commit
        // returned just before the kill (before it could print), whole: keys
        // right after the last reported ones of this run.
        let end = committed[before..].iter().chain(aborted.iter().filter(|a| a.0 >= base)).map(|&(f, n)| f + n).max().unwrap_or(base);
        let mut extra: Vec<u64> = found.iter().copied().filter(|k| !reported.contains(k)).collect();
        extra.sort_unstable();
        if let (Some(&lo), Some(&hi)) = (extra.first(), extra.last()) {
            assert_eq!(lo, end, "unreported rows after kill {i} do not start where the last reported transaction ended");
            assert_eq!(hi - lo + 1, extra.len() as u64, "unreported rows after kill {i} are not one whole transaction");
            assert!(extra.len() <= 3000);
            committed.push((lo, extra.len() as u64));
        }
        engine.checkpoint().unwrap();
        drop(engine);
    }
    assert!(committed.len() >= 5, "too little work was done to test anything: {committed:?}");
    let path = dir.path().join(format!("base/{}/{}", r.db_oid, r.rel_number));
    let bytes = std::fs::read(&path).unwrap();
    for (blk, page) in bytes.chunks(8192).enumerate() {
        assert!(page_verify(page, blk as u32), "block {blk} has a bad checksum");
    }
}
