//! Set operations (UNION, INTERSECT, EXCEPT [ALL]) and WITH RECURSIVE.
//!
//! A set operation is the source of a query whose targets are its columns, so
//! ORDER BY, LIMIT and OFFSET on the whole result run as for any query. UNION
//! ALL streams the left rows, then the right ones. The others sort the rows of
//! both inputs on every column ([`crate::sort::Sorter`]: within `work_mem`,
//! spilling runs to temporary files beyond it; rows compare as GROUP BY
//! compares them, NULLs equal and last) and read each run of equal rows once;
//! for INTERSECT and EXCEPT each row carries its side (0 left, 1 right) as an
//! extra last column, so a run counts m left and n right rows. Without ALL each
//! distinct row comes out once, in the rows' sort order (PostgreSQL's order
//! then depends on its plan: only ORDER BY fixes it); INTERSECT ALL a row
//! min(m, n) times, EXCEPT ALL max(m - n, 0) times. PostgreSQL sorts (SetOp)
//! or hashes (HashSetOp, spilling since 13); this is its sorted strategy.
//!
//! WITH RECURSIVE (`base UNION [ALL] step`): the base rows form the first
//! working table; the step query, which reads the working table
//! ([`Source::WorkTable`]), is run over it to give the next one, until it is
//! empty; the result is every working table's rows. With UNION (no ALL), rows
//! already produced are dropped from each new working table, so a cycle ends.
//! The working tables of running recursive queries live in a per-thread map
//! keyed by the CTE's id (a session runs on one thread). Not within `work_mem`
//! yet: the working tables, the rows already produced (for UNION) and the
//! result are held in memory.

use ferrogres_datum::errors::{Result, SqlError};
use crate::exec::{Ctx, RowIter, Ticker};
use crate::grouping::Key;
use crate::plan::{Query, SortKey};
use crate::sort::{Sorted, Sorter};
use crate::subquery::collect;
use ferrogres_datum::types::Value;
use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::rc::Rc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetOpKind {
    Union,
    Intersect,
    Except,
}

#[derive(Clone, Debug)]
pub struct SetOp {
    pub kind: SetOpKind,
    pub all: bool,
    pub left: Query,
    pub right: Query,
}

#[derive(Clone, Debug)]
pub struct Recursive {
    /// The id its step's [`crate::plan::Source::WorkTable`] reads.
    pub id: u64,
    pub base: Query,
    pub step: Query,
    pub all: bool,
}

thread_local! {
    static WORK_TABLES: RefCell<HashMap<u64, Rc<Vec<Vec<Value>>>>> = RefCell::new(HashMap::new());
}

