//! Hash indexes in the SQL layer, on the engine's `hash` access method: the hash
//! code of a value of each type (PostgreSQL's hash operator classes, so the
//! index holds the codes PostgreSQL would), the SQL-callable hash functions
//! (`hashtext('x')`, `hashint4(1)`, ... give PostgreSQL's values), and the glue
//! `crate::index` calls for an index whose access method is hash: create,
//! insert, equality scan, bulk delete.
//!
//! The planner's part stays small and in named places (issue 19 rebuilds the
//! planner): `index::candidate_paths` offers a hash index only for `col =
//! expr`, `index::open_table_scan` reads it through [`scan_roots`], and
//! `stats::index_cost` costs it as uncorrelated. Everything here takes the
//! index's [`IndexInfo`] and values; nothing keeps state between calls.

use ferrogres_datum::errors::{Result, SqlError};
use crate::index::IndexInfo;
use ferrogres_datum::types::{Type, Value};
use ferrogres_engine::engine::{Backend, Engine};
use ferrogres_engine::hash::hashfunc as hf;
use ferrogres_engine::hash::HashIndex;
use ferrogres_engine::lmgr::predicate::SerializableXact;
use std::sync::Arc;
use ferrogres_engine::heap::tuple::Tid;

/// pg_am's hash.
pub const HASH_AM_OID: u32 = 405;

/// Whether `ty` has a default hash operator class here (PostgreSQL has one for
/// each of these; jsonb's `jsonb_hash` and the array, range and record hashes are
/// not implemented).
pub fn hashable(ty: Type) -> bool {
    matches!(
        ty,
        Type::Bool
            | Type::Int2
            | Type::Int4
            | Type::Int8
            | Type::Oid
            | Type::Float4
            | Type::Float8
            | Type::Numeric
            | Type::Text
            | Type::Varchar
            | Type::Bpchar
            | Type::Name
            | Type::Char
            | Type::Bytea
            | Type::Uuid
            | Type::Date
            | Type::Time
            | Type::TimeTz
            | Type::Timestamp
            | Type::Timestamptz
            | Type::Interval
            | Type::PgLsn
            | Type::Xid8
    )
}

/// The error of CREATE INDEX ... USING hash on a column of type `ty`.
pub fn unhashable(ty: Type) -> SqlError {
    if ty == Type::Jsonb || matches!(ty, Type::Array(_)) {
        return SqlError::not_supported(format!("hash indexes on type {}", ty.sql_name()));
    }
    SqlError::new(b"42704", format!("data type {} has no default operator class for access method \"hash\"", ty.sql_name()))
        .with_hint("You must specify an operator class for the index or define a default operator class for the data type.")
}

/// The hash code of a value of column type `ty`, as PostgreSQL's operator class
/// computes it; `None` for NULL (not indexed) and for a value that is not of the
/// column's type.
pub fn hash_value(ty: Type, v: &Value) -> Option<u32> {
    Some(match (ty, v) {
        (_, Value::Null) => return None,
        (Type::Bool, Value::Bool(b)) => hf::hash_char(*b as u8),
        (Type::Int2, Value::Int2(x)) => hf::hash_int2(*x),
        (Type::Int4, Value::Int4(x)) => hf::hash_int4(*x),
        (Type::Int8, Value::Int8(x)) => hf::hash_int8(*x),
        (Type::Oid, Value::Oid(x)) => hf::hash_oid(*x),
        (Type::Float4, Value::Float4(x)) => hf::hash_float4(*x),
        (Type::Float8, Value::Float8(x)) => hf::hash_float8(*x),
        (Type::Numeric, Value::Numeric(n)) => n.hash(),
        (Type::Bpchar, Value::Text(s)) => hf::hash_bpchar(s.as_bytes()),
        (Type::Char, Value::Text(s)) => hf::hash_char(s.as_bytes().first().copied().unwrap_or(0)),
        (Type::Text | Type::Varchar | Type::Name, Value::Text(s)) => hf::hash_text(s.as_bytes()),
        (Type::Bytea, Value::Bytea(b)) => hf::hash_text(b),
        (Type::Uuid, Value::Uuid(u)) => hf::hash_text(u),
        (Type::Date, Value::Date(d)) => hf::hash_int4(*d),
        (Type::Time, Value::Time(t)) => hf::hash_int8(*t),
        (Type::TimeTz, Value::TimeTz(t, z)) => hf::hash_timetz(*t, *z),
        (Type::Timestamp, Value::Timestamp(t)) | (Type::Timestamptz, Value::Timestamptz(t)) => hf::hash_int8(*t),
        (Type::Interval, Value::Interval(i)) => hf::hash_interval(i.months, i.days, i.micros),
        (Type::PgLsn, Value::PgLsn(l)) | (Type::Xid8, Value::Xid8(l)) => hf::hash_int8(*l as i64),
        _ => return None,
    })
}

/// The SQL functions `hashint4(int4)` & co. (`crate::functions::BUILTINS`):
/// PostgreSQL's values, as int4.
pub fn sql_hash(vals: &[Value]) -> Result<Value> {
    let ty = match &vals[0] {
        Value::Bool(_) => Type::Bool,
        Value::Int2(_) => Type::Int2,
        Value::Int4(_) => Type::Int4,
        Value::Int8(_) => Type::Int8,
        Value::Oid(_) => Type::Oid,
        Value::Float4(_) => Type::Float4,
        Value::Float8(_) => Type::Float8,
        Value::Numeric(_) => Type::Numeric,
        Value::Text(_) => Type::Text,
        Value::Bytea(_) => Type::Bytea,
        Value::Uuid(_) => Type::Uuid,
        Value::Time(_) => Type::Time,
        Value::TimeTz(..) => Type::TimeTz,
        Value::Timestamp(_) => Type::Timestamp,
        Value::Interval(_) => Type::Interval,
        Value::PgLsn(_) => Type::PgLsn,
        Value::Xid8(_) => Type::Xid8,
        v => return Err(SqlError::internal(format!("hash function of {v:?}"))),
    };
    sql_hash_as(ty, &vals[0])
}

