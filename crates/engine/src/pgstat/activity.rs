//! Per-backend activity: what pg_stat_activity shows besides the wait event
//! (PostgreSQL's PgBackendStatus in shared memory).
//!
//! One [`ActivitySlot`] per backend, indexed by `BackendId`, in an
//! [`ActivityTable`] owned by the engine. The owning backend writes its slot;
//! anyone reads it. Two kinds of fields:
//!
//! - Per statement (state, query text, query_start, state_change, xact_start):
//!   atomics written under a **sequence counter** (PostgreSQL's
//!   `st_changecount`): the writer makes the counter odd, stores with Relaxed,
//!   makes it even again (Release); a reader copies the fields between two
//!   reads of the counter and retries while it was odd or moved. No lock, no
//!   allocation: the query text is copied into a fixed array of `AtomicU64`
//!   words (`track_activity_query_size` bytes, cut at a character boundary).
//! - Per connection (database, user, application_name, client address,
//!   backend type): set at connect and by `SET application_name`, rarely;
//!   behind a per-slot mutex that only readers and those rare writes take.
//!
//! Invariants: `pid != 0` iff a backend holds the slot; `changecount` is odd
//! only while its owner is inside [`ActivitySlot::report`]; `query_len <=
//! 8 * words.len()`.

use crate::pgstat::BackendId;
use std::sync::atomic::{fence, AtomicBool, AtomicI32, AtomicI64, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

/// Bytes of query text kept per backend: PostgreSQL's default
/// track_activity_query_size (the setting itself is not read yet).
pub const QUERY_SIZE: usize = 1024;

/// pg_stat_activity.state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum BackendState {
    /// No state (an auxiliary process, or a backend not started yet): NULL.
    Undefined = 0,
    Idle = 1,
    Active = 2,
    IdleInTransaction = 3,
    IdleInTransactionAborted = 4,
    /// track_activities is off: "disabled".
    Disabled = 5,
}

impl BackendState {
    /// Whether a backend in this state runs a statement (or may: with
    /// track_activities off it reports "disabled" whatever it does), so that
    /// the wait-event sampler has something to sample.
    pub fn is_busy(self) -> bool {
        matches!(self, BackendState::Active | BackendState::Disabled)
    }

    fn from_u8(v: u8) -> BackendState {
        match v {
            1 => BackendState::Idle,
            2 => BackendState::Active,
            3 => BackendState::IdleInTransaction,
            4 => BackendState::IdleInTransactionAborted,
            5 => BackendState::Disabled,
            _ => BackendState::Undefined,
        }
    }
    /// pg_stat_activity's text, None for NULL.
    pub fn name(self) -> Option<&'static str> {
        Some(match self {
            BackendState::Undefined => return None,
            BackendState::Idle => "idle",
            BackendState::Active => "active",
            BackendState::IdleInTransaction => "idle in transaction",
            BackendState::IdleInTransactionAborted => "idle in transaction (aborted)",
            BackendState::Disabled => "disabled",
        })
    }
}

/// What a backend says about itself at connect.
#[derive(Clone, Debug, Default)]
pub struct BackendInfo {
    pub pid: i32,
    /// pg_stat_activity.backend_type: "client backend", "checkpointer", ...
    pub backend_type: &'static str,
    pub datid: Option<u32>,
    pub datname: Option<String>,
    pub usesysid: Option<u32>,
    pub usename: Option<String>,
    pub application_name: String,
    /// The client's address (None for a Unix socket or an auxiliary process).
    pub client_addr: Option<String>,
    /// The client's port; -1 for a Unix socket, None for an auxiliary process.
    pub client_port: Option<i32>,
    /// The session's TLS (pg_stat_ssl): (version, cipher, bits); None in clear.
    pub ssl: Option<(String, String, i32)>,
}

/// One backend's row, read from its slot.
#[derive(Clone, Debug)]
pub struct ActivityRow {
    pub backend: BackendId,
    pub info: BackendInfo,
    pub state: BackendState,
    pub query: String,
    /// Timestamps as microseconds since the Unix epoch (None: NULL).
    pub backend_start: Option<i64>,
    pub xact_start: Option<i64>,
    pub query_start: Option<i64>,
    pub state_change: Option<i64>,
    /// None: no query id (compute_query_id off, or not analyzed yet).
    pub query_id: Option<i64>,
}

/// Microseconds since the Unix epoch, now.
pub fn now_micros() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as i64)
}

