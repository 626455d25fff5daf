//! The engine instance: what PostgreSQL keeps in shared memory plus its auxiliary
//! processes, for one data directory.
//!
//! [`Engine::open`] initializes an empty data directory (initdb), or opens an existing
//! one and runs crash recovery (redo from the last checkpoint through every resource
//! manager), then takes an end-of-recovery checkpoint and starts the background
//! writer, the WAL writer and the checkpointer. [`Engine::shutdown`] stops them and
//! writes a shutdown checkpoint, so the next start needs no redo.
//!
//! A connection is a *backend* ([`Backend`]): it has a backend number, a transaction
//! manager, and lock-manager state. Dropping a backend aborts its open transaction and
//! releases its slot.
//!
//! The data directory:
//! ```text
//! PG_VERSION          "15"
//! global/pg_control   control file (wal::control)
//! pg_wal/             WAL segments (wal)
//! pg_xact/            commit log (txn::clog)
//! base/<db>/<rel>...  relation files (storage::smgr)
//! ```
//!
//! Startup order: WAL open -> storage manager -> buffer pool -> transaction layer (next
//! xid from the checkpoint) -> redo -> end-of-recovery checkpoint -> workers.
//! Shutdown order: workers stop -> buffers flushed -> clog flushed -> files synced ->
//! shutdown checkpoint record.

