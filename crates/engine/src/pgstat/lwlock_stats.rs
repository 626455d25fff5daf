//! Per-tranche LWLock statistics (PostgreSQL's LWLOCK_STATS, always on): how many
//! acquisitions each tranche had, by mode; how many of them had to wait in the
//! queue, and for how long in total and at most. Also the number of spinlock
//! delays (sleeps in the spinlock back-off).
//!
//! Cost. With the setting `lwlock_stats` on (off by default), every acquisition
//! (one that waited or not) adds one to a counter of the acquiring backend's own slot ([`Acquisitions`], in the backend status array of
//! `wait_event`): a thread-local read, a relaxed load and a relaxed store, no
//! read-modify-write and no cache line shared with another backend. A thread that
//! is no registered backend (tests, benchmarks, helper threads) adds with a relaxed
//! `fetch_add` to one shared block instead. Measured (bench callgrind pass, one
//! client), that is about 1 % of a select-only transaction's instructions, so it
//! is off unless asked for, like PostgreSQL's compile-time LWLOCK_STATS; off, an
//! acquisition pays one relaxed load of a flag that is never written after start.
//! An acquisition that waits also adds
//! three relaxed read-modify-writes to its tranche's blocked counters once granted,
//! next to two `Instant::now()` calls; it has just waited, so this is noise.
//!
//! The shared counters are `std` statics (one cache-line-aligned block per tranche,
//! so that two hot tranches do not share a line), outside the loom model: under
//! `cfg(loom)` recording is a no-op. [`OwnedCounter`], the one-writer counter of the
//! slots, takes its atomic from `crate::sync` and is loom-tested.

use crate::lmgr::lwlock::{LwLockMode, Tranche};
use crate::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// A counter that one thread (its owner) increments and any thread reads. The
/// owner increments with a relaxed load and a relaxed store, not a
/// read-modify-write: nobody else writes, so the load returns the owner's own
/// last store and no increment is lost. A reader gets some value the owner
/// stored (a sample); successive reads never go backwards (per-location
/// coherence).
///
/// Ownership passes from one thread to the next only through something that
/// orders them (a backend slot is handed out again after its previous holder
/// freed it under the backend-number allocator's lock), so the new owner's
/// first load sees the old owner's last store.
pub struct OwnedCounter(AtomicU64);

impl OwnedCounter {
    #[cfg(not(loom))]
    pub const fn new() -> OwnedCounter {
        OwnedCounter(AtomicU64::new(0))
    }

    #[cfg(loom)]
    pub fn new() -> OwnedCounter {
        OwnedCounter(AtomicU64::new(0))
    }

    /// Adds one. Only the owner may call this.
    #[inline]
    pub fn bump(&self) {
        // Relaxed (both): the owner is the only writer, so its load sees its own
        // last store; nothing is published with the count.
        let n = self.0.load(Relaxed);
        self.0.store(n.wrapping_add(1), Relaxed);
    }

    /// Adds `n`. Only the owner may call this.
    #[inline]
    pub fn add(&self, n: u64) {
        // Relaxed (both): as in bump.
        let v = self.0.load(Relaxed);
        self.0.store(v.wrapping_add(n), Relaxed);
    }

    /// Sets the count to 0. Only the owner may call this.
    pub fn reset(&self) {
        // Relaxed: as in bump; readers get a sample either way.
        self.0.store(0, Relaxed);
    }

    /// The count (a sample).
    pub fn get(&self) -> u64 {
        // Relaxed: a sample; see the type's documentation.
        self.0.load(Relaxed)
    }
}

impl Default for OwnedCounter {
    fn default() -> OwnedCounter {
        OwnedCounter::new()
    }
}

/// A backend's LWLock acquisitions, per tranche and mode (index
/// `tranche * 2 + mode`), counted by the backend itself.
pub struct Acquisitions([OwnedCounter; 2 * Tranche::COUNT]);

