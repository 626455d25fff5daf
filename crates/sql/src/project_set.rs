//! Set-returning functions in the select list (PostgreSQL 10's ProjectSet):
//! for each input row, every set-returning call of the target list runs in
//! lockstep; the row is emitted as many times as the longest of them returns
//! rows, a call that has run out reading as NULL. An input row for which every
//! call returns no rows emits nothing.
//!
//! The target expressions are rewritten once: each set-returning call becomes
//! a column read past the end of the input row, where [`ProjectSet`] puts that
//! call's current value.

use ferrogres_datum::errors::Result;
use crate::exec::{eval_pure, Ctx, RowIter};
use crate::functions::{call_set, FuncId, SetIter};
use crate::plan::{Expr, Func};
use ferrogres_datum::types::Value;

fn srf_id(e: &Expr) -> Option<FuncId> {
    match e {
        Expr::Func { func: Func::Builtin(id), .. } if id.get().returns_set() => Some(*id),
        _ => None,
    }
}

/// The direct sub-expressions of `e`. Variants not listed here have none that
/// can hold a set-returning call (one hidden there fails at run time with
/// PostgreSQL's "set-valued function called in context that cannot accept a set").
fn children_mut(e: &mut Expr) -> Vec<&mut Expr> {
    match e {
        Expr::Cast { arg, .. } | Expr::Neg(arg, _) | Expr::Not(arg) | Expr::IsNull { arg, .. } => vec![&mut **arg],
        Expr::Arith { l, r, .. } | Expr::Compare { l, r, .. } | Expr::Concat(l, r) | Expr::Distinct { l, r, .. } => vec![&mut **l, &mut **r],
        Expr::And(v) | Expr::Or(v) | Expr::Func { args: v, .. } | Expr::Coalesce(v, _) | Expr::MinMax { args: v, .. } => v.iter_mut().collect(),
        Expr::Case { whens, default, .. } => {
            let mut out: Vec<&mut Expr> = whens.iter_mut().flat_map(|(c, r)| [c, r]).collect();
            out.push(&mut **default);
            out
        }
        Expr::NullIf { arg, eq } => vec![&mut **arg, &mut **eq],
        Expr::Like { arg, pat, escape, .. } => {
            let mut out = vec![&mut **arg, &mut **pat];
            if let Some(e) = escape {
                out.push(&mut **e);
            }
            out
        }
        _ => vec![],
    }
}

/// Whether `e` calls a set-returning function.
pub fn contains_srf(e: &Expr) -> bool {
    let mut e = e.clone();
    has_srf(&mut e)
}

fn has_srf(e: &mut Expr) -> bool {
    srf_id(e).is_some() || children_mut(e).into_iter().any(has_srf)
}

/// Replaces each set-returning call with `Column(base + k)`, collecting the calls.
fn rewrite(e: &mut Expr, base: usize, calls: &mut Vec<(FuncId, Vec<Expr>)>) {
    if let Some(id) = srf_id(e) {
        let ty = e.ty();
        let Expr::Func { args, .. } = std::mem::replace(e, Expr::Column(base + calls.len(), ty)) else { unreachable!("srf_id matched a call") };
        calls.push((id, args));
        return;
    }
    for c in children_mut(e) {
        rewrite(c, base, calls);
    }
}

/// The select list and its set-returning calls, rewritten for the input row.
type Rewritten = (Vec<Expr>, Vec<(FuncId, Vec<Expr>)>);

pub struct ProjectSet<I> {
    input: I,
    exprs: Vec<Expr>,
    /// `exprs` rewritten for the input's row width (known at the first row).
    rewritten: Option<Rewritten>,
    row: Option<Vec<Value>>,
    iters: Vec<Option<SetIter>>,
    n: u64,
}

impl<I: RowIter> ProjectSet<I> {
    pub fn new(input: I, exprs: Vec<Expr>) -> ProjectSet<I> {
        ProjectSet { input, exprs, rewritten: None, row: None, iters: vec![], n: 0 }
    }
}

impl<I: RowIter> RowIter for ProjectSet<I> {
    fn next(&mut self, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        loop {
            if let (Some(row), Some((exprs, _))) = (&self.row, &self.rewritten) {
                let mut ext = row.clone();
                let mut any = false;
                for it in self.iters.iter_mut() {
                    match it.as_mut().and_then(|i| i.next()) {
                        Some(v) => {
                            any = true;
                            ext.push(v?);
                        }
                        None => {
                            *it = None;
                            ext.push(Value::Null);
                        }
                    }
                }
                if any {
                    self.n += 1;
                    if self.n.is_multiple_of(1024) {
                        ctx.env.check_interrupts()?;
                    }
                    let out = exprs.iter().map(|e| eval_pure(e, &ext, ctx.params, &[], ctx.env)).collect::<Result<_>>()?;
                    return Ok(Some(out));
                }
                self.row = None;
            }
            let Some(row) = self.input.next(ctx)? else { return Ok(None) };
            if self.rewritten.is_none() {
                let mut calls = Vec::new();
                let mut exprs = self.exprs.clone();
                for e in exprs.iter_mut() {
                    rewrite(e, row.len(), &mut calls);
                }
                self.rewritten = Some((exprs, calls));
            }
            let (_, calls) = self.rewritten.as_ref().expect("set above");
            self.iters.clear();
            for (id, args) in calls {
                let vals: Vec<Value> = args.iter().map(|a| eval_pure(a, &row, ctx.params, &[], ctx.env)).collect::<Result<_>>()?;
                self.iters.push(Some(call_set(*id, &vals)?));
            }
            self.row = Some(row);
        }
    }
}
