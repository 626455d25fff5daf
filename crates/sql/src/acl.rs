//! Object privileges: access control lists (PostgreSQL's `aclitem[]`), their
//! defaults, and the checks made before a statement runs.
//!
//! An ACL is a list of items `grantee=privileges/grantor`. Each privilege is one
//! bit (PostgreSQL's letters, in its order: `a` INSERT, `r` SELECT, `w` UPDATE,
//! `d` DELETE, `D` TRUNCATE, `x` REFERENCES, `t` TRIGGER, `X` EXECUTE, `U`
//! USAGE, `C` CREATE, `T` TEMPORARY, `c` CONNECT, `s` SET, `A` ALTER SYSTEM:
//! the last two on configuration parameters); a `*` after a letter is the
//! grant option for it. Grantee 0 is PUBLIC (written as an empty name).
//!
//! Storage: `pg_class.relacl` (column 11 of the stored row, after `relowner`),
//! `pg_namespace.nspacl` (column 3, after `nspowner`), `pg_proc.proacl`
//! (column 13 after `proowner`, [`crate::sqlfunc`]), as `text[]` whose items
//! name roles by OID (`16384=arwdDxt/10`), so that renaming a role changes
//! nothing stored; the pg_catalog views print names (`alice=arwdDxt/postgres`)
//! as PostgreSQL's aclitem output does. NULL means the owner's default
//! ([`default_acl`]), as in PostgreSQL; the first GRANT or REVOKE stores the
//! default with the change applied.
//!
//! Who holds a privilege ([`Privs`]): a superuser holds every one; otherwise
//! the union of the items whose grantee is PUBLIC or a role whose privileges
//! the user has: the user itself and, through INHERIT, the roles it is a
//! member of (PostgreSQL's has_privs_of_role). The owner's privileges are items
//! of the ACL like anyone's (the default gives them all), but the owner always
//! holds every grant option (it may GRANT and REVOKE what it revoked from
//! itself).
//!
//! Column privileges: `pg_attribute.attacl` (column 9 of the stored row,
//! [`ATTACL`]), stored like relacl; NULL means the column has no privileges
//! of its own (its table's apply). A column holds its table's privileges and
//! its own.
//!
//! Checks: analysis records what a statement needs ([`PermReq`]: relation,
//! privileges, the role to check as: the view owner under a view, and the
//! columns named for each privilege, [`ColSets`]) in the backend's catalog
//! cache; the session keeps the list with the plan and runs
//! [`check_perms`] before each execution, so a cached or prepared plan is
//! checked again every time it runs (a REVOKE takes effect on the next
//! execution, as PostgreSQL's ExecCheckPermissions at executor start). The
//! table's ACL is looked at first; only when it falls short are the columns'
//! ACLs read (one scan of pg_attribute), so a role with table-level grants or
//! the owner pays nothing for column privileges:
//! - SELECT / INSERT / UPDATE / REFERENCES missing at table level: each column
//!   named for it must hold it on its own; none named (`count(*)`, `SELECT 1
//!   FROM t`, `DEFAULT VALUES`): any column will do; attnum 0 (a whole row):
//!   every column;
//! - any other privilege missing (DELETE, TRUNCATE, ...): 42501;
//! - the error is PostgreSQL 15's `permission denied for table t` either way.
//!
//! A call of a SQL function records EXECUTE on it ([`PermReq::func`]),
//! checked at the same time against pg_proc.proacl as the current user,
//! also under a view (PostgreSQL checks function calls as the caller):
//! `permission denied for function f`. Built-in functions keep PUBLIC's
//! EXECUTE (has_function_privilege answers from that default for them).

use ferrogres_datum::errors::{Result, SqlError};
use crate::roles::{self, BOOTSTRAP_SUPERUSER};
use ferrogres_datum::types::{Type, Value};
use ferrogres_engine::engine::Backend;
use ferrogres_engine::txn::snapshot::Snapshot;
use std::sync::Arc;

pub const INSERT: u16 = 1 << 0;
pub const SELECT: u16 = 1 << 1;
pub const UPDATE: u16 = 1 << 2;
pub const DELETE: u16 = 1 << 3;
pub const TRUNCATE: u16 = 1 << 4;
pub const REFERENCES: u16 = 1 << 5;
pub const TRIGGER: u16 = 1 << 6;
pub const EXECUTE: u16 = 1 << 7;
pub const USAGE: u16 = 1 << 8;
pub const CREATE: u16 = 1 << 9;
pub const TEMP: u16 = 1 << 10;
pub const CONNECT: u16 = 1 << 11;
/// SET on a superuser-only configuration parameter (`s`).
pub const SET: u16 = 1 << 12;
/// ALTER SYSTEM on a configuration parameter (`A`).
pub const ALTER_SYSTEM: u16 = 1 << 13;

/// The letters of the privileges, bit 0 first (PostgreSQL's ACL_ALL_RIGHTS_STR).
const LETTERS: &[u8; 14] = b"arwdDxtXUCTcsA";

/// PUBLIC as a grantee.
pub const PUBLIC: u32 = 0;
/// pg_database_owner: its members are the current database's owner.
pub const PG_DATABASE_OWNER: u32 = 6171;

/// The kinds of objects that have ACLs, with their privileges.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjKind {
    Table,
    View,
    Sequence,
    Schema,
    Database,
    Function,
    /// A type (only default privileges name types so far: there are no
    /// user-defined types yet).
    Type,
    /// A configuration parameter (pg_parameter_acl, [`crate::param_acl`]).
    Parameter,
}

impl ObjKind {
    /// Every privilege the kind has (PostgreSQL's ACL_ALL_RIGHTS_*).
    pub fn all(self) -> u16 {
        match self {
            ObjKind::Table | ObjKind::View => INSERT | SELECT | UPDATE | DELETE | TRUNCATE | REFERENCES | TRIGGER,
            ObjKind::Sequence => USAGE | SELECT | UPDATE,
            ObjKind::Schema => USAGE | CREATE,
            ObjKind::Database => CREATE | TEMP | CONNECT,
            ObjKind::Function => EXECUTE,
            ObjKind::Type => USAGE,
            ObjKind::Parameter => SET | ALTER_SYSTEM,
        }
    }

    /// The word of PostgreSQL's messages (`permission denied for table t`).
    pub fn word(self) -> &'static str {
        match self {
            ObjKind::Table => "table",
            ObjKind::View => "view",
            ObjKind::Sequence => "sequence",
            ObjKind::Schema => "schema",
            ObjKind::Database => "database",
            ObjKind::Function => "function",
            ObjKind::Type => "type",
            ObjKind::Parameter => "parameter",
        }
    }

    /// The kind of a pg_class row's relkind.
    pub fn of_relkind(kind: &str) -> ObjKind {
        match kind {
            "v" => ObjKind::View,
            "S" => ObjKind::Sequence,
            _ => ObjKind::Table,
        }
    }
}

/// One item of an ACL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AclItem {
    pub grantee: u32,
    pub grantor: u32,
    pub privs: u16,
    /// Grant options: a subset of `privs`.
    pub goptions: u16,
}

pub type Acl = Vec<AclItem>;

/// The ACL an object has while its ACL column is NULL (PostgreSQL's acldefault).
pub fn default_acl(kind: ObjKind, owner: u32) -> Acl {
    let own = AclItem { grantee: owner, grantor: owner, privs: kind.all(), goptions: 0 };
    match kind {
        ObjKind::Database => vec![AclItem { grantee: PUBLIC, grantor: owner, privs: TEMP | CONNECT, goptions: 0 }, own],
        ObjKind::Function => vec![AclItem { grantee: PUBLIC, grantor: owner, privs: EXECUTE, goptions: 0 }, own],
        ObjKind::Type => vec![AclItem { grantee: PUBLIC, grantor: owner, privs: USAGE, goptions: 0 }, own],
        _ => vec![own],
    }
}

