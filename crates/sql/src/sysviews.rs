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

use crate::catalog::{self, Column, Table};
use crate::errors::Result;
use crate::rowio::RelStorage;
use crate::types::{Type, Value};
use ferrogres_engine::engine::DEFAULT_TABLESPACE_OID;
use ferrogres_engine::storage::RelFileLocator;

/// pg_locks' OID in PostgreSQL 15 (its AccessShareLock shows in pg_locks).
pub const PG_LOCKS_OID: u32 = 12073;

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
    let v = VIEWS.iter().find(|v| v.name == name)?;
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
        },
        columns,
        indexes: Vec::new(),
    })
}

/// Is `oid` one of these views?
pub fn is_view(oid: u32) -> bool {
    VIEWS.iter().any(|v| v.oid == oid) || crate::pgcatalog::is_view(oid)
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
pub fn rows(oid: u32, backend: &ferrogres_engine::engine::Backend) -> Result<Vec<Vec<Value>>> {
    match oid {
        PG_LOCKS_OID => Ok(pg_locks(backend)),
        crate::walstat::PG_STAT_WAL_OID => Ok(crate::walstat::pg_stat_wal(backend)),
        _ => Err(crate::errors::SqlError::internal(format!("no system view with OID {oid}"))),
    }
}

fn pg_locks(backend: &ferrogres_engine::engine::Backend) -> Vec<Vec<Value>> {
    let text = |s: Option<String>| s.map_or(Value::Null, Value::Text);
    let oid = |o: Option<u32>| o.map_or(Value::Null, Value::Oid);
    backend
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
                r.waitstart.map_or(Value::Null, |t| Value::Timestamptz(crate::datetime::system_time_to_timestamptz(t))),
            ]
        })
        .collect()
}
