//! Batched inserts for COPY FROM (PostgreSQL's CopyMultiInsertBuffer in
//! copyfrom.c). INSERT ... SELECT and CREATE TABLE AS insert row by row, as in
//! PostgreSQL: their WAL and pg_stat_statements figures count a record per row.
//!
//! ```text
//!  row ──▶ NOT NULL, CHECK (per row, at once) ──▶ heap tuple (TOAST now)
//!      ──▶ buffer (≤ MAX_BUFFERED_TUPLES rows and ≤ MAX_BUFFERED_BYTES)
//!      ──flush──▶ heapam::heap_multi_insert (one WAL record and one lock per page)
//!             ──▶ index entries of each row, in order (unique checks)
//! ```
//!
//! - The buffer is bounded: a flush happens when it holds 1000 rows or 64 kB of
//!   tuples (PostgreSQL's MAX_BUFFERED_TUPLES and MAX_BUFFERED_BYTES), and at the
//!   end of the statement. Nothing holds the whole input.
//! - Constraint checks run when a row is added, so their errors name the row's
//!   line (COPY's CONTEXT with the line's text), as PostgreSQL's ExecConstraints
//!   before the row is buffered. Errors of the index entries (a unique violation)
//!   happen at the flush; COPY's CONTEXT then gives the row's line number only
//!   (`COPY t, line 3`), as PostgreSQL's does when it flushes a buffer.
//! - Row-at-a-time ([`RowAtATime`]): a table with foreign keys (the check after
//!   each row must see the rows before it, as today's inline RI check does), a
//!   default of a column the input does not give that runs a subquery (it may read
//!   the table being filled: PostgreSQL disables multi-insert for volatile
//!   defaults), a catalog relation (the catalog caches follow each row), and
//!   INSERT ... RETURNING. Those flush after every row and use `heap_insert`,
//!   exactly the single-row path (`exec::insert_one`'s order of checks), unless
//!   the rows are to be frozen.
//! - `frozen` (COPY FREEZE): tuples are inserted with HEAP_XMIN_FROZEN; the caller
//!   checked PostgreSQL's conditions (`copy.rs`).

use crate::catalog::Table;
use crate::exec::Ctx;
use ferrogres_datum::errors::Result;
use ferrogres_datum::types::Value;
use ferrogres_engine::heap::heapam;

/// Rows buffered before a flush (PostgreSQL's MAX_BUFFERED_TUPLES).
pub const MAX_BUFFERED_TUPLES: usize = 1000;
/// Tuple bytes buffered before a flush (PostgreSQL's MAX_BUFFERED_BYTES).
pub const MAX_BUFFERED_BYTES: usize = 65535;

/// Why rows of a statement must go in one at a time, if they must.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowAtATime {
    ForeignKeys,
    SubqueryDefault,
    Catalog,
    Returning,
}

/// Whether the rows of a statement into `table`, giving the columns `given`
/// (the others get their defaults), must be inserted one at a time, and why.
pub fn row_at_a_time(table: &Table, given: &[usize], returning: bool) -> Option<RowAtATime> {
    if returning {
        return Some(RowAtATime::Returning);
    }
    if !table.extras.fkeys.is_empty() {
        return Some(RowAtATime::ForeignKeys);
    }
    if table.storage.rel.rel_number < ferrogres_engine::engine::FIRST_NORMAL_OBJECT_ID {
        return Some(RowAtATime::Catalog);
    }
    if table.extras.defaults.iter().any(|d| !given.contains(&d.column) && has_subquery(&d.expr)) {
        return Some(RowAtATime::SubqueryDefault);
    }
    None
}

/// Whether `e` runs a subquery (which may read the table being filled).
pub fn has_subquery(e: &crate::plan::Expr) -> bool {
    matches!(e, crate::plan::Expr::SubPlan(_)) || crate::grouping::children(e).into_iter().any(has_subquery)
}

/// The buffer of one statement's new rows (see the module comment).
pub struct BulkInsert<'t> {
    table: &'t Table,
    frozen: bool,
    max_rows: usize,
    /// For COPY: the relation name for flush errors' CONTEXT (`COPY t, line n`).
    copy_context: bool,
    rows: Vec<Vec<Value>>,
    lines: Vec<u64>,
    tuples: Vec<Vec<u8>>,
    bytes: usize,
}

impl<'t> BulkInsert<'t> {
    /// `single`: the reason the rows must go one at a time, if any
    /// ([`row_at_a_time`]). `copy_context`: flush errors get COPY's CONTEXT line.
    pub fn new(table: &'t Table, single: Option<RowAtATime>, frozen: bool, copy_context: bool) -> BulkInsert<'t> {
        let max_rows = if single.is_some() { 1 } else { MAX_BUFFERED_TUPLES };
        BulkInsert {
            table,
            frozen,
            max_rows,
            copy_context,
            rows: Vec::new(),
            lines: Vec::new(),
            tuples: Vec::new(),
            bytes: 0,
        }
    }

    /// Whether each row is stored by the `add` that brings it (row-at-a-time).
    pub fn one_at_a_time(&self) -> bool {
        self.max_rows == 1
    }

    /// Checks `row` (NOT NULL, CHECK, view check options), forms its tuple and
    /// buffers it; flushes when the buffer is full. `line` names the row in flush
    /// errors (COPY's input line). Errors of this row's checks carry no CONTEXT
    /// (the caller adds its own); errors of a flush carry the failing row's.
    pub fn add(&mut self, row: Vec<Value>, line: u64, ctx: &mut Ctx) -> Result<()> {
        crate::exec::check_not_null(self.table, &row)?;
        crate::constraints::check_row(self.table, &row, ctx)?;
        let tuple = crate::rowio::form_row(ctx.backend, &self.table.storage, &row)?;
        self.bytes += tuple.len();
        self.tuples.push(tuple);
        self.rows.push(row);
        self.lines.push(line);
        if self.rows.len() >= self.max_rows || self.bytes >= MAX_BUFFERED_BYTES {
            self.flush(ctx)?;
        }
        Ok(())
    }

    /// Stores the buffered rows: the heap tuples (one multi-insert), then each
    /// row's index entries and foreign-key check, in input order.
    pub fn flush(&mut self, ctx: &mut Ctx) -> Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let rel = self.table.storage.rel;
        let tids = if self.tuples.len() == 1 && !self.frozen {
            vec![heapam::heap_insert(ctx.backend, rel, &self.tuples[0])?]
        } else {
            heapam::heap_multi_insert(ctx.backend, rel, &self.tuples, self.frozen)?
        };
        self.tuples.clear();
        self.bytes = 0;
        let batch = !self.one_at_a_time();
        for ((row, line), tid) in self.rows.drain(..).zip(self.lines.drain(..)).zip(tids) {
            let r = crate::index::insert_entries(ctx.backend, self.table, &row, tid)
                .and_then(|()| crate::foreign_key::check_child(self.table, &row, None, ctx));
            if let Err(e) = r {
                return Err(if batch && self.copy_context && e.context.is_none() {
                    e.with_context(format!("COPY {}, line {line}", self.table.name))
                } else {
                    e
                });
            }
        }
        Ok(())
    }

    /// Flushes what is left (the end of the statement).
    pub fn finish(mut self, ctx: &mut Ctx) -> Result<()> {
        self.flush(ctx)
    }
}
