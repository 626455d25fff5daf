//! Analysis of window functions (`f(...) OVER (...)`, `OVER w`, the WINDOW
//! clause); [`crate::window`] runs them.
//!
//! While a query level's target list and ORDER BY are analyzed, the scope
//! collects each window function call ([`WindowFunc`], arguments over the
//! level's row and its aggregate results) and each distinct window
//! definition; the call itself becomes a placeholder, `Func::Window(n)`.
//! When the level is complete, [`Analyzer::window_query`] splits it into
//! PostgreSQL's plan shape: an input query (scan, WHERE, GROUP BY,
//! aggregates, HAVING) projecting every window-free value needed above it, a
//! [`WindowAgg`] over it, and the level's query over the WindowAgg's rows,
//! where each placeholder reads its window function's result column.
//!
//! The windows run in the order PostgreSQL's planner gives them
//! (`select_active_windows`: sorted by their PARTITION BY + ORDER BY keys,
//! each key known by the number of the expression it sorts by, numbered in
//! the order of first mention in the query's ORDER BY, GROUP BY and the
//! windows), so that rows come out of the last window in PostgreSQL's order.

use super::{node, Analyzer, Scope};
use ferrogres_datum::errors::{Result, SqlError};
use crate::plan::*;
use ferrogres_datum::types::{self, CastContext, Type};
use crate::window::{Bound, Exclude, Frame, FrameMode, OrderKey, WinKind, Window, WindowAgg, WindowFunc};
use pg_query::protobuf as pb;
use pg_query::NodeEnum;

// pg_query's WindowDef.frame_options bits (PostgreSQL's FRAMEOPTION_*).
const NONDEFAULT: i32 = 0x00001;
const RANGE: i32 = 0x00002;
const ROWS: i32 = 0x00004;
const GROUPS: i32 = 0x00008;
const START_UNBOUNDED_PRECEDING: i32 = 0x00020;
const END_UNBOUNDED_FOLLOWING: i32 = 0x00100;
const START_CURRENT_ROW: i32 = 0x00200;
const END_CURRENT_ROW: i32 = 0x00400;
const START_OFFSET_PRECEDING: i32 = 0x00800;
const END_OFFSET_PRECEDING: i32 = 0x01000;
const START_OFFSET_FOLLOWING: i32 = 0x02000;
const END_OFFSET_FOLLOWING: i32 = 0x04000;
const EXCLUDE_CURRENT_ROW: i32 = 0x08000;
const EXCLUDE_GROUP: i32 = 0x10000;
const EXCLUDE_TIES: i32 = 0x20000;

const NESTED: &str = "window function calls cannot be nested";
const IN_DEFINITION: &str = "window functions are not allowed in window definitions";

/// Where window functions may appear: a field of the analyzer's scope.
pub(super) enum Windows {
    /// Not here: the clause named in the error ("": worked out from the scope).
    Refused(&'static str),
    Collect(Box<Collected>),
}

impl Default for Windows {
    fn default() -> Windows {
        Windows::Refused("")
    }
}

/// A named window of the WINDOW clause.
struct Named {
    name: String,
    window: Window,
    has_order: bool,
    has_frame: bool,
}

/// The window functions of one query level.
#[derive(Default)]
pub(super) struct Collected {
    named: Vec<Named>,
    funcs: Vec<WindowFunc>,
    windows: Vec<Window>,
    /// Analyzing a window function's arguments or a window definition: the
    /// error for a window function met there.
    inside: Option<&'static str>,
}

impl Collected {
    /// No window function was met.
    pub(super) fn is_empty(&self) -> bool {
        self.funcs.is_empty()
    }

