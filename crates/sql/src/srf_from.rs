//! Set-returning functions in FROM beyond a plain integer `generate_series` or
//! one-array `unnest` ([`crate::srf`] keeps those): json[b]_each[_text] (columns
//! `key`, `value`), json[b]_array_elements[_text] (`value`),
//! json[b]_object_keys, generate_series over numeric and over
//! timestamp/timestamptz with an interval step, generate_subscripts,
//! regexp_split_to_table, `unnest(a, b, ...)`, `ROWS FROM (f(), g())`, any
//! other function returning one value (one row: `FROM upper('x')`,
//! `SELECT * FROM pg_stat_statements_reset()`), and WITH ORDINALITY on any
//! of them.
//!
//! A scan is a list of calls whose rows are zipped (ROWS FROM's rule: as many
//! rows as the longest call returns, a call that has run out reads as NULLs),
//! then the ordinality column (int8, from 1). Each call's rows are computed
//! when the scan starts. Column names follow PostgreSQL: a function with named
//! output columns (json_each: key, value) uses them; a scalar result is named
//! after the function, or after the alias when the FROM item is that one
//! function (`unnest(x) AS u` names the column `u`); `AS e(k, v)` renames in
//! order (42P10 for more names than columns).
//!
//! Functions in FROM may read the FROM items to their left (implicitly LATERAL,
//! as in PostgreSQL): `analyze::from` then wraps the scan in a subquery joined
//! laterally ([`lateral_query`]).

use crate::analyze::Analyzer;
use crate::catalog::{Column, Table};
use ferrogres_datum::errors::{Result, SqlError};
use crate::exec::{compare, eval_pure, Ctx};
use crate::plan::{Expr, Func, Query, Source, Target};
use crate::rowio::RelStorage;
use ferrogres_datum::types::{CastContext, Type, Value};
use pg_query::protobuf as pb;
use pg_query::NodeEnum;
use std::cmp::Ordering;

/// One function of a scan; the numbers index [`FuncScan::args`].
#[derive(Clone, Debug)]
pub enum Call {
    /// A set-returning built-in of `crate::functions` (one column).
    Builtin { id: crate::functions::FuncId, args: Vec<usize> },
    /// json[b]_each[_text]: (key text, value).
    Each { jsonb: bool, text: bool, arg: usize },
    /// unnest(array): its elements.
    Unnest(usize),
    /// generate_series over int4/int8, numeric, timestamp or timestamptz (`ty`).
    Series { ty: Type, start: usize, stop: usize, step: Option<usize> },
    /// generate_subscripts(array, dim [, reverse]).
    Subscripts { arr: usize, dim: usize, reverse: Option<usize> },
    /// The positions 1..n of the elements of an array (argument index).
    Positions(usize),
    /// regexp_split_to_table(text, pattern [, flags]).
    Split { s: usize, pattern: usize, flags: Option<usize> },
    /// pg_backup_stop([wait_for_archive]): one row (lsn, labelfile, spcmapfile).
    BackupStop,
    /// Any other function returning one value (not a set, not a record):
    /// one row holding it, as PostgreSQL scans a scalar function in FROM
    /// (`SELECT * FROM pg_stat_statements_reset()`, `FROM upper('x') u`).
    Scalar(usize),
}

impl Call {
    fn width(&self) -> usize {
        match self {
            Call::Each { .. } => 2,
            Call::BackupStop => 3,
            _ => 1,
        }
    }
}

/// A function scan: the calls zipped, then the ordinality.
#[derive(Clone, Debug)]
pub struct FuncScan {
    /// Every call's arguments (they may read enclosing levels: `OuterColumn`).
    pub args: Vec<Expr>,
    pub calls: Vec<Call>,
    pub ordinality: bool,
}

fn not_exist(a: &Analyzer<'_>, name: &str, args: &[Expr], loc: i32) -> SqlError {
    let types: Vec<String> = args.iter().map(|e| if e.ty() == Type::Unknown { "unknown".to_string() } else { e.ty().sql_name().to_string() }).collect();
    a.err_at(
        SqlError::new(b"42883", format!("function {name}({}) does not exist", types.join(", ")))
            .with_hint("No function matches the given name and argument types. You might need to add explicit type casts."),
        loc,
    )
}

