//! Subqueries in expressions (PostgreSQL's SubPlan): scalar `(SELECT ...)`,
//! `EXISTS (...)`, `x IN (SELECT ...)`, `x op ANY/ALL (SELECT ...)`, and the
//! outer-column references of correlated subqueries and LATERAL items.
//!
//! A subquery is a whole [`Query`] one level below the query that holds it.
//! A column of an enclosing level is [`Expr::OuterColumn`] `{ levels_up, index }`
//! (`levels_up` counted from the query the reference is in). Before a
//! correlated subquery runs for one row of its parent, the parent's row is
//! bound into a copy of it ([`bind_outer`]: every `OuterColumn` that points
//! at that level becomes a constant), so the subquery runs as an ordinary
//! query. An uncorrelated subquery (one that reads no enclosing level) is run
//! once per execution of the query that holds it (PostgreSQL's InitPlan:
//! [`init_plans`] fills in its rows before the query runs).
//!
//! Evaluation happens inside [`crate::exec::eval_pure`], which calls
//! [`crate::exec::Env::run_subplan`]; [`crate::exec::Ctx`] implements it, so
//! the operators that evaluate expressions with the context as their `Env`
//! (Filter, Project, joins, grouping) run subqueries. Semantics, as SQL and
//! PostgreSQL define them:
//!
//! - scalar: no row gives NULL, more than one row is 21000;
//! - `EXISTS`: true if the subquery returns a row;
//! - `x op ANY (...)`: true if some comparison is true, else NULL if some is
//!   NULL, else false (`x IN (...)` is `x = ANY (...)`, NOT IN its negation:
//!   `1 NOT IN (SELECT NULL)` is NULL);
//! - `x op ALL (...)`: false if some comparison is false, else NULL if some is
//!   NULL, else true (true over no rows).

use ferrogres_datum::errors::{Result, SqlError};
use crate::exec::{eval_pure, run_query, Ctx};
use crate::plan::{Expr, Query, Source};
use ferrogres_datum::types::{Type, Value};
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubKind {
    Exists,
    /// A scalar subquery (one column, at most one row).
    Expr,
    Any,
    All,
    /// `ARRAY(subquery)`: the one column's values as an array (empty: `{}`).
    Array,
}

#[derive(Clone, Debug)]
pub struct SubPlan {
    pub kind: SubKind,
    pub query: Query,
    /// ANY/ALL: the left operand, over the row of the query holding the subquery.
    pub lhs: Option<Expr>,
    /// ANY/ALL: the comparison over the two-column row [lhs value, subquery value].
    pub cmp: Option<Expr>,
    /// Reads a column of an enclosing level: re-run for each row.
    pub correlated: bool,
    pub ty: Type,
    /// An uncorrelated subquery's rows for one execution of the statement or
    /// query holding it (PostgreSQL's InitPlan): the cell is installed in a
    /// copy of the plan when that execution starts ([`init_plans`],
    /// [`statement_init_plans`]) and filled at the first evaluation, so the
    /// subquery runs at most once, and not at all if no row needs it.
    pub rows: Option<InitRows>,
    /// Row-valued ANY/ALL (`(a, b) IN (SELECT x, y ...)`): the left row's
    /// items; then `lhs` is None and `cmp` reads [items..., subquery columns...]
    /// (`analyze::row_compare`).
    pub row_lhs: Vec<Expr>,
}

/// The rows of an uncorrelated subquery for one execution, computed at its
/// first use (shared by the copies of the plan made during that execution).
#[derive(Clone, Debug, Default)]
pub struct InitRows(Arc<std::sync::Mutex<Option<Rows>>>);

/// A subquery's rows, shared.
type Rows = Arc<Vec<Vec<Value>>>;

impl InitRows {
    fn get(&self) -> Option<Rows> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set(&self, rows: Rows) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(rows);
    }
}

