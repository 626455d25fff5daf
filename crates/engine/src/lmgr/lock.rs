//! The heavyweight lock manager: lock tags, the 8 table lock modes, the partitioned
//! shared lock table, per-backend local lock tables, the fast path for weak relation
//! locks, waiting with deadlock detection, lock_timeout, NOWAIT, cancel, advisory
//! locks and the rows of pg_locks.
//!
//! The design, its invariants and its lock ordering are in `lmgr/README.md`,
//! section "Heavyweight locks".

use std::cell::UnsafeCell;
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::{Deref, DerefMut};
use std::time::{Duration, Instant, SystemTime};

use crate::config::Settings;
use crate::error::{Error, Result, SqlState};
use crate::lmgr::deadlock;
use crate::lmgr::fastpath::{fast_path_groups, FastPathSlots};
use crate::lmgr::lwlock::{LwLock, LwLockGuard, Tranche};
use crate::pgstat::wait_event::{report_wait_end, report_wait_start, WaitEvent};
use crate::pgstat::BackendId;
use crate::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicU8, Ordering};
use crate::sync::{Condvar, Mutex};

/// An object identifier.
pub type Oid = u32;
/// A transaction id.
pub type TransactionId = u32;

/// Number of partitions of the shared lock table (PostgreSQL's NUM_LOCK_PARTITIONS).
pub const NUM_LOCK_PARTITIONS: usize = 16;
/// Number of strong-lock counters (PostgreSQL's FAST_PATH_STRONG_LOCK_HASH_PARTITIONS).
pub const FP_STRONG_LOCK_PARTITIONS: usize = 1024;

const _: () = assert!(NUM_LOCK_PARTITIONS.is_power_of_two());
const _: () = assert!(FP_STRONG_LOCK_PARTITIONS.is_power_of_two());

// ---------------------------------------------------------------------------------
// Lock tags
// ---------------------------------------------------------------------------------

/// What is locked. Field meanings follow pg_locks' columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockTag {
    /// A whole relation.
    Relation { db: Oid, rel: Oid },
    /// The right to extend a relation.
    RelationExtend { db: Oid, rel: Oid },
    /// A page of a relation.
    Page { db: Oid, rel: Oid, blk: u32 },
    /// A tuple (blk, offset) of a relation.
    Tuple {
        db: Oid,
        rel: Oid,
        blk: u32,
        offset: u16,
    },
    /// A transaction id: its transaction holds ExclusiveLock on it.
    TransactionId { xid: TransactionId },
    /// A virtual transaction id (backend, local xid).
    VirtualXid { backend: u32, lxid: u32 },
    /// An advisory lock. For the int8 form key1/key2 are the high/low halves and
    /// field4 = 1; for the int4-pair form they are the two keys and field4 = 2.
    Advisory {
        db: Oid,
        key1: u32,
        key2: u32,
        field4: u16,
    },
    /// A general database object.
    Object {
        db: Oid,
        classid: Oid,
        objid: Oid,
        objsubid: u16,
    },
}

/// The lock types, in the order of [`LockTag::type_index`] (per-type statistics,
/// `LockManager::lock_type_stats`).
pub const LOCK_TYPES: [&str; 8] = ["relation", "extend", "page", "tuple", "transactionid", "virtualxid", "object", "advisory"];

impl LockTag {
    /// The tag's position in [`LOCK_TYPES`].
    #[inline]
    pub fn type_index(&self) -> usize {
        match self {
            LockTag::Relation { .. } => 0,
            LockTag::RelationExtend { .. } => 1,
            LockTag::Page { .. } => 2,
            LockTag::Tuple { .. } => 3,
            LockTag::TransactionId { .. } => 4,
            LockTag::VirtualXid { .. } => 5,
            LockTag::Object { .. } => 6,
            LockTag::Advisory { .. } => 7,
        }
    }

    /// pg_locks.locktype; also the wait event name (`Lock:<locktype>`).
    pub fn locktype(&self) -> &'static str {
        match self {
            LockTag::Relation { .. } => "relation",
            LockTag::RelationExtend { .. } => "extend",
            LockTag::Page { .. } => "page",
            LockTag::Tuple { .. } => "tuple",
            LockTag::TransactionId { .. } => "transactionid",
            LockTag::VirtualXid { .. } => "virtualxid",
            LockTag::Advisory { .. } => "advisory",
            LockTag::Object { .. } => "object",
        }
    }

    /// The tag's hash code: picks the partition (low bits) and the strong-lock
    /// counter (higher bits).
    #[inline]
    pub fn hashcode(&self) -> u64 {
        let (kind, a, b, c, d): (u64, u32, u32, u32, u32) = match *self {
            LockTag::Relation { db, rel } => (1, db, rel, 0, 0),
            LockTag::RelationExtend { db, rel } => (2, db, rel, 0, 0),
            LockTag::Page { db, rel, blk } => (3, db, rel, blk, 0),
            LockTag::Tuple {
                db,
                rel,
                blk,
                offset,
            } => (4, db, rel, blk, offset as u32),
            LockTag::TransactionId { xid } => (5, xid, 0, 0, 0),
            LockTag::VirtualXid { backend, lxid } => (6, backend, lxid, 0, 0),
            LockTag::Advisory {
                db,
                key1,
                key2,
                field4,
            } => (7, db, key1, key2, field4 as u32),
            LockTag::Object {
                db,
                classid,
                objid,
                objsubid,
            } => (8, db, classid, objid, objsubid as u32),
        };
        let mut h = kind.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        for v in [a, b, c, d] {
            h = (h ^ v as u64).wrapping_mul(0xFF51_AFD7_ED55_8CCD);
            h ^= h >> 29;
        }
        h
    }

    fn is_relation(&self) -> bool {
        matches!(self, LockTag::Relation { .. })
    }

    /// (database << 32 | relation) for a relation tag: its fast-path slot key.
    fn relation_key(&self) -> Option<u64> {
        match *self {
            LockTag::Relation { db, rel } => Some(((db as u64) << 32) | rel as u64),
            _ => None,
        }
    }
}

impl std::hash::Hash for LockTag {
    /// Feeds `hashcode()` (one word; equal tags have equal hash codes).
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.hashcode());
    }
}

impl fmt::Display for LockTag {
    /// PostgreSQL's description of a lock tag, as in deadlock reports.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            LockTag::Relation { db, rel } => write!(f, "relation {rel} of database {db}"),
            LockTag::RelationExtend { db, rel } => {
                write!(f, "extension of relation {rel} of database {db}")
            }
            LockTag::Page { db, rel, blk } => {
                write!(f, "page {blk} of relation {rel} of database {db}")
            }
            LockTag::Tuple {
                db,
                rel,
                blk,
                offset,
            } => {
                write!(
                    f,
                    "tuple ({blk},{offset}) of relation {rel} of database {db}"
                )
            }
            LockTag::TransactionId { xid } => write!(f, "transaction {xid}"),
            LockTag::VirtualXid { backend, lxid } => {
                write!(f, "virtual transaction {}/{lxid}", backend as i32)
            }
            LockTag::Advisory {
                db,
                key1,
                key2,
                field4,
            } => {
                write!(f, "advisory lock [{db},{key1},{key2},{field4}]")
            }
            LockTag::Object {
                db,
                classid,
                objid,
                objsubid: _,
            } => {
                write!(f, "object {objid} of class {classid} of database {db}")
            }
        }
    }
}

// ---------------------------------------------------------------------------------
// Lock modes
// ---------------------------------------------------------------------------------

/// A set of lock modes: bit `m` for mode number `m` (1..=8).
pub type LockMask = u16;

/// The 8 table lock modes, weakest first, numbered as in PostgreSQL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum LockMode {
    AccessShare = 1,
    RowShare = 2,
    RowExclusive = 3,
    ShareUpdateExclusive = 4,
    Share = 5,
    ShareRowExclusive = 6,
    Exclusive = 7,
    AccessExclusive = 8,
}

const fn b(m: u8) -> LockMask {
    1 << m
}

/// CONFLICTS[m]: the modes that conflict with mode m (PostgreSQL's conflict table).
const CONFLICTS: [LockMask; 9] = [
    0,
    // AccessShare
    b(8),
    // RowShare
    b(7) | b(8),
    // RowExclusive
    b(5) | b(6) | b(7) | b(8),
    // ShareUpdateExclusive
    b(4) | b(5) | b(6) | b(7) | b(8),
    // Share
    b(3) | b(4) | b(6) | b(7) | b(8),
    // ShareRowExclusive
    b(3) | b(4) | b(5) | b(6) | b(7) | b(8),
    // Exclusive
    b(2) | b(3) | b(4) | b(5) | b(6) | b(7) | b(8),
    // AccessExclusive
    b(1) | b(2) | b(3) | b(4) | b(5) | b(6) | b(7) | b(8),
];

/// The weak modes that may use the fast path.
const WEAK_MASK: LockMask = b(1) | b(2) | b(3);

impl LockMode {
    pub const ALL: [LockMode; 8] = [
        LockMode::AccessShare,
        LockMode::RowShare,
        LockMode::RowExclusive,
        LockMode::ShareUpdateExclusive,
        LockMode::Share,
        LockMode::ShareRowExclusive,
        LockMode::Exclusive,
        LockMode::AccessExclusive,
    ];

    #[inline]
    pub fn bit(self) -> LockMask {
        1 << (self as u8)
    }

