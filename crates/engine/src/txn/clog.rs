//! The commit log (PostgreSQL's pg_xact): two status bits per transaction, in 8 kB
//! pages cached in a small SLRU buffer pool, written back to `pg_xact/XXXX` segment
//! files. Format: docs/format/clog.md. Locking and the group update: the README.
//!
//! Locks:
//! - `control` (tranche XactSLRU): shared to look a page up and read a resident
//!   page's bits; exclusive to change bits, to change a buffer's page or state,
//!   and to start or finish I/O.
//! - each buffer's `io` lock (tranche XactBuffer): held exclusive by the thread
//!   reading or writing that buffer, *without* the control lock; others wait for
//!   the I/O by taking it shared (never while holding the control lock).
//!
//! Each buffer's fields are atomics so the pool is safe Rust; the control lock
//! gives them their meaning: a field marked "exclusive" below is only *written*
//! with the control lock held exclusive, and may be read under shared.

use super::group::GroupList;
use super::xid::*;
use super::{TxnRmgr, XactWal};
use crate::config::BLCKSZ;
use crate::error::{Error, Result};
use crate::lmgr::lwlock::{LwLock, LwLockGuard, Tranche};
use crate::pgstat::wait_event::{report_wait_end, report_wait_start, WaitEvent};
use crate::storage::Lsn;
use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

/// Status bits per transaction.
pub const CLOG_BITS_PER_XACT: u32 = 2;
/// Transactions per status byte.
pub const CLOG_XACTS_PER_BYTE: u32 = 4;
/// Transactions per 8 kB page: 32768.
pub const CLOG_XACTS_PER_PAGE: u32 = BLCKSZ as u32 * CLOG_XACTS_PER_BYTE;
/// Pages per segment file: 32 (one file covers 1 Mi transactions).
pub const SLRU_PAGES_PER_SEGMENT: u32 = 32;
/// Default number of buffers of the pool (PostgreSQL 14+ sizes it up to 128).
pub const DEFAULT_CLOG_BUFFERS: usize = 128;
/// Most subtransactions a commit may carry and still use the group update
/// (PostgreSQL's THRESHOLD_SUBTRANS_CLOG_OPT).
pub const GROUP_UPDATE_MAX_SUBXIDS: usize = 5;

const WORDS_PER_PAGE: usize = BLCKSZ / 8;
const _: () = assert!(CLOG_XACTS_PER_PAGE.is_power_of_two());
const XACTS_PER_WORD: u32 = 32;
const NO_PAGE: u64 = u64::MAX;

/// Buffer states.
/// No page.
const SLOT_EMPTY: u8 = 0;
/// Page resident, contents valid.
const SLOT_VALID: u8 = 1;
/// Page being read in: contents not valid yet; wait on the buffer's io lock.
const SLOT_READ_IN_PROGRESS: u8 = 2;
/// Page being written out from a copy: contents valid and may change (the slot
/// is re-dirtied); the buffer may not be replaced until the write is done.
const SLOT_WRITE_IN_PROGRESS: u8 = 3;

/// WAL info byte of a CLOG record that zeroes a page.
pub const CLOG_ZEROPAGE: u8 = 0x00;
/// WAL info byte of a CLOG record that truncates old segments.
pub const CLOG_TRUNCATE: u8 = 0x10;
/// WAL info byte of an Xact commit record.
pub const XLOG_XACT_COMMIT: u8 = 0x00;
/// WAL info byte of an Xact abort record.
pub const XLOG_XACT_ABORT: u8 = 0x20;

/// A transaction's status in the commit log (the two bits' values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum XidStatus {
    InProgress = 0b00,
    Committed = 0b01,
    Aborted = 0b10,
    /// Committed as a subtransaction; final status is its top transaction's.
    SubCommitted = 0b11,
}

impl XidStatus {
    fn from_bits(b: u64) -> XidStatus {
        match b & 3 {
            0 => XidStatus::InProgress,
            1 => XidStatus::Committed,
            2 => XidStatus::Aborted,
            _ => XidStatus::SubCommitted,
        }
    }
}

/// The page holding `xid`'s status.
#[inline]
pub fn page_of(xid: TransactionId) -> u32 {
    xid / CLOG_XACTS_PER_PAGE
}

#[inline]
fn word_and_shift(xid: TransactionId) -> (usize, u32) {
    let i = xid % CLOG_XACTS_PER_PAGE;
    ((i / XACTS_PER_WORD) as usize, (i % XACTS_PER_WORD) * CLOG_BITS_PER_XACT)
}