/// The direct subexpressions of `e` at the same query level (a SubPlan's
/// left operand; not its comparison, which reads its own two-column row).
pub fn children_mut(e: &mut Expr) -> Vec<&mut Expr> {
    match e {
        Expr::Const(..) | Expr::Column(..) | Expr::Param(..) | Expr::AggRef(..) | Expr::OuterColumn { .. } | Expr::OuterAggRef { .. } => vec![],
        Expr::Cast { arg, .. } | Expr::Neg(arg, _) | Expr::Not(arg) | Expr::IsNull { arg, .. } => vec![arg],
        Expr::Arith { l, r, .. } | Expr::Compare { l, r, .. } | Expr::Concat(l, r) | Expr::Distinct { l, r, .. } => vec![l, r],
        Expr::And(v) | Expr::Or(v) | Expr::Func { args: v, .. } | Expr::Coalesce(v, _) | Expr::MinMax { args: v, .. } => v.iter_mut().collect(),
        Expr::Case { whens, default, .. } => {
            let mut out: Vec<&mut Expr> = whens.iter_mut().flat_map(|(c, r)| [c, r]).collect();
            out.push(default);
            out
        }
        Expr::NullIf { arg, eq } => vec![arg, eq],
        Expr::Like { arg, pat, escape, .. } => {
            let mut out: Vec<&mut Expr> = vec![arg, pat];
            out.extend(escape.as_deref_mut());
            out
        }
        Expr::SubPlan(sp) => sp.lhs.iter_mut().chain(sp.row_lhs.iter_mut()).collect(),
    }
}

/// The tree walks, generated twice from one text: `walk_*` over `&mut` trees (to
/// rewrite them) and `visit_*` over shared ones (to read them without a clone).
/// Both reach exactly the same nodes, so a reader cannot miss what a rewriter sees.
macro_rules! tree_walks {
    ($walk_expr:ident, $walk_query:ident, $walk_source:ident, $children:path, $as:ident, $iter:ident, $($r:tt)+) => {
        /// Calls `f` on every node of `e` (parents first), with the query depth it is
        /// at relative to where the walk started; with `descend`, also inside the
        /// queries of subplans (at `depth + 1`).
        pub fn $walk_expr(e: $($r)+ Expr, depth: usize, descend: bool, f: &mut dyn FnMut($($r)+ Expr, usize)) {
            f(e, depth);
            if descend {
                if let Expr::SubPlan(sp) = e {
                    $walk_query($($r)+ sp.query, depth + 1, true, f);
                }
            }
            for c in $children(e) {
                $walk_expr(c, depth, descend, f);
            }
        }

        /// Calls `f` on every expression of `q` at `depth` (and, with `descend`, of
        /// every query nested in it, at their depths).
        pub fn $walk_query(q: $($r)+ Query, depth: usize, descend: bool, f: &mut dyn FnMut($($r)+ Expr, usize)) {
            let mut exprs: Vec<$($r)+ Expr> = Vec::new();
            exprs.extend(q.filter.$as());
            exprs.extend(q.targets.$iter().map(|t| $($r)+ t.expr));
            exprs.extend(q.hidden.$iter());
            exprs.extend(q.limit.$as());
            exprs.extend(q.offset.$as());
            for a in q.aggregates.$iter() {
                exprs.extend(a.arg.$as());
                exprs.extend(a.filter.$as());
                exprs.extend(a.arg2.$as());
                exprs.extend(a.order.$iter().map(|k| $($r)+ k.expr));
            }
            if let Some(g) = q.grouping.$as() {
                exprs.extend(g.keys.$iter());
                exprs.extend(g.having.$as());
            }
            for e in exprs {
                $walk_expr(e, depth, descend, f);
            }
            $walk_source($($r)+ q.source, depth, descend, f);
        }

        fn $walk_source(s: $($r)+ Source, depth: usize, descend: bool, f: &mut dyn FnMut($($r)+ Expr, usize)) {
            match s {
                Source::OneRow | Source::Table(_) | Source::Virtual(_) | Source::WorkTable(_) => {}
                Source::Series(a, b, _) => {
                    $walk_expr(a, depth, descend, f);
                    $walk_expr(b, depth, descend, f);
                }
                Source::Function(scan) => {
                    $walk_expr($($r)+ scan.start, depth, descend, f);
                    $walk_expr($($r)+ scan.stop, depth, descend, f);
                    if let Some(s) = scan.step.$as() {
                        $walk_expr(s, depth, descend, f);
                    }
                    if let Some(u) = scan.unnest.$as() {
                        $walk_expr(u, depth, descend, f);
                    }
                    if let Some(func) = scan.func.$as() {
                        for e in func.args.$iter() {
                            $walk_expr(e, depth, descend, f);
                        }
                    }
                }
                Source::Join(j) => {
                    for e in [$($r)+ j.cond, $($r)+ j.left_filter, $($r)+ j.right_filter].into_iter().flatten() {
                        $walk_expr(e, depth, descend, f);
                    }
                    if let Some((l, r)) = j.hash.$as() {
                        for e in l.$iter().chain(r.$iter()) {
                            $walk_expr(e, depth, descend, f);
                        }
                    }
                    $walk_source($($r)+ j.left, depth, descend, f);
                    $walk_source($($r)+ j.right, depth, descend, f);
                }
                Source::Values(rows) => {
                    for e in rows.$iter().flatten() {
                        $walk_expr(e, depth, descend, f);
                    }
                }
                Source::Subquery(q) => {
                    if descend {
                        $walk_query(q, depth + 1, true, f)
                    }
                }
                Source::SetOp(s) => {
                    if descend {
                        $walk_query($($r)+ s.left, depth + 1, true, f);
                        $walk_query($($r)+ s.right, depth + 1, true, f);
                    }
                }
                Source::Recursive(r) => {
                    if descend {
                        $walk_query($($r)+ r.base, depth + 1, true, f);
                        $walk_query($($r)+ r.step, depth + 1, true, f);
                    }
                }
                // The WindowAgg's input was analyzed at this level.
                Source::WindowAgg(w) => $walk_query($($r)+ w.input, depth, descend, f),
            }
        }
    };
}

