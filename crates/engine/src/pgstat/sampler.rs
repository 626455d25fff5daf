//! The built-in wait-event sampler (what the pg_wait_sampling extension is to
//! PostgreSQL, and seed 004's pg_stat_wait): a background thread wakes every
//! `pg_wait_sampling.period` ms (default 10), reads every backend's wait-event
//! slot (`wait_event`) and activity slot (`activity`), and records one sample
//! per backend that is waiting, or active on CPU (no wait event):
//!
//! - into the **history**, a ring of the last [`HISTORY_SIZE`] samples
//!   (pid, time, wait event, query id), oldest overwritten first;
//! - into the **profile**, a count per (pid, backend type, wait event, query id).
//!
//! While no backend is busy for [`HIBERNATE_AFTER`] the thread hibernates on
//! the activity table's `SamplerLatch`, woken by the first backend that
//! becomes busy (see `activity::SamplerLatch` for the protocol).
//!
//! Idle backends (waiting for their client) are not sampled. The sampler reads
//! the slots with Relaxed loads (a sample may be a moment stale, as any
//! sample) and takes its own two mutexes once per tick; backends never take
//! them, so sampling costs the backends nothing but the cache misses on their
//! slots. A reader (the SQL views) takes the same mutexes briefly to copy.
//!
//! The query id is 0 until query ids exist (pg_stat_statements is not built yet).

use super::activity::{BackendState, SamplerLatch};
use super::wait_event::{current_wait_event, WaitEvent};
use super::BackendId;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

/// Samples kept in the history ring (pg_wait_sampling.history_size's default).
pub const HISTORY_SIZE: usize = 5000;

/// One sample of the history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    pub pid: i32,
    /// µs since the Unix epoch.
    pub ts: i64,
    /// None: on CPU (active, not waiting).
    pub event: Option<WaitEvent>,
    pub queryid: i64,
}

/// One row of the profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProfileRow {
    pub pid: i32,
    pub backend_type: &'static str,
    pub event: Option<WaitEvent>,
    pub queryid: i64,
    pub count: u64,
}

