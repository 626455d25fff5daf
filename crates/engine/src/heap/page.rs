//! Heap page operations: add, fetch, delete, update (HOT or not), row-lock marking,
//! freezing, pruning, and a walker over a page's tuples. All work on a page buffer
//! (`&mut [u8]` of BLCKSZ bytes) the caller has locked.
//!
//! Every change is described by an op ([`HeapInsertOp`], [`HeapXmaxOp`],
//! [`HeapUpdateOp`], [`HeapFreezeOp`], [`PruneOp`]), returned by the function that
//! made it. The op is what the integrator WAL-logs ([`HeapOp::encode`]); redo decodes
//! it and calls `apply` on the page as it was before the change, which gives the same
//! bytes as the original operation (tested below). Hint bits and `PD_PAGE_FULL` are
//! not covered: they are hints, not WAL-logged.

use crate::error::{Error, Result};
use crate::heap::tuple::*;
use crate::storage::page::*;
use crate::storage::BlockNumber;
use crate::txn::visibility::HtsvResult;

/// Initializes an empty heap page (no special space).
pub fn heap_page_init(page: &mut [u8]) {
    page_init(page, 0);
}

/// The tuple at `off`: its line pointer must be normal and its header sane.
pub fn heap_page_get_tuple(page: &[u8], off: OffsetNumber) -> Result<&[u8]> {
    let id = page_get_item_id(page, off)?;
    if id.flags != LpFlags::Normal {
        return Err(Error::corrupt(format!("heap line pointer {off} is not a tuple: {id:?}")));
    }
    let t = page_get_item(page, off)?;
    TupleHeader::read(t)?;
    Ok(t)
}

pub fn heap_page_get_tuple_mut(page: &mut [u8], off: OffsetNumber) -> Result<&mut [u8]> {
    heap_page_get_tuple(page, off)?;
    page_get_item_mut(page, off)
}

/// The decoded header of the tuple at `off` ([`heap_page_get_tuple`]'s checks,
/// one parse).
pub fn heap_page_get_header(page: &[u8], off: OffsetNumber) -> Result<TupleHeader> {
    let id = page_get_item_id(page, off)?;
    if id.flags != LpFlags::Normal {
        return Err(Error::corrupt(format!("heap line pointer {off} is not a tuple: {id:?}")));
    }
    TupleHeader::read(page_get_item(page, off)?)
}

/// Walks the normal line pointers of a page in offset order, yielding each tuple, or
/// an error for a bad one (the walk then goes on with the next offset).
pub fn heap_page_tuples(page: &[u8]) -> impl Iterator<Item = Result<(OffsetNumber, &[u8])>> + '_ {
    let max = page_max_offset_number(page);
    (FIRST_OFFSET_NUMBER..=max).filter_map(move |off| match page_get_item_id(page, off) {
        Ok(id) if id.flags == LpFlags::Normal => Some(heap_page_get_tuple(page, off).map(|t| (off, t))),
        Ok(_) => None,
        Err(e) => Some(Err(e)),
    })
}

/// PostgreSQL's PageSetPrunable: remember the oldest xid that may leave something to
/// prune.
pub fn page_set_prunable(page: &mut [u8], xid: TransactionId) {
    let cur = page_prune_xid(page);
    if cur == INVALID_TRANSACTION_ID || xid_precedes(xid, cur) {
        set_page_prune_xid(page, xid);
    }
}

/// Follows the HOT chain that starts at `root` (the TID an index entry points to) and
/// returns the offset of the first member `is_visible` accepts (PostgreSQL's
/// heap_hot_search_buffer, for one snapshot). A redirect is followed; a chain ends at
/// a member that is not HOT-updated, at a line pointer that is not a normal tuple,
/// at a tuple that is not heap-only (after the root), or where a member's xmin is not
/// the previous member's xmax (the slot was reused). `Ok(None)`: nothing visible.
pub fn heap_hot_search(
    page: &[u8],
    root: OffsetNumber,
    is_visible: &mut dyn FnMut(OffsetNumber, &TupleHeader) -> bool,
) -> Result<Option<OffsetNumber>> {
    let max = page_max_offset_number(page);
    let mut off = root;
    let mut prior_xmax: Option<TransactionId> = None;
    let mut first = true;
    // Each step visits a distinct line pointer unless the page is damaged: bound the
    // walk by the number of line pointers instead of looping forever.
    for _ in 0..=max as usize + 1 {
        if off == 0 || off > max {
            return Ok(None);
        }
        let id = page_get_item_id(page, off)?;
        match id.flags {
            LpFlags::Redirect if first => {
                off = id.off;
                first = false;
                continue;
            }
            LpFlags::Normal => {}
            _ => return Ok(None),
        }
        let h = heap_page_get_header(page, off)?;
        // The root itself is never heap-only; every member after it (or reached
        // through a redirect) is.
        if h.is_heap_only() == first {
            return Ok(None);
        }
        if prior_xmax.is_some_and(|x| x != h.xmin) {
            return Ok(None);
        }
        if is_visible(off, &h) {
            return Ok(Some(off));
        }
        if !h.is_hot_updated() {
            return Ok(None);
        }
        // A multixact xmax is not the successor's xmin (its updater member is):
        // the pure page code cannot resolve it, so the check is skipped.
        prior_xmax = (!h.xmax_is_multi()).then_some(h.xmax);
        first = false;
        off = h.ctid.offset;
    }
    Err(Error::corrupt(format!("HOT chain from offset {root} loops")))
}

// ---------------------------------------------------------------------------------
// Op encoding helpers (explicit little-endian).
// ---------------------------------------------------------------------------------

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let s = self
            .b
            .get(self.at..self.at.saturating_add(n))
            .ok_or_else(|| Error::corrupt("heap WAL record truncated"))?;
        self.at += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().unwrap()))
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn offsets(&mut self) -> Result<Vec<OffsetNumber>> {
        let n = self.u16()? as usize;
        (0..n).map(|_| self.u16()).collect()
    }
}

fn put_offsets(out: &mut Vec<u8>, v: &[OffsetNumber]) {
    out.extend_from_slice(&(v.len() as u16).to_le_bytes());
    for o in v {
        out.extend_from_slice(&o.to_le_bytes());
    }
}

// ---------------------------------------------------------------------------------
// Insert.
// ---------------------------------------------------------------------------------

/// A tuple placed on a page at `offset`. `tuple` holds the final bytes (header with
/// xmin, cid and ctid set). `cleared_flags` are the page flags the insert cleared
/// (PD_ALL_VISIBLE: the integrator also clears the visibility-map bit; and
/// PD_HAS_FREE_LINES when the search for a free line pointer found none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeapInsertOp {
    pub offset: OffsetNumber,
    pub cleared_flags: u16,
    /// The page had no line pointers before: redo (re)initializes it first, so that
    /// replay works on a block that was extended but never written (all zeroes).
    pub init_page: bool,
    pub tuple: Vec<u8>,
}

impl HeapInsertOp {
    /// Redo: places the tuple at the recorded offset.
    pub fn apply(&self, page: &mut [u8]) -> Result<()> {
        TupleHeader::read(&self.tuple)?;
        if self.init_page {
            heap_page_init(page);
        }
        match page_add_item(page, &self.tuple, Some(self.offset), PAI_OVERWRITE | PAI_IS_HEAP)? {
            Some(o) if o == self.offset => {}
            _ => return Err(Error::corrupt(format!("heap insert redo: no room at offset {}", self.offset))),
        }
        page_clear_flag(page, self.cleared_flags);
        Ok(())
    }

    fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.cleared_flags.to_le_bytes());
        out.push(self.init_page as u8);
        out.extend_from_slice(&(self.tuple.len() as u16).to_le_bytes());
        out.extend_from_slice(&self.tuple);
    }

    fn decode_from(r: &mut Reader) -> Result<HeapInsertOp> {
        let offset = r.u16()?;
        let cleared_flags = r.u16()?;
        let init_page = match r.u8()? {
            0 => false,
            1 => true,
            v => return Err(Error::corrupt(format!("heap insert record init flag {v}"))),
        };
        let n = r.u16()? as usize;
        Ok(HeapInsertOp { offset, cleared_flags, init_page, tuple: r.take(n)?.to_vec() })
    }
}

/// Stamps a new tuple version: xmin = `xid`, cmin = `cid`, no xmax, no hint bits.
fn stamp_new_tuple(t: &mut [u8], xid: TransactionId, cid: CommandId) {
    tuple_set_xmin(t, xid);
    tuple_set_xmax(t, INVALID_TRANSACTION_ID);
    tuple_set_cid(t, cid);
    tuple_clear_infomask(t, HEAP_XMAX_BITS | HEAP_XMIN_FROZEN | HEAP_MOVED | HEAP_UPDATED | HEAP_COMBOCID);
    tuple_or_infomask(t, HEAP_XMAX_INVALID);
    tuple_clear_infomask2(t, HEAP2_XACT_MASK);
}

/// Places `tuple` (from `form_tuple`) on the page as inserted by `xid`/`cid`, with its
/// ctid pointing to itself. Returns `Ok(None)` if it does not fit.
pub fn heap_page_add_tuple(
    page: &mut [u8],
    block: BlockNumber,
    tuple: &[u8],
    xid: TransactionId,
    cid: CommandId,
) -> Result<Option<HeapInsertOp>> {
    let mut t = tuple.to_vec();
    TupleHeader::read(&t).map_err(|e| Error::internal(format!("heap_page_add_tuple: {e}")))?;
    stamp_new_tuple(&mut t, xid, cid);
    place_tuple(page, block, t)
}

