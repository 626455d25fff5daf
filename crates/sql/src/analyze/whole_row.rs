//! Whole-row references as JSON: `row_to_json(t)`, `to_json(t)`,
//! `to_jsonb(t)`, `json_agg(t)`, `jsonb_agg(t)` where `t` names a relation of
//! the FROM clause (not a column). There is no record type yet, so the call is
//! rewritten over the relation's columns, in their order:
//! - `row_to_json(t)` / `to_json(t)`: `('{"a":' || coalesce(to_json(t.a)::text,
//!   'null') || ',"b":' || ... || '}')::json` (PostgreSQL's composite layout:
//!   no spaces);
//! - `to_jsonb(t)`: `jsonb_build_object('a', t.a, ...)` (jsonb's canonical form
//!   is the same for both);
//! - `json_agg(t)` / `jsonb_agg(t)`: the aggregate over that value; json_agg
//!   puts PostgreSQL's `,` newline space between rows (`Aggregate::delim`).
//!
//! The rewritten expression is parsed from generated SQL text (quoted names)
//! and analyzed in the caller's scope, so grouping checks apply to its columns.
//! Not done: `t.*` as the argument, whole-row references elsewhere (0A000 or
//! 42703 as before), pretty-printing `row_to_json(t, true)`.

use super::{node, Analyzer, Scope};
use ferrogres_datum::errors::{Result, SqlError};
use crate::plan::*;
use pg_query::protobuf as pb;
use pg_query::NodeEnum;

/// `Aggregate::delim` of a json_agg over whole rows (PostgreSQL's layout for
/// composite values: a newline and a space before each row after the first).
pub(crate) const ROWS: &str = "\n ";

/// A SQL identifier, double-quoted.
fn ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// A SQL string literal.
fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

impl<'a> Analyzer<'a> {
    /// The columns of relation `rel` if `rel` is a relation of this level's
    /// FROM and not a column name.
    fn whole_row_columns(&self, rel: &str, scope: &Scope) -> Option<Vec<String>> {
        if let Some(ns) = &scope.ns {
            if ns.cols.iter().any(|c| c.name == rel) {
                return None;
            }
            let (_, cols) = ns.rels.iter().find(|(name, _)| name == rel)?;
            return Some(cols.iter().map(|c| c.name.clone()).collect());
        }
        let (t, refname) = scope.table.as_ref()?;
        if refname != rel || t.columns.iter().any(|c| c.name == rel) {
            return None;
        }
        Some(t.columns[..t.user_columns()].iter().filter(|c| !c.is_dropped()).map(|c| c.name.clone()).collect())
    }

    /// `f(t)` for a whole-row reference `t` (see the module comment); `None`
    /// for any other call.
    pub(super) fn whole_row_json(&mut self, f: &pb::FuncCall, name: &str, scope: &mut Scope) -> Result<Option<Expr>> {
        if !matches!(name, "row_to_json" | "to_json" | "to_jsonb" | "json_agg" | "jsonb_agg") || f.args.len() != 1 || f.over.is_some() {
            return Ok(None);
        }
        let Some(NodeEnum::ColumnRef(c)) = f.args[0].node.as_ref() else { return Ok(None) };
        let [field] = c.fields.as_slice() else { return Ok(None) };
        let Some(rel) = super::str_of(field) else { return Ok(None) };
        let Some(cols) = self.whole_row_columns(rel, scope) else { return Ok(None) };
        let qual = ident(rel);
        let value = if name == "to_jsonb" || name == "jsonb_agg" {
            let pairs: Vec<String> = cols.iter().map(|c| format!("{}, {qual}.{}", literal(c), ident(c))).collect();
            format!("jsonb_build_object({})", pairs.join(", "))
        } else {
            let mut parts = Vec::new();
            for (i, c) in cols.iter().enumerate() {
                let mut key = String::from(if i == 0 { "{" } else { "," });
                ferrogres_datum::json::quote(&mut key, c);
                key.push(':');
                parts.push(literal(&key));
                parts.push(format!("coalesce(to_json({qual}.{})::text, 'null')", ident(c)));
            }
            parts.push(literal(if cols.is_empty() { "{}" } else { "}" }));
            format!("({})::json", parts.join(" || "))
        };
        let sql = match name {
            "json_agg" | "jsonb_agg" => format!("{name}({value})"),
            _ => value,
        };
        let parsed = crate::parser::parse(&format!("SELECT {sql}"))?;
        let Some(NodeEnum::SelectStmt(s)) = parsed.first().map(|p| &p.node) else { return Err(SqlError::internal("whole-row rewrite did not parse")) };
        let Some(NodeEnum::ResTarget(rt)) = s.target_list.first().and_then(|t| t.node.as_ref()) else {
            return Err(SqlError::internal("whole-row rewrite without target"));
        };
        let Some(NodeEnum::FuncCall(inner)) = node(&rt.val).cloned() else {
            // row_to_json / to_json: a cast expression.
            let Some(n) = node(&rt.val) else { return Err(SqlError::internal("whole-row rewrite without value")) };
            return Ok(Some(self.expr(n, scope)?));
        };
        if matches!(name, "json_agg" | "jsonb_agg") {
            // The aggregate as written (ORDER BY, FILTER, DISTINCT, location)
            // over the rewritten argument.
            let mut call = f.clone();
            call.args = inner.args.clone();
            let e = self.expr(&NodeEnum::FuncCall(Box::new(call)), scope)?;
            if name == "json_agg" {
                if let (Expr::AggRef(i, _), Some(aggs)) = (&e, scope.aggs.as_mut()) {
                    aggs[*i].delim = Some(ROWS.into());
                }
            }
            return Ok(Some(e));
        }
        Ok(Some(self.expr(&NodeEnum::FuncCall(inner), scope)?))
    }
}
