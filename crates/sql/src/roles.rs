//! Roles: the shared catalogs pg_authid and pg_auth_members, CREATE / ALTER /
//! DROP ROLE (USER, GROUP), GRANT / REVOKE of role membership, the session's
//! identity (session user, current user: SET ROLE, SET SESSION
//! AUTHORIZATION) and the checks made at connection.
//!
//! Storage: like pg_database ([`crate::database`]), both catalogs are heap
//! relations in `global/` (pg_authid `global/1260`, pg_auth_members
//! `global/1261`), shared by every database, written through the heap and so
//! WAL-logged and crash-safe, and transactional: CREATE ROLE in a transaction
//! block that rolls back leaves no role. [`bootstrap`] makes them at the
//! first start with PostgreSQL 15 initdb's rows: the bootstrap superuser
//! `postgres` (OID 10) and the predefined roles with their OIDs, pg_monitor a
//! member of pg_read_all_settings, pg_read_all_stats and pg_stat_scan_tables.
//!
//! Stored columns of pg_authid: PostgreSQL 15's (oid, rolname, rolsuper,
//! rolinherit, rolcreaterole, rolcreatedb, rolcanlogin, rolreplication,
//! rolbypassrls, rolconnlimit, rolpassword, rolvaliduntil) and rolconfig
//! (the `ALTER ROLE ... SET` settings, which PostgreSQL keeps in
//! pg_db_role_setting; `IN DATABASE` is not supported). pg_auth_members:
//! roleid, member, grantor, admin_option.
//!
//! Privileges of these commands are PostgreSQL 15's: CREATEROLE (or
//! superuser) to create, alter and drop roles and to grant membership
//! without ADMIN OPTION; superuser to create, alter or drop superusers and to
//! give REPLICATION or BYPASSRLS; a role may change its own password.
//!
//! Not done: the new identity is applied to later statements of the session
//! only (a `SET ROLE` rolled back with its transaction stays); a concurrent
//! CREATE ROLE of the same name in two open transactions is not serialized
//! (PostgreSQL's unique index on rolname would make the second wait, then
//! fail); ownership checks of DROP ROLE know databases only (2BP01), since
//! other objects do not record owners yet.

use ferrogres_datum::errors::{Result, SqlError};
use crate::rowio::{insert_row, scan_rows, RelStorage};
use crate::session::Output;
use ferrogres_datum::types::{Type, Value};
use ferrogres_engine::config::password;
use ferrogres_engine::engine::{Backend, Engine};
use ferrogres_engine::heap::tuple::Tid;
use ferrogres_engine::storage::smgr::GLOBALTABLESPACE_OID;
use ferrogres_engine::storage::{ForkNumber, RelFileLocator};
use ferrogres_engine::txn::snapshot::Snapshot;
use ferrogres_engine::txn::visibility::TmResult;
use ferrogres_engine::txn::IsolationLevel;
use pg_query::protobuf as pb;
use pg_query::NodeEnum;
use std::sync::Arc;

pub const PG_AUTHID: u32 = 1260;
pub const PG_AUTH_MEMBERS: u32 = 1261;
pub const BOOTSTRAP_SUPERUSER: u32 = 10;
const PG_MONITOR: u32 = 3373;
const PG_DATABASE_OWNER: u32 = 6171;
const TEXT_ARRAY: Type = Type::Array(&Type::Text);

/// The predefined roles of PostgreSQL 15 and the bootstrap superuser.
pub const BUILTIN: &[(u32, &str)] = &[
    (10, "postgres"),
    (3373, "pg_monitor"),
    (3374, "pg_read_all_settings"),
    (3375, "pg_read_all_stats"),
    (3377, "pg_stat_scan_tables"),
    (4200, "pg_signal_backend"),
    (4544, "pg_checkpoint"),
    (4569, "pg_read_server_files"),
    (4570, "pg_write_server_files"),
    (4571, "pg_execute_server_program"),
    (6171, "pg_database_owner"),
    (6181, "pg_read_all_data"),
    (6182, "pg_write_all_data"),
];

fn global(rel: u32) -> RelFileLocator {
    RelFileLocator { spc_oid: GLOBALTABLESPACE_OID, db_oid: 0, rel_number: rel }
}

fn authid_rel() -> RelStorage {
    RelStorage {
        rel: global(PG_AUTHID),
        toast: None,
        types: vec![
            Type::Oid,
            Type::Text,
            Type::Bool,
            Type::Bool,
            Type::Bool,
            Type::Bool,
            Type::Bool,
            Type::Bool,
            Type::Bool,
            Type::Int4,
            Type::Text,
            Type::Timestamptz,
            TEXT_ARRAY,
        ],
        missing: Vec::new(),
        proj: None,
        system: None,
    }
}

fn members_rel() -> RelStorage {
    RelStorage { rel: global(PG_AUTH_MEMBERS), toast: None, types: vec![Type::Oid, Type::Oid, Type::Oid, Type::Bool], missing: Vec::new(), proj: None, system: None }
}

