//! Joins: the execution of [`Source::Join`] and the planning that places the
//! conditions of a FROM tree.
//!
//! A join's row is its left input's row followed by its right input's row
//! (`lw + rw` values); a NULL-extended row has NULLs for the missing side.
//! A join that is not LATERAL is a hash join ([`crate::hashjoin`]: the
//! smaller input held as the build side within `work_mem`, in batches written
//! to temporary files beyond it; the other input and the result stream):
//!
//! - with equality conditions between an expression of the left row and one
//!   of the right row (`hash` keys), build rows are found by their key values'
//!   hash (a NULL key matches nothing);
//! - otherwise every build row is a candidate (a nested loop over them);
//! - a LATERAL right input (it reads the left row) is run again for each left
//!   row, with the left row bound into it ([`crate::subquery::bind_outer`]).
//!
//! In all, `cond` (the rest of the ON condition) decides whether a pair
//! matches; LEFT/FULL emit an unmatched left row NULL-extended, RIGHT/FULL
//! an unmatched right row. Semi- and anti-joins build on the right and
//! return each left row at most once.
//!
//! Planning ([`place_conditions`]): WHERE conjuncts of an inner join or a
//! cross join that read one input only move into that input's filter (so a
//! table input keeps its index scans, [`crate::index::scan_table`]), those
//! that read both become join conditions; an outer join's ON conjuncts that
//! read only its nullable side filter that side. Equalities across the two
//! sides become hash keys.

use ferrogres_datum::errors::Result;
use crate::exec::{Ctx, RowIter, Ticker};
use crate::plan::{CmpOp, Expr, Source};
use crate::subquery::{columns_read, has_subplan, shift_columns};
use ferrogres_datum::types::Value;

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
    /// The method and estimates the join search chose ([`crate::optimizer`]).
    pub plan: crate::optimizer::JoinPlan,
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
        if crate::exec::qual(f, &r, ctx)? {
            out.push(r);
        }
    }
    crate::explain::count(crate::explain::key(s), crate::explain::Stage::Filter, out.len() as u64);
    Ok(out)
}

/// Runs a join to its rows: streaming its left input and its result (but for a
/// LATERAL join, run per left row over the materialized left input).
pub fn run(j: &Join, ctx: &mut Ctx) -> Result<Box<dyn RowIter>> {
    if let crate::optimizer::JoinMethod::ParamIndex { index } = j.plan.method {
        if let Some(it) = crate::nestloop::start(j, index, ctx)? {
            return Ok(it);
        }
    }
    if j.lateral {
        let left = input_rows(&j.left, &j.left_filter, ctx)?;
        let mut out = Vec::new();
        let null_right = vec![Value::Null; j.rw];
        // One tick per pair of rows considered: a nested loop polls as often
        // as it works, whatever the sizes of its inputs.
        let mut t = Ticker::default();
        for l in left {
            t.tick(&*ctx.env)?;
            let Source::Subquery(q) = &j.right else { return Err(ferrogres_datum::errors::SqlError::internal("LATERAL input is not a subquery")) };
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
    crate::hashjoin::start(j, ctx)
}

fn concat(l: &[Value], r: &[Value]) -> Vec<Value> {
    let mut row = Vec::with_capacity(l.len() + r.len());
    row.extend_from_slice(l);
    row.extend_from_slice(r);
    row
}

/// Whether a join condition (none: always) is true for `row`.
pub(crate) fn passes(cond: &Option<Expr>, row: &[Value], ctx: &mut Ctx) -> Result<bool> {
    match cond {
        Some(c) => crate::exec::qual(c, row, ctx),
        None => Ok(true),
    }
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
        if !lk.is_empty() && j.plan.method == crate::optimizer::JoinMethod::NestLoop {
            // The optimizer chose a nested loop (enable_hashjoin off): the
            // equalities stay in the condition.
            for (a, mut b) in lk.into_iter().zip(rk) {
                shift_columns(&mut b, lw as isize);
                residual.push(Expr::Compare { op: CmpOp::Eq, l: Box::new(a), r: Box::new(b) });
            }
        } else if !lk.is_empty() {
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
