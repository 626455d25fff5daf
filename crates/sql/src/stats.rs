//! Planner statistics: ANALYZE's per-column figures (null fraction, average
//! width, distinct count, most common values, histogram bounds, correlation)
//! stored in `pg_statistic`, shown by the `pg_stats` view, and read by the
//! index-or-sequential-scan choice ([`choose_scan_loaded`]) and EXPLAIN's estimates.
//!
//! `pg_statistic` is a heap relation of this crate (OID 2619, created on first
//! use) with one row per analyzed column: `(starelid oid, staattnum int2,
//! stanullfrac float8, stawidth int4, stadistinct float8, mcv text, mcf text,
//! histogram text, correlation float8)`; the value lists are PostgreSQL's array
//! text form of the column's type. ANALYZE replaces a table's rows in the
//! caller's transaction. `stadistinct` follows PostgreSQL: > 0 a count,
//! < 0 minus a fraction of the rows (the count grows with the table).
//!
//! A process-wide cache (per engine, per table OID) holds the parsed form;
//! ANALYZE refreshes its entry, a miss loads the stored rows once. The cache is
//! not transactional: an ANALYZE rolled back leaves its figures cached until
//! the next ANALYZE (statistics only steer plan choices, never results).
//!
//! `pg_statistic` has a TOAST relation (PostgreSQL's pg_toast_2619, relfilenode
//! [`PG_STATISTIC_TOAST`]): the value lists of wide columns go out of line, so
//! ANALYZE works on every table. As in PostgreSQL, a value wider than
//! [`WIDTH_THRESHOLD`] bytes counts for the null fraction, width and distinct
//! estimate but never enters the MCV list or histogram.
//!
//! Sampling, PostgreSQL's two stages: up to [`SAMPLE_ROWS`] blocks chosen
//! uniformly (Knuth's selection sampling, in block order), then a reservoir of
//! [`SAMPLE_ROWS`] rows over the visible rows of those blocks (each row read
//! equally likely to stay), sorted back into physical order for the
//! correlation. Memory is the sample, whatever the table's size; the table's
//! row count is estimated from the live rows per sampled block (exact when
//! every block was read). `n_distinct` is the Haas-Stokes Duj1 estimate
//! PostgreSQL uses, from the values seen once and more than once.

use crate::catalog::{cat, class_rel, Table};
use ferrogres_datum::errors::Result;
use crate::index::IndexPath;
use crate::plan::{CmpOp, Expr};
use crate::rowio::{deform_row, insert_row, scan_rows, RelStorage};
use ferrogres_datum::types::{self, Type, Value};
use ferrogres_engine::engine::Backend;
use ferrogres_engine::heap::heapam;
use ferrogres_engine::storage::ForkNumber;
use ferrogres_engine::heap::tuple::{Datum, Tid};
use ferrogres_engine::txn::snapshot::Snapshot;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

pub const PG_STATISTIC: u32 = 2619;
/// pg_statistic's TOAST relation (PostgreSQL's pg_toast_2619 has OID 2840).
pub const PG_STATISTIC_TOAST: u32 = 2840;
/// Values wider than this (in bytes, as stored) stay out of the MCV list and
/// histogram (PostgreSQL's WIDTH_THRESHOLD).
pub const WIDTH_THRESHOLD: usize = 1024;
/// default_statistics_target x 300, as PostgreSQL samples.
pub const SAMPLE_ROWS: usize = 30_000;
/// Entries in the MCV list and histogram (default_statistics_target).
const TARGET: usize = 100;

fn statistic_rel() -> crate::rowio::RelStorage {
    let mut st = cat(
        PG_STATISTIC,
        &[Type::Oid, Type::Int2, Type::Float8, Type::Int4, Type::Float8, Type::Text, Type::Text, Type::Text, Type::Float8],
    );
    st.toast = Some(crate::catalog::locator(PG_STATISTIC_TOAST));
    st
}

#[derive(Clone, Debug, Default)]
pub struct ColStats {
    pub null_frac: f64,
    pub width: i32,
    pub n_distinct: f64,
    pub mcv: Vec<Value>,
    pub mcf: Vec<f64>,
    pub hist: Vec<Value>,
    pub correlation: f64,
}