    /// Every expression of the windows and their functions (the 42803 check
    /// of a grouped query reads them), after `hidden`.
    pub(super) fn checked(&self, hidden: &[Expr]) -> Vec<Expr> {
        let mut out = hidden.to_vec();
        for f in &self.funcs {
            out.extend(f.args.iter().cloned());
            if let WinKind::Agg(a) = &f.kind {
                out.extend(a.arg.iter().cloned());
                out.extend(a.filter.iter().cloned());
                out.extend(a.arg2.iter().cloned());
            }
        }
        for w in &self.windows {
            out.extend(w.partition.iter().cloned());
            out.extend(w.order.iter().map(|k| k.expr.clone()));
        }
        out
    }

    /// 0A000 for FOR UPDATE/SHARE with window functions, as PostgreSQL.
    pub(super) fn check_locking(&self, s: &pb::SelectStmt) -> Result<()> {
        if self.funcs.is_empty() {
            return Ok(());
        }
        if let Some(NodeEnum::LockingClause(lc)) = s.locking_clause.first().and_then(|n| n.node.as_ref()) {
            let what = match pb::LockClauseStrength::try_from(lc.strength).unwrap_or(pb::LockClauseStrength::LcsForupdate) {
                pb::LockClauseStrength::LcsForkeyshare => "FOR KEY SHARE",
                pb::LockClauseStrength::LcsForshare => "FOR SHARE",
                pb::LockClauseStrength::LcsFornokeyupdate => "FOR NO KEY UPDATE",
                _ => "FOR UPDATE",
            };
            return Err(SqlError::new(b"0A000", format!("{what} is not allowed with window functions")));
        }
        Ok(())
    }
}

/// 42809 for a window function called without OVER.
pub(super) fn requires_over(name: &str) -> Option<SqlError> {
    window_kind(name).map(|_| SqlError::new(b"42809", format!("window function {name} requires an OVER clause")))
}

fn window_kind(name: &str) -> Option<WinKind> {
    Some(match name {
        "row_number" => WinKind::RowNumber,
        "rank" => WinKind::Rank,
        "dense_rank" => WinKind::DenseRank,
        "percent_rank" => WinKind::PercentRank,
        "cume_dist" => WinKind::CumeDist,
        "ntile" => WinKind::Ntile,
        "lag" => WinKind::Lag,
        "lead" => WinKind::Lead,
        "first_value" => WinKind::FirstValue,
        "last_value" => WinKind::LastValue,
        "nth_value" => WinKind::NthValue,
        _ => return None,
    })
}

/// The type a sort key is compared as: varchar and char sort with text's operators.
fn sort_type_name(t: Type) -> &'static str {
    if matches!(t, Type::Text | Type::Varchar) { "text" } else { t.sql_name() }
}

fn has_window(e: &Expr) -> bool {
    matches!(e, Expr::Func { func: Func::Window(_), .. }) || crate::grouping::children(e).into_iter().any(has_window)
}

/// Builds the input query's target list: each window-free expression once.
struct Pusher {
    /// Columns of the WindowAgg's row before the input row (one per window function).
    base: usize,
    targets: Vec<Target>,
    forms: Vec<String>,
}

impl Pusher {
    /// `e` (window-free) as a column of the WindowAgg's row.
    fn push(&mut self, e: Expr) -> Expr {
        match self.input(e) {
            Expr::Column(i, ty) => Expr::Column(self.base + i, ty),
            e => e,
        }
    }

    /// `e` (window-free) as a column of the input query's row (which the
    /// window functions read).
    fn input(&mut self, e: Expr) -> Expr {
        if matches!(e, Expr::Const(..) | Expr::Param(..)) {
            return e;
        }
        let ty = e.ty();
        let form = format!("{e:?}");
        let i = match self.forms.iter().position(|f| *f == form) {
            Some(i) => i,
            None => {
                self.forms.push(form);
                self.targets.push(Target { name: "?column?".into(), expr: e, typmod: -1, origin: None });
                self.targets.len() - 1
            }
        };
        Expr::Column(i, ty)
    }

