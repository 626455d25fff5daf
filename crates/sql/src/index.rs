//! Indexes in the SQL layer, on the engine's B-tree (`engine::nbtree`) and hash
//! index (`engine::hash`, glue in [`crate::hash_index`]): the catalog rows
//! (pg_class relkind 'i' with relam, pg_index, pg_constraint), index DDL,
//! REINDEX, TRUNCATE, VACUUM and ANALYZE, index maintenance on insert and
//! update, and the index-scan choice for a WHERE clause.
//!
//! | catalog | relfilenode | columns (this round) |
//! |---|---|---|
//! | pg_index | 2610 | indexrelid oid, indrelid oid, indnatts int2, indnkeyatts int2, indisunique bool, indisprimary bool, indkey text, indoption text, indreloptions text (ours: the index's storage parameters, `fillfactor=60`; NULL in rows written before it existed) |
//! | pg_constraint | 2606 | oid oid, conname text, connamespace oid, contype text, conrelid oid, conindid oid, conkey text, conbin text (CHECK: the expression's SQL; FOREIGN KEY: see `crate::foreign_key`; NULL for p/u) |
//!
//! `indkey` and `indoption` hold int2vector's text form ("1 2"), `conkey` the
//! int2[] text form ("{1,2}"), until those types exist. `indoption` bits are
//! PostgreSQL's: 1 = DESC, 2 = NULLS FIRST.
//!
//! Key order: the comparator ([`SqlComparator`]) orders int2/4/8, oid and bool as
//! numbers, text and varchar bytewise (the C collation), and every other type
//! through [`crate::exec::compare`], the executor's own comparison, so types added
//! there are indexable. The engine's tree places NULLs last in its physical order;
//! a DESC column inverts the comparator. Physical null placement does not matter
//! for what the planner uses the index for (bounded scans re-check the WHERE).
//!
//! Invariants:
//! - Every visible row of a table has one entry in each of its indexes that
//!   points at the root of its HOT chain; a HOT update (no indexed column changed)
//!   adds no entry, any other update adds one in every index.
//! - An index scan fetches through `heapam::heap_hot_fetch` and re-checks the
//!   whole WHERE, so an index is only ever a way to find candidate rows.
//! - A relation's index cleanup for VACUUM and autovacuum (the registry below)
//!   covers every index ever created on it in this process, committed or not: a
//!   dead heap TID handed to VACUUM's phase 3 has no entry left in any index file.

use crate::catalog::{self, cat, class_rel, locator, Table};
use ferrogres_datum::errors::{Result, SqlError};
use crate::exec::{self, eval_pure, Ctx, Env};
use crate::plan::{CmpOp, Expr, Func};
use crate::rowio::{deform_row, insert_row, scan_rows, RelStorage};
use ferrogres_datum::types::{self, Type, Value};
use ferrogres_engine::engine::{Backend, Engine};
use ferrogres_engine::heap::heapam;
use ferrogres_engine::lmgr::lock::LockMode;
use ferrogres_engine::heap::tuple::{AttrDesc, Datum, Tid};
use ferrogres_engine::nbtree::{BTree, HeapVisibility, IntKey, KeyComparator, ScanBounds, UniqueCheck};
use ferrogres_engine::storage::RelFileLocator;
use ferrogres_engine::txn::snapshot::Snapshot;
use ferrogres_engine::txn::visibility::{DirtyResult, TmResult};
use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};
use std::ops::Bound;
use std::sync::{Arc, Mutex};

pub const PG_INDEX: u32 = 2610;
pub const PG_CONSTRAINT: u32 = 2606;
/// pg_am's btree.
pub const BTREE_AM_OID: u32 = 403;
pub const PG_INDEX_COLUMNS: &[&str] =
    &["indexrelid", "indrelid", "indnatts", "indnkeyatts", "indisunique", "indisprimary", "indkey", "indoption", "indreloptions"];
pub const PG_CONSTRAINT_COLUMNS: &[&str] = &["oid", "conname", "connamespace", "contype", "conrelid", "conindid", "conkey", "conbin"];

pub fn index_rel() -> RelStorage {
    cat(PG_INDEX, &[Type::Oid, Type::Oid, Type::Int2, Type::Int2, Type::Bool, Type::Bool, Type::Text, Type::Text, Type::Text])
}
pub fn constraint_rel() -> RelStorage {
    cat(PG_CONSTRAINT, &[Type::Oid, Type::Text, Type::Oid, Type::Text, Type::Oid, Type::Oid, Type::Text, Type::Text])
}

/// indoption bits.
const INDOPTION_DESC: i16 = 1;
const INDOPTION_NULLS_FIRST: i16 = 2;

/// An index's access method (pg_class.relam).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexAm {
    Btree,
    /// One key column, equality only, no NULLs, never unique (`crate::hash_index`).
    Hash,
}

impl IndexAm {
    pub fn oid(self) -> u32 {
        match self {
            IndexAm::Btree => BTREE_AM_OID,
            IndexAm::Hash => crate::hash_index::HASH_AM_OID,
        }
    }
    pub fn from_oid(oid: u32) -> IndexAm {
        if oid == crate::hash_index::HASH_AM_OID {
            IndexAm::Hash
        } else {
            IndexAm::Btree
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            IndexAm::Btree => "btree",
            IndexAm::Hash => "hash",
        }
    }
}

/// An index of a table.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexInfo {
    pub oid: u32,
    pub name: String,
    pub rel: RelFileLocator,
    pub am: IndexAm,
    /// The `fillfactor` storage parameter, if given (hash indexes; B-tree
    /// indexes: the leaf fill of a build, default 90).
    pub fillfactor: Option<u16>,
    /// The columns: positions in the table's columns, key columns in key order,
    /// then INCLUDE columns (stored as trailing key columns: the engine's tree has
    /// no payload columns; harmless for a non-unique index, the only kind that
    /// may have them).
    pub columns: Vec<usize>,
    /// The number of key columns (indnkeyatts).
    pub nkey: usize,
    pub types: Vec<Type>,
    pub unique: bool,
    pub primary: bool,
    pub desc: Vec<bool>,
    pub nulls_first: Vec<bool>,
    /// `Some('p' | 'u')`: the index belongs to a PRIMARY KEY / UNIQUE constraint
    /// (of the same name).
    pub constraint: Option<char>,
    /// The B-tree handle built on first use and kept with this description
    /// (which the catalog cache shares between sessions), so a query does
    /// not rebuild the key descriptor and comparator and the tree's cached
    /// root survives from one query to the next.
    pub tree: TreeCache,
}

/// [`IndexInfo::btree`]'s handle, built once. A clone starts empty (a
/// clone may get another `rel`), and two caches always compare equal: the
/// cache is not part of what an index is.
#[derive(Default)]
pub struct TreeCache(std::sync::OnceLock<Arc<BTree>>);

impl Clone for TreeCache {
    fn clone(&self) -> TreeCache {
        TreeCache::default()
    }
}

impl PartialEq for TreeCache {
    fn eq(&self, _: &TreeCache) -> bool {
        true
    }
}

impl std::fmt::Debug for TreeCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() { "TreeCache(built)" } else { "TreeCache(empty)" })
    }
}

/// Orders the datums of one index's key columns (see the module doc).
pub struct SqlComparator {
    pub types: Vec<Type>,
    pub desc: Vec<bool>,
}

fn datum_value(ty: Type, d: &Datum) -> Value {
    let v = match d {
        Datum::ByVal(raw) => types::from_byval(ty, *raw),
        Datum::Varlena(b) => types::from_varlena_typed(ty, b),
        _ => return Value::Null,
    };
    v.unwrap_or(Value::Null)
}

impl KeyComparator for SqlComparator {
    fn compare(&self, col: usize, a: &Datum, b: &Datum) -> Ordering {
        let ty = self.types.get(col).copied().unwrap_or(Type::Text);
        let o = match (ty, a, b) {
            (Type::Int2, Datum::ByVal(x), Datum::ByVal(y)) => (*x as u16 as i16).cmp(&(*y as u16 as i16)),
            (Type::Int4, Datum::ByVal(x), Datum::ByVal(y)) => (*x as u32 as i32).cmp(&(*y as u32 as i32)),
            (Type::Int8, Datum::ByVal(x), Datum::ByVal(y)) => (*x as i64).cmp(&(*y as i64)),
            (Type::Oid | Type::Bool, Datum::ByVal(x), Datum::ByVal(y)) => x.cmp(y),
            (Type::Text | Type::Varchar, Datum::Varlena(x), Datum::Varlena(y)) => x.cmp(y),
            _ => exec::compare(&datum_value(ty, a), &datum_value(ty, b)),
        };
        if self.desc.get(col).copied().unwrap_or(false) {
            o.reverse()
        } else {
            o
        }
    }

    fn int_key(&self, col: usize) -> Option<IntKey> {
        let width = match self.types.get(col)? {
            Type::Int2 => 2,
            Type::Int4 => 4,
            Type::Int8 => 8,
            _ => return None,
        };
        Some(IntKey { width, desc: self.desc.get(col).copied().unwrap_or(false) })
    }
}

impl IndexInfo {
    /// The B-tree over this index's relation, built on the first call and
    /// shared by later ones (see [`TreeCache`]).
    pub fn btree(&self) -> Result<Arc<BTree>> {
        if let Some(t) = self.tree.0.get() {
            return Ok(t.clone());
        }
        let t = Arc::new(self.build_btree()?);
        Ok(self.tree.0.get_or_init(|| t).clone())
    }

    fn build_btree(&self) -> Result<BTree> {
        if self.am != IndexAm::Btree {
            return Err(SqlError::internal(format!("index \"{}\" is not a btree index", self.name)));
        }
        let descs: Vec<AttrDesc> = self
            .types
            .iter()
            .map(|t| t.attr_desc().ok_or_else(|| SqlError::internal(format!("index column of type {}", t.typname()))))
            .collect::<Result<_>>()?;
        let cmp = SqlComparator { types: self.types.clone(), desc: self.desc.clone() };
        Ok(BTree::new(self.rel, descs, Arc::new(cmp), self.unique).with_key_columns(self.nkey))
    }

    /// The storage parameters as stored in pg_index.indreloptions (and shown by
    /// pg_class.reloptions): `fillfactor=60`, or NULL.
    fn reloptions(&self) -> Value {
        match self.fillfactor {
            Some(f) => Value::Text(format!("fillfactor={f}")),
            None => Value::Null,
        }
    }

    /// Creates the index's file (empty; a hash index with buckets for
    /// `expected_rows`).
    fn create_file(&self, engine: &Engine, expected_rows: f64) -> Result<()> {
        match self.am {
            IndexAm::Btree => Ok(self.btree()?.create(engine)?),
            IndexAm::Hash => crate::hash_index::create(engine, self, expected_rows),
        }
    }

    fn indoption(&self) -> String {
        let v: Vec<String> = (0..self.columns.len())
            .map(|i| {
                let mut o = 0;
                if self.desc[i] {
                    o |= INDOPTION_DESC;
                }
                if self.nulls_first[i] {
                    o |= INDOPTION_NULLS_FIRST;
                }
                o.to_string()
            })
            .collect();
        v.join(" ")
    }
}