#[derive(Clone, Debug, Default)]
pub struct TableStats {
    pub tuples: f64,
    pub pages: f64,
    /// By column position; `None`: not analyzed.
    pub cols: Vec<Option<ColStats>>,
}

type Cache = RwLock<HashMap<(usize, u32), Option<Arc<TableStats>>>>;

fn cache() -> &'static Cache {
    static C: OnceLock<Cache> = OnceLock::new();
    C.get_or_init(|| RwLock::new(HashMap::new()))
}

fn engine_key(backend: &Backend) -> usize {
    Arc::as_ptr(backend.engine()) as usize
}

// ----- gathering ---------------------------------------------------------------------------

/// Text of a list of values as a PostgreSQL array literal.
fn array_text(vals: &[Value]) -> String {
    let items: Vec<String> = vals
        .iter()
        .map(|v| {
            let s = types::output(v).unwrap_or_else(|| "NULL".into());
            let plain = !s.is_empty()
                && !s.eq_ignore_ascii_case("null")
                && !s.chars().any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || c.is_whitespace());
            if plain { s } else { format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")) }
        })
        .collect();
    format!("{{{}}}", items.join(","))
}

fn parse_array(s: &str, ty: Type) -> Vec<Value> {
    let inner = s.trim().trim_start_matches('{').trim_end_matches('}');
    if inner.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut cur = String::new();
    let (mut quoted, mut esc, mut was_quoted) = (false, false, false);
    let mut push = |cur: &mut String, was_quoted: &mut bool| {
        if let Ok(v) = types::input(ty, cur, -1) {
            out.push(v);
        }
        cur.clear();
        *was_quoted = false;
    };
    for c in inner.chars() {
        if esc {
            cur.push(c);
            esc = false;
        } else if c == '\\' {
            esc = true;
        } else if c == '"' {
            quoted = !quoted;
            was_quoted = true;
        } else if c == ',' && !quoted {
            push(&mut cur, &mut was_quoted);
        } else {
            cur.push(c);
        }
    }
    push(&mut cur, &mut was_quoted);
    out
}

fn float_text(f: f64) -> String {
    types::output(&Value::Float4(f as f32)).unwrap_or_default()
}

/// PostgreSQL's estimate of a column's distinct values (stadistinct): `f1`
/// values seen exactly once and `d` distinct values among `nonnull` non-null
/// values of a sample, out of `total` rows. No repeats: every
/// value is taken as distinct (-1 times the non-null fraction). Every value
/// repeated: the sample saw them all (`d`). Else the Haas-Stokes Duj1
/// estimator `n·d / (n - f1 + f1·n/N)`, within `[d, N]`. Past a tenth of the
/// rows the figure is stored as minus a fraction of the rows, so it grows with
/// the table.
fn n_distinct(f1: usize, d: usize, nonnull: usize, total: f64, null_frac: f64) -> f64 {
    let est = if f1 == d {
        return -(1.0 - null_frac);
    } else if f1 == 0 {
        d as f64
    } else {
        let n = nonnull as f64;
        let big_n = (total * (1.0 - null_frac)).max(n);
        let est = n * d as f64 / ((n - f1 as f64) + f1 as f64 * n / big_n);
        est.clamp(d as f64, big_n).round()
    };
    if total > 0.0 && est > 0.1 * total {
        -(est / total).min(1.0)
    } else {
        est
    }
}

