//! The visibility map of a heap relation (PostgreSQL's visibilitymap.c): the `_vm`
//! fork, two bits per heap page, read and written through the buffer pool.
//!
//! ```text
//! bit 0  VM_ALL_VISIBLE  every tuple on the heap page is visible to every current
//!                        and future snapshot (the page has PD_ALL_VISIBLE)
//! bit 1  VM_ALL_FROZEN   and every one of them has a frozen xmin and no xmax that
//!                        a VACUUM would have to look at (set only with bit 0)
//! ```
//!
//! A VM page is a standard page header (24 bytes: the LSN and checksum matter)
//! followed by `VM_MAP_BYTES` bytes of map, four heap pages per byte, heap page `b`
//! at byte `(b % VM_HEAPBLOCKS_PER_PAGE) / 4`, bits `2 * (b % 4)` and
//! `2 * (b % 4) + 1`, of VM page `b / VM_HEAPBLOCKS_PER_PAGE`.
//!
//! **Invariant:** a set bit is a promise; a clear bit promises nothing.
//!
//! ```text
//! VM_ALL_VISIBLE(b)  =>  PD_ALL_VISIBLE(b)  and every tuple of b is visible to all
//! VM_ALL_FROZEN(b)   =>  VM_ALL_VISIBLE(b)  and no tuple of b has an unfrozen xid
//! ```
//!
//! How it is kept (heap README, "The visibility map"):
//! 1. Bits are **set** only by VACUUM, holding the heap page's cleanup lock: it sets
//!    PD_ALL_VISIBLE on the heap page first, then the bits on the VM page, with one
//!    WAL record (`HeapOp::Visible`, the heap page as block 0) whose end LSN becomes
//!    both pages' LSN. The VM page therefore cannot reach disk before the record
//!    (WAL before data), and redo of the record sets both again.
//! 2. Bits are **cleared** by every heap change that clears PD_ALL_VISIBLE (the ops'
//!    `cleared_flags`), under the heap page's exclusive lock, before its WAL record
//!    is inserted; the redo of that record clears them again whatever the heap
//!    page's LSN. A clear is not logged on its own and does not move the VM page's
//!    LSN: losing it in a crash also loses the heap change that caused it.
//! 3. A VM page that fails verification (a torn write) or does not exist reads as
//!    all zeroes: nothing is promised, and VACUUM sets the bits again.
//!
//! Lock order: the heap page's content lock, then the VM page's; never the other
//! way round, and never two VM pages at once.

use crate::buffer::LockedBuffer;
use crate::config::BLCKSZ;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::storage::page::{page_init, page_is_new, page_lsn, set_page_lsn, PAGE_HEADER_SIZE};
use crate::storage::{BlockNumber, BufferTag, ForkNumber, Lsn, RelFileLocator};
use std::sync::Mutex;

/// Every tuple of the heap page is visible to all.
pub const VM_ALL_VISIBLE: u8 = 0x01;
/// Every tuple of the heap page is frozen (implies all-visible).
pub const VM_ALL_FROZEN: u8 = 0x02;
/// Both bits.
pub const VM_VALID_BITS: u8 = VM_ALL_VISIBLE | VM_ALL_FROZEN;

/// Bits per heap page.
const BITS_PER_HEAPBLOCK: u32 = 2;
/// Heap pages per map byte.
const HEAPBLOCKS_PER_BYTE: u32 = 8 / BITS_PER_HEAPBLOCK;
/// Bytes of map on one VM page.
pub const VM_MAP_BYTES: usize = BLCKSZ - PAGE_HEADER_SIZE;
/// Heap pages covered by one VM page.
pub const VM_HEAPBLOCKS_PER_PAGE: u32 = VM_MAP_BYTES as u32 * HEAPBLOCKS_PER_BYTE;

/// Serializes extension of VM forks (one VM page covers 32672 heap pages).
static VM_EXTEND: Mutex<()> = Mutex::new(());

