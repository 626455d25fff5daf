//! The cumulative statistics views (PostgreSQL 15's pg_stat_database,
//! pg_stat_{all,user,sys}_tables, pg_stat_{all,user}_indexes,
//! pg_statio_{all,user}_tables) and their functions (pg_stat_reset,
//! pg_stat_reset_single_table_counters, pg_stat_force_next_flush).
//!
//! The counters are the engine's (`pgstat::tabstat`: per backend, flushed to
//! shared counters by relation file at transaction end, at most once a second,
//! and when the session has been idle for that second). The views join them
//! with the catalogs as the statement's snapshot sees them, as PostgreSQL's
//! views join pg_class with `pg_stat_get_*`. A relation without counters shows
//! zeros, as in PostgreSQL.
//!
//! | view | rows |
//! |---|---|
//! | pg_stat_database | one per database (numbackends from the engine's connection registry); no row for shared objects (datid 0): there are none |
//! | pg_stat_all_tables | tables ('r'), TOAST tables ('t'); idx_scan / idx_tup_fetch are sums over the table's indexes (NULL without one) |
//! | pg_stat_user_tables / pg_stat_sys_tables | split on the schema (pg_catalog, information_schema, pg_toast are system) |
//! | pg_stat_all_indexes / pg_stat_user_indexes | every index |
//! | pg_statio_all_tables / pg_statio_user_tables | heap blocks read and hit; index and TOAST blocks from the same counters of those relations |
//!
//! pg_stat_database's temp_files / temp_bytes count the temporary files its
//! backends removed (`ferrogres_engine::pgstat::usage`, added at each flush);
//! conflicts is 0, which is right without a hot standby.
//!
//! Not counted yet: buffer reads of indexes (the B-tree reads its pages with no
//! backend at hand), so idx_blks_* stay 0; checksum failures and the I/O
//! timings are 0 or NULL because nothing produces them yet. The session
//! counters (sessions, session_time, active_time, ...) come from the engine's
//! `Backend::report_connect` / `report_disconnect`.
//!
//! pg_stat_reset and pg_stat_reset_single_table_counters are for superusers
//! (PostgreSQL 15 revokes EXECUTE from PUBLIC).

use crate::catalog;
use ferrogres_datum::errors::{Result, SqlError};
use crate::rowio::scan_rows;
use ferrogres_datum::types::{Type, Value};
use ferrogres_engine::engine::{Backend, DEFAULT_TABLESPACE_OID};
use ferrogres_engine::heap::autovacuum::{table_stats, RelCounters};
use ferrogres_engine::storage::RelFileLocator;
use ferrogres_engine::txn::snapshot::Snapshot;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

pub const PG_STAT_ALL_TABLES_OID: u32 = 12142;
pub const PG_STAT_SYS_TABLES_OID: u32 = 12152;
pub const PG_STAT_USER_TABLES_OID: u32 = 12161;
pub const PG_STATIO_ALL_TABLES_OID: u32 = 12170;
pub const PG_STATIO_USER_TABLES_OID: u32 = 12179;
pub const PG_STAT_ALL_INDEXES_OID: u32 = 12183;
pub const PG_STAT_USER_INDEXES_OID: u32 = 12192;
pub const PG_STAT_DATABASE_OID: u32 = 12266;

pub const TABLES_COLUMNS: &[(&str, Type)] = &[
    ("relid", Type::Oid),
    ("schemaname", Type::Name),
    ("relname", Type::Name),
    ("seq_scan", Type::Int8),
    ("seq_tup_read", Type::Int8),
    ("idx_scan", Type::Int8),
    ("idx_tup_fetch", Type::Int8),
    ("n_tup_ins", Type::Int8),
    ("n_tup_upd", Type::Int8),
    ("n_tup_del", Type::Int8),
    ("n_tup_hot_upd", Type::Int8),
    ("n_live_tup", Type::Int8),
    ("n_dead_tup", Type::Int8),
    ("n_mod_since_analyze", Type::Int8),
    ("n_ins_since_vacuum", Type::Int8),
    ("last_vacuum", Type::Timestamptz),
    ("last_autovacuum", Type::Timestamptz),
    ("last_analyze", Type::Timestamptz),
    ("last_autoanalyze", Type::Timestamptz),
    ("vacuum_count", Type::Int8),
    ("autovacuum_count", Type::Int8),
    ("analyze_count", Type::Int8),
    ("autoanalyze_count", Type::Int8),
];

