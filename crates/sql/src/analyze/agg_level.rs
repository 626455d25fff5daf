//! The query level an aggregate belongs to, as PostgreSQL decides it
//! (`parse_agg.c`: check_agg_arguments, check_agglevels_and_constraints).
//!
//! An aggregate call belongs to the innermost query level whose columns its
//! arguments (FILTER and ORDER BY included) read, counting the levels of
//! aggregates nested in them; with no column at all, to the level it is
//! written in. So in `SELECT (SELECT max(t.a)) FROM t` the `max` is computed
//! by the outer query, over its rows, and the subquery reads its result: an
//! *outer-level aggregate* ([`Expr::OuterAggRef`], bound like an outer
//! column before the subquery runs, `crate::subquery::bind_outer`).
//!
//! The rules, with `L` the level found (0: the level of the call):
//!
//! 1. `L` = min over the arguments of (column levels) and (aggregate levels);
//!    levels are counted from the call (a column read by a subquery inside
//!    the arguments counts with its own depth taken off; references local to
//!    such a subquery count for nothing).
//! 2. An aggregate of level `L` among the arguments: 42803 "aggregate
//!    function calls cannot be nested", at that inner call. (An aggregate of
//!    a level further out inside a local aggregate is allowed.)
//! 3. The level `L` must allow aggregates where the call (or the subquery
//!    holding it) sits there: WHERE, JOIN conditions, GROUP BY, FILTER,
//!    VALUES, UPDATE, RETURNING, LIMIT/OFFSET, window frames, functions in
//!    FROM refuse them (42803 "aggregate functions are not allowed in ...");
//!    a LATERAL subquery cannot hold an aggregate of the query whose FROM it
//!    is in ("... in FROM clause of their own query level"); inside an
//!    aggregate's arguments of that level it is rule 2.
//! 4. A subquery read by the target list, HAVING or ORDER BY of a grouped
//!    (or aggregated) level may read that level's columns only where they are
//!    grouped (42803 "subquery uses ungrouped column ... from outer query").
//!
//! How: levels are numbered by depth (`Scope::outer.len()`: 0 for the
//! statement's query). An aggregate of an enclosing level is replaced where it
//! is written by a placeholder `OuterAggRef { levels_up: L, index: id }` and
//! queued in [`Upper`] with its target depth; its arguments are rewritten to
//! be read at that level (`relevel`). When the analysis of a subquery returns
//! to the level it belongs to ([`Analyzer::attach_upper`]), the queued
//! aggregates of that level are checked against its context and added to its
//! aggregates, and the placeholders get their index there. Column references
//! of enclosing levels are queued the same way for rule 4.

use super::{Analyzer, Scope};
use ferrogres_datum::errors::{Result, SqlError};
use crate::plan::{Aggregate, Expr, Query};

/// Aggregates and column references of enclosing query levels met while
/// analyzing the current level and the levels below it, not yet claimed by
/// the level they belong to.
#[derive(Clone, Debug, Default)]
pub(crate) struct Upper {
    aggs: Vec<UpperAgg>,
    cols: Vec<UpperCol>,
    next_id: usize,
}

#[derive(Clone, Debug)]
struct UpperAgg {
    /// The depth of the level it belongs to.
    depth: usize,
    /// The placeholder's index until the level claims it.
    id: usize,
    agg: Aggregate,
    location: i32,
}

#[derive(Clone, Debug)]
struct UpperCol {
    depth: usize,
    location: i32,
    /// `refname.column`, for the message.
    name: String,
    /// The column of that level's row.
    index: usize,
}

/// Every expression of an aggregate call (arguments, FILTER, ORDER BY).
fn agg_exprs(a: &Aggregate) -> impl Iterator<Item = &Expr> {
    a.arg.iter().chain(a.filter.iter()).chain(a.arg2.iter()).chain(a.order.iter().map(|k| &k.expr))
}

fn agg_exprs_mut(a: &mut Aggregate) -> impl Iterator<Item = &mut Expr> {
    a.arg.iter_mut().chain(a.filter.iter_mut()).chain(a.arg2.iter_mut()).chain(a.order.iter_mut().map(|k| &mut k.expr))
}

