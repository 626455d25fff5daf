//! `INSERT ... ON CONFLICT [target] DO NOTHING | DO UPDATE SET ... [WHERE ...]`
//! with PostgreSQL 15's guarantee: under concurrent inserts of the same key each
//! statement either inserts or updates (or skips), never fails with 23505 on an
//! arbiter index.
//!
//! For each proposed row (PostgreSQL's speculative insertion, in our terms):
//!
//! 1. **Pre-check.** Look the row's key up in every arbiter index and run the
//!    dirty-snapshot test on each entry's HOT chain
//!    (`heapam::heap_hot_dirty_member`): a row being inserted or deleted by a
//!    running transaction is waited for (its xid lock) and the check starts
//!    over; a live row is the conflict.
//! 2. **No conflict: insert speculatively**, inside an internal subtransaction
//!    (an engine savepoint): heap tuple, arbiter index entries first, then the
//!    others. If an arbiter's unique check finds that someone inserted the key
//!    since step 1 (it waits for that inserter; 23505 if it committed), the
//!    subtransaction is rolled back (the tuple's xmin aborts: it is dead for
//!    everyone, its index entries point at nothing visible) and the row starts
//!    over at step 1, where the new row is now a conflict. PostgreSQL kills the
//!    tuple in place ("super-deletion") instead of aborting a subtransaction;
//!    the effect is the same.
//! 3. **Conflict, DO NOTHING:** skip the row (REPEATABLE READ: 40001 when the
//!    conflicting row is not visible to the transaction's snapshot).
//! 4. **Conflict, DO UPDATE:** lock the conflicting version (FOR UPDATE, or FOR
//!    NO KEY UPDATE when no SET column is a unique key column); if it was updated
//!    or deleted meanwhile (READ COMMITTED) start over at step 1; REPEATABLE READ
//!    gets 40001 from the lock, or here when the locked version is invisible to
//!    its snapshot. Then evaluate WHERE and SET over (existing, excluded) and
//!    update the locked version, which is the newest one.
//!
//! A row the statement itself inserted or updated is a conflict too: DO NOTHING
//! skips, DO UPDATE raises 21000 ("cannot affect row a second time"), as
//! PostgreSQL does. Expressions of DO UPDATE read the row `existing ++ excluded`.

use crate::catalog::Table;
use ferrogres_datum::errors::{Result, SqlError};
use crate::exec::{eval_pure, run_query, Ctx};
use crate::plan::{Expr, Query, Target};
use ferrogres_datum::types::{self, Value};
use ferrogres_engine::heap::heapam;
use ferrogres_engine::heap::page::RowLockMode;
use ferrogres_engine::heap::tuple::Tid;
use ferrogres_engine::lmgr::lock::LockOptions;
use ferrogres_engine::nbtree::ScanBounds;
use std::collections::HashSet;

/// The name of the internal savepoint of a speculative insertion (cannot clash
/// with an SQL identifier: it holds a NUL).
const SPEC_SAVEPOINT: &str = "\0speculative insertion";

#[derive(Clone, Debug)]
#[allow(clippy::large_enum_variant)] // one per statement
pub enum UpsertSource {
    /// VALUES rows (or DEFAULT VALUES): one expression per table column.
    Rows(Vec<Vec<Expr>>),
    /// INSERT ... SELECT: the query, and one expression per table column over its row.
    Select { query: Query, row: Vec<Expr> },
}

#[derive(Clone, Debug)]
pub enum Action {
    Nothing,
    /// `sets` and `filter` read the row `existing ++ excluded`.
    Update { sets: Vec<(usize, Expr)>, filter: Option<Expr> },
}

#[derive(Clone, Debug)]
pub struct Upsert {
    pub table: Table,
    pub source: UpsertSource,
    /// Positions in `table.indexes` of the arbiter indexes (all unique).
    pub arbiters: Vec<usize>,
    pub action: Action,
    pub returning: Vec<Target>,
}

enum Found {
    None,
    /// A conflicting live row version.
    Conflict(Tid),
}

