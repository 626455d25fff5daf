//! ORDER BY inside aggregate calls (`string_agg(x, ',' ORDER BY y DESC)`,
//! `array_agg(DISTINCT x ORDER BY x)`), and the JSON aggregates json_agg,
//! jsonb_agg, json_object_agg and jsonb_object_agg.
//!
//! An ordered aggregate does not advance its state row by row: each row that
//! passes FILTER leaves its argument values and its sort key values in a
//! buffer ([`Buffer`]); when the group ends the buffer is sorted (stably, so
//! rows with equal keys keep their input order) and replayed through the
//! plain transition ([`crate::grouping`]'s `AggState`), DISTINCT included.
//! PostgreSQL sorts the same way (a tuplesort per aggregate and group).
//!
//! Analysis (`analyze::agg_order`) enforces PostgreSQL's rule that with
//! DISTINCT every ORDER BY expression is one of the arguments (42P10), so
//! deduplicating in sorted order keeps the same values as deduplicating first.
//!
//! The JSON aggregates keep their result as json text while they run:
//! json_agg writes PostgreSQL's layout (`[1, 2]`, and `,` + newline + space
//! before an array or a composite element that is not the first), jsonb_agg
//! and jsonb_object_agg convert that text to jsonb at the end (which sorts
//! object keys and keeps the last of duplicate keys, as jsonb does).

use crate::errors::{Result, SqlError};
use crate::exec::compare_key;
use crate::plan::Expr;
use crate::types::Value;
use std::cmp::Ordering;

/// One `ORDER BY` item of an aggregate call.
#[derive(Clone, Debug)]
pub struct AggSortKey {
    /// Over the aggregate's input row.
    pub expr: Expr,
    pub desc: bool,
    pub nulls_first: bool,
}

/// The rows an ordered aggregate has been given in one group: (sort key
/// values, argument, second argument).
#[derive(Clone, Debug, Default)]
pub(crate) struct Buffer(pub Vec<(Vec<Value>, Value, Value)>);

impl Buffer {
    /// The buffered arguments in the aggregate's ORDER BY order.
    pub(crate) fn sorted(mut self, keys: &[AggSortKey]) -> impl Iterator<Item = (Value, Value)> {
        self.0.sort_by(|a, b| {
            for (i, k) in keys.iter().enumerate() {
                let o = compare_key(&a.0[i], &b.0[i], k.desc, k.nulls_first);
                if o != Ordering::Equal {
                    return o;
                }
            }
            Ordering::Equal
        });
        self.0.into_iter().map(|(_, v, v2)| (v, v2))
    }
}

/// Whether json_agg puts a newline before `v` (PostgreSQL: arrays and composites).
fn structured(v: &Value) -> bool {
    matches!(v, Value::Array(_))
}

/// json_agg / jsonb_agg's transition: `acc` is the json text so far (NULL
/// before the first row), without the closing bracket.
pub(crate) fn json_agg(acc: Value, v: &Value) -> Result<Value> {
    let mut s = match acc {
        Value::Text(s) => {
            let mut s = s;
            s.push_str(", ");
            if structured(v) {
                s.push_str("\n ");
            }
            s
        }
        _ => String::from("["),
    };
    crate::functions::json::value_to_json_text(v, &mut s)?;
    Ok(Value::Text(s))
}

/// json_object_agg / jsonb_object_agg's transition (`acc` as for [`json_agg`]).
pub(crate) fn json_object_agg(acc: Value, k: &Value, v: &Value) -> Result<Value> {
    if k.is_null() {
        return Err(SqlError::new(b"22023", "field name must not be null"));
    }
    let key = crate::functions::json::key_text(k, 1)?;
    let mut s = match acc {
        Value::Text(mut s) => {
            s.push_str(", ");
            s
        }
        _ => String::from("{ "),
    };
    crate::json::quote(&mut s, &key);
    s.push_str(" : ");
    crate::functions::json::value_to_json_text(v, &mut s)?;
    Ok(Value::Text(s))
}

/// The result of a JSON aggregate from its text so far (NULL without rows).
pub(crate) fn json_final(acc: Value, object: bool, jsonb: bool) -> Result<Value> {
    let Value::Text(mut s) = acc else { return Ok(Value::Null) };
    s.push_str(if object { " }" } else { "]" });
    Ok(if jsonb { Value::Jsonb(crate::json::jsonb_in(&s)?) } else { Value::Json(s) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_agg_layout() {
        let mut acc = Value::Null;
        for v in [Value::Int4(1), Value::Null, Value::Text("a\"b".into())] {
            acc = json_agg(acc, &v).unwrap();
        }
        assert_eq!(json_final(acc.clone(), false, false).unwrap(), Value::Json("[1, null, \"a\\\"b\"]".into()));
        assert_eq!(json_final(acc, false, true).unwrap(), Value::Jsonb("[1, null, \"a\\\"b\"]".into()));
        assert_eq!(json_final(Value::Null, false, false).unwrap(), Value::Null);
    }

    #[test]
    fn object_agg_keys() {
        let acc = json_object_agg(Value::Null, &Value::Text("b".into()), &Value::Int4(1)).unwrap();
        let acc = json_object_agg(acc, &Value::Text("a".into()), &Value::Int4(2)).unwrap();
        let acc = json_object_agg(acc, &Value::Text("b".into()), &Value::Int4(3)).unwrap();
        assert_eq!(json_final(acc.clone(), true, false).unwrap(), Value::Json("{ \"b\" : 1, \"a\" : 2, \"b\" : 3 }".into()));
        assert_eq!(json_final(acc, true, true).unwrap(), Value::Jsonb("{\"a\": 2, \"b\": 3}".into()));
        let e = json_object_agg(Value::Null, &Value::Null, &Value::Int4(1)).unwrap_err();
        assert_eq!(e.sqlstate(), "22023");
    }

    #[test]
    fn buffer_sorts_stably() {
        let keys = [AggSortKey { expr: Expr::Column(0, crate::types::Type::Int4), desc: true, nulls_first: false }];
        let b = Buffer(vec![
            (vec![Value::Int4(1)], Value::Int4(10), Value::Null),
            (vec![Value::Null], Value::Int4(20), Value::Null),
            (vec![Value::Int4(2)], Value::Int4(30), Value::Null),
            (vec![Value::Int4(1)], Value::Int4(40), Value::Null),
        ]);
        let got: Vec<Value> = b.sorted(&keys).map(|x| x.0).collect();
        assert_eq!(got, vec![Value::Int4(30), Value::Int4(10), Value::Int4(40), Value::Int4(20)]);
    }
}
