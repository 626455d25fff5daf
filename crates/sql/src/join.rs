//! Joins: the execution of [`Source::Join`] and the planning that places the
//! conditions of a FROM tree.
//!
//! A join's row is its left input's row followed by its right input's row
//! (`lw + rw` values); a NULL-extended row has NULLs for the missing side.
//! The right (inner) input is materialized once; then
//!
//! - with equality conditions between an expression of the left row and one
//!   of the right row (`hash` keys), a hash join: the right rows indexed by
//!   their key values (an ordered map compared as [`crate::exec::compare`]
//!   compares; a NULL key matches nothing), probed with each left row;
//! - otherwise a nested loop over the materialized right rows;
//! - a LATERAL right input (it reads the left row) is run again for each left
//!   row, with the left row bound into it ([`crate::subquery::bind_outer`]).
//!
//! In both, `cond` (the rest of the ON condition) decides whether a pair
//! matches; LEFT/FULL emit an unmatched left row NULL-extended, RIGHT/FULL
//! the unmatched right rows at the end.
//!
//! Planning ([`place_conditions`]): WHERE conjuncts of an inner join or a
//! cross join that read one input only move into that input's filter (so a
//! table input keeps its index scans, [`crate::index::scan_table`]), those
//! that read both become join conditions; an outer join's ON conjuncts that
//! read only its nullable side filter that side. Equalities across the two
//! sides become hash keys.

use crate::errors::Result;
use crate::exec::{eval_pure, Ctx, RowIter, Ticker};
use crate::grouping::Key;
use crate::plan::{CmpOp, Expr, Source};
use crate::subquery::{columns_read, has_subplan, map_columns, shift_columns};
use crate::types::Value;
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinKind {
    Inner,
    Left,
    Right,
    Full,
    /// A semi-join (from `EXISTS` / `IN` in WHERE, [`crate::prep`]): each left
    /// row once if some right row matches; the row is the left row alone.
    Semi,
    /// An anti-join (from `NOT EXISTS`): each left row that no right row
    /// matches; the row is the left row alone.
    Anti,
}

impl JoinKind {
    /// Semi- and anti-joins return the left row only (`lw` columns).
    pub fn left_only(self) -> bool {
        matches!(self, JoinKind::Semi | JoinKind::Anti)
    }
}

#[derive(Clone, Debug)]
pub struct Join {
    pub kind: JoinKind,
    pub left: Source,
    pub right: Source,
    /// Applied to each left (right) input row before joining (over that input's row).
    pub left_filter: Option<Expr>,
    pub right_filter: Option<Expr>,
    /// The join condition over the joined row (None: every pair matches).
    pub cond: Option<Expr>,
    /// Hash keys: left expressions over the left row, right ones over the right row.
    pub hash: Option<(Vec<Expr>, Vec<Expr>)>,
    pub lw: usize,
    pub rw: usize,
    /// The right input is a LATERAL subquery: re-run per left row.
    pub lateral: bool,
}

/// Rows of one join input, filtered.
fn input_rows(s: &Source, filter: &Option<Expr>, ctx: &mut Ctx) -> Result<Vec<Vec<Value>>> {
    let rows: Vec<Vec<Value>> = match s {
        Source::Table(t) => crate::index::scan_table(t, filter.as_ref(), ctx)?.into_iter().map(|r| r.1).collect(),
        other => {
            let mut it = crate::exec::source_rows(other, ctx)?;
            crate::exec::drain(&mut it, ctx)?
        }
    };
    crate::explain::count(crate::explain::key(s), crate::explain::Stage::Scan, rows.len() as u64);
    let Some(f) = filter else { return Ok(rows) };
    let mut out = Vec::with_capacity(rows.len());
    let mut t = Ticker::default();
    for r in rows {
        t.tick(&*ctx.env)?;
        let params = ctx.params;
        if eval_pure(f, &r, params, &[], ctx)? == Value::Bool(true) {
            out.push(r);
        }
    }
    crate::explain::count(crate::explain::key(s), crate::explain::Stage::Filter, out.len() as u64);
    Ok(out)
}

