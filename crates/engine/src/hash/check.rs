//! The structure checker (in the spirit of amcheck): walks every bucket and
//! verifies each page and entry against README "Invariants", and accounts for
//! every block of the relation. For a quiescent index (tests, after recovery); it
//! takes one shared lock at a time.

use super::buckets::{bucket_of, split_source, unit_of};
use super::index::{page_entries, HashIndex};
use super::page::*;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::heap::tuple::Tid;
use crate::storage::page::page_is_new;
use crate::storage::{BlockNumber, ForkNumber, INVALID_BLOCK};
use std::collections::{HashMap, HashSet};

/// What the checker saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HashReport {
    pub buckets: u32,
    pub overflow_pages: u32,
    pub bitmap_pages: u32,
    /// Entries that belong to their bucket (the index's contents).
    pub entries: u64,
    /// Entries an old bucket holds for the new bucket of its last split: copies
    /// left by a finished split (not yet cleaned up), or entries of an unfinished
    /// split (counted in `entries` too when the new bucket has no copy yet).
    pub split_leftovers: u64,
    /// Buckets with an unfinished split (old buckets flagged BEING_SPLIT).
    pub unfinished_splits: u32,
    /// Buckets whose split copies still wait for cleanup.
    pub needing_cleanup: u32,
    /// Free overflow pages (their bit set).
    pub free_pages: u32,
    /// Pages in no chain and no bitmap: never used since relation extension (a
    /// crash before their first WAL record, or the rest of a bucket unit).
    pub unused_pages: u32,
}

