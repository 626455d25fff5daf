//! The relation-level heap: tuples in a relation, through the buffer pool, WAL-logged.
//!
//! Page-level work is in [`super::page`]; this module finds a page, locks it, calls
//! the page operation, logs the returned op (with a full-page image when the page's
//! first change after a checkpoint), stamps the page LSN, and marks it dirty. Redo
//! applies the same ops ([`redo`]).
//!
//! Protocol of every change (PostgreSQL's, with the same reasons):
//! 1. pin the buffer, take its content lock exclusive;
//! 2. change the page (nothing may fail from here to 4: a failure is a PANIC, since
//!    the page in memory would differ from what the WAL can reproduce);
//! 3. insert the WAL record (the page registered as block 0, so the WAL decides the
//!    full-page image from the page LSN and the redo pointer);
//! 4. set the page LSN to the record's end and mark the buffer dirty;
//! 5. release the content lock. The buffer manager will not write the page before
//!    the WAL is flushed past its LSN.
//!
//! Relation extension: a backend that finds no page with room extends the relation.
//! When several backends are extending the same relation at once, each extends by
//! more than one page (PostgreSQL's RelationAddExtraBlocks, seed 003): the extra
//! pages go into the relation's shared spare list, where the next inserters find
//! them without extending again.

use super::page::{
    heap_page_add_tuple, heap_page_add_tuples, heap_page_delete, heap_page_get_tuple, heap_page_init, heap_page_lock_tuple,
    heap_page_update, HeapOp, HeapXmaxOp, RowLockMode, UpdateFlags,
};
use super::pruneheap::{heap_page_prune_opt, prune_is_due, scan_page_tracked, set_hint_bits_from_visibility, visibility_info};
use super::toast::MAX_HEAP_TUPLE_SIZE;
use super::visibilitymap::{vm_clear, vm_set, VM_ALL_FROZEN};
use super::freespace;
use super::tuple::{
    Tid, TransactionId, TupleHeader, HEAP_COMBOCID, HEAP_KEYS_UPDATED, HEAP_LOCK_MASK, HEAP_XMAX_BITS, HEAP_XMAX_IS_MULTI,
    HEAP_XMAX_LOCK_ONLY,
};
use crate::txn::multixact::{Member, MemberStatus};
use crate::txn::visibility::XidOracle;
use crate::txn::XidStatus;
use crate::buffer::LockedBuffer;
use crate::engine::{Backend, Engine};
use crate::lmgr::lock::{nowait_row_error, LockAcquireResult, LockMode, LockOptions, LockTag};
use crate::pgstat::BackendId;
use crate::error::{Error, Result, SqlState};
use crate::config::BLCKSZ;
use crate::storage::page::{
    ITEM_ID_SIZE, PAGE_HEADER_SIZE,
    page_get_item_id, page_has_flag, page_heap_free_space, page_is_new, page_lsn, page_max_offset_number, page_set_flag,
    set_page_lsn, LpFlags, PD_ALL_VISIBLE, PD_PAGE_FULL,
};
use crate::storage::{BlockNumber, BufferTag, ForkNumber, RelFileLocator};
use crate::txn::snapshot::Snapshot;
use crate::txn::IsolationLevel;
use crate::txn::visibility::{satisfies_mvcc, satisfies_update, TmResult, TupleVisibilityInfo};
use crate::wal::{regbuf, DecodedRecord, RecordBuilder, RmgrId};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// At most this many pages are added by one extension (and at most an eighth of
/// shared_buffers, since they are pinned together).
const MAX_EXTRA_BLOCKS: u32 = 64;
/// Pages the free space map may offer one insert before it extends instead.
const MAX_FSM_TRIES: u32 = 4;
/// Pages added per backend waiting to extend at the same time (PostgreSQL: 20).
const EXTRA_BLOCKS_PER_WAITER: u32 = 20;

/// Per-relation extension state shared by all backends.
#[derive(Default)]
pub struct SpaceMap {
    rels: Mutex<HashMap<RelFileLocator, Arc<RelSpace>>>,
}

#[derive(Default)]
struct RelSpace {
    /// Backends now inside `extend` for this relation.
    extenders: AtomicU32,
    /// Pages added by an extension beyond the one its extender used: empty, for the
    /// next inserters. Approximate, like PostgreSQL's FSM: a page here may have been
    /// filled since; an inserter checks and moves on.
    spare: Mutex<Vec<BlockNumber>>,
}

impl SpaceMap {
    fn rel(&self, rel: RelFileLocator) -> Arc<RelSpace> {
        self.rels.lock().unwrap_or_else(|e| e.into_inner()).entry(rel).or_default().clone()
    }
}

/// A failure between changing a page and logging the change leaves shared memory
/// in a state the WAL cannot reproduce: like PostgreSQL's PANIC in a critical
/// section, the process stops; crash recovery then restores a consistent state.
#[cold]
fn critical_section_failed(what: &str, e: Error) -> ! {
    eprintln!("PANIC:  {what}: {e}");
    std::process::abort();
}

/// Clears the visibility-map bits that `op` takes away from the page registered as
/// `block_id` (held exclusively and already changed), before the op's WAL record is
/// inserted (heap README, "The visibility map"). The all-frozen bit alone (a row
/// lock) can only be set on a page with PD_ALL_VISIBLE: otherwise nothing to do.
fn clear_vm_bits(engine: &Engine, tag: BufferTag, op: &HeapOp, block_id: u8, page: &[u8]) {
    let mut bits = op.vm_bits_cleared(block_id);
    if bits == VM_ALL_FROZEN && !page_has_flag(page, PD_ALL_VISIBLE) {
        bits = 0;
    }
    if bits != 0 {
        if let Err(e) = vm_clear(engine, tag.rel, tag.block, bits) {
            critical_section_failed("could not clear visibility map bits", e);
        }
    }
}

fn log_page_change(engine: &Engine, tag: BufferTag, xid: u32, op: &HeapOp, page: &mut LockedBuffer<'_>) {
    clear_vm_bits(engine, tag, op, 0, &page[..]);
    let body = op.encode();
    let end = {
        let mut rb = RecordBuilder::new(RmgrId::Heap, 0);
        rb.set_xid(xid);
        rb.register_buffer(0, tag, &page[..], regbuf::STANDARD);
        rb.append_main_data(&body);
        match engine.wal.insert(&rb) {
            Ok(end) => end,
            Err(e) => critical_section_failed("could not insert heap WAL record", e),
        }
    };
    set_page_lsn(&mut page[..], end);
    page.mark_dirty();
}

/// Inserts `tuple` (from `form_tuple`) into `rel` as the backend's current
/// transaction and command. Returns where it went.
pub fn heap_insert(backend: &mut Backend, rel: RelFileLocator, tuple: &[u8]) -> Result<Tid> {
    check_tuple_size(tuple.len())?;
    TupleHeader::read(tuple)?;
    let xid = backend.txn.assign_xid_if_needed()?;
    let cid = backend.txn.current_command_id();
    let engine = backend.engine().clone();
    let mut choice = PageChoice::default();
    loop {
        let block = choose_insert_page(backend, &engine, rel, tuple.len(), None, &mut choice)?;
        let tag = BufferTag::new(rel, ForkNumber::Main, block);
        let (pin, hit) = engine.buffers.read_buffer_hit(tag, None)?;
        backend.txn.pgstat.count_buffer(rel, hit);
        let mut page = pin.into_locked();
        if let Some(tid) = try_insert_on_page(&engine, tag, &mut page, tuple, xid, cid)? {
            drop(page);
            backend.target_blocks.insert(rel, block);
            backend.txn.pgstat.count_insert(rel);
            ssi_conflict_in(backend, rel, None)?;
            return Ok(tid);
        }
        // Full: forget it as the target; the next choice moves on.
        backend.target_blocks.remove(&rel);
        if choice.extended == Some(block) && page_max_offset_number(&page[..]) == 0 {
            return Err(Error::internal(format!("tuple of {} bytes does not fit on an empty page", tuple.len())));
        }
        // Tell the FSM what the page really has (after unlocking it: FSM pages are
        // locked only while no heap page lock is held), so it stops offering it.
        let avail = page_heap_free_space(&page[..]);
        drop(page);
        freespace::record_free_space(&engine, rel, block, avail)?;
    }
}

/// Inserts `tuples` (each from `form_tuple`) into `rel` as the backend's current
/// transaction and command, filling each page with as many as fit under one
/// exclusive content lock and one WAL record (`HeapOp::MultiInsert`), as
/// PostgreSQL's heap_multi_insert. Returns their TIDs, in order. `frozen` inserts
/// them with `HEAP_XMIN_FROZEN` (COPY FREEZE: the caller has checked that no other
/// transaction can see the relation's file before this one commits).
///
/// Per page: the choice is `heap_insert`'s (target block, FSM, spare pages, last
/// page, extension), but an extension adds the pages the remaining tuples need at
/// once (at most [`MAX_EXTRA_BLOCKS`] and an eighth of the pool); a page left full
/// is recorded in the FSM once, after its lock is released. The statistics
/// (n_tup_ins, autovacuum's insert count) and the SSI write check are the same as
/// for one `heap_insert` per tuple.
pub fn heap_multi_insert<T: AsRef<[u8]>>(backend: &mut Backend, rel: RelFileLocator, tuples: &[T], frozen: bool) -> Result<Vec<Tid>> {
    for t in tuples {
        check_tuple_size(t.as_ref().len())?;
        TupleHeader::read(t.as_ref())?;
    }
    let mut tids = Vec::with_capacity(tuples.len());
    if tuples.is_empty() {
        return Ok(tids);
    }
    let xid = backend.txn.assign_xid_if_needed()?;
    let cid = backend.txn.current_command_id();
    let engine = backend.engine().clone();
    let per_page = BLCKSZ - PAGE_HEADER_SIZE;
    let mut done = 0;
    let mut choice = PageChoice::default();
    while done < tuples.len() {
        let rest = &tuples[done..];
        let bytes: usize = rest.iter().map(|t| t.as_ref().len().next_multiple_of(8) + ITEM_ID_SIZE).sum();
        choice.want_pages = bytes.div_ceil(per_page) as u32;
        let block = choose_insert_page(backend, &engine, rel, rest[0].as_ref().len(), None, &mut choice)?;
        let tag = BufferTag::new(rel, ForkNumber::Main, block);
        let (pin, hit) = engine.buffers.read_buffer_hit(tag, None)?;
        backend.txn.pgstat.count_buffer(rel, hit);
        let mut page = pin.into_locked();
        if page_is_new(&page[..]) {
            heap_page_init(&mut page[..]);
        }
        let op = heap_page_add_tuples(&mut page[..], block, rest, xid, cid, frozen)?;
        let placed = op.items.len();
        if placed > 0 {
            tids.extend(op.items.iter().map(|it| Tid::new(block, it.offset)));
            log_page_change(&engine, tag, xid, &HeapOp::MultiInsert(op), &mut page);
            done += placed;
            for _ in 0..placed {
                backend.txn.pgstat.count_insert(rel);
            }
        }
        if done == tuples.len() {
            drop(page);
            backend.target_blocks.insert(rel, block);
            ssi_conflict_in(backend, rel, None)?;
            break;
        }
        // The page is full for the next tuple: forget it as the target, tell the FSM
        // what it really has (after unlocking it), and search again.
        backend.target_blocks.remove(&rel);
        if placed == 0 && choice.extended == Some(block) && page_max_offset_number(&page[..]) == 0 {
            return Err(Error::internal(format!("tuple of {} bytes does not fit on an empty page", rest[0].as_ref().len())));
        }
        let avail = page_heap_free_space(&page[..]);
        drop(page);
        freespace::record_free_space(&engine, rel, block, avail)?;
        if placed > 0 {
            ssi_conflict_in(backend, rel, None)?;
            // Progress: a new search for the rest. Without progress the search
            // goes on (each round consumes a candidate or extends, so it ends).
            choice = PageChoice::default();
        }
    }
    Ok(tids)
}

