//! Joins: the execution of [`Source::Join`] and the planning that places the
//! conditions of a FROM tree.
//!
//! A join's row is its left input's row followed by its right input's row
//! (`lw + rw` values); a NULL-extended row has NULLs for the missing side.
//! The smaller input (the build side, found by reading both inputs in turn
//! until one ends: [`StreamJoin`]) is held in memory; the other (the probe
//! side) and the result stream. Then
//!
//! - with equality conditions between an expression of the left row and one
//!   of the right row (`hash` keys), a hash join: the build rows indexed by
//!   their key values (an ordered map compared as [`crate::exec::compare`]
//!   compares; a NULL key matches nothing), probed with each probe row;
//! - otherwise a nested loop over the build rows;
//! - a LATERAL right input (it reads the left row) is run again for each left
//!   row, with the left row bound into it ([`crate::subquery::bind_outer`]).
//!
//! In all, `cond` (the rest of the ON condition) decides whether a pair
//! matches; LEFT/FULL emit an unmatched left row NULL-extended, RIGHT/FULL
//! an unmatched right row (at once from the probe side, at the end from the
//! build side). Semi- and anti-joins always build on the right ([`SemiJoin`]).
//! The build side is not yet spilled past `work_mem`: the statement's memory
//! accounting bounds it (53200).
//!
//! Planning ([`place_conditions`]): WHERE conjuncts of an inner join or a
//! cross join that read one input only move into that input's filter (so a
//! table input keeps its index scans, [`crate::index::scan_table`]), those
//! that read both become join conditions; an outer join's ON conjuncts that
//! read only its nullable side filter that side. Equalities across the two
//! sides become hash keys.

use ferrogres_datum::errors::Result;
use crate::exec::{eval_pure, Ctx, RowIter, Ticker};
use crate::grouping::Key;
use crate::plan::{CmpOp, Expr, Source};
use crate::subquery::{columns_read, has_subplan, map_columns, shift_columns};
use ferrogres_datum::types::Value;
use std::collections::BTreeMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JoinKind {
    Inner,
    Left,
    Right,
    Full,
    /// A semi-join (from `EXISTS` / `IN` in WHERE, [`crate::prep`]): each left
    /// row once if some right row matches; the row is the left row alone.
    Semi,
    /// An anti-join (from `NOT EXISTS`): each left row that no right row
    /// matches; the row is the left row alone.
    Anti,
}

impl JoinKind {
    /// Semi- and anti-joins return the left row only (`lw` columns).
    pub fn left_only(self) -> bool {
        matches!(self, JoinKind::Semi | JoinKind::Anti)
    }
}

#[derive(Clone, Debug)]
pub struct Join {
    pub kind: JoinKind,
    pub left: Source,
    pub right: Source,
    /// Applied to each left (right) input row before joining (over that input's row).
    pub left_filter: Option<Expr>,
    pub right_filter: Option<Expr>,
    /// The join condition over the joined row (None: every pair matches).
    pub cond: Option<Expr>,
    /// Hash keys: left expressions over the left row, right ones over the right row.
    pub hash: Option<(Vec<Expr>, Vec<Expr>)>,
    pub lw: usize,
    pub rw: usize,
    /// The right input is a LATERAL subquery: re-run per left row.
    pub lateral: bool,
    /// The method and estimates the join search chose ([`crate::optimizer`]).
    pub plan: crate::optimizer::JoinPlan,
}

/// Rows of one join input, filtered.
fn input_rows(s: &Source, filter: &Option<Expr>, ctx: &mut Ctx) -> Result<Vec<Vec<Value>>> {
    let rows: Vec<Vec<Value>> = match s {
        Source::Table(t) => crate::index::scan_table(t, filter.as_ref(), ctx)?.into_iter().map(|r| r.1).collect(),
        other => {
            let mut it = crate::exec::source_rows(other, ctx)?;
            crate::exec::drain(&mut it, ctx)?
        }
    };
    crate::explain::count(crate::explain::key(s), crate::explain::Stage::Scan, rows.len() as u64);
    let Some(f) = filter else { return Ok(rows) };
    let mut out = Vec::with_capacity(rows.len());
    let mut t = Ticker::default();
    for r in rows {
        t.tick(&*ctx.env)?;
        let params = ctx.params;
        if eval_pure(f, &r, params, &[], ctx)? == Value::Bool(true) {
            out.push(r);
        }
    }
    crate::explain::count(crate::explain::key(s), crate::explain::Stage::Filter, out.len() as u64);
    Ok(out)
}

