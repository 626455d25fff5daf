//! TOAST at relation level: a value's chunk rows in the TOAST relation, found
//! through the relation's chunk index (README "TOAST at relation level").
//!
//! The chunk index is a B-tree on (chunk_id, chunk_seq), as PostgreSQL's
//! pg_toast_N_index, kept in the TOAST relation's own `ToastIndex` fork. Every
//! chunk row is entered in it when inserted; detoasting reads one value's chunks
//! by an index scan on chunk_id (O(chunks of the value), not O(the relation));
//! deleting a row deletes its values' chunks the same way, in the row's
//! transaction; VACUUM of the TOAST relation deletes the dead chunks' entries.

use super::heapam::{heap_delete, heap_fetch, heap_insert};
use super::page::heap_page_tuples;
use super::toast::{make_chunks, TOAST_DESC};
use super::tuple::{deform_tuple, AttrDesc, Datum, Tid, TupleHeader, HEAP_HASEXTERNAL};
use super::vacuum::{vacuum_rel, VacuumOptions, VacuumStats};
use crate::engine::{Backend, Engine};
use crate::error::{Error, Result};
use crate::nbtree::page::{read_meta, BuiltinComparator, KeyKind};
use crate::nbtree::{BTree, ScanBounds};
use crate::storage::buffile::TempFile;
use crate::storage::page::page_is_new;
use crate::storage::{BufferTag, ForkNumber, RelFileLocator};
use crate::txn::snapshot::Snapshot;
use crate::txn::visibility::TmResult;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::cmp::Reverse;
use std::sync::{Arc, RwLock};

/// The chunk indexes opened in this engine, by TOAST relation. Looked up under
/// the read lock; an entry is made only once the index is complete (created, or
/// built from the relation), under the write lock, so that no chunk row is
/// inserted into a TOAST relation whose index is being built.
#[derive(Default)]
pub struct ToastIndexes {
    map: RwLock<HashMap<RelFileLocator, Arc<BTree>>>,
}

impl ToastIndexes {
    /// Forgets the index of a relation whose files are gone.
    pub(crate) fn forget(&self, rel: RelFileLocator) {
        self.map.write().unwrap_or_else(|e| e.into_inner()).remove(&rel);
    }
}

/// The chunk index of `toast_rel` as a tree (not opened: see [`toast_index`]).
/// chunk_id is an oid stored as 4 bytes and compared as a signed int4: any total
/// order serves, since the index is only searched for equal chunk_ids.
pub fn chunk_index_tree(toast_rel: RelFileLocator) -> BTree {
    BTree::new(toast_rel, TOAST_DESC[..2].to_vec(), Arc::new(BuiltinComparator(vec![KeyKind::Int4, KeyKind::Int4])), false)
        .with_fork(ForkNumber::ToastIndex)
}

/// The chunk index of `toast_rel`, made if missing: created empty for a new
/// (empty) TOAST relation, built from its rows for one written before chunk
/// indexes existed, or rebuilt after a crash in the middle of such a build.
/// Registers the index as the relation's VACUUM index cleanup (autovacuum).
pub fn toast_index(engine: &Arc<Engine>, toast_rel: RelFileLocator) -> Result<Arc<BTree>> {
    if let Some(t) = engine.toast_indexes.map.read().unwrap_or_else(|e| e.into_inner()).get(&toast_rel) {
        return Ok(t.clone());
    }
    let mut map = engine.toast_indexes.map.write().unwrap_or_else(|e| e.into_inner());
    if let Some(t) = map.get(&toast_rel) {
        return Ok(t.clone());
    }
    let tree = Arc::new(chunk_index_tree(toast_rel));
    if !index_complete(engine, &tree)? {
        if engine.buffers.nblocks(toast_rel, ForkNumber::Main)? == 0 && !engine.smgr.exists(toast_rel, ForkNumber::ToastIndex) {
            // Metapage and root in one WAL record: complete or absent after a crash.
            tree.create(engine)?;
        } else {
            build_chunk_index(engine, &tree)?;
        }
    }
    let weak = Arc::downgrade(engine);
    let t2 = tree.clone();
    super::autovacuum::set_index_cleanup(
        engine,
        toast_rel,
        Some(Arc::new(move |tids: &[Tid]| {
            let Some(engine) = weak.upgrade() else { return Ok(()) };
            let dead: HashSet<Tid> = tids.iter().copied().collect();
            t2.bulk_delete(&engine, &|t| dead.contains(&t)).map(|_| ())
        })),
    );
    map.insert(toast_rel, tree.clone());
    Ok(tree)
}

