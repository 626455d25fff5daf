//! The boundary between the wire layer and the SQL layer.
//!
//! The wire layer (this crate) owns sockets, framing and every protocol state
//! machine. What a query *means* belongs to a [`Backend`], which makes one
//! [`Session`] per connection. The session runs on the connection's own thread
//! and may block (on locks, I/O, `pg_sleep`); it polls [`Interrupts::check`] at
//! safe points, as PostgreSQL's `CHECK_FOR_INTERRUPTS()`.
//!
//! Results travel through a [`ResultSink`] that the wire layer implements: it
//! turns calls into RowDescription / DataRow / CommandComplete / NoticeResponse /
//! COPY messages. A `PgError` returned from a session method becomes an
//! ErrorResponse; FATAL ends the connection after it is sent.

use crate::error::PgError;
use bytes::Bytes;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

pub use pgwire::messages::response::TransactionStatus;

/// What the client asked for in its StartupMessage, plus what the server assigned.
#[derive(Debug, Clone)]
pub struct StartupInfo {
    pub user: String,
    pub database: String,
    /// `application_name` from the startup packet, or empty.
    pub application_name: String,
    /// Every startup parameter as sent (including `user`, `database`, `options`, GUCs).
    pub parameters: Vec<(String, String)>,
    /// The process id reported in BackendKeyData (unique among live connections).
    pub backend_pid: i32,
    /// `127.0.0.1:54321` for TCP, `[local]` for the Unix socket.
    pub client_addr: String,
    /// The session's TLS (pg_stat_ssl), `None` in clear.
    pub ssl: Option<crate::tls::SslInfo>,
    /// The `replication` startup parameter: a walsender connection or not.
    pub replication: Replication,
}

/// What the `replication` startup parameter asked for (PostgreSQL's am_walsender
/// and am_db_walsender).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Replication {
    /// An ordinary session (`false`, `off`, `no`, `0`, or no parameter).
    #[default]
    No,
    /// A physical walsender (`true`, `on`, `yes`, `1`): replication commands
    /// only, connected to no database (pg_hba.conf's `replication` keyword).
    Physical,
    /// `database`: replication commands and SQL, connected to the database.
    Database,
}

impl Replication {
    /// Parses the parameter's value as PostgreSQL does (booleans by their
    /// unambiguous prefixes, case-insensitive); `None` for anything else.
    pub fn parse(value: &str) -> Option<Replication> {
        let v = value.to_ascii_lowercase();
        if v == "database" {
            return Some(Replication::Database);
        }
        let prefix_of = |word: &str| !v.is_empty() && word.starts_with(v.as_str());
        if v == "1" || prefix_of("true") || prefix_of("yes") || v == "on" {
            Some(Replication::Physical)
        } else if v == "0" || prefix_of("false") || prefix_of("no") || (v.len() >= 2 && "off".starts_with(v.as_str())) {
            Some(Replication::No)
        } else {
            None
        }
    }
}

/// Flags another thread sets to interrupt a session: a CancelRequest or shutdown.
/// The session's thread is the only one that clears them.
#[derive(Debug)]
pub struct Interrupts {
    /// Set by a matching CancelRequest; cleared when the wire layer starts a new
    /// command (a cancel that arrives while idle is ignored, as in PostgreSQL).
    cancel_pending: AtomicBool,
    /// Set by server shutdown; never cleared.
    terminate_pending: AtomicBool,
    /// Run by `request_cancel` after setting the flag, so that a session asleep
    /// somewhere the flag is not polled (a heavyweight lock wait) wakes up.
    on_cancel: OnCancel,
    /// Run by `request_terminate` after setting the flag (and `on_cancel`), so
    /// that a session waiting for its client's next message wakes up (the
    /// server shuts the socket's read side).
    on_terminate: OnCancel,
    /// The client's socket (-1: none), peeked by `check` at most every
    /// [`CLIENT_CHECK_INTERVAL`] so that a statement whose client has gone away
    /// stops (FATAL 08006) instead of running on. Set by the connection after
    /// startup and cleared before the socket is closed.
    client_fd: AtomicI32,
    /// When the socket was last peeked, in ms since `created`.
    last_probe_ms: AtomicU64,
    /// When the running statement's statement_timeout fires, in ms since
    /// `created` ([`NO_DEADLINE`]: none). Set and cleared by the session's own
    /// thread around each statement ([`Interrupts::set_statement_deadline`]);
    /// `check` fails the statement with 57014 once it has passed.
    deadline_ms: AtomicU64,
    created: Created,
}

