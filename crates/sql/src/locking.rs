//! Heavyweight locks taken by SQL statements: relation locks (as PostgreSQL's
//! parser and executor take them), `LOCK TABLE`, and the session's lock
//! settings handed to the engine's lock manager (`lmgr/lock.rs`).
//!
//! | statement | mode on each table it names |
//! |---|---|
//! | SELECT | AccessShareLock |
//! | SELECT ... FOR UPDATE/SHARE | RowShareLock |
//! | INSERT, UPDATE, DELETE | RowExclusiveLock |
//! | DROP TABLE | AccessExclusiveLock |
//! | LOCK TABLE | the mode asked for (default AccessExclusiveLock) |
//!
//! A lock is taken when the analyzer resolves the table's name, and again (a
//! local re-acquisition, no shared state touched) when a cached plan runs, so a
//! prepared statement executed in a later transaction holds its locks too. All
//! are transaction locks: the engine releases them at commit or abort.
//!
//! After waiting for a lock, or when invalidation messages arrived since the
//! name was looked up, the name is resolved again with a new catalog snapshot
//! (at every isolation level: the catalogs are read at their latest state, as
//! PostgreSQL's catalog snapshot reads them): a table dropped meanwhile is
//! then "does not exist", a table replaced under the same name is locked anew,
//! a table truncated or rewritten is read in its new files (PostgreSQL's
//! RangeVarGetRelidExtended loop).
//!
//! Weak modes (AccessShare, RowShare, RowExclusive) go through the lock
//! manager's fast path; a first attempt is made with NOWAIT so that the
//! common, uncontended case costs one lock call and a wait is known to have
//! happened.

use crate::catalog::{self, Table};
use ferrogres_datum::errors::{Result, SqlError};
use ferrogres_engine::engine::Backend;
use ferrogres_engine::lmgr::lock::{nowait_relation_error, LockAcquireResult, LockManager, LockMode, LockOptions, LockTag};
use ferrogres_engine::pgstat::BackendId;
use ferrogres_engine::txn::snapshot::Snapshot;
use std::sync::Arc;

/// The relation lock tag of a table of the current database.
pub fn relation_tag(rel: u32) -> LockTag {
    LockTag::Relation { db: crate::database::current(), rel }
}

/// Locks relation `rel` in `mode` for the backend's transaction. Returns whether
/// the backend had to wait. `nowait`: 55P03 instead of waiting.
pub fn lock_relation(backend: &Backend, rel: u32, mode: LockMode, nowait: bool, relname: &str) -> Result<bool> {
    let locks = &backend.engine().locks;
    let tag = relation_tag(rel);
    let opts = LockOptions { dont_wait: true, ..Default::default() };
    if locks.lock(backend.id(), tag, mode, opts)? != LockAcquireResult::NotAvailable {
        // PostgreSQL's AcceptInvalidationMessages in LockRelationOid: a DDL
        // that held the lock sent its messages before releasing it.
        crate::catcache::accept(backend);
        return Ok(false);
    }
    if nowait {
        return Err(nowait_relation_error(relname).into());
    }
    locks.lock(backend.id(), tag, mode, LockOptions::default())?;
    crate::catcache::accept(backend);
    Ok(true)
}

/// [`lock_relation`] for code that has the lock manager and the backend's id
/// rather than the backend (functions evaluated in expressions, through
/// [`LockCtx`]).
pub fn lock_relation_in(locks: &LockManager, backend: BackendId, rel: u32, mode: LockMode) -> Result<()> {
    let tag = relation_tag(rel);
    let opts = LockOptions { dont_wait: true, ..Default::default() };
    if locks.lock(backend, tag, mode, opts)? == LockAcquireResult::NotAvailable {
        locks.lock(backend, tag, mode, LockOptions::default())?;
    }
    Ok(())
}

/// Releases one transaction-lifetime hold of `mode` on `rel`.
pub fn unlock_relation(backend: &Backend, rel: u32, mode: LockMode) -> Result<()> {
    backend.engine().locks.unlock(backend.id(), relation_tag(rel), mode, false)?;
    Ok(())
}

/// A snapshot for looking the catalog up again after a lock: a new catalog
/// snapshot ([`crate::catcache::catalog_snapshot`]) whatever the isolation
/// level, seeing `snap`'s own commands.
pub fn catalog_snapshot(backend: &Backend, snap: &Snapshot) -> Result<Snapshot> {
    crate::catcache::catalog_snapshot(backend, snap.curcid)
}

