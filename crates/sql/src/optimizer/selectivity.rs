//! Cardinality estimation (PostgreSQL's `utils/adt/selfuncs.c` and
//! `optimizer/path/clausesel.c`, written from their ideas): the fraction of a
//! relation's rows that pass a restriction, and the fraction of a cross
//! product that passes an equi-join clause, from the column statistics
//! ANALYZE stores ([`crate::stats::ColStats`]: null_frac, n_distinct, MCVs
//! and their frequencies, a histogram of the other values).
//!
//! Without statistics the answers are PostgreSQL's defaults:
//! [`DEFAULT_EQ_SEL`] for `=`, [`DEFAULT_INEQ_SEL`] for `<`/`>`,
//! [`DEFAULT_MATCH_SEL`] for LIKE, [`DEFAULT_UNK_SEL`] for anything else.
//! Every result is clamped to `0 <= sel <= 1`.

use crate::plan::{CmpOp, Expr, Func};
use ferrogres_datum::array::{Array, ArrayFunc};
use crate::stats::{ColStats, TableStats};
use ferrogres_datum::types::Value;
use std::borrow::Cow;
use std::cmp::Ordering;

/// `col = const` without statistics (PostgreSQL's DEFAULT_EQ_SEL).
pub const DEFAULT_EQ_SEL: f64 = 0.005;
/// `col < const` without statistics (DEFAULT_INEQ_SEL).
pub const DEFAULT_INEQ_SEL: f64 = 1.0 / 3.0;
/// `col BETWEEN a AND b` without statistics (DEFAULT_RANGE_INEQ_SEL).
pub const DEFAULT_RANGE_INEQ_SEL: f64 = 0.005;
/// LIKE without a usable prefix (DEFAULT_MATCH_SEL).
pub const DEFAULT_MATCH_SEL: f64 = 0.005;
/// A clause the estimator does not understand (DEFAULT_UNK_SEL for booleans
/// PostgreSQL cannot analyze: 0.005 for IS NULL, 1/3 for generic ones).
pub const DEFAULT_UNK_SEL: f64 = 1.0 / 3.0;
/// `col IS NULL` without statistics (DEFAULT_UNK_SEL of nulltestsel).
pub const DEFAULT_NULL_SEL: f64 = 0.005;
/// Each fixed character after a LIKE prefix (FIXED_CHAR_SEL).
const FIXED_CHAR_SEL: f64 = 0.20;
/// Each `_` after a LIKE prefix (ANY_CHAR_SEL).
const ANY_CHAR_SEL: f64 = 0.9;
/// Each `%` after the first wildcard of a LIKE pattern (FULL_WILDCARD_SEL).
const FULL_WILDCARD_SEL: f64 = 5.0;

/// The number of distinct non-null values of a column: `n_distinct` when
/// positive, else `-n_distinct * tuples` (a fraction of the rows), at least 1.
pub fn distinct_values(s: &ColStats, tuples: f64) -> f64 {
    let nd = if s.n_distinct < 0.0 { -s.n_distinct * tuples } else { s.n_distinct };
    nd.max(1.0)
}

/// A value as a point on a line, for interpolating inside a histogram
/// bucket (PostgreSQL's convert_to_scalar): numbers, dates and times.
fn scalar(v: &Value) -> Option<f64> {
    Some(match v {
        Value::Int2(_) | Value::Int4(_) | Value::Int8(_) | Value::Oid(_) => v.as_i64()? as f64,
        Value::Float8(f) => *f,
        Value::Float4(f) => *f as f64,
        Value::Numeric(n) => n.to_f64()?,
        // A date as the timestamp of its midnight, so that a date column's
        // histogram and a timestamp bound (`date_col < '1995-01-01
        // 00:00'::timestamp`) are on one line; within dates only the ratio counts.
        Value::Date(d) => (*d as i64 * ferrogres_datum::datetime::USECS_PER_DAY) as f64,
        Value::Time(t) | Value::Timestamp(t) | Value::Timestamptz(t) => *t as f64,
        _ => return None,
    })
}

fn cmp(a: &Value, b: &Value) -> Ordering {
    // date against timestamp (PostgreSQL's cross-type date_lt_timestamp & co.):
    // the date as its midnight.
    let midnight = |d: i32| d as i64 * ferrogres_datum::datetime::USECS_PER_DAY;
    match (a, b) {
        (Value::Date(d), Value::Timestamp(t)) => midnight(*d).cmp(t),
        (Value::Timestamp(t), Value::Date(d)) => t.cmp(&midnight(*d)),
        _ => crate::exec::compare(a, b),
    }
}

