//! System views computed from the engine's state rather than stored: each is a
//! row source the analyzer resolves like a table (pg_catalog comes first in the
//! search path) and the executor fills when the query runs
//! (`plan::Source::Virtual`). To add one: a `View` entry (name, OID, columns)
//! and its arm in [`rows`].
//!
//! | view | rows from |
//! |---|---|
//! | `pg_catalog.pg_locks` | the lock manager's `lock_status()` (one consistent snapshot) |
//! | `pg_catalog.pg_stat_wal` | the WAL's counters ([`crate::walstat`]) |
//! | `pg_catalog.pg_hba_file_rules` | the data directory's `pg_hba.conf` as it is on disk now, parsed by `ferrogres_engine::config::hba` (one row per rule, or per line with its error) |
//! | `pg_catalog.pg_stat_ssl` | the same activity slots: each client backend's TLS (version, cipher, bits) as the wire server negotiated it; no client certificates, so client_dn, client_serial and issuer_dn are NULL |
//! | `pg_catalog.pg_replication_slots` | the engine's replication slots (`replication::SlotManager::list`): physical only, `wal_status` `reserved` when the slot holds WAL (no max_slot_wal_keep_size) |
//! | `pg_catalog.pg_stat_replication` | the streaming walsenders (`replication::walsnd`), joined by pid with their activity slots; lags NULL, every standby `async` |
//! | the cumulative statistics views (pg_stat_database, pg_stat_*_tables, ...) | [`crate::statviews`] |
//! | pg_stat_statements, pg_stat_statements_info, pg_stat_bgwriter, pg_stat_archiver | [`crate::stmtstat`] |
//! | `ferrogres_stat_lwlocks` | per LWLock tranche: acquisitions (shared, exclusive; counted with `lwlock_stats` on), those that queued (shared, exclusive), total and max wait in ms (`pgstat::lwlock_stats`); a `SpinDelay` row counts spinlock back-off sleeps |
//! | `ferrogres_stat_locks` | per heavyweight lock type: fast-path and main-table acquisitions, fast-path locks moved by strong lockers (on the `relation` row), waits, total and max wait in ms (`LockManager::lock_type_stats`) |
//! | `pg_wait_sampling_history`, `pg_wait_sampling_profile` | the wait-event sampler (`pgstat::sampler`) |
//! | `pg_catalog.pg_stat_activity` | the engine's per-backend activity slots (`pgstat::activity`), wait events (`pgstat::wait_event`) and ProcArray xid/xmin |

use crate::catalog::{self, Column, Table};
use ferrogres_datum::errors::Result;
use crate::rowio::RelStorage;
use ferrogres_datum::types::{Type, Value};
use ferrogres_engine::engine::DEFAULT_TABLESPACE_OID;
use ferrogres_engine::storage::RelFileLocator;

/// pg_locks' OID in PostgreSQL 15 (its AccessShareLock shows in pg_locks).
pub const PG_LOCKS_OID: u32 = 12073;

/// pg_hba_file_rules' OID in PostgreSQL 15.
pub const PG_HBA_FILE_RULES_OID: u32 = 12114;

/// pg_stat_ssl's OID in PostgreSQL 15.
pub const PG_STAT_SSL_OID: u32 = 12249;

/// pg_replication_slots' and pg_stat_replication's OIDs in PostgreSQL 15.
pub const PG_REPLICATION_SLOTS_OID: u32 = 12257;
pub const PG_STAT_REPLICATION_OID: u32 = 12227;

/// pg_stat_activity's OID in PostgreSQL 15.
pub const PG_STAT_ACTIVITY_OID: u32 = 12222;

/// ferrogres' own views (OIDs in a range PostgreSQL 15 leaves unused).
pub const FERROGRES_STAT_LWLOCKS_OID: u32 = 9870;
pub const FERROGRES_STAT_LOCKS_OID: u32 = 9871;
/// pg_wait_sampling's views, built in.
pub const PG_WAIT_SAMPLING_HISTORY_OID: u32 = 9872;
pub const PG_WAIT_SAMPLING_PROFILE_OID: u32 = 9873;

struct View {
    name: &'static str,
    oid: u32,
    columns: &'static [(&'static str, Type)],
}

