//! The background writer (PostgreSQL's bgwriter.c): a thread that, every
//! `bgwriter_delay`, writes dirty buffers that the clock sweep is about to reach,
//! looking ahead of the hand only as far as recent allocations ask
//! (`BufferPool::bgwriter_sync`), so backends looking for a victim find clean ones.
//! With no allocations and the pool ahead of the hand already looked at, it
//! hibernates: it sleeps `HIBERNATE_FACTOR` times longer, and the next allocation
//! wakes it (the latch protocol is on `freelist::BgWriterLatch`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::buffer::bufmgr::BgSyncState;
use crate::buffer::BufferPool;
use crate::pgstat::wait_event::{report_wait_end, report_wait_start, WaitEvent};

/// A hibernating writer sleeps this many `bgwriter_delay`s (PostgreSQL: 50) unless
/// an allocation wakes it first.
const HIBERNATE_FACTOR: u32 = 50;

/// pg_stat_bgwriter's counters (`BufferPool::bgstats`): shared atomics, each
/// added to by the one that does the work (the background writer, the
/// checkpoint, a backend that had to write its victim), read by the view.
/// Relaxed throughout: independent statistics counters.
#[derive(Debug)]
pub struct BgWriterStats {
    pub checkpoints_timed: AtomicU64,
    pub checkpoints_req: AtomicU64,
    /// Microseconds spent writing and syncing in checkpoints.
    pub checkpoint_write_us: AtomicU64,
    pub checkpoint_sync_us: AtomicU64,
    /// Pages written by checkpoints.
    pub buffers_checkpoint: AtomicU64,
    /// Pages written by the background writer.
    pub buffers_clean: AtomicU64,
    /// Background writer rounds stopped by bgwriter_lru_maxpages.
    pub maxwritten_clean: AtomicU64,
    /// Dirty victims a backend had to write itself.
    pub buffers_backend: AtomicU64,
    /// Backends' own fsyncs: always 0 (ferrogres' writes never make a
    /// backend fsync; the checkpoint syncs every file).
    pub buffers_backend_fsync: AtomicU64,
    /// The allocation count (the clock's) at the last reset.
    pub alloc_base: AtomicU64,
    /// µs since the Unix epoch of the last reset.
    pub stats_reset: std::sync::atomic::AtomicI64,
}

impl Default for BgWriterStats {
    fn default() -> Self {
        BgWriterStats {
            checkpoints_timed: AtomicU64::new(0),
            checkpoints_req: AtomicU64::new(0),
            checkpoint_write_us: AtomicU64::new(0),
            checkpoint_sync_us: AtomicU64::new(0),
            buffers_checkpoint: AtomicU64::new(0),
            buffers_clean: AtomicU64::new(0),
            maxwritten_clean: AtomicU64::new(0),
            buffers_backend: AtomicU64::new(0),
            buffers_backend_fsync: AtomicU64::new(0),
            alloc_base: AtomicU64::new(0),
            stats_reset: std::sync::atomic::AtomicI64::new(crate::pgstat::activity::now_micros()),
        }
    }
}

impl BgWriterStats {
    #[inline]
    pub fn add(c: &AtomicU64, n: u64) {
        // Relaxed: a statistics counter.
        c.fetch_add(n, Ordering::Relaxed);
    }

    /// pg_stat_reset_shared('bgwriter'): zero everything; `allocs` is the
    /// clock's allocation count now.
    pub fn reset(&self, allocs: u64) {
        for c in [
            &self.checkpoints_timed,
            &self.checkpoints_req,
            &self.checkpoint_write_us,
            &self.checkpoint_sync_us,
            &self.buffers_checkpoint,
            &self.buffers_clean,
            &self.maxwritten_clean,
            &self.buffers_backend,
            &self.buffers_backend_fsync,
        ] {
            c.store(0, Ordering::Relaxed);
        }
        self.alloc_base.store(allocs, Ordering::Relaxed);
        self.stats_reset.store(crate::pgstat::activity::now_micros(), Ordering::Relaxed);
    }
}

/// The running background writer. `stop()` (or dropping it) ends the thread and
/// joins it.
pub struct BgWriter {
    pool: Arc<BufferPool>,
    rounds: Arc<AtomicU64>,
    thread: Option<JoinHandle<BgWriterTotals>>,
}

/// What the background writer did, returned when it stops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BgWriterTotals {
    pub rounds: u64,
    /// Pages written (pg_stat_bgwriter.buffers_clean).
    pub buffers_clean: u64,
    /// Rounds that ended with an I/O error (the round is retried next time).
    pub errors: u64,
    /// Buffer descriptors looked at.
    pub scanned: u64,
    /// Times it went into hibernation.
    pub hibernations: u64,
}