impl Acquisitions {
    pub fn new() -> Acquisitions {
        Acquisitions(std::array::from_fn(|_| OwnedCounter::new()))
    }

    /// Counts one acquisition. Only the owner may call this.
    #[inline]
    pub fn bump(&self, tranche: Tranche, mode: LwLockMode) {
        self.0[counter_index(tranche, mode)].bump();
    }

    /// Acquisitions of `tranche` in `mode` so far (a sample).
    pub fn get(&self, tranche: Tranche, mode: LwLockMode) -> u64 {
        self.0[counter_index(tranche, mode)].get()
    }
}

impl Default for Acquisitions {
    fn default() -> Acquisitions {
        Acquisitions::new()
    }
}

#[inline]
fn counter_index(tranche: Tranche, mode: LwLockMode) -> usize {
    tranche.index() * 2
        + match mode {
            LwLockMode::Shared => 0,
            LwLockMode::Exclusive => 1,
        }
}

/// A snapshot of one tranche's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrancheStats {
    pub tranche: Tranche,
    /// Shared acquisitions, whether they waited or not.
    pub acquired_shared: u64,
    /// Exclusive acquisitions, whether they waited or not.
    pub acquired_exclusive: u64,
    /// Shared acquisitions that had to wait in the queue.
    pub blocked_shared: u64,
    /// Exclusive acquisitions that had to wait in the queue.
    pub blocked_exclusive: u64,
    /// Total time those acquisitions waited (from queueing to being granted).
    pub wait_time: Duration,
    /// Longest single wait.
    pub max_wait: Duration,
}

impl TrancheStats {
    /// Acquisitions (either mode) that had to wait.
    pub fn blocked(&self) -> u64 {
        self.blocked_shared + self.blocked_exclusive
    }
}

#[cfg(not(loom))]
pub use imp::*;

#[cfg(not(loom))]
mod imp {
    use super::*;
    use crate::pgstat::wait_event::{slots, with_my_counters};

    /// Counters of one tranche. Relaxed everywhere: independent statistical
    /// counters, read as a sample; nothing is published through them.
    #[repr(align(64))]
    struct Counters {
        blocked_shared: AtomicU64,
        blocked_exclusive: AtomicU64,
        wait_ns: AtomicU64,
        max_wait_ns: AtomicU64,
    }

    #[allow(clippy::declare_interior_mutable_const)]
    const ZERO: Counters = Counters {
        blocked_shared: AtomicU64::new(0),
        blocked_exclusive: AtomicU64::new(0),
        wait_ns: AtomicU64::new(0),
        max_wait_ns: AtomicU64::new(0),
    };

    static COUNTERS: [Counters; Tranche::COUNT] = [ZERO; Tranche::COUNT];
    static SPIN_DELAYS: AtomicU64 = AtomicU64::new(0);

    /// Acquisitions by threads that are no registered backend (read-modify-writes:
    /// several such threads share it).
    #[allow(clippy::declare_interior_mutable_const)]
    const ZERO_COUNT: AtomicU64 = AtomicU64::new(0);
    static UNREGISTERED: [AtomicU64; 2 * Tranche::COUNT] = [ZERO_COUNT; 2 * Tranche::COUNT];

    /// Whether acquisitions are counted (setting `lwlock_stats`). Set at most
    /// once, at start, and never cleared: a process that opens several engines
    /// (tests) counts once any asked for it.
    static COUNT_ACQUISITIONS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

    /// Turns on the counting of every acquisition (setting `lwlock_stats`).
    pub fn enable_acquisition_counts() {
        // Relaxed: a statistics switch; an acquisition that misses it is not counted.
        COUNT_ACQUISITIONS.store(true, Relaxed);
    }

    /// Whether acquisitions are counted.
    pub fn acquisition_counts_enabled() -> bool {
        // Relaxed: see enable_acquisition_counts.
        COUNT_ACQUISITIONS.load(Relaxed)
    }