/// Whether the index fork holds a finished index: a bottom-up build writes the
/// metapage last, and `create` writes it with the root in one record.
fn index_complete(engine: &Engine, tree: &BTree) -> Result<bool> {
    if !engine.smgr.exists(tree.rel, tree.fork) || engine.buffers.nblocks(tree.rel, tree.fork)? == 0 {
        return Ok(false);
    }
    let pin = engine.buffers.read_buffer(BufferTag::new(tree.rel, tree.fork, 0), None)?;
    let g = pin.lock_shared();
    Ok(!page_is_new(&g) && read_meta(&g).is_ok())
}

/// One index entry in sort order: (chunk_id as int4, chunk_seq as int4, TID).
type Entry = (i32, i32, u32, u16);
const ENTRY_BYTES: usize = 14;
/// Entries sorted in memory per run (16 MB: a quarter of PostgreSQL's default
/// maintenance_work_mem; the build runs once per relation, not per session).
const RUN_ENTRIES: usize = 1 << 20;

fn encode(e: &Entry, out: &mut Vec<u8>) {
    out.extend_from_slice(&e.0.to_le_bytes());
    out.extend_from_slice(&e.1.to_le_bytes());
    out.extend_from_slice(&e.2.to_le_bytes());
    out.extend_from_slice(&e.3.to_le_bytes());
}

fn decode(b: &[u8; ENTRY_BYTES]) -> Entry {
    let i = |r: std::ops::Range<usize>| -> [u8; 4] { b[r].try_into().expect("4 bytes") };
    (i32::from_le_bytes(i(0..4)), i32::from_le_bytes(i(4..8)), u32::from_le_bytes(i(8..12)), u16::from_le_bytes([b[12], b[13]]))
}

/// Builds the chunk index of a TOAST relation that has rows: every chunk row
/// with storage (live or not: an index must reach every version a snapshot may
/// see) is read once, the entries are sorted in runs of at most
/// maintenance_work_mem, spilled to temporary files, merged, and written
/// bottom-up. The caller holds the engine's toast index map, so no chunk row is
/// inserted meanwhile. A partial fork (a crash during an earlier build: the
/// metapage is still zero) is truncated first.
fn build_chunk_index(engine: &Engine, tree: &BTree) -> Result<()> {
    build_chunk_index_runs(engine, tree, RUN_ENTRIES)
}

/// Rebuilds the chunk index of `toast_rel` with runs of `run_entries` entries
/// (tests: the merge of spilled runs). The engine's map forgets the index first;
/// no chunk may be inserted meanwhile.
#[doc(hidden)]
pub fn rebuild_chunk_index(engine: &Arc<Engine>, toast_rel: RelFileLocator, run_entries: usize) -> Result<()> {
    let mut map = engine.toast_indexes.map.write().unwrap_or_else(|e| e.into_inner());
    map.remove(&toast_rel);
    build_chunk_index_runs(engine, &chunk_index_tree(toast_rel), run_entries.max(1))
}

