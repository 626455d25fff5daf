//! Transaction-layer microbenchmarks (custom main, prints tables):
//! 1. snapshot cost vs registered backends holding xids, with and without the
//!    snapshot cache (reuse while no transaction completed);
//! 2. commit throughput (assign xid + commit record + clog + ProcArray clear) with
//!    the group protocols on vs off, at 1, 2, 4, 8 threads.
//!
//! Run: `cargo bench -p ferrogres-engine --bench txn` (about 10 s).

use ferrogres_engine::pgstat::BackendId;
use ferrogres_engine::txn::xid::FullTransactionId;
use ferrogres_engine::txn::{IsolationLevel, MemWal, TransactionManager, TxnConfig, TxnShared};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn open(max_backends: usize, group: bool) -> (tempfile::TempDir, Arc<TxnShared>) {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = TxnConfig::new(dir.path().join("pg_xact"), max_backends);
    cfg.clog_group_update = group;
    cfg.procarray_group_clear = group;
    let sh = TxnShared::open(&cfg, FullTransactionId::FIRST_NORMAL, Arc::new(MemWal::new(false)), None).unwrap();
    (dir, sh)
}

fn snapshot_cost(nbackends: usize, cache: bool, dur: Duration) -> f64 {
    let (_d, sh) = open(nbackends + 2, true);
    sh.set_snapshot_cache(cache);
    let mut others: Vec<TransactionManager> = (0..nbackends)
        .map(|b| {
            let mut tm = sh.backend(BackendId(b as u32)).unwrap();
            tm.begin(IsolationLevel::ReadCommitted).unwrap();
            tm.assign_xid_if_needed().unwrap();
            tm
        })
        .collect();
    // One later transaction completes, so the running xids are all below xmax.
    let mut later = sh.backend(BackendId(nbackends as u32 + 1)).unwrap();
    later.begin(IsolationLevel::ReadCommitted).unwrap();
    later.assign_xid_if_needed().unwrap();
    later.commit().unwrap();
    let mut me = sh.backend(BackendId(nbackends as u32)).unwrap();
    me.begin(IsolationLevel::ReadCommitted).unwrap();
    let start = Instant::now();
    let mut n = 0u64;
    let mut xip = 0;
    while start.elapsed() < dur {
        for _ in 0..100 {
            let s = me.statement_snapshot().unwrap();
            xip = s.xip.len();
            n += 1;
        }
    }
    assert_eq!(xip, nbackends);
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    me.commit().unwrap();
    for o in others.iter_mut() {
        o.commit().unwrap();
    }
    ns
}

fn commit_tps(threads: usize, group: bool, dur: Duration) -> (f64, u64, u64) {
    let (_d, sh) = open(threads, group);
    let stop = Arc::new(AtomicBool::new(false));
    let total = Arc::new(AtomicU64::new(0));
    let hs: Vec<_> = (0..threads)
        .map(|b| {
            let (sh, stop, total) = (sh.clone(), stop.clone(), total.clone());
            std::thread::spawn(move || {
                let mut tm = sh.backend(BackendId(b as u32)).unwrap();
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    tm.begin(IsolationLevel::ReadCommitted).unwrap();
                    tm.assign_xid_if_needed().unwrap();
                    tm.commit().unwrap();
                    n += 1;
                }
                total.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    let start = Instant::now();
    std::thread::sleep(dur);
    stop.store(true, Ordering::Relaxed);
    for h in hs {
        h.join().unwrap();
    }
    let tps = total.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64();
    (tps, sh.procarray.group_stats().1, sh.clog.group_stats().1)
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --benches` runs us briefly.
    let quick = !std::env::args().any(|a| a == "--bench");
    let snap_dur = Duration::from_millis(if quick { 20 } else { 250 });
    let commit_dur = Duration::from_millis(if quick { 20 } else { 400 });

    println!("snapshot cost (ns per statement snapshot; backends hold xids, none commits)");
    println!("{:>9} | {:>12} | {:>12} | {:>7}", "backends", "no cache", "cache", "speedup");
    for n in [10, 100, 1000] {
        let off = snapshot_cost(n, false, snap_dur);
        let on = snapshot_cost(n, true, snap_dur);
        println!("{n:>9} | {off:>12.0} | {on:>12.0} | {:>6.1}x", off / on);
    }
    println!();
    println!("commit throughput (transactions/s: assign xid + commit record + clog + ProcArray clear)");
    println!(
        "{:>7} | {:>11} | {:>11} | {:>21} | {:>17}",
        "threads", "group off", "group on", "procarray followers", "clog followers"
    );
    for t in [1, 2, 4, 8] {
        let (off, _, _) = commit_tps(t, false, commit_dur);
        let (on, pf, cf) = commit_tps(t, true, commit_dur);
        println!("{t:>7} | {off:>11.0} | {on:>11.0} | {pf:>21} | {cf:>17}");
    }
}
