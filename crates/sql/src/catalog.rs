//! The system catalog: persistent and transactional, stored in heap relations of
//! the engine like PostgreSQL's, and read with the snapshot the caller gives:
//! for relation lookups a catalog snapshot (their latest committed state,
//! `catcache::catalog_snapshot`), for the `pg_catalog` views a query's.
//!
//! | catalog | relfilenode | columns (this round) |
//! |---|---|---|
//! | pg_namespace | 2615 | oid oid, nspname text |
//! | pg_class | 1259 | oid oid, relname text, relnamespace oid, relfilenode oid, reltoastrelid oid, relkind text, relnatts int2, relam oid, relpages int4, reltuples float8 (then relowner, relacl, relallvisible: see `class_rel`) |
//! | pg_attribute | 1249 | attrelid oid, attname text, atttypid oid, attnum int2, atttypmod int4, attnotnull bool, then attisdropped, attidentity, attmissingval, attacl (see [`attribute_rel`]) |
//! | pg_attrdef | 2604 | adrelid oid, adnum int2, adbin text, adsrc text (an expression default's SQL, see [`crate::constraints`]) |
//! | pg_index | 2610 | see [`crate::index`] |
//! | pg_constraint | 2606 | see [`crate::index`] |
//!
//! These are the stored catalogs; SQL sees them through the views of
//! [`crate::pgcatalog`], which have PostgreSQL 15's columns.
//!
//! Differences from PostgreSQL, for now: names are `text` rather than the 64-byte
//! `name`; only the columns above exist; `adbin` holds a constant default in
//! its type's text form; an expression default has `adbin` NULL and its SQL in
//! `adsrc`, analyzed again when the table is loaded. pg_type is not
//! stored: its rows are the built-in constants of [`ferrogres_datum::types`] (a bootstrap
//! catalog). The catalogs have fixed relfilenodes equal to PostgreSQL's relation
//! OIDs, and are created and filled by [`bootstrap`] in one transaction on the
//! first start of a data directory.
//!
//! DDL inserts and deletes catalog rows in the user's transaction, so CREATE
//! TABLE / DROP TABLE commit or roll back with it. A dropped table's files are
//! not removed yet (no pending-delete list at commit). Lookups go through the
//! backend's catalog cache ([`crate::catcache`]); every catalog write registers
//! its invalidations there. Concurrent DDL on the same name is not serialized
//! (no unique index yet).

use ferrogres_datum::errors::{Result, SqlError};
use crate::rowio::{insert_row, scan_rows, RelStorage};
use ferrogres_datum::types::{self, Type, Value};
use ferrogres_engine::engine::{Backend, Engine, DEFAULT_TABLESPACE_OID};
use ferrogres_engine::heap::tuple::Tid;
use ferrogres_engine::storage::{ForkNumber, RelFileLocator};
use ferrogres_engine::txn::snapshot::Snapshot;
use ferrogres_engine::txn::visibility::TmResult;
use ferrogres_engine::txn::IsolationLevel;
use std::sync::Arc;

pub const PG_NAMESPACE: u32 = 2615;
pub const PG_CLASS: u32 = 1259;
pub const PG_ATTRIBUTE: u32 = 1249;
pub const PG_ATTRDEF: u32 = 2604;
pub const PG_CATALOG_NAMESPACE: u32 = 11;
pub const PUBLIC_NAMESPACE: u32 = 2200;

/// A relation of the current database ([`crate::database::current`]).
pub(crate) fn locator(rel_number: u32) -> RelFileLocator {
    RelFileLocator { spc_oid: DEFAULT_TABLESPACE_OID, db_oid: crate::database::current(), rel_number }
}

pub(crate) fn cat(rel: u32, types: &[Type]) -> RelStorage {
    RelStorage { rel: locator(rel), toast: None, types: types.to_vec(), missing: Vec::new(), proj: None, system: None }
}

