//! The table of known settings (PostgreSQL's GUC table, `guc_tables.c`): for every
//! setting its name, context, type, unit, range and boot value, and the parser that
//! checks a value against them.
//!
//! One table serves three users:
//! - start-up (the binary): every `-c name=value` / `--name=value` is checked here
//!   before anything in the data directory is touched, and fails with PostgreSQL's
//!   FATAL text (`unrecognized configuration parameter "x"`, `invalid value for
//!   parameter "x": "v"`, `N unit is outside the valid range for parameter "x"
//!   (min .. max)`);
//! - the engine ([`super::Settings::set`]) takes the parsed number of the settings
//!   it owns;
//! - the SQL session: its list of settings (SHOW, `pg_settings`) is built from this
//!   table, `SET` checks the context (a `postmaster` setting gives 55P02 `cannot be
//!   changed without restarting the server`) and the value.
//!
//! A name not in the table is an error unless it contains a dot (PostgreSQL's
//! custom-variable placeholders, `myext.option`).
//!
//! Rows marked [`Effect::NotYet`] are PostgreSQL settings ferrogres accepts (so that
//! a configuration written for PostgreSQL starts, and typos in it are still caught)
//! but does not act on yet; `pg_settings` shows them like the others.

use crate::error::{Error, Result, SqlState};

/// When a setting may change (PostgreSQL's GucContext), from most to least fixed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    /// Compiled in or fixed at initdb: never set (`server_version`).
    Internal,
    /// Only at server start (`shared_buffers`, `port`).
    Postmaster,
    /// At start or in the configuration file (reload); not per session.
    Sighup,
    /// In the startup packet, by a superuser.
    SuperuserBackend,
    /// In the startup packet.
    Backend,
    /// By SET, for superusers (every ferrogres role is a superuser today).
    Superuser,
    /// By SET, for anyone.
    User,
}

impl Context {
    /// The name `pg_settings.context` shows.
    pub fn as_str(self) -> &'static str {
        match self {
            Context::Internal => "internal",
            Context::Postmaster => "postmaster",
            Context::Sighup => "sighup",
            Context::SuperuserBackend => "superuser-backend",
            Context::Backend => "backend",
            Context::Superuser => "superuser",
            Context::User => "user",
        }
    }
}

/// The base unit of an integer or real setting (PostgreSQL's GUC_UNIT_*).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    None,
    Bytes,
    Kb,
    Mb,
    /// Blocks of BLCKSZ (8 kB): `shared_buffers`.
    Blocks,
    /// WAL blocks of XLOG_BLCKSZ (8 kB): `wal_buffers`.
    XBlocks,
    Ms,
    S,
    Min,
}

impl Unit {
    /// Size in bytes of a memory unit, length in microseconds of a time unit.
    fn scale(self) -> Option<(bool, f64)> {
        Some(match self {
            Unit::None => return None,
            Unit::Bytes => (true, 1.0),
            Unit::Kb => (true, 1024.0),
            Unit::Mb => (true, 1024.0 * 1024.0),
            Unit::Blocks | Unit::XBlocks => (true, 8192.0),
            Unit::Ms => (false, 1_000.0),
            Unit::S => (false, 1_000_000.0),
            Unit::Min => (false, 60_000_000.0),
        })
    }

    /// The unit as `pg_settings.unit` and range errors print it ("8kB", "ms").
    pub fn as_str(self) -> &'static str {
        match self {
            Unit::None => "",
            Unit::Bytes => "B",
            Unit::Kb => "kB",
            Unit::Mb => "MB",
            Unit::Blocks | Unit::XBlocks => "8kB",
            Unit::Ms => "ms",
            Unit::S => "s",
            Unit::Min => "min",
        }
    }
}

/// Units a memory value may be written in, largest first, with their size in bytes.
const MEMORY_UNITS: [(&str, f64); 5] = [
    ("TB", 1024.0 * 1024.0 * 1024.0 * 1024.0),
    ("GB", 1024.0 * 1024.0 * 1024.0),
    ("MB", 1024.0 * 1024.0),
    ("kB", 1024.0),
    ("B", 1.0),
];
/// Units a time value may be written in, largest first, in microseconds.
const TIME_UNITS: [(&str, f64); 6] = [
    ("d", 86_400_000_000.0),
    ("h", 3_600_000_000.0),
    ("min", 60_000_000.0),
    ("s", 1_000_000.0),
    ("ms", 1_000.0),
    ("us", 1.0),
];
const MEMORY_UNITS_HINT: &str = "Valid units for this parameter are \"B\", \"kB\", \"MB\", \"GB\", and \"TB\".";
const TIME_UNITS_HINT: &str = "Valid units for this parameter are \"us\", \"ms\", \"s\", \"min\", \"h\", and \"d\".";