pub const INDEXES_COLUMNS: &[(&str, Type)] = &[
    ("relid", Type::Oid),
    ("indexrelid", Type::Oid),
    ("schemaname", Type::Name),
    ("relname", Type::Name),
    ("indexrelname", Type::Name),
    ("idx_scan", Type::Int8),
    ("idx_tup_read", Type::Int8),
    ("idx_tup_fetch", Type::Int8),
];

pub const STATIO_COLUMNS: &[(&str, Type)] = &[
    ("relid", Type::Oid),
    ("schemaname", Type::Name),
    ("relname", Type::Name),
    ("heap_blks_read", Type::Int8),
    ("heap_blks_hit", Type::Int8),
    ("idx_blks_read", Type::Int8),
    ("idx_blks_hit", Type::Int8),
    ("toast_blks_read", Type::Int8),
    ("toast_blks_hit", Type::Int8),
    ("tidx_blks_read", Type::Int8),
    ("tidx_blks_hit", Type::Int8),
];

pub const DATABASE_COLUMNS: &[(&str, Type)] = &[
    ("datid", Type::Oid),
    ("datname", Type::Name),
    ("numbackends", Type::Int4),
    ("xact_commit", Type::Int8),
    ("xact_rollback", Type::Int8),
    ("blks_read", Type::Int8),
    ("blks_hit", Type::Int8),
    ("tup_returned", Type::Int8),
    ("tup_fetched", Type::Int8),
    ("tup_inserted", Type::Int8),
    ("tup_updated", Type::Int8),
    ("tup_deleted", Type::Int8),
    ("conflicts", Type::Int8),
    ("temp_files", Type::Int8),
    ("temp_bytes", Type::Int8),
    ("deadlocks", Type::Int8),
    ("checksum_failures", Type::Int8),
    ("checksum_last_failure", Type::Timestamptz),
    ("blk_read_time", Type::Float8),
    ("blk_write_time", Type::Float8),
    ("session_time", Type::Float8),
    ("active_time", Type::Float8),
    ("idle_in_transaction_time", Type::Float8),
    ("sessions", Type::Int8),
    ("sessions_abandoned", Type::Int8),
    ("sessions_fatal", Type::Int8),
    ("sessions_killed", Type::Int8),
    ("stats_reset", Type::Timestamptz),
];

/// A view's columns.
pub type Columns = &'static [(&'static str, Type)];

/// The views: (name, OID, columns).
pub const VIEWS: &[(&str, u32, Columns)] = &[
    ("pg_stat_all_tables", PG_STAT_ALL_TABLES_OID, TABLES_COLUMNS),
    ("pg_stat_sys_tables", PG_STAT_SYS_TABLES_OID, TABLES_COLUMNS),
    ("pg_stat_user_tables", PG_STAT_USER_TABLES_OID, TABLES_COLUMNS),
    ("pg_statio_all_tables", PG_STATIO_ALL_TABLES_OID, STATIO_COLUMNS),
    ("pg_statio_user_tables", PG_STATIO_USER_TABLES_OID, STATIO_COLUMNS),
    ("pg_stat_all_indexes", PG_STAT_ALL_INDEXES_OID, INDEXES_COLUMNS),
    ("pg_stat_user_indexes", PG_STAT_USER_INDEXES_OID, INDEXES_COLUMNS),
    ("pg_stat_database", PG_STAT_DATABASE_OID, DATABASE_COLUMNS),
];