fn place_tuple(page: &mut [u8], block: BlockNumber, t: Vec<u8>) -> Result<Option<HeapInsertOp>> {
    let flags_before = page_flags(page);
    let init_page = page_max_offset_number(page) == 0 && page_prune_xid(page) == 0;
    let Some(off) = page_add_item(page, &t, None, PAI_IS_HEAP)? else {
        return Ok(None);
    };
    let stored = page_get_item_mut(page, off)?;
    tuple_set_ctid(stored, Tid::new(block, off));
    let tuple = stored.to_vec();
    page_clear_flag(page, PD_ALL_VISIBLE);
    let cleared_flags = flags_before & !page_flags(page);
    Ok(Some(HeapInsertOp { offset: off, cleared_flags, init_page, tuple }))
}

// ---------------------------------------------------------------------------------
// Multi-insert: many tuples on one page, one op (PostgreSQL's heap_multi_insert and
// its xl_heap_multi_insert record).
// ---------------------------------------------------------------------------------

/// One tuple of a [`HeapMultiInsertOp`]: where it went and its final bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiInsertItem {
    pub offset: OffsetNumber,
    pub tuple: Vec<u8>,
}

/// Tuples placed on one page by one call of [`heap_page_add_tuples`], in the order
/// they were placed. `init_page` and `cleared_flags` mean what they mean in
/// [`HeapInsertOp`], for the page as it was before the first tuple.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeapMultiInsertOp {
    pub init_page: bool,
    pub cleared_flags: u16,
    pub items: Vec<MultiInsertItem>,
}

impl HeapMultiInsertOp {
    /// Redo: places every tuple at its recorded offset, in order.
    pub fn apply(&self, page: &mut [u8]) -> Result<()> {
        if self.init_page {
            heap_page_init(page);
        }
        for it in &self.items {
            TupleHeader::read(&it.tuple)?;
            match page_add_item(page, &it.tuple, Some(it.offset), PAI_OVERWRITE | PAI_IS_HEAP)? {
                Some(o) if o == it.offset => {}
                _ => return Err(Error::corrupt(format!("heap multi-insert redo: no room at offset {}", it.offset))),
            }
        }
        page_clear_flag(page, self.cleared_flags);
        Ok(())
    }

    fn encode_into(&self, out: &mut Vec<u8>) {
        out.push(self.init_page as u8);
        out.extend_from_slice(&self.cleared_flags.to_le_bytes());
        out.extend_from_slice(&(self.items.len() as u16).to_le_bytes());
        for it in &self.items {
            out.extend_from_slice(&it.offset.to_le_bytes());
            out.extend_from_slice(&(it.tuple.len() as u16).to_le_bytes());
            out.extend_from_slice(&it.tuple);
        }
    }

    fn decode_from(r: &mut Reader) -> Result<HeapMultiInsertOp> {
        let init_page = match r.u8()? {
            0 => false,
            1 => true,
            v => return Err(Error::corrupt(format!("heap multi-insert record init flag {v}"))),
        };
        let cleared_flags = r.u16()?;
        let n = r.u16()? as usize;
        let mut items = Vec::with_capacity(n.min(MAX_HEAP_TUPLES_PER_PAGE));
        for _ in 0..n {
            let offset = r.u16()?;
            let len = r.u16()? as usize;
            items.push(MultiInsertItem { offset, tuple: r.take(len)?.to_vec() });
        }
        Ok(HeapMultiInsertOp { init_page, cleared_flags, items })
    }
}

/// Places tuples from the front of `tuples` (each from `form_tuple`) on the page as
/// inserted by `xid`/`cid`, as many as fit, in order, and stops at the first that
/// does not. `frozen` stamps them with `HEAP_XMIN_FROZEN` (COPY FREEZE: the xmin is
/// kept, as PostgreSQL's HEAP_INSERT_FROZEN does). Returns the op (no items when
/// not even the first tuple fits; the page is then unchanged).
pub fn heap_page_add_tuples<T: AsRef<[u8]>>(
    page: &mut [u8],
    block: BlockNumber,
    tuples: &[T],
    xid: TransactionId,
    cid: CommandId,
    frozen: bool,
) -> Result<HeapMultiInsertOp> {
    let flags_before = page_flags(page);
    let init_page = page_max_offset_number(page) == 0 && page_prune_xid(page) == 0;
    let mut items = Vec::new();
    for tuple in tuples {
        let tuple = tuple.as_ref();
        if page_heap_free_space(page) < tuple.len() {
            break;
        }
        let mut t = tuple.to_vec();
        TupleHeader::read(&t).map_err(|e| Error::internal(format!("heap_page_add_tuples: {e}")))?;
        stamp_new_tuple(&mut t, xid, cid);
        if frozen {
            tuple_or_infomask(&mut t, HEAP_XMIN_FROZEN);
        }
        let Some(off) = page_add_item(page, &t, None, PAI_IS_HEAP)? else {
            break;
        };
        let stored = page_get_item_mut(page, off)?;
        tuple_set_ctid(stored, Tid::new(block, off));
        items.push(MultiInsertItem { offset: off, tuple: stored.to_vec() });
    }
    if !items.is_empty() {
        page_clear_flag(page, PD_ALL_VISIBLE);
    }
    let cleared_flags = flags_before & !page_flags(page);
    Ok(HeapMultiInsertOp { init_page, cleared_flags, items })
}

// ---------------------------------------------------------------------------------
// Delete, lock, and the old version of an update: all set xmax.
// ---------------------------------------------------------------------------------

/// A change of a tuple's xmax and the bits that describe it: DELETE, SELECT FOR ...
/// (row locks), and the old version of an UPDATE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeapXmaxOp {
    pub offset: OffsetNumber,
    pub xmax: TransactionId,
    /// New t_cid (cmax), if the change sets it (delete and update do; locks do not).
    pub cid: Option<CommandId>,
    pub infomask_clear: u16,
    pub infomask_set: u16,
    pub infomask2_clear: u16,
    pub infomask2_set: u16,
    /// New t_ctid, if it changes (update: the new version; lock: itself).
    pub ctid: Option<Tid>,
    /// Page flags cleared (PD_ALL_VISIBLE for delete and update).
    pub cleared_flags: u16,
    /// Whether the page's pd_prune_xid is lowered to `xmax` (delete and update).
    pub set_prunable: bool,
}

impl HeapXmaxOp {
    pub fn apply(&self, page: &mut [u8]) -> Result<()> {
        let t = heap_page_get_tuple_mut(page, self.offset)?;
        tuple_set_xmax(t, self.xmax);
        if let Some(c) = self.cid {
            tuple_set_cid(t, c);
        }
        let m = (tuple_infomask(t) & !self.infomask_clear) | self.infomask_set;
        tuple_set_infomask(t, m);
        let m2 = (tuple_infomask2(t) & !self.infomask2_clear) | self.infomask2_set;
        tuple_set_infomask2(t, m2);
        if let Some(tid) = self.ctid {
            tuple_set_ctid(t, tid);
        }
        page_clear_flag(page, self.cleared_flags);
        if self.set_prunable {
            page_set_prunable(page, self.xmax);
        }
        Ok(())
    }

    fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.xmax.to_le_bytes());
        let has = (self.cid.is_some() as u8) | (self.ctid.is_some() as u8) << 1 | (self.set_prunable as u8) << 2;
        out.push(has);
        out.extend_from_slice(&self.cid.unwrap_or(0).to_le_bytes());
        for v in [self.infomask_clear, self.infomask_set, self.infomask2_clear, self.infomask2_set] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&self.ctid.unwrap_or(Tid::INVALID).encode());
        out.extend_from_slice(&self.cleared_flags.to_le_bytes());
    }

    fn decode_from(r: &mut Reader) -> Result<HeapXmaxOp> {
        let offset = r.u16()?;
        let xmax = r.u32()?;
        let has = r.u8()?;
        let cid = r.u32()?;
        let (ic, is, i2c, i2s) = (r.u16()?, r.u16()?, r.u16()?, r.u16()?);
        let ctid = Tid::decode(r.take(6)?);
        let cleared_flags = r.u16()?;
        Ok(HeapXmaxOp {
            offset,
            xmax,
            cid: (has & 1 != 0).then_some(cid),
            infomask_clear: ic,
            infomask_set: is,
            infomask2_clear: i2c,
            infomask2_set: i2s,
            ctid: (has & 2 != 0).then_some(ctid),
            cleared_flags,
            set_prunable: has & 4 != 0,
        })
    }
}

fn apply_new(op: HeapXmaxOp, page: &mut [u8]) -> Result<HeapXmaxOp> {
    op.apply(page)?;
    Ok(op)
}

/// Marks the tuple at `off` deleted by `xmax` in command `cid`: xmax and cmax set,
/// every old xmax bit cleared, HEAP_KEYS_UPDATED set (a delete conflicts with
/// key-share lockers), ctid unchanged. Clears PD_ALL_VISIBLE, lowers pd_prune_xid.
/// The caller has decided (under the exclusive content lock) that the delete is
/// allowed. cmax overwrites cmin: combo command ids are not implemented yet.
pub fn heap_page_delete(
    page: &mut [u8],
    off: OffsetNumber,
    xmax: TransactionId,
    cid: CommandId,
) -> Result<HeapXmaxOp> {
    let op = HeapXmaxOp {
        offset: off,
        xmax,
        cid: Some(cid),
        infomask_clear: HEAP_XMAX_BITS | HEAP_MOVED,
        infomask_set: 0,
        infomask2_clear: HEAP_KEYS_UPDATED | HEAP_HOT_UPDATED,
        infomask2_set: HEAP_KEYS_UPDATED,
        ctid: None,
        cleared_flags: PD_ALL_VISIBLE & page_flags(page),
        set_prunable: true,
    };
    apply_new(op, page)
}

