//! Cumulative statistics of tables, indexes and databases (PostgreSQL's
//! pgstat_relation.c / pgstat_database.c): what pg_stat_database,
//! pg_stat_all_tables, pg_stat_all_indexes and pg_statio_all_tables show.
//!
//! Two levels, as in PostgreSQL 15:
//!
//! 1. **Pending, per backend** ([`BackendStats`], owned by the backend's
//!    `TransactionManager`): plain integers in a `RefCell`, bumped by the heap,
//!    the scans and the executor with no lock and no atomic. The counts of the
//!    running transaction that depend on its outcome (tuples inserted, updated,
//!    deleted) are kept apart and folded in at commit or abort
//!    ([`BackendStats::at_eoxact`]): committed inserts become live tuples,
//!    committed updates and deletes dead ones; rolled-back inserts and updates
//!    become dead tuples, rolled-back deletes change nothing.
//! 2. **Shared** (`Engine::pgstat_tables`: one [`RelCounters`] of atomics per
//!    relation file, one [`DbCounters`] per database): the pending counts are
//!    added by [`crate::engine::Backend::pgstat_report`], which the session calls
//!    when a transaction ends and when it has been idle for a while. It flushes
//!    at most once per [`MIN_FLUSH_INTERVAL`] (PostgreSQL's
//!    PGSTAT_MIN_INTERVAL) unless forced (`pg_stat_force_next_flush()`, session
//!    end): one read lock of the relation map and a few Relaxed atomic adds per
//!    relation the backend touched since the last flush.
//!
//! Counters are keyed by relation file (`RelFileLocator`): a relation given a
//! new file (TRUNCATE, VACUUM FULL, REINDEX) starts from zero. They are not
//! crash safe (PostgreSQL discards its statistics after a crash too).

use crate::storage::{Oid, RelFileLocator};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::{Duration, Instant};

pub use crate::heap::autovacuum::RelCounters;

/// The shortest interval between two flushes of a backend's pending counts.
pub const MIN_FLUSH_INTERVAL: Duration = Duration::from_secs(1);

/// Counts of one relation that do not depend on the transaction's outcome.
#[derive(Default, Debug, Clone, Copy, PartialEq, Eq)]
pub struct TabCounts {
    /// Scans started: sequential scans of a table, index scans of an index.
    pub numscans: u64,
    /// Tuples returned: by sequential scans (table), index entries returned (index).
    pub tuples_returned: u64,
    /// Live heap tuples fetched: through an index (index), by TID (table).
    pub tuples_fetched: u64,
    pub tuples_inserted: u64,
    pub tuples_updated: u64,
    pub tuples_deleted: u64,
    pub tuples_hot_updated: u64,
    /// Live and dead tuple count changes (from transactions that ended).
    pub delta_live: i64,
    pub delta_dead: i64,
    /// Tuples changed (n_mod_since_analyze).
    pub changed: u64,
    /// Buffer reads asked for, and how many of them found the page in the pool.
    pub blocks_fetched: u64,
    pub blocks_hit: u64,
}

/// Counts of one relation in the running transaction (folded at its end).
#[derive(Default, Debug, Clone, Copy, PartialEq, Eq)]
struct XactCounts {
    inserted: u64,
    updated: u64,
    deleted: u64,
}

/// One relation's pending counts: an element of [`Pending::entries`], found
/// by locator through [`Pending::index`] or directly by a [`TabHandle`].
#[derive(Debug)]
struct Entry {
    rel: RelFileLocator,
    t: TabCounts,
    x: XactCounts,
    /// Listed in [`Pending::xact_rels`] (has counts of the running transaction).
    in_xact: bool,
}

/// Entries kept across flushes up to this many; past it, a flush with no
/// transaction counts pending drops them all (a new generation), so a session
/// that touched many relations does not keep one entry per relation forever.
const KEEP_ENTRIES: usize = 256;