pub fn is_view(oid: u32) -> bool {
    VIEWS.iter().any(|v| v.1 == oid) || crate::stmtstat::is_view(oid)
}

/// One relation of the catalog, as the views need it.
struct Rel {
    oid: u32,
    name: String,
    schema: String,
    kind: String,
    counters: Option<Arc<RelCounters>>,
    /// The TOAST relation's counters: `None` without a TOAST relation, `Some(None)`
    /// with one that nothing has counted yet.
    toast_counters: Option<Option<Arc<RelCounters>>>,
}

fn is_system_schema(s: &str) -> bool {
    s == "pg_catalog" || s == "information_schema" || s.starts_with("pg_toast")
}

fn int(v: u64) -> Value {
    Value::Int8(v.min(i64::MAX as u64) as i64)
}

fn ts(us: i64) -> Value {
    if us == 0 {
        return Value::Null;
    }
    Value::Timestamptz(ferrogres_datum::datetime::system_time_to_timestamptz(std::time::UNIX_EPOCH + std::time::Duration::from_micros(us as u64)))
}

/// (table OID, index OID) pairs.
type IndexPairs = Vec<(u32, u32)>;

/// Every relation of the current database with its counters, and the
/// (table OID, index OID) pairs.
fn relations(backend: &Backend, snap: &Snapshot) -> Result<(Vec<Rel>, IndexPairs)> {
    let namespaces = crate::namespace::namespaces(backend, snap)?;
    let stats = table_stats(backend.engine());
    let db = backend.database();
    let mut rels = Vec::new();
    for (_, r) in scan_rows(backend, &catalog::class_rel(), snap)? {
        let [Value::Oid(oid), name, Value::Oid(ns), Value::Oid(filenode), Value::Oid(toast), Value::Text(kind), ..] = r.as_slice() else { continue };
        let schema = match *ns {
            crate::pgcatalog::PG_TOAST_NAMESPACE => "pg_toast".to_string(),
            n => namespaces.iter().find(|(o, _)| *o == n).map_or_else(|| "pg_catalog".to_string(), |x| x.1.clone()),
        };
        let loc = RelFileLocator { spc_oid: DEFAULT_TABLESPACE_OID, db_oid: db, rel_number: *filenode };
        rels.push(Rel {
            oid: *oid,
            name: ferrogres_datum::types::output(name).unwrap_or_default(),
            schema,
            kind: kind.clone(),
            counters: stats.get(loc),
            toast_counters: (*toast != 0).then(|| stats.get(RelFileLocator { rel_number: *toast, ..loc })),
        });
    }
    let mut pairs = Vec::new();
    for (_, i) in scan_rows(backend, &crate::index::index_rel(), snap)? {
        if let (Value::Oid(ix), Value::Oid(t)) = (&i[0], &i[1]) {
            pairs.push((*t, *ix));
        }
    }
    Ok((rels, pairs))
}

fn load(c: &Option<Arc<RelCounters>>, f: impl Fn(&RelCounters) -> u64) -> u64 {
    c.as_deref().map_or(0, f)
}