/// The statistics of one column's sampled values (NULLs included) out of
/// `total` rows in the table.
fn column_stats(ty: Type, vals: &[Value], total: f64) -> ColStats {
    let n = vals.len();
    let mut nonnull: Vec<(usize, &Value)> = vals.iter().enumerate().filter(|(_, v)| !v.is_null()).collect();
    let nulls = n - nonnull.len();
    let null_frac = if n == 0 { 0.0 } else { nulls as f64 / n as f64 };
    let width = match ty.typlen() {
        l if l > 0 => l as i32,
        _ => {
            let sum: usize = nonnull.iter().map(|(_, v)| types::output(v).map_or(0, |s| s.len()) + 1).sum();
            if nonnull.is_empty() { 0 } else { (sum as f64 / nonnull.len() as f64).round() as i32 }
        }
    };
    // Values too wide to keep (PostgreSQL's toowide): counted, never compared.
    let before = nonnull.len();
    if ty.typlen() < 0 {
        nonnull.retain(|(_, v)| types::output(v).map_or(0, |s| s.len()) <= WIDTH_THRESHOLD);
    }
    let toowide = before - nonnull.len();
    if nonnull.is_empty() {
        // Only NULLs, or only values too wide to compare: all taken as distinct.
        let n_distinct = if toowide > 0 { -(1.0 - null_frac) } else { 0.0 };
        return ColStats { null_frac, width, n_distinct, ..Default::default() };
    }
    // Sorted by value (ties in physical order), for runs and ranks.
    nonnull.sort_by(|a, b| crate::exec::compare(a.1, b.1).then(a.0.cmp(&b.0)));
    // Correlation between physical position and value rank.
    let m = nonnull.len() as f64;
    let correlation = if nonnull.len() > 1 {
        let mut rank_of_pos: Vec<(usize, f64)> = nonnull.iter().enumerate().map(|(rank, (pos, _))| (*pos, rank as f64)).collect();
        rank_of_pos.sort_by_key(|x| x.0);
        let (mut sxy, mut sx, mut sxx) = (0.0, 0.0, 0.0);
        for (i, (_, r)) in rank_of_pos.iter().enumerate() {
            let x = i as f64;
            sxy += x * r;
            sx += x;
            sxx += x * x;
        }
        let cov = sxy / m - (sx / m) * (sx / m);
        let var = sxx / m - (sx / m) * (sx / m);
        if var > 0.0 { cov / var } else { 0.0 }
    } else {
        1.0
    };
    // Runs of equal values.
    let mut runs: Vec<(usize, usize)> = Vec::new(); // (first index in nonnull, count)
    for (i, (_, v)) in nonnull.iter().enumerate() {
        match runs.last_mut() {
            Some((start, c)) if crate::exec::compare(nonnull[*start].1, v) == std::cmp::Ordering::Equal => *c += 1,
            _ => runs.push((i, 1)),
        }
    }
    let d = runs.len();
    let n_distinct = n_distinct(runs.iter().filter(|r| r.1 == 1).count() + toowide, d + toowide, before, total, null_frac);
    // Most common values: all of them when they all fit and repeat; else
    // those clearly above the average count.
    let mut by_count: Vec<(usize, usize)> = runs.iter().filter(|r| r.1 > 1).copied().collect();
    by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mcv_runs: Vec<(usize, usize)> = if d <= TARGET && by_count.len() == d {
        by_count
    } else {
        let avg = m / d as f64;
        by_count.into_iter().filter(|r| r.1 as f64 > 1.25 * avg).take(TARGET).collect()
    };
    let mcv: Vec<Value> = mcv_runs.iter().map(|r| nonnull[r.0].1.clone()).collect();
    let mcf: Vec<f64> = mcv_runs.iter().map(|r| r.1 as f64 / n as f64).collect();
    // Histogram over the values not in the MCV list.
    let rest: Vec<&Value> = runs
        .iter()
        .filter(|r| !mcv_runs.iter().any(|m| m.0 == r.0))
        .flat_map(|r| nonnull[r.0..r.0 + r.1].iter().map(|x| x.1))
        .collect();
    let distinct_rest = runs.len() - mcv_runs.len();
    let hist = if distinct_rest >= 2 {
        let nb = (TARGET + 1).min(distinct_rest);
        let len = rest.len();
        (0..nb).map(|i| rest[(i * (len - 1)) / (nb - 1)].clone()).collect()
    } else {
        Vec::new()
    };
    ColStats { null_frac, width, n_distinct, mcv, mcf, hist, correlation }
}

