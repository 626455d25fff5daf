//! CREATE SCHEMA, DROP SCHEMA, ALTER SCHEMA ... RENAME TO: analysis and
//! execution, with PostgreSQL 15's messages.
//!
//! A schema is one pg_namespace row (oid, nspname, nspowner, nspacl); its
//! owner is the creating role or AUTHORIZATION's ([`crate::acl`]). DROP SCHEMA finds the relations of the
//! schema: without CASCADE they are reported as PostgreSQL reports dependent
//! objects (2BP01, one DETAIL line each, in OID order; a sequence owned by a
//! column goes with its table and is not listed); with CASCADE they are dropped
//! (tables with their indexes, constraints and owned sequences) and listed in a
//! NOTICE. RENAME deletes and re-inserts the row under the same OID.

use super::{delete_rows, namespace_rel, namespaces};
use crate::catalog;
use ferrogres_datum::errors::{Result, SqlError};
use crate::rowio::{insert_row, scan_rows};
use ferrogres_datum::types::Value;
use ferrogres_engine::engine::Backend;
use ferrogres_engine::txn::snapshot::Snapshot;
use pg_query::protobuf as pb;
use pg_query::NodeEnum;

#[derive(Clone, Debug)]
pub enum SchemaCmd {
    /// `owner`: AUTHORIZATION's role (default: the current user).
    Create { name: String, if_not_exists: bool, owner: Option<crate::roles::RoleRef> },
    Drop { names: Vec<String>, missing_ok: bool, cascade: bool },
    Rename { from: String, to: String },
}

fn check_name(name: &str) -> Result<()> {
    if name.starts_with("pg_") {
        return Err(SqlError::new(b"42939", format!("unacceptable schema name \"{name}\""))
            .with_detail("The prefix \"pg_\" is reserved for system schemas."));
    }
    Ok(())
}

pub fn analyze_create(s: &pb::CreateSchemaStmt) -> Result<SchemaCmd> {
    let owner = s.authrole.as_ref().map(crate::roles::role_ref);
    let role = match &owner {
        Some(crate::roles::RoleRef::Name(n)) => Some(n.clone()),
        Some(crate::roles::RoleRef::Public) => return Err(SqlError::new(b"42704", "role \"public\" does not exist")),
        Some(_) if s.schemaname.is_empty() => return Err(SqlError::not_supported("CREATE SCHEMA AUTHORIZATION CURRENT_USER without a name")),
        _ => None,
    };
    let name = if s.schemaname.is_empty() { role.unwrap_or_default() } else { s.schemaname.clone() };
    if !s.schema_elts.is_empty() {
        return Err(SqlError::not_supported("CREATE SCHEMA with schema elements"));
    }
    Ok(SchemaCmd::Create { name, if_not_exists: s.if_not_exists, owner })
}

pub fn analyze_drop(s: &pb::DropStmt) -> Result<SchemaCmd> {
    let mut names = Vec::new();
    for o in &s.objects {
        match &o.node {
            Some(NodeEnum::String(n)) => names.push(n.sval.clone()),
            _ => return Err(SqlError::not_supported("this DROP SCHEMA form")),
        }
    }
    Ok(SchemaCmd::Drop { names, missing_ok: s.missing_ok, cascade: s.behavior == pb::DropBehavior::DropCascade as i32 })
}

pub fn analyze_rename(s: &pb::RenameStmt) -> Result<SchemaCmd> {
    Ok(SchemaCmd::Rename { from: s.subname.clone(), to: s.newname.clone() })
}

/// A relation of a schema that DROP SCHEMA names: (oid, "table s.t").
fn dependents(backend: &Backend, snap: &Snapshot, ns: u32, nspname: &str) -> Result<Vec<(u32, String, String)>> {
    let mut out = Vec::new();
    for (_, row) in scan_rows(backend, &catalog::class_rel(), snap)? {
        if let [Value::Oid(oid), Value::Text(n), Value::Oid(relns), _, _, Value::Text(kind), ..] = row.as_slice() {
            if *relns != ns {
                continue;
            }
            let what = match kind.as_str() {
                "r" => "table",
                "S" if crate::sequence::owner_of(backend, *oid).ok().flatten().is_none() => "sequence",
                _ => continue,
            };
            out.push((*oid, format!("{what} {}.{}", quote(nspname), quote(n)), kind.clone()));
        }
    }
    out.sort_by_key(|x| x.0);
    Ok(out)
}

fn quote(s: &str) -> String {
    crate::pgcatalog::quote_ident(s)
}

