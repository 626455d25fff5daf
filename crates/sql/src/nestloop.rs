//! The parameterized nested loop (PostgreSQL's NestLoop with a
//! parameterized inner index scan, `nodeNestloop.c`'s idea): for each row
//! of the outer (left) input, the inner (right) input, one table, is probed
//! through an index with the outer row's join-key values
//! ([`crate::index::index_probe`]). The probe is planned once, when the
//! node starts ([`probe_keys`]); per outer row only the key values change:
//! no re-planning and no copy of the plan.
//!
//! The optimizer chooses it ([`crate::optimizer::JoinMethod::ParamIndex`])
//! when the outer side is small and the index selective: then the inner
//! table is never read whole. The inner rows fetched are checked against the
//! inner filter, the hash-key equalities the index did not answer and the
//! join condition. A LEFT join NULL-extends an outer row nothing matched.

use crate::catalog::Table;
use ferrogres_datum::errors::Result;
use crate::exec::{eval_pure, Ctx, RowIter, Ticker};
use crate::join::{Join, JoinKind};
use crate::plan::{Expr, Source};
use ferrogres_datum::types::Value;

/// How a join's right table is probed: the outer expressions giving the
/// index's leading key values, in key order, and which of the join's hash
/// key pairs they come from.
#[derive(Clone, Debug)]
pub struct ProbeKeys {
    pub outer: Vec<Expr>,
    pub used: Vec<usize>,
}

/// The probe of `j`'s right table through its index `index`, when the
/// join's hash keys equate the index's leading column(s) with expressions
/// of the left row; `None` when they do not (or the join is not of a kind
/// this node runs: inner or left, not LATERAL).
pub fn probe_keys(j: &Join, index: usize) -> Option<ProbeKeys> {
    let Source::Table(t) = &j.right else { return None };
    if j.lateral || !matches!(j.kind, JoinKind::Inner | JoinKind::Left) {
        return None;
    }
    let ix = t.indexes.get(index)?;
    let (lk, rk) = j.hash.as_ref()?;
    let mut keys = ProbeKeys { outer: Vec::new(), used: Vec::new() };
    let ncols = if ix.am == crate::index::IndexAm::Hash { 1 } else { ix.nkey.max(1).min(ix.columns.len()) };
    for &col in &ix.columns[..ncols] {
        let found = rk.iter().enumerate().find(|(i, e)| matches!(e, Expr::Column(c, _) if *c == col) && !keys.used.contains(i));
        match found {
            Some((i, _)) => {
                keys.used.push(i);
                keys.outer.push(lk[i].clone());
            }
            None => break,
        }
    }
    (!keys.used.is_empty()).then_some(keys)
}

/// The node, or `None` when [`probe_keys`] finds no probe (the caller runs
/// the join as a hash join instead).
pub fn start(j: &Join, index: usize, ctx: &mut Ctx) -> Result<Option<Box<dyn RowIter>>> {
    let Some(keys) = probe_keys(j, index) else { return Ok(None) };
    let Source::Table(t) = &j.right else { return Ok(None) };
    let (left, left_filter) = match &j.left {
        Source::Table(lt) => {
            let scan = crate::exec::table_rows(lt, j.left_filter.as_ref(), ctx)?;
            let rest = scan.remaining(j.left_filter.as_ref()).cloned();
            (scan.rows, rest)
        }
        other => (crate::exec::source_rows(other, ctx)?, j.left_filter.clone()),
    };
    let left_key = crate::explain::key(&j.left);
    let left = crate::explain::wrap(left, left_key, crate::explain::Stage::Scan);
    let (lk, rk) = j.hash.clone().unwrap_or_default();
    let rest: Vec<(Expr, Expr)> = lk.into_iter().zip(rk).enumerate().filter(|(i, _)| !keys.used.contains(i)).map(|(_, p)| p).collect();
    Ok(Some(Box::new(NestLoop {
        left,
        left_filter,
        left_key,
        right_key: crate::explain::key(&j.right),
        table: t.clone(),
        index,
        keys: keys.outer,
        rest,
        right_filter: j.right_filter.clone(),
        cond: j.cond.clone(),
        left_join: j.kind == JoinKind::Left,
        rw: j.rw,
        current: None,
        tick: Ticker::default(),
    })))
}

