//! Bottom-up build of a new index from entries in key order (PostgreSQL's
//! nbtsort.c, the idea): leaf pages are filled left to right up to the fill
//! factor, each finished page's first key goes up as a downlink into the level
//! above (which is filled the same way), and at the end the rightmost page of each
//! level is closed and the metapage names the top page as root.
//!
//! Per level the builder holds one open page: its buffer (new, extended by us,
//! pinned and exclusive-locked: no one else can reach the relation before the
//! creating transaction commits) and its items so far. When an item would push
//! the page past its target, the page's last item moves to a new page and becomes
//! the page's high key (PostgreSQL does the same: the high key needs no space
//! reserved in advance, since it takes the place of the item it copies); the new
//! page's block is the page's right link, and a downlink (that item, pointing to
//! the new page) goes into the level above. A finished page is written whole into
//! its buffer and logged as a full-page image (`XLOG_BTREE_BUILD`), so redo
//! restores it without reading anything.
//!
//! Invariants (README "Invariants" hold for the result):
//! 1. Items arrive in strictly increasing (key, heap TID) order; `add` checks each
//!    against the previous one and refuses (`Error::internal`) an item out of order,
//!    so a caller whose sort disagrees with the tree's comparator gets an error,
//!    never a corrupt index.
//! 2. An open page holds at least one data item before it may be closed with a
//!    high key (two on a leaf: one stays, one moves), so no page is ever empty
//!    except a lone empty root.
//! 3. Memory: one page of items per level (at most a few pages in all).

use super::page::*;
use super::tree::BTree;
use super::xlog::{log_changes, Change, XLOG_BTREE_BUILD};
use crate::buffer::LockedBuffer;
use crate::config::BLCKSZ;
use crate::engine::Engine;
use crate::error::{Error, Result, SqlState};
use crate::heap::tuple::{Datum, Tid};
use crate::storage::page::{maxalign, page_add_item, PAGE_HEADER_SIZE};
use crate::storage::{BlockNumber, INVALID_BLOCK};
use std::cmp::Ordering;

/// The default leaf fill factor (PostgreSQL's BTREE_DEFAULT_FILLFACTOR).
pub const BTREE_DEFAULT_FILLFACTOR: u8 = 90;
/// The smallest fill factor the `fillfactor` reloption accepts (BTREE_MIN_FILLFACTOR).
pub const BTREE_MIN_FILLFACTOR: u8 = 10;
/// The fill factor of internal pages (PostgreSQL's BTREE_NONLEAF_FILLFACTOR).
pub const BTREE_NONLEAF_FILLFACTOR: u8 = 70;

/// Bytes of items a page can hold (line pointers included).
const PAGE_CAPACITY: usize = BLCKSZ - PAGE_HEADER_SIZE - BT_SPECIAL_SIZE;

fn item_space(len: usize) -> usize {
    maxalign(len) + 4
}

/// One level's open page.
struct Level<'e> {
    buf: LockedBuffer<'e>,
    /// The page's left sibling (`INVALID_BLOCK` for the leftmost page).
    left: BlockNumber,
    /// Items in order, concatenated; `ends[i]` is the end of item i.
    data: Vec<u8>,
    ends: Vec<usize>,
    /// Bytes the items take on a page (`item_space` summed).
    used: usize,
}

impl Level<'_> {
    fn push(&mut self, item: &[u8]) {
        self.data.extend_from_slice(item);
        self.ends.push(self.data.len());
        self.used += item_space(item.len());
    }

    fn pop(&mut self) -> Vec<u8> {
        let n = self.ends.len();
        let start = if n >= 2 { self.ends[n - 2] } else { 0 };
        let item = self.data.split_off(start);
        self.ends.pop();
        self.used -= item_space(item.len());
        item
    }

    fn clear(&mut self) {
        self.data.clear();
        self.ends.clear();
        self.used = 0;
    }
}

/// What a finished build made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildStats {
    pub leaf_tuples: u64,
    /// Pages per level, leaf level first.
    pub pages_per_level: Vec<usize>,
}

/// A bottom-up build in progress (see the module doc). Made by [`BTree::build`];
/// entries go in with [`BTreeBuild::add`], in (key, heap TID) order; nothing is
/// an index until [`BTreeBuild::finish`] writes the metapage.
pub struct BTreeBuild<'e> {
    tree: &'e BTree,
    engine: &'e Engine,
    /// Free space a leaf keeps (BLCKSZ * (100 - fillfactor) / 100).
    leaf_reserve: usize,
    upper_reserve: usize,
    /// Index 0 is the leaf level.
    levels: Vec<Level<'e>>,
    pages_per_level: Vec<usize>,
    leaf_tuples: u64,
    /// The last leaf item added (for the order check), or empty.
    last: Vec<u8>,
    /// Reused for the order check's scan key.
    key_buf: Vec<u8>,
}