/// pg_namespace as stored: oid, nspname, then (NULL in rows written before
/// owners were stored) nspowner oid and nspacl text[] ([`crate::acl`]).
pub(crate) fn namespace_rel() -> RelStorage {
    cat(PG_NAMESPACE, &[Type::Oid, Type::Text, Type::Oid, Type::Array(&Type::Text)])
}
/// pg_class as stored: the ten columns of the table above, then relowner oid
/// and relacl text[] ([`crate::acl`]; NULL in rows written before owners were
/// stored, which read as the bootstrap superuser's), then relallvisible int4
/// (heap pages the visibility map calls all-visible, stored by VACUUM and
/// ANALYZE as PostgreSQL stores it; NULL, read as 0, in rows written before).
pub(crate) fn class_rel() -> RelStorage {
    cat(
        PG_CLASS,
        &[
            Type::Oid,
            Type::Text,
            Type::Oid,
            Type::Oid,
            Type::Oid,
            Type::Text,
            Type::Int2,
            Type::Oid,
            Type::Int4,
            Type::Float8,
            Type::Oid,
            Type::Array(&Type::Text),
            Type::Int4,
        ],
    )
}
/// pg_attribute as stored: the six first columns, then (added by ALTER TABLE's
/// work, NULL in rows written before) attisdropped bool, attidentity text
/// ('a' / 'd'), attmissingval text (the value rows written before an ADD
/// COLUMN read, in its type's text form; see [`crate::alter`]), attacl text[]
/// (column privileges, stored as [`crate::acl`] stores relacl; NULL: none).
pub(crate) fn attribute_rel() -> RelStorage {
    cat(PG_ATTRIBUTE, &[Type::Oid, Type::Text, Type::Oid, Type::Int2, Type::Int4, Type::Bool, Type::Bool, Type::Text, Type::Text, Type::Array(&Type::Text)])
}
pub(crate) fn attrdef_rel() -> RelStorage {
    cat(PG_ATTRDEF, &[Type::Oid, Type::Int2, Type::Text, Type::Text])
}

/// A column of a user table.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub name: String,
    pub ty: Type,
    /// varchar(n): n + 4; else -1.
    pub typmod: i32,
    pub not_null: bool,
    /// A constant default (already of the column's type), if any.
    pub default: Option<Value>,
}

impl Column {
    /// A column removed by ALTER TABLE ... DROP COLUMN: it keeps its place (rows
    /// still hold its datum) under PostgreSQL's name `........pg.dropped.N........`,
    /// so no name resolves to it; `*`, INSERT and COPY skip it.
    pub fn is_dropped(&self) -> bool {
        self.name.starts_with("........pg.dropped.")
    }
}

/// A user table.
#[derive(Clone, Debug)]
pub struct Table {
    pub oid: u32,
    pub name: String,
    pub namespace: u32,
    pub storage: RelStorage,
    pub columns: Vec<Column>,
    /// Its indexes (B-tree), loaded with it.
    pub indexes: Vec<crate::index::IndexInfo>,
    /// Expression defaults and CHECK constraints ([`crate::constraints`]).
    pub extras: crate::constraints::TableExtras,
}

impl Table {
    /// The number of the table's own columns (dropped ones included): the
    /// system columns a query's copy may carry come after them.
    pub fn user_columns(&self) -> usize {
        match self.storage.system {
            Some(_) => self.columns.len() - crate::rowio::SYSTEM_COLUMNS.len(),
            None => self.columns.len(),
        }
    }

    /// Whether column `i` is a system column.
    pub fn is_system(&self, i: usize) -> bool {
        i >= self.user_columns()
    }

    /// Column `i`'s attribute number: 1, 2, ... for the table's own, -1 (ctid)
    /// to -6 (tableoid) for the system columns.
    pub fn attnum(&self, i: usize) -> i16 {
        let n = self.user_columns();
        if i < n {
            i as i16 + 1
        } else {
            -((i - n) as i16 + 1)
        }
    }

