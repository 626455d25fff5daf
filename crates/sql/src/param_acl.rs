//! Privileges on configuration parameters (PostgreSQL 15's pg_parameter_acl):
//! who may SET a superuser-only setting and who may ALTER SYSTEM a setting.
//!
//! As in PostgreSQL 15: a superuser may do both; anyone else needs the
//! privilege `SET` (`s`) for a SET / RESET of a `superuser` setting, and
//! `ALTER SYSTEM` (`A`) for ALTER SYSTEM SET / RESET of any setting. ALTER
//! SYSTEM RESET ALL is for superusers only. The denials are 42501
//! `permission denied to set parameter "x"` and `permission denied to perform
//! ALTER SYSTEM RESET ALL`.
//!
//! Storage: the shared catalog pg_parameter_acl (`global/6243`, PostgreSQL's
//! OID), a heap relation written through the heap like pg_authid
//! ([`crate::roles`]): WAL-logged, transactional, one for the cluster. Stored
//! columns: oid, parname (lower case: the setting's name, or a custom
//! `ext.name` as given), paracl (`text[]` of items naming roles by OID, as
//! [`crate::acl::to_stored`] writes them). A parameter without a row has the
//! default ACL: everything for the bootstrap superuser (PostgreSQL's
//! acldefault for OBJECT_PARAMETER_ACL, `postgres=sA/postgres`). As in
//! PostgreSQL, a GRANT makes the row and a REVOKE that leaves the default
//! removes it.
//!
//! The catalog is read when a check needs it: a non-superuser's SET of a
//! superuser setting, a non-superuser's ALTER SYSTEM, GRANT / REVOKE ON
//! PARAMETER, has_parameter_privilege and the pg_parameter_acl view. SET of
//! ordinary (`user`) settings never reads it.

use crate::acl::{self, Acl, ObjKind};
use crate::roles::BOOTSTRAP_SUPERUSER;
use crate::rowio::{insert_row, scan_rows, RelStorage};
use ferrogres_datum::errors::{Result, SqlError};
use ferrogres_datum::types::{Type, Value};
use ferrogres_engine::config::guc;
use ferrogres_engine::engine::{Backend, Engine};
use ferrogres_engine::heap::tuple::Tid;
use ferrogres_engine::storage::smgr::GLOBALTABLESPACE_OID;
use ferrogres_engine::storage::{ForkNumber, RelFileLocator};
use ferrogres_engine::txn::snapshot::Snapshot;
use std::sync::Arc;

pub const PG_PARAMETER_ACL: u32 = 6243;

fn storage() -> RelStorage {
    RelStorage {
        rel: RelFileLocator { spc_oid: GLOBALTABLESPACE_OID, db_oid: 0, rel_number: PG_PARAMETER_ACL },
        toast: None,
        types: vec![Type::Oid, Type::Text, Type::Array(&Type::Text)],
        missing: Vec::new(),
        proj: None,
        system: None,
    }
}

/// Makes the (empty) catalog on the first start.
pub fn bootstrap(engine: &Arc<Engine>) -> Result<()> {
    let st = storage();
    if !engine.smgr.exists(st.rel, ForkNumber::Main) {
        engine.create_relation(st.rel)?;
    }
    Ok(())
}

/// One row of pg_parameter_acl.
#[derive(Clone, Debug)]
pub struct ParamRow {
    pub oid: u32,
    pub name: String,
    pub acl: Acl,
}

/// Every row, with its TID.
pub fn list(backend: &Backend, snap: &Snapshot) -> Result<Vec<(Tid, ParamRow)>> {
    let mut out = Vec::new();
    for (tid, row) in scan_rows(backend, &storage(), snap)? {
        let (Some(Value::Oid(oid)), Some(Value::Text(name))) = (row.first(), row.get(1)) else { continue };
        let acl = acl::from_stored(row.get(2)).unwrap_or_default();
        out.push((tid, ParamRow { oid: *oid, name: name.clone(), acl }));
    }
    Ok(out)
}

/// The name a parameter's row is kept under: a known setting's name in lower
/// case, or a custom `ext.name` (lower case); otherwise 42602 `invalid
/// parameter name "x"`, as PostgreSQL's GRANT says.
pub fn canonical_name(name: &str) -> Result<String> {
    let lname = name.to_ascii_lowercase();
    match guc::find(&lname) {
        Some(g) => Ok(g.name.to_ascii_lowercase()),
        None if guc::is_custom(&lname) && valid_custom(&lname) => Ok(lname),
        None => Err(SqlError::new(b"42602", format!("invalid parameter name \"{name}\""))),
    }
}

/// `ext.name`: identifiers (letters, digits, `_`, `$`) separated by dots.
fn valid_custom(name: &str) -> bool {
    name.split('.').all(|p| {
        let mut c = p.chars();
        c.next().is_some_and(|f| f.is_alphabetic() || f == '_') && c.all(|x| x.is_alphanumeric() || x == '_' || x == '$')
    })
}

