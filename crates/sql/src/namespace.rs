//! Schemas: pg_namespace rows, the search path, and each session's temporary
//! schema.
//!
//! **Search path.** The session's `search_path` setting is parsed the way
//! PostgreSQL splits an identifier list (unquoted names are folded to lower
//! case, `"$user"` stands for the schema named like the current user). The
//! *effective* path for relation names is: the session's temporary schema (if it
//! exists and `pg_temp` is not listed), then `pg_catalog` (unless listed), then
//! the listed schemas that exist. The creation schema of an unqualified CREATE is
//! the first listed schema that exists (3F000 'no schema has been selected to
//! create in' when there is none). The session points the thread's context at its
//! setting and identity ([`sync`]) before it analyzes or runs a statement, as it
//! does for the time zone; a change of `search_path` bumps the plan cache's
//! settings epoch (every SET does).
//!
//! **Temporary schemas.** A session's temporary tables live in `pg_temp_N`
//! (N = the engine's backend id, so at most one live session uses a name). The
//! schema row is inserted in the transaction of the session's first CREATE TEMP
//! TABLE (a rollback takes it away again). `pg_temp` names it in qualified names
//! and in the path. Other sessions never search it; naming it explicitly from
//! another session is 0A000 'cannot access temporary tables of other sessions'.
//! At the end of the session ([`drop_temp_schema`]) its relations and the schema
//! row are removed in a transaction of their own; after a crash the server's
//! start does the same for every `pg_temp_*` schema ([`remove_orphan_temp_schemas`]).
//!
//! Storage choice: temporary tables use the shared buffer pool and are
//! WAL-logged like ordinary tables (PostgreSQL uses backend-local buffers and no
//! WAL). That costs WAL volume but keeps one code path; the catalog rows are
//! removed at session end or the next start, so a temporary table never
//! survives its session.

use crate::catalog::{self, PG_CATALOG_NAMESPACE, PUBLIC_NAMESPACE};
use ferrogres_datum::errors::{Result, SqlError};
use crate::rowio::{insert_row, scan_rows, RelStorage};
use ferrogres_datum::types::Value;
use ferrogres_engine::engine::{Backend, Engine};
use ferrogres_engine::txn::snapshot::Snapshot;
use ferrogres_engine::txn::visibility::TmResult;
use ferrogres_engine::txn::IsolationLevel;
use std::cell::RefCell;
use std::sync::Arc;

pub mod ddl;
pub mod temp_tables;

/// The namespace of a temporary relation whose session has no temporary schema
/// yet: [`materialize`] creates the schema when the relation is created.
pub const TEMP_PENDING: u32 = u32::MAX;

/// The session running on this thread, as far as name resolution cares.
#[derive(Clone, Debug)]
struct PathCtx {
    /// The session's backend id (names its `pg_temp_N`); -1 outside a session.
    backend_id: i32,
    search_path: String,
    user: String,
}

thread_local! {
    static CTX: RefCell<PathCtx> = RefCell::new(PathCtx {
        backend_id: -1,
        search_path: "\"$user\", public".into(),
        user: "postgres".into(),
    });
}

/// Points this thread's name resolution at a session (its backend id and its
/// `search_path` setting).
pub fn sync(backend_id: i32, search_path: &str) {
    CTX.with(|c| {
        let mut c = c.borrow_mut();
        c.backend_id = backend_id;
        if c.search_path != search_path {
            c.search_path = search_path.to_string();
        }
    });
}

/// This thread's `search_path` setting (stored with a view at CREATE VIEW).
pub fn thread_search_path() -> String {
    CTX.with(|c| c.borrow().search_path.clone())
}

/// Sets this thread's `search_path` for name resolution only (a view's
/// expansion; the session's setting is put back after it).
pub fn set_thread_search_path(path: &str) {
    CTX.with(|c| c.borrow_mut().search_path = path.to_string());
}

fn ctx() -> PathCtx {
    CTX.with(|c| c.borrow().clone())
}

pub(crate) fn namespace_rel() -> RelStorage {
    catalog::namespace_rel()
}

/// `pg_temp_N` of the session on this thread.
pub fn my_temp_name() -> String {
    format!("pg_temp_{}", ctx().backend_id)
}

