//! Sort within `work_mem` (PostgreSQL's tuplesort.c, the ideas, not the code):
//! an in-memory sort while the rows fit, a bounded heap for ORDER BY ... LIMIT,
//! and an external merge sort beyond `work_mem`.
//!
//! [`Sorter`] takes rows one at a time ([`Sorter::put`]) and counts the memory
//! they hold ([`row_mem`]). While that stays under `work_mem` they stay in a
//! `Vec`; past it, the rows are sorted and written as one *run* to a temporary
//! file ([`ferrogres_engine::storage::buffile`]: `base/pgsql_tmp/pgsql_tmp<PID>.<N>`,
//! removed when dropped), and the `Vec` starts again. At the end
//! ([`Sorter::finish`]):
//! - no run was written: the rows are sorted in memory ("quicksort");
//! - a bound was given (LIMIT n: the first n rows are all that is read) and more
//!   than 2n rows came, or memory filled with more than n: since then only the n
//!   best rows were kept, in a max-heap whose top is the worst of them
//!   ("top-N heapsort"), sorted at the end;
//! - otherwise the last rows become a run too, and the runs are merged k ways
//!   with a min-heap of their head rows ("external merge"). When there are more
//!   runs than the merge may open at once (`fan_in`: one 8 kB buffer per run
//!   within `work_mem`, at least 6) they are merged in passes, consecutive runs
//!   into longer runs, until few enough remain.
//!
//! Invariants:
//! 1. `mem` = sum of `row_mem` over the rows held (`rows`, or the bounded heap);
//!    a run is written as soon as `mem > work_mem`, so rows held in memory never
//!    exceed `work_mem` by more than one row.
//! 2. The sort is stable, as the in-memory sort it replaces: runs are
//!    consecutive stretches of the input and are merged with ties going to the
//!    earlier run; the bounded heap breaks ties by arrival number.
//! 3. Every temporary file belongs to a `Run` owned by the sorter or its merger:
//!    dropping them (end of query, error, cancel) removes the files.
//! 4. Every loop over rows polls the interrupt check (run generation through
//!    `put`, the in-memory sort through `sort_checked`, writing and merging).
//!
//! A spilled row is a heap tuple ([`crate::rowio::form_values`]) preceded by its
//! length and by one type tag per column, because the executor's rows carry no
//! column types: `[u32 len][u16 ncols][tag; ncols][tuple]`, little-endian.
//!
//! `temp_file_limit` bounds the bytes one sorter (with its merge passes) writes:
//! 53400 `temporary file size exceeds temp_file_limit (NkB)`. PostgreSQL bounds
//! the whole backend; here the bound is per operator.

use ferrogres_datum::errors::{Result, SqlError};
use crate::exec::{compare_rows, sort_checked, Env, RowIter, Ticker};
use crate::plan::SortKey;
use ferrogres_datum::types::{Type, Value, TYPES};
use ferrogres_engine::storage::buffile::TempFile;
use std::cmp::Ordering;
use std::path::PathBuf;

/// The per-operator limits read from the session's settings.
#[derive(Clone, Debug)]
pub(crate) struct SortMem {
    /// `work_mem` in bytes.
    pub work_mem: usize,
    /// What a hash table (hash join, hash aggregation) may hold, in bytes:
    /// `work_mem` times `hash_mem_multiplier` (PostgreSQL's
    /// get_hash_memory_limit). A sort, and the sort a hash aggregation spills
    /// into, hold `work_mem`.
    pub hash_mem: usize,
    /// `temp_file_limit` in bytes; `None` for -1 (no limit).
    pub temp_file_limit: Option<u64>,
    datadir: PathBuf,
    pid: i32,
}

impl SortMem {
    /// `work_mem` and `temp_file_limit` as they are now in the session.
    pub(crate) fn from_settings(env: &dyn Env, datadir: PathBuf) -> Result<SortMem> {
        Self::from_setting(env, datadir, "work_mem")
    }