fn check_tuple_size(len: usize) -> Result<()> {
    if len > MAX_HEAP_TUPLE_SIZE {
        return Err(Error::user(
            SqlState::PROGRAM_LIMIT_EXCEEDED,
            format!("row is too big: size {len}, maximum size {MAX_HEAP_TUPLE_SIZE}"),
        ));
    }
    Ok(())
}

/// State of one search for a page to insert into (see [`choose_insert_page`]).
#[derive(Default)]
struct PageChoice {
    /// The relation's last page was offered once already.
    tried_last: bool,
    /// Pages the free space map offered so far.
    fsm_tries: u32,
    /// The block this search added by extending, if it did.
    extended: Option<BlockNumber>,
    /// Pages the caller will fill (a multi-insert's remaining tuples): an extension
    /// adds at least this many at once (capped as contention extension is).
    want_pages: u32,
}

// ---------------------------------------------------------------------------------
// PAGE CHOICE FOR NEW TUPLES (inserts, and the new version of a non-HOT update).
// The free space map plugs in here: it is the only place that decides where a new
// tuple goes (PostgreSQL's RelationGetBufferForTuple, its choice part).
// ---------------------------------------------------------------------------------

/// The next candidate block for a new tuple of `len` bytes, never `avoid` (the old
/// version's page of an update, which the caller already found full). Candidates,
/// in order: 1. the page this backend used last (`target_blocks`), 2. spare pages
/// left by a concurrent multi-page extension, 3. the relation's last page (once per
/// search); else 4. the relation is extended (by extra pages when other backends
/// are extending too) and the new, all-zero page is returned.
///
/// The caller locks the page, checks that the tuple fits and, if it does not,
/// removes the block from `backend.target_blocks` and asks again: each call either
/// consumes a candidate or extends, so the search ends. No lock is held on return:
/// a page just added by extension can be filled by another inserter before the
/// caller locks it, which only costs another round.
fn choose_insert_page(
    backend: &Backend,
    engine: &Engine,
    rel: RelFileLocator,
    len: usize,
    avoid: Option<BlockNumber>,
    choice: &mut PageChoice,
) -> Result<BlockNumber> {
    let space = engine.heap_space.rel(rel);
    if let Some(&b) = backend.target_blocks.get(&rel) {
        if Some(b) != avoid {
            return Ok(b);
        }
    }
    // The free space map. A page it offers that turns out full is recorded with its
    // real free space by the caller, so the map stops offering it; the tries are
    // bounded all the same (a concurrent inserter can fill pages as fast).
    if choice.fsm_tries < MAX_FSM_TRIES {
        choice.fsm_tries += 1;
        if let Some(b) = freespace::get_page_with_free_space(engine, rel, len + ITEM_ID_SIZE)? {
            if Some(b) != avoid {
                return Ok(b);
            }
        }
    }
    loop {
        let spare = space.spare.lock().unwrap_or_else(|e| e.into_inner()).pop();
        match spare {
            Some(b) if Some(b) == avoid => continue,
            Some(b) => return Ok(b),
            None => break,
        }
    }
    if !choice.tried_last {
        choice.tried_last = true;
        let n = engine.buffers.nblocks(rel, ForkNumber::Main)?;
        if let Some(last) = n.checked_sub(1) {
            if Some(last) != avoid {
                return Ok(last);
            }
        }
    }
    // Extend. Others extending at the same moment mean contention: add extra pages.
    let others = space.extenders.fetch_add(1, Ordering::SeqCst);
    // The new pages are all pinned at once: never more than an eighth of the pool.
    let cap = (engine.buffers.nbuffers() / 8).clamp(1, MAX_EXTRA_BLOCKS as usize) as u32;
    let n = (1 + others * EXTRA_BLOCKS_PER_WAITER).max(choice.want_pages).min(cap);
    let result = engine.buffers.extend(rel, ForkNumber::Main, n, None);
    space.extenders.fetch_sub(1, Ordering::SeqCst);
    let pages = result?;
    let blocks: Vec<BlockNumber> = pages.iter().map(|p| p.block()).collect();
    // The pages stay all-zero (valid: a new page) until first used.
    drop(pages);
    let first = blocks[0];
    if blocks.len() > 1 {
        space.spare.lock().unwrap_or_else(|e| e.into_inner()).extend(blocks[1..].iter().rev());
        // The spare list lives in memory; the FSM keeps the extra pages findable
        // after a restart.
        for &b in &blocks[1..] {
            freespace::record_free_space(engine, rel, b, BLCKSZ - PAGE_HEADER_SIZE)?;
        }
    }
    choice.extended = Some(first);
    Ok(first)
}

fn try_insert_on_page(
    engine: &Engine,
    tag: BufferTag,
    page: &mut LockedBuffer<'_>,
    tuple: &[u8],
    xid: u32,
    cid: u32,
) -> Result<Option<Tid>> {
    if page_is_new(&page[..]) {
        heap_page_init(&mut page[..]);
    } else if page_heap_free_space(&page[..]) < tuple.len() {
        return Ok(None);
    }
    let Some(op) = heap_page_add_tuple(&mut page[..], tag.block, tuple, xid, cid)? else {
        return Ok(None);
    };
    let tid = Tid::new(tag.block, op.offset);
    log_page_change(engine, tag, xid, &HeapOp::Insert(op), page);
    Ok(Some(tid))
}

/// Calls `f(tid, tuple)` for every tuple of `rel` visible to `snapshot`, in
/// physical order. Each page is first pruned if that is worthwhile and free
/// (`heap_page_prune_opt`), and the hint bits the visibility checks return are set.
/// Reads through the pool like any access; [`HeapScan`] with a ring is the scan of
/// a large relation.
pub fn heap_scan(
    backend: &Backend,
    rel: RelFileLocator,
    snapshot: &Snapshot,
    f: &mut dyn FnMut(Tid, &[u8]) -> Result<()>,
) -> Result<()> {
    let mut scan = HeapScan::with_strategy(backend, rel, None)?;
    while scan.next_page(backend, snapshot, f)? {}
    Ok(())
}

/// A sequential scan of a heap relation, one page per [`HeapScan::next_page`]
/// (PostgreSQL's heapgettup_pagemode): the caller takes what it needs from the
/// page's visible tuples while the page is pinned and share-locked, and holds
/// nothing of the relation between calls, so it may stop after any page (LIMIT)
/// and a scan costs memory for one page, whatever the relation's size.
///
/// The relation's length is read when the scan starts (PostgreSQL's
/// rs_nblocks): pages that concurrent inserters add later hold only rows the
/// scan's snapshot cannot see, and rows this command adds while it scans (an
/// INSERT ... SELECT from the same table) must not be returned to it.
///
/// A relation larger than a quarter of shared buffers is read through a
/// `BulkRead` ring (256 kB), as PostgreSQL's initscan decides, so that one large
/// scan does not evict the working set of everyone else.
pub struct HeapScan {
    rel: RelFileLocator,
    nblocks: BlockNumber,
    next: BlockNumber,
    strategy: Option<crate::buffer::Strategy>,
}

impl HeapScan {
    /// A scan of `rel` from its first page, with a ring when the relation is large.
    pub fn new(backend: &Backend, rel: RelFileLocator) -> Result<HeapScan> {
        let engine = backend.engine();
        let nblocks = engine.buffers.nblocks(rel, ForkNumber::Main)?;
        let strategy = (nblocks as usize > engine.buffers.nbuffers() / 4)
            .then(|| engine.buffers.strategy(crate::buffer::StrategyKind::BulkRead));
        // SERIALIZABLE: the relation's SIREAD lock, before any page is read.
        predicate_lock_relation(backend, rel);
        Ok(HeapScan { rel, nblocks, next: 0, strategy })
    }

    /// A scan of `rel` through `strategy` (`None`: the pool's clock, no ring).
    pub fn with_strategy(backend: &Backend, rel: RelFileLocator, strategy: Option<crate::buffer::Strategy>) -> Result<HeapScan> {
        let nblocks = backend.engine().buffers.nblocks(rel, ForkNumber::Main)?;
        predicate_lock_relation(backend, rel);
        Ok(HeapScan { rel, nblocks, next: 0, strategy })
    }

    /// Pages the scan will read in all (the relation's length when it started).
    pub fn nblocks(&self) -> BlockNumber {
        self.nblocks
    }

    /// The ring this scan reads through, if any.
    pub fn strategy(&self) -> Option<&crate::buffer::Strategy> {
        self.strategy.as_ref()
    }

    /// Calls `f(tid, tuple)` for each tuple of the next page visible to
    /// `snapshot` (pruning the page first when due, setting hint bits after), with
    /// the page pinned and share-locked; `Ok(false)` once every page was read.
    pub fn next_page(&mut self, backend: &Backend, snapshot: &Snapshot, f: &mut dyn FnMut(Tid, &[u8]) -> Result<()>) -> Result<bool> {
        if self.next >= self.nblocks {
            return Ok(false);
        }
        let block = self.next;
        self.next += 1;
        let engine = backend.engine();
        let (pin, hit) = engine.buffers.read_buffer_hit(BufferTag::new(self.rel, ForkNumber::Main, block), self.strategy.as_ref())?;
        backend.txn.pgstat.count_buffer(self.rel, hit);
        let mut page = pin.lock_shared();
        if prune_is_due(&page[..]).is_some() {
            drop(page);
            heap_page_prune_opt(backend, self.rel, &pin)?;
            page = pin.lock_shared();
        }
        scan_page_tracked(backend, Some(self.rel), &page, block, snapshot, f)?;
        Ok(true)
    }
}

