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

use ferrogres_datum::errors::{Result, SqlError};
use crate::exec::compare_key;
use crate::plan::{AggKind, Expr};
use ferrogres_datum::types::Value;
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

/// percentile_cont, percentile_disc and mode: computed from all the sorted
/// values at once ([`ordered_set`]), not by a transition per row.
pub(crate) fn is_ordered_set(k: AggKind) -> bool {
    matches!(k, AggKind::PercentileCont | AggKind::PercentileDisc | AggKind::Mode)
}

/// An ordered-set aggregate's result from its group's (value, fraction)
/// pairs in WITHIN GROUP order; NULL values are skipped, as PostgreSQL does.
pub(crate) fn ordered_set(kind: AggKind, rows: impl Iterator<Item = (Value, Value)>) -> Result<Value> {
    let mut fraction = Value::Null;
    let mut vals = Vec::new();
    for (v, f) in rows {
        fraction = f;
        if !v.is_null() {
            vals.push(v);
        }
    }
    if vals.is_empty() {
        return Ok(Value::Null);
    }
    if kind == AggKind::Mode {
        // The longest run of equal values; the first such run wins a tie.
        let (mut best, mut best_n, mut i) = (0, 0, 0);
        while i < vals.len() {
            let mut j = i + 1;
            while j < vals.len() && crate::exec::compare(&vals[i], &vals[j]) == Ordering::Equal {
                j += 1;
            }
            if j - i > best_n {
                (best, best_n) = (i, j - i);
            }
            i = j;
        }
        return Ok(vals.swap_remove(best));
    }
    let p = match fraction {
        Value::Float8(p) => p,
        _ => return Ok(Value::Null),
    };
    if !(0.0..=1.0).contains(&p) {
        let shown = ferrogres_datum::types::output(&Value::Float8(p)).unwrap_or_default();
        return Err(SqlError::new(b"22003", format!("percentile value {shown} is not between 0 and 1")));
    }
    let n = vals.len();
    if kind == AggKind::PercentileDisc {
        // The first value whose cumulative position reaches the fraction.
        let k = ((p * n as f64).ceil() as usize).max(1) - 1;
        return Ok(vals.swap_remove(k.min(n - 1)));
    }
    let pos = p * (n - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    let f = |v: &Value| if let Value::Float8(x) = v { *x } else { 0.0 };
    let (a, b) = (f(&vals[lo]), f(&vals[hi]));
    Ok(Value::Float8(if lo == hi { a } else { a + (pos - lo as f64) * (b - a) }))
}

/// Whether json_agg puts a newline before `v` (PostgreSQL: arrays and composites).
fn structured(v: &Value) -> bool {
    matches!(v, Value::Array(_))
}

/// json_agg / jsonb_agg's transition: `acc` is the json text so far (NULL
/// before the first row), without the closing bracket.
/// `rows`: the values are whole rows (composites: a newline before each).
pub(crate) fn json_agg(acc: Value, v: &Value, rows: bool) -> Result<Value> {
    let mut s = match acc {
        Value::Text(s) => {
            let mut s = s;
            s.push_str(", ");
            if structured(v) || rows && !v.is_null() {
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
    ferrogres_datum::json::quote(&mut s, &key);
    s.push_str(" : ");
    crate::functions::json::value_to_json_text(v, &mut s)?;
    Ok(Value::Text(s))
}

/// The result of a JSON aggregate from its text so far (NULL without rows).
pub(crate) fn json_final(acc: Value, object: bool, jsonb: bool) -> Result<Value> {
    let Value::Text(mut s) = acc else { return Ok(Value::Null) };
    s.push_str(if object { " }" } else { "]" });
    Ok(if jsonb { Value::Jsonb(ferrogres_datum::json::jsonb_in(&s)?) } else { Value::Json(s) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_agg_layout() {
        let mut acc = Value::Null;
        for v in [Value::Int4(1), Value::Null, Value::Text("a\"b".into())] {
            acc = json_agg(acc, &v, false).unwrap();
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
    fn percentiles_and_mode() {
        let rows = |vals: &[Option<f64>], p: f64| -> Vec<(Value, Value)> {
            vals.iter().map(|v| (v.map_or(Value::Null, Value::Float8), Value::Float8(p))).collect()
        };
        let r = ordered_set(AggKind::PercentileCont, rows(&[Some(3.0), None, Some(1.5)], 0.25).into_iter()).unwrap();
        assert_eq!(r, Value::Float8(2.625));
        let r = ordered_set(AggKind::PercentileDisc, rows(&[Some(1.0), Some(2.0), Some(4.0)], 0.5).into_iter()).unwrap();
        assert_eq!(r, Value::Float8(2.0));
        let r = ordered_set(AggKind::PercentileDisc, rows(&[Some(1.0), Some(2.0)], 0.0).into_iter()).unwrap();
        assert_eq!(r, Value::Float8(1.0));
        let r = ordered_set(AggKind::Mode, rows(&[Some(1.0), Some(2.0), Some(2.0), Some(3.0), Some(3.0)], 0.0).into_iter()).unwrap();
        assert_eq!(r, Value::Float8(2.0));
        let e = ordered_set(AggKind::PercentileCont, rows(&[Some(1.0)], 1.5).into_iter()).unwrap_err();
        assert_eq!(e.sqlstate(), "22003");
        assert_eq!(ordered_set(AggKind::PercentileCont, rows(&[None], 0.5).into_iter()).unwrap(), Value::Null);
    }

    #[test]
    fn buffer_sorts_stably() {
        let keys = [AggSortKey { expr: Expr::Column(0, ferrogres_datum::types::Type::Int4), desc: true, nulls_first: false }];
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
