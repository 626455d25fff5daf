//! The hash join within `work_mem` (PostgreSQL's hybrid hash join,
//! nodeHashjoin.c / nodeHash.c: the ideas, not the code), for every join that
//! is not LATERAL: inner, left, right, full, semi and anti. As in PostgreSQL
//! 15, a hash table's bound is `work_mem` times `hash_mem_multiplier`
//! (default 2): "`work_mem`" below means that product.
//!
//! One input, the *build* side, is read into a hash table keyed by its hash
//! keys; the other, the *probe* side, streams through it. Without hash keys
//! every build row has hash 0 and is a candidate for every probe row (a nested
//! loop over the kept rows). The build side is the smaller input, found by
//! reading both inputs a row at a time in turn until one ends, while the rows
//! read fit in `work_mem`; when they do not, the right input builds (PostgreSQL
//! hashes its inner side) and the left rows already read are written to a
//! temporary file, probed first. Semi- and anti-joins always build on the
//! right, each build row cut down to the columns the keys and the condition
//! read. Inner and outer joins cut the rows of both inputs down to the
//! columns read above the join (the projection's `JoinPlan::out`), by its
//! condition or by its keys, as they are read, and widen them back (NULL in
//! the other positions) as joined rows come out: the table, the batch files
//! and `work_mem`'s count hold only those columns, as PostgreSQL's hash table
//! holds only its inner side's target list. The table keeps its rows as
//! compact encoded bytes ([`crate::hashtable`]), about PostgreSQL's size.
//!
//! Batches. A build row's hash (`join_hash` of its key values) picks its batch:
//! `hash & (nbatch - 1)`, `nbatch` a power of two, 1 at the start. The rows of
//! the current batch are in memory; the others are written to their batch's
//! build file. When the table passes `work_mem`, `nbatch` doubles and the rows
//! whose batch moved are written out (a row of batch b moves to b or b +
//! nbatch: always to a later batch). A doubling that moves no row, or every row,
//! cannot help (one key, or colliding hashes): growth stops for that batch
//! (PostgreSQL stops it for the whole join and lets the table pass `work_mem`).
//! While batch 0 is built from the input, probe rows of batch 0 are probed at
//! once and those of later batches written to their batch's probe file. Then
//! each later batch is loaded from its build file (rows whose batch has moved
//! on are written to their new batch) and its probe file streamed through it.
//!
//! Chunks (the skew fallback). A batch whose rows still pass `work_mem` once
//! it cannot grow (a key with more rows than fit, or a join without keys) is
//! joined a chunk at a time: a chunk is as many build rows as fit, and the
//! batch's probe file is read once per chunk (a block nested loop). Which probe
//! rows matched in an earlier chunk is kept in a bitmap (one bit per probe row of
//! the batch), so an unmatched probe row is NULL-extended (or returned by an
//! anti-join) only in the pass over the last chunk, and a semi-join returns a
//! probe row once. If batch 0 must be chunked while the input is being read, its
//! rows go to a build file too and it is joined like the later batches.
//!
//! Invariants:
//! 1. `table.mem` <= `work_mem` + one row, except while a batch may still grow
//!    (each insertion that passes it splits or ends in chunks at once).
//! 2. A row is written to the files of a batch `b` > `cur` only (the current
//!    batch is never written while it is read); a batch's build and probe files
//!    are written before their batch starts and read only while it runs.
//! 3. A joined pair is emitted once: a build row and a probe row with equal keys
//!    land in the same batch (the same hash), and each probe row of a batch meets
//!    each of its chunks once.
//! 4. An unmatched build row is NULL-extended at the end of its chunk; an
//!    unmatched probe row in its batch's pass over the last chunk; a NULL-key row
//!    of a preserved side at once (probe) or at the end of the join (build:
//!    written to a file of its own), since it matches nothing.
//! 5. Every temporary file is owned by the join's state: dropping it (end of
//!    query, error, cancel) removes the files. Every loop polls interrupts.
//!
//! `nbatch` stops at `MAX_BATCHES` (each batch holds up to two open files with
//! an 8 kB buffer each while it is written: 1024 batches are 16 MB of buffers
//! outside `work_mem`, as PostgreSQL's BufFiles); beyond it, batches are chunked.

use ferrogres_datum::errors::Result;
use crate::exec::{eval_pure, Ctx, RowIter, Ticker};
use crate::hashtable::{Table, NONE};
use crate::join::{passes, Join, JoinKind};
use crate::plan::{Expr, Source};
use crate::sort::{read_row, row_mem, SortMem, Spill};
use crate::subquery::{columns_read, map_columns};
use ferrogres_datum::types::Value;
use ferrogres_engine::hash::hashfunc as hf;
use ferrogres_engine::storage::buffile::TempFile;
use std::collections::VecDeque;

/// The largest batch count (see the module doc).
const MAX_BATCHES: usize = 1024;