fn build_chunk_index_runs(engine: &Engine, tree: &BTree, run_cap: usize) -> Result<()> {
    let rel = tree.rel;
    if engine.smgr.exists(rel, tree.fork) {
        engine.buffers.truncate(rel, tree.fork, 0)?;
    }
    let mut runs: Vec<TempFile> = Vec::new();
    let mut run: Vec<Entry> = Vec::new();
    let spill = |run: &mut Vec<Entry>, runs: &mut Vec<TempFile>| -> Result<()> {
        run.sort_unstable();
        let mut f = TempFile::create(engine.datadir(), std::process::id() as i32)?;
        let mut buf = Vec::with_capacity(ENTRY_BYTES * 512);
        for e in run.iter() {
            encode(e, &mut buf);
            if buf.len() >= ENTRY_BYTES * 512 {
                f.write_all(&buf)?;
                buf.clear();
            }
        }
        f.write_all(&buf)?;
        f.rewind()?;
        runs.push(f);
        run.clear();
        Ok(())
    };
    let nblocks = engine.buffers.nblocks(rel, ForkNumber::Main)?;
    let ring = engine.buffers.strategy(crate::buffer::StrategyKind::BulkRead);
    for block in 0..nblocks {
        let pin = engine.buffers.read_buffer(BufferTag::new(rel, ForkNumber::Main, block), Some(&ring))?;
        let g = pin.lock_shared();
        if page_is_new(&g) {
            continue;
        }
        for t in heap_page_tuples(&g) {
            let (off, t) = t?;
            let v = deform_tuple(&TOAST_DESC[..2], t)?;
            let (Some(Datum::ByVal(id)), Some(Datum::ByVal(seq))) = (v[0], v[1]) else {
                return Err(Error::corrupt(format!("toast chunk at ({block},{off}) has no chunk_id or chunk_seq")));
            };
            run.push((id as u32 as i32, seq as u32 as i32, block, off));
        }
        drop(g);
        if run.len() >= run_cap {
            spill(&mut run, &mut runs)?;
        }
    }
    let mut build = tree.build(engine, 100)?;
    let mut add = |e: Entry| build.add(&[Some(Datum::ByVal(e.0 as u32 as u64)), Some(Datum::ByVal(e.1 as u32 as u64))], Tid::new(e.2, e.3));
    if runs.is_empty() {
        run.sort_unstable();
        for e in run.drain(..) {
            add(e)?;
        }
    } else {
        if !run.is_empty() {
            spill(&mut run, &mut runs)?;
        }
        let mut heap = BinaryHeap::new();
        let next = |f: &mut TempFile| -> Result<Option<Entry>> {
            let mut b = [0u8; ENTRY_BYTES];
            Ok(f.read_exact_or_eof(&mut b)?.then(|| decode(&b)))
        };
        for (i, f) in runs.iter_mut().enumerate() {
            if let Some(e) = next(f)? {
                heap.push(Reverse((e, i)));
            }
        }
        while let Some(Reverse((e, i))) = heap.pop() {
            add(e)?;
            if let Some(n) = next(&mut runs[i])? {
                heap.push(Reverse((n, i)));
            }
        }
    }
    build.finish()?;
    Ok(())
}

/// Stores `data` out of line in `toast_rel` as a new value (a new chunk_id):
/// its chunk rows go into the TOAST relation and its chunk index, in the
/// current transaction. Returns the chunk_id (the value oid of the pointer).
pub fn toast_save_value(backend: &mut Backend, toast_rel: RelFileLocator, data: &[u8]) -> Result<u32> {
    let engine = backend.engine().clone();
    let index = toast_index(&engine, toast_rel)?;
    let oid = engine.new_oid();
    for (seq, chunk) in make_chunks(oid, data)?.iter().enumerate() {
        let tid = heap_insert(backend, toast_rel, chunk)?;
        index.insert(&engine, &[Some(Datum::ByVal(oid as u64)), Some(Datum::ByVal(seq as u64))], tid, None)?;
    }
    Ok(oid)
}