// ----- the index-cleanup registry (VACUUM and autovacuum) -------------------------

type Registry = HashMap<(usize, RelFileLocator), Arc<Mutex<Vec<IndexInfo>>>>;
static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

/// Adds `ix` to the index cleanup of heap `heap` (once), and registers that
/// cleanup with the engine for autovacuum (`heap::autovacuum::set_index_cleanup`).
fn register(engine: &Arc<Engine>, heap: RelFileLocator, ix: &IndexInfo) {
    let list = {
        let mut m = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        let key = (Arc::as_ptr(engine) as usize, heap);
        let map = m.get_or_insert_with(HashMap::new);
        if let Some(l) = map.get(&key) {
            let mut v = l.lock().unwrap_or_else(|e| e.into_inner());
            if !v.iter().any(|i| i.rel == ix.rel) {
                v.push(ix.clone());
            }
            return;
        }
        let l = Arc::new(Mutex::new(vec![ix.clone()]));
        map.insert(key, l.clone());
        l
    };
    let weak = Arc::downgrade(engine);
    let cleanup: ferrogres_engine::heap::autovacuum::IndexCleanup = Arc::new(move |tids: &[Tid]| {
        let Some(engine) = weak.upgrade() else { return Ok(()) };
        let indexes = list.lock().unwrap_or_else(|e| e.into_inner()).clone();
        bulk_delete_all(&engine, &indexes, tids).map_err(|e| ferrogres_engine::error::Error::internal(e.message))
    });
    ferrogres_engine::heap::autovacuum::set_index_cleanup(engine, heap, Some(cleanup));
}

fn registered(engine: &Arc<Engine>, heap: RelFileLocator) -> Vec<IndexInfo> {
    let m = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    m.as_ref()
        .and_then(|map| map.get(&(Arc::as_ptr(engine) as usize, heap)))
        .map(|l| l.lock().unwrap_or_else(|e| e.into_inner()).clone())
        .unwrap_or_default()
}

fn bulk_delete_all(engine: &Engine, indexes: &[IndexInfo], tids: &[Tid]) -> Result<()> {
    let dead: HashSet<Tid> = tids.iter().copied().collect();
    for ix in indexes {
        if !engine.smgr.exists(ix.rel, ferrogres_engine::storage::ForkNumber::Main) {
            continue;
        }
        match ix.am {
            IndexAm::Btree => {
                ix.btree()?.bulk_delete(engine, &|t| dead.contains(&t))?;
            }
            IndexAm::Hash => crate::hash_index::bulk_delete(engine, ix, &|t| dead.contains(&t))?,
        }
    }
    Ok(())
}

// ----- catalog ---------------------------------------------------------------------

fn int2vector(v: &str) -> Vec<i16> {
    v.split_whitespace().filter_map(|x| x.parse().ok()).collect()
}

/// The indexes of table `table_oid` (whose columns are `columns`), in creation
/// (OID) order. Registers them for VACUUM's index cleanup.
#[allow(clippy::type_complexity)] // a catalog row's fields, consumed below
pub fn load_indexes(backend: &Backend, snap: &Snapshot, table_oid: u32, columns: &[catalog::Column]) -> Result<Vec<IndexInfo>> {
    // (index OID, unique, primary, indkey, indoption, key columns, fillfactor)
    type Found = (u32, bool, bool, Vec<i16>, Vec<i16>, i16, Option<u16>);
    let mut found: Vec<Found> = Vec::new();
    for (_, row) in scan_rows(backend, &index_rel(), snap)? {
        if let [Value::Oid(ix), Value::Oid(rel), _, Value::Int2(nkey), Value::Bool(u), Value::Bool(p), Value::Text(k), Value::Text(o), opts @ ..] = row.as_slice() {
            if *rel == table_oid {
                let ff = match opts.first() {
                    Some(Value::Text(t)) => t.strip_prefix("fillfactor=").and_then(|v| v.parse().ok()),
                    _ => None,
                };
                found.push((*ix, *u, *p, int2vector(k), int2vector(o), *nkey, ff));
            }
        }
    }
    if found.is_empty() {
        return Ok(Vec::new());
    }
    let mut names: HashMap<u32, (String, u32, IndexAm)> = HashMap::new();
    for (_, row) in scan_rows(backend, &class_rel(), snap)? {
        if let [Value::Oid(oid), Value::Text(n), _, Value::Oid(filenode), _, _, _, relam, ..] = row.as_slice() {
            if found.iter().any(|f| f.0 == *oid) {
                let am = match relam {
                    Value::Oid(a) => IndexAm::from_oid(*a),
                    _ => IndexAm::Btree,
                };
                names.insert(*oid, (n.clone(), *filenode, am));
            }
        }
    }
    let mut cons: HashMap<u32, char> = HashMap::new();
    for (_, row) in scan_rows(backend, &constraint_rel(), snap)? {
        if let [_, _, _, Value::Text(t), Value::Oid(rel), Value::Oid(ix), ..] = row.as_slice() {
            if *rel == table_oid {
                cons.insert(*ix, t.chars().next().unwrap_or('u'));
            }
        }
    }
    found.sort_by_key(|f| f.0);
    let mut out = Vec::new();
    for (oid, unique, primary, keys, opts, nkey, fillfactor) in found {
        let Some((name, filenode, am)) = names.remove(&oid) else { continue };
        let cols: Vec<usize> = keys.iter().map(|k| (*k - 1) as usize).collect();
        if cols.iter().any(|c| *c >= columns.len()) {
            return Err(SqlError::new(b"XX001", format!("index \"{name}\" names a column its table does not have")));
        }
        out.push(IndexInfo {
            oid,
            name,
            rel: locator(filenode),
            am,
            fillfactor,
            types: cols.iter().map(|c| columns[*c].ty).collect(),
            desc: opts.iter().map(|o| o & INDOPTION_DESC != 0).collect(),
            nulls_first: opts.iter().map(|o| o & INDOPTION_NULLS_FIRST != 0).collect(),
            columns: cols,
            nkey: nkey as usize,
            unique,
            primary,
            constraint: cons.get(&oid).copied(),
            tree: TreeCache::default(),
        });
    }
    Ok(out)
}

/// The relation named `name` in `ns`: (oid, relkind).
pub fn find_relation(backend: &Backend, snap: &Snapshot, ns: u32, name: &str) -> Result<Option<(u32, String)>> {
    for (_, row) in scan_rows(backend, &class_rel(), snap)? {
        if let [Value::Oid(oid), Value::Text(n), Value::Oid(relns), _, _, Value::Text(kind), ..] = row.as_slice() {
            if n == name && *relns == ns {
                return Ok(Some((*oid, kind.clone())));
            }
        }
    }
    Ok(None)
}

/// Names of every table (relkind 'r') of `ns`, in OID order.
pub fn table_names(backend: &Backend, snap: &Snapshot, ns: u32) -> Result<Vec<String>> {
    let mut v: Vec<(u32, String)> = Vec::new();
    for (_, row) in scan_rows(backend, &class_rel(), snap)? {
        if let [Value::Oid(oid), Value::Text(n), Value::Oid(relns), _, _, Value::Text(kind), ..] = row.as_slice() {
            if *relns == ns && kind == "r" {
                v.push((*oid, n.clone()));
            }
        }
    }
    v.sort();
    Ok(v.into_iter().map(|x| x.1).collect())
}

fn concurrent_change(what: &str) -> SqlError {
    SqlError::new(b"40001", "could not serialize access due to concurrent update")
        .with_detail(format!("\"{what}\" was changed by a concurrent transaction"))
}

/// Deletes the rows of catalog `st` whose column `col` is `oid`.
fn delete_rows(backend: &mut Backend, snap: &Snapshot, st: &RelStorage, col: usize, oid: u32, what: &str) -> Result<()> {
    let doomed: Vec<(Tid, Vec<Value>)> = scan_rows(backend, st, snap)?.into_iter().filter(|(_, r)| r[col] == Value::Oid(oid)).collect();
    for (tid, row) in doomed {
        match crate::catcache::heap_delete(backend, st.rel, tid, Some(&row))? {
            TmResult::Ok | TmResult::SelfModified => {}
            _ => return Err(concurrent_change(what)),
        }
    }
    Ok(())
}

/// Replaces the pg_class row of `oid` by a new version changed by `f`, in the
/// current transaction (so its xmin is this transaction's).
pub(crate) fn update_class_row(backend: &mut Backend, snap: &Snapshot, oid: u32, f: &dyn Fn(&mut Vec<Value>)) -> Result<()> {
    let st = class_rel();
    let Some((tid, mut row)) = scan_rows(backend, &st, snap)?.into_iter().find(|(_, r)| r[0] == Value::Oid(oid)) else {
        return Err(SqlError::internal(format!("no pg_class row for relation {oid}")));
    };
    match crate::catcache::heap_delete(backend, st.rel, tid, Some(&row))? {
        TmResult::Ok | TmResult::SelfModified => {}
        _ => return Err(concurrent_change("pg_class")),
    }
    f(&mut row);
    insert_row(backend, &st, &row)?;
    Ok(())
}

/// Marks table column `col` (0-based) NOT NULL in pg_attribute.
fn set_not_null(backend: &mut Backend, snap: &Snapshot, table: &Table, col: usize) -> Result<()> {
    // The whole stored row (attidentity, attmissingval, attacl are kept).
    let st = catalog::attribute_rel();
    let attnum = Value::Int2(col as i16 + 1);
    let Some((tid, mut row)) =
        scan_rows(backend, &st, snap)?.into_iter().find(|(_, r)| r[0] == Value::Oid(table.oid) && r[3] == attnum)
    else {
        return Err(SqlError::internal("no pg_attribute row"));
    };
    match crate::catcache::heap_delete(backend, st.rel, tid, Some(&row))? {
        TmResult::Ok | TmResult::SelfModified => {}
        _ => return Err(concurrent_change(&table.name)),
    }
    row[5] = Value::Bool(true);
    insert_row(backend, &st, &row)?;
    Ok(())
}

/// What CREATE INDEX and PRIMARY KEY / UNIQUE constraints ask for.
#[derive(Clone, Debug)]
pub struct IndexSpec {
    /// `None`: PostgreSQL's automatic name.
    pub name: Option<String>,
    pub columns: Vec<usize>,
    pub desc: Vec<bool>,
    pub nulls_first: Vec<bool>,
    /// Key columns: the first `nkey` of `columns`; the rest are INCLUDE columns.
    pub nkey: usize,
    pub unique: bool,
    pub primary: bool,
    /// A constraint (PRIMARY KEY / UNIQUE) rather than a plain index.
    pub constraint: bool,
    pub if_not_exists: bool,
    pub am: IndexAm,
    /// `WITH (fillfactor = n)` (hash and B-tree indexes).
    pub fillfactor: Option<u16>,
}

