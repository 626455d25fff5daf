//! Waiting for a buffer's I/O to end or for its pin count to drop (the striped
//! condition variables of `BufferPool`), without a system call for the waker when
//! nobody waits.
//!
//! A waker ends an I/O (or drops a pin) thousands of times for every time someone
//! waits on it; `Condvar::notify_all` is a `futex(FUTEX_WAKE)` system call whether or
//! not anyone waits, so a stripe counts its waiters and the waker notifies only when
//! the count is not zero. The count and the waited-for condition form a Dekker pair:
//!
//! 1. a waiter takes `mu`, increments `waiters`, then (after a SeqCst fence) checks
//!    the condition, and waits on `cv` while it holds;
//! 2. a waker first makes the condition false (clears BM_IO_IN_PROGRESS, drops its
//!    pin), then, after a SeqCst fence, reads `waiters`; if not zero it takes `mu`
//!    and notifies.
//!
//! The two fences order "increment, then check" against "clear, then read the
//! count": either the waker sees the waiter counted (and notifies under `mu`, which
//! the waiter holds from its check until it sleeps, so the notify is not lost), or
//! the waiter sees the condition already false and does not sleep. Model-checked
//! by `loom_io_wait_no_lost_wakeup` below.

use crate::sync::atomic::{fence, AtomicU32, Ordering};
use crate::sync::{Condvar, Mutex};

/// One stripe: waiters of every buffer `id` with `id % IO_STRIPES` equal.
pub(crate) struct WaitStripe {
    /// Guards nothing but the sleep itself (see the module doc).
    mu: Mutex<()>,
    cv: Condvar,
    /// Threads inside `wait_while` on this stripe. Changed under `mu`.
    waiters: AtomicU32,
}

impl WaitStripe {
    pub(crate) fn new() -> WaitStripe {
        WaitStripe { mu: Mutex::new(()), cv: Condvar::new(), waiters: AtomicU32::new(0) }
    }

    /// Sleeps until `busy()` is false. `busy` reads state that the waker changes
    /// before calling [`WaitStripe::wake`].
    pub(crate) fn wait_while(&self, busy: impl Fn() -> bool) {
        let mut g = self.mu.lock().unwrap_or_else(|e| e.into_inner());
        // Relaxed + fence: the fence orders the increment before `busy()`'s loads
        // (step 1 of the module doc).
        self.waiters.fetch_add(1, Ordering::Relaxed);
        fence(Ordering::SeqCst);
        while busy() {
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        // Relaxed: under `mu`; a late decrement only costs a waker a spare notify.
        self.waiters.fetch_sub(1, Ordering::Relaxed);
        drop(g);
    }

    /// Wakes the waiters, if any. Call after making their condition false.
    #[inline]
    pub(crate) fn wake(&self) {
        // Orders the caller's state change before the count's load (step 2).
        fence(Ordering::SeqCst);
        // Relaxed: ordered by the fence above.
        if self.waiters.load(Ordering::Relaxed) != 0 {
            self.wake_slow();
        }
    }

    #[cold]
    fn wake_slow(&self) {
        let _g = self.mu.lock().unwrap_or_else(|e| e.into_inner());
        self.cv.notify_all();
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::atomic::AtomicBool;
    use loom::sync::Arc;

    /// A waiter and the thread ending the "I/O" in every interleaving: the waiter
    /// always returns (a lost wake-up would leave it asleep: loom reports the
    /// deadlock), and sees the I/O ended.
    #[test]
    fn loom_io_wait_no_lost_wakeup() {
        loom::model(|| {
            let stripe = Arc::new(WaitStripe::new());
            let in_progress = Arc::new(AtomicBool::new(true));
            let (s2, f2) = (stripe.clone(), in_progress.clone());
            let ender = loom::thread::spawn(move || {
                f2.store(false, Ordering::Release);
                s2.wake();
            });
            stripe.wait_while(|| in_progress.load(Ordering::Acquire));
            assert!(!in_progress.load(Ordering::Acquire));
            ender.join().unwrap();
        });
    }

    /// Two waiters on one stripe, one ender.
    #[test]
    fn loom_io_wait_two_waiters() {
        loom::model(|| {
            let stripe = Arc::new(WaitStripe::new());
            let in_progress = Arc::new(AtomicBool::new(true));
            let (s2, f2) = (stripe.clone(), in_progress.clone());
            let waiter = loom::thread::spawn(move || s2.wait_while(|| f2.load(Ordering::Acquire)));
            let (s3, f3) = (stripe.clone(), in_progress.clone());
            let ender = loom::thread::spawn(move || {
                f3.store(false, Ordering::Release);
                s3.wake();
            });
            stripe.wait_while(|| in_progress.load(Ordering::Acquire));
            waiter.join().unwrap();
            ender.join().unwrap();
        });
    }
}