impl BufferPool {
    /// Starts the background writer thread for this pool.
    pub fn start_bgwriter(self: &Arc<Self>) -> BgWriter {
        self.start_bgwriter_with(Box::new(|| {}))
    }

    /// [`BufferPool::start_bgwriter`], running `on_start` first on the new thread.
    pub fn start_bgwriter_with(self: &Arc<Self>, on_start: crate::wal::OnStart) -> BgWriter {
        *self.bgwriter_latch().mu.lock().unwrap_or_else(|e| e.into_inner()) = false;
        let pool = Arc::clone(self);
        let rounds = Arc::new(AtomicU64::new(0));
        let rounds2 = Arc::clone(&rounds);
        let thread = std::thread::Builder::new()
            .name("bgwriter".into())
            .spawn(move || {
                on_start();
                let mut totals = BgWriterTotals::default();
                let mut state = BgSyncState::default();
                let delay = Duration::from_millis(pool.bgwriter_delay_ms);
                let mut hibernate = false;
                loop {
                    if sleep(&pool, delay, hibernate) {
                        return totals;
                    }
                    totals.rounds += 1;
                    // Relaxed: a counter for tests and diagnostics.
                    rounds2.fetch_add(1, Ordering::Relaxed);
                    match pool.bgwriter_sync(&mut state, pool.bgwriter_lru_maxpages) {
                        Ok(r) => {
                            totals.buffers_clean += r.written as u64;
                            BgWriterStats::add(&pool.bgstats.buffers_clean, r.written as u64);
                            if pool.bgwriter_lru_maxpages > 0 && r.written >= pool.bgwriter_lru_maxpages {
                                BgWriterStats::add(&pool.bgstats.maxwritten_clean, 1);
                            }
                            totals.scanned += r.scanned as u64;
                            hibernate = r.can_hibernate;
                            totals.hibernations += r.can_hibernate as u64;
                        }
                        Err(_) => {
                            totals.errors += 1;
                            hibernate = false;
                        }
                    }
                }
            })
            .expect("spawn bgwriter");
        BgWriter { pool: Arc::clone(self), rounds, thread: Some(thread) }
    }

    /// Whether the background writer is hibernating now (for tests and diagnostics).
    pub fn bgwriter_hibernating(&self) -> bool {
        self.bgwriter_latch().asleep.load(Ordering::SeqCst)
    }
}

/// Sleeps one `delay`, or up to `HIBERNATE_FACTOR` delays when `hibernate` (woken
/// early by the next allocation). Returns true when asked to stop.
fn sleep(pool: &BufferPool, delay: Duration, hibernate: bool) -> bool {
    let latch = pool.bgwriter_latch();
    report_wait_start(WaitEvent::Activity(if hibernate { "BgWriterHibernate" } else { "BgWriterMain" }));
    let mut stop = latch.mu.lock().unwrap_or_else(|e| e.into_inner());
    let deadline = Instant::now() + if hibernate { delay * HIBERNATE_FACTOR } else { delay };
    if hibernate {
        // Under `mu`: an allocation that clears the flag notifies only after we wait.
        latch.asleep.store(true, Ordering::SeqCst);
    }
    loop {
        if *stop {
            break;
        }
        if hibernate && !latch.asleep.load(Ordering::SeqCst) {
            break; // woken by an allocation
        }
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        stop = latch.cv.wait_timeout(stop, deadline - now).unwrap_or_else(|e| e.into_inner()).0;
    }
    latch.asleep.store(false, Ordering::SeqCst);
    let stopped = *stop;
    drop(stop);
    report_wait_end();
    stopped
}

impl BgWriter {
    /// Stops the thread and waits for it; returns what it did.
    pub fn stop(mut self) -> BgWriterTotals {
        self.shutdown()
    }

    /// Rounds done so far.
    pub fn rounds(&self) -> u64 {
        // Relaxed: a counter.
        self.rounds.load(Ordering::Relaxed)
    }

    fn shutdown(&mut self) -> BgWriterTotals {
        let latch = self.pool.bgwriter_latch();
        *latch.mu.lock().unwrap_or_else(|e| e.into_inner()) = true;
        latch.cv.notify_all();
        match self.thread.take() {
            Some(t) => t.join().unwrap_or_default(),
            None => BgWriterTotals::default(),
        }
    }
}

impl Drop for BgWriter {
    fn drop(&mut self) {
        self.shutdown();
    }
}