fn keys_of(exprs: &[Expr], row: &[Value], ctx: &mut Ctx) -> Result<Option<Key>> {
    let mut k = Vec::with_capacity(exprs.len());
    for e in exprs {
        let params = ctx.params;
        let v = eval_pure(e, row, params, &[], ctx)?;
        if v.is_null() {
            return Ok(None);
        }
        k.push(v);
    }
    Ok(Some(Key(k)))
}

/// Runs a join to its rows (materialized, but for semi- and anti-joins,
/// which stream their left input: [`SemiJoin`]).
pub fn run(j: &Join, ctx: &mut Ctx) -> Result<Box<dyn RowIter>> {
    if j.kind.left_only() && !j.lateral {
        return SemiJoin::start(j, ctx);
    }
    let left = input_rows(&j.left, &j.left_filter, ctx)?;
    let mut out = Vec::new();
    let null_right = vec![Value::Null; j.rw];
    // One tick per pair of rows considered: a nested loop polls as often as
    // it works, whatever the sizes of its inputs.
    let mut t = Ticker::default();
    if j.lateral {
        for l in left {
            t.tick(&*ctx.env)?;
            let Source::Subquery(q) = &j.right else { return Err(crate::errors::SqlError::internal("LATERAL input is not a subquery")) };
            let mut q = (**q).clone();
            crate::subquery::bind_outer(&mut q, &l, &[]);
            let rights = input_rows(&Source::Subquery(Box::new(q)), &j.right_filter, ctx)?;
            let mut matched = false;
            for r in &rights {
                t.tick(&*ctx.env)?;
                let row = concat(&l, r);
                if passes(&j.cond, &row, ctx)? {
                    matched = true;
                    out.push(row);
                }
            }
            if !matched && matches!(j.kind, JoinKind::Left | JoinKind::Full) {
                out.push(concat(&l, &null_right));
            }
        }
        return Ok(Box::new(crate::exec::rows_iter(out)));
    }
    let right = input_rows(&j.right, &j.right_filter, ctx)?;
    // An inner hash join keys the smaller input (PostgreSQL hashes the
    // smaller side too): with the left one smaller, its rows are indexed and
    // the right rows probe them, in right-row order.
    if let (JoinKind::Inner, Some((lk, rk))) = (j.kind, &j.hash) {
        if left.len() < right.len() {
            let index = index_rows(lk, &left, &mut t, ctx)?;
            for r in &right {
                t.tick(&*ctx.env)?;
                let Some(k) = keys_of(rk, r, ctx)? else { continue };
                for &i in index.get(&k).map_or(&[][..], |v| v.as_slice()) {
                    t.tick(&*ctx.env)?;
                    let row = concat(&left[i], r);
                    if passes(&j.cond, &row, ctx)? {
                        out.push(row);
                    }
                }
            }
            return Ok(Box::new(crate::exec::rows_iter(out)));
        }
    }
    let mut right_matched = vec![false; right.len()];
    let index = match &j.hash {
        Some((_, rk)) => Some(index_rows(rk, &right, &mut t, ctx)?),
        None => None,
    };
    let all: Vec<usize> = (0..right.len()).collect();
    for l in left.iter() {
        t.tick(&*ctx.env)?;
        let cands: &[usize] = match (&index, &j.hash) {
            (Some(map), Some((lk, _))) => match keys_of(lk, l, ctx)? {
                Some(k) => map.get(&k).map_or(&[][..], |v| v.as_slice()),
                None => &[],
            },
            _ => &all,
        };
        let mut matched = false;
        for &i in cands {
            t.tick(&*ctx.env)?;
            let row = concat(l, &right[i]);
            if passes(&j.cond, &row, ctx)? {
                matched = true;
                right_matched[i] = true;
                out.push(row);
            }
        }
        if !matched && matches!(j.kind, JoinKind::Left | JoinKind::Full) {
            out.push(concat(l, &null_right));
        }
    }
    if matches!(j.kind, JoinKind::Right | JoinKind::Full) {
        let null_left = vec![Value::Null; j.lw];
        for (i, r) in right.iter().enumerate() {
            if !right_matched[i] {
                out.push(concat(&null_left, r));
            }
        }
    }
    Ok(Box::new(crate::exec::rows_iter(out)))
}