/// The `privs` letters with `*` for grant options (aclitemout's right side).
pub fn privs_text(privs: u16, goptions: u16) -> String {
    let mut s = String::new();
    for (i, l) in LETTERS.iter().enumerate() {
        if privs & (1 << i) != 0 {
            s.push(*l as char);
            if goptions & (1 << i) != 0 {
                s.push('*');
            }
        }
    }
    s
}

fn parse_privs(s: &str) -> Option<(u16, u16)> {
    let (mut privs, mut go) = (0u16, 0u16);
    let mut last = None;
    for b in s.bytes() {
        if b == b'*' {
            go |= last?;
            continue;
        }
        let i = LETTERS.iter().position(|l| *l == b)?;
        privs |= 1 << i;
        last = Some(1 << i);
    }
    Some((privs, go))
}

/// The stored form of an ACL (`text[]`, roles by OID).
pub fn to_stored(acl: &[AclItem]) -> Value {
    let items = acl
        .iter()
        .map(|i| {
            let grantee = if i.grantee == PUBLIC { String::new() } else { i.grantee.to_string() };
            Value::Text(format!("{grantee}={}/{}", privs_text(i.privs, i.goptions), i.grantor))
        })
        .collect();
    Value::Array(Box::new(ferrogres_datum::array::Array::new(Type::Text, items)))
}

/// Reads a stored ACL; `None` for NULL (the default).
pub fn from_stored(v: Option<&Value>) -> Option<Acl> {
    let Some(Value::Array(a)) = v else { return None };
    let mut out = Vec::new();
    for it in &a.items {
        let Value::Text(t) = it else { continue };
        let (grantee, rest) = t.split_once('=')?;
        let (privs, grantor) = rest.rsplit_once('/')?;
        let (privs, goptions) = parse_privs(privs)?;
        let grantee = if grantee.is_empty() { PUBLIC } else { grantee.parse().ok()? };
        out.push(AclItem { grantee, grantor: grantor.parse().ok()?, privs, goptions });
    }
    Some(out)
}

/// A role name as aclitemout writes it: quoted when it holds anything but
/// letters, digits and underscores (PostgreSQL's putid).
fn putid(name: &str) -> String {
    if !name.is_empty() && name.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return name.to_string();
    }
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// The printed form of an ACL (PostgreSQL's aclitem[] output), roles by name.
pub fn display(acl: &[AclItem], name_of: &dyn Fn(u32) -> String) -> Value {
    let items = acl
        .iter()
        .map(|i| {
            let grantee = if i.grantee == PUBLIC { String::new() } else { putid(&name_of(i.grantee)) };
            Value::Text(format!("{grantee}={}/{}", privs_text(i.privs, i.goptions), putid(&name_of(i.grantor))))
        })
        .collect();
    Value::Array(Box::new(ferrogres_datum::array::Array::new(Type::Text, items)))
}

// ---- roles ------------------------------------------------------------------

/// What privilege checks need of pg_authid and pg_auth_members.
#[derive(Debug, Default)]
pub struct RoleGraph {
    /// (oid, name, superuser, inherit)
    roles: Vec<(u32, String, bool, bool)>,
    /// (role, member)
    members: Vec<(u32, u32)>,
    /// The current database's owner (datdba): pg_database_owner's member.
    pub db_owner: u32,
}

impl RoleGraph {
    pub fn load(backend: &Backend, snap: &Snapshot) -> Result<RoleGraph> {
        let roles = roles::list(backend, snap)?.into_iter().map(|(_, r)| (r.oid, r.name, r.superuser, r.inherit)).collect();
        let members = roles::memberships(backend, snap)?.into_iter().map(|(_, m)| (m.role, m.member)).collect();
        let db = backend.database();
        let db_owner = crate::database::cached(backend, snap)?.iter().find(|d| d.oid == db).map_or(BOOTSTRAP_SUPERUSER, |d| d.dba);
        Ok(RoleGraph { roles, members, db_owner })
    }

    pub fn name(&self, oid: u32) -> String {
        match self.roles.iter().find(|r| r.0 == oid) {
            Some(r) => r.1.clone(),
            None => format!("unknown (OID={oid})"),
        }
    }

    pub fn oid(&self, name: &str) -> Option<u32> {
        self.roles.iter().find(|r| r.1 == name).map(|r| r.0)
    }

    /// Every role: (oid, name).
    pub fn all(&self) -> impl Iterator<Item = (u32, &str)> {
        self.roles.iter().map(|r| (r.0, r.1.as_str()))
    }

    pub fn superuser(&self, oid: u32) -> bool {
        self.roles.iter().any(|r| r.0 == oid && r.2)
    }

    fn inherits(&self, oid: u32) -> bool {
        self.roles.iter().any(|r| r.0 == oid && r.3)
    }

    /// The roles whose privileges `user` has: itself, and the roles it is a
    /// member of through roles that inherit (PostgreSQL 15's
    /// has_privs_of_role: a NOINHERIT role stops the walk at itself).
    pub fn privs_of(&self, user: u32) -> Vec<u32> {
        let mut seen = vec![user];
        let mut i = 0;
        while i < seen.len() {
            let cur = seen[i];
            i += 1;
            if !self.inherits(cur) {
                continue;
            }
            for (role, member) in &self.members {
                if *member == cur && !seen.contains(role) {
                    seen.push(*role);
                }
            }
        }
        seen
    }

    /// Whether `user` has the privileges of `role` (a superuser has everyone's).
    pub fn has_privs_of(&self, user: u32, role: u32) -> bool {
        self.superuser(user) || self.privs_of(user).contains(&role)
    }
}

/// The role graph, from this backend's cache when it is current.
pub fn role_graph(backend: &Backend, snap: &Snapshot) -> Result<Arc<RoleGraph>> {
    crate::catcache::role_graph(backend, snap, || RoleGraph::load(backend, snap))
}

// ---- privilege computation ------------------------------------------------------

/// The privileges (and grant options) `user` holds on an object: `owner`'s,
/// with `acl` (None: the default). `db_owner`: the current database's owner,
/// the one member of pg_database_owner.
pub fn privs(roles: &RoleGraph, user: u32, kind: ObjKind, owner: u32, acl: Option<&[AclItem]>, db_owner: u32) -> (u16, u16) {
    if roles.superuser(user) {
        return (kind.all(), kind.all());
    }
    let mut mine = roles.privs_of(user);
    if mine.contains(&db_owner) && !mine.contains(&PG_DATABASE_OWNER) {
        mine.push(PG_DATABASE_OWNER);
    }
    let default;
    let acl = match acl {
        Some(a) => a,
        None => {
            default = default_acl(kind, owner);
            &default
        }
    };
    let (mut p, mut g) = (0, 0);
    for it in acl {
        if it.grantee == PUBLIC || mine.contains(&it.grantee) {
            p |= it.privs;
            g |= it.goptions;
        }
    }
    if mine.contains(&owner) {
        g |= kind.all();
    }
    (p, g)
}

// ---- objects' ACLs ------------------------------------------------------------------

/// A relation's owner and ACL (pg_class), as privilege checks read them.
#[derive(Clone, Debug)]
pub struct RelAcl {
    pub oid: u32,
    pub name: String,
    pub namespace: u32,
    pub kind: ObjKind,
    pub relkind: String,
    pub owner: u32,
    pub acl: Option<Acl>,
}