const VIEWS: &[View] = &[View {
    name: "pg_locks",
    oid: PG_LOCKS_OID,
    columns: &[
        ("locktype", Type::Text),
        ("database", Type::Oid),
        ("relation", Type::Oid),
        ("page", Type::Int4),
        ("tuple", Type::Int2),
        ("virtualxid", Type::Text),
        ("transactionid", Type::Xid),
        ("classid", Type::Oid),
        ("objid", Type::Oid),
        ("objsubid", Type::Int2),
        ("virtualtransaction", Type::Text),
        ("pid", Type::Int4),
        ("mode", Type::Text),
        ("granted", Type::Bool),
        ("fastpath", Type::Bool),
        ("waitstart", Type::Timestamptz),
    ],
}, View {
    name: "pg_stat_activity",
    oid: PG_STAT_ACTIVITY_OID,
    // PostgreSQL 15's columns and order; client_addr is text (no inet type yet).
    columns: &[
        ("datid", Type::Oid),
        ("datname", Type::Name),
        ("pid", Type::Int4),
        ("leader_pid", Type::Int4),
        ("usesysid", Type::Oid),
        ("usename", Type::Name),
        ("application_name", Type::Text),
        ("client_addr", Type::Text),
        ("client_hostname", Type::Text),
        ("client_port", Type::Int4),
        ("backend_start", Type::Timestamptz),
        ("xact_start", Type::Timestamptz),
        ("query_start", Type::Timestamptz),
        ("state_change", Type::Timestamptz),
        ("wait_event_type", Type::Text),
        ("wait_event", Type::Text),
        ("state", Type::Text),
        ("backend_xid", Type::Xid),
        ("backend_xmin", Type::Xid),
        ("query_id", Type::Int8),
        ("query", Type::Text),
        ("backend_type", Type::Text),
    ],
}, View {
    name: "pg_replication_slots",
    oid: PG_REPLICATION_SLOTS_OID,
    // PostgreSQL 15's columns and order.
    columns: &[
        ("slot_name", Type::Name),
        ("plugin", Type::Name),
        ("slot_type", Type::Text),
        ("datoid", Type::Oid),
        ("database", Type::Name),
        ("temporary", Type::Bool),
        ("active", Type::Bool),
        ("active_pid", Type::Int4),
        ("xmin", Type::Xid),
        ("catalog_xmin", Type::Xid),
        ("restart_lsn", Type::PgLsn),
        ("confirmed_flush_lsn", Type::PgLsn),
        ("wal_status", Type::Text),
        ("safe_wal_size", Type::Int8),
        ("two_phase", Type::Bool),
    ],
}, View {
    name: "pg_stat_replication",
    oid: PG_STAT_REPLICATION_OID,
    // PostgreSQL 15's columns and order; client_addr is text (no inet type yet).
    columns: &[
        ("pid", Type::Int4),
        ("usesysid", Type::Oid),
        ("usename", Type::Name),
        ("application_name", Type::Text),
        ("client_addr", Type::Text),
        ("client_hostname", Type::Text),
        ("client_port", Type::Int4),
        ("backend_start", Type::Timestamptz),
        ("backend_xmin", Type::Xid),
        ("state", Type::Text),
        ("sent_lsn", Type::PgLsn),
        ("write_lsn", Type::PgLsn),
        ("flush_lsn", Type::PgLsn),
        ("replay_lsn", Type::PgLsn),
        ("write_lag", Type::Interval),
        ("flush_lag", Type::Interval),
        ("replay_lag", Type::Interval),
        ("sync_priority", Type::Int4),
        ("sync_state", Type::Text),
        ("reply_time", Type::Timestamptz),
    ],
}, View {
    name: "pg_stat_ssl",
    oid: PG_STAT_SSL_OID,
    // PostgreSQL 15's columns and order.
    columns: &[
        ("pid", Type::Int4),
        ("ssl", Type::Bool),
        ("version", Type::Text),
        ("cipher", Type::Text),
        ("bits", Type::Int4),
        ("client_dn", Type::Text),
        ("client_serial", Type::Numeric),
        ("issuer_dn", Type::Text),
    ],
}, View {
    name: "pg_hba_file_rules",
    oid: PG_HBA_FILE_RULES_OID,
    columns: &[
        ("line_number", Type::Int4),
        ("type", Type::Text),
        ("database", Type::Array(&Type::Text)),
        ("user_name", Type::Array(&Type::Text)),
        ("address", Type::Text),
        ("netmask", Type::Text),
        ("auth_method", Type::Text),
        ("options", Type::Array(&Type::Text)),
        ("error", Type::Text),
    ],
}, View {
    name: "ferrogres_stat_lwlocks",
    oid: FERROGRES_STAT_LWLOCKS_OID,
    columns: &[
        ("tranche", Type::Text),
        ("acquired_shared", Type::Int8),
        ("acquired_exclusive", Type::Int8),
        ("blocked_shared", Type::Int8),
        ("blocked_exclusive", Type::Int8),
        ("wait_time", Type::Float8),
        ("max_wait", Type::Float8),
    ],
}, View {
    name: "ferrogres_stat_locks",
    oid: FERROGRES_STAT_LOCKS_OID,
    columns: &[
        ("locktype", Type::Text),
        ("fastpath_acquired", Type::Int8),
        ("main_acquired", Type::Int8),
        ("fastpath_transfers", Type::Int8),
        ("waits", Type::Int8),
        ("wait_time", Type::Float8),
        ("max_wait", Type::Float8),
    ],
}, View {
    name: "pg_wait_sampling_history",
    oid: PG_WAIT_SAMPLING_HISTORY_OID,
    columns: &[
        ("pid", Type::Int4),
        ("ts", Type::Timestamptz),
        ("event_type", Type::Text),
        ("event", Type::Text),
        ("queryid", Type::Int8),
    ],
}, View {
    name: "pg_wait_sampling_profile",
    oid: PG_WAIT_SAMPLING_PROFILE_OID,
    columns: &[
        ("pid", Type::Int4),
        ("event_type", Type::Text),
        ("event", Type::Text),
        ("queryid", Type::Int8),
        ("count", Type::Int8),
    ],
}, View {
    name: "pg_stat_wal",
    oid: crate::walstat::PG_STAT_WAL_OID,
    columns: crate::walstat::PG_STAT_WAL_COLUMNS,
}];

