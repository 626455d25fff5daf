//! UNION / INTERSECT / EXCEPT, VALUES lists as queries, and WITH [RECURSIVE].
//!
//! A set operation's column types are resolved pairwise as PostgreSQL's
//! select_common_type does (42804 `UNION types integer and text cannot be
//! matched`), each input's column cast to the result type; its names are
//! the leftmost input's. ORDER BY on the whole result takes output column
//! names or positions only (0A000 otherwise, as PostgreSQL). A VALUES list's
//! columns are `column1`, `column2`, ... with the common type of each column.
//!
//! A CTE is analyzed once and each reference reads a copy of its query (a
//! subquery in FROM). WITH RECURSIVE `base UNION [ALL] step`: the step sees
//! the CTE as its working table ([`crate::setop`]).

use super::from::{Cte, Namespace};
use super::{location, node, str_of, Analyzer, Scope};
use ferrogres_datum::errors::{Result, SqlError};
use crate::plan::*;
use crate::setop::{Recursive, SetOp, SetOpKind};
use ferrogres_datum::types::{CastContext, Type, Value};
use pg_query::protobuf::{self as pb, a_const::Val};
use pg_query::NodeEnum;
use std::rc::Rc;

fn empty_query(source: Source, targets: Vec<Target>) -> Query {
    Query { source, filter: None, aggregates: vec![], targets, hidden: vec![], order: vec![], limit: None, offset: None, grouping: None, distinct: None, paths: Default::default(), init_plans: Default::default() }
}

/// The leftmost location in an expression (PostgreSQL's exprLocation of an operator).
fn leftmost(n: &NodeEnum) -> i32 {
    let own = location(n);
    match n {
        NodeEnum::AExpr(a) => match node(&a.lexpr).map(leftmost) {
            Some(l) if l >= 0 && (own < 0 || l < own) => l,
            _ => own,
        },
        _ => own,
    }
}

fn kind_name(k: SetOpKind) -> &'static str {
    match k {
        SetOpKind::Union => "UNION",
        SetOpKind::Intersect => "INTERSECT",
        SetOpKind::Except => "EXCEPT",
    }
}

/// The location of the first target of the leftmost SELECT under `s`.
fn first_target_location(s: &pb::SelectStmt) -> i32 {
    if let Some(l) = s.larg.as_deref() {
        return first_target_location(l);
    }
    s.target_list.first().and_then(|t| t.node.as_ref()).map_or(-1, location)
}

impl<'a> Analyzer<'a> {
    fn outer_with(&self, outer: &[Rc<Namespace>], ctes: &[Rc<Cte>]) -> Vec<Rc<Namespace>> {
        let mut o = outer.to_vec();
        o.push(Rc::new(Namespace { ctes: ctes.to_vec(), ..Default::default() }));
        o
    }

    pub(super) fn set_operation(&mut self, s: &pb::SelectStmt, outer: &[Rc<Namespace>]) -> Result<Query> {
        if !s.locking_clause.is_empty() {
            return Err(SqlError::new(b"0A000", "FOR UPDATE is not allowed with UNION/INTERSECT/EXCEPT"));
        }
        let ctes = match &s.with_clause {
            Some(w) => self.with_clause(w, outer)?,
            None => Vec::new(),
        };
        let mut q = self.setop_node(s, &self.outer_with(outer, &ctes))?;
        self.output_order_limit(s, &mut q, true)?;
        Ok(q)
    }

