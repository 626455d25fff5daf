//! LWLocks: shared/exclusive locks for short critical sections over shared structures.
//!
//! One `AtomicU32` state word holds the holders (a shared count and an exclusive
//! bit) and two flags summarizing the wait queue; the queue itself (waiting threads,
//! in arrival order, each parked on its own thread handle) sits behind a small mutex
//! and is touched only on the slow path. The design, its invariants and the wakeup
//! protocol are in the lmgr README; the short version:
//!
//! - Fast path (`LwLock::try_acquire_fast`): one compare-and-swap on the state word.
//! - Slow path (`LwLock::acquire_slow`): queue yourself, then run the grant
//!   procedure yourself (so a release that happened before you were visible is not
//!   lost), then park until a releaser hands the lock to you.
//! - Release: one `fetch_sub`; if that left the lock free (no holders) while the
//!   has-waiters flag is set, run the grant procedure, which hands the lock directly
//!   to the waiters at the head of the queue (it sets their holder bits in the state
//!   word for them) and unparks them. A woken waiter already holds the lock.
//!
//! Fairness ([`Fairness`]): **fair** locks (the default, setting `lwlock_fair`) make
//! every new request queue while an exclusive request is queued (seed 003's
//! "gentleman" shared lockers), and grant in queue order; an exclusive waiter then
//! waits only for the holders present when it queued and the requests queued ahead
//! of it. **Unfair** locks behave like PostgreSQL's: a shared request gets the lock
//! whenever no one holds it exclusively, overtaking queued exclusive waiters, which
//! may starve under a continuous stream of shared lockers.

use crate::pgstat::lwlock_stats::count_lwlock_acquire;
use crate::pgstat::wait_event::{report_wait_end, report_wait_start, WaitEvent};
use crate::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use crate::sync::{thread, Arc, Mutex, MutexGuard};
use std::collections::VecDeque;
use std::fmt;

// ---------------------------------------------------------------------------------
// The state word.
//
//   31  30           29           28..25   24          23 ........................ 0
//  +---+------------+------------+--------+-----------+---------------------------+
//  | 0 |EXCL_WAITING|HAS_WAITERS | unused | EXCLUSIVE |   shared holder count      |
//  +---+------------+------------+--------+-----------+---------------------------+
// ---------------------------------------------------------------------------------

/// One shared holder: the unit of the shared-holder count (bits 0..23). Added by a
/// shared acquisition (or by a releaser granting a queued shared waiter), subtracted
/// by a shared release.
pub const SHARED_ONE: u32 = 1;
/// Mask of the shared-holder count. 0 <= count <= MAX_BACKENDS.
pub const SHARED_MASK: u32 = (1 << 24) - 1;
/// Set while one thread holds the lock exclusively. Set by an exclusive acquisition
/// (or a releaser granting a queued exclusive waiter) only when there are no holders
/// at all; cleared by the exclusive release.
pub const EXCLUSIVE: u32 = 1 << 24;
/// Both holder fields: the lock is free iff `state & HOLDERS_MASK == 0`.
pub const HOLDERS_MASK: u32 = SHARED_MASK | EXCLUSIVE;
/// The wait queue is not empty. Set and cleared only by a thread holding the queue
/// mutex, to match the queue it has just changed. A release that leaves the lock
/// free must run the grant procedure when it sees this flag.
pub const HAS_WAITERS: u32 = 1 << 29;
/// A *fair* lock has at least one exclusive request in its wait queue: every new
/// request (shared or exclusive) must queue instead of taking the fast path. Set and
/// cleared only under the queue mutex; never set on an unfair lock.
pub const EXCL_WAITING: u32 = 1 << 30;
/// The queue flags.
pub const FLAGS_MASK: u32 = HAS_WAITERS | EXCL_WAITING;

/// Most threads (backends) that may hold one LWLock in shared mode at once, like
/// PostgreSQL's MAX_BACKENDS (2^18 - 1). Each holder adds [`SHARED_ONE`].
pub const MAX_BACKENDS: u32 = (1 << 18) - 1;

// Capacity and layout checks.
const _: () = assert!(MAX_BACKENDS <= SHARED_MASK, "shared count must hold MAX_BACKENDS holders");
const _: () = assert!(EXCLUSIVE & SHARED_MASK == 0, "exclusive bit overlaps the shared count");
const _: () = assert!(EXCLUSIVE > SHARED_MASK, "a full shared count must not carry into EXCLUSIVE");
const _: () = assert!(FLAGS_MASK & HOLDERS_MASK == 0, "flags overlap the holder fields");
const _: () = assert!(HAS_WAITERS & EXCL_WAITING == 0, "flags overlap each other");
const _: () = assert!(Tranche::COUNT <= u16::MAX as usize);

/// LWLock tranches: which family a lock belongs to. The name is what
/// pg_stat_activity.wait_event shows while a backend waits on it (PostgreSQL 15's
/// names), and the key of the per-tranche statistics.
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
    OidGen,
    WalBufMapping,
    ControlFile,
    RelationMapping,
    MultiXactGen,
    SubtransSlru,
    SubtransBuffer,
    PredicateLockManager,
    RelationExtension,
}

impl Tranche {
    /// Number of tranches.
    pub const COUNT: usize = 22;

