//! pg_stat_statements built in, and pg_stat_bgwriter / pg_stat_archiver.
//!
//! | SQL | from |
//! |---|---|
//! | `pg_stat_statements` | the engine's shared statement table (`pgstat::statements`), one row per (user, database, query id, top level); PostgreSQL 15's 43 columns (pg_stat_statements 1.10) |
//! | `pg_stat_statements_info` | evictions (dealloc) and the last full reset |
//! | `pg_stat_statements_reset([userid [, dbid [, queryid]]])` | removes the matching entries (0: any) |
//! | `pg_stat_bgwriter` | the buffer pool's `BgWriterStats` (checkpoint, background writer, backend writes) and its allocation count |
//! | `pg_stat_archiver` | the archiver's counters (`ferrogres_engine::replication::archive::Archiver::stats`, through [`crate::walstat::pg_stat_archiver`]): archived_count, last_archived_wal, last_archived_time, failed_count, last_failed_wal, last_failed_time, stats_reset; kept in memory (a restart starts from zero; PostgreSQL keeps them across a clean shutdown) |
//!
//! The views live in pg_catalog (PostgreSQL puts pg_stat_statements in the
//! schema the extension was created in, usually public); `CREATE EXTENSION
//! pg_stat_statements` is accepted and does nothing.
//!
//! What pg_stat_statements measures in ferrogres: calls, the execution time
//! (from the start of the statement's execution to its end, after analysis:
//! PostgreSQL's ExecutorStart..ExecutorEnd), rows (returned by a query,
//! affected by INSERT/UPDATE/DELETE/MERGE, and for utility statements the
//! count of their tag, as PostgreSQL), shared_blks_hit / shared_blks_read
//! (the backend's heap buffer lookups, `BackendStats::buffer_usage`), and
//! from the backend's usage counters (`ferrogres_engine::pgstat::usage`,
//! taken as differences around the statement): shared_blks_dirtied (clean
//! buffers it made dirty), shared_blks_written (dirty victims it wrote out),
//! temp_blks_read / _written (8 kB blocks of its temporary files), and
//! wal_records / wal_fpi / wal_bytes. A transaction's commit record is
//! written after its statement's end, so it is in no entry (as in
//! PostgreSQL). Differences: CHECKPOINT's own record is counted to the
//! CHECKPOINT statement (PostgreSQL's checkpointer writes it).
//!
//! Not tracked yet, shown as 0: plans and the plan times (PostgreSQL also
//! shows 0 while pg_stat_statements.track_planning is off, its default),
//! local_* (temporary tables' buffers are counted as shared), the I/O times
//! (there is no track_io_timing; 0 in PostgreSQL too while it is off), and
//! jit_* (there is no JIT: 0 as in PostgreSQL without it).
//!
//! The entries survive a clean restart and are reset by a crash
//! (`ferrogres_engine::pgstat::persist`; pg_stat_statements.save is
//! accepted but the entries are always saved).
//!
//! Privileges (PostgreSQL 15's): the text and queryid of another role's
//! entries show as `<insufficient privilege>` and NULL unless the current
//! role has pg_read_all_stats' privileges; pg_stat_statements_reset is for
//! superusers (the extension revokes it from PUBLIC; there are no function
//! ACLs here to grant it back).

use ferrogres_datum::errors::{Result, SqlError};
use ferrogres_datum::types::{Type, Value};
use ferrogres_engine::engine::{Backend, Engine};
use std::sync::atomic::Ordering::Relaxed;

/// ferrogres' OIDs for the built-in pg_stat_statements views (PostgreSQL's
/// come from CREATE EXTENSION); the two shared views keep PostgreSQL 15's.
pub const PG_STAT_STATEMENTS_OID: u32 = 9874;
pub const PG_STAT_STATEMENTS_INFO_OID: u32 = 9875;
pub const PG_STAT_BGWRITER_OID: u32 = 12289;
pub const PG_STAT_ARCHIVER_OID: u32 = 12285;

