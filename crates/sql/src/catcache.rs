//! The per-backend catalog caches (PostgreSQL's relcache and the name lookups
//! of its syscache), kept coherent by the engine's shared invalidation queue
//! (`ferrogres_engine::sinval`). See the "Catalog cache" section of the crate
//! README for the protocol; in short:
//!
//! - [`CatCache`] lives in the backend ([`Backend::ext`]): owned by the session
//!   that owns the backend, reached through the `&Backend` every catalog
//!   function already takes, never shared between backends.
//! - Every write to a catalog heap goes through [`catalog_row_inserted`] /
//!   [`heap_delete`], which register the matching invalidation messages in the
//!   writing transaction (sent at its commit, dropped at its abort) and apply
//!   them to this backend's own cache at once.
//! - A backend reads the queue ([`accept`]) at statement start, before the
//!   statement's snapshot, and after each relation lock it acquires
//!   (`locking::lock_relation`), and again right after it inserts an entry.
//! - Entries are inserted only from a snapshot that is not older than the
//!   last message this backend consumed, and never while the backend's own
//!   transaction has uncommitted catalog changes.
//!
//! The cache also carries what plan invalidation needs: a generation per
//! relation (bumped by each message for it) and generations for name
//! resolution and for everything else; a cached plan records the generations
//! it was analyzed under ([`PlanDeps`]) and is valid while they are unchanged.

use crate::catalog::Table;
use ferrogres_datum::types::Value;
use ferrogres_engine::engine::{Backend, FIRST_NORMAL_OBJECT_ID};
use ferrogres_engine::heap::tuple::Tid;
use ferrogres_engine::sinval::{Catchup, InvalMessage, InvalReader};
use ferrogres_engine::storage::RelFileLocator;
use ferrogres_engine::txn::snapshot::Snapshot;
use rustc_hash::FxHashMap;
use std::cell::{Cell, RefCell};
use std::sync::Arc;

/// One backend's catalog caches. Interior mutability: reached through
/// `&Backend`; no borrow is held across a catalog scan (a scan counts itself
/// here), so the `RefCell` never sees a nested borrow.
#[derive(Default)]
pub struct CatCache {
    inner: RefCell<Inner>,
    /// Heap scans of catalog relations started by this backend
    /// (`ferrogres_catalog_scans()`).
    scans: Cell<u64>,
    /// Analyses of statements whose plans may be kept, begun by this backend
    /// (`ferrogres_plan_analyses()`: a plan-cache miss counts one).
    analyses: Cell<u64>,
}

