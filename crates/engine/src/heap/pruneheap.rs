//! Pruning a heap page (PostgreSQL's pruneheap.c) and setting hint bits from a scan.
//!
//! - [`heap_page_prune_opt`]: opportunistic pruning, called by a backend that has a
//!   page pinned (a scan, a fetch, an update looking for room). It prunes only when
//!   the page may hold something dead to everyone *and* is short of room, and only if
//!   the cleanup lock is free at once: it never waits.
//! - [`prune_locked`]: the pruning itself under a cleanup lock, WAL-logged; shared
//!   with VACUUM.
//! - [`set_hint_bits_from_visibility`] / [`scan_page_set_hints`]: hint bits under a
//!   shared lock.
//!
//! The rules are in the heap README ("VACUUM, pruning and free space").

use super::page::{heap_page_prune, heap_page_tuples, HeapOp, PruneResult};
use super::tuple::{xid_precedes, Tid, TupleHeader, INVALID_TRANSACTION_ID, T_INFOMASK};
use crate::buffer::{BufferReadGuard, BufferWriteGuard, PinnedBuffer};
use crate::engine::{Backend, Engine};
use crate::error::{Error, Result};
use crate::storage::page::{
    page_get_item_id, page_has_flag, page_heap_free_space, page_is_new, page_prune_xid, set_page_lsn, LpFlags,
    OffsetNumber, PD_PAGE_FULL,
};
use crate::storage::{BufferTag, RelFileLocator};
use crate::txn::snapshot::Snapshot;
use crate::txn::visibility::{
    satisfies_mvcc, satisfies_vacuum, HtsvResult, TupleVisibilityInfo, XidOracle, HEAP_XACT_HINT_MASK,
};
use crate::txn::xid::TransactionId;
use crate::wal::{regbuf, RecordBuilder, RmgrId};

/// Opportunistic pruning happens when free space is below this share of the page
/// (PostgreSQL: max(fillfactor target, BLCKSZ / 10); no fillfactor here yet).
pub const PRUNE_MIN_FREE: usize = crate::config::BLCKSZ / 10;

/// A failure between changing a page and logging the change: as in heapam, the
/// process stops (PostgreSQL's PANIC in a critical section).
#[cold]
fn critical_section_failed(what: &str, e: Error) -> ! {
    eprintln!("PANIC:  {what}: {e}");
    std::process::abort();
}

