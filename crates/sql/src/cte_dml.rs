//! Data-modifying statements in WITH (PostgreSQL 15's "Data-Modifying
//! Statements in WITH"): `WITH d AS (DELETE ... RETURNING *) SELECT ... FROM d`
//! and `WITH d AS (...) INSERT INTO log SELECT * FROM d`.
//!
//! Analysis (`analyze::cte_dml`): each INSERT / UPDATE / DELETE of the
//! top-level WITH is analyzed as a statement of its own and given a working
//! table id ([`crate::setop::next_id`]); a reference to it reads
//! `Source::WorkTable(id)`, as the step of a recursive CTE reads its working
//! table. The statement becomes [`WithDml`]: the CTEs' statements, then the
//! main one.
//!
//! Execution (`session`): every CTE statement runs first, in the order
//! written, to completion, whether or not anything reads it; its RETURNING
//! rows become working table `id`; then the main statement runs. All of them
//! use the same snapshot and command id, so none sees the others' changes of
//! the tables (a row a CTE inserted has the statement's command id, which the
//! snapshot does not see), only the RETURNING rows, as in PostgreSQL.
//!
//! Not done: a data-modifying CTE that reads an earlier CTE of the same WITH;
//! data-modifying CTEs in the WITH of an UPDATE or DELETE (0A000); a CTE
//! statement and the main statement changing the same row (PostgreSQL: only
//! one of the changes happens; here the second sees the row as changed by its
//! own command and skips it too, but this is not tested).

use crate::plan::Statement;
use std::cell::{Cell, RefCell};

/// A statement with data-modifying CTEs.
#[derive(Clone, Debug)]
pub struct WithDml {
    /// (working table id, the CTE's statement), in the order written.
    pub ctes: Vec<(u64, Statement)>,
    pub main: Statement,
}

thread_local! {
    /// The WITH clause (its position in the statement's text, plus one) whose
    /// data-modifying CTEs are allowed: the top-level statement's, while it is
    /// being analyzed; 0 otherwise.
    pub(crate) static ALLOWED: Cell<i32> = const { Cell::new(0) };
    /// Whether a top-level statement with data-modifying CTEs is being analyzed.
    pub(crate) static ACTIVE: Cell<bool> = const { Cell::new(false) };
    /// The CTE statements analyzed so far for it.
    pub(crate) static PENDING: RefCell<Vec<(u64, Statement)>> = const { RefCell::new(Vec::new()) };
    /// Working table ids of CTEs without RETURNING (a reference to one is an error).
    pub(crate) static NO_RETURNING: RefCell<Vec<(u64, String)>> = const { RefCell::new(Vec::new()) };
}

/// The error for a reference to data-modifying CTE `id` that has no RETURNING, if so.
pub fn no_returning(work: Option<u64>) -> Option<ferrogres_datum::errors::SqlError> {
    let id = work?;
    NO_RETURNING.with(|n| {
        n.borrow().iter().find(|(i, _)| *i == id).map(|(_, name)| {
            ferrogres_datum::errors::SqlError::new(b"0A000", format!("WITH query \"{name}\" does not have a RETURNING clause"))
        })
    })
}
