//! Analysis of the catalog and session information functions psql calls
//! (`crate::pgcatalog::CatFunc`), COLLATE clauses, and current_user & co.

use super::{node, Analyzer, Scope};
use ferrogres_datum::errors::{Result, SqlError};
use crate::pgcatalog::{self, CatFunc};
use crate::plan::{Expr, Func};
use ferrogres_datum::types::{CastContext, Type, Value};
use pg_query::protobuf as pb;

fn name_const(s: &str) -> Expr {
    Expr::Const(Value::Text(s.to_string()), Type::Name)
}

impl<'a> Analyzer<'a> {
    /// A catalog function, `None` for another name.
    pub(super) fn catalog_func(&mut self, name: &str, args: &mut Vec<Expr>, locs: &[i32], loc: i32) -> Result<Option<Expr>> {
        let n = args.len();
        let (f, sig, ret): (CatFunc, &[Type], Type) = match (name, n) {
            ("format_type", 2) => (CatFunc::FormatType, &[Type::Oid, Type::Int4], Type::Text),
            ("pg_get_userbyid", 1) => {
                // The role names, read now (a change to pg_authid makes the plan stale).
                let arg = std::mem::take(args).into_iter().next().expect("one argument");
                let arg = self.coerce(arg, Type::Oid, CastContext::Implicit, locs[0])?;
                let roles = crate::acl::role_graph(self.backend, self.snap)?;
                let table: Vec<Value> = roles.all().map(|(o, n)| Value::Text(format!("{o}:{n}"))).collect();
                let table = Expr::Const(Value::Array(Box::new(ferrogres_datum::array::Array::new(Type::Text, table))), ferrogres_datum::array::array_of(Type::Text).expect("text[]"));
                return Ok(Some(Expr::Func { func: Func::Catalog(CatFunc::GetUserById), args: vec![arg, table], ty: Type::Name }));
            }
            ("to_regtype" | "to_regclass" | "to_regnamespace" | "to_regproc" | "to_regprocedure", 1) => {
                let kind = match name {
                    "to_regtype" => RegKind::Type,
                    "to_regclass" => RegKind::Class,
                    "to_regnamespace" => RegKind::Namespace,
                    _ => RegKind::Proc,
                };
                let arg = std::mem::take(args).into_iter().next().expect("one argument");
                if !matches!(arg.ty(), Type::Unknown | Type::Text | Type::Varchar | Type::Bpchar | Type::Name) {
                    return Ok(None);
                }
                let arg = self.coerce(arg, Type::Text, CastContext::Implicit, locs[0])?;
                return Ok(Some(self.reg_lookup(kind, arg, false)?));
            }
            ("pg_get_serial_sequence", 2) => {
                // The table name is regclass input (42P01 for none), the
                // column name is taken as written (case kept).
                let mut given = std::mem::take(args).into_iter();
                let (rel, col) = (given.next().expect("two arguments"), given.next().expect("two arguments"));
                let rel = self.coerce(rel, Type::Text, CastContext::Implicit, locs[0])?;
                let rel = self.reg_lookup(RegKind::Class, rel, true)?;
                let col = self.coerce(col, Type::Text, CastContext::Implicit, locs[1])?;
                let owned = crate::sequence::owned_sequences(self.backend, self.snap)?;
                let table = owned.into_iter().map(|(t, c, s)| Value::Text(format!("{t}\0{c}\0{s}"))).collect();
                let table = Expr::Const(Value::Array(Box::new(ferrogres_datum::array::Array::new(Type::Text, table))), ferrogres_datum::array::array_of(Type::Text).expect("text[]"));
                return Ok(Some(Expr::Func { func: Func::Catalog(CatFunc::SerialSequence), args: vec![rel, col, table], ty: Type::Text }));
            }
            ("pg_encoding_to_char", 1) => (CatFunc::EncodingToChar, &[Type::Int4], Type::Name),
            ("pg_table_is_visible", 1) => {
                let oid_arg = std::mem::take(args).into_iter().next().expect("one argument");
                let oid_arg = self.coerce(oid_arg, Type::Oid, CastContext::Implicit, locs[0])?;
                let hidden = crate::namespace::invisible_relations(self.backend, self.snap)?;
                let table = ferrogres_datum::array::Array::new(Type::Oid, hidden.into_iter().map(Value::Oid).collect());
                let table = Expr::Const(Value::Array(Box::new(table)), ferrogres_datum::array::array_of(Type::Oid).expect("oid[]"));
                return Ok(Some(Expr::Func { func: Func::Catalog(CatFunc::IsVisible), args: vec![oid_arg, table], ty: Type::Bool }));
            }
            ("pg_type_is_visible" | "pg_function_is_visible" | "pg_collation_is_visible", 1) => {
                (CatFunc::IsVisible, &[Type::Oid], Type::Bool)
            }
            ("has_table_privilege" | "has_sequence_privilege" | "has_schema_privilege" | "has_database_privilege" | "has_any_column_privilege" | "has_parameter_privilege" | "has_function_privilege", 2..=3)
            | ("has_column_privilege", 3..=4) => {
                let f = crate::acl::PrivFn::of_name(name).expect("a privilege inquiry function");
                let mut out = Vec::new();
                for (a, l) in std::mem::take(args).into_iter().zip(locs) {
                    out.push(match a.ty() {
                        Type::Unknown | Type::Name => self.coerce(a, Type::Text, CastContext::Implicit, *l)?,
                        Type::Int8 => self.coerce(a, Type::Oid, CastContext::Implicit, *l)?,
                        _ => a,
                    });
                }
                return Ok(Some(Expr::Func { func: Func::Catalog(CatFunc::HasPrivilege(f)), args: out, ty: Type::Bool }));
            }
            ("obj_description" | "shobj_description", 2) => (CatFunc::NullText, &[Type::Oid, Type::Name], Type::Text),
            ("obj_description", 1) => (CatFunc::NullText, &[Type::Oid], Type::Text),
            // Rules other than a view's _RETURN do not exist (pg_rewrite is empty to SQL).
            ("pg_get_ruledef", 1) => (CatFunc::NullText, &[Type::Oid], Type::Text),
            ("pg_get_ruledef", 2) => (CatFunc::NullText, &[Type::Oid, Type::Bool], Type::Text),
            ("col_description", 2) => (CatFunc::NullText, &[Type::Oid, Type::Int4], Type::Text),
            ("pg_get_viewdef", 1 | 2) => {
                let mut given = std::mem::take(args).into_iter();
                let arg = given.next().expect("one argument or more");
                let oid_arg = match arg {
                    // pg_get_viewdef(text): the name resolved now.
                    Expr::Const(Value::Text(n), Type::Text | Type::Unknown) => {
                        let (schema, rel) = match n.split_once('.') {
                            Some((s, r)) => (Some(s.to_string()), r.to_string()),
                            None => (None, n.clone()),
                        };
                        let oid = match crate::view::lookup(self.backend, self.snap, schema.as_deref(), &rel)? {
                            Some(v) => v.oid,
                            None => match crate::index::find_relation(self.backend, self.snap, crate::namespace::relation_namespace(self.backend, self.snap, schema.as_deref(), &rel).ok().flatten().unwrap_or(0), &rel)? {
                                Some((o, _)) => o,
                                None => return Err(SqlError::new(b"42P01", format!("relation \"{n}\" does not exist"))),
                            },
                        };
                        Expr::Const(Value::Oid(oid), Type::Oid)
                    }
                    a => self.coerce(a, Type::Oid, CastContext::Implicit, locs[0])?,
                };
                let table = ferrogres_datum::array::Array::new(Type::Text, pgcatalog::view_defs(self.backend, self.snap)?.into_iter().map(Value::Text).collect());
                let table = Expr::Const(Value::Array(Box::new(table)), ferrogres_datum::array::array_of(Type::Text).expect("text[]"));
                return Ok(Some(Expr::Func { func: Func::Catalog(CatFunc::Lookup), args: vec![oid_arg, table, Expr::Const(Value::Bool(false), Type::Bool)], ty: Type::Text }));
            }
            // Extended statistics and publications do not exist: their catalogs are empty.
            ("pg_get_statisticsobjdef_columns", 1) => (CatFunc::NullText, &[Type::Oid], Type::Text),
            ("pg_relation_is_publishable", 1) => (CatFunc::IsVisible, &[Type::Oid], Type::Bool),
            ("pg_get_expr", 2) => (CatFunc::GetExpr, &[Type::Text, Type::Oid], Type::Text),
            ("pg_get_expr", 3) => (CatFunc::GetExpr, &[Type::Text, Type::Oid, Type::Bool], Type::Text),
            ("pg_get_function_result" | "pg_get_function_arguments", 1) => {
                let oid_arg = std::mem::take(args).into_iter().next().expect("one argument");
                let oid_arg = self.coerce(oid_arg, Type::Oid, CastContext::Implicit, locs[0])?;
                let texts = pgcatalog::function_texts(self.backend, self.snap, name == "pg_get_function_result")?;
                let table = ferrogres_datum::array::Array::new(Type::Text, texts.into_iter().map(Value::Text).collect());
                let table = Expr::Const(Value::Array(Box::new(table)), ferrogres_datum::array::array_of(Type::Text).expect("text[]"));
                return Ok(Some(Expr::Func { func: Func::Catalog(CatFunc::Lookup), args: vec![oid_arg, table, Expr::Const(Value::Bool(false), Type::Bool)], ty: Type::Text }));
            }
            // Bodies are stored as their query (prosrc); there is no separate SQL-standard body.
            ("pg_get_function_sqlbody", 1) => (CatFunc::NullText, &[Type::Oid], Type::Text),
            ("pg_get_indexdef", 1 | 3) | ("pg_get_constraintdef", 1 | 2) => {
                let mut given = std::mem::take(args).into_iter();
                let oid_arg = given.next().expect("one argument or more");
                let oid_arg = self.coerce(oid_arg, Type::Oid, CastContext::Implicit, locs[0])?;
                // pg_get_indexdef(oid, column, pretty): a column's definition alone.
                let column = match (name == "pg_get_indexdef", given.len()) {
                    (true, 2) => Some(self.coerce(given.next().expect("three arguments"), Type::Int4, CastContext::Implicit, locs[1])?),
                    _ => None,
                };
                let pretty = match given.last() {
                    Some(p) => self.coerce(p, Type::Bool, CastContext::Implicit, *locs.last().unwrap_or(&loc))?,
                    None => Expr::Const(Value::Bool(false), Type::Bool),
                };
                let defs = if name == "pg_get_indexdef" {
                    pgcatalog::index_defs(self.backend, self.snap)?
                } else {
                    pgcatalog::constraint_defs(self.backend, self.snap)?
                };
                let table = ferrogres_datum::array::Array::new(Type::Text, defs.into_iter().map(Value::Text).collect());
                let table = Expr::Const(Value::Array(Box::new(table)), ferrogres_datum::array::array_of(Type::Text).expect("text[]"));
                let mut args = vec![oid_arg, table, pretty];
                args.extend(column);
                return Ok(Some(Expr::Func { func: Func::Catalog(CatFunc::Lookup), args, ty: Type::Text }));
            }
            ("pg_relation_size" | "pg_table_size" | "pg_total_relation_size" | "pg_indexes_size", 1) => {
                let oid_arg = std::mem::take(args).into_iter().next().expect("one argument");
                let oid_arg = self.regclass_arg(oid_arg, locs[0])?;
                let sizes = pgcatalog::relation_sizes(self.backend, self.snap, name)?;
                let table = ferrogres_datum::array::Array::new(Type::Text, sizes.into_iter().map(Value::Text).collect());
                let table = Expr::Const(Value::Array(Box::new(table)), ferrogres_datum::array::array_of(Type::Text).expect("text[]"));
                return Ok(Some(Expr::Func { func: Func::Catalog(CatFunc::Size), args: vec![oid_arg, table], ty: Type::Int8 }));
            }
            ("current_schemas", 1) => {
                let arg = std::mem::take(args).into_iter().next().expect("one argument");
                let arg = self.coerce(arg, Type::Bool, CastContext::Implicit, locs[0])?;
                let ty = ferrogres_datum::array::array_of(Type::Name).expect("name[]");
                let mut lists = vec![arg];
                for implicit in [true, false] {
                    let names = crate::namespace::current_schemas(self.backend, self.snap, implicit)?;
                    let a = ferrogres_datum::array::Array::new(Type::Name, names.into_iter().map(Value::Text).collect());
                    lists.push(Expr::Const(Value::Array(Box::new(a)), ty));
                }
                return Ok(Some(Expr::Func { func: Func::Catalog(CatFunc::CurrentSchemas), args: lists, ty }));
            }
            ("quote_ident", 1) => (CatFunc::QuoteIdent, &[Type::Text], Type::Text),
            ("pg_size_pretty", 1) => (CatFunc::SizePretty, &[Type::Int8], Type::Text),
            ("current_schema", 0) => return Ok(Some(self.current_schema_const())),
            ("pg_database_size", 1) => {
                // Folded at analysis (the argument must be a constant); never cached.
                crate::plan_cache::mark_uncacheable();
                let v = match &args[0] {
                    Expr::Const(Value::Text(t), _) => Value::Text(t.clone()),
                    Expr::Const(Value::Int4(i), _) => Value::Oid(*i as u32),
                    Expr::Const(Value::Int8(i), _) => Value::Oid(*i as u32),
                    Expr::Const(Value::Oid(o), _) => Value::Oid(*o),
                    Expr::Const(Value::Null, _) => Value::Null,
                    _ => return Err(SqlError::not_supported("pg_database_size of a non-constant argument")),
                };
                let size = crate::database::size_of(self.backend, self.snap, &v)?;
                return Ok(Some(Expr::Const(size.map_or(Value::Null, Value::Int8), Type::Int8)));
            }
            ("current_database", 0) => return Ok(Some(name_const(&crate::database::current_name(self.backend, self.snap)?))),
            _ => return Ok(None),
        };
        let types: Vec<Type> = args.iter().map(|a| a.ty()).collect();
        let mut out = Vec::new();
        for ((a, want), l) in std::mem::take(args).into_iter().zip(sig).zip(locs) {
            let t = a.ty();
            let ok = t == *want || ferrogres_datum::types::cast_allowed(t, *want, CastContext::Implicit) || (t.is_string() && want.is_string());
            if !ok {
                let names: Vec<&str> = types.iter().map(|t| t.sql_name()).collect();
                return Err(self.err_at(
                    SqlError::new(b"42883", format!("function {name}({}) does not exist", names.join(", ")))
                        .with_hint("No function matches the given name and argument types. You might need to add explicit type casts."),
                    loc,
                ));
            }
            out.push(if t == *want { a } else { self.coerce(a, *want, CastContext::Implicit, *l)? });
        }
        Ok(Some(Expr::Func { func: Func::Catalog(f), args: out, ty: ret }))
    }

