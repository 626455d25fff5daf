//! CREATE TABLE ... AS and SELECT ... INTO (PostgreSQL's CreateTableAsStmt,
//! `createas.c`): the new table's columns come from the query's output (names
//! from the select list, the first ones replaced by an explicit column list;
//! an untyped literal's column is text, as PostgreSQL resolves it), and the
//! statement runs as [`crate::plan::CreateTableAs`]: the table is created, then
//! the query's rows stream into it through the INSERT ... SELECT path
//! ([`crate::insert_select`]), one at a time.
//!
//! Errors as PostgreSQL 15's: 42601 `too many column names were specified`,
//! 42701 for a name given twice, 42P16 for a pseudo-type column (void), 42P07
//! for an existing relation (a NOTICE and no table with IF NOT EXISTS).
//! Not done: UNLOGGED (0A000 as CREATE UNLOGGED TABLE), CREATE MATERIALIZED
//! VIEW (0A000: a relation kind with its own REFRESH and rewrite rule).

use super::Analyzer;
use crate::catalog::Column;
use crate::plan::{CreateTableAs, CtasForm, Query, Statement};
use ferrogres_datum::errors::{Result, SqlError};
use ferrogres_datum::types::Type;
use pg_query::protobuf as pb;
use pg_query::NodeEnum;

impl Analyzer<'_> {
    /// `CREATE [TEMP] TABLE [IF NOT EXISTS] name [(cols)] [WITH (...)] [ON
    /// COMMIT ...] AS query [WITH [NO] DATA]`. AS EXECUTE is the session's
    /// (it needs the prepared statement): see [`Analyzer::create_as_target`].
    pub(super) fn create_table_as(&mut self, s: &pb::CreateTableAsStmt) -> Result<Statement> {
        if s.objtype == pb::ObjectType::ObjectMatview as i32 {
            return Err(SqlError::not_supported("CREATE MATERIALIZED VIEW"));
        }
        let into = s.into.as_deref().ok_or_else(|| SqlError::internal("CREATE TABLE AS without a target"))?;
        let query = match s.query.as_ref().and_then(|q| q.node.as_ref()) {
            Some(NodeEnum::SelectStmt(sel)) => {
                let mut q = self.select(sel)?;
                crate::optimizer::projection::project_statement(&mut q);
                q
            }
            Some(NodeEnum::ExecuteStmt(_)) => return Err(SqlError::internal("CREATE TABLE AS EXECUTE is run by the session")),
            _ => return Err(SqlError::not_supported("this CREATE TABLE AS query")),
        };
        self.create_as_target(into, query, s.if_not_exists, if s.is_select_into { CtasForm::SelectInto } else { CtasForm::Query })
    }

    /// `SELECT ... INTO [TEMP] t FROM ...`: the INTO clause sits on the
    /// leftmost SELECT of a set operation (PostgreSQL's
    /// transformOptionalSelectInto); the statement is CREATE TABLE t AS the
    /// SELECT without it.
    pub(super) fn select_into(&mut self, s: &pb::SelectStmt) -> Result<Option<Statement>> {
        if select_into_clause(s).is_none() {
            return Ok(None);
        }
        let mut sel = s.clone();
        let into = take_into(&mut sel).ok_or_else(|| SqlError::internal("SELECT INTO without its clause"))?;
        let mut query = self.select(&sel)?;
        crate::optimizer::projection::project_statement(&mut query);
        self.create_as_target(&into, query, false, CtasForm::SelectInto).map(Some)
    }

    /// The table a CREATE TABLE AS makes for `query` (analyzed and projected
    /// already: also the prepared statement of AS EXECUTE).
    pub(crate) fn create_as_target(&mut self, into: &pb::IntoClause, mut query: Query, if_not_exists: bool, form: CtasForm) -> Result<Statement> {
        let rv = into.rel.as_ref().ok_or_else(|| SqlError::internal("INTO without a relation"))?;
        let temp = crate::namespace::temp_tables::check_create(rv, into.on_commit)?;
        if !into.table_space_name.is_empty() {
            return Err(SqlError::not_supported("table storage options and tablespaces"));
        }
        if !into.access_method.is_empty() && into.access_method != "heap" {
            return Err(SqlError::new(b"42704", format!("access method \"{}\" does not exist", into.access_method)));
        }
        crate::reloptions::table_options(&into.options)?;
        let schema = (!rv.schemaname.is_empty()).then_some(rv.schemaname.as_str());
        // Without a position, unlike CREATE TABLE's (PostgreSQL's CTAS
        // resolves its target outside the parse state).
        let namespace = crate::namespace::creation_namespace(self.backend, self.snap, schema, temp, &rv.relname)?;
        crate::acl::check_create_in(self.backend, self.snap, namespace).map_err(|e| self.err_at(e, rv.location))?;
        let names: Vec<&str> = into
            .col_names
            .iter()
            .filter_map(|n| match n.node.as_ref() {
                Some(NodeEnum::String(s)) => Some(s.sval.as_str()),
                _ => None,
            })
            .collect();
        if names.len() > query.targets.len() {
            return Err(SqlError::new(b"42601", "too many column names were specified"));
        }
        let mut columns: Vec<Column> = Vec::with_capacity(query.targets.len());
        for (i, t) in query.targets.iter_mut().enumerate() {
            let name = names.get(i).copied().unwrap_or(t.name.as_str()).to_string();
            if columns.iter().any(|c| c.name == name) {
                return Err(SqlError::new(b"42701", format!("column \"{name}\" specified more than once")));
            }
            let ty = match t.expr.ty() {
                // An untyped literal or NULL: text, as PostgreSQL resolves
                // unknown output columns (its value is already a text datum).
                Type::Unknown => {
                    t.expr = crate::plan::Expr::Cast { arg: Box::new(t.expr.clone()), from: Type::Unknown, to: Type::Text, typmod: -1, explicit: false };
                    Type::Text
                }
                Type::Void => return Err(SqlError::new(b"42P16", format!("column \"{name}\" has pseudo-type void"))),
                ty => ty,
            };
            let typmod = if ty.typmod_matters() { t.typmod } else { -1 };
            columns.push(Column { name, ty, typmod, not_null: false, default: None });
        }
        if columns.len() > 1600 {
            return Err(SqlError::new(b"54011", "tables can have at most 1600 columns"));
        }
        for c in &columns {
            crate::rowio::check_not_system_column(&c.name)?;
        }
        Ok(Statement::CreateTableAs(Box::new(CreateTableAs {
            namespace,
            name: rv.relname.clone(),
            columns,
            if_not_exists,
            with_data: !into.skip_data,
            form,
            query: Box::new(Statement::Query(query)),
            args: Vec::new(),
        })))
    }
}

/// The INTO clause of a SELECT (on its leftmost simple SELECT), if any.
pub(super) fn select_into_clause(s: &pb::SelectStmt) -> Option<&pb::IntoClause> {
    let mut s = s;
    while s.op != pb::SetOperation::SetopNone as i32 {
        s = s.larg.as_deref()?;
    }
    s.into_clause.as_deref()
}

fn take_into(s: &mut pb::SelectStmt) -> Option<pb::IntoClause> {
    let mut s = s;
    while s.op != pb::SetOperation::SetopNone as i32 {
        s = s.larg.as_deref_mut()?;
    }
    s.into_clause.take().map(|b| *b)
}
