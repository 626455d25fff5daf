//! The shared cache of one hash index's metapage (PostgreSQL 10 caches the
//! metapage in each backend's relcache entry; ours is one per index, shared by all
//! backends, in the engine's memory) and its insert counter.
//!
//! Nothing here is ever *trusted*: a backend computes a bucket from the cached
//! `maxbucket`, locks that bucket's primary page and compares the `maxbucket`
//! stored there at the bucket's last split; if the page is newer than the cache it
//! re-reads the metapage and retries (README, "Finding a bucket"). So the cache may
//! lag behind the metapage; it must only never be *inconsistent*: a reader that
//! sees `maxbucket = m` must find the first block of every unit holding a bucket
//! `<= m`. The publisher stores the units first and then raises `nbuckets` with
//! Release; readers load `nbuckets` with Acquire before any unit (loom-checked
//! below).
//!
//! Lock-free: plain atomics; the one exclusive piece, the split turn, is a flag
//! taken with compare-exchange and never waited for (a backend that finds it
//! taken skips the split: the next insert tries again).

use super::buckets::{unit_of, NUM_UNITS};
use crate::storage::BlockNumber;
use crate::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// The cache. Every field may be read and written by any backend at any time.
pub struct MetaCache {
    /// `maxbucket + 1` as last read from the metapage; 0 before the first read.
    /// Only grows (`fetch_max`): within one relation file `maxbucket` never
    /// shrinks (a rebuilt index is another file, so another cache).
    nbuckets: AtomicU32,
    /// First block of each allocation unit, plus one; 0: not known. Set before
    /// `nbuckets` covers the unit; never changed afterwards (units never move).
    units: Box<[AtomicU32]>,
    /// The metapage's fill factor in entries per bucket (fixed at creation).
    ffactor: AtomicU32,
    /// The metapage's entry count as last read or written.
    ntuples: AtomicU64,
    /// Inserts since the last fold into the metapage's entry count (a split folds
    /// them in the same WAL record as its metapage change).
    pending: AtomicU64,
    /// A backend is inside the split decision (`HashIndex::expand`).
    splitting: AtomicBool,
}

impl Default for MetaCache {
    fn default() -> Self {
        MetaCache::new()
    }
}

/// The right to decide a split, held by one backend at a time; released on drop.
pub struct SplitTurn<'a>(&'a MetaCache);

impl Drop for SplitTurn<'_> {
    fn drop(&mut self) {
        // Release: what the holder published is visible to the next holder.
        self.0.splitting.store(false, Ordering::Release);
    }
}

impl MetaCache {
    pub fn new() -> MetaCache {
        MetaCache {
            nbuckets: AtomicU32::new(0),
            units: (0..NUM_UNITS).map(|_| AtomicU32::new(0)).collect(),
            ffactor: AtomicU32::new(0),
            ntuples: AtomicU64::new(0),
            pending: AtomicU64::new(0),
            splitting: AtomicBool::new(false),
        }
    }

    /// Publishes what a backend read from the metapage under its content lock:
    /// `units[u]` is the first block of unit `u` (`INVALID_BLOCK` if not allocated).
    pub fn publish(&self, maxbucket: u32, units: &[BlockNumber], ffactor: u32, ntuples: u64) {
        for (slot, &blk) in self.units.iter().zip(units) {
            if blk != crate::storage::INVALID_BLOCK {
                // Relaxed: ordered before the Release of `nbuckets` below, which
                // every reader acquires before loading a unit.
                slot.store(blk + 1, Ordering::Relaxed);
            }
        }
        // Relaxed: both only steer when to try a split (a heuristic).
        self.ffactor.store(ffactor, Ordering::Relaxed);
        self.ntuples.store(ntuples, Ordering::Relaxed);
        self.nbuckets.fetch_max(maxbucket + 1, Ordering::Release);
    }

    /// The cached `maxbucket`, or `None` before the first publish.
    #[inline]
    pub fn maxbucket(&self) -> Option<u32> {
        let n = self.nbuckets.load(Ordering::Acquire);
        n.checked_sub(1)
    }

    /// The primary page of `bucket`, if its unit is known. Call after
    /// [`Self::maxbucket`] said the bucket exists (that load is the Acquire).
    #[inline]
    pub fn block_of(&self, bucket: u32) -> Option<BlockNumber> {
        let (unit, off) = unit_of(bucket);
        // Relaxed: see `publish`.
        let v = self.units[unit].load(Ordering::Relaxed);
        v.checked_sub(1).map(|first| first + off)
    }

