//! Per-statement statistics: the shared table behind pg_stat_statements (see
//! the README's "Statement statistics").
//!
//! Entries are keyed by (user, database, query id, top level). The table is cut
//! into [`PARTITIONS`] hash maps, each behind its own `RwLock`; an execution
//! takes the read lock of one partition to find its entry (a shared acquire:
//! executions of any statements never block each other there) and, still
//! under it, adds its figures under the entry's own mutex (PostgreSQL's
//! per-entry spinlock: only executions of the same statement meet on it). The
//! maps hash with FxHash: the key is mostly the query id, itself a hash. A write lock
//! is taken when a statement is seen for the first time, and by reset; only
//! eviction ([`StatementsTable::dealloc`]) takes them all, in partition order,
//! under `dealloc_lock`.

use rustc_hash::FxHashMap as HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// Partitions of the entry table (a power of two).
pub const PARTITIONS: usize = 32;

/// pg_stat_statements.max's default and minimum (PostgreSQL's).
pub const DEFAULT_MAX: usize = crate::config::PG_STAT_STATEMENTS_MAX_DEFAULT;
pub const MIN_MAX: usize = 100;

/// Eviction removes this percentage of the entries (at least [`MIN_VICTIMS`]),
/// least used first, and decays the others' usage by [`USAGE_DECREASE_FACTOR`]
/// (PostgreSQL's USAGE_DEALLOC_PERCENT, USAGE_DECREASE_FACTOR).
const USAGE_DEALLOC_PERCENT: usize = 5;
const MIN_VICTIMS: usize = 10;
const USAGE_DECREASE_FACTOR: f64 = 0.99;
/// Usage of a new entry, and what each execution adds.
const USAGE_INIT: f64 = 1.0;
const USAGE_EXEC: f64 = 1.0;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct StatementKey {
    pub userid: u32,
    pub dbid: u32,
    pub queryid: i64,
    pub toplevel: bool,
}

/// What one execution adds to its entry.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExecUsage {
    /// Execution time in milliseconds.
    pub exec_ms: f64,
    pub rows: u64,
    pub shared_blks_hit: u64,
    pub shared_blks_read: u64,
    /// WAL, dirtied and written buffers, temporary blocks
    /// ([`crate::pgstat::usage`]).
    pub usage: crate::pgstat::usage::Usage,
}

/// An entry's counters (pg_stat_statements' columns).
#[derive(Clone, Copy, Debug, Default)]
pub struct Counters {
    pub calls: u64,
    pub total_exec_time: f64,
    pub min_exec_time: f64,
    pub max_exec_time: f64,
    pub mean_exec_time: f64,
    /// Sum of squared differences from the mean (Welford), for stddev.
    pub sum_var_exec_time: f64,
    pub rows: u64,
    pub shared_blks_hit: u64,
    pub shared_blks_read: u64,
    pub shared_blks_dirtied: u64,
    pub shared_blks_written: u64,
    pub temp_blks_read: u64,
    pub temp_blks_written: u64,
    pub wal_records: u64,
    pub wal_fpi: u64,
    pub wal_bytes: u64,
    /// Eviction priority: grows by one per execution, decays at each eviction.
    pub usage: f64,
}

impl Counters {
    /// The population standard deviation of the execution times
    /// (pg_stat_statements' stddev_exec_time).
    pub fn stddev_exec_time(&self) -> f64 {
        if self.calls > 1 {
            (self.sum_var_exec_time / self.calls as f64).sqrt()
        } else {
            0.0
        }
    }

    fn add(&mut self, u: &ExecUsage) {
        self.calls += 1;
        self.total_exec_time += u.exec_ms;
        if self.calls == 1 {
            self.min_exec_time = u.exec_ms;
            self.max_exec_time = u.exec_ms;
            self.mean_exec_time = u.exec_ms;
        } else {
            // Welford's online variance, as pg_stat_statements does.
            let old_mean = self.mean_exec_time;
            self.mean_exec_time += (u.exec_ms - old_mean) / self.calls as f64;
            self.sum_var_exec_time += (u.exec_ms - old_mean) * (u.exec_ms - self.mean_exec_time);
            self.min_exec_time = self.min_exec_time.min(u.exec_ms);
            self.max_exec_time = self.max_exec_time.max(u.exec_ms);
        }
        self.rows += u.rows;
        self.shared_blks_hit += u.shared_blks_hit;
        self.shared_blks_read += u.shared_blks_read;
        self.shared_blks_dirtied += u.usage.shared_blks_dirtied;
        self.shared_blks_written += u.usage.shared_blks_written;
        self.temp_blks_read += u.usage.temp_blks_read;
        self.temp_blks_written += u.usage.temp_blks_written;
        self.wal_records += u.usage.wal_records;
        self.wal_fpi += u.usage.wal_fpi;
        self.wal_bytes += u.usage.wal_bytes;
        self.usage += USAGE_EXEC;
    }
}