/// One row of pg_authid.
#[derive(Clone, Debug, PartialEq)]
pub struct RoleRow {
    pub oid: u32,
    pub name: String,
    pub superuser: bool,
    pub inherit: bool,
    pub createrole: bool,
    pub createdb: bool,
    pub canlogin: bool,
    pub replication: bool,
    pub bypassrls: bool,
    pub connlimit: i32,
    pub password: Option<String>,
    /// Microseconds since 2000-01-01 UTC (i64::MAX: infinity).
    pub valid_until: Option<i64>,
    /// `name=value` items (ALTER ROLE ... SET).
    pub config: Vec<String>,
}

impl RoleRow {
    fn new(oid: u32, name: &str) -> RoleRow {
        RoleRow {
            oid,
            name: name.into(),
            superuser: false,
            inherit: true,
            createrole: false,
            createdb: false,
            canlogin: false,
            replication: false,
            bypassrls: false,
            connlimit: -1,
            password: None,
            valid_until: None,
            config: Vec::new(),
        }
    }

    fn values(&self) -> Vec<Value> {
        let b = Value::Bool;
        vec![
            Value::Oid(self.oid),
            Value::Text(self.name.clone()),
            b(self.superuser),
            b(self.inherit),
            b(self.createrole),
            b(self.createdb),
            b(self.canlogin),
            b(self.replication),
            b(self.bypassrls),
            Value::Int4(self.connlimit),
            self.password.clone().map_or(Value::Null, Value::Text),
            self.valid_until.map_or(Value::Null, Value::Timestamptz),
            if self.config.is_empty() {
                Value::Null
            } else {
                Value::Array(Box::new(ferrogres_datum::array::Array::new(Type::Text, self.config.iter().cloned().map(Value::Text).collect())))
            },
        ]
    }

