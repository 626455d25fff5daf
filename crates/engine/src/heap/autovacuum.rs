//! Per-relation tuple counters (PostgreSQL's pgstat table counters, the part
//! autovacuum needs) and the autovacuum launcher.
//!
//! The heap counts, per relation: tuples inserted, updated and deleted since the
//! last VACUUM (`pgstat_count_heap_*`). Every `autovacuum_naptime` the launcher
//! vacuums each relation whose counts pass PostgreSQL's thresholds:
//!
//! ```text
//! dead tuples      > autovacuum_vacuum_threshold        + autovacuum_vacuum_scale_factor        * reltuples
//! inserted tuples  > autovacuum_vacuum_insert_threshold + autovacuum_vacuum_insert_scale_factor * reltuples
//! ```
//!
//! `reltuples` is the live-tuple count the last VACUUM found. Dead tuples are
//! deletes plus updates (each leaves an old version). The counters are not crash
//! safe (PostgreSQL discards its statistics after a crash too).
//!
//! Index safety: autovacuum runs phases 2 and 3 (index cleanup, LP_DEAD ->
//! LP_UNUSED) only for relations whose index cleanup was registered
//! ([`set_index_cleanup`]); for others it prunes and freezes and leaves dead line
//! pointers, as `VACUUM (INDEX_CLEANUP OFF)` does, so that an index entry never
//! points at a reused line pointer.

use super::tuple::Tid;
use super::vacuum::{vacuum_rel, VacuumOptions, VacuumStats};
use crate::engine::Engine;
use crate::error::Result;
use crate::storage::RelFileLocator;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, RwLock, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

/// Index cleanup of one relation: deletes the index entries of the given heap TIDs
/// from every index of the relation.
pub type IndexCleanup = Arc<dyn Fn(&[Tid]) -> Result<()> + Send + Sync>;

/// Counters of one relation. Relaxed atomics: they are statistics, read by the
/// launcher as approximate values.
#[derive(Default, Debug)]
pub struct RelCounters {
    pub inserted: AtomicU64,
    pub updated: AtomicU64,
    pub deleted: AtomicU64,
    /// Dead tuples (deleted + updated) since the last VACUUM, minus nothing: reset
    /// by VACUUM to the dead-but-not-yet-removable count it found.
    pub dead_since_vacuum: AtomicU64,
    /// Inserts since the last VACUUM.
    pub inserted_since_vacuum: AtomicU64,
    /// Live tuples found by the last VACUUM.
    pub reltuples: AtomicU64,
    /// VACUUMs run by autovacuum.
    pub autovacuum_count: AtomicU64,
    /// VACUUMs run by a VACUUM command (autovacuum's are `autovacuum_count`).
    pub vacuum_count: AtomicU64,
    // What pg_stat_all_tables / pg_stat_all_indexes / pg_statio_all_tables show
    // besides the above (pgstat::tabstat adds to them when a backend flushes).
    /// Scans started (sequential scans of a table, index scans of an index).
    pub numscans: AtomicU64,
    /// Tuples returned by sequential scans (table) / index entries returned (index).
    pub tuples_returned: AtomicU64,
    /// Live tuples fetched through an index (index) or by TID (table).
    pub tuples_fetched: AtomicU64,
    pub hot_updated: AtomicU64,
    /// Live and dead tuples (n_live_tup, n_dead_tup): moved by transactions that
    /// ended, set by VACUUM and ANALYZE.
    pub live: std::sync::atomic::AtomicI64,
    pub dead: std::sync::atomic::AtomicI64,
    /// Tuples changed since the last ANALYZE (n_mod_since_analyze).
    pub changed_since_analyze: AtomicU64,
    /// Buffer reads of the relation, and hits among them.
    pub blocks_fetched: AtomicU64,
    pub blocks_hit: AtomicU64,
    /// Last (auto)vacuum and (auto)analyze, µs since the Unix epoch (0: never).
    pub last_vacuum: std::sync::atomic::AtomicI64,
    pub last_autovacuum: std::sync::atomic::AtomicI64,
    pub last_analyze: std::sync::atomic::AtomicI64,
    pub last_autoanalyze: std::sync::atomic::AtomicI64,
    pub analyze_count: AtomicU64,
    pub autoanalyze_count: AtomicU64,
}

