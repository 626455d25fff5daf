//! VACUUM's part and the cleanup after splits: removing entries (dead heap TIDs,
//! or copies a finished split left in the old bucket), then squeezing the bucket's
//! chain so that emptied overflow pages go back to the bitmaps for reuse.
//!
//! All of it runs per bucket under a **cleanup lock on the primary page, held
//! until the bucket is done** (exclusive lock, and ours the only pin at the time
//! it was granted): every scan and insert enters a bucket through its primary
//! page and keeps it pinned while inside, so holding its lock keeps everyone out
//! and waiting for the pins to go lets everyone inside finish. That is stronger
//! than PostgreSQL, which walks the chain with lock chaining and lets scans follow
//! behind; our buckets are short (ffactor entries, a page or two), so the
//! simplicity is cheap.

use super::buckets::bucket_of;
use super::index::{page_entries, HashIndex};
use super::page::*;
use super::xlog::*;
use crate::buffer::LockedBuffer;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::heap::tuple::Tid;
use crate::storage::{BlockNumber, INVALID_BLOCK};

/// What a bulk delete (or a cleanup) did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HashBulkDeleteStats {
    pub buckets_scanned: u64,
    pub tuples_removed: u64,
    pub tuples_remaining: u64,
    /// Copies left behind by finished splits, removed.
    pub split_leftovers_removed: u64,
    /// Overflow pages emptied by the squeeze and returned to the bitmaps.
    pub pages_freed: u64,
}

impl HashIndex {
    /// Removes the entries whose heap TID `is_dead` says is dead, in every bucket
    /// (PostgreSQL's `hashbulkdelete`), cleans up after finished splits on the way,
    /// and sets the metapage's entry count. Buckets added by splits during the
    /// pass are visited too. `interrupted` is asked between buckets (cancel).
    pub fn bulk_delete(
        &self,
        engine: &Engine,
        is_dead: &dyn Fn(Tid) -> bool,
        interrupted: &dyn Fn() -> Result<()>,
    ) -> Result<HashBulkDeleteStats> {
        let mut stats = HashBulkDeleteStats::default();
        // Inserts counted but not yet folded into the metapage's count are in
        // the buckets this pass counts: the count set at the end includes them,
        // so they must not be added again by the next split decision (else the
        // index splits as if it still held everything VACUUM removed).
        self.cache.take_pending();
        let mut maxbucket = self.meta(engine)?.maxbucket;
        let mut bucket = 0u32;
        loop {
            while bucket <= maxbucket {
                interrupted()?;
                let blk = self.block_of(engine, bucket)?;
                let primary = engine.buffers.read_buffer(self.tag(blk), None)?.into_cleanup_locked()?;
                let o = opaque(&primary)?;
                if !o.is_bucket_page() || o.bucket != bucket {
                    return Err(Error::corrupt(format!("hash index {:?}: block {blk} is not bucket {bucket}: {o:?}", self.rel)));
                }
                // Copies of a split are removed only once the split is finished
                // (until then the new bucket's scans read the originals here).
                let split = (!o.being_split() && o.needs_split_cleanup()).then_some(o.split_maxbucket());
                self.bucket_cleanup(engine, primary, bucket, split, Some(is_dead), &mut stats)?;
                stats.buckets_scanned += 1;
                bucket += 1;
            }
            let m = self.meta(engine)?;
            if m.maxbucket == maxbucket {
                break;
            }
            maxbucket = m.maxbucket;
        }
        let mut metabuf = engine.buffers.read_buffer(self.tag(METAPAGE_BLOCK), None)?.into_locked();
        let old = read_meta(&metabuf)?;
        let mut m = old.clone();
        m.ntuples = stats.tuples_remaining;
        let ops = PageOp::diff(META_OFF, &old.encode(), &m.encode());
        if !ops.is_empty() {
            apply_all(&mut metabuf, &ops, "hash update metapage");
            log_changes(engine, XLOG_HASH_UPDATE_META_PAGE, &mut [Change::Ops(&mut metabuf, ops)]);
        }
        self.cache.set_ntuples(m.ntuples);
        Ok(stats)
    }