/// ANALYZE of `table`: samples its rows, stores each column's statistics in
/// pg_statistic (replacing the old ones) and the cache; returns the row count.
pub fn gather(backend: &mut Backend, snap: &Snapshot, table: &Table) -> Result<f64> {
    let mut rng = rand::rngs::SmallRng::from_entropy();
    let (rows, total) = sample_rows(backend, &table.storage, snap, SAMPLE_ROWS, &mut rng)?;
    ferrogres_engine::heap::autovacuum::pgstat_report_analyze(backend.engine(), table.storage.rel, false, Some(total as u64), None);
    let sample: Vec<&Vec<Value>> = rows.iter().collect();
    let mut cols = Vec::new();
    for (i, c) in table.columns.iter().enumerate() {
        let vals: Vec<Value> = sample.iter().map(|r| r.get(i).cloned().unwrap_or(Value::Null)).collect();
        let orderable = !matches!(c.ty, Type::Array(_) | Type::Bytea);
        cols.push(orderable.then(|| column_stats(c.ty, &vals, total)));
    }
    ensure_rel(backend)?;
    let st = statistic_rel();
    // The table's old rows, read raw (nothing detoasted), with the chunks of
    // their out-of-line value lists, which go with them.
    let (mut doomed, mut chunks) = (Vec::new(), std::collections::HashSet::new());
    let descs = st.descs()?;
    heapam::heap_scan(backend, st.rel, snap, &mut |tid, t| {
        let datums = ferrogres_engine::heap::tuple::deform_tuple(&descs, t)?;
        if datums[0] == Some(Datum::ByVal(table.oid as u64)) {
            doomed.push(tid);
            chunks.extend(datums.iter().filter_map(|d| match d {
                Some(Datum::External(p)) => Some(p.value_oid),
                _ => None,
            }));
        }
        Ok(())
    })?;
    for tid in doomed {
        heapam::heap_delete(backend, st.rel, tid)?;
    }
    heapam::heap_toast_delete(backend, crate::catalog::locator(PG_STATISTIC_TOAST), snap, &chunks)?;
    for (i, c) in cols.iter().enumerate() {
        let Some(c) = c else { continue };
        let mcf: Vec<String> = c.mcf.iter().map(|f| float_text(*f)).collect();
        insert_row(
            backend,
            &st,
            &[
                Value::Oid(table.oid),
                Value::Int2(i as i16 + 1),
                Value::Float8(c.null_frac),
                Value::Int4(c.width),
                Value::Float8(c.n_distinct),
                if c.mcv.is_empty() { Value::Null } else { Value::Text(array_text(&c.mcv)) },
                if c.mcv.is_empty() { Value::Null } else { Value::Text(format!("{{{}}}", mcf.join(","))) },
                if c.hist.is_empty() { Value::Null } else { Value::Text(array_text(&c.hist)) },
                Value::Float8(c.correlation),
            ],
        )?;
    }
    let pages = backend.engine().buffers.nblocks(table.storage.rel, ForkNumber::Main)? as f64;
    let ts = TableStats { tuples: total, pages, cols };
    cache().write().expect("stats cache").insert((engine_key(backend), table.oid), Some(Arc::new(ts)));
    Ok(total)
}

