//! The executor: expression evaluation and volcano-style operators over the
//! engine's heap (`SeqScan -> Filter -> Aggregate -> Project -> Sort -> Limit`),
//! plus INSERT and DELETE.
//!
//! Rows are pulled one at a time through [`RowIter`]s. The sequential scan of a
//! query's table streams page by page (`rowio::RowScan`); Sort, DISTINCT and
//! GROUP BY hold at most `work_mem` of rows and spill beyond it (`crate::sort`,
//! `crate::grouping`); an index scan's rows and the inputs of joins and of DML
//! are still collected.

use ferrogres_datum::errors::{Result, SqlError};
use crate::plan::*;
use crate::rowio::insert_row;
use ferrogres_datum::array::ArrayFunc;
use ferrogres_datum::types::{self, out_of_range, Type, Value};
use ferrogres_engine::engine::Backend;
use ferrogres_engine::txn::snapshot::Snapshot;
use std::borrow::Cow;
use std::cmp::Ordering;
use std::collections::HashMap;

/// What the executor needs from the session besides the engine.
pub trait Env {
    /// CHECK_FOR_INTERRUPTS: a cancel or shutdown request becomes an error.
    fn check_interrupts(&self) -> Result<()>;
    fn get_setting(&self, name: &str) -> Result<String>;
    fn set_setting(&mut self, name: &str, value: &str) -> Result<()>;
    fn pid(&self) -> i32;
    /// The text `version()` returns.
    fn version(&self) -> String;
    /// The lock manager side of lock functions (advisory locks, ...), if any.
    fn lock_ctx(&mut self) -> Option<&mut crate::locking::LockCtx> {
        None
    }
    /// The top-level transaction's full xid (epoch and xid, as txid_current()
    /// shows it), assigned first if `assign`; `None` if none is assigned. Only
    /// the executor's [`Ctx`] has the transaction.
    fn top_full_xid(&mut self, _assign: bool) -> Result<Option<u64>> {
        Err(SqlError::not_supported("txid_current() in this part of a statement"))
    }
    /// pg_xact_status() of the full xid `fxid`: its status, `None` once the
    /// clog may no longer hold it, 22023 for an xid not yet assigned. Only the
    /// executor's [`Ctx`] has the transaction.
    fn xact_status(&mut self, _fxid: u64) -> Result<Option<&'static str>> {
        Err(SqlError::not_supported("pg_xact_status() in this part of a statement"))
    }
    /// pg_current_snapshot(): the statement's snapshot with full transaction
    /// ids. Only the executor's [`Ctx`] has it.
    fn current_snapshot(&mut self) -> Result<ferrogres_datum::pg_snapshot::PgSnapshot> {
        Err(SqlError::not_supported("pg_current_snapshot() in this part of a statement"))
    }
    /// The backend and statement snapshot of the executor running the call,
    /// for functions whose permission rules depend on the current role and
    /// a runtime argument (pg_cancel_backend's target, ...). Only the
    /// executor's [`Ctx`] has them.
    fn caller(&self) -> Option<(&Backend, &Snapshot)> {
        None
    }
    /// The current role and the role graph, for those permission rules
    /// (PostgreSQL's GetUserId() and has_privs_of_role).
    fn caller_roles(&self) -> Result<(u32, std::sync::Arc<crate::acl::RoleGraph>)> {
        let (backend, snap) = self.caller().ok_or_else(|| SqlError::internal("a permission check outside the executor"))?;
        Ok((backend.current_user, crate::acl::role_graph(backend, snap)?))
    }
    /// 42501 "permission denied for function `name`" unless the current role
    /// is a superuser: the functions PostgreSQL 15 creates with EXECUTE
    /// revoked from PUBLIC (pg_stat_reset, pg_stat_statements_reset, ...);
    /// there are no function ACLs here to GRANT it back.
    fn require_superuser_for(&self, name: &str) -> Result<()> {
        let (me, roles) = self.caller_roles()?;
        if roles.superuser(me) {
            Ok(())
        } else {
            Err(SqlError::new(b"42501", format!("permission denied for function {name}")))
        }
    }
    /// The session's sequence state (currval, lastval), if any.
    fn seq_ctx(&mut self) -> Option<&mut crate::sequence::SeqSession> {
        self.lock_ctx().map(|l| &mut l.seqs)
    }

    /// The backend and snapshot of the running query, for functions that read
    /// the catalogs per row (has_table_privilege & co.); only an environment
    /// that runs a query (a [`Ctx`]) has them.
    fn catalog(&self) -> Option<(&Backend, &Snapshot)> {
        None
    }

    /// Every setting as (name, value, default), for pg_settings (`crate::pgcatalog`).
    fn settings(&self) -> Vec<(String, String, String)> {
        Vec::new()
    }

    /// Evaluates a subquery in an expression for `row` ([`crate::subquery`]);
    /// only an environment that can run queries (a [`Ctx`]) can.
    fn run_subplan(&mut self, _sp: &crate::subquery::SubPlan, _row: &[Value], _params: &[Value], _aggs: &[Value]) -> Result<Value> {
        Err(SqlError::not_supported("subqueries in this context"))
    }
}

/// An [`Env`]'s interrupt check as what functions below the executor poll
/// ([`ferrogres_datum::errors::Interrupts`]).
pub struct EnvInterrupts<'a>(pub &'a dyn Env);

impl ferrogres_datum::errors::Interrupts for EnvInterrupts<'_> {
    fn check(&self) -> Result<()> {
        self.0.check_interrupts()
    }
}

/// Counts the iterations of a loop over rows and polls the interrupt check
/// (cancel, shutdown, the statement's memory limit) every 1024 of them.
#[derive(Default)]
pub(crate) struct Ticker(u32);

impl Ticker {
    #[inline]
    pub(crate) fn tick(&mut self, env: &dyn Env) -> Result<()> {
        self.0 = self.0.wrapping_add(1);
        if self.0.is_multiple_of(1024) {
            env.check_interrupts()
        } else {
            Ok(())
        }
    }
}

/// Sorts rows with `cmp`, polling the interrupt check every 65536
/// comparisons: after a cancel the comparisons answer Equal so that the sort
/// ends at once, and the cancel is returned.
pub(crate) fn sort_checked<T>(rows: &mut [T], env: &dyn Env, mut cmp: impl FnMut(&T, &T) -> Ordering) -> Result<()> {
    let mut n: u32 = 0;
    let mut failed: Option<SqlError> = None;
    rows.sort_by(|a, b| {
        if failed.is_some() {
            return Ordering::Equal;
        }
        n = n.wrapping_add(1);
        if n.is_multiple_of(65536) {
            if let Err(e) = env.check_interrupts() {
                failed = Some(e);
                return Ordering::Equal;
            }
        }
        cmp(a, b)
    });
    failed.map_or(Ok(()), Err)
}

/// Every row of `it`, polling the interrupt check as they come.
pub(crate) fn drain(it: &mut dyn RowIter, ctx: &mut Ctx) -> Result<Vec<Vec<Value>>> {
    let mut rows = Vec::new();
    let mut t = Ticker::default();
    while let Some(r) = it.next(ctx)? {
        t.tick(&*ctx.env)?;
        rows.push(r);
    }
    Ok(rows)
}

/// The executor's context is an [`Env`] that also runs subqueries: operators
/// pass it to [`eval_pure`] so that expressions may hold them.
impl Env for Ctx<'_> {
    fn check_interrupts(&self) -> Result<()> {
        self.env.check_interrupts()
    }
    fn get_setting(&self, name: &str) -> Result<String> {
        self.env.get_setting(name)
    }
    fn set_setting(&mut self, name: &str, value: &str) -> Result<()> {
        // set_config(): a superuser setting needs SET on it, as SET does.
        crate::param_acl::check_set(self.backend, &self.snap, name)?;
        self.env.set_setting(name, value)
    }
    fn catalog(&self) -> Option<(&Backend, &Snapshot)> {
        Some((&*self.backend, &self.snap))
    }
    fn pid(&self) -> i32 {
        self.env.pid()
    }
    fn version(&self) -> String {
        self.env.version()
    }
    fn lock_ctx(&mut self) -> Option<&mut crate::locking::LockCtx> {
        self.env.lock_ctx()
    }
    fn caller(&self) -> Option<(&Backend, &Snapshot)> {
        Some((&*self.backend, &self.snap))
    }
    fn top_full_xid(&mut self, assign: bool) -> Result<Option<u64>> {
        let txn = &mut self.backend.txn;
        Ok(if assign { Some(txn.assign_top_full_xid()?) } else { txn.top_full_xid() }.map(|f| f.0))
    }
    fn current_snapshot(&mut self) -> Result<ferrogres_datum::pg_snapshot::PgSnapshot> {
        use ferrogres_engine::txn::xid::xid_is_normal;
        let next = self.backend.txn.shared().next_full_xid().0;
        // An xid above the next xid's low 32 bits belongs to the previous epoch.
        let widen = |xid: u32| -> u64 {
            if !xid_is_normal(xid) {
                return xid as u64;
            }
            let epoch = (next >> 32) - u64::from(xid > next as u32);
            (epoch << 32) | xid as u64
        };
        let mut xip: Vec<u64> = self.snap.xip.iter().map(|&x| widen(x)).collect();
        xip.sort_unstable();
        xip.dedup();
        Ok(ferrogres_datum::pg_snapshot::PgSnapshot { xmin: widen(self.snap.xmin), xmax: widen(self.snap.xmax), xip })
    }
    fn xact_status(&mut self, fxid: u64) -> Result<Option<&'static str>> {
        use ferrogres_engine::txn::clog::XidStatus;
        use ferrogres_engine::txn::xid::{xid_is_normal, xid_precedes};
        let txn = &self.backend.txn;
        let shared = txn.shared();
        let next = shared.next_full_xid().0;
        if fxid >= next {
            return Err(SqlError::new(b"22023", format!("transaction ID {fxid} is in the future")));
        }
        let (xid, epoch, next_epoch) = (fxid as u32, fxid >> 32, next >> 32);
        if xid == ferrogres_engine::txn::xid::INVALID_XID {
            return Ok(None);
        }
        if xid_is_normal(xid) {
            // The clog holds at most the last 2^32 xids, and none older than
            // the oldest unfrozen one.
            let within_epoch = epoch == next_epoch || (epoch + 1 == next_epoch && xid >= next as u32);
            if !within_epoch || xid_precedes(xid, shared.oldest_frozen_xid()) {
                return Ok(None);
            }
        }
        if txn.is_current_xid(xid) {
            return Ok(Some("in progress"));
        }
        Ok(Some(match shared.xid_status(xid)? {
            XidStatus::Committed => "committed",
            XidStatus::Aborted => "aborted",
            // Neither committed nor aborted: running, or ended by a crash
            // if it precedes every xid our snapshot saw running.
            _ if xid_precedes(xid, self.snap.xmin) => "aborted",
            _ => "in progress",
        }))
    }
    fn settings(&self) -> Vec<(String, String, String)> {
        self.env.settings()
    }
    fn run_subplan(&mut self, sp: &crate::subquery::SubPlan, row: &[Value], params: &[Value], aggs: &[Value]) -> Result<Value> {
        crate::subquery::run(sp, row, params, aggs, self)
    }
}

