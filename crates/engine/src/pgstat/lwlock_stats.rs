//! Per-tranche LWLock statistics (PostgreSQL's LWLOCK_STATS, always on): how many
//! acquisitions had to wait in the queue, in which mode, and for how long in total and at most.
//! Also the number of spinlock delays (sleeps in the spinlock back-off).
//!
//! Cost: nothing on the fast path. An acquisition that waits adds three relaxed
//! read-modify-writes to its tranche's counters once granted, next to two
//! `Instant::now()` calls; it has just waited, so this is noise.
//!
//! The counters are `std` statics (one cache-line-aligned block per tranche, so that
//! two hot tranches do not share a line), outside the loom model: under `cfg(loom)`
//! recording is a no-op.

use crate::lmgr::lwlock::{LwLockMode, Tranche};
use std::time::Duration;

/// A snapshot of one tranche's counters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrancheStats {
    pub tranche: Tranche,
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
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

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
}
