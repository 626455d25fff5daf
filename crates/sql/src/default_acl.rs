//! Default privileges (PostgreSQL's pg_default_acl): the ACL an object gets
//! when it is created, set by ALTER DEFAULT PRIVILEGES ([`crate::grant`] runs
//! the statement; this is the catalog and the rule applied at creation).
//!
//! Storage: the per-database catalog pg_default_acl (relfilenode 826,
//! PostgreSQL's OID), a heap relation written through the heap like the
//! other catalogs (WAL-logged, transactional, crash-safe), made by the first
//! ALTER DEFAULT PRIVILEGES of a database (so a database without one pays a
//! file test, once per catalog-cache fill). Stored columns:
//!
//! | column | meaning |
//! |---|---|
//! | oid oid | the entry's OID |
//! | defaclrole oid | the role whose new objects the entry is for |
//! | defaclnamespace oid | the schema (0: every schema, the role's global entry) |
//! | defaclobjtype text | `r` tables and views, `S` sequences, `f` functions, `T` types, `n` schemas |
//! | defaclacl text[] | the ACL, items naming roles by OID as [`crate::acl::to_stored`] writes them |
//!
//! The rules, as PostgreSQL 15's (written from its design):
//! - an object created by role R (its owner) in schema S gets R's global
//!   entry for its kind, or without one the hard-wired default
//!   ([`crate::acl::default_acl`]), with the items of R's entry for S added
//!   (same grantee and grantor: privileges OR-ed; others appended); the result
//!   is sorted (grantee, grantor, privileges) and stored, or left NULL when it
//!   equals the hard-wired default;
//! - an entry that ALTER DEFAULT PRIVILEGES leaves equal to its starting
//!   point (the hard-wired default for a global entry, nothing for a
//!   per-schema one) is removed; entries are stored sorted;
//! - schemas have only global entries (IN SCHEMA with ON SCHEMAS is 0LP01).
//!
//! The entries are read through the backend's catalog cache
//! ([`crate::catcache`]), so creating an object reads no catalog once the
//! cache is filled; any change to pg_default_acl is a catalog invalidation
//! message.

use crate::acl::{self, Acl, AclItem, ObjKind};
use crate::rowio::{insert_row, scan_rows, RelStorage};
use ferrogres_datum::errors::{Result, SqlError};
use ferrogres_datum::types::{Type, Value};
use ferrogres_engine::engine::Backend;
use ferrogres_engine::heap::tuple::Tid;
use ferrogres_engine::storage::ForkNumber;
use ferrogres_engine::txn::snapshot::Snapshot;
use std::sync::Arc;

pub const PG_DEFAULT_ACL: u32 = 826;

/// The object types of pg_default_acl (defaclobjtype).
pub const RELATION: u8 = b'r';
pub const SEQUENCE: u8 = b'S';
pub const FUNCTION: u8 = b'f';
pub const TYPE: u8 = b'T';
pub const SCHEMA: u8 = b'n';

fn storage() -> RelStorage {
    crate::catalog::cat(PG_DEFAULT_ACL, &[Type::Oid, Type::Oid, Type::Oid, Type::Text, Type::Array(&Type::Text)])
}

/// The ACL kind of an object type (a relation's privileges are a table's).
pub fn kind_of(objtype: u8) -> ObjKind {
    match objtype {
        SEQUENCE => ObjKind::Sequence,
        FUNCTION => ObjKind::Function,
        TYPE => ObjKind::Type,
        SCHEMA => ObjKind::Schema,
        _ => ObjKind::Table,
    }
}

/// One entry of pg_default_acl.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DefAcl {
    pub oid: u32,
    pub role: u32,
    /// 0: the role's global entry.
    pub namespace: u32,
    pub objtype: u8,
    pub acl: Acl,
}

fn exists(backend: &Backend) -> bool {
    backend.engine().smgr.exists(crate::catalog::locator(PG_DEFAULT_ACL), ForkNumber::Main)
}