    /// The modes that conflict with this one.
    #[inline]
    pub fn conflict_mask(self) -> LockMask {
        CONFLICTS[self as usize]
    }

    #[inline]
    pub fn conflicts_with(self, other: LockMode) -> bool {
        self.conflict_mask() & other.bit() != 0
    }

    /// The name pg_locks.mode shows.
    pub fn name(self) -> &'static str {
        match self {
            LockMode::AccessShare => "AccessShareLock",
            LockMode::RowShare => "RowShareLock",
            LockMode::RowExclusive => "RowExclusiveLock",
            LockMode::ShareUpdateExclusive => "ShareUpdateExclusiveLock",
            LockMode::Share => "ShareLock",
            LockMode::ShareRowExclusive => "ShareRowExclusiveLock",
            LockMode::Exclusive => "ExclusiveLock",
            LockMode::AccessExclusive => "AccessExclusiveLock",
        }
    }

    /// May use the fast path (on a relation): AccessShare, RowShare, RowExclusive.
    #[inline]
    fn is_weak(self) -> bool {
        WEAK_MASK & self.bit() != 0
    }

    /// Conflicts with at least one weak mode (Share and stronger; not
    /// ShareUpdateExclusive, which conflicts with no weak mode).
    #[inline]
    fn is_strong(self) -> bool {
        self.conflict_mask() & WEAK_MASK != 0
    }

    /// The fast-path bit of a weak mode (bit 0 AccessShare .. bit 2 RowExclusive).
    #[inline]
    fn fp_bit(self) -> u8 {
        1 << (self as u8 - 1)
    }
}

fn modes_in(mask: LockMask) -> impl Iterator<Item = LockMode> {
    LockMode::ALL
        .into_iter()
        .filter(move |m| mask & m.bit() != 0)
}

// ---------------------------------------------------------------------------------
// Data under an LWLock
// ---------------------------------------------------------------------------------

/// Data protected by an LWLock. The LWLock API has no payload, so the data sits in an
/// `UnsafeCell` beside it and is reachable only through a guard.
pub(crate) struct LwCell<T> {
    lock: LwLock,
    data: UnsafeCell<T>,
}

// SAFETY: `data` is reached only through `LwRead` (shared LWLock held: many readers,
// no writer) or `LwWrite` (exclusive LWLock held: one accessor).
unsafe impl<T: Send> Sync for LwCell<T> {}

pub(crate) struct LwRead<'a, T> {
    _guard: LwLockGuard<'a>,
    data: &'a T,
}

pub(crate) struct LwWrite<'a, T> {
    _guard: LwLockGuard<'a>,
    data: &'a mut T,
}

impl<T> LwCell<T> {
    pub(crate) fn new(tranche: Tranche, data: T) -> LwCell<T> {
        LwCell {
            lock: LwLock::new(tranche),
            data: UnsafeCell::new(data),
        }
    }

    pub(crate) fn read(&self) -> LwRead<'_, T> {
        let g = self.lock.shared();
        // SAFETY: shared LWLock held until the guard drops; no writer meanwhile.
        LwRead {
            _guard: g,
            data: unsafe { &*self.data.get() },
        }
    }

    pub(crate) fn write(&self) -> LwWrite<'_, T> {
        let g = self.lock.exclusive();
        // SAFETY: exclusive LWLock held until the guard drops; sole accessor.
        LwWrite {
            _guard: g,
            data: unsafe { &mut *self.data.get() },
        }
    }
}

impl<T> Deref for LwRead<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.data
    }
}

impl<T> Deref for LwWrite<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.data
    }
}

impl<T> DerefMut for LwWrite<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.data
    }
}

// ---------------------------------------------------------------------------------
// The shared lock table
// ---------------------------------------------------------------------------------

/// A cheap hasher for lock tags (they carry their own good hash code).
#[derive(Default)]
pub(crate) struct TagHasher(u64);

impl Hasher for TagHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &x in bytes {
            self.0 = (self.0.rotate_left(5) ^ x as u64).wrapping_mul(0x517C_C1B7_2722_0A95);
        }
    }
    fn write_u8(&mut self, i: u8) {
        self.write_u64(i as u64)
    }
    fn write_u16(&mut self, i: u16) {
        self.write_u64(i as u64)
    }
    fn write_u32(&mut self, i: u32) {
        self.write_u64(i as u64)
    }
    fn write_u64(&mut self, i: u64) {
        self.0 = (self.0.rotate_left(5) ^ i).wrapping_mul(0x517C_C1B7_2722_0A95);
    }
    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64)
    }
    fn write_isize(&mut self, i: isize) {
        self.write_u64(i as u64)
    }
}

pub(crate) type TagMap<K, V> = HashMap<K, V, BuildHasherDefault<TagHasher>>;

/// One backend's hold on a shared lock (PostgreSQL's PROCLOCK).
#[derive(Clone, Debug)]
pub(crate) struct Holder {
    pub(crate) backend: BackendId,
    /// Modes this backend holds on the lock; never 0 while in `holders`.
    pub(crate) hold_mask: LockMask,
}

/// One backend waiting for a lock.
#[derive(Clone, Debug)]
pub(crate) struct Waiter {
    pub(crate) backend: BackendId,
    pub(crate) mode: LockMode,
    /// When the wait began (pg_locks.waitstart).
    pub(crate) wait_start: SystemTime,
}

/// A lock object in the shared table (PostgreSQL's LOCK). All fields are protected
/// by the partition's LockManager LWLock.
#[derive(Debug, Default)]
pub(crate) struct SharedLock {
    /// Modes with granted[m] > 0.
    pub(crate) grant_mask: LockMask,
    /// Modes requested by at least one waiter.
    pub(crate) wait_mask: LockMask,
    /// requested[m]: holders of m plus waiters for m.
    pub(crate) requested: [u32; 9],
    pub(crate) n_requested: u32,
    /// granted[m]: backends holding m (each counted once; re-acquisitions are counted
    /// in the backend's local lock table).
    pub(crate) granted: [u32; 9],
    pub(crate) n_granted: u32,
    /// Backends holding at least one mode.
    pub(crate) holders: Vec<Holder>,
    /// Waiters in grant order.
    pub(crate) waiters: VecDeque<Waiter>,
}

impl SharedLock {
    pub(crate) fn holder_mask(&self, backend: BackendId) -> LockMask {
        self.holders
            .iter()
            .find(|h| h.backend == backend)
            .map_or(0, |h| h.hold_mask)
    }

    /// Does `mode` conflict with a mode granted to another backend?
    fn conflicts_with_others(&self, backend: BackendId, mode: LockMode) -> bool {
        let candidates = mode.conflict_mask() & self.grant_mask;
        if candidates == 0 {
            return false;
        }
        let mine = self.holder_mask(backend);
        modes_in(candidates).any(|m| {
            let own = (mine & m.bit() != 0) as u32;
            self.granted[m as usize] > own
        })
    }

    /// Grants `mode` to `backend` (requested is counted by the caller).
    fn grant(&mut self, backend: BackendId, mode: LockMode) {
        match self.holders.iter_mut().find(|h| h.backend == backend) {
            Some(h) => {
                debug_assert!(h.hold_mask & mode.bit() == 0);
                h.hold_mask |= mode.bit();
            }
            None => self.holders.push(Holder {
                backend,
                hold_mask: mode.bit(),
            }),
        }
        self.granted[mode as usize] += 1;
        self.n_granted += 1;
        self.grant_mask |= mode.bit();
    }

    /// Drops `backend`'s grant of `mode`, and its request. False if not held.
    fn ungrant(&mut self, backend: BackendId, mode: LockMode) -> bool {
        let Some(i) = self.holders.iter().position(|h| h.backend == backend) else {
            return false;
        };
        if self.holders[i].hold_mask & mode.bit() == 0 {
            return false;
        }
        self.holders[i].hold_mask &= !mode.bit();
        if self.holders[i].hold_mask == 0 {
            self.holders.swap_remove(i);
        }
        self.granted[mode as usize] -= 1;
        self.n_granted -= 1;
        self.requested[mode as usize] -= 1;
        self.n_requested -= 1;
        if self.granted[mode as usize] == 0 {
            self.grant_mask &= !mode.bit();
        }
        true
    }

    fn recompute_wait_mask(&mut self) {
        self.wait_mask = self.waiters.iter().fold(0, |m, w| m | w.mode.bit());
    }

    /// Removes `backend` from the wait queue (and its request). False if absent.
    fn remove_waiter(&mut self, backend: BackendId) -> bool {
        let Some(i) = self.waiters.iter().position(|w| w.backend == backend) else {
            return false;
        };
        let w = self.waiters.remove(i).expect("index in range");
        self.requested[w.mode as usize] -= 1;
        self.n_requested -= 1;
        self.recompute_wait_mask();
        true
    }

    fn is_unused(&self) -> bool {
        self.n_requested == 0
    }
}

/// One partition of the shared lock table.
#[derive(Default)]
pub(crate) struct PartitionTable {
    pub(crate) locks: TagMap<LockTag, SharedLock>,
}

// ---------------------------------------------------------------------------------
// Per-backend state
// ---------------------------------------------------------------------------------

/// Wait status values of `Proc::wait_status`.
const WAIT_NONE: u8 = 0;
const WAIT_WAITING: u8 = 1;
const WAIT_GRANTED: u8 = 2;

