//! The WAL proper: insertion into the WAL buffers, writing and group flush,
//! checkpoints, and the startup / recovery driver. The protocol is described in
//! `wal/README.md`; the comments here refer to its numbered steps.

use std::cell::Cell;
use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use super::control::{fsync_dir, now_secs, ControlFile, DbState};
use super::layout::*;
use super::reader::WalReader;
use super::record::*;
use super::background::WorkerLatch;
use super::reserve::InsertPosition;
use crate::config::{Settings, BLCKSZ, WAL_SEGMENT_SIZE};
use crate::error::{Error, Result, SqlState};
use crate::lmgr::lwlock::{LwLock, LwLockGuard, Tranche};
use crate::pgstat::wait_event::{report_wait_end, report_wait_start, WaitEvent};
use crate::storage::{Lsn, WalFlush};

const PS: u64 = WAL_PAGE_SIZE;

/// The WAL's settings (PostgreSQL names), taken from [`Settings`] plus a few that only
/// the WAL knows.
#[derive(Clone, Debug)]
pub struct WalOptions {
    pub fsync: bool,
    pub synchronous_commit: bool,
    pub full_page_writes: bool,
    /// Size of the WAL buffer ring in bytes (rounded down to pages, at least 4 pages).
    pub wal_buffers: usize,
    pub commit_delay_us: u64,
    pub commit_siblings: usize,
    pub checkpoint_timeout: Duration,
    pub max_wal_size: u64,
    /// wal_keep_size in bytes: checkpoints keep at least this much WAL before
    /// the insert position (for consumers without a slot); 0 = none.
    pub wal_keep_size: u64,
    /// How often the WAL writer flushes asynchronously committed WAL.
    pub wal_writer_delay: Duration,
    /// Segment file size for a new cluster (an existing one keeps the size recorded in
    /// its control file). A power of two, at least two WAL pages; small sizes are for
    /// tests.
    pub segment_size: u64,
    /// Number of WAL insertion slots (PostgreSQL's NUM_XLOGINSERT_LOCKS, 8).
    pub insert_slots: usize,
    /// archive_mode on/always: completed segments get `.ready` files and a
    /// checkpoint removes only archived segments (`replication::archive`).
    pub archive_mode: bool,
    /// Archive recovery (`recovery.signal`): restore_command and the target.
    pub archive_recovery: crate::replication::archive::ArchiveRecovery,
}

impl Default for WalOptions {
    fn default() -> Self {
        WalOptions::from_settings(&Settings::default())
    }
}

impl WalOptions {
    pub fn from_settings(s: &Settings) -> WalOptions {
        WalOptions {
            fsync: s.fsync,
            synchronous_commit: s.synchronous_commit,
            full_page_writes: s.full_page_writes,
            wal_buffers: s.wal_buffer_bytes(),
            commit_delay_us: s.commit_delay_us,
            commit_siblings: s.commit_siblings,
            checkpoint_timeout: Duration::from_secs(s.checkpoint_timeout_s),
            max_wal_size: s.max_wal_size,
            wal_keep_size: s.wal_keep_size,
            wal_writer_delay: Duration::from_millis(200),
            segment_size: WAL_SEGMENT_SIZE,
            insert_slots: 8,
            archive_mode: s.archive_mode,
            archive_recovery: Default::default(),
        }
    }
}

/// Counters, as a snapshot (pg_stat_wal-like).
#[derive(Clone, Copy, Debug, Default)]
pub struct WalStats {
    /// Records inserted.
    pub records: u64,
    /// Full-page images inserted.
    pub fpi: u64,
    /// Bytes of records inserted (without alignment padding).
    pub bytes: u64,
    /// write() calls and bytes written to segment files.
    pub writes: u64,
    pub bytes_written: u64,
    /// fdatasync rounds (one per flush that had something to sync).
    pub fsyncs: u64,
    /// Calls of `flush` that found their LSN not yet flushed ("commits" needing a
    /// flush). `flush_requests / fsyncs` = commits covered per fsync.
    pub flush_requests: u64,
    /// Of those, how many found their LSN flushed by someone else once they got the
    /// WALWrite lock (joined a group flush).
    pub group_joins: u64,
    /// Times an inserter had to write out old buffer pages (the ring was full).
    pub buffer_full_waits: u64,
    /// Times commit_delay slept.
    pub commit_delays: u64,
    pub checkpoints: u64,
}

impl WalStats {
    /// The counts accumulated since `base` (an earlier snapshot).
    pub fn minus(&self, base: &WalStats) -> WalStats {
        WalStats {
            records: self.records.saturating_sub(base.records),
            fpi: self.fpi.saturating_sub(base.fpi),
            bytes: self.bytes.saturating_sub(base.bytes),
            writes: self.writes.saturating_sub(base.writes),
            bytes_written: self.bytes_written.saturating_sub(base.bytes_written),
            fsyncs: self.fsyncs.saturating_sub(base.fsyncs),
            flush_requests: self.flush_requests.saturating_sub(base.flush_requests),
            group_joins: self.group_joins.saturating_sub(base.group_joins),
            buffer_full_waits: self.buffer_full_waits.saturating_sub(base.buffer_full_waits),
            commit_delays: self.commit_delays.saturating_sub(base.commit_delays),
            checkpoints: self.checkpoints.saturating_sub(base.checkpoints),
        }
    }
}

#[derive(Default)]
struct Stats {
    records: AtomicU64,
    fpi: AtomicU64,
    bytes: AtomicU64,
    writes: AtomicU64,
    bytes_written: AtomicU64,
    fsyncs: AtomicU64,
    flush_requests: AtomicU64,
    group_joins: AtomicU64,
    buffer_full_waits: AtomicU64,
    commit_delays: AtomicU64,
    checkpoints: AtomicU64,
}

/// An insertion slot (PostgreSQL's WALInsertLock): a lock held for a whole insertion
/// plus the holder's advertised progress.
struct InsertSlot {
    lock: LwLock,
    /// 0: no insertion in progress. Otherwise every byte this insertion will still
    /// write is at an LSN >= `inserting_at` (see README, "Advertising progress").
    /// `u64::MAX` while held by a checkpoint (no insertion at all). SeqCst: its order
    /// against the insert position is what makes waiting correct.
    inserting_at: AtomicU64,
    /// Threads waiting for `inserting_at` to change.
    waiters: AtomicUsize,
    mu: Mutex<()>,
    cv: Condvar,
}

impl InsertSlot {
    fn new() -> Self {
        InsertSlot {
            lock: LwLock::new(Tranche::WalInsert),
            inserting_at: AtomicU64::new(0),
            waiters: AtomicUsize::new(0),
            mu: Mutex::new(()),
            cv: Condvar::new(),
        }
    }

    /// Publishes new progress and wakes waiters.
    fn advertise(&self, lsn: u64) {
        self.inserting_at.store(lsn, Ordering::SeqCst);
        if self.waiters.load(Ordering::SeqCst) > 0 {
            let _g = lock(&self.mu);
            self.cv.notify_all();
        }
    }

    /// Waits until no insertion is in progress here (`None`) or it has advanced to
    /// `upto` or beyond (`Some(progress)`).
    fn wait_past(&self, upto: u64) -> Option<u64> {
        let check = |v: u64| if v == 0 { Some(None) } else if v >= upto { Some(Some(v)) } else { None };
        if let Some(r) = check(self.inserting_at.load(Ordering::SeqCst)) {
            return r;
        }
        self.waiters.fetch_add(1, Ordering::SeqCst);
        report_wait_start(WaitEvent::LwLock(Tranche::WalInsert));
        let mut g = lock(&self.mu);
        let r = loop {
            if let Some(r) = check(self.inserting_at.load(Ordering::SeqCst)) {
                break r;
            }
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        };
        drop(g);
        report_wait_end();
        self.waiters.fetch_sub(1, Ordering::SeqCst);
        r
    }
}

/// What an advertised insertion position `v` guarantees complete: everything below
/// `v`, except that a position inside a page header (just after it, where a record
/// on a new page starts) says nothing about that page, which may not even be
/// initialized in the ring yet: then only the WAL below the page's start is
/// complete. (Found by the engine crash test: a flusher wrote a ring page that no
/// inserter had initialized.)
fn complete_below(v: u64) -> u64 {
    if v % PS <= PAGE_HEADER_SIZE {
        v - v % PS
    } else {
        v
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A held insertion slot; dropping it ends the insertion (progress 0) and releases.
struct SlotGuard<'a> {
    slot: &'a InsertSlot,
    _lock: LwLockGuard<'a>,
}

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        self.slot.advertise(0);
    }
}

/// Every insertion slot, held (checkpoint start). Dropping releases them and opens
/// the gate for inserters.
struct AllSlots<'a> {
    wal: &'a Wal,
    guards: Vec<SlotGuard<'a>>,
}

impl Drop for AllSlots<'_> {
    fn drop(&mut self) {
        self.guards.clear();
        let _g = lock(&self.wal.gate);
        self.wal.all_slots_wanted.fetch_sub(1, Ordering::SeqCst);
        self.wal.gate_cv.notify_all();
    }
}

thread_local! {
    /// The insertion slot this thread tries first (PostgreSQL: MyLockNo).
    static MY_SLOT: Cell<usize> = const { Cell::new(usize::MAX) };
}
/// Hands out first slots round-robin. A plain std atomic: this module is not compiled
/// under loom.
static NEXT_SLOT: AtomicUsize = AtomicUsize::new(0);

/// WALWrite (PostgreSQL's WALWriteLock), with the two ways of taking it that
/// PostgreSQL's LWLock offers: `acquire`, and `acquire_or_wait` (LWLockAcquireOrWait):
/// take it if free, otherwise wait until the holder releases it and return *without*
/// it, so that the caller re-checks whether the holder's fsync covered its LSN.
/// Release wakes every waiter at once. Without this, a committer that has just
/// released the lock takes it again before the woken waiters run, and each fsync
/// covers one or two commits instead of a group (README, "Group flush").
struct WalWriteLock {
    /// (held, number of releases so far, threads waiting). A release wakes
    /// only when someone waits: notifying a condvar is a system call, and
    /// without other committers every commit releases the lock.
    state: Mutex<(bool, u64, usize)>,
    cv: Condvar,
}

