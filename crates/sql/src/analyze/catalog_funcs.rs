//! Analysis of the catalog and session information functions psql calls
//! (`crate::pgcatalog::CatFunc`), COLLATE clauses, and current_user & co.

use super::{node, Analyzer, Scope};
use crate::errors::{Result, SqlError};
use crate::pgcatalog::{self, CatFunc};
use crate::plan::{Expr, Func};
use crate::types::{CastContext, Type, Value};
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
            ("pg_get_userbyid", 1) => (CatFunc::GetUserById, &[Type::Oid], Type::Name),
            ("pg_encoding_to_char", 1) => (CatFunc::EncodingToChar, &[Type::Int4], Type::Name),
            ("pg_table_is_visible" | "pg_type_is_visible" | "pg_function_is_visible" | "pg_collation_is_visible", 1) => {
                (CatFunc::IsVisible, &[Type::Oid], Type::Bool)
            }
            ("has_table_privilege" | "has_schema_privilege" | "has_database_privilege" | "has_column_privilege" | "has_function_privilege", 2..=4) => {
                // The privilege and object arguments are names or OIDs; their values do not matter.
                let mut out = Vec::new();
                for (a, l) in std::mem::take(args).into_iter().zip(locs) {
                    out.push(if a.ty() == Type::Unknown { self.coerce(a, Type::Text, CastContext::Implicit, *l)? } else { a });
                }
                return Ok(Some(Expr::Func { func: Func::Catalog(CatFunc::True), args: out, ty: Type::Bool }));
            }
            ("obj_description" | "shobj_description", 2) => (CatFunc::NullText, &[Type::Oid, Type::Name], Type::Text),
            ("obj_description", 1) => (CatFunc::NullText, &[Type::Oid], Type::Text),
            ("col_description", 2) => (CatFunc::NullText, &[Type::Oid, Type::Int4], Type::Text),
            ("pg_get_viewdef", 1) => (CatFunc::NullText, &[Type::Oid], Type::Text),
            ("pg_get_viewdef", 2) => (CatFunc::NullText, &[Type::Oid, Type::Bool], Type::Text),
            ("pg_get_expr", 2) => (CatFunc::GetExpr, &[Type::Text, Type::Oid], Type::Text),
            ("pg_get_expr", 3) => (CatFunc::GetExpr, &[Type::Text, Type::Oid, Type::Bool], Type::Text),
            ("pg_get_indexdef", 1 | 3) | ("pg_get_constraintdef", 1 | 2) => {
                let mut given = std::mem::take(args).into_iter();
                let oid_arg = given.next().expect("one argument or more");
                let oid_arg = self.coerce(oid_arg, Type::Oid, CastContext::Implicit, locs[0])?;
                let pretty = match given.last() {
                    Some(p) => self.coerce(p, Type::Bool, CastContext::Implicit, *locs.last().unwrap_or(&loc))?,
                    None => Expr::Const(Value::Bool(false), Type::Bool),
                };
                let defs = if name == "pg_get_indexdef" {
                    pgcatalog::index_defs(self.backend, self.snap)?
                } else {
                    pgcatalog::constraint_defs(self.backend, self.snap)?
                };
                let table = crate::array::Array::new(Type::Text, defs.into_iter().map(Value::Text).collect());
                let table = Expr::Const(Value::Array(Box::new(table)), crate::array::array_of(Type::Text).expect("text[]"));
                return Ok(Some(Expr::Func { func: Func::Catalog(CatFunc::Lookup), args: vec![oid_arg, table, pretty], ty: Type::Text }));
            }
            ("current_schemas", 1) => (CatFunc::CurrentSchemas, &[Type::Bool], crate::array::array_of(Type::Name).expect("name[]")),
            ("quote_ident", 1) => (CatFunc::QuoteIdent, &[Type::Text], Type::Text),
            ("pg_size_pretty", 1) => (CatFunc::SizePretty, &[Type::Int8], Type::Text),
            ("current_schema", 0) => return Ok(Some(name_const("public"))),
            ("current_database", 0) => return Ok(Some(name_const("postgres"))),
            _ => return Ok(None),
        };
        let types: Vec<Type> = args.iter().map(|a| a.ty()).collect();
        let mut out = Vec::new();
        for ((a, want), l) in std::mem::take(args).into_iter().zip(sig).zip(locs) {
            let t = a.ty();
            let ok = t == *want || crate::types::cast_allowed(t, *want, CastContext::Implicit) || (t.is_string() && want.is_string());
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

    /// `expr COLLATE name`: the default, "C" and "POSIX" collations are the
    /// byte order every string comparison uses; others are 0A000.
    pub(super) fn collate_clause(&mut self, c: &pb::CollateClause, scope: &mut Scope) -> Result<Expr> {
        let names: Vec<&str> = c.collname.iter().filter_map(super::str_of).collect();
        let coll = names.last().copied().unwrap_or("");
        if !matches!(coll, "default" | "C" | "POSIX" | "ucs_basic") {
            return Err(self.err_at(SqlError::not_supported(format!("collation \"{coll}\"")), c.location));
        }
        let Some(arg) = node(&c.arg) else { return Err(SqlError::internal("COLLATE without argument")) };
        let e = self.expr(arg, scope)?;
        if !(e.ty().is_string()) {
            return Err(self.err_at(
                SqlError::new(b"42804", format!("collations are not supported by type {}", e.ty().sql_name())),
                c.location,
            ));
        }
        Ok(e)
    }

    /// CURRENT_USER, SESSION_USER, USER, CURRENT_ROLE, CURRENT_CATALOG, CURRENT_SCHEMA.
    pub(super) fn session_value_function(&self, op: pb::SqlValueFunctionOp) -> Option<Expr> {
        use pb::SqlValueFunctionOp as O;
        Some(match op {
            O::SvfopCurrentUser | O::SvfopCurrentRole | O::SvfopSessionUser | O::SvfopUser => name_const("postgres"),
            O::SvfopCurrentCatalog => name_const("postgres"),
            O::SvfopCurrentSchema => name_const("public"),
            _ => return None,
        })
    }
}