impl BTree {
    /// Starts a bottom-up build of this (new) index: creates the relation file
    /// with its metapage block reserved. `fillfactor` is the leaf fill factor
    /// (10..=100; the `fillfactor` reloption, PostgreSQL's default 90).
    pub fn build<'e>(&'e self, engine: &'e Engine, fillfactor: u8) -> Result<BTreeBuild<'e>> {
        if !(BTREE_MIN_FILLFACTOR..=100).contains(&fillfactor) {
            return Err(Error::internal(format!("btree fillfactor {fillfactor} out of range")));
        }
        engine.create_relation_fork(self.rel, self.fork)?;
        let meta = engine.buffers.extend(self.rel, self.fork, 1, None)?.pop().expect("one page");
        if meta.block() != METAPAGE_BLOCK {
            return Err(Error::internal(format!("new index starts at block {}", meta.block())));
        }
        // The metapage stays all zeroes (not dirty) until `finish`.
        drop(meta);
        Ok(BTreeBuild {
            tree: self,
            engine,
            leaf_reserve: BLCKSZ * (100 - fillfactor as usize) / 100,
            upper_reserve: BLCKSZ * (100 - BTREE_NONLEAF_FILLFACTOR as usize) / 100,
            levels: Vec::new(),
            pages_per_level: Vec::new(),
            leaf_tuples: 0,
            last: Vec::new(),
            key_buf: Vec::new(),
        })
    }
}

impl<'e> BTreeBuild<'e> {
    /// Adds the entry (key `values`, `heap_tid`); entries must come in strictly
    /// increasing (key, heap TID) order by the tree's comparator.
    pub fn add(&mut self, values: &[Option<Datum>], heap_tid: Tid) -> Result<()> {
        let tree = self.tree;
        if values.len() != tree.desc.len() {
            return Err(Error::internal(format!("btree build of {} values into {} columns", values.len(), tree.desc.len())));
        }
        // One buffer for every entry (taken while the page code borrows self).
        let mut itup = std::mem::take(&mut self.key_buf);
        form_leaf_itup(&mut itup, &tree.desc, values, heap_tid)?;
        if itup.len() > BTREE_MAX_ITEM {
            return Err(Error::user(
                SqlState::PROGRAM_LIMIT_EXCEEDED,
                format!("index row size {} exceeds btree maximum, {}", itup.len(), BTREE_MAX_ITEM),
            ));
        }
        if !self.last.is_empty() {
            let sk = ScanKey { values: values.to_vec(), tid: TidBound::Exact(heap_tid) };
            if tree.ctx().compare(&sk, &self.last)? != Ordering::Greater {
                return Err(Error::internal(format!("btree build of {:?}: entries out of order at heap TID {heap_tid:?}", tree.rel)));
            }
        }
        self.last.clear();
        self.last.extend_from_slice(&itup);
        self.leaf_tuples += 1;
        let r = self.add_at(0, &itup);
        self.key_buf = itup;
        r
    }

    /// Adds `item` to the open page of `level` (a leaf entry, or a downlink whose
    /// child is set), closing the page first when the item would pass its target.
    fn add_at(&mut self, level: usize, item: &[u8]) -> Result<()> {
        if level == self.levels.len() {
            self.open_level(level)?;
        }
        let reserve = if level == 0 { self.leaf_reserve } else { self.upper_reserve };
        let lv = &self.levels[level];
        let after = lv.used + item_space(item.len());
        // A leaf keeps one item and moves one; an internal page keeps its
        // minus-infinity downlink and moves one.
        let can_close = lv.ends.len() >= 2;
        if can_close && (after > PAGE_CAPACITY || PAGE_CAPACITY - after < reserve) {
            self.close_page(level, item)
        } else {
            self.levels[level].push(item);
            Ok(())
        }
    }

