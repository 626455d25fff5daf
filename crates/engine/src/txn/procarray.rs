//! The ProcArray: which transactions are running, in dense arrays scanned by every
//! snapshot (PostgreSQL 14's layout: the xids of connected backends packed at the
//! front of one array, so a snapshot reads consecutive cache lines).
//!
//! Lock: `lock` (tranche ProcArray). Shared to take a snapshot, to test whether
//! an xid is running, to compute the xmin horizon, and to publish a newly
//! assigned xid (done under the XidGen lock, see xid.rs). Exclusive to remove
//! xids at transaction end (directly or by a group-clear leader), and to
//! register/unregister a backend (which moves dense entries).

use super::group::GroupList;
use super::snapshot::Snapshot;
use super::subtrans::SubTrans;
use super::xid::*;
use crate::lmgr::lwlock::{LwLock, Tranche};
use crate::pgstat::wait_event::{report_wait_end, report_wait_start, WaitEvent};
use crate::pgstat::BackendId;
use crate::{Error, Result};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;

/// Subxids cached per backend (PostgreSQL's PGPROC_MAX_CACHED_SUBXIDS).
pub const MAX_CACHED_SUBXIDS: usize = 64;
/// Bit of `subxid_status`: the backend has more subxids than the cache holds.
const SUBXID_OVERFLOWED: u32 = 1 << 31;
/// Vacuum flag: the backend is running a lazy VACUUM; its xmin is ignored by the
/// horizon (PostgreSQL's PROC_IN_VACUUM).
pub const PROC_IN_VACUUM: u8 = 0x02;
/// Vacuum flag: the backend is doing a safe index build (PROC_IN_SAFE_IC).
pub const PROC_IN_SAFE_IC: u8 = 0x04;
const NOT_REGISTERED: u32 = u32::MAX;

/// Per-backend state (PGPROC's transaction fields), indexed by backend id.
struct Proc {
    /// Index into the dense arrays, or NOT_REGISTERED. Written under exclusive.
    pgxactoff: AtomicU32,
    /// Oldest xid this backend's snapshots may consider running. Set by the
    /// backend under shared (when taking its first snapshot), cleared at
    /// transaction end.
    xmin: AtomicU32,
    /// Cached subxids (first `count` entries of the dense `subxid_status`).
    /// Appended by the owner under shared; shrunk under exclusive.
    subxids: Box<[AtomicU32]>,
}

/// ProcArray counters (Relaxed).
#[derive(Default)]
pub struct ProcArrayStats {
    pub snapshots_computed: AtomicU64,
    pub snapshots_reused: AtomicU64,
    pub direct_clears: AtomicU64,
    pub blocking_clears: AtomicU64,
}

/// Answer of [`ProcArray::xid_in_progress_detail`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InProgress {
    /// Not running.
    No,
    /// Running: found in the xid array or a subxid cache.
    Yes,
    /// A subxid not in any cache (overflow) whose top-level transaction is
    /// running: running unless the clog says the subxid aborted.
    TopRunning,
}

/// A transaction end to be applied by a group-clear leader.
struct EndRequest {
    latest_xid: FullTransactionId,
}

/// The ProcArray.
pub struct ProcArray {
    lock: LwLock,
    /// Entries in use in the dense arrays. Written under exclusive.
    num_procs: AtomicUsize,
    /// Dense: xid of the backend at each position (INVALID if none).
    xids: Box<[AtomicU32]>,
    /// Dense: subxid count | SUBXID_OVERFLOWED.
    subxid_status: Box<[AtomicU32]>,
    /// Dense: PROC_IN_VACUUM and friends.
    vacuum_flags: Box<[AtomicU8]>,
    /// Dense: which backend is at each position.
    dense_backend: Box<[AtomicU32]>,
    procs: Box<[Proc]>,
    /// Latest xid that committed or aborted. Written under exclusive.
    latest_completed: AtomicU64,
    /// Transactions completed (PostgreSQL 14's xactCompletionCount); bumped under
    /// exclusive at every end of an xid-bearing (sub)transaction.
    completion_count: AtomicU64,
    group_clear: AtomicBool,
    group: GroupList<EndRequest>,
    subtrans: Arc<SubTrans>,
    pub stats: ProcArrayStats,
}

