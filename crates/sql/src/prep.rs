//! The optimizer's preprocessing of one query level, after analysis and
//! before execution (PostgreSQL's `optimizer/prep`: `pull_up_sublinks` and
//! `canonicalize_qual`, plus one step PostgreSQL 15 does not take, the
//! decorrelation of scalar subqueries over aggregates). It rewrites the
//! query's source and WHERE; the result is an ordinary [`Query`] whose joins
//! [`crate::join`] runs.
//!
//! Three rewrites, in this order, over the top-level AND of WHERE:
//!
//! 1. **Decorrelation of scalar aggregate subqueries.** A correlated
//!    `(SELECT f(aggs) FROM s WHERE s.a = outer.x AND ... AND local)`,
//!    whose correlation is only equalities between an expression of the
//!    subquery's row and one of the outer row, becomes a LEFT hash join of
//!    the outer source with `SELECT f(aggs), s.a, ... FROM s WHERE local
//!    GROUP BY s.a, ...`, computed once. The subquery is replaced by
//!    `CASE WHEN <key column> IS NOT NULL THEN <f column> ELSE f(empty) END`:
//!    an outer row with no group (or a NULL key, which `=` never matches)
//!    gets the value over no rows, where count is 0 and every other aggregate
//!    NULL (so `count(*) + 1` gives 1, `0.2 * avg(x)` NULL). A matched group
//!    has non-null keys, so the key column tells the two cases apart. The
//!    left join keeps each outer row exactly once, because the groups' keys
//!    are distinct under the same comparison the join uses.
//! 2. **Sublink pull-up.** `EXISTS (correlated subquery)` becomes a semi-join
//!    and `NOT EXISTS` an anti-join of the outer source with the subquery's
//!    source: the subquery's conjuncts that read the outer row become the
//!    join condition (its equalities the hash keys), the others filter the
//!    inner side. `x IN (uncorrelated subquery)` becomes a semi-join with
//!    the subquery as the inner side and `x = column` as the condition.
//!    `NOT IN` is left alone (its NULL semantics are not an anti-join's:
//!    `1 NOT IN (SELECT NULL)` is NULL, and PostgreSQL converts it only when
//!    both sides are provably non-null, which we do not prove yet).
//!    A semi- or anti-join whose condition reads one table of the level's
//!    tree of inner joins is placed on that table, below the joins
//!    ([`push_down`]).
//! 3. **OR factoring** ([`conjuncts_factored`], also used by
//!    [`crate::join::place_conditions`] for ON conditions): a conjunct common
//!    to every branch of an OR is pulled out of it, `(A AND B) OR (A AND C)`
//!    = `A AND (B OR C)` (true in SQL's three-valued logic as well), so an
//!    equality repeated in each branch becomes a join's hash key.
//!
//! A subquery is pulled up only when it has the plain shape the join needs
//! (below, `pullable_*`); otherwise it stays an [`Expr::SubPlan`] run per
//! outer row ([`crate::subquery`]), which is always correct. Notably: the
//! correlation must have at least one equality (else a per-row subplan is
//! no worse than a nested loop), the correlated conjuncts must hold no
//! subqueries and read no level above the parent, and the subquery's
//! source must not read the parent (a LATERAL-like dependency).
//!
//! A semi- or anti-join keeps the width of its left row, so the columns the
//! rest of the query reads do not move; a decorrelating left join appends
//! its columns after the source row, which only the replacing CASE reads.
//!
//! The level is rewritten only for plain SELECTs (not FOR UPDATE/SHARE,
//! whose rows must come from one table).

use crate::catalog::Table;
use crate::grouping::Grouping;
use crate::join::{and_of, conjuncts, place_conditions, Join, JoinKind};
use crate::plan::{AggKind, CmpOp, Expr, Query, Source, Target};
use crate::subquery::{children_mut, has_subplan, is_correlated, visit_expr, SubKind, SubPlan};
use ferrogres_datum::types::Value;