    /// Counts one acquisition of a `tranche` lock in `mode` (waited or not): in
    /// the calling backend's own slot, or for a thread with none in the shared
    /// block, if the setting `lwlock_stats` is on. Called by every successful
    /// LWLock acquisition.
    #[inline]
    pub fn count_lwlock_acquire(tranche: Tranche, mode: LwLockMode) {
        if !acquisition_counts_enabled() {
            return;
        }
        with_my_counters(|mine| match mine {
            Some(c) => c.lwlocks.bump(tranche, mode),
            // Relaxed: a statistical counter shared by unregistered threads.
            None => {
                UNREGISTERED[counter_index(tranche, mode)].fetch_add(1, Relaxed);
            }
        })
    }

    /// Acquisitions of `tranche` in `mode` by every thread so far: the sum of
    /// every backend slot's count and the unregistered threads' (a sample).
    fn acquired(tranche: Tranche, mode: LwLockMode) -> u64 {
        // Relaxed: a sample.
        let others = UNREGISTERED[counter_index(tranche, mode)].load(Relaxed);
        slots().iter().filter_map(|s| s.counters()).fold(others, |sum, c| sum.wrapping_add(c.lwlocks.get(tranche, mode)))
    }

    /// Records one acquisition of a `tranche` lock that waited `waited` in the queue.
    /// Called by the LWLock slow path only.
    pub fn record_lwlock_wait(tranche: Tranche, mode: LwLockMode, waited: Duration) {
        let c = &COUNTERS[tranche.index()];
        // Relaxed (all four): independent counters; nothing is published with them.
        match mode {
            LwLockMode::Shared => c.blocked_shared.fetch_add(1, Relaxed),
            LwLockMode::Exclusive => c.blocked_exclusive.fetch_add(1, Relaxed),
        };
        let ns = u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX);
        c.wait_ns.fetch_add(ns, Relaxed);
        c.max_wait_ns.fetch_max(ns, Relaxed);
    }

    /// Records one sleep of a spinlock waiter.
    pub fn record_spin_delay() {
        // Relaxed: a statistical counter.
        SPIN_DELAYS.fetch_add(1, Relaxed);
    }

    /// Spinlock sleeps since the process started.
    pub fn spin_delays() -> u64 {
        // Relaxed: a sample.
        SPIN_DELAYS.load(Relaxed)
    }

    /// Counters of one tranche (each counter read separately: a sample).
    pub fn tranche_stats(tranche: Tranche) -> TrancheStats {
        let c = &COUNTERS[tranche.index()];
        // Relaxed: a sample of independent counters, not a consistent cut.
        TrancheStats {
            tranche,
            acquired_shared: acquired(tranche, LwLockMode::Shared),
            acquired_exclusive: acquired(tranche, LwLockMode::Exclusive),
            blocked_shared: c.blocked_shared.load(Relaxed),
            blocked_exclusive: c.blocked_exclusive.load(Relaxed),
            wait_time: Duration::from_nanos(c.wait_ns.load(Relaxed)),
            max_wait: Duration::from_nanos(c.max_wait_ns.load(Relaxed)),
        }
    }

    /// Counters of every tranche, in [`Tranche::ALL`] order.
    pub fn lwlock_stats_snapshot() -> Vec<TrancheStats> {
        Tranche::ALL.iter().map(|&t| tranche_stats(t)).collect()
    }
}

/// Under loom: recording is a no-op (the counters are std statics).
#[cfg(loom)]
#[inline]
pub fn record_lwlock_wait(_tranche: Tranche, _mode: LwLockMode, _waited: Duration) {}

/// Under loom: recording is a no-op.
#[cfg(loom)]
#[inline]
pub fn record_spin_delay() {}