/// Locks `table` (found by name `(schema, name)` when the invalidation count
/// was `seen`: [`crate::catcache::consumed`] read before the lookup) in
/// `mode`, then makes sure
/// the lookup still holds (PostgreSQL's RangeVarGetRelidExtended loop): when
/// the lock had to wait or invalidation messages were consumed since the
/// lookup (by the lock's own read of the queue or before), the name is
/// resolved again with a new catalog snapshot, and followed if it moved
/// (unlocking the old relation). `Ok(None)`: the name no longer resolves to a
/// table. The descriptor returned is the one found after the lock was
/// granted: another session's TRUNCATE, REINDEX or rewrite committed before
/// the grant gives it its new files.
pub fn lock_resolved(
    backend: &Backend,
    snap: &Snapshot,
    (schema, name): (Option<&str>, &str),
    mut table: Table,
    mode: LockMode,
    nowait: bool,
    mut seen: u64,
) -> Result<Option<Table>> {
    loop {
        let waited = lock_relation(backend, table.oid, mode, nowait, &table.name)?;
        if !waited && crate::catcache::consumed(backend) == seen {
            return Ok(Some(table));
        }
        seen = crate::catcache::consumed(backend);
        let fresh = catalog_snapshot(backend, snap)?;
        match catalog::lookup_table(backend, &fresh, schema, name)? {
            Some(t) if t.oid == table.oid => return Ok(Some(t)),
            other => {
                unlock_relation(backend, table.oid, mode)?;
                match other {
                    Some(t) => table = t,
                    None => return Ok(None),
                }
            }
        }
    }
}

/// The lock mode a statement kind takes on the tables it reads or writes.
pub fn plan_lock_mode(plan: &crate::plan::Statement) -> Option<(u32, &str, LockMode)> {
    use crate::plan::{Source, Statement};
    match plan {
        Statement::Query(q) => match &q.source {
            Source::Table(t) => Some((t.oid, t.name.as_str(), LockMode::AccessShare)),
            _ => None,
        },
        Statement::LockingQuery { query, .. } => match &query.source {
            Source::Table(t) => Some((t.oid, t.name.as_str(), LockMode::RowShare)),
            _ => None,
        },
        Statement::Insert { table, .. } | Statement::Update { table, .. } | Statement::Delete { table, .. } => {
            Some((table.oid, table.name.as_str(), LockMode::RowExclusive))
        }
        Statement::Upsert(u) => Some((u.table.oid, u.table.name.as_str(), LockMode::RowExclusive)),
        Statement::JoinedDml(d) => Some((d.table.oid, d.table.name.as_str(), LockMode::RowExclusive)),
        Statement::Merge(m) => Some((m.table.oid, m.table.name.as_str(), LockMode::RowExclusive)),
        _ => None,
    }
}

/// Takes the relation locks a (possibly cached) plan needs before it runs.
pub fn lock_plan(backend: &Backend, plan: &crate::plan::Statement) -> Result<()> {
    visit_locks(plan, &mut |oid, name, mode| lock_relation(backend, oid, mode, false, name).map(|_| ()))
}

/// The relation locks [`lock_plan`] takes for `plan`, in the order it takes
/// them: computed once with a prepared statement's plan, so an execution
/// does not walk the plan for them.
pub fn plan_locks(plan: &crate::plan::Statement) -> Vec<(u32, String, LockMode)> {
    let mut out = Vec::new();
    let _ = visit_locks(plan, &mut |oid, name, mode| {
        out.push((oid, name.to_string(), mode));
        Ok(())
    });
    out
}

/// Calls `f` for each relation lock `plan` needs, in order, stopping at the
/// first error (names are borrowed from the plan: nothing is allocated for
/// the tables a statement names).
fn visit_locks(plan: &crate::plan::Statement, f: &mut dyn FnMut(u32, &str, LockMode) -> Result<()>) -> Result<()> {
    if let crate::plan::Statement::Explain(e) = plan {
        return visit_locks(&e.stmt, f);
    }
    if let crate::plan::Statement::CreateTableAs(c) = plan {
        return visit_locks(&c.query, f);
    }
    if let crate::plan::Statement::WithDml(w) = plan {
        for (_, st) in &w.ctes {
            visit_locks(st, f)?;
        }
        return visit_locks(&w.main, f);
    }
    let main = plan_lock_mode(plan);
    if let Some((oid, name, mode)) = main {
        f(oid, name, mode)?;
    }
    // Every other table a query reads (joins, subqueries, CTEs): AccessShareLock.
    if let crate::plan::Statement::Query(q) = plan {
        for (oid, name) in crate::subquery::tables_of(q) {
            if main.is_some_and(|(m, _, mode)| m == oid && mode == LockMode::AccessShare) {
                continue; // the scanned table, locked just above
            }
            f(oid, &name, LockMode::AccessShare)?;
        }
    }
    Ok(())
}

/// Takes `locks` (from [`plan_locks`]) in order.
pub fn lock_list(backend: &Backend, locks: &[(u32, String, LockMode)]) -> Result<()> {
    for (oid, name, mode) in locks {
        lock_relation(backend, *oid, *mode, false, name)?;
    }
    Ok(())
}

/// The mode named in `LOCK ... IN <mode> MODE` (pg_query's numbering: 1 =
/// AccessShareLock .. 8 = AccessExclusiveLock).
pub fn lock_mode_from_stmt(mode: i32) -> Result<LockMode> {
    LockMode::ALL
        .into_iter()
        .find(|m| *m as i32 == mode)
        .ok_or_else(|| SqlError::internal(format!("unknown lock mode {mode}")))
}

