//! Built-in types: OIDs, storage attributes (typlen/typalign as pg_type has them),
//! the executor's [`Value`], and the text/binary input and output functions with
//! PostgreSQL's error texts.
//!
//! | type | oid | typlen | typalign | Value |
//! |---|---|---|---|---|
//! | bool | 16 | 1 | c | `Bool` |
//! | int2 (smallint) | 21 | 2 | s | `Int2` |
//! | int4 (integer) | 23 | 4 | i | `Int4` |
//! | int8 (bigint) | 20 | 8 | d | `Int8` |
//! | oid | 26 | 4 | i | `Oid` |
//! | float8 (double precision) | 701 | 8 | d | `Float8` |
//! | float4 (real) | 700 | 4 | i | `Float4` |
//! | text | 25 | -1 | i | `Text` |
//! | varchar (character varying) | 1043 | -1 | i | `Text` (typmod = n + 4) |
//! | unknown (an untyped literal) | 705 | -2 | c | `Text` |
//! | void | 2278 | 4 | i | `Null` |
//! | bpchar (character(n)) | 1042 | -1 | i | `Text`, blank-padded to n (typmod = n + 4) |
//! | date | 1082 | 4 | i | `Date` |
//! | time | 1083 | 8 | d | `Time` |
//! | timestamp | 1114 | 8 | d | `Timestamp` |
//! | timestamptz | 1184 | 8 | d | `Timestamptz` |
//! | interval | 1186 | 16 | d | `Interval` (by reference) |
//! | timetz | 1266 | 12 | d | `TimeTz` (by reference) |
//!
//! | bytea | 17 | -1 | i | `Bytea` (hex output; [`crate::bytea`]) |
//! | name | 19 | 64 | c | `Text` (stored as a varlena here) |
//! | "char" | 18 | 1 | c | `Text` of one character (stored as a varlena here) |
//! | arrays (`_int4` 1007, `_text` 1009, ...) | | -1 | i or d | `Array` ([`crate::array`]) |
//!
//! The date/time types' I/O and arithmetic live in [`crate::datetime`].
//!
//! | uuid | 2950 | 16 | c | `Uuid` ([`crate::uuid`]; stored as a varlena here) |
//! | json | 114 | -1 | i | `Json` (the text as written; [`crate::json`]) |
//! | jsonb | 3802 | -1 | i | `Jsonb` (canonical text; [`crate::json`]) |
//! | pg_lsn | 3220 | 8 | d | `PgLsn` ([`crate::pg_lsn`]) |
//! | xid8 | 5069 | 8 | d | `Xid8` (a full transaction id: epoch and xid) |
//! | pg_snapshot, txid_snapshot | 5038, 2970 | -1 | d | `PgSnapshot` ([`crate::pg_snapshot`]; stored as its binary send format) |
//! | tid | 27 | 6 | s | `Tid` ([`crate::tid`]; by reference) |
//! | cid | 29 | 4 | i | `Oid` (system columns cmin, cmax) |
//! | int2vector | 22 | -1 | i | `Array` of int2 from 0, `vector` set (text "1 2"; [`crate::array`]) |
//! | oidvector | 30 | -1 | i | `Array` of oid from 0, `vector` set |
//!
//! | numeric | 1700 | -1 | i | `Numeric` ([`crate::numeric`]; typmod = (p << 16 | s) + 4) |

use crate::errors::{Result, SqlError};
use crate::datetime::{self, Interval};
use ferrogres_engine::heap::tuple::{AttrDesc, Datum};
use std::cmp::Ordering;

// `Type` is in nearly every expression node and is copied on every
// evaluation: two words. A variant with a wider payload (a fat pointer) makes
// every plan and expression copy larger (record.rs's `Fields` is thin for this).
const _: () = assert!(std::mem::size_of::<Type>() == 16);

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    Bool,
    Int2,
    Int4,
    Int8,
    Oid,
    Float8,
    Text,
    Varchar,
    Unknown,
    Void,
    /// Arbitrary-precision decimal ([`crate::numeric`]).
    Numeric,
    /// character(n): blank-padded; comparisons and casts to text ignore trailing blanks.
    Bpchar,
    Date,
    Time,
    Timestamp,
    Timestamptz,
    Interval,
    Bytea,
    TimeTz,
    Float4,
    /// Transaction ids (pg_locks.transactionid); held as `Value::Oid`, no operators yet.
    Xid,
    /// `name` (19): catalog identifiers; held as `Value::Text`, at most 63 bytes.
    Name,
    /// `"char"` (18): one byte (pg_class.relkind); held as `Value::Text`.
    Char,
    /// A one-dimensional array of the element type (`crate::array`).
    Array(&'static Type),
    Uuid,
    Json,
    Jsonb,
    /// A WAL position ([`crate::pg_lsn`]).
    PgLsn,
    /// A full transaction id, epoch and xid (`xid8`, 5069).
    Xid8,
    /// A snapshot of full transaction ids ([`crate::pg_snapshot`]).
    PgSnapshot,
    /// The same as `txid_snapshot` (2970), read by the txid_* functions.
    TxidSnapshot,
    /// A tuple's place, (block, offset) ([`crate::tid`]): the system column ctid.
    Tid,
    /// Command ids (the system columns cmin, cmax); held as `Value::Oid`, no operators.
    Cid,
    /// An anonymous record (`record`, 2249) with these fields ([`crate::record`]).
    Record(crate::record::Fields),
    /// int2vector (22): pg_index.indkey and indoption; held as a
    /// `Value::Array` of int2 with lower bound 0 and `vector` set.
    Int2Vector,
    /// oidvector (30): pg_index.indclass, pg_proc.proargtypes; as int2vector, of oid.
    OidVector,
}

pub const TYPES: [Type; 30] = [
    Type::Bool,
    Type::Int2,
    Type::Int4,
    Type::Int8,
    Type::Oid,
    Type::Float8,
    Type::Text,
    Type::Varchar,
    Type::Unknown,
    Type::Void,
    Type::Numeric,
    Type::Bpchar,
    Type::Date,
    Type::Time,
    Type::Timestamp,
    Type::Timestamptz,
    Type::Interval,
    Type::Bytea,
    Type::TimeTz,
    Type::Float4,
    Type::Uuid,
    Type::Json,
    Type::Jsonb,
    Type::PgLsn,
    Type::Xid8,
    Type::PgSnapshot,
    Type::TxidSnapshot,
    Type::Int2Vector,
    Type::OidVector,
    Type::Tid,
];

impl Type {
    pub fn oid(self) -> u32 {
        match self {
            Type::Bool => 16,
            Type::Int2 => 21,
            Type::Int4 => 23,
            Type::Int8 => 20,
            Type::Oid => 26,
            Type::Xid => 28,
            Type::Cid => 29,
            Type::Tid => crate::tid::TID_OID,
            Type::Record(_) => crate::record::RECORD_OID,
            Type::Float8 => 701,
            Type::Text => 25,
            Type::Varchar => 1043,
            Type::Unknown => 705,
            Type::Void => 2278,
            Type::Numeric => 1700,
            Type::Bpchar => 1042,
            Type::Date => 1082,
            Type::Time => 1083,
            Type::Timestamp => 1114,
            Type::Timestamptz => 1184,
            Type::Interval => 1186,
            Type::Bytea => 17,
            Type::TimeTz => 1266,
            Type::Float4 => 700,
            Type::Name => 19,
            Type::Char => 18,
            Type::Array(e) => crate::array::array_oid(*e),
            Type::Uuid => 2950,
            Type::Json => 114,
            Type::Jsonb => 3802,
            Type::PgLsn => crate::pg_lsn::PG_LSN_OID,
            Type::Xid8 => 5069,
            Type::PgSnapshot => crate::pg_snapshot::PG_SNAPSHOT_OID,
            Type::TxidSnapshot => crate::pg_snapshot::TXID_SNAPSHOT_OID,
            Type::Int2Vector => 22,
            Type::OidVector => 30,
        }
    }
    /// The element type of an array type, or of int2vector/oidvector (which
    /// subscript, unnest and `= ANY` like arrays, from 0).
    pub fn elem(self) -> Option<Type> {
        match self {
            Type::Array(e) => Some(*e),
            Type::Int2Vector => Some(Type::Int2),
            Type::OidVector => Some(Type::Oid),
            _ => None,
        }
    }
    /// Whether the type is int2vector or oidvector.
    pub fn is_vector(self) -> bool {
        matches!(self, Type::Int2Vector | Type::OidVector)
    }
    pub fn from_oid(oid: u32) -> Option<Type> {
        match oid {
            19 => return Some(Type::Name),
            18 => return Some(Type::Char),
            28 => return Some(Type::Xid),
            29 => return Some(Type::Cid),
            _ => {}
        }
        TYPES.iter().copied().find(|t| t.oid() == oid).or_else(|| crate::array::from_array_oid(oid))
    }
    /// pg_type.typname.
    /// pg_type's typcategory and typispreferred (operator and function
    /// resolution prefer the preferred type of a category).
    pub fn category(self) -> (char, bool) {
        match self {
            Type::Bool => ('B', true),
            Type::Float8 | Type::Oid => ('N', true),
            Type::Int2 | Type::Int4 | Type::Int8 | Type::Float4 | Type::Numeric => ('N', false),
            Type::Text => ('S', true),
            Type::Varchar | Type::Bpchar | Type::Name => ('S', false),
            Type::Timestamptz => ('D', true),
            Type::Date | Type::Time | Type::Timestamp | Type::TimeTz => ('D', false),
            Type::Interval => ('T', true),
            Type::Unknown => ('X', false),
            Type::Void | Type::Record(_) => ('P', false),
            Type::Char => ('Z', false),
            Type::Array(_) | Type::Int2Vector | Type::OidVector => ('A', false),
            _ => ('U', false),
        }
    }

