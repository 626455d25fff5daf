//! The buffer descriptor's state word: one `AtomicU32` holding the reference
//! (pin) count, the usage count and the flags (PostgreSQL's `BufferDesc.state`).
//!
//! ```text
//!  31                     22 21    18 17                         0
//! +-------------------------+--------+----------------------------+
//! |  flags (10 bits)        | usage  |  refcount (18 bits)        |
//! +-------------------------+--------+----------------------------+
//! ```
//!
//! Who may change what (the protocol the loom tests check):
//! - **pin** (`pin`, `pin_locked`): a CAS loop that adds [`REFCOUNT_ONE`] and bumps
//!   the usage count; it *waits while [`BM_LOCKED`] is set*, so while a header lock is
//!   held the refcount can only go down.
//! - **unpin** (`unpin`): a single `fetch_sub(REFCOUNT_ONE)`, never a CAS and never
//!   waiting. That is safe because nobody ever *stores* the state word: every other
//!   writer (including the header-lock holder when it unlocks) uses an atomic
//!   read-modify-write that recomputes from the current value, so a concurrent
//!   decrement is never lost.
//! - **header lock** ([`BM_LOCKED`]): taken by CAS for the rare operations that change
//!   the tag or several flags together (eviction, start/end of I/O, invalidation).
//!   It is a spinlock held for a few instructions; never held across I/O or while
//!   waiting for anything else.
//! - **mark dirty**: `fetch_or(BM_DIRTY | BM_JUST_DIRTIED)` by a holder of a pin and of
//!   the exclusive content lock.

use crate::sync::atomic::{AtomicU32, Ordering};
use crate::sync::spin_loop;

/// One pin. The refcount occupies bits 0..18.
pub const REFCOUNT_ONE: u32 = 1;
pub const REFCOUNT_MASK: u32 = (1 << 18) - 1;
/// One unit of usage count, bits 18..22.
pub const USAGE_ONE: u32 = 1 << 18;
pub const USAGE_SHIFT: u32 = 18;
pub const USAGE_MASK: u32 = 0xF << USAGE_SHIFT;
/// Usage counts saturate here (PostgreSQL's BM_MAX_USAGE_COUNT): a page must be
/// passed over by the clock hand this many times before it can be evicted.
pub const MAX_USAGE_COUNT: u32 = 5;

/// Header lock: a spinlock bit for operations that change the tag or several flags
/// at once. Pins wait while it is set; unpins do not.
pub const BM_LOCKED: u32 = 1 << 22;
/// The page differs from its disk copy. Set by `mark_dirty` (pin + exclusive content
/// lock); cleared only at the end of a successful write if not just-dirtied again.
pub const BM_DIRTY: u32 = 1 << 23;
/// The page contents are valid (read from disk, zeroed for extension or redo).
/// Set at the end of input I/O under the header lock.
pub const BM_VALID: u32 = 1 << 24;
/// The tag is meaningful and the buffer is in the mapping table under it. Set and
/// cleared under the header lock while holding the tag's mapping partition exclusive.
pub const BM_TAG_VALID: u32 = 1 << 25;
/// A read or a write of this buffer is under way; others wait for it (BufferIO).
/// Set and cleared under the header lock by the one backend doing the I/O.
pub const BM_IO_IN_PROGRESS: u32 = 1 << 26;
/// The last I/O failed. Set when I/O is aborted; cleared when the next one starts.
pub const BM_IO_ERROR: u32 = 1 << 27;
/// Dirtied since the current write started: the write must not clear BM_DIRTY.
/// Set with BM_DIRTY; cleared under the header lock when a write starts.
pub const BM_JUST_DIRTIED: u32 = 1 << 28;
/// Dirty when the current checkpoint started: the checkpoint must write it. Set by
/// `flush_all_dirty` under the header lock; cleared when the page is written.
pub const BM_CHECKPOINT_NEEDED: u32 = 1 << 29;
/// A backend waits in `lock_cleanup` for the refcount to drop to 1; the unpinner
/// that brings it there wakes it. Set/cleared under the header lock by the waiter.
pub const BM_PIN_COUNT_WAITER: u32 = 1 << 30;