/// `Interrupts::deadline_ms` when no statement_timeout is armed.
const NO_DEADLINE: u64 = u64::MAX;

/// How often a running statement looks whether its client is still connected
/// (PostgreSQL's client_connection_check_interval, which is off by default
/// there; here always 1 s: the probe is one non-blocking `recv(MSG_PEEK)`).
pub const CLIENT_CHECK_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

#[derive(Debug)]
struct Created(std::time::Instant);

impl Default for Created {
    fn default() -> Created {
        Created(std::time::Instant::now())
    }
}

/// The hook `Interrupts::request_cancel` runs (set by the backend).
#[derive(Default)]
struct OnCancel(std::sync::Mutex<Option<Box<dyn Fn() + Send + Sync>>>);

impl std::fmt::Debug for OnCancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnCancel")
    }
}

impl Default for Interrupts {
    fn default() -> Interrupts {
        Interrupts {
            cancel_pending: AtomicBool::new(false),
            terminate_pending: AtomicBool::new(false),
            on_cancel: OnCancel::default(),
            on_terminate: OnCancel::default(),
            client_fd: AtomicI32::new(-1),
            last_probe_ms: AtomicU64::new(0),
            deadline_ms: AtomicU64::new(NO_DEADLINE),
            created: Created::default(),
        }
    }
}

impl Interrupts {
    pub fn new() -> Interrupts {
        Interrupts::default()
    }
    /// Sets (or, with -1, clears) the client socket that `check` peeks at.
    /// The caller keeps the descriptor open while it is set.
    pub fn set_client_socket(&self, fd: i32) {
        // Only the session's own thread sets, clears and reads it.
        self.client_fd.store(fd, Ordering::Relaxed);
    }
    /// Whether the client has closed its end (or the socket failed): a
    /// non-blocking peek that sees EOF or an error other than "no data yet".
    fn client_gone(&self, now: u64) -> bool {
        let fd = self.client_fd.load(Ordering::Relaxed);
        if fd < 0 {
            return false;
        }
        let last = self.last_probe_ms.load(Ordering::Relaxed);
        if now.saturating_sub(last) < CLIENT_CHECK_INTERVAL.as_millis() as u64 {
            return false;
        }
        self.last_probe_ms.store(now, Ordering::Relaxed);
        let mut b = [0u8; 1];
        // SAFETY: `fd` is the connection's socket, open while it is set here
        // (the connection clears it before closing); the buffer holds 1 byte.
        let n = unsafe { libc::recv(fd, b.as_mut_ptr().cast(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT) };
        match n {
            0 => true,
            n if n > 0 => false,
            _ => !matches!(std::io::Error::last_os_error().raw_os_error(), Some(libc::EAGAIN) | Some(libc::EINTR)),
        }
    }
    // Relaxed would do for a lone flag, but a canceler expects the flag to be
    // seen "promptly" by a thread that then reads other state; SeqCst is cheap here.
    pub fn request_cancel(&self) {
        self.cancel_pending.store(true, Ordering::SeqCst);
        if let Some(f) = self.on_cancel.0.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            f();
        }
    }
    /// Sets what `request_cancel` runs besides setting the flag (e.g. waking a
    /// lock wait, which then fails with 57014).
    pub fn set_on_cancel(&self, f: Box<dyn Fn() + Send + Sync>) {
        *self.on_cancel.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(f);
    }
    /// Ends the session: sets the flag, wakes a lock wait (`on_cancel`) and a
    /// wait for the client (`on_terminate`). Its next interrupt check, or the
    /// next read from the client, sends FATAL 57P01.
    pub fn request_terminate(&self) {
        self.terminate_pending.store(true, Ordering::SeqCst);
        for hook in [&self.on_cancel, &self.on_terminate] {
            if let Some(f) = hook.0.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
                f();
            }
        }
    }
    /// Sets what `request_terminate` runs to wake a session waiting for its client.
    pub fn set_on_terminate(&self, f: Box<dyn Fn() + Send + Sync>) {
        *self.on_terminate.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(f);
    }
    pub fn terminate_requested(&self) -> bool {
        self.terminate_pending.load(Ordering::SeqCst)
    }
    /// Forget a cancel that arrived between commands.
    pub fn clear_cancel(&self) {
        self.cancel_pending.store(false, Ordering::SeqCst);
    }
    /// Arms (`Some(timeout)`, counted from now) or disarms (`None`) the running
    /// statement's statement_timeout. Only the session's own thread calls it.
    pub fn set_statement_deadline(&self, timeout: Option<std::time::Duration>) {
        let at = match timeout {
            Some(d) => self.now_ms().saturating_add(d.as_millis().min(u64::MAX as u128 - 1) as u64),
            None => NO_DEADLINE,
        };
        // Relaxed: written and read by the session's own thread only.
        self.deadline_ms.store(at, Ordering::Relaxed);
    }
    fn now_ms(&self) -> u64 {
        self.created.0.elapsed().as_millis() as u64
    }
    /// CHECK_FOR_INTERRUPTS: `Err(57P01 FATAL)` on shutdown, `Err(57014)` once
    /// per cancel or once when the statement_timeout passes, `Err(08006 FATAL)`
    /// once the client has gone away.
    pub fn check(&self) -> Result<(), PgError> {
        if self.terminate_requested() {
            return Err(PgError::admin_shutdown());
        }
        if self.cancel_pending.swap(false, Ordering::SeqCst) {
            return Err(PgError::query_canceled());
        }
        let now = self.now_ms();
        // Relaxed: the session's own thread wrote it.
        if now >= self.deadline_ms.load(Ordering::Relaxed) {
            self.deadline_ms.store(NO_DEADLINE, Ordering::Relaxed);
            return Err(PgError::statement_timeout());
        }
        if self.client_gone(now) {
            return Err(PgError::connection_failure("connection to client lost"));
        }
        Ok(())
    }
}

