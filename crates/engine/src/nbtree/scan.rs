//! Forward range scans.
//!
//! A scan reads one leaf page at a time under a shared lock: it copies every
//! matching entry and the page's right link, releases the lock (keeping the pin
//! until the entries are returned, see README "Vacuum and pins"), and later goes on
//! at the saved right link. That is safe under concurrent splits: a split moves
//! entries only to the right, onto a new page inserted between the page we read and
//! the saved right link — entries we have already copied. Entries inserted after we
//! read a page may be missed, which is fine: they were not committed before the scan
//! started.

use super::page::*;
use super::tree::BTree;
use crate::buffer::PinnedBuffer;
use crate::engine::Engine;
use crate::error::Result;
use crate::heap::tuple::{AttrDesc, Datum, Tid};
use crate::lmgr::predicate::{PredTarget, SerializableXact};
use crate::storage::page::{page_get_item, PageItems};
use crate::storage::BlockNumber;
use std::cmp::Ordering;
use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::Arc;

/// The key range of a scan; each bound is a prefix of the key columns.
#[derive(Clone, Debug)]
pub struct ScanBounds<'a> {
    pub lower: Bound<Vec<Option<Datum<'a>>>>,
    pub upper: Bound<Vec<Option<Datum<'a>>>>,
}

impl<'a> ScanBounds<'a> {
    pub fn all() -> ScanBounds<'a> {
        ScanBounds { lower: Bound::Unbounded, upper: Bound::Unbounded }
    }
    /// `key = values` (a prefix of the columns).
    pub fn eq(values: Vec<Option<Datum<'a>>>) -> ScanBounds<'a> {
        ScanBounds { lower: Bound::Included(values.clone()), upper: Bound::Included(values) }
    }
    pub fn range(lower: Bound<Vec<Option<Datum<'a>>>>, upper: Bound<Vec<Option<Datum<'a>>>>) -> ScanBounds<'a> {
        ScanBounds { lower, upper }
    }
}

/// One entry returned by a scan: the key image (see `form_leaf_itup`: a null
/// bitmap when `has_nulls`, then the data) and the heap TID.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexEntry {
    pub key: Vec<u8>,
    pub has_nulls: bool,
    pub tid: Tid,
}

impl IndexEntry {
    /// The key's values, one per column of `desc` (the index's key descriptor).
    pub fn values<'a>(&'a self, desc: &[AttrDesc]) -> Result<Vec<Option<Datum<'a>>>> {
        deform_key(desc, &self.key, self.has_nulls)
    }
}

/// A forward scan (an iterator of heap TIDs; `next_entry` gives keys too).
pub struct BTreeScan<'a> {
    tree: &'a BTree,
    engine: &'a Engine,
    lower: ScanKey<'a>,
    /// Stop at the first entry greater than this.
    upper: Option<ScanKey<'a>>,
    /// Entries of the current page not yet returned: the heap TID and where
    /// the key lies in `keys` (one buffer reused page after page: a scan
    /// that wants TIDs only allocates nothing per entry).
    items: VecDeque<(Tid, std::ops::Range<usize>, bool)>,
    keys: Vec<u8>,
    /// Pin on the leaf the buffered entries came from.
    pin: Option<PinnedBuffer<'a>>,
    next_block: Option<BlockNumber>,
    /// Backward scans: the block the buffered entries came from (the next page
    /// is the one whose right link points to it).
    cur_block: BlockNumber,
    backward: bool,
    started: bool,
    done: bool,
    /// SERIALIZABLE: the transaction whose SIREAD locks go on every leaf page
    /// the scan reads (`serializable`); `None` for everyone else.
    ssi: Option<Arc<SerializableXact>>,
}