/// The column names of an alias (`AS g(a, b)`).
pub(crate) fn alias_colnames(al: &pb::Alias) -> Vec<String> {
    al.colnames
        .iter()
        .filter_map(|n| match n.node.as_ref() {
            Some(NodeEnum::String(s)) => Some(s.sval.clone()),
            _ => None,
        })
        .collect()
}

/// A call's function name, without a `pg_catalog.` qualification.
pub(crate) fn func_name(f: &pb::FuncCall) -> String {
    let names: Vec<&str> = f
        .funcname
        .iter()
        .filter_map(|n| match n.node.as_ref() {
            Some(NodeEnum::String(s)) => Some(s.sval.as_str()),
            _ => None,
        })
        .collect();
    match names.as_slice() {
        ["pg_catalog", n] | [n] => n.to_string(),
        _ => names.join("."),
    }
}

/// Whether `rf` needs this module rather than `crate::srf`'s simple forms.
pub(crate) fn wanted(rf: &pb::RangeFunction) -> bool {
    if rf.ordinality || rf.is_rowsfrom || rf.functions.len() != 1 {
        return true;
    }
    match first_call(&rf.functions[0]) {
        Some(f) => {
            let name = func_name(f);
            !((name == "unnest" && f.args.len() == 1) || name == "generate_series")
        }
        // A function-like expression (coalesce, nullif, CAST, current_date, ...).
        None => first_item(&rf.functions[0]).is_some(),
    }
}

/// The expression of one item of a FROM function list (`ROWS FROM` gives
/// several), whatever its kind.
fn first_item(n: &pb::Node) -> Option<&NodeEnum> {
    match n.node.as_ref() {
        Some(NodeEnum::List(l)) => l.items.first().and_then(|n| n.node.as_ref()),
        _ => None,
    }
}

fn first_call(n: &pb::Node) -> Option<&pb::FuncCall> {
    match n.node.as_ref() {
        Some(NodeEnum::List(l)) => match l.items.first().and_then(|n| n.node.as_ref()) {
            Some(NodeEnum::FuncCall(f)) => Some(f),
            _ => None,
        },
        _ => None,
    }
}