/// One backend's status (see the module doc).
pub struct ActivitySlot {
    /// 0: free. Written by the owner at start and end, read by anyone.
    pid: AtomicI32,
    /// Odd while the owner writes the per-statement fields.
    changecount: AtomicU32,
    state: AtomicU8,
    /// µs since the Unix epoch; 0 = NULL.
    backend_start: AtomicI64,
    xact_start: AtomicI64,
    query_start: AtomicI64,
    state_change: AtomicI64,
    query_len: AtomicU32,
    words: Box<[AtomicU64]>,
    /// The running (or last) statement's query id; 0 = none (NULL). Written
    /// by the owner alone once its statement is analyzed, outside the
    /// sequence counter (PostgreSQL's st_query_id, set apart from the text
    /// too): a reader may pair a new text with the previous id for an instant.
    query_id: AtomicI64,
    /// Most bytes of query text kept: track_activity_query_size - 1.
    max_query: usize,
    /// Per-connection facts (rarely written).
    info: Mutex<BackendInfo>,
    /// How to interrupt the backend (pg_cancel_backend, pg_terminate_backend);
    /// set at start, cleared at end.
    signal: Mutex<Option<SignalHook>>,
    /// The table's sampler latch, woken when this slot becomes busy while the
    /// sampler hibernates.
    latch: Arc<SamplerLatch>,
    /// Time (µs) spent active and idle in a transaction since the owner last
    /// took these (pg_stat_database's active_time, idle_in_transaction_time):
    /// added by the owner when its state changes, taken by the owner at a
    /// statistics flush ([`ActivitySlot::take_state_times`]).
    active_us: AtomicU64,
    idle_in_xact_us: AtomicU64,
    /// Where the current state's uncounted time starts (µs since the epoch; 0:
    /// no state): the state change, or the last take, whichever is later.
    state_clock: AtomicI64,
}

/// What pg_cancel_backend / pg_terminate_backend ask of a backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BackendSignal {
    /// Cancel the running statement (57014), as a CancelRequest does.
    Cancel,
    /// End the session (FATAL 57P01), even while it waits for its client.
    Terminate,
}

/// The function that delivers a [`BackendSignal`] to a backend (set by the
/// layer that owns its interrupt flags and its socket).
pub type SignalHook = std::sync::Arc<dyn Fn(BackendSignal) + Send + Sync>;

/// What one [`ActivitySlot::report`] changes; `None` fields are left alone.
#[derive(Clone, Copy, Debug, Default)]
pub struct Report<'a> {
    pub state: Option<BackendState>,
    /// A new query text (and query_start = `now`).
    pub query: Option<&'a str>,
    /// Some(Some(t)): a transaction started at t; Some(None): none now.
    pub xact_start: Option<Option<i64>>,
}

impl ActivitySlot {
    fn new(query_size: usize, latch: Arc<SamplerLatch>) -> ActivitySlot {
        ActivitySlot {
            pid: AtomicI32::new(0),
            changecount: AtomicU32::new(0),
            state: AtomicU8::new(0),
            backend_start: AtomicI64::new(0),
            xact_start: AtomicI64::new(0),
            query_start: AtomicI64::new(0),
            state_change: AtomicI64::new(0),
            query_len: AtomicU32::new(0),
            query_id: AtomicI64::new(0),
            words: (0..query_size.div_ceil(8)).map(|_| AtomicU64::new(0)).collect(),
            max_query: query_size.saturating_sub(1),
            info: Mutex::new(BackendInfo::default()),
            signal: Mutex::new(None),
            latch,
            active_us: AtomicU64::new(0),
            idle_in_xact_us: AtomicU64::new(0),
            state_clock: AtomicI64::new(0),
        }
    }

    /// The owner updates its per-statement fields (no lock; see the module doc).
    /// The statement's query id once it is known (0: none). Owner only.
    #[inline]
    pub fn set_query_id(&self, id: i64) {
        // Relaxed: a value read as a sample (see the field).
        self.query_id.store(id, Ordering::Relaxed);
    }