/// ANALYZE's sample of `st`: at most `targrows` of its rows visible to
/// `snap`, in physical order, and the estimated number of such rows in the
/// whole relation (see the module doc).
pub fn sample_rows(backend: &Backend, st: &RelStorage, snap: &Snapshot, targrows: usize, rng: &mut impl Rng) -> Result<(Vec<Vec<Value>>, f64)> {
    let nblocks = heapam::heap_nblocks(backend, st.rel)?;
    let descs = st.descs()?;
    // Stage 1, Knuth's selection sampling: block b is taken with probability
    // (blocks still wanted) / (blocks left), which takes exactly
    // min(targrows, nblocks) blocks, every subset equally likely.
    let want_blocks = (nblocks as usize).min(targrows);
    let mut reservoir: Vec<(Tid, Vec<Value>)> = Vec::with_capacity(targrows.min(4096));
    let (mut taken_blocks, mut seen) = (0usize, 0u64);
    let mut page: Vec<u8> = Vec::new();
    let mut items: Vec<(Tid, std::ops::Range<usize>)> = Vec::new();
    for b in 0..nblocks {
        let left = (nblocks - b) as usize;
        if taken_blocks >= want_blocks || rng.gen_range(0..left) >= want_blocks - taken_blocks {
            continue;
        }
        taken_blocks += 1;
        page.clear();
        items.clear();
        heapam::heap_scan_block(backend, st.rel, b, snap, &mut |tid, t| {
            let start = page.len();
            page.extend_from_slice(t);
            items.push((tid, start..page.len()));
            Ok(())
        })?;
        // Stage 2, a reservoir (Algorithm R): the k-th row read replaces a
        // random one of the sample with probability targrows / k. Rows are
        // deformed (and detoasted) after the page lock, and only if kept.
        for (tid, range) in items.drain(..) {
            seen += 1;
            let slot = if reservoir.len() < targrows {
                None
            } else {
                match rng.gen_range(0..seen) {
                    j if (j as usize) < targrows => Some(j as usize),
                    _ => continue,
                }
            };
            let row = deform_row(backend, st, &descs, tid, &page[range], snap)?;
            match slot {
                None => reservoir.push((tid, row)),
                Some(j) => reservoir[j] = (tid, row),
            }
        }
    }
    reservoir.sort_by_key(|(tid, _)| (tid.block, tid.offset));
    let total = if taken_blocks == 0 {
        0.0
    } else if taken_blocks as u32 == nblocks {
        seen as f64
    } else {
        (seen as f64 / taken_blocks as f64 * nblocks as f64).round()
    };
    Ok((reservoir.into_iter().map(|(_, r)| r).collect(), total))
}

fn ensure_rel(backend: &Backend) -> Result<()> {
    let engine = backend.engine();
    for rel in [PG_STATISTIC, PG_STATISTIC_TOAST] {
        let loc = crate::catalog::locator(rel);
        if !engine.smgr.exists(loc, ForkNumber::Main) {
            engine.create_relation(loc)?;
        }
    }
    Ok(())
}

fn rel_exists(backend: &Backend) -> bool {
    backend.engine().smgr.exists(crate::catalog::locator(PG_STATISTIC), ForkNumber::Main)
}

/// The statistics of `table` (cached; loaded from pg_statistic on a miss).
pub fn get(backend: &Backend, snap: &Snapshot, table: &Table) -> Option<Arc<TableStats>> {
    let k = (engine_key(backend), table.oid);
    if let Some(s) = cache().read().expect("stats cache").get(&k) {
        return s.clone();
    }
    let loaded = load(backend, snap, table).ok().flatten().map(Arc::new);
    cache().write().expect("stats cache").insert(k, loaded.clone());
    loaded
}

fn load(backend: &Backend, snap: &Snapshot, table: &Table) -> Result<Option<TableStats>> {
    if !rel_exists(backend) {
        return Ok(None);
    }
    let mut cols: Vec<Option<ColStats>> = vec![None; table.columns.len()];
    let mut any = false;
    for (_, r) in scan_rows(backend, &statistic_rel(), snap)? {
        if r[0] != Value::Oid(table.oid) {
            continue;
        }
        let Value::Int2(att) = r[1] else { continue };
        let i = att as usize - 1;
        let Some(col) = table.columns.get(i) else { continue };
        let f = |v: &Value| if let Value::Float8(f) = v { *f } else { 0.0 };
        let txt = |v: &Value| if let Value::Text(s) = v { Some(s.clone()) } else { None };
        cols[i] = Some(ColStats {
            null_frac: f(&r[2]),
            width: if let Value::Int4(w) = r[3] { w } else { 0 },
            n_distinct: f(&r[4]),
            mcv: txt(&r[5]).map_or(Vec::new(), |s| parse_array(&s, col.ty)),
            mcf: txt(&r[6]).map_or(Vec::new(), |s| parse_array(&s, Type::Float8).iter().map(f).collect()),
            hist: txt(&r[7]).map_or(Vec::new(), |s| parse_array(&s, col.ty)),
            correlation: f(&r[8]),
        });
        any = true;
    }
    if !any {
        return Ok(None);
    }
    let (pages, tuples) = match crate::index::stored_size(backend, snap, table.oid)? {
        Some(s) => (s.pages as f64, s.tuples),
        None => (0.0, 0.0),
    };
    Ok(Some(TableStats { tuples, pages, cols }))
}

