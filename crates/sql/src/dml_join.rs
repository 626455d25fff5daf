//! `UPDATE t SET ... FROM other, ... WHERE ...` and `DELETE FROM t USING
//! other, ... WHERE ...`: the target's rows joined with the other relations.
//!
//! The other relations are read once (their join, as a FROM list) and kept;
//! each visible target row is paired with the first of them that satisfies the
//! WHERE over `target ++ other` (PostgreSQL: a target row that joins several
//! rows is changed once, with an arbitrary one of them). RETURNING reads
//! `new target ++ other`. In READ COMMITTED a target row changed meanwhile by
//! a committed transaction is re-checked on its newest version (the join
//! re-evaluated for it: EvalPlanQual), as plain UPDATE and DELETE do.

use crate::catalog::Table;
use ferrogres_datum::errors::Result;
use crate::exec::{eval_pure, newest_qualifying, source_rows, Ctx};
use crate::plan::{Expr, Source, Target};
use ferrogres_datum::types::Value;
use ferrogres_engine::heap::heapam::{self, WaitPolicy};

#[derive(Clone, Debug)]
pub enum JoinedAction {
    /// (column, value over `target ++ other`).
    Update(Vec<(usize, Expr)>),
    Delete,
}

#[derive(Clone, Debug)]
pub struct JoinedDml {
    pub table: Table,
    /// The FROM / USING items; their row follows the target's.
    pub other: Source,
    pub filter: Option<Expr>,
    pub action: JoinedAction,
    pub returning: Vec<Target>,
}

/// The row update shared by UPDATE ... FROM, MERGE's WHEN MATCHED THEN UPDATE
/// and ON CONFLICT DO UPDATE: `sets` evaluated over `input` replace columns of
/// `old`; the new row is checked (NOT NULL, CHECK) and written over `tid`. When
/// the heap update succeeds, the new version's index entries and foreign-key
/// checks are done too. Returns the new row and the heap's outcome (the caller
/// handles a concurrent update or its own earlier change).
pub(crate) fn update_row(
    table: &Table,
    tid: ferrogres_engine::heap::tuple::Tid,
    old: &[Value],
    sets: &[(usize, Expr)],
    input: &[Value],
    ctx: &mut Ctx,
) -> Result<(Vec<Value>, heapam::UpdateOutcome)> {
    let mut new = old.to_vec();
    for (i, e) in sets {
        let params = ctx.params;
        new[*i] = eval_pure(e, input, params, &[], ctx)?;
    }
    crate::exec::check_not_null(table, &new)?;
    crate::constraints::check_row(table, &new, ctx)?;
    let tuple = crate::rowio::form_row_toasted(ctx.backend, &table.storage, &new)?;
    let (hot_allowed, keys_updated) = crate::index::update_flags(table, old, &new);
    let toast_descs = table.storage.toast_descs()?;
    let opts = heapam::UpdateOptions {
        hot_allowed,
        keys_updated,
        wait_policy: WaitPolicy::Block,
        relname: &table.name,
        toast_desc: toast_descs.as_deref(),
    };
    let outcome = heapam::heap_update(ctx.backend, table.storage.rel, tid, &tuple, opts)?;
    if let heapam::UpdateOutcome::Ok { new_tid, hot } = outcome {
        if !hot {
            crate::index::insert_entries(ctx.backend, table, &new, new_tid)?;
        }
        crate::foreign_key::check_child(table, &new, Some(old), ctx)?;
        crate::foreign_key::on_parent_update(table, old, &new, ctx)?;
        if table.storage.system.is_some() {
            // RETURNING ctid: the new version's place.
            new[table.user_columns()] = Value::Tid(new_tid.block, new_tid.offset);
        }
    }
    Ok((new, outcome))
}

/// The first row of `others` joined with `row` that passes `filter`, as the
/// concatenated row.
fn first_match(row: &[Value], others: &[Vec<Value>], filter: Option<&Expr>, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
    for (k, o) in others.iter().enumerate() {
        if k % 1024 == 1023 {
            ctx.env.check_interrupts()?;
        }
        let mut both = row.to_vec();
        both.extend_from_slice(o);
        let ok = match filter {
            Some(f) => {
                let params = ctx.params;
                eval_pure(f, &both, params, &[], ctx)? == Value::Bool(true)
            }
            None => true,
        };
        if ok {
            return Ok(Some(both));
        }
    }
    Ok(None)
}