/// Analyzes a function in FROM: the relation the scope sees (a table with no
/// storage, OID 0), its reference name, and the scan.
pub(crate) fn range_function(
    a: &mut Analyzer<'_>,
    rf: &pb::RangeFunction,
    outer: &[std::rc::Rc<crate::analyze::from::Namespace>],
) -> Result<(Table, String, FuncScan)> {
    let mut scan = FuncScan { args: Vec::new(), calls: Vec::new(), ordinality: rf.ordinality };
    // (column name, type, named by the function's output parameters)
    let mut cols: Vec<(String, Type, bool)> = Vec::new();
    let mut first_name = String::new();
    for item in &rf.functions {
        if let Some(NodeEnum::List(l)) = item.node.as_ref() {
            if l.items.get(1).is_some_and(|c| matches!(c.node.as_ref(), Some(NodeEnum::List(cl)) if !cl.items.is_empty())) {
                return Err(SqlError::not_supported("column definition lists for functions in FROM"));
            }
        }
        if !rf.coldeflist.is_empty() {
            return Err(SqlError::not_supported("column definition lists for functions in FROM"));
        }
        let Some(f) = first_call(item) else {
            // The other function-like expressions PostgreSQL's grammar takes
            // in FROM (COALESCE, NULLIF, GREATEST/LEAST, CAST, TREAT,
            // current_date and the other SQL value functions): one value, one
            // row, the column named as the select list would name it
            // (FigureColname: `coalesce`, `int4` for a CAST to integer).
            let Some(n) = first_item(item) else { return Err(SqlError::not_supported("this function in FROM")) };
            let e = a.outer_expr(n, outer)?;
            if matches!(e.ty(), Type::Record(_)) || crate::project_set::contains_srf(&e) {
                return Err(SqlError::not_supported("this expression in FROM"));
            }
            let e = a.resolve_unknown(e);
            let name = a.figure_colname(n, &e);
            if first_name.is_empty() {
                first_name = name.clone();
            }
            cols.push((name, e.ty(), false));
            scan.calls.push(Call::Scalar(scan.args.len()));
            scan.args.push(e);
            continue;
        };
        if f.agg_star || f.agg_distinct || f.over.is_some() || !f.agg_order.is_empty() || f.agg_filter.is_some() || f.func_variadic {
            return Err(a.err_at(SqlError::not_supported("this function call in FROM"), f.location));
        }
        let name = func_name(f);
        if first_name.is_empty() {
            first_name = name.clone();
        }
        let mut args = Vec::new();
        for n in f.args.iter().filter_map(|n| n.node.as_ref()) {
            if matches!(n, NodeEnum::NamedArgExpr(_)) {
                return Err(a.err_at(SqlError::not_supported("named arguments for functions in FROM"), f.location));
            }
            args.push(a.outer_expr(n, outer)?);
        }
        let base = scan.args.len();
        match name.as_str() {
            "unnest" if !args.is_empty() => {
                for (i, e) in args.into_iter().enumerate() {
                    let Some(elem) = e.ty().elem() else {
                        return Err(not_exist(a, "unnest", &[e], f.location));
                    };
                    scan.args.push(e);
                    scan.calls.push(Call::Unnest(base + i));
                    cols.push(("unnest".into(), elem, false));
                }
            }
            "json_each" | "jsonb_each" | "json_each_text" | "jsonb_each_text" if args.len() == 1 => {
                let jsonb = name.starts_with("jsonb");
                let text = name.ends_with("_text");
                let jt = if jsonb { Type::Jsonb } else { Type::Json };
                let e = args.pop().expect("one argument");
                if !(e.ty() == jt || e.ty() == Type::Unknown) {
                    return Err(not_exist(a, &name, &[e], f.location));
                }
                scan.args.push(a.coerce(e, jt, CastContext::Implicit, f.location)?);
                scan.calls.push(Call::Each { jsonb, text, arg: base });
                cols.push(("key".into(), Type::Text, true));
                cols.push(("value".into(), if text { Type::Text } else { jt }, true));
            }
            "generate_series" if args.len() == 2 || args.len() == 3 => {
                let (ty, coerce_to) = series_type(&args).ok_or_else(|| not_exist(a, "generate_series", &args, f.location))?;
                let n = args.len();
                for (i, e) in args.into_iter().enumerate() {
                    let to = if i == 2 { coerce_to } else { ty };
                    scan.args.push(a.coerce(e, to, CastContext::Implicit, f.location)?);
                }
                scan.calls.push(Call::Series { ty, start: base, stop: base + 1, step: (n == 3).then_some(base + 2) });
                cols.push(("generate_series".into(), ty, false));
            }
            // information_schema._pg_expandarray(anyarray): (x, n), each
            // element with its position from 1, whatever the array's lower
            // bound (an int2vector's subscripts start at 0).
            "information_schema._pg_expandarray" if args.len() == 1 => {
                let e = args.pop().expect("one argument");
                let Some(elem) = e.ty().elem() else {
                    return Err(not_exist(a, &name, &[e], f.location));
                };
                scan.args.push(e);
                scan.calls.push(Call::Unnest(base));
                scan.calls.push(Call::Positions(base));
                cols.push(("x".into(), elem, true));
                cols.push(("n".into(), Type::Int4, true));
            }
            "generate_subscripts" if args.len() == 2 || args.len() == 3 => {
                if args[0].ty().elem().is_none() || !(args[1].ty().is_integer() || args[1].ty() == Type::Unknown) {
                    return Err(not_exist(a, &name, &args, f.location));
                }
                let n = args.len();
                let types = [args[0].ty(), Type::Int4, Type::Bool];
                for (i, e) in args.into_iter().enumerate() {
                    scan.args.push(a.coerce(e, types[i], CastContext::Implicit, f.location)?);
                }
                scan.calls.push(Call::Subscripts { arr: base, dim: base + 1, reverse: (n == 3).then_some(base + 2) });
                cols.push(("generate_subscripts".into(), Type::Int4, false));
            }
            "pg_backup_stop" if args.len() <= 1 => {
                // wait_for_archive: accepted (there is no archiving yet).
                for e in args {
                    scan.args.push(a.coerce(e, Type::Bool, CastContext::Implicit, f.location)?);
                }
                scan.calls.push(Call::BackupStop);
                cols.push(("lsn".into(), Type::PgLsn, true));
                cols.push(("labelfile".into(), Type::Text, true));
                cols.push(("spcmapfile".into(), Type::Text, true));
            }
            "regexp_split_to_table" if args.len() == 2 || args.len() == 3 => {
                if args.iter().any(|e| !matches!(e.ty(), Type::Text | Type::Unknown | Type::Varchar | Type::Bpchar | Type::Name)) {
                    return Err(not_exist(a, &name, &args, f.location));
                }
                let n = args.len();
                for e in args {
                    scan.args.push(a.coerce(e, Type::Text, CastContext::Implicit, f.location)?);
                }
                scan.calls.push(Call::Split { s: base, pattern: base + 1, flags: (n == 3).then_some(base + 2) });
                cols.push(("regexp_split_to_table".into(), Type::Text, false));
            }
            _ => {
                // Another set-returning built-in: analyzed as the select list would.
                let call = NodeEnum::FuncCall(Box::new(f.clone()));
                match a.outer_expr(&call, outer)? {
                    Expr::Func { func: Func::Builtin(id), args, ty } if id.get().returns_set() => {
                        let idx: Vec<usize> = (0..args.len()).map(|i| base + i).collect();
                        scan.args.extend(args);
                        scan.calls.push(Call::Builtin { id, args: idx });
                        let out_param = name.contains("array_elements");
                        cols.push((if out_param { "value".into() } else { name.clone() }, ty, out_param));
                    }
                    e if !matches!(e.ty(), Type::Record(_)) && !crate::project_set::contains_srf(&e) => {
                        cols.push((name.clone(), e.ty(), false));
                        scan.args.push(e);
                        scan.calls.push(Call::Scalar(base));
                    }
                    _ => return Err(a.err_at(SqlError::not_supported(format!("function {name} in FROM")), f.location)),
                }
            }
        }
    }
    if scan.ordinality {
        cols.push(("ordinality".into(), Type::Int8, true));
    }
    let refname = rf.alias.as_ref().map_or(first_name, |al| al.aliasname.clone());
    if let Some(al) = &rf.alias {
        // One scalar function: its column takes the alias's name.
        if rf.functions.len() == 1 && scan.calls.len() == 1 && !cols[0].2 {
            cols[0].0 = al.aliasname.clone();
        }
        let names = alias_colnames(al);
        if names.len() > cols.len() {
            return Err(SqlError::new(
                b"42P10",
                format!("table \"{}\" has {} columns available but {} columns specified", al.aliasname, cols.len(), names.len()),
            ));
        }
        for (c, n) in cols.iter_mut().zip(names) {
            c.0 = n;
        }
    }
    let columns: Vec<Column> = cols.iter().map(|(n, t, _)| Column { name: n.clone(), ty: *t, typmod: -1, not_null: false, default: None }).collect();
    let storage = RelStorage {
        rel: ferrogres_engine::storage::RelFileLocator { spc_oid: 0, db_oid: 0, rel_number: 0 },
        toast: None,
        types: columns.iter().map(|c| c.ty).collect(),
        missing: Vec::new(),
        proj: None,
        system: None,
    };
    let table = Table { oid: 0, name: refname.clone(), namespace: 0, storage, columns, indexes: Vec::new(), extras: Default::default() };
    Ok((table, refname, scan))
}

