//! Arrays: one-dimensional arrays of the built-in scalar types, with
//! PostgreSQL 15's type OIDs, text and binary I/O, and the operators and
//! functions over them. Also the input functions of `name` and `"char"`.
//!
//! | element | array type | oid |
//! |---|---|---|
//! | bool, bytea, "char", name, int2, int4, text, xid | _bool ... | 1000 1001 1002 1003 1005 1007 1009 1011 |
//! | bpchar, varchar, int8, float4, float8, oid | | 1014 1015 1016 1021 1022 1028 |
//! | timestamp, date, time, timestamptz, interval, timetz | | 1115 1182 1183 1185 1187 1270 |
//!
//! A value is [`Array`]: the element type, the lower bound of its one dimension
//! and the elements (`Value::Null` for a NULL element). An empty array has no
//! dimension (`{}`; array_length/array_lower/array_upper give NULL).
//!
//! Storage: an array column is a varlena whose bytes are the binary send format
//! (big-endian, as `array_send` writes it):
//!
//! ```text
//! ndim i32 (0 or 1) | has-nulls i32 (0/1) | element type oid u32
//! [ if ndim = 1: length i32 | lower bound i32 ]
//! per element: byte length i32 (-1 = NULL) | the element's binary send bytes
//! ```
//!
//! Not done: more than one dimension (input `{{1,2},{3,4}}` and such binary
//! data are 0A000), ARRAY(subquery), arrays of arrays' slices assignment
//! (`UPDATE t SET a[2] = ...`).

use crate::errors::{Result, SqlError};
use crate::ops::CmpOp;
use crate::types::{self, Type, Value};
use std::cmp::Ordering;

#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    pub elem: Type,
    /// The subscript of the first element (1 unless written `[lo:hi]=...`).
    pub lower: i32,
    pub items: Vec<Value>,
    /// An int2vector or oidvector (elem int2 or oid, lower bound 0): the same
    /// value as an array, but text I/O is the elements separated by spaces.
    pub vector: bool,
    /// What a user of this value computed from its items once (the SQL
    /// layer's hash lookup of a constant `= ANY` list): see [`ArrayCache`].
    pub cache: ArrayCache,
}

impl Array {
    pub fn new(elem: Type, items: Vec<Value>) -> Array {
        Array { elem, lower: 1, items, vector: false, cache: ArrayCache::default() }
    }
    /// An int2vector (`elem` int2) or oidvector (`elem` oid): lower bound 0.
    pub fn vector(elem: Type, items: Vec<Value>) -> Array {
        Array { elem, lower: 0, items, vector: true, cache: ArrayCache::default() }
    }
}

/// A value derived from an array's items, computed on first use and kept
/// with that array (a constant of a plan: the SQL layer's hashed `= ANY`,
/// built once per plan copy). Not part of the value: equality ignores it,
/// and a clone starts empty, so a copy that is changed later can never read
/// a cache of other items (the array a cache was made from is only read, by
/// `&` reference, while it holds one).
#[derive(Default)]
pub struct ArrayCache(std::sync::OnceLock<std::sync::Arc<dyn std::any::Any + Send + Sync>>);

impl ArrayCache {
    /// The cached `T`, made by `make` on first use; `None` when the cache
    /// already holds something of another type.
    pub fn get_or_init<T: std::any::Any + Send + Sync>(&self, make: impl FnOnce() -> T) -> Option<&T> {
        self.0.get_or_init(|| std::sync::Arc::new(make())).downcast_ref::<T>()
    }
}

impl Clone for ArrayCache {
    fn clone(&self) -> ArrayCache {
        ArrayCache::default()
    }
}

impl PartialEq for ArrayCache {
    fn eq(&self, _: &ArrayCache) -> bool {
        true
    }
}

impl std::fmt::Debug for ArrayCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ArrayCache")
    }
}