impl ProcArray {
    /// A ProcArray for `max_backends` backends; `next` is the next xid to be
    /// assigned (everything before it has completed).
    pub fn new(max_backends: usize, next: FullTransactionId, subtrans: Arc<SubTrans>) -> ProcArray {
        let a32 = |n| (0..n).map(|_| AtomicU32::new(0)).collect::<Box<[_]>>();
        ProcArray {
            lock: LwLock::new(Tranche::ProcArray),
            num_procs: AtomicUsize::new(0),
            xids: a32(max_backends),
            subxid_status: a32(max_backends),
            vacuum_flags: (0..max_backends).map(|_| AtomicU8::new(0)).collect(),
            dense_backend: a32(max_backends),
            procs: (0..max_backends)
                .map(|_| Proc {
                    pgxactoff: AtomicU32::new(NOT_REGISTERED),
                    xmin: AtomicU32::new(INVALID_XID),
                    subxids: (0..MAX_CACHED_SUBXIDS).map(|_| AtomicU32::new(0)).collect(),
                })
                .collect(),
            latest_completed: AtomicU64::new(FullTransactionId(next.0.saturating_sub(1)).0),
            completion_count: AtomicU64::new(1),
            group_clear: AtomicBool::new(true),
            group: GroupList::new(max_backends),
            subtrans,
            stats: ProcArrayStats::default(),
        }
    }

    /// Turns group xid clearing on or off (the benchmark compares both).
    pub fn set_group_clear(&self, on: bool) {
        self.group_clear.store(on, Ordering::Relaxed);
    }

    /// (groups led, transactions ended by a leader on another's behalf).
    pub fn group_stats(&self) -> (u64, u64) {
        self.group.stats()
    }

    /// The lock, exposed so tests can hold it to force contention.
    pub fn lock(&self) -> &LwLock {
        &self.lock
    }

    /// Sets the latest completed xid (recovery: `next - 1`).
    pub fn set_latest_completed(&self, next: FullTransactionId) {
        let _g = self.lock.exclusive();
        self.latest_completed.store(next.0.saturating_sub(1), Ordering::Release);
    }

    /// The completed-transactions counter.
    pub fn completion_count(&self) -> u64 {
        self.completion_count.load(Ordering::Acquire)
    }

    fn off(&self, b: BackendId) -> Result<usize> {
        let p = self
            .procs
            .get(b.0 as usize)
            .ok_or_else(|| Error::internal(format!("backend {} out of range", b.0)))?;
        match p.pgxactoff.load(Ordering::Acquire) {
            NOT_REGISTERED => Err(Error::internal(format!("backend {} not in ProcArray", b.0))),
            o => Ok(o as usize),
        }
    }

    /// Adds a backend at the end of the dense arrays.
    pub fn register(&self, b: BackendId) -> Result<()> {
        let _g = self.lock.exclusive();
        let p = self
            .procs
            .get(b.0 as usize)
            .ok_or_else(|| Error::internal(format!("backend {} out of range", b.0)))?;
        if p.pgxactoff.load(Ordering::Acquire) != NOT_REGISTERED {
            return Err(Error::internal(format!("backend {} registered twice", b.0)));
        }
        let off = self.num_procs.load(Ordering::Acquire);
        self.xids[off].store(INVALID_XID, Ordering::Release);
        self.subxid_status[off].store(0, Ordering::Release);
        self.vacuum_flags[off].store(0, Ordering::Release);
        self.dense_backend[off].store(b.0, Ordering::Release);
        p.xmin.store(INVALID_XID, Ordering::Release);
        p.pgxactoff.store(off as u32, Ordering::Release);
        self.num_procs.store(off + 1, Ordering::Release);
        Ok(())
    }