fn keys_of(exprs: &[Expr], row: &[Value], ctx: &mut Ctx) -> Result<Option<Key>> {
    let mut k = Vec::with_capacity(exprs.len());
    for e in exprs {
        let params = ctx.params;
        let v = eval_pure(e, row, params, &[], ctx)?;
        if v.is_null() {
            return Ok(None);
        }
        k.push(v);
    }
    Ok(Some(Key(k)))
}

/// Runs a join to its rows: streaming its left input and its result (but for a
/// LATERAL join, run per left row over the materialized left input).
pub fn run(j: &Join, ctx: &mut Ctx) -> Result<Box<dyn RowIter>> {
    if let crate::optimizer::JoinMethod::ParamIndex { index } = j.plan.method {
        if let Some(it) = crate::nestloop::start(j, index, ctx)? {
            return Ok(it);
        }
    }
    if j.kind.left_only() && !j.lateral {
        return SemiJoin::start(j, ctx);
    }
    if j.lateral {
        let left = input_rows(&j.left, &j.left_filter, ctx)?;
        let mut out = Vec::new();
        let null_right = vec![Value::Null; j.rw];
        // One tick per pair of rows considered: a nested loop polls as often
        // as it works, whatever the sizes of its inputs.
        let mut t = Ticker::default();
        for l in left {
            t.tick(&*ctx.env)?;
            let Source::Subquery(q) = &j.right else { return Err(ferrogres_datum::errors::SqlError::internal("LATERAL input is not a subquery")) };
            let mut q = (**q).clone();
            crate::subquery::bind_outer(&mut q, &l, &[]);
            let rights = input_rows(&Source::Subquery(Box::new(q)), &j.right_filter, ctx)?;
            let mut matched = false;
            for r in &rights {
                t.tick(&*ctx.env)?;
                let row = concat(&l, r);
                if passes(&j.cond, &row, ctx)? {
                    matched = true;
                    out.push(row);
                }
            }
            if !matched && matches!(j.kind, JoinKind::Left | JoinKind::Full) {
                out.push(concat(&l, &null_right));
            }
        }
        return Ok(Box::new(crate::exec::rows_iter(out)));
    }
    StreamJoin::start(j, ctx)
}

/// One input of a [`StreamJoin`] as it streams: its rows that pass its filter.
struct Input {
    rows: Box<dyn RowIter>,
    filter: Option<Expr>,
    /// EXPLAIN's key of the input.
    key: usize,
    done: bool,
}

impl Input {
    fn open(s: &Source, filter: &Option<Expr>, ctx: &mut Ctx) -> Result<Input> {
        let rows = match s {
            Source::Table(t) => crate::exec::table_rows(t, filter.as_ref(), ctx)?,
            other => crate::exec::source_rows(other, ctx)?,
        };
        let key = crate::explain::key(s);
        let rows = crate::explain::wrap(rows, key, crate::explain::Stage::Scan);
        Ok(Input { rows, filter: filter.clone(), key, done: false })
    }

    fn next(&mut self, tick: &mut Ticker, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
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
            return Ok(Some(r));
        }
        self.done = true;
        Ok(None)
    }
}

/// A probe row and the build rows it is being paired with: their positions,
/// and how far through them it is.
struct Probe {
    row: Vec<Value>,
    /// `None`: every build row is a candidate (a nested loop).
    cands: Option<Vec<usize>>,
    pos: usize,
    matched: bool,
}

