//! ALTER TABLE on columns (ADD / DROP / ALTER COLUMN, several subcommands,
//! IF EXISTS, VALIDATE CONSTRAINT) and the RENAME statements (analysis). The
//! table is resolved and locked here, in the strongest of its subcommands'
//! modes ([`alter_lock_mode`], PostgreSQL's AlterTableGetLockLevel); each
//! subcommand is analyzed when it runs ([`crate::alter`]), against the table
//! as the earlier subcommands left it.

use super::{node, Analyzer, Scope};
use crate::alter::{AlterCmd, RenameCmd, RenameKind};
use crate::catalog::Table;
use ferrogres_datum::errors::{Result, SqlError};
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
                    | A::AtValidateConstraint
            ),
            _ => false,
        })
}

/// The lock an ALTER TABLE subcommand of this module needs, as PostgreSQL
/// decides it (the documentation's table for ALTER TABLE):
///
/// | subcommand | mode |
/// |---|---|
/// | VALIDATE CONSTRAINT | ShareUpdateExclusiveLock (reads and writes go on) |
/// | ADD FOREIGN KEY [NOT VALID] | ShareRowExclusiveLock (reads go on; the referenced table too) |
/// | ADD CHECK / PRIMARY KEY / UNIQUE, ADD / DROP COLUMN, ALTER COLUMN SET / DROP DEFAULT, SET / DROP NOT NULL, TYPE, identity forms | AccessExclusiveLock |
///
/// (SET STATISTICS, SET (storage parameters), CLUSTER ON, SET WITHOUT
/// CLUSTER and ATTACH PARTITION would take ShareUpdateExclusiveLock; they are
/// 0A000 here.)
pub(crate) fn subcommand_lock_mode(cmd: &pb::AlterTableCmd) -> LockMode {
    use pb::AlterTableType as A;
    match A::try_from(cmd.subtype).unwrap_or(A::Undefined) {
        A::AtValidateConstraint => LockMode::ShareUpdateExclusive,
        A::AtAddConstraint => match node(&cmd.def) {
            Some(NodeEnum::Constraint(c)) if c.contype == pb::ConstrType::ConstrForeign as i32 => LockMode::ShareRowExclusive,
            _ => LockMode::AccessExclusive,
        },
        _ => LockMode::AccessExclusive,
    }
}

/// The mode an ALTER TABLE takes on its table: the strongest of its
/// subcommands' ([`subcommand_lock_mode`]).
pub(crate) fn alter_lock_mode(s: &pb::AlterTableStmt) -> LockMode {
    s.cmds
        .iter()
        .filter_map(|c| match &c.node {
            Some(NodeEnum::AlterTableCmd(cmd)) => Some(subcommand_lock_mode(cmd)),
            _ => None,
        })
        .max_by_key(|m| *m as i32)
        .unwrap_or(LockMode::AccessExclusive)
}

fn no_position(mut e: SqlError) -> SqlError {
    e.position = None;
    e
}

impl Analyzer<'_> {
    pub(super) fn alter_columns(&mut self, s: &pb::AlterTableStmt) -> Result<Statement> {
        let rv = s.relation.as_ref().ok_or_else(|| SqlError::internal("ALTER TABLE without relation"))?;
        let table = match self.range_table_locked(rv, alter_lock_mode(s)) {
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
        } else if let Some((oid, relkind)) = crate::index::find_relation(self.backend, self.snap, crate::catalog::PUBLIC_NAMESPACE, &rv.relname)? {
            // ALTER INDEX renames an index under ShareUpdateExclusiveLock;
            // every other rename of a relation (ALTER TABLE naming an index
            // too) takes AccessExclusiveLock, as in PostgreSQL.
            let mode = if matches!(kind, RenameKind::Relation("i")) && relkind == "i" { LockMode::ShareUpdateExclusive } else { LockMode::AccessExclusive };
            crate::locking::lock_relation(self.backend, oid, mode, false, &rv.relname)?;
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
    pub(crate) fn default_expr_for(&mut self, n: &NodeEnum, ty: ferrogres_datum::types::Type, typmod: i32) -> Result<Expr> {
        let mut scope = Scope::new(None);
        let e = self.expr(n, &mut scope)?;
        self.coerce_typmod(e, ty, typmod, ferrogres_datum::types::CastContext::Assignment, super::location(n))
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
pub(crate) fn serial_type_of(tn: Option<&pb::TypeName>) -> Option<ferrogres_datum::types::Type> {
    super::ddl_create::serial_type(tn)
}

/// The node of an optional boxed node.
pub(crate) fn raw_node(n: &Option<Box<pb::Node>>) -> Option<&NodeEnum> {
    node(n)
}