    /// `e`, an expression of the level's output, over the WindowAgg's row.
    fn outer(&mut self, mut e: Expr) -> Result<Expr> {
        ferrogres_datum::stack_depth::check()?;
        if let Expr::Func { func: Func::Window(i), ty, .. } = e {
            return Ok(Expr::Column(i, ty));
        }
        // Set-returning calls stay above the WindowAgg (PostgreSQL's
        // ProjectSet over WindowAgg); their arguments are read from below.
        if !has_window(&e) && !crate::project_set::contains_srf(&e) {
            return Ok(self.push(e));
        }
        if matches!(&e, Expr::SubPlan(sp) if sp.correlated) {
            return Err(SqlError::not_supported("a correlated subquery compared with a window function"));
        }
        for c in crate::subquery::children_mut(&mut e) {
            let inner = std::mem::replace(c, Expr::Const(ferrogres_datum::types::Value::Null, Type::Unknown));
            *c = self.outer(inner)?;
        }
        Ok(e)
    }
}

impl<'a> Analyzer<'a> {
    /// Starts collecting window functions for a query level (its target list
    /// and ORDER BY), with the WINDOW clause's definitions.
    pub(super) fn window_clause(&mut self, s: &pb::SelectStmt, scope: &mut Scope) -> Result<()> {
        scope.windows = Windows::Collect(Box::default());
        for n in &s.window_clause {
            let Some(NodeEnum::WindowDef(wd)) = n.node.as_ref() else { continue };
            if let Windows::Collect(c) = &scope.windows {
                if c.named.iter().any(|w| w.name == wd.name) {
                    return Err(self.err_at(SqlError::new(b"42P20", format!("window \"{}\" is already defined", wd.name)), wd.location));
                }
            }
            let (window, has_order, has_frame) = self.window_def(wd, scope)?;
            if let Windows::Collect(c) = &mut scope.windows {
                c.named.push(Named { name: wd.name.clone(), window, has_order, has_frame });
            }
        }
        Ok(())
    }

    /// Ends the collection (HAVING, analyzed next, may not call window functions).
    pub(super) fn take_windows(&mut self, scope: &mut Scope) -> Collected {
        match std::mem::replace(&mut scope.windows, Windows::Refused("HAVING")) {
            Windows::Collect(c) => *c,
            Windows::Refused(_) => Collected::default(),
        }
    }