    fn new_page(&self) -> Result<LockedBuffer<'e>> {
        let mut v = self.engine.buffers.extend(self.tree.rel, self.tree.fork, 1, None)?;
        v.pop().ok_or_else(|| Error::internal("relation extension returned no page"))
    }

    /// A new level above the current top: its first page, whose first item is the
    /// minus-infinity downlink to the leftmost page of the level below.
    fn open_level(&mut self, level: usize) -> Result<()> {
        let buf = self.new_page()?;
        let mut lv = Level { buf, left: INVALID_BLOCK, data: Vec::new(), ends: Vec::new(), used: 0 };
        if level > 0 {
            let first_child = self.leftmost_below(level);
            lv.push(&make_itup(first_child, Tid::INVALID, ITUP_MINUS_INF, &[]));
        }
        self.levels.push(lv);
        self.pages_per_level.push(1);
        Ok(())
    }

    /// The block of the leftmost page of the level below `level`: only asked when
    /// `level` opens, which happens when that level closes its first page.
    fn leftmost_below(&self, level: usize) -> BlockNumber {
        self.levels[level - 1].left
    }

    /// Closes the open page of `level` because `incoming` does not fit: its last
    /// item moves to a new page (with `incoming`) and becomes the high key; the
    /// page is written and logged; the downlink to the new page goes up.
    fn close_page(&mut self, level: usize, incoming: &[u8]) -> Result<()> {
        let next = self.new_page()?;
        let next_blk = next.block();
        let lv = &mut self.levels[level];
        let moved = lv.pop();
        let mut buf = std::mem::replace(&mut lv.buf, next);
        let left = std::mem::replace(&mut lv.left, buf.block());
        let o = BtOpaque { left, right: next_blk, level: level as u32, flags: if level == 0 { BTP_LEAF } else { 0 } };
        write_page(&mut buf, &o, Some(&with_child(&moved, INVALID_BLOCK)), &lv.data, &lv.ends)?;
        lv.clear();
        log_changes(self.engine, XLOG_BTREE_BUILD, &mut [Change::Image(&mut buf)]);
        drop(buf);
        if level == 0 {
            lv.push(&moved);
        } else {
            lv.push(&minus_inf_of(&moved));
        }
        lv.push(incoming);
        self.pages_per_level[level] += 1;
        // The new page's downlink: the moved item (its key is the closed page's
        // high key) pointing to the new page. A level with no parent yet gets one
        // now, starting with the downlink to the closed page (the level's leftmost
        // page: a parent opens when the first page of the level closes).
        if level + 1 == self.levels.len() {
            // This is the level's first close: its `left` is the closed page.
            self.open_level(level + 1)?;
        }
        self.add_at(level + 1, &with_child(&moved, next_blk))
    }

    /// Closes every level's open page (rightmost: no high key), the top one as
    /// root, and writes the metapage.
    pub fn finish(mut self) -> Result<BuildStats> {
        if self.levels.is_empty() {
            self.open_level(0)?;
        }
        let top = self.levels.len() - 1;
        let levels = std::mem::take(&mut self.levels);
        let mut root = INVALID_BLOCK;
        for (i, lv) in levels.into_iter().enumerate() {
            let Level { mut buf, left, data, ends, .. } = lv;
            let mut flags = if i == 0 { BTP_LEAF } else { 0 };
            if i == top {
                flags |= BTP_ROOT;
                root = buf.block();
            }
            let o = BtOpaque { left, right: INVALID_BLOCK, level: i as u32, flags };
            write_page(&mut buf, &o, None, &data, &ends)?;
            log_changes(self.engine, XLOG_BTREE_BUILD, &mut [Change::Image(&mut buf)]);
        }
        let mut meta = self.engine.buffers.read_buffer(self.tree.tag(METAPAGE_BLOCK), None)?.into_locked();
        meta_init(&mut meta[..], &BtMeta { root, level: top as u32, fast_root: root, fast_level: top as u32 });
        log_changes(self.engine, XLOG_BTREE_BUILD, &mut [Change::Image(&mut meta)]);
        self.tree.forget_root_cache();
        Ok(BuildStats { leaf_tuples: self.leaf_tuples, pages_per_level: self.pages_per_level })
    }
}

/// Writes a whole page: special space `o`, then the high key (if any), then the
/// items (`data` cut at `ends`).
fn write_page(page: &mut [u8], o: &BtOpaque, high_key: Option<&[u8]>, data: &[u8], ends: &[usize]) -> Result<()> {
    bt_page_init(page, o);
    let mut add = |item: &[u8]| -> Result<()> {
        match page_add_item(page, item, None, 0)? {
            Some(_) => Ok(()),
            None => Err(Error::internal("btree build: items do not fit on the page")),
        }
    };
    if let Some(hk) = high_key {
        add(hk)?;
    }
    let mut start = 0;
    for &end in ends {
        add(&data[start..end])?;
        start = end;
    }
    Ok(())
}
