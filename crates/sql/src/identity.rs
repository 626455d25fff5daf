//! Identity columns: `GENERATED {ALWAYS | BY DEFAULT} AS IDENTITY [(sequence
//! options)]` in CREATE TABLE and ALTER TABLE ADD COLUMN, ALTER COLUMN ... ADD
//! GENERATED / SET GENERATED / DROP IDENTITY, and what INSERT and UPDATE may
//! write into them (OVERRIDING SYSTEM / USER VALUE, 428C9).
//!
//! Storage: `pg_attribute.attidentity` ('a' always, 'd' by default; stored by
//! [`crate::catalog`] after the six original columns), an implicit sequence
//! owned by the column (`<table>_<column>_seq`, as SERIAL's, [`crate::sequence`])
//! and a `nextval(...)` expression default in pg_attrdef that INSERT uses like
//! any default. PostgreSQL keeps no pg_attrdef row for an identity column; the
//! pg_attribute view reports `atthasdef` false for it, so psql shows
//! "generated always as identity" as PostgreSQL's does.

use crate::alter::{quote_ident, AlterCmd};
use crate::analyze::Analyzer;
use crate::catalog::{self, Column, Table};
use ferrogres_datum::errors::{Result, SqlError};
use ferrogres_datum::types::{Type, Value};
use ferrogres_engine::engine::Backend;
use ferrogres_engine::txn::snapshot::Snapshot;
use pg_query::protobuf as pb;
use pg_query::NodeEnum;

/// The identity kind of column `col` ("a" or "d"), if it is an identity column.
pub fn of(t: &Table, col: usize) -> Option<&str> {
    t.extras.identity.iter().find(|i| i.0 == col).map(|i| i.1.as_str())
}

fn kind_of(when: &str) -> &'static str {
    if when == "a" {
        "a"
    } else {
        "d"
    }
}

/// `<table>_<column>_seq`, or with a number appended when that is taken.
fn sequence_name(backend: &Backend, snap: &Snapshot, table: &str, col: &str, taken: &[String]) -> Result<String> {
    let base = format!("{table}_{col}_seq");
    let mut name = base.clone();
    let mut i = 0;
    while crate::index::find_relation(backend, snap, catalog::PUBLIC_NAMESPACE, &name)?.is_some() || taken.contains(&name) {
        i += 1;
        name = format!("{base}{i}");
    }
    Ok(name)
}

fn nextval_sql(seq: &str) -> String {
    format!("nextval('{}'::regclass)", quote_ident(seq).replace('\'', "''"))
}

/// The owned sequence of a SERIAL column added by ALTER TABLE: its default's SQL.
pub fn serial_sequence(backend: &mut Backend, snap: &Snapshot, t: &Table, col: usize, colname: &str, ty: Type) -> Result<String> {
    let name = sequence_name(backend, snap, &t.name, colname, &[])?;
    crate::sequence::create(backend, t.namespace, &name, &crate::sequence::serial_options(ty), (t.oid, col as i16 + 1))?;
    Ok(nextval_sql(&name))
}

/// Makes column `col` of `t` an identity column: its sequence and attidentity.
/// Returns its default's SQL (the caller stores it).
#[allow(clippy::too_many_arguments)]
pub fn create(backend: &mut Backend, snap: &Snapshot, sql: &str, t: &Table, col: usize, colname: &str, ty: Type, when: &str, options: &[pb::Node]) -> Result<String> {
    if !matches!(ty, Type::Int2 | Type::Int4 | Type::Int8) {
        return Err(SqlError::new(b"22023", "identity column type must be smallint, integer, or bigint".to_string()));
    }
    let opts = {
        let a = Analyzer { backend, snap, sql, params: Vec::new(), params_allowed: false, views: Default::default(), upper: Default::default(), planner: Default::default(), fold_error: None };
        crate::sequence::identity_options(&a, ty, options)?
    };
    let name = sequence_name(backend, snap, &t.name, colname, &[])?;
    crate::sequence::create(backend, t.namespace, &name, &opts, (t.oid, col as i16 + 1))?;
    set_attidentity(backend, snap, t, col, kind_of(when))?;
    Ok(nextval_sql(&name))
}

