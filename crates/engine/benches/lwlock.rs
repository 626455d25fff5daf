//! LWLock and spinlock benchmarks (M6).
//!
//! Part 1 (criterion): acquire + release of an LWLock in shared and exclusive mode
//! with 1 and 2 threads on the same lock, std's RwLock as a baseline, and a
//! spinlock lock + unlock.
//!
//! Part 2 (own timing loop, printed as a table): the latency of an exclusive
//! request under a continuous stream of shared lockers, fair vs unfair, in one
//! run. Three reader threads loop on `shared()`; each holds the lock at least
//! `HOLD` and until another reader is inside (at most `MAX_HOLD`), so that the
//! shared holds overlap and the lock is never free while the stream runs. One
//! thread requests the lock exclusively `SAMPLES` times and measures how long each
//! request takes. An unfair lock can starve it forever, so each measurement is
//! capped: once a request has waited `CAP` the readers stop taking the lock until
//! it is granted, and the sample counts as "starved" (its latency shows as >= CAP).
//!
//! Run: `cargo bench -p ferrogres-engine --bench lwlock -- --warm-up-time 1
//! --measurement-time 2` (env `LWLOCK_LATENCY_SAMPLES` sets the sample count,
//! default 60; without `--bench`, e.g. under `cargo test --benches`, 5).

use criterion::{black_box, Criterion};
use ferrogres_engine::lmgr::lwlock::{Fairness, LwLock, Tranche};
use ferrogres_engine::lmgr::spin::SpinLock;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

fn on_threads(threads: usize, iters: u64, f: impl Fn() + Send + Sync + 'static) -> Duration {
    let f = Arc::new(f);
    let barrier = Arc::new(Barrier::new(threads + 1));
    let hs: Vec<_> = (0..threads)
        .map(|_| {
            let (f, barrier) = (f.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                for _ in 0..iters {
                    f();
                }
            })
        })
        .collect();
    barrier.wait();
    let t = Instant::now();
    for h in hs {
        h.join().unwrap();
    }
    t.elapsed()
}

