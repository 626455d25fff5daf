//! The index handle: creation, finding a bucket through the cached metapage,
//! insertion, overflow pages, splits (and finishing interrupted ones).

use super::buckets::{bucket_of, split_source, unit_of, unit_range, MAX_BUCKET, NUM_UNITS};
use super::metacache::MetaCache;
use super::page::*;
use super::xlog::*;
use crate::buffer::{LockedBuffer, PinnedBuffer};
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::heap::tuple::Tid;
use crate::lmgr::predicate::{PredTarget, SerializableXact};
use crate::storage::{BlockNumber, BufferTag, ForkNumber, RelFileLocator, INVALID_BLOCK};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

/// The engine's metapage caches, one per hash index relation file (engine
/// memory, like PostgreSQL's shared memory: shared by every backend).
#[derive(Default)]
pub struct CacheRegistry {
    map: Mutex<HashMap<RelFileLocator, Arc<MetaCache>>>,
}

impl CacheRegistry {
    fn get(&self, rel: RelFileLocator) -> Arc<MetaCache> {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).entry(rel).or_default().clone()
    }

    /// Forgets the cache of a relation file that is gone (dropped, truncated).
    pub fn forget(&self, rel: RelFileLocator) {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).remove(&rel);
    }
}

/// A hash index on one relation file. The key is the caller's: the index stores
/// 32-bit hash codes (computed by the SQL layer with PostgreSQL's hash functions,
/// [`super::hashfunc`]) and heap TIDs; every match is re-checked on the heap.
pub struct HashIndex {
    pub rel: RelFileLocator,
    pub(crate) cache: Arc<MetaCache>,
}

/// A bitmap page (locked) and the operations that clear a bit on it.
type BitmapChange<'e> = (LockedBuffer<'e>, Vec<PageOp>);

/// Bound on retries when the cache and a bucket page disagree (each retry re-reads
/// the metapage, after which they agree unless the index is corrupt).
const MAX_RETRIES: u32 = 100;

impl HashIndex {
    /// The handle of index `rel`, with the engine's shared metapage cache for it.
    pub fn new(engine: &Engine, rel: RelFileLocator) -> HashIndex {
        HashIndex { rel, cache: engine.hash_caches.get(rel) }
    }

    pub(crate) fn tag(&self, block: BlockNumber) -> BufferTag {
        BufferTag::new(self.rel, ForkNumber::Main, block)
    }

    /// Creates the relation file and an empty index: the metapage and enough
    /// buckets for `expected_entries` at `fillfactor` (whole allocation units, at
    /// least 2), WAL-logged as images (PostgreSQL's `_hash_init`).
    pub fn create(&self, engine: &Engine, fillfactor: u16, expected_entries: f64) -> Result<()> {
        if !(HASH_MIN_FILLFACTOR..=100).contains(&fillfactor) {
            return Err(Error::internal(format!("hash fillfactor {fillfactor} out of range")));
        }
        engine.create_relation(self.rel)?;
        let ffactor = HashMeta::ffactor_for(fillfactor);
        let wanted = (expected_entries.max(0.0) / ffactor as f64).ceil() as u64;
        let nbuckets = super::buckets::initial_buckets(wanted);
        let maxbucket = nbuckets - 1;
        // Bucket b at block 1 + b: the units of the first buckets are contiguous.
        let mut units = [INVALID_BLOCK; NUM_UNITS];
        let (last_unit, _) = unit_of(maxbucket);
        for (u, first) in units.iter_mut().enumerate().take(last_unit + 1) {
            *first = 1 + unit_range(u).0;
        }
        let meta = HashMeta { ntuples: 0, ffactor, fillfactor, maxbucket, first_free: 0, nfree: 0, units, bitmaps: Vec::new() };
        let mut metabuf = engine.buffers.extend(self.rel, ForkNumber::Main, 1, None)?.pop().expect("one page");
        if metabuf.block() != METAPAGE_BLOCK {
            return Err(Error::internal(format!("new hash index starts at block {}", metabuf.block())));
        }
        meta_init(&mut metabuf, &meta);
        log_changes(engine, XLOG_HASH_INIT, &mut [Change::Image(&mut metabuf)]);
        let mut b = 0u32;
        while b < nbuckets {
            let n = (nbuckets - b).min(31);
            let mut pages = engine.buffers.extend(self.rel, ForkNumber::Main, n, None)?;
            for (i, p) in pages.iter_mut().enumerate() {
                let bucket = b + i as u32;
                if p.block() != 1 + bucket {
                    return Err(Error::internal(format!("hash bucket {bucket} got block {}", p.block())));
                }
                hash_page_init(p, &HashOpaque { prev: maxbucket, next: INVALID_BLOCK, bucket, flags: LH_BUCKET_PAGE });
            }
            let mut changes: Vec<Change> = pages.iter_mut().map(Change::Image).collect();
            log_changes(engine, XLOG_HASH_INIT, &mut changes);
            b += n;
        }
        self.cache.publish(maxbucket, &meta.units, ffactor, 0);
        Ok(())
    }