/// A counting semaphore a backend sleeps on (PostgreSQL's PGSemaphore).
struct Sema {
    count: Mutex<u32>,
    cv: Condvar,
}

impl Sema {
    fn post(&self) {
        let mut c = self.count.lock().unwrap_or_else(|e| e.into_inner());
        *c += 1;
        self.cv.notify_one();
    }

    /// Waits until posted or `deadline`; consumes one post if there was one.
    fn wait_until(&self, deadline: Instant) {
        let mut c = self.count.lock().unwrap_or_else(|e| e.into_inner());
        while *c == 0 {
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            c = self
                .cv
                .wait_timeout(c, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        *c -= 1;
    }
}

/// A backend's re-acquisition counts for one (tag, mode) (PostgreSQL's LOCALLOCK).
#[derive(Clone, Copy, Debug, Default)]
struct LocalLock {
    /// Transaction-lifetime acquisitions not yet released.
    xact: u32,
    /// Session-lifetime acquisitions not yet released.
    session: u32,
    /// Acquired through the fast path (it may since have been transferred).
    fast_path: bool,
    /// This acquisition incremented a strong-lock counter (decremented on release).
    strong: bool,
    /// While `xact > 0`: the outermost subtransaction nesting level (1 = top)
    /// that holds a transaction-lifetime acquisition. A ROLLBACK TO of a level
    /// at or above it releases the lock; a RELEASE of it moves it to the parent.
    level: u32,
}

/// One backend's heavyweight-lock counters by lock type ([`LOCK_TYPES`]
/// order). Written only by the owning backend (single writer: a Relaxed load
/// and store, no read-modify-write), read by anyone as a sample. They outlive
/// the backend: the next backend on the slot goes on adding to them, so the
/// sums over all slots are cumulative for the server's life.
struct ProcLockStats {
    /// Locks granted through the backend's fast-path slots.
    fast_path: [AtomicU64; 8],
    /// Locks granted by the shared lock table (at once or after a wait).
    main: [AtomicU64; 8],
    /// Waits (a request that had to queue), however they ended.
    waits: [AtomicU64; 8],
    /// Total and longest wait, in microseconds.
    wait_us: [AtomicU64; 8],
    max_wait_us: [AtomicU64; 8],
}

impl ProcLockStats {
    fn new() -> ProcLockStats {
        let z = || std::array::from_fn(|_| AtomicU64::new(0));
        ProcLockStats { fast_path: z(), main: z(), waits: z(), wait_us: z(), max_wait_us: z() }
    }

    /// Adds `n` to the owner's counter `c` (single writer: no RMW needed).
    #[inline]
    fn add(c: &AtomicU64, n: u64) {
        // Relaxed: only the owner writes; readers take a sample.
        c.store(c.load(Ordering::Relaxed) + n, Ordering::Relaxed);
    }
}

/// Heavyweight-lock statistics of one lock type (`LockManager::lock_type_stats`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LockTypeStats {
    pub locktype: &'static str,
    pub fast_path: u64,
    pub main: u64,
    pub waits: u64,
    pub wait_time: Duration,
    pub max_wait: Duration,
}

/// The shared per-backend state (PostgreSQL's PGPROC, lock part).
struct Proc {
    /// pid-like number shown in pg_locks.pid and deadlock reports; 0 = unregistered.
    pid: AtomicI32,
    /// Current local transaction id (virtualtransaction = "<backend>/<lxid>").
    /// Written by the owner at transaction start; others read it for display.
    lxid: AtomicU32,
    /// Subtransaction nesting level of the running transaction (1 = top). Written
    /// and read only by the owner.
    nest_level: AtomicU32,
    /// Cancel request flag, checked while waiting.
    cancel: AtomicBool,
    /// WAIT_NONE / WAIT_WAITING / WAIT_GRANTED. Written only under the partition
    /// lock of the lock being waited for; the owner reads it without that lock after
    /// its semaphore is posted (Acquire pairs with the granter's Release).
    wait_status: AtomicU8,
    sema: Sema,
    /// Fast-path slots under the LockFastPath LWLock.
    fast_path: LwCell<FastPathSlots>,
    /// The local lock table. Only the owning backend touches it (the mutex is
    /// uncontended; it makes the manager `Sync`).
    local: Mutex<TagMap<(LockTag, LockMode), LocalLock>>,
    /// The backend's own deadlock_timeout in ms (its session's setting);
    /// `NO_OVERRIDE`: the manager's. Read only by the owner, while waiting.
    deadlock_timeout_ms: AtomicU64,
    /// The backend's own lock_timeout in ms (0 = none); `NO_OVERRIDE`: the manager's.
    lock_timeout_ms: AtomicU64,
    /// Lock statistics (owner-written), allocated at the slot's first lock:
    /// a slot never used costs a pointer, not 320 bytes (max_connections may
    /// be 262143; see settings_startup's memory test).
    stats: std::sync::OnceLock<Box<ProcLockStats>>,
    /// When the backend's running statement passes its statement_timeout, in ms
    /// since `LockManager::epoch` (`NO_OVERRIDE`: none armed). Written and read
    /// only by the owner: a lock wait ends with 57014 at that moment.
    stmt_deadline_ms: AtomicU64,
}

impl Proc {
    /// The slot's lock statistics, allocated at first use (only the owner
    /// calls this, so the initialization never races with another writer).
    #[inline]
    fn lock_stats(&self) -> &ProcLockStats {
        self.stats.get_or_init(|| Box::new(ProcLockStats::new()))
    }
}

/// A per-backend timeout that is not set (the manager's setting applies).
const NO_OVERRIDE: u64 = u64::MAX;

// ---------------------------------------------------------------------------------
// The manager
// ---------------------------------------------------------------------------------

/// Options of one lock request.
#[derive(Clone, Copy, Debug, Default)]
pub struct LockOptions {
    /// NOWAIT: return `NotAvailable` instead of waiting.
    pub dont_wait: bool,
    /// Session lifetime (survives commit) instead of transaction lifetime.
    pub session: bool,
    /// lock_timeout for this request in ms (None: the manager's setting; 0 = none).
    pub lock_timeout_ms: Option<u64>,
}

/// Outcome of a successful lock call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockAcquireResult {
    /// Newly acquired.
    Acquired,
    /// This backend already held the lock; its count was incremented.
    AlreadyHeld,
    /// `dont_wait` was set and the lock was not free (NOWAIT). Format the error
    /// with [`nowait_relation_error`] / [`nowait_row_error`].
    NotAvailable,
}

/// The 55P03 error of NOWAIT on a relation (the SQL layer knows the name).
pub fn nowait_relation_error(relname: &str) -> Error {
    Error::user(
        SqlState::LOCK_NOT_AVAILABLE,
        format!("could not obtain lock on relation \"{relname}\""),
    )
}

/// The 55P03 error of NOWAIT on a row lock.
pub fn nowait_row_error(relname: &str) -> Error {
    Error::user(
        SqlState::LOCK_NOT_AVAILABLE,
        format!("could not obtain lock on row in relation \"{relname}\""),
    )
}

fn lock_timeout_error() -> Error {
    Error::user(
        SqlState::LOCK_NOT_AVAILABLE,
        "canceling statement due to lock timeout",
    )
}

fn statement_timeout_error() -> Error {
    Error::user(
        SqlState::QUERY_CANCELED,
        "canceling statement due to statement timeout",
    )
}

fn cancel_error() -> Error {
    Error::user(
        SqlState::QUERY_CANCELED,
        "canceling statement due to user request",
    )
}

/// One row of pg_locks.
#[derive(Clone, Debug, PartialEq)]
pub struct LockStatusRow {
    pub locktype: &'static str,
    pub database: Option<Oid>,
    pub relation: Option<Oid>,
    pub page: Option<u32>,
    pub tuple: Option<u16>,
    pub virtualxid: Option<String>,
    pub transactionid: Option<TransactionId>,
    pub classid: Option<Oid>,
    pub objid: Option<Oid>,
    pub objsubid: Option<i16>,
    pub virtualtransaction: Option<String>,
    pub pid: Option<i32>,
    pub mode: &'static str,
    pub granted: bool,
    pub fastpath: bool,
    pub waitstart: Option<SystemTime>,
}

/// An advisory lock key, as the two SQL forms take it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AdvisoryKey {
    /// `pg_advisory_lock(bigint)`.
    Int8(i64),
    /// `pg_advisory_lock(int, int)`.
    Int4Pair(i32, i32),
}

impl AdvisoryKey {
    pub fn tag(self, db: Oid) -> LockTag {
        match self {
            AdvisoryKey::Int8(k) => LockTag::Advisory {
                db,
                key1: ((k as u64) >> 32) as u32,
                key2: k as u64 as u32,
                field4: 1,
            },
            AdvisoryKey::Int4Pair(a, b) => LockTag::Advisory {
                db,
                key1: a as u32,
                key2: b as u32,
                field4: 2,
            },
        }
    }
}

/// Outcome of `advisory_unlock`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdvisoryUnlock {
    /// The function's boolean result.
    pub released: bool,
    /// The WARNING PostgreSQL emits when the lock was not held.
    pub warning: Option<String>,
}

