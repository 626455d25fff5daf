//! Analysis of GROUP BY, HAVING and SELECT DISTINCT [ON] ([`crate::grouping`]
//! runs them).
//!
//! GROUP BY items are, as in PostgreSQL (SQL92 rules, `findTargetlistEntrySQL92`):
//! an integer constant (an output column position), a bare name that is not an
//! input column but is an output column name, or an expression over the input.
//! A grouped query's output, ORDER BY and HAVING may read a column outside an
//! aggregate only inside a subexpression equal to a GROUP BY expression, or any
//! column when GROUP BY has every primary key column (42803).
//! DISTINCT ON items resolve like ORDER BY items (position, output name,
//! expression), and ORDER BY must start with them (42P10).

use super::{location, node, str_of, Analyzer, Scope};
use ferrogres_datum::errors::{Result, SqlError};
use crate::grouping::{ungrouped_column, Grouping};
use crate::plan::*;
use ferrogres_datum::types::{Type, Value};
use pg_query::protobuf::{self as pb, a_const::Val};
use pg_query::NodeEnum;

impl<'a> Analyzer<'a> {
    /// GROUP BY and HAVING of `s` (after its targets and ORDER BY were analyzed
    /// with `scope`, which is still collecting aggregates): `None` if it has neither.
    pub(super) fn group_by(&mut self, s: &pb::SelectStmt, targets: &[Target], hidden: &[Expr], scope: &mut Scope) -> Result<Option<Grouping>> {
        if s.group_clause.is_empty() && s.having_clause.is_none() {
            return Ok(None);
        }
        let (keys, sets) = self.grouping_sets_of(s, targets, scope)?;
        let having = match node(&s.having_clause) {
            Some(h) => Some(self.bool_expr(h, scope, "HAVING")?),
            None => None,
        };
        // 42803: a column read outside the GROUP BY expressions.
        let mut key_forms: Vec<String> = keys.iter().map(|k| format!("{k:?}")).collect();
        // Grouping by the primary key groups by every column of the table
        // (functional dependency, as PostgreSQL's check_functional_grouping;
        // with grouping sets, only keys grouped in every set count).
        if let Some((t, _)) = &scope.table {
            let common = |k: usize| sets.as_ref().is_none_or(|ss| ss.iter().all(|set| set.contains(&k)));
            let grouped = |c: usize| keys.iter().enumerate().any(|(n, k)| matches!(k, Expr::Column(i, _) if *i == c) && common(n));
            if t.indexes.iter().any(|ix| ix.primary && ix.columns[..ix.nkey].iter().all(|c| grouped(*c))) {
                key_forms.extend(t.columns.iter().enumerate().map(|(i, c)| format!("{:?}", Expr::Column(i, c.ty))));
            }
        }
        // A column of this level read by a subquery must be grouped as it is
        // (`agg_level`, rule 4); the first offence in the text is reported.
        let grouped = |c: usize| key_forms.iter().any(|k| k.starts_with(&format!("Column({c}, ")));
        let sub = self.ungrouped_sub_column(scope, &grouped);
        let exprs = targets.iter().map(|t| &t.expr).chain(hidden).chain(having.as_ref());
        let mut seen = Vec::new();
        for e in exprs {
            if let Some((col, before)) = ungrouped_column(e, &key_forms, &mut seen) {
                let mut refs = scope.seen_columns.iter().filter(|c| c.2 == col);
                let (loc, name) = match refs.clone().nth(before).or_else(|| refs.next()) {
                    Some((loc, name, _)) => (*loc, name.clone()),
                    None => {
                        let loc = scope.bare_column.as_ref().map_or(-1, |b| b.0);
                        let name = match &scope.table {
                            Some((t, refname)) => format!("{refname}.{}", t.columns[col].name),
                            None => "?".into(),
                        };
                        (loc, name)
                    }
                };
                if let Some((sl, e)) = sub {
                    if sl < loc {
                        return Err(e);
                    }
                }
                return Err(self.err_at(
                    SqlError::new(b"42803", format!("column \"{name}\" must appear in the GROUP BY clause or be used in an aggregate function")),
                    loc,
                ));
            }
        }
        if let Some((_, e)) = sub {
            return Err(e);
        }
        let sets = sets.map(|sets| Box::new(crate::grouping_sets::GroupingSets { sets, calls: Vec::new() }));
        Ok(Some(Grouping { keys, having, sets }))
    }

