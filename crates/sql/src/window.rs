//! Window functions: PostgreSQL's WindowAgg node.
//!
//! A query level with window functions is planned as two steps
//! (`analyze::window` builds them): an input [`Query`] that does everything
//! below the windows (scan, WHERE, GROUP BY/aggregates, HAVING) and projects
//! every value the windows and the final projection need, and a
//! [`WindowAgg`] source above it, whose rows are the window function results
//! followed by the input row; the level's own query then projects, sorts,
//! applies DISTINCT and LIMIT over those rows.
//!
//! Execution reads every input row, then for each window in turn (the order
//! analysis chose, PostgreSQL's) sorts the rows by the window's PARTITION BY
//! keys (ascending, NULLS LAST) and ORDER BY keys, stably, so that the order
//! of peers left by an earlier window is kept, as PostgreSQL keeps it by not
//! re-sorting, and walks the partitions. In a partition of `n` rows (positions
//! `0 <= i < n`), peers (rows with equal ORDER BY values; all rows without
//! ORDER BY) form groups `0 <= g < ngroups`; the frame of row `i` is the
//! positions `start <= j < end` less the rows its EXCLUDE clause removes.
//! The rows come out in the order of the last window's sort.
//!
//! Ranking functions, ntile and lag/lead read the partition; first_value,
//! last_value, nth_value and aggregates read the frame. An aggregate whose
//! frame starts at UNBOUNDED PRECEDING (and excludes nothing) is computed
//! incrementally (`end` never decreases along a partition); any other frame
//! recomputes the aggregate over the frame for each row whose frame differs
//! from the previous row's.

use ferrogres_datum::errors::{Result, SqlError};
use crate::exec::{compare, eval_pure, rows_iter, Ctx, RowIter};
use crate::grouping::AggState;
use crate::plan::{Aggregate, Expr, Query};
use ferrogres_datum::types::{Type, Value};
use std::cmp::Ordering;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameMode {
    Rows,
    Range,
    Groups,
}

/// A frame bound; offsets are var-free expressions (constants, `$n`).
#[derive(Clone, Debug)]
pub enum Bound {
    UnboundedPreceding,
    Preceding(Expr),
    CurrentRow,
    Following(Expr),
    UnboundedFollowing,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exclude {
    NoOthers,
    CurrentRow,
    Group,
    Ties,
}

#[derive(Clone, Debug)]
pub struct Frame {
    pub mode: FrameMode,
    pub start: Bound,
    pub end: Bound,
    pub exclude: Exclude,
}

impl Frame {
    /// RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW.
    pub fn default_frame() -> Frame {
        Frame { mode: FrameMode::Range, start: Bound::UnboundedPreceding, end: Bound::CurrentRow, exclude: Exclude::NoOthers }
    }
}

#[derive(Clone, Debug)]
pub struct OrderKey {
    pub expr: Expr,
    pub desc: bool,
    pub nulls_first: bool,
}

/// One window: its partitioning, ordering and frame (expressions over the
/// WindowAgg's input row).
#[derive(Clone, Debug)]
pub struct Window {
    pub partition: Vec<Expr>,
    pub order: Vec<OrderKey>,
    pub frame: Frame,
}

#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)] // one per window function of a query
pub enum WinKind {
    RowNumber,
    Rank,
    DenseRank,
    PercentRank,
    CumeDist,
    Ntile,
    Lag,
    Lead,
    FirstValue,
    LastValue,
    NthValue,
    /// An aggregate over the frame (its argument and FILTER read the input row).
    Agg(Aggregate),
}

/// The SQL name of a window function (EXPLAIN's column names).
pub fn func_name(k: &WinKind) -> &'static str {
    match k {
        WinKind::RowNumber => "row_number",
        WinKind::Rank => "rank",
        WinKind::DenseRank => "dense_rank",
        WinKind::PercentRank => "percent_rank",
        WinKind::CumeDist => "cume_dist",
        WinKind::Ntile => "ntile",
        WinKind::Lag => "lag",
        WinKind::Lead => "lead",
        WinKind::FirstValue => "first_value",
        WinKind::LastValue => "last_value",
        WinKind::NthValue => "nth_value",
        WinKind::Agg(_) => "aggregate",
    }
}

