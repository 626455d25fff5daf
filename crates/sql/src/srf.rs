//! Set-returning functions in FROM: `FROM generate_series(start, stop [, step])
//! [AS] alias [(colname)]`, as a one-column relation the rest of the query reads
//! like a table (its rows are produced one at a time, never materialized).
//!
//! Naming follows PostgreSQL: without an alias the relation and its column are
//! both called `generate_series`; `AS a` names both `a`; `AS a(x)` names the
//! column `x`. The integer forms exist (int4 and int8, chosen by the argument
//! types). `unnest(array)` is the other function here: one row per element
//! ([`ferrogres_datum::array`]). The numeric and timestamp forms, WITH ORDINALITY, ROWS
//! FROM, several arrays and the other functions are [`crate::srf_from`]'s
//! (`SeriesScan::func`).

use crate::analyze::Analyzer;
use crate::catalog::{Column, Table};
use ferrogres_datum::errors::{Result, SqlError};
use crate::exec::{eval_pure, Ctx, RowIter};
use crate::plan::Expr;
use crate::rowio::RelStorage;
use ferrogres_datum::types::{CastContext, Type, Value};
use pg_query::protobuf as pb;
use pg_query::NodeEnum;

/// `generate_series(start, stop, step)` over `ty` (int4 or int8).
#[derive(Clone, Debug)]
pub struct SeriesScan {
    pub start: Expr,
    pub stop: Expr,
    pub step: Option<Expr>,
    pub ty: Type,
    /// `unnest(array)`: the array's elements instead of a series (`ferrogres_datum::array`).
    pub unnest: Option<Expr>,
    /// Any other function scan ([`crate::srf_from`]): replaces the above.
    pub func: Option<Box<crate::srf_from::FuncScan>>,
}

/// Analyzes a function in FROM: the relation the scope sees (a table with no
/// storage, OID 0), its reference name, and the scan.
/// The arguments may read enclosing query levels (`outer`), not this one.
pub(crate) fn range_function(
    a: &mut Analyzer<'_>,
    rf: &pb::RangeFunction,
    outer: &[std::rc::Rc<crate::analyze::from::Namespace>],
) -> Result<(Table, String, SeriesScan)> {
    if crate::srf_from::wanted(rf) {
        let (t, refname, f) = crate::srf_from::range_function(a, rf, outer)?;
        let null = Expr::Const(Value::Null, Type::Int4);
        return Ok((t, refname, SeriesScan { start: null.clone(), stop: null, step: None, ty: Type::Int4, unnest: None, func: Some(Box::new(f)) }));
    }
    if rf.lateral || rf.ordinality || rf.is_rowsfrom || !rf.coldeflist.is_empty() || rf.functions.len() != 1 {
        return Err(SqlError::not_supported("LATERAL, WITH ORDINALITY, ROWS FROM or column definitions for functions in FROM"));
    }
    let f = match rf.functions[0].node.as_ref() {
        Some(NodeEnum::List(l)) => match l.items.first().and_then(|n| n.node.as_ref()) {
            Some(NodeEnum::FuncCall(f)) => f,
            _ => return Err(SqlError::not_supported("this function in FROM")),
        },
        _ => return Err(SqlError::not_supported("this function in FROM")),
    };
    let name = crate::srf_from::func_name(f);
    let unnest = if name == "unnest" && f.args.len() == 1 && !f.agg_star && !f.agg_distinct && f.over.is_none() {
        let Some(n) = f.args[0].node.as_ref() else { return Err(SqlError::internal("unnest without argument")) };
        let e = a.outer_expr(n, outer)?;
        let Some(elem) = e.ty().elem() else {
            return Err(SqlError::new(b"42883", format!("function unnest({}) does not exist", e.ty().sql_name()))
                .with_hint("No function matches the given name and argument types. You might need to add explicit type casts.")
                .at(a.sql, f.location));
        };
        Some((e, elem))
    } else {
        None
    };
    if unnest.is_none() && name != "generate_series" || f.agg_star || f.agg_distinct || f.over.is_some() {
        return Err(SqlError::not_supported(format!("function {} in FROM", name)).at(a.sql, f.location));
    }
    if unnest.is_none() && (f.args.len() < 2 || f.args.len() > 3) {
        return Err(SqlError::new(b"42883", format!("function generate_series({}) does not exist", vec!["integer"; f.args.len()].join(", ")))
            .with_hint("No function matches the given name and argument types. You might need to add explicit type casts.")
            .at(a.sql, f.location));
    }
    let mut args = Vec::new();
    for n in f.args.iter().filter(|_| unnest.is_none()) {
        let Some(n) = n.node.as_ref() else { continue };
        args.push(a.outer_expr(n, outer)?);
    }
    let ty = match &unnest {
        Some((_, elem)) => *elem,
        None if args.iter().any(|e| e.ty() == Type::Int8) => Type::Int8,
        None => Type::Int4,
    };
    if args.iter().any(|e| !(e.ty().is_integer() || e.ty() == Type::Unknown)) {
        // numeric and timestamp series.
        let (t, refname, f) = crate::srf_from::range_function(a, rf, outer)?;
        let null = Expr::Const(Value::Null, Type::Int4);
        return Ok((t, refname, SeriesScan { start: null.clone(), stop: null, step: None, ty: Type::Int4, unnest: None, func: Some(Box::new(f)) }));
    }
    let mut coerced = Vec::new();
    for e in args {
        coerced.push(a.coerce(e, ty, CastContext::Implicit, f.location)?);
    }
    let mut it = coerced.into_iter();
    let null = || Expr::Const(Value::Null, ty);
    let start = if unnest.is_some() { null() } else { it.next().ok_or_else(|| SqlError::internal("generate_series without arguments"))? };
    let stop = if unnest.is_some() { null() } else { it.next().ok_or_else(|| SqlError::internal("generate_series without stop"))? };
    let step = it.next();
    let (refname, colname) = match &rf.alias {
        None => (name.clone(), name.clone()),
        Some(al) => {
            let cols = crate::srf_from::alias_colnames(al);
            if cols.len() > 1 {
                return Err(SqlError::new(b"42P10", format!("table \"{}\" has 1 columns available but {} columns specified", al.aliasname, cols.len())));
            }
            (al.aliasname.clone(), cols.into_iter().next().unwrap_or_else(|| al.aliasname.clone()))
        }
    };
    let columns = vec![Column { name: colname, ty, typmod: -1, not_null: false, default: None }];
    let storage = RelStorage {
        rel: ferrogres_engine::storage::RelFileLocator { spc_oid: 0, db_oid: 0, rel_number: 0 },
        toast: None,
        types: vec![ty],
        missing: Vec::new(),
        proj: None,
        system: None,
    };
    let table = Table { oid: 0, name: refname.clone(), namespace: 0, storage, columns, indexes: Vec::new(), extras: Default::default() };
    Ok((table, refname, SeriesScan { start, stop, step, ty, unnest: unnest.map(|u| u.0), func: None }))
}