/// EXPLAIN ANALYZE's line under Hash.
#[derive(Clone, Copy, Debug, Default)]
pub struct HashStats {
    pub buckets: u64,
    pub batches: u64,
    /// Peak memory of the table, kB.
    pub mem_kb: u64,
}

impl HashStats {
    /// PostgreSQL's `Buckets: 1024  Batches: 1  Memory Usage: 9kB`, with the
    /// original counts when the batches grew (PostgreSQL's original bucket count
    /// is its estimate's; there is no estimate here, so it is the final one).
    pub fn line(&self) -> String {
        if self.batches != 1 {
            format!("Buckets: {} (originally {})  Batches: {} (originally 1)  Memory Usage: {}kB", self.buckets, self.buckets, self.batches, self.mem_kb)
        } else {
            format!("Buckets: {}  Batches: {}  Memory Usage: {}kB", self.buckets, self.batches, self.mem_kb)
        }
    }
}

/// A hash of a join key value consistent with [`crate::exec::compare`]'s
/// equality: integers of every width hash as int8, floats as float8 (-0 = 0,
/// NaN = NaN), numeric without its display scale, interval by its span.
/// Types whose equality is not plain (json, jsonb, arrays) hash to 0: correct,
/// only not spread over batches.
pub(crate) fn value_hash(v: &Value) -> u32 {
    if let Some(i) = v.as_i64() {
        return hf::hash_int8(i);
    }
    match v {
        Value::Float8(f) => hf::hash_float8(*f),
        Value::Float4(f) => hf::hash_float8(*f as f64),
        Value::Numeric(n) => n.hash(),
        Value::Text(s) => hf::hash_text(s.as_bytes()),
        Value::Bytea(b) => hf::hash_text(b),
        Value::Uuid(u) => hf::hash_text(u),
        Value::Bool(b) => hf::hash_char(*b as u8),
        Value::Date(d) => hf::hash_int8(*d as i64),
        Value::Time(t) | Value::Timestamp(t) | Value::Timestamptz(t) => hf::hash_int8(*t),
        Value::PgLsn(l) | Value::Xid8(l) => hf::hash_int8(*l as i64),
        Value::Tid(b, o) => hf::hash_int8((*b as i64) << 16 | *o as i64),
        Value::Interval(i) => hf::hash_bytes(&i.span().to_le_bytes()),
        Value::TimeTz(t, z) => hf::hash_timetz(*t, *z),
        _ => 0,
    }
}

pub(crate) fn key_hash(key: &[Value]) -> u32 {
    key.iter().fold(0u32, |h, v| h.rotate_left(1) ^ value_hash(v))
}

fn values_equal(x: &Value, y: &Value) -> bool {
    crate::exec::compare(x, y) == std::cmp::Ordering::Equal
}

/// The key values of a row, `None` if one is NULL (it matches nothing). No
/// keys: the empty key, hash 0.
fn eval_key(exprs: &[Expr], row: &[Value], ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
    let mut k = Vec::with_capacity(exprs.len());
    for e in exprs {
        let params = ctx.params;
        let v = eval_pure(e, row, params, &[], ctx)?;
        if v.is_null() {
            return Ok(None);
        }
        k.push(v);
    }
    Ok(Some(k))
}


/// The values of `row` at the positions `keep`, in that order.
fn cut(mut row: Vec<Value>, keep: &[usize]) -> Vec<Value> {
    keep.iter().map(|&i| row.get_mut(i).map(|v| std::mem::replace(v, Value::Null)).unwrap_or(Value::Null)).collect()
}

/// Appends one side of a joined row, `width` columns: `part` as it is (no
/// `keep`), or spread back to its positions `keep` with NULL in the others,
/// or all NULL (`part` is `None`: the side is NULL-extended).
fn widen(out: &mut Vec<Value>, part: Option<&[Value]>, keep: Option<&[usize]>, width: usize) {
    match (part, keep) {
        (Some(p), None) => out.extend_from_slice(p),
        (Some(p), Some(k)) => {
            let base = out.len();
            out.resize(base + width, Value::Null);
            for (v, &i) in p.iter().zip(k) {
                out[base + i] = v.clone();
            }
        }
        (None, _) => out.resize(out.len() + width, Value::Null),
    }
}