    pub fn report(&self, r: Report<'_>) {
        let now = now_micros();
        // Relaxed: only the owner writes the counter; the fence orders it
        // before the field stores for a reader that sees any of them.
        let c = self.changecount.load(Ordering::Relaxed);
        self.changecount.store(c.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        let mut became_busy = false;
        if r.state.is_some() || r.query.is_some() {
            // The state (or the statement) the backend leaves ends here: its
            // time counts as active or idle in a transaction, as PostgreSQL's
            // pgstat_report_activity counts it.
            let since = self.state_clock.load(Ordering::Relaxed);
            let old = BackendState::from_u8(self.state.load(Ordering::Relaxed));
            let leaves = r.state.is_some_and(|s| s as u8 != old as u8) || r.query.is_some();
            if since != 0 && leaves && now > since {
                if let Some(c) = self.time_counter(old) {
                    c.fetch_add((now - since) as u64, Ordering::Relaxed);
                }
            }
            if leaves {
                self.state_clock.store(now, Ordering::Relaxed);
            }
        }
        if let Some(s) = r.state {
            // SeqCst: published by the counter's Release store below, and
            // ordered before the load of the sampler's `hibernating` flag in
            // `note_busy` (the sampler stores that flag, then loads the
            // states: one of the two sides sees the other). On x86 a swap is
            // a locked exchange whatever the ordering.
            let old = self.state.swap(s as u8, Ordering::SeqCst);
            if old != s as u8 {
                self.state_change.store(now, Ordering::Relaxed);
                became_busy = s.is_busy() && !BackendState::from_u8(old).is_busy();
            }
        }
        if let Some(q) = r.query {
            self.store_query(q);
            self.query_start.store(now, Ordering::Relaxed);
            self.state_change.store(now, Ordering::Relaxed);
        }
        if let Some(x) = r.xact_start {
            self.xact_start.store(x.unwrap_or(0), Ordering::Relaxed);
        }
        // Release: a reader that sees the even value sees every store above.
        self.changecount.store(c.wrapping_add(2), Ordering::Release);
        if became_busy {
            self.latch.note_busy();
        }
    }

    /// Takes the active and idle-in-transaction time (µs) accumulated since the
    /// last call, the current state's time so far included (its clock restarts
    /// now). For the owner only.
    pub fn take_state_times(&self) -> (u64, u64) {
        let now = now_micros();
        let since = self.state_clock.load(Ordering::Relaxed);
        if let Some(c) = self.time_counter(BackendState::from_u8(self.state.load(Ordering::Relaxed))) {
            if since != 0 && now > since {
                c.fetch_add((now - since) as u64, Ordering::Relaxed);
                self.state_clock.store(now, Ordering::Relaxed);
            }
        }
        (self.active_us.swap(0, Ordering::Relaxed), self.idle_in_xact_us.swap(0, Ordering::Relaxed))
    }

    /// The counter a state's time goes to (none for idle and the others).
    fn time_counter(&self, s: BackendState) -> Option<&AtomicU64> {
        match s {
            BackendState::Active => Some(&self.active_us),
            BackendState::IdleInTransaction | BackendState::IdleInTransactionAborted => Some(&self.idle_in_xact_us),
            _ => None,
        }
    }

    fn store_query(&self, q: &str) {
        let mut n = q.len().min(self.max_query);
        while !q.is_char_boundary(n) {
            n -= 1;
        }
        let b = &q.as_bytes()[..n];
        for (i, chunk) in b.chunks(8).enumerate() {
            let mut w = [0u8; 8];
            w[..chunk.len()].copy_from_slice(chunk);
            // Relaxed: inside the counter's write section.
            self.words[i].store(u64::from_le_bytes(w), Ordering::Relaxed);
        }
        self.query_len.store(n as u32, Ordering::Relaxed);
    }

    /// Sets application_name (SET application_name).
    pub fn set_application_name(&self, name: &str) {
        self.info.lock().unwrap_or_else(|e| e.into_inner()).application_name = name.to_string();
    }

    /// A consistent copy of the slot, or None if free.
    fn read(&self, backend: BackendId) -> Option<ActivityRow> {
        // Relaxed: rechecked after the copy; a slot freed meanwhile is skipped.
        if self.pid.load(Ordering::Acquire) == 0 {
            return None;
        }
        let info = self.info.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut bytes = Vec::new();
        let mut tries = 0u32;
        loop {
            // The owner finishes its write section in a few stores, but may be
            // descheduled inside it: spin a little, then yield, never give up
            // (a row must not go missing because its owner was preempted).
            tries = tries.wrapping_add(1);
            if tries > 64 {
                std::thread::yield_now();
            }
            // Acquire: pairs with the writer's Release of an even value.
            let c1 = self.changecount.load(Ordering::Acquire);
            if c1 & 1 == 1 {
                std::hint::spin_loop();
                continue;
            }
            // A slot freed meanwhile (its owner ended) is skipped.
            if self.pid.load(Ordering::Relaxed) == 0 {
                return None;
            }
            let state = self.state.load(Ordering::Relaxed);
            let (bs, xs, qs, sc) = (
                self.backend_start.load(Ordering::Relaxed),
                self.xact_start.load(Ordering::Relaxed),
                self.query_start.load(Ordering::Relaxed),
                self.state_change.load(Ordering::Relaxed),
            );
            let len = (self.query_len.load(Ordering::Relaxed) as usize).min(self.words.len() * 8);
            bytes.clear();
            for w in &self.words[..len.div_ceil(8)] {
                bytes.extend_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
            }
            bytes.truncate(len);
            // Acquire fence: the loads above happen before the re-read below.
            fence(Ordering::Acquire);
            if self.changecount.load(Ordering::Relaxed) != c1 {
                continue;
            }
            let t = |v: i64| (v != 0).then_some(v);
            return Some(ActivityRow {
                backend,
                info,
                state: BackendState::from_u8(state),
                query: String::from_utf8_lossy(&bytes).into_owned(),
                backend_start: t(bs),
                xact_start: t(xs),
                query_start: t(qs),
                state_change: t(sc),
                // Relaxed: a sample (see the field).
                query_id: Some(self.query_id.load(Ordering::Relaxed)).filter(|q| *q != 0),
            });
        }
    }
}

/// How the wait-event sampler sleeps while no backend is busy
/// (hibernation, as PostgreSQL's background writer does when it has nothing
/// to do) and is woken when one becomes busy.
///
/// The sampler, with `state` locked, sets `hibernating` (SeqCst), then looks
/// at every slot's state (SeqCst loads, [`ActivityTable::any_busy`]); if
/// none is busy it waits on `cv` until `woken` or `stop`. A backend whose
/// slot goes from not busy to busy swaps its state (SeqCst), then loads
/// `hibernating` (SeqCst, [`SamplerLatch::note_busy`]): in the single order of
/// SeqCst operations either the sampler's load of the state comes after the
/// backend's swap (it sees the busy slot and does not sleep), or the
/// backend's load of the flag comes after the sampler's store (it wakes the
/// sampler: it clears the flag, takes `state`, which the sampler holds until
/// it waits, sets `woken` and notifies). So a busy backend is never left
/// unsampled, and a backend pays one load of a flag that stays in its cache
/// per idle-to-busy transition while the sampler is awake.
///
/// Invariants: `hibernating` is true only while the sampler holds `state` or
/// waits on `cv` for a busy backend; `woken` is set only by a backend that
/// cleared `hibernating`.
#[derive(Default, Debug)]
pub struct SamplerLatch {
    hibernating: AtomicBool,
    state: Mutex<LatchState>,
    cv: Condvar,
}

/// What the sampler's waits wake up for (under [`SamplerLatch`]'s mutex).
#[derive(Default, Debug)]
pub struct LatchState {
    /// The sampler is asked to end.
    pub stop: bool,
    /// A backend became busy while the sampler hibernated.
    pub woken: bool,
}

impl SamplerLatch {
    /// A slot became busy: wakes the sampler if it hibernates.
    #[inline]
    pub fn note_busy(&self) {
        // SeqCst: see the type's doc (ordered after the state's swap).
        if self.hibernating.load(Ordering::SeqCst) {
            self.wake();
        }
    }