/// Under loom: counting is a no-op (the slots are std statics).
#[cfg(loom)]
#[inline]
pub fn count_lwlock_acquire(_tranche: Tranche, _mode: LwLockMode) {}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn recording_adds_up() {
        // Tranche::XidGen is not used by other tests of this crate's lmgr/pgstat.
        let before = tranche_stats(Tranche::XidGen);
        record_lwlock_wait(Tranche::XidGen, LwLockMode::Shared, Duration::from_micros(10));
        record_lwlock_wait(Tranche::XidGen, LwLockMode::Exclusive, Duration::from_micros(30));
        let after = tranche_stats(Tranche::XidGen);
        assert!(after.blocked_shared > before.blocked_shared);
        assert!(after.blocked_exclusive > before.blocked_exclusive);
        assert!(after.wait_time >= before.wait_time + Duration::from_micros(40));
        assert!(after.max_wait >= Duration::from_micros(30));
        assert_eq!(lwlock_stats_snapshot().len(), Tranche::COUNT);
    }

    /// A registered backend's acquisitions (waited or not) are counted in its
    /// slot and show in the tranche's sums, by mode; a thread with no slot is
    /// counted too.
    #[test]
    fn acquisitions_are_counted_by_mode() {
        use crate::lmgr::lwlock::LwLock;
        use crate::pgstat::wait_event::{register_backend, unregister_backend};
        use crate::pgstat::BackendId;
        // ControlFile is used by no other unit test of this crate's lmgr/pgstat.
        // (The switch only turns on: other tests of this process are not affected
        // beyond being counted.)
        enable_acquisition_counts();
        let lock = LwLock::new(Tranche::ControlFile);
        let before = tranche_stats(Tranche::ControlFile);
        std::thread::scope(|s| {
            s.spawn(|| {
                register_backend(BackendId(1010)).unwrap();
                for _ in 0..5 {
                    drop(lock.shared());
                }
                for _ in 0..3 {
                    drop(lock.exclusive());
                }
                drop(lock.try_shared().unwrap());
                unregister_backend();
            });
            // Unregistered: the shared block.
            s.spawn(|| drop(lock.exclusive()));
        });
        let after = tranche_stats(Tranche::ControlFile);
        // At least (other threads of this process may take ControlFile locks too).
        assert!(after.acquired_shared >= before.acquired_shared + 6, "{before:?} -> {after:?}");
        assert!(after.acquired_exclusive >= before.acquired_exclusive + 4, "{before:?} -> {after:?}");
    }
}

/// The one-writer counter under loom: no increment is lost, and a reader racing
/// with the owner sees a count that never goes backwards and never exceeds what
/// the owner did.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::OwnedCounter;
    use loom::sync::Arc;

    #[test]
    fn loom_owned_counter_reader_sees_monotonic_samples() {
        loom::model(|| {
            let c = Arc::new(OwnedCounter::new());
            let owner = {
                let c = c.clone();
                loom::thread::spawn(move || {
                    for _ in 0..3 {
                        c.bump();
                    }
                })
            };
            let a = c.get();
            let b = c.get();
            assert!(a <= b && b <= 3, "{a} then {b}");
            owner.join().unwrap();
            assert_eq!(c.get(), 3);
        });
    }

    /// Ownership handed over through a join (as a backend slot is, through the
    /// backend-number allocator): the next owner's increments start from the
    /// previous owner's last one.
    #[test]
    fn loom_owned_counter_passes_to_the_next_owner() {
        loom::model(|| {
            let c = Arc::new(OwnedCounter::new());
            let first = {
                let c = c.clone();
                loom::thread::spawn(move || c.bump())
            };
            first.join().unwrap();
            let second = {
                let c = c.clone();
                loom::thread::spawn(move || {
                    c.bump();
                    c.bump();
                })
            };
            let seen = c.get();
            assert!((1..=3).contains(&seen), "{seen}");
            second.join().unwrap();
            assert_eq!(c.get(), 3);
        });
    }
}