    /// current_schema(): folded at analysis (a search_path change re-plans).
    fn current_schema_const(&self) -> Expr {
        match crate::namespace::current_schema(self.backend, self.snap) {
            Ok(Some(s)) => name_const(&s),
            _ => Expr::Const(Value::Null, Type::Name),
        }
    }

    /// CURRENT_USER, SESSION_USER, USER, CURRENT_ROLE, CURRENT_CATALOG, CURRENT_SCHEMA.
    pub(super) fn session_value_function(&self, op: pb::SqlValueFunctionOp) -> Option<Expr> {
        use pb::SqlValueFunctionOp as O;
        Some(match op {
            O::SvfopCurrentUser | O::SvfopCurrentRole | O::SvfopUser => {
                name_const(&crate::roles::name_of(self.backend, self.snap, self.backend.current_user))
            }
            O::SvfopSessionUser => name_const(&crate::roles::name_of(self.backend, self.snap, self.backend.session_user)),
            O::SvfopCurrentCatalog => name_const(&crate::database::current_name(self.backend, self.snap).unwrap_or_else(|_| "postgres".into())),
            O::SvfopCurrentSchema => self.current_schema_const(),
            _ => return None,
        })
    }
}

/// The object-identifier alias types psql casts to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RegKind {
    Class,
    Type,
    Namespace,
    Proc,
}