/// One buffer of the pool.
struct Slot {
    /// SLOT_EMPTY, SLOT_VALID, SLOT_READ_IN_PROGRESS or SLOT_WRITE_IN_PROGRESS.
    /// Written under control exclusive.
    state: AtomicU8,
    /// Held exclusive by the one thread doing I/O on this buffer (state read- or
    /// write-in-progress), taken while the control lock is held and the state was
    /// not in I/O; waiters take it shared *without* the control lock.
    io: LwLock,
    /// Page held, or NO_PAGE. Written under control exclusive.
    page: AtomicU64,
    /// Changed since last written. Written under control exclusive.
    dirty: AtomicBool,
    /// Last-use stamp for replacement (Relaxed: a heuristic, stored under shared).
    lru: AtomicU64,
    /// Latest async commit record LSN of a transaction on this page ("group LSN"):
    /// the WAL must be flushed past it before the page is written or a
    /// committed hint bit is set for one of its xacts. Written under control
    /// exclusive.
    group_lsn: AtomicU64,
    /// The page, as 1024 little-endian 64-bit words. Written under control
    /// exclusive (whole-word stores), read under shared.
    data: Box<[AtomicU64]>,
}

/// One commit's request to a group-update leader.
struct ClogRequest {
    page: u32,
    xid: TransactionId,
    subxids: Vec<TransactionId>,
    status: XidStatus,
    lsn: Lsn,
}

/// Commit-log counters (Relaxed; statistics).
#[derive(Default)]
pub struct ClogStats {
    pub page_reads: AtomicU64,
    pub page_writes: AtomicU64,
    pub hits: AtomicU64,
    /// Status updates done by the updater itself, lock taken without waiting.
    pub direct_updates: AtomicU64,
    /// Status updates done by the updater itself after waiting for the lock.
    pub blocking_updates: AtomicU64,
}

/// The commit log.
pub struct Clog {
    control: LwLock,
    slots: Box<[Slot]>,
    /// Source of LRU stamps (Relaxed).
    clock: AtomicU64,
    dir: PathBuf,
    wal: Arc<dyn XactWal>,
    /// Whether committers that find the lock busy use the group update.
    group_update: AtomicBool,
    group: GroupList<ClogRequest>,
    /// Per-backend result of a group update done on its behalf.
    group_results: Box<[Mutex<Option<Result<()>>>]>,
    /// In recovery, a missing page reads as zeroes (it will be re-created by redo).
    in_recovery: AtomicBool,
    pub stats: ClogStats,
}

fn not_readable(xid_or_page: String, path: &Path, detail: impl std::fmt::Display) -> Error {
    Error::corrupt(format!(
        "could not access status of transaction {xid_or_page}: could not read from file \"{}\": {detail}",
        path.display()
    ))
}

