//! Column projection at the scans (issue 19): which columns of each base
//! table a SELECT reads, so that its scans deform only those.
//!
//! PostgreSQL computes, for each base relation, the attributes needed above
//! it (`attr_needed`, built by `build_base_rel_tlists` and the join clauses)
//! and a scan emits only those (its `reltarget`). Here the row layout is not
//! changed (a scan's row keeps one position per column, so no expression is
//! renumbered): a column nobody reads is `Value::Null`, neither decoded nor
//! detoasted ([`crate::rowio::ScanProj`], honoured by `rowio::deform_row`,
//! which every scan of a plan's table goes through: sequential, index, TID,
//! parameterized index probes).
//!
//! The walk, per query level (a [`Query`]):
//! 1. The level's needs: the columns of its row read by its own expressions
//!    (targets, hidden sort columns, filter, aggregates' arguments, FILTERs,
//!    ORDER BYs, GROUP BY keys, HAVING, LIMIT/OFFSET) and by any subquery
//!    nested in them (`OuterColumn` references that reach this level).
//! 2. Pushed down the level's FROM tree: a join splits the needs between its
//!    inputs at `lw` and adds what its condition, hash keys and input filters
//!    read; a table leaf records them. A table under the level directly gets
//!    the filter's columns as `read` only (PostgreSQL's scan width counts the
//!    columns it outputs, not those its quals alone read).
//! 3. Every nested query is a level of its own: a FROM subquery reached by
//!    step 2 with the outputs read above it needed ([`level_with`]), any
//!    other (set operations, recursive CTEs, a WindowAgg's input, sublinks)
//!    with all its targets needed.
//!
//! Conservative by construction: a table this walk does not reach keeps
//! `proj = None` (all columns); a level with a LATERAL item or a FROM
//! function reading outer columns pushes nothing (its tables read all
//! columns). Only read-only statements are projected (a SELECT without FOR
//! UPDATE/SHARE, also under EXPLAIN): DML and row locking keep full rows.

use std::sync::Arc;

use crate::plan::{Expr, Query, Source};
use crate::rowio::ScanProj;
use crate::subquery::{visit_expr, walk_expr};

/// A set of column positions.
#[derive(Clone, Debug, Default)]
struct Cols(Vec<bool>);

impl Cols {
    fn add(&mut self, i: usize) {
        if i >= self.0.len() {
            self.0.resize(i + 1, false);
        }
        self.0[i] = true;
    }

    fn has(&self, i: usize) -> bool {
        self.0.get(i).copied().unwrap_or(false)
    }

    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().enumerate().filter(|(_, &b)| b).map(|(i, _)| i)
    }

    fn union(&mut self, o: &Cols) {
        for i in o.iter() {
            self.add(i);
        }
    }
}

/// The columns of a level's row that `exprs` (the level's own expressions)
/// read, for the join search's widths before the level is finished.
pub fn level_needs(exprs: &[&Expr]) -> Vec<bool> {
    let mut need = Cols::default();
    for e in exprs {
        read(e, &mut need);
    }
    need.0
}

/// Marks the table scans of `q`, a whole read-only statement.
pub fn project_statement(q: &mut Query) {
    level(q);
}

/// The columns of the current level's row that `e` reads, also from inside
/// its subqueries (an `OuterColumn` whose `levels_up` reaches this level).
fn read(e: &Expr, into: &mut Cols) {
    visit_expr(e, 0, true, &mut |e, d| match e {
        Expr::Column(i, _) if d == 0 => into.add(*i),
        Expr::OuterColumn { levels_up, index, .. } if d > 0 && *levels_up == d => into.add(*index),
        _ => {}
    });
}

/// The expressions a level evaluates over its source's row (or over its
/// grouped row, whose columns come from the source through the keys: reading
/// them as source columns only adds columns, which is safe).
fn level_exprs(q: &Query) -> Vec<&Expr> {
    let mut v: Vec<&Expr> = Vec::new();
    v.extend(q.targets.iter().map(|t| &t.expr));
    v.extend(q.hidden.iter());
    v.extend(q.limit.as_ref());
    v.extend(q.offset.as_ref());
    for a in &q.aggregates {
        v.extend(a.arg.as_ref());
        v.extend(a.filter.as_ref());
        v.extend(a.arg2.as_ref());
        v.extend(a.order.iter().map(|k| &k.expr));
    }
    if let Some(g) = &q.grouping {
        v.extend(g.keys.iter());
        v.extend(g.having.as_ref());
    }
    v
}