impl<'a> Analyzer<'a> {
    /// `x::regclass`, `x::regtype`, `x::regnamespace`, `x::regproc`: an OID
    /// becomes the object's name (as type name, which prints like regclass
    /// does); a string literal names an object and becomes its OID (type oid,
    /// so that `attrelid = 't'::regclass` compares). `None`: not such a cast.
    pub(super) fn reg_cast(&mut self, tc: &pb::TypeCast, scope: &mut Scope) -> Result<Option<Expr>> {
        let Some(tn) = tc.type_name.as_ref() else { return Ok(None) };
        let names: Vec<&str> = tn.names.iter().filter_map(super::str_of).collect();
        let kind = match names.as_slice() {
            ["pg_catalog", n] | [n] => match *n {
                "regclass" => RegKind::Class,
                "regtype" => RegKind::Type,
                "regnamespace" => RegKind::Namespace,
                "regproc" | "regprocedure" => RegKind::Proc,
                _ => return Ok(None),
            },
            _ => return Ok(None),
        };
        if !tn.array_bounds.is_empty() {
            return Err(self.err_at(SqlError::not_supported("arrays of OID alias types"), tn.location));
        }
        let Some(argn) = node(&tc.arg) else { return Err(SqlError::internal("cast without argument")) };
        let arg = self.expr(argn, scope)?;
        let loc = super::location(argn);
        if let Expr::Const(v, Type::Unknown) = &arg {
            let Value::Text(s) = v else { return Ok(Some(Expr::Const(Value::Null, Type::Oid))) };
            if let Ok(n) = s.trim().parse::<u32>() {
                return Ok(Some(Expr::Const(Value::Oid(n), Type::Oid)));
            }
            let oid = match kind {
                RegKind::Class => match self.relation_oid(s) {
                    Some(o) => o,
                    None => return Err(self.err_at(SqlError::new(b"42P01", format!("relation \"{s}\" does not exist")), loc)),
                },
                RegKind::Type => match Type::from_sql_name(s.trim()).or_else(|| ferrogres_datum::array::from_typname(s.trim())) {
                    Some(t) => t.oid(),
                    None => return Err(self.err_at(SqlError::new(b"42704", format!("type \"{s}\" does not exist")), loc)),
                },
                RegKind::Namespace => match s.as_str() {
                    "pg_catalog" => crate::catalog::PG_CATALOG_NAMESPACE,
                    "public" => crate::catalog::PUBLIC_NAMESPACE,
                    "pg_toast" => pgcatalog::PG_TOAST_NAMESPACE,
                    "information_schema" => pgcatalog::INFORMATION_SCHEMA_NAMESPACE,
                    other if crate::namespace::schema_oid(self.backend, self.snap, other)?.is_some() => {
                        crate::namespace::schema_oid(self.backend, self.snap, other)?.expect("checked")
                    }
                    _ => return Err(self.err_at(SqlError::new(b"42704", format!("schema \"{s}\" does not exist")), loc)),
                },
                RegKind::Proc => {
                    // regproc is shown as its name (text) here, as pg_type's
                    // typinput & co. are: the name, checked to exist.
                    let names: Vec<Value> = pgcatalog::regproc_names().into_iter().map(|n| Value::Text(format!("{n}:"))).collect();
                    let table = Value::Array(Box::new(ferrogres_datum::array::Array::new(Type::Text, names)));
                    let v = pgcatalog::to_reg(pgcatalog::RegLookup::Proc, true, &[Value::Text(s.clone()), table]).map_err(|e| self.err_at(e, loc))?;
                    return Ok(Some(Expr::Const(v, Type::Text)));
                }
            };
            return Ok(Some(Expr::Const(Value::Oid(oid), Type::Oid)));
        }
        let t = arg.ty();
        if t == Type::Unknown {
            // A parameter of unknown type (`CAST($1 AS regclass)`): the
            // client's value is the type's text input, as regclassin reads it.
            let arg = self.coerce(arg, Type::Text, CastContext::Explicit, loc)?;
            return Ok(Some(self.reg_lookup(kind, arg, true)?));
        }
        if matches!(t, Type::Text | Type::Varchar | Type::Bpchar | Type::Name) {
            // A string value read as the type's input at run time
            // (`$1::text::regtype`): its OID (regproc: its name).
            return Ok(Some(self.reg_lookup(kind, arg, true)?));
        }
        if !(t == Type::Oid || t.is_integer()) {
            return Err(self.err_at(ferrogres_datum::types::cannot_cast(t, Type::Oid), loc));
        }
        let arg = self.coerce(arg, Type::Oid, CastContext::Implicit, loc)?;
        let table: Vec<String> = match kind {
            RegKind::Class => self.relation_names()?,
            RegKind::Type => {
                let mut all: Vec<Type> = ferrogres_datum::types::TYPES.to_vec();
                all.extend([Type::Name, Type::Char, Type::Xid]);
                all.extend(ferrogres_datum::array::all_array_types());
                all.into_iter().map(|t| format!("{}:{}", t.oid(), t.sql_name())).collect()
            }
            RegKind::Namespace => [(11, "pg_catalog"), (2200, "public"), (99, "pg_toast"), (pgcatalog::INFORMATION_SCHEMA_NAMESPACE, "information_schema")]
                .iter()
                .map(|(o, n)| format!("{o}:{n}"))
                .collect(),
            RegKind::Proc => vec!["0:-".into()],
        };
        let table = ferrogres_datum::array::Array::new(Type::Text, table.into_iter().map(Value::Text).collect());
        let table = Expr::Const(Value::Array(Box::new(table)), ferrogres_datum::array::array_of(Type::Text).expect("text[]"));
        Ok(Some(Expr::Func {
            func: Func::Catalog(CatFunc::RegName),
            args: vec![arg, table],
            ty: Type::Name,
        }))
    }