/// Whether `name` is a temporary schema's name (`pg_temp_N`).
pub fn is_temp_name(name: &str) -> bool {
    name.strip_prefix("pg_temp_").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Every schema visible to `snap`: (oid, name).
pub fn namespaces(backend: &Backend, snap: &Snapshot) -> Result<Vec<(u32, String)>> {
    let all = namespaces_arc(backend, snap)?;
    Ok(Vec::clone(&all))
}

/// [`namespaces`], shared: through the backend's catalog cache ([`crate::catcache`]).
pub fn namespaces_arc(backend: &Backend, snap: &Snapshot) -> Result<Arc<Vec<(u32, String)>>> {
    crate::catcache::namespaces(backend, snap, || {
        let mut out = Vec::new();
        for (_, row) in scan_rows(backend, &namespace_rel(), snap)? {
            if let [Value::Oid(o), Value::Text(n), ..] = row.as_slice() {
                out.push((*o, n.clone()));
            }
        }
        Ok(out)
    })
}

/// The name of schema `oid`, if it exists.
pub fn namespace_name(backend: &Backend, snap: &Snapshot, oid: u32) -> Result<Option<String>> {
    Ok(namespaces(backend, snap)?.into_iter().find(|(o, _)| *o == oid).map(|(_, n)| n))
}

/// Splits a search_path value into schema names (unquoted names folded to lower
/// case, `""` inside quotes is one `"`).
pub fn parse_path(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = value.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let Some(&first) = chars.peek() else { break };
        let mut item = String::new();
        if first == '"' {
            chars.next();
            while let Some(c) = chars.next() {
                if c == '"' {
                    if chars.peek() == Some(&'"') {
                        chars.next();
                        item.push('"');
                    } else {
                        break;
                    }
                } else {
                    item.push(c);
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' || c.is_whitespace() {
                    break;
                }
                item.push(c.to_ascii_lowercase());
                chars.next();
            }
        }
        out.push(item);
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        match chars.next() {
            Some(',') => continue,
            _ => break,
        }
    }
    out
}

/// One element of a `SET search_path` list as PostgreSQL writes it back
/// (quoted when it is not a plain lower-case identifier).
pub fn quote_path_element(s: &str) -> String {
    if s.is_empty() {
        return "\"\"".into();
    }
    crate::pgcatalog::quote_ident(s)
}

/// The value `SET search_path TO a, "B", 'c d'` stores: each element quoted as
/// an identifier when needed, joined by ", ".
pub fn set_value(args: &[pg_query::protobuf::Node]) -> Result<String> {
    use pg_query::protobuf::a_const::Val;
    use pg_query::NodeEnum;
    let mut parts = Vec::new();
    for a in args {
        match a.node.as_ref() {
            Some(NodeEnum::AConst(c)) => match &c.val {
                Some(Val::Sval(s)) => parts.push(quote_path_element(&s.sval)),
                _ => return Err(SqlError::not_supported("this search_path value")),
            },
            _ => return Err(SqlError::not_supported("this search_path value")),
        }
    }
    Ok(parts.join(", "))
}

/// The session's temporary schema, if it exists (visible to `snap`).
fn my_temp(nsps: &[(u32, String)]) -> Option<u32> {
    let name = my_temp_name();
    nsps.iter().find(|(_, n)| *n == name).map(|(o, _)| *o)
}

/// The effective search path: (schema oid, listed explicitly). `with_temp`: the
/// temporary schema is included (relations), else left out (functions, types).
fn effective_path(nsps: &[(u32, String)], with_temp: bool) -> Vec<(u32, bool)> {
    let c = ctx();
    let listed = parse_path(&c.search_path);
    let temp = my_temp(nsps);
    let mut out: Vec<(u32, bool)> = Vec::new();
    let push = |o: u32, explicit: bool, out: &mut Vec<(u32, bool)>| {
        if !out.iter().any(|(x, _)| *x == o) {
            out.push((o, explicit));
        }
    };
    if with_temp && !listed.iter().any(|s| s == "pg_temp") {
        if let Some(t) = temp {
            push(t, false, &mut out);
        }
    }
    if !listed.iter().any(|s| s == "pg_catalog") {
        push(PG_CATALOG_NAMESPACE, false, &mut out);
    }
    for s in &listed {
        let name = if s == "$user" { c.user.as_str() } else { s.as_str() };
        if name == "pg_temp" {
            if let (true, Some(t)) = (with_temp, temp) {
                push(t, true, &mut out);
            }
            continue;
        }
        if let Some((o, _)) = nsps.iter().find(|(_, n)| n == name) {
            push(*o, true, &mut out);
        }
    }
    out
}