    /// One GROUP BY expression (an item, or an element of a grouping set): a
    /// select-list position, an output column name, or an expression.
    pub(super) fn group_key(&mut self, g: &NodeEnum, targets: &[Target], scope: &mut Scope) -> Result<Expr> {
    let e = match g {
            NodeEnum::AConst(pb::AConst { val: Some(Val::Ival(i)), location, .. }) => {
                let pos = i.ival;
                if pos < 1 || pos as usize > targets.len() {
                    return Err(self.err_at(SqlError::new(b"42P10", format!("GROUP BY position {pos} is not in select list")), *location));
                }
                targets[pos as usize - 1].expr.clone()
            }
            NodeEnum::ColumnRef(c)
                if c.fields.len() == 1
                    && str_of(&c.fields[0]).is_some_and(|name| {
                        !scope.table.as_ref().is_some_and(|(t, _)| t.columns.iter().any(|col| col.name == name))
                            && !scope.ns.as_ref().is_some_and(|ns| ns.cols.iter().any(|col| col.name == name))
                            && targets.iter().filter(|t| t.name == name).count() == 1
                    }) =>
            {
                let name = str_of(&c.fields[0]).unwrap_or_default();
                targets.iter().find(|t| t.name == name).map(|t| t.expr.clone()).unwrap_or(Expr::Const(Value::Null, Type::Text))
            }
                        other => {
                let mut gscope = Scope::new(scope.table.clone());
                gscope.ns = scope.ns.clone();
                gscope.outer = scope.outer.clone();
                let e = self.expr(other, &mut gscope).map_err(|mut e| {
                    if e.sqlstate() == "42803" && e.message.starts_with("aggregate functions are not allowed in") {
                        e.message = "aggregate functions are not allowed in GROUP BY".into();
                    }
                    if e.sqlstate() == "42P20" && e.message.starts_with("window functions are not allowed in") {
                        e.message = "window functions are not allowed in GROUP BY".into();
                    }
                    e
                })?;
                self.resolve_unknown(e)
            }
        };
        Ok(e)
    }

    /// SELECT DISTINCT [ON]: the columns of the projected row that identify a
    /// row; `None` without DISTINCT. May add hidden columns (DISTINCT ON
    /// expressions not in the output) and redirect ORDER BY keys to equal targets.
    pub(super) fn distinct(
        &mut self,
        s: &pb::SelectStmt,
        targets: &[Target],
        hidden: &mut Vec<Expr>,
        order: &mut [SortKey],
        scope: &mut Scope,
    ) -> Result<Option<Vec<usize>>> {
        if s.distinct_clause.is_empty() {
            return Ok(None);
        }
        let sort_locs: Vec<i32> = s
            .sort_clause
            .iter()
            .filter_map(|n| match &n.node {
                Some(NodeEnum::SortBy(sb)) => Some(node(&sb.node).map_or(-1, location)),
                _ => None,
            })
            .collect();
        let width = targets.len();
        let find = |e: &Expr, hidden: &[Expr]| -> Option<usize> {
            let form = format!("{e:?}");
            targets.iter().map(|t| &t.expr).chain(hidden.iter()).position(|x| format!("{x:?}") == form)
        };
        // ORDER BY expressions equal to an output column sort by that column.
        for k in order.iter_mut() {
            if k.column >= width {
                if let Some(i) = find(&hidden[k.column - width], &[]) {
                    k.column = i;
                }
            }
        }
        let plain = s.distinct_clause.len() == 1 && s.distinct_clause[0].node.is_none();
        if plain {
            if let Some((i, _)) = order.iter().enumerate().find(|(_, k)| k.column >= width) {
                return Err(self.err_at(
                    SqlError::new(b"42P10", "for SELECT DISTINCT, ORDER BY expressions must appear in select list"),
                    sort_locs.get(i).copied().unwrap_or(-1),
                ));
            }
            return Ok(Some((0..width).collect()));
        }
        // DISTINCT ON (...)
        let mut on: Vec<(usize, i32)> = Vec::new();
        for d in &s.distinct_clause {
            let Some(d) = d.node.as_ref() else { continue };
            let col = match d {
                NodeEnum::AConst(pb::AConst { val: Some(Val::Ival(i)), location, .. }) => {
                    let pos = i.ival;
                    if pos < 1 || pos as usize > width {
                        return Err(self.err_at(SqlError::new(b"42P10", format!("DISTINCT ON position {pos} is not in select list")), *location));
                    }
                    pos as usize - 1
                }
                NodeEnum::ColumnRef(c)
                    if c.fields.len() == 1 && str_of(&c.fields[0]).is_some_and(|name| targets.iter().filter(|t| t.name == name).count() == 1) =>
                {
                    let name = str_of(&c.fields[0]).unwrap_or_default();
                    targets.iter().position(|t| t.name == name).unwrap_or(0)
                }
                other => {
                    let e = self.expr(other, scope)?;
                    let e = self.resolve_unknown(e);
                    match find(&e, hidden) {
                        Some(i) => i,
                        None => {
                            hidden.push(e);
                            width + hidden.len() - 1
                        }
                    }
                }
            };
            if !on.iter().any(|o| o.0 == col) {
                on.push((col, location(d)));
            }
        }
        // ORDER BY must begin with the DISTINCT ON expressions (any order among them).
        let mut skipped = false;
        let mut covered: Vec<usize> = Vec::new();
        for k in order.iter() {
            match on.iter().find(|o| o.0 == k.column) {
                Some((c, loc)) => {
                    if skipped {
                        return Err(self.err_at(
                            SqlError::new(b"42P10", "SELECT DISTINCT ON expressions must match initial ORDER BY expressions"),
                            *loc,
                        ));
                    }
                    covered.push(*c);
                }
                None => skipped = true,
            }
        }
        for (c, loc) in &on {
            if !covered.contains(c) && skipped {
                return Err(self.err_at(
                    SqlError::new(b"42P10", "SELECT DISTINCT ON expressions must match initial ORDER BY expressions"),
                    *loc,
                ));
            }
        }
        Ok(Some(on.into_iter().map(|o| o.0).collect()))
    }
}