    /// [`CatFunc::ToReg`] of a text expression, with its analysis-time table.
    fn reg_lookup(&mut self, kind: RegKind, arg: Expr, error: bool) -> Result<Expr> {
        let (lookup, table, ty) = match kind {
            RegKind::Type => (pgcatalog::RegLookup::Type, Vec::new(), Type::Oid),
            RegKind::Class => (pgcatalog::RegLookup::Class, self.relation_keys()?, Type::Oid),
            RegKind::Namespace => {
                let names = crate::namespace::namespaces(self.backend, self.snap)?
                    .into_iter()
                    .chain([(pgcatalog::PG_TOAST_NAMESPACE, "pg_toast".to_string()), (pgcatalog::INFORMATION_SCHEMA_NAMESPACE, "information_schema".to_string())]);
                (pgcatalog::RegLookup::Namespace, names.map(|(o, n)| format!("{n}:{o}")).collect(), Type::Oid)
            }
            RegKind::Proc => (pgcatalog::RegLookup::Proc, pgcatalog::regproc_names().into_iter().map(|n| format!("{n}:")).collect(), Type::Text),
        };
        let table = ferrogres_datum::array::Array::new(Type::Text, table.into_iter().map(Value::Text).collect());
        let table = Expr::Const(Value::Array(Box::new(table)), ferrogres_datum::array::array_of(Type::Text).expect("text[]"));
        Ok(Expr::Func { func: Func::Catalog(CatFunc::ToReg { kind: lookup, error }), args: vec![arg, table], ty })
    }

