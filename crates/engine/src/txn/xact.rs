//! Transactions as a backend sees them: begin/commit/abort, savepoints
//! (subtransactions), command ids, the snapshot each statement uses, and the
//! commit sequence (README, "Commit ordering").
//!
//! [`TxnShared`] is the shared part (xid generator, clog, subtrans, ProcArray,
//! hooks to WAL and lock manager), one per server. [`TransactionManager`] is a
//! backend's own state, used only by that backend's thread.

use super::clog::{encode_abort_record, encode_commit_record, Clog, XidStatus, DEFAULT_CLOG_BUFFERS};
use super::procarray::{InProgress, ProcArray};
use super::snapshot::Snapshot;
use super::subtrans::SubTrans;
use super::visibility::{ComboCids, TupleVisibilityInfo, XidOracle};
use super::xid::*;
use super::{NoLocks, TxnRmgr, XactLocks, XactWal};
use crate::error::{Error, Result, SqlState};
use crate::pgstat::BackendId;
use crate::storage::Lsn;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Transaction isolation levels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum IsolationLevel {
    /// A new snapshot for every statement (PostgreSQL's default).
    #[default]
    ReadCommitted,
    /// One snapshot for the whole transaction, taken at its first statement.
    RepeatableRead,
    /// RepeatableRead's snapshot plus Serializable Snapshot Isolation:
    /// SIREAD locks and rw-conflict checks (`lmgr::predicate`).
    Serializable,
}

/// Settings of the transaction layer.
#[derive(Clone, Debug)]
pub struct TxnConfig {
    /// Directory of the commit log (PGDATA/pg_xact).
    pub clog_dir: PathBuf,
    /// Buffers of the clog SLRU pool.
    pub clog_buffers: usize,
    /// Backend slots (max_connections + auxiliary processes).
    pub max_backends: usize,
    /// Wait for the commit record to be durable before reporting commit.
    pub synchronous_commit: bool,
    /// Group update of the clog when its lock is busy.
    pub clog_group_update: bool,
    /// Group xid clearing in the ProcArray when its lock is busy.
    pub procarray_group_clear: bool,
    /// Reuse a backend's last snapshot while no transaction has completed.
    pub snapshot_cache: bool,
    /// Predicate-lock promotion thresholds (max_pred_locks_per_*).
    pub pred: crate::lmgr::predicate::PredConfig,
}

impl TxnConfig {
    pub fn new(clog_dir: impl Into<PathBuf>, max_backends: usize) -> TxnConfig {
        TxnConfig {
            clog_dir: clog_dir.into(),
            clog_buffers: DEFAULT_CLOG_BUFFERS,
            max_backends,
            synchronous_commit: true,
            clog_group_update: true,
            procarray_group_clear: true,
            snapshot_cache: true,
            pred: Default::default(),
        }
    }
}

/// The shared transaction state of the server.
pub struct TxnShared {
    pub xidgen: XidGenerator,
    pub clog: Clog,
    pub subtrans: Arc<SubTrans>,
    pub procarray: ProcArray,
    /// Members of the multixacts that still matter (txn::multixact).
    pub multixacts: super::multixact::MultiXacts,
    wal: Arc<dyn XactWal>,
    locks: Arc<dyn XactLocks>,
    synchronous_commit: AtomicBool,
    snapshot_cache: AtomicBool,
    /// Removes a relation's buffers and files at the end of a transaction
    /// (`txn::pending_delete`); set once by the engine.
    dropper: std::sync::OnceLock<super::pending_delete::FileDropper>,
    /// Catalog-cache invalidation messages of committed transactions (`sinval`).
    pub sinval: crate::sinval::InvalQueue,
    /// SIREAD locks and the rw-conflict graph of serializable transactions.
    pub predicate: crate::lmgr::predicate::PredicateLockManager,
}

/// Microseconds since 2000-01-01 UTC (PostgreSQL's TimestampTz).
pub fn now_timestamp() -> i64 {
    let unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0);
    unix - 946_684_800_000_000
}