/// Where heap block `heap_blk`'s bits are: VM block, byte offset in the page, shift.
fn vm_location(heap_blk: BlockNumber) -> (BlockNumber, usize, u32) {
    let vm_blk = heap_blk / VM_HEAPBLOCKS_PER_PAGE;
    let within = heap_blk % VM_HEAPBLOCKS_PER_PAGE;
    let byte = PAGE_HEADER_SIZE + (within / HEAPBLOCKS_PER_BYTE) as usize;
    let shift = (within % HEAPBLOCKS_PER_BYTE) * BITS_PER_HEAPBLOCK;
    (vm_blk, byte, shift)
}

/// The bits of `heap_blk` on the VM page that covers it (all-zero page: none).
pub fn vm_page_get(page: &[u8], heap_blk: BlockNumber) -> u8 {
    let (_, byte, shift) = vm_location(heap_blk);
    (page[byte] >> shift) & VM_VALID_BITS
}

/// Sets `flags` for `heap_blk` on an initialized VM page; returns whether a bit
/// changed.
pub fn vm_page_set(page: &mut [u8], heap_blk: BlockNumber, flags: u8) -> bool {
    let (_, byte, shift) = vm_location(heap_blk);
    let before = page[byte];
    page[byte] |= (flags & VM_VALID_BITS) << shift;
    page[byte] != before
}

/// Clears `flags` for `heap_blk` on a VM page; returns whether a bit changed.
pub fn vm_page_clear(page: &mut [u8], heap_blk: BlockNumber, flags: u8) -> bool {
    let (_, byte, shift) = vm_location(heap_blk);
    let before = page[byte];
    page[byte] &= !((flags & VM_VALID_BITS) << shift);
    page[byte] != before
}

fn tag(rel: RelFileLocator, vm_blk: BlockNumber) -> BufferTag {
    BufferTag::new(rel, ForkNumber::VisibilityMap, vm_blk)
}

/// Whether VM block `vm_blk` of `rel` exists on disk (or in the pool).
fn vm_block_exists(engine: &Engine, rel: RelFileLocator, vm_blk: BlockNumber) -> Result<bool> {
    Ok(engine.smgr.exists(rel, ForkNumber::VisibilityMap)
        && vm_blk < engine.buffers.nblocks(rel, ForkNumber::VisibilityMap)?)
}

/// Makes the VM fork of `rel` at least `nblocks` long (new pages are all-zero: no
/// bit set). Not WAL-logged: redo of a record that sets a bit extends it again.
fn vm_extend_to(engine: &Engine, rel: RelFileLocator, nblocks: BlockNumber) -> Result<()> {
    if vm_block_exists(engine, rel, nblocks - 1)? {
        return Ok(());
    }
    let _g = VM_EXTEND.lock().unwrap_or_else(|e| e.into_inner());
    engine.smgr.create(rel, ForkNumber::VisibilityMap)?;
    let have = engine.buffers.nblocks(rel, ForkNumber::VisibilityMap)?;
    if have < nblocks {
        drop(engine.buffers.extend(rel, ForkNumber::VisibilityMap, nblocks - have, None)?);
    }
    Ok(())
}

/// VM page `vm_blk` under its exclusive content lock, initialized; a page that fails
/// verification is zeroed (it promised nothing it can still be trusted for).
fn vm_read_exclusive(engine: &Engine, rel: RelFileLocator, vm_blk: BlockNumber) -> Result<LockedBuffer<'_>> {
    let t = tag(rel, vm_blk);
    let mut page = match engine.buffers.read_buffer(t, None) {
        Ok(pin) => pin.into_locked(),
        Err(Error::Corrupt { .. }) => engine.buffers.read_buffer_zero(t, None)?,
        Err(e) => return Err(e),
    };
    if page_is_new(&page[..]) {
        page_init(&mut page[..], 0);
        page.mark_dirty();
    }
    Ok(page)
}