/// For an inner or outer join: the columns of one input the join keeps
/// (those read above it, by its condition or by its keys; `None`: all of
/// them), from the join's needs as the projection found them
/// ([`crate::optimizer::JoinPlan::out`]). Its rows are held (in the hash table,
/// in batch files) cut down to those, as PostgreSQL's hash table holds only
/// the inner side's target list, and widened back to the join's row as they
/// come out.
pub(crate) fn kept_columns(j: &Join, left: bool) -> Option<Vec<usize>> {
    let out = j.plan.out.as_ref()?;
    let (lw, rw) = (j.lw, j.rw);
    let (from, width) = if left { (0, lw) } else { (lw, rw) };
    let mut used: Vec<bool> = (0..width).map(|i| out.get(from + i).copied().unwrap_or(true)).collect();
    if let Some(c) = &j.cond {
        for i in columns_read(c) {
            if i >= lw + rw {
                return None;
            }
            if (from..from + width).contains(&i) {
                used[i - from] = true;
            }
        }
    }
    if let Some((lk, rk)) = &j.hash {
        for i in (if left { lk } else { rk }).iter().flat_map(columns_read) {
            *used.get_mut(i)? = true;
        }
    }
    let keep: Vec<usize> = used.iter().enumerate().filter(|(_, &u)| u).map(|(i, _)| i).collect();
    (keep.len() < width).then_some(keep)
}

/// `exprs` renumbered to read a row cut down to `keep`.
fn renumber(exprs: &[Expr], keep: Option<&[usize]>) -> Vec<Expr> {
    let Some(keep) = keep else { return exprs.to_vec() };
    let pos = |i: usize| keep.binary_search(&i).unwrap_or(0);
    exprs
        .iter()
        .map(|e| {
            let mut e = e.clone();
            map_columns(&mut e, &pos);
            e
        })
        .collect()
}

/// One input of a join as it streams: its rows that pass its filter.
pub(crate) struct Input {
    rows: Box<dyn RowIter>,
    filter: Option<Expr>,
    /// EXPLAIN's key of the input.
    key: usize,
    done: bool,
    /// The columns its rows are cut down to, in order (`None`: all).
    keep: Option<Vec<usize>>,
}

impl Input {
    pub(crate) fn open(s: &Source, filter: &Option<Expr>, ctx: &mut Ctx) -> Result<Input> {
        let (rows, filter) = match s {
            Source::Table(t) => {
                let scan = crate::exec::table_rows(t, filter.as_ref(), ctx)?;
                let rest = scan.remaining(filter.as_ref()).cloned();
                (scan.rows, rest)
            }
            other => (crate::exec::source_rows(other, ctx)?, filter.clone()),
        };
        let key = crate::explain::key(s);
        let rows = crate::explain::wrap(rows, key, crate::explain::Stage::Scan);
        Ok(Input { rows, filter, key, done: false, keep: None })
    }

    /// The same input with each row cut down to the columns `keep` (after
    /// its filter, which reads the whole row).
    fn keeping(mut self, keep: Option<Vec<usize>>) -> Input {
        self.keep = keep;
        self
    }

    pub(crate) fn next(&mut self, tick: &mut Ticker, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        if self.done {
            return Ok(None);
        }
        while let Some(r) = self.rows.next(ctx)? {
            tick.tick(&*ctx.env)?;
            if self.filter.is_some() {
                if !passes(&self.filter, &r, ctx)? {
                    continue;
                }
                crate::explain::count_row(self.key, crate::explain::Stage::Filter);
            }
            return Ok(Some(match &self.keep {
                Some(k) => cut(r, k),
                None => r,
            }));
        }
        self.done = true;
        Ok(None)
    }
}

/// How the join's rows are made from a probe row and its matches.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Inner and outer joins: the joined pairs.
    Pairs,
    /// The probe (left) row alone, once, if something matches.
    Semi,
    /// The probe (left) row alone if nothing matches.
    Anti,
}

/// Where the probe rows come from now.
enum Phase {
    /// Batch 0 while the probe input streams: first the probe rows read while
    /// choosing the build side (in memory, or in a file), then the input.
    Stream,
    /// A pass over the current batch's probe file against the table's chunk.
    Pass { file: TempFile, first: bool, last: bool, ordinal: usize },
    /// The table's unmatched build rows, from `at`; then `after`.
    Unmatched { at: usize, after: After },
    /// The preserved build rows with a NULL key, at the very end.
    NullBuild(TempFile),
    Done,
}

/// What follows the emission of a chunk's unmatched build rows.
enum After {
    /// The next batch (after batch 0 streamed, or a batch's last chunk).
    NextBatch,
    /// The next chunk of the current batch (its probe file again).
    NextChunk(TempFile),
}

/// A probe row and where it is in its candidates.
struct Probe {
    row: Vec<Value>,
    key: Vec<Value>,
    hash: u32,
    /// The next entry of its bucket's chain to look at ([`NONE`]: none).
    at: u32,
    matched: bool,
    /// Its number in its batch's probe file, for the chunk bitmap.
    ordinal: Option<usize>,
}

struct Batch {
    build: Option<TempFile>,
    probe: Option<TempFile>,
}