    fn from_values(v: &[Value]) -> Option<RoleRow> {
        let b = |i: usize| matches!(v.get(i), Some(Value::Bool(true)));
        Some(RoleRow {
            oid: match v.first()? {
                Value::Oid(o) => *o,
                _ => return None,
            },
            name: match v.get(1)? {
                Value::Text(t) => t.clone(),
                _ => return None,
            },
            superuser: b(2),
            inherit: b(3),
            createrole: b(4),
            createdb: b(5),
            canlogin: b(6),
            replication: b(7),
            bypassrls: b(8),
            connlimit: match v.get(9) {
                Some(Value::Int4(i)) => *i,
                _ => -1,
            },
            password: match v.get(10) {
                Some(Value::Text(t)) => Some(t.clone()),
                _ => None,
            },
            valid_until: match v.get(11) {
                Some(Value::Timestamptz(t)) => Some(*t),
                _ => None,
            },
            config: match v.get(12) {
                Some(Value::Array(a)) => a
                    .items
                    .iter()
                    .filter_map(|x| match x {
                        Value::Text(t) => Some(t.clone()),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            },
        })
    }

    /// The ALTER ROLE ... SET settings as (name, value).
    pub fn settings(&self) -> Vec<(String, String)> {
        self.config.iter().filter_map(|c| c.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    /// Whether VALID UNTIL is in the past.
    pub fn expired(&self) -> bool {
        self.valid_until.is_some_and(|t| t != i64::MAX && t < ferrogres_datum::datetime::clock_now())
    }
}

/// One row of pg_auth_members.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberRow {
    pub role: u32,
    pub member: u32,
    pub grantor: u32,
    pub admin: bool,
}

impl MemberRow {
    fn values(&self) -> Vec<Value> {
        vec![Value::Oid(self.role), Value::Oid(self.member), Value::Oid(self.grantor), Value::Bool(self.admin)]
    }
}

/// Every role, with its row's TID.
pub fn list(backend: &Backend, snap: &Snapshot) -> Result<Vec<(Tid, RoleRow)>> {
    let mut out = Vec::new();
    for (tid, r) in scan_rows(backend, &authid_rel(), snap)? {
        out.push((tid, RoleRow::from_values(&r).ok_or_else(|| SqlError::new(b"XX001", "malformed pg_authid row"))?));
    }
    Ok(out)
}

/// Every membership, with its row's TID.
pub fn memberships(backend: &Backend, snap: &Snapshot) -> Result<Vec<(Tid, MemberRow)>> {
    let mut out = Vec::new();
    for (tid, r) in scan_rows(backend, &members_rel(), snap)? {
        let oid = |i: usize| match r.get(i) {
            Some(Value::Oid(o)) => *o,
            _ => 0,
        };
        out.push((tid, MemberRow { role: oid(0), member: oid(1), grantor: oid(2), admin: matches!(r.get(3), Some(Value::Bool(true))) }));
    }
    Ok(out)
}

pub fn find(backend: &Backend, snap: &Snapshot, name: &str) -> Result<Option<(Tid, RoleRow)>> {
    Ok(list(backend, snap)?.into_iter().find(|(_, r)| r.name == name))
}

pub fn by_oid(backend: &Backend, snap: &Snapshot, oid: u32) -> Result<Option<RoleRow>> {
    Ok(list(backend, snap)?.into_iter().find(|(_, r)| r.oid == oid).map(|x| x.1))
}

/// The OID of role `name`, if it exists.
pub fn oid_of(backend: &Backend, snap: &Snapshot, name: &str) -> Result<Option<u32>> {
    Ok(find(backend, snap, name)?.map(|(_, r)| r.oid))
}

/// The name of role `oid` (pg_get_userbyid's "unknown (OID=n)" when there is none).
pub fn name_of(backend: &Backend, snap: &Snapshot, oid: u32) -> String {
    match by_oid(backend, snap, oid) {
        Ok(Some(r)) => r.name,
        _ => format!("unknown (OID={oid})"),
    }
}

fn does_not_exist(name: &str) -> SqlError {
    SqlError::new(b"42704", format!("role \"{name}\" does not exist"))
}

/// Whether `member` is `role` or a member of it, directly or through other
/// roles (PostgreSQL's is_member_of_role, ignoring INHERIT).
pub fn is_member_of(members: &[(Tid, MemberRow)], member: u32, role: u32) -> bool {
    // Breadth-first over the roles `member` belongs to; the visited list bounds it.
    let mut seen = vec![member];
    let mut i = 0;
    while i < seen.len() {
        if seen[i] == role {
            return true;
        }
        let cur = seen[i];
        for (_, m) in members {
            if m.member == cur && !seen.contains(&m.role) {
                seen.push(m.role);
            }
        }
        i += 1;
    }
    false
}

/// Runs `f` in a transaction of its own (committed if `f` succeeds).
fn in_txn<T>(backend: &mut Backend, f: impl FnOnce(&mut Backend, &Snapshot) -> Result<T>) -> Result<T> {
    backend.txn.begin(IsolationLevel::ReadCommitted)?;
    let r = (|| {
        let snap = backend.txn.statement_snapshot()?;
        f(backend, &snap)
    })();
    match r {
        Ok(v) => {
            backend.txn.commit()?;
            Ok(v)
        }
        Err(e) => {
            let _ = backend.txn.abort();
            Err(e)
        }
    }
}

/// Makes pg_authid and pg_auth_members on the first start, with initdb's rows.
pub fn bootstrap(engine: &Arc<Engine>) -> Result<()> {
    for st in [authid_rel(), members_rel()] {
        if !engine.smgr.exists(st.rel, ForkNumber::Main) {
            engine.create_relation(st.rel)?;
        }
    }
    let mut backend = engine.backend(std::process::id() as i32)?;
    if !in_txn(&mut backend, |b, snap| list(b, snap))?.is_empty() {
        return Ok(());
    }
    in_txn(&mut backend, |b, _| {
        for (oid, name) in BUILTIN {
            let mut r = RoleRow::new(*oid, name);
            if *oid == BOOTSTRAP_SUPERUSER {
                r.superuser = true;
                r.createrole = true;
                r.createdb = true;
                r.canlogin = true;
                r.replication = true;
                r.bypassrls = true;
            }
            insert_row(b, &authid_rel(), &r.values())?;
        }
        for role in [3374, 3375, 3377] {
            insert_row(b, &members_rel(), &MemberRow { role, member: PG_MONITOR, grantor: BOOTSTRAP_SUPERUSER, admin: false }.values())?;
        }
        Ok(())
    })
}

// ---- connection ------------------------------------------------------------------

/// The role `user` (in a transaction of its own), for authentication.
pub fn login_role(backend: &mut Backend, user: &str) -> Result<Option<RoleRow>> {
    in_txn(backend, |b, snap| Ok(find(b, snap, user)?.map(|x| x.1)))
}

/// Whether `user` is a member of `group` (pg_hba.conf's `+group`).
pub fn user_in_group(backend: &mut Backend, user: &str, group: &str) -> Result<bool> {
    in_txn(backend, |b, snap| {
        let roles = list(b, snap)?;
        let oid = |n: &str| roles.iter().find(|(_, r)| r.name == n).map(|(_, r)| r.oid);
        let (Some(u), Some(g)) = (oid(user), oid(group)) else { return Ok(false) };
        Ok(is_member_of(&memberships(b, snap)?, u, g))
    })
}

/// PostgreSQL's InitializeSessionUserId: the startup packet's user must be a
/// role (28000 `role "x" does not exist`) that may log in (28000 `role "x" is
/// not permitted to log in`), within its CONNECTION LIMIT (53300 `too many
/// connections for role "x"`, superusers exempt). `sessions_of` counts the
/// other sessions of a role. Sets the backend's session and current user and
/// returns the role's row (its ALTER ROLE ... SET settings: [`RoleRow::settings`]).
pub fn connect(backend: &mut Backend, user: &str, sessions_of: impl Fn(u32) -> usize) -> Result<RoleRow> {
    let row = login_role(backend, user)?;
    let Some(row) = row else { return Err(SqlError::new(b"28000", format!("role \"{user}\" does not exist"))) };
    if !row.canlogin {
        return Err(SqlError::new(b"28000", format!("role \"{user}\" is not permitted to log in")));
    }
    if !row.superuser && row.connlimit >= 0 && sessions_of(row.oid) >= row.connlimit as usize {
        return Err(SqlError::new(b"53300", format!("too many connections for role \"{user}\"")));
    }
    backend.session_user = row.oid;
    backend.current_user = row.oid;
    Ok(row)
}

// ---- statements ------------------------------------------------------------------

/// Role attributes given to CREATE / ALTER ROLE.
#[derive(Clone, Debug, Default)]
pub struct RoleOpts {
    pub superuser: Option<bool>,
    pub createdb: Option<bool>,
    pub createrole: Option<bool>,
    pub inherit: Option<bool>,
    pub login: Option<bool>,
    pub replication: Option<bool>,
    pub bypassrls: Option<bool>,
    pub connlimit: Option<i32>,
    /// `Some(None)`: PASSWORD NULL.
    pub password: Option<Option<String>>,
    pub valid_until: Option<String>,
    /// IN ROLE: roles the new role becomes a member of.
    pub in_role: Vec<String>,
    /// ROLE: members of the new role.
    pub role: Vec<String>,
    /// ADMIN: members of the new role WITH ADMIN OPTION.
    pub admin: Vec<String>,
}

#[derive(Clone, Debug)]
pub enum RoleCmd {
    Create { name: String, opts: RoleOpts },
    Alter { role: RoleRef, opts: RoleOpts },
    /// ALTER ROLE ... SET / RESET (value `None`: RESET; name `None`: RESET ALL).
    Set { role: RoleRef, name: Option<String>, value: Option<String> },
    Rename { name: String, new_name: String },
    Drop { names: Vec<String>, missing_ok: bool },
    Grant { roles: Vec<String>, members: Vec<RoleRef>, admin: bool },
    Revoke { roles: Vec<String>, members: Vec<RoleRef>, admin_only: bool },
}

impl RoleCmd {
    pub fn tag(&self) -> &'static str {
        match self {
            RoleCmd::Create { .. } => "CREATE ROLE",
            RoleCmd::Alter { .. } | RoleCmd::Set { .. } | RoleCmd::Rename { .. } => "ALTER ROLE",
            RoleCmd::Drop { .. } => "DROP ROLE",
            RoleCmd::Grant { .. } => "GRANT ROLE",
            RoleCmd::Revoke { .. } => "REVOKE ROLE",
        }
    }
}

/// A role named in a statement: by name, or CURRENT_USER / SESSION_USER.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RoleRef {
    Name(String),
    CurrentUser,
    SessionUser,
    Public,
}

pub fn role_ref(r: &pb::RoleSpec) -> RoleRef {
    use pb::RoleSpecType as R;
    match R::try_from(r.roletype).unwrap_or(R::Undefined) {
        R::RolespecCurrentUser | R::RolespecCurrentRole => RoleRef::CurrentUser,
        R::RolespecSessionUser => RoleRef::SessionUser,
        R::RolespecPublic => RoleRef::Public,
        _ => RoleRef::Name(r.rolename.clone()),
    }
}

fn node_role(n: &pb::Node) -> Option<RoleRef> {
    match n.node.as_ref()? {
        NodeEnum::RoleSpec(r) => Some(role_ref(r)),
        NodeEnum::String(s) => Some(RoleRef::Name(s.sval.clone())),
        _ => None,
    }
}

fn def_bool(d: &pb::DefElem) -> Result<bool> {
    match d.arg.as_ref().and_then(|n| n.node.as_ref()) {
        None => Ok(true),
        Some(NodeEnum::Boolean(b)) => Ok(b.boolval),
        Some(NodeEnum::Integer(i)) => Ok(i.ival != 0),
        _ => Err(SqlError::new(b"42601", format!("{} requires a Boolean value", d.defname))),
    }
}

fn def_string(d: &pb::DefElem) -> Option<String> {
    match d.arg.as_ref().and_then(|n| n.node.as_ref()) {
        Some(NodeEnum::String(s)) => Some(s.sval.clone()),
        _ => None,
    }
}

fn def_roles(d: &pb::DefElem) -> Vec<String> {
    match d.arg.as_ref().and_then(|n| n.node.as_ref()) {
        Some(NodeEnum::List(l)) => l
            .items
            .iter()
            .filter_map(node_role)
            .map(|r| match r {
                RoleRef::Name(n) => n,
                RoleRef::CurrentUser => "\u{0}current".into(),
                RoleRef::SessionUser => "\u{0}session".into(),
                RoleRef::Public => "public".into(),
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn options(list: &[pb::Node], sql: &str) -> Result<RoleOpts> {
    let mut o = RoleOpts::default();
    let mut seen: Vec<String> = Vec::new();
    for n in list {
        let Some(NodeEnum::DefElem(d)) = &n.node else { continue };
        if seen.contains(&d.defname) {
            return Err(SqlError::new(b"42601", "conflicting or redundant options").at(sql, d.location));
        }
        seen.push(d.defname.clone());
        match d.defname.as_str() {
            "superuser" => o.superuser = Some(def_bool(d)?),
            "createdb" => o.createdb = Some(def_bool(d)?),
            "createrole" => o.createrole = Some(def_bool(d)?),
            "inherit" => o.inherit = Some(def_bool(d)?),
            "canlogin" => o.login = Some(def_bool(d)?),
            "isreplication" => o.replication = Some(def_bool(d)?),
            "bypassrls" => o.bypassrls = Some(def_bool(d)?),
            "connectionlimit" => {
                let l = match d.arg.as_ref().and_then(|n| n.node.as_ref()) {
                    Some(NodeEnum::Integer(i)) => i.ival,
                    _ => return Err(SqlError::new(b"42601", "connectionlimit requires an integer value")),
                };
                if l < -1 {
                    return Err(SqlError::new(b"22023", format!("invalid connection limit: {l}")));
                }
                o.connlimit = Some(l);
            }
            "password" => o.password = Some(def_string(d)),
            "validUntil" => o.valid_until = def_string(d),
            "addroleto" => o.in_role = def_roles(d),
            "rolemembers" => o.role = def_roles(d),
            "adminmembers" => o.admin = def_roles(d),
            "sysid" => {}
            other => return Err(SqlError::not_supported(format!("role option \"{other}\""))),
        }
    }
    Ok(o)
}

pub fn analyze_create(s: &pb::CreateRoleStmt, sql: &str) -> Result<RoleCmd> {
    let mut opts = options(&s.options, sql)?;
    // CREATE USER is CREATE ROLE ... LOGIN by default.
    if s.stmt_type == pb::RoleStmtType::RolestmtUser as i32 && opts.login.is_none() {
        opts.login = Some(true);
    }
    Ok(RoleCmd::Create { name: s.role.clone(), opts })
}

pub fn analyze_alter(s: &pb::AlterRoleStmt, sql: &str) -> Result<RoleCmd> {
    let role = s.role.as_ref().map(role_ref).ok_or_else(|| SqlError::internal("ALTER ROLE without a role"))?;
    let mut opts = options(&s.options, sql)?;
    // ALTER GROUP g ADD USER u / DROP USER u: action +1 / -1 with "rolemembers".
    if s.action != 0 && !opts.role.is_empty() {
        let RoleRef::Name(g) = role else { return Err(SqlError::not_supported("ALTER GROUP of a special role")) };
        let members = std::mem::take(&mut opts.role).into_iter().map(RoleRef::Name).collect();
        return Ok(if s.action > 0 {
            RoleCmd::Grant { roles: vec![g], members, admin: false }
        } else {
            RoleCmd::Revoke { roles: vec![g], members, admin_only: false }
        });
    }
    Ok(RoleCmd::Alter { role, opts })
}

pub fn analyze_set(s: &pb::AlterRoleSetStmt) -> Result<RoleCmd> {
    if !s.database.is_empty() {
        return Err(SqlError::not_supported("ALTER ROLE ... IN DATABASE"));
    }
    let role = match &s.role {
        Some(r) => role_ref(r),
        None => return Err(SqlError::not_supported("ALTER ROLE ALL ... SET")),
    };
    let Some(set) = &s.setstmt else { return Err(SqlError::internal("ALTER ROLE SET without a setting")) };
    use pb::VariableSetKind as K;
    let (name, value) = match K::try_from(set.kind).unwrap_or(K::Undefined) {
        K::VarSetValue => (Some(set.name.to_ascii_lowercase()), Some(crate::analyze::set_value_text(&set.args)?)),
        K::VarReset | K::VarSetDefault => (Some(set.name.to_ascii_lowercase()), None),
        K::VarResetAll => (None, None),
        _ => return Err(SqlError::not_supported("this form of ALTER ROLE ... SET")),
    };
    Ok(RoleCmd::Set { role, name, value })
}

pub fn analyze_drop(s: &pb::DropRoleStmt) -> Result<RoleCmd> {
    let mut names = Vec::new();
    for r in &s.roles {
        match node_role(r) {
            Some(RoleRef::Name(n)) => names.push(n),
            Some(RoleRef::Public) => return Err(SqlError::new(b"42939", "role name \"public\" is reserved")),
            Some(_) => return Err(SqlError::new(b"0A000", "cannot use special role specifier in DROP ROLE")),
            None => {}
        }
    }
    Ok(RoleCmd::Drop { names, missing_ok: s.missing_ok })
}

pub fn analyze_grant(s: &pb::GrantRoleStmt) -> Result<RoleCmd> {
    let roles: Vec<String> = s
        .granted_roles
        .iter()
        .filter_map(|n| match n.node.as_ref() {
            Some(NodeEnum::AccessPriv(p)) => Some(p.priv_name.clone()),
            _ => None,
        })
        .collect();
    let members: Vec<RoleRef> = s.grantee_roles.iter().filter_map(node_role).collect();
    if s.grantor.is_some() {
        return Err(SqlError::not_supported("GRANTED BY"));
    }
    let mut admin = false;
    for o in &s.opt {
        let Some(NodeEnum::DefElem(d)) = &o.node else { continue };
        match d.defname.as_str() {
            "admin" => admin = if s.is_grant { def_bool(d)? } else { true },
            other => {
                return Err(SqlError::new(b"42601", format!("unrecognized role option \"{other}\"")));
            }
        }
    }
    Ok(if s.is_grant { RoleCmd::Grant { roles, members, admin } } else { RoleCmd::Revoke { roles, members, admin_only: admin } })
}

/// Runs a role command in the session's transaction; returns the tag.
pub fn execute(backend: &mut Backend, snap: &Snapshot, cmd: &RoleCmd, encryption: &str, out: &mut dyn Output) -> Result<String> {
    let me = by_oid(backend, snap, backend.current_user)?.ok_or_else(|| SqlError::new(b"42704", "current role does not exist"))?;
    let roles = list(backend, snap)?;
    let find = |name: &str| roles.iter().find(|(_, r)| r.name == name).cloned();
    let (current_user, session_user) = (backend.current_user, backend.session_user);
    let resolve = |r: &RoleRef| -> Result<(Tid, RoleRow)> {
        match r {
            RoleRef::Name(n) => find(n).ok_or_else(|| does_not_exist(n)),
            RoleRef::CurrentUser => roles.iter().find(|(_, x)| x.oid == current_user).cloned().ok_or_else(|| does_not_exist("current_user")),
            RoleRef::SessionUser => roles.iter().find(|(_, x)| x.oid == session_user).cloned().ok_or_else(|| does_not_exist("session_user")),
            RoleRef::Public => Err(SqlError::new(b"42704", "role \"public\" does not exist")),
        }
    };
    let enc = password::Encryption::from_setting(encryption);
    match cmd {
        RoleCmd::Create { name, opts } => {
            if !me.superuser && !me.createrole {
                return Err(SqlError::new(b"42501", "permission denied to create role"));
            }
            if opts.superuser == Some(true) && !me.superuser {
                return Err(SqlError::new(b"42501", "must be superuser to create superusers"));
            }
            if opts.replication == Some(true) && !me.superuser {
                return Err(SqlError::new(b"42501", "must be superuser to create replication users"));
            }
            if opts.bypassrls == Some(true) && !me.superuser {
                return Err(SqlError::new(b"42501", "must be superuser to create bypassrls users"));
            }
            if name.starts_with("pg_") {
                return Err(SqlError::new(b"42939", format!("role name \"{name}\" is reserved"))
                    .with_detail("Role names starting with \"pg_\" are reserved."));
            }
            if find(name).is_some() {
                return Err(SqlError::new(b"42710", format!("role \"{name}\" already exists")));
            }
            let mut row = RoleRow::new(backend.engine().new_oid(), name);
            apply(&mut row, opts, enc)?;
            insert_row(backend, &authid_rel(), &row.values())?;
            let mut members = memberships(backend, snap)?;
            let mut new_roles = roles.clone();
            new_roles.push((Tid { block: 0, offset: 0 }, row.clone()));
            for r in &opts.in_role {
                let (_, target) = resolve_name(&new_roles, r, backend)?;
                add_member(backend, &mut members, &me, &target, &row, false, out)?;
            }
            for (list, admin) in [(&opts.role, false), (&opts.admin, true)] {
                for m in list {
                    let (_, member) = resolve_name(&new_roles, m, backend)?;
                    add_member(backend, &mut members, &me, &row, &member, admin, out)?;
                }
            }
            Ok("CREATE ROLE".into())
        }
        RoleCmd::Alter { role, opts } => {
            let (tid, mut row) = resolve(role)?;
            let only_password = opts.password.is_some()
                && opts.superuser.is_none()
                && opts.createdb.is_none()
                && opts.createrole.is_none()
                && opts.inherit.is_none()
                && opts.login.is_none()
                && opts.replication.is_none()
                && opts.bypassrls.is_none()
                && opts.connlimit.is_none()
                && opts.valid_until.is_none()
                && opts.role.is_empty()
                && opts.admin.is_empty();
            if row.superuser || opts.superuser.is_some() {
                if !me.superuser {
                    return Err(SqlError::new(b"42501", "must be superuser to alter superuser roles or change superuser attribute"));
                }
            } else if row.replication || opts.replication.is_some() {
                if !me.superuser {
                    return Err(SqlError::new(b"42501", "must be superuser to alter replication roles or change replication attribute"));
                }
            } else if opts.bypassrls.is_some() {
                if !me.superuser {
                    return Err(SqlError::new(b"42501", "must be superuser to change bypassrls attribute"));
                }
            } else if !(me.superuser || me.createrole || (only_password && row.oid == me.oid)) {
                return Err(SqlError::new(b"42501", "permission denied"));
            }
            if row.oid == BOOTSTRAP_SUPERUSER && opts.superuser == Some(false) {
                return Err(SqlError::new(b"42501", "permission denied: bootstrap user must be superuser"));
            }
            apply(&mut row, opts, enc)?;
            replace(backend, tid, &row)?;
            Ok("ALTER ROLE".into())
        }
        RoleCmd::Set { role, name, value } => {
            let (tid, mut row) = resolve(role)?;
            if !me.superuser && row.oid != me.oid && (row.superuser || !me.createrole) {
                return Err(SqlError::new(b"42501", "permission denied"));
            }
            match name {
                None => row.config.clear(),
                Some(n) => {
                    if let Some(v) = value {
                        let g = ferrogres_engine::config::guc::find(n);
                        if let Some(g) = g {
                            g.parse(n, v)?;
                        }
                    }
                    row.config.retain(|c| !matches!(c.split_once('='), Some((k, _)) if k == n));
                    if let Some(v) = value {
                        row.config.push(format!("{n}={v}"));
                    }
                }
            }
            replace(backend, tid, &row)?;
            Ok("ALTER ROLE".into())
        }
        RoleCmd::Rename { name, new_name } => {
            let (tid, mut row) = find(name).ok_or_else(|| does_not_exist(name))?;
            if row.oid == backend.session_user {
                return Err(SqlError::new(b"0A000", "session user cannot be renamed"));
            }
            if row.oid == backend.current_user {
                return Err(SqlError::new(b"0A000", "current user cannot be renamed"));
            }
            if BUILTIN.iter().any(|(o, _)| *o == row.oid && *o != BOOTSTRAP_SUPERUSER) {
                return Err(SqlError::new(b"42939", format!("role name \"{name}\" is reserved"))
                    .with_detail("Role names starting with \"pg_\" are reserved."));
            }
            if new_name.starts_with("pg_") {
                return Err(SqlError::new(b"42939", format!("role name \"{new_name}\" is reserved"))
                    .with_detail("Role names starting with \"pg_\" are reserved."));
            }
            if find(new_name).is_some() {
                return Err(SqlError::new(b"42710", format!("role \"{new_name}\" already exists")));
            }
            if row.superuser && !me.superuser {
                return Err(SqlError::new(b"42501", "must be superuser to rename superusers"));
            }
            if !me.superuser && !me.createrole {
                return Err(SqlError::new(b"42501", "permission denied to rename role"));
            }
            row.name = new_name.clone();
            // An MD5 verifier is salted with the name: it no longer matches.
            if row.password.as_deref().is_some_and(|p| password::password_type(p) == password::PasswordType::Md5) {
                row.password = None;
                out.notice(&SqlError::notice(b"00000", "MD5 password cleared because of role rename"))?;
            }
            replace(backend, tid, &row)?;
            Ok("ALTER ROLE".into())
        }
        RoleCmd::Drop { names, missing_ok } => {
            if !me.superuser && !me.createrole {
                return Err(SqlError::new(b"42501", "permission denied to drop role"));
            }
            for name in names {
                let Some((tid, row)) = find(name) else {
                    if *missing_ok {
                        out.notice(&SqlError::notice(b"00000", format!("role \"{name}\" does not exist, skipping")))?;
                        continue;
                    }
                    return Err(does_not_exist(name));
                };
                if row.oid == backend.current_user {
                    return Err(SqlError::new(b"55006", "current user cannot be dropped"));
                }
                if row.oid == backend.session_user {
                    return Err(SqlError::new(b"55006", "session user cannot be dropped"));
                }
                if row.superuser && !me.superuser {
                    return Err(SqlError::new(b"42501", "must be superuser to drop superusers"));
                }
                if BUILTIN.iter().any(|(o, _)| *o == row.oid) {
                    return Err(SqlError::new(b"2BP01", format!("cannot drop role {name} because it is required by the database system")));
                }
                let owned = crate::acl::role_dependents(backend, snap, row.oid)?;
                if !owned.is_empty() {
                    return Err(SqlError::new(b"2BP01", format!("role \"{name}\" cannot be dropped because some objects depend on it"))
                        .with_detail(owned.join("\n")));
                }
                delete(backend, &authid_rel(), tid)?;
                // Its memberships go with it, both ways.
                for (mtid, m) in memberships(backend, snap)? {
                    if m.role == row.oid || m.member == row.oid {
                        delete(backend, &members_rel(), mtid)?;
                    }
                }
            }
            Ok("DROP ROLE".into())
        }
        RoleCmd::Grant { roles: granted, members: grantees, admin } => {
            let mut members = memberships(backend, snap)?;
            for g in granted {
                let (_, role) = find(g).ok_or_else(|| does_not_exist(g))?;
                for m in grantees {
                    let (_, member) = resolve(m)?;
                    add_member(backend, &mut members, &me, &role, &member, *admin, out)?;
                }
            }
            Ok("GRANT ROLE".into())
        }
        RoleCmd::Revoke { roles: granted, members: grantees, admin_only } => {
            let members = memberships(backend, snap)?;
            for g in granted {
                let (_, role) = find(g).ok_or_else(|| does_not_exist(g))?;
                check_admin(&members, &me, &role)?;
                for m in grantees {
                    let (_, member) = resolve(m)?;
                    match members.iter().find(|(_, x)| x.role == role.oid && x.member == member.oid) {
                        None => out.notice(&SqlError {
                            severity: ferrogres_datum::errors::Severity::Warning,
                            ..SqlError::notice(b"01000", format!("role \"{}\" is not a member of role \"{}\"", member.name, role.name))
                        })?,
                        Some((tid, x)) => {
                            delete(backend, &members_rel(), *tid)?;
                            if *admin_only {
                                insert_row(backend, &members_rel(), &MemberRow { admin: false, ..x.clone() }.values())?;
                            }
                        }
                    }
                }
            }
            Ok("REVOKE ROLE".into())
        }
    }
}

fn resolve_name(roles: &[(Tid, RoleRow)], name: &str, backend: &Backend) -> Result<(Tid, RoleRow)> {
    let hit = match name {
        "\u{0}current" => roles.iter().find(|(_, r)| r.oid == backend.current_user),
        "\u{0}session" => roles.iter().find(|(_, r)| r.oid == backend.session_user),
        n => roles.iter().find(|(_, r)| r.name == n),
    };
    hit.cloned().ok_or_else(|| does_not_exist(name))
}

/// Granting or revoking membership in `role` needs superuser (for a
/// superuser role), else CREATEROLE or ADMIN OPTION on it.
fn check_admin(members: &[(Tid, MemberRow)], me: &RoleRow, role: &RoleRow) -> Result<()> {
    if me.superuser {
        return Ok(());
    }
    if role.superuser {
        return Err(SqlError::new(b"42501", "must be superuser to alter superusers"));
    }
    if me.createrole || members.iter().any(|(_, m)| m.role == role.oid && m.member == me.oid && m.admin) {
        return Ok(());
    }
    Err(SqlError::new(b"42501", format!("must have admin option on role \"{}\"", role.name)))
}

fn add_member(
    backend: &mut Backend,
    members: &mut Vec<(Tid, MemberRow)>,
    me: &RoleRow,
    role: &RoleRow,
    member: &RoleRow,
    admin: bool,
    out: &mut dyn Output,
) -> Result<()> {
    check_admin(members, me, role)?;
    if role.oid == PG_DATABASE_OWNER {
        // PostgreSQL raises it with elog: XX000.
        return Err(SqlError::new(b"XX000", format!("role \"{}\" cannot have explicit members", role.name)));
    }
    // No cycles: the role may not already be (or be a member of) the new member.
    if is_member_of(members, role.oid, member.oid) {
        return Err(SqlError::new(b"0LP01", format!("role \"{}\" is a member of role \"{}\"", role.name, member.name)));
    }
    if let Some((tid, existing)) = members.iter().find(|(_, m)| m.role == role.oid && m.member == member.oid).cloned() {
        if existing.admin || !admin {
            out.notice(&SqlError::notice(b"00000", format!("role \"{}\" is already a member of role \"{}\"", member.name, role.name)))?;
            return Ok(());
        }
        delete(backend, &members_rel(), tid)?;
        members.retain(|(t, _)| *t != tid);
    }
    let row = MemberRow { role: role.oid, member: member.oid, grantor: me.oid, admin };
    let tid = insert_row(backend, &members_rel(), &row.values())?;
    members.push((tid, row));
    Ok(())
}

fn apply(row: &mut RoleRow, o: &RoleOpts, enc: password::Encryption) -> Result<()> {
    let set = |f: &mut bool, v: Option<bool>| {
        if let Some(v) = v {
            *f = v;
        }
    };
    set(&mut row.superuser, o.superuser);
    set(&mut row.createdb, o.createdb);
    set(&mut row.createrole, o.createrole);
    set(&mut row.inherit, o.inherit);
    set(&mut row.canlogin, o.login);
    set(&mut row.replication, o.replication);
    set(&mut row.bypassrls, o.bypassrls);
    if let Some(l) = o.connlimit {
        row.connlimit = l;
    }
    if let Some(p) = &o.password {
        row.password = match p {
            // An empty password is no password (PostgreSQL: NOTICE and NULL).
            Some(p) if p.is_empty() => None,
            Some(p) => Some(password::encrypt(p, &row.name, enc)),
            None => None,
        };
    }
    if let Some(v) = &o.valid_until {
        row.valid_until = Some(ferrogres_datum::datetime::timestamptz_in(v)?);
    }
    Ok(())
}

fn replace(backend: &mut Backend, tid: Tid, row: &RoleRow) -> Result<()> {
    delete(backend, &authid_rel(), tid)?;
    insert_row(backend, &authid_rel(), &row.values())?;
    Ok(())
}

fn delete(backend: &mut Backend, st: &RelStorage, tid: Tid) -> Result<()> {
    match crate::catcache::heap_delete(backend, st.rel, tid, None)? {
        TmResult::Ok | TmResult::SelfModified => Ok(()),
        _ => Err(SqlError::new(b"40001", "could not serialize access due to concurrent update")),
    }
}

// ---- SET ROLE / SET SESSION AUTHORIZATION -----------------------------------------

/// `SET ROLE name` (`None`: `RESET ROLE` / `SET ROLE NONE`): the current user
/// becomes `name`, which the session user must be a member of (or a
/// superuser). Returns the setting's new value.
pub fn set_role(backend: &mut Backend, snap: &Snapshot, name: Option<&str>) -> Result<String> {
    let session = by_oid(backend, snap, backend.session_user)?.ok_or_else(|| SqlError::new(b"42704", "session user does not exist"))?;
    let Some(name) = name.filter(|n| !n.eq_ignore_ascii_case("none")) else {
        backend.current_user = session.oid;
        return Ok("none".into());
    };
    let Some((_, role)) = find(backend, snap, name)? else {
        return Err(SqlError::new(b"22023", format!("role \"{name}\" does not exist")));
    };
    if !session.superuser && !is_member_of(&memberships(backend, snap)?, session.oid, role.oid) {
        return Err(SqlError::new(b"42501", format!("permission denied to set role \"{name}\"")));
    }
    backend.current_user = role.oid;
    Ok(role.name)
}

/// `SET SESSION AUTHORIZATION name` (`None`: `RESET` / `DEFAULT`, back to
/// `authenticated`, the role the connection logged in as): only a session
/// that authenticated as a superuser may change it.
pub fn set_session_authorization(backend: &mut Backend, snap: &Snapshot, authenticated: u32, name: Option<&str>) -> Result<String> {
    let auth = by_oid(backend, snap, authenticated)?.ok_or_else(|| SqlError::new(b"42704", "authenticated user does not exist"))?;
    let target = match name {
        None => auth.clone(),
        Some(n) => find(backend, snap, n)?.map(|x| x.1).ok_or_else(|| SqlError::new(b"22023", format!("role \"{n}\" does not exist")))?,
    };
    if target.oid != auth.oid && !auth.superuser {
        return Err(SqlError::new(b"42501", "permission denied to set session authorization"));
    }
    backend.session_user = target.oid;
    backend.current_user = target.oid;
    Ok(target.name)
}