/// A setting's type with its range (PostgreSQL's config_bool/int/real/enum/string).
#[derive(Clone, Copy, Debug)]
pub enum Kind {
    Bool,
    Int { min: i64, max: i64, unit: Unit },
    Real { min: f64, max: f64 },
    /// Accepted values (case-insensitive); `hidden` ones are accepted but not listed.
    Enum { values: &'static [&'static str], hidden: &'static [&'static str] },
    String,
}

/// Whether ferrogres acts on a setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    Used,
    /// Accepted and validated for compatibility with PostgreSQL configurations; no
    /// effect yet.
    NotYet,
}

/// One row of the table.
#[derive(Debug)]
pub struct Guc {
    /// PostgreSQL's spelling (`DateStyle`, `TimeZone`); lookups ignore case.
    pub name: &'static str,
    pub context: Context,
    pub kind: Kind,
    /// The boot value, as SHOW prints it (the binary and the SQL layer override a few
    /// with values known only at run time: `port`, `TimeZone`, `server_version`).
    pub boot: &'static str,
    /// Sent to the client in ParameterStatus (PostgreSQL's GUC_REPORT).
    pub report: bool,
    pub effect: Effect,
}

/// A parsed value: booleans, integers in the setting's base unit, reals, and the
/// canonical text of enums (lower case) and strings.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Bool(bool),
    Int(i64),
    Real(f64),
    Text(String),
}

impl Value {
    pub fn as_bool(&self) -> bool {
        matches!(self, Value::Bool(true))
    }
    pub fn as_int(&self) -> i64 {
        match self {
            Value::Int(i) => *i,
            _ => 0,
        }
    }
    pub fn as_real(&self) -> f64 {
        match self {
            Value::Real(r) => *r,
            Value::Int(i) => *i as f64,
            _ => 0.0,
        }
    }
}

const INT_MAX: i64 = i32::MAX as i64;
const BOOL_LIKE: &[&str] = &["true", "false", "yes", "no", "1", "0"];

macro_rules! guc {
    ($name:literal, $ctx:ident, $kind:expr, $boot:literal) => {
        Guc { name: $name, context: Context::$ctx, kind: $kind, boot: $boot, report: false, effect: Effect::Used }
    };
    ($name:literal, $ctx:ident, $kind:expr, $boot:literal, report) => {
        Guc { name: $name, context: Context::$ctx, kind: $kind, boot: $boot, report: true, effect: Effect::Used }
    };
    ($name:literal, $ctx:ident, $kind:expr, $boot:literal, not_yet) => {
        Guc { name: $name, context: Context::$ctx, kind: $kind, boot: $boot, report: false, effect: Effect::NotYet }
    };
}

const fn int(min: i64, max: i64, unit: Unit) -> Kind {
    Kind::Int { min, max, unit }
}
const fn real(min: f64, max: f64) -> Kind {
    Kind::Real { min, max }
}
const fn en(values: &'static [&'static str]) -> Kind {
    Kind::Enum { values, hidden: &[] }
}