/// Column numbers of the stored pg_class row.
pub const RELOWNER: usize = 10;
pub const RELACL: usize = 11;
/// Column numbers of the stored pg_namespace row.
pub const NSPOWNER: usize = 2;
pub const NSPACL: usize = 3;

fn oid_col(row: &[Value], i: usize, default: u32) -> u32 {
    match row.get(i) {
        Some(Value::Oid(o)) => *o,
        _ => default,
    }
}

/// Relation `oid`'s owner and ACL, from this backend's cache or pg_class.
pub fn rel_acl(backend: &Backend, snap: &Snapshot, oid: u32) -> Result<Option<Arc<RelAcl>>> {
    if let Some(r) = crate::catcache::rel_acl(backend, oid) {
        return Ok(Some(r));
    }
    let mut found = None;
    for (_, row) in crate::rowio::scan_rows(backend, &crate::catalog::class_rel(), snap)? {
        if row[0] != Value::Oid(oid) {
            continue;
        }
        let (Value::Text(name), Value::Oid(ns), Value::Text(kind)) = (&row[1], &row[2], &row[5]) else { continue };
        found = Some(Arc::new(RelAcl {
            oid,
            name: name.clone(),
            namespace: *ns,
            kind: ObjKind::of_relkind(kind),
            relkind: kind.clone(),
            owner: oid_col(&row, RELOWNER, BOOTSTRAP_SUPERUSER),
            acl: rel_acl_of_row(oid, *ns, ObjKind::of_relkind(kind), oid_col(&row, RELOWNER, BOOTSTRAP_SUPERUSER), row.get(RELACL)),
        }));
        break;
    }
    if let Some(r) = &found {
        crate::catcache::put_rel_acl(backend, snap, r);
    }
    Ok(found)
}

/// The catalogs whose SELECT PostgreSQL's initdb does not give to PUBLIC
/// (pg_authid, pg_largeobject, pg_statistic, pg_user_mapping).
const PRIVATE_CATALOGS: [u32; 4] = [1260, 2613, 2619, 1418];

/// Relation `oid`'s ACL as its pg_class row gives it: the stored one; for a
/// system catalog (schema pg_catalog) whose row stores none, what PostgreSQL's
/// initdb gives every catalog: the owner's default plus SELECT for PUBLIC
/// (`{postgres=arwdDxt/postgres,=r/postgres}`; the owner's alone for the
/// private ones); else None (the default).
pub fn rel_acl_of_row(oid: u32, ns: u32, kind: ObjKind, owner: u32, stored: Option<&Value>) -> Option<Acl> {
    let acl = from_stored(stored);
    if acl.is_some() || ns != crate::catalog::PG_CATALOG_NAMESPACE {
        return acl;
    }
    let mut acl = default_acl(kind, owner);
    if !PRIVATE_CATALOGS.contains(&oid) {
        acl.push(AclItem { grantee: PUBLIC, grantor: owner, privs: SELECT, goptions: 0 });
    }
    Some(acl)
}

/// A schema's owner and ACL.
#[derive(Clone, Debug)]
pub struct NsAcl {
    pub oid: u32,
    pub name: String,
    pub owner: u32,
    pub acl: Option<Acl>,
}

/// The owner a schema has while its row stores none (rows from before owners
/// were stored): `public` belongs to pg_database_owner, the rest to the
/// bootstrap superuser, as after PostgreSQL 15's initdb.
pub fn default_nsp_owner(oid: u32) -> u32 {
    if oid == crate::catalog::PUBLIC_NAMESPACE {
        PG_DATABASE_OWNER
    } else {
        BOOTSTRAP_SUPERUSER
    }
}

/// The ACL of schema `public` while it stores none: PostgreSQL 15's
/// `{pg_database_owner=UC/pg_database_owner,=U/pg_database_owner}`.
pub fn public_schema_acl() -> Acl {
    vec![
        AclItem { grantee: PG_DATABASE_OWNER, grantor: PG_DATABASE_OWNER, privs: USAGE | CREATE, goptions: 0 },
        AclItem { grantee: PUBLIC, grantor: PG_DATABASE_OWNER, privs: USAGE, goptions: 0 },
    ]
}

/// Every schema's owner and ACL.
pub fn ns_acls(backend: &Backend, snap: &Snapshot) -> Result<Arc<Vec<NsAcl>>> {
    crate::catcache::ns_acls(backend, snap, || {
        let mut out = Vec::new();
        for (_, row) in crate::rowio::scan_rows(backend, &crate::catalog::namespace_rel(), snap)? {
            let (Value::Oid(oid), Value::Text(name)) = (&row[0], &row[1]) else { continue };
            let mut acl = from_stored(row.get(NSPACL));
            if acl.is_none() && *oid == crate::catalog::PUBLIC_NAMESPACE {
                acl = Some(public_schema_acl());
            }
            out.push(NsAcl { oid: *oid, name: name.clone(), owner: oid_col(&row, NSPOWNER, default_nsp_owner(*oid)), acl });
        }
        Ok(out)
    })
}

// ---- checks ----------------------------------------------------------------------------

/// What a statement needs on one relation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PermReq {
    pub rel: u32,
    /// Privileges needed (all of them, or any one when `any`).
    pub privs: u16,
    pub any: bool,
    /// Check as this role (a view's owner) rather than the current user.
    pub check_as: Option<u32>,
    /// The columns the statement reads, inserts and updates (PostgreSQL's
    /// selectedCols / insertedCols / updatedCols), looked at only when the
    /// table-level privileges fall short. `None`: the statement's path does
    /// not track them, and every column counts as named (never less strict
    /// than PostgreSQL).
    pub cols: Option<Box<ColSets>>,
    /// `rel` is a function (pg_proc OID) and `privs` EXECUTE: a call of a SQL
    /// function, checked as the current user even under a view (as
    /// PostgreSQL's executor checks EXECUTE as the caller).
    pub func: bool,
}

/// Column numbers (attnum, 1-based; 0: the whole row, i.e. every column) a
/// statement names, by the privilege it needs on them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ColSets {
    pub select: Vec<i16>,
    pub insert: Vec<i16>,
    pub update: Vec<i16>,
    /// A foreign key's referenced columns (REFERENCES).
    pub references: Vec<i16>,
}

impl ColSets {
    /// The set kept for `privilege` (SELECT, INSERT, UPDATE or REFERENCES).
    pub fn of_mut(&mut self, privilege: u16) -> Option<&mut Vec<i16>> {
        match privilege {
            SELECT => Some(&mut self.select),
            INSERT => Some(&mut self.insert),
            UPDATE => Some(&mut self.update),
            REFERENCES => Some(&mut self.references),
            _ => None,
        }
    }

    pub fn of(&self, privilege: u16) -> &[i16] {
        match privilege {
            SELECT => &self.select,
            INSERT => &self.insert,
            UPDATE => &self.update,
            REFERENCES => &self.references,
            _ => &[],
        }
    }

    /// Adds `attnum` to the set of `privilege`.
    pub fn add(&mut self, privilege: u16, attnum: i16) {
        // (a privilege without columns has no set: nothing to keep)
        if let Some(v) = self.of_mut(privilege) {
            if !v.contains(&attnum) {
                v.push(attnum);
            }
        }
    }

    /// Both recordings together (`None` absorbs: an untracked path wins).
    pub fn merge(a: &mut Option<Box<ColSets>>, b: &Option<Box<ColSets>>) {
        match (a.as_mut(), b) {
            (Some(x), Some(y)) => {
                for p in [SELECT, INSERT, UPDATE, REFERENCES] {
                    for &c in y.of(p) {
                        x.add(p, c);
                    }
                }
            }
            _ => *a = None,
        }
    }
}