/// Rewrites query level `q`, whose source row is `width` columns wide:
/// decorrelates scalar aggregate subqueries of its WHERE and pulls its
/// EXISTS / NOT EXISTS / IN conjuncts up into semi- and anti-joins.
pub fn pull_up_sublinks(q: &mut Query, width: usize) {
    let Some(filter) = q.filter.take() else { return };
    let mut quals = Vec::new();
    conjuncts_factored(filter, &mut quals);
    if !quals.iter().any(has_subplan) {
        q.filter = and_of(quals);
        return;
    }
    let mut width = width;
    let mut changed = false;
    for qual in quals.iter_mut() {
        changed |= decorrelate_scalars(qual, &mut q.source, &mut width);
    }
    let mut rest = Vec::new();
    for qual in quals {
        match pull_up_one(qual, width) {
            Ok((kind, right, cond, right_filter, rw)) => {
                let (right, cond, right_filter) = match push_down(&mut q.source, width, kind, right, cond, right_filter, rw) {
                    Ok(()) => {
                        changed = true;
                        continue;
                    }
                    Err(back) => *back,
                };
                let left = std::mem::replace(&mut q.source, Source::OneRow);
                q.source = Source::Join(Box::new(Join {
                    kind,
                    left,
                    right,
                    left_filter: None,
                    right_filter,
                    cond: Some(cond),
                    hash: None,
                    lw: width,
                    rw,
                    lateral: false,
                    plan: Default::default(),
                }));
                changed = true;
            }
            Err(qual) => rest.push(qual),
        }
    }
    q.filter = if changed { place_conditions(&mut q.source, and_of(rest)) } else { and_of(rest) };
}

/// A semi- or anti-join's parts not yet placed: its inner source, condition
/// and inner filter.
type SemiParts = (Source, Expr, Option<Expr>);

/// Places a semi- or anti-join on the one leaf of the level's tree of inner
/// joins whose columns its condition reads (PostgreSQL's planner reaches the
/// same by letting the join search place semi-joins): `(a ⋈ b ⋈ c) ⋉ s` on
/// `b.x = s.y` becomes `a ⋈ (b ⋉ s) ⋈ c`. Both filter `b`'s rows by a test
/// of `b`'s row alone, and an inner join passes each such row on unchanged,
/// so the rows are the same; but the filter now runs before the joins
/// multiply the rows (TPC-H Q18: 57 orders instead of 600,000 joined rows).
/// A semi- or anti-join keeps its left row's width, so no column of the tree
/// moves; the condition's columns are renumbered onto the leaf (left) and
/// after it (right). Only inner, non-LATERAL joins are descended (a filter
/// moved under an outer join's nullable side would change its result), and
/// a condition that reads no left column (an uncorrelated EXISTS) stays on
/// top. Err gives the parts back when no such leaf exists.
fn push_down(source: &mut Source, width: usize, kind: JoinKind, right: Source, cond: Expr, right_filter: Option<Expr>, rw: usize) -> Result<(), Box<SemiParts>> {
    let left_cols: Vec<usize> = crate::subquery::columns_read(&cond).into_iter().filter(|&c| c < width).collect();
    let (Some(&lo), Some(&hi)) = (left_cols.iter().min(), left_cols.iter().max()) else { return Err(Box::new((right, cond, right_filter))) };
    if !matches!(source, Source::Join(j) if j.kind == JoinKind::Inner && !j.lateral) || has_subplan(&cond) {
        return Err(Box::new((right, cond, right_filter)));
    }
    let Some((at, off, w)) = leaf_at(source, 0, width, lo, hi) else { return Err(Box::new((right, cond, right_filter))) };
    let mut cond = cond;
    crate::subquery::map_columns(&mut cond, &|c| if c < width { c - off } else { c - width + w });
    let leaf = std::mem::replace(at, Source::OneRow);
    *at = Source::Join(Box::new(Join {
        kind,
        left: leaf,
        right,
        left_filter: None,
        right_filter,
        cond: Some(cond),
        hash: None,
        lw: w,
        rw,
        lateral: false,
        plan: Default::default(),
    }));
    Ok(())
}

