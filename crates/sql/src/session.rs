//! A SQL session: the transaction state machine, statement execution for the
//! simple and extended protocols, prepared statements and portals, settings.
//!
//! ```text
//!            BEGIN                         error
//!   Idle ─────────────▶ InBlock ───────────────────────▶ Failed
//!    ▲  ╲ any statement    │ COMMIT/ROLLBACK               │ ROLLBACK / COMMIT (= rollback)
//!    │   ╲ (implicit txn)  ▼                               │ ROLLBACK TO sp ──▶ InBlock
//!    └──── end of string / Sync: commit (abort on error) ◀─┘
//! ```
//!
//! - Outside a block, a simple-query string's statements run in one implicit
//!   transaction, committed after the last one (PostgreSQL's behaviour); an error
//!   rolls it back. In the extended protocol the implicit transaction lasts until
//!   Sync.
//! - In a block, an error moves to Failed: every statement but ROLLBACK, COMMIT
//!   and ROLLBACK TO SAVEPOINT answers 25P02. The engine transaction stays open
//!   until then, so ROLLBACK TO can undo just the failed part.
//! - Each statement gets its own snapshot (READ COMMITTED; REPEATABLE READ reuses
//!   the transaction's), and a command-counter increment after it.
//!
//! Plan cache: a prepared statement keeps its analyzed plan and is re-analyzed
//! at Bind when an object it read changed since ([`crate::plan_cache::PlanVersion`]:
//! the catalog cache's generations of the relations it read, from the shared
//! invalidation messages of committed DDL, plus the session's own DDL count).
//! Simple queries reuse the parse tree of a query string seen
//! before (a per-session cache keyed by the text, at most [`PARSE_CACHE_SIZE`]
//! entries) and the plan of a statement text seen before while what it read
//! and the session's settings are unchanged ([`crate::plan_cache`]).

use crate::analyze::Analyzer;
use ferrogres_datum::errors::{Result, Severity, SqlError};
use crate::exec::{self, Ctx, Env};
use crate::parser::{self, ParsedStmt};
use crate::plan::{Statement, Target, TxnCmd};
use ferrogres_datum::types::{self, Type, Value};
use crate::catalog;
use ferrogres_engine::engine::Backend;
use ferrogres_engine::txn::IsolationLevel;
use std::collections::VecDeque;
use rustc_hash::FxHashMap;
use crate::plan_cache::PlanVersion;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// Query strings whose parse trees a session keeps.
pub const PARSE_CACHE_SIZE: usize = 128;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxnStatus {
    /// No transaction block (an implicit transaction may be open).
    Idle,
    InBlock,
    Failed,
}

/// A column of a result, for RowDescription.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnDesc {
    pub name: String,
    pub ty: Type,
    pub typmod: i32,
    pub table_oid: u32,
    pub column_id: i16,
}

/// Where a session sends results.
pub trait Output {
    fn row_description(&mut self, cols: &[ColumnDesc]) -> Result<()>;
    fn row(&mut self, row: &[Value]) -> Result<()>;
    fn command_complete(&mut self, tag: &str) -> Result<()>;
    fn empty_query(&mut self) -> Result<()>;
    fn notice(&mut self, notice: &SqlError) -> Result<()>;
    /// COPY FROM STDIN: CopyInResponse (`ncols` columns, all text or all
    /// binary); then [`Output::copy_in_read`] until Done or Fail.
    fn copy_in_start(&mut self, _ncols: usize, _binary: bool) -> Result<()> {
        Err(SqlError::not_supported("COPY FROM STDIN on this connection"))
    }
    fn copy_in_read(&mut self) -> Result<crate::copy::CopyInEvent> {
        Err(SqlError::not_supported("COPY FROM STDIN on this connection"))
    }
    /// COPY TO STDOUT: CopyOutResponse (`ncols` columns, all text or all
    /// binary), then [`Output::copy_data`]* and [`Output::copy_done`].
    fn copy_out_start(&mut self, _ncols: usize, _binary: bool) -> Result<()> {
        Err(SqlError::not_supported("COPY TO STDOUT on this connection"))
    }
    fn copy_data(&mut self, _data: &[u8]) -> Result<()> {
        Err(SqlError::not_supported("COPY TO STDOUT on this connection"))
    }
    fn copy_done(&mut self) -> Result<()> {
        Err(SqlError::not_supported("COPY TO STDOUT on this connection"))
    }
}

/// How an Execute ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExecOutcome {
    Completed(String),
    Suspended,
    EmptyQuery,
}