/// Every entry with its TID, read from the catalog.
fn scan(backend: &Backend, snap: &Snapshot) -> Result<Vec<(Tid, DefAcl)>> {
    let mut out = Vec::new();
    if !exists(backend) {
        return Ok(out);
    }
    for (tid, row) in scan_rows(backend, &storage(), snap)? {
        let [Value::Oid(oid), Value::Oid(role), Value::Oid(ns), Value::Text(t), a] = row.as_slice() else { continue };
        let acl = acl::from_stored(Some(a)).unwrap_or_default();
        out.push((tid, DefAcl { oid: *oid, role: *role, namespace: *ns, objtype: t.bytes().next().unwrap_or(RELATION), acl }));
    }
    Ok(out)
}

/// Every entry, from this backend's catalog cache when it is current.
pub fn list(backend: &Backend, snap: &Snapshot) -> Result<Arc<Vec<DefAcl>>> {
    crate::catcache::default_acls(backend, snap, || Ok(scan(backend, snap)?.into_iter().map(|(_, d)| d).collect()))
}

/// Sorts an ACL as PostgreSQL's aclitemsort: by grantee, grantor, privileges.
pub fn sort(acl: &mut Acl) {
    acl.sort_by_key(|i| (i.grantee, i.grantor, i.privs, i.goptions));
}

/// Adds `extra`'s items to `acl` (PostgreSQL's aclmerge): an item with the
/// same grantee and grantor gains the privileges, others are appended.
pub fn merge(acl: &mut Acl, extra: &[AclItem]) {
    for e in extra {
        match acl.iter_mut().find(|i| i.grantee == e.grantee && i.grantor == e.grantor) {
            Some(i) => {
                i.privs |= e.privs;
                i.goptions |= e.goptions;
            }
            None => acl.push(*e),
        }
    }
}

/// The ACL a new object of `objtype` owned by `owner` in schema `namespace`
/// (0 for a schema) gets: `None` when it is the hard-wired default (stored
/// as NULL), as PostgreSQL's get_user_default_acl.
pub fn initial_acl(backend: &Backend, snap: &Snapshot, objtype: u8, namespace: u32, owner: u32) -> Result<Option<Acl>> {
    let all = list(backend, snap)?;
    if all.is_empty() {
        return Ok(None);
    }
    let find = |ns: u32| all.iter().find(|d| d.role == owner && d.objtype == objtype && d.namespace == ns);
    let global = find(0);
    let in_schema = if namespace != 0 { find(namespace) } else { None };
    if global.is_none() && in_schema.is_none() {
        return Ok(None);
    }
    let kind = kind_of(objtype);
    let mut def = acl::default_acl(kind, owner);
    let mut acl = global.map_or_else(|| def.clone(), |g| g.acl.clone());
    if let Some(s) = in_schema {
        merge(&mut acl, &s.acl);
    }
    sort(&mut acl);
    sort(&mut def);
    Ok((acl != def).then_some(acl))
}

/// [`initial_acl`] in its stored form (NULL for the default), with the
/// statement's snapshot of the current transaction.
pub fn initial_stored(backend: &mut Backend, objtype: u8, namespace: u32, owner: u32) -> Result<Value> {
    let snap = crate::catcache::ddl_snapshot(backend)?;
    Ok(initial_acl(backend, &snap, objtype, namespace, owner)?.map_or(Value::Null, |a| acl::to_stored(&a)))
}

/// The ACL an entry starts from when it does not exist: the hard-wired
/// default for a global entry, nothing for a per-schema one.
pub fn starting_acl(objtype: u8, role: u32, namespace: u32) -> Acl {
    if namespace == 0 {
        acl::default_acl(kind_of(objtype), role)
    } else {
        Vec::new()
    }
}