    /// PostgreSQL's `errtable` / `errtableconstraint` / `errtablecol`: the
    /// error fields naming this table, plus a constraint or a column.
    pub fn error_objects(&self, constraint: Option<&str>, column: Option<&str>) -> ferrogres_datum::errors::ErrorObjects {
        ferrogres_datum::errors::ErrorObjects::of_table(&self.name, self.namespace, constraint, column)
    }
}

/// A query's copy of the user table `t` whose rows carry the system columns
/// (`ctid`, `xmin`, ...) after its own ([`crate::rowio::SYSTEM_COLUMNS`]):
/// they resolve by name but are not in `*`. Tables of other kinds (the
/// pg_catalog and system views computed when read, functions) are returned as
/// they are: their rows have no place or header.
pub fn with_system_columns(mut t: Table) -> Table {
    if t.storage.system.is_some() || t.oid == 0 || t.storage.types.len() != t.columns.len() || crate::sysviews::is_view(t.oid) {
        return t;
    }
    t.storage.system = Some(t.oid);
    for (name, ty) in crate::rowio::SYSTEM_COLUMNS {
        t.columns.push(Column { name: name.to_string(), ty, typmod: -1, not_null: true, default: None });
    }
    t
}

/// Makes sure pg_database and each database's catalogs exist and are filled
/// (first start of a data directory; [`crate::database::bootstrap`]).
pub fn bootstrap(engine: &Arc<Engine>) -> Result<()> {
    crate::database::bootstrap(engine, bootstrap_database)?;
    crate::roles::bootstrap(engine)?;
    crate::param_acl::bootstrap(engine)
}

/// Makes sure the current database's catalogs exist and are filled.
/// Idempotent: a crash during bootstrap leaves no committed rows and the next start
/// fills them again.
fn bootstrap_database(engine: &Arc<Engine>) -> Result<()> {
    let mut backend = engine.backend(std::process::id() as i32)?;
    for rel in [PG_NAMESPACE, PG_CLASS, PG_ATTRIBUTE, PG_ATTRDEF, crate::index::PG_INDEX, crate::index::PG_CONSTRAINT] {
        if !engine.smgr.exists(locator(rel), ForkNumber::Main) {
            engine.create_relation(locator(rel))?;
        }
    }
    backend.txn.begin(IsolationLevel::ReadCommitted)?;
    let result = (|| -> Result<()> {
        let snap = backend.txn.statement_snapshot()?;
        if !scan_rows(&backend, &namespace_rel(), &snap)?.is_empty() {
            return Ok(());
        }
        for (oid, name) in [(PG_CATALOG_NAMESPACE, "pg_catalog"), (PUBLIC_NAMESPACE, "public")] {
            let owner = crate::acl::default_nsp_owner(oid);
            insert_row(&mut backend, &namespace_rel(), &[Value::Oid(oid), Value::Text(name.into()), Value::Oid(owner), Value::Null])?;
        }
        let catalogs: [(u32, &str, RelStorage, &[&str]); 6] = [
            (PG_NAMESPACE, "pg_namespace", namespace_rel(), &["oid", "nspname", "nspowner", "nspacl"]),
            (
                PG_CLASS,
                "pg_class",
                class_rel(),
                &["oid", "relname", "relnamespace", "relfilenode", "reltoastrelid", "relkind", "relnatts", "relam", "relpages", "reltuples", "relowner", "relacl", "relallvisible"],
            ),
            (PG_ATTRIBUTE, "pg_attribute", attribute_rel(), &["attrelid", "attname", "atttypid", "attnum", "atttypmod", "attnotnull"]),
            (PG_ATTRDEF, "pg_attrdef", attrdef_rel(), &["adrelid", "adnum", "adbin", "adsrc"]),
            (crate::index::PG_INDEX, "pg_index", crate::index::index_rel(), crate::index::PG_INDEX_COLUMNS),
            (crate::index::PG_CONSTRAINT, "pg_constraint", crate::index::constraint_rel(), crate::index::PG_CONSTRAINT_COLUMNS),
        ];
        for (oid, name, st, cols) in catalogs {
            let columns: Vec<Column> = st
                .types
                .iter()
                .zip(cols)
                .map(|(t, c)| Column { name: c.to_string(), ty: *t, typmod: -1, not_null: true, default: None })
                .collect();
            let table = Table { oid, name: name.into(), namespace: PG_CATALOG_NAMESPACE, storage: st, columns, indexes: Vec::new(), extras: Default::default() };
            insert_catalog_rows(&mut backend, &table)?;
        }
        Ok(())
    })();
    match result {
        Ok(()) => backend.txn.commit()?,
        Err(e) => {
            let _ = backend.txn.abort();
            return Err(e);
        }
    }
    Ok(())
}