/// A column as a clause reads it: its number, and whether through a
/// `character(n)` to text cast ([`est_column_of`]).
type SeenColumn = (usize, bool);

/// The column a clause side reads, for estimation: [`crate::index::column_of`]
/// and also through a cast of a date to timestamp (order-preserving; its
/// statistics are the date column's, compared with [`cmp`] across the types)
/// or of a `character(n)` to text or varchar. The flag says the latter: the
/// analyzer compares `character(n)` without its trailing blanks by casting
/// it to text (`l_returnflag = 'R'` is `(l_returnflag)::text = 'R'::text`),
/// so its statistics, which hold the padded values, are seen trimmed
/// ([`seen_stats`]).
fn est_column_of(e: &Expr) -> Option<SeenColumn> {
    use ferrogres_datum::types::Type;
    match e {
        Expr::Cast { arg, from: Type::Date, to: Type::Timestamp, .. } => est_column_of(arg),
        Expr::Cast { arg, from: Type::Bpchar, to: Type::Text | Type::Varchar, .. } => est_column_of(arg).map(|(c, _)| (c, true)),
        _ => crate::index::column_of(e).map(|c| (c, false)),
    }
}

/// A column's statistics as a clause sees them: as stored, or (`trimmed`:
/// read through `character(n)::text`) with the trailing blanks of its MCVs
/// and histogram bounds removed, as the cast removes them from each value.
/// The order and the frequencies are unchanged (blank-padded values of one
/// column compare as their trimmed forms).
fn seen_stats(stats: Option<&TableStats>, col: usize, trimmed: bool) -> Option<Cow<'_, ColStats>> {
    let s = col_stats(stats, col)?;
    if !trimmed {
        return Some(Cow::Borrowed(s));
    }
    let trim = |v: &Value| match v {
        Value::Text(t) => Value::Text(t.trim_end_matches(' ').to_string()),
        v => v.clone(),
    };
    Some(Cow::Owned(ColStats { mcv: s.mcv.iter().map(trim).collect(), hist: s.hist.iter().map(trim).collect(), ..s.clone() }))
}

/// `col = v` (v `None`: a value unknown at planning time, such as a
/// parameter or the other side of a join).
pub fn eq_sel(s: Option<&ColStats>, tuples: f64, v: Option<&Value>) -> f64 {
    let Some(s) = s else { return DEFAULT_EQ_SEL };
    let nd = distinct_values(s, tuples);
    let mcv_total: f64 = s.mcf.iter().sum();
    match v {
        Some(v) if v.is_null() => 0.0,
        Some(v) => match s.mcv.iter().position(|m| cmp(m, v) == Ordering::Equal) {
            Some(i) => s.mcf[i],
            None => {
                // The rest of the non-null rows, spread evenly over the
                // distinct values that are not MCVs; never more than the
                // least common MCV (the value would have been one).
                let rest = (nd - s.mcv.len() as f64).max(1.0);
                let sel = ((1.0 - mcv_total - s.null_frac) / rest).max(0.0);
                match s.mcf.last() {
                    Some(&least) if sel > least => least,
                    _ => sel,
                }
            }
        },
        None => (1.0 - s.null_frac) / nd,
    }
}

/// `col < v` (`lt`), `col <= v`, `col > v`, `col >= v`: the MCVs that
/// satisfy it exactly, plus the histogram's share of the other rows, found
/// by linear interpolation inside the bucket holding `v` where the type is
/// numeric (PostgreSQL's ineq_histogram_selectivity), else at the bucket's
/// middle.
pub fn ineq_sel(s: Option<&ColStats>, op: CmpOp, v: Option<&Value>) -> f64 {
    let (Some(s), Some(v)) = (s, v) else { return DEFAULT_INEQ_SEL };
    if v.is_null() {
        return 0.0;
    }
    let holds = |o: Ordering| match op {
        CmpOp::Lt => o.is_lt(),
        CmpOp::Le => o.is_le(),
        CmpOp::Gt => o.is_gt(),
        _ => o.is_ge(),
    };
    let mcv_total: f64 = s.mcf.iter().sum();
    let mut sel: f64 = s.mcv.iter().zip(&s.mcf).filter(|(m, _)| holds(cmp(m, v))).map(|(_, f)| *f).sum();
    let h = &s.hist;
    if h.len() >= 2 {
        let less = histogram_fraction_below(h, v);
        let frac = if matches!(op, CmpOp::Lt | CmpOp::Le) { less } else { 1.0 - less };
        sel += frac * (1.0 - mcv_total - s.null_frac);
    } else if s.mcv.is_empty() {
        return DEFAULT_INEQ_SEL;
    }
    sel.clamp(0.0, 1.0)
}