pub struct Entry {
    pub key: StatementKey,
    /// The statement's text as first seen, constants replaced by `$n`.
    pub query: Arc<str>,
    /// Protected by its own mutex: only executions of this statement take it.
    counters: Mutex<Counters>,
}

impl Entry {
    pub fn counters(&self) -> Counters {
        *self.counters.lock().unwrap_or_else(|e| e.into_inner())
    }
}

type Partition = RwLock<HashMap<StatementKey, Arc<Entry>>>;

/// The shared statement table (`Engine::statements`).
pub struct StatementsTable {
    /// pg_stat_statements.max (read at start).
    max: usize,
    parts: Box<[Partition]>,
    /// Entries in all partitions (changed under a partition's write lock).
    count: AtomicUsize,
    /// Evictions run since the last full reset (pg_stat_statements_info.dealloc).
    dealloc: AtomicU64,
    /// When the table was last fully reset (µs since the Unix epoch).
    stats_reset: AtomicI64,
    /// Serializes evictions (taken before any partition lock).
    dealloc_lock: Mutex<()>,
}

fn partition_of(k: &StatementKey) -> usize {
    // The query id is already a hash; fold the rest in cheaply.
    let h = (k.queryid as u64) ^ ((k.userid as u64) << 17) ^ ((k.dbid as u64) << 41) ^ (k.toplevel as u64);
    let h = h.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (h >> 59) as usize % PARTITIONS
}

impl StatementsTable {
    pub fn new(max: usize) -> StatementsTable {
        StatementsTable {
            max: max.max(MIN_MAX),
            parts: (0..PARTITIONS).map(|_| RwLock::new(HashMap::default())).collect(),
            count: AtomicUsize::new(0),
            dealloc: AtomicU64::new(0),
            stats_reset: AtomicI64::new(crate::pgstat::activity::now_micros()),
            dealloc_lock: Mutex::new(()),
        }
    }

    pub fn max(&self) -> usize {
        self.max
    }