/// Every setting ferrogres knows, in PostgreSQL's definitions (PostgreSQL 15's
/// contexts, ranges and units; boot values are ferrogres' defaults where they differ:
/// `port` 5433, `wal_buffers` 16MB).
pub static GUCS: &[Guc] = &[
    // ---- connections (postmaster) and authentication
    guc!("port", Postmaster, int(1, 65535, Unit::None), "5433"),
    guc!("listen_addresses", Postmaster, Kind::String, "localhost"),
    guc!("unix_socket_directories", Postmaster, Kind::String, "/tmp"),
    // An octal mode; SHOW prints it as PostgreSQL does (`0777`).
    guc!("unix_socket_permissions", Postmaster, int(0, 0o777, Unit::None), "0777"),
    guc!("data_directory", Postmaster, Kind::String, ""),
    // The data directory's permissions (PostgreSQL reports 0700 or 0750);
    // pg_basebackup and pg_receivewal read it.
    guc!("data_directory_mode", Internal, int(0, 0o777, Unit::None), "0700"),
    guc!("max_connections", Postmaster, int(1, 262_143, Unit::None), "100"),
    guc!("superuser_reserved_connections", Postmaster, int(0, 262_143, Unit::None), "3"),
    guc!("authentication_timeout", Sighup, int(1, 600, Unit::S), "1min"),
    guc!("password_encryption", User, en(&["md5", "scram-sha-256"]), "scram-sha-256"),
    // TLS (ferrogres_server::tls): read at start; a reload logs the change for the next restart.
    guc!("ssl", Sighup, Kind::Bool, "off"),
    guc!("ssl_cert_file", Sighup, Kind::String, "server.crt"),
    guc!("ssl_key_file", Sighup, Kind::String, "server.key"),
    // ---- resources
    guc!("shared_buffers", Postmaster, int(16, INT_MAX / 2, Unit::Blocks), "128MB"),
    guc!("buffer_mapping_partitions", Postmaster, int(1, 4096, Unit::None), "128"),
    guc!("lwlock_fair", Postmaster, Kind::Bool, "on"),
    guc!("lwlock_stats", Postmaster, Kind::Bool, "off"),
    guc!("max_locks_per_transaction", Postmaster, int(10, INT_MAX, Unit::None), "64"),
    guc!("max_pred_locks_per_transaction", Postmaster, int(10, INT_MAX, Unit::None), "64"),
    guc!("max_pred_locks_per_relation", Sighup, int(i32::MIN as i64, INT_MAX, Unit::None), "-2"),
    guc!("max_pred_locks_per_page", Sighup, int(0, INT_MAX, Unit::None), "2"),
    guc!("work_mem", User, int(64, INT_MAX, Unit::Kb), "4MB"),
    // Hash joins and hash aggregation hold up to work_mem times this
    // (ferrogres_sql::sort::SortMem::hash_mem), as PostgreSQL 15.
    guc!("hash_mem_multiplier", User, real(1.0, 1000.0), "2"),
    // CREATE INDEX / REINDEX sort within it (ferrogres_sql::index_build).
    guc!("maintenance_work_mem", User, int(1024, INT_MAX, Unit::Kb), "64MB"),
    // ferrogres's own (ferrogres_sql::memory): what one statement may allocate, -1 none.
    guc!("statement_memory_limit", User, int(-1, INT_MAX, Unit::Kb), "4GB"),
    // ferrogres_sql::sort: bytes one sort or hash aggregate may write to temporary files.
    guc!("temp_file_limit", Superuser, int(-1, INT_MAX, Unit::Kb), "-1"),
    guc!("log_temp_files", Superuser, int(-1, INT_MAX, Unit::Kb), "-1", not_yet),
    // The session layer (ferrogres_datum::stack_depth) checks it against the thread's stack.
    guc!("max_stack_depth", Superuser, int(100, INT_MAX, Unit::Kb), "64MB"),
    guc!("max_worker_processes", Postmaster, int(0, 262_143, Unit::None), "8", not_yet),
    guc!("max_parallel_workers", User, int(0, 1024, Unit::None), "8", not_yet),
    guc!("max_parallel_workers_per_gather", User, int(0, 1024, Unit::None), "2", not_yet),
    guc!("bgwriter_delay", Sighup, int(10, 10_000, Unit::Ms), "200ms"),
    guc!("bgwriter_lru_maxpages", Sighup, int(0, INT_MAX / 2, Unit::None), "100"),
    // ---- WAL
    guc!("fsync", Sighup, Kind::Bool, "on"),
    guc!("synchronous_commit", User, Kind::Enum { values: &["local", "remote_write", "remote_apply", "on", "off"], hidden: BOOL_LIKE }, "on"),
    guc!("full_page_writes", Sighup, Kind::Bool, "on"),
    guc!("wal_buffers", Postmaster, int(-1, INT_MAX / 8192, Unit::XBlocks), "16MB"),
    guc!("commit_delay", Superuser, int(0, 100_000, Unit::None), "0"),
    guc!("commit_siblings", User, int(0, 1000, Unit::None), "5"),
    guc!("checkpoint_timeout", Sighup, int(30, 86_400, Unit::S), "5min"),
    guc!("max_wal_size", Sighup, int(2, INT_MAX, Unit::Mb), "1GB"),
    guc!("wal_level", Postmaster, Kind::Enum { values: &["minimal", "replica", "logical"], hidden: &["archive", "hot_standby"] }, "replica", not_yet),
    // Replication (crate::replication; the walsender is ferrogres_server::walsender).
    guc!("max_wal_senders", Postmaster, int(0, 262_143, Unit::None), "10"),
    guc!("max_replication_slots", Postmaster, int(0, 262_143, Unit::None), "10"),
    guc!("wal_sender_timeout", User, int(0, INT_MAX, Unit::Ms), "1min"),
    // Read at start (a reload says it needs a restart, as other engine sighup settings).
    guc!("wal_keep_size", Sighup, int(0, INT_MAX, Unit::Mb), "0"),
    guc!("wal_segment_size", Internal, int(1 << 20, 1 << 30, Unit::Bytes), "16MB"),
    // Archiving and archive recovery (crate::replication::archive).
    guc!("archive_mode", Postmaster, Kind::Enum { values: &["always", "on", "off"], hidden: BOOL_LIKE }, "off"),
    guc!("archive_command", Sighup, Kind::String, ""),
    guc!("archive_timeout", Sighup, int(0, INT_MAX / 2, Unit::S), "0"),
    // Archive modules are not supported: a non-empty value is refused at start.
    guc!("archive_library", Sighup, Kind::String, ""),
    guc!("restore_command", Sighup, Kind::String, ""),
    guc!("archive_cleanup_command", Sighup, Kind::String, "", not_yet),
    guc!("recovery_end_command", Sighup, Kind::String, "", not_yet),
    guc!("recovery_target", Postmaster, Kind::String, ""),
    guc!("recovery_target_lsn", Postmaster, Kind::String, ""),
    guc!("recovery_target_xid", Postmaster, Kind::String, ""),
    guc!("recovery_target_name", Postmaster, Kind::String, ""),
    guc!("recovery_target_time", Postmaster, Kind::String, ""),
    guc!("recovery_target_inclusive", Postmaster, Kind::Bool, "on"),
    guc!("recovery_target_action", Postmaster, en(&["pause", "promote", "shutdown"]), "pause"),
    guc!("recovery_target_timeline", Postmaster, Kind::String, "latest", not_yet),
    // ---- locks
    guc!("deadlock_timeout", Superuser, int(1, INT_MAX, Unit::Ms), "1s"),
    guc!("log_lock_waits", Superuser, Kind::Bool, "off"),
    guc!("lock_timeout", User, int(0, INT_MAX, Unit::Ms), "0"),
    guc!("statement_timeout", User, int(0, INT_MAX, Unit::Ms), "0"),
    guc!("idle_in_transaction_session_timeout", User, int(0, INT_MAX, Unit::Ms), "0"),
    guc!("idle_session_timeout", User, int(0, INT_MAX, Unit::Ms), "0"),
    // ---- statistics (pg_stat_activity)
    guc!("track_activities", Superuser, Kind::Bool, "on"),
    // The built-in wait-event sampler (pgstat::sampler): ms between samples, 0 off.
    guc!("pg_wait_sampling.period", Sighup, int(0, 3_600_000, Unit::Ms), "10ms"),
    // Query ids (ferrogres_sql::queryid) and pg_stat_statements, built in
    // (pgstat::statements). auto means on: the view is always there.
    guc!("compute_query_id", Superuser, Kind::Enum { values: &["auto", "regress", "on", "off"], hidden: BOOL_LIKE }, "auto"),
    guc!("pg_stat_statements.max", Postmaster, int(100, INT_MAX / 2, Unit::None), "5000"),
    guc!("pg_stat_statements.track", Superuser, en(&["none", "top", "all"]), "top"),
    guc!("pg_stat_statements.track_utility", Superuser, Kind::Bool, "on"),
    guc!("pg_stat_statements.track_planning", Superuser, Kind::Bool, "off", not_yet),
    guc!("pg_stat_statements.save", Sighup, Kind::Bool, "on", not_yet),
    guc!("track_activity_query_size", Postmaster, int(100, 1_048_576, Unit::Bytes), "1kB", not_yet),
    // ---- vacuum
    guc!("vacuum_freeze_min_age", User, int(0, 1_000_000_000, Unit::None), "50000000"),
    guc!("autovacuum", Sighup, Kind::Bool, "on"),
    guc!("autovacuum_naptime", Sighup, int(1, INT_MAX / 1000, Unit::S), "1min"),
    guc!("autovacuum_vacuum_threshold", Sighup, int(0, INT_MAX, Unit::None), "50"),
    guc!("autovacuum_vacuum_scale_factor", Sighup, real(0.0, 100.0), "0.2"),
    guc!("autovacuum_vacuum_insert_threshold", Sighup, int(-1, INT_MAX, Unit::None), "1000"),
    guc!("autovacuum_vacuum_insert_scale_factor", Sighup, real(0.0, 100.0), "0.2"),
    // ---- planner
    guc!("seq_page_cost", User, real(0.0, f64::MAX), "1"),
    guc!("random_page_cost", User, real(0.0, f64::MAX), "4"),
    guc!("cpu_tuple_cost", User, real(0.0, f64::MAX), "0.01"),
    guc!("cpu_index_tuple_cost", User, real(0.0, f64::MAX), "0.005"),
    guc!("cpu_operator_cost", User, real(0.0, f64::MAX), "0.0025"),
    guc!("enable_seqscan", User, Kind::Bool, "on"),
    guc!("enable_indexscan", User, Kind::Bool, "on"),
    guc!("enable_hashjoin", User, Kind::Bool, "on"),
    guc!("enable_nestloop", User, Kind::Bool, "on"),
    guc!("enable_mergejoin", User, Kind::Bool, "on"),
    guc!("enable_hashagg", User, Kind::Bool, "on"),
    guc!("enable_sort", User, Kind::Bool, "on"),
    guc!("effective_cache_size", User, int(1, INT_MAX, Unit::Blocks), "4GB"),
    guc!("join_collapse_limit", User, int(1, INT_MAX, Unit::None), "8"),
    guc!("from_collapse_limit", User, int(1, INT_MAX, Unit::None), "8"),
    guc!("geqo", User, Kind::Bool, "on"),
    guc!("geqo_threshold", User, int(2, INT_MAX, Unit::None), "12"),
    // ---- client defaults
    guc!("application_name", User, Kind::String, "", report),
    guc!("client_encoding", User, Kind::String, "UTF8", report),
    guc!("DateStyle", User, Kind::String, "ISO, MDY", report),
    guc!("IntervalStyle", User, en(&["postgres", "postgres_verbose", "sql_standard", "iso_8601"]), "postgres", report),
    guc!("TimeZone", User, Kind::String, "Etc/UTC", report),
    guc!("timezone_abbreviations", User, Kind::String, "Default"),
    guc!("extra_float_digits", User, int(-15, 3, Unit::None), "1"),
    guc!("bytea_output", User, en(&["escape", "hex"]), "hex"),
    guc!("search_path", User, Kind::String, "\"$user\", public"),
    // heap is the only table access method (SQLAlchemy's reflection reads it).
    guc!("default_table_access_method", User, Kind::String, "heap"),
    guc!("default_transaction_isolation", User, en(&["serializable", "repeatable read", "read committed", "read uncommitted"]), "read committed"),
    guc!("default_transaction_read_only", User, Kind::Bool, "off", report),
    guc!("default_transaction_deferrable", User, Kind::Bool, "off"),
    guc!("standard_conforming_strings", User, Kind::Bool, "on", report),
    guc!("client_min_messages", User, Kind::Enum { values: &["debug5", "debug4", "debug3", "debug2", "debug1", "log", "notice", "warning", "error"], hidden: &["debug", "info"] }, "notice"),
    guc!("row_security", User, Kind::Bool, "on"),
    guc!("check_function_bodies", User, Kind::Bool, "on"),
    guc!("session_authorization", User, Kind::String, "", report),
    guc!("role", User, Kind::String, "none"),
    // ---- fixed: reported, never set
    guc!("server_version", Internal, Kind::String, "", report),
    guc!("server_version_num", Internal, int(100_000, 1_000_000, Unit::None), ""),
    guc!("server_encoding", Internal, Kind::String, "UTF8", report),
    guc!("integer_datetimes", Internal, Kind::Bool, "on", report),
    guc!("in_hot_standby", Internal, Kind::Bool, "off", report),
    guc!("is_superuser", Internal, Kind::Bool, "on", report),
    guc!("block_size", Internal, int(8192, 8192, Unit::None), "8192"),
    // Compiled-in limits drivers read (pgjdbc's DatabaseMetaData reads
    // max_index_keys); PostgreSQL's values.
    guc!("max_index_keys", Internal, int(32, 32, Unit::None), "32"),
    guc!("max_identifier_length", Internal, int(63, 63, Unit::None), "63"),
    guc!("max_function_args", Internal, int(100, 100, Unit::None), "100"),
];