    /// Removes a backend (its transaction has ended), moving the last dense entry
    /// into its place.
    pub fn unregister(&self, b: BackendId) -> Result<()> {
        let _g = self.lock.exclusive();
        let off = self.off(b)?;
        let last = self.num_procs.load(Ordering::Acquire) - 1;
        if off != last {
            let moved = self.dense_backend[last].load(Ordering::Acquire);
            self.xids[off].store(self.xids[last].load(Ordering::Acquire), Ordering::Release);
            self.subxid_status[off]
                .store(self.subxid_status[last].load(Ordering::Acquire), Ordering::Release);
            self.vacuum_flags[off].store(self.vacuum_flags[last].load(Ordering::Acquire), Ordering::Release);
            self.dense_backend[off].store(moved, Ordering::Release);
            self.procs[moved as usize].pgxactoff.store(off as u32, Ordering::Release);
        }
        self.procs[b.0 as usize].pgxactoff.store(NOT_REGISTERED, Ordering::Release);
        self.procs[b.0 as usize].xmin.store(INVALID_XID, Ordering::Release);
        self.num_procs.store(last, Ordering::Release);
        Ok(())
    }

    /// Backend `b`'s top-level xid and snapshot xmin (0: none), for
    /// pg_stat_activity's backend_xid / backend_xmin: a lock-free sample.
    pub fn backend_xid_xmin(&self, b: BackendId) -> (TransactionId, TransactionId) {
        let Some(p) = self.procs.get(b.0 as usize) else { return (0, 0) };
        // Acquire: pairs with the registration's Release; a sample only.
        let xid = match p.pgxactoff.load(Ordering::Acquire) {
            NOT_REGISTERED => 0,
            o => self.xids.get(o as usize).map_or(0, |x| x.load(Ordering::Relaxed)),
        };
        // Relaxed: a diagnostic sample.
        (xid, p.xmin.load(Ordering::Relaxed))
    }

    /// Publishes a newly assigned top-level xid. Called with the XidGen lock held
    /// (lock order: XidGen, then ProcArray).
    pub fn set_xid(&self, b: BackendId, xid: TransactionId) -> Result<()> {
        let _g = self.lock.shared();
        let off = self.off(b)?;
        self.xids[off].store(xid, Ordering::Release);
        Ok(())
    }

    /// Publishes a newly assigned subxid (XidGen lock held): into the backend's
    /// cache, or sets the overflow flag when the cache is full.
    pub fn add_subxid(&self, b: BackendId, xid: TransactionId) -> Result<()> {
        let _g = self.lock.shared();
        let off = self.off(b)?;
        let st = self.subxid_status[off].load(Ordering::Acquire);
        if st & SUBXID_OVERFLOWED != 0 {
            return Ok(());
        }
        let n = st as usize;
        if n == MAX_CACHED_SUBXIDS {
            self.subxid_status[off].store(st | SUBXID_OVERFLOWED, Ordering::Release);
        } else {
            self.procs[b.0 as usize].subxids[n].store(xid, Ordering::Release);
            // Release: the xid above is visible before the count that covers it.
            self.subxid_status[off].store(st + 1, Ordering::Release);
        }
        Ok(())
    }

    /// Sets or clears vacuum flags (PROC_IN_VACUUM ...).
    pub fn set_vacuum_flags(&self, b: BackendId, flags: u8) -> Result<()> {
        let _g = self.lock.exclusive();
        let off = self.off(b)?;
        self.vacuum_flags[off].store(flags, Ordering::Release);
        Ok(())
    }