    /// The metapage (read under a shared lock), published to the cache.
    pub fn meta(&self, engine: &Engine) -> Result<HashMeta> {
        let pin = engine.buffers.read_buffer(self.tag(METAPAGE_BLOCK), None)?;
        let m = read_meta(&pin.lock_shared())?;
        self.cache.publish(m.maxbucket, &m.units, m.ffactor, m.ntuples);
        Ok(m)
    }

    /// The primary page of `bucket` per the cache, or the metapage.
    pub(crate) fn block_of(&self, engine: &Engine, bucket: u32) -> Result<BlockNumber> {
        if let Some(b) = self.cache.block_of(bucket) {
            return Ok(b);
        }
        self.meta(engine)?
            .block_of(bucket)
            .ok_or_else(|| Error::corrupt(format!("hash index {:?}: bucket {bucket} has no allocated page", self.rel)))
    }

    /// Finds the bucket of `hash` and pins its primary page, validated under its
    /// content lock against the `maxbucket` the page stores (README, "Finding a
    /// bucket"); `lock` locks the page (shared or exclusive) and hands back what
    /// the caller keeps. Returns (bucket, what `lock` returned).
    pub(crate) fn find_bucket<'e, T>(
        &self,
        engine: &'e Engine,
        hash: u32,
        mut lock: impl FnMut(PinnedBuffer<'e>) -> Result<(HashOpaque, T)>,
    ) -> Result<(u32, T)> {
        let mut fresh = false;
        for _ in 0..MAX_RETRIES {
            let maxbucket = match self.cache.maxbucket() {
                Some(m) if !fresh => m,
                _ => self.meta(engine)?.maxbucket,
            };
            let bucket = bucket_of(hash, maxbucket);
            let blk = self.block_of(engine, bucket)?;
            let pin = engine.buffers.read_buffer(self.tag(blk), None)?;
            let (o, held) = lock(pin)?;
            if !o.is_bucket_page() || o.bucket != bucket {
                return Err(Error::corrupt(format!("hash index {:?}: block {blk} is not the primary page of bucket {bucket}: {o:?}", self.rel)));
            }
            if o.split_maxbucket() > maxbucket {
                // The bucket was split after our view of the metapage: re-read it.
                fresh = true;
                continue;
            }
            return Ok((bucket, held));
        }
        Err(Error::corrupt(format!("hash index {:?}: metapage and bucket pages disagree", self.rel)))
    }

    /// Inserts the entry (`hash`, `tid`) (PostgreSQL's `_hash_doinsert`). May then
    /// split a bucket if the index has become over-full.
    #[inline]
    pub fn insert(&self, engine: &Engine, hash: u32, tid: Tid) -> Result<()> {
        self.insert_serializable(engine, hash, tid, None)
    }