pub struct Ctx<'a> {
    pub backend: &'a mut Backend,
    pub snap: Snapshot,
    pub params: &'a [Value],
    pub env: &'a mut dyn Env,
}

/// Evaluates an expression without input (a DEFAULT): `None` if it needs a row
/// or the session.
pub fn eval_const(e: &Expr) -> Result<Option<Value>> {
    fn is_const(e: &Expr) -> bool {
        match e {
            Expr::Const(..) => true,
            Expr::Cast { arg, .. } | Expr::Neg(arg, _) | Expr::Not(arg) => is_const(arg),
            Expr::Arith { l, r, .. } | Expr::Compare { l, r, .. } | Expr::Concat(l, r) => is_const(l) && is_const(r),
            Expr::And(v) | Expr::Or(v) => v.iter().all(is_const),
            Expr::IsNull { arg, .. } => is_const(arg),
            Expr::Case { .. } | Expr::Coalesce(..) | Expr::NullIf { .. } | Expr::MinMax { .. } | Expr::Distinct { .. } | Expr::Like { .. } => {
                crate::grouping::children(e).into_iter().all(is_const)
            }
            _ => false,
        }
    }
    if !is_const(e) {
        return Ok(None);
    }
    eval_no_row(e).map(Some)
}

/// Evaluates an expression that reads no row, parameter, aggregate or
/// session state (constant folding, `crate::optimizer::fold`): a session
/// function called here fails.
pub fn eval_no_row(e: &Expr) -> Result<Value> {
    struct NoEnv;
    impl Env for NoEnv {
        fn check_interrupts(&self) -> Result<()> {
            Ok(())
        }
        fn get_setting(&self, _: &str) -> Result<String> {
            Err(SqlError::internal("no session"))
        }
        fn set_setting(&mut self, _: &str, _: &str) -> Result<()> {
            Err(SqlError::internal("no session"))
        }
        fn pid(&self) -> i32 {
            0
        }
        fn version(&self) -> String {
            String::new()
        }
    }
    eval_pure(e, &[], &[], &[], &mut NoEnv)
}

fn arith_int(op: ArithOp, a: i64, b: i64, ty: Type) -> Result<Value> {
    let (min, max) = match ty {
        Type::Int2 => (i16::MIN as i64, i16::MAX as i64),
        Type::Int4 => (i32::MIN as i64, i32::MAX as i64),
        _ => (i64::MIN, i64::MAX),
    };
    let r = match op {
        ArithOp::Add => a.checked_add(b),
        ArithOp::Sub => a.checked_sub(b),
        ArithOp::Mul => a.checked_mul(b),
        ArithOp::Div => {
            if b == 0 {
                return Err(SqlError::new(b"22012", "division by zero"));
            }
            a.checked_div(b)
        }
        ArithOp::Mod => {
            if b == 0 {
                return Err(SqlError::new(b"22012", "division by zero"));
            }
            Some(if b == -1 { 0 } else { a % b })
        }
    };
    let r = r.filter(|v| *v >= min && *v <= max).ok_or_else(|| out_of_range(ty))?;
    Ok(match ty {
        Type::Int2 => Value::Int2(r as i16),
        Type::Int4 => Value::Int4(r as i32),
        _ => Value::Int8(r),
    })
}

fn arith_float(op: ArithOp, a: f64, b: f64) -> Result<Value> {
    let r = match op {
        ArithOp::Add => a + b,
        ArithOp::Sub => a - b,
        ArithOp::Mul => a * b,
        ArithOp::Div => {
            if b == 0.0 {
                return Err(SqlError::new(b"22012", "division by zero"));
            }
            a / b
        }
        ArithOp::Mod => return Err(SqlError::not_supported("% for double precision")),
    };
    if r.is_infinite() && a.is_finite() && b.is_finite() {
        return Err(SqlError::new(b"22003", "value out of range: overflow"));
    }
    if r == 0.0 && a != 0.0 && matches!(op, ArithOp::Mul | ArithOp::Div) && b.is_finite() {
        return Err(SqlError::new(b"22003", "value out of range: underflow"));
    }
    Ok(Value::Float8(r))
}

// Value comparison is datum-level (arrays and jsonb order their elements with it).
pub use ferrogres_datum::types::compare;

/// `e`'s value, borrowed when it is a column, constant, parameter or
/// aggregate result (no clone: a numeric or text operand of a comparison or
/// of arithmetic is read where it is), else evaluated by [`eval_pure`].
#[inline]
pub(crate) fn operand<'v>(e: &'v Expr, row: &'v [Value], params: &'v [Value], aggs: &'v [Value], env: &mut dyn Env) -> Result<Cow<'v, Value>> {
    let found = match e {
        Expr::Const(v, _) => Some(v),
        Expr::Column(i, _) => row.get(*i),
        Expr::Param(i, _) => params.get(*i),
        Expr::AggRef(i, _) => aggs.get(*i),
        _ => None,
    };
    match found {
        Some(v) => Ok(Cow::Borrowed(v)),
        // Anything else, and the errors of a reference out of range.
        None => Ok(Cow::Owned(eval_pure(e, row, params, aggs, env)?)),
    }
}

/// A string operand read where it is: a constant, a column, or a
/// `character(n)` column cast to `text` (its value without the trailing
/// spaces, as the cast makes it). `Some(None)`: NULL; `None`: not one of
/// these (or not a string).
#[inline]
fn str_operand<'v>(e: &'v Expr, row: &'v [Value]) -> Option<Option<&'v str>> {
    let v = match e {
        Expr::Const(v, _) => v,
        Expr::Column(i, _) => row.get(*i)?,
        Expr::Cast { arg, from: Type::Bpchar, to: Type::Text, .. } => match &**arg {
            Expr::Column(..) => return str_operand(arg, row).map(|s| s.map(|s| s.trim_end_matches(' '))),
            _ => return None,
        },
        _ => return None,
    };
    match v {
        Value::Null => Some(None),
        Value::Text(s) => Some(Some(s)),
        _ => None,
    }
}

/// The order of a comparison's operands when one is a `character(n)`
/// column cast to `text` (TPC-H's `l_shipmode IN ('MAIL', 'SHIP')`, `p_brand
/// = 'Brand#12'`) and the other a string read where it is: the trimmed
/// value compared without making the cast's copy of it, on every row.
/// `Some(None)`: NULL; `None`: not such a comparison (evaluate it as usual).
/// Text values compare by their bytes ([`compare`]), so this is the same order.
#[inline]
fn trimmed_compare(l: &Expr, r: &Expr, row: &[Value]) -> Option<Option<Ordering>> {
    let cast = |e: &Expr| matches!(e, Expr::Cast { from: Type::Bpchar, to: Type::Text, .. });
    if !cast(l) && !cast(r) {
        return None;
    }
    match (str_operand(l, row)?, str_operand(r, row)?) {
        (Some(a), Some(b)) => Some(Some(a.as_bytes().cmp(b.as_bytes()))),
        _ => Some(None),
    }
}

/// `x op ANY (items)` / `x op ALL (items)` over a constant array (an IN
/// list, `analyze::exprs::constant_list`): `x` evaluated once and compared
/// with each item where it is, without copying the array or `x`; a
/// `character(n)` column cast to `text` is compared trimmed, as
/// [`trimmed_compare`] does. The result is `ArrayFunc::AnyAll`'s: the first
/// comparison that decides (true for ANY, false for ALL), else NULL when an
/// item was NULL, else ALL's empty answer.
///
/// `x = ANY` and `x <> ALL` of at least [`MIN_HASHED_ITEMS`] items look `x`
/// up in a hash table of the items ([`ListLookup`]) instead, as PostgreSQL
/// 14+ does (PostgreSQL 15 for `<> ALL`, NOT IN): made on the first row from
/// the plan's constant and kept with it (`ArrayCache`), so once per plan
/// copy, not per row.
#[allow(clippy::too_many_arguments)]
fn any_all_const(op: CmpOp, all: bool, x: &Expr, arr: &ferrogres_datum::array::Array, row: &[Value], params: &[Value], aggs: &[Value], env: &mut dyn Env) -> Result<Value> {
    let items = &arr.items[..];
    if items.is_empty() {
        return Ok(Value::Bool(all));
    }
    let holds = |o: Ordering| op.holds(o);
    let mut saw_null = false;
    let lookup = match (op, all) {
        (CmpOp::Eq, false) | (CmpOp::Ne, true) if items.len() >= MIN_HASHED_ITEMS => arr.cache.get_or_init(|| ListLookup::new(items)).filter(|l| l.kind.is_some()),
        _ => None,
    };
    // A found item decides: true for `= ANY`, false for `<> ALL`; else NULL
    // when an item is NULL, else the other answer.
    let looked_up = |found: bool, l: &ListLookup| match (found, l.has_null) {
        (true, _) => Value::Bool(!all),
        (false, true) => Value::Null,
        (false, false) => Value::Bool(all),
    };
    if matches!(x, Expr::Cast { from: Type::Bpchar, to: Type::Text, .. }) {
        if let Some(s) = str_operand(x, row) {
            let Some(s) = s else { return Ok(Value::Null) };
            if let Some(l) = lookup.filter(|l| l.kind == Some(ValueKind::Text)) {
                let found = l.candidates(ferrogres_engine::hash::hashfunc::hash_text(s.as_bytes())).any(|i| matches!(&items[i], Value::Text(t) if t.as_bytes() == s.as_bytes()));
                return Ok(looked_up(found, l));
            }
            for v in items {
                match v {
                    Value::Text(t) => {
                        if holds(s.as_bytes().cmp(t.as_bytes())) != all {
                            return Ok(Value::Bool(!all));
                        }
                    }
                    Value::Null => saw_null = true,
                    _ => return Err(SqlError::internal("a text IN list with an item that is not text")),
                }
            }
            return Ok(if saw_null { Value::Null } else { Value::Bool(all) });
        }
    }
    let x = operand(x, row, params, aggs, env)?;
    if x.is_null() {
        return Ok(Value::Null);
    }
    if let Some(l) = lookup.filter(|l| l.kind == value_kind(&x)) {
        let found = l.candidates(crate::hashjoin::value_hash(&x)).any(|i| compare(&x, &items[i]) == Ordering::Equal);
        return Ok(looked_up(found, l));
    }
    for v in items {
        if v.is_null() {
            saw_null = true;
        } else if holds(compare(&x, v)) != all {
            return Ok(Value::Bool(!all));
        }
    }
    Ok(if saw_null { Value::Null } else { Value::Bool(all) })
}

/// PostgreSQL's MIN_ARRAY_SIZE_FOR_HASHED_SAOP: a shorter list is searched
/// in order (building a table would cost more than it saves).
const MIN_HASHED_ITEMS: usize = 9;