/// The fraction of the histogram's population below `v` (0 ..= 1).
pub fn histogram_fraction_below(h: &[Value], v: &Value) -> f64 {
    let n = h.len();
    if cmp(v, &h[0]).is_le() {
        return 0.0;
    }
    if cmp(v, &h[n - 1]).is_ge() {
        return 1.0;
    }
    // The bucket [h[i], h[i+1]) that holds v.
    let i = h.partition_point(|b| cmp(b, v).is_le()) - 1;
    let within = match (scalar(&h[i]), scalar(&h[i + 1]), scalar(v)) {
        (Some(lo), Some(hi), Some(x)) if hi > lo => ((x - lo) / (hi - lo)).clamp(0.0, 1.0),
        _ => 0.5,
    };
    (i as f64 + within) / (n - 1) as f64
}

/// `col LIKE pattern` (case-sensitive): an exact pattern is an equality.
/// Otherwise the heuristic is the range `[prefix, prefix+1)` of a fixed
/// prefix (1 without one) times the selectivity of the rest
/// ([`rest_selectivity`]: PostgreSQL's prefix_selectivity and
/// like_selectivity), combined with the pattern's matches among the
/// column's histogram bounds and MCVs ([`with_statistics`]). No statistics:
/// the heuristic without a prefix, DEFAULT_MATCH_SEL with one.
pub fn like_sel(s: Option<&ColStats>, tuples: f64, pattern: &str) -> f64 {
    let mut prefix = String::new();
    let mut chars = pattern.chars().peekable();
    let mut exact = true;
    while let Some(c) = chars.next() {
        match c {
            '%' | '_' => {
                exact = false;
                break;
            }
            '\\' => match chars.next() {
                Some(n) => prefix.push(n),
                None => break,
            },
            c => prefix.push(c),
        }
    }
    if exact {
        return eq_sel(s, tuples, Some(&Value::Text(prefix)));
    }
    let rest: String = chars.collect();
    let rest_sel = rest_selectivity(&rest);
    if prefix.is_empty() {
        // No fixed prefix: the rest's selectivity alone (PostgreSQL's
        // prefix selectivity 1.0 times like_selectivity).
        return match s {
            Some(s) => with_statistics(s, pattern, rest_sel),
            None => rest_sel,
        };
    }
    let Some(s) = s else { return DEFAULT_MATCH_SEL };
    let heuristic = prefix_selectivity(s, tuples, prefix) * rest_sel;
    with_statistics(s, pattern, heuristic)
}

/// A pattern that is not an exact string, estimated as PostgreSQL's
/// patternsel does with statistics: the pattern is tried on the
/// histogram's bounds (but the first and last) and on the MCVs. With 100
/// bounds or more the histogram's share of matches is the estimate of the
/// rows outside the MCVs; from 10 to 99 it is blended with the `heuristic`
/// (prefix and wildcards) in proportion to the bounds' count; under 10
/// the heuristic alone. That estimate is kept within [0.0001, 0.9999],
/// scaled to the rows that are neither NULL nor an MCV, and the matching
/// MCVs' frequencies are added. TPC-H Q9's `p_name LIKE '%green%'`: the
/// heuristic alone (five fixed characters) gives 0.03 % of the parts, the
/// histogram ~5 %, as in PostgreSQL.
fn with_statistics(s: &ColStats, pattern: &str, heuristic: f64) -> f64 {
    let pat = Value::Text(pattern.to_string());
    let matches = |v: &Value| matches!(ferrogres_datum::like::like(v, &pat, None, false), Ok(Value::Bool(true)));
    let n = s.hist.len();
    let mut sel = if n >= 10 {
        let inner = &s.hist[1..n - 1];
        let share = inner.iter().filter(|v| matches(v)).count() as f64 / inner.len() as f64;
        let weight = (n as f64 / 100.0).min(1.0);
        share * weight + heuristic * (1.0 - weight)
    } else {
        heuristic
    };
    sel = sel.clamp(0.0001, 0.9999);
    let common: f64 = s.mcf.iter().sum();
    let mcv_matches: f64 = s.mcv.iter().zip(&s.mcf).filter(|(v, _)| matches(v)).map(|(_, f)| f).sum();
    (sel * (1.0 - s.null_frac - common) + mcv_matches).clamp(0.0, 1.0)
}

