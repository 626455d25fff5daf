//! numeric in the analyzer: `numeric(p[, s])` type modifiers and the numeric
//! functions (round, trunc, ceil, floor, abs, sign, sqrt, mod, div, scale,
//! min_scale, trim_scale), resolved by [`ferrogres_datum::numeric::resolve`].

use super::Analyzer;
use ferrogres_datum::errors::{Result, SqlError};
use crate::plan::{Expr, Func};
use ferrogres_datum::types::{CastContext, Type};
use pg_query::protobuf::{self as pb, a_const::Val};
use pg_query::NodeEnum;

impl Analyzer<'_> {
    /// numeric(p) and numeric(p, s): the typmod, or 22023 for bad bounds.
    pub(super) fn numeric_typmod(&self, tn: &pb::TypeName) -> Result<(Type, i32)> {
        let mut mods = Vec::new();
        for m in &tn.typmods {
            match m.node.as_ref() {
                Some(NodeEnum::AConst(pb::AConst { val: Some(Val::Ival(i)), .. })) => mods.push(i.ival),
                _ => return Err(self.err_at(SqlError::new(b"22P02", "type modifiers must be simple constants or identifiers"), tn.location)),
            }
        }
        let (p, s) = match mods.as_slice() {
            [p] => (*p, 0),
            [p, s] => (*p, *s),
            _ => return Err(self.err_at(SqlError::new(b"22023", "invalid NUMERIC type modifier"), tn.location)),
        };
        let typmod = ferrogres_datum::numeric::make_typmod(p, s).map_err(|e| self.err_at(e, tn.location))?;
        Ok((Type::Numeric, typmod))
    }

    /// A numeric function call, if `name(args)` is one.
    pub(super) fn numeric_func(&mut self, name: &str, args: &mut Vec<Expr>, locs: &[i32]) -> Result<Option<Expr>> {
        let types: Vec<Type> = args.iter().map(|a| a.ty()).collect();
        let Some((func, sig, ret)) = ferrogres_datum::numeric::resolve(name, &types) else { return Ok(None) };
        let mut out = Vec::with_capacity(args.len());
        for ((a, want), loc) in std::mem::take(args).into_iter().zip(sig).zip(locs) {
            out.push(self.coerce(a, want, CastContext::Implicit, *loc)?);
        }
        Ok(Some(Expr::Func { func: Func::Numeric(func), args: out, ty: ret }))
    }
}
