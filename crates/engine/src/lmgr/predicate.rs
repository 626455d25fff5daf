//! Predicate locks and Serializable Snapshot Isolation (README "Predicate locks
//! and SSI"): SIREAD locks on relations, pages and tuples, the rw-conflict graph
//! between serializable transactions, and the dangerous-structure checks of
//! Cahill's SSI as PostgreSQL refines them (Ports & Grittner, VLDB 2012).
//!
//! Only serializable transactions call into this module: the heap and the SQL
//! layer test `TransactionManager::serializable_xact()` (one branch) first, so
//! READ COMMITTED and REPEATABLE READ never touch these locks.

use crate::error::{Error, Result, SqlState};
use crate::storage::{BlockNumber, RelFileLocator};
use crate::txn::xid::TransactionId;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Partitions of the predicate-lock target table (PostgreSQL's
/// NUM_PREDICATELOCK_PARTITIONS).
pub const NUM_PREDICATELOCK_PARTITIONS: usize = 16;

/// What a SIREAD lock covers (PostgreSQL's PREDICATELOCKTARGETTAG). A coarser
/// target covers every finer one of the same relation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PredTarget {
    Relation(RelFileLocator),
    Page(RelFileLocator, BlockNumber),
    Tuple(RelFileLocator, BlockNumber, u16),
}

impl PredTarget {
    pub fn rel(&self) -> RelFileLocator {
        match *self {
            PredTarget::Relation(r) | PredTarget::Page(r, _) | PredTarget::Tuple(r, _, _) => r,
        }
    }

    /// The next coarser target: tuple -> page -> relation -> none.
    pub fn parent(&self) -> Option<PredTarget> {
        match *self {
            PredTarget::Relation(_) => None,
            PredTarget::Page(r, _) => Some(PredTarget::Relation(r)),
            PredTarget::Tuple(r, b, _) => Some(PredTarget::Page(r, b)),
        }
    }

    /// Is `self` strictly finer than `coarse` and covered by it?
    fn is_under(&self, coarse: &PredTarget) -> bool {
        let mut p = self.parent();
        while let Some(t) = p {
            if t == *coarse {
                return true;
            }
            p = t.parent();
        }
        false
    }

    /// pg_locks.locktype.
    pub fn locktype(&self) -> &'static str {
        match self {
            PredTarget::Relation(_) => "relation",
            PredTarget::Page(..) => "page",
            PredTarget::Tuple(..) => "tuple",
        }
    }

    fn partition(&self) -> usize {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.hash(&mut h);
        (h.finish() as usize) % NUM_PREDICATELOCK_PARTITIONS
    }
}

/// Serializable transaction number, never reused (ids of removed transactions
/// found in the lock table are skipped).
pub type SxactId = u64;

/// A serializable transaction's handle, shared by its backend and the graph.
pub struct SerializableXact {
    pub id: SxactId,
    /// Set by another transaction's check: this one must fail at its next
    /// check (SXACT_FLAG_DOOMED). Written under the graph mutex; the owner reads
    /// it without it (Relaxed: a late read only delays the failure to the next
    /// check, which takes the mutex anyway or reads it again).
    doomed: AtomicBool,
    /// The locks it holds. Added to only by the owner; emptied by whoever
    /// releases the transaction (its owner at abort, any backend at cleanup).
    locks: Mutex<LockList>,
}

impl SerializableXact {
    pub fn is_doomed(&self) -> bool {
        self.doomed.load(Ordering::Relaxed)
    }
}

#[derive(Default)]
struct LockList {
    /// Targets held, and coarser targets counted for promotion (PostgreSQL's
    /// LocalPredicateLockHash): `held` iff the target is in the shared table
    /// for this transaction; `child_locks` = held targets below it.
    local: HashMap<PredTarget, LocalLock>,
    /// The transaction ended and its locks are gone: take no more.
    released: bool,
}

#[derive(Default, Clone, Copy)]
struct LocalLock {
    held: bool,
    child_locks: i64,
}