fn insert_catalog_rows(backend: &mut Backend, t: &Table) -> Result<()> {
    let owner = backend.current_user;
    let relacl = crate::default_acl::initial_stored(backend, crate::default_acl::RELATION, t.namespace, owner)?;
    insert_row(
        backend,
        &class_rel(),
        &[
            Value::Oid(t.oid),
            Value::Text(t.name.clone()),
            Value::Oid(t.namespace),
            Value::Oid(t.storage.rel.rel_number),
            Value::Oid(t.storage.toast.map_or(0, |r| r.rel_number)),
            Value::Text("r".into()),
            Value::Int2(t.columns.len() as i16),
            Value::Oid(0),
            Value::Int4(0),
            Value::Float8(-1.0),
            Value::Oid(owner),
            relacl,
        ],
    )?;
    for (i, c) in t.columns.iter().enumerate() {
        let attnum = Value::Int2(i as i16 + 1);
        insert_row(
            backend,
            &attribute_rel(),
            &[
                Value::Oid(t.oid),
                Value::Text(c.name.clone()),
                Value::Oid(c.ty.oid()),
                attnum.clone(),
                Value::Int4(c.typmod),
                Value::Bool(c.not_null),
                Value::Bool(false),
                Value::Null,
                Value::Null,
            ],
        )?;
        if let Some(d) = &c.default {
            if let Some(text) = types::output(d) {
                insert_row(backend, &attrdef_rel(), &[Value::Oid(t.oid), attnum, Value::Text(text), Value::Null])?;
            }
        }
    }
    Ok(())
}

/// Resolves a schema name to its OID.
pub fn lookup_namespace(backend: &Backend, snap: &Snapshot, name: &str) -> Result<Option<u32>> {
    for (_, row) in scan_rows(backend, &namespace_rel(), snap)? {
        if let (Value::Oid(oid), Value::Text(n)) = (&row[0], &row[1]) {
            if n == name {
                return Ok(Some(*oid));
            }
        }
    }
    Ok(None)
}

/// Finds a table by name: `schema` if given, else the search path (`public`).
/// Through this backend's catalog cache ([`crate::catcache`]): a warm lookup
/// scans no catalog. The plan embeds its own copy of the descriptor.
pub fn lookup_table(backend: &Backend, snap: &Snapshot, schema: Option<&str>, name: &str) -> Result<Option<Table>> {
    Ok(lookup_table_arc(backend, snap, schema, name)?.map(|t| (*t).clone()))
}

