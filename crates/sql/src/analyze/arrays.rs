//! Analysis of array syntax (`ferrogres_datum::array`): `type[]` names, `ARRAY[...]`,
//! subscripts and slices, `x op ANY/ALL (array)`, `||` with arrays, array
//! comparisons and the array functions.

use super::{location, node, Analyzer, Scope};
use ferrogres_datum::array::{array_of, ArrayFunc};
use ferrogres_datum::errors::{Result, SqlError};
use crate::plan::{CmpOp, Expr, Func};
use ferrogres_datum::types::{CastContext, Type};
use pg_query::protobuf as pb;
use pg_query::NodeEnum;

fn afunc(f: ArrayFunc, args: Vec<Expr>, ty: Type) -> Expr {
    Expr::Func { func: Func::Array(f), args, ty }
}

/// The element type of an array, or of int2vector/oidvector (subscripted,
/// unnested and compared with ANY as arrays).
fn elem(t: Type) -> Option<Type> {
    t.elem()
}

impl<'a> Analyzer<'a> {
    /// `elem[]` (array_bounds set): the array type of the element type.
    pub(super) fn array_type_name(&self, tn: &pb::TypeName) -> Result<(Type, i32)> {
        let mut inner = tn.clone();
        inner.array_bounds.clear();
        let (e, typmod) = self.type_name(Some(&inner))?;
        if tn.array_bounds.len() > 1 {
            // int[][] is the same type as int[] in PostgreSQL.
        }
        match array_of(e) {
            Some(t) => Ok((t, typmod)),
            None => Err(self.err_at(SqlError::not_supported(format!("arrays of type {}", e.sql_name())), tn.location)),
        }
    }

    /// `ARRAY[a, b, ...]`: the elements' common type.
    pub(super) fn array_expr(&mut self, a: &pb::AArrayExpr, scope: &mut Scope) -> Result<Expr> {
        self.array_expr_of(a, None, scope)
    }

    /// `ARRAY[...]`, its elements converted to `target` if given (a cast of the whole).
    pub(super) fn array_expr_of(&mut self, a: &pb::AArrayExpr, target: Option<Type>, scope: &mut Scope) -> Result<Expr> {
        let mut items = Vec::new();
        for n in &a.elements {
            if let Some(n) = n.node.as_ref() {
                if let NodeEnum::AArrayExpr(inner) = n {
                    // Past MAXDIM: PostgreSQL's 54000 (counted without recursion).
                    let mut dims = 2;
                    let mut cur: &pb::AArrayExpr = inner;
                    while dims <= ferrogres_datum::array::MAXDIM {
                        match cur.elements.iter().find_map(|e| match e.node.as_ref() {
                            Some(NodeEnum::AArrayExpr(a)) => Some(a),
                            _ => None,
                        }) {
                            Some(a) => {
                                dims += 1;
                                cur = a;
                            }
                            None => break,
                        }
                    }
                    if dims > ferrogres_datum::array::MAXDIM {
                        return Err(ferrogres_datum::array::too_many_dimensions());
                    }
                    return Err(self.err_at(SqlError::not_supported("multidimensional arrays"), location(n)));
                }
                items.push((self.expr(n, scope)?, location(n)));
            }
        }
        if let Some(t) = target {
            let mut args = Vec::new();
            for (e, loc) in items {
                args.push(self.coerce(e, t, CastContext::Explicit, loc)?);
            }
            let at = array_of(t).expect("target is an element type");
            return Ok(afunc(ArrayFunc::Construct, args, at));
        }
        if items.is_empty() {
            return Err(self.err_at(
                SqlError::new(b"42P18", "cannot determine type of empty array")
                    .with_hint("Explicitly cast to the desired type, for example ARRAY[]::integer[]."),
                a.location,
            ));
        }
        let (args, ty) = self.common_type(items, "ARRAY")?;
        let Some(at) = array_of(ty) else {
            return Err(self.err_at(SqlError::not_supported(format!("arrays of type {}", ty.sql_name())), a.location));
        };
        Ok(afunc(ArrayFunc::Construct, args, at))
    }

