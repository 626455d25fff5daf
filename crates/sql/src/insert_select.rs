//! `INSERT INTO t [(cols)] SELECT ...`: any query the analyzer supports feeds the
//! insert. Rows stream from the query's iterator into [`crate::exec::insert_one`]
//! one at a time (only a query with ORDER BY materializes, as any sort does).
//! Columns not listed get their DEFAULT; each query column is converted to its
//! target column's type with an assignment cast (an untyped literal such as `''`
//! is read directly as the column's type, as PostgreSQL does).

use crate::analyze::Analyzer;
use crate::catalog::Table;
use ferrogres_datum::errors::{Result, SqlError};
use crate::exec::{eval_pure, insert_one, run_query, Ctx};
use crate::plan::{Expr, Query, Statement, Target};
use ferrogres_datum::types::{self, CastContext, Type, Value};
use pg_query::protobuf as pb;
use pg_query::NodeEnum;

#[derive(Clone, Debug)]
pub struct InsertSelect {
    pub table: Table,
    pub query: Query,
    /// One expression per table column, over the query's output row.
    pub row: Vec<Expr>,
    pub returning: Vec<Target>,
}

/// `cols`: the target columns (all, in order, when none were written).
pub(crate) fn analyze(
    a: &mut Analyzer<'_>,
    s: &pb::InsertStmt,
    table: Table,
    cols: Vec<usize>,
    explicit_cols: bool,
    sel: &pb::SelectStmt,
) -> Result<Statement> {
    let Statement::Query(mut query) = a.statement(&NodeEnum::SelectStmt(Box::new(sel.clone())))? else {
        return Err(SqlError::internal("INSERT source is not a query"));
    };
    // Locations of the select-list expressions, when they map one to one.
    let locs: Vec<i32> = sel
        .target_list
        .iter()
        .map(|t| match t.node.as_ref() {
            Some(NodeEnum::ResTarget(rt)) => rt.val.as_ref().and_then(|v| v.node.as_ref()).map_or(rt.location, location),
            _ => -1,
        })
        .collect();
    let n = query.targets.len();
    let loc = |i: usize| if locs.len() == n { locs.get(i).copied().unwrap_or(-1) } else { -1 };
    if n > cols.len() {
        return Err(SqlError::new(b"42601", "INSERT has more expressions than target columns").at(a.sql, loc(cols.len())));
    }
    if n < cols.len() && explicit_cols {
        let l = s.cols.get(n).and_then(|c| c.node.as_ref()).map_or(-1, |c| match c {
            NodeEnum::ResTarget(rt) => rt.location,
            _ => -1,
        });
        return Err(SqlError::new(b"42601", "INSERT has more target columns than expressions").at(a.sql, l));
    }
    let mut row: Vec<Expr> = (0..table.columns.len()).map(|i| crate::constraints::default_expr(&table, i)).collect();
    for (j, &ci) in cols.iter().enumerate().take(n) {
        let col = &table.columns[ci];
        let src_is_literal = matches!(
            sel.target_list.get(j).and_then(|t| t.node.as_ref()),
            Some(NodeEnum::ResTarget(rt)) if matches!(rt.val.as_ref().and_then(|v| v.node.as_ref()),
                Some(NodeEnum::AConst(pb::AConst { val: Some(pb::a_const::Val::Sval(_)), .. }))
                | Some(NodeEnum::AConst(pb::AConst { isnull: true, .. })))
        ) && locs.len() == n;
        let target = &mut query.targets[j];
        // An untyped string literal takes the column's type directly.
        if src_is_literal {
            match &target.expr {
                Expr::Const(Value::Text(lit), _) => {
                    let v = types::input(col.ty, lit, col.typmod).map_err(|e| e.at(a.sql, loc(j)))?;
                    target.expr = Expr::Const(v, col.ty);
                }
                Expr::Const(Value::Null, _) => target.expr = Expr::Const(Value::Null, col.ty),
                _ => {}
            }
        }
        let t = target.expr.ty();
        row[ci] = if t == col.ty && !(t == Type::Varchar && col.typmod >= 0) {
            Expr::Column(j, t)
        } else if t == Type::Unknown || types::cast_allowed(t, col.ty, CastContext::Assignment) {
            Expr::Cast { arg: Box::new(Expr::Column(j, t)), from: t, to: col.ty, typmod: col.typmod, explicit: false }
        } else {
            return Err(SqlError::new(
                b"42804",
                format!("column \"{}\" is of type {} but expression is of type {}", col.name, col.ty.name_with_typmod(col.typmod), t.sql_name()),
            )
            .with_hint("You will need to rewrite or cast the expression.")
            .at(a.sql, loc(j)));
        };
    }
    let returning = a.returning_targets(s.returning_clause.as_ref(), &table)?;
    Ok(Statement::InsertSelect(Box::new(InsertSelect { table, query, row, returning })))
}

fn location(n: &NodeEnum) -> i32 {
    match n {
        NodeEnum::ColumnRef(c) => c.location,
        NodeEnum::AConst(c) => c.location,
        NodeEnum::AExpr(e) => e.location,
        NodeEnum::FuncCall(f) => f.location,
        // The leftmost of the cast and its argument, as PostgreSQL's exprLocation.
        NodeEnum::TypeCast(t) => match t.arg.as_ref().and_then(|a| a.node.as_ref()).map(location) {
            Some(l) if l >= 0 && (t.location < 0 || l < t.location) => l,
            _ => t.location,
        },
        NodeEnum::ParamRef(p) => p.location,
        _ => -1,
    }
}

/// Runs the query and inserts each of its rows. Returns the count and the
/// RETURNING rows.
pub fn execute(i: &InsertSelect, ctx: &mut Ctx) -> Result<(u64, Vec<Vec<Value>>)> {
    let mut rows = run_query(&i.query, ctx)?;
    let mut n = 0;
    let mut out = Vec::new();
    let ret = crate::exec::Returning::new(&i.table, &i.returning);
    while let Some(src) = rows.next(ctx)? {
        ctx.env.check_interrupts()?;
        let row: Vec<Value> = i.row.iter().map(|e| eval_pure(e, &src, ctx.params, &[], &mut *ctx)).collect::<Result<_>>()?;
        let tid = insert_one(&i.table, &row, ctx)?;
        n += 1;
        if let Some(r) = ret.row(&row, tid, ctx)? {
            out.push(r);
        }
    }
    Ok((n, out))
}