/// A fresh id for a recursive CTE.
pub fn next_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    // Relaxed: only uniqueness matters.
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Sets working table `id` (a data-modifying CTE's RETURNING rows, [`crate::cte_dml`]).
pub fn set_work_table(id: u64, rows: Vec<Vec<Value>>) {
    WORK_TABLES.with(|w| w.borrow_mut().insert(id, Rc::new(rows)));
}

/// Forgets working table `id`.
pub fn remove_work_table(id: u64) {
    WORK_TABLES.with(|w| w.borrow_mut().remove(&id));
}

/// The current working table of recursive CTE `id`.
pub fn work_table(id: u64) -> Result<Vec<Vec<Value>>> {
    WORK_TABLES.with(|w| w.borrow().get(&id).map(|r| (**r).clone())).ok_or_else(|| SqlError::internal("working table read outside its recursive query"))
}

pub fn run(s: &SetOp, ctx: &mut Ctx) -> Result<Box<dyn RowIter>> {
    let left = crate::exec::run_query(&s.left, ctx)?;
    if s.kind == SetOpKind::Union && s.all {
        // UNION ALL streams: the left rows, then the right ones.
        let right = crate::exec::run_query(&s.right, ctx)?;
        return Ok(Box::new(Chain { first: Some(left), second: right }));
    }
    // The others sort both inputs' rows (within work_mem, spilling beyond it:
    // crate::sort) and read each run of equal rows once; for INTERSECT and
    // EXCEPT each row carries the side it came from as a last column.
    let tagged = s.kind != SetOpKind::Union;
    let mem = crate::sort::sort_mem(ctx)?;
    let mut sorter: Option<Sorter> = None;
    let mut width = 0;
    for (side, mut input) in [(0, left), (1, crate::exec::run_query(&s.right, ctx)?)] {
        while let Some(mut r) = input.next(ctx)? {
            if sorter.is_none() {
                width = r.len();
                let keys = (0..width).map(|column| SortKey { column, desc: false, nulls_first: false }).collect();
                sorter = Some(Sorter::new(keys, None, mem.clone()));
            }
            if tagged {
                r.push(Value::Int4(side));
            }
            sorter.as_mut().expect("made above").put(r, &*ctx.env)?;
        }
    }
    let Some(sorter) = sorter else { return Ok(Box::new(crate::exec::rows_iter(Vec::new()))) };
    let (sorted, _) = sorter.finish(&*ctx.env)?;
    Ok(Box::new(Groups { sorted, kind: s.kind, all: s.all, width, tagged, next: None, repeat: None, tick: Ticker::default() }))
}

struct Chain {
    first: Option<Box<dyn RowIter>>,
    second: Box<dyn RowIter>,
}

impl RowIter for Chain {
    fn next(&mut self, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        if let Some(f) = &mut self.first {
            if let Some(r) = f.next(ctx)? {
                return Ok(Some(r));
            }
            self.first = None;
        }
        self.second.next(ctx)
    }
}

/// The sorted rows of a set operation, a run of equal rows at a time.
struct Groups {
    sorted: Sorted,
    kind: SetOpKind,
    all: bool,
    width: usize,
    tagged: bool,
    /// The first row of the next run, read ahead.
    next: Option<Vec<Value>>,
    /// A row still to be returned this many more times.
    repeat: Option<(Vec<Value>, usize)>,
    tick: Ticker,
}

fn same_row(a: &[Value], b: &[Value], width: usize) -> bool {
    a[..width].iter().zip(&b[..width]).all(|(x, y)| crate::exec::compare_key(x, y, false, false) == std::cmp::Ordering::Equal)
}

impl RowIter for Groups {
    fn next(&mut self, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        loop {
            self.tick.tick(&*ctx.env)?;
            if let Some((row, n)) = &mut self.repeat {
                if *n > 1 {
                    *n -= 1;
                    return Ok(Some(row.clone()));
                }
                return Ok(self.repeat.take().map(|(r, _)| r));
            }
            let first = match self.next.take() {
                Some(r) => r,
                None => match self.sorted.next_row(&*ctx.env)? {
                    Some(r) => r,
                    None => return Ok(None),
                },
            };
            let (tagged, width) = (self.tagged, self.width);
            let (mut m, mut n) = (0usize, 0usize);
            // The right side's rows carry 1 as their last column.
            let count = |r: &[Value], m: &mut usize, n: &mut usize| {
                if tagged && matches!(r.last(), Some(Value::Int4(1))) {
                    *n += 1
                } else {
                    *m += 1
                }
            };
            count(first.as_slice(), &mut m, &mut n);
            loop {
                self.tick.tick(&*ctx.env)?;
                match self.sorted.next_row(&*ctx.env)? {
                    Some(r) if same_row(&first, &r, width) => count(r.as_slice(), &mut m, &mut n),
                    other => {
                        self.next = other;
                        break;
                    }
                }
            }
            let times = match (self.kind, self.all) {
                (SetOpKind::Union, _) => 1,
                (SetOpKind::Intersect, true) => m.min(n),
                (SetOpKind::Intersect, false) => usize::from(m > 0 && n > 0),
                (SetOpKind::Except, true) => m.saturating_sub(n),
                (SetOpKind::Except, false) => usize::from(m > 0 && n == 0),
            };
            if times > 0 {
                let mut row = first;
                row.truncate(width);
                self.repeat = Some((row, times));
            }
        }
    }
}

pub fn run_recursive(r: &Recursive, ctx: &mut Ctx) -> Result<Box<dyn RowIter>> {
    let mut seen: BTreeSet<Key> = BTreeSet::new();
    let mut work: Vec<Vec<Value>> = Vec::new();
    for row in collect(&r.base, ctx)? {
        if r.all || seen.insert(Key(row.clone())) {
            work.push(row);
        }
    }
    let mut result = work.clone();
    let before = WORK_TABLES.with(|w| w.borrow().get(&r.id).cloned());
    let outcome = (|| -> Result<()> {
        while !work.is_empty() {
            ctx.env.check_interrupts()?;
            WORK_TABLES.with(|w| w.borrow_mut().insert(r.id, Rc::new(std::mem::take(&mut work))));
            for row in collect(&r.step, ctx)? {
                if r.all || seen.insert(Key(row.clone())) {
                    work.push(row);
                }
            }
            result.extend(work.iter().cloned());
        }
        Ok(())
    })();
    WORK_TABLES.with(|w| {
        let mut w = w.borrow_mut();
        match before {
            Some(b) => w.insert(r.id, b),
            None => w.remove(&r.id),
        }
    });
    outcome?;
    Ok(Box::new(crate::exec::rows_iter(result)))
}
