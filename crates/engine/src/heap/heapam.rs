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

use super::page::{heap_page_add_tuple, heap_page_delete, heap_page_get_tuple, heap_page_init, heap_page_tuples, HeapOp};
use super::toast::MAX_HEAP_TUPLE_SIZE;
use super::tuple::{Tid, TupleHeader};
use crate::buffer::LockedBuffer;
use crate::engine::{Backend, Engine};
use crate::error::{Error, Result, SqlState};
use crate::storage::page::{page_heap_free_space, page_is_new, page_lsn, set_page_lsn};
use crate::storage::{BlockNumber, BufferTag, ForkNumber, RelFileLocator};
use crate::txn::snapshot::Snapshot;
use crate::txn::visibility::{satisfies_mvcc, satisfies_update, TmResult, TupleVisibilityInfo};
use crate::wal::{regbuf, DecodedRecord, RecordBuilder, RmgrId};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// At most this many pages are added by one extension (and at most an eighth of
/// shared_buffers, since they are pinned together).
const MAX_EXTRA_BLOCKS: u32 = 64;
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

fn log_page_change(engine: &Engine, tag: BufferTag, xid: u32, op: &HeapOp, page: &mut LockedBuffer<'_>) {
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
    if tuple.len() > MAX_HEAP_TUPLE_SIZE {
        return Err(Error::user(
            SqlState::PROGRAM_LIMIT_EXCEEDED,
            format!("row is too big: size {}, maximum size {}", tuple.len(), MAX_HEAP_TUPLE_SIZE),
        ));
    }
    TupleHeader::read(tuple)?;
    let xid = backend.txn.assign_xid_if_needed()?;
    let cid = backend.txn.current_command_id();
    let engine = backend.engine().clone();
    let space = engine.heap_space.rel(rel);

    // 1. The page this backend used last, 2. spare pages from extensions, 3. the
    // last page of the relation; else extend.
    let mut tried_last = false;
    loop {
        let candidate = match backend.target_blocks.get(&rel) {
            Some(&b) => Some(b),
            None => match space.spare.lock().unwrap_or_else(|e| e.into_inner()).pop() {
                Some(b) => Some(b),
                None if !tried_last => {
                    tried_last = true;
                    let n = engine.buffers.nblocks(rel, ForkNumber::Main)?;
                    n.checked_sub(1)
                }
                None => None,
            },
        };
        let Some(block) = candidate else { break };
        let tag = BufferTag::new(rel, ForkNumber::Main, block);
        let mut page = engine.buffers.read_buffer(tag, None)?.into_locked();
        if let Some(tid) = try_insert_on_page(&engine, tag, &mut page, tuple, xid, cid)? {
            backend.target_blocks.insert(rel, block);
            return Ok(tid);
        }
        backend.target_blocks.remove(&rel);
    }

    // Extend. Others extending at the same moment mean contention: add extra pages.
    let others = space.extenders.fetch_add(1, Ordering::SeqCst);
    // The new pages are all pinned at once: never more than an eighth of the pool.
    let cap = (engine.buffers.nbuffers() / 8).clamp(1, MAX_EXTRA_BLOCKS as usize) as u32;
    let n = (1 + others * EXTRA_BLOCKS_PER_WAITER).min(cap);
    let result = engine.buffers.extend(rel, ForkNumber::Main, n, None);
    space.extenders.fetch_sub(1, Ordering::SeqCst);
    let mut pages = result?;
    let mut first = pages.remove(0);
    let extra: Vec<BlockNumber> = pages.iter().map(|p| p.block()).collect();
    // The extra pages stay all-zero (valid: a new page) until first used.
    drop(pages);
    if !extra.is_empty() {
        space.spare.lock().unwrap_or_else(|e| e.into_inner()).extend(extra.into_iter().rev());
    }
    let tag = first.tag();
    match try_insert_on_page(&engine, tag, &mut first, tuple, xid, cid)? {
        Some(tid) => {
            backend.target_blocks.insert(rel, tag.block);
            Ok(tid)
        }
        None => Err(Error::internal(format!("tuple of {} bytes does not fit on an empty page", tuple.len()))),
    }
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

fn visibility_info(h: &TupleHeader, tid: Tid) -> TupleVisibilityInfo {
    TupleVisibilityInfo {
        xmin: h.xmin,
        xmax: h.xmax,
        cid: h.cid,
        infomask: h.infomask,
        ctid_is_self: h.ctid == tid,
    }
}

/// Calls `f(tid, tuple)` for every tuple of `rel` visible to `snapshot`, in
/// physical order. (Hint bits are not yet set by scans.)
pub fn heap_scan(
    backend: &Backend,
    rel: RelFileLocator,
    snapshot: &Snapshot,
    f: &mut dyn FnMut(Tid, &[u8]) -> Result<()>,
) -> Result<()> {
    let engine = backend.engine();
    let nblocks = engine.buffers.nblocks(rel, ForkNumber::Main)?;
    for block in 0..nblocks {
        let pin = engine.buffers.read_buffer(BufferTag::new(rel, ForkNumber::Main, block), None)?;
        let page = pin.lock_shared();
        if page_is_new(&page[..]) {
            continue;
        }
        for item in heap_page_tuples(&page[..]) {
            let (off, t) = item?;
            let tid = Tid::new(block, off);
            let h = TupleHeader::read(t)?;
            if satisfies_mvcc(&visibility_info(&h, tid), snapshot, &*backend.txn)?.visible {
                f(tid, t)?;
            }
        }
    }
    Ok(())
}

/// Reads the tuple at `tid` if `snapshot` sees it.
pub fn heap_fetch(backend: &Backend, rel: RelFileLocator, tid: Tid, snapshot: &Snapshot) -> Result<Option<Vec<u8>>> {
    let engine = backend.engine();
    let pin = engine.buffers.read_buffer(BufferTag::new(rel, ForkNumber::Main, tid.block), None)?;
    let page = pin.lock_shared();
    let t = heap_page_get_tuple(&page[..], tid.offset)?;
    let h = TupleHeader::read(t)?;
    Ok(satisfies_mvcc(&visibility_info(&h, tid), snapshot, &*backend.txn)?.visible.then(|| t.to_vec()))
}

/// Deletes the tuple at `tid` as the current transaction and command. Returns the
/// update test's result: anything but `Ok` changed nothing, and `BeingModified`
/// means another transaction is changing the row (the caller waits for it through
/// the lock manager and retries).
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
    let (cid, _combo) = backend.txn.cid_for_delete(&info);
    let op = heap_page_delete(&mut page[..], tid.offset, xid, cid)?;
    log_page_change(&engine, tag, xid, &HeapOp::Xmax(op), &mut page);
    Ok(TmResult::Ok)
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
        let mut page = if tag.block >= engine.buffers.nblocks(tag.rel, tag.fork)? {
            // Never reached the disk: its changes are all in the WAL from here on.
            engine.buffers.read_buffer_zero(tag, None)?
        } else {
            engine.buffers.read_buffer(tag, None)?.into_locked()
        };
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
    let plan = super::toast::toast_plan(desc, values)?;
    if plan.is_noop() {
        return heap_insert(backend, rel, &super::tuple::form_tuple(desc, values)?);
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
        let oid = backend.engine().new_oid();
        for chunk in super::toast::make_chunks(oid, data)? {
            heap_insert(backend, toast_rel, &chunk)?;
        }
        oids.push(oid);
    }
    let finished = plan.finish(values, toast_relid, &oids)?;
    heap_insert(backend, rel, &super::tuple::form_tuple(desc, &finished)?)
}