/// The rows of a series, one column each.
pub fn scan(s: &SeriesScan, ctx: &mut Ctx) -> Result<Box<dyn RowIter>> {
    let ev = |e: &Expr, ctx: &mut Ctx| eval_pure(e, &[], ctx.params, &[], ctx.env);
    if let Some(f) = &s.func {
        return Ok(Box::new(Elements(crate::srf_from::rows(f, ctx)?.into_iter())));
    }
    if let Some(a) = &s.unnest {
        let items = match ev(a, ctx)? {
            Value::Array(arr) => arr.items,
            _ => Vec::new(),
        };
        return Ok(Box::new(Elements(items.into_iter())));
    }
    let start = ev(&s.start, ctx)?;
    let stop = ev(&s.stop, ctx)?;
    let step = match &s.step {
        Some(e) => ev(e, ctx)?,
        None => Value::Int8(1),
    };
    let (Some(cur), Some(stop), Some(step)) = (start.as_i64(), stop.as_i64(), step.as_i64()) else {
        // A NULL argument: no rows (the function is strict).
        return Ok(Box::new(Series { next: None, stop: 0, step: 1, ty: s.ty, n: 0 }));
    };
    if step == 0 {
        return Err(SqlError::new(b"22023", "step size cannot equal zero"));
    }
    Ok(Box::new(Series { next: Some(cur), stop, step, ty: s.ty, n: 0 }))
}

/// unnest's rows: one element each.
struct Elements<T>(std::vec::IntoIter<T>);

impl RowIter for Elements<Value> {
    fn next(&mut self, _: &mut Ctx) -> Result<Option<Vec<Value>>> {
        Ok(self.0.next().map(|v| vec![v]))
    }
}

impl RowIter for Elements<Vec<Value>> {
    fn next(&mut self, _: &mut Ctx) -> Result<Option<Vec<Value>>> {
        Ok(self.0.next())
    }
}

struct Series {
    /// The next value, `None` when done.
    next: Option<i64>,
    stop: i64,
    step: i64,
    ty: Type,
    n: u64,
}

impl RowIter for Series {
    fn next(&mut self, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        let Some(v) = self.next else { return Ok(None) };
        if (self.step > 0 && v > self.stop) || (self.step < 0 && v < self.stop) {
            self.next = None;
            return Ok(None);
        }
        self.n += 1;
        if self.n.is_multiple_of(1024) {
            ctx.env.check_interrupts()?;
        }
        // Stop instead of overflowing the type.
        let (min, max) = if self.ty == Type::Int4 { (i32::MIN as i64, i32::MAX as i64) } else { (i64::MIN, i64::MAX) };
        self.next = v.checked_add(self.step).filter(|n| *n >= min && *n <= max);
        Ok(Some(vec![if self.ty == Type::Int8 { Value::Int8(v) } else { Value::Int4(v as i32) }]))
    }
}