/// The heavyweight lock manager, shared by all backends (`Arc<LockManager>`).
pub struct LockManager {
    deadlock_timeout: Duration,
    lock_timeout_ms: u64,
    fast_path_enabled: bool,
    partitions: Box<[LwCell<PartitionTable>]>,
    /// strong_counts[i]: strong relation locks held or awaited whose tag hashes to i.
    strong_counts: Box<[AtomicU32]>,
    procs: Box<[Proc]>,
    /// Origin of `Proc::stmt_deadline_ms`.
    epoch: Instant,
    /// Fast-path locks moved into the shared table by strong lockers (Relaxed:
    /// a statistic, added under the fast-path LWLock of the backend moved from).
    fast_path_transfers: AtomicU64,
    /// log_lock_waits: a LOG line when a wait passes deadlock_timeout, and when
    /// it ends after that.
    log_lock_waits: bool,
}

#[inline]
fn partition_of(hash: u64) -> usize {
    (hash as usize) & (NUM_LOCK_PARTITIONS - 1)
}

#[inline]
fn strong_index(hash: u64) -> usize {
    ((hash >> 16) as usize) & (FP_STRONG_LOCK_PARTITIONS - 1)
}

impl LockManager {
    /// A lock manager for backends 0..max_backends, fast path on.
    pub fn new(settings: &Settings, max_backends: usize) -> LockManager {
        LockManager::with_fast_path(settings, max_backends, true)
    }

    /// As `new`, choosing whether weak relation locks may use the fast path
    /// (off: every lock goes through the shared table, as before PostgreSQL 9.2).
    pub fn with_fast_path(
        settings: &Settings,
        max_backends: usize,
        fast_path: bool,
    ) -> LockManager {
        let groups = fast_path_groups(settings.max_locks_per_transaction);
        let procs = (0..max_backends)
            .map(|_| Proc {
                pid: AtomicI32::new(0),
                lxid: AtomicU32::new(0),
                nest_level: AtomicU32::new(1),
                cancel: AtomicBool::new(false),
                wait_status: AtomicU8::new(WAIT_NONE),
                sema: Sema {
                    count: Mutex::new(0),
                    cv: Condvar::new(),
                },
                fast_path: LwCell::new(Tranche::LockFastPath, FastPathSlots::new(groups)),
                local: Mutex::new(TagMap::default()),
                deadlock_timeout_ms: AtomicU64::new(NO_OVERRIDE),
                lock_timeout_ms: AtomicU64::new(NO_OVERRIDE),
                stmt_deadline_ms: AtomicU64::new(NO_OVERRIDE),
                stats: std::sync::OnceLock::new(),
            })
            .collect();
        LockManager {
            deadlock_timeout: Duration::from_millis(settings.deadlock_timeout_ms),
            lock_timeout_ms: settings.lock_timeout_ms,
            fast_path_enabled: fast_path,
            partitions: (0..NUM_LOCK_PARTITIONS)
                .map(|_| LwCell::new(Tranche::LockManager, PartitionTable::default()))
                .collect(),
            strong_counts: (0..FP_STRONG_LOCK_PARTITIONS)
                .map(|_| AtomicU32::new(0))
                .collect(),
            procs,
            epoch: Instant::now(),
            fast_path_transfers: AtomicU64::new(0),
            log_lock_waits: settings.log_lock_waits,
        }
    }

    /// Heavyweight-lock statistics by lock type, summed over every backend slot
    /// (a sample: each counter is read once, Relaxed), and the number of
    /// fast-path locks strong lockers moved to the shared table.
    pub fn lock_type_stats(&self) -> (Vec<LockTypeStats>, u64) {
        let mut out: Vec<LockTypeStats> = LOCK_TYPES.iter().map(|t| LockTypeStats { locktype: t, ..Default::default() }).collect();
        for p in self.procs.iter() {
            let Some(s) = p.stats.get() else { continue };
            for (i, o) in out.iter_mut().enumerate() {
                // Relaxed: statistics.
                o.fast_path += s.fast_path[i].load(Ordering::Relaxed);
                o.main += s.main[i].load(Ordering::Relaxed);
                o.waits += s.waits[i].load(Ordering::Relaxed);
                o.wait_time += Duration::from_micros(s.wait_us[i].load(Ordering::Relaxed));
                o.max_wait = o.max_wait.max(Duration::from_micros(s.max_wait_us[i].load(Ordering::Relaxed)));
            }
        }
        (out, self.fast_path_transfers.load(Ordering::Relaxed))
    }

    /// Fast-path slots per backend.
    pub fn fast_path_slots(&self) -> usize {
        self.procs
            .first()
            .map_or(0, |p| p.fast_path.read().capacity())
    }

    fn proc(&self, backend: BackendId) -> Result<&Proc> {
        self.procs.get(backend.0 as usize).ok_or_else(|| {
            Error::internal(format!(
                "backend id {} out of range (max {})",
                backend.0,
                self.procs.len()
            ))
        })
    }

    /// Registers a backend with its pid-like number (shown in pg_locks and deadlock
    /// reports).
    pub fn register_backend(&self, backend: BackendId, pid: i32) -> Result<()> {
        let p = self.proc(backend)?;
        p.pid.store(pid, Ordering::Relaxed); // read only for display
        p.cancel.store(false, Ordering::Relaxed);
        Ok(())
    }

    /// Marks a backend gone. Its locks must have been released (`release_all`).
    pub fn unregister_backend(&self, backend: BackendId) -> Result<()> {
        self.release_all(backend, false)?;
        self.proc(backend)?.pid.store(0, Ordering::Relaxed);
        Ok(())
    }

    /// Sets the backend's own deadlock_timeout and lock_timeout (ms; lock_timeout 0
    /// = none), as its session's settings say; `None` = the manager's setting. A
    /// request's `LockOptions::lock_timeout_ms` still wins over these.
    pub fn set_backend_timeouts(
        &self,
        backend: BackendId,
        deadlock_timeout_ms: Option<u64>,
        lock_timeout_ms: Option<u64>,
    ) -> Result<()> {
        let p = self.proc(backend)?;
        // Relaxed: written and read by the owning backend only.
        p.deadlock_timeout_ms
            .store(deadlock_timeout_ms.unwrap_or(NO_OVERRIDE), Ordering::Relaxed);
        p.lock_timeout_ms
            .store(lock_timeout_ms.unwrap_or(NO_OVERRIDE), Ordering::Relaxed);
        Ok(())
    }

    /// Arms (`Some(deadline)`) or disarms the backend's statement_timeout: a
    /// lock wait still going at `deadline` ends with 57014 "canceling statement
    /// due to statement timeout". Called by the backend itself around each
    /// statement (one relaxed store).
    pub fn set_statement_deadline(&self, backend: BackendId, deadline: Option<Instant>) -> Result<()> {
        let ms = match deadline {
            Some(d) => (d.saturating_duration_since(self.epoch).as_millis() as u64).min(NO_OVERRIDE - 1),
            None => NO_OVERRIDE,
        };
        // Relaxed: written and read by the owning backend only.
        self.proc(backend)?.stmt_deadline_ms.store(ms, Ordering::Relaxed);
        Ok(())
    }

    /// Sets the backend's current local transaction id (pg_locks.virtualtransaction).
    pub fn set_local_xid(&self, backend: BackendId, lxid: u32) -> Result<()> {
        self.proc(backend)?.lxid.store(lxid, Ordering::Relaxed); // display only
        Ok(())
    }

    /// Requests cancellation of `backend`'s current lock wait (57014).
    pub fn cancel(&self, backend: BackendId) -> Result<()> {
        let p = self.proc(backend)?;
        // Release: a waiter that sees the flag after the post sees it set.
        p.cancel.store(true, Ordering::Release);
        p.sema.post();
        Ok(())
    }

    /// Takes (returns and clears) a pending cancel request that no lock wait
    /// consumed, for the caller's own interrupt checks.
    pub fn take_cancel(&self, backend: BackendId) -> Result<bool> {
        Ok(self.proc(backend)?.cancel.swap(false, Ordering::Acquire))
    }

    // ----- acquire ------------------------------------------------------------------

    /// Acquires `mode` on `tag` for `backend`, waiting if needed.
    pub fn lock(
        &self,
        backend: BackendId,
        tag: LockTag,
        mode: LockMode,
        opts: LockOptions,
    ) -> Result<LockAcquireResult> {
        let proc = self.proc(backend)?;
        let mut local = proc.local.lock().unwrap_or_else(|e| e.into_inner());
        // Relaxed: the owner's own field.
        let level = proc.nest_level.load(Ordering::Relaxed);
        if let Some(l) = local.get_mut(&(tag, mode)) {
            if opts.session {
                l.session += 1;
            } else {
                if l.xact == 0 {
                    l.level = level;
                }
                l.xact += 1;
            }
            return Ok(LockAcquireResult::AlreadyHeld);
        }
        let hash = tag.hashcode();
        let mut entry = LocalLock {
            xact: (!opts.session) as u32,
            session: opts.session as u32,
            fast_path: false,
            strong: false,
            level,
        };

        if self.fast_path_enabled && mode.is_weak() {
            if let Some(key) = tag.relation_key() {
                let mut fp = proc.fast_path.write();
                // Relaxed: a strong locker increments this counter before it takes
                // our fast-path LWLock to transfer; holding that LWLock here orders
                // the two (README, "Fast path correctness").
                if self.strong_counts[strong_index(hash)].load(Ordering::Relaxed) == 0
                    && fp.try_grant(key, mode.fp_bit())
                {
                    drop(fp);
                    ProcLockStats::add(&proc.lock_stats().fast_path[tag.type_index()], 1);
                    entry.fast_path = true;
                    local.insert((tag, mode), entry);
                    return Ok(LockAcquireResult::Acquired);
                }
            }
        }

        if tag.is_relation() && mode.is_strong() {
            // Relaxed: published to weak lockers through each backend's fast-path
            // LWLock, which the transfer below takes after this increment.
            self.strong_counts[strong_index(hash)].fetch_add(1, Ordering::Relaxed);
            entry.strong = true;
            if self.fast_path_enabled {
                self.transfer_fast_path(tag, hash);
            }
        }

        let result = self.acquire_main(backend, proc, tag, hash, mode, &opts);
        match result {
            Ok(LockAcquireResult::Acquired) => {
                ProcLockStats::add(&proc.lock_stats().main[tag.type_index()], 1);
                local.insert((tag, mode), entry);
                Ok(LockAcquireResult::Acquired)
            }
            other => {
                if entry.strong {
                    // Relaxed: no main-table lock was obtained, nothing to publish.
                    self.strong_counts[strong_index(hash)].fetch_sub(1, Ordering::Relaxed);
                }
                other
            }
        }
    }