/// Pushes the session's lock-related settings (deadlock_timeout, lock_timeout)
/// to the lock manager before a statement, and drops a cancel request that no
/// lock wait consumed (it was for an earlier statement).
///
/// The settings are pushed only after they changed (`LockCtx::timeouts_dirty`,
/// set by SET/RESET of either): this runs before every statement.
pub fn apply_settings(backend: &Backend, env: &mut crate::session::SessionEnv) -> Result<()> {
    let locks = &backend.engine().locks;
    if env.locks.as_ref().is_none_or(|l| l.timeouts_dirty) {
        let ms = |name: &str| -> Option<u64> { env.get(name).ok().and_then(|v| parse_ms(&v)) };
        let (deadlock, lock) = (ms("deadlock_timeout"), ms("lock_timeout"));
        locks.set_backend_timeouts(backend.id(), deadlock, lock)?;
        if let Some(l) = env.locks.as_mut() {
            l.timeouts_dirty = false;
        }
    }
    locks.take_cancel(backend.id())?;
    Ok(())
}

/// A time setting's value in ms: a bare number is ms; units ms, s, min, h.
pub fn parse_ms(v: &str) -> Option<u64> {
    let v = v.trim();
    let split = v.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let n: f64 = num.parse().ok()?;
    let factor = match unit.trim() {
        "" | "ms" => 1.0,
        "s" => 1000.0,
        "min" => 60_000.0,
        "h" => 3_600_000.0,
        "d" => 86_400_000.0,
        _ => return None,
    };
    let ms = n * factor;
    (0.0..1e15).contains(&ms).then_some(ms as u64)
}

/// Validates a time setting (deadlock_timeout, lock_timeout) as PostgreSQL does.
pub fn check_time_setting(name: &str, value: &str) -> Result<String> {
    match parse_ms(value) {
        Some(ms) if name == "deadlock_timeout" && ms == 0 => {
            Err(SqlError::new(b"22023", format!("0 ms is outside the valid range for parameter \"{name}\" (1 .. 2147483647)")))
        }
        Some(ms) if ms <= i32::MAX as u64 => Ok(value.trim().to_string()),
        Some(_) => Err(SqlError::new(b"22023", format!("invalid value for parameter \"{name}\": \"{value}\""))),
        None => {
            let e = SqlError::new(b"22023", format!("invalid value for parameter \"{name}\": \"{value}\""));
            // A number with a unit we do not know gets the list of units.
            Err(if value.trim().starts_with(|c: char| c.is_ascii_digit()) {
                e.with_hint("Valid units for this parameter are \"us\", \"ms\", \"s\", \"min\", \"h\", and \"d\".")
            } else {
                e
            })
        }
    }
}

/// What lock functions (advisory locks, pg_blocking_pids, ...) need from the
/// session: the lock manager, this backend, and notices to send.
pub struct LockCtx {
    pub manager: Arc<LockManager>,
    /// The transaction layer (its predicate-lock manager: safe-snapshot waits).
    pub txn: Arc<ferrogres_engine::txn::TxnShared>,
    pub backend: BackendId,
    /// WARNINGs raised by functions, sent by the session after the statement.
    pub notices: Vec<SqlError>,
    /// deadlock_timeout or lock_timeout changed since they were last pushed to
    /// the lock manager.
    pub timeouts_dirty: bool,
    /// currval/lastval of the session (`crate::sequence`).
    pub seqs: crate::sequence::SeqSession,
    /// pg_stat_force_next_flush() ran: the session flushes its statistics when
    /// the statement's transaction ends (`crate::statviews`).
    pub pgstat_force_flush: bool,
    /// pg_stat_reset_single_table_counters(oid) ran for these relations: the
    /// session resets them after the statement (it has the catalog snapshot).
    pub pgstat_reset_rels: Vec<u32>,
    /// LISTEN / NOTIFY of the session and its transaction (`crate::notify`).
    pub notify: crate::notify::NotifyState,
}

