#![doc = include_str!("README.md")]

pub mod group;

#[cfg(not(loom))]
pub mod clog;
#[cfg(not(loom))]
pub mod multixact;
pub mod pending_delete;
#[cfg(not(loom))]
pub mod procarray;
#[cfg(not(loom))]
pub mod snapshot;
#[cfg(not(loom))]
pub mod subtrans;
#[cfg(not(loom))]
pub mod visibility;
#[cfg(not(loom))]
pub mod xact;
#[cfg(not(loom))]
pub mod xid;

#[cfg(not(loom))]
pub use self::{
    clog::{Clog, XidStatus},
    procarray::ProcArray,
    snapshot::Snapshot,
    visibility::{HtsvResult, TmResult, TupleVisibilityInfo, XidOracle},
    xact::{IsolationLevel, TransactionManager, TxnConfig, TxnShared},
    xid::{CommandId, FullTransactionId, TransactionId},
};

#[cfg(not(loom))]
pub use self::wal_hooks::*;

#[cfg(not(loom))]
mod wal_hooks {
    use crate::storage::Lsn;
    use crate::Result;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Mutex;

    /// Which resource manager a record of ours belongs to.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum TxnRmgr {
        /// Transaction commit/abort records (PostgreSQL's RM_XACT_ID);
        /// replay with [`crate::txn::TxnShared::redo_xact`].
        Xact,
        /// Commit-log page zeroing and truncation (RM_CLOG_ID);
        /// replay with [`crate::txn::Clog::redo`].
        Clog,
        /// MultiXact creation (RM_MULTIXACT_ID); replay with
        /// [`crate::txn::multixact::MultiXacts::redo`].
        MultiXact,
    }

    /// What the transaction layer needs from the WAL. The integrator implements it
    /// over `wal::` (insert a record with an rmgr id and payload bytes; flush).
    pub trait XactWal: Send + Sync {
        /// Inserts a record; returns the LSN just past its end (what must be
        /// flushed for the record to be durable).
        fn insert(&self, rmgr: TxnRmgr, payload: &[u8]) -> Result<Lsn>;
        /// Returns once WAL up to `upto` is durable.
        fn flush(&self, upto: Lsn) -> Result<()>;
        /// How far the WAL is known durable (for the hint-bit LSN interlock).
        fn flushed_upto(&self) -> Lsn;
    }

    /// An in-memory WAL for tests and benchmarks: records are kept, LSNs count
    /// bytes. With `auto_flush` every insert is immediately durable; without it
    /// only an explicit `flush` advances the durable point.
    pub struct MemWal {
        next: AtomicU64,
        flushed: AtomicU64,
        auto_flush: AtomicBool,
        keep: bool,
        records: Mutex<Vec<(TxnRmgr, Lsn, Vec<u8>)>>,
    }

    impl MemWal {
        pub fn new(keep_records: bool) -> MemWal {
            MemWal {
                next: AtomicU64::new(1),
                flushed: AtomicU64::new(1),
                auto_flush: AtomicBool::new(true),
                keep: keep_records,
                records: Mutex::new(Vec::new()),
            }
        }
        pub fn set_auto_flush(&self, on: bool) {
            self.auto_flush.store(on, Ordering::SeqCst);
        }
        /// Every record inserted so far (when created with `keep_records`).
        pub fn records(&self) -> Vec<(TxnRmgr, Lsn, Vec<u8>)> {
            self.records.lock().unwrap_or_else(|e| e.into_inner()).clone()
        }
    }

    impl XactWal for MemWal {
        fn insert(&self, rmgr: TxnRmgr, payload: &[u8]) -> Result<Lsn> {
            let end = self.next.fetch_add(payload.len() as u64 + 24, Ordering::SeqCst)
                + payload.len() as u64
                + 24;
            if self.keep {
                self.records.lock().unwrap_or_else(|e| e.into_inner()).push((
                    rmgr,
                    Lsn(end),
                    payload.to_vec(),
                ));
            }
            if self.auto_flush.load(Ordering::SeqCst) {
                self.flushed.fetch_max(end, Ordering::SeqCst);
            }
            Ok(Lsn(end))
        }
        fn flush(&self, upto: Lsn) -> Result<()> {
            self.flushed.fetch_max(upto.0, Ordering::SeqCst);
            Ok(())
        }
        fn flushed_upto(&self) -> Lsn {
            Lsn(self.flushed.load(Ordering::SeqCst))
        }
    }

    /// The hook to the heavyweight lock manager (lmgr/lock.rs), called at the end
    /// of the commit/abort sequence and around subtransactions. The lock manager
    /// also owns *transaction-id locks*: a backend that must wait for a running
    /// transaction (a `TmResult::BeingModified` tuple, a unique-index conflict from
    /// `satisfies_dirty`) waits on the xid lock that [`XactLocks::xid_assigned`]
    /// took; this module never blocks on another transaction itself.
    pub trait XactLocks: Send + Sync {
        /// A top transaction started: take the virtualxid lock.
        fn xact_started(&self, _backend: u32) {}
        /// `xid` was just assigned to `backend`'s (sub)transaction at nesting
        /// `level` (1 = top): take the exclusive lock on it, owned by that level
        /// (PostgreSQL's XactLockTableInsert).
        fn xid_assigned(&self, _backend: u32, _xid: u32, _level: u32) {}
        /// The subtransaction `xid` was rolled back: release its xid lock.
        fn subxact_aborted(&self, _backend: u32, _xid: u32) {}
        /// A savepoint opened nesting `level` (2 = the first one).
        fn subxact_started(&self, _backend: u32, _level: u32) {}
        /// RELEASE SAVEPOINT: levels `level` and deeper merged into level - 1,
        /// which takes over their locks.
        fn subxact_committed(&self, _backend: u32, _level: u32) {}
        /// ROLLBACK TO SAVEPOINT: levels `level` and deeper aborted; release the
        /// locks they took (after clog marks them aborted).
        fn subxact_rolled_back(&self, _backend: u32, _level: u32) {}
        /// The top transaction ended (after clog and ProcArray are updated):
        /// release every lock it holds, waking xid-lock waiters. `top_xid` is 0
        /// (InvalidTransactionId) for a transaction that never got an xid.
        fn xact_ended(&self, _backend: u32, _top_xid: u32, _committed: bool) {}
        /// The backend's pid and current virtual transaction
        /// ("<backend>/<lxid>") for pg_locks' SIReadLock rows.
        /// Takes a pending cancel request of `backend` (a wait outside the
        /// lock manager, such as a deferrable transaction's safe snapshot).
        fn take_cancel(&self, _backend: u32) -> bool {
            false
        }
        fn vxid(&self, backend: u32) -> (i32, String) {
            (0, format!("{backend}/0"))
        }
    }

    /// No lock manager: for tests and benchmarks.
    pub struct NoLocks;
    impl XactLocks for NoLocks {}
}
