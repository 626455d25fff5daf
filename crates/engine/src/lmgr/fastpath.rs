//! Fast-path relation lock slots (seed 001; sizing like PostgreSQL 18).
//!
//! Each backend owns `groups * 16` slots. A slot records one relation (database and
//! relation OID packed in a `u64`) and a 3-bit mask of the weak modes held on it
//! (AccessShare, RowShare, RowExclusive). A relation always lands in one group, picked
//! by a hash of the relation, so a transfer scans 16 slots per backend, not all of
//! them. The slots are protected by the owning backend's `LockFastPath` LWLock, which
//! lives next to them in [`super::lock`]; this file is only the data.
//!
//! Under `cfg(loom)` this file holds the reduced model of the strong-counter /
//! fast-path handshake (see the README, "Fast path correctness").

/// Slots per group (PostgreSQL's FP_LOCK_SLOTS_PER_GROUP).
pub const FP_LOCK_SLOTS_PER_GROUP: usize = 16;

/// Upper bound on groups per backend (PostgreSQL 18's FP_LOCK_GROUPS_PER_BACKEND_MAX).
pub const FP_LOCK_GROUPS_PER_BACKEND_MAX: usize = 1024;

/// Number of fast-path groups a backend gets for `max_locks_per_transaction`: the
/// setting rounded up to a power of two, divided by 16, clamped to 1..=1024
/// (PostgreSQL 18's rule; the default 64 gives 4 groups = 64 slots).
pub fn fast_path_groups(max_locks_per_transaction: usize) -> usize {
    let p = max_locks_per_transaction.max(1).next_power_of_two();
    (p / FP_LOCK_SLOTS_PER_GROUP).clamp(1, FP_LOCK_GROUPS_PER_BACKEND_MAX)
}

#[cfg(not(loom))]
pub(crate) use slots::FastPathSlots;

#[cfg(not(loom))]
mod slots {
    use super::FP_LOCK_SLOTS_PER_GROUP;

    /// The fast-path slots of one backend. Protected by that backend's
    /// `LockFastPath` LWLock (every method needs the lock held, exclusive for the
    /// `&mut self` ones).
    pub(crate) struct FastPathSlots {
        /// Number of groups; a power of two, 1..=1024.
        groups: usize,
        /// `rel[i]`: packed (database << 32 | relation) of slot i; meaningful only
        /// while `bits[i] != 0`.
        rel: Box<[u64]>,
        /// `bits[i]`: weak modes held in slot i (bit 0 AccessShare, 1 RowShare,
        /// 2 RowExclusive); 0 = free slot.
        bits: Box<[u8]>,
        /// Number of slots with `bits != 0`. 0 <= used <= groups * 16.
        used: usize,
        /// The local xid of the backend's running transaction while its own
        /// virtualxid ExclusiveLock is held here in fast-path form; 0 = not here
        /// (no transaction, or moved to the shared table by a waiter).
        pub(crate) vxid: u32,
        /// The local xid whose virtualxid lock a waiter moved to the shared table;
        /// 0 = none. The owner releases it there when its transaction ends.
        pub(crate) vxid_in_table: u32,
    }

    impl FastPathSlots {
        pub(crate) fn new(groups: usize) -> FastPathSlots {
            let n = groups * FP_LOCK_SLOTS_PER_GROUP;
            FastPathSlots {
                groups,
                rel: vec![0; n].into_boxed_slice(),
                bits: vec![0; n].into_boxed_slice(),
                used: 0,
                vxid: 0,
                vxid_in_table: 0,
            }
        }

        /// Slot range of the group a relation key hashes to.
        #[inline]
        fn group_range(&self, key: u64) -> std::ops::Range<usize> {
            // Multiplicative hash; groups is a power of two so the mask is a modulo.
            let h = key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
            let g = (h as usize) & (self.groups - 1);
            g * FP_LOCK_SLOTS_PER_GROUP..(g + 1) * FP_LOCK_SLOTS_PER_GROUP
        }

        /// Records weak mode bit `mbit` on `key`. False if the group is full.
        #[inline]
        pub(crate) fn try_grant(&mut self, key: u64, mbit: u8) -> bool {
            let mut free = None;
            for i in self.group_range(key) {
                if self.bits[i] == 0 {
                    free.get_or_insert(i);
                } else if self.rel[i] == key {
                    self.bits[i] |= mbit;
                    return true;
                }
            }
            match free {
                Some(i) => {
                    self.rel[i] = key;
                    self.bits[i] = mbit;
                    self.used += 1;
                    true
                }
                None => false,
            }
        }

        /// Clears weak mode bit `mbit` on `key`. False if not recorded here (it was
        /// transferred to the main table).
        #[inline]
        pub(crate) fn try_release(&mut self, key: u64, mbit: u8) -> bool {
            for i in self.group_range(key) {
                if self.bits[i] & mbit != 0 && self.rel[i] == key {
                    self.bits[i] &= !mbit;
                    if self.bits[i] == 0 {
                        self.used -= 1;
                    }
                    return true;
                }
            }
            false
        }

        /// Removes `key` from the slots and returns the mode bits it had (0 if none).
        pub(crate) fn take(&mut self, key: u64) -> u8 {
            if self.used == 0 {
                return 0;
            }
            for i in self.group_range(key) {
                if self.bits[i] != 0 && self.rel[i] == key {
                    let b = self.bits[i];
                    self.bits[i] = 0;
                    self.used -= 1;
                    return b;
                }
            }
            0
        }

        /// Every occupied slot as (key, bits).
        pub(crate) fn entries(&self) -> impl Iterator<Item = (u64, u8)> + '_ {
            self.bits
                .iter()
                .enumerate()
                .filter(|(_, b)| **b != 0)
                .map(move |(i, b)| (self.rel[i], *b))
        }