const FLAG_MASK: u32 = !(REFCOUNT_MASK | USAGE_MASK);

// The three fields do not overlap and use exactly 32 bits.
const _: () = assert!(REFCOUNT_MASK & USAGE_MASK == 0);
const _: () = assert!(USAGE_MASK & FLAG_MASK == 0);
const _: () = assert!(MAX_USAGE_COUNT * USAGE_ONE <= USAGE_MASK);
const _: () = assert!(BM_LOCKED & FLAG_MASK == BM_LOCKED);
const _: () = assert!(BM_PIN_COUNT_WAITER & FLAG_MASK == BM_PIN_COUNT_WAITER);
/// Every pin is one `PinnedBuffer` value; a buffer cannot have more pins than this
/// many live handles. 2^18 - 1 = 262143 concurrent pins on one page is far above what
/// max_connections * (pins per backend) reaches (checked in `pin` by debug_assert).
pub const MAX_PINS: u32 = REFCOUNT_MASK;
const _: () = assert!(MAX_PINS >= 100_000);

#[inline]
pub fn refcount(state: u32) -> u32 {
    state & REFCOUNT_MASK
}

#[inline]
pub fn usage_count(state: u32) -> u32 {
    (state & USAGE_MASK) >> USAGE_SHIFT
}

/// The state word of one buffer descriptor.
pub struct BufState {
    word: AtomicU32,
}

impl Default for BufState {
    fn default() -> Self {
        BufState::new()
    }
}

impl BufState {
    pub fn new() -> BufState {
        BufState { word: AtomicU32::new(0) }
    }

    /// Reads the word. Acquire: a reader that sees BM_VALID also sees the page bytes
    /// written before it was set (paired with the Release of `unlock`).
    #[inline]
    pub fn load(&self) -> u32 {
        self.word.load(Ordering::Acquire)
    }

    /// Pins: adds one reference and bumps the usage count (to at most
    /// MAX_USAGE_COUNT, or only to 1 for a ring-buffer access). Waits while the header
    /// is locked. Returns the new state.
    #[inline]
    pub fn pin(&self, ring_access: bool) -> u32 {
        let mut old = self.word.load(Ordering::Relaxed);
        loop {
            if old & BM_LOCKED != 0 {
                old = self.wait_unlocked();
            }
            debug_assert!(refcount(old) < MAX_PINS, "buffer refcount overflow");
            let mut new = old + REFCOUNT_ONE;
            let limit = if ring_access { 1 } else { MAX_USAGE_COUNT };
            if usage_count(old) < limit {
                new += USAGE_ONE;
            }
            // Acquire on success: the pin happens-before our reads of the page and tag.
            match self.word.compare_exchange_weak(old, new, Ordering::Acquire, Ordering::Relaxed) {
                Ok(_) => return new,
                Err(cur) => old = cur,
            }
        }
    }

    /// Unpins: one atomic subtraction. Returns the state *before* the subtraction, so
    /// the caller can see BM_PIN_COUNT_WAITER. Release: our accesses to the page
    /// happen-before a later evictor's CAS that sees refcount 0.
    #[inline]
    pub fn unpin(&self) -> u32 {
        let old = self.word.fetch_sub(REFCOUNT_ONE, Ordering::Release);
        debug_assert!(refcount(old) > 0, "unpin of an unpinned buffer");
        old
    }

    #[cold]
    fn wait_unlocked(&self) -> u32 {
        loop {
            spin_loop();
            let s = self.word.load(Ordering::Relaxed);
            if s & BM_LOCKED == 0 {
                return s;
            }
        }
    }