/// The schemas searched for an unqualified relation name, in order.
pub fn search_path(backend: &Backend, snap: &Snapshot) -> Result<Vec<u32>> {
    Ok(effective_path(&namespaces_arc(backend, snap)?, true).into_iter().map(|x| x.0).collect())
}

/// current_schema(): the first existing listed schema (NULL if none).
pub fn current_schema(backend: &Backend, snap: &Snapshot) -> Result<Option<String>> {
    let nsps = namespaces(backend, snap)?;
    let first = effective_path(&nsps, true).into_iter().find(|x| x.1).map(|x| x.0);
    Ok(first.and_then(|o| nsps.iter().find(|(n, _)| *n == o).map(|(_, s)| s.clone())))
}

/// current_schemas(implicit): the effective path's names (with the implicit
/// ones, pg_temp_N and pg_catalog, when `implicit`).
pub fn current_schemas(backend: &Backend, snap: &Snapshot, implicit: bool) -> Result<Vec<String>> {
    let nsps = namespaces(backend, snap)?;
    Ok(effective_path(&nsps, true)
        .into_iter()
        .filter(|x| implicit || x.1)
        .filter_map(|(o, _)| nsps.iter().find(|(n, _)| *n == o).map(|(_, s)| s.clone()))
        .collect())
}

/// An explicitly named schema: its OID, `None` if it does not exist. `pg_temp`
/// is the session's temporary schema; another session's is 0A000.
pub fn schema_oid(backend: &Backend, snap: &Snapshot, name: &str) -> Result<Option<u32>> {
    let nsps = namespaces_arc(backend, snap)?;
    if name == "pg_temp" {
        return Ok(my_temp(&nsps));
    }
    if is_temp_name(name) && name != my_temp_name() && nsps.iter().any(|(_, n)| n == name) {
        return Err(SqlError::new(b"0A000", "cannot access temporary tables of other sessions"));
    }
    Ok(nsps.iter().find(|(_, n)| n == name).map(|(o, _)| *o))
}

/// The schema a relation name refers to: `schema` if given (3F000 if it does
/// not exist), else the first schema of the search path that holds a relation
/// named `name` (any kind). `None`: no such relation on the path.
pub fn relation_namespace(backend: &Backend, snap: &Snapshot, schema: Option<&str>, name: &str) -> Result<Option<u32>> {
    if let Some(s) = schema {
        return match schema_oid(backend, snap, s)? {
            Some(o) => Ok(Some(o)),
            None => Err(SqlError::new(b"3F000", format!("schema \"{s}\" does not exist"))),
        };
    }
    let path = search_path(backend, snap)?;
    let mut best: Option<usize> = None;
    for (_, row) in scan_rows(backend, &catalog::class_rel(), snap)? {
        if let [_, Value::Text(n), Value::Oid(relns), ..] = row.as_slice() {
            if n == name {
                if let Some(i) = path.iter().position(|p| p == relns) {
                    best = Some(best.map_or(i, |b: usize| b.min(i)));
                }
            }
        }
    }
    Ok(best.map(|i| path[i]))
}

/// The schema a new relation goes to. `schema`: the name it was qualified with;
/// `temp`: CREATE TEMP. A temporary relation's schema may not exist yet
/// ([`TEMP_PENDING`]).
pub fn creation_namespace(backend: &Backend, snap: &Snapshot, schema: Option<&str>, temp: bool, relname: &str) -> Result<u32> {
    let nsps = namespaces(backend, snap)?;
    let temp_ns = || my_temp(&nsps).unwrap_or(TEMP_PENDING);
    match schema {
        Some(s) if temp && s != "pg_temp" && !(is_temp_name(s) && s == my_temp_name()) => match schema_oid(backend, snap, s)? {
            None => Err(SqlError::new(b"3F000", format!("schema \"{s}\" does not exist"))),
            Some(_) => Err(SqlError::new(b"42P16", "cannot create temporary relation in non-temporary schema")),
        },
        _ if temp => Ok(temp_ns()),
        Some("pg_temp") => Ok(temp_ns()),
        Some("pg_catalog") => Err(SqlError::new(b"42501", format!("permission denied to create \"pg_catalog.{relname}\""))
            .with_detail("System catalog modifications are currently disallowed.")),
        Some(s) => match schema_oid(backend, snap, s)? {
            Some(o) => Ok(o),
            None => Err(SqlError::new(b"3F000", format!("schema \"{s}\" does not exist"))),
        },
        None => {
            let c = ctx();
            for s in parse_path(&c.search_path) {
                let name = if s == "$user" { c.user.clone() } else { s };
                if name == "pg_temp" {
                    // Listed first: new relations are temporary.
                    return Ok(temp_ns());
                }
                if let Some((o, _)) = nsps.iter().find(|(_, n)| *n == name) {
                    if *o == PG_CATALOG_NAMESPACE {
                        return Err(SqlError::new(b"42501", format!("permission denied to create \"pg_catalog.{relname}\""))
                            .with_detail("System catalog modifications are currently disallowed."));
                    }
                    return Ok(*o);
                }
            }
            Err(SqlError::new(b"3F000", "no schema has been selected to create in"))
        }
    }
}