/// An inner or outer join that is not LATERAL. One input, the build side, is
/// held in memory (keyed by its hash keys when there are some); the other, the
/// probe side, streams through it, and the joined rows stream out. Neither the
/// probe input nor the result is ever held.
///
/// The build side is the smaller input, found by reading both inputs a row at
/// a time in turn until one ends (PostgreSQL hashes the smaller side too, by
/// its estimates): the one that ended is the build side, and the rows already
/// read of the other are probed first. Memory is then at most twice the
/// smaller input, whatever the larger one's size. A probe row that nothing
/// matched is NULL-extended at once when its side is the preserved side of an
/// outer join; the build rows nothing matched are NULL-extended after the last
/// probe row. A joined row is always the left row followed by the right row.
struct StreamJoin {
    cond: Option<Expr>,
    lw: usize,
    rw: usize,
    /// Which input the build rows come from.
    build_is_left: bool,
    build: Vec<Vec<Value>>,
    /// The probe side's hash keys and the build rows keyed by theirs.
    index: Option<(Vec<Expr>, KeyIndex)>,
    /// Whether each build row matched (only when the build side is preserved).
    build_matched: Vec<bool>,
    /// An unmatched probe row is NULL-extended (its side is preserved).
    probe_preserved: bool,
    probe_input: Input,
    /// Probe rows read while choosing the build side, probed first.
    pending: std::collections::VecDeque<Vec<Value>>,
    probe: Option<Probe>,
    /// The next build row to check for a match once the probe side is done.
    unmatched_at: usize,
    tick: Ticker,
}

impl StreamJoin {
    fn start(j: &Join, ctx: &mut Ctx) -> Result<Box<dyn RowIter>> {
        let mut tick = Ticker::default();
        let mut left = Input::open(&j.left, &j.left_filter, ctx)?;
        let mut right = Input::open(&j.right, &j.right_filter, ctx)?;
        let (mut lrows, mut rrows) = (Vec::new(), Vec::new());
        while !left.done && !right.done {
            if let Some(r) = left.next(&mut tick, ctx)? {
                lrows.push(r);
            }
            if let Some(r) = right.next(&mut tick, ctx)? {
                rrows.push(r);
            }
        }
        // Both ended together: the smaller one (the right one on a tie).
        let build_is_left = if left.done && right.done { lrows.len() < rrows.len() } else { left.done };
        let (build, pending, probe_input) = if build_is_left { (lrows, rrows, right) } else { (rrows, lrows, left) };
        let index = match &j.hash {
            Some((lk, rk)) => {
                let (bk, pk) = if build_is_left { (lk, rk) } else { (rk, lk) };
                Some((pk.clone(), index_rows(bk, &build, &mut tick, ctx)?))
            }
            None => None,
        };
        let left_preserved = matches!(j.kind, JoinKind::Left | JoinKind::Full);
        let right_preserved = matches!(j.kind, JoinKind::Right | JoinKind::Full);
        let (build_preserved, probe_preserved) =
            if build_is_left { (left_preserved, right_preserved) } else { (right_preserved, left_preserved) };
        Ok(Box::new(StreamJoin {
            cond: j.cond.clone(),
            lw: j.lw,
            rw: j.rw,
            build_is_left,
            build_matched: if build_preserved { vec![false; build.len()] } else { Vec::new() },
            build,
            index,
            probe_preserved,
            probe_input,
            pending: pending.into(),
            probe: None,
            unmatched_at: 0,
            tick,
        }))
    }

    /// The joined row of a probe row and a build row.
    fn pair(&self, probe: &[Value], build: &[Value]) -> Vec<Value> {
        if self.build_is_left {
            concat(build, probe)
        } else {
            concat(probe, build)
        }
    }

    fn start_probe(&self, row: Vec<Value>, ctx: &mut Ctx) -> Result<Probe> {
        let cands = match &self.index {
            Some((pk, map)) => Some(match keys_of(pk, &row, ctx)? {
                Some(k) => map.get(&k).cloned().unwrap_or_default(),
                None => Vec::new(),
            }),
            None => None,
        };
        Ok(Probe { row, cands, pos: 0, matched: false })
    }
}