/// The fraction of rows that start with `prefix`: the histogram's range
/// from `prefix` to the smallest string after every string starting with
/// it, never less than an equality on the column (as PostgreSQL's
/// prefix_selectivity).
fn prefix_selectivity(s: &ColStats, tuples: f64, prefix: String) -> f64 {
    // The smallest string greater than every string starting with prefix.
    let mut upper: Vec<char> = prefix.chars().collect();
    let last = upper.pop().expect("a prefix");
    upper.push(char::from_u32(last as u32 + 1).unwrap_or(char::MAX));
    let upper: String = upper.into_iter().collect();
    let lo = ineq_sel(Some(s), CmpOp::Ge, Some(&Value::Text(prefix.clone())));
    let hi = ineq_sel(Some(s), CmpOp::Ge, Some(&Value::Text(upper)));
    let range = (lo - hi).max(0.0);
    // Never less than an equality on the column (as prefix_selectivity).
    range.max(eq_sel(Some(s), tuples, Some(&Value::Text(prefix))))
}

/// What follows a LIKE pattern's fixed prefix and its first wildcard, as
/// PostgreSQL's like_selectivity weighs it: leading wildcards skipped, then
/// each `%` x [`FULL_WILDCARD_SEL`], each `_` x [`ANY_CHAR_SEL`], each other
/// (or escaped) character x [`FIXED_CHAR_SEL`], capped at 1.
fn rest_selectivity(rest: &str) -> f64 {
    let mut sel = 1.0f64;
    let mut chars = rest.chars().skip_while(|c| *c == '%' || *c == '_');
    while let Some(c) = chars.next() {
        sel *= match c {
            '%' => FULL_WILDCARD_SEL,
            '_' => ANY_CHAR_SEL,
            '\\' => {
                if chars.next().is_none() {
                    break;
                }
                FIXED_CHAR_SEL
            }
            _ => FIXED_CHAR_SEL,
        };
    }
    sel.min(1.0)
}

/// The column a clause side reads, and the statistics for it.
fn col_stats(stats: Option<&TableStats>, col: usize) -> Option<&ColStats> {
    stats.and_then(|s| s.cols.get(col)).and_then(|c| c.as_ref())
}

/// A constant the planner can see: a literal, a bound parameter, or a
/// cast of one.
pub fn const_value(e: &Expr, params: &[Value]) -> Option<Value> {
    match e {
        Expr::Const(v, _) => Some(v.clone()),
        Expr::Param(i, _) => params.get(*i).cloned(),
        Expr::Cast { arg, from, to, typmod, explicit } => ferrogres_datum::types::cast(const_value(arg, params)?, *from, *to, *typmod, *explicit).ok(),
        _ => None,
    }
}


/// `col OP expr` or `expr OP col` with `expr` free of the row: the column
/// (with [`est_column_of`]'s flag), the operator as seen from the column,
/// and the other side.
fn column_compare(e: &Expr) -> Option<(SeenColumn, CmpOp, &Expr)> {
    let Expr::Compare { op, l, r } = e else { return None };
    match (est_column_of(l), est_column_of(r)) {
        (Some(c), _) if crate::index::row_free(r) => Some((c, *op, &**r)),
        (_, Some(c)) if crate::index::row_free(l) => Some((c, op.commuted(), &**l)),
        _ => None,
    }
}

/// `x op ANY (items)` / `x op ALL (items)` with the items known: each
/// `x op item` estimated alone, then combined as PostgreSQL's
/// scalararraysel does. ANY of equalities (an IN list) are disjoint events
/// and add up; ALL of inequalities (NOT IN) are their complements, `s1 +
/// s2 - 1`; either is used while it stays in [0, 1]. Otherwise the items
/// are taken as independent (ANY: `s1 + s2 - s1*s2`, ALL: `s1 * s2`). No
/// items: ALL is true, ANY false.
fn array_op_selectivity(stats: Option<&TableStats>, op: CmpOp, all: bool, x: &Expr, items: &Array, params: &[Value]) -> f64 {
    let (mut independent, mut disjoint) = if all { (1.0, 1.0) } else { (0.0, 0.0) };
    for v in &items.items {
        let item = Expr::Compare { op, l: Box::new(x.clone()), r: Box::new(Expr::Const(v.clone(), items.elem)) };
        let s = clause_selectivity(stats, &item, params);
        if all {
            independent *= s;
            disjoint += s - 1.0;
        } else {
            independent += s - independent * s;
            disjoint += s;
        }
    }
    let exclusive = if all { op == CmpOp::Ne } else { op == CmpOp::Eq };
    let s = if exclusive && (0.0..=1.0).contains(&disjoint) { disjoint } else { independent };
    s.clamp(0.0, 1.0)
}