impl BTree {
    /// Starts a forward scan over `bounds`.
    pub fn scan<'a>(&'a self, engine: &'a Engine, bounds: ScanBounds<'a>) -> BTreeScan<'a> {
        self.scan_dir(engine, bounds, false)
    }

    /// Starts a backward scan over `bounds`: entries in descending order.
    pub fn scan_backward<'a>(&'a self, engine: &'a Engine, bounds: ScanBounds<'a>) -> BTreeScan<'a> {
        self.scan_dir(engine, bounds, true)
    }

    fn scan_dir<'a>(&'a self, engine: &'a Engine, bounds: ScanBounds<'a>, backward: bool) -> BTreeScan<'a> {
        let lower = match bounds.lower {
            Bound::Unbounded => ScanKey { values: Vec::new(), tid: TidBound::MinusInf },
            Bound::Included(v) => ScanKey { values: v, tid: TidBound::MinusInf },
            Bound::Excluded(v) => ScanKey { values: v, tid: TidBound::PlusInf },
        };
        let upper = match bounds.upper {
            Bound::Unbounded => None,
            Bound::Included(v) => Some(ScanKey { values: v, tid: TidBound::PlusInf }),
            Bound::Excluded(v) => Some(ScanKey { values: v, tid: TidBound::MinusInf }),
        };
        BTreeScan {
            tree: self,
            engine,
            lower,
            upper,
            items: VecDeque::new(),
            keys: Vec::new(),
            pin: None,
            next_block: None,
            cur_block: crate::storage::INVALID_BLOCK,
            backward,
            started: false,
            done: false,
            ssi: None,
        }
    }
}

impl<'a> BTreeScan<'a> {
    /// A scan by the serializable transaction `sx` (`None`: not serializable,
    /// nothing changes): each leaf page it reads gets a SIREAD page lock,
    /// taken under the page's shared content lock (PostgreSQL's
    /// PredicateLockPage in _bt_readpage), including the one leaf a scan that
    /// finds nothing looks at, where its keys would go. Page locks cover the
    /// gaps: an insert checks the page it goes into (`insert_serializable`),
    /// and a split copies the locks to the new right page. TOAST chunk
    /// indexes and catalogs are not tracked.
    pub fn serializable(mut self, sx: Option<Arc<SerializableXact>>) -> Self {
        self.ssi = sx.filter(|_| self.tree.ssi_tracked());
        self
    }

    /// The SIREAD lock on the leaf `block` being read (its content lock held).
    #[inline]
    fn predicate_lock_page(&self, block: BlockNumber) {
        if let Some(sx) = &self.ssi {
            self.engine.txn.predicate.acquire(sx, PredTarget::Page(self.tree.rel, block));
        }
    }

    /// The next entry in key order, or `None` at the end of the range.
    pub fn next_entry(&mut self) -> Result<Option<IndexEntry>> {
        Ok(self.next_item()?.map(|(tid, r, has_nulls)| IndexEntry { key: self.keys[r].to_vec(), has_nulls, tid }))
    }

    /// The next entry's heap TID and the range of its key in `keys`.
    fn next_item(&mut self) -> Result<Option<(Tid, std::ops::Range<usize>, bool)>> {
        loop {
            if let Some(e) = self.items.pop_front() {
                return Ok(Some(e));
            }
            if self.done {
                self.pin = None;
                return Ok(None);
            }
            if self.backward {
                self.pin = None;
                self.step_backward()?;
                continue;
            }
            let (pin, first) = if !self.started {
                self.started = true;
                (self.tree.descend_read(self.engine, &self.lower)?, true)
            } else {
                match self.next_block {
                    Some(b) => (self.engine.buffers.read_buffer(self.tree.tag(b), None)?, false),
                    None => {
                        self.done = true;
                        continue;
                    }
                }
            };
            self.pin = None;
            self.read_page(pin, first)?;
        }
    }

    /// Buffers a page's entries: `keys` holds only the current page's keys.
    fn push_item(&mut self, it: &ITup<'_>) {
        let start = self.keys.len();
        self.keys.extend_from_slice(it.key);
        self.items.push_back((it.heap_tid, start..self.keys.len(), it.has_nulls()));
    }