/// Row-lock strengths (SELECT FOR KEY SHARE / SHARE / NO KEY UPDATE / UPDATE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowLockMode {
    KeyShare,
    Share,
    NoKeyExclusive,
    Exclusive,
}

impl RowLockMode {
    /// The t_infomask bits for a lock-only xmax of this strength.
    pub fn infomask_bits(self) -> u16 {
        HEAP_XMAX_LOCK_ONLY
            | match self {
                RowLockMode::KeyShare => HEAP_XMAX_KEYSHR_LOCK,
                RowLockMode::Share => HEAP_XMAX_SHR_LOCK,
                RowLockMode::NoKeyExclusive | RowLockMode::Exclusive => HEAP_XMAX_EXCL_LOCK,
            }
    }

    /// FOR UPDATE also sets HEAP_KEYS_UPDATED, so that it conflicts with key-share.
    pub fn infomask2_bits(self) -> u16 {
        if self == RowLockMode::Exclusive {
            HEAP_KEYS_UPDATED
        } else {
            0
        }
    }

    /// The strength recorded in a tuple's lock-only xmax, if it is one.
    pub fn from_tuple(h: &TupleHeader) -> Option<RowLockMode> {
        if !h.xmax_is_lock_only() {
            return None;
        }
        Some(match h.infomask & HEAP_LOCK_MASK {
            HEAP_XMAX_SHR_LOCK => RowLockMode::Share,
            HEAP_XMAX_KEYSHR_LOCK => RowLockMode::KeyShare,
            HEAP_XMAX_EXCL_LOCK if h.keys_updated() => RowLockMode::Exclusive,
            HEAP_XMAX_EXCL_LOCK => RowLockMode::NoKeyExclusive,
            _ => return None,
        })
    }
}

/// Marks the tuple at `off` locked by `locker` (a single locker; heapam replaces
/// xmax by a multixact when other lockers stay, heap README "MultiXacts"). xmax is set with LOCK_ONLY and the strength
/// bits; ctid is reset to the tuple itself; cid and PD_ALL_VISIBLE are unchanged.
pub fn heap_page_lock_tuple(
    page: &mut [u8],
    block: BlockNumber,
    off: OffsetNumber,
    locker: TransactionId,
    mode: RowLockMode,
) -> Result<HeapXmaxOp> {
    let op = HeapXmaxOp {
        offset: off,
        xmax: locker,
        cid: None,
        infomask_clear: HEAP_XMAX_BITS | HEAP_MOVED,
        infomask_set: mode.infomask_bits(),
        infomask2_clear: HEAP_KEYS_UPDATED,
        infomask2_set: mode.infomask2_bits(),
        ctid: Some(Tid::new(block, off)),
        cleared_flags: 0,
        set_prunable: false,
    };
    apply_new(op, page)
}

// ---------------------------------------------------------------------------------
// Update.
// ---------------------------------------------------------------------------------

/// An UPDATE: the old version gets xmax and a ctid pointing to the new version; the
/// new version is inserted (on the same page, or on `new_block`). With `hot`, the old
/// version is HEAP_HOT_UPDATED and the new one HEAP_ONLY_TUPLE (same page only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeapUpdateOp {
    pub old: HeapXmaxOp,
    pub new: HeapInsertOp,
    pub same_page: bool,
    pub new_block: BlockNumber,
}

impl HeapUpdateOp {
    /// Redo on the old version's page (for a same-page update, this is the only page:
    /// both halves are applied).
    pub fn apply_old_page(&self, page: &mut [u8]) -> Result<()> {
        if self.same_page {
            self.new.apply(page)?;
        }
        self.old.apply(page)
    }

    /// Redo on the new version's page (a different page than the old version's).
    pub fn apply_new_page(&self, page: &mut [u8]) -> Result<()> {
        if self.same_page {
            return Err(Error::internal("apply_new_page on a same-page update"));
        }
        self.new.apply(page)
    }
}

/// Flags for [`heap_page_update`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpdateFlags {
    /// Heap-only update: no indexed column changed and the new version stays on the
    /// page. Requires `new_page == None`.
    pub hot: bool,
    /// A key column (one a foreign key could reference) changed.
    pub keys_updated: bool,
}

/// Updates the tuple at `old_off` of `old_page` (block `old_block`) by `xid`/`cid`:
/// inserts `new_tuple` (from `form_tuple`) on `new_page` or, if `None`, on the same
/// page, and marks the old version. Returns `Ok(None)` if the new version does not
/// fit (nothing changes but, possibly, the `PD_HAS_FREE_LINES` hint); the caller then sets PD_PAGE_FULL on a same-page attempt
/// and retries on another page without HOT.
#[allow(clippy::too_many_arguments)]
pub fn heap_page_update(
    old_page: &mut [u8],
    old_block: BlockNumber,
    old_off: OffsetNumber,
    new_page: Option<(&mut [u8], BlockNumber)>,
    new_tuple: &[u8],
    xid: TransactionId,
    cid: CommandId,
    flags: UpdateFlags,
) -> Result<Option<HeapUpdateOp>> {
    if flags.hot && new_page.is_some() {
        return Err(Error::internal("a HOT update must stay on the same page"));
    }
    heap_page_get_tuple(old_page, old_off)?;
    let mut t = new_tuple.to_vec();
    TupleHeader::read(&t).map_err(|e| Error::internal(format!("heap_page_update: {e}")))?;
    stamp_new_tuple(&mut t, xid, cid);
    tuple_or_infomask(&mut t, HEAP_UPDATED);
    if flags.hot {
        tuple_or_infomask2(&mut t, HEAP_ONLY_TUPLE);
    }
    let same_page = new_page.is_none();
    let (new_op, new_block) = match new_page {
        Some((p, b)) => (place_tuple(p, b, t)?, b),
        None => (place_tuple(old_page, old_block, t)?, old_block),
    };
    let Some(new) = new_op else { return Ok(None) };
    let mut set2 = 0;
    if flags.keys_updated {
        set2 |= HEAP_KEYS_UPDATED;
    }
    if flags.hot {
        set2 |= HEAP_HOT_UPDATED;
    }
    let old = HeapXmaxOp {
        offset: old_off,
        xmax: xid,
        cid: Some(cid),
        infomask_clear: HEAP_XMAX_BITS | HEAP_MOVED,
        infomask_set: 0,
        infomask2_clear: HEAP_KEYS_UPDATED | HEAP_HOT_UPDATED,
        infomask2_set: set2,
        ctid: Some(Tid::new(new_block, new.offset)),
        cleared_flags: PD_ALL_VISIBLE & page_flags(old_page),
        set_prunable: true,
    };
    let old = apply_new(old, old_page)?;
    Ok(Some(HeapUpdateOp { old, new, same_page, new_block }))
}

// ---------------------------------------------------------------------------------
// Freeze.
// ---------------------------------------------------------------------------------

/// What to do to one tuple when freezing (decided by VACUUM from the xid horizons).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreezeItem {
    pub offset: OffsetNumber,
    /// xmin committed long ago: set xmin = FrozenTransactionId and the frozen bits.
    pub freeze_xmin: bool,
    /// xmax aborted, or a lock-only xmax of a finished transaction: remove it.
    pub clear_xmax: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeapFreezeOp {
    pub items: Vec<FreezeItem>,
}

impl HeapFreezeOp {
    pub fn apply(&self, page: &mut [u8]) -> Result<()> {
        for it in &self.items {
            let t = heap_page_get_tuple_mut(page, it.offset)?;
            if it.freeze_xmin {
                tuple_set_xmin(t, FROZEN_TRANSACTION_ID);
                tuple_or_infomask(t, HEAP_XMIN_FROZEN);
            }
            if it.clear_xmax {
                tuple_set_xmax(t, INVALID_TRANSACTION_ID);
                tuple_clear_infomask(t, HEAP_XMAX_BITS);
                tuple_or_infomask(t, HEAP_XMAX_INVALID);
                tuple_clear_infomask2(t, HEAP_KEYS_UPDATED | HEAP_HOT_UPDATED);
            }
        }
        Ok(())
    }
}

/// Freezes the given tuples (see [`FreezeItem`]).
pub fn heap_page_freeze(page: &mut [u8], items: Vec<FreezeItem>) -> Result<HeapFreezeOp> {
    let op = HeapFreezeOp { items };
    // Check every offset first so that an error leaves the page unchanged.
    for it in &op.items {
        heap_page_get_tuple(page, it.offset)?;
    }
    op.apply(page)?;
    Ok(op)
}

// ---------------------------------------------------------------------------------
// Pruning.
// ---------------------------------------------------------------------------------

/// The line-pointer changes of one pruning (or of VACUUM's second pass, which only
/// sets dead line pointers unused once their index entries are gone).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PruneOp {
    /// (root, target): the root line pointer becomes a redirect to `target`.
    pub redirected: Vec<(OffsetNumber, OffsetNumber)>,
    /// Line pointers set dead (no storage): index entries may still point here.
    pub now_dead: Vec<OffsetNumber>,
    /// Line pointers set unused: heap-only tuples nothing points to any more.
    pub now_unused: Vec<OffsetNumber>,
    /// The page's pd_prune_xid afterwards.
    pub new_prune_xid: TransactionId,
}

impl PruneOp {
    /// Whether the op changes any line pointer (if not, there is nothing to WAL-log).
    pub fn is_empty(&self) -> bool {
        self.redirected.is_empty() && self.now_dead.is_empty() && self.now_unused.is_empty()
    }

    /// Applies the line-pointer changes, compacts the page, clears PD_PAGE_FULL and
    /// sets pd_prune_xid.
    pub fn apply(&self, page: &mut [u8]) -> Result<()> {
        page_validate(page)?;
        self.apply_to_valid(page)
    }