    pub fn typname(self) -> &'static str {
        match self {
            Type::Bool => "bool",
            Type::Int2 => "int2",
            Type::Int4 => "int4",
            Type::Int8 => "int8",
            Type::Oid => "oid",
            Type::Xid => "xid",
            Type::Cid => "cid",
            Type::Tid => "tid",
            Type::Record(_) => "record",
            Type::Float8 => "float8",
            Type::Text => "text",
            Type::Varchar => "varchar",
            Type::Unknown => "unknown",
            Type::Void => "void",
            Type::Numeric => "numeric",
            Type::Bpchar => "bpchar",
            Type::Date => "date",
            Type::Time => "time",
            Type::Timestamp => "timestamp",
            Type::Timestamptz => "timestamptz",
            Type::Interval => "interval",
            Type::Bytea => "bytea",
            Type::TimeTz => "timetz",
            Type::Float4 => "float4",
            Type::Name => "name",
            Type::Char => "char",
            Type::Array(e) => crate::array::array_typname(*e),
            Type::Uuid => "uuid",
            Type::Json => "json",
            Type::Jsonb => "jsonb",
            Type::PgLsn => "pg_lsn",
            Type::Xid8 => "xid8",
            Type::PgSnapshot => "pg_snapshot",
            Type::TxidSnapshot => "txid_snapshot",
            Type::Int2Vector => "int2vector",
            Type::OidVector => "oidvector",
        }
    }
    /// The name format_type() shows in messages.
    pub fn sql_name(self) -> &'static str {
        match self {
            Type::Bool => "boolean",
            Type::Int2 => "smallint",
            Type::Int4 => "integer",
            Type::Int8 => "bigint",
            Type::Oid => "oid",
            Type::Xid => "xid",
            Type::Cid => "cid",
            Type::Tid => "tid",
            Type::Record(_) => "record",
            Type::Float8 => "double precision",
            Type::Text => "text",
            Type::Varchar => "character varying",
            Type::Unknown => "unknown",
            Type::Void => "void",
            Type::Numeric => "numeric",
            Type::Bpchar => "character",
            Type::Date => "date",
            Type::Time => "time without time zone",
            Type::Timestamp => "timestamp without time zone",
            Type::Timestamptz => "timestamp with time zone",
            Type::Interval => "interval",
            Type::Bytea => "bytea",
            Type::TimeTz => "time with time zone",
            Type::Float4 => "real",
            Type::Name => "name",
            Type::Char => "\"char\"",
            Type::Array(e) => crate::array::array_sql_name(*e),
            Type::Uuid => "uuid",
            Type::Json => "json",
            Type::Jsonb => "jsonb",
            Type::PgLsn => "pg_lsn",
            Type::Xid8 => "xid8",
            Type::PgSnapshot => "pg_snapshot",
            Type::TxidSnapshot => "txid_snapshot",
            Type::Int2Vector => "int2vector",
            Type::OidVector => "oidvector",
        }
    }
    /// The name with its modifier, as format_type(oid, typmod).
    pub fn name_with_typmod(self, typmod: i32) -> String {
        match self {
            Type::Varchar if typmod >= 4 => format!("character varying({})", typmod - 4),
            Type::Bpchar if typmod >= 4 => format!("character({})", typmod - 4),
            Type::Timestamp if typmod >= 0 => format!("timestamp({typmod}) without time zone"),
            Type::Timestamptz if typmod >= 0 => format!("timestamp({typmod}) with time zone"),
            Type::Time if typmod >= 0 => format!("time({typmod}) without time zone"),
            Type::TimeTz if typmod >= 0 => format!("time({typmod}) with time zone"),
            Type::Array(e) => format!("{}[]", e.name_with_typmod(typmod)),
            Type::Numeric => crate::numeric::type_name(typmod),
            t => t.sql_name().to_string(),
        }
    }
    /// pg_type.typlen.
    pub fn typlen(self) -> i16 {
        match self {
            Type::Bool => 1,
            Type::Int2 => 2,
            Type::Int4 | Type::Oid | Type::Xid | Type::Cid | Type::Void => 4,
            Type::Tid => 6,
            Type::Record(_) => -1,
            Type::Int8 | Type::Float8 | Type::Time | Type::Timestamp | Type::Timestamptz | Type::PgLsn | Type::Xid8 => 8,
            Type::Date | Type::Float4 => 4,
            Type::Interval => 16,
            Type::TimeTz => 12,
            Type::Text | Type::Varchar | Type::Numeric | Type::Bpchar | Type::Bytea | Type::Array(_) | Type::Json | Type::Jsonb => -1,
            Type::PgSnapshot | Type::TxidSnapshot => -1,
            Type::Int2Vector | Type::OidVector => -1,
            Type::Uuid => 16,
            Type::Unknown => -2,
            Type::Name => 64,
            Type::Char => 1,
        }
    }
    /// How a column of this type is stored in a heap tuple.
    pub fn attr_desc(self) -> Option<AttrDesc> {
        Some(match self {
            Type::Bool => AttrDesc::fixed(1),
            Type::Int2 => AttrDesc::fixed(2),
            Type::Int4 | Type::Oid | Type::Xid | Type::Cid | Type::Date | Type::Float4 => AttrDesc::fixed(4),
            Type::Tid => AttrDesc::fixed_by_ref(6, b's'),
            Type::Record(_) => return None,
            Type::Int8 | Type::Float8 | Type::Time | Type::Timestamp | Type::Timestamptz | Type::PgLsn | Type::Xid8 => AttrDesc::fixed(8),
            Type::Interval => AttrDesc::fixed_by_ref(16, b'd'),
            Type::TimeTz => AttrDesc::fixed_by_ref(12, b'd'),
            // name and "char" are stored as varlena here (PostgreSQL: 64 and 1 fixed bytes).
            Type::Text | Type::Varchar | Type::Bpchar | Type::Bytea | Type::Name | Type::Char | Type::Array(_) | Type::Numeric => AttrDesc::varlena(),
            Type::Int2Vector | Type::OidVector => AttrDesc::varlena(),
            // uuid is a 16-byte varlena here (PostgreSQL: fixed length 16).
            Type::Uuid | Type::Json | Type::Jsonb | Type::PgSnapshot | Type::TxidSnapshot => AttrDesc::varlena(),
            Type::Unknown | Type::Void => return None,
        })
    }
    pub fn is_integer(self) -> bool {
        matches!(self, Type::Int2 | Type::Int4 | Type::Int8)
    }
    pub fn is_numeric(self) -> bool {
        self.is_integer() || self == Type::Float8 || self == Type::Float4 || self == Type::Numeric
    }
    pub fn is_string(self) -> bool {
        matches!(self, Type::Text | Type::Varchar | Type::Unknown | Type::Bpchar | Type::Name | Type::Char)
    }
    /// Whether a typmod changes values of this type (so an assignment of the same
    /// type still needs a length or precision coercion).
    pub fn typmod_matters(self) -> bool {
        match self {
            Type::Array(e) => e.typmod_matters(),
            t => matches!(t, Type::Varchar | Type::Bpchar | Type::Timestamp | Type::Timestamptz | Type::Time | Type::TimeTz | Type::Numeric | Type::Interval),
        }
    }
    /// A type name as written in SQL (`int`, `integer`, `int4`, `pg_catalog.int4`...).
    pub fn from_sql_name(name: &str) -> Option<Type> {
        Some(match name {
            "bool" | "boolean" => Type::Bool,
            "int2" | "smallint" => Type::Int2,
            "int4" | "int" | "integer" => Type::Int4,
            "int8" | "bigint" => Type::Int8,
            "oid" => Type::Oid,
            "xid" => Type::Xid,
            "cid" => Type::Cid,
            "tid" => Type::Tid,
            "float8" | "double precision" => Type::Float8,
            "text" => Type::Text,
            "varchar" | "character varying" => Type::Varchar,
            "unknown" => Type::Unknown,
            "void" => Type::Void,
            "numeric" | "decimal" => Type::Numeric,
            "bpchar" | "character" => Type::Bpchar,
            "char" => Type::Char,
            "name" => Type::Name,
            "date" => Type::Date,
            "time" | "time without time zone" => Type::Time,
            "timestamp" | "timestamp without time zone" => Type::Timestamp,
            "timestamptz" | "timestamp with time zone" => Type::Timestamptz,
            "interval" => Type::Interval,
            "bytea" => Type::Bytea,
            "timetz" | "time with time zone" => Type::TimeTz,
            "float4" | "real" => Type::Float4,
            "uuid" => Type::Uuid,
            "json" => Type::Json,
            "jsonb" => Type::Jsonb,
            "pg_lsn" => Type::PgLsn,
            "xid8" => Type::Xid8,
            "pg_snapshot" => Type::PgSnapshot,
            "txid_snapshot" => Type::TxidSnapshot,
            "int2vector" => Type::Int2Vector,
            "oidvector" => Type::OidVector,
            _ => return crate::array::from_typname(name),
        })
    }
}

