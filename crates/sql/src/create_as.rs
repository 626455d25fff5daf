//! Running CREATE TABLE ... AS and SELECT ... INTO (analysed by
//! `analyze::create_as`): the table is created in the statement's transaction
//! with the query's output columns, then the query's rows go into it through
//! the INSERT ... SELECT path ([`crate::insert_select::execute`], run by the
//! session): each row is inserted as the query's iterator yields it, so
//! nothing holds the result. The command tag is PostgreSQL's: `SELECT n` for
//! the rows written, `CREATE TABLE AS` for WITH NO DATA.
//!
//! The caller (the session) has checked that no relation of that name exists
//! (42P07, or the NOTICE of IF NOT EXISTS) and took the query's locks.

use crate::catalog;
use crate::exec::Ctx;
use crate::insert_select::InsertSelect;
use crate::plan::{CreateTableAs, Expr, Statement};
use ferrogres_datum::errors::{Result, SqlError};

/// Creates the table; returns the INSERT ... SELECT that fills it (a copy of
/// the query aimed at the new table), `None` for WITH NO DATA.
pub fn create(c: &CreateTableAs, ctx: &mut Ctx) -> Result<Option<InsertSelect>> {
    let Statement::Query(query) = &*c.query else {
        return Err(SqlError::internal("CREATE TABLE AS of a statement other than a query"));
    };
    let table = catalog::create_table(ctx.backend, c.namespace, &c.name, c.columns.clone())?;
    if !c.with_data {
        return Ok(None);
    }
    // The columns have the query's output types: each value goes in as it is.
    let row = c.columns.iter().enumerate().map(|(j, col)| Expr::Column(j, col.ty)).collect();
    Ok(Some(InsertSelect { table, query: query.clone(), row, returning: Vec::new() }))
}