/// The element types that have an array type: (element, array oid, typname, SQL name).
const ELEMS: [(Type, u32, &str, &str); N_ELEMS] = [
    (Type::Bool, 1000, "_bool", "boolean[]"),
    (Type::Bytea, 1001, "_bytea", "bytea[]"),
    (Type::Char, 1002, "_char", "\"char\"[]"),
    (Type::Name, 1003, "_name", "name[]"),
    (Type::Int2, 1005, "_int2", "smallint[]"),
    (Type::Int4, 1007, "_int4", "integer[]"),
    (Type::Text, 1009, "_text", "text[]"),
    (Type::Xid, 1011, "_xid", "xid[]"),
    (Type::Bpchar, 1014, "_bpchar", "character[]"),
    (Type::Varchar, 1015, "_varchar", "character varying[]"),
    (Type::Int8, 1016, "_int8", "bigint[]"),
    (Type::Float4, 1021, "_float4", "real[]"),
    (Type::Float8, 1022, "_float8", "double precision[]"),
    (Type::Oid, 1028, "_oid", "oid[]"),
    (Type::Timestamp, 1115, "_timestamp", "timestamp without time zone[]"),
    (Type::Date, 1182, "_date", "date[]"),
    (Type::Time, 1183, "_time", "time without time zone[]"),
    (Type::Timestamptz, 1185, "_timestamptz", "timestamp with time zone[]"),
    (Type::Interval, 1187, "_interval", "interval[]"),
    (Type::TimeTz, 1270, "_timetz", "time with time zone[]"),
    (Type::Json, 199, "_json", "json[]"),
    (Type::Uuid, 2951, "_uuid", "uuid[]"),
    (Type::Jsonb, 3807, "_jsonb", "jsonb[]"),
    (Type::PgLsn, 3221, "_pg_lsn", "pg_lsn[]"),
    (Type::Xid8, 271, "_xid8", "xid8[]"),
    (Type::PgSnapshot, 5039, "_pg_snapshot", "pg_snapshot[]"),
    (Type::TxidSnapshot, 2949, "_txid_snapshot", "txid_snapshot[]"),
    (Type::Tid, 1010, "_tid", "tid[]"),
    (Type::Numeric, 1231, "_numeric", "numeric[]"),
    (Type::Int2Vector, 1006, "_int2vector", "int2vector[]"),
    (Type::OidVector, 1013, "_oidvector", "oidvector[]"),
];

/// How many element types have an array type.
pub(crate) const N_ELEMS: usize = 31;

/// The element types, as `'static` references for `Type::Array` (from [`ELEMS`]).
pub(crate) static ELEM_TYPES: [Type; N_ELEMS] = {
    let mut out = [Type::Bool; N_ELEMS];
    let mut i = 0;
    while i < N_ELEMS {
        out[i] = ELEMS[i].0;
        i += 1;
    }
    out
};

fn entry(elem: Type) -> Option<usize> {
    ELEMS.iter().position(|e| e.0 == elem)
}

/// The array type of `elem`, if it has one.
pub fn array_of(elem: Type) -> Option<Type> {
    entry(elem).map(|i| Type::Array(&ELEM_TYPES[i]))
}

/// All array types (pg_type's rows).
pub fn all_array_types() -> impl Iterator<Item = Type> {
    ELEM_TYPES.iter().map(Type::Array)
}

pub fn array_oid(elem: Type) -> u32 {
    entry(elem).map_or(0, |i| ELEMS[i].1)
}

pub fn from_array_oid(oid: u32) -> Option<Type> {
    ELEMS.iter().position(|e| e.1 == oid).map(|i| Type::Array(&ELEM_TYPES[i]))
}

pub fn array_typname(elem: Type) -> &'static str {
    entry(elem).map_or("_unknown", |i| ELEMS[i].2)
}

pub fn array_sql_name(elem: Type) -> &'static str {
    entry(elem).map_or("unknown[]", |i| ELEMS[i].3)
}

/// `_int4` style names and their aliases.
pub fn from_typname(name: &str) -> Option<Type> {
    ELEMS.iter().position(|e| e.2 == name).map(|i| Type::Array(&ELEM_TYPES[i]))
}