/// PostgreSQL's ChooseRelationName: `<table>_<cols>_<suffix>`, then with 1, 2, ...
/// appended until no relation of the namespace has the name.
fn choose_name(backend: &Backend, snap: &Snapshot, table: &Table, spec: &IndexSpec) -> Result<String> {
    let suffix = if spec.primary {
        "pkey"
    } else if spec.constraint {
        "key"
    } else {
        "idx"
    };
    let mut base = table.name.clone();
    if !spec.primary {
        for c in &spec.columns {
            base.push('_');
            base.push_str(&table.columns[*c].name);
        }
    }
    let mut taken: HashSet<String> = HashSet::new();
    for (_, row) in scan_rows(backend, &class_rel(), snap)? {
        if let [_, Value::Text(n), Value::Oid(ns), ..] = row.as_slice() {
            if *ns == table.namespace {
                taken.insert(n.clone());
            }
        }
    }
    let mut n = 0;
    loop {
        let cand = if n == 0 { format!("{base}_{suffix}") } else { format!("{base}_{suffix}{n}") };
        let cand = truncate_name(&cand, suffix, n, &base);
        if !taken.contains(&cand) {
            return Ok(cand);
        }
        n += 1;
    }
}

/// Names longer than NAMEDATALEN - 1 (63) bytes: the base is cut, not the suffix.
fn truncate_name(cand: &str, suffix: &str, n: u32, base: &str) -> String {
    if cand.len() <= 63 {
        return cand.to_string();
    }
    let tail = if n == 0 { format!("_{suffix}") } else { format!("_{suffix}{n}") };
    let mut cut = 63 - tail.len();
    while !base.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{}", &base[..cut], tail)
}

/// CREATE INDEX, or the index of a PRIMARY KEY / UNIQUE constraint: the catalog
/// rows, the index file, and an entry for every row `snap` sees (filled by
/// [`crate::index_build`]). Returns `None` when IF NOT EXISTS found the name
/// taken (the caller sends the notice).
pub fn create_index(backend: &mut Backend, env: &dyn Env, snap: &Snapshot, table: &mut Table, spec: &IndexSpec) -> Result<Option<IndexInfo>> {
    let name = match &spec.name {
        Some(n) => n.clone(),
        None => choose_name(backend, snap, table, spec)?,
    };
    if find_relation(backend, snap, table.namespace, &name)?.is_some() {
        if spec.if_not_exists {
            return Ok(None);
        }
        return Err(SqlError::new(b"42P07", format!("relation \"{name}\" already exists")));
    }
    if spec.primary && table.indexes.iter().any(|i| i.primary) {
        return Err(SqlError::new(b"42P16", format!("multiple primary keys for table \"{}\" are not allowed", table.name)));
    }
    // A PRIMARY KEY makes its columns NOT NULL; the build's scan checks the rows
    // (23502 for a NULL: the transaction, these catalog changes with it, aborts).
    let mut not_null = Vec::new();
    if spec.primary {
        for c in &spec.columns {
            if table.columns[*c].not_null {
                continue;
            }
            not_null.push(*c);
            set_not_null(backend, snap, table, *c)?;
            table.columns[*c].not_null = true;
        }
    }
    let engine = backend.engine().clone();
    let oid = engine.new_oid();
    let ix = IndexInfo {
        oid,
        name: name.clone(),
        rel: locator(oid),
        am: spec.am,
        fillfactor: spec.fillfactor,
        columns: spec.columns.clone(),
        nkey: spec.nkey,
        types: spec.columns.iter().map(|c| table.columns[*c].ty).collect(),
        unique: spec.unique || spec.primary,
        primary: spec.primary,
        desc: spec.desc.clone(),
        nulls_first: spec.nulls_first.clone(),
        constraint: spec.constraint.then_some(if spec.primary { 'p' } else { 'u' }),
        tree: TreeCache::default(),
    };
    if ix.am == IndexAm::Hash {
        // (A B-tree's file is created by its bottom-up build.)
        ix.create_file(&engine, crate::index_build::count_rows(backend, env, snap, table)? as f64)?;
    }
    backend.txn.pending_deletes.at_abort(ix.rel);
    register(&engine, table.storage.rel, &ix);
    insert_row(
        backend,
        &class_rel(),
        &[
            Value::Oid(oid),
            Value::Text(name.clone()),
            Value::Oid(table.namespace),
            Value::Oid(oid),
            Value::Oid(0),
            Value::Text("i".into()),
            Value::Int2(ix.columns.len() as i16),
            Value::Oid(ix.am.oid()),
            Value::Int4(0),
            Value::Float8(0.0),
        ],
    )?;
    let keys: Vec<String> = ix.columns.iter().map(|c| (c + 1).to_string()).collect();
    insert_row(
        backend,
        &index_rel(),
        &[
            Value::Oid(oid),
            Value::Oid(table.oid),
            Value::Int2(ix.columns.len() as i16),
            Value::Int2(ix.nkey as i16),
            Value::Bool(ix.unique),
            Value::Bool(ix.primary),
            Value::Text(keys.join(" ")),
            Value::Text(ix.indoption()),
            ix.reloptions(),
        ],
    )?;
    if let Some(t) = ix.constraint {
        insert_row(
            backend,
            &constraint_rel(),
            &[
                Value::Oid(engine.new_oid()),
                Value::Text(name.clone()),
                Value::Oid(table.namespace),
                Value::Text(t.to_string()),
                Value::Oid(table.oid),
                Value::Oid(oid),
                Value::Text(format!("{{{}}}", keys.join(","))),
                Value::Null,
            ],
        )?;
    }
    crate::index_build::build(backend, env, snap, table, &ix, &not_null)?;
    table.indexes.push(ix.clone());
    Ok(Some(ix))
}

/// REINDEX: each of `indexes` (of `table`) gets a new file built from the rows
/// `snap` sees; the old file goes at commit, the new one at abort (as TRUNCATE).
pub fn reindex(backend: &mut Backend, env: &dyn Env, snap: &Snapshot, table: &Table, indexes: &[IndexInfo]) -> Result<()> {
    let engine = backend.engine().clone();
    let has_hash = indexes.iter().any(|i| i.am == IndexAm::Hash);
    let nrows = if has_hash { crate::index_build::count_rows(backend, env, snap, table)? } else { 0 };
    for ix in indexes {
        crate::locking::lock_relation(backend, ix.oid, LockMode::AccessExclusive, false, &ix.name)?;
        let n = engine.new_oid();
        let new = IndexInfo { rel: locator(n), ..ix.clone() };
        if new.am == IndexAm::Hash {
            new.create_file(&engine, nrows as f64)?;
        }
        backend.txn.pending_deletes.at_abort(new.rel);
        backend.txn.pending_deletes.at_commit(ix.rel);
        // SERIALIZABLE: the SIREAD locks on the old file (index pages read)
        // become relation locks on the table, which every write checks
        // (PostgreSQL's TransferPredicateLocksToHeapRelation in REINDEX).
        engine.txn.predicate.transfer_to_relations(&[ix.rel], &[table.storage.rel]);
        register(&engine, table.storage.rel, &new);
        update_class_row(backend, snap, ix.oid, &|row| {
            row[3] = Value::Oid(n);
        })?;
        crate::index_build::build(backend, env, snap, table, &new, &[])?;
    }
    // Cached descriptors and plans of the table hold the indexes' old files.
    crate::catcache::relation_changed(backend, table.oid);
    Ok(())
}

/// DROP INDEX (or an index of a dropped table): its catalog rows. The file stays
/// (dropped relations' files are not removed yet).
pub fn drop_index(backend: &mut Backend, snap: &Snapshot, ix: &IndexInfo) -> Result<()> {
    backend.txn.pending_deletes.at_commit(ix.rel);
    delete_rows(backend, snap, &class_rel(), 0, ix.oid, &ix.name)?;
    delete_rows(backend, snap, &index_rel(), 0, ix.oid, &ix.name)?;
    delete_rows(backend, snap, &constraint_rel(), 5, ix.oid, &ix.name)?;
    Ok(())
}

/// An index by name, with the table it belongs to.
pub fn lookup_index(backend: &Backend, snap: &Snapshot, ns: u32, name: &str) -> Result<Option<(Table, IndexInfo)>> {
    let Some((oid, kind)) = find_relation(backend, snap, ns, name)? else { return Ok(None) };
    if kind != "i" {
        let e = SqlError::new(b"42809", format!("\"{name}\" is not an index"));
        return Err(if kind == "r" { e.with_hint("Use DROP TABLE to remove a table.") } else { e });
    }
    let Some(table_oid) = scan_rows(backend, &index_rel(), snap)?.into_iter().find_map(|(_, r)| match (&r[0], &r[1]) {
        (Value::Oid(i), Value::Oid(t)) if *i == oid => Some(*t),
        _ => None,
    }) else {
        return Ok(None);
    };
    let Some(table_name) = scan_rows(backend, &class_rel(), snap)?.into_iter().find_map(|(_, r)| match (&r[0], &r[1]) {
        (Value::Oid(o), Value::Text(n)) if *o == table_oid => Some(n.clone()),
        _ => None,
    }) else {
        return Ok(None);
    };
    let Some(table) = crate::constraints::table_by_oid(backend, snap, table_oid)? else { return Ok(None) };
    let _ = table_name;
    let ix = table.indexes.iter().find(|i| i.oid == oid).cloned();
    Ok(ix.map(|ix| (table, ix)))
}

// ----- maintenance -------------------------------------------------------------------

struct HeapDirty<'a> {
    backend: &'a Backend,
    rel: RelFileLocator,
}

impl HeapVisibility for HeapDirty<'_> {
    fn satisfies_dirty(&self, tid: Tid) -> ferrogres_engine::error::Result<DirtyResult> {
        heapam::heap_hot_satisfies_dirty(self.backend, self.rel, tid)
    }
}

fn key_values(ix: &IndexInfo, row: &[Value]) -> Vec<Value> {
    ix.columns.iter().map(|c| row[*c].clone()).collect()
}

fn insert_entry(backend: &Backend, table: &Table, ix: &IndexInfo, tree: &BTree, row: &[Value], tid: Tid) -> Result<()> {
    let vals = key_values(ix, row);
    let datums: Vec<Option<Datum<'_>>> = ix.types.iter().zip(&vals).map(|(t, v)| types::to_datum(*t, v)).collect::<Result<_>>()?;
    let heap = HeapDirty { backend, rel: table.storage.rel };
    // The DETAIL names the key columns only (not INCLUDE columns).
    let names: Vec<&str> = ix.columns[..ix.nkey].iter().map(|c| table.columns[*c].name.as_str()).collect();
    let cols = names.join(", ");
    let shown: Vec<String> = vals[..ix.nkey].iter().map(|v| types::output(v).unwrap_or_else(|| "null".into())).collect();
    let shown = shown.join(", ");
    let fmt = move |_: &[Option<Datum>]| (cols.clone(), shown.clone());
    let uc = UniqueCheck { backend: backend.id(), heap: &heap, index_name: &ix.name, format_key: &fmt };
    // SERIALIZABLE: the leaf page the entry goes into is checked against the
    // SIREAD locks of its readers; a duplicate this transaction's snapshot may
    // not see is checked the same way first, so that a serialization failure
    // is reported rather than masked by the unique violation (README of lmgr,
    // "Predicate locks and SSI").
    let sx = backend.txn.serializable_xact().map(|x| &**x);
    tree.insert_serializable(backend.engine(), &datums, tid, ix.unique.then_some(&uc), sx).map_err(|e| {
        let e = SqlError::from(e);
        if &e.code == b"23505" {
            e.with_objects(table.error_objects(Some(&ix.name), None))
        } else {
            e
        }
    })?;
    Ok(())
}

