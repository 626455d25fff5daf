//! Analysis shared by the DML forms that see more than their target table:
//! INSERT ... ON CONFLICT DO UPDATE (target and `excluded`), UPDATE ... FROM,
//! DELETE ... USING and MERGE (target and the joined relations).
//!
//! Their expressions are analyzed over one concatenated row: the target
//! table's columns first (`0..n`), then the other relations' columns, through
//! a [`Namespace`] like a FROM list's.

use super::from::{Namespace, NsCol};
use super::{location, node, Analyzer, Scope};
use crate::catalog::Table;
use ferrogres_datum::errors::{Result, SqlError};
use crate::plan::*;
use ferrogres_datum::types::{self, CastContext, Type};
use pg_query::protobuf as pb;
use pg_query::NodeEnum;
use std::rc::Rc;

/// The namespace entry of `table` under `refname` whose columns start at `at`
/// in the row.
pub(crate) fn table_rel(table: &Table, refname: &str, at: usize) -> (String, Vec<NsCol>) {
    let cols = table.columns[..table.user_columns()]
        .iter()
        .enumerate()
        // A dropped column keeps its place in the row but has no name (it is
        // neither in `*` nor referable), as in FROM.
        .filter(|(_, c)| !c.is_dropped())
        .map(|(i, c)| NsCol {
            name: c.name.clone(),
            expr: Expr::Column(at + i, c.ty),
            typmod: c.typmod,
            origin: (table.oid != 0).then_some((table.oid, i as i16 + 1)),
            perm: None,
            rel: refname.to_string(),
        })
        .collect();
    (refname.to_string(), cols)
}

/// The system columns `table`'s rows carry, under `refname`, at their places.
fn table_sys(table: &Table, refname: &str) -> Vec<NsCol> {
    let n = table.user_columns();
    (n..table.columns.len())
        .map(|i| NsCol {
            name: table.columns[i].name.clone(),
            expr: Expr::Column(i, table.columns[i].ty),
            typmod: -1,
            origin: None,
            perm: None,
            rel: refname.to_string(),
        })
        .collect()
}

/// A namespace of the target (at 0) followed by `rest` (already placed).
pub(crate) fn target_ns(table: &Table, refname: &str, rest: Namespace) -> Namespace {
    let (name, cols) = table_rel(table, refname, 0);
    let mut ns = Namespace { rels: vec![(name, cols.clone())], cols, ctes: rest.ctes.clone(), sys: table_sys(table, refname) };
    ns.rels.extend(rest.rels);
    ns.cols.extend(rest.cols);
    ns.sys.extend(rest.sys);
    ns
}

/// Moves every column of `ns` `by` places to the right.
pub(crate) fn shift_ns(ns: &mut Namespace, by: usize) {
    let sh = |c: &mut NsCol| crate::subquery::shift_columns(&mut c.expr, by as isize);
    ns.cols.iter_mut().for_each(sh);
    ns.rels.iter_mut().for_each(|(_, cols)| cols.iter_mut().for_each(sh));
    ns.sys.iter_mut().for_each(sh);
}

