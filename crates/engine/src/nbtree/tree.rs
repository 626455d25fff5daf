//! The index handle: creation, descent, insertion, page splits, the parent
//! downlink insertion (and finishing incomplete splits), new roots, unique checks.

use super::page::*;
use super::xlog::{critical_section_failed, log_changes, Change, PageOp};
use super::xlog::{XLOG_BTREE_CREATE, XLOG_BTREE_INSERT_LEAF, XLOG_BTREE_INSERT_UPPER, XLOG_BTREE_NEWROOT, XLOG_BTREE_SPLIT};
use crate::buffer::{LockedBuffer, PinnedBuffer};
use crate::config::BLCKSZ;
use crate::engine::Engine;
use crate::error::{Error, Result, SqlState};
use crate::heap::tuple::{AttrDesc, Datum, Tid};
use crate::lmgr::lock::LockOptions;
use crate::lmgr::predicate::{PredTarget, SerializableXact};
use crate::pgstat::BackendId;
use crate::storage::page::{maxalign, page_add_item, page_free_space, page_get_item, page_validate_header, OffsetNumber, PageItems};
use crate::storage::{BlockNumber, BufferTag, ForkNumber, RelFileLocator, INVALID_BLOCK};
use crate::txn::visibility::DirtyResult;
use std::cmp::Ordering;
use std::sync::atomic::{AtomicU64, Ordering as AtomicOrdering};
use std::sync::Arc;

/// The heap side of a unique check: runs the dirty-snapshot test
/// (`txn::visibility::satisfies_dirty`) on the heap tuple an index entry points to.
pub trait HeapVisibility {
    fn satisfies_dirty(&self, tid: Tid) -> Result<DirtyResult>;
}

/// Formats a key for an error DETAIL: (column list, value list).
pub type KeyFormatter = dyn Fn(&[Option<Datum>]) -> (String, String);

/// What an insert into a unique index needs from the caller.
pub struct UniqueCheck<'a> {
    /// The inserting backend (it waits on other transactions' xid locks).
    pub backend: BackendId,
    pub heap: &'a dyn HeapVisibility,
    /// The constraint's name, for the error message.
    pub index_name: &'a str,
    /// Formats the key for DETAIL: (column list, value list), e.g. ("id", "42").
    pub format_key: &'a KeyFormatter,
}

/// A B-tree index on one relation.
pub struct BTree {
    pub rel: RelFileLocator,
    /// The fork of `rel` the tree lives in: `Main` for an index relation,
    /// `ToastIndex` for a TOAST relation's chunk index.
    pub fork: ForkNumber,
    /// The key columns.
    pub desc: Vec<AttrDesc>,
    pub cmp: Arc<dyn KeyComparator>,
    pub unique: bool,
    /// The leading columns a unique check compares (the rest are INCLUDE
    /// columns: stored and ordered, but not part of uniqueness).
    pub nkey: usize,
    /// The root as last read from the metapage: `block << 32 | level`, or
    /// `NO_ROOT`. A hint only (PostgreSQL caches the metapage in the relcache):
    /// a descent that finds the page no longer has BTP_ROOT re-reads the metapage.
    /// A stale value would still be correct (move right works from any page of a
    /// level), just slower.
    root_cache: AtomicU64,
    /// The first column's integer order (`KeyCtx::int0`), fixed at creation.
    int0: Option<IntKey>,
}

const NO_ROOT: u64 = u64::MAX;

enum UniqueOutcome {
    Ok,
    Wait(u32),
    Duplicate,
}

impl BTree {
    pub fn new(rel: RelFileLocator, desc: Vec<AttrDesc>, cmp: Arc<dyn KeyComparator>, unique: bool) -> BTree {
        let nkey = desc.len();
        // The in-place integer compare reads the first column as `width`
        // bytes by value: only when the descriptor stores it so.
        let int0 = cmp.int_key(0).filter(|k| {
            desc.first().is_some_and(|a| a.by_val && !a.is_varlena() && a.len as usize == k.width as usize && matches!(k.width, 2 | 4 | 8))
        });
        BTree { rel, fork: ForkNumber::Main, desc, cmp, unique, nkey, root_cache: AtomicU64::new(NO_ROOT), int0 }
    }

    /// Only the first `nkey` columns take part in unique checks (an index with
    /// INCLUDE columns).
    pub fn with_key_columns(mut self, nkey: usize) -> BTree {
        self.nkey = nkey.clamp(1, self.desc.len());
        self
    }

    /// The tree lives in fork `fork` of its relation (a TOAST chunk index).
    pub fn with_fork(mut self, fork: ForkNumber) -> BTree {
        self.fork = fork;
        self
    }