/// Turns [`TEMP_PENDING`] into the session's temporary schema, creating its
/// pg_namespace row in the current transaction if needed.
pub fn materialize(backend: &mut Backend, ns: u32) -> Result<u32> {
    if ns != TEMP_PENDING {
        return Ok(ns);
    }
    let snap = crate::catcache::ddl_snapshot(backend)?;
    if let Some(o) = my_temp(&namespaces(backend, &snap)?) {
        return Ok(o);
    }
    let oid = backend.engine().new_oid();
    insert_row(backend, &namespace_rel(), &[Value::Oid(oid), Value::Text(my_temp_name()), Value::Oid(crate::roles::BOOTSTRAP_SUPERUSER), Value::Null])?;
    backend.txn.command_counter_increment()?;
    Ok(oid)
}

/// Whether `ns` is a temporary schema (any session's).
pub fn is_temp_namespace(backend: &Backend, snap: &Snapshot, ns: u32) -> Result<bool> {
    Ok(ns == TEMP_PENDING || namespace_name(backend, snap, ns)?.is_some_and(|n| is_temp_name(&n)))
}

/// The OIDs of the stored relations not visible by their unqualified name
/// (pg_table_is_visible is false for them): those outside the search path, and
/// those hidden by a relation of the same name earlier in the path.
pub fn invisible_relations(backend: &Backend, snap: &Snapshot) -> Result<Vec<u32>> {
    let path = search_path(backend, snap)?;
    let mut best: std::collections::HashMap<String, (usize, u32)> = std::collections::HashMap::new();
    let mut all = Vec::new();
    for (_, row) in scan_rows(backend, &catalog::class_rel(), snap)? {
        if let [Value::Oid(oid), Value::Text(n), Value::Oid(relns), ..] = row.as_slice() {
            all.push(*oid);
            if let Some(i) = path.iter().position(|p| p == relns) {
                let e = best.entry(n.clone()).or_insert((i, *oid));
                if i < e.0 {
                    *e = (i, *oid);
                }
            }
        }
    }
    let visible: std::collections::HashSet<u32> = best.into_values().map(|x| x.1).collect();
    Ok(all.into_iter().filter(|o| !visible.contains(o)).collect())
}

/// Removes every relation of schema `ns` and the schema row, in the current
/// transaction.
pub(crate) fn drop_namespace_contents(backend: &mut Backend, ns: u32) -> Result<()> {
    let snap = crate::catcache::ddl_snapshot(backend)?;
    // A temporary schema's tables are looked up as its owner session would.
    let owner = namespace_name(backend, &snap, ns)?.and_then(|n| n.strip_prefix("pg_temp_").and_then(|id| id.parse::<i32>().ok()));
    let saved = ctx().backend_id;
    if let Some(id) = owner {
        CTX.with(|c| c.borrow_mut().backend_id = id);
    }
    let r = drop_relations_of(backend, ns);
    CTX.with(|c| c.borrow_mut().backend_id = saved);
    r
}

