//! The buffer pool (PostgreSQL's bufmgr.c): descriptors, pages, pins, content
//! locks, reading, eviction, writing, relation extension, checkpoint support.
//! The protocols are described in this module's README.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::cell::UnsafeCell;
use std::collections::HashMap;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::buffer::buf_state::*;
use crate::buffer::buf_table::{BufTable, TagKey};
use crate::buffer::freelist::{Clock, Strategy};
use crate::buffer::io_wait::WaitStripe;
use crate::config::{Settings, BLCKSZ};
use crate::error::{Error, Result};
use crate::lmgr::lwlock::{LwLock, LwLockGuard, Tranche};
use crate::pgstat::wait_event::{report_wait_end, report_wait_start, WaitEvent};
use crate::storage::page::{page_is_new, page_lsn, page_verify, set_page_checksum};
use crate::storage::smgr::Smgr;
use crate::storage::{BlockNumber, BufferTag, ForkNumber, RelFileLocator, WalFlush};

/// Alignment of the page pool (one OS page; lets O_DIRECT come later).
const POOL_ALIGN: usize = 4096;
/// Stripes of condition variables for I/O and pin-count waits (a wait on buffer
/// `id` uses stripe `id % IO_STRIPES`).
const IO_STRIPES: usize = 64;
const EXT_LOCK_PARTITIONS: usize = 16;

/// One buffer's descriptor (PostgreSQL's BufferDesc).
#[repr(align(64))]
pub(crate) struct BufferDesc {
    /// Refcount, usage count, flags: see `buf_state`.
    pub(crate) state: BufState,
    /// The page this buffer holds, meaningful while BM_TAG_VALID.
    /// Written only while holding the header lock, the tag's mapping partition
    /// exclusive, and with no pin other than the writer's (refcount <= 1). Read
    /// either under the header lock, or while holding a pin on a BM_TAG_VALID buffer
    /// (a pinned buffer is never re-tagged by anyone else).
    tag: UnsafeCell<BufferTag>,
    /// The content lock (tranche BufferContent): shared to read the page, exclusive
    /// to change it. Taken only while holding a pin.
    content_lock: LwLock,
}

// SAFETY: `tag` is accessed only under the protocol documented on the field; all
// other fields are Sync.
unsafe impl Sync for BufferDesc {}

impl BufferDesc {
    /// # Safety
    /// Caller holds the header lock, or a pin on a BM_TAG_VALID buffer.
    #[inline]
    unsafe fn tag(&self) -> BufferTag {
        *self.tag.get()
    }

    /// # Safety
    /// Caller holds the header lock, the tag's partition lock exclusive, and at most
    /// its own pin exists.
    #[inline]
    unsafe fn set_tag(&self, tag: BufferTag) {
        *self.tag.get() = tag;
    }
}

/// `nbuffers * BLCKSZ` bytes, page-aligned, in one allocation.
struct PagePool {
    ptr: *mut u8,
    layout: Layout,
}

// SAFETY: the pool is plain memory; who may touch which page is governed by the
// content-lock / I/O protocol (see `BufferPool::page` and `page_mut`).
unsafe impl Send for PagePool {}
unsafe impl Sync for PagePool {}

impl PagePool {
    fn new(nbuffers: usize) -> PagePool {
        let layout = Layout::from_size_align(nbuffers * BLCKSZ, POOL_ALIGN).expect("pool layout");
        // SAFETY: the layout has non-zero size (nbuffers >= 1).
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        PagePool { ptr, layout }
    }
}

impl Drop for PagePool {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout; no references outlive the pool
        // (PinnedBuffer borrows the BufferPool that owns this).
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

/// Counters for the statistics views, striped so that backends on different cores
/// do not bounce one cache line on every buffer access.
#[repr(align(128))]
#[derive(Default)]
struct StatSlot {
    hits: AtomicU64,
    reads: AtomicU64,
    writes: AtomicU64,
    evictions: AtomicU64,
    extends: AtomicU64,
}

const STAT_SLOTS: usize = 16;

/// Buffer-pool statistics (as pg_stat_database blks_hit/blks_read and
/// pg_stat_bgwriter buffers_*).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BufferStats {
    /// Lookups that found the page in the pool.
    pub hits: u64,
    /// Pages read from disk.
    pub reads: u64,
    /// Pages written to disk (by anyone: backends, bgwriter, checkpoint).
    pub writes: u64,
    /// Valid buffers re-used for another page.
    pub evictions: u64,
    /// Blocks added by relation extension.
    pub extends: u64,
}

thread_local! {
    static STAT_SLOT: usize = {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        // Relaxed: only spreads threads over slots.
        NEXT.fetch_add(1, Ordering::Relaxed) % STAT_SLOTS
    };
}

/// Relation extension locks of one partition: (relation, fork) -> its mutex.
type ExtLockMap = HashMap<(RelFileLocator, ForkNumber), Arc<Mutex<()>>>;

/// The shared buffer pool.
pub struct BufferPool {
    descs: Box<[BufferDesc]>,
    pages: PagePool,
    table: BufTable,
    clock: Clock,
    smgr: Arc<Smgr>,
    wal: Arc<dyn WalFlush>,
    /// Condition variables for BM_IO_IN_PROGRESS and BM_PIN_COUNT_WAITER waits.
    /// The mutex guards nothing but the wait itself (see `wait_io`).
    io_waits: Box<[WaitStripe]>,
    /// Relation extension locks, one mutex per (relation, fork), created on demand.
    /// Each partition's mutex protects its map only.
    ext_locks: Box<[Mutex<ExtLockMap>]>,
    stats: Box<[StatSlot]>,
    /// pg_stat_bgwriter's counters.
    pub bgstats: crate::buffer::BgWriterStats,
    pub(crate) bgwriter_delay_ms: u64,
    pub(crate) bgwriter_lru_maxpages: usize,
}

/// Allocations expected next round per allocation of the last rounds (PostgreSQL's
/// `bgwriter_lru_multiplier` default; not a setting here yet).
const LRU_MULTIPLIER: f64 = 2.0;
/// Rounds over which the allocation rate and the density are smoothed.
const SMOOTHING_SAMPLES: f64 = 16.0;
/// An idle pool is scanned once in this many milliseconds (PostgreSQL: 120 s).
const LAP_MS: u64 = 120_000;

/// What the background writer carries from round to round (PostgreSQL keeps the
/// same in BgBufferSync's static variables).
#[derive(Debug)]
pub(crate) struct BgSyncState {
    /// The next buffer to look at, in the clock hand's units (ticks since start).
    next_to_clean: u64,
    /// `Clock::allocs` at the last round.
    prev_allocs: u64,
    /// Allocations per round, smoothed.
    smoothed_alloc: f64,
    /// Buffers scanned per reusable buffer found, smoothed (>= 1).
    smoothed_density: f64,
}