/// The view `schema.name` (schema None or pg_catalog), as a table the analyzer
/// can scope column references over.
pub fn lookup(schema: Option<&str>, name: &str) -> Option<Table> {
    if schema.is_some_and(|s| s != "pg_catalog") {
        return None;
    }
    let v = VIEWS.iter().find(|v| v.name == name).map(|v| (v.name, v.oid, v.columns)).or_else(|| crate::statviews::VIEWS.iter().chain(crate::stmtstat::VIEWS).find(|v| v.0 == name).copied())?;
    let v = View { name: v.0, oid: v.1, columns: v.2 };
    let columns: Vec<Column> = v
        .columns
        .iter()
        .map(|(n, ty)| Column { name: n.to_string(), ty: *ty, typmod: -1, not_null: false, default: None })
        .collect();
    Some(Table {
        extras: Default::default(),
        oid: v.oid,
        name: v.name.to_string(),
        namespace: catalog::PG_CATALOG_NAMESPACE,
        storage: RelStorage {
            rel: RelFileLocator { spc_oid: DEFAULT_TABLESPACE_OID, db_oid: crate::database::current(), rel_number: v.oid },
            toast: None,
            types: columns.iter().map(|c| c.ty).collect(),
            missing: Vec::new(),
            proj: None,
            system: None,
        },
        columns,
        indexes: Vec::new(),
    })
}

/// Is `oid` one of these views?
pub fn is_view(oid: u32) -> bool {
    VIEWS.iter().any(|v| v.oid == oid) || crate::pgcatalog::is_view(oid) || crate::statviews::is_view(oid) || crate::stmtstat::is_view(oid)
}

/// The query source for a resolved FROM table.
pub fn source(t: Table) -> crate::plan::Source {
    if is_view(t.oid) {
        crate::plan::Source::Virtual(t.oid)
    } else {
        crate::plan::Source::Table(t)
    }
}