pub const STATEMENTS_COLUMNS: &[(&str, Type)] = &[
    ("userid", Type::Oid),
    ("dbid", Type::Oid),
    ("toplevel", Type::Bool),
    ("queryid", Type::Int8),
    ("query", Type::Text),
    ("plans", Type::Int8),
    ("total_plan_time", Type::Float8),
    ("min_plan_time", Type::Float8),
    ("max_plan_time", Type::Float8),
    ("mean_plan_time", Type::Float8),
    ("stddev_plan_time", Type::Float8),
    ("calls", Type::Int8),
    ("total_exec_time", Type::Float8),
    ("min_exec_time", Type::Float8),
    ("max_exec_time", Type::Float8),
    ("mean_exec_time", Type::Float8),
    ("stddev_exec_time", Type::Float8),
    ("rows", Type::Int8),
    ("shared_blks_hit", Type::Int8),
    ("shared_blks_read", Type::Int8),
    ("shared_blks_dirtied", Type::Int8),
    ("shared_blks_written", Type::Int8),
    ("local_blks_hit", Type::Int8),
    ("local_blks_read", Type::Int8),
    ("local_blks_dirtied", Type::Int8),
    ("local_blks_written", Type::Int8),
    ("temp_blks_read", Type::Int8),
    ("temp_blks_written", Type::Int8),
    ("blk_read_time", Type::Float8),
    ("blk_write_time", Type::Float8),
    ("temp_blk_read_time", Type::Float8),
    ("temp_blk_write_time", Type::Float8),
    ("wal_records", Type::Int8),
    ("wal_fpi", Type::Int8),
    ("wal_bytes", Type::Numeric),
    ("jit_functions", Type::Int8),
    ("jit_generation_time", Type::Float8),
    ("jit_inlining_count", Type::Int8),
    ("jit_inlining_time", Type::Float8),
    ("jit_optimization_count", Type::Int8),
    ("jit_optimization_time", Type::Float8),
    ("jit_emission_count", Type::Int8),
    ("jit_emission_time", Type::Float8),
];

pub const INFO_COLUMNS: &[(&str, Type)] = &[("dealloc", Type::Int8), ("stats_reset", Type::Timestamptz)];

pub const BGWRITER_COLUMNS: &[(&str, Type)] = &[
    ("checkpoints_timed", Type::Int8),
    ("checkpoints_req", Type::Int8),
    ("checkpoint_write_time", Type::Float8),
    ("checkpoint_sync_time", Type::Float8),
    ("buffers_checkpoint", Type::Int8),
    ("buffers_clean", Type::Int8),
    ("maxwritten_clean", Type::Int8),
    ("buffers_backend", Type::Int8),
    ("buffers_backend_fsync", Type::Int8),
    ("buffers_alloc", Type::Int8),
    ("stats_reset", Type::Timestamptz),
];

pub const ARCHIVER_COLUMNS: &[(&str, Type)] = &[
    ("archived_count", Type::Int8),
    ("last_archived_wal", Type::Text),
    ("last_archived_time", Type::Timestamptz),
    ("failed_count", Type::Int8),
    ("last_failed_wal", Type::Text),
    ("last_failed_time", Type::Timestamptz),
    ("stats_reset", Type::Timestamptz),
];

/// A view's columns.
pub type Columns = &'static [(&'static str, Type)];

/// The views: (name, OID, columns).
pub const VIEWS: &[(&str, u32, Columns)] = &[
    ("pg_stat_statements", PG_STAT_STATEMENTS_OID, STATEMENTS_COLUMNS),
    ("pg_stat_statements_info", PG_STAT_STATEMENTS_INFO_OID, INFO_COLUMNS),
    ("pg_stat_bgwriter", PG_STAT_BGWRITER_OID, BGWRITER_COLUMNS),
    ("pg_stat_archiver", PG_STAT_ARCHIVER_OID, ARCHIVER_COLUMNS),
];

pub fn is_view(oid: u32) -> bool {
    VIEWS.iter().any(|v| v.1 == oid)
}

fn int(v: u64) -> Value {
    Value::Int8(v.min(i64::MAX as u64) as i64)
}

fn ts(us: i64) -> Value {
    Value::Timestamptz(ferrogres_datum::datetime::system_time_to_timestamptz(std::time::UNIX_EPOCH + std::time::Duration::from_micros(us.max(0) as u64)))
}

