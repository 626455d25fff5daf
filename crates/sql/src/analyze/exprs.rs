//! Conditional and predicate expressions: CASE, COALESCE, NULLIF,
//! GREATEST/LEAST, `IS [NOT] DISTINCT FROM`, `IS [NOT] TRUE/FALSE/UNKNOWN`,
//! `[NOT] IN (list)`, `[NOT] BETWEEN [SYMMETRIC]`, `[NOT] LIKE/ILIKE [ESCAPE]`
//! and the `~~` operators.
//!
//! Result types follow PostgreSQL's `select_common_type` (parse_coerce.c): the
//! first input that is not of type unknown sets the candidate; every other
//! input must be of the same type category (else 42804 `CASE types integer and
//! text cannot be matched`), and a later input replaces the candidate when the
//! candidate is not its category's preferred type and converts implicitly to
//! the later one but not back. All unknown: text. CASE looks at its ELSE first,
//! as PostgreSQL does.
//!
//! IN, NOT IN and BETWEEN are rewritten to the comparisons PostgreSQL defines
//! them by (`x = a OR x = b`, `x <> a AND x <> b`, `x >= a AND x <= b`), which
//! gives their three-valued results: `2 IN (1, NULL)` is NULL, `2 NOT IN (1,
//! NULL)` is NULL. An IN list of constants becomes, as in PostgreSQL, `x =
//! ANY ('{a,b}')` (NOT IN: `x <> ALL`), with the same results
//! ([`constant_list`]). A simple CASE compares its operand with each WHEN value
//! through `=`. Those rewrites evaluate the operand once per comparison, which
//! matters only for volatile operands (PostgreSQL evaluates it once).

use super::{node, str_of, Analyzer, Scope};
use ferrogres_datum::errors::{Result, SqlError};
use crate::plan::*;
use ferrogres_datum::types::{self, CastContext, Type, Value};
use pg_query::protobuf as pb;
use pg_query::NodeEnum;

/// An expression's location as PostgreSQL's exprLocation gives it: a cast
/// starts at its argument when that comes first (`'x'::text`).
fn location(n: &NodeEnum) -> i32 {
    match n {
        NodeEnum::TypeCast(tc) => {
            let arg = node(&tc.arg).map_or(-1, location);
            if arg >= 0 && (tc.location < 0 || arg < tc.location) { arg } else { tc.location }
        }
        NodeEnum::CaseExpr(c) => c.location,
        NodeEnum::CoalesceExpr(c) => c.location,
        NodeEnum::MinMaxExpr(m) => m.location,
        NodeEnum::BooleanTest(b) => b.location,
        other => super::location(other),
    }
}

/// The output column name a CASE takes from its ELSE (PostgreSQL's
/// FigureColname: a column, function or conditional expression names it).
pub(super) fn strong_name(n: &NodeEnum) -> Option<String> {
    match n {
        NodeEnum::ColumnRef(c) => c.fields.last().and_then(str_of).map(str::to_string),
        NodeEnum::FuncCall(f) => f.funcname.last().and_then(str_of).map(str::to_string),
        NodeEnum::CoalesceExpr(_) => Some("coalesce".into()),
        NodeEnum::MinMaxExpr(m) => Some(if m.op == pb::MinMaxOp::IsGreatest as i32 { "greatest" } else { "least" }.into()),
        NodeEnum::AExpr(a) if a.kind == pb::AExprKind::AexprNullif as i32 => Some("nullif".into()),
        NodeEnum::CaseExpr(c) => node(&c.defresult).and_then(strong_name),
        NodeEnum::TypeCast(tc) => node(&tc.arg).and_then(strong_name),
        _ => None,
    }
}


/// `x IN (c1, c2, ...)` as `x = ANY ('{c1,c2,...}')` (NOT IN: `x <> ALL
/// (...)`), as PostgreSQL writes an IN list whose items hold no column: one
/// comparison loop over the array instead of an OR chain that evaluates `x`
/// once per item. `terms` are the list's comparisons as typed one by one
/// (`x op item`); this applies when there are two or more and each compares
/// the same `x` with a constant of one type (NULL items included), else
/// `None` and the OR/AND chain stays. The answers are the chain's: true if
/// some comparison holds, else NULL if an item or `x` is NULL, else false
/// (`ArrayFunc::AnyAll`).
fn constant_list(terms: &[Expr], negated: bool) -> Option<Expr> {
    use ferrogres_datum::array::{array_of, Array, ArrayFunc};
    let [Expr::Compare { op, l: x, r: first }, ..] = terms else { return None };
    let (_, ty) = literal(first)?;
    if terms.len() < 2 || ty == Type::Unknown || matches!(ty, Type::Array(_)) {
        return None;
    }
    let shown = format!("{x:?}");
    let mut items = Vec::with_capacity(terms.len());
    for t in terms {
        match t {
            Expr::Compare { op: o, l, r } if o == op && format!("{l:?}") == shown => match literal(r)? {
                (v, t) if t == ty => items.push(v),
                _ => return None,
            },
            _ => return None,
        }
    }
    let arr = Expr::Const(Value::Array(Box::new(Array::new(ty, items))), array_of(ty)?);
    Some(Expr::Func { func: Func::Array(ArrayFunc::AnyAll { op: *op, all: negated }), args: vec![(**x).clone(), arr], ty: Type::Bool })
}