impl TxnShared {
    /// Opens the transaction layer. `next` is the next xid to hand out (from
    /// the checkpoint; `FullTransactionId::FIRST_NORMAL` for a new cluster).
    pub fn open(
        cfg: &TxnConfig,
        next: FullTransactionId,
        wal: Arc<dyn XactWal>,
        locks: Option<Arc<dyn XactLocks>>,
    ) -> Result<Arc<TxnShared>> {
        let subtrans = Arc::new(SubTrans::new());
        let clog = Clog::open(
            &cfg.clog_dir,
            cfg.clog_buffers,
            cfg.max_backends,
            cfg.clog_group_update,
            wal.clone(),
        )?;
        let procarray = ProcArray::new(cfg.max_backends, next, subtrans.clone());
        procarray.set_group_clear(cfg.procarray_group_clear);
        // pg_multixact sits beside pg_xact.
        let mx_dir = cfg.clog_dir.parent().map_or_else(|| "pg_multixact".into(), |p| p.join("pg_multixact"));
        let multixacts = super::multixact::MultiXacts::open(mx_dir)?;
        Ok(Arc::new(TxnShared {
            multixacts,
            xidgen: XidGenerator::new(next),
            clog,
            subtrans,
            procarray,
            wal,
            locks: locks.unwrap_or_else(|| Arc::new(NoLocks)),
            synchronous_commit: AtomicBool::new(cfg.synchronous_commit),
            snapshot_cache: AtomicBool::new(cfg.snapshot_cache),
            dropper: std::sync::OnceLock::new(),
            sinval: crate::sinval::InvalQueue::new(),
            predicate: crate::lmgr::predicate::PredicateLockManager::new(cfg.pred),
        }))
    }

    /// Installs the function that removes a dropped relation's buffers and
    /// files (`txn::pending_delete`). Only the first call counts.
    pub fn set_file_dropper(&self, f: super::pending_delete::FileDropper) {
        let _ = self.dropper.set(f);
    }

    fn drop_files(&self, rels: Vec<crate::storage::RelFileLocator>) {
        // SIREAD locks on files that are gone protect nothing: a rewrite
        // moved them to the relation's new file first (`predicate`,
        // transfer_to_relations), and no write can reach these files again.
        self.predicate.transfer_to_relations(&rels, &[]);
        if let Some(f) = self.dropper.get() {
            for r in rels {
                f(r);
            }
        }
    }

    /// A backend's transaction manager (registers it in the ProcArray).
    pub fn backend(self: &Arc<Self>, id: BackendId) -> Result<TransactionManager> {
        self.procarray.register(id)?;
        Ok(TransactionManager {
            shared: self.clone(),
            backend: id,
            isolation: IsolationLevel::ReadCommitted,
            stack: Vec::new(),
            xact_snapshot: None,
            cached_snapshot: None,
            curcid: FIRST_COMMAND_ID,
            combo: ComboCids::default(),
            latest_xid: None,
            pending_deletes: Default::default(),
            pgstat: Default::default(),
            sxact: None,
            read_only: false,
            deferrable: false,
            pending_invals: Vec::new(),
        })
    }

    pub fn set_synchronous_commit(&self, on: bool) {
        self.synchronous_commit.store(on, Ordering::Relaxed);
    }
    pub fn set_snapshot_cache(&self, on: bool) {
        self.snapshot_cache.store(on, Ordering::Relaxed);
    }

    /// The next full xid (for the checkpoint record).
    pub fn next_full_xid(&self) -> FullTransactionId {
        self.xidgen.next_full_xid()
    }

    /// Sets the next full xid (recovery); everything before it is completed.
    pub fn set_next_full_xid(&self, next: FullTransactionId) {
        self.xidgen.set_next_full_xid(next);
        self.procarray.set_latest_completed(self.xidgen.next_full_xid());
    }

    /// Sets the oldest unfrozen xid of the cluster and its database (drives the
    /// wraparound stop limit).
    pub fn set_oldest_frozen_xid(&self, xid: TransactionId, db: &str) {
        self.xidgen.set_oldest_frozen_xid(xid, db);
    }

    /// The oldest unfrozen xid of the cluster: older xids' status may be gone
    /// from the clog.
    pub fn oldest_frozen_xid(&self) -> TransactionId {
        self.xidgen.oldest_frozen_xid()
    }

