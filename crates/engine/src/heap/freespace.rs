//! The free space map of a relation (PostgreSQL's freespace.c): the `_fsm` fork,
//! its pages read through the buffer pool, searched from the root down.
//!
//! Page-level work (one byte per slot, the max-tree inside a page, addressing) is in
//! [`super::fsm`]; this module walks the tree of FSM pages.
//!
//! **Not WAL-logged.** FSM pages are written like any buffer (with a checksum) but
//! never logged. A page that fails verification (torn write in a crash) or was never
//! written reads as empty (all categories 0) and is rebuilt from scratch the next
//! time someone records into it. After a crash the map may be stale in both
//! directions: too low (space is not found until VACUUM records it again) or too high
//! (an inserter tries the page, finds less room, records the truth and searches
//! again). Nothing depends on the FSM for correctness.
//!
//! **Locking.** Searches take shared content locks, one FSM page at a time, from the
//! root down: an inserter never takes the root exclusively. Exclusive locks are taken
//! on one page at a time, only to record a value into it (bottom pages by inserters
//! and VACUUM; an upper page only when a search found it stale, or when a bottom
//! page's maximum rose). No FSM lock is held while a heap page is locked by this
//! module, and never two FSM page locks at once.

use super::fsm::*;
use crate::buffer::LockedBuffer;
use crate::engine::{Backend, Engine};
use crate::error::{Error, Result};
use crate::storage::page::{page_heap_free_space, page_is_new};
use crate::storage::{BlockNumber, BufferTag, ForkNumber, RelFileLocator};
use std::sync::Mutex;

/// Serializes extension of FSM forks (rare: one page covers 4069 heap pages), so
/// two backends needing the same new FSM page do not both append pages.
static FSM_EXTEND: Mutex<()> = Mutex::new(());

/// Restarts of a search after correcting a stale upper level before giving up.
const MAX_SEARCH_RESTARTS: usize = 1000;

fn tag(rel: RelFileLocator, addr: FsmAddress) -> BufferTag {
    BufferTag::new(rel, ForkNumber::Fsm, fsm_logical_to_physical(addr))
}

/// Reads FSM page `addr` with its content lock exclusive, extending the fork if the
/// page does not exist, and zeroing it if it fails verification. Returns the page
/// initialized.
fn fsm_read_exclusive(engine: &Engine, rel: RelFileLocator, addr: FsmAddress) -> Result<LockedBuffer<'_>> {
    let t = tag(rel, addr);
    fsm_extend_to(engine, rel, t.block + 1)?;
    let mut page = match engine.buffers.read_buffer(t, None) {
        Ok(pin) => pin.into_locked(),
        Err(Error::Corrupt { .. }) => engine.buffers.read_buffer_zero(t, None)?,
        Err(e) => return Err(e),
    };
    if page_is_new(&page[..]) {
        fsm_page_init(&mut page[..]);
        page.mark_dirty();
    }
    Ok(page)
}

