//! Background threads of the WAL: the WAL writer, and a generic checkpointer loop.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::xlog::Wal;
use crate::error::Result;
use crate::pgstat::wait_event::{report_wait_end, report_wait_start, WaitEvent};

/// Run first on a background thread (the engine registers it as an auxiliary
/// backend there: wait events, pg_stat_activity).
pub type OnStart = Box<dyn FnOnce() + Send>;

/// A background thread's latch: its stop flag, and a hibernation flag through which
/// the code that makes work for it wakes it early. The protocol (the same as the
/// background writer's, `buffer::freelist::BgWriterLatch`) costs a waker no system
/// call unless the thread really sleeps:
/// 1. the thread sets `asleep` while holding `stop`'s mutex, then waits on `cv`
///    (releasing the mutex atomically), re-checking `asleep` and `stop` on wake-up;
/// 2. a waker that sees `asleep` clears it with a swap, and only the one that
///    cleared it takes the mutex and notifies: the mutex orders the notify after the
///    wait began, so it is not lost; a thread not yet waiting finds the flag clear.
pub struct WorkerLatch {
    /// Set: the thread should end.
    stop: Mutex<bool>,
    cv: Condvar,
    /// Set by a hibernating thread, cleared by the waker.
    asleep: AtomicBool,
}

impl WorkerLatch {
    pub fn new() -> Arc<WorkerLatch> {
        Arc::new(WorkerLatch { stop: Mutex::new(false), cv: Condvar::new(), asleep: AtomicBool::new(false) })
    }

    /// Wakes the thread if it hibernates; otherwise costs one relaxed load.
    #[inline]
    pub fn wake(&self) {
        // Relaxed first load: the common case (awake) writes nothing shared; a flag
        // set just now is seen by the next wake or ends with the sleep's timeout.
        if self.asleep.load(Ordering::Relaxed) && self.asleep.swap(false, Ordering::SeqCst) {
            let _g = self.stop.lock().unwrap_or_else(|e| e.into_inner());
            self.cv.notify_one();
        }
    }

    /// Whether the thread hibernates now (tests, diagnostics).
    pub fn hibernating(&self) -> bool {
        self.asleep.load(Ordering::SeqCst)
    }

    /// Sleeps `timeout` (hibernating: until woken or `timeout`). True if asked to stop.
    fn sleep(&self, timeout: Duration, hibernate: bool) -> bool {
        let mut g = self.stop.lock().unwrap_or_else(|e| e.into_inner());
        let deadline = Instant::now() + timeout;
        if hibernate {
            self.asleep.store(true, Ordering::SeqCst);
        }
        while !*g {
            if hibernate && !self.asleep.load(Ordering::SeqCst) {
                break;
            }
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            g = self.cv.wait_timeout(g, deadline - now).unwrap_or_else(|e| e.into_inner()).0;
        }
        self.asleep.store(false, Ordering::SeqCst);
        *g
    }

    fn request_stop(&self) {
        *self.stop.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.cv.notify_all();
    }
}

/// Idle rounds in a row after which a background thread hibernates (PostgreSQL's
/// walwriter: LOOPS_UNTIL_HIBERNATE).
const IDLE_ROUNDS_BEFORE_HIBERNATE: u32 = 50;

/// A background thread that stops (and is joined) on `stop()` or drop.
pub struct BackgroundWorker {
    latch: Arc<WorkerLatch>,
    handle: Option<JoinHandle<()>>,
}