    /// The same with another memory setting in `work_mem`'s place (CREATE INDEX
    /// sorts within `maintenance_work_mem`).
    pub(crate) fn from_setting(env: &dyn Env, datadir: PathBuf, memory: &str) -> Result<SortMem> {
        let kb = |name: &str| -> Result<i64> {
            let g = ferrogres_engine::config::guc::find(name).ok_or_else(|| SqlError::internal(format!("no setting {name}")))?;
            // An environment without the session's settings (the SQL layer's
            // unit tests) runs with the boot values.
            let v = env.get_setting(name).unwrap_or_else(|_| g.boot.to_string());
            Ok(g.parse(name, &v)?.as_int())
        };
        let work_mem = (kb(memory)?.max(64) as usize).saturating_mul(1024);
        let limit = kb("temp_file_limit")?;
        let multiplier = {
            let name = "hash_mem_multiplier";
            let g = ferrogres_engine::config::guc::find(name).ok_or_else(|| SqlError::internal(format!("no setting {name}")))?;
            let v = env.get_setting(name).unwrap_or_else(|_| g.boot.to_string());
            g.parse(name, &v)?.as_real()
        };
        // Bounded as PostgreSQL bounds it (at most what fits in a size).
        let hash_mem = (work_mem as f64 * multiplier).min(isize::MAX as f64 / 2.0) as usize;
        Ok(SortMem { work_mem, hash_mem, temp_file_limit: (limit >= 0).then(|| limit as u64 * 1024), datadir, pid: env.pid() })
    }
}

/// How a sort ran, for EXPLAIN ANALYZE's `Sort Method:` line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortMethod {
    Quicksort,
    TopN,
    ExternalMerge,
}

#[derive(Clone, Copy, Debug)]
pub struct SortStats {
    pub method: SortMethod,
    /// Peak memory of the rows held (quicksort, top-N) or bytes written to
    /// runs (external merge), in kB.
    pub space_kb: u64,
}

impl SortStats {
    /// PostgreSQL's line: `Sort Method: quicksort  Memory: 25kB`.
    pub fn line(&self) -> String {
        match self.method {
            SortMethod::Quicksort => format!("Sort Method: quicksort  Memory: {}kB", self.space_kb),
            SortMethod::TopN => format!("Sort Method: top-N heapsort  Memory: {}kB", self.space_kb),
            SortMethod::ExternalMerge => format!("Sort Method: external merge  Disk: {}kB", self.space_kb),
        }
    }
}

/// Bytes a row holds on the heap, counted as `work_mem` counts them: the row's
/// vector, each value, the buffers of text, bytea, numeric and arrays, and an
/// allocator overhead per allocation.
pub(crate) fn row_mem(row: &[Value]) -> usize {
    const ALLOC: usize = 16;
    fn heap(v: &Value) -> usize {
        match v {
            Value::Text(s) | Value::Json(s) | Value::Jsonb(s) => s.capacity() + ALLOC,
            Value::Bytea(b) => b.capacity() + ALLOC,
            Value::Numeric(n) => n.as_bytes().len() + ALLOC,
            Value::PgSnapshot(s) => std::mem::size_of::<ferrogres_datum::pg_snapshot::PgSnapshot>() + s.xip.capacity() * 8 + 2 * ALLOC,
            Value::Array(a) => {
                std::mem::size_of::<ferrogres_datum::array::Array>() + a.items.capacity() * std::mem::size_of::<Value>() + a.items.iter().map(heap).sum::<usize>() + 2 * ALLOC
            }
            _ => 0,
        }
    }
    std::mem::size_of::<Vec<Value>>() + std::mem::size_of_val(row) + ALLOC + row.iter().map(heap).sum::<usize>()
}

/// A sorted run in a temporary file, rewound for reading.
struct Run {
    file: TempFile,
}

/// Writes spilled rows and counts their bytes against `temp_file_limit`
/// (also the hash join's batch files, `crate::hashjoin`).
pub(crate) struct Spill {
    mem: SortMem,
    /// Bytes written by this sorter so far (every run, merge passes too).
    written: u64,
    /// Bytes of the first-level runs (EXPLAIN's `Disk:`).
    run_bytes: u64,
    scratch: Vec<u8>,
}

const NULL_TAG: u8 = 0xff;
const ARRAY_TAG: u8 = 0x80;