/// The rows of view `oid`, computed now.
pub fn rows(oid: u32, backend: &ferrogres_engine::engine::Backend, snap: &ferrogres_engine::txn::snapshot::Snapshot) -> Result<Vec<Vec<Value>>> {
    match oid {
        PG_LOCKS_OID => pg_locks(backend, snap),
        PG_STAT_ACTIVITY_OID => pg_stat_activity(backend, snap),
        PG_STAT_SSL_OID => Ok(pg_stat_ssl(backend)),
        PG_REPLICATION_SLOTS_OID => Ok(pg_replication_slots(backend)),
        PG_STAT_REPLICATION_OID => Ok(pg_stat_replication(backend)),
        crate::walstat::PG_STAT_WAL_OID => Ok(crate::walstat::pg_stat_wal(backend)),
        PG_HBA_FILE_RULES_OID => pg_hba_file_rules(backend),
        FERROGRES_STAT_LWLOCKS_OID => Ok(stat_lwlocks()),
        FERROGRES_STAT_LOCKS_OID => Ok(stat_locks(backend)),
        PG_WAIT_SAMPLING_HISTORY_OID => Ok(wait_sampling_history(backend)),
        PG_WAIT_SAMPLING_PROFILE_OID => Ok(wait_sampling_profile(backend)),
        _ => Err(ferrogres_datum::errors::SqlError::internal(format!("no system view with OID {oid}"))),
    }
}

/// pg_hba.conf as it is on disk (not necessarily what the server loaded: as in
/// PostgreSQL, the view is for checking a file before reloading it).
fn pg_hba_file_rules(backend: &ferrogres_engine::engine::Backend) -> Result<Vec<Vec<Value>>> {
    use ferrogres_engine::config::{conffile, hba};
    let path = backend.engine().datadir().join(conffile::HBA_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| {
        ferrogres_datum::errors::SqlError::new(b"58P01", format!("could not open configuration file \"{}\": {e}", path.display()))
    })?;
    let arr = |v: Vec<String>| Value::Array(Box::new(ferrogres_datum::array::Array::new(Type::Text, v.into_iter().map(Value::Text).collect())));
    Ok(hba::parse_lines(&text)
        .into_iter()
        .map(|(line, r)| match r {
            Ok(rule) => {
                let (address, netmask) = match rule.address() {
                    None => (Value::Null, Value::Null),
                    Some((a, m)) => (Value::Text(a), m.map_or(Value::Null, Value::Text)),
                };
                vec![
                    Value::Int4(line as i32),
                    Value::Text(rule.conn_type.as_str().into()),
                    arr(rule.databases()),
                    arr(rule.users()),
                    address,
                    netmask,
                    Value::Text(rule.method.as_str().into()),
                    Value::Null,
                    Value::Null,
                ]
            }
            Err(e) => {
                let mut row = vec![Value::Null; 9];
                row[0] = Value::Int4(line as i32);
                row[8] = Value::Text(e);
                row
            }
        })
        .collect())
}

/// One row per replication slot (physical only: no plugin, database or xmins).
fn pg_replication_slots(backend: &ferrogres_engine::engine::Backend) -> Vec<Vec<Value>> {
    backend
        .engine()
        .slots
        .list()
        .into_iter()
        .map(|s| {
            let reserved = s.restart_lsn.0 > 0;
            vec![
                Value::Text(s.name),
                Value::Null,
                Value::Text("physical".into()),
                Value::Null,
                Value::Null,
                Value::Bool(false),
                Value::Bool(s.active_pid.is_some()),
                s.active_pid.map_or(Value::Null, Value::Int4),
                Value::Null,
                Value::Null,
                if reserved { Value::PgLsn(s.restart_lsn.0) } else { Value::Null },
                Value::Null,
                // max_slot_wal_keep_size is unlimited: WAL a slot needs is
                // always kept ("reserved"), and safe_wal_size is NULL.
                if reserved { Value::Text("reserved".into()) } else { Value::Null },
                Value::Null,
                Value::Bool(false),
            ]
        })
        .collect()
}