#[derive(Default, Debug)]
struct Pending {
    /// The database the backend is connected to (its counts go there).
    db: Oid,
    /// One entry per relation counted since the last drop (see
    /// [`KEEP_ENTRIES`]); a flush zeroes the counts and keeps the entries, so
    /// a handle's position stays valid within a generation.
    entries: Vec<Entry>,
    /// Relation -> position in `entries`.
    index: HashMap<RelFileLocator, u32>,
    /// Bumped when `entries` is emptied: handles of an older generation look
    /// their relation up again.
    generation: u32,
    /// The two relations looked up by locator last (most recent first) and
    /// their positions: the heap counts row by row on one relation, an index
    /// scan alternates between the index and its table.
    recent: [Option<(RelFileLocator, u32)>; 2],
    /// Positions of the entries with counts of the running transaction.
    xact_rels: Vec<u32>,
    /// Some entry has counts in `t` not flushed yet.
    dirty: bool,
    xact_commit: u64,
    xact_rollback: u64,
    deadlocks: u64,
    /// When the last flush happened (None: never).
    last_flush: Option<Instant>,
    /// The clock as [`BackendStats::take_if_due`] last read it (the end of
    /// the backend's last statement): what [`BackendStats::flush_due_in`]
    /// measures from, so that asking before an idle wait reads no clock.
    last_report: Option<Instant>,
    /// Flush at the next report whatever the interval (pg_stat_force_next_flush).
    force: bool,
    /// Buffer reads of the backend's life, hit and missed (never flushed:
    /// pg_stat_statements takes the difference around a statement, as
    /// PostgreSQL's pgBufferUsage).
    usage_hit: u64,
    usage_read: u64,
    /// The backend's temporary files and bytes ([`crate::pgstat::usage`]) as
    /// of the last flush: the flush adds what came since to the database's
    /// temp_files / temp_bytes. The backend is the only one that flushes its
    /// counts, and its usage counters start at 0 with it.
    temp_flushed: (u64, u64),
}

impl Pending {
    fn is_empty(&self) -> bool {
        !self.dirty && self.xact_commit == 0 && self.xact_rollback == 0 && self.deadlocks == 0
    }

    /// The position of `rel`'s entry (made if missing): the two most recent
    /// relations without hashing, else the index.
    #[inline]
    fn slot(&mut self, rel: RelFileLocator) -> usize {
        if let Some((r, i)) = self.recent[0] {
            if r == rel {
                return i as usize;
            }
        }
        if let Some((r, i)) = self.recent[1] {
            if r == rel {
                self.recent.swap(0, 1);
                return i as usize;
            }
        }
        let i = self.slot_slow(rel);
        self.recent[1] = self.recent[0];
        self.recent[0] = Some((rel, i as u32));
        i
    }

    #[cold]
    fn slot_slow(&mut self, rel: RelFileLocator) -> usize {
        if let Some(&i) = self.index.get(&rel) {
            return i as usize;
        }
        let i = self.entries.len();
        self.entries.push(Entry { rel, t: TabCounts::default(), x: XactCounts::default(), in_xact: false });
        self.index.insert(rel, i as u32);
        i
    }

    /// `rel`'s counts that do not depend on the transaction's outcome.
    #[inline]
    fn table(&mut self, rel: RelFileLocator) -> &mut TabCounts {
        let i = self.slot(rel);
        self.dirty = true;
        &mut self.entries[i].t
    }

    /// `rel`'s counts in the running transaction.
    #[inline]
    fn xact(&mut self, rel: RelFileLocator) -> &mut XactCounts {
        let i = self.slot(rel);
        let e = &mut self.entries[i];
        if !e.in_xact {
            e.in_xact = true;
            self.xact_rels.push(i as u32);
        }
        &mut self.entries[i].x
    }
}

/// A relation's pending counts resolved once (by a scan when it starts), so
/// that counting a row is a `RefCell` borrow and an increment: no hashing.
/// Valid as long as the backend's entries are not dropped (see
/// [`KEEP_ENTRIES`]); after that it finds its relation again by locator on its
/// next use. Belongs to the backend whose [`BackendStats`] made it.
#[derive(Debug, Clone)]
pub struct TabHandle {
    rel: RelFileLocator,
    slot: Cell<u32>,
    generation: Cell<u32>,
}

impl TabHandle {
    /// The relation counted.
    pub fn rel(&self) -> RelFileLocator {
        self.rel
    }
}

/// A backend's pending statistics: written only by the backend's own thread,
/// so plain integers behind a `RefCell` (never borrowed across a call out).
#[derive(Default, Debug)]
pub struct BackendStats {
    p: RefCell<Pending>,
}

impl BackendStats {
    #[inline]
    fn table(&self, rel: RelFileLocator, f: impl FnOnce(&mut TabCounts)) {
        f(self.p.borrow_mut().table(rel));
    }

    #[inline]
    fn xact(&self, rel: RelFileLocator, f: impl FnOnce(&mut XactCounts)) {
        f(self.p.borrow_mut().xact(rel));
    }