/// namein: at most NAMEDATALEN - 1 = 63 bytes (cut at a character boundary).
pub fn name_in(s: &str) -> String {
    let mut end = s.len().min(63);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// charin: the first byte, or the byte `\ooo` names (octal). A byte of 128 or
/// more is held as charout prints it (`\377`); byte 0 is the empty string.
pub fn char_in(s: &str) -> String {
    let b = s.as_bytes();
    let byte = if b.len() == 4 && b[0] == b'\\' && b[1..].iter().all(|c| (b'0'..=b'7').contains(c)) {
        ((b[1] - b'0') as u32 * 64 + (b[2] - b'0') as u32 * 8 + (b[3] - b'0') as u32) as u8
    } else {
        match b.first() {
            Some(c) => *c,
            None => return String::new(),
        }
    };
    match byte {
        0 => String::new(),
        1..=127 => (byte as char).to_string(),
        _ => format!("\\{byte:03o}"),
    }
}

/// PostgreSQL's MAXDIM: the most dimensions an array may have.
pub const MAXDIM: usize = 6;

/// 54000 for an array nested deeper than [`MAXDIM`] (PostgreSQL names the
/// first dimension past the limit, whatever the depth).
pub fn too_many_dimensions() -> SqlError {
    SqlError::new(b"54000", format!("number of array dimensions ({}) exceeds the maximum allowed ({MAXDIM})", MAXDIM + 1))
}

/// The dimensions an array literal opens at its start (`{{{1}}}`: 3),
/// counted without recursion and no further than past [`MAXDIM`].
fn leading_dimensions(b: &[char], mut i: usize) -> usize {
    let mut n = 0;
    while i < b.len() && n <= MAXDIM {
        match b[i] {
            '{' => n += 1,
            ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c' => {}
            _ => break,
        }
        i += 1;
    }
    n
}

fn malformed(s: &str, detail: &str) -> SqlError {
    SqlError::new(b"22P02", format!("malformed array literal: \"{s}\"")).with_detail(detail)
}

/// array_in for a one-dimensional array: `{a,b,"c d",NULL}`, optionally preceded
/// by `[lo:hi]=`. Elements go through the element type's input function.
pub fn input(elem: Type, s: &str, typmod: i32) -> Result<Value> {
    let b: Vec<char> = s.chars().collect();
    let mut i = 0;
    let ws = |c: char| matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c');
    while i < b.len() && ws(b[i]) {
        i += 1;
    }
    let mut dims: Option<(i32, i32)> = None;
    if i < b.len() && b[i] == '[' {
        let close = b[i..].iter().position(|c| *c == ']').map(|p| p + i);
        let Some(close) = close else { return Err(malformed(s, "Missing \"]\" after array dimensions.")) };
        let inner: String = b[i + 1..close].iter().collect();
        let (lo, hi) = match inner.split_once(':') {
            Some((l, h)) => (l.trim().parse::<i32>(), h.trim().parse::<i32>()),
            None => (Ok(1), inner.trim().parse::<i32>()),
        };
        let (Ok(lo), Ok(hi)) = (lo, hi) else { return Err(malformed(s, "\"[\" must introduce explicitly-specified array dimensions.")) };
        if hi < lo {
            return Err(SqlError::new(b"2202E", "upper bound cannot be less than lower bound"));
        }
        i = close + 1;
        if i < b.len() && b[i] == '[' {
            return Err(SqlError::not_supported("multidimensional arrays"));
        }
        if i >= b.len() || b[i] != '=' {
            return Err(malformed(s, "Missing \"=\" after array dimensions."));
        }
        i += 1;
        while i < b.len() && ws(b[i]) {
            i += 1;
        }
        dims = Some((lo, hi));
    }
    if i >= b.len() || b[i] != '{' {
        return Err(malformed(s, "Array value must start with \"{\" or dimension information."));
    }
    i += 1;
    let mut items = Vec::new();
    let end_of_input = || malformed(s, "Unexpected end of input.");
    loop {
        while i < b.len() && ws(b[i]) {
            i += 1;
        }
        if i >= b.len() {
            return Err(end_of_input());
        }
        if b[i] == '}' && items.is_empty() {
            i += 1;
            break;
        }
        if b[i] == '{' {
            if items.is_empty() {
                if 1 + leading_dimensions(&b, i) > MAXDIM {
                    return Err(too_many_dimensions());
                }
                return Err(SqlError::not_supported("multidimensional arrays"));
            }
            return Err(malformed(s, "Unexpected \"{\" character."));
        }
        // One element.
        let mut text = String::new();
        let mut quoted = false;
        if b[i] == '"' {
            quoted = true;
            i += 1;
            loop {
                if i >= b.len() {
                    return Err(end_of_input());
                }
                match b[i] {
                    '\\' => {
                        i += 1;
                        if i >= b.len() {
                            return Err(end_of_input());
                        }
                        text.push(b[i]);
                    }
                    '"' => {
                        i += 1;
                        break;
                    }
                    c => text.push(c),
                }
                i += 1;
            }
            while i < b.len() && ws(b[i]) {
                i += 1;
            }
        } else {
            // Unquoted: up to a delimiter; trailing blanks (unescaped) dropped.
            let mut keep = 0; // length of text up to its last escaped or non-blank character
            loop {
                if i >= b.len() {
                    return Err(end_of_input());
                }
                match b[i] {
                    ',' | '}' => break,
                    '{' | '"' => return Err(malformed(s, &format!("Unexpected \"{}\" character.", b[i]))),
                    '\\' => {
                        i += 1;
                        if i >= b.len() {
                            return Err(end_of_input());
                        }
                        text.push(b[i]);
                        quoted = true;
                        keep = text.len();
                    }
                    c => {
                        text.push(c);
                        if !ws(c) {
                            keep = text.len();
                        }
                    }
                }
                i += 1;
            }
            text.truncate(keep);
            if text.is_empty() && !quoted {
                return Err(malformed(s, &format!("Unexpected \"{}\" character.", b[i])));
            }
        }
        if !quoted && text.eq_ignore_ascii_case("NULL") {
            items.push(Value::Null);
        } else {
            let v = types::input(elem, &text, typmod)?;
            items.push(v);
        }
        if i >= b.len() {
            return Err(end_of_input());
        }
        match b[i] {
            ',' => i += 1,
            '}' => {
                i += 1;
                break;
            }
            c => return Err(malformed(s, &format!("Unexpected \"{c}\" character."))),
        }
    }
    while i < b.len() {
        if !ws(b[i]) {
            return Err(malformed(s, "Junk after closing right brace."));
        }
        i += 1;
    }
    let mut a = Array::new(elem, items);
    if let Some((lo, hi)) = dims {
        if (hi as i64 - lo as i64 + 1) as usize != a.items.len() {
            return Err(malformed(s, "Specified array dimensions do not match array contents."));
        }
        a.lower = lo;
    }
    Ok(Value::Array(Box::new(a)))
}

/// array_out: `{1,2,NULL}`; elements quoted when needed; `[lo:hi]=` when the
/// lower bound is not 1.
pub fn output(a: &Array) -> String {
    if a.vector {
        // int2vectorout / oidvectorout: "1 2" (the elements are never NULL).
        return a.items.iter().filter_map(types::output).collect::<Vec<_>>().join(" ");
    }
    let mut out = String::new();
    if a.lower != 1 && !a.items.is_empty() {
        out.push_str(&format!("[{}:{}]=", a.lower, a.lower as i64 + a.items.len() as i64 - 1));
    }
    out.push('{');
    for (n, v) in a.items.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        match types::output(v) {
            None => out.push_str("NULL"),
            Some(t) => {
                let needs_quotes = t.is_empty()
                    || t.eq_ignore_ascii_case("NULL")
                    || t.chars().any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\' | ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c'));
                if needs_quotes {
                    out.push('"');
                    for c in t.chars() {
                        if c == '"' || c == '\\' {
                            out.push('\\');
                        }
                        out.push(c);
                    }
                    out.push('"');
                } else {
                    out.push_str(&t);
                }
            }
        }
    }
    out.push('}');
    out
}