    #[cold]
    fn wake(&self) {
        // Only the backend that clears the flag takes the mutex.
        if self.hibernating.swap(false, Ordering::SeqCst) {
            let mut g = self.lock();
            g.woken = true;
            self.cv.notify_all();
        }
    }

    /// The latch's state, locked.
    pub fn lock(&self) -> MutexGuard<'_, LatchState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wakes every waiter (after a change of the state, or of a setting).
    pub fn notify(&self) {
        self.cv.notify_all();
    }

    /// Waits on the latch at most `timeout` (None: until notified).
    pub fn wait<'a>(&self, g: MutexGuard<'a, LatchState>, timeout: Option<std::time::Duration>) -> MutexGuard<'a, LatchState> {
        match timeout {
            Some(t) => self.cv.wait_timeout(g, t).unwrap_or_else(|e| e.into_inner()).0,
            None => self.cv.wait(g).unwrap_or_else(|e| e.into_inner()),
        }
    }

    /// The sampler, holding `g`, is about to hibernate: sets the flag; the
    /// caller then checks [`ActivityTable::any_busy`] before it waits.
    pub fn set_hibernating(&self, _g: &MutexGuard<'_, LatchState>, on: bool) {
        // SeqCst: see the type's doc (ordered before the loads of the states).
        self.hibernating.store(on, Ordering::SeqCst);
    }

    /// Whether the sampler hibernates (tests, diagnostics).
    pub fn is_hibernating(&self) -> bool {
        self.hibernating.load(Ordering::Relaxed)
    }
}