    /// One set operation node (children one level below it).
    fn setop_node(&mut self, s: &pb::SelectStmt, outer: &[Rc<Namespace>]) -> Result<Query> {
        ferrogres_datum::stack_depth::check()?;
        let kind = match pb::SetOperation::try_from(s.op).unwrap_or(pb::SetOperation::Undefined) {
            pb::SetOperation::SetopUnion => SetOpKind::Union,
            pb::SetOperation::SetopIntersect => SetOpKind::Intersect,
            pb::SetOperation::SetopExcept => SetOpKind::Except,
            _ => return Err(SqlError::internal("not a set operation")),
        };
        let (Some(l), Some(r)) = (s.larg.as_deref(), s.rarg.as_deref()) else {
            return Err(SqlError::internal("set operation without inputs"));
        };
        let child = |this: &mut Self, c: &pb::SelectStmt| -> Result<Query> {
            if c.op != pb::SetOperation::SetopNone as i32 && c.sort_clause.is_empty() && c.limit_count.is_none() && c.limit_offset.is_none() && c.with_clause.is_none() {
                let mut o = outer.to_vec();
                o.push(Rc::new(Namespace::default()));
                this.setop_node(c, &o)
            } else {
                this.select_level(c, outer)
            }
        };
        let mut lq = child(self, l)?;
        let mut rq = child(self, r)?;
        if lq.targets.len() != rq.targets.len() {
            let loc = first_target_location(r);
            return Err(self.err_at(SqlError::new(b"42601", format!("each {} query must have the same number of columns", kind_name(kind))), loc));
        }
        let mut targets = Vec::new();
        for i in 0..lq.targets.len() {
            let (le, re) = (lq.targets[i].expr.clone(), rq.targets[i].expr.clone());
            let unknown = |e: &Expr| matches!(e, Expr::Const(Value::Null, Type::Text));
            let items = vec![
                (if unknown(&le) { Expr::Const(Value::Null, Type::Unknown) } else { le }, -1),
                (if unknown(&re) { Expr::Const(Value::Null, Type::Unknown) } else { re }, -1),
            ];
            let (mut out, ty) = self.common_type(items, kind_name(kind)).map_err(|e| {
                let loc = first_target_location(r);
                if e.sqlstate() == "42804" { e.at(self.sql, loc) } else { e }
            })?;
            rq.targets[i].expr = out.pop().expect("two");
            lq.targets[i].expr = out.pop().expect("two");
            let typmod = if lq.targets[i].typmod == rq.targets[i].typmod { lq.targets[i].typmod } else { -1 };
            targets.push(Target { name: lq.targets[i].name.clone(), expr: Expr::Column(i, ty), typmod, origin: None });
        }
        let all = s.all;
        Ok(empty_query(Source::SetOp(Box::new(SetOp { kind, all, left: lq, right: rq })), targets))
    }

    /// ORDER BY (output names and positions), LIMIT and OFFSET of a set
    /// operation or VALUES query.
    fn output_order_limit(&mut self, s: &pb::SelectStmt, q: &mut Query, setop: bool) -> Result<()> {
        for sb in &s.sort_clause {
            let Some(NodeEnum::SortBy(sb)) = &sb.node else { continue };
            let (desc, nulls_first) = super::sort_direction(sb)?;
            let Some(n) = node(&sb.node) else { continue };
            let column = match n {
                NodeEnum::AConst(pb::AConst { val: Some(Val::Ival(i)), location, .. }) => {
                    let pos = i.ival;
                    if pos < 1 || pos as usize > q.targets.len() {
                        return Err(self.err_at(SqlError::new(b"42P10", format!("ORDER BY position {pos} is not in select list")), *location));
                    }
                    pos as usize - 1
                }
                NodeEnum::ColumnRef(c) if c.fields.len() == 1 && str_of(&c.fields[0]).is_some() => {
                    let name = str_of(&c.fields[0]).unwrap_or_default();
                    match q.targets.iter().position(|t| t.name == name) {
                        Some(i) => i,
                        None => return Err(self.err_at(SqlError::new(b"42703", format!("column \"{name}\" does not exist")), c.location)),
                    }
                }
                other if setop => {
                    return Err(self
                        .err_at(SqlError::new(b"0A000", "invalid UNION/INTERSECT/EXCEPT ORDER BY clause"), leftmost(other))
                        .with_detail("Only result column names can be used, not expressions or functions.")
                        .with_hint("Add the expression/function to every SELECT, or move the UNION into a FROM clause."));
                }
                other => return Err(self.err_at(SqlError::not_supported("ORDER BY expressions on VALUES"), location(other))),
            };
            q.order.push(SortKey { column, desc, nulls_first });
        }
        let mut lscope = Scope::new(None);
        if let Some(n) = node(&s.limit_count) {
            if !matches!(n, NodeEnum::AConst(c) if c.isnull) {
                let e = self.expr(n, &mut lscope)?;
                q.limit = Some(self.coerce(e, Type::Int8, CastContext::Implicit, location(n))?);
            }
        }
        if let Some(n) = node(&s.limit_offset) {
            let e = self.expr(n, &mut lscope)?;
            q.offset = Some(self.coerce(e, Type::Int8, CastContext::Implicit, location(n))?);
        }
        Ok(())
    }