    /// The xmin horizon for VACUUM.
    pub fn oldest_xmin(&self) -> TransactionId {
        self.procarray.oldest_xmin()
    }

    /// Is `xid` running? A subxid found only through its running top (subxid
    /// cache overflow) is not running if the clog says it aborted (ROLLBACK TO
    /// SAVEPOINT). A clog read error answers "running" (the conservative answer;
    /// the status lookup that follows reports the error).
    pub fn xid_in_progress(&self, xid: TransactionId) -> bool {
        match self.procarray.xid_in_progress_detail(xid) {
            InProgress::No => false,
            InProgress::Yes => true,
            InProgress::TopRunning => !matches!(self.clog.xid_status(xid), Ok(XidStatus::Aborted)),
        }
    }

    /// Final status of `xid`, sub-committed resolved through its parent.
    pub fn xid_status(&self, xid: TransactionId) -> Result<XidStatus> {
        let s = self.clog.xid_status(xid)?;
        if s != XidStatus::SubCommitted {
            return Ok(s);
        }
        match self.subtrans.parent(xid) {
            // Parent link lost: the tree was running at a crash.
            None => Ok(XidStatus::Aborted),
            Some(p) => match self.xid_status(p)? {
                XidStatus::SubCommitted => Ok(XidStatus::InProgress),
                other => Ok(other),
            },
        }
    }

    /// Before redo: missing clog pages read as zeroes (redo re-creates them).
    pub fn begin_recovery(&self) {
        self.clog.set_in_recovery(true);
    }

    /// After redo (or at startup without redo, once `set_next_full_xid` was
    /// called): the clog page of the next xid is made resident and the bits of
    /// never-assigned xids on it cleared (PostgreSQL's TrimCLOG).
    pub fn end_recovery(&self) -> Result<()> {
        self.clog.set_in_recovery(false);
        self.clog.trim(self.next_full_xid().xid())
    }

    /// Replays an Xact (commit/abort) record: clog status, and next xid past it.
    pub fn redo_xact(&self, payload: &[u8]) -> Result<()> {
        let rec = self.clog.redo_xact(payload)?;
        let mut max = rec.xid;
        for &s in &rec.subxids {
            max = xid_max(max, s);
        }
        self.xidgen.advance_past(max);
        Ok(())
    }

    /// Checkpoint: writes the clog's dirty pages and drops old subtrans links.
    pub fn checkpoint(&self) -> Result<()> {
        self.subtrans.truncate(self.oldest_xmin());
        self.clog.flush()?;
        let running = |x: TransactionId| self.xid_in_progress(x);
        let aborted = |x: TransactionId| !matches!(self.xid_status(x), Ok(XidStatus::Committed | XidStatus::InProgress));
        self.multixacts.checkpoint(&|m| super::multixact::worth_keeping(m, &running, &aborted))
    }

    /// Creates a multixact of `members` and WAL-logs it (before the caller logs the
    /// heap change that stores its id: redo meets the creation first).
    pub fn create_multixact(&self, members: &[super::multixact::Member]) -> Result<super::multixact::MultiXactId> {
        let id = self.multixacts.create(members);
        self.wal.insert(TxnRmgr::MultiXact, &super::multixact::encode_create(id, members))?;
        Ok(id)
    }

    /// Truncates the clog below the oldest unfrozen xid (after VACUUM advanced it).
    pub fn truncate_clog(&self, oldest_frozen: TransactionId) -> Result<()> {
        self.clog.truncate(oldest_frozen)
    }

    fn hint_allowed(&self, xid: TransactionId) -> bool {
        let lsn = self.clog.commit_lsn_for(xid);
        !lsn.is_valid() || self.wal.flushed_upto() >= lsn
    }
}

/// One level of the transaction-state stack (PostgreSQL's TransactionState).
#[derive(Debug)]
struct TransactionState {
    /// Savepoint name (None for the top level).
    name: Option<String>,
    /// Assigned lazily, at the first write.
    xid: Option<FullTransactionId>,
    /// Xids of subtransactions released into this level (committed children and
    /// their descendants): they commit or abort with it.
    children: Vec<TransactionId>,
}

