//! The background writer (PostgreSQL's bgwriter.c): a thread that, every
//! `bgwriter_delay`, writes up to `bgwriter_lru_maxpages` dirty buffers that the
//! clock sweep is about to reach, so backends looking for a victim find clean ones.

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::buffer::BufferPool;
use crate::pgstat::wait_event::{report_wait_end, report_wait_start, WaitEvent};

/// The running background writer. `stop()` (or dropping it) ends the thread and
/// joins it.
pub struct BgWriter {
    stop: Arc<(Mutex<bool>, Condvar)>,
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
}

impl BufferPool {
    /// Starts the background writer thread for this pool.
    pub fn start_bgwriter(self: &Arc<Self>) -> BgWriter {
        self.start_bgwriter_with(Box::new(|| {}))
    }

    /// [`BufferPool::start_bgwriter`], running `on_start` first on the new thread.
    pub fn start_bgwriter_with(self: &Arc<Self>, on_start: crate::wal::OnStart) -> BgWriter {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let pool = Arc::clone(self);
        let stop2 = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("bgwriter".into())
            .spawn(move || {
                on_start();
                let mut totals = BgWriterTotals::default();
                let delay = Duration::from_millis(pool.bgwriter_delay_ms);
                loop {
                    {
                        let (m, cv) = &*stop2;
                        report_wait_start(WaitEvent::Activity("BgWriterMain"));
                        let g = m.lock().unwrap_or_else(|e| e.into_inner());
                        let (g, _) = cv
                            .wait_timeout_while(g, delay, |stopped| !*stopped)
                            .unwrap_or_else(|e| e.into_inner());
                        report_wait_end();
                        if *g {
                            return totals;
                        }
                    }
                    totals.rounds += 1;
                    match pool.bgwriter_round(pool.bgwriter_lru_maxpages) {
                        Ok(n) => totals.buffers_clean += n as u64,
                        Err(_) => totals.errors += 1,
                    }
                }
            })
            .expect("spawn bgwriter");
        BgWriter { stop, thread: Some(thread) }
    }
}

impl BgWriter {
    /// Stops the thread and waits for it; returns what it did.
    pub fn stop(mut self) -> BgWriterTotals {
        self.shutdown()
    }

    fn shutdown(&mut self) -> BgWriterTotals {
        let (m, cv) = &*self.stop;
        *m.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
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