impl LockCtx {
    pub fn new(backend: &Backend) -> LockCtx {
        LockCtx {
            manager: backend.engine().locks.clone(),
            txn: backend.engine().txn.clone(),
            backend: backend.id(),
            notices: Vec::new(),
            timeouts_dirty: true,
            seqs: crate::sequence::SeqSession::new(backend.engine().clone()),
            pgstat_force_flush: false,
            pgstat_reset_rels: Vec::new(),
            notify: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_settings() {
        assert_eq!(parse_ms("100s"), Some(100_000));
        assert_eq!(parse_ms("10ms"), Some(10));
        assert_eq!(parse_ms("250"), Some(250));
        assert_eq!(parse_ms("1min"), Some(60_000));
        assert_eq!(parse_ms("x"), None);
        assert!(check_time_setting("deadlock_timeout", "0").is_err());
        assert!(check_time_setting("lock_timeout", "0").is_ok());
    }

    #[test]
    fn lock_modes_follow_pg_query_numbering() {
        assert_eq!(lock_mode_from_stmt(1).unwrap(), LockMode::AccessShare);
        assert_eq!(lock_mode_from_stmt(8).unwrap(), LockMode::AccessExclusive);
    }
}

impl crate::analyze::Analyzer<'_> {
    /// Resolves a table named in a statement and locks it in `mode`, following
    /// the name again after a lock wait (see the module doc).
    pub(crate) fn range_table_locked(&self, rv: &pg_query::protobuf::RangeVar, mode: LockMode) -> Result<Table> {
        let seen = crate::catcache::consumed(self.backend);
        let table = self.range_table(rv)?;
        if crate::sysviews::is_view(table.oid) {
            if mode != LockMode::AccessShare {
                return Err(SqlError::not_supported(format!("changing or locking rows of system view \"{}\"", table.name)).at(self.sql, rv.location));
            }
            lock_relation(self.backend, table.oid, mode, false, &table.name)?;
            return Ok(table);
        }
        let schema = (!rv.schemaname.is_empty()).then_some(rv.schemaname.as_str());
        match lock_resolved(self.backend, self.snap, (schema, &rv.relname), table, mode, false, seen)? {
            Some(t) => Ok(t),
            None => {
                let name = match schema {
                    Some(s) => format!("{s}.{}", rv.relname),
                    None => rv.relname.clone(),
                };
                Err(SqlError::new(b"42P01", format!("relation \"{name}\" does not exist")).at(self.sql, rv.location))
            }
        }
    }
}

/// Sends the WARNINGs lock functions raised during a statement (unless
/// client_min_messages hides them).
pub fn flush_notices(env: &mut crate::session::SessionEnv, out: &mut dyn crate::session::Output) -> Result<()> {
    let Some(ctx) = env.locks.as_mut() else { return Ok(()) };
    if ctx.notices.is_empty() {
        return Ok(());
    }
    let notices = std::mem::take(&mut ctx.notices);
    if env.get("client_min_messages").is_ok_and(|l| l == "error") {
        return Ok(());
    }
    for n in &notices {
        out.notice(n)?;
    }
    Ok(())
}

/// A table named by LOCK.
#[derive(Clone, Debug)]
pub struct LockTarget {
    pub schema: Option<String>,
    pub name: String,
}

/// LOCK [TABLE] [ONLY] name [, ...] [IN mode MODE] [NOWAIT].
pub fn analyze_lock(s: &pg_query::protobuf::LockStmt) -> Result<crate::plan::Statement> {
    let mut targets = Vec::new();
    for r in &s.relations {
        let Some(pg_query::NodeEnum::RangeVar(rv)) = &r.node else {
            return Err(SqlError::internal("LOCK target is not a relation name"));
        };
        if !rv.catalogname.is_empty() {
            return Err(SqlError::not_supported("cross-database references"));
        }
        targets.push(LockTarget { schema: (!rv.schemaname.is_empty()).then(|| rv.schemaname.clone()), name: rv.relname.clone() });
    }
    Ok(crate::plan::Statement::Lock { targets, mode: lock_mode_from_stmt(s.mode)?, nowait: s.nowait })
}

/// Runs LOCK: resolves and locks each table in order.
pub fn exec_lock(backend: &Backend, snap: &Snapshot, targets: &[LockTarget], mode: LockMode, nowait: bool) -> Result<()> {
    for t in targets {
        let shown = match &t.schema {
            Some(s) => format!("{s}.{}", t.name),
            None => t.name.clone(),
        };
        let missing = || SqlError::new(b"42P01", format!("relation \"{shown}\" does not exist"));
        let seen = crate::catcache::consumed(backend);
        let found = match catalog::lookup_table(backend, snap, t.schema.as_deref(), &t.name) {
            Err(e) if e.sqlstate() == "3F000" => None,
            r => r?,
        };
        let Some(table) = found else { return Err(missing()) };
        if table.namespace == catalog::PG_CATALOG_NAMESPACE {
            return Err(SqlError::not_supported(format!("LOCK on system catalog \"{}\"", t.name)));
        }
        if lock_resolved(backend, snap, (t.schema.as_deref(), &t.name), table, mode, nowait, seen)?.is_none() {
            return Err(missing());
        }
    }
    Ok(())
}

/// Lock functions callable from SQL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockFunc {
    /// pg_[try_]advisory_[xact_]lock[_shared]: (shared, xact, try). Int8 key
    /// (one argument) or an int4 pair (two).
    AdvisoryLock { shared: bool, xact: bool, try_: bool },
    /// pg_advisory_unlock[_shared].
    AdvisoryUnlock { shared: bool },
    AdvisoryUnlockAll,
    /// pg_isolation_test_session_is_blocked(int4, int4[]).
    IsolationTestSessionIsBlocked,
    /// pg_blocking_pids(int4) -> int4[].
    BlockingPids,
    /// pg_safe_snapshot_blocking_pids(int4) -> int4[].
    SafeSnapshotBlockingPids,
    /// pg_cancel_backend(int4) -> bool.
    CancelBackend,
    /// pg_terminate_backend(int4 [, int8 timeout ms]) -> bool.
    TerminateBackend,
    /// pg_reload_conf() -> bool: SIGHUP to the server (its accept loop re-reads
    /// the configuration files), as PostgreSQL signals its postmaster.
    ReloadConf,
    /// pg_notify(text, text) -> void ([`crate::notify`]).
    Notify,
}