impl Default for BgSyncState {
    fn default() -> Self {
        BgSyncState { next_to_clean: 0, prev_allocs: 0, smoothed_alloc: 0.0, smoothed_density: 10.0 }
    }
}

/// What one background-writer round did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BgRound {
    pub(crate) written: usize,
    pub(crate) scanned: usize,
    /// No allocations since the last round and the whole pool ahead of the hand
    /// already looked at: nothing to do until the next allocation.
    pub(crate) can_hibernate: bool,
}

/// A pin on a buffer (RAII: unpinned on drop). While it lives, the buffer holds
/// the page of `tag()` and is not evicted. Lock it to look at the page.
pub struct PinnedBuffer<'a> {
    pool: &'a BufferPool,
    id: usize,
}

/// A shared content lock on a pinned buffer: read access to the page, plus
/// setting hint bits ([`BufferReadGuard::set_hint_bits`]).
pub struct BufferReadGuard<'b> {
    _guard: LwLockGuard<'b>,
    page: &'b [u8],
    /// The pool and buffer number, for `set_hint_bits` (a pointer with write
    /// provenance is derived from the pool's allocation there).
    pool: &'b BufferPool,
    id: usize,
}

/// An exclusive content lock on a pinned buffer: read/write access to the page.
pub struct BufferWriteGuard<'b> {
    _guard: LwLockGuard<'b>,
    pool: &'b BufferPool,
    id: usize,
}

/// A pin together with an exclusive content lock, owned (not borrowing a
/// `PinnedBuffer`), as returned by relation extension and zero-and-lock reads.
pub struct LockedBuffer<'a> {
    // Field order matters: the lock is released before the pin.
    guard: LwLockGuard<'a>,
    pin: PinnedBuffer<'a>,
}

impl BufferPool {
    /// A pool of `settings.shared_buffers` buffers with
    /// `settings.buffer_mapping_partitions` mapping partitions.
    pub fn new(settings: &Settings, smgr: Arc<Smgr>, wal: Arc<dyn WalFlush>) -> Arc<BufferPool> {
        let n = settings.shared_buffers.max(1);
        assert!(n < u32::MAX as usize, "shared_buffers too large");
        Arc::new(BufferPool {
            descs: (0..n)
                .map(|_| BufferDesc {
                    state: BufState::new(),
                    tag: UnsafeCell::new(BufferTag::new(
                        RelFileLocator::default(),
                        ForkNumber::Main,
                        crate::storage::INVALID_BLOCK,
                    )),
                    content_lock: LwLock::new(Tranche::BufferContent),
                })
                .collect(),
            pages: PagePool::new(n),
            table: BufTable::new(n, settings.buffer_mapping_partitions),
            clock: Clock::new(n),
            smgr,
            wal,
            io_waits: (0..IO_STRIPES).map(|_| WaitStripe::new()).collect(),
            ext_locks: (0..EXT_LOCK_PARTITIONS).map(|_| Mutex::new(HashMap::new())).collect(),
            stats: (0..STAT_SLOTS).map(|_| StatSlot::default()).collect(),
            bgstats: Default::default(),
            bgwriter_delay_ms: settings.bgwriter_delay_ms.max(1),
            bgwriter_lru_maxpages: settings.bgwriter_lru_maxpages,
        })
    }

    pub fn nbuffers(&self) -> usize {
        self.descs.len()
    }

    /// The background writer's latch (in the clock, which wakes it).
    pub(crate) fn bgwriter_latch(&self) -> &crate::buffer::freelist::BgWriterLatch {
        &self.clock.bgwriter_latch
    }

    pub fn npartitions(&self) -> usize {
        self.table.npartitions()
    }

    pub fn smgr(&self) -> &Arc<Smgr> {
        &self.smgr
    }

    /// A ring for a bulk operation, sized for this pool.
    pub fn strategy(&self, kind: crate::buffer::StrategyKind) -> Strategy {
        Strategy::new(kind, self.nbuffers())
    }

    /// Buffers allocated since start (pg_stat_bgwriter.buffers_alloc, before
    /// subtracting the reset's base).
    pub fn buffers_alloc(&self) -> u64 {
        self.clock.allocs()
    }

    pub fn stats(&self) -> BufferStats {
        let mut s = BufferStats::default();
        for slot in self.stats.iter() {
            // Relaxed: statistics.
            s.hits += slot.hits.load(Ordering::Relaxed);
            s.reads += slot.reads.load(Ordering::Relaxed);
            s.writes += slot.writes.load(Ordering::Relaxed);
            s.evictions += slot.evictions.load(Ordering::Relaxed);
            s.extends += slot.extends.load(Ordering::Relaxed);
        }
        s
    }

    #[inline]
    fn count(&self, f: impl Fn(&StatSlot) -> &AtomicU64, n: u64) {
        let slot = STAT_SLOT.with(|s| *s);
        // Relaxed: statistics.
        f(&self.stats[slot]).fetch_add(n, Ordering::Relaxed);
    }

    #[inline]
    fn desc(&self, id: usize) -> &BufferDesc {
        &self.descs[id]
    }

    /// The page bytes of buffer `id`, read-only.
    ///
    /// # Safety
    /// The caller holds a pin and the content lock (shared or exclusive), or owns
    /// the buffer's I/O (BM_IO_IN_PROGRESS set by it), or otherwise knows no one
    /// writes the page (a pinned, untagged victim only its owner can reach).
    #[inline]
    unsafe fn page(&self, id: usize) -> &[u8] {
        std::slice::from_raw_parts(self.pages.ptr.add(id * BLCKSZ), BLCKSZ)
    }

    /// The page bytes of buffer `id`, writable.
    ///
    /// # Safety
    /// The caller holds a pin and the exclusive content lock, or owns the input I/O
    /// of a buffer that is not BM_VALID (no one else may read it until BM_VALID is
    /// set), or holds the only pin on an untagged victim. Any of these excludes all
    /// other readers and writers of these bytes.
    #[allow(clippy::mut_from_ref)]
    #[inline]
    unsafe fn page_mut(&self, id: usize) -> &mut [u8] {
        std::slice::from_raw_parts_mut(self.pages.ptr.add(id * BLCKSZ), BLCKSZ)
    }

    // ----- pins -----------------------------------------------------------------

    /// Unpins; wakes a cleanup-lock waiter when only its pin is left.
    #[inline]
    fn unpin(&self, id: usize) {
        let old = self.desc(id).state.unpin();
        if old & BM_PIN_COUNT_WAITER != 0 && refcount(old) == 2 {
            self.wake(id);
        }
    }