/// A backend's transaction state.
pub struct TransactionManager {
    shared: Arc<TxnShared>,
    backend: BackendId,
    isolation: IsolationLevel,
    /// Empty when no transaction is open; [0] is the top level.
    stack: Vec<TransactionState>,
    /// Repeatable read: the transaction snapshot.
    xact_snapshot: Option<Snapshot>,
    /// The last snapshot computed, for reuse while nothing completed.
    cached_snapshot: Option<Snapshot>,
    curcid: CommandId,
    combo: ComboCids,
    /// Latest xid assigned in the tree (for latestCompletedXid).
    latest_xid: Option<FullTransactionId>,
    /// Relation files to remove when the transaction ends (`txn::pending_delete`).
    pub pending_deletes: super::pending_delete::PendingDeletes,
    /// Catalog-cache invalidations this transaction registered: sent to every
    /// backend if it commits, dropped if it aborts (`sinval`). Per top-level
    /// transaction, like `pending_deletes`: a ROLLBACK TO keeps them (an extra
    /// invalidation only costs a cache miss).
    pending_invals: Vec<crate::sinval::InvalMessage>,
    /// SERIALIZABLE: this transaction's record in the predicate-lock manager,
    /// from its first snapshot to its end. `None` for other isolation levels.
    sxact: Option<Arc<crate::lmgr::predicate::SerializableXact>>,
    /// READ ONLY (transaction_read_only), told by the SQL layer before the
    /// first snapshot.
    read_only: bool,
    /// DEFERRABLE (transaction_deferrable).
    deferrable: bool,
    /// The backend's pending cumulative statistics (`pgstat::tabstat`): counted
    /// by the heap and the scans, folded here at commit and abort, flushed by
    /// `Backend::pgstat_report`.
    pub pgstat: crate::pgstat::tabstat::BackendStats,
}

fn no_xact() -> Error {
    Error::user(SqlState(*b"25P01"), "there is no transaction in progress")
}

fn no_savepoint(name: &str) -> Error {
    Error::user(SqlState(*b"3B001"), format!("savepoint \"{name}\" does not exist"))
}

impl TransactionManager {
    pub fn backend_id(&self) -> BackendId {
        self.backend
    }
    pub fn shared(&self) -> &Arc<TxnShared> {
        &self.shared
    }
    pub fn in_transaction(&self) -> bool {
        !self.stack.is_empty()
    }
    pub fn isolation(&self) -> IsolationLevel {
        self.isolation
    }
    /// Nesting depth: 1 for the top level, 2 inside the first savepoint, ...
    pub fn nesting_level(&self) -> usize {
        self.stack.len()
    }

    /// Starts a transaction.
    pub fn begin(&mut self, isolation: IsolationLevel) -> Result<()> {
        if self.in_transaction() {
            return Err(Error::user(SqlState(*b"25001"), "there is already a transaction in progress"));
        }
        self.isolation = isolation;
        self.read_only = false;
        self.deferrable = false;
        self.stack.push(TransactionState { name: None, xid: None, children: Vec::new() });
        self.curcid = FIRST_COMMAND_ID;
        self.xact_snapshot = None;
        self.latest_xid = None;
        self.combo.reset();
        self.shared.locks.xact_started(self.backend.0);
        Ok(())
    }

    /// The transaction's access mode (READ ONLY) and DEFERRABLE, before its
    /// first snapshot.
    pub fn set_access_mode(&mut self, read_only: bool, deferrable: bool) {
        self.read_only = read_only;
        self.deferrable = deferrable;
    }