    /// [`PruneOp::apply`] to a page the caller has just validated.
    fn apply_to_valid(&self, page: &mut [u8]) -> Result<()> {
        let max = page_max_offset_number(page);
        let check = |o: OffsetNumber| {
            if o == 0 || o > max {
                Err(Error::corrupt(format!("prune record offset {o} beyond {max}")))
            } else {
                Ok(())
            }
        };
        for &(from, to) in &self.redirected {
            check(from)?;
            check(to)?;
        }
        for &o in self.now_dead.iter().chain(&self.now_unused) {
            check(o)?;
        }
        for &(from, to) in &self.redirected {
            page_set_item_id(page, from, ItemId::redirect(to))?;
        }
        for &o in &self.now_dead {
            page_set_item_id(page, o, ItemId::dead())?;
        }
        for &o in &self.now_unused {
            page_set_item_id(page, o, ItemId::UNUSED)?;
        }
        // Still valid: line pointers only lost storage or became redirects
        // to offsets checked above.
        crate::storage::page::page_repair_fragmentation_valid(page);
        page_clear_flag(page, PD_PAGE_FULL);
        set_page_prune_xid(page, self.new_prune_xid);
        Ok(())
    }

    fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.new_prune_xid.to_le_bytes());
        out.extend_from_slice(&(self.redirected.len() as u16).to_le_bytes());
        for (a, b) in &self.redirected {
            out.extend_from_slice(&a.to_le_bytes());
            out.extend_from_slice(&b.to_le_bytes());
        }
        put_offsets(out, &self.now_dead);
        put_offsets(out, &self.now_unused);
    }

    fn decode_from(r: &mut Reader) -> Result<PruneOp> {
        let new_prune_xid = r.u32()?;
        let n = r.u16()? as usize;
        let redirected = (0..n).map(|_| Ok((r.u16()?, r.u16()?))).collect::<Result<_>>()?;
        Ok(PruneOp { redirected, now_dead: r.offsets()?, now_unused: r.offsets()?, new_prune_xid })
    }
}

/// What [`heap_page_prune`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PruneResult {
    pub op: PruneOp,
    /// Bytes of free space gained (`page_free_space` after minus before).
    pub freed: usize,
    /// Tuples removed.
    pub ndeleted: usize,
}

/// Prunes a heap page (PostgreSQL's heap_page_prune): removes tuples no snapshot
/// can see, collapses HOT chains (the root line pointer becomes a redirect to the
/// first surviving member, or dead if the whole chain is dead), sets dead heap-only
/// line pointers unused, and compacts the page. Needs the page's cleanup lock
/// (exclusive content lock and no other pin): tuples move. Returns the op to
/// WAL-log unless empty.
///
/// `status(h)` is the tuple's vacuum status against the xmin horizon (the txn
/// layer's `satisfies_vacuum`); `Dead` must mean dead to every snapshot. A status
/// that cannot be read is to be given as `DeleteInProgress` (kept, and so is
/// everything after it in its chain).
///
/// The xmaxes along a chain are **not** in xid order: concurrent updaters of a row
/// take their xids before queueing for it, so a member can be `RecentlyDead`
/// (xmax at or after the horizon) while a later one is `Dead` (an older xmax that
/// committed later). So, as in PostgreSQL's heap_prune_chain, a chain is walked
/// past `RecentlyDead` members, and everything up to its last `Dead` member in the
/// run of `Dead`/`RecentlyDead` members that starts at the root is removed: a
/// `RecentlyDead` member before a `Dead` one is dead too (its updater committed
/// before the `Dead` member's, which precedes every snapshot), the status is only
/// too coarse to say so. The walk then goes on to the end of the chain, so that
/// every member a reader can reach is marked as reached: only heap-only tuples no
/// chain reaches are removed as unreachable (README "Pruning", rule 4).
pub fn heap_page_prune(page: &mut [u8], status: &dyn Fn(&TupleHeader) -> HtsvResult) -> Result<PruneResult> {
    page_validate_header(page)?;
    let before = page_free_space(page);
    let max = page_max_offset_number(page) as usize;
    if max > MAX_HEAP_TUPLES_PER_PAGE {
        return Err(Error::corrupt(format!("heap page with {max} line pointers")));
    }
    // One pass over the line pointers validates the page (as page_validate)
    // and reads what pruning needs of each into `slots` (index 0 unused):
    // the walks below read no page bytes, and each status is computed once.
    let mut slots = [Slot::EMPTY; MAX_HEAP_TUPLES_PER_PAGE + 1];
    page_validate_items(page, |off, id| {
        let slot = &mut slots[off as usize];
        match id.flags {
            LpFlags::Normal => *slot = Slot::of(&TupleHeader::read(&page[id.off as usize..(id.off + id.len) as usize])?, status),
            LpFlags::Redirect => *slot = Slot { next: id.off, flags: Slot::REDIRECT, ..Slot::EMPTY },
            LpFlags::Unused | LpFlags::Dead => {}
        }
        Ok(())
    })?;
    // One buffer for every chain's members (cleared per root): at most the
    // page's line pointers.
    let mut chain = [0u16; MAX_HEAP_TUPLES_PER_PAGE];
    let mut op = PruneOp::default();
    let mut ndeleted = 0;
    for root in 1..=max {
        let r = slots[root];
        if r.flags & Slot::PROCESSED != 0 {
            continue;
        }
        let is_redirect = r.flags & Slot::REDIRECT != 0;
        if !is_redirect && (r.flags & Slot::TUPLE == 0 || r.flags & Slot::HEAP_ONLY != 0) {
            // Unused, dead, or a heap-only tuple (reached from its root).
            continue;
        }
        slots[root].flags |= Slot::PROCESSED;
        // The chain's members in order; chain[..removable] are removed.
        let mut len = 0;
        let mut removable = 0;
        // Whether every member so far is Dead or RecentlyDead.
        let mut committed_run = true;
        let mut next = if is_redirect { r.next as usize } else { root };
        let mut prior_xmax = None;
        while next >= 1 && next <= max && (next == root || slots[next].flags & Slot::PROCESSED == 0) {
            let m = slots[next];
            if m.flags & Slot::TUPLE == 0 {
                break;
            }
            if (is_redirect || len > 0) && m.flags & Slot::HEAP_ONLY == 0 {
                break;
            }
            if prior_xmax.is_some_and(|x| x != m.xmin) {
                break;
            }
            chain[len] = next as u16;
            len += 1;
            slots[next].flags |= Slot::PROCESSED;
            match m.status {
                HtsvResult::Dead if committed_run => removable = len,
                HtsvResult::Dead | HtsvResult::RecentlyDead => {}
                _ => committed_run = false,
            }
            // A Live member that is marked HOT-updated lost its update (the
            // updater aborted): its successor is no longer part of the chain and
            // is removed as unreachable once dead.
            if m.flags & Slot::HOT_UPDATED == 0 || m.status == HtsvResult::Live {
                break;
            }
            // A multixact xmax (a key-share locker next to the no-key updater)
            // is not the successor's xmin: the check is skipped for it.
            prior_xmax = (m.flags & Slot::XMAX_MULTI == 0).then_some(m.xmax);
            next = m.next as usize;
        }
        if len == 0 {
            // A redirect whose chain is gone: nothing left to reach through it.
            op.now_dead.push(root as OffsetNumber);
            slots[root].flags |= Slot::GONE;
            continue;
        }
        if removable == 0 {
            continue;
        }
        ndeleted += removable;
        // Chain members other than the root lose their line pointer entirely.
        for &o in &chain[..removable] {
            slots[o as usize].flags |= Slot::GONE;
            if o as usize != root {
                op.now_unused.push(o);
            }
        }
        slots[root].flags |= Slot::GONE;
        if removable == len {
            op.now_dead.push(root as OffsetNumber);
        } else {
            op.redirected.push((root as OffsetNumber, chain[removable]));
        }
    }
    // Dead heap-only tuples no chain reached (their inserter aborted, or the
    // chain's root was pruned earlier while they stayed) are unreachable from
    // indexes and go; of the tuples that stay, the oldest xmax that may still
    // make one prunable is the page's new pd_prune_xid.
    let mut prune_xid = INVALID_TRANSACTION_ID;
    for (o, m) in slots.iter_mut().enumerate().take(max + 1).skip(1) {
        if m.flags & (Slot::TUPLE | Slot::GONE) != Slot::TUPLE {
            continue;
        }
        if m.flags & (Slot::PROCESSED | Slot::HEAP_ONLY) == Slot::HEAP_ONLY && m.status == HtsvResult::Dead {
            op.now_unused.push(o as OffsetNumber);
            ndeleted += 1;
            continue;
        }
        if m.flags & Slot::XMAX_PRUNABLE != 0 && (prune_xid == INVALID_TRANSACTION_ID || xid_precedes(m.xmax, prune_xid)) {
            prune_xid = m.xmax;
        }
    }
    op.new_prune_xid = prune_xid;
    if op.is_empty() {
        // Only hints change: not WAL-logged.
        page_clear_flag(page, PD_PAGE_FULL);
        set_page_prune_xid(page, prune_xid);
    } else {
        op.apply_to_valid(page)?;
    }
    let freed = page_free_space(page).saturating_sub(before);
    Ok(PruneResult { op, freed, ndeleted })
}

/// What [`heap_page_prune`] needs of one line pointer, read once.
#[derive(Clone, Copy)]
struct Slot {
    xmin: TransactionId,
    xmax: TransactionId,
    /// A redirect's target, or the tuple's ctid offset (its successor's).
    next: OffsetNumber,
    /// The `Slot::*` bits.
    flags: u8,
    /// The tuple's vacuum status.
    status: HtsvResult,
}