/// One row per streaming walsender, with its connection's details from
/// pg_stat_activity's slots. Lags are not measured yet (NULL); every standby is
/// asynchronous (sync_priority 0, "async").
fn pg_stat_replication(backend: &ferrogres_engine::engine::Backend) -> Vec<Vec<Value>> {
    let engine = backend.engine();
    let activity = engine.activity.rows();
    let lsn = |l: ferrogres_engine::storage::Lsn| if l.0 == 0 { Value::Null } else { Value::PgLsn(l.0) };
    engine
        .walsenders
        .list()
        .into_iter()
        .map(|w| {
            let a = activity.iter().find(|r| r.info.pid == w.pid);
            let text = |v: Option<String>| v.map_or(Value::Null, Value::Text);
            let reply = if w.reply_time_us == 0 {
                Value::Null
            } else {
                // Microseconds since 2000-01-01.
                let unix_us = w.reply_time_us + 946_684_800_000_000;
                Value::Timestamptz(ferrogres_datum::datetime::system_time_to_timestamptz(
                    std::time::UNIX_EPOCH + std::time::Duration::from_micros(unix_us.max(0) as u64),
                ))
            };
            vec![
                Value::Int4(w.pid),
                a.and_then(|r| r.info.usesysid).map_or(Value::Null, Value::Oid),
                text(a.and_then(|r| r.info.usename.clone())),
                Value::Text(a.map(|r| r.info.application_name.clone()).unwrap_or_default()),
                text(a.and_then(|r| r.info.client_addr.clone())),
                Value::Null,
                a.and_then(|r| r.info.client_port).map_or(Value::Null, Value::Int4),
                Value::Timestamptz(ferrogres_datum::datetime::system_time_to_timestamptz(w.started)),
                Value::Null,
                Value::Text(w.state.into()),
                lsn(w.sent),
                lsn(w.write),
                lsn(w.flush),
                lsn(w.replay),
                Value::Null,
                Value::Null,
                Value::Null,
                Value::Int4(0),
                Value::Text("async".into()),
                reply,
            ]
        })
        .collect()
}

/// One row per client backend (PostgreSQL's view keeps those with a client_port).
fn pg_stat_ssl(backend: &ferrogres_engine::engine::Backend) -> Vec<Vec<Value>> {
    backend
        .engine()
        .activity
        .rows()
        .into_iter()
        .filter(|r| r.info.client_port.is_some())
        .map(|r| {
            let pid = Value::Int4(r.info.pid);
            match r.info.ssl {
                Some((version, cipher, bits)) => vec![
                    pid,
                    Value::Bool(true),
                    Value::Text(version),
                    Value::Text(cipher),
                    Value::Int4(bits),
                    Value::Null,
                    Value::Null,
                    Value::Null,
                ],
                None => vec![pid, Value::Bool(false), Value::Null, Value::Null, Value::Null, Value::Null, Value::Null, Value::Null],
            }
        })
        .collect()
}

fn ms(d: std::time::Duration) -> Value {
    Value::Float8(d.as_secs_f64() * 1000.0)
}

/// ferrogres_stat_lwlocks: one row per LWLock tranche (the engine's
/// always-on per-tranche counters, `pgstat::lwlock_stats`): acquisitions and
/// those that had to queue, by mode, and their total and longest wait in ms;
/// plus a row `SpinDelay` whose blocked_exclusive counts spinlock back-off
/// sleeps (its acquisition counts are 0).
fn stat_lwlocks() -> Vec<Vec<Value>> {
    use ferrogres_engine::pgstat::lwlock_stats::{lwlock_stats_snapshot, spin_delays};
    let mut out: Vec<Vec<Value>> = lwlock_stats_snapshot()
        .into_iter()
        .map(|t| {
            vec![
                Value::Text(t.tranche.name().to_string()),
                Value::Int8(t.acquired_shared as i64),
                Value::Int8(t.acquired_exclusive as i64),
                Value::Int8(t.blocked_shared as i64),
                Value::Int8(t.blocked_exclusive as i64),
                ms(t.wait_time),
                ms(t.max_wait),
            ]
        })
        .collect();
    out.push(vec![
        Value::Text("SpinDelay".into()),
        Value::Int8(0),
        Value::Int8(0),
        Value::Int8(0),
        Value::Int8(spin_delays() as i64),
        Value::Null,
        Value::Null,
    ]);
    out
}

/// ferrogres_stat_locks: one row per heavyweight lock type (`LockManager::lock_type_stats`).
fn stat_locks(backend: &ferrogres_engine::engine::Backend) -> Vec<Vec<Value>> {
    let (types, transfers) = backend.engine().locks.lock_type_stats();
    types
        .into_iter()
        .map(|t| {
            vec![
                Value::Text(t.locktype.to_string()),
                Value::Int8(t.fast_path as i64),
                Value::Int8(t.main as i64),
                if t.locktype == "relation" { Value::Int8(transfers as i64) } else { Value::Int8(0) },
                Value::Int8(t.waits as i64),
                ms(t.wait_time),
                ms(t.max_wait),
            ]
        })
        .collect()
}

