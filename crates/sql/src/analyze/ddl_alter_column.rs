//! ALTER TABLE on columns (ADD / DROP / ALTER COLUMN, several subcommands,
//! IF EXISTS) and the RENAME statements (analysis). The table is resolved and
//! locked here (AccessExclusiveLock); each subcommand is analyzed when it runs
//! ([`crate::alter`]), against the table as the earlier subcommands left it.

use super::{node, Analyzer, Scope};
use crate::alter::{AlterCmd, RenameCmd, RenameKind};
use crate::catalog::Table;
use crate::errors::{Result, SqlError};
use crate::plan::{Expr, Statement};
use ferrogres_engine::lmgr::lock::LockMode;
use pg_query::protobuf as pb;
use pg_query::NodeEnum;

/// Whether [`Analyzer::alter_columns`] takes this ALTER TABLE: any subcommand
/// on columns, IF EXISTS, or several subcommands.
pub(super) fn handles(s: &pb::AlterTableStmt) -> bool {
    use pb::AlterTableType as A;
    if s.objtype != pb::ObjectType::ObjectTable as i32 {
        return false;
    }
    s.missing_ok
        || s.cmds.len() > 1
        || s.cmds.iter().any(|c| match &c.node {
            Some(NodeEnum::AlterTableCmd(cmd)) => matches!(
                A::try_from(cmd.subtype).unwrap_or(A::Undefined),
                A::AtAddColumn
                    | A::AtDropColumn
                    | A::AtColumnDefault
                    | A::AtSetNotNull
                    | A::AtDropNotNull
                    | A::AtAlterColumnType
                    | A::AtAddIdentity
                    | A::AtDropIdentity
                    | A::AtSetIdentity
            ),
            _ => false,
        })
}

fn no_position(mut e: SqlError) -> SqlError {
    e.position = None;
    e
}

impl Analyzer<'_> {
    pub(super) fn alter_columns(&mut self, s: &pb::AlterTableStmt) -> Result<Statement> {
        let rv = s.relation.as_ref().ok_or_else(|| SqlError::internal("ALTER TABLE without relation"))?;
        let table = match self.range_table_locked(rv, LockMode::AccessExclusive) {
            Ok(t) => Some(t),
            Err(e) if s.missing_ok && e.sqlstate() == "42P01" => None,
            Err(e) => return Err(no_position(e)),
        };
        let mut cmds = Vec::new();
        for c in &s.cmds {
            if let Some(NodeEnum::AlterTableCmd(cmd)) = &c.node {
                cmds.push((**cmd).clone());
            }
        }
        let cmd = AlterCmd { table_oid: table.as_ref().map(|t| t.oid), relname: rv.relname.clone(), cmds, sql: self.sql.to_string() };
        Ok(Statement::Ddl(Box::new(crate::constraints::DdlCmd::Alter(Box::new(cmd)))))
    }

    /// `ALTER TABLE | INDEX | SEQUENCE ... RENAME [COLUMN | CONSTRAINT] ... TO ...`.
    pub(super) fn rename(&mut self, s: &pb::RenameStmt) -> Result<Statement> {
        use pb::ObjectType as O;
        let rv = s.relation.as_ref().ok_or_else(|| SqlError::not_supported("this form of RENAME"))?;
        if !rv.catalogname.is_empty() || !rv.schemaname.is_empty() && rv.schemaname != "public" {
            return Err(SqlError::not_supported("RENAME outside schema public"));
        }
        let kind = match O::try_from(s.rename_type).unwrap_or(O::Undefined) {
            O::ObjectTable => RenameKind::Relation("r"),
            O::ObjectIndex => RenameKind::Relation("i"),
            O::ObjectSequence => RenameKind::Relation("S"),
            O::ObjectView => RenameKind::Relation("v"),
            O::ObjectColumn => RenameKind::Column(s.subname.clone()),
            O::ObjectTabconstraint => RenameKind::Constraint(s.subname.clone()),
            _ => return Err(SqlError::not_supported("RENAME of this object type")),
        };
        if matches!(kind, RenameKind::Column(_) | RenameKind::Constraint(_)) {
            // The table is locked now; a missing one is 42P01 (or skipped with IF EXISTS).
            match self.range_table_locked(rv, LockMode::AccessExclusive) {
                Ok(_) => {}
                Err(e) if s.missing_ok && e.sqlstate() == "42P01" => {}
                Err(e) => return Err(no_position(e)),
            }
        } else if let Ok(t) = self.range_table(rv) {
            crate::locking::lock_relation(self.backend, t.oid, LockMode::AccessExclusive, false, &t.name)?;
        }
        let cmd = RenameCmd { relname: rv.relname.clone(), kind, newname: s.newname.clone(), missing_ok: s.missing_ok };
        Ok(Statement::Ddl(Box::new(crate::constraints::DdlCmd::Rename(cmd))))
    }

    /// An expression over the row of `table` (ALTER COLUMN ... TYPE ... USING).
    pub(crate) fn row_expr(&mut self, n: &NodeEnum, table: &Table) -> Result<Expr> {
        let mut scope = Scope::new(Some((table, table.name.clone())));
        scope.no_srf = Some("transform expressions");
        let e = self.expr(n, &mut scope)?;
        Ok(self.resolve_unknown(e))
    }

    /// A DEFAULT expression (no columns), coerced to a column's type.
    pub(crate) fn default_expr_for(&mut self, n: &NodeEnum, ty: crate::types::Type, typmod: i32) -> Result<Expr> {
        let mut scope = Scope::new(None);
        let e = self.expr(n, &mut scope)?;
        self.coerce_typmod(e, ty, typmod, crate::types::CastContext::Assignment, super::location(n))
    }
}

/// The raw DEFAULT expression of a column definition, if any.
pub(crate) fn column_default(cd: &pb::ColumnDef) -> Option<&NodeEnum> {
    cd.constraints.iter().find_map(|c| match &c.node {
        Some(NodeEnum::Constraint(c)) if c.contype == pb::ConstrType::ConstrDefault as i32 => node(&c.raw_expr),
        _ => None,
    })
}

/// The integer type of a `serial`-family type name.
pub(crate) fn serial_type_of(tn: Option<&pb::TypeName>) -> Option<crate::types::Type> {
    super::ddl_create::serial_type(tn)
}

/// The node of an optional boxed node.
pub(crate) fn raw_node(n: &Option<Box<pb::Node>>) -> Option<&NodeEnum> {
    node(n)
}