    /// Takes a snapshot for backend `b` (PostgreSQL's GetSnapshotData). If
    /// `cached` was computed when the completed-transactions counter had its
    /// current value, nothing has left the running set since: it is reused
    /// (no scan) with `curcid` updated.
    pub fn get_snapshot(&self, b: BackendId, curcid: CommandId, cached: Option<&Snapshot>) -> Result<Snapshot> {
        let _g = self.lock.shared();
        let proc = &self.procs[self.off(b).map(|_| b.0 as usize)?];
        let count = self.completion_count.load(Ordering::Acquire);
        if let Some(c) = cached {
            if c.completion_count == count {
                // Holding the lock shared, no transaction can complete: the cached
                // xmin is still <= every running xid, so advertising it is safe.
                if proc.xmin.load(Ordering::Acquire) == INVALID_XID {
                    proc.xmin.store(c.xmin, Ordering::Release);
                }
                self.stats.snapshots_reused.fetch_add(1, Ordering::Relaxed);
                let mut s = c.clone();
                s.curcid = curcid;
                return Ok(s);
            }
        }
        let xmax = FullTransactionId(self.latest_completed.load(Ordering::Acquire)).advance().xid();
        let mut xmin = xmax;
        let n = self.num_procs.load(Ordering::Acquire);
        let mut xip = Vec::with_capacity(n);
        let mut subxip = Vec::new();
        let mut suboverflowed = false;
        for k in 0..n {
            let x = self.xids[k].load(Ordering::Acquire);
            if !xid_is_normal(x) || !xid_precedes(x, xmax) {
                continue;
            }
            if xid_precedes(x, xmin) {
                xmin = x;
            }
            xip.push(x);
            if !suboverflowed {
                let st = self.subxid_status[k].load(Ordering::Acquire);
                if st & SUBXID_OVERFLOWED != 0 {
                    suboverflowed = true;
                } else {
                    let p = &self.procs[self.dense_backend[k].load(Ordering::Acquire) as usize];
                    for s in p.subxids[..st as usize].iter() {
                        subxip.push(s.load(Ordering::Acquire));
                    }
                }
            }
        }
        if proc.xmin.load(Ordering::Acquire) == INVALID_XID {
            proc.xmin.store(xmin, Ordering::Release);
        }
        self.stats.snapshots_computed.fetch_add(1, Ordering::Relaxed);
        Ok(Snapshot {
            xmin,
            xmax,
            xip: xip.into(),
            subxip: subxip.into(),
            suboverflowed,
            curcid,
            completion_count: count,
        })
    }

    /// Is `xid` (top-level or sub) running? (TransactionIdIsInProgress, the
    /// ProcArray part.) When a subxid cache overflowed, a subxid is reported
    /// running if its top-level transaction is; callers that can, check the clog
    /// for an aborted subxid afterwards ([`ProcArray::xid_in_progress_detail`]).
    pub fn xid_in_progress(&self, xid: TransactionId) -> bool {
        self.xid_in_progress_detail(xid) != InProgress::No
    }

    /// Like [`ProcArray::xid_in_progress`], saying how the answer was found.
    pub fn xid_in_progress_detail(&self, xid: TransactionId) -> InProgress {
        if !xid_is_normal(xid) {
            return InProgress::No;
        }
        let _g = self.lock.shared();
        let next = FullTransactionId(self.latest_completed.load(Ordering::Acquire)).advance().xid();
        if xid_follows_or_equals(xid, next) {
            return InProgress::Yes; // assigned after the latest completion: still running
        }
        let n = self.num_procs.load(Ordering::Acquire);
        let mut any_overflow = false;
        for k in 0..n {
            if self.xids[k].load(Ordering::Acquire) == xid {
                return InProgress::Yes;
            }
        }
        for k in 0..n {
            let st = self.subxid_status[k].load(Ordering::Acquire);
            any_overflow |= st & SUBXID_OVERFLOWED != 0;
            let p = &self.procs[self.dense_backend[k].load(Ordering::Acquire) as usize];
            let cnt = (st & !SUBXID_OVERFLOWED) as usize;
            if p.subxids[..cnt].iter().any(|s| s.load(Ordering::Acquire) == xid) {
                return InProgress::Yes;
            }
        }
        if any_overflow {
            let top = self.subtrans.top_parent(xid);
            if top != xid && (0..n).any(|k| self.xids[k].load(Ordering::Acquire) == top) {
                return InProgress::TopRunning;
            }
        }
        InProgress::No
    }