#[derive(Default)]
struct Inner {
    /// This backend's place in the shared queue; `None` until first used (an
    /// empty cache has nothing to invalidate).
    reader: Option<InvalReader>,
    /// The database the entries belong to (`crate::database::current`).
    db: u32,
    /// Relation descriptors by OID (tables: relkind 'r').
    tables: FxHashMap<u32, Arc<Table>>,
    /// (namespace OID, relname) -> the table of that name there, or none.
    names: FxHashMap<(u32, String), Option<u32>>,
    /// Every schema: (oid, name).
    namespaces: Option<Arc<Vec<(u32, String)>>>,
    /// SQL functions (pg_proc) by name, in every schema.
    functions: FxHashMap<String, Arc<Vec<crate::sqlfunc::ProcDef>>>,
    /// Every SQL function (privilege checks find them by OID).
    all_functions: Option<Arc<Vec<crate::sqlfunc::ProcDef>>>,
    /// Per relation: messages seen for it (plan validity).
    rel_gen: FxHashMap<u32, u64>,
    /// Bumped when name resolution may change (pg_class rows created or
    /// renamed, schemas).
    names_gen: u64,
    /// Bumped by a message for any other catalog, a reset, or a database change.
    global_gen: u64,
    /// ProcArray completion count read right after the last receive that
    /// consumed messages: a snapshot with a smaller count may not see a change
    /// already consumed, so nothing built from it is inserted.
    min_completion: u64,
    /// Receives that consumed messages (or a reset): a lookup made before a
    /// lock is granted is made again when this moved meanwhile
    /// (`locking::lock_resolved`, PostgreSQL's SharedInvalidMessageCounter).
    consumed: u64,
    /// The open transaction registered catalog changes: nothing is inserted
    /// until it ends (its uncommitted state must not outlive an abort).
    txn_dirty: bool,
    /// pg_class rows this transaction deleted: (oid, relname, relnamespace). A
    /// row inserted again with the same three is an update that renames
    /// nothing.
    deleted_class: Vec<(u32, String, u32)>,
    /// Relations read by the analysis being recorded: (OID, generation).
    recording: Option<Vec<(u32, u64)>>,
    /// Privileges the analysis being recorded found the statement needs
    /// ([`crate::acl::PermReq`]); recorded whenever an analysis runs.
    perms: Vec<crate::acl::PermReq>,
    /// Owners and ACLs of relations by OID ([`crate::acl::rel_acl`]).
    rel_acls: FxHashMap<u32, Arc<crate::acl::RelAcl>>,
    /// Every schema's owner and ACL.
    ns_acls: Option<Arc<Vec<crate::acl::NsAcl>>>,
    /// Every row of pg_database (a shared catalog: any message for it clears
    /// the cache with the rest).
    databases: Option<Arc<Vec<crate::database::DbRow>>>,
    /// pg_authid and pg_auth_members as privilege checks read them (any
    /// message for a shared catalog clears it with the rest).
    roles: Option<Arc<crate::acl::RoleGraph>>,
    /// Every row of pg_default_acl (read when an object is created).
    default_acls: Option<Arc<Vec<crate::default_acl::DefAcl>>>,
}

/// What a plan was analyzed under. Valid while every generation is unchanged.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlanDeps {
    pub global: u64,
    pub names: u64,
    pub rels: Vec<(u32, u64)>,
}

pub fn get(backend: &Backend) -> &CatCache {
    backend.ext::<CatCache>()
}

/// Heap scans of catalog relations this backend started.
pub fn catalog_scans(backend: &Backend) -> u64 {
    get(backend).scans.get()
}

/// Plan analyses this backend began ([`begin_deps`]).
pub fn plan_analyses(backend: &Backend) -> u64 {
    get(backend).analyses.get()
}

/// A heap scan of `rel` starts (`rowio::RowScan::new`): counted if `rel` is a
/// catalog.
pub(crate) fn note_scan(backend: &Backend, rel: RelFileLocator) {
    if rel.rel_number < FIRST_NORMAL_OBJECT_ID {
        let c = &get(backend).scans;
        c.set(c.get() + 1);
    }
}

impl Inner {
    fn clear(&mut self) {
        self.tables.clear();
        self.names.clear();
        self.namespaces = None;
        self.functions.clear();
        self.all_functions = None;
        self.rel_acls.clear();
        self.ns_acls = None;
        self.databases = None;
        self.roles = None;
        self.default_acls = None;
        self.names_gen += 1;
        self.global_gen += 1;
    }

    fn apply(&mut self, m: &InvalMessage) {
        match *m {
            InvalMessage::Relation { db, rel } => {
                if db != self.db && db != 0 {
                    return;
                }
                *self.rel_gen.entry(rel).or_insert(0) += 1;
                self.tables.remove(&rel);
                self.rel_acls.remove(&rel);
                // The descriptor of a table embeds its indexes (name, file): a
                // message for one of them is one for the table too.
                let owners: Vec<u32> = self.tables.iter().filter(|(_, t)| t.indexes.iter().any(|i| i.oid == rel)).map(|(o, _)| *o).collect();
                for o in owners {
                    *self.rel_gen.entry(o).or_insert(0) += 1;
                    self.tables.remove(&o);
                }
                // Descriptors that embed this one (foreign-key parents).
                self.tables.retain(|_, t| !t.extras.fkeys.iter().any(|f| f.parent == rel));
                self.names.retain(|_, v| *v != Some(rel));
            }
            InvalMessage::Catalog { db, catalog } => {
                if db != self.db && db != 0 {
                    return;
                }
                match catalog {
                    crate::catalog::PG_CLASS => {
                        self.names.clear();
                        self.names_gen += 1;
                    }
                    crate::catalog::PG_NAMESPACE => {
                        self.names.clear();
                        self.namespaces = None;
                        self.ns_acls = None;
                        self.names_gen += 1;
                    }
                    _ => self.clear(),
                }
            }
        }
    }