/// One column of a RowDescription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldInfo {
    pub name: String,
    /// OID of the table the column comes from, or 0.
    pub table_oid: u32,
    /// Attribute number in that table, or 0.
    pub column_id: i16,
    pub type_oid: u32,
    /// pg_type.typlen (-1 varlena, -2 cstring).
    pub type_size: i16,
    pub type_modifier: i32,
    /// 0 text, 1 binary. In a Describe of a statement it is always 0 (unknown yet).
    pub format: i16,
}

/// Answer to Describe of a prepared statement: ParameterDescription then
/// RowDescription (`Some`) or NoData (`None`).
#[derive(Debug, Clone)]
pub struct StatementDescription {
    pub param_types: Vec<u32>,
    pub fields: Option<Vec<FieldInfo>>,
}

/// How an Execute ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecuteOutcome {
    /// The portal ran to completion: CommandComplete with this tag.
    Completed(String),
    /// `max_rows` rows were sent and more remain: PortalSuspended.
    Suspended,
    /// The statement was empty: EmptyQueryResponse.
    EmptyQuery,
}

/// One step of a COPY FROM STDIN, as the session pulls it from the client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CopyInEvent {
    Data(Bytes),
    /// CopyDone: the data is complete.
    Done,
    /// CopyFail with the client's message. The session must fail the COPY with
    /// 57014 `COPY from stdin failed: MESSAGE`.
    Fail(String),
}