    /// `VALUES (...), (...)` as a query.
    pub(super) fn values_query(&mut self, s: &pb::SelectStmt, outer: &[Rc<Namespace>]) -> Result<Query> {
        let ctes = match &s.with_clause {
            Some(w) => self.with_clause(w, outer)?,
            None => Vec::new(),
        };
        let mut scope = Scope::new(None);
        scope.outer = outer.to_vec();
        if !ctes.is_empty() {
            scope.ns = Some(Rc::new(Namespace { ctes, ..Default::default() }));
        }
        let mut rows: Vec<Vec<(Expr, i32)>> = Vec::new();
        for l in &s.values_lists {
            let Some(NodeEnum::List(l)) = &l.node else { continue };
            let mut row = Vec::new();
            for item in &l.items {
                let Some(n) = item.node.as_ref() else { continue };
                if matches!(n, NodeEnum::SetToDefault(_)) {
                    return Err(self.err_at(SqlError::new(b"42601", "DEFAULT is not allowed in this context"), location(n)));
                }
                row.push((self.expr(n, &mut scope)?, location(n)));
            }
            if let Some(first) = rows.first() {
                if first.len() != row.len() {
                    let loc = l.items.first().and_then(|i| i.node.as_ref()).map_or(-1, location);
                    return Err(self.err_at(SqlError::new(b"42601", "VALUES lists must all be the same length"), loc));
                }
            }
            rows.push(row);
        }
        let width = rows.first().map_or(0, |r| r.len());
        let mut cols: Vec<Vec<Expr>> = vec![Vec::new(); rows.len()];
        let mut targets = Vec::new();
        for c in 0..width {
            let items: Vec<(Expr, i32)> = rows.iter().map(|r| r[c].clone()).collect();
            let (exprs, ty) = self.common_type(items, "VALUES")?;
            for (r, e) in exprs.into_iter().enumerate() {
                cols[r].push(e);
            }
            targets.push(Target { name: format!("column{}", c + 1), expr: Expr::Column(c, ty), typmod: -1, origin: None });
        }
        let mut q = empty_query(Source::Values(cols), targets);
        self.output_order_limit(s, &mut q, false)?;
        Ok(q)
    }

    /// The CTEs of a WITH clause, in order (each sees the ones before it).
    pub(super) fn with_clause(&mut self, w: &pb::WithClause, outer: &[Rc<Namespace>]) -> Result<Vec<Rc<Cte>>> {
        let mut ctes: Vec<Rc<Cte>> = Vec::new();
        for c in &w.ctes {
            let Some(NodeEnum::CommonTableExpr(c)) = &c.node else { continue };
            if ctes.iter().any(|x| x.name == c.ctename) {
                return Err(self.err_at(SqlError::new(b"42712", format!("WITH query name \"{}\" specified more than once", c.ctename)), c.location));
            }
            let Some(NodeEnum::SelectStmt(body)) = node(&c.ctequery) else {
                // INSERT / UPDATE / DELETE ... RETURNING (analyze::cte_dml).
                ctes.push(self.dml_cte(w, c)?);
                continue;
            };
            let self_ref = w.recursive && format!("{body:?}").contains(&format!("relname: {:?}", c.ctename));
            let aliases: Vec<String> = c.aliascolnames.iter().filter_map(str_of).map(str::to_string).collect();
            let q = if self_ref { self.recursive_cte(c, body, &aliases, outer, &ctes)? } else { self.select_level(body, &self.outer_with(outer, &ctes))? };
            // A CTE that reads columns of an enclosing query (asyncpg's type
            // introspection has one in a scalar subquery) is inlined at its
            // references like any other, so it is bound to each outer row there.
            if aliases.len() > q.targets.len() {
                return Err(self.err_at(
                    SqlError::new(b"42P10", format!("WITH query \"{}\" has {} columns available but {} columns specified", c.ctename, q.targets.len(), aliases.len())),
                    c.location,
                ));
            }
            let cols = q
                .targets
                .iter()
                .enumerate()
                .map(|(i, t)| (aliases.get(i).cloned().unwrap_or_else(|| t.name.clone()), t.expr.ty(), t.typmod))
                .collect();
            ctes.push(Rc::new(Cte { name: c.ctename.clone(), cols, query: Some(q), work: None }));
        }
        Ok(ctes)
    }