/// The ACL parameter `name` has (its row's, or the default).
pub fn acl_of(backend: &Backend, snap: &Snapshot, name: &str) -> Result<(Option<u32>, Acl)> {
    let lname = name.to_ascii_lowercase();
    for (_, r) in list(backend, snap)? {
        if r.name == lname {
            return Ok((Some(r.oid), r.acl));
        }
    }
    Ok((None, acl::default_acl(ObjKind::Parameter, BOOTSTRAP_SUPERUSER)))
}

/// The privileges (and grant options) `user` holds on parameter `name`.
pub fn privs(backend: &Backend, snap: &Snapshot, user: u32, name: &str) -> Result<(u16, u16)> {
    let roles = acl::role_graph(backend, snap)?;
    if roles.superuser(user) {
        return Ok((ObjKind::Parameter.all(), ObjKind::Parameter.all()));
    }
    let (_, a) = acl_of(backend, snap, name)?;
    Ok(acl::privs(&roles, user, ObjKind::Parameter, BOOTSTRAP_SUPERUSER, Some(&a), roles.db_owner))
}

fn denied_set(name: &str) -> SqlError {
    SqlError::new(b"42501", format!("permission denied to set parameter \"{}\"", name.to_ascii_lowercase()))
}

/// Whether SET / RESET `name` needs a privilege check: a `superuser` setting
/// (PostgreSQL's PGC_SUSET). Settings that cannot change in a session at all
/// are refused later by their context, with PostgreSQL's 55P02.
pub fn set_needs_check(name: &str) -> bool {
    guc::find(&name.to_ascii_lowercase()).is_some_and(|g| g.context == guc::Context::Superuser)
}

/// SET / RESET of `name` by the current user: 42501 for a superuser setting
/// without SET on it.
pub fn check_set(backend: &Backend, snap: &Snapshot, name: &str) -> Result<()> {
    if !set_needs_check(name) {
        return Ok(());
    }
    let (p, _) = privs(backend, snap, backend.current_user, name)?;
    if p & acl::SET == 0 {
        return Err(denied_set(name));
    }
    Ok(())
}

/// ALTER SYSTEM of `name` (`None`: RESET ALL) by the current user.
pub fn check_alter_system(backend: &Backend, snap: &Snapshot, name: Option<&str>) -> Result<()> {
    if acl::current_is_superuser(backend, snap)? {
        return Ok(());
    }
    let Some(name) = name else {
        return Err(SqlError::new(b"42501", "permission denied to perform ALTER SYSTEM RESET ALL"));
    };
    let (p, _) = privs(backend, snap, backend.current_user, name)?;
    if p & acl::ALTER_SYSTEM == 0 {
        return Err(denied_set(name));
    }
    Ok(())
}

/// Stores parameter `name`'s new ACL: its row replaced, made, or removed
/// when the ACL is the default again.
pub fn store(backend: &mut Backend, snap: &Snapshot, name: &str, new_acl: &Acl) -> Result<()> {
    let st = storage();
    let lname = name.to_ascii_lowercase();
    let mut oid = None;
    for (tid, r) in list(backend, snap)? {
        if r.name != lname {
            continue;
        }
        oid = Some(r.oid);
        match crate::catcache::heap_delete(backend, st.rel, tid, None)? {
            ferrogres_engine::txn::visibility::TmResult::Ok | ferrogres_engine::txn::visibility::TmResult::SelfModified => {}
            _ => return Err(SqlError::new(b"40001", "could not serialize access due to concurrent update")),
        }
    }
    let mut default = acl::default_acl(ObjKind::Parameter, BOOTSTRAP_SUPERUSER);
    let mut sorted = new_acl.clone();
    default.sort_by_key(|i| (i.grantee, i.grantor));
    sorted.sort_by_key(|i| (i.grantee, i.grantor));
    if sorted == default {
        return Ok(());
    }
    let oid = oid.unwrap_or_else(|| backend.engine().new_oid());
    insert_row(backend, &st, &[Value::Oid(oid), Value::Text(lname), acl::to_stored(new_acl)])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_kept_in_lower_case_and_checked() {
        assert_eq!(canonical_name("Work_Mem").unwrap(), "work_mem");
        assert_eq!(canonical_name("Foo.Bar").unwrap(), "foo.bar");
        let e = canonical_name("nosuch_param").unwrap_err();
        assert_eq!(e.to_string(), "42602: invalid parameter name \"nosuch_param\"");
        assert!(canonical_name("foo.").is_err());
    }

    #[test]
    fn only_superuser_settings_need_a_set_check() {
        assert!(set_needs_check("deadlock_timeout"));
        assert!(!set_needs_check("work_mem"));
        assert!(!set_needs_check("foo.bar"));
    }
}