/// Runs `f` on FSM page `addr` under a shared content lock, or returns `None` if the
/// page does not exist yet, is new, or cannot be read (a torn page reads as empty).
fn with_fsm_page_shared<T>(
    engine: &Engine,
    rel: RelFileLocator,
    addr: FsmAddress,
    f: impl FnOnce(&[u8]) -> T,
) -> Result<Option<T>> {
    let t = tag(rel, addr);
    if !engine.smgr.exists(rel, ForkNumber::Fsm) || t.block >= engine.buffers.nblocks(rel, ForkNumber::Fsm)? {
        return Ok(None);
    }
    let pin = match engine.buffers.read_buffer(t, None) {
        Ok(p) => p,
        Err(Error::Corrupt { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let page = pin.lock_shared();
    if page_is_new(&page[..]) {
        return Ok(None);
    }
    Ok(Some(f(&page[..])))
}

/// Makes the FSM fork at least `nblocks` long (new pages are all-zero = empty).
fn fsm_extend_to(engine: &Engine, rel: RelFileLocator, nblocks: BlockNumber) -> Result<()> {
    if engine.smgr.exists(rel, ForkNumber::Fsm) && engine.buffers.nblocks(rel, ForkNumber::Fsm)? >= nblocks {
        return Ok(());
    }
    let _g = FSM_EXTEND.lock().unwrap_or_else(|e| e.into_inner());
    engine.smgr.create(rel, ForkNumber::Fsm)?;
    let have = engine.buffers.nblocks(rel, ForkNumber::Fsm)?;
    if have < nblocks {
        // Zero pages: valid empty FSM pages; dropped at once (unlocked, unpinned).
        drop(engine.buffers.extend(rel, ForkNumber::Fsm, nblocks - have, None)?);
    }
    Ok(())
}

/// Sets `slot` of FSM page `addr` to `cat`; if the page's maximum changed, carries the
/// new maximum up to the parent (one page lock at a time). Returns nothing: the FSM is
/// a hint.
fn fsm_set_and_propagate(engine: &Engine, rel: RelFileLocator, addr: FsmAddress, slot: usize, cat: u8) -> Result<()> {
    let (mut addr, mut slot, mut cat) = (addr, slot, cat);
    loop {
        let mut page = fsm_read_exclusive(engine, rel, addr)?;
        let before = fsm_get_max_avail(&page[..]);
        if fsm_set_avail(&mut page[..], slot, cat) {
            page.mark_dirty();
        }
        let after = fsm_get_max_avail(&page[..]);
        drop(page);
        if addr.level == FSM_ROOT_LEVEL || before == after {
            return Ok(());
        }
        let (parent, pslot) = fsm_get_parent(addr);
        // Skip the exclusive lock when the parent already says so.
        if with_fsm_page_shared(engine, rel, parent, |p| fsm_get_avail(p, pslot))? == Some(after) {
            return Ok(());
        }
        (addr, slot, cat) = (parent, pslot, after);
    }
}

/// Records that heap block `block` of `rel` has `avail` free bytes
/// (PostgreSQL's RecordPageWithFreeSpace). A rise of the page's FSM maximum is
/// carried up to the root at once (PostgreSQL leaves that to FreeSpaceMapVacuum), so
/// that space freed by pruning is found before the next VACUUM.
pub fn record_free_space(engine: &Engine, rel: RelFileLocator, block: BlockNumber, avail: usize) -> Result<()> {
    let (addr, slot) = fsm_get_location(block);
    fsm_set_and_propagate(engine, rel, addr, slot, fsm_space_avail_to_cat(avail))
}

/// The FSM's value for heap block `block`, in bytes (a lower bound of what it
/// recorded; 0 if nothing is recorded).
pub fn get_recorded_free_space(engine: &Engine, rel: RelFileLocator, block: BlockNumber) -> Result<usize> {
    let (addr, slot) = fsm_get_location(block);
    Ok(with_fsm_page_shared(engine, rel, addr, |p| fsm_space_cat_to_avail(fsm_get_avail(p, slot)))?.unwrap_or(0))
}

/// A heap block of `rel` that the FSM says has at least `needed` free bytes
/// (PostgreSQL's GetPageWithFreeSpace), or `None`: extend the relation. The caller
/// must check the page (the FSM may be stale) and, if it has too little room, call
/// [`record_and_get_page_with_free_space`].
pub fn get_page_with_free_space(engine: &Engine, rel: RelFileLocator, needed: usize) -> Result<Option<BlockNumber>> {
    fsm_search(engine, rel, fsm_space_needed_to_cat(needed))
}

/// Records `old_avail` for `old_block` and searches again (PostgreSQL's
/// RecordAndGetPageWithFreeSpace: the insert retry after the FSM sent the inserter to
/// a page with too little room).
pub fn record_and_get_page_with_free_space(
    engine: &Engine,
    rel: RelFileLocator,
    old_block: BlockNumber,
    old_avail: usize,
    needed: usize,
) -> Result<Option<BlockNumber>> {
    record_free_space(engine, rel, old_block, old_avail)?;
    get_page_with_free_space(engine, rel, needed)
}

/// Descends from the root to a bottom slot with category >= `min_cat`. Inner pages
/// are read under shared locks; at the bottom, the page is taken exclusively only if
/// that is possible without waiting (to advance its next-slot hint and repair an
/// inconsistent page), else searched under a shared lock. A child whose maximum is
/// below what its parent promised makes us correct the parent's slot and restart.
fn fsm_search(engine: &Engine, rel: RelFileLocator, min_cat: u8) -> Result<Option<BlockNumber>> {
    if min_cat == 0 && !engine.smgr.exists(rel, ForkNumber::Fsm) {
        return Ok(None);
    }
    let min_cat = min_cat.max(1);
    'restart: for _ in 0..MAX_SEARCH_RESTARTS {
        let mut addr = FSM_ROOT_ADDRESS;
        let mut parent: Option<(FsmAddress, usize)> = None;
        loop {
            let found = if addr.level == FSM_BOTTOM_LEVEL {
                fsm_search_bottom(engine, rel, addr, min_cat)?
            } else {
                with_fsm_page_shared(engine, rel, addr, |p| fsm_search_avail(p, min_cat))?.flatten()
            };
            match found {
                Some(slot) if addr.level == FSM_BOTTOM_LEVEL => {
                    return Ok(fsm_get_heap_blk(addr, slot));
                }
                Some(slot) => {
                    parent = Some((addr, slot));
                    addr = fsm_get_child(addr, slot);
                }
                None => {
                    let max = with_fsm_page_shared(engine, rel, addr, fsm_get_max_avail)?.unwrap_or(0);
                    if max >= min_cat {
                        // The page promised space its leaves do not have, or its
                        // inner nodes hide it (a torn or stale page): rebuild it
                        // from its leaves, then retry from the root.
                        let mut p = fsm_read_exclusive(engine, rel, addr)?;
                        fsm_rebuild_page(&mut p[..]);
                        p.mark_dirty();
                        continue 'restart;
                    }
                    let Some((paddr, pslot)) = parent else { return Ok(None) };
                    // Stale upper level: record the child's true maximum and retry.
                    let mut p = fsm_read_exclusive(engine, rel, paddr)?;
                    if fsm_set_avail(&mut p[..], pslot, max) {
                        p.mark_dirty();
                    }
                    continue 'restart;
                }
            }
        }
    }
    Ok(None)
}

fn fsm_search_bottom(engine: &Engine, rel: RelFileLocator, addr: FsmAddress, min_cat: u8) -> Result<Option<usize>> {
    let t = tag(rel, addr);
    if !engine.smgr.exists(rel, ForkNumber::Fsm) || t.block >= engine.buffers.nblocks(rel, ForkNumber::Fsm)? {
        return Ok(None);
    }
    let pin = match engine.buffers.read_buffer(t, None) {
        Ok(p) => p,
        Err(Error::Corrupt { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    if let Some(mut page) = pin.try_lock_exclusive() {
        if page_is_new(&page[..]) {
            return Ok(None);
        }
        let r = fsm_search_avail_mut(&mut page[..], min_cat, true);
        // The next-slot hint (and a possible rebuild) is not WAL-logged, like the
        // rest of the FSM.
        page.mark_dirty();
        return Ok(r);
    }
    let page = pin.lock_shared();
    if page_is_new(&page[..]) {
        return Ok(None);
    }
    Ok(fsm_search_avail(&page[..], min_cat))
}

/// Rebuilds the upper levels of the FSM from the bottom pages (PostgreSQL's
/// FreeSpaceMapVacuum): every existing page's inner nodes are recomputed from its
/// leaves, and each page's maximum is stored into its parent's slot, level by level.
pub fn fsm_vacuum(engine: &Engine, rel: RelFileLocator) -> Result<()> {
    if !engine.smgr.exists(rel, ForkNumber::Fsm) {
        return Ok(());
    }
    let heap_blocks = engine.buffers.nblocks(rel, ForkNumber::Main)?;
    let s = SLOTS_PER_FSM_PAGE as u64;
    // Pages per level that cover the relation.
    let mut npages = [0u64; FSM_TREE_DEPTH as usize];
    npages[0] = (heap_blocks as u64).div_ceil(s).max(1);
    for l in 1..FSM_TREE_DEPTH as usize {
        npages[l] = npages[l - 1].div_ceil(s).max(1);
    }
    for level in 0..FSM_ROOT_LEVEL {
        for logpageno in 0..npages[level as usize] {
            let addr = FsmAddress { level, logpageno };
            let max = {
                let mut p = fsm_read_exclusive(engine, rel, addr)?;
                fsm_rebuild_page(&mut p[..]);
                p.mark_dirty();
                fsm_get_max_avail(&p[..])
            };
            let (parent, pslot) = fsm_get_parent(addr);
            let mut p = fsm_read_exclusive(engine, rel, parent)?;
            if fsm_set_avail(&mut p[..], pslot, max) {
                p.mark_dirty();
            }
        }
    }
    let mut root = fsm_read_exclusive(engine, rel, FSM_ROOT_ADDRESS)?;
    fsm_rebuild_page(&mut root[..]);
    root.mark_dirty();
    Ok(())
}

/// Makes `block` the block the backend's next insert into `rel` tries first
/// (PostgreSQL's RelationSetTargetBlock). With [`get_page_with_free_space`] this is
/// how the insert path uses the FSM until heapam calls it itself.
pub fn set_target_block(backend: &mut Backend, rel: RelFileLocator, block: BlockNumber) {
    backend.target_blocks.insert(rel, block);
}

/// Records the free space of heap block `block` as it is now (reads the page under
/// a shared lock, then updates the FSM with no heap lock held).
pub fn record_current_free_space(engine: &Engine, rel: RelFileLocator, block: BlockNumber) -> Result<usize> {
    let avail = {
        let pin = engine.buffers.read_buffer(BufferTag::new(rel, ForkNumber::Main, block), None)?;
        let page = pin.lock_shared();
        if page_is_new(&page[..]) {
            crate::config::BLCKSZ - crate::storage::page::PAGE_HEADER_SIZE
        } else {
            page_heap_free_space(&page[..])
        }
    };
    record_free_space(engine, rel, block, avail)?;
    Ok(avail)
}

// Tests: crates/engine/tests/vacuum.rs (`fsm_*`); they need a whole engine, which
// sizes process-wide state, so they do not run among the unit tests.