/// The privileges that exist on columns (PostgreSQL's ACL_ALL_RIGHTS_COLUMN).
pub const COLUMN_PRIVS: u16 = INSERT | SELECT | UPDATE | REFERENCES;

pub fn denied(kind: ObjKind, name: &str) -> SqlError {
    SqlError::new(b"42501", format!("permission denied for {} {name}", kind.word()))
}

pub fn not_owner(kind: ObjKind, name: &str) -> SqlError {
    SqlError::new(b"42501", format!("must be owner of {} {name}", kind.word()))
}

/// Whether the current user is a superuser.
pub fn current_is_superuser(backend: &Backend, snap: &Snapshot) -> Result<bool> {
    Ok(role_graph(backend, snap)?.superuser(backend.current_user))
}

/// Runs the checks a plan recorded (executor start): 42501 for the first
/// relation whose privileges the role lacks.
pub fn check_perms(backend: &Backend, snap: &Snapshot, perms: &[PermReq]) -> Result<()> {
    if perms.is_empty() {
        return Ok(());
    }
    let roles = role_graph(backend, snap)?;
    let me = backend.current_user;
    if roles.superuser(me) && perms.iter().all(|p| p.check_as.is_none()) {
        return Ok(());
    }
    let db_owner = roles.db_owner;
    for p in perms {
        let user = p.check_as.unwrap_or(me);
        if roles.superuser(user) {
            continue;
        }
        if p.func {
            // A function dropped since the plan was made: its call fails elsewhere.
            let Some(f) = crate::sqlfunc::by_oid(backend, snap, p.rel)? else { continue };
            if privs(&roles, user, ObjKind::Function, f.owner, f.acl.as_deref(), db_owner).0 & EXECUTE == 0 {
                return Err(denied(ObjKind::Function, &f.name));
            }
            continue;
        }
        let Some(rel) = rel_acl(backend, snap, p.rel)? else { continue };
        let (have, _) = privs(&roles, user, rel.kind, rel.owner, rel.acl.as_deref(), db_owner);
        let ok = if p.any { have & p.privs != 0 } else { have & p.privs == p.privs };
        // The common case ends here: the table-level privileges suffice and
        // no column is looked at (as PostgreSQL's ExecCheckOneRelPerms).
        if !ok && (p.any || !columns_suffice(backend, snap, &roles, user, &rel, p.privs & !have, p.cols.as_deref())?) {
            return Err(denied(rel.kind, &rel.name));
        }
    }
    Ok(())
}

/// Whether column privileges grant what the table's ACL lacks (`missing`):
/// SELECT, INSERT and UPDATE (and REFERENCES) on each column the statement
/// names for it, or on any column when it names none (`count(*)`, `INSERT
/// ... DEFAULT VALUES`); a whole-row reference (attnum 0) needs every column.
/// An untracked statement (`cols` None) needs every column.
fn columns_suffice(backend: &Backend, snap: &Snapshot, roles: &RoleGraph, user: u32, rel: &RelAcl, missing: u16, cols: Option<&ColSets>) -> Result<bool> {
    if missing & !COLUMN_PRIVS != 0 || !matches!(rel.kind, ObjKind::Table | ObjKind::View) {
        return Ok(false);
    }
    let acls = column_acls(backend, snap, rel.oid)?;
    let col_privs = |c: &ColAcl| privs(roles, user, rel.kind, rel.owner, Some(c.acl.as_deref().unwrap_or(&[])), roles.db_owner).0;
    let live = || acls.iter().filter(|c| !c.dropped);
    for bit in [SELECT, INSERT, UPDATE, REFERENCES] {
        if missing & bit == 0 {
            continue;
        }
        let named: &[i16] = match cols {
            Some(c) => c.of(bit),
            None => &[0],
        };
        let ok = if named.is_empty() {
            live().any(|c| col_privs(c) & bit != 0)
        } else if named.contains(&0) {
            live().count() > 0 && live().all(|c| col_privs(c) & bit != 0)
        } else {
            named.iter().all(|n| acls.iter().find(|c| c.attnum == *n).is_some_and(|c| col_privs(c) & bit != 0))
        };
        if !ok {
            return Ok(false);
        }
    }
    Ok(true)
}

/// One column's ACL (pg_attribute.attacl).
#[derive(Clone, Debug)]
pub struct ColAcl {
    pub attnum: i16,
    pub name: String,
    pub dropped: bool,
    /// NULL: no privileges on the column itself (its table's apply).
    pub acl: Option<Acl>,
}

/// Column number of attacl in the stored pg_attribute row.
pub const ATTACL: usize = 9;

/// The columns of relation `rel` with their ACLs, in attnum order. Read only
/// when a table-level check falls short (or by GRANT and the views), so it
/// scans pg_attribute rather than keeping a cache.
pub fn column_acls(backend: &Backend, snap: &Snapshot, rel: u32) -> Result<Vec<ColAcl>> {
    Ok(all_column_acls(backend, snap, Some(rel))?.remove(&rel).unwrap_or_default())
}

/// Every relation's columns with their ACLs (`only`: one relation's), by
/// relation, in attnum order: one scan of pg_attribute.
pub fn all_column_acls(backend: &Backend, snap: &Snapshot, only: Option<u32>) -> Result<std::collections::HashMap<u32, Vec<ColAcl>>> {
    let mut out: std::collections::HashMap<u32, Vec<ColAcl>> = std::collections::HashMap::new();
    for (_, row) in crate::rowio::scan_rows(backend, &crate::catalog::attribute_rel(), snap)? {
        if let [Value::Oid(r), Value::Text(name), _, Value::Int2(num), ..] = row.as_slice() {
            if only.is_none_or(|o| o == *r) {
                out.entry(*r).or_default().push(ColAcl {
                    attnum: *num,
                    name: name.clone(),
                    dropped: matches!(row.get(6), Some(Value::Bool(true))) || name.starts_with("........pg.dropped."),
                    acl: from_stored(row.get(ATTACL)),
                });
            }
        }
    }
    for v in out.values_mut() {
        v.sort_by_key(|c| c.attnum);
    }
    Ok(out)
}

/// DDL on relation `oid` needs its ownership (or a superuser): PostgreSQL's
/// `must be owner of table t`.
pub fn check_rel_owner(backend: &Backend, snap: &Snapshot, oid: u32) -> Result<()> {
    let roles = role_graph(backend, snap)?;
    let me = backend.current_user;
    if roles.superuser(me) {
        return Ok(());
    }
    let Some(rel) = rel_acl(backend, snap, oid)? else { return Ok(()) };
    if roles.has_privs_of(me, rel.owner) {
        return Ok(());
    }
    let kind = if rel.relkind == "i" { "index" } else { rel.kind.word() };
    Err(SqlError::new(b"42501", format!("must be owner of {kind} {}", rel.name)))
}

/// The privileges the current user holds on schema `ns`.
pub fn ns_privs(backend: &Backend, snap: &Snapshot, user: u32, ns: u32) -> Result<u16> {
    let roles = role_graph(backend, snap)?;
    if roles.superuser(user) {
        return Ok(ObjKind::Schema.all());
    }
    let all = ns_acls(backend, snap)?;
    let Some(n) = all.iter().find(|n| n.oid == ns) else { return Ok(ObjKind::Schema.all()) };
    let db_owner = roles.db_owner;
    Ok(privs(&roles, user, ObjKind::Schema, n.owner, n.acl.as_deref(), db_owner).0)
}