/// A bound parameter as received: text or binary bytes, or NULL.
#[derive(Clone, Copy, Debug)]
pub enum ParamValue<'a> {
    Null,
    Text(&'a [u8]),
    Binary(&'a [u8]),
}

/// One run-time setting (GUC).
#[derive(Clone, Debug)]
pub struct Setting {
    pub name: String,
    pub value: String,
    pub default: String,
    /// Reported to the client in ParameterStatus when it changes.
    pub reported: bool,
}

/// The session's side of the executor's environment.
pub struct SessionEnv {
    pub settings: Vec<Setting>,
    pub changed: Vec<(String, String)>,
    pub pid: i32,
    pub version: String,
    pub interrupts: Box<dyn Fn() -> Result<()> + Send>,
    /// Arms (`Some(statement_timeout)`) or disarms (`None`) the statement
    /// timer that `interrupts` reports (57014) once it has run out; the
    /// session calls it around each top-level statement.
    pub statement_timer: Box<dyn Fn(Option<std::time::Duration>) + Send>,
    /// The lock manager side of lock functions; set by `Session::new`.
    pub locks: Option<crate::locking::LockCtx>,
    /// Changes of this session's settings so far: its cached plans and the
    /// thread's pushed date/time context are for one value of it. Per
    /// session: a SET never touches another session's plans.
    pub settings_gen: u64,
}

/// Checks a value given at server start (`-c name=value`) for a setting a session
/// may change, the way SET checks it (DateStyle's keywords, TimeZone's names, ...),
/// and returns the value in the form SHOW prints: the binary makes it the sessions'
/// default, or stops with FATAL.
pub fn check_startup_setting(name: &str, value: &str) -> Result<String> {
    let boot = ferrogres_engine::config::guc::find(name).map_or("", |g| g.boot);
    let mut env = SessionEnv {
        settings: vec![Setting { name: name.to_string(), value: boot.into(), default: boot.into(), reported: false }],
        changed: Vec::new(),
        pid: 0,
        version: String::new(),
        interrupts: Box::new(|| Ok(())),
        statement_timer: Box::new(|_| {}),
        locks: None,
        settings_gen: 0,
    };
    env.set(name, Some(value))?;
    env.get(name)
}

impl SessionEnv {
    fn find(&self, name: &str) -> Option<usize> {
        self.settings.iter().position(|s| s.name.eq_ignore_ascii_case(name))
    }

    /// SET / RESET / a startup-packet setting. The table of known settings
    /// (`ferrogres_engine::config::guc`) decides whether it may change now (a
    /// postmaster setting: 55P02 "cannot be changed without restarting the
    /// server") and checks the value's type, unit and range; numbers and booleans
    /// are kept in SHOW's canonical form (`SET work_mem = 65536` shows `64MB`).
    /// A name with a dot and no row is a custom placeholder, made on first SET.
    pub fn set(&mut self, name: &str, value: Option<&str>) -> Result<()> {
        use ferrogres_engine::config::guc;
        let lname = name.to_ascii_lowercase();
        let Some(idx) = self.find(name) else {
            if let (true, Some(v)) = (guc::is_custom(&lname), value) {
                self.settings_gen += 1;
                self.settings.push(Setting { name: lname, value: v.to_string(), default: String::new(), reported: false });
                return Ok(());
            }
            return Err(SqlError::new(b"42704", format!("unrecognized configuration parameter \"{lname}\"")));
        };
        let value = value.map(str::to_string).unwrap_or_else(|| self.settings[idx].default.clone());
        let value = match guc::find(&lname) {
            Some(g) => {
                if let Some(e) = guc::change_forbidden(g, false) {
                    return Err(e.into());
                }
                match g.kind {
                    guc::Kind::String => value,
                    _ => g.canonical(&lname, &value).map_err(SqlError::from)?,
                }
            }
            None => value,
        };
        let value = match lname.as_str() {
            "client_encoding" => ferrogres_datum::encoding::check_client_encoding(&value)?,
            "default_table_access_method" => match value.as_str() {
                "heap" => value,
                "" => {
                    return Err(SqlError::new(b"22023", "invalid value for parameter \"default_table_access_method\": \"\"")
                        .with_detail("default_table_access_method cannot be empty."))
                }
                "btree" | "hash" | "gist" | "gin" | "spgist" | "brin" => {
                    return Err(SqlError::new(b"55000", format!("access method \"{value}\" is not of type TABLE")))
                }
                _ => {
                    return Err(SqlError::new(b"22023", format!("invalid value for parameter \"default_table_access_method\": \"{value}\""))
                        .with_detail(format!("Table access method \"{value}\" does not exist.")))
                }
            },
            "datestyle" => ferrogres_datum::datestyle::check_datestyle(&value, &self.settings[idx].value)?,
            "bytea_output" => {
                let v = value.to_ascii_lowercase();
                if v != "hex" && v != "escape" {
                    return Err(SqlError::new(b"22023", format!("invalid value for parameter \"bytea_output\": \"{value}\""))
                        .with_hint("Available values: escape, hex."));
                }
                v
            }
            "timezone" => {
                let v = value.trim();
                let v = match v.parse::<i32>() {
                    // SET TIME ZONE <number>: hours east of UTC.
                    Ok(h) if (-15..=15).contains(&h) => ferrogres_datum::datetime::zone_setting_from_hours(h),
                    _ => v.to_string(),
                };
                match ferrogres_datum::datetime::canonical_zone_setting(&v) {
                    Some(v) => v,
                    None => return Err(SqlError::new(b"22023", format!("invalid value for parameter \"TimeZone\": \"{value}\""))),
                }
            }
            "intervalstyle" => {
                let v = value.to_ascii_lowercase();
                if !matches!(v.as_str(), "postgres" | "postgres_verbose" | "sql_standard" | "iso_8601") {
                    return Err(SqlError::new(b"22023", format!("invalid value for parameter \"{lname}\": \"{value}\""))
                        .with_hint("Available values: postgres, postgres_verbose, sql_standard, iso_8601."));
                }
                v
            }
            "client_min_messages" => {
                let v = value.to_ascii_lowercase();
                let ok = ["debug5", "debug4", "debug3", "debug2", "debug1", "debug", "log", "notice", "warning", "error"];
                if !ok.contains(&v.as_str()) {
                    return Err(SqlError::new(b"22023", format!("invalid value for parameter \"client_min_messages\": \"{value}\""))
                        .with_hint("Available values: debug5, debug4, debug3, debug2, debug1, log, notice, warning, error."));
                }
                if v == "debug" { "debug2".into() } else { v }
            }
            "max_stack_depth" => {
                // Every session is a superuser here (PostgreSQL: a superuser setting).
                let (shown, kb) = ferrogres_datum::stack_depth::parse_setting(&value)?;
                ferrogres_datum::stack_depth::set_limit_kb(kb);
                shown
            }
            "deadlock_timeout" | "lock_timeout" => {
                let v = crate::locking::check_time_setting(&lname, &value)?;
                if let Some(l) = self.locks.as_mut() {
                    l.timeouts_dirty = true;
                }
                v
            }
            crate::memory::SETTING => crate::memory::normalize(&value)?,
            "extra_float_digits" => {
                match value.trim().parse::<i32>() {
                    Ok(n) if (-15..=3).contains(&n) => n.to_string(),
                    Ok(n) => {
                        return Err(SqlError::new(b"22023", format!("{n} is outside the valid range for parameter \"extra_float_digits\" (-15 .. 3)")))
                    }
                    Err(_) => {
                        return Err(SqlError::new(b"22023", "invalid value for parameter \"extra_float_digits\": \"".to_string() + &value + "\""))
                    }
                }
            }
            _ => value,
        };
        self.settings_gen += 1;
        let s = &mut self.settings[idx];
        s.value = value.clone();
        if s.reported {
            let n = s.name.clone();
            self.changed.retain(|(k, _)| *k != n);
            self.changed.push((n, value));
        }
        Ok(())
    }

    pub fn get(&self, name: &str) -> Result<String> {
        self.find(name)
            .map(|i| self.settings[i].value.clone())
            .ok_or_else(|| SqlError::new(b"42704", format!("unrecognized configuration parameter \"{}\"", name.to_ascii_lowercase())))
    }

    fn canonical_name(&self, name: &str) -> String {
        self.find(name).map(|i| self.settings[i].name.clone()).unwrap_or_else(|| name.to_string())
    }

    /// Whether a notice of this severity reaches the client (client_min_messages).
    fn shows(&self, sev: Severity) -> bool {
        let level = self.get("client_min_messages").unwrap_or_default();
        match sev {
            Severity::Notice => !matches!(level.as_str(), "warning" | "error"),
            Severity::Warning => level != "error",
            _ => true,
        }
    }
}

impl Env for SessionEnv {
    fn check_interrupts(&self) -> Result<()> {
        (self.interrupts)()?;
        crate::memory::check()
    }
    fn get_setting(&self, name: &str) -> Result<String> {
        self.get(name)
    }
    fn settings(&self) -> Vec<(String, String, String)> {
        self.settings.iter().map(|s| (s.name.clone(), s.value.clone(), s.default.clone())).collect()
    }
    fn set_setting(&mut self, name: &str, value: &str) -> Result<()> {
        self.set(name, Some(value))
    }
    fn pid(&self) -> i32 {
        self.pid
    }
    fn version(&self) -> String {
        self.version.clone()
    }
    fn lock_ctx(&mut self) -> Option<&mut crate::locking::LockCtx> {
        self.locks.as_mut()
    }
}

/// Where a statement's execution started, for pg_stat_statements: the time,
/// the backend's buffer (hits, reads) and its other usage counters.
type StatStart = (std::time::Instant, (u64, u64), ferrogres_engine::pgstat::usage::Usage);

/// `a` plus the usage `d` (a portal's Executes, summed).
fn add_usage(a: &ferrogres_engine::pgstat::usage::Usage, d: &ferrogres_engine::pgstat::usage::Usage) -> ferrogres_engine::pgstat::usage::Usage {
    ferrogres_engine::pgstat::usage::Usage {
        wal_records: a.wal_records + d.wal_records,
        wal_fpi: a.wal_fpi + d.wal_fpi,
        wal_bytes: a.wal_bytes + d.wal_bytes,
        shared_blks_dirtied: a.shared_blks_dirtied + d.shared_blks_dirtied,
        shared_blks_written: a.shared_blks_written + d.shared_blks_written,
        temp_blks_read: a.temp_blks_read + d.temp_blks_read,
        temp_blks_written: a.temp_blks_written + d.temp_blks_written,
        temp_files: a.temp_files + d.temp_files,
        temp_bytes: a.temp_bytes + d.temp_bytes,
    }
}

struct Prepared {
    parsed: Option<ParsedStmt>,
    /// Shared with the portals bound from it: a Bind costs no plan copy.
    plan: Arc<Statement>,
    param_types: Vec<Type>,
    /// What it was analyzed under.
    version: PlanVersion,
    /// Its query id and normalized text, computed with the plan.
    ident: crate::plan_cache::Ident,
    /// The relation locks an execution takes (`locking::plan_locks` of the plan).
    locks: Vec<(u32, String, ferrogres_engine::lmgr::lock::LockMode)>,
}

enum PortalState {
    NotStarted,
    /// A query whose executor is open: each Execute pulls at most its row
    /// limit from `it`, under the snapshot the query started with, and the
    /// rest stay unread until the next Execute (PostgreSQL's PORTAL_ONE_SELECT).
    Running(OpenQuery),
    /// The query's executor ran out of rows: running the portal again returns none.
    Exhausted,
    /// The rows of a statement that had to run to completion (RETURNING, SHOW).
    Rows { rows: VecDeque<Vec<Value>>, tag: String },
    /// A statement without rows ran; its tag is reported by this Execute.
    Done(String),
    /// A statement without rows ran and was reported: running the portal again
    /// is PostgreSQL's 55000 `portal "p" cannot be run` (PORTAL_DONE).
    Finished,
    /// A FETCH run with a row limit that stopped at it: the rest of its rows
    /// are the next `left` rows (`None`: all) of SQL cursor `cursor`, read by
    /// the next Execute. PostgreSQL runs the FETCH to its end at once and keeps
    /// its rows in the portal; reading them from the cursor when asked keeps
    /// nothing in memory and sends the same rows, unless the cursor is moved
    /// or closed by another statement in between.
    Fetching { cursor: String, left: Option<u64> },
}

/// A query's executor kept open between protocol messages (a suspended
/// portal, a cursor): the row iterator owns its operators' state (no borrow of
/// the plan or the session), and `snap` is the snapshot it started with; each
/// pull builds a fresh [`Ctx`] around them with the session's backend and
/// settings.
pub(crate) struct OpenQuery {
    it: Box<dyn exec::RowIter>,
    snap: ferrogres_engine::txn::snapshot::Snapshot,
}

struct Portal {
    /// The statement's text (pg_stat_activity.query while it runs).
    sql: Option<Arc<str>>,
    plan: Arc<Statement>,
    /// The privileges the plan needs ([`crate::acl`]), checked when it starts.
    perms: Arc<Vec<crate::acl::PermReq>>,
    params: Vec<Value>,
    state: PortalState,
    /// Made by DECLARE (a SQL cursor): its position for FETCH and MOVE.
    cursor: Option<CursorPos>,
    /// The statement's query id and text (from its prepared statement).
    ident: crate::plan_cache::Ident,
    /// pg_stat_statements: what the Executes that suspended this portal took
    /// (ms, rows, buffer hits, reads): one call is counted when it completes.
    stat_acc: (f64, u64, u64, u64, ferrogres_engine::pgstat::usage::Usage),
}

/// Where a forward-only cursor stands (PostgreSQL's portalPos/atEnd).
#[derive(Default)]
struct CursorPos {
    /// Rows fetched or moved over so far: the current row's number (0:
    /// before the first).
    pos: u64,
    /// The executor ran out of rows: the cursor stands after the last.
    at_end: bool,
}

/// What [`Session::cached_settings`] keeps parsed (see `Session::hot_settings`).
#[derive(Clone, Copy, Debug, Default)]
struct HotSettings {
    /// The settings' epoch these were read at (`u64::MAX`: never).
    epoch: u64,
    /// statement_timeout in ms (0: off).
    statement_timeout_ms: u64,
    track_activities: bool,
    default_read_only: bool,
    default_deferrable: bool,
    /// default_transaction_isolation (None: the session's built-in default).
    default_isolation: Option<IsolationLevel>,
    /// idle_session_timeout, idle_in_transaction_session_timeout (None: off).
    idle_session: Option<std::time::Duration>,
    idle_in_transaction: Option<std::time::Duration>,
    /// A statement's memory limit in bytes (`crate::memory::SETTING`; None: none).
    memory_limit: Option<u64>,
    /// compute_query_id is not off (auto means on: pg_stat_statements is built in).
    compute_query_id: bool,
    /// pg_stat_statements.track is not none (top and all: top-level
    /// statements; SQL functions are inlined, so nothing runs nested, except
    /// EXPLAIN ANALYZE's statement, which `all` does not record yet).
    track_statements: bool,
    /// pg_stat_statements.track_utility.
    track_utility: bool,
    /// compute_query_id = auto or regress: ids are computed but EXPLAIN
    /// VERBOSE does not show them, so its output is a stock PostgreSQL 15's
    /// (whose auto computes none without pg_stat_statements); `on` shows them.
    query_id_hidden: bool,
}

pub struct Session {
    backend: Backend,
    /// The role the connection authenticated as (SET SESSION AUTHORIZATION
    /// needs it to have been a superuser).
    authenticated_user: u32,
    /// The privileges the last analysis found its statement needs
    /// ([`crate::acl`]); kept with the plan it made.
    analyzed_perms: Arc<Vec<crate::acl::PermReq>>,
    pub env: SessionEnv,
    status: TxnStatus,
    /// The open engine transaction is implicit (no BEGIN).
    implicit: bool,
    /// Statements run in the current transaction (SET TRANSACTION must come first).
    stmts_in_txn: u64,
    /// The current transaction changed the catalog.
    did_ddl: bool,
    /// DDL statements run by this session (own uncommitted DDL invalidates plans).
    ddl_count: u64,
    default_isolation: IsolationLevel,
    // FxHash: these are looked up several times per Bind/Execute; SipHash's
    // flooding resistance buys nothing in a map of the session's own names.
    prepared: FxHashMap<String, Prepared>,
    portals: FxHashMap<String, Portal>,
    /// The last portal description made, with the plan it describes (held,
    /// so its address cannot be reused by another plan): the Binds and
    /// Describes of one prepared statement's executions share it.
    desc_memo: Option<(Arc<Statement>, Arc<[ColumnDesc]>)>,
    /// Parse trees of recent simple-query strings, with a use stamp for eviction.
    parse_cache: FxHashMap<String, (std::sync::Arc<Vec<ParsedStmt>>, u64)>,
    parse_clock: u64,
    /// Analyzed plans of recent simple-query statements ([`crate::plan_cache`]).
    plan_cache: crate::plan_cache::PlanCache,
    /// Unique per session ([`NEXT_SESSION_UID`]).
    uid: u64,
    /// The plan (address) whose relation locks `revalidate_prepared` took at
    /// Bind, and the transaction nesting level then: the `run` that follows
    /// for that plan need not take them again. Cleared by every other `run`,
    /// Bind, Close and transaction end.
    plan_locked: Option<(usize, usize)>,
    /// Settings changed in the current transaction, to undo at its end
    /// (PostgreSQL's GUC stack, without savepoint levels): SET LOCAL ones go
    /// back to `prior` at commit and rollback, plain SET ones at rollback.
    guc_undo: Vec<GucUndo>,
    /// The simple-query string being run has several statements: an implicit
    /// transaction block (SET LOCAL applies to it without a warning).
    multi_statement: bool,
    /// The settings every statement or every wait for the client reads,
    /// parsed again only when the settings' epoch (`SessionEnv::settings_gen`)
    /// moves: looking a setting up by name is a scan of every setting.
    hot_settings: std::cell::Cell<HotSettings>,
    /// pg_stat_activity.xact_start is set (a transaction is open).
    xact_reported: bool,
    /// The query id of the statement an EXPLAIN about to run explains
    /// (EXPLAIN VERBOSE shows it; set with the statement's query id).
    explained_query_id: Option<i64>,
    /// A statement timer is armed by an outer `run` (nested runs leave it).
    timer_armed: bool,
    /// Set by a simple-query statement about to run a query whose columns the
    /// client is told: `run_in_txn` sends RowDescription and then each row as
    /// the executor yields it, holding none (taken by the first query run).
    stream_rows: Option<Vec<ColumnDesc>>,
    /// Set by a portal about to start a query: `run_in_txn` opens its executor
    /// and leaves it in `opened` instead of running it (taken by the first
    /// query run).
    open_query: bool,
    opened: Option<OpenQuery>,
    /// The current transaction is READ ONLY / DEFERRABLE (from
    /// default_transaction_read_only / _deferrable when it began, or BEGIN /
    /// SET TRANSACTION).
    xact_read_only: bool,
    xact_deferrable: bool,
}

/// One setting changed inside a transaction ([`Session::guc_undo`]).
#[derive(Clone, Debug)]
struct GucUndo {
    name: String,
    /// The value when the transaction started.
    prior: String,
    /// The value a plain SET in this transaction left (kept at commit).
    session_value: Option<String>,
}

thread_local! {
    /// (session uid, its settings generation) whose settings this thread's date/time,
    /// output-style and search-path context holds ([`Session::sync_datetime`]).
    static SYNCED_SETTINGS: std::cell::Cell<(u64, u64)> = const { std::cell::Cell::new((0, 0)) };
}

/// Session uids start at 1 (0 means "none" in [`SYNCED_SETTINGS`]).
static NEXT_SESSION_UID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// Makes the session's `max_stack_depth` the thread's stack-depth limit
/// ([`ferrogres_datum::stack_depth`]: the limit is per thread, set by the session that
/// runs there).
fn push_stack_limit(env: &SessionEnv) {
    if let Some(Ok((_, kb))) = env.get("max_stack_depth").ok().map(|v| ferrogres_datum::stack_depth::parse_setting(&v)) {
        ferrogres_datum::stack_depth::set_limit_kb(kb);
    }
}

fn txn_error(e: impl Into<SqlError>) -> SqlError {
    e.into()
}

impl Session {
    pub fn new(backend: Backend, mut env: SessionEnv) -> Session {
        env.locks = Some(crate::locking::LockCtx::new(&backend));
        push_stack_limit(&env);
        Session {
            authenticated_user: backend.session_user,
            analyzed_perms: Arc::default(),
            backend,
            env,
            status: TxnStatus::Idle,
            implicit: false,
            stmts_in_txn: 0,
            did_ddl: false,
            ddl_count: 0,
            default_isolation: IsolationLevel::ReadCommitted,
            prepared: FxHashMap::default(),
            portals: FxHashMap::default(),
            desc_memo: None,
            parse_cache: FxHashMap::default(),
            parse_clock: 0,
            plan_cache: Default::default(),
            uid: NEXT_SESSION_UID.fetch_add(1, Ordering::Relaxed),
            plan_locked: None,
            guc_undo: Vec::new(),
            multi_statement: false,
            hot_settings: std::cell::Cell::new(HotSettings { epoch: u64::MAX, ..Default::default() }),
            xact_reported: false,
            explained_query_id: None,
            timer_armed: false,
            stream_rows: None,
            open_query: false,
            opened: None,
            xact_read_only: false,
            xact_deferrable: false,
        }
    }

    /// The idle timeouts of this session's settings (idle_session_timeout,
    /// idle_in_transaction_session_timeout), for the wire layer; None: off.
    pub fn idle_timeouts(&self) -> (Option<std::time::Duration>, Option<std::time::Duration>) {
        let h = self.cached_settings();
        (h.idle_session, h.idle_in_transaction)
    }

    /// statement_timeout in ms (0: off), re-read only when some setting changed.
    fn statement_timeout_ms(&mut self) -> u64 {
        self.cached_settings().statement_timeout_ms
    }

    /// The hot settings, parsed again if some setting changed since.
    fn cached_settings(&self) -> HotSettings {
        let epoch = self.env.settings_gen;
        let h = self.hot_settings.get();
        if h.epoch == epoch {
            return h;
        }
        let ms = |name: &str| self.env.get(name).ok().and_then(|v| crate::locking::parse_ms(&v));
        let on = |name: &str| self.env.get(name).is_ok_and(|v| v == "on");
        let timeout = |name: &str| ms(name).filter(|ms| *ms > 0).map(std::time::Duration::from_millis);
        let h = HotSettings {
            epoch,
            statement_timeout_ms: ms("statement_timeout").unwrap_or(0),
            track_activities: self.env.get("track_activities").map_or(true, |v| v == "on"),
            default_read_only: on("default_transaction_read_only"),
            default_deferrable: on("default_transaction_deferrable"),
            default_isolation: match self.env.get("default_transaction_isolation").as_deref() {
                Ok("serializable") => Some(IsolationLevel::Serializable),
                Ok("repeatable read") => Some(IsolationLevel::RepeatableRead),
                _ => None,
            },
            idle_session: timeout("idle_session_timeout"),
            idle_in_transaction: timeout("idle_in_transaction_session_timeout"),
            memory_limit: self.env.get(crate::memory::SETTING).ok().and_then(|v| crate::memory::parse_limit(&v).ok()).flatten(),
            compute_query_id: !self.env.get("compute_query_id").is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "off" | "false" | "no" | "0")),
            track_statements: !self.env.get("pg_stat_statements.track").is_ok_and(|v| v.eq_ignore_ascii_case("none")),
            track_utility: self.env.get("pg_stat_statements.track_utility").map_or(true, |v| v == "on"),
            query_id_hidden: self.env.get("compute_query_id").map_or(true, |v| v.eq_ignore_ascii_case("regress") || v.eq_ignore_ascii_case("auto")),
        };
        self.hot_settings.set(h);
        h
    }

    /// pg_stat_activity: a command (`sql`) starts.
    fn report_active(&mut self, sql: &str) {
        use ferrogres_engine::pgstat::activity::{now_micros, BackendState, Report};
        let track = self.cached_settings().track_activities;
        // An implicit transaction starts with the command; an open one goes on.
        let xact = (track && !self.xact_reported).then(|| Some(now_micros()));
        self.xact_reported |= track;
        let Some(slot) = self.backend.engine().activity.slot(self.backend.id()) else { return };
        if !track {
            slot.report(Report { state: Some(BackendState::Disabled), query: Some(""), xact_start: Some(None) });
            return;
        }
        slot.report(Report { state: Some(BackendState::Active), query: Some(sql), xact_start: xact });
        // Known once the statement is analyzed (`report_query_id`).
        slot.set_query_id(0);
    }

    /// pg_stat_activity.query_id (and the wait sampler's queryid): the
    /// statement about to run.
    fn report_query_id(&mut self, ident: Option<&crate::queryid::QueryIdent>) {
        self.explained_query_id = ident.and_then(|i| i.explained).filter(|_| !self.cached_settings().query_id_hidden);
        if let Some(slot) = self.backend.engine().activity.slot(self.backend.id()) {
            slot.set_query_id(ident.map_or(0, |i| i.id));
        }
    }

    /// The identity of a statement just analyzed (None: compute_query_id
    /// off). Computed once per plan: the caller keeps it with the plan.
    fn query_ident(&self, st: &ParsedStmt, version: &PlanVersion) -> Option<Arc<crate::queryid::QueryIdent>> {
        if !self.cached_settings().compute_query_id {
            return None;
        }
        use pg_query::NodeEnum as N;
        let inner = match &st.node {
            N::PrepareStmt(p) => p.query.as_ref().and_then(|q| q.node.as_ref()),
            n => Some(n),
        };
        let rels = || version.deps.rels.iter().map(|r| r.0);
        Some(Arc::new(match inner {
            Some(N::SelectStmt(_) | N::InsertStmt(_) | N::UpdateStmt(_) | N::DeleteStmt(_) | N::MergeStmt(_)) => crate::queryid::jumble(st.text(), rels()),
            Some(N::ExplainStmt(_)) => crate::queryid::QueryIdent {
                explained: crate::queryid::explained_text(st.text()).map(|t| crate::queryid::jumble(t, rels()).id),
                ..crate::queryid::utility(st.text())
            },
            _ => crate::queryid::utility(st.text()),
        }))
    }

    /// Where a statement's execution starts, for pg_stat_statements.
    fn stat_start(&self) -> StatStart {
        (std::time::Instant::now(), self.backend.txn.pgstat.buffer_usage(), ferrogres_engine::pgstat::usage::of(self.backend.id()))
    }

    /// Adds one execution of `ident` to pg_stat_statements (a top-level
    /// statement that completed).
    fn record_statement(&self, ident: &crate::queryid::QueryIdent, started: StatStart, rows: u64) {
        let h = self.cached_settings();
        if !h.track_statements || (ident.utility && !h.track_utility) {
            return;
        }
        let elapsed = started.0.elapsed();
        let (hit, read) = self.backend.txn.pgstat.buffer_usage();
        let usage = ferrogres_engine::pgstat::statements::ExecUsage {
            exec_ms: elapsed.as_secs_f64() * 1000.0,
            rows,
            shared_blks_hit: hit.saturating_sub(started.1 .0),
            shared_blks_read: read.saturating_sub(started.1 .1),
            usage: ferrogres_engine::pgstat::usage::of(self.backend.id()).since(&started.2),
        };
        let key = ferrogres_engine::pgstat::statements::StatementKey {
            userid: self.backend.current_user,
            dbid: self.backend.database(),
            queryid: ident.id,
            toplevel: true,
        };
        self.backend.engine().statements.record(key, || ident.text.clone(), &usage);
    }

    /// What the statistics functions asked of the session
    /// (`crate::statviews`): a forced flush, per-table resets.
    fn apply_pgstat_requests(&mut self) {
        let Some(l) = self.env.locks.as_mut() else { return };
        if std::mem::take(&mut l.pgstat_force_flush) {
            self.backend.txn.pgstat.force_next_flush();
        }
        let rels = std::mem::take(&mut l.pgstat_reset_rels);
        if !rels.is_empty() {
            if let Ok(snap) = self.backend.txn.statement_snapshot() {
                for r in rels {
                    let _ = crate::statviews::reset_rel(&self.backend, &snap, r);
                }
            }
        }
    }

    /// How long until this session's pending statistics may be flushed (None:
    /// nothing pending): the wire layer comes back after that much idleness
    /// and calls [`Session::pgstat_flush`] (PostgreSQL's idle stats timeout).
    pub fn pgstat_flush_due(&self) -> Option<std::time::Duration> {
        self.backend.txn.pgstat.flush_due_in()
    }

    /// Flushes the pending statistics if due.
    pub fn pgstat_flush(&mut self) {
        self.backend.pgstat_report(false);
    }

    /// pg_stat_activity: the command ended; the state says whether a
    /// transaction block is open. The statistics of ended transactions are
    /// flushed here when due.
    fn report_idle(&mut self) {
        use ferrogres_engine::pgstat::activity::{BackendState, Report};
        self.backend.pgstat_report(false);
        if !self.cached_settings().track_activities {
            return;
        }
        let state = match self.status {
            TxnStatus::Idle if self.backend.txn.in_transaction() => BackendState::IdleInTransaction,
            TxnStatus::Idle => BackendState::Idle,
            TxnStatus::InBlock => BackendState::IdleInTransaction,
            TxnStatus::Failed => BackendState::IdleInTransactionAborted,
        };
        let end_xact = state == BackendState::Idle && std::mem::take(&mut self.xact_reported);
        let Some(slot) = self.backend.engine().activity.slot(self.backend.id()) else { return };
        slot.report(Report { state: Some(state), query: None, xact_start: end_xact.then_some(None) });
    }

    /// SET [LOCAL] inside or outside a transaction, recording what the end of
    /// the transaction must undo.
    fn set_setting(&mut self, name: &str, value: Option<&str>, local: bool, out: &mut dyn Output) -> Result<()> {
        let in_block = self.status != TxnStatus::Idle || self.multi_statement;
        if local && !in_block {
            // As PostgreSQL: a warning, and the value lasts no longer than the
            // (single-statement) transaction, i.e. not at all.
            if self.env.shows(Severity::Warning) {
                out.notice(&SqlError::warning(b"25P01", "SET LOCAL can only be used in transaction blocks"))?;
            }
            // Still validated, as PostgreSQL does.
            let prior = self.env.get(name).ok();
            self.env.set(name, value)?;
            if let Some(p) = prior {
                self.env.set(name, Some(&p))?;
            }
            return Ok(());
        }
        let prior = self.env.get(name).ok();
        self.env.set(name, value)?;
        let canon = self.env.canonical_name(name);
        let now = self.env.get(name).ok();
        let i = match self.guc_undo.iter().position(|u| u.name == canon) {
            Some(i) => i,
            None => {
                let Some(prior) = prior else { return Ok(()) };
                self.guc_undo.push(GucUndo { name: canon, prior, session_value: None });
                self.guc_undo.len() - 1
            }
        };
        if !local {
            self.guc_undo[i].session_value = now;
        }
        self.sync_application_name(name);
        Ok(())
    }

    /// pg_stat_activity.application_name follows the setting.
    fn sync_application_name(&self, name: &str) {
        if name.eq_ignore_ascii_case("application_name") {
            if let (Some(slot), Ok(v)) = (self.backend.engine().activity.slot(self.backend.id()), self.env.get("application_name")) {
                slot.set_application_name(&v);
            }
        }
    }

    /// End of a transaction: undo its SET LOCALs, and on rollback its SETs.
    fn finish_settings(&mut self, commit: bool) {
        for u in std::mem::take(&mut self.guc_undo) {
            let target = if commit { u.session_value.unwrap_or(u.prior) } else { u.prior };
            if self.env.get(&u.name).ok().as_deref() != Some(target.as_str()) {
                let _ = self.env.set(&u.name, Some(&target));
                self.sync_application_name(&u.name);
            }
        }
    }

    /// Parses a simple-query string, or reuses the parse of the same text.
    fn parse_cached(&mut self, sql: &str) -> Result<std::sync::Arc<Vec<ParsedStmt>>> {
        self.parse_clock += 1;
        if let Some((stmts, stamp)) = self.parse_cache.get_mut(sql) {
            *stamp = self.parse_clock;
            return Ok(stmts.clone());
        }
        let stmts = std::sync::Arc::new(parser::parse(sql)?);
        if self.parse_cache.len() >= PARSE_CACHE_SIZE {
            // Evict the least recently used entry.
            if let Some(oldest) = self.parse_cache.iter().min_by_key(|(_, (_, s))| *s).map(|(k, _)| k.clone()) {
                self.parse_cache.remove(&oldest);
            }
        }
        self.parse_cache.insert(sql.to_string(), (stmts.clone(), self.parse_clock));
        Ok(stmts)
    }

    pub fn status(&self) -> TxnStatus {
        self.status
    }

    pub fn take_parameter_changes(&mut self) -> Vec<(String, String)> {
        std::mem::take(&mut self.env.changed)
    }

    /// Starts an analysis whose plan may be kept: reads the invalidation
    /// queue, then records what the analysis reads ([`Session::end_version`]).
    fn begin_version(&mut self) -> PlanVersion {
        self.sync_datetime();
        let deps = crate::catcache::begin_deps(&self.backend);
        PlanVersion { deps: Arc::new(deps), ddl: self.ddl_count, perms: Arc::default() }
    }

    fn end_version(&self, v: PlanVersion) -> PlanVersion {
        let deps = crate::catcache::take_deps(&self.backend, Arc::unwrap_or_clone(v.deps));
        PlanVersion { deps: Arc::new(deps), ddl: v.ddl, perms: self.analyzed_perms.clone() }
    }

    /// Whether nothing the plan read changed since it was analyzed.
    fn plan_valid(&self, v: &PlanVersion) -> bool {
        v.ddl == self.ddl_count && crate::catcache::deps_valid(&self.backend, &v.deps)
    }

    // ---- transactions --------------------------------------------------------

    fn ensure_txn(&mut self) -> Result<()> {
        if !self.backend.txn.in_transaction() {
            let iso = self.default_isolation();
            self.backend.txn.begin(iso)?;
            ferrogres_datum::datetime::set_xact_start();
            self.implicit = true;
            self.stmts_in_txn = 0;
            self.did_ddl = false;
            self.default_modes();
        }
        Ok(())
    }

    /// A new transaction's isolation level: default_transaction_isolation
    /// (SET, PGOPTIONS, postgresql.conf), READ UNCOMMITTED being READ
    /// COMMITTED as in PostgreSQL.
    fn default_isolation(&self) -> IsolationLevel {
        self.cached_settings().default_isolation.unwrap_or(self.default_isolation)
    }

    /// A new transaction's access mode and deferrability from the session's defaults.
    fn default_modes(&mut self) {
        let h = self.cached_settings();
        self.xact_read_only = h.default_read_only;
        self.xact_deferrable = h.default_deferrable;
        self.backend.txn.set_access_mode(self.xact_read_only, self.xact_deferrable);
    }

    /// BEGIN's / SET TRANSACTION's READ ONLY | READ WRITE | [NOT] DEFERRABLE, with
    /// PostgreSQL's checks (check_transaction_read_only, check_transaction_deferrable).
    fn apply_modes(&mut self, modes: crate::plan::TxnModes) -> Result<()> {
        let started = self.stmts_in_txn > 0 || self.backend.txn.top_xid().is_some();
        if let Some(ro) = modes.read_only {
            if self.xact_read_only && !ro && started {
                return Err(SqlError::new(b"25001", "transaction read-write mode must be set before any query"));
            }
            self.xact_read_only = ro;
        }
        if let Some(d) = modes.deferrable {
            if d != self.xact_deferrable && started {
                return Err(SqlError::new(b"25001", "SET TRANSACTION [NOT] DEFERRABLE must be called before any query"));
            }
            self.xact_deferrable = d;
        }
        self.backend.txn.set_access_mode(self.xact_read_only, self.xact_deferrable);
        Ok(())
    }

    fn end_txn(&mut self, commit: bool) -> Result<()> {
        self.plan_locked = None;
        if !self.guc_undo.is_empty() {
            self.finish_settings(commit);
        }
        let was_ddl = self.did_ddl;
        self.did_ddl = false;
        if was_ddl && !commit {
            // Plans analyzed against the rolled-back catalog are stale.
            self.ddl_count += 1;
        }
        self.implicit = false;
        self.status = TxnStatus::Idle;
        self.portals.clear();
        if !self.backend.txn.in_transaction() {
            // Transactions of their own (VACUUM, database commands) ended.
            crate::catcache::end_transaction(&self.backend, true);
            if let Some(l) = self.env.locks.as_mut() {
                l.notify.at_abort();
            }
            return Ok(());
        }
        if commit {
            if let Some(l) = self.env.locks.as_ref() {
                if let Err(e) = l.notify.pre_commit(&self.backend) {
                    let _ = self.backend.txn.abort();
                    crate::catcache::end_transaction(&self.backend, false);
                    if let Some(l) = self.env.locks.as_mut() {
                        l.notify.at_abort();
                    }
                    return Err(e);
                }
            }
            let was_ddl = match crate::namespace::temp_tables::pre_commit(&mut self.backend) {
                Ok(changed) => was_ddl || changed,
                Err(e) => {
                    let _ = self.backend.txn.abort();
                    return Err(e);
                }
            };
            let _ = was_ddl;
            // The commit sends the catalog invalidations this transaction
            // registered, before it releases its locks (`crate::catcache`).
            let r = self.backend.txn.commit().map_err(txn_error);
            crate::catcache::end_transaction(&self.backend, r.is_ok());
            if let Some(l) = self.env.locks.as_mut() {
                if r.is_ok() {
                    if l.notify.at_commit(&self.backend) {
                        self.ddl_count += 1;
                    }
                } else {
                    l.notify.at_abort();
                }
            }
            r?;
        } else {
            let r = self.backend.txn.abort().map_err(txn_error);
            crate::catcache::end_transaction(&self.backend, false);
            if let Some(l) = self.env.locks.as_mut() {
                l.notify.at_abort();
            }
            r?;
        }
        Ok(())
    }

    /// LISTEN/NOTIFY: the notifications waiting for this session, oldest
    /// first (the wire layer sends them when the session is idle, outside a
    /// transaction block).
    pub fn take_notifications(&mut self) -> Vec<ferrogres_engine::notify::Notification> {
        match self.env.locks.as_ref().and_then(|l| l.notify.flag.as_ref()) {
            Some(f) if f.is_set() => self.backend.engine().notify.take(self.backend.id().0),
            _ => Vec::new(),
        }
    }

    /// Whether this session listens (or has notifications still queued): the
    /// wire layer then watches for notifications while it waits for the client.
    pub fn notify_flag(&self) -> Option<std::sync::Arc<ferrogres_engine::notify::NotifySignal>> {
        self.env.locks.as_ref().and_then(|l| l.notify.flag.clone())
    }

    /// After an error: a block fails; an implicit transaction is rolled back.
    fn on_error(&mut self) {
        self.plan_locked = None;
        if self.status == TxnStatus::InBlock || self.status == TxnStatus::Failed {
            self.status = TxnStatus::Failed;
            crate::locking::abort_failed_block(&mut self.backend);
        } else {
            let _ = self.end_txn(false);
        }
    }

    fn check_not_failed(&self, plan: Option<&Statement>) -> Result<()> {
        if self.status == TxnStatus::Failed
            && !matches!(
                plan,
                Some(Statement::Transaction(TxnCmd::Commit | TxnCmd::Rollback | TxnCmd::RollbackTo(_)))
            )
        {
            return Err(SqlError::new(b"25P02", "current transaction is aborted, commands ignored until end of transaction block"));
        }
        Ok(())
    }

    /// Connection start: 42501 `permission denied to set parameter "x"`
    /// unless the session's role may SET each of `names`, the superuser-only
    /// settings its startup packet (PGOPTIONS `-c`, or the packet's own pairs)
    /// asks for. PostgreSQL 15 checks pg_parameter_acl for them in
    /// InitPostgres's transaction; this reads it in a transaction of its own.
    pub fn check_startup_settings(&mut self, names: &[&str]) -> Result<()> {
        self.ensure_txn()?;
        let r = (|| -> Result<()> {
            let snap = self.backend.txn.statement_snapshot()?;
            names.iter().try_for_each(|n| crate::param_acl::check_set(&self.backend, &snap, n))
        })();
        let end = self.finish_implicit();
        r.and(end)
    }

    /// End of a simple-query string or Sync: commit the implicit transaction.
    fn finish_implicit(&mut self) -> Result<()> {
        if self.implicit && self.status == TxnStatus::Idle {
            if let Err(e) = self.end_txn(true) {
                self.on_error();
                return Err(e);
            }
        }
        if self.status == TxnStatus::Idle && !self.guc_undo.is_empty() {
            // Settings changed by statements that ran without an engine transaction.
            self.finish_settings(true);
        }
        Ok(())
    }

    fn transaction_command(&mut self, cmd: &TxnCmd, out: &mut dyn Output) -> Result<String> {
        let warn = |out: &mut dyn Output, env: &SessionEnv, code: &[u8; 5], msg: &str| -> Result<()> {
            if env.shows(Severity::Warning) {
                out.notice(&SqlError::warning(code, msg))?;
            }
            Ok(())
        };
        Ok(match cmd {
            TxnCmd::Begin { isolation, modes, start } => {
                let tag = if *start { "START TRANSACTION" } else { "BEGIN" };
                if self.status != TxnStatus::Idle {
                    warn(out, &self.env, b"25001", "there is already a transaction in progress")?;
                    if let Some(i) = isolation {
                        self.set_isolation(*i)?;
                    }
                    self.apply_modes(*modes)?;
                    return Ok(tag.into());
                }
                if self.backend.txn.in_transaction() {
                    // BEGIN inside an implicit transaction turns it into a block.
                    if let Some(i) = isolation {
                        if *i != self.backend.txn.isolation() {
                            if self.stmts_in_txn > 0 || self.backend.txn.top_xid().is_some() {
                                return Err(SqlError::new(b"25001", "SET TRANSACTION ISOLATION LEVEL must be called before any query"));
                            }
                            self.backend.txn.abort()?;
                            self.backend.txn.begin(*i)?;
                            self.backend.txn.set_access_mode(self.xact_read_only, self.xact_deferrable);
                        }
                    }
                } else {
                    let iso = isolation.unwrap_or(self.default_isolation());
                    self.backend.txn.begin(iso)?;
                    ferrogres_datum::datetime::set_xact_start();
                    self.stmts_in_txn = 0;
                    self.did_ddl = false;
                    self.default_modes();
                }
                self.apply_modes(*modes)?;
                self.implicit = false;
                self.status = TxnStatus::InBlock;
                tag.into()
            }
            TxnCmd::Commit => match self.status {
                TxnStatus::Idle => {
                    warn(out, &self.env, b"25P01", "there is no transaction in progress")?;
                    "COMMIT".into()
                }
                TxnStatus::InBlock => {
                    self.end_txn(true)?;
                    "COMMIT".into()
                }
                TxnStatus::Failed => {
                    self.end_txn(false)?;
                    "ROLLBACK".into()
                }
            },
            TxnCmd::Rollback => {
                if self.status == TxnStatus::Idle {
                    warn(out, &self.env, b"25P01", "there is no transaction in progress")?;
                }
                self.end_txn(false)?;
                "ROLLBACK".into()
            }
            TxnCmd::Savepoint(name) => {
                if self.status == TxnStatus::Idle {
                    return Err(SqlError::new(b"25P01", "SAVEPOINT can only be used in transaction blocks"));
                }
                self.backend.txn.savepoint(name)?;
                let level = self.backend.txn.nesting_level();
                if let Some(l) = self.env.locks.as_mut() {
                    l.notify.at_savepoint(level);
                }
                "SAVEPOINT".into()
            }
            TxnCmd::Release(name) => {
                if self.status == TxnStatus::Idle {
                    return Err(SqlError::new(b"25P01", "RELEASE SAVEPOINT can only be used in transaction blocks"));
                }
                self.backend.txn.release(name)?;
                let level = self.backend.txn.nesting_level();
                if let Some(l) = self.env.locks.as_mut() {
                    l.notify.at_release(level);
                }
                "RELEASE".into()
            }
            TxnCmd::RollbackTo(name) => {
                if self.status == TxnStatus::Idle {
                    return Err(SqlError::new(b"25P01", "ROLLBACK TO SAVEPOINT can only be used in transaction blocks"));
                }
                if !self.backend.txn.in_transaction() {
                    // A failed block without savepoints was aborted at the error.
                    return Err(SqlError::new(b"3B001", format!("savepoint \"{name}\" does not exist")));
                }
                self.backend.txn.rollback_to(name)?;
                let level = self.backend.txn.nesting_level();
                if let Some(l) = self.env.locks.as_mut() {
                    l.notify.at_rollback_to(level);
                }
                crate::catcache::subtransaction_aborted(&self.backend);
                if self.did_ddl {
                    // DDL after the savepoint may be undone: plans made since are stale.
                    self.ddl_count += 1;
                }
                self.status = TxnStatus::InBlock;
                "ROLLBACK".into()
            }
            TxnCmd::SetIsolation(i) => {
                if self.status == TxnStatus::Idle {
                    warn(out, &self.env, b"25P01", "SET TRANSACTION can only be used in transaction blocks")?;
                } else {
                    self.set_isolation(*i)?;
                }
                "SET".into()
            }
            TxnCmd::SetModes(iso, modes) => {
                if self.status == TxnStatus::Idle {
                    warn(out, &self.env, b"25P01", "SET TRANSACTION can only be used in transaction blocks")?;
                } else {
                    if let Some(i) = iso {
                        self.set_isolation(*i)?;
                    }
                    self.apply_modes(*modes)?;
                }
                "SET".into()
            }
        })
    }

    /// DISCARD, RESET ALL, CLOSE ([`crate::utility`]); returns the tag.
    fn utility(&mut self, cmd: &crate::utility::SessionCmd, out: &mut dyn Output) -> Result<String> {
        use crate::utility::{DiscardKind, SessionCmd};
        match cmd {
            SessionCmd::Close(Some(name)) => {
                if self.portals.remove(name).is_none() {
                    return Err(SqlError::new(b"34000", format!("cursor \"{name}\" does not exist")));
                }
            }
            // CLOSE ALL closes every portal, as PostgreSQL's.
            SessionCmd::Close(None) => self.portals.clear(),
            SessionCmd::Listen(_) | SessionCmd::Unlisten(_) | SessionCmd::Notify { .. } => {
                // They take effect at commit: inside the current transaction.
                self.ensure_txn()?;
                let n = &mut self.env.locks.as_mut().ok_or_else(|| SqlError::internal("session without lock context"))?.notify;
                match cmd {
                    SessionCmd::Listen(c) => n.actions.push(crate::notify::ListenAction::Listen(c.clone())),
                    SessionCmd::Unlisten(Some(c)) => n.actions.push(crate::notify::ListenAction::Unlisten(c.clone())),
                    SessionCmd::Unlisten(None) => n.actions.push(crate::notify::ListenAction::UnlistenAll),
                    SessionCmd::Notify { channel, payload } => n.queue(channel, payload)?,
                    _ => {}
                }
            }
            SessionCmd::Declare(_) | SessionCmd::Fetch(_) => {
                return Err(SqlError::internal("DECLARE / FETCH reached the utility runner (run at Execute)"));
            }
            SessionCmd::ResetAll => self.reset_all(out)?,
            SessionCmd::BuiltinExtension(_) => {}
            SessionCmd::Discard(DiscardKind::Plans) => self.discard_plans(),
            SessionCmd::Discard(DiscardKind::Sequences) => self.discard_sequences(),
            SessionCmd::Discard(DiscardKind::Temp) => self.discard_temp()?,
            SessionCmd::Discard(DiscardKind::All) => {
                if self.status != TxnStatus::Idle || self.multi_statement {
                    return Err(SqlError::new(b"25001", "DISCARD ALL cannot run inside a transaction block"));
                }
                // PostgreSQL's order: CLOSE ALL, SET SESSION AUTHORIZATION
                // DEFAULT, RESET ALL, DEALLOCATE ALL, UNLISTEN *,
                // pg_advisory_unlock_all(), DISCARD PLANS, DISCARD TEMP,
                // DISCARD SEQUENCES.
                self.reset_all(out)?;
                self.prepared.clear();
                self.ensure_txn()?;
                if let Some(l) = self.env.locks.as_mut() {
                    l.notify.actions.push(crate::notify::ListenAction::UnlistenAll);
                }
                self.backend.engine().locks.advisory_unlock_all(self.backend.id())?;
                self.discard_plans();
                self.discard_temp()?;
                self.discard_sequences();
            }
        }
        Ok(cmd.tag().to_string())
    }

    /// RESET ALL: each setting a session may change goes back to its default,
    /// as a SET would (undone if the transaction rolls back).
    fn reset_all(&mut self, out: &mut dyn Output) -> Result<()> {
        let changed: Vec<String> = self
            .env
            .settings
            .iter()
            .filter(|s| s.value != s.default && !crate::utility::reset_all_skips(&s.name))
            .filter(|s| {
                ferrogres_engine::config::guc::find(&s.name.to_ascii_lowercase())
                    .is_none_or(|g| ferrogres_engine::config::guc::change_forbidden(g, false).is_none())
            })
            .map(|s| s.name.clone())
            .collect();
        for name in changed {
            self.set_setting(&name, None, false, out)?;
            if name.eq_ignore_ascii_case("search_path") {
                self.ddl_count += 1;
            }
        }
        Ok(())
    }

    /// DISCARD PLANS: cached simple-query plans go, prepared statements are
    /// analyzed again at their next use.
    fn discard_plans(&mut self) {
        self.plan_cache = Default::default();
        self.ddl_count += 1;
    }

    fn discard_sequences(&mut self) {
        if let Some(l) = self.env.locks.as_mut() {
            l.seqs.discard();
        }
    }

    /// DISCARD TEMP: the session's temporary relations are dropped in the
    /// current transaction (the schema comes back with the next temporary table).
    fn discard_temp(&mut self) -> Result<()> {
        self.ensure_txn()?;
        let snap = self.backend.txn.statement_snapshot()?;
        let name = format!("pg_temp_{}", self.backend.id().0);
        let ns = crate::namespace::namespaces(&self.backend, &snap)?.into_iter().find(|(_, n)| *n == name).map(|x| x.0);
        if let Some(ns) = ns {
            crate::namespace::drop_namespace_contents(&mut self.backend, ns)?;
            crate::namespace::temp_tables::forget_session(self.backend.id().0);
            self.did_ddl = true;
            self.ddl_count += 1;
        }
        Ok(())
    }

    fn set_isolation(&mut self, i: IsolationLevel) -> Result<()> {
        if i == self.backend.txn.isolation() {
            return Ok(());
        }
        if self.stmts_in_txn > 0 || self.backend.txn.top_xid().is_some() {
            return Err(SqlError::new(b"25001", "SET TRANSACTION ISOLATION LEVEL must be called before any query"));
        }
        self.backend.txn.abort()?;
        self.backend.txn.begin(i)?;
        self.backend.txn.set_access_mode(self.xact_read_only, self.xact_deferrable);
        Ok(())
    }

    // ---- analysis --------------------------------------------------------------

    /// The snapshot an analysis reads the catalogs with: the statement's in
    /// READ COMMITTED (taken just now), else a catalog snapshot
    /// (`catcache::catalog_snapshot`), after the transaction's snapshot is
    /// fixed: a REPEATABLE READ transaction resolves names and files as
    /// they are now, as PostgreSQL's catalog snapshot does, and reads its
    /// tables' rows with its own snapshot.
    fn analysis_snapshot(&mut self) -> Result<ferrogres_engine::txn::snapshot::Snapshot> {
        crate::catcache::ddl_snapshot(&mut self.backend)
    }

    fn analyze(&mut self, st: &ParsedStmt, param_types: &mut Vec<Option<Type>>, params_allowed: bool) -> Result<Statement> {
        // What the statement needs (crate::acl), recorded by the analysis.
        let outer = crate::catcache::begin_perms(&self.backend);
        let r = self.analyze_inner(st, param_types, params_allowed);
        let mut perms = crate::catcache::take_perms(&self.backend, outer);
        // EXPLAIN EXECUTE runs (with ANALYZE) the prepared statement's plan,
        // which was not analyzed here: its requirements come with it.
        // So does CREATE TABLE AS EXECUTE.
        let executed = match (&r, &st.node) {
            (Ok(_), pg_query::NodeEnum::ExplainStmt(x)) => x.query.as_ref(),
            (Ok(_), pg_query::NodeEnum::CreateTableAsStmt(c)) => c.query.as_ref(),
            _ => None,
        };
        if let Some(pg_query::NodeEnum::ExecuteStmt(e)) = executed.and_then(|n| n.node.as_ref()) {
            if let Some(p) = self.prepared.get(&e.name) {
                perms.extend(p.version.perms.iter().cloned());
            }
        }
        self.analyzed_perms = Arc::new(perms);
        r
    }

    fn analyze_inner(&mut self, st: &ParsedStmt, param_types: &mut Vec<Option<Type>>, params_allowed: bool) -> Result<Statement> {
        self.sync_datetime();
        if let pg_query::NodeEnum::TransactionStmt(_) | pg_query::NodeEnum::VariableSetStmt(_) | pg_query::NodeEnum::VariableShowStmt(_) = &st.node {
            let snap = ferrogres_engine::txn::snapshot::Snapshot {
                xmin: 0,
                xmax: 0,
                xip: std::sync::Arc::from(Vec::new()),
                subxip: std::sync::Arc::from(Vec::new()),
                suboverflowed: false,
                curcid: 0,
                completion_count: 0,
            };
            let mut a = Analyzer { backend: &self.backend, snap: &snap, sql: &st.sql, params: std::mem::take(param_types), params_allowed, views: Default::default(), upper: Default::default(), planner: crate::optimizer::PlannerSettings::from_env(&self.env), fold_error: None };
            let r = a.statement(&st.node);
            *param_types = a.params;
            return r;
        }
        if let pg_query::NodeEnum::ExplainStmt(x) = &st.node {
            if let Some(pg_query::NodeEnum::ExecuteStmt(e)) = x.query.as_ref().and_then(|n| n.node.as_ref()) {
                return self.analyze_explain_execute(st, x, e);
            }
        }
        if let pg_query::NodeEnum::CreateTableAsStmt(c) = &st.node {
            if let Some(pg_query::NodeEnum::ExecuteStmt(e)) = c.query.as_ref().and_then(|n| n.node.as_ref()) {
                return self.analyze_create_as_execute(st, c, e);
            }
        }
        self.ensure_txn()?;
        crate::locking::apply_settings(&self.backend, &mut self.env)?;
        let snap = self.analysis_snapshot()?;
        let mut a = Analyzer { backend: &self.backend, snap: &snap, sql: &st.sql, params: std::mem::take(param_types), params_allowed, views: Default::default(), upper: Default::default(), planner: crate::optimizer::PlannerSettings::from_env(&self.env), fold_error: None };
        let r = a.statement(&st.node);
        *param_types = a.params;
        r
    }

    /// `EXPLAIN [(options)] EXECUTE name[(args)]`: the prepared statement's
    /// current plan under EXPLAIN, its arguments evaluated when it runs (as
    /// PostgreSQL explains the plan EXECUTE would use).
    fn analyze_explain_execute(&mut self, st: &ParsedStmt, x: &pg_query::protobuf::ExplainStmt, e: &pg_query::protobuf::ExecuteStmt) -> Result<Statement> {
        let args = self.execute_args(st, e)?;
        self.revalidate_prepared(&e.name)?;
        let plan = (*self.prepared[&e.name].plan).clone();
        let options = {
            let snap = self.analysis_snapshot()?;
            let a = Analyzer { backend: &self.backend, snap: &snap, sql: &st.sql, params: Vec::new(), params_allowed: false, views: Default::default(), upper: Default::default(), planner: crate::optimizer::PlannerSettings::from_env(&self.env), fold_error: None };
            crate::explain::options(&a, x)?
        };
        let mut stmt = crate::explain::explain_of(options, plan)?;
        if let Statement::Explain(ex) = &mut stmt {
            ex.args = args;
        }
        Ok(stmt)
    }

    /// `CREATE TABLE t AS EXECUTE name(args)` analyzed for the extended
    /// protocol (the simple protocol runs it at once:
    /// `sql_create_as_execute`): the prepared statement's current plan (a
    /// query: 42809 otherwise), its arguments evaluated when it runs.
    fn analyze_create_as_execute(
        &mut self,
        st: &ParsedStmt,
        c: &pg_query::protobuf::CreateTableAsStmt,
        e: &pg_query::protobuf::ExecuteStmt,
    ) -> Result<Statement> {
        if c.objtype == pg_query::protobuf::ObjectType::ObjectMatview as i32 {
            return Err(SqlError::not_supported("CREATE MATERIALIZED VIEW"));
        }
        let args = self.execute_args(st, e)?;
        self.revalidate_prepared(&e.name)?;
        let plan = self.prepared[&e.name].plan.clone();
        let Statement::Query(q) = &*plan else {
            return Err(SqlError::new(b"42809", "prepared statement is not a SELECT"));
        };
        let into = c.into.as_deref().ok_or_else(|| SqlError::internal("CREATE TABLE AS without a target"))?;
        let snap = self.analysis_snapshot()?;
        let mut a = Analyzer { backend: &self.backend, snap: &snap, sql: &st.sql, params: Vec::new(), params_allowed: false, views: Default::default(), upper: Default::default(), planner: crate::optimizer::PlannerSettings::from_env(&self.env), fold_error: None };
        let mut stmt = a.create_as_target(into, q.clone(), c.if_not_exists, crate::plan::CtasForm::Execute)?;
        if let Statement::CreateTableAs(ct) = &mut stmt {
            ct.args = args;
        }
        Ok(stmt)
    }

    // ---- execution -------------------------------------------------------------

    /// Runs a statement's effect; returns its rows (if it returns rows) and tag.
    /// Points the thread's date/time context at this session's TimeZone.
    ///
    /// The settings are pushed only when this thread last pushed another
    /// session's, or when this session changed a setting since (its
    /// settings generation): this runs for every Bind and statement.
    fn sync_datetime(&self) {
        crate::database::sync(&self.backend);
        // Statement start: read the invalidation queue before the statement
        // takes its snapshot (`crate::catcache`).
        crate::catcache::accept(&self.backend);
        let key = (self.uid, self.env.settings_gen);
        if SYNCED_SETTINGS.with(|c| c.replace(key)) == key {
            return;
        }
        if let Ok(tz) = self.env.get("TimeZone") {
            ferrogres_datum::datetime::sync_timezone(&tz);
        }
        if let (Ok(ds), Ok(is)) = (self.env.get("DateStyle"), self.env.get("IntervalStyle")) {
            ferrogres_datum::datestyle::sync(&ds, &is, &self.env.get("bytea_output").unwrap_or_default());
        }
        crate::namespace::sync(self.backend.id().0 as i32, &self.env.get("search_path").unwrap_or_else(|_| "\"$user\", public".into()));
        push_stack_limit(&self.env);
    }

    fn run(&mut self, plan: &Statement, perms: &[crate::acl::PermReq], params: &[Value], out: &mut dyn Output) -> Result<(Option<Vec<Vec<Value>>>, String)> {
        // The statement's memory is bounded from here (crate::memory); the
        // executor's interrupt checks enforce it.
        let limit = self.cached_settings().memory_limit;
        crate::memory::start_statement(limit);
        // statement_timeout, armed by the outermost statement only (the value
        // in force when it starts, as PostgreSQL's start_xact_command).
        let timeout = if self.timer_armed { 0 } else { self.statement_timeout_ms() };
        if timeout > 0 {
            self.arm_statement_timer(Some(std::time::Duration::from_millis(timeout)));
        }
        let mut r = self.run_statement(plan, perms, params, out);
        if let Err(e) = &mut r {
            self.resolve_error_schema(e);
        }
        if r.is_ok() && !matches!(plan, Statement::Transaction(_)) {
            // (Not after COMMIT: it is done, an error would misreport it.)
            // A cancel or timeout that came in while the statement ran (one it
            // sent itself, pg_cancel_backend(pg_backend_pid()), included)
            // fails it, as PostgreSQL's last CHECK_FOR_INTERRUPTS does.
            if let Err(e) = (self.env.interrupts)() {
                r = Err(e);
            }
        }
        if timeout > 0 {
            self.arm_statement_timer(None);
        }
        crate::memory::end_statement();
        r
    }

    /// An error about a table names its schema ([`ferrogres_datum::errors::ErrorObjects`]):
    /// read now, while the failed statement's transaction is still open.
    fn resolve_error_schema(&mut self, e: &mut SqlError) {
        let Some(o) = e.objects.as_mut() else { return };
        let Some(ns) = o.namespace.filter(|_| o.schema.is_none()) else { return };
        if !self.backend.txn.in_transaction() {
            return;
        }
        if let Ok(snap) = self.backend.txn.statement_snapshot() {
            o.schema = crate::namespace::namespace_name(&self.backend, &snap, ns).ok().flatten();
        }
    }

    /// Arms or disarms the statement timer: the interrupt check's (which fails
    /// the statement with 57014) and the lock manager's (which ends a lock wait).
    fn arm_statement_timer(&mut self, timeout: Option<std::time::Duration>) {
        self.timer_armed = timeout.is_some();
        (self.env.statement_timer)(timeout);
        let deadline = timeout.map(|t| std::time::Instant::now() + t);
        let _ = self.backend.engine().locks.set_statement_deadline(self.backend.id(), deadline);
    }

    fn run_statement(&mut self, plan: &Statement, perms: &[crate::acl::PermReq], params: &[Value], out: &mut dyn Output) -> Result<(Option<Vec<Vec<Value>>>, String)> {
        let locked_at_bind = self.plan_locked.take();
        (self.env.interrupts)()?;
        self.sync_datetime();
        ferrogres_datum::datetime::set_stmt_start();
        if let Statement::Transaction(cmd) = plan {
            return Ok((None, self.transaction_command(cmd, out)?));
        }
        match plan {
            Statement::Set { name, value, local } => {
                if name == "transaction_isolation" {
                    let iso = match value.as_deref().map(str::to_ascii_lowercase).as_deref() {
                        Some("read committed") | Some("read uncommitted") | None => IsolationLevel::ReadCommitted,
                        Some("repeatable read") => IsolationLevel::RepeatableRead,
                        Some("serializable") => IsolationLevel::Serializable,
                        Some(other) => {
                            return Err(SqlError::new(b"22023", format!("invalid value for parameter \"transaction_isolation\": \"{other}\"")))
                        }
                    };
                    return Ok((None, self.transaction_command(&TxnCmd::SetIsolation(iso), out)?));
                }
                if name == "transaction_read_only" || name == "transaction_deferrable" {
                    let on = match value.as_deref().map(str::to_ascii_lowercase).as_deref() {
                        None => false,
                        Some(v) => ferrogres_datum::types::parse_bool(v).ok_or_else(|| {
                            SqlError::new(b"22023", format!("parameter \"{name}\" requires a Boolean value"))
                        })?,
                    };
                    let modes = if name == "transaction_read_only" {
                        crate::plan::TxnModes { read_only: Some(on), deferrable: None }
                    } else {
                        crate::plan::TxnModes { read_only: None, deferrable: Some(on) }
                    };
                    return Ok((None, self.transaction_command(&TxnCmd::SetModes(None, modes), out)?));
                }
                if name == "role" || name == "session_authorization" {
                    // The identity lives in the backend (crate::roles); the
                    // setting keeps its name for SHOW and moves the settings
                    // epoch, so plans that folded current_user are remade.
                    self.ensure_txn()?;
                    let snap = self.backend.txn.statement_snapshot()?;
                    let shown = if name == "role" {
                        crate::roles::set_role(&mut self.backend, &snap, value.as_deref())?
                    } else {
                        let auth = self.authenticated_user;
                        let v = crate::roles::set_session_authorization(&mut self.backend, &snap, auth, value.as_deref())?;
                        self.set_setting("role", None, *local, out)?;
                        v
                    };
                    self.set_setting(name, Some(&shown), *local, out)?;
                    self.ddl_count += 1;
                    return Ok((None, "SET".into()));
                }
                if crate::param_acl::set_needs_check(name) {
                    // A superuser setting: the catalog is read only for these.
                    self.ensure_txn()?;
                    let snap = self.backend.txn.statement_snapshot()?;
                    crate::param_acl::check_set(&self.backend, &snap, name)?;
                }
                self.set_setting(name, value.as_deref(), *local, out)?;
                if name == "search_path" {
                    // Prepared statements resolved names with the old path: re-analyze them.
                    self.ddl_count += 1;
                }
                return Ok((None, "SET".into()));
            }
            Statement::Show(name) => {
                let v = match name.as_str() {
                    "transaction_isolation" | "transaction isolation level" => {
                        let iso = if self.backend.txn.in_transaction() { self.backend.txn.isolation() } else { self.default_isolation() };
                        match iso {
                            IsolationLevel::ReadCommitted => "read committed".to_string(),
                            IsolationLevel::RepeatableRead => "repeatable read".to_string(),
                            _ => "serializable".to_string(),
                        }
                    }
                    "transaction_read_only" | "transaction_deferrable" => {
                        let in_txn = self.backend.txn.in_transaction();
                        let on = match (name.as_str(), in_txn) {
                            ("transaction_read_only", true) => self.xact_read_only,
                            ("transaction_deferrable", true) => self.xact_deferrable,
                            ("transaction_read_only", false) => self.env.get("default_transaction_read_only").is_ok_and(|v| v == "on"),
                            _ => self.env.get("default_transaction_deferrable").is_ok_and(|v| v == "on"),
                        };
                        if on { "on" } else { "off" }.to_string()
                    }
                    "all" => return Err(SqlError::not_supported("SHOW ALL")),
                    n => self.env.get(n)?,
                };
                return Ok((Some(vec![vec![Value::Text(v)]]), "SHOW".into()));
            }
            Statement::Empty => return Ok((None, String::new())),
            Statement::AlterSystem(cmd) => {
                if self.status != TxnStatus::Idle || self.multi_statement {
                    return Err(SqlError::new(b"25001", "ALTER SYSTEM cannot run inside a transaction block"));
                }
                self.ensure_txn()?;
                let snap = self.backend.txn.statement_snapshot()?;
                let name = match cmd {
                    crate::alter_system::AlterSystem::One { name, .. } => Some(name.as_str()),
                    crate::alter_system::AlterSystem::ResetAll => None,
                };
                crate::param_acl::check_alter_system(&self.backend, &snap, name)?;
                let datadir = std::path::PathBuf::from(self.env.get("data_directory")?);
                crate::alter_system::execute(self.backend.engine(), &datadir, cmd)?;
                return Ok((None, "ALTER SYSTEM".into()));
            }
            Statement::Utility(cmd) => return Ok((None, self.utility(cmd, out)?)),
            Statement::Checkpoint => {
                // Allowed inside a transaction block, as in PostgreSQL; it takes
                // no snapshot and no relation lock.
                self.backend.engine().checkpoint().map_err(txn_error)?;
                return Ok((None, "CHECKPOINT".into()));
            }
            Statement::Index(cmd @ crate::index::IndexCmd::Vacuum { vacuum: true, .. }) => {
                if self.status != TxnStatus::Idle {
                    return Err(SqlError::new(b"25001", "VACUUM cannot run inside a transaction block"));
                }
                // VACUUM runs outside any transaction: end the implicit one (its
                // snapshot would hold the horizon back).
                if self.backend.txn.in_transaction() {
                    self.did_ddl = false;
                    let r = self.backend.txn.commit().map_err(txn_error);
                    crate::catcache::end_transaction(&self.backend, r.is_ok());
                    r?;
                }
                return Ok((None, crate::index::vacuum(&mut self.backend, cmd)?));
            }
            Statement::Database(cmd) => {
                if self.status != TxnStatus::Idle {
                    return Err(crate::database::in_block_error(cmd));
                }
                // Database commands run in transactions of their own.
                if self.backend.txn.in_transaction() {
                    self.did_ddl = false;
                    let r = self.backend.txn.commit().map_err(txn_error);
                    crate::catcache::end_transaction(&self.backend, r.is_ok());
                    r?;
                }
                return Ok((None, crate::database::execute(&mut self.backend, cmd, out)?));
            }
            _ => {}
        }
        self.ensure_txn()?;
        if self.xact_read_only {
            if let Some((cmd, ns)) = crate::utility::read_only_violation(plan) {
                let temp = match ns {
                    Some(ns) => {
                        let snap = self.backend.txn.statement_snapshot()?;
                        crate::namespace::is_temp_namespace(&self.backend, &snap, ns)?
                    }
                    None => false,
                };
                if !temp {
                    return Err(crate::utility::read_only_error(cmd));
                }
            }
        }
        self.stmts_in_txn += 1;
        crate::locking::apply_settings(&self.backend, &mut self.env)?;
        if locked_at_bind != Some((plan as *const Statement as usize, self.backend.txn.nesting_level())) {
            crate::locking::lock_plan(&self.backend, plan)?;
        }
        // DDL reads and writes the catalogs (and validates or copies rows)
        // at their latest state, as PostgreSQL's catalog snapshot and its
        // rewrites' latest snapshot do, not as a REPEATABLE READ
        // transaction's snapshot saw them: another session's TRUNCATE or
        // rewrite may have replaced the table's files since.
        let snap = if is_catalog_command(plan) { crate::catcache::ddl_snapshot(&mut self.backend)? } else { self.backend.txn.statement_snapshot()? };
        // Executor start: the privileges the plan recorded, checked every run.
        crate::acl::check_perms(&self.backend, &snap, perms)?;
        crate::grant::check_ddl(&self.backend, &snap, plan)?;
        let result = self.run_in_txn(plan, params, snap, out);
        self.apply_pgstat_requests();
        crate::locking::flush_notices(&mut self.env, out)?;
        // The next statement sees this one's changes.
        self.backend.txn.command_counter_increment()?;
        result
    }

    fn run_in_txn(
        &mut self,
        plan: &Statement,
        params: &[Value],
        snap: ferrogres_engine::txn::snapshot::Snapshot,
        out: &mut dyn Output,
    ) -> Result<(Option<Vec<Vec<Value>>>, String)> {
        // Uncorrelated subqueries of a data-modifying statement run once (InitPlans).
        if let Some(bound) = crate::subquery::statement_init_plans(plan) {
            let pairs = crate::explain::statement_key_pairs(plan, &bound);
            return crate::explain::with_key_aliases(&pairs, || self.run_in_txn(&bound, params, snap, out));
        }
        let returning = |rows: Vec<Vec<Value>>, r: &[Target]| if r.is_empty() { None } else { Some(rows) };
        match plan {
            Statement::Query(q) => {
                let stream = self.stream_rows.take();
                if std::mem::take(&mut self.open_query) {
                    let mut ctx = Ctx { backend: &mut self.backend, snap: snap.clone(), params, env: &mut self.env };
                    let it = exec::run_query(q, &mut ctx)?;
                    self.opened = Some(OpenQuery { it, snap });
                    return Ok((None, "SELECT 0".into()));
                }
                let mut ctx = Ctx { backend: &mut self.backend, snap, params, env: &mut self.env };
                let mut it = exec::run_query(q, &mut ctx)?;
                if let Some(cols) = stream {
                    out.row_description(&cols)?;
                    let mut n: u64 = 0;
                    while let Some(r) = it.next(&mut ctx)? {
                        out.row(&r)?;
                        n += 1;
                    }
                    return Ok((None, format!("SELECT {n}")));
                }
                let mut rows = Vec::new();
                while let Some(r) = it.next(&mut ctx)? {
                    rows.push(r);
                }
                let n = rows.len();
                Ok((Some(rows), format!("SELECT {n}")))
            }
            Statement::Insert { table, rows, returning: r } => {
                let mut ctx = Ctx { backend: &mut self.backend, snap, params, env: &mut self.env };
                let (n, rows) = exec::insert(table, rows, r, &mut ctx)?;
                Ok((returning(rows, r), format!("INSERT 0 {n}")))
            }
            Statement::Delete { table, filter, returning: r, paths } => {
                let mut ctx = Ctx { backend: &mut self.backend, snap, params, env: &mut self.env };
                let (n, rows) = exec::delete(table, filter, r, paths, &mut ctx)?;
                Ok((returning(rows, r), format!("DELETE {n}")))
            }
            Statement::Update { table, sets, filter, returning: r, paths } => {
                let mut ctx = Ctx { backend: &mut self.backend, snap, params, env: &mut self.env };
                let (n, rows) = exec::update(table, sets, filter, r, paths, &mut ctx)?;
                Ok((returning(rows, r), format!("UPDATE {n}")))
            }
            Statement::CreateTable { namespace, name, columns, if_not_exists } => {
                if crate::index::find_relation(&self.backend, &snap, *namespace, name)?.is_some()
                {
                    if *if_not_exists {
                        if self.env.shows(Severity::Notice) {
                            out.notice(&SqlError::notice(b"42P07", format!("relation \"{name}\" already exists, skipping")))?;
                        }
                        return Ok((None, "CREATE TABLE".into()));
                    }
                    return Err(SqlError::new(b"42P07", format!("relation \"{name}\" already exists")));
                }
                self.did_ddl = true;
                self.ddl_count += 1;
                catalog::create_table(&mut self.backend, *namespace, name, columns.clone())?;
                Ok((None, "CREATE TABLE".into()))
            }
            Statement::CreateTableAs(c) => {
                if crate::index::find_relation(&self.backend, &snap, c.namespace, &c.name)?.is_some() {
                    if c.if_not_exists {
                        if self.env.shows(Severity::Notice) {
                            out.notice(&SqlError::notice(b"42P07", format!("relation \"{}\" already exists, skipping", c.name)))?;
                        }
                        return Ok((None, "CREATE TABLE AS".into()));
                    }
                    return Err(SqlError::new(b"42P07", format!("relation \"{}\" already exists", c.name)));
                }
                self.did_ddl = true;
                self.ddl_count += 1;
                let args: Vec<Value>;
                let params = if c.args.is_empty() {
                    params
                } else {
                    args = c.args.iter().map(|x| exec::eval_pure(x, &[], params, &[], &mut self.env)).collect::<Result<_>>()?;
                    &args
                };
                let mut ctx = Ctx { backend: &mut self.backend, snap, params, env: &mut self.env };
                let Some(fill) = crate::create_as::create(c, &mut ctx)? else {
                    // PostgreSQL's tag for AS EXECUTE ... WITH NO DATA is SELECT 0.
                    let tag = if c.form == crate::plan::CtasForm::Execute { "SELECT 0" } else { "CREATE TABLE AS" };
                    return Ok((None, tag.into()));
                };
                let Statement::Query(q) = &*c.query else {
                    return Err(SqlError::internal("CREATE TABLE AS of a statement other than a query"));
                };
                // EXPLAIN ANALYZE counts the copy's rows as the plan's.
                let (n, _) = crate::explain::with_alias(q, &fill.query, || crate::insert_select::execute(&fill, &mut ctx))?;
                Ok((None, format!("SELECT {n}")))
            }
            Statement::DropTables { tables, missing_ok } => {
                let mut found = Vec::new();
                for (schema, name) in tables {
                    // PostgreSQL names a missing table without its schema.
                    let shown = name.clone();
                    let seen = crate::catcache::consumed(&self.backend);
                    let t = match catalog::lookup_table(&self.backend, &snap, schema.as_deref(), name) {
                        Ok(t) => t,
                        Err(e) if e.sqlstate() == "3F000" && *missing_ok => {
                            if self.env.shows(Severity::Notice) {
                                out.notice(&SqlError::notice(b"00000", e.message.clone() + ", skipping"))?;
                            }
                            continue;
                        }
                        Err(e) => return Err(e),
                    };
                    let t = match t {
                        Some(t) if t.namespace != catalog::PG_CATALOG_NAMESPACE => crate::locking::lock_resolved(
                            &self.backend,
                            &snap,
                            (schema.as_deref(), name),
                            t,
                            ferrogres_engine::lmgr::lock::LockMode::AccessExclusive,
                            false,
                            seen,
                        )?,
                        other => other,
                    };
                    if t.is_none() {
                        if let Some(e) = crate::view::not_a_table(&self.backend, &snap, schema.as_deref(), name)? {
                            return Err(e);
                        }
                    }
                    match t {
                        Some(t) if t.namespace == catalog::PG_CATALOG_NAMESPACE => {
                            return Err(SqlError::new(b"42501", format!("permission denied: \"{name}\" is a system catalog")))
                        }
                        Some(t) => {
                            crate::acl::check_rel_owner(&self.backend, &snap, t.oid)?;
                            found.push(t)
                        }
                        None if *missing_ok => {
                            if self.env.shows(Severity::Notice) {
                                out.notice(&SqlError::notice(b"00000", format!("table \"{shown}\" does not exist, skipping")))?;
                            }
                        }
                        None => return Err(SqlError::new(b"42P01", format!("table \"{shown}\" does not exist"))),
                    }
                }
                if !found.is_empty() {
                    self.did_ddl = true;
                    self.ddl_count += 1;
                }
                let dropping: Vec<u32> = found.iter().map(|t| t.oid).collect();
                let named: Vec<(u32, String)> = found.iter().map(|t| (t.oid, t.name.clone())).collect();
                crate::view::check_drop_tables(&mut self.backend, &snap, &named)?;
                for t in &found {
                    catalog::drop_table(&mut self.backend, &snap, t, &dropping)?;
                }
                Ok((None, "DROP TABLE".into()))
            }
            Statement::WithDml(w) => {
                // Each data-modifying CTE runs first, to completion, with the
                // same snapshot; its RETURNING rows become its working table.
                let mut ids = Vec::new();
                let result = (|| {
                    for (id, st) in &w.ctes {
                        let (rows, _) = self.run_in_txn(st, params, snap.clone(), out)?;
                        ids.push(*id);
                        crate::setop::set_work_table(*id, rows.unwrap_or_default());
                    }
                    self.run_in_txn(&w.main, params, snap, out)
                })();
                for id in ids {
                    crate::setop::remove_work_table(id);
                }
                result
            }
            Statement::InsertSelect(i) => {
                let mut ctx = Ctx { backend: &mut self.backend, snap, params, env: &mut self.env };
                let (n, rows) = crate::insert_select::execute(i, &mut ctx)?;
                Ok((returning(rows, &i.returning), format!("INSERT 0 {n}")))
            }
            Statement::Upsert(u) => {
                let mut ctx = Ctx { backend: &mut self.backend, snap, params, env: &mut self.env };
                let (n, rows) = crate::upsert::execute(u, &mut ctx)?;
                Ok((returning(rows, &u.returning), format!("INSERT 0 {n}")))
            }
            Statement::JoinedDml(d) => {
                let mut ctx = Ctx { backend: &mut self.backend, snap, params, env: &mut self.env };
                let (n, rows) = crate::dml_join::execute(d, &mut ctx)?;
                let verb = if matches!(d.action, crate::dml_join::JoinedAction::Delete) { "DELETE" } else { "UPDATE" };
                Ok((returning(rows, &d.returning), format!("{verb} {n}")))
            }
            Statement::Merge(m) => {
                let mut ctx = Ctx { backend: &mut self.backend, snap, params, env: &mut self.env };
                let n = crate::merge::execute(m, &mut ctx)?;
                Ok((None, format!("MERGE {n}")))
            }
            Statement::Copy(c) => {
                let mut ctx = Ctx { backend: &mut self.backend, snap, params, env: &mut self.env };
                Ok((None, crate::copy::execute(c, &mut ctx, out)?))
            }
            Statement::Index(cmd) => {
                if cmd.is_ddl() {
                    self.did_ddl = true;
                    self.ddl_count += 1;
                }
                let shows = self.env.shows(Severity::Notice);
                let mut notice = |n: SqlError| if shows { out.notice(&n) } else { Ok(()) };
                let tag = crate::index::execute(cmd, &mut self.backend, &snap, &self.env, &mut notice)?;
                Ok((None, tag))
            }
            Statement::Role(cmd) => {
                self.did_ddl = true;
                self.ddl_count += 1;
                let enc = self.env.get("password_encryption").unwrap_or_default();
                Ok((None, crate::roles::execute(&mut self.backend, &snap, cmd, &enc, out)?))
            }
            Statement::Grant(cmd) => {
                self.did_ddl = true;
                self.ddl_count += 1;
                let shows = self.env.shows(Severity::Warning);
                let mut notice = |n: SqlError| if shows { out.notice(&n) } else { Ok(()) };
                Ok((None, crate::grant::execute(&mut self.backend, &snap, cmd, &mut notice)?))
            }
            Statement::Owner(cmd) => {
                self.did_ddl = true;
                self.ddl_count += 1;
                let shows = self.env.shows(Severity::Notice);
                let mut notice = |n: SqlError| if shows { out.notice(&n) } else { Ok(()) };
                Ok((None, crate::grant::alter_owner(&mut self.backend, &snap, cmd, &mut notice)?))
            }
            Statement::Ddl(cmd) => {
                self.did_ddl = true;
                self.ddl_count += 1;
                let shows = self.env.shows(Severity::Notice);
                let mut notice = |n: SqlError| if shows { out.notice(&n) } else { Ok(()) };
                Ok((None, crate::constraints::execute(cmd, &mut self.backend, &snap, &mut self.env, &mut notice)?))
            }
            Statement::LockingQuery { query, strength, wait } => {
                let mut ctx = Ctx { backend: &mut self.backend, snap, params, env: &mut self.env };
                let rows = crate::locking::run_locking_query(query, *strength, *wait, &mut ctx)?;
                let n = rows.len();
                Ok((Some(rows), format!("SELECT {n}")))
            }
            Statement::Lock { targets, mode, nowait } => {
                if self.status == TxnStatus::Idle {
                    return Err(SqlError::new(b"25P01", "LOCK TABLE can only be used in transaction blocks"));
                }
                crate::locking::exec_lock(&self.backend, &snap, targets, *mode, *nowait)?;
                Ok((None, "LOCK TABLE".into()))
            }
            Statement::Explain(e) => {
                // ANALYZE runs the statement (its rows are discarded) with
                // the executor's counters switched on.
                // EXPLAIN EXECUTE: the prepared statement's arguments.
                let args: Vec<Value>;
                let params = if e.args.is_empty() {
                    params
                } else {
                    args = e.args.iter().map(|x| exec::eval_pure(x, &[], params, &[], &mut self.env)).collect::<Result<_>>()?;
                    &args[..]
                };
                let ran = if e.options.analyze {
                    let t0 = std::time::Instant::now();
                    crate::explain::start(e.options.timing);
                    let r = self.run_in_txn(&e.stmt, params, snap.clone(), out);
                    let counters = crate::explain::stop();
                    r?;
                    Some((counters, t0.elapsed()))
                } else {
                    None
                };
                let lines = crate::explain::execute(e, &self.backend, &snap, &self.env, ran, self.explained_query_id)?;
                Ok((Some(lines), "EXPLAIN".into()))
            }
            other => Err(SqlError::internal(format!("statement not executable here: {other:?}"))),
        }
    }

    /// Output columns of a plan.
    pub fn describe_plan(&self, plan: &Statement) -> Option<Vec<ColumnDesc>> {
        if let Statement::Utility(crate::utility::SessionCmd::Fetch(f)) = plan {
            // FETCH returns its cursor's columns (none once the cursor is gone).
            return if f.ismove { None } else { self.portals.get(&f.portalname).and_then(|p| self.describe_plan(&p.plan)) };
        }
        plan.targets_cow().map(|ts| {
            ts.iter()
                .map(|t| {
                    let name = match plan {
                        Statement::Show(n) => self.env.canonical_name(n),
                        _ => t.name.clone(),
                    };
                    ColumnDesc {
                        name,
                        ty: t.expr.ty(),
                        typmod: t.typmod,
                        table_oid: t.origin.map_or(0, |o| o.0),
                        column_id: t.origin.map_or(0, |o| o.1),
                    }
                })
                .collect()
        })
    }

    // ---- simple query ----------------------------------------------------------

    pub fn execute_simple(&mut self, sql: &str, out: &mut dyn Output) -> Result<()> {
        self.report_active(sql);
        let r = self.execute_simple_inner(sql, out);
        self.report_idle();
        r
    }

    fn execute_simple_inner(&mut self, sql: &str, out: &mut dyn Output) -> Result<()> {
        // A simple Query destroys the unnamed statement and the unnamed portal
        // (the protocol says so; named ones live on).
        self.prepared.remove("");
        self.portals.remove("");
        let stmts = match self.parse_cached(sql) {
            Ok(s) => s,
            Err(e) => {
                self.on_error();
                return Err(e);
            }
        };
        if stmts.is_empty() {
            return out.empty_query();
        }
        self.multi_statement = stmts.len() > 1;
        for (i, st) in stmts.iter().enumerate() {
            // Several statements in one string form an implicit transaction block.
            let vacuum_in_block = stmts.len() > 1 && matches!(&st.node, pg_query::NodeEnum::VacuumStmt(v) if v.is_vacuumcmd);
            let db_in_block = if stmts.len() > 1 { crate::database::node_in_block_error(&st.node) } else { None };
            let r = if vacuum_in_block {
                Err(SqlError::new(b"25001", "VACUUM cannot run inside a transaction block"))
            } else if let Some(e) = db_in_block {
                Err(e)
            } else {
                self.simple_one(st, i, out)
            };
            if let Err(e) = r {
                self.multi_statement = false;
                self.on_error();
                return Err(e);
            }
        }
        self.multi_statement = false;
        self.finish_implicit()
    }

    fn simple_one(&mut self, st: &ParsedStmt, index: usize, out: &mut dyn Output) -> Result<()> {
        if self.status == TxnStatus::Failed {
            // Only transaction control is even analyzed in a failed block.
            match &st.node {
                pg_query::NodeEnum::TransactionStmt(_) => {}
                _ => return self.check_not_failed(None),
            }
        }
        match &st.node {
            pg_query::NodeEnum::PrepareStmt(p) => return self.sql_prepare(st, p, out),
            pg_query::NodeEnum::ExecuteStmt(e) => return self.sql_execute(st, e, out),
            pg_query::NodeEnum::DeallocateStmt(d) => return self.sql_deallocate(d, out),
            pg_query::NodeEnum::DeclareCursorStmt(d) => return self.sql_declare(st, d, out),
            pg_query::NodeEnum::FetchStmt(f) => return self.sql_fetch(f, out),
            pg_query::NodeEnum::CreateTableAsStmt(c) => {
                if let Some(pg_query::NodeEnum::ExecuteStmt(e)) = c.query.as_ref().and_then(|q| q.node.as_ref()) {
                    return self.sql_create_as_execute(st, c, e, out);
                }
            }
            _ => {}
        }
        let (plan, ident, perms) = self.simple_plan(st, index)?;
        self.check_not_failed(Some(&*plan))?;
        self.report_query_id(ident.as_deref());
        let cols = self.describe_plan(&plan);
        // A query's rows go to the client as they are made.
        let streamed = matches!(*plan, Statement::Query(_)) && cols.is_some();
        if streamed {
            self.stream_rows = cols.clone();
        }
        let started = self.stat_start();
        let r = self.run(&plan, &perms, &[], out);
        let sent = streamed && self.stream_rows.take().is_none();
        let (rows, tag) = r?;
        if let Some(ident) = &ident {
            self.record_statement(ident, started, crate::stmtstat::tag_rows(&tag));
        }
        if let (Some(cols), false) = (cols, sent) {
            out.row_description(&cols)?;
            for r in rows.unwrap_or_default() {
                out.row(&r)?;
            }
        }
        out.command_complete(&tag)
    }

    /// The plan of a simple-query statement: the cached one if the catalog and
    /// settings are as they were when it was analyzed, checked again once its
    /// relation locks are held; else a fresh analysis, kept if it may be.
    fn simple_plan(&mut self, st: &ParsedStmt, index: usize) -> Result<(std::sync::Arc<Statement>, crate::plan_cache::Ident, Arc<Vec<crate::acl::PermReq>>)> {
        let key = (st.sql.clone(), index);
        if self.status != TxnStatus::Failed {
            self.sync_datetime();
            if let Some((plan, version, ident)) = self.plan_cache.get(&key, self.env.settings_gen) {
                if self.plan_valid(&version) {
                    self.ensure_txn()?;
                    crate::locking::apply_settings(&self.backend, &mut self.env)?;
                    // Taking the locks reads the invalidation queue again: a DDL
                    // we waited for is seen here.
                    crate::locking::lock_plan(&self.backend, &plan)?;
                    if self.plan_valid(&version) {
                        return Ok((plan, ident, version.perms));
                    }
                }
                self.plan_cache.remove(&key);
            }
        }
        let version = self.begin_version();
        let settings = self.env.settings_gen;
        crate::plan_cache::begin_analysis();
        let mut params = Vec::new();
        let plan = self.analyze(st, &mut params, false);
        let version = self.end_version(version);
        let volatile = crate::plan_cache::take_uncacheable();
        let plan = std::sync::Arc::new(plan?);
        if !params.is_empty() {
            return Err(SqlError::new(b"42P02", "there is no parameter $1"));
        }
        let ident = self.query_ident(st, &version);
        let perms = version.perms.clone();
        if !volatile && crate::plan_cache::cacheable(&plan) {
            self.plan_cache.insert(key, plan.clone(), ident.clone(), version, settings);
        }
        Ok((plan, ident, perms))
    }

    // ---- DECLARE / FETCH / MOVE ---------------------------------------------------
    // A cursor is a portal made by SQL (the same namespace as the protocol's
    // named portals, as in PostgreSQL): its executor stays open and FETCH pulls
    // from it ([`Session::pull`]).

    fn sql_declare(&mut self, st: &ParsedStmt, d: &pg_query::protobuf::DeclareCursorStmt, out: &mut dyn Output) -> Result<()> {
        let mut params = Vec::new();
        let cmd = self.analyze_declare(st, d, &mut params, false)?;
        if !params.is_empty() {
            return Err(SqlError::new(b"42P02", "there is no parameter $1"));
        }
        self.open_cursor(&cmd, Vec::new(), Some(st.sql.clone()), out)?;
        out.command_complete("DECLARE CURSOR")
    }

    /// DECLARE's query analyzed (`params`: the types of its `$n`, as Parse
    /// collects them).
    fn analyze_declare(
        &mut self,
        st: &ParsedStmt,
        d: &pg_query::protobuf::DeclareCursorStmt,
        params: &mut Vec<Option<Type>>,
        params_allowed: bool,
    ) -> Result<crate::utility::DeclareCmd> {
        let Some(query) = d.query.as_ref().and_then(|q| q.node.clone()) else {
            return Err(SqlError::syntax("DECLARE without a query"));
        };
        let inner = ParsedStmt { node: query, sql: st.sql.clone(), span: st.span };
        let plan = Arc::new(self.analyze(&inner, params, params_allowed)?);
        if !matches!(*plan, Statement::Query(_)) {
            return Err(SqlError::not_supported("DECLARE CURSOR for a statement other than SELECT or VALUES"));
        }
        Ok(crate::utility::DeclareCmd { name: d.portalname.clone(), options: d.options, query: plan, perms: self.analyzed_perms.clone() })
    }

    /// Opens cursor `d.name` on its query with `params`: its executor stays open
    /// in a portal of that name.
    fn open_cursor(&mut self, d: &crate::utility::DeclareCmd, params: Vec<Value>, sql: Option<Arc<str>>, out: &mut dyn Output) -> Result<()> {
        // parsenodes.h's CURSOR_OPT_* bits.
        const BINARY: i32 = 0x1;
        const SCROLL: i32 = 0x2;
        const HOLD: i32 = 0x20;
        if d.options & HOLD == 0 && self.status == TxnStatus::Idle && !self.multi_statement {
            return Err(SqlError::new(b"25P01", "DECLARE CURSOR can only be used in transaction blocks"));
        }
        if d.options & HOLD != 0 {
            return Err(SqlError::not_supported("DECLARE CURSOR WITH HOLD"));
        }
        if d.options & SCROLL != 0 {
            return Err(SqlError::not_supported("SCROLL cursors"));
        }
        if d.options & BINARY != 0 {
            return Err(SqlError::not_supported("BINARY cursors"));
        }
        if self.portals.contains_key(&d.name) {
            return Err(SqlError::new(b"42P03", format!("cursor \"{}\" already exists", d.name)));
        }
        self.open_query = true;
        let r = self.run(&d.query, &d.perms, &params, out);
        self.open_query = false;
        r?;
        let q = self.opened.take().ok_or_else(|| SqlError::internal("DECLARE opened no executor"))?;
        let portal = Portal { sql, plan: d.query.clone(), perms: d.perms.clone(), params, state: PortalState::Running(q), cursor: Some(CursorPos::default()), ident: None, stat_acc: Default::default() };
        self.portals.insert(d.name.clone(), portal);
        Ok(())
    }

    fn sql_fetch(&mut self, f: &pg_query::protobuf::FetchStmt, out: &mut dyn Output) -> Result<()> {
        let tag = self.fetch_named(f, out)?;
        out.command_complete(&tag)
    }

    /// FETCH / MOVE on cursor `f.portalname`; returns the command tag.
    fn fetch_named(&mut self, f: &pg_query::protobuf::FetchStmt, out: &mut dyn Output) -> Result<String> {
        Ok(self.fetch_named_capped(f, out, None)?.0)
    }

    /// [`Session::fetch_named`] sending at most `cap` rows (an Execute's row
    /// limit): also returns, when it stopped at `cap`, how many rows of the
    /// FETCH are left to send (`Some(None)`: all the cursor has).
    fn fetch_named_capped(&mut self, f: &pg_query::protobuf::FetchStmt, out: &mut dyn Output, cap: Option<u64>) -> Result<(String, Option<Option<u64>>)> {
        let name = &f.portalname;
        let Some(mut p) = self.portals.remove(name) else {
            return Err(SqlError::new(b"34000", format!("cursor \"{name}\" does not exist")));
        };
        let r = self.fetch_portal(&mut p, f, out, cap);
        // A cursor whose FETCH failed goes with its (failed) transaction.
        if r.is_ok() {
            self.portals.insert(name.clone(), p);
        }
        let (n, left) = r?;
        Ok((format!("{} {n}", if f.ismove { "MOVE" } else { "FETCH" }), left))
    }

    /// Runs one FETCH or MOVE on a forward-only cursor; returns the row count
    /// of its tag and, when `cap` (at most that many rows sent) stopped it,
    /// the count of rows it had left to read (`Some(None)`: all).
    fn fetch_portal(&mut self, p: &mut Portal, f: &pg_query::protobuf::FetchStmt, out: &mut dyn Output, cap: Option<u64>) -> Result<(u64, Option<Option<u64>>)> {
        use pg_query::protobuf::FetchDirection as D;
        let backward = || {
            SqlError::new(b"55000", "cursor can only scan forward").with_hint("Declare it with SCROLL option to enable backward scan.")
        };
        let cols = if f.ismove { None } else { self.describe_plan(&p.plan) };
        let Some(cur) = p.cursor.as_mut() else {
            // A protocol-level portal: FETCH reads it as a forward cursor.
            p.cursor = Some(CursorPos::default());
            return self.fetch_portal(p, f, out, cap);
        };
        let (pos, at_end) = (cur.pos, cur.at_end);
        // (rows to skip, rows to return), forward from the current position.
        let n = f.how_many;
        let (skip, take): (u64, Option<u64>) = match D::try_from(f.direction).unwrap_or(D::FetchForward) {
            D::FetchForward | D::Undefined => {
                if n == 0 {
                    // FETCH FORWARD 0 re-reads the current row: backward, unless
                    // the cursor stands on none.
                    if pos > 0 && !at_end {
                        return Err(backward());
                    }
                    (0, Some(0))
                } else if n < 0 {
                    // FORWARD -n is BACKWARD n.
                    return Err(backward());
                } else if n == i64::MAX {
                    (0, None)
                } else {
                    (0, Some(n as u64))
                }
            }
            D::FetchBackward => return Err(backward()),
            D::FetchAbsolute => {
                if n > 0 && (n as u64) > pos && !at_end {
                    (n as u64 - pos - 1, Some(1))
                } else if n == 0 && pos == 0 {
                    (0, Some(0))
                } else {
                    return Err(backward());
                }
            }
            D::FetchRelative => {
                if n > 0 {
                    (n as u64 - 1, Some(1))
                } else if n == 0 && (pos == 0 || at_end) {
                    (0, Some(0))
                } else {
                    return Err(backward());
                }
            }
        };
        if let Some(cols) = &cols {
            out.row_description(cols)?;
        }
        let PortalState::Running(q) = &mut p.state else {
            // Ran out of rows before: nothing more to read.
            if let Some(cur) = p.cursor.as_mut() {
                cur.at_end = true;
            }
            return Ok((0, None));
        };
        let mut done = false;
        let mut skipped = 0;
        if skip > 0 {
            let (k, d) = self.pull(q, &p.params, Some(skip), &mut |_| Ok(()))?;
            skipped = k;
            done = d;
        }
        let mut got = 0;
        // The rows this call reads: the FETCH's, at most `cap` of them.
        let limit = match (take, cap) {
            (Some(t), Some(c)) => Some(t.min(c)),
            (t, None) => t,
            (None, c) => c,
        };
        let mut left = None;
        if !done && take != Some(0) {
            let mut send = |row: Vec<Value>| if f.ismove { Ok(()) } else { out.row(&row) };
            let (k, d) = self.pull(q, &p.params, limit, &mut send)?;
            got = k;
            done = d;
            // Stopped by the cap, not by the FETCH's own count: as
            // PostgreSQL's portal, exactly `cap` rows sent is a suspension.
            if cap.is_some() && limit == cap && !done && Some(got) == cap {
                left = Some(take.map(|t| t - got));
            }
        }
        if done {
            p.state = PortalState::Exhausted;
        }
        let cur = p.cursor.as_mut().ok_or_else(|| SqlError::internal("cursor without position"))?;
        cur.pos += skipped + got;
        cur.at_end = done;
        // FETCH and MOVE FORWARD n count the rows read (MOVE passes them);
        // ABSOLUTE and RELATIVE the row they landed on.
        Ok((got, left))
    }

    // ---- PREPARE / EXECUTE / DEALLOCATE -----------------------------------------
    // SQL-level prepared statements share the protocol's namespace (`prepared`),
    // as in PostgreSQL; PREPARE is not transactional.

    fn sql_prepare(&mut self, st: &ParsedStmt, p: &pg_query::protobuf::PrepareStmt, out: &mut dyn Output) -> Result<()> {
        if self.prepared.contains_key(&p.name) {
            return Err(SqlError::new(b"42P05", format!("prepared statement \"{}\" already exists", p.name)));
        }
        let Some(query) = p.query.as_ref().and_then(|q| q.node.clone()) else {
            return Err(SqlError::syntax("PREPARE without a statement"));
        };
        // The statement keeps the whole string, so positions stay right.
        let inner = ParsedStmt { node: query, sql: st.sql.clone(), span: st.span };
        let version = self.begin_version();
        let mut types: Vec<Option<Type>> = Vec::new();
        if !p.argtypes.is_empty() {
            self.ensure_txn()?;
            let snap = self.analysis_snapshot()?;
            let a = Analyzer { backend: &self.backend, snap: &snap, sql: &st.sql, params: Vec::new(), params_allowed: true, views: Default::default(), upper: Default::default(), planner: crate::optimizer::PlannerSettings::from_env(&self.env), fold_error: None };
            for n in &p.argtypes {
                let Some(pg_query::NodeEnum::TypeName(tn)) = n.node.as_ref() else {
                    return Err(SqlError::not_supported("this PREPARE parameter type"));
                };
                types.push(Some(a.type_name(Some(tn))?.0));
            }
        }
        let plan = self.analyze(&inner, &mut types, true)?;
        let version = self.end_version(version);
        let param_types = types.into_iter().map(|t| t.filter(|t| *t != Type::Unknown).unwrap_or(Type::Text)).collect();
        let ident = self.query_ident(&inner, &version);
        self.prepared.insert(p.name.clone(), Prepared { parsed: Some(inner), locks: crate::locking::plan_locks(&plan), plan: Arc::new(plan), param_types, version, ident });
        out.command_complete("PREPARE")
    }

    fn sql_execute(&mut self, st: &ParsedStmt, e: &pg_query::protobuf::ExecuteStmt, out: &mut dyn Output) -> Result<()> {
        let exprs = self.execute_args(st, e)?;
        let mut values = Vec::with_capacity(exprs.len());
        for ex in &exprs {
            values.push(exec::eval_pure(ex, &[], &[], &[], &mut self.env)?);
        }
        self.revalidate_prepared(&e.name)?;
        let plan = self.prepared[&e.name].plan.clone();
        let ident = self.prepared[&e.name].ident.clone();
        let perms = self.prepared[&e.name].version.perms.clone();
        self.report_query_id(ident.as_deref());
        let cols = self.describe_plan(&plan);
        let started = self.stat_start();
        let (rows, tag) = self.run(&plan, &perms, &values, out)?;
        if let Some(ident) = &ident {
            self.record_statement(ident, started, crate::stmtstat::tag_rows(&tag));
        }
        if let Some(cols) = cols {
            out.row_description(&cols)?;
            for r in rows.unwrap_or_default() {
                out.row(&r)?;
            }
        }
        out.command_complete(&tag)
    }

    /// `CREATE TABLE t AS EXECUTE name(args)`: the prepared statement's
    /// current plan (a query: 42809 otherwise, as PostgreSQL) fills the new
    /// table, run with the arguments.
    fn sql_create_as_execute(
        &mut self,
        st: &ParsedStmt,
        c: &pg_query::protobuf::CreateTableAsStmt,
        e: &pg_query::protobuf::ExecuteStmt,
        out: &mut dyn Output,
    ) -> Result<()> {
        if c.objtype == pg_query::protobuf::ObjectType::ObjectMatview as i32 {
            return Err(SqlError::not_supported("CREATE MATERIALIZED VIEW"));
        }
        let exprs = self.execute_args(st, e)?;
        let mut values = Vec::with_capacity(exprs.len());
        for ex in &exprs {
            values.push(exec::eval_pure(ex, &[], &[], &[], &mut self.env)?);
        }
        self.revalidate_prepared(&e.name)?;
        let prepared = &self.prepared[&e.name];
        let (plan, perms) = (prepared.plan.clone(), prepared.version.perms.clone());
        let Statement::Query(q) = &*plan else {
            return Err(SqlError::new(b"42809", "prepared statement is not a SELECT"));
        };
        let into = c.into.as_deref().ok_or_else(|| SqlError::internal("CREATE TABLE AS without a target"))?;
        let ctas = {
            let snap = self.analysis_snapshot()?;
            let mut a = Analyzer { backend: &self.backend, snap: &snap, sql: &st.sql, params: Vec::new(), params_allowed: false, views: Default::default(), upper: Default::default(), planner: crate::optimizer::PlannerSettings::from_env(&self.env), fold_error: None };
            a.create_as_target(into, q.clone(), c.if_not_exists, crate::plan::CtasForm::Execute)?
        };
        let (_, tag) = self.run(&ctas, &perms, &values, out)?;
        out.command_complete(&tag)
    }

    /// EXECUTE's arguments: expressions without columns, coerced to the
    /// prepared statement's parameter types as in assignment (26000, 42601,
    /// 42804 as PostgreSQL).
    fn execute_args(&mut self, st: &ParsedStmt, e: &pg_query::protobuf::ExecuteStmt) -> Result<Vec<crate::plan::Expr>> {
        let Some(p) = self.prepared.get(&e.name) else {
            return Err(SqlError::new(b"26000", format!("prepared statement \"{}\" does not exist", e.name)));
        };
        let types = p.param_types.clone();
        if types.len() != e.params.len() {
            return Err(SqlError::new(b"42601", format!("wrong number of parameters for prepared statement \"{}\"", e.name))
                .with_detail(format!("Expected {} parameters but got {}.", types.len(), e.params.len())));
        }
        // The arguments: expressions without columns, coerced as in assignment.
        self.ensure_txn()?;
        let mut exprs = Vec::with_capacity(types.len());
        {
            let snap = self.analysis_snapshot()?;
            let mut a = Analyzer { backend: &self.backend, snap: &snap, sql: &st.sql, params: Vec::new(), params_allowed: false, views: Default::default(), upper: Default::default(), planner: crate::optimizer::PlannerSettings::from_env(&self.env), fold_error: None };
            for (i, (n, ty)) in e.params.iter().zip(&types).enumerate() {
                let Some(node) = n.node.as_ref() else { return Err(SqlError::syntax("empty EXECUTE parameter")) };
                let ex = a.scalar_expr(node)?;
                let from = ex.ty();
                let loc = crate::analyze::node_location(node);
                if from != Type::Unknown && from != *ty && !types::cast_allowed(from, *ty, types::CastContext::Assignment) {
                    let err = SqlError::new(
                        b"42804",
                        format!("parameter ${} of type {} cannot be coerced to the expected type {}", i + 1, from.sql_name(), ty.sql_name()),
                    )
                    .with_hint("You will need to rewrite or cast the expression.");
                    return Err(a.err_at(err, loc));
                }
                exprs.push(a.coerce(ex, *ty, types::CastContext::Assignment, loc)?);
            }
        }
        Ok(exprs)
    }

    /// Makes prepared statement `name`'s plan current: analyzed again if the
    /// catalog changed since, checked again once its relation locks are held (a
    /// DDL that committed while we waited for them is seen). A new plan must
    /// return the columns the old one did, which the client may have been told.
    /// Every caller has read the invalidation queue (`sync_datetime`) at the
    /// start of its message (Bind) or statement (EXECUTE, EXPLAIN EXECUTE).
    fn revalidate_prepared(&mut self, name: &str) -> Result<()> {
        self.plan_locked = None;
        let p = &self.prepared[name];
        if p.parsed.is_none() {
            return Ok(());
        }
        let mut stale = !self.plan_valid(&p.version);
        if !stale && crate::locking::plan_lock_mode(&p.plan).is_some() {
            self.ensure_txn()?;
            crate::locking::apply_settings(&self.backend, &mut self.env)?;
            crate::locking::lock_list(&self.backend, &self.prepared[name].locks)?;
            stale = !self.plan_valid(&self.prepared[name].version);
            if !stale {
                let plan = Arc::as_ptr(&self.prepared[name].plan) as usize;
                self.plan_locked = Some((plan, self.backend.txn.nesting_level()));
            }
        }
        if !stale {
            return Ok(());
        }
        let p = &self.prepared[name];
        let parsed = p.parsed.clone().expect("checked above");
        let mut types: Vec<Option<Type>> = p.param_types.iter().map(|t| Some(*t)).collect();
        let version = self.begin_version();
        let plan = self.analyze_extended(&parsed, &mut types)?;
        let version = self.end_version(version);
        let shape = |d: Option<Vec<ColumnDesc>>| d.map(|cols| cols.into_iter().map(|c| (c.name, c.ty, c.typmod)).collect::<Vec<_>>());
        if shape(self.describe_plan(&plan)) != shape(self.describe_plan(&self.prepared[name].plan)) {
            return Err(SqlError::new(b"0A000", "cached plan must not change result type"));
        }
        let ident = self.query_ident(&parsed, &version);
        let p = self.prepared.get_mut(name).expect("looked up above");
        p.locks = crate::locking::plan_locks(&plan);
        p.plan = Arc::new(plan);
        p.version = version;
        p.ident = ident;
        Ok(())
    }

    fn sql_deallocate(&mut self, d: &pg_query::protobuf::DeallocateStmt, out: &mut dyn Output) -> Result<()> {
        if d.isall || d.name.is_empty() {
            self.prepared.clear();
            return out.command_complete("DEALLOCATE ALL");
        }
        if self.prepared.remove(&d.name).is_none() {
            return Err(SqlError::new(b"26000", format!("prepared statement \"{}\" does not exist", d.name)));
        }
        out.command_complete("DEALLOCATE")
    }

    // ---- extended query --------------------------------------------------------

    /// Parse: `param_types` are the client's type OIDs (0 = infer).
    pub fn parse(&mut self, name: &str, sql: &str, param_oids: &[u32]) -> Result<()> {
        let r = self.parse_inner(name, sql, param_oids);
        r.inspect_err(|_| self.on_error())
    }

    fn parse_inner(&mut self, name: &str, sql: &str, param_oids: &[u32]) -> Result<()> {
        let stmts = parser::parse(sql)?;
        if stmts.len() > 1 {
            return Err(SqlError::syntax("cannot insert multiple commands into a prepared statement"));
        }
        if !name.is_empty() && self.prepared.contains_key(name) {
            return Err(SqlError::new(b"42P05", format!("prepared statement \"{name}\" already exists")));
        }
        let mut types: Vec<Option<Type>> = Vec::new();
        for &oid in param_oids {
            types.push(match oid {
                0 => None,
                oid => Some(Type::from_oid(oid).ok_or_else(|| SqlError::not_supported(format!("parameter type with OID {oid}")))?),
            });
        }
        // Begun before analysis: DDL committing meanwhile makes the plan stale.
        let version = self.begin_version();
        let (parsed, plan) = match stmts.into_iter().next() {
            None => (None, Statement::Empty),
            Some(st) => {
                if self.status == TxnStatus::Failed && !matches!(st.node, pg_query::NodeEnum::TransactionStmt(_)) {
                    self.check_not_failed(None)?;
                }
                let plan = self.analyze_extended(&st, &mut types)?;
                (Some(st), plan)
            }
        };
        let version = self.end_version(version);
        // Parameters nobody gave a type to are text, as unknown resolves.
        let param_types = types.into_iter().map(|t| t.filter(|t| *t != Type::Unknown).unwrap_or(Type::Text)).collect();
        let ident = parsed.as_ref().and_then(|st| self.query_ident(st, &version));
        self.prepared.insert(name.to_string(), Prepared { parsed, locks: crate::locking::plan_locks(&plan), plan: Arc::new(plan), param_types, version, ident });
        Ok(())
    }

    /// A statement of the extended protocol analyzed: DECLARE and FETCH become
    /// commands run at Execute, with Bind's parameters.
    fn analyze_extended(&mut self, st: &ParsedStmt, types: &mut Vec<Option<Type>>) -> Result<Statement> {
        use crate::utility::{FetchCmd, SessionCmd};
        Ok(match &st.node {
            pg_query::NodeEnum::DeclareCursorStmt(d) => Statement::Utility(SessionCmd::Declare(Box::new(self.analyze_declare(st, d, types, true)?))),
            pg_query::NodeEnum::FetchStmt(f) => Statement::Utility(SessionCmd::Fetch(FetchCmd::from_stmt(f))),
            _ => self.analyze(st, types, true)?,
        })
    }

    pub fn describe_statement(&mut self, name: &str) -> Result<(Vec<Type>, Option<Vec<ColumnDesc>>)> {
        let r = (|| {
            let p = self.prepared.get(name).ok_or_else(|| no_statement(name))?;
            Ok((p.param_types.clone(), self.describe_plan(&p.plan)))
        })();
        r.inspect_err(|_| self.on_error())
    }

    pub fn describe_portal(&mut self, name: &str) -> Result<Option<Arc<[ColumnDesc]>>> {
        let Some(p) = self.portals.get(name) else {
            self.on_error();
            return Err(SqlError::new(b"34000", format!("portal \"{name}\" does not exist")));
        };
        if let Some((plan, desc)) = &self.desc_memo {
            if Arc::ptr_eq(plan, &p.plan) {
                return Ok(Some(desc.clone()));
            }
        }
        let plan = p.plan.clone();
        let Some(desc) = self.describe_plan(&plan) else { return Ok(None) };
        let desc: Arc<[ColumnDesc]> = desc.into();
        // FETCH describes another portal's query: not a function of its plan.
        if !matches!(*plan, Statement::Utility(crate::utility::SessionCmd::Fetch(_))) {
            self.desc_memo = Some((plan, desc.clone()));
        }
        Ok(Some(desc))
    }

    /// Bind: decodes the parameters with the statement's types.
    pub fn bind(&mut self, portal: &str, statement: &str, params: &[ParamValue<'_>]) -> Result<()> {
        self.sync_datetime();
        let r = self.bind_inner(portal, statement, params);
        r.inspect_err(|_| self.on_error())
    }

    fn bind_inner(&mut self, portal: &str, statement: &str, params: &[ParamValue<'_>]) -> Result<()> {
        let nparams = match self.prepared.get(statement) {
            None => return Err(no_statement(statement)),
            Some(p) => p.param_types.len(),
        };
        if params.len() != nparams {
            return Err(SqlError::new(
                b"08P01",
                format!("bind message supplies {} parameters, but prepared statement \"{statement}\" requires {nparams}", params.len()),
            ));
        }
        let plan_is_txn = matches!(*self.prepared[statement].plan, Statement::Transaction(_));
        if self.status == TxnStatus::Failed && !plan_is_txn {
            self.check_not_failed(None)?;
        }
        self.revalidate_prepared(statement)?;
        let p = &self.prepared[statement];
        let mut values = Vec::with_capacity(params.len());
        for (i, (pv, ty)) in params.iter().zip(&p.param_types).enumerate() {
            // PostgreSQL's bind_param_error_callback: which parameter failed, and
            // for a text value that was read, its value cut to
            // log_parameter_max_length_on_error (0 by default: '...').
            let context = |with_value: bool| {
                move |e: SqlError| {
                    let value = if with_value { " = '...'" } else { "" };
                    if e.context.is_some() {
                        e
                    } else if portal.is_empty() {
                        e.with_context(format!("unnamed portal parameter ${}{value}", i + 1))
                    } else {
                        e.with_context(format!("portal \"{portal}\" parameter ${}{value}", i + 1))
                    }
                }
            };
            values.push(match pv {
                ParamValue::Null => Value::Null,
                ParamValue::Text(b) => {
                    // Text parameters are verified like any client string (a NUL is invalid).
                    let s = types::verify_utf8(b).map_err(context(false))?;
                    types::input(*ty, s, -1).map_err(context(true))?
                }
                ParamValue::Binary(b) => types::recv(*ty, b).map_err(|e| {
                    // Bytes the receive function left over: PostgreSQL's Bind names
                    // the parameter. Other complaints keep their text.
                    if e.code == *b"22P03" && e.message == "incorrect binary data format" {
                        SqlError::new(b"22P03", format!("incorrect binary data format in bind parameter {}", i + 1))
                    } else {
                        e
                    }
                })
                .map_err(context(false))?,
            });
        }
        if !portal.is_empty() && self.portals.contains_key(portal) {
            return Err(SqlError::new(b"42P03", format!("cursor \"{portal}\" already exists")));
        }
        let plan = p.plan.clone();
        let ident = p.ident.clone();
        let perms = p.version.perms.clone();
        let sql = p.parsed.as_ref().map(|x| x.sql.clone());
        if !matches!(*plan, Statement::Transaction(_) | Statement::Set { .. } | Statement::Show(_) | Statement::Empty) {
            self.ensure_txn()?;
        }
        self.portals.insert(portal.to_string(), Portal { sql, plan, perms, params: values, state: PortalState::NotStarted, cursor: None, ident, stat_acc: Default::default() });
        Ok(())
    }

    pub fn execute(&mut self, portal: &str, max_rows: u32, out: &mut dyn Output) -> Result<ExecOutcome> {
        if let Some(sql) = self.portals.get(portal).and_then(|p| p.sql.clone()) {
            self.report_active(&sql);
        }
        let ident = self.portals.get(portal).and_then(|p| p.ident.clone());
        self.report_query_id(ident.as_deref());
        let started = self.stat_start();
        let r = self.execute_inner(portal, max_rows, out);
        if let (Some(ident), Ok(outcome)) = (&ident, &r) {
            self.portal_stat(portal, ident, started, max_rows, outcome);
        }
        // The backend stays "active" until Sync (ReadyForQuery), as in
        // PostgreSQL: an Execute reports its command, not the idle state after it.
        r.inspect_err(|_| self.on_error())
    }

    /// pg_stat_statements for a portal: an Execute that suspended it adds to
    /// the portal's running figures; the one that completes it records one
    /// call with them all (PostgreSQL counts at ExecutorEnd).
    fn portal_stat(&mut self, portal: &str, ident: &crate::queryid::QueryIdent, started: StatStart, max_rows: u32, outcome: &ExecOutcome) {
        let acc = self.portals.get_mut(portal).map(|p| std::mem::take(&mut p.stat_acc)).unwrap_or_default();
        match outcome {
            ExecOutcome::Suspended => {
                let (hit, read) = self.backend.txn.pgstat.buffer_usage();
                if let Some(p) = self.portals.get_mut(portal) {
                    p.stat_acc = (
                        acc.0 + started.0.elapsed().as_secs_f64() * 1000.0,
                        acc.1 + max_rows as u64,
                        acc.2 + hit.saturating_sub(started.1 .0),
                        acc.3 + read.saturating_sub(started.1 .1),
                        add_usage(&acc.4, &ferrogres_engine::pgstat::usage::of(self.backend.id()).since(&started.2)),
                    );
                }
            }
            ExecOutcome::Completed(tag) => {
                // The earlier Executes' time and buffers, moved into this one's start.
                let start = (
                    started.0.checked_sub(std::time::Duration::from_secs_f64(acc.0 / 1000.0)).unwrap_or(started.0),
                    (started.1 .0.saturating_sub(acc.2), started.1 .1.saturating_sub(acc.3)),
                    started.2.since(&acc.4),
                );
                self.record_statement(ident, start, acc.1 + crate::stmtstat::tag_rows(tag));
            }
            _ => {}
        }
    }

    fn execute_inner(&mut self, portal: &str, max_rows: u32, out: &mut dyn Output) -> Result<ExecOutcome> {
        let Some(mut p) = self.portals.remove(portal) else {
            return Err(SqlError::new(b"34000", format!("portal \"{portal}\" does not exist")));
        };
        if !matches!(*p.plan, Statement::Transaction(_)) {
            if let Err(e) = self.check_not_failed(None) {
                self.portals.insert(portal.to_string(), p);
                return Err(e);
            }
        }
        if matches!(*p.plan, Statement::Empty) {
            // An empty portal answers EmptyQueryResponse as often as it is run.
            self.portals.insert(portal.to_string(), p);
            return Ok(ExecOutcome::EmptyQuery);
        }
        if let PortalState::Finished = p.state {
            let e = SqlError::new(b"55000", format!("portal \"{portal}\" cannot be run"));
            self.portals.insert(portal.to_string(), p);
            return Err(e);
        }
        if let (PortalState::NotStarted, Statement::Utility(cmd)) = (&p.state, &*p.plan) {
            match cmd {
                crate::utility::SessionCmd::Declare(d) => {
                    let d = d.clone();
                    self.open_cursor(&d, p.params.clone(), p.sql.clone(), out)?;
                    p.state = PortalState::Done("DECLARE CURSOR".into());
                }
                crate::utility::SessionCmd::Fetch(f) => {
                    // A row limit on a FETCH (MOVE sends no rows): at most
                    // `max_rows` now, the rest at the next Execute.
                    let cap = (max_rows != 0 && !f.ismove).then_some(max_rows as u64);
                    let (tag, left) = self.fetch_named_capped(&f.to_stmt(), out, cap)?;
                    if let Some(left) = left {
                        p.state = PortalState::Fetching { cursor: f.portalname.clone(), left };
                        self.portals.insert(portal.to_string(), p);
                        return Ok(ExecOutcome::Suspended);
                    }
                    p.state = PortalState::Done(tag);
                }
                _ => {}
            }
        }
        if let PortalState::Fetching { cursor, left } = &p.state {
            // The rest of a suspended FETCH: forward from where it stopped.
            use pg_query::protobuf::FetchDirection as D;
            let (cursor, left) = (cursor.clone(), *left);
            let f = pg_query::protobuf::FetchStmt {
                portalname: cursor.clone(),
                direction: D::FetchForward as i32,
                how_many: left.map_or(i64::MAX, |n| n as i64),
                ismove: false,
            };
            let cap = (max_rows != 0).then_some(max_rows as u64);
            let (tag, more) = if left == Some(0) {
                // Suspended after exactly its last row: nothing more to read.
                ("FETCH 0".to_string(), None)
            } else {
                self.fetch_named_capped(&f, out, cap)?
            };
            if let Some(left) = more {
                p.state = PortalState::Fetching { cursor, left };
                self.portals.insert(portal.to_string(), p);
                return Ok(ExecOutcome::Suspended);
            }
            p.state = PortalState::Done(tag);
        }
        if let PortalState::NotStarted = p.state {
            // A query's executor is opened and kept; other statements run to
            // completion here and their rows (RETURNING, SHOW) wait in the portal.
            self.open_query = matches!(*p.plan, Statement::Query(_));
            let r = self.run(&p.plan, &p.perms, &p.params, out);
            self.open_query = false;
            let (rows, tag) = r?;
            p.state = match (self.opened.take(), rows) {
                (Some(q), _) => PortalState::Running(q),
                (None, Some(rows)) => PortalState::Rows { rows: rows.into(), tag },
                (None, None) => PortalState::Done(tag),
            };
        }
        let outcome = match &mut p.state {
            PortalState::NotStarted | PortalState::Finished | PortalState::Fetching { .. } => return Err(SqlError::internal("portal not started")),
            PortalState::Done(tag) => {
                let tag = std::mem::take(tag);
                p.state = PortalState::Finished;
                ExecOutcome::Completed(tag)
            }
            PortalState::Exhausted => ExecOutcome::Completed("SELECT 0".into()),
            PortalState::Running(q) => {
                // An error while pulling drops the portal (its transaction fails).
                let limit = if max_rows == 0 { None } else { Some(max_rows as u64) };
                let (n, done) = self.pull(q, &p.params, limit, &mut |row| out.row(&row))?;
                if !done {
                    // As PostgreSQL's executor, which stops after `max_rows`
                    // rows without looking for another: exactly `max_rows`
                    // rows is PortalSuspended, even when none are left.
                    self.portals.insert(portal.to_string(), p);
                    return Ok(ExecOutcome::Suspended);
                }
                p.state = PortalState::Exhausted;
                ExecOutcome::Completed(format!("SELECT {n}"))
            }
            PortalState::Rows { rows, tag } => {
                let mut n: u64 = 0;
                loop {
                    if max_rows > 0 && n == max_rows as u64 {
                        self.portals.insert(portal.to_string(), p);
                        return Ok(ExecOutcome::Suspended);
                    }
                    let Some(r) = rows.pop_front() else { break };
                    out.row(&r)?;
                    n += 1;
                }
                let t = if tag.starts_with("SELECT") {
                    format!("SELECT {n}")
                } else {
                    tag.clone()
                };
                // A finished SELECT portal executed again returns no rows.
                if tag.starts_with("SELECT") {
                    *tag = "SELECT 0".into();
                }
                ExecOutcome::Completed(t)
            }
        };
        // The portal lives on until its transaction ends, at the latest at the
        // next Sync (see `sync`): a SET or SHOW portal outside a block belongs
        // to the pipeline's implicit transaction, as in PostgreSQL. A portal
        // whose COMMIT or ROLLBACK just ended the transaction goes with it.
        let ended_txn = matches!(*p.plan, Statement::Transaction(_))
            && !self.backend.txn.in_transaction()
            && self.status == TxnStatus::Idle;
        if !ended_txn {
            self.portals.insert(portal.to_string(), p);
        }
        Ok(outcome)
    }

    /// Pulls up to `limit` rows (`None`: all) from an open query into `each`,
    /// as one statement: the memory bound, statement_timeout and interrupt
    /// checks apply to the pull as to a query run at once. Returns how many
    /// rows were pulled and whether the executor ran out of rows (`false`
    /// when it stopped at `limit`, without looking for another).
    pub(crate) fn pull(
        &mut self,
        q: &mut OpenQuery,
        params: &[Value],
        limit: Option<u64>,
        each: &mut dyn FnMut(Vec<Value>) -> Result<()>,
    ) -> Result<(u64, bool)> {
        let mem = self.cached_settings().memory_limit;
        crate::memory::start_statement(mem);
        let timeout = if self.timer_armed { 0 } else { self.statement_timeout_ms() };
        if timeout > 0 {
            self.arm_statement_timer(Some(std::time::Duration::from_millis(timeout)));
        }
        self.sync_datetime();
        let r = (|| {
            (self.env.interrupts)()?;
            let mut ctx = Ctx { backend: &mut self.backend, snap: q.snap.clone(), params, env: &mut self.env };
            let mut n: u64 = 0;
            let mut tick = exec::Ticker::default();
            while limit != Some(n) {
                let Some(row) = q.it.next(&mut ctx)? else { return Ok((n, true)) };
                tick.tick(&*ctx.env)?;
                each(row)?;
                n += 1;
            }
            Ok((n, false))
        })();
        if timeout > 0 {
            self.arm_statement_timer(None);
        }
        crate::memory::end_statement();
        r
    }

    pub fn close_statement(&mut self, name: &str) {
        self.prepared.remove(name);
    }

    pub fn close_portal(&mut self, name: &str) {
        self.portals.remove(name);
    }

    /// Sync: commit the implicit transaction. Outside a transaction block every
    /// portal is gone afterwards, as in PostgreSQL (where the implicit
    /// transaction, started by the first message of the pipeline, owns them).
    pub fn sync(&mut self) -> Result<()> {
        let r = self.finish_implicit();
        self.report_idle();
        if self.status == TxnStatus::Idle && !self.backend.txn.in_transaction() {
            self.portals.clear();
        }
        r
    }

    /// Whether a portal of this name exists (for the wire layer's bookkeeping).
    pub fn has_portal(&self, name: &str) -> bool {
        self.portals.contains_key(name)
    }

    /// Whether a prepared statement of this name exists.
    pub fn has_statement(&self, name: &str) -> bool {
        self.prepared.contains_key(name)
    }

    /// An error was raised outside the session (the wire layer rejected a
    /// message): the transaction fails as after any error.
    pub fn fail_transaction(&mut self) {
        self.on_error();
    }

    /// This session is a client's (not a walsender's): counted in its
    /// database's pg_stat_database.sessions, its times from now on.
    pub fn report_connect(&mut self) {
        self.backend.report_connect();
    }

    /// How the client's connection ended (pg_stat_database's session counters).
    pub fn report_disconnect(&mut self, cause: ferrogres_engine::engine::DisconnectCause) {
        self.backend.report_disconnect(cause);
    }

    /// The connection ends: roll back.
    pub fn terminate(&mut self) {
        let _ = self.end_txn(false);
        self.backend.engine().notify.remove(self.backend.id().0);
        self.prepared.clear();
        crate::namespace::drop_temp_schema(&mut self.backend);
    }
}

fn no_statement(name: &str) -> SqlError {
    if name.is_empty() {
        SqlError::new(b"26000", "unnamed prepared statement does not exist")
    } else {
        SqlError::new(b"26000", format!("prepared statement \"{name}\" does not exist"))
    }
}


/// Whether `plan` is a command on catalog objects (DDL, LOCK, roles and
/// privileges) rather than a query or a change of a table's rows: it runs
/// with a catalog snapshot in REPEATABLE READ and SERIALIZABLE.
fn is_catalog_command(plan: &Statement) -> bool {
    matches!(
        plan,
        Statement::CreateTable { .. }
            | Statement::DropTables { .. }
            | Statement::Index(_)
            | Statement::Role(_)
            | Statement::Grant(_)
            | Statement::Owner(_)
            | Statement::Ddl(_)
            | Statement::Lock { .. }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrogres_engine::config::Settings;
    use ferrogres_engine::engine::Engine;

    use crate::test_support::Collect;

    fn session(engine: &std::sync::Arc<Engine>) -> Session {
        crate::test_support::session(engine, 42, &[])
    }

    #[test]
    fn statements_through_the_session_api() {
        let dir = tempfile::tempdir().unwrap();
        let (engine, _) = Engine::open(dir.path(), Settings::default()).unwrap();
        catalog::bootstrap(&engine).unwrap();
        let mut s = session(&engine);
        let mut out = Collect::default();
        s.execute_simple("CREATE TABLE t (a int, b text); INSERT INTO t VALUES (2, 'x'), (1, NULL)", &mut out).unwrap();
        assert_eq!(out.tags, ["CREATE TABLE", "INSERT 0 2"]);
        let mut out = Collect::default();
        s.execute_simple("SELECT a * 10 AS ten, b FROM t ORDER BY a", &mut out).unwrap();
        assert_eq!(out.cols, ["ten", "b"]);
        assert_eq!(out.rows, vec![vec![Some("10".into()), None], vec![Some("20".into()), Some("x".into())]]);
        // The parse cache returns the same statements for the same text.
        let mut out = Collect::default();
        s.execute_simple("SELECT a * 10 AS ten, b FROM t ORDER BY a", &mut out).unwrap();
        assert_eq!(out.rows.len(), 2);
        // An error in a block fails it until ROLLBACK.
        let mut out = Collect::default();
        s.execute_simple("BEGIN", &mut out).unwrap();
        let e = s.execute_simple("SELECT c FROM t", &mut out).unwrap_err();
        assert_eq!((e.sqlstate(), e.position), ("42703", Some(8)));
        assert_eq!(s.status(), TxnStatus::Failed);
        assert_eq!(s.execute_simple("SELECT 1", &mut out).unwrap_err().sqlstate(), "25P02");
        s.execute_simple("ROLLBACK", &mut out).unwrap();
        assert_eq!(s.status(), TxnStatus::Idle);
        // Prepared statement: parameter type inferred from the column.
        s.parse("q", "SELECT b FROM t WHERE a = $1", &[]).unwrap();
        let (params, cols) = s.describe_statement("q").unwrap();
        assert_eq!(params, [Type::Int4]);
        assert_eq!(cols.unwrap()[0].ty, Type::Text);
        s.bind("", "q", &[ParamValue::Text(b"2")]).unwrap();
        let mut out = Collect::default();
        assert_eq!(s.execute("", 0, &mut out).unwrap(), ExecOutcome::Completed("SELECT 1".into()));
        assert_eq!(out.rows, vec![vec![Some("x".into())]]);
        s.sync().unwrap();
        let mut out = Collect::default();
        s.execute_simple("DROP TABLE IF EXISTS nope", &mut out).unwrap();
        assert_eq!(out.notices, ["table \"nope\" does not exist, skipping"]);
    }
}