    fn recursive_cte(&mut self, c: &pb::CommonTableExpr, body: &pb::SelectStmt, aliases: &[String], outer: &[Rc<Namespace>], ctes: &[Rc<Cte>]) -> Result<Query> {
        let name = &c.ctename;
        let bad_form = || {
            SqlError::new(b"42P19", format!("recursive query \"{name}\" does not have the form non-recursive-term UNION [ALL] recursive-term"))
        };
        if body.op != pb::SetOperation::SetopUnion as i32 {
            return Err(self.err_at(bad_form(), c.location));
        }
        if !body.sort_clause.is_empty() {
            return Err(self.err_at(SqlError::not_supported("ORDER BY in a recursive query"), c.location));
        }
        if body.limit_count.is_some() || body.limit_offset.is_some() {
            return Err(self.err_at(SqlError::not_supported("LIMIT in a recursive query"), c.location));
        }
        let (Some(l), Some(r)) = (body.larg.as_deref(), body.rarg.as_deref()) else {
            return Err(self.err_at(bad_form(), c.location));
        };
        if let Some(loc) = self_reference(l, name) {
            return Err(self.err_at(
                SqlError::new(b"42P19", format!("recursive reference to query \"{name}\" must not appear within its non-recursive term")),
                loc,
            ));
        }
        // Inputs of the UNION are one level below the CTE's query.
        let level = self.outer_with(outer, ctes);
        let mut inner = level.clone();
        inner.push(Rc::new(Namespace::default()));
        let base = self.select_level(l, &inner)?;
        let id = crate::setop::next_id();
        let cols: Vec<(String, Type, i32)> =
            base.targets.iter().enumerate().map(|(i, t)| (aliases.get(i).cloned().unwrap_or_else(|| t.name.clone()), t.expr.ty(), t.typmod)).collect();
        let mut with_self = ctes.to_vec();
        with_self.push(Rc::new(Cte { name: name.clone(), cols: cols.clone(), query: None, work: Some(id) }));
        let mut inner2 = self.outer_with(outer, &with_self);
        inner2.push(Rc::new(Namespace::default()));
        let mut step = self.select_level(r, &inner2)?;
        if step.targets.len() != base.targets.len() {
            return Err(self.err_at(SqlError::new(b"42601", "each UNION query must have the same number of columns"), first_target_location(r)));
        }
        let mut targets = Vec::new();
        for (i, (cname, ty, typmod)) in cols.iter().enumerate() {
            let st = step.targets[i].expr.ty();
            if st != *ty {
                let items = vec![(Expr::Column(0, *ty), -1), (Expr::Column(1, st), -1)];
                let (_, common) = self.common_type(items, "UNION")?;
                if common != *ty {
                    return Err(self
                        .err_at(
                            SqlError::new(
                                b"42804",
                                format!("recursive query \"{name}\" column {} has type {} in non-recursive term but type {} overall", i + 1, ty.sql_name(), common.sql_name()),
                            ),
                            base.targets.first().map_or(-1, |_| first_target_location(l)),
                        )
                        .with_hint("Cast the output of the non-recursive term to the correct type."));
                }
                let e = step.targets[i].expr.clone();
                step.targets[i].expr = self.coerce(e, *ty, CastContext::Implicit, -1)?;
            }
            targets.push(Target { name: cname.clone(), expr: Expr::Column(i, *ty), typmod: *typmod, origin: None });
        }
        Ok(empty_query(Source::Recursive(Box::new(Recursive { id, base, step, all: body.all })), targets))
    }
}

/// The location of a FROM reference to `name` in `s` (its FROM list and joins).
fn self_reference(s: &pb::SelectStmt, name: &str) -> Option<i32> {
    fn item(n: &NodeEnum, name: &str) -> Option<i32> {
        match n {
            NodeEnum::RangeVar(rv) if rv.schemaname.is_empty() && rv.relname == name => Some(rv.location),
            NodeEnum::JoinExpr(j) => node(&j.larg).and_then(|x| item(x, name)).or_else(|| node(&j.rarg).and_then(|x| item(x, name))),
            NodeEnum::RangeSubselect(r) => match node(&r.subquery) {
                Some(NodeEnum::SelectStmt(s)) => self_reference(s, name),
                _ => None,
            },
            _ => None,
        }
    }
    if let (Some(l), Some(r)) = (s.larg.as_deref(), s.rarg.as_deref()) {
        return self_reference(l, name).or_else(|| self_reference(r, name));
    }
    s.from_clause.iter().filter_map(|f| f.node.as_ref()).find_map(|f| item(f, name))
}