/// An IN list item's value and type: a constant, or a constant string
/// cast to another string type (`'MAIL'` against a `character(n)` column
/// is a `bpchar` constant cast to `text`), a cast that reads no setting,
/// made once here. `None`: anything else, or a cast that fails (the
/// comparison raises that error when it runs).
fn literal(e: &Expr) -> Option<(Value, Type)> {
    match e {
        Expr::Const(v, t) => Some((v.clone(), *t)),
        Expr::Cast { arg, from, to, typmod, explicit } if from.is_string() && to.is_string() => match &**arg {
            Expr::Const(v, t) if t == from => Some((types::cast(v.clone(), *from, *to, *typmod, *explicit).ok()?, *to)),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `from` converts implicitly to `to` (numeric, which we only have as
/// a literal's type, takes every integer implicitly, as in PostgreSQL).
fn can_coerce(from: Type, to: Type) -> bool {
    (to == Type::Numeric && from.is_integer()) || types::cast_allowed(from, to, CastContext::Implicit)
}

impl<'a> Analyzer<'a> {
    /// PostgreSQL's select_common_type over `(expression, location)` pairs,
    /// then each converted to the result; `what` names the construct in errors.
    pub(super) fn common_type(&mut self, items: Vec<(Expr, i32)>, what: &str) -> Result<(Vec<Expr>, Type)> {
        let mut ptype: Option<Type> = None;
        for (e, loc) in &items {
            let t = e.ty();
            if t == Type::Unknown {
                continue;
            }
            let Some(p) = ptype else {
                ptype = Some(t);
                continue;
            };
            if t == p {
                continue;
            }
            let ((pc, ppref), (nc, _)) = (p.category(), t.category());
            if pc != nc {
                return Err(self.err_at(
                    SqlError::new(b"42804", format!("{what} types {} and {} cannot be matched", p.sql_name(), t.sql_name())),
                    *loc,
                ));
            }
            if !ppref && can_coerce(p, t) && !can_coerce(t, p) {
                ptype = Some(t);
            }
        }
        let ty = ptype.unwrap_or(Type::Text);
        let mut out = Vec::new();
        for (e, loc) in items {
            out.push(self.coerce(e, ty, CastContext::Implicit, loc)?);
        }
        Ok((out, ty))
    }

    pub(super) fn case_expr(&mut self, c: &pb::CaseExpr, scope: &mut Scope) -> Result<Expr> {
        let operand = match node(&c.arg) {
            Some(a) => {
                // An unknown operand is text, as PostgreSQL resolves it.
                let e = self.expr(a, scope)?;
                let e = if e.ty() == Type::Unknown { self.coerce(e, Type::Text, CastContext::Implicit, location(a))? } else { e };
                Some((e, location(a)))
            }
            None => None,
        };
        let mut conds = Vec::new();
        let mut results = Vec::new();
        for w in &c.args {
            let Some(NodeEnum::CaseWhen(w)) = &w.node else { continue };
            let (Some(cond), Some(res)) = (node(&w.expr), node(&w.result)) else {
                return Err(SqlError::internal("CASE WHEN without condition or result"));
            };
            let cond = match &operand {
                Some((x, _)) => {
                    let v = self.expr(cond, scope)?;
                    let lloc = operand.as_ref().map_or(-1, |o| o.1);
                    let e = self.binary("=", x.clone(), v, w.location, (lloc, location(cond)))?;
                    if e.ty() != Type::Bool {
                        return Err(self.err_at(
                            SqlError::new(b"42804", format!("argument of CASE/WHEN must be type boolean, not type {}", e.ty().sql_name())),
                            location(cond),
                        ));
                    }
                    e
                }
                None => self.bool_expr(cond, scope, "CASE/WHEN")?,
            };
            conds.push(cond);
            results.push((self.expr(res, scope)?, location(res)));
        }
        let default = match node(&c.defresult) {
            Some(d) => (self.expr(d, scope)?, location(d)),
            None => (Expr::Const(Value::Null, Type::Unknown), c.location),
        };
        // The ELSE first, as PostgreSQL's transformCaseExpr lists them.
        let mut items = vec![default];
        items.extend(results);
        let (mut exprs, ty) = self.common_type(items, "CASE")?;
        let default = exprs.remove(0);
        Ok(Expr::Case { whens: conds.into_iter().zip(exprs).collect(), default: Box::new(default), ty })
    }

    pub(super) fn coalesce_expr(&mut self, c: &pb::CoalesceExpr, scope: &mut Scope) -> Result<Expr> {
        let mut items = Vec::new();
        for a in &c.args {
            if let Some(a) = a.node.as_ref() {
                items.push((self.expr(a, scope)?, location(a)));
            }
        }
        let (args, ty) = self.common_type(items, "COALESCE")?;
        Ok(Expr::Coalesce(args, ty))
    }

    pub(super) fn min_max_expr(&mut self, m: &pb::MinMaxExpr, scope: &mut Scope) -> Result<Expr> {
        let greatest = m.op == pb::MinMaxOp::IsGreatest as i32;
        let mut items = Vec::new();
        for a in &m.args {
            if let Some(a) = a.node.as_ref() {
                items.push((self.expr(a, scope)?, location(a)));
            }
        }
        let (args, ty) = self.common_type(items, if greatest { "GREATEST" } else { "LEAST" })?;
        // Text-like arguments compare as text (character(n) without its padding).
        if !matches!(ty, Type::Bool | Type::Text | Type::Varchar | Type::Bytea | Type::Interval) && !ty.is_numeric() && !ferrogres_datum::datetime::is_datetime(ty) {
            return Err(self.err_at(SqlError::not_supported(format!("GREATEST/LEAST of type {}", ty.sql_name())), m.location));
        }
        Ok(Expr::MinMax { args, greatest, ty })
    }

    pub(super) fn boolean_test(&mut self, b: &pb::BooleanTest, scope: &mut Scope) -> Result<Expr> {
        use pb::BoolTestType as B;
        let Some(arg) = node(&b.arg) else { return Err(SqlError::internal("IS TRUE without argument")) };
        let (what, value, negated) = match B::try_from(b.booltesttype).unwrap_or(B::Undefined) {
            B::IsTrue => ("IS TRUE", Some(true), true),
            B::IsNotTrue => ("IS NOT TRUE", Some(true), false),
            B::IsFalse => ("IS FALSE", Some(false), true),
            B::IsNotFalse => ("IS NOT FALSE", Some(false), false),
            B::IsUnknown => ("IS UNKNOWN", None, false),
            B::IsNotUnknown => ("IS NOT UNKNOWN", None, true),
            B::Undefined => return Err(SqlError::internal("unknown boolean test")),
        };
        let e = self.bool_expr(arg, scope, what)?;
        Ok(match value {
            Some(v) => Expr::Distinct { l: Box::new(e), r: Box::new(Expr::Const(Value::Bool(v), Type::Bool)), negated },
            None => Expr::IsNull { arg: Box::new(e), negated },
        })
    }

    /// The AExpr forms other than a plain operator, and the LIKE operators;
    /// `None`: not one of them (the caller goes on as before).
    pub(super) fn a_expr_ext(&mut self, a: &pb::AExpr, kind: pb::AExprKind, op: &str, scope: &mut Scope) -> Result<Option<Expr>> {
        use pb::AExprKind as K;
        let like_op = matches!(op, "~~" | "!~~" | "~~*" | "!~~*");
        match kind {
            K::AexprOp if like_op => {}
            K::AexprLike | K::AexprIlike | K::AexprDistinct | K::AexprNotDistinct | K::AexprNullif | K::AexprIn => {}
            K::AexprBetween | K::AexprNotBetween | K::AexprBetweenSym | K::AexprNotBetweenSym => {}
            _ => return Ok(None),
        }
        let Some(ln) = node(&a.lexpr) else { return Ok(None) };
        let Some(rn) = node(&a.rexpr) else { return Err(SqlError::internal("operator without right operand")) };
        let lloc = location(ln);
        let l = self.expr(ln, scope)?;
        match kind {
            K::AexprOp | K::AexprLike | K::AexprIlike => {
                let (pat_node, esc_node) = match rn {
                    NodeEnum::FuncCall(f)
                        if f.args.len() == 2 && f.funcname.iter().filter_map(str_of).next_back() == Some("like_escape") =>
                    {
                        (f.args[0].node.as_ref().unwrap(), f.args[1].node.as_ref())
                    }
                    other => (other, None),
                };
                let p = self.expr(pat_node, scope)?;
                let (lt, pt) = (l.ty(), p.ty());
                if !lt.is_string() || !pt.is_string() {
                    return Err(self.no_operator(op, Some(lt), pt, a.location));
                }
                let l = if lt == Type::Unknown {
                    self.coerce(l, Type::Text, CastContext::Implicit, lloc)?
                } else {
                    l
                };
                let p = if pt == Type::Text || pt == Type::Varchar { p } else { self.coerce(p, Type::Text, CastContext::Implicit, location(pat_node))? };
                let escape = match esc_node {
                    Some(en) => {
                        let e = self.expr(en, scope)?;
                        if !e.ty().is_string() {
                            return Err(self.unknown_function("like_escape", &[Type::Text, e.ty()], location(en)));
                        }
                        Some(Box::new(self.coerce(e, Type::Text, CastContext::Implicit, location(en))?))
                    }
                    None => None,
                };
                let ci = op.ends_with('*');
                let e = Expr::Like { arg: Box::new(l), pat: Box::new(p), escape, ci };
                Ok(Some(if op.starts_with('!') { Expr::Not(Box::new(e)) } else { e }))
            }
            K::AexprDistinct | K::AexprNotDistinct => {
                let r = self.expr(rn, scope)?;
                let e = self.binary("=", l, r, a.location, (lloc, location(rn)))?;
                let Expr::Compare { l, r, .. } = e else {
                    return Err(self.err_at(SqlError::not_supported("IS DISTINCT FROM for these types"), a.location));
                };
                Ok(Some(Expr::Distinct { l, r, negated: kind == K::AexprNotDistinct }))
            }
            K::AexprNullif => {
                let r = self.expr(rn, scope)?;
                let lt = l.ty();
                let eq = self.binary("=", l.clone(), r, a.location, (lloc, location(rn)))?;
                let arg = match (&eq, lt) {
                    (Expr::Compare { l: cl, .. }, Type::Unknown) => {
                        let t = cl.ty();
                        self.coerce(l, t, CastContext::Implicit, lloc)?
                    }
                    (Expr::Compare { .. }, _) => l,
                    _ => return Err(self.err_at(SqlError::not_supported("NULLIF for these types"), a.location)),
                };
                Ok(Some(Expr::NullIf { arg: Box::new(arg), eq: Box::new(eq) }))
            }
            K::AexprIn => {
                let NodeEnum::List(list) = rn else { return Ok(None) };
                let negated = op == "<>";
                let mut terms = Vec::new();
                for item in &list.items {
                    let Some(item) = item.node.as_ref() else { continue };
                    let r = self.expr(item, scope)?;
                    terms.push(self.binary(op, l.clone(), r, a.location, (lloc, location(item)))?);
                }
                if let Some(e) = constant_list(&terms, negated) {
                    return Ok(Some(e));
                }
                Ok(Some(if negated { Expr::And(terms) } else { Expr::Or(terms) }))
            }
            _ => {
                // BETWEEN forms: x >= a AND x <= b (NOT: x < a OR x > b); SYMMETRIC
                // also with a and b swapped, ORed (NOT: ANDed).
                let NodeEnum::List(list) = rn else { return Ok(None) };
                let bounds: Vec<&NodeEnum> = list.items.iter().filter_map(|n| n.node.as_ref()).collect();
                let [lo, hi] = bounds.as_slice() else { return Err(SqlError::internal("BETWEEN without two bounds")) };
                let lo_e = self.expr(lo, scope)?;
                let hi_e = self.expr(hi, scope)?;
                let negated = matches!(kind, K::AexprNotBetween | K::AexprNotBetweenSym);
                let (ge, le) = if negated { ("<", ">") } else { (">=", "<=") };
                let range = |this: &mut Self, lo: (&Expr, i32), hi: (&Expr, i32)| -> Result<Expr> {
                    let a1 = this.binary(ge, l.clone(), lo.0.clone(), a.location, (lloc, lo.1))?;
                    let a2 = this.binary(le, l.clone(), hi.0.clone(), a.location, (lloc, hi.1))?;
                    Ok(if negated { Expr::Or(vec![a1, a2]) } else { Expr::And(vec![a1, a2]) })
                };
                let (lo_l, hi_l) = (location(lo), location(hi));
                let first = range(self, (&lo_e, lo_l), (&hi_e, hi_l))?;
                if matches!(kind, K::AexprBetweenSym | K::AexprNotBetweenSym) {
                    let second = range(self, (&hi_e, hi_l), (&lo_e, lo_l))?;
                    return Ok(Some(if negated { Expr::And(vec![first, second]) } else { Expr::Or(vec![first, second]) }));
                }
                Ok(Some(first))
            }
        }
    }
}