/// [`heap_scan`] of one block: `f` is called for each tuple of `block` that
/// `snapshot` sees, under the page's shared content lock (so `f` must not
/// touch buffers). A caller that does more per row collects a block's
/// tuples and works on them after the call, holding one page's worth of
/// rows at a time.
pub fn heap_scan_block(
    backend: &Backend,
    rel: RelFileLocator,
    block: BlockNumber,
    snapshot: &Snapshot,
    f: &mut dyn FnMut(Tid, &[u8]) -> Result<()>,
) -> Result<()> {
    predicate_lock_relation(backend, rel);
    let engine = backend.engine();
    let pin = engine.buffers.read_buffer(BufferTag::new(rel, ForkNumber::Main, block), None)?;
    let mut page = pin.lock_shared();
    if prune_is_due(&page[..]).is_some() {
        drop(page);
        heap_page_prune_opt(backend, rel, &pin)?;
        page = pin.lock_shared();
    }
    scan_page_tracked(backend, Some(rel), &page, block, snapshot, f)?;
    Ok(())
}

/// The number of blocks of relation `rel` (its main fork).
pub fn heap_nblocks(backend: &Backend, rel: RelFileLocator) -> Result<BlockNumber> {
    backend.engine().buffers.nblocks(rel, ForkNumber::Main)
}

/// Reads the tuple at `tid` if `snapshot` sees it. A line pointer that pruning or
/// VACUUM made dead or unused (an index entry may still point at it until VACUUM
/// cleans the index) is a tuple nobody sees, not corruption.
pub fn heap_fetch(backend: &Backend, rel: RelFileLocator, tid: Tid, snapshot: &Snapshot) -> Result<Option<Vec<u8>>> {
    heap_fetch_at(backend, rel, tid, snapshot, false)
}

/// [`heap_fetch`] of a TID a user gave (`WHERE ctid = '(0,1)'`, PostgreSQL's
/// Tid Scan): a block past the relation's end or a line pointer the page does
/// not have is no tuple rather than corruption.
pub fn heap_fetch_user_tid(backend: &Backend, rel: RelFileLocator, tid: Tid, snapshot: &Snapshot) -> Result<Option<Vec<u8>>> {
    if tid.block >= heap_nblocks(backend, rel)? {
        return Ok(None);
    }
    heap_fetch_at(backend, rel, tid, snapshot, true)
}

fn heap_fetch_at(backend: &Backend, rel: RelFileLocator, tid: Tid, snapshot: &Snapshot, user_tid: bool) -> Result<Option<Vec<u8>>> {
    let engine = backend.engine();
    let (pin, hit) = engine.buffers.read_buffer_hit(BufferTag::new(rel, ForkNumber::Main, tid.block), None)?;
    backend.txn.pgstat.count_buffer(rel, hit);
    let mut page = pin.lock_shared();
    if prune_is_due(&page[..]).is_some() {
        drop(page);
        heap_page_prune_opt(backend, rel, &pin)?;
        page = pin.lock_shared();
    }
    if tid.offset == 0 || tid.offset > page_max_offset_number(&page[..]) {
        if user_tid {
            return Ok(None);
        }
        return Err(Error::corrupt(format!("heap fetch of ({},{}): no such line pointer", tid.block, tid.offset)));
    }
    if page_get_item_id(&page[..], tid.offset)?.flags != LpFlags::Normal {
        return Ok(None);
    }
    let t = heap_page_get_tuple(&page[..], tid.offset)?;
    let h = TupleHeader::read(t)?;
    let v = satisfies_mvcc(&visibility_info(&h, tid), snapshot, &*backend.txn)?;
    ssi_conflict_out(backend, rel, &h, v.visible, snapshot)?;
    if v.visible {
        predicate_lock_tuple(backend, rel, tid, h.xmin);
    }
    let out = v.visible.then(|| t.to_vec());
    set_hint_bits_from_visibility(&page, tid.offset, v.hints)?;
    Ok(out)
}

/// Walks the HOT chain that starts at the index entry's `root` (a normal line
/// pointer or a redirect; README "Heap-only tuples"): calls `f(tid, header, tuple)`
/// on each member, under the page's shared lock, until `f` returns `Some`. A
/// member whose xmin is not the previous member's xmax ends the chain (the slot
/// was reused), and so does a member that is not HOT-updated. A dead or unused
/// line pointer, or one past the end of the page, is an empty chain.
#[allow(clippy::type_complexity)] // the visitor: page guard, TID, header, tuple
fn heap_hot_walk<T>(
    backend: &Backend,
    rel: RelFileLocator,
    root: Tid,
    f: &mut dyn FnMut(&crate::buffer::BufferReadGuard<'_>, Tid, &TupleHeader, &[u8]) -> Result<Option<T>>,
) -> Result<Option<T>> {
    let engine = backend.engine();
    let (pin, hit) = engine.buffers.read_buffer_hit(BufferTag::new(rel, ForkNumber::Main, root.block), None)?;
    backend.txn.pgstat.count_buffer(rel, hit);
    let mut page = pin.lock_shared();
    if prune_is_due(&page[..]).is_some() {
        drop(page);
        heap_page_prune_opt(backend, rel, &pin)?;
        page = pin.lock_shared();
    }
    let max = page_max_offset_number(&page[..]);
    if page_is_new(&page[..]) || root.offset == 0 || root.offset > max {
        return Ok(None);
    }
    let mut off = root.offset;
    let id = page_get_item_id(&page[..], off)?;
    if id.flags == LpFlags::Redirect {
        off = id.off;
    }
    // The page's item count and bounds read once: each member costs one
    // line-pointer read and one header parse.
    let items = crate::storage::page::PageItems::new(&page[..])?;
    let mut prior_xmax: Option<TransactionId> = None;
    // A chain has at most one member per line pointer of the page.
    for _ in 0..max {
        let Some(t) = items.normal(off)? else { return Ok(None) };
        let h = TupleHeader::read(t)?;
        if prior_xmax.is_some_and(|x| x != h.xmin) {
            return Ok(None);
        }
        let here = Tid::new(root.block, off);
        if let Some(v) = f(&page, here, &h, t)? {
            return Ok(Some(v));
        }
        if !h.is_hot_updated() || h.ctid.block != root.block {
            return Ok(None);
        }
        prior_xmax = Some(update_xid(backend, &h));
        off = h.ctid.offset;
    }
    Err(Error::corrupt(format!("HOT chain at ({},{}) of relation {} loops", root.block, root.offset, rel.rel_number)))
}

/// The member of the HOT chain rooted at `root` that `snapshot` sees, with its TID
/// (PostgreSQL's heap_hot_search_buffer for an index scan): at most one member of
/// a chain is visible to an MVCC snapshot.
pub fn heap_hot_fetch(backend: &Backend, rel: RelFileLocator, root: Tid, snapshot: &Snapshot) -> Result<Option<(Tid, Vec<u8>)>> {
    // Outside SERIALIZABLE (which checks every member it reads for rw-conflicts),
    // a member whose updater is hinted committed and precedes the snapshot's xmin
    // is invisible whatever its xmin says: the walk goes past it without the full
    // test. This is the common member of a long chain not yet pruned.
    let skip_dead = backend.txn.serializable_xact().is_none() && crate::txn::xid::xid_is_normal(snapshot.xmin);
    heap_hot_walk(backend, rel, root, &mut |page, tid, h, t| {
        if skip_dead && updated_before(h, snapshot.xmin) {
            return Ok(None);
        }
        let v = satisfies_mvcc(&visibility_info(h, tid), snapshot, &*backend.txn)?;
        set_hint_bits_from_visibility(page, tid.offset, v.hints)?;
        ssi_conflict_out(backend, rel, h, v.visible, snapshot)?;
        if v.visible {
            // Under the page's content lock (README of lmgr, "Predicate locks and SSI").
            predicate_lock_tuple(backend, rel, tid, h.xmin);
        }
        Ok(v.visible.then(|| (tid, t.to_vec())))
    })
}

/// Was `h` deleted or updated by a transaction known committed (hint bit) whose
/// xid precedes `xmin`? Then no snapshot with that xmin sees it
/// (satisfies_mvcc would answer "invisible" at its xmax step, and its xmin step
/// cannot answer "visible" first).
#[inline]
fn updated_before(h: &TupleHeader, xmin: TransactionId) -> bool {
    h.xmax_committed() && !h.xmax_is_multi() && !h.xmax_is_lock_only() && crate::txn::xid::xid_precedes(h.xmax, xmin)
}

/// The dirty-snapshot test over the HOT chain rooted at `root` (for unique
/// checks): the first member that is live or being inserted/deleted, else "not
/// visible".
pub fn heap_hot_satisfies_dirty(backend: &Backend, rel: RelFileLocator, root: Tid) -> Result<crate::txn::visibility::DirtyResult> {
    let invisible = crate::txn::visibility::DirtyResult { visible: false, hints: 0, xmin_in_progress: 0, xmax_in_progress: 0 };
    let r = heap_hot_walk(backend, rel, root, &mut |_, tid, h, _| {
        let r = crate::txn::visibility::satisfies_dirty(&visibility_info(h, tid), &*backend.txn)?;
        Ok(r.visible.then_some(r))
    })?;
    Ok(r.unwrap_or(invisible))
}

/// [`heap_hot_satisfies_dirty`] with the TID of the member it judged (INSERT
/// ... ON CONFLICT locks and updates that member): `None` when no member is live
/// or being inserted/deleted.
pub fn heap_hot_dirty_member(
    backend: &Backend,
    rel: RelFileLocator,
    root: Tid,
) -> Result<Option<(Tid, crate::txn::visibility::DirtyResult)>> {
    heap_hot_walk(backend, rel, root, &mut |_, tid, h, _| {
        let r = crate::txn::visibility::satisfies_dirty(&visibility_info(h, tid), &*backend.txn)?;
        Ok(r.visible.then_some((tid, r)))
    })
}

/// The root line pointer of every heap-only tuple on `block` (PostgreSQL's
/// heap_get_root_tuples), so that an index built over existing rows points at
/// chain roots: `(member offset, root offset)` pairs. Members of no chain (their
/// inserter aborted) are left out.
pub fn heap_get_root_tuples(backend: &Backend, rel: RelFileLocator, block: BlockNumber) -> Result<Vec<(u16, u16)>> {
    let engine = backend.engine();
    let pin = engine.buffers.read_buffer(BufferTag::new(rel, ForkNumber::Main, block), None)?;
    let page = pin.lock_shared();
    let mut out = Vec::new();
    if page_is_new(&page[..]) {
        return Ok(out);
    }
    let max = page_max_offset_number(&page[..]);
    for root in 1..=max {
        let id = page_get_item_id(&page[..], root)?;
        let mut off = match id.flags {
            LpFlags::Redirect => id.off,
            LpFlags::Normal => {
                if TupleHeader::read(heap_page_get_tuple(&page[..], root)?)?.is_heap_only() {
                    continue;
                }
                root
            }
            _ => continue,
        };
        let mut prior_xmax: Option<TransactionId> = None;
        for _ in 0..max {
            if off == 0 || off > max || page_get_item_id(&page[..], off)?.flags != LpFlags::Normal {
                break;
            }
            let h = TupleHeader::read(heap_page_get_tuple(&page[..], off)?)?;
            if prior_xmax.is_some_and(|x| x != h.xmin) {
                break;
            }
            if off != root {
                out.push((off, root));
            }
            if !h.is_hot_updated() || h.ctid.block != block {
                break;
            }
            prior_xmax = Some(update_xid(backend, &h));
            off = h.ctid.offset;
        }
    }
    Ok(out)
}

/// Deletes the tuple at `tid` as the current transaction and command, without
/// waiting. Returns the update test's result: anything but `Ok` changed nothing,
/// and `BeingModified` means another transaction is changing or locking the row.
/// The waiting form, with READ COMMITTED / REPEATABLE READ outcomes, is
/// [`heap_delete_ext`].
pub fn heap_delete(backend: &mut Backend, rel: RelFileLocator, tid: Tid) -> Result<TmResult> {
    let xid = backend.txn.assign_xid_if_needed()?;
    let engine = backend.engine().clone();
    let tag = BufferTag::new(rel, ForkNumber::Main, tid.block);
    let mut page = engine.buffers.read_buffer(tag, None)?.into_locked();
    let h = TupleHeader::read(heap_page_get_tuple(&page[..], tid.offset)?)?;
    let info = visibility_info(&h, tid);
    let (result, _hints) = satisfies_update(&info, backend.txn.current_command_id(), &*backend.txn)?;
    if result != TmResult::Ok {
        return Ok(result);
    }
    delete_locked(backend, &engine, tag, &mut page, tid, xid, &[])?;
    drop(page);
    ssi_conflict_in(backend, rel, Some(tid))?;
    Ok(TmResult::Ok)
}

// ---------------------------------------------------------------------------------
// Row-level locking and concurrent updates (README: "Row-level locking and
// concurrent updates").
// ---------------------------------------------------------------------------------

/// What to do when the row is being changed or locked by another transaction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WaitPolicy {
    /// Wait for it (lock_timeout, cancel and the deadlock detector apply).
    #[default]
    Block,
    /// NOWAIT: fail with 55P03 "could not obtain lock on row in relation ...".
    NoWait,
    /// SKIP LOCKED: give up on this row ([`LockOutcome::Skipped`] and friends).
    SkipLocked,
}

