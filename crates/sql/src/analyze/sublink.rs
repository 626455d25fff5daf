//! Subqueries in expressions (pg_query's SubLink): scalar `(SELECT ...)`,
//! `EXISTS`, `x [NOT] IN (SELECT ...)`, `x op ANY/SOME/ALL (SELECT ...)`.
//! The subquery is analyzed one level below the expression's query, seeing
//! that query's columns as outer references ([`crate::subquery`] runs it).

use super::{node, Analyzer, Scope};
use ferrogres_datum::errors::{Result, SqlError};
use crate::plan::*;
use crate::subquery::{SubKind, SubPlan};
use ferrogres_datum::types::{CastContext, Type};
use pg_query::protobuf as pb;
use pg_query::NodeEnum;

/// The output column name of a subquery expression (PostgreSQL's
/// FigureColname): EXISTS is `exists`, a scalar subquery takes its column's name.
pub(super) fn column_name(e: &Expr) -> String {
    match e {
        Expr::SubPlan(sp) if sp.kind == SubKind::Exists => "exists".into(),
        Expr::SubPlan(sp) if sp.kind == SubKind::Array => "array".into(),
        Expr::SubPlan(sp) if sp.kind == SubKind::Expr => sp.query.targets.first().map_or("?column?".into(), |t| t.name.clone()),
        _ => "?column?".into(),
    }
}

impl<'a> Analyzer<'a> {
    pub(super) fn sublink(&mut self, sl: &pb::SubLink, scope: &mut Scope) -> Result<Expr> {
        use pb::SubLinkType as T;
        let kind = match T::try_from(sl.sub_link_type).unwrap_or(T::Undefined) {
            T::ExistsSublink => SubKind::Exists,
            T::ExprSublink => SubKind::Expr,
            T::AnySublink => SubKind::Any,
            T::AllSublink => SubKind::All,
            T::ArraySublink => SubKind::Array,
            other => return Err(self.err_at(SqlError::not_supported(format!("subquery form {other:?}")), sl.location)),
        };
        let Some(NodeEnum::SelectStmt(sub)) = node(&sl.subselect) else {
            return Err(SqlError::internal("subquery without SELECT"));
        };
        let mut outer = scope.outer.clone();
        outer.push(self.level_ns(scope));
        let mut query = self.select_level(sub, &outer)?;
        // Aggregates of this level written in the subquery, and this level's
        // columns it reads (`agg_level`).
        self.attach_upper(&mut query, scope)?;
        let correlated = crate::subquery::is_correlated(&query);
        let width = query.targets.len();
        let (lhs, cmp, ty) = match kind {
            SubKind::Exists => (None, None, Type::Bool),
            SubKind::Expr => {
                if width != 1 {
                    return Err(self.err_at(SqlError::new(b"42601", "subquery must return only one column"), sl.location));
                }
                (None, None, query.targets[0].expr.ty())
            }
            SubKind::Array => {
                if width != 1 {
                    return Err(self.err_at(SqlError::new(b"42601", "subquery must return only one column"), sl.location));
                }
                let elem = query.targets[0].expr.ty();
                let elem = if elem == Type::Unknown { Type::Text } else { elem };
                let Some(ty) = ferrogres_datum::array::array_of(elem) else {
                    return Err(self.err_at(
                        SqlError::new(b"42704", format!("could not find array type for data type {}", elem.sql_name())),
                        sl.location,
                    ));
                };
                (None, None, ty)
            }
            SubKind::Any | SubKind::All => {
                let Some(test) = node(&sl.testexpr) else { return Err(SqlError::internal("ANY without left operand")) };
                if let Some(items) = super::row_compare::row_items(test) {
                    let (row_lhs, cmp) = self.row_sublink(sl, &items, &query, scope)?;
                    return Ok(Expr::SubPlan(Box::new(SubPlan { kind, query, lhs: None, cmp: Some(cmp), correlated, ty: Type::Bool, rows: None, row_lhs })));
                }
                if width > 1 {
                    return Err(self.err_at(SqlError::new(b"42601", "subquery has too many columns"), sl.location));
                }
                if width == 0 {
                    return Err(self.err_at(SqlError::new(b"42601", "subquery has too few columns"), sl.location));
                }
                let op = sl.oper_name.iter().filter_map(super::str_of).next_back().unwrap_or("=").to_string();
                let lhs = self.expr(test, scope)?;
                let sub_ty = query.targets[0].expr.ty();
                let lhs = if lhs.ty() == Type::Unknown { self.coerce(lhs, sub_ty, CastContext::Implicit, super::location(test))? } else { lhs };
                let cmp = self.binary(&op, Expr::Column(0, lhs.ty()), Expr::Column(1, sub_ty), sl.location, (sl.location, sl.location))?;
                if cmp.ty() != Type::Bool {
                    return Err(self.err_at(SqlError::new(b"42809", "op ANY/ALL (array) requires operator to yield boolean".to_string()), sl.location));
                }
                (Some(lhs), Some(cmp), Type::Bool)
            }
        };
        Ok(Expr::SubPlan(Box::new(SubPlan { kind, query, lhs, cmp, correlated, ty, rows: None, row_lhs: vec![] })))
    }

    /// `(a, b) op ANY/ALL (SELECT x, y ...)`: the left row's items and the
    /// comparison over [items..., subquery columns...].
    fn row_sublink(&mut self, sl: &pb::SubLink, items: &[&NodeEnum], query: &Query, scope: &mut Scope) -> Result<(Vec<Expr>, Expr)> {
        let (n, width) = (items.len(), query.targets.len());
        if width < n {
            return Err(self.err_at(SqlError::new(b"42601", "subquery has too few columns"), sl.location));
        }
        if width > n {
            return Err(self.err_at(SqlError::new(b"42601", "subquery has too many columns"), sl.location));
        }
        let op = sl.oper_name.iter().filter_map(super::str_of).next_back().unwrap_or("=").to_string();
        let mut lhs = Vec::new();
        let (mut l, mut r) = (Vec::new(), Vec::new());
        for (i, item) in items.iter().enumerate() {
            let e = self.expr(item, scope)?;
            let sub_ty = query.targets[i].expr.ty();
            let e = if e.ty() == Type::Unknown { self.coerce(e, sub_ty, CastContext::Implicit, super::location(item))? } else { e };
            l.push((Expr::Column(i, e.ty()), sl.location));
            r.push((Expr::Column(n + i, sub_ty), sl.location));
            lhs.push(e);
        }
        let cmp = self.row_op(&op, l, r, sl.location)?;
        Ok((lhs, cmp))
    }
}