impl BackgroundWorker {
    /// Runs `round` every `period`. A round returns whether it found work; after
    /// `IDLE_ROUNDS_BEFORE_HIBERNATE` idle rounds in a row the thread sleeps
    /// `hibernate_factor` periods at a time until `latch.wake()` or work shows up.
    fn spawn(
        name: &str,
        period: Duration,
        event: &'static str,
        on_start: OnStart,
        latch: Arc<WorkerLatch>,
        hibernate_factor: u32,
        mut round: impl FnMut() -> bool + Send + 'static,
    ) -> Self {
        *latch.stop.lock().unwrap_or_else(|e| e.into_inner()) = false;
        let l = latch.clone();
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                on_start();
                let mut idle_rounds = 0u32;
                loop {
                    let hibernate = hibernate_factor > 1 && idle_rounds >= IDLE_ROUNDS_BEFORE_HIBERNATE;
                    report_wait_start(WaitEvent::Activity(event));
                    let stopped = l.sleep(if hibernate { period * hibernate_factor } else { period }, hibernate);
                    report_wait_end();
                    if stopped {
                        return;
                    }
                    if round() {
                        idle_rounds = 0;
                    } else {
                        idle_rounds = idle_rounds.saturating_add(1);
                    }
                }
            })
            .expect("could not start background thread");
        BackgroundWorker { latch, handle: Some(handle) }
    }

    /// Asks the thread to stop and waits for it.
    pub fn stop(&mut self) {
        self.latch.request_stop();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for BackgroundWorker {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts the WAL writer: every `wal_writer_delay` it flushes the complete WAL, so that
/// asynchronous commits (synchronous_commit=off) become durable within about three
/// delays, as in PostgreSQL. `on_error` receives flush errors.
pub fn start_wal_writer(wal: Arc<Wal>, on_error: impl Fn(crate::Error) + Send + 'static) -> BackgroundWorker {
    start_wal_writer_with(wal, Box::new(|| {}), on_error)
}

/// [`start_wal_writer`], running `on_start` first on the new thread.
pub fn start_wal_writer_with(wal: Arc<Wal>, on_start: OnStart, on_error: impl Fn(crate::Error) + Send + 'static) -> BackgroundWorker {
    let delay = wal.options().wal_writer_delay;
    let latch = wal.walwriter_latch.clone();
    // Hibernating (after 50 idle rounds), it sleeps 25 delays (PostgreSQL's
    // HIBERNATE_FACTOR); an asynchronous commit wakes it (`Wal::commit`).
    BackgroundWorker::spawn("wal writer", delay, "WalWriterMain", on_start, latch, 25, move || {
        // Pages initialized ahead of inserters count as work: a WAL writer that
        // keeps them ahead does not hibernate while WAL is being generated.
        let flushed = wal.background_flush();
        let initialized = wal.preinit_buffers() > 0;
        match flushed {
            Ok(flushed) => flushed || initialized,
            Err(e) => {
                on_error(e);
                true
            }
        }
    })
}

/// Starts a checkpointer: every `poll` it asks `Wal::checkpoint_needed` and, if so,
/// runs `checkpoint` (which composes `begin_checkpoint`, the buffer flush, the file
/// syncs and `finish_checkpoint`).
pub fn start_checkpointer(
    wal: Arc<Wal>,
    poll: Duration,
    checkpoint: impl FnMut(&Wal) -> Result<()> + Send + 'static,
    on_error: impl Fn(crate::Error) + Send + 'static,
) -> BackgroundWorker {
    start_checkpointer_with(wal, poll, Box::new(|| {}), checkpoint, on_error)
}

/// [`start_checkpointer`], running `on_start` first on the new thread.
pub fn start_checkpointer_with(
    wal: Arc<Wal>,
    poll: Duration,
    on_start: OnStart,
    mut checkpoint: impl FnMut(&Wal) -> Result<()> + Send + 'static,
    on_error: impl Fn(crate::Error) + Send + 'static,
) -> BackgroundWorker {
    let latch = wal.checkpointer_latch.clone();
    let mut last_pos = wal.insert_position();
    // Idle (no WAL inserted for 50 polls), it polls 50 times less often: a time
    // trigger is then up to 50 polls late (5 s at the engine's 100 ms, against a
    // checkpoint_timeout of minutes); the WAL-volume trigger wakes it at once, since
    // opening a new WAL segment for writing wakes it (`Wal::pwrite`).
    BackgroundWorker::spawn("checkpointer", poll, "CheckpointerMain", on_start, latch, 50, move || {
        let pos = wal.insert_position();
        let busy = pos != last_pos;
        last_pos = pos;
        if wal.checkpoint_needed(Instant::now()) {
            if let Err(e) = checkpoint(&wal) {
                on_error(e);
            }
            return true;
        }
        busy
    })
}