/// Options of [`heap_update`].
#[derive(Clone, Copy, Debug)]
pub struct UpdateOptions<'a> {
    /// No indexed column changed: the new version may be heap-only (HOT) if it
    /// fits on the old version's page.
    pub hot_allowed: bool,
    /// A key column (one a foreign key can reference) changed: the update conflicts
    /// with FOR KEY SHARE (it is a FOR UPDATE-strength change, else FOR NO KEY
    /// UPDATE-strength).
    pub keys_updated: bool,
    pub wait_policy: WaitPolicy,
    /// The relation's name, for the NOWAIT error text.
    pub relname: &'a str,
    /// The row's column descriptors when the relation has a TOAST relation: the
    /// old version's out-of-line values are then deleted with it, in the same
    /// transaction (PostgreSQL's toast_delete in heap_update), and the new
    /// version's are deleted again if the update does not happen. The caller
    /// never reuses the old version's TOAST pointers in the new version.
    pub toast_desc: Option<&'a [super::tuple::AttrDesc]>,
}

/// Options of [`heap_delete_ext`].
#[derive(Clone, Copy, Debug)]
pub struct DeleteOptions<'a> {
    pub wait_policy: WaitPolicy,
    /// The relation's name, for the NOWAIT error text.
    pub relname: &'a str,
    /// The row's column descriptors when the relation has a TOAST relation: the
    /// deleted version's out-of-line values are then deleted too, in the same
    /// transaction (PostgreSQL's toast_delete in heap_delete).
    pub toast_desc: Option<&'a [super::tuple::AttrDesc]>,
}

/// Result of [`heap_update`]. Errors (40001 in REPEATABLE READ, 55P03 NOWAIT,
/// 40P01 deadlock, lock timeout, cancel) are returned as `Err`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateOutcome {
    /// Done: the new version is at `new_tid`; `hot` if it is a heap-only tuple on
    /// the old version's page.
    Ok { new_tid: Tid, hot: bool },
    /// The row was updated by a transaction that committed (READ COMMITTED only):
    /// the caller re-checks its qualification on the newest version
    /// ([`heap_fetch_latest`]) and, if it still qualifies, updates that one.
    Updated { new_tid: Tid },
    /// The row was deleted by a transaction that committed (READ COMMITTED only).
    Deleted,
    /// Already updated or deleted by this command or a later one of this transaction.
    SelfModified,
    /// Not visible to the current command (never for a TID from a scan of this
    /// command's snapshot).
    Invisible,
    /// SKIP LOCKED and the row was locked.
    Skipped,
}

/// Result of [`heap_delete_ext`]; the variants mean what they mean for
/// [`UpdateOutcome`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeleteOutcome {
    Ok,
    Updated { new_tid: Tid },
    Deleted,
    SelfModified,
    Invisible,
    Skipped,
}

/// Result of [`heap_lock_tuple`]; the variants mean what they mean for
/// [`UpdateOutcome`]. `Locked` also when this transaction already held a lock at
/// least as strong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockOutcome {
    Locked,
    Updated { new_tid: Tid },
    Deleted,
    SelfModified,
    Invisible,
    Skipped,
}