    /// Wakes whoever waits on buffer `id`'s stripe (no system call when nobody does).
    #[inline]
    fn wake(&self, id: usize) {
        self.io_waits[id % IO_STRIPES].wake();
    }

    /// Waits until BM_IO_IN_PROGRESS is clear (someone else's read or write).
    #[cold]
    fn wait_io(&self, id: usize) {
        report_wait_start(WaitEvent::LwLock(Tranche::BufferIo));
        // The I/O owner clears the flag, then wakes the stripe (io_wait.rs: the
        // waiter count and the flag cannot both be missed).
        self.io_waits[id % IO_STRIPES].wait_while(|| self.desc(id).state.load() & BM_IO_IN_PROGRESS != 0);
        report_wait_end();
    }

    /// Starts I/O on a buffer (PostgreSQL's StartBufferIO). For input: returns false
    /// if the buffer became valid meanwhile. For output: returns false if it is no
    /// longer dirty. Waits for I/O already in progress. On true the caller owns the
    /// I/O and must end it with `terminate_io` or `abort_io`.
    fn start_io(&self, id: usize, for_input: bool) -> bool {
        let st = &self.desc(id).state;
        loop {
            let s = st.lock();
            if s & BM_IO_IN_PROGRESS != 0 {
                st.unlock();
                self.wait_io(id);
                continue;
            }
            if (for_input && s & BM_VALID != 0) || (!for_input && s & BM_DIRTY == 0) {
                st.unlock();
                return false;
            }
            st.unlock_with(0, |f| {
                let f = f | BM_IO_IN_PROGRESS;
                // A write copies the page now: changes made from here on must
                // leave the buffer dirty.
                if for_input { f } else { f & !BM_JUST_DIRTIED }
            });
            return true;
        }
    }

    /// Ends our I/O successfully: sets `set_flags`; after a write, clears BM_DIRTY
    /// unless the page was dirtied again meanwhile.
    fn terminate_io(&self, id: usize, clear_dirty: bool, set_flags: u32) {
        self.desc(id).state.lock();
        self.desc(id).state.unlock_with(0, |f| {
            let mut f = f & !(BM_IO_IN_PROGRESS | BM_IO_ERROR);
            if clear_dirty && f & BM_JUST_DIRTIED == 0 {
                f &= !(BM_DIRTY | BM_CHECKPOINT_NEEDED);
            }
            f | set_flags
        });
        self.wake(id);
    }

    /// Ends our I/O with a failure: the buffer keeps its state (not valid after a
    /// failed read, still dirty after a failed write) and BM_IO_ERROR is set; the
    /// next backend that needs it retries.
    fn abort_io(&self, id: usize) {
        self.desc(id).state.lock();
        self.desc(id).state.unlock_with(0, |f| (f & !BM_IO_IN_PROGRESS) | BM_IO_ERROR);
        self.wake(id);
    }

    // ----- lookup and replacement ----------------------------------------------