/// The leaf of a tree of inner joins (starting at column `off`, `w` wide)
/// that holds columns `lo..=hi`: (the leaf, its first column, its width).
fn leaf_at(s: &mut Source, off: usize, w: usize, lo: usize, hi: usize) -> Option<(&mut Source, usize, usize)> {
    if !matches!(s, Source::Join(j) if j.kind == JoinKind::Inner && !j.lateral) {
        return Some((s, off, w));
    }
    let Source::Join(j) = s else { unreachable!("checked above") };
    let (lw, rw) = (j.lw, j.rw);
    if hi < off + lw {
        leaf_at(&mut j.left, off, lw, lo, hi)
    } else if lo >= off + lw {
        leaf_at(&mut j.right, off + lw, rw, lo, hi)
    } else {
        None
    }
}

/// Splits `e` into its AND-ed conjuncts, factoring each OR among them: the
/// conjuncts found in every branch of the OR are returned on their own, and
/// the OR of what remains of the branches after them (nothing, if a branch
/// had only common conjuncts: the OR is then implied). Conjuncts are compared
/// by their debug form, as GROUP BY expressions are
/// ([`crate::grouping::ungrouped_column`]); those holding a subquery are
/// never factored.
pub fn conjuncts_factored(e: Expr, out: &mut Vec<Expr>) {
    let mut flat = Vec::new();
    conjuncts(e, &mut flat);
    for c in flat {
        match c {
            Expr::Or(branches) if branches.len() > 1 => factor_or(branches, out),
            c => out.push(c),
        }
    }
}

fn factor_or(branches: Vec<Expr>, out: &mut Vec<Expr>) {
    let lists: Vec<Vec<Expr>> = branches
        .into_iter()
        .map(|b| {
            let mut v = Vec::new();
            conjuncts(b, &mut v);
            v
        })
        .collect();
    let forms: Vec<Vec<String>> = lists.iter().map(|l| l.iter().map(|c| format!("{c:?}")).collect()).collect();
    let mut common: Vec<usize> = Vec::new();
    for (i, f) in forms[0].iter().enumerate() {
        if has_subplan(&lists[0][i]) || common.iter().any(|&j| forms[0][j] == *f) {
            continue;
        }
        if forms[1..].iter().all(|o| o.contains(f)) {
            common.push(i);
        }
    }
    if common.is_empty() {
        out.push(Expr::Or(lists.into_iter().map(|l| and_of(l).expect("a branch has a conjunct")).collect()));
        return;
    }
    let common_forms: Vec<String> = common.iter().map(|&i| forms[0][i].clone()).collect();
    for &i in &common {
        out.push(lists[0][i].clone());
    }
    let mut rest = Vec::new();
    for (l, f) in lists.into_iter().zip(forms) {
        let kept: Vec<Expr> = l.into_iter().zip(f).filter(|(_, f)| !common_forms.contains(f)).map(|(c, _)| c).collect();
        match and_of(kept) {
            // This branch is the common part alone: the OR adds nothing.
            None => return,
            Some(b) => rest.push(b),
        }
    }
    out.push(Expr::Or(rest));
}

/// The width of a source's row, where it is known without running it.
fn source_width(s: &Source) -> Option<usize> {
    match s {
        Source::Table(t) => Some(table_width(t)),
        Source::Join(j) => Some(if j.kind.left_only() { j.lw } else { j.lw + j.rw }),
        Source::Subquery(q) => Some(q.targets.len()),
        _ => None,
    }
}

fn table_width(t: &Table) -> usize {
    t.columns.len()
}

/// Which levels an expression of a subquery (at depth 0) reads.
#[derive(Default)]
struct Reads {
    /// A column of the subquery's own row.
    own: bool,
    /// A column of the parent's row (`levels_up` 1, at depth 0).
    parent: bool,
    /// Anything else above the subquery: a deeper reference to the parent,
    /// a level above the parent, or an aggregate of an upper level.
    other: bool,
}

fn reads(e: &Expr) -> Reads {
    let mut r = Reads::default();
    visit_expr(e, 0, true, &mut |e, d| match e {
        Expr::Column(..) if d == 0 => r.own = true,
        Expr::OuterColumn { levels_up: 1, .. } if d == 0 => r.parent = true,
        Expr::OuterColumn { levels_up, .. } | Expr::OuterAggRef { levels_up, .. } if *levels_up > d => r.other = true,
        _ => {}
    });
    r
}