/// generate_series' result type and its step's type from the argument types.
fn series_type(args: &[Expr]) -> Option<(Type, Type)> {
    let known: Vec<Type> = args[..2].iter().map(Expr::ty).filter(|t| *t != Type::Unknown).collect();
    let step = args.get(2).map(Expr::ty);
    if known.iter().any(|t| matches!(t, Type::Timestamp | Type::Timestamptz | Type::Date)) {
        let ty = if known.iter().all(|t| *t == Type::Timestamp) { Type::Timestamp } else { Type::Timestamptz };
        return matches!(step, Some(Type::Interval | Type::Unknown)).then_some((ty, Type::Interval));
    }
    let all = known.iter().copied().chain(step.filter(|t| *t != Type::Unknown));
    let mut ty = Type::Int4;
    for t in all {
        ty = match (ty, t) {
            (_, Type::Numeric) | (Type::Numeric, _) => Type::Numeric,
            (_, Type::Int8) => Type::Int8,
            (cur, Type::Int2 | Type::Int4) => cur,
            _ => return None,
        };
    }
    Some((ty, ty))
}

/// A FROM item for a scan that reads the FROM items to its left: a subquery
/// over the scan, one level down (its arguments were analyzed with the left
/// items as the nearest enclosing level).
pub(crate) fn lateral_query(table: &Table, scan: crate::srf::SeriesScan) -> Query {
    let targets = table
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| Target { name: c.name.clone(), expr: Expr::Column(i, c.ty), typmod: -1, origin: None })
        .collect();
    Query::project(Source::Function(scan), targets)
}

