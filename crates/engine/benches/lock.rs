//! Heavyweight lock throughput: the pgbench -S pattern of seed 001 (every query takes
//! AccessShareLock on a table and on its index, then releases both at commit), with
//! the fast path on and off, 1 and 2 threads on the same two relations.
//!
//! Throughput is queries per second over all threads (one element = one query).
//! Run: `cargo bench -p ferrogres-engine --bench lock`.

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use ferrogres_engine::config::Settings;
use ferrogres_engine::lmgr::lock::{LockManager, LockMode, LockOptions, LockTag};
use ferrogres_engine::pgstat::BackendId;

const TABLE: LockTag = LockTag::Relation { db: 5, rel: 16397 };
const INDEX: LockTag = LockTag::Relation { db: 5, rel: 16403 };

fn query(m: &LockManager, me: BackendId) {
    m.lock(me, TABLE, LockMode::AccessShare, LockOptions::default())
        .unwrap();
    m.lock(me, INDEX, LockMode::AccessShare, LockOptions::default())
        .unwrap();
    m.release_all(me, true).unwrap();
}

fn run(m: &Arc<LockManager>, threads: u32, iters: u64) -> Duration {
    if threads == 1 {
        let t0 = Instant::now();
        for _ in 0..iters {
            query(m, BackendId(0));
        }
        return t0.elapsed();
    }
    let bar = Arc::new(Barrier::new(threads as usize + 1));
    let hs: Vec<_> = (0..threads)
        .map(|t| {
            let (m, bar) = (m.clone(), bar.clone());
            thread::spawn(move || {
                bar.wait();
                for _ in 0..iters {
                    query(&m, BackendId(t));
                }
            })
        })
        .collect();
    bar.wait();
    let t0 = Instant::now();
    for h in hs {
        h.join().unwrap();
    }
    t0.elapsed()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("pgbench_s_locks");
    g.warm_up_time(Duration::from_millis(300));
    g.measurement_time(Duration::from_secs(1));
    g.sample_size(10);
    for fast_path in [true, false] {
        let m = Arc::new(LockManager::with_fast_path(
            &Settings::default(),
            4,
            fast_path,
        ));
        for b in 0..4 {
            m.register_backend(BackendId(b), 1 + b as i32).unwrap();
        }
        for threads in [1u32, 2] {
            g.throughput(Throughput::Elements(threads as u64));
            let name = if fast_path {
                "fast_path_on"
            } else {
                "fast_path_off"
            };
            g.bench_with_input(BenchmarkId::new(name, threads), &threads, |bch, &n| {
                bch.iter_custom(|iters| run(&m, n, iters))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