struct WalWriteGuard<'a>(&'a WalWriteLock);

impl WalWriteLock {
    fn new() -> Self {
        WalWriteLock { state: Mutex::new((false, 0, 0)), cv: Condvar::new() }
    }

    fn acquire(&self) -> WalWriteGuard<'_> {
        let mut g = lock(&self.state);
        if g.0 {
            report_wait_start(WaitEvent::LwLock(Tranche::WalWrite));
            g.2 += 1;
            while g.0 {
                g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
            }
            g.2 -= 1;
            report_wait_end();
        }
        g.0 = true;
        WalWriteGuard(self)
    }

    /// Takes the lock if it is free; otherwise waits for the holder to *release* it
    /// (not for it to be free: the releaser may well have taken it again by the time
    /// we run) and returns `None`.
    fn acquire_or_wait(&self) -> Option<WalWriteGuard<'_>> {
        let mut g = lock(&self.state);
        if !g.0 {
            g.0 = true;
            return Some(WalWriteGuard(self));
        }
        let releases = g.1;
        report_wait_start(WaitEvent::LwLock(Tranche::WalWrite));
        g.2 += 1;
        while g.1 == releases {
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
        g.2 -= 1;
        report_wait_end();
        None
    }
}

impl Drop for WalWriteGuard<'_> {
    fn drop(&mut self) {
        let mut g = lock(&self.0.state);
        g.0 = false;
        g.1 += 1;
        let waiting = g.2 > 0;
        drop(g);
        if waiting {
            self.0.cv.notify_all();
        }
    }
}

/// State of the writer, protected by the WALWrite lock (the Mutex is only ever taken
/// with `write_lock` held, so it never blocks).
struct WriterState {
    files: BTreeMap<u64, File>,
    /// Segments written since their last fdatasync.
    dirty: BTreeSet<u64>,
    scratch: Vec<u8>,
    /// archive_mode: the first segment not yet marked `.ready` (every segment
    /// below it is complete, durable and marked).
    next_ready: u64,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
enum RunState {
    /// Opened, recovery pending: no insertion.
    Recovery = 0,
    Production = 1,
    ShutDown = 2,
}

struct CheckpointTrack {
    last_time: Instant,
    last_redo: Lsn,
    /// Insert position right after the last checkpoint record (idle detection).
    last_end: Lsn,
}

/// What `Wal::open` found.
#[derive(Clone, Debug)]
pub struct RecoveryStart {
    /// Redo must run (`Wal::recover`) before the WAL accepts insertions.
    pub needed: bool,
    /// The state the control file was in.
    pub state: DbState,
    /// Start of the last checkpoint record.
    pub checkpoint: Lsn,
    /// Where redo starts.
    pub redo: Lsn,
    /// Recovery of a restored online backup (`backup_label`): its start LSN.
    pub from_backup: Option<Lsn>,
    /// The checkpoint's contents (the transaction layer's counters).
    pub checkpoint_record: CheckpointRecord,
}

/// Outcome of `Wal::recover`.
#[derive(Clone, Debug)]
pub struct RecoveryResult {
    pub records: u64,
    /// The end of the valid WAL, where insertion continues.
    pub end: Lsn,
    /// Why reading stopped.
    pub end_reason: String,
    /// A recovery target with recovery_target_action = shutdown was reached:
    /// nothing was changed after replay, the server must stop.
    pub shutdown_at_target: bool,
}

/// (xid, commit or abort time) of a transaction commit or abort record.
fn xact_of(rec: &DecodedRecord) -> Option<(u32, i64)> {
    if rec.rmgr != RmgrId::Xact {
        return None;
    }
    crate::txn::clog::decode_xact_record(&rec.main_data).ok().map(|x| (x.xid, x.timestamp))
}

/// The name of a restore point record.
fn restore_point_of(rec: &DecodedRecord) -> Option<String> {
    if rec.rmgr != RmgrId::Xlog || rec.info != XLOG_RESTORE_POINT || rec.main_data.len() < 8 {
        return None;
    }
    Some(String::from_utf8_lossy(&rec.main_data[8..]).into_owned())
}

/// The online backups in progress (`Wal::backups`).
#[derive(Default)]
struct BackupsRunning {
    /// Backups that forced full-page images (every running one): `starts.len()
    /// <= forcing`.
    forcing: u32,
    /// The start (redo pointer) of each registered backup.
    starts: Vec<Lsn>,
}

/// The write-ahead log of one cluster.
pub struct Wal {
    datadir: PathBuf,
    wal_dir: PathBuf,
    opts: WalOptions,
    seg_size: u64,
    /// The insert position (usable bytes): step 1 of an insertion.
    pos: InsertPosition,
    slots: Box<[InsertSlot]>,
    /// Redo pointer of the last (or running) checkpoint. Changed only while holding
    /// every insertion slot; read by inserters under their slot.
    redo_ptr: AtomicU64,
    full_page_writes: AtomicBool,
    /// The WAL buffer ring: `n_pages` pages of `PS` bytes at `ring`.
    ring: *mut u8,
    n_pages: u64,
    /// Per ring page: end LSN of the WAL page it holds (0: none yet). Written under
    /// `mapping` (Release), read lock-free (Acquire).
    xlblocks: Box<[AtomicU64]>,
    /// End LSN of the last initialized ring page (PostgreSQL's InitializedUpTo); the
    /// mutex is WALBufMappingLock.
    mapping: Mutex<u64>,
    /// WALWrite: held to write or fsync segment files.
    write_lock: WalWriteLock,
    /// Only locked while `write_lock` is held.
    writer: Mutex<WriterState>,
    /// WAL written to the kernel up to here (LSN). Only advanced under `write_lock`.
    written: AtomicU64,
    /// WAL durable up to here. Only advanced under `write_lock`; <= `written`.
    flushed: AtomicU64,
    /// Highest end LSN of an asynchronous commit (the WAL writer's target).
    async_request: AtomicU64,
    /// Wakes a hibernating WAL writer (an asynchronous commit).
    pub(crate) walwriter_latch: Arc<WorkerLatch>,
    /// Wakes a hibernating checkpointer (a new WAL segment opened for writing).
    pub(crate) checkpointer_latch: Arc<WorkerLatch>,
    /// Wakes the archiver (a segment was marked `.ready`).
    pub(crate) archiver_notify: Arc<crate::replication::archive::Notify>,
    /// The walsenders' latches, set each time `flushed` advances (PostgreSQL's
    /// WalSndWakeup); `flush_watchers` counts them so a flush without
    /// walsenders pays one load. A leaf lock: nothing is taken under it.
    flush_latches: Mutex<Vec<Arc<crate::latch::Latch>>>,
    flush_watchers: AtomicUsize,
    state: AtomicU8,
    /// An insertion failed after reserving space: the WAL has a hole; refuse to go on.
    poisoned: AtomicBool,
    control: Mutex<ControlFile>,
    /// Serializes checkpoints (finish_checkpoint / shutdown) and segment removal
    /// with a replication slot's reservation (`reserve_wal`).
    ckpt_lock: Mutex<()>,
    /// Oldest LSN a replication slot still needs (0: none): segment removal keeps
    /// its segment and every later one. Written by the slot manager only (under its
    /// own mutex, or under `ckpt_lock` through `reserve_wal`); read at removal.
    pub(crate) keep_floor: AtomicU64,
    /// The online backups in progress (`crate::replication::backup`): each one's
    /// start (its checkpoint's redo pointer). A checkpoint keeps every segment
    /// from the oldest one's on; while the list is not empty every page's first
    /// change after the redo pointer logs a full-page image whatever
    /// full_page_writes says (PostgreSQL's forcePageWrites). Changed only while
    /// holding every insertion slot (as `full_page_writes`) and `ckpt_lock`.
    backups: Mutex<BackupsRunning>,
    /// Set by `open` on a restored backup (`backup_label`): the backup's start,
    /// whose XLOG_BACKUP_END record `recover` must reach.
    backup_recovery: Mutex<Option<Lsn>>,
    /// `backups.forcing > 0`, read by inserters (written under every slot).
    force_page_writes: AtomicBool,
    ckpt: Mutex<CheckpointTrack>,
    siblings: RwLock<Option<Arc<dyn Fn() -> usize + Send + Sync>>>,
    /// Number of threads taking all insertion slots (checkpoint start). While > 0,
    /// inserters wait at the gate before taking a slot, so that the all-slots taker is
    /// not starved by inserters re-taking their slot with `try_exclusive`.
    all_slots_wanted: AtomicUsize,
    gate: Mutex<()>,
    gate_cv: Condvar,
    active_flushers: AtomicUsize,
    stats: Stats,
    /// pg_stat_wal's reset point: the counters at the last `reset_stats` (or zero)
    /// and when that was (the WAL's opening at first). The counters themselves never
    /// go back, so `stats()` readers that compute differences are not disturbed.
    reset: Mutex<(WalStats, std::time::SystemTime)>,
}

// SAFETY: `ring` is owned by the Wal (freed in Drop). Threads write disjoint byte
// ranges of it (each inserter its reserved range; page headers by the initializer
// before publishing `xlblocks`, the continuation fields by the one inserter whose
// record continues there), and the writer reads only bytes whose insertions have
// finished (README: invariants). Everything else is atomics and locks.
unsafe impl Send for Wal {}
unsafe impl Sync for Wal {}

impl Drop for Wal {
    fn drop(&mut self) {
        let len = (self.n_pages * PS) as usize;
        // SAFETY: allocated in `new_internal` as a boxed slice of exactly `len` bytes.
        unsafe { drop(Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.ring, len))) };
    }
}