/// The table row of `name` (ignoring case), if any.
pub fn find(name: &str) -> Option<&'static Guc> {
    GUCS.iter().find(|g| g.name.eq_ignore_ascii_case(name))
}

/// A custom-variable placeholder name (`ext.option`): accepted without a table row,
/// as PostgreSQL does.
pub fn is_custom(name: &str) -> bool {
    name.contains('.')
}

/// 42704 `unrecognized configuration parameter "name"`.
pub fn unrecognized(name: &str) -> Error {
    Error::user(SqlState(*b"42704"), format!("unrecognized configuration parameter \"{name}\""))
}

fn invalid_value(name: &str, value: &str) -> Error {
    Error::user(SqlState::INVALID_PARAMETER_VALUE, format!("invalid value for parameter \"{name}\": \"{value}\""))
}

/// 55P02 for a setting whose context forbids a change from `by` (a SET, or the
/// startup packet when `startup_packet`), or `None` when it may change.
pub fn change_forbidden(g: &Guc, startup_packet: bool) -> Option<Error> {
    let msg = match g.context {
        Context::Internal => format!("parameter \"{}\" cannot be changed", g.name.to_ascii_lowercase()),
        Context::Postmaster => {
            format!("parameter \"{}\" cannot be changed without restarting the server", g.name.to_ascii_lowercase())
        }
        Context::Sighup => format!("parameter \"{}\" cannot be changed now", g.name.to_ascii_lowercase()),
        Context::Backend | Context::SuperuserBackend if !startup_packet => {
            format!("parameter \"{}\" cannot be set after connection start", g.name.to_ascii_lowercase())
        }
        _ => return None,
    };
    Some(Error::user(SqlState(*b"55P02"), msg))
}