tree_walks!(walk_expr, walk_query, walk_source, children_mut, as_mut, iter_mut, &mut);
tree_walks!(visit_expr, visit_query, visit_source, crate::grouping::children, as_ref, iter, &);

/// Whether `q` (a query one level below its parent) reads a column, or the
/// result of an aggregate, of a level above itself.
pub fn is_correlated(q: &Query) -> bool {
    let mut found = false;
    visit_query(q, 0, true, &mut |e, d| {
        if let Expr::OuterColumn { levels_up, .. } | Expr::OuterAggRef { levels_up, .. } = e {
            if *levels_up > d {
                found = true;
            }
        }
    });
    found
}

/// Whether `q` (a query one level below its parent) reads a column of its
/// parent's row.
pub fn reads_parent_row(q: &Query) -> bool {
    let mut found = false;
    visit_query(q, 0, true, &mut |e, d| found |= matches!(e, Expr::OuterColumn { levels_up, .. } if *levels_up == d + 1));
    found
}

/// Binds `row`, a row of the level just above `q`, and `aggs`, that level's
/// aggregate results for the row's group, into `q`: each reference to that
/// level becomes a constant.
pub fn bind_outer(q: &mut Query, row: &[Value], aggs: &[Value]) {
    walk_query(q, 0, true, &mut |e, d| match e {
        Expr::OuterColumn { levels_up, index, ty } if *levels_up == d + 1 => {
            *e = Expr::Const(row.get(*index).cloned().unwrap_or(Value::Null), *ty);
        }
        Expr::OuterAggRef { levels_up, index, ty } if *levels_up == d + 1 => {
            *e = Expr::Const(aggs.get(*index).cloned().unwrap_or(Value::Null), *ty);
        }
        _ => {}
    });
    // A subquery nested in `q` that read only levels now bound is no longer
    // correlated: it runs once per run of its parent (an InitPlan), not once
    // per row of it. (`select (select f(a1.x, (select g(a2.y) from a3)) from
    // a1) from a2` would otherwise rescan a3 for every row of a1.)
    walk_query(q, 0, true, &mut |e, _| {
        if let Expr::SubPlan(sp) = e {
            if sp.correlated && !is_correlated(&sp.query) {
                sp.correlated = false;
            }
        }
    });
}

/// Shifts the columns of the current level read by `e` (also from inside its
/// subqueries) by `delta` (a conjunct moved to one input of a join).
pub fn shift_columns(e: &mut Expr, delta: isize) {
    walk_expr(e, 0, true, &mut |e, d| match e {
        Expr::Column(i, _) if d == 0 => *i = (*i as isize + delta) as usize,
        Expr::OuterColumn { levels_up, index, .. } if d > 0 && *levels_up == d => *index = (*index as isize + delta) as usize,
        _ => {}
    });
}

