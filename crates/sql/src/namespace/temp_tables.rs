//! CREATE TEMP TABLE's own parts: the checks of its analysis and ON COMMIT
//! actions (see the parent module for the temporary schema).
//!
//! `ON COMMIT DELETE ROWS` and `ON COMMIT DROP` are registered per session (by
//! backend id) when the table is created (the analysis notes the action under
//! the table's name on the thread, [`catalog::create_table`] attaches it to the
//! new OID), and applied by [`pre_commit`] just before each commit of the
//! session: DELETE ROWS truncates the table (new empty files, as TRUNCATE), DROP
//! drops it. A registered table that no longer exists (dropped, or its creation
//! rolled back) is forgotten.

use ferrogres_datum::errors::{Result, SqlError};
use ferrogres_engine::engine::Backend;
use pg_query::protobuf as pb;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Mutex;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnCommit {
    DeleteRows,
    Drop,
}

thread_local! {
    /// (relation name, action) of the CREATE TEMP TABLE being run on this thread.
    static PENDING: RefCell<Option<(String, OnCommit)>> = const { RefCell::new(None) };
}

/// backend id -> (table oid, action), for the tables with an ON COMMIT action.
/// backend id -> (table oid, action).
type OnCommitActions = HashMap<u32, Vec<(u32, OnCommit)>>;

static ACTIONS: Mutex<Option<OnCommitActions>> = Mutex::new(None);

fn with_actions<R>(f: impl FnOnce(&mut OnCommitActions) -> R) -> R {
    let mut g = ACTIONS.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(HashMap::new))
}

/// CREATE [TEMP] TABLE: whether the table is temporary; its ON COMMIT clause is
/// noted for [`created`].
pub fn check_create(rv: &pb::RangeVar, oncommit: i32) -> Result<bool> {
    let temp = rv.relpersistence == "t";
    if rv.relpersistence == "u" {
        return Err(SqlError::not_supported("unlogged tables"));
    }
    use pb::OnCommitAction as A;
    let action = match A::try_from(oncommit).unwrap_or(A::Undefined) {
        A::OncommitDeleteRows => Some(OnCommit::DeleteRows),
        A::OncommitDrop => Some(OnCommit::Drop),
        _ => None,
    };
    let explicit = matches!(A::try_from(oncommit).unwrap_or(A::Undefined), A::OncommitDeleteRows | A::OncommitDrop | A::OncommitPreserveRows);
    if explicit && !temp {
        return Err(SqlError::new(b"42P16", "ON COMMIT can only be used on temporary tables"));
    }
    PENDING.with(|p| *p.borrow_mut() = action.map(|a| (rv.relname.clone(), a)));
    Ok(temp)
}

/// A table was created: attaches the ON COMMIT action noted for its name.
pub fn created(backend: &Backend, name: &str, oid: u32) {
    let Some(action) = PENDING.with(|p| {
        let mut p = p.borrow_mut();
        match p.as_ref() {
            Some((n, a)) if n == name => {
                let a = *a;
                *p = None;
                Some(a)
            }
            _ => None,
        }
    }) else {
        return;
    };
    with_actions(|m| m.entry(backend.id().0).or_default().push((oid, action)));
}

/// Before the session's commit: runs the ON COMMIT actions. Returns whether the
/// catalog changed.
pub fn pre_commit(backend: &mut Backend) -> Result<bool> {
    let id = backend.id().0;
    let list = with_actions(|m| m.get(&id).cloned().unwrap_or_default());
    if list.is_empty() {
        return Ok(false);
    }
    let mut keep = Vec::new();
    let mut changed = false;
    for (oid, action) in list {
        let snap = crate::catcache::ddl_snapshot(backend)?;
        let Some(t) = crate::constraints::table_by_oid(backend, &snap, oid)? else { continue };
        match action {
            OnCommit::Drop => crate::catalog::drop_table(backend, &snap, &t, &[oid])?,
            OnCommit::DeleteRows => {
                crate::index::truncate(backend, &snap, &[t])?;
                keep.push((oid, action));
            }
        }
        backend.txn.command_counter_increment()?;
        changed = true;
    }
    with_actions(|m| {
        if keep.is_empty() {
            m.remove(&id);
        } else {
            m.insert(id, keep);
        }
    });
    Ok(changed)
}

/// The session ended: its actions go.
pub fn forget_session(backend_id: u32) {
    with_actions(|m| {
        m.remove(&backend_id);
    });
}