impl RelCounters {
    /// Zeroes every counter (pg_stat_reset, pg_stat_reset_single_table_counters).
    /// The counts since the last VACUUM go too (PostgreSQL's autovacuum reads
    /// them from the statistics); reltuples is kept, as PostgreSQL keeps it in
    /// pg_class.
    pub fn reset(&self) {
        for c in [
            &self.dead_since_vacuum,
            &self.inserted_since_vacuum,
            &self.inserted,
            &self.updated,
            &self.deleted,
            &self.autovacuum_count,
            &self.vacuum_count,
            &self.numscans,
            &self.tuples_returned,
            &self.tuples_fetched,
            &self.hot_updated,
            &self.changed_since_analyze,
            &self.blocks_fetched,
            &self.blocks_hit,
            &self.analyze_count,
            &self.autoanalyze_count,
        ] {
            c.store(0, Ordering::Relaxed);
        }
        for c in [&self.live, &self.dead, &self.last_vacuum, &self.last_autovacuum, &self.last_analyze, &self.last_autoanalyze] {
            c.store(0, Ordering::Relaxed);
        }
    }
}

/// The engine's table counters and the autovacuum launcher's handle.
#[derive(Default)]
pub struct TableStats {
    /// Relation -> counters. Read-locked on the hot path (existing relation);
    /// write-locked once per relation to add it.
    rels: RwLock<HashMap<RelFileLocator, Arc<RelCounters>>>,
    /// Database -> counters (pg_stat_database), created on first flush.
    dbs: RwLock<HashMap<crate::storage::Oid, Arc<crate::pgstat::tabstat::DbCounters>>>,
    /// Registered index cleanups (relations with indexes).
    cleanups: Mutex<HashMap<RelFileLocator, IndexCleanup>>,
    launcher: Mutex<Option<Launcher>>,
}

impl TableStats {
    /// The counters of `rel`, created on first use.
    pub fn rel(&self, rel: RelFileLocator) -> Arc<RelCounters> {
        if let Some(c) = self.rels.read().unwrap_or_else(|e| e.into_inner()).get(&rel) {
            return c.clone();
        }
        self.rels.write().unwrap_or_else(|e| e.into_inner()).entry(rel).or_default().clone()
    }

    /// The counters of database `db`, created on first use.
    pub fn db(&self, db: crate::storage::Oid) -> Arc<crate::pgstat::tabstat::DbCounters> {
        if let Some(c) = self.dbs.read().unwrap_or_else(|e| e.into_inner()).get(&db) {
            return c.clone();
        }
        self.dbs.write().unwrap_or_else(|e| e.into_inner()).entry(db).or_default().clone()
    }

    /// The counters of every relation of database `db` (a copy of the map's Arcs).
    pub fn rels_of(&self, db: crate::storage::Oid) -> Vec<(RelFileLocator, Arc<RelCounters>)> {
        self.rels.read().unwrap_or_else(|e| e.into_inner()).iter().filter(|(r, _)| r.db_oid == db).map(|(r, c)| (*r, c.clone())).collect()
    }

    /// The counters of `rel` if any were kept.
    pub fn get(&self, rel: RelFileLocator) -> Option<Arc<RelCounters>> {
        self.rels.read().unwrap_or_else(|e| e.into_inner()).get(&rel).cloned()
    }

    /// Every relation's counters (pgstat::persist).
    pub(crate) fn all_rels(&self) -> Vec<(RelFileLocator, Arc<RelCounters>)> {
        self.all()
    }

    /// Every database's counters (pgstat::persist).
    pub(crate) fn all_dbs(&self) -> Vec<(crate::storage::Oid, Arc<crate::pgstat::tabstat::DbCounters>)> {
        self.dbs.read().unwrap_or_else(|e| e.into_inner()).iter().map(|(d, c)| (*d, c.clone())).collect()
    }

    fn all(&self) -> Vec<(RelFileLocator, Arc<RelCounters>)> {
        self.rels.read().unwrap_or_else(|e| e.into_inner()).iter().map(|(r, c)| (*r, c.clone())).collect()
    }

    /// Forgets the relations of a dropped database.
    pub(crate) fn forget_database(&self, db: crate::storage::Oid) {
        self.rels.write().unwrap_or_else(|e| e.into_inner()).retain(|r, _| r.db_oid != db);
        self.dbs.write().unwrap_or_else(|e| e.into_inner()).remove(&db);
        self.cleanups.lock().unwrap_or_else(|e| e.into_inner()).retain(|r, _| r.db_oid != db);
    }

    /// Stops the launcher (if running) and waits for its thread.
    pub fn stop_launcher(&self) {
        let l = self.launcher.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(l) = l {
            l.stop();
        }
    }
}