/// Rewrites an aggregate analyzed at some level to be evaluated `level`
/// levels further out: references to that level (or beyond) lose `level`
/// levels; those that reach the new level itself become its columns.
fn relevel(a: &mut Aggregate, level: usize) {
    for e in agg_exprs_mut(a) {
        crate::subquery::walk_expr(e, 0, true, &mut |x, d| match x {
            Expr::OuterColumn { levels_up, index, ty } if *levels_up >= d + level => {
                let up = *levels_up - level;
                *x = if up == 0 { Expr::Column(*index, *ty) } else { Expr::OuterColumn { levels_up: up, index: *index, ty: *ty } };
            }
            Expr::OuterAggRef { levels_up, .. } if *levels_up >= d + level => *levels_up -= level,
            _ => {}
        });
    }
}

impl Upper {
    fn location_of(&self, id: usize) -> i32 {
        self.aggs.iter().find(|a| a.id == id).map_or(-1, |a| a.location)
    }
}

impl Analyzer<'_> {
    /// Rules 1 and 2 for an analyzed aggregate call: its level (0: the level
    /// it is written in).
    pub(super) fn agg_level(&self, a: &Aggregate) -> Result<usize> {
        let mut min_var: Option<usize> = None;
        // (level, placeholder id or None for a local aggregate)
        let mut min_agg: Option<(usize, Option<usize>)> = None;
        for e in agg_exprs(a) {
            crate::subquery::visit_expr(e, 0, true, &mut |x, d| {
                let var = match x {
                    Expr::Column(..) if d == 0 => Some(0),
                    Expr::OuterColumn { levels_up, .. } if *levels_up >= d => Some(*levels_up - d),
                    _ => None,
                };
                if let Some(v) = var {
                    min_var = Some(min_var.map_or(v, |m| m.min(v)));
                }
                let agg = match x {
                    Expr::AggRef(..) if d == 0 => Some((0, None)),
                    Expr::OuterAggRef { levels_up, index, .. } if *levels_up >= d => Some((*levels_up - d, Some(*index))),
                    _ => None,
                };
                if let Some((l, id)) = agg {
                    if min_agg.is_none_or(|m| l < m.0) {
                        min_agg = Some((l, id));
                    }
                }
            });
        }
        let level = match (min_var, min_agg) {
            (None, None) => 0,
            (None, Some((l, _))) => l,
            (Some(v), None) => v,
            (Some(v), Some((l, _))) => v.min(l),
        };
        if let Some((l, id)) = min_agg {
            if l == level {
                let loc = id.map_or(-1, |id| self.upper.location_of(id));
                return Err(self.err_at(SqlError::new(b"42803", "aggregate function calls cannot be nested"), loc));
            }
        }
        Ok(level)
    }

    /// Queues aggregate `a` (of `level` >= 1, written at `loc` in `scope`) for
    /// the level it belongs to; returns the placeholder that reads its result.
    /// `cols_from`: the queued column references made inside its arguments
    /// start there (those of its own level are inside an aggregate there).
    pub(super) fn escape_aggregate(&mut self, mut a: Aggregate, level: usize, loc: i32, scope: &Scope, cols_from: usize) -> Result<Expr> {
        let Some(depth) = scope.outer.len().checked_sub(level) else {
            return Err(SqlError::internal("aggregate of a level above the statement"));
        };
        relevel(&mut a, level);
        let mut i = cols_from;
        while i < self.upper.cols.len() {
            if self.upper.cols[i].depth == depth {
                self.upper.cols.remove(i);
            } else {
                i += 1;
            }
        }
        let id = self.upper.next_id;
        self.upper.next_id += 1;
        let ty = a.ty;
        self.upper.aggs.push(UpperAgg { depth, id, agg: a, location: loc });
        Ok(Expr::OuterAggRef { levels_up: level, index: id, ty })
    }

    /// Notes a reference, from `scope`, to column `index` of the level
    /// `levels_up` levels out (rule 4).
    pub(super) fn note_outer_column(&mut self, scope: &Scope, levels_up: usize, index: usize, name: String, location: i32) {
        if let Some(depth) = scope.outer.len().checked_sub(levels_up) {
            self.upper.cols.push(UpperCol { depth, location, name, index });
        }
    }

    /// The number of queued column references (see [`Analyzer::escape_aggregate`]).
    pub(super) fn upper_cols_len(&self) -> usize {
        self.upper.cols.len()
    }

    /// A copy of the queues, to restore when an analysis is thrown away and
    /// done again ([`Analyzer::restore_upper`]).
    pub(super) fn save_upper(&self) -> Upper {
        self.upper.clone()
    }

    pub(super) fn restore_upper(&mut self, saved: Upper) {
        self.upper = saved;
    }

    /// The context check of rule 3 for an aggregate of `scope`'s level
    /// written at `loc` (a local one, or one claimed from a subquery).
    pub(super) fn check_agg_context(&self, scope: &Scope, loc: i32) -> Result<()> {
        if scope.in_agg {
            return Err(self.err_at(SqlError::new(b"42803", "aggregate function calls cannot be nested"), loc));
        }
        if scope.aggs.is_none() {
            let place = scope.agg_place.unwrap_or(if scope.table.is_some() || scope.ns.is_some() { "WHERE" } else { "this context" });
            return Err(self.err_at(SqlError::new(b"42803", format!("aggregate functions are not allowed in {place}")), loc));
        }
        Ok(())
    }

    /// Adds aggregate `a` to `scope`'s (collecting) level: its index there.
    /// An aggregate written twice is computed once (and its uses compare equal).
    pub(super) fn add_aggregate(scope: &mut Scope, a: Aggregate) -> Result<usize> {
        let aggs = scope.aggs.as_mut().ok_or_else(|| SqlError::internal("aggregate where none are collected"))?;
        let form = format!("{a:?}");
        if let Some(i) = aggs.iter().position(|x| format!("{x:?}") == form) {
            return Ok(i);
        }
        aggs.push(a);
        Ok(aggs.len() - 1)
    }

    /// After the analysis of `q`, a subquery one level below `scope` (an
    /// expression's subquery): claims the queued aggregates and column
    /// references of `scope`'s level (rules 3 and 4) and points the
    /// placeholders in `q` at the aggregates' indexes.
    pub(super) fn attach_upper(&mut self, q: &mut Query, scope: &mut Scope) -> Result<()> {
        let depth = scope.outer.len();
        let (mine, rest): (Vec<UpperAgg>, Vec<UpperAgg>) = std::mem::take(&mut self.upper.aggs).into_iter().partition(|a| a.depth == depth);
        self.upper.aggs = rest;
        let mut map: Vec<(usize, usize)> = Vec::new();
        for u in mine {
            self.check_agg_context(scope, u.location)?;
            map.push((u.id, Self::add_aggregate(scope, u.agg)?));
        }
        if !map.is_empty() {
            crate::subquery::walk_query(q, 0, true, &mut |e, d| {
                if let Expr::OuterAggRef { levels_up, index, .. } = e {
                    if *levels_up == d + 1 {
                        if let Some((_, i)) = map.iter().find(|(id, _)| id == index) {
                            *index = *i;
                        }
                    }
                }
            });
        }
        let (cols, rest): (Vec<UpperCol>, Vec<UpperCol>) = std::mem::take(&mut self.upper.cols).into_iter().partition(|c| c.depth == depth);
        self.upper.cols = rest;
        if scope.aggs.is_some() && !scope.in_agg {
            scope.sub_columns.extend(cols.into_iter().map(|c| (c.location, c.name, c.index)));
        }
        Ok(())
    }

    /// After the analysis of a FROM item one level below the level of depth
    /// `depth` (a subquery or a function's arguments read laterally): an
    /// aggregate of that level is refused (`place`: "FROM clause of their own
    /// query level", "functions in FROM"); its column references are not
    /// grouping checks' business.
    pub(super) fn refuse_upper(&mut self, depth: usize, place: &str) -> Result<()> {
        if let Some(u) = self.upper.aggs.iter().find(|a| a.depth == depth) {
            return Err(self.err_at(SqlError::new(b"42803", format!("aggregate functions are not allowed in {place}")), u.location));
        }
        self.upper.cols.retain(|c| c.depth != depth);
        Ok(())
    }

    /// Rule 4 for a level without GROUP BY whose output is aggregated: the
    /// first column reference from a subquery, as the error.
    pub(super) fn ungrouped_sub_column(&self, scope: &Scope, grouped: &dyn Fn(usize) -> bool) -> Option<(i32, SqlError)> {
        let (loc, name, _) = scope.sub_columns.iter().filter(|c| !grouped(c.2)).min_by_key(|c| c.0)?;
        Some((*loc, self.err_at(SqlError::new(b"42803", format!("subquery uses ungrouped column \"{name}\" from outer query")), *loc)))
    }
}