fn event_cols(ev: Option<ferrogres_engine::pgstat::wait_event::WaitEvent>) -> (Value, Value) {
    match ev {
        Some(e) => (Value::Text(e.type_name().to_string()), Value::Text(e.name().to_string())),
        None => (Value::Null, Value::Null),
    }
}

/// pg_wait_sampling_history: the sampler's ring, oldest first.
fn wait_sampling_history(backend: &ferrogres_engine::engine::Backend) -> Vec<Vec<Value>> {
    backend
        .engine()
        .sampler
        .history()
        .into_iter()
        .map(|s| {
            let (t, e) = event_cols(s.event);
            let ts = ferrogres_datum::datetime::system_time_to_timestamptz(std::time::UNIX_EPOCH + std::time::Duration::from_micros(s.ts as u64));
            vec![Value::Int4(s.pid), Value::Timestamptz(ts), t, e, Value::Int8(s.queryid)]
        })
        .collect()
}

/// pg_wait_sampling_profile: samples per (pid, wait event, query id).
fn wait_sampling_profile(backend: &ferrogres_engine::engine::Backend) -> Vec<Vec<Value>> {
    backend
        .engine()
        .sampler
        .profile()
        .into_iter()
        .map(|r| {
            let (t, e) = event_cols(r.event);
            vec![Value::Int4(r.pid), t, e, Value::Int8(r.queryid), Value::Int8(r.count as i64)]
        })
        .collect()
}

/// pg_read_all_stats' OID (PostgreSQL 15's predefined role).
pub const PG_READ_ALL_STATS: u32 = 3375;

/// pg_stat_activity. A backend whose role the current role lacks the
/// privileges of (unless it has pg_read_all_stats') shows only datid, pid,
/// usesysid, application_name, backend_xid and backend_xmin, with query
/// `<insufficient privilege>`, as PostgreSQL 15's pg_stat_get_activity;
/// auxiliary processes have no role, so only those roles see them whole.
fn pg_stat_activity(backend: &ferrogres_engine::engine::Backend, snap: &ferrogres_engine::txn::snapshot::Snapshot) -> Result<Vec<Vec<Value>>> {
    use ferrogres_engine::pgstat::wait_event::current_wait_event;
    let engine = backend.engine();
    let roles = crate::acl::role_graph(backend, snap)?;
    let me = backend.current_user;
    let sees_all = roles.has_privs_of(me, PG_READ_ALL_STATS);
    let ts = |t: Option<i64>| {
        t.map_or(Value::Null, |us| {
            Value::Timestamptz(ferrogres_datum::datetime::system_time_to_timestamptz(std::time::UNIX_EPOCH + std::time::Duration::from_micros(us as u64)))
        })
    };
    let text = |s: Option<String>| s.map_or(Value::Null, Value::Text);
    let xid = |x: u32| if x == 0 { Value::Null } else { Value::Oid(x) };
    Ok(engine
        .activity
        .rows()
        .into_iter()
        .map(|r| {
            let client = r.info.backend_type == "client backend";
            let wait = current_wait_event(r.backend);
            let (bxid, bxmin) = if client { engine.txn.procarray.backend_xid_xmin(r.backend) } else { (0, 0) };
            if !sees_all && !r.info.usesysid.is_some_and(|u| roles.has_privs_of(me, u)) {
                let mut row = vec![Value::Null; 22];
                row[0] = r.info.datid.map_or(Value::Null, Value::Oid);
                row[1] = text(r.info.datname);
                row[2] = Value::Int4(r.info.pid);
                row[4] = r.info.usesysid.map_or(Value::Null, Value::Oid);
                row[5] = text(r.info.usename);
                row[6] = Value::Text(r.info.application_name);
                row[17] = xid(bxid);
                row[18] = xid(bxmin);
                row[20] = Value::Text("<insufficient privilege>".into());
                return row;
            }
            vec![
                r.info.datid.map_or(Value::Null, Value::Oid),
                text(r.info.datname),
                Value::Int4(r.info.pid),
                Value::Null,
                r.info.usesysid.map_or(Value::Null, Value::Oid),
                text(r.info.usename),
                Value::Text(r.info.application_name),
                text(r.info.client_addr),
                Value::Null,
                r.info.client_port.map_or(Value::Null, Value::Int4),
                ts(r.backend_start),
                ts(r.xact_start),
                ts(r.query_start),
                ts(r.state_change),
                text(wait.map(|w| w.type_name().to_string())),
                text(wait.map(|w| w.name().to_string())),
                text(r.state.name().map(str::to_string)),
                xid(bxid),
                xid(bxmin),
                r.query_id.map_or(Value::Null, Value::Int8),
                if client { Value::Text(r.query) } else { Value::Text(String::new()) },
                Value::Text(r.info.backend_type.to_string()),
            ]
        })
        .collect())
}