/// The signature of lock function `name` called with `nargs` arguments:
/// (function, argument types, result type).
pub fn lookup_func(name: &str, nargs: usize) -> Option<(LockFunc, &'static [ferrogres_datum::types::Type], ferrogres_datum::types::Type)> {
    use ferrogres_datum::types::Type;
    const INT8: &[Type] = &[Type::Int8];
    const INT4_PAIR: &[Type] = &[Type::Int4, Type::Int4];
    let key = match nargs {
        1 => INT8,
        2 => INT4_PAIR,
        _ => &[],
    };
    if let Some(rest) = name.strip_prefix("pg_") {
        let (try_, rest) = match rest.strip_prefix("try_") {
            Some(r) => (true, r),
            None => (false, rest),
        };
        let parsed = match rest {
            "advisory_lock" => Some((false, false)),
            "advisory_lock_shared" => Some((true, false)),
            "advisory_xact_lock" => Some((false, true)),
            "advisory_xact_lock_shared" => Some((true, true)),
            _ => None,
        };
        if let Some((shared, xact)) = parsed {
            if key.is_empty() {
                return None;
            }
            let ret = if try_ { Type::Bool } else { Type::Void };
            return Some((LockFunc::AdvisoryLock { shared, xact, try_ }, key, ret));
        }
    }
    match (name, nargs) {
        ("pg_advisory_unlock", 1 | 2) => Some((LockFunc::AdvisoryUnlock { shared: false }, key, Type::Bool)),
        ("pg_advisory_unlock_shared", 1 | 2) => Some((LockFunc::AdvisoryUnlock { shared: true }, key, Type::Bool)),
        ("pg_advisory_unlock_all", 0) => Some((LockFunc::AdvisoryUnlockAll, &[], Type::Void)),
        ("pg_isolation_test_session_is_blocked", 2) => {
            const SIG: &[Type] = &[Type::Int4, Type::Array(&Type::Int4)];
            Some((LockFunc::IsolationTestSessionIsBlocked, SIG, Type::Bool))
        }
        ("pg_blocking_pids", 1) => Some((LockFunc::BlockingPids, &[Type::Int4], Type::Array(&Type::Int4))),
        ("pg_safe_snapshot_blocking_pids", 1) => Some((LockFunc::SafeSnapshotBlockingPids, &[Type::Int4], Type::Array(&Type::Int4))),
        ("pg_cancel_backend", 1) => Some((LockFunc::CancelBackend, &[Type::Int4], Type::Bool)),
        ("pg_terminate_backend", 1) => Some((LockFunc::TerminateBackend, &[Type::Int4], Type::Bool)),
        ("pg_terminate_backend", 2) => Some((LockFunc::TerminateBackend, &[Type::Int4, Type::Int8], Type::Bool)),
        ("pg_reload_conf", 0) => Some((LockFunc::ReloadConf, &[], Type::Bool)),
        ("pg_notify", 2) => Some((LockFunc::Notify, &[Type::Text, Type::Text], Type::Void)),
        _ => None,
    }
}

fn advisory_key(vals: &[ferrogres_datum::types::Value]) -> Option<ferrogres_engine::lmgr::lock::AdvisoryKey> {
    use ferrogres_datum::types::Value;
    use ferrogres_engine::lmgr::lock::AdvisoryKey;
    match vals {
        [Value::Int8(k)] => Some(AdvisoryKey::Int8(*k)),
        [Value::Int4(a), Value::Int4(b)] => Some(AdvisoryKey::Int4Pair(*a, *b)),
        _ => None,
    }
}

/// The value of a function returning void: not NULL (`f() IS NOT NULL` is
/// true), printed as the empty string, as PostgreSQL's void output gives.
fn void() -> ferrogres_datum::types::Value {
    ferrogres_datum::types::Value::Text(String::new())
}