/// The rows of view `oid`.
pub fn rows(oid: u32, backend: &Backend, snap: &Snapshot) -> Result<Vec<Vec<Value>>> {
    if crate::stmtstat::is_view(oid) {
        // pg_stat_statements shows the text and id of other roles'
        // statements to pg_read_all_stats' members only (PostgreSQL 15's
        // is_allowed_role; own entries by userid equality, as there).
        let roles = crate::acl::role_graph(backend, snap)?;
        let me = backend.current_user;
        let sees_all = roles.has_privs_of(me, crate::sysviews::PG_READ_ALL_STATS);
        return crate::stmtstat::rows(oid, backend, &|userid| sees_all || userid == me);
    }
    if oid == PG_STAT_DATABASE_OID {
        return pg_stat_database(backend, snap);
    }
    let (rels, pairs) = relations(backend, snap)?;
    let want = |r: &Rel| match oid {
        PG_STAT_USER_TABLES_OID | PG_STATIO_USER_TABLES_OID | PG_STAT_USER_INDEXES_OID => !is_system_schema(&r.schema),
        PG_STAT_SYS_TABLES_OID => is_system_schema(&r.schema),
        _ => true,
    };
    let by_oid = |o: u32| rels.iter().find(|r| r.oid == o);
    let mut out = Vec::new();
    match oid {
        PG_STAT_ALL_INDEXES_OID | PG_STAT_USER_INDEXES_OID => {
            for &(t, ix) in &pairs {
                let (Some(tr), Some(ir)) = (by_oid(t), by_oid(ix)) else { continue };
                if !want(tr) {
                    continue;
                }
                let c = &ir.counters;
                out.push(vec![
                    Value::Oid(t),
                    Value::Oid(ix),
                    Value::Text(tr.schema.clone()),
                    Value::Text(tr.name.clone()),
                    Value::Text(ir.name.clone()),
                    int(load(c, |c| c.numscans.load(Relaxed))),
                    int(load(c, |c| c.tuples_returned.load(Relaxed))),
                    int(load(c, |c| c.tuples_fetched.load(Relaxed))),
                ]);
            }
        }
        _ => {
            for r in rels.iter().filter(|r| matches!(r.kind.as_str(), "r" | "t" | "m" | "p") && want(r)) {
                let indexes: Vec<&Rel> = pairs.iter().filter(|p| p.0 == r.oid).filter_map(|p| by_oid(p.1)).collect();
                let sum = |f: &dyn Fn(&RelCounters) -> u64| -> Option<u64> {
                    (!indexes.is_empty()).then(|| indexes.iter().map(|i| load(&i.counters, f)).sum())
                };
                let opt = |v: Option<u64>| v.map_or(Value::Null, int);
                let c = &r.counters;
                let l = |f: &dyn Fn(&RelCounters) -> u64| load(c, f);
                if oid == PG_STATIO_ALL_TABLES_OID || oid == PG_STATIO_USER_TABLES_OID {
                    let fetched = l(&|c| c.blocks_fetched.load(Relaxed));
                    let hit = l(&|c| c.blocks_hit.load(Relaxed));
                    let idx_fetched = sum(&|c| c.blocks_fetched.load(Relaxed));
                    let idx_hit = sum(&|c| c.blocks_hit.load(Relaxed));
                    let toast_fetched = r.toast_counters.as_ref().map(|c| load(c, |c| c.blocks_fetched.load(Relaxed)));
                    let toast_hit = r.toast_counters.as_ref().map(|c| load(c, |c| c.blocks_hit.load(Relaxed)));
                    out.push(vec![
                        Value::Oid(r.oid),
                        Value::Text(r.schema.clone()),
                        Value::Text(r.name.clone()),
                        int(fetched - hit.min(fetched)),
                        int(hit),
                        opt(idx_fetched.zip(idx_hit).map(|(f, h)| f - h.min(f))),
                        opt(idx_hit),
                        // The TOAST relation's heap blocks; its chunk index's are
                        // not counted (NULL).
                        opt(toast_fetched.zip(toast_hit).map(|(f, h)| f - h.min(f))),
                        opt(toast_hit),
                        Value::Null,
                        Value::Null,
                    ]);
                    continue;
                }
                let idx_fetch = sum(&|c| c.tuples_fetched.load(Relaxed)).map(|s| s + l(&|c| c.tuples_fetched.load(Relaxed)));
                let signed = |f: &dyn Fn(&RelCounters) -> i64| Value::Int8(c.as_deref().map_or(0, f).max(0));
                out.push(vec![
                    Value::Oid(r.oid),
                    Value::Text(r.schema.clone()),
                    Value::Text(r.name.clone()),
                    int(l(&|c| c.numscans.load(Relaxed))),
                    int(l(&|c| c.tuples_returned.load(Relaxed))),
                    opt(sum(&|c| c.numscans.load(Relaxed))),
                    opt(idx_fetch),
                    int(l(&|c| c.inserted.load(Relaxed))),
                    int(l(&|c| c.updated.load(Relaxed))),
                    int(l(&|c| c.deleted.load(Relaxed))),
                    int(l(&|c| c.hot_updated.load(Relaxed))),
                    signed(&|c| c.live.load(Relaxed)),
                    signed(&|c| c.dead.load(Relaxed)),
                    int(l(&|c| c.changed_since_analyze.load(Relaxed))),
                    int(l(&|c| c.inserted_since_vacuum.load(Relaxed))),
                    ts(c.as_deref().map_or(0, |c| c.last_vacuum.load(Relaxed))),
                    ts(c.as_deref().map_or(0, |c| c.last_autovacuum.load(Relaxed))),
                    ts(c.as_deref().map_or(0, |c| c.last_analyze.load(Relaxed))),
                    ts(c.as_deref().map_or(0, |c| c.last_autoanalyze.load(Relaxed))),
                    int(l(&|c| c.vacuum_count.load(Relaxed))),
                    int(l(&|c| c.autovacuum_count.load(Relaxed))),
                    int(l(&|c| c.analyze_count.load(Relaxed))),
                    int(l(&|c| c.autoanalyze_count.load(Relaxed))),
                ]);
            }
        }
    }
    Ok(out)
}