/// [`lookup_table`], sharing the cached descriptor.
pub fn lookup_table_arc(backend: &Backend, snap: &Snapshot, schema: Option<&str>, name: &str) -> Result<Option<Arc<Table>>> {
    // The schemas to look in, in order: the named one, else the search path.
    let path = match schema {
        Some(s) => match crate::namespace::schema_oid(backend, snap, s)? {
            Some(oid) => vec![oid],
            None if s == "pg_temp" => return Ok(None),
            None => return Err(SqlError::new(b"3F000", format!("schema \"{s}\" does not exist"))),
        },
        None => crate::namespace::search_path(backend, snap)?,
    };
    // Cached resolutions first: the first schema of the path that holds the name.
    let mut cached: Option<u32> = None;
    let mut complete = true;
    for ns in &path {
        match crate::catcache::name(backend, *ns, name) {
            Some(Some(oid)) => {
                cached = Some(oid);
                break;
            }
            Some(None) => {}
            None => {
                complete = false;
                break;
            }
        }
    }
    if complete {
        let Some(oid) = cached else { return Ok(None) };
        if let Some(t) = crate::catcache::table(backend, oid) {
            return Ok(Some(t));
        }
    }
    // One scan of pg_class resolves the name in every schema of the path.
    let mut found: Option<(usize, (u32, u32, u32))> = None;
    let mut per_ns: Vec<(u32, Option<u32>)> = path.iter().map(|ns| (*ns, None)).collect();
    for (_, row) in scan_rows(backend, &class_rel(), snap)? {
        if let [Value::Oid(oid), Value::Text(n), Value::Oid(relns), Value::Oid(filenode), Value::Oid(toast), Value::Text(kind), ..] = row.as_slice() {
            if n == name && kind == "r" {
                if let Some(i) = path.iter().position(|p| p == relns) {
                    per_ns[i].1 = Some(*oid);
                    if found.is_none_or(|(j, _)| i < j) {
                        found = Some((i, (*oid, *filenode, *toast)));
                    }
                }
            }
        }
    }
    crate::catcache::put_names(backend, snap, name, &per_ns);
    let Some((i, (oid, filenode, toast))) = found else { return Ok(None) };
    let complete = crate::constraints::loading_top_level();
    let table = Arc::new(load_table(backend, snap, oid, name, path[i], filenode, toast)?);
    crate::catcache::put_table(backend, snap, &table, complete);
    Ok(Some(table))
}

/// Builds table `oid`'s descriptor from the catalogs (its pg_class row gave
/// the rest of the arguments).
fn load_table(backend: &Backend, snap: &Snapshot, oid: u32, name: &str, ns: u32, filenode: u32, toast: u32) -> Result<Table> {
    let mut cols: Vec<(i16, Column)> = Vec::new();
    let mut identity: Vec<(usize, String)> = Vec::new();
    let mut missing: Vec<(usize, Value)> = Vec::new();
    for (_, row) in scan_rows(backend, &attribute_rel(), snap)? {
        if let [Value::Oid(rel), Value::Text(n), Value::Oid(typ), Value::Int2(num), Value::Int4(typmod), Value::Bool(nn), rest @ ..] = row.as_slice() {
            if *rel == oid {
                let ty = Type::from_oid(*typ).ok_or_else(|| SqlError::new(b"XX001", format!("unknown type oid {typ} in pg_attribute")))?;
                if let Some(Value::Text(ident)) = rest.get(1) {
                    if !ident.is_empty() {
                        identity.push((*num as usize - 1, ident.clone()));
                    }
                }
                if let Some(Value::Text(m)) = rest.get(2) {
                    missing.push((*num as usize - 1, types::input(ty, m, *typmod)?));
                }
                cols.push((*num, Column { name: n.clone(), ty, typmod: *typmod, not_null: *nn, default: None }));
            }
        }
    }
    cols.sort_by_key(|c| c.0);
    let mut expr_defaults: Vec<(usize, String)> = Vec::new();
    for (_, row) in scan_rows(backend, &attrdef_rel(), snap)? {
        if let [Value::Oid(rel), Value::Int2(num), Value::Text(text), _] = row.as_slice() {
            if *rel == oid {
                if let Some((_, c)) = cols.iter_mut().find(|(n, _)| n == num) {
                    c.default = Some(types::input(c.ty, text, c.typmod)?);
                }
            }
        }
        if let [Value::Oid(rel), Value::Int2(num), Value::Null, Value::Text(sql)] = row.as_slice() {
            if *rel == oid {
                if let Some(i) = cols.iter().position(|(n, _)| n == num) {
                    expr_defaults.push((i, sql.clone()));
                }
            }
        }
    }
    let columns: Vec<Column> = cols.into_iter().map(|c| c.1).collect();
    let storage = RelStorage {
        rel: locator(filenode),
        toast: (toast != 0).then(|| locator(toast)),
        types: columns.iter().map(|c| c.ty).collect(),
        missing,
        proj: None,
        system: None,
    };
    let indexes = crate::index::load_indexes(backend, snap, oid, &columns)?;
    let mut table = Table { oid, name: name.to_string(), namespace: ns, storage, columns, indexes, extras: Default::default() };
    table.extras.identity = identity;
    crate::constraints::load(backend, snap, &mut table, expr_defaults)?;
    crate::index::register_table(backend.engine(), &table);
    Ok(table)
}