/// The chunk rows of value `value_oid` in `toast_rel` that `snapshot` sees, in
/// chunk_seq order (for `toast::reassemble`, which checks them): one index scan.
pub fn toast_fetch_chunks(backend: &Backend, toast_rel: RelFileLocator, value_oid: u32, snapshot: &Snapshot) -> Result<Vec<Vec<u8>>> {
    let engine = backend.engine().clone();
    let index = toast_index(&engine, toast_rel)?;
    let mut chunks = Vec::new();
    for tid in index.scan(&engine, ScanBounds::eq(vec![Some(Datum::ByVal(value_oid as u64))])) {
        if let Some(t) = heap_fetch(backend, toast_rel, tid?, snapshot)? {
            chunks.push(t);
        }
    }
    Ok(chunks)
}

/// Deletes, in the current transaction, the chunk rows of the values
/// `value_oids` of `toast_rel` (PostgreSQL's toast_delete_datum): each chunk
/// gets the transaction's xmax, so a rollback keeps the values and VACUUM of the
/// TOAST relation frees them once the deletion is visible to all.
pub fn toast_delete_values(backend: &mut Backend, toast_rel: RelFileLocator, value_oids: &[u32]) -> Result<()> {
    let engine = backend.engine().clone();
    let index = toast_index(&engine, toast_rel)?;
    for &oid in value_oids {
        let tids: Vec<Tid> = index.scan(&engine, ScanBounds::eq(vec![Some(Datum::ByVal(oid as u64))])).collect::<Result<_>>()?;
        for tid in tids {
            match heap_delete(backend, toast_rel, tid)? {
                // Deleted now; or a version no one can use: deleted before
                // (committed, or by us), or inserted by an aborted transaction.
                TmResult::Ok | TmResult::SelfModified | TmResult::Invisible | TmResult::Deleted | TmResult::Updated => {}
                TmResult::BeingModified | TmResult::WouldBlock => {
                    return Err(Error::internal(format!(
                        "toast value {oid} in relation {} is being deleted by another transaction",
                        toast_rel.rel_number
                    )))
                }
            }
        }
    }
    Ok(())
}

/// Deletes the out-of-line values of the heap tuple `tuple` (formed with `desc`),
/// in the current transaction: what DELETE and UPDATE do for the row version they
/// replace. Values of other relations' TOAST relations (none today) go too.
pub fn toast_delete_tuple(backend: &mut Backend, rel: RelFileLocator, desc: &[AttrDesc], tuple: &[u8]) -> Result<()> {
    if TupleHeader::read(tuple)?.infomask & HEAP_HASEXTERNAL == 0 {
        return Ok(());
    }
    let mut by_rel: Vec<(RelFileLocator, Vec<u32>)> = Vec::new();
    for d in deform_tuple(desc, tuple)?.into_iter().flatten() {
        if let Datum::External(p) = d {
            let t = RelFileLocator { rel_number: p.toast_relid, ..rel };
            match by_rel.iter_mut().find(|(r, _)| *r == t) {
                Some((_, v)) => v.push(p.value_oid),
                None => by_rel.push((t, vec![p.value_oid])),
            }
        }
    }
    for (t, oids) in by_rel {
        toast_delete_values(backend, t, &oids)?;
    }
    Ok(())
}

/// VACUUM of a TOAST relation with its chunk index: dead chunk rows are pruned,
/// their index entries deleted in one pass over the index per batch of dead
/// TIDs, and their line pointers freed.
pub fn vacuum_toast(engine: &Arc<Engine>, backend: Option<&Backend>, toast_rel: RelFileLocator, opts: VacuumOptions) -> Result<VacuumStats> {
    let index = toast_index(engine, toast_rel)?;
    let mut cleanup = |tids: &[Tid]| -> Result<()> {
        let dead: HashSet<Tid> = tids.iter().copied().collect();
        index.bulk_delete(engine, &|t| dead.contains(&t)).map(|_| ())
    };
    vacuum_rel(engine, backend, toast_rel, opts, &mut cleanup)
}