/// Rewrites the column references of `e` (at depth 0; `e` holds no
/// subquery): `Column(i)` by `own(i)`, the parent's `OuterColumn` by
/// `parent(index)`. A replacement is not visited again.
fn rebase(e: &mut Expr, own: &dyn Fn(usize, ferrogres_datum::types::Type) -> Expr, parent: &dyn Fn(usize, ferrogres_datum::types::Type) -> Expr) {
    match e {
        Expr::Column(i, ty) => *e = own(*i, *ty),
        Expr::OuterColumn { levels_up: 1, index, ty } => *e = parent(*index, *ty),
        _ => {
            for c in children_mut(e) {
                rebase(c, own, parent);
            }
        }
    }
}

/// One correlated conjunct of a subquery: its conjuncts split into those
/// that read the parent (`correlated`) and those that do not (`local`).
/// `None` when a correlated one holds a subquery or reads another level.
fn split_correlated(q: &Query) -> Option<(Vec<Expr>, Vec<Expr>)> {
    let mut quals = Vec::new();
    if let Some(f) = &q.filter {
        conjuncts(f.clone(), &mut quals);
    }
    let (mut correlated, mut local) = (Vec::new(), Vec::new());
    for c in quals {
        let r = reads(&c);
        if r.other || (r.parent && has_subplan(&c)) {
            return None;
        }
        if r.parent {
            correlated.push(c);
        } else {
            local.push(c);
        }
    }
    Some((correlated, local))
}

/// `inner = outer` (either way round) where one side reads only the
/// subquery's row and the other only the parent's: (inner, outer).
fn correlation_key(c: &Expr) -> Option<(&Expr, &Expr)> {
    let Expr::Compare { op: CmpOp::Eq, l, r } = c else { return None };
    let (rl, rr) = (reads(l), reads(r));
    if rl.own && !rl.parent && rr.parent && !rr.own {
        Some((l, r))
    } else if rr.own && !rr.parent && rl.parent && !rl.own {
        Some((r, l))
    } else {
        None
    }
}

/// The shape every pulled-up subquery needs: no aggregation (unless the
/// caller handles it), no LIMIT/OFFSET, no window functions, no
/// set-returning functions in its targets (they change its row count).
fn plain_rows(q: &Query) -> bool {
    q.limit.is_none()
        && q.offset.is_none()
        && !matches!(q.source, Source::WindowAgg(_))
        && !q.targets.iter().any(|t| crate::project_set::contains_srf(&t.expr))
        && !q.hidden.iter().any(crate::project_set::contains_srf)
}

type PulledUp = (JoinKind, Source, Expr, Option<Expr>, usize);

/// A WHERE conjunct as a semi- or anti-join with an outer row of `lw`
/// columns: (kind, inner source, condition over [outer row, inner row],
/// inner filter, inner width); or the conjunct back.
fn pull_up_one(qual: Expr, lw: usize) -> Result<PulledUp, Expr> {
    let pulled = match &qual {
        Expr::SubPlan(sp) if sp.kind == SubKind::Exists => pullable_exists(sp, JoinKind::Semi, lw),
        Expr::Not(inner) => match &**inner {
            Expr::SubPlan(sp) if sp.kind == SubKind::Exists => pullable_exists(sp, JoinKind::Anti, lw),
            _ => None,
        },
        Expr::SubPlan(sp) if sp.kind == SubKind::Any => pullable_in(sp, lw),
        _ => None,
    };
    pulled.ok_or(qual)
}

