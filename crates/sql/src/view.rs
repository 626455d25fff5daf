//! Views: CREATE [OR REPLACE] [TEMP] VIEW, DROP VIEW, ALTER VIEW ... RENAME,
//! the dependencies that make DROP TABLE fail with 2BP01, and the lookup that
//! lets analysis expand a view reference in FROM into its query
//! ([`crate::analyze::view`]).
//!
//! A view is a pg_class row (relkind `v`, relfilenode 0: no storage) with a
//! pg_attribute row per output column, plus two catalogs of this module, both
//! heap relations created by the first CREATE VIEW of a database (so a
//! database without views pays nothing: [`views_exist`] is one file test):
//!
//! | catalog | relfilenode | columns |
//! |---|---|---|
//! | pg_rewrite (stored part) | 2618 | ev_class oid, definition text (the query deparsed by libpg_query), search_path text (the creating session's `search_path`) |
//! | pg_depend (stored part) | 2608 | objid oid (the view), refobjid oid (a relation its query reads) |
//!
//! SQL sees neither directly: `pg_catalog.pg_rewrite` stays the empty view of
//! [`crate::pgcatalog`] (psql lists only non-`_RETURN` rules from it), and
//! `pg_get_viewdef` / `pg_views` / `information_schema.views` read
//! [`definition`].
//!
//! Name binding: PostgreSQL binds a view's relations by OID when it is created.
//! Here the query is kept as text and analyzed again at each use, under the
//! `search_path` that was in effect at CREATE VIEW, so a later `SET
//! search_path` does not change what the view reads; renaming a relation the
//! view reads does break it (PostgreSQL follows the OID).
//!
//! Invariant: every `v` row of pg_class has exactly one pg_rewrite row, and
//! pg_depend has a row (v, r) for every relation r named in v's query when v
//! was created or last replaced; DROP TABLE / DROP VIEW check those rows.

use crate::catalog::{self, class_rel, Column};
use ferrogres_datum::errors::{Result, SqlError};
use crate::rowio::{insert_row, scan_rows, RelStorage};
use ferrogres_datum::types::{Type, Value};
use ferrogres_engine::engine::Backend;
use ferrogres_engine::heap::tuple::Tid;
use ferrogres_engine::storage::ForkNumber;
use ferrogres_engine::txn::snapshot::Snapshot;
use ferrogres_engine::txn::visibility::TmResult;

pub const PG_REWRITE: u32 = 2618;
pub const PG_DEPEND: u32 = 2608;

fn rewrite_rel() -> RelStorage {
    catalog::cat(PG_REWRITE, &[Type::Oid, Type::Text, Type::Text])
}
fn depend_rel() -> RelStorage {
    catalog::cat(PG_DEPEND, &[Type::Oid, Type::Oid])
}

/// Whether this database has ever had a view (the pg_rewrite file exists).
pub fn views_exist(backend: &Backend) -> bool {
    backend.engine().smgr.exists(catalog::locator(PG_REWRITE), ForkNumber::Main)
}

fn ensure_rels(backend: &Backend) -> Result<()> {
    let engine = backend.engine();
    for rel in [PG_REWRITE, PG_DEPEND] {
        let loc = catalog::locator(rel);
        if !engine.smgr.exists(loc, ForkNumber::Main) {
            engine.create_relation(loc)?;
        }
    }
    Ok(())
}

/// A stored view.
#[derive(Clone, Debug)]
pub struct ViewDef {
    pub oid: u32,
    pub name: String,
    pub namespace: u32,
    /// The query, as deparsed at CREATE VIEW.
    pub sql: String,
    /// The `search_path` its names are resolved under.
    pub search_path: String,
    /// Output columns: name, type, typmod.
    pub columns: Vec<(String, Type, i32)>,
    /// WITH CHECK OPTION: `Some("local")` or `Some("cascaded")`.
    pub check_option: Option<String>,
}

/// The view a (possibly qualified) name refers to, if the relation the name
/// resolves to on the search path is a view.
pub fn lookup(backend: &Backend, snap: &Snapshot, schema: Option<&str>, name: &str) -> Result<Option<ViewDef>> {
    if !views_exist(backend) {
        return Ok(None);
    }
    let ns = match crate::namespace::relation_namespace(backend, snap, schema, name) {
        Ok(Some(ns)) => ns,
        Ok(None) | Err(_) => return Ok(None),
    };
    match crate::index::find_relation(backend, snap, ns, name)? {
        Some((oid, kind)) if kind == "v" => load(backend, snap, oid, name, ns).map(Some),
        _ => Ok(None),
    }
}