/// The rows of a scan.
pub fn rows(s: &FuncScan, ctx: &mut Ctx) -> Result<Vec<Vec<Value>>> {
    let mut vals = Vec::with_capacity(s.args.len());
    for e in &s.args {
        vals.push(eval_pure(e, &[], ctx.params, &[], ctx.env)?);
    }
    let mut per_call: Vec<Vec<Vec<Value>>> = Vec::new();
    for c in &s.calls {
        per_call.push(call_rows(c, &vals, ctx)?);
    }
    let n = per_call.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let mut row = Vec::new();
        for (c, rows) in s.calls.iter().zip(&per_call) {
            match rows.get(i) {
                Some(r) => row.extend(r.iter().cloned()),
                None => row.extend(std::iter::repeat_n(Value::Null, c.width())),
            }
        }
        if s.ordinality {
            row.push(Value::Int8(i as i64 + 1));
        }
        out.push(row);
    }
    Ok(out)
}

fn call_rows(c: &Call, v: &[Value], ctx: &mut Ctx) -> Result<Vec<Vec<Value>>> {
    let one = |items: Vec<Value>| items.into_iter().map(|x| vec![x]).collect::<Vec<_>>();
    Ok(match c {
        Call::Builtin { id, args } => {
            let vals: Vec<Value> = args.iter().map(|i| v[*i].clone()).collect();
            if id.get().strict && vals.iter().any(Value::is_null) {
                return Ok(vec![]);
            }
            let mut out = Vec::new();
            for x in crate::functions::call_set(*id, &vals)? {
                out.push(vec![x?]);
            }
            out
        }
        Call::Each { jsonb, text, arg } => each(&v[*arg], *jsonb, *text)?,
        Call::BackupStop => {
            let ss = ctx.env.seq_ctx().ok_or_else(|| SqlError::not_supported("pg_backup_stop outside a session"))?;
            let (lsn, label) = ss.stop_backup()?;
            vec![vec![Value::PgLsn(lsn), Value::Text(label), Value::Text(String::new())]]
        }
        Call::Scalar(i) => vec![vec![v[*i].clone()]],
        Call::Unnest(i) => match &v[*i] {
            Value::Array(arr) => one(arr.items.clone()),
            _ => vec![],
        },
        Call::Series { ty, start, stop, step } => series(*ty, &v[*start], &v[*stop], step.map(|i| &v[i]), ctx)?,
        Call::Subscripts { arr, dim, reverse } => {
            let (Value::Array(a), Some(d)) = (&v[*arr], v[*dim].as_i64()) else { return Ok(vec![]) };
            if d != 1 || a.items.is_empty() {
                return Ok(vec![]);
            }
            let lower = a.lower as i64;
            let mut subs: Vec<Value> = (0..a.items.len() as i64).map(|i| Value::Int4((lower + i) as i32)).collect();
            if reverse.is_some_and(|r| v[r] == Value::Bool(true)) {
                subs.reverse();
            }
            one(subs)
        }
        Call::Positions(arr) => {
            let Value::Array(a) = &v[*arr] else { return Ok(vec![]) };
            one((1..=a.items.len() as i64).map(|i| Value::Int4(i as i32)).collect())
        }
        Call::Split { s, pattern, flags } => {
            let (Value::Text(s), Value::Text(p)) = (&v[*s], &v[*pattern]) else { return Ok(vec![]) };
            let flags = match flags.map(|i| &v[i]) {
                Some(Value::Text(f)) => f.as_str(),
                Some(_) => return Ok(vec![]),
                None => "",
            };
            one(ferrogres_datum::pgregex::split(s, p, flags)?.into_iter().map(Value::Text).collect())
        }
    })
}