    /// The counts of `h`'s relation, through its resolved position.
    #[inline]
    fn at(&self, h: &TabHandle, f: impl FnOnce(&mut TabCounts)) {
        let mut p = self.p.borrow_mut();
        let i = if h.generation.get() == p.generation {
            h.slot.get() as usize
        } else {
            let i = p.slot(h.rel);
            h.slot.set(i as u32);
            h.generation.set(p.generation);
            i
        };
        p.dirty = true;
        f(&mut p.entries[i].t);
    }

    /// A handle on `rel`'s counts, for a scan that counts row by row.
    pub fn handle(&self, rel: RelFileLocator) -> TabHandle {
        let mut p = self.p.borrow_mut();
        let i = p.slot(rel);
        TabHandle { rel, slot: Cell::new(i as u32), generation: Cell::new(p.generation) }
    }

    /// The database the counts of transactions go to (set at connect).
    pub fn set_database(&self, db: Oid) {
        self.p.borrow_mut().db = db;
    }

    /// A heap tuple inserted by the running transaction.
    pub fn count_insert(&self, rel: RelFileLocator) {
        self.xact(rel, |x| x.inserted += 1);
    }

    /// A heap tuple updated (HOT or not) by the running transaction.
    pub fn count_update(&self, rel: RelFileLocator, hot: bool) {
        self.xact(rel, |x| x.updated += 1);
        if hot {
            self.table(rel, |t| t.tuples_hot_updated += 1);
        }
    }

    /// A heap tuple deleted by the running transaction.
    pub fn count_delete(&self, rel: RelFileLocator) {
        self.xact(rel, |x| x.deleted += 1);
    }

    /// A scan of `rel` started (sequential scan of a table, index scan of an index).
    pub fn count_scan(&self, rel: RelFileLocator) {
        self.table(rel, |t| t.numscans += 1);
    }

    /// A scan of `h`'s relation started.
    pub fn count_scan_h(&self, h: &TabHandle) {
        self.at(h, |t| t.numscans += 1);
    }

    /// `n` tuples returned by a scan of `rel`.
    pub fn count_returned(&self, rel: RelFileLocator, n: u64) {
        self.table(rel, |t| t.tuples_returned += n);
    }

    /// `n` tuples returned by a scan of `h`'s relation.
    #[inline]
    pub fn count_returned_h(&self, h: &TabHandle, n: u64) {
        self.at(h, |t| t.tuples_returned += n);
    }

    /// `n` live tuples fetched through `rel` (an index) or from it by TID.
    pub fn count_fetched(&self, rel: RelFileLocator, n: u64) {
        self.table(rel, |t| t.tuples_fetched += n);
    }

    /// `n` live tuples fetched through `h`'s relation (an index) or from it by TID.
    #[inline]
    pub fn count_fetched_h(&self, h: &TabHandle, n: u64) {
        self.at(h, |t| t.tuples_fetched += n);
    }

    /// A buffer of `rel` read (`hit`: found in the pool).
    pub fn count_buffer(&self, rel: RelFileLocator, hit: bool) {
        let mut p = self.p.borrow_mut();
        if hit {
            p.usage_hit += 1;
        } else {
            p.usage_read += 1;
        }
        let t = p.table(rel);
        t.blocks_fetched += 1;
        t.blocks_hit += hit as u64;
    }

    /// Buffer reads so far in this backend's life: (hits, misses).
    pub fn buffer_usage(&self) -> (u64, u64) {
        let p = self.p.borrow();
        (p.usage_hit, p.usage_read)
    }

    /// A deadlock was detected in this backend.
    pub fn count_deadlock(&self) {
        self.p.borrow_mut().deadlocks += 1;
    }

    /// Makes the next [`crate::engine::Backend::pgstat_report`] flush at once.
    pub fn force_next_flush(&self) {
        self.p.borrow_mut().force = true;
    }

    /// Forgets what is pending (pg_stat_reset in this backend: what it counted
    /// before the reset must not reach the shared counters afterwards).
    /// `usage`: the backend's usage counters now.
    pub fn discard(&self, usage: &crate::pgstat::usage::Usage) {
        let mut p = self.p.borrow_mut();
        for e in &mut p.entries {
            e.t = TabCounts::default();
        }
        p.dirty = false;
        p.xact_commit = 0;
        p.xact_rollback = 0;
        p.deadlocks = 0;
        p.temp_flushed = (usage.temp_files, usage.temp_bytes);
    }

