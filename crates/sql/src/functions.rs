//! Built-in functions: one table ([`BUILTINS`]) of every function and operator
//! procedure the analyzer can call by name, as pg_proc rows are: name,
//! argument types, result type, volatility, strictness and the Rust
//! implementation. [`crate::analyze`] resolves a call against the table with
//! PostgreSQL's rules (`analyze::funcs`); the executor calls the chosen entry by
//! its index ([`crate::plan::Func::Builtin`]).
//!
//! Operators that are plain functions of their operands (`~`, `&`, `<<`, `@`,
//! `^`, ...) are listed in [`OPERATORS`] by the procedure that implements them
//! (pg_operator.oprcode), and resolved like a function call over those procedures.
//!
//! An entry whose `imp` is [`Imp::Missing`] exists so that overload resolution
//! sees the same candidates PostgreSQL does (`round(1.5)` picks `round(numeric)`,
//! not `round(float8)`): choosing it answers 0A000 until it is implemented.
//!
//! Adding a function: append a `Builtin` row (helpers [`f`], then `.stable()`,
//! `.volatile()`, `.nonstrict()`, `.variadic_any()`), with an implementation
//! `fn(&[Value]) -> Result<Value>` that receives its arguments already converted
//! to the declared types (a strict function never sees a NULL). A function whose
//! work can grow large (numeric math, strings built to a requested length) is
//! [`Imp::Checked`] ([`fc`]): it also receives the statement's interrupt check
//! and polls it between steps, so that a cancel stops it. A set-returning
//! function uses [`Imp::Set`]. Nothing else needs changing.

use ferrogres_datum::errors::{Interrupts, Result, SqlError};
use ferrogres_datum::types::{Type, Value};

pub(crate) mod json;
mod math;
mod ops;
mod strings;

pub use strings::{md5_hex, quote_ident};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Volatility {
    Immutable,
    Stable,
    Volatile,
}

/// The rows a set-returning function produces for one call.
pub type SetIter = Box<dyn Iterator<Item = Result<Value>> + Send>;