fn pg_locks(backend: &ferrogres_engine::engine::Backend, snap: &ferrogres_engine::txn::snapshot::Snapshot) -> Result<Vec<Vec<Value>>> {
    let siread = siread_rows(backend, snap)?;
    let text = |s: Option<String>| s.map_or(Value::Null, Value::Text);
    let oid = |o: Option<u32>| o.map_or(Value::Null, Value::Oid);
    Ok(backend
        .engine()
        .locks
        .lock_status()
        .into_iter()
        .map(|r| {
            vec![
                Value::Text(r.locktype.to_string()),
                oid(r.database),
                oid(r.relation),
                r.page.map_or(Value::Null, |p| Value::Int4(p as i32)),
                r.tuple.map_or(Value::Null, |t| Value::Int2(t as i16)),
                text(r.virtualxid),
                oid(r.transactionid),
                oid(r.classid),
                oid(r.objid),
                r.objsubid.map_or(Value::Null, Value::Int2),
                text(r.virtualtransaction),
                r.pid.map_or(Value::Null, Value::Int4),
                Value::Text(r.mode.to_string()),
                Value::Bool(r.granted),
                Value::Bool(r.fastpath),
                r.waitstart.map_or(Value::Null, |t| Value::Timestamptz(ferrogres_datum::datetime::system_time_to_timestamptz(t))),
            ]
        })
        .chain(siread)
        .collect())
}

/// pg_locks' SIReadLock rows: the SIREAD predicate locks of serializable
/// transactions (running, or committed and kept while an overlapping one
/// runs), as PostgreSQL's GetPredicateLockStatusData shows them. The locks
/// name relation files; `relation` is the OID of the relation whose file it
/// is in `snap`'s pg_class (the file number differs from the OID after a
/// TRUNCATE, REINDEX or rewrite). A file of another database, or one only a
/// transaction `snap` does not see yet points to, shows its file number.
fn siread_rows(backend: &ferrogres_engine::engine::Backend, snap: &ferrogres_engine::txn::snapshot::Snapshot) -> Result<Vec<Vec<Value>>> {
    use ferrogres_engine::lmgr::predicate::PredTarget;
    let locks = backend.engine().txn.predicate.lock_status();
    let mut by_file: std::collections::HashMap<u32, u32> = std::collections::HashMap::new();
    if !locks.is_empty() {
        for (_, row) in crate::rowio::scan_rows(backend, &catalog::class_rel(), snap)? {
            if let (Some(Value::Oid(oid)), Some(Value::Oid(file))) = (row.first(), row.get(3)) {
                by_file.insert(*file, *oid);
            }
        }
    }
    let db = crate::database::current();
    Ok(locks.into_iter().map(|r| {
        let rel = r.target.rel();
        let relation = if rel.db_oid == db { by_file.get(&rel.rel_number).copied().unwrap_or(rel.rel_number) } else { rel.rel_number };
        let (page, tuple) = match r.target {
            PredTarget::Relation(_) => (Value::Null, Value::Null),
            PredTarget::Page(_, b) => (Value::Int4(b as i32), Value::Null),
            PredTarget::Tuple(_, b, o) => (Value::Int4(b as i32), Value::Int2(o as i16)),
        };
        vec![
            Value::Text(r.target.locktype().to_string()),
            Value::Oid(rel.db_oid),
            Value::Oid(relation),
            page,
            tuple,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Null,
            Value::Text(r.virtualtransaction),
            Value::Int4(r.pid),
            Value::Text("SIReadLock".into()),
            Value::Bool(true),
            Value::Bool(false),
            Value::Null,
        ]
    }).collect())
}