use crate::buffer::{BgWriter, BufferPool};
use crate::config::Settings;
use crate::error::{Error, Result, SqlState};
use crate::heap::heapam;
use crate::lmgr::lock::LockManager;
use crate::pgstat::BackendId;
use crate::storage::smgr::Smgr;
use crate::storage::{Lsn, Oid, RelFileLocator, WalFlush};
use crate::txn::xid::{xid_follows, xid_is_normal, FullTransactionId};
use crate::txn::{TransactionManager, TxnConfig, TxnRmgr, TxnShared, XactLocks, XactWal};
use crate::wal::{
    self, BackgroundWorker, CheckpointInfo, DecodedRecord, RecordBuilder, RmgrId, Wal, WalOptions,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod dbcommands;

/// Tablespace of the default tablespace (pg_default), as in PostgreSQL.
pub const DEFAULT_TABLESPACE_OID: Oid = 1663;
/// OID of the `postgres` database created by initdb (PostgreSQL 15 gives it 5).
pub const POSTGRES_DATABASE_OID: Oid = 5;
/// First OID handed to user objects (PostgreSQL's FirstNormalObjectId).
pub const FIRST_NORMAL_OBJECT_ID: Oid = 16384;

/// Auxiliary slots beyond max_connections (checkpointer, bgwriter, recovery...).
const AUX_BACKENDS: usize = 8;

/// Info codes of the Smgr resource manager.
const XLOG_SMGR_CREATE: u8 = 0x10;
/// Xlog record: OIDs below the u32 in its main data may have been handed out
/// (PostgreSQL's XLOG_NEXTOID).
const XLOG_NEXTOID: u8 = 0x30;
/// How many OIDs one XLOG_NEXTOID record covers ahead (PostgreSQL's VAR_OID_PREFETCH).
const OID_PREFETCH: u32 = 8192;

/// One open data directory.
pub struct Engine {
    settings: Settings,
    /// The WAL archiver (replication::archive): pg_stat_archiver, reloads.
    pub archiver: Arc<crate::replication::archive::Archiver>,
    datadir: PathBuf,
    pub smgr: Arc<Smgr>,
    pub wal: Arc<Wal>,
    pub buffers: Arc<BufferPool>,
    pub txn: Arc<TxnShared>,
    pub locks: Arc<LockManager>,
    /// Every backend's pg_stat_activity slot (pgstat::activity), by BackendId.
    pub activity: crate::pgstat::activity::ActivityTable,
    /// The wait-event sampler (pgstat::sampler): history and profile.
    pub sampler: Arc<crate::pgstat::sampler::WaitSampler>,
    /// Per-statement statistics (pg_stat_statements; pgstat::statements).
    pub statements: crate::pgstat::statements::StatementsTable,
    /// Shared relation-extension state of the heap (batches of extra pages).
    pub(crate) heap_space: heapam::SpaceMap,
    /// The chunk indexes of TOAST relations opened so far (heap::toastam).
    pub(crate) toast_indexes: crate::heap::toastam::ToastIndexes,
    /// The metapage caches and insert counters of hash indexes (hash::metacache).
    pub(crate) hash_caches: crate::hash::CacheRegistry,
    /// Per-relation tuple counters and the autovacuum launcher (heap::autovacuum).
    pub(crate) pgstat_tables: crate::heap::autovacuum::TableStats,
    /// Next OID to assign.
    next_oid: AtomicU32,
    /// OIDs below this may be handed out without a new WAL record: an
    /// XLOG_NEXTOID record (or a checkpoint) covering them is in the WAL, so
    /// recovery never hands them out again. Protected by its mutex (taken once
    /// per `OID_PREFETCH` OIDs).
    oid_logged_until: Mutex<u32>,
    /// Free backend numbers. Protected by its mutex.
    free_backends: Mutex<Vec<u32>>,
    /// Serializes checkpoints (the checkpointer thread, CHECKPOINT, shutdown).
    checkpoint_lock: Mutex<()>,
    /// Serializes `ALTER SYSTEM`'s read-modify-write of postgresql.auto.conf
    /// (PostgreSQL's AutoFileLock).
    pub auto_conf_lock: Mutex<()>,
    workers: Mutex<Workers>,
    /// Backend slots taken by auxiliary threads (`aux_start`), freed when they stop.
    aux_ids: Mutex<Vec<u32>>,
    shut_down: AtomicBool,
    /// The database each backend is connected to (dbcommands).
    databases: dbcommands::DatabaseRegistry,
    /// LISTEN / NOTIFY's listeners and pending notifications (crate::notify).
    pub notify: crate::notify::NotifyQueue,
    /// Physical replication slots (pg_replslot), which hold WAL back from removal.
    pub slots: Arc<crate::replication::SlotManager>,
    /// The streaming walsenders (pg_stat_replication).
    pub walsenders: Arc<crate::replication::walsnd::WalSenders>,
}

#[derive(Default)]
struct Workers {
    bgwriter: Option<BgWriter>,
    wal_writer: Option<BackgroundWorker>,
    checkpointer: Option<BackgroundWorker>,
}

/// What recovery did, for the server log.
#[derive(Clone, Debug, Default)]
pub struct StartupReport {
    pub initialized: bool,
    pub recovered: bool,
    pub redo_records: u64,
    pub redo_start: Lsn,
    pub redo_end: Lsn,
    pub end_reason: String,
    /// Stray temporary files (`base/pgsql_tmp/pgsql_tmp*`) removed at start.
    pub temp_files_removed: usize,
}

/// The buffer pool's view of the WAL (*WAL before data*). During redo every record
/// being replayed was read from disk, so it is durable already; the WAL is not yet
/// open for insertion, and a flush request is satisfied at once (PostgreSQL advances
/// minRecoveryPoint there instead; with crash recovery only, there is nothing to do).
struct BufferWalFlush {
    wal: Arc<Wal>,
    in_recovery: AtomicBool,
}

impl WalFlush for BufferWalFlush {
    fn flush_wal(&self, upto: Lsn) -> Result<()> {
        if self.in_recovery.load(Ordering::Acquire) {
            return Ok(());
        }
        self.wal.flush(upto)
    }
}

/// The transaction layer's WAL, over the real WAL.
struct XactWalAdapter(Arc<Wal>);

impl XactWal for XactWalAdapter {
    fn insert(&self, rmgr: TxnRmgr, payload: &[u8]) -> Result<Lsn> {
        let id = match rmgr {
            TxnRmgr::Xact => RmgrId::Xact,
            TxnRmgr::Clog => RmgrId::Clog,
            TxnRmgr::MultiXact => RmgrId::MultiXact,
        };
        let mut rb = RecordBuilder::new(id, 0);
        rb.append_main_data(payload);
        self.0.insert(&rb)
    }

    fn flush(&self, upto: Lsn) -> Result<()> {
        // A commit: group flush, with commit_delay / commit_siblings.
        self.0.commit(upto, true)
    }

    fn flushed_upto(&self) -> Lsn {
        self.0.flushed_upto()
    }
}

/// The transaction layer's hook to the heavyweight lock manager.
struct XactLocksAdapter(Arc<LockManager>);

impl XactLocks for XactLocksAdapter {
    fn xact_started(&self, backend: u32) {
        // Cannot fail for a registered backend: it only touches its own slots.
        if let Err(e) = self.0.virtual_xact_begin(BackendId(backend)) {
            panic!("could not lock own virtual transaction id: {e}");
        }
    }

    fn xid_assigned(&self, backend: u32, xid: u32, level: u32) {
        // Cannot fail for a registered backend: the lock is new and uncontended.
        if let Err(e) = self.0.xact_lock_table_insert_at(BackendId(backend), xid, level) {
            panic!("could not lock own transaction id {xid}: {e}");
        }
    }

    fn subxact_aborted(&self, backend: u32, xid: u32) {
        let _ = self.0.xact_lock_table_delete(BackendId(backend), xid);
    }

    fn subxact_started(&self, backend: u32, level: u32) {
        let _ = self.0.subxact_begin(BackendId(backend), level);
    }

    fn subxact_committed(&self, backend: u32, level: u32) {
        let _ = self.0.subxact_commit(BackendId(backend), level);
    }

    fn subxact_rolled_back(&self, backend: u32, level: u32) {
        let _ = self.0.subxact_abort(BackendId(backend), level);
    }

    fn take_cancel(&self, backend: u32) -> bool {
        self.0.take_cancel(BackendId(backend)).unwrap_or(false)
    }

    fn vxid(&self, backend: u32) -> (i32, String) {
        self.0.proc_vxid(BackendId(backend))
    }

    fn xact_ended(&self, backend: u32, _top_xid: u32, _committed: bool) {
        let _ = self.0.virtual_xact_end(BackendId(backend));
        let _ = self.0.release_all(BackendId(backend), true);
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |e| Error::io(path.display(), e)
}

impl Engine {
    /// Opens (initializing if empty) the data directory and recovers it.
    pub fn open(datadir: impl Into<PathBuf>, settings: Settings) -> Result<(Arc<Engine>, StartupReport)> {
        let datadir: PathBuf = datadir.into();
        let mut report = StartupReport::default();
        std::fs::create_dir_all(&datadir).map_err(io_err(&datadir))?;
        let version_file = datadir.join("PG_VERSION");
        if !wal::ControlFile::path(&datadir).exists() {
            if datadir.join("pg_wal").exists() {
                return Err(Error::corrupt(format!(
                    "data directory \"{}\" has a pg_wal but no global/pg_control",
                    datadir.display()
                )));
            }
            let info = CheckpointInfo {
                next_xid: FullTransactionId::FIRST_NORMAL.0,
                next_oid: FIRST_NORMAL_OBJECT_ID,
                ..Default::default()
            };
            Wal::init(&datadir, &WalOptions::from_settings(&settings), info)?;
            for d in ["pg_xact", "base"] {
                let p = datadir.join(d);
                std::fs::create_dir_all(&p).map_err(io_err(&p))?;
            }
            let db = datadir.join(format!("base/{POSTGRES_DATABASE_OID}"));
            std::fs::create_dir_all(&db).map_err(io_err(&db))?;
            std::fs::write(&version_file, "15\n").map_err(io_err(&version_file))?;
            report.initialized = true;
        } else {
            match std::fs::read_to_string(&version_file) {
                Ok(v) if v.trim() == "15" => {}
                Ok(v) => {
                    return Err(Error::user(
                        SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
                        format!("database files are incompatible with server: version {} vs 15", v.trim()),
                    ))
                }
                Err(e) => return Err(Error::io(version_file.display(), e)),
            }
        }

        // Temporary files left by a crash (PostgreSQL's RemovePgTempFiles): no
        // query runs yet, so every one is stray.
        report.temp_files_removed = crate::storage::buffile::remove_stray(&datadir)?;
        let max_backends = settings.max_connections + AUX_BACKENDS;
        // Before any LWLock is made: they take the process-wide fairness default.
        crate::lmgr::lwlock::set_default_fairness(settings.lwlock_fair);
        if settings.lwlock_stats {
            crate::pgstat::lwlock_stats::enable_acquisition_counts();
        }
        // The status array is process-wide and sized once, by the first engine: at
        // least 1024 slots (4 kB), so that a later engine in the same process (tests
        // open several) with more backends still finds a slot for each.
        crate::pgstat::wait_event::init_backend_status(max_backends.max(1024));
        let (wal, start) = Wal::open(&datadir, &settings)?;
        let wal = Arc::new(wal);
        let smgr = Arc::new(Smgr::new(&datadir, settings.fsync)?);
        let wal_flush = Arc::new(BufferWalFlush { wal: wal.clone(), in_recovery: AtomicBool::new(start.needed) });
        let buffers = BufferPool::new(&settings, smgr.clone(), wal_flush.clone() as Arc<dyn WalFlush>);
        let locks = Arc::new(LockManager::new(&settings, max_backends));
        let ck = start.checkpoint_record.info;
        let mut cfg = TxnConfig::new(datadir.join("pg_xact"), max_backends);
        cfg.synchronous_commit = settings.synchronous_commit;
        cfg.pred = crate::lmgr::predicate::PredConfig {
            per_transaction: settings.max_pred_locks_per_transaction,
            per_relation: settings.max_pred_locks_per_relation,
            per_page: settings.max_pred_locks_per_page,
        };
        let txn = TxnShared::open(
            &cfg,
            FullTransactionId(ck.next_xid.max(FullTransactionId::FIRST_NORMAL.0)),
            Arc::new(XactWalAdapter(wal.clone())),
            Some(Arc::new(XactLocksAdapter(locks.clone()))),
        )?;
        let activity = crate::pgstat::activity::ActivityTable::new(max_backends, crate::pgstat::activity::QUERY_SIZE);
        let sampler = Arc::new(crate::pgstat::sampler::WaitSampler::new(settings.wait_sampling_period_ms, activity.latch().clone()));
        let slots = Arc::new(crate::replication::SlotManager::open(
            &datadir,
            settings.max_replication_slots,
            settings.fsync,
            wal.clone(),
        )?);
        let archiver = crate::replication::archive::Archiver::new(&datadir, &settings, wal.archiver_notify.clone());
        let engine = Arc::new(Engine {
            archiver,
            slots,
            walsenders: Default::default(),
            datadir: datadir.clone(),
            smgr,
            wal,
            buffers,
            txn,
            locks,
            activity,
            sampler,
            statements: crate::pgstat::statements::StatementsTable::new(settings.pg_stat_statements_max),
            heap_space: heapam::SpaceMap::default(),
            toast_indexes: Default::default(),
            hash_caches: crate::hash::CacheRegistry::default(),
            pgstat_tables: Default::default(),
            next_oid: AtomicU32::new(ck.next_oid.max(FIRST_NORMAL_OBJECT_ID)),
            oid_logged_until: Mutex::new(0),
            free_backends: Mutex::new((0..max_backends as u32).rev().collect()),
            checkpoint_lock: Mutex::new(()),
            auto_conf_lock: Mutex::new(()),
            workers: Mutex::new(Workers::default()),
            aux_ids: Mutex::new(Vec::new()),
            shut_down: AtomicBool::new(false),
            databases: Default::default(),
            notify: Default::default(),
            settings,
        });

        {
            // Pending deletes (txn::pending_delete): buffers first, then the files.
            let (buffers, smgr) = (engine.buffers.clone(), engine.smgr.clone());
            engine.txn.set_file_dropper(Box::new(move |rel| {
                buffers.drop_relation_buffers(rel);
                let _ = smgr.unlink(rel, None);
            }));
        }
        if start.needed {
            engine.recover(&start, &mut report, &wal_flush.in_recovery)?;
        }
        // The statistics of the last clean shutdown; after a crash they are
        // reset (the file goes either way).
        crate::pgstat::persist::load(&engine, !start.needed);
        engine.start_workers();
        crate::heap::autovacuum::start_launcher(&engine);
        Ok((engine, report))
    }

    /// Crash recovery: replays every record from the checkpoint's redo pointer, then
    /// makes the result durable with a checkpoint.
    fn recover(
        self: &Arc<Self>,
        start: &wal::RecoveryStart,
        report: &mut StartupReport,
        in_recovery: &AtomicBool,
    ) -> Result<()> {
        self.txn.begin_recovery();
        let mut max_xid = FullTransactionId(start.checkpoint_record.info.next_xid).xid();
        let mut next_oid = start.checkpoint_record.info.next_oid;
        let mut redo = |rec: &DecodedRecord, _end: Lsn| -> Result<()> {
            if xid_is_normal(rec.xid) && xid_follows(rec.xid.wrapping_add(1), max_xid) {
                max_xid = rec.xid.wrapping_add(1);
            }
            match rec.rmgr {
                RmgrId::Xlog if rec.info == XLOG_NEXTOID => {
                    let b: [u8; 4] = rec.main_data.get(..4).and_then(|b| b.try_into().ok()).ok_or_else(|| {
                        Error::corrupt(format!("XLOG_NEXTOID record at {} too short", rec.lsn))
                    })?;
                    next_oid = next_oid.max(u32::from_le_bytes(b));
                    Ok(())
                }
                RmgrId::Xlog if rec.info != wal::XLOG_CHECKPOINT_ONLINE && rec.info != wal::XLOG_CHECKPOINT_SHUTDOWN => Ok(()),
                RmgrId::Xlog => {
                    if let Ok(ck) = wal::CheckpointRecord::decode(&rec.main_data) {
                        next_oid = next_oid.max(ck.info.next_oid);
                    }
                    Ok(())
                }
                RmgrId::Xact => self.txn.redo_xact(&rec.main_data),
                RmgrId::Clog => self.txn.clog.redo(&rec.main_data),
                RmgrId::MultiXact => self.txn.multixacts.redo(&rec.main_data),
                RmgrId::Smgr => self.redo_smgr(rec),
                RmgrId::Heap => heapam::redo(self, rec),
                RmgrId::Btree => crate::nbtree::redo(self, rec),
                RmgrId::Hash => crate::hash::redo(self, rec),
                RmgrId::Database => self.redo_dbase(rec),
                other => Err(Error::corrupt(format!("WAL record at {} of unknown resource manager {other:?}", rec.lsn))),
            }
        };
        let result = self.wal.recover(&mut redo)?;
        if result.shutdown_at_target {
            eprintln!("LOG:  shutdown at recovery target");
            return Err(Error::user(SqlState::ADMIN_SHUTDOWN, "shutdown at recovery target"));
        }
        // The WAL is open for insertion from here: page writes flush it again.
        in_recovery.store(false, Ordering::Release);
        // xids seen in the WAL were handed out: never hand them out again.
        let next = self.txn.next_full_xid();
        if xid_follows(max_xid, next.xid()) {
            let epoch = next.0 >> 32;
            let wrapped = if max_xid < next.xid() { 1 } else { 0 };
            self.txn.set_next_full_xid(FullTransactionId(((epoch + wrapped) << 32) | max_xid as u64));
        }
        // Snapshots bound themselves by the latest completed xid: every recovered
        // transaction has completed (committed, aborted, or lost in the crash).
        self.txn.procarray.set_latest_completed(self.txn.next_full_xid());
        self.next_oid.fetch_max(next_oid, Ordering::SeqCst);
        self.txn.end_recovery()?;
        report.recovered = true;
        report.redo_records = result.records;
        report.redo_start = start.redo;
        report.redo_end = result.end;
        report.end_reason = result.end_reason;
        self.checkpoint()?;
        if start.from_backup.is_some() {
            // Only now: a crash before this point finds the label again and
            // replays from the backup's checkpoint once more (PostgreSQL renames
            // it before redo, having put the backup's start into pg_control).
            use crate::replication::backup::{BACKUP_LABEL, BACKUP_LABEL_OLD};
            let (from, to) = (self.datadir.join(BACKUP_LABEL), self.datadir.join(BACKUP_LABEL_OLD));
            std::fs::rename(&from, &to).map_err(|e| Error::io(from.display(), e))?;
            if self.settings.fsync {
                crate::wal::control::fsync_dir(&self.datadir)?;
            }
            eprintln!("LOG:  consistent recovery state reached at {}", result.end);
        }
        let signal = self.datadir.join(crate::replication::archive::RECOVERY_SIGNAL);
        if signal.exists() {
            // Archive recovery is over (the end-of-recovery checkpoint is
            // durable): the next start is an ordinary one. ferrogres stays on
            // timeline 1 (no .history file; README "Archiving").
            std::fs::remove_file(&signal).map_err(|e| Error::io(signal.display(), e))?;
            if self.settings.fsync {
                crate::wal::control::fsync_dir(&self.datadir)?;
            }
            eprintln!("LOG:  archive recovery complete; continuing on timeline 1");
        }
        Ok(())
    }

    fn redo_smgr(&self, rec: &DecodedRecord) -> Result<()> {
        match rec.info {
            XLOG_SMGR_CREATE => {
                let rel = decode_rel(&rec.main_data)?;
                let fork = crate::storage::ForkNumber::from_u8(rec.main_data[12])
                    .ok_or_else(|| Error::corrupt("smgr create record: bad fork"))?;
                if !self.smgr.exists(rel, fork) {
                    self.smgr.create(rel, fork)?;
                }
                Ok(())
            }
            other => Err(Error::corrupt(format!("unknown smgr WAL record info {other:#x}"))),
        }
    }

    /// What an auxiliary thread runs first: it takes a backend slot (one of
    /// the `AUX_BACKENDS` beyond max_connections), so its wait events are
    /// recorded and pg_stat_activity lists it with `backend_type` and its
    /// thread id as pid. Without a free slot it runs unlisted.
    pub(crate) fn aux_start(self: &Arc<Self>, backend_type: &'static str) -> wal::OnStart {
        // The highest free number (the free list is in descending order, handed
        // out from its end): auxiliary threads sit above the client backends.
        let id = {
            let mut free = self.free_backends.lock().unwrap_or_else(|e| e.into_inner());
            (!free.is_empty()).then(|| free.remove(0))
        };
        if let Some(id) = id {
            self.aux_ids.lock().unwrap_or_else(|e| e.into_inner()).push(id);
        }
        let weak = Arc::downgrade(self);
        Box::new(move || {
            let (Some(id), Some(engine)) = (id, weak.upgrade()) else { return };
            let id = BackendId(id);
            if crate::pgstat::wait_event::register_backend(id).is_err() {
                return;
            }
            // SAFETY: gettid has no preconditions.
            let tid = unsafe { libc::gettid() };
            let info = crate::pgstat::activity::BackendInfo { pid: tid, backend_type, ..Default::default() };
            engine.activity.start(id, info, crate::pgstat::activity::BackendState::Undefined);
        })
    }

    fn start_workers(self: &Arc<Self>) {
        let mut w = self.workers.lock().unwrap_or_else(|e| e.into_inner());
        self.sampler.start(Arc::downgrade(self));
        w.bgwriter = Some(self.buffers.start_bgwriter_with(self.aux_start("background writer")));
        w.wal_writer = Some(wal::start_wal_writer_with(self.wal.clone(), self.aux_start("walwriter"), |e| {
            eprintln!("ERROR:  WAL writer: {e}");
        }));
        let weak = Arc::downgrade(self);
        w.checkpointer = Some(wal::start_checkpointer_with(
            self.wal.clone(),
            Duration::from_millis(100),
            self.aux_start("checkpointer"),
            move |wal| match weak.upgrade() {
                Some(engine) => engine.checkpoint_counted(wal.checkpoint_timed_due(std::time::Instant::now())).map(|_| ()),
                None => Ok(()),
            },
            |e| eprintln!("ERROR:  checkpoint failed: {e}"),
        ));
        if self.archiver.enabled() {
            self.archiver.start(self.wal.clone(), self.aux_start("archiver"));
        }
    }

    /// Stops the autovacuum launcher, the checkpointer, the background writer and the
    /// WAL writer (joining their threads).
    fn stop_workers(&self) {
        self.pgstat_tables.stop_launcher();
        self.sampler.stop();
        self.archiver.stop();
        let mut w = self.workers.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(mut c) = w.checkpointer.take() {
            c.stop();
        }
        if let Some(b) = w.bgwriter.take() {
            b.stop();
        }
        if let Some(mut ww) = w.wal_writer.take() {
            ww.stop();
        }
        drop(w);
        // Their slots are free again.
        let ids = std::mem::take(&mut *self.aux_ids.lock().unwrap_or_else(|e| e.into_inner()));
        for id in ids {
            self.activity.end(BackendId(id));
            self.free_backends.lock().unwrap_or_else(|e| e.into_inner()).insert(0, id);
        }
    }

    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    pub fn datadir(&self) -> &Path {
        &self.datadir
    }

    fn checkpoint_info(&self) -> CheckpointInfo {
        // The logged limit, not the counter: OIDs up to it may be handed out after
        // this checkpoint without another XLOG_NEXTOID record, and recovery from
        // this checkpoint must not hand them out again (PostgreSQL adds oidCount).
        let logged = *self.oid_logged_until.lock().unwrap_or_else(|e| e.into_inner());
        CheckpointInfo {
            next_xid: self.txn.next_full_xid().0,
            next_oid: self.next_oid.load(Ordering::SeqCst).max(logged),
            ..Default::default()
        }
    }

    /// A checkpoint (PostgreSQL's CreateCheckPoint): 1. the redo pointer is fixed;
    /// 2. every buffer dirty now is written (WAL first); 3. the commit log is written;
    /// 4. relation files are fsynced; 5. the checkpoint record is written and the
    /// control file points to it. Redo after a crash starts at the redo pointer.
    pub fn checkpoint(&self) -> Result<Lsn> {
        self.checkpoint_counted(false)
    }

    /// A checkpoint, counted in pg_stat_bgwriter as timed (the checkpointer's,
    /// for checkpoint_timeout) or requested (CHECKPOINT, max_wal_size, ...).
    pub fn checkpoint_counted(&self, timed: bool) -> Result<Lsn> {
        use crate::buffer::BgWriterStats;
        let _one = self.checkpoint_lock.lock().unwrap_or_else(|e| e.into_inner());
        if self.shut_down.load(Ordering::SeqCst) {
            return Err(Error::user(SqlState::ADMIN_SHUTDOWN, "the database system is shutting down"));
        }
        let st = &self.buffers.bgstats;
        BgWriterStats::add(if timed { &st.checkpoints_timed } else { &st.checkpoints_req }, 1);
        let redo = self.wal.begin_checkpoint()?;
        // The counters are read after the redo pointer: any xid or OID handed out
        // before it is below them; later ones are in the WAL after it.
        let info = self.checkpoint_info();
        let (written, write_time, sync_time) = self.buffers.flush_all_dirty_timed()?;
        self.txn.checkpoint()?;
        let t = std::time::Instant::now();
        self.smgr.sync_all()?;
        let sync_time = sync_time + t.elapsed();
        BgWriterStats::add(&st.buffers_checkpoint, written as u64);
        BgWriterStats::add(&st.checkpoint_write_us, write_time.as_micros() as u64);
        BgWriterStats::add(&st.checkpoint_sync_us, sync_time.as_micros() as u64);
        self.slots.checkpoint()?;
        self.wal.finish_checkpoint(redo, info)
    }

    /// Clean stop: background workers stop, everything is written, and a shutdown
    /// checkpoint is recorded. Backends must have ended.
    pub fn shutdown(&self) -> Result<()> {
        self.stop_workers();
        let _one = self.checkpoint_lock.lock().unwrap_or_else(|e| e.into_inner());
        if self.shut_down.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        self.buffers.flush_all_dirty()?;
        self.txn.checkpoint()?;
        self.smgr.sync_all()?;
        self.slots.checkpoint()?;
        self.wal.shutdown(self.checkpoint_info())?;
        // The cumulative statistics, for the next start (backends have ended,
        // so their last counts were flushed).
        if let Err(e) = crate::pgstat::persist::save(self) {
            eprintln!("LOG:  could not write statistics file \"{}\": {e}", crate::pgstat::persist::STAT_FILE);
        }
        Ok(())
    }

    /// Assigns a new OID (for relations and other catalog objects).
    ///
    /// Crash safety: the counter lives in memory and in checkpoints. Before an
    /// OID at or past the logged limit is returned, an XLOG_NEXTOID record saying
    /// "OIDs below oid + OID_PREFETCH may be in use" goes into the WAL; recovery
    /// takes the largest such value. The record is not flushed here: anything
    /// durable that uses the OID (a commit, a relation file) flushes the WAL past
    /// it first. If the record cannot be written, the OID is still returned and
    /// the limit not moved; the WAL is then failing, so the transaction using it
    /// cannot commit either.
    pub fn new_oid(&self) -> Oid {
        loop {
            let oid = self.next_oid.fetch_add(1, Ordering::SeqCst);
            if oid < FIRST_NORMAL_OBJECT_ID {
                continue;
            }
            let mut logged = self.oid_logged_until.lock().unwrap_or_else(|e| e.into_inner());
            if oid >= *logged {
                let until = oid.saturating_add(OID_PREFETCH);
                let mut rb = RecordBuilder::new(RmgrId::Xlog, XLOG_NEXTOID);
                rb.append_main_data(&until.to_le_bytes());
                if self.wal.insert(&rb).is_ok() {
                    *logged = until;
                }
            }
            return oid;
        }
    }

    /// Removes the files of every relation of database `db` (default tablespace)
    /// whose relfilenode is not in `keep` and not a bootstrap one (below
    /// FIRST_NORMAL_OBJECT_ID): the orphans a crash left behind
    /// (`txn::pending_delete`). Called at startup, before any session runs, by
    /// the owner of the catalog. Returns the relfilenodes removed.
    pub fn remove_orphan_relations(&self, db: Oid, keep: &std::collections::HashSet<Oid>) -> Result<Vec<Oid>> {
        let proto = RelFileLocator { spc_oid: DEFAULT_TABLESPACE_OID, db_oid: db, rel_number: 0 };
        let dir = self.datadir.join(Smgr::rel_dir(proto));
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(dir.display(), e)),
        };
        let mut doomed: Vec<Oid> = Vec::new();
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            // <relnumber>[_fork][.segno]
            let digits: String = name.chars().take_while(|c| c.is_ascii_digit()).collect();
            let rest = &name[digits.len()..];
            let well_formed = rest.is_empty() || rest.starts_with('_') || rest.starts_with('.');
            let Ok(n) = digits.parse::<Oid>() else { continue };
            if well_formed && n >= FIRST_NORMAL_OBJECT_ID && !keep.contains(&n) && !doomed.contains(&n) {
                doomed.push(n);
            }
        }
        for &n in &doomed {
            let rel = RelFileLocator { rel_number: n, ..proto };
            self.buffers.drop_relation_buffers(rel);
            self.toast_indexes.forget(rel);
            self.smgr.unlink(rel, None)?;
        }
        doomed.sort_unstable();
        Ok(doomed)
    }

    /// Creates the main fork of a new relation, WAL-logged so that recovery
    /// re-creates the file.
    pub fn create_relation(&self, rel: RelFileLocator) -> Result<()> {
        self.create_relation_fork(rel, crate::storage::ForkNumber::Main)
    }

    /// Creates fork `fork` of a relation, WAL-logged like [`Engine::create_relation`].
    pub fn create_relation_fork(&self, rel: RelFileLocator, fork: crate::storage::ForkNumber) -> Result<()> {
        let mut body = encode_rel(rel);
        body.push(fork as u8);
        let mut rb = RecordBuilder::new(RmgrId::Smgr, XLOG_SMGR_CREATE);
        rb.append_main_data(&body);
        let end = self.wal.insert(&rb)?;
        // The file must not exist without its creation record being durable first,
        // or a crash could leave an orphan file that no WAL accounts for.
        self.wal.flush(end)?;
        self.smgr.create(rel, fork)
    }

    /// Starts a backend: a backend number, a transaction manager, a lock-manager
    /// slot, and the calling thread's wait-event slot (a backend is used on the
    /// thread that started it). `pid` is what pg_locks and pg_stat_activity show.
    pub fn backend(self: &Arc<Self>, pid: i32) -> Result<Backend> {
        let id = self
            .free_backends
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .ok_or_else(|| Error::user(SqlState(*b"53300"), "sorry, too many clients already"))?;
        let id = BackendId(id);
        let release = |e: Error| {
            self.free_backends.lock().unwrap_or_else(|e| e.into_inner()).push(id.0);
            e
        };
        self.locks.register_backend(id, pid).map_err(release)?;
        let txn = match self.txn.backend(id) {
            Ok(t) => t,
            Err(e) => {
                let _ = self.locks.unregister_backend(id);
                return Err(release(e));
            }
        };
        // The status array holds at least max_backends slots (sized at first open in
        // the process); a failure here is a second engine with more backends.
        if let Err(e) = crate::pgstat::wait_event::register_backend(id) {
            drop(txn);
            let _ = self.locks.unregister_backend(id);
            return Err(release(e));
        }
        txn.pgstat.set_database(POSTGRES_DATABASE_OID);
        Ok(Backend {
            engine: self.clone(),
            id,
            pid,
            txn: std::mem::ManuallyDrop::new(txn),
            target_blocks: Default::default(),
            db_oid: POSTGRES_DATABASE_OID,
            session_user: 10,
            current_user: 10,
            ext: std::cell::OnceCell::new(),
            session_clock: std::cell::Cell::new(None),
        })
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        // Workers hold Arcs of the parts, not of the engine; stop them so their
        // threads end. A dropped engine without shutdown() is a crash: redo next time.
        self.stop_workers();
    }
}