impl Analyzer<'_> {
    /// A scope over the row `ns` describes.
    pub(super) fn ns_scope<'t>(ns: Namespace) -> Scope<'t> {
        let mut scope = Scope::new(None);
        scope.ns = Some(Rc::new(ns));
        scope
    }

    /// The assignments of a SET list (UPDATE ... FROM, ON CONFLICT DO UPDATE,
    /// MERGE's UPDATE) to columns of `table`, analyzed in `scope` and converted
    /// to the columns' types as an assignment does.
    pub(super) fn set_list(&mut self, list: &[pb::Node], table: &Table, scope: &mut Scope) -> Result<Vec<(usize, Expr)>> {
        let mut sets: Vec<(usize, Expr)> = Vec::new();
        for t in list {
            let Some(NodeEnum::ResTarget(rt)) = &t.node else { continue };
            if !rt.indirection.is_empty() {
                return Err(self.err_at(SqlError::not_supported("subscripts or fields in UPDATE targets"), rt.location));
            }
            if crate::rowio::is_system_column(&rt.name) {
                return Err(self.err_at(SqlError::new(b"0A000", format!("cannot assign to system column \"{}\"", rt.name)), rt.location));
            }
            let Some(ci) = table.columns.iter().position(|c| c.name == rt.name) else {
                return Err(self.err_at(
                    SqlError::new(b"42703", format!("column \"{}\" of relation \"{}\" does not exist", rt.name, table.name)),
                    rt.location,
                ));
            };
            if sets.iter().any(|(i, _)| *i == ci) {
                return Err(self.err_at(SqlError::new(b"42601", format!("multiple assignments to same column \"{}\"", rt.name)), rt.location));
            }
            self.require_column(table.oid, crate::acl::UPDATE, ci as i16 + 1);
            let Some(val) = node(&rt.val) else { continue };
            if matches!(val, NodeEnum::MultiAssignRef(_)) {
                return Err(self.err_at(SqlError::not_supported("multiple-column assignment"), rt.location));
            }
            let e = if matches!(val, NodeEnum::SetToDefault(_)) {
                crate::constraints::default_expr(table, ci)
            } else {
                let e = self.expr(val, scope)?;
                self.assign_to(e, table, ci, location(val))?
            };
            sets.push((ci, e));
        }
        Ok(sets)
    }

    /// `e` converted to column `ci` of `table` for assignment (42804 if it cannot be).
    pub(super) fn assign_to(&mut self, e: Expr, table: &Table, ci: usize, loc: i32) -> Result<Expr> {
        let col = &table.columns[ci];
        Ok(match (e.ty(), &e) {
            (Type::Unknown | Type::Numeric, Expr::Const(..)) | (Type::Unknown, Expr::Param(..)) => {
                self.coerce_typmod(e, col.ty, col.typmod, CastContext::Assignment, loc)?
            }
            (t, _) if t == col.ty && !(t.typmod_matters() && col.typmod >= 0) => e,
            (t, _) => {
                if !types::cast_allowed(t, col.ty, CastContext::Assignment) {
                    return Err(self.err_at(
                        SqlError::new(
                            b"42804",
                            format!("column \"{}\" is of type {} but expression is of type {}", col.name, col.ty.name_with_typmod(col.typmod), t.sql_name()),
                        )
                        .with_hint("You will need to rewrite or cast the expression."),
                        loc,
                    ));
                }
                Expr::Cast { arg: Box::new(e), from: t, to: col.ty, typmod: col.typmod, explicit: false }
            }
        })
    }

    /// RETURNING over the row `ns` describes.
    pub(super) fn returning_over(&mut self, rc: Option<&pb::ReturningClause>, ns: &Namespace) -> Result<Vec<Target>> {
        let Some(rc) = rc else { return Ok(vec![]) };
        if !rc.options.is_empty() {
            return Err(SqlError::not_supported("RETURNING OLD/NEW"));
        }
        let mut scope = Self::ns_scope(ns.clone());
        self.targets(&rc.exprs, &mut scope)
    }
}