    /// Moves every backend's fast-path locks on `tag` (a relation) into the shared
    /// table. Called after the strong counter was incremented.
    fn transfer_fast_path(&self, tag: LockTag, hash: u64) {
        let key = tag.relation_key().expect("relation tag");
        let part = &self.partitions[partition_of(hash)];
        for (i, proc) in self.procs.iter().enumerate() {
            let mut fp = proc.fast_path.write();
            let bits = fp.take(key);
            if bits == 0 {
                continue;
            }
            // Relaxed: a statistic.
            self.fast_path_transfers.fetch_add(u64::from(bits.count_ones()), Ordering::Relaxed);
            // Lock order: a fast-path LWLock, then a partition LWLock (README rule 3).
            let mut table = part.write();
            let lock = table.locks.entry(tag).or_default();
            for m in [
                LockMode::AccessShare,
                LockMode::RowShare,
                LockMode::RowExclusive,
            ] {
                if bits & m.fp_bit() != 0 {
                    lock.requested[m as usize] += 1;
                    lock.n_requested += 1;
                    lock.grant(BackendId(i as u32), m);
                }
            }
        }
    }

    fn acquire_main(
        &self,
        backend: BackendId,
        proc: &Proc,
        tag: LockTag,
        hash: u64,
        mode: LockMode,
        opts: &LockOptions,
    ) -> Result<LockAcquireResult> {
        let part = &self.partitions[partition_of(hash)];
        let mut table = part.write();
        let lock = table.locks.entry(tag).or_default();
        let must_wait =
            mode.conflict_mask() & lock.wait_mask != 0 || lock.conflicts_with_others(backend, mode);
        if !must_wait {
            lock.requested[mode as usize] += 1;
            lock.n_requested += 1;
            lock.grant(backend, mode);
            return Ok(LockAcquireResult::Acquired);
        }
        // Queue up. FIFO, except that a backend already holding modes that conflict
        // with a queued request goes in front of the first such waiter (and is
        // granted at once if nothing before that point and no other holder blocks it;
        // this applies to NOWAIT requests too).
        let held = lock.holder_mask(backend);
        let mut pos = lock.waiters.len();
        let mut grant_now = false;
        if held != 0 {
            let mut ahead: LockMask = 0;
            for (i, w) in lock.waiters.iter().enumerate() {
                if w.mode.conflict_mask() & held != 0 {
                    // Early deadlock (PostgreSQL's "simple deadlock" in ProcSleep):
                    // that waiter waits for us, and we would wait for a mode it
                    // holds. Fail at once, without queueing or waiting for
                    // deadlock_timeout.
                    let (wb, wm) = (w.backend, w.mode);
                    if !opts.dont_wait && mode.conflict_mask() & lock.holder_mask(wb) != 0 {
                        if lock.is_unused() {
                            table.locks.remove(&tag);
                        }
                        drop(table);
                        let cycle = [
                            deadlock::Edge { waiter: backend, mode, tag, blocker: wb, soft: false },
                            deadlock::Edge { waiter: wb, mode: wm, tag, blocker: backend, soft: false },
                        ];
                        let pid_of = |b: BackendId| {
                            self.procs
                                .get(b.0 as usize)
                                .map_or(0, |p| p.pid.load(Ordering::Relaxed))
                        };
                        return Err(deadlock::deadlock_error(&cycle, &pid_of));
                    }
                    pos = i;
                    grant_now = mode.conflict_mask() & ahead == 0
                        && !lock.conflicts_with_others(backend, mode);
                    break;
                }
                ahead |= w.mode.bit();
            }
        }
        if !grant_now && opts.dont_wait {
            if lock.is_unused() {
                table.locks.remove(&tag);
            }
            return Ok(LockAcquireResult::NotAvailable);
        }
        lock.requested[mode as usize] += 1;
        lock.n_requested += 1;
        if grant_now {
            lock.grant(backend, mode);
            return Ok(LockAcquireResult::Acquired);
        }
        lock.waiters.insert(
            pos,
            Waiter {
                backend,
                mode,
                wait_start: SystemTime::now(),
            },
        );
        lock.wait_mask |= mode.bit();
        // Relaxed: written and read under this partition lock.
        proc.wait_status.store(WAIT_WAITING, Ordering::Relaxed);
        drop(table);
        self.sleep(backend, proc, tag, hash, mode, opts)
    }

    /// Sleeps until granted, or fails with deadlock / lock timeout / cancel.
    fn sleep(
        &self,
        backend: BackendId,
        proc: &Proc,
        tag: LockTag,
        hash: u64,
        mode: LockMode,
        opts: &LockOptions,
    ) -> Result<LockAcquireResult> {
        report_wait_start(WaitEvent::Lock(tag.locktype()));
        let start = Instant::now();
        // Relaxed: the owner's own settings.
        let deadlock_timeout = match proc.deadlock_timeout_ms.load(Ordering::Relaxed) {
            NO_OVERRIDE => self.deadlock_timeout,
            ms => Duration::from_millis(ms),
        };
        let deadlock_at = start + deadlock_timeout;
        let timeout_ms = opts.lock_timeout_ms.unwrap_or_else(|| {
            match proc.lock_timeout_ms.load(Ordering::Relaxed) {
                NO_OVERRIDE => self.lock_timeout_ms,
                ms => ms,
            }
        });
        let timeout_at = (timeout_ms > 0).then(|| start + Duration::from_millis(timeout_ms));
        // Relaxed: the owner's own statement deadline.
        let stmt_deadline = match proc.stmt_deadline_ms.load(Ordering::Relaxed) {
            NO_OVERRIDE => None,
            ms => Some(self.epoch + Duration::from_millis(ms)),
        };
        let mut deadlock_checked = false;
        let result = loop {
            // Acquire: pairs with the granter's Release store.
            if proc.wait_status.load(Ordering::Acquire) == WAIT_GRANTED {
                break Ok(LockAcquireResult::Acquired);
            }
            if proc.cancel.load(Ordering::Acquire) {
                let r = self.abandon_wait(backend, proc, tag, hash, cancel_error());
                if r.is_err() {
                    // Consumed by this error. If the lock was granted meanwhile the
                    // request stays pending for the caller's next interrupt check.
                    proc.cancel.store(false, Ordering::Relaxed);
                }
                break r;
            }
            let now = Instant::now();
            if stmt_deadline.is_some_and(|t| now >= t) {
                break self.abandon_wait(backend, proc, tag, hash, statement_timeout_error());
            }
            if timeout_at.is_some_and(|t| now >= t) {
                break self.abandon_wait(backend, proc, tag, hash, lock_timeout_error());
            }
            if !deadlock_checked && now >= deadlock_at {
                deadlock_checked = true;
                if let Some(r) = self.check_deadlock(backend, proc, tag, hash, mode) {
                    break r;
                }
                if self.log_lock_waits {
                    self.log_lock_wait(proc, tag, hash, mode, "still waiting for", start.elapsed());
                }
                continue;
            }
            let mut wake = timeout_at.unwrap_or(now + Duration::from_secs(3600));
            if !deadlock_checked {
                wake = wake.min(deadlock_at);
            }
            if let Some(t) = stmt_deadline {
                wake = wake.min(t);
            }
            proc.sema.wait_until(wake);
        };
        report_wait_end();
        let waited = start.elapsed();
        let t = tag.type_index();
        let st = proc.lock_stats();
        ProcLockStats::add(&st.waits[t], 1);
        ProcLockStats::add(&st.wait_us[t], waited.as_micros() as u64);
        if waited.as_micros() as u64 > st.max_wait_us[t].load(Ordering::Relaxed) {
            // Relaxed: owner-written statistic.
            st.max_wait_us[t].store(waited.as_micros() as u64, Ordering::Relaxed);
        }
        if self.log_lock_waits && deadlock_checked && matches!(result, Ok(LockAcquireResult::Acquired)) {
            self.log_lock_wait(proc, tag, hash, mode, "acquired", waited);
        }
        // Relaxed: no wait in progress; the next wait sets it under a partition lock.
        proc.wait_status.store(WAIT_NONE, Ordering::Relaxed);
        result
    }

