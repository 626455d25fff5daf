//! Wait events: what a backend is waiting for, as pg_stat_activity shows it.
//!
//! Contract: `report_wait_start(ev)` before blocking, `report_wait_end()` after;
//! [`WaitEvent::type_name`] / [`WaitEvent::name`] give pg_stat_activity's
//! `wait_event_type` and `wait_event`.
//!
//! Each backend's current wait event lives in one `AtomicU32` of the process-wide
//! backend status array (see the pgstat README): the backend writes it with one
//! relaxed store, any other thread (a pg_stat_activity scan, the wait-event sampler)
//! reads it with one relaxed load. A thread that never called [`register_backend`]
//! (tests, benchmarks, background helpers) has no slot: reporting is then a
//! thread-local lookup and nothing else.
//!
//! The u32 encoding ([`WaitEvent::to_raw`]): bits 24..31 are the wait event type
//! (0 = not waiting), bits 0..23 the event within the type: the tranche index for
//! `LWLock`, an interned name id for the others.

use crate::lmgr::lwlock::Tranche;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitEvent {
    /// Waiting for an LWLock of a tranche (wait_event_type "LWLock").
    LwLock(Tranche),
    /// Waiting for a heavyweight lock (wait_event_type "Lock"); the name is the lock
    /// tag type: "relation", "tuple", "transactionid", "extend", "advisory", ...
    Lock(&'static str),
    /// Waiting for I/O (wait_event_type "IO"): "WALSync", "DataFileRead", ...
    Io(&'static str),
    /// Waiting on a condition (wait_event_type "IPC"), e.g. "ProcArrayGroupUpdate".
    Ipc(&'static str),
    /// Background process idle (wait_event_type "Activity"), e.g. "BgWriterMain".
    Activity(&'static str),
    /// Sleeping (wait_event_type "Timeout"), e.g. "SpinDelay", "PgSleep".
    Timeout(&'static str),
}

/// Type codes of the raw encoding (bits 24..31). 0 means "not waiting".
const TYPE_SHIFT: u32 = 24;
/// Mask of the event id within a type (bits 0..23).
const EVENT_MASK: u32 = (1 << TYPE_SHIFT) - 1;
const TYPE_LWLOCK: u32 = 1;
const TYPE_LOCK: u32 = 2;
const TYPE_IO: u32 = 3;
const TYPE_IPC: u32 = 4;
const TYPE_ACTIVITY: u32 = 5;
const TYPE_TIMEOUT: u32 = 6;

/// The raw value of "not waiting".
pub const NO_WAIT: u32 = 0;

/// Wait event names known at compile time (PostgreSQL 15's names for the events we
/// report or expect to report). Encoding one of these never takes a lock; any other
/// `&'static str` is interned once in a mutex-protected table (see [`name_id`]).
const KNOWN_NAMES: &[&str] = &[
    // Timeout
    "SpinDelay",
    "PgSleep",
    "VacuumDelay",
    // Lock (heavyweight lock tag types)
    "relation",
    "extend",
    "page",
    "tuple",
    "transactionid",
    "virtualxid",
    "object",
    "advisory",
    // IO
    "DataFileRead",
    "DataFileWrite",
    "DataFileExtend",
    "DataFileFlush",
    "DataFileSync",
    "DataFileTruncate",
    "WALRead",
    "WALWrite",
    "WALSync",
    "WALInitWrite",
    "WALInitSync",
    "ControlFileRead",
    "ControlFileWrite",
    "ControlFileSync",
    // IPC
    "ProcArrayGroupUpdate",
    "XactGroupUpdate",
    "BufferIO",
    "ExecuteGather",
    "ParallelFinish",
    "CheckpointDone",
    "CheckpointStart",
    // Activity
    "BgWriterMain",
    "BgWriterHibernate",
    "CheckpointerMain",
    "WalWriterMain",
    "AutoVacuumMain",
];

impl WaitEvent {
    /// `Timeout:SpinDelay`: a spinlock waiter sleeping between attempts.
    pub const SPIN_DELAY: WaitEvent = WaitEvent::Timeout("SpinDelay");

    pub fn type_name(&self) -> &'static str {
        match self {
            WaitEvent::LwLock(_) => "LWLock",
            WaitEvent::Lock(_) => "Lock",
            WaitEvent::Io(_) => "IO",
            WaitEvent::Ipc(_) => "IPC",
            WaitEvent::Activity(_) => "Activity",
            WaitEvent::Timeout(_) => "Timeout",
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            WaitEvent::LwLock(t) => t.name(),
            WaitEvent::Lock(n)
            | WaitEvent::Io(n)
            | WaitEvent::Ipc(n)
            | WaitEvent::Activity(n)
            | WaitEvent::Timeout(n) => n,
        }
    }

    /// Encodes the event as the u32 stored in a backend's status slot (never
    /// [`NO_WAIT`]). For `LWLock` this is a shift and an or; for the other types it
    /// may intern the name (first use of a name not in the compile-time table).
    pub fn to_raw(&self) -> u32 {
        let (ty, id) = match *self {
            WaitEvent::LwLock(t) => (TYPE_LWLOCK, t.index() as u32),
            WaitEvent::Lock(n) => (TYPE_LOCK, name_id(n)),
            WaitEvent::Io(n) => (TYPE_IO, name_id(n)),
            WaitEvent::Ipc(n) => (TYPE_IPC, name_id(n)),
            WaitEvent::Activity(n) => (TYPE_ACTIVITY, name_id(n)),
            WaitEvent::Timeout(n) => (TYPE_TIMEOUT, name_id(n)),
        };
        (ty << TYPE_SHIFT) | (id & EVENT_MASK)
    }

    /// Decodes a slot value; `None` for [`NO_WAIT`] or a value no encoder produced.
    pub fn from_raw(raw: u32) -> Option<WaitEvent> {
        let ty = raw >> TYPE_SHIFT;
        let id = raw & EVENT_MASK;
        if ty == TYPE_LWLOCK {
            return Tranche::from_index(id as usize).map(WaitEvent::LwLock);
        }
        let name = id_name(id)?;
        match ty {
            TYPE_LOCK => Some(WaitEvent::Lock(name)),
            TYPE_IO => Some(WaitEvent::Io(name)),
            TYPE_IPC => Some(WaitEvent::Ipc(name)),
            TYPE_ACTIVITY => Some(WaitEvent::Activity(name)),
            TYPE_TIMEOUT => Some(WaitEvent::Timeout(name)),
            _ => None,
        }
    }
}

/// Names interned at run time: id = KNOWN_NAMES.len() + index. Only grows; the lock
/// is taken when a name outside [`KNOWN_NAMES`] is reported or decoded. A `std`
/// static even under loom: never used inside a model.
static DYNAMIC_NAMES: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());

fn name_id(name: &'static str) -> u32 {
    if let Some(i) = KNOWN_NAMES.iter().position(|k| *k == name) {
        return i as u32;
    }
    let mut names = DYNAMIC_NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let i = match names.iter().position(|k| *k == name) {
        Some(i) => i,
        None => {
            names.push(name);
            names.len() - 1
        }
    };
    (KNOWN_NAMES.len() + i) as u32
}

fn id_name(id: u32) -> Option<&'static str> {
    let id = id as usize;
    if id < KNOWN_NAMES.len() {
        return Some(KNOWN_NAMES[id]);
    }
    let names = DYNAMIC_NAMES.lock().unwrap_or_else(|e| e.into_inner());
    names.get(id - KNOWN_NAMES.len()).copied()
}

#[cfg(not(loom))]
pub use registry::*;

/// The backend status array and the per-thread current slot. Outside the loom model:
/// these are `std` statics and thread-locals (loom's atomics cannot be in a `static`),
/// and they carry no synchronization anyone relies on: a reader of a slot gets a
/// sample, never a guarantee.
#[cfg(not(loom))]
mod registry {
    use super::{WaitEvent, NO_WAIT};
    use crate::pgstat::lwlock_stats::Acquisitions;
    use crate::pgstat::usage::UsageCounters;
    use crate::pgstat::BackendId;
    use crate::{Error, Result};
    use std::cell::Cell;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::OnceLock;

    /// Capacity used when a backend registers before anyone called
    /// [`init_backend_status`] (tests, tools).
    pub const DEFAULT_MAX_BACKENDS: usize = 1024;

    /// One backend's slot: its current wait event (the raw [`WaitEvent::to_raw`])
    /// and, once a backend has registered on it, its counters. Written only by the
    /// thread registered on it, read by anyone.
    ///
    /// The array has a slot for every possible backend (max_connections plus the
    /// auxiliary threads), so a slot is kept small (24 bytes: 2.4 MB at
    /// max_connections = 100000): the counters, about 450 bytes, are allocated by
    /// the first backend that registers on the slot and kept for its successors.
    pub struct BackendSlot {
        wait: AtomicU32,
        counters: OnceLock<Box<SlotCounters>>,
    }

    impl BackendSlot {
        /// The slot's counters; `None` if no backend ever registered on it.
        pub(crate) fn counters(&self) -> Option<&SlotCounters> {
            self.counters.get().map(|b| &**b)
        }
    }

    /// A backend's counters: its LWLock acquisitions and what it used. Cache-line
    /// aligned so that two backends' counters never share a line.
    #[repr(align(64))]
    #[derive(Default)]
    pub struct SlotCounters {
        /// Cumulative per slot (they stay when a new backend registers).
        pub(crate) lwlocks: Acquisitions,
        /// What the backend used (WAL, buffers, temporary files): zeroed when a
        /// backend registers on the slot.
        pub(crate) usage: UsageCounters,
    }

    /// The calling thread's slot and its counters.
    #[derive(Clone, Copy)]
    struct Mine {
        slot: &'static BackendSlot,
        counters: &'static SlotCounters,
    }

    /// One slot per backend.
    static STATUS: OnceLock<Box<[BackendSlot]>> = OnceLock::new();

    thread_local! {
        /// The calling thread's slot, if it registered as a backend. Per thread,
        /// not per session: it binds the thread to the backend it runs (a backend
        /// is one thread for its life, and a thread is registered on one slot at a
        /// time), so that code with no backend at hand (an LWLock acquisition, a
        /// wait, a WAL insertion, `mark_dirty`) finds the slot to count into. The
        /// per-backend state itself is in the slot, and whoever holds the backend
        /// reads it by number.
        static MY_SLOT: Cell<Option<Mine>> = const { Cell::new(None) };
    }

    fn array() -> &'static [BackendSlot] {
        STATUS.get_or_init(|| make(DEFAULT_MAX_BACKENDS))
    }

    fn make(n: usize) -> Box<[BackendSlot]> {
        (0..n).map(|_| BackendSlot { wait: AtomicU32::new(NO_WAIT), counters: OnceLock::new() }).collect()
    }

    /// Every slot (for the per-tranche sums of `lwlock_stats`).
    pub(crate) fn slots() -> &'static [BackendSlot] {
        array()
    }

    /// Calls `f` with the calling thread's counters (`None` if it is not a
    /// registered backend): one thread-local read.
    #[inline]
    pub(crate) fn with_my_counters<R>(f: impl FnOnce(Option<&'static SlotCounters>) -> R) -> R {
        MY_SLOT.with(|s| f(s.get().map(|m| m.counters)))
    }

    /// Sizes the backend status array (call once at startup with the maximum number
    /// of backends). The first call wins; returns the capacity actually in use.
    pub fn init_backend_status(max_backends: usize) -> usize {
        STATUS.get_or_init(|| make(max_backends.max(1))).len()
    }

    /// Number of slots of the backend status array.
    pub fn backend_status_capacity() -> usize {
        array().len()
    }

    /// Makes the calling thread backend `id`: its wait events go to slot `id` from
    /// now on. The slot starts as "not waiting". Fails if `id` is beyond the array.
    pub fn register_backend(id: BackendId) -> Result<()> {
        let arr = array();
        let slot = arr.get(id.0 as usize).ok_or_else(|| {
            Error::internal(format!(
                "backend id {} out of range (backend status array has {} slots)",
                id.0,
                arr.len()
            ))
        })?;
        // Relaxed: the slot is a diagnostic sample; no other data is published with it.
        slot.wait.store(NO_WAIT, Ordering::Relaxed);
        // The usage counters are the new backend's (the LWLock counts are cumulative
        // per slot and stay). We own the slot from here: the backend number was handed
        // out under a lock that its previous holder released after unregistering.
        let counters: &'static SlotCounters = slot.counters.get_or_init(Box::default);
        counters.usage.reset();
        MY_SLOT.with(|s| s.set(Some(Mine { slot, counters })));
        Ok(())
    }

    /// Detaches the calling thread from its slot (clearing it). Wait events of this
    /// thread are not reported any more.
    pub fn unregister_backend() {
        MY_SLOT.with(|s| {
            if let Some(Mine { slot, .. }) = s.take() {
                // Relaxed: diagnostic sample only.
                slot.wait.store(NO_WAIT, Ordering::Relaxed);
            }
        });
    }

    /// Records that the calling backend starts waiting for `ev`. A no-op (one
    /// thread-local read) if the thread is not a registered backend.
    #[inline]
    pub fn report_wait_start(ev: WaitEvent) {
        MY_SLOT.with(|s| {
            if let Some(Mine { slot, .. }) = s.get() {
                // Relaxed: diagnostic sample only; readers accept any recent value.
                slot.wait.store(ev.to_raw(), Ordering::Relaxed);
            }
        });
    }

    /// Records that the calling backend's wait ended.
    #[inline]
    pub fn report_wait_end() {
        MY_SLOT.with(|s| {
            if let Some(Mine { slot, .. }) = s.get() {
                // Relaxed: diagnostic sample only.
                slot.wait.store(NO_WAIT, Ordering::Relaxed);
            }
        });
    }

    /// What backend `id` is waiting for right now (a sample: it may have stopped
    /// waiting by the time the caller looks). `None` if not waiting or out of range.
    pub fn current_wait_event(id: BackendId) -> Option<WaitEvent> {
        let slot = array().get(id.0 as usize)?;
        // Relaxed: a sample; see report_wait_start.
        WaitEvent::from_raw(slot.wait.load(Ordering::Relaxed))
    }

    /// Every backend currently waiting, with its event (a sample, slot by slot, not
    /// an atomic snapshot of all slots): what a pg_stat_activity scan or a wait-event
    /// sampler reads.
    pub fn waiting_backends() -> Vec<(BackendId, WaitEvent)> {
        array()
            .iter()
            .enumerate()
            .filter_map(|(i, slot)| {
                // Relaxed: a sample.
                let ev = WaitEvent::from_raw(slot.wait.load(Ordering::Relaxed))?;
                Some((BackendId(i as u32), ev))
            })
            .collect()
    }
}

/// Under loom the registry is not compiled: reporting is a no-op, so the lock code
/// that calls it is model-checked without std statics.
#[cfg(loom)]
#[inline]
pub fn report_wait_start(_ev: WaitEvent) {}

/// See the `cfg(loom)` [`report_wait_start`].
#[cfg(loom)]
#[inline]
pub fn report_wait_end() {}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::pgstat::BackendId;

    #[test]
    fn raw_encoding_round_trips() {
        let events = [
            WaitEvent::LwLock(Tranche::BufferMapping),
            WaitEvent::LwLock(Tranche::Test),
            WaitEvent::SPIN_DELAY,
            WaitEvent::Io("DataFileRead"),
            WaitEvent::Lock("relation"),
            WaitEvent::Ipc("SomeEventNotInTheTable"),
            WaitEvent::Activity("AnotherDynamicName"),
        ];
        for ev in events {
            let raw = ev.to_raw();
            assert_ne!(raw, NO_WAIT, "{ev:?}");
            assert_eq!(WaitEvent::from_raw(raw), Some(ev));
        }
        assert_eq!(WaitEvent::from_raw(NO_WAIT), None);
        // Same dynamic name, same id.
        assert_eq!(WaitEvent::Ipc("SomeEventNotInTheTable").to_raw(),
                   WaitEvent::Ipc("SomeEventNotInTheTable").to_raw());
    }

    #[test]
    fn unregistered_thread_reports_nothing() {
        std::thread::spawn(|| {
            report_wait_start(WaitEvent::SPIN_DELAY);
            report_wait_end();
        })
        .join()
        .unwrap();
    }

    #[test]
    fn registered_backend_is_visible_from_another_thread() {
        let id = BackendId(1001);
        let (tx, rx) = std::sync::mpsc::channel();
        let (tx2, rx2) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            register_backend(id).unwrap();
            report_wait_start(WaitEvent::Io("WALSync"));
            tx.send(()).unwrap();
            rx2.recv().unwrap();
            report_wait_end();
            tx.send(()).unwrap();
            rx2.recv().unwrap();
            unregister_backend();
        });
        rx.recv().unwrap();
        assert_eq!(current_wait_event(id), Some(WaitEvent::Io("WALSync")));
        assert!(waiting_backends().contains(&(id, WaitEvent::Io("WALSync"))));
        tx2.send(()).unwrap();
        rx.recv().unwrap();
        assert_eq!(current_wait_event(id), None);
        tx2.send(()).unwrap();
        t.join().unwrap();
    }

    #[test]
    fn out_of_range_backend_is_an_error() {
        let cap = backend_status_capacity();
        assert!(register_backend(BackendId(cap as u32)).is_err());
        assert_eq!(current_wait_event(BackendId(cap as u32 + 5)), None);
    }
}