/// `EXISTS (SELECT ... FROM s WHERE corr AND local)` with `corr` reading the
/// parent: the join with `s` on `corr`, `s` filtered by `local`.
fn pullable_exists(sp: &SubPlan, kind: JoinKind, lw: usize) -> Option<PulledUp> {
    let q = &sp.query;
    // An uncorrelated EXISTS runs once already (an InitPlan).
    if !sp.correlated || !q.aggregates.is_empty() || q.grouping.is_some() || !plain_rows(q) {
        return None;
    }
    let rw = source_width(&q.source)?;
    let (correlated, local) = split_correlated(q)?;
    if !correlated.iter().any(|c| correlation_key(c).is_some()) || indexed_probe(&q.source, &correlated) {
        return None;
    }
    // The inner side runs once for all outer rows: nothing else in it may
    // read the parent.
    let probe = Query { filter: and_of(local.clone()), ..Query::project(q.source.clone(), vec![]) };
    if is_correlated(&probe) {
        return None;
    }
    let mut cond = and_of(correlated)?;
    rebase(&mut cond, &|i, ty| Expr::Column(lw + i, ty), &|i, ty| Expr::Column(i, ty));
    Some((kind, probe.source, cond, probe.filter, rw))
}

/// Whether a correlation equality reads the leading column of an index of
/// the subquery's table: then the per-row subplan is an index probe per
/// outer row (`l_orderkey = o_orderkey` on lineitem's primary key, TPC-H Q4
/// and Q21), cheaper than hashing the whole table for a few outer rows. It
/// stays a subplan until the optimizer costs a nested loop with a
/// parameterized index scan against the hash semi-join.
fn indexed_probe(source: &Source, correlated: &[Expr]) -> bool {
    let Source::Table(t) = source else { return false };
    correlated
        .iter()
        .filter_map(correlation_key)
        .any(|(inner, _)| matches!(inner, Expr::Column(c, _) if t.indexes.iter().any(|ix| ix.columns.first() == Some(c))))
}

/// `x IN (SELECT y FROM ...)` (`x = ANY`), the subquery uncorrelated: the
/// semi-join with the subquery's rows on `x = y`.
fn pullable_in(sp: &SubPlan, lw: usize) -> Option<PulledUp> {
    let q = &sp.query;
    let lhs = sp.lhs.as_ref()?;
    let cmp = sp.cmp.as_ref()?;
    if sp.correlated || !sp.row_lhs.is_empty() || q.targets.len() != 1 || has_subplan(lhs) || !plain_rows(q) {
        return None;
    }
    if !matches!(cmp, Expr::Compare { op: CmpOp::Eq, .. }) {
        return None;
    }
    // `cmp` reads [lhs, subquery column]; the joined row is [outer row, subquery row].
    let mut cond = cmp.clone();
    rebase(&mut cond, &|i, ty| if i == 0 { lhs.clone() } else { Expr::Column(lw + i - 1, ty) }, &|i, ty| {
        Expr::OuterColumn { levels_up: 1, index: i, ty }
    });
    Some((JoinKind::Semi, Source::Subquery(Box::new(q.clone())), cond, None, 1))
}

/// Replaces the correlated scalar aggregate subqueries of `e` that can be
/// decorrelated (not under CASE, COALESCE, NULLIF, AND or OR, which may not
/// evaluate them for every row) by a read of a left join added over
/// `source` (`width` grows by its columns). Whether anything changed.
fn decorrelate_scalars(e: &mut Expr, source: &mut Source, width: &mut usize) -> bool {
    match e {
        Expr::SubPlan(sp) if sp.kind == SubKind::Expr && sp.correlated => {
            if let Some(replacement) = decorrelate(sp, source, width) {
                *e = replacement;
                return true;
            }
        }
        Expr::Case { .. } | Expr::Coalesce(..) | Expr::NullIf { .. } | Expr::And(_) | Expr::Or(_) => return false,
        _ => {}
    }
    let mut changed = false;
    for c in children_mut(e) {
        changed |= decorrelate_scalars(c, source, width);
    }
    changed
}

