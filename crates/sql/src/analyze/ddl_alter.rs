//! ALTER TABLE ... ADD [CONSTRAINT name] CHECK (...) | FOREIGN KEY (...)
//! REFERENCES ... (analysis; executed by [`crate::constraints`]). The other
//! ALTER TABLE forms go to `index_ddl` (PRIMARY KEY / UNIQUE) or are 0A000.

use super::{node, Analyzer};
use crate::constraints::{columns_of, deparse_expr, CheckSpec, DdlCmd};
use ferrogres_datum::errors::{Result, SqlError};
use crate::plan::Statement;
use pg_query::protobuf as pb;
use pg_query::NodeEnum;

/// The constraint of a one-command `ALTER TABLE t ADD CHECK / FOREIGN KEY`.
pub(super) fn added_constraint(s: &pb::AlterTableStmt) -> Option<&pb::Constraint> {
    if s.objtype != pb::ObjectType::ObjectTable as i32 || s.missing_ok || s.cmds.len() != 1 {
        return None;
    }
    let Some(NodeEnum::AlterTableCmd(cmd)) = &s.cmds[0].node else { return None };
    if cmd.subtype != pb::AlterTableType::AtAddConstraint as i32 {
        return None;
    }
    match node(&cmd.def) {
        Some(NodeEnum::Constraint(c))
            if matches!(pb::ConstrType::try_from(c.contype), Ok(pb::ConstrType::ConstrCheck | pb::ConstrType::ConstrForeign)) =>
        {
            Some(c)
        }
        _ => None,
    }
}

impl Analyzer<'_> {
    pub(super) fn alter_add_constraint(&mut self, s: &pb::AlterTableStmt, c: &pb::Constraint) -> Result<Statement> {
        let rv = s.relation.as_ref().ok_or_else(|| SqlError::internal("ALTER TABLE without relation"))?;
        // PostgreSQL reports a missing table of ALTER TABLE without a position.
        // FOREIGN KEY: ShareRowExclusiveLock (on the referenced table too,
        // `foreign_key::analyze`); CHECK: AccessExclusiveLock.
        let table = self.range_table_locked(rv, super::ddl_alter_column::alter_lock_mode(s)).map_err(|mut e| {
            e.position = None;
            e
        })?;
        if c.contype == pb::ConstrType::ConstrCheck as i32 {
            if c.skip_validation {
                return Err(SqlError::not_supported("NOT VALID check constraints"));
            }
            if c.is_no_inherit {
                return Err(SqlError::not_supported("NO INHERIT"));
            }
            let raw = node(&c.raw_expr).ok_or_else(|| SqlError::internal("CHECK without expression"))?;
            let e = self.check_expr(raw, &table)?;
            let mut cols = Vec::new();
            columns_of(&e, &mut cols);
            let name = (!c.conname.is_empty()).then(|| c.conname.clone());
            if let Some(n) = &name {
                if table.extras.checks.iter().any(|x| &x.name == n) || table.extras.fkeys.iter().any(|x| &x.name == n) {
                    return Err(SqlError::new(b"42710", format!("constraint \"{n}\" for relation \"{}\" already exists", table.name)));
                }
            }
            let spec = CheckSpec { name, sql: deparse_expr(raw)?, columns: cols };
            return Ok(Statement::Ddl(Box::new(DdlCmd::AddConstraint { table, check: Some(spec), fkey: None })));
        }
        let spec = crate::foreign_key::analyze(self, &table.name, &table.columns, c, None)?;
        if let Some(n) = &spec.name {
            if table.extras.checks.iter().any(|x| &x.name == n) || table.extras.fkeys.iter().any(|x| &x.name == n) {
                return Err(SqlError::new(b"42710", format!("constraint \"{n}\" for relation \"{}\" already exists", table.name)));
            }
        }
        Ok(Statement::Ddl(Box::new(DdlCmd::AddConstraint { table, check: None, fkey: Some(spec) })))
    }
}