/// Where a session sends results. Every method can fail only because the
/// connection failed (or the protocol was broken during COPY); the session should
/// then stop and return that error.
pub trait ResultSink {
    /// RowDescription before the rows of a simple-query statement. Ignored during
    /// Execute of the extended protocol (the client got it from Describe).
    fn row_description(&mut self, fields: &[FieldInfo]) -> Result<(), PgError>;
    /// One DataRow; `None` is SQL NULL. Values are already in the column's format.
    fn data_row(&mut self, values: &[Option<&[u8]>]) -> Result<(), PgError>;
    /// CommandComplete of one statement of a simple query ("SELECT 1", "INSERT 0 5").
    /// During Execute use [`ExecuteOutcome::Completed`] instead.
    fn command_complete(&mut self, tag: &str) -> Result<(), PgError>;
    /// EmptyQueryResponse for an empty simple-query string.
    fn empty_query(&mut self) -> Result<(), PgError>;
    /// NoticeResponse (WARNING, NOTICE, INFO...), sent at once.
    fn notice(&mut self, notice: &PgError) -> Result<(), PgError>;
    /// CopyInResponse; then call [`ResultSink::copy_in_read`] until Done or Fail.
    /// `format` 0 text, 1 binary; `column_formats` one per column.
    fn copy_in_start(&mut self, format: i8, column_formats: &[i16]) -> Result<(), PgError>;
    /// Next CopyData / CopyDone / CopyFail from the client (Flush and Sync are
    /// ignored meanwhile, as PostgreSQL does). Any other message is a protocol
    /// violation: `Err(08P01)` and the connection is closed after the error.
    fn copy_in_read(&mut self) -> Result<CopyInEvent, PgError>;
    /// CopyOutResponse; then [`ResultSink::copy_data`]* and [`ResultSink::copy_done`].
    fn copy_out_start(&mut self, format: i8, column_formats: &[i16]) -> Result<(), PgError>;
    fn copy_data(&mut self, data: &[u8]) -> Result<(), PgError>;
    fn copy_done(&mut self) -> Result<(), PgError>;
}

/// A role as client authentication sees it (its pg_authid row).
#[derive(Clone, Debug, Default)]
pub struct RoleAuth {
    pub superuser: bool,
    /// rolpassword: a SCRAM or MD5 verifier, or none.
    pub password: Option<String>,
    /// rolvaliduntil is in the past.
    pub expired: bool,
}

/// A database server behind the wire: makes sessions. Shared by all connection threads.
pub trait Backend: Send + Sync {
    /// The role `user` for authentication (`pid`: the session's, already
    /// admitted); `None` when there is no such role.
    fn role_auth(&self, _user: &str, _pid: i32) -> Option<RoleAuth> {
        None
    }

    /// Whether `user` is a member of `group` (directly or through other
    /// roles), for pg_hba.conf's `+group`.
    fn is_member(&self, _user: &str, _group: &str) -> bool {
        false
    }

    /// Called once the startup packet is accepted, the client authenticated (trust)
    /// and admitted under max_connections, before AuthenticationOk is sent. An
    /// `Err` (e.g. 3D000 unknown database) is sent as FATAL and the connection closed.
    /// `interrupts` is the session's cancel/terminate flags (see [`Interrupts`]).
    fn new_session(&self, startup: &StartupInfo, interrupts: std::sync::Arc<Interrupts>)
        -> Result<Box<dyn Session>, PgError>;

    /// Stack size of a connection thread, in bytes: the backend's sessions
    /// recurse (parse analysis, expression evaluation) and know how deep they
    /// may go. Only the touched pages of a stack cost memory.
    fn connection_stack_size(&self) -> usize {
        DEFAULT_CONNECTION_STACK_SIZE
    }

    /// Whether `pid` already names something of the backend's own (an
    /// auxiliary thread listed in pg_stat_activity): a session never gets it.
    fn pid_in_use(&self, _pid: i32) -> bool {
        false
    }

    /// The engine behind the sessions, for the walsender (replication
    /// connections: IDENTIFY_SYSTEM, slots, WAL streaming). `None`: replication
    /// connections are refused (FATAL 0A000).
    fn engine(&self) -> Option<std::sync::Arc<ferrogres_engine::engine::Engine>> {
        None
    }
}

/// [`Backend::connection_stack_size`] unless the backend says otherwise: 8 MB,
/// PostgreSQL's usual `ulimit -s`.
pub const DEFAULT_CONNECTION_STACK_SIZE: usize = 8 << 20;

/// One client session, owned by its connection thread.
///
/// Statements and portals are the session's (their lifetime follows transactions,
/// which is SQL-layer business); the wire layer only passes names ("" is unnamed).
pub trait Session: Send {
    /// ParameterStatus values sent after AuthenticationOk (see
    /// [`pg15_reported_parameters`]).
    fn reported_parameters(&self) -> Vec<(String, String)>;
    /// Reported parameters changed since last called (SET application_name...);
    /// the wire layer sends them as ParameterStatus just before each ReadyForQuery,
    /// as PostgreSQL does.
    fn take_parameter_changes(&mut self) -> Vec<(String, String)>;
    /// 'I' idle, 'T' in a transaction block, 'E' in a failed one.
    fn transaction_status(&self) -> TransactionStatus;