    fn dep(&mut self, oid: u32) {
        let gen = self.rel_gen.get(&oid).copied().unwrap_or(0);
        if let Some(r) = self.recording.as_mut() {
            if !r.iter().any(|(o, _)| *o == oid) {
                r.push((oid, gen));
            }
        }
    }
}

/// Reads the shared queue and applies what it holds to this backend's cache.
/// Called at statement start (before the statement's snapshot), after a
/// relation lock is granted, and after an entry is inserted.
pub fn accept(backend: &Backend) {
    let cc = get(backend);
    let mut inner = cc.inner.borrow_mut();
    let db = crate::database::current();
    let queue = &backend.txn.shared().sinval;
    if inner.db != db {
        inner.clear();
        inner.db = db;
        inner.reader = None;
    }
    let Some(reader) = inner.reader.as_mut() else {
        inner.reader = Some(queue.reader());
        inner.min_completion = backend.txn.shared().procarray.completion_count();
        return;
    };
    if !queue.has_news(reader) {
        return;
    }
    let got = queue.receive(reader);
    match got {
        Catchup::UpToDate => {}
        Catchup::Messages(msgs) => {
            for m in &msgs {
                inner.apply(m);
            }
            inner.min_completion = backend.txn.shared().procarray.completion_count();
            inner.consumed += 1;
        }
        Catchup::Reset => {
            inner.clear();
            inner.min_completion = backend.txn.shared().procarray.completion_count();
            inner.consumed += 1;
        }
    }
}

/// How many times [`accept`] consumed messages so far: compared before and
/// after a lock is granted to know whether what was looked up before it may
/// have changed.
pub fn consumed(backend: &Backend) -> u64 {
    get(backend).inner.borrow().consumed
}

/// A catalog snapshot (PostgreSQL's GetCatalogSnapshot): the latest committed
/// state of the catalogs, plus the open transaction's own changes made by
/// earlier commands. Relation lookups read the catalogs with it, never with
/// a REPEATABLE READ or SERIALIZABLE transaction's snapshot, which could name
/// files another session's TRUNCATE or rewrite has since removed; user
/// tables are still read with the transaction's snapshot. Taken anew for
/// each statement's analysis and after each lock wait (an entry built from
/// it is kept in the cache: it is not older than any message consumed).
pub fn catalog_snapshot(backend: &Backend, curcid: ferrogres_engine::txn::CommandId) -> ferrogres_datum::errors::Result<Snapshot> {
    Ok(backend.txn.shared().procarray.get_snapshot(backend.id(), curcid, None)?)
}

/// The snapshot analysis and DDL read the catalogs with: the statement's in
/// READ COMMITTED (taken just now, as fresh), else a [`catalog_snapshot`]
/// taken after the transaction's snapshot is fixed (so that the first
/// statement of a REPEATABLE READ transaction still fixes it). DDL reads the
/// rows it validates or copies with it too, as PostgreSQL's rewrites and
/// constraint checks read with its latest snapshot.
pub fn ddl_snapshot(backend: &mut Backend) -> ferrogres_datum::errors::Result<Snapshot> {
    let snap = backend.txn.statement_snapshot()?;
    if backend.txn.isolation() == ferrogres_engine::txn::IsolationLevel::ReadCommitted {
        return Ok(snap);
    }
    catalog_snapshot(backend, snap.curcid)
}

/// Whether an entry built from `snap` may be kept: whatever the isolation
/// level, a snapshot not older than the last message consumed misses no
/// change whose message was consumed, and one whose message comes later
/// removes the entry when it is consumed (README, "Catalog cache").
fn may_insert(inner: &Inner, snap: &Snapshot) -> bool {
    inner.reader.is_some() && !inner.txn_dirty && inner.db == crate::database::current() && snap.completion_count >= inner.min_completion
}