fn load(backend: &Backend, snap: &Snapshot, oid: u32, name: &str, ns: u32) -> Result<ViewDef> {
    let (sql, search_path) = definition_row(backend, snap, oid)?
        .ok_or_else(|| SqlError::internal(format!("no pg_rewrite row for view \"{name}\"")))?;
    let mut cols: Vec<(i16, (String, Type, i32))> = Vec::new();
    for (_, row) in scan_rows(backend, &catalog::attribute_rel(), snap)? {
        if let [Value::Oid(rel), Value::Text(n), Value::Oid(typ), Value::Int2(num), Value::Int4(typmod), ..] = row.as_slice() {
            if *rel == oid {
                let ty = Type::from_oid(*typ).ok_or_else(|| SqlError::new(b"XX001", format!("unknown type oid {typ} in pg_attribute")))?;
                cols.push((*num, (n.clone(), ty, *typmod)));
            }
        }
    }
    cols.sort_by_key(|c| c.0);
    let (search_path, check_option) = split_options(&search_path);
    Ok(ViewDef { oid, name: name.to_string(), namespace: ns, sql, search_path, columns: cols.into_iter().map(|c| c.1).collect(), check_option })
}

/// The stored search_path text carries the view's check option after a
/// newline (`<search_path>\ncheck_option=local`); a view without one stores
/// the search_path alone (so data directories from before keep working).
fn split_options(stored: &str) -> (String, Option<String>) {
    match stored.split_once('\n') {
        Some((path, opt)) => (path.to_string(), opt.strip_prefix("check_option=").map(str::to_string)),
        None => (stored.to_string(), None),
    }
}

/// The stored form of a view's search_path and check option (see [`split_options`]).
pub fn join_options(search_path: &str, check_option: Option<&str>) -> String {
    match check_option {
        Some(c) => format!("{search_path}\ncheck_option={c}"),
        None => search_path.to_string(),
    }
}

/// information_schema.views.check_option of a view: NONE, LOCAL or CASCADED.
pub fn check_option_of(backend: &Backend, snap: &Snapshot, oid: u32) -> Result<&'static str> {
    Ok(match definition_row(backend, snap, oid)?.and_then(|(_, p)| split_options(&p).1).as_deref() {
        Some("local") => "LOCAL",
        Some(_) => "CASCADED",
        None => "NONE",
    })
}

fn definition_row(backend: &Backend, snap: &Snapshot, oid: u32) -> Result<Option<(String, String)>> {
    if !views_exist(backend) {
        return Ok(None);
    }
    for (_, row) in scan_rows(backend, &rewrite_rel(), snap)? {
        if let [Value::Oid(o), Value::Text(sql), Value::Text(path)] = row.as_slice() {
            if *o == oid {
                return Ok(Some((sql.clone(), path.clone())));
            }
        }
    }
    Ok(None)
}

/// pg_get_viewdef's text for a view OID: `None` if it is not a view.
/// PostgreSQL prints its own deparse of the analyzed query (columns qualified,
/// one target per line); this is libpg_query's deparse of the query as
/// written, after a space and before a semicolon as PostgreSQL's is.
pub fn definition(backend: &Backend, snap: &Snapshot, oid: u32) -> Result<Option<String>> {
    Ok(definition_row(backend, snap, oid)?.map(|(sql, _)| format!(" {sql};")))
}

/// Every view: (oid, namespace, name, definition text), for pg_views and
/// information_schema.views.
pub fn all_views(backend: &Backend, snap: &Snapshot) -> Result<Vec<(u32, u32, String, String)>> {
    let mut out = Vec::new();
    if !views_exist(backend) {
        return Ok(out);
    }
    let defs: Vec<(u32, String)> = scan_rows(backend, &rewrite_rel(), snap)?
        .into_iter()
        .filter_map(|(_, r)| match r.as_slice() {
            [Value::Oid(o), Value::Text(sql), _] => Some((*o, format!(" {sql};"))),
            _ => None,
        })
        .collect();
    for (_, row) in scan_rows(backend, &class_rel(), snap)? {
        if let [Value::Oid(oid), Value::Text(n), Value::Oid(ns), _, _, Value::Text(kind), ..] = row.as_slice() {
            if kind == "v" {
                let def = defs.iter().find(|d| d.0 == *oid).map_or(String::new(), |d| d.1.clone());
                out.push((*oid, *ns, n.clone(), def));
            }
        }
    }
    out.sort();
    Ok(out)
}

