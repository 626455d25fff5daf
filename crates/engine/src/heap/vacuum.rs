//! VACUUM of one heap relation (PostgreSQL's lazy vacuum, vacuumlazy.c), plus the
//! per-relation tuple counters that drive autovacuum.
//!
//! Phases (README, "VACUUM, pruning and free space"):
//! 1. scan every page through a Vacuum ring: prune under the cleanup lock (or, if
//!    the cleanup lock is not free, look under a shared lock and only collect what
//!    is already LP_DEAD), remember LP_DEAD line pointers, freeze old xmins, count;
//! 2. give the dead TIDs to the index cleanup callback (indexes delete their entries);
//! 3. set those line pointers LP_UNUSED (WAL-logged `PruneOp::now_unused`);
//!
//! and, wherever a page is left with only tuples visible to everyone, sets
//! PD_ALL_VISIBLE and its visibility-map bits (WAL-logged `HeapOp::Visible`). Runs
//! of at least [`SKIP_PAGES_THRESHOLD`] pages the map calls all-visible (all-frozen
//! for VACUUM FREEZE) are not read at all.
//!
//! then record each page's free space and rebuild the FSM's upper levels. Phases 2
//! and 3 also run in the middle of the scan whenever the dead-TID list reaches
//! `max_dead_tids` (PostgreSQL: maintenance_work_mem).

use super::freespace::{fsm_vacuum, record_free_space};
use super::page::{heap_page_freeze, FreezeItem, HeapOp, PruneOp};
use super::pruneheap::{log_heap_op, prune_locked, visibility_info};
use super::tuple::{tuple_set_hint_bits, Tid, TupleHeader, HEAP_XMAX_INVALID};
use super::visibilitymap::{vm_clear, vm_get_status, vm_set, VmReader, VM_ALL_FROZEN, VM_ALL_VISIBLE, VM_VALID_BITS};
use crate::buffer::BufferWriteGuard;
use crate::buffer::StrategyKind;
use crate::engine::{Backend, Engine};
use crate::error::{Error, Result, SqlState};
use crate::storage::page::{
    page_get_item, page_get_item_id, page_get_item_mut, page_has_flag, page_heap_free_space, page_is_new, page_lsn,
    page_max_offset_number, page_prune_xid, page_set_flag, LpFlags, OffsetNumber, FIRST_OFFSET_NUMBER,
    PAGE_HEADER_SIZE, PD_ALL_VISIBLE,
};
use crate::storage::{BlockNumber, BufferTag, ForkNumber, RelFileLocator};
use crate::txn::visibility::{satisfies_vacuum, HtsvResult, XidOracle};
use crate::txn::xid::{xid_is_normal, xid_precedes, TransactionId, FIRST_NORMAL_XID};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex};

/// Runs of pages that the visibility map lets VACUUM skip are skipped only when at
/// least this long (PostgreSQL's SKIP_PAGES_THRESHOLD): reading a few pages in the
/// middle of a sequential read costs little, and every page read may be frozen, so
/// short runs are read.
pub const SKIP_PAGES_THRESHOLD: u32 = 32;

/// Options of one VACUUM.
#[derive(Clone, Copy, Debug)]
pub struct VacuumOptions {
    /// VACUUM FREEZE: freeze every tuple whose xmin is visible to everyone.
    pub freeze: bool,
    /// VACUUM VERBOSE: report to stderr (the server log) at the end.
    pub verbose: bool,
    /// Minimum xmin age to freeze without `freeze` (vacuum_freeze_min_age).
    pub freeze_min_age: u32,
    /// Dead TIDs collected before an index + heap pass runs mid-scan.
    pub max_dead_tids: usize,
    /// Autovacuum: skip the relation instead of waiting when another VACUUM of it
    /// is running.
    pub skip_locked: bool,
    /// VACUUM (INDEX_CLEANUP ON): run phases 2 and 3. Off: LP_DEAD line pointers
    /// stay (they are counted in `dead_items_left`), the callback is never called.
    /// Autovacuum uses off for a relation whose index cleanup is not registered.
    pub index_cleanup: bool,
}