    /// The xmin horizon: no running or future snapshot considers any xid
    /// preceding it as running; rows deleted by committed xids before it are dead
    /// to everyone (GetOldestNonRemovableTransactionId). Backends flagged
    /// PROC_IN_VACUUM don't hold it back with their xmin.
    pub fn oldest_xmin(&self) -> TransactionId {
        let _g = self.lock.shared();
        let mut h = FullTransactionId(self.latest_completed.load(Ordering::Acquire)).advance().xid();
        let n = self.num_procs.load(Ordering::Acquire);
        for k in 0..n {
            let x = self.xids[k].load(Ordering::Acquire);
            if xid_is_normal(x) && xid_precedes(x, h) {
                h = x;
            }
            if self.vacuum_flags[k].load(Ordering::Acquire) & PROC_IN_VACUUM != 0 {
                continue;
            }
            let p = &self.procs[self.dense_backend[k].load(Ordering::Acquire) as usize];
            let xm = p.xmin.load(Ordering::Acquire);
            if xid_is_normal(xm) && xid_precedes(xm, h) {
                h = xm;
            }
        }
        h
    }

    /// Clears a backend's transaction (exclusive held).
    fn clear_locked(&self, b: usize, latest: FullTransactionId) {
        let off = self.procs[b].pgxactoff.load(Ordering::Acquire);
        if off != NOT_REGISTERED {
            self.xids[off as usize].store(INVALID_XID, Ordering::Release);
            self.subxid_status[off as usize].store(0, Ordering::Release);
            self.vacuum_flags[off as usize].store(0, Ordering::Release);
        }
        self.procs[b].xmin.store(INVALID_XID, Ordering::Release);
        if latest.0 > self.latest_completed.load(Ordering::Acquire) {
            self.latest_completed.store(latest.0, Ordering::Release);
        }
        self.completion_count.fetch_add(1, Ordering::AcqRel);
    }

    /// Ends backend `b`'s transaction in the ProcArray (ProcArrayEndTransaction).
    /// `latest_xid` is the latest xid of the tree (top or a subxid), `None` for a
    /// transaction that never got an xid. Must be called *after* the clog holds
    /// the transaction's final status.
    pub fn end_transaction(&self, b: BackendId, latest_xid: Option<FullTransactionId>) -> Result<()> {
        let bi = b.0 as usize;
        self.off(b)?;
        let Some(latest) = latest_xid else {
            // No xid: nobody's snapshot depends on us; only the xmin goes.
            // Release: ordered after our reads of the data our snapshot protected.
            self.procs[bi].xmin.store(INVALID_XID, Ordering::Release);
            return Ok(());
        };
        if let Some(_g) = self.lock.try_exclusive() {
            self.stats.direct_clears.fetch_add(1, Ordering::Relaxed);
            self.clear_locked(bi, latest);
            return Ok(());
        }
        if !self.group_clear.load(Ordering::Relaxed) {
            let _g = self.lock.exclusive();
            self.stats.blocking_clears.fetch_add(1, Ordering::Relaxed);
            self.clear_locked(bi, latest);
            return Ok(());
        }
        if !self.group.join(bi, EndRequest { latest_xid: latest }) {
            report_wait_start(WaitEvent::Ipc("ProcArrayGroupUpdate"));
            self.group.wait(bi);
            report_wait_end();
            return Ok(());
        }
        let members = {
            let _g = self.lock.exclusive();
            let all = self.group.take_all(bi);
            let mut members = Vec::with_capacity(all.len());
            for (m, req) in all {
                self.clear_locked(m, req.latest_xid);
                members.push(m);
            }
            members
        };
        self.group.wake(&members);
        Ok(())
    }