/// The open transaction ended: entries may be inserted again. What it changed
/// was dropped from this cache when it registered the change, and entries
/// built since were not kept; on abort, plans analyzed against its changes
/// are stale (the global generation moves).
pub fn end_transaction(backend: &Backend, committed: bool) {
    let cc = get(backend);
    let mut inner = cc.inner.borrow_mut();
    if inner.txn_dirty && !committed {
        inner.global_gen += 1;
    }
    inner.txn_dirty = false;
    inner.deleted_class.clear();
}

/// A ROLLBACK TO undid part of the open transaction: if it changed catalogs,
/// plans analyzed since may be stale.
pub fn subtransaction_aborted(backend: &Backend) {
    let cc = get(backend);
    let mut inner = cc.inner.borrow_mut();
    if inner.txn_dirty {
        inner.global_gen += 1;
    }
}

/// Registers `msgs` in the open transaction and applies them to this
/// backend's cache now (it must see its own changes).
fn register(backend: &mut Backend, msgs: &[InvalMessage]) {
    for m in msgs {
        backend.txn.register_inval(*m);
    }
    let cc = get(backend);
    let mut inner = cc.inner.borrow_mut();
    inner.txn_dirty = true;
    for m in msgs {
        inner.apply(m);
    }
}

fn oid_at(row: &[Value], i: usize) -> Option<u32> {
    match row.get(i) {
        Some(Value::Oid(o)) => Some(*o),
        _ => None,
    }
}

/// The messages a write of `row` to catalog `rel` calls for. `inserted`: an
/// insert (else a delete). `row` `None`: not known; the whole catalog is
/// invalidated.
fn messages(backend: &Backend, rel: RelFileLocator, row: Option<&[Value]>, inserted: bool) -> Vec<InvalMessage> {
    let db = rel.db_oid;
    let catalog = rel.rel_number;
    let whole = vec![InvalMessage::Catalog { db, catalog }];
    let relation = |o: Option<u32>| o.map(|rel| InvalMessage::Relation { db, rel });
    if catalog == crate::stats::PG_STATISTIC {
        // Statistics are not cached (plans choose their scans when they run).
        return Vec::new();
    }
    let Some(row) = row else { return whole };
    match catalog {
        crate::catalog::PG_CLASS => {
            let Some(oid) = oid_at(row, 0) else { return whole };
            let mut out = vec![InvalMessage::Relation { db, rel: oid }];
            let name = match row.get(1) {
                Some(Value::Text(n)) => n.clone(),
                _ => return whole,
            };
            let ns = oid_at(row, 2).unwrap_or(0);
            let cc = get(backend);
            let mut inner = cc.inner.borrow_mut();
            if inserted {
                let same = inner.deleted_class.iter().any(|(o, n, s)| *o == oid && *n == name && *s == ns);
                // An index's name is never what a query's FROM resolves to.
                let index = matches!(row.get(5), Some(Value::Text(k)) if k == "i");
                if !same && !index {
                    out.push(InvalMessage::Catalog { db, catalog });
                }
            } else {
                inner.deleted_class.push((oid, name, ns));
            }
            out
        }
        crate::catalog::PG_ATTRIBUTE | crate::catalog::PG_ATTRDEF => relation(oid_at(row, 0)).into_iter().collect(),
        crate::index::PG_INDEX => [relation(oid_at(row, 0)), relation(oid_at(row, 1))].into_iter().flatten().collect(),
        crate::index::PG_CONSTRAINT => {
            let mut out: Vec<InvalMessage> = [relation(oid_at(row, 4)), relation(oid_at(row, 5).filter(|o| *o != 0))].into_iter().flatten().collect();
            if let [_, Value::Text(name), _, Value::Text(kind), Value::Oid(child), _, Value::Text(conkey), Value::Text(bin)] = row {
                if kind == "f" {
                    match crate::foreign_key::decode(name, *child, conkey, bin) {
                        Some(fk) => out.extend(relation(Some(fk.parent))),
                        None => return whole,
                    }
                }
            }
            if out.is_empty() {
                return whole;
            }
            out
        }
        _ => whole,
    }
}