    /// Looks the tag up; if missing, takes a victim and installs it under the tag
    /// with BM_IO_IN_PROGRESS set (owned by us). Returns the pinned buffer and
    /// whether it was found (false: we own the input I/O of a not-valid buffer).
    fn buffer_alloc<'a>(&'a self, tag: BufferTag, strategy: Option<&Strategy>) -> Result<(PinnedBuffer<'a>, bool)> {
        let part = self.table.partition(&tag);
        {
            let map = part.read();
            if let Some(&id) = map.get(&TagKey(tag)) {
                // Pin under the partition lock: the mapping cannot change before the
                // pin is visible to an evictor (who needs the lock exclusive).
                self.desc(id as usize).state.pin(strategy.is_some());
                return Ok((PinnedBuffer { pool: self, id: id as usize }, true));
            }
        }
        let victim = self.get_victim(strategy)?;
        Ok(self.install(tag, victim, strategy.is_some()))
    }

    /// Installs a clean, untagged, pinned victim under `tag`, unless another
    /// backend installed the tag meanwhile: then the victim is given back and the
    /// existing buffer is pinned instead (found = true).
    fn install<'a>(&'a self, tag: BufferTag, victim: PinnedBuffer<'a>, ring: bool) -> (PinnedBuffer<'a>, bool) {
        let part = self.table.partition(&tag);
        let mut map = part.write();
        if let Some(&id) = map.get(&TagKey(tag)) {
            self.desc(id as usize).state.pin(ring);
            drop(map);
            drop(victim); // untagged: goes back to the clock with usage 0
            return (PinnedBuffer { pool: self, id: id as usize }, true);
        }
        let id = victim.id;
        map.insert(TagKey(tag), id as u32);
        let d = self.desc(id);
        d.state.lock();
        // SAFETY: header lock + partition exclusive + our pin is the only one (the
        // victim is untagged, so no lookup can reach it).
        unsafe { d.set_tag(tag) };
        d.state.unlock_with(0, |f| {
            let f = f & !(BM_VALID | BM_DIRTY | BM_JUST_DIRTIED | BM_CHECKPOINT_NEEDED | BM_IO_ERROR | USAGE_MASK);
            f | BM_TAG_VALID | BM_IO_IN_PROGRESS | USAGE_ONE
        });
        drop(map);
        (victim, false)
    }

    /// Takes a victim (ring or clock sweep), writes it out if dirty (WAL first),
    /// and removes it from the mapping table. Returns it pinned, clean and untagged.
    fn get_victim(&self, strategy: Option<&Strategy>) -> Result<PinnedBuffer<'_>> {
        let states = |i: usize| &self.descs[i].state;
        loop {
            let (id, _from_ring) = match strategy {
                Some(s) => s.get(&self.clock, &states)?,
                None => (self.clock.sweep(&states)?, false),
            };
            let victim = PinnedBuffer { pool: self, id };
            let d = self.desc(id);
            if d.state.load() & BM_DIRTY != 0 {
                if strategy.is_some_and(|s| s.reject_dirty()) {
                    continue;
                }
                // Conditional: we may hold content locks on other buffers, and the
                // holder of this one may wait for us; never wait here. Writing a page
                // out needs only a shared content lock (no one can change it).
                let Some(_g) = d.content_lock.try_shared() else { continue };
                self.flush_buffer(id)?;
                crate::buffer::BgWriterStats::add(&self.bgstats.buffers_backend, 1);
                crate::pgstat::usage::count_written();
            }
            let s = d.state.load();
            if s & BM_TAG_VALID != 0 {
                if !self.invalidate_victim(id) {
                    continue;
                }
                self.count(|s| &s.evictions, 1);
            }
            return Ok(victim);
        }
    }

    /// Removes a pinned victim from the mapping table if no one else pinned or
    /// dirtied it since we chose it (PostgreSQL's InvalidateVictimBuffer).
    fn invalidate_victim(&self, id: usize) -> bool {
        let d = self.desc(id);
        // SAFETY: we hold a pin on a BM_TAG_VALID buffer.
        let tag = unsafe { d.tag() };
        let mut map = self.table.partition(&tag).write();
        let s = d.state.lock();
        if refcount(s) != 1 || s & (BM_DIRTY | BM_IO_IN_PROGRESS) != 0 || s & BM_TAG_VALID == 0 {
            d.state.unlock();
            return false;
        }
        let removed = map.remove(&TagKey(tag));
        debug_assert_eq!(removed, Some(id as u32), "mapping table out of sync");
        d.state.unlock_with(0, |f| {
            f & !(BM_TAG_VALID | BM_VALID | BM_CHECKPOINT_NEEDED | BM_IO_ERROR | BM_JUST_DIRTIED | USAGE_MASK)
        });
        true
    }

    /// Writes a buffer out if it is dirty (PostgreSQL's FlushBuffer). The caller
    /// holds a pin and the content lock (shared or exclusive). WAL before data: the
    /// WAL is flushed up to the page's LSN before the page is written.
    fn flush_buffer(&self, id: usize) -> Result<()> {
        if !self.start_io(id, false) {
            return Ok(());
        }
        let d = self.desc(id);
        // SAFETY: pinned, BM_TAG_VALID (only valid buffers are dirty).
        let tag = unsafe { d.tag() };
        let mut copy = [0u8; BLCKSZ];
        // SAFETY: the caller holds the content lock: no one changes the page. We
        // copy it so the checksum is set on our copy, not under other readers.
        copy.copy_from_slice(unsafe { self.page(id) });
        let lsn = page_lsn(&copy);
        if lsn.is_valid() {
            if let Err(e) = self.wal.flush_wal(lsn) {
                self.abort_io(id);
                return Err(e);
            }
        }
        if !page_is_new(&copy) {
            set_page_checksum(&mut copy, tag.block);
        }
        report_wait_start(WaitEvent::Io("DataFileWrite"));
        let r = self.smgr.write_block(tag.rel, tag.fork, tag.block, &copy);
        report_wait_end();
        match r {
            Ok(()) => {
                self.terminate_io(id, true, 0);
                self.count(|s| &s.writes, 1);
                Ok(())
            }
            Err(e) => {
                self.abort_io(id);
                Err(e)
            }
        }
    }

    // ----- reading ----------------------------------------------------------------

    /// Returns the page `tag` pinned, reading it from disk if it is not in the pool
    /// (PostgreSQL's ReadBufferExtended with RBM_NORMAL). Concurrent readers of the
    /// same missing page share one read. A page that fails verification is an
    /// `Error::Corrupt` naming the block and relation.
    pub fn read_buffer(&self, tag: BufferTag, strategy: Option<&Strategy>) -> Result<PinnedBuffer<'_>> {
        self.read_buffer_hit(tag, strategy).map(|(pin, _)| pin)
    }

    /// [`BufferPool::read_buffer`], also saying whether the page was found in the
    /// pool (`true`) or read from disk: the caller's statistics (blks_hit,
    /// blks_read) count it in its own backend-local counters.
    pub fn read_buffer_hit(&self, tag: BufferTag, strategy: Option<&Strategy>) -> Result<(PinnedBuffer<'_>, bool)> {
        let (pin, found) = self.buffer_alloc(tag, strategy)?;
        if found {
            if pin.state() & BM_VALID != 0 {
                self.count(|s| &s.hits, 1);
                return Ok((pin, true));
            }
            if !self.start_io(pin.id, true) {
                self.count(|s| &s.hits, 1);
                return Ok((pin, true));
            }
        }
        // We own the input I/O of a buffer that is not valid.
        let id = pin.id;
        // SAFETY: input I/O owned by us on a !BM_VALID buffer: no one else reads or
        // writes these bytes until we set BM_VALID.
        let page = unsafe { self.page_mut(id) };
        report_wait_start(WaitEvent::Io("DataFileRead"));
        let r = self.smgr.read_block(tag.rel, tag.fork, tag.block, page);
        report_wait_end();
        if let Err(e) = r {
            self.abort_io(id);
            return Err(e);
        }
        if !page_verify(page, tag.block) {
            self.abort_io(id);
            return Err(Error::corrupt(format!(
                "invalid page in block {} of relation {}",
                tag.block,
                Smgr::rel_path(tag.rel, tag.fork, 0)
            )));
        }
        self.count(|s| &s.reads, 1);
        self.terminate_io(id, false, BM_VALID);
        Ok((pin, false))
    }

    /// Returns the page `tag` pinned and exclusive-locked, with its contents zeroed
    /// and without reading it (PostgreSQL's RBM_ZERO_AND_LOCK, used by redo of
    /// full-page images and for pages the caller initializes completely). No one
    /// sees the zeroed page before the caller releases the lock. The caller fills
    /// the page and marks it dirty.
    pub fn read_buffer_zero(&self, tag: BufferTag, strategy: Option<&Strategy>) -> Result<LockedBuffer<'_>> {
        let (pin, found) = self.buffer_alloc(tag, strategy)?;
        self.zero_and_lock(pin, found, false)
    }

    /// Zeroes and exclusive-locks a pinned buffer. If `found`, takes over its input
    /// I/O when it is not valid; when it is valid and `require_new`, the page must be
    /// all zeroes (a block past the end of the relation must not hold data).
    fn zero_and_lock<'a>(&'a self, pin: PinnedBuffer<'a>, found: bool, require_new: bool) -> Result<LockedBuffer<'a>> {
        let id = pin.id;
        let d = self.desc(id);
        let own_io = !found || self.start_io(id, true);
        if own_io {
            // SAFETY: input I/O owned by us on a !BM_VALID buffer.
            unsafe { self.page_mut(id) }.fill(0);
            // No one else holds this content lock: lockers need a valid buffer.
            let guard = d.content_lock.exclusive();
            self.terminate_io(id, false, BM_VALID);
            return Ok(LockedBuffer { guard, pin });
        }
        let guard = d.content_lock.exclusive();
        // SAFETY: pin + exclusive content lock.
        let page = unsafe { self.page_mut(id) };
        if require_new && !page_is_new(page) {
            let tag = pin.tag();
            return Err(Error::internal(format!(
                "unexpected data beyond EOF in block {} of relation {}",
                tag.block,
                Smgr::rel_path(tag.rel, tag.fork, 0)
            )));
        }
        page.fill(0);
        Ok(LockedBuffer { guard, pin })
    }

    // ----- relation extension -----------------------------------------------------

    fn extension_lock(&self, rel: RelFileLocator, fork: ForkNumber) -> Arc<Mutex<()>> {
        let p = (rel.rel_number as usize ^ rel.db_oid as usize) % EXT_LOCK_PARTITIONS;
        let mut m = self.ext_locks[p].lock().unwrap_or_else(|e| e.into_inner());
        m.entry((rel, fork)).or_default().clone()
    }

    /// Adds `n` zeroed pages at the end of the fork and returns them pinned and
    /// exclusive-locked, in block order. Many backends extending together get
    /// distinct blocks: the end-of-relation decision and the file extension are made
    /// under the relation's extension lock (PostgreSQL: the relation extension
    /// heavyweight lock). Victim buffers are found, and written out if dirty,
    /// *before* that lock is taken, so the lock is held only for the mapping inserts
    /// and one write of zeroes. `n > 1` is PostgreSQL's RelationAddExtraBlocks.
    pub fn extend(
        &self,
        rel: RelFileLocator,
        fork: ForkNumber,
        n: u32,
        strategy: Option<&Strategy>,
    ) -> Result<Vec<LockedBuffer<'_>>> {
        if n == 0 {
            return Ok(Vec::new());
        }
        let mut victims = Vec::with_capacity(n as usize);
        for _ in 0..n {
            victims.push(self.get_victim(strategy)?);
        }
        let lock = self.extension_lock(rel, fork);
        let _ext = match lock.try_lock() {
            Ok(g) => g,
            Err(_) => {
                report_wait_start(WaitEvent::Lock("extend"));
                let g = lock.lock().unwrap_or_else(|e| e.into_inner());
                report_wait_end();
                g
            }
        };
        let first = self.smgr.nblocks(rel, fork)?;
        if !matches!(first.checked_add(n), Some(e) if e != crate::storage::INVALID_BLOCK) {
            return Err(Error::user(
                crate::error::SqlState::PROGRAM_LIMIT_EXCEEDED,
                format!("cannot extend relation {} beyond {} blocks", Smgr::rel_path(rel, fork, 0), u32::MAX - 1),
            ));
        }
        // Install the new blocks with I/O in progress: a reader that finds one
        // waits for us instead of reading the file.
        let mut installed = Vec::with_capacity(n as usize);
        for (i, v) in victims.into_iter().enumerate() {
            let tag = BufferTag::new(rel, fork, first + i as u32);
            installed.push(self.install(tag, v, strategy.is_some()));
        }
        let file = self.smgr.zero_extend(rel, fork, first, n);
        let mut out = Vec::with_capacity(n as usize);
        let mut err = file.as_ref().err().map(|e| Error::internal(e.to_string()));
        for (pin, found) in installed {
            if file.is_err() {
                if !found {
                    self.abort_io(pin.id);
                }
                continue;
            }
            match self.zero_and_lock(pin, found, true) {
                Ok(b) => out.push(b),
                Err(e) => err = err.or(Some(e)),
            }
        }
        file?;
        if let Some(e) = err {
            return Err(e);
        }
        self.count(|s| &s.extends, n as u64);
        Ok(out)
    }

    /// Number of blocks in a fork (from the storage manager).
    pub fn nblocks(&self, rel: RelFileLocator, fork: ForkNumber) -> Result<BlockNumber> {
        self.smgr.nblocks(rel, fork)
    }

    // ----- writing: background writer, checkpoint ---------------------------------

    /// Writes buffer `id` if it is valid and dirty (PostgreSQL's SyncOneBuffer).
    /// With `skip_recently_used`, only if unpinned with usage count 0 (bgwriter);
    /// with `checkpoint`, only if BM_CHECKPOINT_NEEDED is still set.
    fn sync_one_buffer(&self, id: usize, skip_recently_used: bool, checkpoint: bool) -> Result<bool> {
        let d = self.desc(id);
        let s = d.state.lock();
        let skip = s & (BM_VALID | BM_DIRTY) != (BM_VALID | BM_DIRTY)
            || (skip_recently_used && (refcount(s) != 0 || usage_count(s) != 0))
            || (checkpoint && s & BM_CHECKPOINT_NEEDED == 0);
        if skip {
            d.state.unlock();
            return Ok(false);
        }
        d.state.unlock_with(1, |f| f); // pin while locked (PinBuffer_Locked)
        let _pin = PinnedBuffer { pool: self, id };
        let _g = d.content_lock.shared();
        self.flush_buffer(id)?;
        Ok(true)
    }

    /// One background-writer round (the idea of PostgreSQL's BgBufferSync): looks
    /// ahead of the clock hand only as far as recent demand asks, writing the dirty,
    /// unpinned buffers with usage count 0 it finds there (the sweep's next victims)
    /// so that backends rarely write victims themselves.
    ///
    /// Demand is the allocations since the last round, smoothed (a rise is followed
    /// at once, a fall over about 16 rounds) and doubled (`LRU_MULTIPLIER`). The
    /// writer keeps its position in the hand's units (`BgSyncState::next_to_clean`)
    /// and never scans more than one lap ahead, so `0 <= next_to_clean - hand <=
    /// nbuffers` after every round. The reusable buffers already known to lie
    /// between the hand and that position are estimated with the smoothed density
    /// (buffers scanned per reusable one found) and not looked at again. At least
    /// `nbuffers * bgwriter_delay / 2 min` buffers are scanned per round, so an idle
    /// pool is laid clean ahead of the hand within two minutes; then, with no
    /// allocations and nothing left to lap, the round says the writer may hibernate.
    pub(crate) fn bgwriter_sync(&self, st: &mut BgSyncState, max_pages: usize) -> Result<BgRound> {
        let n = self.nbuffers() as u64;
        let hand = self.clock.ticks();
        let allocs = self.clock.allocs();
        let recent = allocs.wrapping_sub(st.prev_allocs);
        st.prev_allocs = allocs;
        if max_pages == 0 {
            // bgwriter_lru_maxpages = 0 turns the LRU scan off (as in PostgreSQL).
            return Ok(BgRound { written: 0, scanned: 0, can_hibernate: true });
        }
        if st.next_to_clean < hand {
            // Lapped by the hand (or the first round): restart at the hand.
            st.next_to_clean = hand;
        }
        let ahead = (st.next_to_clean - hand).min(n);
        let to_lap = n - ahead;
        let r = recent as f64;
        if r > st.smoothed_alloc {
            st.smoothed_alloc = r;
        } else {
            st.smoothed_alloc += (r - st.smoothed_alloc) / SMOOTHING_SAMPLES;
        }
        let upcoming = (st.smoothed_alloc * LRU_MULTIPLIER).ceil() as u64;
        let reusable_ahead = (ahead as f64 / st.smoothed_density) as u64;
        let want = upcoming.saturating_sub(reusable_ahead);
        let min_scan = (n * self.bgwriter_delay_ms / LAP_MS).max(1);
        let (mut scanned, mut reusable, mut written) = (0u64, 0u64, 0usize);
        while scanned < to_lap && (reusable < want || scanned < min_scan) && written < max_pages {
            let id = (st.next_to_clean % n) as usize;
            let s = self.desc(id).state.load();
            if refcount(s) == 0 && usage_count(s) == 0 {
                reusable += 1;
                if s & BM_DIRTY != 0 && self.sync_one_buffer(id, true, false)? {
                    written += 1;
                }
            }
            st.next_to_clean += 1;
            scanned += 1;
        }
        if scanned > 0 {
            let sample = scanned as f64 / reusable.max(1) as f64;
            st.smoothed_density += (sample - st.smoothed_density) / SMOOTHING_SAMPLES;
        }
        Ok(BgRound { written, scanned: scanned as usize, can_hibernate: recent == 0 && scanned == to_lap })
    }

    /// Writes every buffer that is dirty now, in tag order (sequential I/O per
    /// file), each after the WAL up to its LSN is flushed, then fsyncs every file
    /// written since the last sync (PostgreSQL's BufferSync + the checkpoint's sync
    /// phase). Pages dirtied after the start are left for the next checkpoint.
    /// Returns the number of pages written by this call.
    pub fn flush_all_dirty(&self) -> Result<usize> {
        Ok(self.flush_all_dirty_timed()?.0)
    }

    /// [`BufferPool::flush_all_dirty`], also returning how long the writes
    /// and the sync took (a checkpoint's write and sync phases).
    pub fn flush_all_dirty_timed(&self) -> Result<(usize, std::time::Duration, std::time::Duration)> {
        let t0 = std::time::Instant::now();
        let mut todo: Vec<(BufferTag, usize)> = Vec::new();
        for id in 0..self.nbuffers() {
            let d = self.desc(id);
            if d.state.load() & BM_DIRTY == 0 {
                continue;
            }
            let s = d.state.lock();
            if s & (BM_VALID | BM_DIRTY) == (BM_VALID | BM_DIRTY) {
                // SAFETY: header lock held.
                todo.push((unsafe { d.tag() }, id));
                d.state.unlock_with(0, |f| f | BM_CHECKPOINT_NEEDED);
            } else {
                d.state.unlock();
            }
        }
        todo.sort_unstable();
        let mut written = 0;
        for (_, id) in todo {
            if self.sync_one_buffer(id, false, true)? {
                written += 1;
            }
        }
        let t1 = std::time::Instant::now();
        self.smgr.sync_all()?;
        Ok((written, t1 - t0, t1.elapsed()))
    }

    // ----- dropping buffers -------------------------------------------------------

    /// Discards every buffer of `rel` (all forks), dirty or not, without writing
    /// (PostgreSQL's DropRelationBuffers, for DROP TABLE / TRUNCATE). The caller
    /// holds the relation's AccessExclusiveLock, so only transient pins (bgwriter,
    /// checkpoint) can exist; this waits for them to go.
    pub fn drop_relation_buffers(&self, rel: RelFileLocator) {
        self.drop_buffers_where(|t| t.rel == rel);
        for p in self.ext_locks.iter() {
            p.lock().unwrap_or_else(|e| e.into_inner()).retain(|k, _| k.0 != rel);
        }
    }

    /// Discards every buffer of database `db`, dirty or not, without writing
    /// (PostgreSQL's DropDatabaseBuffers, for DROP DATABASE: no backend is
    /// connected to `db`, so only transient pins can exist).
    pub fn drop_database_buffers(&self, db: crate::storage::Oid) {
        self.drop_buffers_where(|t| t.rel.db_oid == db);
        for p in self.ext_locks.iter() {
            p.lock().unwrap_or_else(|e| e.into_inner()).retain(|k, _| k.0.db_oid != db);
        }
    }

    /// Discards the buffers of one fork from block `first` on (before truncating).
    pub fn drop_fork_buffers(&self, rel: RelFileLocator, fork: ForkNumber, first: BlockNumber) {
        self.drop_buffers_where(|t| t.rel == rel && t.fork == fork && t.block >= first);
    }

    /// Truncates a fork to `nblocks`: drops the buffers past the end, then the file.
    pub fn truncate(&self, rel: RelFileLocator, fork: ForkNumber, nblocks: BlockNumber) -> Result<()> {
        self.drop_fork_buffers(rel, fork, nblocks);
        self.smgr.truncate(rel, fork, nblocks)
    }

    fn drop_buffers_where(&self, pred: impl Fn(&BufferTag) -> bool) {
        for id in 0..self.nbuffers() {
            let d = self.desc(id);
            if d.state.load() & BM_TAG_VALID == 0 {
                continue;
            }
            let s = d.state.lock();
            // SAFETY: header lock held.
            let tag = unsafe { d.tag() };
            d.state.unlock();
            if s & BM_TAG_VALID != 0 && pred(&tag) {
                self.invalidate_buffer(id, tag);
            }
        }
    }

    /// Removes buffer `id` from the table if it still holds `tag`, waiting for
    /// pins to go (PostgreSQL's InvalidateBuffer).
    fn invalidate_buffer(&self, id: usize, tag: BufferTag) {
        let d = self.desc(id);
        loop {
            let mut map = self.table.partition(&tag).write();
            let s = d.state.lock();
            // SAFETY: header lock held.
            if s & BM_TAG_VALID == 0 || unsafe { d.tag() } != tag {
                d.state.unlock();
                return;
            }
            if refcount(s) != 0 {
                d.state.unlock();
                drop(map);
                std::thread::sleep(std::time::Duration::from_micros(100));
                continue;
            }
            map.remove(&TagKey(tag));
            d.state.unlock_with(0, |f| {
                f & !(BM_TAG_VALID
                    | BM_VALID
                    | BM_DIRTY
                    | BM_JUST_DIRTIED
                    | BM_CHECKPOINT_NEEDED
                    | BM_IO_ERROR
                    | USAGE_MASK)
            });
            return;
        }
    }

    /// Brings every unpinned buffer's usage count to 0, as clock-sweep passes would.
    #[cfg(test)]
    pub(crate) fn age_usage_counts_for_tests(&self) {
        for d in self.descs.iter() {
            while d.state.try_decrement_usage(d.state.load()) {}
        }
    }

    /// Checks the pool's invariants (for tests): every mapping entry points at a
    /// tag-valid buffer with that tag, every tag-valid buffer is in the table, no
    /// buffer is pinned or header-locked, 0 <= usage count <= MAX_USAGE_COUNT.
    pub fn check_invariants(&self) -> Result<()> {
        let mut tagged = 0;
        for id in 0..self.nbuffers() {
            let d = self.desc(id);
            let s = d.state.lock();
            // SAFETY: header lock held.
            let tag = unsafe { d.tag() };
            d.state.unlock();
            let fail = |what: &str| Err(Error::internal(format!("buffer {id}: {what} (state {s:#x})")));
            if refcount(s) != 0 {
                return fail("still pinned");
            }
            if usage_count(s) > MAX_USAGE_COUNT {
                return fail("usage count too high");
            }
            if s & BM_VALID != 0 && s & BM_TAG_VALID == 0 {
                return fail("valid without a valid tag");
            }
            if s & BM_IO_IN_PROGRESS != 0 {
                return fail("I/O left in progress");
            }
            if s & BM_TAG_VALID != 0 {
                tagged += 1;
                if self.table.partition(&tag).read().get(&TagKey(tag)) != Some(&(id as u32)) {
                    return fail("tag not in the mapping table");
                }
            }
        }
        if self.table.len() != tagged {
            return Err(Error::internal(format!(
                "mapping table has {} entries, {} buffers are tagged",
                self.table.len(),
                tagged
            )));
        }
        Ok(())
    }
}