    /// The transaction ended (`commit`: committed). Folds its tuple counts into
    /// the pending counts with PostgreSQL's rules (AtEOXact_PgStat).
    pub fn at_eoxact(&self, commit: bool) {
        let mut p = self.p.borrow_mut();
        let p = &mut *p;
        if commit {
            p.xact_commit += 1;
        } else {
            p.xact_rollback += 1;
        }
        if !p.xact_rels.is_empty() {
            p.dirty = true;
        }
        for i in p.xact_rels.drain(..) {
            let e = &mut p.entries[i as usize];
            let x = std::mem::take(&mut e.x);
            e.in_xact = false;
            let t = &mut e.t;
            t.tuples_inserted += x.inserted;
            t.tuples_updated += x.updated;
            t.tuples_deleted += x.deleted;
            if commit {
                t.delta_live += x.inserted as i64 - x.deleted as i64;
                t.delta_dead += (x.updated + x.deleted) as i64;
                // Only committed changes count toward the next ANALYZE.
                t.changed += x.inserted + x.updated + x.deleted;
            } else {
                // Inserted tuples are dead; deleted ones are unaffected.
                t.delta_dead += (x.inserted + x.updated) as i64;
            }
        }
    }

    /// Whether anything waits to be flushed.
    pub fn has_pending(&self) -> bool {
        !self.p.borrow().is_empty()
    }

    /// How long until a flush is allowed (zero: now; None: nothing pending),
    /// measured from the clock reading of the last
    /// [`crate::engine::Backend::pgstat_report`] (the end of the last
    /// statement; the clock is read only if there was none): asked right after
    /// a statement, before the session waits for its client, it is exact to
    /// within the time since, and it costs no clock reading per statement.
    pub fn flush_due_in(&self) -> Option<Duration> {
        let p = self.p.borrow();
        p.due_in(p.last_report)
    }

    /// Takes the pending counts if a flush is due (or `force`): PostgreSQL's
    /// pgstat_report_stat. The caller adds them to the shared counters.
    /// Also returns how long until the next flush is allowed (as
    /// [`BackendStats::flush_due_in`], with one reading of the clock for both).
    /// `usage` reads the backend's usage counters (asked only for a flush).
    pub(crate) fn take_if_due(
        &self,
        force: bool,
        usage: impl FnOnce() -> crate::pgstat::usage::Usage,
    ) -> (Option<Flush>, Option<Duration>) {
        let mut p = self.p.borrow_mut();
        if p.is_empty() {
            return (None, None);
        }
        let now = Instant::now();
        p.last_report = Some(now);
        let due = force || p.force || p.last_flush.is_none_or(|t| now.saturating_duration_since(t) >= MIN_FLUSH_INTERVAL);
        if !due {
            let left = p.due_in(Some(now));
            return (None, left);
        }
        p.force = false;
        p.last_flush = Some(now);
        let p = &mut *p;
        let mut tables = Vec::new();
        if p.dirty {
            for e in &mut p.entries {
                if e.t != TabCounts::default() {
                    tables.push((e.rel, std::mem::take(&mut e.t)));
                }
            }
            p.dirty = false;
        }
        if p.entries.len() > KEEP_ENTRIES && p.xact_rels.is_empty() {
            p.entries = Vec::new();
            p.index = HashMap::new();
            p.recent = [None, None];
            p.generation = p.generation.wrapping_add(1);
        }
        let f = Flush {
            db: p.db,
            tables,
            xact_commit: std::mem::take(&mut p.xact_commit),
            xact_rollback: std::mem::take(&mut p.xact_rollback),
            deadlocks: std::mem::take(&mut p.deadlocks),
            temp_files: 0,
            temp_bytes: 0,
        };
        let u = usage();
        let f = Flush {
            temp_files: u.temp_files.saturating_sub(p.temp_flushed.0),
            temp_bytes: u.temp_bytes.saturating_sub(p.temp_flushed.1),
            ..f
        };
        p.temp_flushed = (u.temp_files, u.temp_bytes);
        // Nothing is pending right after a flush (transaction counts of an
        // open transaction wait for its end, which makes them pending).
        (Some(f), None)
    }
}

impl Pending {
    /// How long until a flush is allowed, `now` read if not given.
    fn due_in(&self, now: Option<Instant>) -> Option<Duration> {
        if self.is_empty() {
            return None;
        }
        Some(match self.last_flush {
            Some(t) if !self.force => {
                MIN_FLUSH_INTERVAL.saturating_sub(now.unwrap_or_else(Instant::now).saturating_duration_since(t))
            }
            _ => Duration::ZERO,
        })
    }
}