// ---- statements -------------------------------------------------------------

/// A view statement, analyzed.
#[derive(Clone, Debug)]
pub enum ViewCmd {
    Create {
        namespace: u32,
        name: String,
        replace: bool,
        /// The query, deparsed.
        sql: String,
        search_path: String,
        columns: Vec<Column>,
        /// Relations the query names (tables and views).
        deps: Vec<u32>,
        /// Not TEMP, but reads a temporary relation: PostgreSQL's NOTICE, and temporary.
        temp_notice: bool,
    },
    /// DROP VIEW (`views`: qualifier and name).
    Drop { names: Vec<(Option<String>, String)>, missing_ok: bool, cascade: bool },
    /// DROP TABLE ... CASCADE: the views depending on the tables go first.
    DropTablesCascade { tables: Vec<(Option<String>, String)>, missing_ok: bool },
}

type Notice<'a> = &'a mut dyn FnMut(SqlError) -> Result<()>;

fn delete_tid(backend: &mut Backend, st: &RelStorage, tid: Tid, row: &[Value], name: &str) -> Result<()> {
    match crate::catcache::heap_delete(backend, st.rel, tid, Some(row))? {
        TmResult::Ok | TmResult::SelfModified => Ok(()),
        _ => Err(SqlError::new(b"40001", "could not serialize access due to concurrent update")
            .with_detail(format!("view \"{name}\" was changed by a concurrent transaction"))),
    }
}

fn delete_where(backend: &mut Backend, snap: &Snapshot, st: &RelStorage, name: &str, doomed: &dyn Fn(&[Value]) -> bool) -> Result<()> {
    let rows: Vec<(Tid, Vec<Value>)> = scan_rows(backend, st, snap)?.into_iter().filter(|(_, r)| doomed(r)).collect();
    for (tid, row) in rows {
        delete_tid(backend, st, tid, &row, name)?;
    }
    Ok(())
}

fn insert_body(backend: &mut Backend, oid: u32, sql: &str, search_path: &str, columns: &[Column], deps: &[u32]) -> Result<()> {
    for (i, c) in columns.iter().enumerate() {
        insert_row(
            backend,
            &catalog::attribute_rel(),
            &[
                Value::Oid(oid),
                Value::Text(c.name.clone()),
                Value::Oid(c.ty.oid()),
                Value::Int2(i as i16 + 1),
                Value::Int4(c.typmod),
                Value::Bool(false),
                Value::Bool(false),
                Value::Null,
                Value::Null,
            ],
        )?;
    }
    insert_row(backend, &rewrite_rel(), &[Value::Oid(oid), Value::Text(sql.to_string()), Value::Text(search_path.to_string())])?;
    for d in deps {
        if *d != oid {
            insert_row(backend, &depend_rel(), &[Value::Oid(oid), Value::Oid(*d)])?;
        }
    }
    Ok(())
}