        pub(crate) fn capacity(&self) -> usize {
            self.rel.len()
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn grant_release_take() {
            let mut s = FastPathSlots::new(1);
            assert_eq!(s.capacity(), 16);
            for k in 1..=16u64 {
                assert!(s.try_grant(k, 1));
            }
            assert!(!s.try_grant(17, 1), "group full");
            assert!(s.try_grant(3, 4), "same relation, another mode: same slot");
            assert_eq!(s.take(3), 5);
            assert!(!s.try_release(3, 1));
            assert!(s.try_release(4, 1));
            assert!(!s.try_release(4, 1));
            assert_eq!(s.entries().count(), 14);
        }
    }
}

#[cfg(test)]
mod sizing_tests {
    use super::*;

    #[test]
    fn groups_follow_pg18() {
        assert_eq!(fast_path_groups(64), 4);
        assert_eq!(fast_path_groups(10), 1);
        assert_eq!(fast_path_groups(100), 8);
        assert_eq!(fast_path_groups(1 << 20), 1024);
    }
}

/// Reduced model of the handshake between one weak locker and one strong locker:
/// - weak: take its fast-path mutex; if the strong counter reads 0, record the lock in
///   its slot; otherwise go to the main table and be granted only if no strong lock
///   is granted there;
/// - strong: increment the counter; take the weak backend's fast-path mutex and move
///   its slot (if set) into the main table; then, in the main table, be granted only
///   if no weak lock is recorded there.
///
/// Each side, while it holds its lock, asserts the other does not.
#[cfg(all(test, loom))]
mod loom_tests {
    use crate::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use crate::sync::{thread, Arc, Mutex};

    #[derive(Default)]
    struct Main {
        weak_granted: bool,
        strong_granted: bool,
    }

    struct Shared {
        /// The strong-lock counter of the relation's partition.
        strong_count: AtomicU32,
        /// The weak backend's fast-path slot (true = lock recorded) under its mutex.
        fast_path: Mutex<bool>,
        /// The main lock table entry, under its partition mutex.
        main: Mutex<Main>,
        /// Set while the lock is held, to check exclusion.
        weak_holds: AtomicBool,
        strong_holds: AtomicBool,
    }

    fn weak(s: &Shared) {
        let mut via_fast_path = false;
        let mut acquired = false;
        {
            let mut slot = s.fast_path.lock().unwrap();
            // Relaxed, as in the real code: the fast-path mutex orders it.
            if s.strong_count.load(Ordering::Relaxed) == 0 {
                *slot = true;
                via_fast_path = true;
                acquired = true;
            }
        }
        if !via_fast_path {
            let mut m = s.main.lock().unwrap();
            if !m.strong_granted {
                m.weak_granted = true;
                acquired = true;
            }
        }
        if !acquired {
            return; // would wait; the model stops here
        }
        s.weak_holds.store(true, Ordering::SeqCst);
        assert!(
            !s.strong_holds.load(Ordering::SeqCst),
            "weak and strong both held"
        );
        s.weak_holds.store(false, Ordering::SeqCst);
        // Release: the fast-path slot if still there, else the main table.
        let released_fast = {
            let mut slot = s.fast_path.lock().unwrap();
            std::mem::replace(&mut *slot, false)
        };
        if !released_fast {
            s.main.lock().unwrap().weak_granted = false;
        }
    }

    fn strong(s: &Shared) {
        s.strong_count.fetch_add(1, Ordering::Relaxed);
        {
            let mut slot = s.fast_path.lock().unwrap();
            if std::mem::replace(&mut *slot, false) {
                s.main.lock().unwrap().weak_granted = true; // transfer
            }
        }
        let granted = {
            let mut m = s.main.lock().unwrap();
            if !m.weak_granted {
                m.strong_granted = true;
                true
            } else {
                false
            }
        };
        if granted {
            s.strong_holds.store(true, Ordering::SeqCst);
            assert!(
                !s.weak_holds.load(Ordering::SeqCst),
                "strong and weak both held"
            );
            s.strong_holds.store(false, Ordering::SeqCst);
            s.main.lock().unwrap().strong_granted = false;
        }
        // Decrement only after the main-table lock is released.
        s.strong_count.fetch_sub(1, Ordering::Relaxed);
    }

    fn shared() -> Arc<Shared> {
        Arc::new(Shared {
            strong_count: AtomicU32::new(0),
            fast_path: Mutex::new(false),
            main: Mutex::new(Main::default()),
            weak_holds: AtomicBool::new(false),
            strong_holds: AtomicBool::new(false),
        })
    }

    /// Two weak rounds against one strong locker: the second weak round may start
    /// while the strong lock is held, during its release, or after the counter
    /// dropped back to 0 (fast path again).
    #[test]
    fn loom_fast_path_weak_rounds_around_strong_release() {
        loom::model(|| {
            let s = shared();
            let s2 = s.clone();
            let t = thread::spawn(move || {
                weak(&s2);
                weak(&s2);
            });
            strong(&s);
            t.join().unwrap();
            assert_eq!(s.strong_count.load(Ordering::Relaxed), 0);
            assert!(!*s.fast_path.lock().unwrap());
        });
    }

    #[test]
    fn loom_fast_path_strong_handshake() {
        loom::model(|| {
            let s = Arc::new(Shared {
                strong_count: AtomicU32::new(0),
                fast_path: Mutex::new(false),
                main: Mutex::new(Main::default()),
                weak_holds: AtomicBool::new(false),
                strong_holds: AtomicBool::new(false),
            });
            let s2 = s.clone();
            let t = thread::spawn(move || weak(&s2));
            strong(&s);
            t.join().unwrap();
        });
    }
}