/// array_send (also the stored form).
pub fn send(a: &Array) -> Vec<u8> {
    let mut b = Vec::new();
    // An empty vector still has its one dimension (of length 0, from 0).
    let ndim: i32 = if a.items.is_empty() && !a.vector { 0 } else { 1 };
    b.extend_from_slice(&ndim.to_be_bytes());
    b.extend_from_slice(&(a.items.iter().any(Value::is_null) as i32).to_be_bytes());
    b.extend_from_slice(&a.elem.oid().to_be_bytes());
    if ndim == 1 {
        b.extend_from_slice(&(a.items.len() as i32).to_be_bytes());
        b.extend_from_slice(&a.lower.to_be_bytes());
    }
    for v in &a.items {
        match types::send(v) {
            None => b.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(d) => {
                b.extend_from_slice(&(d.len() as i32).to_be_bytes());
                b.extend_from_slice(&d);
            }
        }
    }
    b
}

/// PostgreSQL's MaxArraySize: the most elements an array may have.
pub const MAX_ARRAY_SIZE: usize = 134_217_727;
/// PostgreSQL's MAXDIM.
const MAX_DIM: i32 = 6;

/// 54000 for an array with more than [`MAX_ARRAY_SIZE`] elements.
pub fn too_many_elements() -> SqlError {
    SqlError::new(b"54000", format!("array size exceeds the maximum allowed ({MAX_ARRAY_SIZE})"))
}