#[derive(Clone, Copy)]
pub enum Imp {
    Scalar(fn(&[Value]) -> Result<Value>),
    /// A scalar function that can run long: it polls the interrupt check.
    Checked(fn(&[Value], &dyn Interrupts) -> Result<Value>),
    /// A set-returning function (select list: `exec::ProjectSet`).
    Set(fn(&[Value]) -> Result<SetIter>),
    /// Known to PostgreSQL, not implemented here: choosing it is 0A000 with this text.
    Missing(&'static str),
}

/// One built-in function (a pg_proc row).
#[derive(Clone, Copy)]
pub struct Builtin {
    pub name: &'static str,
    /// Declared argument types, in order.
    pub args: &'static [Type],
    /// `VARIADIC "any"` after `args` (concat, concat_ws, format).
    pub variadic_any: bool,
    pub ret: Type,
    pub volatility: Volatility,
    /// Returns NULL, without being called, when any argument is NULL.
    pub strict: bool,
    pub imp: Imp,
}

impl Builtin {
    pub const fn stable(mut self) -> Builtin {
        self.volatility = Volatility::Stable;
        self
    }
    pub const fn volatile(mut self) -> Builtin {
        self.volatility = Volatility::Volatile;
        self
    }
    pub const fn nonstrict(mut self) -> Builtin {
        self.strict = false;
        self
    }
    pub const fn variadic_any(mut self) -> Builtin {
        self.variadic_any = true;
        self
    }
    pub fn returns_set(&self) -> bool {
        matches!(self.imp, Imp::Set(_))
    }
}

/// An immutable strict function.
pub const fn f(name: &'static str, args: &'static [Type], ret: Type, imp: fn(&[Value]) -> Result<Value>) -> Builtin {
    Builtin { name, args, variadic_any: false, ret, volatility: Volatility::Immutable, strict: true, imp: Imp::Scalar(imp) }
}

/// An immutable strict function that can run long ([`Imp::Checked`]).
pub const fn fc(name: &'static str, args: &'static [Type], ret: Type, imp: fn(&[Value], &dyn Interrupts) -> Result<Value>) -> Builtin {
    Builtin { name, args, variadic_any: false, ret, volatility: Volatility::Immutable, strict: true, imp: Imp::Checked(imp) }
}

/// A function PostgreSQL has over numeric (not implemented yet).
const fn numeric(name: &'static str, args: &'static [Type], ret: Type) -> Builtin {
    Builtin { name, args, variadic_any: false, ret, volatility: Volatility::Immutable, strict: true, imp: Imp::Missing("type numeric") }
}

const fn set(name: &'static str, args: &'static [Type], ret: Type, imp: fn(&[Value]) -> Result<SetIter>) -> Builtin {
    Builtin { name, args, variadic_any: false, ret, volatility: Volatility::Immutable, strict: true, imp: Imp::Set(imp) }
}

const fn missing(name: &'static str, args: &'static [Type], ret: Type, what: &'static str) -> Builtin {
    Builtin { name, args, variadic_any: false, ret, volatility: Volatility::Immutable, strict: true, imp: Imp::Missing(what) }
}

const T: Type = Type::Text;
const I2: Type = Type::Int2;
const I4: Type = Type::Int4;
const I8: Type = Type::Int8;
const F4: Type = Type::Float4;
const F8: Type = Type::Float8;
const N: Type = Type::Numeric;
const B: Type = Type::Bool;
const IV: Type = Type::Interval;
const TS: Type = Type::Timestamp;
const TSTZ: Type = Type::Timestamptz;

use ferrogres_datum::datetime::fns as dt;
use ferrogres_datum::pg_lsn::{self as lsn, LSN};
use json as j;
use math as m;
use strings as s;

/// Every built-in function, by name (several rows per overloaded name).
pub static BUILTINS: &[Builtin] = &[
    // --- strings (functions/strings.rs)
    f("length", &[T], I4, s::length),
    f("char_length", &[T], I4, s::length),
    f("character_length", &[T], I4, s::length),
    f("octet_length", &[T], I4, s::octet_length),
    f("octet_length", &[Type::Bpchar], I4, s::octet_length),
    f("bit_length", &[T], I4, s::bit_length),
    f("upper", &[T], T, s::upper),
    f("lower", &[T], T, s::lower),
    f("initcap", &[T], T, s::initcap),
    f("substr", &[T, I4], T, s::substr),
    f("substr", &[T, I4, I4], T, s::substr),
    f("substring", &[T, I4], T, s::substr),
    f("substring", &[T, I4, I4], T, s::substr),
    f("substring", &[T, T], T, s::substring_regex),
    missing("substring", &[T, T, T], T, "SUBSTRING ... SIMILAR"),
    missing("substr", &[Type::Bytea, I4], Type::Bytea, "substr(bytea)"),
    missing("substr", &[Type::Bytea, I4, I4], Type::Bytea, "substr(bytea)"),
    missing("substring", &[Type::Bytea, I4], Type::Bytea, "substring(bytea)"),
    missing("substring", &[Type::Bytea, I4, I4], Type::Bytea, "substring(bytea)"),
    missing("btrim", &[Type::Bytea, Type::Bytea], Type::Bytea, "btrim(bytea)"),
    missing("ltrim", &[Type::Bytea, Type::Bytea], Type::Bytea, "ltrim(bytea)"),
    missing("rtrim", &[Type::Bytea, Type::Bytea], Type::Bytea, "rtrim(bytea)"),
    missing("position", &[Type::Bytea, Type::Bytea], I4, "position(bytea)"),
    missing("overlay", &[Type::Bytea, Type::Bytea, I4, I4], Type::Bytea, "overlay(bytea)"),
    missing("overlay", &[Type::Bytea, Type::Bytea, I4], Type::Bytea, "overlay(bytea)"),
    f("position", &[T, T], I4, s::strpos),
    f("strpos", &[T, T], I4, s::strpos),
    f("replace", &[T, T, T], T, s::replace),
    f("translate", &[T, T, T], T, s::translate),
    f("btrim", &[T], T, s::btrim),
    f("btrim", &[T, T], T, s::btrim),
    f("ltrim", &[T], T, s::ltrim),
    f("ltrim", &[T, T], T, s::ltrim),
    f("rtrim", &[T], T, s::rtrim),
    f("rtrim", &[T, T], T, s::rtrim),
    fc("lpad", &[T, I4], T, s::lpad),
    fc("lpad", &[T, I4, T], T, s::lpad),
    fc("rpad", &[T, I4], T, s::rpad),
    fc("rpad", &[T, I4, T], T, s::rpad),
    f("left", &[T, I4], T, s::left),
    f("right", &[T, I4], T, s::right),
    fc("repeat", &[T, I4], T, s::repeat),
    f("reverse", &[T], T, s::reverse),
    f("split_part", &[T, T, I4], T, s::split_part),
    f("ascii", &[T], I4, s::ascii),
    f("chr", &[I4], T, s::chr),
    f("concat", &[], T, s::concat).stable().nonstrict().variadic_any(),
    f("concat_ws", &[T], T, s::concat_ws).stable().nonstrict().variadic_any(),
    f("format", &[T], T, s::format).stable().nonstrict(),
    f("format", &[T], T, s::format).stable().nonstrict().variadic_any(),
    f("quote_ident", &[T], T, s::quote_ident_fn),
    f("quote_literal", &[T], T, s::quote_literal),
    f("quote_nullable", &[T], T, s::quote_nullable).nonstrict(),
    f("to_hex", &[I4], T, s::to_hex32),
    f("to_hex", &[I8], T, s::to_hex64),
    f("md5", &[T], T, s::md5),
    f("md5", &[Type::Bytea], T, s::md5),
    f("encode", &[Type::Bytea, T], T, s::encode),
    f("decode", &[T, T], Type::Bytea, s::decode),
    f("sha224", &[Type::Bytea], Type::Bytea, s::sha224),
    f("sha256", &[Type::Bytea], Type::Bytea, s::sha256),
    f("sha384", &[Type::Bytea], Type::Bytea, s::sha384),
    f("sha512", &[Type::Bytea], Type::Bytea, s::sha512),
    // PostgreSQL's hash support functions (`crate::hash_index`).
    f("hashint2", &[Type::Int2], I4, crate::hash_index::sql_hash),
    f("hashint4", &[I4], I4, crate::hash_index::sql_hash),
    f("hashint8", &[I8], I4, crate::hash_index::sql_hash),
    f("hashoid", &[Type::Oid], I4, crate::hash_index::sql_hash),
    f("hashfloat4", &[Type::Float4], I4, crate::hash_index::sql_hash),
    f("hashfloat8", &[Type::Float8], I4, crate::hash_index::sql_hash),
    f("hash_numeric", &[Type::Numeric], I4, crate::hash_index::sql_hash),
    f("hashtext", &[T], I4, crate::hash_index::sql_hash),
    f("hashname", &[Type::Name], I4, crate::hash_index::sql_hash),
    f("hashbpchar", &[Type::Bpchar], I4, crate::hash_index::sql_hashbpchar),
    f("hashchar", &[Type::Char], I4, crate::hash_index::sql_hashchar),
    f("uuid_hash", &[Type::Uuid], I4, crate::hash_index::sql_hash),
    f("time_hash", &[Type::Time], I4, crate::hash_index::sql_hash),
    f("timetz_hash", &[Type::TimeTz], I4, crate::hash_index::sql_hash),
    f("timestamp_hash", &[Type::Timestamp], I4, crate::hash_index::sql_hash),
    f("interval_hash", &[Type::Interval], I4, crate::hash_index::sql_hash),
    f("pg_lsn_hash", &[Type::PgLsn], I4, crate::hash_index::sql_hash),
    f("xid8cmp", &[Type::Xid8, Type::Xid8], I4, ops::xid8cmp),
    // pg_snapshot and its older name txid_snapshot (functions/ops.rs)
    f("pg_snapshot_xmin", &[Type::PgSnapshot], Type::Xid8, ops::snapshot_xmin),
    f("pg_snapshot_xmax", &[Type::PgSnapshot], Type::Xid8, ops::snapshot_xmax),
    set("pg_snapshot_xip", &[Type::PgSnapshot], Type::Xid8, ops::snapshot_xip),
    f("pg_visible_in_snapshot", &[Type::Xid8, Type::PgSnapshot], B, ops::visible_in_snapshot),
    f("txid_snapshot_xmin", &[Type::TxidSnapshot], I8, ops::txid_snapshot_xmin),
    f("txid_snapshot_xmax", &[Type::TxidSnapshot], I8, ops::txid_snapshot_xmax),
    set("txid_snapshot_xip", &[Type::TxidSnapshot], I8, ops::txid_snapshot_xip),
    f("txid_visible_in_snapshot", &[I8, Type::TxidSnapshot], B, ops::visible_in_snapshot),
    f("starts_with", &[T, T], B, s::starts_with),
    f("overlay", &[T, T, I4, I4], T, s::overlay),
    f("overlay", &[T, T, I4], T, s::overlay),
    f("regexp_replace", &[T, T, T], T, s::regexp_replace),
    f("regexp_replace", &[T, T, T, T], T, s::regexp_replace),
    f("similar_to_escape", &[T], T, s::similar_to_escape),
    f("similar_to_escape", &[T, T], T, s::similar_to_escape),
    f("textregexeq", &[T, T], B, s::regex_eq),
    f("textregexne", &[T, T], B, s::regex_ne),
    f("texticregexeq", &[T, T], B, s::iregex_eq),
    f("texticregexne", &[T, T], B, s::iregex_ne),
    // --- math (functions/math.rs)
    f("abs", &[I2], I2, m::abs),
    f("abs", &[I4], I4, m::abs),
    f("abs", &[I8], I8, m::abs),
    f("abs", &[F4], F4, m::abs),
    f("abs", &[F8], F8, m::abs),
    numeric("abs", &[N], N),
    f("int2abs", &[I2], I2, m::abs),
    f("int4abs", &[I4], I4, m::abs),
    f("int8abs", &[I8], I8, m::abs),
    f("float4abs", &[F4], F4, m::abs),
    f("float8abs", &[F8], F8, m::abs),
    f("mod", &[I2, I2], I2, m::modulo),
    f("mod", &[I4, I4], I4, m::modulo),
    f("mod", &[I8, I8], I8, m::modulo),
    numeric("mod", &[N, N], N),
    numeric("div", &[N, N], N),
    f("round", &[F8], F8, m::round),
    numeric("round", &[N], N),
    numeric("round", &[N, I4], N),
    f("trunc", &[F8], F8, m::trunc),
    numeric("trunc", &[N], N),
    numeric("trunc", &[N, I4], N),
    f("ceil", &[F8], F8, m::ceil),
    numeric("ceil", &[N], N),
    f("ceiling", &[F8], F8, m::ceil),
    numeric("ceiling", &[N], N),
    f("floor", &[F8], F8, m::floor),
    numeric("floor", &[N], N),
    f("sign", &[F8], F8, m::sign),
    numeric("sign", &[N], N),
    f("sqrt", &[F8], F8, m::sqrt),
    numeric("sqrt", &[N], N),
    f("dsqrt", &[F8], F8, m::sqrt),
    f("cbrt", &[F8], F8, m::cbrt),
    f("dcbrt", &[F8], F8, m::cbrt),
    f("exp", &[F8], F8, m::exp),
    fc("exp", &[N], N, ferrogres_datum::numeric::math::exp_fn),
    f("ln", &[F8], F8, m::ln),
    fc("ln", &[N], N, ferrogres_datum::numeric::math::ln_fn),
    f("log", &[F8], F8, m::log10),
    fc("log", &[N], N, ferrogres_datum::numeric::math::log_fn),
    fc("log", &[N, N], N, ferrogres_datum::numeric::math::log_fn),
    f("log10", &[F8], F8, m::log10),
    fc("log10", &[N], N, ferrogres_datum::numeric::math::log_fn),
    f("power", &[F8, F8], F8, m::power),
    fc("power", &[N, N], N, ferrogres_datum::numeric::math::power_fn),
    f("pow", &[F8, F8], F8, m::power),
    fc("pow", &[N, N], N, ferrogres_datum::numeric::math::power_fn),
    f("dpow", &[F8, F8], F8, m::power),
    fc("numeric_power", &[N, N], N, ferrogres_datum::numeric::math::power_fn),
    f("pi", &[], F8, m::pi),
    f("degrees", &[F8], F8, m::degrees),
    f("radians", &[F8], F8, m::radians),
    f("sin", &[F8], F8, m::sin),
    f("cos", &[F8], F8, m::cos),
    f("tan", &[F8], F8, m::tan),
    f("cot", &[F8], F8, m::cot),
    f("asin", &[F8], F8, m::asin),
    f("acos", &[F8], F8, m::acos),
    f("atan", &[F8], F8, m::atan),
    f("atan2", &[F8, F8], F8, m::atan2),
    f("sinh", &[F8], F8, m::sinh),
    f("cosh", &[F8], F8, m::cosh),
    f("tanh", &[F8], F8, m::tanh),
    f("random", &[], F8, m::random).volatile(),
    f("setseed", &[F8], Type::Void, m::setseed).volatile(),
    f("gcd", &[I4, I4], I4, m::gcd),
    f("gcd", &[I8, I8], I8, m::gcd),
    numeric("gcd", &[N, N], N),
    f("lcm", &[I4, I4], I4, m::lcm),
    f("lcm", &[I8, I8], I8, m::lcm),
    numeric("lcm", &[N, N], N),
    fc("factorial", &[I8], N, ferrogres_datum::numeric::math::factorial_fn),
    f("width_bucket", &[F8, F8, F8, I4], I4, m::width_bucket),
    f("width_bucket", &[N, N, N, I4], I4, ferrogres_datum::numeric::math::width_bucket_fn),
    // integer bit operators (pg_operator: & | # ~ << >>)
    f("int2and", &[I2, I2], I2, m::and),
    f("int4and", &[I4, I4], I4, m::and),
    f("int8and", &[I8, I8], I8, m::and),
    f("int2or", &[I2, I2], I2, m::or),
    f("int4or", &[I4, I4], I4, m::or),
    f("int8or", &[I8, I8], I8, m::or),
    f("int2xor", &[I2, I2], I2, m::xor),
    f("int4xor", &[I4, I4], I4, m::xor),
    f("int8xor", &[I8, I8], I8, m::xor),
    f("int2not", &[I2], I2, m::not),
    f("int4not", &[I4], I4, m::not),
    f("int8not", &[I8], I8, m::not),
    f("int2shl", &[I2, I4], I2, m::shl),
    f("int4shl", &[I4, I4], I4, m::shl),
    f("int8shl", &[I8, I4], I8, m::shl),
    f("int2shr", &[I2, I4], I2, m::shr),
    f("int4shr", &[I4, I4], I4, m::shr),
    f("int8shr", &[I8, I4], I8, m::shr),
    // --- operator procedures (functions/ops.rs)
    f("booleq", &[B, B], B, ops::booleq),
    f("boolne", &[B, B], B, ops::boolne),
    f("boollt", &[B, B], B, ops::boollt),
    f("boolgt", &[B, B], B, ops::boolgt),
    f("boolle", &[B, B], B, ops::boolle),
    f("boolge", &[B, B], B, ops::boolge),
    f("textcat", &[T, T], T, ops::textcat),
    f("int8pl", &[I8, I8], I8, ops::int8pl),
    f("int8mi", &[I8, I8], I8, ops::int8mi),
    f("int8mul", &[I8, I8], I8, ops::int8mul),
    f("int8div", &[I8, I8], I8, ops::int8div),
    f("float8", &[I2], F8, ops::to_float8),
    f("float8", &[I4], F8, ops::to_float8),
    f("float8", &[I8], F8, ops::to_float8),
    f("float8", &[F4], F8, ops::to_float8),
    f("float8", &[N], F8, ops::to_float8),
    f("float4", &[I2], F4, ops::to_float4),
    f("float4", &[I4], F4, ops::to_float4),
    f("float4", &[I8], F4, ops::to_float4),
    f("float4", &[F8], F4, ops::to_float4),
    f("float4", &[N], F4, ops::to_float4),
    f("int8", &[I2], I8, ops::to_int8),
    f("int8", &[I4], I8, ops::to_int8),
    f("int8", &[F4], I8, ops::to_int8),
    f("int8", &[F8], I8, ops::to_int8),
    f("int8", &[N], I8, ops::to_int8),
    f("int4", &[I2], I4, ops::to_int4),
    f("int4", &[I8], I4, ops::to_int4),
    f("int4", &[F4], I4, ops::to_int4),
    f("int4", &[F8], I4, ops::to_int4),
    f("int4", &[N], I4, ops::to_int4),
    f("int2", &[I4], I2, ops::to_int2),
    f("int2", &[I8], I2, ops::to_int2),
    f("int2", &[F4], I2, ops::to_int2),
    f("int2", &[F8], I2, ops::to_int2),
    f("int2", &[N], I2, ops::to_int2),
    // --- to_char & co. (formatting.rs)
    f("to_char", &[I4, T], T, ferrogres_datum::formatting::to_char),
    f("to_char", &[I8, T], T, ferrogres_datum::formatting::to_char),
    f("to_char", &[F4, T], T, ferrogres_datum::formatting::to_char),
    f("to_char", &[F8, T], T, ferrogres_datum::formatting::to_char),
    f("to_char", &[N, T], T, ferrogres_datum::formatting::to_char),
    f("to_char", &[Type::Timestamp, T], T, ferrogres_datum::formatting::to_char).stable(),
    f("to_char", &[Type::Timestamptz, T], T, ferrogres_datum::formatting::to_char).stable(),
    f("to_char", &[Type::Interval, T], T, ferrogres_datum::formatting::to_char).stable(),
    f("to_number", &[T, T], N, ferrogres_datum::formatting::to_number).stable(),
    f("to_date", &[T, T], Type::Date, ferrogres_datum::formatting::dch::to_date).stable(),
    f("to_timestamp", &[T, T], Type::Timestamptz, ferrogres_datum::formatting::dch::to_timestamp).stable(),
    f("to_timestamp", &[F8], Type::Timestamptz, ferrogres_datum::formatting::dch::to_timestamp_epoch),
    // --- set-returning
    // unnest(anyarray) and generate_subscripts(anyarray, int4 [, bool]) in the
    // select list: polymorphic, so typed by `Analyzer::array_srf` (arrays,
    // int2vector, oidvector), which alone builds calls of these rows.
    set("unnest", &[], T, array_unnest),
    set("generate_subscripts", &[], I4, array_subscripts),
    // information_schema._pg_expandarray(anyarray): records (x, n), typed by
    // `Analyzer::expand_array_call`.
    set("_pg_expandarray", &[], T, expand_array),
    set("generate_series", &[I4, I4], I4, m::series),
    set("generate_series", &[I4, I4, I4], I4, m::series),
    set("generate_series", &[I8, I8], I8, m::series),
    set("generate_series", &[I8, I8, I8], I8, m::series),
    numeric("generate_series", &[N, N], N),
    numeric("generate_series", &[N, N, N], N),
    missing("generate_series", &[Type::Timestamp, Type::Timestamp, Type::Interval], Type::Timestamp, "generate_series over timestamps"),
    missing("generate_series", &[Type::Timestamptz, Type::Timestamptz, Type::Interval], Type::Timestamptz, "generate_series over timestamps"),
    // --- json, jsonb and uuid (functions/json.rs)
    f("json_object_field", &[j::J, T], j::J, j::json_object_field),
    f("json_object_field_text", &[j::J, T], T, j::json_object_field_text),
    f("json_array_element", &[j::J, I4], j::J, j::json_array_element),
    f("json_array_element_text", &[j::J, I4], T, j::json_array_element_text),
    f("json_extract_path_op", &[j::J, j::TA], j::J, j::json_extract_path),
    f("json_extract_path_text_op", &[j::J, j::TA], T, j::json_extract_path_text),
    f("jsonb_object_field", &[j::JB, T], j::JB, j::jsonb_object_field),
    f("jsonb_object_field_text", &[j::JB, T], T, j::jsonb_object_field_text),
    f("jsonb_array_element", &[j::JB, I4], j::JB, j::jsonb_array_element),
    f("jsonb_array_element_text", &[j::JB, I4], T, j::jsonb_array_element_text),
    f("jsonb_extract_path_op", &[j::JB, j::TA], j::JB, j::jsonb_extract_path),
    f("jsonb_extract_path_text_op", &[j::JB, j::TA], T, j::jsonb_extract_path_text),
    f("jsonb_contains", &[j::JB, j::JB], B, j::jsonb_contains),
    f("jsonb_contained", &[j::JB, j::JB], B, j::jsonb_contained),
    f("jsonb_exists", &[j::JB, T], B, j::jsonb_exists),
    f("jsonb_exists_any", &[j::JB, j::TA], B, j::jsonb_exists_any),
    f("jsonb_exists_all", &[j::JB, j::TA], B, j::jsonb_exists_all),
    f("jsonb_concat", &[j::JB, j::JB], j::JB, j::jsonb_concat),
    f("jsonb_delete", &[j::JB, T], j::JB, j::jsonb_delete_key),
    f("jsonb_delete", &[j::JB, j::TA], j::JB, j::jsonb_delete_keys),
    f("jsonb_delete", &[j::JB, I4], j::JB, j::jsonb_delete_index),
    f("jsonb_delete_path", &[j::JB, j::TA], j::JB, j::jsonb_delete_path),
    f("jsonb_set", &[j::JB, j::TA, j::JB], j::JB, j::jsonb_set),
    f("jsonb_set", &[j::JB, j::TA, j::JB, B], j::JB, j::jsonb_set),
    f("jsonb_insert", &[j::JB, j::TA, j::JB], j::JB, j::jsonb_insert),
    f("jsonb_insert", &[j::JB, j::TA, j::JB, B], j::JB, j::jsonb_insert),
    f("to_json", &[], j::J, j::to_json).stable().nonstrict().variadic_any(),
    f("to_jsonb", &[], j::JB, j::to_jsonb).stable().nonstrict().variadic_any(),
    f("json_build_object", &[], j::J, j::json_build_object).stable().nonstrict().variadic_any(),
    f("json_build_object", &[], j::J, j::json_build_object).stable().nonstrict(),
    f("jsonb_build_object", &[], j::JB, j::jsonb_build_object).stable().nonstrict(),
    f("json_build_array", &[], j::J, j::json_build_array).stable().nonstrict(),
    f("jsonb_build_array", &[], j::JB, j::jsonb_build_array).stable().nonstrict(),
    f("jsonb_build_object", &[], j::JB, j::jsonb_build_object).stable().nonstrict().variadic_any(),
    f("json_build_array", &[], j::J, j::json_build_array).stable().nonstrict().variadic_any(),
    f("jsonb_build_array", &[], j::JB, j::jsonb_build_array).stable().nonstrict().variadic_any(),
    f("json_object", &[j::TA], j::J, j::json_object),
    f("json_object", &[j::TA, j::TA], j::J, j::json_object),
    f("jsonb_pretty", &[j::JB], T, j::jsonb_pretty),
    f("jsonb_typeof", &[j::JB], T, j::jsonb_typeof),
    f("json_typeof", &[j::J], T, j::json_typeof),
    f("jsonb_array_length", &[j::JB], I4, j::jsonb_array_length),
    f("json_array_length", &[j::J], I4, j::json_array_length),
    f("jsonb_strip_nulls", &[j::JB], j::JB, j::jsonb_strip_nulls),
    set("jsonb_array_elements", &[j::JB], j::JB, j::jsonb_array_elements),
    set("jsonb_array_elements_text", &[j::JB], T, j::jsonb_array_elements_text),
    set("jsonb_object_keys", &[j::JB], T, j::jsonb_object_keys),
    set("json_array_elements", &[j::J], j::J, j::json_array_elements),
    set("json_array_elements_text", &[j::J], T, j::json_array_elements_text),
    set("json_object_keys", &[j::J], T, j::json_object_keys),
    missing("jsonb_path_query", &[j::JB, Type::Unknown], j::JB, "jsonb_path_query (SQL/JSON path)"),
    missing("jsonb_each", &[j::JB], j::JB, "jsonb_each (functions returning records)"),
    missing("jsonb_each_text", &[j::JB], j::JB, "jsonb_each_text (functions returning records)"),
    missing("json_each", &[j::J], j::J, "json_each (functions returning records)"),
    missing("json_each_text", &[j::J], j::J, "json_each_text (functions returning records)"),
    missing("pg_walfile_name_offset", &[LSN], T, "pg_walfile_name_offset (functions returning records)"),
    f("gen_random_uuid", &[], Type::Uuid, j::gen_random_uuid).volatile(),
    // --- pg_lsn (pg_lsn.rs)
    f("pg_lsn_mi", &[LSN, LSN], N, lsn::mi),
    f("pg_lsn_pli", &[LSN, N], LSN, lsn::pli),
    f("numeric_pl_pg_lsn", &[N, LSN], LSN, lsn::numeric_pl),
    f("pg_lsn_mii", &[LSN, N], LSN, lsn::mii),
    f("pg_wal_lsn_diff", &[LSN, LSN], N, lsn::mi),
    f("pg_lsn", &[N], LSN, lsn::from_numeric_fn),
    f("pg_lsn_larger", &[LSN, LSN], LSN, lsn::larger),
    f("pg_lsn_smaller", &[LSN, LSN], LSN, lsn::smaller),
    // --- date/time (datetime/fns.rs)
    f("justify_hours", &[IV], IV, dt::justify_hours),
    f("justify_days", &[IV], IV, dt::justify_days),
    f("justify_interval", &[IV], IV, dt::justify_interval),
    f("age", &[TS, TS], IV, dt::age_timestamp),
    f("age", &[TSTZ, TSTZ], IV, dt::age_timestamptz).stable(),
    f("age", &[TS], IV, dt::age_from_today).stable(),
    f("age", &[TSTZ], IV, dt::age_from_today).stable(),
    f("make_date", &[I4, I4, I4], Type::Date, dt::make_date),
    f("make_time", &[I4, I4, F8], Type::Time, dt::make_time),
    f("make_timestamp", &[I4, I4, I4, I4, I4, F8], TS, dt::make_timestamp),
    f("make_timestamptz", &[I4, I4, I4, I4, I4, F8], TSTZ, dt::make_timestamptz).stable(),
    f("make_timestamptz", &[I4, I4, I4, I4, I4, F8, T], TSTZ, dt::make_timestamptz_zone).stable(),
    f("make_interval", &[], IV, dt::make_interval),
    f("make_interval", &[I4], IV, dt::make_interval),
    f("make_interval", &[I4, I4], IV, dt::make_interval),
    f("make_interval", &[I4, I4, I4], IV, dt::make_interval),
    f("make_interval", &[I4, I4, I4, I4], IV, dt::make_interval),
    f("make_interval", &[I4, I4, I4, I4, I4], IV, dt::make_interval),
    f("make_interval", &[I4, I4, I4, I4, I4, I4], IV, dt::make_interval),
    f("make_interval", &[I4, I4, I4, I4, I4, I4, F8], IV, dt::make_interval),
    f("date_bin", &[IV, TS, TS], TS, dt::date_bin),
    f("date_bin", &[IV, TSTZ, TSTZ], TSTZ, dt::date_bin),
    f("isfinite", &[Type::Date], B, dt::isfinite),
    f("isfinite", &[TS], B, dt::isfinite),
    f("isfinite", &[TSTZ], B, dt::isfinite),
    f("isfinite", &[IV], B, dt::isfinite),
    f("byteacat", &[Type::Bytea, Type::Bytea], Type::Bytea, ops::byteacat),
];

/// PostgreSQL 15 functions of this module's kind (strings, regular expressions)
/// that are not implemented: a call is 0A000, not 42883 "does not exist".
pub static NOT_YET: &[&str] = &[
    "regexp_count",
    "regexp_instr",
    "regexp_like",
    "regexp_match",
    "regexp_matches",
    "regexp_split_to_array",
    "regexp_split_to_table",
    "regexp_substr",
    "unistr",
    "normalize",
    "to_ascii",
];

/// Operators implemented by a procedure of [`BUILTINS`]: (operator, procedure).
/// A procedure with one argument makes a prefix operator.
pub static OPERATORS: &[(&str, &str)] = &[
    ("~", "textregexeq"),
    ("!~", "textregexne"),
    ("~*", "texticregexeq"),
    ("!~*", "texticregexne"),
    ("&", "int2and"),
    ("&", "int4and"),
    ("&", "int8and"),
    ("|", "int2or"),
    ("|", "int4or"),
    ("|", "int8or"),
    ("#", "int2xor"),
    ("#", "int4xor"),
    ("#", "int8xor"),
    ("~", "int2not"),
    ("~", "int4not"),
    ("~", "int8not"),
    ("<<", "int2shl"),
    ("<<", "int4shl"),
    ("<<", "int8shl"),
    (">>", "int2shr"),
    (">>", "int4shr"),
    (">>", "int8shr"),
    ("@", "int2abs"),
    ("@", "int4abs"),
    ("@", "int8abs"),
    ("@", "float4abs"),
    ("@", "float8abs"),
    ("^", "dpow"),
    ("^", "numeric_power"),
    ("|/", "dsqrt"),
    ("||/", "dcbrt"),
    ("->", "json_object_field"),
    ("->>", "json_object_field_text"),
    ("->", "json_array_element"),
    ("->>", "json_array_element_text"),
    ("#>", "json_extract_path_op"),
    ("#>>", "json_extract_path_text_op"),
    ("->", "jsonb_object_field"),
    ("->>", "jsonb_object_field_text"),
    ("->", "jsonb_array_element"),
    ("->>", "jsonb_array_element_text"),
    ("#>", "jsonb_extract_path_op"),
    ("#>>", "jsonb_extract_path_text_op"),
    ("@>", "jsonb_contains"),
    ("<@", "jsonb_contained"),
    ("?", "jsonb_exists"),
    ("?|", "jsonb_exists_any"),
    ("?&", "jsonb_exists_all"),
    ("#-", "jsonb_delete_path"),
];

/// Operators whose name has other meanings the analyzer handles itself (`||`
/// on strings and arrays, `-` on numbers): resolved over these procedures only
/// when an operand is jsonb, or both are bytea (`analyze::binary`).
pub static JSONB_OPERATORS: &[(&str, &str)] = &[("||", "jsonb_concat"), ("-", "jsonb_delete"), ("||", "byteacat")];

/// Whether some operator `op` is in [`OPERATORS`].
pub fn is_builtin_operator(op: &str) -> bool {
    OPERATORS.iter().any(|(o, _)| *o == op)
}

/// A function's index in [`BUILTINS`] (what `plan::Func::Builtin` holds).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct FuncId(pub u16);

impl std::fmt::Debug for FuncId {
    fn fmt(&self, fm: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let b = &BUILTINS[self.0 as usize];
        write!(fm, "{}#{}", b.name, self.0)
    }
}

impl FuncId {
    pub fn get(self) -> &'static Builtin {
        &BUILTINS[self.0 as usize]
    }
}