pub(crate) struct HashJoin {
    mode: Mode,
    cond: Option<Expr>,
    lw: usize,
    rw: usize,
    build_is_left: bool,
    build_preserved: bool,
    probe_preserved: bool,
    /// `None`: no hash keys (every pair is a candidate).
    build_keys: Option<Vec<Expr>>,
    probe_keys: Option<Vec<Expr>>,
    /// Semi/anti: the build input's columns kept.
    build_proj: Option<Vec<usize>>,
    /// Inner and outer joins: the columns of the left (right) input its rows
    /// are cut down to while the join holds them ([`kept_columns`]).
    keep_l: Option<Vec<usize>>,
    keep_r: Option<Vec<usize>>,
    work_mem: usize,
    spill: Spill,
    nbatch: usize,
    /// The batch count when the build input ended (probe rows were written
    /// to their batches under it).
    nbatch_probe_start: usize,
    cur: usize,
    /// Whether the current batch may still double `nbatch`.
    can_grow: bool,
    /// Batch 0 went to files (it had to be chunked while the input was read).
    batch0_spilled: bool,
    batches: Vec<Batch>,
    table: Table,
    /// The current batch's build file while it is read chunk by chunk.
    chunk_source: Option<TempFile>,
    /// Probe rows (by ordinal) of the current batch that matched in an earlier
    /// chunk; used only when the batch has more than one chunk.
    bitmap: Vec<u64>,
    chunked: bool,
    null_build: Option<TempFile>,
    pending: VecDeque<Vec<Value>>,
    pending_file: Option<TempFile>,
    probe_input: Option<Input>,
    phase: Phase,
    probe: Option<Probe>,
    scratch: Vec<u8>,
    tick: Ticker,
    stats: HashStats,
    plan_key: usize,
}

/// Starts a join that is not LATERAL.
pub(crate) fn start(j: &Join, ctx: &mut Ctx) -> Result<Box<dyn RowIter>> {
    let mem: SortMem = crate::sort::sort_mem(ctx)?;
    // The table's bound: work_mem times hash_mem_multiplier, as PostgreSQL's.
    let work_mem = mem.hash_mem;
    let mut tick = Ticker::default();
    let mode = match j.kind {
        JoinKind::Semi => Mode::Semi,
        JoinKind::Anti => Mode::Anti,
        _ => Mode::Pairs,
    };
    let mut hj = HashJoin {
        mode,
        cond: j.cond.clone(),
        lw: j.lw,
        rw: j.rw,
        build_is_left: false,
        build_preserved: false,
        probe_preserved: false,
        build_keys: None,
        probe_keys: None,
        build_proj: None,
        keep_l: None,
        keep_r: None,
        work_mem,
        spill: Spill::new(mem),
        nbatch: 1,
        nbatch_probe_start: 1,
        cur: 0,
        can_grow: true,
        batch0_spilled: false,
        batches: vec![Batch { build: None, probe: None }],
        table: Table::new(0),
        chunk_source: None,
        bitmap: Vec::new(),
        chunked: false,
        null_build: None,
        pending: VecDeque::new(),
        pending_file: None,
        probe_input: None,
        phase: Phase::Stream,
        probe: None,
        scratch: Vec::new(),
        tick: Ticker::default(),
        stats: HashStats { buckets: 1024, batches: 1, mem_kb: 0 },
        plan_key: crate::explain::key(j),
    };
    if mode != Mode::Pairs {
        hj.semi_setup(j);
        let mut right = Input::open(&j.right, &j.right_filter, ctx)?;
        while let Some(r) = right.next(&mut tick, ctx)? {
            hj.build_row(r, ctx)?;
        }
        drop(right);
        hj.probe_input = Some(Input::open(&j.left, &j.left_filter, ctx)?);
        hj.probe_preserved = mode == Mode::Anti;
        hj.finish_build();
        return Ok(Box::new(hj));
    }
    hj.keep_l = kept_columns(j, true);
    hj.keep_r = kept_columns(j, false);
    let mut left = Input::open(&j.left, &j.left_filter, ctx)?.keeping(hj.keep_l.clone());
    let mut right = Input::open(&j.right, &j.right_filter, ctx)?.keeping(hj.keep_r.clone());
    let (mut lrows, mut rrows) = (Vec::new(), Vec::new());
    let mut held = 0usize;
    while !left.done && !right.done && held <= work_mem {
        if let Some(r) = left.next(&mut tick, ctx)? {
            held += row_mem(&r);
            lrows.push(r);
        }
        if let Some(r) = right.next(&mut tick, ctx)? {
            held += row_mem(&r);
            rrows.push(r);
        }
    }
    // An input that ended is the build side (the smaller one when both did,
    // the right one on a tie); neither: the right one.
    hj.build_is_left = if left.done && right.done { lrows.len() < rrows.len() } else { left.done };
    let left_preserved = matches!(j.kind, JoinKind::Left | JoinKind::Full);
    let right_preserved = matches!(j.kind, JoinKind::Right | JoinKind::Full);
    let (mut build_in, probe_in, build_rows, probe_rows) =
        if hj.build_is_left { (left, right, lrows, rrows) } else { (right, left, rrows, lrows) };
    (hj.build_preserved, hj.probe_preserved) = if hj.build_is_left { (left_preserved, right_preserved) } else { (right_preserved, left_preserved) };
    if let Some((lk, rk)) = &j.hash {
        hj.table = Table::new(lk.len());
        let lk = renumber(lk, hj.keep_l.as_deref());
        let rk = renumber(rk, hj.keep_r.as_deref());
        let (bk, pk) = if hj.build_is_left { (lk, rk) } else { (rk, lk) };
        hj.build_keys = Some(bk);
        hj.probe_keys = Some(pk);
    }
    if build_in.done {
        hj.pending = probe_rows.into();
    } else {
        // Neither fit: the probe rows read so far wait in a file.
        let mut f = hj.spill.new_file()?;
        for r in &probe_rows {
            tick.tick(&*ctx.env)?;
            hj.spill.write_row(&mut f, r)?;
        }
        f.rewind()?;
        hj.pending_file = Some(f);
    }
    for r in build_rows {
        hj.build_row(r, ctx)?;
    }
    while let Some(r) = build_in.next(&mut tick, ctx)? {
        hj.build_row(r, ctx)?;
    }
    drop(build_in);
    hj.probe_input = Some(probe_in);
    hj.finish_build();
    Ok(Box::new(hj))
}