/// An executor value. Strings of every string type are `Text`.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int2(i16),
    Int4(i32),
    Int8(i64),
    Oid(u32),
    Float8(f64),
    Text(String),
    /// Days since 2000-01-01.
    Date(i32),
    /// Microseconds since midnight.
    Time(i64),
    /// Microseconds since 2000-01-01 00:00 (local).
    Timestamp(i64),
    /// Microseconds since 2000-01-01 00:00 UTC.
    Timestamptz(i64),
    Interval(Interval),
    Bytea(Vec<u8>),
    /// Microseconds since midnight and the zone in seconds west of UTC.
    TimeTz(i64, i32),
    Float4(f32),
    /// An array (`crate::array`).
    Array(Box<crate::array::Array>),
    Numeric(crate::numeric::Numeric),
    Uuid([u8; 16]),
    /// json: the text as written.
    Json(String),
    /// jsonb: its canonical text (`crate::json`).
    Jsonb(String),
    /// pg_lsn ([`crate::pg_lsn`]).
    PgLsn(u64),
    /// xid8: a full transaction id.
    Xid8(u64),
    /// pg_snapshot and txid_snapshot ([`crate::pg_snapshot`]).
    PgSnapshot(Box<crate::pg_snapshot::PgSnapshot>),
    /// tid ([`crate::tid`]): block number, offset.
    Tid(u32, u16),
    /// A record ([`crate::record`]).
    Record(Box<crate::record::RecordValue>),
}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }
    /// An integer value widened to i64.
    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::Int2(v) => Some(v as i64),
            Value::Int4(v) => Some(v as i64),
            Value::Int8(v) => Some(v),
            Value::Oid(v) => Some(v as i64),
            _ => None,
        }
    }
}

pub fn out_of_range(ty: Type) -> SqlError {
    SqlError::new(b"22003", format!("{} out of range", ty.sql_name()))
}

fn invalid_syntax(ty: Type, s: &str) -> SqlError {
    SqlError::new(b"22P02", format!("invalid input syntax for type {}: \"{s}\"", ty.sql_name()))
}

/// Parses an integer as PostgreSQL's int2in/int4in/int8in: surrounding blanks, an
/// optional sign, decimal digits (PostgreSQL 16's `_` separators and hex are not
/// accepted, as in 15).
fn parse_int(ty: Type, s: &str, min: i64, max: i64) -> Result<i64> {
    let t = s.as_bytes().trim_ascii();
    let (neg, digits) = match t.first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(invalid_syntax(ty, s));
    }
    let range = || SqlError::new(b"22003", format!("value \"{s}\" is out of range for type {}", ty.sql_name()));
    let mut v: u64 = 0;
    for &b in digits {
        v = v.checked_mul(10).and_then(|v| v.checked_add((b - b'0') as u64)).ok_or_else(range)?;
    }
    let v = if neg { -(v as i128) } else { v as i128 };
    if v < min as i128 || v > max as i128 {
        return Err(range());
    }
    Ok(v as i64)
}

/// PostgreSQL's boolean input (`boolin`): true/false, yes/no, on/off, 1/0 and unique prefixes.
pub fn parse_bool(s: &str) -> Option<bool> {
    let t = s.trim_matches(|c: char| c.is_ascii_whitespace()).to_ascii_lowercase();
    if t.is_empty() {
        return None;
    }
    let prefix_of = |word: &str, min: usize| t.len() >= min && word.starts_with(t.as_str());
    if prefix_of("true", 1) || prefix_of("yes", 1) || t == "on" || t == "1" {
        Some(true)
    } else if prefix_of("false", 1) || prefix_of("no", 1) || prefix_of("off", 2) || t == "0" {
        Some(false)
    } else {
        None
    }
}

/// float4in: as float8in, rounded to single precision; out of single range is 22003.
fn parse_float4(s: &str) -> Result<f32> {
    let t = s.trim_matches(|c: char| c.is_ascii_whitespace());
    let bad = || SqlError::new(b"22P02", format!("invalid input syntax for type real: \"{s}\""));
    let range = || SqlError::new(b"22003", format!("\"{t}\" is out of range for type real"));
    let v = match parse_float8(s) {
        Ok(v) => v,
        Err(e) if e.sqlstate() == "22003" => return Err(range()),
        Err(_) => return Err(bad()),
    };
    if !v.is_finite() {
        return Ok(v as f32);
    }
    let f: f32 = t.parse().map_err(|_| bad())?;
    if f.is_infinite() || (f == 0.0 && v != 0.0) {
        return Err(range());
    }
    Ok(f)
}

/// The result of real op real computed in double precision, as real: overflow and
/// underflow are 22003 as float4's operators report them.
pub fn float4_arith(is_mod: bool, r: Value, x: f32, y: f32) -> Result<Value> {
    let Value::Float8(r) = r else { return Ok(r) };
    if is_mod {
        return Err(SqlError::not_supported("% for real"));
    }
    let f = r as f32;
    if f.is_infinite() && x.is_finite() && y.is_finite() {
        return Err(SqlError::new(b"22003", "value out of range: overflow"));
    }
    if f == 0.0 && r != 0.0 {
        return Err(SqlError::new(b"22003", "value out of range: underflow"));
    }
    Ok(Value::Float4(f))
}

fn parse_float8(s: &str) -> Result<f64> {
    let t = s.trim_matches(|c: char| c.is_ascii_whitespace());
    let lower = t.to_ascii_lowercase();
    let special = match lower.as_str() {
        "nan" => Some(f64::NAN),
        "infinity" | "+infinity" | "inf" | "+inf" => Some(f64::INFINITY),
        "-infinity" | "-inf" => Some(f64::NEG_INFINITY),
        _ => None,
    };
    if let Some(v) = special {
        return Ok(v);
    }
    let ok_chars = !t.is_empty()
        && t.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'e' | b'E'))
        && t.bytes().any(|b| b.is_ascii_digit());
    let v: f64 = if ok_chars { t.parse().map_err(|_| invalid_syntax(Type::Float8, s))? } else {
        return Err(invalid_syntax(Type::Float8, s));
    };
    if v.is_infinite() {
        return Err(SqlError::new(b"22003", format!("\"{t}\" is out of range for type double precision")));
    }
    if v == 0.0 && t.bytes().any(|b| (b'1'..=b'9').contains(&b)) && lower.contains('e') {
        // Underflow to zero: PostgreSQL reports it as out of range too.
        let mantissa = lower.split('e').next().unwrap_or("");
        if mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b)) {
            return Err(SqlError::new(b"22003", format!("\"{t}\" is out of range for type double precision")));
        }
    }
    Ok(v)
}

