//! Background threads of the WAL: the WAL writer, and a generic checkpointer loop.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::xlog::Wal;
use crate::error::Result;
use crate::pgstat::wait_event::{report_wait_end, report_wait_start, WaitEvent};

/// Run first on a background thread (the engine registers it as an auxiliary
/// backend there: wait events, pg_stat_activity).
pub type OnStart = Box<dyn FnOnce() + Send>;

/// A background thread that stops (and is joined) on `stop()` or drop.
pub struct BackgroundWorker {
    stop: Arc<(Mutex<bool>, Condvar)>,
    handle: Option<JoinHandle<()>>,
}

impl BackgroundWorker {
    fn spawn(
        name: &str,
        period: Duration,
        event: &'static str,
        on_start: OnStart,
        mut round: impl FnMut() + Send + 'static,
    ) -> Self {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let st = stop.clone();
        let handle = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                on_start();
                loop {
                {
                    let (m, cv) = &*st;
                    let mut g = m.lock().unwrap_or_else(|e| e.into_inner());
                    let deadline = Instant::now() + period;
                    report_wait_start(WaitEvent::Activity(event));
                    while !*g {
                        let now = Instant::now();
                        if now >= deadline {
                            break;
                        }
                        g = cv.wait_timeout(g, deadline - now).unwrap_or_else(|e| e.into_inner()).0;
                    }
                    report_wait_end();
                    if *g {
                        return;
                    }
                }
                round();
                }
            })
            .expect("could not start background thread");
        BackgroundWorker { stop, handle: Some(handle) }
    }

    /// Asks the thread to stop and waits for it.
    pub fn stop(&mut self) {
        let (m, cv) = &*self.stop;
        *m.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
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
    BackgroundWorker::spawn("wal writer", delay, "WalWriterMain", on_start, move || {
        if let Err(e) = wal.background_flush() {
            on_error(e);
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
    BackgroundWorker::spawn("checkpointer", poll, "CheckpointerMain", on_start, move || {
        if wal.checkpoint_needed(Instant::now()) {
            if let Err(e) = checkpoint(&wal) {
                on_error(e);
            }
        }
    })
}