/// The type a value is stored as, and its tag: the index in [`TYPES`], with
/// [`ARRAY_TAG`] for an array of that element type.
fn tag_of(v: &Value) -> Result<(u8, Type)> {
    let ty = match v {
        Value::Null => return Ok((NULL_TAG, Type::Bool)),
        Value::Bool(_) => Type::Bool,
        Value::Int2(_) => Type::Int2,
        Value::Int4(_) => Type::Int4,
        Value::Int8(_) => Type::Int8,
        Value::Oid(_) => Type::Oid,
        Value::Float8(_) => Type::Float8,
        Value::Float4(_) => Type::Float4,
        Value::Text(_) => Type::Text,
        Value::Date(_) => Type::Date,
        Value::Time(_) => Type::Time,
        Value::Timestamp(_) => Type::Timestamp,
        Value::Timestamptz(_) => Type::Timestamptz,
        Value::Interval(_) => Type::Interval,
        Value::Bytea(_) => Type::Bytea,
        Value::TimeTz(..) => Type::TimeTz,
        Value::Numeric(_) => Type::Numeric,
        Value::Uuid(_) => Type::Uuid,
        Value::Json(_) => Type::Json,
        Value::Jsonb(_) => Type::Jsonb,
        Value::PgLsn(_) => Type::PgLsn,
        Value::Xid8(_) => Type::Xid8,
        Value::PgSnapshot(_) => Type::PgSnapshot,
        Value::Tid(..) => Type::Tid,
        Value::Record(_) => return Err(SqlError::not_supported("records in a sort's temporary files")),
        // int2vector and oidvector have their own tags (their recv keeps them vectors).
        Value::Array(a) if a.vector && a.elem == Type::Int2 => Type::Int2Vector,
        Value::Array(a) if a.vector => Type::OidVector,
        Value::Array(a) => {
            let i = TYPES.iter().position(|t| *t == a.elem).ok_or_else(|| SqlError::internal(format!("array of {} spilled", a.elem.typname())))?;
            let ty = ferrogres_datum::array::array_of(a.elem).ok_or_else(|| SqlError::internal(format!("array of {} spilled", a.elem.typname())))?;
            return Ok((ARRAY_TAG | i as u8, ty));
        }
    };
    let i = TYPES.iter().position(|t| *t == ty).ok_or_else(|| SqlError::internal(format!("value of type {} spilled", ty.typname())))?;
    Ok((i as u8, ty))
}

fn type_of_tag(tag: u8) -> Result<Type> {
    let bad = || SqlError::new(b"XX001", format!("bad type tag {tag} in a temporary file"));
    if tag == NULL_TAG {
        return Ok(Type::Bool);
    }
    let base = *TYPES.get((tag & !ARRAY_TAG) as usize).ok_or_else(bad)?;
    if tag & ARRAY_TAG != 0 {
        ferrogres_datum::array::array_of(base).ok_or_else(bad)
    } else {
        Ok(base)
    }
}

impl Spill {
    pub(crate) fn new(mem: SortMem) -> Spill {
        Spill { mem, written: 0, run_bytes: 0, scratch: Vec::new() }
    }

    pub(crate) fn new_file(&self) -> Result<TempFile> {
        Ok(TempFile::create(&self.mem.datadir, self.mem.pid)?)
    }

    pub(crate) fn write_row(&mut self, f: &mut TempFile, row: &[Value]) -> Result<()> {
        let mut types = Vec::with_capacity(row.len());
        self.scratch.clear();
        self.scratch.extend_from_slice(&[0; 4]);
        self.scratch.extend_from_slice(&(row.len() as u16).to_le_bytes());
        for v in row {
            let (tag, ty) = tag_of(v)?;
            self.scratch.push(tag);
            types.push(ty);
        }
        let tuple = crate::rowio::form_values(&types, row)?;
        self.scratch.extend_from_slice(&tuple);
        let len = (self.scratch.len() - 4) as u32;
        self.scratch[..4].copy_from_slice(&len.to_le_bytes());
        f.write_all(&self.scratch)?;
        self.written += self.scratch.len() as u64;
        if let Some(limit) = self.mem.temp_file_limit {
            if self.written > limit {
                return Err(SqlError::new(b"53400", format!("temporary file size exceeds temp_file_limit ({}kB)", limit / 1024)));
            }
        }
        Ok(())
    }
}

/// The next row of a run, or `None` at its end.
pub(crate) fn read_row(f: &mut TempFile, scratch: &mut Vec<u8>) -> Result<Option<Vec<Value>>> {
    let mut len = [0u8; 4];
    if !f.read_exact_or_eof(&mut len)? {
        return Ok(None);
    }
    let len = u32::from_le_bytes(len) as usize;
    scratch.resize(len, 0);
    if len < 2 || !f.read_exact_or_eof(scratch)? {
        return Err(SqlError::new(b"XX001", format!("temporary file \"{}\" ends inside a row", f.name())));
    }
    let n = u16::from_le_bytes([scratch[0], scratch[1]]) as usize;
    if scratch.len() < 2 + n {
        return Err(SqlError::new(b"XX001", format!("temporary file \"{}\" holds a short row", f.name())));
    }
    let types = scratch[2..2 + n].iter().map(|t| type_of_tag(*t)).collect::<Result<Vec<_>>>()?;
    crate::rowio::deform_values(&types, &scratch[2 + n..]).map(Some)
}