pub fn execute(cmd: &SchemaCmd, backend: &mut Backend, snap: &Snapshot, notice: &mut dyn FnMut(SqlError) -> Result<()>) -> Result<String> {
    match cmd {
        SchemaCmd::Create { name, if_not_exists, owner } => {
            // PostgreSQL 15: CREATE on the database, and membership in the new owner.
            let roles = crate::acl::role_graph(backend, snap)?;
            let me = backend.current_user;
            let owner = match owner {
                None | Some(crate::roles::RoleRef::CurrentUser) => me,
                Some(crate::roles::RoleRef::SessionUser) => backend.session_user,
                Some(crate::roles::RoleRef::Name(n)) => {
                    roles.oid(n).ok_or_else(|| SqlError::new(b"42704", format!("role \"{n}\" does not exist")))?
                }
                Some(crate::roles::RoleRef::Public) => return Err(SqlError::new(b"42704", "role \"public\" does not exist")),
            };
            crate::acl::check_database_privilege(backend, snap, crate::acl::CREATE)?;
            if !roles.superuser(me) && !crate::roles::is_member_of(&crate::roles::memberships(backend, snap)?, me, owner) {
                return Err(SqlError::new(b"42501", format!("must be member of role \"{}\"", roles.name(owner))));
            }
            if namespaces(backend, snap)?.iter().any(|(_, n)| n == name) {
                if *if_not_exists {
                    notice(SqlError::notice(b"42P06", format!("schema \"{name}\" already exists, skipping")))?;
                    return Ok("CREATE SCHEMA".into());
                }
                return Err(SqlError::new(b"42P06", format!("schema \"{name}\" already exists")));
            }
            check_name(name)?;
            let oid = backend.engine().new_oid();
            let nspacl = crate::default_acl::initial_acl(backend, snap, crate::default_acl::SCHEMA, 0, owner)?.map_or(Value::Null, |a| crate::acl::to_stored(&a));
            insert_row(backend, &namespace_rel(), &[Value::Oid(oid), Value::Text(name.clone()), Value::Oid(owner), nspacl])?;
            Ok("CREATE SCHEMA".into())
        }
        SchemaCmd::Rename { from, to } => {
            let all = namespaces(backend, snap)?;
            let Some((oid, _)) = all.iter().find(|(_, n)| n == from) else {
                return Err(SqlError::new(b"3F000", format!("schema \"{from}\" does not exist")));
            };
            if all.iter().any(|(_, n)| n == to) {
                return Err(SqlError::new(b"42P06", format!("schema \"{to}\" already exists")));
            }
            if *oid == catalog::PG_CATALOG_NAMESPACE || super::is_temp_name(from) {
                return Err(SqlError::new(b"42501", format!("must be owner of schema {from}")));
            }
            let oid = *oid;
            crate::acl::check_schema_owner(backend, snap, oid)?;
            crate::acl::check_database_privilege(backend, snap, crate::acl::CREATE)?;
            check_name(to)?;
            let Some((_, mut row)) = scan_rows(backend, &namespace_rel(), snap)?.into_iter().find(|(_, r)| r.first() == Some(&Value::Oid(oid))) else {
                return Err(SqlError::new(b"3F000", format!("schema \"{from}\" does not exist")));
            };
            row[1] = Value::Text(to.clone());
            delete_rows(backend, snap, &namespace_rel(), |r| r.first() == Some(&Value::Oid(oid)))?;
            insert_row(backend, &namespace_rel(), &row)?;
            Ok("ALTER SCHEMA".into())
        }
        SchemaCmd::Drop { names, missing_ok, cascade } => {
            let all = namespaces(backend, snap)?;
            let mut found = Vec::new();
            for name in names {
                match all.iter().find(|(_, n)| n == name) {
                    Some((oid, _)) if *oid == catalog::PG_CATALOG_NAMESPACE => {
                        return Err(SqlError::new(
                            b"2BP01",
                            format!("cannot drop schema {name} because it is required by the database system"),
                        ))
                    }
                    Some((oid, _)) => found.push((*oid, name.clone())),
                    None if *missing_ok => notice(SqlError::notice(b"00000", format!("schema \"{name}\" does not exist, skipping")))?,
                    None => return Err(SqlError::new(b"3F000", format!("schema \"{name}\" does not exist"))),
                }
            }
            let mut deps = Vec::new();
            for (oid, name) in &found {
                deps.extend(dependents(backend, snap, *oid, name)?.into_iter().map(|d| (d, name.clone())));
            }
            if !deps.is_empty() && !*cascade {
                let detail: Vec<String> = deps.iter().map(|((_, what, _), s)| format!("{what} depends on schema {}", quote(s))).collect();
                return Err(SqlError::new(b"2BP01", format!("cannot drop schema {} because other objects depend on it", quote(&found[0].1)))
                    .with_detail(detail.join("\n"))
                    .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
            }
            match deps.as_slice() {
                [] => {}
                [((_, what, _), _)] => notice(SqlError::notice(b"00000", format!("drop cascades to {what}")))?,
                many => {
                    let lines: Vec<String> = many.iter().map(|((_, what, _), _)| format!("drop cascades to {what}")).collect();
                    notice(SqlError::notice(b"00000", format!("drop cascades to {} other objects", many.len())).with_detail(lines.join("\n")))?
                }
            }
            for (oid, _) in &found {
                super::drop_namespace_contents(backend, *oid)?;
            }
            // The schema's default privileges go with it (PostgreSQL: an
            // automatic dependency of pg_default_acl on the schema).
            let doomed: Vec<u32> = found.iter().map(|(o, _)| *o).collect();
            crate::default_acl::remove_where(backend, snap, &|d| doomed.contains(&d.namespace))?;
            Ok("DROP SCHEMA".into())
        }
    }
}