/// The classes of values whose equality under [`compare`] is their
/// [`crate::hashjoin::value_hash`]'s: the integers of every width (compared
/// as i64) are one class; a value of one class is never compared with one
/// of another through the table (the loop decides those, as before).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ValueKind {
    Int,
    Float8,
    Float4,
    Numeric,
    Text,
    Bytea,
    Uuid,
    Bool,
    Date,
    Time,
    Timestamp,
    Timestamptz,
}

fn value_kind(v: &Value) -> Option<ValueKind> {
    if v.as_i64().is_some() {
        return Some(ValueKind::Int);
    }
    Some(match v {
        Value::Float8(_) => ValueKind::Float8,
        Value::Float4(_) => ValueKind::Float4,
        Value::Numeric(_) => ValueKind::Numeric,
        Value::Text(_) => ValueKind::Text,
        Value::Bytea(_) => ValueKind::Bytea,
        Value::Uuid(_) => ValueKind::Uuid,
        Value::Bool(_) => ValueKind::Bool,
        Value::Date(_) => ValueKind::Date,
        Value::Time(_) => ValueKind::Time,
        Value::Timestamp(_) => ValueKind::Timestamp,
        Value::Timestamptz(_) => ValueKind::Timestamptz,
        _ => return None,
    })
}

/// A constant list's items by hash (PostgreSQL's hashed ScalarArrayOpExpr):
/// the positions of the items of each hash, probed with `x`'s hash and
/// confirmed with [`compare`]. `kind`: the class of every non-null item
/// (`None`: items of several classes or of one without a hash here; the
/// list is then searched in order).
struct ListLookup {
    kind: Option<ValueKind>,
    positions: HashMap<u32, Vec<usize>>,
    has_null: bool,
}

impl ListLookup {
    fn new(items: &[Value]) -> ListLookup {
        let mut kinds = items.iter().filter(|v| !v.is_null()).map(value_kind);
        let first = kinds.next().flatten();
        let kind = if kinds.all(|k| k == first) { first } else { None };
        let mut positions: HashMap<u32, Vec<usize>> = HashMap::new();
        if kind.is_some() {
            for (i, v) in items.iter().enumerate().filter(|(_, v)| !v.is_null()) {
                positions.entry(crate::hashjoin::value_hash(v)).or_default().push(i);
            }
        }
        ListLookup { kind, positions, has_null: items.iter().any(|v| v.is_null()) }
    }

    fn candidates(&self, hash: u32) -> impl Iterator<Item = usize> + '_ {
        self.positions.get(&hash).into_iter().flatten().copied()
    }
}

/// Evaluates `e` over an input row, parameters and aggregate results.
pub fn eval_pure(e: &Expr, row: &[Value], params: &[Value], aggs: &[Value], env: &mut dyn Env) -> Result<Value> {
    ferrogres_datum::stack_depth::check()?;
    let ev = |x: &Expr, env: &mut dyn Env| eval_pure(x, row, params, aggs, env);
    Ok(match e {
        Expr::Const(v, _) => v.clone(),
        Expr::Column(i, _) => row.get(*i).cloned().ok_or_else(|| SqlError::internal("column out of range"))?,
        Expr::Param(i, _) => params.get(*i).cloned().ok_or_else(|| SqlError::new(b"42P02", format!("there is no parameter ${}", i + 1)))?,
        Expr::AggRef(i, _) => aggs.get(*i).cloned().ok_or_else(|| SqlError::internal("aggregate out of range"))?,
        Expr::Cast { arg, from, to, typmod, explicit } => types::cast(ev(arg, env)?, *from, *to, *typmod, *explicit)?,
        Expr::Arith { op, l, r, ty } => {
            let (a, b) = (operand(l, row, params, aggs, env)?, operand(r, row, params, aggs, env)?);
            if a.is_null() || b.is_null() {
                return Ok(Value::Null);
            }
            match (&*a, &*b) {
                (Value::Float8(x), Value::Float8(y)) => arith_float(*op, *x, *y)?,
                (Value::Numeric(x), Value::Numeric(y)) => Value::Numeric(ferrogres_datum::numeric::arith(*op, x, y)?),
                (Value::Float4(x), Value::Float4(y)) => types::float4_arith(*op == ArithOp::Mod, arith_float(*op, *x as f64, *y as f64)?, *x, *y)?,
                (a, b) => match (a.as_i64(), b.as_i64()) {
                    (Some(x), Some(y)) => arith_int(*op, x, y, *ty)?,
                    _ => return Err(SqlError::internal("arithmetic on non-numbers")),
                },
            }
        }
        Expr::Neg(arg, ty) => match ev(arg, env)? {
            Value::Null => Value::Null,
            Value::Float8(f) => Value::Float8(-f),
            Value::Float4(f) => Value::Float4(-f),
            Value::Numeric(n) => Value::Numeric(n.negate()),
            v => arith_int(ArithOp::Sub, 0, v.as_i64().unwrap_or(0), *ty)?,
        },
        Expr::Compare { op, l, r } => {
            let o = match trimmed_compare(l, r, row) {
                Some(None) => return Ok(Value::Null),
                Some(Some(o)) => o,
                None => {
                    let (a, b) = (operand(l, row, params, aggs, env)?, operand(r, row, params, aggs, env)?);
                    if a.is_null() || b.is_null() {
                        return Ok(Value::Null);
                    }
                    compare(&a, &b)
                }
            };
            Value::Bool(op.holds(o))
        }
        Expr::Concat(l, r) => {
            let (a, b) = (ev(l, env)?, ev(r, env)?);
            // Each side as its cast to text (a boolean reads `true`, not `t`);
            // a text value is used as it is, not copied.
            let text = |v: Value| match v {
                Value::Text(s) => Some(s),
                Value::Bool(b) => Some(b.to_string()),
                v => types::output(&v),
            };
            match (text(a), text(b)) {
                (Some(mut x), Some(y)) => {
                    ferrogres_datum::errors::check_result_len(x.len() + y.len())?;
                    crate::memory::reserve_growth(x.len(), x.capacity(), y.len())?;
                    x.push_str(&y);
                    Value::Text(x)
                }
                _ => Value::Null,
            }
        }
        Expr::And(args) => {
            let mut saw_null = false;
            for a in args {
                match ev(a, env)? {
                    Value::Bool(false) => return Ok(Value::Bool(false)),
                    Value::Null => saw_null = true,
                    _ => {}
                }
            }
            if saw_null { Value::Null } else { Value::Bool(true) }
        }
        Expr::Or(args) => {
            let mut saw_null = false;
            for a in args {
                match ev(a, env)? {
                    Value::Bool(true) => return Ok(Value::Bool(true)),
                    Value::Null => saw_null = true,
                    _ => {}
                }
            }
            if saw_null { Value::Null } else { Value::Bool(false) }
        }
        Expr::Not(a) => match ev(a, env)? {
            Value::Bool(b) => Value::Bool(!b),
            _ => Value::Null,
        },
        Expr::IsNull { arg, negated } => Value::Bool(ev(arg, env)?.is_null() != *negated),
        Expr::Func { func: Func::Array(ArrayFunc::AnyAll { op, all }), args, .. } if matches!(args.get(1), Some(Expr::Const(Value::Array(_), _))) => {
            let Some(Expr::Const(Value::Array(items), _)) = args.get(1) else { unreachable!("matched a constant array") };
            any_all_const(*op, *all, &args[0], items, row, params, aggs, env)?
        }
        Expr::Func { func, args, ty } => {
            let vals: Vec<Value> = args.iter().map(|a| ev(a, env)).collect::<Result<_>>()?;
            call(*func, vals, *ty, env)?
        }
        Expr::Case { whens, default, .. } => {
            for (cond, result) in whens {
                if ev(cond, env)? == Value::Bool(true) {
                    return ev(result, env);
                }
            }
            ev(default, env)?
        }
        Expr::Coalesce(args, _) => {
            for a in args {
                let v = ev(a, env)?;
                if !v.is_null() {
                    return Ok(v);
                }
            }
            Value::Null
        }
        Expr::NullIf { arg, eq } => {
            if ev(eq, env)? == Value::Bool(true) {
                Value::Null
            } else {
                ev(arg, env)?
            }
        }
        Expr::MinMax { args, greatest, .. } => {
            let want = if *greatest { Ordering::Greater } else { Ordering::Less };
            let mut best = Value::Null;
            for a in args {
                let v = ev(a, env)?;
                if !v.is_null() && (best.is_null() || compare(&v, &best) == want) {
                    best = v;
                }
            }
            best
        }
        Expr::Distinct { l, r, negated } => {
            let (a, b) = (ev(l, env)?, ev(r, env)?);
            let same = match (a.is_null(), b.is_null()) {
                (true, true) => true,
                (false, false) => compare(&a, &b) == Ordering::Equal,
                _ => false,
            };
            Value::Bool(same == *negated)
        }
        Expr::Like { arg, pat, escape, ci } => {
            let (a, p) = (ev(arg, env)?, ev(pat, env)?);
            let esc = match escape {
                Some(e) => Some(ev(e, env)?),
                None => None,
            };
            ferrogres_datum::like::like(&a, &p, esc.as_ref(), *ci)?
        }
        Expr::SubPlan(sp) => env.run_subplan(sp, row, params, aggs)?,
        Expr::OuterColumn { .. } => return Err(SqlError::internal("outer column reference not bound")),
        Expr::OuterAggRef { .. } => return Err(SqlError::internal("outer aggregate reference not bound")),
    })
}