/// Calls a scalar built-in (strictness applied here); `ck` is the statement's
/// interrupt check, for the functions that poll it.
pub fn call(id: FuncId, vals: &[Value], ck: &dyn Interrupts) -> Result<Value> {
    let b = id.get();
    if b.strict && vals.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    match b.imp {
        Imp::Scalar(fun) => fun(vals),
        Imp::Checked(fun) => fun(vals, ck),
        Imp::Set(_) => Err(SqlError::new(b"0A000", "set-valued function called in context that cannot accept a set")),
        Imp::Missing(what) => Err(SqlError::not_supported(what)),
    }
}

/// Calls a `VARIADIC "any"` built-in whose last argument is the array of the
/// variadic arguments. A NULL array: concat and concat_ws return NULL, format
/// sees no variadic arguments.
pub fn call_variadic(id: FuncId, mut vals: Vec<Value>, ck: &dyn Interrupts) -> Result<Value> {
    match vals.pop() {
        Some(Value::Array(a)) => vals.extend(a.items),
        _ if id.get().name != "format" => return Ok(Value::Null),
        _ => {}
    }
    call(id, &vals, ck)
}

/// Starts a set-returning built-in: an empty set when strict and an argument is NULL.
pub fn call_set(id: FuncId, vals: &[Value]) -> Result<SetIter> {
    let b = id.get();
    if b.strict && vals.iter().any(Value::is_null) {
        return Ok(Box::new(std::iter::empty()));
    }
    match b.imp {
        Imp::Set(fun) => fun(vals),
        Imp::Scalar(fun) => Ok(Box::new(std::iter::once(fun(vals)))),
        Imp::Checked(fun) => Ok(Box::new(std::iter::once(fun(vals, &ferrogres_datum::errors::NoInterrupts)))),
        Imp::Missing(what) => Err(SqlError::not_supported(what)),
    }
}

