//! Procedures that implement operators (pg_operator.oprcode), callable by name
//! as in PostgreSQL: `booleq(a, b)` is `a = b`, `textcat(a, b)` is `a || b`;
//! and the B-tree comparison support functions (`xid8cmp`).

use super::{int, text};
use ferrogres_datum::errors::{Result, SqlError};
use ferrogres_datum::types::{out_of_range, Type, Value};

fn b(v: &Value) -> bool {
    matches!(v, Value::Bool(true))
}

pub fn booleq(a: &[Value]) -> Result<Value> {
    Ok(Value::Bool(b(&a[0]) == b(&a[1])))
}
pub fn boolne(a: &[Value]) -> Result<Value> {
    Ok(Value::Bool(b(&a[0]) != b(&a[1])))
}
pub fn boollt(a: &[Value]) -> Result<Value> {
    Ok(Value::Bool(!b(&a[0]) & b(&a[1])))
}
pub fn boolgt(a: &[Value]) -> Result<Value> {
    Ok(Value::Bool(b(&a[0]) & !b(&a[1])))
}
pub fn boolle(a: &[Value]) -> Result<Value> {
    Ok(Value::Bool(b(&a[0]) <= b(&a[1])))
}
pub fn boolge(a: &[Value]) -> Result<Value> {
    Ok(Value::Bool(b(&a[0]) >= b(&a[1])))
}

pub fn textcat(a: &[Value]) -> Result<Value> {
    let (x, y) = (text(&a[0]), text(&a[1]));
    ferrogres_datum::errors::check_result_len(x.len() + y.len())?;
    crate::memory::reserve(x.len() + y.len())?;
    Ok(Value::Text([x, y].concat()))
}

/// bytea || bytea.
pub fn byteacat(a: &[Value]) -> Result<Value> {
    match (&a[0], &a[1]) {
        (Value::Bytea(x), Value::Bytea(y)) => {
            ferrogres_datum::errors::check_result_len(x.len() + y.len())?;
            crate::memory::reserve(x.len() + y.len())?;
            Ok(Value::Bytea([x.as_slice(), y.as_slice()].concat()))
        }
        _ => Err(ferrogres_datum::errors::SqlError::internal("byteacat of non-bytea values")),
    }
}

/// int8pl, int8mi, int8mul, int8div with bigint's range errors.
fn int8_op(a: &[Value], op: fn(i64, i64) -> Option<i64>) -> Result<Value> {
    op(int(&a[0]), int(&a[1])).map(Value::Int8).ok_or_else(|| out_of_range(Type::Int8))
}
pub fn int8pl(a: &[Value]) -> Result<Value> {
    int8_op(a, i64::checked_add)
}
pub fn int8mi(a: &[Value]) -> Result<Value> {
    int8_op(a, i64::checked_sub)
}
pub fn int8mul(a: &[Value]) -> Result<Value> {
    int8_op(a, i64::checked_mul)
}
pub fn int8div(a: &[Value]) -> Result<Value> {
    if int(&a[1]) == 0 {
        return Err(ferrogres_datum::errors::SqlError::new(b"22012", "division by zero"));
    }
    int8_op(a, i64::checked_div)
}

/// The type of an argument value of the numeric kinds (function-style casts).
fn num_type(v: &Value) -> Type {
    match v {
        Value::Int2(_) => Type::Int2,
        Value::Int4(_) => Type::Int4,
        Value::Int8(_) => Type::Int8,
        Value::Float4(_) => Type::Float4,
        Value::Float8(_) => Type::Float8,
        _ => Type::Numeric,
    }
}

fn cast_to(a: &[Value], to: Type) -> Result<Value> {
    ferrogres_datum::types::cast(a[0].clone(), num_type(&a[0]), to, -1, true)
}

/// float8(x), float4(x), int8(x), int4(x), int2(x), numeric(x): the casts by
/// function name, as pg_proc has them.
pub fn to_float8(a: &[Value]) -> Result<Value> {
    cast_to(a, Type::Float8)
}
pub fn to_float4(a: &[Value]) -> Result<Value> {
    cast_to(a, Type::Float4)
}
pub fn to_int8(a: &[Value]) -> Result<Value> {
    cast_to(a, Type::Int8)
}
pub fn to_int4(a: &[Value]) -> Result<Value> {
    cast_to(a, Type::Int4)
}
pub fn to_int2(a: &[Value]) -> Result<Value> {
    cast_to(a, Type::Int2)
}

/// xid8cmp(xid8, xid8): the B-tree support function, -1, 0 or 1.
pub fn xid8cmp(a: &[Value]) -> Result<Value> {
    match (&a[0], &a[1]) {
        (Value::Xid8(x), Value::Xid8(y)) => Ok(Value::Int4(x.cmp(y) as i32)),
        _ => Err(SqlError::internal("xid8cmp of non-xid8 values")),
    }
}

fn snapshot_arg(v: &Value) -> Result<&ferrogres_datum::pg_snapshot::PgSnapshot> {
    match v {
        Value::PgSnapshot(s) => Ok(s),
        v => Err(SqlError::internal(format!("pg_snapshot function of {v:?}"))),
    }
}

/// pg_snapshot_xmin(pg_snapshot) xid8.
pub fn snapshot_xmin(a: &[Value]) -> Result<Value> {
    Ok(Value::Xid8(snapshot_arg(&a[0])?.xmin))
}

/// pg_snapshot_xmax(pg_snapshot) xid8.
pub fn snapshot_xmax(a: &[Value]) -> Result<Value> {
    Ok(Value::Xid8(snapshot_arg(&a[0])?.xmax))
}

/// pg_snapshot_xip(pg_snapshot): the running ids, one row each, as xid8.
pub fn snapshot_xip(a: &[Value]) -> Result<crate::functions::SetIter> {
    let xip = snapshot_arg(&a[0])?.xip.clone();
    Ok(Box::new(xip.into_iter().map(|x| Ok(Value::Xid8(x)))))
}

/// txid_snapshot_xmin(txid_snapshot) bigint.
pub fn txid_snapshot_xmin(a: &[Value]) -> Result<Value> {
    Ok(Value::Int8(snapshot_arg(&a[0])?.xmin as i64))
}

/// txid_snapshot_xmax(txid_snapshot) bigint.
pub fn txid_snapshot_xmax(a: &[Value]) -> Result<Value> {
    Ok(Value::Int8(snapshot_arg(&a[0])?.xmax as i64))
}

/// txid_snapshot_xip(txid_snapshot): the running ids as bigint.
pub fn txid_snapshot_xip(a: &[Value]) -> Result<crate::functions::SetIter> {
    let xip = snapshot_arg(&a[0])?.xip.clone();
    Ok(Box::new(xip.into_iter().map(|x| Ok(Value::Int8(x as i64)))))
}

/// pg_visible_in_snapshot(xid8, pg_snapshot), txid_visible_in_snapshot(bigint, txid_snapshot).
pub fn visible_in_snapshot(a: &[Value]) -> Result<Value> {
    let s = snapshot_arg(&a[1])?;
    let xid = match a[0] {
        Value::Xid8(x) => x,
        Value::Int8(x) => x as u64,
        ref v => return Err(SqlError::internal(format!("pg_visible_in_snapshot of {v:?}"))),
    };
    Ok(Value::Bool(s.visible(xid)))
}
