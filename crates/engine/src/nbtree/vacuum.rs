//! VACUUM's part: removing index entries that point to dead heap tuples.

use super::page::*;
use super::tree::BTree;
use super::xlog::{critical_section_failed, PageOp, XLOG_BTREE_VACUUM};
use crate::engine::Engine;
use crate::error::Result;
use crate::heap::tuple::Tid;
use crate::storage::page::set_page_lsn;
use crate::wal::{regbuf, RecordBuilder, RmgrId};

/// What `bulk_delete` did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BulkDeleteStats {
    pub pages_scanned: u64,
    pub tuples_removed: u64,
    pub tuples_remaining: u64,
}

impl BTree {
    /// Walks the leaf level left to right and removes the entries whose heap TID
    /// `is_dead` says is dead (PostgreSQL's btbulkdelete). Each leaf is changed
    /// under a **cleanup lock** (exclusive content lock and no other pin): a scan
    /// keeps its pin on a leaf until it has returned the TIDs it copied from it, so
    /// VACUUM cannot remove those entries — and then let the heap reuse the line
    /// pointers — under a scan that is about to fetch them. Empty pages stay in the
    /// tree (no page deletion).
    pub fn bulk_delete(&self, engine: &Engine, is_dead: &dyn Fn(Tid) -> bool) -> Result<BulkDeleteStats> {
        let mut stats = BulkDeleteStats::default();
        let Some(mut blk) = self.leftmost_at_level(engine, 0)? else { return Ok(stats) };
        loop {
            let pin = engine.buffers.read_buffer(self.tag(blk), None)?;
            let mut g = pin.lock_cleanup()?;
            let o = opaque(&g)?;
            stats.pages_scanned += 1;
            let mut dead = Vec::new();
            for off in o.first_data_key()..=max_offset(&g) {
                if is_dead(page_itup(&g, off)?.heap_tid) {
                    dead.push(off);
                } else {
                    stats.tuples_remaining += 1;
                }
            }
            if !dead.is_empty() {
                dead.reverse();
                stats.tuples_removed += dead.len() as u64;
                let op = PageOp::Delete(dead);
                op.apply(&mut g).unwrap_or_else(|e| critical_section_failed("btree vacuum", e));
                let mut data = Vec::new();
                op.encode(&mut data);
                let end = {
                    let mut rb = RecordBuilder::new(RmgrId::Btree, XLOG_BTREE_VACUUM);
                    rb.register_buffer(0, pin.tag(), &g[..], regbuf::STANDARD);
                    rb.register_block_data(0, &data);
                    engine.wal.insert(&rb).unwrap_or_else(|e| critical_section_failed("btree vacuum WAL", e))
                };
                set_page_lsn(&mut g[..], end);
                g.mark_dirty();
            }
            if o.is_rightmost() {
                return Ok(stats);
            }
            blk = o.right;
        }
    }
}