    /// SERIALIZABLE READ ONLY DEFERRABLE: waits until a snapshot is safe (no
    /// read-write serializable transaction that overlaps it commits with a
    /// conflict out to one committed before it), then runs on it without
    /// predicate locks or serialization failures (PostgreSQL's
    /// GetSafeSnapshot). A cancel request ends the wait with 57014.
    fn safe_snapshot(&mut self) -> Result<Snapshot> {
        use crate::lmgr::predicate::SnapshotSafety;
        let sh = self.shared.clone();
        loop {
            let (pid, vxid) = sh.locks.vxid(self.backend.0);
            let sx = sh.predicate.register(pid, vxid, true);
            let s = sh.procarray.get_snapshot(self.backend, self.curcid, None)?;
            let writers = sh.predicate.running_writers(&sx);
            let mut sleep_us = 100;
            let safety = loop {
                match sh.predicate.snapshot_safety(&sx, &writers) {
                    SnapshotSafety::Pending => {}
                    done => break done,
                }
                if sh.locks.take_cancel(self.backend.0) {
                    sh.predicate.release(&sx, false);
                    return Err(Error::user(SqlState::QUERY_CANCELED, "canceling statement due to user request"));
                }
                std::thread::sleep(std::time::Duration::from_micros(sleep_us));
                sleep_us = (sleep_us * 2).min(10_000);
            };
            sh.predicate.release(&sx, false);
            if safety == SnapshotSafety::Safe {
                self.cached_snapshot = Some(s.clone());
                self.xact_snapshot = Some(s.clone());
                return Ok(s);
            }
        }
    }

    /// The serializable transaction's predicate-lock record, if this is a
    /// SERIALIZABLE transaction that took its snapshot: the one branch every
    /// SSI hook tests first.
    #[inline]
    pub fn serializable_xact(&self) -> Option<&Arc<crate::lmgr::predicate::SerializableXact>> {
        self.sxact.as_ref()
    }

    /// The current command id (cmin of rows inserted now, cmax of rows deleted).
    pub fn current_command_id(&self) -> CommandId {
        self.curcid
    }

    /// Makes the changes of the current command visible to the next one.
    pub fn command_counter_increment(&mut self) -> Result<()> {
        self.curcid = next_command_id(self.curcid)?;
        Ok(())
    }

    /// The snapshot for the next statement: a new one per statement in READ
    /// COMMITTED, the transaction's one (taken at its first statement) in
    /// REPEATABLE READ / SERIALIZABLE. `curcid` is the current command id.
    pub fn statement_snapshot(&mut self) -> Result<Snapshot> {
        if !self.in_transaction() {
            return Err(no_xact());
        }
        if self.isolation != IsolationLevel::ReadCommitted {
            if let Some(s) = &self.xact_snapshot {
                let mut s = s.clone();
                s.curcid = self.curcid;
                return Ok(s);
            }
        }
        if self.isolation == IsolationLevel::Serializable && self.read_only && self.deferrable {
            return self.safe_snapshot();
        }
        if self.isolation == IsolationLevel::Serializable && self.sxact.is_none() {
            // Registered before the snapshot is taken (README of lmgr,
            // "Predicate locks and SSI": commit numbers vs snapshots).
            let (pid, vxid) = self.shared.locks.vxid(self.backend.0);
            let sx = self.shared.predicate.register(pid, vxid, self.read_only);
            if let Some(top) = self.top_xid() {
                self.shared.predicate.set_top_xid(&sx, top);
            }
            self.sxact = Some(sx);
        }
        let cached = if self.shared.snapshot_cache.load(Ordering::Relaxed) {
            self.cached_snapshot.as_ref()
        } else {
            None
        };
        let s = self.shared.procarray.get_snapshot(self.backend, self.curcid, cached)?;
        self.cached_snapshot = Some(s.clone());
        if self.isolation != IsolationLevel::ReadCommitted {
            self.xact_snapshot = Some(s.clone());
        }
        Ok(s)
    }

    /// The xid of the current (sub)transaction, assigning it (and its parents'
    /// first, so a parent's xid always precedes its children's) if needed.
    pub fn assign_xid_if_needed(&mut self) -> Result<TransactionId> {
        self.assign_xids(self.stack.len())?;
        Ok(self.stack.last().and_then(|s| s.xid).map(|f| f.xid()).unwrap_or(INVALID_XID))
    }

    /// The top-level transaction's full xid, assigning it if needed but not
    /// the current subtransaction's (PostgreSQL's GetTopFullTransactionId, as
    /// `txid_current()` asks).
    pub fn assign_top_full_xid(&mut self) -> Result<FullTransactionId> {
        self.assign_xids(1)?;
        self.top_full_xid().ok_or_else(no_xact)
    }

    /// The top-level transaction's full xid, if assigned.
    pub fn top_full_xid(&self) -> Option<FullTransactionId> {
        self.stack.first().and_then(|s| s.xid)
    }

