//! `MERGE INTO t USING s ON cond WHEN MATCHED [AND ...] THEN UPDATE SET ... |
//! DELETE | DO NOTHING WHEN NOT MATCHED [AND ...] THEN INSERT ... | DO NOTHING`
//! (PostgreSQL 15).
//!
//! The source is read once; for each source row, the target rows (as the
//! statement's snapshot sees them) satisfying `cond` over `target ++ source`
//! are its matches. Each match runs the first WHEN MATCHED clause whose
//! condition holds; a source row without matches runs the first WHEN NOT
//! MATCHED clause whose condition holds (over `NULLs ++ source`). A target row
//! changed (updated or deleted) twice by the statement is 21000, as in
//! PostgreSQL. In READ COMMITTED a target row changed meanwhile by a committed
//! transaction is re-checked on its newest version: if it still satisfies
//! `cond`, the WHEN MATCHED clauses are evaluated again for it; otherwise the
//! source row does nothing (PostgreSQL 15 would try its NOT MATCHED clauses).

use crate::catalog::Table;
use ferrogres_datum::errors::{Result, SqlError};
use crate::exec::{eval_pure, newest_qualifying, source_rows, Ctx};
use crate::plan::{Expr, Source};
use ferrogres_datum::types::Value;
use ferrogres_engine::heap::heapam::{self, WaitPolicy};
use ferrogres_engine::heap::tuple::Tid;
use std::collections::HashSet;

#[derive(Clone, Debug)]
pub enum MergeAction {
    /// (column, value over `target ++ source`).
    Update(Vec<(usize, Expr)>),
    Delete,
    Nothing,
    /// One expression per target column, over `NULLs ++ source`.
    Insert(Vec<Expr>),
}

#[derive(Clone, Debug)]
pub struct WhenClause {
    pub cond: Option<Expr>,
    pub action: MergeAction,
}

#[derive(Clone, Debug)]
pub struct Merge {
    pub table: Table,
    pub source: Source,
    /// The ON condition over `target ++ source`.
    pub on: Expr,
    pub matched: Vec<WhenClause>,
    pub not_matched: Vec<WhenClause>,
}

fn holds(e: Option<&Expr>, row: &[Value], ctx: &mut Ctx) -> Result<bool> {
    Ok(match e {
        Some(e) => {
            let params = ctx.params;
            eval_pure(e, row, params, &[], ctx)? == Value::Bool(true)
        }
        None => true,
    })
}

fn second_time() -> SqlError {
    SqlError::new(b"21000", "MERGE command cannot affect row a second time")
        .with_hint("Ensure that not more than one source row matches any one target row.")
}

/// Runs the statement: the number of rows inserted, updated or deleted.
pub fn execute(m: &Merge, ctx: &mut Ctx) -> Result<u64> {
    let table = &m.table;
    let n_cols = table.columns.len();
    let mut sources = Vec::new();
    let mut it = source_rows(&m.source, ctx)?;
    while let Some(r) = it.next(ctx)? {
        sources.push(r);
    }
    drop(it);
    let targets = if m.matched.is_empty() && m.not_matched.is_empty() { Vec::new() } else { crate::index::scan_table(table, None, ctx)? };
    let mut changed: HashSet<Tid> = HashSet::new();
    let mut n = 0;
    for s in &sources {
        ctx.env.check_interrupts()?;
        let mut any = false;
        for (k, (tid, t)) in targets.iter().enumerate() {
            if k % 1024 == 1023 {
                ctx.env.check_interrupts()?;
            }
            let mut both = t.clone();
            both.extend_from_slice(s);
            if !holds(Some(&m.on), &both, ctx)? {
                continue;
            }
            any = true;
            if matched(m, *tid, both, s, &mut changed, ctx)? {
                n += 1;
            }
        }
        if !any {
            let mut both = vec![Value::Null; n_cols];
            both.extend_from_slice(s);
            for w in &m.not_matched {
                if !holds(w.cond.as_ref(), &both, ctx)? {
                    continue;
                }
                if let MergeAction::Insert(exprs) = &w.action {
                    let params = ctx.params;
                    let row: Vec<Value> = exprs.iter().map(|e| eval_pure(e, &both, params, &[], ctx)).collect::<Result<_>>()?;
                    crate::exec::insert_one(table, &row, ctx)?;
                    n += 1;
                }
                break;
            }
        }
    }
    Ok(n)
}

/// The WHEN MATCHED clauses for target row `tid` joined with source row `s`
/// (`both`). Returns whether the row was updated or deleted.
fn matched(m: &Merge, tid: Tid, mut both: Vec<Value>, s: &[Value], changed: &mut HashSet<Tid>, ctx: &mut Ctx) -> Result<bool> {
    use heapam::{DeleteOptions, DeleteOutcome, UpdateOutcome};
    let table = &m.table;
    let n_cols = table.columns.len();
    let first = tid;
    let mut tid = tid;
    'retry: loop {
        let mut chosen = None;
        for w in &m.matched {
            if holds(w.cond.as_ref(), &both, ctx)? {
                chosen = Some(w);
                break;
            }
        }
        let Some(w) = chosen else { return Ok(false) };
        if matches!(w.action, MergeAction::Nothing | MergeAction::Insert(_)) {
            return Ok(false);
        }
        if changed.contains(&first) {
            return Err(second_time());
        }
        let old: Vec<Value> = both[..n_cols].to_vec();
        let newer = match &w.action {
            MergeAction::Update(sets) => {
                match crate::dml_join::update_row(table, tid, &old, sets, &both, ctx)?.1 {
                    UpdateOutcome::Ok { .. } => {
                        changed.insert(first);
                        return Ok(true);
                    }
                    UpdateOutcome::Updated { new_tid } => new_tid,
                    UpdateOutcome::SelfModified => return Err(second_time()),
                    _ => return Ok(false),
                }
            }
            _ => {
                let toast_descs = table.storage.toast_descs()?;
                let opts = DeleteOptions { wait_policy: WaitPolicy::Block, relname: &table.name, toast_desc: toast_descs.as_deref() };
                match heapam::heap_delete_ext(ctx.backend, table.storage.rel, tid, opts)? {
                    DeleteOutcome::Ok => {
                        crate::foreign_key::on_parent_delete(table, &old, ctx)?;
                        changed.insert(first);
                        return Ok(true);
                    }
                    DeleteOutcome::Updated { new_tid } => new_tid,
                    DeleteOutcome::SelfModified => return Err(second_time()),
                    _ => return Ok(false),
                }
            }
        };
        // READ COMMITTED: the newest version, if it still matches.
        let on = &m.on;
        let still = |row: &[Value], ctx: &mut Ctx| {
            let mut b = row.to_vec();
            b.extend_from_slice(s);
            holds(Some(on), &b, ctx)
        };
        match newest_qualifying(table, newer, &still, ctx)? {
            Some((latest, row)) => {
                tid = latest;
                both = row;
                both.extend_from_slice(s);
                continue 'retry;
            }
            None => return Ok(false),
        }
    }
}