/// Graph state of one serializable transaction (PostgreSQL's SERIALIZABLEXACT),
/// under the graph mutex.
struct SxactState {
    xact: Arc<SerializableXact>,
    pid: i32,
    vxid: String,
    /// Top-level xid, once assigned (0 before).
    top_xid: TransactionId,
    /// `last_commit_seq` when it registered, before its snapshot was taken: a
    /// transaction with `commit_seq <= this` committed before the snapshot.
    last_commit_before_snapshot: u64,
    /// Set by the pre-commit check (SXACT_FLAG_PREPARED); 0 = not yet.
    prepare_seq: u64,
    /// Set at commit; 0 = not committed.
    commit_seq: u64,
    read_only: bool,
    /// Committed with an rw-conflict out to a transaction that committed
    /// before it (SXACT_FLAG_CONFLICT_OUT).
    conflict_out: bool,
    /// The earliest prepare sequence number among those transactions.
    earliest_out_conflict_commit: u64,
    /// Transactions with an rw-edge to this one (they read what it wrote).
    in_conflicts: Vec<SxactId>,
    /// Transactions this one has an rw-edge to (it read what they wrote).
    out_conflicts: Vec<SxactId>,
    /// READ ONLY DEFERRABLE waiting for a safe snapshot: the read-write
    /// transactions it waits for (pg_safe_snapshot_blocking_pids).
    safe_wait: Vec<SxactId>,
}

impl SxactState {
    fn committed(&self) -> bool {
        self.commit_seq != 0
    }
    fn prepared(&self) -> bool {
        self.prepare_seq != 0
    }
    fn doomed(&self) -> bool {
        self.xact.is_doomed()
    }
}

#[derive(Default)]
struct Graph {
    next_id: SxactId,
    /// PostgreSQL's LastSxactCommitSeqNo: prepare and commit numbers come from it.
    last_commit_seq: u64,
    xacts: HashMap<SxactId, SxactState>,
    /// Top-level xid -> transaction (SerializableXidHash).
    by_xid: HashMap<TransactionId, SxactId>,
}

/// One SIREAD row of pg_locks.
#[derive(Clone, Debug)]
pub struct PredLockRow {
    pub target: PredTarget,
    pub pid: i32,
    pub virtualtransaction: String,
}

/// What a SERIALIZABLE READ ONLY DEFERRABLE transaction waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotSafety {
    /// Some read-write transaction that overlaps the snapshot still runs.
    Pending,
    /// The snapshot can run without predicate locks or failures.
    Safe,
    /// Take another snapshot.
    Unsafe,
}

/// Promotion thresholds, PostgreSQL's settings.
#[derive(Clone, Copy, Debug)]
pub struct PredConfig {
    /// max_pred_locks_per_transaction (64).
    pub per_transaction: i64,
    /// max_pred_locks_per_relation (-2: per_transaction / 2 - 1 pages or tuples).
    pub per_relation: i64,
    /// max_pred_locks_per_page (2).
    pub per_page: i64,
}

impl Default for PredConfig {
    fn default() -> Self {
        PredConfig { per_transaction: 64, per_relation: -2, per_page: 2 }
    }
}

/// The serialization failure, PostgreSQL's text.
pub fn serialization_failure(detail: impl Into<String>) -> Error {
    Error::User {
        code: SqlState::T_R_SERIALIZATION_FAILURE,
        message: "could not serialize access due to read/write dependencies among transactions".into(),
        detail: Some(detail.into()),
        hint: Some("The transaction might succeed if retried.".into()),
    }
}

/// One partition of the target table: target -> the transactions holding it.
type Partition = HashMap<PredTarget, Vec<SxactId>>;