/// Every backend's slot (the engine's; see the module doc).
pub struct ActivityTable {
    slots: Box<[ActivitySlot]>,
    /// The wait-event sampler's hibernation latch (shared by every slot).
    latch: Arc<SamplerLatch>,
}

impl ActivityTable {
    /// `max_backends` slots of `query_size` bytes of query text
    /// (track_activity_query_size).
    pub fn new(max_backends: usize, query_size: usize) -> ActivityTable {
        let latch = Arc::new(SamplerLatch::default());
        let slots = (0..max_backends).map(|_| ActivitySlot::new(query_size.max(100), latch.clone())).collect();
        ActivityTable { slots, latch }
    }

    /// The latch the wait-event sampler hibernates on.
    pub fn latch(&self) -> &Arc<SamplerLatch> {
        &self.latch
    }

    /// Whether some slot is busy ([`BackendState::is_busy`]): SeqCst loads of
    /// the states alone, for the sampler's check before it hibernates
    /// ([`SamplerLatch`]; a slot's pid is stored after its state, so it is
    /// not looked at; a free slot's state is Undefined).
    pub fn any_busy(&self) -> bool {
        self.slots.iter().any(|s| BackendState::from_u8(s.state.load(Ordering::SeqCst)).is_busy())
    }

    /// Backend `id`'s slot (None beyond the table).
    pub fn slot(&self, id: BackendId) -> Option<&ActivitySlot> {
        self.slots.get(id.0 as usize)
    }

    /// Backend `id` starts: its slot gets `info`, backend_start now, state
    /// `state`, an empty query.
    pub fn start(&self, id: BackendId, info: BackendInfo, state: BackendState) {
        let Some(s) = self.slot(id) else { return };
        let pid = info.pid;
        *s.info.lock().unwrap_or_else(|e| e.into_inner()) = info;
        let now = now_micros();
        s.backend_start.store(now, Ordering::Relaxed);
        s.xact_start.store(0, Ordering::Relaxed);
        s.query_start.store(0, Ordering::Relaxed);
        s.state_change.store(if state == BackendState::Undefined { 0 } else { now }, Ordering::Relaxed);
        s.state_clock.store(if state == BackendState::Undefined { 0 } else { now }, Ordering::Relaxed);
        s.active_us.store(0, Ordering::Relaxed);
        s.idle_in_xact_us.store(0, Ordering::Relaxed);
        // SeqCst: before the load of the sampler's flag (SamplerLatch).
        s.state.store(state as u8, Ordering::SeqCst);
        s.query_len.store(0, Ordering::Relaxed);
        s.query_id.store(0, Ordering::Relaxed);
        // Release: readers that see the pid see the fields above.
        s.pid.store(pid, Ordering::Release);
        if state.is_busy() {
            s.latch.note_busy();
        }
    }

    /// Sets how backend `id` is interrupted ([`ActivityTable::signal`]).
    pub fn set_signal_hook(&self, id: BackendId, hook: SignalHook) {
        if let Some(s) = self.slot(id) {
            *s.signal.lock().unwrap_or_else(|e| e.into_inner()) = Some(hook);
        }
    }

    /// Delivers `sig` to the backend whose pid is `pid`: false when no backend
    /// (with a way to be signalled) has that pid.
    pub fn signal(&self, pid: i32, sig: BackendSignal) -> bool {
        let Some(id) = self.backend_of_pid(pid) else { return false };
        let Some(s) = self.slot(id) else { return false };
        let hook = s.signal.lock().unwrap_or_else(|e| e.into_inner()).clone();
        match hook {
            Some(h) => {
                h(sig);
                true
            }
            None => false,
        }
    }