    /// Takes the header lock (spins). Returns the state with BM_LOCKED set.
    #[inline]
    pub fn lock(&self) -> u32 {
        let mut old = self.word.load(Ordering::Relaxed);
        loop {
            if old & BM_LOCKED != 0 {
                old = self.wait_unlocked();
            }
            // Acquire: we see everything the previous lock holder wrote (the tag).
            match self.word.compare_exchange_weak(
                old,
                old | BM_LOCKED,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return old | BM_LOCKED,
                Err(cur) => old = cur,
            }
        }
    }

    /// Tries once to take the header lock if `pred(state)` holds. Used by the clock
    /// sweep to claim a buffer whose refcount is 0 without waiting.
    #[inline]
    pub fn try_lock_if(&self, pred: impl Fn(u32) -> bool) -> Option<u32> {
        let old = self.word.load(Ordering::Relaxed);
        if old & BM_LOCKED != 0 || !pred(old) {
            return None;
        }
        self.word
            .compare_exchange(old, old | BM_LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| old | BM_LOCKED)
    }

    /// Releases the header lock, applying `f` to the flags/usage of the current
    /// value (the refcount may have gone down meanwhile by unpins; `f` must not touch
    /// it except through `add_refs`). Release: publishes the tag and page writes.
    /// Returns the new state.
    #[inline]
    pub fn unlock_with(&self, add_refs: u32, f: impl Fn(u32) -> u32) -> u32 {
        let mut old = self.word.load(Ordering::Relaxed);
        loop {
            debug_assert!(old & BM_LOCKED != 0, "unlock of an unlocked buffer header");
            let flags_usage = f(old & !REFCOUNT_MASK) & !(REFCOUNT_MASK | BM_LOCKED);
            let new = flags_usage | (refcount(old) + add_refs);
            match self.word.compare_exchange_weak(old, new, Ordering::Release, Ordering::Relaxed) {
                Ok(_) => return new,
                Err(cur) => old = cur,
            }
        }
    }

    /// Releases the header lock without other changes.
    #[inline]
    pub fn unlock(&self) -> u32 {
        // fetch_and composes with concurrent unpins. Release: see unlock_with.
        self.word.fetch_and(!BM_LOCKED, Ordering::Release) & !BM_LOCKED
    }

    /// Sets `flags`; returns the state before (mark_dirty counts a buffer
    /// that was clean).
    #[inline]
    pub fn set_flags_was(&self, flags: u32) -> u32 {
        // Release: as set_flags.
        self.word.fetch_or(flags, Ordering::Release)
    }

    /// Sets flags atomically without the header lock (mark dirty).
    #[inline]
    pub fn set_flags(&self, flags: u32) -> u32 {
        // Release: the page change is ordered before the dirty bit a writer sees.
        self.word.fetch_or(flags, Ordering::Release) | flags
    }