    /// Every tranche, in index order (`ALL[t.index()] == t`).
    pub const ALL: [Tranche; Tranche::COUNT] = [
        Tranche::BufferMapping,
        Tranche::BufferContent,
        Tranche::BufferIo,
        Tranche::WalInsert,
        Tranche::WalWrite,
        Tranche::LockManager,
        Tranche::LockFastPath,
        Tranche::ProcArray,
        Tranche::XactSlru,
        Tranche::XactBuffer,
        Tranche::CheckpointerComm,
        Tranche::XidGen,
        Tranche::Test,
        Tranche::OidGen,
        Tranche::WalBufMapping,
        Tranche::ControlFile,
        Tranche::RelationMapping,
        Tranche::MultiXactGen,
        Tranche::SubtransSlru,
        Tranche::SubtransBuffer,
        Tranche::PredicateLockManager,
        Tranche::RelationExtension,
    ];

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
            Tranche::OidGen => "OidGen",
            Tranche::WalBufMapping => "WALBufMapping",
            Tranche::ControlFile => "ControlFile",
            Tranche::RelationMapping => "RelationMapping",
            Tranche::MultiXactGen => "MultiXactGen",
            Tranche::SubtransSlru => "SubtransSLRU",
            Tranche::SubtransBuffer => "SubtransBuffer",
            Tranche::PredicateLockManager => "PredicateLockManager",
            Tranche::RelationExtension => "RelationExtension",
        }
    }

    /// Dense index, 0 <= index < COUNT.
    pub fn index(self) -> usize {
        self as u16 as usize
    }

    pub fn from_index(i: usize) -> Option<Tranche> {
        Tranche::ALL.get(i).copied()
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

impl LwLockMode {
    /// What an acquisition in this mode adds to the state word.
    #[inline]
    fn holder_bits(self) -> u32 {
        match self {
            LwLockMode::Shared => SHARED_ONE,
            LwLockMode::Exclusive => EXCLUSIVE,
        }
    }

    /// Whether a lock in `state` has room for a holder in this mode (ignoring the
    /// fairness flag).
    #[inline]
    fn compatible(self, state: u32) -> bool {
        match self {
            LwLockMode::Shared => state & EXCLUSIVE == 0,
            LwLockMode::Exclusive => state & HOLDERS_MASK == 0,
        }
    }
}

/// An LWLock's queueing policy. See the module documentation and the lmgr README.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fairness {
    /// While an exclusive request is queued, every new request queues behind it;
    /// the queue is granted in order (a run of shared waiters at the head together).
    Fair,
    /// PostgreSQL's behaviour: requests take the lock whenever it is compatible, even
    /// past queued waiters; a releaser grants the first grantable waiters.
    Unfair,
}

/// Process-wide default policy of [`LwLock::new`], from the `lwlock_fair` setting.
/// A `std` atomic (loom's cannot be `static`), outside the loom model: it is read
/// once per lock at construction, never on a path that synchronizes anything.
static DEFAULT_FAIR: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Sets the policy of LWLocks created from now on with [`LwLock::new`]: call at
/// startup with `Settings::lwlock_fair`, before the shared structures are built.
/// Existing locks keep their policy.
pub fn set_default_fairness(fair: bool) {
    // Relaxed: a configuration value read at lock construction; startup code that
    // builds locks runs after this call on the same thread or after a spawn/join.
    DEFAULT_FAIR.store(fair, std::sync::atomic::Ordering::Relaxed);
}

/// The policy [`LwLock::new`] gives a new lock.
pub fn default_fairness() -> Fairness {
    // Relaxed: see set_default_fairness.
    Fairness::from_setting(DEFAULT_FAIR.load(std::sync::atomic::Ordering::Relaxed))
}

impl Fairness {
    /// The policy for a value of the `lwlock_fair` setting.
    pub fn from_setting(lwlock_fair: bool) -> Fairness {
        if lwlock_fair {
            Fairness::Fair
        } else {
            Fairness::Unfair
        }
    }
}

/// One queued request: the waiting thread, its mode, and the flag the granter sets.
struct Waiter {
    mode: LwLockMode,
    /// Set (Release) by the thread that granted the lock to this waiter, after it
    /// added the waiter's holder bits to the state word; read (Acquire) by the
    /// waiter before it returns. Never reset: a Waiter is used for one wait.
    granted: AtomicBool,
    thread: thread::Thread,
}

impl Waiter {
    fn wake(&self) {
        self.thread.unpark();
    }
}

/// The wait queue, protected by `LwLock::queue`'s mutex.
struct WaitQueue {
    /// Waiters in arrival order.
    waiters: VecDeque<Arc<Waiter>>,
    /// Number of exclusive requests in `waiters`. 0 <= exclusive <= waiters.len().
    exclusive: usize,
}

impl WaitQueue {
    #[cfg(not(loom))]
    const fn new() -> WaitQueue {
        WaitQueue { waiters: VecDeque::new(), exclusive: 0 }
    }

    #[cfg(loom)]
    fn new() -> WaitQueue {
        WaitQueue { waiters: VecDeque::new(), exclusive: 0 }
    }

    fn remove(&mut self, i: usize) -> Arc<Waiter> {
        let w = self.waiters.remove(i).expect("index checked by caller");
        if w.mode == LwLockMode::Exclusive {
            self.exclusive -= 1;
        }
        w
    }
}

/// A lightweight shared/exclusive lock.
///
/// **Fairness policy**: chosen per lock ([`Fairness`]), default from the
/// `lwlock_fair` setting ([`set_default_fairness`]), fair unless set off. A fair lock
/// queues every new request while an exclusive request is queued and grants in queue
/// order; the one exception is that shared requests arriving while the queue holds
/// only shared waiters may take the lock at once if it is not held exclusively
/// (they are compatible with everything ahead of them). An unfair lock lets any
/// compatible request in at once, as PostgreSQL does.
///
/// Not reentrant: acquiring a lock the thread already holds exclusively deadlocks;
/// acquiring a fair lock in shared mode while already holding it shared deadlocks
/// if an exclusive request queued in between. No deadlock detection (LWLocks are
/// taken in a documented order; see the lmgr README).
pub struct LwLock {
    /// The state word; layout above. Holder fields change by atomic RMW only; flag
    /// bits change only under `queue`'s mutex.
    state: AtomicU32,
    tranche: Tranche,
    fairness: Fairness,
    /// The waiting requests. Protected by its own mutex (taken only on the slow
    /// paths); `state`'s flags summarize it for the fast paths.
    queue: Mutex<WaitQueue>,
}

/// Holds an [`LwLock`] in some mode; releases it on drop.
#[must_use = "the LWLock is released when the guard is dropped"]
pub struct LwLockGuard<'a> {
    lock: &'a LwLock,
    mode: LwLockMode,
}