    /// Assigns the xids of the first `levels` levels of the transaction stack
    /// that have none, outermost first.
    fn assign_xids(&mut self, levels: usize) -> Result<()> {
        if !self.in_transaction() {
            return Err(no_xact());
        }
        for level in 0..levels.min(self.stack.len()) {
            if self.stack[level].xid.is_some() {
                continue;
            }
            let sh = &self.shared;
            let b = self.backend;
            let full = if level == 0 {
                sh.xidgen.assign(|f| {
                    sh.clog.extend(f.xid())?;
                    sh.procarray.set_xid(b, f.xid())
                })?
            } else {
                let parent = self.stack[level - 1].xid.map(|f| f.xid()).unwrap_or(INVALID_XID);
                sh.xidgen.assign(|f| {
                    sh.clog.extend(f.xid())?;
                    sh.subtrans.set_parent(f.xid(), parent);
                    sh.procarray.add_subxid(b, f.xid())
                })?
            };
            sh.locks.xid_assigned(b.0, full.xid(), level as u32 + 1);
            if level == 0 {
                if let Some(sx) = &self.sxact {
                    sh.predicate.set_top_xid(sx, full.xid());
                }
            }
            self.stack[level].xid = Some(full);
            self.latest_xid = Some(full);
        }
        Ok(())
    }

    /// The xid of the innermost (sub)transaction, or INVALID if it has none yet.
    pub fn current_xid(&self) -> TransactionId {
        self.stack.last().and_then(|s| s.xid).map_or(INVALID_XID, |f| f.xid())
    }

    /// The top-level xid, if assigned.
    pub fn top_xid(&self) -> Option<TransactionId> {
        self.stack.first().and_then(|s| s.xid).map(|f| f.xid())
    }

    /// SAVEPOINT name.
    pub fn savepoint(&mut self, name: &str) -> Result<()> {
        if !self.in_transaction() {
            return Err(Error::user(SqlState(*b"25P01"), "SAVEPOINT can only be used in transaction blocks"));
        }
        self.stack.push(TransactionState { name: Some(name.to_string()), xid: None, children: Vec::new() });
        self.shared.locks.subxact_started(self.backend.0, self.stack.len() as u32);
        Ok(())
    }

    fn find_savepoint(&self, name: &str) -> Result<usize> {
        (1..self.stack.len())
            .rev()
            .find(|&i| self.stack[i].name.as_deref() == Some(name))
            .ok_or_else(|| no_savepoint(name))
    }

    /// RELEASE SAVEPOINT name: the savepoint and those after it are merged into
    /// the enclosing level (their xids sub-commit with it).
    pub fn release(&mut self, name: &str) -> Result<()> {
        if !self.in_transaction() {
            return Err(Error::user(SqlState(*b"25P01"), "RELEASE SAVEPOINT can only be used in transaction blocks"));
        }
        let i = self.find_savepoint(name)?;
        let mut moved = Vec::new();
        for st in self.stack.drain(i..) {
            if let Some(x) = st.xid {
                moved.push(x.xid());
            }
            moved.extend(st.children);
        }
        self.stack[i - 1].children.extend(moved);
        // Stack index i is nesting level i + 1.
        self.shared.locks.subxact_committed(self.backend.0, i as u32 + 1);
        Ok(())
    }