/// A row was inserted into relation `rel` (`rowio::insert_row`): if `rel` is
/// a catalog, its invalidations are registered.
pub(crate) fn catalog_row_inserted(backend: &mut Backend, rel: RelFileLocator, row: &[Value]) {
    if rel.rel_number >= FIRST_NORMAL_OBJECT_ID {
        return;
    }
    let msgs = messages(backend, rel, Some(row), true);
    register(backend, &msgs);
}

/// Registers an invalidation of relation `oid`'s descriptor (and of the plans
/// that read it), for a change the catalog rows written do not name: REINDEX
/// gives an index a new file, which the table's descriptor embeds.
pub(crate) fn relation_changed(backend: &mut Backend, oid: u32) {
    let db = crate::catalog::locator(0).db_oid;
    register(backend, &[InvalMessage::Relation { db, rel: oid }]);
}

/// Deletes a catalog row (`heapam::heap_delete`) and registers its
/// invalidations: precise when the caller gives the row it deletes, the whole
/// catalog's otherwise.
pub fn heap_delete(
    backend: &mut Backend,
    rel: RelFileLocator,
    tid: Tid,
    row: Option<&[Value]>,
) -> ferrogres_engine::Result<ferrogres_engine::txn::visibility::TmResult> {
    let r = ferrogres_engine::heap::heapam::heap_delete(backend, rel, tid)?;
    if rel.rel_number < FIRST_NORMAL_OBJECT_ID {
        let msgs = messages(backend, rel, row, false);
        register(backend, &msgs);
    }
    Ok(r)
}

// ---- lookups -------------------------------------------------------------------

/// Every schema (oid, name), from the cache or pg_namespace.
pub(crate) fn namespaces(backend: &Backend, snap: &Snapshot, load: impl FnOnce() -> ferrogres_datum::errors::Result<Vec<(u32, String)>>) -> ferrogres_datum::errors::Result<Arc<Vec<(u32, String)>>> {
    let cc = get(backend);
    if let Some(n) = cc.inner.borrow().namespaces.clone() {
        return Ok(n);
    }
    let v = Arc::new(load()?);
    let keep = {
        let inner = cc.inner.borrow();
        may_insert(&inner, snap)
    };
    if keep {
        cc.inner.borrow_mut().namespaces = Some(v.clone());
        accept(backend);
    }
    Ok(v)
}

/// The SQL functions named `name` (any schema), from the cache or `load`
/// (a pg_proc scan). Any pg_proc change clears them (a catalog message).
pub(crate) fn functions(
    backend: &Backend,
    snap: &Snapshot,
    name: &str,
    load: impl FnOnce() -> ferrogres_datum::errors::Result<Vec<crate::sqlfunc::ProcDef>>,
) -> ferrogres_datum::errors::Result<Arc<Vec<crate::sqlfunc::ProcDef>>> {
    let cc = get(backend);
    if let Some(f) = cc.inner.borrow().functions.get(name).cloned() {
        return Ok(f);
    }
    let v = Arc::new(load()?);
    let keep = {
        let inner = cc.inner.borrow();
        may_insert(&inner, snap)
    };
    if keep {
        cc.inner.borrow_mut().functions.insert(name.to_string(), v.clone());
        accept(backend);
    }
    Ok(v)
}

/// The cached resolution of `name` in schema `ns`: `Some(Some(oid))` a table,
/// `Some(None)` known absent, `None` not cached.
pub(crate) fn name(backend: &Backend, ns: u32, name: &str) -> Option<Option<u32>> {
    get(backend).inner.borrow().names.get(&(ns, name.to_string())).copied()
}

/// Caches resolutions of `name` found by one pg_class scan with `snap`.
pub(crate) fn put_names(backend: &Backend, snap: &Snapshot, name: &str, found: &[(u32, Option<u32>)]) {
    let cc = get(backend);
    {
        let mut inner = cc.inner.borrow_mut();
        if !may_insert(&inner, snap) {
            return;
        }
        for (ns, oid) in found {
            inner.names.insert((*ns, name.to_string()), *oid);
        }
    }
    accept(backend);
}