/// See the module documentation, rewrite 1.
fn decorrelate(sp: &SubPlan, source: &mut Source, width: &mut usize) -> Option<Expr> {
    let q = &sp.query;
    let plain_agg = match &q.grouping {
        None => true,
        Some(g) => g.keys.is_empty() && g.having.is_none() && g.sets.is_none(),
    };
    if q.aggregates.is_empty() || !plain_agg || q.targets.len() != 1 || !q.order.is_empty() || !q.hidden.is_empty() || q.distinct.is_some() {
        return None;
    }
    if !plain_rows(q) {
        return None;
    }
    let target = &q.targets[0].expr;
    let tr = reads(target);
    if tr.own || tr.parent || tr.other || has_subplan(target) {
        return None;
    }
    let (correlated, local) = split_correlated(q)?;
    let mut inner_keys = Vec::new();
    let mut outer_keys = Vec::new();
    for c in &correlated {
        let (i, o) = correlation_key(c)?;
        inner_keys.push(i.clone());
        let mut o = o.clone();
        rebase(&mut o, &|i, ty| Expr::Column(i, ty), &|i, ty| Expr::Column(i, ty));
        outer_keys.push(o);
    }
    if inner_keys.is_empty() {
        return None;
    }
    let k = inner_keys.len();
    let mut targets = vec![Target { name: "agg".into(), expr: target.clone(), typmod: -1, origin: None }];
    targets.extend(inner_keys.iter().map(|e| Target { name: "key".into(), expr: e.clone(), typmod: -1, origin: None }));
    let grouped = Query {
        source: q.source.clone(),
        filter: and_of(local),
        aggregates: q.aggregates.clone(),
        targets,
        hidden: vec![],
        order: vec![],
        limit: None,
        offset: None,
        grouping: Some(Box::new(Grouping { keys: inner_keys.clone(), having: None, sets: None })),
        distinct: None,
        paths: Default::default(),
        init_plans: Default::default(),
    };
    if is_correlated(&grouped) {
        return None;
    }
    let w = *width;
    let rk: Vec<Expr> = inner_keys.iter().enumerate().map(|(i, e)| Expr::Column(1 + i, e.ty())).collect();
    let left = std::mem::replace(source, Source::OneRow);
    *source = Source::Join(Box::new(Join {
        kind: JoinKind::Left,
        left,
        right: Source::Subquery(Box::new(grouped)),
        left_filter: None,
        right_filter: None,
        cond: None,
        hash: Some((outer_keys, rk)),
        lw: w,
        rw: 1 + k,
        lateral: false,
        plan: Default::default(),
    }));
    *width = w + 1 + k;
    let ty = sp.ty;
    Some(Expr::Case {
        whens: vec![(Expr::IsNull { arg: Box::new(Expr::Column(w + 1, inner_keys[0].ty())), negated: true }, Expr::Column(w, ty))],
        default: Box::new(over_no_rows(target, &q.aggregates)),
        ty,
    })
}

/// `target` (an expression of aggregate results and constants) over no
/// rows: count is 0, every other aggregate NULL.
fn over_no_rows(target: &Expr, aggs: &[crate::plan::Aggregate]) -> Expr {
    let mut e = target.clone();
    fn walk(e: &mut Expr, aggs: &[crate::plan::Aggregate]) {
        if let Expr::AggRef(i, ty) = e {
            let empty = match aggs.get(*i).map(|a| a.kind) {
                Some(AggKind::CountStar | AggKind::Count) => Value::Int8(0),
                _ => Value::Null,
            };
            *e = Expr::Const(empty, *ty);
            return;
        }
        for c in children_mut(e) {
            walk(c, aggs);
        }
    }
    walk(&mut e, aggs);
    e
}

/// One FROM item of a tree of inner joins: its source, and where its
/// columns start in the tree's row.
struct Leaf {
    source: Source,
    offset: usize,
    types: Vec<ferrogres_datum::types::Type>,
    /// Column names (what EXPLAIN prints for the projected columns).
    names: Vec<String>,
}

/// What the join search needs beside the query: the catalog snapshot
/// (statistics, relation sizes) and the planner's settings.
pub struct PlanCtx<'a> {
    pub backend: &'a ferrogres_engine::engine::Backend,
    pub snap: &'a ferrogres_engine::txn::snapshot::Snapshot,
    pub settings: &'a crate::optimizer::PlannerSettings,
    /// The columns of the level's row read above its FROM tree (targets,
    /// aggregates, grouping, sort keys: `optimizer::projection::level_needs`);
    /// `None`: all. The join search's widths count only these and the join
    /// conditions' columns.
    pub needed: Option<Vec<bool>>,
}