impl HashJoin {
    /// A semi- or anti-join builds on the right with only the columns its keys
    /// and condition read (TPC-H Q21 keeps two of lineitem's 16 columns); the
    /// keys and the condition are renumbered to read the kept columns.
    fn semi_setup(&mut self, j: &Join) {
        let lw = j.lw;
        let mut used: Vec<usize> = Vec::new();
        if let Some((_, rk)) = &j.hash {
            used.extend(rk.iter().flat_map(columns_read));
        }
        if let Some(c) = &j.cond {
            used.extend(columns_read(c).into_iter().filter(|&i| i >= lw).map(|i| i - lw));
        }
        used.sort_unstable();
        used.dedup();
        let pos = |i: usize| used.binary_search(&i).unwrap_or(0);
        if let Some((lk, rk)) = &j.hash {
            let rk = rk
                .iter()
                .map(|e| {
                    let mut e = e.clone();
                    map_columns(&mut e, &pos);
                    e
                })
                .collect::<Vec<_>>();
            self.table = Table::new(rk.len());
            self.build_keys = Some(rk);
            self.probe_keys = Some(lk.clone());
        }
        self.cond = j.cond.as_ref().map(|c| {
            let mut c = c.clone();
            map_columns(&mut c, &|i| if i >= lw { lw + pos(i - lw) } else { i });
            c
        });
        self.build_proj = Some(used);
        self.build_is_left = false;
    }

    fn batch_of(&self, hash: u32) -> usize {
        hash as usize & (self.nbatch - 1)
    }

    fn build_key(&self, row: &[Value], ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        match &self.build_keys {
            Some(k) => eval_key(k, row, ctx),
            None => Ok(Some(Vec::new())),
        }
    }

    fn probe_key(&self, row: &[Value], ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        match &self.probe_keys {
            Some(k) => eval_key(k, row, ctx),
            None => Ok(Some(Vec::new())),
        }
    }

    fn write_build(&mut self, b: usize, row: &[Value]) -> Result<()> {
        if self.batches[b].build.is_none() {
            self.batches[b].build = Some(self.spill.new_file()?);
        }
        let f = self.batches[b].build.as_mut().expect("created above");
        self.spill.write_row(f, row)
    }

    fn write_probe(&mut self, b: usize, row: &[Value]) -> Result<()> {
        if self.batches[b].probe.is_none() {
            self.batches[b].probe = Some(self.spill.new_file()?);
        }
        let f = self.batches[b].probe.as_mut().expect("created above");
        self.spill.write_row(f, row)
    }

    /// A build row from the input (batch 0 being built).
    fn build_row(&mut self, row: Vec<Value>, ctx: &mut Ctx) -> Result<()> {
        self.tick.tick(&*ctx.env)?;
        let row = match &self.build_proj {
            Some(p) => p.iter().map(|&i| row.get(i).cloned().unwrap_or(Value::Null)).collect(),
            None => row,
        };
        let Some(key) = self.build_key(&row, ctx)? else {
            if self.build_preserved {
                if self.null_build.is_none() {
                    self.null_build = Some(self.spill.new_file()?);
                }
                let f = self.null_build.as_mut().expect("created above");
                self.spill.write_row(f, &row)?;
            }
            return Ok(());
        };
        let hash = key_hash(&key);
        let b = self.batch_of(hash);
        if b != 0 || self.batch0_spilled {
            return self.write_build(b, &row);
        }
        self.table.insert(hash, &key, &row);
        if self.table.full(self.work_mem) {
            self.grow(ctx)?;
            if self.table.full(self.work_mem) && !self.can_grow {
                // Batch 0 must be chunked: it goes to its files like the others.
                self.batch0_spilled = true;
                let table = std::mem::replace(&mut self.table, Table::new(0));
                self.table = Table::new(table.nkeys());
                for i in 0..table.len() as u32 {
                    self.tick.tick(&*ctx.env)?;
                    self.write_build(0, &table.row(i)?)?;
                }
            }
        }
        self.note_mem();
        Ok(())
    }

