//! The process allocator: mimalloc, called on its unaligned fast path.
//!
//! The `mimalloc` crate's `GlobalAlloc` passes every request to
//! `mi_malloc_aligned` (and `mi_realloc_aligned`, `mi_zalloc_aligned`), whose
//! alignment handling costs about 50 instructions per call where `mi_malloc`
//! costs about 20 (callgrind, pgbench -S: ~32 allocations per transaction).
//! mimalloc's blocks are aligned to 16 bytes (`MI_MAX_ALIGN_SIZE`) from 16
//! bytes up, and smaller ones to their size class (a multiple of 8), so a
//! request whose alignment is at most 16 and at most its size (Rust sizes are
//! multiples of their alignment) is served by the unaligned calls, as the
//! standard library's `System` allocator does with malloc. Larger alignments
//! take the aligned calls.

use libmimalloc_sys as mi;
use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

/// The largest alignment mimalloc's unaligned calls guarantee (for requests
/// of at least that size).
const MIN_ALIGN: usize = 16;

pub struct MiMalloc;

#[inline]
fn plain(align: usize, size: usize) -> bool {
    align <= MIN_ALIGN && align <= size
}

// SAFETY: each method returns memory from mimalloc with at least the
// requested alignment (see the module doc) or null, and frees or resizes
// only pointers mimalloc returned (mi_free and mi_realloc accept blocks from
// the aligned calls too).
unsafe impl GlobalAlloc for MiMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if plain(layout.align(), layout.size()) {
            mi::mi_malloc(layout.size()) as *mut u8
        } else {
            mi::mi_malloc_aligned(layout.size(), layout.align()) as *mut u8
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if plain(layout.align(), layout.size()) {
            mi::mi_zalloc(layout.size()) as *mut u8
        } else {
            mi::mi_zalloc_aligned(layout.size(), layout.align()) as *mut u8
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        mi::mi_free(ptr as *mut c_void);
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if plain(layout.align(), new_size) {
            mi::mi_realloc(ptr as *mut c_void, new_size) as *mut u8
        } else {
            mi::mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) as *mut u8
        }
    }
}

/// `memacct::release`: frees this thread's empty pages and purges what the
/// arenas hold free at once, instead of after mimalloc's purge delay.
pub fn release_free_memory() {
    // SAFETY: mi_collect has no preconditions; it works on the calling
    // thread's heap and the process's arenas.
    unsafe { mi::mi_collect(true) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every alignment up to a page, for sizes around each: the pointer is
    /// aligned, writable over its size, survives a realloc with its
    /// contents, and zeroed memory is zero.
    #[test]
    fn alignment_is_kept_on_every_path() {
        let a = MiMalloc;
        for align in [1usize, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [align, align * 2, align * 3, 24, 40, 100, 4000, 70_000] {
                let Ok(l) = Layout::from_size_align(size.max(align) / align * align, align) else { continue };
                // SAFETY: l has a non-zero size; each pointer is used within
                // its size and freed once with its layout.
                unsafe {
                    let p = a.alloc(l);
                    assert!(!p.is_null() && (p as usize).is_multiple_of(align), "alloc {l:?}");
                    std::ptr::write_bytes(p, 0xab, l.size());
                    let q = a.realloc(p, l, l.size() * 2);
                    assert!(!q.is_null() && (q as usize).is_multiple_of(align), "realloc {l:?}");
                    assert!((0..l.size()).all(|i| *q.add(i) == 0xab));
                    a.dealloc(q, Layout::from_size_align(l.size() * 2, align).unwrap());
                    let z = a.alloc_zeroed(l);
                    assert!(!z.is_null() && (z as usize).is_multiple_of(align), "alloc_zeroed {l:?}");
                    assert!((0..l.size()).all(|i| *z.add(i) == 0));
                    a.dealloc(z, l);
                }
            }
        }
    }
}