impl Analyzer<'_> {
    /// The FROM / USING items of a joined UPDATE or DELETE (or MERGE's source),
    /// placed after the target's `n` columns, and the namespace of the whole row.
    fn joined_items(&mut self, items: &[pb::Node], table: &Table, refname: &str) -> Result<(Source, Namespace)> {
        let (src, mut ns) = self.from_clause(items, ferrogres_engine::lmgr::lock::LockMode::AccessShare, &[], &[])?;
        if ns.rels.iter().any(|(n, _)| n == refname) {
            return Err(SqlError::new(b"42712", format!("table name \"{refname}\" specified more than once")));
        }
        shift_ns(&mut ns, table.columns.len());
        let mut ns = target_ns(table, refname, ns);
        // References to the target's columns are reads of them (column
        // privileges); the other items' columns record themselves.
        let k = ns.rels[0].1.len();
        for c in ns.rels[0].1.iter_mut().chain(ns.cols[..k].iter_mut()) {
            c.perm = c.origin;
        }
        Ok((src, ns))
    }

    /// `UPDATE t SET ... FROM ...` ([`crate::dml_join`]).
    pub(super) fn update_from(&mut self, s: &pb::UpdateStmt) -> Result<Statement> {
        if s.with_clause.is_some() {
            return Err(SqlError::not_supported("UPDATE with WITH"));
        }
        let rv = s.relation.as_ref().ok_or_else(|| SqlError::internal("UPDATE without relation"))?;
        let table = self.scanned_table_locked(rv, ferrogres_engine::lmgr::lock::LockMode::RowExclusive)?;
        self.require_dml_tracked(table.oid, &NodeEnum::UpdateStmt(Box::new(s.clone())));
        let refname = rv.alias.as_ref().map_or(rv.relname.clone(), |a| a.aliasname.clone());
        let (other, ns) = self.joined_items(&s.from_clause, &table, &refname)?;
        let mut scope = Self::ns_scope(ns.clone());
        let sets = self.set_list(&s.target_list, &table, &mut scope)?;
        let filter = match node(&s.where_clause) {
            Some(w) => Some(self.bool_expr(w, &mut Self::ns_scope(ns.clone()), "WHERE")?),
            None => None,
        };
        let returning = self.returning_over(s.returning_clause.as_ref(), &ns)?;
        let action = crate::dml_join::JoinedAction::Update(sets);
        Ok(Statement::JoinedDml(Box::new(crate::dml_join::JoinedDml { table, other, filter, action, returning })))
    }

    /// `DELETE FROM t USING ...` ([`crate::dml_join`]).
    pub(super) fn delete_using(&mut self, s: &pb::DeleteStmt) -> Result<Statement> {
        if s.with_clause.is_some() {
            return Err(SqlError::not_supported("DELETE with WITH"));
        }
        let rv = s.relation.as_ref().ok_or_else(|| SqlError::internal("DELETE without relation"))?;
        let table = self.scanned_table_locked(rv, ferrogres_engine::lmgr::lock::LockMode::RowExclusive)?;
        self.require_dml_tracked(table.oid, &NodeEnum::DeleteStmt(Box::new(s.clone())));
        let refname = rv.alias.as_ref().map_or(rv.relname.clone(), |a| a.aliasname.clone());
        let (other, ns) = self.joined_items(&s.using_clause, &table, &refname)?;
        let filter = match node(&s.where_clause) {
            Some(w) => Some(self.bool_expr(w, &mut Self::ns_scope(ns.clone()), "WHERE")?),
            None => None,
        };
        let returning = self.returning_over(s.returning_clause.as_ref(), &ns)?;
        let action = crate::dml_join::JoinedAction::Delete;
        Ok(Statement::JoinedDml(Box::new(crate::dml_join::JoinedDml { table, other, filter, action, returning })))
    }
}