/// array_recv, with array_recv's checks in its order: the header (08P01 when
/// the message ends early), dimensions (22P03 for a negative count, 54000 past
/// 6), flags (22P03), the element type (42804), the dimensions' product
/// (54000 past [`MAX_ARRAY_SIZE`], or for a negative length) and lower bounds
/// (54000 when `lower + length` overflows), then each element's length
/// (22P03 below -1 or past the message) and value (22P03 "improper binary
/// format in array element N" when the element's receive function leaves
/// bytes over). Bytes left after the last element are 22P03 "incorrect binary
/// data format" (the caller names the parameter). Nothing is allocated
/// before the data is there to fill it.
pub fn recv(elem: Type, b: &[u8]) -> Result<Value> {
    let short = || SqlError::new(b"08P01", "insufficient data left in message");
    let mut pos = 0;
    let i32_at = |pos: &mut usize| -> Result<i32> {
        let v = b.get(*pos..*pos + 4).ok_or_else(short)?;
        *pos += 4;
        Ok(i32::from_be_bytes([v[0], v[1], v[2], v[3]]))
    };
    let ndim = i32_at(&mut pos)?;
    let flags = i32_at(&mut pos)?;
    let oid = i32_at(&mut pos)? as u32;
    if ndim < 0 {
        return Err(SqlError::new(b"22P03", format!("invalid number of dimensions: {ndim}")));
    }
    if ndim > MAX_DIM {
        return Err(SqlError::new(b"54000", format!("number of array dimensions ({ndim}) exceeds the maximum allowed ({MAX_DIM})")));
    }
    if flags != 0 && flags != 1 {
        return Err(SqlError::new(b"22P03", "invalid array flags"));
    }
    if oid != elem.oid() {
        let name = Type::from_oid(oid).map_or_else(|| "???".to_string(), |t| t.sql_name().to_string());
        return Err(SqlError::new(
            b"42804",
            format!("binary data has array element type {oid} ({name}) instead of expected {} ({})", elem.oid(), elem.sql_name()),
        ));
    }
    let mut dims = Vec::with_capacity(ndim as usize);
    for _ in 0..ndim {
        let (len, lower) = (i32_at(&mut pos)?, i32_at(&mut pos)?);
        dims.push((len, lower));
    }
    let mut n: usize = 1;
    for &(len, _) in &dims {
        n = usize::try_from(len).ok().and_then(|l| n.checked_mul(l)).filter(|&n| n <= MAX_ARRAY_SIZE).ok_or_else(too_many_elements)?;
    }
    for &(len, lower) in &dims {
        if lower.checked_add(len).is_none() {
            return Err(SqlError::new(b"54000", format!("array lower bound is too large: {lower}")));
        }
    }
    if ndim > 1 {
        return Err(SqlError::not_supported("multidimensional arrays"));
    }
    let (n, lower) = match dims.first() {
        Some(&(_, lower)) => (n, lower),
        None => (0, 1),
    };
    // Each element takes at least its 4-byte length word.
    let mut items = Vec::with_capacity(n.min((b.len() - pos) / 4));
    for i in 0..n {
        let len = i32_at(&mut pos)?;
        if len == -1 {
            items.push(Value::Null);
            continue;
        }
        if len < -1 || len as usize > b.len() - pos {
            return Err(SqlError::new(b"22P03", "insufficient data left in message"));
        }
        let d = &b[pos..pos + len as usize];
        pos += len as usize;
        items.push(types::recv(elem, d).map_err(|e| {
            if e.code == *b"22P03" && e.message == "incorrect binary data format" {
                SqlError::new(b"22P03", format!("improper binary format in array element {}", i + 1))
            } else {
                e
            }
        })?);
    }
    if pos != b.len() {
        return Err(SqlError::new(b"22P03", "incorrect binary data format"));
    }
    Ok(Value::Array(Box::new(Array { elem, lower, items, vector: false, cache: ArrayCache::default() })))
}