impl Slot {
    /// An LP_NORMAL tuple.
    const TUPLE: u8 = 1;
    /// An LP_REDIRECT.
    const REDIRECT: u8 = 2;
    const HEAP_ONLY: u8 = 4;
    const HOT_UPDATED: u8 = 8;
    const XMAX_MULTI: u8 = 16;
    /// The xmax may make the tuple prunable later (a plain updater or
    /// deleter: not invalid, lock-only, multi or special).
    const XMAX_PRUNABLE: u8 = 32;
    /// Reached by a chain walk.
    const PROCESSED: u8 = 64;
    /// Losing its storage or line pointer.
    const GONE: u8 = 128;

    const EMPTY: Slot = Slot { xmin: 0, xmax: 0, next: 0, flags: 0, status: HtsvResult::Live };

    /// The slot of the tuple with header `h`.
    #[inline]
    fn of(h: &TupleHeader, status: &dyn Fn(&TupleHeader) -> HtsvResult) -> Slot {
        // Most tuples of a page being pruned are plainly live: the inserter
        // hinted committed (or frozen), never deleted or locked. `status`
        // would say Live; it is not asked.
        let plain_live = h.xmax_invalid() && !h.xmax_is_multi() && (h.xmin_committed() || h.xmin_frozen());
        let prunable =
            !(h.xmax_invalid() || h.xmax_is_lock_only() || h.xmax_is_multi() || h.xmax < FIRST_NORMAL_TRANSACTION_ID);
        let flags = Slot::TUPLE
            | if h.is_heap_only() { Slot::HEAP_ONLY } else { 0 }
            | if h.is_hot_updated() { Slot::HOT_UPDATED } else { 0 }
            | if h.xmax_is_multi() { Slot::XMAX_MULTI } else { 0 }
            | if prunable { Slot::XMAX_PRUNABLE } else { 0 };
        let status = if plain_live { HtsvResult::Live } else { status(h) };
        Slot { xmin: h.xmin, xmax: h.xmax, next: h.ctid.offset, flags, status }
    }
}

// ---------------------------------------------------------------------------------
// WAL encoding of all heap ops.
// ---------------------------------------------------------------------------------

/// Any heap page change, as WAL-logged. `encode` gives explicit little-endian bytes
/// (a tag byte, then the op's fields); `decode` checks lengths and returns
/// `Error::corrupt` on a truncated or unknown record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeapOp {
    Insert(HeapInsertOp),
    /// Delete or row lock.
    Xmax(HeapXmaxOp),
    Update(HeapUpdateOp),
    Freeze(HeapFreezeOp),
    Prune(PruneOp),
    /// Several tuples inserted on one page (COPY, INSERT ... SELECT).
    MultiInsert(HeapMultiInsertOp),
    /// VACUUM found every tuple of the page visible to all: PD_ALL_VISIBLE set on
    /// the page, and the visibility-map bits `vm_flags` (heap::visibilitymap).
    Visible { vm_flags: u8 },
}

const TAG_INSERT: u8 = 1;
const TAG_XMAX: u8 = 2;
const TAG_UPDATE: u8 = 3;
const TAG_FREEZE: u8 = 4;
const TAG_PRUNE: u8 = 5;
const TAG_MULTI_INSERT: u8 = 6;
const TAG_VISIBLE: u8 = 7;