/// Removes the relation files no pg_class row references (orphans of a crash:
/// relations dropped by a transaction that committed just before it, or
/// created by one that never committed; engine `txn::pending_delete`). Called
/// at server start, before any session exists, once per database (the
/// thread's current database: [`crate::database::for_each_database`]).
pub fn remove_orphan_files(engine: &Arc<Engine>) -> Result<Vec<u32>> {
    let mut backend = engine.backend(std::process::id() as i32)?;
    backend.txn.begin(IsolationLevel::ReadCommitted)?;
    let keep = (|| -> Result<std::collections::HashSet<u32>> {
        let snap = backend.txn.statement_snapshot()?;
        let mut keep = std::collections::HashSet::new();
        for (_, row) in scan_rows(&backend, &class_rel(), &snap)? {
            for v in &row[3..5] {
                if let Value::Oid(n) = v {
                    keep.insert(*n);
                }
            }
        }
        Ok(keep)
    })();
    backend.txn.commit()?;
    Ok(engine.remove_orphan_relations(crate::database::current(), &keep?)?)
}

/// CREATE TABLE: new relation files (main, and a TOAST relation if a column is
/// variable-width), and the catalog rows, in the current transaction.
pub fn create_table(backend: &mut Backend, namespace: u32, name: &str, columns: Vec<Column>) -> Result<Table> {
    let namespace = crate::namespace::materialize(backend, namespace)?;
    let engine = backend.engine().clone();
    let oid = engine.new_oid();
    let rel = locator(oid);
    engine.create_relation(rel)?;
    backend.txn.pending_deletes.at_abort(rel);
    let toast = if columns.iter().any(|c| c.ty.typlen() == -1) {
        let t = locator(engine.new_oid());
        engine.create_relation(t)?;
        backend.txn.pending_deletes.at_abort(t);
        Some(t)
    } else {
        None
    };
    let storage = RelStorage { rel, toast, types: columns.iter().map(|c| c.ty).collect(), missing: Vec::new(), proj: None, system: None };
    let table = Table { oid, name: name.to_string(), namespace, storage, columns, indexes: Vec::new(), extras: Default::default() };
    insert_catalog_rows(backend, &table)?;
    crate::namespace::temp_tables::created(backend, name, oid);
    Ok(table)
}