/// CREATE in schema `ns` (CREATE TABLE, VIEW, SEQUENCE, INDEX's table is owned).
pub fn check_create_in(backend: &Backend, snap: &Snapshot, ns: u32) -> Result<()> {
    if crate::namespace::is_temp_namespace(backend, snap, ns)? {
        return Ok(());
    }
    if ns_privs(backend, snap, backend.current_user, ns)? & CREATE == 0 {
        let name = crate::namespace::namespace_name(backend, snap, ns)?.unwrap_or_default();
        return Err(denied(ObjKind::Schema, &name));
    }
    Ok(())
}

/// USAGE on schema `ns` for a name looked up in it explicitly (`s.t`).
pub fn check_usage_of(backend: &Backend, snap: &Snapshot, ns: u32) -> Result<()> {
    if ns == crate::catalog::PG_CATALOG_NAMESPACE || crate::namespace::is_temp_namespace(backend, snap, ns)? {
        return Ok(());
    }
    if ns_privs(backend, snap, backend.current_user, ns)? & USAGE == 0 {
        let name = crate::namespace::namespace_name(backend, snap, ns)?.unwrap_or_default();
        return Err(denied(ObjKind::Schema, &name));
    }
    Ok(())
}

/// Reads an ACL in its printed form (`{=c/postgres,alice=CTc/postgres}`, as
/// pg_database stores datacl), roles by name.
pub fn parse_display(text: &str, roles: &RoleGraph) -> Option<Acl> {
    let inner = text.trim().strip_prefix('{')?.strip_suffix('}')?;
    let mut out = Vec::new();
    for item in inner.split(',').filter(|s| !s.is_empty()) {
        let item = item.trim_matches('"');
        let (grantee, rest) = item.split_once('=')?;
        let (privs, grantor) = rest.rsplit_once('/')?;
        let (privs, goptions) = parse_privs(privs)?;
        let grantee = if grantee.is_empty() { PUBLIC } else { roles.oid(grantee.trim_matches('"'))? };
        out.push(AclItem { grantee, grantor: roles.oid(grantor.trim_matches('"'))?, privs, goptions });
    }
    Some(out)
}

/// The printed form of an ACL as one text (`{...}`), for pg_database.datacl.
pub fn display_text(acl: &[AclItem], roles: &RoleGraph) -> String {
    let Value::Array(a) = display(acl, &|o| roles.name(o)) else { return "{}".into() };
    let items: Vec<String> = a.items.iter().filter_map(|v| if let Value::Text(t) = v { Some(t.clone()) } else { None }).collect();
    format!("{{{}}}", items.join(","))
}

/// The privileges `user` holds on the current database (its datacl).
pub fn database_privs(backend: &Backend, snap: &Snapshot, user: u32) -> Result<(u16, String)> {
    let roles = role_graph(backend, snap)?;
    let db = backend.database();
    let dbs = crate::database::cached(backend, snap)?;
    let Some(row) = dbs.iter().find(|d| d.oid == db) else {
        return Ok((ObjKind::Database.all(), String::new()));
    };
    let acl = row.acl.as_deref().and_then(|t| parse_display(t, &roles));
    Ok((privs(&roles, user, ObjKind::Database, row.dba, acl.as_deref(), roles.db_owner).0, row.name.clone()))
}

/// The privileges `user` holds on database `row` (any database: connection
/// time, before the backend is bound to one; its owner is pg_database_owner's
/// member there).
pub fn privs_on_database(backend: &Backend, snap: &Snapshot, user: u32, row: &crate::database::DbRow) -> Result<u16> {
    let roles = RoleGraph::load(backend, snap)?;
    let acl = row.acl.as_deref().and_then(|t| parse_display(t, &roles));
    Ok(privs(&roles, user, ObjKind::Database, row.dba, acl.as_deref(), row.dba).0)
}

/// `privilege` on the current database for the current user, else
/// `permission denied for database d`.
pub fn check_database_privilege(backend: &Backend, snap: &Snapshot, privilege: u16) -> Result<()> {
    let (have, name) = database_privs(backend, snap, backend.current_user)?;
    if have & privilege == 0 {
        return Err(denied(ObjKind::Database, &name));
    }
    Ok(())
}

/// ALTER / DROP SCHEMA need its ownership: `must be owner of schema s`.
pub fn check_schema_owner(backend: &Backend, snap: &Snapshot, ns: u32) -> Result<()> {
    let roles = role_graph(backend, snap)?;
    let all = ns_acls(backend, snap)?;
    let Some(n) = all.iter().find(|n| n.oid == ns) else { return Ok(()) };
    let mut mine = roles.privs_of(backend.current_user);
    if mine.contains(&roles.db_owner) {
        mine.push(PG_DATABASE_OWNER);
    }
    if roles.superuser(backend.current_user) || mine.contains(&n.owner) {
        return Ok(());
    }
    Err(not_owner(ObjKind::Schema, &n.name))
}

/// A privilege name of GRANT / has_*_privilege (`select`, `temporary`, ...).
pub fn privilege_bit(name: &str) -> Option<u16> {
    Some(match name.trim().to_ascii_lowercase().as_str() {
        "insert" => INSERT,
        "select" => SELECT,
        "update" => UPDATE,
        "delete" => DELETE,
        "truncate" => TRUNCATE,
        "references" => REFERENCES,
        "trigger" => TRIGGER,
        "execute" => EXECUTE,
        "usage" => USAGE,
        "create" => CREATE,
        "temporary" | "temp" => TEMP,
        "connect" => CONNECT,
        "set" => SET,
        "alter system" => ALTER_SYSTEM,
        _ => return None,
    })
}

/// The privileges a DML statement needs on its target (table level, as
/// PostgreSQL's rewriter marks them, without column detail): INSERT, UPDATE,
/// DELETE, MERGE's actions; SELECT when the statement reads the target's
/// columns (WHERE, RETURNING, FROM/USING, SET expressions that read columns,
/// ON CONFLICT's arbiter and DO UPDATE, MERGE's join condition).
pub fn dml_privs(stmt: &pg_query::NodeEnum) -> u16 {
    use pg_query::protobuf as pb;
    use pg_query::{NodeEnum, NodeRef};
    let reads_cols = |nodes: &[pb::Node]| {
        nodes.iter().any(|n| n.node.as_ref().is_some_and(|e| e.nodes().iter().any(|(r, ..)| matches!(r, NodeRef::ColumnRef(_)))))
    };
    match stmt {
        NodeEnum::InsertStmt(s) => {
            let mut p = INSERT;
            if s.returning_clause.as_ref().is_some_and(|r| !r.exprs.is_empty()) {
                p |= SELECT;
            }
            if let Some(oc) = &s.on_conflict_clause {
                if oc.infer.is_some() {
                    p |= SELECT;
                }
                if oc.action == pb::OnConflictAction::OnconflictUpdate as i32 {
                    p |= UPDATE;
                    if oc.where_clause.is_some() || reads_cols(&oc.target_list) {
                        p |= SELECT;
                    }
                }
            }
            p
        }
        NodeEnum::UpdateStmt(s) => {
            let mut p = UPDATE;
            if s.where_clause.is_some() || !s.from_clause.is_empty() || s.returning_clause.as_ref().is_some_and(|r| !r.exprs.is_empty()) || reads_cols(&s.target_list) {
                p |= SELECT;
            }
            p
        }
        NodeEnum::DeleteStmt(s) => {
            let mut p = DELETE;
            if s.where_clause.is_some() || !s.using_clause.is_empty() || s.returning_clause.as_ref().is_some_and(|r| !r.exprs.is_empty()) {
                p |= SELECT;
            }
            p
        }
        NodeEnum::MergeStmt(s) => {
            let mut p = SELECT;
            for w in &s.merge_when_clauses {
                if let Some(NodeEnum::MergeWhenClause(c)) = &w.node {
                    p |= match pb::CmdType::try_from(c.command_type).unwrap_or(pb::CmdType::Undefined) {
                        pb::CmdType::CmdInsert => INSERT,
                        pb::CmdType::CmdUpdate => UPDATE,
                        pb::CmdType::CmdDelete => DELETE,
                        _ => 0,
                    };
                }
            }
            p
        }
        _ => 0,
    }
}