/// Runs the statement: (rows inserted or updated, RETURNING rows).
pub fn execute(u: &Upsert, ctx: &mut Ctx) -> Result<(u64, Vec<Vec<Value>>)> {
    let returning = crate::exec::Returning::new(&u.table, &u.returning);
    let mut run = Run { u, returning, mine: HashSet::new(), n: 0, out: Vec::new() };
    match &u.source {
        UpsertSource::Rows(rows) => {
            for exprs in rows {
                let params = ctx.params;
                let row: Vec<Value> = exprs.iter().map(|e| eval_pure(e, &[], params, &[], ctx)).collect::<Result<_>>()?;
                run.one(row, ctx)?;
            }
        }
        UpsertSource::Select { query, row } => {
            let mut rows = run_query(query, ctx)?;
            while let Some(src) = rows.next(ctx)? {
                let r: Vec<Value> = row.iter().map(|e| eval_pure(e, &src, ctx.params, &[], &mut *ctx)).collect::<Result<_>>()?;
                run.one(r, ctx)?;
            }
        }
    }
    Ok((run.n, run.out))
}

struct Run<'u> {
    u: &'u Upsert,
    /// The statement's RETURNING list, prepared once.
    returning: crate::exec::Returning<'u>,
    /// Row versions this statement made (inserted or updated).
    mine: HashSet<Tid>,
    n: u64,
    out: Vec<Vec<Value>>,
}

impl Run<'_> {
    fn one(&mut self, row: Vec<Value>, ctx: &mut Ctx) -> Result<()> {
        let u = self.u;
        let table = &u.table;
        crate::exec::check_not_null(table, &row)?;
        crate::constraints::check_constraints(table, &row, ctx)?;
        loop {
            ctx.env.check_interrupts()?;
            match find_conflict(table, &u.arbiters, &row, ctx)? {
                Found::None => {
                    // A view's check option applies to the row inserted, not to a proposed one.
                    crate::constraints::check_view_options(table, &row, ctx)?;
                    if let Some(tid) = speculative_insert(table, &u.arbiters, &row, ctx)? {
                        self.mine.insert(tid);
                        self.n += 1;
                        self.returning(&row, tid, ctx)?;
                        return Ok(());
                    }
                    // Someone inserted the key meanwhile: look again.
                }
                Found::Conflict(tid) => match &u.action {
                    Action::Nothing => {
                        if !self.mine.contains(&tid) && !visible_to_xact(table, tid, ctx)? {
                            return Err(serialization_failure());
                        }
                        return Ok(());
                    }
                    Action::Update { sets, filter } => {
                        if self.mine.contains(&tid) {
                            return Err(second_time());
                        }
                        if self.update(tid, &row, sets, filter.as_ref(), ctx)? {
                            return Ok(());
                        }
                    }
                },
            }
        }
    }

    /// The RETURNING row of `row`, just written at `tid`.
    fn returning(&mut self, row: &[Value], tid: Tid, ctx: &mut Ctx) -> Result<()> {
        if let Some(r) = self.returning.row(row, tid, ctx)? {
            self.out.push(r);
        }
        Ok(())
    }

    /// DO UPDATE of the conflicting version `tid`. `false`: it changed before
    /// we could lock it; start over.
    fn update(&mut self, tid: Tid, excluded: &[Value], sets: &[(usize, Expr)], filter: Option<&Expr>, ctx: &mut Ctx) -> Result<bool> {
        use heapam::{LockOutcome, UpdateOutcome, WaitPolicy};
        let u = self.u;
        let table = &u.table;
        let key_cols = |c: &usize| table.indexes.iter().any(|ix| ix.unique && ix.columns[..ix.nkey.min(ix.columns.len())].contains(c));
        let mode = if sets.iter().any(|(c, _)| key_cols(c)) { RowLockMode::Exclusive } else { RowLockMode::NoKeyExclusive };
        match heapam::heap_lock_tuple(ctx.backend, table.storage.rel, tid, mode, WaitPolicy::Block, &table.name)? {
            LockOutcome::Locked => {}
            LockOutcome::SelfModified | LockOutcome::Invisible if self.mine.contains(&tid) => return Err(second_time()),
            _ => return Ok(false),
        }
        // The locked version is the newest; REPEATABLE READ must also see it.
        if !visible_to_xact(table, tid, ctx)? {
            return Err(serialization_failure());
        }
        let snap = ctx.backend.txn.statement_snapshot()?;
        let Some(bytes) = heapam::heap_fetch(ctx.backend, table.storage.rel, tid, &snap)? else { return Ok(false) };
        let descs = table.storage.descs()?;
        let old = crate::rowio::deform_row(ctx.backend, &table.storage, &descs, tid, &bytes, &snap)?;
        let mut both = old.clone();
        both.extend_from_slice(excluded);
        if let Some(f) = filter {
            let params = ctx.params;
            if eval_pure(f, &both, params, &[], ctx)? != Value::Bool(true) {
                return Ok(true);
            }
        }
        let (new, outcome) = crate::dml_join::update_row(table, tid, &old, sets, &both, ctx)?;
        match outcome {
            UpdateOutcome::Ok { new_tid, .. } => {
                self.mine.insert(new_tid);
                self.n += 1;
                self.returning(&new, new_tid, ctx)?;
                Ok(true)
            }
            UpdateOutcome::SelfModified => Err(second_time()),
            _ => Ok(false),
        }
    }
}