    /// Backend `id` ends: its slot is free.
    pub fn end(&self, id: BackendId) {
        if let Some(s) = self.slot(id) {
            s.signal.lock().unwrap_or_else(|e| e.into_inner()).take();
            // Relaxed: readers check it first and skip a free slot.
            s.pid.store(0, Ordering::Relaxed);
            // Relaxed: a free slot is not busy (SamplerLatch); only the owner
            // writes the state, and the next owner's start sets it again.
            s.state.store(BackendState::Undefined as u8, Ordering::Relaxed);
        }
    }

    /// Every backend in use, slot by slot (each slot consistent in itself).
    pub fn rows(&self) -> Vec<ActivityRow> {
        self.slots.iter().enumerate().filter_map(|(i, s)| s.read(BackendId(i as u32))).collect()
    }

    /// Every slot in use as (index, pid, state): two Relaxed loads per slot and
    /// no lock (the wait-event sampler's tick; a sample, slot by slot).
    pub fn sample_states(&self) -> impl Iterator<Item = (usize, i32, BackendState)> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, s)| {
            // Relaxed: a sample.
            let pid = s.pid.load(Ordering::Relaxed);
            (pid != 0).then(|| (i, pid, BackendState::from_u8(s.state.load(Ordering::Relaxed))))
        })
    }

    /// Slot `i`'s query id now (0: none); a sample, for the wait sampler.
    pub fn sample_query_id(&self, i: usize) -> i64 {
        // Relaxed: a sample.
        self.slots.get(i).map_or(0, |s| s.query_id.load(Ordering::Relaxed))
    }

    /// The backend type of slot `id` (takes the slot's info mutex).
    pub fn backend_type(&self, id: BackendId) -> Option<&'static str> {
        let s = self.slot(id)?;
        Some(s.info.lock().unwrap_or_else(|e| e.into_inner()).backend_type)
    }

    /// The role backend `id` logged in as (pg_stat_activity.usesysid; None
    /// for an auxiliary process), or None beyond the table. Takes the slot's
    /// info mutex.
    pub fn role_of(&self, id: BackendId) -> Option<Option<u32>> {
        let s = self.slot(id)?;
        Some(s.info.lock().unwrap_or_else(|e| e.into_inner()).usesysid)
    }

    /// The backend whose pid is `pid`, if any.
    pub fn backend_of_pid(&self, pid: i32) -> Option<BackendId> {
        if pid == 0 {
            return None;
        }
        // Relaxed: a sample.
        self.slots.iter().position(|s| s.pid.load(Ordering::Relaxed) == pid).map(|i| BackendId(i as u32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_and_read_back() {
        let t = ActivityTable::new(4, 100);
        assert!(t.rows().is_empty());
        let info = BackendInfo { pid: 42, backend_type: "client backend", ..Default::default() };
        t.start(BackendId(2), info, BackendState::Idle);
        let s = t.slot(BackendId(2)).unwrap();
        let long = format!("select {}", "9".repeat(200));
        s.report(Report { state: Some(BackendState::Active), query: Some(&long), xact_start: Some(Some(7)) });
        let r = &t.rows()[0];
        assert_eq!(r.info.pid, 42);
        assert_eq!(r.state, BackendState::Active);
        assert_eq!(r.query, long[..99], "cut to query_size - 1 bytes");
        assert_eq!(r.xact_start, Some(7));
        assert!(r.query_start.is_some() && r.backend_start.is_some());
        assert_eq!(t.backend_of_pid(42), Some(BackendId(2)));
        s.report(Report { query: Some("é".repeat(60).as_str()), ..Default::default() });
        assert_eq!(t.rows()[0].query, "é".repeat(49), "cut at a character boundary");
        t.end(BackendId(2));
        assert!(t.rows().is_empty());
        assert_eq!(t.backend_of_pid(42), None);
    }

    #[test]
    fn readers_never_see_a_torn_query() {
        let t = std::sync::Arc::new(ActivityTable::new(1, 64));
        t.start(BackendId(0), BackendInfo { pid: 1, ..Default::default() }, BackendState::Idle);
        let a = "a".repeat(40);
        let b = "b".repeat(17);
        let w = {
            let t = t.clone();
            let (a, b) = (a.clone(), b.clone());
            std::thread::spawn(move || {
                for i in 0..200_000 {
                    let q = if i % 2 == 0 { &a } else { &b };
                    t.slot(BackendId(0)).unwrap().report(Report { query: Some(q), ..Default::default() });
                }
            })
        };
        while !w.is_finished() {
            for r in t.rows() {
                assert!(r.query.is_empty() || r.query == a || r.query == b, "torn: {}", r.query);
            }
        }
        w.join().unwrap();
    }
}