/// The cached descriptor of table `oid`; recorded as a dependency of the
/// analysis being recorded.
pub(crate) fn table(backend: &Backend, oid: u32) -> Option<Arc<Table>> {
    let cc = get(backend);
    let mut inner = cc.inner.borrow_mut();
    let t = inner.tables.get(&oid).cloned()?;
    inner.dep(oid);
    for f in &t.extras.fkeys {
        inner.dep(f.parent);
    }
    Some(t)
}

/// Records a descriptor built from `snap` (kept if it may be) as a dependency.
pub(crate) fn put_table(backend: &Backend, snap: &Snapshot, t: &Arc<Table>, complete: bool) {
    let cc = get(backend);
    {
        let mut inner = cc.inner.borrow_mut();
        inner.dep(t.oid);
        for f in &t.extras.fkeys {
            inner.dep(f.parent);
        }
        if !complete || !may_insert(&inner, snap) {
            return;
        }
        inner.tables.insert(t.oid, t.clone());
    }
    accept(backend);
}

// ---- privileges -------------------------------------------------------------------

/// The cached owner and ACL of relation `oid`.
pub(crate) fn rel_acl(backend: &Backend, oid: u32) -> Option<Arc<crate::acl::RelAcl>> {
    get(backend).inner.borrow().rel_acls.get(&oid).cloned()
}

/// Keeps relation `r`'s owner and ACL read with `snap` (if it may).
pub(crate) fn put_rel_acl(backend: &Backend, snap: &Snapshot, r: &Arc<crate::acl::RelAcl>) {
    let cc = get(backend);
    {
        let mut inner = cc.inner.borrow_mut();
        if !may_insert(&inner, snap) {
            return;
        }
        inner.rel_acls.insert(r.oid, r.clone());
    }
    accept(backend);
}

/// A whole-catalog entry of the cache (`slot` picks it), or `load`ed and kept
/// when the snapshot allows (`may_insert`).
fn cached<T>(
    backend: &Backend,
    snap: &Snapshot,
    slot: fn(&mut Inner) -> &mut Option<Arc<T>>,
    load: impl FnOnce() -> ferrogres_datum::errors::Result<T>,
) -> ferrogres_datum::errors::Result<Arc<T>> {
    let cc = get(backend);
    if let Some(v) = slot(&mut cc.inner.borrow_mut()).clone() {
        return Ok(v);
    }
    let v = Arc::new(load()?);
    let keep = may_insert(&cc.inner.borrow(), snap);
    if keep {
        *slot(&mut cc.inner.borrow_mut()) = Some(v.clone());
        accept(backend);
    }
    Ok(v)
}

/// Every schema's owner and ACL, from the cache or `load`.
pub(crate) fn ns_acls(
    backend: &Backend,
    snap: &Snapshot,
    load: impl FnOnce() -> ferrogres_datum::errors::Result<Vec<crate::acl::NsAcl>>,
) -> ferrogres_datum::errors::Result<Arc<Vec<crate::acl::NsAcl>>> {
    cached(backend, snap, |i| &mut i.ns_acls, load)
}

/// Every row of pg_database, from the cache or `load`.
pub(crate) fn databases(
    backend: &Backend,
    snap: &Snapshot,
    load: impl FnOnce() -> ferrogres_datum::errors::Result<Vec<crate::database::DbRow>>,
) -> ferrogres_datum::errors::Result<Arc<Vec<crate::database::DbRow>>> {
    cached(backend, snap, |i| &mut i.databases, load)
}

/// The role graph, from the cache or `load`.
pub(crate) fn role_graph(
    backend: &Backend,
    snap: &Snapshot,
    load: impl FnOnce() -> ferrogres_datum::errors::Result<crate::acl::RoleGraph>,
) -> ferrogres_datum::errors::Result<Arc<crate::acl::RoleGraph>> {
    cached(backend, snap, |i| &mut i.roles, load)
}