/// The row-lock strength a change needs: an UPDATE is FOR NO KEY UPDATE-strength
/// unless it changes a key, a DELETE is FOR UPDATE-strength.
fn strength(kind: Change) -> RowLockMode {
    match kind {
        Change::Update { keys_updated: false } => RowLockMode::NoKeyExclusive,
        Change::Update { keys_updated: true } | Change::Delete => RowLockMode::Exclusive,
        Change::Lock(m) => m,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Change {
    Update { keys_updated: bool },
    Delete,
    Lock(RowLockMode),
}

/// Order of strengths: a lock held at least as strong as the one asked for covers
/// it (FOR NO KEY UPDATE covers FOR SHARE, as in PostgreSQL).
fn rank(m: RowLockMode) -> u8 {
    match m {
        RowLockMode::KeyShare => 0,
        RowLockMode::Share => 1,
        RowLockMode::NoKeyExclusive => 2,
        RowLockMode::Exclusive => 3,
    }
}

/// The heavyweight lock mode on the tuple's LockTag::Tuple for a row-lock
/// strength (PostgreSQL's table): its conflicts are exactly those between the
/// row-lock strengths, so waiters of compatible strengths do not queue behind each
/// other.
fn tuple_lock_mode(m: RowLockMode) -> LockMode {
    match m {
        RowLockMode::KeyShare => LockMode::AccessShare,
        RowLockMode::Share => LockMode::RowShare,
        RowLockMode::NoKeyExclusive => LockMode::Exclusive,
        RowLockMode::Exclusive => LockMode::AccessExclusive,
    }
}

/// What the check of the row under the exclusive content lock decided.
enum RowState {
    /// The change may be made now. `keep`: the row's other live lockers (and our
    /// own locks of other subtransactions) that do not conflict with the change:
    /// the new xmax is a multixact of them plus the change (README "MultiXacts").
    /// `follow`: FOR KEY SHARE of a version whose no-key updater is running or
    /// committed (they do not conflict): the lock is taken here, and then on every
    /// newer version from `follow` on ([`lock_updated_chain`]).
    Proceed { keep: Vec<Member>, follow: Option<Tid> },
    /// Already locked by this transaction at least as strongly (lock requests only).
    AlreadyLocked,
    /// Another transaction (`xid`) is changing or locking the row: wait for it.
    Wait { xid: TransactionId },
    /// Final: the change cannot be made to this version.
    Done(Final),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Final {
    Updated(Tid),
    Deleted,
    SelfModified,
    Invisible,
    Skipped,
}

/// Decides, under the page's exclusive content lock, whether `change` may be made
/// to the tuple at `tid` now.
///
/// The row's xmax may stand for several lockers and at most one updater (a
/// multixact). Every live member that is not ours is checked against the
/// strength the change needs (the 4x4 table, `MemberStatus::conflicts`): the
/// first conflicting one is waited for; the others are kept in the new xmax. A
/// running updater is always waited for (PostgreSQL lets FOR KEY SHARE lock past
/// a running no-key update by also locking the newer versions; we do not follow
/// the update chain, see README "MultiXacts").
fn check_row(backend: &Backend, page: &[u8], tid: Tid, change: Change) -> Result<RowState> {
    let h = TupleHeader::read(heap_page_get_tuple(page, tid.offset)?)?;
    let info = visibility_info(&h, tid);
    let (result, _hints) = satisfies_update(&info, backend.txn.current_command_id(), &*backend.txn)?;
    Ok(match result {
        TmResult::Ok => RowState::Proceed { keep: Vec::new(), follow: None },
        TmResult::Invisible => RowState::Done(Final::Invisible),
        TmResult::SelfModified => RowState::Done(Final::SelfModified),
        TmResult::Updated if change != Change::Lock(RowLockMode::KeyShare) => RowState::Done(Final::Updated(h.ctid)),
        TmResult::Deleted => RowState::Done(Final::Deleted),
        TmResult::WouldBlock => RowState::Done(Final::Skipped),
        TmResult::Updated | TmResult::BeingModified => xmax_state(backend, &h, tid, change)?,
    })
}

/// The member-by-member decision of [`check_row`] for a row whose xmax is live
/// (README "MultiXacts"), also used on the newer versions by
/// [`lock_updated_chain`].
fn xmax_state(backend: &Backend, h: &TupleHeader, tid: Tid, change: Change) -> Result<RowState> {
    let want = rank(strength(change));
    let key_share = change == Change::Lock(RowLockMode::KeyShare);
    let me = backend.txn.current_xid();
    let members = xmax_members(backend, h);
    let mut keep = Vec::new();
    let mut follow = None;
    // The updater first: a committed conflicting one ends the matter at once.
    if let Some(u) = members.iter().find(|m| m.status.is_update()) {
        let ours = backend.txn.is_current_xid(u.xid);
        let running = !ours && backend.txn.is_in_progress(u.xid);
        let committed = !ours && !running && backend.txn.status(u.xid)? == XidStatus::Committed;
        if ours {
            return Ok(RowState::Done(Final::SelfModified));
        }
        if running || committed {
            if key_share && u.status == MemberStatus::NoKeyUpdate {
                keep.push(*u);
                follow = Some(h.ctid);
            } else if running {
                return Ok(RowState::Wait { xid: u.xid });
            } else if h.ctid == tid {
                return Ok(RowState::Done(Final::Deleted));
            } else {
                return Ok(RowState::Done(Final::Updated(h.ctid)));
            }
        }
    }
    for m in members.iter().filter(|m| !m.status.is_update()) {
        let ours = backend.txn.is_current_xid(m.xid);
        if !ours && !backend.txn.is_in_progress(m.xid) {
            continue;
        }
        if ours {
            // Our own lock: a lock request it covers is done; a change or a
            // stronger lock replaces it when taken by the same (sub)xact, and
            // keeps it when taken by a child (a rollback to the savepoint must
            // leave it in place).
            if matches!(change, Change::Lock(_)) && m.status.strength() >= want {
                // (With a no-key updater, the newer versions are not locked
                // again: they were when this lock was taken.)
                return Ok(RowState::AlreadyLocked);
            }
            if m.xid != me {
                keep.push(*m);
            }
            continue;
        }
        if MemberStatus::conflicts(m.status.strength(), want) {
            return Ok(RowState::Wait { xid: m.xid });
        }
        keep.push(*m);
    }
    Ok(RowState::Proceed { keep, follow })
}

/// The members the row's xmax stands for: a multixact's members, or the one
/// xid with its lock strength (or as an updater).
fn xmax_members(backend: &Backend, h: &TupleHeader) -> Vec<Member> {
    if h.xmax_invalid() || h.xmax == 0 {
        return Vec::new();
    }
    if h.xmax_is_multi() {
        return backend.engine().txn.multixacts.members(h.xmax).map(|m| m.to_vec()).unwrap_or_default();
    }
    let status = match RowLockMode::from_tuple(h) {
        Some(m) => lock_status(m),
        None if h.keys_updated() => MemberStatus::Update,
        None => MemberStatus::NoKeyUpdate,
    };
    vec![Member { xid: h.xmax, status }]
}

/// A no-key update that kept lockers of the old version (KEY SHARE: they do not
/// conflict with it) makes them lockers of the new version too (PostgreSQL does
/// the same), so that a later key update or delete of the new version still waits
/// for them: a foreign key's lock survives a no-key update of the referenced row.
/// Sets the new tuple's xmax on the page and in the op (its redo image). Part of
/// the critical section.
fn carry_lockers(engine: &Engine, new: &mut super::page::HeapInsertOp, page: &mut [u8], keep: &[Member]) {
    if keep.is_empty() {
        return;
    }
    let strongest = keep.iter().map(|m| m.status).max_by_key(|s| s.strength()).unwrap_or(MemberStatus::ForKeyShare);
    let (xmax, multi) = if keep.len() == 1 {
        (keep[0].xid, 0)
    } else {
        match engine.txn.create_multixact(keep) {
            Ok(m) => (m, HEAP_XMAX_IS_MULTI),
            Err(e) => critical_section_failed("could not log a multixact", e),
        }
    };
    let keys = keep.iter().any(|m| m.status == MemberStatus::ForUpdate);
    let set = |t: &mut [u8]| {
        super::tuple::tuple_set_xmax(t, xmax);
        let m = super::tuple::tuple_infomask(t) & !HEAP_XMAX_BITS;
        super::tuple::tuple_set_infomask(t, m | multi | HEAP_XMAX_LOCK_ONLY | strongest.lock_bits());
        if keys {
            let m2 = super::tuple::tuple_infomask2(t) | HEAP_KEYS_UPDATED;
            super::tuple::tuple_set_infomask2(t, m2);
        }
    };
    set(&mut new.tuple);
    match super::page::heap_page_get_tuple_mut(page, new.offset) {
        Ok(t) => set(t),
        Err(e) => critical_section_failed("could not set the new version's lockers", e),
    }
}

/// The xid that updated the row (PostgreSQL's HeapTupleHeaderGetUpdateXid): xmax,
/// or a multixact xmax's updater member (the next version's xmin).
fn update_xid(backend: &Backend, h: &TupleHeader) -> TransactionId {
    if !h.xmax_is_multi() {
        return h.xmax;
    }
    xmax_members(backend, h).iter().find(|m| m.status.is_update()).map_or(0, |m| m.xid)
}

fn lock_status(m: RowLockMode) -> MemberStatus {
    match m {
        RowLockMode::KeyShare => MemberStatus::ForKeyShare,
        RowLockMode::Share => MemberStatus::ForShare,
        RowLockMode::NoKeyExclusive => MemberStatus::ForNoKeyUpdate,
        RowLockMode::Exclusive => MemberStatus::ForUpdate,
    }
}

/// The member a change adds to the row.
fn change_status(change: Change) -> MemberStatus {
    match change {
        Change::Update { keys_updated: false } => MemberStatus::NoKeyUpdate,
        Change::Update { keys_updated: true } | Change::Delete => MemberStatus::Update,
        Change::Lock(m) => lock_status(m),
    }
}

/// After a page op set xmax to `xid` for `change` (and applied it): when other
/// members are kept, replaces that xmax by a new multixact of `keep` plus the
/// change, re-applying the op. Called before the op is WAL-logged; the multixact's
/// creation is logged first. `pd_prune_xid` keeps the value the first apply gave
/// it (the change's xid: a hint).
fn make_multi_xmax(engine: &Engine, op: &mut HeapXmaxOp, page: &mut [u8], keep: &[Member], xid: TransactionId, change: Change) {
    if keep.is_empty() {
        return;
    }
    let mut members = keep.to_vec();
    let status = change_status(change);
    members.push(Member { xid, status });
    let multi = match engine.txn.create_multixact(&members) {
        Ok(m) => m,
        Err(e) => critical_section_failed("could not log a multixact", e),
    };
    let strongest = members.iter().map(|m| m.status).max_by_key(|s| s.strength()).unwrap_or(status);
    op.xmax = multi;
    op.infomask_clear |= HEAP_XMAX_BITS;
    op.infomask_set = (op.infomask_set & !(HEAP_LOCK_MASK | HEAP_XMAX_LOCK_ONLY)) | HEAP_XMAX_IS_MULTI | strongest.lock_bits();
    if !members.iter().any(|m| m.status.is_update()) {
        op.infomask_set |= HEAP_XMAX_LOCK_ONLY;
    }
    op.infomask2_clear |= HEAP_KEYS_UPDATED;
    op.infomask2_set &= !HEAP_KEYS_UPDATED;
    if members.iter().any(|m| matches!(m.status, MemberStatus::Update | MemberStatus::ForUpdate)) {
        op.infomask2_set |= HEAP_KEYS_UPDATED;
    }
    op.set_prunable = false;
    if let Err(e) = op.apply(page) {
        critical_section_failed("could not store a multixact xmax", e);
    }
}

/// The heavyweight tuple lock a waiter holds while it waits for the row's xmax
/// transaction and then changes the row; released when dropped (PostgreSQL
/// releases it right after the change too, not at transaction end).
struct TupleLockGuard<'e> {
    engine: &'e Engine,
    backend: BackendId,
    held: Option<(LockTag, LockMode)>,
}

impl Drop for TupleLockGuard<'_> {
    fn drop(&mut self) {
        if let Some((tag, mode)) = self.held.take() {
            let _ = self.engine.locks.unlock(self.backend, tag, mode, false);
        }
    }
}

fn tuple_tag(rel: RelFileLocator, tid: Tid) -> LockTag {
    LockTag::Tuple { db: rel.db_oid, rel: rel.rel_number, blk: tid.block, offset: tid.offset }
}

/// Waits for transaction `xid`, which holds the row at `tid`: 1. the heavyweight
/// tuple lock in the mode of `want` (kept by `guard` until the change is done), so
/// that waiters for one row queue in arrival order instead of racing when `xid`
/// ends; 2. the xid lock, which `xid` releases when it ends. Returns false if the
/// row is to be skipped (SKIP LOCKED). The caller re-checks the row: it may have
/// been updated, deleted or locked again meanwhile.
fn wait_for_row(
    guard: &mut TupleLockGuard<'_>,
    rel: RelFileLocator,
    tid: Tid,
    want: RowLockMode,
    xid: TransactionId,
    policy: WaitPolicy,
    relname: &str,
) -> Result<bool> {
    let opts = LockOptions { dont_wait: policy != WaitPolicy::Block, ..Default::default() };
    let not_available = || match policy {
        WaitPolicy::SkipLocked => Ok(false),
        _ => Err(nowait_row_error(relname)),
    };
    if guard.held.is_none() {
        let tag = tuple_tag(rel, tid);
        let mode = tuple_lock_mode(want);
        if guard.engine.locks.lock(guard.backend, tag, mode, opts)? == LockAcquireResult::NotAvailable {
            return not_available();
        }
        guard.held = Some((tag, mode));
    }
    if guard.engine.locks.xact_lock_table_wait(guard.backend, xid, opts)? == LockAcquireResult::NotAvailable {
        return not_available();
    }
    Ok(true)
}

/// REPEATABLE READ and SERIALIZABLE: a row changed by a transaction that committed
/// after the transaction snapshot cannot be changed or locked (PostgreSQL 15's
/// texts: an UPDATE or DELETE reports "concurrent delete" for a deleted row,
/// row locking always says "concurrent update").
fn serialization_failure(what: &str) -> Error {
    Error::user(SqlState::T_R_SERIALIZATION_FAILURE, format!("could not serialize access due to concurrent {what}"))
}

fn uses_xact_snapshot(backend: &Backend) -> bool {
    backend.txn.isolation() != IsolationLevel::ReadCommitted
}

/// What a change asks of [`with_row`].
#[derive(Clone, Copy)]
struct RowRequest<'a> {
    change: Change,
    policy: WaitPolicy,
    relname: &'a str,
}

/// The change itself, called with the row's page locked exclusive.
type RowAction<'a, T> = dyn FnMut(&mut Backend, &Engine, LockedBuffer<'_>, RowState) -> Result<Option<T>> + 'a;

/// Common driver: locks the page of `tid` exclusive, checks the row, waits as
/// needed, and calls `act` with the locked page when the change may be made.
/// `act` returns `None` to ask for a new round (it released the page and the row
/// must be checked again).
fn with_row<T>(
    backend: &mut Backend,
    rel: RelFileLocator,
    tid: Tid,
    req: RowRequest<'_>,
    act: &mut RowAction<'_, T>,
    finish: &dyn Fn(Final) -> Result<T>,
) -> Result<T> {
    let RowRequest { change, policy, relname } = req;
    let engine = backend.engine().clone();
    let mut guard = TupleLockGuard { engine: &engine, backend: backend.id(), held: None };
    let want = strength(change);
    loop {
        let tag = BufferTag::new(rel, ForkNumber::Main, tid.block);
        let page = engine.buffers.read_buffer(tag, None)?.into_locked();
        match check_row(backend, &page[..], tid, change)? {
            RowState::Wait { xid } => {
                drop(page);
                if !wait_for_row(&mut guard, rel, tid, want, xid, policy, relname)? {
                    return finish(Final::Skipped);
                }
            }
            RowState::Done(f) => {
                drop(page);
                drop(guard);
                return finish(f);
            }
            state => {
                if let Some(r) = act(backend, &engine, page, state)? {
                    return Ok(r);
                }
            }
        }
    }
}