/// A WAL write, segment creation or fsync failed (a full disk, an I/O error):
/// PANIC, as PostgreSQL does (its XLogWrite runs in a critical section). Going on
/// is not safe: a commit whose record could not be made durable would be reported
/// as failed, other sessions would act on it as aborted, and a later flush (once
/// space is freed) or the kernel's own write-back after a failed fsync could still
/// put the record on disk, making it committed after recovery. Ending the process
/// at once leaves one truth: what reached the disk, which the next start recovers
/// (postmaster.pid is then stale and replaced).
#[cold]
fn wal_panic(message: String) -> ! {
    eprintln!("PANIC:  {message}");
    std::process::abort()
}

fn strerror(e: &std::io::Error) -> String {
    crate::error::strerror(e)
}

fn io_err(p: impl std::fmt::Display) -> impl FnOnce(std::io::Error) -> Error {
    let p = p.to_string();
    move |e| Error::io(p, e)
}

/// Touches every OS page of `len` bytes at `p` (writing the zero they hold), so
/// that the WAL buffers are resident from startup, as PostgreSQL's are (it zeroes
/// them when it sets up shared memory): a zeroed allocation may come as fresh,
/// untouched pages, and then the first 16 MB of WAL a session inserts would page
/// them in one by one, inside WAL insertion, and grow the process mid-statement.
/// Volatile writes: the compiler knows the memory is zero and would drop plain ones.
fn prefault(p: *mut u8, len: usize) {
    const OS_PAGE: usize = 4096;
    for off in (0..len).step_by(OS_PAGE) {
        // SAFETY: `off < len` and `p` points to `len` writable bytes that nothing
        // else references yet; the byte written is the zero already there.
        unsafe { p.add(off).write_volatile(0) };
    }
}

impl Wal {
    fn new_internal(datadir: &Path, opts: WalOptions, control: ControlFile) -> Wal {
        let n_pages = ((opts.wal_buffers as u64) / PS).max(4);
        let ring = Box::into_raw(vec![0u8; (n_pages * PS) as usize].into_boxed_slice()) as *mut u8;
        prefault(ring, (n_pages * PS) as usize);
        let slots: Box<[InsertSlot]> = (0..opts.insert_slots.max(1)).map(|_| InsertSlot::new()).collect();
        let seg_size = control.wal_segment_size as u64;
        Wal {
            datadir: datadir.to_path_buf(),
            wal_dir: datadir.join("pg_wal"),
            seg_size,
            pos: InsertPosition::new(0, 0),
            slots,
            redo_ptr: AtomicU64::new(control.redo.0),
            full_page_writes: AtomicBool::new(opts.full_page_writes),
            ring,
            n_pages,
            xlblocks: (0..n_pages).map(|_| AtomicU64::new(0)).collect(),
            mapping: Mutex::new(0),
            write_lock: WalWriteLock::new(),
            writer: Mutex::new(WriterState {
                files: BTreeMap::new(),
                dirty: BTreeSet::new(),
                scratch: vec![0; PS as usize],
                next_ready: 0,
            }),
            written: AtomicU64::new(0),
            flushed: AtomicU64::new(0),
            async_request: AtomicU64::new(0),
            walwriter_latch: WorkerLatch::new(),
            checkpointer_latch: WorkerLatch::new(),
            archiver_notify: Default::default(),
            flush_latches: Mutex::new(Vec::new()),
            flush_watchers: AtomicUsize::new(0),
            state: AtomicU8::new(RunState::Recovery as u8),
            poisoned: AtomicBool::new(false),
            control: Mutex::new(control),
            ckpt_lock: Mutex::new(()),
            keep_floor: AtomicU64::new(0),
            backups: Mutex::new(BackupsRunning::default()),
            backup_recovery: Mutex::new(None),
            force_page_writes: AtomicBool::new(false),
            ckpt: Mutex::new(CheckpointTrack {
                last_time: Instant::now(),
                last_redo: control.redo,
                last_end: Lsn(0),
            }),
            siblings: RwLock::new(None),
            all_slots_wanted: AtomicUsize::new(0),
            gate: Mutex::new(()),
            gate_cv: Condvar::new(),
            active_flushers: AtomicUsize::new(0),
            stats: Stats::default(),
            reset: Mutex::new((WalStats::default(), std::time::SystemTime::now())),
            opts,
        }
    }

    /// Creates the WAL of a new cluster (initdb): `pg_wal/`, `global/pg_control`, and a
    /// first shutdown checkpoint carrying `info`.
    pub fn init(datadir: &Path, opts: &WalOptions, info: CheckpointInfo) -> Result<()> {
        let ss = opts.segment_size;
        if !ss.is_power_of_two() || !(2 * PS..=(1 << 30)).contains(&ss) {
            return Err(Error::user(SqlState::INVALID_PARAMETER_VALUE, format!("invalid WAL segment size {ss}")));
        }
        if ControlFile::path(datadir).exists() {
            return Err(Error::user(
                SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!("directory \"{}\" already holds a cluster", datadir.display()),
            ));
        }
        for d in ["global", "pg_wal"] {
            let p = datadir.join(d);
            fs::create_dir_all(&p).map_err(io_err(p.display()))?;
        }
        let control = ControlFile {
            system_identifier: (now_secs() << 32) ^ (std::process::id() as u64) ^ rand::random::<u32>() as u64,
            state: DbState::ShutDown,
            timeline: TIMELINE,
            time: now_secs(),
            checkpoint: Lsn(0),
            redo: bytepos_to_lsn(0),
            checkpoint_time: now_secs(),
            info,
            wal_page_size: PS as u32,
            wal_segment_size: ss as u32,
            block_size: BLCKSZ as u32,
        };
        let wal = Wal::new_internal(datadir, opts.clone(), control);
        wal.position_at(Lsn(0), Lsn(0))?;
        wal.set_state(RunState::Production);
        let start = wal.write_checkpoint_record(bytepos_to_lsn(0), info, true)?;
        wal.state.store(RunState::ShutDown as u8, Ordering::SeqCst);
        let mut c = lock(&wal.control);
        c.state = DbState::ShutDown;
        c.checkpoint = start;
        c.write(datadir, opts.fsync)?;
        if opts.fsync {
            fsync_dir(datadir)?;
        }
        Ok(())
    }

    /// Opens the WAL of an existing cluster (settings from `Settings`).
    pub fn open(datadir: &Path, settings: &Settings) -> Result<(Wal, RecoveryStart)> {
        if !settings.archive_library.is_empty() {
            return Err(Error::user(SqlState::FEATURE_NOT_SUPPORTED, "archive_library is not supported: use archive_command"));
        }
        let mut opts = WalOptions::from_settings(settings);
        opts.archive_recovery = crate::replication::archive::ArchiveRecovery::from_settings(datadir, settings)?;
        Wal::open_with(datadir, opts)
    }

    /// Opens the WAL: reads the control file and the last checkpoint record. If the
    /// cluster was shut down cleanly the WAL is ready for insertion; otherwise
    /// `recover` must run first.
    pub fn open_with(datadir: &Path, opts: WalOptions) -> Result<(Wal, RecoveryStart)> {
        let mut control = ControlFile::read(datadir)?;
        if control.wal_page_size as u64 != PS || control.block_size as usize != BLCKSZ {
            return Err(Error::corrupt("control file: page sizes do not match this build"));
        }
        // A data directory restored from an online backup: redo starts at the
        // backup's checkpoint, whatever the (later) copied control file says.
        let backup = crate::replication::backup::BackupLabel::read(datadir)?;
        if let Some(b) = &backup {
            control.checkpoint = b.checkpoint;
            control.redo = b.start;
            control.state = DbState::InCrashRecovery;
        }
        let wal = Wal::new_internal(datadir, opts, control);
        *lock(&wal.backup_recovery) = backup.as_ref().map(|b| b.start);
        // Leftovers of segment creation interrupted by a crash.
        if let Ok(rd) = fs::read_dir(&wal.wal_dir) {
            for e in rd.flatten() {
                if e.file_name().to_string_lossy().starts_with("xlogtemp.") {
                    let _ = fs::remove_file(e.path());
                }
            }
        }
        let mut rd = wal.reader(control.checkpoint);
        let no_ckpt = |why: &str| {
            Error::corrupt(format!("could not locate a valid checkpoint record at {}: {why}", control.checkpoint))
        };
        let rec = rd.next_record()?.ok_or_else(|| no_ckpt(rd.end_reason().unwrap_or("")))?;
        if rec.rmgr != RmgrId::Xlog || (rec.info != XLOG_CHECKPOINT_SHUTDOWN && rec.info != XLOG_CHECKPOINT_ONLINE) {
            return Err(no_ckpt("not a checkpoint record"));
        }
        let ck = CheckpointRecord::decode(&rec.main_data)?;
        if ck.redo != control.redo || ck.redo > rec.lsn {
            return Err(no_ckpt("redo pointer does not match the control file"));
        }
        let clean = !wal.opts.archive_recovery.requested
            && control.state == DbState::ShutDown
            && rec.info == XLOG_CHECKPOINT_SHUTDOWN
            && ck.redo == rec.lsn
            && rd.next_record()?.is_none();
        let start = RecoveryStart {
            needed: !clean || backup.is_some(),
            from_backup: backup.map(|b| b.start),
            state: control.state,
            checkpoint: control.checkpoint,
            redo: ck.redo,
            checkpoint_record: ck,
        };
        {
            let mut t = lock(&wal.ckpt);
            t.last_redo = ck.redo;
            t.last_end = Lsn(align_record(rec.end.0));
        }
        if !start.needed {
            wal.position_at(Lsn(align_record(rec.end.0)), rec.lsn)?;
            wal.set_state(RunState::Production);
            let mut c = lock(&wal.control);
            c.state = DbState::InProduction;
            c.time = now_secs();
            c.write(datadir, wal.opts.fsync)?;
        }
        Ok((wal, start))
    }

