//! Analysis of GROUPING SETS, ROLLUP, CUBE, GROUP BY DISTINCT and GROUPING(...)
//! ([`crate::grouping_sets`] runs them).
//!
//! The GROUP BY list is expanded as PostgreSQL does: each item gives a list of
//! sets (a plain expression or a parenthesized list `(a, b)`: one set;
//! `ROLLUP(e1, ..., en)`: the n+1 prefixes, longest first; `CUBE(e1, ..., en)`:
//! the 2^n subsets; `GROUPING SETS (...)`: the sets of its elements, which may
//! nest ROLLUP/CUBE/GROUPING SETS; `()`: the empty set), and the items' lists are
//! multiplied out (`GROUP BY a, ROLLUP(b, c)`: {a,b,c}, {a,b}, {a}). Sets that
//! come out equal are kept (each gives its own rows) unless GROUP BY DISTINCT.
//! The elements of the sets resolve like plain GROUP BY items (positions,
//! output names, expressions); equal expressions share one key.
//!
//! GROUPING(args) becomes a placeholder while the select list, ORDER BY and
//! HAVING are analyzed; afterwards every argument must equal a GROUP BY
//! expression (42803), and the output expressions are rewritten to read the
//! grouped row (key slots, GROUPING slots, then the first input row).

use super::{Analyzer, Scope};
use ferrogres_datum::errors::{Result, SqlError};
use crate::grouping::Grouping;
use crate::grouping_sets::GroupingSets;
use crate::plan::*;
use pg_query::protobuf as pb;
use pg_query::NodeEnum;

/// PostgreSQL's limits: CUBE elements and expanded sets.
const MAX_CUBE: usize = 12;
const MAX_SETS: usize = 4096;

/// The GROUP BY keys, and the sets as indices into them (`None`: plain GROUP BY).
type KeysAndSets = (Vec<Expr>, Option<Vec<Vec<usize>>>);

fn is_implicit_row(n: &NodeEnum) -> Option<&pb::RowExpr> {
    match n {
        NodeEnum::RowExpr(r) if r.row_format == pb::CoercionForm::CoerceImplicitCast as i32 => Some(r),
        _ => None,
    }
}

/// `a ∪ b` keeping `a`'s order, then `b`'s new indices.
fn union(a: &[usize], b: &[usize]) -> Vec<usize> {
    let mut out = a.to_vec();
    for k in b {
        if !out.contains(k) {
            out.push(*k);
        }
    }
    out
}

impl<'a> Analyzer<'a> {
    /// The GROUP BY keys of `s` and, when it has grouping sets (or a
    /// parenthesized list), its expanded sets as indices into the keys.
    pub(super) fn grouping_sets_of(&mut self, s: &pb::SelectStmt, targets: &[Target], scope: &mut Scope) -> Result<KeysAndSets> {
        let items: Vec<&NodeEnum> = s.group_clause.iter().filter_map(|g| g.node.as_ref()).collect();
        let has_sets = items.iter().any(|g| matches!(g, NodeEnum::GroupingSet(_)) || is_implicit_row(g).is_some());
        let mut keys: Vec<Expr> = Vec::new();
        if !has_sets {
            for g in items {
                keys.push(self.group_key(g, targets, scope)?);
            }
            return Ok((keys, None));
        }
        let mut forms: Vec<String> = Vec::new();
        let mut sets: Vec<Vec<usize>> = vec![vec![]];
        for g in items {
            let item = self.item_sets(g, targets, scope, &mut keys, &mut forms)?;
            let mut next = Vec::new();
            for a in &sets {
                for b in &item {
                    next.push(union(a, b));
                }
            }
            if next.len() > MAX_SETS {
                return Err(self.err_at(SqlError::new(b"54001", "too many grouping sets present (maximum 4096)"), super::location(g)));
            }
            sets = next;
        }
        if s.group_distinct {
            let mut seen: Vec<Vec<usize>> = Vec::new();
            sets.retain(|set| {
                let mut sorted = set.clone();
                sorted.sort_unstable();
                if seen.contains(&sorted) {
                    false
                } else {
                    seen.push(sorted);
                    true
                }
            });
        }
        Ok((keys, Some(sets)))
    }