    /// ROLLBACK TO SAVEPOINT name: the savepoint's subtransaction and those after
    /// it abort (clog marks them aborted now, their rows become invisible); the
    /// savepoint stays, with a fresh subtransaction.
    pub fn rollback_to(&mut self, name: &str) -> Result<()> {
        if !self.in_transaction() {
            return Err(Error::user(SqlState(*b"25P01"), "ROLLBACK TO SAVEPOINT can only be used in transaction blocks"));
        }
        let i = self.find_savepoint(name)?;
        let mut aborted = Vec::new();
        let mut latest: Option<FullTransactionId> = None;
        for st in self.stack.drain(i..) {
            if let Some(x) = st.xid {
                aborted.push(x.xid());
                latest = Some(latest.map_or(x, |l| l.max(x)));
            }
            aborted.extend(st.children);
        }
        self.stack.push(TransactionState { name: Some(name.to_string()), xid: None, children: Vec::new() });
        let level = self.stack.len() as u32;
        if aborted.is_empty() {
            // No xid, but relation and advisory locks may have been taken.
            self.shared.locks.subxact_rolled_back(self.backend.0, level);
            self.shared.locks.subxact_started(self.backend.0, level);
            return Ok(());
        }
        let sh = &self.shared;
        // WAL first so recovery knows they aborted, then clog, then ProcArray.
        sh.wal.insert(TxnRmgr::Xact, &encode_abort_record(aborted[0], &aborted[1..], now_timestamp()))?;
        sh.clog.set_subxacts_aborted(&aborted)?;
        // The newest aborted xid may be a released child (a subtransaction
        // released into an aborted level), which `latest` does not cover; the
        // transaction's newest xid is at least it. Reporting an older one would
        // leave that child "running" for xid_in_progress (assigned after the
        // latest completion), and a unique check would wait on it forever.
        let latest = match (latest, self.latest_xid) {
            (Some(a), Some(b)) => a.max(b),
            (a, b) => a.or(b).unwrap_or_default(),
        };
        sh.procarray.remove_subxids(self.backend, &aborted, latest)?;
        for &x in &aborted {
            sh.locks.subxact_aborted(self.backend.0, x);
        }
        sh.locks.subxact_rolled_back(self.backend.0, level);
        sh.locks.subxact_started(self.backend.0, level);
        Ok(())
    }

    /// Every xid of the tree except the top: open levels and released children.
    fn tree_subxids(&self) -> Vec<TransactionId> {
        let mut v = Vec::new();
        for (i, st) in self.stack.iter().enumerate() {
            if i > 0 {
                if let Some(x) = st.xid {
                    v.push(x.xid());
                }
            }
            v.extend(st.children.iter().copied());
        }
        v
    }

    fn finish(&mut self) {
        self.pending_invals.clear();
        self.stack.clear();
        self.xact_snapshot = None;
        self.latest_xid = None;
        self.curcid = FIRST_COMMAND_ID;
        self.combo.reset();
    }

    /// Registers a catalog-cache invalidation, sent to every backend (this one
    /// included) if the transaction commits (`sinval`). A transaction without an
    /// xid changed no catalog row, so its messages would be dropped: register
    /// after the catalog change.
    pub fn register_inval(&mut self, msg: crate::sinval::InvalMessage) {
        if !self.pending_invals.contains(&msg) {
            self.pending_invals.push(msg);
        }
    }

    /// COMMIT. Open savepoints commit with the transaction. The sequence:
    ///
    /// 1. commit record into the WAL;
    /// 2. flush it if synchronous_commit;
    /// 3. clog: committed (group update);
    /// 4. ProcArray: xid removed (group clear);
    /// 5. pending file deletes, then catalog-cache invalidations sent (`sinval`);
    /// 6. locks released.
    ///
    /// A transaction without an xid skips 1-3.
    pub fn commit(&mut self) -> Result<()> {
        if !self.in_transaction() {
            return Err(no_xact());
        }
        if let Some(sx) = &self.sxact {
            // Serializable: may fail the commit (40001); it then aborts.
            if let Err(e) = self.shared.predicate.pre_commit(sx) {
                self.abort()?;
                return Err(e);
            }
        }
        self.pgstat.at_eoxact(true);
        let sh = self.shared.clone();
        let sxact = self.sxact.take();
        let Some(top) = self.stack[0].xid else {
            self.finish();
            if let Some(sx) = &sxact {
                sh.predicate.release(sx, true);
            }
            sh.procarray.end_transaction(self.backend, None)?;
            // Without an xid nothing reached the catalog: files it created are orphans.
            sh.drop_files(self.pending_deletes.take(false));
            // Read-only transactions hold heavyweight locks too (relation locks).
            sh.locks.xact_ended(self.backend.0, 0, true);
            return Ok(());
        };
        let subxids = self.tree_subxids();
        let lsn = sh.wal.insert(TxnRmgr::Xact, &encode_commit_record(top.xid(), &subxids, now_timestamp()))?;
        let clog_lsn = if sh.synchronous_commit.load(Ordering::Relaxed) {
            sh.wal.flush(lsn)?;
            Lsn::INVALID
        } else {
            lsn
        };
        sh.clog.set_tree_status(self.backend.0 as usize, top.xid(), &subxids, XidStatus::Committed, clog_lsn)?;
        sh.procarray.end_transaction(self.backend, Some(self.latest_xid.unwrap_or(top)))?;
        if let Some(sx) = &sxact {
            sh.predicate.release(sx, true);
        }
        // After the commit record, before the locks go (txn::pending_delete).
        sh.drop_files(self.pending_deletes.take(true));
        // Visible to everyone now, and still locked: whoever waits for these
        // locks reads the messages before it looks at what changed (`sinval`).
        sh.sinval.send(&std::mem::take(&mut self.pending_invals));
        sh.locks.xact_ended(self.backend.0, top.xid(), true);
        self.finish();
        Ok(())
    }