/// int2vectorin / oidvectorin: the elements separated by white space, each read
/// by the element type's input function (so its error texts), lower bound 0.
pub fn vector_input(elem: Type, s: &str) -> Result<Value> {
    let items = s.split_ascii_whitespace().map(|t| types::input(elem, t, -1)).collect::<Result<Vec<_>>>()?;
    Ok(Value::Array(Box::new(Array::vector(elem, items))))
}

/// int2vectorrecv / oidvectorrecv: array_recv's format, one dimension with
/// lower bound 0 and no NULLs (else 22P03 "invalid int2vector data"). As in
/// PostgreSQL, an empty one is refused (array_recv makes it dimensionless),
/// though [`send`] writes it with its one dimension of length 0.
pub fn vector_recv(elem: Type, b: &[u8]) -> Result<Value> {
    let vector_name = if elem == Type::Int2 { "int2vector" } else { "oidvector" };
    match recv(elem, b)? {
        Value::Array(a) if a.lower == 0 && !a.items.is_empty() && !a.items.iter().any(Value::is_null) => {
            Ok(Value::Array(Box::new(Array::vector(elem, a.items))))
        }
        _ => Err(SqlError::new(b"22P03", format!("invalid {vector_name} data"))),
    }
}

/// A cast between array types, element by element.
pub fn cast(a: &Array, to_elem: Type, typmod: i32, explicit: bool) -> Result<Value> {
    let items = a.items.iter().map(|v| types::cast(v.clone(), a.elem, to_elem, typmod, explicit)).collect::<Result<Vec<_>>>()?;
    Ok(Value::Array(Box::new(Array { elem: to_elem, lower: a.lower, items, vector: false, cache: ArrayCache::default() })))
}

/// btarraycmp: element by element (NULL after every value), then the shorter first.
pub fn compare(a: &Array, b: &Array) -> Ordering {
    for (x, y) in a.items.iter().zip(&b.items) {
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => crate::types::compare(x, y),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    a.items.len().cmp(&b.items.len()).then(a.lower.cmp(&b.lower))
}

/// Array functions and operators, evaluated by [`call`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrayFunc {
    /// `ARRAY[a, b, ...]`.
    Construct,
    /// `a[i]`.
    Subscript,
    /// `a[lo:hi]`, either bound may be omitted (`lo`/`hi`: whether it is an argument).
    Slice { lo: bool, hi: bool },
    /// `x op ANY (a)` / `x op ALL (a)`.
    AnyAll { op: CmpOp, all: bool },
    /// array || array.
    Cat,
    /// array || element.
    Append,
    /// element || array.
    Prepend,
    Length,
    Upper,
    Lower,
    Cardinality,
    Position,
    /// array_to_string(a, delim [, null_string]).
    ToString,
    /// string_to_array(s, delim [, null_string]).
    FromString,
    /// array_ndims(a).
    Ndims,
    /// array_dims(a).
    Dims,
}

fn arr(v: &Value) -> Option<&Array> {
    match v {
        Value::Array(a) => Some(a),
        _ => None,
    }
}

fn text(v: &Value) -> Option<&str> {
    match v {
        Value::Text(s) => Some(s),
        _ => None,
    }
}

fn cmp_holds(op: CmpOp, o: Ordering) -> bool {
    op.holds(o)
}