/// Every pg_default_acl entry, from the cache or `load`.
pub(crate) fn default_acls(
    backend: &Backend,
    snap: &Snapshot,
    load: impl FnOnce() -> ferrogres_datum::errors::Result<Vec<crate::default_acl::DefAcl>>,
) -> ferrogres_datum::errors::Result<Arc<Vec<crate::default_acl::DefAcl>>> {
    cached(backend, snap, |i| &mut i.default_acls, load)
}

/// Every SQL function, from the cache or `load`.
pub(crate) fn all_functions(
    backend: &Backend,
    snap: &Snapshot,
    load: impl FnOnce() -> ferrogres_datum::errors::Result<Vec<crate::sqlfunc::ProcDef>>,
) -> ferrogres_datum::errors::Result<Arc<Vec<crate::sqlfunc::ProcDef>>> {
    cached(backend, snap, |i| &mut i.all_functions, load)
}

/// Starts recording the privileges an analysis finds its statement needs.
pub fn begin_perms(backend: &Backend) -> Vec<crate::acl::PermReq> {
    std::mem::take(&mut get(backend).inner.borrow_mut().perms)
}

/// Ends the recording begun by [`begin_perms`] (`outer`: what it returned,
/// the recording of an enclosing analysis, put back).
pub fn take_perms(backend: &Backend, outer: Vec<crate::acl::PermReq>) -> Vec<crate::acl::PermReq> {
    std::mem::replace(&mut get(backend).inner.borrow_mut().perms, outer)
}

/// Records that the statement being analyzed needs `p`.
pub fn require(backend: &Backend, p: crate::acl::PermReq) {
    let cc = get(backend);
    let mut inner = cc.inner.borrow_mut();
    if let Some(q) = inner.perms.iter_mut().find(|q| q.rel == p.rel && q.func == p.func && q.any == p.any && q.check_as == p.check_as && !p.any) {
        q.privs |= p.privs;
        crate::acl::ColSets::merge(&mut q.cols, &p.cols);
    } else if !inner.perms.contains(&p) {
        inner.perms.push(p);
    }
}

/// Records that the statement being analyzed names column `attnum` of `rel`
/// for `privilege` (SELECT, INSERT or UPDATE), checked as `check_as`: kept
/// with the relation's requirement for the column-level check.
pub fn require_column(backend: &Backend, rel: u32, check_as: Option<u32>, privilege: u16, attnum: i16) {
    let cc = get(backend);
    let mut inner = cc.inner.borrow_mut();
    match inner.perms.iter_mut().find(|q| q.rel == rel && !q.func && !q.any && q.check_as == check_as) {
        Some(q) => {
            if let Some(c) = q.cols.as_mut() {
                c.add(privilege, attnum);
            }
        }
        None => {
            let mut c = crate::acl::ColSets::default();
            c.add(privilege, attnum);
            inner.perms.push(crate::acl::PermReq { rel, check_as, cols: Some(Box::new(c)), ..Default::default() });
        }
    }
}

/// Moves the recorded requirements on `rel` checked as `from` to `to` (DML
/// through a view: the table is written by the view's owner).
pub fn reassign_perms(backend: &Backend, rel: u32, from: Option<u32>, to: Option<u32>) {
    let cc = get(backend);
    let mut inner = cc.inner.borrow_mut();
    for p in inner.perms.iter_mut().filter(|p| p.rel == rel && !p.func && p.check_as == from) {
        p.check_as = to;
    }
}

// ---- plan dependencies ------------------------------------------------------------

/// Starts recording the relations an analysis reads.
pub fn begin_deps(backend: &Backend) -> PlanDeps {
    let cc = get(backend);
    cc.analyses.set(cc.analyses.get() + 1);
    let mut inner = cc.inner.borrow_mut();
    inner.recording = Some(Vec::new());
    PlanDeps { global: inner.global_gen, names: inner.names_gen, rels: Vec::new() }
}

/// Ends the recording begun by [`begin_deps`].
pub fn take_deps(backend: &Backend, mut deps: PlanDeps) -> PlanDeps {
    let cc = get(backend);
    deps.rels = cc.inner.borrow_mut().recording.take().unwrap_or_default();
    deps
}