    /// `insert` by the serializable transaction `sx` (`None`: any other
    /// transaction, the same as `insert`): every other concurrent holder of a
    /// SIREAD lock on the bucket's primary page, or on the whole index, gets
    /// an rw-edge to `sx` (PostgreSQL's CheckForSerializableConflictIn on the
    /// bucket page). Checked under the exclusive lock of the page the entry
    /// goes into, just before it goes in: a scan locks the primary page before
    /// it reads any page of the chain, so either its lock is seen here or it
    /// reads this page after the entry is in (and meets the writer's heap
    /// tuple: a conflict out).
    pub fn insert_serializable(&self, engine: &Engine, hash: u32, tid: Tid, sx: Option<&SerializableXact>) -> Result<()> {
        let entry = HashEntry::new(hash, tid);
        loop {
            let (bucket, page) = self.find_bucket(engine, hash, |pin| {
                let page = pin.into_locked();
                Ok((opaque(&page)?, page))
            })?;
            if opaque(&page)?.being_split() {
                // An unfinished split of this bucket (a crash or an error stopped
                // it, or it is running now): finish it first if nobody else is in
                // the bucket (PostgreSQL does the same).
                match page.unlock().try_into_cleanup_locked() {
                    Ok(primary) if opaque(&primary)?.being_split() => {
                        self.finish_split(engine, primary, bucket)?;
                        continue;
                    }
                    Ok(primary) => self.insert_into_bucket(engine, primary, bucket, &entry, sx)?,
                    Err(pin) => self.insert_into_bucket(engine, pin.into_locked(), bucket, &entry, sx)?,
                }
            } else {
                self.insert_into_bucket(engine, page, bucket, &entry, sx)?;
            }
            break;
        }
        if self.cache.note_insert() {
            self.expand(engine)?;
        }
        Ok(())
    }

