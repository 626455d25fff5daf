//! WAL positions and WAL statistics as PostgreSQL 15 shows them, read from the
//! engine's WAL (`ferrogres_engine::wal::Wal`).
//!
//! | SQL | from |
//! |---|---|
//! | `pg_current_wal_lsn()` | `Wal::written_upto` (PostgreSQL: the write position) |
//! | `pg_current_wal_insert_lsn()` | `Wal::insert_position` (end of the reserved WAL) |
//! | `pg_current_wal_flush_lsn()` | `Wal::flushed_upto` |
//! | `pg_walfile_name(lsn)` | the segment holding the byte before `lsn` (XLByteToPrevSeg: a position on a segment boundary names the previous segment, `0/0` wraps to `FFFFFFFF000000FF`), named as our segment files are (`wal::layout::segment_file_name`, PostgreSQL's names) |
//! | `pg_is_in_recovery()` | false: a session only runs once recovery is over |
//! | `pg_stat_wal` (OID 12293) | `Wal::stats_since_reset`: wal_records, wal_fpi, wal_bytes (record bytes without alignment padding, as PostgreSQL counts), wal_buffers_full (an inserter had to write out old buffer pages), wal_write (`pwrite` calls), wal_sync (fdatasync rounds: one per flush that had something to sync, however many segments it covered), wal_write_time and wal_sync_time (0: track_wal_io_timing is not implemented, and it is off by default), stats_reset |
//! | `pg_stat_reset_shared(text)` | `'wal'`: `Wal::reset_stats`; `'bgwriter'`: the buffer pool's `BgWriterStats` ([`crate::stmtstat`]); `'archiver'`: `Archiver::reset_stats`; `'recovery_prefetch'`: accepted (there is nothing to reset); anything else 22023 with PostgreSQL's HINT |
//! | `pg_switch_wal()` | `Wal::switch_segment`: an XLOG_SWITCH record ends the segment (returns the record's end; the insert position when the segment has no WAL yet) |
//! | `pg_create_restore_point(text)` | `replication::archive::create_restore_point` (for recovery_target_name) |
//!
//! The engine's counters are shared atomics updated at insertion and write time,
//! so pg_stat_wal is current at once (PostgreSQL 15 publishes a backend's counts
//! when it reports its statistics, at most once a second).

use ferrogres_datum::errors::{Result, SqlError};
use ferrogres_datum::types::{Type, Value};
use ferrogres_engine::engine::{Backend, Engine};
use ferrogres_engine::wal::layout::{segment_file_name, TIMELINE};
use std::sync::Arc;

/// pg_stat_wal's OID in PostgreSQL 15.
pub const PG_STAT_WAL_OID: u32 = 12293;