/// A type's text input function. `typmod` applies varchar(n)'s length check
/// (an assignment: trailing blanks beyond n are cut, anything else is 22001).
pub fn input(ty: Type, s: &str, typmod: i32) -> Result<Value> {
    Ok(match ty {
        Type::Bool => Value::Bool(parse_bool(s).ok_or_else(|| invalid_syntax(Type::Bool, s))?),
        Type::Int2 => Value::Int2(parse_int(ty, s, i16::MIN as i64, i16::MAX as i64)? as i16),
        Type::Int4 => Value::Int4(parse_int(ty, s, i32::MIN as i64, i32::MAX as i64)? as i32),
        Type::Int8 => Value::Int8(parse_int(ty, s, i64::MIN, i64::MAX)?),
        Type::Oid => {
            let v = parse_int(ty, s, i32::MIN as i64, u32::MAX as i64)?;
            Value::Oid(v as u32)
        }
        // xidin and cidin: strtoul's value cut to 32 bits.
        Type::Xid | Type::Cid => Value::Oid(strtoull_base0(s) as u32),
        Type::Tid => {
            let (b, o) = crate::tid::input(s)?;
            Value::Tid(b, o)
        }
        Type::Float8 => Value::Float8(parse_float8(s)?),
        Type::Float4 => Value::Float4(parse_float4(s)?),
        Type::Text | Type::Unknown => Value::Text(s.to_string()),
        Type::Varchar => Value::Text(check_varchar(s, typmod, false)?),
        Type::Bpchar => Value::Text(check_bpchar(s, typmod, false)?),
        Type::Date => Value::Date(datetime::date_in(s)?),
        Type::Time => Value::Time(datetime::round_precision(datetime::time_in(s)?, typmod)),
        Type::Timestamp => Value::Timestamp(datetime::round_precision(datetime::timestamp_in(s)?, typmod)),
        Type::Timestamptz => Value::Timestamptz(datetime::round_precision(datetime::timestamptz_in(s)?, typmod)),
        Type::Interval => Value::Interval(datetime::interval_in_typmod(s, typmod)?),
        Type::Bytea => Value::Bytea(crate::bytea::input(s)?),
        Type::TimeTz => {
            let (t, z) = datetime::timetz_in(s)?;
            Value::TimeTz(datetime::round_precision(t, typmod).min(datetime::USECS_PER_DAY), z)
        }
        Type::Void => Value::Null,
        Type::Record(_) => return Err(crate::record::input_error()),
        Type::Numeric => Value::Numeric(crate::numeric::Numeric::parse(s)?.apply_typmod(typmod)?),
        Type::Name => Value::Text(crate::array::name_in(s)),
        Type::Char => Value::Text(crate::array::char_in(s)),
        Type::Array(e) => crate::array::input(*e, s, typmod)?,
        Type::Int2Vector => crate::array::vector_input(Type::Int2, s)?,
        Type::OidVector => crate::array::vector_input(Type::Oid, s)?,
        Type::Uuid => Value::Uuid(crate::uuid::input(s)?),
        Type::Json => Value::Json(crate::json::json_in(s)?),
        Type::Jsonb => Value::Jsonb(crate::json::jsonb_in(s)?),
        Type::PgLsn => Value::PgLsn(crate::pg_lsn::input(s)?),
        Type::Xid8 => Value::Xid8(strtoull_base0(s)),
        Type::PgSnapshot | Type::TxidSnapshot => Value::PgSnapshot(Box::new(crate::pg_snapshot::input(s)?)),
    })
}

/// varchar(n): at most n characters. On assignment, extra trailing blanks are cut
/// and other excess is 22001; an explicit cast truncates.
pub fn check_varchar(s: &str, typmod: i32, explicit: bool) -> Result<String> {
    if typmod < 4 {
        return Ok(s.to_string());
    }
    let max = (typmod - 4) as usize;
    let n = s.chars().count();
    if n <= max {
        return Ok(s.to_string());
    }
    let cut: String = s.chars().take(max).collect();
    if explicit || s.chars().skip(max).all(|c| c == ' ') {
        return Ok(cut);
    }
    Err(SqlError::new(b"22001", format!("value too long for type character varying({max})")))
}

/// character(n): blank-padded to n characters. On assignment, excess trailing
/// blanks are cut and other excess is 22001; an explicit cast truncates.
pub fn check_bpchar(s: &str, typmod: i32, explicit: bool) -> Result<String> {
    if typmod < 4 {
        return Ok(s.to_string());
    }
    let max = (typmod - 4) as usize;
    let n = s.chars().count();
    if n <= max {
        let mut out = s.to_string();
        out.extend(std::iter::repeat_n(' ', max - n));
        return Ok(out);
    }
    if explicit || s.chars().skip(max).all(|c| c == ' ') {
        return Ok(s.chars().take(max).collect());
    }
    Err(SqlError::new(b"22001", format!("value too long for type character({max})")))
}

/// A value's text output (typoutput).
pub fn output(v: &Value) -> Option<String> {
    Some(match v {
        Value::Null => return None,
        Value::Bool(b) => if *b { "t" } else { "f" }.to_string(),
        Value::Int2(i) => i.to_string(),
        Value::Int4(i) => i.to_string(),
        Value::Int8(i) => i.to_string(),
        Value::Oid(i) => i.to_string(),
        Value::Float8(f) => float8_out(*f),
        Value::Float4(f) => float4_out(*f),
        Value::Text(s) => s.clone(),
        Value::Date(d) => datetime::date_out(*d),
        Value::Time(t) => datetime::time_out(*t),
        Value::Timestamp(t) => datetime::timestamp_out(*t),
        Value::Timestamptz(t) => datetime::timestamptz_out(*t),
        Value::Interval(iv) => datetime::interval_out(iv),
        Value::Bytea(b) => crate::bytea::output(b),
        Value::TimeTz(t, z) => datetime::timetz_out(*t, *z),
        Value::Array(a) => crate::array::output(a),
        Value::Numeric(n) => n.to_text(),
        Value::Uuid(u) => crate::uuid::output(u),
        Value::Json(s) | Value::Jsonb(s) => s.clone(),
        Value::PgLsn(l) => crate::pg_lsn::output(*l),
        Value::Xid8(x) => x.to_string(),
        Value::PgSnapshot(s) => crate::pg_snapshot::output(s),
        Value::Tid(b, o) => crate::tid::output(*b, *o),
        Value::Record(r) => crate::record::output(&r.values),
    })
}

/// float4out: the shortest text that reads back as the same single, exponent
/// when < -4 or >= 6.
pub fn float4_out(f: f32) -> String {
    if f.is_nan() || f.is_infinite() || f == 0.0 {
        return float8_out(f as f64);
    }
    shortest_layout(&format!("{f:e}"), 6)
}

/// float8out with extra_float_digits >= 1 (the default): the shortest text that
/// reads back as the same double, in %g-like layout (exponent when < -4 or >= 15).
pub fn float8_out(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    // Shortest round-trip digits and exponent from Rust's formatter.
    shortest_layout(&format!("{f:e}"), 15)
}