/// The entries of a new row version at `tid` in every index of `table` (unique
/// checks included). Called by `exec::insert_one` and by UPDATE for a non-HOT
/// new version.
pub fn insert_entries(backend: &Backend, table: &Table, row: &[Value], tid: Tid) -> Result<()> {
    for ix in &table.indexes {
        match ix.am {
            IndexAm::Btree => insert_entry(backend, table, ix, &*ix.btree()?, row, tid)?,
            IndexAm::Hash => crate::hash_index::insert(backend, ix, row, tid)?,
        }
    }
    Ok(())
}

/// The entry of a new row version at `tid` in index `ix` (a position in
/// `table.indexes`) only, with its unique check (INSERT ... ON CONFLICT inserts
/// into its arbiter indexes first: `crate::upsert`).
pub(crate) fn insert_entry_at(backend: &Backend, table: &Table, ix: usize, row: &[Value], tid: Tid) -> Result<()> {
    let ix = &table.indexes[ix];
    match ix.am {
        IndexAm::Btree => insert_entry(backend, table, ix, &*ix.btree()?, row, tid),
        IndexAm::Hash => crate::hash_index::insert(backend, ix, row, tid),
    }
}

/// UPDATE's options from old and new values: `(hot_allowed, keys_updated)`.
/// HOT when no indexed column changed; keys_updated (PostgreSQL's rule for
/// FOR KEY SHARE) when a column of a unique index changed.
pub fn update_flags(table: &Table, old: &[Value], new: &[Value]) -> (bool, bool) {
    let changed = |c: &usize| old[*c] != new[*c];
    let hot = !table.indexes.iter().any(|ix| ix.columns.iter().any(changed));
    // Key columns only: INCLUDE columns are not part of what a foreign key matches.
    let keys = table.indexes.iter().any(|ix| ix.unique && ix.columns[..ix.nkey.min(ix.columns.len())].iter().any(changed));
    (hot, keys)
}

// ----- index scans ---------------------------------------------------------------------

/// A chosen index scan: equalities on a prefix of the key columns, then at most
/// one range on the next column. Bound expressions use no column of the table.
#[derive(Clone, Debug)]
pub struct IndexPath {
    pub index: usize,
    pub eq: Vec<Expr>,
    /// (expression, inclusive)
    pub lower: Option<(Expr, bool)>,
    pub upper: Option<(Expr, bool)>,
}

/// The table column an expression reads, through integer-widening or
/// text/varchar casts only (whose order equals the column's).
pub(crate) fn column_of(e: &Expr) -> Option<usize> {
    match e {
        Expr::Column(i, _) => Some(*i),
        Expr::Cast { arg, from, to, .. }
            if (from.is_integer() && to.is_integer()) || (matches!(from, Type::Text | Type::Varchar) && matches!(to, Type::Text | Type::Varchar)) =>
        {
            column_of(arg)
        }
        _ => None,
    }
}

/// No column, no aggregate, nothing volatile: evaluable once before the scan.
/// An uncorrelated scalar subquery is too (PostgreSQL's InitPlan parameter in
/// an index condition, `Index Cond: (id = $0)`): it runs once per execution
/// (`crate::subquery::InitRows`).
pub(crate) fn row_free(e: &Expr) -> bool {
    match e {
        Expr::SubPlan(sp) => !sp.correlated && sp.kind == crate::subquery::SubKind::Expr && sp.lhs.is_none() && sp.row_lhs.is_empty(),
        Expr::Const(..) | Expr::Param(..) => true,
        Expr::Column(..) | Expr::AggRef(..) => false,
        Expr::Cast { arg, .. } | Expr::Neg(arg, _) | Expr::Not(arg) | Expr::IsNull { arg, .. } => row_free(arg),
        Expr::Arith { l, r, .. } | Expr::Compare { l, r, .. } | Expr::Concat(l, r) => row_free(l) && row_free(r),
        Expr::And(v) | Expr::Or(v) => v.iter().all(row_free),
        Expr::Func { func, args, .. } => {
            (matches!(func, Func::Length | Func::Upper | Func::Lower | Func::Abs | Func::Version)
                || matches!(func, Func::Builtin(id) if id.get().volatility != crate::functions::Volatility::Volatile && !id.get().returns_set()))
                && args.iter().all(row_free)
        }
        #[allow(unreachable_patterns)]
        _ => false,
    }
}


/// Chooses an index scan for `filter` on `table`, or `None` (sequential scan).
pub fn choose_path(table: &Table, filter: Option<&Expr>) -> Option<IndexPath> {
    best_path(&candidate_paths(table, filter)).cloned()
}

/// The best-scored of `candidates` ([`candidate_paths`]'s list); the first on a tie.
pub(crate) fn best_path(candidates: &[(usize, IndexPath)]) -> Option<&IndexPath> {
    let mut best: Option<&(usize, IndexPath)> = None;
    for c in candidates {
        if best.is_none_or(|b| c.0 > b.0) {
            best = Some(c);
        }
    }
    best.map(|b| &b.1)
}

/// The candidate index paths ([`candidate_paths`]) of one plan node's table and
/// filter, found at its first execution and kept with the plan, so that a
/// prepared statement does not analyse its filter again at each execution.
/// They depend only on the table descriptor and the filter, which a plan never
/// changes once built (a changed table gives a new plan). A clone starts
/// empty: whoever clones a node may give the clone another filter.
#[derive(Default)]
pub struct PathCache(std::sync::OnceLock<Vec<(usize, IndexPath)>>);

impl Clone for PathCache {
    fn clone(&self) -> PathCache {
        PathCache::default()
    }
}

impl std::fmt::Debug for PathCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PathCache")
    }
}

impl PathCache {
    /// The candidates of `table` and `filter`, computed on the first call.
    pub fn get(&self, table: &Table, filter: Option<&Expr>) -> &[(usize, IndexPath)] {
        self.0.get_or_init(|| candidate_paths(table, filter))
    }
}

/// Every usable index scan for `filter` with its score (equalities count
/// twice, a range once, a unique index fully matched wins), in index order;
/// `crate::stats` compares their costs when the table has statistics.
pub(crate) fn candidate_paths(table: &Table, filter: Option<&Expr>) -> Vec<(usize, IndexPath)> {
    let Some(filter) = filter else { return Vec::new() };
    if table.indexes.is_empty() {
        return Vec::new();
    }
    let conjuncts: &[Expr] = match filter {
        Expr::And(v) => v,
        e => std::slice::from_ref(e),
    };
    let mut quals: Vec<(usize, CmpOp, &Expr)> = Vec::with_capacity(conjuncts.len());
    for c in conjuncts {
        if let Expr::Compare { op, l, r } = c {
            if matches!(op, CmpOp::Ne) {
                continue;
            }
            if let (Some(col), true) = (column_of(l), row_free(r)) {
                quals.push((col, *op, r));
            } else if let (Some(col), true) = (column_of(r), row_free(l)) {
                quals.push((col, op.commuted(), l));
            }
        }
    }
    let mut out = Vec::new();
    for (i, ix) in table.indexes.iter().enumerate() {
        let mut path = IndexPath { index: i, eq: Vec::new(), lower: None, upper: None };
        if ix.am == IndexAm::Hash {
            // A hash index answers `col = expr` only.
            if let Some((_, _, e)) = quals.iter().find(|(c, op, _)| *c == ix.columns[0] && *op == CmpOp::Eq) {
                path.eq.push((*e).clone());
                out.push((2, path));
            }
            continue;
        }
        for (k, col) in ix.columns.iter().enumerate() {
            if let Some((_, _, e)) = quals.iter().find(|(c, op, _)| c == col && *op == CmpOp::Eq) {
                path.eq.push((*e).clone());
                continue;
            }
            // A range on this column (ascending columns only).
            if !ix.desc[k] {
                for (c, op, e) in &quals {
                    if c != col {
                        continue;
                    }
                    match op {
                        CmpOp::Gt | CmpOp::Ge if path.lower.is_none() => path.lower = Some(((*e).clone(), *op == CmpOp::Ge)),
                        CmpOp::Lt | CmpOp::Le if path.upper.is_none() => path.upper = Some(((*e).clone(), *op == CmpOp::Le)),
                        _ => {}
                    }
                }
            }
            break;
        }
        let ranged = (path.lower.is_some() || path.upper.is_some()) as usize;
        if path.eq.is_empty() && ranged == 0 {
            continue;
        }
        let full_unique = ix.unique && path.eq.len() == ix.columns.len();
        let score = path.eq.len() * 2 + ranged + if full_unique { 100 } else { 0 };
        out.push((score, path));
    }
    out
}

/// `v` as a value of column type `ty` with the same order, if it has one
/// (integers that fit, strings, same-typed values).
fn as_key(v: Value, from: Type, ty: Type) -> Option<Value> {
    if ty.is_integer() || ty == Type::Oid {
        let i = v.as_i64()?;
        if !(from.is_integer() || from == Type::Oid) {
            return None;
        }
        return match ty {
            Type::Int2 => i16::try_from(i).ok().map(Value::Int2),
            Type::Int4 => i32::try_from(i).ok().map(Value::Int4),
            Type::Int8 => Some(Value::Int8(i)),
            _ => u32::try_from(i).ok().map(Value::Oid),
        };
    }
    if matches!(ty, Type::Text | Type::Varchar) {
        return match v {
            Value::Text(s) => Some(Value::Text(s)),
            _ => None,
        };
    }
    (from == ty).then_some(v)
}

/// The rows of `table` that may match `filter`, with their TIDs: through an index
/// if [`choose_path`] finds one, else a sequential scan. The caller re-checks
/// `filter` on every row. Collected: DML reads its target rows before changing
/// any; a query streams them with [`open_table_scan`].
pub fn scan_table(table: &Table, filter: Option<&Expr>, ctx: &mut Ctx) -> Result<Vec<(Tid, Vec<Value>)>> {
    match open_table_scan(table, filter, &PathCache::default(), ctx)? {
        TableScan::Seq(mut scan) => {
            let mut out = Vec::new();
            while let Some(r) = scan.next(ctx.backend, &ctx.snap)? {
                if scan.at_page_boundary() {
                    ctx.env.check_interrupts()?;
                }
                out.push(r);
            }
            Ok(out)
        }
        TableScan::Rows(rows) => Ok(rows),
    }
}