/// Sifts `v[i]` up a heap whose top is the element `before` puts first.
fn sift_up<T>(v: &mut [T], mut i: usize, before: &dyn Fn(&T, &T) -> bool) {
    while i > 0 {
        let parent = (i - 1) / 2;
        if !before(&v[i], &v[parent]) {
            break;
        }
        v.swap(i, parent);
        i = parent;
    }
}

fn sift_down<T>(v: &mut [T], mut i: usize, before: &dyn Fn(&T, &T) -> bool) {
    loop {
        let (l, r) = (2 * i + 1, 2 * i + 2);
        let mut best = i;
        if l < v.len() && before(&v[l], &v[best]) {
            best = l;
        }
        if r < v.len() && before(&v[r], &v[best]) {
            best = r;
        }
        if best == i {
            break;
        }
        v.swap(i, best);
        i = best;
    }
}

/// Collects rows and hands them back sorted by `keys` (see the module doc).
pub(crate) struct Sorter {
    keys: Vec<SortKey>,
    /// Only the first `bound` rows of the output will be read (LIMIT + OFFSET).
    bound: Option<usize>,
    rows: Vec<Vec<Value>>,
    mem: usize,
    peak_mem: usize,
    /// Bounded mode: (arrival number, row), a max-heap (the worst row on top).
    heap: Option<Vec<(u64, Vec<Value>)>>,
    arrived: u64,
    runs: Vec<Run>,
    spill: Spill,
    tick: Ticker,
}

impl Sorter {
    pub(crate) fn new(keys: Vec<SortKey>, bound: Option<usize>, mem: SortMem) -> Sorter {
        Sorter {
            keys,
            bound,
            rows: Vec::new(),
            mem: 0,
            peak_mem: 0,
            heap: None,
            arrived: 0,
            runs: Vec::new(),
            spill: Spill { mem, written: 0, run_bytes: 0, scratch: Vec::new() },
            tick: Ticker::default(),
        }
    }

    /// Adds one row.
    pub(crate) fn put(&mut self, row: Vec<Value>, env: &dyn Env) -> Result<()> {
        self.tick.tick(env)?;
        let seq = self.arrived;
        self.arrived += 1;
        if self.heap.is_some() {
            return self.put_bounded(seq, row);
        }
        self.mem += row_mem(&row);
        self.peak_mem = self.peak_mem.max(self.mem);
        self.rows.push(row);
        let full = self.mem > self.spill.mem.work_mem;
        if let Some(b) = self.bound {
            if self.runs.is_empty() && (self.rows.len() > b.saturating_mul(2) || (full && self.rows.len() > b)) {
                return self.make_bounded(b, env);
            }
        }
        if full {
            self.dump_run(env)?;
        }
        Ok(())
    }

    /// Switches to the bounded heap: the best `b` rows so far, sorted (arrival
    /// numbers in that order keep ties stable: every later row arrives after).
    fn make_bounded(&mut self, b: usize, env: &dyn Env) -> Result<()> {
        let mut rows = std::mem::take(&mut self.rows);
        let keys = &self.keys;
        sort_checked(&mut rows, env, |x, y| compare_rows(x, y, keys))?;
        rows.truncate(b);
        // Sorted ascending is a valid min-heap; reversed, a max-heap.
        let mut heap: Vec<(u64, Vec<Value>)> = rows.into_iter().enumerate().map(|(i, r)| (i as u64, r)).collect();
        heap.reverse();
        self.mem = heap.iter().map(|(_, r)| row_mem(r)).sum();
        self.heap = Some(heap);
        Ok(())
    }

    fn put_bounded(&mut self, seq: u64, row: Vec<Value>) -> Result<()> {
        let keys = &self.keys;
        let Some(heap) = &mut self.heap else { return Ok(()) };
        let worse = |a: &(u64, Vec<Value>), b: &(u64, Vec<Value>)| compare_rows(&a.1, &b.1, keys).then(a.0.cmp(&b.0)) == Ordering::Greater;
        let bound = self.bound.unwrap_or(0);
        if heap.len() < bound {
            self.mem += row_mem(&row);
            heap.push((seq, row));
            let last = heap.len() - 1;
            sift_up(heap, last, &worse);
        } else if !heap.is_empty() && compare_rows(&heap[0].1, &row, keys) == Ordering::Greater {
            // (On a tie the new row, arrived later, is the worse one.)
            self.mem = self.mem + row_mem(&row) - row_mem(&heap[0].1);
            heap[0] = (seq, row);
            sift_down(heap, 0, &worse);
        }
        self.peak_mem = self.peak_mem.max(self.mem);
        Ok(())
    }