    /// `information_schema._pg_expandarray(anyarray)` (pgjdbc's metadata
    /// queries): a set-returning call of records `(x elem, n int4)`, in the
    /// select list (`crate::project_set`); its fields are selected with
    /// `(call).x` ([`Analyzer::indirection`]).
    pub(super) fn expand_array_call(&mut self, f: &pb::FuncCall, scope: &mut Scope) -> Result<Expr> {
        let mut args = Vec::new();
        for a in &f.args {
            if let Some(a) = a.node.as_ref() {
                args.push(self.expr(a, scope)?);
            }
        }
        let fields = match args.as_slice() {
            [a] => elem(a.ty()).and_then(ferrogres_datum::record::expand_array_fields),
            _ => None,
        };
        let Some(fields) = fields else {
            let names: Vec<&str> = args.iter().map(|a| if a.ty() == Type::Unknown { "unknown" } else { a.ty().sql_name() }).collect();
            return Err(self.err_at(
                SqlError::new(b"42883", format!("function information_schema._pg_expandarray({}) does not exist", names.join(", ")))
                    .with_hint("No function matches the given name and argument types. You might need to add explicit type casts."),
                f.location,
            ));
        };
        if let Some(place) = scope.no_srf {
            return Err(self.err_at(SqlError::new(b"0A000", format!("set-returning functions are not allowed in {place}")), f.location));
        }
        if args.iter().any(crate::project_set::contains_srf) {
            return Err(self.err_at(SqlError::not_supported("nested set-returning functions"), f.location));
        }
        let id = crate::functions::polymorphic("_pg_expandarray").ok_or_else(|| SqlError::internal("no built-in row for _pg_expandarray"))?;
        Ok(Expr::Func { func: Func::Builtin(id), args, ty: Type::Record(fields) })
    }

    /// `arg[i]`, `arg[lo:hi]` (one subscript); `(record).field`.
    pub(super) fn indirection(&mut self, ind: &pb::AIndirection, scope: &mut Scope) -> Result<Expr> {
        let Some(argn) = node(&ind.arg) else { return Err(SqlError::internal("indirection without argument")) };
        let mut e = self.expr(argn, scope)?;
        for i in &ind.indirection {
            if let Some(NodeEnum::String(field)) = i.node.as_ref() {
                e = self.field_select(e, &field.sval, location(argn))?;
                continue;
            }
            let Some(NodeEnum::AIndices(ix)) = i.node.as_ref() else {
                return Err(self.err_at(SqlError::not_supported("field selection"), location(argn)));
            };
            let Some(et) = elem(e.ty()) else {
                return Err(self.err_at(
                    SqlError::new(
                        b"42804",
                        format!("cannot subscript type {} because it does not support subscripting", e.ty().sql_name()),
                    ),
                    location(argn),
                ));
            };
            if !ix.is_slice && matches!(e, Expr::Func { func: Func::Array(ArrayFunc::Subscript), .. }) {
                return Err(self.err_at(SqlError::not_supported("multidimensional arrays"), location(argn)));
            }
            let mut sub = |this: &mut Self, n: &Option<Box<pb::Node>>| -> Result<Option<Expr>> {
                match node(n) {
                    None => Ok(None),
                    Some(n) => {
                        let x = this.expr(n, scope)?;
                        let loc = location(n);
                        if !(x.ty().is_integer() || x.ty() == Type::Unknown) {
                            return Err(this.err_at(SqlError::new(b"42804", "array subscript must have type integer"), loc));
                        }
                        Ok(Some(this.coerce(x, Type::Int4, CastContext::Implicit, loc)?))
                    }
                }
            };
            // A slice of an int2vector or oidvector is an int2[] or oid[] from 1.
            let ty = if e.ty().is_vector() { array_of(et).unwrap_or(e.ty()) } else { e.ty() };
            if ix.is_slice {
                let lo = sub(self, &ix.lidx)?;
                let hi = sub(self, &ix.uidx)?;
                let f = ArrayFunc::Slice { lo: lo.is_some(), hi: hi.is_some() };
                let mut args = vec![e];
                args.extend(lo);
                args.extend(hi);
                e = afunc(f, args, ty);
            } else {
                let Some(i) = sub(self, &ix.uidx)? else { return Err(SqlError::internal("subscript without index")) };
                e = afunc(ArrayFunc::Subscript, vec![e, i], et);
            }
        }
        Ok(e)
    }