/// The conjunct of `filter` that fetches tuples of `table` by their place
/// (PostgreSQL's Tid Scan): `ctid = e` or `e = ctid` where `e` reads no row
/// (a constant, a parameter, an InitPlan). Its position among the
/// conjuncts and `e`.
pub fn tid_qual<'e>(table: &Table, filter: Option<&'e Expr>) -> Option<(usize, &'e Expr)> {
    let ctid = table.storage.system.map(|_| table.user_columns())?;
    let conjuncts: Vec<&Expr> = match filter? {
        Expr::And(v) => v.iter().collect(),
        e => vec![e],
    };
    conjuncts.into_iter().enumerate().find_map(|(k, c)| match c {
        Expr::Compare { op: CmpOp::Eq, l, r } => match (&**l, &**r) {
            (Expr::Column(i, _), e) | (e, Expr::Column(i, _)) if *i == ctid && row_free(e) => Some((k, e)),
            _ => None,
        },
        _ => None,
    })
}

/// The visible tuple of `table` at the place `e` evaluates to (none for
/// NULL, or for a place the relation does not have).
fn fetch_by_tid(table: &Table, e: &Expr, ctx: &mut Ctx) -> Result<Vec<(Tid, Vec<Value>)>> {
    let params = ctx.params;
    let Value::Tid(block, offset) = eval_pure(e, &[], params, &[], ctx)? else { return Ok(Vec::new()) };
    let tid = Tid::new(block, offset);
    let Some(bytes) = heapam::heap_fetch_user_tid(ctx.backend, table.storage.rel, tid, &ctx.snap)? else { return Ok(Vec::new()) };
    let descs = table.storage.descs()?;
    Ok(vec![(tid, deform_row(ctx.backend, &table.storage, &descs, tid, &bytes, &ctx.snap)?)])
}

/// How [`open_table_scan`] reads a table: a sequential scan that streams page by
/// page, or the rows an index scan found.
pub enum TableScan {
    /// Boxed: the scan's state is far larger than the other variant.
    Seq(Box<crate::rowio::RowScan>),
    Rows(Vec<(Tid, Vec<Value>)>),
}

/// The rows of `table` that may match `filter`, as [`scan_table`] chooses them,
/// without collecting a sequential scan.
pub fn open_table_scan(table: &Table, filter: Option<&Expr>, paths: &PathCache, ctx: &mut Ctx) -> Result<TableScan> {
    let seq = |ctx: &mut Ctx| -> Result<TableScan> { Ok(TableScan::Seq(Box::new(crate::rowio::RowScan::new(ctx.backend, &table.storage)?))) };
    if let Some((_, e)) = tid_qual(table, filter) {
        return Ok(TableScan::Rows(fetch_by_tid(table, e, ctx)?));
    }
    let candidates = paths.get(table, filter);
    let Some(path) = crate::stats::choose_scan_among(ctx.backend, &ctx.snap, table, filter, ctx.params, candidates) else {
        return seq(ctx);
    };
    let ix = &table.indexes[path.index];
    let eval = |e: &Expr, k: usize, ctx: &mut Ctx| -> Result<Option<Option<Value>>> {
        let params = ctx.params;
        let v = eval_pure(e, &[], params, &[], ctx)?;
        if v.is_null() {
            return Ok(Some(None));
        }
        Ok(as_key(v, e.ty(), ix.types[k]).map(Some))
    };
    // Outer None: no usable key value (fall back); inner None: a NULL (no row matches).
    let mut eq_vals = Vec::new();
    for (k, e) in path.eq.iter().enumerate() {
        match eval(e, k, ctx)? {
            None => return seq(ctx),
            Some(None) => return Ok(TableScan::Rows(Vec::new())),
            Some(Some(v)) => eq_vals.push(v),
        }
    }
    let k = path.eq.len();
    // None: not usable (scan the table); Some(None): matches nothing;
    // Some(Some(None)): no bound; else the bound and whether it is inclusive.
    type BoundValue = Option<Option<Option<(Value, bool)>>>;
    let range = |b: &Option<(Expr, bool)>, ctx: &mut Ctx| -> Result<BoundValue> {
        let Some((e, inc)) = b else { return Ok(Some(Some(None))) };
        Ok(match eval(e, k, ctx)? {
            None => None,
            Some(None) => Some(None),
            Some(Some(v)) => Some(Some(Some((v, *inc)))),
        })
    };
    let lower = match range(&path.lower, ctx)? {
        None => return seq(ctx),
        Some(None) => return Ok(TableScan::Rows(Vec::new())),
        Some(Some(b)) => b,
    };
    let upper = match range(&path.upper, ctx)? {
        None => return seq(ctx),
        Some(None) => return Ok(TableScan::Rows(Vec::new())),
        Some(Some(b)) => b,
    };
    // The key images borrow the values: the equal prefix, then each range bound
    // after it (a point lookup has no range bound and shares one prefix).
    let mut prefix: Vec<Option<Datum<'_>>> = Vec::with_capacity(k + 1);
    for (i, v) in eq_vals.iter().enumerate() {
        prefix.push(types::to_datum(ix.types[i], v)?);
    }
    // A range bound is on the key column after the equal prefix.
    fn key_bound<'v>(ty: Option<&Type>, b: &'v Option<(Value, bool)>) -> Result<Option<(Option<Datum<'v>>, bool)>> {
        let Some((v, inc)) = b else { return Ok(None) };
        let ty = ty.ok_or_else(|| SqlError::internal("index range bound beyond the key columns"))?;
        Ok(Some((types::to_datum(*ty, v)?, *inc)))
    }
    let (lo, hi) = (key_bound(ix.types.get(k), &lower)?, key_bound(ix.types.get(k), &upper)?);
    fn with<'a>(prefix: &[Option<Datum<'a>>], (d, inc): (Option<Datum<'a>>, bool)) -> Bound<Vec<Option<Datum<'a>>>> {
        let mut key = Vec::with_capacity(prefix.len() + 1);
        key.extend_from_slice(prefix);
        key.push(d);
        if inc {
            Bound::Included(key)
        } else {
            Bound::Excluded(key)
        }
    }
    let whole = |p| if k == 0 { Bound::Unbounded } else { Bound::Included(p) };
    let (lo, hi) = match (lo, hi) {
        (Some(l), Some(h)) => (with(&prefix, l), with(&prefix, h)),
        (Some(l), None) => (with(&prefix, l), whole(prefix)),
        (None, Some(h)) => (whole(prefix.clone()), with(&prefix, h)),
        (None, None) => (whole(prefix.clone()), whole(prefix)),
    };
    let bounds = ScanBounds::range(lo, hi);
    let engine = ctx.backend.engine().clone();
    let roots: Vec<Tid> = match ix.am {
        IndexAm::Btree => {
            // SERIALIZABLE: SIREAD locks on the leaf pages read.
            let sx = ctx.backend.txn.serializable_xact().cloned();
            let mut roots = Vec::new();
            for t in ix.btree()?.scan(&engine, bounds).serializable(sx) {
                roots.push(t?);
            }
            roots
        }
        IndexAm::Hash => {
            // SERIALIZABLE: a SIREAD lock on the bucket's primary page.
            let sx = ctx.backend.txn.serializable_xact().cloned();
            let env = &mut *ctx.env;
            crate::hash_index::scan_roots(&engine, ix, &eq_vals[0], sx, &mut || env.check_interrupts())?
        }
    };
    Ok(TableScan::Rows(fetch_roots(table, ix, roots, ctx)?))
}

/// The visible rows the index entries `roots` (HOT chain roots) of `ix`
/// lead to, each once, counted in the index's statistics.
fn fetch_roots(table: &Table, ix: &IndexInfo, roots: Vec<Tid>, ctx: &mut Ctx) -> Result<Vec<(Tid, Vec<Value>)>> {
    let descs = table.storage.descs()?;
    // Two roots can reach the same tuple; a short list is checked by a
    // linear search (a point lookup finds one root: no hashing), a long one
    // through a set.
    let mut seen: HashSet<Tid> = HashSet::new();
    let mut out: Vec<(Tid, Vec<Value>)> = Vec::with_capacity(roots.len().min(16));
    const LINEAR: usize = 8;
    // Statistics (pg_stat_all_indexes): one index scan, the entries it
    // returned, the live heap tuples fetched through them.
    let stat = ctx.backend.txn.pgstat.handle(ix.rel);
    ctx.backend.txn.pgstat.count_scan_h(&stat);
    ctx.backend.txn.pgstat.count_returned_h(&stat, roots.len() as u64);
    for (n, root) in roots.into_iter().enumerate() {
        if n % 1024 == 1023 {
            ctx.env.check_interrupts()?;
        }
        if let Some((tid, bytes)) = heapam::heap_hot_fetch(ctx.backend, table.storage.rel, root, &ctx.snap)? {
            ctx.backend.txn.pgstat.count_fetched_h(&stat, 1);
            let first = if out.len() < LINEAR {
                !out.iter().any(|(t, _)| *t == tid)
            } else {
                if seen.is_empty() {
                    seen.extend(out.iter().map(|(t, _)| *t));
                }
                seen.insert(tid)
            };
            if first {
                out.push((tid, deform_row(ctx.backend, &table.storage, &descs, tid, &bytes, &ctx.snap)?));
            }
        }
    }
    Ok(out)
}

/// The rows of `table` whose leading key columns of its index `index`
/// equal `key` (one value per column, a prefix of the key): the inner side
/// of a parameterized nested loop ([`crate::nestloop`]), probed once per
/// outer row with that row's values, with no planning in between. A value
/// that cannot be a key of the column's type (an int8 beyond int4's range)
/// matches nothing; a NULL matches nothing.
pub fn index_probe(table: &Table, index: usize, key: &[Value], ctx: &mut Ctx) -> Result<Vec<(Tid, Vec<Value>)>> {
    let ix = &table.indexes[index];
    let mut vals = Vec::with_capacity(key.len());
    for (k, v) in key.iter().enumerate() {
        if v.is_null() {
            return Ok(Vec::new());
        }
        let from = match v {
            Value::Int2(_) => Type::Int2,
            Value::Int4(_) => Type::Int4,
            Value::Int8(_) => Type::Int8,
            Value::Oid(_) => Type::Oid,
            Value::Text(_) => Type::Text,
            _ => ix.types[k],
        };
        match as_key(v.clone(), from, ix.types[k]) {
            Some(v) => vals.push(v),
            None => return Ok(Vec::new()),
        }
    }
    let engine = ctx.backend.engine().clone();
    let roots: Vec<Tid> = match ix.am {
        IndexAm::Btree => {
            let datums: Vec<Option<Datum<'_>>> = vals.iter().enumerate().map(|(i, v)| types::to_datum(ix.types[i], v)).collect::<Result<_>>()?;
            let bounds = ScanBounds::range(Bound::Included(datums.clone()), Bound::Included(datums));
            let sx = ctx.backend.txn.serializable_xact().cloned();
            let mut roots = Vec::new();
            for t in ix.btree()?.scan(&engine, bounds).serializable(sx) {
                roots.push(t?);
            }
            roots
        }
        IndexAm::Hash => {
            let sx = ctx.backend.txn.serializable_xact().cloned();
            let env = &mut *ctx.env;
            crate::hash_index::scan_roots(&engine, ix, &vals[0], sx, &mut || env.check_interrupts())?
        }
    };
    fetch_roots(table, ix, roots, ctx)
}