    /// Removes from `bucket` (its primary page `primary` under a cleanup lock,
    /// kept until the end) the entries `is_dead` names and, with `split_mb` (the
    /// `maxbucket` of the bucket's last split), the copies that split moved to the
    /// new bucket, clearing the split-cleanup flag; then squeezes the chain.
    pub(crate) fn bucket_cleanup<'e>(
        &self,
        engine: &'e Engine,
        mut primary: LockedBuffer<'e>,
        bucket: u32,
        split_mb: Option<u32>,
        is_dead: Option<&dyn Fn(Tid) -> bool>,
        stats: &mut HashBulkDeleteStats,
    ) -> Result<()> {
        let mut removed_any = false;
        let mut blk = INVALID_BLOCK;
        loop {
            let mut over: Option<LockedBuffer<'e>> = if blk == INVALID_BLOCK {
                None
            } else {
                Some(self.chain_page(engine, blk, bucket)?.into_locked())
            };
            let page: &mut LockedBuffer<'e> = over.as_mut().unwrap_or(&mut primary);
            let mut dead = Vec::new();
            for off in 1..=max_offset(page) {
                let e = page_entry(page, off)?;
                if split_mb.is_some_and(|mb| bucket_of(e.hash, mb) != bucket) {
                    dead.push(off);
                    stats.split_leftovers_removed += 1;
                } else if is_dead.is_some_and(|f| f(e.tid)) {
                    dead.push(off);
                    stats.tuples_removed += 1;
                } else {
                    stats.tuples_remaining += 1;
                }
            }
            if !dead.is_empty() {
                removed_any = true;
                dead.reverse();
                let ops = vec![PageOp::Delete(dead)];
                apply_all(page, &ops, "hash delete");
                log_changes(engine, XLOG_HASH_DELETE, &mut [Change::Ops(page, ops)]);
            }
            let next = opaque(page)?.next;
            drop(over);
            if next == INVALID_BLOCK {
                break;
            }
            blk = next;
        }
        if split_mb.is_some() {
            let mut o = opaque(&primary)?;
            o.flags &= !LH_BUCKET_NEEDS_SPLIT_CLEANUP;
            let ops = vec![PageOp::Write { at: SPECIAL_OFF as u16, bytes: opaque_bytes(&o).to_vec() }];
            apply_all(&mut primary, &ops, "hash split cleanup");
            log_changes(engine, XLOG_HASH_SPLIT_CLEANUP, &mut [Change::Ops(&mut primary, ops)]);
        }
        if removed_any {
            stats.pages_freed += self.squeeze(engine, &mut primary, bucket)?;
        }
        Ok(())
    }

    /// Compacts `bucket`'s chain (PostgreSQL's `_hash_squeezebucket`): entries
    /// move from the last page to the first page with room, and each emptied last
    /// page is unlinked and freed, until the pages left hold everything. The
    /// caller holds the primary page under a cleanup lock: nobody else is in the
    /// bucket. Returns the number of pages freed.
    fn squeeze<'e>(&self, engine: &'e Engine, primary: &mut LockedBuffer<'e>, bucket: u32) -> Result<u64> {
        // The chain's blocks and entry counts (a bucket is a few pages).
        let mut chain: Vec<(BlockNumber, usize)> = vec![(primary.block(), max_offset(primary) as usize)];
        let mut next = opaque(primary)?.next;
        while next != INVALID_BLOCK {
            let pin = self.chain_page(engine, next, bucket)?;
            let g = pin.lock_shared();
            chain.push((next, max_offset(&g) as usize));
            next = opaque(&g)?.next;
        }
        let mut freed = 0;
        let mut w = 0usize;
        while chain.len() > 1 {
            let r = chain.len() - 1;
            // Fill earlier pages from the last one.
            while chain[r].1 > 0 {
                while w < r && chain[w].1 >= ENTRIES_PER_PAGE {
                    w += 1;
                }
                if w >= r {
                    break;
                }
                // Forward order along the chain: the earlier page first.
                let mut write_owned = if w == 0 { None } else { Some(engine.buffers.read_buffer(self.tag(chain[w].0), None)?.into_locked()) };
                let write: &mut LockedBuffer<'e> = write_owned.as_mut().unwrap_or(&mut *primary);
                let mut read = engine.buffers.read_buffer(self.tag(chain[r].0), None)?.into_locked();
                let (mut wents, _) = page_entries(write)?;
                let (mut rents, _) = page_entries(&read)?;
                let n = (ENTRIES_PER_PAGE - wents.len()).min(rents.len());
                wents.extend(rents.drain(rents.len() - n..));
                let wimg = build_page(&opaque(write)?, &mut wents)?;
                let rimg = build_page(&opaque(&read)?, &mut rents)?;
                write.copy_from_slice(&wimg);
                read.copy_from_slice(&rimg);
                log_changes(engine, XLOG_HASH_MOVE_PAGE_CONTENTS, &mut [Change::Image(write), Change::Image(&mut read)]);
                chain[w].1 += n;
                chain[r].1 -= n;
            }
            if chain[r].1 > 0 {
                break;
            }
            // The last page is empty: unlink and free it.
            self.free_overflow_page(engine, primary, chain[r - 1].0, chain[r].0)?;
            chain.pop();
            freed += 1;
        }
        Ok(freed)
    }

    /// Unlinks the empty last page `blk` of a chain (after `prev`, which may be the
    /// primary page `primary`) and marks it free in its bitmap page (PostgreSQL's
    /// `_hash_freeovflpage`): one WAL record for the previous page's link, the
    /// freed page, the bitmap bit and the metapage. Lock order: chain pages,
    /// metapage, bitmap page.
    fn free_overflow_page<'e>(&self, engine: &'e Engine, primary: &mut LockedBuffer<'e>, prev: BlockNumber, blk: BlockNumber) -> Result<()> {
        let mut prev_owned = if prev == primary.block() { None } else { Some(engine.buffers.read_buffer(self.tag(prev), None)?.into_locked()) };
        let prevp: &mut LockedBuffer<'e> = prev_owned.as_mut().unwrap_or(&mut *primary);
        let mut page = engine.buffers.read_buffer(self.tag(blk), None)?.into_locked();
        let mut po = opaque(prevp)?;
        if po.next != blk || max_offset(&page) != 0 {
            return Err(Error::internal(format!("hash squeeze: block {blk} is not the empty end of the chain after {prev}")));
        }
        let mut metabuf = engine.buffers.read_buffer(self.tag(METAPAGE_BLOCK), None)?.into_locked();
        let mut old_meta = read_meta(&metabuf)?;
        let k = (blk / BITS_PER_MAP) as usize;
        if k >= MAX_BITMAPS {
            // Beyond what the bitmaps cover: unlinked and left unused (a leak
            // the checker counts), rather than tracked.
            po.next = INVALID_BLOCK;
            let ops = vec![PageOp::Write { at: SPECIAL_OFF as u16, bytes: opaque_bytes(&po).to_vec() }];
            apply_all(prevp, &ops, "hash free overflow page");
            hash_page_init(&mut page, &HashOpaque::unused());
            log_changes(engine, XLOG_HASH_SQUEEZE_PAGE, &mut [Change::Ops(prevp, ops), Change::Image(&mut page)]);
            return Ok(());
        }
        while old_meta.bitmaps.len() <= k {
            // A new bitmap page (relation extension under the metapage lock).
            let mut bm = engine.buffers.extend(self.rel, crate::storage::ForkNumber::Main, 1, None)?.pop().expect("one page");
            bitmap_init(&mut bm);
            let mut m = old_meta.clone();
            m.bitmaps.push(bm.block());
            let ops = PageOp::diff(META_OFF, &old_meta.encode(), &m.encode());
            apply_all(&mut metabuf, &ops, "hash new bitmap page");
            log_changes(engine, XLOG_HASH_INIT_BITMAP_PAGE, &mut [Change::Image(&mut bm), Change::Ops(&mut metabuf, ops)]);
            old_meta = m;
        }
        let mut bm = engine.buffers.read_buffer(self.tag(old_meta.bitmaps[k]), None)?.into_locked();
        let (at, bit) = bitmap_bit(blk);
        let bm_ops = vec![PageOp::Write { at: at as u16, bytes: vec![bm[at] | bit] }];
        let mut m = old_meta.clone();
        m.nfree += 1;
        m.first_free = m.first_free.min(blk);
        let meta_ops = PageOp::diff(META_OFF, &old_meta.encode(), &m.encode());
        po.next = INVALID_BLOCK;
        let prev_ops = vec![PageOp::Write { at: SPECIAL_OFF as u16, bytes: opaque_bytes(&po).to_vec() }];
        apply_all(prevp, &prev_ops, "hash free overflow page");
        hash_page_init(&mut page, &HashOpaque::unused());
        apply_all(&mut bm, &bm_ops, "hash free overflow page");
        apply_all(&mut metabuf, &meta_ops, "hash free overflow page");
        log_changes(
            engine,
            XLOG_HASH_SQUEEZE_PAGE,
            &mut [Change::Ops(prevp, prev_ops), Change::Image(&mut page), Change::Ops(&mut bm, bm_ops), Change::Ops(&mut metabuf, meta_ops)],
        );
        Ok(())
    }
}