fn drop_relations_of(backend: &mut Backend, ns: u32) -> Result<()> {
    let snap = crate::catcache::ddl_snapshot(backend)?;
    let mut rels: Vec<(u32, String, String)> = Vec::new();
    for (_, row) in scan_rows(backend, &catalog::class_rel(), &snap)? {
        if let [Value::Oid(oid), Value::Text(n), Value::Oid(relns), _, _, Value::Text(kind), ..] = row.as_slice() {
            if *relns == ns {
                rels.push((*oid, n.clone(), kind.clone()));
            }
        }
    }
    let tables: Vec<u32> = rels.iter().filter(|r| r.2 == "r").map(|r| r.0).collect();
    for (oid, _, kind) in &rels {
        if kind != "r" {
            continue;
        }
        let snap = crate::catcache::ddl_snapshot(backend)?;
        if let Some(t) = crate::constraints::table_by_oid(backend, &snap, *oid)? {
            catalog::drop_table(backend, &snap, &t, &tables)?;
            backend.txn.command_counter_increment()?;
        }
    }
    // What is left: sequences (and any index whose table went first).
    let snap = crate::catcache::ddl_snapshot(backend)?;
    delete_rows(backend, &snap, &catalog::class_rel(), |row| row.get(2) == Some(&Value::Oid(ns)))?;
    delete_rows(backend, &snap, &namespace_rel(), |row| row.first() == Some(&Value::Oid(ns)))?;
    backend.txn.command_counter_increment()?;
    Ok(())
}

pub(crate) fn delete_rows(backend: &mut Backend, snap: &Snapshot, st: &RelStorage, doomed: impl Fn(&[Value]) -> bool) -> Result<()> {
    let rows: Vec<_> = scan_rows(backend, st, snap)?.into_iter().filter(|(_, r)| doomed(r)).collect();
    for (tid, row) in rows {
        match crate::catcache::heap_delete(backend, st.rel, tid, Some(&row))? {
            TmResult::Ok | TmResult::SelfModified => {}
            _ => return Err(SqlError::new(b"40001", "could not serialize access due to concurrent update")),
        }
    }
    Ok(())
}

/// The end of a session: its temporary schema and relations go, in a
/// transaction of their own.
pub fn drop_temp_schema(backend: &mut Backend) {
    temp_tables::forget_session(backend.id().0);
    let _ = (|| -> Result<()> {
        backend.txn.begin(IsolationLevel::ReadCommitted)?;
        let snap = crate::catcache::ddl_snapshot(backend)?;
        let name = format!("pg_temp_{}", backend.id().0);
        let Some(ns) = namespaces(backend, &snap)?.into_iter().find(|(_, n)| *n == name).map(|x| x.0) else {
            backend.txn.commit()?;
            return Ok(());
        };
        match drop_namespace_contents(backend, ns) {
            Ok(()) => {
                backend.txn.commit()?;
                crate::catcache::end_transaction(backend, true);
                Ok(())
            }
            Err(e) => {
                let _ = backend.txn.abort();
                Err(e)
            }
        }
    })();
}

/// Server start: the temporary schemas left by sessions of a server that
/// stopped (or crashed) are removed with their relations.
pub fn remove_orphan_temp_schemas(engine: &Arc<Engine>) -> Result<()> {
    let mut backend = engine.backend(std::process::id() as i32)?;
    backend.txn.begin(IsolationLevel::ReadCommitted)?;
    let r = (|| -> Result<()> {
        let snap = backend.txn.statement_snapshot()?;
        for (ns, name) in namespaces(&backend, &snap)? {
            if is_temp_name(&name) {
                drop_namespace_contents(&mut backend, ns)?;
            }
        }
        Ok(())
    })();
    match r {
        Ok(()) => backend.txn.commit()?,
        Err(e) => {
            let _ = backend.txn.abort();
            return Err(e);
        }
    }
    Ok(())
}

/// Whether `ns` can hold user objects (anything but pg_catalog).
pub fn is_user_namespace(ns: u32) -> bool {
    ns != PG_CATALOG_NAMESPACE
}

/// The schema written before a relation name in messages and deparsed SQL when
/// it is not `public` (`None` for public).
pub fn qualifier(backend: &Backend, snap: &Snapshot, ns: u32) -> Result<Option<String>> {
    if ns == PUBLIC_NAMESPACE {
        return Ok(None);
    }
    namespace_name(backend, snap, ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_path_values_split_like_postgres() {
        assert_eq!(parse_path("\"$user\", public"), vec!["$user", "public"]);
        assert_eq!(parse_path("A,  \"B c\",d"), vec!["a", "B c", "d"]);
        assert_eq!(parse_path(""), Vec::<String>::new());
        assert_eq!(parse_path("\"\""), vec![""]);
        assert_eq!(parse_path("\"a\"\"b\""), vec!["a\"b"]);
        assert!(is_temp_name("pg_temp_3"));
        assert!(!is_temp_name("pg_temp"));
        assert!(!is_temp_name("pg_temp_x"));
    }
}
