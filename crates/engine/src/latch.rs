//! A latch a thread can sleep on in `poll()` beside its client's socket
//! (PostgreSQL's `latch.c` with a WaitEventSet): other threads set it, its
//! owner resets it and sleeps until it is set again or the socket is readable.
//!
//! The latch is a flag plus an eventfd that is readable while the flag is set.
//! Protocol, for a waiter that must not miss an event:
//! 1. the owner resets the latch, then looks for work (reads the state the
//!    setters publish), and only when it found none sleeps in `poll()` on
//!    [`Latch::fd`] (and its socket);
//! 2. a setter publishes its state first, then sets the latch.
//!
//! A set that comes after the owner looked leaves the eventfd readable, so
//! `poll()` returns at once; a set that came before the reset is covered by
//! the look that follows it. The eventfd write and read are system calls,
//! which order the memory accesses around them. Without an eventfd (the kernel
//! refused one: out of descriptors) [`Latch::fd`] is `None` and the owner
//! polls [`Latch::is_set`] on a timer instead.
//!
//! Users: LISTEN's notification signal (`notify`, set and reset under the
//! queue's mutex) and the walsenders' wake-up at each WAL flush
//! (`wal::Wal::watch_flush`, PostgreSQL's WalSndWakeup).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, Ordering};

pub struct Latch {
    set: AtomicBool,
    /// Non-blocking eventfd, readable while `set` is (see the module doc).
    wake: Option<OwnedFd>,
}

impl Default for Latch {
    fn default() -> Self {
        Latch::new()
    }
}

impl Latch {
    pub fn new() -> Latch {
        // SAFETY: eventfd takes no pointers; a non-negative result is a new
        // descriptor that nothing else owns.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        let wake = (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) });
        Latch { set: AtomicBool::new(false), wake }
    }

    /// Whether the latch is set (one atomic load).
    #[inline]
    pub fn is_set(&self) -> bool {
        self.set.load(Ordering::Acquire)
    }

    /// The descriptor to poll for readability; `None`: poll `is_set` instead.
    pub fn fd(&self) -> Option<RawFd> {
        self.wake.as_ref().map(|f| f.as_raw_fd())
    }

    /// Sets the latch: the owner's `poll()` returns (or its next one does).
    pub fn set(&self) {
        if self.set.swap(true, Ordering::AcqRel) {
            return; // already set: the eventfd is readable
        }
        if let Some(fd) = &self.wake {
            let one = 1u64.to_ne_bytes();
            // SAFETY: writes 8 bytes from a live buffer to our own eventfd. It
            // cannot block (EFD_NONBLOCK); EAGAIN (counter full) still leaves
            // the descriptor readable, which is all a waiter needs.
            unsafe { libc::write(fd.as_raw_fd(), one.as_ptr().cast(), one.len()) };
        }
    }

    /// Resets the latch (its owner, before looking for work).
    pub fn reset(&self) {
        if !self.set.swap(false, Ordering::AcqRel) {
            return;
        }
        if let Some(fd) = &self.wake {
            let mut buf = [0u8; 8];
            // SAFETY: reads at most 8 bytes into a live buffer; EAGAIN when a
            // racing set has not written yet (it will, and the next poll sees it).
            unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    fn readable(l: &Latch, ms: i32) -> bool {
        let mut p = libc::pollfd { fd: l.fd().expect("eventfd"), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        unsafe { libc::poll(&mut p, 1, ms) == 1 }
    }

    #[test]
    fn set_makes_the_fd_readable_and_reset_clears_it() {
        let l = Latch::new();
        assert!(!l.is_set() && !readable(&l, 0));
        l.set();
        l.set();
        assert!(l.is_set() && readable(&l, 0));
        l.reset();
        assert!(!l.is_set() && !readable(&l, 0));
        l.reset();
        l.set();
        assert!(readable(&l, 0));
    }

    #[test]
    fn a_thread_asleep_in_poll_is_woken_by_a_set_from_another() {
        let l = Arc::new(Latch::new());
        for _ in 0..50 {
            l.reset();
            let setter = {
                let l = l.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(Duration::from_millis(1));
                    l.set();
                })
            };
            let t = Instant::now();
            // Without the set the poll would sleep 10 s and this would fail.
            assert!(readable(&l, 10_000), "not woken");
            assert!(t.elapsed() < Duration::from_secs(10));
            setter.join().unwrap();
        }
    }
}