impl Clog {
    /// Opens the commit log in `dir` (created if missing) with `nbuffers` buffers,
    /// able to take group requests from `max_backends` backends.
    pub fn open(
        dir: &Path,
        nbuffers: usize,
        max_backends: usize,
        group_update: bool,
        wal: Arc<dyn XactWal>,
    ) -> Result<Clog> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir.display(), e))?;
        let nbuffers = nbuffers.max(2);
        let slots = (0..nbuffers)
            .map(|_| Slot {
                state: AtomicU8::new(SLOT_EMPTY),
                io: LwLock::new(Tranche::XactBuffer),
                page: AtomicU64::new(NO_PAGE),
                dirty: AtomicBool::new(false),
                lru: AtomicU64::new(0),
                group_lsn: AtomicU64::new(0),
                data: (0..WORDS_PER_PAGE).map(|_| AtomicU64::new(0)).collect(),
            })
            .collect();
        Ok(Clog {
            control: LwLock::new(Tranche::XactSlru),
            slots,
            clock: AtomicU64::new(1),
            dir: dir.to_path_buf(),
            wal,
            group_update: AtomicBool::new(group_update),
            group: GroupList::new(max_backends),
            group_results: (0..max_backends).map(|_| Mutex::new(None)).collect(),
            in_recovery: AtomicBool::new(false),
            stats: ClogStats::default(),
        })
    }

    /// Turns the group update on or off (the benchmark compares both).
    pub fn set_group_update(&self, on: bool) {
        self.group_update.store(on, Ordering::Relaxed);
    }

    /// In recovery, pages missing on disk read as zeroes.
    pub fn set_in_recovery(&self, on: bool) {
        self.in_recovery.store(on, Ordering::Relaxed);
    }

    /// (groups led, statuses set by a leader on another backend's behalf).
    pub fn group_stats(&self) -> (u64, u64) {
        self.group.stats()
    }

    /// The control lock, exposed so tests can hold it to force contention.
    pub fn control_lock(&self) -> &LwLock {
        &self.control
    }

    fn segment_path(&self, segno: u32) -> PathBuf {
        self.dir.join(format!("{segno:04X}"))
    }

    fn find_slot(&self, page: u32) -> Option<usize> {
        self.slots.iter().position(|s| s.page.load(Ordering::Acquire) == page as u64)
    }

    /// The slot holding `page` with readable contents (valid, or being written
    /// out: a write works on a copy). Either lock mode.
    fn find_readable(&self, page: u32) -> Option<usize> {
        self.find_slot(page).filter(|&i| {
            matches!(self.slots[i].state.load(Ordering::Acquire), SLOT_VALID | SLOT_WRITE_IN_PROGRESS)
        })
    }

    fn touch(&self, i: usize) {
        let t = self.clock.fetch_add(1, Ordering::Relaxed);
        self.slots[i].lru.store(t, Ordering::Relaxed);
    }

    /// Waits for the I/O in progress on slot `i` (control lock *not* held).
    fn wait_io(&self, i: usize) {
        drop(self.slots[i].io.shared());
    }

    /// Reads a page from its segment file (no lock held).
    fn read_page(&self, page: u32) -> Result<Vec<u64>> {
        let segno = page / SLRU_PAGES_PER_SEGMENT;
        let path = self.segment_path(segno);
        let off = (page % SLRU_PAGES_PER_SEGMENT) as u64 * BLCKSZ as u64;
        let mut buf = vec![0u8; BLCKSZ];
        let first_xid = format!("{}", page as u64 * CLOG_XACTS_PER_PAGE as u64);
        report_wait_start(WaitEvent::Io("XactRead"));
        let res = match File::open(&path) {
            Ok(f) => f.read_exact_at(&mut buf, off),
            Err(e) => Err(e),
        };
        report_wait_end();
        match res {
            Ok(()) => {}
            Err(e) if self.in_recovery.load(Ordering::Relaxed)
                && matches!(e.kind(), ErrorKind::NotFound | ErrorKind::UnexpectedEof) =>
            {
                buf.fill(0);
            }
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => {
                return Err(not_readable(first_xid, &path, format!("at offset {off}: read too few bytes")))
            }
            Err(e) if e.kind() == ErrorKind::NotFound => {
                return Err(not_readable(first_xid, &path, "No such file or directory"))
            }
            Err(e) => return Err(Error::io(path.display(), e)),
        }
        self.stats.page_reads.fetch_add(1, Ordering::Relaxed);
        Ok(buf.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect())
    }

    /// Writes slot `i` out. Called with the control lock held exclusive (`g`)
    /// and the slot valid and dirty; returns with the lock released. The page is
    /// copied and the slot marked write-in-progress under the lock; the WAL flush
    /// (to the page's group LSN: WAL before data) and the write happen with only
    /// the slot's XactBuffer lock held. Changes made meanwhile re-dirty the slot.
    fn write_out(&self, i: usize, g: LwLockGuard<'_>) -> Result<()> {
        let s = &self.slots[i];
        let page = s.page.load(Ordering::Acquire) as u32;
        let lsn = Lsn(s.group_lsn.load(Ordering::Acquire));
        let mut buf = Vec::with_capacity(BLCKSZ);
        for w in s.data.iter() {
            buf.extend_from_slice(&w.load(Ordering::Relaxed).to_le_bytes());
        }
        s.dirty.store(false, Ordering::Release);
        s.state.store(SLOT_WRITE_IN_PROGRESS, Ordering::Release);
        // Free: no I/O is in progress on this slot (we just checked its state under
        // the lock); shared holders are waiters that leave at once.
        let io = s.io.exclusive();
        drop(g);
        let res = (|| {
            if lsn.is_valid() {
                self.wal.flush(lsn)?;
            }
            let path = self.segment_path(page / SLRU_PAGES_PER_SEGMENT);
            let off = (page % SLRU_PAGES_PER_SEGMENT) as u64 * BLCKSZ as u64;
            report_wait_start(WaitEvent::Io("XactWrite"));
            let r = OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .and_then(|f| f.write_all_at(&buf, off));
            report_wait_end();
            r.map_err(|e| Error::io(path.display(), e))
        })();
        let _g = self.control.exclusive();
        s.state.store(SLOT_VALID, Ordering::Release);
        if res.is_err() {
            s.dirty.store(true, Ordering::Release);
        } else {
            self.stats.page_writes.fetch_add(1, Ordering::Relaxed);
        }
        drop(io);
        res
    }

    /// A buffer that may be replaced (control exclusive held): an empty one, or
    /// the least recently used valid one. `None` if all are busy with I/O.
    fn pick_victim(&self) -> Option<usize> {
        if let Some(i) = self.slots.iter().position(|s| s.state.load(Ordering::Acquire) == SLOT_EMPTY) {
            return Some(i);
        }
        let mut best = None;
        let mut best_lru = u64::MAX;
        for (i, s) in self.slots.iter().enumerate() {
            if s.state.load(Ordering::Acquire) != SLOT_VALID {
                continue;
            }
            let l = s.lru.load(Ordering::Relaxed);
            if l < best_lru {
                best = Some(i);
                best_lru = l;
            }
        }
        best
    }

    /// Returns with the control lock held exclusive and `page` resident and
    /// readable in the returned slot: found, read in (I/O done without the
    /// control lock, under the slot's XactBuffer lock), or, with `zero`, made a
    /// new dirty page of zeroes.
    fn lock_page(&self, page: u32, zero: bool) -> Result<(LwLockGuard<'_>, usize)> {
        loop {
            let g = self.control.exclusive();
            if let Some(i) = self.find_slot(page) {
                if self.slots[i].state.load(Ordering::Acquire) == SLOT_READ_IN_PROGRESS {
                    drop(g);
                    self.wait_io(i);
                    continue;
                }
                let s = &self.slots[i];
                if zero {
                    for w in s.data.iter() {
                        w.store(0, Ordering::Relaxed);
                    }
                    s.group_lsn.store(0, Ordering::Release);
                    s.dirty.store(true, Ordering::Release);
                }
                self.touch(i);
                return Ok((g, i));
            }
            let Some(v) = self.pick_victim() else {
                // Every buffer is being read or written: wait for one.
                let busy = self
                    .slots
                    .iter()
                    .position(|s| s.state.load(Ordering::Acquire) != SLOT_VALID)
                    .unwrap_or(0);
                drop(g);
                self.wait_io(busy);
                continue;
            };
            let s = &self.slots[v];
            if s.state.load(Ordering::Acquire) == SLOT_VALID && s.dirty.load(Ordering::Acquire) {
                self.write_out(v, g)?;
                continue; // the world may have changed meanwhile
            }
            s.group_lsn.store(0, Ordering::Release);
            if zero {
                for w in s.data.iter() {
                    w.store(0, Ordering::Relaxed);
                }
                s.page.store(page as u64, Ordering::Release);
                s.state.store(SLOT_VALID, Ordering::Release);
                s.dirty.store(true, Ordering::Release);
                self.touch(v);
                return Ok((g, v));
            }
            s.dirty.store(false, Ordering::Release);
            s.page.store(page as u64, Ordering::Release);
            s.state.store(SLOT_READ_IN_PROGRESS, Ordering::Release);
            let io = s.io.exclusive(); // free: the slot was not in I/O
            drop(g);
            let res = self.read_page(page);
            let g = self.control.exclusive();
            match res {
                Ok(data) => {
                    for (w, x) in s.data.iter().zip(data) {
                        w.store(x, Ordering::Relaxed);
                    }
                    s.state.store(SLOT_VALID, Ordering::Release);
                    self.touch(v);
                    drop(io);
                    return Ok((g, v));
                }
                Err(e) => {
                    s.page.store(NO_PAGE, Ordering::Release);
                    s.state.store(SLOT_EMPTY, Ordering::Release);
                    drop(io);
                    return Err(e);
                }
            }
        }
    }

    /// Status of `xid`. Special xids: Invalid reads as aborted, Bootstrap and
    /// Frozen as committed.
    pub fn xid_status(&self, xid: TransactionId) -> Result<XidStatus> {
        if !xid_is_normal(xid) {
            return Ok(if xid == INVALID_XID { XidStatus::Aborted } else { XidStatus::Committed });
        }
        let page = page_of(xid);
        let (w, sh) = word_and_shift(xid);
        {
            let _g = self.control.shared();
            if let Some(i) = self.find_readable(page) {
                self.touch(i);
                self.stats.hits.fetch_add(1, Ordering::Relaxed);
                return Ok(XidStatus::from_bits(
                    self.slots[i].data[w].load(Ordering::Relaxed) >> sh,
                ));
            }
        }
        let (_g, i) = self.lock_page(page, false).map_err(|e| match e {
            Error::Corrupt { what } => Error::corrupt(what.replacen(
                &format!("transaction {}", page as u64 * CLOG_XACTS_PER_PAGE as u64),
                &format!("transaction {xid}"),
                1,
            )),
            e => e,
        })?;
        Ok(XidStatus::from_bits(self.slots[i].data[w].load(Ordering::Relaxed) >> sh))
    }

    /// The commit-record LSN that must be durable before a committed hint bit may
    /// be set for `xid` (the latest async commit on `xid`'s page), or
    /// `Lsn::INVALID` if there is none (page written out: its WAL is durable).
    pub fn commit_lsn_for(&self, xid: TransactionId) -> Lsn {
        if !xid_is_normal(xid) {
            return Lsn::INVALID;
        }
        let _g = self.control.shared();
        match self.find_slot(page_of(xid)) {
            Some(i) => Lsn(self.slots[i].group_lsn.load(Ordering::Acquire)),
            None => Lsn::INVALID,
        }
    }

    /// Sets status bits in resident slot `i` (control exclusive held).
    fn apply_in_slot(&self, i: usize, r: &ClogRequest) {
        let s = &self.slots[i];
        let set = |xid: TransactionId, st: XidStatus| {
            let (w, sh) = word_and_shift(xid);
            let old = s.data[w].load(Ordering::Relaxed);
            let new = (old & !(3u64 << sh)) | ((st as u64) << sh);
            s.data[w].store(new, Ordering::Relaxed);
        };
        // Within one page under the exclusive lock readers cannot see a partial
        // update, so the subcommitted step is not needed here.
        for &x in &r.subxids {
            set(x, r.status);
        }
        if r.xid != INVALID_XID {
            set(r.xid, r.status);
        }
        if r.lsn.is_valid() {
            s.group_lsn.fetch_max(r.lsn.0, Ordering::AcqRel);
        }
        s.dirty.store(true, Ordering::Release);
    }

    /// Applies `r`, reading its page in if needed (no lock held on entry).
    fn apply(&self, r: &ClogRequest) -> Result<()> {
        let (_g, i) = self.lock_page(r.page, false)?;
        self.apply_in_slot(i, r);
        Ok(())
    }

    /// Sets the status of a group of xids on one page, through the group update
    /// when the lock is busy. `backend` indexes the group slots.
    fn set_page_status(&self, backend: usize, r: ClogRequest) -> Result<()> {
        if let Some(g) = self.control.try_exclusive() {
            if let Some(i) = self.find_readable(r.page) {
                self.stats.direct_updates.fetch_add(1, Ordering::Relaxed);
                self.apply_in_slot(i, &r);
                return Ok(());
            }
            drop(g); // page not resident: the I/O path below
        } else if self.group_update.load(Ordering::Relaxed)
            && r.subxids.len() <= GROUP_UPDATE_MAX_SUBXIDS
            && backend < self.group_results.len()
        {
            return self.group_set(backend, r);
        }
        self.stats.blocking_updates.fetch_add(1, Ordering::Relaxed);
        self.apply(&r)
    }

    fn group_set(&self, me: usize, r: ClogRequest) -> Result<()> {
        if !self.group.join(me, r) {
            report_wait_start(WaitEvent::Ipc("XactGroupUpdate"));
            self.group.wait(me);
            report_wait_end();
            return self.group_results[me]
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
                .unwrap_or_else(|| Err(Error::internal("clog group update: no result")));
        }
        let mut members = Vec::new();
        let mut deferred = Vec::new();
        {
            let _g = self.control.exclusive();
            for (m, req) in self.group.take_all(me) {
                match self.find_readable(req.page) {
                    Some(i) => {
                        self.apply_in_slot(i, &req);
                        *self.group_results[m].lock().unwrap_or_else(|e| e.into_inner()) = Some(Ok(()));
                    }
                    None => deferred.push((m, req)),
                }
                members.push(m);
            }
        }
        // Members whose page must be read in: one by one, lock released for I/O.
        for (m, req) in deferred {
            let res = self.apply(&req);
            *self.group_results[m].lock().unwrap_or_else(|e| e.into_inner()) = Some(res);
        }
        self.group.wake(&members);
        self.group_results[me]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .unwrap_or_else(|| Err(Error::internal("clog group update: leader lost its result")))
    }

    /// Records the final status of a transaction tree: top `xid` and its
    /// `subxids`. For a commit whose subxids span several pages, subxids on
    /// other pages are first marked sub-committed, then the top page is set, then
    /// the rest (so a reader never sees a subxact committed before its top).
    /// `lsn` is the commit record's LSN when it is not yet durable (async
    /// commit), else `Lsn::INVALID`.
    pub fn set_tree_status(
        &self,
        backend: usize,
        xid: TransactionId,
        subxids: &[TransactionId],
        status: XidStatus,
        lsn: Lsn,
    ) -> Result<()> {
        let page = page_of(xid);
        let (mine, others): (Vec<_>, Vec<_>) = subxids.iter().partition(|&&s| page_of(s) == page);
        if others.is_empty() {
            return self.set_page_status(backend, ClogRequest { page, xid, subxids: mine, status, lsn });
        }
        let mut by_page: Vec<(u32, Vec<TransactionId>)> = Vec::new();
        for s in others {
            match by_page.iter_mut().find(|(p, _)| *p == page_of(s)) {
                Some((_, v)) => v.push(s),
                None => by_page.push((page_of(s), vec![s])),
            }
        }
        if status == XidStatus::Committed {
            for (p, v) in &by_page {
                self.apply(&ClogRequest {
                    page: *p,
                    xid: INVALID_XID,
                    subxids: v.clone(),
                    status: XidStatus::SubCommitted,
                    lsn,
                })?;
            }
        }
        self.apply(&ClogRequest { page, xid, subxids: mine, status, lsn })?;
        for (p, v) in by_page {
            self.apply(&ClogRequest { page: p, xid: INVALID_XID, subxids: v, status, lsn })?;
        }
        Ok(())
    }

    /// Marks sub-transactions aborted (ROLLBACK TO SAVEPOINT), immediately.
    pub fn set_subxacts_aborted(&self, subxids: &[TransactionId]) -> Result<()> {
        for &s in subxids {
            self.apply(&ClogRequest {
                page: page_of(s),
                xid: INVALID_XID,
                subxids: vec![s],
                status: XidStatus::Aborted,
                lsn: Lsn::INVALID,
            })?;
        }
        Ok(())
    }

    /// Called (under the XidGen lock) for each newly assigned xid: when `xid` is
    /// the first of its page, zeroes the page and WAL-logs the zeroing.
    pub fn extend(&self, xid: TransactionId) -> Result<()> {
        if xid & (CLOG_XACTS_PER_PAGE - 1) != 0 && xid != FIRST_NORMAL_XID {
            return Ok(());
        }
        let page = page_of(xid);
        drop(self.lock_page(page, true)?);
        self.wal.insert(TxnRmgr::Clog, &encode_zeropage(page))?;
        Ok(())
    }

    /// At startup: xids at or after `next_xid` on its page are set in progress
    /// (bits left by a transaction that never got its commit durable).
    pub fn trim(&self, next_xid: TransactionId) -> Result<()> {
        let page = page_of(next_xid);
        let (_g, i) = match self.lock_page(page, false) {
            Ok(x) => x,
            Err(_) => self.lock_page(page, true)?,
        };
        let s = &self.slots[i];
        let first = next_xid % CLOG_XACTS_PER_PAGE;
        for x in first..CLOG_XACTS_PER_PAGE {
            let (w, sh) = word_and_shift(x);
            let old = s.data[w].load(Ordering::Relaxed);
            s.data[w].store(old & !(3u64 << sh), Ordering::Relaxed);
        }
        s.dirty.store(true, Ordering::Release);
        Ok(())
    }

    /// Writes every page dirty at the call and fsyncs the files written
    /// (checkpoint).
    pub fn flush(&self) -> Result<()> {
        let mut segs = Vec::new();
        for i in 0..self.slots.len() {
            loop {
                let g = self.control.exclusive();
                let s = &self.slots[i];
                let st = s.state.load(Ordering::Acquire);
                if st == SLOT_READ_IN_PROGRESS || st == SLOT_WRITE_IN_PROGRESS {
                    drop(g);
                    self.wait_io(i);
                    continue;
                }
                if st == SLOT_VALID && s.dirty.load(Ordering::Acquire) {
                    let seg = s.page.load(Ordering::Acquire) as u32 / SLRU_PAGES_PER_SEGMENT;
                    self.write_out(i, g)?;
                    if !segs.contains(&seg) {
                        segs.push(seg);
                    }
                }
                break;
            }
        }
        for seg in segs {
            let path = self.segment_path(seg);
            File::open(&path).and_then(|f| f.sync_all()).map_err(|e| Error::io(path.display(), e))?;
        }
        Ok(())
    }

    /// Removes segments holding only xids older than `oldest_xid` (every xid
    /// before it is frozen or dead). WAL-logs the truncation first (flushed), then
    /// drops the buffers and deletes the files.
    pub fn truncate(&self, oldest_xid: TransactionId) -> Result<()> {
        let lsn = self.wal.insert(TxnRmgr::Clog, &encode_truncate(page_of(oldest_xid), oldest_xid))?;
        self.wal.flush(lsn)?;
        self.truncate_files(oldest_xid)
    }

    fn truncate_files(&self, oldest_xid: TransactionId) -> Result<()> {
        let per_seg = CLOG_XACTS_PER_PAGE as u64 * SLRU_PAGES_PER_SEGMENT as u64;
        // A segment goes when its last xid precedes the cutoff segment's first xid.
        let cutoff_first = ((oldest_xid as u64 / per_seg) * per_seg) as u32;
        let entries = std::fs::read_dir(&self.dir).map_err(|e| Error::io(self.dir.display(), e))?;
        let mut doomed = Vec::new();
        for ent in entries.flatten() {
            let name = ent.file_name();
            let Some(name) = name.to_str() else { continue };
            if name.len() != 4 {
                continue;
            }
            let Ok(seg) = u32::from_str_radix(name, 16) else { continue };
            if seg as u64 * per_seg >= 1 << 32 {
                continue;
            }
            let last = ((seg as u64 + 1) * per_seg - 1) as u32;
            if xid_precedes(last, cutoff_first) {
                doomed.push((seg, ent.path()));
            }
        }
        let in_doomed = |p: u64| p != NO_PAGE && doomed.iter().any(|(s, _)| *s == p as u32 / SLRU_PAGES_PER_SEGMENT);
        loop {
            let g = self.control.exclusive();
            let busy = self.slots.iter().position(|s| {
                in_doomed(s.page.load(Ordering::Acquire))
                    && matches!(s.state.load(Ordering::Acquire), SLOT_READ_IN_PROGRESS | SLOT_WRITE_IN_PROGRESS)
            });
            if let Some(i) = busy {
                drop(g);
                self.wait_io(i);
                continue;
            }
            for s in self.slots.iter() {
                if in_doomed(s.page.load(Ordering::Acquire)) {
                    s.dirty.store(false, Ordering::Release);
                    s.page.store(NO_PAGE, Ordering::Release);
                    s.state.store(SLOT_EMPTY, Ordering::Release);
                }
            }
            for (_, path) in &doomed {
                std::fs::remove_file(path).map_err(|e| Error::io(path.display(), e))?;
            }
            return Ok(());
        }
    }

    /// Replays a CLOG-rmgr record (page zeroing or truncation).
    pub fn redo(&self, payload: &[u8]) -> Result<()> {
        match payload.first() {
            Some(&CLOG_ZEROPAGE) if payload.len() == 5 => {
                let page = u32::from_le_bytes(payload[1..5].try_into().unwrap());
                let (g, i) = self.lock_page(page, true)?;
                self.write_out(i, g)
            }
            Some(&CLOG_TRUNCATE) if payload.len() == 9 => {
                let oldest = u32::from_le_bytes(payload[5..9].try_into().unwrap());
                self.truncate_files(oldest)
            }
            _ => Err(Error::corrupt(format!("invalid CLOG WAL record of {} bytes", payload.len()))),
        }
    }

    /// Replays an Xact commit or abort record: sets the tree's status.
    pub fn redo_xact(&self, payload: &[u8]) -> Result<XactRecord> {
        let rec = decode_xact_record(payload)?;
        let status = if rec.committed { XidStatus::Committed } else { XidStatus::Aborted };
        self.set_tree_status(usize::MAX, rec.xid, &rec.subxids, status, Lsn::INVALID)?;
        Ok(rec)
    }
}