/// DROP TABLE: deletes the table's catalog rows in the current transaction.
/// `dropping`: every table the statement drops (see `constraints::check_drop`).
pub fn drop_table(backend: &mut Backend, snap: &Snapshot, table: &Table, dropping: &[u32]) -> Result<()> {
    let oid = table.oid;
    crate::constraints::check_drop(backend, table, dropping)?;
    for ix in &table.indexes {
        crate::index::drop_index(backend, snap, ix)?;
    }
    crate::constraints::drop_for_table(backend, snap, table)?;
    let mut doomed: Vec<(RelStorage, Tid, Vec<Value>)> = Vec::new();
    for (tid, row) in scan_rows(backend, &class_rel(), snap)? {
        if row[0] == Value::Oid(oid) {
            doomed.push((class_rel(), tid, row));
        }
    }
    for st in [attribute_rel(), attrdef_rel()] {
        for (tid, row) in scan_rows(backend, &st, snap)? {
            if row[0] == Value::Oid(oid) {
                doomed.push((st.clone(), tid, row));
            }
        }
    }
    // The files go when the transaction commits (engine: txn::pending_delete).
    backend.txn.pending_deletes.at_commit(table.storage.rel);
    if let Some(t) = table.storage.toast {
        backend.txn.pending_deletes.at_commit(t);
    }
    for (st, tid, row) in doomed {
        match crate::catcache::heap_delete(backend, st.rel, tid, Some(&row))? {
            TmResult::Ok | TmResult::SelfModified => {}
            _ => {
                return Err(SqlError::new(b"40001", "could not serialize access due to concurrent update")
                    .with_detail(format!("table \"{}\" was changed by a concurrent transaction", table.name)))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrogres_engine::config::Settings;

    #[test]
    fn bootstrap_then_ddl_is_transactional_and_persistent() {
        let dir = tempfile::tempdir().unwrap();
        {
            let (engine, _) = Engine::open(dir.path(), Settings::default()).unwrap();
            bootstrap(&engine).unwrap();
            bootstrap(&engine).unwrap(); // idempotent
            let mut b = engine.backend(1).unwrap();
            b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
            let snap = b.txn.statement_snapshot().unwrap();
            assert_eq!(lookup_namespace(&b, &snap, "public").unwrap(), Some(PUBLIC_NAMESPACE));
            let pg_class = lookup_table(&b, &snap, Some("pg_catalog"), "pg_class").unwrap().unwrap();
            assert_eq!(pg_class.columns.len(), 13, "the stored pg_class ends with relallvisible");
            let cols = vec![
                Column { name: "a".into(), ty: Type::Int4, typmod: -1, not_null: true, default: None },
                Column { name: "b".into(), ty: Type::Varchar, typmod: 14, not_null: false, default: Some(Value::Text("x".into())) },
            ];
            create_table(&mut b, PUBLIC_NAMESPACE, "t", cols.clone()).unwrap();
            create_table(&mut b, PUBLIC_NAMESPACE, "gone", cols.clone()).unwrap();
            b.txn.commit().unwrap();
            // Rolled back: no table.
            b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
            create_table(&mut b, PUBLIC_NAMESPACE, "u", cols.clone()).unwrap();
            let snap = b.txn.statement_snapshot().unwrap();
            let gone = lookup_table(&b, &snap, None, "gone").unwrap().unwrap();
            drop_table(&mut b, &snap, &gone, &[]).unwrap();
            b.txn.abort().unwrap();
            b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
            let snap = b.txn.statement_snapshot().unwrap();
            assert!(lookup_table(&b, &snap, None, "u").unwrap().is_none());
            let gone = lookup_table(&b, &snap, None, "gone").unwrap().unwrap();
            drop_table(&mut b, &snap, &gone, &[]).unwrap();
            b.txn.commit().unwrap();
            drop(b);
            engine.shutdown().unwrap();
        }
        let (engine, _) = Engine::open(dir.path(), Settings::default()).unwrap();
        bootstrap(&engine).unwrap();
        let mut b = engine.backend(1).unwrap();
        b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        let snap = b.txn.statement_snapshot().unwrap();
        let t = lookup_table(&b, &snap, None, "t").unwrap().unwrap();
        assert_eq!(t.columns[0].name, "a");
        assert!(t.columns[0].not_null);
        assert_eq!(t.columns[1].ty, Type::Varchar);
        assert_eq!(t.columns[1].typmod, 14);
        assert_eq!(t.columns[1].default, Some(Value::Text("x".into())));
        assert!(t.storage.toast.is_some());
        assert!(lookup_table(&b, &snap, None, "gone").unwrap().is_none());
        assert_eq!(lookup_table(&b, &snap, Some("nope"), "t").unwrap_err().sqlstate(), "3F000");
    }
}