/// relpages/reltuples of `oid` for cost estimates; a never-analyzed table is
/// assumed to have 10 pages of rows, as PostgreSQL assumes.
pub fn rel_size(backend: &Backend, snap: &Snapshot, oid: u32, ncols: usize) -> Result<(f64, f64)> {
    Ok(match crate::index::stored_size(backend, snap, oid)? {
        Some(s) if s.tuples > 0.0 || s.pages > 0 => (s.pages as f64, s.tuples),
        _ => {
            let width = 4.0 * ncols.max(1) as f64 + 24.0 + 4.0;
            (10.0, 10.0 * ((8192.0 - 24.0) / width).floor())
        }
    })
}

// ----- the pg_stats view --------------------------------------------------------------------

/// The rows of pg_stats (the view's column order).
pub fn pg_stats(backend: &Backend, snap: &Snapshot) -> Result<Vec<Vec<Value>>> {
    if !rel_exists(backend) {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    // (oid) -> (table name, columns)
    let mut tables: HashMap<u32, (String, Vec<String>)> = HashMap::new();
    for (_, r) in scan_rows(backend, &class_rel(), snap)? {
        if let (Value::Oid(o), Value::Text(n)) = (&r[0], &r[1]) {
            tables.insert(*o, (n.clone(), Vec::new()));
        }
    }
    let attr = cat(crate::catalog::PG_ATTRIBUTE, &[Type::Oid, Type::Text, Type::Oid, Type::Int2, Type::Int4, Type::Bool]);
    let mut names: HashMap<(u32, i16), String> = HashMap::new();
    for (_, r) in scan_rows(backend, &attr, snap)? {
        if let (Value::Oid(rel), Value::Text(n), Value::Int2(num)) = (&r[0], &r[1], &r[3]) {
            names.insert((*rel, *num), n.clone());
        }
    }
    let mut stat_rows: Vec<Vec<Value>> = scan_rows(backend, &statistic_rel(), snap)?.into_iter().map(|r| r.1).collect();
    stat_rows.sort_by_key(|r| (if let Value::Oid(o) = r[0] { o } else { 0 }, if let Value::Int2(a) = r[1] { a } else { 0 }));
    for r in stat_rows {
        let (Value::Oid(rel), Value::Int2(att)) = (&r[0], &r[1]) else { continue };
        let Some((tname, _)) = tables.get(rel) else { continue };
        let Some(aname) = names.get(&(*rel, *att)) else { continue };
        let f4 = |v: &Value| match v {
            Value::Float8(f) => Value::Float4(*f as f32),
            _ => Value::Null,
        };
        out.push(vec![
            Value::Text("public".into()),
            Value::Text(tname.clone()),
            Value::Text(aname.clone()),
            Value::Bool(false),
            f4(&r[2]),
            r[3].clone(),
            f4(&r[4]),
            r[5].clone(),
            r[6].clone(),
            r[7].clone(),
            f4(&r[8]),
            Value::Null,
            Value::Null,
            Value::Null,
        ]);
    }
    Ok(out)
}

// ----- selectivity and the scan choice ------------------------------------------------------

pub(crate) use crate::index::{column_of, row_free};

fn conjuncts(filter: Option<&Expr>) -> Vec<&Expr> {
    match filter {
        Some(Expr::And(v)) => v.iter().collect(),
        Some(e) => vec![e],
        None => vec![],
    }
}

/// The fraction of `table`'s rows passing `filter` (statistics from the
/// cache only): [`crate::optimizer::selectivity`], the one place that
/// estimates.
pub fn selectivity_with(_table: &Table, stats: Option<&TableStats>, filter: Option<&Expr>, params: &[Value]) -> f64 {
    crate::optimizer::selectivity::conjunction_selectivity(stats, conjuncts(filter).into_iter(), params)
}

/// The scan the executor takes for `filter` on `table`: `index::choose_path`'s
/// index, unless statistics say another index or a sequential scan is
/// cheaper (a key that is not selective). An equality on every column of a
/// unique index is taken without looking at statistics (pgbench's hot path).
pub fn choose_scan_loaded(backend: &Backend, snap: &Snapshot, table: &Table, filter: Option<&Expr>, params: &[Value]) -> Option<IndexPath> {
    let candidates = crate::index::candidate_paths(table, filter);
    choose_scan_among(backend, snap, table, filter, params, &candidates).cloned()
}

/// [`choose_scan_loaded`] over candidates already found (a plan node's
/// [`crate::index::PathCache`]).
pub fn choose_scan_among<'a>(
    backend: &Backend,
    snap: &Snapshot,
    table: &Table,
    filter: Option<&Expr>,
    params: &[Value],
    candidates: &'a [(usize, IndexPath)],
) -> Option<&'a IndexPath> {
    let path = crate::index::best_path(candidates)?;
    let ix = &table.indexes[path.index];
    if ix.unique && path.eq.len() == ix.columns.len() {
        return Some(path);
    }
    match get(backend, snap, table) {
        Some(stats) => cheapest(table, filter, params, &stats, candidates),
        None => Some(path),
    }
}