fn call(func: Func, vals: Vec<Value>, ty: Type, env: &mut dyn Env) -> Result<Value> {
    let text = |v: &Value| match v {
        Value::Text(s) => Some(s.clone()),
        _ => None,
    };
    Ok(match func {
        Func::Lock(lf) => crate::locking::call(lf, &vals, env)?,
        Func::Wal(f) => crate::walstat::call(f, &vals, env)?,
        Func::Stat(f) => crate::statviews::call(f, &vals, env)?,
        Func::Array(af) => ferrogres_datum::array::call(af, &vals, ty)?,
        Func::Catalog(cf) => crate::pgcatalog::call(cf, &vals, env)?,
        Func::Seq(f) => crate::sequence::call(f, &vals, env)?,
        Func::Builtin(id) => crate::functions::call(id, &vals, &EnvInterrupts(&*env))?,
        Func::Variadic(id) => crate::functions::call_variadic(id, vals, &EnvInterrupts(&*env))?,
        Func::Window(_) => return Err(SqlError::internal("window function outside a WindowAgg")),
        Func::Grouping(_) => return Err(SqlError::internal("GROUPING outside a grouped query")),
        Func::Field(n) => match vals.into_iter().next() {
            Some(Value::Record(r)) => r.values.into_iter().nth(n).unwrap_or(Value::Null),
            _ => Value::Null,
        },
        Func::Version => Value::Text(env.version()),
        Func::BackendPid => Value::Int4(env.pid()),
        Func::TxidCurrent | Func::TxidCurrentIfAssigned => {
            env.top_full_xid(func == Func::TxidCurrent)?.map_or(Value::Null, |x| Value::Int8(x as i64))
        }
        Func::Int4AsXid => match vals[0] {
            Value::Int4(i) => Value::Oid(i as u32),
            _ => Value::Null,
        },
        Func::CurrentSnapshot => Value::PgSnapshot(Box::new(env.current_snapshot()?)),
        Func::CurrentXactId | Func::CurrentXactIdIfAssigned => env.top_full_xid(func == Func::CurrentXactId)?.map_or(Value::Null, Value::Xid8),
        Func::XactStatus => match vals[0] {
            Value::Xid8(x) => env.xact_status(x)?.map_or(Value::Null, |s| Value::Text(s.into())),
            // txid_status(bigint): a negative one is in the future too.
            Value::Int8(x) => env.xact_status(x as u64)?.map_or(Value::Null, |s| Value::Text(s.into())),
            _ => Value::Null,
        },
        Func::Sleep => {
            let secs = match vals[0] {
                Value::Float8(f) if f.is_finite() => f.clamp(0.0, 1e9),
                _ => 0.0,
            };
            let end = std::time::Instant::now() + std::time::Duration::from_secs_f64(secs);
            use ferrogres_engine::pgstat::wait_event::{report_wait_end, report_wait_start, WaitEvent};
            // pg_stat_activity shows Timeout:PgSleep, as PostgreSQL does.
            report_wait_start(WaitEvent::Timeout("PgSleep"));
            let r = loop {
                if let Err(e) = env.check_interrupts() {
                    break Err(e);
                }
                let now = std::time::Instant::now();
                if now >= end {
                    break Ok(());
                }
                std::thread::sleep((end - now).min(std::time::Duration::from_millis(10)));
            };
            report_wait_end();
            r?;
            Value::Null
        }
        Func::SetConfig => {
            let (Some(name), Some(value)) = (text(&vals[0]), text(&vals[1])) else {
                return Err(SqlError::new(b"22004", "SET requires parameter name"));
            };
            if vals[2] == Value::Bool(true) {
                return Err(SqlError::not_supported("set_config(..., is_local => true)"));
            }
            env.set_setting(&name, &value)?;
            Value::Text(env.get_setting(&name)?)
        }
        Func::CurrentSetting => match text(&vals[0]) {
            Some(n) => Value::Text(env.get_setting(&n)?),
            None => Value::Null,
        },
        Func::Length => match text(&vals[0]) {
            Some(s) => Value::Int4(s.chars().count() as i32),
            None => Value::Null,
        },
        Func::Upper => text(&vals[0]).map_or(Value::Null, |s| Value::Text(s.to_uppercase())),
        Func::Lower => text(&vals[0]).map_or(Value::Null, |s| Value::Text(s.to_lowercase())),
        Func::Abs => match &vals[0] {
            Value::Null => Value::Null,
            Value::Float8(f) => Value::Float8(f.abs()),
            Value::Float4(f) => Value::Float4(f.abs()),
            Value::Numeric(n) => Value::Numeric(n.abs()),
            v => {
                let i = v.as_i64().unwrap_or(0);
                if i < 0 { arith_int(ArithOp::Sub, 0, i, ty)? } else { v.clone() }
            }
        },
        Func::DateTime(f) => ferrogres_datum::datetime::call(f, &vals)?,
        Func::Numeric(f) => ferrogres_datum::numeric::call(f, &vals)?,
        Func::OctetLength => match &vals[0] {
            Value::Bytea(b) => Value::Int4(b.len() as i32),
            Value::Text(s) => Value::Int4(s.len() as i32),
            _ => Value::Null,
        },
    })
}

/// A pull-based operator: `next()` yields rows until `None`.
pub trait RowIter: Send {
    fn next(&mut self, ctx: &mut Ctx) -> Result<Option<Vec<Value>>>;
}

impl RowIter for Box<dyn RowIter> {
    fn next(&mut self, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        (**self).next(ctx)
    }
}

struct VecIter(std::vec::IntoIter<Vec<Value>>);
impl RowIter for VecIter {
    fn next(&mut self, _: &mut Ctx) -> Result<Option<Vec<Value>>> {
        Ok(self.0.next())
    }
}

/// A sequential scan streaming its rows page by page ([`crate::rowio::RowScan`]):
/// the Filter above it sees each row as it is read, and a Limit above stops it.
struct SeqScan(crate::rowio::RowScan);
impl RowIter for SeqScan {
    fn next(&mut self, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        if self.0.at_page_boundary() {
            ctx.env.check_interrupts()?;
        }
        Ok(self.0.next(ctx.backend, &ctx.snap)?.map(|r| r.1))
    }
}

/// Each conjunct of a filter with the columns it reads that no earlier one did.
type Stages = Vec<(Vec<usize>, Expr)>;

/// A sequential scan that evaluates the filter above it itself, conjunct by
/// conjunct, each conjunct's columns made into values just before it (issue
/// 19, TPC-H Q6: the scan was bound by making every read column of every
/// tuple): a tuple that fails a conjunct costs the columns read so far, and
/// the other columns the scan passes up are made only for the tuples that
/// pass. Only rows that pass the whole filter come out, and the scan says so
/// to its caller ([`Scan::filtered`]), which then applies no Filter of its
/// own: the filter is evaluated once per tuple, as PostgreSQL's qual on a
/// Seq Scan is (EXPLAIN still prints it as the scan's `Filter:`). It is used
/// only for a filter of plain operators and non-volatile built-in functions
/// (no subquery, whose evaluation needs the executor around the scan), and
/// not under EXPLAIN ANALYZE, whose row counts are taken between the scan
/// and the filter. A conjunct that is not true (false or NULL) ends the
/// tuple, as PostgreSQL's qual evaluation does.
struct FilteredSeqScan {
    scan: crate::rowio::RowScan,
    stages: Stages,
    /// The other columns the scan reads, made once a tuple passed.
    rest: Vec<usize>,
    /// The row being made, reused while tuples fail.
    row: Vec<Value>,
}

impl FilteredSeqScan {
    /// The stages and the other columns of a scan of `scan`'s relation under
    /// `filter`; `None` when `filter` does not qualify (see the type's doc).
    fn plan(scan: &crate::rowio::RowScan, filter: &Expr) -> Option<(Stages, Vec<usize>)> {
        if crate::explain::instrumenting() || !repeatable(filter) || scan.has_system_columns() {
            return None;
        }
        let width = scan.width();
        let conjuncts: Vec<&Expr> = match filter {
            Expr::And(args) => args.iter().collect(),
            e => vec![e],
        };
        let mut made = vec![false; width];
        let mut stages = Vec::with_capacity(conjuncts.len());
        for c in conjuncts {
            let mut cols = crate::subquery::columns_read(c);
            cols.sort_unstable();
            cols.dedup();
            if cols.iter().any(|&i| i >= width || !scan.reads(i)) {
                return None;
            }
            cols.retain(|&i| !std::mem::replace(&mut made[i], true));
            stages.push((cols, prepare_qual(c)));
        }
        let rest = (0..width).filter(|&i| !made[i] && scan.reads(i)).collect();
        Some((stages, rest))
    }
}

/// `e` as it is run, with the comparisons of a date column cast to
/// `timestamp` against a constant timestamp (TPC-H Q6's `l_shipdate < date
/// '1994-01-01' + interval '1' year`, folded to a timestamp constant) made
/// comparisons of the date with a date constant, found once here instead of
/// casting the column on every row. The plan (and EXPLAIN) keep the
/// comparison as written. It is exact: a date's timestamp is its midnight, so
/// against a timestamp `t` on day `d` (`d` itself when `t` is midnight,
/// `d + 1` otherwise for `<` and `>=`), and it raises no "date out of range
/// for timestamp" for a date past timestamp's range, as PostgreSQL's
/// cross-type date/timestamp comparison raises none. `=` and `<>` against a
/// timestamp that is not a midnight, infinite timestamps and `timestamptz`
/// (whose cast reads TimeZone) are left alone.
/// Conjuncts and disjuncts are rewritten through AND, OR and NOT. A filter
/// with no such comparison (the usual one) is only copied: the search for
/// one costs a walk of its AND/OR/NOT spine, at each execution.
pub(crate) fn prepare_qual(e: &Expr) -> Expr {
    if has_date_cast_compare(e) {
        rewrite_date_compares(e)
    } else {
        e.clone()
    }
}

/// Whether an AND/OR/NOT-reachable comparison of `e` has a date cast to
/// `timestamp` on one side (what [`prepare_qual`] may rewrite).
fn has_date_cast_compare(e: &Expr) -> bool {
    let date_cast = |e: &Expr| matches!(e, Expr::Cast { from: Type::Date, to: Type::Timestamp, .. });
    match e {
        Expr::And(args) | Expr::Or(args) => args.iter().any(has_date_cast_compare),
        Expr::Not(a) => has_date_cast_compare(a),
        Expr::Compare { l, r, .. } => date_cast(l) || date_cast(r),
        _ => false,
    }
}

fn rewrite_date_compares(e: &Expr) -> Expr {
    match e {
        Expr::And(args) => Expr::And(args.iter().map(rewrite_date_compares).collect()),
        Expr::Or(args) => Expr::Or(args.iter().map(rewrite_date_compares).collect()),
        Expr::Not(a) => Expr::Not(Box::new(rewrite_date_compares(a))),
        Expr::Compare { op, l, r } => date_compare(*op, l, r)
            .or_else(|| date_compare(op.commuted(), r, l))
            .unwrap_or_else(|| e.clone()),
        e => e.clone(),
    }
}


/// `date_expr::timestamp OP t` as a comparison of `date_expr` with a date,
/// when `cast` is such a cast and `t` a finite timestamp constant.
fn date_compare(op: CmpOp, cast: &Expr, t: &Expr) -> Option<Expr> {
    let Expr::Cast { arg, from: Type::Date, to: Type::Timestamp, .. } = cast else { return None };
    let Expr::Const(Value::Timestamp(t), _) = t else { return None };
    if *t == ferrogres_datum::datetime::DT_NOEND || *t == ferrogres_datum::datetime::DT_NOBEGIN {
        return None;
    }
    let day = t.div_euclid(ferrogres_datum::datetime::USECS_PER_DAY);
    let midnight = t.rem_euclid(ferrogres_datum::datetime::USECS_PER_DAY) == 0;
    // The date a column's date is compared with: midnight(x) < t is x < d
    // when t is d's midnight, else x <= d, that is x < d + 1.
    let bound = match op {
        CmpOp::Lt | CmpOp::Ge if !midnight => day + 1,
        CmpOp::Lt | CmpOp::Ge | CmpOp::Le | CmpOp::Gt => day,
        CmpOp::Eq | CmpOp::Ne if midnight => day,
        CmpOp::Eq | CmpOp::Ne => return None,
    };
    let bound = i32::try_from(bound).ok().filter(|b| *b != i32::MAX && *b != i32::MIN)?;
    Some(Expr::Compare { op, l: arg.clone(), r: Box::new(Expr::Const(Value::Date(bound), Type::Date)) })
}