struct NestLoop {
    left: Box<dyn RowIter>,
    left_filter: Option<Expr>,
    left_key: usize,
    right_key: usize,
    table: Table,
    index: usize,
    /// Outer expressions giving the probe's key values.
    keys: Vec<Expr>,
    /// Hash-key pairs (outer, inner) the index does not answer.
    rest: Vec<(Expr, Expr)>,
    right_filter: Option<Expr>,
    cond: Option<Expr>,
    left_join: bool,
    rw: usize,
    /// The outer row being joined, its inner rows, the next one, matched yet.
    current: Option<(Vec<Value>, std::vec::IntoIter<Vec<Value>>, bool)>,
    tick: Ticker,
}

fn truthy(e: &Option<Expr>, row: &[Value], ctx: &mut Ctx) -> Result<bool> {
    Ok(match e {
        None => true,
        Some(e) => {
            let params = ctx.params;
            eval_pure(e, row, params, &[], ctx)? == Value::Bool(true)
        }
    })
}

impl NestLoop {
    /// Whether inner row `r` joins outer row `l`.
    fn matches(&self, l: &[Value], r: &[Value], ctx: &mut Ctx) -> Result<bool> {
        if !truthy(&self.right_filter, r, ctx)? {
            return Ok(false);
        }
        crate::explain::count_row(self.right_key, crate::explain::Stage::Filter);
        for (o, i) in &self.rest {
            let params = ctx.params;
            let a = eval_pure(o, l, params, &[], ctx)?;
            let b = eval_pure(i, r, params, &[], ctx)?;
            if a.is_null() || b.is_null() || crate::exec::compare(&a, &b) != std::cmp::Ordering::Equal {
                return Ok(false);
            }
        }
        if self.cond.is_none() {
            return Ok(true);
        }
        let row: Vec<Value> = l.iter().chain(r.iter()).cloned().collect();
        truthy(&self.cond, &row, ctx)
    }
}

impl RowIter for NestLoop {
    fn next(&mut self, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        loop {
            if let Some((l, mut inner, mut matched)) = self.current.take() {
                while let Some(r) = inner.next() {
                    self.tick.tick(&*ctx.env)?;
                    if self.matches(&l, &r, ctx)? {
                        matched = true;
                        let row: Vec<Value> = l.iter().chain(r.iter()).cloned().collect();
                        self.current = Some((l, inner, matched));
                        return Ok(Some(row));
                    }
                }
                if !matched && self.left_join {
                    let mut row = l;
                    row.extend(std::iter::repeat_n(Value::Null, self.rw));
                    return Ok(Some(row));
                }
            }
            let Some(l) = self.left.next(ctx)? else { return Ok(None) };
            self.tick.tick(&*ctx.env)?;
            if self.left_filter.is_some() {
                if !truthy(&self.left_filter, &l, ctx)? {
                    continue;
                }
                crate::explain::count_row(self.left_key, crate::explain::Stage::Filter);
            }
            // The probe's key values from this outer row.
            let mut key = Vec::with_capacity(self.keys.len());
            for e in &self.keys {
                let params = ctx.params;
                key.push(eval_pure(e, &l, params, &[], ctx)?);
            }
            let rows: Vec<Vec<Value>> = crate::index::index_probe(&self.table, self.index, &key, ctx)?.into_iter().map(|r| r.1).collect();
            crate::explain::count(self.right_key, crate::explain::Stage::Scan, rows.len() as u64);
            self.current = Some((l, rows.into_iter(), false));
        }
    }
}