    pub(crate) fn ctx(&self) -> KeyCtx<'_> {
        KeyCtx { desc: &self.desc, cmp: &self.cmp, int0: self.int0 }
    }

    pub(crate) fn tag(&self, block: BlockNumber) -> BufferTag {
        BufferTag::new(self.rel, self.fork, block)
    }

    /// Creates the relation file and an empty index: the metapage (block 0) and an
    /// empty leaf root (block 1), WAL-logged as images.
    pub fn create(&self, engine: &Engine) -> Result<()> {
        engine.create_relation_fork(self.rel, self.fork)?;
        let mut pages = engine.buffers.extend(self.rel, self.fork, 2, None)?;
        let mut root = pages.pop().expect("two pages");
        let mut meta = pages.pop().expect("two pages");
        if meta.block() != METAPAGE_BLOCK {
            return Err(Error::internal(format!("new index starts at block {}", meta.block())));
        }
        let rb = root.block();
        meta_init(&mut meta[..], &BtMeta { root: rb, level: 0, fast_root: rb, fast_level: 0 });
        bt_page_init(
            &mut root[..],
            &BtOpaque { left: INVALID_BLOCK, right: INVALID_BLOCK, level: 0, flags: BTP_LEAF | BTP_ROOT },
        );
        log_changes(engine, XLOG_BTREE_CREATE, &mut [Change::Image(&mut meta), Change::Image(&mut root)]);
        Ok(())
    }

    pub fn meta(&self, engine: &Engine) -> Result<BtMeta> {
        let pin = engine.buffers.read_buffer(self.tag(METAPAGE_BLOCK), None)?;
        let g = pin.lock_shared();
        read_meta(&g)
    }

    /// The root's block and level: cached, else from the metapage.
    fn root(&self, engine: &Engine) -> Result<(BlockNumber, u32)> {
        // Relaxed: the value is a hint validated against the page's ROOT flag.
        let v = self.root_cache.load(AtomicOrdering::Relaxed);
        if v != NO_ROOT {
            return Ok(((v >> 32) as BlockNumber, v as u32));
        }
        let m = self.meta(engine)?;
        self.root_cache.store((m.root as u64) << 32 | m.level as u64, AtomicOrdering::Relaxed);
        Ok((m.root, m.level))
    }

    fn forget_root(&self) {
        self.root_cache.store(NO_ROOT, AtomicOrdering::Relaxed);
    }

    /// Drops the cached root (a build just wrote the metapage).
    pub(crate) fn forget_root_cache(&self) {
        self.forget_root();
    }

    pub(crate) fn scan_key<'v>(&self, values: &[Option<Datum<'v>>], tid: TidBound) -> ScanKey<'v> {
        ScanKey { values: values.to_vec(), tid }
    }

    /// First offset in `lo..=hi` whose item is greater than `sk`, or `hi + 1`.
    pub(crate) fn first_greater(&self, page: &[u8], sk: &ScanKey, lo: OffsetNumber, hi: OffsetNumber) -> Result<OffsetNumber> {
        let (mut l, mut h) = (lo, hi + 1);
        let ctx = self.ctx();
        // In place: each probe reads its line pointer and, for an integer
        // first column, the value straight from the page (no parsing, no
        // allocation, no call through the comparator).
        let probe = ctx.int_probe(sk);
        let items = PageItems::new(page)?;
        while l < h {
            let mid = l + (h - l) / 2;
            if ctx.compare_probe(sk, probe, items.get(mid)?)? == Ordering::Less {
                h = mid;
            } else {
                l = mid + 1;
            }
        }
        Ok(l)
    }

    /// Whether `sk` belongs to the right of this page (>= its high key).
    pub(crate) fn beyond_high_key(&self, page: &[u8], o: &BtOpaque, sk: &ScanKey) -> Result<bool> {
        if o.is_rightmost() {
            return Ok(false);
        }
        let ctx = self.ctx();
        Ok(ctx.compare_probe(sk, ctx.int_probe(sk), page_get_item(page, P_HIKEY)?)? != Ordering::Less)
    }

    /// The downlink to follow on an internal page.
    fn find_child(&self, page: &[u8], o: &BtOpaque, sk: &ScanKey) -> Result<BlockNumber> {
        let first = o.first_data_key();
        let max = max_offset(page);
        if max < first {
            return Err(Error::corrupt(format!("internal btree page without downlinks in {:?}", self.rel)));
        }
        let pos = self.first_greater(page, sk, first + 1, max)?;
        Ok(page_itup(page, pos - 1)?.child)
    }

    /// Descends to the leaf for `sk` for reading: shared locks, one at a time
    /// (the parent is released before the child is locked); the returned leaf is
    /// pinned only (the caller locks it and moves right if it split meanwhile).
    pub(crate) fn descend_read<'e>(&self, engine: &'e Engine, sk: &ScanKey) -> Result<PinnedBuffer<'e>> {
        let (mut blk, _) = self.root(engine)?;
        let mut at_root = true;
        loop {
            let pin = engine.buffers.read_buffer(self.tag(blk), None)?;
            let next = {
                let g = pin.lock_shared();
                let o = opaque(&g)?;
                if at_root && !o.is_root() {
                    // The root moved up since we cached it.
                    self.forget_root();
                    blk = self.root(engine)?.0;
                    continue;
                }
                at_root = false;
                if o.is_leaf() {
                    None
                } else if self.beyond_high_key(&g, &o, sk)? {
                    Some(o.right)
                } else {
                    Some(self.find_child(&g, &o, sk)?)
                }
            };
            match next {
                None => return Ok(pin),
                Some(b) => blk = b,
            }
        }
    }

    /// Descends to the page at `level` where `sk` belongs (shared locks, released).
    fn descend_to_level(&self, engine: &Engine, sk: &ScanKey, level: u32) -> Result<BlockNumber> {
        let meta = self.meta(engine)?;
        if meta.level < level {
            return Err(Error::internal(format!("btree root at level {} below level {level}", meta.level)));
        }
        let mut blk = meta.root;
        loop {
            let pin = engine.buffers.read_buffer(self.tag(blk), None)?;
            let g = pin.lock_shared();
            let o = opaque(&g)?;
            if self.beyond_high_key(&g, &o, sk)? {
                blk = o.right;
            } else if o.level == level {
                return Ok(blk);
            } else if o.level < level {
                return Err(Error::internal(format!("btree descent passed level {level}")));
            } else {
                blk = self.find_child(&g, &o, sk)?;
            }
        }
    }

    /// Descends to the leaf for `sk` for insertion. Internal pages are read with
    /// shared locks one at a time; **the leaf is locked exclusively from the start**
    /// (seed 003: no shared-then-upgrade). Incomplete splits met on the way are
    /// finished first. Returns the leaf (moved right as needed) and the stack of
    /// internal blocks visited, root first.
    fn descend_write<'e>(&self, engine: &'e Engine, sk: &ScanKey) -> Result<(LockedBuffer<'e>, Vec<BlockNumber>)> {
        'restart: loop {
            let (mut blk, mut level) = self.root(engine)?;
            let mut at_root = true;
            let mut stack = Vec::new();
            loop {
                if level == 0 {
                    let mut page = engine.buffers.read_buffer(self.tag(blk), None)?.into_locked();
                    if at_root && !opaque(&page)?.is_root() {
                        self.forget_root();
                        continue 'restart;
                    }
                    loop {
                        let o = opaque(&page)?;
                        if !o.is_leaf() {
                            return Err(Error::corrupt(format!("btree page {} expected to be a leaf", page.block())));
                        }
                        if o.incomplete_split() {
                            self.finish_split(engine, page)?;
                            continue 'restart;
                        }
                        if self.beyond_high_key(&page, &o, sk)? {
                            drop(page);
                            page = engine.buffers.read_buffer(self.tag(o.right), None)?.into_locked();
                            continue;
                        }
                        return Ok((page, stack));
                    }
                }
                let pin = engine.buffers.read_buffer(self.tag(blk), None)?;
                let g = pin.lock_shared();
                let o = opaque(&g)?;
                if at_root && !o.is_root() {
                    self.forget_root();
                    continue 'restart;
                }
                at_root = false;
                if o.level != level {
                    return Err(Error::corrupt(format!("btree page {blk} at level {} where {level} expected", o.level)));
                }
                if o.incomplete_split() {
                    drop(g);
                    let page = pin.into_locked();
                    if opaque(&page)?.incomplete_split() {
                        self.finish_split(engine, page)?;
                    }
                    continue 'restart;
                }
                if self.beyond_high_key(&g, &o, sk)? {
                    blk = o.right;
                    continue;
                }
                stack.push(blk);
                blk = self.find_child(&g, &o, sk)?;
                level -= 1;
            }
        }
    }

    /// Inserts (key `values`, `heap_tid`). For a unique index with `unique` given
    /// and no NULL in the key, checks for a live duplicate first (waiting for
    /// in-progress inserters/deleters), raising 23505.
    pub fn insert(
        &self,
        engine: &Engine,
        values: &[Option<Datum>],
        heap_tid: Tid,
        unique: Option<&UniqueCheck>,
    ) -> Result<()> {
        self.insert_serializable(engine, values, heap_tid, unique, None)
    }

    /// Does SSI track this tree? An index of a user relation (not a catalog's,
    /// not a TOAST chunk index, whose blocks share the TOAST relation's name).
    pub(crate) fn ssi_tracked(&self) -> bool {
        self.fork == ForkNumber::Main && crate::heap::heapam::ssi_tracked(self.rel)
    }

    /// SERIALIZABLE: a write into leaf `block` (locked exclusive): every other
    /// concurrent holder of a SIREAD lock on the page, or on the whole index,
    /// gets an rw-edge to `sx` (PostgreSQL's CheckForSerializableConflictIn on
    /// the index page). Checked before the entry goes in, under the same
    /// exclusive lock: a reader locks the page under its shared lock, so either
    /// its lock is seen here or it reads the page after the entry is in (and
    /// meets the writer's heap tuple: a conflict out).
    fn ssi_check_in(&self, engine: &Engine, sx: Option<&SerializableXact>, block: BlockNumber) -> Result<()> {
        match sx {
            Some(sx) if self.ssi_tracked() => engine
                .txn
                .predicate
                .check_conflict_in(sx, &[PredTarget::Page(self.rel, block), PredTarget::Relation(self.rel)]),
            _ => Ok(()),
        }
    }

    /// `insert` by the serializable transaction `sx` (`None`: any other
    /// transaction, the same as `insert`): the leaf page the entry goes into
    /// is checked against SIREAD locks first (see `ssi_check_in`); a unique
    /// violation is checked the same way on the first page of the key before
    /// it is reported, so that a serialization failure is not masked by it
    /// (PostgreSQL's _bt_check_unique does the same).
    pub fn insert_serializable(
        &self,
        engine: &Engine,
        values: &[Option<Datum>],
        heap_tid: Tid,
        unique: Option<&UniqueCheck>,
        sx: Option<&SerializableXact>,
    ) -> Result<()> {
        if values.len() != self.desc.len() {
            return Err(Error::internal(format!("btree insert of {} values into {} columns", values.len(), self.desc.len())));
        }
        let mut itup = Vec::new();
        form_leaf_itup(&mut itup, &self.desc, values, heap_tid)?;
        if itup.len() > BTREE_MAX_ITEM {
            return Err(Error::user(
                SqlState::PROGRAM_LIMIT_EXCEEDED,
                format!("index row size {} exceeds btree maximum, {}", itup.len(), BTREE_MAX_ITEM),
            ));
        }
        let sk = self.scan_key(values, TidBound::Exact(heap_tid));
        // Uniqueness is over the key columns; INCLUDE columns only ride along.
        let ukey = &values[..self.nkey];
        let check = unique.filter(|_| self.unique && ukey.iter().all(|v| v.is_some()));
        let Some(uc) = check else {
            let (leaf, mut stack) = self.descend_write(engine, &sk)?;
            self.ssi_check_in(engine, sx, leaf.block())?;
            let o = opaque(&leaf)?;
            let pos = self.first_greater(&leaf, &sk, o.first_data_key(), max_offset(&leaf))?;
            return self.insert_into_page(engine, leaf, pos, itup, None, None, &mut stack);
        };
        let sk_first = self.scan_key(ukey, TidBound::MinusInf);
        loop {
            let (first, mut stack) = self.descend_write(engine, &sk_first)?;
            match self.check_unique(engine, &first, ukey, uc)? {
                UniqueOutcome::Ok => {}
                UniqueOutcome::Wait(xid) => {
                    drop(first);
                    engine.locks.xact_lock_table_wait(uc.backend, xid, LockOptions::default())?;
                    continue;
                }
                UniqueOutcome::Duplicate => {
                    self.ssi_check_in(engine, sx, first.block())?;
                    let (cols, vals) = (uc.format_key)(ukey);
                    return Err(Error::user(
                        SqlState(*b"23505"),
                        format!("duplicate key value violates unique constraint \"{}\"", uc.index_name),
                    )
                    .with_detail(format!("Key ({cols})=({vals}) already exists.")));
                }
            }
            // Move right to the page where (key, heap TID) goes, keeping the first
            // page locked until the tuple is in: every inserter of an equal key
            // passes through it, so two cannot both miss each other.
            let mut cur: Option<LockedBuffer> = None;
            let mut restart = false;
            loop {
                let p: &LockedBuffer = cur.as_ref().unwrap_or(&first);
                let o = opaque(p)?;
                if cur.is_some() && o.incomplete_split() {
                    restart = true;
                    break;
                }
                if !self.beyond_high_key(p, &o, &sk)? {
                    break;
                }
                let next = engine.buffers.read_buffer(self.tag(o.right), None)?.into_locked();
                cur = Some(next);
            }
            if restart {
                drop(first);
                let page = cur.take().expect("set");
                self.finish_split(engine, page)?;
                continue;
            }
            self.ssi_check_in(engine, sx, cur.as_ref().unwrap_or(&first).block())?;
            return match cur {
                None => {
                    let o = opaque(&first)?;
                    let pos = self.first_greater(&first, &sk, o.first_data_key(), max_offset(&first))?;
                    self.insert_into_page(engine, first, pos, itup, None, None, &mut stack)
                }
                Some(target) => {
                    let o = opaque(&target)?;
                    let pos = self.first_greater(&target, &sk, o.first_data_key(), max_offset(&target))?;
                    self.insert_into_page(engine, target, pos, itup, None, Some(first), &mut stack)
                }
            };
        }
    }

    /// Looks at every entry whose leading columns equal `values` (the key
    /// columns) from the first page on (moving right with shared locks while the
    /// high key's are equal), asking the heap about each.
    fn check_unique(
        &self,
        engine: &Engine,
        first: &LockedBuffer,
        values: &[Option<Datum>],
        uc: &UniqueCheck,
    ) -> Result<UniqueOutcome> {
        let sk = self.scan_key(values, TidBound::MinusInf);
        let ctx = self.ctx();
        // Returns Ok(Err(next block)) to continue on the right sibling.
        let examine = |page: &[u8], is_first: bool| -> Result<std::result::Result<UniqueOutcome, BlockNumber>> {
            let o = opaque(page)?;
            let max = max_offset(page);
            let start = if is_first { self.first_greater(page, &sk, o.first_data_key(), max)? } else { o.first_data_key() };
            for off in start..=max {
                let it = page_itup(page, off)?;
                let vals = it.values(&self.desc)?;
                if ctx.compare_values(values, &vals) != Ordering::Equal {
                    return Ok(Ok(UniqueOutcome::Ok));
                }
                let r = uc.heap.satisfies_dirty(it.heap_tid)?;
                if !r.visible {
                    continue;
                }
                if r.xmin_in_progress != 0 {
                    return Ok(Ok(UniqueOutcome::Wait(r.xmin_in_progress)));
                }
                if r.xmax_in_progress != 0 {
                    return Ok(Ok(UniqueOutcome::Wait(r.xmax_in_progress)));
                }
                return Ok(Ok(UniqueOutcome::Duplicate));
            }
            if o.is_rightmost() {
                return Ok(Ok(UniqueOutcome::Ok));
            }
            let hk = page_itup(page, P_HIKEY)?;
            let hv = hk.values(&self.desc)?;
            if ctx.compare_values(values, &hv) != Ordering::Equal {
                return Ok(Ok(UniqueOutcome::Ok));
            }
            Ok(Err(o.right))
        };
        let mut next = match examine(first, true)? {
            Ok(out) => return Ok(out),
            Err(b) => b,
        };
        loop {
            let pin = engine.buffers.read_buffer(self.tag(next), None)?;
            let g = pin.lock_shared();
            match examine(&g, false)? {
                Ok(out) => return Ok(out),
                Err(b) => next = b,
            }
        }
    }

    /// Puts `itup` at `pos` on `page` (exclusively locked), splitting it if it is
    /// full. `child`: the page whose split this downlink completes (its
    /// INCOMPLETE_SPLIT flag is cleared in the same WAL record). `extra`: a lock
    /// to release once the page change is done (the unique check's first page).
    #[allow(clippy::too_many_arguments)]
    fn insert_into_page<'e>(
        &self,
        engine: &'e Engine,
        mut page: LockedBuffer<'e>,
        pos: OffsetNumber,
        itup: Vec<u8>,
        child: Option<LockedBuffer<'e>>,
        extra: Option<LockedBuffer<'e>>,
        stack: &mut Vec<BlockNumber>,
    ) -> Result<()> {
        page_validate_header(&page)?;
        let o = opaque(&page)?;
        if let Some(c) = &child {
            opaque(c)?;
        }
        if page_free_space(&page) < maxalign(itup.len()) {
            return self.split(engine, page, pos, itup, child, extra, stack);
        }
        let info = if o.is_leaf() { XLOG_BTREE_INSERT_LEAF } else { XLOG_BTREE_INSERT_UPPER };
        let op = PageOp::Insert { offset: pos, item: itup };
        op.apply(&mut page).unwrap_or_else(|e| critical_section_failed("btree insert", e));
        match child {
            Some(mut c) => {
                let clear = PageOp::ClearFlags(BTP_INCOMPLETE_SPLIT);
                clear.apply(&mut c).unwrap_or_else(|e| critical_section_failed("btree insert", e));
                log_changes(engine, info, &mut [Change::Ops(&mut page, vec![op]), Change::Ops(&mut c, vec![clear])]);
            }
            None => log_changes(engine, info, &mut [Change::Ops(&mut page, vec![op])]),
        }
        drop(extra);
        Ok(())
    }

    /// Splits `page` while adding `itup` at `pos`: a new right page gets the upper
    /// half, the left page gets the new high key and INCOMPLETE_SPLIT, and the old
    /// right sibling's left link points to the new page; one WAL record. Then the
    /// downlink goes into the parent.
    #[allow(clippy::too_many_arguments)]
    fn split<'e>(
        &self,
        engine: &'e Engine,
        mut page: LockedBuffer<'e>,
        pos: OffsetNumber,
        itup: Vec<u8>,
        child: Option<LockedBuffer<'e>>,
        extra: Option<LockedBuffer<'e>>,
        stack: &mut Vec<BlockNumber>,
    ) -> Result<()> {
        let lo = opaque(&page)?;
        let first = lo.first_data_key();
        let max = max_offset(&page);
        let mut items: Vec<Vec<u8>> = Vec::with_capacity(max as usize + 1);
        for off in first..=max {
            if off == pos {
                items.push(itup.clone());
            }
            items.push(page_get_item(&page, off)?.to_vec());
        }
        if pos > max {
            items.push(itup.clone());
        }
        let old_hk = if lo.is_rightmost() { None } else { Some(page_get_item(&page, P_HIKEY)?.to_vec()) };
        // Split point: the k (items[..k] stay left) closest to half the bytes, or
        // to 90% for an insert at the end of the rightmost page (ascending keys),
        // among those where both halves fit: the left page also holds the new high
        // key (a copy of items[k]), the right page the old high key.
        let sizes: Vec<usize> = items.iter().map(|i| maxalign(i.len()) + 4).collect();
        let total: usize = sizes.iter().sum();
        let cap = BLCKSZ - crate::storage::page::PAGE_HEADER_SIZE - maxalign(BT_SPECIAL_SIZE);
        let old_hk_size = old_hk.as_ref().map_or(0, |h| maxalign(h.len()) + 4);
        let ascending = lo.is_rightmost() && pos as usize == max as usize + 1;
        let target = if ascending { total * 9 / 10 } else { total / 2 };
        let mut best: Option<(usize, usize)> = None;
        let mut left_bytes = 0;
        for k in 1..items.len() {
            left_bytes += sizes[k - 1];
            let fits = left_bytes + sizes[k] <= cap && total - left_bytes + old_hk_size <= cap;
            let dist = left_bytes.abs_diff(target);
            if fits && best.is_none_or(|(_, d)| dist < d) {
                best = Some((k, dist));
            }
        }
        let Some((k, _)) = best else {
            return Err(Error::internal("btree split: no split point leaves both halves fitting"));
        };
        let (left_items, right_items) = items.split_at(k);
        let left_hk = with_child(&right_items[0], INVALID_BLOCK);

        let mut rp = engine.buffers.extend(self.rel, self.fork, 1, None)?.pop().expect("one page");
        let right_blk = rp.block();
        let mut rr = match lo.is_rightmost() {
            true => None,
            false => Some(engine.buffers.read_buffer(self.tag(lo.right), None)?.into_locked()),
        };
        if let Some(r) = &rr {
            opaque(r)?;
        }
        // Build both halves in scratch pages; nothing shared changes before both fit.
        let mut left = vec![0u8; BLCKSZ];
        bt_page_init(
            &mut left,
            &BtOpaque { left: lo.left, right: right_blk, level: lo.level, flags: lo.flags | BTP_INCOMPLETE_SPLIT },
        );
        let mut right = vec![0u8; BLCKSZ];
        bt_page_init(
            &mut right,
            &BtOpaque { left: page.block(), right: lo.right, level: lo.level, flags: lo.flags & BTP_LEAF },
        );
        let add = |p: &mut [u8], item: &[u8]| -> Result<()> {
            match page_add_item(p, item, None, 0)? {
                Some(_) => Ok(()),
                None => Err(Error::internal("btree split: items do not fit on the new page")),
            }
        };
        add(&mut left, &left_hk)?;
        for it in left_items {
            add(&mut left, it)?;
        }
        if let Some(hk) = &old_hk {
            add(&mut right, hk)?;
        }
        for (i, it) in right_items.iter().enumerate() {
            if i == 0 && !lo.is_leaf() {
                add(&mut right, &minus_inf_of(it))?;
            } else {
                add(&mut right, it)?;
            }
        }
        // Critical section: apply and log.
        page[..].copy_from_slice(&left);
        rp[..].copy_from_slice(&right);
        let mut changes: Vec<Change> = vec![Change::Image(&mut page), Change::Image(&mut rp)];
        let mut rr_guard = rr.take();
        if let Some(r) = rr_guard.as_mut() {
            let op = PageOp::SetLeft(right_blk);
            op.apply(r).unwrap_or_else(|e| critical_section_failed("btree split", e));
            changes.push(Change::Ops(r, vec![op]));
        }
        let mut child = child;
        if let Some(c) = child.as_mut() {
            let op = PageOp::ClearFlags(BTP_INCOMPLETE_SPLIT);
            op.apply(c).unwrap_or_else(|e| critical_section_failed("btree split", e));
            changes.push(Change::Ops(c, vec![op]));
        }
        log_changes(engine, XLOG_BTREE_SPLIT, &mut changes);
        drop(changes);
        if lo.is_leaf() && self.ssi_tracked() {
            // The upper part of the page's key range is on the new page now:
            // its SIREAD locks go there too, before either page is unlocked.
            engine.txn.predicate.page_split(self.rel, page.block(), right_blk);
        }
        if testing::split_done(lo.level) {
            // Fault injection for crash tests: the split is durable, its downlink
            // is not (PostgreSQL's case for _bt_finish_split).
            let _ = engine.wal.flush(crate::storage::page::page_lsn(&page));
            eprintln!("btree: aborting after a split (test fault injection)");
            std::process::abort();
        }
        drop(rr_guard);
        drop(rp);
        drop(child);
        drop(extra);
        self.insert_parent(engine, page, with_child(&left_hk, right_blk), stack)
    }

    /// Inserts the downlink `sep` (pointing to the new right page) into the parent
    /// of `left`, which is locked and has INCOMPLETE_SPLIT set. The left page stays
    /// locked until the record that clears its flag is written (locks go upward:
    /// child, then parent, never the other way).
    fn insert_parent<'e>(&self, engine: &'e Engine, left: LockedBuffer<'e>, sep: Vec<u8>, stack: &mut Vec<BlockNumber>) -> Result<()> {
        let lo = opaque(&left)?;
        if lo.is_root() {
            return self.new_root(engine, left, sep);
        }
        let hint = stack.pop();
        let (parent, pos) = self.find_parent(engine, left.block(), lo.level + 1, &sep, hint)?;
        self.insert_into_page(engine, parent, pos, sep, Some(left), None, stack)
    }

    /// Finds and exclusively locks the page at `level` holding the downlink to
    /// `child`, starting at `hint` (the stack) or descending with `sep`, moving
    /// right as needed; finishes the parent's own incomplete split first. Returns
    /// the page and the offset just after the downlink.
    fn find_parent<'e>(
        &self,
        engine: &'e Engine,
        child: BlockNumber,
        level: u32,
        sep: &[u8],
        mut hint: Option<BlockNumber>,
    ) -> Result<(LockedBuffer<'e>, OffsetNumber)> {
        let it = ITup::parse(sep)?;
        let vals = it.values(&self.desc)?;
        let sk = ScanKey { values: vals, tid: TidBound::Exact(it.heap_tid) };
        'outer: loop {
            let mut blk = match hint.take() {
                Some(b) => b,
                None => self.descend_to_level(engine, &sk, level)?,
            };
            loop {
                let p = engine.buffers.read_buffer(self.tag(blk), None)?.into_locked();
                let o = opaque(&p)?;
                if o.level != level {
                    continue 'outer;
                }
                if o.incomplete_split() {
                    self.finish_split(engine, p)?;
                    continue;
                }
                for off in o.first_data_key()..=max_offset(&p) {
                    if page_itup(&p, off)?.child == child {
                        return Ok((p, off + 1));
                    }
                }
                if o.is_rightmost() {
                    return Err(Error::corrupt(format!(
                        "failed to re-find parent key in index {:?} for split pages {child}",
                        self.rel
                    )));
                }
                blk = o.right;
            }
        }
    }

    /// The root split: a new root with downlinks to the old root and its new right
    /// sibling; the metapage points to it (one WAL record with the old root's
    /// flags cleared).
    fn new_root<'e>(&self, engine: &'e Engine, mut left: LockedBuffer<'e>, sep: Vec<u8>) -> Result<()> {
        let lo = opaque(&left)?;
        let mut nr = engine.buffers.extend(self.rel, self.fork, 1, None)?.pop().expect("one page");
        let mut meta = engine.buffers.read_buffer(self.tag(METAPAGE_BLOCK), None)?.into_locked();
        let m = read_meta(&meta)?;
        if m.root != left.block() {
            return Err(Error::corrupt(format!("btree metapage root {} is not the root page {}", m.root, left.block())));
        }
        let nrb = nr.block();
        let mut page = vec![0u8; BLCKSZ];
        bt_page_init(&mut page, &BtOpaque { left: INVALID_BLOCK, right: INVALID_BLOCK, level: lo.level + 1, flags: BTP_ROOT });
        for item in [make_itup(left.block(), Tid::INVALID, ITUP_MINUS_INF, &[]), sep] {
            if page_add_item(&mut page, &item, None, 0)?.is_none() {
                return Err(Error::internal("new btree root: downlinks do not fit"));
            }
        }
        nr[..].copy_from_slice(&page);
        let op = PageOp::ClearFlags(BTP_ROOT | BTP_INCOMPLETE_SPLIT);
        op.apply(&mut left).unwrap_or_else(|e| critical_section_failed("btree new root", e));
        write_meta(&mut meta, &BtMeta { root: nrb, level: lo.level + 1, fast_root: nrb, fast_level: lo.level + 1 });
        log_changes(
            engine,
            XLOG_BTREE_NEWROOT,
            &mut [Change::Image(&mut nr), Change::Ops(&mut left, vec![op]), Change::Image(&mut meta)],
        );
        Ok(())
    }

    /// Completes the split of `left` (locked, INCOMPLETE_SPLIT set) by inserting
    /// the downlink to its right sibling (PostgreSQL's _bt_finish_split).
    pub(crate) fn finish_split<'e>(&self, engine: &'e Engine, left: LockedBuffer<'e>) -> Result<()> {
        let lo = opaque(&left)?;
        if !lo.incomplete_split() {
            return Ok(());
        }
        if lo.is_rightmost() {
            return Err(Error::corrupt(format!("btree page {} has an incomplete split but no right sibling", left.block())));
        }
        let sep = with_child(page_get_item(&left, P_HIKEY)?, lo.right);
        self.insert_parent(engine, left, sep, &mut Vec::new())
    }

    /// Finishes every incomplete split in the index (after crash recovery, or from
    /// VACUUM): walks each level left to right.
    pub fn finish_incomplete_splits(&self, engine: &Engine) -> Result<usize> {
        let mut done = 0;
        let meta = self.meta(engine)?;
        for level in (0..=meta.level).rev() {
            let mut blk = match self.leftmost_at_level(engine, level)? {
                Some(b) => b,
                None => continue,
            };
            loop {
                let page = engine.buffers.read_buffer(self.tag(blk), None)?.into_locked();
                let o = opaque(&page)?;
                if o.incomplete_split() {
                    self.finish_split(engine, page)?;
                    done += 1;
                    continue; // re-read the same page
                }
                if o.is_rightmost() {
                    break;
                }
                blk = o.right;
            }
        }
        Ok(done)
    }

    /// The leftmost page at `level` (following first downlinks from the root).
    pub(crate) fn leftmost_at_level(&self, engine: &Engine, level: u32) -> Result<Option<BlockNumber>> {
        let meta = self.meta(engine)?;
        if meta.level < level {
            return Ok(None);
        }
        let mut blk = meta.root;
        loop {
            let pin = engine.buffers.read_buffer(self.tag(blk), None)?;
            let g = pin.lock_shared();
            let o = opaque(&g)?;
            if o.level == level {
                return Ok(Some(blk));
            }
            blk = page_itup(&g, o.first_data_key())?.child;
        }
    }
}