// ----- PinnedBuffer and guards -----------------------------------------------------

impl<'a> PinnedBuffer<'a> {
    /// The buffer's number in the pool (0-based).
    pub fn buffer_id(&self) -> usize {
        self.id
    }

    #[inline]
    fn state(&self) -> u32 {
        self.pool.desc(self.id).state.load()
    }

    /// The page this buffer holds.
    pub fn tag(&self) -> BufferTag {
        // SAFETY: we hold a pin on a tag-valid buffer (handed out only after install).
        unsafe { self.pool.desc(self.id).tag() }
    }

    pub fn block(&self) -> BlockNumber {
        self.tag().block
    }

    /// Whether the page is dirty (for tests and diagnostics).
    pub fn is_dirty(&self) -> bool {
        self.state() & BM_DIRTY != 0
    }

    /// The usage count (for tests and diagnostics).
    pub fn usage_count(&self) -> u32 {
        usage_count(self.state())
    }

    /// Takes the content lock shared: the page can be read.
    pub fn lock_shared(&self) -> BufferReadGuard<'_> {
        let guard = self.pool.desc(self.id).content_lock.shared();
        // SAFETY: pin + shared content lock, for the guard's lifetime: no writer.
        let page = unsafe { self.pool.page(self.id) };
        BufferReadGuard { _guard: guard, page, pool: self.pool, id: self.id }
    }

    /// Takes the content lock exclusive: the page can be changed.
    pub fn lock_exclusive(&self) -> BufferWriteGuard<'_> {
        let guard = self.pool.desc(self.id).content_lock.exclusive();
        BufferWriteGuard { _guard: guard, pool: self.pool, id: self.id }
    }

    /// Tries the exclusive content lock without waiting.
    pub fn try_lock_exclusive(&self) -> Option<BufferWriteGuard<'_>> {
        let guard = self.pool.desc(self.id).content_lock.try_exclusive()?;
        Some(BufferWriteGuard { _guard: guard, pool: self.pool, id: self.id })
    }

    /// The cleanup lock (PostgreSQL's LockBufferForCleanup): the exclusive content
    /// lock while ours is the only pin. Waits (wait event BufferPin) until other pins
    /// are gone. Only one backend may wait for a given buffer at a time. The caller
    /// must hold exactly one pin on it (this one).
    pub fn lock_cleanup(&self) -> Result<BufferWriteGuard<'_>> {
        let guard = self.cleanup_guard()?;
        Ok(BufferWriteGuard { _guard: guard, pool: self.pool, id: self.id })
    }

    /// The content lock of a cleanup lock (see [`Self::lock_cleanup`]).
    fn cleanup_guard(&self) -> Result<LwLockGuard<'a>> {
        let d = self.pool.desc(self.id);
        loop {
            let guard = d.content_lock.exclusive();
            let s = d.state.lock();
            if refcount(s) == 1 {
                d.state.unlock();
                return Ok(guard);
            }
            if s & BM_PIN_COUNT_WAITER != 0 {
                d.state.unlock();
                return Err(Error::internal("multiple backends attempting to wait for pincount 1"));
            }
            d.state.unlock_with(0, |f| f | BM_PIN_COUNT_WAITER);
            drop(guard);
            report_wait_start(WaitEvent::Ipc("BufferPin"));
            // The unpinner that leaves refcount 1 wakes the stripe after its
            // decrement (io_wait.rs: it cannot be missed).
            self.pool.io_waits[self.id % IO_STRIPES].wait_while(|| refcount(d.state.load()) > 1);
            report_wait_end();
            d.state.lock();
            d.state.unlock_with(0, |f| f & !BM_PIN_COUNT_WAITER);
        }
    }

    /// The cleanup lock if it can be had without waiting
    /// (PostgreSQL's ConditionalLockBufferForCleanup).
    pub fn conditional_lock_cleanup(&self) -> Option<BufferWriteGuard<'_>> {
        let d = self.pool.desc(self.id);
        let guard = d.content_lock.try_exclusive()?;
        if refcount(d.state.load()) != 1 {
            return None;
        }
        Some(BufferWriteGuard { _guard: guard, pool: self.pool, id: self.id })
    }

    /// [`Self::lock_cleanup`], keeping pin and lock in one owned value.
    pub fn into_cleanup_locked(self) -> Result<LockedBuffer<'a>> {
        let guard = self.cleanup_guard()?;
        Ok(LockedBuffer { guard, pin: self })
    }

    /// [`Self::conditional_lock_cleanup`] into one owned value; gives the pin back
    /// when the cleanup lock is not free now.
    pub fn try_into_cleanup_locked(self) -> std::result::Result<LockedBuffer<'a>, PinnedBuffer<'a>> {
        let d = self.pool.desc(self.id);
        let Some(guard) = d.content_lock.try_exclusive() else { return Err(self) };
        if refcount(d.state.load()) != 1 {
            drop(guard);
            return Err(self);
        }
        Ok(LockedBuffer { guard, pin: self })
    }

    /// Pins and exclusive-locks, keeping both in one owned value.
    pub fn into_locked(self) -> LockedBuffer<'a> {
        let guard = self.pool.desc(self.id).content_lock.exclusive();
        LockedBuffer { guard, pin: self }
    }
}