fn level(q: &mut Query) {
    level_with(q, None);
}

/// One level; `used`: the columns of its output the level above reads (a
/// subquery in FROM), `None`: all of them. An output column nobody reads
/// adds nothing to the level's needs (its expression still runs, over NULLs
/// where its columns were not read), unless the level's rows depend on it:
/// DISTINCT, a set-returning function among the targets, an ORDER BY key.
fn level_with(q: &mut Query, used: Option<&Cols>) {
    let used = used.filter(|_| q.distinct.is_none() && !q.targets.iter().any(|t| crate::project_set::contains_srf(&t.expr)));
    let mut need = Cols::default();
    for (i, t) in q.targets.iter().enumerate() {
        // ORDER BY keys name output columns: they are read by the sort.
        if used.is_none_or(|u| u.has(i)) || q.order.iter().any(|k| k.column == i) {
            read(&t.expr, &mut need);
        }
    }
    for e in level_exprs(q).into_iter().skip(q.targets.len()) {
        read(e, &mut need);
    }
    let mut filter = Cols::default();
    if let Some(f) = &q.filter {
        read(f, &mut filter);
    }
    let pushed = pushable(&q.source);
    if pushed {
        match &mut q.source {
            Source::Table(_) => push(&mut q.source, &need, &filter),
            src => {
                need.union(&filter);
                push(src, &need, &Cols::default());
            }
        }
    }
    nested_levels(q, pushed);
}

/// Whether the needs of a level may be pushed into its FROM tree: no item of
/// it reads another item's row (LATERAL), whose columns this walk would have
/// to follow through the binding of outer references.
fn pushable(s: &Source) -> bool {
    match s {
        Source::Join(j) => !j.lateral && pushable(&j.left) && pushable(&j.right),
        Source::Function(_) | Source::Series(..) | Source::Values(_) => {
            let mut outer = false;
            visit_source_exprs(s, &mut |e| {
                visit_expr(e, 0, true, &mut |e, d| {
                    outer |= matches!(e, Expr::OuterColumn { levels_up, .. } if *levels_up > d)
                })
            });
            !outer
        }
        _ => true,
    }
}

/// The expressions held directly by a FROM function, series or VALUES item.
fn visit_source_exprs(s: &Source, f: &mut dyn FnMut(&Expr)) {
    match s {
        Source::Series(a, b, _) => {
            f(a);
            f(b);
        }
        Source::Function(scan) => {
            f(&scan.start);
            f(&scan.stop);
            scan.step.iter().for_each(&mut *f);
            scan.unnest.iter().for_each(&mut *f);
            if let Some(func) = &scan.func {
                func.args.iter().for_each(&mut *f);
            }
        }
        Source::Values(rows) => rows.iter().flatten().for_each(f),
        _ => {}
    }
}

/// Records `out` (read above) and `own` (read by the input's own filter) on
/// the tables of `s`'s FROM tree.
fn push(s: &mut Source, out: &Cols, own: &Cols) {
    match s {
        Source::Table(t) => {
            let n = t.columns.len();
            // A column index past the table's width would be a walk that lost
            // track of the row layout: keep the whole row then.
            let lost = out.0.len() > n || own.0.len() > n;
            let read: Vec<bool> = (0..n).map(|i| out.has(i) || own.has(i)).collect();
            let out: Vec<bool> = (0..n).map(|i| out.has(i)).collect();
            t.storage.proj = if lost || out.iter().all(|&o| o) {
                None
            } else {
                Some(Arc::new(ScanProj { read, out }))
            };
        }
        Source::Join(j) => {
            let (lw, rw) = (j.lw, j.rw);
            let width = if j.kind.left_only() { lw } else { lw + rw };
            let (mut l, mut r) = (Cols::default(), Cols::default());
            let split = |c: &Cols, l: &mut Cols, r: &mut Cols| {
                for i in c.iter() {
                    if i < lw {
                        l.add(i);
                    } else {
                        r.add(i - lw);
                    }
                }
            };
            let mut above = Cols::default();
            for i in out.iter().chain(own.iter()) {
                above.add(i);
            }
            if above.iter().any(|i| i >= width) {
                // Out of the join's row: do not guess, read everything below.
                let all_l = all(lw);
                let all_r = all(rw);
                push(&mut j.left, &all_l, &Cols::default());
                push(&mut j.right, &all_r, &Cols::default());
                return;
            }
            j.plan.out = Some((0..width).map(|i| above.has(i)).collect());
            split(&above, &mut l, &mut r);
            if let Some(c) = &j.cond {
                let mut cc = Cols::default();
                read(c, &mut cc);
                split(&cc, &mut l, &mut r);
            }
            if let Some((lk, rk)) = &j.hash {
                for e in lk {
                    read(e, &mut l);
                }
                for e in rk {
                    read(e, &mut r);
                }
            }
            let (mut lf, mut rf) = (Cols::default(), Cols::default());
            if let Some(f) = &j.left_filter {
                read(f, &mut lf);
            }
            if let Some(f) = &j.right_filter {
                read(f, &mut rf);
            }
            push_input(&mut j.left, &l, &lf);
            push_input(&mut j.right, &r, &rf);
        }
        Source::Subquery(q) => {
            let mut used = out.clone();
            used.union(own);
            level_with(q, Some(&used));
        }
        _ => {}
    }
}

