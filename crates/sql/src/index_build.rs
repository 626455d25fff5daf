//! Filling a new index (CREATE INDEX, the index of a PRIMARY KEY / UNIQUE
//! constraint, REINDEX): one heap scan, then
//! - B-tree: the entries are sorted (an external sort within
//!   `maintenance_work_mem`, [`crate::sort::Sorter`], spilling runs to temporary
//!   files past it) and handed in order to the engine's bottom-up build
//!   (`nbtree::BTree::build`: leaves written left to right at the fill factor,
//!   upper levels likewise, each page WAL-logged once as an image). A unique
//!   index is checked on the sorted stream: two neighbours with equal key columns
//!   and no NULL are a duplicate (23505 `could not create unique index`, DETAIL
//!   `Key (cols)=(vals) is duplicated.`, as PostgreSQL's tuplesort does).
//! - hash: entries inserted one by one as the scan finds them (the hash index's
//!   own insert path; the bucket count comes from a first counting pass).
//!
//! Invariants:
//! 1. Memory: the scan holds one heap page's tuples (a B-tree build makes values
//!    of its key columns only) and the HOT roots of one block;
//!    the sort holds at most `maintenance_work_mem` of entries (plus one), the
//!    build one page of items per tree level. Nothing holds the table.
//! 2. The sort order is the tree's order: each key column by the executor's
//!    comparison ([`crate::exec::compare`], which [`crate::index::SqlComparator`]
//!    uses or agrees with), DESC reversed, NULLs last (the tree's physical order);
//!    then the heap TID of the HOT chain's root. The engine checks every entry
//!    against the previous one, so a disagreement is an error, never a bad index.
//! 3. Every loop polls the interrupt check (the sorter's through `put`, the
//!    scan's and the build's through a [`Ticker`]).
//!
//! Rows: those the building snapshot sees (the table is ShareLocked: no writer is
//! in progress), each entry pointing at the root of its HOT chain.

use crate::catalog::Table;
use ferrogres_datum::errors::{Result, SqlError};
use crate::exec::{compare_key, Env, Ticker};
use crate::index::{IndexAm, IndexInfo};
use crate::plan::SortKey;
use crate::rowio::RowScan;
use crate::sort::{SortMem, Sorter};
use ferrogres_datum::types::{self, Value};
use ferrogres_engine::engine::Backend;
use ferrogres_engine::heap::heapam;
use ferrogres_engine::heap::tuple::Tid;
use ferrogres_engine::nbtree::BTREE_DEFAULT_FILLFACTOR;
use ferrogres_engine::txn::snapshot::Snapshot;
use std::cmp::Ordering;
use std::collections::HashMap;

/// Calls `each` with (root TID of its HOT chain, row) for every row of `table`
/// that `snap` sees: the whole row, or only the columns `cols` (in that order);
/// `not_null` columns (among `cols`) must not be NULL (PRIMARY KEY: 23502).
fn scan(
    backend: &Backend,
    env: &dyn Env,
    snap: &Snapshot,
    table: &Table,
    cols: Option<&[usize]>,
    not_null: &[usize],
    mut each: impl FnMut(Tid, Vec<Value>) -> Result<()>,
) -> Result<()> {
    // Where each NOT NULL column is in the rows handed over.
    let checks: Vec<(usize, usize)> = not_null
        .iter()
        .map(|&c| match cols {
            None => Ok((c, c)),
            Some(cs) => cs.iter().position(|x| *x == c).map(|p| (c, p)).ok_or_else(|| SqlError::internal("index build: NOT NULL column not scanned")),
        })
        .collect::<Result<_>>()?;
    let mut rows = RowScan::new(backend, &table.storage)?;
    let mut roots_of = u32::MAX;
    let mut roots: HashMap<u16, u16> = HashMap::new();
    let mut tick = Ticker::default();
    loop {
        let next = match cols {
            None => rows.next(backend, snap)?,
            Some(cs) => rows.next_columns(backend, snap, cs)?,
        };
        let Some((tid, row)) = next else { break };
        tick.tick(env)?;
        if let Some((c, _)) = checks.iter().find(|(_, p)| row[*p].is_null()) {
            return Err(SqlError::new(
                b"23502",
                format!("column \"{}\" of relation \"{}\" contains null values", table.columns[*c].name, table.name),
            ));
        }
        if tid.block != roots_of {
            // Rows come block by block: one block's HOT roots at a time.
            roots = heapam::heap_get_root_tuples(backend, table.storage.rel, tid.block)?.into_iter().collect();
            roots_of = tid.block;
        }
        let root = Tid::new(tid.block, roots.get(&tid.offset).copied().unwrap_or(tid.offset));
        each(root, row)?;
    }
    Ok(())
}