    /// Removes aborted subxids from backend `b`'s cache (ROLLBACK TO SAVEPOINT),
    /// after the clog marked them aborted. `latest` is the latest of them.
    pub fn remove_subxids(&self, b: BackendId, gone: &[TransactionId], latest: FullTransactionId) -> Result<()> {
        let _g = self.lock.exclusive();
        let off = self.off(b)?;
        let st = self.subxid_status[off].load(Ordering::Acquire);
        let over = st & SUBXID_OVERFLOWED;
        let p = &self.procs[b.0 as usize];
        let mut kept = 0usize;
        for i in 0..(st & !SUBXID_OVERFLOWED) as usize {
            let x = p.subxids[i].load(Ordering::Acquire);
            if !gone.contains(&x) {
                p.subxids[kept].store(x, Ordering::Release);
                kept += 1;
            }
        }
        self.subxid_status[off].store(kept as u32 | over, Ordering::Release);
        if latest.0 > self.latest_completed.load(Ordering::Acquire) {
            self.latest_completed.store(latest.0, Ordering::Release);
        }
        self.completion_count.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Backends registered (tests).
    pub fn num_procs(&self) -> usize {
        self.num_procs.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_lists_running_and_reuses() {
        let pa = ProcArray::new(4, FullTransactionId(10), Arc::new(SubTrans::new()));
        for b in 0..3 {
            pa.register(BackendId(b)).unwrap();
        }
        pa.set_xid(BackendId(0), 10).unwrap();
        pa.set_xid(BackendId(1), 11).unwrap();
        pa.end_transaction(BackendId(1), Some(FullTransactionId(11))).unwrap();
        let s = pa.get_snapshot(BackendId(2), 0, None).unwrap();
        assert_eq!((s.xmin, s.xmax), (10, 12));
        assert_eq!(&*s.xip, &[10]);
        let s2 = pa.get_snapshot(BackendId(2), 5, Some(&s)).unwrap();
        assert_eq!(s2.curcid, 5);
        assert_eq!(pa.stats.snapshots_reused.load(Ordering::Relaxed), 1);
        pa.end_transaction(BackendId(0), Some(FullTransactionId(10))).unwrap();
        let s3 = pa.get_snapshot(BackendId(2), 0, Some(&s)).unwrap();
        assert_eq!((s3.xmin, s3.xmax), (12, 12));
        assert_eq!(pa.stats.snapshots_computed.load(Ordering::Relaxed), 2);
        // backend 2 advertises xmin 10 from its first snapshot
        assert_eq!(pa.oldest_xmin(), 10);
        pa.end_transaction(BackendId(2), None).unwrap();
        assert_eq!(pa.oldest_xmin(), 12);
    }

    #[test]
    fn unregister_compacts_dense_arrays() {
        let pa = ProcArray::new(4, FullTransactionId(10), Arc::new(SubTrans::new()));
        for b in 0..3 {
            pa.register(BackendId(b)).unwrap();
        }
        pa.set_xid(BackendId(2), 10).unwrap();
        pa.unregister(BackendId(0)).unwrap();
        assert_eq!(pa.num_procs(), 2);
        assert!(pa.xid_in_progress(10));
        pa.end_transaction(BackendId(2), Some(FullTransactionId(10))).unwrap();
        assert!(!pa.xid_in_progress(10));
        assert!(pa.register(BackendId(1)).is_err());
    }

    #[test]
    fn subxid_overflow_uses_subtrans() {
        let st = Arc::new(SubTrans::new());
        let pa = ProcArray::new(2, FullTransactionId(10), st.clone());
        pa.register(BackendId(0)).unwrap();
        pa.register(BackendId(1)).unwrap();
        pa.set_xid(BackendId(0), 10).unwrap();
        for i in 0..70u32 {
            st.set_parent(11 + i, 10);
            pa.add_subxid(BackendId(0), 11 + i).unwrap();
        }
        // Another transaction, 200, completes: 10..80 are now below xmax.
        pa.set_xid(BackendId(1), 200).unwrap();
        pa.end_transaction(BackendId(1), Some(FullTransactionId(200))).unwrap();
        assert!(pa.xid_in_progress(11)); // in the cache
        assert!(pa.xid_in_progress(80)); // overflowed: found through subtrans
        assert!(!pa.xid_in_progress(150));
        let s = pa.get_snapshot(BackendId(1), 0, None).unwrap();
        assert_eq!(&*s.xip, &[10]);
        assert!(s.suboverflowed);
        assert!(s.xid_in_snapshot(80, &st));
    }
}