/// WAL-logs a heap op on a page already changed (block 0, standard page: the WAL
/// decides on a full-page image), stamps the page LSN and marks it dirty.
pub(crate) fn log_heap_op(engine: &Engine, tag: BufferTag, op: &HeapOp, page: &mut BufferWriteGuard<'_>) {
    let body = op.encode();
    let end = {
        let mut rb = RecordBuilder::new(RmgrId::Heap, 0);
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

/// The visibility-relevant fields of a tuple at `tid`.
pub fn visibility_info(h: &TupleHeader, tid: Tid) -> TupleVisibilityInfo {
    TupleVisibilityInfo { xmin: h.xmin, xmax: h.xmax, cid: h.cid, infomask: h.infomask, ctid_is_self: h.ctid == tid }
}

/// Prunes the page held under a cleanup lock: tuples `satisfies_vacuum` calls Dead
/// for `horizon` are removed, HOT chains collapsed; the change is WAL-logged as
/// `HeapOp::Prune` and the page dirtied. A prune that changes no line pointer only
/// adjusts hints (pd_prune_xid, PD_PAGE_FULL) and leaves the buffer clean. A tuple
/// whose status cannot be read (clog I/O error) is kept.
pub fn prune_locked(
    engine: &Engine,
    oracle: &dyn XidOracle,
    tag: BufferTag,
    page: &mut BufferWriteGuard<'_>,
    horizon: TransactionId,
) -> Result<PruneResult> {
    let block = tag.block;
    let status = |h: &TupleHeader| -> HtsvResult {
        // The tid only matters for ctid_is_self, which the vacuum test ignores.
        let info = visibility_info(h, Tid::new(block, 0));
        // Unreadable status: kept, with the rest of its chain (heap_page_prune's doc).
        satisfies_vacuum(&info, horizon, oracle).map_or(HtsvResult::DeleteInProgress, |(s, _)| s)
    };
    let r = heap_page_prune(&mut page[..], &status)?;
    if !r.op.is_empty() {
        log_heap_op(engine, tag, &HeapOp::Prune(r.op.clone()), page);
    }
    Ok(r)
}

/// What [`heap_page_prune_opt`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PruneOptOutcome {
    /// The page qualified (prunable and short of room).
    pub attempted: bool,
    /// The cleanup lock was not free (another pin or lock): skipped, no wait.
    pub skipped_lock: bool,
    /// Tuples removed.
    pub ndeleted: usize,
    /// Bytes freed.
    pub freed: usize,
}

/// The page's checks for opportunistic pruning that need no transaction state: it is
/// short of room (PD_PAGE_FULL, or less than [`PRUNE_MIN_FREE`] bytes free) and has a
/// prunable xid, which is returned. Scans call this under the shared lock they hold
/// anyway and call [`heap_page_prune_opt`] only when it says yes, so the common case
/// costs no second lock of the page.
pub fn prune_is_due(page: &[u8]) -> Option<TransactionId> {
    if page_is_new(page) {
        return None;
    }
    let short = page_has_flag(page, PD_PAGE_FULL) || page_heap_free_space(page) < PRUNE_MIN_FREE;
    let xid = page_prune_xid(page);
    (short && xid != INVALID_TRANSACTION_ID).then_some(xid)
}

/// Opportunistic pruning of the page `pin` holds (PostgreSQL's heap_page_prune_opt).
/// The caller holds `pin` and no content lock on it (and must not hold any other
/// buffer's content lock: we would not wait, but keep the rule simple). Prunes when
/// pd_prune_xid precedes the xmin horizon (something may be dead to everyone) and
/// the page is full (PD_PAGE_FULL) or has less than [`PRUNE_MIN_FREE`] bytes free;
/// only if the cleanup lock can be had without waiting. The freed space goes into
/// the FSM.
pub fn heap_page_prune_opt(backend: &Backend, rel: RelFileLocator, pin: &PinnedBuffer<'_>) -> Result<PruneOptOutcome> {
    let engine = backend.engine();
    let mut out = PruneOptOutcome::default();
    let Some(prune_xid) = prune_is_due(&pin.lock_shared()[..]) else {
        return Ok(out);
    };
    let horizon = engine.txn.oldest_xmin();
    if !xid_precedes(prune_xid, horizon) {
        return Ok(out);
    }
    out.attempted = true;
    let tag = pin.tag();
    let avail = {
        let Some(mut page) = pin.conditional_lock_cleanup() else {
            out.skipped_lock = true;
            return Ok(out);
        };
        let r = prune_locked(engine, &*backend.txn, tag, &mut page, horizon)?;
        out.ndeleted = r.ndeleted;
        out.freed = r.freed;
        page_heap_free_space(&page[..])
    };
    if out.ndeleted > 0 {
        super::freespace::record_free_space(engine, rel, tag.block, avail)?;
    }
    Ok(out)
}

/// [`heap_page_prune_opt`] for a block the caller has not pinned (reads and pins
/// it for the call).
pub fn heap_page_prune_opt_block(
    backend: &Backend,
    rel: RelFileLocator,
    block: crate::storage::BlockNumber,
) -> Result<PruneOptOutcome> {
    let tag = BufferTag::new(rel, crate::storage::ForkNumber::Main, block);
    let pin = backend.engine().buffers.read_buffer(tag, None)?;
    heap_page_prune_opt(backend, rel, &pin)
}

/// Sets the hint bits `hints` (from `satisfies_mvcc` / `satisfies_vacuum` /
/// `satisfies_update`) on the tuple at `off`, under the shared content lock `page`.
/// Only transaction-status hint bits are set (others in `hints` are ignored); the
/// visibility functions return a committed hint only when it is allowed (commit
/// record durable). The buffer is not dirtied (README: hint-bit policy). Returns
/// whether bits were written.
pub fn set_hint_bits_from_visibility(page: &BufferReadGuard<'_>, off: OffsetNumber, hints: u16) -> Result<bool> {
    let hints = hints & HEAP_XACT_HINT_MASK;
    if hints == 0 {
        return Ok(false);
    }
    let id = page_get_item_id(&page[..], off)?;
    if id.flags != LpFlags::Normal {
        return Ok(false);
    }
    let at = id.off as usize + T_INFOMASK;
    let cur = u16::from_le_bytes([page[at], page[at + 1]]);
    if cur & hints == hints {
        return Ok(false);
    }
    Ok(page.set_hint_bits(at, hints))
}

/// One page of a sequential scan with hint bits: calls `f(tid, tuple)` for every
/// tuple `snapshot` sees and sets the hint bits the visibility checks returned.
/// This is the per-page body `heapam::heap_scan` should use. Returns the number of
/// tuples whose hint bits were set.
pub fn scan_page_set_hints(
    backend: &Backend,
    page: &BufferReadGuard<'_>,
    block: crate::storage::BlockNumber,
    snapshot: &Snapshot,
    f: &mut dyn FnMut(Tid, &[u8]) -> Result<()>,
) -> Result<usize> {
    scan_page_tracked(backend, None, page, block, snapshot, f)
}

/// [`scan_page_set_hints`] of a page of `rel` (when given): a serializable
/// transaction also checks every version it examines for an rw-conflict out
/// (`heapam::ssi_conflict_out`).
pub(crate) fn scan_page_tracked(
    backend: &Backend,
    rel: Option<RelFileLocator>,
    page: &BufferReadGuard<'_>,
    block: crate::storage::BlockNumber,
    snapshot: &Snapshot,
    f: &mut dyn FnMut(Tid, &[u8]) -> Result<()>,
) -> Result<usize> {
    if page_is_new(&page[..]) {
        return Ok(0);
    }
    let mut hinted = 0;
    let mut pending = Vec::new();
    for item in heap_page_tuples(&page[..]) {
        let (off, t) = item?;
        let tid = Tid::new(block, off);
        let h = TupleHeader::read(t)?;
        let v = satisfies_mvcc(&visibility_info(&h, tid), snapshot, &*backend.txn)?;
        if v.hints & HEAP_XACT_HINT_MASK & !h.infomask != 0 {
            pending.push((off, v.hints));
        }
        if let Some(rel) = rel {
            super::heapam::ssi_conflict_out(backend, rel, &h, v.visible, snapshot)?;
        }
        if v.visible {
            f(tid, t)?;
        }
    }
    // After the walk: the walk holds `&[u8]` into the page while we'd write.
    for (off, hints) in pending {
        hinted += set_hint_bits_from_visibility(page, off, hints)? as usize;
    }
    Ok(hinted)
}