/// Evaluates a lock function (strict: a NULL argument gives NULL).
pub fn call(f: LockFunc, vals: &[ferrogres_datum::types::Value], env: &mut dyn crate::exec::Env) -> Result<ferrogres_datum::types::Value> {
    use ferrogres_datum::types::Value;
    if let LockFunc::Notify = f {
        // Not strict: a NULL channel is an empty one, a NULL payload empty.
        let text = |v: &Value| match v {
            Value::Text(s) => s.clone(),
            _ => String::new(),
        };
        let ctx = env.lock_ctx().ok_or_else(|| SqlError::not_supported("pg_notify outside a session"))?;
        ctx.notify.queue(&text(&vals[0]), &text(&vals[1]))?;
        return Ok(void());
    }
    if vals.iter().any(|v| matches!(v, Value::Null)) {
        return Ok(Value::Null);
    }
    if f == LockFunc::ReloadConf {
        // SAFETY: kill(2) of our own process with SIGHUP, which the server
        // handles (its signal handler only sets a flag and wakes the accept loop).
        let ok = unsafe { libc::kill(libc::getpid(), libc::SIGHUP) } == 0;
        if !ok {
            if let Some(ctx) = env.lock_ctx() {
                ctx.notices.push(SqlError::warning(b"01000", "failed to send signal to postmaster: could not signal the server"));
            }
        }
        return Ok(Value::Bool(ok));
    }
    let ctx = env.lock_ctx().ok_or_else(|| SqlError::not_supported("lock functions outside a session"))?;
    let (m, b, txn) = (ctx.manager.clone(), ctx.backend, ctx.txn.clone());
    if let LockFunc::CancelBackend | LockFunc::TerminateBackend = f {
        return signal_backend(f, vals, env);
    }
    Ok(match f {
        LockFunc::AdvisoryLock { shared, xact, try_ } => {
            let key = advisory_key(vals).ok_or_else(|| SqlError::internal("bad advisory lock key"))?;
            let got = m.advisory_lock(b, crate::database::current(), key, shared, !xact, !try_)?;
            if try_ {
                Value::Bool(got)
            } else {
                void()
            }
        }
        LockFunc::AdvisoryUnlock { shared } => {
            let key = advisory_key(vals).ok_or_else(|| SqlError::internal("bad advisory lock key"))?;
            let r = m.advisory_unlock(b, crate::database::current(), key, shared)?;
            if let Some(w) = r.warning {
                ctx.notices.push(SqlError::warning(b"01000", w));
            }
            Value::Bool(r.released)
        }
        LockFunc::AdvisoryUnlockAll => {
            m.advisory_unlock_all(b)?;
            void()
        }
        LockFunc::IsolationTestSessionIsBlocked => {
            let (Value::Int4(pid), Value::Array(list)) = (&vals[0], &vals[1]) else {
                return Err(SqlError::internal("bad arguments"));
            };
            let blockers = m.blocking_pids(*pid);
            // Waiting for a safe snapshot (READ ONLY DEFERRABLE) is blocked too,
            // whoever it waits for (PostgreSQL's definition).
            Value::Bool(
                list.items.iter().any(|p| matches!(p, Value::Int4(p) if blockers.contains(p)))
                    || !txn.predicate.safe_snapshot_blocking_pids(*pid).is_empty(),
            )
        }
        LockFunc::SafeSnapshotBlockingPids => {
            let Value::Int4(pid) = &vals[0] else { return Err(SqlError::internal("bad arguments")) };
            let pids = txn.predicate.safe_snapshot_blocking_pids(*pid).into_iter().map(Value::Int4).collect();
            Value::Array(Box::new(ferrogres_datum::array::Array::new(ferrogres_datum::types::Type::Int4, pids)))
        }
        LockFunc::BlockingPids => {
            let Value::Int4(pid) = &vals[0] else { return Err(SqlError::internal("bad arguments")) };
            let pids = m.blocking_pids(*pid).into_iter().map(Value::Int4).collect();
            Value::Array(Box::new(ferrogres_datum::array::Array::new(ferrogres_datum::types::Type::Int4, pids)))
        }
        LockFunc::CancelBackend | LockFunc::TerminateBackend | LockFunc::ReloadConf | LockFunc::Notify => unreachable!("handled above"),
    })
}

/// pg_signal_backend's OID (PostgreSQL 15's predefined role).
const PG_SIGNAL_BACKEND: u32 = 4200;