impl VacuumOptions {
    /// The defaults from the engine's settings.
    pub fn from_settings(s: &crate::config::Settings) -> VacuumOptions {
        VacuumOptions {
            freeze: false,
            verbose: false,
            freeze_min_age: s.vacuum_freeze_min_age,
            // 64 MB of 6-byte TIDs, PostgreSQL's default maintenance_work_mem.
            max_dead_tids: 64 * 1024 * 1024 / 6,
            skip_locked: false,
            index_cleanup: true,
        }
    }
}

/// What a VACUUM did (PostgreSQL's VACUUM VERBOSE counts).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VacuumStats {
    /// Heap pages in the relation when the scan started.
    pub rel_pages: u64,
    /// Heap pages read.
    pub pages_scanned: u64,
    /// Heap pages not read because the visibility map calls them all-visible
    /// (all-frozen for VACUUM FREEZE), in runs of at least SKIP_PAGES_THRESHOLD.
    pub pages_skipped_vm: u64,
    /// Of those, pages that are all-visible but not all-frozen: they may hold
    /// unfrozen xids, so `new_relfrozenxid` is 0 (cannot advance) when this is not 0.
    pub pages_skipped_unfrozen: u64,
    /// Pages whose PD_ALL_VISIBLE and visibility-map bits this VACUUM set.
    pub pages_set_all_visible: u64,
    /// Of those, pages also marked all-frozen.
    pub pages_set_all_frozen: u64,
    /// Pages where pruning removed something.
    pub pages_pruned: u64,
    /// Pages whose cleanup lock was not free: not pruned or frozen, only looked at.
    pub pages_cleanup_skipped: u64,
    /// Tuples removed by pruning (their storage freed).
    pub tuples_removed: u64,
    /// LP_DEAD line pointers handed to index cleanup and then set unused.
    pub dead_items_removed: u64,
    /// Dead but not yet removable (a snapshot may still see them: RecentlyDead).
    pub recently_dead: u64,
    /// Dead to everyone but not removed: on pages whose cleanup lock was not free,
    /// or HOT chain members behind a live member (PostgreSQL's missed_dead_tuples).
    pub missed_dead: u64,
    /// Live tuples left on the pages read (the new reltuples when no page was
    /// skipped; else see [`estimate_reltuples`]).
    pub live_tuples: u64,
    /// Tuples whose inserter (or deleter) is still running.
    pub in_progress: u64,
    /// Of those, tuples whose deleter is still running (live until it commits).
    pub delete_in_progress: u64,
    /// Tuples frozen (xmin set to FrozenTransactionId) or whose old xmax was cleared.
    pub tuples_frozen: u64,
    /// LP_DEAD line pointers left (index cleanup off).
    pub dead_items_left: u64,
    /// Index cleanup callback calls.
    pub index_scans: u64,
    /// Pages left with no tuple at all (truncation candidates; not truncated).
    pub empty_pages: u64,
    /// The xmin horizon used: rows deleted before it were removable.
    pub oldest_xmin: TransactionId,
    /// xmins preceding this were frozen.
    pub freeze_limit: TransactionId,
    /// Candidate for pg_class.relfrozenxid: no unfrozen xid in the relation
    /// precedes it. 0 (InvalidTransactionId) when pages that may hold unfrozen xids
    /// were skipped (`pages_skipped_unfrozen`): relfrozenxid must then stay as it was.
    pub new_relfrozenxid: TransactionId,
    /// Whether the relation was skipped (`skip_locked` and another VACUUM ran).
    pub skipped: bool,
}

/// VACUUMs in progress, per (engine, relation): PostgreSQL takes a
/// ShareUpdateExclusiveLock, which conflicts with itself.
static IN_PROGRESS: Mutex<Option<HashSet<(usize, RelFileLocator)>>> = Mutex::new(None);
static IN_PROGRESS_CV: Condvar = Condvar::new();

struct VacuumGuard(usize, RelFileLocator);

impl Drop for VacuumGuard {
    fn drop(&mut self) {
        let mut m = IN_PROGRESS.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(set) = m.as_mut() {
            set.remove(&(self.0, self.1));
        }
        IN_PROGRESS_CV.notify_all();
    }
}