    /// `l op ANY (r)` / `l op ALL (r)`, `r` an array.
    pub(super) fn any_all(&mut self, a: &pb::AExpr, all: bool, op: &str, scope: &mut Scope) -> Result<Expr> {
        let (Some(ln), Some(rn)) = (node(&a.lexpr), node(&a.rexpr)) else { return Err(SqlError::internal("ANY without operands")) };
        if matches!(rn, NodeEnum::SubLink(_)) {
            return Err(self.err_at(SqlError::not_supported("subqueries"), location(rn)));
        }
        let cmp = match op {
            "=" => CmpOp::Eq,
            "<>" | "!=" => CmpOp::Ne,
            "<" => CmpOp::Lt,
            "<=" => CmpOp::Le,
            ">" => CmpOp::Gt,
            ">=" => CmpOp::Ge,
            _ => return Err(self.err_at(SqlError::not_supported(format!("operator {op} with ANY/ALL")), a.location)),
        };
        let l = self.expr(ln, scope)?;
        let r = self.expr(rn, scope)?;
        let (l, r) = match (l.ty(), r.ty()) {
            (lt, Type::Unknown) => {
                let lt = if lt == Type::Unknown { Type::Text } else { lt };
                let at = array_of(lt).ok_or_else(|| self.err_at(SqlError::not_supported("this ANY/ALL"), a.location))?;
                let l = self.coerce(l, lt, CastContext::Implicit, location(ln))?;
                (l, self.coerce(r, at, CastContext::Implicit, location(rn))?)
            }
            (_, Type::Array(_) | Type::Int2Vector | Type::OidVector) => (l, r),
            _ => {
                return Err(self.err_at(SqlError::new(b"42809", "op ANY/ALL (array) requires array on right side"), a.location));
            }
        };
        let et = elem(r.ty()).expect("array checked above");
        // Type the comparison as `l op element` would be typed.
        let probe = self.binary(op, l.clone(), Expr::Const(ferrogres_datum::types::Value::Null, et), a.location, (location(ln), location(rn)))?;
        let Expr::Compare { l: pl, r: pr, .. } = probe else {
            return Err(self.err_at(SqlError::not_supported("this ANY/ALL comparison"), a.location));
        };
        let (l, r) = match (pl.ty() == et, pr.ty() == et) {
            (_, true) => (*pl, r),
            (_, false) => {
                let want = array_of(pr.ty()).ok_or_else(|| self.err_at(SqlError::not_supported("this ANY/ALL"), a.location))?;
                let loc = location(rn);
                (*pl, self.coerce(r, want, CastContext::Implicit, loc)?)
            }
        };
        Ok(afunc(ArrayFunc::AnyAll { op: cmp, all }, vec![l, r], Type::Bool))
    }