impl Clone for PinnedBuffer<'_> {
    /// Another pin on the same buffer (PostgreSQL's IncrBufferRefCount).
    fn clone(&self) -> Self {
        self.pool.desc(self.id).state.pin(false);
        PinnedBuffer { pool: self.pool, id: self.id }
    }
}

impl Drop for PinnedBuffer<'_> {
    #[inline]
    fn drop(&mut self) {
        self.pool.unpin(self.id);
    }
}

impl std::fmt::Debug for PinnedBuffer<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PinnedBuffer({}, {:?})", self.id, self.tag())
    }
}

impl Deref for BufferReadGuard<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.page
    }
}

impl Deref for BufferWriteGuard<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: pin + exclusive content lock held by this guard.
        unsafe { self.pool.page(self.id) }
    }
}

impl DerefMut for BufferWriteGuard<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: pin + exclusive content lock held by this guard; `&mut self`
        // makes this the only reference through the guard.
        unsafe { self.pool.page_mut(self.id) }
    }
}

impl BufferReadGuard<'_> {
    /// ORs `bits` into the little-endian 16-bit field at byte `offset` of the page,
    /// atomically, under the shared content lock (PostgreSQL's SetHintBits: a reader
    /// records what it learned about a tuple's xmin/xmax in t_infomask). Returns
    /// false, changing nothing, if `offset` is odd or out of the page.
    ///
    /// Only for *hint* bits: bits whose presence or absence both give correct
    /// answers, which only ever go from 0 to 1 while the page is shared-locked, and
    /// which are never relied on by redo. The buffer is **not** marked dirty: a
    /// hint-only change is written only together with a later WAL-logged change of
    /// the page (see the heap README, "hint bits": our pages are checksummed and a
    /// torn hint-only write would not be repaired by redo).
    pub fn set_hint_bits(&self, offset: usize, bits: u16) -> bool {
        if !offset.is_multiple_of(2) || offset + 2 > BLCKSZ {
            return false;
        }
        // SAFETY: the pointer is in the page (checked above), 2-byte aligned (pages
        // are POOL_ALIGN-aligned and `offset` is even), and points into the pool
        // allocation, which outlives this guard. Our pin keeps the buffer from being
        // re-used, our shared content lock keeps every writer of page bytes out:
        // exclusive lockers, and input I/O (which happens before BM_VALID, before
        // any lock). Others who may touch these two bytes at the same moment are
        // other shared lockers: hint setters, whose atomic ORs commute, and readers,
        // for whom the field before and after the OR are both valid answers (a hint
        // bit only caches what the commit log says), and the buffer writer, which
        // copies the page under a shared lock before computing the checksum on its
        // copy, so a concurrent OR lands in the copy or not, and the copy is
        // self-consistent either way. Readers hold `&[u8]` views of the page; like
        // PostgreSQL's unlocked hint writes in C, these concurrent plain reads of a
        // field written atomically are a formal data race that the lock protocol
        // keeps benign (each field is read once per visibility check).
        let cell = unsafe {
            let page_ptr = self.pool.pages.ptr.add(self.id * BLCKSZ);
            std::sync::atomic::AtomicU16::from_ptr(page_ptr.add(offset) as *mut u16)
        };
        // Relaxed: a hint orders nothing; the content lock release publishes it.
        cell.fetch_or(bits.to_le(), std::sync::atomic::Ordering::Relaxed);
        true
    }
}