fn lock_for_vacuum(engine: &Engine, rel: RelFileLocator, skip_locked: bool) -> Option<VacuumGuard> {
    let key = (engine as *const Engine as usize, rel);
    let mut m = IN_PROGRESS.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let set = m.get_or_insert_with(HashSet::new);
        if set.insert(key) {
            return Some(VacuumGuard(key.0, key.1));
        }
        if skip_locked {
            return None;
        }
        m = IN_PROGRESS_CV.wait(m).unwrap_or_else(|e| e.into_inner());
    }
}

/// The freeze limit: xmins preceding it are frozen.
fn freeze_limit(oldest_xmin: TransactionId, opts: &VacuumOptions) -> TransactionId {
    if opts.freeze {
        return oldest_xmin;
    }
    let limit = oldest_xmin.wrapping_sub(opts.freeze_min_age);
    if xid_is_normal(limit) {
        limit
    } else {
        FIRST_NORMAL_XID
    }
}

fn min_xid(cur: &mut TransactionId, x: TransactionId) {
    if xid_is_normal(x) && xid_precedes(x, *cur) {
        *cur = x;
    }
}

/// VACUUMs `rel` (PostgreSQL's lazy vacuum). `backend` answers transaction-status
/// questions; it must not be inside a transaction block (its snapshot would hold
/// the horizon back, and VACUUM is not transactional). With `None`, a backend slot
/// is taken for the duration. `index_cleanup` is called with batches of TIDs whose
/// heap line pointers are dead: every index of the relation must delete its entries
/// for them before it returns (they are then reused). Pass a no-op for a relation
/// without indexes.
pub fn vacuum_rel(
    engine: &Arc<Engine>,
    backend: Option<&Backend>,
    rel: RelFileLocator,
    opts: VacuumOptions,
    index_cleanup: &mut dyn FnMut(&[Tid]) -> Result<()>,
) -> Result<VacuumStats> {
    let own;
    let backend = match backend {
        Some(b) => b,
        None => {
            own = engine.backend(0)?;
            &own
        }
    };
    if backend.txn.in_transaction() {
        return Err(Error::user(SqlState(*b"25001"), "VACUUM cannot run inside a transaction block"));
    }
    let Some(_guard) = lock_for_vacuum(engine, rel, opts.skip_locked) else {
        return Ok(VacuumStats { skipped: true, ..Default::default() });
    };
    let mut v = LazyVacuum {
        engine,
        oracle: &*backend.txn,
        rel,
        opts,
        stats: VacuumStats::default(),
        dead: Vec::new(),
        index_cleanup,
        horizon: 0,
    };
    v.run()?;
    let stats = v.stats;
    // Deletes still running were counted when they happened and are not dead yet:
    // they stay in the dead count for the next round.
    let dead_left = stats.recently_dead + stats.missed_dead + stats.delete_in_progress;
    // Pages skipped through the visibility map were not counted: keep the old
    // density for them (the counters know no older page count: the relation's).
    let old = engine.pgstat_tables.rel(rel).reltuples.load(std::sync::atomic::Ordering::Relaxed);
    let live = estimate_reltuples(stats.rel_pages, old as f64, &stats).round() as u64;
    super::autovacuum::pgstat_report_vacuum(engine, rel, live, dead_left);
    if opts.verbose {
        eprintln!(
            "INFO:  vacuuming relation {}: pages: {} scanned, {} skipped using visibility map ({} not all-frozen), {} set all-visible ({} all-frozen), {} pruned, {} skipped (pinned); tuples: {} removed, {} remain, {} are dead but not yet removable, {} dead not removed; {} dead item identifiers removed in {} index scans; {} frozen; oldest xmin {}, new relfrozenxid {}",
            rel.rel_number,
            stats.pages_scanned,
            stats.pages_skipped_vm,
            stats.pages_skipped_unfrozen,
            stats.pages_set_all_visible,
            stats.pages_set_all_frozen,
            stats.pages_pruned,
            stats.pages_cleanup_skipped,
            stats.tuples_removed,
            stats.live_tuples,
            stats.recently_dead,
            stats.missed_dead,
            stats.dead_items_removed,
            stats.index_scans,
            stats.tuples_frozen,
            stats.oldest_xmin,
            stats.new_relfrozenxid
        );
    }
    Ok(stats)
}