impl RowIter for StreamJoin {
    fn next(&mut self, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        loop {
            if let Some(mut p) = self.probe.take() {
                let n = p.cands.as_ref().map_or(self.build.len(), |c| c.len());
                while p.pos < n {
                    self.tick.tick(&*ctx.env)?;
                    let i = p.cands.as_ref().map_or(p.pos, |c| c[p.pos]);
                    p.pos += 1;
                    let row = self.pair(&p.row, &self.build[i]);
                    if passes(&self.cond, &row, ctx)? {
                        p.matched = true;
                        if let Some(m) = self.build_matched.get_mut(i) {
                            *m = true;
                        }
                        self.probe = Some(p);
                        return Ok(Some(row));
                    }
                }
                if !p.matched && self.probe_preserved {
                    let row = if self.build_is_left {
                        concat(&vec![Value::Null; self.lw], &p.row)
                    } else {
                        concat(&p.row, &vec![Value::Null; self.rw])
                    };
                    return Ok(Some(row));
                }
            }
            let row = match self.pending.pop_front() {
                Some(r) => Some(r),
                None => self.probe_input.next(&mut self.tick, ctx)?,
            };
            match row {
                Some(r) => self.probe = Some(self.start_probe(r, ctx)?),
                None => break,
            }
        }
        // The build rows nothing matched, when their side is preserved.
        while self.unmatched_at < self.build_matched.len() {
            let i = self.unmatched_at;
            self.unmatched_at += 1;
            if !self.build_matched[i] {
                let b = &self.build[i];
                let row = if self.build_is_left {
                    concat(b, &vec![Value::Null; self.rw])
                } else {
                    concat(&vec![Value::Null; self.lw], b)
                };
                return Ok(Some(row));
            }
        }
        Ok(None)
    }
}

/// The right rows of a join indexed by their hash-key values (a NULL key
/// matches nothing, so such rows are left out).
type KeyIndex = BTreeMap<Key, Vec<usize>>;

fn index_rows(rk: &[Expr], right: &[Vec<Value>], t: &mut Ticker, ctx: &mut Ctx) -> Result<KeyIndex> {
    let mut map: KeyIndex = BTreeMap::new();
    for (i, r) in right.iter().enumerate() {
        t.tick(&*ctx.env)?;
        if let Some(k) = keys_of(rk, r, ctx)? {
            map.entry(k).or_default().push(i);
        }
    }
    Ok(map)
}

/// A semi- or anti-join: the right input is read once into a table keyed by
/// its hash keys (the only rows kept in memory, counted by the statement's
/// memory accounting like every allocation); the left input streams through
/// it. A left row is returned (semi) or dropped (anti) at its first right row
/// that has equal keys and passes `cond`, so duplicates on the right never
/// duplicate a left row. Without hash keys every right row is a candidate
/// (a nested loop over the kept rows). A left row with a NULL key matches
/// nothing: a semi-join drops it, an anti-join returns it, as `EXISTS` /
/// `NOT EXISTS` over `inner.k = outer.k` do.
struct SemiJoin {
    left: Box<dyn RowIter>,
    left_filter: Option<Expr>,
    left_key: usize,
    right: Vec<Vec<Value>>,
    /// `None`: no hash keys, every right row is a candidate.
    index: Option<(Vec<Expr>, KeyIndex)>,
    cond: Option<Expr>,
    anti: bool,
    tick: Ticker,
}

impl SemiJoin {
    fn start(j: &Join, ctx: &mut Ctx) -> Result<Box<dyn RowIter>> {
        let mut tick = Ticker::default();
        let (right, rk, cond) = Self::right_side(j, &mut tick, ctx)?;
        let index = match (&j.hash, rk) {
            (Some((lk, _)), Some(rk)) => Some((lk.clone(), index_rows(&rk, &right, &mut tick, ctx)?)),
            _ => None,
        };
        let left = match &j.left {
            Source::Table(t) => crate::exec::table_rows(t, j.left_filter.as_ref(), ctx)?,
            other => crate::exec::source_rows(other, ctx)?,
        };
        let left_key = crate::explain::key(&j.left);
        let left = crate::explain::wrap(left, left_key, crate::explain::Stage::Scan);
        Ok(Box::new(SemiJoin {
            left,
            left_filter: j.left_filter.clone(),
            left_key,
            right,
            index,
            cond,
            anti: j.kind == JoinKind::Anti,
            tick,
        }))
    }

