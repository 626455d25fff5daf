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
use crate::errors::{Result, SqlError};
use crate::plan::*;
use crate::types::{CastContext, Type};
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