fn each(j: &Value, jsonb: bool, text: bool) -> Result<Vec<Vec<Value>>> {
    let fname = format!("{}_each{}", if jsonb { "jsonb" } else { "json" }, if text { "_text" } else { "" });
    match j {
        Value::Jsonb(s) => match ferrogres_datum::json::tree(s)? {
            ferrogres_datum::json::Jv::Obj(pairs) => Ok(pairs
                .into_iter()
                .map(|(k, v)| {
                    let value = if text { v.as_text().map_or(Value::Null, Value::Text) } else { Value::Jsonb(v.to_text()) };
                    vec![Value::Text(k), value]
                })
                .collect()),
            _ => Err(SqlError::new(b"22023", format!("cannot call {fname} on a non-object"))),
        },
        Value::Json(s) => match ferrogres_datum::json::json_kind(s) {
            b'{' => Ok(ferrogres_datum::json::json_members(s)
                .unwrap_or_default()
                .into_iter()
                .filter_map(|(k, v)| {
                    let k = ferrogres_datum::json::unquote(k?);
                    let value = if text { ferrogres_datum::json::json_member_text(v).map_or(Value::Null, Value::Text) } else { Value::Json(v.to_string()) };
                    Some(vec![Value::Text(k), value])
                })
                .collect()),
            b'[' => Err(SqlError::new(b"22023", "cannot deconstruct an array as an object")),
            _ => Err(SqlError::new(b"22023", "cannot deconstruct a scalar")),
        },
        _ => Ok(vec![]),
    }
}

fn series(ty: Type, start: &Value, stop: &Value, step: Option<&Value>, ctx: &mut Ctx) -> Result<Vec<Vec<Value>>> {
    if start.is_null() || stop.is_null() || step.is_some_and(Value::is_null) {
        return Ok(vec![]);
    }
    let zero = match ty {
        Type::Timestamp | Type::Timestamptz => Value::Interval(ferrogres_datum::datetime::interval_in("0")?),
        Type::Numeric => ferrogres_datum::types::input(Type::Numeric, "0", -1)?,
        _ => Value::Int8(0),
    };
    let step = match step {
        Some(s) => s.clone(),
        None if ty == Type::Numeric => ferrogres_datum::types::input(Type::Numeric, "1", -1)?,
        None => Value::Int8(1),
    };
    // generate_series_step_numeric's checks, in its order: NaN or infinite
    // bounds and step (an infinite start would repeat forever), then a zero step.
    if ty == Type::Numeric {
        for (v, what) in [(start, "start value"), (stop, "stop value"), (&step, "step size")] {
            if let Value::Numeric(n) = v {
                if n.is_nan() {
                    return Err(SqlError::new(b"22023", format!("{what} cannot be NaN")));
                }
                if n.is_inf() {
                    return Err(SqlError::new(b"22023", format!("{what} cannot be infinity")));
                }
            }
        }
    }
    let dir = match (&step, &zero) {
        (s, _) if ty.is_integer() => s.as_i64().unwrap_or(0).cmp(&0),
        (s, z) => compare(s, z),
    };
    if dir == Ordering::Equal {
        return Err(SqlError::new(b"22023", "step size cannot equal zero"));
    }
    let mut out = Vec::new();
    let mut cur = start.clone();
    loop {
        let c = compare(&cur, stop);
        if (dir == Ordering::Greater && c == Ordering::Greater) || (dir == Ordering::Less && c == Ordering::Less) {
            break;
        }
        out.push(vec![cur.clone()]);
        if out.len().is_multiple_of(1024) {
            ctx.env.check_interrupts()?;
        }
        cur = match ty {
            Type::Numeric => ferrogres_datum::numeric::agg_add(cur, &step)?,
            Type::Timestamp | Type::Timestamptz => ferrogres_datum::datetime::call(ferrogres_datum::datetime::DtFunc::TsPlusInterval(ty), &[cur, step.clone()])?,
            _ => {
                let (min, max) = if ty == Type::Int4 { (i32::MIN as i64, i32::MAX as i64) } else { (i64::MIN, i64::MAX) };
                match cur.as_i64().and_then(|x| x.checked_add(step.as_i64().unwrap_or(0))).filter(|n| *n >= min && *n <= max) {
                    Some(n) if ty == Type::Int4 => Value::Int4(n as i32),
                    Some(n) => Value::Int8(n),
                    None => break,
                }
            }
        };
    }
    Ok(out)
}