/// Rows of `table` that `snap` sees (for a hash index's initial bucket count).
pub(crate) fn count_rows(backend: &Backend, env: &dyn Env, snap: &Snapshot, table: &Table) -> Result<u64> {
    let nblocks = heapam::heap_nblocks(backend, table.storage.rel)?;
    let mut n = 0u64;
    for block in 0..nblocks {
        env.check_interrupts()?;
        heapam::heap_scan_block(backend, table.storage.rel, block, snap, &mut |_, _| {
            n += 1;
            Ok(())
        })?;
    }
    Ok(n)
}

/// Fills the new, empty index `ix` of `table` (its file not created yet for a
/// B-tree: the build creates it; created for a hash index). `not_null`: columns
/// a PRIMARY KEY requires non-NULL.
pub(crate) fn build(backend: &Backend, env: &dyn Env, snap: &Snapshot, table: &Table, ix: &IndexInfo, not_null: &[usize]) -> Result<()> {
    match ix.am {
        IndexAm::Btree => build_btree(backend, env, snap, table, ix, not_null),
        IndexAm::Hash => {
            scan(backend, env, snap, table, None, not_null, |root, row| crate::hash_index::insert(backend, ix, &row, root))?;
            Ok(())
        }
    }
}

fn build_btree(backend: &Backend, env: &dyn Env, snap: &Snapshot, table: &Table, ix: &IndexInfo, not_null: &[usize]) -> Result<()> {
    let engine = backend.engine().clone();
    let tree = ix.btree()?;
    let ncols = ix.columns.len();
    // The tree's order (invariant 2): key columns, then the root TID.
    let mut keys: Vec<SortKey> = (0..ncols).map(|i| SortKey { column: i, desc: ix.desc[i], nulls_first: false }).collect();
    keys.push(SortKey { column: ncols, desc: false, nulls_first: false });
    keys.push(SortKey { column: ncols + 1, desc: false, nulls_first: false });
    let mem = SortMem::from_setting(env, engine.datadir().to_path_buf(), "maintenance_work_mem")?;
    let mut sorter = Sorter::new(keys, None, mem);
    scan(backend, env, snap, table, Some(&ix.columns), not_null, |root, mut entry| {
        // The key columns only, then the root TID.
        entry.reserve(2);
        entry.push(Value::Int8(root.block as i64));
        entry.push(Value::Int4(root.offset as i32));
        sorter.put(entry, env)
    })?;
    let (mut sorted, _) = sorter.finish(env)?;
    let fillfactor = ix.fillfactor.map_or(BTREE_DEFAULT_FILLFACTOR, |f| f as u8);
    let mut b = tree.build(&engine, fillfactor)?;
    let mut prev: Option<Vec<Value>> = None;
    let mut tick = Ticker::default();
    while let Some(entry) = sorted.next_row(env)? {
        tick.tick(env)?;
        if ix.unique {
            if let Some(p) = &prev {
                if is_duplicate(ix, p, &entry) {
                    return Err(duplicated(ix, table, &entry));
                }
            }
        }
        let (Some(Value::Int8(block)), Some(Value::Int4(offset))) = (entry.get(ncols), entry.get(ncols + 1)) else {
            return Err(SqlError::internal("index build: sorted entry without its heap TID"));
        };
        let tid = Tid::new(*block as u32, *offset as u16);
        let datums = ix.types.iter().zip(&entry[..ncols]).map(|(t, v)| types::to_datum(*t, v)).collect::<Result<Vec<_>>>()?;
        b.add(&datums, tid)?;
        prev = Some(entry);
    }
    b.finish()?;
    Ok(())
}

/// Two neighbours of the sorted stream conflict: equal key columns (INCLUDE
/// columns aside), none NULL (NULLs never conflict).
fn is_duplicate(ix: &IndexInfo, a: &[Value], b: &[Value]) -> bool {
    (0..ix.nkey).all(|i| !a[i].is_null() && !b[i].is_null() && compare_key(&a[i], &b[i], ix.desc[i], false) == Ordering::Equal)
}