/// The right rows of a join indexed by their hash-key values (a NULL key
/// matches nothing, so such rows are left out).
type KeyIndex = BTreeMap<Key, Vec<usize>>;

fn index_rows(rk: &[Expr], right: &[Vec<Value>], t: &mut Ticker, ctx: &mut Ctx) -> Result<KeyIndex> {
    let mut map: KeyIndex = BTreeMap::new();
    for (i, r) in right.iter().enumerate() {
        t.tick(&*ctx.env)?;
        if let Some(k) = keys_of(rk, r, ctx)? {
            map.entry(k).or_default().push(i);
        }
    }
    Ok(map)
}

/// A semi- or anti-join: the right input is read once into a table keyed by
/// its hash keys (the only rows kept in memory, counted by the statement's
/// memory accounting like every allocation); the left input streams through
/// it. A left row is returned (semi) or dropped (anti) at its first right row
/// that has equal keys and passes `cond`, so duplicates on the right never
/// duplicate a left row. Without hash keys every right row is a candidate
/// (a nested loop over the kept rows). A left row with a NULL key matches
/// nothing: a semi-join drops it, an anti-join returns it, as `EXISTS` /
/// `NOT EXISTS` over `inner.k = outer.k` do.
struct SemiJoin {
    left: Box<dyn RowIter>,
    left_filter: Option<Expr>,
    left_key: usize,
    right: Vec<Vec<Value>>,
    /// `None`: no hash keys, every right row is a candidate.
    index: Option<(Vec<Expr>, KeyIndex)>,
    cond: Option<Expr>,
    anti: bool,
    tick: Ticker,
}

impl SemiJoin {
    fn start(j: &Join, ctx: &mut Ctx) -> Result<Box<dyn RowIter>> {
        let mut tick = Ticker::default();
        let (right, rk, cond) = Self::right_side(j, &mut tick, ctx)?;
        let index = match (&j.hash, rk) {
            (Some((lk, _)), Some(rk)) => Some((lk.clone(), index_rows(&rk, &right, &mut tick, ctx)?)),
            _ => None,
        };
        let left = match &j.left {
            Source::Table(t) => crate::exec::table_rows(t, j.left_filter.as_ref(), ctx)?,
            other => crate::exec::source_rows(other, ctx)?,
        };
        let left_key = crate::explain::key(&j.left);
        let left = crate::explain::wrap(left, left_key, crate::explain::Stage::Scan);
        Ok(Box::new(SemiJoin {
            left,
            left_filter: j.left_filter.clone(),
            left_key,
            right,
            index,
            cond,
            anti: j.kind == JoinKind::Anti,
            tick,
        }))
    }