fn pg_stat_database(backend: &Backend, snap: &Snapshot) -> Result<Vec<Vec<Value>>> {
    let engine = backend.engine();
    let stats = table_stats(engine);
    let mut out = Vec::new();
    for (_, d) in crate::database::list(backend, snap)? {
        let c = stats.db(d.oid);
        let l = |a: &std::sync::atomic::AtomicU64| int(a.load(Relaxed));
        let ms = |a: &std::sync::atomic::AtomicU64| Value::Float8(a.load(Relaxed) as f64 / 1000.0);
        out.push(vec![
            Value::Oid(d.oid),
            Value::Text(d.name.clone()),
            Value::Int4(engine.backends_in_database(d.oid, None).len() as i32),
            l(&c.xact_commit),
            l(&c.xact_rollback),
            l(&c.blks_read),
            l(&c.blks_hit),
            l(&c.tup_returned),
            l(&c.tup_fetched),
            l(&c.tup_inserted),
            l(&c.tup_updated),
            l(&c.tup_deleted),
            // conflicts: recovery conflicts, which need a hot standby.
            int(0),
            l(&c.temp_files),
            l(&c.temp_bytes),
            l(&c.deadlocks),
            int(0),
            Value::Null,
            Value::Float8(0.0),
            Value::Float8(0.0),
            ms(&c.session_time_us),
            ms(&c.active_time_us),
            ms(&c.idle_in_transaction_time_us),
            l(&c.sessions),
            l(&c.sessions_abandoned),
            l(&c.sessions_fatal),
            l(&c.sessions_killed),
            ts(c.stats_reset.load(Relaxed)),
        ]);
    }
    Ok(out)
}

/// The statistics functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatFunc {
    /// pg_stat_reset(): the current database's counters.
    Reset,
    /// pg_stat_reset_single_table_counters(oid).
    ResetSingleTable,
    /// pg_stat_force_next_flush().
    ForceNextFlush,
    /// pg_wait_sampling_reset_profile().
    WaitSamplingResetProfile,
    /// ferrogres_wait_sampling_folded(): the profile as folded stacks.
    WaitSamplingFolded,
    /// pg_stat_statements_reset([userid [, dbid [, queryid]]]).
    StatementsReset,
}