    /// Sorts the rows held and writes them as a new run.
    fn dump_run(&mut self, env: &dyn Env) -> Result<()> {
        let mut rows = std::mem::take(&mut self.rows);
        let keys = &self.keys;
        sort_checked(&mut rows, env, |x, y| compare_rows(x, y, keys))?;
        let mut file = self.spill.new_file()?;
        let before = self.spill.written;
        for r in rows {
            self.tick.tick(env)?;
            self.spill.write_row(&mut file, &r)?;
        }
        self.spill.run_bytes += self.spill.written - before;
        file.rewind()?;
        self.runs.push(Run { file });
        self.mem = 0;
        Ok(())
    }

    /// Ends the input: the rows in order, and how the sort ran.
    pub(crate) fn finish(mut self, env: &dyn Env) -> Result<(Sorted, SortStats)> {
        let kb = |b: usize| (b as u64).div_ceil(1024);
        if let Some(mut heap) = self.heap.take() {
            let keys = &self.keys;
            sort_checked(&mut heap, env, |a, b| compare_rows(&a.1, &b.1, keys).then(a.0.cmp(&b.0)))?;
            let stats = SortStats { method: SortMethod::TopN, space_kb: kb(self.peak_mem) };
            return Ok((Sorted::Memory(heap.into_iter().map(|(_, r)| r).collect::<Vec<_>>().into_iter()), stats));
        }
        if self.runs.is_empty() {
            let mut rows = std::mem::take(&mut self.rows);
            let keys = &self.keys;
            sort_checked(&mut rows, env, |x, y| compare_rows(x, y, keys))?;
            let stats = SortStats { method: SortMethod::Quicksort, space_kb: kb(self.peak_mem) };
            return Ok((Sorted::Memory(rows.into_iter()), stats));
        }
        if !self.rows.is_empty() {
            self.dump_run(env)?;
        }
        let stats = SortStats { method: SortMethod::ExternalMerge, space_kb: self.spill.run_bytes.div_ceil(1024) };
        // One 8 kB buffer per run open in a merge, within work_mem (at least 6).
        let fan_in = (self.spill.mem.work_mem / (4 * 8192)).max(6);
        let mut runs = std::mem::take(&mut self.runs);
        while runs.len() > fan_in {
            let mut next = Vec::with_capacity(runs.len().div_ceil(fan_in));
            let mut it = runs.into_iter();
            loop {
                let group: Vec<Run> = it.by_ref().take(fan_in).collect();
                if group.is_empty() {
                    break;
                }
                if group.len() == 1 {
                    next.extend(group);
                    continue;
                }
                let mut merger = Merger::new(group, self.keys.clone())?;
                let mut file = self.spill.new_file()?;
                while let Some(r) = merger.next_row(env)? {
                    self.spill.write_row(&mut file, &r)?;
                }
                file.rewind()?;
                next.push(Run { file });
            }
            runs = next;
        }
        Ok((Sorted::Merge(Merger::new(runs, self.keys.clone())?), stats))
    }
}

/// The k-way merge of sorted runs: a min-heap of (head row, run index).
pub(crate) struct Merger {
    keys: Vec<SortKey>,
    runs: Vec<Run>,
    heap: Vec<(Vec<Value>, usize)>,
    scratch: Vec<u8>,
    tick: Ticker,
}

impl Merger {
    fn new(mut runs: Vec<Run>, keys: Vec<SortKey>) -> Result<Merger> {
        let mut scratch = Vec::new();
        let mut heap = Vec::with_capacity(runs.len());
        for (i, r) in runs.iter_mut().enumerate() {
            if let Some(row) = read_row(&mut r.file, &mut scratch)? {
                heap.push((row, i));
            }
        }
        let mut m = Merger { keys, runs, heap, scratch, tick: Ticker::default() };
        let keys = &m.keys;
        let first = |a: &(Vec<Value>, usize), b: &(Vec<Value>, usize)| compare_rows(&a.0, &b.0, keys).then(a.1.cmp(&b.1)) == Ordering::Less;
        for i in (0..m.heap.len()).rev() {
            sift_down(&mut m.heap, i, &first);
        }
        Ok(m)
    }