/// The cheapest of the sequential scan and each index scan, with
/// PostgreSQL's formulas (default cost settings): a sequential scan costs
/// `pages * seq_page_cost + tuples * (cpu_tuple_cost + cpu_operator_cost)`;
/// an index scan's heap I/O lies between `random_page_cost` per row fetched
/// (uncorrelated) and reading the matching fraction of pages in order
/// (correlation 1), interpolated by the squared correlation of the index's
/// first column, plus per-row CPU costs of the index and the heap.
fn cheapest<'a>(table: &Table, filter: Option<&Expr>, params: &[Value], s: &TableStats, candidates: &'a [(usize, IndexPath)]) -> Option<&'a IndexPath> {
    let pages = s.pages.max(1.0);
    let nquals = conjuncts(filter).len() as f64;
    let seq = pages * 1.0 + s.tuples * (0.01 + 0.0025 * nquals);
    let mut best: Option<(f64, &IndexPath)> = None;
    for (_, path) in candidates {
        let cost = index_cost(table, filter, params, s, path);
        if cost < seq && best.as_ref().is_none_or(|b| cost < b.0) {
            best = Some((cost, path));
        }
    }
    best.map(|b| b.1)
}

/// The estimated cost of an index scan along `path` (its heap I/O and CPU).
pub fn index_cost(table: &Table, filter: Option<&Expr>, params: &[Value], s: &TableStats, path: &IndexPath) -> f64 {
    let ix = &table.indexes[path.index];
    // Selectivity of the conjuncts the index answers.
    let key_cols: Vec<usize> = ix.columns.iter().take(path.eq.len() + 1).copied().collect();
    // A hash index answers equalities only, and its order says nothing of the
    // heap's (PostgreSQL's hashcostestimate leaves the correlation at 0).
    let hash = ix.am == crate::index::IndexAm::Hash;
    let idx_quals: Vec<Expr> = conjuncts(filter)
        .into_iter()
        .filter(|c| match c {
            Expr::Compare { op, l, r } if *op != CmpOp::Ne && (!hash || *op == CmpOp::Eq) => {
                let col = column_of(l).filter(|_| row_free(r)).or_else(|| column_of(r).filter(|_| row_free(l)));
                col.is_some_and(|col| key_cols.contains(&col))
            }
            _ => false,
        })
        .cloned()
        .collect();
    let f = if idx_quals.len() == 1 { idx_quals[0].clone() } else { Expr::And(idx_quals) };
    let sel = selectivity_with(table, Some(s), Some(&f), params);
    let rows = sel * s.tuples;
    let pages = s.pages.max(1.0);
    let max_io = rows.min(pages) * 4.0;
    let min_io = 4.0 + ((sel * pages).ceil() - 1.0).max(0.0);
    let corr = if hash { 0.0 } else { s.cols.get(ix.columns[0]).and_then(|c| c.as_ref()).map_or(0.0, |c| c.correlation) };
    let io = max_io + corr * corr * (min_io - max_io);
    io + rows * (0.005 + 0.01 + 0.0025) + (s.tuples.max(2.0)).log2() * 0.0025
}