/// Counts an inserted tuple of `rel` straight into the shared counters (tests
/// and tools; the heap counts into the backend's pending statistics instead,
/// `pgstat::tabstat`).
pub fn pgstat_count_heap_insert(engine: &Engine, rel: RelFileLocator) {
    let c = engine.pgstat_tables.rel(rel);
    c.inserted.fetch_add(1, Ordering::Relaxed);
    c.inserted_since_vacuum.fetch_add(1, Ordering::Relaxed);
}

/// Counts an updated tuple of `rel` straight into the shared counters (tests).
pub fn pgstat_count_heap_update(engine: &Engine, rel: RelFileLocator) {
    let c = engine.pgstat_tables.rel(rel);
    c.updated.fetch_add(1, Ordering::Relaxed);
    c.dead_since_vacuum.fetch_add(1, Ordering::Relaxed);
}

/// Counts a deleted tuple of `rel` straight into the shared counters (tests).
pub fn pgstat_count_heap_delete(engine: &Engine, rel: RelFileLocator) {
    let c = engine.pgstat_tables.rel(rel);
    c.deleted.fetch_add(1, Ordering::Relaxed);
    c.dead_since_vacuum.fetch_add(1, Ordering::Relaxed);
}

/// VACUUM finished on `rel`: reltuples is what it found live, the dead count
/// restarts from what it could not remove yet (recently dead, dead but not
/// pruned, deleted by a transaction still running), the insert count from 0.
pub fn pgstat_report_vacuum(engine: &Engine, rel: RelFileLocator, live: u64, recently_dead: u64) {
    let c = engine.pgstat_tables.rel(rel);
    c.reltuples.store(live, Ordering::Relaxed);
    c.dead_since_vacuum.store(recently_dead, Ordering::Relaxed);
    c.inserted_since_vacuum.store(0, Ordering::Relaxed);
    c.vacuum_count.fetch_add(1, Ordering::Relaxed);
    c.live.store(live as i64, Ordering::Relaxed);
    c.dead.store(recently_dead as i64, Ordering::Relaxed);
    c.last_vacuum.store(crate::pgstat::activity::now_micros(), Ordering::Relaxed);
}

/// ANALYZE finished on `rel` (`auto`: run by autovacuum), with its estimate of
/// the live and dead tuples: n_mod_since_analyze restarts from 0.
pub fn pgstat_report_analyze(engine: &Engine, rel: RelFileLocator, auto: bool, live: Option<u64>, dead: Option<u64>) {
    let c = engine.pgstat_tables.rel(rel);
    c.changed_since_analyze.store(0, Ordering::Relaxed);
    if let Some(l) = live {
        c.live.store(l as i64, Ordering::Relaxed);
    }
    if let Some(d) = dead {
        c.dead.store(d as i64, Ordering::Relaxed);
    }
    let now = crate::pgstat::activity::now_micros();
    if auto {
        c.last_autoanalyze.store(now, Ordering::Relaxed);
        c.autoanalyze_count.fetch_add(1, Ordering::Relaxed);
    } else {
        c.last_analyze.store(now, Ordering::Relaxed);
        c.analyze_count.fetch_add(1, Ordering::Relaxed);
    }
}

/// The engine's shared table counters (pg_stat_all_tables and friends read them).
pub fn table_stats(engine: &Engine) -> &TableStats {
    &engine.pgstat_tables
}

/// The counters of `rel` (for pg_stat_user_tables and tests).
pub fn pgstat_rel(engine: &Engine, rel: RelFileLocator) -> Arc<RelCounters> {
    engine.pgstat_tables.rel(rel)
}

/// Registers (Some) or removes (None) the index cleanup of `rel`. The index AMs
/// (or the catalog layer, which knows a relation's indexes) register it when the
/// first index is created; with one registered, autovacuum runs full index cleanup.
/// Registering `Arc::new(|_| Ok(()))` declares "no indexes".
pub fn set_index_cleanup(engine: &Engine, rel: RelFileLocator, cleanup: Option<IndexCleanup>) {
    let mut m = engine.pgstat_tables.cleanups.lock().unwrap_or_else(|e| e.into_inner());
    match cleanup {
        Some(c) => m.insert(rel, c),
        None => m.remove(&rel),
    };
}