impl Guc {
    /// Checks `value` against the setting's type, unit and range; `given` is the
    /// name as the user wrote it (PostgreSQL's messages repeat it). Errors are 22023
    /// with PostgreSQL's texts and hints.
    pub fn parse(&self, given: &str, value: &str) -> Result<Value> {
        match self.kind {
            Kind::Bool => parse_bool(value).map(Value::Bool).ok_or_else(|| {
                Error::user(SqlState::INVALID_PARAMETER_VALUE, format!("parameter \"{given}\" requires a Boolean value"))
            }),
            Kind::Int { min, max, unit } => {
                let n = parse_int(given, value, unit)?;
                if n < min || n > max {
                    let u = if unit == Unit::None { String::new() } else { format!(" {}", unit.as_str()) };
                    return Err(Error::user(
                        SqlState::INVALID_PARAMETER_VALUE,
                        format!("{n}{u} is outside the valid range for parameter \"{given}\" ({min} .. {max})"),
                    ));
                }
                Ok(Value::Int(n))
            }
            Kind::Real { min, max } => {
                let v = value.trim();
                let r: f64 = v.parse().ok().filter(|r: &f64| !r.is_nan()).ok_or_else(|| invalid_value(given, value))?;
                if r < min || r > max {
                    return Err(Error::user(
                        SqlState::INVALID_PARAMETER_VALUE,
                        format!(
                            "{} is outside the valid range for parameter \"{given}\" ({} .. {})",
                            fmt_g(r),
                            fmt_g(min),
                            fmt_g(max)
                        ),
                    ));
                }
                Ok(Value::Real(r))
            }
            Kind::Enum { values, hidden } => {
                let v = value.trim();
                match values.iter().chain(hidden).find(|o| o.eq_ignore_ascii_case(v)) {
                    Some(o) => Ok(Value::Text(o.to_string())),
                    None => Err(invalid_value(given, value).with_hint(format!("Available values: {}.", values.join(", ")))),
                }
            }
            Kind::String => Ok(Value::Text(value.to_string())),
        }
    }