impl Analyzer<'_> {
    /// `MERGE INTO t USING s ON ... WHEN ...` ([`crate::merge`]).
    pub(super) fn merge(&mut self, s: &pb::MergeStmt) -> Result<Statement> {
        use crate::merge::{Merge, MergeAction, WhenClause};
        if s.with_clause.is_some() {
            return Err(SqlError::not_supported("MERGE with WITH"));
        }
        if s.returning_clause.is_some() {
            return Err(SqlError::not_supported("MERGE ... RETURNING"));
        }
        let rv = s.relation.as_ref().ok_or_else(|| SqlError::internal("MERGE without relation"))?;
        let table = self.range_table_locked(rv, ferrogres_engine::lmgr::lock::LockMode::RowExclusive)?;
        self.require_dml(table.oid, &NodeEnum::MergeStmt(Box::new(s.clone())));
        let refname = rv.alias.as_ref().map_or(rv.relname.clone(), |a| a.aliasname.clone());
        let src_node = s.source_relation.as_deref().cloned().ok_or_else(|| SqlError::internal("MERGE without source"))?;
        let (source, ns) = self.joined_items(std::slice::from_ref(&src_node), &table, &refname)?;
        // The source's columns alone (NOT MATCHED clauses cannot see the target).
        let n = table.columns.len();
        let src_ns = Namespace {
            rels: ns.rels.iter().filter(|(name, _)| *name != refname).cloned().collect(),
            cols: ns.cols[n..].to_vec(),
            ctes: vec![],
            sys: ns.sys.iter().filter(|c| c.rel != refname).cloned().collect(),
        };
        let on = match node(&s.join_condition) {
            Some(c) => self.bool_expr(c, &mut Self::ns_scope(ns.clone()), "JOIN/ON")?,
            None => return Err(SqlError::internal("MERGE without ON")),
        };
        let (mut matched, mut not_matched) = (Vec::new(), Vec::new());
        for w in &s.merge_when_clauses {
            let Some(NodeEnum::MergeWhenClause(w)) = &w.node else { continue };
            let is_matched = w.match_kind == pb::MergeMatchKind::MergeWhenMatched as i32;
            if !is_matched && w.match_kind != pb::MergeMatchKind::MergeWhenNotMatchedByTarget as i32 {
                return Err(SqlError::not_supported("WHEN NOT MATCHED BY SOURCE"));
            }
            let here = if is_matched { ns.clone() } else { src_ns.clone() };
            let cond = match node(&w.condition) {
                Some(c) => Some(self.bool_expr(c, &mut Self::ns_scope(here.clone()), "WHEN")?),
                None => None,
            };
            let action = match pb::CmdType::try_from(w.command_type).unwrap_or(pb::CmdType::Undefined) {
                pb::CmdType::CmdUpdate => MergeAction::Update(self.set_list(&w.target_list, &table, &mut Self::ns_scope(here))?),
                pb::CmdType::CmdDelete => MergeAction::Delete,
                pb::CmdType::CmdNothing => MergeAction::Nothing,
                pb::CmdType::CmdInsert => MergeAction::Insert(self.merge_insert(w, &table, here)?),
                _ => return Err(SqlError::not_supported("this MERGE action")),
            };
            let clause = WhenClause { cond, action };
            if is_matched {
                matched.push(clause);
            } else {
                not_matched.push(clause);
            }
        }
        Ok(Statement::Merge(Box::new(Merge { table, source, on, matched, not_matched })))
    }

    /// The row a MERGE INSERT makes: one expression per column of `table`
    /// (defaults for the columns not listed), over the (NULL target ++ source) row.
    fn merge_insert(&mut self, w: &pb::MergeWhenClause, table: &Table, ns: Namespace) -> Result<Vec<Expr>> {
        let mut cols: Vec<usize> = Vec::new();
        for c in &w.target_list {
            let Some(NodeEnum::ResTarget(rt)) = &c.node else { continue };
            let Some(i) = table.columns.iter().position(|x| x.name == rt.name) else {
                return Err(self.err_at(
                    SqlError::new(b"42703", format!("column \"{}\" of relation \"{}\" does not exist", rt.name, table.name)),
                    rt.location,
                ));
            };
            if cols.contains(&i) {
                return Err(self.err_at(SqlError::new(b"42701", format!("column \"{}\" specified more than once", rt.name)), rt.location));
            }
            cols.push(i);
        }
        let explicit = !cols.is_empty();
        if !explicit {
            cols = (0..table.columns.len()).collect();
        }
        let mut row: Vec<Expr> = (0..table.columns.len()).map(|i| crate::constraints::default_expr(table, i)).collect();
        if w.r#override != 0 && w.r#override != pb::OverridingKind::OverridingNotSet as i32 {
            return Err(SqlError::not_supported("OVERRIDING in MERGE"));
        }
        if w.values.len() > cols.len() {
            let loc = w.values[cols.len()].node.as_ref().map_or(-1, location);
            return Err(self.err_at(SqlError::new(b"42601", "INSERT has more expressions than target columns"), loc));
        }
        if w.values.len() < cols.len() && explicit {
            let loc = w.target_list.get(w.values.len()).and_then(|n| n.node.as_ref()).map_or(-1, location);
            return Err(self.err_at(SqlError::new(b"42601", "INSERT has more target columns than expressions"), loc));
        }
        let mut scope = Self::ns_scope(ns);
        for (v, &ci) in w.values.iter().zip(&cols) {
            let Some(n) = v.node.as_ref() else { continue };
            if matches!(n, NodeEnum::SetToDefault(_)) {
                continue;
            }
            let e = self.expr(n, &mut scope)?;
            row[ci] = self.assign_to(e, table, ci, location(n))?;
        }
        Ok(row)
    }
}