/// The entry (role, namespace, objtype): its ACL, or the starting one.
pub fn current(backend: &Backend, snap: &Snapshot, role: u32, namespace: u32, objtype: u8) -> Result<Acl> {
    let all = list(backend, snap)?;
    Ok(match all.iter().find(|d| d.role == role && d.namespace == namespace && d.objtype == objtype) {
        Some(d) => d.acl.clone(),
        None => starting_acl(objtype, role, namespace),
    })
}

/// Stores the entry (role, namespace, objtype) with ACL `new`: replaced,
/// made, or removed when it equals the starting ACL.
pub fn store(backend: &mut Backend, snap: &Snapshot, role: u32, namespace: u32, objtype: u8, new: &Acl) -> Result<()> {
    let st = storage();
    if !exists(backend) {
        let engine = backend.engine().clone();
        // Another session may have made it since the test: that is fine.
        if let Err(e) = engine.create_relation(st.rel) {
            if !exists(backend) {
                return Err(e.into());
            }
        }
    }
    let mut oid = None;
    for (tid, d) in scan(backend, snap)? {
        if d.role != role || d.namespace != namespace || d.objtype != objtype {
            continue;
        }
        oid = Some(d.oid);
        match crate::catcache::heap_delete(backend, st.rel, tid, None)? {
            ferrogres_engine::txn::visibility::TmResult::Ok | ferrogres_engine::txn::visibility::TmResult::SelfModified => {}
            _ => return Err(SqlError::new(b"40001", "could not serialize access due to concurrent update")),
        }
    }
    let mut acl = new.clone();
    sort(&mut acl);
    let mut start = starting_acl(objtype, role, namespace);
    sort(&mut start);
    if acl == start {
        return Ok(());
    }
    let oid = oid.unwrap_or_else(|| backend.engine().new_oid());
    let row = [Value::Oid(oid), Value::Oid(role), Value::Oid(namespace), Value::Text((objtype as char).to_string()), acl::to_stored(&acl)];
    insert_row(backend, &st, &row)?;
    Ok(())
}

/// Removes every entry for which `doomed` is true (DROP OWNED, DROP SCHEMA).
pub fn remove_where(backend: &mut Backend, snap: &Snapshot, doomed: &dyn Fn(&DefAcl) -> bool) -> Result<()> {
    let st = storage();
    for (tid, d) in scan(backend, snap)? {
        if !doomed(&d) {
            continue;
        }
        match crate::catcache::heap_delete(backend, st.rel, tid, None)? {
            ferrogres_engine::txn::visibility::TmResult::Ok | ferrogres_engine::txn::visibility::TmResult::SelfModified => {}
            _ => return Err(SqlError::new(b"40001", "could not serialize access due to concurrent update")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_adds_privileges_and_appends() {
        let mut a = vec![AclItem { grantee: 10, grantor: 10, privs: acl::SELECT, goptions: 0 }];
        merge(&mut a, &[AclItem { grantee: 10, grantor: 10, privs: acl::INSERT, goptions: 0 }, AclItem { grantee: 0, grantor: 10, privs: acl::SELECT, goptions: 0 }]);
        sort(&mut a);
        assert_eq!(a, vec![AclItem { grantee: 0, grantor: 10, privs: acl::SELECT, goptions: 0 }, AclItem { grantee: 10, grantor: 10, privs: acl::SELECT | acl::INSERT, goptions: 0 }]);
    }

    #[test]
    fn starting_acls() {
        assert_eq!(starting_acl(SCHEMA, 10, 0), acl::default_acl(ObjKind::Schema, 10));
        assert!(starting_acl(RELATION, 10, 2200).is_empty());
        // Functions and types: PUBLIC holds EXECUTE / USAGE by default.
        assert_eq!(acl::privs_text(acl::default_acl(ObjKind::Type, 10)[0].privs, 0), "U");
        assert_eq!(acl::default_acl(kind_of(FUNCTION), 10)[0].grantee, acl::PUBLIC);
    }
}
