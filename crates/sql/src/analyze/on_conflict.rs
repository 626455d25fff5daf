//! Analysis of `INSERT ... ON CONFLICT` ([`crate::upsert`]): the insert itself
//! is analyzed as a plain INSERT; then the arbiter indexes are inferred and the
//! DO UPDATE clause is analyzed over (existing row, `excluded` row).

use super::dml_join::{table_rel, target_ns};
use super::from::Namespace;
use super::{node, Analyzer, Scope};
use ferrogres_datum::errors::{Result, SqlError};
use crate::plan::*;
use crate::upsert::{Action, Upsert, UpsertSource};
use pg_query::protobuf as pb;
use pg_query::NodeEnum;

impl Analyzer<'_> {
    pub(super) fn insert_on_conflict(&mut self, s: &pb::InsertStmt) -> Result<Statement> {
        let oc = s.on_conflict_clause.as_ref().expect("caller checked");
        let mut plain = s.clone();
        plain.on_conflict_clause = None;
        plain.returning_clause = None;
        let (table, source) = match self.insert(&plain)? {
            Statement::Insert { table, rows, .. } => (table, UpsertSource::Rows(rows)),
            Statement::InsertSelect(i) => {
                let i = *i;
                (i.table, UpsertSource::Select { query: i.query, row: i.row })
            }
            _ => return Err(SqlError::not_supported("this INSERT source with ON CONFLICT")),
        };
        self.require_dml_tracked(table.oid, &NodeEnum::InsertStmt(Box::new(s.clone())));
        let rv = s.relation.as_ref().ok_or_else(|| SqlError::internal("INSERT without relation"))?;
        let refname = rv.alias.as_ref().map_or(rv.relname.clone(), |a| a.aliasname.clone());
        let update = oc.action == pb::OnConflictAction::OnconflictUpdate as i32;
        // The arbiter indexes.
        let uniques = || table.indexes.iter().enumerate().filter(|(_, ix)| ix.unique).map(|(i, _)| i).collect::<Vec<_>>();
        let arbiters: Vec<usize> = match oc.infer.as_deref() {
            None if update => {
                return Err(self.err_at(
                    SqlError::new(b"42601", "ON CONFLICT DO UPDATE requires inference specification or constraint name")
                        .with_hint("For example, ON CONFLICT (column_name)."),
                    oc.location,
                ))
            }
            None => uniques(),
            Some(inf) if !inf.conname.is_empty() => {
                match table.indexes.iter().position(|ix| ix.constraint.is_some() && ix.name == inf.conname) {
                    Some(i) => vec![i],
                    None => {
                        return Err(SqlError::new(
                            b"42704",
                            format!("constraint \"{}\" for table \"{}\" does not exist", inf.conname, table.name),
                        ))
                    }
                }
            }
            Some(inf) => {
                let mut cols: Vec<usize> = Vec::new();
                for e in &inf.index_elems {
                    let Some(NodeEnum::IndexElem(ie)) = &e.node else { continue };
                    if ie.name.is_empty() || ie.expr.is_some() {
                        return Err(self.err_at(SqlError::not_supported("expressions in ON CONFLICT"), inf.location));
                    }
                    // IndexElem has no location; PostgreSQL reports the clause's.
                    let Some(ci) = table.columns.iter().position(|c| c.name == ie.name) else {
                        return Err(self.err_at(SqlError::new(b"42703", format!("column \"{}\" does not exist", ie.name)), inf.location));
                    };
                    if !cols.contains(&ci) {
                        cols.push(ci);
                    }
                }
                if let Some(w) = node(&inf.where_clause) {
                    // Only non-partial indexes exist: any of them satisfies the
                    // predicate; it is analyzed for its errors.
                    let mut scope = Scope::new(Some((&table, refname.clone())));
                    self.bool_expr(w, &mut scope, "WHERE")?;
                }
                let found: Vec<usize> = table
                    .indexes
                    .iter()
                    .enumerate()
                    .filter(|(_, ix)| {
                        let keys = &ix.columns[..ix.nkey.min(ix.columns.len())];
                        ix.unique && keys.len() == cols.len() && keys.iter().all(|k| cols.contains(k))
                    })
                    .map(|(i, _)| i)
                    .collect();
                if found.is_empty() {
                    return Err(SqlError::new(b"42P10", "there is no unique or exclusion constraint matching the ON CONFLICT specification"));
                }
                found
            }
        };
        // The arbiter's columns are read (PostgreSQL marks an inference
        // clause's columns, and a named constraint's, for SELECT).
        if oc.infer.is_some() {
            for &ix in &arbiters {
                let keys = &table.indexes[ix].columns;
                for &k in &keys[..table.indexes[ix].nkey.min(keys.len())] {
                    self.require_column(table.oid, crate::acl::SELECT, k as i16 + 1);
                }
            }
        }
        let n = table.columns.len();
        let action = if update {
            let (ename, mut ecols) = table_rel(&table, "excluded", n);
            // `excluded` is reachable by qualified names only... and by
            // unqualified ones too, which then are ambiguous, as in PostgreSQL.
            let rest = Namespace { rels: vec![(ename, ecols.clone())], cols: std::mem::take(&mut ecols), ctes: vec![], sys: vec![] };
            let ns = reads_columns(target_ns(&table, &refname, rest));
            let mut scope = Self::ns_scope(ns);
            let sets = self.set_list(&oc.target_list, &table, &mut scope)?;
            let filter = match node(&oc.where_clause) {
                Some(w) => Some(self.bool_expr(w, &mut scope, "WHERE")?),
                None => None,
            };
            Action::Update { sets, filter }
        } else {
            Action::Nothing
        };
        // RETURNING may name the system columns of the version written.
        let ret_table = if super::names_system_column(self.sql) { crate::catalog::with_system_columns(table.clone()) } else { table.clone() };
        let ret_ns = reads_columns(target_ns(&ret_table, &refname, Namespace::default()));
        let returning = self.returning_over(s.returning_clause.as_ref(), &ret_ns)?;
        Ok(Statement::Upsert(Box::new(Upsert { table, source, arbiters, action, returning })))
    }
}

/// `ns` with each reference to the target's columns, or to `excluded`'s,
/// recorded as a read of the target's column (PostgreSQL 15 checks SELECT on
/// the column for both).
fn reads_columns(mut ns: Namespace) -> Namespace {
    for c in ns.cols.iter_mut().chain(ns.rels.iter_mut().flat_map(|r| r.1.iter_mut())) {
        c.perm = c.origin;
    }
    ns
}