    fn next_row(&mut self, env: &dyn Env) -> Result<Option<Vec<Value>>> {
        self.tick.tick(env)?;
        if self.heap.is_empty() {
            return Ok(None);
        }
        let run = self.heap[0].1;
        let keys = &self.keys;
        let first = |a: &(Vec<Value>, usize), b: &(Vec<Value>, usize)| compare_rows(&a.0, &b.0, keys).then(a.1.cmp(&b.1)) == Ordering::Less;
        let out = match read_row(&mut self.runs[run].file, &mut self.scratch)? {
            Some(next) => std::mem::replace(&mut self.heap[0], (next, run)).0,
            None => {
                let last = self.heap.len() - 1;
                self.heap.swap(0, last);
                self.heap.pop().map(|h| h.0).unwrap_or_default()
            }
        };
        sift_down(&mut self.heap, 0, &first);
        Ok(Some(out))
    }
}

/// A sorter's output.
pub(crate) enum Sorted {
    Memory(std::vec::IntoIter<Vec<Value>>),
    Merge(Merger),
}

impl Sorted {
    pub(crate) fn next_row(&mut self, env: &dyn Env) -> Result<Option<Vec<Value>>> {
        match self {
            Sorted::Memory(it) => Ok(it.next()),
            Sorted::Merge(m) => m.next_row(env),
        }
    }
}

impl RowIter for Sorted {
    fn next(&mut self, ctx: &mut crate::exec::Ctx) -> Result<Option<Vec<Value>>> {
        self.next_row(&*ctx.env)
    }
}

/// The Sort node: every row of `input`, sorted by `keys`; `bound` as for
/// [`Sorter`]. EXPLAIN ANALYZE learns how it ran (`explain::record_sort`).
pub(crate) fn sort_rows(mut input: Box<dyn RowIter>, keys: Vec<SortKey>, bound: Option<usize>, plan_key: usize, ctx: &mut crate::exec::Ctx) -> Result<Box<dyn RowIter>> {
    let mem = sort_mem(ctx)?;
    let mut sorter = Sorter::new(keys, bound, mem);
    while let Some(r) = input.next(ctx)? {
        sorter.put(r, &*ctx.env)?;
    }
    drop(input);
    let (sorted, stats) = sorter.finish(&*ctx.env)?;
    crate::explain::record_sort(plan_key, stats);
    Ok(Box::new(sorted))
}

/// The session's `work_mem` and `temp_file_limit`, with the data directory
/// temporary files go under.
pub(crate) fn sort_mem(ctx: &crate::exec::Ctx) -> Result<SortMem> {
    SortMem::from_settings(&*ctx.env, ctx.backend.engine().datadir().to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spilled_rows_read_back_equal() {
        let dir = std::env::temp_dir().join(format!("ferrogres-sort-{}", std::process::id()));
        let mem = SortMem { work_mem: 64 * 1024, hash_mem: 128 * 1024, temp_file_limit: None, datadir: dir.clone(), pid: 1 };
        let mut spill = Spill { mem, written: 0, run_bytes: 0, scratch: Vec::new() };
        let mut f = spill.new_file().unwrap();
        let rows = vec![
            vec![Value::Int4(-7), Value::Null, Value::Text("héllo".into()), Value::Float8(1.5)],
            vec![Value::Int8(i64::MIN), Value::Bool(true), Value::Bytea(vec![0, 1, 2]), Value::Date(-3)],
            vec![
                Value::Numeric(ferrogres_datum::numeric::Numeric::parse("-12.3400").unwrap()),
                Value::Interval(ferrogres_datum::datetime::Interval { months: 1, days: 2, micros: 3 }),
                Value::Array(Box::new(ferrogres_datum::array::Array::new(Type::Int4, vec![Value::Int4(1), Value::Null]))),
                Value::Uuid([7; 16]),
            ],
            vec![],
        ];
        for r in &rows {
            spill.write_row(&mut f, r).unwrap();
        }
        f.rewind().unwrap();
        let mut scratch = Vec::new();
        for r in &rows {
            assert_eq!(&read_row(&mut f, &mut scratch).unwrap().unwrap(), r);
        }
        assert!(read_row(&mut f, &mut scratch).unwrap().is_none());
        drop(f);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