impl HashIndex {
    /// Checks the whole index; a violated invariant is `Error::Internal` naming it.
    /// `entries` (if given) receives the index's contents: every entry that
    /// belongs to its bucket, and the entries of an unfinished split not copied
    /// into the new bucket yet (each once).
    pub fn check(&self, engine: &Engine, entries: Option<&mut Vec<(u32, Tid)>>) -> Result<HashReport> {
        let bad = |what: String| -> Result<HashReport> { Err(Error::internal(format!("hash index {:?}: {what}", self.rel))) };
        let meta = self.meta(engine)?;
        let mut r = HashReport { buckets: meta.maxbucket + 1, ..Default::default() };
        let nblocks = engine.buffers.nblocks(self.rel, ForkNumber::Main)?;
        // What each block is: filled as the walk meets it.
        let mut used: HashMap<BlockNumber, &'static str> = HashMap::new();
        used.insert(METAPAGE_BLOCK, "metapage");
        let ffactor = HashMeta::ffactor_for(meta.fillfactor);
        if meta.ffactor != ffactor || !(HASH_MIN_FILLFACTOR..=100).contains(&meta.fillfactor) {
            return bad(format!("ffactor {} for fillfactor {}", meta.ffactor, meta.fillfactor));
        }
        // Units: allocated exactly for the buckets 0..=maxbucket, inside the file.
        let (last_unit, _) = unit_of(meta.maxbucket);
        for (u, &first) in meta.units.iter().enumerate() {
            if (first != INVALID_BLOCK) != (u <= last_unit) {
                return bad(format!("unit {u} first block {first} with maxbucket {}", meta.maxbucket));
            }
        }
        let mut flags_of: HashMap<u32, HashOpaque> = HashMap::new();
        let mut contents: HashSet<(u32, Tid)> = HashSet::new();
        let mut uncopied: Vec<(u32, Tid)> = Vec::new();
        for bucket in 0..=meta.maxbucket {
            let Some(blk) = meta.block_of(bucket) else { return bad(format!("bucket {bucket} has no page")) };
            if blk >= nblocks {
                return bad(format!("bucket {bucket} at block {blk} beyond the end ({nblocks})"));
            }
            let mut tids: HashSet<Tid> = HashSet::new();
            let mut prev = INVALID_BLOCK;
            let mut cur = blk;
            loop {
                if let Some(what) = used.insert(cur, if cur == blk { "bucket page" } else { "overflow page" }) {
                    return bad(format!("block {cur} of bucket {bucket} is also a {what}"));
                }
                let pin = engine.buffers.read_buffer(self.tag(cur), None)?;
                let g = pin.lock_shared();
                let o = opaque(&g)?;
                if o.bucket != bucket {
                    return bad(format!("block {cur} in bucket {bucket}'s chain says bucket {}", o.bucket));
                }
                if cur == blk {
                    if !o.is_bucket_page() {
                        return bad(format!("primary page {cur} of bucket {bucket} has flags {:#x}", o.flags));
                    }
                    // 1. bucket <= stored maxbucket <= maxbucket
                    if o.split_maxbucket() < bucket || o.split_maxbucket() > meta.maxbucket {
                        return bad(format!("bucket {bucket} stores maxbucket {} (index: {})", o.split_maxbucket(), meta.maxbucket));
                    }
                    if o.being_split() && o.needs_split_cleanup() {
                        return bad(format!("bucket {bucket} is being split and needs split cleanup"));
                    }
                    r.unfinished_splits += o.being_split() as u32;
                    r.needing_cleanup += o.needs_split_cleanup() as u32;
                    flags_of.insert(bucket, o);
                } else {
                    if !o.is_overflow_page() || o.flags & !LH_OVERFLOW_PAGE != 0 {
                        return bad(format!("overflow page {cur} of bucket {bucket} has flags {:#x}", o.flags));
                    }
                    if o.prev != prev {
                        return bad(format!("overflow page {cur} of bucket {bucket} links back to {} instead of {prev}", o.prev));
                    }
                    r.overflow_pages += 1;
                }
                let (ents, next) = page_entries(&g)?;
                if ents.len() > ENTRIES_PER_PAGE {
                    return bad(format!("page {cur} holds {} entries", ents.len()));
                }
                for (i, e) in ents.iter().enumerate() {
                    if i > 0 && ents[i - 1].key() >= e.key() {
                        return bad(format!("page {cur}: entries {} and {} out of order", i, i + 1));
                    }
                    let home = bucket_of(e.hash, meta.maxbucket);
                    let fl = flags_of[&bucket];
                    // A copy left behind: it belonged to the new bucket of this
                    // bucket's last split (later splits may have moved it on).
                    let leftover = (fl.being_split() || fl.needs_split_cleanup())
                        && bucket_of(e.hash, fl.split_maxbucket()) == fl.split_maxbucket();
                    if home == bucket {
                        if !tids.insert(e.tid) {
                            return bad(format!("heap TID {:?} twice in bucket {bucket}", e.tid));
                        }
                        contents.insert((e.hash, e.tid));
                    } else if leftover {
                        r.split_leftovers += 1;
                        if fl.being_split() {
                            uncopied.push((e.hash, e.tid));
                        }
                    } else {
                        return bad(format!("entry {:#x} {:?} in bucket {bucket} belongs to bucket {home}", e.hash, e.tid));
                    }
                }
                if next == INVALID_BLOCK {
                    break;
                }
                if next >= nblocks {
                    return bad(format!("page {cur} links to block {next} beyond the end"));
                }
                prev = cur;
                cur = next;
            }
        }
        for e in uncopied {
            contents.insert(e);
        }
        r.entries = contents.len() as u64;
        if let Some(v) = entries {
            v.extend(contents.iter().copied());
        }
        // Split flags pair up: an old bucket being split <=> its new bucket being
        // populated.
        for (&b, o) in &flags_of {
            if o.being_split() {
                let n = o.split_maxbucket();
                if split_source(n) != b || !flags_of.get(&n).is_some_and(|no| no.being_populated()) {
                    return bad(format!("bucket {b} is being split to {n}, which is not being populated"));
                }
            }
            if o.being_populated() {
                let src = split_source(b);
                if !flags_of.get(&src).is_some_and(|so| so.being_split() && so.split_maxbucket() == b) {
                    return bad(format!("bucket {b} is being populated but bucket {src} is not being split to it"));
                }
            }
        }
        // Bitmap pages and the free pages they name.
        let mut free_seen = 0u32;
        let mut lowest_free = INVALID_BLOCK;
        for (k, &bm) in meta.bitmaps.iter().enumerate() {
            if let Some(what) = used.insert(bm, "bitmap page") {
                return bad(format!("bitmap page {bm} is also a {what}"));
            }
            r.bitmap_pages += 1;
            let pin = engine.buffers.read_buffer(self.tag(bm), None)?;
            let g = pin.lock_shared();
            if opaque(&g)?.page_type() != LH_BITMAP_PAGE {
                return bad(format!("block {bm} named as bitmap page {k} is not one"));
            }
            let mut from = k as u32 * BITS_PER_MAP;
            while let Some(free) = bitmap_first_set(&g, k as u32, from) {
                from = free + 1;
                free_seen += 1;
                lowest_free = lowest_free.min(free);
                if free >= nblocks {
                    return bad(format!("free page {free} beyond the end"));
                }
                if let Some(what) = used.insert(free, "free page") {
                    return bad(format!("block {free} is free in the bitmap and a {what}"));
                }
                let fp = engine.buffers.read_buffer(self.tag(free), None)?;
                let fg = fp.lock_shared();
                if !page_is_new(&fg) && (opaque(&fg)?.page_type() != 0 || max_offset(&fg) != 0) {
                    return bad(format!("free page {free} is in use"));
                }
            }
        }
        if free_seen != meta.nfree {
            return bad(format!("the metapage counts {} free pages, the bitmaps {free_seen}", meta.nfree));
        }
        if free_seen > 0 && meta.first_free > lowest_free {
            return bad(format!("first_free {} above free page {lowest_free}", meta.first_free));
        }
        r.free_pages = free_seen;
        // Every other block: never used (zero, or initialized as unused).
        for b in 0..nblocks {
            if used.contains_key(&b) {
                continue;
            }
            let pin = engine.buffers.read_buffer(self.tag(b), None)?;
            let g = pin.lock_shared();
            if !page_is_new(&g) && (opaque(&g)?.page_type() != 0 || max_offset(&g) != 0) {
                return bad(format!("block {b} ({:?}) is in no bucket, bitmap or free list", opaque(&g)?));
            }
            r.unused_pages += 1;
        }
        Ok(r)
    }
}