    /// The value as SHOW prints it: integers with a unit in the largest unit that
    /// divides them exactly (`16384` blocks is `128MB`, `60` s is `1min`), booleans
    /// as on/off, reals in their shortest form.
    pub fn show(&self, v: &Value) -> String {
        match (self.kind, v) {
            (_, Value::Bool(b)) => if *b { "on" } else { "off" }.to_string(),
            // PostgreSQL's show hook for file modes: octal, four digits.
            (Kind::Int { .. }, Value::Int(n)) if matches!(self.name, "unix_socket_permissions" | "data_directory_mode") => format!("{n:04o}"),
            (Kind::Int { unit, .. }, Value::Int(n)) => show_int(*n, unit),
            (_, Value::Int(n)) => n.to_string(),
            (_, Value::Real(r)) => fmt_g(*r),
            (_, Value::Text(t)) => t.clone(),
        }
    }

    /// Parse and show: the canonical text of a valid value.
    pub fn canonical(&self, given: &str, value: &str) -> Result<String> {
        Ok(self.show(&self.parse(given, value)?))
    }

    /// The boot value, parsed (`None` for an empty boot value filled in at run time).
    pub fn boot_value(&self) -> Option<Value> {
        if self.boot.is_empty() && !matches!(self.kind, Kind::String) {
            return None;
        }
        self.parse(self.name, self.boot).ok()
    }
}

/// PostgreSQL's parse_bool: on/off, true/false, yes/no, 1/0 and unique prefixes.
pub fn parse_bool(value: &str) -> Option<bool> {
    let v = value.trim().to_ascii_lowercase();
    if v.is_empty() {
        return None;
    }
    let prefix_of = |word: &str, min: usize| v.len() >= min && word.starts_with(v.as_str());
    if prefix_of("true", 1) || prefix_of("yes", 1) || v == "on" || v == "1" {
        Some(true)
    } else if prefix_of("false", 1) || prefix_of("no", 1) || prefix_of("off", 2) || v == "0" {
        Some(false)
    } else {
        None
    }
}