    /// `||` with an array operand, `None` when neither side is an array.
    pub(super) fn array_concat(&mut self, l: Expr, r: Expr, loc: i32) -> Result<Option<Expr>> {
        let (lt, rt) = (l.ty(), r.ty());
        Ok(Some(match (lt, rt) {
            (Type::Array(_), Type::Array(_)) if lt == rt => afunc(ArrayFunc::Cat, vec![l, r], lt),
            (Type::Array(_), Type::Unknown) => {
                let r = self.coerce(r, lt, CastContext::Implicit, loc)?;
                afunc(ArrayFunc::Cat, vec![l, r], lt)
            }
            (Type::Unknown, Type::Array(_)) => {
                let l = self.coerce(l, rt, CastContext::Implicit, loc)?;
                afunc(ArrayFunc::Cat, vec![l, r], rt)
            }
            (Type::Array(e), t) if ferrogres_datum::types::cast_allowed(t, *e, CastContext::Implicit) => {
                let r = self.coerce(r, *e, CastContext::Implicit, loc)?;
                afunc(ArrayFunc::Append, vec![l, r], lt)
            }
            (t, Type::Array(e)) if ferrogres_datum::types::cast_allowed(t, *e, CastContext::Implicit) => {
                let l = self.coerce(l, *e, CastContext::Implicit, loc)?;
                afunc(ArrayFunc::Prepend, vec![l, r], rt)
            }
            (Type::Array(_), _) | (_, Type::Array(_)) => return Err(self.no_operator("||", Some(lt), rt, loc)),
            _ => return Ok(None),
        }))
    }

    /// unnest(anyarray) and generate_subscripts(anyarray, int4 [, bool]) in
    /// an expression (the select list: `crate::project_set`); `None` for
    /// another name. unnest's result is the element type.
    pub(super) fn array_srf(&mut self, name: &str, args: &mut Vec<Expr>, locs: &[i32], f: &pb::FuncCall, scope: &Scope) -> Result<Option<Expr>> {
        if name != "unnest" && name != "generate_subscripts" {
            return Ok(None);
        }
        let types: Vec<Type> = args.iter().map(|a| a.ty()).collect();
        let no_fn = |this: &Self| {
            let names: Vec<&str> = types.iter().map(|t| if *t == Type::Unknown { "unknown" } else { t.sql_name() }).collect();
            this.err_at(
                SqlError::new(b"42883", format!("function {name}({}) does not exist", names.join(", ")))
                    .with_hint("No function matches the given name and argument types. You might need to add explicit type casts."),
                f.location,
            )
        };
        let Some(et) = types.first().and_then(|t| elem(*t)) else { return Err(no_fn(self)) };
        let mut args = std::mem::take(args);
        let ty = if name == "unnest" {
            if args.len() != 1 {
                return Err(no_fn(self));
            }
            et
        } else {
            if !(args.len() == 2 || args.len() == 3) {
                return Err(no_fn(self));
            }
            let want = [Type::Int4, Type::Bool];
            for (k, w) in want.iter().enumerate().take(args.len() - 1) {
                let t = args[k + 1].ty();
                let ok = if *w == Type::Int4 { t.is_integer() || t == Type::Unknown } else { t == Type::Bool || t == Type::Unknown };
                if !ok {
                    return Err(no_fn(self));
                }
                let a = std::mem::replace(&mut args[k + 1], Expr::Const(ferrogres_datum::types::Value::Null, *w));
                args[k + 1] = self.coerce(a, *w, CastContext::Implicit, locs[k + 1])?;
            }
            Type::Int4
        };
        if let Some(place) = scope.no_srf {
            return Err(self.err_at(SqlError::new(b"0A000", format!("set-returning functions are not allowed in {place}")), f.location));
        }
        if args.iter().any(crate::project_set::contains_srf) {
            return Err(self.err_at(SqlError::not_supported("nested set-returning functions"), f.location));
        }
        let id = crate::functions::polymorphic(name).ok_or_else(|| SqlError::internal(format!("no built-in row for {name}")))?;
        Ok(Some(Expr::Func { func: Func::Builtin(id), args, ty }))
    }

    /// Field `name` of the record `e`.
    fn field_select(&mut self, e: Expr, name: &str, loc: i32) -> Result<Expr> {
        let Type::Record(fields) = e.ty() else {
            return Err(self.err_at(
                SqlError::new(b"42809", format!("column notation .{name} applied to type {}, which is not a composite type", e.ty().sql_name())),
                loc,
            ));
        };
        let Some(n) = fields.iter().position(|f| f.0 == name) else {
            return Err(self.err_at(SqlError::new(b"42703", format!("could not identify column \"{name}\" in record data type")), loc));
        };
        Ok(Expr::Func { func: Func::Field(n), args: vec![e], ty: fields[n].1 })
    }