    fn set_inside(scope: &mut Scope, inside: Option<&'static str>) -> Option<&'static str> {
        match &mut scope.windows {
            Windows::Collect(c) => std::mem::replace(&mut c.inside, inside),
            Windows::Refused(_) => None,
        }
    }

    /// A window definition: (window, has ORDER BY, has a frame clause).
    fn window_def(&mut self, wd: &pb::WindowDef, scope: &mut Scope) -> Result<(Window, bool, bool)> {
        let saved = Self::set_inside(scope, Some(IN_DEFINITION));
        let r = self.window_def_inner(wd, scope);
        Self::set_inside(scope, saved);
        r
    }

    fn window_def_inner(&mut self, wd: &pb::WindowDef, scope: &mut Scope) -> Result<(Window, bool, bool)> {
        let mut order = Vec::new();
        for sb in &wd.order_clause {
            let Some(NodeEnum::SortBy(sb)) = &sb.node else { continue };
            let (desc, nulls_first) = super::sort_direction(sb)?;
            let Some(n) = node(&sb.node) else { continue };
            let e = self.expr(n, scope)?;
            let expr = self.resolve_unknown(e);
            order.push(OrderKey { expr, desc, nulls_first });
        }
        let mut partition = Vec::new();
        for p in &wd.partition_clause {
            let Some(n) = p.node.as_ref() else { continue };
            let e = self.expr(n, scope)?;
            partition.push(self.resolve_unknown(e));
        }
        if !wd.refname.is_empty() {
            let base = match &scope.windows {
                Windows::Collect(c) => c.named.iter().find(|w| w.name == wd.refname),
                Windows::Refused(_) => None,
            };
            let Some(base) = base else {
                return Err(self.err_at(SqlError::new(b"42704", format!("window \"{}\" does not exist", wd.refname)), wd.location));
            };
            if !partition.is_empty() {
                return Err(self.err_at(
                    SqlError::new(b"42P20", format!("cannot override PARTITION BY clause of window \"{}\"", wd.refname)),
                    wd.location,
                ));
            }
            if base.has_order && !order.is_empty() {
                return Err(self.err_at(
                    SqlError::new(b"42P20", format!("cannot override ORDER BY clause of window \"{}\"", wd.refname)),
                    wd.location,
                ));
            }
            if base.has_frame {
                let mut e = SqlError::new(b"42P20", format!("cannot copy window \"{}\" because it has a frame clause", wd.refname));
                if wd.name.is_empty() && order.is_empty() && wd.frame_options & NONDEFAULT == 0 {
                    e = e.with_hint("Omit the parentheses in this OVER clause.");
                }
                return Err(self.err_at(e, wd.location));
            }
            partition = base.window.partition.clone();
            if order.is_empty() {
                order = base.window.order.clone();
            }
        }
        let has_order = !order.is_empty();
        let fo = wd.frame_options;
        let frame = if fo & NONDEFAULT == 0 {
            Frame::default_frame()
        } else {
            let mode = if fo & ROWS != 0 {
                FrameMode::Rows
            } else if fo & GROUPS != 0 {
                FrameMode::Groups
            } else {
                FrameMode::Range
            };
            debug_assert!(mode != FrameMode::Range || fo & RANGE != 0);
            if mode == FrameMode::Range && fo & (START_OFFSET_PRECEDING | START_OFFSET_FOLLOWING | END_OFFSET_PRECEDING | END_OFFSET_FOLLOWING) != 0 && order.len() != 1 {
                return Err(self.err_at(
                    SqlError::new(b"42P20", "RANGE with offset PRECEDING/FOLLOWING requires exactly one ORDER BY column"),
                    wd.location,
                ));
            }
            if mode == FrameMode::Groups && order.is_empty() {
                return Err(self.err_at(SqlError::new(b"42P20", "GROUPS mode requires an ORDER BY clause"), wd.location));
            }
            let start = if fo & START_UNBOUNDED_PRECEDING != 0 {
                Bound::UnboundedPreceding
            } else if fo & START_CURRENT_ROW != 0 {
                Bound::CurrentRow
            } else if fo & START_OFFSET_PRECEDING != 0 {
                Bound::Preceding(self.frame_offset(node(&wd.start_offset), mode, &order, scope)?)
            } else if fo & START_OFFSET_FOLLOWING != 0 {
                Bound::Following(self.frame_offset(node(&wd.start_offset), mode, &order, scope)?)
            } else {
                Bound::UnboundedFollowing
            };
            let end = if fo & END_UNBOUNDED_FOLLOWING != 0 {
                Bound::UnboundedFollowing
            } else if fo & END_OFFSET_PRECEDING != 0 {
                Bound::Preceding(self.frame_offset(node(&wd.end_offset), mode, &order, scope)?)
            } else if fo & END_OFFSET_FOLLOWING != 0 {
                Bound::Following(self.frame_offset(node(&wd.end_offset), mode, &order, scope)?)
            } else {
                debug_assert!(fo & END_CURRENT_ROW != 0 || fo & 0x10 == 0);
                Bound::CurrentRow
            };
            let exclude = if fo & EXCLUDE_CURRENT_ROW != 0 {
                Exclude::CurrentRow
            } else if fo & EXCLUDE_GROUP != 0 {
                Exclude::Group
            } else if fo & EXCLUDE_TIES != 0 {
                Exclude::Ties
            } else {
                Exclude::NoOthers
            };
            Frame { mode, start, end, exclude }
        };
        Ok((Window { partition, order, frame }, has_order, fo & NONDEFAULT != 0))
    }

    /// A frame offset: var-free; bigint for ROWS and GROUPS, for RANGE the
    /// type PostgreSQL's in_range support functions take with the ordering
    /// column's type.
    fn frame_offset(&mut self, n: Option<&NodeEnum>, mode: FrameMode, order: &[OrderKey], scope: &mut Scope) -> Result<Expr> {
        let Some(n) = n else { return Err(SqlError::internal("frame offset without expression")) };
        let what = match mode {
            FrameMode::Rows => "ROWS",
            FrameMode::Range => "RANGE",
            FrameMode::Groups => "GROUPS",
        };
        let loc = super::location(n);
        let aggs = scope.aggs.take();
        let e = self.expr(n, scope);
        scope.aggs = aggs;
        let e = e.map_err(|mut e| {
            if e.sqlstate() == "42803" && e.message.starts_with("aggregate functions are not allowed in") {
                e.message = format!("aggregate functions are not allowed in window {what}");
            }
            e
        })?;
        let mut outer = false;
        let mut probe = e.clone();
        crate::subquery::walk_expr(&mut probe, 0, true, &mut |x, d| outer |= matches!(x, Expr::OuterColumn { levels_up, .. } if *levels_up > d));
        if !crate::subquery::columns_read(&e).is_empty() || outer {
            return Err(self.err_at(SqlError::new(b"42P10", format!("argument of {what} must not contain variables")), loc));
        }
        let from = e.ty();
        if mode != FrameMode::Range {
            if from == Type::Int8 {
                return Ok(e);
            }
            if from != Type::Unknown && !types::cast_allowed(from, Type::Int8, CastContext::Assignment) {
                return Err(self.err_at(
                    SqlError::new(b"42804", format!("argument of {what} must be type bigint, not type {}", from.sql_name())),
                    loc,
                ));
            }
            return self.coerce(e, Type::Int8, CastContext::Assignment, loc);
        }
        let col = order[0].expr.ty();
        let unsupported = |this: &Self| {
            this.err_at(
                SqlError::new(
                    b"42883",
                    format!("RANGE with offset PRECEDING/FOLLOWING is not supported for column type {} and offset type {}", col.sql_name(), from.sql_name()),
                )
                .with_hint("Cast the offset value to an appropriate type."),
                loc,
            )
        };
        let want = match col {
            Type::Int2 | Type::Int4 | Type::Int8 => match from {
                Type::Int2 | Type::Int4 | Type::Int8 => return Ok(e),
                Type::Unknown => col,
                _ => return Err(unsupported(self)),
            },
            Type::Numeric => Type::Numeric,
            Type::Float4 | Type::Float8 => Type::Float8,
            Type::Date | Type::Timestamp | Type::Timestamptz | Type::Interval => Type::Interval,
            Type::Time | Type::TimeTz => return Err(self.err_at(SqlError::not_supported("RANGE offsets over time columns"), loc)),
            _ => {
                return Err(self.err_at(
                    SqlError::new(b"42883", format!("RANGE with offset PRECEDING/FOLLOWING is not supported for column type {}", sort_type_name(col))),
                    loc,
                ))
            }
        };
        if from == want {
            return Ok(e);
        }
        if from != Type::Unknown && !(want == Type::Numeric && from.is_integer()) && !types::cast_allowed(from, want, CastContext::Implicit) {
            return Err(unsupported(self));
        }
        self.coerce(e, want, CastContext::Implicit, loc)
    }

    /// `name(...) OVER ...`: a placeholder for the window function's result.
    pub(super) fn window_call(&mut self, f: &pb::FuncCall, name: &str, scope: &mut Scope) -> Result<Expr> {
        if scope.in_agg {
            return Err(self.err_at(SqlError::new(b"42803", "aggregate function calls cannot contain window function calls"), f.location));
        }
        match &scope.windows {
            Windows::Collect(c) => {
                if let Some(msg) = c.inside {
                    return Err(self.err_at(SqlError::new(b"42P20", msg), f.location));
                }
            }
            Windows::Refused(place) => {
                // WHERE and VALUES mark the scope for set-returning functions too.
                let place = match (scope.no_srf, *place) {
                    (Some(p), _) => p,
                    (None, "") => if scope.table.is_some() || scope.ns.is_some() { "WHERE" } else { "this context" },
                    (None, p) => p,
                };
                return Err(self.err_at(SqlError::new(b"42P20", format!("window functions are not allowed in {place}")), f.location));
            }
        }
        let Some(over) = f.over.as_deref() else { return Err(SqlError::internal("window call without OVER")) };
        let (kind, args, ty) = match window_kind(name) {
            Some(kind) => {
                if f.agg_distinct {
                    return Err(self.err_at(SqlError::new(b"42809", format!("DISTINCT specified, but {name} is not an aggregate function")), f.location));
                }
                if f.agg_filter.is_some() {
                    return Err(self.err_at(SqlError::new(b"0A000", "FILTER is not implemented for non-aggregate window functions"), f.location));
                }
                let saved = Self::set_inside(scope, Some(NESTED));
                let r = self.window_args(f, name, &kind, scope);
                Self::set_inside(scope, saved);
                let (args, ty) = r?;
                (kind, args, ty)
            }
            None => match self.agg_kind(name, f)? {
                Some(ak) if crate::agg_order::is_ordered_set(ak) && f.agg_within_group => {
                    return Err(self.err_at(SqlError::new(b"0A000", format!("OVER is not supported for ordered-set aggregate {name}")), f.location));
                }
                Some(ak) => {
                    if f.agg_distinct {
                        return Err(self.err_at(SqlError::new(b"0A000", "DISTINCT is not implemented for window functions"), f.location));
                    }
                    if !f.agg_order.is_empty() {
                        return Err(self.err_at(SqlError::new(b"0A000", "aggregate ORDER BY is not implemented for window functions"), f.location));
                    }
                    let saved = Self::set_inside(scope, Some(NESTED));
                    let r = self.aggregate_call(f, name, ak, scope, false);
                    Self::set_inside(scope, saved);
                    let a = r?;
                    let ty = a.ty;
                    (WinKind::Agg(a), vec![], ty)
                }
                None => {
                    // A plain function: its own errors first (does it exist?).
                    let mut plain = f.clone();
                    plain.over = None;
                    self.func_call(&plain, scope)?;
                    return Err(self.err_at(
                        SqlError::new(b"42809", format!("OVER specified, but {name} is not a window function nor an aggregate function")),
                        f.location,
                    ));
                }
            },
        };
        let window = if !over.name.is_empty() {
            let named = match &scope.windows {
                Windows::Collect(c) => c.named.iter().find(|w| w.name == over.name).map(|w| w.window.clone()),
                Windows::Refused(_) => None,
            };
            match named {
                Some(w) => w,
                None => return Err(self.err_at(SqlError::new(b"42704", format!("window \"{}\" does not exist", over.name)), over.location)),
            }
        } else {
            self.window_def(over, scope)?.0
        };
        let Windows::Collect(c) = &mut scope.windows else { return Err(SqlError::internal("window collection ended")) };
        let form = format!("{window:?}");
        let wi = match c.windows.iter().position(|w| format!("{w:?}") == form) {
            Some(i) => i,
            None => {
                c.windows.push(window);
                c.windows.len() - 1
            }
        };
        c.funcs.push(WindowFunc { kind, args, window: wi, ty });
        Ok(Expr::Func { func: Func::Window(c.funcs.len() - 1), args: vec![], ty })
    }

    /// The arguments and result type of a window function proper.
    fn window_args(&mut self, f: &pb::FuncCall, name: &str, kind: &WinKind, scope: &mut Scope) -> Result<(Vec<Expr>, Type)> {
        let mut args = Vec::new();
        let mut locs = Vec::new();
        for a in &f.args {
            if let Some(a) = a.node.as_ref() {
                args.push(self.expr(a, scope)?);
                locs.push(super::location(a));
            }
        }
        let types: Vec<Type> = args.iter().map(|a| a.ty()).collect();
        let arity_ok = match kind {
            WinKind::RowNumber | WinKind::Rank | WinKind::DenseRank | WinKind::PercentRank | WinKind::CumeDist => args.is_empty(),
            WinKind::Ntile | WinKind::FirstValue | WinKind::LastValue => args.len() == 1,
            WinKind::Lag | WinKind::Lead => (1..=3).contains(&args.len()),
            WinKind::NthValue => args.len() == 2,
            WinKind::Agg(_) => false,
        };
        if !arity_ok || f.agg_star {
            return Err(self.unknown_function(name, &types, f.location));
        }
        // An integer argument (ntile's, lag/lead's offset, nth_value's n).
        let int_arg = |this: &mut Self, e: Expr, loc: i32| -> Result<Expr> {
            let t = e.ty();
            if t != Type::Unknown && t != Type::Int4 && !types::cast_allowed(t, Type::Int4, CastContext::Implicit) {
                return Err(this.unknown_function(name, &types, f.location));
            }
            this.coerce(e, Type::Int4, CastContext::Implicit, loc)
        };
        let mut it = args.into_iter().zip(locs);
        let out = match kind {
            WinKind::RowNumber | WinKind::Rank | WinKind::DenseRank => (vec![], Type::Int8),
            WinKind::PercentRank | WinKind::CumeDist => (vec![], Type::Float8),
            WinKind::Ntile => {
                let (e, l) = it.next().expect("arity checked");
                (vec![int_arg(self, e, l)?], Type::Int4)
            }
            WinKind::FirstValue | WinKind::LastValue | WinKind::NthValue => {
                let (e, l) = it.next().expect("arity checked");
                let e = if e.ty() == Type::Unknown { self.coerce(e, Type::Text, CastContext::Implicit, l)? } else { e };
                let ty = e.ty();
                let mut out = vec![e];
                if let Some((n, l)) = it.next() {
                    out.push(int_arg(self, n, l)?);
                }
                (out, ty)
            }
            WinKind::Lag | WinKind::Lead => {
                let (e, l) = it.next().expect("arity checked");
                let off = it.next();
                let default = it.next();
                let mut out = Vec::new();
                let (value, default, ty) = match default {
                    Some((d, dl)) => {
                        let (mut v, ty) = self
                            .common_type(vec![(e, l), (d, dl)], name)
                            .map_err(|e| if e.sqlstate() == "42804" { self.unknown_function(name, &types, f.location) } else { e })?;
                        let d = v.pop().expect("two items");
                        (v.pop().expect("two items"), Some(d), ty)
                    }
                    None => {
                        let e = if e.ty() == Type::Unknown { self.coerce(e, Type::Text, CastContext::Implicit, l)? } else { e };
                        let ty = e.ty();
                        (e, None, ty)
                    }
                };
                out.push(value);
                match off {
                    Some((o, ol)) => out.push(int_arg(self, o, ol)?),
                    None if default.is_some() => out.push(Expr::Const(ferrogres_datum::types::Value::Int4(1), Type::Int4)),
                    None => {}
                }
                out.extend(default);
                (out, ty)
            }
            WinKind::Agg(_) => unreachable!("aggregates are analyzed apart"),
        };
        Ok(out)
    }

    /// The level's query with its window functions: unchanged without any,
    /// else the level's projection over a WindowAgg over the rest.
    pub(super) fn window_query(&mut self, q: Query, c: Collected) -> Result<Query> {
        if c.funcs.is_empty() {
            return Ok(q);
        }
        let Collected { mut funcs, windows, .. } = c;
        // PostgreSQL's order of the windows (select_active_windows).
        let mut forms: Vec<String> = Vec::new();
        let mut ref_of = |e: &Expr| -> usize {
            let f = format!("{e:?}");
            match forms.iter().position(|x| *x == f) {
                Some(i) => i + 1,
                None => {
                    forms.push(f);
                    forms.len()
                }
            }
        };
        for k in &q.order {
            let e = q.targets.get(k.column).map(|t| &t.expr).or_else(|| q.hidden.get(k.column - q.targets.len()));
            if let Some(e) = e {
                ref_of(e);
            }
        }
        if let Some(g) = &q.grouping {
            for k in &g.keys {
                ref_of(k);
            }
        }
        // Each window's keys: (sort-group ref, descending, nulls first).
        let mut sort_keys: Vec<Vec<(usize, bool, bool)>> = Vec::new();
        for w in &windows {
            let mut keys: Vec<(usize, bool, bool)> = Vec::new();
            for p in &w.partition {
                let r = ref_of(p);
                if !keys.iter().any(|k| k.0 == r) {
                    keys.push((r, false, false));
                }
            }
            for o in &w.order {
                let r = ref_of(&o.expr);
                if !keys.iter().any(|k| k.0 == r) {
                    keys.push((r, o.desc, o.nulls_first));
                }
            }
            sort_keys.push(keys);
        }
        let mut exec: Vec<usize> = (0..windows.len()).collect();
        exec.sort_by(|&a, &b| {
            let (ka, kb) = (&sort_keys[a], &sort_keys[b]);
            for (x, y) in ka.iter().zip(kb) {
                let o = y.0.cmp(&x.0).then(y.1.cmp(&x.1)).then(y.2.cmp(&x.2));
                if o != std::cmp::Ordering::Equal {
                    return o;
                }
            }
            kb.len().cmp(&ka.len())
        });
        let mut pusher = Pusher { base: funcs.len(), targets: Vec::new(), forms: Vec::new() };
        for f in funcs.iter_mut() {
            f.window = exec.iter().position(|w| *w == f.window).expect("every window is ordered");
            f.args = std::mem::take(&mut f.args).into_iter().map(|a| pusher.input(a)).collect();
            if let WinKind::Agg(a) = &mut f.kind {
                a.arg = a.arg.take().map(|e| pusher.input(e));
                a.filter = a.filter.take().map(|e| pusher.input(e));
                a.arg2 = a.arg2.take().map(|e| pusher.input(e));
            }
        }
        let mut ordered = Vec::new();
        for &w in &exec {
            let mut w = windows[w].clone();
            w.partition = w.partition.into_iter().map(|e| pusher.input(e)).collect();
            for k in w.order.iter_mut() {
                k.expr = pusher.input(std::mem::replace(&mut k.expr, Expr::Const(ferrogres_datum::types::Value::Null, Type::Unknown)));
            }
            ordered.push(w);
        }
        let Query { source, filter, aggregates, targets, hidden, order, limit, offset, grouping, distinct, paths: _, init_plans: _ } = q;
        let mut outer_targets = Vec::new();
        for t in targets {
            outer_targets.push(Target { expr: pusher.outer(t.expr)?, ..t });
        }
        let mut outer_hidden = Vec::new();
        for h in hidden {
            outer_hidden.push(pusher.outer(h)?);
        }
        let input = Query {
            source,
            filter,
            aggregates,
            targets: pusher.targets,
            hidden: vec![],
            order: vec![],
            limit: None,
            offset: None,
            grouping,
            distinct: None,
            paths: Default::default(),
            init_plans: Default::default(),
        };
        Ok(Query {
            source: Source::WindowAgg(Box::new(WindowAgg { input, windows: ordered, funcs })),
            filter: None,
            aggregates: vec![],
            targets: outer_targets,
            hidden: outer_hidden,
            order,
            limit,
            offset,
            grouping: None,
            distinct,
            paths: Default::default(),
            init_plans: Default::default(),
        })
    }
}
