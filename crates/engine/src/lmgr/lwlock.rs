//! LWLocks: shared/exclusive locks for short critical sections over shared structures.
//!
//! PLACEHOLDER API (skeleton): backed by std's RwLock until the atomic-state-word
//! implementation of issue 2 replaces it. The public API below is the contract other
//! modules code against: `LwLock::new(Tranche)`, `shared()`, `exclusive()`,
//! `try_exclusive()`, guards that release on drop.

use crate::pgstat::wait_event::WaitEvent;

/// LWLock tranches: which family a lock belongs to. The name is what
/// pg_stat_activity.wait_event shows while a backend waits on it (PostgreSQL 15's
/// names).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u16)]
pub enum Tranche {
    BufferMapping,
    BufferContent,
    BufferIo,
    WalInsert,
    WalWrite,
    LockManager,
    LockFastPath,
    ProcArray,
    XactSlru,
    XactBuffer,
    CheckpointerComm,
    XidGen,
    /// Locks made by tests and benchmarks.
    Test,
}

impl Tranche {
    pub fn name(self) -> &'static str {
        match self {
            Tranche::BufferMapping => "BufferMapping",
            Tranche::BufferContent => "BufferContent",
            Tranche::BufferIo => "BufferIO",
            Tranche::WalInsert => "WALInsert",
            Tranche::WalWrite => "WALWrite",
            Tranche::LockManager => "LockManager",
            Tranche::LockFastPath => "LockFastPath",
            Tranche::ProcArray => "ProcArray",
            Tranche::XactSlru => "XactSLRU",
            Tranche::XactBuffer => "XactBuffer",
            Tranche::CheckpointerComm => "CheckpointerComm",
            Tranche::XidGen => "XidGen",
            Tranche::Test => "Test",
        }
    }

    pub fn wait_event(self) -> WaitEvent {
        WaitEvent::LwLock(self)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LwLockMode {
    Shared,
    Exclusive,
}

pub struct LwLock {
    tranche: Tranche,
    inner: std::sync::RwLock<()>,
}

pub enum LwLockGuard<'a> {
    Shared(#[allow(dead_code)] std::sync::RwLockReadGuard<'a, ()>),
    Exclusive(#[allow(dead_code)] std::sync::RwLockWriteGuard<'a, ()>),
}

impl LwLock {
    pub fn new(tranche: Tranche) -> LwLock {
        LwLock { tranche, inner: std::sync::RwLock::new(()) }
    }

    pub fn tranche(&self) -> Tranche {
        self.tranche
    }

    pub fn shared(&self) -> LwLockGuard<'_> {
        LwLockGuard::Shared(self.inner.read().unwrap_or_else(|e| e.into_inner()))
    }

    pub fn exclusive(&self) -> LwLockGuard<'_> {
        LwLockGuard::Exclusive(self.inner.write().unwrap_or_else(|e| e.into_inner()))
    }

    pub fn acquire(&self, mode: LwLockMode) -> LwLockGuard<'_> {
        match mode {
            LwLockMode::Shared => self.shared(),
            LwLockMode::Exclusive => self.exclusive(),
        }
    }

    pub fn try_exclusive(&self) -> Option<LwLockGuard<'_>> {
        self.inner.try_write().ok().map(LwLockGuard::Exclusive)
    }
}