/// An integer, possibly fractional (rounded, as PostgreSQL does since 12), with an
/// optional unit when the setting has one; the result is in the setting's base unit.
fn parse_int(given: &str, value: &str, unit: Unit) -> Result<i64> {
    let v = value.trim();
    // strtol with base 0, as PostgreSQL: `0x1F` is hexadecimal, `0777` octal.
    let (sign, digits) = match v.strip_prefix('-') {
        Some(d) => (-1, d),
        None => (1, v.strip_prefix('+').unwrap_or(v)),
    };
    let radix_digits = if let Some(h) = digits.strip_prefix("0x").or_else(|| digits.strip_prefix("0X")) {
        Some((16, h))
    } else if digits.len() > 1 && digits.starts_with('0') && digits.bytes().all(|b| b.is_ascii_digit()) {
        Some((8, &digits[1..]))
    } else {
        None
    };
    if let Some((radix, d)) = radix_digits {
        let n = i64::from_str_radix(d, radix).map_err(|_| invalid_value(given, value))?;
        let n = sign * n;
        if n < i32::MIN as i64 || n > i32::MAX as i64 {
            return Err(invalid_value(given, value).with_hint("Value exceeds integer range."));
        }
        return Ok(n);
    }
    let end = v
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || ((c == '-' || c == '+') && i == 0)))
        .map_or(v.len(), |(i, _)| i);
    // An exponent belongs to the number ("1e3"), not to a unit.
    let end = match v[end..].chars().next() {
        Some('e' | 'E') if v[end + 1..].starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+') => {
            let rest = &v[end + 1..];
            let skip = rest
                .char_indices()
                .find(|&(i, c)| !(c.is_ascii_digit() || ((c == '-' || c == '+') && i == 0)))
                .map_or(rest.len(), |(i, _)| i);
            end + 1 + skip
        }
        _ => end,
    };
    let (num, rest) = v.split_at(end);
    let n: f64 = num.parse().map_err(|_| invalid_value(given, value))?;
    let rest = rest.trim();
    let n = if rest.is_empty() {
        n
    } else {
        let Some((memory, base)) = unit.scale() else {
            return Err(invalid_value(given, value));
        };
        let table: &[(&str, f64)] = if memory { &MEMORY_UNITS } else { &TIME_UNITS };
        match table.iter().find(|(u, _)| *u == rest) {
            Some((_, size)) => n * size / base,
            None => {
                return Err(invalid_value(given, value).with_hint(if memory { MEMORY_UNITS_HINT } else { TIME_UNITS_HINT }))
            }
        }
    };
    let n = n.round_ties_even();
    if !(n >= i32::MIN as f64 && n <= i32::MAX as f64) {
        return Err(invalid_value(given, value).with_hint("Value exceeds integer range."));
    }
    Ok(n as i64)
}

fn show_int(n: i64, unit: Unit) -> String {
    let Some((memory, base)) = unit.scale() else {
        return n.to_string();
    };
    if n <= 0 {
        return n.to_string(); // PostgreSQL shows no unit for 0 and -1 (off/auto)
    }
    let total = n as f64 * base;
    let table: &[(&str, f64)] = if memory { &MEMORY_UNITS } else { &TIME_UNITS };
    // Largest first: the base unit itself always divides, so nothing smaller is used.
    match table.iter().find(|(_, size)| total % size == 0.0) {
        Some((u, size)) => format!("{}{u}", (total / size) as i64),
        None => format!("{n}{}", unit.as_str()),
    }
}

