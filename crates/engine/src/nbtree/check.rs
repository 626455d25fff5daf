//! The structure checker (in the spirit of PostgreSQL's amcheck): every invariant
//! of README "Invariants", checked page by page. Meant for a quiescent index
//! (tests, after recovery); it takes one shared lock at a time.

use super::page::*;
use super::tree::BTree;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::storage::page::{page_get_item, page_is_new};
use crate::storage::{BlockNumber, INVALID_BLOCK};
use std::cmp::Ordering;
use std::collections::HashSet;

/// What the checker saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TreeReport {
    /// Pages per level, root level first.
    pub pages_per_level: Vec<usize>,
    pub leaf_tuples: u64,
    pub incomplete_splits: usize,
    /// Of which on internal pages.
    pub incomplete_upper_splits: usize,
    /// All-zero pages not in the tree (extended, then a crash before first use).
    pub unused_pages: usize,
}

struct PageInfo {
    block: BlockNumber,
    opaque: BtOpaque,
    high_key: Option<Vec<u8>>,
    /// Internal pages: (child, pivot tuple).
    downlinks: Vec<(BlockNumber, Vec<u8>)>,
}

impl BTree {
    /// Checks the whole tree; a violated invariant is `Error::Internal` naming it.
    pub fn check_invariants(&self, engine: &Engine) -> Result<TreeReport> {
        let bad = |what: String| Err(Error::internal(format!("btree {:?}: {what}", self.rel)));
        let ctx = self.ctx();
        let meta = self.meta(engine)?;
        let mut report = TreeReport::default();
        let mut seen: HashSet<BlockNumber> = HashSet::new();
        let mut upper: Option<Vec<PageInfo>> = None;
        let mut blk = meta.root;
        for level in (0..=meta.level).rev() {
            let mut pages: Vec<PageInfo> = Vec::new();
            let mut prev: Option<&PageInfo> = None;
            let mut cur = blk;
            loop {
                if !seen.insert(cur) {
                    return bad(format!("page {cur} reached twice"));
                }
                let pin = engine.buffers.read_buffer(self.tag(cur), None)?;
                let g = pin.lock_shared();
                let o = opaque(&g)?;
                if o.level != level {
                    return bad(format!("page {cur} has level {} on level {level}", o.level));
                }
                if o.is_leaf() != (level == 0) || o.flags & (BTP_DELETED | BTP_HALF_DEAD | BTP_META) != 0 {
                    return bad(format!("page {cur} has flags {:#x} on level {level}", o.flags));
                }
                if o.is_root() != (cur == meta.root) {
                    return bad(format!("page {cur}: root flag {} but metapage root {}", o.is_root(), meta.root));
                }
                let expect_left = prev.map_or(INVALID_BLOCK, |p| p.block);
                if o.left != expect_left {
                    return bad(format!("page {cur} has left link {} but its left sibling is {expect_left}", o.left));
                }
                if o.incomplete_split() {
                    report.incomplete_splits += 1;
                    report.incomplete_upper_splits += (level > 0) as usize;
                }
                let max = max_offset(&g);
                let first = o.first_data_key();
                let high_key = if o.is_rightmost() { None } else { Some(page_get_item(&g, P_HIKEY)?.to_vec()) };
                if let Some(hk) = &high_key {
                    let h = ITup::parse(hk)?;
                    if h.minus_inf() || h.child != INVALID_BLOCK {
                        return bad(format!("page {cur}: the high key is a downlink"));
                    }
                }
                let mut downlinks = Vec::new();
                let mut last: Option<&[u8]> = None;
                for off in first..=max {
                    let item = page_get_item(&g, off)?;
                    let it = ITup::parse(item)?;
                    if level > 0 {
                        if it.minus_inf() != (off == first) {
                            return bad(format!("page {cur} item {off}: minus-infinity flag {}", it.minus_inf()));
                        }
                        if it.child == INVALID_BLOCK {
                            return bad(format!("page {cur} item {off}: internal item without a downlink"));
                        }
                        downlinks.push((it.child, item.to_vec()));
                    } else {
                        if it.minus_inf() || it.child != INVALID_BLOCK {
                            return bad(format!("leaf page {cur} item {off} is a pivot"));
                        }
                        report.leaf_tuples += 1;
                    }
                    if let Some(l) = last {
                        if ctx.compare_items(l, item)? != Ordering::Less {
                            return bad(format!("page {cur}: items {} and {off} out of order", off - 1));
                        }
                    } else if let (Some(p), false) = (prev.and_then(|p| p.high_key.as_ref()), it.minus_inf()) {
                        if ctx.compare_items(p, item)? == Ordering::Greater {
                            return bad(format!("page {cur}: first item below the left sibling's high key"));
                        }
                    }
                    if let Some(hk) = &high_key {
                        if ctx.compare_items(item, hk)? != Ordering::Less {
                            return bad(format!("page {cur}: item {off} not below the high key"));
                        }
                    }
                    last = Some(item);
                }
                if level > 0 && downlinks.is_empty() {
                    return bad(format!("internal page {cur} has no downlinks"));
                }
                drop(g);
                pages.push(PageInfo { block: cur, opaque: o, high_key, downlinks });
                prev = pages.last();
                if o.is_rightmost() {
                    break;
                }
                cur = o.right;
            }
            // Downlinks of the level above: in order, one per page of this level,
            // except right halves of incomplete splits; each pivot equals the left
            // sibling's high key.
            if let Some(up) = &upper {
                // A minus-infinity downlink stands for its parent's lower bound:
                // the high key of the parent's left sibling.
                let mut links: Vec<(BlockNumber, Option<Vec<u8>>)> = Vec::new();
                for (pi, p) in up.iter().enumerate() {
                    for (j, (child, item)) in p.downlinks.iter().enumerate() {
                        let key = if j == 0 { pi.checked_sub(1).and_then(|l| up[l].high_key.clone()) } else { Some(item.clone()) };
                        links.push((*child, key));
                    }
                }
                let mut li = 0;
                for (i, p) in pages.iter().enumerate() {
                    if li < links.len() && links[li].0 == p.block {
                        if i > 0 {
                            let hk = pages[i - 1].high_key.as_ref().expect("not rightmost");
                            let Some(key) = &links[li].1 else {
                                return bad(format!("page {} has a left sibling but a leftmost downlink", p.block));
                            };
                            if ctx.compare_items(hk, key)? != Ordering::Equal {
                                return bad(format!("downlink to page {} differs from its left sibling's high key", p.block));
                            }
                        }
                        li += 1;
                    } else if i > 0 && pages[i - 1].opaque.incomplete_split() {
                        // reachable through the right link only, as it should be
                    } else {
                        return bad(format!("page {} on level {level} has no downlink", p.block));
                    }
                }
                if li != links.len() {
                    return bad(format!("downlink to page {} points outside level {level} order", links[li].0));
                }
            }
            report.pages_per_level.push(pages.len());
            if level > 0 {
                blk = pages[0].downlinks[0].0;
            }
            upper = Some(pages);
        }
        // Every block but the metapage is in the tree, or was never used.
        let n = engine.buffers.nblocks(self.rel, self.fork)?;
        for b in 1..n {
            if seen.contains(&b) {
                continue;
            }
            let pin = engine.buffers.read_buffer(self.tag(b), None)?;
            let g = pin.lock_shared();
            if !page_is_new(&g) {
                return bad(format!("page {b} is not reachable from the root"));
            }
            report.unused_pages += 1;
        }
        Ok(report)
    }
}
