//! GRANT / REVOKE on objects and ALTER ... OWNER TO ([`crate::acl`] holds the
//! ACL model; this is the statements).
//!
//! As PostgreSQL 15 (aclchk.c's ExecGrantStmt, merge_acl_with_grant,
//! restrict_and_check_grant, select_best_grantor), written from its design:
//! - the grantor is the object's owner when the current user has the owner's
//!   privileges (or is a superuser), else the role among those whose
//!   privileges the user has that holds the most of the needed grant options;
//! - privileges without grant option are dropped from the statement with
//!   WARNING 01007 `no privileges were granted for "t"` / `not all privileges
//!   were granted for "t"` (REVOKE: 01006 `... could be revoked ...`); a role
//!   with no privilege at all on the object gets 42501;
//! - REVOKE of a grant option that others' grants depend on is 2BP01
//!   `dependent privileges exist` without CASCADE; with CASCADE those grants go
//!   too, recursively;
//! - a NULL ACL is the owner's default; the first change stores it changed.
//!
//! Objects: tables, views, sequences (ON [TABLE] t, ON SEQUENCE s, ON ALL
//! TABLES | SEQUENCES IN SCHEMA s), their columns (`SELECT (a, b)`: the
//! column's own ACL in pg_attribute.attacl, see [`column_grants`]), schemas,
//! databases and configuration parameters (ON PARAMETER p: SET, ALTER
//! SYSTEM; [`crate::param_acl`]), SQL functions (ON FUNCTION | ROUTINE |
//! PROCEDURE f(args), ON ALL FUNCTIONS IN SCHEMA s: EXECUTE in
//! pg_proc.proacl, [`crate::sqlfunc`]), and ALTER DEFAULT PRIVILEGES
//! ([`crate::default_acl`]). Types have no ACL here (0A000).

use crate::acl::{self, Acl, AclItem, ObjKind, RoleGraph, PUBLIC};
use ferrogres_datum::errors::{Result, SqlError};
use crate::roles::RoleRef;
use crate::rowio::scan_rows;
use ferrogres_datum::types::Value;
use ferrogres_engine::engine::Backend;
use ferrogres_engine::txn::snapshot::Snapshot;
use pg_query::protobuf as pb;
use pg_query::NodeEnum;

/// What a GRANT / REVOKE names.
#[derive(Clone, Debug)]
pub enum Targets {
    /// Relations by (schema, name); `seq`: ON SEQUENCE.
    Rels { names: Vec<(Option<String>, String)>, seq: bool },
    /// ON ALL TABLES | SEQUENCES IN SCHEMA s, ...
    AllIn { schemas: Vec<String>, seq: bool },
    Schemas(Vec<String>),
    Databases(Vec<String>),
    /// ON PARAMETER name, ... ([`crate::param_acl`]).
    Parameters(Vec<String>),
    /// ON FUNCTION | ROUTINE | PROCEDURE f(args), ...; `procedure`: ON PROCEDURE.
    Funcs { items: Vec<crate::sqlfunc::DropItem>, procedure: bool },
    /// ON ALL FUNCTIONS | ROUTINES IN SCHEMA s, ...
    AllFuncsIn(Vec<String>),
    /// ALTER DEFAULT PRIVILEGES [FOR ROLE r, ...] [IN SCHEMA s, ...] GRANT |
    /// REVOKE ... ON TABLES | SEQUENCES | FUNCTIONS | TYPES | SCHEMAS
    /// ([`crate::default_acl`]); `roles` empty: the current user.
    Defaults { roles: Vec<RoleRef>, schemas: Vec<String>, objtype: u8 },
}

#[derive(Clone, Debug)]
pub struct GrantCmd {
    pub is_grant: bool,
    pub targets: Targets,
    /// The privileges named, with their names (for 0LP01); `None`: ALL.
    pub privs: Option<Vec<(u16, String)>>,
    /// Column privileges (`SELECT (a, b)`, `ALL (a)`): the privileges, their
    /// name, the columns.
    pub col_privs: Vec<(u16, String, Vec<String>)>,
    pub grantees: Vec<RoleRef>,
    pub grant_option: bool,
    pub grantor: Option<RoleRef>,
    pub cascade: bool,
}

/// ALTER TABLE | VIEW | SEQUENCE | SCHEMA ... OWNER TO role.
#[derive(Clone, Debug)]
pub enum OwnerCmd {
    Rel { schema: Option<String>, name: String, new_owner: RoleRef, missing_ok: bool },
    Schema { name: String, new_owner: RoleRef },
    /// ALTER DATABASE d OWNER TO role.
    Database { name: String, new_owner: RoleRef },
    /// ALTER FUNCTION | ROUTINE | PROCEDURE f(args) OWNER TO role.
    Function { item: crate::sqlfunc::DropItem, procedure: bool, new_owner: RoleRef },
    /// REASSIGN OWNED BY r, ... TO new.
    Reassign { roles: Vec<RoleRef>, new_owner: RoleRef },
    /// DROP OWNED BY r, ... [CASCADE].
    DropOwned { roles: Vec<RoleRef>, cascade: bool },
}

/// REASSIGN OWNED, analyzed.
pub fn analyze_reassign(s: &pb::ReassignOwnedStmt) -> Result<OwnerCmd> {
    let roles = s.roles.iter().filter_map(|r| if let Some(NodeEnum::RoleSpec(r)) = &r.node { Some(crate::roles::role_ref(r)) } else { None }).collect();
    let new_owner = s.newrole.as_ref().map(crate::roles::role_ref).ok_or_else(|| SqlError::internal("REASSIGN OWNED without a role"))?;
    Ok(OwnerCmd::Reassign { roles, new_owner })
}

/// DROP OWNED, analyzed.
pub fn analyze_drop_owned(s: &pb::DropOwnedStmt) -> Result<OwnerCmd> {
    let roles = s.roles.iter().filter_map(|r| if let Some(NodeEnum::RoleSpec(r)) = &r.node { Some(crate::roles::role_ref(r)) } else { None }).collect();
    Ok(OwnerCmd::DropOwned { roles, cascade: s.behavior == pb::DropBehavior::DropCascade as i32 })
}

/// The roles REASSIGN / DROP OWNED name, checked as PostgreSQL 15 does: each
/// must exist (42704) and the current user must have its privileges (42501
/// `permission denied to <what>`).
fn owned_roles(backend: &Backend, roles: &RoleGraph, list: &[RoleRef], what: &str) -> Result<Vec<u32>> {
    let me = backend.current_user;
    let mut out = Vec::new();
    for r in list {
        let oid = resolve_role(roles, backend, r)?;
        if !roles.has_privs_of(me, oid) {
            return Err(SqlError::new(b"42501", format!("permission denied to {what}")));
        }
        out.push(oid);
    }
    Ok(out)
}

/// Removes every item granted to `role` from `acl`, with the grants that
/// depended on its grant options (PostgreSQL's RemoveRoleFromObjectACL:
/// REVOKE ALL ... CASCADE).
fn remove_grantee(acl: &mut Acl, role: u32, owner: u32) -> Result<()> {
    while let Some(i) = acl.iter().find(|i| i.grantee == role).copied() {
        revoke(acl, role, i.grantor, i.privs | i.goptions, false, true, owner)?;
        acl.retain(|x| !(x.grantee == role && x.grantor == i.grantor));
    }
    Ok(())
}