    /// The index of GROUP BY expression `g` among `keys` (added if new).
    fn set_element(&mut self, g: &NodeEnum, targets: &[Target], scope: &mut Scope, keys: &mut Vec<Expr>, forms: &mut Vec<String>) -> Result<Vec<usize>> {
        ferrogres_datum::stack_depth::check()?;
        if let Some(r) = is_implicit_row(g) {
            let mut out = Vec::new();
            for a in r.args.iter().filter_map(|a| a.node.as_ref()) {
                out = union(&out, &self.set_element(a, targets, scope, keys, forms)?);
            }
            return Ok(out);
        }
        let e = self.group_key(g, targets, scope)?;
        let form = format!("{e:?}");
        Ok(vec![match forms.iter().position(|f| *f == form) {
            Some(i) => i,
            None => {
                forms.push(form);
                keys.push(e);
                keys.len() - 1
            }
        }])
    }

    /// The sets one GROUP BY item stands for.
    fn item_sets(&mut self, g: &NodeEnum, targets: &[Target], scope: &mut Scope, keys: &mut Vec<Expr>, forms: &mut Vec<String>) -> Result<Vec<Vec<usize>>> {
        ferrogres_datum::stack_depth::check()?;
        let NodeEnum::GroupingSet(gs) = g else {
            return Ok(vec![self.set_element(g, targets, scope, keys, forms)?]);
        };
        let content: Vec<&NodeEnum> = gs.content.iter().filter_map(|c| c.node.as_ref()).collect();
        let kind = pb::GroupingSetKind::try_from(gs.kind).unwrap_or(pb::GroupingSetKind::Undefined);
        Ok(match kind {
            pb::GroupingSetKind::GroupingSetEmpty => vec![vec![]],
            pb::GroupingSetKind::GroupingSetSimple => {
                let mut set = Vec::new();
                for c in content {
                    set = union(&set, &self.set_element(c, targets, scope, keys, forms)?);
                }
                vec![set]
            }
            pb::GroupingSetKind::GroupingSetRollup => {
                let mut elems = Vec::new();
                for c in content {
                    elems.push(self.set_element(c, targets, scope, keys, forms)?);
                }
                (0..=elems.len()).rev().map(|n| elems[..n].iter().fold(Vec::new(), |acc, e| union(&acc, e))).collect()
            }
            pb::GroupingSetKind::GroupingSetCube => {
                if content.len() > MAX_CUBE {
                    return Err(self.err_at(SqlError::new(b"54001", "CUBE is limited to 12 elements"), gs.location));
                }
                let mut elems = Vec::new();
                for c in content {
                    elems.push(self.set_element(c, targets, scope, keys, forms)?);
                }
                let n = elems.len();
                // Subsets by decreasing size; within a size, earlier elements first.
                let mut masks: Vec<u32> = (0..1u32 << n).collect();
                masks.sort_by_key(|m| {
                    let bits: Vec<bool> = (0..n).map(|i| m & (1 << i) == 0).collect();
                    (std::cmp::Reverse(m.count_ones()), bits)
                });
                masks.iter().map(|m| (0..n).filter(|i| m & (1 << i) != 0).fold(Vec::new(), |acc, i| union(&acc, &elems[i]))).collect()
            }
            pb::GroupingSetKind::GroupingSetSets | pb::GroupingSetKind::Undefined => {
                let mut out = Vec::new();
                for c in content {
                    out.extend(self.item_sets(c, targets, scope, keys, forms)?);
                }
                out
            }
        })
    }

    /// GROUPING(args): a placeholder numbered in `scope.grouping_locs`.
    pub(super) fn grouping_func(&mut self, g: &pb::GroupingFunc, scope: &mut Scope) -> Result<Expr> {
        if scope.aggs.is_none() {
            let place = if scope.table.is_some() || scope.ns.is_some() { "WHERE" } else { "this context" };
            return Err(self.err_at(SqlError::new(b"42803", format!("grouping operations are not allowed in {place}")), g.location));
        }
        if scope.in_agg {
            return Err(self.err_at(SqlError::new(b"42803", "aggregate function calls cannot be nested"), g.location));
        }
        if g.args.len() > 31 {
            return Err(self.err_at(SqlError::new(b"54023", "GROUPING must have fewer than 32 arguments"), g.location));
        }
        // The arguments are not output columns of their own: like an
        // aggregate's, their column references are not checked for 42803.
        scope.in_agg = true;
        let mut args = Vec::new();
        let mut locs = Vec::new();
        for a in g.args.iter().filter_map(|a| a.node.as_ref()) {
            let e = self.expr(a, scope);
            let e = match e {
                Ok(e) => e,
                Err(e) => {
                    scope.in_agg = false;
                    return Err(e);
                }
            };
            args.push(self.resolve_unknown(e));
            locs.push(super::location(a));
        }
        scope.in_agg = false;
        scope.grouping_locs.push(locs);
        Ok(Expr::Func { func: Func::Grouping(scope.grouping_locs.len() - 1), args, ty: ferrogres_datum::types::Type::Int4 })
    }