    /// Simple query: run every statement of `sql` in order, reporting each one's
    /// results to `sink`; stop at the first error and return it. Several statements
    /// form one implicit transaction unless they contain transaction control
    /// (the session's business). An all-blank string calls `sink.empty_query()`.
    fn execute_simple(&mut self, sql: &str, sink: &mut dyn ResultSink) -> Result<(), PgError>;

    /// Parse: prepare `sql` (at most one statement) as `name`. `param_types` are
    /// the client's OIDs (0 = unspecified). Redefining a named statement is 42P05.
    fn parse(&mut self, name: &str, sql: &str, param_types: &[u32]) -> Result<(), PgError>;
    /// Bind: make portal `portal` from `statement`. `param_formats` has 0, 1 or
    /// params.len() entries (0 text, 1 binary); `result_formats` 0, 1 or one per column.
    fn bind(
        &mut self,
        portal: &str,
        statement: &str,
        param_formats: &[i16],
        params: &[Option<Bytes>],
        result_formats: &[i16],
    ) -> Result<(), PgError>;
    fn describe_statement(&mut self, name: &str) -> Result<StatementDescription, PgError>;
    /// `None`: the portal returns no rows (NoData).
    fn describe_portal(&mut self, name: &str) -> Result<Option<std::sync::Arc<[FieldInfo]>>, PgError>;
    /// Execute: send up to `max_rows` rows (0 = all) through `sink.data_row`.
    fn execute(&mut self, portal: &str, max_rows: u32, sink: &mut dyn ResultSink)
        -> Result<ExecuteOutcome, PgError>;
    /// Close: closing a name that does not exist is not an error.
    fn close_statement(&mut self, name: &str) -> Result<(), PgError>;
    fn close_portal(&mut self, name: &str) -> Result<(), PgError>;
    /// Sync: end the implicit transaction of the extended-query messages since the
    /// last Sync (commit it, or roll it back after an error).
    fn sync(&mut self) -> Result<(), PgError>;
    /// The wire layer reported an ERROR the session did not raise (a malformed
    /// message, an unsupported one): as after any error, a transaction block
    /// fails and an implicit transaction is rolled back, as in PostgreSQL.
    fn error_reported(&mut self);
    /// The connection is ending (Terminate, EOF, FATAL, shutdown): roll back.
    fn terminate(&mut self);
    /// How the connection ended, told just before `terminate` (for
    /// pg_stat_database's session counters). Nothing by default.
    fn disconnected(&mut self, _how: Disconnect) {}
    /// How long the connection may wait for the client's next message
    /// (idle_session_timeout, idle_in_transaction_session_timeout); asked
    /// before each wait. None by default.
    fn idle_timeouts(&self) -> IdleTimeouts {
        IdleTimeouts::default()
    }
    /// How long until the session's pending statistics may be flushed, asked
    /// before each idle wait (None: nothing pending): after that much
    /// idleness the connection calls [`Session::flush_stats`].
    fn stats_flush_due(&self) -> Option<std::time::Duration> {
        None
    }
    /// Flushes the session's pending statistics (it has been idle long enough).
    fn flush_stats(&mut self) {}

    /// LISTEN/NOTIFY: the notifications to deliver now, oldest first, as
    /// (sender pid, channel, payload). Asked only when the session is idle
    /// outside a transaction block. None by default.
    fn take_notifications(&mut self) -> Vec<(i32, String, String)> {
        Vec::new()
    }

    /// LISTEN/NOTIFY: set when notifications may be waiting; while the
    /// session listens the connection checks it as it waits for the client,
    /// so an idle session gets them promptly. None: it does not listen.
    fn notify_flag(&self) -> Option<std::sync::Arc<ferrogres_engine::notify::NotifySignal>> {
        None
    }
}

/// How a client connection ended (PostgreSQL's SessionEndType).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disconnect {
    /// The client sent Terminate.
    Normal,
    /// The connection was lost without Terminate (abandoned).
    ClientEof,
    /// A FATAL error ended the session.
    Fatal,
    /// pg_terminate_backend or a shutdown ended it.
    Killed,
}

/// The idle timeouts a session's settings ask for (`None`: off).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IdleTimeouts {
    /// idle_session_timeout: outside a transaction block (57P05).
    pub session: Option<std::time::Duration>,
    /// idle_in_transaction_session_timeout: inside one, failed or not (25P03).
    pub in_transaction: Option<std::time::Duration>,
}