/// Renumbers the columns of the current level read by `e` (also from inside
/// its subqueries): column `i` becomes `f(i)`.
pub fn map_columns(e: &mut Expr, f: &dyn Fn(usize) -> usize) {
    walk_expr(e, 0, true, &mut |e, d| match e {
        Expr::Column(i, _) if d == 0 => *i = f(*i),
        Expr::OuterColumn { levels_up, index, .. } if d > 0 && *levels_up == d => *index = f(*index),
        _ => {}
    });
}

/// The columns of the current level that `e` reads (also from inside its subqueries).
pub fn columns_read(e: &Expr) -> Vec<usize> {
    let mut out = Vec::new();
    visit_expr(e, 0, true, &mut |e, d| match e {
        Expr::Column(i, _) if d == 0 => out.push(*i),
        Expr::OuterColumn { levels_up, index, .. } if d > 0 && *levels_up == d => out.push(*index),
        _ => {}
    });
    out
}

/// Whether `e` holds a subquery.
pub fn has_subplan(e: &Expr) -> bool {
    let mut found = false;
    visit_expr(e, 0, false, &mut |e, _| found |= matches!(e, Expr::SubPlan(_)));
    found
}

/// InitPlans: a copy of `q` in which each uncorrelated subquery of its level
/// gets the cell its rows go to at its first evaluation (once for this run of
/// `q`), or `None` when it has none.
pub fn init_plans(q: &Query, _ctx: &mut Ctx) -> Result<Option<Query>> {
    // Checked without copying the plan, once per plan: this runs before every query.
    if !q.init_plans.get(|| level_has_init_plan(q)) {
        return Ok(None);
    }
    let mut probe = q.clone();
    walk_query(&mut probe, 0, false, &mut install_init_rows);
    Ok(Some(probe))
}

fn install_init_rows(e: &mut Expr, _depth: usize) {
    if let Expr::SubPlan(sp) = e {
        if !sp.correlated && sp.rows.is_none() {
            sp.rows = Some(InitRows::default());
        }
    }
}