/// Pending counts taken for a flush.
pub(crate) struct Flush {
    pub db: Oid,
    pub tables: Vec<(RelFileLocator, TabCounts)>,
    pub xact_commit: u64,
    pub xact_rollback: u64,
    pub deadlocks: u64,
    pub temp_files: u64,
    pub temp_bytes: u64,
}

/// A database's shared counters (pg_stat_database). Relaxed atomics: statistics.
#[derive(Default, Debug)]
pub struct DbCounters {
    pub xact_commit: AtomicU64,
    pub xact_rollback: AtomicU64,
    pub blks_read: AtomicU64,
    pub blks_hit: AtomicU64,
    pub tup_returned: AtomicU64,
    pub tup_fetched: AtomicU64,
    pub tup_inserted: AtomicU64,
    pub tup_updated: AtomicU64,
    pub tup_deleted: AtomicU64,
    pub deadlocks: AtomicU64,
    /// Temporary files removed by the database's backends, and their bytes.
    pub temp_files: AtomicU64,
    pub temp_bytes: AtomicU64,
    /// Sessions started, and the time (µs) they lasted, were active and idle in
    /// a transaction; sessions that ended abandoned, by FATAL, or killed.
    pub sessions: AtomicU64,
    pub session_time_us: AtomicU64,
    pub active_time_us: AtomicU64,
    pub idle_in_transaction_time_us: AtomicU64,
    pub sessions_abandoned: AtomicU64,
    pub sessions_fatal: AtomicU64,
    pub sessions_killed: AtomicU64,
    /// When the counters were last reset (µs since the Unix epoch; 0: never).
    pub stats_reset: AtomicI64,
}

impl DbCounters {
    /// Zeroes the counters and stamps the reset time (pg_stat_reset()).
    pub fn reset(&self, now_us: i64) {
        for c in [
            &self.xact_commit,
            &self.xact_rollback,
            &self.blks_read,
            &self.blks_hit,
            &self.tup_returned,
            &self.tup_fetched,
            &self.tup_inserted,
            &self.tup_updated,
            &self.tup_deleted,
            &self.deadlocks,
            &self.temp_files,
            &self.temp_bytes,
            &self.sessions,
            &self.session_time_us,
            &self.active_time_us,
            &self.idle_in_transaction_time_us,
            &self.sessions_abandoned,
            &self.sessions_fatal,
            &self.sessions_killed,
        ] {
            c.store(0, Ordering::Relaxed);
        }
        self.stats_reset.store(now_us, Ordering::Relaxed);
    }
}