/// REASSIGN OWNED BY old, ... TO new: the relations, their columns' ACLs,
/// schemas, databases and functions `old` owns get `new` as owner, with
/// `old`'s ACL items moved to `new` (as ALTER ... OWNER TO). Default
/// privileges are not reassigned (PostgreSQL leaves them to DROP OWNED).
fn reassign_owned(backend: &mut Backend, snap: &Snapshot, list: &[RoleRef], new_owner: &RoleRef) -> Result<String> {
    let roles = acl::role_graph(backend, snap)?;
    let olds = owned_roles(backend, &roles, list, "reassign objects")?;
    let new = resolve_role(&roles, backend, new_owner)?;
    if !roles.has_privs_of(backend.current_user, new) {
        return Err(SqlError::new(b"42501", "permission denied to reassign objects"));
    }
    for &old in &olds {
        if old == crate::roles::BOOTSTRAP_SUPERUSER {
            return Err(SqlError::new(
                b"2BP01",
                format!("cannot reassign ownership of objects owned by role {} because they are required by the database system", roles.name(old)),
            ));
        }
    }
    for old in olds.into_iter().filter(|o| *o != new) {
        let mut rels = Vec::new();
        for (_, row) in scan_rows(backend, &crate::catalog::class_rel(), snap)? {
            if let Some(Value::Oid(oid)) = row.first() {
                if matches!(row.get(acl::RELOWNER), Some(Value::Oid(o)) if *o == old) {
                    rels.push((*oid, acl::from_stored(row.get(acl::RELACL))));
                }
            }
        }
        for (oid, acl_now) in rels {
            let stored = acl_now.as_ref().map(|a| acl::to_stored(&new_owner_acl(a, old, new)));
            crate::index::update_class_row(backend, snap, oid, &|row: &mut Vec<Value>| {
                row.resize(acl::RELACL + 1, Value::Null);
                row[acl::RELOWNER] = Value::Oid(new);
                if let Some(a) = &stored {
                    row[acl::RELACL] = a.clone();
                }
            })?;
            for c in acl::column_acls(backend, snap, oid)? {
                if let Some(a) = c.acl.as_deref().filter(|a| acl::mentions(a, old)) {
                    store_column_acl(backend, snap, oid, c.attnum, Some(&new_owner_acl(&a.to_vec(), old, new)))?;
                }
            }
        }
        for ns in acl::ns_acls(backend, snap)?.iter().filter(|n| n.owner == old) {
            let acl_new = ns.acl.as_ref().map(|a| new_owner_acl(a, old, new));
            update_namespace_row(backend, snap, ns.oid, &|row| {
                row[acl::NSPOWNER] = Value::Oid(new);
                if let Some(a) = &acl_new {
                    row[acl::NSPACL] = acl::to_stored(a);
                }
            })?;
        }
        for d in crate::database::list_rows(backend, snap)?.into_iter().filter(|d| d.dba == old) {
            let acl_new = d.acl.as_deref().and_then(|t| acl::parse_display(t, &roles)).map(|a| acl::display_text(&new_owner_acl(&a, old, new), &roles));
            crate::database::set_owner(backend, snap, d.oid, new, acl_new.or(d.acl.clone()))?;
        }
        for f in crate::sqlfunc::all(backend, snap)?.into_iter().filter(|f| f.owner == old) {
            let acl_new = f.acl.as_ref().map(|a| new_owner_acl(a, old, new));
            crate::sqlfunc::update(backend, snap, f.oid, &|p| {
                p.owner = new;
                p.acl = acl_new.clone();
            })?;
        }
    }
    Ok("REASSIGN OWNED".into())
}