/// ORDER BY `col` LIMIT n (no aggregates, one sort key) where `col` is the first
/// column of an ascending index and the null placement is the default one: the
/// first `offset + n` rows passing the WHERE, read in index order (backward for
/// DESC: NULLs first, as DESC's default). The caller still filters, sorts and
/// limits them. `None`: not applicable.
pub fn ordered_scan(table: &Table, q: &crate::plan::Query, ctx: &mut Ctx) -> Result<Option<Vec<Vec<Value>>>> {
    if q.grouping.is_some() || q.distinct.is_some() {
        return Ok(None);
    }
    if !q.aggregates.is_empty() || q.order.len() != 1 || table.indexes.is_empty() {
        return Ok(None);
    }
    let key = &q.order[0];
    if key.nulls_first != key.desc {
        return Ok(None);
    }
    let expr = if key.column < q.targets.len() { &q.targets[key.column].expr } else { &q.hidden[key.column - q.targets.len()] };
    let Expr::Column(col, _) = expr else { return Ok(None) };
    let Some(ix) = table.indexes.iter().find(|ix| ix.am == IndexAm::Btree && ix.columns[0] == *col && !ix.desc[0]) else { return Ok(None) };
    let count = |e: &Option<Expr>, ctx: &mut Ctx| -> Result<Option<i64>> {
        match e {
            None => Ok(Some(0)),
            Some(e) => Ok(eval_pure(e, &[], ctx.params, &[], ctx.env)?.as_i64().filter(|n| *n >= 0)),
        }
    };
    let Some(limit) = q.limit.as_ref().map(|_| count(&q.limit, ctx)).transpose()?.flatten() else { return Ok(None) };
    let Some(offset) = count(&q.offset, ctx)? else { return Ok(None) };
    let want = (limit.saturating_add(offset)) as usize;
    let tree = ix.btree()?;
    let engine = ctx.backend.engine().clone();
    let descs = table.storage.descs()?;
    let sx = ctx.backend.txn.serializable_xact().cloned();
    let scan = if key.desc { tree.scan_backward(&engine, ScanBounds::all()) } else { tree.scan(&engine, ScanBounds::all()) };
    let mut scan = scan.serializable(sx);
    let stat = ctx.backend.txn.pgstat.handle(ix.rel);
    ctx.backend.txn.pgstat.count_scan_h(&stat);
    let mut seen: HashSet<Tid> = HashSet::new();
    let mut out = Vec::new();
    let mut n = 0u64;
    while out.len() < want {
        let Some(root) = scan.next().transpose()? else { break };
        ctx.backend.txn.pgstat.count_returned_h(&stat, 1);
        n += 1;
        if n.is_multiple_of(1024) {
            ctx.env.check_interrupts()?;
        }
        let Some((tid, bytes)) = heapam::heap_hot_fetch(ctx.backend, table.storage.rel, root, &ctx.snap)? else { continue };
        ctx.backend.txn.pgstat.count_fetched_h(&stat, 1);
        if !seen.insert(tid) {
            continue;
        }
        let row = deform_row(ctx.backend, &table.storage, &descs, tid, &bytes, &ctx.snap)?;
        if let Some(f) = &q.filter {
            let params = ctx.params;
            if eval_pure(f, &row, params, &[], ctx)? != Value::Bool(true) {
                continue;
            }
        }
        out.push(row);
    }
    Ok(Some(out))
}

// ----- TRUNCATE, VACUUM, ANALYZE ---------------------------------------------------------

/// TRUNCATE of each table: new, empty files for the table, its TOAST relation and
/// its indexes, named in new versions of their pg_class rows (written by this
/// transaction, so a rollback restores the old files). The old files are left in
/// place (not removed at commit yet); they are never reused since relfilenodes
/// come from the OID counter.
pub fn truncate(backend: &mut Backend, snap: &Snapshot, tables: &[Table]) -> Result<()> {
    let engine = backend.engine().clone();
    for (i, heap) in truncate_files(backend, snap, tables)? {
        transfer_predicate_locks(&engine, &tables[i], heap);
    }
    Ok(())
}

/// SERIALIZABLE: `t`'s heap got the new file `new_heap` (and its indexes new
/// files): the SIREAD locks on the old files of the table and its indexes
/// become relation locks on the heap's old file (which stays if this
/// transaction aborts) and on its new one (PostgreSQL's
/// TransferPredicateLocksToHeapRelation); the locks on whichever file is
/// dropped when the transaction ends go with it (lmgr README, "Rewrites").
/// The caller holds AccessExclusiveLock on `t`.
pub fn transfer_predicate_locks(engine: &Engine, t: &Table, new_heap: RelFileLocator) {
    let old_files: Vec<RelFileLocator> = std::iter::once(t.storage.rel).chain(t.indexes.iter().map(|i| i.rel)).collect();
    engine.txn.predicate.transfer_to_relations(&old_files, &[t.storage.rel, new_heap]);
}

/// The file work of [`truncate`] without the SIREAD lock transfer (a table
/// rewrite transfers them after it has written the rows into the new files,
/// so that its own inserts do not meet the locks it moved there). Returns,
/// for each table truncated, its position in `tables` and its new heap file.
pub fn truncate_files(backend: &mut Backend, snap: &Snapshot, tables: &[Table]) -> Result<Vec<(usize, RelFileLocator)>> {
    let engine = backend.engine().clone();
    let mut out = Vec::new();
    let mut done: HashSet<u32> = HashSet::new();
    for (i, t) in tables.iter().enumerate() {
        if !done.insert(t.oid) {
            continue;
        }
        let heap = engine.new_oid();
        out.push((i, locator(heap)));
        engine.create_relation(locator(heap))?;
        // Old files at commit, new ones at abort (engine: txn::pending_delete).
        backend.txn.pending_deletes.at_abort(locator(heap));
        backend.txn.pending_deletes.at_commit(t.storage.rel);
        let toast = match t.storage.toast {
            Some(old) => {
                let n = engine.new_oid();
                engine.create_relation(locator(n))?;
                backend.txn.pending_deletes.at_abort(locator(n));
                backend.txn.pending_deletes.at_commit(old);
                n
            }
            None => 0,
        };
        update_class_row(backend, snap, t.oid, &|row| {
            row[3] = Value::Oid(heap);
            row[4] = Value::Oid(toast);
            row[8] = Value::Int4(0);
            row[9] = Value::Float8(0.0);
            set_relallvisible(row, 0);
        })?;
        for ix in &t.indexes {
            let n = engine.new_oid();
            let new = IndexInfo { rel: locator(n), ..ix.clone() };
            new.create_file(&engine, 0.0)?;
            backend.txn.pending_deletes.at_abort(new.rel);
            backend.txn.pending_deletes.at_commit(ix.rel);
            register(&engine, locator(heap), &new);
            update_class_row(backend, snap, ix.oid, &|row| {
                row[3] = Value::Oid(n);
                row[8] = Value::Int4(0);
                row[9] = Value::Float8(0.0);
            })?;
        }
    }
    Ok(out)
}

/// [`update_class_row`] unless `f` leaves relation `oid`'s row (in `class_rows`, read
/// with `snap`) as it is: PostgreSQL's vac_update_relstats writes only what
/// changed, so a VACUUM of an unchanged table writes no catalog row.
fn update_class_row_if_changed(
    backend: &mut Backend,
    snap: &Snapshot,
    class_rows: &[(Tid, Vec<Value>)],
    oid: u32,
    f: &dyn Fn(&mut Vec<Value>),
) -> Result<()> {
    if let Some((_, row)) = class_rows.iter().find(|(_, r)| r[0] == Value::Oid(oid)) {
        let mut new = row.clone();
        f(&mut new);
        if &new == row {
            return Ok(());
        }
    }
    update_class_row(backend, snap, oid, f)
}

/// Stores pg_class.relallvisible into a stored pg_class row (a row written before
/// the column existed is shorter: it is extended).
fn set_relallvisible(row: &mut Vec<Value>, n: i32) {
    const RELALLVISIBLE: usize = 12;
    if row.len() <= RELALLVISIBLE {
        row.resize(RELALLVISIBLE + 1, Value::Null);
    }
    row[RELALLVISIBLE] = Value::Int4(n);
}

/// What ANALYZE found for one table.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RelSize {
    pub pages: i32,
    pub tuples: f64,
}

fn nblocks(engine: &Engine, rel: RelFileLocator) -> Result<i32> {
    Ok(engine.buffers.nblocks(rel, ferrogres_engine::storage::ForkNumber::Main)? as i32)
}

/// Writes relpages/reltuples of `table` and its indexes (PostgreSQL overwrites
/// them in place; here a new version of the pg_class row, in the caller's
/// transaction).
pub fn store_size(backend: &mut Backend, snap: &Snapshot, table: &Table, tuples: f64) -> Result<RelSize> {
    let engine = backend.engine().clone();
    let pages = nblocks(&engine, table.storage.rel)?;
    // relallvisible as PostgreSQL's VACUUM and ANALYZE store it: the map's count.
    let (all_visible, _) = ferrogres_engine::heap::visibilitymap::vm_count(&engine, table.storage.rel, pages as u32)?;
    let class_rows = scan_rows(backend, &class_rel(), snap)?;
    update_class_row_if_changed(backend, snap, &class_rows, table.oid, &|row| {
        row[8] = Value::Int4(pages);
        row[9] = Value::Float8(tuples);
        set_relallvisible(row, all_visible as i32);
    })?;
    for ix in &table.indexes {
        let ipages = nblocks(&engine, ix.rel)?;
        update_class_row_if_changed(backend, snap, &class_rows, ix.oid, &|row| {
            row[8] = Value::Int4(ipages);
            row[9] = Value::Float8(tuples);
        })?;
    }
    Ok(RelSize { pages, tuples })
}

/// ANALYZE of one table: its column statistics ([`crate::stats::gather`]) and
/// its sizes.
pub fn analyze_table(backend: &mut Backend, snap: &Snapshot, table: &Table) -> Result<RelSize> {
    let n = crate::stats::gather(backend, snap, table)?;
    store_size(backend, snap, table, n)
}

/// The stored relpages/reltuples of relation `oid`.
pub fn stored_size(backend: &Backend, snap: &Snapshot, oid: u32) -> Result<Option<RelSize>> {
    for (_, row) in scan_rows(backend, &class_rel(), snap)? {
        if let [Value::Oid(o), _, _, _, _, _, _, _, Value::Int4(p), Value::Float8(t), ..] = row.as_slice() {
            if *o == oid {
                return Ok(Some(RelSize { pages: *p, tuples: *t }));
            }
        }
    }
    Ok(None)
}