fn sql_hash_as(ty: Type, v: &Value) -> Result<Value> {
    let h = hash_value(ty, v).ok_or_else(|| SqlError::internal(format!("hash function of {v:?} as {}", ty.typname())))?;
    Ok(Value::Int4(h as i32))
}

/// `hashbpchar(character)`: trailing blanks do not count.
pub fn sql_hashbpchar(vals: &[Value]) -> Result<Value> {
    sql_hash_as(Type::Bpchar, &vals[0])
}

/// `hashchar("char")`.
pub fn sql_hashchar(vals: &[Value]) -> Result<Value> {
    sql_hash_as(Type::Char, &vals[0])
}

// ----- the index --------------------------------------------------------------------

/// The engine's handle of hash index `ix`.
pub fn handle(engine: &Engine, ix: &IndexInfo) -> HashIndex {
    HashIndex::new(engine, ix.rel)
}

/// Creates the index's file, with buckets for `expected_rows`.
pub fn create(engine: &Engine, ix: &IndexInfo, expected_rows: f64) -> Result<()> {
    let ff = ix.fillfactor.unwrap_or(ferrogres_engine::hash::HASH_DEFAULT_FILLFACTOR);
    handle(engine, ix).create(engine, ff, expected_rows)?;
    Ok(())
}

/// The entry of a row version at `tid` (none for a NULL key: hash indexes do not
/// index NULLs, as in PostgreSQL).
pub fn insert(backend: &Backend, ix: &IndexInfo, row: &[Value], tid: Tid) -> Result<()> {
    let v = &row[ix.columns[0]];
    if v.is_null() {
        return Ok(());
    }
    // A value the column's type cannot hash (the column's type was changed to
    // one without a hash operator class) is refused, never left out silently.
    let Some(h) = hash_value(ix.types[0], v) else { return Err(unhashable(ix.types[0])) };
    let engine = backend.engine();
    // SERIALIZABLE: checked against the SIREAD locks on the bucket's primary
    // page (and the whole index) by the engine.
    let sx = backend.txn.serializable_xact().map(|x| &**x);
    handle(engine, ix).insert_serializable(engine, h, tid, sx)?;
    Ok(())
}

/// The heap TIDs (HOT chain roots) of the entries with `key`'s hash code: the
/// candidates for `col = key` (the caller re-checks the condition on each row).
/// `interrupts` is asked every 1024 entries. `sx`: the serializable
/// transaction scanning, which gets a SIREAD lock on the bucket's primary page
/// (`None`: not serializable).
pub fn scan_roots(
    engine: &Engine,
    ix: &IndexInfo,
    key: &Value,
    sx: Option<Arc<SerializableXact>>,
    interrupts: &mut dyn FnMut() -> Result<()>,
) -> Result<Vec<Tid>> {
    let Some(h) = hash_value(ix.types[0], key) else { return Ok(Vec::new()) };
    let index = handle(engine, ix);
    let mut out = Vec::new();
    for t in index.scan(engine, h).serializable(sx) {
        out.push(t?);
        if out.len() % 1024 == 0 {
            interrupts()?;
        }
    }
    Ok(out)
}

/// VACUUM's index cleanup: removes the entries of `dead` heap TIDs.
pub fn bulk_delete(engine: &Engine, ix: &IndexInfo, dead: &dyn Fn(Tid) -> bool) -> Result<()> {
    handle(engine, ix).bulk_delete(engine, dead, &|| Ok(()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrogres_datum::numeric::Numeric;

    /// Values computed by PostgreSQL 15: `select hash_numeric(1.50)`, ...
    #[test]
    fn numeric_and_typed_hashes_equal_postgresql_15() {
        let n = |s: &str| Value::Numeric(Numeric::parse(s).unwrap());
        assert_eq!(hash_value(Type::Numeric, &n("1.50")).map(|h| h as i32), Some(692967894));
        assert_eq!(hash_value(Type::Numeric, &n("1.5")), hash_value(Type::Numeric, &n("1.50")));
        assert_eq!(hash_value(Type::Numeric, &n("0")).map(|h| h as i32), Some(-1));
        assert_eq!(hash_value(Type::Numeric, &n("0.000")).map(|h| h as i32), Some(-1));
        assert_eq!(hash_value(Type::Numeric, &n("NaN")), Some(0));
        assert_eq!(hash_value(Type::Text, &Value::Text("x".into())).map(|h| h as i32), Some(1074944137));
        assert_eq!(hash_value(Type::Bpchar, &Value::Text("ab  ".into())), hash_value(Type::Text, &Value::Text("ab".into())));
        assert_eq!(hash_value(Type::Bool, &Value::Bool(true)), hash_value(Type::Int4, &Value::Int4(1)));
        assert_eq!(hash_value(Type::Int4, &Value::Null), None);
        let u = ferrogres_datum::uuid::input("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11").unwrap();
        assert_eq!(hash_value(Type::Uuid, &Value::Uuid(u)).map(|h| h as i32), Some(1154666245));
    }
}