fn second_time() -> SqlError {
    SqlError::new(b"21000", "ON CONFLICT DO UPDATE command cannot affect row a second time")
        .with_hint("Ensure that no rows proposed for insertion within the same command have duplicate constrained values.")
}

fn serialization_failure() -> SqlError {
    SqlError::new(b"40001", "could not serialize access due to concurrent update")
}

/// Whether the transaction's snapshot sees row version `tid` (always true in
/// READ COMMITTED, where each statement takes a new snapshot).
fn visible_to_xact(table: &Table, tid: Tid, ctx: &mut Ctx) -> Result<bool> {
    use ferrogres_engine::txn::IsolationLevel;
    if ctx.backend.txn.isolation() == IsolationLevel::ReadCommitted {
        return Ok(true);
    }
    Ok(heapam::heap_fetch(ctx.backend, table.storage.rel, tid, &ctx.snap)?.is_some())
}

/// Step 1: a live row version conflicting with `row` in an arbiter index,
/// after waiting for every running inserter or deleter of one.
fn find_conflict(table: &Table, arbiters: &[usize], row: &[Value], ctx: &mut Ctx) -> Result<Found> {
    'again: loop {
        for &a in arbiters {
            let ix = &table.indexes[a];
            let keys: Vec<Value> = ix.columns[..ix.nkey].iter().map(|c| row[*c].clone()).collect();
            if keys.iter().any(|v| v.is_null()) {
                continue; // NULLs never conflict
            }
            let datums = ix.types.iter().zip(&keys).map(|(t, v)| types::to_datum(*t, v)).collect::<Result<Vec<_>>>()?;
            let tree = ix.btree()?;
            let engine = ctx.backend.engine().clone();
            let mut roots = Vec::new();
            for t in tree.scan(&engine, ScanBounds::eq(datums)) {
                roots.push(t?);
            }
            for root in roots {
                let Some((tid, r)) = heapam::heap_hot_dirty_member(ctx.backend, table.storage.rel, root)? else { continue };
                let running = if r.xmin_in_progress != 0 { r.xmin_in_progress } else { r.xmax_in_progress };
                if running != 0 {
                    engine.locks.xact_lock_table_wait(ctx.backend.id(), running, LockOptions::default())?;
                    continue 'again;
                }
                return Ok(Found::Conflict(tid));
            }
        }
        return Ok(Found::None);
    }
}

/// Step 2: inserts `row` unless an arbiter index finds a conflict (then the
/// insertion is undone and `None` returned).
fn speculative_insert(table: &Table, arbiters: &[usize], row: &[Value], ctx: &mut Ctx) -> Result<Option<Tid>> {
    ctx.backend.txn.savepoint(SPEC_SAVEPOINT)?;
    let r = (|| -> Result<Option<Tid>> {
        let tid = crate::rowio::insert_row(ctx.backend, &table.storage, row)?;
        for &a in arbiters {
            match crate::index::insert_entry_at(ctx.backend, table, a, row, tid) {
                Err(e) if e.sqlstate() == "23505" => return Ok(None),
                r => r?,
            }
        }
        for a in (0..table.indexes.len()).filter(|a| !arbiters.contains(a)) {
            crate::index::insert_entry_at(ctx.backend, table, a, row, tid)?;
        }
        Ok(Some(tid))
    })();
    match r {
        Ok(Some(tid)) => {
            ctx.backend.txn.release(SPEC_SAVEPOINT)?;
            crate::foreign_key::check_child(table, row, None, ctx)?;
            Ok(Some(tid))
        }
        other => {
            ctx.backend.txn.rollback_to(SPEC_SAVEPOINT)?;
            ctx.backend.txn.release(SPEC_SAVEPOINT)?;
            other
        }
    }
}