/// pg_cancel_backend / pg_terminate_backend: PostgreSQL 15's results and
/// permission rules. An unknown pid is a WARNING and false. A backend of a
/// superuser (or an auxiliary process, which has no role) may be signalled
/// by superusers only; another backend by a role that has the privileges of
/// the backend's role or of pg_signal_backend (42501 otherwise, with
/// PostgreSQL 15's texts, which have no DETAIL). The backend's role is the
/// one it logged in as, as PostgreSQL's PGPROC.roleId (SET ROLE does not
/// change it). pg_terminate_backend with a timeout waits (checking for
/// interrupts) until the backend is gone, else a WARNING and false.
fn signal_backend(f: LockFunc, vals: &[ferrogres_datum::types::Value], env: &mut dyn crate::exec::Env) -> Result<ferrogres_datum::types::Value> {
    use ferrogres_datum::types::Value;
    use ferrogres_engine::pgstat::activity::BackendSignal;
    let Value::Int4(pid) = vals[0] else { return Err(SqlError::internal("bad arguments")) };
    let timeout = match vals.get(1) {
        Some(Value::Int8(t)) => *t,
        _ => 0,
    };
    if timeout < 0 {
        return Err(SqlError::new(b"22023", "\"timeout\" must not be negative"));
    }
    let engine = env.lock_ctx().ok_or_else(|| SqlError::not_supported("backend signals outside a session"))?.seqs.engine().clone();
    let sig = if f == LockFunc::CancelBackend { BackendSignal::Cancel } else { BackendSignal::Terminate };
    let not_a_backend = |env: &mut dyn crate::exec::Env| -> Result<Value> {
        let ctx = env.lock_ctx().ok_or_else(|| SqlError::internal("no session"))?;
        ctx.notices.push(SqlError::warning(b"01000", format!("PID {pid} is not a PostgreSQL backend process")));
        Ok(Value::Bool(false))
    };
    let Some(target) = engine.activity.backend_of_pid(pid) else { return not_a_backend(env) };
    if matches!(engine.activity.backend_type(target), Some("checkpointer" | "background writer" | "walwriter")) {
        // Auxiliary processes: not in PostgreSQL's ProcArray either.
        return not_a_backend(env);
    }
    let role = engine.activity.role_of(target).flatten();
    let (me, roles) = env.caller_roles()?;
    let cancel = sig == BackendSignal::Cancel;
    if role.is_none_or(|r| roles.superuser(r)) && !roles.superuser(me) {
        return Err(SqlError::new(
            b"42501",
            if cancel { "must be a superuser to cancel superuser query" } else { "must be a superuser to terminate superuser process" },
        ));
    }
    if !role.is_some_and(|r| roles.has_privs_of(me, r)) && !roles.has_privs_of(me, PG_SIGNAL_BACKEND) {
        return Err(SqlError::new(
            b"42501",
            if cancel {
                "must be a member of the role whose query is being canceled or member of pg_signal_backend"
            } else {
                "must be a member of the role whose process is being terminated or member of pg_signal_backend"
            },
        ));
    }
    if !engine.activity.signal(pid, sig) {
        return not_a_backend(env);
    }
    if sig == BackendSignal::Terminate && timeout > 0 {
        let deadline = std::time::Instant::now() + std::time::Duration::from_millis(timeout as u64);
        while engine.activity.backend_of_pid(pid).is_some() {
            if std::time::Instant::now() >= deadline {
                let ctx = env.lock_ctx().ok_or_else(|| SqlError::internal("no session"))?;
                ctx.notices.push(SqlError::warning(b"01000", format!("backend with PID {pid} did not terminate within {timeout} milliseconds")));
                return Ok(Value::Bool(false));
            }
            env.check_interrupts()?;
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
    }
    Ok(Value::Bool(true))
}

/// After an error in a transaction block without savepoints, aborts the engine
/// transaction at once, as PostgreSQL does: its locks (relation, row, advisory
/// transaction locks, its xid) are released now, not at the ROLLBACK that ends
/// the failed block. With savepoints open the transaction stays, so that
/// ROLLBACK TO can repair it (its locks are then held until then).
pub fn abort_failed_block(backend: &mut Backend) {
    if backend.txn.in_transaction() && backend.txn.nesting_level() <= 1 {
        let _ = backend.txn.abort();
    }
}

/// SELECT ... FOR UPDATE / NO KEY UPDATE / SHARE / KEY SHARE [OF t] [NOWAIT |
/// SKIP LOCKED] over one table (the only FROM this branch has).
pub fn analyze_locking_select(a: &mut crate::analyze::Analyzer<'_>, s: &pg_query::protobuf::SelectStmt) -> Result<crate::plan::Statement> {
    use ferrogres_engine::heap::heapam::WaitPolicy;
    use ferrogres_engine::heap::page::RowLockMode;
    use pg_query::protobuf::{LockClauseStrength as S, LockWaitPolicy as W};
    let [clause] = s.locking_clause.as_slice() else {
        return Err(SqlError::not_supported("more than one locking clause"));
    };
    let Some(pg_query::NodeEnum::LockingClause(lc)) = &clause.node else {
        return Err(SqlError::internal("locking clause expected"));
    };
    let (strength, what) = match S::try_from(lc.strength).unwrap_or(S::Undefined) {
        S::LcsForkeyshare => (RowLockMode::KeyShare, "FOR KEY SHARE"),
        S::LcsForshare => (RowLockMode::Share, "FOR SHARE"),
        S::LcsFornokeyupdate => (RowLockMode::NoKeyExclusive, "FOR NO KEY UPDATE"),
        S::LcsForupdate => (RowLockMode::Exclusive, "FOR UPDATE"),
        _ => return Err(SqlError::internal("unknown row lock strength")),
    };
    let wait = match W::try_from(lc.wait_policy).unwrap_or(W::Undefined) {
        W::LockWaitSkip => WaitPolicy::SkipLocked,
        W::LockWaitError => WaitPolicy::NoWait,
        _ => WaitPolicy::Block,
    };
    // PostgreSQL refuses these before analyzing the query (its grouping errors).
    if !s.distinct_clause.is_empty() {
        return Err(SqlError::new(b"0A000", format!("{what} is not allowed with DISTINCT clause")));
    }
    if !s.group_clause.is_empty() {
        return Err(SqlError::new(b"0A000", format!("{what} is not allowed with GROUP BY clause")));
    }
    if s.having_clause.is_some() {
        return Err(SqlError::new(b"0A000", format!("{what} is not allowed with HAVING clause")));
    }
    let query = a.select(s)?;
    if !query.aggregates.is_empty() {
        return Err(SqlError::new(b"0A000", format!("{what} is not allowed with aggregate functions")));
    }
    // OF t: must name the FROM item (by its alias if it has one).
    let refname = match s.from_clause.first().and_then(|f| f.node.as_ref()) {
        Some(pg_query::NodeEnum::RangeVar(rv)) => Some(rv.alias.as_ref().map_or(rv.relname.clone(), |al| al.aliasname.clone())),
        _ => None,
    };
    for r in &lc.locked_rels {
        if let Some(pg_query::NodeEnum::RangeVar(rv)) = &r.node {
            if !rv.schemaname.is_empty() {
                return Err(SqlError::new(b"42601", format!("{what} must specify unqualified relation names")).at(a.sql, rv.location));
            }
            if refname.as_deref() != Some(rv.relname.as_str()) {
                return Err(SqlError::new(b"42P01", format!("relation \"{}\" in {what} clause not found in FROM clause", rv.relname))
                    .at(a.sql, rv.location));
            }
        }
    }
    Ok(crate::plan::Statement::LockingQuery { query, strength, wait })
}

/// Runs a locking query: the rows passing WHERE (sorted first if ORDER BY) are
/// locked one by one (PostgreSQL's LockRows node, below Limit: LIMIT counts
/// locked rows only, OFFSET rows are locked too). A row updated by a
/// transaction that committed meanwhile is re-checked on its newest version
/// (READ COMMITTED; the engine returns 40001 in REPEATABLE READ) and returned
/// as that version if it still qualifies; a deleted or skipped row is left out.
pub fn run_locking_query(
    q: &crate::plan::Query,
    strength: ferrogres_engine::heap::page::RowLockMode,
    wait: ferrogres_engine::heap::heapam::WaitPolicy,
    ctx: &mut crate::exec::Ctx,
) -> Result<Vec<Vec<ferrogres_datum::types::Value>>> {
    use crate::exec::{compare, eval_pure, limit_value};
    use ferrogres_datum::types::Value;
    use ferrogres_engine::heap::heapam::{heap_lock_tuple, LockOutcome};
    let crate::plan::Source::Table(table) = &q.source else {
        let mut it = crate::exec::run_query(q, ctx)?;
        let mut rows = Vec::new();
        while let Some(r) = it.next(ctx)? {
            rows.push(r);
        }
        return Ok(rows);
    };
    let qualifies = |row: &[Value], ctx: &mut crate::exec::Ctx| -> Result<bool> {
        Ok(match &q.filter {
            Some(p) => eval_pure(p, row, ctx.params, &[], ctx.env)? == Value::Bool(true),
            None => true,
        })
    };
    let project = |row: &[Value], ctx: &mut crate::exec::Ctx| -> Result<Vec<Value>> {
        q.targets.iter().map(|t| &t.expr).chain(q.hidden.iter()).map(|e| eval_pure(e, row, ctx.params, &[], ctx.env)).collect()
    };
    let mut cand = Vec::new();
    for (tid, row) in crate::rowio::scan_rows(ctx.backend, &table.storage, &ctx.snap)? {
        if qualifies(&row, ctx)? {
            let key = if q.order.is_empty() { Vec::new() } else { project(&row, ctx)? };
            cand.push((key, tid, row));
        }
    }
    if !q.order.is_empty() {
        cand.sort_by(|(a, ..), (b, ..)| {
            for k in &q.order {
                let (x, y) = (&a[k.column], &b[k.column]);
                let o = match (x.is_null(), y.is_null()) {
                    (true, true) => std::cmp::Ordering::Equal,
                    (true, false) if k.nulls_first => std::cmp::Ordering::Less,
                    (true, false) => std::cmp::Ordering::Greater,
                    (false, true) if k.nulls_first => std::cmp::Ordering::Greater,
                    (false, true) => std::cmp::Ordering::Less,
                    _ if k.desc => compare(x, y).reverse(),
                    _ => compare(x, y),
                };
                if o != std::cmp::Ordering::Equal {
                    return o;
                }
            }
            std::cmp::Ordering::Equal
        });
    }
    let offset = limit_value(&q.offset, ctx, "OFFSET", b"2201X")?.unwrap_or(0).max(0) as usize;
    let limit = limit_value(&q.limit, ctx, "LIMIT", b"2201W")?.map(|l| l.max(0) as usize);
    let need = limit.map(|l| l.saturating_add(offset));
    let mut out = Vec::new();
    for (_, tid, row) in cand {
        if need.is_some_and(|n| out.len() >= n) {
            break;
        }
        let (mut tid, mut row) = (tid, row);
        let locked = loop {
            match heap_lock_tuple(ctx.backend, table.storage.rel, tid, strength, wait, &table.name)? {
                LockOutcome::Locked => break Some(row),
                LockOutcome::Updated { new_tid } => match crate::exec::newest_qualifying(table, new_tid, &qualifies, ctx)? {
                    Some((latest, newest)) => (tid, row) = (latest, newest),
                    None => break None,
                },
                _ => break None,
            }
        };
        if let Some(row) = locked {
            let mut r = project(&row, ctx)?;
            r.truncate(q.targets.len());
            out.push(r);
        }
        ctx.env.check_interrupts()?;
    }
    Ok(out.into_iter().skip(offset).collect())
}