/// Sets the old version's t_cid to the combo command id when this transaction
/// inserted it (HEAP_COMBOCID), else to cmax; returns the corrected op, already
/// applied to the page. Part of the critical section of the change.
fn fix_cmax(backend: &mut Backend, info: &TupleVisibilityInfo, op: &mut HeapXmaxOp, page: &mut [u8]) {
    let (cid, combo) = backend.txn.cid_for_delete(info);
    op.cid = Some(cid);
    op.infomask_clear |= HEAP_COMBOCID;
    if combo {
        op.infomask_set |= HEAP_COMBOCID;
    } else {
        op.infomask_set &= !HEAP_COMBOCID;
    }
    if let Err(e) = op.apply(page) {
        critical_section_failed("could not set the deleted tuple's command id", e);
    }
}

/// UPDATE of the row version at `otid` to `new_tuple` (from `form_tuple`) as the
/// current transaction and command (PostgreSQL's heap_update).
///
/// 1. Lock the old page exclusive and check the old version (`satisfies_update`);
///    if another transaction changes or locks it, wait (tuple lock, then its xid)
///    per `opts.wait_policy` and check again.
/// 2. If the new version fits on the same page, put it there (heap-only if
///    `hot_allowed`) and log one `HeapOp::Update` with the page as block 0.
/// 3. Else release the old page, choose another ([`choose_insert_page`]), lock
///    both in block-number order, check the old version again (it may have changed
///    while unlocked), and make a cross-page update logged with block 0 = old page,
///    block 1 = new page.
///
/// A committed concurrent update or delete is `Updated`/`Deleted` in READ
/// COMMITTED and error 40001 in REPEATABLE READ / SERIALIZABLE.
pub fn heap_update(
    backend: &mut Backend,
    rel: RelFileLocator,
    otid: Tid,
    new_tuple: &[u8],
    opts: UpdateOptions<'_>,
) -> Result<UpdateOutcome> {
    check_tuple_size(new_tuple.len())?;
    TupleHeader::read(new_tuple)?;
    let xid = backend.txn.assign_xid_if_needed()?;
    let cid = backend.txn.current_command_id();
    let rr = uses_xact_snapshot(backend);
    let change = Change::Update { keys_updated: opts.keys_updated };
    let otag = BufferTag::new(rel, ForkNumber::Main, otid.block);
    let mut choice = PageChoice::default();
    let finish = |f: Final| -> Result<UpdateOutcome> {
        Ok(match f {
            Final::Updated(_) if rr => return Err(serialization_failure("update")),
            Final::Deleted if rr => return Err(serialization_failure("delete")),
            Final::Updated(new_tid) => UpdateOutcome::Updated { new_tid },
            Final::Deleted => UpdateOutcome::Deleted,
            Final::SelfModified => UpdateOutcome::SelfModified,
            Final::Invisible => UpdateOutcome::Invisible,
            Final::Skipped => UpdateOutcome::Skipped,
        })
    };
    // The old version, copied when its out-of-line values must go with it.
    let mut old_toasted: Option<Vec<u8>> = None;
    let mut act = |backend: &mut Backend, engine: &Engine, mut opage: LockedBuffer<'_>, state: RowState| {
        let RowState::Proceed { keep, .. } = state else { return Err(Error::internal("heap_update: row not ready")) };
        let info = visibility_info(&TupleHeader::read(heap_page_get_tuple(&opage[..], otid.offset)?)?, otid);
        old_toasted = copy_if_external(opts.toast_desc.is_some(), &opage[..], otid)?;
        // Same page first: heap-only if allowed. Not when the old version keeps
        // other lockers: a multixact xmax is not an xid a HOT chain walk can match
        // with the next member's xmin (README "MultiXacts").
        let hot = opts.hot_allowed && keep.is_empty();
        let flags = UpdateFlags { hot, keys_updated: opts.keys_updated };
        if let Some(mut op) =
            heap_page_update(&mut opage[..], otid.block, otid.offset, None, new_tuple, xid, cid, flags)?
        {
            fix_cmax(backend, &info, &mut op.old, &mut opage[..]);
            make_multi_xmax(engine, &mut op.old, &mut opage[..], &keep, xid, change);
            carry_lockers(engine, &mut op.new, &mut opage[..], &keep);
            let new_tid = Tid::new(otid.block, op.new.offset);
            log_update(engine, xid, &HeapOp::Update(op), otag, &mut opage, None);
            backend.txn.pgstat.count_update(rel, hot);
            return Ok(Some(UpdateOutcome::Ok { new_tid, hot }));
        }
        // The page is full (a hint for later updates; not WAL-logged).
        page_set_flag(&mut opage[..], PD_PAGE_FULL);
        drop(opage);
        let nblock = choose_insert_page(backend, engine, rel, new_tuple.len(), Some(otid.block), &mut choice)?;
        let ntag = BufferTag::new(rel, ForkNumber::Main, nblock);
        // Lock order: lower block number first.
        let (mut opage, mut npage) = if nblock < otid.block {
            let n = engine.buffers.read_buffer(ntag, None)?.into_locked();
            (engine.buffers.read_buffer(otag, None)?.into_locked(), n)
        } else {
            let o = engine.buffers.read_buffer(otag, None)?.into_locked();
            (o, engine.buffers.read_buffer(ntag, None)?.into_locked())
        };
        // The old page was unlocked: check the row again.
        let RowState::Proceed { keep, .. } = check_row(backend, &opage[..], otid, change)? else {
            return Ok(None);
        };
        let info = visibility_info(&TupleHeader::read(heap_page_get_tuple(&opage[..], otid.offset)?)?, otid);
        if page_is_new(&npage[..]) {
            heap_page_init(&mut npage[..]);
        }
        let flags = UpdateFlags { hot: false, keys_updated: opts.keys_updated };
        let new_room = page_heap_free_space(&npage[..]) >= new_tuple.len();
        let op = if new_room {
            heap_page_update(
                &mut opage[..],
                otid.block,
                otid.offset,
                Some((&mut npage[..], nblock)),
                new_tuple,
                xid,
                cid,
                flags,
            )?
        } else {
            None
        };
        let Some(mut op) = op else {
            // Filled meanwhile: choose again.
            backend.target_blocks.remove(&rel);
            return Ok(None);
        };
        fix_cmax(backend, &info, &mut op.old, &mut opage[..]);
        make_multi_xmax(engine, &mut op.old, &mut opage[..], &keep, xid, change);
        carry_lockers(engine, &mut op.new, &mut npage[..], &keep);
        let new_tid = Tid::new(nblock, op.new.offset);
        log_update(engine, xid, &HeapOp::Update(op), otag, &mut opage, Some((ntag, &mut npage)));
        backend.target_blocks.insert(rel, nblock);
        backend.txn.pgstat.count_update(rel, false);
        Ok(Some(UpdateOutcome::Ok { new_tid, hot: false }))
    };
    let out = with_row(backend, rel, otid, RowRequest { change, policy: opts.wait_policy, relname: opts.relname }, &mut act, &finish);
    if let Some(desc) = opts.toast_desc {
        match &out {
            // The old version's values go with it (the new version has its own).
            Ok(UpdateOutcome::Ok { .. }) => {
                if let Some(old) = old_toasted {
                    super::toastam::toast_delete_tuple(backend, rel, desc, &old)?;
                }
            }
            // No new version: its values, stored by the caller, are garbage
            // (an error aborts the transaction, which takes them anyway).
            Ok(_) => super::toastam::toast_delete_tuple(backend, rel, desc, new_tuple)?,
            Err(_) => {}
        }
    }
    let out = out?;
    if let UpdateOutcome::Ok { .. } = out {
        ssi_conflict_in(backend, rel, Some(otid))?;
    }
    Ok(out)
}

/// Logs an update: block 0 = the old version's page, block 1 = the new version's
/// page if it is another one; stamps both pages' LSNs and marks them dirty.
fn log_update(
    engine: &Engine,
    xid: TransactionId,
    op: &HeapOp,
    otag: BufferTag,
    opage: &mut LockedBuffer<'_>,
    new: Option<(BufferTag, &mut LockedBuffer<'_>)>,
) {
    clear_vm_bits(engine, otag, op, 0, &opage[..]);
    if let Some((ntag, npage)) = &new {
        clear_vm_bits(engine, *ntag, op, 1, &npage[..]);
    }
    let body = op.encode();
    let end = {
        let mut rb = RecordBuilder::new(RmgrId::Heap, 0);
        rb.set_xid(xid);
        rb.register_buffer(0, otag, &opage[..], regbuf::STANDARD);
        if let Some((ntag, npage)) = &new {
            rb.register_buffer(1, *ntag, &npage[..], regbuf::STANDARD);
        }
        rb.append_main_data(&body);
        match engine.wal.insert(&rb) {
            Ok(end) => end,
            Err(e) => critical_section_failed("could not insert heap WAL record", e),
        }
    };
    set_page_lsn(&mut opage[..], end);
    opage.mark_dirty();
    if let Some((_, npage)) = new {
        set_page_lsn(&mut npage[..], end);
        npage.mark_dirty();
    }
}

/// DELETE of the row version at `tid`, waiting for a concurrent writer per
/// `opts.wait_policy` (PostgreSQL's heap_delete). Outcomes and errors as for
/// [`heap_update`]; in REPEATABLE READ a row updated meanwhile is 40001 "... due
/// to concurrent update", one deleted meanwhile "... due to concurrent delete".
pub fn heap_delete_ext(
    backend: &mut Backend,
    rel: RelFileLocator,
    tid: Tid,
    opts: DeleteOptions<'_>,
) -> Result<DeleteOutcome> {
    let xid = backend.txn.assign_xid_if_needed()?;
    let rr = uses_xact_snapshot(backend);
    let tag = BufferTag::new(rel, ForkNumber::Main, tid.block);
    let finish = |f: Final| -> Result<DeleteOutcome> {
        Ok(match f {
            Final::Updated(_) if rr => return Err(serialization_failure("update")),
            Final::Deleted if rr => return Err(serialization_failure("delete")),
            Final::Updated(new_tid) => DeleteOutcome::Updated { new_tid },
            Final::Deleted => DeleteOutcome::Deleted,
            Final::SelfModified => DeleteOutcome::SelfModified,
            Final::Invisible => DeleteOutcome::Invisible,
            Final::Skipped => DeleteOutcome::Skipped,
        })
    };
    let mut old_toasted: Option<Vec<u8>> = None;
    let mut act = |backend: &mut Backend, engine: &Engine, mut page: LockedBuffer<'_>, state: RowState| {
        let RowState::Proceed { keep, .. } = state else { return Err(Error::internal("heap_delete: row not ready")) };
        old_toasted = copy_if_external(opts.toast_desc.is_some(), &page[..], tid)?;
        delete_locked(backend, engine, tag, &mut page, tid, xid, &keep)?;
        Ok(Some(DeleteOutcome::Ok))
    };
    let req = RowRequest { change: Change::Delete, policy: opts.wait_policy, relname: opts.relname };
    let out = with_row(backend, rel, tid, req, &mut act, &finish)?;
    if let DeleteOutcome::Ok = out {
        if let (Some(desc), Some(old)) = (opts.toast_desc, old_toasted) {
            super::toastam::toast_delete_tuple(backend, rel, desc, &old)?;
        }
        ssi_conflict_in(backend, rel, Some(tid))?;
    }
    Ok(out)
}

