//! Set operations (UNION, INTERSECT, EXCEPT [ALL]) and WITH RECURSIVE.
//!
//! A set operation is the source of a query whose targets are its columns, so
//! ORDER BY, LIMIT and OFFSET on the whole result run as for any query. Both
//! inputs are run to completion; rows compare as GROUP BY compares them (NULLs
//! equal: [`crate::grouping::Key`]). Without ALL each distinct row comes out
//! once, in the rows' sort order (PostgreSQL's order then depends on its plan:
//! only ORDER BY fixes it); UNION ALL gives the left rows then the right ones;
//! INTERSECT ALL a row min(m, n) times, EXCEPT ALL max(m - n, 0) times.
//!
//! WITH RECURSIVE (`base UNION [ALL] step`): the base rows form the first
//! working table; the step query, which reads the working table
//! ([`Source::WorkTable`]), is run over it to give the next one, until it is
//! empty; the result is every working table's rows. With UNION (no ALL), rows
//! already produced are dropped from each new working table, so a cycle ends.
//! The working tables of running recursive queries live in a per-thread map
//! keyed by the CTE's id (a session runs on one thread).

use ferrogres_datum::errors::{Result, SqlError};
use crate::exec::{Ctx, RowIter};
use crate::grouping::Key;
use crate::plan::Query;
use crate::subquery::collect;
use ferrogres_datum::types::Value;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
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
    let left = collect(&s.left, ctx)?;
    let right = collect(&s.right, ctx)?;
    let out = match (s.kind, s.all) {
        (SetOpKind::Union, true) => left.into_iter().chain(right).collect(),
        (SetOpKind::Union, false) => {
            let set: BTreeSet<Key> = left.into_iter().chain(right).map(Key).collect();
            set.into_iter().map(|k| k.0).collect()
        }
        (kind, all) => {
            let mut counts: BTreeMap<Key, (usize, usize)> = BTreeMap::new();
            for r in left {
                counts.entry(Key(r)).or_default().0 += 1;
            }
            for r in right {
                if let Some(c) = counts.get_mut(&Key(r)) {
                    c.1 += 1;
                }
            }
            let mut out = Vec::new();
            for (k, (m, n)) in counts {
                let times = match (kind, all) {
                    (SetOpKind::Intersect, true) => m.min(n),
                    (SetOpKind::Intersect, false) => usize::from(n > 0),
                    (_, true) => m.saturating_sub(n),
                    (_, false) => usize::from(n == 0),
                };
                for _ in 0..times {
                    out.push(k.0.clone());
                }
            }
            out
        }
    };
    Ok(Box::new(crate::exec::rows_iter(out)))
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