fn bench_lwlock(c: &mut Criterion) {
    let mut g = c.benchmark_group("lwlock");
    for threads in [1usize, 2] {
        for (mode, excl) in [("shared", false), ("exclusive", true)] {
            g.bench_function(format!("{mode}_acquire_release/{threads}_threads"), |b| {
                b.iter_custom(|iters| {
                    let lock = Arc::new(LwLock::with_policy(Tranche::Test, Fairness::Fair));
                    on_threads(threads, iters, move || {
                        let guard = if excl { lock.exclusive() } else { lock.shared() };
                        black_box(&guard);
                    })
                })
            });
        }
        g.bench_function(format!("std_rwlock_read/{threads}_threads"), |b| {
            b.iter_custom(|iters| {
                let lock = Arc::new(std::sync::RwLock::new(()));
                on_threads(threads, iters, move || {
                    black_box(&*lock.read().unwrap());
                })
            })
        });
        g.bench_function(format!("std_rwlock_write/{threads}_threads"), |b| {
            b.iter_custom(|iters| {
                let lock = Arc::new(std::sync::RwLock::new(()));
                on_threads(threads, iters, move || {
                    black_box(&*lock.write().unwrap());
                })
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("spinlock");
    let spin = SpinLock::new();
    g.bench_function("lock_unlock/1_thread", |b| {
        b.iter(|| {
            let guard = spin.lock();
            black_box(&guard);
        })
    });
    g.bench_function("lock_unlock/2_threads", |b| {
        b.iter_custom(|iters| {
            let lock = Arc::new(SpinLock::new());
            on_threads(2, iters, move || {
                black_box(&lock.lock());
            })
        })
    });
    g.finish();
}

const READERS: usize = 3;
const HOLD: Duration = Duration::from_micros(2);
const MAX_HOLD: Duration = Duration::from_micros(100);
const CAP: Duration = Duration::from_millis(200);

struct LatencyResult {
    fairness: Fairness,
    samples: Vec<Duration>,
    starved: usize,
    shared_per_s: f64,
}

fn exclusive_latency(fairness: Fairness, samples: usize) -> LatencyResult {
    let lock = Arc::new(LwLock::with_policy(Tranche::Test, fairness));
    let stop = Arc::new(AtomicBool::new(false));
    let inside = Arc::new(AtomicUsize::new(0));
    let base = Instant::now();
    // Start of the pending exclusive request in ns since `base` (+1), 0 = none.
    let attempt = Arc::new(AtomicU64::new(0));
    let shared_count = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..READERS)
        .map(|_| {
            let (lock, stop, inside, attempt, shared_count) =
                (lock.clone(), stop.clone(), inside.clone(), attempt.clone(), shared_count.clone());
            std::thread::spawn(move || {
                while !stop.load(Relaxed) {
                    let a = attempt.load(Relaxed);
                    if a != 0 && base.elapsed() > Duration::from_nanos(a - 1) + CAP {
                        // The cap: stand aside until the starved request is granted.
                        std::thread::yield_now();
                        continue;
                    }
                    let g = lock.shared();
                    inside.fetch_add(1, SeqCst);
                    let t = Instant::now();
                    loop {
                        let e = t.elapsed();
                        if e >= MAX_HOLD || (e >= HOLD && inside.load(SeqCst) >= 2) {
                            break;
                        }
                        std::hint::spin_loop();
                    }
                    inside.fetch_sub(1, SeqCst);
                    drop(g);
                    shared_count.fetch_add(1, Relaxed);
                }
            })
        })
        .collect();
    // Let the stream start.
    std::thread::sleep(Duration::from_millis(20));
    let t0 = Instant::now();
    let c0 = shared_count.load(Relaxed);
    let mut lat = Vec::with_capacity(samples);
    for _ in 0..samples {
        std::thread::sleep(Duration::from_micros(500));
        let start = Instant::now();
        attempt.store((start - base).as_nanos() as u64 + 1, Relaxed);
        let g = lock.exclusive();
        let l = start.elapsed();
        attempt.store(0, Relaxed);
        drop(g);
        lat.push(l);
    }
    let shared_per_s = (shared_count.load(Relaxed) - c0) as f64 / t0.elapsed().as_secs_f64();
    stop.store(true, Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    let starved = lat.iter().filter(|l| **l >= CAP).count();
    lat.sort();
    LatencyResult { fairness, samples: lat, starved, shared_per_s }
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn fmt_d(d: Duration, cap: bool) -> String {
    let s = if d >= Duration::from_millis(1) {
        format!("{:.1} ms", d.as_secs_f64() * 1e3)
    } else {
        format!("{:.1} us", d.as_secs_f64() * 1e6)
    };
    if cap && d >= CAP {
        format!(">= {s}")
    } else {
        s
    }
}

fn latency_table(samples: usize) {
    println!();
    println!(
        "Exclusive-request latency under a stream of {READERS} shared lockers \
         (each holds >= {HOLD:?} and until another is inside, <= {MAX_HOLD:?}); \
         {samples} samples per policy, cap {CAP:?}"
    );
    println!(
        "{:<8} {:>12} {:>12} {:>14} {:>10} {:>16}",
        "policy", "p50", "p99", "max", "starved", "shared acq/s"
    );
    for f in [Fairness::Fair, Fairness::Unfair] {
        let r = exclusive_latency(f, samples);
        println!(
            "{:<8} {:>12} {:>12} {:>14} {:>10} {:>16.0}",
            format!("{:?}", r.fairness),
            fmt_d(pct(&r.samples, 0.50), true),
            fmt_d(pct(&r.samples, 0.99), true),
            fmt_d(*r.samples.last().unwrap(), true),
            format!("{}/{}", r.starved, r.samples.len()),
            r.shared_per_s
        );
    }
}

fn main() {
    let bench_mode = std::env::args().any(|a| a == "--bench");
    let mut c = Criterion::default().configure_from_args();
    bench_lwlock(&mut c);
    c.final_summary();
    let samples = std::env::var("LWLOCK_LATENCY_SAMPLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if bench_mode { 60 } else { 5 });
    latency_table(samples);
}
