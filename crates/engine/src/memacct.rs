//! Per-thread memory accounting of the process allocator.
//!
//! [`CountingAlloc`] wraps the process's global allocator (the binary installs
//! `CountingAlloc<MiMalloc>`) and keeps, for each thread, the bytes it
//! allocated minus the bytes it freed ([`thread_net`]). A session runs on one
//! thread, so the growth of that number during a statement is the statement's
//! memory; the SQL layer compares it with its `statement_memory_limit` and
//! fails the statement with 53200 instead of growing the process
//! (`ferrogres_sql::memory`).
//!
//! To say which request passed the limit (PostgreSQL's DETAIL "Failed on
//! request of size N"), a thread may arm a soft limit ([`arm`]): the first
//! allocation that takes the thread's net above it is remembered
//! ([`crossed`]) and nothing else happens; the allocation itself succeeds.
//! The statement notices at its next interrupt check.
//!
//! Memory a thread frees stays with the allocator, which returns it to the
//! operating system lazily (mimalloc purges freed pages only after a delay,
//! and only when it is next called), so a session that once ran a large
//! statement could keep the server's resident size up for as long as it
//! idles. A thread may therefore watch its growth ([`watch`]): the first time
//! its net passes the watermark is remembered ([`grew`]), and the server then
//! asks the allocator to give back what it holds free ([`release`], through a
//! hook the binary installs with [`set_release`]).
//!
//! Cost: per allocation, deallocation or reallocation one thread-local add and
//! one compare, on a `const`-initialized thread-local without a destructor (no
//! lazy registration, no allocation inside the allocator). Memory freed by
//! another thread than the one that allocated it lowers the freeing thread's
//! count: the counts are per thread, not per object, and only their changes
//! over a statement are read.
//!
//! Invariants (per thread): `net` = bytes allocated − bytes freed by this
//! thread since it started; `crossed != 0` only if some allocation took `net`
//! above `limit` since the last [`arm`]; `grew` only if some allocation took
//! it above `watermark` since the last [`watch`]; `mark` is the lowest of
//! `limit` (while nothing crossed it) and `watermark` (while `grew` is
//! false), `isize::MAX` when neither is armed: the one number the allocation
//! path compares with.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;

/// The global allocator `A`, counted per thread.
pub struct CountingAlloc<A>(pub A);

struct Account {
    /// Bytes allocated minus bytes freed by this thread.
    net: Cell<isize>,
    /// What the allocation path compares `net` with (see the invariants).
    mark: Cell<isize>,
    /// The soft limit: the first allocation taking `net` above it is recorded.
    limit: Cell<isize>,
    /// Size of that allocation (0: none since the last `arm`).
    crossed: Cell<usize>,
    /// The growth watermark set by [`watch`].
    watermark: Cell<isize>,
    /// `net` passed `watermark` since the last [`watch`].
    grew: Cell<bool>,
}

thread_local! {
    static ACCOUNT: Account = const {
        Account {
            net: Cell::new(0),
            mark: Cell::new(isize::MAX),
            limit: Cell::new(isize::MAX),
            crossed: Cell::new(0),
            watermark: Cell::new(isize::MAX),
            grew: Cell::new(false),
        }
    };
}

impl Account {
    /// Recomputes `mark` from the limit and the watermark.
    fn remark(&self) {
        let limit = if self.crossed.get() == 0 { self.limit.get() } else { isize::MAX };
        let water = if self.grew.get() { isize::MAX } else { self.watermark.get() };
        self.mark.set(limit.min(water));
    }

    /// `net` (now `n`) passed `mark`: record which bound it crossed.
    #[cold]
    fn passed(&self, n: isize, request: usize) {
        if n > self.limit.get() && self.crossed.get() == 0 {
            self.crossed.set(request.max(1));
        }
        if n > self.watermark.get() {
            self.grew.set(true);
        }
        self.remark();
    }
}

#[inline]
fn charge(delta: isize, request: usize) {
    // try_with: nothing to count once the thread's locals are gone (a thread
    // freeing memory during its exit).
    let _ = ACCOUNT.try_with(|a| {
        let n = a.net.get().wrapping_add(delta);
        a.net.set(n);
        if n > a.mark.get() {
            a.passed(n, request);
        }
    });
}

// SAFETY: every method forwards to the wrapped allocator with the same
// arguments and returns its result unchanged; the bookkeeping touches only
// this thread's counters and allocates nothing.
unsafe impl<A: GlobalAlloc> GlobalAlloc for CountingAlloc<A> {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = self.0.alloc(layout);
        if !p.is_null() {
            charge(layout.size() as isize, layout.size());
        }
        p
    }
    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = self.0.alloc_zeroed(layout);
        if !p.is_null() {
            charge(layout.size() as isize, layout.size());
        }
        p
    }
    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.0.dealloc(ptr, layout);
        charge(-(layout.size() as isize), 0);
    }
    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = self.0.realloc(ptr, layout, new_size);
        if !p.is_null() {
            charge(new_size as isize - layout.size() as isize, new_size);
        }
        p
    }
}

