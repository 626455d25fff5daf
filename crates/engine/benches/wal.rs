//! WAL benchmarks (custom main, prints a table):
//! 1. insert throughput (records/s) with 1 and 2 inserting threads, no flush;
//! 2. insert + group flush (commit path, fsync on, a tempdir on the real disk) with
//!    1..32 committing threads: commits/s, fsyncs/s, commits covered per fsync.
//!
//! `WAL_BENCH_SECS` (default 2) sets the duration of each case.
//! Run: cargo bench -p ferrogres-engine --bench wal

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrogres_engine::wal::*;

fn dir() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn open(o: &WalOptions) -> (tempfile::TempDir, Arc<Wal>) {
    let d = dir();
    Wal::init(d.path(), o, CheckpointInfo::default()).unwrap();
    let (w, _) = Wal::open_with(d.path(), o.clone()).unwrap();
    (d, Arc::new(w))
}

/// Runs `threads` threads doing `op` until `secs` pass; returns operations done.
fn run(threads: usize, secs: f64, wal: &Arc<Wal>, flush: bool, size: usize) -> (u64, f64) {
    let stop = Arc::new(AtomicBool::new(false));
    let count = Arc::new(AtomicU64::new(0));
    let hs: Vec<_> = (0..threads)
        .map(|t| {
            let (wal, stop, count) = (wal.clone(), stop.clone(), count.clone());
            std::thread::spawn(move || {
                let body = vec![t as u8; size];
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    let mut rb = RecordBuilder::new(RmgrId::Xact, 0);
                    rb.set_xid(n as u32).append_main_data(&body);
                    let end = wal.insert(&rb).unwrap();
                    if flush {
                        wal.flush(end).unwrap();
                    }
                    n += 1;
                }
                count.fetch_add(n, Ordering::Relaxed);
            })
        })
        .collect();
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
    for h in hs {
        h.join().unwrap();
    }
    (count.load(Ordering::Relaxed), t0.elapsed().as_secs_f64())
}

fn main() {
    let secs: f64 = std::env::var("WAL_BENCH_SECS").ok().and_then(|v| v.parse().ok()).unwrap_or(2.0);
    println!("WAL insert throughput (100-byte records, no flush, wal_buffers 16MB, fsync on)");
    println!("{:>8} {:>14} {:>12}", "threads", "records/s", "MB/s");
    for threads in [1, 2] {
        let (_d, wal) = open(&WalOptions::default());
        let (n, el) = run(threads, secs, &wal, false, 100);
        let st = wal.stats();
        println!("{:>8} {:>14.0} {:>12.1}", threads, n as f64 / el, st.bytes as f64 / el / 1e6);
    }
    println!();
    println!("Commit path: insert a 100-byte commit record + flush (fsync on, group flush)");
    println!(
        "{:>8} {:>12} {:>12} {:>10} {:>14} {:>10}",
        "threads", "commits/s", "fsyncs/s", "commits/fsync", "group joins/s", "avg us"
    );
    let cases: Vec<(usize, u64)> =
        [1, 2, 4, 8, 16, 32].iter().map(|&t| (t, 0)).chain([(16, 1000), (32, 1000)]).collect();
    for (threads, delay) in cases {
        let o = WalOptions { commit_delay_us: delay, commit_siblings: 5, ..WalOptions::default() };
        let (_d, wal) = open(&o);
        let (n, el) = run(threads, secs, &wal, true, 100);
        let st = wal.stats();
        let label = if delay > 0 { format!("{threads}*") } else { threads.to_string() };
        println!(
            "{:>8} {:>12.0} {:>12.0} {:>10.2} {:>14.0} {:>10.0}",
            label,
            n as f64 / el,
            st.fsyncs as f64 / el,
            n as f64 / st.fsyncs.max(1) as f64,
            st.group_joins as f64 / el,
            el * 1e6 * threads as f64 / n.max(1) as f64,
        );
    }
    println!("(* = commit_delay 1000us, commit_siblings 5)");
}