/// Fault injection for crash tests (not for production use).
#[doc(hidden)]
pub mod testing {
    use std::sync::atomic::{AtomicU64, Ordering};

    /// 0 = off; n = abort the process right after the n-th split from now.
    static ABORT_AFTER_SPLITS: AtomicU64 = AtomicU64::new(0);
    /// The same, counting only splits of internal pages.
    static ABORT_AFTER_UPPER_SPLITS: AtomicU64 = AtomicU64::new(0);

    /// After `n` more page splits, the process flushes the WAL and aborts: the
    /// split is durable but the parent's downlink is not.
    pub fn abort_after_splits(n: u64) {
        ABORT_AFTER_SPLITS.store(n, Ordering::SeqCst);
    }

    /// After `n` more splits of internal pages, the same.
    pub fn abort_after_upper_splits(n: u64) {
        ABORT_AFTER_UPPER_SPLITS.store(n, Ordering::SeqCst);
    }

    pub(super) fn split_done(level: u32) -> bool {
        let tick = |c: &AtomicU64| {
            // Relaxed load first: the common case (off) costs one load.
            c.load(Ordering::Relaxed) != 0 && c.fetch_sub(1, Ordering::SeqCst) == 1
        };
        tick(&ABORT_AFTER_SPLITS) || (level > 0 && tick(&ABORT_AFTER_UPPER_SPLITS))
    }
}