/// One connection's engine state.
pub struct Backend {
    engine: Arc<Engine>,
    id: BackendId,
    pid: i32,
    /// The transaction manager of this backend. Dropped explicitly in `drop`, before
    /// the backend number is freed (it leaves the ProcArray when dropped).
    pub txn: std::mem::ManuallyDrop<TransactionManager>,
    /// Per relation, the block this backend last inserted into (PostgreSQL's
    /// rd_targblock): inserts try it first.
    pub(crate) target_blocks: std::collections::HashMap<RelFileLocator, crate::storage::BlockNumber>,
    /// The database this backend works in (PostgreSQL's MyDatabaseId);
    /// `POSTGRES_DATABASE_OID` until `set_database`.
    db_oid: Oid,
    /// The role the session authenticated as, or SET SESSION AUTHORIZATION
    /// chose (PostgreSQL's session user); the bootstrap superuser (10) until
    /// the SQL layer sets it at connection. Role OIDs are the SQL layer's
    /// (pg_authid); kept here because every statement of the session needs
    /// them, as the database is.
    pub session_user: Oid,
    /// The role privileges are checked as (SET ROLE; PostgreSQL's current user).
    pub current_user: Oid,
    /// State a layer above keeps per backend (the SQL layer's catalog caches):
    /// owned by this backend and dropped with it, reached through `&Backend`
    /// by [`Backend::ext`]. Set once, on first use; one type per backend.
    ext: std::cell::OnceCell<Box<dyn std::any::Any + Send>>,
    /// A client session's clock (set by [`Backend::report_connect`]): where
    /// the session time not yet added to its database's counters starts.
    session_clock: std::cell::Cell<Option<std::time::Instant>>,
}