    /// ROLLBACK. Abort record (not flushed), clog aborted, ProcArray, locks.
    pub fn abort(&mut self) -> Result<()> {
        if !self.in_transaction() {
            return Err(no_xact());
        }
        self.pgstat.at_eoxact(false);
        let sh = self.shared.clone();
        if let Some(sx) = self.sxact.take() {
            sh.predicate.release(&sx, false);
        }
        let Some(top) = self.stack[0].xid else {
            self.finish();
            sh.procarray.end_transaction(self.backend, None)?;
            sh.drop_files(self.pending_deletes.take(false));
            sh.locks.xact_ended(self.backend.0, 0, false);
            return Ok(());
        };
        let subxids = self.tree_subxids();
        sh.wal.insert(TxnRmgr::Xact, &encode_abort_record(top.xid(), &subxids, now_timestamp()))?;
        sh.clog.set_tree_status(self.backend.0 as usize, top.xid(), &subxids, XidStatus::Aborted, Lsn::INVALID)?;
        sh.procarray.end_transaction(self.backend, Some(self.latest_xid.unwrap_or(top)))?;
        sh.drop_files(self.pending_deletes.take(false));
        sh.locks.xact_ended(self.backend.0, top.xid(), false);
        self.finish();
        Ok(())
    }

    /// The t_cid and whether to set HEAP_COMBOCID when the current command
    /// deletes/updates/locks tuple `t`.
    pub fn cid_for_delete(&mut self, t: &TupleVisibilityInfo) -> (CommandId, bool) {
        let mine = self.is_current_xid(t.xmin);
        self.combo.cid_for_delete(t, self.curcid, mine)
    }

    /// Is `xid` this transaction or one of its live subtransactions?
    pub fn is_current_xid(&self, xid: TransactionId) -> bool {
        if !xid_is_normal(xid) {
            return false;
        }
        self.stack.iter().any(|st| st.xid.map(|f| f.xid()) == Some(xid) || st.children.contains(&xid))
    }
}

impl XidOracle for TransactionManager {
    fn is_current_xid(&self, xid: TransactionId) -> bool {
        TransactionManager::is_current_xid(self, xid)
    }
    fn is_in_progress(&self, xid: TransactionId) -> bool {
        self.shared.xid_in_progress(xid)
    }
    fn status(&self, xid: TransactionId) -> Result<XidStatus> {
        self.shared.xid_status(xid)
    }
    fn hint_allowed(&self, xid: TransactionId) -> bool {
        self.shared.hint_allowed(xid)
    }
    fn cmin(&self, t: &TupleVisibilityInfo) -> CommandId {
        self.combo.cmin(t)
    }
    fn cmax(&self, t: &TupleVisibilityInfo) -> CommandId {
        self.combo.cmax(t)
    }
    fn in_snapshot(&self, xid: TransactionId, snap: &Snapshot) -> bool {
        snap.xid_in_snapshot(xid, &self.shared.subtrans)
    }
    fn multi_members(&self, multi: u32) -> Option<Arc<[super::multixact::Member]>> {
        self.shared.multixacts.members(multi)
    }
}

impl Drop for TransactionManager {
    fn drop(&mut self) {
        if self.in_transaction() {
            let _ = self.abort();
        }
        let _ = self.shared.procarray.unregister(self.backend);
    }
}