impl BufferWriteGuard<'_> {
    /// Marks the page dirty (PostgreSQL's MarkBufferDirty). Call after changing
    /// it and after setting its LSN to the WAL record that describes the change.
    pub fn mark_dirty(&mut self) {
        if self.pool.desc(self.id).state.set_flags_was(BM_DIRTY | BM_JUST_DIRTIED) & BM_DIRTY == 0 {
            crate::pgstat::usage::count_dirtied();
        }
    }
}

impl<'a> LockedBuffer<'a> {
    pub fn tag(&self) -> BufferTag {
        self.pin.tag()
    }

    pub fn block(&self) -> BlockNumber {
        self.pin.block()
    }

    pub fn mark_dirty(&mut self) {
        if self.pin.pool.desc(self.pin.id).state.set_flags_was(BM_DIRTY | BM_JUST_DIRTIED) & BM_DIRTY == 0 {
            crate::pgstat::usage::count_dirtied();
        }
    }

    /// Releases the content lock, keeping the pin.
    pub fn unlock(self) -> PinnedBuffer<'a> {
        let LockedBuffer { guard, pin } = self;
        drop(guard);
        pin
    }

    pub fn pin(&self) -> &PinnedBuffer<'a> {
        &self.pin
    }

    /// Whether ours is the only pin, so that this exclusive lock is a cleanup lock
    /// (PostgreSQL's IsBufferCleanupOK). A pin taken after the check by a backend
    /// that then waits for the content lock does not matter to callers: it cannot
    /// look at the page before this lock is released.
    pub fn is_cleanup_ok(&self) -> bool {
        refcount(self.pin.state()) == 1
    }
}