/// DROP OWNED BY r, ...: every privilege granted to the roles on relations,
/// columns, schemas, databases, functions and in default privileges is
/// revoked (with CASCADE), their default-privilege entries removed and the
/// functions they own dropped. Dropping the other objects they own is not
/// done yet: while a role owns a relation or a schema, DROP OWNED answers
/// 0A000 (REASSIGN OWNED first, or DROP them).
fn drop_owned(backend: &mut Backend, snap: &Snapshot, list: &[RoleRef]) -> Result<String> {
    let roles = acl::role_graph(backend, snap)?;
    let doomed = owned_roles(backend, &roles, list, "drop objects")?;
    for &r in &doomed {
        if r == crate::roles::BOOTSTRAP_SUPERUSER {
            return Err(SqlError::new(
                b"2BP01",
                format!("cannot drop objects owned by role {} because they are required by the database system", roles.name(r)),
            ));
        }
    }
    let owns: Vec<String> = doomed.iter().map(|r| acl::role_dependents(backend, snap, *r)).collect::<Result<Vec<_>>>()?.concat();
    let owned: Vec<&String> = owns
        .iter()
        .filter(|d| d.starts_with("owner of ") && !d.starts_with("owner of default privileges") && !d.starts_with("owner of database") && !d.starts_with("owner of function"))
        .collect();
    if !owned.is_empty() {
        return Err(SqlError::not_supported("DROP OWNED of a role that owns relations or schemas")
            .with_detail(owned.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n"))
            .with_hint("Use REASSIGN OWNED, or drop the objects first."));
    }
    for &r in &doomed {
        let mut rels = Vec::new();
        for (_, row) in scan_rows(backend, &crate::catalog::class_rel(), snap)? {
            if let Some(Value::Oid(oid)) = row.first() {
                let owner = match row.get(acl::RELOWNER) {
                    Some(Value::Oid(o)) => *o,
                    _ => crate::roles::BOOTSTRAP_SUPERUSER,
                };
                if let Some(a) = acl::from_stored(row.get(acl::RELACL)).filter(|a| a.iter().any(|i| i.grantee == r)) {
                    rels.push((*oid, owner, a));
                }
            }
        }
        for (oid, owner, mut a) in rels {
            remove_grantee(&mut a, r, owner)?;
            let v = acl::to_stored(&a);
            crate::index::update_class_row(backend, snap, oid, &|row: &mut Vec<Value>| {
                row.resize(acl::RELACL + 1, Value::Null);
                row[acl::RELACL] = v.clone();
            })?;
        }
        for (rel, cols) in acl::all_column_acls(backend, snap, None)? {
            for c in cols {
                let Some(mut a) = c.acl.clone().filter(|a| a.iter().any(|i| i.grantee == r)) else { continue };
                let owner = acl::rel_acl(backend, snap, rel)?.map_or(crate::roles::BOOTSTRAP_SUPERUSER, |x| x.owner);
                remove_grantee(&mut a, r, owner)?;
                store_column_acl(backend, snap, rel, c.attnum, (!a.is_empty()).then_some(a.as_slice()))?;
            }
        }
        let nss: Vec<acl::NsAcl> = acl::ns_acls(backend, snap)?.iter().filter(|n| n.acl.as_deref().is_some_and(|a| a.iter().any(|i| i.grantee == r))).cloned().collect();
        for ns in nss {
            let mut a = ns.acl.clone().unwrap_or_default();
            remove_grantee(&mut a, r, ns.owner)?;
            update_namespace_row(backend, snap, ns.oid, &|row| {
                row[acl::NSPOWNER] = Value::Oid(ns.owner);
                row[acl::NSPACL] = acl::to_stored(&a);
            })?;
        }
        for d in crate::database::list_rows(backend, snap)? {
            let Some(mut a) = d.acl.as_deref().and_then(|t| acl::parse_display(t, &roles)).filter(|a| a.iter().any(|i| i.grantee == r)) else { continue };
            remove_grantee(&mut a, r, d.dba)?;
            crate::database::set_acl(backend, snap, d.oid, Some(acl::display_text(&a, &roles)))?;
        }
        // Functions: those it owns are dropped, its grants on others revoked.
        // (a snapshot that sees the earlier roles' changes)
        let fsnap = crate::catcache::ddl_snapshot(backend)?;
        let snap = &fsnap;
        let doomed_funcs: Vec<u32> = crate::sqlfunc::all(backend, snap)?.iter().filter(|f| f.owner == r).map(|f| f.oid).collect();
        crate::sqlfunc::drop_oids(backend, snap, &doomed_funcs)?;
        for f in crate::sqlfunc::all(backend, snap)? {
            let Some(mut a) = f.acl.clone().filter(|a| a.iter().any(|i| i.grantee == r)) else { continue };
            if doomed_funcs.contains(&f.oid) {
                continue;
            }
            remove_grantee(&mut a, r, f.owner)?;
            crate::sqlfunc::update(backend, snap, f.oid, &|p| p.acl = Some(a.clone()))?;
        }
        crate::default_acl::remove_where(backend, snap, &|d| d.role == r)?;
        backend.txn.command_counter_increment()?;
        let snap2 = crate::catcache::ddl_snapshot(backend)?;
        let entries: Vec<crate::default_acl::DefAcl> = crate::default_acl::list(backend, &snap2)?.iter().filter(|d| d.acl.iter().any(|i| i.grantee == r)).cloned().collect();
        for d in entries {
            let mut a = d.acl.clone();
            remove_grantee(&mut a, r, d.role)?;
            crate::default_acl::store(backend, &snap2, d.role, d.namespace, d.objtype, &a)?;
        }
        backend.txn.command_counter_increment()?;
    }
    Ok("DROP OWNED".into())
}

/// A function's name and argument types as GRANT and ALTER FUNCTION name
/// it (`types` resolves a type name).
pub fn function_item(ow: &pb::ObjectWithArgs, types: &mut dyn FnMut(&pb::TypeName) -> Result<ferrogres_datum::types::Type>) -> Result<crate::sqlfunc::DropItem> {
    let names: Vec<String> = ow.objname.iter().filter_map(|n| if let Some(NodeEnum::String(s)) = &n.node { Some(s.sval.clone()) } else { None }).collect();
    let (schema, name) = match names.as_slice() {
        [n] => (None, n.clone()),
        [.., s, n] => (Some(s.clone()), n.clone()),
        [] => return Err(SqlError::internal("a function without a name")),
    };
    let args = if ow.args_unspecified {
        None
    } else {
        let mut v = Vec::new();
        for a in &ow.objargs {
            if let Some(NodeEnum::TypeName(tn)) = &a.node {
                v.push(types(tn)?);
            }
        }
        Some(v)
    };
    Ok((schema, name, args, String::new()))
}

/// GRANT / REVOKE's statement, analyzed (names are resolved when it runs,
/// but for the argument types of functions, resolved by `types`).
pub fn analyze(s: &pb::GrantStmt, types: &mut dyn FnMut(&pb::TypeName) -> Result<ferrogres_datum::types::Type>) -> Result<GrantCmd> {
    use pb::GrantTargetType as T;
    use pb::ObjectType as O;
    let target = T::try_from(s.targtype).unwrap_or(T::Undefined);
    let objtype = O::try_from(s.objtype).unwrap_or(O::Undefined);
    let names = || -> Vec<String> {
        s.objects
            .iter()
            .filter_map(|o| match &o.node {
                Some(NodeEnum::String(n)) => Some(n.sval.clone()),
                _ => None,
            })
            .collect()
    };
    let targets = match (target, objtype) {
        (T::AclTargetAllInSchema, O::ObjectTable | O::ObjectSequence) => Targets::AllIn { schemas: names(), seq: objtype == O::ObjectSequence },
        (T::AclTargetObject, O::ObjectTable | O::ObjectSequence) => {
            let mut rels = Vec::new();
            for o in &s.objects {
                let Some(NodeEnum::RangeVar(rv)) = &o.node else { return Err(SqlError::not_supported("this GRANT target")) };
                rels.push(((!rv.schemaname.is_empty()).then(|| rv.schemaname.clone()), rv.relname.clone()));
            }
            Targets::Rels { names: rels, seq: objtype == O::ObjectSequence }
        }
        (T::AclTargetObject, O::ObjectSchema) => Targets::Schemas(names()),
        (T::AclTargetObject, O::ObjectDatabase) => Targets::Databases(names()),
        (T::AclTargetObject, O::ObjectParameterAcl) => Targets::Parameters(names()),
        (T::AclTargetDefaults, _) => {
            let objtype = match objtype {
                O::ObjectTable => crate::default_acl::RELATION,
                O::ObjectSequence => crate::default_acl::SEQUENCE,
                O::ObjectFunction | O::ObjectProcedure | O::ObjectRoutine => crate::default_acl::FUNCTION,
                O::ObjectType => crate::default_acl::TYPE,
                O::ObjectSchema => crate::default_acl::SCHEMA,
                _ => return Err(SqlError::not_supported("default privileges on this kind of object")),
            };
            Targets::Defaults { roles: Vec::new(), schemas: Vec::new(), objtype }
        }
        (T::AclTargetAllInSchema, O::ObjectFunction | O::ObjectRoutine) => Targets::AllFuncsIn(names()),
        (T::AclTargetObject, O::ObjectFunction | O::ObjectProcedure | O::ObjectRoutine) => {
            let mut items = Vec::new();
            for o in &s.objects {
                let Some(NodeEnum::ObjectWithArgs(ow)) = &o.node else { return Err(SqlError::not_supported("this GRANT target")) };
                items.push(function_item(ow, types)?);
            }
            Targets::Funcs { items, procedure: objtype == O::ObjectProcedure }
        }
        (_, O::ObjectFunction | O::ObjectProcedure | O::ObjectRoutine) => return Err(SqlError::not_supported("GRANT / REVOKE on all procedures")),
        _ => return Err(SqlError::not_supported("GRANT / REVOKE on this kind of object")),
    };
    let mut col_privs = Vec::new();
    let privs = if s.privileges.is_empty() {
        None
    } else {
        let mut out = Vec::new();
        for p in &s.privileges {
            let Some(NodeEnum::AccessPriv(ap)) = &p.node else { continue };
            if !ap.cols.is_empty() {
                if matches!(targets, Targets::Defaults { .. }) {
                    return Err(SqlError::new(b"0LP01", "default privileges cannot be set for columns"));
                }
                if !matches!(targets, Targets::Rels { seq: false, .. }) {
                    return Err(SqlError::not_supported("column privileges on this kind of object"));
                }
                let cols = ap.cols.iter().filter_map(|c| match &c.node {
                    Some(NodeEnum::String(n)) => Some(n.sval.clone()),
                    _ => None,
                });
                // `ALL (a)`: the privilege name is empty.
                let (bit, name) = if ap.priv_name.is_empty() {
                    (acl::COLUMN_PRIVS, "ALL".to_string())
                } else {
                    let bit = acl::privilege_bit(&ap.priv_name)
                        .ok_or_else(|| SqlError::new(b"42601", format!("unrecognized privilege type \"{}\"", ap.priv_name)))?;
                    (bit, ap.priv_name.to_ascii_uppercase())
                };
                col_privs.push((bit, name, cols.collect()));
                continue;
            }
            let bit = acl::privilege_bit(&ap.priv_name)
                .ok_or_else(|| SqlError::new(b"42601", format!("unrecognized privilege type \"{}\"", ap.priv_name)))?;
            out.push((bit, ap.priv_name.to_ascii_uppercase()));
        }
        Some(out)
    };
    let mut grantees = Vec::new();
    for g in &s.grantees {
        if let Some(NodeEnum::RoleSpec(r)) = &g.node {
            grantees.push(crate::roles::role_ref(r));
        }
    }
    Ok(GrantCmd {
        is_grant: s.is_grant,
        targets,
        privs,
        col_privs,
        grantees,
        grant_option: s.grant_option,
        grantor: s.grantor.as_ref().map(crate::roles::role_ref),
        cascade: s.behavior == pb::DropBehavior::DropCascade as i32,
    })
}

/// ALTER DEFAULT PRIVILEGES, analyzed: its GRANT / REVOKE with the roles
/// (FOR ROLE) and schemas (IN SCHEMA) of its options.
pub fn analyze_defaults(s: &pb::AlterDefaultPrivilegesStmt) -> Result<GrantCmd> {
    let Some(action) = &s.action else { return Err(SqlError::internal("ALTER DEFAULT PRIVILEGES without an action")) };
    let mut cmd = analyze(action, &mut |_| Err(SqlError::internal("ALTER DEFAULT PRIVILEGES names no function")))?;
    let Targets::Defaults { roles, schemas, .. } = &mut cmd.targets else { return Err(SqlError::internal("ALTER DEFAULT PRIVILEGES without defaults")) };
    let (mut seen_roles, mut seen_schemas) = (false, false);
    for o in &s.options {
        let Some(NodeEnum::DefElem(d)) = &o.node else { continue };
        let items: Vec<pb::Node> = match d.arg.as_ref().and_then(|a| a.node.as_ref()) {
            Some(NodeEnum::List(l)) => l.items.clone(),
            _ => Vec::new(),
        };
        let seen = if d.defname == "roles" { &mut seen_roles } else { &mut seen_schemas };
        if *seen {
            return Err(SqlError::new(b"42601", "conflicting or redundant options"));
        }
        *seen = true;
        for it in items {
            match (d.defname.as_str(), it.node) {
                ("roles", Some(NodeEnum::RoleSpec(r))) => roles.push(crate::roles::role_ref(&r)),
                ("schemas", Some(NodeEnum::String(n))) => schemas.push(n.sval),
                _ => {}
            }
        }
    }
    Ok(cmd)
}

/// Runs ALTER DEFAULT PRIVILEGES (PostgreSQL 15's ExecAlterDefaultPrivilegesStmt
/// and SetDefaultACL, written from their design): grantees resolved, the
/// privileges checked against the object type (0LP01), then for each target
/// role (the current user's membership in it needed: 42501 `must be member of
/// role "r"`) and each schema (3F000 for an unknown one; no privilege on it
/// needed) the entry's ACL changed with the role as grantor, stored sorted, or
/// removed when it is its starting point again.
fn execute_defaults(backend: &mut Backend, snap: &Snapshot, cmd: &GrantCmd, targets: (&[RoleRef], &[String], u8)) -> Result<String> {
    let (for_roles, schemas, objtype) = targets;
    let roles = acl::role_graph(backend, snap)?;
    let me = backend.current_user;
    let mut grantees = Vec::new();
    for g in &cmd.grantees {
        grantees.push(resolve_role(&roles, backend, g)?);
    }
    let kind = crate::default_acl::kind_of(objtype);
    let word = if objtype == crate::default_acl::RELATION { "relation" } else { kind.word() };
    let privs = match &cmd.privs {
        None => kind.all(),
        Some(list) => {
            let mut m = 0;
            for (bit, name) in list {
                if bit & !kind.all() != 0 {
                    return Err(SqlError::new(b"0LP01", format!("invalid privilege type {name} for {word}")));
                }
                m |= bit;
            }
            m
        }
    };
    let targets: Vec<u32> = if for_roles.is_empty() {
        vec![me]
    } else {
        let members = crate::roles::memberships(backend, snap)?;
        let mut out = Vec::new();
        for r in for_roles {
            let oid = resolve_role(&roles, backend, r)?;
            if !roles.superuser(me) && !crate::roles::is_member_of(&members, me, oid) {
                return Err(SqlError::new(b"42501", format!("must be member of role \"{}\"", roles.name(oid))));
            }
            out.push(oid);
        }
        out
    };
    let mut namespaces = Vec::new();
    for s in schemas {
        let ns = crate::namespace::schema_oid(backend, snap, s)?.ok_or_else(|| SqlError::new(b"3F000", format!("schema \"{s}\" does not exist")))?;
        namespaces.push(ns);
    }
    if namespaces.is_empty() {
        namespaces.push(0);
    } else if objtype == crate::default_acl::SCHEMA {
        return Err(SqlError::new(b"0LP01", "cannot use IN SCHEMA clause when using GRANT/REVOKE ON SCHEMAS"));
    }
    if cmd.is_grant && cmd.grant_option && grantees.contains(&PUBLIC) {
        return Err(SqlError::new(b"0LP01", "grant options can only be granted to roles"));
    }
    for role in targets {
        for &ns in &namespaces {
            // Each change sees the ones before it (FOR ROLE a, a).
            let snap = crate::catcache::ddl_snapshot(backend)?;
            let mut acl = crate::default_acl::current(backend, &snap, role, ns, objtype)?;
            for &g in &grantees {
                if cmd.is_grant {
                    let go = if cmd.grant_option { privs } else { 0 };
                    match acl.iter_mut().find(|i| i.grantee == g && i.grantor == role) {
                        Some(i) => {
                            i.privs |= privs;
                            i.goptions |= go;
                        }
                        None => acl.push(AclItem { grantee: g, grantor: role, privs, goptions: go }),
                    }
                } else {
                    revoke(&mut acl, g, role, privs, cmd.grant_option, cmd.cascade, role)?;
                }
            }
            crate::default_acl::store(backend, &snap, role, ns, objtype, &acl)?;
            backend.txn.command_counter_increment()?;
        }
    }
    Ok("ALTER DEFAULT PRIVILEGES".into())
}

/// One object a GRANT names, with its current owner and ACL.
struct Object {
    kind: ObjKind,
    oid: u32,
    name: String,
    owner: u32,
    acl: Option<Acl>,
}

fn resolve_role(roles: &RoleGraph, backend: &Backend, r: &RoleRef) -> Result<u32> {
    match r {
        RoleRef::Name(n) => roles.oid(n).ok_or_else(|| SqlError::new(b"42704", format!("role \"{n}\" does not exist"))),
        RoleRef::CurrentUser => Ok(backend.current_user),
        RoleRef::SessionUser => Ok(backend.session_user),
        RoleRef::Public => Ok(PUBLIC),
    }
}

fn relation_object(backend: &Backend, snap: &Snapshot, oid: u32) -> Result<Option<Object>> {
    Ok(acl::rel_acl(backend, snap, oid)?.map(|r| Object { kind: r.kind, oid, name: r.name.clone(), owner: r.owner, acl: r.acl.clone() }))
}

fn objects(backend: &Backend, snap: &Snapshot, roles: &RoleGraph, t: &Targets) -> Result<Vec<Object>> {
    let mut out = Vec::new();
    match t {
        Targets::Rels { names, seq } => {
            for (schema, name) in names {
                let shown = match schema {
                    Some(s) => format!("{s}.{name}"),
                    None => name.clone(),
                };
                let missing = || SqlError::new(b"42P01", format!("relation \"{shown}\" does not exist"));
                let Some(ns) = crate::namespace::relation_namespace(backend, snap, schema.as_deref(), name)? else { return Err(missing()) };
                let Some((oid, kind)) = crate::index::find_relation(backend, snap, ns, name)? else { return Err(missing()) };
                if *seq && kind != "S" {
                    return Err(SqlError::new(b"42809", format!("\"{name}\" is not a sequence")));
                }
                if kind == "i" {
                    return Err(SqlError::new(b"42809", format!("\"{name}\" is an index")));
                }
                out.extend(relation_object(backend, snap, oid)?);
            }
        }
        Targets::AllIn { schemas, seq } => {
            for s in schemas {
                let ns = crate::namespace::schema_oid(backend, snap, s)?.ok_or_else(|| SqlError::new(b"3F000", format!("schema \"{s}\" does not exist")))?;
                let mut rels: Vec<u32> = Vec::new();
                for (_, row) in scan_rows(backend, &crate::catalog::class_rel(), snap)? {
                    if let [Value::Oid(oid), _, Value::Oid(relns), _, _, Value::Text(kind), ..] = row.as_slice() {
                        let wanted = if *seq { kind == "S" } else { kind == "r" || kind == "v" };
                        if *relns == ns && wanted {
                            rels.push(*oid);
                        }
                    }
                }
                rels.sort_unstable();
                for oid in rels {
                    out.extend(relation_object(backend, snap, oid)?);
                }
            }
        }
        Targets::Schemas(names) => {
            let all = acl::ns_acls(backend, snap)?;
            for n in names {
                let ns = all.iter().find(|x| &x.name == n).ok_or_else(|| SqlError::new(b"3F000", format!("schema \"{n}\" does not exist")))?;
                out.push(Object { kind: ObjKind::Schema, oid: ns.oid, name: ns.name.clone(), owner: ns.owner, acl: ns.acl.clone() });
            }
        }
        Targets::Databases(names) => {
            let dbs = crate::database::list_rows(backend, snap)?;
            for n in names {
                let d = dbs.iter().find(|d| &d.name == n).ok_or_else(|| SqlError::new(b"3D000", format!("database \"{n}\" does not exist")))?;
                let acl = d.acl.as_deref().and_then(|t| acl::parse_display(t, roles));
                out.push(Object { kind: ObjKind::Database, oid: d.oid, name: d.name.clone(), owner: d.dba, acl });
            }
        }
        Targets::Defaults { .. } => {}
        Targets::Funcs { items, procedure } => {
            for item in items {
                out.push(function_object(crate::sqlfunc::resolve(backend, snap, item, *procedure)?));
            }
        }
        Targets::AllFuncsIn(schemas) => {
            for s in schemas {
                let ns = crate::namespace::schema_oid(backend, snap, s)?.ok_or_else(|| SqlError::new(b"3F000", format!("schema \"{s}\" does not exist")))?;
                for f in crate::sqlfunc::all(backend, snap)?.into_iter().filter(|f| f.namespace == ns) {
                    out.push(function_object(f));
                }
            }
        }
        Targets::Parameters(names) => {
            for n in names {
                let name = crate::param_acl::canonical_name(n)?;
                let (oid, acl) = crate::param_acl::acl_of(backend, snap, &name)?;
                out.push(Object {
                    kind: ObjKind::Parameter,
                    oid: oid.unwrap_or(0),
                    name,
                    owner: crate::roles::BOOTSTRAP_SUPERUSER,
                    acl: Some(acl),
                });
            }
        }
    }
    Ok(out)
}

fn function_object(f: crate::sqlfunc::ProcDef) -> Object {
    Object { kind: ObjKind::Function, oid: f.oid, name: f.name, owner: f.owner, acl: f.acl }
}

/// PostgreSQL's select_best_grantor: (grantor, grant options it holds).
fn best_grantor(roles: &RoleGraph, me: u32, o: &Object) -> (u32, u16) {
    let all = o.kind.all();
    if roles.has_privs_of(me, o.owner) || (o.owner == acl::PG_DATABASE_OWNER && roles.has_privs_of(me, roles.db_owner)) {
        return (o.owner, all);
    }
    let acl = o.acl.clone().unwrap_or_else(|| acl::default_acl(o.kind, o.owner));
    let mut best = (me, 0u16);
    for r in roles.privs_of(me) {
        let go: u16 = acl.iter().filter(|i| i.grantee == r).fold(0, |g, i| g | i.goptions);
        if go.count_ones() > best.1.count_ones() {
            best = (r, go);
        }
    }
    best
}

fn warn(out: &mut dyn FnMut(SqlError) -> Result<()>, code: &[u8; 5], text: String) -> Result<()> {
    let mut w = SqlError::new(code, text);
    w.severity = ferrogres_datum::errors::Severity::Warning;
    out(w)
}

/// Runs GRANT / REVOKE in the session's transaction.
pub fn execute(backend: &mut Backend, snap: &Snapshot, cmd: &GrantCmd, notice: &mut dyn FnMut(SqlError) -> Result<()>) -> Result<String> {
    if let Targets::Defaults { roles, schemas, objtype } = &cmd.targets {
        return execute_defaults(backend, snap, cmd, (roles, schemas, *objtype));
    }
    let tag = if cmd.is_grant { "GRANT" } else { "REVOKE" };
    let roles = acl::role_graph(backend, snap)?;
    let me = backend.current_user;
    if let Some(g) = &cmd.grantor {
        if resolve_role(&roles, backend, g)? != me {
            return Err(SqlError::new(b"0A000", "grantor must be current user"));
        }
    }
    let mut grantees = Vec::new();
    for g in &cmd.grantees {
        grantees.push(resolve_role(&roles, backend, g)?);
    }
    if cmd.is_grant && cmd.grant_option && grantees.contains(&PUBLIC) {
        return Err(SqlError::new(b"0LP01", "grant options can only be granted to roles"));
    }
    for o in objects(backend, snap, &roles, &cmd.targets)? {
        // `GRANT SELECT (a) ON t` alone names no table-level privilege.
        let table_level = !matches!(&cmd.privs, Some(l) if l.is_empty());
        // A table-level REVOKE takes the same privileges from every column.
        let mut from_columns = 0;
        if table_level {
            let all = o.kind.all();
            let wanted = match &cmd.privs {
                None => all,
                Some(list) => {
                    let mut m = 0;
                    for (bit, name) in list {
                        if bit & all == 0 {
                            return Err(SqlError::new(b"0LP01", format!("invalid privilege type {name} for {}", o.kind.word())));
                        }
                        m |= bit;
                    }
                    m
                }
            };
            let (grantor, avail) = best_grantor(&roles, me, &o);
            if avail & wanted == 0 && !roles.superuser(me) {
                let acl_now = o.acl.clone();
                let (p, g) = acl::privs(&roles, grantor, o.kind, o.owner, acl_now.as_deref(), roles.db_owner);
                if p | g == 0 {
                    return Err(acl::denied(o.kind, &o.name));
                }
            }
            let this = wanted & avail;
            let what = if cmd.is_grant { "granted" } else { "revoked" };
            let verb = if cmd.is_grant { "were" } else { "could be" };
            let code = if cmd.is_grant { b"01007" } else { b"01006" };
            if this == 0 {
                warn(notice, code, format!("no privileges {verb} {what} for \"{}\"", o.name))?;
            } else if cmd.privs.is_some() && this != wanted {
                warn(notice, code, format!("not all privileges {verb} {what} for \"{}\"", o.name))?;
            }
            let mut acl = o.acl.clone().unwrap_or_else(|| acl::default_acl(o.kind, o.owner));
            for &g in &grantees {
                if cmd.is_grant {
                    let go = if cmd.grant_option { this } else { 0 };
                    match acl.iter_mut().find(|i| i.grantee == g && i.grantor == grantor) {
                        Some(i) => {
                            i.privs |= this;
                            i.goptions |= go;
                        }
                        None if this != 0 => acl.push(AclItem { grantee: g, grantor, privs: this, goptions: go }),
                        None => {}
                    }
                } else {
                    revoke(&mut acl, g, grantor, this, cmd.grant_option, cmd.cascade, o.owner)?;
                }
            }
            store(backend, snap, &o, &acl, &roles)?;
            if !cmd.is_grant {
                from_columns = this & acl::COLUMN_PRIVS;
            }
        }
        if matches!(o.kind, ObjKind::Table | ObjKind::View) && (from_columns != 0 || !cmd.col_privs.is_empty()) {
            column_grants(backend, snap, &roles, cmd, &o, &grantees, from_columns, notice)?;
        }
    }
    Ok(tag.into())
}

/// Removes `privs` (or only their grant options) granted by `grantor` to
/// `grantee`; grants that depended on a grant option lost go too with
/// `cascade`, else 2BP01.
fn revoke(acl: &mut Acl, grantee: u32, grantor: u32, privs: u16, only_option: bool, cascade: bool, owner: u32) -> Result<()> {
    ferrogres_datum::stack_depth::check()?;
    if let Some(i) = acl.iter_mut().find(|i| i.grantee == grantee && i.grantor == grantor) {
        if !only_option {
            i.privs &= !privs;
        }
        i.goptions &= !privs;
    }
    acl.retain(|i| i.privs != 0);
    if grantee == PUBLIC || grantee == owner {
        return Ok(());
    }
    // Grant options the grantee still holds from any grantor.
    let held: u16 = acl.iter().filter(|i| i.grantee == grantee).fold(0, |g, i| g | i.goptions);
    let lost = privs & !held;
    if lost == 0 {
        return Ok(());
    }
    let dependents: Vec<u32> = acl.iter().filter(|i| i.grantor == grantee && i.privs & lost != 0).map(|i| i.grantee).collect();
    if dependents.is_empty() {
        return Ok(());
    }
    if !cascade {
        return Err(SqlError::new(b"2BP01", "dependent privileges exist").with_hint("Use CASCADE to revoke them too."));
    }
    for d in dependents {
        revoke(acl, d, grantee, lost, false, true, owner)?;
    }
    Ok(())
}

fn store(backend: &mut Backend, snap: &Snapshot, o: &Object, acl: &Acl, roles: &RoleGraph) -> Result<()> {
    match o.kind {
        ObjKind::Table | ObjKind::View | ObjKind::Sequence => {
            let v = acl::to_stored(acl);
            crate::index::update_class_row(backend, snap, o.oid, &|row: &mut Vec<Value>| {
                row.resize(acl::RELACL + 1, Value::Null);
                if row[acl::RELOWNER].is_null() {
                    row[acl::RELOWNER] = Value::Oid(o.owner);
                }
                row[acl::RELACL] = v.clone();
            })
        }
        ObjKind::Schema => update_namespace_row(backend, snap, o.oid, &|row| {
            row[acl::NSPOWNER] = Value::Oid(o.owner);
            row[acl::NSPACL] = acl::to_stored(acl);
        }),
        ObjKind::Database => crate::database::set_acl(backend, snap, o.oid, Some(acl::display_text(acl, roles))),
        ObjKind::Function => {
            let acl = acl.clone();
            crate::sqlfunc::update(backend, snap, o.oid, &|f| f.acl = Some(acl.clone()))
        }
        ObjKind::Type => Err(SqlError::not_supported("GRANT / REVOKE on types")),
        ObjKind::Parameter => crate::param_acl::store(backend, snap, &o.name, acl),
    }
}

/// Replaces pg_namespace row `oid` by a version changed by `f`.
fn update_namespace_row(backend: &mut Backend, snap: &Snapshot, oid: u32, f: &dyn Fn(&mut Vec<Value>)) -> Result<()> {
    let st = crate::catalog::namespace_rel();
    let Some((tid, mut row)) = scan_rows(backend, &st, snap)?.into_iter().find(|(_, r)| r[0] == Value::Oid(oid)) else {
        return Err(SqlError::internal(format!("no pg_namespace row for schema {oid}")));
    };
    match crate::catcache::heap_delete(backend, st.rel, tid, Some(&row))? {
        ferrogres_engine::txn::visibility::TmResult::Ok | ferrogres_engine::txn::visibility::TmResult::SelfModified => {}
        _ => return Err(SqlError::new(b"40001", "could not serialize access due to concurrent update")),
    }
    row.resize(acl::NSPACL + 1, Value::Null);
    f(&mut row);
    crate::rowio::insert_row(backend, &st, &row)?;
    Ok(())
}

/// The ACL with `old`'s items moved to `new` (PostgreSQL's aclnewowner).
fn new_owner_acl(acl: &Acl, old: u32, new: u32) -> Acl {
    let mut out: Acl = Vec::new();
    for i in acl {
        let mut i = *i;
        if i.grantee == old {
            i.grantee = new;
        }
        if i.grantor == old {
            i.grantor = new;
        }
        match out.iter_mut().find(|o| o.grantee == i.grantee && o.grantor == i.grantor) {
            Some(o) => {
                o.privs |= i.privs;
                o.goptions |= i.goptions;
            }
            None => out.push(i),
        }
    }
    out
}

/// ALTER ... OWNER TO: the owner (or a superuser) who is a member of the new
/// owner, which must have CREATE on the schema (PostgreSQL 15's checks).
pub fn alter_owner(backend: &mut Backend, snap: &Snapshot, cmd: &OwnerCmd, notice: &mut dyn FnMut(SqlError) -> Result<()>) -> Result<String> {
    let roles = acl::role_graph(backend, snap)?;
    let me = backend.current_user;
    match cmd {
        OwnerCmd::Reassign { roles, new_owner } => return reassign_owned(backend, snap, roles, new_owner),
        OwnerCmd::DropOwned { roles, .. } => return drop_owned(backend, snap, roles),
        _ => {}
    }
    let members = crate::roles::memberships(backend, snap)?;
    let may_become = |new: u32| roles.superuser(me) || crate::roles::is_member_of(&members, me, new);
    match cmd {
        OwnerCmd::Rel { schema, name, new_owner, missing_ok } => {
            let new = resolve_role(&roles, backend, new_owner)?;
            let shown = match schema {
                Some(s) => format!("{s}.{name}"),
                None => name.clone(),
            };
            let ns = crate::namespace::relation_namespace(backend, snap, schema.as_deref(), name)?;
            let found = match ns {
                Some(ns) => crate::index::find_relation(backend, snap, ns, name)?,
                None => None,
            };
            let Some((oid, _)) = found else {
                if *missing_ok {
                    notice(SqlError::notice(b"00000", format!("relation \"{shown}\" does not exist, skipping")))?;
                    return Ok("ALTER TABLE".into());
                }
                return Err(SqlError::new(b"42P01", format!("relation \"{shown}\" does not exist")));
            };
            let Some(rel) = acl::rel_acl(backend, snap, oid)? else { return Err(SqlError::new(b"42P01", format!("relation \"{shown}\" does not exist"))) };
            if rel.owner == new {
                return Ok("ALTER TABLE".into());
            }
            if !roles.superuser(me) {
                acl::check_rel_owner(backend, snap, oid)?;
                if !may_become(new) {
                    return Err(SqlError::new(b"42501", format!("must be member of role \"{}\"", roles.name(new))));
                }
                if acl::ns_privs(backend, snap, new, rel.namespace)? & acl::CREATE == 0 {
                    let nsname = crate::namespace::namespace_name(backend, snap, rel.namespace)?.unwrap_or_default();
                    return Err(acl::denied(ObjKind::Schema, &nsname));
                }
            }
            let acl = rel.acl.as_ref().map(|a| acl::to_stored(&new_owner_acl(a, rel.owner, new)));
            crate::index::update_class_row(backend, snap, oid, &|row: &mut Vec<Value>| {
                row.resize(acl::RELACL + 1, Value::Null);
                row[acl::RELOWNER] = Value::Oid(new);
                if let Some(a) = &acl {
                    row[acl::RELACL] = a.clone();
                }
            })?;
            Ok("ALTER TABLE".into())
        }
        OwnerCmd::Schema { name, new_owner } => {
            let new = resolve_role(&roles, backend, new_owner)?;
            let all = acl::ns_acls(backend, snap)?;
            let ns = all.iter().find(|n| &n.name == name).ok_or_else(|| SqlError::new(b"3F000", format!("schema \"{name}\" does not exist")))?.clone();
            if ns.owner != new && !roles.superuser(me) {
                acl::check_schema_owner(backend, snap, ns.oid)?;
                if !may_become(new) {
                    return Err(SqlError::new(b"42501", format!("must be member of role \"{}\"", roles.name(new))));
                }
                acl::check_database_privilege(backend, snap, acl::CREATE)?;
            }
            let acl = ns.acl.as_ref().map(|a| new_owner_acl(a, ns.owner, new));
            update_namespace_row(backend, snap, ns.oid, &|row| {
                row[acl::NSPOWNER] = Value::Oid(new);
                if let Some(a) = &acl {
                    row[acl::NSPACL] = acl::to_stored(a);
                }
            })?;
            Ok("ALTER SCHEMA".into())
        }
        OwnerCmd::Database { name, new_owner } => {
            // PostgreSQL 15's AlterDatabaseOwner: the owner (or a superuser)
            // who may become the new owner and holds CREATEDB.
            let dbs = crate::database::list_rows(backend, snap)?;
            let d = dbs.iter().find(|d| &d.name == name).ok_or_else(|| SqlError::new(b"3D000", format!("database \"{name}\" does not exist")))?;
            let new = resolve_role(&roles, backend, new_owner)?;
            if d.dba == new {
                return Ok("ALTER DATABASE".into());
            }
            if !roles.superuser(me) {
                if !roles.has_privs_of(me, d.dba) {
                    return Err(acl::not_owner(ObjKind::Database, name));
                }
                if !may_become(new) {
                    return Err(SqlError::new(b"42501", format!("must be member of role \"{}\"", roles.name(new))));
                }
                let createdb = crate::roles::list(backend, snap)?.iter().any(|(_, r)| r.oid == me && r.createdb);
                if !createdb {
                    return Err(SqlError::new(b"42501", "permission denied to change owner of database"));
                }
            }
            let acl_new = d.acl.as_deref().and_then(|t| acl::parse_display(t, &roles)).map(|a| acl::display_text(&new_owner_acl(&a, d.dba, new), &roles));
            crate::database::set_owner(backend, snap, d.oid, new, acl_new.or(d.acl.clone()))?;
            Ok("ALTER DATABASE".into())
        }
        OwnerCmd::Function { item, procedure, new_owner } => {
            // PostgreSQL 15's AlterObjectOwner_internal: the owner (or a
            // superuser) who may become the new owner, which needs CREATE on
            // the function's schema.
            let f = crate::sqlfunc::resolve(backend, snap, item, *procedure)?;
            let new = resolve_role(&roles, backend, new_owner)?;
            if f.owner == new {
                return Ok("ALTER FUNCTION".into());
            }
            if !roles.superuser(me) {
                if !roles.has_privs_of(me, f.owner) {
                    return Err(acl::not_owner(ObjKind::Function, &f.name));
                }
                if !may_become(new) {
                    return Err(SqlError::new(b"42501", format!("must be member of role \"{}\"", roles.name(new))));
                }
                if acl::ns_privs(backend, snap, new, f.namespace)? & acl::CREATE == 0 {
                    let nsname = crate::namespace::namespace_name(backend, snap, f.namespace)?.unwrap_or_default();
                    return Err(acl::denied(ObjKind::Schema, &nsname));
                }
            }
            let acl_new = f.acl.as_ref().map(|a| new_owner_acl(a, f.owner, new));
            crate::sqlfunc::update(backend, snap, f.oid, &|p| {
                p.owner = new;
                p.acl = acl_new.clone();
            })?;
            Ok("ALTER FUNCTION".into())
        }
        OwnerCmd::Reassign { .. } | OwnerCmd::DropOwned { .. } => Err(SqlError::internal("REASSIGN / DROP OWNED reached ALTER OWNER")),
    }
}

/// `ALTER TABLE | VIEW | SEQUENCE t OWNER TO r` (its only subcommand), if `s` is one.
pub fn owner_change(s: &pb::AlterTableStmt) -> Option<OwnerCmd> {
    let [cmd] = s.cmds.as_slice() else { return None };
    let Some(NodeEnum::AlterTableCmd(c)) = &cmd.node else { return None };
    if c.subtype != pb::AlterTableType::AtChangeOwner as i32 {
        return None;
    }
    let rv = s.relation.as_ref()?;
    Some(OwnerCmd::Rel {
        schema: (!rv.schemaname.is_empty()).then(|| rv.schemaname.clone()),
        name: rv.relname.clone(),
        new_owner: crate::roles::role_ref(c.newowner.as_ref()?),
        missing_ok: s.missing_ok,
    })
}

/// The privilege checks of DDL (PostgreSQL's: CREATE on the schema for new
/// relations, ownership of the table for ALTER / index / constraint DDL,
/// TRUNCATE privilege for TRUNCATE, REFERENCES on a foreign key's parent),
/// made when the statement runs.
pub fn check_ddl(backend: &Backend, snap: &Snapshot, stmt: &crate::plan::Statement) -> Result<()> {
    use crate::constraints::DdlCmd;
    use crate::index::IndexCmd;
    use crate::plan::Statement;
    match stmt {
        Statement::CreateTable { namespace, .. } => acl::check_create_in(backend, snap, *namespace),
        Statement::CreateTableAs(c) => acl::check_create_in(backend, snap, c.namespace),
        Statement::Index(cmd) => match cmd {
            IndexCmd::CreateTable { namespace, .. } => acl::check_create_in(backend, snap, *namespace),
            IndexCmd::CreateIndex { table, .. } | IndexCmd::AddConstraints { table, .. } | IndexCmd::Reindex { table: Some(table), .. } => {
                acl::check_rel_owner(backend, snap, table.oid)
            }
            IndexCmd::Truncate { tables } => {
                let perms: Vec<acl::PermReq> =
                    tables.iter().map(|t| acl::PermReq { rel: t.oid, privs: acl::TRUNCATE, any: false, check_as: None, cols: None, func: false }).collect();
                acl::check_perms(backend, snap, &perms)
            }
            _ => Ok(()),
        },
        Statement::Ddl(cmd) => match &**cmd {
            DdlCmd::CreateTable { base, extras } => {
                check_ddl(backend, snap, &Statement::Index(base.clone()))?;
                // REFERENCES on each referenced table, or on each of its key columns.
                let perms: Vec<acl::PermReq> = extras.fkeys.iter().map(|f| references_req(f.parent, &f.parent_cols)).collect();
                acl::check_perms(backend, snap, &perms)
            }
            DdlCmd::AddConstraint { table, fkey, .. } => {
                acl::check_rel_owner(backend, snap, table.oid)?;
                if let Some(f) = fkey {
                    acl::check_perms(backend, snap, &[references_req(f.parent, &f.parent_cols)])?;
                }
                Ok(())
            }
            DdlCmd::Alter(a) => match a.table_oid {
                Some(oid) => acl::check_rel_owner(backend, snap, oid),
                None => Ok(()),
            },
            DdlCmd::Seq(crate::sequence::SeqCmd::Create { namespace, .. }) => acl::check_create_in(backend, snap, *namespace),
            DdlCmd::Seq(crate::sequence::SeqCmd::Alter { oid, .. }) => acl::check_rel_owner(backend, snap, *oid),
            DdlCmd::View(crate::view::ViewCmd::Create { namespace, .. }) => acl::check_create_in(backend, snap, *namespace),
            DdlCmd::Func(crate::sqlfunc::FuncCmd::Create { def, .. }) => acl::check_create_in(backend, snap, def.namespace),
            _ => Ok(()),
        },
        _ => Ok(()),
    }
}

/// What a foreign key needs of the current user: REFERENCES on the referenced
/// table, or on each of the referenced columns (PostgreSQL's checkFkeyPermissions).
fn references_req(parent: u32, parent_cols: &[usize]) -> acl::PermReq {
    let cols = acl::ColSets { references: parent_cols.iter().map(|c| *c as i16 + 1).collect(), ..Default::default() };
    acl::PermReq { rel: parent, privs: acl::REFERENCES, any: false, check_as: None, cols: Some(Box::new(cols)), func: false }
}

/// The column part of GRANT / REVOKE on relation `o` (PostgreSQL's
/// ExecGrant_Attribute): each column's ACL (pg_attribute.attacl, NULL: no
/// privileges of its own) changed by the privileges the statement names for
/// it, plus `from_columns` for every column (a table-level REVOKE).
#[allow(clippy::too_many_arguments)]
fn column_grants(
    backend: &mut Backend,
    snap: &Snapshot,
    roles: &RoleGraph,
    cmd: &GrantCmd,
    o: &Object,
    grantees: &[u32],
    from_columns: u16,
    notice: &mut dyn FnMut(SqlError) -> Result<()>,
) -> Result<()> {
    let me = backend.current_user;
    let mut cols = acl::column_acls(backend, snap, o.oid)?;
    // What the statement names per column (index into `cols`): privileges,
    // and whether named explicitly (for the "not all" warning).
    let mut named: Vec<(usize, u16, bool)> = Vec::new();
    for (bits, name, list) in &cmd.col_privs {
        if bits & !acl::COLUMN_PRIVS != 0 {
            return Err(SqlError::new(b"0LP01", format!("invalid privilege type {name} for column")));
        }
        for c in list {
            let Some(i) = cols.iter().position(|x| !x.dropped && &x.name == c) else {
                return Err(SqlError::new(b"42703", format!("column \"{c}\" of relation \"{}\" does not exist", o.name)));
            };
            match named.iter_mut().find(|n| n.0 == i) {
                Some(n) => n.1 |= bits,
                None => named.push((i, *bits, *bits != acl::COLUMN_PRIVS)),
            }
        }
    }
    let table_acl = o.acl.clone().unwrap_or_else(|| acl::default_acl(o.kind, o.owner));
    let mut changed = vec![false; cols.len()];
    for i in 0..cols.len() {
        let mut wanted = from_columns;
        let mut explicit = false;
        if let Some(n) = named.iter().find(|n| n.0 == i) {
            wanted |= n.1;
            explicit = n.2;
        }
        if wanted == 0 || cols[i].dropped {
            continue;
        }
        let mut acl = cols[i].acl.clone().unwrap_or_default();
        // The best grantor: the owner, else the role holding the most of the
        // grant options on the table or the column.
        let (grantor, avail) = if roles.has_privs_of(me, o.owner) {
            (o.owner, acl::COLUMN_PRIVS)
        } else {
            let mut best = (me, 0u16);
            for r in roles.privs_of(me) {
                let go = table_acl.iter().chain(acl.iter()).filter(|x| x.grantee == r).fold(0, |g, x| g | x.goptions) & acl::COLUMN_PRIVS;
                if go.count_ones() > best.1.count_ones() {
                    best = (r, go);
                }
            }
            best
        };
        let this = wanted & avail;
        let shown = format!("column \"{}\" of relation \"{}\"", cols[i].name, o.name);
        // A table-level REVOKE's pass over the columns warns of nothing.
        if named.iter().any(|n| n.0 == i) {
            if avail & wanted == 0 && !roles.superuser(me) {
                let (tp, tg) = acl::privs(roles, grantor, o.kind, o.owner, Some(&table_acl), roles.db_owner);
                let (cp, cg) = acl::privs(roles, grantor, o.kind, o.owner, Some(&acl), roles.db_owner);
                if (tp | tg | cp | cg) & acl::COLUMN_PRIVS == 0 {
                    return Err(SqlError::new(b"42501", format!("permission denied for {shown}")));
                }
            }
            let what = if cmd.is_grant { "granted" } else { "revoked" };
            let verb = if cmd.is_grant { "were" } else { "could be" };
            let code = if cmd.is_grant { b"01007" } else { b"01006" };
            if this == 0 {
                warn(notice, code, format!("no privileges {verb} {what} for {shown}"))?;
            } else if explicit && this != wanted {
                warn(notice, code, format!("not all privileges {verb} {what} for {shown}"))?;
            }
        }
        for &g in grantees {
            if cmd.is_grant {
                let go = if cmd.grant_option { this } else { 0 };
                match acl.iter_mut().find(|x| x.grantee == g && x.grantor == grantor) {
                    Some(x) => {
                        x.privs |= this;
                        x.goptions |= go;
                    }
                    None if this != 0 => acl.push(AclItem { grantee: g, grantor, privs: this, goptions: go }),
                    None => {}
                }
            } else {
                revoke(&mut acl, g, grantor, this, cmd.grant_option, cmd.cascade, o.owner)?;
            }
        }
        let acl = (!acl.is_empty()).then_some(acl);
        if acl != cols[i].acl {
            cols[i].acl = acl;
            changed[i] = true;
        }
    }
    for (c, _) in cols.iter().zip(&changed).filter(|(_, ch)| **ch) {
        store_column_acl(backend, snap, o.oid, c.attnum, c.acl.as_deref())?;
    }
    Ok(())
}

/// Replaces pg_attribute row (rel, attnum)'s attacl.
fn store_column_acl(backend: &mut Backend, snap: &Snapshot, rel: u32, attnum: i16, acl: Option<&[AclItem]>) -> Result<()> {
    let st = crate::catalog::attribute_rel();
    let Some((tid, mut row)) = scan_rows(backend, &st, snap)?.into_iter().find(|(_, r)| r[0] == Value::Oid(rel) && r[3] == Value::Int2(attnum)) else {
        return Err(SqlError::internal(format!("no pg_attribute row for column {attnum} of relation {rel}")));
    };
    match crate::catcache::heap_delete(backend, st.rel, tid, Some(&row))? {
        ferrogres_engine::txn::visibility::TmResult::Ok | ferrogres_engine::txn::visibility::TmResult::SelfModified => {}
        _ => return Err(SqlError::new(b"40001", "could not serialize access due to concurrent update")),
    }
    row.resize(st.types.len(), Value::Null);
    if row[6].is_null() {
        row[6] = Value::Bool(false);
    }
    row[acl::ATTACL] = acl.map_or(Value::Null, acl::to_stored);
    crate::rowio::insert_row(backend, &st, &row)?;
    Ok(())
}