#[derive(Clone, Debug)]
pub struct WindowFunc {
    pub kind: WinKind,
    /// Arguments over the input row.
    pub args: Vec<Expr>,
    /// Index into [`WindowAgg::windows`].
    pub window: usize,
    pub ty: Type,
}

/// The WindowAgg plan node: output row = one value per [`WindowFunc`], then
/// the input query's row.
#[derive(Clone, Debug)]
pub struct WindowAgg {
    pub input: Query,
    /// In execution order.
    pub windows: Vec<Window>,
    pub funcs: Vec<WindowFunc>,
}

/// NULLs equal and last, as PARTITION BY sorts and compares.
fn cmp_partition(a: &[Value], b: &[Value]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = match (x.is_null(), y.is_null()) {
            (true, true) => Ordering::Equal,
            (true, false) => Ordering::Greater,
            (false, true) => Ordering::Less,
            _ => compare(x, y),
        };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

fn cmp_order(a: &[Value], b: &[Value], keys: &[OrderKey]) -> Ordering {
    for ((x, y), k) in a.iter().zip(b).zip(keys) {
        let o = crate::exec::compare_key(x, y, k.desc, k.nulls_first);
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// Runs the WindowAgg: its rows in the order of the last window's sort.
pub fn run(w: &WindowAgg, ctx: &mut Ctx) -> Result<Box<dyn RowIter>> {
    let rows = crate::subquery::collect(&w.input, ctx)?;
    let n = rows.len();
    let mut results = vec![vec![Value::Null; w.funcs.len()]; n];
    let mut perm: Vec<usize> = (0..n).collect();
    for (wi, win) in w.windows.iter().enumerate() {
        let mut keys: Vec<(Vec<Value>, Vec<Value>)> = Vec::with_capacity(n);
        for (i, r) in rows.iter().enumerate() {
            if i % 1024 == 1023 {
                ctx.env.check_interrupts()?;
            }
            let params = ctx.params;
            let p = win.partition.iter().map(|e| eval_pure(e, r, params, &[], ctx)).collect::<Result<Vec<_>>>()?;
            let o = win.order.iter().map(|k| eval_pure(&k.expr, r, params, &[], ctx)).collect::<Result<Vec<_>>>()?;
            keys.push((p, o));
        }
        if !win.partition.is_empty() || !win.order.is_empty() {
            crate::exec::sort_checked(&mut perm, &*ctx.env, |&a, &b| {
                cmp_partition(&keys[a].0, &keys[b].0).then_with(|| cmp_order(&keys[a].1, &keys[b].1, &win.order))
            })?;
        }
        let funcs: Vec<usize> = (0..w.funcs.len()).filter(|&f| w.funcs[f].window == wi).collect();
        let mut offsets: Option<(Option<Value>, Option<Value>)> = None;
        let mut s = 0;
        while s < n {
            let mut e = s + 1;
            while e < n && cmp_partition(&keys[perm[s]].0, &keys[perm[e]].0) == Ordering::Equal {
                e += 1;
            }
            if offsets.is_none() {
                offsets = Some(frame_offsets(&win.frame, ctx)?);
            }
            let part = Partition::new(&perm[s..e], &keys, win);
            let (so, eo) = offsets.as_ref().expect("set above");
            let fr = Frames { win, part: &part, keys: &keys, start_off: so.as_ref(), end_off: eo.as_ref() };
            for &fi in &funcs {
                eval_func(&w.funcs[fi], fi, &fr, &rows, &mut results, ctx)?;
            }
            s = e;
        }
    }
    let mut rows: Vec<Option<Vec<Value>>> = rows.into_iter().map(Some).collect();
    let out: Vec<Vec<Value>> = perm
        .into_iter()
        .map(|r| {
            let mut o = std::mem::take(&mut results[r]);
            o.extend(rows[r].take().unwrap_or_default());
            o
        })
        .collect();
    Ok(Box::new(rows_iter(out)))
}

/// The frame offsets, evaluated once per window (they read no row).
fn frame_offsets(f: &Frame, ctx: &mut Ctx) -> Result<(Option<Value>, Option<Value>)> {
    let mut eval = |b: &Bound, what: &str| -> Result<Option<Value>> {
        let (Bound::Preceding(e) | Bound::Following(e)) = b else { return Ok(None) };
        let v = eval_pure(e, &[], ctx.params, &[], ctx.env)?;
        if v.is_null() {
            return Err(SqlError::new(b"22004", format!("frame {what} offset must not be null")));
        }
        let negative = match &v {
            Value::Float8(x) => *x < 0.0,
            Value::Float4(x) => *x < 0.0,
            Value::Numeric(x) => x.is_neg() && !x.is_zero(),
            Value::Interval(iv) => iv.span() < 0,
            v => v.as_i64().is_some_and(|i| i < 0),
        };
        if negative {
            return Err(if f.mode == FrameMode::Range {
                SqlError::new(b"22013", "invalid preceding or following size in window function")
            } else {
                SqlError::new(b"22013", format!("frame {what} offset must not be negative"))
            });
        }
        Ok(Some(v))
    };
    Ok((eval(&f.start, "starting")?, eval(&f.end, "ending")?))
}

/// One partition: its rows (input row numbers, in window order) and peer groups.
struct Partition<'a> {
    rows: &'a [usize],
    /// Peer group of each position.
    group: Vec<usize>,
    /// First position of each group, then `rows.len()`.
    gstart: Vec<usize>,
}

impl<'a> Partition<'a> {
    fn new(rows: &'a [usize], keys: &[(Vec<Value>, Vec<Value>)], win: &Window) -> Partition<'a> {
        let mut group = Vec::with_capacity(rows.len());
        let mut gstart = Vec::new();
        for (i, &r) in rows.iter().enumerate() {
            if i == 0 || cmp_order(&keys[rows[i - 1]].1, &keys[r].1, &win.order) != Ordering::Equal {
                gstart.push(i);
            }
            group.push(gstart.len() - 1);
        }
        gstart.push(rows.len());
        Partition { rows, group, gstart }
    }

    fn len(&self) -> usize {
        self.rows.len()
    }

    /// The peer group of position `i`, as positions `[start, end)`.
    fn peers(&self, i: usize) -> (usize, usize) {
        let g = self.group[i];
        (self.gstart[g], self.gstart[g + 1])
    }
}

/// Frames of the rows of one partition.
struct Frames<'a> {
    win: &'a Window,
    part: &'a Partition<'a>,
    keys: &'a [(Vec<Value>, Vec<Value>)],
    start_off: Option<&'a Value>,
    end_off: Option<&'a Value>,
}

impl Frames<'_> {
    /// The frame of position `i` as up to three ascending ranges of positions.
    fn ranges(&self, i: usize) -> Result<Vec<(usize, usize)>> {
        let (s, e) = self.bounds(i)?;
        if s >= e {
            return Ok(vec![]);
        }
        let (gs, ge) = self.part.peers(i);
        let cut = |xs: usize, xe: usize| -> Vec<(usize, usize)> {
            let mut out = Vec::new();
            if s < xs.min(e) {
                out.push((s, xs.min(e)));
            }
            if xe.max(s) < e {
                out.push((xe.max(s), e));
            }
            out
        };
        Ok(match self.win.frame.exclude {
            Exclude::NoOthers => vec![(s, e)],
            Exclude::CurrentRow => cut(i, i + 1),
            Exclude::Group => cut(gs, ge),
            Exclude::Ties => {
                let mut out = cut(gs, ge);
                if s <= i && i < e {
                    let at = out.iter().position(|r| r.0 > i).unwrap_or(out.len());
                    out.insert(at, (i, i + 1));
                }
                out
            }
        })
    }

    /// The frame of position `i` before exclusion: positions `[start, end)`.
    fn bounds(&self, i: usize) -> Result<(usize, usize)> {
        let n = self.part.len();
        let f = &self.win.frame;
        let off = |v: Option<&Value>| -> usize {
            match v {
                Some(v) => usize::try_from(v.as_i64().unwrap_or(0)).unwrap_or(usize::MAX),
                None => 0,
            }
        };
        let g = self.part.group[i];
        let ngroups = self.part.gstart.len() - 1;
        let start = match (&f.start, f.mode) {
            (Bound::UnboundedPreceding, _) => 0,
            (Bound::UnboundedFollowing, _) => n,
            (Bound::CurrentRow, FrameMode::Rows) => i,
            (Bound::CurrentRow, _) => self.part.peers(i).0,
            (Bound::Preceding(_), FrameMode::Rows) => i.saturating_sub(off(self.start_off)),
            (Bound::Following(_), FrameMode::Rows) => i.saturating_add(off(self.start_off)).min(n),
            (Bound::Preceding(_), FrameMode::Groups) => self.part.gstart[g.saturating_sub(off(self.start_off))],
            (Bound::Following(_), FrameMode::Groups) => self.part.gstart[g.saturating_add(off(self.start_off)).min(ngroups)],
            (Bound::Preceding(_) | Bound::Following(_), FrameMode::Range) => {
                let add = matches!(f.start, Bound::Following(_));
                self.range_point(i, self.start_off, add, true)?
            }
        };
        let end = match (&f.end, f.mode) {
            (Bound::UnboundedPreceding, _) => 0,
            (Bound::UnboundedFollowing, _) => n,
            (Bound::CurrentRow, FrameMode::Rows) => i + 1,
            (Bound::CurrentRow, _) => self.part.peers(i).1,
            (Bound::Preceding(_), FrameMode::Rows) => (i + 1).saturating_sub(off(self.end_off)),
            (Bound::Following(_), FrameMode::Rows) => i.saturating_add(off(self.end_off)).saturating_add(1).min(n),
            (Bound::Preceding(_), FrameMode::Groups) => {
                let k = off(self.end_off);
                if k > g { 0 } else { self.part.gstart[g - k + 1] }
            }
            (Bound::Following(_), FrameMode::Groups) => self.part.gstart[g.saturating_add(off(self.end_off)).saturating_add(1).min(ngroups)],
            (Bound::Preceding(_) | Bound::Following(_), FrameMode::Range) => {
                let add = matches!(f.end, Bound::Following(_));
                self.range_point(i, self.end_off, add, false)?
            }
        };
        Ok((start, end))
    }

    /// RANGE with an offset (one ORDER BY key): for a start bound, the first
    /// position at or after `value(i) -/+ offset`; for an end bound, the
    /// position after the last one at or before it. NULL keys are peers of
    /// each other and lie beyond every offset of a non-null key.
    fn range_point(&self, i: usize, off: Option<&Value>, following: bool, start: bool) -> Result<usize> {
        let key = &self.win.order[0];
        let val = |j: usize| &self.keys[self.part.rows[j]].1[0];
        let cur = val(i).clone();
        let off = off.cloned().unwrap_or(Value::Null);
        // The bound is cur + off when (following and ascending) or
        // (preceding and descending), else cur - off.
        let add = following != key.desc;
        let bound = shift(&cur, &off, add)?;
        let nf = key.nulls_first;
        // Whether position j lies at or after (start) / at or before (end) the bound.
        let inside = |j: usize| -> Result<bool> {
            let u = val(j);
            Ok(match (cur.is_null(), u.is_null()) {
                (true, true) => true,
                (true, false) => if start { nf } else { !nf },
                (false, true) => if start { !nf } else { nf },
                _ => {
                    let o = cmp_shifted(u, &bound);
                    let o = if key.desc { o.reverse() } else { o };
                    if start { o != Ordering::Less } else { o != Ordering::Greater }
                }
            })
        };
        // Binary search: `inside` is false then true (start), true then false (end).
        let (mut lo, mut hi) = (0, self.part.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            let go_right = if start { !inside(mid)? } else { inside(mid)? };
            if go_right {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }
}

/// A RANGE bound: `v + off` or `v - off`, in a type that compares with the
/// ordering column's values ([`cmp_shifted`]); integers widen so that the
/// bound never overflows.
#[derive(Debug)]
enum Shifted {
    Int(i128),
    Float(f64),
    Value(Value),
}

fn shift(v: &Value, off: &Value, add: bool) -> Result<Shifted> {
    use ferrogres_datum::datetime::DtFunc;
    if v.is_null() {
        return Ok(Shifted::Value(Value::Null));
    }
    Ok(match (v, off) {
        (Value::Float8(_) | Value::Float4(_), _) => {
            let x = match v {
                Value::Float8(x) => *x,
                Value::Float4(x) => *x as f64,
                _ => 0.0,
            };
            let o = match off {
                Value::Float8(o) => *o,
                Value::Float4(o) => *o as f64,
                o => o.as_i64().unwrap_or(0) as f64,
            };
            // PostgreSQL: an infinite offset covers everything, even an infinite value.
            if o.is_infinite() && x.is_infinite() {
                return Ok(Shifted::Float(if add { f64::INFINITY } else { f64::NEG_INFINITY }));
            }
            Shifted::Float(if add { x + o } else { x - o })
        }
        (Value::Numeric(x), Value::Numeric(o)) => {
            let op = if add { crate::plan::ArithOp::Add } else { crate::plan::ArithOp::Sub };
            Shifted::Value(Value::Numeric(ferrogres_datum::numeric::arith(op, x, o)?))
        }
        (Value::Date(_) | Value::Timestamp(_) | Value::Timestamptz(_), Value::Interval(_)) => {
            let (ts, ty) = match v {
                Value::Date(_) => (ferrogres_datum::types::cast(v.clone(), Type::Date, Type::Timestamp, -1, false)?, Type::Timestamp),
                Value::Timestamp(_) => (v.clone(), Type::Timestamp),
                _ => (v.clone(), Type::Timestamptz),
            };
            let f = if add { DtFunc::TsPlusInterval(ty) } else { DtFunc::TsMinusInterval(ty) };
            Shifted::Value(ferrogres_datum::datetime::call(f, &[ts, off.clone()])?)
        }
        (Value::Interval(_), Value::Interval(_)) => {
            let f = if add { DtFunc::IntervalPlus } else { DtFunc::IntervalMinus };
            Shifted::Value(ferrogres_datum::datetime::call(f, &[v.clone(), off.clone()])?)
        }
        _ => match (v.as_i64(), off.as_i64()) {
            (Some(x), Some(o)) => Shifted::Int(if add { x as i128 + o as i128 } else { x as i128 - o as i128 }),
            _ => return Err(SqlError::internal("RANGE offset of an unsupported type")),
        },
    })
}

/// Compares an ordering column's value with a RANGE bound.
fn cmp_shifted(u: &Value, b: &Shifted) -> Ordering {
    match b {
        Shifted::Int(b) => (u.as_i64().unwrap_or(0) as i128).cmp(b),
        Shifted::Float(b) => {
            let x = match u {
                Value::Float8(x) => *x,
                Value::Float4(x) => *x as f64,
                _ => 0.0,
            };
            compare(&Value::Float8(x), &Value::Float8(*b))
        }
        Shifted::Value(b) => match (u, b) {
            (Value::Date(_), Value::Timestamp(_)) => {
                let u = ferrogres_datum::types::cast(u.clone(), Type::Date, Type::Timestamp, -1, false).unwrap_or(Value::Null);
                compare(&u, b)
            }
            _ => compare(u, b),
        },
    }
}

fn int_arg(v: Value) -> Option<i64> {
    v.as_i64()
}

fn eval_func(
    f: &WindowFunc,
    fi: usize,
    fr: &Frames,
    rows: &[Vec<Value>],
    results: &mut [Vec<Value>],
    ctx: &mut Ctx,
) -> Result<()> {
    let part = fr.part;
    let n = part.len();
    let row = |j: usize| &rows[part.rows[j]];
    let set = |j: usize, v: Value, results: &mut [Vec<Value>]| results[part.rows[j]][fi] = v;
    match &f.kind {
        WinKind::RowNumber => {
            for i in 0..n {
                set(i, Value::Int8(i as i64 + 1), results);
            }
        }
        WinKind::Rank | WinKind::DenseRank | WinKind::PercentRank | WinKind::CumeDist => {
            for i in 0..n {
                let (gs, ge) = part.peers(i);
                let v = match f.kind {
                    WinKind::Rank => Value::Int8(gs as i64 + 1),
                    WinKind::DenseRank => Value::Int8(part.group[i] as i64 + 1),
                    WinKind::PercentRank => Value::Float8(if n > 1 { gs as f64 / (n - 1) as f64 } else { 0.0 }),
                    _ => Value::Float8(ge as f64 / n as f64),
                };
                set(i, v, results);
            }
        }
        WinKind::Ntile => {
            // The bucket count is read at the partition's first row.
            let k = eval_pure(&f.args[0], row(0), ctx.params, &[], ctx.env)?;
            let Some(k) = int_arg(k) else { return Ok(()) };
            if k <= 0 {
                return Err(SqlError::new(b"22014", "argument of ntile must be greater than zero"));
            }
            let k = k as usize;
            // The first n % k buckets hold one row more than the others.
            let (per, rem) = (n / k, n % k);
            for i in 0..n {
                let b = if i < rem * (per + 1) { i / (per + 1) } else { rem + (i - rem * (per + 1)) / per.max(1) };
                set(i, Value::Int4(b as i32 + 1), results);
            }
        }
        WinKind::Lag | WinKind::Lead => {
            for i in 0..n {
                let off = match f.args.get(1) {
                    Some(e) => match int_arg(eval_pure(e, row(i), ctx.params, &[], ctx.env)?) {
                        Some(o) => o,
                        None => {
                            set(i, Value::Null, results);
                            continue;
                        }
                    },
                    None => 1,
                };
                let target = if matches!(f.kind, WinKind::Lag) { i as i64 - off } else { i as i64 + off };
                let v = if target >= 0 && (target as usize) < n {
                    eval_pure(&f.args[0], row(target as usize), ctx.params, &[], ctx.env)?
                } else {
                    match f.args.get(2) {
                        Some(d) => eval_pure(d, row(i), ctx.params, &[], ctx.env)?,
                        None => Value::Null,
                    }
                };
                set(i, v, results);
            }
        }
        WinKind::FirstValue | WinKind::LastValue | WinKind::NthValue => {
            for i in 0..n {
                let ranges = fr.ranges(i)?;
                let pos = match f.kind {
                    WinKind::FirstValue => ranges.first().map(|r| r.0),
                    WinKind::LastValue => ranges.last().map(|r| r.1 - 1),
                    _ => {
                        let Some(k) = int_arg(eval_pure(&f.args[1], row(i), ctx.params, &[], ctx.env)?) else {
                            set(i, Value::Null, results);
                            continue;
                        };
                        if k <= 0 {
                            return Err(SqlError::new(b"22016", "argument of nth_value must be greater than zero"));
                        }
                        let mut left = k as usize - 1;
                        let mut found = None;
                        for (s, e) in &ranges {
                            if left < e - s {
                                found = Some(s + left);
                                break;
                            }
                            left -= e - s;
                        }
                        found
                    }
                };
                let v = match pos {
                    Some(j) => eval_pure(&f.args[0], row(j), ctx.params, &[], ctx.env)?,
                    None => Value::Null,
                };
                set(i, v, results);
            }
        }
        WinKind::Agg(a) => {
            let frame = &fr.win.frame;
            if matches!(frame.start, Bound::UnboundedPreceding) && frame.exclude == Exclude::NoOthers {
                // The frame only grows: advance one state along the partition.
                let mut st = AggState::new(a);
                let mut done = 0;
                for i in 0..n {
                    let (_, e) = fr.bounds(i)?;
                    while done < e {
                        st.advance(a, row(done), ctx)?;
                        done += 1;
                        if done % 1024 == 0 {
                            ctx.env.check_interrupts()?;
                        }
                    }
                    set(i, st.peek(a)?, results);
                }
            } else {
                let mut last: Option<(Vec<(usize, usize)>, Value)> = None;
                for i in 0..n {
                    let ranges = fr.ranges(i)?;
                    let v = match &last {
                        Some((r, v)) if *r == ranges => v.clone(),
                        _ => {
                            let mut st = AggState::new(a);
                            for (s, e) in &ranges {
                                for j in *s..*e {
                                    st.advance(a, row(j), ctx)?;
                                }
                            }
                            ctx.env.check_interrupts()?;
                            st.peek(a)?
                        }
                    };
                    last = Some((ranges, v.clone()));
                    set(i, v, results);
                }
            }
        }
    }
    Ok(())
}