    /// Rewrites a grouping-set query's output expressions to read the grouped
    /// row ([`crate::grouping_sets`]); checks GROUPING's arguments. Queries
    /// without grouping sets or GROUPING calls pass through unchanged.
    pub(super) fn grouping_sets_output(
        &mut self,
        grouping: Option<Grouping>,
        mut targets: Vec<Target>,
        mut hidden: Vec<Expr>,
        no_windows: bool,
        scope: &Scope,
    ) -> Result<(Vec<Target>, Vec<Expr>, Option<Grouping>)> {
        let ncalls = scope.grouping_locs.len();
        let has_sets = grouping.as_ref().is_some_and(|g| g.sets.is_some());
        if !has_sets && ncalls == 0 {
            return Ok((targets, hidden, grouping));
        }
        let mut grouping = match grouping {
            Some(g) => g,
            None => Grouping { keys: vec![], having: None, sets: None },
        };
        if grouping.sets.is_none() {
            // A plain GROUP BY with GROUPING calls: one set of every key.
            // (No GROUP BY at all: every GROUPING argument is an error below.)
            let set: Vec<usize> = (0..grouping.keys.len()).collect();
            grouping.sets = Some(Box::new(GroupingSets { sets: vec![set], calls: vec![] }));
            if grouping.keys.is_empty() {
                let loc = scope.grouping_locs.iter().flatten().next().copied().unwrap_or(-1);
                return Err(self.err_at(SqlError::new(b"42803", "arguments to GROUPING must be grouping expressions of the associated query level"), loc));
            }
        }
        if !no_windows {
            return Err(SqlError::not_supported("window functions with GROUPING SETS, ROLLUP, CUBE or GROUPING"));
        }
        let forms: Vec<String> = grouping.keys.iter().map(|k| format!("{k:?}")).collect();
        let nkeys = forms.len();
        let mut rw = Rewrite { forms: &forms, nkeys, ncalls, calls: vec![Vec::new(); ncalls], bad: None, correlated: false };
        for t in &mut targets {
            t.expr = rw.expr(&t.expr);
        }
        for h in &mut hidden {
            *h = rw.expr(h);
        }
        if let Some(h) = &grouping.having {
            grouping.having = Some(rw.expr(h));
        }
        if let Some((call, arg)) = rw.bad {
            let loc = scope.grouping_locs.get(call).and_then(|l| l.get(arg)).copied().unwrap_or(-1);
            return Err(self.err_at(SqlError::new(b"42803", "arguments to GROUPING must be grouping expressions of the associated query level"), loc));
        }
        if rw.correlated {
            return Err(SqlError::not_supported("correlated subqueries in the output of GROUPING SETS, ROLLUP, CUBE or GROUPING"));
        }
        if let Some(gs) = grouping.sets.as_mut() {
            gs.calls = rw.calls;
        }
        Ok((targets, hidden, Some(grouping)))
    }
}

/// The rewrite of output expressions onto the grouped row.
struct Rewrite<'f> {
    forms: &'f [String],
    nkeys: usize,
    ncalls: usize,
    calls: Vec<Vec<usize>>,
    /// The first GROUPING argument that is no GROUP BY expression: (call, argument).
    bad: Option<(usize, usize)>,
    correlated: bool,
}

impl Rewrite<'_> {
    fn expr(&mut self, e: &Expr) -> Expr {
        if let Expr::Func { func: Func::Grouping(n), args, ty } = e {
            let mut idx = Vec::new();
            for (i, a) in args.iter().enumerate() {
                match self.forms.iter().position(|f| *f == format!("{a:?}")) {
                    Some(k) => idx.push(k),
                    None => {
                        self.bad.get_or_insert((*n, i));
                    }
                }
            }
            self.calls[*n] = idx;
            return Expr::Column(self.nkeys + n, *ty);
        }
        if let Some(k) = self.forms.iter().position(|f| *f == format!("{e:?}")) {
            return Expr::Column(k, e.ty());
        }
        let mut out = e.clone();
        match &mut out {
            Expr::Column(i, _) => *i += self.nkeys + self.ncalls,
            // A subquery reading this level's row (whose layout the grouped
            // row changes); one reading only its aggregates' results
            // (`Expr::OuterAggRef`) is bound from them as usual.
            Expr::SubPlan(sp) if crate::subquery::reads_parent_row(&sp.query) => self.correlated = true,
            _ => {}
        }
        for c in crate::subquery::children_mut(&mut out) {
            *c = self.expr(c);
        }
        out
    }
}
