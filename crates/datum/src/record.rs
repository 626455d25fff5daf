//! Anonymous records (`record`, OID 2249): the values of functions that
//! return a row, `Value::Record` (a [`RecordValue`]), typed `Type::Record(fields)` with
//! their field names and types known when the call is analyzed (so `(f(x)).n`
//! resolves then). Composite types of their own (CREATE TYPE ... AS) are not
//! here; a record cannot be stored in a table (PostgreSQL: 0A000 "column ...
//! has pseudo-type record").
//!
//! - Text output: record_out's `(a,b)`: a NULL field is empty; a field that is
//!   empty or holds `"`, `\`, `(`, `)`, `,` or white space is double-quoted,
//!   with `"` and `\` doubled inside.
//! - Text input: PostgreSQL's 0A000 "input of anonymous composite types is not
//!   implemented".
//! - Binary output: record_send's field count, then each field's type OID,
//!   length (-1 for NULL) and binary value.
//! - Order: field by field, a NULL field after any value (record_cmp).
//!
//! The only record-returning function is `information_schema._pg_expandarray
//! (anyarray)`: one row `(x, n)` per element, `x` the element, `n` its
//! position from 1 (pgjdbc's getPrimaryKeys and getIndexInfo read it).

use crate::errors::SqlError;
use crate::types::{Type, Value};
use std::cmp::Ordering;

pub const RECORD_OID: u32 = 2249;

/// A record type's fields: (name, type).
pub type FieldList = &'static [(&'static str, Type)];

/// A record type's fields, as `Type::Record` holds them: a thin reference to a
/// static list, so that `Type` stays two words (it is in every expression node).
pub type Fields = &'static FieldList;

/// A record: its fields' names and types, and their values.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordValue {
    pub fields: Fields,
    pub values: Vec<Value>,
}

/// `_pg_expandarray`'s result fields for each element type that has arrays
/// (`array::ELEM_TYPES`, in its order): (x elem, n int4).
static EXPAND_FIELDS: [[(&str, Type); 2]; crate::array::N_ELEMS] = {
    let mut out = [[("x", Type::Bool), ("n", Type::Int4)]; crate::array::N_ELEMS];
    let mut i = 0;
    while i < crate::array::N_ELEMS {
        out[i][0].1 = crate::array::ELEM_TYPES[i];
        i += 1;
    }
    out
};

/// [`EXPAND_FIELDS`] as field lists.
static EXPAND: [FieldList; crate::array::N_ELEMS] = {
    let mut out: [FieldList; crate::array::N_ELEMS] = [&[]; crate::array::N_ELEMS];
    let mut i = 0;
    while i < crate::array::N_ELEMS {
        out[i] = &EXPAND_FIELDS[i];
        i += 1;
    }
    out
};

/// The fields of `_pg_expandarray(elem[])`'s rows: (x elem, n int4).
pub fn expand_array_fields(elem: Type) -> Option<Fields> {
    EXPAND.iter().find(|f| f[0].1 == elem)
}

/// record_in.
pub fn input_error() -> SqlError {
    SqlError::new(b"0A000", "input of anonymous composite types is not implemented")
}

/// record_out.
pub fn output(fields: &[Value]) -> String {
    let mut out = String::from("(");
    for (i, v) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let Some(s) = crate::types::output(v) else { continue };
        let quote = s.is_empty() || s.chars().any(|c| matches!(c, '"' | '\\' | '(' | ')' | ',') || c.is_ascii_whitespace());
        if !quote {
            out.push_str(&s);
            continue;
        }
        out.push('"');
        for c in s.chars() {
            if c == '"' || c == '\\' {
                out.push(c);
            }
            out.push(c);
        }
        out.push('"');
    }
    out.push(')');
    out
}

/// record_send: each field's type OID, length (-1 for NULL) and bytes.
pub fn send(r: &RecordValue) -> Vec<u8> {
    let mut out = (r.values.len() as i32).to_be_bytes().to_vec();
    for (i, v) in r.values.iter().enumerate() {
        let ty = r.fields.get(i).map_or(Type::Text, |f| f.1);
        out.extend_from_slice(&ty.oid().to_be_bytes());
        match crate::types::send(v) {
            Some(b) => {
                out.extend_from_slice(&(b.len() as i32).to_be_bytes());
                out.extend_from_slice(&b);
            }
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
    out
}

/// record_cmp.
pub fn compare(a: &[Value], b: &[Value]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
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
    a.len().cmp(&b.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_quotes_as_record_out() {
        let v = vec![Value::Int2(3), Value::Int4(1), Value::Null, Value::Text(String::new()), Value::Text("a b\"c".into())];
        assert_eq!(output(&v), r#"(3,1,,"","a b""c")"#);
    }

    #[test]
    fn expand_fields_follow_the_element() {
        let f = expand_array_fields(Type::Int2).unwrap();
        assert_eq!(f, &[("x", Type::Int2), ("n", Type::Int4)]);
        assert!(expand_array_fields(Type::Unknown).is_none());
    }
}
