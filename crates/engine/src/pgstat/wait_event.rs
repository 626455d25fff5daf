//! Wait events: what a backend is waiting for, as pg_stat_activity shows it.
//!
//! PLACEHOLDER API (skeleton): the real per-backend slots come with issue 2's LWLock
//! work. Contract: `report_wait_start(ev)` before blocking, `report_wait_end()` after;
//! `WaitEvent::type_name()` / `name()` give pg_stat_activity's wait_event_type and
//! wait_event.

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

impl WaitEvent {
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
}

/// Records that the calling backend starts waiting for `ev`.
pub fn report_wait_start(_ev: WaitEvent) {}

/// Records that the calling backend's wait ended.
pub fn report_wait_end() {}