// ---- has_*_privilege ---------------------------------------------------------------

/// The privilege inquiry functions (has_table_privilege & co.), evaluated per
/// row by [`has_privilege`] with the catalog caches: any argument may be an
/// expression (a column of pg_class, a role from a table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PrivFn {
    Table,
    Sequence,
    Schema,
    Database,
    Column,
    AnyColumn,
    Parameter,
    Function,
}

impl PrivFn {
    pub fn of_name(name: &str) -> Option<PrivFn> {
        Some(match name {
            "has_table_privilege" => PrivFn::Table,
            "has_sequence_privilege" => PrivFn::Sequence,
            "has_schema_privilege" => PrivFn::Schema,
            "has_database_privilege" => PrivFn::Database,
            "has_column_privilege" => PrivFn::Column,
            "has_any_column_privilege" => PrivFn::AnyColumn,
            "has_parameter_privilege" => PrivFn::Parameter,
            "has_function_privilege" => PrivFn::Function,
            _ => return None,
        })
    }

    /// Arguments without the optional leading role.
    pub fn base_args(self) -> usize {
        if self == PrivFn::Column {
            3
        } else {
            2
        }
    }

    /// The privileges the function's privilege text may name.
    fn allowed(self) -> u16 {
        match self {
            PrivFn::Table => ObjKind::Table.all(),
            PrivFn::Sequence => ObjKind::Sequence.all(),
            PrivFn::Schema => ObjKind::Schema.all(),
            PrivFn::Database => ObjKind::Database.all(),
            PrivFn::Column | PrivFn::AnyColumn => SELECT | INSERT | UPDATE | REFERENCES,
            PrivFn::Parameter => ObjKind::Parameter.all(),
            PrivFn::Function => ObjKind::Function.all(),
        }
    }
}

/// The privilege text of has_*_privilege (`'SELECT, INSERT WITH GRANT
/// OPTION'`: any of them) as (privileges, grant options) wanted.
fn priv_list(f: PrivFn, text: &str) -> Result<Vec<(u16, bool)>> {
    let mut out = Vec::new();
    for given in text.split(',') {
        let given = given.trim();
        let lower = given.to_ascii_lowercase();
        let (p, go) = match lower.strip_suffix("with grant option") {
            Some(x) => (x.trim().to_string(), true),
            None => (lower.clone(), false),
        };
        // RULE: accepted for tables and always false, as PostgreSQL 15.
        if f == PrivFn::Table && p == "rule" {
            continue;
        }
        let shown = &given[..p.len().min(given.len())];
        let bit = privilege_bit(&p)
            .filter(|b| b & f.allowed() != 0)
            .ok_or_else(|| SqlError::new(b"22023", format!("unrecognized privilege type: \"{shown}\"")))?;
        out.push((bit, go));
    }
    Ok(out)
}

/// A qualified name as text (`'s.t'`, `'"Mixed".t'`): identifiers lower-cased
/// unless quoted, as PostgreSQL's textToQualifiedNameList.
fn qualified_name(text: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            '.' if !quoted => parts.push(std::mem::take(&mut cur)),
            c if quoted => cur.push(c),
            c => cur.extend(c.to_lowercase()),
        }
    }
    parts.push(cur);
    parts
}

/// A relation named by text for has_*_privilege: 42P01 when there is none.
fn relation_by_name(backend: &Backend, snap: &Snapshot, text: &str) -> Result<u32> {
    let parts = qualified_name(text);
    let (schema, name) = match parts.as_slice() {
        [n] => (None, n.as_str()),
        [s, n] => (Some(s.as_str()), n.as_str()),
        [_, s, n] => (Some(s.as_str()), n.as_str()),
        _ => return Err(SqlError::new(b"42601", format!("improper relation name (too many dotted names): {text}"))),
    };
    let missing = || SqlError::new(b"42P01", format!("relation \"{text}\" does not exist"));
    let found = match crate::namespace::relation_namespace(backend, snap, schema, name)? {
        Some(ns) => {
            if schema.is_some() {
                // A schema named explicitly needs USAGE, as any name lookup in it.
                check_usage_of(backend, snap, ns)?;
            }
            crate::index::find_relation(backend, snap, ns, name)?.map(|(o, _)| o)
        }
        None => None,
    };
    // The catalogs computed by crate::pgcatalog (pg_authid, pg_roles, ...).
    found.or_else(|| crate::pgcatalog::lookup(schema, name).map(|t| t.oid)).ok_or_else(missing)
}

/// Relation `oid`'s owner and ACL, or for a catalog view of
/// [`crate::pgcatalog`] (no pg_class row) what initdb gives a catalog.
fn rel_or_catalog_acl(backend: &Backend, snap: &Snapshot, oid: u32) -> Result<Option<Arc<RelAcl>>> {
    if let Some(r) = rel_acl(backend, snap, oid)? {
        return Ok(Some(r));
    }
    let Some(name) = crate::pgcatalog::view_name(oid) else { return Ok(None) };
    let ns = crate::catalog::PG_CATALOG_NAMESPACE;
    Ok(Some(Arc::new(RelAcl {
        oid,
        name: name.to_string(),
        namespace: ns,
        kind: ObjKind::Table,
        relkind: "r".into(),
        owner: BOOTSTRAP_SUPERUSER,
        acl: rel_acl_of_row(oid, ns, ObjKind::Table, BOOTSTRAP_SUPERUSER, None),
    })))
}

fn role_arg(roles: &RoleGraph, v: &Value) -> Result<Option<u32>> {
    Ok(match v {
        Value::Text(n) => Some(roles.oid(n).ok_or_else(|| SqlError::new(b"42704", format!("role \"{n}\" does not exist")))?),
        Value::Oid(o) => Some(*o),
        Value::Int4(o) => Some(*o as u32),
        Value::Int8(o) => Some(*o as u32),
        _ => None,
    })
}