    /// log_lock_waits' LOG line, as PostgreSQL's ProcSleep words it: "process N
    /// still waiting for ShareLock on transaction M after 1000.123 ms" with the
    /// holders and the wait queue in DETAIL (while still waiting), or "process
    /// N acquired ..." when the wait ends.
    fn log_lock_wait(&self, proc: &Proc, tag: LockTag, hash: u64, mode: LockMode, what: &str, waited: Duration) {
        // Relaxed: the owner's pid, set at registration.
        let pid = proc.pid.load(Ordering::Relaxed);
        let ms = waited.as_secs_f64() * 1000.0;
        let mut line = format!("LOG:  process {pid} {what} {} on {tag} after {ms:.3} ms", mode.name());
        if what != "acquired" {
            let pid_of = |b: BackendId| self.procs.get(b.0 as usize).map_or(0, |p| p.pid.load(Ordering::Relaxed));
            let table = self.partitions[partition_of(hash)].read();
            if let Some(lock) = table.locks.get(&tag) {
                let holders: Vec<String> = lock.holders.iter().map(|h| pid_of(h.backend).to_string()).collect();
                let queue: Vec<String> = lock.waiters.iter().map(|w| pid_of(w.backend).to_string()).collect();
                let noun = if holders.len() == 1 { "Process holding the lock" } else { "Processes holding the lock" };
                line.push_str(&format!("\nDETAIL:  {noun}: {}. Wait queue: {}.", holders.join(", "), queue.join(", ")));
            }
        }
        eprintln!("{line}");
    }

    /// Leaves the wait queue with `err`, unless the lock was granted meanwhile
    /// (then returns Ok: the caller holds the lock).
    fn abandon_wait(
        &self,
        backend: BackendId,
        proc: &Proc,
        tag: LockTag,
        hash: u64,
        err: Error,
    ) -> Result<LockAcquireResult> {
        let mut table = self.partitions[partition_of(hash)].write();
        // Relaxed: written only under this partition lock, which we hold.
        if proc.wait_status.load(Ordering::Relaxed) == WAIT_GRANTED {
            return Ok(LockAcquireResult::Acquired);
        }
        self.remove_from_queue(&mut table, backend, tag);
        Err(err)
    }

    /// Removes `backend`'s wait on `tag` and wakes whoever that unblocks.
    fn remove_from_queue(&self, table: &mut PartitionTable, backend: BackendId, tag: LockTag) {
        if let Some(lock) = table.locks.get_mut(&tag) {
            lock.remove_waiter(backend);
            self.wake_waiters(lock);
            if lock.is_unused() {
                table.locks.remove(&tag);
            }
        }
    }

    /// Grants, in queue order, every waiter that conflicts neither with the granted
    /// modes of others nor with the requests of still-waiting backends before it.
    fn wake_waiters(&self, lock: &mut SharedLock) {
        let mut ahead: LockMask = 0;
        let mut i = 0;
        while i < lock.waiters.len() {
            let (b, m) = (lock.waiters[i].backend, lock.waiters[i].mode);
            if m.conflict_mask() & ahead == 0 && !lock.conflicts_with_others(b, m) {
                lock.waiters.remove(i);
                lock.grant(b, m);
                let p = &self.procs[b.0 as usize];
                // Release: the waiter's Acquire load then sees a complete grant.
                p.wait_status.store(WAIT_GRANTED, Ordering::Release);
                p.sema.post();
            } else {
                ahead |= m.bit();
                i += 1;
            }
        }
        lock.recompute_wait_mask();
    }

    /// Runs the deadlock check with all partitions locked. Some(Err) if this backend
    /// closes a cycle (it is removed from the queue), Some(Ok) if granted meanwhile
    /// (or by a queue rearrangement), None to go on waiting.
    fn check_deadlock(
        &self,
        backend: BackendId,
        proc: &Proc,
        tag: LockTag,
        hash: u64,
        mode: LockMode,
    ) -> Option<Result<LockAcquireResult>> {
        // Lock order: all partitions in partition-number order (README rule 4).
        let mut tables: Vec<LwWrite<'_, PartitionTable>> =
            self.partitions.iter().map(|p| p.write()).collect();
        if proc.wait_status.load(Ordering::Relaxed) == WAIT_GRANTED {
            return Some(Ok(LockAcquireResult::Acquired));
        }
        let refs: Vec<&PartitionTable> = tables.iter().map(|t| &**t).collect();
        let outcome = deadlock::check(backend, tag, mode, &refs);
        drop(refs);
        match outcome {
            deadlock::Outcome::NoDeadlock => None,
            deadlock::Outcome::Deadlock(cycle) => {
                let pid_of = |b: BackendId| {
                    self.procs
                        .get(b.0 as usize)
                        .map_or(0, |p| p.pid.load(Ordering::Relaxed))
                };
                let err = deadlock::deadlock_error(&cycle, &pid_of);
                self.remove_from_queue(&mut tables[partition_of(hash)], backend, tag);
                Some(Err(err))
            }
            deadlock::Outcome::Rearrange { tag: moved, order } => {
                let table = &mut tables[partition_of(moved.hashcode())];
                let lock = table.locks.get_mut(&moved).expect("lock with waiters");
                let rank = |b: BackendId| order.iter().position(|x| *x == b).unwrap_or(usize::MAX);
                lock.waiters
                    .make_contiguous()
                    .sort_by_key(|w| rank(w.backend));
                self.wake_waiters(lock);
                // Relaxed: we hold every partition lock.
                (proc.wait_status.load(Ordering::Relaxed) == WAIT_GRANTED)
                    .then_some(Ok(LockAcquireResult::Acquired))
            }
        }
    }

    // ----- release ------------------------------------------------------------------

    /// Releases one transaction-lifetime (or, with `session`, session-lifetime)
    /// acquisition of `mode` on `tag`. False if not held that way.
    pub fn unlock(
        &self,
        backend: BackendId,
        tag: LockTag,
        mode: LockMode,
        session: bool,
    ) -> Result<bool> {
        let proc = self.proc(backend)?;
        let mut local = proc.local.lock().unwrap_or_else(|e| e.into_inner());
        let Some(l) = local.get_mut(&(tag, mode)) else {
            return Ok(false);
        };
        let count = if session { &mut l.session } else { &mut l.xact };
        if *count == 0 {
            return Ok(false);
        }
        *count -= 1;
        if l.xact + l.session > 0 {
            return Ok(true);
        }
        let l = local.remove(&(tag, mode)).expect("present");
        self.release_shared(backend, proc, tag, mode, l)?;
        Ok(true)
    }