/// Lays out Rust's `{:e}` shortest digits as PostgreSQL does: plain notation for
/// decimal exponents in -4..precision, else `d.ddde+XX`.
fn shortest_layout(e: &str, precision: i32) -> String {
    let e = e.to_string();
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if !(-4..precision).contains(&exp) {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push_str(&format!("e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs()));
    } else if exp < 0 {
        out.push_str("0.");
        for _ in 0..(-exp - 1) {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let int_len = exp as usize + 1;
        if digits.len() <= int_len {
            out.push_str(&digits);
            for _ in digits.len()..int_len {
                out.push('0');
            }
        } else {
            out.push_str(&digits[..int_len]);
            out.push('.');
            out.push_str(&digits[int_len..]);
        }
    }
    out
}

/// A value's binary output (typsend).
pub fn send(v: &Value) -> Option<Vec<u8>> {
    Some(match v {
        Value::Null => return None,
        Value::Bool(b) => vec![*b as u8],
        Value::Int2(i) => i.to_be_bytes().to_vec(),
        Value::Int4(i) => i.to_be_bytes().to_vec(),
        Value::Int8(i) => i.to_be_bytes().to_vec(),
        Value::Oid(i) => i.to_be_bytes().to_vec(),
        Value::Float8(f) => f.to_bits().to_be_bytes().to_vec(),
        Value::Float4(f) => f.to_bits().to_be_bytes().to_vec(),
        Value::Text(s) => s.as_bytes().to_vec(),
        Value::Date(d) => d.to_be_bytes().to_vec(),
        Value::Time(t) | Value::Timestamp(t) | Value::Timestamptz(t) => t.to_be_bytes().to_vec(),
        Value::Bytea(b) => b.clone(),
        Value::TimeTz(t, z) => [&t.to_be_bytes()[..], &z.to_be_bytes()].concat(),
        Value::Array(a) => crate::array::send(a),
        Value::Interval(iv) => {
            let mut b = iv.micros.to_be_bytes().to_vec();
            b.extend_from_slice(&iv.days.to_be_bytes());
            b.extend_from_slice(&iv.months.to_be_bytes());
            b
        }
        Value::Numeric(n) => n.send(),
        Value::Uuid(u) => u.to_vec(),
        Value::Json(s) => s.as_bytes().to_vec(),
        // jsonb_send: version 1, then the text.
        Value::Jsonb(s) => [&[1u8][..], s.as_bytes()].concat(),
        Value::PgLsn(l) | Value::Xid8(l) => l.to_be_bytes().to_vec(),
        Value::PgSnapshot(s) => crate::pg_snapshot::send(s),
        Value::Tid(b, o) => crate::tid::send(*b, *o),
        Value::Record(r) => crate::record::send(r),
    })
}

/// Client bytes as text of the server encoding (UTF8), verified as PostgreSQL's
/// pg_verify_mbstr does: valid UTF-8 and no NUL, else 22021 naming the bytes of
/// the bad character (`0xe2 0x82 0x41`).
pub fn verify_utf8(b: &[u8]) -> Result<&str> {
    // The common case, ASCII without NUL (bytes 1..=0x7f), in one pass.
    if b.iter().all(|&c| c.wrapping_sub(1) < 0x7f) {
        return Ok(std::str::from_utf8(b).expect("ASCII is UTF-8"));
    }
    let bad_at = match std::str::from_utf8(b) {
        Ok(s) => match s.find('\0') {
            None => return Ok(s),
            Some(n) => n,
        },
        Err(e) => match b[..e.valid_up_to()].iter().position(|&c| c == 0) {
            Some(n) => n,
            None => e.valid_up_to(),
        },
    };
    let bad = &b[bad_at..];
    let len = match bad[0] {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => 1,
    };
    let shown: Vec<String> = bad.iter().take(len).map(|x| format!("0x{x:02x}")).collect();
    Err(SqlError::new(b"22021", format!("invalid byte sequence for encoding \"UTF8\": {}", shown.join(" "))))
}

/// A type's binary input (typreceive). Wrong lengths are 22P03.
pub fn recv(ty: Type, b: &[u8]) -> Result<Value> {
    let v = recv_unchecked(ty, b)?;
    if datetime::is_datetime(ty) {
        return datetime::check_received(v);
    }
    Ok(v)
}

/// The receive functions read the message with pq_getmsg*: reading past its
/// end is 08P01 ("no data left" for a single byte, "insufficient data left"
/// otherwise); bytes left over are 22P03 "incorrect binary data format" (the
/// Bind names the parameter, an array names the element).
fn recv_unchecked(ty: Type, b: &[u8]) -> Result<Value> {
    let fixed = |n: usize| -> Result<&[u8]> {
        if b.len() < n {
            Err(SqlError::new(b"08P01", if n == 1 { "no data left in message" } else { "insufficient data left in message" }))
        } else if b.len() > n {
            Err(SqlError::new(b"22P03", "incorrect binary data format"))
        } else {
            Ok(b)
        }
    };
    // PostgreSQL's pg_verify_mbstr: a zero byte is an invalid sequence too.
    let utf8 = |b: &[u8]| -> Result<String> { Ok(verify_utf8(b)?.to_string()) };
    Ok(match ty {
        Type::Bool => Value::Bool(fixed(1)?[0] != 0),
        Type::Char => Value::Text(utf8(fixed(1)?)?),
        Type::Name if b.len() >= 64 => {
            return Err(SqlError::new(b"42622", "identifier too long").with_detail("Identifier must be less than 64 characters."))
        }
        Type::Int2 => Value::Int2(i16::from_be_bytes(fixed(2)?.try_into().unwrap())),
        Type::Int4 => Value::Int4(i32::from_be_bytes(fixed(4)?.try_into().unwrap())),
        Type::Int8 => Value::Int8(i64::from_be_bytes(fixed(8)?.try_into().unwrap())),
        Type::Oid | Type::Xid | Type::Cid => Value::Oid(u32::from_be_bytes(fixed(4)?.try_into().unwrap())),
        Type::Tid => {
            let (b, o) = crate::tid::recv(b)?;
            Value::Tid(b, o)
        }
        Type::Float8 => Value::Float8(f64::from_bits(u64::from_be_bytes(fixed(8)?.try_into().unwrap()))),
        Type::Float4 => Value::Float4(f32::from_bits(u32::from_be_bytes(fixed(4)?.try_into().unwrap()))),
        Type::Date => Value::Date(i32::from_be_bytes(fixed(4)?.try_into().unwrap())),
        Type::Time => Value::Time(i64::from_be_bytes(fixed(8)?.try_into().unwrap())),
        Type::Timestamp => Value::Timestamp(i64::from_be_bytes(fixed(8)?.try_into().unwrap())),
        Type::Timestamptz => Value::Timestamptz(i64::from_be_bytes(fixed(8)?.try_into().unwrap())),
        Type::Interval => {
            let b = fixed(16)?;
            Value::Interval(Interval {
                micros: i64::from_be_bytes(b[..8].try_into().unwrap()),
                days: i32::from_be_bytes(b[8..12].try_into().unwrap()),
                months: i32::from_be_bytes(b[12..].try_into().unwrap()),
            })
        }
        Type::Bytea => Value::Bytea(b.to_vec()),
        Type::TimeTz => {
            let b = fixed(12)?;
            Value::TimeTz(i64::from_be_bytes(b[..8].try_into().unwrap()), i32::from_be_bytes(b[8..].try_into().unwrap()))
        }
        Type::Array(e) => crate::array::recv(*e, b)?,
        Type::Int2Vector => crate::array::vector_recv(Type::Int2, b)?,
        Type::OidVector => crate::array::vector_recv(Type::Oid, b)?,
        Type::Text | Type::Varchar | Type::Unknown | Type::Bpchar | Type::Name => Value::Text(utf8(b)?),
        Type::Void => Value::Null,
        Type::Record(_) => return Err(crate::record::input_error()),
        Type::Numeric => Value::Numeric(crate::numeric::Numeric::recv(b)?),
        Type::Uuid => Value::Uuid(crate::uuid::recv(b)?),
        Type::PgLsn => Value::PgLsn(crate::pg_lsn::recv(b)?),
        Type::Xid8 => Value::Xid8(u64::from_be_bytes(fixed(8)?.try_into().unwrap())),
        Type::PgSnapshot | Type::TxidSnapshot => Value::PgSnapshot(Box::new(crate::pg_snapshot::recv(b)?)),
        Type::Json | Type::Jsonb => {
            let (text, jsonb) = match (ty, b.split_first()) {
                (Type::Json, _) => (b, false),
                (_, Some((1, rest))) => (rest, true),
                (_, None) => return Err(SqlError::new(b"08P01", "insufficient data left in message")),
                (_, Some((v, _))) => return Err(SqlError::new(b"XX000", format!("unsupported jsonb version number {v}"))),
            };
            let s = verify_utf8(text)?;
            if jsonb { Value::Jsonb(crate::json::jsonb_in(s)?) } else { Value::Json(crate::json::json_in(s)?) }
        }
    })
}

/// The heap datum of a (non-null) value stored in a column of type `ty`.
pub fn to_datum(ty: Type, v: &Value) -> Result<Option<Datum<'_>>> {
    Ok(Some(match (ty, v) {
        (_, Value::Null) => return Ok(None),
        (Type::Bool, Value::Bool(b)) => Datum::ByVal(*b as u64),
        (Type::Int2, Value::Int2(i)) => Datum::ByVal(*i as u16 as u64),
        (Type::Int4, Value::Int4(i)) => Datum::ByVal(*i as u32 as u64),
        (Type::Int8, Value::Int8(i)) => Datum::ByVal(*i as u64),
        (Type::Oid | Type::Xid | Type::Cid, Value::Oid(i)) => Datum::ByVal(*i as u64),
        (Type::Float8, Value::Float8(f)) => Datum::ByVal(f.to_bits()),
        (Type::Float4, Value::Float4(f)) => Datum::ByVal(f.to_bits() as u64),
        (Type::Text | Type::Varchar | Type::Bpchar | Type::Name | Type::Char, Value::Text(s)) => Datum::Varlena(s.as_bytes()),
        (Type::Array(_) | Type::Int2Vector | Type::OidVector, Value::Array(_)) => {
            return Err(SqlError::internal("array datums are formed by rowio from types::fixed_bytes"))
        }
        (Type::Bytea, Value::Bytea(b)) => Datum::Varlena(b),
        (Type::Numeric, Value::Numeric(n)) => Datum::Varlena(n.as_bytes()),
        (Type::Uuid, Value::Uuid(u)) => Datum::Varlena(u),
        (Type::Json, Value::Json(s)) | (Type::Jsonb, Value::Jsonb(s)) => Datum::Varlena(s.as_bytes()),
        (Type::Date, Value::Date(d)) => Datum::ByVal(*d as u32 as u64),
        (Type::PgLsn, Value::PgLsn(l)) | (Type::Xid8, Value::Xid8(l)) => Datum::ByVal(*l),
        (Type::Time, Value::Time(t)) | (Type::Timestamp, Value::Timestamp(t)) | (Type::Timestamptz, Value::Timestamptz(t)) => {
            Datum::ByVal(*t as u64)
        }
        (Type::Interval, Value::Interval(_)) | (Type::TimeTz, Value::TimeTz(..)) | (Type::Tid, Value::Tid(..)) => {
            return Err(SqlError::internal("interval datums are formed by rowio::fixed_bytes"))
        }
        (t, v) => return Err(SqlError::internal(format!("value {v:?} stored into a column of type {}", t.typname()))),
    }))
}

/// A value from a stored by-value datum, or from a varlena's plain bytes.
pub fn from_byval(ty: Type, raw: u64) -> Result<Value> {
    Ok(match ty {
        Type::Bool => Value::Bool(raw != 0),
        Type::Int2 => Value::Int2(raw as u16 as i16),
        Type::Int4 => Value::Int4(raw as u32 as i32),
        Type::Int8 => Value::Int8(raw as i64),
        Type::Oid | Type::Xid | Type::Cid => Value::Oid(raw as u32),
        Type::Float8 => Value::Float8(f64::from_bits(raw)),
        Type::Float4 => Value::Float4(f32::from_bits(raw as u32)),
        Type::Date => Value::Date(raw as u32 as i32),
        Type::Time => Value::Time(raw as i64),
        Type::Timestamp => Value::Timestamp(raw as i64),
        Type::Timestamptz => Value::Timestamptz(raw as i64),
        Type::PgLsn => Value::PgLsn(raw),
        Type::Xid8 => Value::Xid8(raw),
        t => return Err(SqlError::internal(format!("by-value datum for type {}", t.typname()))),
    })
}

/// The stored bytes of a fixed-length by-reference value (interval), if `v` is one.
pub fn fixed_bytes(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::Interval(iv) => Some(iv.to_bytes().to_vec()),
        Value::TimeTz(t, z) => Some(datetime::timetz_bytes(*t, *z)),
        Value::Tid(b, o) => Some(crate::tid::to_bytes(*b, *o)),
        Value::Array(a) => Some(crate::array::send(a)),
        Value::PgSnapshot(s) => Some(crate::pg_snapshot::send(s)),
        _ => None,
    }
}

/// A value from a stored fixed-length by-reference datum.
pub fn from_fixed(ty: Type, b: &[u8]) -> Result<Value> {
    match ty {
        Type::Interval => Interval::from_bytes(b)
            .map(Value::Interval)
            .ok_or_else(|| SqlError::new(b"XX001", "stored interval of the wrong length")),
        Type::TimeTz if b.len() == 12 => Ok(Value::TimeTz(
            i64::from_le_bytes(b[..8].try_into().unwrap_or_default()),
            i32::from_le_bytes(b[8..].try_into().unwrap_or_default()),
        )),
        Type::Tid => crate::tid::from_bytes(b).map(|(b, o)| Value::Tid(b, o)).ok_or_else(|| SqlError::new(b"XX001", "stored tid of the wrong length")),
        t => Err(SqlError::internal(format!("fixed by-reference datum for type {}", t.typname()))),
    }
}

/// A value of type `ty` from a varlena's plain bytes.
pub fn from_varlena_typed(ty: Type, bytes: &[u8]) -> Result<Value> {
    match ty {
        Type::Bytea => Ok(Value::Bytea(bytes.to_vec())),
        Type::Array(e) => crate::array::recv(e.to_owned(), bytes).map_err(|er| SqlError::new(b"XX001", format!("stored array is corrupt: {}", er.message))),
        Type::Int2Vector | Type::OidVector => {
            recv(ty, bytes).map_err(|er| SqlError::new(b"XX001", format!("stored {} is corrupt: {}", ty.typname(), er.message)))
        }
        Type::Numeric => Ok(Value::Numeric(crate::numeric::Numeric::from_bytes(bytes)?)),
        Type::PgSnapshot | Type::TxidSnapshot => crate::pg_snapshot::recv(bytes)
            .map(|s| Value::PgSnapshot(Box::new(s)))
            .map_err(|er| SqlError::new(b"XX001", format!("stored pg_snapshot is corrupt: {}", er.message))),
        Type::Uuid => bytes.try_into().map(Value::Uuid).map_err(|_| SqlError::new(b"XX001", "stored uuid of the wrong length")),
        Type::Json => from_varlena(bytes).map(|v| match v { Value::Text(s) => Value::Json(s), v => v }),
        Type::Jsonb => from_varlena(bytes).map(|v| match v { Value::Text(s) => Value::Jsonb(s), v => v }),
        _ => from_varlena(bytes),
    }
}

pub fn from_varlena(bytes: &[u8]) -> Result<Value> {
    String::from_utf8(bytes.to_vec())
        .map(Value::Text)
        .map_err(|_| SqlError::new(b"XX001", "invalid UTF-8 in a stored text value"))
}

/// Converts `v` (of type `from`) to type `to`, as a cast does. `explicit` is a
/// written CAST/`::` (varchar truncates silently); otherwise it is an assignment.
pub fn cast(v: Value, from: Type, to: Type, typmod: i32, explicit: bool) -> Result<Value> {
    if v.is_null() {
        return Ok(Value::Null);
    }
    // character(n) -> another string type drops the padding.
    let v = match (from, to, v) {
        (Type::Bpchar, Type::Text | Type::Varchar, Value::Text(mut s)) => {
            s.truncate(s.trim_end_matches(' ').len());
            Value::Text(s)
        }
        (_, _, v) => v,
    };
    if let Some(r) = crate::json::cast(&v, from, to) {
        return r;
    }
    if let (Type::Array(_) | Type::Int2Vector | Type::OidVector, Type::Array(te), Value::Array(a)) = (from, to, &v) {
        // int2vector -> int2[] keeps the lower bound 0 (`[0:1]={1,2}`).
        return crate::array::cast(a, *te, typmod, explicit);
    }
    if datetime::is_datetime(from) && datetime::is_datetime(to) {
        return match datetime::cast(v, to, typmod) {
            Some(r) => r,
            None => Err(cannot_cast(from, to)),
        };
    }
    if from.is_string() {
        return match (to, v) {
            (Type::Varchar, Value::Text(s)) => Ok(Value::Text(check_varchar(&s, typmod, explicit)?)),
            (Type::Bpchar, Value::Text(s)) => Ok(Value::Text(check_bpchar(&s, typmod, explicit)?)),
            (_, Value::Text(s)) => input(to, &s, typmod),
            (_, v) => Err(SqlError::internal(format!("string of type {} holds {v:?}", from.typname()))),
        };
    }
    if to.is_string() {
        // boolean's cast to text is `true`/`false` (its output is `t`/`f`).
        let s = match v {
            Value::Bool(b) => b.to_string(),
            v => output(&v).unwrap_or_default(),
        };
        return match to {
            Type::Varchar => Ok(Value::Text(check_varchar(&s, typmod, explicit)?)),
            Type::Bpchar => Ok(Value::Text(check_bpchar(&s, typmod, explicit)?)),
            _ => Ok(Value::Text(s)),
        };
    }
    if from == Type::Numeric || to == Type::Numeric {
        return crate::numeric::cast(v, from, to, typmod);
    }
    if from == to {
        return Ok(v);
    }
    if let (Type::Xid8, Type::Xid, Value::Xid8(x)) = (from, to, &v) {
        // xid(xid8): the low 32 bits, the epoch dropped.
        return Ok(Value::Oid(*x as u32));
    }
    let int_to = |i: i64| -> Result<Value> {
        Ok(match to {
            Type::Int2 => Value::Int2(i16::try_from(i).map_err(|_| out_of_range(Type::Int2))?),
            Type::Int4 => Value::Int4(i32::try_from(i).map_err(|_| out_of_range(Type::Int4))?),
            Type::Int8 => Value::Int8(i),
            Type::Oid => Value::Oid(u32::try_from(i).map_err(|_| SqlError::new(b"22003", "OID out of range"))?),
            Type::Float8 => Value::Float8(i as f64),
            Type::Float4 => Value::Float4(i as f32),
            Type::Bool if from == Type::Int4 => Value::Bool(i != 0),
            _ => return Err(cannot_cast(from, to)),
        })
    };
    let v = match (v, to) {
        (Value::Float4(f), _) => Value::Float8(f as f64),
        (Value::Float8(f), Type::Float4) => {
            let r = f as f32;
            if r.is_infinite() && f.is_finite() {
                return Err(SqlError::new(b"22003", "value out of range: overflow"));
            }
            if r == 0.0 && f != 0.0 {
                return Err(SqlError::new(b"22003", "value out of range: underflow"));
            }
            return Ok(Value::Float4(r));
        }
        (v, _) => v,
    };
    if let (Value::Float8(_), Type::Float8) = (&v, to) {
        return Ok(v);
    }
    match v {
        Value::Int2(_) | Value::Int4(_) | Value::Int8(_) | Value::Oid(_) => int_to(v.as_i64().unwrap_or(0)),
        Value::Float8(f) => {
            let r = f.round_ties_even();
            let in_range = |lo: f64, hi: f64| !f.is_nan() && r >= lo && r < hi;
            match to {
                Type::Int2 if in_range(-32768.0, 32768.0) => Ok(Value::Int2(r as i16)),
                Type::Int4 if in_range(-2147483648.0, 2147483648.0) => Ok(Value::Int4(r as i32)),
                Type::Int8 if in_range(-9.223372036854776e18, 9.223372036854776e18) => Ok(Value::Int8(r as i64)),
                Type::Int2 | Type::Int4 | Type::Int8 => Err(out_of_range(to)),
                _ => Err(cannot_cast(from, to)),
            }
        }
        Value::Bool(b) if to == Type::Int4 => Ok(Value::Int4(b as i32)),
        _ => Err(cannot_cast(from, to)),
    }
}

pub fn cannot_cast(from: Type, to: Type) -> SqlError {
    SqlError::new(b"42846", format!("cannot cast type {} to {}", from.sql_name(), to.sql_name()))
}

/// Whether a cast exists (explicitly), and whether it is allowed implicitly /
/// in assignment (pg_cast's castcontext).
pub fn cast_allowed(from: Type, to: Type, context: CastContext) -> bool {
    use Type::*;
    if from == to || from == Unknown {
        return true;
    }
    if let Some(ok) = crate::json::cast_allowed(from, to, context) {
        return ok;
    }
    if from == Numeric || to == Numeric {
        // pg_cast: integers -> numeric -> float implicitly; the other way on assignment.
        return match (from, to) {
            (Numeric, Float8 | Float4) | (Int2 | Int4 | Int8, Numeric) => true,
            (Numeric, Int2 | Int4 | Int8) | (Float8 | Float4, Numeric) => context != CastContext::Implicit,
            (Numeric, t) if t.is_string() => context != CastContext::Implicit,
            (f, Numeric) if f.is_string() => context == CastContext::Explicit,
            _ => false,
        };
    }
    if let (Array(f), Array(t)) = (from, to) {
        return cast_allowed(*f, *t, context);
    }
    // pg_cast: int2vector -> int2[] and oidvector -> oid[] implicitly (binary
    // coercible), so on to any array type whose element the element casts to;
    // nothing casts to them but text (their input function).
    if let (Int2Vector | OidVector, Array(t)) = (from, to) {
        return from.elem().is_some_and(|e| e == *t || cast_allowed(e, *t, context));
    }
    if matches!(to, Int2Vector | OidVector) {
        return from.is_string() && context == CastContext::Explicit || matches!(from, Unknown);
    }
    if let Some((implicit, assignment)) = datetime::cast_context(from, to) {
        return match context {
            CastContext::Implicit => implicit,
            CastContext::Assignment => assignment,
            CastContext::Explicit => true,
        };
    }
    let implicit = matches!(
        (from, to),
        (Int2, Int4 | Int8 | Float8) | (Int4, Int8 | Float8) | (Int8, Float8)
            | (Int2 | Int4 | Int8, Float4) | (Float4, Float8) | (Varchar, Text) | (Text, Varchar)
            | (Bpchar, Text | Varchar) | (Text | Varchar, Bpchar)
            | (Int2 | Int4 | Int8, Oid)
            | (Text | Varchar | Bpchar, Name) | (Name, Text | Varchar) | (Char, Text | Varchar)
    );
    let assignment = implicit
        || matches!((from, to), (Int4 | Int8, Int2) | (Int8, Int4) | (Float8, Int2 | Int4 | Int8) | (Oid, Int4 | Int8))
        || matches!((from, to), (Float8, Float4) | (Float4, Int2 | Int4 | Int8))
        || (to.is_string() && from != Void);
    let explicit = assignment || matches!((from, to), (Int4, Bool) | (Bool, Int4) | (Xid8, Xid)) || from.is_string();
    match context {
        CastContext::Implicit => implicit,
        CastContext::Assignment => assignment,
        CastContext::Explicit => explicit,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CastContext {
    Implicit,
    Assignment,
    Explicit,
}

/// Compares two non-null values of the same type class. Text compares bytewise
/// (the C collation); floats with NaN greatest, as PostgreSQL orders them.
pub fn compare(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Text(x), Value::Text(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Date(x), Value::Date(y)) => x.cmp(y),
        (Value::Time(x), Value::Time(y)) | (Value::Timestamp(x), Value::Timestamp(y)) | (Value::Timestamptz(x), Value::Timestamptz(y)) => {
            x.cmp(y)
        }
        (Value::Interval(x), Value::Interval(y)) => x.span().cmp(&y.span()),
        (Value::Bytea(x), Value::Bytea(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => crate::array::compare(x, y),
        (Value::Float4(x), Value::Float4(y)) => compare(&Value::Float8(*x as f64), &Value::Float8(*y as f64)),
        (Value::Numeric(x), Value::Numeric(y)) => x.cmp(y),
        (Value::Uuid(x), Value::Uuid(y)) => x.cmp(y),
        (Value::PgLsn(x), Value::PgLsn(y)) | (Value::Xid8(x), Value::Xid8(y)) => x.cmp(y),
        (Value::Tid(b, o), Value::Tid(c, p)) => (b, o).cmp(&(c, p)),
        (Value::Record(x), Value::Record(y)) => crate::record::compare(&x.values, &y.values),
        (Value::Jsonb(x), Value::Jsonb(y)) => crate::json::compare_text(x, y),
        (Value::TimeTz(a, b), Value::TimeTz(c, d)) => crate::datetime::timetz_cmp((*a, *b), (*c, *d)),
        (Value::Float8(x), Value::Float8(y)) => match (x.is_nan(), y.is_nan()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => x.partial_cmp(y).unwrap_or(Ordering::Equal),
        },
        (x, y) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i.cmp(&j),
            _ => Ordering::Equal,
        },
    }
}

/// An integer argument of a built-in function (0 for a value that is not one).
pub fn arg_int(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

/// A float argument of a built-in function (integers widened, 0 otherwise).
pub fn arg_float(v: &Value) -> f64 {
    match v {
        Value::Float8(f) => *f,
        Value::Float4(f) => *f as f64,
        v => v.as_i64().unwrap_or(0) as f64,
    }
}

/// C's strtoull with base 0, as PostgreSQL 15's xidin, xid8in and cidin read
/// their text (unchecked): leading white space and a sign, then `0x` and hex
/// digits, `0` and octal digits, or decimal digits, up to the first other
/// character. Text without digits reads 0, a value past 2^64-1 saturates, a
/// minus sign negates in 64 bits.
fn strtoull_base0(s: &str) -> u64 {
    let b = s.as_bytes();
    let mut i = b.iter().take_while(|c| matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')).count();
    let neg = match b.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let radix = if b.get(i) == Some(&b'0') && matches!(b.get(i + 1), Some(b'x' | b'X')) && b.get(i + 2).is_some_and(u8::is_ascii_hexdigit) {
        i += 2;
        16
    } else if b.get(i) == Some(&b'0') {
        8
    } else {
        10
    };
    let mut v: u64 = 0;
    for &c in &b[i..] {
        let Some(d) = (c as char).to_digit(radix) else { break };
        match v.checked_mul(radix as u64).and_then(|v| v.checked_add(d as u64)) {
            Some(n) => v = n,
            None => return u64::MAX,
        }
    }
    if neg {
        v.wrapping_neg()
    } else {
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_text_is_utf8_without_nul() {
        assert_eq!(verify_utf8("aé€".as_bytes()).unwrap(), "aé€");
        let msg = |b: &[u8]| verify_utf8(b).map(|_| ()).unwrap_err().message;
        assert_eq!(msg(b"a\0b"), "invalid byte sequence for encoding \"UTF8\": 0x00");
        assert_eq!(msg(b"a\xffb"), "invalid byte sequence for encoding \"UTF8\": 0xff");
        assert_eq!(msg(b"a\xe2\x82A"), "invalid byte sequence for encoding \"UTF8\": 0xe2 0x82 0x41");
        assert_eq!(msg(b"\0\xff"), "invalid byte sequence for encoding \"UTF8\": 0x00", "the first bad byte");
        let e = recv(Type::Text, b"x\0").unwrap_err();
        assert_eq!(e.sqlstate(), "22021");
    }

    #[test]
    fn integer_input_and_errors() {
        assert_eq!(input(Type::Int4, " -42 ", -1).unwrap(), Value::Int4(-42));
        assert_eq!(input(Type::Int4, "+7", -1).unwrap(), Value::Int4(7));
        let e = input(Type::Int4, "abc", -1).unwrap_err();
        assert_eq!((e.sqlstate(), e.message.as_str()), ("22P02", "invalid input syntax for type integer: \"abc\""));
        let e = input(Type::Int4, "2147483648", -1).unwrap_err();
        assert_eq!(e.sqlstate(), "22003");
        assert_eq!(e.message, "value \"2147483648\" is out of range for type integer");
        assert_eq!(input(Type::Int4, "-2147483648", -1).unwrap(), Value::Int4(i32::MIN));
        assert_eq!(input(Type::Int2, "32768", -1).unwrap_err().message, "value \"32768\" is out of range for type smallint");
        assert_eq!(input(Type::Int8, "9223372036854775807", -1).unwrap(), Value::Int8(i64::MAX));
        assert_eq!(input(Type::Int8, "99999999999999999999999", -1).unwrap_err().sqlstate(), "22003");
        assert_eq!(input(Type::Int4, "", -1).unwrap_err().message, "invalid input syntax for type integer: \"\"");
        assert_eq!(input(Type::Int4, "1 2", -1).unwrap_err().sqlstate(), "22P02");
    }

    #[test]
    fn bool_and_float_io() {
        for (s, b) in [("t", true), ("TRUE", true), ("yes", true), ("on", true), ("1", true), ("f", false), ("of", false), ("no", false)] {
            assert_eq!(input(Type::Bool, s, -1).unwrap(), Value::Bool(b), "{s}");
        }
        assert_eq!(input(Type::Bool, "o", -1).unwrap_err().message, "invalid input syntax for type boolean: \"o\"");
        assert_eq!(float8_out(1.5), "1.5");
        assert_eq!(float8_out(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(float8_out(1e15), "1e+15");
        assert_eq!(float8_out(123456789012345.0), "123456789012345");
        assert_eq!(float8_out(0.0001), "0.0001");
        assert_eq!(float8_out(0.00001), "1e-05");
        assert_eq!(float8_out(-2.0), "-2");
        assert_eq!(float8_out(f64::INFINITY), "Infinity");
        assert_eq!(input(Type::Float8, "1e400", -1).unwrap_err().message, "\"1e400\" is out of range for type double precision");
        assert_eq!(float4_out(1234567.0), "1.234567e+06");
        assert_eq!(float4_out(123456.7), "123456.7");
        assert_eq!(float4_out(0.1), "0.1");
        assert_eq!(float4_out(1e-5), "1e-05");
        assert_eq!(input(Type::Float4, "1e39", -1).unwrap_err().message, "\"1e39\" is out of range for type real");
        assert_eq!(input(Type::Float4, "1e-50", -1).unwrap_err().sqlstate(), "22003");
        assert_eq!(input(Type::Float4, "x", -1).unwrap_err().message, "invalid input syntax for type real: \"x\"");
        assert_eq!(cast(Value::Float8(1e300), Type::Float8, Type::Float4, -1, true).unwrap_err().message, "value out of range: overflow");
    }

    #[test]
    fn varchar_length() {
        assert_eq!(check_varchar("abc  ", 3 + 4, false).unwrap(), "abc");
        let e = check_varchar("abcd", 3 + 4, false).unwrap_err();
        assert_eq!((e.sqlstate(), e.message.as_str()), ("22001", "value too long for type character varying(3)"));
        assert_eq!(check_varchar("abcd", 3 + 4, true).unwrap(), "abc");
    }

    #[test]
    fn casts_and_binary() {
        assert_eq!(cast(Value::Int8(70000), Type::Int8, Type::Int2, -1, true).unwrap_err().message, "smallint out of range");
        assert_eq!(cast(Value::Int4(5), Type::Int4, Type::Text, -1, true).unwrap(), Value::Text("5".into()));
        assert_eq!(cast(Value::Float8(2.5), Type::Float8, Type::Int4, -1, true).unwrap(), Value::Int4(2));
        assert_eq!(recv(Type::Int4, &send(&Value::Int4(-3)).unwrap()).unwrap(), Value::Int4(-3));
        // Short data is PostgreSQL's 08P01 (pq_getmsgint past the end); long is 22P03.
        assert_eq!(recv(Type::Int4, &[0, 1]).unwrap_err().sqlstate(), "08P01");
        assert_eq!(recv(Type::Int4, &[0, 1, 2, 3, 4]).unwrap_err().sqlstate(), "22P03");
        assert!(cast_allowed(Type::Int4, Type::Int8, CastContext::Implicit));
        assert!(!cast_allowed(Type::Int8, Type::Int4, CastContext::Implicit));
        assert!(!cast_allowed(Type::Int4, Type::Text, CastContext::Implicit));
    }

    #[test]
    fn new_types_binary_formats() {
        // date: int4 days since 2000-01-01; timestamp: int8 microseconds; interval: int8 us, int4 days, int4 months.
        assert_eq!(send(&input(Type::Date, "2000-01-02", -1).unwrap()).unwrap(), 1i32.to_be_bytes());
        assert_eq!(send(&input(Type::Timestamp, "2000-01-01 00:00:01", -1).unwrap()).unwrap(), 1_000_000i64.to_be_bytes());
        let iv = input(Type::Interval, "1 mon 2 days 00:00:03", -1).unwrap();
        let b = send(&iv).unwrap();
        assert_eq!(b, [&3_000_000i64.to_be_bytes()[..], &2i32.to_be_bytes(), &1i32.to_be_bytes()].concat());
        assert_eq!(recv(Type::Interval, &b).unwrap(), iv);
        assert_eq!(recv(Type::Interval, &b[..15]).unwrap_err().sqlstate(), "08P01");
        assert_eq!(recv(Type::Timestamptz, &(i64::MAX - 1).to_be_bytes()).unwrap_err().message, "timestamp out of range");
        assert_eq!(recv(Type::Time, &(-1i64).to_be_bytes()).unwrap_err().message, "time out of range");
        assert_eq!(recv(Type::Timestamp, &i64::MAX.to_be_bytes()).unwrap(), Value::Timestamp(i64::MAX));
        assert_eq!(recv(Type::Bytea, b"\x00\xff").unwrap(), Value::Bytea(b"\x00\xff".to_vec()));
        assert_eq!(output(&Value::Bytea(vec![0, 255])).unwrap(), "\\x00ff");
        // character(n) pads on input and trims when cast to text.
        assert_eq!(input(Type::Bpchar, "ab", 4 + 4).unwrap(), Value::Text("ab  ".into()));
        assert_eq!(cast(Value::Text("ab  ".into()), Type::Bpchar, Type::Text, -1, false).unwrap(), Value::Text("ab".into()));
        let e = input(Type::Bpchar, "abcde", 4 + 4).unwrap_err();
        assert_eq!((e.sqlstate(), e.message.as_str()), ("22001", "value too long for type character(4)"));
        assert_eq!(check_bpchar("abcde", 4 + 4, true).unwrap(), "abcd");
        assert_eq!(check_bpchar("abcd   ", 4 + 4, false).unwrap(), "abcd");
    }
}