/// has_*_privilege(`[role,] object, [column,] privilege`) for one row: the
/// role (name or OID; the current user without one), the object by name (an
/// unknown name is an error) or OID (an unknown OID is NULL, as PostgreSQL).
/// A column's privileges are its table's and its own (pg_attribute.attacl).
pub fn has_privilege(backend: &Backend, snap: &Snapshot, f: PrivFn, vals: &[Value]) -> Result<Value> {
    if vals.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    let roles = role_graph(backend, snap)?;
    let (user, rest) = if vals.len() > f.base_args() {
        match role_arg(&roles, &vals[0])? {
            Some(u) => (u, &vals[1..]),
            None => return Ok(Value::Null),
        }
    } else {
        (backend.current_user, vals)
    };
    let Some(Value::Text(priv_text)) = rest.last() else { return Ok(Value::Null) };
    let wanted = priv_list(f, priv_text)?;
    let (p, g) = match f {
        PrivFn::Table | PrivFn::Sequence | PrivFn::Column | PrivFn::AnyColumn => {
            let oid = match &rest[0] {
                Value::Text(n) => relation_by_name(backend, snap, n)?,
                Value::Oid(o) => *o,
                _ => return Ok(Value::Null),
            };
            let Some(rel) = rel_or_catalog_acl(backend, snap, oid)? else { return Ok(Value::Null) };
            if f == PrivFn::Sequence && rel.kind != ObjKind::Sequence {
                let Value::Text(n) = &rest[0] else { return Ok(Value::Null) };
                return Err(SqlError::new(b"42809", format!("\"{n}\" is not a sequence")));
            }
            if f == PrivFn::Column && !column_exists(backend, snap, &rel, &rest[1])? {
                return Ok(Value::Null);
            }
            let (mut p, mut g) = privs(&roles, user, rel.kind, rel.owner, rel.acl.as_deref(), roles.db_owner);
            // A column's own ACL adds to its table's (any column's, for
            // has_any_column_privilege); read only when the table's fall short.
            let all_held = wanted.iter().all(|(b, go)| if *go { g & b != 0 } else { p & b != 0 });
            if matches!(f, PrivFn::Column | PrivFn::AnyColumn) && !all_held {
                for c in column_acls(backend, snap, rel.oid)? {
                    let this = match &rest[1] {
                        _ if f == PrivFn::AnyColumn => !c.dropped,
                        Value::Text(n) => &c.name == n && !c.dropped,
                        Value::Int2(i) => c.attnum == *i,
                        Value::Int4(i) => c.attnum as i32 == *i,
                        _ => false,
                    };
                    if let (true, Some(a)) = (this, c.acl.as_deref()) {
                        let (cp, cg) = privs(&roles, user, rel.kind, rel.owner, Some(a), roles.db_owner);
                        p |= cp;
                        g |= cg;
                    }
                }
            }
            (p, g)
        }
        PrivFn::Schema => {
            let all = ns_acls(backend, snap)?;
            let ns = match &rest[0] {
                Value::Text(n) => all.iter().find(|x| &x.name == n).ok_or_else(|| SqlError::new(b"3F000", format!("schema \"{n}\" does not exist")))?,
                Value::Oid(o) => match all.iter().find(|x| x.oid == *o) {
                    Some(x) => x,
                    None => return Ok(Value::Null),
                },
                _ => return Ok(Value::Null),
            };
            privs(&roles, user, ObjKind::Schema, ns.owner, ns.acl.as_deref(), roles.db_owner)
        }
        PrivFn::Database => {
            let dbs = crate::database::cached(backend, snap)?;
            let d = match &rest[0] {
                Value::Text(n) => dbs.iter().find(|d| &d.name == n).ok_or_else(|| SqlError::new(b"3D000", format!("database \"{n}\" does not exist")))?,
                Value::Oid(o) => match dbs.iter().find(|d| d.oid == *o) {
                    Some(d) => d,
                    None => return Ok(Value::Null),
                },
                _ => return Ok(Value::Null),
            };
            let a = d.acl.as_deref().and_then(|t| parse_display(t, &roles));
            privs(&roles, user, ObjKind::Database, d.dba, a.as_deref(), roles.db_owner)
        }
        PrivFn::Parameter => {
            let Value::Text(n) = &rest[0] else { return Ok(Value::Null) };
            crate::param_acl::privs(backend, snap, user, n)?
        }
        PrivFn::Function => {
            let f = match &rest[0] {
                Value::Text(t) => function_by_signature(backend, snap, t)?,
                Value::Oid(o) => match crate::sqlfunc::by_oid(backend, snap, *o)? {
                    Some(f) => Some(f),
                    // A built-in function's OID (below the first user OID): PUBLIC's EXECUTE.
                    None if *o < ferrogres_engine::engine::FIRST_NORMAL_OBJECT_ID => None,
                    None => return Ok(Value::Null),
                },
                _ => return Ok(Value::Null),
            };
            match f {
                Some(f) => privs(&roles, user, ObjKind::Function, f.owner, f.acl.as_deref(), roles.db_owner),
                // Built-in functions keep initdb's ACL: EXECUTE for PUBLIC.
                None => privs(&roles, user, ObjKind::Function, BOOTSTRAP_SUPERUSER, None, roles.db_owner),
            }
        }
    };
    Ok(Value::Bool(wanted.iter().any(|(b, go)| if *go { g & b != 0 } else { p & b != 0 })))
}

/// A function named as regprocedure input (`f(integer)`, `s.f(int4, text)`):
/// the SQL function of that signature, `None` for a built-in function (any
/// name not of a SQL function: their signatures are not recorded here);
/// 22P02 without an argument list, 42883 for a SQL function name with other
/// argument types, as PostgreSQL's regprocedurein.
fn function_by_signature(backend: &Backend, snap: &Snapshot, text: &str) -> Result<Option<crate::sqlfunc::ProcDef>> {
    let Some((name, args)) = text.trim().split_once('(') else {
        return Err(SqlError::new(b"22P02", "expected a left parenthesis"));
    };
    let Some(args) = args.trim_end().strip_suffix(')') else {
        return Err(SqlError::new(b"22P02", "expected a right parenthesis"));
    };
    let missing = || SqlError::new(b"42883", format!("function \"{text}\" does not exist"));
    let parts = qualified_name(name.trim());
    let (schema, name) = match parts.as_slice() {
        [n] => (None, n.as_str()),
        [s, n] => (Some(s.as_str()), n.as_str()),
        _ => return Err(missing()),
    };
    let mut types = Vec::new();
    let mut depth = 0;
    let mut cur = String::new();
    for c in args.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                types.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() || !types.is_empty() {
        types.push(cur);
    }
    let types: Vec<Type> = types.iter().map(|t| crate::pgcatalog::parse_type_name(t)).collect::<Option<_>>().ok_or_else(missing)?;
    if schema == Some("pg_catalog") {
        return Ok(None);
    }
    let cands = crate::sqlfunc::lookup(backend, snap, schema, name)?;
    if cands.is_empty() {
        return Ok(None);
    }
    cands.into_iter().find(|p| p.args == types).map(Some).ok_or_else(missing)
}

/// Whether `col` (a name or an attnum) is a column of `rel`: an unknown name
/// is 42703, an unknown number false (NULL for the caller), as PostgreSQL.
fn column_exists(backend: &Backend, snap: &Snapshot, rel: &RelAcl, col: &Value) -> Result<bool> {
    let table = match crate::catcache::table(backend, rel.oid) {
        Some(t) => Some(t),
        None => {
            let ns = crate::namespace::namespace_name(backend, snap, rel.namespace)?;
            match ns {
                Some(ns) => crate::catalog::lookup_table_arc(backend, snap, Some(&ns), &rel.name)?.filter(|t| t.oid == rel.oid),
                None => None,
            }
        }
    };
    // A relation without stored columns here (a pg_catalog view): no check.
    let Some(t) = table else { return Ok(true) };
    let live = |c: &crate::catalog::Column| !c.is_dropped();
    Ok(match col {
        Value::Text(n) => {
            if !t.columns.iter().any(|c| live(c) && &c.name == n) {
                return Err(SqlError::new(b"42703", format!("column \"{n}\" of relation \"{}\" does not exist", rel.name)));
            }
            true
        }
        Value::Int2(i) => *i >= 1 && t.columns.get(*i as usize - 1).is_some_and(live),
        Value::Int4(i) => *i >= 1 && t.columns.get(*i as usize - 1).is_some_and(live),
        _ => false,
    })
}

// ---- what depends on a role ------------------------------------------------------

/// Whether `acl` names `role` other than as the owner's grantor (PostgreSQL
/// records such a role as a shared dependency of the object).
pub fn mentions(acl: &[AclItem], role: u32) -> bool {
    acl.iter().any(|i| i.grantee == role || i.grantor == role)
}