/// VACUUM of one table outside any transaction: the engine's lazy vacuum with
/// index cleanup (bulk delete of the dead TIDs in every index of the table).
pub fn vacuum_table(
    backend: &Backend,
    table: &Table,
    freeze: bool,
    verbose: bool,
) -> Result<ferrogres_engine::heap::vacuum::VacuumStats> {
    use ferrogres_engine::heap::vacuum::{vacuum_rel, VacuumOptions};
    let engine = backend.engine().clone();
    for ix in &table.indexes {
        register(&engine, table.storage.rel, ix);
    }
    let indexes = registered(&engine, table.storage.rel);
    let mut opts = VacuumOptions::from_settings(engine.settings());
    opts.freeze = freeze;
    opts.verbose = verbose;
    let mut cleanup = |tids: &[Tid]| -> ferrogres_engine::error::Result<()> {
        bulk_delete_all(&engine, &indexes, tids).map_err(|e| ferrogres_engine::error::Error::internal(e.message))
    };
    let stats = vacuum_rel(&engine, Some(backend), table.storage.rel, opts, &mut cleanup)?;
    // Then the TOAST relation and its chunk index (PostgreSQL vacuums it as a
    // relation of its own, right after the table, with the same options).
    if let Some(toast) = table.storage.toast {
        ferrogres_engine::heap::toastam::vacuum_toast(&engine, Some(backend), toast, opts)?;
    }
    Ok(stats)
}

/// Registers the index cleanup of a table loaded with indexes (for autovacuum).
pub fn register_table(engine: &Arc<Engine>, table: &Table) {
    for ix in &table.indexes {
        register(engine, table.storage.rel, ix);
    }
}

// ----- statements ------------------------------------------------------------------------

/// The statements of this module, analyzed.
#[derive(Clone, Debug)]
pub enum IndexCmd {
    CreateIndex { table: Table, spec: IndexSpec },
    /// CREATE TABLE with PRIMARY KEY / UNIQUE constraints.
    CreateTable { namespace: u32, name: String, columns: Vec<catalog::Column>, if_not_exists: bool, constraints: Vec<IndexSpec> },
    /// ALTER TABLE ... ADD [CONSTRAINT name] PRIMARY KEY | UNIQUE (...).
    AddConstraints { table: Table, specs: Vec<IndexSpec> },
    DropIndexes { names: Vec<(Option<String>, String)>, missing_ok: bool },
    Truncate { tables: Vec<Table> },
    /// REINDEX TABLE (`table`, locked by the analyzer) or REINDEX INDEX
    /// (`index`: schema and name, resolved when run).
    Reindex { table: Option<Table>, index: Option<(Option<String>, String)> },
    /// VACUUM (`vacuum`) and/or ANALYZE (`analyze`) of `tables`.
    Vacuum { tables: Vec<Table>, vacuum: bool, analyze: bool, freeze: bool, verbose: bool },
}

impl IndexCmd {
    /// Changes the catalog (prepared statements must be analyzed again).
    pub fn is_ddl(&self) -> bool {
        !matches!(self, IndexCmd::Vacuum { .. })
    }
}

/// Runs `cmd` in the current transaction (all but VACUUM, see [`vacuum`]).
/// `notice` receives NOTICEs (IF [NOT] EXISTS). Returns the command tag.
pub fn execute(
    cmd: &IndexCmd,
    backend: &mut Backend,
    snap: &Snapshot,
    env: &dyn Env,
    notice: &mut dyn FnMut(SqlError) -> Result<()>,
) -> Result<String> {
    match cmd {
        IndexCmd::CreateIndex { table, spec } => {
            let mut table = table.clone();
            if create_index(backend, env, snap, &mut table, spec)?.is_none() {
                let name = spec.name.clone().unwrap_or_default();
                notice(SqlError::notice(b"42P07", format!("relation \"{name}\" already exists, skipping")))?;
            }
            Ok("CREATE INDEX".into())
        }
        IndexCmd::CreateTable { namespace, name, columns, if_not_exists, constraints } => {
            if find_relation(backend, snap, *namespace, name)?.is_some() {
                if *if_not_exists {
                    notice(SqlError::notice(b"42P07", format!("relation \"{name}\" already exists, skipping")))?;
                    return Ok("CREATE TABLE".into());
                }
                return Err(SqlError::new(b"42P07", format!("relation \"{name}\" already exists")));
            }
            let mut table = catalog::create_table(backend, *namespace, name, columns.clone())?;
            // The new catalog rows must be visible to the name choice.
            backend.txn.command_counter_increment()?;
            for spec in constraints {
                let snap = crate::catcache::ddl_snapshot(backend)?;
                create_index(backend, env, &snap, &mut table, spec)?;
                backend.txn.command_counter_increment()?;
            }
            Ok("CREATE TABLE".into())
        }
        IndexCmd::AddConstraints { table, specs } => {
            let mut table = table.clone();
            for spec in specs {
                let snap = crate::catcache::ddl_snapshot(backend)?;
                create_index(backend, env, &snap, &mut table, spec)?;
                backend.txn.command_counter_increment()?;
            }
            Ok("ALTER TABLE".into())
        }
        IndexCmd::DropIndexes { names, missing_ok } => {
            let mut found = Vec::new();
            for (schema, name) in names {
                let ns = match crate::namespace::relation_namespace(backend, snap, schema.as_deref(), name) {
                    Ok(Some(ns)) => Some(ns),
                    Ok(None) => Some(catalog::PUBLIC_NAMESPACE),
                    Err(e) if e.sqlstate() == "3F000" => None,
                    Err(e) => return Err(e),
                };
                let shown = match schema {
                    Some(s) => format!("{s}.{name}"),
                    None => name.clone(),
                };
                let hit = match ns {
                    Some(ns) => lookup_index(backend, snap, ns, name)?,
                    None if *missing_ok => None,
                    None => return Err(SqlError::new(b"3F000", format!("schema \"{}\" does not exist", schema.clone().unwrap_or_default()))),
                };
                match hit {
                    Some((table, ix)) => {
                        // AccessExclusiveLock on the table, then the index, as
                        // PostgreSQL's DROP INDEX (without CONCURRENTLY).
                        crate::locking::lock_relation(backend, table.oid, LockMode::AccessExclusive, false, &table.name)?;
                        crate::locking::lock_relation(backend, ix.oid, LockMode::AccessExclusive, false, &ix.name)?;
                        if ix.constraint.is_some() {
                            return Err(SqlError::new(
                                b"2BP01",
                                format!("cannot drop index {} because constraint {} on table {} requires it", ix.name, ix.name, table.name),
                            )
                            .with_hint(format!("You can drop constraint {} on table {} instead.", ix.name, table.name)));
                        }
                        found.push((table.storage.rel, ix));
                    }
                    None if *missing_ok => notice(SqlError::notice(b"00000", format!("index \"{shown}\" does not exist, skipping")))?,
                    None => return Err(SqlError::new(b"42704", format!("index \"{shown}\" does not exist"))),
                }
            }
            for (heap, ix) in &found {
                // SERIALIZABLE: the SIREAD locks on the index's pages become
                // relation locks on the table (PostgreSQL's index_drop).
                backend.engine().txn.predicate.transfer_to_relations(&[ix.rel], &[*heap]);
                drop_index(backend, snap, ix)?;
            }
            Ok("DROP INDEX".into())
        }
        IndexCmd::Truncate { tables } => {
            if let Some(sx) = backend.txn.serializable_xact() {
                // Every row is deleted: whoever read any of them, or the
                // table, has an rw-conflict out to us (PostgreSQL's
                // CheckTableForSerializableConflictIn).
                for t in tables.iter().filter(|t| heapam::ssi_tracked(t.storage.rel)) {
                    backend.engine().txn.predicate.check_conflict_in_relation(sx, t.storage.rel)?;
                }
            }
            truncate(backend, snap, tables)?;
            Ok("TRUNCATE TABLE".into())
        }
        IndexCmd::Reindex { table: Some(table), .. } => {
            reindex(backend, env, snap, table, &table.indexes)?;
            Ok("REINDEX".into())
        }
        IndexCmd::Reindex { index: Some((schema, name)), .. } => {
            let ns = match crate::namespace::relation_namespace(backend, snap, schema.as_deref(), name)? {
                Some(ns) => ns,
                None => catalog::PUBLIC_NAMESPACE,
            };
            let shown = match schema {
                Some(s) => format!("{s}.{name}"),
                None => name.clone(),
            };
            let Some((table, ix)) = lookup_index(backend, snap, ns, name)? else {
                return Err(SqlError::new(b"42P01", format!("relation \"{shown}\" does not exist")));
            };
            // ShareLock on the table (reads go on, writes wait), AccessExclusiveLock
            // on the index, as PostgreSQL's REINDEX INDEX.
            crate::locking::lock_relation(backend, table.oid, LockMode::Share, false, &table.name)?;
            crate::locking::lock_relation(backend, ix.oid, LockMode::AccessExclusive, false, &ix.name)?;
            reindex(backend, env, snap, &table, std::slice::from_ref(&ix))?;
            Ok("REINDEX".into())
        }
        IndexCmd::Reindex { .. } => Err(SqlError::internal("REINDEX without a target")),
        IndexCmd::Vacuum { tables, vacuum: false, .. } => {
            for t in tables {
                // ShareUpdateExclusiveLock, as PostgreSQL's ANALYZE: reads and
                // writes go on; DDL, VACUUM and other ANALYZEs of it wait.
                crate::locking::lock_relation(backend, t.oid, LockMode::ShareUpdateExclusive, false, &t.name)?;
                analyze_table(backend, snap, t)?;
            }
            Ok("ANALYZE".into())
        }
        IndexCmd::Vacuum { .. } => Err(SqlError::new(b"25001", "VACUUM cannot run inside a transaction block")),
    }
}

/// VACUUM [ANALYZE] outside any transaction: each table's lazy vacuum with index
/// cleanup, then its relpages/reltuples in a short transaction of its own.
pub fn vacuum(backend: &mut Backend, cmd: &IndexCmd) -> Result<String> {
    let IndexCmd::Vacuum { tables, freeze, verbose, analyze, .. } = cmd else {
        return Err(SqlError::internal("not a VACUUM"));
    };
    if backend.txn.in_transaction() {
        return Err(SqlError::new(b"25001", "VACUUM cannot run inside a transaction block"));
    }
    for t in tables {
        // ShareUpdateExclusiveLock for the table's vacuum, as PostgreSQL's
        // (reads and writes go on; DDL, other VACUUMs and ANALYZE wait), held
        // at session level: no transaction is open around the vacuum itself.
        lock_for_vacuum(backend, t)?;
        let r = vacuum_one(backend, t, *freeze, *verbose, *analyze);
        backend.engine().locks.unlock(backend.id(), crate::locking::relation_tag(t.oid), LockMode::ShareUpdateExclusive, true)?;
        r?;
    }
    Ok("VACUUM".into())
}

/// Takes the session-level ShareUpdateExclusiveLock a VACUUM holds on `t`.
fn lock_for_vacuum(backend: &Backend, t: &Table) -> Result<()> {
    use ferrogres_engine::lmgr::lock::{LockAcquireResult, LockOptions};
    let locks = &backend.engine().locks;
    let tag = crate::locking::relation_tag(t.oid);
    let mode = LockMode::ShareUpdateExclusive;
    if locks.lock(backend.id(), tag, mode, LockOptions { dont_wait: true, session: true, ..Default::default() })? == LockAcquireResult::NotAvailable {
        locks.lock(backend.id(), tag, mode, LockOptions { session: true, ..Default::default() })?;
    }
    Ok(())
}