/// The bits of heap block `heap_blk` of `rel` (PostgreSQL's visibilitymap_get_status).
/// Read under the VM page's shared lock; the answer may be stale as soon as it is
/// returned unless the caller holds the heap page's lock.
pub fn vm_get_status(engine: &Engine, rel: RelFileLocator, heap_blk: BlockNumber) -> Result<u8> {
    let (vm_blk, _, _) = vm_location(heap_blk);
    if !vm_block_exists(engine, rel, vm_blk)? {
        return Ok(0);
    }
    let pin = match engine.buffers.read_buffer(tag(rel, vm_blk), None) {
        Ok(p) => p,
        Err(Error::Corrupt { .. }) => return Ok(0),
        Err(e) => return Err(e),
    };
    let page = pin.lock_shared();
    if page_is_new(&page[..]) {
        return Ok(0);
    }
    Ok(vm_page_get(&page[..], heap_blk))
}

/// Reads the map of one relation page by page for a scan over its heap blocks in
/// order (VACUUM's skipping): a copy of the current VM page is kept, so each VM page
/// is locked once. The bits may be stale as soon as they are copied (see
/// [`vm_get_status`]).
pub struct VmReader {
    rel: RelFileLocator,
    /// The VM block copied in `map`, if any.
    vm_blk: Option<BlockNumber>,
    /// Its map bytes (all zero for a page that does not exist or is unreadable).
    map: Vec<u8>,
}

impl VmReader {
    pub fn new(rel: RelFileLocator) -> VmReader {
        VmReader { rel, vm_blk: None, map: vec![0; BLCKSZ] }
    }