    fn note_mem(&mut self) {
        self.stats.mem_kb = self.stats.mem_kb.max((self.table.mem as u64).div_ceil(1024));
        self.stats.buckets = self.stats.buckets.max(self.table.buckets() as u64);
    }

    /// Doubles the batch count and writes out the table's rows whose batch
    /// moved; stops growth for this batch when that moved none or all.
    fn grow(&mut self, ctx: &mut Ctx) -> Result<()> {
        if !self.can_grow || self.nbatch >= MAX_BATCHES {
            self.can_grow = false;
            return Ok(());
        }
        self.nbatch *= 2;
        self.stats.batches = self.nbatch as u64;
        while self.batches.len() < self.nbatch {
            self.batches.push(Batch { build: None, probe: None });
        }
        let old = std::mem::replace(&mut self.table, Table::new(0));
        self.table = Table::new(old.nkeys());
        let total = old.len();
        let mut moved = 0;
        for i in 0..total as u32 {
            self.tick.tick(&*ctx.env)?;
            let (hash, _) = old.hash_next(i);
            let b = self.batch_of(hash);
            if b != self.cur {
                moved += 1;
                self.write_build(b, &old.row(i)?)?;
            } else {
                let (key, row) = old.key_and_row(i)?;
                self.table.insert(hash, &key, &row);
            }
        }
        if moved == 0 || moved == total {
            self.can_grow = false;
        }
        Ok(())
    }

    /// The build input has ended: probing batch 0 begins.
    fn finish_build(&mut self) {
        self.nbatch_probe_start = self.nbatch;
        self.note_mem();
        self.record();
        self.phase = Phase::Stream;
    }

    /// Tells EXPLAIN ANALYZE the table's figures so far.
    fn record(&self) {
        crate::explain::record_hash(self.plan_key, self.stats);
    }

    /// The join's row of a left and a right part (`None`: NULL-extended),
    /// each widened back from its kept columns.
    fn joined(&self, l: Option<&[Value]>, r: Option<&[Value]>) -> Vec<Value> {
        let mut row = Vec::with_capacity(self.lw + self.rw);
        widen(&mut row, l, self.keep_l.as_deref(), self.lw);
        widen(&mut row, r, self.keep_r.as_deref(), self.rw);
        row
    }

    /// The joined row of a probe row and a build row.
    fn pair(&self, probe: &[Value], build: &[Value]) -> Vec<Value> {
        if self.build_is_left {
            self.joined(Some(build), Some(probe))
        } else {
            self.joined(Some(probe), Some(build))
        }
    }

    /// A probe row NULL-extended (its side preserved, nothing matched), or the
    /// row alone for an anti-join.
    fn probe_unmatched(&self, row: Vec<Value>) -> Vec<Value> {
        match self.mode {
            Mode::Pairs if self.build_is_left => self.joined(None, Some(&row)),
            Mode::Pairs => self.joined(Some(&row), None),
            _ => row,
        }
    }

    fn build_unmatched(&self, row: &[Value]) -> Vec<Value> {
        if self.build_is_left {
            self.joined(Some(row), None)
        } else {
            self.joined(None, Some(row))
        }
    }

    fn bit(&self, ordinal: usize) -> bool {
        self.bitmap.get(ordinal / 64).is_some_and(|w| w & (1 << (ordinal % 64)) != 0)
    }

    fn set_bit(&mut self, ordinal: usize) {
        let w = ordinal / 64;
        if self.bitmap.len() <= w {
            self.bitmap.resize(w + 1, 0);
        }
        self.bitmap[w] |= 1 << (ordinal % 64);
    }

    /// Whether this pass is over the batch's last chunk (unmatched probe rows
    /// are decided in it).
    fn last_pass(&self) -> bool {
        match &self.phase {
            Phase::Pass { last, .. } => *last,
            _ => true,
        }
    }