impl LwLock {
    /// A free lock of `tranche` with the process-wide default fairness.
    pub fn new(tranche: Tranche) -> LwLock {
        LwLock::with_policy(tranche, default_fairness())
    }

    /// A free lock of `tranche` with an explicit policy (`const`: usable in statics).
    #[cfg(not(loom))]
    pub const fn with_policy(tranche: Tranche, fairness: Fairness) -> LwLock {
        LwLock { state: AtomicU32::new(0), tranche, fairness, queue: Mutex::new(WaitQueue::new()) }
    }

    /// A free lock of `tranche` with an explicit policy.
    #[cfg(loom)]
    pub fn with_policy(tranche: Tranche, fairness: Fairness) -> LwLock {
        LwLock { state: AtomicU32::new(0), tranche, fairness, queue: Mutex::new(WaitQueue::new()) }
    }

    pub fn tranche(&self) -> Tranche {
        self.tranche
    }

    pub fn fairness(&self) -> Fairness {
        self.fairness
    }

    /// Acquires in shared mode, waiting if needed.
    #[inline]
    pub fn shared(&self) -> LwLockGuard<'_> {
        self.acquire(LwLockMode::Shared)
    }

    /// Acquires in exclusive mode, waiting if needed.
    #[inline]
    pub fn exclusive(&self) -> LwLockGuard<'_> {
        self.acquire(LwLockMode::Exclusive)
    }

    /// Acquires in `mode`, waiting if needed (PostgreSQL's LWLockAcquire).
    #[inline]
    pub fn acquire(&self, mode: LwLockMode) -> LwLockGuard<'_> {
        self.acquire_raw(mode);
        LwLockGuard { lock: self, mode }
    }

    /// Acquires in shared mode if that is possible without waiting (and, on a fair
    /// lock, without overtaking a queued exclusive request).
    #[inline]
    pub fn try_shared(&self) -> Option<LwLockGuard<'_>> {
        self.try_acquire(LwLockMode::Shared)
    }

    /// Acquires in exclusive mode if that is possible without waiting.
    #[inline]
    pub fn try_exclusive(&self) -> Option<LwLockGuard<'_>> {
        self.try_acquire(LwLockMode::Exclusive)
    }

    /// Acquires in `mode` if possible without waiting (PostgreSQL's
    /// LWLockConditionalAcquire). Obeys the fairness policy like a blocking request.
    #[inline]
    pub fn try_acquire(&self, mode: LwLockMode) -> Option<LwLockGuard<'_>> {
        if self.try_acquire_raw(mode) {
            Some(LwLockGuard { lock: self, mode })
        } else {
            None
        }
    }

    /// Acquires in `mode` without a guard: the caller must later call
    /// [`release_raw`](Self::release_raw) with the same mode, exactly once. For code
    /// that acquires and releases in different places (a buffer content lock held
    /// across calls), like PostgreSQL's LWLockAcquire/LWLockRelease pairs.
    #[inline]
    pub fn acquire_raw(&self, mode: LwLockMode) {
        if !self.try_acquire_fast(mode) {
            self.acquire_slow(mode);
        }
        count_lwlock_acquire(self.tranche, mode);
    }

    /// [`try_acquire`](Self::try_acquire) without a guard: `true` if acquired, and
    /// then the caller owes one [`release_raw`](Self::release_raw).
    #[inline]
    pub fn try_acquire_raw(&self, mode: LwLockMode) -> bool {
        let ok = self.try_acquire_fast(mode);
        if ok {
            count_lwlock_acquire(self.tranche, mode);
        }
        ok
    }

    /// Releases a hold in `mode` taken by [`acquire_raw`](Self::acquire_raw),
    /// [`try_acquire_raw`](Self::try_acquire_raw) or a guard passed to
    /// [`LwLockGuard::into_raw`]. Any thread may release (there is no owner check).
    ///
    /// # Safety
    /// The lock must be held in `mode` by a hold that nothing else will release:
    /// releasing a lock not held corrupts the state word (debug builds assert).
    #[inline]
    pub unsafe fn release_raw(&self, mode: LwLockMode) {
        let bits = mode.holder_bits();
        // Release: the critical section's writes must be visible to the next holder
        // (whose Acquire CAS, or whose granter's, reads this value). The decision
        // below only needs this word's modification order, which an RMW always sees.
        let old = self.state.fetch_sub(bits, Ordering::Release);
        debug_assert!(
            match mode {
                LwLockMode::Shared => old & SHARED_MASK != 0 && old & EXCLUSIVE == 0,
                LwLockMode::Exclusive => old & EXCLUSIVE != 0 && old & SHARED_MASK == 0,
            },
            "LWLock {} released in {:?} mode but not held so (state {:#x})",
            self.tranche.name(),
            mode,
            old
        );
        let new = old.wrapping_sub(bits);
        // Only a lock left with no holders can be granted to the queue head: a
        // shared head waits only on an exclusive holder (which is gone iff the count
        // is 0 too), an exclusive head on any holder.
        if new & HAS_WAITERS != 0 && new & HOLDERS_MASK == 0 {
            self.release_slow();
        }
    }

    /// Whether the lock is held exclusively (a sample; for assertions).
    pub fn is_held_exclusive(&self) -> bool {
        // Relaxed: a sample for assertions and diagnostics.
        self.state.load(Ordering::Relaxed) & EXCLUSIVE != 0
    }

    /// Number of shared holders (a sample; for assertions).
    pub fn shared_holders(&self) -> u32 {
        // Relaxed: a sample.
        self.state.load(Ordering::Relaxed) & SHARED_MASK
    }

    /// Whether some thread is queued on the lock (a sample).
    pub fn has_waiters(&self) -> bool {
        // Relaxed: a sample.
        self.state.load(Ordering::Relaxed) & HAS_WAITERS != 0
    }

    /// Whether the fast path may take the lock in `mode` from `state`.
    #[inline]
    fn fast_path_allows(mode: LwLockMode, state: u32) -> bool {
        // EXCL_WAITING is set only on fair locks: there, a queued exclusive request
        // sends every new request to the queue.
        state & EXCL_WAITING == 0 && mode.compatible(state)
    }

    /// One attempt at the lock by compare-and-swap; retried only while the word
    /// keeps changing under us and still allows the acquisition.
    #[inline]
    fn try_acquire_fast(&self, mode: LwLockMode) -> bool {
        // Relaxed: a first guess; the CAS below validates it.
        let mut cur = self.state.load(Ordering::Relaxed);
        loop {
            if !Self::fast_path_allows(mode, cur) {
                return false;
            }
            debug_assert!(cur & SHARED_MASK < SHARED_MASK, "LWLock shared count overflow");
            match self.state.compare_exchange_weak(
                cur,
                cur + mode.holder_bits(),
                // Acquire: the critical section must not read before we own the
                // lock; pairs with the previous holder's Release in release_raw.
                Ordering::Acquire,
                // Relaxed: failure acquires nothing; we re-decide on the fresh value.
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(actual) => cur = actual,
            }
        }
    }

    /// Grants `mode` to a queued waiter if the holders allow it, ignoring
    /// EXCL_WAITING (the waiter is the one the queue order says goes next).
    /// Caller holds the queue mutex.
    fn try_grant(&self, mode: LwLockMode) -> bool {
        // Relaxed: a first guess; the CAS validates it.
        let mut cur = self.state.load(Ordering::Relaxed);
        loop {
            if !mode.compatible(cur) {
                return false;
            }
            match self.state.compare_exchange_weak(
                cur,
                cur + mode.holder_bits(),
                // Acquire: synchronizes with the last releaser's Release, so that the
                // waiter, which synchronizes with our Release store of `granted`,
                // sees the previous critical section.
                Ordering::Acquire,
                // Relaxed: failure acquires nothing.
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(actual) => cur = actual,
            }
        }
    }

    fn lock_queue(&self) -> MutexGuard<'_, WaitQueue> {
        // A panic while holding the queue mutex cannot leave the queue half-changed
        // (every change is one push/remove plus a counter), so poison is ignored.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes HAS_WAITERS and EXCL_WAITING describe `q`. Caller holds the mutex.
    fn sync_flags(&self, q: &WaitQueue) {
        let mut want = 0;
        if !q.waiters.is_empty() {
            want |= HAS_WAITERS;
        }
        if self.fairness == Fairness::Fair && q.exclusive > 0 {
            want |= EXCL_WAITING;
        }
        // Relaxed: a first guess; the CAS validates it.
        let mut cur = self.state.load(Ordering::Relaxed);
        loop {
            let new = (cur & !FLAGS_MASK) | want;
            if new == cur {
                return;
            }
            // Relaxed: the flags are only acted upon through this word's single
            // modification order (a releaser's fetch_sub sees HAS_WAITERS or our
            // grant attempt sees its release); the queue they summarize is read
            // under the mutex, which orders it.
            match self.state.compare_exchange_weak(cur, new, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return,
                Err(actual) => cur = actual,
            }
        }
    }

    /// The grant procedure. Hands the lock to the waiters that may have it now,
    /// in queue order, removes them from the queue, sets their `granted` flag and
    /// returns them so the caller unparks them after dropping the mutex. Then makes
    /// the flags match the queue. Caller holds the queue mutex.
    ///
    /// Fair: grant from the head while possible; stop after an exclusive grant or
    /// at the first waiter that cannot have the lock (nobody overtakes it).
    /// Unfair: grant the first waiter that can have the lock; if it is shared, also
    /// every later shared waiter (PostgreSQL wakes all shared waiters together),
    /// even past exclusive waiters that cannot have it.
    fn grant_locked(&self, q: &mut WaitQueue) -> Vec<Arc<Waiter>> {
        let mut granted = Vec::new();
        let mut i = 0;
        while i < q.waiters.len() {
            let mode = q.waiters[i].mode;
            if self.try_grant(mode) {
                let w = q.remove(i);
                // Release: the waiter's Acquire load of `granted` makes our Acquire
                // grant CAS (and so the previous critical section) visible to it.
                w.granted.store(true, Ordering::Release);
                granted.push(w);
                if mode == LwLockMode::Exclusive {
                    break;
                }
            } else if self.fairness == Fairness::Fair || mode == LwLockMode::Shared {
                // Fair: nobody overtakes the first waiter that must wait.
                // Shared refused: the lock is held exclusively; nothing is grantable.
                break;
            } else {
                // Unfair, exclusive refused because of shared holders: look for
                // shared waiters behind it (the documented exception to queue order).
                i += 1;
            }
        }
        self.sync_flags(q);
        granted
    }

    /// Wakes the waiters the grant procedure handed the lock to, except `me`.
    fn wake_all(granted: Vec<Arc<Waiter>>, me: Option<&Arc<Waiter>>) {
        for w in granted {
            if me.is_some_and(|m| Arc::ptr_eq(m, &w)) {
                continue;
            }
            w.wake();
        }
    }

    #[cold]
    #[inline(never)]
    fn release_slow(&self) {
        let granted = {
            let mut q = self.lock_queue();
            self.grant_locked(&mut q)
        };
        Self::wake_all(granted, None);
    }

    /// Spins a little before queueing, while no one is queued: a short critical
    /// section often ends within a few hundred nanoseconds, far less than a
    /// park/unpark round trip. Not under loom (it would only multiply states).
    #[cfg(not(loom))]
    fn spin_briefly(&self, mode: LwLockMode) -> bool {
        const SPIN_ROUNDS: u32 = 6;
        for round in 0..SPIN_ROUNDS {
            for _ in 0..(1u32 << round) {
                crate::sync::spin_loop();
            }
            // Relaxed: a hint; try_acquire_fast's CAS decides.
            if self.state.load(Ordering::Relaxed) & HAS_WAITERS != 0 {
                // Someone is already asleep in the queue: join it, do not barge.
                return false;
            }
            if self.try_acquire_fast(mode) {
                return true;
            }
        }
        false
    }

    /// The slow path: queue, grant-check, spin briefly then park until granted.
    ///
    /// No lost wakeup: we push ourselves and set HAS_WAITERS under the queue mutex,
    /// then run the grant procedure ourselves before sleeping. A release whose
    /// `fetch_sub` comes after our flag update in the state word's modification
    /// order sees HAS_WAITERS and runs the grant procedure (after we drop the
    /// mutex); one that comes before it is seen by our own grant attempt. Either way
    /// someone grants us when the lock allows, sets `granted`, then unparks us; park
    /// returns at once if the unpark came first.
    #[cold]
    #[inline(never)]
    fn acquire_slow(&self, mode: LwLockMode) {
        #[cfg(not(loom))]
        if self.spin_briefly(mode) {
            return;
        }

        let me = Arc::new(Waiter { mode, granted: AtomicBool::new(false), thread: thread::current() });
        let granted = {
            let mut q = self.lock_queue();
            q.waiters.push_back(me.clone());
            if mode == LwLockMode::Exclusive {
                q.exclusive += 1;
            }
            self.sync_flags(&q);
            self.grant_locked(&mut q)
        };
        Self::wake_all(granted, Some(&me));

        // Acquire: pairs with the granter's Release store (see grant_locked).
        if me.granted.load(Ordering::Acquire) {
            return; // granted by our own grant attempt: we never slept
        }

        report_wait_start(self.tranche.wait_event());
        #[cfg(not(loom))]
        let start = std::time::Instant::now();
        // Spin a moment on our own flag before parking: when the holders are running
        // and their critical sections short, the hand-off arrives within a few
        // microseconds and we skip the futex sleep and wake (the granter's unpark of
        // a thread that is not parked is a flag update). Not under loom.
        #[cfg(not(loom))]
        for round in 0..7u32 {
            // Acquire: pairs with the granter's Release store (see grant_locked).
            if me.granted.load(Ordering::Acquire) {
                break;
            }
            for _ in 0..(1u32 << round) {
                crate::sync::spin_loop();
            }
        }
        // Acquire: pairs with the granter's Release store (see grant_locked).
        while !me.granted.load(Ordering::Acquire) {
            thread::park();
        }
        report_wait_end();
        #[cfg(not(loom))]
        crate::pgstat::lwlock_stats::record_lwlock_wait(self.tranche, mode, start.elapsed());
    }

    /// Test helper: number of queued exclusive requests.
    #[cfg(test)]
    fn queued(&self) -> (usize, usize) {
        let q = self.lock_queue();
        (q.waiters.len(), q.exclusive)
    }
}