/// Payload of a CLOG ZEROPAGE record: info byte, page number (LE).
pub fn encode_zeropage(page: u32) -> Vec<u8> {
    let mut v = vec![CLOG_ZEROPAGE];
    v.extend_from_slice(&page.to_le_bytes());
    v
}

/// Payload of a CLOG TRUNCATE record: info byte, cutoff page, oldest xid (LE).
pub fn encode_truncate(page: u32, oldest_xid: TransactionId) -> Vec<u8> {
    let mut v = vec![CLOG_TRUNCATE];
    v.extend_from_slice(&page.to_le_bytes());
    v.extend_from_slice(&oldest_xid.to_le_bytes());
    v
}

/// A decoded Xact commit/abort record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XactRecord {
    pub committed: bool,
    pub xid: TransactionId,
    /// Microseconds since 2000-01-01 UTC (PostgreSQL's TimestampTz).
    pub timestamp: i64,
    pub subxids: Vec<TransactionId>,
}

fn encode_xact(info: u8, xid: TransactionId, subxids: &[TransactionId], timestamp: i64) -> Vec<u8> {
    let mut v = Vec::with_capacity(17 + 4 * subxids.len());
    v.push(info);
    v.extend_from_slice(&xid.to_le_bytes());
    v.extend_from_slice(&timestamp.to_le_bytes());
    v.extend_from_slice(&(subxids.len() as u32).to_le_bytes());
    for s in subxids {
        v.extend_from_slice(&s.to_le_bytes());
    }
    v
}