/// How a client session ended (PostgreSQL's SessionEndType), for
/// pg_stat_database's sessions_abandoned / _fatal / _killed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DisconnectCause {
    /// The client said goodbye (Terminate).
    Normal,
    /// The connection to the client was lost (abandoned).
    ClientEof,
    /// A FATAL error ended it (an idle timeout, a protocol violation, ...).
    Fatal,
    /// An operator ended it (pg_terminate_backend, a shutdown).
    Killed,
}

impl Backend {
    /// The per-backend state of type `T` kept by a layer above (made with
    /// `T::default()` on first use). Panics if another type was stored first:
    /// one layer owns the slot.
    pub fn ext<T: std::any::Any + Send + Default>(&self) -> &T {
        self.ext
            .get_or_init(|| Box::new(T::default()))
            .downcast_ref::<T>()
            .expect("Backend::ext holds one type")
    }

    pub fn id(&self) -> BackendId {
        self.id
    }

    pub fn pid(&self) -> i32 {
        self.pid
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The database this backend is connected to.
    pub fn database(&self) -> Oid {
        self.db_oid
    }

    /// Connects this backend to `db`: from now on it counts as a user of `db`
    /// for `Engine::backends_in_database` (CREATE/DROP DATABASE's 55006).
    pub fn set_database(&mut self, db: Oid) {
        self.db_oid = db;
        self.txn.pgstat.set_database(db);
        self.engine.databases.set(self.id.0, db, self.pid);
    }
}

impl Backend {
    /// Flushes this backend's pending statistics into the shared counters if a
    /// flush is due (`pgstat::tabstat::MIN_FLUSH_INTERVAL` since the last one) or
    /// `force` (PostgreSQL's pgstat_report_stat). Returns how long until the
    /// counts still pending may be flushed (None: nothing pending), so that an
    /// idle session can come back for them.
    pub fn pgstat_report(&self, force: bool) -> Option<std::time::Duration> {
        let (flush, due_in) = self.txn.pgstat.take_if_due(force, || crate::pgstat::usage::of(self.id));
        if let Some(f) = flush {
            let stats = &self.engine.pgstat_tables;
            let db = stats.db(f.db);
            crate::pgstat::tabstat::apply_flush(f, |r| stats.rel(r), &db);
            self.flush_session_times(&db);
        }
        due_in
    }