impl HeapOp {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            HeapOp::Insert(op) => {
                out.push(TAG_INSERT);
                op.encode_into(&mut out);
            }
            HeapOp::Xmax(op) => {
                out.push(TAG_XMAX);
                op.encode_into(&mut out);
            }
            HeapOp::Update(op) => {
                out.push(TAG_UPDATE);
                out.push(op.same_page as u8);
                out.extend_from_slice(&op.new_block.to_le_bytes());
                op.old.encode_into(&mut out);
                op.new.encode_into(&mut out);
            }
            HeapOp::Freeze(op) => {
                out.push(TAG_FREEZE);
                out.extend_from_slice(&(op.items.len() as u16).to_le_bytes());
                for it in &op.items {
                    out.extend_from_slice(&it.offset.to_le_bytes());
                    out.push(it.freeze_xmin as u8 | (it.clear_xmax as u8) << 1);
                }
            }
            HeapOp::Prune(op) => {
                out.push(TAG_PRUNE);
                op.encode_into(&mut out);
            }
            HeapOp::MultiInsert(op) => {
                out.push(TAG_MULTI_INSERT);
                op.encode_into(&mut out);
            }
            HeapOp::Visible { vm_flags } => {
                out.push(TAG_VISIBLE);
                out.push(*vm_flags);
            }
        }
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<HeapOp> {
        let mut r = Reader { b: bytes, at: 0 };
        let op = match r.u8()? {
            TAG_INSERT => HeapOp::Insert(HeapInsertOp::decode_from(&mut r)?),
            TAG_XMAX => HeapOp::Xmax(HeapXmaxOp::decode_from(&mut r)?),
            TAG_UPDATE => {
                let same_page = r.u8()? != 0;
                let new_block = r.u32()?;
                let old = HeapXmaxOp::decode_from(&mut r)?;
                let new = HeapInsertOp::decode_from(&mut r)?;
                HeapOp::Update(HeapUpdateOp { old, new, same_page, new_block })
            }
            TAG_FREEZE => {
                let n = r.u16()? as usize;
                let items = (0..n)
                    .map(|_| {
                        let offset = r.u16()?;
                        let f = r.u8()?;
                        Ok(FreezeItem { offset, freeze_xmin: f & 1 != 0, clear_xmax: f & 2 != 0 })
                    })
                    .collect::<Result<_>>()?;
                HeapOp::Freeze(HeapFreezeOp { items })
            }
            TAG_PRUNE => HeapOp::Prune(PruneOp::decode_from(&mut r)?),
            TAG_MULTI_INSERT => HeapOp::MultiInsert(HeapMultiInsertOp::decode_from(&mut r)?),
            TAG_VISIBLE => HeapOp::Visible { vm_flags: r.u8()? },
            t => return Err(Error::corrupt(format!("unknown heap WAL record tag {t}"))),
        };
        if r.at != bytes.len() {
            return Err(Error::corrupt("trailing bytes in heap WAL record"));
        }
        Ok(op)
    }

    /// Redo on a single page: everything except the new-page half of a cross-page
    /// update (use [`HeapUpdateOp::apply_new_page`] for that page).
    pub fn apply(&self, page: &mut [u8]) -> Result<()> {
        match self {
            HeapOp::Insert(op) => op.apply(page),
            HeapOp::Xmax(op) => op.apply(page),
            HeapOp::Update(op) => op.apply_old_page(page),
            HeapOp::Freeze(op) => op.apply(page),
            HeapOp::Prune(op) => op.apply(page),
            HeapOp::MultiInsert(op) => op.apply(page),
            HeapOp::Visible { .. } => {
                page_set_flag(page, PD_ALL_VISIBLE);
                Ok(())
            }
        }
    }

    /// The visibility-map bits this op takes away from registered block `block_id`
    /// (heap README, "The visibility map"): both bits where it cleared PD_ALL_VISIBLE;
    /// all-frozen where it stored an xmax (a delete, a row lock, the old half of an
    /// update), which leaves the page all-visible only for a lock. Redo clears
    /// exactly these; a live change may skip the all-frozen clear when the page has
    /// no PD_ALL_VISIBLE (the bit cannot be set then).
    pub fn vm_bits_cleared(&self, block_id: u8) -> u8 {
        use super::visibilitymap::{VM_ALL_FROZEN, VM_VALID_BITS};
        let cleared = |flags: u16| if flags & PD_ALL_VISIBLE != 0 { VM_VALID_BITS } else { 0 };
        let xmax = |op: &HeapXmaxOp| VM_ALL_FROZEN | cleared(op.cleared_flags);
        match (self, block_id) {
            (HeapOp::Insert(op), 0) => cleared(op.cleared_flags),
            (HeapOp::MultiInsert(op), 0) => cleared(op.cleared_flags),
            (HeapOp::Xmax(op), 0) => xmax(op),
            (HeapOp::Update(op), 0) if op.same_page => xmax(&op.old) | cleared(op.new.cleared_flags),
            (HeapOp::Update(op), 0) => xmax(&op.old),
            (HeapOp::Update(op), 1) => cleared(op.new.cleared_flags),
            _ => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BLCKSZ;
    use rand::{rngs::SmallRng, Rng, SeedableRng};

    fn desc() -> Vec<AttrDesc> {
        vec![AttrDesc::fixed(4), AttrDesc::varlena()]
    }

    fn row(k: u32, text: &str) -> Vec<u8> {
        form_tuple(&desc(), &[Some(Datum::ByVal(k as u64)), Some(Datum::Varlena(text.as_bytes()))]).unwrap()
    }

    fn new_page() -> Vec<u8> {
        let mut p = vec![0u8; BLCKSZ];
        heap_page_init(&mut p);
        p
    }

    #[test]
    fn visible_op_sets_the_flag_and_changes_name_the_map_bits_they_clear() {
        use crate::heap::visibilitymap::{VM_ALL_FROZEN, VM_ALL_VISIBLE, VM_VALID_BITS};
        let before = new_page();
        let mut after = before.clone();
        page_set_flag(&mut after, PD_ALL_VISIBLE);
        let op = HeapOp::Visible { vm_flags: VM_ALL_VISIBLE | VM_ALL_FROZEN };
        assert_redo(&before, &after, op.clone());
        assert_eq!(op.vm_bits_cleared(0), 0);
        // An insert into an all-visible page clears both bits; into another page none.
        let mut p = after.clone();
        let ins = heap_page_add_tuple(&mut p, 0, &row(1, "a"), 5, 0).unwrap().unwrap();
        assert_eq!(HeapOp::Insert(ins).vm_bits_cleared(0), VM_VALID_BITS);
        let ins = heap_page_add_tuple(&mut p, 0, &row(2, "b"), 5, 0).unwrap().unwrap();
        assert_eq!(HeapOp::Insert(ins).vm_bits_cleared(0), 0);
        // A row lock leaves the page all-visible: only all-frozen goes.
        let mut q = after.clone();
        let off = heap_page_add_tuple(&mut q, 0, &row(1, "a"), 5, 0).unwrap().unwrap().offset;
        page_set_flag(&mut q, PD_ALL_VISIBLE);
        let lock = heap_page_lock_tuple(&mut q, 0, off, 9, RowLockMode::Share).unwrap();
        assert!(page_has_flag(&q, PD_ALL_VISIBLE));
        assert_eq!(HeapOp::Xmax(lock).vm_bits_cleared(0), VM_ALL_FROZEN);
        let d = heap_page_delete(&mut q, off, 9, 0).unwrap();
        assert_eq!(HeapOp::Xmax(d).vm_bits_cleared(0), VM_VALID_BITS);
    }

    /// Decodes the op's WAL bytes and replays them on `before`; must give `after`.
    fn assert_redo(before: &[u8], after: &[u8], op: HeapOp) {
        let bytes = op.encode();
        let decoded = HeapOp::decode(&bytes).unwrap();
        assert_eq!(decoded, op);
        let mut p = before.to_vec();
        decoded.apply(&mut p).unwrap();
        assert!(p == after, "redo of {op:?} differs from the original change");
        // Truncated records are corrupt, never a panic.
        for cut in 0..bytes.len() {
            assert!(HeapOp::decode(&bytes[..cut]).is_err());
        }
    }

    #[test]
    fn insert_sets_header_and_ctid_and_replays() {
        let mut p = new_page();
        page_set_flag(&mut p, PD_ALL_VISIBLE);
        let before = p.clone();
        let op = heap_page_add_tuple(&mut p, 7, &row(1, "one"), 100, 3).unwrap().unwrap();
        assert_eq!(op.offset, 1);
        assert_eq!(op.cleared_flags, PD_ALL_VISIBLE);
        assert!(!page_has_flag(&p, PD_ALL_VISIBLE));
        let h = heap_page_get_header(&p, 1).unwrap();
        assert_eq!((h.xmin, h.xmax, h.cid, h.ctid), (100, 0, 3, Tid::new(7, 1)));
        assert!(h.xmax_invalid() && !h.xmin_committed());
        let vals = deform_tuple(&desc(), heap_page_get_tuple(&p, 1).unwrap()).unwrap();
        assert_eq!(vals[1], Some(Datum::Varlena(b"one")));
        assert!(op.init_page);
        // Redo of the first insert works on a never-written (all-zero) block too.
        let mut zero = vec![0u8; BLCKSZ];
        op.apply(&mut zero).unwrap();
        assert!(zero == p);
        assert_redo(&before, &p, HeapOp::Insert(op));
        page_validate(&p).unwrap();
        let op2 = heap_page_add_tuple(&mut p, 7, &row(2, "two"), 101, 0).unwrap().unwrap();
        assert!(!op2.init_page);
    }

    #[test]
    fn multi_insert_fills_the_page_in_order_and_replays() {
        // On a fresh (all-zero) page: init, then as many as fit, in order.
        let zero = vec![0u8; BLCKSZ];
        let mut p = zero.clone();
        heap_page_init(&mut p);
        page_set_flag(&mut p, PD_ALL_VISIBLE);
        let before = p.clone();
        let tuples: Vec<Vec<u8>> = (0..100).map(|k| row(k, &"x".repeat(70 + k as usize))).collect();
        let op = heap_page_add_tuples(&mut p, 9, &tuples, 100, 2, false).unwrap();
        let n = op.items.len();
        assert!(n > 40 && n < 100, "{n} tuples placed");
        assert!(page_heap_free_space(&p) < tuples[n].len(), "stopped while the next tuple fit");
        for (i, it) in op.items.iter().enumerate() {
            assert_eq!(it.offset as usize, i + 1);
            let h = TupleHeader::read(heap_page_get_tuple(&p, it.offset).unwrap()).unwrap();
            assert_eq!((h.xmin, h.ctid), (100, Tid::new(9, it.offset)));
            assert!(!h.xmin_frozen());
        }
        assert_eq!(op.cleared_flags, PD_ALL_VISIBLE);
        assert!(op.init_page);
        assert_redo(&before, &p, HeapOp::MultiInsert(op.clone()));
        // Redo onto an all-zero page (extension lost) gives the same bytes.
        let mut z = zero;
        HeapOp::MultiInsert(op).apply(&mut z).unwrap();
        assert!(z == p);
        // A full page takes nothing and is unchanged.
        let full = p.clone();
        let op = heap_page_add_tuples(&mut p, 9, &tuples[n..], 100, 2, false).unwrap();
        assert!(op.items.is_empty() && p == full);
        // Frozen: HEAP_XMIN_FROZEN set, the xmin kept.
        let mut f = new_page();
        let op = heap_page_add_tuples(&mut f, 0, &tuples[..3], 100, 2, true).unwrap();
        let h = TupleHeader::read(heap_page_get_tuple(&f, op.items[2].offset).unwrap()).unwrap();
        assert!(h.xmin_frozen() && h.xmin == 100);
    }

    #[test]
    fn delete_and_lock_set_xmax_bits_and_replay() {
        let mut p = new_page();
        for k in 0..3 {
            heap_page_add_tuple(&mut p, 0, &row(k, "x"), 100, 0).unwrap().unwrap();
        }
        // A hint bit set before the delete survives it, on the original and on redo.
        tuple_set_xmin_committed(heap_page_get_tuple_mut(&mut p, 2).unwrap());
        page_set_flag(&mut p, PD_ALL_VISIBLE);
        let before = p.clone();
        let op = heap_page_delete(&mut p, 2, 200, 5).unwrap();
        let h = heap_page_get_header(&p, 2).unwrap();
        assert_eq!((h.xmax, h.cid, h.ctid), (200, 5, Tid::new(0, 2)));
        assert!(!h.xmax_invalid() && !h.xmax_is_lock_only() && h.keys_updated() && h.xmin_committed());
        assert_eq!(page_prune_xid(&p), 200);
        assert!(!page_has_flag(&p, PD_ALL_VISIBLE));
        assert_redo(&before, &p, HeapOp::Xmax(op));

        for mode in [RowLockMode::KeyShare, RowLockMode::Share, RowLockMode::NoKeyExclusive, RowLockMode::Exclusive] {
            let before = p.clone();
            let op = heap_page_lock_tuple(&mut p, 0, 3, 300, mode).unwrap();
            let h = heap_page_get_header(&p, 3).unwrap();
            assert_eq!(h.xmax, 300);
            assert_eq!(RowLockMode::from_tuple(&h), Some(mode));
            assert_eq!(h.cid, 0);
            assert_redo(&before, &p, HeapOp::Xmax(op));
        }
        // The deleted tuple's xmax is not a lock.
        assert_eq!(RowLockMode::from_tuple(&heap_page_get_header(&p, 2).unwrap()), None);
        // Bad offsets are errors.
        assert!(heap_page_delete(&mut p, 9, 1, 1).is_err());
        assert!(heap_page_delete(&mut p, 0, 1, 1).is_err());
    }

    #[test]
    fn hot_update_on_the_same_page_and_cold_update_across_pages() {
        let mut p = new_page();
        heap_page_add_tuple(&mut p, 4, &row(1, "v1"), 100, 0).unwrap().unwrap();
        let before = p.clone();
        let hot = UpdateFlags { hot: true, keys_updated: false };
        let op = heap_page_update(&mut p, 4, 1, None, &row(1, "v2"), 101, 2, hot).unwrap().unwrap();
        assert_eq!(op.new.offset, 2);
        let old = heap_page_get_header(&p, 1).unwrap();
        let new = heap_page_get_header(&p, 2).unwrap();
        assert!(old.is_hot_updated() && !old.keys_updated() && old.xmax == 101 && old.ctid == Tid::new(4, 2));
        assert!(new.is_heap_only() && new.is_updated_version() && new.xmin == 101 && new.cid == 2);
        assert_eq!(new.ctid, Tid::new(4, 2));
        assert_redo(&before, &p, HeapOp::Update(op));

        // A non-HOT update to another page: both pages replay.
        let mut q = new_page();
        let (p0, q0) = (p.clone(), q.clone());
        let flags = UpdateFlags { hot: false, keys_updated: true };
        let op = heap_page_update(&mut p, 4, 2, Some((&mut q, 9)), &row(2, "v3"), 102, 0, flags)
            .unwrap()
            .unwrap();
        let old = heap_page_get_header(&p, 2).unwrap();
        assert!(!old.is_hot_updated() && old.keys_updated() && old.ctid == Tid::new(9, 1));
        let new = heap_page_get_header(&q, 1).unwrap();
        assert!(!new.is_heap_only() && new.ctid == Tid::new(9, 1));
        let HeapOp::Update(d) = HeapOp::decode(&HeapOp::Update(op.clone()).encode()).unwrap() else { panic!() };
        let (mut p1, mut q1) = (p0.clone(), q0.clone());
        d.apply_old_page(&mut p1).unwrap();
        d.apply_new_page(&mut q1).unwrap();
        assert!(p1 == p && q1 == q);
        // HOT to another page is refused; no room gives None and changes nothing.
        assert!(heap_page_update(&mut p, 4, 1, Some((&mut q, 9)), &row(1, "x"), 1, 0, hot).is_err());
        let big = form_tuple(&desc(), &[Some(Datum::ByVal(0)), Some(Datum::Varlena(&[0u8; 8100]))]).unwrap();
        let snapshot = p.clone();
        assert_eq!(heap_page_update(&mut p, 4, 1, None, &big, 103, 0, hot).unwrap(), None);
        assert!(p == snapshot);
    }

    #[test]
    fn freeze_replays() {
        let mut p = new_page();
        heap_page_add_tuple(&mut p, 0, &row(1, "a"), 100, 0).unwrap().unwrap();
        heap_page_add_tuple(&mut p, 0, &row(2, "b"), 100, 0).unwrap().unwrap();
        heap_page_lock_tuple(&mut p, 0, 2, 150, RowLockMode::Exclusive).unwrap();
        let before = p.clone();
        let items = vec![
            FreezeItem { offset: 1, freeze_xmin: true, clear_xmax: false },
            FreezeItem { offset: 2, freeze_xmin: true, clear_xmax: true },
        ];
        let op = heap_page_freeze(&mut p, items).unwrap();
        for off in [1, 2] {
            let h = heap_page_get_header(&p, off).unwrap();
            assert!(h.xmin_frozen() && h.xmin == FROZEN_TRANSACTION_ID && h.xmax_invalid());
        }
        let h = heap_page_get_header(&p, 2).unwrap();
        assert!(h.xmax == 0 && !h.xmax_is_lock_only() && !h.keys_updated());
        assert_redo(&before, &p, HeapOp::Freeze(op));
        assert!(heap_page_freeze(&mut p, vec![FreezeItem { offset: 5, freeze_xmin: true, clear_xmax: false }]).is_err());
    }

    /// xids whose xmax counts as committed-and-old in these tests.
    /// Every xmax not marked invalid counts as committed: below `limit` it is
    /// Dead, from `limit` on RecentlyDead; an invalid xmin is Dead.
    fn dead_if_xmax_below(limit: TransactionId) -> impl Fn(&TupleHeader) -> HtsvResult {
        move |h: &TupleHeader| {
            if h.xmin_invalid() {
                HtsvResult::Dead
            } else if h.xmax_invalid() || h.xmax_is_lock_only() || h.xmax == 0 {
                HtsvResult::Live
            } else if h.xmax < limit {
                HtsvResult::Dead
            } else {
                HtsvResult::RecentlyDead
            }
        }
    }

    #[test]
    fn prune_collapses_hot_chains() {
        let mut p = new_page();
        let hot = UpdateFlags { hot: true, keys_updated: false };
        heap_page_add_tuple(&mut p, 0, &row(1, "a1"), 10, 0).unwrap().unwrap(); // 1
        heap_page_update(&mut p, 0, 1, None, &row(1, "a2"), 11, 0, hot).unwrap().unwrap(); // 2
        heap_page_update(&mut p, 0, 2, None, &row(1, "a3"), 12, 0, hot).unwrap().unwrap(); // 3
        heap_page_add_tuple(&mut p, 0, &row(2, "b1"), 10, 0).unwrap().unwrap(); // 4
        heap_page_delete(&mut p, 4, 11, 0).unwrap();
        heap_page_add_tuple(&mut p, 0, &row(3, "c1"), 10, 0).unwrap().unwrap(); // 5
        // An update whose new version (6) was inserted by an aborted xact.
        heap_page_update(&mut p, 0, 5, None, &row(3, "c2"), 13, 0, hot).unwrap().unwrap(); // 6
        tuple_set_xmin_invalid(heap_page_get_tuple_mut(&mut p, 6).unwrap());
        tuple_set_xmax_invalid(heap_page_get_tuple_mut(&mut p, 5).unwrap());
        let before = p.clone();
        let r = heap_page_prune(&mut p, &dead_if_xmax_below(13)).unwrap();
        assert_eq!(r.op.redirected, vec![(1, 3)]);
        assert_eq!(r.op.now_dead, vec![4]);
        let mut unused = r.op.now_unused.clone();
        unused.sort();
        assert_eq!(unused, vec![2, 6]);
        assert_eq!(r.ndeleted, 4);
        assert!(r.freed > 0);
        page_validate(&p).unwrap();
        assert_eq!(page_get_item_id(&p, 1).unwrap(), ItemId::redirect(3));
        assert_eq!(deform_tuple(&desc(), heap_page_get_tuple(&p, 3).unwrap()).unwrap()[1], Some(Datum::Varlena(b"a3")));
        assert!(heap_page_get_tuple(&p, 5).is_ok());
        // Tuple 5's xmax (13) is invalid by hint, 3 has none: nothing left to prune.
        assert_eq!(r.op.new_prune_xid, 0);
        assert!(page_has_flag(&p, PD_HAS_FREE_LINES));
        assert_redo(&before, &p, HeapOp::Prune(r.op));

        // Walk through the redirect again: update 3 -> new tuple, then prune 3.
        let op = heap_page_update(&mut p, 0, 3, None, &row(1, "a4"), 14, 0, hot).unwrap().unwrap();
        assert_eq!(op.new.offset, 2, "the freed line pointer is reused");
        let before = p.clone();
        let r = heap_page_prune(&mut p, &dead_if_xmax_below(15)).unwrap();
        assert_eq!(r.op.redirected, vec![(1, 2)]);
        assert_eq!(r.op.now_unused, vec![3]);
        assert_redo(&before, &p, HeapOp::Prune(r.op));
        // Delete the last version: the whole chain is dead, the root becomes dead.
        heap_page_delete(&mut p, 2, 16, 0).unwrap();
        assert_eq!(page_prune_xid(&p), 16);
        let before = p.clone();
        let r = heap_page_prune(&mut p, &dead_if_xmax_below(17)).unwrap();
        assert_eq!(r.op.now_dead, vec![1]);
        assert_eq!(r.op.now_unused, vec![2]);
        assert_redo(&before, &p, HeapOp::Prune(r.op));
        // Nothing more to do: an empty op.
        let r = heap_page_prune(&mut p, &dead_if_xmax_below(100)).unwrap();
        assert!(r.op.is_empty());
        // VACUUM's second pass (dead -> unused) is a prune op too.
        let before = p.clone();
        let op = PruneOp { now_unused: vec![1, 4], ..Default::default() };
        op.apply(&mut p).unwrap();
        assert_redo(&before, &p, HeapOp::Prune(op));
        let live: Vec<OffsetNumber> = heap_page_tuples(&p).map(|r| r.unwrap().0).collect();
        assert_eq!(live, vec![5]);
    }

    /// Regression: concurrent updaters take their xids before queueing for the
    /// row, so the xmaxes along a HOT chain are out of order, and a member can be
    /// RecentlyDead while a later one is Dead. Pruning once stopped at the
    /// RecentlyDead member and then freed the Dead one behind it as "unreachable",
    /// cutting the chain: the row's live version could no longer be found from its
    /// index entry (lost updates through a primary key under pgbench).
    #[test]
    fn prune_walks_past_recently_dead_members() {
        let mut p = new_page();
        let hot = UpdateFlags { hot: true, keys_updated: false };
        heap_page_add_tuple(&mut p, 0, &row(1, "v0"), 10, 0).unwrap().unwrap(); // 1
        heap_page_update(&mut p, 0, 1, None, &row(1, "v1"), 20, 0, hot).unwrap().unwrap(); // 2
        heap_page_update(&mut p, 0, 2, None, &row(1, "v2"), 12, 0, hot).unwrap().unwrap(); // 3
        heap_page_update(&mut p, 0, 3, None, &row(1, "v3"), 21, 0, hot).unwrap().unwrap(); // 4
        heap_page_update(&mut p, 0, 4, None, &row(1, "v4"), 13, 0, hot).unwrap().unwrap(); // 5
        // Horizon 15: 1 RecentlyDead (20), 2 Dead (12), 3 RecentlyDead (21),
        // 4 Dead (13), 5 Live.
        let before = p.clone();
        let r = heap_page_prune(&mut p, &dead_if_xmax_below(15)).unwrap();
        assert_eq!(r.op.redirected, vec![(1, 5)], "everything before the last Dead member goes");
        let mut unused = r.op.now_unused.clone();
        unused.sort();
        assert_eq!(unused, vec![2, 3, 4]);
        assert!(r.op.now_dead.is_empty());
        assert_eq!(r.ndeleted, 4);
        assert_redo(&before, &p, HeapOp::Prune(r.op));
        let live = heap_hot_search(&p, 1, &mut |_, h| h.xmax == 0).unwrap();
        assert_eq!(live, Some(5), "the live version is reachable from the root");

        // A Dead member behind one that is neither Dead nor RecentlyDead (its
        // status read at another instant, or unreadable) is kept, and stays
        // reachable: removal stops where the run of committed updates does.
        let mut p = new_page();
        heap_page_add_tuple(&mut p, 0, &row(1, "v0"), 10, 0).unwrap().unwrap(); // 1
        heap_page_update(&mut p, 0, 1, None, &row(1, "v1"), 20, 0, hot).unwrap().unwrap(); // 2
        heap_page_update(&mut p, 0, 2, None, &row(1, "v2"), 12, 0, hot).unwrap().unwrap(); // 3
        let status = |h: &TupleHeader| match h.xmax {
            20 => HtsvResult::DeleteInProgress,
            12 => HtsvResult::Dead,
            _ => HtsvResult::Live,
        };
        let r = heap_page_prune(&mut p, &status).unwrap();
        assert!(r.op.is_empty(), "{:?}", r.op);
        assert_eq!(heap_hot_search(&p, 1, &mut |_, h| h.xmax == 0).unwrap(), Some(3));
    }

    /// Pruning validates the page in the same pass that reads it: a page
    /// whose items overlap, or whose redirect leaves the line pointer array,
    /// is refused as corrupt and left as it was.
    #[test]
    fn prune_refuses_a_corrupt_page() {
        let mut p = new_page();
        heap_page_add_tuple(&mut p, 0, &row(1, "a"), 10, 0).unwrap().unwrap();
        heap_page_add_tuple(&mut p, 0, &row(2, "b"), 10, 0).unwrap().unwrap();
        heap_page_delete(&mut p, 2, 11, 0).unwrap();
        let one = page_get_item_id(&p, 1).unwrap();
        let mut bad = p.clone();
        page_set_item_id(&mut bad, 2, one).unwrap();
        let before = bad.clone();
        let e = heap_page_prune(&mut bad, &dead_if_xmax_below(100)).unwrap_err();
        assert!(e.to_string().contains("overlap"), "{e}");
        assert_eq!(bad, before);
        let mut bad = p.clone();
        page_set_item_id(&mut bad, 1, ItemId::redirect(7)).unwrap();
        let before = bad.clone();
        let e = heap_page_prune(&mut bad, &dead_if_xmax_below(100)).unwrap_err();
        assert!(e.to_string().contains("redirects outside"), "{e}");
        assert_eq!(bad, before);
        // The sound page prunes.
        assert_eq!(heap_page_prune(&mut p, &dead_if_xmax_below(100)).unwrap().op.now_dead, vec![2]);
    }

    #[test]
    fn walker_reports_bad_tuples() {
        let mut p = new_page();
        for k in 0..5 {
            heap_page_add_tuple(&mut p, 0, &row(k, "w"), 100, 0).unwrap().unwrap();
        }
        let got: Vec<OffsetNumber> = heap_page_tuples(&p).map(|r| r.unwrap().0).collect();
        assert_eq!(got, vec![1, 2, 3, 4, 5]);
        let off = page_get_item_id(&p, 3).unwrap().off as usize;
        p[off + 22] = 3; // t_hoff
        let res: Vec<bool> = heap_page_tuples(&p).map(|r| r.is_ok()).collect();
        assert_eq!(res, vec![true, true, false, true, true]);
    }

    /// Random sequences of inserts, deletes, locks, updates (HOT and not), freezes and
    /// prunes: every op's redo reproduces the page exactly, and the page stays valid.
    #[test]
    fn random_ops_replay_exactly() {
        let mut rng = SmallRng::seed_from_u64(7);
        let mut seen = [0usize; 6];
        for _round in 0..20 {
            let mut p = new_page();
            let mut xid: TransactionId = 100;
            for _ in 0..300 {
                xid += 1;
                let before = p.clone();
                let live: Vec<OffsetNumber> = heap_page_tuples(&p)
                    .map(|r| r.unwrap())
                    .filter(|(_, t)| TupleHeader::read(t).unwrap().xmax_invalid())
                    .map(|(o, _)| o)
                    .collect();
                let text = "y".repeat(rng.gen_range(0..300));
                let choice = rng.gen_range(0..10);
                let op = if live.is_empty() || choice < 3 {
                    match heap_page_add_tuple(&mut p, 1, &row(xid, &text), xid, 0).unwrap() {
                        Some(op) => HeapOp::Insert(op),
                        None => HeapOp::Prune(heap_page_prune(&mut p, &dead_if_xmax_below(xid)).unwrap().op),
                    }
                } else {
                    let off = live[rng.gen_range(0..live.len())];
                    match choice {
                        3 => HeapOp::Xmax(heap_page_delete(&mut p, off, xid, 1).unwrap()),
                        4 => HeapOp::Xmax(heap_page_lock_tuple(&mut p, 1, off, xid, RowLockMode::Share).unwrap()),
                        5 => HeapOp::Freeze(
                            heap_page_freeze(&mut p, vec![FreezeItem { offset: off, freeze_xmin: true, clear_xmax: false }])
                                .unwrap(),
                        ),
                        6 => HeapOp::Prune(heap_page_prune(&mut p, &dead_if_xmax_below(xid - 5)).unwrap().op),
                        _ => {
                            let flags = UpdateFlags { hot: rng.gen_bool(0.7), keys_updated: rng.gen_bool(0.2) };
                            match heap_page_update(&mut p, 1, off, None, &row(xid, &text), xid, 0, flags).unwrap() {
                                Some(op) => HeapOp::Update(op),
                                None => HeapOp::Prune(heap_page_prune(&mut p, &dead_if_xmax_below(xid)).unwrap().op),
                            }
                        }
                    }
                };
                page_validate(&p).unwrap();
                if let HeapOp::Prune(op) = &op {
                    if op.is_empty() {
                        continue; // hints only, not logged
                    }
                }
                seen[op.encode()[0] as usize] += 1;
                assert_redo(&before, &p, op);
            }
        }
        // Every kind of op was exercised, prunes that did something included.
        assert!(seen[1..].iter().all(|&n| n > 10), "{seen:?}");
    }

    /// Damaged pages and random WAL records: every function returns an error or a
    /// value, never panics, and a page that still validates stays valid.
    #[test]
    fn damaged_pages_and_records_never_panic() {
        let mut rng = SmallRng::seed_from_u64(99);
        let mut base = new_page();
        let hot = UpdateFlags { hot: true, keys_updated: false };
        for k in 0..20u32 {
            heap_page_add_tuple(&mut base, 3, &row(k, "some text"), 100 + k, 0).unwrap().unwrap();
        }
        for k in 1..10u16 {
            heap_page_update(&mut base, 3, k, None, &row(k as u32, "newer"), 200 + k as u32, 0, hot).unwrap();
        }
        let mut records: Vec<Vec<u8>> = Vec::new();
        for _ in 0..2000 {
            let mut p = base.clone();
            for _ in 0..rng.gen_range(1..8) {
                // Mostly line pointers and tuple headers, sometimes anywhere.
                let at = if rng.gen_bool(0.5) {
                    rng.gen_range(PAGE_HEADER_SIZE..PAGE_HEADER_SIZE + 4 * 30)
                } else {
                    rng.gen_range(page_upper(&base)..BLCKSZ)
                };
                p[at] = rng.gen();
            }
            let _ = heap_page_tuples(&p).count();
            let mut q = p.clone();
            if heap_page_prune(&mut q, &dead_if_xmax_below(205)).is_ok() {
                page_validate(&q).unwrap();
            }
            let off = rng.gen_range(0..32);
            let _ = heap_page_delete(&mut p.clone(), off, 300, 0);
            let _ = heap_page_lock_tuple(&mut p.clone(), 3, off, 300, RowLockMode::KeyShare);
            let _ = heap_page_update(&mut p.clone(), 3, off, None, &row(1, "x"), 300, 0, hot);
            let _ = heap_page_freeze(&mut p.clone(), vec![FreezeItem { offset: off, freeze_xmin: true, clear_xmax: true }]);
            if let Ok(Some(op)) = heap_page_add_tuple(&mut p.clone(), 3, &row(1, "y"), 300, 0) {
                records.push(HeapOp::Insert(op).encode());
            }
            // Random and damaged records.
            let mut rec = records.last().cloned().unwrap_or_else(|| vec![1]);
            let at = rng.gen_range(0..rec.len());
            rec[at] = rng.gen();
            let junk: Vec<u8> = (0..rng.gen_range(0..40)).map(|_| rng.gen()).collect();
            for r in [rec, junk] {
                if let Ok(op) = HeapOp::decode(&r) {
                    let mut t = base.clone();
                    if op.apply(&mut t).is_ok() {
                        page_validate(&t).unwrap();
                    }
                }
            }
        }
    }

    #[test]
    fn hot_search_follows_chains_and_redirects() {
        let mut p = new_page();
        let hot = UpdateFlags { hot: true, keys_updated: false };
        heap_page_add_tuple(&mut p, 0, &row(1, "v1"), 10, 0).unwrap().unwrap(); // 1
        heap_page_update(&mut p, 0, 1, None, &row(1, "v2"), 11, 0, hot).unwrap().unwrap(); // 2
        heap_page_update(&mut p, 0, 2, None, &row(1, "v3"), 12, 0, hot).unwrap().unwrap(); // 3
        heap_page_add_tuple(&mut p, 0, &row(2, "w"), 10, 0).unwrap().unwrap(); // 4
        // "Visible" = inserted by a given xid, standing in for a snapshot.
        let find = |p: &[u8], root, xid: TransactionId| {
            heap_hot_search(p, root, &mut |_, h: &TupleHeader| h.xmin == xid).unwrap()
        };
        assert_eq!(find(&p, 1, 10), Some(1));
        assert_eq!(find(&p, 1, 11), Some(2));
        assert_eq!(find(&p, 1, 12), Some(3));
        assert_eq!(find(&p, 1, 13), None);
        assert_eq!(find(&p, 4, 10), Some(4));
        // Heap-only tuples are not chain roots.
        assert_eq!(find(&p, 2, 12), None);
        // After pruning 1 and 2, the root redirects to 3.
        heap_page_prune(&mut p, &dead_if_xmax_below(13)).unwrap();
        assert_eq!(page_get_item_id(&p, 1).unwrap(), ItemId::redirect(3));
        assert_eq!(find(&p, 1, 12), Some(3));
        assert_eq!(find(&p, 1, 11), None);
        assert_eq!(find(&p, 9, 12), None);
        // A damaged chain that loops is an error, not a hang.
        let mut q = new_page();
        heap_page_add_tuple(&mut q, 0, &row(1, "a"), 10, 0).unwrap().unwrap();
        heap_page_update(&mut q, 0, 1, None, &row(1, "b"), 10, 0, hot).unwrap().unwrap();
        let t = heap_page_get_tuple_mut(&mut q, 2).unwrap();
        tuple_set_xmax(t, 10);
        tuple_or_infomask2(t, HEAP_HOT_UPDATED);
        tuple_set_ctid(t, Tid::new(0, 2));
        assert!(heap_hot_search(&q, 1, &mut |_, _| false).is_err());
    }
}