/// The rows of view `oid` (one of [`VIEWS`]). `visible(userid)`: whether
/// the current role may see the text and query id of that role's entries
/// (else `<insufficient privilege>` and a NULL queryid, as PostgreSQL 15).
pub fn rows(oid: u32, backend: &Backend, visible: &dyn Fn(u32) -> bool) -> Result<Vec<Vec<Value>>> {
    let engine = backend.engine();
    Ok(match oid {
        PG_STAT_STATEMENTS_OID => engine
            .statements
            .snapshot()
            .into_iter()
            .map(|(e, c)| {
                let mut row = vec![
                    Value::Oid(e.key.userid),
                    Value::Oid(e.key.dbid),
                    Value::Bool(e.key.toplevel),
                    if visible(e.key.userid) { Value::Int8(e.key.queryid) } else { Value::Null },
                    Value::Text(if visible(e.key.userid) { e.query.to_string() } else { "<insufficient privilege>".into() }),
                    int(0),
                    Value::Float8(0.0),
                    Value::Float8(0.0),
                    Value::Float8(0.0),
                    Value::Float8(0.0),
                    Value::Float8(0.0),
                    int(c.calls),
                    Value::Float8(c.total_exec_time),
                    Value::Float8(c.min_exec_time),
                    Value::Float8(c.max_exec_time),
                    Value::Float8(c.mean_exec_time),
                    Value::Float8(c.stddev_exec_time()),
                    int(c.rows),
                    int(c.shared_blks_hit),
                    int(c.shared_blks_read),
                    int(c.shared_blks_dirtied),
                    int(c.shared_blks_written),
                ];
                // local_blks_*: temporary tables' buffers are counted as shared.
                row.extend((0..4).map(|_| int(0)));
                row.push(int(c.temp_blks_read));
                row.push(int(c.temp_blks_written));
                // blk_read/write_time, temp_blk_read/write_time.
                row.extend((0..4).map(|_| Value::Float8(0.0)));
                row.push(int(c.wal_records));
                row.push(int(c.wal_fpi));
                row.push(Value::Numeric(ferrogres_datum::numeric::Numeric::from_i128(c.wal_bytes as i128)));
                for i in 0..8 {
                    row.push(if i % 2 == 0 { int(0) } else { Value::Float8(0.0) });
                }
                row
            })
            .collect(),
        PG_STAT_STATEMENTS_INFO_OID => {
            let (dealloc, reset) = engine.statements.info();
            vec![vec![int(dealloc), ts(reset)]]
        }
        PG_STAT_BGWRITER_OID => {
            let s = &engine.buffers.bgstats;
            let l = |a: &std::sync::atomic::AtomicU64| int(a.load(Relaxed));
            let ms = |a: &std::sync::atomic::AtomicU64| Value::Float8(a.load(Relaxed) as f64 / 1000.0);
            vec![vec![
                l(&s.checkpoints_timed),
                l(&s.checkpoints_req),
                ms(&s.checkpoint_write_us),
                ms(&s.checkpoint_sync_us),
                l(&s.buffers_checkpoint),
                l(&s.buffers_clean),
                l(&s.maxwritten_clean),
                l(&s.buffers_backend),
                l(&s.buffers_backend_fsync),
                int(engine.buffers.buffers_alloc().saturating_sub(s.alloc_base.load(Relaxed))),
                ts(s.stats_reset.load(Relaxed)),
            ]]
        }
        PG_STAT_ARCHIVER_OID => crate::walstat::pg_stat_archiver(engine),
        _ => return Err(SqlError::internal(format!("no statement statistics view with OID {oid}"))),
    })
}

/// pg_stat_statements_reset with its arguments (missing ones are 0, as
/// PostgreSQL's defaults; NULL ones too).
pub fn reset(engine: &Engine, vals: &[Value]) {
    let oid = |i: usize| match vals.get(i) {
        Some(Value::Oid(o)) => *o,
        Some(Value::Int4(o)) => *o as u32,
        Some(Value::Int8(o)) => *o as u32,
        _ => 0,
    };
    let queryid = match vals.get(2) {
        Some(Value::Int8(q)) => *q,
        Some(Value::Int4(q)) => *q as i64,
        _ => 0,
    };
    engine.statements.reset(oid(0), oid(1), queryid);
}

/// pg_stat_reset_shared('bgwriter').
pub fn reset_bgwriter(engine: &Engine) {
    engine.buffers.bgstats.reset(engine.buffers.buffers_alloc());
}

/// The rows a statement's command tag reports (PostgreSQL's es_processed
/// for DML and queries, the tag's count for utility commands that have one).
pub fn tag_rows(tag: &str) -> u64 {
    let mut words = tag.split(' ');
    match words.next() {
        Some("SELECT" | "INSERT" | "UPDATE" | "DELETE" | "MERGE" | "COPY" | "FETCH" | "MOVE") => {
            tag.rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0)
        }
        _ => 0,
    }
}