/// Whether `rel` needs an autovacuum now: (dead threshold passed, insert threshold
/// passed).
pub fn needs_vacuum(engine: &Engine, rel: RelFileLocator) -> (bool, bool) {
    let s = engine.settings();
    let c = engine.pgstat_tables.rel(rel);
    let reltuples = c.reltuples.load(Ordering::Relaxed) as f64;
    let dead = c.dead_since_vacuum.load(Ordering::Relaxed) as f64;
    let ins = c.inserted_since_vacuum.load(Ordering::Relaxed) as f64;
    let dead_limit = s.autovacuum_vacuum_threshold as f64 + s.autovacuum_vacuum_scale_factor * reltuples;
    let ins_limit = s.autovacuum_vacuum_insert_threshold as f64 + s.autovacuum_vacuum_insert_scale_factor * reltuples;
    (dead > dead_limit, ins > ins_limit)
}

/// One autovacuum round: vacuums every relation past a threshold. Returns what
/// was vacuumed. A relation that no longer exists is forgotten.
pub fn autovacuum_round(engine: &Arc<Engine>) -> Result<Vec<(RelFileLocator, VacuumStats)>> {
    let mut done = Vec::new();
    for (rel, c) in engine.pgstat_tables.all() {
        let (dead, ins) = needs_vacuum(engine, rel);
        if !dead && !ins {
            continue;
        }
        if !engine.smgr.exists(rel, crate::storage::ForkNumber::Main) {
            engine.pgstat_tables.rels.write().unwrap_or_else(|e| e.into_inner()).remove(&rel);
            continue;
        }
        let cleanup = engine.pgstat_tables.cleanups.lock().unwrap_or_else(|e| e.into_inner()).get(&rel).cloned();
        let mut opts = VacuumOptions::from_settings(engine.settings());
        opts.skip_locked = true;
        opts.index_cleanup = cleanup.is_some();
        let mut cb = |tids: &[Tid]| match &cleanup {
            Some(f) => f(tids),
            None => Ok(()),
        };
        let stats = vacuum_rel(engine, None, rel, opts, &mut cb)?;
        if !stats.skipped {
            c.autovacuum_count.fetch_add(1, Ordering::Relaxed);
            // vacuum_rel stamped last_vacuum: this one was autovacuum's.
            let t = c.last_vacuum.swap(0, Ordering::Relaxed);
            c.vacuum_count.fetch_sub(1, Ordering::Relaxed);
            c.last_autovacuum.store(t, Ordering::Relaxed);
            done.push((rel, stats));
        }
    }
    Ok(done)
}

struct Launcher {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: JoinHandle<()>,
}

impl Launcher {
    fn stop(self) {
        {
            let (m, cv) = &*self.stop;
            *m.lock().unwrap_or_else(|e| e.into_inner()) = true;
            cv.notify_all();
        }
        // The launcher itself may be the last holder of the engine (it upgrades its
        // weak reference for a round) and then runs this from Engine's drop.
        if self.thread.thread().id() != std::thread::current().id() {
            let _ = self.thread.join();
        }
    }
}

/// Starts the autovacuum launcher of `engine` (if `autovacuum` is on and it is not
/// running). It holds only a weak reference: it ends when the engine is dropped, or
/// at [`TableStats::stop_launcher`] (call from Engine::shutdown).
pub fn start_launcher(engine: &Arc<Engine>) {
    if !engine.settings().autovacuum {
        return;
    }
    let mut slot = engine.pgstat_tables.launcher.lock().unwrap_or_else(|e| e.into_inner());
    if slot.is_some() {
        return;
    }
    let stop = Arc::new((Mutex::new(false), Condvar::new()));
    let weak: Weak<Engine> = Arc::downgrade(engine);
    let naptime = Duration::from_millis(engine.settings().autovacuum_naptime_ms.max(1));
    let stop2 = stop.clone();
    let on_start = engine.aux_start("autovacuum launcher");
    let thread = std::thread::Builder::new()
        .name("autovacuum launcher".into())
        .spawn(move || {
            on_start();
            loop {
                {
                    let (m, cv) = &*stop2;
                    use crate::pgstat::wait_event::{report_wait_end, report_wait_start, WaitEvent};
                    report_wait_start(WaitEvent::Activity("AutoVacuumMain"));
                    let g = m.lock().unwrap_or_else(|e| e.into_inner());
                    let (g, _) = cv.wait_timeout_while(g, naptime, |s| !*s).unwrap_or_else(|e| e.into_inner());
                    report_wait_end();
                    if *g {
                        break;
                    }
                }
                let Some(engine) = weak.upgrade() else { break };
                if let Err(e) = autovacuum_round(&engine) {
                    eprintln!("ERROR:  autovacuum: {e}");
                }
            }
        })
        .expect("could not start the autovacuum launcher");
    *slot = Some(Launcher { stop, thread });
}