/// Join order by cost ([`crate::optimizer::joinsearch`]): a tree of plain
/// inner joins of tables and subqueries (a FROM list, `JOIN ... ON`; no
/// LATERAL, no outer join) is flattened into its items and the conjuncts of
/// WHERE and ON; each item gets its estimated rows and scan cost, each
/// conjunct over several items its selectivity
/// ([`crate::optimizer::selectivity`]), and the search returns the cheapest
/// tree (bushy or not) with a method per join. `join_collapse_limit = 1`
/// keeps the written order.
///
/// The level keeps its column numbers: when the chosen tree puts the items
/// in another order, it is wrapped in a subquery that projects its columns
/// back into FROM order. The conjuncts that read only the tree's columns
/// (no subquery, no enclosing level) move inside it (their columns
/// renumbered); the others stay in `filter`. When the chosen tree keeps
/// the written order of the items, it takes the place of the written one
/// without a projection.
pub fn reorder_inner_joins(source: &mut Source, filter: &mut Option<Expr>, pc: &PlanCtx) {
    let Source::Join(j) = source else { return };
    if j.kind != JoinKind::Inner || pc.settings.join_collapse_limit <= 1 {
        return;
    }
    let mut leaves = Vec::new();
    let mut on = Vec::new();
    if !flatten(source, &mut leaves, &mut on) {
        return;
    }
    let mut quals = Vec::new();
    if let Some(f) = filter.take() {
        conjuncts_factored(f, &mut quals);
    }
    quals.extend(on.iter().cloned());
    let width: usize = leaves.iter().map(|l| l.types.len()).sum();
    let leaf_of = |c: usize| leaves.iter().rposition(|l| l.offset <= c).unwrap_or(0);
    let movable = |q: &Expr| {
        let r = reads(q);
        !has_subplan(q) && !r.parent && !r.other && crate::subquery::columns_read(q).iter().all(|&c| c < width)
    };
    // Equalities implied by transitivity between items (equivalence
    // classes): the search may join through them; they are placed and
    // evaluated like the written ones (true whenever those are).
    // Restrictions of single items implied by ORs over several
    // (`optimizer::orclauses`): filters of those items' scans; the ORs stay.
    let item_list: Vec<(&Source, usize, usize)> = leaves.iter().map(|l| (&l.source, l.offset, l.types.len())).collect();
    let derived = crate::optimizer::estimate::or_restrictions(&item_list, &quals.iter().filter(|q| movable(q)).collect::<Vec<_>>(), &leaf_of, pc);
    drop(item_list);
    quals.extend(derived);
    let implied = crate::optimizer::estimate::implied_equalities(&quals.iter().filter(|q| movable(q)).collect::<Vec<_>>(), &leaf_of);
    quals.extend(implied);
    let n = leaves.len();
    let (rels, clauses) = crate::optimizer::estimate::join_problem(&leaves.iter().map(|l| (&l.source, l.offset, l.types.len())).collect::<Vec<_>>(), &quals.iter().filter(|q| movable(q)).collect::<Vec<_>>(), &leaf_of, pc);
    let tree = crate::optimizer::joinsearch::search(&rels, &clauses, pc.settings, &mut || true);
    let mut order = Vec::new();
    tree.leaves(&mut order);
    let identity = order.iter().enumerate().all(|(i, &o)| i == o);
    // New position of each of the old tree's columns.
    let mut new_offset = vec![0; n];
    let mut at = 0;
    for &i in &order {
        new_offset[i] = at;
        at += leaves[i].types.len();
    }
    let pos: Vec<usize> = (0..width).map(|c| {
        let i = leaf_of(c);
        new_offset[i] + (c - leaves[i].offset)
    }).collect();
    let types: Vec<ferrogres_datum::types::Type> = leaves.iter().flat_map(|l| l.types.iter().copied()).collect();
    let names: Vec<String> = leaves.iter().flat_map(|l| l.names.iter().cloned()).collect();
    let (mut inside, mut outside) = (Vec::new(), Vec::new());
    for q in quals {
        if movable(&q) {
            let mut q = q;
            crate::subquery::map_columns(&mut q, &|c| pos[c]);
            inside.push(q);
        } else {
            outside.push(q);
        }
    }
    let widths: Vec<usize> = leaves.iter().map(|l| l.types.len()).collect();
    let mut slots: Vec<Option<Source>> = leaves.into_iter().map(|l| Some(l.source)).collect();
    let mut tree_src = build_tree(&tree, &mut slots, &widths).0;
    let inner_filter = place_conditions(&mut tree_src, and_of(inside));
    crate::optimizer::estimate::check_methods(&mut tree_src);
    if identity {
        // Same column order: no projection needed.
        *source = tree_src;
        let mut rest = outside;
        if let Some(f) = inner_filter {
            conjuncts(f, &mut rest);
        }
        *filter = and_of(rest);
        return;
    }
    let targets = (0..width)
        .map(|c| Target { name: names[c].clone(), expr: Expr::Column(pos[c], types[c]), typmod: -1, origin: None })
        .collect();
    let wrapped = Query { filter: inner_filter, ..Query::project(tree_src, targets) };
    *source = Source::Subquery(Box::new(wrapped));
    *filter = and_of(outside);
}