    /// Continues the current probe row: the next joined row, or `None` when
    /// it is done (then `self.probe` is None).
    fn advance_probe(&mut self, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        let Some(mut p) = self.probe.take() else { return Ok(None) };
        let earlier = p.ordinal.is_some_and(|o| self.chunked && self.bit(o));
        // A semi-join returns a row once; an anti-join's row that matched
        // before is out already.
        if !(self.mode != Mode::Pairs && earlier) {
            while p.at != NONE {
                self.tick.tick(&*ctx.env)?;
                let i = p.at;
                let (hash, next) = self.table.hash_next(i);
                p.at = next;
                if hash != p.hash || !self.table.key_matches(i, &p.key, values_equal)? {
                    continue;
                }
                let row = self.pair(&p.row, &self.table.row(i)?);
                if !passes(&self.cond, &row, ctx)? {
                    continue;
                }
                p.matched = true;
                match self.mode {
                    Mode::Pairs => {
                        self.table.set_matched(i);
                        self.probe = Some(p);
                        return Ok(Some(row));
                    }
                    Mode::Semi => {
                        if let Some(o) = p.ordinal.filter(|_| self.chunked) {
                            self.set_bit(o);
                        }
                        return Ok(Some(p.row));
                    }
                    Mode::Anti => break,
                }
            }
        }
        if p.matched {
            if let Some(o) = p.ordinal.filter(|_| self.chunked) {
                self.set_bit(o);
            }
            return Ok(None);
        }
        if self.probe_preserved && !earlier && self.last_pass() {
            return Ok(Some(self.probe_unmatched(p.row)));
        }
        Ok(None)
    }

    /// Routes a probe row: probed now (it becomes `self.probe`), written to its
    /// batch's file, or emitted at once (a NULL key on a preserved side).
    fn route_probe(&mut self, row: Vec<Value>, may_write: bool, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        let Some(key) = self.probe_key(&row, ctx)? else {
            return Ok(if self.probe_preserved && self.last_pass() { Some(self.probe_unmatched(row)) } else { None });
        };
        let hash = key_hash(&key);
        let b = self.batch_of(hash);
        let here = b == self.cur && !(self.cur == 0 && self.batch0_spilled && matches!(self.phase, Phase::Stream));
        if !here {
            if may_write {
                self.write_probe(b, &row)?;
            }
            return Ok(None);
        }
        let ordinal = match &mut self.phase {
            Phase::Pass { ordinal, .. } => {
                *ordinal += 1;
                Some(*ordinal - 1)
            }
            _ => None,
        };
        let at = self.table.head(hash);
        self.probe = Some(Probe { row, key, hash, at, matched: false, ordinal });
        Ok(None)
    }

    /// Loads the next chunk of the current batch from `chunk_source` into the
    /// table; true if it read the batch's last build row.
    fn load_chunk(&mut self, ctx: &mut Ctx) -> Result<bool> {
        self.table.clear();
        let Some(mut src) = self.chunk_source.take() else { return Ok(true) };
        loop {
            self.tick.tick(&*ctx.env)?;
            let Some(row) = read_row(&mut src, &mut self.scratch)? else {
                self.note_mem();
                return Ok(true);
            };
            let Some(key) = self.build_key(&row, ctx)? else { continue };
            let hash = key_hash(&key);
            let b = self.batch_of(hash);
            if b != self.cur {
                self.write_build(b, &row)?;
                continue;
            }
            self.table.insert(hash, &key, &row);
            if self.table.full(self.work_mem) {
                self.grow(ctx)?;
                if self.table.full(self.work_mem) && !self.can_grow {
                    self.note_mem();
                    self.chunked = true;
                    self.chunk_source = Some(src);
                    return Ok(false);
                }
            }
        }
    }

    /// Starts the next batch that has rows; false when none is left.
    fn next_batch(&mut self, ctx: &mut Ctx) -> Result<bool> {
        loop {
            // Batch 0 is next only when it went to files.
            let next = if matches!(self.phase, Phase::Stream) && self.batch0_spilled { 0 } else { self.cur + 1 };
            self.phase = Phase::Done;
            if next >= self.nbatch {
                return Ok(false);
            }
            self.cur = next;
            self.can_grow = true;
            self.chunked = false;
            self.bitmap.clear();
            let build = self.batches[next].build.take();
            let probe = self.batches[next].probe.take();
            let Some(mut probe) = probe else {
                // No probe rows: only unmatched build rows could come out.
                if !self.build_preserved {
                    // Its build rows may still belong to a later batch (written
                    // under a smaller batch count): they move there, the rest
                    // meet no probe row (PostgreSQL's ExecHashJoinNewBatch, rule 1).
                    if let Some(b) = build {
                        self.reroute(b, true, ctx)?;
                    }
                    continue;
                }
                if let Some(mut b) = build {
                    b.rewind()?;
                    self.chunk_source = Some(b);
                    // Each chunk's rows all unmatched.
                    let last = self.load_chunk(ctx)?;
                    let after = if last { After::NextBatch } else { After::NextChunk(self.empty_probe()?) };
                    self.phase = Phase::Unmatched { at: 0, after };
                    return Ok(true);
                }
                continue;
            };
            probe.rewind()?;
            match build {
                Some(mut b) => {
                    b.rewind()?;
                    self.chunk_source = Some(b);
                }
                None if !self.probe_preserved => {
                    // Probe rows whose batch moved on since they were written
                    // go to it; the rest meet no build row.
                    if self.nbatch != self.nbatch_probe_start {
                        self.reroute(probe, false, ctx)?;
                    }
                    continue;
                }
                None => {}
            }
            let last = self.load_chunk(ctx)?;
            self.phase = Phase::Pass { file: probe, first: true, last, ordinal: 0 };
            return Ok(true);
        }
    }