/// The plain bytes of a varlena value of a row read from `rel`: inline, compressed
/// or out of line. Out-of-line chunks are found by scanning the toast relation (it
/// has no (chunk_id, chunk_seq) index until B-trees exist: linear in its size).
pub fn heap_detoast<'a>(
    backend: &Backend,
    rel: RelFileLocator,
    datum: &super::tuple::Datum<'a>,
    snapshot: &Snapshot,
) -> Result<std::borrow::Cow<'a, [u8]>> {
    super::toast::detoast(datum, |ptr| {
        let toast_rel = RelFileLocator { rel_number: ptr.toast_relid, ..rel };
        let mut chunks: Vec<(u64, Vec<u8>)> = Vec::new();
        heap_scan(backend, toast_rel, snapshot, &mut |_, t| {
            let v = super::tuple::deform_tuple(&super::toast::TOAST_DESC, t)?;
            if let (Some(super::tuple::Datum::ByVal(id)), Some(super::tuple::Datum::ByVal(seq))) = (v[0], v[1]) {
                if id == ptr.value_oid as u64 {
                    chunks.push((seq, t.to_vec()));
                }
            }
            Ok(())
        })?;
        chunks.sort_by_key(|c| c.0);
        Ok(chunks.into_iter().map(|c| c.1).collect::<Vec<_>>())
    })
}
