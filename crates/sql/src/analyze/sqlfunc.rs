//! Analysis of CREATE / DROP FUNCTION (LANGUAGE sql) and the expansion of
//! calls of SQL functions ([`crate::sqlfunc`]): overload resolution by
//! [`super::funcs::select_candidate_by`], then the body with its parameters
//! replaced by the arguments, analyzed in the caller's scope.

use super::funcs::{select_candidate_by, Resolution};
use super::{node, str_of, Analyzer, Scope};
use ferrogres_datum::errors::{Result, SqlError};
use crate::plan::Expr;
use crate::sqlfunc::{FuncCmd, ProcDef};
use ferrogres_datum::types::Type;
use pg_query::protobuf as pb;
use pg_query::NodeEnum;
use std::cell::Cell;

thread_local! {
    /// Nesting of SQL-function expansions (a function calling itself).
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

struct DepthGuard;
impl Drop for DepthGuard {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// SQL text of an expression node.
fn expr_text(n: &NodeEnum) -> Result<String> {
    let sel = pb::SelectStmt {
        target_list: vec![pb::Node { node: Some(NodeEnum::ResTarget(Box::new(pb::ResTarget { val: Some(Box::new(pb::Node { node: Some(n.clone()) })), ..Default::default() }))) }],
        op: pb::SetOperation::SetopNone as i32,
        limit_option: pb::LimitOption::Default as i32,
        ..Default::default()
    };
    let text = NodeEnum::SelectStmt(Box::new(sel)).deparse(Default::default()).map_err(|e| SqlError::internal(format!("deparse: {e}")))?;
    Ok(text.strip_prefix("SELECT ").unwrap_or(&text).to_string())
}

fn type_text(t: Type) -> String {
    t.sql_name().to_string()
}

fn names_of(list: &[pb::Node]) -> (Option<String>, String) {
    let parts: Vec<String> = list.iter().filter_map(str_of).map(str::to_string).collect();
    match parts.as_slice() {
        [s, n] => (Some(s.clone()), n.clone()),
        [.., n] => (None, n.clone()),
        [] => (None, String::new()),
    }
}

/// A body that is one expression: `SELECT expr` without FROM or clauses.
fn single_expression(sel: &pb::SelectStmt) -> Option<&NodeEnum> {
    if sel.from_clause.is_empty()
        && sel.where_clause.is_none()
        && sel.group_clause.is_empty()
        && sel.having_clause.is_none()
        && sel.sort_clause.is_empty()
        && sel.limit_count.is_none()
        && sel.limit_offset.is_none()
        && sel.with_clause.is_none()
        && sel.values_lists.is_empty()
        && sel.distinct_clause.is_empty()
        && sel.op == pb::SetOperation::SetopNone as i32
        && sel.target_list.len() == 1
    {
        if let Some(NodeEnum::ResTarget(rt)) = &sel.target_list[0].node {
            return node(&rt.val);
        }
    }
    None
}

impl<'a> Analyzer<'a> {
    /// CREATE [OR REPLACE] FUNCTION ... LANGUAGE sql.
    pub(crate) fn create_function(&mut self, s: &pb::CreateFunctionStmt) -> Result<crate::plan::Statement> {
        if s.is_procedure {
            return Err(SqlError::not_supported("CREATE PROCEDURE"));
        }
        let (schema, name) = names_of(&s.funcname);
        let mut language = None;
        let mut body: Option<String> = None;
        let mut volatility = 'v';
        let mut strict = false;
        for o in &s.options {
            let Some(NodeEnum::DefElem(d)) = &o.node else { continue };
            match d.defname.as_str() {
                "language" => language = node(&d.arg).and_then(|n| if let NodeEnum::String(s) = n { Some(s.sval.to_ascii_lowercase()) } else { None }),
                "as" => {
                    if let Some(NodeEnum::List(l)) = node(&d.arg) {
                        body = l.items.first().and_then(str_of).map(str::to_string);
                    }
                }
                "volatility" => {
                    if let Some(NodeEnum::String(v)) = node(&d.arg) {
                        volatility = v.sval.chars().next().unwrap_or('v');
                    }
                }
                "strict" => strict = matches!(node(&d.arg), Some(NodeEnum::Boolean(b)) if b.boolval),
                _ => {}
            }
        }
        match language.as_deref() {
            Some("sql") => {}
            Some("plpgsql") => return Err(SqlError::not_supported("LANGUAGE plpgsql functions")),
            Some(l) => return Err(SqlError::new(b"42704", format!("language \"{l}\" does not exist"))),
            None if s.sql_body.is_some() => {}
            None => return Err(SqlError::new(b"42P13", "no language specified")),
        }
        let mut args = Vec::new();
        let mut arg_names = Vec::new();
        let mut defaults = Vec::new();
        let mut out = Vec::new();
        for p in &s.parameters {
            let Some(NodeEnum::FunctionParameter(fp)) = &p.node else { continue };
            let (ty, _) = self.type_name(fp.arg_type.as_ref())?;
            match fp.mode {
                1 | 6 => {
                    args.push(ty);
                    arg_names.push(fp.name.clone());
                    let d = match node(&fp.defexpr) {
                        Some(e) => Some(expr_text(e)?),
                        None => None,
                    };
                    if d.is_none() && defaults.iter().any(Option::is_some) {
                        return Err(SqlError::new(b"42P13", "input parameters after one with a default value must also have defaults"));
                    }
                    defaults.push(d);
                }
                5 => out.push((fp.name.clone(), ty)),
                _ => return Err(SqlError::not_supported("OUT, INOUT and VARIADIC parameters")),
            }
        }
        let rt = s.return_type.as_ref();
        let retset = rt.is_some_and(|t| t.setof) || !out.is_empty();
        let ret = if !out.is_empty() {
            if out.len() == 1 { out[0].1 } else { Type::Void }
        } else {
            match rt {
                None => return Err(SqlError::not_supported("functions without RETURNS")),
                Some(t) => self.type_name(Some(t))?.0,
            }
        };
        let src = match (node(&s.sql_body), body) {
            (Some(NodeEnum::ReturnStmt(r)), _) => format!("SELECT {}", expr_text(node(&r.returnval).ok_or_else(|| SqlError::internal("RETURN without a value"))?)?),
            (Some(NodeEnum::List(l)), _) => match l.items.as_slice() {
                [one] => match one.node.as_ref() {
                    Some(NodeEnum::List(inner)) if inner.items.len() == 1 => match inner.items[0].node.as_ref() {
                        Some(NodeEnum::ReturnStmt(r)) => format!("SELECT {}", expr_text(node(&r.returnval).ok_or_else(|| SqlError::internal("RETURN without a value"))?)?),
                        Some(n @ NodeEnum::SelectStmt(_)) => n.deparse(Default::default()).map_err(|e| SqlError::internal(format!("deparse: {e}")))?,
                        _ => return Err(SqlError::not_supported("this BEGIN ATOMIC body")),
                    },
                    _ => return Err(SqlError::not_supported("this BEGIN ATOMIC body")),
                },
                _ => return Err(SqlError::not_supported("BEGIN ATOMIC bodies of several statements")),
            },
            (Some(_), _) => return Err(SqlError::not_supported("this function body")),
            (None, Some(b)) => {
                let stmts = crate::parser::parse(&b)?;
                match stmts.as_slice() {
                    [one] => match &one.node {
                        n @ NodeEnum::SelectStmt(_) => n.deparse(Default::default()).map_err(|e| SqlError::internal(format!("deparse: {e}")))?,
                        _ => return Err(SqlError::not_supported("SQL function bodies other than one SELECT")),
                    },
                    _ => return Err(SqlError::not_supported("SQL function bodies other than one SELECT")),
                }
            }
            (None, None) => return Err(SqlError::new(b"42P13", "no function body specified")),
        };
        let namespace = crate::namespace::creation_namespace(self.backend, self.snap, schema.as_deref(), false, &name)?;
        let def = ProcDef { oid: 0, name, namespace, args, arg_names, defaults, ret, retset, volatility, strict, src, out, owner: 0, acl: None };
        // The body is checked now, as PostgreSQL does (check_function_bodies).
        let nulls: Vec<String> = def.args.iter().map(|t| format!("CAST(NULL AS {})", type_text(*t))).collect();
        let text = self.expansion(&def, &nulls, def.retset || def.ret == Type::Void)?;
        let stmts = crate::parser::parse(&text)?;
        if let Some(NodeEnum::SelectStmt(sel)) = stmts.first().map(|s| &s.node) {
            let mut sub =
                Analyzer { backend: self.backend, snap: self.snap, sql: &text, params: Vec::new(), params_allowed: false, views: self.views.clone(), upper: Default::default(), planner: self.planner.clone(), fold_error: None };
            // Validating the body needs no privilege on what it names (they
            // are checked when it is called).
            let outer = crate::catcache::begin_perms(self.backend);
            let checked = sub.select(sel);
            crate::catcache::take_perms(self.backend, outer);
            checked.map_err(|mut e| {
                e.position = None;
                e
            })?;
        }
        Ok(crate::plan::Statement::Ddl(Box::new(crate::constraints::DdlCmd::Func(FuncCmd::Create { def, replace: s.replace }))))
    }

    /// DROP FUNCTION [IF EXISTS] name[(argtypes)], ...
    pub(crate) fn drop_function(&mut self, s: &pb::DropStmt) -> Result<crate::plan::Statement> {
        let mut items = Vec::new();
        for o in &s.objects {
            let Some(NodeEnum::ObjectWithArgs(ow)) = &o.node else { continue };
            let (schema, name) = names_of(&ow.objname);
            let mut raw = Vec::new();
            let args = if ow.args_unspecified {
                None
            } else {
                let mut v = Vec::new();
                for a in &ow.objargs {
                    if let Some(NodeEnum::TypeName(tn)) = &a.node {
                        v.push(self.type_name(Some(tn))?.0);
                        raw.push(tn.names.iter().filter_map(str_of).collect::<Vec<_>>().join("."));
                    }
                }
                Some(v)
            };
            items.push((schema, name, args, raw.join(", ")));
        }
        if s.behavior == pb::DropBehavior::DropCascade as i32 {
            // Nothing depends on a function here (no views or defaults record it).
        }
        Ok(crate::plan::Statement::Ddl(Box::new(crate::constraints::DdlCmd::Func(FuncCmd::Drop { items, missing_ok: s.missing_ok }))))
    }

    /// The SELECT a call expands to: `SELECT CAST((expr) AS ret)` for a scalar
    /// function (the body's one expression, else its first row as a scalar
    /// subquery); for `in_from`, the body itself with its columns cast.
    fn expansion(&self, def: &ProcDef, args: &[String], in_from: bool) -> Result<String> {
        let stmts = crate::parser::parse(&def.src)?;
        let Some(NodeEnum::SelectStmt(sel)) = stmts.first().map(|s| &s.node) else {
            return Err(SqlError::internal(format!("function {} has no query", def.name)));
        };
        let ret = type_text(def.ret);
        // The arguments are computed in a FROM item of their own (`_args`), so
        // the body's relations cannot capture the caller's column names.
        let params: Vec<String> = (1..=args.len()).map(|i| format!("_args.p{i}")).collect();
        let args_item = if args.is_empty() {
            String::new()
        } else {
            let cols: Vec<String> = args.iter().enumerate().map(|(i, a)| format!("{a} AS p{}", i + 1)).collect();
            format!("(SELECT {}) AS _args, LATERAL ", cols.join(", "))
        };
        if in_from {
            let body = crate::sqlfunc::substitute(&def.src, &def.arg_names, &params)?;
            let cols: Vec<(String, Type)> = if def.out.is_empty() { vec![(def.name.clone(), def.ret)] } else { def.out.clone() };
            let inner: Vec<String> = (1..=cols.len()).map(|i| format!("c{i}")).collect();
            let outer: Vec<String> = cols
                .iter()
                .enumerate()
                .map(|(i, (n, t))| format!("CAST(_f.c{} AS {}) AS {}", i + 1, type_text(*t), crate::alter::quote_ident(n)))
                .collect();
            return Ok(format!("SELECT {} FROM {args_item}({body}) AS _f({})", outer.join(", "), inner.join(", ")));
        }
        if def.retset || def.ret == Type::Void {
            return Err(SqlError::not_supported(format!("set-returning SQL function {} outside FROM", def.name)));
        }
        match single_expression(sel) {
            Some(e) => {
                let e = crate::sqlfunc::substitute(&expr_text(e)?, &def.arg_names, args)?;
                if def.strict && !args.is_empty() {
                    // STRICT: NULL when an argument is NULL, without evaluating the body.
                    let tests: Vec<String> = args.iter().map(|a| format!("({a}) IS NULL")).collect();
                    return Ok(format!("SELECT CASE WHEN {} THEN CAST(NULL AS {ret}) ELSE CAST(({e}) AS {ret}) END", tests.join(" OR ")));
                }
                Ok(format!("SELECT CAST(({e}) AS {ret})"))
            }
            None => {
                let body = crate::sqlfunc::substitute(&def.src, &def.arg_names, &params)?;
                Ok(format!("SELECT CAST(((SELECT _f.* FROM {args_item}({body}) AS _f LIMIT 1)) AS {ret})"))
            }
        }
    }

    /// The SQL function `f` calls, its arguments as SQL text (cast to the
    /// declared types, defaults added); `None` when no SQL function has the name.
    fn resolve_sql_function(&mut self, f: &pb::FuncCall, scope: &mut Scope) -> Result<Option<(ProcDef, Vec<String>)>> {
        if !crate::sqlfunc::functions_exist(self.backend) {
            return Ok(None);
        }
        let (schema, name) = names_of(&f.funcname);
        if schema.as_deref() == Some("pg_catalog") {
            return Ok(None);
        }
        let cands = crate::sqlfunc::lookup(self.backend, self.snap, schema.as_deref(), &name)?;
        if cands.is_empty() {
            return Ok(None);
        }
        if f.agg_star || f.agg_distinct || f.over.is_some() || !f.agg_order.is_empty() || f.agg_filter.is_some() {
            return Err(SqlError::not_supported(format!("this call of SQL function {name}")));
        }
        let mut types = Vec::new();
        let mut texts = Vec::new();
        for a in &f.args {
            let Some(a) = a.node.as_ref() else { continue };
            if matches!(a, NodeEnum::NamedArgExpr(_)) {
                return Err(SqlError::not_supported("named arguments of SQL functions"));
            }
            types.push(self.expr(a, scope)?.ty());
            texts.push(expr_text(a)?);
        }
        let n = types.len();
        let ids: Vec<usize> = (0..cands.len()).collect();
        let declared = |c: usize, n: usize| cands[c].args.iter().take(n).map(|t| Some(*t)).collect::<Vec<_>>();
        let fits = |c: usize, n: usize| n <= cands[c].args.len() && n + cands[c].n_defaults() >= cands[c].args.len();
        let id = match select_candidate_by(&ids, &types, false, &declared, &fits) {
            Resolution::Found(id) => id,
            Resolution::NotFound => return Ok(None),
            Resolution::NotUnique => {
                return Err(self.err_at(
                    SqlError::new(b"42725", format!("function {} is not unique", crate::sqlfunc::signature(&name, &types)))
                        .with_hint("Could not choose a best candidate function. You might need to add explicit type casts."),
                    f.location,
                ))
            }
        };
        let def = cands[id].clone();
        // EXECUTE, checked at each execution as the caller (under a view too).
        crate::catcache::require(self.backend, crate::acl::PermReq { rel: def.oid, privs: crate::acl::EXECUTE, func: true, ..Default::default() });
        let mut args: Vec<String> = texts.iter().zip(&def.args).map(|(t, ty)| format!("CAST(({t}) AS {})", type_text(*ty))).collect();
        for i in n..def.args.len() {
            let d = def.defaults[i].clone().unwrap_or_else(|| "NULL".into());
            args.push(format!("CAST(({d}) AS {})", type_text(def.args[i])));
        }
        Ok(Some((def, args)))
    }

    fn enter(&self, name: &str) -> Result<DepthGuard> {
        let d = DEPTH.with(|d| {
            d.set(d.get() + 1);
            d.get()
        });
        let g = DepthGuard;
        if d > 32 {
            return Err(ferrogres_datum::stack_depth::too_deep().with_context(format!("SQL function \"{name}\"")));
        }
        Ok(g)
    }

    /// A call of a SQL function in an expression, expanded; `None`: `f` names none.
    pub(super) fn sql_function_call(&mut self, f: &pb::FuncCall, scope: &mut Scope) -> Result<Option<Expr>> {
        let Some((def, args)) = self.resolve_sql_function(f, scope)? else { return Ok(None) };
        let _g = self.enter(&def.name)?;
        let text = self.expansion(&def, &args, false).map_err(|e| self.err_at(e, f.location))?;
        let stmts = crate::parser::parse(&text)?;
        let Some(NodeEnum::SelectStmt(sel)) = stmts.first().map(|s| &s.node) else { return Err(SqlError::internal("expansion")) };
        let Some(NodeEnum::ResTarget(rt)) = sel.target_list.first().and_then(|t| t.node.as_ref()) else { return Err(SqlError::internal("expansion")) };
        let Some(e) = node(&rt.val) else { return Err(SqlError::internal("expansion")) };
        let e = e.clone();
        self.expr(&e, scope).map(Some).map_err(|mut e| {
            e.position = None;
            e.at(self.sql, f.location)
        })
    }

    /// A SQL function in FROM, as the subquery it expands to; `None`: not one.
    pub(crate) fn sql_function_range(&mut self, rf: &pb::RangeFunction) -> Result<Option<NodeEnum>> {
        if !crate::sqlfunc::functions_exist(self.backend) || rf.functions.len() != 1 || rf.ordinality || rf.is_rowsfrom {
            return Ok(None);
        }
        let Some(NodeEnum::List(l)) = rf.functions[0].node.as_ref() else { return Ok(None) };
        let Some(NodeEnum::FuncCall(f)) = l.items.first().and_then(|n| n.node.as_ref()) else { return Ok(None) };
        let mut scope = Scope::new(None);
        let Some((def, args)) = self.resolve_sql_function(f, &mut scope)? else { return Ok(None) };
        let _g = self.enter(&def.name)?;
        let text = self.expansion(&def, &args, true)?;
        let wrapped = format!("SELECT * FROM ({text}) AS _s");
        let stmts = crate::parser::parse(&wrapped)?;
        let Some(NodeEnum::SelectStmt(sel)) = stmts.first().map(|s| &s.node) else { return Err(SqlError::internal("expansion")) };
        let Some(NodeEnum::RangeSubselect(rs)) = sel.from_clause.first().and_then(|n| n.node.as_ref()) else { return Err(SqlError::internal("expansion")) };
        let mut rs = (**rs).clone();
        rs.lateral = rf.lateral;
        let refname = rf.alias.as_ref().map_or(def.name.clone(), |a| a.aliasname.clone());
        let mut alias = rf.alias.clone().unwrap_or_default();
        alias.aliasname = refname.clone();
        if def.out.is_empty() && alias.colnames.is_empty() {
            // A scalar SETOF function's column is named after its alias, as in PostgreSQL.
            alias.colnames = vec![pb::Node { node: Some(NodeEnum::String(pb::String { sval: refname })) }];
        }
        rs.alias = Some(alias);
        Ok(Some(NodeEnum::RangeSubselect(Box::new(rs))))
    }

    /// Whether a FROM function item names a SQL function (the single-table
    /// path of a SELECT is not taken then).
    pub(crate) fn names_sql_function(&self, rf: &pb::RangeFunction) -> bool {
        if !crate::sqlfunc::functions_exist(self.backend) || rf.functions.len() != 1 {
            return false;
        }
        let Some(NodeEnum::List(l)) = rf.functions[0].node.as_ref() else { return false };
        let Some(NodeEnum::FuncCall(f)) = l.items.first().and_then(|n| n.node.as_ref()) else { return false };
        let (schema, name) = names_of(&f.funcname);
        crate::sqlfunc::lookup(self.backend, self.snap, schema.as_deref(), &name).is_ok_and(|v| !v.is_empty())
    }
}
