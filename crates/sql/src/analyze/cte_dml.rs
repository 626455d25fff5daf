//! Analysis of data-modifying statements in WITH ([`crate::cte_dml`]).

use super::from::Cte;
use super::{node, str_of, Analyzer};
use crate::cte_dml::{WithDml, ACTIVE, ALLOWED, NO_RETURNING, PENDING};
use ferrogres_datum::errors::{Result, SqlError};
use crate::plan::Statement;
use pg_query::protobuf as pb;
use pg_query::NodeEnum;
use std::rc::Rc;

fn has_dml(w: &pb::WithClause) -> bool {
    w.ctes.iter().any(|c| match &c.node {
        Some(NodeEnum::CommonTableExpr(c)) => {
            matches!(node(&c.ctequery), Some(NodeEnum::InsertStmt(_) | NodeEnum::UpdateStmt(_) | NodeEnum::DeleteStmt(_)))
        }
        _ => false,
    })
}

/// Ends the analysis of a top-level statement with data-modifying CTEs.
struct Reset;

impl Drop for Reset {
    fn drop(&mut self) {
        ACTIVE.with(|a| a.set(false));
        ALLOWED.with(|a| a.set(0));
        PENDING.with(|p| p.borrow_mut().clear());
        NO_RETURNING.with(|p| p.borrow_mut().clear());
    }
}

impl<'a> Analyzer<'a> {
    /// The hook of [`Analyzer::statement`]: a top-level statement whose WITH
    /// has INSERT / UPDATE / DELETE becomes [`Statement::WithDml`].
    pub(crate) fn with_dml_hook(&mut self, stmt: &NodeEnum) -> Result<Option<Statement>> {
        if ACTIVE.with(|a| a.get()) {
            return Ok(None);
        }
        let w = match stmt {
            NodeEnum::SelectStmt(s) => s.with_clause.as_ref(),
            NodeEnum::InsertStmt(s) => s.with_clause.as_ref(),
            NodeEnum::UpdateStmt(s) => s.with_clause.as_ref(),
            NodeEnum::DeleteStmt(s) => s.with_clause.as_ref(),
            _ => None,
        };
        let Some(w) = w else { return Ok(None) };
        if !has_dml(w) {
            return Ok(None);
        }
        let _reset = Reset;
        ACTIVE.with(|a| a.set(true));
        let main = match stmt {
            NodeEnum::SelectStmt(_) => {
                ALLOWED.with(|a| a.set(w.location + 1));
                self.statement(stmt)?
            }
            // INSERT ... SELECT: the WITH moves into the SELECT (the same meaning).
            NodeEnum::InsertStmt(s) => {
                let mut ins = (**s).clone();
                let with = ins.with_clause.take();
                match ins.select_stmt.as_deref_mut().and_then(|n| n.node.as_mut()) {
                    Some(NodeEnum::SelectStmt(sel)) if sel.with_clause.is_none() && sel.values_lists.is_empty() => sel.with_clause = with,
                    _ => return Err(SqlError::not_supported("data-modifying statements in the WITH of INSERT ... VALUES")),
                }
                let new = NodeEnum::InsertStmt(Box::new(ins));
                if let NodeEnum::InsertStmt(i) = &new {
                    if let Some(NodeEnum::SelectStmt(sel)) = node(&i.select_stmt) {
                        ALLOWED.with(|a| a.set(sel.with_clause.as_ref().map_or(0, |w| w.location + 1)));
                    }
                }
                self.statement(&new)?
            }
            _ => return Err(SqlError::not_supported("data-modifying statements in the WITH of UPDATE or DELETE")),
        };
        let ctes = PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
        Ok(Some(Statement::WithDml(Box::new(WithDml { ctes, main }))))
    }

    /// A CTE of `w` that is not a SELECT: an INSERT / UPDATE / DELETE of the
    /// top-level WITH, analyzed and read as a working table.
    pub(super) fn dml_cte(&mut self, w: &pb::WithClause, c: &pb::CommonTableExpr) -> Result<Rc<Cte>> {
        let Some(body) = node(&c.ctequery) else { return Err(SqlError::internal("WITH query without a body")) };
        if !matches!(body, NodeEnum::InsertStmt(_) | NodeEnum::UpdateStmt(_) | NodeEnum::DeleteStmt(_)) {
            return Err(self.err_at(SqlError::not_supported("this statement in WITH"), c.location));
        }
        if ALLOWED.with(|a| a.get()) != w.location + 1 {
            return Err(self.err_at(SqlError::new(b"0A000", "WITH clause containing a data-modifying statement must be at the top level"), c.location));
        }
        let st = self.statement(body)?;
        let targets = st.targets().unwrap_or_default();
        let aliases: Vec<String> = c.aliascolnames.iter().filter_map(str_of).map(str::to_string).collect();
        if aliases.len() > targets.len() && !targets.is_empty() {
            return Err(self.err_at(
                SqlError::new(b"42P10", format!("WITH query \"{}\" has {} columns available but {} columns specified", c.ctename, targets.len(), aliases.len())),
                c.location,
            ));
        }
        let cols = targets.iter().enumerate().map(|(i, t)| (aliases.get(i).cloned().unwrap_or_else(|| t.name.clone()), t.expr.ty(), t.typmod)).collect();
        let id = crate::setop::next_id();
        if targets.is_empty() {
            NO_RETURNING.with(|n| n.borrow_mut().push((id, c.ctename.clone())));
        }
        PENDING.with(|p| p.borrow_mut().push((id, st)));
        Ok(Rc::new(Cte { name: c.ctename.clone(), cols, query: None, work: Some(id) }))
    }
}