/// PostgreSQL's error for a duplicate found while building a unique index.
fn duplicated(ix: &IndexInfo, table: &Table, entry: &[Value]) -> SqlError {
    let names: Vec<&str> = ix.columns[..ix.nkey].iter().map(|c| table.columns[*c].name.as_str()).collect();
    let shown: Vec<String> = entry[..ix.nkey].iter().map(|v| types::output(v).unwrap_or_else(|| "null".into())).collect();
    SqlError::new(b"23505", format!("could not create unique index \"{}\"", ix.name))
        .with_detail(format!("Key ({})=({}) is duplicated.", names.join(", "), shown.join(", ")))
        .with_objects(table.error_objects(Some(&ix.name), None))
}

#[cfg(test)]
mod tests {
    use crate::catalog;
    use crate::session::Session;
    use ferrogres_engine::config::Settings;
    use ferrogres_engine::engine::Engine;
    use ferrogres_engine::nbtree::ScanBounds;
    use ferrogres_engine::txn::IsolationLevel;
    use std::sync::Arc;

    fn session(engine: &Arc<Engine>, pid: i32, maintenance_work_mem: &str) -> Session {
        crate::test_support::session(engine, pid, &[("maintenance_work_mem", maintenance_work_mem)])
    }

    fn query(s: &mut Session, sql: &str) -> Vec<Vec<Option<String>>> {
        crate::test_support::query_sorted(s, sql)
    }

    /// Every index of `table`: its name, the structure check's leaf count, and its
    /// entries' keys in index order.
    fn trees(engine: &Arc<Engine>, table: &str) -> Vec<(String, u64, Vec<Vec<u8>>)> {
        let mut b = engine.backend(99).unwrap();
        b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        let snap = b.txn.statement_snapshot().unwrap();
        let t = catalog::lookup_table(&b, &snap, None, table).unwrap().unwrap();
        let mut out = Vec::new();
        for ix in &t.indexes {
            let tree = ix.btree().unwrap();
            let report = tree.check_invariants(engine).unwrap_or_else(|e| panic!("{}: {e}", ix.name));
            let mut scan = tree.scan(engine, ScanBounds::all());
            let mut keys = Vec::new();
            while let Some(e) = scan.next_entry().unwrap() {
                keys.push(e.key);
            }
            let suffix = ix.name.split_once('_').map_or(ix.name.clone(), |(_, s)| s.to_string());
            out.push((suffix, report.leaf_tuples, keys));
        }
        b.txn.commit().unwrap();
        out.sort();
        out
    }

    const INDEXES: &[&str] = &[
        "CREATE INDEX {t}_k ON {t} (k)",
        "CREATE INDEX {t}_sk ON {t} (s, k)",
        "CREATE INDEX {t}_kd ON {t} (k DESC)",
        "CREATE INDEX {t}_nd ON {t} (n DESC NULLS LAST, s)",
        "CREATE INDEX {t}_ki ON {t} (k) INCLUDE (s)",
        "CREATE UNIQUE INDEX {t}_id ON {t} (id)",
        "CREATE INDEX {t}_ff ON {t} (id) WITH (fillfactor = 30)",
    ];

