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
//! Cost: per allocation, deallocation or reallocation one thread-local add and
//! one compare, on a `const`-initialized thread-local without a destructor (no
//! lazy registration, no allocation inside the allocator). Memory freed by
//! another thread than the one that allocated it lowers the freeing thread's
//! count: the counts are per thread, not per object, and only their changes
//! over a statement are read.
//!
//! Invariants (per thread): `net` = bytes allocated − bytes freed by this
//! thread since it started; `crossed != 0` only if some allocation took `net`
//! above `mark` since the last [`arm`]; `mark = isize::MAX` when disarmed.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;

/// The global allocator `A`, counted per thread.
pub struct CountingAlloc<A>(pub A);

struct Account {
    /// Bytes allocated minus bytes freed by this thread.
    net: Cell<isize>,
    /// The soft limit: the first allocation taking `net` above it is recorded.
    mark: Cell<isize>,
    /// Size of that allocation (0: none since the last `arm`).
    crossed: Cell<usize>,
}

thread_local! {
    static ACCOUNT: Account = const {
        Account { net: Cell::new(0), mark: Cell::new(isize::MAX), crossed: Cell::new(0) }
    };
}

#[inline]
fn charge(delta: isize, request: usize) {
    // try_with: nothing to count once the thread's locals are gone (a thread
    // freeing memory during its exit).
    let _ = ACCOUNT.try_with(|a| {
        let n = a.net.get().wrapping_add(delta);
        a.net.set(n);
        if n > a.mark.get() && a.crossed.get() == 0 {
            a.crossed.set(request.max(1));
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
        a.mark.set(limit);
        a.crossed.set(0);
    });
}

/// This thread's soft limit and recorded crossing, to put back with
/// [`restore`] after a nested, tighter bound.
pub fn state() -> (isize, usize) {
    ACCOUNT.try_with(|a| (a.mark.get(), a.crossed.get())).unwrap_or((isize::MAX, 0))
}

/// Puts back a [`state`].
pub fn restore(s: (isize, usize)) {
    let _ = ACCOUNT.try_with(|a| {
        a.mark.set(s.0);
        a.crossed.set(s.1);
    });
}

/// Disarms the soft limit.
pub fn disarm() {
    arm(isize::MAX);
}

/// Bytes this thread may still allocate before passing its soft limit
/// (`isize::MAX`-ish when disarmed; negative once past it).
pub fn headroom() -> isize {
    ACCOUNT.try_with(|a| a.mark.get().saturating_sub(a.net.get())).unwrap_or(isize::MAX)
}

/// The size of the allocation that took this thread past its soft limit
/// since it was armed, if one did.
pub fn crossed() -> Option<usize> {
    ACCOUNT.try_with(|a| a.crossed.get()).ok().filter(|&n| n != 0)
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
}