fn set_attidentity(backend: &mut Backend, snap: &Snapshot, t: &Table, col: usize, kind: &str) -> Result<()> {
    let st = catalog::attribute_rel();
    let attnum = Value::Int2(col as i16 + 1);
    let Some((tid, mut row)) = crate::rowio::scan_rows(backend, &st, snap)?.into_iter().find(|(_, r)| r[0] == Value::Oid(t.oid) && r[3] == attnum) else {
        return Err(SqlError::internal("no pg_attribute row"));
    };
    crate::catcache::heap_delete(backend, st.rel, tid, Some(&row))?;
    row.resize(st.types.len(), Value::Null);
    if row[6].is_null() {
        row[6] = Value::Bool(false);
    }
    row[7] = if kind.is_empty() { Value::Null } else { Value::Text(kind.into()) };
    if !kind.is_empty() {
        row[5] = Value::Bool(true);
    }
    crate::rowio::insert_row(backend, &st, &row)?;
    Ok(())
}

/// The column (0-based) owning sequence `seq`, if any.
pub fn owner_column(backend: &Backend, seq: u32) -> Result<Option<usize>> {
    Ok(crate::sequence::owner_of(backend, seq)?.map(|o| o.1 as usize - 1))
}

/// CREATE TABLE's identity column: NOT NULL, its sequence and default (made
/// with the table, as SERIAL's), and its attidentity.
pub(crate) fn create_table_column(
    a: &Analyzer,
    table: &str,
    index: usize,
    col: &mut Column,
    c: &pb::Constraint,
    extras: &mut crate::constraints::CreateExtras,
) -> Result<()> {
    if !matches!(col.ty, Type::Int2 | Type::Int4 | Type::Int8) {
        return Err(SqlError::new(b"22023", "identity column type must be smallint, integer, or bigint"));
    }
    if extras.identity.iter().any(|i| i.0 == index) {
        return Err(SqlError::new(b"42601", format!("multiple identity specifications for column \"{}\" of table \"{table}\"", col.name)));
    }
    col.not_null = true;
    let taken: Vec<String> = extras.sequences.iter().map(|s| s.1.clone()).collect();
    let name = sequence_name(a.backend, a.snap, table, &col.name, &taken)?;
    extras.defaults.push((index, nextval_sql(&name)));
    extras.sequences.push((index, name, crate::sequence::identity_options(a, col.ty, &c.options)?));
    extras.identity.push((index, kind_of(&c.generated_when).to_string()));
    Ok(())
}

/// After CREATE TABLE made its columns: their attidentity.
pub(crate) fn store_created(backend: &mut Backend, t: &Table, identity: &[(usize, String)]) -> Result<()> {
    for (col, kind) in identity {
        backend.txn.command_counter_increment()?;
        let snap = crate::catcache::ddl_snapshot(backend)?;
        set_attidentity(backend, &snap, t, *col, kind)?;
    }
    Ok(())
}

/// INSERT's value for identity column `ci` of `table`: `Ok(false)` keeps the
/// given value, `Ok(true)` ignores it (OVERRIDING USER VALUE); 428C9 for a
/// GENERATED ALWAYS column without OVERRIDING SYSTEM VALUE.
pub(crate) fn check_insert(table: &Table, ci: usize, overriding: i32) -> Result<bool> {
    let Some(kind) = of(table, ci) else { return Ok(false) };
    if overriding == pb::OverridingKind::OverridingUserValue as i32 {
        return Ok(true);
    }
    if kind == "a" && overriding != pb::OverridingKind::OverridingSystemValue as i32 {
        let name = &table.columns[ci].name;
        return Err(SqlError::new(b"428C9", format!("cannot insert a non-DEFAULT value into column \"{name}\""))
            .with_detail(format!("Column \"{name}\" is an identity column defined as GENERATED ALWAYS."))
            .with_hint("Use OVERRIDING SYSTEM VALUE to override."));
    }
    Ok(false)
}

/// UPDATE ... SET of identity column `ci` to something other than DEFAULT.
pub(crate) fn check_update(table: &Table, ci: usize) -> Result<()> {
    if of(table, ci) == Some("a") {
        let name = &table.columns[ci].name;
        return Err(SqlError::new(b"428C9", format!("column \"{name}\" can only be updated to DEFAULT"))
            .with_detail(format!("Column \"{name}\" is an identity column defined as GENERATED ALWAYS.")));
    }
    Ok(())
}