    /// Replays the WAL from the checkpoint's redo pointer to the end of the valid WAL,
    /// calling `redo_fn(record, record_end_lsn)` for each record (the checkpoint record
    /// included), then opens the WAL for insertion right after the last valid record.
    /// Does nothing if `open` found a clean shutdown. The caller should then flush
    /// the buffers it dirtied and take a checkpoint.
    pub fn recover(&self, redo_fn: &mut dyn FnMut(&DecodedRecord, Lsn) -> Result<()>) -> Result<RecoveryResult> {
        if self.run_state() != RunState::Recovery {
            return Ok(RecoveryResult {
                records: 0,
                end: self.insert_position(),
                end_reason: "no recovery needed".into(),
                shutdown_at_target: false,
            });
        }
        let (redo, ckpt) = {
            let mut c = lock(&self.control);
            c.state = DbState::InCrashRecovery;
            c.time = now_secs();
            c.write(&self.datadir, self.opts.fsync)?;
            (c.redo, c.checkpoint)
        };
        let mut rd = self.reader(redo);
        let mut n = 0;
        let backup_start = *lock(&self.backup_recovery);
        let mut backup_end = None;
        let target = self.opts.archive_recovery.target.clone();
        // (start, end) of the last record replayed: where the WAL ends if a
        // recovery target stops replay before the end of the WAL.
        let mut applied: Option<(Lsn, Lsn)> = None;
        let mut stopped = None;
        while let Some(rec) = rd.next_record()? {
            let stop = match &target {
                Some(t) => t.check(rec.lsn, xact_of(&rec), restore_point_of(&rec).as_deref()),
                None => crate::replication::archive::Stop::Continue,
            };
            if stop == crate::replication::archive::Stop::Before {
                stopped = Some(rec.lsn);
                break;
            }
            redo_fn(&rec, rec.end)?;
            n += 1;
            applied = Some((rec.lsn, rec.end));
            if rec.rmgr == RmgrId::Xlog
                && rec.info == XLOG_BACKUP_END
                && backup_start.is_some_and(|s| rec.main_data.get(..8) == Some(&s.0.to_le_bytes()[..]))
            {
                backup_end = Some(rec.end);
            }
            if stop == crate::replication::archive::Stop::After {
                stopped = Some(rec.lsn);
                break;
            }
        }
        let (end, last) = match (stopped, applied) {
            (Some(at), Some((start, end))) => {
                let t = target.as_ref().map(|t| t.describe()).unwrap_or_default();
                eprintln!("LOG:  recovery stopping at {t}, record at {at}");
                (end, start)
            }
            _ => (rd.end_of_valid(), rd.last_record().unwrap_or(Lsn(0))),
        };
        if backup_start.is_some() && backup_end.is_none() {
            // PostgreSQL's FATAL: the copied pages may be torn or newer than
            // the WAL; only the WAL up to the backup's end makes them consistent.
            return Err(Error::User {
                code: SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
                message: "WAL ends before end of online backup".into(),
                detail: None,
                hint: Some("All WAL generated while online backup was taken must be available at recovery.".into()),
            });
        }
        if end <= ckpt {
            return Err(Error::corrupt(format!(
                "WAL ends at {end} before the checkpoint record at {ckpt}: {}",
                rd.end_reason().unwrap_or("")
            )));
        }
        if target.is_some() && stopped.is_none() {
            // PostgreSQL 14+: the archive ended first; nothing is promoted.
            return Err(Error::user(
                SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
                "recovery ended before configured recovery target was reached",
            ));
        }
        let target_action = match (stopped, &target) {
            (Some(_), Some(t)) => Some(t.action),
            _ => None,
        };
        if target_action == Some(crate::replication::archive::TargetAction::Shutdown) {
            // recovery_target_action = shutdown: nothing is written; a restart
            // replays up to the target again (as PostgreSQL).
            return Ok(RecoveryResult {
                records: n,
                end,
                end_reason: "recovery target reached".into(),
                shutdown_at_target: true,
            });
        }
        if self.opts.archive_recovery.requested {
            // WAL past the end (restored from the archive, or older than it)
            // must never be read as a continuation of the new WAL.
            self.remove_segments_after(segno(end.0.saturating_sub(1).max(1), self.seg_size))?;
        }
        self.position_at(end, last)?;
        // The page after the end may hold stale WAL that a future record ending at
        // its boundary would make reachable: clear it on disk now.
        let next_page = if end.0 % PS == 0 { end.0 } else { end.0 - end.0 % PS + PS };
        self.zero_page_on_disk(next_page)?;
        self.set_state(RunState::Production);
        let mut c = lock(&self.control);
        c.state = DbState::InProduction;
        c.time = now_secs();
        c.write(&self.datadir, self.opts.fsync)?;
        let end_reason = match stopped {
            Some(_) => "recovery target reached".to_string(),
            None => rd.end_reason().unwrap_or("").to_string(),
        };
        Ok(RecoveryResult { records: n, end, end_reason, shutdown_at_target: false })
    }

    /// A reader from `start`; in archive recovery it fetches each segment with
    /// restore_command first.
    fn reader(&self, start: Lsn) -> WalReader {
        let rd = WalReader::new(&self.wal_dir, self.seg_size, start, None);
        let ar = &self.opts.archive_recovery;
        if !ar.requested {
            return rd;
        }
        let (datadir, command) = (self.datadir.clone(), ar.restore_command.clone());
        rd.with_restore(Box::new(move |name| {
            crate::replication::archive::restore_segment(&datadir, &command, name);
        }))
    }

    /// Removes the segment files after segment `last` (end of archive recovery).
    fn remove_segments_after(&self, last: u64) -> Result<()> {
        let rd = fs::read_dir(&self.wal_dir).map_err(io_err(self.wal_dir.display()))?;
        for ent in rd.flatten() {
            let name = ent.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some((_, seg)) = parse_segment_file_name(name, self.seg_size) {
                if seg > last {
                    fs::remove_file(ent.path()).map_err(io_err(name))?;
                    crate::replication::archive::forget(&self.wal_dir, name);
                }
            }
        }
        Ok(())
    }

    /// Sets up insertion to continue at `end` (end of the last valid record, whose
    /// start is `prev`): no other thread may use the WAL yet.
    fn position_at(&self, end: Lsn, prev: Lsn) -> Result<()> {
        let bad = || Error::internal(format!("invalid WAL end position {end}"));
        let pos = lsn_to_bytepos(end).ok_or_else(bad)?;
        let prevpos = if prev.is_valid() { lsn_to_bytepos(prev).ok_or_else(bad)? } else { 0 };
        self.pos.reset(pos, prevpos);
        let end = if pos == 0 { Lsn(0) } else { end };
        let page_start = end.0 - end.0 % PS;
        let off = end.0 % PS;
        let mut init = lock(&self.mapping);
        if off != 0 {
            // The last page is partly valid: the next writes rewrite it whole, so it
            // must be in the ring with its valid part (and zeroes after).
            let seg = segno(page_start, self.seg_size);
            let path = self.wal_dir.join(segment_file_name(TIMELINE, seg, self.seg_size));
            let f = File::open(&path).map_err(io_err(path.display()))?;
            let idx = ((page_start / PS) % self.n_pages) as usize;
            // SAFETY: no other thread uses the WAL yet; the page is inside the ring.
            let page = unsafe { std::slice::from_raw_parts_mut(self.ring.add(idx * PS as usize), PS as usize) };
            f.read_exact_at(page, page_start % self.seg_size).map_err(io_err(path.display()))?;
            page[off as usize..].fill(0);
            self.xlblocks[idx].store(page_start + PS, Ordering::Release);
            *init = page_start + PS;
        } else {
            *init = page_start;
        }
        self.written.store(end.0, Ordering::Release);
        self.flushed.store(end.0, Ordering::Release);
        lock(&self.writer).next_ready = end.0 / self.seg_size;
        Ok(())
    }