/// A profile key: (pid, backend type, raw wait event, query id).
type ProfileKey = (i32, &'static str, u32, i64);

#[derive(Default)]
struct History {
    ring: Vec<Sample>,
    /// Where the next sample goes once the ring is full.
    next: usize,
}

/// The sampler's state, shared by its thread and the readers.
pub struct WaitSampler {
    /// Sampling period in ms; 0 stops sampling (the thread sleeps).
    period_ms: AtomicU64,
    history: Mutex<History>,
    /// (pid, backend type, raw wait event, query id) -> samples.
    profile: Mutex<HashMap<ProfileKey, u64>>,
    /// Ticks taken (for tests and the cost measurement).
    ticks: AtomicU64,
    /// Times the sampler went to sleep because no backend was busy.
    hibernations: AtomicU64,
    /// Where the thread waits between ticks and while it hibernates; stop and
    /// period changes notify it too (the engine's `ActivityTable::latch`).
    latch: Arc<SamplerLatch>,
    thread: Mutex<Option<JoinHandle<()>>>,
    running: AtomicBool,
}

/// How long the sampler goes on ticking with no busy backend before it
/// hibernates.
pub const HIBERNATE_AFTER: Duration = Duration::from_secs(1);

/// The longest hibernation without a wake-up: the thread then checks that
/// its engine still exists (it holds it weakly), and sleeps again.
const HIBERNATE_MAX: Duration = Duration::from_secs(60);

impl WaitSampler {
    /// A sampler waking every `period_ms` (0: off) on `latch` (the engine's
    /// `ActivityTable::latch`, which backends set when they become busy).
    pub fn new(period_ms: u64, latch: Arc<SamplerLatch>) -> WaitSampler {
        WaitSampler {
            period_ms: AtomicU64::new(period_ms),
            history: Mutex::new(History::default()),
            profile: Mutex::new(HashMap::new()),
            ticks: AtomicU64::new(0),
            hibernations: AtomicU64::new(0),
            latch,
            thread: Mutex::new(None),
            running: AtomicBool::new(false),
        }
    }

    /// The sampling period in ms (0: off).
    pub fn period_ms(&self) -> u64 {
        // Relaxed: a setting read once per tick.
        self.period_ms.load(Ordering::Relaxed)
    }

    /// Changes the period (0 turns sampling off).
    pub fn set_period_ms(&self, ms: u64) {
        self.period_ms.store(ms, Ordering::Relaxed);
        let _g = self.latch.lock();
        self.latch.notify();
    }

    /// Ticks taken so far.
    pub fn ticks(&self) -> u64 {
        self.ticks.load(Ordering::Relaxed)
    }

    /// Times the sampler hibernated so far.
    pub fn hibernations(&self) -> u64 {
        self.hibernations.load(Ordering::Relaxed)
    }

    /// Takes one sample of every backend in `activity` now; returns whether
    /// some backend was busy (`BackendState::is_busy`).
    pub fn tick(&self, activity: &super::activity::ActivityTable, types: &mut HashMap<i32, &'static str>) -> bool {
        let now = super::activity::now_micros();
        let mut got: Vec<(Sample, &'static str)> = Vec::new();
        let mut busy = false;
        for (i, pid, state) in activity.sample_states() {
            busy |= state.is_busy();
            let ev = current_wait_event(BackendId(i as u32));
            if ev.is_none() && state != BackendState::Active {
                continue;
            }
            let bt = *types.entry(pid).or_insert_with(|| activity.backend_type(BackendId(i as u32)).unwrap_or("client backend"));
            got.push((Sample { pid, ts: now, event: ev, queryid: activity.sample_query_id(i) }, bt));
        }
        self.ticks.fetch_add(1, Ordering::Relaxed);
        if got.is_empty() {
            return busy;
        }
        {
            let mut h = self.history.lock().unwrap_or_else(|e| e.into_inner());
            for (s, _) in &got {
                if h.ring.len() < HISTORY_SIZE {
                    h.ring.push(*s);
                } else {
                    let at = h.next;
                    h.ring[at] = *s;
                    h.next = (at + 1) % HISTORY_SIZE;
                }
            }
        }
        let mut p = self.profile.lock().unwrap_or_else(|e| e.into_inner());
        for (s, bt) in got {
            *p.entry((s.pid, bt, s.event.map_or(0, |e| e.to_raw()), s.queryid)).or_insert(0) += 1;
        }
        busy
    }

    /// The history, oldest first.
    pub fn history(&self) -> Vec<Sample> {
        let h = self.history.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = Vec::with_capacity(h.ring.len());
        out.extend_from_slice(&h.ring[h.next..]);
        out.extend_from_slice(&h.ring[..h.next]);
        out
    }

    /// The profile (unordered).
    pub fn profile(&self) -> Vec<ProfileRow> {
        let p = self.profile.lock().unwrap_or_else(|e| e.into_inner());
        p.iter()
            .map(|(&(pid, backend_type, raw, queryid), &count)| ProfileRow {
                pid,
                backend_type,
                event: WaitEvent::from_raw(raw),
                queryid,
                count,
            })
            .collect()
    }

    /// pg_wait_sampling_reset_profile().
    pub fn reset_profile(&self) {
        self.profile.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }

    /// The profile as folded stacks, one line per (backend type, wait event
    /// type, wait event, query id), the frames separated by `;` and the count
    /// after a space: what flamegraph.pl and inferno-flamegraph read. A backend
    /// on CPU shows as `CPU;running`.
    pub fn folded(&self) -> String {
        let mut agg: HashMap<String, u64> = HashMap::new();
        for r in self.profile() {
            let (t, e) = r.event.map_or(("CPU", "running"), |e| (e.type_name(), e.name()));
            *agg.entry(format!("{};{t};{e};{}", r.backend_type, r.queryid)).or_insert(0) += r.count;
        }
        let mut lines: Vec<(String, u64)> = agg.into_iter().collect();
        lines.sort();
        let mut out = String::new();
        for (k, n) in lines {
            out.push_str(&format!("{k} {n}\n"));
        }
        out
    }

    /// Starts the sampler thread (once) on `engine`; it holds a weak reference
    /// and ends when the engine is dropped or [`WaitSampler::stop`] is called.
    pub(crate) fn start(self: &Arc<Self>, engine: Weak<crate::engine::Engine>) {
        if self.running.swap(true, Ordering::Relaxed) {
            return;
        }
        let me = Arc::downgrade(self);
        let latch = self.latch.clone();
        let t = std::thread::Builder::new().name("wait sampler".into()).spawn(move || {
            let mut types: HashMap<i32, &'static str> = HashMap::new();
            // When a backend was last seen busy (or the sampler woke).
            let mut last_busy = std::time::Instant::now();
            loop {
                let Some(s) = me.upgrade() else { return };
                let period = s.period_ms();
                {
                    let g = latch.lock();
                    if g.stop {
                        return;
                    }
                    let wait = if period == 0 { Duration::from_secs(1) } else { Duration::from_millis(period) };
                    if latch.wait(g, Some(wait)).stop {
                        return;
                    }
                }
                if period == 0 {
                    continue;
                }
                let Some(e) = engine.upgrade() else { return };
                if types.len() > 4096 {
                    types.clear();
                }
                if s.tick(&e.activity, &mut types) {
                    last_busy = std::time::Instant::now();
                    continue;
                }
                if last_busy.elapsed() < HIBERNATE_AFTER {
                    continue;
                }
                // Nothing busy for a while: sleep until a backend becomes
                // busy (SamplerLatch's protocol), holding neither the engine
                // nor the sampler strongly.
                let mut g = latch.lock();
                latch.set_hibernating(&g, true);
                if !e.activity.any_busy() && !g.stop {
                    s.hibernations.fetch_add(1, Ordering::Relaxed);
                    drop((e, s));
                    g.woken = false;
                    while !g.woken && !g.stop {
                        let before = std::time::Instant::now();
                        g = latch.wait(g, Some(HIBERNATE_MAX));
                        if before.elapsed() >= HIBERNATE_MAX && (me.strong_count() == 0 || engine.strong_count() == 0) {
                            return;
                        }
                    }
                }
                latch.set_hibernating(&g, false);
                if g.stop {
                    return;
                }
                last_busy = std::time::Instant::now();
            }
        });
        if let Ok(t) = t {
            *self.thread.lock().unwrap_or_else(|e| e.into_inner()) = Some(t);
        }
    }

    /// Stops the thread and waits for it (unless called from it).
    pub fn stop(&self) {
        {
            let mut g = self.latch.lock();
            g.stop = true;
            self.latch.notify();
        }
        if let Some(t) = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pgstat::activity::{ActivityTable, BackendInfo};

    #[test]
    fn samples_active_backends_and_folds() {
        let t = ActivityTable::new(4, 100);
        t.start(BackendId(1), BackendInfo { pid: 7, backend_type: "client backend", ..Default::default() }, BackendState::Active);
        t.start(BackendId(2), BackendInfo { pid: 8, backend_type: "client backend", ..Default::default() }, BackendState::Idle);
        let s = WaitSampler::new(10, t.latch().clone());
        let mut types = HashMap::new();
        for _ in 0..3 {
            assert!(s.tick(&t, &mut types), "a backend is busy");
        }
        // The idle backend is not sampled; the active one is, on CPU.
        assert_eq!(s.history().len(), 3);
        assert!(s.history().iter().all(|x| x.pid == 7 && x.event.is_none()));
        assert_eq!(s.folded(), "client backend;CPU;running;0 3\n");
        s.reset_profile();
        assert!(s.profile().is_empty());
        assert_eq!(s.history().len(), 3, "the history is not reset with the profile");
    }
}