    /// This backend serves a client session (PostgreSQL's
    /// pgstat_report_connect): its database counts one more session, and from
    /// now on the session's time, and its time active and idle in a
    /// transaction, are added to the database's counters at each statistics
    /// flush and at [`Backend::report_disconnect`].
    pub fn report_connect(&self) {
        self.engine.pgstat_tables.db(self.db_oid).sessions.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.session_clock.set(Some(std::time::Instant::now()));
    }

    /// The client session ends (PostgreSQL's pgstat_report_disconnect): its
    /// last times are added, and how it ended is counted. Nothing for a
    /// backend that is no client session.
    pub fn report_disconnect(&self, cause: DisconnectCause) {
        if self.session_clock.get().is_none() {
            return;
        }
        let db = self.engine.pgstat_tables.db(self.db_oid);
        self.flush_session_times(&db);
        self.session_clock.set(None);
        let counter = match cause {
            DisconnectCause::Normal => return,
            DisconnectCause::ClientEof => &db.sessions_abandoned,
            DisconnectCause::Fatal => &db.sessions_fatal,
            DisconnectCause::Killed => &db.sessions_killed,
        };
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Adds the session's time since the last flush, and its active and
    /// idle-in-transaction time (from its pg_stat_activity slot), to `db`.
    fn flush_session_times(&self, db: &crate::pgstat::tabstat::DbCounters) {
        use std::sync::atomic::Ordering::Relaxed;
        let Some(since) = self.session_clock.get() else { return };
        let now = std::time::Instant::now();
        db.session_time_us.fetch_add(now.duration_since(since).as_micros() as u64, Relaxed);
        self.session_clock.set(Some(now));
        if let Some(slot) = self.engine.activity.slot(self.id) {
            let (active, idle) = slot.take_state_times();
            db.active_time_us.fetch_add(active, Relaxed);
            db.idle_in_transaction_time_us.fetch_add(idle, Relaxed);
        }
    }
}

impl Drop for Backend {
    fn drop(&mut self) {
        if self.txn.in_transaction() {
            let _ = self.txn.abort();
        }
        self.pgstat_report(true);
        // SAFETY: `txn` is not used after this; dropping it leaves the ProcArray,
        // which must happen before the backend number can be handed out again.
        unsafe { std::mem::ManuallyDrop::drop(&mut self.txn) };
        let _ = self.engine.locks.release_all(self.id, false);
        let _ = self.engine.locks.unregister_backend(self.id);
        self.engine.databases.remove(self.id.0);
        self.engine.activity.end(self.id);
        crate::pgstat::wait_event::unregister_backend();
        self.engine.free_backends.lock().unwrap_or_else(|e| e.into_inner()).push(self.id.0);
    }
}

pub(crate) fn encode_rel(rel: RelFileLocator) -> Vec<u8> {
    let mut b = Vec::with_capacity(12);
    b.extend_from_slice(&rel.spc_oid.to_le_bytes());
    b.extend_from_slice(&rel.db_oid.to_le_bytes());
    b.extend_from_slice(&rel.rel_number.to_le_bytes());
    b
}

pub(crate) fn decode_rel(b: &[u8]) -> Result<RelFileLocator> {
    if b.len() < 13 {
        return Err(Error::corrupt("relation locator in WAL record too short"));
    }
    let u = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    Ok(RelFileLocator { spc_oid: u(0), db_oid: u(4), rel_number: u(8) })
}