/// Whether evaluating `e` twice over a row is the same as once: operators,
/// constants, columns, parameters and non-volatile built-in functions only.
fn repeatable(e: &Expr) -> bool {
    let mut ok = true;
    crate::subquery::visit_expr(e, 0, true, &mut |e, _| {
        ok &= match e {
            Expr::Func { func: Func::Builtin(id), .. } => {
                let b = id.get();
                b.volatility != crate::functions::Volatility::Volatile && !b.returns_set()
            }
            Expr::Const(..)
            | Expr::Column(..)
            | Expr::Param(..)
            | Expr::Cast { .. }
            | Expr::Arith { .. }
            | Expr::Neg(..)
            | Expr::Compare { .. }
            | Expr::Concat(..)
            | Expr::And(_)
            | Expr::Or(_)
            | Expr::Not(_)
            | Expr::IsNull { .. }
            | Expr::Case { .. }
            | Expr::Coalesce(..)
            | Expr::NullIf { .. }
            | Expr::MinMax { .. }
            | Expr::Distinct { .. }
            | Expr::Like { .. } => true,
            // Array constructors, subscripts and ANY/ALL: immutable.
            Expr::Func { func: Func::Array(_), .. } => true,
            _ => false,
        }
    });
    ok
}

impl RowIter for FilteredSeqScan {
    fn next(&mut self, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        'tuple: loop {
            if self.scan.at_page_boundary() {
                ctx.env.check_interrupts()?;
            }
            if !self.scan.step(ctx.backend, &ctx.snap)? {
                return Ok(None);
            }
            for s in 0..self.stages.len() {
                let (cols, cond) = &self.stages[s];
                self.scan.fill(ctx.backend, &ctx.snap, cols, &mut self.row)?;
                let params = ctx.params;
                if eval_pure(cond, &self.row, params, &[], ctx)? != Value::Bool(true) {
                    for (cols, _) in &self.stages[..=s] {
                        for &i in cols {
                            self.row[i] = Value::Null;
                        }
                    }
                    continue 'tuple;
                }
            }
            self.scan.fill(ctx.backend, &ctx.snap, &self.rest, &mut self.row)?;
            let width = self.row.len();
            return Ok(Some(std::mem::replace(&mut self.row, vec![Value::Null; width])));
        }
    }
}

struct SeriesIter {
    cur: i64,
    end: i64,
    ty: Type,
}
impl RowIter for SeriesIter {
    fn next(&mut self, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        if self.cur > self.end {
            return Ok(None);
        }
        if self.cur % 1024 == 0 {
            ctx.env.check_interrupts()?;
        }
        let v = if self.ty == Type::Int8 { Value::Int8(self.cur) } else { Value::Int4(self.cur as i32) };
        // Stop after the last value without overflowing.
        if self.cur == self.end {
            self.end = self.cur - 1;
        } else {
            self.cur += 1;
        }
        Ok(Some(vec![v]))
    }
}

struct Filter<I> {
    input: I,
    pred: Expr,
    tick: Ticker,
}
impl<I: RowIter> RowIter for Filter<I> {
    fn next(&mut self, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        while let Some(row) = self.input.next(ctx)? {
            self.tick.tick(&*ctx.env)?;
            if qual(&self.pred, &row, ctx)? {
                return Ok(Some(row));
            }
        }
        Ok(None)
    }
}

struct Project<I> {
    input: I,
    exprs: Vec<Expr>,
    n: u64,
}
impl<I: RowIter> RowIter for Project<I> {
    fn next(&mut self, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        let Some(row) = self.input.next(ctx)? else { return Ok(None) };
        self.n += 1;
        if self.n.is_multiple_of(1024) {
            ctx.env.check_interrupts()?;
        }
        let params = ctx.params;
        let out = self.exprs.iter().map(|e| eval_pure(e, &row, params, &[], ctx)).collect::<Result<_>>()?;
        Ok(Some(out))
    }
}

pub(crate) fn limit_value(e: &Option<Expr>, ctx: &mut Ctx, what: &str, code: &[u8; 5]) -> Result<Option<i64>> {
    let Some(e) = e else { return Ok(None) };
    // With the context as the environment: a subquery may give the count.
    let params = ctx.params;
    match eval_pure(e, &[], params, &[], ctx)? {
        Value::Null => Ok(None),
        v => {
            let n = v.as_i64().unwrap_or(0);
            if n < 0 {
                return Err(SqlError::new(code, format!("{what} must not be negative")));
            }
            Ok(Some(n))
        }
    }
}

/// One ORDER BY key's order of two values, with its direction and null placement.
pub fn compare_key(x: &Value, y: &Value, desc: bool, nulls_first: bool) -> Ordering {
    match (x.is_null(), y.is_null()) {
        (true, true) => Ordering::Equal,
        (true, false) => if nulls_first { Ordering::Less } else { Ordering::Greater },
        (false, true) => if nulls_first { Ordering::Greater } else { Ordering::Less },
        _ => {
            let o = compare(x, y);
            if desc { o.reverse() } else { o }
        }
    }
}

/// ORDER BY's order of two rows: each key in turn, with its direction and null
/// placement.
pub fn compare_rows(a: &[Value], b: &[Value], keys: &[SortKey]) -> Ordering {
    for k in keys {
        let (x, y) = (&a[k.column], &b[k.column]);
        let o = compare_key(x, y, k.desc, k.nulls_first);
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// A row iterator over rows already computed.
pub fn rows_iter(rows: Vec<Vec<Value>>) -> impl RowIter {
    VecIter(rows.into_iter())
}

/// The rows of a source other than a table (the sources joins and subqueries
/// hold; a table is scanned with its query's WHERE: [`run_query`]).
pub fn source_rows(s: &Source, ctx: &mut Ctx) -> Result<Box<dyn RowIter>> {
    ferrogres_datum::stack_depth::check()?;
    Ok(match s {
        Source::Table(t) => Box::new(VecIter(crate::index::scan_table(t, None, ctx)?.into_iter().map(|r| r.1).collect::<Vec<_>>().into_iter())),
        Source::Join(j) => crate::join::run(j, ctx)?,
        Source::Subquery(q) => run_query(q, ctx)?,
        Source::Values(rows) => {
            let mut out = Vec::with_capacity(rows.len());
            for r in rows {
                let params = ctx.params;
                out.push(r.iter().map(|e| eval_pure(e, &[], params, &[], ctx)).collect::<Result<Vec<_>>>()?);
            }
            Box::new(VecIter(out.into_iter()))
        }
        Source::SetOp(s) => crate::setop::run(s, ctx)?,
        Source::Recursive(r) => crate::setop::run_recursive(r, ctx)?,
        Source::WorkTable(id) => Box::new(VecIter(crate::setop::work_table(*id)?.into_iter())),
        Source::WindowAgg(w) => crate::window::run(w, ctx)?,
        other => {
            let q = Query::project(other.clone(), vec![]);
            return Ok(run_source(&q, ctx)?.rows);
        }
    })
}

/// The rows a scan of a table under a filter streams, and whether the scan
/// applied that filter itself.
pub struct Scan {
    pub rows: Box<dyn RowIter>,
    /// True when every row of `rows` passed the filter (a [`FilteredSeqScan`]):
    /// the caller must not evaluate it again. False: `rows` may hold rows that
    /// fail it, and the caller applies it.
    pub filtered: bool,
}

impl Scan {
    fn unfiltered(rows: Box<dyn RowIter>) -> Scan {
        Scan { rows, filtered: false }
    }

    /// `filter`, unless the scan applied it already.
    pub fn remaining<'f>(&self, filter: Option<&'f Expr>) -> Option<&'f Expr> {
        filter.filter(|_| !self.filtered)
    }
}

/// The rows of `t` that may pass `filter`, streamed: a sequential scan page
/// by page, or the rows of the index scan [`crate::index::open_table_scan`]
/// chooses for `filter`. The caller applies `filter` unless
/// [`Scan::filtered`] says the scan did.
pub fn table_rows(t: &crate::catalog::Table, filter: Option<&Expr>, ctx: &mut Ctx) -> Result<Scan> {
    Ok(match crate::index::open_table_scan(t, filter, &crate::index::PathCache::default(), ctx)? {
        crate::index::TableScan::Seq(scan) => seq_scan(*scan, filter),
        crate::index::TableScan::Rows(rows) => Scan::unfiltered(Box::new(VecIter(rows.into_iter().map(|r| r.1).collect::<Vec<_>>().into_iter()))),
    })
}

/// A sequential scan under `filter`: [`FilteredSeqScan`] where it may (it
/// applies the filter), else a plain [`SeqScan`] (the caller applies it).
fn seq_scan(scan: crate::rowio::RowScan, filter: Option<&Expr>) -> Scan {
    match filter.and_then(|f| FilteredSeqScan::plan(&scan, f)) {
        Some((stages, rest)) => {
            let row = vec![Value::Null; scan.width()];
            Scan { rows: Box::new(FilteredSeqScan { scan, stages, rest, row }), filtered: true }
        }
        None => Scan::unfiltered(Box::new(SeqScan(scan))),
    }
}

/// Runs a query to a row iterator of its output columns.
pub fn run_query(q: &Query, ctx: &mut Ctx) -> Result<Box<dyn RowIter>> {
    // Uncorrelated subqueries are run once, now (InitPlans).
    if let Some(bound) = crate::subquery::init_plans(q, ctx)? {
        return crate::explain::with_alias(q, &bound, || run_query_inner(&bound, ctx));
    }
    run_query_inner(q, ctx)
}

/// The rows of `q`'s source, with whether its scan applied `q.filter` ([`Scan`]).
fn run_source(q: &Query, ctx: &mut Ctx) -> Result<Scan> {
    let rows: Box<dyn RowIter> = match &q.source {
        Source::OneRow => Box::new(VecIter(vec![vec![]].into_iter())),
        Source::Virtual(oid) if crate::pgcatalog::is_view(*oid) => Box::new(VecIter(crate::pgcatalog::rows(*oid, ctx.backend, &ctx.snap, &*ctx.env)?.into_iter())),
        Source::Virtual(oid) if crate::statviews::is_view(*oid) => Box::new(VecIter(crate::statviews::rows(*oid, ctx.backend, &ctx.snap)?.into_iter())),
        Source::Virtual(oid) => Box::new(VecIter(crate::sysviews::rows(*oid, ctx.backend, &ctx.snap)?.into_iter())),
        Source::Table(t) => match crate::index::ordered_scan(t, q, ctx)? {
            Some(rows) => Box::new(VecIter(rows.into_iter())),
            None => match crate::index::open_table_scan(t, q.filter.as_ref(), &q.paths, ctx)? {
                crate::index::TableScan::Seq(scan) => return Ok(seq_scan(*scan, q.filter.as_ref())),
                crate::index::TableScan::Rows(rows) => Box::new(VecIter(rows.into_iter().map(|r| r.1).collect::<Vec<_>>().into_iter())),
            },
        },
        Source::Series(a, b, ty) => {
            let a = eval_pure(a, &[], ctx.params, &[], ctx.env)?;
            let b = eval_pure(b, &[], ctx.params, &[], ctx.env)?;
            match (a.as_i64(), b.as_i64()) {
                (Some(cur), Some(end)) => Box::new(SeriesIter { cur, end, ty: *ty }),
                _ => Box::new(VecIter(vec![].into_iter())),
            }
        }
        Source::Function(f) => crate::srf::scan(f, ctx)?,
        other => source_rows(other, ctx)?,
    };
    Ok(Scan::unfiltered(rows))
}

