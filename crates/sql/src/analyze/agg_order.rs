//! Analysis of `ORDER BY` inside an aggregate call and of the JSON
//! aggregates' arguments ([`crate::agg_order`] runs them).
//!
//! The ORDER BY items are expressions over the aggregate's input (an integer
//! constant is a constant here, not an output position), inside the
//! aggregate: an aggregate in them is "aggregate function calls cannot be
//! nested". With DISTINCT each item must equal one of the arguments (42P10,
//! at the item), as PostgreSQL requires.
//! A plain function called with ORDER BY or FILTER is 42809 once the
//! function is known to exist (an unknown function is 42883 first).

use super::{location, node, sort_direction, Analyzer, Scope};
use crate::agg_order::AggSortKey;
use ferrogres_datum::errors::{Result, SqlError};
use crate::plan::*;
use ferrogres_datum::types::{CastContext, Type};
use pg_query::protobuf as pb;
use pg_query::NodeEnum;

impl<'a> Analyzer<'a> {
    /// The ORDER BY items of aggregate call `f` whose arguments are `args`;
    /// `in_agg` as for `aggregate_call`.
    pub(super) fn agg_order(&mut self, f: &pb::FuncCall, args: &[&Expr], scope: &mut Scope, in_agg: bool) -> Result<Vec<AggSortKey>> {
        let mut keys = Vec::new();
        for item in &f.agg_order {
            let Some(NodeEnum::SortBy(sb)) = item.node.as_ref() else { continue };
            let (desc, nulls_first) = sort_direction(sb)?;
            let Some(n) = node(&sb.node) else { continue };
            scope.in_agg = in_agg;
            let r = self.expr(n, scope);
            scope.in_agg = false;
            let e = self.resolve_unknown(r?);
            if f.agg_distinct {
                let form = format!("{e:?}");
                if !args.iter().any(|a| format!("{a:?}") == form) {
                    return Err(self.err_at(
                        SqlError::new(b"42P10", "in an aggregate with DISTINCT, ORDER BY expressions must appear in argument list"),
                        location(n),
                    ));
                }
            }
            keys.push(AggSortKey { expr: e, desc, nulls_first });
        }
        Ok(keys)
    }

    /// json_object_agg's second argument (the values; an untyped literal is text).
    pub(super) fn json_object_agg_value(&mut self, f: &pb::FuncCall, scope: &mut Scope, in_agg: bool) -> Result<Expr> {
        let Some(n) = f.args.get(1).and_then(|a| a.node.as_ref()) else { return Err(SqlError::internal("json_object_agg without a value")) };
        scope.in_agg = in_agg;
        let r = self.expr(n, scope);
        scope.in_agg = false;
        let e = r?;
        if e.ty() == Type::Unknown {
            return self.coerce(e, Type::Text, CastContext::Implicit, location(n));
        }
        Ok(e)
    }

    /// The types of aggregate call `f`'s arguments (for 42883 when no
    /// aggregate of that name takes them).
    pub(super) fn agg_arg_types(&mut self, f: &pb::FuncCall, scope: &mut Scope, in_agg: bool) -> Result<Vec<Type>> {
        let mut types = Vec::new();
        for n in f.args.iter().filter_map(|a| a.node.as_ref()) {
            scope.in_agg = in_agg;
            let r = self.expr(n, scope);
            scope.in_agg = false;
            types.push(r?.ty());
        }
        Ok(types)
    }

    /// An ordered-set aggregate `percentile_cont(f) / percentile_disc(f) /
    /// mode() WITHIN GROUP (ORDER BY x)` (the fraction a constant), or the
    /// error PostgreSQL gives for a call of another shape.
    pub(super) fn ordered_set_call(&mut self, f: &pb::FuncCall, name: &str, kind: AggKind, scope: &mut Scope, in_agg: bool) -> Result<Aggregate> {
        let mut types = self.agg_arg_types(f, scope, in_agg)?;
        let direct = types.clone();
        let mut order_exprs = Vec::new();
        for item in &f.agg_order {
            let Some(NodeEnum::SortBy(sb)) = item.node.as_ref() else { continue };
            let Some(n) = node(&sb.node) else { continue };
            scope.in_agg = in_agg;
            let r = self.expr(n, scope);
            scope.in_agg = false;
            let e = self.resolve_unknown(r?);
            types.push(e.ty());
            order_exprs.push((e, sb, location(n)));
        }
        let shape_ok = match kind {
            AggKind::PercentileCont | AggKind::PercentileDisc => direct.len() == 1 && order_exprs.len() == 1,
            AggKind::Mode => direct.is_empty() && order_exprs.len() == 1,
            _ => false,
        };
        if kind == AggKind::Mode && !f.agg_within_group && direct.len() == 1 {
            return Err(self.err_at(SqlError::new(b"42809", format!("WITHIN GROUP is required for ordered-set aggregate {name}")), f.location));
        }
        if !shape_ok || !f.agg_within_group || !matches!(name, "percentile_cont" | "percentile_disc" | "mode") {
            return Err(self.unknown_function(name, &types, f.location));
        }
        if f.agg_distinct {
            return Err(self.err_at(SqlError::new(b"42601", "cannot use DISTINCT with WITHIN GROUP"), f.location));
        }
        let (x, sb, xloc) = order_exprs.pop().expect("one ORDER BY item");
        let x = if kind == AggKind::PercentileCont {
            if !matches!(x.ty(), Type::Int2 | Type::Int4 | Type::Int8 | Type::Float4 | Type::Float8 | Type::Numeric) {
                return Err(self.unknown_function(name, &types, f.location));
            }
            self.coerce(x, Type::Float8, CastContext::Implicit, xloc)?
        } else {
            x
        };
        let fraction = match f.args.first().and_then(|a| a.node.as_ref()) {
            Some(n) => {
                scope.in_agg = in_agg;
                let r = self.expr(n, scope);
                scope.in_agg = false;
                let e = self.coerce(r?, Type::Float8, CastContext::Implicit, location(n))?;
                if crate::exec::eval_const(&e)?.is_none() {
                    return Err(self.err_at(SqlError::not_supported("an ordered-set aggregate's fraction that is not a constant"), location(n)));
                }
                Some(e)
            }
            None => None,
        };
        let filter = match node(&f.agg_filter) {
            Some(fl) => {
                scope.in_agg = in_agg;
                let r = self.bool_expr(fl, scope, "FILTER");
                scope.in_agg = false;
                Some(r?)
            }
            None => None,
        };
        let (desc, nulls_first) = sort_direction(sb)?;
        let ty = if kind == AggKind::PercentileCont { Type::Float8 } else { x.ty() };
        let order = vec![AggSortKey { expr: x.clone(), desc, nulls_first }];
        Ok(Aggregate { kind, arg: Some(x), ty, filter, distinct: false, delim: None, arg2: fraction, order })
    }

    /// 42809 for ORDER BY or FILTER given to plain function `name` (which exists).
    pub(super) fn not_an_aggregate(&mut self, f: &pb::FuncCall, name: &str, scope: &mut Scope) -> Result<Option<SqlError>> {
        let what = if !f.agg_order.is_empty() {
            "ORDER BY"
        } else if f.agg_filter.is_some() {
            "FILTER"
        } else {
            return Ok(None);
        };
        let mut plain = f.clone();
        plain.agg_order.clear();
        plain.agg_filter = None;
        self.plain_call(&plain, name, scope)?;
        Ok(Some(self.err_at(SqlError::new(b"42809", format!("{what} specified, but {name} is not an aggregate function")), f.location)))
    }
}