    /// The right input's rows that pass its filter, each cut down to the
    /// columns the hash keys and the condition read (TPC-H Q21 keeps two of
    /// lineitem's 16 columns); with the keys and the condition renumbered
    /// to read the kept columns.
    #[allow(clippy::type_complexity)]
    fn right_side(j: &Join, tick: &mut Ticker, ctx: &mut Ctx) -> Result<(Vec<Vec<Value>>, Option<Vec<Expr>>, Option<Expr>)> {
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
        let rk = j.hash.as_ref().map(|(_, rk)| {
            rk.iter()
                .map(|e| {
                    let mut e = e.clone();
                    map_columns(&mut e, &pos);
                    e
                })
                .collect::<Vec<_>>()
        });
        let cond = j.cond.as_ref().map(|c| {
            let mut c = c.clone();
            map_columns(&mut c, &|i| if i >= lw { lw + pos(i - lw) } else { i });
            c
        });
        let key = crate::explain::key(&j.right);
        let input = match &j.right {
            Source::Table(t) => crate::exec::table_rows(t, j.right_filter.as_ref(), ctx)?,
            other => crate::exec::source_rows(other, ctx)?,
        };
        let mut input = crate::explain::wrap(input, key, crate::explain::Stage::Scan);
        let mut rows = Vec::new();
        while let Some(r) = input.next(ctx)? {
            tick.tick(&*ctx.env)?;
            if j.right_filter.is_some() {
                if !passes(&j.right_filter, &r, ctx)? {
                    continue;
                }
                crate::explain::count_row(key, crate::explain::Stage::Filter);
            }
            rows.push(used.iter().map(|&i| r.get(i).cloned().unwrap_or(Value::Null)).collect());
        }
        Ok((rows, rk, cond))
    }