fn run_query_inner(q: &Query, ctx: &mut Ctx) -> Result<Box<dyn RowIter>> {
    ferrogres_datum::stack_depth::check()?;
    use crate::explain::{key, wrap, Stage};
    let scan = run_source(q, ctx)?;
    let filter = scan.remaining(q.filter.as_ref());
    let input = wrap(scan.rows, key(&q.source), Stage::Scan);
    let mut input: Box<dyn RowIter> = match filter {
        Some(p) => wrap(Box::new(Filter { input, pred: prepare_qual(p), tick: Ticker::default() }), key(q), Stage::Filter),
        None => input,
    };
    let mut exprs: Vec<Expr> = q.targets.iter().map(|t| t.expr.clone()).collect();
    exprs.extend(q.hidden.iter().cloned());
    let srfs = exprs.iter().any(crate::project_set::contains_srf);
    if srfs && (q.grouping.is_some() || !q.aggregates.is_empty()) {
        return Err(SqlError::not_supported("set-returning functions in the select list with aggregates or GROUP BY"));
    }
    let mut rows: Box<dyn RowIter> = if srfs && q.grouping.is_none() && q.aggregates.is_empty() {
        Box::new(crate::project_set::ProjectSet::new(input, exprs))
    } else if let Some(g) = &q.grouping {
        crate::grouping::run(g, &q.aggregates, input, &exprs, ctx)?
    } else if q.aggregates.is_empty() {
        Box::new(Project { input, exprs, n: 0 })
    } else {
        let results = aggregate(&q.aggregates, &mut input, ctx)?;
        let params = ctx.params;
        let row = exprs.iter().map(|e| eval_pure(e, &[], params, &results, ctx)).collect::<Result<_>>()?;
        Box::new(VecIter(vec![row].into_iter()))
    };
    rows = wrap(rows, key(q), Stage::Agg);
    // LIMIT and OFFSET are known before the first row is asked for (as
    // PostgreSQL's ExecLimit computes them): the sort below may keep only the
    // rows they let through.
    let offset = limit_value(&q.offset, ctx, "OFFSET", b"2201X")?.unwrap_or(0);
    let limit = limit_value(&q.limit, ctx, "LIMIT", b"2201W")?;
    if let Some(keys) = &q.distinct {
        rows = wrap(crate::grouping::distinct(rows, &q.order, keys, key(q), ctx)?, key(q), Stage::Sort);
    } else if !q.order.is_empty() {
        let bound = limit.and_then(|l| usize::try_from(l.checked_add(offset)?).ok());
        rows = wrap(crate::sort::sort_rows(rows, q.order.clone(), bound, key(q), ctx)?, key(q), Stage::Sort);
    }
    let width = q.targets.len();
    Ok(wrap(Box::new(Limit { input: rows, skip: offset, left: limit, width }), key(q), Stage::Top))
}

struct Limit {
    input: Box<dyn RowIter>,
    skip: i64,
    left: Option<i64>,
    /// Output columns kept (hidden sort columns are dropped).
    width: usize,
}
impl RowIter for Limit {
    fn next(&mut self, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        if self.left == Some(0) {
            return Ok(None);
        }
        while self.skip > 0 {
            if self.input.next(ctx)?.is_none() {
                return Ok(None);
            }
            self.skip -= 1;
        }
        let Some(mut row) = self.input.next(ctx)? else { return Ok(None) };
        row.truncate(self.width);
        if let Some(l) = &mut self.left {
            *l -= 1;
        }
        Ok(Some(row))
    }
}

fn aggregate(aggs: &[Aggregate], input: &mut Box<dyn RowIter>, ctx: &mut Ctx) -> Result<Vec<Value>> {
    let mut state: Vec<Value> = aggs
        .iter()
        .map(|a| if matches!(a.kind, AggKind::CountStar | AggKind::Count) { Value::Int8(0) } else { Value::Null })
        .collect();
    // sum of numeric: the running totals (added to without allocating),
    // made the state's value after the last row.
    let mut totals: Vec<Option<ferrogres_datum::numeric::SumAccum>> = vec![None; aggs.len()];
    let mut t = Ticker::default();
    while let Some(row) = input.next(ctx)? {
        t.tick(&*ctx.env)?;
        for ((a, st), total) in aggs.iter().zip(state.iter_mut()).zip(totals.iter_mut()) {
            let params = ctx.params;
            let v = match &a.arg {
                Some(e) => operand(e, &row, params, &[], ctx)?,
                None => Cow::Owned(Value::Bool(true)),
            };
            if v.is_null() {
                continue;
            }
            if a.kind == AggKind::Sum && a.ty == Type::Numeric {
                let x = match &*v {
                    Value::Numeric(x) => Cow::Borrowed(x),
                    other => Cow::Owned(
                        ferrogres_datum::numeric::of_value(other).ok_or_else(|| SqlError::internal(format!("numeric sum of {other:?}")))?,
                    ),
                };
                total.get_or_insert_with(Default::default).add(&x)?;
                continue;
            }
            let v = v.into_owned();
            *st = match (a.kind, std::mem::replace(st, Value::Null)) {
                (AggKind::CountStar | AggKind::Count, Value::Int8(n)) => Value::Int8(n + 1),
                (AggKind::Sum, Value::Null) => match v {
                    Value::Float8(f) => Value::Float8(f),
                    Value::Float4(f) => Value::Float4(f),
                    v => Value::Int8(v.as_i64().unwrap_or(0)),
                },
                (AggKind::Sum, Value::Float4(s)) => Value::Float4(s + if let Value::Float4(f) = v { f } else { 0.0 }),
                (AggKind::Sum, Value::Float8(s)) => Value::Float8(s + if let Value::Float8(f) = v { f } else { 0.0 }),
                (AggKind::Sum, Value::Int8(s)) => {
                    Value::Int8(s.checked_add(v.as_i64().unwrap_or(0)).ok_or_else(|| out_of_range(Type::Int8))?)
                }
                (AggKind::Min, cur) => if cur.is_null() || compare(&v, &cur) == Ordering::Less { v } else { cur },
                (AggKind::Max, cur) => if cur.is_null() || compare(&v, &cur) == Ordering::Greater { v } else { cur },
                (_, other) => other,
            };
        }
    }
    for (st, total) in state.iter_mut().zip(totals) {
        if let Some(total) = total {
            *st = Value::Numeric(total.value());
        }
    }
    Ok(state)
}

pub(crate) fn check_not_null(table: &crate::catalog::Table, row: &[Value]) -> Result<()> {
    for (c, v) in table.columns.iter().zip(row) {
        if c.not_null && v.is_null() {
            let shown: Vec<String> =
                row.iter().zip(&table.columns[..table.user_columns()]).filter(|(_, c)| !c.is_dropped()).map(|(v, _)| types::output(v).unwrap_or_else(|| "null".into())).collect();
            return Err(SqlError::new(
                b"23502",
                format!("null value in column \"{}\" of relation \"{}\" violates not-null constraint", c.name, table.name),
            )
            .with_detail(format!("Failing row contains ({}).", shown.join(", ")))
            .with_objects(table.error_objects(None, Some(&c.name))));
        }
    }
    Ok(())
}

/// UPDATE: for each visible row matching `filter`, the new version with `sets`
/// applied (evaluated over the old row). A row updated meanwhile by a transaction
/// that committed is re-checked on its newest version in READ COMMITTED
/// (PostgreSQL's EvalPlanQual, with a fresh snapshot) and updated if it still
/// qualifies; REPEATABLE READ gets 40001 from the engine.
pub fn update(
    table: &crate::catalog::Table,
    sets: &[(usize, Expr)],
    filter: &Option<Expr>,
    returning: &[Target],
    paths: &crate::index::PathCache,
    ctx: &mut Ctx,
) -> Result<(u64, Vec<Vec<Value>>)> {
    use ferrogres_engine::heap::heapam::{heap_update, UpdateOptions, UpdateOutcome, WaitPolicy};
    let mut rows = DmlRows::open(table, filter.as_ref(), paths, ctx)?;
    let qualifies = |row: &[Value], ctx: &mut Ctx| passes(filter.as_ref(), row, ctx);
    let mut n = 0;
    let mut out = Vec::new();
    let ret = Returning::new(table, returning);
    let toast_descs = table.storage.toast_descs()?;
    while let Some((tid, row)) = rows.next(ctx)? {
        // Every row, qualifying or not: the WHERE may be costly.
        ctx.env.check_interrupts()?;
        if !qualifies(&row, ctx)? {
            continue;
        }
        crate::explain::count_row(crate::explain::key(filter), crate::explain::Stage::Filter);
        let (mut tid, mut old) = (tid, row);
        loop {
            let mut new = old.clone();
            for (i, e) in sets {
                let params = ctx.params;
                new[*i] = eval_pure(e, &old, params, &[], ctx)?;
            }
            check_not_null(table, &new)?;
            crate::constraints::check_row(table, &new, ctx)?;
            let tuple = crate::rowio::form_row_toasted(ctx.backend, &table.storage, &new)?;
            let (hot_allowed, keys_updated) = crate::index::update_flags(table, &old, &new);
            let opts = UpdateOptions {
                hot_allowed,
                keys_updated,
                wait_policy: WaitPolicy::Block,
                relname: &table.name,
                toast_desc: toast_descs.as_deref(),
            };
            match heap_update(ctx.backend, table.storage.rel, tid, &tuple, opts)? {
                UpdateOutcome::Ok { new_tid, hot } => {
                    if !hot {
                        crate::index::insert_entries(ctx.backend, table, &new, new_tid)?;
                    }
                    crate::foreign_key::check_child(table, &new, Some(&old), ctx)?;
                    crate::foreign_key::on_parent_update(table, &old, &new, ctx)?;
                    n += 1;
                    if let Some(r) = ret.row(&new, new_tid, ctx)? {
                        out.push(r);
                    }
                }
                UpdateOutcome::Updated { new_tid } => {
                    if let Some((latest, row)) = newest_qualifying(table, new_tid, &qualifies, ctx)? {
                        tid = latest;
                        old = row;
                        continue;
                    }
                }
                _ => {}
            }
            break;
        }
    }
    rows.finish(filter);
    Ok((n, out))
}