    /// Entries held now.
    pub fn len(&self) -> usize {
        // Relaxed: a sample (changed only under partition write locks).
        self.count.load(Ordering::Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds one execution of `key`; `text` gives the normalized text if the
    /// entry has to be made.
    pub fn record(&self, key: StatementKey, text: impl FnOnce() -> Arc<str>, usage: &ExecUsage) {
        let part = &self.parts[partition_of(&key)];
        {
            // The common case: the entry exists. Its counters are updated under
            // the partition's read lock (lock order: partition, then entry), so
            // the entry's reference count is not touched.
            let map = part.read().unwrap_or_else(|e| e.into_inner());
            if let Some(e) = map.get(&key) {
                e.counters.lock().unwrap_or_else(|e| e.into_inner()).add(usage);
                return;
            }
        }
        // Relaxed: a bound checked again by the next insert if raced.
        if self.count.load(Ordering::Relaxed) >= self.max {
            self.dealloc();
        }
        let mut map = part.write().unwrap_or_else(|e| e.into_inner());
        let entry = map.entry(key).or_insert_with(|| {
            self.count.fetch_add(1, Ordering::Relaxed);
            Arc::new(Entry { key, query: text(), counters: Mutex::new(Counters { usage: USAGE_INIT, ..Default::default() }) })
        });
        entry.counters.lock().unwrap_or_else(|e| e.into_inner()).add(usage);
    }

    /// Puts back an entry saved at the last clean shutdown (pgstat::persist):
    /// ignored beyond `max` (a smaller pg_stat_statements.max now).
    pub fn restore(&self, key: StatementKey, text: Arc<str>, c: Counters) {
        if self.count.load(Ordering::Relaxed) >= self.max {
            return;
        }
        let mut map = self.parts[partition_of(&key)].write().unwrap_or_else(|e| e.into_inner());
        if map.insert(key, Arc::new(Entry { key, query: text, counters: Mutex::new(c) })).is_none() {
            self.count.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Evicts the least used entries (PostgreSQL's entry_dealloc): every
    /// usage decays by 1 %, then the lowest 5 % (at least 10) go.
    fn dealloc(&self) {
        let _g = self.dealloc_lock.lock().unwrap_or_else(|e| e.into_inner());
        if self.count.load(Ordering::Relaxed) < self.max {
            return; // another backend evicted meanwhile
        }
        // Lock order: partitions in index order.
        let mut maps: Vec<_> = self.parts.iter().map(|p| p.write().unwrap_or_else(|e| e.into_inner())).collect();
        let mut usages: Vec<(f64, usize, StatementKey)> = Vec::with_capacity(self.max);
        for (i, m) in maps.iter().enumerate() {
            for (k, e) in m.iter() {
                let mut c = e.counters.lock().unwrap_or_else(|e| e.into_inner());
                c.usage *= USAGE_DECREASE_FACTOR;
                usages.push((c.usage, i, *k));
            }
        }
        usages.sort_by(|a, b| a.0.total_cmp(&b.0));
        let victims = (usages.len() * USAGE_DEALLOC_PERCENT / 100).max(MIN_VICTIMS).min(usages.len());
        for (_, i, k) in &usages[..victims] {
            if maps[*i].remove(k).is_some() {
                self.count.fetch_sub(1, Ordering::Relaxed);
            }
        }
        self.dealloc.fetch_add(1, Ordering::Relaxed);
    }

    /// pg_stat_statements_reset(userid, dbid, queryid): removes the entries
    /// matching every non-zero argument; with all three zero, everything,
    /// and pg_stat_statements_info starts again.
    pub fn reset(&self, userid: u32, dbid: u32, queryid: i64) {
        for p in self.parts.iter() {
            let mut m = p.write().unwrap_or_else(|e| e.into_inner());
            let before = m.len();
            m.retain(|k, _| !((userid == 0 || k.userid == userid) && (dbid == 0 || k.dbid == dbid) && (queryid == 0 || k.queryid == queryid)));
            self.count.fetch_sub(before - m.len(), Ordering::Relaxed);
        }
        if userid == 0 && dbid == 0 && queryid == 0 {
            self.dealloc.store(0, Ordering::Relaxed);
            self.stats_reset.store(crate::pgstat::activity::now_micros(), Ordering::Relaxed);
        }
    }

    /// (dealloc, stats_reset in µs since the Unix epoch).
    pub fn info(&self) -> (u64, i64) {
        (self.dealloc.load(Ordering::Relaxed), self.stats_reset.load(Ordering::Relaxed))
    }

    /// Every entry with a copy of its counters, one partition at a time
    /// (each under its read lock; not one consistent cut).
    pub fn snapshot(&self) -> Vec<(Arc<Entry>, Counters)> {
        let mut out = Vec::with_capacity(self.len());
        for p in self.parts.iter() {
            let m = p.read().unwrap_or_else(|e| e.into_inner());
            out.extend(m.values().map(|e| (e.clone(), e.counters())));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(q: i64) -> StatementKey {
        StatementKey { userid: 10, dbid: 5, queryid: q, toplevel: true }
    }

    #[test]
    fn counts_and_stddev() {
        let t = StatementsTable::new(100);
        for ms in [1.0, 2.0, 3.0] {
            t.record(key(7), || Arc::from("select $1"), &ExecUsage { exec_ms: ms, rows: 2, ..Default::default() });
        }
        let s = t.snapshot();
        assert_eq!(s.len(), 1);
        let c = s[0].1;
        assert_eq!((c.calls, c.rows), (3, 6));
        assert_eq!((c.min_exec_time, c.max_exec_time, c.mean_exec_time, c.total_exec_time), (1.0, 3.0, 2.0, 6.0));
        assert!((c.stddev_exec_time() - (2.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(&*s[0].0.query, "select $1");
    }

    #[test]
    fn eviction_keeps_the_bound_and_the_most_used() {
        let t = StatementsTable::new(100);
        // Statement 0 is run often; then 200 others once each.
        for _ in 0..50 {
            t.record(key(0), || Arc::from("hot"), &ExecUsage::default());
        }
        for q in 1..=200 {
            t.record(key(q), || Arc::from("cold"), &ExecUsage::default());
            assert!(t.len() <= 100);
        }
        assert!(t.info().0 > 0);
        assert!(t.snapshot().iter().any(|(e, _)| e.key.queryid == 0));
    }

    #[test]
    fn reset_by_query_and_all() {
        let t = StatementsTable::new(100);
        t.record(key(1), || Arc::from("a"), &ExecUsage::default());
        t.record(key(2), || Arc::from("b"), &ExecUsage::default());
        t.reset(0, 0, 1);
        assert_eq!(t.snapshot().len(), 1);
        assert_eq!(t.len(), 1);
        t.reset(0, 0, 0);
        assert!(t.is_empty());
    }
}