    /// The same rows, updates and deletes go into `a` (indexes created first:
    /// entries by insertion) and `b` (indexes created last: the sorted bottom-up
    /// build); both sets of trees pass the structure check and hold the same keys
    /// in the same order. The build runs with a small maintenance_work_mem, so its
    /// sort spills to temporary files.
    #[test]
    fn built_indexes_equal_inserted_ones() {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = Settings::default();
        settings.set("shared_buffers", "256").unwrap();
        let (engine, _) = Engine::open(dir.path(), settings).unwrap();
        catalog::bootstrap(&engine).unwrap();
        let mut s = session(&engine, 1, "1MB");
        for t in ["a", "b"] {
            query(&mut s, &format!("CREATE TABLE {t} (id int, k int, s text, n numeric)"));
        }
        for ix in INDEXES {
            query(&mut s, &ix.replace("{t}", "a"));
        }
        let mut seed: u64 = 0x2545f4914f6cdd1d;
        let mut rnd = |n: u64| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) % n
        };
        let mut id = 0;
        for round in 0..40 {
            let values: Vec<String> = (0..250)
                .map(|_| {
                    id += 1;
                    let k = if rnd(8) == 0 { "NULL".to_string() } else { rnd(200).to_string() };
                    let s = match rnd(12) {
                        0 => "NULL".to_string(),
                        1 => format!("repeat('{}', {})", ["x", "y"][rnd(2) as usize], 400 + rnd(1500)),
                        _ => format!("'s{}'", rnd(300)),
                    };
                    let n = if rnd(10) == 0 { "NULL".to_string() } else { format!("{}.{}", rnd(50), rnd(10)) };
                    format!("({id}, {k}, {s}, {n})")
                })
                .collect();
            let updates = [
                // HOT for neither (k is indexed in both end states).
                format!("UPDATE {{t}} SET k = k + 1 WHERE id % 97 = {}", rnd(97)),
                format!("DELETE FROM {{t}} WHERE id % 89 = {}", rnd(89)),
            ];
            for t in ["a", "b"] {
                query(&mut s, &format!("INSERT INTO {t} VALUES {}", values.join(", ")));
                if round % 4 == 3 {
                    for u in &updates {
                        query(&mut s, &u.replace("{t}", t));
                    }
                }
            }
        }
        for ix in INDEXES {
            query(&mut s, &ix.replace("{t}", "b"));
        }
        let (ta, tb) = (trees(&engine, "a"), trees(&engine, "b"));
        assert_eq!(ta.len(), INDEXES.len());
        let live = query(&mut s, "SELECT count(*) FROM b")[0][0].clone().unwrap().parse::<u64>().unwrap();
        for ((na, la, ka), (nb, lb, kb)) in ta.iter().zip(&tb) {
            assert_eq!(na, nb);
            assert_eq!(*lb, live, "{nb}: one entry per live row");
            assert!(la >= lb, "{na}: the inserted index also keeps dead rows' entries until VACUUM");
            let _ = ka;
            assert_eq!(kb.len() as u64, live);
        }
        // After VACUUM the inserted indexes lose the dead entries: same keys, same order.
        query(&mut s, "VACUUM a");
        let ta = trees(&engine, "a");
        for ((na, _, ka), (_, _, kb)) in ta.iter().zip(&tb) {
            assert_eq!(ka, kb, "{na}: built and inserted indexes differ");
        }
        // Index scans through the built indexes answer as sequential scans do.
        for k in [0, 17, 150, 199] {
            assert_eq!(
                query(&mut s, &format!("SELECT id, k, s, n FROM b WHERE k = {k}")),
                query(&mut s, &format!("SELECT id, k, s, n FROM b WHERE k + 0 = {k}"))
            );
        }
        assert_eq!(query(&mut s, "SELECT id FROM b WHERE id = 4242"), query(&mut s, "SELECT id FROM b WHERE id + 0 = 4242"));
        // REINDEX rebuilds them the same way.
        query(&mut s, "REINDEX TABLE b");
        let tb2 = trees(&engine, "b");
        assert_eq!(tb, tb2);
        // No temporary file is left behind by the spilled sorts.
        let tmp = dir.path().join("base/pgsql_tmp");
        let left: Vec<_> = std::fs::read_dir(&tmp).map(|d| d.map(|e| e.unwrap().file_name()).collect()).unwrap_or_default();
        assert!(left.is_empty(), "temporary files left: {left:?}");
        engine.shutdown().unwrap();
    }

    /// A unique index over duplicates fails with PostgreSQL's error, whatever the
    /// order the duplicates arrive in; NULLs never conflict.
    #[test]
    fn unique_build_reports_the_duplicate() {
        let dir = tempfile::tempdir().unwrap();
        let (engine, _) = Engine::open(dir.path(), Settings::default()).unwrap();
        catalog::bootstrap(&engine).unwrap();
        let mut s = session(&engine, 1, "64MB");
        query(&mut s, "CREATE TABLE u (a int, b text); INSERT INTO u SELECT g, 'x' || g FROM generate_series(1, 5000) g");
        query(&mut s, "INSERT INTO u VALUES (NULL, 'n'), (NULL, 'n'), (2500, 'dup')");
        let mut out = crate::test_support::Collect::default();
        let e = s.execute_simple("CREATE UNIQUE INDEX u_a ON u (a)", &mut out).unwrap_err();
        assert_eq!(e.sqlstate(), "23505");
        assert_eq!(e.message, "could not create unique index \"u_a\"");
        assert_eq!(e.detail.as_deref(), Some("Key (a)=(2500) is duplicated."));
        // The session goes on; the name is free (the failed index left nothing).
        query(&mut s, "DELETE FROM u WHERE b = 'dup'");
        query(&mut s, "CREATE UNIQUE INDEX u_a ON u (a)");
        let e = s.execute_simple("INSERT INTO u VALUES (7, 'again')", &mut out).unwrap_err();
        assert_eq!(e.sqlstate(), "23505");
        assert_eq!(trees(&engine, "u")[0].1, 5002);
        engine.shutdown().unwrap();
    }
}