    /// Counts one insert. True when the index holds more than `ffactor` entries
    /// per bucket by this count: the caller should try a split.
    #[inline]
    pub fn note_insert(&self) -> bool {
        // Relaxed: a counter read as a heuristic; the split decision itself is
        // made again under the metapage's exclusive lock.
        let p = self.pending.fetch_add(1, Ordering::Relaxed) + 1;
        let n = self.ntuples.load(Ordering::Relaxed).saturating_add(p);
        let nb = self.nbuckets.load(Ordering::Relaxed) as u64;
        let ff = self.ffactor.load(Ordering::Relaxed) as u64;
        nb > 0 && ff > 0 && n > ff * nb
    }

    /// Takes the inserts counted since the last fold (the split decision adds
    /// them to the metapage's count, or gives them back with [`Self::give_back`]).
    pub fn take_pending(&self) -> u64 {
        self.pending.swap(0, Ordering::Relaxed)
    }

    pub fn give_back(&self, n: u64) {
        self.pending.fetch_add(n, Ordering::Relaxed);
    }

    /// Records the metapage's new entry count (written under its exclusive lock).
    pub fn set_ntuples(&self, n: u64) {
        self.ntuples.store(n, Ordering::Relaxed);
    }

    /// The split turn if no other backend holds it (never waits).
    pub fn try_begin_split(&self) -> Option<SplitTurn<'_>> {
        // Acquire: pairs with the previous holder's Release in SplitTurn::drop.
        self.splitting.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).ok().map(|_| SplitTurn(self))
    }
}

/// Model checks: `RUSTFLAGS="--cfg loom" LOOM_MAX_PREEMPTIONS=2 cargo test -p
/// ferrogres-engine --release --lib --target-dir target/loom -- loom`.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::atomic::AtomicU32;
    use crate::sync::{thread, Arc};

    fn units_upto(maxbucket: u32) -> Vec<BlockNumber> {
        let mut v = vec![crate::storage::INVALID_BLOCK; NUM_UNITS];
        for b in 0..=maxbucket {
            let (u, _) = unit_of(b);
            v[u] = 100 * u as u32 + 1;
        }
        v
    }

    /// Two publishers (one after a split to maxbucket 1, one after splits to
    /// maxbucket 5) and a reader: whatever `maxbucket` the reader sees, every
    /// bucket up to it has its block, the right one, and `maxbucket` never goes
    /// back.
    #[test]
    fn loom_readers_never_see_a_bucket_without_its_block() {
        loom::model(|| {
            let c = Arc::new(MetaCache::new());
            let p1 = {
                let c = c.clone();
                thread::spawn(move || c.publish(1, &units_upto(1), 10, 0))
            };
            let p2 = {
                let c = c.clone();
                thread::spawn(move || c.publish(5, &units_upto(5), 10, 0))
            };
            let mut last = None;
            for _ in 0..2 {
                let m = c.maxbucket();
                assert!(m >= last, "maxbucket went back: {last:?} then {m:?}");
                if let Some(m) = m {
                    for b in 0..=m {
                        let (u, off) = unit_of(b);
                        assert_eq!(c.block_of(b), Some(100 * u as u32 + 1 + off), "bucket {b} of {m}");
                    }
                }
                last = m;
            }
            p1.join().unwrap();
            p2.join().unwrap();
            assert_eq!(c.maxbucket(), Some(5));
        });
    }

    /// The split turn is held by at most one backend at a time.
    #[test]
    fn loom_one_split_turn_at_a_time() {
        loom::model(|| {
            let c = Arc::new(MetaCache::new());
            let inside = Arc::new(AtomicU32::new(0));
            let hs: Vec<_> = (0..2)
                .map(|_| {
                    let (c, inside) = (c.clone(), inside.clone());
                    thread::spawn(move || {
                        if let Some(turn) = c.try_begin_split() {
                            assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two split turns");
                            inside.fetch_sub(1, Ordering::SeqCst);
                            drop(turn);
                        }
                    })
                })
                .collect();
            for h in hs {
                h.join().unwrap();
            }
            assert!(c.try_begin_split().is_some());
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn counts_inserts_against_the_fill_factor() {
        let c = MetaCache::new();
        assert!(!c.note_insert(), "no metapage read yet");
        let mut units = vec![crate::storage::INVALID_BLOCK; NUM_UNITS];
        units[0] = 1;
        units[1] = 2;
        c.give_back(c.take_pending());
        assert_eq!(c.take_pending(), 1);
        c.publish(1, &units, 3, 4);
        assert_eq!(c.maxbucket(), Some(1));
        assert_eq!((c.block_of(0), c.block_of(1), c.block_of(2)), (Some(1), Some(2), None));
        assert!(!c.note_insert() && !c.note_insert(), "6 entries in 2 buckets of 3");
        assert!(c.note_insert(), "7 entries");
        assert_eq!(c.take_pending(), 3);
        let t = c.try_begin_split().unwrap();
        assert!(c.try_begin_split().is_none());
        drop(t);
        assert!(c.try_begin_split().is_some());
    }
}