    fn read_page(&mut self, mut pin: PinnedBuffer<'a>, first: bool) -> Result<()> {
        self.keys.clear();
        let tree = self.tree;
        let ctx = tree.ctx();
        // The upper bound's integer first column, if any, read once.
        let uprobe = self.upper.as_ref().and_then(|u| ctx.int_probe(u));
        loop {
            let moved = {
                let g = pin.lock_shared();
                let o = opaque(&g)?;
                if first && tree.beyond_high_key(&g, &o, &self.lower)? {
                    Some(o.right)
                } else {
                    self.predicate_lock_page(pin.block());
                    let max = max_offset(&g);
                    let start = if first { tree.first_greater(&g, &self.lower, o.first_data_key(), max)? } else { o.first_data_key() };
                    let items = PageItems::new(&g)?;
                    for off in start..=max {
                        let item = items.get(off)?;
                        if let Some(u) = &self.upper {
                            if ctx.compare_probe(u, uprobe, item)? == Ordering::Less {
                                self.done = true;
                                break;
                            }
                        }
                        self.push_item(&ITup::parse(item)?);
                    }
                    if o.is_rightmost() {
                        self.done = true;
                    } else {
                        if let Some(u) = &self.upper {
                            if ctx.compare_probe(u, uprobe, page_get_item(&g, P_HIKEY)?)? == Ordering::Less {
                                self.done = true;
                            }
                        }
                        self.next_block = Some(o.right);
                    }
                    None
                }
            };
            match moved {
                Some(r) => pin = self.engine.buffers.read_buffer(tree.tag(r), None)?,
                None => {
                    self.pin = Some(pin);
                    return Ok(());
                }
            }
        }
    }
}

impl<'a> BTreeScan<'a> {
    /// Backward scans. The first page is found like a forward scan's, with the
    /// upper bound (no upper bound: plus infinity, the rightmost leaf). Then the
    /// scan moves left: it reads the left link L of the page P it read, locks L,
    /// and if L's right link is no longer P (L split since), moves right from L
    /// until the page whose right link is P — P's left neighbour now. The check and
    /// the copy of the entries happen under the same shared lock, one lock at a
    /// time (never a lock on the left while holding one on the right).
    fn step_backward(&mut self) -> Result<()> {
        self.keys.clear();
        let tree = self.tree;
        let ctx = tree.ctx();
        let first = !self.started;
        self.started = true;
        let top = ScanKey { values: Vec::new(), tid: TidBound::PlusInf };
        let (mut blk, target) = if first {
            let sk = self.upper.as_ref().unwrap_or(&top);
            (tree.descend_read(self.engine, sk)?.block(), None)
        } else {
            match self.next_block {
                Some(b) => (b, Some(self.cur_block)),
                None => {
                    self.done = true;
                    return Ok(());
                }
            }
        };
        loop {
            let pin = self.engine.buffers.read_buffer(tree.tag(blk), None)?;
            let g = pin.lock_shared();
            let o = opaque(&g)?;
            let upper = self.upper.as_ref().unwrap_or(&top);
            let wrong_page = match target {
                None => tree.beyond_high_key(&g, &o, upper)?,
                Some(t) => o.right != t,
            };
            if wrong_page {
                if o.is_rightmost() {
                    return Err(crate::error::Error::corrupt(format!(
                        "btree {:?}: left sibling chain of block {} broken",
                        tree.rel, self.cur_block
                    )));
                }
                blk = o.right;
                continue;
            }
            self.predicate_lock_page(blk);
            let max = max_offset(&g);
            let fdk = o.first_data_key();
            let end = if first { tree.first_greater(&g, upper, fdk, max)? } else { max + 1 };
            for off in (fdk..end).rev() {
                let item = page_get_item(&g, off)?;
                // Below the lower bound: the lower key is not less than the item.
                if ctx.compare(&self.lower, item)? != Ordering::Less {
                    self.done = true;
                    break;
                }
                self.push_item(&ITup::parse(item)?);
            }
            if o.is_leftmost() {
                self.done = true;
            }
            self.next_block = Some(o.left);
            self.cur_block = blk;
            drop(g);
            self.pin = Some(pin);
            return Ok(());
        }
    }
}

impl Iterator for BTreeScan<'_> {
    type Item = Result<Tid>;
    fn next(&mut self) -> Option<Result<Tid>> {
        self.next_item().transpose().map(|r| r.map(|(tid, _, _)| tid))
    }
}