/// Runs a view statement in the current transaction; returns the tag.
pub fn execute(cmd: &ViewCmd, backend: &mut Backend, snap: &Snapshot, notice: Notice) -> Result<String> {
    match cmd {
        ViewCmd::Create { namespace, name, replace, sql, search_path, columns, deps, temp_notice } => {
            if *temp_notice {
                notice(SqlError::notice(b"00000", format!("view \"{name}\" will be a temporary view")))?;
            }
            ensure_rels(backend)?;
            let namespace = crate::namespace::materialize(backend, *namespace)?;
            match crate::index::find_relation(backend, snap, namespace, name)? {
                None => {
                    let oid = backend.engine().new_oid();
                    let relacl = crate::default_acl::initial_acl(backend, snap, crate::default_acl::RELATION, namespace, backend.current_user)?
                        .map_or(Value::Null, |a| crate::acl::to_stored(&a));
                    insert_row(
                        backend,
                        &class_rel(),
                        &[
                            Value::Oid(oid),
                            Value::Text(name.clone()),
                            Value::Oid(namespace),
                            Value::Oid(0),
                            Value::Oid(0),
                            Value::Text("v".into()),
                            Value::Int2(columns.len() as i16),
                            Value::Oid(0),
                            Value::Int4(0),
                            Value::Float8(-1.0),
                            Value::Oid(backend.current_user),
                            relacl,
                        ],
                    )?;
                    insert_body(backend, oid, sql, search_path, columns, deps)?;
                }
                Some(_) if !*replace => return Err(SqlError::new(b"42P07", format!("relation \"{name}\" already exists"))),
                Some((_, kind)) if kind != "v" => return Err(SqlError::new(b"42809", format!("\"{name}\" is not a view"))),
                Some((oid, _)) => {
                    let old = load(backend, snap, oid, name, namespace)?;
                    if columns.len() < old.columns.len() {
                        return Err(SqlError::new(b"42P16", "cannot drop columns from view"));
                    }
                    for (c, (oname, oty, otypmod)) in columns.iter().zip(&old.columns) {
                        if &c.name != oname {
                            return Err(SqlError::new(b"42P16", format!("cannot change name of view column \"{oname}\" to \"{}\"", c.name))
                                .with_hint("Use ALTER VIEW ... RENAME COLUMN ... to change name of view column instead."));
                        }
                        if c.ty != *oty || c.typmod != *otypmod {
                            return Err(SqlError::new(b"42P16", format!("cannot change data type of view column \"{oname}\" from {} to {}", oty.sql_name(), c.ty.sql_name())));
                        }
                    }
                    // A definition that reads the view itself (directly or through
                    // other views) is stored, as PostgreSQL stores it; reading
                    // the view then fails with 42P17 (analyze::view).
                    delete_where(backend, snap, &catalog::attribute_rel(), name, &|r| r[0] == Value::Oid(oid))?;
                    delete_where(backend, snap, &rewrite_rel(), name, &|r| r[0] == Value::Oid(oid))?;
                    delete_where(backend, snap, &depend_rel(), name, &|r| r[0] == Value::Oid(oid))?;
                    let n = columns.len() as i16;
                    crate::index::update_class_row(backend, snap, oid, &|r| r[6] = Value::Int2(n))?;
                    insert_body(backend, oid, sql, search_path, columns, deps)?;
                }
            }
            Ok("CREATE VIEW".into())
        }
        ViewCmd::Drop { names, missing_ok, cascade } => {
            let mut found: Vec<(u32, String)> = Vec::new();
            for (schema, name) in names {
                let ns = match crate::namespace::relation_namespace(backend, snap, schema.as_deref(), name) {
                    Ok(ns) => ns,
                    Err(e) if e.sqlstate() == "3F000" && *missing_ok => {
                        notice(SqlError::notice(b"00000", e.message.clone() + ", skipping"))?;
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                let hit = match ns {
                    Some(ns) => crate::index::find_relation(backend, snap, ns, name)?,
                    None => None,
                };
                match hit {
                    Some((oid, kind)) if kind == "v" => found.push((oid, name.clone())),
                    Some((_, kind)) => {
                        let e = SqlError::new(b"42809", format!("\"{name}\" is not a view"));
                        return Err(match kind.as_str() {
                            "r" => e.with_hint("Use DROP TABLE to remove a table."),
                            "i" => e.with_hint("Use DROP INDEX to remove an index."),
                            "S" => e.with_hint("Use DROP SEQUENCE to remove a sequence."),
                            _ => e,
                        });
                    }
                    None if *missing_ok => notice(SqlError::notice(b"00000", format!("view \"{name}\" does not exist, skipping")))?,
                    None => return Err(SqlError::new(b"42P01", format!("view \"{name}\" does not exist"))),
                }
            }
            for (oid, name) in &found {
                crate::locking::lock_relation(backend, *oid, ferrogres_engine::lmgr::lock::LockMode::AccessExclusive, false, name)?;
            }
            let oids: Vec<u32> = found.iter().map(|f| f.0).collect();
            drop_dependents(backend, snap, &found, "view", *cascade, notice)?;
            for (oid, name) in &found {
                drop_view_rows(backend, snap, *oid, name)?;
            }
            let _ = oids;
            Ok("DROP VIEW".into())
        }
        ViewCmd::DropTablesCascade { tables, missing_ok } => {
            let mut found: Vec<catalog::Table> = Vec::new();
            for (schema, name) in tables {
                let seen = crate::catcache::consumed(backend);
                let t = match catalog::lookup_table(backend, snap, schema.as_deref(), name) {
                    Ok(t) => t,
                    Err(e) if e.sqlstate() == "3F000" && *missing_ok => {
                        notice(SqlError::notice(b"00000", e.message.clone() + ", skipping"))?;
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                if t.is_none() {
                    if let Some(e) = not_a_table(backend, snap, schema.as_deref(), name)? {
                        return Err(e);
                    }
                }
                match t {
                    Some(t) if t.namespace == catalog::PG_CATALOG_NAMESPACE => {
                        return Err(SqlError::new(b"42501", format!("permission denied: \"{name}\" is a system catalog")))
                    }
                    Some(t) => {
                        let t = crate::locking::lock_resolved(backend, snap, (schema.as_deref(), name), t, ferrogres_engine::lmgr::lock::LockMode::AccessExclusive, false, seen)?
                            .ok_or_else(|| SqlError::new(b"42P01", format!("table \"{name}\" does not exist")))?;
                        found.push(t);
                    }
                    None if *missing_ok => notice(SqlError::notice(b"00000", format!("table \"{name}\" does not exist, skipping")))?,
                    None => return Err(SqlError::new(b"42P01", format!("table \"{name}\" does not exist"))),
                }
            }
            let named: Vec<(u32, String)> = found.iter().map(|t| (t.oid, t.name.clone())).collect();
            drop_dependents(backend, snap, &named, "table", true, notice)?;
            let dropping: Vec<u32> = found.iter().map(|t| t.oid).collect();
            for t in &found {
                catalog::drop_table(backend, snap, t, &dropping)?;
            }
            Ok("DROP TABLE".into())
        }
    }
}

fn drop_view_rows(backend: &mut Backend, snap: &Snapshot, oid: u32, name: &str) -> Result<()> {
    delete_where(backend, snap, &class_rel(), name, &|r| r[0] == Value::Oid(oid))?;
    delete_where(backend, snap, &catalog::attribute_rel(), name, &|r| r[0] == Value::Oid(oid))?;
    delete_where(backend, snap, &rewrite_rel(), name, &|r| r[0] == Value::Oid(oid))?;
    delete_where(backend, snap, &depend_rel(), name, &|r| r[0] == Value::Oid(oid))
}

/// pg_depend as (view, relation) pairs.
fn dependencies(backend: &Backend, snap: &Snapshot) -> Result<Vec<(u32, u32)>> {
    if !views_exist(backend) {
        return Ok(Vec::new());
    }
    Ok(scan_rows(backend, &depend_rel(), snap)?
        .into_iter()
        .filter_map(|(_, r)| match r.as_slice() {
            [Value::Oid(a), Value::Oid(b)] => Some((*a, *b)),
            _ => None,
        })
        .collect())
}

/// A relation's name as PostgreSQL's object descriptions print it: qualified
/// when its schema is not on the search path.
fn relation_name(backend: &Backend, snap: &Snapshot, oid: u32) -> Result<String> {
    let path = crate::namespace::search_path(backend, snap)?;
    for (_, row) in scan_rows(backend, &class_rel(), snap)? {
        if let [Value::Oid(o), Value::Text(n), Value::Oid(ns), ..] = row.as_slice() {
            if *o == oid {
                if !path.contains(ns) {
                    if let Some(s) = crate::namespace::namespace_name(backend, snap, *ns)? {
                        return Ok(format!("{s}.{n}"));
                    }
                }
                return Ok(n.clone());
            }
        }
    }
    Ok(oid.to_string())
}

/// The views that read the relations `dropping` (of kind `what`), transitively,
/// other than those being dropped themselves: without CASCADE 2BP01 with
/// PostgreSQL's DETAIL and HINT; with it, each is dropped after a NOTICE.
fn drop_dependents(backend: &mut Backend, snap: &Snapshot, dropping: &[(u32, String)], what: &str, cascade: bool, notice: Notice) -> Result<()> {
    let deps = dependencies(backend, snap)?;
    if deps.is_empty() {
        return Ok(());
    }
    let dropped: Vec<u32> = dropping.iter().map(|d| d.0).collect();
    // Depth first, dependents of each relation in OID order (PostgreSQL's
    // order); an explicit stack, as a chain of views is as long as the user
    // made it (and may be a cycle: each view is visited once).
    let mut doomed: Vec<(u32, u32)> = Vec::new(); // (view, the relation it depends on)
    let mut seen = std::collections::HashSet::new();
    let direct = |of: u32| {
        let mut v: Vec<u32> = deps.iter().filter(|d| d.1 == of).map(|d| d.0).collect();
        v.sort();
        v.into_iter()
    };
    for d in &dropped {
        let mut stack = vec![(*d, direct(*d))];
        while let Some((of, next)) = stack.last_mut() {
            let of = *of;
            match next.next() {
                Some(v) if !dropped.contains(&v) && seen.insert(v) => {
                    doomed.push((v, of));
                    stack.push((v, direct(v)));
                }
                Some(_) => {}
                None => {
                    stack.pop();
                }
            }
        }
    }
    if doomed.is_empty() {
        return Ok(());
    }
    let mut names = Vec::new();
    for (v, _) in &doomed {
        names.push(relation_name(backend, snap, *v)?);
    }
    if !cascade {
        let (first, first_name) = &dropping[0];
        let _ = first;
        let mut detail = Vec::new();
        for (i, (_, on)) in doomed.iter().enumerate() {
            let kind = if dropped.contains(on) { what } else { "view" };
            let on_name = relation_name(backend, snap, *on)?;
            detail.push(format!("view {} depends on {kind} {on_name}", names[i]));
        }
        return Err(SqlError::new(b"2BP01", format!("cannot drop {what} {first_name} because other objects depend on it"))
            .with_detail(detail.join("\n"))
            .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
    }
    if names.len() == 1 {
        notice(SqlError::notice(b"00000", format!("drop cascades to view {}", names[0])))?;
    } else {
        let lines: Vec<String> = names.iter().map(|n| format!("drop cascades to view {n}")).collect();
        notice(SqlError::notice(b"00000", format!("drop cascades to {} other objects", names.len())).with_detail(lines.join("\n")))?;
    }
    for ((v, _), name) in doomed.iter().zip(&names) {
        crate::locking::lock_relation(backend, *v, ferrogres_engine::lmgr::lock::LockMode::AccessExclusive, false, name)?;
        drop_view_rows(backend, snap, *v, name)?;
    }
    Ok(())
}

/// DROP TABLE without CASCADE: 2BP01 when a view reads one of the tables.
pub fn check_drop_tables(backend: &mut Backend, snap: &Snapshot, tables: &[(u32, String)]) -> Result<()> {
    if tables.is_empty() || !views_exist(backend) {
        return Ok(());
    }
    let mut never = |_: SqlError| Ok(());
    drop_dependents(backend, snap, tables, "table", false, &mut never)
}

/// DROP TABLE of a view: PostgreSQL's 42809 with its HINT (`None`: not a view).
pub fn not_a_table(backend: &Backend, snap: &Snapshot, schema: Option<&str>, name: &str) -> Result<Option<SqlError>> {
    Ok(lookup(backend, snap, schema, name)?
        .map(|_| SqlError::new(b"42809", format!("\"{name}\" is not a table")).with_hint("Use DROP VIEW to remove a view.")))
}

/// Whether PostgreSQL would update this view automatically (a plain SELECT
/// from one relation without DISTINCT, GROUP BY, HAVING, LIMIT, WITH, set
/// operations, aggregates or window functions): information_schema's
/// is_updatable / is_insertable_into. `sql`: the view's query.
pub fn auto_updatable(sql: &str) -> bool {
    let Ok(stmts) = crate::parser::parse(sql.trim().trim_end_matches(';')) else { return false };
    let Some(pg_query::NodeEnum::SelectStmt(sel)) = stmts.first().map(|s| &s.node) else { return false };
    if sel.op != pg_query::protobuf::SetOperation::SetopNone as i32
        || !sel.values_lists.is_empty()
        || sel.with_clause.is_some()
        || !sel.distinct_clause.is_empty()
        || !sel.group_clause.is_empty()
        || sel.having_clause.is_some()
        || sel.limit_count.is_some()
        || sel.limit_offset.is_some()
        || sel.from_clause.len() != 1
        || !matches!(sel.from_clause[0].node, Some(pg_query::NodeEnum::RangeVar(_)))
    {
        return false;
    }
    const AGGS: &[&str] = &["count", "sum", "avg", "min", "max", "array_agg", "string_agg", "bool_and", "bool_or", "every", "json_agg", "jsonb_agg", "stddev", "variance"];
    for t in &sel.target_list {
        let Some(n) = &t.node else { continue };
        for (r, _, _, _) in n.nodes() {
            if let pg_query::NodeRef::FuncCall(f) = r {
                let name = f.funcname.last().and_then(|x| match &x.node {
                    Some(pg_query::NodeEnum::String(s)) => Some(s.sval.as_str()),
                    _ => None,
                });
                if f.over.is_some() || name.is_some_and(|n| AGGS.contains(&n)) {
                    return false;
                }
            }
        }
    }
    // At least one column that is a plain column of the relation.
    sel.target_list.iter().any(|t| matches!(&t.node, Some(pg_query::NodeEnum::ResTarget(rt)) if matches!(rt.val.as_deref().and_then(|v| v.node.as_ref()), Some(pg_query::NodeEnum::ColumnRef(_)))))
}