/// Payload of an Xact COMMIT record (docs/format/clog.md).
pub fn encode_commit_record(xid: TransactionId, subxids: &[TransactionId], timestamp: i64) -> Vec<u8> {
    encode_xact(XLOG_XACT_COMMIT, xid, subxids, timestamp)
}

/// Payload of an Xact ABORT record.
pub fn encode_abort_record(xid: TransactionId, subxids: &[TransactionId], timestamp: i64) -> Vec<u8> {
    encode_xact(XLOG_XACT_ABORT, xid, subxids, timestamp)
}

/// Decodes an Xact record; bad bytes are `Error::Corrupt`.
pub fn decode_xact_record(b: &[u8]) -> Result<XactRecord> {
    let bad = || Error::corrupt(format!("invalid Xact WAL record of {} bytes", b.len()));
    if b.len() < 17 {
        return Err(bad());
    }
    let committed = match b[0] {
        XLOG_XACT_COMMIT => true,
        XLOG_XACT_ABORT => false,
        _ => return Err(bad()),
    };
    let xid = u32::from_le_bytes(b[1..5].try_into().unwrap());
    let timestamp = i64::from_le_bytes(b[5..13].try_into().unwrap());
    let n = u32::from_le_bytes(b[13..17].try_into().unwrap()) as usize;
    if b.len() != 17 + 4 * n || !xid_is_normal(xid) {
        return Err(bad());
    }
    let subxids = b[17..].chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
    Ok(XactRecord { committed, xid, timestamp, subxids })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::txn::MemWal;

    fn clog(dir: &Path, n: usize) -> Clog {
        Clog::open(dir, n, 8, true, Arc::new(MemWal::new(true))).unwrap()
    }

    #[test]
    fn bits_round_trip_on_one_page() {
        let d = tempfile::tempdir().unwrap();
        let c = clog(d.path(), 4);
        c.extend(FIRST_NORMAL_XID).unwrap();
        c.set_tree_status(0, 3, &[4, 5], XidStatus::Committed, Lsn::INVALID).unwrap();
        c.set_tree_status(0, 6, &[], XidStatus::Aborted, Lsn::INVALID).unwrap();
        assert_eq!(c.xid_status(3).unwrap(), XidStatus::Committed);
        assert_eq!(c.xid_status(5).unwrap(), XidStatus::Committed);
        assert_eq!(c.xid_status(6).unwrap(), XidStatus::Aborted);
        assert_eq!(c.xid_status(7).unwrap(), XidStatus::InProgress);
        assert_eq!(c.xid_status(FROZEN_XID).unwrap(), XidStatus::Committed);
        assert_eq!(c.xid_status(INVALID_XID).unwrap(), XidStatus::Aborted);
    }

    #[test]
    fn on_disk_layout_is_postgresqls() {
        let d = tempfile::tempdir().unwrap();
        let c = clog(d.path(), 4);
        c.extend(FIRST_NORMAL_XID).unwrap();
        // xid 5: byte 1, bits 2..3; xid 6: byte 1, bits 4..5
        c.set_tree_status(0, 5, &[], XidStatus::Committed, Lsn::INVALID).unwrap();
        c.set_tree_status(0, 6, &[], XidStatus::Aborted, Lsn::INVALID).unwrap();
        c.flush().unwrap();
        let bytes = std::fs::read(d.path().join("0000")).unwrap();
        assert_eq!(bytes.len(), BLCKSZ);
        assert_eq!(bytes[1], 0b0010_0100);
    }

    #[test]
    fn short_segment_is_corrupt_not_panic() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("0000"), [0u8; 100]).unwrap();
        let c = clog(d.path(), 4);
        let e = c.xid_status(10).unwrap_err();
        assert_eq!(e.sqlstate().as_str(), "XX001");
        assert!(e.to_string().contains("could not access status of transaction 10"), "{e}");
        let e = c.xid_status(CLOG_XACTS_PER_PAGE * 40).unwrap_err();
        assert_eq!(e.sqlstate().as_str(), "XX001");
    }

    #[test]
    fn xact_record_round_trip_and_corruption() {
        let b = encode_commit_record(100, &[101, 102], 12345);
        let r = decode_xact_record(&b).unwrap();
        assert_eq!(r, XactRecord { committed: true, xid: 100, timestamp: 12345, subxids: vec![101, 102] });
        assert!(decode_xact_record(&b[..b.len() - 1]).is_err());
        let mut bad = b.clone();
        bad[0] = 0x77;
        assert!(decode_xact_record(&bad).is_err());
        assert!(decode_xact_record(&[]).is_err());
        let mut huge = b.clone();
        huge[13..17].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(decode_xact_record(&huge), Err(Error::Corrupt { .. })));
    }

    #[test]
    fn redo_rebuilds_status() {
        let d = tempfile::tempdir().unwrap();
        let wal = Arc::new(MemWal::new(true));
        let c = Clog::open(d.path(), 4, 8, true, wal.clone()).unwrap();
        c.extend(FIRST_NORMAL_XID).unwrap();
        let rec = encode_commit_record(10, &[11], 0);
        // "crash": a fresh clog over an empty directory, replaying the WAL.
        let d2 = tempfile::tempdir().unwrap();
        let c2 = Clog::open(d2.path(), 4, 8, true, Arc::new(MemWal::new(false))).unwrap();
        c2.set_in_recovery(true);
        for (rmgr, _, p) in wal.records() {
            assert_eq!(rmgr, TxnRmgr::Clog);
            c2.redo(&p).unwrap();
        }
        c2.redo_xact(&rec).unwrap();
        c2.redo_xact(&encode_abort_record(12, &[], 0)).unwrap();
        assert_eq!(c2.xid_status(10).unwrap(), XidStatus::Committed);
        assert_eq!(c2.xid_status(11).unwrap(), XidStatus::Committed);
        assert_eq!(c2.xid_status(12).unwrap(), XidStatus::Aborted);
        assert!(c2.redo(&[9, 9]).is_err());
    }

    #[test]
    fn multi_page_tree_commits() {
        let d = tempfile::tempdir().unwrap();
        let c = clog(d.path(), 4);
        c.extend(FIRST_NORMAL_XID).unwrap();
        c.extend(CLOG_XACTS_PER_PAGE).unwrap();
        let sub = CLOG_XACTS_PER_PAGE + 5;
        c.set_tree_status(0, 100, &[101, sub], XidStatus::Committed, Lsn::INVALID).unwrap();
        assert_eq!(c.xid_status(sub).unwrap(), XidStatus::Committed);
        assert_eq!(c.xid_status(101).unwrap(), XidStatus::Committed);
    }

    #[test]
    fn async_commit_group_lsn() {
        let d = tempfile::tempdir().unwrap();
        let c = clog(d.path(), 4);
        c.extend(FIRST_NORMAL_XID).unwrap();
        assert_eq!(c.commit_lsn_for(10), Lsn::INVALID);
        c.set_tree_status(0, 10, &[], XidStatus::Committed, Lsn(500)).unwrap();
        c.set_tree_status(0, 11, &[], XidStatus::Committed, Lsn(400)).unwrap();
        assert_eq!(c.commit_lsn_for(11), Lsn(500));
    }
}
