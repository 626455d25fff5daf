//! Choosing a victim buffer (PostgreSQL's freelist.c): the clock sweep over all
//! buffers with an atomic hand, and ring buffers (BufferAccessStrategy) that keep a
//! bulk scan inside a small set of buffers of its own.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};

use crate::buffer::buf_state::{refcount, usage_count, BufState, BM_LOCKED};
use crate::config::BLCKSZ;
use crate::error::{Error, Result, SqlState};

/// The clock hand: a counter of ticks; `tick % nbuffers` is the buffer it points
/// at. A u64 incremented by fetch_add never wraps in practice (2^64 ticks), and the
/// modulo handles any buffer count, so wraparound needs no special case.
pub(crate) struct Clock {
    hand: AtomicU64,
    /// Number of buffers the hand goes around.
    nbuffers: u64,
    /// Buffers handed out by the sweep since start (PostgreSQL's numBufferAllocs;
    /// ring hits are not counted): the background writer's measure of demand.
    allocs: AtomicU64,
    /// Where a hibernating background writer sleeps; the next allocation wakes it.
    pub(crate) bgwriter_latch: BgWriterLatch,
}

/// The background writer's latch (PostgreSQL: its procLatch, set through
/// StrategyNotifyBgWriter). Protocol, so that no allocation pays a system call
/// unless the writer really sleeps:
/// 1. the writer sets `asleep` while holding `mu`, then waits on `cv` (which
///    releases `mu` atomically), re-checking `asleep` and `stop` on each wake-up;
/// 2. an allocation that sees `asleep` clears it with a swap, and only the one that
///    cleared it takes `mu` and notifies. Taking `mu` orders the notify after the
///    writer's wait began (it held `mu` from setting the flag until waiting), so
///    the wake-up is not lost; a writer that has not waited yet finds the flag
///    clear and does not sleep.
pub(crate) struct BgWriterLatch {
    /// Set by a hibernating writer, cleared by the allocation that wakes it.
    pub(crate) asleep: AtomicBool,
    /// `stop`: the writer should end. Guards the sleep itself.
    pub(crate) mu: Mutex<bool>,
    pub(crate) cv: Condvar,
}

impl Clock {
    pub(crate) fn new(nbuffers: usize) -> Clock {
        Clock {
            hand: AtomicU64::new(0),
            nbuffers: nbuffers as u64,
            allocs: AtomicU64::new(0),
            bgwriter_latch: BgWriterLatch { asleep: AtomicBool::new(false), mu: Mutex::new(false), cv: Condvar::new() },
        }
    }

    /// The hand as a count of ticks since start (`ticks() % nbuffers` is the
    /// buffer; `ticks() / nbuffers` the complete passes). The background writer
    /// keeps its own position in the same units, so "ahead of the hand" is a
    /// plain difference.
    pub(crate) fn ticks(&self) -> u64 {
        // Relaxed: an estimate for the background writer; buffer state is read
        // with its own ordering.
        self.hand.load(Ordering::Relaxed)
    }

    /// Buffers allocated by the sweep since start.
    pub(crate) fn allocs(&self) -> u64 {
        // Relaxed: a statistic for the background writer.
        self.allocs.load(Ordering::Relaxed)
    }

    /// Counts one allocation and wakes a hibernating background writer.
    #[inline]
    fn note_alloc(&self) {
        // Relaxed: a statistic; nothing is published through it.
        self.allocs.fetch_add(1, Ordering::Relaxed);
        // Relaxed load first: the common case (writer awake) costs no write to a
        // shared line. Missing a flag set just now only delays the wake-up to the
        // next allocation or the writer's own timeout.
        let l = &self.bgwriter_latch;
        if l.asleep.load(Ordering::Relaxed) && l.asleep.swap(false, Ordering::SeqCst) {
            let _g = l.mu.lock().unwrap_or_else(|e| e.into_inner());
            l.cv.notify_one();
        }
    }

    /// Advances the hand by one and returns the buffer it passed.
    #[inline]
    fn tick(&self) -> usize {
        // Relaxed: each tick only needs to be distinct; buffer state is read with
        // its own ordering.
        (self.hand.fetch_add(1, Ordering::Relaxed) % self.nbuffers) as usize
    }

    /// Runs the clock sweep until it finds a buffer with refcount 0 and usage count
    /// 0, decrementing the usage counts of unpinned buffers it passes, and returns it
    /// *pinned* (refcount 1, claimed under the header lock so that no one else can
    /// claim it). Fails with PostgreSQL's "no unpinned buffers available" if it passes
    /// `nbuffers` buffers in a row that are pinned (or header-locked) without
    /// finding one whose usage count it could lower: then every buffer is pinned.
    pub(crate) fn sweep<'s>(&self, states: &dyn Fn(usize) -> &'s BufState) -> Result<usize> {
        let mut trycounter = self.nbuffers;
        loop {
            let id = self.tick();
            let st = states(id);
            let s = st.load();
            if refcount(s) == 0 && s & BM_LOCKED == 0 {
                if usage_count(s) > 0 {
                    if st.try_decrement_usage(s) {
                        trycounter = self.nbuffers;
                    }
                    continue;
                }
                if st.try_lock_if(|s| refcount(s) == 0 && usage_count(s) == 0).is_some() {
                    // Header locked with refcount 0: pin it and release the lock.
                    st.unlock_with(1, |f| f);
                    self.note_alloc();
                    return Ok(id);
                }
            }
            trycounter -= 1;
            if trycounter == 0 {
                return Err(Error::user(SqlState::INTERNAL_ERROR, "no unpinned buffers available"));
            }
        }
    }
}