    /// The right input's rows that pass its filter, each cut down to the
    /// columns the hash keys and the condition read (TPC-H Q21 keeps two of
    /// lineitem's 16 columns); with the keys and the condition renumbered
    /// to read the kept columns.
    #[allow(clippy::type_complexity)]
    fn right_side(j: &Join, tick: &mut Ticker, ctx: &mut Ctx) -> Result<(Vec<Vec<Value>>, Option<Vec<Expr>>, Option<Expr>)> {
        let lw = j.lw;
        let mut used: Vec<usize> = Vec::new();
        if let Some((_, rk)) = &j.hash {
            used.extend(rk.iter().flat_map(columns_read));
        }
        if let Some(c) = &j.cond {
            used.extend(columns_read(c).into_iter().filter(|&i| i >= lw).map(|i| i - lw));
        }
        used.sort_unstable();
        used.dedup();
        let pos = |i: usize| used.binary_search(&i).unwrap_or(0);
        let rk = j.hash.as_ref().map(|(_, rk)| {
            rk.iter()
                .map(|e| {
                    let mut e = e.clone();
                    map_columns(&mut e, &pos);
                    e
                })
                .collect::<Vec<_>>()
        });
        let cond = j.cond.as_ref().map(|c| {
            let mut c = c.clone();
            map_columns(&mut c, &|i| if i >= lw { lw + pos(i - lw) } else { i });
            c
        });
        let key = crate::explain::key(&j.right);
        let input = match &j.right {
            Source::Table(t) => crate::exec::table_rows(t, j.right_filter.as_ref(), ctx)?,
            other => crate::exec::source_rows(other, ctx)?,
        };
        let mut input = crate::explain::wrap(input, key, crate::explain::Stage::Scan);
        let mut rows = Vec::new();
        while let Some(r) = input.next(ctx)? {
            tick.tick(&*ctx.env)?;
            if j.right_filter.is_some() {
                if !passes(&j.right_filter, &r, ctx)? {
                    continue;
                }
                crate::explain::count_row(key, crate::explain::Stage::Filter);
            }
            rows.push(used.iter().map(|&i| r.get(i).cloned().unwrap_or(Value::Null)).collect());
        }
        Ok((rows, rk, cond))
    }

