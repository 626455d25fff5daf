//! Row constructors compared (PostgreSQL's RowCompareExpr and row `IN`):
//! `ROW(a, b) = ROW(c, d)`, `(a, b) <> (c, d)`, `(a, b) < (c, d)` (and `<=`,
//! `>`, `>=`), `(a, b) IS [NOT] DISTINCT FROM (c, d)`, `(a, b) [NOT] IN ((1, 2),
//! (3, 4))`, and the comparison of `(a, b) [NOT] IN (SELECT x, y ...)` /
//! `(a, b) op ANY/ALL (SELECT ...)` (`analyze::sublink`).
//!
//! Each is rewritten into the item comparisons, with SQL's three-valued logic
//! giving PostgreSQL's NULL rules:
//! - `=`: `a = c AND b = d`; `<>`: `a <> c OR b <> d`;
//! - `<` (lexicographic, the first unequal pair decides, a NULL pair before it
//!   makes the result NULL): `a < c OR (a = c AND b < d)`, the last pair with
//!   the operator itself (`<=` there for `<=`);
//! - IS DISTINCT FROM: the pairs ORed; IS NOT DISTINCT FROM: ANDed.
//!
//! Items are evaluated once per comparison they appear in (PostgreSQL: once),
//! which differs only for volatile items.

use super::{location, node, Analyzer, Scope};
use ferrogres_datum::errors::{Result, SqlError};
use crate::plan::*;
use pg_query::protobuf as pb;
use pg_query::NodeEnum;

/// The items of a row constructor `ROW(...)` / `(a, b)`.
pub(super) fn row_items(n: &NodeEnum) -> Option<Vec<&NodeEnum>> {
    match n {
        NodeEnum::RowExpr(r) => Some(r.args.iter().filter_map(|a| a.node.as_ref()).collect()),
        _ => None,
    }
}

impl<'a> Analyzer<'a> {
    /// An operator, IS [NOT] DISTINCT FROM or IN list whose left operand is a
    /// row constructor; `None` for anything else.
    pub(super) fn row_compare(&mut self, a: &pb::AExpr, kind: pb::AExprKind, op: &str, scope: &mut Scope) -> Result<Option<Expr>> {
        use pb::AExprKind as K;
        let (Some(ln), Some(rn)) = (node(&a.lexpr), node(&a.rexpr)) else { return Ok(None) };
        let Some(litems) = row_items(ln) else { return Ok(None) };
        match kind {
            K::AexprOp | K::AexprDistinct | K::AexprNotDistinct => {
                let Some(ritems) = row_items(rn) else { return Ok(None) };
                let l = self.row_exprs(&litems, scope)?;
                let r = self.row_exprs(&ritems, scope)?;
                let e = match kind {
                    K::AexprOp => self.row_op(op, l, r, a.location)?,
                    _ => {
                        let negated = kind == K::AexprNotDistinct;
                        self.check_widths(l.len(), r.len(), a.location)?;
                        let mut terms = Vec::new();
                        for ((le, ll), (re, rl)) in l.into_iter().zip(r) {
                            let Expr::Compare { l, r, .. } = self.binary("=", le, re, a.location, (ll, rl))? else {
                                return Err(self.err_at(SqlError::not_supported("IS DISTINCT FROM for these types"), a.location));
                            };
                            terms.push(Expr::Distinct { l, r, negated });
                        }
                        if negated { Expr::And(terms) } else { Expr::Or(terms) }
                    }
                };
                Ok(Some(e))
            }
            K::AexprIn => {
                let NodeEnum::List(list) = rn else { return Ok(None) };
                let l = self.row_exprs(&litems, scope)?;
                let mut terms = Vec::new();
                for item in list.items.iter().filter_map(|i| i.node.as_ref()) {
                    let Some(ritems) = row_items(item) else {
                        return Err(self.err_at(SqlError::not_supported("IN list mixing a row and a non-row value"), a.location));
                    };
                    let r = self.row_exprs(&ritems, scope)?;
                    terms.push(self.row_op(op, l.clone(), r, a.location)?);
                }
                Ok(Some(if op == "<>" { Expr::And(terms) } else { Expr::Or(terms) }))
            }
            _ => Ok(None),
        }
    }

    /// The analyzed items of a row constructor with their locations.
    pub(super) fn row_exprs(&mut self, items: &[&NodeEnum], scope: &mut Scope) -> Result<Vec<(Expr, i32)>> {
        items.iter().map(|n| Ok((self.expr(n, scope)?, location(n)))).collect()
    }

    fn check_widths(&self, l: usize, r: usize, loc: i32) -> Result<()> {
        if l != r {
            return Err(self.err_at(SqlError::new(b"42601", "unequal number of entries in row expressions"), loc));
        }
        Ok(())
    }

    /// Rows `l` and `r` compared with `op` (see the module comment).
    pub(super) fn row_op(&mut self, op: &str, l: Vec<(Expr, i32)>, r: Vec<(Expr, i32)>, loc: i32) -> Result<Expr> {
        self.check_widths(l.len(), r.len(), loc)?;
        let mut pairs = Vec::new();
        for ((le, ll), (re, rl)) in l.into_iter().zip(r) {
            pairs.push((le, re, (ll, rl)));
        }
        match op {
            "=" | "<>" => {
                let mut terms = Vec::new();
                for (le, re, locs) in pairs {
                    terms.push(self.binary(op, le, re, loc, locs)?);
                }
                Ok(if op == "=" { Expr::And(terms) } else { Expr::Or(terms) })
            }
            "<" | "<=" | ">" | ">=" => {
                let strict = &op[..1];
                let Some((le, re, locs)) = pairs.pop() else {
                    return Err(self.err_at(SqlError::not_supported("comparison of empty rows"), loc));
                };
                let mut acc = self.binary(op, le, re, loc, locs)?;
                while let Some((le, re, locs)) = pairs.pop() {
                    let lt = self.binary(strict, le.clone(), re.clone(), loc, locs)?;
                    let eq = self.binary("=", le, re, loc, locs)?;
                    acc = Expr::Or(vec![lt, Expr::And(vec![eq, acc])]);
                }
                Ok(acc)
            }
            _ => Err(self.err_at(SqlError::not_supported(format!("row comparison with operator {op}")), loc)),
        }
    }
}