/// Adds `f` to the shared counters (tables through `rel_of`, database `db`).
pub(crate) fn apply_flush(f: Flush, rel_of: impl Fn(RelFileLocator) -> std::sync::Arc<RelCounters>, db: &DbCounters) {
    let add = |a: &AtomicU64, n: u64| {
        if n != 0 {
            a.fetch_add(n, Ordering::Relaxed);
        }
    };
    let (mut ret, mut fet, mut ins, mut upd, mut del, mut read, mut hit) = (0, 0, 0, 0, 0, 0, 0);
    for (rel, t) in f.tables {
        let c = rel_of(rel);
        add(&c.numscans, t.numscans);
        add(&c.tuples_returned, t.tuples_returned);
        add(&c.tuples_fetched, t.tuples_fetched);
        add(&c.inserted, t.tuples_inserted);
        add(&c.updated, t.tuples_updated);
        add(&c.deleted, t.tuples_deleted);
        add(&c.hot_updated, t.tuples_hot_updated);
        add(&c.inserted_since_vacuum, t.tuples_inserted);
        add(&c.changed_since_analyze, t.changed);
        add(&c.blocks_fetched, t.blocks_fetched);
        add(&c.blocks_hit, t.blocks_hit);
        if t.delta_live != 0 {
            c.live.fetch_add(t.delta_live, Ordering::Relaxed);
        }
        if t.delta_dead != 0 {
            c.dead.fetch_add(t.delta_dead, Ordering::Relaxed);
            if t.delta_dead > 0 {
                add(&c.dead_since_vacuum, t.delta_dead as u64);
            }
        }
        ret += t.tuples_returned;
        fet += t.tuples_fetched;
        ins += t.tuples_inserted;
        upd += t.tuples_updated;
        del += t.tuples_deleted;
        read += t.blocks_fetched - t.blocks_hit;
        hit += t.blocks_hit;
    }
    add(&db.xact_commit, f.xact_commit);
    add(&db.xact_rollback, f.xact_rollback);
    add(&db.deadlocks, f.deadlocks);
    add(&db.temp_files, f.temp_files);
    add(&db.temp_bytes, f.temp_bytes);
    add(&db.tup_returned, ret);
    add(&db.tup_fetched, fet);
    add(&db.tup_inserted, ins);
    add(&db.tup_updated, upd);
    add(&db.tup_deleted, del);
    add(&db.blks_read, read);
    add(&db.blks_hit, hit);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(n: u32) -> RelFileLocator {
        RelFileLocator { spc_oid: 1663, db_oid: 5, rel_number: n }
    }

    #[test]
    fn commit_and_abort_fold_as_postgres() {
        let s = BackendStats::default();
        s.count_insert(rel(1));
        s.count_insert(rel(1));
        s.count_delete(rel(1));
        s.count_update(rel(1), true);
        s.at_eoxact(true);
        s.count_insert(rel(1));
        s.count_update(rel(1), false);
        s.count_delete(rel(1));
        s.at_eoxact(false);
        let f = s.take_if_due(false, Default::default).0.expect("first flush is due");
        let t = f.tables.iter().find(|(r, _)| *r == rel(1)).expect("rel 1 counted").1;
        assert_eq!((t.tuples_inserted, t.tuples_updated, t.tuples_deleted, t.tuples_hot_updated), (3, 2, 2, 1));
        // commit: live += 2 - 1, dead += 1 + 1, changed += 4; abort: dead += 1 + 1.
        assert_eq!((t.delta_live, t.delta_dead, t.changed), (1, 4, 4));
        assert_eq!((f.xact_commit, f.xact_rollback), (1, 1));
        // Within the interval nothing is taken unless forced.
        s.count_scan(rel(2));
        assert!(s.take_if_due(false, Default::default).0.is_none());
        assert!(s.flush_due_in().is_some_and(|d| d > Duration::ZERO));
        s.force_next_flush();
        let f = s.take_if_due(false, Default::default).0.expect("forced");
        assert_eq!(f.tables, vec![(rel(2), TabCounts { numscans: 1, ..Default::default() })], "rel 1's flushed counts are not sent again");
        assert!(!s.has_pending());
    }

    #[test]
    fn handles_count_exactly_across_flushes_and_dropped_entries() {
        let s = BackendStats::default();
        let h = s.handle(rel(1));
        s.count_scan_h(&h);
        s.count_returned_h(&h, 2);
        // Interleaved lookups by locator (the two-entry cache and the index).
        for n in 2..5 {
            s.count_buffer(rel(n), n % 2 == 0);
            s.count_fetched_h(&h, 1);
        }
        let f = s.take_if_due(true, Default::default).0.expect("forced");
        let got = |f: &Flush, r| f.tables.iter().find(|(x, _)| *x == r).map(|e| e.1);
        let t = got(&f, rel(1)).expect("rel 1");
        assert_eq!((t.numscans, t.tuples_returned, t.tuples_fetched), (1, 2, 3));
        assert_eq!(got(&f, rel(2)).map(|t| (t.blocks_fetched, t.blocks_hit)), Some((1, 1)));
        assert_eq!(got(&f, rel(3)).map(|t| (t.blocks_fetched, t.blocks_hit)), Some((1, 0)));
        // More relations than are kept: the next flush drops the entries and
        // the old handle finds its relation again.
        for n in 10..(10 + KEEP_ENTRIES as u32 + 5) {
            s.count_scan(rel(n));
        }
        s.count_insert(rel(1));
        assert_eq!(s.take_if_due(true, Default::default).0.expect("forced").tables.len(), KEEP_ENTRIES + 5);
        // A transaction count was pending: the entries stay.
        assert_eq!(s.p.borrow().generation, 0);
        s.at_eoxact(true);
        assert_eq!(s.take_if_due(true, Default::default).0.expect("forced").tables.len(), 1);
        assert_eq!(s.p.borrow().generation, 1, "dropped");
        s.count_returned_h(&h, 7);
        s.count_returned(rel(1), 1);
        let f = s.take_if_due(true, Default::default).0.expect("forced");
        assert_eq!(f.tables, vec![(rel(1), TabCounts { tuples_returned: 8, ..Default::default() })]);
        assert!(!s.has_pending());
    }
}