impl Deref for LockedBuffer<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: pin + exclusive content lock held by this value.
        unsafe { self.pin.pool.page(self.pin.id) }
    }
}

impl DerefMut for LockedBuffer<'_> {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: pin + exclusive content lock held by this value; `&mut self`.
        unsafe { self.pin.pool.page_mut(self.pin.id) }
    }
}

#[cfg(test)]
mod hint_bit_tests {
    use super::*;
    use crate::storage::NoWal;

    /// Many threads OR different bits into the same 16-bit field under shared locks:
    /// no bit is lost, the buffer stays clean, odd offsets are refused.
    #[test]
    fn concurrent_hint_bits_under_shared_locks_are_not_lost() {
        let dir = tempfile::tempdir().unwrap();
        let smgr = Arc::new(Smgr::new(dir.path(), false).unwrap());
        let s = Settings { shared_buffers: 8, buffer_mapping_partitions: 4, ..Default::default() };
        let pool = BufferPool::new(&s, smgr.clone(), Arc::new(NoWal));
        let rel = RelFileLocator { spc_oid: 1663, db_oid: 5, rel_number: 7 };
        smgr.create(rel, ForkNumber::Main).unwrap();
        drop(pool.extend(rel, ForkNumber::Main, 1, None).unwrap());
        let tag = BufferTag::new(rel, ForkNumber::Main, 0);
        for round in 0..50 {
            let off = 100 + 2 * round;
            std::thread::scope(|sc| {
                for bit in 0..16 {
                    let pool = &pool;
                    sc.spawn(move || {
                        let pin = pool.read_buffer(tag, None).unwrap();
                        let g = pin.lock_shared();
                        assert!(g.set_hint_bits(off, 1 << bit));
                    });
                }
            });
            let pin = pool.read_buffer(tag, None).unwrap();
            let g = pin.lock_shared();
            assert_eq!(u16::from_le_bytes([g[off], g[off + 1]]), 0xFFFF);
            assert!(!g.set_hint_bits(off + 1, 1));
            assert!(!g.set_hint_bits(BLCKSZ - 1, 1));
            assert!(!pin.is_dirty(), "a hint alone must not dirty the buffer");
        }
    }
}