    /// Releases the shared state of a (tag, mode) the backend no longer holds.
    fn release_shared(
        &self,
        backend: BackendId,
        proc: &Proc,
        tag: LockTag,
        mode: LockMode,
        l: LocalLock,
    ) -> Result<()> {
        if l.fast_path {
            let key = tag
                .relation_key()
                .expect("fast-path locks are relation locks");
            if proc.fast_path.write().try_release(key, mode.fp_bit()) {
                return Ok(());
            }
            // Transferred to the shared table by a strong locker.
        }
        let hash = tag.hashcode();
        {
            let mut table = self.partitions[partition_of(hash)].write();
            let Some(lock) = table.locks.get_mut(&tag) else {
                return Err(Error::internal(format!(
                    "lock {tag} {} not in the lock table",
                    mode.name()
                )));
            };
            if !lock.ungrant(backend, mode) {
                return Err(Error::internal(format!(
                    "{} on {tag} not held",
                    mode.name()
                )));
            }
            self.wake_waiters(lock);
            if lock.is_unused() {
                table.locks.remove(&tag);
            }
        }
        if l.strong {
            // Relaxed; after the shared-table release, so no weak locker takes the
            // fast path while the strong lock is still granted.
            self.strong_counts[strong_index(hash)].fetch_sub(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Releases all transaction locks of `backend` (commit/abort), and with
    /// `transaction_only = false` its session locks too.
    pub fn release_all(&self, backend: BackendId, transaction_only: bool) -> Result<()> {
        self.release_matching(backend, |_, l| {
            l.xact = 0;
            if !transaction_only {
                l.session = 0;
            }
        })
    }

    // ----- subtransactions -------------------------------------------------------------

    /// A subtransaction at nesting `level` (2 = the first savepoint) started: the
    /// backend's new transaction locks belong to it.
    pub fn subxact_begin(&self, backend: BackendId, level: u32) -> Result<()> {
        // Relaxed: the owner's own field.
        self.proc(backend)?.nest_level.store(level, Ordering::Relaxed);
        Ok(())
    }

    /// RELEASE SAVEPOINT: the subtransactions at `level` and deeper commit into
    /// level - 1, which now owns their locks (PostgreSQL reassigns them to the
    /// parent resource owner).
    pub fn subxact_commit(&self, backend: BackendId, level: u32) -> Result<()> {
        let proc = self.proc(backend)?;
        let parent = level.saturating_sub(1).max(1);
        let mut local = proc.local.lock().unwrap_or_else(|e| e.into_inner());
        for l in local.values_mut() {
            if l.xact > 0 && l.level >= level {
                l.level = parent;
            }
        }
        // Relaxed: the owner's own field.
        proc.nest_level.store(parent, Ordering::Relaxed);
        Ok(())
    }

    /// ROLLBACK TO SAVEPOINT: the subtransactions at `level` and deeper aborted.
    /// Every transaction lock first taken by them is released (their session locks
    /// stay), waking its waiters; the backend is back at level - 1.
    pub fn subxact_abort(&self, backend: BackendId, level: u32) -> Result<()> {
        let r = self.release_matching(backend, |_, l| {
            if l.xact > 0 && l.level >= level {
                l.xact = 0;
            }
        });
        // Relaxed: the owner's own field.
        self.proc(backend)?
            .nest_level
            .store(level.saturating_sub(1).max(1), Ordering::Relaxed);
        r
    }

    /// Makes the transaction acquisition of (tag, mode) belong to subtransaction
    /// `level` if that is further out than its current owner (a parent's xid lock
    /// taken while a deeper savepoint is current).
    fn set_owner_level(&self, backend: BackendId, tag: LockTag, mode: LockMode, level: u32) -> Result<()> {
        let proc = self.proc(backend)?;
        let mut local = proc.local.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(l) = local.get_mut(&(tag, mode)) {
            l.level = l.level.min(level.max(1));
        }
        Ok(())
    }

    // ----- virtual transaction ids ------------------------------------------------------

    /// Transaction start: the backend's next local xid becomes current, and it takes
    /// ExclusiveLock on its virtualxid, kept in its fast-path area (no shared-table
    /// traffic; PostgreSQL's VirtualXactLockTableInsert). Returns the local xid.
    pub fn virtual_xact_begin(&self, backend: BackendId) -> Result<u32> {
        let proc = self.proc(backend)?;
        // Relaxed: the owner is the only writer; readers only display it.
        let mut lxid = proc.lxid.load(Ordering::Relaxed).wrapping_add(1);
        if lxid == 0 {
            lxid = 1;
        }
        proc.lxid.store(lxid, Ordering::Relaxed);
        proc.nest_level.store(1, Ordering::Relaxed);
        let mut fp = proc.fast_path.write();
        debug_assert_eq!(fp.vxid, 0, "virtualxid lock of a previous transaction still held");
        fp.vxid = lxid;
        Ok(lxid)
    }

    /// Transaction end: releases the virtualxid lock, from the fast-path area, or
    /// from the shared table if a waiter moved it there (waking the waiter).
    pub fn virtual_xact_end(&self, backend: BackendId) -> Result<()> {
        let proc = self.proc(backend)?;
        let moved = {
            let mut fp = proc.fast_path.write();
            fp.vxid = 0;
            std::mem::take(&mut fp.vxid_in_table)
        };
        if moved == 0 {
            return Ok(());
        }
        let tag = LockTag::VirtualXid { backend: backend.0, lxid: moved };
        let mut table = self.partitions[partition_of(tag.hashcode())].write();
        let Some(lock) = table.locks.get_mut(&tag) else {
            return Err(Error::internal(format!("lock {tag} not in the lock table")));
        };
        if !lock.ungrant(backend, LockMode::Exclusive) {
            return Err(Error::internal(format!("ExclusiveLock on {tag} not held")));
        }
        self.wake_waiters(lock);
        if lock.is_unused() {
            table.locks.remove(&tag);
        }
        Ok(())
    }

    /// Waits until virtual transaction `target/lxid` ends (with `wait`), or tells
    /// whether it has ended (without): PostgreSQL's VirtualXactLock, what CREATE
    /// INDEX CONCURRENTLY waits with. If the target still holds its lock in fast-path
    /// form, it is first moved to the shared table so that there is something to
    /// queue on (and for the deadlock detector to see).
    pub fn virtual_xact_lock(&self, backend: BackendId, target: BackendId, lxid: u32, wait: bool) -> Result<bool> {
        let tproc = self.proc(target)?;
        let tag = LockTag::VirtualXid { backend: target.0, lxid };
        {
            let mut fp = tproc.fast_path.write();
            if fp.vxid == lxid && lxid != 0 {
                // Lock order: a fast-path LWLock, then a partition LWLock (rule 3).
                let mut table = self.partitions[partition_of(tag.hashcode())].write();
                let lock = table.locks.entry(tag).or_default();
                lock.requested[LockMode::Exclusive as usize] += 1;
                lock.n_requested += 1;
                lock.grant(target, LockMode::Exclusive);
                fp.vxid = 0;
                fp.vxid_in_table = lxid;
            }
        }
        let opts = LockOptions { dont_wait: !wait, ..LockOptions::default() };
        match self.lock(backend, tag, LockMode::Share, opts)? {
            LockAcquireResult::NotAvailable => Ok(false),
            _ => {
                self.unlock(backend, tag, LockMode::Share, false)?;
                Ok(true)
            }
        }
    }

    fn release_matching(
        &self,
        backend: BackendId,
        mut f: impl FnMut(&LockTag, &mut LocalLock),
    ) -> Result<()> {
        let proc = self.proc(backend)?;
        let mut local = proc.local.lock().unwrap_or_else(|e| e.into_inner());
        let mut first_err = None;
        local.retain(|(tag, mode), l| {
            f(tag, l);
            if l.xact + l.session > 0 {
                return true;
            }
            if let Err(e) = self.release_shared(backend, proc, *tag, *mode, *l) {
                first_err.get_or_insert(e);
            }
            false
        });
        first_err.map_or(Ok(()), Err)
    }

    /// Does `backend` hold `mode` on `tag` (any lifetime)? For the owning backend
    /// (another thread asking about a waiting backend blocks until its wait ends).
    pub fn holds(&self, backend: BackendId, tag: LockTag, mode: LockMode) -> bool {
        self.proc(backend).is_ok_and(|p| {
            p.local
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains_key(&(tag, mode))
        })
    }

    // ----- transaction ids ------------------------------------------------------------

    /// A transaction takes ExclusiveLock on its own xid when it gets one.
    pub fn xact_lock_table_insert(&self, backend: BackendId, xid: TransactionId) -> Result<()> {
        self.lock(
            backend,
            LockTag::TransactionId { xid },
            LockMode::Exclusive,
            LockOptions::default(),
        )
        .map(|_| ())
    }

    /// `xact_lock_table_insert` for the (sub)transaction at nesting `level`, which
    /// may be further out than the current one: xids are assigned parents first, so
    /// a parent can get its xid while a deeper savepoint is current, and the lock
    /// must then live as long as the parent.
    pub fn xact_lock_table_insert_at(&self, backend: BackendId, xid: TransactionId, level: u32) -> Result<()> {
        self.xact_lock_table_insert(backend, xid)?;
        self.set_owner_level(backend, LockTag::TransactionId { xid }, LockMode::Exclusive, level)
    }

    /// Releases the xid lock (normally done by `release_all` at commit/abort).
    pub fn xact_lock_table_delete(&self, backend: BackendId, xid: TransactionId) -> Result<bool> {
        self.unlock(
            backend,
            LockTag::TransactionId { xid },
            LockMode::Exclusive,
            false,
        )
    }

    /// Waits until transaction `xid` ends: ShareLock on its xid, then release.
    pub fn xact_lock_table_wait(
        &self,
        backend: BackendId,
        xid: TransactionId,
        opts: LockOptions,
    ) -> Result<LockAcquireResult> {
        let tag = LockTag::TransactionId { xid };
        let r = self.lock(
            backend,
            tag,
            LockMode::Share,
            LockOptions {
                session: false,
                ..opts
            },
        )?;
        if r != LockAcquireResult::NotAvailable {
            self.unlock(backend, tag, LockMode::Share, false)?;
        }
        Ok(r)
    }

    // ----- advisory locks ---------------------------------------------------------------

    /// pg_advisory_[xact_]lock[_shared] (`wait`) and pg_try_advisory_... (`!wait`).
    /// Returns whether the lock was obtained (always true when waiting).
    pub fn advisory_lock(
        &self,
        backend: BackendId,
        db: Oid,
        key: AdvisoryKey,
        shared: bool,
        session: bool,
        wait: bool,
    ) -> Result<bool> {
        let mode = if shared {
            LockMode::Share
        } else {
            LockMode::Exclusive
        };
        let opts = LockOptions {
            dont_wait: !wait,
            session,
            lock_timeout_ms: None,
        };
        Ok(self.lock(backend, key.tag(db), mode, opts)? != LockAcquireResult::NotAvailable)
    }

    /// pg_advisory_unlock[_shared]: releases one session-level hold.
    pub fn advisory_unlock(
        &self,
        backend: BackendId,
        db: Oid,
        key: AdvisoryKey,
        shared: bool,
    ) -> Result<AdvisoryUnlock> {
        let mode = if shared {
            LockMode::Share
        } else {
            LockMode::Exclusive
        };
        let released = self.unlock(backend, key.tag(db), mode, true)?;
        Ok(AdvisoryUnlock {
            released,
            warning: (!released).then(|| format!("you don't own a lock of type {}", mode.name())),
        })
    }

    /// pg_advisory_unlock_all: releases every session-level advisory lock.
    pub fn advisory_unlock_all(&self, backend: BackendId) -> Result<()> {
        self.release_matching(backend, |tag, l| {
            if matches!(tag, LockTag::Advisory { .. }) {
                l.session = 0;
            }
        })
    }

    // ----- blocking pids ---------------------------------------------------------------

    /// pg_blocking_pids: the pids of the backends that block the backend with pid
    /// `pid` in its current heavyweight lock wait: those holding a mode that
    /// conflicts with the awaited one, then those queued ahead of it for a
    /// conflicting mode (PostgreSQL's order). Empty if that backend is not
    /// waiting (or unknown). Takes all partition LWLocks shared, in order (rule 4).
    /// The pid and current virtual transaction ("<backend>/<lxid>") of a backend.
    pub fn proc_vxid(&self, backend: BackendId) -> (i32, String) {
        match self.procs.get(backend.0 as usize) {
            Some(p) => (p.pid.load(Ordering::Relaxed), format!("{}/{}", backend.0, p.lxid.load(Ordering::Relaxed))),
            None => (0, format!("{}/0", backend.0)),
        }
    }

    pub fn blocking_pids(&self, pid: i32) -> Vec<i32> {
        let Some(b) = self
            .procs
            .iter()
            // Relaxed: display value, as in pg_locks.
            .position(|p| pid != 0 && p.pid.load(Ordering::Relaxed) == pid)
        else {
            return Vec::new();
        };
        let backend = BackendId(b as u32);
        let tables: Vec<LwRead<'_, PartitionTable>> =
            self.partitions.iter().map(|p| p.read()).collect();
        let pid_of = |b: BackendId| self.procs[b.0 as usize].pid.load(Ordering::Relaxed);
        let mut out = Vec::new();
        for t in &tables {
            for lock in t.locks.values() {
                let Some(pos) = lock.waiters.iter().position(|w| w.backend == backend) else {
                    continue;
                };
                let conflicts = lock.waiters[pos].mode.conflict_mask();
                for h in &lock.holders {
                    if h.backend != backend && h.hold_mask & conflicts != 0 {
                        out.push(pid_of(h.backend));
                    }
                }
                for w in lock.waiters.iter().take(pos) {
                    if w.backend != backend && w.mode.bit() & conflicts != 0 {
                        out.push(pid_of(w.backend));
                    }
                }
                return out;
            }
        }
        out
    }

    // ----- pg_locks -------------------------------------------------------------------

    /// The rows of pg_locks: a consistent snapshot of fast-path and shared locks.
    pub fn lock_status(&self) -> Vec<LockStatusRow> {
        // Lock order: fast-path LWLocks in backend order, then partitions in order
        // (README rules 2-4). Nothing moves between the two while all are held.
        let fps: Vec<LwRead<'_, FastPathSlots>> =
            self.procs.iter().map(|p| p.fast_path.read()).collect();
        let tables: Vec<LwRead<'_, PartitionTable>> =
            self.partitions.iter().map(|p| p.read()).collect();
        let mut rows = Vec::new();
        for (i, fp) in fps.iter().enumerate() {
            for (key, bits) in fp.entries() {
                let tag = LockTag::Relation {
                    db: (key >> 32) as u32,
                    rel: key as u32,
                };
                for m in [
                    LockMode::AccessShare,
                    LockMode::RowShare,
                    LockMode::RowExclusive,
                ] {
                    if bits & m.fp_bit() != 0 {
                        rows.push(self.row(tag, BackendId(i as u32), m, true, true, None));
                    }
                }
            }
            // PostgreSQL lists a backend's virtualxid after its fast-path relation locks.
            if fp.vxid != 0 {
                let tag = LockTag::VirtualXid { backend: i as u32, lxid: fp.vxid };
                rows.push(self.row(tag, BackendId(i as u32), LockMode::Exclusive, true, true, None));
            }
        }
        for t in &tables {
            for (tag, lock) in &t.locks {
                for h in &lock.holders {
                    for m in modes_in(h.hold_mask) {
                        rows.push(self.row(*tag, h.backend, m, true, false, None));
                    }
                }
                for w in &lock.waiters {
                    rows.push(self.row(*tag, w.backend, w.mode, false, false, Some(w.wait_start)));
                }
            }
        }
        rows
    }

    fn row(
        &self,
        tag: LockTag,
        backend: BackendId,
        mode: LockMode,
        granted: bool,
        fastpath: bool,
        waitstart: Option<SystemTime>,
    ) -> LockStatusRow {
        let p = &self.procs[backend.0 as usize];
        let mut r = LockStatusRow {
            locktype: tag.locktype(),
            database: None,
            relation: None,
            page: None,
            tuple: None,
            virtualxid: None,
            transactionid: None,
            classid: None,
            objid: None,
            objsubid: None,
            virtualtransaction: Some(format!("{}/{}", backend.0, p.lxid.load(Ordering::Relaxed))),
            pid: Some(p.pid.load(Ordering::Relaxed)),
            mode: mode.name(),
            granted,
            fastpath,
            waitstart,
        };
        match tag {
            LockTag::Relation { db, rel } | LockTag::RelationExtend { db, rel } => {
                r.database = Some(db);
                r.relation = Some(rel);
            }
            LockTag::Page { db, rel, blk } => {
                r.database = Some(db);
                r.relation = Some(rel);
                r.page = Some(blk);
            }
            LockTag::Tuple {
                db,
                rel,
                blk,
                offset,
            } => {
                r.database = Some(db);
                r.relation = Some(rel);
                r.page = Some(blk);
                r.tuple = Some(offset);
            }
            LockTag::TransactionId { xid } => r.transactionid = Some(xid),
            LockTag::VirtualXid { backend, lxid } => {
                r.virtualxid = Some(format!("{backend}/{lxid}"))
            }
            LockTag::Advisory {
                db,
                key1,
                key2,
                field4,
            } => {
                r.database = Some(db);
                r.classid = Some(key1);
                r.objid = Some(key2);
                r.objsubid = Some(field4 as i16);
            }
            LockTag::Object {
                db,
                classid,
                objid,
                objsubid,
            } => {
                r.database = Some(db);
                r.classid = Some(classid);
                r.objid = Some(objid);
                r.objsubid = Some(objsubid as i16);
            }
        }
        r
    }

    /// Checks the shared table's invariants (tests and debugging). Takes all
    /// partition locks.
    pub fn check_invariants(&self) -> Result<()> {
        for (pi, p) in self.partitions.iter().enumerate() {
            let t = p.read();
            for (tag, l) in &t.locks {
                let bad = |what: &str| Err(Error::internal(format!("{tag}: {what}")));
                if partition_of(tag.hashcode()) != pi {
                    return bad("in the wrong partition");
                }
                let mut granted = [0u32; 9];
                let mut requested = [0u32; 9];
                for h in &l.holders {
                    if h.hold_mask == 0 {
                        return bad("holder with empty mask");
                    }
                    for m in modes_in(h.hold_mask) {
                        granted[m as usize] += 1;
                        requested[m as usize] += 1;
                    }
                }
                for w in &l.waiters {
                    requested[w.mode as usize] += 1;
                }
                if granted != l.granted || requested != l.requested {
                    return bad("counts do not match holders and waiters");
                }
                if l.n_granted != granted.iter().sum::<u32>()
                    || l.n_requested != requested.iter().sum::<u32>()
                {
                    return bad("totals do not match");
                }
                for m in 1..9 {
                    if (l.granted[m] > 0) != (l.grant_mask & (1 << m) != 0) {
                        return bad("grant_mask out of date");
                    }
                }
                if l.wait_mask != l.waiters.iter().fold(0, |a, w| a | w.mode.bit()) {
                    return bad("wait_mask out of date");
                }
                // Granted modes of different holders never conflict.
                for (i, a) in l.holders.iter().enumerate() {
                    for bh in &l.holders[i + 1..] {
                        if modes_in(a.hold_mask).any(|m| m.conflict_mask() & bh.hold_mask != 0) {
                            return bad("conflicting modes granted");
                        }
                    }
                }
                if l.is_unused() {
                    return bad("unused lock left in the table");
                }
            }
        }
        Ok(())
    }

    /// The strong-lock counter covering `tag` (tests).
    pub fn strong_lock_count(&self, tag: LockTag) -> u32 {
        self.strong_counts[strong_index(tag.hashcode())].load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflict_table_is_symmetric() {
        for a in LockMode::ALL {
            for b in LockMode::ALL {
                assert_eq!(a.conflicts_with(b), b.conflicts_with(a), "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn strong_and_weak_classes() {
        let weak: Vec<_> = LockMode::ALL.into_iter().filter(|m| m.is_weak()).collect();
        assert_eq!(
            weak,
            [
                LockMode::AccessShare,
                LockMode::RowShare,
                LockMode::RowExclusive
            ]
        );
        let strong: Vec<_> = LockMode::ALL
            .into_iter()
            .filter(|m| m.is_strong())
            .collect();
        assert_eq!(
            strong,
            [
                LockMode::Share,
                LockMode::ShareRowExclusive,
                LockMode::Exclusive,
                LockMode::AccessExclusive
            ]
        );
    }

    #[test]
    fn tag_descriptions() {
        assert_eq!(
            LockTag::Relation { db: 5, rel: 16384 }.to_string(),
            "relation 16384 of database 5"
        );
        assert_eq!(
            LockTag::Tuple {
                db: 5,
                rel: 16384,
                blk: 0,
                offset: 1
            }
            .to_string(),
            "tuple (0,1) of relation 16384 of database 5"
        );
        assert_eq!(
            LockTag::TransactionId { xid: 1234 }.to_string(),
            "transaction 1234"
        );
        assert_eq!(
            AdvisoryKey::Int8(7).tag(5).to_string(),
            "advisory lock [5,0,7,1]"
        );
        assert_eq!(
            AdvisoryKey::Int4Pair(1, 2).tag(5).to_string(),
            "advisory lock [5,1,2,2]"
        );
    }
}