/// The fraction of a relation's rows (statistics `stats`, none when never
/// analyzed) for which `e` is true. AND multiplies its conjuncts, except
/// that a `col > a` and a `col < b` on the same column are taken together
/// as a range (PostgreSQL's clauselist_selectivity: `lo + hi - 1`); OR is
/// `s1 + s2 - s1*s2`, except that equalities of one column with different
/// constants (an IN list) add up; NOT is `1 - s`.
pub fn clause_selectivity(stats: Option<&TableStats>, e: &Expr, params: &[Value]) -> f64 {
    let tuples = stats.map_or(1000.0, |s| s.tuples);
    let sel = match e {
        Expr::And(v) => return conjunction_selectivity(stats, v.iter(), params),
        Expr::Or(v) => {
            // An IN list: `col = c1 OR col = c2 ...` (disjoint equalities).
            let eqs: Option<Vec<(SeenColumn, Option<Value>)>> = v
                .iter()
                .map(|b| match column_compare(b) {
                    Some((c, CmpOp::Eq, other)) => Some((c, const_value(other, params))),
                    _ => None,
                })
                .collect();
            if let Some(eqs) = eqs.filter(|e| !e.is_empty() && e.windows(2).all(|w| w[0].0 == w[1].0)) {
                let s = seen_stats(stats, eqs[0].0 .0, eqs[0].0 .1);
                let sum: f64 = eqs.iter().map(|(_, v)| eq_sel(s.as_deref(), tuples, v.as_ref())).sum();
                if sum <= 1.0 {
                    return sum;
                }
            }
            let mut s = 0.0;
            for b in v {
                let b = clause_selectivity(stats, b, params);
                s = s + b - s * b;
            }
            s
        }
        Expr::Not(inner) => 1.0 - clause_selectivity(stats, inner, params),
        Expr::Func { func: Func::Array(ArrayFunc::AnyAll { op, all }), args, .. } if args.len() == 2 => {
            match const_value(&args[1], params) {
                Some(Value::Array(a)) => array_op_selectivity(stats, *op, *all, &args[0], &a, params),
                _ => DEFAULT_UNK_SEL,
            }
        }
        Expr::IsNull { arg, negated } => {
            let nf = est_column_of(arg).and_then(|(c, _)| col_stats(stats, c)).map(|c| c.null_frac);
            match (nf, negated) {
                (Some(nf), false) => nf,
                (Some(nf), true) => 1.0 - nf,
                (None, false) => DEFAULT_NULL_SEL,
                (None, true) => 1.0 - DEFAULT_NULL_SEL,
            }
        }
        Expr::Like { arg, pat, escape: None, ci: false } => match (est_column_of(arg), const_value(pat, params)) {
            (Some((c, trimmed)), Some(Value::Text(p))) => like_sel(seen_stats(stats, c, trimmed).as_deref(), tuples, &p),
            _ => DEFAULT_MATCH_SEL,
        },
        Expr::Like { .. } => DEFAULT_MATCH_SEL,
        Expr::Const(Value::Bool(b), _) => f64::from(u8::from(*b)),
        Expr::Const(Value::Null, _) => 0.0,
        Expr::Compare { op, .. } => match column_compare(e) {
            Some(((c, trimmed), op, other)) => {
                let s = seen_stats(stats, c, trimmed);
                let s = s.as_deref();
                let v = const_value(other, params);
                match op {
                    CmpOp::Eq => eq_sel(s, tuples, v.as_ref()),
                    CmpOp::Ne => match s {
                        Some(cs) => (1.0 - eq_sel(s, tuples, v.as_ref()) - cs.null_frac).max(0.0),
                        None => 1.0 - DEFAULT_EQ_SEL,
                    },
                    _ => ineq_sel(s, op, v.as_ref()),
                }
            }
            None if *op == CmpOp::Eq => DEFAULT_EQ_SEL,
            None if *op == CmpOp::Ne => 1.0 - DEFAULT_EQ_SEL,
            None => DEFAULT_INEQ_SEL,
        },
        _ => DEFAULT_UNK_SEL,
    };
    sel.clamp(0.0, 1.0)
}