    /// Reads a rewound file of the current batch and writes each row whose
    /// batch is now a later one to that batch's build (or probe) file; the
    /// rows that stay in the current batch are dropped.
    fn reroute(&mut self, mut f: TempFile, build: bool, ctx: &mut Ctx) -> Result<()> {
        f.rewind()?;
        while let Some(row) = read_row(&mut f, &mut self.scratch)? {
            self.tick.tick(&*ctx.env)?;
            let key = if build { self.build_key(&row, ctx)? } else { self.probe_key(&row, ctx)? };
            let Some(key) = key else { continue };
            let b = self.batch_of(key_hash(&key));
            if b != self.cur {
                if build {
                    self.write_build(b, &row)?;
                } else {
                    self.write_probe(b, &row)?;
                }
            }
        }
        Ok(())
    }

    /// An empty rewound file (the probe side of a batch without probe rows).
    fn empty_probe(&mut self) -> Result<TempFile> {
        let mut f = self.spill.new_file()?;
        f.rewind()?;
        Ok(f)
    }
}


impl RowIter for HashJoin {
    fn next(&mut self, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        loop {
            if self.probe.is_some() {
                if let Some(r) = self.advance_probe(ctx)? {
                    return Ok(Some(r));
                }
                continue;
            }
            self.tick.tick(&*ctx.env)?;
            match &mut self.phase {
                Phase::Done => {
                    self.record();
                    return Ok(None);
                }
                Phase::Stream => {
                    let row = match self.pending.pop_front() {
                        Some(r) => Some(r),
                        None => match &mut self.pending_file {
                            Some(f) => match read_row(f, &mut self.scratch)? {
                                Some(r) => Some(r),
                                None => {
                                    self.pending_file = None;
                                    continue;
                                }
                            },
                            None => match &mut self.probe_input {
                                Some(input) => input.next(&mut self.tick, ctx)?,
                                None => None,
                            },
                        },
                    };
                    match row {
                        Some(r) => {
                            if let Some(out) = self.route_probe(r, true, ctx)? {
                                return Ok(Some(out));
                            }
                        }
                        None => {
                            // Every probe row is placed; a batch's files are
                            // rewound when it starts (later batches are still
                            // written while earlier ones run).
                            self.probe_input = None;
                            if self.batch0_spilled {
                                if !self.next_batch(ctx)? {
                                    self.phase = Phase::Done;
                                }
                            } else {
                                self.phase = Phase::Unmatched { at: 0, after: After::NextBatch };
                            }
                        }
                    }
                }
                Phase::Pass { file, first, .. } => {
                    let first = *first;
                    match read_row(file, &mut self.scratch)? {
                        Some(r) => {
                            if let Some(out) = self.route_probe(r, first, ctx)? {
                                return Ok(Some(out));
                            }
                        }
                        None => {
                            let Phase::Pass { mut file, last, .. } = std::mem::replace(&mut self.phase, Phase::Done) else { unreachable!() };
                            let after = if last {
                                After::NextBatch
                            } else {
                                file.rewind()?;
                                After::NextChunk(file)
                            };
                            self.phase = Phase::Unmatched { at: 0, after };
                        }
                    }
                }
                Phase::Unmatched { at, .. } => {
                    if self.build_preserved {
                        while *at < self.table.len() {
                            let i = *at as u32;
                            *at += 1;
                            if !self.table.is_matched(i) {
                                return Ok(Some(self.build_unmatched(&self.table.row(i)?)));
                            }
                        }
                    }
                    let Phase::Unmatched { after, .. } = std::mem::replace(&mut self.phase, Phase::Done) else { unreachable!() };
                    match after {
                        After::NextChunk(file) => {
                            let last = self.load_chunk(ctx)?;
                            self.phase = Phase::Pass { file, first: false, last, ordinal: 0 };
                        }
                        After::NextBatch => {
                            self.table.clear();
                            if !self.next_batch(ctx)? {
                                match self.null_build.take() {
                                    Some(mut f) => {
                                        f.rewind()?;
                                        self.phase = Phase::NullBuild(f);
                                    }
                                    None => self.phase = Phase::Done,
                                }
                            }
                        }
                    }
                }
                Phase::NullBuild(f) => match read_row(f, &mut self.scratch)? {
                    Some(r) => return Ok(Some(self.build_unmatched(&r))),
                    None => self.phase = Phase::Done,
                },
            }
        }
    }
}