/// The expressions a data-modifying statement evaluates at its own level, per
/// target or source row: WHERE, SET, VALUES rows, RETURNING, the row built
/// from INSERT ... SELECT's output, ON CONFLICT's SET and WHERE, MERGE's ON,
/// conditions and actions. (Their FROM/USING/source queries run through
/// [`run_query`], which has InitPlans of its own.)
macro_rules! dml_exprs {
    ($name:ident, $as:ident, $iter:ident, $($r:tt)+) => {
        fn $name(st: $($r)+ crate::plan::Statement) -> Vec<$($r)+ Expr> {
            use crate::plan::Statement as S;
            let mut out: Vec<$($r)+ Expr> = Vec::new();
            match st {
                S::Delete { filter, returning, .. } => {
                    out.extend(filter.$as());
                    out.extend(returning.$iter().map(|t| $($r)+ t.expr));
                }
                S::Update { sets, filter, returning, .. } => {
                    out.extend(sets.$iter().map(|(_, e)| e));
                    out.extend(filter.$as());
                    out.extend(returning.$iter().map(|t| $($r)+ t.expr));
                }
                S::Insert { rows, returning, .. } => {
                    out.extend(rows.$iter().flatten());
                    out.extend(returning.$iter().map(|t| $($r)+ t.expr));
                }
                S::InsertSelect(i) => {
                    out.extend(i.row.$iter());
                    out.extend(i.returning.$iter().map(|t| $($r)+ t.expr));
                }
                S::Upsert(u) => {
                    match $($r)+ u.source {
                        crate::upsert::UpsertSource::Rows(rows) => out.extend(rows.$iter().flatten()),
                        crate::upsert::UpsertSource::Select { row, .. } => out.extend(row.$iter()),
                    }
                    if let crate::upsert::Action::Update { sets, filter } = $($r)+ u.action {
                        out.extend(sets.$iter().map(|(_, e)| e));
                        out.extend(filter.$as());
                    }
                    out.extend(u.returning.$iter().map(|t| $($r)+ t.expr));
                }
                S::JoinedDml(d) => {
                    out.extend(d.filter.$as());
                    if let crate::dml_join::JoinedAction::Update(sets) = $($r)+ d.action {
                        out.extend(sets.$iter().map(|(_, e)| e));
                    }
                    out.extend(d.returning.$iter().map(|t| $($r)+ t.expr));
                }
                S::Merge(m) => {
                    out.push($($r)+ m.on);
                    for w in m.matched.$iter().chain(m.not_matched.$iter()) {
                        out.extend(w.cond.$as());
                        match $($r)+ w.action {
                            crate::merge::MergeAction::Update(sets) => out.extend(sets.$iter().map(|(_, e)| e)),
                            crate::merge::MergeAction::Insert(row) => out.extend(row.$iter()),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
            out
        }
    };
}

dml_exprs!(dml_exprs, as_ref, iter, &);
dml_exprs!(dml_exprs_mut, as_mut, iter_mut, &mut);

/// InitPlans of a data-modifying statement (DELETE, UPDATE [FROM], INSERT,
/// ON CONFLICT, MERGE): a copy of `st` in which each uncorrelated subquery of
/// the statement's own level gets its [`InitRows`] cell, so it runs once per
/// execution instead of once per row; `None` when there is none. (Without
/// this, `DELETE FROM t WHERE id = (SELECT min(id) FROM u)` ran the subquery
/// for every row of `t`, and could use no index.)
pub fn statement_init_plans(st: &crate::plan::Statement) -> Option<crate::plan::Statement> {
    fn expr(e: &Expr) -> bool {
        matches!(e, Expr::SubPlan(sp) if !sp.correlated && sp.rows.is_none()) || crate::grouping::children(e).into_iter().any(expr)
    }
    if !dml_exprs(st).into_iter().any(expr) {
        return None;
    }
    let mut copy = st.clone();
    for e in dml_exprs_mut(&mut copy) {
        walk_expr(e, 0, false, &mut install_init_rows);
    }
    Some(copy)
}

/// The rows of `q` a subquery of `kind` needs: all of them, but one for
/// EXISTS and two for a scalar subquery (the second only to report 21000).
fn needed_rows(kind: SubKind, q: &Query, ctx: &mut Ctx) -> Result<Vec<Vec<Value>>> {
    match kind {
        SubKind::Exists => first_rows(q, 1, ctx),
        SubKind::Expr => first_rows(q, 2, ctx),
        _ => collect(q, ctx),
    }
}

/// Every row of `q`.
pub fn collect(q: &Query, ctx: &mut Ctx) -> Result<Vec<Vec<Value>>> {
    let mut it = run_query(q, ctx)?;
    crate::exec::drain(&mut it, ctx)
}

/// Evaluates subquery `sp` for `row` of the query holding it.
pub fn run(sp: &SubPlan, row: &[Value], params: &[Value], aggs: &[Value], ctx: &mut Ctx) -> Result<Value> {
    let lhs = match &sp.lhs {
        Some(e) => Some(eval_pure(e, row, params, aggs, ctx)?),
        None => None,
    };
    let row_lhs: Vec<Value> = sp.row_lhs.iter().map(|e| eval_pure(e, row, params, aggs, ctx)).collect::<Result<_>>()?;
    let owned;
    let shared;
    let rows: &[Vec<Value>] = match &sp.rows {
        Some(cell) => {
            shared = match cell.get() {
                Some(r) => r,
                None => {
                    let r = Arc::new(needed_rows(sp.kind, &sp.query, ctx)?);
                    cell.set(r.clone());
                    r
                }
            };
            &shared
        }
        None if sp.correlated => {
            let mut q = sp.query.clone();
            bind_outer(&mut q, row, aggs);
            owned = needed_rows(sp.kind, &q, ctx)?;
            &owned
        }
        None => {
            owned = needed_rows(sp.kind, &sp.query, ctx)?;
            &owned
        }
    };
    Ok(match sp.kind {
        SubKind::Exists => Value::Bool(!rows.is_empty()),
        SubKind::Expr => match rows {
            [] => Value::Null,
            [r] => r.first().cloned().unwrap_or(Value::Null),
            _ => return Err(SqlError::new(b"21000", "more than one row returned by a subquery used as an expression")),
        },
        SubKind::Array => {
            let Type::Array(elem) = sp.ty else { return Err(SqlError::internal("ARRAY subquery of a non-array type")) };
            let items = rows.iter().map(|r| r.first().cloned().unwrap_or(Value::Null)).collect();
            Value::Array(Box::new(ferrogres_datum::array::Array::new(*elem, items)))
        }
        SubKind::Any | SubKind::All => {
            let any = sp.kind == SubKind::Any;
            let lhs = lhs.unwrap_or(Value::Null);
            let cmp = sp.cmp.as_ref().ok_or_else(|| SqlError::internal("ANY/ALL without comparison"))?;
            let mut saw_null = false;
            for r in rows {
                let pair = if row_lhs.is_empty() {
                    vec![lhs.clone(), r.first().cloned().unwrap_or(Value::Null)]
                } else {
                    row_lhs.iter().chain(r.iter()).cloned().collect()
                };
                match eval_pure(cmp, &pair, params, &[], ctx)? {
                    Value::Bool(b) if b == any => return Ok(Value::Bool(any)),
                    Value::Null => saw_null = true,
                    _ => {}
                }
            }
            if saw_null { Value::Null } else { Value::Bool(!any) }
        }
    })
}

/// The first `n` rows of `q` (EXISTS needs one, a scalar subquery two).
fn first_rows(q: &Query, n: usize, ctx: &mut Ctx) -> Result<Vec<Vec<Value>>> {
    let mut it = run_query(q, ctx)?;
    let mut rows = Vec::new();
    while rows.len() < n {
        match it.next(ctx)? {
            Some(r) => rows.push(r),
            None => break,
        }
    }
    Ok(rows)
}

/// Every table a query reads, anywhere in its tree (for relation locks).
/// Names are borrowed from the plan where the walk allows.
pub fn tables_of(q: &Query) -> Vec<(u32, std::borrow::Cow<'_, str>)> {
    use std::borrow::Cow;
    let mut out = Vec::new();
    fn source<'q>(s: &'q Source, out: &mut Vec<(u32, Cow<'q, str>)>) {
        match s {
            Source::Table(t) => out.push((t.oid, Cow::Borrowed(t.name.as_str()))),
            Source::Join(j) => {
                source(&j.left, out);
                source(&j.right, out);
            }
            Source::Subquery(q) => query(q, out),
            Source::SetOp(s) => {
                query(&s.left, out);
                query(&s.right, out);
            }
            Source::Recursive(r) => {
                query(&r.base, out);
                query(&r.step, out);
            }
            Source::WindowAgg(w) => query(&w.input, out),
            _ => {}
        }
    }
    fn query<'q>(q: &'q Query, out: &mut Vec<(u32, Cow<'q, str>)>) {
        source(&q.source, out);
        visit_query(q, 0, false, &mut |e, _| {
            if let Expr::SubPlan(sp) = e {
                // The walk lends `e` only for the call: names found below are copied.
                let mut inner = Vec::new();
                query(&sp.query, &mut inner);
                out.extend(inner.into_iter().map(|(oid, n)| (oid, Cow::Owned(n.into_owned()))));
            }
        });
    }
    query(q, &mut out);
    out
}

/// Whether an expression of `q`'s level holds an uncorrelated subquery not yet run.
fn level_has_init_plan(q: &Query) -> bool {
    fn expr(e: &Expr) -> bool {
        matches!(e, Expr::SubPlan(sp) if !sp.correlated && sp.rows.is_none()) || crate::grouping::children(e).into_iter().any(expr)
    }
    fn source(s: &Source) -> bool {
        match s {
            Source::Series(a, b, _) => expr(a) || expr(b),
            Source::Function(f) => expr(&f.start) || expr(&f.stop) || f.step.as_ref().is_some_and(expr),
            Source::Join(j) => {
                [&j.cond, &j.left_filter, &j.right_filter].into_iter().flatten().any(expr)
                    || j.hash.as_ref().is_some_and(|(l, r)| l.iter().chain(r).any(expr))
                    || source(&j.left)
                    || source(&j.right)
            }
            Source::Values(rows) => rows.iter().flatten().any(expr),
            _ => false,
        }
    }
    q.filter.as_ref().is_some_and(expr)
        || q.targets.iter().any(|t| expr(&t.expr))
        || q.hidden.iter().any(expr)
        || q.limit.as_ref().is_some_and(expr)
        || q.offset.as_ref().is_some_and(expr)
        || q.aggregates.iter().any(|a| a.arg.as_ref().is_some_and(expr) || a.filter.as_ref().is_some_and(expr))
        || q.aggregates.iter().any(|a| a.arg2.as_ref().is_some_and(expr) || a.order.iter().any(|k| expr(&k.expr)))
        || q.grouping.as_ref().is_some_and(|g| g.keys.iter().any(expr) || g.having.as_ref().is_some_and(expr))
        || source(&q.source)
}