    /// Adds `entry` to the first page of the chain with room, from the locked
    /// primary page on; a new overflow page at the end if none has. The primary
    /// page stays pinned until the entry is in (so no split or squeeze changes the
    /// chain meanwhile); one page is locked at a time. `sx`: see
    /// `insert_serializable`.
    fn insert_into_bucket<'e>(
        &self,
        engine: &'e Engine,
        primary: LockedBuffer<'e>,
        bucket: u32,
        entry: &HashEntry,
        sx: Option<&SerializableXact>,
    ) -> Result<()> {
        // SERIALIZABLE only: the bucket's primary page, to check at the end
        // (READ COMMITTED pays the one test of `sx`).
        let ssi = match sx {
            Some(sx) if crate::heap::heapam::ssi_tracked(self.rel) => Some((sx, primary.block())),
            _ => None,
        };
        let mut cur = primary;
        let mut primary_pin: Option<PinnedBuffer<'e>> = None;
        loop {
            if has_room(&cur) {
                if let Some((sx, primary_blk)) = ssi {
                    let targets = [PredTarget::Page(self.rel, primary_blk), PredTarget::Relation(self.rel)];
                    engine.txn.predicate.check_conflict_in(sx, &targets)?;
                }
                let op = PageOp::Insert { offset: insert_position(&cur, entry.key())?, item: entry.encode().to_vec() };
                apply_all(&mut cur, std::slice::from_ref(&op), "hash insert");
                log_changes(engine, XLOG_HASH_INSERT, &mut [Change::Ops(&mut cur, vec![op])]);
                return Ok(());
            }
            let next = opaque(&cur)?.next;
            let released = if next == INVALID_BLOCK {
                let (new, tail) = self.add_overflow_page(engine, cur, bucket)?;
                cur = new;
                tail
            } else {
                let pin = cur.unlock();
                cur = self.chain_page(engine, next, bucket)?.into_locked();
                pin
            };
            if primary_pin.is_none() {
                primary_pin = Some(released);
            }
        }
    }

    /// Pins overflow page `blk` of `bucket`'s chain, checking that it is one.
    pub(crate) fn chain_page<'e>(&self, engine: &'e Engine, blk: BlockNumber, bucket: u32) -> Result<PinnedBuffer<'e>> {
        let pin = engine.buffers.read_buffer(self.tag(blk), None)?;
        let o = opaque(&pin.lock_shared())?;
        if !o.is_overflow_page() || o.bucket != bucket {
            return Err(Error::corrupt(format!("hash index {:?}: block {blk} in the chain of bucket {bucket} is {o:?}", self.rel)));
        }
        Ok(pin)
    }

    /// Links a new overflow page after `tail` (locked, the end of `bucket`'s
    /// chain): a free page from the bitmaps, else a new page at the end of the
    /// relation; one WAL record for the new page, the tail's link, the bitmap bit
    /// and the metapage (PostgreSQL's `_hash_addovflpage`). Lock order: tail,
    /// metapage, bitmap page, new page. Returns the new page (locked) and the
    /// tail's pin.
    pub(crate) fn add_overflow_page<'e>(
        &self,
        engine: &'e Engine,
        mut tail: LockedBuffer<'e>,
        bucket: u32,
    ) -> Result<(LockedBuffer<'e>, PinnedBuffer<'e>)> {
        let mut to = opaque(&tail)?;
        if to.next != INVALID_BLOCK {
            return Err(Error::internal("hash overflow page added after a page that is not the chain's end"));
        }
        let mut metabuf = engine.buffers.read_buffer(self.tag(METAPAGE_BLOCK), None)?.into_locked();
        let old_meta = read_meta(&metabuf)?;
        let mut meta = old_meta.clone();
        let (mut newp, mut bitmap) = self.allocate_page(engine, &mut meta)?;
        hash_page_init(&mut newp, &HashOpaque::overflow(bucket, tail.block()));
        to.next = newp.block();
        let tail_ops = vec![PageOp::Write { at: SPECIAL_OFF as u16, bytes: opaque_bytes(&to).to_vec() }];
        let meta_ops = PageOp::diff(META_OFF, &old_meta.encode(), &meta.encode());
        apply_all(&mut tail, &tail_ops, "hash add overflow page");
        apply_all(&mut metabuf, &meta_ops, "hash add overflow page");
        {
            let mut changes = vec![Change::Image(&mut newp), Change::Ops(&mut tail, tail_ops)];
            if let Some((b, ops)) = bitmap.as_mut() {
                apply_all(b, ops, "hash add overflow page");
                changes.push(Change::Ops(b, std::mem::take(ops)));
            }
            if !meta_ops.is_empty() {
                changes.push(Change::Ops(&mut metabuf, meta_ops));
            }
            log_changes(engine, XLOG_HASH_ADD_OVFL_PAGE, &mut changes);
        }
        drop(bitmap);
        drop(metabuf);
        Ok((newp, tail.unlock()))
    }

    /// A page for a new overflow page, with the metapage exclusively locked by the
    /// caller (`meta` is its contents, updated here): a free one from the bitmaps
    /// (its bit cleared in the returned bitmap page's ops, not yet applied), else
    /// relation extension. Relation extension of a hash index happens only under
    /// the metapage's exclusive lock, so it never races with a split's allocation
    /// of a unit.
    fn allocate_page<'e>(&self, engine: &'e Engine, meta: &mut HashMeta) -> Result<(LockedBuffer<'e>, Option<BitmapChange<'e>>)> {
        if meta.nfree > 0 {
            let first_map = (meta.first_free / BITS_PER_MAP) as usize;
            for k in first_map..meta.bitmaps.len() {
                let bm = engine.buffers.read_buffer(self.tag(meta.bitmaps[k]), None)?.into_locked();
                let Some(blk) = bitmap_first_set(&bm, k as u32, meta.first_free) else { continue };
                let (at, bit) = bitmap_bit(blk);
                let ops = vec![PageOp::Write { at: at as u16, bytes: vec![bm[at] & !bit] }];
                meta.nfree -= 1;
                meta.first_free = blk + 1;
                let page = engine.buffers.read_buffer_zero(self.tag(blk), None)?;
                return Ok((page, Some((bm, ops))));
            }
            return Err(Error::corrupt(format!(
                "hash index {:?}: the metapage counts {} free overflow pages but the bitmaps have none",
                self.rel, meta.nfree
            )));
        }
        let page = engine.buffers.extend(self.rel, ForkNumber::Main, 1, None)?.pop().expect("one page");
        Ok((page, None))
    }

    /// Splits one bucket if the index holds more than `ffactor` entries per bucket
    /// (PostgreSQL's `_hash_expandtable`): bucket `maxbucket + 1` is created from
    /// `split_source(maxbucket + 1)`. Gives up, leaving the split to a later
    /// insert, when another backend is deciding a split or someone is in the old
    /// bucket (no cleanup lock without waiting).
    pub fn expand(&self, engine: &Engine) -> Result<()> {
        let Some(turn) = self.cache.try_begin_split() else { return Ok(()) };
        for _ in 0..MAX_RETRIES {
            let mut metabuf = engine.buffers.read_buffer(self.tag(METAPAGE_BLOCK), None)?.into_locked();
            let old_meta = read_meta(&metabuf)?;
            let pending = self.cache.take_pending();
            let ntuples = old_meta.ntuples.saturating_add(pending);
            if ntuples <= old_meta.ffactor as u64 * (old_meta.maxbucket as u64 + 1) || old_meta.maxbucket >= MAX_BUCKET {
                self.cache.give_back(pending);
                self.cache.publish(old_meta.maxbucket, &old_meta.units, old_meta.ffactor, old_meta.ntuples);
                return Ok(());
            }
            let new_bucket = old_meta.maxbucket + 1;
            let old_bucket = split_source(new_bucket);
            let old_blk = old_meta
                .block_of(old_bucket)
                .ok_or_else(|| Error::corrupt(format!("hash index {:?}: bucket {old_bucket} has no page", self.rel)))?;
            // Conditional: never wait for a bucket while holding the metapage.
            let mut old = match engine.buffers.read_buffer(self.tag(old_blk), None)?.try_into_cleanup_locked() {
                Ok(p) => p,
                Err(_) => {
                    self.cache.give_back(pending);
                    return Ok(());
                }
            };
            let oo = opaque(&old)?;
            if !oo.is_bucket_page() || oo.bucket != old_bucket {
                return Err(Error::corrupt(format!("hash index {:?}: block {old_blk} is not bucket {old_bucket}: {oo:?}", self.rel)));
            }
            if oo.being_split() || oo.needs_split_cleanup() {
                // Its previous split is unfinished, or left copies behind: deal
                // with that first (without the metapage), then decide again.
                drop(metabuf);
                self.cache.give_back(pending);
                if oo.being_split() {
                    self.finish_split(engine, old, old_bucket)?;
                } else {
                    self.bucket_cleanup(engine, old, old_bucket, Some(oo.split_maxbucket()), None, &mut Default::default())?;
                }
                continue;
            }
            let mut meta = old_meta.clone();
            meta.ntuples = ntuples;
            meta.maxbucket = new_bucket;
            let (unit, off) = unit_of(new_bucket);
            let (mut newp, mut unit_last) = if off == 0 {
                // The first bucket of a new unit: the whole unit is added at the
                // end of the relation; its last page is logged (as an unused page)
                // so that redo extends the file over the unit, as PostgreSQL's
                // `_hash_alloc_buckets` does.
                let (_, size) = unit_range(unit);
                let first = engine.buffers.nblocks(self.rel, ForkNumber::Main)?;
                if size > 1 {
                    engine.smgr.zero_extend(self.rel, ForkNumber::Main, first, size - 1)?;
                }
                let mut last = engine.buffers.extend(self.rel, ForkNumber::Main, 1, None)?.pop().expect("one page");
                if last.block() != first + size - 1 {
                    return Err(Error::internal(format!("hash unit {unit} ends at block {} instead of {}", last.block(), first + size - 1)));
                }
                meta.units[unit] = first;
                if size == 1 {
                    (last, None)
                } else {
                    hash_page_init(&mut last, &HashOpaque::unused());
                    (engine.buffers.read_buffer_zero(self.tag(first), None)?, Some(last))
                }
            } else {
                let blk = meta.block_of(new_bucket).ok_or_else(|| Error::corrupt("hash unit of a new bucket not allocated"))?;
                (engine.buffers.read_buffer_zero(self.tag(blk), None)?, None)
            };
            hash_page_init(
                &mut newp,
                &HashOpaque { prev: new_bucket, next: INVALID_BLOCK, bucket: new_bucket, flags: LH_BUCKET_PAGE | LH_BUCKET_BEING_POPULATED },
            );
            let mut oo2 = oo;
            oo2.flags |= LH_BUCKET_BEING_SPLIT;
            oo2.prev = new_bucket;
            let old_ops = vec![PageOp::Write { at: SPECIAL_OFF as u16, bytes: opaque_bytes(&oo2).to_vec() }];
            let meta_ops = PageOp::diff(META_OFF, &old_meta.encode(), &meta.encode());
            apply_all(&mut metabuf, &meta_ops, "hash split");
            apply_all(&mut old, &old_ops, "hash split");
            {
                let mut changes = vec![Change::Ops(&mut metabuf, meta_ops), Change::Ops(&mut old, old_ops), Change::Image(&mut newp)];
                if let Some(l) = unit_last.as_mut() {
                    changes.push(Change::Image(l));
                }
                log_changes(engine, XLOG_HASH_SPLIT_ALLOCATE_PAGE, &mut changes);
            }
            self.cache.publish(meta.maxbucket, &meta.units, meta.ffactor, meta.ntuples);
            drop(unit_last);
            drop(metabuf);
            // The next split may be decided while this one copies.
            drop(turn);
            testing::split_allocated(engine);
            return self.split_bucket(engine, old, newp, old_bucket, new_bucket, None);
        }
        Err(Error::corrupt(format!("hash index {:?}: could not split a bucket", self.rel)))
    }

    /// Copies the entries of bucket `old_bucket` that now belong to `new_bucket`
    /// into it (PostgreSQL's `_hash_splitbucket`), then marks the split finished
    /// and, if nobody else is in the old bucket, removes the copied entries from
    /// it. `old` is the old primary page under a cleanup lock, `newp` the new
    /// primary page locked; both stay pinned throughout (no VACUUM or other split
    /// enters either bucket). `skip`: heap TIDs already in the new bucket
    /// (finishing an interrupted split).
    fn split_bucket<'e>(
        &self,
        engine: &'e Engine,
        old: LockedBuffer<'e>,
        newp: LockedBuffer<'e>,
        old_bucket: u32,
        new_bucket: u32,
        skip: Option<&HashSet<Tid>>,
    ) -> Result<()> {
        let no = opaque(&newp)?;
        if !no.is_bucket_page() || no.bucket != new_bucket || !no.being_populated() {
            return Err(Error::corrupt(format!("hash index {:?}: bucket {new_bucket} is not being populated: {no:?}", self.rel)));
        }
        if crate::heap::heapam::ssi_tracked(self.rel) {
            // Entries of the old bucket's hash codes now live in the new one:
            // whoever read the old bucket holds the new one too (PostgreSQL's
            // PredicateLockPageSplit), copied while both primary pages are
            // locked (the old under a cleanup lock: no scan is in it; the new
            // one nobody has locked since its allocation, or, finishing an
            // interrupted split, exclusively now).
            engine.txn.predicate.page_split(self.rel, old.block(), newp.block());
        }
        let new_pin = newp.unlock();
        let mut target = new_pin.block();
        let mut batch: Vec<HashEntry> = Vec::new();
        let take = |entries: &mut dyn Iterator<Item = HashEntry>, batch: &mut Vec<HashEntry>| {
            for mut e in entries {
                if bucket_of(e.hash, new_bucket) == new_bucket && skip.is_none_or(|s| !s.contains(&e.tid)) {
                    e.flags |= ENTRY_MOVED_BY_SPLIT;
                    batch.push(e);
                }
            }
        };
        // The old primary page, read under the lock we hold, then each overflow
        // page under a shared lock; the entries of one page are copied (at most a
        // page's worth held here) before the next is read.
        let (entries, mut next) = page_entries(&old)?;
        take(&mut entries.into_iter(), &mut batch);
        let old_pin = old.unlock();
        loop {
            target = self.add_to_new_bucket(engine, target, new_bucket, &mut batch)?;
            testing::split_page_done(engine);
            if next == INVALID_BLOCK {
                break;
            }
            let pin = self.chain_page(engine, next, old_bucket)?;
            let (entries, n) = page_entries(&pin.lock_shared())?;
            next = n;
            take(&mut entries.into_iter(), &mut batch);
        }
        // Done: old bucket first, then new (README, lock order).
        let mut old = old_pin.into_locked();
        let mut newp = new_pin.into_locked();
        let mut oo = opaque(&old)?;
        let mut no = opaque(&newp)?;
        oo.flags = (oo.flags & !LH_BUCKET_BEING_SPLIT) | LH_BUCKET_NEEDS_SPLIT_CLEANUP;
        no.flags &= !LH_BUCKET_BEING_POPULATED;
        let old_ops = vec![PageOp::Write { at: SPECIAL_OFF as u16, bytes: opaque_bytes(&oo).to_vec() }];
        let new_ops = vec![PageOp::Write { at: SPECIAL_OFF as u16, bytes: opaque_bytes(&no).to_vec() }];
        apply_all(&mut old, &old_ops, "hash split complete");
        apply_all(&mut newp, &new_ops, "hash split complete");
        log_changes(engine, XLOG_HASH_SPLIT_COMPLETE, &mut [Change::Ops(&mut old, old_ops), Change::Ops(&mut newp, new_ops)]);
        drop(newp);
        if old.is_cleanup_ok() {
            self.bucket_cleanup(engine, old, old_bucket, Some(new_bucket), None, &mut Default::default())?;
        }
        Ok(())
    }

    /// Adds `batch` (emptied) to the new bucket's chain, from page `target` on,
    /// adding overflow pages as needed; each page is rebuilt and logged as an
    /// image (PostgreSQL logs split pages whole too). Returns the page to go on
    /// from.
    fn add_to_new_bucket(&self, engine: &Engine, mut target: BlockNumber, bucket: u32, batch: &mut Vec<HashEntry>) -> Result<BlockNumber> {
        while !batch.is_empty() {
            let mut page = engine.buffers.read_buffer(self.tag(target), None)?.into_locked();
            let o = opaque(&page)?;
            if o.bucket != bucket || !(o.is_bucket_page() || o.is_overflow_page()) {
                return Err(Error::corrupt(format!("hash index {:?}: block {target} of new bucket {bucket} is {o:?}", self.rel)));
            }
            let (mut entries, next) = page_entries(&page)?;
            let room = ENTRIES_PER_PAGE.saturating_sub(entries.len());
            if room > 0 {
                let n = room.min(batch.len());
                entries.extend(batch.drain(batch.len() - n..));
                let img = build_page(&o, &mut entries)?;
                page.copy_from_slice(&img);
                log_changes(engine, XLOG_HASH_SPLIT_PAGE, &mut [Change::Image(&mut page)]);
            }
            if batch.is_empty() {
                break;
            }
            target = if next != INVALID_BLOCK {
                next
            } else {
                let (new, _tail) = self.add_overflow_page(engine, page, bucket)?;
                new.block()
            };
        }
        Ok(target)
    }

    /// Finishes the interrupted split of `old_bucket` (its primary page `old`,
    /// under a cleanup lock): the entries not yet copied are copied
    /// (PostgreSQL's `_hash_finish_split`). The new bucket's number is the
    /// `maxbucket` the old page stores (a bucket is not split again before its
    /// split is finished).
    pub(crate) fn finish_split<'e>(&self, engine: &'e Engine, old: LockedBuffer<'e>, old_bucket: u32) -> Result<()> {
        let oo = opaque(&old)?;
        let new_bucket = oo.split_maxbucket();
        if !oo.being_split() || new_bucket <= old_bucket || split_source(new_bucket) != old_bucket {
            return Err(Error::corrupt(format!("hash index {:?}: bucket {old_bucket} has an unfinished split to {new_bucket}: {oo:?}", self.rel)));
        }
        let new_blk = self.block_of(engine, new_bucket)?;
        let mut have = HashSet::new();
        let new_pin = engine.buffers.read_buffer(self.tag(new_blk), None)?;
        let mut blk = new_blk;
        loop {
            let (entries, next) = if blk == new_blk {
                page_entries(&new_pin.lock_shared())?
            } else {
                page_entries(&self.chain_page(engine, blk, new_bucket)?.lock_shared())?
            };
            have.extend(entries.iter().map(|e| e.tid));
            if next == INVALID_BLOCK {
                break;
            }
            blk = next;
        }
        let newp = new_pin.into_locked();
        self.split_bucket(engine, old, newp, old_bucket, new_bucket, Some(&have))
    }
}