/// Whether nothing a plan depends on changed since it was analyzed.
pub fn deps_valid(backend: &Backend, deps: &PlanDeps) -> bool {
    let cc = get(backend);
    let inner = cc.inner.borrow();
    inner.global_gen == deps.global
        && inner.names_gen == deps.names
        && deps.rels.iter().all(|(o, g)| inner.rel_gen.get(o).copied().unwrap_or(0) == *g)
}

#[cfg(test)]
mod tests {
    use crate::catalog::{self, Column, PUBLIC_NAMESPACE};
    use ferrogres_datum::types::Type;
    use ferrogres_engine::config::Settings;
    use ferrogres_engine::engine::Engine;
    use ferrogres_engine::txn::IsolationLevel;

    fn cols(names: &[&str]) -> Vec<Column> {
        names.iter().map(|n| Column { name: n.to_string(), ty: Type::Int4, typmod: -1, not_null: false, default: None }).collect()
    }

    /// A descriptor built from a snapshot older than a change whose message
    /// was already read is not kept; a warm lookup scans nothing; a change
    /// committed by another backend is seen after `accept`; an aborted DDL
    /// leaves nothing cached.
    #[test]
    fn entries_follow_committed_changes_only() {
        let dir = tempfile::tempdir().unwrap();
        let (engine, _) = Engine::open(dir.path(), Settings::default()).unwrap();
        catalog::bootstrap(&engine).unwrap();
        let mut a = engine.backend(1).unwrap();
        let mut b = engine.backend(2).unwrap();
        b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        catalog::create_table(&mut b, PUBLIC_NAMESPACE, "t", cols(&["x"])).unwrap();
        b.txn.commit().unwrap();
        super::end_transaction(&b, true);

        // Warm: the second lookup scans no catalog.
        super::accept(&a);
        a.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        let old_snap = a.txn.statement_snapshot().unwrap();
        assert_eq!(catalog::lookup_table(&a, &old_snap, None, "t").unwrap().unwrap().columns.len(), 1);
        let scans = super::catalog_scans(&a);
        assert_eq!(catalog::lookup_table(&a, &old_snap, None, "t").unwrap().unwrap().columns.len(), 1);
        assert_eq!(super::catalog_scans(&a), scans);

        // b replaces t; a reads the messages, then looks up with its old snapshot.
        b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        let snap = b.txn.statement_snapshot().unwrap();
        let t = catalog::lookup_table(&b, &snap, None, "t").unwrap().unwrap();
        catalog::drop_table(&mut b, &snap, &t, &[t.oid]).unwrap();
        catalog::create_table(&mut b, PUBLIC_NAMESPACE, "t", cols(&["x", "y"])).unwrap();
        b.txn.commit().unwrap();
        super::end_transaction(&b, true);
        super::accept(&a);
        assert_eq!(catalog::lookup_table(&a, &old_snap, None, "t").unwrap().unwrap().columns.len(), 1);
        // Not kept: a new snapshot sees the new table.
        let snap = a.txn.statement_snapshot().unwrap();
        assert_eq!(catalog::lookup_table(&a, &snap, None, "t").unwrap().unwrap().columns.len(), 2);
        a.txn.commit().unwrap();
        super::end_transaction(&a, true);

        // An aborted DDL of a's own leaves nothing of it cached.
        super::accept(&a);
        a.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        let snap = a.txn.statement_snapshot().unwrap();
        let t = catalog::lookup_table(&a, &snap, None, "t").unwrap().unwrap();
        catalog::drop_table(&mut a, &snap, &t, &[t.oid]).unwrap();
        a.txn.command_counter_increment().unwrap();
        let snap = a.txn.statement_snapshot().unwrap();
        assert!(catalog::lookup_table(&a, &snap, None, "t").unwrap().is_none());
        a.txn.abort().unwrap();
        super::end_transaction(&a, false);
        super::accept(&a);
        a.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        let snap = a.txn.statement_snapshot().unwrap();
        assert_eq!(catalog::lookup_table(&a, &snap, None, "t").unwrap().unwrap().columns.len(), 2);
        a.txn.commit().unwrap();
        drop(a);
        drop(b);
        engine.shutdown().unwrap();
    }
}
