//! `f(..., VARIADIC array)` for the built-ins declared `VARIADIC "any"`
//! (concat, concat_ws, format): the array's elements become the variadic
//! arguments when the call runs ([`crate::functions::call_variadic`]).

use super::Analyzer;
use ferrogres_datum::errors::{Result, SqlError};
use crate::functions::{FuncId, BUILTINS};
use crate::plan::{Expr, Func};
use ferrogres_datum::types::{CastContext, Type};

impl Analyzer<'_> {
    /// A call with `VARIADIC` before its last argument.
    pub(super) fn variadic_call(&mut self, name: &str, args: Vec<Expr>, locs: &[i32], loc: i32) -> Result<Expr> {
        let last = args.len() - 1;
        let last_ty = args[last].ty();
        let id = (0..BUILTINS.len()).find(|&i| BUILTINS[i].name == name && BUILTINS[i].variadic_any && BUILTINS[i].args.len() == last);
        let Some(id) = id else {
            let types: Vec<&str> = args.iter().map(|a| a.ty().sql_name()).collect();
            return Err(self.err_at(
                SqlError::new(b"42883", format!("function {name}({}) does not exist", types.join(", ")))
                    .with_hint("No function matches the given name and argument types. You might need to add explicit type casts."),
                loc,
            ));
        };
        if !matches!(last_ty, Type::Array(_)) {
            return Err(self.err_at(SqlError::new(b"42804", "VARIADIC argument must be an array"), locs.get(last).copied().unwrap_or(loc)));
        }
        let mut out = Vec::with_capacity(args.len());
        for (i, a) in args.into_iter().enumerate() {
            if i < last {
                let want = BUILTINS[id].args[i];
                let l = locs.get(i).copied().unwrap_or(loc);
                out.push(if a.ty() == want || (a.ty() == Type::Varchar && want == Type::Text) { a } else { self.coerce(a, want, CastContext::Implicit, l)? });
            } else {
                out.push(a);
            }
        }
        Ok(Expr::Func { func: Func::Variadic(FuncId(id as u16)), args: out, ty: BUILTINS[id].ret })
    }
}