/// Which bulk operation a ring serves (PostgreSQL's BufferAccessStrategyType).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StrategyKind {
    /// Large sequential scan: 256 kB ring. A dirty ring buffer is not written but
    /// left to the pool (a read-only scan should not be slowed by writes).
    BulkRead,
    /// COPY FROM, CREATE TABLE AS: 16 MB ring.
    BulkWrite,
    /// VACUUM: 256 kB ring.
    Vacuum,
}

impl StrategyKind {
    /// Ring size in bytes, as PostgreSQL's GetAccessStrategy.
    pub fn ring_bytes(self) -> usize {
        match self {
            StrategyKind::BulkRead => 256 * 1024,
            StrategyKind::BulkWrite => 16 * 1024 * 1024,
            StrategyKind::Vacuum => 256 * 1024,
        }
    }
}

const EMPTY: usize = usize::MAX;

/// A ring of buffers owned by one scan (PostgreSQL's BufferAccessStrategy). Not
/// shared between threads (it has interior mutability without locks); one per scan.
pub struct Strategy {
    kind: StrategyKind,
    /// Buffer ids, EMPTY where the slot has no buffer yet.
    ring: Box<[Cell<usize>]>,
    /// Slot most recently handed out.
    current: Cell<usize>,
    /// Whether the buffer handed out last came from the ring (not the clock).
    current_from_ring: Cell<bool>,
}

impl Strategy {
    /// A ring for `kind`, at most 1/8 of the pool (as PostgreSQL caps it).
    pub fn new(kind: StrategyKind, nbuffers: usize) -> Strategy {
        let n = (kind.ring_bytes() / BLCKSZ).min(nbuffers / 8).max(1);
        Strategy {
            kind,
            ring: (0..n).map(|_| Cell::new(EMPTY)).collect(),
            current: Cell::new(n - 1),
            current_from_ring: Cell::new(false),
        }
    }

    pub fn kind(&self) -> StrategyKind {
        self.kind
    }

    /// Number of buffers in the ring.
    pub fn ring_size(&self) -> usize {
        self.ring.len()
    }

    /// The buffers in the ring now (for tests and diagnostics).
    pub fn ring_buffers(&self) -> Vec<usize> {
        self.ring.iter().map(|c| c.get()).filter(|&b| b != EMPTY).collect()
    }

    /// The next victim: the ring's next buffer if it is unpinned and was not used
    /// by anyone else since (usage count <= 1), else one from the clock sweep, which
    /// then takes that ring slot. Returns the buffer pinned, and whether it came from
    /// the ring.
    pub(crate) fn get<'s>(&self, clock: &Clock, states: &dyn Fn(usize) -> &'s BufState) -> Result<(usize, bool)> {
        let slot = (self.current.get() + 1) % self.ring.len();
        self.current.set(slot);
        let id = self.ring[slot].get();
        if id != EMPTY {
            let st = states(id);
            if st.try_lock_if(|s| refcount(s) == 0 && usage_count(s) <= 1).is_some() {
                st.unlock_with(1, |f| f);
                self.current_from_ring.set(true);
                return Ok((id, true));
            }
        }
        let id = clock.sweep(states)?;
        self.ring[slot].set(id);
        self.current_from_ring.set(false);
        Ok((id, false))
    }

    /// Whether the victim just handed out should be given up instead of written:
    /// a bulk read does not write dirty ring buffers (PostgreSQL's
    /// StrategyRejectBuffer). Removes it from the ring when it says so.
    pub(crate) fn reject_dirty(&self) -> bool {
        if self.kind != StrategyKind::BulkRead || !self.current_from_ring.get() {
            return false;
        }
        self.ring[self.current.get()].set(EMPTY);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffer_clock_sweep_skips_pinned_and_decrements_usage() {
        let states: Vec<BufState> = (0..4).map(|_| BufState::new()).collect();
        let f = |i: usize| &states[i];
        // Buffers 0 and 1 pinned, 2 recently used (usage 2), 3 used once.
        states[0].pin(false);
        states[1].pin(false);
        states[2].pin(false);
        states[2].pin(false);
        states[2].unpin();
        states[2].unpin();
        states[3].pin(false);
        states[3].unpin();
        let clock = Clock::new(4);
        // Pass 1: 0,1 skipped (pinned); 2: 2->1; 3: 1->0. Pass 2: 2: 1->0; 3 taken.
        let v = clock.sweep(&f).unwrap();
        assert_eq!(v, 3);
        assert_eq!(refcount(states[3].load()), 1, "returned pinned");
        assert_eq!(usage_count(states[2].load()), 0);
        assert_eq!(refcount(states[0].load()), 1, "pinned buffer untouched");
        assert_eq!(usage_count(states[0].load()), 1);
        let v = clock.sweep(&f).unwrap();
        assert_eq!(v, 2);
        // Everything pinned now: a clear error, not a hang.
        let e = clock.sweep(&f).unwrap_err();
        assert_eq!(e.to_string(), "no unpinned buffers available");
        assert_eq!(e.sqlstate().as_str(), "XX000");
    }

    #[test]
    fn buffer_strategy_ring_sizes() {
        assert_eq!(Strategy::new(StrategyKind::BulkRead, 16384).ring_size(), 32);
        assert_eq!(Strategy::new(StrategyKind::Vacuum, 16384).ring_size(), 32);
        assert_eq!(Strategy::new(StrategyKind::BulkWrite, 16384).ring_size(), 2048);
        assert_eq!(Strategy::new(StrategyKind::BulkRead, 64).ring_size(), 8, "capped at 1/8");
    }
}