/// The rows UPDATE and DELETE visit: a sequential scan streams them page by
/// page (the statement's own new versions are invisible to its snapshot, so it
/// never meets them); an index scan's matches come as a list.
enum DmlRows {
    Seq(Box<crate::rowio::RowScan>, u64),
    Rows(std::vec::IntoIter<(ferrogres_engine::heap::tuple::Tid, Vec<Value>)>, u64),
}

impl DmlRows {
    fn open(table: &crate::catalog::Table, filter: Option<&Expr>, paths: &crate::index::PathCache, ctx: &mut Ctx) -> Result<DmlRows> {
        Ok(match crate::index::open_table_scan(table, filter, paths, ctx)? {
            crate::index::TableScan::Seq(scan) => DmlRows::Seq(scan, 0),
            crate::index::TableScan::Rows(rows) => DmlRows::Rows(rows.into_iter(), 0),
        })
    }

    fn next(&mut self, ctx: &mut Ctx) -> Result<Option<(ferrogres_engine::heap::tuple::Tid, Vec<Value>)>> {
        let (r, n) = match self {
            DmlRows::Seq(scan, n) => {
                if scan.at_page_boundary() {
                    ctx.env.check_interrupts()?;
                }
                (scan.next(ctx.backend, &ctx.snap)?, n)
            }
            DmlRows::Rows(rows, n) => (rows.next(), n),
        };
        *n += r.is_some() as u64;
        Ok(r)
    }

    /// EXPLAIN ANALYZE's count of the rows the scan returned.
    fn finish(&self, filter: &Option<Expr>) {
        let (DmlRows::Seq(_, n) | DmlRows::Rows(_, n)) = self;
        crate::explain::count(crate::explain::key(filter), crate::explain::Stage::Scan, *n);
    }
}

/// Whether `row` passes a WHERE (true when there is none; NULL does not pass).
fn passes(filter: Option<&Expr>, row: &[Value], ctx: &mut Ctx) -> Result<bool> {
    match filter {
        Some(p) => qual(p, row, ctx),
        None => Ok(true),
    }
}