    /// The array functions, `None` for another name.
    pub(super) fn array_func(&mut self, name: &str, args: &mut Vec<Expr>, locs: &[i32], loc: i32) -> Result<Option<Expr>> {
        let f = match (name, args.len()) {
            ("array_length", 2) => ArrayFunc::Length,
            ("array_upper", 2) => ArrayFunc::Upper,
            ("array_lower", 2) => ArrayFunc::Lower,
            ("cardinality", 1) => ArrayFunc::Cardinality,
            ("array_ndims", 1) => ArrayFunc::Ndims,
            ("array_dims", 1) => ArrayFunc::Dims,
            ("array_position", 2) => ArrayFunc::Position,
            ("array_to_string", 2 | 3) => ArrayFunc::ToString,
            ("string_to_array", 2 | 3) => ArrayFunc::FromString,
            ("array_cat", 2) => ArrayFunc::Cat,
            ("array_append", 2) => ArrayFunc::Append,
            ("array_prepend", 2) => ArrayFunc::Prepend,
            _ => return Ok(None),
        };
        let types: Vec<Type> = args.iter().map(|a| a.ty()).collect();
        let no_fn = |this: &Self| {
            let names: Vec<&str> = types.iter().map(|t| t.sql_name()).collect();
            this.err_at(
                SqlError::new(b"42883", format!("function {name}({}) does not exist", names.join(", ")))
                    .with_hint("No function matches the given name and argument types. You might need to add explicit type casts."),
                loc,
            )
        };
        let mut args = std::mem::take(args);
        let text_args = |this: &mut Self, args: &mut Vec<Expr>, from: usize| -> Result<bool> {
            for k in from..args.len() {
                let t = args[k].ty();
                if !t.is_string() {
                    return Ok(false);
                }
                let a = std::mem::replace(&mut args[k], Expr::Const(ferrogres_datum::types::Value::Null, Type::Text));
                args[k] = if t == Type::Text { a } else { this.coerce(a, Type::Text, CastContext::Implicit, locs[k])? };
            }
            Ok(true)
        };
        let (ty, ok) = match f {
            ArrayFunc::FromString => (array_of(Type::Text).expect("text[]"), text_args(self, &mut args, 0)?),
            ArrayFunc::Cat | ArrayFunc::Append | ArrayFunc::Prepend => {
                let (l, r) = (args.remove(0), args.remove(0));
                return match self.array_concat(l, r, loc)? {
                    Some(e) => Ok(Some(e)),
                    None => Err(no_fn(self)),
                };
            }
            _ => {
                let Some(et) = elem(types[0]) else { return Err(no_fn(self)) };
                match f {
                    ArrayFunc::ToString => (Type::Text, text_args(self, &mut args, 1)?),
                    ArrayFunc::Position => {
                        let v = args.pop().expect("two arguments");
                        if !(v.ty() == et || ferrogres_datum::types::cast_allowed(v.ty(), et, CastContext::Implicit)) {
                            return Err(no_fn(self));
                        }
                        args.push(self.coerce(v, et, CastContext::Implicit, locs[1])?);
                        (Type::Int4, true)
                    }
                    ArrayFunc::Length | ArrayFunc::Upper | ArrayFunc::Lower => {
                        let d = args.pop().expect("two arguments");
                        if !(d.ty().is_integer() || d.ty() == Type::Unknown) {
                            return Err(no_fn(self));
                        }
                        args.push(self.coerce(d, Type::Int4, CastContext::Implicit, locs[1])?);
                        (Type::Int4, true)
                    }
                    ArrayFunc::Dims => (Type::Text, true),
                    _ => (Type::Int4, true),
                }
            }
        };
        if !ok {
            return Err(no_fn(self));
        }
        Ok(Some(afunc(f, args, ty)))
    }
}