/// pg_stat_wal's columns.
pub const PG_STAT_WAL_COLUMNS: &[(&str, Type)] = &[
    ("wal_records", Type::Int8),
    ("wal_fpi", Type::Int8),
    ("wal_bytes", Type::Numeric),
    ("wal_buffers_full", Type::Int8),
    ("wal_write", Type::Int8),
    ("wal_sync", Type::Int8),
    ("wal_write_time", Type::Float8),
    ("wal_sync_time", Type::Float8),
    ("stats_reset", Type::Timestamptz),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WalFunc {
    CurrentLsn,
    InsertLsn,
    FlushLsn,
    WalfileName,
    IsInRecovery,
    StatResetShared,
    /// pg_backup_start(label [, fast]).
    BackupStart,
    /// pg_backup_stop([wait_for_archive]) in an expression: its record as
    /// text (in FROM it has its columns: `crate::srf_from`).
    BackupStop,
    /// pg_switch_wal().
    SwitchWal,
    /// pg_create_restore_point(name).
    CreateRestorePoint,
}

/// The function `name` with `nargs` arguments, if it is one of these:
/// (function, argument types, result type).
pub fn lookup_func(name: &str, nargs: usize) -> Option<(WalFunc, &'static [Type], Type)> {
    Some(match (name, nargs) {
        ("pg_current_wal_lsn", 0) => (WalFunc::CurrentLsn, &[], Type::PgLsn),
        ("pg_current_wal_insert_lsn", 0) => (WalFunc::InsertLsn, &[], Type::PgLsn),
        ("pg_current_wal_flush_lsn", 0) => (WalFunc::FlushLsn, &[], Type::PgLsn),
        ("pg_walfile_name", 1) => (WalFunc::WalfileName, &[Type::PgLsn], Type::Text),
        ("pg_is_in_recovery", 0) => (WalFunc::IsInRecovery, &[], Type::Bool),
        ("pg_stat_reset_shared", 1) => (WalFunc::StatResetShared, &[Type::Text], Type::Void),
        ("pg_backup_start", 1) => (WalFunc::BackupStart, &[Type::Text], Type::PgLsn),
        ("pg_backup_start", 2) => (WalFunc::BackupStart, &[Type::Text, Type::Bool], Type::PgLsn),
        ("pg_backup_stop", 0) => (WalFunc::BackupStop, &[], Type::Text),
        ("pg_backup_stop", 1) => (WalFunc::BackupStop, &[Type::Bool], Type::Text),
        ("pg_switch_wal", 0) => (WalFunc::SwitchWal, &[], Type::PgLsn),
        ("pg_create_restore_point", 1) => (WalFunc::CreateRestorePoint, &[Type::Text], Type::PgLsn),
        _ => return None,
    })
}

fn engine(env: &mut dyn crate::exec::Env) -> Result<Arc<Engine>> {
    env.seq_ctx()
        .map(|s| s.engine().clone())
        .ok_or_else(|| SqlError::not_supported("WAL functions outside a session"))
}

/// Evaluates one of these functions (all strict: a NULL argument gives NULL).
pub fn call(f: WalFunc, vals: &[Value], env: &mut dyn crate::exec::Env) -> Result<Value> {
    // PostgreSQL 15 revokes EXECUTE on these from PUBLIC (checked before the
    // call, so a NULL argument does not get past it).
    match f {
        WalFunc::StatResetShared => env.require_superuser_for("pg_stat_reset_shared")?,
        WalFunc::BackupStart => env.require_superuser_for("pg_backup_start")?,
        WalFunc::BackupStop => env.require_superuser_for("pg_backup_stop")?,
        WalFunc::SwitchWal => env.require_superuser_for("pg_switch_wal")?,
        WalFunc::CreateRestorePoint => env.require_superuser_for("pg_create_restore_point")?,
        _ => {}
    }
    if vals.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    Ok(match f {
        WalFunc::CurrentLsn => Value::PgLsn(engine(env)?.wal.written_upto().0),
        WalFunc::InsertLsn => Value::PgLsn(engine(env)?.wal.insert_position().0),
        WalFunc::FlushLsn => Value::PgLsn(engine(env)?.wal.flushed_upto().0),
        WalFunc::WalfileName => match vals[0] {
            Value::PgLsn(lsn) => Value::Text(walfile_name(lsn, engine(env)?.wal.segment_size())),
            ref v => return Err(SqlError::internal(format!("pg_walfile_name of {v:?}"))),
        },
        WalFunc::IsInRecovery => Value::Bool(false),
        WalFunc::BackupStart => {
            let (Value::Text(label), fast) = (&vals[0], matches!(vals.get(1), Some(Value::Bool(true)))) else {
                return Err(SqlError::internal("pg_backup_start without a text label"));
            };
            let ss = env.seq_ctx().ok_or_else(|| SqlError::not_supported("pg_backup_start outside a session"))?;
            Value::PgLsn(ss.start_backup(label, fast)?)
        }
        WalFunc::BackupStop => {
            let ss = env.seq_ctx().ok_or_else(|| SqlError::not_supported("pg_backup_stop outside a session"))?;
            let (lsn, label) = ss.stop_backup()?;
            Value::Text(format!("({},{},\"\")", ferrogres_datum::pg_lsn::output(lsn), record_field(&label)))
        }
        WalFunc::SwitchWal => Value::PgLsn(engine(env)?.wal.switch_segment()?.0),
        WalFunc::CreateRestorePoint => {
            let Value::Text(name) = &vals[0] else { return Err(SqlError::internal("pg_create_restore_point without text")) };
            let e = engine(env)?;
            Value::PgLsn(ferrogres_engine::replication::archive::create_restore_point(&e.wal, name)?.0)
        }
        WalFunc::StatResetShared => {
            let Value::Text(target) = &vals[0] else { return Err(SqlError::internal("pg_stat_reset_shared without text")) };
            match target.as_str() {
                "wal" => engine(env)?.wal.reset_stats(),
                "bgwriter" => crate::stmtstat::reset_bgwriter(&*engine(env)?),
                "archiver" => engine(env)?.archiver.reset_stats(),
                "recovery_prefetch" => {}
                _ => {
                    return Err(SqlError::new(b"22023", format!("unrecognized reset target: \"{target}\""))
                        .with_hint("Target must be \"archiver\", \"bgwriter\", \"recovery_prefetch\", or \"wal\"."))
                }
            }
            Value::Null
        }
    })
}

/// A text field of a record's output (PostgreSQL's record_out): quoted when it
/// is empty or holds a delimiter, quote, backslash or space, with `"` and `\`
/// doubled.
fn record_field(s: &str) -> String {
    if !s.is_empty() && !s.chars().any(|c| matches!(c, ',' | '(' | ')' | '"' | '\\') || c.is_whitespace()) {
        return s.to_string();
    }
    let mut o = String::from("\"");
    for c in s.chars() {
        if c == '"' || c == '\\' {
            o.push(c);
        }
        o.push(c);
    }
    o.push('"');
    o
}

/// pg_walfile_name: the segment holding the byte just before `lsn`.
pub fn walfile_name(lsn: u64, seg_size: u64) -> String {
    segment_file_name(TIMELINE, lsn.wrapping_sub(1) / seg_size, seg_size)
}

/// pg_stat_archiver's one row.
pub fn pg_stat_archiver(engine: &Engine) -> Vec<Vec<Value>> {
    let s = engine.archiver.stats();
    let text = |t: Option<String>| t.map(Value::Text).unwrap_or(Value::Null);
    let time = |t: Option<std::time::SystemTime>| {
        t.map(|t| Value::Timestamptz(ferrogres_datum::datetime::system_time_to_timestamptz(t))).unwrap_or(Value::Null)
    };
    vec![vec![
        Value::Int8(s.archived_count),
        text(s.last_archived_wal),
        time(s.last_archived_time),
        Value::Int8(s.failed_count),
        text(s.last_failed_wal),
        time(s.last_failed_time),
        time(s.stats_reset),
    ]]
}

/// pg_stat_wal's one row.
pub fn pg_stat_wal(backend: &Backend) -> Vec<Vec<Value>> {
    let (s, reset) = backend.engine().wal.stats_since_reset();
    let i = |v: u64| Value::Int8(v.min(i64::MAX as u64) as i64);
    vec![vec![
        i(s.records),
        i(s.fpi),
        Value::Numeric(ferrogres_datum::numeric::Numeric::from_i128(s.bytes as i128)),
        i(s.buffer_full_waits),
        i(s.writes),
        i(s.fsyncs),
        Value::Float8(0.0),
        Value::Float8(0.0),
        Value::Timestamptz(ferrogres_datum::datetime::system_time_to_timestamptz(reset)),
    ]]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walfile_names_as_postgres() {
        let seg = 16 << 20;
        assert_eq!(walfile_name(0x100_0000, seg), "000000010000000000000000");
        assert_eq!(walfile_name(0x100_0001, seg), "000000010000000000000001");
        assert_eq!(walfile_name(0x1_0200_0010, seg), "000000010000000100000002");
        assert_eq!(walfile_name(0, seg), "00000001FFFFFFFF000000FF");
    }
}