    /// Clock sweep: decrements the usage count if the state is still `old` and
    /// `old` is unpinned, unlocked, with a usage count above 0. Returns whether it did.
    #[inline]
    pub fn try_decrement_usage(&self, old: u32) -> bool {
        if old & BM_LOCKED != 0 || refcount(old) != 0 || usage_count(old) == 0 {
            return false;
        }
        // Relaxed: the usage count is a heuristic; no data is published through it.
        self.word
            .compare_exchange(old, old - USAGE_ONE, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn buffer_state_pin_bumps_usage_and_saturates() {
        let s = BufState::new();
        for _ in 0..10 {
            s.pin(false);
        }
        let st = s.load();
        assert_eq!(refcount(st), 10);
        assert_eq!(usage_count(st), MAX_USAGE_COUNT);
        for _ in 0..10 {
            s.unpin();
        }
        assert_eq!(refcount(s.load()), 0);
        let r = BufState::new();
        r.pin(true);
        r.pin(true);
        assert_eq!(usage_count(r.load()), 1, "ring accesses bump the usage count to 1 only");
    }

    #[test]
    fn buffer_state_unlock_keeps_concurrent_unpins() {
        let s = BufState::new();
        s.pin(false);
        s.pin(false);
        s.lock();
        s.unpin(); // while locked: must not be lost by the unlock
        let st = s.unlock_with(0, |f| f | BM_DIRTY);
        assert_eq!(refcount(st), 1);
        assert!(st & BM_DIRTY != 0 && st & BM_LOCKED == 0);
    }

    #[test]
    fn buffer_state_sweep_decrements_only_unpinned() {
        let s = BufState::new();
        s.pin(false);
        let st = s.load();
        assert!(!s.try_decrement_usage(st), "pinned");
        s.unpin();
        assert!(s.try_decrement_usage(s.load()));
        assert_eq!(usage_count(s.load()), 0);
        assert!(!s.try_decrement_usage(s.load()));
    }
}

/// Model checking of the pin/unpin/evict protocol. Run with
/// `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p ferrogres-engine
///  --release --lib --target-dir target/loom -- loom`.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::atomic::{AtomicU32, Ordering};
    use crate::sync::{thread, Arc};

    /// The evictor's claim: header lock only if refcount is 0, then "change the tag"
    /// while holding the lock, then unlock with the pin-less state.
    fn try_evict(s: &BufState, tag: &AtomicU32) -> bool {
        let Some(_) = s.try_lock_if(|st| refcount(st) == 0) else {
            return false;
        };
        // Header locked with refcount 0: no pin can be added until we unlock.
        let t = tag.load(Ordering::Relaxed);
        tag.store(t + 1, Ordering::Relaxed);
        s.unlock_with(0, |f| f & !BM_VALID);
        true
    }

    /// A model with room for the spin-waits of `pin` on a locked header (each spin
    /// is a loom yield and a branch).
    fn model(f: impl Fn() + Sync + Send + 'static) {
        let mut b = loom::model::Builder::new();
        b.max_branches = 100_000;
        b.check(f);
    }

    fn pin_and_check(s: &BufState, tag: &AtomicU32) {
        s.pin(false);
        let t = tag.load(Ordering::Relaxed);
        thread::yield_now();
        assert_eq!(tag.load(Ordering::Relaxed), t, "a pinned buffer was evicted");
        s.unpin();
    }

    #[test]
    fn loom_pinned_buffer_is_never_evicted() {
        model(|| {
            let s = Arc::new(BufState::new());
            let tag = Arc::new(AtomicU32::new(0));
            let (s2, tag2) = (s.clone(), tag.clone());
            let pinner = thread::spawn(move || pin_and_check(&s2, &tag2));
            let evicted = try_evict(&s, &tag);
            pinner.join().unwrap();
            assert_eq!(tag.load(Ordering::Relaxed), evicted as u32);
            let st = s.load();
            assert_eq!(refcount(st), 0, "refcount returns to 0");
            assert_eq!(st & BM_LOCKED, 0);
        });
    }

    #[test]
    fn loom_two_pinners_keep_the_count() {
        model(|| {
            let s = Arc::new(BufState::new());
            let s2 = s.clone();
            let t = thread::spawn(move || {
                s2.pin(false);
                s2.unpin();
            });
            s.pin(true);
            s.unpin();
            t.join().unwrap();
            let st = s.load();
            assert_eq!(refcount(st), 0);
            assert!(usage_count(st) >= 1 && usage_count(st) <= 2);
        });
    }

    #[test]
    fn loom_unpin_during_header_lock_is_not_lost() {
        model(|| {
            let s = Arc::new(BufState::new());
            s.pin(false);
            s.pin(false);
            let s2 = s.clone();
            let t = thread::spawn(move || {
                s2.unpin();
            });
            // A header-lock holder changing flags while an unpin runs.
            s.lock();
            s.unlock_with(0, |f| f | BM_DIRTY);
            s.set_flags(BM_JUST_DIRTIED);
            t.join().unwrap();
            s.unpin();
            let st = s.load();
            assert_eq!(refcount(st), 0);
            assert_eq!(st & (BM_DIRTY | BM_JUST_DIRTIED), BM_DIRTY | BM_JUST_DIRTIED);
            assert!(try_evict(&s, &AtomicU32::new(0)));
        });
    }

}