/// The predicate-lock manager (PostgreSQL's predicate.c shared state).
pub struct PredicateLockManager {
    /// target -> holders, in 16 partitions by target hash.
    partitions: Box<[Mutex<Partition>]>,
    /// The rw-conflict graph (SerializableXactHashLock).
    graph: Mutex<Graph>,
    per_transaction: i64,
    per_relation: AtomicI64,
    per_page: AtomicI64,
    /// Serializable transactions known to the graph (running, or committed
    /// and kept): `xacts.len()`, written under the graph mutex. Read without
    /// it by page splits (`page_split`): 0 means no SIREAD lock exists.
    known: AtomicUsize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl PredicateLockManager {
    pub fn new(cfg: PredConfig) -> PredicateLockManager {
        PredicateLockManager {
            partitions: (0..NUM_PREDICATELOCK_PARTITIONS).map(|_| Mutex::new(HashMap::new())).collect(),
            graph: Mutex::new(Graph { next_id: 1, ..Graph::default() }),
            per_transaction: cfg.per_transaction,
            per_relation: AtomicI64::new(cfg.per_relation),
            per_page: AtomicI64::new(cfg.per_page),
            known: AtomicUsize::new(0),
        }
    }

    /// Sets the sighup thresholds (max_pred_locks_per_relation / _per_page).
    pub fn set_thresholds(&self, per_relation: i64, per_page: i64) {
        self.per_relation.store(per_relation, Ordering::Relaxed);
        self.per_page.store(per_page, Ordering::Relaxed);
    }

    /// Child locks a target may have before the transaction takes it instead
    /// (PostgreSQL's MaxPredicateChildLocks).
    fn max_child_locks(&self, t: &PredTarget) -> i64 {
        match t {
            PredTarget::Relation(_) => {
                let r = self.per_relation.load(Ordering::Relaxed);
                if r < 0 {
                    self.per_transaction / -r - 1
                } else {
                    r
                }
            }
            PredTarget::Page(..) => self.per_page.load(Ordering::Relaxed),
            PredTarget::Tuple(..) => 0,
        }
    }

    /// Registers a serializable transaction. Must be called *before* its
    /// snapshot is taken: every transaction with a commit number up to the
    /// recorded one then committed before the snapshot.
    pub fn register(&self, pid: i32, vxid: String, read_only: bool) -> Arc<SerializableXact> {
        let mut g = lock(&self.graph);
        let id = g.next_id;
        g.next_id += 1;
        let xact = Arc::new(SerializableXact { id, doomed: AtomicBool::new(false), locks: Mutex::new(LockList::default()) });
        let st = SxactState {
            xact: xact.clone(),
            pid,
            vxid,
            top_xid: 0,
            last_commit_before_snapshot: g.last_commit_seq,
            prepare_seq: 0,
            commit_seq: 0,
            read_only,
            conflict_out: false,
            earliest_out_conflict_commit: u64::MAX,
            in_conflicts: Vec::new(),
            out_conflicts: Vec::new(),
            safe_wait: Vec::new(),
        };
        g.xacts.insert(id, st);
        self.known.store(g.xacts.len(), Ordering::Relaxed);
        xact
    }

    /// The transaction got its top-level xid.
    pub fn set_top_xid(&self, x: &SerializableXact, xid: TransactionId) {
        let mut g = lock(&self.graph);
        if let Some(st) = g.xacts.get_mut(&x.id) {
            st.top_xid = xid;
            g.by_xid.insert(xid, x.id);
        }
    }

    // ---- SIREAD locks -------------------------------------------------------

    /// Takes a SIREAD lock on `target` (PredicateLockAcquire): nothing if it or
    /// a coarser target is held; else the lock, then promotion to the coarsest
    /// parent whose child count passed its threshold, or the removal of the
    /// finer locks the new one covers.
    pub fn acquire(&self, x: &SerializableXact, target: PredTarget) {
        let mut l = lock(&x.locks);
        if l.released {
            return;
        }
        self.acquire_locked(x.id, &mut l, target);
    }

    fn acquire_locked(&self, id: SxactId, l: &mut LockList, target: PredTarget) {
        if l.local.get(&target).is_some_and(|e| e.held) {
            return;
        }
        let mut p = target.parent();
        while let Some(t) = p {
            if l.local.get(&t).is_some_and(|e| e.held) {
                return;
            }
            p = t.parent();
        }
        l.local.entry(target).or_default().held = true;
        {
            let mut part = lock(&self.partitions[target.partition()]);
            let holders = part.entry(target).or_default();
            if !holders.contains(&id) {
                holders.push(id);
            }
        }
        // Count it in every parent; promote to the coarsest one past its limit.
        let mut promote = None;
        let mut p = target.parent();
        while let Some(t) = p {
            let e = l.local.entry(t).or_default();
            e.child_locks += 1;
            if e.child_locks > self.max_child_locks(&t) {
                promote = Some(t);
            }
            p = t.parent();
        }
        if let Some(t) = promote {
            self.acquire_locked(id, l, t);
        } else if !matches!(target, PredTarget::Tuple(..)) {
            self.delete_children(id, l, target);
        }
    }

    /// Drops the transaction's held locks below `coarse` (DeleteChildTargetLocks).
    fn delete_children(&self, id: SxactId, l: &mut LockList, coarse: PredTarget) {
        let children: Vec<PredTarget> =
            l.local.iter().filter(|(t, e)| e.held && t.is_under(&coarse)).map(|(t, _)| *t).collect();
        for c in children {
            self.remove_holder(c, id);
            if let Some(e) = l.local.get_mut(&c) {
                e.held = false;
                if e.child_locks == 0 {
                    l.local.remove(&c);
                }
            }
            let mut p = c.parent();
            while let Some(t) = p {
                if let Some(e) = l.local.get_mut(&t) {
                    e.child_locks -= 1;
                    if !e.held && e.child_locks <= 0 {
                        l.local.remove(&t);
                    }
                }
                p = t.parent();
            }
        }
    }

    fn remove_holder(&self, target: PredTarget, id: SxactId) {
        let mut part = lock(&self.partitions[target.partition()]);
        if let Some(h) = part.get_mut(&target) {
            h.retain(|&x| x != id);
            if h.is_empty() {
                part.remove(&target);
            }
        }
    }

    /// Removes every lock of `x` from the table; it takes no more.
    fn release_locks(&self, x: &SerializableXact) {
        let mut l = lock(&x.locks);
        l.released = true;
        for (t, e) in std::mem::take(&mut l.local) {
            if e.held {
                self.remove_holder(t, x.id);
            }
        }
    }

    /// A B-tree leaf `old` of index `rel` split and the upper part of its key
    /// range moved to the new right page `new` (PostgreSQL's
    /// PredicateLockPageSplit): every transaction holding a SIREAD lock on
    /// `old` gets one on `new` too, so that a later insert landing on `new`
    /// still meets the readers of that range. Called by the splitter while it
    /// holds both pages exclusively: a reader locks a page under its shared
    /// content lock, so every lock on `old` taken before the split is seen,
    /// and none can be taken during it. Holders that released meanwhile are
    /// skipped; a holder that promoted to the relation is covered already.
    /// Nothing but one atomic load when no serializable transaction exists.
    pub fn page_split(&self, rel: RelFileLocator, old: BlockNumber, new: BlockNumber) {
        // Relaxed: a reader registered (incrementing `known` under the graph
        // mutex) before it locked `old` under its content lock, which the
        // splitter acquired after the reader released it: that release/acquire
        // pair orders the store before this load.
        if self.known.load(Ordering::Relaxed) == 0 {
            return;
        }
        self.page_split_slow(rel, old, new);
    }

    #[cold]
    fn page_split_slow(&self, rel: RelFileLocator, old: BlockNumber, new: BlockNumber) {
        let from = PredTarget::Page(rel, old);
        let holders: Vec<SxactId> = match lock(&self.partitions[from.partition()]).get(&from) {
            Some(hs) => hs.clone(),
            None => return,
        };
        // Lock order: the graph mutex alone (to find the holders), then each
        // holder's list and a partition (as `acquire`).
        let xacts: Vec<Arc<SerializableXact>> = {
            let g = lock(&self.graph);
            holders.iter().filter_map(|h| g.xacts.get(h).map(|s| s.xact.clone())).collect()
        };
        for x in xacts {
            self.acquire(&x, PredTarget::Page(rel, new));
        }
    }

    /// The files `from` are about to be replaced or dropped (a TRUNCATE or a
    /// table rewrite gives the heap and its indexes new files, REINDEX an
    /// index, DROP INDEX removes one): every transaction holding any SIREAD
    /// lock on them loses those locks and gets a relation lock on each of
    /// `to` instead (PostgreSQL's TransferPredicateLocksToHeapRelation; `to`
    /// empty: DropAllPredicateLocksFromTable without transfer, for files
    /// that are gone). Tuple and page locks do not survive a rewrite (the
    /// tuples move), and index page locks stand for a predicate over the
    /// heap, so a relation lock on the heap is what covers them. Committed
    /// transactions kept for their locks are moved too.
    ///
    /// The caller holds a lock that keeps every other backend from reading
    /// `from` meanwhile (AccessExclusiveLock on the relation or the index),
    /// so no new lock on them appears during the transfer.
    pub fn transfer_to_relations(&self, from: &[RelFileLocator], to: &[RelFileLocator]) {
        if from.is_empty() {
            return;
        }
        let mut holders: Vec<SxactId> = Vec::new();
        for p in self.partitions.iter() {
            for (t, hs) in lock(p).iter() {
                if from.contains(&t.rel()) {
                    holders.extend(hs.iter().copied());
                }
            }
        }
        if holders.is_empty() {
            return;
        }
        holders.sort_unstable();
        holders.dedup();
        // Lock order: the graph mutex alone (to find the holders), then each
        // holder's list and a partition at a time (as `acquire`).
        let xacts: Vec<Arc<SerializableXact>> = {
            let g = lock(&self.graph);
            holders.iter().filter_map(|h| g.xacts.get(h).map(|s| s.xact.clone())).collect()
        };
        for x in xacts {
            let mut l = lock(&x.locks);
            if l.released {
                continue;
            }
            // Every entry of those files goes, held locks and child counts
            // alike (all the children of a counted target are among them).
            let gone: Vec<(PredTarget, bool)> =
                l.local.iter().filter(|(t, _)| from.contains(&t.rel())).map(|(t, e)| (*t, e.held)).collect();
            for (t, held) in gone {
                l.local.remove(&t);
                if held {
                    self.remove_holder(t, x.id);
                }
            }
            for &r in to {
                self.acquire_locked(x.id, &mut l, PredTarget::Relation(r));
            }
        }
    }

    /// The targets `x` holds (for tests and pg_locks).
    pub fn held_targets(&self, x: &SerializableXact) -> Vec<PredTarget> {
        let l = lock(&x.locks);
        let mut v: Vec<PredTarget> = l.local.iter().filter(|(_, e)| e.held).map(|(t, _)| *t).collect();
        v.sort();
        v
    }

    /// Every SIREAD lock, for pg_locks: partitions read one at a time in
    /// order, then the holders' names under the graph mutex.
    pub fn lock_status(&self) -> Vec<PredLockRow> {
        let mut raw = Vec::new();
        for p in self.partitions.iter() {
            for (t, hs) in lock(p).iter() {
                for &h in hs {
                    raw.push((*t, h));
                }
            }
        }
        let g = lock(&self.graph);
        let mut rows: Vec<PredLockRow> = raw
            .into_iter()
            .filter_map(|(t, h)| {
                g.xacts.get(&h).map(|st| PredLockRow { target: t, pid: st.pid, virtualtransaction: st.vxid.clone() })
            })
            .collect();
        rows.sort_by_key(|a| (a.pid, a.target));
        rows
    }

    // ---- rw-conflicts ---------------------------------------------------------

    /// A serializable read by `me` met a version written by the concurrent
    /// top-level transaction `writer_xid`: created a version `me`'s snapshot
    /// does not see, or deleted one it sees (CheckForSerializableConflictOut).
    pub fn check_conflict_out(&self, me: &SerializableXact, writer_xid: TransactionId) -> Result<()> {
        if me.is_doomed() {
            return Err(serialization_failure("Reason code: Canceled on identification as a pivot, during conflict out checking."));
        }
        let mut g = lock(&self.graph);
        let Some(&w) = g.by_xid.get(&writer_xid) else { return Ok(()) };
        if w == me.id {
            return Ok(());
        }
        let (Some(ws), Some(my)) = (g.xacts.get(&w), g.xacts.get(&me.id)) else { return Ok(()) };
        if ws.doomed() {
            return Ok(());
        }
        // A read-only transaction appears to run before a committed writer
        // that has no conflict out to something committed before our snapshot.
        if my.read_only
            && ws.committed()
            && (!ws.conflict_out || my.last_commit_before_snapshot < ws.earliest_out_conflict_commit)
        {
            return Ok(());
        }
        if my.out_conflicts.contains(&w) {
            return Ok(());
        }
        flag_rw_conflict(&mut g, me.id, w, me.id)
    }

    /// A serializable write by `me` touched `targets` (a tuple, its page and
    /// relation; or an index relation where an entry went): every other
    /// concurrent holder of a SIREAD lock there gets an rw-edge to `me`
    /// (CheckForSerializableConflictIn). Called after the change is in place.
    pub fn check_conflict_in(&self, me: &SerializableXact, targets: &[PredTarget]) -> Result<()> {
        if me.is_doomed() {
            return Err(serialization_failure("Reason code: Canceled on identification as a pivot, during conflict in checking."));
        }
        let mut readers: Vec<SxactId> = Vec::new();
        for t in targets {
            if let Some(hs) = lock(&self.partitions[t.partition()]).get(t) {
                readers.extend(hs.iter().copied().filter(|&h| h != me.id));
            }
        }
        self.flag_readers(me, readers)
    }

    /// A serializable write by `me` of the whole relation `rel` (TRUNCATE):
    /// every other concurrent holder of any SIREAD lock on it (relation,
    /// page or tuple) gets an rw-edge to `me` (PostgreSQL's
    /// CheckTableForSerializableConflictIn).
    pub fn check_conflict_in_relation(&self, me: &SerializableXact, rel: RelFileLocator) -> Result<()> {
        if me.is_doomed() {
            return Err(serialization_failure("Reason code: Canceled on identification as a pivot, during conflict in checking."));
        }
        let mut readers: Vec<SxactId> = Vec::new();
        for p in self.partitions.iter() {
            for (t, hs) in lock(p).iter() {
                if t.rel() == rel {
                    readers.extend(hs.iter().copied().filter(|&h| h != me.id));
                }
            }
        }
        self.flag_readers(me, readers)
    }

    /// The rw-edges reader -> `me` for the concurrent `readers` found by a
    /// conflict-in check.
    fn flag_readers(&self, me: &SerializableXact, mut readers: Vec<SxactId>) -> Result<()> {
        if readers.is_empty() {
            return Ok(());
        }
        readers.sort_unstable();
        readers.dedup();
        let mut g = lock(&self.graph);
        let Some(my_lcbs) = g.xacts.get(&me.id).map(|s| s.last_commit_before_snapshot) else { return Ok(()) };
        for r in readers {
            let Some(rs) = g.xacts.get(&r) else { continue };
            if rs.doomed() || (rs.committed() && rs.commit_seq <= my_lcbs) || rs.out_conflicts.contains(&me.id) {
                continue;
            }
            flag_rw_conflict(&mut g, r, me.id, me.id)?;
        }
        Ok(())
    }

    /// Before the commit record (PreCommit_CheckForSerializationFailure): fail
    /// if doomed; doom a pivot whose in-neighbour may still commit after us;
    /// then the transaction is prepared (gets its prepare number).
    pub fn pre_commit(&self, me: &SerializableXact) -> Result<()> {
        let mut g = lock(&self.graph);
        if me.is_doomed() {
            return Err(serialization_failure("Reason code: Canceled on identification as a pivot, during commit attempt."));
        }
        let Some(my) = g.xacts.get(&me.id) else { return Ok(()) };
        for &near in &my.in_conflicts {
            let Some(n) = g.xacts.get(&near) else { continue };
            if n.committed() || n.doomed() {
                continue;
            }
            for &far in &n.in_conflicts {
                let dangerous = far == me.id
                    || g.xacts.get(&far).is_some_and(|f| !f.committed() && !f.read_only && !f.doomed());
                if dangerous {
                    if n.prepared() {
                        return Err(serialization_failure(
                            "Reason code: Canceled on commit attempt with conflict in from prepared pivot.",
                        ));
                    }
                    n.xact.doomed.store(true, Ordering::Relaxed);
                    break;
                }
            }
        }
        g.last_commit_seq += 1;
        let seq = g.last_commit_seq;
        if let Some(my) = g.xacts.get_mut(&me.id) {
            my.prepare_seq = seq;
        }
        Ok(())
    }

    /// At transaction end, after the ProcArray no longer shows it running
    /// (ReleasePredicateLocks). A commit keeps the locks and edges while an
    /// overlapping serializable transaction runs; an abort drops them at once.
    /// Then committed transactions no running one overlaps are removed.
    pub fn release(&self, me: &SerializableXact, committed: bool) {
        let mut freed = Vec::new();
        {
            let mut g = lock(&self.graph);
            if committed && g.xacts.contains_key(&me.id) {
                g.last_commit_seq += 1;
                let seq = g.last_commit_seq;
                let outs: Vec<SxactId> = g.xacts[&me.id].out_conflicts.clone();
                let read_only = g.xacts[&me.id].read_only;
                let mut earliest = u64::MAX;
                for w in outs {
                    if let Some(ws) = g.xacts.get(&w) {
                        if ws.committed() && !read_only {
                            earliest = earliest.min(ws.prepare_seq);
                        }
                    }
                }
                let my = g.xacts.get_mut(&me.id).expect("checked above");
                if my.prepare_seq == 0 {
                    my.prepare_seq = seq;
                }
                my.commit_seq = seq;
                if earliest != u64::MAX {
                    my.conflict_out = true;
                    my.earliest_out_conflict_commit = my.earliest_out_conflict_commit.min(earliest);
                }
            } else if let Some(st) = remove_sxact(&mut g, me.id) {
                freed.push(st.xact);
            }
            // Committed transactions that finished before every running one
            // took its snapshot can no longer be part of a dangerous structure.
            let horizon =
                g.xacts.values().filter(|s| !s.committed()).map(|s| s.last_commit_before_snapshot).min().unwrap_or(u64::MAX);
            let old: Vec<SxactId> =
                g.xacts.iter().filter(|(_, s)| s.committed() && s.commit_seq <= horizon).map(|(&i, _)| i).collect();
            for i in old {
                if let Some(st) = remove_sxact(&mut g, i) {
                    freed.push(st.xact);
                }
            }
            self.known.store(g.xacts.len(), Ordering::Relaxed);
        }
        // Outside the graph mutex (lock order: a lock list, then partitions).
        for x in freed {
            self.release_locks(&x);
        }
    }

    /// The running read-write serializable transactions other than `me`, taken
    /// after `me`'s snapshot (a superset of PostgreSQL's possibleUnsafeConflicts
    /// of a read-only transaction).
    pub fn running_writers(&self, me: &SerializableXact) -> Vec<SxactId> {
        let mut g = lock(&self.graph);
        let w: Vec<SxactId> =
            g.xacts.iter().filter(|(&i, s)| i != me.id && !s.committed() && !s.read_only).map(|(&i, _)| i).collect();
        if let Some(my) = g.xacts.get_mut(&me.id) {
            my.safe_wait = w.clone();
        }
        w
    }

    /// The pids of the transactions a backend waiting for a safe snapshot
    /// waits for (PostgreSQL's GetSafeSnapshotBlockingPids); empty if it
    /// does not wait.
    pub fn safe_snapshot_blocking_pids(&self, pid: i32) -> Vec<i32> {
        let g = lock(&self.graph);
        let mut out = Vec::new();
        for s in g.xacts.values().filter(|s| s.pid == pid && !s.safe_wait.is_empty()) {
            for w in &s.safe_wait {
                if let Some(ws) = g.xacts.get(w) {
                    if !ws.committed() && !out.contains(&ws.pid) {
                        out.push(ws.pid);
                    }
                }
            }
        }
        out
    }

    /// Is the read-only `me`'s snapshot safe (no dangerous structure can
    /// involve it), unsafe, or not known until some of `writers` end? Unsafe
    /// when one of them committed with a conflict out to a transaction that
    /// committed before `me`'s snapshot. A writer no longer known aborted (a
    /// committed one overlapping `me` is kept while `me` is registered).
    pub fn snapshot_safety(&self, me: &SerializableXact, writers: &[SxactId]) -> SnapshotSafety {
        let g = lock(&self.graph);
        let Some(my) = g.xacts.get(&me.id) else { return SnapshotSafety::Unsafe };
        let mut pending = false;
        for w in writers {
            let Some(ws) = g.xacts.get(w) else { continue };
            if !ws.committed() {
                pending = true;
            } else if ws.conflict_out && ws.earliest_out_conflict_commit <= my.last_commit_before_snapshot {
                return SnapshotSafety::Unsafe;
            }
        }
        if pending {
            SnapshotSafety::Pending
        } else {
            SnapshotSafety::Safe
        }
    }

    /// Is there an rw-edge `reader` -rw-> `writer` (the reader read what the
    /// writer wrote)? For tests.
    pub fn has_rw_conflict(&self, reader: &SerializableXact, writer: &SerializableXact) -> bool {
        lock(&self.graph).xacts.get(&reader.id).is_some_and(|r| r.out_conflicts.contains(&writer.id))
    }

    /// Serializable transactions known (running, or committed and kept).
    pub fn xact_count(&self) -> usize {
        lock(&self.graph).xacts.len()
    }
}

fn remove_sxact(g: &mut Graph, id: SxactId) -> Option<SxactState> {
    let st = g.xacts.remove(&id)?;
    if st.top_xid != 0 {
        g.by_xid.remove(&st.top_xid);
    }
    for n in st.in_conflicts.iter().chain(st.out_conflicts.iter()) {
        if let Some(ns) = g.xacts.get_mut(n) {
            ns.in_conflicts.retain(|&x| x != id);
            ns.out_conflicts.retain(|&x| x != id);
        }
    }
    Some(st)
}

/// Adds the rw-edge reader -> writer after checking whether it completes a
/// dangerous structure (FlagRWConflict + OnConflict_CheckForSerializationFailure).
/// `me` is the transaction doing the check: it fails itself with an error, or
/// dooms the writer.
fn flag_rw_conflict(g: &mut Graph, reader: SxactId, writer: SxactId, me: SxactId) -> Result<()> {
    let (Some(r), Some(w)) = (g.xacts.get(&reader), g.xacts.get(&writer)) else { return Ok(()) };
    // reader -> writer -> T2, the writer committed with a conflict out to a
    // transaction that committed before it.
    let mut failure = w.committed() && w.conflict_out;
    // reader -> writer -> T2 with T2 prepared first, unless the reader or the
    // writer committed before T2, or the reader is read-only and its snapshot
    // predates T2's commit.
    if !failure {
        failure = w.out_conflicts.iter().filter_map(|t| g.xacts.get(t)).any(|t2| {
            t2.prepared()
                && (!r.committed() || t2.prepare_seq <= r.commit_seq)
                && (!w.committed() || t2.prepare_seq <= w.commit_seq)
                && (!r.read_only || t2.prepare_seq <= r.last_commit_before_snapshot)
        });
    }
    // T0 -> reader -> writer, the writer prepared: unless T0 committed before
    // the writer, or is read-only and overlaps it.
    if !failure && w.prepared() && !r.read_only {
        failure = r.in_conflicts.iter().filter_map(|t| g.xacts.get(t)).any(|t0| {
            !t0.doomed()
                && (!t0.committed() || t0.commit_seq >= w.prepare_seq)
                && (!t0.read_only || t0.last_commit_before_snapshot >= w.prepare_seq)
        });
    }
    if failure {
        if writer == me {
            return Err(serialization_failure("Reason code: Canceled on identification as a pivot, during write."));
        }
        if w.prepared() {
            return Err(serialization_failure(format!(
                "Reason code: Canceled on conflict out to pivot {}, during read.",
                w.top_xid
            )));
        }
        w.xact.doomed.store(true, Ordering::Relaxed);
    }
    if let Some(rs) = g.xacts.get_mut(&reader) {
        if !rs.out_conflicts.contains(&writer) {
            rs.out_conflicts.push(writer);
        }
    }
    if let Some(ws) = g.xacts.get_mut(&writer) {
        if !ws.in_conflicts.contains(&reader) {
            ws.in_conflicts.push(reader);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(n: u32) -> RelFileLocator {
        RelFileLocator { spc_oid: 1663, db_oid: 5, rel_number: n }
    }

    #[test]
    fn tuple_locks_promote_to_page_then_relation() {
        let m = PredicateLockManager::new(PredConfig::default());
        let x = m.register(1, "3/1".into(), false);
        m.acquire(&x, PredTarget::Tuple(rel(1), 0, 1));
        m.acquire(&x, PredTarget::Tuple(rel(1), 0, 2));
        assert_eq!(m.held_targets(&x).len(), 2);
        // The third tuple of a page passes max_pred_locks_per_page (2).
        m.acquire(&x, PredTarget::Tuple(rel(1), 0, 3));
        assert_eq!(m.held_targets(&x), vec![PredTarget::Page(rel(1), 0)]);
        // A tuple on a locked page is covered.
        m.acquire(&x, PredTarget::Tuple(rel(1), 0, 4));
        assert_eq!(m.held_targets(&x), vec![PredTarget::Page(rel(1), 0)]);
        // 64 / 2 - 1 = 31 child locks per relation: the 32nd promotes.
        for b in 1..40 {
            m.acquire(&x, PredTarget::Page(rel(1), b));
        }
        assert_eq!(m.held_targets(&x), vec![PredTarget::Relation(rel(1))]);
        assert_eq!(m.lock_status().len(), 1);
        m.release(&x, false);
        assert!(m.lock_status().is_empty());
    }

    #[test]
    fn write_skew_fails_the_pivot() {
        let m = PredicateLockManager::new(PredConfig::default());
        let t1 = m.register(1, "3/1".into(), false);
        let t2 = m.register(2, "4/1".into(), false);
        m.set_top_xid(&t1, 100);
        m.set_top_xid(&t2, 101);
        m.acquire(&t1, PredTarget::Relation(rel(1)));
        m.acquire(&t2, PredTarget::Relation(rel(1)));
        // t1 writes what t2 read: t2 -> t1.
        m.check_conflict_in(&t1, &[PredTarget::Relation(rel(1))]).unwrap();
        // t2 writes what t1 read: t1 -> t2 -> t1, t2 is the writer and a pivot
        // only once someone prepared; nothing committed yet, so no failure.
        m.check_conflict_in(&t2, &[PredTarget::Relation(rel(1))]).unwrap();
        m.pre_commit(&t1).unwrap();
        m.release(&t1, true);
        // t2's commit: it was doomed by t1's pre-commit check (t2 is a pivot).
        let e = m.pre_commit(&t2).unwrap_err();
        assert!(format!("{e:?}").contains("during commit attempt"), "{e:?}");
        m.release(&t2, false);
        assert_eq!(m.xact_count(), 0);
        assert!(m.lock_status().is_empty());
    }

    #[test]
    fn committed_locks_survive_while_an_overlapping_xact_runs() {
        let m = PredicateLockManager::new(PredConfig::default());
        let a = m.register(1, "3/1".into(), false);
        let b = m.register(2, "4/1".into(), false);
        m.acquire(&a, PredTarget::Relation(rel(7)));
        m.pre_commit(&a).unwrap();
        m.release(&a, true);
        assert_eq!(m.lock_status().len(), 1, "b overlaps a: a's lock stays");
        m.pre_commit(&b).unwrap();
        m.release(&b, true);
        assert!(m.lock_status().is_empty());
        assert_eq!(m.xact_count(), 0);
    }
}