/// ALTER COLUMN ... ADD GENERATED ... AS IDENTITY | SET GENERATED ... | DROP IDENTITY [IF EXISTS].
pub(crate) fn alter(cmd: &AlterCmd, sub: &pb::AlterTableCmd, t: &Table, snap: &Snapshot, backend: &mut Backend, notice: &mut dyn FnMut(SqlError) -> Result<()>) -> Result<()> {
    use pb::AlterTableType as A;
    let Some(col) = t.columns.iter().position(|c| c.name == sub.name) else {
        return Err(SqlError::new(b"42703", format!("column \"{}\" of relation \"{}\" does not exist", sub.name, t.name)));
    };
    let c = &t.columns[col];
    let current = of(t, col);
    match A::try_from(sub.subtype).unwrap_or(A::Undefined) {
        A::AtAddIdentity => {
            let Some(NodeEnum::Constraint(con)) = sub.def.as_ref().and_then(|d| d.node.as_ref()) else {
                return Err(SqlError::internal("ADD GENERATED without a definition"));
            };
            if !c.not_null {
                return Err(SqlError::new(b"55000", format!("column \"{}\" of relation \"{}\" must be declared NOT NULL before identity can be added", c.name, t.name)));
            }
            if current.is_some() {
                return Err(SqlError::new(b"55000", format!("column \"{}\" of relation \"{}\" is already an identity column", c.name, t.name)));
            }
            if c.default.is_some() || t.extras.defaults.iter().any(|d| d.column == col) {
                return Err(SqlError::new(b"55000", format!("column \"{}\" of relation \"{}\" already has a default value", c.name, t.name)));
            }
            let sql = create(backend, snap, &cmd.sql, t, col, &c.name.clone(), c.ty, &con.generated_when, &con.options)?;
            crate::constraints::store_default(backend, t.oid, col as i16 + 1, &sql)
        }
        A::AtSetIdentity => {
            if current.is_none() {
                return Err(SqlError::new(b"55000", format!("column \"{}\" of relation \"{}\" is not an identity column", c.name, t.name)));
            }
            let mut kind = None;
            for o in sub.def.iter().filter_map(|d| match &d.node {
                Some(NodeEnum::List(l)) => Some(l.items.clone()),
                _ => None,
            }).flatten() {
                match &o.node {
                    Some(NodeEnum::DefElem(d)) if d.defname == "generated" => {
                        if let Some(NodeEnum::Integer(i)) = d.arg.as_ref().and_then(|a| a.node.as_ref()) {
                            kind = Some(if i.ival == b'a' as i32 { "a" } else { "d" });
                        }
                    }
                    _ => return Err(SqlError::not_supported("ALTER COLUMN ... SET sequence options")),
                }
            }
            match kind {
                Some(k) => set_attidentity(backend, snap, t, col, k),
                None => Ok(()),
            }
        }
        _ => {
            if current.is_none() {
                let msg = format!("column \"{}\" of relation \"{}\" is not an identity column", c.name, t.name);
                if sub.missing_ok {
                    return notice(SqlError::notice(b"00000", format!("{msg}, skipping")));
                }
                return Err(SqlError::new(b"55000", msg));
            }
            set_attidentity(backend, snap, t, col, "")?;
            // The default and the sequence go.
            let st = catalog::attrdef_rel();
            let doomed: Vec<_> = crate::rowio::scan_rows(backend, &st, snap)?
                .into_iter()
                .filter(|(_, r)| r[0] == Value::Oid(t.oid) && r[1] == Value::Int2(col as i16 + 1))
                .collect();
            for (tid, row) in doomed {
                crate::catcache::heap_delete(backend, st.rel, tid, Some(&row))?;
            }
            for (oid, name) in crate::sequence::owned_by(backend, snap, t.oid)? {
                if owner_column(backend, oid)? == Some(col) {
                    crate::sequence::drop_sequence(backend, snap, oid, &name)?;
                }
            }
            Ok(())
        }
    }
}