impl fmt::Debug for LwLock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Relaxed: a sample for display.
        let s = self.state.load(Ordering::Relaxed);
        f.debug_struct("LwLock")
            .field("tranche", &self.tranche.name())
            .field("fairness", &self.fairness)
            .field("shared", &(s & SHARED_MASK))
            .field("exclusive", &(s & EXCLUSIVE != 0))
            .field("has_waiters", &(s & HAS_WAITERS != 0))
            .field("excl_waiting", &(s & EXCL_WAITING != 0))
            .finish()
    }
}

impl<'a> LwLockGuard<'a> {
    pub fn mode(&self) -> LwLockMode {
        self.mode
    }

    pub fn lock(&self) -> &'a LwLock {
        self.lock
    }

    /// Forgets the guard, leaving the lock held: the caller now owes one
    /// `release_raw(mode)` on the lock (see [`LwLock::release_raw`]).
    pub fn into_raw(self) -> LwLockMode {
        let mode = self.mode;
        std::mem::forget(self);
        mode
    }
}

impl Drop for LwLockGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: a guard exists only while its hold is outstanding, and the hold
        // is released only here (into_raw forgets the guard).
        unsafe { self.lock.release_raw(self.mode) }
    }
}

impl fmt::Debug for LwLockGuard<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LwLockGuard").field("lock", self.lock).field("mode", &self.mode).finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::pgstat::wait_event::{current_wait_event, register_backend, unregister_backend};
    use crate::pgstat::BackendId;
    use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    const BOTH: [Fairness; 2] = [Fairness::Fair, Fairness::Unfair];

    /// Polls `cond` until true; fails the test after 10 s (a hang guard, not a
    /// timing assumption: every condition polled here becomes true structurally).
    fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !cond() {
            assert!(Instant::now() < deadline, "timed out waiting until {what}");
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// One LWLock per buffer (content lock): keep it within a cache line.
    #[test]
    fn lwlock_fits_a_cache_line() {
        let size = std::mem::size_of::<LwLock>();
        assert!(size <= 64, "LwLock is {size} bytes");
    }

    #[test]
    fn tranche_table_is_consistent() {
        for (i, t) in Tranche::ALL.iter().enumerate() {
            assert_eq!(t.index(), i);
            assert_eq!(Tranche::from_index(i), Some(*t));
        }
        assert_eq!(Tranche::from_index(Tranche::COUNT), None);
        assert_eq!(Tranche::BufferMapping.name(), "BufferMapping");
        assert_eq!(Tranche::WalInsert.name(), "WALInsert");
    }

    #[test]
    fn modes_exclude_each_other() {
        for f in BOTH {
            let l = LwLock::with_policy(Tranche::Test, f);
            let s1 = l.shared();
            let s2 = l.try_shared().expect("shared holders coexist");
            assert_eq!(l.shared_holders(), 2);
            assert!(l.try_exclusive().is_none());
            drop((s1, s2));
            let x = l.exclusive();
            assert!(l.is_held_exclusive());
            assert!(l.try_shared().is_none());
            assert!(l.try_exclusive().is_none());
            drop(x);
            assert_eq!(l.state.load(Relaxed), 0, "free lock has a zero state word");
        }
    }

    #[test]
    fn raw_acquire_and_release() {
        let l = LwLock::new(Tranche::Test);
        l.acquire_raw(LwLockMode::Exclusive);
        assert!(!l.try_acquire_raw(LwLockMode::Shared));
        // SAFETY: held exclusively by the acquire_raw above.
        unsafe { l.release_raw(LwLockMode::Exclusive) };
        let mode = l.shared().into_raw();
        assert_eq!(l.shared_holders(), 1);
        // SAFETY: the forgotten guard's hold.
        unsafe { l.release_raw(mode) };
        assert_eq!(l.state.load(Relaxed), 0);
    }

    /// The default is fair. (The test does not set it to unfair: tests run in
    /// parallel in one process and others create locks with `LwLock::new`.)
    #[test]
    fn default_fairness_follows_setting() {
        assert!(crate::config::Settings::default().lwlock_fair);
        set_default_fairness(crate::config::Settings::default().lwlock_fair);
        assert_eq!(default_fairness(), Fairness::Fair);
        assert_eq!(LwLock::new(Tranche::Test).fairness(), Fairness::Fair);
        assert_eq!(Fairness::from_setting(false), Fairness::Unfair);
        assert_eq!(Fairness::from_setting(true), Fairness::Fair);
    }

    /// Exclusive holders do a non-atomic read-modify-write of a counter; any overlap
    /// would lose increments. Readers check that two fields written together under
    /// the exclusive lock are never seen half-written under the shared lock. Both
    /// count themselves in and out of the critical section and check the other
    /// side's count. All threads start together at a barrier. (A mutation letting an
    /// exclusive request in past shared holders fails this test every time.)
    #[test]
    fn hammer_counter_and_invariants() {
        for f in BOTH {
            const WRITERS: u64 = 3;
            const READERS: usize = 2;
            const ITERS: u64 = 200;
            const READS: u64 = 300;
            let lock = Arc::new(LwLock::with_policy(Tranche::Test, f));
            let a = Arc::new(AtomicU64::new(0));
            let b = Arc::new(AtomicU64::new(0));
            let writers_in = Arc::new(AtomicUsize::new(0));
            let readers_in = Arc::new(AtomicUsize::new(0));
            let stop = Arc::new(AtomicBool::new(false));
            let barrier = Arc::new(std::sync::Barrier::new(WRITERS as usize + READERS));
            let mut hs = Vec::new();
            for _ in 0..WRITERS {
                let (lock, a, b, wi, ri, barrier) =
                    (lock.clone(), a.clone(), b.clone(), writers_in.clone(), readers_in.clone(), barrier.clone());
                hs.push(std::thread::spawn(move || {
                    barrier.wait();
                    for _ in 0..ITERS {
                        let _g = lock.exclusive();
                        assert_eq!(wi.fetch_add(1, SeqCst), 0, "two exclusive holders");
                        let v = a.load(Relaxed);
                        b.store(v + 1, Relaxed);
                        // Widen the window in which a and b differ.
                        for _ in 0..300 {
                            std::hint::spin_loop();
                        }
                        assert_eq!(ri.load(SeqCst), 0, "shared holder inside with an exclusive one");
                        a.store(v + 1, Relaxed);
                        wi.fetch_sub(1, SeqCst);
                    }
                }));
            }
            let mut rs = Vec::new();
            for _ in 0..READERS {
                let (lock, a, b, wi, ri, stop, barrier) = (
                    lock.clone(),
                    a.clone(),
                    b.clone(),
                    writers_in.clone(),
                    readers_in.clone(),
                    stop.clone(),
                    barrier.clone(),
                );
                rs.push(std::thread::spawn(move || {
                    barrier.wait();
                    // A bounded number of reads, not "until the writers finish": on an
                    // unfair lock two looping readers starve the writers for seconds.
                    let mut reads = 0u64;
                    while reads < READS && !stop.load(Relaxed) {
                        let _g = lock.shared();
                        ri.fetch_add(1, SeqCst);
                        let va = a.load(Relaxed);
                        for _ in 0..300 {
                            std::hint::spin_loop();
                        }
                        assert_eq!(wi.load(SeqCst), 0, "exclusive holder inside with a shared one");
                        assert_eq!(va, b.load(Relaxed), "torn write seen under shared lock");
                        ri.fetch_sub(1, SeqCst);
                        reads += 1;
                    }
                    reads
                }));
            }
            for h in hs {
                h.join().unwrap();
            }
            stop.store(true, Relaxed);
            for r in rs {
                r.join().unwrap();
            }
            assert_eq!(a.load(Relaxed), WRITERS * ITERS, "{f:?}: lost update");
            assert_eq!(lock.state.load(Relaxed), 0, "{f:?}: lock not free at the end");
        }
    }

    /// The structural fairness test. Main holds the lock shared; an exclusive
    /// request E queues; then K new shared requests arrive. Fair: none of them may
    /// get the lock before E (they queue behind it; try_shared fails). Unfair: all
    /// of them get it while E still waits (PostgreSQL's behaviour).
    fn late_readers_vs_queued_exclusive(f: Fairness) -> usize {
        const K: usize = 3;
        let lock = Arc::new(LwLock::with_policy(Tranche::Test, f));
        let e_done = Arc::new(AtomicBool::new(false));
        let overtook = Arc::new(AtomicUsize::new(0));
        let finished = Arc::new(AtomicUsize::new(0));
        let held = lock.shared();

        let e = {
            let (lock, e_done) = (lock.clone(), e_done.clone());
            std::thread::spawn(move || {
                let _g = lock.exclusive();
                e_done.store(true, SeqCst);
            })
        };
        wait_until("E is queued", || lock.queued().1 == 1);

        // A conditional request made now is a new request too.
        let try_now = lock.try_shared().is_some();
        assert_eq!(try_now, f == Fairness::Unfair, "{f:?}: try_shared with an exclusive waiter queued");

        let readers: Vec<_> = (0..K)
            .map(|_| {
                let (lock, e_done, overtook, finished) =
                    (lock.clone(), e_done.clone(), overtook.clone(), finished.clone());
                std::thread::spawn(move || {
                    let _g = lock.shared();
                    if !e_done.load(SeqCst) {
                        overtook.fetch_add(1, SeqCst);
                    }
                    finished.fetch_add(1, SeqCst);
                })
            })
            .collect();
        match f {
            // All K readers are queued behind E (1 + K waiters) ...
            Fairness::Fair => wait_until("readers queue behind E", || lock.queued().0 == 1 + K),
            // ... or all K got in while E waits.
            Fairness::Unfair => wait_until("readers get in", || finished.load(SeqCst) == K),
        }
        assert!(!e_done.load(SeqCst), "E cannot have the lock while main holds it shared");
        drop(held);
        e.join().unwrap();
        for r in readers {
            r.join().unwrap();
        }
        assert_eq!(lock.state.load(Relaxed), 0);
        overtook.load(SeqCst)
    }

    #[test]
    fn fair_lock_new_shared_requests_queue_behind_exclusive_waiter() {
        assert_eq!(late_readers_vs_queued_exclusive(Fairness::Fair), 0);
    }

    #[test]
    fn unfair_lock_new_shared_requests_overtake_exclusive_waiter() {
        assert_eq!(late_readers_vs_queued_exclusive(Fairness::Unfair), 3);
    }

    /// Liveness under a continuous stream of shared lockers: on a fair lock the
    /// exclusive requests get through (the test hangs, and the guard fails it, if
    /// they starve). Readers keep overlapping: each holds the lock until it has seen
    /// another reader inside, so the lock is never free while both stream.
    #[test]
    fn fair_exclusive_gets_through_shared_stream() {
        let lock = Arc::new(LwLock::with_policy(Tranche::Test, Fairness::Fair));
        let stop = Arc::new(AtomicBool::new(false));
        let inside = Arc::new(AtomicUsize::new(0));
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let (lock, stop, inside) = (lock.clone(), stop.clone(), inside.clone());
                std::thread::spawn(move || {
                    let mut n = 0u64;
                    while !stop.load(Relaxed) {
                        let _g = lock.shared();
                        inside.fetch_add(1, SeqCst);
                        let t = Instant::now();
                        // Stay until another reader came in (or 1 ms passed).
                        while inside.load(SeqCst) < 2 && t.elapsed() < Duration::from_millis(1) {
                            std::hint::spin_loop();
                        }
                        inside.fetch_sub(1, SeqCst);
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        wait_until("the stream is running", || inside.load(SeqCst) > 0);
        let (tx, rx) = std::sync::mpsc::channel();
        let writer = {
            let lock = lock.clone();
            std::thread::spawn(move || {
                for _ in 0..20 {
                    let t = Instant::now();
                    let g = lock.exclusive();
                    tx.send(t.elapsed()).unwrap();
                    drop(g);
                    std::thread::sleep(Duration::from_micros(100));
                }
            })
        };
        for _ in 0..20 {
            rx.recv_timeout(Duration::from_secs(10)).expect("exclusive waiter starved on a fair lock");
        }
        writer.join().unwrap();
        stop.store(true, Relaxed);
        let total: u64 = readers.into_iter().map(|r| r.join().unwrap()).sum();
        assert!(total > 0);
        assert_eq!(lock.state.load(Relaxed), 0);
    }

    /// A thread blocked on an LWLock shows LWLock/<tranche> in its backend slot
    /// while it sleeps, and nothing after; the wait is counted in the tranche stats.
    #[test]
    fn blocked_backend_reports_lwlock_wait_event() {
        use crate::pgstat::lwlock_stats::tranche_stats;
        let id = BackendId(1003);
        // BufferIo is used by no other test of this module.
        let lock = Arc::new(LwLock::with_policy(Tranche::BufferIo, Fairness::Fair));
        let before = tranche_stats(Tranche::BufferIo);
        let g = lock.exclusive();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let t = {
            let lock = lock.clone();
            std::thread::spawn(move || {
                register_backend(id).unwrap();
                drop(lock.shared());
                done_tx.send(()).unwrap();
                go_rx.recv().unwrap();
                unregister_backend();
            })
        };
        wait_until("the backend reports its wait", || {
            current_wait_event(id) == Some(WaitEvent::LwLock(Tranche::BufferIo))
        });
        let ev = current_wait_event(id).unwrap();
        assert_eq!((ev.type_name(), ev.name()), ("LWLock", "BufferIO"));
        drop(g);
        // After the wait (the backend still registered) the slot is cleared.
        done_rx.recv().unwrap();
        assert_eq!(current_wait_event(id), None);
        go_tx.send(()).unwrap();
        t.join().unwrap();
        let after = tranche_stats(Tranche::BufferIo);
        assert!(after.blocked_shared > before.blocked_shared, "{before:?} -> {after:?}");
        assert!(after.wait_time > before.wait_time);
    }

    /// Waiters of both modes, many rounds of hand-offs: nobody is left asleep.
    #[test]
    fn mixed_waiters_all_wake() {
        for f in BOTH {
            let lock = Arc::new(LwLock::with_policy(Tranche::Test, f));
            let done = Arc::new(AtomicUsize::new(0));
            let hs: Vec<_> = (0..6)
                .map(|i| {
                    let (lock, done) = (lock.clone(), done.clone());
                    std::thread::spawn(move || {
                        for j in 0..2_000 {
                            let mode = if (i + j) % 3 == 0 { LwLockMode::Exclusive } else { LwLockMode::Shared };
                            let _g = lock.acquire(mode);
                            if j % 64 == 0 {
                                std::thread::yield_now();
                            }
                        }
                        done.fetch_add(1, SeqCst);
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
            assert_eq!(done.load(SeqCst), 6);
            assert_eq!(lock.state.load(Relaxed), 0, "{f:?}");
            assert_eq!(lock.queued(), (0, 0));
        }
    }
}

/// Model checking with loom (run with `RUSTFLAGS="--cfg loom"`; see the lmgr
/// README). Each model has 2-3 threads; loom explores their interleavings up to
/// `LOOM_MAX_PREEMPTIONS` and fails on a data race on the `UnsafeCell` (mutual
/// exclusion broken), on a deadlock (a waiter parked forever: a lost wakeup) or on
/// a failed assertion.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::atomic::AtomicBool;
    use loom::sync::Arc;

    const BOTH: [Fairness; 2] = [Fairness::Fair, Fairness::Unfair];

    fn bump(cell: &UnsafeCell<u32>) {
        // SAFETY: called under an exclusive hold; loom checks it.
        cell.with_mut(|p| unsafe { *p += 1 });
    }

    fn read(cell: &UnsafeCell<u32>) -> u32 {
        // SAFETY: called under a shared or exclusive hold; loom checks it.
        cell.with(|p| unsafe { *p })
    }

    #[test]
    fn loom_exclusive_excludes_exclusive() {
        for f in BOTH {
            loom::model(move || {
                let lock = Arc::new(LwLock::with_policy(Tranche::Test, f));
                let data = Arc::new(UnsafeCell::new(0u32));
                let t = {
                    let (lock, data) = (lock.clone(), data.clone());
                    loom::thread::spawn(move || {
                        let _g = lock.exclusive();
                        bump(&data);
                    })
                };
                {
                    let _g = lock.exclusive();
                    bump(&data);
                }
                t.join().unwrap();
                assert_eq!(read(&data), 2);
                assert_eq!(lock.state.load(Ordering::Relaxed), 0);
            });
        }
    }

    #[test]
    fn loom_exclusive_excludes_shared() {
        for f in BOTH {
            loom::model(move || {
                let lock = Arc::new(LwLock::with_policy(Tranche::Test, f));
                let data = Arc::new(UnsafeCell::new(0u32));
                let t = {
                    let (lock, data) = (lock.clone(), data.clone());
                    loom::thread::spawn(move || {
                        let _g = lock.exclusive();
                        bump(&data);
                    })
                };
                let seen = {
                    let _g = lock.shared();
                    read(&data)
                };
                assert!(seen <= 1);
                t.join().unwrap();
                assert_eq!(read(&data), 1);
                assert_eq!(lock.state.load(Ordering::Relaxed), 0);
            });
        }
    }

    /// Main holds the lock shared and joins two threads that acquire it shared: if
    /// shared holders excluded each other this would deadlock, which loom reports.
    #[test]
    fn loom_shared_holders_coexist() {
        for f in BOTH {
            loom::model(move || {
                let lock = Arc::new(LwLock::with_policy(Tranche::Test, f));
                let g = lock.shared();
                let ts: Vec<_> = (0..2)
                    .map(|_| {
                        let lock = lock.clone();
                        loom::thread::spawn(move || {
                            let g = lock.shared();
                            assert!(lock.shared_holders() >= 2, "main's hold and ours");
                            drop(g);
                        })
                    })
                    .collect();
                for t in ts {
                    t.join().unwrap();
                }
                assert_eq!(lock.shared_holders(), 1);
                drop(g);
                assert_eq!(lock.state.load(Ordering::Relaxed), 0);
            });
        }
    }

    /// Three threads, two exclusive and one shared, all contending: every waiter
    /// must be granted and woken (a lost wakeup leaves a thread parked forever and
    /// loom reports the deadlock), and mutual exclusion must hold.
    #[test]
    fn loom_no_lost_wakeup() {
        for f in BOTH {
            loom::model(move || {
                let lock = Arc::new(LwLock::with_policy(Tranche::Test, f));
                let data = Arc::new(UnsafeCell::new(0u32));
                let spawn_x = |lock: Arc<LwLock>, data: Arc<UnsafeCell<u32>>| {
                    loom::thread::spawn(move || {
                        let _g = lock.exclusive();
                        bump(&data);
                    })
                };
                let t1 = spawn_x(lock.clone(), data.clone());
                let t2 = spawn_x(lock.clone(), data.clone());
                {
                    let _g = lock.shared();
                    assert!(read(&data) <= 2);
                }
                t1.join().unwrap();
                t2.join().unwrap();
                assert_eq!(read(&data), 2);
                assert_eq!(lock.state.load(Ordering::Relaxed), 0);
                assert_eq!(lock.queued(), (0, 0));
            });
        }
    }

    /// Main holds the lock shared; E requests it exclusively; N looks once whether
    /// E is queued and, if so, requests it shared. Returns whether N got the lock
    /// before E in this execution.
    fn late_reader_execution(f: Fairness) -> bool {
        let lock = Arc::new(LwLock::with_policy(Tranche::Test, f));
        let e_done = Arc::new(AtomicBool::new(false));
        let held = lock.shared();
        let e = {
            let (lock, e_done) = (lock.clone(), e_done.clone());
            loom::thread::spawn(move || {
                let _g = lock.exclusive();
                e_done.store(true, Ordering::SeqCst);
            })
        };
        let n = {
            let (lock, e_done) = (lock.clone(), e_done.clone());
            loom::thread::spawn(move || {
                if lock.queued().1 == 1 {
                    let _g = lock.shared();
                    !e_done.load(Ordering::SeqCst)
                } else {
                    false
                }
            })
        };
        drop(held);
        e.join().unwrap();
        let overtook = n.join().unwrap();
        assert_eq!(lock.state.load(Ordering::Relaxed), 0);
        overtook
    }

    /// Fair: once an exclusive request is queued, no new shared request gets the
    /// lock before it, in any interleaving.
    #[test]
    fn loom_fair_shared_does_not_overtake_queued_exclusive() {
        loom::model(|| {
            assert!(!late_reader_execution(Fairness::Fair), "a new shared request overtook a queued exclusive one");
        });
    }

    /// Unfair: the same model must find an interleaving where the new shared request
    /// overtakes (so the fair test above checks something real).
    #[test]
    fn loom_unfair_shared_may_overtake_queued_exclusive() {
        // A std static outside the model: accumulates across executions.
        static OVERTOOK: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        loom::model(|| {
            if late_reader_execution(Fairness::Unfair) {
                OVERTOOK.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        });
        assert!(OVERTOOK.load(std::sync::atomic::Ordering::SeqCst), "no execution showed an overtake");
    }
}
