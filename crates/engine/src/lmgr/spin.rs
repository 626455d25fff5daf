//! Spinlocks: test-and-test-and-set with randomized exponential back-off (seed 004).
//!
//! A [`SpinLock`] protects a handful of instructions (a few loads and stores of the
//! fields next to it). It has one mode (exclusive), no queue, no deadlock detection
//! and no fairness: whoever's test-and-set lands first wins. A waiter:
//!
//! 1. spins reading the flag (the "test" before the "test-and-set": reading keeps the
//!    cache line shared instead of bouncing it between cores), pausing with
//!    `spin_loop()` for a randomized, exponentially growing number of iterations
//!    (`[2^k/2, 2^k]` for the k-th round, k <= [`SPIN_ROUNDS`]);
//! 2. then yields its time slice a few times ([`YIELD_ROUNDS`]): on an oversubscribed
//!    machine the holder is probably preempted and needs our core;
//! 3. then sleeps, each sleep longer than the last by a random factor in `[1, 2)`
//!    from [`MIN_DELAY`] up to [`MAX_DELAY`] (then back to the minimum, as
//!    PostgreSQL's `s_lock` does), reporting the wait event `Timeout:SpinDelay`
//!    while asleep. After [`STUCK_DELAYS`] sleeps (well over a minute) it panics with
//!    "stuck spinlock": a spinlock held that long is a bug (PostgreSQL PANICs too).
//!
//! The randomness (seed 004: "Y = exp(X) + rand") keeps waiters that failed together
//! from retrying together.
//!
//! Rules (see the lmgr README): never block (I/O, an LWLock, a heavyweight lock,
//! another spinlock out of order, an allocation that might) while holding a
//! spinlock; never hold one across more than a few dozen instructions.
//!
//! Under `cfg(loom)` each back-off step is one `loom::hint::spin_loop()` (a yield to
//! the model scheduler) and there is no sleep.

// Under loom the back-off is a bare yield: the randomization and sleep state is unused.
#![cfg_attr(loom, allow(dead_code))]

use crate::sync::atomic::{AtomicBool, Ordering};

/// Spin rounds before yielding; round k spins up to 2^k times (k starts at 1).
pub const SPIN_ROUNDS: u32 = 10;
/// `thread::yield_now()` rounds after spinning, before sleeping.
pub const YIELD_ROUNDS: u32 = 4;
/// Shortest sleep of the sleeping phase.
pub const MIN_DELAY: std::time::Duration = std::time::Duration::from_micros(20);
/// Longest sleep; the next one starts again at [`MIN_DELAY`].
pub const MAX_DELAY: std::time::Duration = std::time::Duration::from_millis(5);
/// Sleeps after which the lock is declared stuck (> 100 s of sleeping).
pub const STUCK_DELAYS: u32 = 100_000;

/// A test-and-test-and-set spinlock. The flag is `true` while held.
///
/// Fairness: none. A releasing thread may re-acquire before a waiter that has been
/// spinning for a long time; the randomized back-off only spreads the retries.
#[derive(Debug)]
pub struct SpinLock {
    locked: AtomicBool,
}

/// Holds a [`SpinLock`]; releases it on drop.
#[must_use = "the spinlock is released when the guard is dropped"]
#[derive(Debug)]
pub struct SpinGuard<'a> {
    lock: &'a SpinLock,
}

impl Default for SpinLock {
    fn default() -> Self {
        SpinLock::new()
    }
}

impl SpinLock {
    /// A free spinlock (`const`, so it may live in a `static`).
    #[cfg(not(loom))]
    pub const fn new() -> SpinLock {
        SpinLock { locked: AtomicBool::new(false) }
    }

    /// A free spinlock (loom's atomics are not `const`).
    #[cfg(loom)]
    pub fn new() -> SpinLock {
        SpinLock { locked: AtomicBool::new(false) }
    }