/// Bytes this thread allocated minus bytes it freed (0 when the process's
/// allocator is not a [`CountingAlloc`], as in unit tests).
pub fn thread_net() -> isize {
    ACCOUNT.try_with(|a| a.net.get()).unwrap_or(0)
}

/// Arms this thread's soft limit at `limit` bytes of net allocation and
/// forgets an earlier crossing.
pub fn arm(limit: isize) {
    let _ = ACCOUNT.try_with(|a| {
        a.limit.set(limit);
        a.crossed.set(0);
        a.remark();
    });
}

/// This thread's soft limit and recorded crossing, to put back with
/// [`restore`] after a nested, tighter bound.
pub fn state() -> (isize, usize) {
    ACCOUNT.try_with(|a| (a.limit.get(), a.crossed.get())).unwrap_or((isize::MAX, 0))
}

/// Puts back a [`state`].
pub fn restore(s: (isize, usize)) {
    let _ = ACCOUNT.try_with(|a| {
        a.limit.set(s.0);
        a.crossed.set(s.1);
        a.remark();
    });
}

/// Disarms the soft limit.
pub fn disarm() {
    arm(isize::MAX);
}

/// Bytes this thread may still allocate before passing its soft limit
/// (`isize::MAX`-ish when disarmed; negative once past it).
pub fn headroom() -> isize {
    ACCOUNT.try_with(|a| a.limit.get().saturating_sub(a.net.get())).unwrap_or(isize::MAX)
}

/// The size of the allocation that took this thread past its soft limit
/// since it was armed, if one did.
pub fn crossed() -> Option<usize> {
    ACCOUNT.try_with(|a| a.crossed.get()).ok().filter(|&n| n != 0)
}

/// Watches this thread's growth from now: [`grew`] says whether its net
/// passed its current value plus `bytes` afterwards.
pub fn watch(bytes: usize) {
    let _ = ACCOUNT.try_with(|a| {
        a.watermark.set(a.net.get().saturating_add(bytes.min(isize::MAX as usize) as isize));
        a.grew.set(false);
        a.remark();
    });
}

/// Whether this thread's net passed the watermark of the last [`watch`].
pub fn grew() -> bool {
    ACCOUNT.try_with(|a| a.grew.get()).unwrap_or(false)
}

/// The allocator's hook that returns free memory to the operating system.
static RELEASE: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// Installs the process allocator's release function (once, by the binary
/// that installs the allocator; later calls are ignored).
pub fn set_release(f: fn()) {
    let _ = RELEASE.set(f);
}

/// Asks the allocator to return the memory this thread holds free to the
/// operating system (nothing without a hook, as in unit tests).
pub fn release() {
    if let Some(f) = RELEASE.get() {
        f();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny allocator over the system one, counted, used through its
    /// methods directly (the test binary keeps the default global allocator).
    #[test]
    fn counts_and_remembers_the_crossing_request() {
        let a = CountingAlloc(std::alloc::System);
        let before = thread_net();
        let l = Layout::from_size_align(1000, 8).unwrap();
        arm(before + 1500);
        // SAFETY: the layouts are valid and each pointer is freed once with its layout.
        unsafe {
            let p = a.alloc(l);
            assert_eq!(thread_net() - before, 1000);
            assert_eq!(crossed(), None);
            let q = a.realloc(p, l, 4000);
            assert_eq!(thread_net() - before, 4000);
            assert_eq!(crossed(), Some(4000));
            a.dealloc(q, Layout::from_size_align(4000, 8).unwrap());
        }
        assert_eq!(thread_net(), before);
        // Still remembered until re-armed.
        assert_eq!(crossed(), Some(4000));
        disarm();
        assert_eq!(crossed(), None);
        // Other threads have their own account.
        let other = std::thread::spawn(move || {
            // SAFETY: as above.
            unsafe {
                let p = a.alloc(l);
                let n = thread_net();
                a.dealloc(p, l);
                n
            }
        })
        .join()
        .unwrap();
        assert_eq!(other, 1000);
        assert_eq!(thread_net(), before);
    }

    /// The growth watermark and the soft limit are kept apart: crossing one
    /// does not report the other, and a nested bound (state/restore) leaves
    /// the watermark alone.
    #[test]
    fn the_watermark_and_the_limit_are_separate() {
        let a = CountingAlloc(std::alloc::System);
        let small = Layout::from_size_align(1000, 8).unwrap();
        let big = Layout::from_size_align(10_000, 8).unwrap();
        disarm();
        watch(5000);
        // SAFETY: valid layouts; each pointer is freed once with its layout.
        unsafe {
            let p = a.alloc(small);
            assert!(!grew());
            arm(thread_net() + 15_000);
            let saved = state();
            arm(thread_net() + 100);
            restore(saved);
            let q = a.alloc(big);
            assert!(grew(), "the watermark was passed");
            assert_eq!(crossed(), None, "the limit was not");
            let r = a.alloc(big);
            assert_eq!(crossed(), Some(10_000));
            assert!(headroom() < 0);
            a.dealloc(r, big);
            a.dealloc(q, big);
            a.dealloc(p, small);
        }
        // Freeing does not clear either record; watch and arm do.
        assert!(grew());
        watch(5000);
        assert!(!grew());
        disarm();
        assert_eq!(crossed(), None);
    }
}