/// A join input: a table keeps its filter's columns apart (read, not
/// output); any other input reads them as part of its row.
fn push_input(s: &mut Source, out: &Cols, own: &Cols) {
    if matches!(s, Source::Table(_)) {
        push(s, out, own);
    } else {
        let mut both = out.clone();
        both.union(own);
        push(s, &both, &Cols::default());
    }
}

fn all(n: usize) -> Cols {
    Cols(vec![true; n])
}

/// Runs [`level`] on every query nested in `q`: in its FROM tree and in the
/// expressions of the level and of its joins.
/// `pushed`: the level's FROM subqueries were planned by [`push`] already.
fn nested_levels(q: &mut Query, pushed: bool) {
    let mut exprs: Vec<&mut Expr> = Vec::new();
    exprs.extend(q.filter.as_mut());
    exprs.extend(q.targets.iter_mut().map(|t| &mut t.expr));
    exprs.extend(q.hidden.iter_mut());
    exprs.extend(q.limit.as_mut());
    exprs.extend(q.offset.as_mut());
    for a in q.aggregates.iter_mut() {
        exprs.extend(a.arg.as_mut());
        exprs.extend(a.filter.as_mut());
        exprs.extend(a.arg2.as_mut());
        exprs.extend(a.order.iter_mut().map(|k| &mut k.expr));
    }
    if let Some(g) = q.grouping.as_mut() {
        exprs.extend(g.keys.iter_mut());
        exprs.extend(g.having.as_mut());
    }
    for e in exprs {
        sublinks(e);
    }
    source_levels(&mut q.source, pushed);
}

/// [`level`] on the query of every subquery expression in `e` (not
/// descending further: `level` does that for each).
fn sublinks(e: &mut Expr) {
    walk_expr(e, 0, false, &mut |e, _| {
        if let Expr::SubPlan(sp) = e {
            level(&mut sp.query);
        }
    });
}

fn source_levels(s: &mut Source, pushed: bool) {
    match s {
        Source::Join(j) => {
            for e in [&mut j.cond, &mut j.left_filter, &mut j.right_filter].into_iter().flatten() {
                sublinks(e);
            }
            if let Some((l, r)) = j.hash.as_mut() {
                l.iter_mut().chain(r.iter_mut()).for_each(sublinks);
            }
            source_levels(&mut j.left, pushed);
            source_levels(&mut j.right, pushed);
        }
        Source::Subquery(q) if !pushed => level(q),
        Source::Subquery(_) => {}
        Source::SetOp(s) => {
            level(&mut s.left);
            level(&mut s.right);
        }
        Source::Recursive(r) => {
            level(&mut r.base);
            level(&mut r.step);
        }
        Source::WindowAgg(w) => level(&mut w.input),
        Source::OneRow | Source::Table(_) | Source::Virtual(_) | Source::WorkTable(_) | Source::Series(..) | Source::Function(_) | Source::Values(_) => {}
    }
}

/// The `width` of a scan of `t` as PostgreSQL estimates it: the sum of the
/// average widths of the columns the scan outputs (`width_of` gives one
/// column's), all columns when the scan is not projected.
pub fn scan_width(t: &crate::catalog::Table, width_of: &dyn Fn(usize) -> f64) -> f64 {
    (0..t.columns.len()).filter(|&i| t.storage.proj.as_ref().is_none_or(|p| p.out.get(i).copied().unwrap_or(true))).map(width_of).sum()
}