/// The selectivity of the AND of `clauses` (see [`clause_selectivity`]).
pub fn conjunction_selectivity<'a>(stats: Option<&TableStats>, clauses: impl Iterator<Item = &'a Expr>, params: &[Value]) -> f64 {
    // Range pairs: per column, the selectivities of its `>` and `<` clauses.
    let mut ranges: Vec<(usize, Option<f64>, Option<f64>)> = Vec::new();
    let mut sel = 1.0;
    for c in clauses {
        if let Some(((col, _), op @ (CmpOp::Lt | CmpOp::Le | CmpOp::Gt | CmpOp::Ge), _)) = column_compare(c) {
            let s = clause_selectivity(stats, c, params);
            let at = match ranges.iter().position(|r| r.0 == col) {
                Some(i) => i,
                None => {
                    ranges.push((col, None, None));
                    ranges.len() - 1
                }
            };
            let slot = if matches!(op, CmpOp::Lt | CmpOp::Le) { &mut ranges[at].2 } else { &mut ranges[at].1 };
            // Two bounds on one side: the tighter one.
            *slot = Some(slot.map_or(s, |o: f64| o.min(s)));
            continue;
        }
        sel *= clause_selectivity(stats, c, params);
    }
    for (col, lo, hi) in ranges {
        sel *= match (lo, hi) {
            (Some(lo), Some(hi)) => {
                // Both bounds of one column: they overlap in lo + hi - 1.
                let null_frac = col_stats(stats, col).map_or(0.0, |c| c.null_frac);
                let both_default = lo == DEFAULT_INEQ_SEL && hi == DEFAULT_INEQ_SEL;
                let r = lo + hi - 1.0 + null_frac;
                if both_default {
                    DEFAULT_RANGE_INEQ_SEL
                } else if r <= 0.0 {
                    // Empty or tiny range: PostgreSQL takes a small number.
                    if r < -0.01 { 1e-10 } else { 1e-10f64.max(r) }
                } else {
                    r
                }
            }
            (Some(s), None) | (None, Some(s)) => s,
            (None, None) => 1.0,
        };
    }
    sel.clamp(0.0, 1.0)
}