/// C's `%g` (six significant digits, exponent outside 1e-4 .. 1e6), as PostgreSQL
/// prints reals in its range errors.
pub fn fmt_g(x: f64) -> String {
    if x == 0.0 {
        return "0".into();
    }
    let exp = x.abs().log10().floor() as i32;
    if !(-4..6).contains(&exp) {
        let s = format!("{:.5e}", x);
        let (mant, e) = s.split_once('e').unwrap_or((&s, "0"));
        let mant = trim_zeros(mant);
        let e: i32 = e.parse().unwrap_or(0);
        return format!("{mant}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    let decimals = (5 - exp).max(0) as usize;
    trim_zeros(&format!("{x:.decimals$}")).to_string()
}

fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(name: &str, value: &str) -> String {
        let g = find(name).unwrap();
        let e = g.parse(name, value).unwrap_err();
        assert_eq!(e.sqlstate().as_str(), "22023");
        e.to_string()
    }

    #[test]
    fn range_errors_read_as_postgresql_writes_them() {
        assert_eq!(
            err("shared_buffers", "0"),
            "0 8kB is outside the valid range for parameter \"shared_buffers\" (16 .. 1073741823)"
        );
        assert_eq!(
            err("shared_buffers", "1kB"),
            "0 8kB is outside the valid range for parameter \"shared_buffers\" (16 .. 1073741823)"
        );
        assert_eq!(
            err("max_connections", "100000000"),
            "100000000 is outside the valid range for parameter \"max_connections\" (1 .. 262143)"
        );
        assert_eq!(err("port", "0"), "0 is outside the valid range for parameter \"port\" (1 .. 65535)");
        assert_eq!(
            err("authentication_timeout", "700s"),
            "700 s is outside the valid range for parameter \"authentication_timeout\" (1 .. 600)"
        );
        assert_eq!(err("checkpoint_timeout", "1ms"), "0 s is outside the valid range for parameter \"checkpoint_timeout\" (30 .. 86400)");
        assert_eq!(err("work_mem", "10"), "10 kB is outside the valid range for parameter \"work_mem\" (64 .. 2147483647)");
        assert_eq!(
            err("autovacuum_vacuum_scale_factor", "200"),
            "200 is outside the valid range for parameter \"autovacuum_vacuum_scale_factor\" (0 .. 100)"
        );
        assert_eq!(
            err("cpu_tuple_cost", "-1"),
            "-1 is outside the valid range for parameter \"cpu_tuple_cost\" (0 .. 1.79769e+308)"
        );
    }

    #[test]
    fn bad_values_and_units() {
        assert_eq!(err("shared_buffers", "lots"), "invalid value for parameter \"shared_buffers\": \"lots\"");
        let g = find("shared_buffers").unwrap();
        let e = g.parse("shared_buffers", "10MBx").unwrap_err();
        match e {
            Error::User { hint, .. } => assert_eq!(hint.as_deref(), Some(MEMORY_UNITS_HINT)),
            _ => unreachable!(),
        }
        assert_eq!(err("fsync", "maybe"), "parameter \"fsync\" requires a Boolean value");
        assert_eq!(err("port", "abc"), "invalid value for parameter \"port\": \"abc\"");
        assert_eq!(err("max_connections", "99999999999"), "invalid value for parameter \"max_connections\": \"99999999999\"");
        assert_eq!(err("synchronous_commit", "bogus"), "invalid value for parameter \"synchronous_commit\": \"bogus\"");
    }

    #[test]
    fn values_convert_to_the_base_unit_and_show_canonically() {
        let sb = find("shared_buffers").unwrap();
        assert_eq!(sb.parse("shared_buffers", "128MB").unwrap(), Value::Int(16384));
        assert_eq!(sb.parse("shared_buffers", "1.5GB").unwrap(), Value::Int(196_608));
        assert_eq!(sb.show(&Value::Int(16384)), "128MB");
        assert_eq!(sb.show(&Value::Int(1)), "8kB");
        assert_eq!(sb.show(&Value::Int(17)), "136kB");
        let ct = find("checkpoint_timeout").unwrap();
        assert_eq!(ct.canonical("checkpoint_timeout", "300").unwrap(), "5min");
        assert_eq!(ct.canonical("checkpoint_timeout", "90s").unwrap(), "90s");
        let wm = find("work_mem").unwrap();
        assert_eq!(wm.canonical("work_mem", "65536").unwrap(), "64MB");
        let st = find("statement_timeout").unwrap();
        assert_eq!(st.canonical("statement_timeout", "0").unwrap(), "0");
        assert_eq!(st.canonical("statement_timeout", "1500").unwrap(), "1500ms");
        let wb = find("wal_buffers").unwrap();
        assert_eq!(wb.canonical("wal_buffers", "-1").unwrap(), "-1");
        assert_eq!(find("max_connections").unwrap().canonical("max_connections", "1.5").unwrap(), "2");
        assert_eq!(find("fsync").unwrap().canonical("fsync", "OF").unwrap(), "off");
        assert_eq!(find("fsync").unwrap().canonical("fsync", "tr").unwrap(), "on");
        assert!(find("fsync").unwrap().parse("fsync", "o").is_err(), "o is neither on nor off");
        assert_eq!(find("datestyle").unwrap().name, "DateStyle");
    }

    #[test]
    fn every_boot_value_is_valid() {
        for g in GUCS {
            if !g.boot.is_empty() || matches!(g.kind, Kind::String) {
                let v = g.parse(g.name, g.boot).unwrap_or_else(|e| panic!("{}: {e}", g.name));
                assert_eq!(g.show(&v), g.boot, "boot value of {} is not in canonical form", g.name);
            }
        }
    }

    #[test]
    fn contexts_forbid_changes_as_postgresql() {
        let e = change_forbidden(find("shared_buffers").unwrap(), false).unwrap();
        assert_eq!(e.sqlstate().as_str(), "55P02");
        assert_eq!(e.to_string(), "parameter \"shared_buffers\" cannot be changed without restarting the server");
        assert_eq!(
            change_forbidden(find("fsync").unwrap(), true).unwrap().to_string(),
            "parameter \"fsync\" cannot be changed now"
        );
        assert!(change_forbidden(find("work_mem").unwrap(), false).is_none());
    }

    #[test]
    fn percent_g() {
        assert_eq!(fmt_g(f64::MAX), "1.79769e+308");
        assert_eq!(fmt_g(0.05), "0.05");
        assert_eq!(fmt_g(200.0), "200");
        assert_eq!(fmt_g(100.0), "100");
        assert_eq!(fmt_g(1e-5), "1e-05");
    }

    #[test]
    fn integers_take_octal_and_hex_as_strtol_does() {
        let g = find("unix_socket_permissions").unwrap();
        assert_eq!(g.parse("unix_socket_permissions", "0700").unwrap(), Value::Int(0o700));
        assert_eq!(g.canonical("unix_socket_permissions", "0700").unwrap(), "0700");
        assert_eq!(g.canonical("unix_socket_permissions", "511").unwrap(), "0777");
        assert_eq!(
            g.parse("unix_socket_permissions", "01777").unwrap_err().to_string(),
            "1023 is outside the valid range for parameter \"unix_socket_permissions\" (0 .. 511)"
        );
        assert_eq!(find("max_connections").unwrap().parse("max_connections", "0x10").unwrap(), Value::Int(16));
        assert_eq!(find("max_connections").unwrap().parse("max_connections", "010").unwrap(), Value::Int(8));
        assert!(find("max_connections").unwrap().parse("max_connections", "09").is_err());
    }
}
