//! Space reservation: the insert position (PostgreSQL's CurrBytePos/PrevBytePos under
//! insertpos_lck).
//!
//! Positions here are *usable byte* positions: offsets into the WAL stream with the
//! page headers left out, so that reserving `n` bytes is one addition whatever pages
//! the record will cross. [`super::layout`] converts them to and from LSNs.
//!
//! Reserving must hand out the previous record's start as well (it goes into the new
//! record's `xl_prev`), so the pair (current, previous) changes together. A 16-byte
//! compare-and-swap is not available portably, so the pair is guarded by a
//! test-and-set spinlock whose critical section is two loads and two stores, as in
//! PostgreSQL. `current` is also readable without the lock (an atomic), which is what
//! the flush path and `insert_position()` use.
//!
//! This file is compiled under `cfg(loom)` and model-checked (tests named `loom_*`).

use crate::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// The insert position. Invariants: `prev < current` once a record has been reserved,
/// and `[prev, current)` is exactly the last reservation.
pub(crate) struct InsertPosition {
    /// Spinlock over the pair. `true` = held.
    lock: AtomicBool,
    /// Usable-byte position where the next record will start. Written only with
    /// `lock` held; read lock-free (SeqCst: see `wal/README.md`, "waiting for
    /// insertions", which relies on its order with the slots' `inserting_at`).
    current: AtomicU64,
    /// Usable-byte position where the last reserved record starts. Read and written
    /// only with `lock` held (Relaxed is enough: the lock orders it).
    prev: AtomicU64,
}

// Under loom only the model tests use it.
#[cfg_attr(loom, allow(dead_code))]
impl InsertPosition {
    pub(crate) fn new(current: u64, prev: u64) -> Self {
        InsertPosition {
            lock: AtomicBool::new(false),
            current: AtomicU64::new(current),
            prev: AtomicU64::new(prev),
        }
    }

    #[inline]
    fn acquire(&self) {
        // Acquire: the pair read inside the section is the one the last holder left.
        if self.lock.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok() {
            return;
        }
        self.acquire_slow();
    }

    #[cold]
    #[cfg(loom)]
    fn acquire_slow(&self) {
        // Under the model: one CAS per turn, yielding in between (loom explores
        // every interleaving; a busy-wait would only add branches).
        while self.lock.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            crate::sync::thread::yield_now();
        }
    }

    #[cold]
    #[cfg(not(loom))]
    fn acquire_slow(&self) {
        let mut spins = 0u32;
        loop {
            // Relaxed: only a hint to try the CAS again.
            while self.lock.load(Ordering::Relaxed) {
                spins += 1;
                if spins % 64 == 0 {
                    // The holder may be descheduled (many backends, few cores).
                    std::thread::yield_now();
                } else {
                    crate::sync::spin_loop();
                }
            }
            if self.lock.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok() {
                return;
            }
        }
    }

    #[inline]
    fn release(&self) {
        // Release: publishes the pair to the next holder.
        self.lock.store(false, Ordering::Release);
    }

    /// Reserves `size` usable bytes. Returns (start, end, start of the previous record).
    #[inline]
    pub(crate) fn reserve(&self, size: u64) -> (u64, u64, u64) {
        self.acquire();
        let start = self.current.load(Ordering::Relaxed);
        let prev = self.prev.load(Ordering::Relaxed);
        let end = start + size;
        self.current.store(end, Ordering::SeqCst);
        self.prev.store(start, Ordering::Relaxed);
        self.release();
        (start, end, prev)
    }

    /// Sets both values (startup, before any concurrent use).
    /// An XLOG_SWITCH reservation: `size` bytes for the record, then the rest of
    /// its segment (`seg_end(record end)` is the usable position where the next
    /// segment starts). `None`, reserving nothing, if `at_seg_start(current)`:
    /// the current segment has no WAL yet. Returns (start, record end, prev).
    #[cfg_attr(loom, allow(dead_code))]
    pub(crate) fn reserve_switch(
        &self,
        size: u64,
        at_seg_start: impl Fn(u64) -> bool,
        seg_end: impl Fn(u64) -> u64,
    ) -> Option<(u64, u64, u64)> {
        self.acquire();
        let start = self.current.load(Ordering::Relaxed);
        if at_seg_start(start) {
            self.release();
            return None;
        }
        let prev = self.prev.load(Ordering::Relaxed);
        let end = start + size;
        self.current.store(seg_end(end), Ordering::SeqCst);
        self.prev.store(start, Ordering::Relaxed);
        self.release();
        Some((start, end, prev))
    }

    #[allow(dead_code)]
    pub(crate) fn reset(&self, current: u64, prev: u64) {
        self.acquire();
        self.current.store(current, Ordering::SeqCst);
        self.prev.store(prev, Ordering::Relaxed);
        self.release();
    }

    /// The position where the next record will start (lock-free read).
    #[inline]
    pub(crate) fn current(&self) -> u64 {
        self.current.load(Ordering::SeqCst)
    }

    /// Both values, consistently (takes the spinlock).
    #[allow(dead_code)]
    pub(crate) fn current_and_prev(&self) -> (u64, u64) {
        self.acquire();
        let c = self.current.load(Ordering::Relaxed);
        let p = self.prev.load(Ordering::Relaxed);
        self.release();
        (c, p)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn reservations_tile_the_stream_and_chain_prev() {
        let pos = Arc::new(InsertPosition::new(64, 40));
        let mut hs = Vec::new();
        for t in 0..4u64 {
            let pos = pos.clone();
            hs.push(std::thread::spawn(move || {
                (0..2000u64).map(|i| pos.reserve(8 * (1 + (i + t) % 7))).collect::<Vec<_>>()
            }));
        }
        let mut all: Vec<_> = hs.into_iter().flat_map(|h| h.join().unwrap()).collect();
        all.sort();
        let mut expect_start = 64;
        let mut expect_prev = 40;
        for (s, e, p) in all {
            assert_eq!(s, expect_start);
            assert_eq!(p, expect_prev);
            expect_prev = s;
            expect_start = e;
        }
        assert_eq!(pos.current_and_prev(), (expect_start, expect_prev));
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::Arc;

    /// Two threads (loom's bounded preemption makes a third thread spinning on the
    /// lock of a preempted holder explode the model), each reserving twice.
    #[test]
    fn loom_reserve_tiles_and_chains() {
        loom::model(|| {
            let pos = Arc::new(InsertPosition::new(8, 0));
            let other = {
                let pos = pos.clone();
                loom::thread::spawn(move || [pos.reserve(8), pos.reserve(16)])
            };
            let mut all = vec![pos.reserve(24), pos.reserve(32)];
            all.extend(other.join().unwrap());
            all.sort();
            let (mut s0, mut p0) = (8, 0);
            for (s, e, p) in all {
                assert_eq!((s, p), (s0, p0));
                p0 = s;
                s0 = e;
            }
            assert_eq!(pos.current(), 8 + 8 + 16 + 24 + 32);
            assert_eq!(pos.current_and_prev(), (s0, p0));
        });
    }
}