struct LazyVacuum<'a> {
    engine: &'a Arc<Engine>,
    oracle: &'a dyn XidOracle,
    rel: RelFileLocator,
    opts: VacuumOptions,
    stats: VacuumStats,
    /// LP_DEAD line pointers found and not yet set unused.
    dead: Vec<Tid>,
    index_cleanup: &'a mut dyn FnMut(&[Tid]) -> Result<()>,
    /// The xmin horizon read at the start.
    horizon: TransactionId,
}

/// Counts and freeze decisions for the tuples left on one page.
#[derive(Default)]
struct PageScan {
    freeze: Vec<FreezeItem>,
    hints: Vec<(OffsetNumber, u16)>,
    dead_items: Vec<OffsetNumber>,
    tuples: u64,
}

impl LazyVacuum<'_> {
    fn run(&mut self) -> Result<()> {
        let engine = self.engine;
        let horizon = engine.txn.oldest_xmin();
        self.horizon = horizon;
        let limit = freeze_limit(horizon, &self.opts);
        self.stats.oldest_xmin = horizon;
        self.stats.freeze_limit = limit;
        self.stats.new_relfrozenxid = horizon;
        if !engine.smgr.exists(self.rel, ForkNumber::Main) {
            return Err(Error::user(
                SqlState(*b"42P01"),
                format!("relation with relfilenode {} does not exist", self.rel.rel_number),
            ));
        }
        let strategy = engine.buffers.strategy(StrategyKind::Vacuum);
        let nblocks = engine.buffers.nblocks(self.rel, ForkNumber::Main)?;
        self.stats.rel_pages = nblocks as u64;
        // VACUUM FREEZE must see every page that may hold an unfrozen xid; a plain
        // VACUUM only the pages that may hold something to prune.
        let skip_bits = if self.opts.freeze { VM_ALL_FROZEN } else { VM_ALL_VISIBLE };
        let mut vm = VmReader::new(self.rel);
        // Blocks before this one were looked at for skipping already.
        let mut skip_checked_until: BlockNumber = 0;
        let mut next: BlockNumber = 0;
        while next < nblocks {
            if next >= skip_checked_until {
                // The map is read without the heap pages' locks: a bit cleared
                // after we read it belongs to a change by a transaction that is not
                // before the horizon, which this VACUUM could do nothing about (its
                // tuples are not removable, its xids not below new_relfrozenxid).
                let (mut run, mut unfrozen) = (0u32, 0u64);
                while next + run < nblocks {
                    let bits = vm.status(engine, next + run)?;
                    if bits & skip_bits == 0 {
                        break;
                    }
                    unfrozen += (bits & VM_ALL_FROZEN == 0) as u64;
                    run += 1;
                }
                if run >= SKIP_PAGES_THRESHOLD {
                    self.stats.pages_skipped_vm += run as u64;
                    self.stats.pages_skipped_unfrozen += unfrozen;
                    next += run;
                    skip_checked_until = next;
                    continue;
                }
                skip_checked_until = next + run + 1;
            }
            let block = next;
            next += 1;
            let tag = BufferTag::new(self.rel, ForkNumber::Main, block);
            let pin = engine.buffers.read_buffer(tag, Some(&strategy))?;
            self.stats.pages_scanned += 1;
            let (avail, has_dead) = if let Some(mut page) = pin.conditional_lock_cleanup() {
                if page_is_new(&page[..]) {
                    // Extended but never used (a crash, or spare pages): all free.
                    // (Not marked all-visible: an insert initializes it first, and
                    // PostgreSQL's rule that a new page is left unmarked keeps the
                    // map's bits on initialized pages only.)
                    drop(page);
                    self.stats.empty_pages += 1;
                    record_free_space(engine, self.rel, block, crate::config::BLCKSZ - PAGE_HEADER_SIZE)?;
                    continue;
                }
                let r = prune_locked(engine, self.oracle, tag, &mut page, horizon)?;
                self.stats.tuples_removed += r.ndeleted as u64;
                self.stats.pages_pruned += (r.ndeleted > 0) as u64;
                let scan = self.scan_page(&page[..], block, horizon, limit, true)?;
                // Hint bits under the cleanup lock: persisted only if the page is
                // WAL-logged below (the hint-bit policy, README).
                for &(off, bits) in &scan.hints {
                    tuple_set_hint_bits(page_get_item_mut(&mut page[..], off)?, bits);
                }
                if !scan.freeze.is_empty() {
                    let n = scan.freeze.len() as u64;
                    let op = heap_page_freeze(&mut page[..], scan.freeze)?;
                    log_heap_op(engine, tag, &HeapOp::Freeze(op), &mut page);
                    self.stats.tuples_frozen += n;
                }
                self.stats.empty_pages += (scan.tuples == 0 && scan.dead_items.is_empty()) as u64;
                self.update_visibility(tag, &mut page)?;
                self.dead.extend(scan.dead_items.iter().map(|&o| Tid::new(block, o)));
                (page_heap_free_space(&page[..]), !scan.dead_items.is_empty())
            } else {
                // Someone holds a pin: do not wait (PostgreSQL 15's lazy_scan_noprune).
                self.stats.pages_cleanup_skipped += 1;
                let page = pin.lock_shared();
                if page_is_new(&page[..]) {
                    continue;
                }
                let scan = self.scan_page(&page[..], block, horizon, limit, false)?;
                self.dead.extend(scan.dead_items.iter().map(|&o| Tid::new(block, o)));
                (page_heap_free_space(&page[..]), !scan.dead_items.is_empty())
            };
            drop(pin);
            if !has_dead || !self.opts.index_cleanup {
                record_free_space(engine, self.rel, block, avail)?;
            }
            if !self.opts.index_cleanup {
                self.stats.dead_items_left += self.dead.len() as u64;
                self.dead.clear();
            } else if self.dead.len() >= self.opts.max_dead_tids.max(1) {
                self.index_and_heap_pass()?;
            }
        }
        if !self.dead.is_empty() {
            self.index_and_heap_pass()?;
        }
        if self.stats.pages_skipped_unfrozen > 0 {
            self.stats.new_relfrozenxid = 0;
        }
        fsm_vacuum(engine, self.rel)?;
        Ok(())
    }

    /// Whether every tuple left on `page` is visible to every snapshot (PostgreSQL's
    /// heap_page_is_all_visible): no LP_DEAD item, every tuple `Live` with an xmin
    /// that is frozen or precedes the horizon. Returns `Some(all_frozen)` if so,
    /// where all-frozen means also: every xmin frozen and no xmax left (a VACUUM
    /// FREEZE would have nothing to do on the page). Reads the page as it is now,
    /// after pruning and freezing.
    fn page_all_visible(&self, page: &[u8], block: BlockNumber) -> Result<Option<bool>> {
        let mut all_frozen = true;
        for off in FIRST_OFFSET_NUMBER..=page_max_offset_number(page) {
            let id = page_get_item_id(page, off)?;
            match id.flags {
                LpFlags::Dead => return Ok(None),
                LpFlags::Normal => {}
                _ => continue,
            }
            let h = TupleHeader::read(page_get_item(page, off)?)?;
            let (res, _) = satisfies_vacuum(&visibility_info(&h, Tid::new(block, off)), self.horizon, self.oracle)?;
            let xmin_frozen = h.xmin_frozen() || !xid_is_normal(h.xmin);
            if res != HtsvResult::Live || !(xmin_frozen || xid_precedes(h.xmin, self.horizon)) {
                return Ok(None);
            }
            all_frozen &= xmin_frozen && !xid_is_normal(h.xmax);
        }
        Ok(Some(all_frozen))
    }

    /// Brings PD_ALL_VISIBLE and the visibility-map bits of the page held under the
    /// cleanup lock up to date (visibilitymap rule 1): sets them, WAL-logged, when
    /// the page is all-visible and the map does not say so yet; clears map bits that
    /// the page does not back with PD_ALL_VISIBLE (a map ahead of its heap page,
    /// which the rules forbid: repaired rather than trusted).
    fn update_visibility(&mut self, tag: BufferTag, page: &mut BufferWriteGuard<'_>) -> Result<()> {
        let engine = self.engine;
        let current = vm_get_status(engine, self.rel, tag.block)?;
        let flag = page_has_flag(&page[..], PD_ALL_VISIBLE);
        match self.page_all_visible(&page[..], tag.block)? {
            Some(all_frozen) => {
                let want = VM_ALL_VISIBLE | if all_frozen { VM_ALL_FROZEN } else { 0 };
                if flag && current & want == want {
                    return Ok(());
                }
                // The heap page's flag first, then the record, then the map page
                // stamped with the record's LSN: the map bit cannot reach disk
                // before the record that sets the flag again in redo.
                page_set_flag(&mut page[..], PD_ALL_VISIBLE);
                log_heap_op(engine, tag, &HeapOp::Visible { vm_flags: want }, page);
                vm_set(engine, self.rel, tag.block, want, page_lsn(&page[..]), false)?;
                self.stats.pages_set_all_visible += 1;
                self.stats.pages_set_all_frozen += all_frozen as u64;
            }
            None if current != 0 && !flag => {
                eprintln!(
                    "WARNING:  page {} of relation {} is not marked all-visible but visibility map bit is set",
                    tag.block, self.rel.rel_number
                );
                vm_clear(engine, self.rel, tag.block, VM_VALID_BITS)?;
            }
            None => {}
        }
        Ok(())
    }

    /// Looks at every line pointer left on a page: counts tuples by vacuum status,
    /// collects LP_DEAD items, and (if `may_freeze`) decides what to freeze. Tracks
    /// the relfrozenxid candidate over the xids that stay on the page.
    fn scan_page(
        &mut self,
        page: &[u8],
        block: BlockNumber,
        horizon: TransactionId,
        limit: TransactionId,
        may_freeze: bool,
    ) -> Result<PageScan> {
        let mut s = PageScan::default();
        let max = page_max_offset_number(page);
        for off in FIRST_OFFSET_NUMBER..=max {
            let id = page_get_item_id(page, off)?;
            match id.flags {
                LpFlags::Dead => {
                    s.dead_items.push(off);
                    continue;
                }
                LpFlags::Normal => {}
                _ => continue,
            }
            let h = TupleHeader::read(page_get_item(page, off)?)?;
            let info = visibility_info(&h, Tid::new(block, off));
            let (res, hints) = satisfies_vacuum(&info, horizon, self.oracle)?;
            s.tuples += 1;
            if hints & !h.infomask != 0 {
                s.hints.push((off, hints));
            }
            let infomask = h.infomask | hints;
            match res {
                HtsvResult::Live => self.stats.live_tuples += 1,
                HtsvResult::RecentlyDead => self.stats.recently_dead += 1,
                // Not pruned: the page's cleanup lock was not free, or a HOT chain
                // member pruning could not reach (behind a live member).
                HtsvResult::Dead => self.stats.missed_dead += 1,
                HtsvResult::InsertInProgress => self.stats.in_progress += 1,
                HtsvResult::DeleteInProgress => {
                    self.stats.in_progress += 1;
                    self.stats.delete_in_progress += 1;
                    self.stats.live_tuples += 1;
                }
            }
            let xmin_committed = matches!(res, HtsvResult::Live | HtsvResult::RecentlyDead | HtsvResult::DeleteInProgress);
            let freeze_xmin = may_freeze
                && xmin_committed
                && xid_is_normal(h.xmin)
                && !h.xmin_frozen()
                && xid_precedes(h.xmin, limit);
            // A Live tuple's valid xmax is an aborted deleter or a lock-only xmax
            // whose locker is gone (or still running: then it is not cleared).
            let xmax_gone = res == HtsvResult::Live
                && xid_is_normal(h.xmax)
                && !h.xmax_is_multi()
                && (infomask & HEAP_XMAX_INVALID != 0 || !self.oracle.is_in_progress(h.xmax));
            let clear_xmax = may_freeze && xmax_gone && xid_precedes(h.xmax, limit);
            if freeze_xmin || clear_xmax {
                s.freeze.push(FreezeItem { offset: off, freeze_xmin, clear_xmax });
            }
            if !freeze_xmin && !h.xmin_frozen() {
                min_xid(&mut self.stats.new_relfrozenxid, h.xmin);
            }
            // A multixact xmax is not an xid (multixact freezing is not done: its
            // members are kept by the retention rule, txn README "MultiXacts").
            if !clear_xmax && !h.xmax_is_multi() {
                min_xid(&mut self.stats.new_relfrozenxid, h.xmax);
            }
        }
        Ok(s)
    }

    /// Phases 2 and 3 for the dead TIDs collected so far.
    fn index_and_heap_pass(&mut self) -> Result<()> {
        let dead = std::mem::take(&mut self.dead);
        (self.index_cleanup)(&dead)?;
        self.stats.index_scans += 1;
        let mut by_block: BTreeMap<BlockNumber, Vec<OffsetNumber>> = BTreeMap::new();
        for t in &dead {
            by_block.entry(t.block).or_default().push(t.offset);
        }
        let engine = self.engine;
        let strategy = engine.buffers.strategy(StrategyKind::Vacuum);
        for (block, offs) in by_block {
            let tag = BufferTag::new(self.rel, ForkNumber::Main, block);
            let pin = engine.buffers.read_buffer(tag, Some(&strategy))?;
            let avail = {
                // Tuples do not move here (dead items have no storage), but the
                // page is compacted by PruneOp::apply: wait for the cleanup lock
                // (no other buffer lock is held).
                let mut page = match pin.conditional_lock_cleanup() {
                    Some(p) => p,
                    None => pin.lock_cleanup()?,
                };
                let mut unused = Vec::with_capacity(offs.len());
                for o in offs {
                    // Only VACUUM turns LP_DEAD into anything else, and only one
                    // VACUUM of the relation runs at a time.
                    if page_get_item_id(&page[..], o)?.flags == LpFlags::Dead {
                        unused.push(o);
                    }
                }
                if !unused.is_empty() {
                    let n = unused.len() as u64;
                    let op =
                        PruneOp { now_unused: unused, new_prune_xid: page_prune_xid(&page[..]), ..Default::default() };
                    op.apply(&mut page[..])?;
                    log_heap_op(engine, tag, &HeapOp::Prune(op), &mut page);
                    self.stats.dead_items_removed += n;
                }
                // The dead items were what kept the page from being all-visible
                // (PostgreSQL's lazy_vacuum_heap_page).
                self.update_visibility(tag, &mut page)?;
                page_heap_free_space(&page[..])
            };
            drop(pin);
            record_free_space(engine, self.rel, block, avail)?;
        }
        Ok(())
    }
}