/// The selectivity of `a.x = b.y` over the cross product of two relations
/// (PostgreSQL's eqjoinsel_inner): with MCV lists on both sides, the
/// matching MCV pairs' frequencies summed, plus the rest of each side's
/// rows spread over the other's non-MCV distinct values; without, one in
/// the larger number of distinct values, times both non-null fractions.
/// `None` statistics: a column never analyzed (200 distinct values, as
/// PostgreSQL's DEFAULT_NUM_DISTINCT, or the relation's rows if fewer).
pub fn eqjoinsel(s1: Option<&ColStats>, tuples1: f64, s2: Option<&ColStats>, tuples2: f64) -> f64 {
    let nd = |s: Option<&ColStats>, t: f64| s.map_or(t.clamp(1.0, 200.0), |s| distinct_values(s, t));
    let (nd1, nd2) = (nd(s1, tuples1), nd(s2, tuples2));
    let nf = |s: Option<&ColStats>| s.map_or(0.0, |s| s.null_frac);
    let (nf1, nf2) = (nf(s1), nf(s2));
    if let (Some(a), Some(b)) = (s1, s2) {
        if !a.mcv.is_empty() && !b.mcv.is_empty() {
            let mut matched2 = vec![false; b.mcv.len()];
            let (mut match_prod, mut matched1_freq, mut nmatches) = (0.0, 0.0, 0.0);
            for (v1, f1) in a.mcv.iter().zip(&a.mcf) {
                for (j, (v2, f2)) in b.mcv.iter().zip(&b.mcf).enumerate() {
                    if !matched2[j] && cmp(v1, v2) == Ordering::Equal {
                        matched2[j] = true;
                        match_prod += f1 * f2;
                        matched1_freq += f1;
                        nmatches += 1.0;
                        break;
                    }
                }
            }
            let matched2_freq: f64 = b.mcf.iter().zip(&matched2).filter(|(_, m)| **m).map(|(f, _)| *f).sum();
            let (sum1, sum2): (f64, f64) = (a.mcf.iter().sum(), b.mcf.iter().sum());
            let unmatched1 = (sum1 - matched1_freq).max(0.0);
            let unmatched2 = (sum2 - matched2_freq).max(0.0);
            let other1 = (1.0 - nf1 - sum1).max(0.0);
            let other2 = (1.0 - nf2 - sum2).max(0.0);
            let (n1, n2) = (a.mcv.len() as f64, b.mcv.len() as f64);
            // Seen from side 1: its unmatched MCVs meet side 2's non-MCV
            // values, its other rows meet side 2's unmatched distinct
            // values; and the same from side 2. The smaller of the two.
            let mut sel1 = match_prod;
            if nd2 > n2 {
                sel1 += unmatched1 * other2 / (nd2 - n2);
            }
            if nd2 > nmatches {
                sel1 += other1 * (other2 + unmatched2) / (nd2 - nmatches);
            }
            let mut sel2 = match_prod;
            if nd1 > n1 {
                sel2 += unmatched2 * other1 / (nd1 - n1);
            }
            if nd1 > nmatches {
                sel2 += other2 * (other1 + unmatched1) / (nd1 - nmatches);
            }
            let sel = sel1.min(sel2);
            return sel.clamp(0.0, 1.0);
        }
    }
    ((1.0 - nf1) * (1.0 - nf2) / nd1.max(nd2)).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uniform_int(n_distinct: f64, null_frac: f64, lo: i32, hi: i32) -> ColStats {
        let hist: Vec<Value> = (0..=100).map(|i| Value::Int4(lo + (hi - lo) * i / 100)).collect();
        ColStats { null_frac, width: 4, n_distinct, mcv: vec![], mcf: vec![], hist, correlation: 0.0 }
    }

    fn stats_of(cols: Vec<ColStats>, tuples: f64) -> TableStats {
        TableStats { tuples, pages: tuples / 100.0, cols: cols.into_iter().map(Some).collect() }
    }

    fn c(i: usize) -> Expr {
        Expr::Column(i, ferrogres_datum::types::Type::Int4)
    }
    fn k(v: i32) -> Expr {
        Expr::Const(Value::Int4(v), ferrogres_datum::types::Type::Int4)
    }
    fn cmp_e(op: CmpOp, l: Expr, r: Expr) -> Expr {
        Expr::Compare { op, l: Box::new(l), r: Box::new(r) }
    }

    #[test]
    fn defaults_without_statistics() {
        assert_eq!(clause_selectivity(None, &cmp_e(CmpOp::Eq, c(0), k(3)), &[]), 0.005);
        assert!((clause_selectivity(None, &cmp_e(CmpOp::Lt, c(0), k(3)), &[]) - 1.0 / 3.0).abs() < 1e-12);
        // BETWEEN without statistics: PostgreSQL's DEFAULT_RANGE_INEQ_SEL.
        let between = Expr::And(vec![cmp_e(CmpOp::Ge, c(0), k(1)), cmp_e(CmpOp::Le, c(0), k(9))]);
        assert_eq!(clause_selectivity(None, &between, &[]), 0.005);
        assert_eq!(clause_selectivity(None, &Expr::IsNull { arg: Box::new(c(0)), negated: false }, &[]), 0.005);
    }

    #[test]
    fn equality_uses_mcvs_then_the_rest() {
        // 10,000 rows: value 1 is 50 %, value 2 is 10 %, the other 40 % spread
        // over 98 further values; 2 % NULLs... computed by hand:
        // (1 - 0.6 - 0.02) / (100 - 2) = 0.0038775...
        let s = ColStats {
            null_frac: 0.02,
            width: 4,
            n_distinct: 100.0,
            mcv: vec![Value::Int4(1), Value::Int4(2)],
            mcf: vec![0.5, 0.1],
            hist: vec![],
            correlation: 0.0,
        };
        assert_eq!(eq_sel(Some(&s), 10_000.0, Some(&Value::Int4(1))), 0.5);
        assert_eq!(eq_sel(Some(&s), 10_000.0, Some(&Value::Int4(2))), 0.1);
        assert!((eq_sel(Some(&s), 10_000.0, Some(&Value::Int4(77))) - 0.38 / 98.0).abs() < 1e-12);
        // Unknown value: (1 - null_frac) / n_distinct.
        assert!((eq_sel(Some(&s), 10_000.0, None) - 0.98 / 100.0).abs() < 1e-12);
        // <> : 1 - eq - null_frac.
        let t = stats_of(vec![s], 10_000.0);
        assert!((clause_selectivity(Some(&t), &cmp_e(CmpOp::Ne, c(0), k(1)), &[]) - 0.48).abs() < 1e-12);
        // IN (1, 2): the equalities add up.
        let inl = Expr::Or(vec![cmp_e(CmpOp::Eq, c(0), k(1)), cmp_e(CmpOp::Eq, c(0), k(2))]);
        assert!((clause_selectivity(Some(&t), &inl, &[]) - 0.6).abs() < 1e-12);
        // NOT (col = 1) = 1 - 0.5.
        let not = Expr::Not(Box::new(cmp_e(CmpOp::Eq, c(0), k(1))));
        assert!((clause_selectivity(Some(&t), &not, &[]) - 0.5).abs() < 1e-12);
    }

    #[test]
    fn ranges_interpolate_in_the_histogram() {
        // Uniform 0..10000 in 100 buckets, no MCVs, no NULLs: x < 2500 is 25 %.
        let t = stats_of(vec![uniform_int(-1.0, 0.0, 0, 10_000)], 10_000.0);
        let lt = clause_selectivity(Some(&t), &cmp_e(CmpOp::Lt, c(0), k(2_550)), &[]);
        assert!((lt - 0.255).abs() < 1e-9, "{lt}");
        let gt = clause_selectivity(Some(&t), &cmp_e(CmpOp::Gt, c(0), k(9_000)), &[]);
        assert!((gt - 0.1).abs() < 1e-9, "{gt}");
        // Constant on the left: 2550 > x is x < 2550.
        let flipped = clause_selectivity(Some(&t), &cmp_e(CmpOp::Gt, k(2_550), c(0)), &[]);
        assert!((flipped - 0.255).abs() < 1e-9);
        // BETWEEN 1000 AND 2000 as a range: 0.1, not 0.9 * 0.2.
        let between = Expr::And(vec![cmp_e(CmpOp::Ge, c(0), k(1_000)), cmp_e(CmpOp::Le, c(0), k(2_000))]);
        assert!((clause_selectivity(Some(&t), &between, &[]) - 0.1).abs() < 1e-9);
        // Outside the histogram.
        assert_eq!(clause_selectivity(Some(&t), &cmp_e(CmpOp::Lt, c(0), k(-5)), &[]), 0.0);
    }

    #[test]
    fn like_prefix_is_a_range() {
        let hist: Vec<Value> = ["aa", "ab", "ba", "bb", "ca"].iter().map(|s| Value::Text((*s).into())).collect();
        let s = ColStats { null_frac: 0.0, width: 3, n_distinct: -1.0, mcv: vec![], mcf: vec![], hist, correlation: 0.0 };
        // 'b%' covers the buckets [ba, bb) and [bb, ca): half the rows (the
        // text bounds interpolate at the bucket's middle).
        let sel = like_sel(Some(&s), 1000.0, "b%");
        assert!((sel - 0.5).abs() < 1e-9, "{sel}");
        // No prefix: like_selectivity of the rest, `x`, `%`, `y`: 0.2 * 5 * 0.2.
        assert!((like_sel(Some(&s), 1000.0, "%x%y") - 0.2).abs() < 1e-9);
        // `_` weighs 0.9, leading wildcards nothing: `%_ab` is 0.2 * 0.2.
        assert!((like_sel(Some(&s), 1000.0, "%_ab") - 0.04).abs() < 1e-9);
    }

    #[test]
    fn join_selectivity() {
        // No MCVs: 1 / max(nd1, nd2).
        let a = uniform_int(1_000.0, 0.0, 0, 1000);
        let b = uniform_int(50.0, 0.0, 0, 1000);
        assert!((eqjoinsel(Some(&a), 10_000.0, Some(&b), 500.0) - 0.001).abs() < 1e-12);
        // Null fractions scale it.
        let n = uniform_int(1_000.0, 0.5, 0, 1000);
        assert!((eqjoinsel(Some(&n), 10_000.0, Some(&b), 500.0) - 0.0005).abs() < 1e-12);
        // MCVs on both sides, lists covering everything: the matching pairs.
        let m1 = ColStats { null_frac: 0.0, width: 4, n_distinct: 2.0, mcv: vec![Value::Int4(1), Value::Int4(2)], mcf: vec![0.9, 0.1], hist: vec![], correlation: 0.0 };
        let m2 = ColStats { null_frac: 0.0, width: 4, n_distinct: 2.0, mcv: vec![Value::Int4(1), Value::Int4(2)], mcf: vec![0.5, 0.5], hist: vec![], correlation: 0.0 };
        assert!((eqjoinsel(Some(&m1), 100.0, Some(&m2), 100.0) - (0.45 + 0.05)).abs() < 1e-12);
        // No statistics at all: 200 distinct values each.
        assert!((eqjoinsel(None, 10_000.0, None, 10_000.0) - 0.005).abs() < 1e-12);
    }
}