    /// Overwrites WAL page `page` with zeroes if its segment file exists.
    fn zero_page_on_disk(&self, page: u64) -> Result<()> {
        let seg = segno(page, self.seg_size);
        let path = self.wal_dir.join(segment_file_name(TIMELINE, seg, self.seg_size));
        let f = match OpenOptions::new().write(true).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(Error::io(path.display(), e)),
        };
        f.write_all_at(&[0u8; PS as usize], page % self.seg_size).map_err(io_err(path.display()))?;
        if self.opts.fsync {
            f.sync_data().map_err(io_err(path.display()))?;
        }
        Ok(())
    }

    fn run_state(&self) -> RunState {
        match self.state.load(Ordering::Acquire) {
            0 => RunState::Recovery,
            1 => RunState::Production,
            _ => RunState::ShutDown,
        }
    }

    fn set_state(&self, s: RunState) {
        self.state.store(s as u8, Ordering::Release);
    }

    fn check_usable(&self) -> Result<()> {
        if self.poisoned.load(Ordering::Acquire) {
            return Err(Error::internal("WAL insertion failed earlier; the WAL cannot continue"));
        }
        match self.run_state() {
            RunState::Production => Ok(()),
            RunState::Recovery => Err(Error::user(
                SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
                "cannot write WAL before recovery has run",
            )),
            RunState::ShutDown => Err(Error::user(SqlState::ADMIN_SHUTDOWN, "WAL has been shut down")),
        }
    }

    // ----------------------------------------------------------------------------
    // Insertion
    // ----------------------------------------------------------------------------

    /// Inserts a record; returns its end LSN (what the changed pages' LSN becomes and
    /// what a commit flushes up to).
    pub fn insert(&self, rec: &RecordBuilder<'_>) -> Result<Lsn> {
        Ok(self.insert_with_start(rec)?.1)
    }

    /// Inserts a record; returns (start LSN, end LSN).
    pub fn insert_with_start(&self, rec: &RecordBuilder<'_>) -> Result<(Lsn, Lsn)> {
        self.check_usable()?;
        loop {
            let redo = Lsn(self.redo_ptr.load(Ordering::Acquire));
            let fpw = self.page_writes_forced_or_on();
            let mut a = rec.assemble(redo, fpw)?;
            let slot = self.acquire_slot();
            // A checkpoint may have started since we assembled: if a page now needs an
            // image it did not get, assemble again (PostgreSQL does the same).
            let redo2 = Lsn(self.redo_ptr.load(Ordering::Acquire));
            let fpw2 = self.page_writes_forced_or_on();
            if (redo2 != redo || fpw2 != fpw) && rec.image_mask(redo2, fpw2) & !a.image_mask != 0 {
                drop(slot);
                continue;
            }
            let size = align_record(a.len as u64);
            let (s, e, p) = self.pos.reserve(size);
            let start = bytepos_to_lsn(s);
            let end = bytepos_to_end_lsn(e);
            let prev = if s == 0 { Lsn(0) } else { bytepos_to_lsn(p) };
            finish_record(&mut a.bytes, a.payload_crc, prev);
            if let Err(err) = self.copy_record(slot.slot, a.chunks(), a.len, start) {
                // Space is reserved but not filled: nothing after it can be trusted.
                self.poisoned.store(true, Ordering::SeqCst);
                return Err(err);
            }
            drop(slot);
            self.stats.records.fetch_add(1, Ordering::Relaxed);
            self.stats.bytes.fetch_add(a.len as u64, Ordering::Relaxed);
            if a.image_mask != 0 {
                self.stats.fpi.fetch_add(a.image_mask.count_ones() as u64, Ordering::Relaxed);
            }
            crate::pgstat::usage::count_wal(a.len as u64, a.image_mask.count_ones() as u64);
            return Ok((start, end));
        }
    }

    /// pg_switch_wal() (PostgreSQL's RequestXLogSwitch): ends the current segment
    /// with an XLOG_SWITCH record, reserving the rest of the segment so the next
    /// record starts on the next one, and makes it durable, so the segment is
    /// complete and (archive_mode) marked `.ready`. Returns the end of the switch
    /// record; when the current segment has no WAL yet, nothing is written and
    /// the insert position is returned.
    pub fn switch_segment(&self) -> Result<Lsn> {
        self.check_usable()?;
        let rb = RecordBuilder::new(RmgrId::Xlog, XLOG_SWITCH);
        let redo = Lsn(self.redo_ptr.load(Ordering::Acquire));
        let mut a = rb.assemble(redo, false)?;
        let ss = self.seg_size;
        let slot = self.acquire_slot();
        let at_seg_start = |pos: u64| pos == 0 || bytepos_to_lsn(pos).0 % ss == PAGE_HEADER_SIZE;
        let seg_end = |end: u64| {
            let e = bytepos_to_end_lsn(end).0;
            (segno(e - 1, ss) + 1) * ss / PS * USABLE_PER_PAGE
        };
        let Some((s, e, p)) = self.pos.reserve_switch(align_record(a.len as u64), at_seg_start, seg_end) else {
            drop(slot);
            return Ok(self.insert_position());
        };
        let start = bytepos_to_lsn(s);
        let rec_end = bytepos_to_end_lsn(e).0;
        let seg_stop = (segno(rec_end - 1, ss) + 1) * ss;
        finish_record(&mut a.bytes, a.payload_crc, bytepos_to_lsn(p));
        let filled = self.copy_record(slot.slot, a.chunks(), a.len, start).and_then(|()| {
            // The pages after the record, up to the segment's end, are part of
            // our reservation: initialize them (zeroes after their header) so the
            // writer can write the whole segment.
            let mut page = if rec_end % PS == 0 { rec_end } else { rec_end - rec_end % PS + PS };
            while page < seg_stop {
                self.get_buffer(slot.slot, page, page)?;
                page += PS;
            }
            Ok(())
        });
        if let Err(err) = filled {
            self.poisoned.store(true, Ordering::SeqCst);
            return Err(err);
        }
        drop(slot);
        self.stats.records.fetch_add(1, Ordering::Relaxed);
        self.stats.bytes.fetch_add(a.len as u64, Ordering::Relaxed);
        self.flush(Lsn(seg_stop))?;
        Ok(bytepos_to_end_lsn(s + a.len as u64))
    }

    /// Step 0: take an insertion slot and advertise a lower bound of where our record
    /// will start (README, "Advertising progress").
    fn acquire_slot(&self) -> SlotGuard<'_> {
        if self.all_slots_wanted.load(Ordering::SeqCst) > 0 {
            let mut g = lock(&self.gate);
            while self.all_slots_wanted.load(Ordering::SeqCst) > 0 {
                g = self.gate_cv.wait(g).unwrap_or_else(|e| e.into_inner());
            }
        }
        let n = self.slots.len();
        let mut mine = MY_SLOT.get();
        if mine == usize::MAX {
            mine = NEXT_SLOT.fetch_add(1, Ordering::Relaxed);
            MY_SLOT.set(mine);
        }
        let slot = &self.slots[mine % n];
        let g = match slot.lock.try_exclusive() {
            Some(g) => g,
            None => {
                // Contended: wait here this time, try the next slot next time.
                MY_SLOT.set(mine.wrapping_add(1));
                slot.lock.exclusive()
            }
        };
        slot.inserting_at.store(bytepos_to_lsn(self.pos.current()).0, Ordering::SeqCst);
        SlotGuard { slot, _lock: g }
    }

    /// Step 2: copy the record (`len` bytes, in `chunks`) into the ring, page by
    /// page.
    fn copy_record<'c>(&self, slot: &InsertSlot, chunks: impl Iterator<Item = &'c [u8]>, len: usize, start: Lsn) -> Result<()> {
        let mut lsn = start.0;
        // Bytes of the record not yet copied (a continuation page's header says
        // how many remain).
        let mut left = len;
        for chunk in chunks {
            let mut rest = chunk;
            while !rest.is_empty() {
                let page_start = lsn - lsn % PS;
                let mut off = lsn % PS;
                let page = self.get_buffer(slot, page_start, lsn)?;
                if off == 0 {
                    // Our record continues onto this page: mark it so in the header.
                    // SAFETY: only the inserter whose record continues here writes
                    // these header fields after initialization; `page` is a ring page.
                    unsafe {
                        let info = XLP_FIRST_IS_CONTRECORD.to_le_bytes();
                        std::ptr::copy_nonoverlapping(info.as_ptr(), page.add(2), 2);
                        let rem = (left as u32).to_le_bytes();
                        std::ptr::copy_nonoverlapping(rem.as_ptr(), page.add(16), 4);
                    }
                    off = PAGE_HEADER_SIZE;
                }
                let n = ((PS - off) as usize).min(rest.len());
                // SAFETY: [lsn, lsn+n) is inside our reservation and inside this page.
                unsafe { std::ptr::copy_nonoverlapping(rest.as_ptr(), page.add(off as usize), n) };
                rest = &rest[n..];
                left -= n;
                lsn = page_start + off + n as u64;
            }
        }
        Ok(())
    }

    /// Returns the ring page holding WAL page `page_start`, initializing ring pages
    /// (and writing out old ones) as needed. `cur` is our copy position: every byte of
    /// our record below it is in the ring.
    fn get_buffer(&self, slot: &InsertSlot, page_start: u64, cur: u64) -> Result<*mut u8> {
        let idx = ((page_start / PS) % self.n_pages) as usize;
        // SAFETY: idx < n_pages.
        let ptr = unsafe { self.ring.add(idx * PS as usize) };
        let have = self.xlblocks[idx].load(Ordering::Acquire);
        if have == page_start + PS {
            return Ok(ptr);
        }
        if have > page_start + PS {
            return Err(Error::internal(format!("WAL buffer page for {} recycled under an inserter", Lsn(page_start))));
        }
        // Step 3: before anything that may block, advertise our progress, so that
        // whoever must write old pages does not wait for us.
        slot.advertise(cur);
        self.advance_buffers(page_start)?;
        Ok(ptr)
    }

    /// Initializes ring pages up to and including WAL page `upto` (PostgreSQL's
    /// AdvanceXLInsertBuffer).
    fn advance_buffers(&self, upto: u64) -> Result<()> {
        let want_idx = ((upto / PS) % self.n_pages) as usize;
        loop {
            let mut init = lock(&self.mapping);
            if self.xlblocks[want_idx].load(Ordering::Acquire) == upto + PS {
                return Ok(());
            }
            if *init > upto {
                return Err(Error::internal("WAL buffer initialization went past a page not yet seen"));
            }
            if let Err(old_end) = self.init_next_page(&mut init) {
                // The ring is full: the page there must be written first. Never wait
                // with the mapping lock held (README, lock ordering).
                drop(init);
                self.stats.buffer_full_waits.fetch_add(1, Ordering::Relaxed);
                self.write_out(old_end)?;
            }
        }
    }

    /// With the mapping lock held (`init` is its value: the next WAL page to
    /// initialize): zeroes the ring slot of that page and gives it its header, if the
    /// page the slot held before is written out; otherwise `Err` with that old
    /// page's end, which must be written first.
    fn init_next_page(&self, init: &mut u64) -> std::result::Result<(), u64> {
        let next = *init;
        let idx = ((next / PS) % self.n_pages) as usize;
        let old_end = self.xlblocks[idx].load(Ordering::Acquire);
        if old_end > self.written.load(Ordering::Acquire) {
            return Err(old_end);
        }
        // SAFETY: the old page in this slot is written (old_end <= written) and no
        // inserter uses it (they would have advertised below old_end); new content
        // is published by the Release store to xlblocks.
        unsafe {
            let p = std::slice::from_raw_parts_mut(self.ring.add(idx * PS as usize), PS as usize);
            p.fill(0);
            PageHeader { magic: WAL_PAGE_MAGIC, info: 0, tli: TIMELINE, pageaddr: next, rem_len: 0 }.encode(p);
        }
        self.xlblocks[idx].store(next + PS, Ordering::Release);
        *init = next + PS;
        Ok(())
    }

    /// The WAL writer's opportunistic step (PostgreSQL's XLogBackgroundFlush ends
    /// with the same): initializes ring pages ahead of the inserters, as many as
    /// the ring holds whose old pages are written out, so that an inserter rarely
    /// zeroes a page itself. Never writes or waits; takes the mapping lock once per
    /// page. Returns how many pages it initialized. Only in production: recovery
    /// and shutdown position the ring themselves.
    pub fn preinit_buffers(&self) -> usize {
        if self.run_state() != RunState::Production {
            return 0;
        }
        let mut n = 0;
        while n < self.n_pages as usize {
            let mut init = lock(&self.mapping);
            if self.init_next_page(&mut init).is_err() {
                break;
            }
            n += 1;
        }
        n
    }

    /// Waits until every insertion into WAL below `upto` has finished (clamped to the
    /// reserved end). Returns a position >= `upto` below which all WAL is complete.
    /// Must not be called while holding WALWrite (README, lock ordering).
    fn wait_insertions(&self, upto: u64) -> u64 {
        let reserved = bytepos_to_end_lsn(self.pos.current()).0;
        let upto = upto.min(reserved);
        let mut finished = reserved;
        for s in self.slots.iter() {
            if let Some(v) = s.wait_past(upto) {
                finished = finished.min(complete_below(v));
            }
        }
        finished
    }

    /// Like `wait_insertions` without waiting: all WAL below the result is complete.
    fn insertions_finished_nowait(&self) -> u64 {
        let mut finished = bytepos_to_end_lsn(self.pos.current()).0;
        for s in self.slots.iter() {
            let v = s.inserting_at.load(Ordering::SeqCst);
            if v != 0 {
                finished = finished.min(complete_below(v));
            }
        }
        finished
    }

    // ----------------------------------------------------------------------------
    // Writing and flushing
    // ----------------------------------------------------------------------------

    /// Writes (without fsync) the WAL up to `target` (used when the ring is full).
    fn write_out(&self, target: u64) -> Result<()> {
        let finished = self.wait_insertions(target);
        let target = target.min(finished);
        let _w = self.write_lock.acquire();
        if self.written.load(Ordering::Acquire) >= target {
            return Ok(());
        }
        let mut st = lock(&self.writer);
        self.write_locked(&mut st, target, false)
    }

    /// With WALWrite held: write the WAL in [written, target) and, if `flush`, make
    /// it durable. All insertions below `target` must have finished.
    fn write_locked(&self, st: &mut WriterState, target: u64, flush: bool) -> Result<()> {
        let from = self.written.load(Ordering::Acquire);
        if target > from {
            let mut page = from - from % PS;
            let mut bytes = 0u64;
            while page < target {
                let seg = segno(page, self.seg_size);
                let seg_end = (seg + 1) * self.seg_size;
                let idx = (page / PS) % self.n_pages;
                if page + PS <= target {
                    let mut run_end = page + PS;
                    while run_end + PS <= target && run_end < seg_end && (run_end / PS) % self.n_pages != 0 {
                        run_end += PS;
                    }
                    for p in (page..run_end).step_by(PS as usize) {
                        self.check_ring_page(p)?;
                    }
                    // SAFETY: these ring pages hold WAL pages [page, run_end), all below
                    // `target`, whose insertions have finished: nobody writes them.
                    let buf = unsafe {
                        std::slice::from_raw_parts(self.ring.add((idx * PS) as usize), (run_end - page) as usize)
                    };
                    self.pwrite(st, seg, page % self.seg_size, buf)?;
                    bytes += run_end - page;
                    page = run_end;
                } else {
                    // Last, partial page: copy its complete part; inserters may be
                    // writing the rest right now.
                    self.check_ring_page(page)?;
                    let len = (target - page) as usize;
                    let mut scratch = std::mem::take(&mut st.scratch);
                    // SAFETY: bytes [page, target) are complete (see above).
                    unsafe {
                        std::ptr::copy_nonoverlapping(self.ring.add((idx * PS) as usize), scratch.as_mut_ptr(), len)
                    };
                    scratch[len..].fill(0);
                    let r = self.pwrite(st, seg, page % self.seg_size, &scratch);
                    st.scratch = scratch;
                    r?;
                    bytes += len as u64;
                    page += PS;
                }
            }
            self.stats.bytes_written.fetch_add(bytes, Ordering::Relaxed);
            self.written.store(target, Ordering::Release);
        }
        if flush {
            let written = self.written.load(Ordering::Acquire);
            if self.flushed.load(Ordering::Acquire) < written {
                if self.opts.fsync {
                    report_wait_start(WaitEvent::Io("WALSync"));
                    for seg in std::mem::take(&mut st.dirty) {
                        if let Some(f) = st.files.get(&seg) {
                            if let Err(e) = f.sync_data() {
                                let name = segment_file_name(TIMELINE, seg, self.seg_size);
                                wal_panic(format!("could not fsync file \"pg_wal/{name}\": {}", strerror(&e)));
                            }
                        }
                    }
                    report_wait_end();
                    self.stats.fsyncs.fetch_add(1, Ordering::Relaxed);
                } else {
                    st.dirty.clear();
                }
                // Keep only the segment being written open.
                let cur = segno(written.saturating_sub(1), self.seg_size);
                st.files.retain(|&s, _| s >= cur);
                self.flushed.store(written, Ordering::Release);
                // Segments wholly below `written` are complete and durable now:
                // the archiver may copy them (PostgreSQL's XLogArchiveNotifySeg).
                let complete = written / self.seg_size;
                if self.opts.archive_mode && st.next_ready < complete {
                    for seg in st.next_ready..complete {
                        crate::replication::archive::mark_ready(
                            &self.wal_dir,
                            &segment_file_name(TIMELINE, seg, self.seg_size),
                        );
                    }
                    self.archiver_notify.notify();
                }
                st.next_ready = st.next_ready.max(complete);
                self.wake_flush_watchers();
            }
        }
        Ok(())
    }

    fn check_ring_page(&self, page: u64) -> Result<()> {
        let idx = ((page / PS) % self.n_pages) as usize;
        let have = self.xlblocks[idx].load(Ordering::Acquire);
        if have != page + PS {
            return Err(Error::internal(format!(
                "WAL buffer for page {} holds page ending {} at write time",
                Lsn(page),
                Lsn(have)
            )));
        }
        Ok(())
    }

    /// Writes WAL bytes to segment `seg` at `off`. Every failure is a PANIC
    /// ([`wal_panic`]); the `Result` is for the caller's ring checks.
    fn pwrite(&self, st: &mut WriterState, seg: u64, off: u64, buf: &[u8]) -> Result<()> {
        if let std::collections::btree_map::Entry::Vacant(v) = st.files.entry(seg) {
            let name = segment_file_name(TIMELINE, seg, self.seg_size);
            let path = self.wal_dir.join(&name);
            let f = match OpenOptions::new().read(true).write(true).open(&path) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    self.create_segment(&path).unwrap_or_else(|e| wal_panic(e.to_string()))
                }
                Err(e) => wal_panic(format!("could not open file \"pg_wal/{name}\": {}", strerror(&e))),
            };
            v.insert(f);
            // A new segment: the WAL may have grown past max_wal_size's trigger
            // (PostgreSQL's XLogWrite checks at each segment's end).
            self.checkpointer_latch.wake();
        }
        let f = &st.files[&seg];
        report_wait_start(WaitEvent::Io("WALWrite"));
        let r = f.write_all_at(buf, off);
        report_wait_end();
        if let Err(e) = r {
            let name = segment_file_name(TIMELINE, seg, self.seg_size);
            wal_panic(format!(
                "could not write to log file {name} at offset {off}, length {}: {}",
                buf.len(),
                strerror(&e)
            ));
        }
        st.dirty.insert(seg);
        self.stats.writes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Creates a segment file filled with zeroes (so that later fdatasyncs need not
    /// update block allocation metadata), under a temporary name renamed into place:
    /// a crash never leaves a short segment behind.
    fn create_segment(&self, path: &Path) -> Result<File> {
        let tmp = self.wal_dir.join(format!("xlogtemp.{}", std::process::id()));
        let f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)
            .map_err(io_err(tmp.display()))?;
        let zeros = vec![0u8; (1u64 << 20).min(self.seg_size) as usize];
        let mut off = 0;
        while off < self.seg_size {
            f.write_all_at(&zeros, off).map_err(io_err(tmp.display()))?;
            off += zeros.len() as u64;
        }
        if self.opts.fsync {
            f.sync_all().map_err(io_err(tmp.display()))?;
        }
        drop(f);
        fs::rename(&tmp, path).map_err(io_err(path.display()))?;
        if self.opts.fsync {
            fsync_dir(&self.wal_dir)?;
        }
        OpenOptions::new().read(true).write(true).open(path).map_err(io_err(path.display()))
    }

    /// Makes the WAL durable up to `upto` (PostgreSQL's XLogFlush). Group flush: the
    /// one that gets WALWrite writes and fsyncs everything complete so far, which
    /// releases every waiter whose LSN it covers.
    ///
    /// During recovery (before `recover` has finished) this returns at once: the WAL
    /// being replayed is already on disk (the buffer manager may write pages that
    /// redo changed).
    pub fn flush(&self, upto: Lsn) -> Result<()> {
        let upto = upto.0;
        if self.flushed.load(Ordering::Acquire) >= upto {
            return self.check_poison();
        }
        if self.run_state() == RunState::Recovery {
            return Ok(());
        }
        self.stats.flush_requests.fetch_add(1, Ordering::Relaxed);
        self.active_flushers.fetch_add(1, Ordering::SeqCst);
        let r = self.flush_slow(upto);
        self.active_flushers.fetch_sub(1, Ordering::SeqCst);
        r?;
        self.check_poison()
    }

    fn flush_slow(&self, upto: u64) -> Result<()> {
        loop {
            if self.flushed.load(Ordering::Acquire) >= upto {
                self.stats.group_joins.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
            // Wait for insertions below our LSN first, holding nothing (README step 4).
            let finished = self.wait_insertions(upto);
            if finished < upto {
                return Err(Error::internal(format!(
                    "WAL flush request {} is past the insert position {}",
                    Lsn(upto),
                    self.insert_position()
                )));
            }
            let Some(_w) = self.write_lock.acquire_or_wait() else {
                // Someone else flushed meanwhile: maybe far enough for us.
                continue;
            };
            if self.flushed.load(Ordering::Acquire) >= upto {
                self.stats.group_joins.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
            if self.opts.commit_delay_us > 0 && self.opts.fsync && self.siblings() >= self.opts.commit_siblings {
                // Give other committers time to insert their commit records, so that
                // this fsync covers them too.
                report_wait_start(WaitEvent::Timeout("CommitDelay"));
                std::thread::sleep(Duration::from_micros(self.opts.commit_delay_us));
                report_wait_end();
                self.stats.commit_delays.fetch_add(1, Ordering::Relaxed);
            }
            // Sweep in everything already complete (never wait here: an inserter may
            // need WALWrite to make progress).
            let target = finished.max(self.insertions_finished_nowait());
            let mut st = lock(&self.writer);
            return self.write_locked(&mut st, target, true);
        }
    }

    fn check_poison(&self) -> Result<()> {
        if self.poisoned.load(Ordering::Acquire) {
            return Err(Error::internal("WAL insertion failed earlier; the WAL cannot continue"));
        }
        Ok(())
    }

    fn siblings(&self) -> usize {
        let hook = self.siblings.read().unwrap_or_else(|e| e.into_inner()).clone();
        match hook {
            Some(f) => f(),
            None => self.active_flushers.load(Ordering::Relaxed).saturating_sub(1),
        }
    }

    /// Sets how `commit_delay` counts other active transactions (PostgreSQL's
    /// MinimumActiveBackends(commit_siblings)); by default: other backends currently
    /// in `flush`.
    pub fn set_active_backends_fn(&self, f: Arc<dyn Fn() -> usize + Send + Sync>) {
        *self.siblings.write().unwrap_or_else(|e| e.into_inner()) = Some(f);
    }

    /// A transaction's commit: with `synchronous` (synchronous_commit=on) flush to
    /// `end` before returning; otherwise just tell the WAL writer.
    pub fn commit(&self, end: Lsn, synchronous: bool) -> Result<()> {
        if synchronous {
            self.flush(end)
        } else {
            self.async_request.fetch_max(end.0, Ordering::AcqRel);
            self.walwriter_latch.wake();
            Ok(())
        }
    }

    /// What the WAL writer does each round: flush everything inserted and complete,
    /// if an asynchronous commit or anything else is waiting. Returns whether it
    /// flushed.
    pub fn background_flush(&self) -> Result<bool> {
        if self.run_state() != RunState::Production {
            return Ok(false);
        }
        let target = self.insertions_finished_nowait();
        if self.flushed.load(Ordering::Acquire) >= target {
            return Ok(false);
        }
        self.flush(Lsn(target))?;
        Ok(true)
    }

    /// Whether the WAL writer hibernates now (tests, diagnostics).
    pub fn walwriter_hibernating(&self) -> bool {
        self.walwriter_latch.hibernating()
    }

    /// The settings this WAL runs with.
    pub fn options(&self) -> &WalOptions {
        &self.opts
    }

    /// End of the reserved WAL: where the next record will go.
    pub fn insert_position(&self) -> Lsn {
        bytepos_to_end_lsn(self.pos.current())
    }

    /// WAL written to the kernel up to here.
    pub fn written_upto(&self) -> Lsn {
        Lsn(self.written.load(Ordering::Acquire))
    }

    /// Registers `latch` to be set each time the flushed position advances (a
    /// walsender waiting for WAL to send). The caller resets it, then reads
    /// [`Wal::flushed_upto`], and sleeps on it only when nothing new was there
    /// (`latch`'s protocol); [`Wal::unwatch_flush`] when done.
    pub fn watch_flush(&self, latch: &Arc<crate::latch::Latch>) {
        let mut g = self.flush_latches.lock().unwrap_or_else(|e| e.into_inner());
        g.push(latch.clone());
        // SeqCst, paired with the fence in `wake_flush_watchers`: a flush that
        // misses this count comes before the watcher's first read of `flushed`.
        self.flush_watchers.store(g.len(), Ordering::SeqCst);
    }

    /// Ends a [`Wal::watch_flush`].
    pub fn unwatch_flush(&self, latch: &Arc<crate::latch::Latch>) {
        let mut g = self.flush_latches.lock().unwrap_or_else(|e| e.into_inner());
        g.retain(|l| !Arc::ptr_eq(l, latch));
        self.flush_watchers.store(g.len(), Ordering::SeqCst);
    }

    /// After `flushed` advanced: sets every watcher's latch.
    fn wake_flush_watchers(&self) {
        std::sync::atomic::fence(Ordering::SeqCst);
        if self.flush_watchers.load(Ordering::Relaxed) == 0 {
            return;
        }
        for l in self.flush_latches.lock().unwrap_or_else(|e| e.into_inner()).iter() {
            l.set();
        }
    }

    /// WAL durable up to here.
    pub fn flushed_upto(&self) -> Lsn {
        Lsn(self.flushed.load(Ordering::Acquire))
    }

    /// Redo pointer of the last checkpoint: a block reference needs a full-page image
    /// if full_page_writes is on and the page's LSN is <= this.
    pub fn redo_ptr(&self) -> Lsn {
        Lsn(self.redo_ptr.load(Ordering::Acquire))
    }

    pub fn full_page_writes(&self) -> bool {
        self.full_page_writes.load(Ordering::Acquire)
    }

    /// Whether a block reference logs an image when its page's LSN is <= the redo
    /// pointer: full_page_writes, or an online backup in progress.
    fn page_writes_forced_or_on(&self) -> bool {
        self.full_page_writes.load(Ordering::Acquire) || self.force_page_writes.load(Ordering::Acquire)
    }

    /// Registers an online backup (step 1 of `replication::backup`): from now
    /// on full-page images are logged whatever full_page_writes says. Takes
    /// every insertion slot, so no record reserved after this was assembled
    /// without the images (an inserter re-checks under its slot).
    pub fn force_page_writes_for_backup(&self) {
        let _ck = lock(&self.ckpt_lock);
        let guards = self.lock_all_slots();
        lock(&self.backups).forcing += 1;
        self.force_page_writes.store(true, Ordering::Release);
        drop(guards);
    }

    /// Step 3 of a backup start, after its checkpoint: under the checkpoint lock,
    /// reads the last checkpoint (record LSN, redo pointer) from the control file
    /// and records the redo pointer as a running backup's start, so no checkpoint
    /// removes a segment from its segment on until `end_backup(start)`. Returns
    /// (checkpoint, redo).
    pub fn register_backup(&self) -> (Lsn, Lsn) {
        let _ck = lock(&self.ckpt_lock);
        let (ckpt, redo) = {
            let c = lock(&self.control);
            (c.checkpoint, c.redo)
        };
        lock(&self.backups).starts.push(redo);
        (ckpt, redo)
    }

    /// Ends a backup registered with `register_backup` (or only forced with
    /// `force_page_writes_for_backup`, `start = None`): its WAL is no longer
    /// held, and images are no longer forced once no backup runs.
    pub fn end_backup(&self, start: Option<Lsn>) {
        let _ck = lock(&self.ckpt_lock);
        let guards = self.lock_all_slots();
        let mut b = lock(&self.backups);
        if let Some(start) = start {
            if let Some(i) = b.starts.iter().position(|l| *l == start) {
                b.starts.remove(i);
            }
        }
        b.forcing = b.forcing.saturating_sub(1);
        self.force_page_writes.store(b.forcing > 0, Ordering::Release);
        drop(b);
        drop(guards);
    }

    /// Changes full_page_writes (takes every insertion slot, like a checkpoint start).
    pub fn set_full_page_writes(&self, on: bool) {
        let guards = self.lock_all_slots();
        self.full_page_writes.store(on, Ordering::Release);
        drop(guards);
    }

    pub fn stats(&self) -> WalStats {
        let s = &self.stats;
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        WalStats {
            records: g(&s.records),
            fpi: g(&s.fpi),
            bytes: g(&s.bytes),
            writes: g(&s.writes),
            bytes_written: g(&s.bytes_written),
            fsyncs: g(&s.fsyncs),
            flush_requests: g(&s.flush_requests),
            group_joins: g(&s.group_joins),
            buffer_full_waits: g(&s.buffer_full_waits),
            commit_delays: g(&s.commit_delays),
            checkpoints: g(&s.checkpoints),
        }
    }

    /// The counters since the last [`Wal::reset_stats`] and the time of that reset
    /// (pg_stat_wal and its `stats_reset`).
    pub fn stats_since_reset(&self) -> (WalStats, std::time::SystemTime) {
        let (base, at) = *self.reset.lock().unwrap_or_else(|e| e.into_inner());
        (self.stats().minus(&base), at)
    }

    /// pg_stat_reset_shared('wal'): the counters seen by [`Wal::stats_since_reset`]
    /// start again from zero now.
    pub fn reset_stats(&self) {
        let now = self.stats();
        *self.reset.lock().unwrap_or_else(|e| e.into_inner()) = (now, std::time::SystemTime::now());
    }

    /// Segment file size of this cluster.
    pub fn segment_size(&self) -> u64 {
        self.seg_size
    }

    pub fn wal_dir(&self) -> &Path {
        &self.wal_dir
    }

    /// A copy of the control file as last written.
    pub fn control_file(&self) -> ControlFile {
        *lock(&self.control)
    }

    // ----------------------------------------------------------------------------
    // Checkpoints
    // ----------------------------------------------------------------------------

    fn lock_all_slots(&self) -> AllSlots<'_> {
        {
            let _g = lock(&self.gate);
            self.all_slots_wanted.fetch_add(1, Ordering::SeqCst);
        }
        // In slot order (README, lock ordering). u64::MAX: we insert nothing, so
        // nobody waiting for insertions waits for us.
        let guards = self
            .slots
            .iter()
            .map(|s| {
                let g = s.lock.exclusive();
                s.inserting_at.store(u64::MAX, Ordering::SeqCst);
                SlotGuard { slot: s, _lock: g }
            })
            .collect();
        AllSlots { wal: self, guards }
    }

    /// Starts a checkpoint: the current insert position becomes the redo pointer; from
    /// now on, the first change of a page after it logs a full-page image. Then the
    /// caller writes out all dirty buffers and syncs the relation files, and calls
    /// `finish_checkpoint(redo, info)`.
    pub fn begin_checkpoint(&self) -> Result<Lsn> {
        self.check_usable()?;
        let guards = self.lock_all_slots();
        let redo = bytepos_to_lsn(self.pos.current());
        self.redo_ptr.store(redo.0, Ordering::Release);
        drop(guards);
        Ok(redo)
    }

    fn write_checkpoint_record(&self, redo: Lsn, info: CheckpointInfo, shutdown: bool) -> Result<Lsn> {
        let ck = CheckpointRecord {
            redo,
            timeline: TIMELINE,
            full_page_writes: self.full_page_writes(),
            time: now_secs(),
            info,
        };
        let mut rb =
            RecordBuilder::new(RmgrId::Xlog, if shutdown { XLOG_CHECKPOINT_SHUTDOWN } else { XLOG_CHECKPOINT_ONLINE });
        let body = ck.encode();
        rb.append_main_data(&body);
        let (start, end) = self.insert_with_start(&rb)?;
        self.flush(end)?;
        Ok(start)
    }

    /// Ends a checkpoint begun at `redo`: inserts the checkpoint record, flushes it,
    /// records it in the control file, and removes WAL segments before the redo
    /// pointer's segment. Returns the checkpoint record's LSN.
    pub fn finish_checkpoint(&self, redo: Lsn, info: CheckpointInfo) -> Result<Lsn> {
        let _ck = lock(&self.ckpt_lock);
        let start = self.write_checkpoint_record(redo, info, false)?;
        self.record_checkpoint(start, redo, info, DbState::InProduction)?;
        Ok(start)
    }

    /// Shutdown checkpoint: the caller has stopped all backends and written out all
    /// buffers. After this, the control file says "shut down" and the next `open`
    /// needs no redo. The WAL accepts no more insertions.
    pub fn shutdown(&self, info: CheckpointInfo) -> Result<Lsn> {
        let _ck = lock(&self.ckpt_lock);
        let redo = self.begin_checkpoint()?;
        let start = self.write_checkpoint_record(redo, info, true)?;
        self.set_state(RunState::ShutDown);
        self.record_checkpoint(start, redo, info, DbState::ShutDown)?;
        Ok(start)
    }

    fn record_checkpoint(&self, start: Lsn, redo: Lsn, info: CheckpointInfo, state: DbState) -> Result<()> {
        {
            let mut c = lock(&self.control);
            c.state = state;
            c.checkpoint = start;
            c.redo = redo;
            c.info = info;
            c.checkpoint_time = now_secs();
            c.time = c.checkpoint_time;
            c.write(&self.datadir, self.opts.fsync)?;
        }
        {
            let mut t = lock(&self.ckpt);
            t.last_time = Instant::now();
            t.last_redo = redo;
            t.last_end = self.insert_position();
        }
        self.stats.checkpoints.fetch_add(1, Ordering::Relaxed);
        self.remove_old_segments(segno(redo.0, self.seg_size))
    }

    /// The oldest LSN replication slots need (0: none): segments from its segment
    /// on are kept by checkpoints. Set by the slot manager whenever the minimum of
    /// its slots' restart_lsn changes.
    pub fn set_keep_floor(&self, lsn: Lsn) {
        // SeqCst: a removal that starts after this store must see it (a checkpoint
        // reads it under ckpt_lock; `reserve_wal` stores under the same lock).
        self.keep_floor.store(lsn.0, Ordering::SeqCst);
    }

    /// Reserves WAL for a new replication slot: calls `f` with the redo pointer of
    /// the last checkpoint (every segment from its segment on still exists) while
    /// no segment can be removed, so that `f` can lower the keep floor to it before
    /// the next checkpoint's removal (PostgreSQL's ReplicationSlotReserveWal, which
    /// retries instead).
    pub fn reserve_wal<R>(&self, f: impl FnOnce(Lsn) -> R) -> R {
        let _ck = lock(&self.ckpt_lock);
        let redo = lock(&self.control).redo;
        f(redo)
    }

    /// The oldest segment number still in pg_wal: the redo pointer's, or the keep
    /// floor's when it is older (what `remove_old_segments` keeps).
    pub fn oldest_kept_segno(&self) -> u64 {
        let redo = lock(&self.control).redo;
        let floor = self.keep_floor.load(Ordering::SeqCst);
        let s = segno(redo.0, self.seg_size);
        if floor > 0 {
            s.min(segno(floor, self.seg_size))
        } else {
            s
        }
    }

    /// Reads WAL bytes at `start` into `buf`, never past the flushed position:
    /// returns how many bytes were read (0 when `start` is at or past it). Reads
    /// at most up to the end of `start`'s segment. The bytes are the segment
    /// file's, as a walsender streams them. A segment already removed is 58P01
    /// `requested WAL segment NAME has already been removed`.
    pub fn read_flushed(&self, start: Lsn, buf: &mut [u8]) -> Result<usize> {
        let flushed = self.flushed.load(Ordering::Acquire);
        if start.0 >= flushed || buf.is_empty() {
            return Ok(0);
        }
        let seg = segno(start.0, self.seg_size);
        let seg_end = (seg + 1) * self.seg_size;
        let n = (flushed.min(seg_end) - start.0).min(buf.len() as u64) as usize;
        let name = segment_file_name(TIMELINE, seg, self.seg_size);
        let path = self.wal_dir.join(&name);
        let f = match fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::user(
                    SqlState::UNDEFINED_FILE,
                    format!("requested WAL segment {name} has already been removed"),
                ))
            }
            Err(e) => return Err(Error::io(path.display(), e)),
        };
        f.read_exact_at(&mut buf[..n], start.0 % self.seg_size).map_err(io_err(path.display()))?;
        Ok(n)
    }

    /// Removes segment files before segment `keep_from` (they hold only WAL before the
    /// redo pointer, which no recovery needs), and before the keep floor of the
    /// replication slots.
    fn remove_old_segments(&self, keep_from: u64) -> Result<()> {
        let floor = self.keep_floor.load(Ordering::SeqCst);
        let mut keep_from = if floor > 0 { keep_from.min(segno(floor, self.seg_size)) } else { keep_from };
        if let Some(b) = lock(&self.backups).starts.iter().min() {
            keep_from = keep_from.min(segno(b.0, self.seg_size));
        }
        if self.opts.wal_keep_size > 0 {
            let pos = self.insert_position().0;
            keep_from = keep_from.min(segno(pos.saturating_sub(self.opts.wal_keep_size), self.seg_size));
        }
        let rd = fs::read_dir(&self.wal_dir).map_err(io_err(self.wal_dir.display()))?;
        let mut removed = false;
        for ent in rd {
            let ent = ent.map_err(io_err(self.wal_dir.display()))?;
            let name = ent.file_name();
            let Some(name) = name.to_str() else { continue };
            if let Some((_, seg)) = parse_segment_file_name(name, self.seg_size) {
                if seg < keep_from {
                    // Never a segment the archiver has not copied yet.
                    if self.opts.archive_mode && !crate::replication::archive::archived_or_mark(&self.wal_dir, name) {
                        continue;
                    }
                    fs::remove_file(ent.path()).map_err(io_err(name))?;
                    crate::replication::archive::forget(&self.wal_dir, name);
                    removed = true;
                }
            }
        }
        if removed && self.opts.fsync {
            fsync_dir(&self.wal_dir)?;
        }
        Ok(())
    }

    /// Whether a checkpoint is due: `checkpoint_timeout` passed since the last one
    /// (and WAL was written since), or the WAL since its redo pointer reached
    /// max_wal_size / (1 + checkpoint_completion_target 0.9), as in PostgreSQL.
    /// Whether checkpoint_timeout has passed since the last checkpoint with
    /// WAL written since (what makes a checkpoint "timed" in pg_stat_bgwriter).
    pub fn checkpoint_timed_due(&self, now: Instant) -> bool {
        let t = lock(&self.ckpt);
        self.insert_position() > t.last_end && now.saturating_duration_since(t.last_time) >= self.opts.checkpoint_timeout
    }

    pub fn checkpoint_needed(&self, now: Instant) -> bool {
        let t = lock(&self.ckpt);
        let pos = self.insert_position();
        let idle = pos <= t.last_end;
        if !idle && now.saturating_duration_since(t.last_time) >= self.opts.checkpoint_timeout {
            return true;
        }
        pos.0.saturating_sub(t.last_redo.0) >= self.opts.max_wal_size * 10 / 19
    }
}

impl WalFlush for Wal {
    fn flush_wal(&self, upto: Lsn) -> Result<()> {
        self.flush(upto)
    }
}
