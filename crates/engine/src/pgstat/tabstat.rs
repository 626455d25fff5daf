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
use std::cell::RefCell;
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
#[derive(Default, Debug, Clone, Copy)]
struct XactCounts {
    inserted: u64,
    updated: u64,
    deleted: u64,
}

#[derive(Default, Debug)]
struct Pending {
    /// The database the backend is connected to (its counts go there).
    db: Oid,
    tables: HashMap<RelFileLocator, TabCounts>,
    xact: HashMap<RelFileLocator, XactCounts>,
    xact_commit: u64,
    xact_rollback: u64,
    deadlocks: u64,
    /// When the last flush happened (None: never).
    last_flush: Option<Instant>,
    /// Flush at the next report whatever the interval (pg_stat_force_next_flush).
    force: bool,
}

impl Pending {
    fn is_empty(&self) -> bool {
        self.tables.is_empty() && self.xact_commit == 0 && self.xact_rollback == 0 && self.deadlocks == 0
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
        let mut p = self.p.borrow_mut();
        f(p.tables.entry(rel).or_default());
    }

    #[inline]
    fn xact(&self, rel: RelFileLocator, f: impl FnOnce(&mut XactCounts)) {
        let mut p = self.p.borrow_mut();
        f(p.xact.entry(rel).or_default());
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

    /// `n` tuples returned by a scan of `rel`.
    pub fn count_returned(&self, rel: RelFileLocator, n: u64) {
        self.table(rel, |t| t.tuples_returned += n);
    }

    /// `n` live tuples fetched through `rel` (an index) or from it by TID.
    pub fn count_fetched(&self, rel: RelFileLocator, n: u64) {
        self.table(rel, |t| t.tuples_fetched += n);
    }

    /// A buffer of `rel` read (`hit`: found in the pool).
    pub fn count_buffer(&self, rel: RelFileLocator, hit: bool) {
        self.table(rel, |t| {
            t.blocks_fetched += 1;
            t.blocks_hit += hit as u64;
        });
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
    pub fn discard(&self) {
        let mut p = self.p.borrow_mut();
        p.tables.clear();
        p.xact_commit = 0;
        p.xact_rollback = 0;
        p.deadlocks = 0;
    }

    /// The transaction ended (`commit`: committed). Folds its tuple counts into
    /// the pending counts with PostgreSQL's rules (AtEOXact_PgStat).
    pub fn at_eoxact(&self, commit: bool) {
        let mut p = self.p.borrow_mut();
        if commit {
            p.xact_commit += 1;
        } else {
            p.xact_rollback += 1;
        }
        let xact = std::mem::take(&mut p.xact);
        for (rel, x) in xact {
            let t = p.tables.entry(rel).or_default();
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

    /// How long until a flush is allowed (zero: now; None: nothing pending).
    pub fn flush_due_in(&self) -> Option<Duration> {
        let p = self.p.borrow();
        if p.is_empty() {
            return None;
        }
        Some(match p.last_flush {
            Some(t) if !p.force => MIN_FLUSH_INTERVAL.saturating_sub(t.elapsed()),
            _ => Duration::ZERO,
        })
    }

    /// Takes the pending counts if a flush is due (or `force`): PostgreSQL's
    /// pgstat_report_stat. The caller adds them to the shared counters.
    pub(crate) fn take_if_due(&self, force: bool) -> Option<Flush> {
        let mut p = self.p.borrow_mut();
        if p.is_empty() {
            return None;
        }
        let due = force || p.force || p.last_flush.is_none_or(|t| t.elapsed() >= MIN_FLUSH_INTERVAL);
        if !due {
            return None;
        }
        p.force = false;
        p.last_flush = Some(Instant::now());
        let f = Flush {
            db: p.db,
            tables: std::mem::take(&mut p.tables),
            xact_commit: std::mem::take(&mut p.xact_commit),
            xact_rollback: std::mem::take(&mut p.xact_rollback),
            deadlocks: std::mem::take(&mut p.deadlocks),
        };
        Some(f)
    }
}

/// Pending counts taken for a flush.
pub(crate) struct Flush {
    pub db: Oid,
    pub tables: HashMap<RelFileLocator, TabCounts>,
    pub xact_commit: u64,
    pub xact_rollback: u64,
    pub deadlocks: u64,
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
        let f = s.take_if_due(false).expect("first flush is due");
        let t = f.tables[&rel(1)];
        assert_eq!((t.tuples_inserted, t.tuples_updated, t.tuples_deleted, t.tuples_hot_updated), (3, 2, 2, 1));
        // commit: live += 2 - 1, dead += 1 + 1, changed += 4; abort: dead += 1 + 1.
        assert_eq!((t.delta_live, t.delta_dead, t.changed), (1, 4, 4));
        assert_eq!((f.xact_commit, f.xact_rollback), (1, 1));
        // Within the interval nothing is taken unless forced.
        s.count_scan(rel(2));
        assert!(s.take_if_due(false).is_none());
        assert!(s.flush_due_in().is_some_and(|d| d > Duration::ZERO));
        s.force_next_flush();
        assert_eq!(s.take_if_due(false).expect("forced").tables[&rel(2)].numscans, 1);
        assert!(!s.has_pending());
    }
}