/// One table's VACUUM [ANALYZE]: the lazy vacuum, then its statistics in a
/// short transaction of its own.
fn vacuum_one(backend: &mut Backend, t: &Table, freeze: bool, verbose: bool, analyze: bool) -> Result<()> {
    let stats = vacuum_table(backend, t, freeze, verbose)?;
    backend.txn.begin(ferrogres_engine::txn::IsolationLevel::ReadCommitted)?;
    let r = (|| -> Result<()> {
        let snap = backend.txn.statement_snapshot()?;
        if analyze {
            analyze_table(backend, &snap, t)?;
        } else {
            // Pages skipped through the visibility map keep the stored density.
            let old = stored_size(backend, &snap, t.oid)?.unwrap_or(RelSize { pages: 0, tuples: -1.0 });
            let tuples = ferrogres_engine::heap::vacuum::estimate_reltuples(old.pages.max(0) as u64, old.tuples, &stats);
            store_size(backend, &snap, t, tuples.round())?;
        }
        Ok(())
    })();
    match r {
        Ok(()) => Ok(backend.txn.commit()?),
        Err(e) => {
            let _ = backend.txn.abort();
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Session;
    use ferrogres_engine::config::Settings;
    use ferrogres_engine::txn::IsolationLevel;

    fn session(engine: &Arc<Engine>, pid: i32) -> Session {
        crate::test_support::session(engine, pid, &[])
    }

    fn query(s: &mut Session, sql: &str) -> Vec<Vec<Option<String>>> {
        crate::test_support::query_sorted(s, sql)
    }

    fn check_trees(engine: &Arc<Engine>, table: &str) -> usize {
        let mut b = engine.backend(99).unwrap();
        b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        let snap = b.txn.statement_snapshot().unwrap();
        let t = catalog::lookup_table(&b, &snap, None, table).unwrap().unwrap();
        for ix in &t.indexes {
            ix.btree().unwrap().check_invariants(engine).unwrap();
        }
        b.txn.commit().unwrap();
        t.indexes.len()
    }

    /// Index scans (`k = c`, `k >= a AND k < b`, `v = c` on a unique index) give
    /// the rows sequential scans give (`k + 0 = c` cannot use an index), over random
    /// inserts, HOT updates (of an unindexed column), non-HOT updates (of an
    /// indexed one), deletes and VACUUMs; the trees pass their invariant check.
    #[test]
    fn index_scans_equal_sequential_scans_under_updates_and_deletes() {
        let dir = tempfile::tempdir().unwrap();
        let (engine, _) = Engine::open(dir.path(), Settings::default()).unwrap();
        catalog::bootstrap(&engine).unwrap();
        let mut s = session(&engine, 1);
        query(&mut s, "CREATE TABLE r (k int, v int PRIMARY KEY, s text); CREATE INDEX r_k ON r (k)");
        let mut seed: u64 = 0x9e3779b97f4a7c15;
        let mut rnd = |n: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        let mut next_v = 0;
        for round in 0..60 {
            let values: Vec<String> = (0..40)
                .map(|_| {
                    next_v += 1;
                    let k = if rnd(10) == 0 { "NULL".to_string() } else { rnd(30).to_string() };
                    format!("({k}, {next_v}, 's{}')", rnd(1000))
                })
                .collect();
            query(&mut s, &format!("INSERT INTO r VALUES {}", values.join(", ")));
            for _ in 0..5 {
                let (k, v) = (rnd(30), rnd(next_v as u64 + 1));
                match rnd(4) {
                    0 => query(&mut s, &format!("UPDATE r SET s = s || 'h' WHERE k = {k}")),
                    1 => query(&mut s, &format!("UPDATE r SET k = {} WHERE v >= {v} AND v < {}", rnd(30), v + 3)),
                    2 => query(&mut s, &format!("DELETE FROM r WHERE k = {k} AND v > {v}")),
                    _ => query(&mut s, &format!("UPDATE r SET v = v + 100000 WHERE v = {v}")),
                };
            }
            if round % 20 == 19 {
                query(&mut s, "VACUUM r");
            }
            for _ in 0..4 {
                let (a, b, v) = (rnd(30), rnd(30), rnd(next_v as u64 + 1));
                assert_eq!(query(&mut s, &format!("SELECT * FROM r WHERE k = {a}")), query(&mut s, &format!("SELECT * FROM r WHERE k + 0 = {a}")));
                assert_eq!(
                    query(&mut s, &format!("SELECT * FROM r WHERE k >= {a} AND k < {b}")),
                    query(&mut s, &format!("SELECT * FROM r WHERE k + 0 >= {a} AND k + 0 < {b}"))
                );
                assert_eq!(query(&mut s, &format!("SELECT * FROM r WHERE v = {v}")), query(&mut s, &format!("SELECT * FROM r WHERE v + 0 = {v}")));
                assert_eq!(query(&mut s, &format!("SELECT * FROM r WHERE {a} > k")), query(&mut s, &format!("SELECT * FROM r WHERE {a} > k + 0")));
                for dir in ["", "DESC"] {
                    assert_eq!(
                        query(&mut s, &format!("SELECT k FROM r WHERE v > {v} ORDER BY k {dir} LIMIT {a} OFFSET 2")),
                        query(&mut s, &format!("SELECT k FROM r WHERE v > {v} ORDER BY k + 0 {dir} LIMIT {a} OFFSET 2"))
                    );
                }
            }
        }
        let all = query(&mut s, "SELECT count(*) FROM r");
        assert!(all[0][0].as_deref().unwrap().parse::<u64>().unwrap() > 100);
        assert_eq!(check_trees(&engine, "r"), 2);
        // The chosen path: an equality on the unique key wins.
        let mut b = engine.backend(98).unwrap();
        b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        let snap = b.txn.statement_snapshot().unwrap();
        let t = catalog::lookup_table(&b, &snap, None, "r").unwrap().unwrap();
        let eq = |col, v| Expr::Compare { op: CmpOp::Eq, l: Box::new(Expr::Column(col, Type::Int4)), r: Box::new(Expr::Param(v, Type::Int4)) };
        let f = Expr::And(vec![eq(0, 0), eq(1, 1)]);
        assert_eq!(t.indexes[choose_path(&t, Some(&f)).unwrap().index].name, "r_pkey");
        assert!(choose_path(&t, Some(&Expr::Compare { op: CmpOp::Ne, l: Box::new(Expr::Column(0, Type::Int4)), r: Box::new(Expr::Param(0, Type::Int4)) })).is_none());
        b.txn.commit().unwrap();
    }

    /// Two sessions insert the same key: the second waits for the first, fails
    /// with 23505 if it commits and succeeds if it rolls back.
    #[test]
    fn concurrent_inserts_of_one_key_wait_for_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let (engine, _) = Engine::open(dir.path(), Settings::default()).unwrap();
        catalog::bootstrap(&engine).unwrap();
        let mut a = session(&engine, 1);
        query(&mut a, "CREATE TABLE k (id int PRIMARY KEY, who text)");
        for (end, expect) in [("COMMIT", Some("23505")), ("ROLLBACK", None)] {
            query(&mut a, "DELETE FROM k");
            query(&mut a, "BEGIN; INSERT INTO k VALUES (1, 'a')");
            let e2 = engine.clone();
            let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let d2 = done.clone();
            let h = std::thread::spawn(move || {
                let mut b = session(&e2, 2);
                let r = b.execute_simple("INSERT INTO k VALUES (1, 'b')", &mut crate::test_support::Collect::default());
                d2.store(true, std::sync::atomic::Ordering::SeqCst);
                r.err().map(|e| (e.sqlstate().to_string(), e.message, e.detail))
            });
            std::thread::sleep(std::time::Duration::from_millis(300));
            assert!(!done.load(std::sync::atomic::Ordering::SeqCst), "the second insert did not wait");
            query(&mut a, end);
            let r = h.join().unwrap();
            match expect {
                Some(code) => {
                    let (c, m, d) = r.expect("duplicate not detected");
                    assert_eq!(c, code);
                    assert_eq!(m, "duplicate key value violates unique constraint \"k_pkey\"");
                    assert_eq!(d.as_deref(), Some("Key (id)=(1) already exists."));
                    assert_eq!(query(&mut a, "SELECT who FROM k WHERE id = 1"), vec![vec![Some("a".to_string())]]);
                }
                None => {
                    assert!(r.is_none(), "{r:?}");
                    assert_eq!(query(&mut a, "SELECT who FROM k WHERE id = 1"), vec![vec![Some("b".to_string())]]);
                }
            }
        }
        check_trees(&engine, "k");
    }

    /// TRUNCATE gives the table and its indexes new files in new pg_class row
    /// versions; a rollback restores the old ones. VACUUM and ANALYZE store
    /// relpages/reltuples.
    #[test]
    fn truncate_is_transactional_and_analyze_stores_sizes() {
        let dir = tempfile::tempdir().unwrap();
        let (engine, _) = Engine::open(dir.path(), Settings::default()).unwrap();
        catalog::bootstrap(&engine).unwrap();
        let mut s = session(&engine, 1);
        query(&mut s, "CREATE TABLE t (a int PRIMARY KEY, b text); INSERT INTO t VALUES (1, 'x'), (2, 'y'), (3, 'z')");
        let load = || {
            let mut b = engine.backend(97).unwrap();
            b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
            let snap = b.txn.statement_snapshot().unwrap();
            let t = catalog::lookup_table(&b, &snap, None, "t").unwrap().unwrap();
            let size = stored_size(&b, &snap, t.oid).unwrap().unwrap();
            b.txn.commit().unwrap();
            (t, size)
        };
        let (before, _) = load();
        query(&mut s, "BEGIN; TRUNCATE t; ROLLBACK");
        let (t, _) = load();
        assert_eq!((t.storage.rel, t.indexes[0].rel), (before.storage.rel, before.indexes[0].rel));
        assert_eq!(query(&mut s, "SELECT count(*) FROM t WHERE a = 2"), vec![vec![Some("1".to_string())]]);
        query(&mut s, "ANALYZE t");
        assert_eq!(load().1, RelSize { pages: 1, tuples: 3.0 });
        query(&mut s, "TRUNCATE t");
        let (t, size) = load();
        assert_ne!(t.storage.rel, before.storage.rel);
        assert_ne!(t.indexes[0].rel, before.indexes[0].rel);
        assert_eq!(size, RelSize { pages: 0, tuples: 0.0 });
        let mut out = crate::test_support::Collect::default();
        let e = s.execute_simple("INSERT INTO t VALUES (1, 'again'); VACUUM t", &mut out).unwrap_err();
        assert_eq!((e.sqlstate(), e.message.as_str()), ("25001", "VACUUM cannot run inside a transaction block"));
        assert_eq!(query(&mut s, "SELECT count(*) FROM t"), vec![vec![Some("0".to_string())]]);
        query(&mut s, "INSERT INTO t VALUES (1, 'again')");
        query(&mut s, "VACUUM t");
        assert_eq!(load().1, RelSize { pages: 1, tuples: 1.0 });
        assert_eq!(query(&mut s, "SELECT b FROM t WHERE a = 1"), vec![vec![Some("again".to_string())]]);
        check_trees(&engine, "t");
    }
}