impl HashIndex {
    /// Finishes every unfinished split (after crash recovery, or from VACUUM):
    /// each bucket flagged BEING_SPLIT gets its split finished under a cleanup
    /// lock (waiting for the pins on it to go). Returns how many were finished.
    pub fn finish_incomplete_splits(&self, engine: &Engine) -> Result<usize> {
        let meta = self.meta(engine)?;
        let mut done = 0;
        for bucket in 0..=meta.maxbucket {
            let blk = self.block_of(engine, bucket)?;
            let pin = engine.buffers.read_buffer(self.tag(blk), None)?;
            if !opaque(&pin.lock_shared())?.being_split() {
                continue;
            }
            let primary = pin.into_cleanup_locked()?;
            if opaque(&primary)?.being_split() {
                self.finish_split(engine, primary, bucket)?;
                done += 1;
            }
        }
        Ok(done)
    }
}

/// The entries of a page and its next link.
pub(crate) fn page_entries(page: &[u8]) -> Result<(Vec<HashEntry>, BlockNumber)> {
    let o = opaque(page)?;
    let entries = (1..=max_offset(page)).map(|off| page_entry(page, off)).collect::<Result<Vec<_>>>()?;
    Ok((entries, o.next))
}

/// Fault injection for crash tests (not for production use).
#[doc(hidden)]
pub mod testing {
    use std::sync::atomic::{AtomicU64, Ordering};