    /// Acquires the lock, spinning and then sleeping until it is free.
    #[inline]
    pub fn lock(&self) -> SpinGuard<'_> {
        if !self.try_acquire_fast() {
            self.lock_slow();
        }
        SpinGuard { lock: self }
    }

    /// Acquires the lock if it is free right now.
    #[inline]
    pub fn try_lock(&self) -> Option<SpinGuard<'_>> {
        if self.try_acquire_fast() {
            Some(SpinGuard { lock: self })
        } else {
            None
        }
    }

    /// Whether the lock is held by someone (a sample; for assertions).
    pub fn is_locked(&self) -> bool {
        // Relaxed: a sample, used for assertions and diagnostics only.
        self.locked.load(Ordering::Relaxed)
    }

    /// One test-and-set.
    #[inline]
    fn try_acquire_fast(&self) -> bool {
        // Acquire: the protected data read after this must not be read before we own
        // the lock. (Relaxed on failure: nothing was acquired.)
        self.locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    #[cold]
    fn lock_slow(&self) {
        let mut delay = SpinDelay::new();
        loop {
            // Test before test-and-set: wait with plain loads until it looks free.
            // Relaxed: only a hint; the compare_exchange below is the real check.
            while self.locked.load(Ordering::Relaxed) {
                delay.pause();
            }
            if self.try_acquire_fast() {
                return;
            }
            delay.pause();
        }
    }

    /// Releases the lock held without a guard (see [`SpinGuard::into_raw`]).
    ///
    /// # Safety
    /// The caller must hold the lock (acquired through a guard it forgot).
    pub unsafe fn release_raw(&self) {
        // Release: our writes to the protected data happen before the next holder's
        // Acquire in try_acquire_fast.
        self.locked.store(false, Ordering::Release);
    }
}

impl SpinGuard<'_> {
    /// Forgets the guard, leaving the lock held; release it with
    /// [`SpinLock::release_raw`].
    pub fn into_raw(self) {
        std::mem::forget(self);
    }
}

impl Drop for SpinGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: a guard exists only while its lock is held.
        unsafe { self.lock.release_raw() }
    }
}

/// The back-off state of one waiter (PostgreSQL's SpinDelayStatus, our schedule).
/// Usable by any other busy-wait loop of the engine (e.g. waiting for a buffer
/// header lock bit).
#[derive(Debug)]
pub struct SpinDelay {
    /// Rounds done so far (spin rounds, then yield rounds, then sleeps).
    round: u32,
    /// Number of sleeps done.
    sleeps: u32,
    /// Next sleep length, in microseconds.
    cur_delay_us: u64,
    /// xorshift state for the randomization.
    rng: u64,
}

impl Default for SpinDelay {
    fn default() -> Self {
        SpinDelay::new()
    }
}

impl SpinDelay {
    pub fn new() -> SpinDelay {
        SpinDelay { round: 0, sleeps: 0, cur_delay_us: MIN_DELAY.as_micros() as u64, rng: 0 }
    }

    /// Rounds done so far.
    pub fn rounds(&self) -> u32 {
        self.round
    }

    /// Number of sleeps so far.
    pub fn sleeps(&self) -> u32 {
        self.sleeps
    }

    fn next_random(&mut self) -> u64 {
        if self.rng == 0 {
            self.rng = seed();
        }
        // xorshift64: good enough to decorrelate waiters.
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }

    /// One back-off step: spin, yield or sleep depending on how long we have waited.
    #[cfg(loom)]
    pub fn pause(&mut self) {
        self.round += 1;
        crate::sync::spin_loop();
    }

    /// One back-off step: spin, yield or sleep depending on how long we have waited.
    #[cfg(not(loom))]
    pub fn pause(&mut self) {
        self.round = self.round.saturating_add(1);
        if self.round <= SPIN_ROUNDS {
            let max = 1u64 << self.round;
            let n = max / 2 + self.next_random() % (max / 2 + 1);
            for _ in 0..n {
                crate::sync::spin_loop();
            }
        } else if self.round <= SPIN_ROUNDS + YIELD_ROUNDS {
            std::thread::yield_now();
        } else {
            self.sleep();
        }
    }

    #[cfg(not(loom))]
    fn sleep(&mut self) {
        use crate::pgstat::wait_event::{report_wait_end, report_wait_start, WaitEvent};
        self.sleeps += 1;
        if self.sleeps >= STUCK_DELAYS {
            panic!("stuck spinlock detected after {} sleeps", self.sleeps);
        }
        crate::pgstat::lwlock_stats::record_spin_delay();
        report_wait_start(WaitEvent::SPIN_DELAY);
        std::thread::sleep(std::time::Duration::from_micros(self.cur_delay_us));
        report_wait_end();
        // Grow by a random factor in [1, 2); wrap to the minimum past the maximum.
        let r = self.next_random() % 1024;
        self.cur_delay_us += self.cur_delay_us * r / 1024;
        if self.cur_delay_us > MAX_DELAY.as_micros() as u64 {
            self.cur_delay_us = MIN_DELAY.as_micros() as u64;
        }
    }
}