/// The function `name` with `nargs` arguments, if it is one of these:
/// (function, argument types, result type).
pub fn lookup_func(name: &str, nargs: usize) -> Option<(StatFunc, &'static [Type], Type)> {
    Some(match (name, nargs) {
        ("pg_stat_reset", 0) => (StatFunc::Reset, &[], Type::Void),
        ("pg_stat_reset_single_table_counters", 1) => (StatFunc::ResetSingleTable, &[Type::Oid], Type::Void),
        ("pg_stat_force_next_flush", 0) => (StatFunc::ForceNextFlush, &[], Type::Void),
        ("pg_wait_sampling_reset_profile", 0) => (StatFunc::WaitSamplingResetProfile, &[], Type::Void),
        ("ferrogres_wait_sampling_folded", 0) => (StatFunc::WaitSamplingFolded, &[], Type::Text),
        ("pg_stat_statements_reset", 0) => (StatFunc::StatementsReset, &[], Type::Void),
        ("pg_stat_statements_reset", 1) => (StatFunc::StatementsReset, &[Type::Oid], Type::Void),
        ("pg_stat_statements_reset", 2) => (StatFunc::StatementsReset, &[Type::Oid, Type::Oid], Type::Void),
        ("pg_stat_statements_reset", 3) => (StatFunc::StatementsReset, &[Type::Oid, Type::Oid, Type::Int8], Type::Void),
        _ => None?,
    })
}

/// Evaluates one of these functions. The reset functions act on the shared
/// counters at once; pg_stat_force_next_flush asks the session (through its
/// lock context) to flush when the statement's transaction ends.
pub fn call(f: StatFunc, vals: &[Value], env: &mut dyn crate::exec::Env) -> Result<Value> {
    // PostgreSQL 15 revokes EXECUTE on the reset functions from PUBLIC.
    match f {
        StatFunc::Reset => env.require_superuser_for("pg_stat_reset")?,
        StatFunc::ResetSingleTable => env.require_superuser_for("pg_stat_reset_single_table_counters")?,
        StatFunc::StatementsReset => env.require_superuser_for("pg_stat_statements_reset")?,
        StatFunc::ForceNextFlush | StatFunc::WaitSamplingResetProfile | StatFunc::WaitSamplingFolded => {}
    }
    let Some(ctx) = env.lock_ctx() else { return Err(SqlError::not_supported("statistics functions outside a session")) };
    let engine = ctx.seqs.engine().clone();
    let db = crate::database::current();
    let stats = table_stats(&engine);
    match f {
        StatFunc::Reset => {
            for (_, c) in stats.rels_of(db) {
                c.reset();
            }
            stats.db(db).reset(ferrogres_engine::pgstat::activity::now_micros());
        }
        StatFunc::ResetSingleTable => {
            let Some(Value::Oid(rel)) = vals.first() else { return Ok(Value::Null) };
            ctx.pgstat_reset_rels.push(*rel);
        }
        StatFunc::ForceNextFlush => ctx.pgstat_force_flush = true,
        StatFunc::WaitSamplingResetProfile => engine.sampler.reset_profile(),
        StatFunc::WaitSamplingFolded => return Ok(Value::Text(engine.sampler.folded())),
        StatFunc::StatementsReset => crate::stmtstat::reset(&engine, vals),
    }
    Ok(Value::Null)
}

/// Resets the counters of relation `oid` (its files: the table's or the
/// index's) as the session's snapshot sees it (pg_stat_reset_single_table_counters).
pub fn reset_rel(backend: &Backend, snap: &Snapshot, oid: u32) -> Result<()> {
    let stats = table_stats(backend.engine());
    for (_, r) in scan_rows(backend, &catalog::class_rel(), snap)? {
        if let [Value::Oid(o), _, _, Value::Oid(filenode), ..] = r.as_slice() {
            if *o == oid {
                let loc = RelFileLocator { spc_oid: DEFAULT_TABLESPACE_OID, db_oid: backend.database(), rel_number: *filenode };
                if let Some(c) = stats.get(loc) {
                    c.reset();
                }
            }
        }
    }
    Ok(())
}