/// The joins of the chosen tree (no conditions yet); (source, width).
fn build_tree(t: &crate::optimizer::joinsearch::Tree, slots: &mut [Option<Source>], widths: &[usize]) -> (Source, usize) {
    use crate::optimizer::joinsearch::{Method, Tree};
    use crate::optimizer::{JoinMethod, JoinPlan};
    match t {
        Tree::Leaf(i) => (slots[*i].take().expect("each item once"), widths[*i]),
        Tree::Join { left, right, method, rows, cost } => {
            let (l, lw) = build_tree(left, slots, widths);
            let (r, rw) = build_tree(right, slots, widths);
            let method = match method {
                Method::Hash => JoinMethod::Hash,
                Method::NestLoop => JoinMethod::NestLoop,
                Method::ParamIndex { index } => JoinMethod::ParamIndex { index: *index },
            };
            let join = Join {
                kind: JoinKind::Inner,
                left: l,
                right: r,
                left_filter: None,
                right_filter: None,
                cond: None,
                hash: None,
                lw,
                rw,
                lateral: false,
                plan: JoinPlan { method, rows: Some(*rows), cost: Some(*cost), out: None, semi_frac: None, outer_sel: None },
            };
            (Source::Join(Box::new(join)), lw + rw)
        }
    }
}

/// Collects the items of a tree of plain inner joins (left to right) and
/// its ON conjuncts; false (and nothing taken) when the tree has another
/// kind of node or an item whose column types are not known here.
fn flatten(s: &mut Source, leaves: &mut Vec<Leaf>, on: &mut Vec<Expr>) -> bool {
    fn check(s: &Source) -> bool {
        match s {
            Source::Join(j) => {
                j.kind == JoinKind::Inner
                    && !j.lateral
                    && j.left_filter.is_none()
                    && j.right_filter.is_none()
                    && j.hash.is_none()
                    && check(&j.left)
                    && check(&j.right)
            }
            Source::Table(_) => true,
            Source::Subquery(q) => !is_correlated(q),
            _ => false,
        }
    }
    fn take(s: Source, leaves: &mut Vec<Leaf>, on: &mut Vec<Expr>) {
        match s {
            Source::Join(j) => {
                let j = *j;
                if let Some(c) = j.cond {
                    conjuncts(c, on);
                }
                take(j.left, leaves, on);
                take(j.right, leaves, on);
            }
            other => {
                let offset = leaves.last().map_or(0, |l: &Leaf| l.offset + l.types.len());
                let (types, names) = match &other {
                    Source::Table(t) => (t.columns.iter().map(|c| c.ty).collect(), t.columns.iter().map(|c| c.name.clone()).collect()),
                    Source::Subquery(q) => (q.targets.iter().map(|t| t.expr.ty()).collect(), q.targets.iter().map(|t| t.name.clone()).collect()),
                    _ => unreachable!("checked"),
                };
                leaves.push(Leaf { source: other, offset, types, names });
            }
        }
    }
    if !check(s) {
        return false;
    }
    take(std::mem::replace(s, Source::OneRow), leaves, on);
    true
}