    /// `name:oid` of every relation as regclass input finds it: `schema.name`,
    /// and `name` alone when visible in the search path.
    fn relation_keys(&self) -> Result<Vec<String>> {
        let hidden: std::collections::HashSet<u32> = crate::namespace::invisible_relations(self.backend, self.snap)?.into_iter().collect();
        let schemas: std::collections::HashMap<u32, String> = crate::namespace::namespaces(self.backend, self.snap)?.into_iter().collect();
        let mut out = Vec::new();
        for (_, r) in crate::rowio::scan_rows(self.backend, &crate::catalog::class_rel(), self.snap)? {
            if let (Value::Oid(o), Value::Text(n), Value::Oid(ns)) = (&r[0], &r[1], &r[2]) {
                if let Some(s) = schemas.get(ns) {
                    out.push(format!("{s}.{n}:{o}"));
                }
                if !hidden.contains(o) {
                    out.push(format!("{n}:{o}"));
                }
            }
        }
        for (o, n) in pgcatalog::view_names() {
            out.push(format!("pg_catalog.{n}:{o}"));
            out.push(format!("{n}:{o}"));
        }
        Ok(out)
    }

    /// `oid:name` of every relation (tables, indexes, the catalog views).
    fn relation_names(&self) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for (_, r) in crate::rowio::scan_rows(self.backend, &crate::catalog::class_rel(), self.snap)? {
            if let (Value::Oid(o), Value::Text(n)) = (&r[0], &r[1]) {
                out.push(format!("{o}:{}", pgcatalog::quote_ident(n)));
            }
        }
        out.extend(pgcatalog::view_names().map(|(o, n)| format!("{o}:{n}")));
        Ok(out)
    }

    /// The OID of relation `name` (optionally schema-qualified).
    /// An argument of a function declared `regclass` in PostgreSQL: a string
    /// literal names a relation (PostgreSQL's regclass input: its OID, or 42P01),
    /// anything else is coerced to oid.
    fn regclass_arg(&mut self, arg: Expr, loc: i32) -> Result<Expr> {
        match &arg {
            Expr::Const(Value::Text(s), Type::Unknown) => {
                if let Ok(n) = s.trim().parse::<u32>() {
                    return Ok(Expr::Const(Value::Oid(n), Type::Oid));
                }
                match self.relation_oid(s) {
                    Some(o) => Ok(Expr::Const(Value::Oid(o), Type::Oid)),
                    None => Err(self.err_at(SqlError::new(b"42P01", format!("relation \"{s}\" does not exist")), loc)),
                }
            }
            _ => self.coerce(arg, Type::Oid, CastContext::Implicit, loc),
        }
    }

    fn relation_oid(&self, name: &str) -> Option<u32> {
        // regclass input: quoted parts keep their case, others fold to lower.
        let parts = pgcatalog::split_qualified_name(name)?;
        let (schema, rel) = match parts.as_slice() {
            [s, r] => (Some(s.as_str()), r.as_str()),
            [r] => (None, r.as_str()),
            _ => return None,
        };
        if let Some(t) = pgcatalog::lookup(schema, rel) {
            return Some(t.oid);
        }
        let ns = crate::namespace::relation_namespace(self.backend, self.snap, schema, rel).ok()??;
        for (_, r) in crate::rowio::scan_rows(self.backend, &crate::catalog::class_rel(), self.snap).ok()? {
            if let (Value::Oid(o), Value::Text(n), Value::Oid(rns)) = (&r[0], &r[1], &r[2]) {
                if n == rel && *rns == ns {
                    return Some(*o);
                }
            }
        }
        None
    }
}