/// A copy of the tuple at `tid` if `wanted` and it has out-of-line values
/// (HEAP_HASEXTERNAL), for deleting them once the change is made.
fn copy_if_external(wanted: bool, page: &[u8], tid: Tid) -> Result<Option<Vec<u8>>> {
    if !wanted {
        return Ok(None);
    }
    let t = heap_page_get_tuple(page, tid.offset)?;
    Ok((TupleHeader::read(t)?.infomask & super::tuple::HEAP_HASEXTERNAL != 0).then(|| t.to_vec()))
}

fn delete_locked(
    backend: &mut Backend,
    engine: &Engine,
    tag: BufferTag,
    page: &mut LockedBuffer<'_>,
    tid: Tid,
    xid: TransactionId,
    keep: &[Member],
) -> Result<()> {
    let info = visibility_info(&TupleHeader::read(heap_page_get_tuple(&page[..], tid.offset)?)?, tid);
    let mut op = heap_page_delete(&mut page[..], tid.offset, xid, backend.txn.current_command_id())?;
    fix_cmax(backend, &info, &mut op, &mut page[..]);
    make_multi_xmax(engine, &mut op, &mut page[..], keep, xid, Change::Delete);
    log_page_change(engine, tag, xid, &HeapOp::Xmax(op), page);
    backend.txn.pgstat.count_delete(tag.rel);
    Ok(())
}

/// SELECT ... FOR KEY SHARE / FOR SHARE / FOR NO KEY UPDATE / FOR UPDATE of the
/// row version at `tid` (PostgreSQL's heap_lock_tuple): sets xmax to the current
/// (sub)transaction with the lock-only bits of `mode`, or to a multixact of it and
/// the other live, compatible lockers (README "MultiXacts"), WAL-logged as a
/// `HeapOp::Xmax`. A lock this transaction already holds at least as strongly is
/// kept as it is; a weaker one of ours is upgraded.
///
/// Conflicts follow PostgreSQL's table: a conflicting live member is waited for
/// (NOWAIT errors, SKIP LOCKED skips). FOR KEY SHARE goes past a no-key update,
/// running or committed, and locks the newer versions too ([`lock_updated_chain`]).
/// In REPEATABLE READ, a row updated (with a conflicting change) or deleted by a
/// transaction that committed is 40001 "... due to concurrent update".
pub fn heap_lock_tuple(
    backend: &mut Backend,
    rel: RelFileLocator,
    tid: Tid,
    mode: RowLockMode,
    wait_policy: WaitPolicy,
    relname: &str,
) -> Result<LockOutcome> {
    let xid = backend.txn.assign_xid_if_needed()?;
    let rr = uses_xact_snapshot(backend);
    let tag = BufferTag::new(rel, ForkNumber::Main, tid.block);
    let finish = |f: Final| -> Result<LockOutcome> {
        Ok(match f {
            Final::Updated(_) | Final::Deleted if rr => return Err(serialization_failure("update")),
            Final::Updated(new_tid) => LockOutcome::Updated { new_tid },
            Final::Deleted => LockOutcome::Deleted,
            Final::SelfModified => LockOutcome::SelfModified,
            Final::Invisible => LockOutcome::Invisible,
            Final::Skipped => LockOutcome::Skipped,
        })
    };
    let mut act = |_backend: &mut Backend, engine: &Engine, mut page: LockedBuffer<'_>, state: RowState| {
        let RowState::Proceed { keep, follow } = state else { return Ok(Some((LockOutcome::Locked, None))) };
        let mut op = heap_page_lock_tuple(&mut page[..], tid.block, tid.offset, xid, mode)?;
        if let Some(next) = follow {
            // The version stays updated: its t_ctid keeps leading to the newer one.
            op.ctid = Some(next);
        }
        make_multi_xmax(engine, &mut op, &mut page[..], &keep, xid, Change::Lock(mode));
        log_page_change(engine, tag, xid, &HeapOp::Xmax(op), &mut page);
        let updater = keep.iter().find(|m| m.status.is_update()).map(|m| m.xid);
        Ok(Some((LockOutcome::Locked, follow.zip(updater))))
    };
    let finish2 = |f: Final| finish(f).map(|o| (o, None));
    let req = RowRequest { change: Change::Lock(mode), policy: wait_policy, relname };
    let (outcome, chain) = with_row(backend, rel, tid, req, &mut act, &finish2)?;
    match chain {
        Some((next, updater)) => match lock_updated_chain(backend, rel, next, updater, mode, wait_policy, relname, xid)? {
            None => Ok(outcome),
            Some(f) => finish(f),
        },
        None => Ok(outcome),
    }
}

/// FOR KEY SHARE went past a no-key update (they do not conflict): the newer
/// versions of the row are locked too, from `next` on, each one created by the
/// previous version's updater `prior` (PostgreSQL's heap_lock_updated_tuple), so
/// that a later key update or delete of the row waits for us. A version being
/// deleted or key-updated by a running transaction is waited for; one whose
/// deleter or key updater committed ends the walk with that outcome
/// (`Some(Final)`); the end of the chain (or a version whose inserter aborted, or a
/// reused slot) ends it with `None`: locked.
#[allow(clippy::too_many_arguments)]
fn lock_updated_chain(
    backend: &mut Backend,
    rel: RelFileLocator,
    mut next: Tid,
    mut prior: TransactionId,
    mode: RowLockMode,
    policy: WaitPolicy,
    relname: &str,
    xid: TransactionId,
) -> Result<Option<Final>> {
    let engine = backend.engine().clone();
    let change = Change::Lock(mode);
    let limit = engine.buffers.nblocks(rel, ForkNumber::Main)? as usize * 300 + 1;
    for _ in 0..limit {
        let tag = BufferTag::new(rel, ForkNumber::Main, next.block);
        let mut guard = TupleLockGuard { engine: &engine, backend: backend.id(), held: None };
        loop {
            let mut page = engine.buffers.read_buffer(tag, None)?.into_locked();
            if page_is_new(&page[..]) || next.offset == 0 || next.offset > page_max_offset_number(&page[..]) {
                return Ok(None);
            }
            if page_get_item_id(&page[..], next.offset)?.flags != LpFlags::Normal {
                return Ok(None);
            }
            let h = TupleHeader::read(heap_page_get_tuple(&page[..], next.offset)?)?;
            if h.xmin != prior {
                return Ok(None);
            }
            if !backend.txn.is_current_xid(h.xmin)
                && !backend.txn.is_in_progress(h.xmin)
                && backend.txn.status(h.xmin)? != XidStatus::Committed
            {
                return Ok(None);
            }
            let state = if h.xmax_invalid() || h.xmax == 0 {
                RowState::Proceed { keep: Vec::new(), follow: None }
            } else {
                xmax_state(backend, &h, next, change)?
            };
            match state {
                RowState::Wait { xid: other } => {
                    drop(page);
                    if !wait_for_row(&mut guard, rel, next, mode, other, policy, relname)? {
                        return Ok(Some(Final::Skipped));
                    }
                }
                RowState::Done(Final::SelfModified) | RowState::AlreadyLocked => return Ok(None),
                RowState::Done(f) => return Ok(Some(f)),
                RowState::Proceed { keep, follow } => {
                    let mut op = heap_page_lock_tuple(&mut page[..], next.block, next.offset, xid, mode)?;
                    if let Some(n) = follow {
                        op.ctid = Some(n);
                    }
                    make_multi_xmax(&engine, &mut op, &mut page[..], &keep, xid, change);
                    log_page_change(&engine, tag, xid, &HeapOp::Xmax(op), &mut page);
                    match (follow, keep.iter().find(|m| m.status.is_update())) {
                        (Some(n), Some(u)) => {
                            prior = u.xid;
                            next = n;
                            break;
                        }
                        _ => return Ok(None),
                    }
                }
            }
        }
    }
    Err(Error::corrupt(format!("update chain from {next:?} of relation {} loops", rel.rel_number)))
}

/// The newest version of the row whose version at `tid` the caller saw, that
/// `snapshot` sees: follows t_ctid from version to version (each next version's
/// xmin must be the previous one's xmax, else the slot was reused and the chain
/// ends). For READ COMMITTED's re-check after [`UpdateOutcome::Updated`]
/// (PostgreSQL's EvalPlanQual fetch): call it with a fresh statement snapshot
/// taken after the wait. `None`: the row is gone (deleted, or its newest version
/// not visible).
pub fn heap_fetch_latest(
    backend: &Backend,
    rel: RelFileLocator,
    tid: Tid,
    snapshot: &Snapshot,
) -> Result<Option<(Tid, Vec<u8>)>> {
    let engine = backend.engine();
    let mut tid = tid;
    let mut prior_xmax: Option<TransactionId> = None;
    // A chain cannot be longer than the number of tuples in the relation; bound the
    // walk so a damaged chain cannot loop.
    let limit = engine.buffers.nblocks(rel, ForkNumber::Main)? as usize * 300 + 1;
    for _ in 0..limit {
        let pin = engine.buffers.read_buffer(BufferTag::new(rel, ForkNumber::Main, tid.block), None)?;
        let page = pin.lock_shared();
        if page_is_new(&page[..]) || tid.offset == 0 || tid.offset > page_max_offset_number(&page[..]) {
            return Ok(None);
        }
        let mut off = tid.offset;
        let id = page_get_item_id(&page[..], off)?;
        if id.flags == LpFlags::Redirect {
            off = id.off;
        }
        if page_get_item_id(&page[..], off)?.flags != LpFlags::Normal {
            return Ok(None);
        }
        let t = heap_page_get_tuple(&page[..], off)?;
        let here = Tid::new(tid.block, off);
        let h = TupleHeader::read(t)?;
        if prior_xmax.is_some_and(|x| x != h.xmin) {
            return Ok(None);
        }
        if satisfies_mvcc(&visibility_info(&h, here), snapshot, &*backend.txn)?.visible {
            return Ok(Some((here, t.to_vec())));
        }
        let updated = !h.xmax_invalid() && h.xmax != 0 && !h.xmax_is_lock_only() && h.ctid != here;
        if !updated {
            return Ok(None);
        }
        prior_xmax = Some(update_xid(backend, &h));
        tid = h.ctid;
    }
    Err(Error::corrupt(format!("update chain from {tid:?} of relation {} loops", rel.rel_number)))
}