/// The settings in a startup packet's `options` parameter (libpq's PGOPTIONS),
/// as PostgreSQL reads them: `-c name=value`, `-cname=value` or `--name=value`,
/// separated by spaces, a backslash escaping the next character. Other switches
/// are skipped. Names have `-` turned into `_`.
pub fn parse_startup_options(options: &str) -> Vec<(String, String)> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut chars = options.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    cur.push(n);
                }
            }
            c if c.is_ascii_whitespace() => {
                if !cur.is_empty() {
                    words.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    let mut out = Vec::new();
    let mut it = words.into_iter();
    while let Some(w) = it.next() {
        let pair = if w == "-c" {
            it.next()
        } else {
            w.strip_prefix("-c").or_else(|| w.strip_prefix("--")).map(str::to_string)
        };
        if let Some((k, v)) = pair.as_deref().and_then(|p| p.split_once('=')) {
            out.push((k.replace('-', "_"), v.to_string()));
        }
    }
    out
}

/// The server_version every ferrogres session reports: clients (libpq, JDBC,
/// pgbench, drivers) parse it as "major.minor", so it stays a bare PostgreSQL
/// version; `version()` says ferrogres.
pub const SERVER_VERSION: &str = "15.18";
pub const SERVER_VERSION_NUM: &str = "150018";

/// The text `SELECT version()` returns.
pub fn version_string() -> String {
    format!(
        "PostgreSQL {SERVER_VERSION} (ferrogres {}) on {}-pc-linux-gnu, compiled by rustc, 64-bit",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH
    )
}

/// The parameters PostgreSQL 15 reports at startup (GUC_REPORT), with its defaults
/// and the startup packet's application_name, in the order PostgreSQL sends them.
pub fn pg15_reported_parameters(startup: &StartupInfo) -> Vec<(String, String)> {
    let tz = std::env::var("TZ").ok().filter(|t| !t.is_empty()).unwrap_or_else(|| "Etc/UTC".into());
    [
        ("application_name", startup.application_name.as_str()),
        ("client_encoding", "UTF8"),
        ("DateStyle", "ISO, MDY"),
        ("default_transaction_read_only", "off"),
        ("in_hot_standby", "off"),
        ("integer_datetimes", "on"),
        ("IntervalStyle", "postgres"),
        ("is_superuser", "on"),
        ("server_encoding", "UTF8"),
        ("server_version", SERVER_VERSION),
        ("session_authorization", startup.user.as_str()),
        ("standard_conforming_strings", "on"),
        ("TimeZone", tz.as_str()),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_fires_once_terminate_sticks() {
        let i = Interrupts::new();
        assert!(i.check().is_ok());
        i.request_cancel();
        assert_eq!(i.check().unwrap_err().sqlstate(), "57014");
        assert!(i.check().is_ok(), "a cancel is consumed by the check that reports it");
        i.request_cancel();
        i.clear_cancel();
        assert!(i.check().is_ok(), "a cancel that arrived while idle is dropped");
        i.request_terminate();
        assert_eq!(i.check().unwrap_err().sqlstate(), "57P01");
        assert_eq!(i.check().unwrap_err().sqlstate(), "57P01");
    }

    #[test]
    fn startup_options_like_pgoptions() {
        assert_eq!(
            parse_startup_options("-c search_path=a\\ b  --statement-timeout=5 -cfoo=1 -X"),
            vec![
                ("search_path".to_string(), "a b".to_string()),
                ("statement_timeout".to_string(), "5".to_string()),
                ("foo".to_string(), "1".to_string())
            ]
        );
    }

    #[test]
    fn reported_parameters_are_postgres_15s() {
        let s = StartupInfo {
            user: "u".into(),
            database: "d".into(),
            application_name: "app".into(),
            parameters: vec![],
            backend_pid: 1,
            client_addr: "[local]".into(),
            ssl: None,
            replication: Replication::No,
        };
        let p = pg15_reported_parameters(&s);
        assert_eq!(p.len(), 13);
        assert!(p.contains(&("server_version".into(), "15.18".into())));
        assert!(p.contains(&("session_authorization".into(), "u".into())));
        assert!(p.contains(&("application_name".into(), "app".into())));
    }
}