    // Process-wide statics: fault injection is a property of the test process
    // (a child that is to die at a given point), not of any session.
    static ABORT_AFTER_SPLIT_ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
    static ABORT_AFTER_SPLIT_PAGES: AtomicU64 = AtomicU64::new(0);

    /// After `n` more splits have logged their allocation (before any entry is
    /// copied), the process flushes the WAL and aborts.
    pub fn abort_after_split_allocations(n: u64) {
        ABORT_AFTER_SPLIT_ALLOCATIONS.store(n, Ordering::SeqCst);
    }

    /// After `n` more pages of entries have been copied by splits, the same.
    pub fn abort_after_split_pages(n: u64) {
        ABORT_AFTER_SPLIT_PAGES.store(n, Ordering::SeqCst);
    }

    fn tick(c: &AtomicU64, what: &str, engine: &crate::engine::Engine) {
        // Relaxed load first: the common case (off) costs one load.
        if c.load(Ordering::Relaxed) != 0 && c.fetch_sub(1, Ordering::SeqCst) == 1 {
            // What is logged so far becomes durable; the rest of the split not.
            let _ = engine.wal.flush(engine.wal.insert_position());
            eprintln!("hash: aborting {what} (test fault injection)");
            std::process::abort();
        }
    }

    pub(super) fn split_allocated(engine: &crate::engine::Engine) {
        tick(&ABORT_AFTER_SPLIT_ALLOCATIONS, "after a split's allocation", engine);
    }

    pub(super) fn split_page_done(engine: &crate::engine::Engine) {
        tick(&ABORT_AFTER_SPLIT_PAGES, "in the middle of a split", engine);
    }
}
