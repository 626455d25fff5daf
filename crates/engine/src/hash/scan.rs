//! Equality scans: the heap TIDs of the entries whose hash code is the one sought.
//!
//! A scan finds the bucket (README, "Finding a bucket"), keeps the bucket's
//! primary page **pinned until it ends**, and reads the chain one page at a time
//! under a shared lock, copying the matching TIDs. The pin is what makes a page at
//! a time safe: a split of the bucket, VACUUM's removal of entries and the squeeze
//! of its chain all need a cleanup lock on the primary page, so none of them
//! starts while a scan is in the bucket; only inserts happen meanwhile (entries
//! added after the scan read a page are not committed before it started).
//!
//! A bucket **being populated** by an unfinished split holds only part of its
//! entries: the scan also pins the old bucket's primary page, skips the copies
//! (MOVED_BY_SPLIT) in the new bucket and reads the originals in the old one
//! (PostgreSQL 10's way).
//!
//! SERIALIZABLE ([`HashScan::serializable`]): the scan takes a SIREAD lock on
//! the primary page of the bucket it found, under that page's shared lock
//! (PostgreSQL's PredicateLockPage in `_hash_first`). The bucket is the scan's
//! predicate: every entry with the hash code sought is in it, and an insert of
//! such an entry checks that page (`HashIndex::insert_serializable`).

use super::buckets::split_source;
use super::index::HashIndex;
use super::page::*;
use crate::buffer::PinnedBuffer;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::heap::tuple::Tid;
use crate::lmgr::predicate::{PredTarget, SerializableXact};
use crate::storage::{BlockNumber, INVALID_BLOCK};
use std::collections::VecDeque;
use std::sync::Arc;

/// A scan for one hash code (an iterator of heap TIDs, in no particular order).
pub struct HashScan<'a> {
    index: &'a HashIndex,
    engine: &'a Engine,
    hash: u32,
    items: VecDeque<Tid>,
    /// The bucket being read, its primary page (pinned) and the next page of its
    /// chain to read (`INVALID_BLOCK`: none).
    bucket: u32,
    primary: Option<PinnedBuffer<'a>>,
    next: BlockNumber,
    /// The old bucket of an unfinished split of our bucket: its primary page
    /// (pinned), read after our own chain.
    old: Option<(u32, PinnedBuffer<'a>)>,
    /// Reading the old bucket now.
    in_old: bool,
    started: bool,
    done: bool,
    /// The serializable transaction scanning (`None`: no SIREAD lock).
    ssi: Option<Arc<SerializableXact>>,
}

impl HashIndex {
    /// Starts a scan for the entries with hash code `hash`.
    pub fn scan<'a>(&'a self, engine: &'a Engine, hash: u32) -> HashScan<'a> {
        HashScan {
            index: self,
            engine,
            hash,
            items: VecDeque::new(),
            bucket: 0,
            primary: None,
            next: INVALID_BLOCK,
            old: None,
            in_old: false,
            started: false,
            done: false,
            ssi: None,
        }
    }
}

impl<'a> HashScan<'a> {
    /// A scan by the serializable transaction `sx` (`None`: not serializable,
    /// nothing changes): a SIREAD lock on the primary page of the bucket read
    /// (lmgr README, "Predicate locks and SSI"). Catalog indexes are not
    /// tracked.
    pub fn serializable(mut self, sx: Option<Arc<SerializableXact>>) -> Self {
        self.ssi = sx.filter(|_| crate::heap::heapam::ssi_tracked(self.index.rel));
        self
    }

    /// The next matching heap TID, or `None` at the end.
    pub fn next_tid(&mut self) -> Result<Option<Tid>> {
        loop {
            if let Some(t) = self.items.pop_front() {
                return Ok(Some(t));
            }
            if self.done {
                self.primary = None;
                self.old = None;
                return Ok(None);
            }
            if !self.started {
                self.started = true;
                self.start()?;
            } else if self.next != INVALID_BLOCK {
                let bucket = if self.in_old { self.old.as_ref().map_or(self.bucket, |o| o.0) } else { self.bucket };
                let pin = self.index.chain_page(self.engine, self.next, bucket)?;
                let g = pin.lock_shared();
                self.next = collect(&mut self.items, self.hash, &g, self.old.is_some() && !self.in_old)?;
            } else if let (false, Some((_, pin))) = (self.in_old, self.old.as_ref()) {
                self.in_old = true;
                let g = pin.lock_shared();
                self.next = collect(&mut self.items, self.hash, &g, false)?;
            } else {
                self.done = true;
            }
        }
    }

    /// Finds the bucket and reads its primary page.
    fn start(&mut self) -> Result<()> {
        let (bucket, pin) = self.index.find_bucket(self.engine, self.hash, |pin| {
            let o = opaque(&pin.lock_shared())?;
            Ok((o, pin))
        })?;
        self.bucket = bucket;
        let populated = opaque(&pin.lock_shared())?.being_populated();
        if populated {
            // Pin the old bucket first (its entries are the ones being copied),
            // then look again: the split may have finished meanwhile.
            let old_bucket = split_source(bucket);
            let old_blk = self.index.block_of(self.engine, old_bucket)?;
            let old_pin = self.engine.buffers.read_buffer(self.index.tag(old_blk), None)?;
            let o = opaque(&old_pin.lock_shared())?;
            if !o.is_bucket_page() || o.bucket != old_bucket {
                return Err(Error::corrupt(format!("hash index {:?}: block {old_blk} is not bucket {old_bucket}", self.index.rel)));
            }
            self.old = Some((old_bucket, old_pin));
        }
        let g = pin.lock_shared();
        if let Some(sx) = &self.ssi {
            // Under the primary page's shared lock: an inserter checks this
            // page under its exclusive lock, and a split (which needs a
            // cleanup lock, so not while we hold the pin) copies the lock to
            // the new bucket.
            self.engine.txn.predicate.acquire(sx, PredTarget::Page(self.index.rel, pin.block()));
        }
        let still = opaque(&g)?.being_populated();
        if !still {
            self.old = None;
        }
        self.next = collect(&mut self.items, self.hash, &g, still)?;
        drop(g);
        self.primary = Some(pin);
        Ok(())
    }
}

/// Copies the TIDs of the entries of `page` with hash code `hash` into `items`
/// (skipping split copies when `skip_moved`); returns the page's next link.
fn collect(items: &mut VecDeque<Tid>, hash: u32, page: &[u8], skip_moved: bool) -> Result<BlockNumber> {
    let o = opaque(page)?;
    let max = max_offset(page);
    let mut off = first_with_hash(page, hash)?;
    while off <= max {
        let e = page_entry(page, off)?;
        if e.hash != hash {
            break;
        }
        if !(skip_moved && e.moved_by_split()) {
            items.push_back(e.tid);
        }
        off += 1;
    }
    Ok(o.next)
}

impl Iterator for HashScan<'_> {
    type Item = Result<Tid>;
    fn next(&mut self) -> Option<Result<Tid>> {
        self.next_tid().transpose()
    }
}