/// Runs the statement: (rows changed, RETURNING rows).
pub fn execute(d: &JoinedDml, ctx: &mut Ctx) -> Result<(u64, Vec<Vec<Value>>)> {
    use heapam::{DeleteOptions, DeleteOutcome, UpdateOutcome};
    let table = &d.table;
    let n_cols = table.columns.len();
    // The WHERE's conjuncts that read the other relations only filter them
    // once, before the join; those that read the target only filter (and may
    // choose an index for) its scan. The whole WHERE still decides each pair.
    let (target_only, other_only) = split_filter(d.filter.as_ref(), n_cols);
    let mut others = Vec::new();
    let mut it = source_rows(&d.other, ctx)?;
    while let Some(r) = it.next(ctx)? {
        if let Some(f) = &other_only {
            let params = ctx.params;
            if eval_pure(f, &r, params, &[], ctx)? != Value::Bool(true) {
                continue;
            }
        }
        others.push(r);
    }
    drop(it);
    let rows = if others.is_empty() { Vec::new() } else { crate::index::scan_table(table, target_only.as_ref(), ctx)? };
    let mut n = 0;
    let mut out = Vec::new();
    for (tid, row) in rows {
        ctx.env.check_interrupts()?;
        if let Some(f) = &target_only {
            let params = ctx.params;
            if eval_pure(f, &row, params, &[], ctx)? != Value::Bool(true) {
                continue;
            }
        }
        let Some(mut both) = first_match(&row, &others, d.filter.as_ref(), ctx)? else { continue };
        let mut tid = tid;
        loop {
            let old: Vec<Value> = both[..n_cols].to_vec();
            let done: Option<Vec<Value>> = match &d.action {
                JoinedAction::Update(sets) => {
                    let (new, outcome) = update_row(table, tid, &old, sets, &both, ctx)?;
                    match outcome {
                        UpdateOutcome::Ok { .. } => Some(new),
                        UpdateOutcome::Updated { new_tid } => {
                            match recheck(d, new_tid, &others, ctx)? {
                                Some((t, b)) => {
                                    tid = t;
                                    both = b;
                                    continue;
                                }
                                None => None,
                            }
                        }
                        _ => None,
                    }
                }
                JoinedAction::Delete => {
                    let toast_descs = table.storage.toast_descs()?;
                    let opts = DeleteOptions { wait_policy: WaitPolicy::Block, relname: &table.name, toast_desc: toast_descs.as_deref() };
                    match heapam::heap_delete_ext(ctx.backend, table.storage.rel, tid, opts)? {
                        DeleteOutcome::Ok => {
                            crate::foreign_key::on_parent_delete(table, &old, ctx)?;
                            Some(old.clone())
                        }
                        DeleteOutcome::Updated { new_tid } => match recheck(d, new_tid, &others, ctx)? {
                            Some((t, b)) => {
                                tid = t;
                                both = b;
                                continue;
                            }
                            None => None,
                        },
                        _ => None,
                    }
                }
            };
            if let Some(new) = done {
                n += 1;
                if !d.returning.is_empty() {
                    let mut r = new;
                    r.extend_from_slice(&both[n_cols..]);
                    out.push(d.returning.iter().map(|t| eval_pure(&t.expr, &r, ctx.params, &[], &mut *ctx)).collect::<Result<_>>()?);
                }
            }
            break;
        }
    }
    Ok((n, out))
}

/// The conjuncts of `filter` (over `target ++ other`, the target having
/// `n_cols` columns) that read the target's columns only, and those that read
/// the other relations' columns only (over the other row): `None` for none.
/// Conjuncts reading no column go with the target's.
fn split_filter(filter: Option<&Expr>, n_cols: usize) -> (Option<Expr>, Option<Expr>) {
    let conjuncts: Vec<&Expr> = match filter {
        Some(Expr::And(v)) => v.iter().collect(),
        Some(e) => vec![e],
        None => vec![],
    };
    let (mut target, mut other) = (Vec::new(), Vec::new());
    for c in conjuncts {
        let cols = crate::subquery::columns_read(c);
        if cols.iter().all(|i| *i < n_cols) {
            target.push(c.clone());
        } else if cols.iter().all(|i| *i >= n_cols) {
            let mut c = c.clone();
            crate::subquery::shift_columns(&mut c, -(n_cols as isize));
            other.push(c);
        }
    }
    let and = |mut v: Vec<Expr>| match v.len() {
        0 => None,
        1 => v.pop(),
        _ => Some(Expr::And(v)),
    };
    (and(target), and(other))
}

/// READ COMMITTED's re-check of a target row updated meanwhile: its newest
/// version, joined again.
fn recheck(
    d: &JoinedDml,
    new_tid: ferrogres_engine::heap::tuple::Tid,
    others: &[Vec<Value>],
    ctx: &mut Ctx,
) -> Result<Option<(ferrogres_engine::heap::tuple::Tid, Vec<Value>)>> {
    let any = |_: &[Value], _: &mut Ctx| -> Result<bool> { Ok(true) };
    let Some((latest, row)) = newest_qualifying(&d.table, new_tid, &any, ctx)? else { return Ok(None) };
    Ok(first_match(&row, others, d.filter.as_ref(), ctx)?.map(|b| (latest, b)))
}