    /// The bits of heap block `heap_blk`.
    pub fn status(&mut self, engine: &Engine, heap_blk: BlockNumber) -> Result<u8> {
        let (vm_blk, _, _) = vm_location(heap_blk);
        if self.vm_blk != Some(vm_blk) {
            self.map.fill(0);
            if vm_block_exists(engine, self.rel, vm_blk)? {
                match engine.buffers.read_buffer(tag(self.rel, vm_blk), None) {
                    Ok(pin) => self.map.copy_from_slice(&pin.lock_shared()[..]),
                    Err(Error::Corrupt { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            self.vm_blk = Some(vm_blk);
        }
        Ok(vm_page_get(&self.map, heap_blk))
    }
}

/// Sets `flags` for `heap_blk` and stamps the VM page with `lsn`, the end of the
/// `HeapOp::Visible` record that covers the change (PostgreSQL's
/// visibilitymap_set). The caller holds the heap page's cleanup lock, has set
/// PD_ALL_VISIBLE on it and logged the record. In redo (`redo: true`) the bits are
/// set only if the VM page has not seen the record yet.
pub fn vm_set(engine: &Engine, rel: RelFileLocator, heap_blk: BlockNumber, flags: u8, lsn: Lsn, redo: bool) -> Result<()> {
    let (vm_blk, _, _) = vm_location(heap_blk);
    vm_extend_to(engine, rel, vm_blk + 1)?;
    let mut page = vm_read_exclusive(engine, rel, vm_blk)?;
    if redo && page_lsn(&page[..]) >= lsn {
        return Ok(());
    }
    vm_page_set(&mut page[..], heap_blk, flags);
    if page_lsn(&page[..]) < lsn {
        set_page_lsn(&mut page[..], lsn);
    }
    page.mark_dirty();
    Ok(())
}

/// Clears `flags` for `heap_blk` (PostgreSQL's visibilitymap_clear). The caller holds
/// the heap page's exclusive lock and has cleared PD_ALL_VISIBLE (or is redoing a
/// record that did). Not logged, the page LSN is left alone (module doc, rule 2). A
/// VM page that does not exist holds no bit: nothing to do.
pub fn vm_clear(engine: &Engine, rel: RelFileLocator, heap_blk: BlockNumber, flags: u8) -> Result<()> {
    let (vm_blk, _, _) = vm_location(heap_blk);
    if !vm_block_exists(engine, rel, vm_blk)? {
        return Ok(());
    }
    let mut page = vm_read_exclusive(engine, rel, vm_blk)?;
    if vm_page_clear(&mut page[..], heap_blk, flags) {
        page.mark_dirty();
    }
    Ok(())
}

/// Counts the heap pages of `rel`'s first `nblocks` with VM_ALL_VISIBLE set, and
/// those with VM_ALL_FROZEN set (PostgreSQL's visibilitymap_count): pg_class's
/// relallvisible.
pub fn vm_count(engine: &Engine, rel: RelFileLocator, nblocks: BlockNumber) -> Result<(u32, u32)> {
    let (mut visible, mut frozen) = (0u32, 0u32);
    let mut vm_blk = 0;
    while vm_blk * VM_HEAPBLOCKS_PER_PAGE < nblocks {
        if !vm_block_exists(engine, rel, vm_blk)? {
            break;
        }
        let pin = match engine.buffers.read_buffer(tag(rel, vm_blk), None) {
            Ok(p) => p,
            Err(Error::Corrupt { .. }) => {
                vm_blk += 1;
                continue;
            }
            Err(e) => return Err(e),
        };
        let page = pin.lock_shared();
        if !page_is_new(&page[..]) {
            let first = vm_blk * VM_HEAPBLOCKS_PER_PAGE;
            let last = nblocks.min(first.saturating_add(VM_HEAPBLOCKS_PER_PAGE));
            for b in first..last {
                let bits = vm_page_get(&page[..], b);
                visible += (bits & VM_ALL_VISIBLE != 0) as u32;
                frozen += (bits & VM_ALL_FROZEN != 0) as u32;
            }
        }
        vm_blk += 1;
    }
    Ok((visible, frozen))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_of_neighbouring_heap_pages_are_independent() {
        let mut p = vec![0u8; BLCKSZ];
        page_init(&mut p, 0);
        for b in [0, 1, 2, 3, 4, VM_HEAPBLOCKS_PER_PAGE - 1] {
            assert_eq!(vm_page_get(&p, b), 0);
        }
        assert!(vm_page_set(&mut p, 1, VM_ALL_VISIBLE));
        assert!(vm_page_set(&mut p, 2, VM_VALID_BITS));
        assert!(!vm_page_set(&mut p, 2, VM_ALL_VISIBLE));
        assert_eq!((vm_page_get(&p, 0), vm_page_get(&p, 1), vm_page_get(&p, 2), vm_page_get(&p, 3)), (0, 1, 3, 0));
        assert!(vm_page_clear(&mut p, 2, VM_ALL_FROZEN));
        assert_eq!(vm_page_get(&p, 2), VM_ALL_VISIBLE);
        assert!(vm_page_set(&mut p, VM_HEAPBLOCKS_PER_PAGE - 1, VM_ALL_FROZEN));
        assert_eq!(p[BLCKSZ - 1], VM_ALL_FROZEN << 6);
        // The header is untouched.
        let mut q = vec![0u8; BLCKSZ];
        page_init(&mut q, 0);
        assert_eq!(p[..PAGE_HEADER_SIZE], q[..PAGE_HEADER_SIZE]);
    }

    #[test]
    fn location_covers_a_page_then_moves_on() {
        assert_eq!(vm_location(0), (0, PAGE_HEADER_SIZE, 0));
        assert_eq!(vm_location(5), (0, PAGE_HEADER_SIZE + 1, 2));
        assert_eq!(vm_location(VM_HEAPBLOCKS_PER_PAGE), (1, PAGE_HEADER_SIZE, 0));
        assert_eq!(VM_HEAPBLOCKS_PER_PAGE, 32672);
    }
}