/// A per-waiter random seed: the stack address and the clock, mixed. Never zero.
fn seed() -> u64 {
    let local = 0u8;
    let addr = &local as *const u8 as u64;
    #[cfg(not(loom))]
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos() as u64)
        .unwrap_or(0);
    #[cfg(loom)]
    let t = 0u64;
    let mut x = addr ^ t.rotate_left(32) ^ 0x9E37_79B9_7F4A_7C15;
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^= x >> 31;
    if x == 0 {
        1
    } else {
        x
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;
    use std::sync::Arc;

    #[test]
    fn try_lock_fails_while_held() {
        let l = SpinLock::new();
        let g = l.lock();
        assert!(l.is_locked());
        assert!(l.try_lock().is_none());
        drop(g);
        assert!(!l.is_locked());
        assert!(l.try_lock().is_some());
    }

    #[test]
    fn raw_release() {
        let l = SpinLock::new();
        l.lock().into_raw();
        assert!(l.try_lock().is_none());
        // SAFETY: held through the forgotten guard above.
        unsafe { l.release_raw() };
        assert!(l.try_lock().is_some());
    }

    /// A non-atomic read-modify-write (load, then store) under the lock: if mutual
    /// exclusion failed, increments would be lost.
    #[test]
    fn many_threads_count_exactly() {
        const THREADS: u64 = 4;
        const ITERS: u64 = 20_000;
        let lock = Arc::new(SpinLock::new());
        let counter = Arc::new(AtomicU64::new(0));
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                let (lock, counter) = (lock.clone(), counter.clone());
                std::thread::spawn(move || {
                    for _ in 0..ITERS {
                        let _g = lock.lock();
                        let v = counter.load(std::sync::atomic::Ordering::Relaxed);
                        std::hint::black_box(());
                        counter.store(v + 1, std::sync::atomic::Ordering::Relaxed);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(counter.load(std::sync::atomic::Ordering::Relaxed), THREADS * ITERS);
    }

    #[test]
    fn backoff_reaches_sleep_and_reports_spin_delay() {
        use crate::pgstat::wait_event::{current_wait_event, register_backend, WaitEvent};
        use crate::pgstat::BackendId;
        let id = BackendId(1002);
        let lock = Arc::new(SpinLock::new());
        let g = lock.lock();
        let l2 = lock.clone();
        let t = std::thread::spawn(move || {
            register_backend(id).unwrap();
            let _g = l2.lock();
            crate::pgstat::wait_event::unregister_backend();
        });
        // The waiter must get through spinning and yielding to the sleeping phase,
        // where it shows Timeout:SpinDelay.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let mut seen = false;
        while std::time::Instant::now() < deadline {
            if current_wait_event(id) == Some(WaitEvent::SPIN_DELAY) {
                seen = true;
                break;
            }
            std::thread::yield_now();
        }
        drop(g);
        t.join().unwrap();
        assert!(seen, "waiter never reported Timeout:SpinDelay");
    }

    #[test]
    fn delay_schedule_grows_and_wraps() {
        let mut d = SpinDelay::new();
        for _ in 0..SPIN_ROUNDS + YIELD_ROUNDS {
            d.pause();
        }
        assert_eq!(d.sleeps(), 0);
        let mut last = d.cur_delay_us;
        let mut wrapped = false;
        for _ in 0..40 {
            d.pause();
            assert!(d.cur_delay_us >= last || d.cur_delay_us == MIN_DELAY.as_micros() as u64);
            if d.cur_delay_us < last {
                wrapped = true;
            }
            assert!(d.cur_delay_us <= MAX_DELAY.as_micros() as u64);
            last = d.cur_delay_us;
            if wrapped {
                break;
            }
        }
        assert!(d.sleeps() >= 1);
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::cell::UnsafeCell;
    use loom::sync::Arc;

    #[test]
    fn loom_spinlock_mutual_exclusion() {
        loom::model(|| {
            let lock = Arc::new(SpinLock::new());
            let data = Arc::new(UnsafeCell::new(0u32));
            let ts: Vec<_> = (0..2)
                .map(|_| {
                    let (lock, data) = (lock.clone(), data.clone());
                    loom::thread::spawn(move || {
                        let _g = lock.lock();
                        // SAFETY: under the spinlock; loom checks it.
                        data.with_mut(|p| unsafe { *p += 1 });
                    })
                })
                .collect();
            for t in ts {
                t.join().unwrap();
            }
            // SAFETY: all writers joined.
            assert_eq!(data.with(|p| unsafe { *p }), 2);
            assert!(!lock.is_locked());
        });
    }
}