/// unnest(anyarray): the elements in order (NULL elements too).
fn array_unnest(a: &[Value]) -> Result<SetIter> {
    let items = match a.first() {
        Some(Value::Array(arr)) => arr.items.clone(),
        _ => Vec::new(),
    };
    Ok(Box::new(items.into_iter().map(Ok)))
}

/// _pg_expandarray(anyarray): `(x, n)` for each element `x`, `n` counting
/// from 1 whatever the lower bound (an int2vector's is 0).
fn expand_array(a: &[Value]) -> Result<SetIter> {
    let Some(Value::Array(arr)) = a.first() else { return Ok(Box::new(std::iter::empty())) };
    let Some(fields) = ferrogres_datum::record::expand_array_fields(arr.elem) else { return Ok(Box::new(std::iter::empty())) };
    let rows: Vec<Value> = arr
        .items
        .iter()
        .enumerate()
        .map(|(i, x)| Value::Record(Box::new(ferrogres_datum::record::RecordValue { fields, values: vec![x.clone(), Value::Int4(i as i32 + 1)] })))
        .collect();
    Ok(Box::new(rows.into_iter().map(Ok)))
}

/// generate_subscripts(anyarray, dim [, reverse]): the subscripts of
/// dimension `dim` (only 1 exists), from the lower bound, or downwards.
fn array_subscripts(a: &[Value]) -> Result<SetIter> {
    let (Some(Value::Array(arr)), Some(1)) = (a.first(), a.get(1).and_then(Value::as_i64)) else {
        return Ok(Box::new(std::iter::empty()));
    };
    let lower = arr.lower as i64;
    let mut subs: Vec<Value> = (0..arr.items.len() as i64).map(|i| Value::Int4((lower + i) as i32)).collect();
    if a.get(2) == Some(&Value::Bool(true)) {
        subs.reverse();
    }
    Ok(Box::new(subs.into_iter().map(Ok)))
}

/// The row of [`BUILTINS`] named `name` with no declared arguments (the
/// polymorphic rows that analysis types itself).
pub fn polymorphic(name: &str) -> Option<FuncId> {
    BUILTINS.iter().position(|b| b.name == name && b.args.is_empty() && b.returns_set()).map(|i| FuncId(i as u16))
}

/// A string argument (the declared type is a string type).
pub(crate) fn text(v: &Value) -> &str {
    match v {
        Value::Text(s) => s,
        _ => "",
    }
}

// The argument readers are datum-level (numeric's and to_char's procedures use them).
pub(crate) use ferrogres_datum::types::{arg_float as float, arg_int as int};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operator_names_a_builtin() {
        for (op, proc) in OPERATORS {
            assert!(BUILTINS.iter().any(|b| b.name == *proc), "operator {op}: no procedure {proc}");
        }
        assert!(BUILTINS.len() < u16::MAX as usize);
    }
}