/// The relation's live tuples after a VACUUM that read only some of its pages
/// (PostgreSQL's vac_estimate_reltuples): the pages read count what they hold, the
/// pages skipped keep the density the last estimate (`old_tuples` over `old_pages`)
/// had. With every page read, or nothing known before, the count of the pages read
/// (extrapolated to the whole relation in the second case).
pub fn estimate_reltuples(old_pages: u64, old_tuples: f64, stats: &VacuumStats) -> f64 {
    let (total, scanned, counted) = (stats.rel_pages, stats.pages_scanned, stats.live_tuples as f64);
    if scanned >= total {
        return counted;
    }
    if old_pages == 0 || old_tuples < 0.0 {
        return if scanned == 0 { 0.0 } else { counted / scanned as f64 * total as f64 };
    }
    old_tuples / old_pages as f64 * (total - scanned) as f64 + counted
}

/// Per-relation TIDs grouped by block, for index AMs that prefer a lookup
/// (`bulkdelete` callbacks test membership).
pub fn dead_tid_set(tids: &[Tid]) -> HashMap<BlockNumber, HashSet<OffsetNumber>> {
    let mut m: HashMap<BlockNumber, HashSet<OffsetNumber>> = HashMap::new();
    for t in tids {
        m.entry(t.block).or_default().insert(t.offset);
    }
    m
}
