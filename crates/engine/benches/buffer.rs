//! Buffer-manager microbenchmarks: pin/unpin of a cached page (1 and 2 threads),
//! the read_buffer hit path (mapping lookup + pin + unpin), and eviction-heavy
//! reads (every read misses: clock sweep, invalidation, pread).
//!
//! Run briefly: `cargo bench -p ferrogres-engine --bench buffer --
//! --warm-up-time 1 --measurement-time 2`.

use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use ferrogres_engine::buffer::BufferPool;
use ferrogres_engine::config::Settings;
use ferrogres_engine::storage::smgr::Smgr;
use ferrogres_engine::storage::{BufferTag, ForkNumber, NoWal, RelFileLocator};

const REL: RelFileLocator = RelFileLocator { spc_oid: 1663, db_oid: 1, rel_number: 16384 };

fn pool(dir: &std::path::Path, nbuffers: usize, nblocks: u32) -> Arc<BufferPool> {
    let s = Settings { shared_buffers: nbuffers, ..Settings::default() };
    let smgr = Arc::new(Smgr::new(dir, false).unwrap());
    let pool = BufferPool::new(&s, smgr, Arc::new(NoWal));
    pool.smgr().create(REL, ForkNumber::Main).unwrap();
    for _ in 0..nblocks {
        let mut b = pool.extend(REL, ForkNumber::Main, 1, None).unwrap();
        b[0][100] = 1;
        b[0].mark_dirty();
    }
    pool.flush_all_dirty().unwrap();
    pool
}

/// Runs `f(iters_per_thread)` on `threads` threads at once; returns wall time.
fn parallel(threads: usize, iters: u64, f: impl Fn(u64) + Sync) -> Duration {
    let barrier = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                barrier.wait();
                f(iters / threads as u64);
            });
        }
        barrier.wait();
        let start = Instant::now();
        // The scope joins the threads when it ends; time measured after that.
        start
    })
    .elapsed()
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let p = pool(dir.path(), 1024, 256);
    let tag = BufferTag::new(REL, ForkNumber::Main, 7);
    let pinned = p.read_buffer(tag, None).unwrap();

    for threads in [1usize, 2] {
        c.bench_function(&format!("pin_unpin_cached_page/{threads}thr"), |b| {
            b.iter_custom(|iters| {
                parallel(threads, iters * threads as u64, |n| {
                    for _ in 0..n {
                        drop(std::hint::black_box(pinned.clone()));
                    }
                })
            })
        });
    }
    for threads in [1usize, 2] {
        c.bench_function(&format!("read_buffer_hit/{threads}thr"), |b| {
            b.iter_custom(|iters| {
                parallel(threads, iters * threads as u64, |n| {
                    for i in 0..n {
                        let t = BufferTag::new(REL, ForkNumber::Main, (i % 256) as u32);
                        drop(std::hint::black_box(p.read_buffer(t, None).unwrap()));
                    }
                })
            })
        });
    }
    drop(pinned);

    // 64 buffers, 2048 blocks, strided reads: nearly every read evicts.
    let dir2 = tempfile::tempdir().unwrap();
    let small = pool(dir2.path(), 64, 2048);
    let mut next = 0u32;
    c.bench_function("read_buffer_evicting/1thr", |b| {
        b.iter(|| {
            next = (next + 97) % 2048;
            let t = BufferTag::new(REL, ForkNumber::Main, next);
            drop(std::hint::black_box(small.read_buffer(t, None).unwrap()));
        })
    });
    let s = small.stats();
    eprintln!("evicting bench: {s:?}");
}

criterion_group!(benches, bench);
criterion_main!(benches);