    /// Whether some right row matches `l`.
    fn matches(&mut self, l: &[Value], ctx: &mut Ctx) -> Result<bool> {
        let cands: Option<&[usize]> = match &self.index {
            Some((lk, map)) => match keys_of(lk, l, ctx)? {
                Some(k) => Some(map.get(&k).map_or(&[][..], |v| v.as_slice())),
                None => return Ok(false),
            },
            None => None,
        };
        let n = cands.map_or(self.right.len(), |c| c.len());
        if self.cond.is_none() {
            return Ok(n > 0);
        }
        for c in 0..n {
            self.tick.tick(&*ctx.env)?;
            let i = cands.map_or(c, |cs| cs[c]);
            let row = concat(l, &self.right[i]);
            if passes(&self.cond, &row, ctx)? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

impl RowIter for SemiJoin {
    fn next(&mut self, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        while let Some(l) = self.left.next(ctx)? {
            self.tick.tick(&*ctx.env)?;
            if self.left_filter.is_some() {
                if !passes(&self.left_filter, &l, ctx)? {
                    continue;
                }
                crate::explain::count_row(self.left_key, crate::explain::Stage::Filter);
            }
            if self.matches(&l, ctx)? != self.anti {
                return Ok(Some(l));
            }
        }
        Ok(None)
    }
}

fn concat(l: &[Value], r: &[Value]) -> Vec<Value> {
    let mut row = Vec::with_capacity(l.len() + r.len());
    row.extend_from_slice(l);
    row.extend_from_slice(r);
    row
}

fn passes(cond: &Option<Expr>, row: &[Value], ctx: &mut Ctx) -> Result<bool> {
    Ok(match cond {
        Some(c) => {
            let params = ctx.params;
            eval_pure(c, row, params, &[], ctx)? == Value::Bool(true)
        }
        None => true,
    })
}

/// Splits a condition into its AND-ed conjuncts.
pub fn conjuncts(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::And(v) => v.into_iter().for_each(|c| conjuncts(c, out)),
        e => out.push(e),
    }
}

pub(crate) fn and_of(mut v: Vec<Expr>) -> Option<Expr> {
    match v.len() {
        0 => None,
        1 => v.pop(),
        _ => Some(Expr::And(v)),
    }
}

fn add_filter(f: &mut Option<Expr>, e: Expr) {
    *f = Some(match f.take() {
        None => e,
        Some(Expr::And(mut v)) => {
            v.push(e);
            Expr::And(v)
        }
        Some(other) => Expr::And(vec![other, e]),
    });
}

/// Places the conditions of `source` (and the query's WHERE `filter` over its
/// row): returns the WHERE conjuncts that must stay above it.
pub fn place_conditions(source: &mut Source, filter: Option<Expr>) -> Option<Expr> {
    let mut quals = Vec::new();
    if let Some(f) = filter {
        crate::prep::conjuncts_factored(f, &mut quals);
    }
    let Source::Join(j) = source else { return and_of(quals) };
    let (lw, rw) = (j.lw, j.rw);
    let side = |e: &Expr| -> (bool, bool) {
        let cols = columns_read(e);
        (cols.iter().any(|c| *c < lw), cols.iter().any(|c| *c >= lw && *c < lw + rw))
    };
    let mut keep = Vec::new();
    // WHERE conjuncts.
    for q in quals {
        if has_subplan(&q) {
            keep.push(q);
            continue;
        }
        let (l, r) = side(&q);
        match (l, r, j.kind) {
            // A WHERE conjunct over a semi- or anti-join reads its left row only.
            (true, false, JoinKind::Inner | JoinKind::Left | JoinKind::Semi | JoinKind::Anti) => add_filter(&mut j.left_filter, q),
            (false, true, JoinKind::Inner | JoinKind::Right) if !j.lateral => {
                let mut q = q;
                shift_columns(&mut q, -(lw as isize));
                add_filter(&mut j.right_filter, q)
            }
            (true, true, JoinKind::Inner) => add_filter(&mut j.cond, q),
            _ => keep.push(q),
        }
    }
    // ON conjuncts that read one side only.
    if let Some(c) = j.cond.take() {
        let mut cs = Vec::new();
        crate::prep::conjuncts_factored(c, &mut cs);
        let mut rest = Vec::new();
        for q in cs {
            if has_subplan(&q) {
                rest.push(q);
                continue;
            }
            let (l, r) = side(&q);
            match (l, r, j.kind) {
                // Not for an anti-join: a left row its condition rejects is
                // still returned (nothing matched it).
                (true, false, JoinKind::Inner | JoinKind::Right | JoinKind::Semi) => add_filter(&mut j.left_filter, q),
                (false, true, JoinKind::Inner | JoinKind::Left | JoinKind::Semi | JoinKind::Anti) if !j.lateral => {
                    let mut q = q;
                    shift_columns(&mut q, -(lw as isize));
                    add_filter(&mut j.right_filter, q)
                }
                _ => rest.push(q),
            }
        }
        // Hash keys: `left expr = right expr`.
        let mut lk = Vec::new();
        let mut rk = Vec::new();
        let mut residual = Vec::new();
        for q in rest {
            if let Expr::Compare { op: CmpOp::Eq, l, r } = &q {
                if !j.lateral && !has_subplan(&q) {
                    let (ll, lr) = side(l);
                    let (rl, rr) = side(r);
                    let pair = if ll && !lr && rr && !rl {
                        Some(((**l).clone(), (**r).clone()))
                    } else if lr && !ll && rl && !rr {
                        Some(((**r).clone(), (**l).clone()))
                    } else {
                        None
                    };
                    if let Some((a, mut b)) = pair {
                        shift_columns(&mut b, -(lw as isize));
                        lk.push(a);
                        rk.push(b);
                        continue;
                    }
                }
            }
            residual.push(q);
        }
        if !lk.is_empty() && j.plan.method == crate::optimizer::JoinMethod::NestLoop {
            // The optimizer chose a nested loop (enable_hashjoin off): the
            // equalities stay in the condition.
            for (a, mut b) in lk.into_iter().zip(rk) {
                shift_columns(&mut b, lw as isize);
                residual.push(Expr::Compare { op: CmpOp::Eq, l: Box::new(a), r: Box::new(b) });
            }
        } else if !lk.is_empty() {
            j.hash = Some((lk, rk));
        }
        j.cond = and_of(residual);
    }
    // Inputs that are joins themselves.
    let lf = j.left_filter.take();
    j.left_filter = place_conditions(&mut j.left, lf);
    let rf = j.right_filter.take();
    j.right_filter = place_conditions(&mut j.right, rf);
    and_of(keep)
}