/// The words of pg_default_acl's object types in PostgreSQL's descriptions.
fn defacl_words(objtype: u8) -> &'static str {
    match objtype {
        crate::default_acl::SEQUENCE => "sequences",
        crate::default_acl::FUNCTION => "functions",
        crate::default_acl::TYPE => "types",
        crate::default_acl::SCHEMA => "schemas",
        _ => "relations",
    }
}

/// The objects that depend on role `role` (PostgreSQL's pg_shdepend rows of
/// the current database and the shared catalogs, computed here from the
/// catalogs themselves): `owner of ...` for what it owns (relations,
/// schemas, default privileges, functions, databases), `privileges for ...`
/// for ACLs that name it (relations, columns, schemas, default privileges,
/// functions, databases), in OID order as PostgreSQL sorts them. Read by DROP ROLE only.
pub fn role_dependents(backend: &Backend, snap: &Snapshot, role: u32) -> Result<Vec<String>> {
    let roles = role_graph(backend, snap)?;
    let nss = ns_acls(backend, snap)?;
    let ns_name = |ns: u32| nss.iter().find(|n| n.oid == ns).map(|n| n.name.clone()).unwrap_or_default();
    // (oid, subid, text)
    let mut out: Vec<(u32, i16, String)> = Vec::new();
    let mut rels: Vec<(u32, String, u32)> = Vec::new();
    for (_, row) in crate::rowio::scan_rows(backend, &crate::catalog::class_rel(), snap)? {
        let (Value::Oid(oid), Value::Text(name), Value::Oid(ns), Value::Text(kind)) = (&row[0], &row[1], &row[2], &row[5]) else { continue };
        if kind == "i" {
            continue;
        }
        let word = match kind.as_str() {
            "v" => "view",
            "S" => "sequence",
            _ => "table",
        };
        let shown = if *ns == crate::catalog::PUBLIC_NAMESPACE || *ns == crate::catalog::PG_CATALOG_NAMESPACE {
            format!("{word} {name}")
        } else {
            format!("{word} {}.{name}", ns_name(*ns))
        };
        let owner = oid_col(&row, RELOWNER, BOOTSTRAP_SUPERUSER);
        if owner == role {
            out.push((*oid, 0, format!("owner of {shown}")));
        } else if from_stored(row.get(RELACL)).is_some_and(|a| mentions(&a, role)) {
            out.push((*oid, 0, format!("privileges for {shown}")));
        }
        rels.push((*oid, shown, owner));
    }
    for (rel, cols) in all_column_acls(backend, snap, None)? {
        // The owner's own grants record no dependency on it.
        let Some((_, shown, _)) = rels.iter().find(|(o, _, owner)| *o == rel && *owner != role) else { continue };
        for c in cols {
            if !c.dropped && c.acl.as_deref().is_some_and(|a| mentions(a, role)) {
                out.push((rel, c.attnum, format!("privileges for column {} of {shown}", c.name)));
            }
        }
    }
    for n in nss.iter() {
        if n.owner == role {
            out.push((n.oid, 0, format!("owner of schema {}", n.name)));
        } else if n.acl.as_deref().is_some_and(|a| mentions(a, role)) {
            out.push((n.oid, 0, format!("privileges for schema {}", n.name)));
        }
    }
    for d in crate::default_acl::list(backend, snap)?.iter() {
        let mut what = format!("default privileges on new {} belonging to role {}", defacl_words(d.objtype), roles.name(d.role));
        if d.namespace != 0 {
            what.push_str(&format!(" in schema {}", ns_name(d.namespace)));
        }
        if d.role == role {
            out.push((d.oid, 0, format!("owner of {what}")));
        } else if mentions(&d.acl, role) {
            out.push((d.oid, 0, format!("privileges for {what}")));
        }
    }
    for f in crate::sqlfunc::all(backend, snap)? {
        let shown = if f.namespace == crate::catalog::PUBLIC_NAMESPACE { f.signature() } else { format!("{}.{}", ns_name(f.namespace), f.signature()) };
        if f.owner == role {
            out.push((f.oid, 0, format!("owner of function {shown}")));
        } else if f.acl.as_deref().is_some_and(|a| mentions(a, role)) {
            out.push((f.oid, 0, format!("privileges for function {shown}")));
        }
    }
    for d in crate::database::list_rows(backend, snap)? {
        if d.dba == role {
            out.push((d.oid, 0, format!("owner of database {}", d.name)));
        } else if d.acl.as_deref().and_then(|t| parse_display(t, &roles)).is_some_and(|a| mentions(&a, role)) {
            out.push((d.oid, 0, format!("privileges for database {}", d.name)));
        }
    }
    out.sort_by_key(|(o, s, _)| (*o, *s));
    Ok(out.into_iter().map(|(_, _, t)| t).collect())
}

/// What reading a relation in FROM needs: SELECT, and UPDATE too under FOR
/// UPDATE / SHARE (RowShareLock).
pub fn select_privs(mode: ferrogres_engine::lmgr::lock::LockMode) -> u16 {
    if mode == ferrogres_engine::lmgr::lock::LockMode::RowShare {
        SELECT | UPDATE
    } else {
        SELECT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_forms_round_trip() {
        let acl = vec![
            AclItem { grantee: 16384, grantor: 10, privs: SELECT | INSERT, goptions: SELECT },
            AclItem { grantee: PUBLIC, grantor: 10, privs: SELECT, goptions: 0 },
        ];
        let stored = to_stored(&acl);
        assert_eq!(from_stored(Some(&stored)), Some(acl.clone()));
        let names = |o: u32| if o == 10 { "postgres".to_string() } else { "Mixed Case".to_string() };
        let Value::Array(a) = display(&acl, &names) else { panic!() };
        assert_eq!(a.items, vec![Value::Text("\"Mixed Case\"=ar*/postgres".into()), Value::Text("=r/postgres".into())]);
        assert_eq!(privs_text(ObjKind::Table.all(), 0), "arwdDxt");
        assert_eq!(privs_text(ObjKind::Database.all(), 0), "CTc");
    }

    #[test]
    fn column_sets_merge_and_untracked_wins() {
        let mut a = Some(Box::new(ColSets { select: vec![1], ..Default::default() }));
        let b = Some(Box::new(ColSets { select: vec![1, 2], update: vec![3], ..Default::default() }));
        ColSets::merge(&mut a, &b);
        assert_eq!(a.as_deref().map(|c| (c.select.clone(), c.update.clone())), Some((vec![1, 2], vec![3])));
        // A path that does not record its columns makes every column count.
        ColSets::merge(&mut a, &None);
        assert_eq!(a, None);
        let mut c = ColSets::default();
        c.add(DELETE, 1);
        assert_eq!(c, ColSets::default());
    }

    #[test]
    fn inherit_stops_at_noinherit_roles() {
        let g = RoleGraph {
            roles: vec![(1, "a".into(), false, true), (2, "b".into(), false, false), (3, "c".into(), false, true)],
            members: vec![(2, 1), (3, 2)],
            db_owner: 10,
        };
        assert_eq!(g.privs_of(1), vec![1, 2]);
        assert_eq!(g.privs_of(2), vec![2]);
        let acl = vec![AclItem { grantee: 3, grantor: 10, privs: SELECT, goptions: 0 }];
        assert_eq!(privs(&g, 1, ObjKind::Table, 10, Some(&acl), 10).0, 0);
        let acl = vec![AclItem { grantee: 2, grantor: 10, privs: SELECT, goptions: 0 }];
        assert_eq!(privs(&g, 1, ObjKind::Table, 10, Some(&acl), 10).0, SELECT);
    }
}