/// Redo of a heap record: restore the full-page image if there is one, else apply
/// the op if the page has not seen it yet (page LSN < record end).
pub fn redo(engine: &Engine, rec: &DecodedRecord) -> Result<()> {
    let op = HeapOp::decode(&rec.main_data)?;
    for block in &rec.blocks {
        let tag = block.tag;
        if !engine.smgr.exists(tag.rel, tag.fork) {
            engine.smgr.create(tag.rel, tag.fork)?;
        }
        if let Some(image) = crate::wal::restore_full_page_image(block) {
            let mut page = engine.buffers.read_buffer_zero(tag, None)?;
            page[..].copy_from_slice(&image);
            set_page_lsn(&mut page[..], rec.end);
            page.mark_dirty();
            continue;
        }
        // A block past the end of the file (its extension was lost with the crash):
        // extend the file with zero pages first, then read through the pool, which
        // returns the page if an earlier record of this recovery restored it (a
        // zeroed buffer here would wipe that restored image).
        let nblocks = engine.buffers.nblocks(tag.rel, tag.fork)?;
        if tag.block >= nblocks {
            engine.smgr.zero_extend(tag.rel, tag.fork, nblocks, tag.block + 1 - nblocks)?;
        }
        let mut page = engine.buffers.read_buffer(tag, None)?.into_locked();
        if page_lsn(&page[..]) >= rec.end {
            continue;
        }
        if page_is_new(&page[..]) {
            heap_page_init(&mut page[..]);
        }
        match (block.id, &op) {
            (0, op) => op.apply(&mut page[..])?,
            (1, HeapOp::Update(u)) => u.apply_new_page(&mut page[..])?,
            (id, _) => return Err(Error::corrupt(format!("heap WAL record at {} has block id {id}", rec.lsn))),
        }
        set_page_lsn(&mut page[..], rec.end);
        page.mark_dirty();
    }
    // The visibility map, whatever the heap pages' LSNs (visibilitymap rules 1, 2):
    // a clear is repeated (it is idempotent), a set only if the VM page has not seen
    // this record.
    for block in &rec.blocks {
        let tag = block.tag;
        match op {
            HeapOp::Visible { vm_flags } => vm_set(engine, tag.rel, tag.block, vm_flags, rec.end, true)?,
            _ => {
                let bits = op.vm_bits_cleared(block.id);
                if bits != 0 {
                    vm_clear(engine, tag.rel, tag.block, bits)?;
                }
            }
        }
    }
    Ok(())
}

/// Inserts a row given as values: values that make the row too big are compressed
/// and, if still too big, moved out of line into `toast_rel` as chunks
/// (PostgreSQL's heap_toast_insert_or_update). The chunks are inserted by the same
/// transaction, so they become visible, or vanish, with the row.
pub fn heap_insert_values(
    backend: &mut Backend,
    rel: RelFileLocator,
    toast_rel: Option<RelFileLocator>,
    desc: &[super::tuple::AttrDesc],
    values: &[Option<super::tuple::Datum<'_>>],
) -> Result<Tid> {
    let tuple = heap_toast_form_tuple(backend, toast_rel, desc, values)?;
    heap_insert(backend, rel, &tuple)
}

/// The tuple [`heap_insert_values`] would insert: values that make the row too big
/// compressed, and if still too big stored out of line in `toast_rel` (inserted now,
/// by the current transaction). For callers that insert many rows at once with
/// [`heap_multi_insert`].
pub fn heap_toast_form_tuple(
    backend: &mut Backend,
    toast_rel: Option<RelFileLocator>,
    desc: &[super::tuple::AttrDesc],
    values: &[Option<super::tuple::Datum<'_>>],
) -> Result<Vec<u8>> {
    let plan = super::toast::toast_plan(desc, values)?;
    if plan.is_noop() {
        return super::tuple::form_tuple(desc, values);
    }
    let mut oids = Vec::new();
    let toast_relid = toast_rel.map_or(0, |t| t.rel_number);
    for (_, data) in plan.externals() {
        let Some(toast_rel) = toast_rel else {
            return Err(Error::user(
                SqlState::PROGRAM_LIMIT_EXCEEDED,
                format!("row is too big: size {}, maximum size {}", data.len(), MAX_HEAP_TUPLE_SIZE),
            ));
        };
        oids.push(super::toastam::toast_save_value(backend, toast_rel, data)?);
    }
    let finished = plan.finish(values, toast_relid, &oids)?;
    super::tuple::form_tuple(desc, &finished)
}

/// Deletes, in the current transaction, the out-of-line chunks of the values
/// `value_oids` from the toast relation `toast_rel` (PostgreSQL's toast_delete):
/// a row deleted with its values leaves no live chunks behind, and VACUUM
/// reclaims them as it reclaims the row. The chunks are found through the chunk
/// index ([`super::toastam`]).
pub fn heap_toast_delete(
    backend: &mut Backend,
    toast_rel: RelFileLocator,
    _snapshot: &Snapshot,
    value_oids: &std::collections::HashSet<u32>,
) -> Result<()> {
    let oids: Vec<u32> = value_oids.iter().copied().collect();
    super::toastam::toast_delete_values(backend, toast_rel, &oids)
}

/// The plain bytes of a varlena value of a row read from `rel`: inline, compressed
/// or out of line. Out-of-line chunks are read through the TOAST relation's chunk
/// index: one index scan for the value's chunk_id, then one heap fetch per chunk.
pub fn heap_detoast<'a>(
    backend: &Backend,
    rel: RelFileLocator,
    datum: &super::tuple::Datum<'a>,
    snapshot: &Snapshot,
) -> Result<std::borrow::Cow<'a, [u8]>> {
    super::toast::detoast(datum, |ptr| {
        let toast_rel = RelFileLocator { rel_number: ptr.toast_relid, ..rel };
        super::toastam::toast_fetch_chunks(backend, toast_rel, ptr.value_oid, snapshot)
    })
}

// ---------------------------------------------------------------------------------
// Serializable Snapshot Isolation hooks (lmgr/README.md "Predicate locks and SSI").
// Each starts with one branch on `serializable_xact()`: READ COMMITTED and
// REPEATABLE READ transactions never reach the predicate-lock manager.
// Readers register a lock before they read the page (relations) or while they
// hold its content lock (tuples); writers check after the change is on the page.
// Either the reader's lock is there when the writer checks, or the reader read
// the page after the change and sees the writer's xid (conflict out).
// ---------------------------------------------------------------------------------

/// Does SSI track reads and writes of `rel`? Not the catalogs (PostgreSQL's
/// SerializationNeededForRead/Write skip system relations).
#[inline]
pub fn ssi_tracked(rel: RelFileLocator) -> bool {
    rel.rel_number >= crate::engine::FIRST_NORMAL_OBJECT_ID
}

/// A serializable read of the whole relation `rel` (a sequential scan, or an
/// index scan's index for now): SIREAD lock on it. Nothing outside SERIALIZABLE.
#[inline]
pub fn predicate_lock_relation(backend: &Backend, rel: RelFileLocator) {
    if let Some(sx) = backend.txn.serializable_xact() {
        if ssi_tracked(rel) {
            backend.txn.shared().predicate.acquire(sx, crate::lmgr::predicate::PredTarget::Relation(rel));
        }
    }
}

/// A serializable read returned the tuple at `tid` (PredicateLockTID): a tuple
/// SIREAD lock, unless this transaction wrote it.
#[inline]
fn predicate_lock_tuple(backend: &Backend, rel: RelFileLocator, tid: Tid, xmin: TransactionId) {
    if let Some(sx) = backend.txn.serializable_xact() {
        if ssi_tracked(rel) && !backend.txn.is_current_xid(xmin) {
            backend.txn.shared().predicate.acquire(sx, crate::lmgr::predicate::PredTarget::Tuple(rel, tid.block, tid.offset));
        }
    }
}

/// A serializable read examined the version `h` (seen or not): if a concurrent
/// transaction wrote it (inserted it unseen, or deleted/updated it seen), the
/// reader has an rw-conflict out to it (HeapCheckForSerializableConflictOut).
#[inline]
pub(crate) fn ssi_conflict_out(backend: &Backend, rel: RelFileLocator, h: &TupleHeader, visible: bool, snapshot: &Snapshot) -> Result<()> {
    match backend.txn.serializable_xact() {
        Some(sx) if ssi_tracked(rel) => ssi_conflict_out_slow(backend, sx, h, visible, snapshot),
        _ => Ok(()),
    }
}

#[cold]
fn ssi_conflict_out_slow(
    backend: &Backend,
    sx: &crate::lmgr::predicate::SerializableXact,
    h: &TupleHeader,
    visible: bool,
    snapshot: &Snapshot,
) -> Result<()> {
    if sx.is_doomed() {
        return Err(crate::lmgr::predicate::serialization_failure(
            "Reason code: Canceled on identification as a pivot, during conflict out checking.",
        ));
    }
    let xid = if visible {
        if h.xmax_invalid() || h.xmax_is_lock_only() {
            return Ok(());
        }
        update_xid(backend, h)
    } else {
        if h.xmin_invalid() {
            return Ok(());
        }
        h.xmin
    };
    if !crate::txn::xid::xid_is_normal(xid) || backend.txn.is_current_xid(xid) {
        return Ok(());
    }
    let sh = backend.txn.shared();
    let top = sh.subtrans.top_parent(xid);
    if backend.txn.is_current_xid(top) || !snapshot.xid_in_snapshot(top, &sh.subtrans) {
        return Ok(());
    }
    if sh.xid_status(xid)? == XidStatus::Aborted {
        return Ok(());
    }
    sh.predicate.check_conflict_out(sx, top)
}

/// A serializable write: the tuple `tid` (if any; an insert has none), its page
/// and `rel` (CheckForSerializableConflictIn). Called after the change.
pub fn ssi_conflict_in(backend: &Backend, rel: RelFileLocator, tid: Option<Tid>) -> Result<()> {
    let Some(sx) = backend.txn.serializable_xact() else { return Ok(()) };
    if !ssi_tracked(rel) {
        return Ok(());
    }
    use crate::lmgr::predicate::PredTarget;
    let r = PredTarget::Relation(rel);
    let pm = &backend.txn.shared().predicate;
    match tid {
        Some(t) => pm.check_conflict_in(sx, &[PredTarget::Tuple(rel, t.block, t.offset), PredTarget::Page(rel, t.block), r]),
        None => pm.check_conflict_in(sx, &[r]),
    }
}