    /// Whether some right row matches `l`.
    fn matches(&mut self, l: &[Value], ctx: &mut Ctx) -> Result<bool> {
        let cands: Option<&[usize]> = match &self.index {
            Some((lk, map)) => match keys_of(lk, l, ctx)? {
                Some(k) => Some(map.get(&k).map_or(&[][..], |v| v.as_slice())),
                None => return Ok(false),
            },
            None => None,
        };
        let n = cands.map_or(self.right.len(), |c| c.len());
        if self.cond.is_none() {
            return Ok(n > 0);
        }
        for c in 0..n {
            self.tick.tick(&*ctx.env)?;
            let i = cands.map_or(c, |cs| cs[c]);
            let row = concat(l, &self.right[i]);
            if passes(&self.cond, &row, ctx)? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

impl RowIter for SemiJoin {
    fn next(&mut self, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        while let Some(l) = self.left.next(ctx)? {
            self.tick.tick(&*ctx.env)?;
            if self.left_filter.is_some() {
                if !passes(&self.left_filter, &l, ctx)? {
                    continue;
                }
                crate::explain::count_row(self.left_key, crate::explain::Stage::Filter);
            }
            if self.matches(&l, ctx)? != self.anti {
                return Ok(Some(l));
            }
        }
        Ok(None)
    }
}

fn concat(l: &[Value], r: &[Value]) -> Vec<Value> {
    let mut row = Vec::with_capacity(l.len() + r.len());
    row.extend_from_slice(l);
    row.extend_from_slice(r);
    row
}

fn passes(cond: &Option<Expr>, row: &[Value], ctx: &mut Ctx) -> Result<bool> {
    Ok(match cond {
        Some(c) => {
            let params = ctx.params;
            eval_pure(c, row, params, &[], ctx)? == Value::Bool(true)
        }
        None => true,
    })
}

/// Splits a condition into its AND-ed conjuncts.
pub fn conjuncts(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::And(v) => v.into_iter().for_each(|c| conjuncts(c, out)),
        e => out.push(e),
    }
}

pub(crate) fn and_of(mut v: Vec<Expr>) -> Option<Expr> {
    match v.len() {
        0 => None,
        1 => v.pop(),
        _ => Some(Expr::And(v)),
    }
}

fn add_filter(f: &mut Option<Expr>, e: Expr) {
    *f = Some(match f.take() {
        None => e,
        Some(Expr::And(mut v)) => {
            v.push(e);
            Expr::And(v)
        }
        Some(other) => Expr::And(vec![other, e]),
    });
}

/// Places the conditions of `source` (and the query's WHERE `filter` over its
/// row): returns the WHERE conjuncts that must stay above it.
pub fn place_conditions(source: &mut Source, filter: Option<Expr>) -> Option<Expr> {
    let mut quals = Vec::new();
    if let Some(f) = filter {
        crate::prep::conjuncts_factored(f, &mut quals);
    }
    let Source::Join(j) = source else { return and_of(quals) };
    let (lw, rw) = (j.lw, j.rw);
    let side = |e: &Expr| -> (bool, bool) {
        let cols = columns_read(e);
        (cols.iter().any(|c| *c < lw), cols.iter().any(|c| *c >= lw && *c < lw + rw))
    };
    let mut keep = Vec::new();
    // WHERE conjuncts.
    for q in quals {
        if has_subplan(&q) {
            keep.push(q);
            continue;
        }
        let (l, r) = side(&q);
        match (l, r, j.kind) {
            // A WHERE conjunct over a semi- or anti-join reads its left row only.
            (true, false, JoinKind::Inner | JoinKind::Left | JoinKind::Semi | JoinKind::Anti) => add_filter(&mut j.left_filter, q),
            (false, true, JoinKind::Inner | JoinKind::Right) if !j.lateral => {
                let mut q = q;
                shift_columns(&mut q, -(lw as isize));
                add_filter(&mut j.right_filter, q)
            }
            (true, true, JoinKind::Inner) => add_filter(&mut j.cond, q),
            _ => keep.push(q),
        }
    }
    // ON conjuncts that read one side only.
    if let Some(c) = j.cond.take() {
        let mut cs = Vec::new();
        crate::prep::conjuncts_factored(c, &mut cs);
        let mut rest = Vec::new();
        for q in cs {
            if has_subplan(&q) {
                rest.push(q);
                continue;
            }
            let (l, r) = side(&q);
            match (l, r, j.kind) {
                // Not for an anti-join: a left row its condition rejects is
                // still returned (nothing matched it).
                (true, false, JoinKind::Inner | JoinKind::Right | JoinKind::Semi) => add_filter(&mut j.left_filter, q),
                (false, true, JoinKind::Inner | JoinKind::Left | JoinKind::Semi | JoinKind::Anti) if !j.lateral => {
                    let mut q = q;
                    shift_columns(&mut q, -(lw as isize));
                    add_filter(&mut j.right_filter, q)
                }
                _ => rest.push(q),
            }
        }
        // Hash keys: `left expr = right expr`.
        let mut lk = Vec::new();
        let mut rk = Vec::new();
        let mut residual = Vec::new();
        for q in rest {
            if let Expr::Compare { op: CmpOp::Eq, l, r } = &q {
                if !j.lateral && !has_subplan(&q) {
                    let (ll, lr) = side(l);
                    let (rl, rr) = side(r);
                    let pair = if ll && !lr && rr && !rl {
                        Some(((**l).clone(), (**r).clone()))
                    } else if lr && !ll && rl && !rr {
                        Some(((**r).clone(), (**l).clone()))
                    } else {
                        None
                    };
                    if let Some((a, mut b)) = pair {
                        shift_columns(&mut b, -(lw as isize));
                        lk.push(a);
                        rk.push(b);
                        continue;
                    }
                }
            }
            residual.push(q);
        }
        if !lk.is_empty() {
            j.hash = Some((lk, rk));
        }
        j.cond = and_of(residual);
    }
    // Inputs that are joins themselves.
    let lf = j.left_filter.take();
    j.left_filter = place_conditions(&mut j.left, lf);
    let rf = j.right_filter.take();
    j.right_filter = place_conditions(&mut j.right, rf);
    and_of(keep)
}