/// Evaluates an array function; `ty` is its result type.
pub fn call(f: ArrayFunc, vals: &[Value], ty: Type) -> Result<Value> {
    let elem_of = |t: Type| match t {
        Type::Array(e) => *e,
        t => t,
    };
    let dim_ok = |v: &Value| matches!(v, Value::Int4(1));
    Ok(match f {
        ArrayFunc::Construct => Value::Array(Box::new(Array::new(elem_of(ty), vals.to_vec()))),
        ArrayFunc::Subscript => match (arr(&vals[0]), vals[1].as_i64()) {
            (Some(a), Some(i)) => {
                let k = i - a.lower as i64;
                if k >= 0 && (k as usize) < a.items.len() {
                    a.items[k as usize].clone()
                } else {
                    Value::Null
                }
            }
            _ => Value::Null,
        },
        ArrayFunc::Slice { lo, hi } => {
            let Some(a) = arr(&vals[0]) else { return Ok(Value::Null) };
            let mut k = 1;
            let first = a.lower as i64;
            let last = a.lower as i64 + a.items.len() as i64 - 1;
            let l = if lo {
                k += 1;
                match vals[k - 1].as_i64() {
                    Some(v) => v,
                    None => return Ok(Value::Null),
                }
            } else {
                first
            };
            let h = if hi {
                match vals[k].as_i64() {
                    Some(v) => v,
                    None => return Ok(Value::Null),
                }
            } else {
                last
            };
            let (l, h) = (l.max(first), h.min(last));
            let items = if l > h { Vec::new() } else { a.items[(l - first) as usize..=(h - first) as usize].to_vec() };
            Value::Array(Box::new(Array::new(a.elem, items)))
        }
        ArrayFunc::AnyAll { op, all } => {
            let Some(a) = arr(&vals[1]) else { return Ok(Value::Null) };
            if a.items.is_empty() {
                return Ok(Value::Bool(all));
            }
            if vals[0].is_null() {
                return Ok(Value::Null);
            }
            let mut saw_null = false;
            for v in &a.items {
                if v.is_null() {
                    saw_null = true;
                    continue;
                }
                let holds = cmp_holds(op, crate::types::compare(&vals[0], v));
                if holds != all {
                    return Ok(Value::Bool(holds));
                }
            }
            if saw_null { Value::Null } else { Value::Bool(all) }
        }
        ArrayFunc::Cat => match (arr(&vals[0]), arr(&vals[1])) {
            (Some(a), Some(b)) => {
                if a.items.is_empty() {
                    return Ok(vals[1].clone());
                }
                let mut items = a.items.clone();
                items.extend(b.items.iter().cloned());
                Value::Array(Box::new(Array { elem: a.elem, lower: a.lower, items, vector: false, cache: ArrayCache::default() }))
            }
            (Some(_), None) => vals[0].clone(),
            (None, Some(_)) => vals[1].clone(),
            _ => Value::Null,
        },
        ArrayFunc::Append => match arr(&vals[0]) {
            Some(a) => {
                let mut a = a.clone();
                a.items.push(vals[1].clone());
                Value::Array(Box::new(a))
            }
            None => Value::Array(Box::new(Array::new(elem_of(ty), vec![vals[1].clone()]))),
        },
        ArrayFunc::Prepend => match arr(&vals[1]) {
            Some(a) => {
                let mut a = a.clone();
                a.items.insert(0, vals[0].clone());
                Value::Array(Box::new(a))
            }
            None => Value::Array(Box::new(Array::new(elem_of(ty), vec![vals[0].clone()]))),
        },
        ArrayFunc::Length | ArrayFunc::Upper | ArrayFunc::Lower => match arr(&vals[0]) {
            Some(a) if !a.items.is_empty() && dim_ok(&vals[1]) => Value::Int4(match f {
                ArrayFunc::Length => a.items.len() as i32,
                ArrayFunc::Lower => a.lower,
                _ => a.lower + a.items.len() as i32 - 1,
            }),
            _ => Value::Null,
        },
        ArrayFunc::Cardinality => match arr(&vals[0]) {
            Some(a) => Value::Int4(a.items.len() as i32),
            None => Value::Null,
        },
        ArrayFunc::Ndims => match arr(&vals[0]) {
            Some(a) if !a.items.is_empty() => Value::Int4(1),
            _ => Value::Null,
        },
        ArrayFunc::Dims => match arr(&vals[0]) {
            Some(a) if !a.items.is_empty() => Value::Text(format!("[{}:{}]", a.lower, a.lower as i64 + a.items.len() as i64 - 1)),
            _ => Value::Null,
        },
        ArrayFunc::Position => {
            let Some(a) = arr(&vals[0]) else { return Ok(Value::Null) };
            for (k, v) in a.items.iter().enumerate() {
                let same = match (v.is_null(), vals[1].is_null()) {
                    (true, true) => true,
                    (false, false) => crate::types::compare(v, &vals[1]) == Ordering::Equal,
                    _ => false,
                };
                if same {
                    return Ok(Value::Int4(a.lower + k as i32));
                }
            }
            Value::Null
        }
        ArrayFunc::ToString => {
            let (Some(a), Some(d)) = (arr(&vals[0]), text(&vals[1])) else { return Ok(Value::Null) };
            let null_text = vals.get(2).and_then(text);
            let mut parts = Vec::new();
            for v in &a.items {
                match types::output(v) {
                    Some(t) => parts.push(t),
                    None => {
                        if let Some(n) = null_text {
                            parts.push(n.to_string());
                        }
                    }
                }
            }
            Value::Text(parts.join(d))
        }
        ArrayFunc::FromString => {
            let Some(s) = text(&vals[0]) else { return Ok(Value::Null) };
            let null_text = vals.get(2).and_then(text);
            let parts: Vec<String> = if s.is_empty() {
                Vec::new()
            } else {
                match text(&vals[1]) {
                    None => s.chars().map(|c| c.to_string()).collect(),
                    Some("") => vec![s.to_string()],
                    Some(d) => s.split(d).map(str::to_string).collect(),
                }
            };
            let items = parts.into_iter().map(|p| if Some(p.as_str()) == null_text { Value::Null } else { Value::Text(p) }).collect();
            Value::Array(Box::new(Array::new(Type::Text, items)))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(s: &str) -> Result<Value> {
        input(Type::Int4, s, -1)
    }

    #[test]
    fn text_io_round_trips_and_quotes() {
        let v = ints(" { 1 , 2,NULL } ").unwrap();
        let Value::Array(a) = &v else { panic!() };
        assert_eq!(a.items, vec![Value::Int4(1), Value::Int4(2), Value::Null]);
        assert_eq!(output(a), "{1,2,NULL}");
        let t = input(Type::Text, r#"{NULL,"NULL","a b","","q\"",x\,y}"#, -1).unwrap();
        let Value::Array(t) = t else { panic!() };
        assert_eq!(output(&t), r#"{NULL,"NULL","a b","","q\"","x,y"}"#);
        let Value::Array(e) = ints("{}").unwrap() else { panic!() };
        assert_eq!(output(&e), "{}");
        let Value::Array(d) = ints("[0:1]={1,2}").unwrap() else { panic!() };
        assert_eq!((d.lower, output(&d).as_str()), (0, "[0:1]={1,2}"));
    }

    #[test]
    fn malformed_literals() {
        let e = ints("x").unwrap_err();
        assert_eq!((e.sqlstate(), e.message.as_str()), ("22P02", "malformed array literal: \"x\""));
        assert_eq!(e.detail.as_deref(), Some("Array value must start with \"{\" or dimension information."));
        assert_eq!(ints("{1,2").unwrap_err().detail.as_deref(), Some("Unexpected end of input."));
        assert_eq!(ints("{1,{2}}").unwrap_err().detail.as_deref(), Some("Unexpected \"{\" character."));
        assert_eq!(ints("{a}").unwrap_err().message, "invalid input syntax for type integer: \"a\"");
        assert_eq!(ints("{{1},{2}}").unwrap_err().sqlstate(), "0A000");
    }

    #[test]
    fn binary_round_trip() {
        let v = input(Type::Text, "{a,NULL,c}", -1).unwrap();
        let Value::Array(a) = &v else { panic!() };
        let b = send(a);
        assert_eq!(&b[..12], &[0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 25]);
        assert_eq!(recv(Type::Text, &b).unwrap(), v);
        assert_eq!(recv(Type::Int4, &b).unwrap_err().sqlstate(), "42804");
        assert_eq!(recv(Type::Text, &b[..b.len() - 1]).unwrap_err().sqlstate(), "22P03");
    }

    #[test]
    fn functions() {
        let a = ints("{1,2,NULL,2}").unwrap();
        let i4 = Type::Int4;
        assert_eq!(call(ArrayFunc::Subscript, &[a.clone(), Value::Int4(2)], i4).unwrap(), Value::Int4(2));
        assert_eq!(call(ArrayFunc::Subscript, &[a.clone(), Value::Int4(9)], i4).unwrap(), Value::Null);
        let any = ArrayFunc::AnyAll { op: CmpOp::Eq, all: false };
        assert_eq!(call(any, &[Value::Int4(2), a.clone()], Type::Bool).unwrap(), Value::Bool(true));
        assert_eq!(call(any, &[Value::Int4(5), a.clone()], Type::Bool).unwrap(), Value::Null);
        assert_eq!(call(ArrayFunc::Position, &[a.clone(), Value::Int4(2)], i4).unwrap(), Value::Int4(2));
        let s = call(ArrayFunc::ToString, &[a.clone(), Value::Text(",".into()), Value::Text("*".into())], Type::Text).unwrap();
        assert_eq!(s, Value::Text("1,2,*,2".into()));
        assert_eq!(call(ArrayFunc::Cardinality, &[a], i4).unwrap(), Value::Int4(4));
    }
}