/// Whether `pred`, a WHERE list or a join condition, holds for `row`: its
/// AND-ed conjuncts in order, stopping at the first that is not true (false
/// or NULL), as PostgreSQL's ExecQual does; a later conjunct is not
/// evaluated for such a row, so its errors do not happen.
pub(crate) fn qual(pred: &Expr, row: &[Value], ctx: &mut Ctx) -> Result<bool> {
    let params = ctx.params;
    match pred {
        Expr::And(args) => {
            for a in args {
                if eval_pure(a, row, params, &[], ctx)? != Value::Bool(true) {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        p => Ok(eval_pure(p, row, params, &[], ctx)? == Value::Bool(true)),
    }
}

/// READ COMMITTED's re-check after a row the statement meant to change or lock
/// was updated by a transaction that committed meanwhile (PostgreSQL's
/// EvalPlanQual): the newest version (following the update chain from
/// `new_tid`) that a fresh snapshot sees, if it still passes `qualifies`.
pub(crate) fn newest_qualifying(
    table: &crate::catalog::Table,
    new_tid: ferrogres_engine::heap::tuple::Tid,
    qualifies: &dyn Fn(&[Value], &mut Ctx) -> Result<bool>,
    ctx: &mut Ctx,
) -> Result<Option<(ferrogres_engine::heap::tuple::Tid, Vec<Value>)>> {
    let snap = ctx.backend.txn.statement_snapshot()?;
    let Some((latest, bytes)) = ferrogres_engine::heap::heapam::heap_fetch_latest(ctx.backend, table.storage.rel, new_tid, &snap)? else {
        return Ok(None);
    };
    let descs = table.storage.descs()?;
    let row = crate::rowio::deform_row(ctx.backend, &table.storage, &descs, latest, &bytes, &snap)?;
    Ok(if qualifies(&row, ctx)? { Some((latest, row)) } else { None })
}

/// Stores one new row of `table`: the constraint checks, the heap tuple, and
/// its index entries (with unique checks). Every way rows enter a table
/// (INSERT VALUES, INSERT ... SELECT, COPY FROM) goes through here.
pub fn insert_one(table: &crate::catalog::Table, row: &[Value], ctx: &mut Ctx) -> Result<ferrogres_engine::heap::tuple::Tid> {
    check_not_null(table, row)?;
    crate::constraints::check_row(table, row, ctx)?;
    let tid = insert_row(ctx.backend, &table.storage, row)?;
    crate::index::insert_entries(ctx.backend, table, row, tid)?;
    crate::foreign_key::check_child(table, row, None, ctx)?;
    Ok(tid)
}

/// INSERT: evaluates each row, checks NOT NULL, inserts. Returns the count and
/// the RETURNING rows.
pub fn insert(table: &crate::catalog::Table, rows: &[Vec<Expr>], returning: &[Target], ctx: &mut Ctx) -> Result<(u64, Vec<Vec<Value>>)> {
    let mut n = 0;
    let mut out = Vec::new();
    let ret = Returning::new(table, returning);
    for exprs in rows {
        ctx.env.check_interrupts()?;
        let params = ctx.params;
        let row: Vec<Value> = exprs.iter().map(|e| eval_pure(e, &[], params, &[], ctx)).collect::<Result<_>>()?;
        let tid = insert_one(table, &row, ctx)?;
        n += 1;
        if let Some(r) = ret.row(&row, tid, ctx)? {
            out.push(r);
        }
    }
    Ok((n, out))
}

/// The RETURNING list of a statement that writes rows of `table` (INSERT, the
/// new versions of UPDATE, ON CONFLICT): it may name the system columns of the
/// version just written (it was analyzed over `catalog::with_system_columns`),
/// which the rows of `table`'s own columns do not carry.
pub struct Returning<'a> {
    targets: &'a [Target],
    /// Where the system columns start in the row RETURNING reads, if it reads one.
    system_at: Option<usize>,
    table_oid: u32,
}

impl<'a> Returning<'a> {
    pub fn new(table: &crate::catalog::Table, targets: &'a [Target]) -> Returning<'a> {
        let n = table.user_columns();
        let reads_system = targets.iter().any(|t| crate::subquery::columns_read(&t.expr).iter().any(|&i| i >= n));
        Returning { targets, system_at: reads_system.then_some(n), table_oid: table.oid }
    }

    /// The RETURNING row of `row`, just written at `tid` by the current command
    /// (`None` without RETURNING). Its system columns are the new version's, as
    /// PostgreSQL's: ctid its place, xmin the transaction, cmin and cmax the
    /// command, xmax 0.
    pub fn row(&self, row: &[Value], tid: ferrogres_engine::heap::tuple::Tid, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        if self.targets.is_empty() {
            return Ok(None);
        }
        let with_system;
        let row = match self.system_at {
            Some(n) => {
                let xid = ctx.backend.txn.assign_xid_if_needed()?;
                let cid = ctx.backend.txn.current_command_id();
                let mut r = row[..n].to_vec();
                r.extend([
                    Value::Tid(tid.block, tid.offset),
                    Value::Oid(xid),
                    Value::Oid(cid),
                    Value::Oid(0),
                    Value::Oid(cid),
                    Value::Oid(self.table_oid),
                ]);
                with_system = r;
                &with_system[..]
            }
            None => row,
        };
        Ok(Some(self.targets.iter().map(|t| eval_pure(&t.expr, row, ctx.params, &[], &mut *ctx)).collect::<Result<_>>()?))
    }
}

/// The system columns of a row DELETE just deleted, when it carries them
/// (RETURNING names one), as PostgreSQL's RETURNING shows the deleted
/// version: xmax the deleting (sub)transaction, and cmin and cmax the
/// command, unless a transaction of ours wrote the version (its header then
/// holds a combo command id, which is left as read).
fn deleted_system_columns(table: &crate::catalog::Table, row: &mut [Value], ctx: &mut Ctx) -> Result<()> {
    let n = table.user_columns();
    if row.len() < n + crate::rowio::SYSTEM_COLUMNS.len() {
        return Ok(());
    }
    let xid = ctx.backend.txn.assign_xid_if_needed()?;
    let mine = matches!(row[n + 1], Value::Oid(xmin) if ctx.backend.txn.is_current_xid(xmin));
    row[n + 3] = Value::Oid(xid);
    if !mine {
        let cid = ctx.backend.txn.current_command_id();
        row[n + 2] = Value::Oid(cid);
        row[n + 4] = Value::Oid(cid);
    }
    Ok(())
}

/// DELETE: deletes the visible rows matching `filter`. A row being changed by
/// a running transaction is waited for through the engine (its transaction
/// lock: lock_timeout, cancel and the deadlock detector apply). A row updated
/// by a transaction that committed meanwhile is re-checked on its newest
/// version in READ COMMITTED (as UPDATE does) and deleted if it still
/// qualifies; one deleted meanwhile is skipped. REPEATABLE READ gets 40001 from
/// the engine.
pub fn delete(
    table: &crate::catalog::Table,
    filter: &Option<Expr>,
    returning: &[Target],
    paths: &crate::index::PathCache,
    ctx: &mut Ctx,
) -> Result<(u64, Vec<Vec<Value>>)> {
    use ferrogres_engine::heap::heapam::{heap_delete_ext, DeleteOptions, DeleteOutcome, WaitPolicy};
    let mut rows = DmlRows::open(table, filter.as_ref(), paths, ctx)?;
    let qualifies = |row: &[Value], ctx: &mut Ctx| passes(filter.as_ref(), row, ctx);
    let mut n = 0;
    let mut out = Vec::new();
    let toast_descs = table.storage.toast_descs()?;
    while let Some((tid, row)) = rows.next(ctx)? {
        // Every row, qualifying or not: the WHERE may be costly.
        ctx.env.check_interrupts()?;
        if !qualifies(&row, ctx)? {
            continue;
        }
        crate::explain::count_row(crate::explain::key(filter), crate::explain::Stage::Filter);
        let (mut tid, mut row) = (tid, row);
        loop {
            let opts = DeleteOptions { wait_policy: WaitPolicy::Block, relname: &table.name, toast_desc: toast_descs.as_deref() };
            match heap_delete_ext(ctx.backend, table.storage.rel, tid, opts)? {
                DeleteOutcome::Ok => {
                    crate::foreign_key::on_parent_delete(table, &row, ctx)?;
                    n += 1;
                    if !returning.is_empty() {
                        deleted_system_columns(table, &mut row, ctx)?;
                        out.push(returning.iter().map(|t| eval_pure(&t.expr, &row, ctx.params, &[], &mut *ctx)).collect::<Result<_>>()?);
                    }
                }
                DeleteOutcome::Updated { new_tid } => {
                    if let Some((latest, newest)) = newest_qualifying(table, new_tid, &qualifies, ctx)? {
                        tid = latest;
                        row = newest;
                        continue;
                    }
                }
                _ => {}
            }
            break;
        }
    }
    rows.finish(filter);
    Ok((n, out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(v: Value, t: Type) -> Box<Expr> {
        Box::new(Expr::Const(v, t))
    }

    #[test]
    fn arithmetic_overflow_and_division() {
        let e = Expr::Arith { op: ArithOp::Add, l: c(Value::Int4(i32::MAX), Type::Int4), r: c(Value::Int4(1), Type::Int4), ty: Type::Int4 };
        let err = eval_const(&e).unwrap_err();
        assert_eq!((err.sqlstate(), err.message.as_str()), ("22003", "integer out of range"));
        let e = Expr::Arith { op: ArithOp::Div, l: c(Value::Int4(1), Type::Int4), r: c(Value::Int4(0), Type::Int4), ty: Type::Int4 };
        let err = eval_const(&e).unwrap_err();
        assert_eq!((err.sqlstate(), err.message.as_str()), ("22012", "division by zero"));
        let e = Expr::Arith { op: ArithOp::Div, l: c(Value::Int4(-7), Type::Int4), r: c(Value::Int4(2), Type::Int4), ty: Type::Int4 };
        assert_eq!(eval_const(&e).unwrap(), Some(Value::Int4(-3)));
        let e = Expr::Arith { op: ArithOp::Div, l: c(Value::Int4(i32::MIN), Type::Int4), r: c(Value::Int4(-1), Type::Int4), ty: Type::Int4 };
        assert_eq!(eval_const(&e).unwrap_err().message, "integer out of range");
        let e = Expr::Arith { op: ArithOp::Mul, l: c(Value::Int2(300), Type::Int2), r: c(Value::Int2(300), Type::Int2), ty: Type::Int2 };
        assert_eq!(eval_const(&e).unwrap_err().message, "smallint out of range");
        let e = Expr::Neg(c(Value::Int8(i64::MIN), Type::Int8), Type::Int8);
        assert_eq!(eval_const(&e).unwrap_err().message, "bigint out of range");
    }

    #[test]
    fn three_valued_logic() {
        let null = || Expr::Const(Value::Null, Type::Bool);
        let t = || Expr::Const(Value::Bool(true), Type::Bool);
        let f = || Expr::Const(Value::Bool(false), Type::Bool);
        assert_eq!(eval_const(&Expr::And(vec![null(), f()])).unwrap(), Some(Value::Bool(false)));
        assert_eq!(eval_const(&Expr::And(vec![null(), t()])).unwrap(), Some(Value::Null));
        assert_eq!(eval_const(&Expr::Or(vec![null(), t()])).unwrap(), Some(Value::Bool(true)));
        assert_eq!(eval_const(&Expr::Not(Box::new(null()))).unwrap(), Some(Value::Null));
        let cmp = Expr::Compare { op: CmpOp::Lt, l: c(Value::Text("a".into()), Type::Text), r: c(Value::Null, Type::Text) };
        assert_eq!(eval_const(&cmp).unwrap(), Some(Value::Null));
    }

    /// CASE, COALESCE, NULLIF, GREATEST/LEAST, IS DISTINCT FROM, IN lists (as
    /// analysis writes them) and LIKE on NULL operands.
    #[test]
    fn three_valued_logic_of_conditionals() {
        let int = |i: i32| Expr::Const(Value::Int4(i), Type::Int4);
        let null = || Expr::Const(Value::Null, Type::Int4);
        let eq = |l: Expr, r: Expr| Expr::Compare { op: CmpOp::Eq, l: Box::new(l), r: Box::new(r) };
        let ne = |l: Expr, r: Expr| Expr::Compare { op: CmpOp::Ne, l: Box::new(l), r: Box::new(r) };
        let run = |e: Expr| eval_const(&e).unwrap().unwrap();
        // CASE: a NULL condition is not true; no ELSE gives NULL.
        let case = Expr::Case {
            whens: vec![(Expr::Const(Value::Null, Type::Bool), int(1)), (eq(int(1), int(2)), int(2))],
            default: Box::new(null()),
            ty: Type::Int4,
        };
        assert_eq!(run(case), Value::Null);
        // COALESCE stops at the first non-null argument (the division is never evaluated).
        let div0 = Expr::Arith { op: ArithOp::Div, l: Box::new(int(1)), r: Box::new(int(0)), ty: Type::Int4 };
        assert_eq!(run(Expr::Coalesce(vec![null(), int(2), div0.clone()], Type::Int4)), Value::Int4(2));
        assert_eq!(run(Expr::Coalesce(vec![null(), null()], Type::Int4)), Value::Null);
        // NULLIF(NULL, 1) is NULL; NULLIF(1, NULL) is 1.
        assert_eq!(run(Expr::NullIf { arg: Box::new(null()), eq: Box::new(eq(null(), int(1))) }), Value::Null);
        assert_eq!(run(Expr::NullIf { arg: Box::new(int(1)), eq: Box::new(eq(int(1), null())) }), Value::Int4(1));
        // GREATEST ignores NULLs.
        assert_eq!(run(Expr::MinMax { args: vec![null(), int(3), int(7)], greatest: true, ty: Type::Int4 }), Value::Int4(7));
        assert_eq!(run(Expr::MinMax { args: vec![null(), null()], greatest: false, ty: Type::Int4 }), Value::Null);
        // IS [NOT] DISTINCT FROM is never NULL.
        let distinct = |l: Expr, r: Expr, negated: bool| run(Expr::Distinct { l: Box::new(l), r: Box::new(r), negated });
        assert_eq!(distinct(null(), null(), false), Value::Bool(false));
        assert_eq!(distinct(int(1), null(), false), Value::Bool(true));
        assert_eq!(distinct(null(), null(), true), Value::Bool(true));
        // 2 IN (1, NULL) is NULL, 1 IN (1, NULL) true; 2 NOT IN (1, NULL) is NULL, 1 NOT IN (1, NULL) false.
        assert_eq!(run(Expr::Or(vec![eq(int(2), int(1)), eq(int(2), null())])), Value::Null);
        assert_eq!(run(Expr::Or(vec![eq(int(1), int(1)), eq(int(1), null())])), Value::Bool(true));
        assert_eq!(run(Expr::And(vec![ne(int(2), int(1)), ne(int(2), null())])), Value::Null);
        assert_eq!(run(Expr::And(vec![ne(int(1), int(1)), ne(int(1), null())])), Value::Bool(false));
        // The same lists as `x = ANY ('{...}')` / `x <> ALL ('{...}')` of an
        // array constant (analysis makes IN lists of constants so).
        let list = |x: Expr, items: Vec<Value>, all: bool| {
            let arr = Value::Array(Box::new(ferrogres_datum::array::Array::new(Type::Int4, items)));
            let op = if all { CmpOp::Ne } else { CmpOp::Eq };
            let arr_ty = ferrogres_datum::array::array_of(Type::Int4).unwrap();
            eval_no_row(&Expr::Func { func: Func::Array(ArrayFunc::AnyAll { op, all }), args: vec![x, Expr::Const(arr, arr_ty)], ty: Type::Bool }).unwrap()
        };
        let one_null = || vec![Value::Int4(1), Value::Null];
        assert_eq!(list(int(2), one_null(), false), Value::Null);
        assert_eq!(list(int(1), one_null(), false), Value::Bool(true));
        assert_eq!(list(int(2), one_null(), true), Value::Null);
        assert_eq!(list(int(1), one_null(), true), Value::Bool(false));
        assert_eq!(list(null(), vec![Value::Int4(1)], false), Value::Null);
        assert_eq!(list(int(3), vec![Value::Int4(1), Value::Int4(2)], true), Value::Bool(true));
        assert_eq!(list(int(3), vec![Value::Int4(1), Value::Int4(2)], false), Value::Bool(false));
        // NOT LIKE of NULL stays NULL.
        let like = Expr::Like { arg: c(Value::Null, Type::Text), pat: c(Value::Text("a%".into()), Type::Text), escape: None, ci: false };
        assert_eq!(run(Expr::Not(Box::new(like))), Value::Null);
    }

    /// A list of nine or more items is looked up by hash, once built: the
    /// table holds it after the first evaluation, answers equal the loop's
    /// (mixed integer widths, NULL items), and a list of several classes is
    /// left to the loop.
    #[test]
    fn long_constant_lists_are_hashed_once() {
        use ferrogres_datum::array::{Array, ArrayFunc};
        let list = |items: Vec<Value>| Expr::Const(Value::Array(Box::new(Array::new(Type::Int8, items))), Type::Array(&Type::Int8));
        let any = |x: Value, arr: &Expr, all: bool| {
            let op = if all { CmpOp::Ne } else { CmpOp::Eq };
            Expr::Func { func: Func::Array(ArrayFunc::AnyAll { op, all }), args: vec![Expr::Const(x, Type::Int4), arr.clone()], ty: Type::Bool }
        };
        let ints: Vec<Value> = (1..=12).map(|i| Value::Int8(i * 10)).collect();
        let arr = list(ints.clone());
        let Expr::Const(Value::Array(a), _) = &arr else { unreachable!() };
        assert_eq!(eval_no_row(&any(Value::Int4(30), &arr, false)).unwrap(), Value::Bool(true));
        assert_eq!(eval_no_row(&any(Value::Int4(31), &arr, false)).unwrap(), Value::Bool(false));
        assert_eq!(eval_no_row(&any(Value::Int4(31), &arr, true)).unwrap(), Value::Bool(true));
        assert_eq!(eval_no_row(&any(Value::Null, &arr, false)).unwrap(), Value::Null);
        // The table is kept with the constant that was evaluated.
        let e = any(Value::Int4(40), &arr, false);
        let Expr::Func { args, .. } = &e else { unreachable!() };
        let Expr::Const(Value::Array(own), _) = &args[1] else { unreachable!() };
        assert_eq!(eval_no_row(&e).unwrap(), Value::Bool(true));
        let lookup = own.cache.get_or_init(|| ListLookup::new(&[])).expect("a ListLookup");
        assert_eq!((lookup.kind, lookup.positions.len(), lookup.has_null), (Some(ValueKind::Int), 12, false));
        assert!(a.cache.get_or_init(|| 0u8).is_some(), "a clone starts with an empty cache");
        // A NULL item: not found is NULL, found is true.
        let mut with_null = ints.clone();
        with_null.push(Value::Null);
        let arr = list(with_null);
        assert_eq!(eval_no_row(&any(Value::Int4(31), &arr, false)).unwrap(), Value::Null);
        assert_eq!(eval_no_row(&any(Value::Int4(120), &arr, false)).unwrap(), Value::Bool(true));
        assert_eq!(eval_no_row(&any(Value::Int4(120), &arr, true)).unwrap(), Value::Bool(false));
        // Items of two classes: no table.
        let mut mixed = ints;
        mixed.push(Value::Text("x".into()));
        assert_eq!(ListLookup::new(&mixed).kind, None);
    }
}
