//! The built-in stand-in handler, until the SQL layer exists.
//!
//! **This is not SQL.** It recognizes, by a tiny token matcher, the handful of
//! statements that clients send while connecting and that test tools need before
//! there is a parser and an executor:
//!
//! | statement | result |
//! |---|---|
//! | (empty) | EmptyQueryResponse |
//! | `SELECT <integer>` | one int4 row |
//! | `SELECT version()` | the ferrogres version string |
//! | `SELECT pg_backend_pid()` | the session's pid (the BackendKeyData one) |
//! | `SELECT pg_sleep(<seconds>)` | sleeps; a CancelRequest ends it with 57014 |
//! | `SELECT generate_series(<a>, <b>)` | int4 rows a..b (exercises row limits) |
//! | `SELECT set_config('<name>', '<value>', false)` / `SET <name> = <value>` | sets a known setting |
//! | `SHOW <name>` | a known setting |
//! | `BEGIN`, `START TRANSACTION`, `COMMIT`, `END`, `ROLLBACK`, `ABORT` | transaction status |
//!
//! Anything else fails with SQLSTATE 0A000 "ferrogres does not support SQL yet:
//! the SQL layer is not built (issue 4)". Transactions here guard no data: they
//! only move the status byte of ReadyForQuery ('I', 'T', 'E') the way
//! PostgreSQL would. This module goes away when the SQL layer lands and
//! implements [`crate::handler::Backend`] for real.

use crate::error::PgError;
use crate::handler::{
    pg15_reported_parameters, version_string, Backend, ExecuteOutcome, FieldInfo, Interrupts, ResultSink, Session,
    StartupInfo, StatementDescription, TransactionStatus,
};
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The error for every statement the stand-in does not know.
pub fn not_supported() -> PgError {
    PgError::error(b"0A000", "ferrogres does not support SQL yet: the SQL layer is not built (issue 4)").with_hint(
        "Until then the server answers only connection-time statements: SELECT 1, SELECT version(), SHOW, SET, \
         BEGIN/COMMIT/ROLLBACK, pg_backend_pid(), pg_sleep(), generate_series().",
    )
}

const INT4: u32 = 23;
const TEXT: u32 = 25;
const VOID: u32 = 2278;

/// The stand-in [`Backend`].
#[derive(Debug, Default)]
pub struct MinimalBackend;

impl Backend for MinimalBackend {
    fn new_session(&self, startup: &StartupInfo, interrupts: Arc<Interrupts>) -> Result<Box<dyn Session>, PgError> {
        let reported = pg15_reported_parameters(startup);
        let mut settings: Vec<Setting> = reported
            .iter()
            .map(|(k, v)| Setting { name: k.clone(), value: v.clone(), reported: true })
            .collect();
        for (k, v) in [
            ("extra_float_digits", "1"),
            ("statement_timeout", "0"),
            ("lock_timeout", "0"),
            ("idle_in_transaction_session_timeout", "0"),
            ("search_path", "\"$user\", public"),
            ("client_min_messages", "notice"),
            ("transaction_isolation", "read committed"),
            ("default_transaction_isolation", "read committed"),
            ("server_version_num", crate::handler::SERVER_VERSION_NUM),
        ] {
            settings.push(Setting { name: k.into(), value: v.into(), reported: false });
        }
        let mut s = MinimalSession {
            pid: startup.backend_pid,
            interrupts,
            status: TransactionStatus::Idle,
            settings,
            changed: Vec::new(),
            statements: HashMap::new(),
            portals: HashMap::new(),
        };
        // Settings from the startup packet: first those inside `options`
        // (PGOPTIONS), then the packet's own name/value pairs, which win, as in
        // PostgreSQL (application_name is already in). A bad one is FATAL.
        let mut gucs: Vec<(String, String)> = Vec::new();
        for (k, v) in &startup.parameters {
            if k == "options" {
                gucs.splice(0..0, crate::handler::parse_startup_options(v));
            } else if !matches!(k.as_str(), "user" | "database" | "application_name" | "replication")
                && !k.starts_with("_pq_.")
            {
                gucs.push((k.clone(), v.clone()));
            }
        }
        for (k, v) in &gucs {
            s.set(k, v).map_err(|mut e| {
                e.severity = crate::error::Severity::Fatal;
                e
            })?;
        }
        s.changed.clear();
        Ok(Box::new(s))
    }
}

#[derive(Debug)]
struct Setting {
    name: String,
    value: String,
    reported: bool,
}

/// A recognized statement.
#[derive(Debug, Clone, PartialEq)]
enum Stmt {
    Empty,
    SelectInt(i32),
    Version,
    BackendPid,
    Sleep(f64),
    Series(i32, i32),
    SetConfig(String, String),
    Set(String, String),
    Show(String),
    Begin,
    Commit,
    Rollback,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Num(String),
    Str(String),
    Punct(char),
}

fn lex(s: &str) -> Option<Vec<Tok>> {
    let c: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '\'' {
            let mut v = String::new();
            i += 1;
            loop {
                match c.get(i) {
                    None => return None,
                    Some('\'') if c.get(i + 1) == Some(&'\'') => {
                        v.push('\'');
                        i += 2;
                    }
                    Some('\'') => {
                        i += 1;
                        break;
                    }
                    Some(&x) => {
                        v.push(x);
                        i += 1;
                    }
                }
            }
            out.push(Tok::Str(v));
        } else if ch == '"' {
            let end = c[i + 1..].iter().position(|&x| x == '"')? + i + 1;
            out.push(Tok::Word(c[i + 1..end].iter().collect()));
            i = end + 1;
        } else if ch.is_ascii_digit() || (ch == '-' || ch == '.') && c.get(i + 1).is_some_and(|d| d.is_ascii_digit()) {
            let start = i;
            i += 1;
            while i < c.len() && (c[i].is_ascii_digit() || c[i] == '.') {
                i += 1;
            }
            out.push(Tok::Num(c[start..i].iter().collect()));
        } else if ch.is_alphanumeric() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_' || c[i] == '.') {
                i += 1;
            }
            let word = c[start..i].iter().collect::<String>().to_lowercase();
            // Drivers and tools qualify built-ins: pg_catalog.set_config(...).
            let word = word.strip_prefix("pg_catalog.").map(str::to_string).unwrap_or(word);
            out.push(Tok::Word(word));
        } else {
            out.push(Tok::Punct(ch));
            i += 1;
        }
    }
    Some(out)
}

/// Split a query string on semicolons outside quotes.
fn split_statements(sql: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut start, mut in_str, mut in_ident) = (0, false, false);
    for (i, ch) in sql.char_indices() {
        match ch {
            '\'' if !in_ident => in_str = !in_str,
            '"' if !in_str => in_ident = !in_ident,
            ';' if !in_str && !in_ident => {
                out.push(&sql[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&sql[start..]);
    out
}

fn w(t: &Tok, word: &str) -> bool {
    matches!(t, Tok::Word(x) if x == word)
}
fn p(t: &Tok, ch: char) -> bool {
    *t == Tok::Punct(ch)
}

fn recognize(sql: &str) -> Result<Stmt, PgError> {
    let toks = lex(sql).ok_or_else(not_supported)?;
    use Tok::*;
    let t = toks.as_slice();
    let stmt = match t {
        [] => Stmt::Empty,
        [s, Num(n)] if w(s, "select") => Stmt::SelectInt(n.parse().map_err(|_| not_supported())?),
        [s, Word(f), a, b] if w(s, "select") && p(a, '(') && p(b, ')') => match f.as_str() {
            "version" => Stmt::Version,
            "pg_backend_pid" => Stmt::BackendPid,
            _ => return Err(not_supported()),
        },
        [s, f, a, Num(n), b] if w(s, "select") && w(f, "pg_sleep") && p(a, '(') && p(b, ')') => {
            Stmt::Sleep(n.parse().map_err(|_| not_supported())?)
        }
        [s, f, a, Num(x), c, Num(y), b] if w(s, "select") && w(f, "generate_series") && p(a, '(') && p(c, ',') && p(b, ')') => {
            Stmt::Series(x.parse().map_err(|_| not_supported())?, y.parse().map_err(|_| not_supported())?)
        }
        [s, f, a, Str(n), c1, Str(v), c2, Word(l), b]
            if w(s, "select") && w(f, "set_config") && p(a, '(') && p(c1, ',') && p(c2, ',') && l == "false" && p(b, ')') =>
        {
            Stmt::SetConfig(n.clone(), v.clone())
        }
        [s, Word(n)] if w(s, "show") => Stmt::Show(n.clone()),
        [s, rest @ ..] if w(s, "set") => {
            let rest = match rest {
                [x, r @ ..] if w(x, "session") => r,
                r => r,
            };
            match rest {
                [Word(n), eq, vals @ ..] if (p(eq, '=') || w(eq, "to")) && !vals.is_empty() => {
                    let mut parts = Vec::new();
                    for (i, v) in vals.iter().enumerate() {
                        match v {
                            _ if i % 2 == 1 && p(v, ',') => continue,
                            Str(x) | Num(x) | Word(x) if i % 2 == 0 => parts.push(x.clone()),
                            _ => return Err(not_supported()),
                        }
                    }
                    Stmt::Set(n.clone(), parts.join(", "))
                }
                _ => return Err(not_supported()),
            }
        }
        [b] if w(b, "begin") => Stmt::Begin,
        [b, x, ..] if w(b, "begin") && (w(x, "transaction") || w(x, "work") || w(x, "isolation")) => Stmt::Begin,
        [s, x, ..] if w(s, "start") && w(x, "transaction") => Stmt::Begin,
        [c] | [c, _] if w(c, "commit") || w(c, "end") => {
            if t.len() == 2 && !(w(&t[1], "work") || w(&t[1], "transaction")) {
                return Err(not_supported());
            }
            Stmt::Commit
        }
        [c] | [c, _] if w(c, "rollback") || w(c, "abort") => {
            if t.len() == 2 && !(w(&t[1], "work") || w(&t[1], "transaction")) {
                return Err(not_supported());
            }
            Stmt::Rollback
        }
        _ => return Err(not_supported()),
    };
    Ok(stmt)
}

fn field(name: &str, type_oid: u32, format: i16) -> FieldInfo {
    let type_size = if type_oid == TEXT { -1 } else { 4 };
    FieldInfo { name: name.into(), table_oid: 0, column_id: 0, type_oid, type_size, type_modifier: -1, format }
}

/// A value of the stand-in's three types.
#[derive(Debug, Clone)]
enum Val {
    Int(i32),
    Text(String),
    Void,
}

impl Val {
    fn encode(&self, format: i16) -> Vec<u8> {
        match (self, format) {
            (Val::Int(i), 1) => i.to_be_bytes().to_vec(),
            (Val::Int(i), _) => i.to_string().into_bytes(),
            (Val::Text(s), _) => s.clone().into_bytes(),
            (Val::Void, _) => Vec::new(),
        }
    }
}

struct Prepared {
    stmt: Stmt,
    param_types: Vec<u32>,
}

/// Rows still to send from a portal.
enum PortalState {
    NotStarted,
    Rows { rows: Box<dyn Iterator<Item = Val> + Send>, tag_base: &'static str },
    Done(String),
}

struct Portal {
    stmt: Stmt,
    formats: Vec<i16>,
    state: PortalState,
}

struct MinimalSession {
    pid: i32,
    interrupts: Arc<Interrupts>,
    status: TransactionStatus,
    settings: Vec<Setting>,
    /// Reported settings changed since the last ReadyForQuery.
    changed: Vec<(String, String)>,
    statements: HashMap<String, Prepared>,
    portals: HashMap<String, Portal>,
}

impl MinimalSession {
    fn setting(&self, name: &str) -> Option<&Setting> {
        self.settings.iter().find(|s| s.name.eq_ignore_ascii_case(name))
    }

    fn set(&mut self, name: &str, value: &str) -> Result<(), PgError> {
        let lname = name.to_ascii_lowercase();
        let Some(idx) = self.settings.iter().position(|s| s.name.eq_ignore_ascii_case(name)) else {
            return Err(PgError::error(b"42704", format!("unrecognized configuration parameter \"{lname}\"")));
        };
        match lname.as_str() {
            "server_version" | "server_version_num" | "server_encoding" | "integer_datetimes" | "in_hot_standby"
            | "is_superuser" => {
                return Err(PgError::error(b"55P02", format!("parameter \"{lname}\" cannot be changed")));
            }
            "client_encoding" if !matches!(value.to_ascii_uppercase().as_str(), "UTF8" | "UTF-8" | "UNICODE") => {
                return Err(PgError::error(b"22023", format!("invalid value for parameter \"client_encoding\": \"{value}\""))
                    .with_detail("ferrogres serves UTF8 only."));
            }
            "datestyle" if !matches!(value.to_ascii_uppercase().as_str(), "ISO" | "ISO, MDY" | "MDY, ISO") => {
                return Err(not_supported());
            }
            _ => {}
        }
        let value = match lname.as_str() {
            "client_encoding" => "UTF8".to_string(),
            "datestyle" => "ISO, MDY".to_string(),
            _ => value.to_string(),
        };
        let s = &mut self.settings[idx];
        s.value = value.clone();
        if s.reported {
            let n = s.name.clone();
            self.changed.retain(|(k, _)| *k != n);
            self.changed.push((n, value));
        }
        Ok(())
    }

    fn columns(&self, stmt: &Stmt) -> Option<Vec<(String, u32)>> {
        let c = |n: &str, t| Some(vec![(n.to_string(), t)]);
        match stmt {
            Stmt::SelectInt(_) => c("?column?", INT4),
            Stmt::Version => c("version", TEXT),
            Stmt::BackendPid => c("pg_backend_pid", INT4),
            Stmt::Sleep(_) => c("pg_sleep", VOID),
            Stmt::Series(..) => c("generate_series", INT4),
            Stmt::SetConfig(..) => c("set_config", TEXT),
            Stmt::Show(n) => {
                let name = self.setting(n).map(|s| s.name.clone()).unwrap_or_else(|| n.clone());
                c(&name, TEXT)
            }
            Stmt::Empty | Stmt::Set(..) | Stmt::Begin | Stmt::Commit | Stmt::Rollback => None,
        }
    }

    /// Fail the transaction block if one is open (an error happened).
    fn on_error(&mut self) {
        if self.status == TransactionStatus::Transaction {
            self.status = TransactionStatus::Error;
        }
    }

    fn check_not_aborted(&self, stmt: &Stmt) -> Result<(), PgError> {
        if self.status == TransactionStatus::Error && !matches!(stmt, Stmt::Commit | Stmt::Rollback) {
            return Err(PgError::error(
                b"25P02",
                "current transaction is aborted, commands ignored until end of transaction block",
            ));
        }
        Ok(())
    }

    /// Run a statement's effect. Returns its rows (if it returns any) and the
    /// command tag prefix, or the full tag for a command without rows.
    fn start(&mut self, stmt: &Stmt, sink: &mut dyn ResultSink) -> Result<PortalState, PgError> {
        let rows = |v: Vec<Val>| PortalState::Rows { rows: Box::new(v.into_iter()), tag_base: "SELECT" };
        Ok(match stmt {
            Stmt::Empty => PortalState::Done(String::new()),
            Stmt::SelectInt(i) => rows(vec![Val::Int(*i)]),
            Stmt::Version => rows(vec![Val::Text(version_string())]),
            Stmt::BackendPid => rows(vec![Val::Int(self.pid)]),
            Stmt::Sleep(secs) => {
                let end = Instant::now() + Duration::from_secs_f64(secs.clamp(0.0, 1e9));
                loop {
                    self.interrupts.check()?;
                    let now = Instant::now();
                    if now >= end {
                        break;
                    }
                    std::thread::sleep((end - now).min(Duration::from_millis(10)));
                }
                rows(vec![Val::Void])
            }
            Stmt::Series(a, b) => {
                PortalState::Rows { rows: Box::new((*a..=*b).map(Val::Int)), tag_base: "SELECT" }
            }
            Stmt::SetConfig(n, v) => {
                self.set(n, v)?;
                rows(vec![Val::Text(v.clone())])
            }
            Stmt::Set(n, v) => {
                self.set(n, v)?;
                PortalState::Done("SET".into())
            }
            Stmt::Show(n) => {
                let v = self
                    .setting(n)
                    .map(|s| s.value.clone())
                    .ok_or_else(|| PgError::error(b"42704", format!("unrecognized configuration parameter \"{n}\"")))?;
                PortalState::Rows { rows: Box::new(std::iter::once(Val::Text(v))), tag_base: "SHOW" }
            }
            Stmt::Begin => {
                if self.status != TransactionStatus::Idle {
                    sink.notice(&PgError::warning(b"25001", "there is already a transaction in progress"))?;
                }
                self.status = TransactionStatus::Transaction;
                PortalState::Done("BEGIN".into())
            }
            Stmt::Commit => {
                let tag = match self.status {
                    TransactionStatus::Idle => {
                        sink.notice(&PgError::warning(b"25P01", "there is no transaction in progress"))?;
                        "COMMIT"
                    }
                    TransactionStatus::Transaction => "COMMIT",
                    TransactionStatus::Error => "ROLLBACK",
                };
                self.status = TransactionStatus::Idle;
                PortalState::Done(tag.into())
            }
            Stmt::Rollback => {
                if self.status == TransactionStatus::Idle {
                    sink.notice(&PgError::warning(b"25P01", "there is no transaction in progress"))?;
                }
                self.status = TransactionStatus::Idle;
                PortalState::Done("ROLLBACK".into())
            }
        })
    }

    /// Send up to `max_rows` rows (0: all) of a started portal.
    fn send_rows(
        &self,
        state: &mut PortalState,
        formats: &[i16],
        max_rows: u32,
        sink: &mut dyn ResultSink,
    ) -> Result<ExecuteOutcome, PgError> {
        match state {
            PortalState::NotStarted => Err(PgError::internal("portal not started")),
            PortalState::Done(tag) if tag.is_empty() => Ok(ExecuteOutcome::EmptyQuery),
            PortalState::Done(tag) => Ok(ExecuteOutcome::Completed(tag.clone())),
            PortalState::Rows { rows, tag_base } => {
                let fmt = formats.first().copied().unwrap_or(0);
                let mut n: u64 = 0;
                loop {
                    if max_rows > 0 && n == max_rows as u64 {
                        return Ok(ExecuteOutcome::Suspended);
                    }
                    let Some(v) = rows.next() else { break };
                    if n % 1024 == 1023 {
                        self.interrupts.check()?;
                    }
                    let b = v.encode(fmt);
                    sink.data_row(&[Some(&b)])?;
                    n += 1;
                }
                let tag = if *tag_base == "SELECT" { format!("SELECT {n}") } else { tag_base.to_string() };
                *state = PortalState::Done(if *tag_base == "SELECT" { "SELECT 0".into() } else { tag.clone() });
                Ok(ExecuteOutcome::Completed(tag))
            }
        }
    }

    fn run_simple_one(&mut self, sql: &str, sink: &mut dyn ResultSink) -> Result<(), PgError> {
        let stmt = recognize(sql)?;
        self.check_not_aborted(&stmt)?;
        if let Some(cols) = self.columns(&stmt) {
            let f: Vec<FieldInfo> = cols.iter().map(|(n, t)| field(n, *t, 0)).collect();
            sink.row_description(&f)?;
        }
        let mut state = self.start(&stmt, sink)?;
        match self.send_rows(&mut state, &[], 0, sink)? {
            ExecuteOutcome::Completed(tag) => sink.command_complete(&tag),
            ExecuteOutcome::EmptyQuery => sink.empty_query(),
            ExecuteOutcome::Suspended => Err(PgError::internal("suspended without a row limit")),
        }
    }

    fn end_of_transaction(&mut self) {
        if self.status == TransactionStatus::Idle {
            self.portals.clear();
        }
    }
}

impl Session for MinimalSession {
    fn reported_parameters(&self) -> Vec<(String, String)> {
        self.settings.iter().filter(|s| s.reported).map(|s| (s.name.clone(), s.value.clone())).collect()
    }

    fn take_parameter_changes(&mut self) -> Vec<(String, String)> {
        std::mem::take(&mut self.changed)
    }

    fn transaction_status(&self) -> TransactionStatus {
        self.status
    }

    fn execute_simple(&mut self, sql: &str, sink: &mut dyn ResultSink) -> Result<(), PgError> {
        let parts = split_statements(sql);
        let nonblank: Vec<&str> = parts.into_iter().filter(|s| !s.trim().is_empty()).collect();
        if nonblank.is_empty() {
            return sink.empty_query();
        }
        for s in nonblank {
            if let Err(e) = self.run_simple_one(s, sink) {
                self.on_error();
                return Err(e);
            }
        }
        self.end_of_transaction();
        Ok(())
    }

    fn parse(&mut self, name: &str, sql: &str, param_types: &[u32]) -> Result<(), PgError> {
        let r = (|| {
            let parts: Vec<&str> = split_statements(sql).into_iter().filter(|s| !s.trim().is_empty()).collect();
            if parts.len() > 1 {
                return Err(PgError::error(b"42601", "cannot insert multiple commands into a prepared statement"));
            }
            let stmt = recognize(parts.first().copied().unwrap_or(""))?;
            self.check_not_aborted(&stmt)?;
            if !name.is_empty() && self.statements.contains_key(name) {
                return Err(PgError::error(b"42P05", format!("prepared statement \"{name}\" already exists")));
            }
            self.statements.insert(name.to_string(), Prepared { stmt, param_types: param_types.to_vec() });
            Ok(())
        })();
        r.inspect_err(|_| self.on_error())
    }

    fn bind(
        &mut self,
        portal: &str,
        statement: &str,
        param_formats: &[i16],
        params: &[Option<Bytes>],
        result_formats: &[i16],
    ) -> Result<(), PgError> {
        let r = (|| {
            let Some(prep) = self.statements.get(statement) else {
                return Err(if statement.is_empty() {
                    PgError::error(b"26000", "unnamed prepared statement does not exist")
                } else {
                    PgError::error(b"26000", format!("prepared statement \"{statement}\" does not exist"))
                });
            };
            if param_formats.len() > 1 && param_formats.len() != params.len() {
                return Err(PgError::protocol(format!(
                    "bind message has {} parameter formats but {} parameters",
                    param_formats.len(),
                    params.len()
                )));
            }
            if params.len() != prep.param_types.len() {
                return Err(PgError::protocol(format!(
                    "bind message supplies {} parameters, but prepared statement \"{statement}\" requires {}",
                    params.len(),
                    prep.param_types.len()
                )));
            }
            let stmt = prep.stmt.clone();
            self.check_not_aborted(&stmt)?;
            let ncols = self.columns(&stmt).map_or(0, |c| c.len());
            if result_formats.len() > 1 && result_formats.len() != ncols {
                return Err(PgError::protocol(format!(
                    "bind message has {} result formats but query has {ncols} columns",
                    result_formats.len()
                )));
            }
            if let Some(f) = result_formats.iter().find(|f| **f != 0 && **f != 1) {
                return Err(PgError::error(b"22023", format!("unsupported format code: {f}")));
            }
            if !portal.is_empty() && self.portals.contains_key(portal) {
                return Err(PgError::error(b"42P03", format!("cursor \"{portal}\" already exists")));
            }
            self.portals
                .insert(portal.to_string(), Portal { stmt, formats: result_formats.to_vec(), state: PortalState::NotStarted });
            Ok(())
        })();
        r.inspect_err(|_| self.on_error())
    }

    fn describe_statement(&mut self, name: &str) -> Result<StatementDescription, PgError> {
        let Some(prep) = self.statements.get(name) else {
            self.on_error();
            return Err(PgError::error(b"26000", format!("prepared statement \"{name}\" does not exist")));
        };
        let param_types = prep.param_types.iter().map(|t| if *t == 0 { TEXT } else { *t }).collect();
        let fields = self.columns(&prep.stmt).map(|c| c.iter().map(|(n, t)| field(n, *t, 0)).collect());
        Ok(StatementDescription { param_types, fields })
    }

    fn describe_portal(&mut self, name: &str) -> Result<Option<std::sync::Arc<[FieldInfo]>>, PgError> {
        let Some(portal) = self.portals.get(name) else {
            self.on_error();
            return Err(PgError::error(b"34000", format!("portal \"{name}\" does not exist")));
        };
        let fmt = portal.formats.first().copied().unwrap_or(0);
        Ok(self.columns(&portal.stmt).map(|c| c.iter().map(|(n, t)| field(n, *t, fmt)).collect()))
    }

    fn execute(&mut self, portal: &str, max_rows: u32, sink: &mut dyn ResultSink) -> Result<ExecuteOutcome, PgError> {
        let Some(mut p) = self.portals.remove(portal) else {
            self.on_error();
            return Err(PgError::error(b"34000", format!("portal \"{portal}\" does not exist")));
        };
        let r = (|| {
            self.check_not_aborted(&p.stmt)?;
            if matches!(p.state, PortalState::NotStarted) {
                p.state = self.start(&p.stmt, sink)?;
            }
            self.send_rows(&mut p.state, &p.formats, max_rows, sink)
        })();
        let ends_txn = matches!(p.stmt, Stmt::Commit | Stmt::Rollback);
        if r.is_ok() {
            self.portals.insert(portal.to_string(), p);
        } else {
            self.on_error();
        }
        if ends_txn {
            // The end of a transaction block drops its portals, this one included.
            self.portals.clear();
        }
        r
    }

    fn close_statement(&mut self, name: &str) -> Result<(), PgError> {
        self.statements.remove(name);
        Ok(())
    }

    fn close_portal(&mut self, name: &str) -> Result<(), PgError> {
        self.portals.remove(name);
        Ok(())
    }

    fn sync(&mut self) -> Result<(), PgError> {
        self.end_of_transaction();
        Ok(())
    }

    fn error_reported(&mut self) {
        if self.status == TransactionStatus::Transaction {
            self.status = TransactionStatus::Error;
        }
    }

    fn terminate(&mut self) {
        self.status = TransactionStatus::Idle;
        self.portals.clear();
        self.statements.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognizes_connection_time_statements() {
        assert_eq!(recognize("SELECT 1").unwrap(), Stmt::SelectInt(1));
        assert_eq!(recognize("  select   version ( ) ").unwrap(), Stmt::Version);
        assert_eq!(recognize("select pg_sleep(0.5)").unwrap(), Stmt::Sleep(0.5));
        assert_eq!(recognize("SET application_name = 'a b'").unwrap(), Stmt::Set("application_name".into(), "a b".into()));
        assert_eq!(recognize("set extra_float_digits to 3").unwrap(), Stmt::Set("extra_float_digits".into(), "3".into()));
        assert_eq!(
            recognize("select set_config('application_name', 'x', false)").unwrap(),
            Stmt::SetConfig("application_name".into(), "x".into())
        );
        assert_eq!(recognize("SHOW server_version").unwrap(), Stmt::Show("server_version".into()));
        assert_eq!(recognize("begin isolation level repeatable read").unwrap(), Stmt::Begin);
        assert_eq!(recognize("COMMIT").unwrap(), Stmt::Commit);
        assert_eq!(recognize("").unwrap(), Stmt::Empty);
        assert_eq!(
            recognize("SELECT pg_catalog.set_config('search_path', '', false)").unwrap(),
            Stmt::SetConfig("search_path".into(), "".into())
        );
    }

    #[test]
    fn everything_else_is_0a000() {
        for q in ["select * from t", "select 1 + 1", "create table t(a int)", "select 'abc", "commit foo"] {
            let e = recognize(q).unwrap_err();
            assert_eq!(e.sqlstate(), "0A000", "{q}");
            assert!(e.message.contains("the SQL layer is not built"));
        }
    }

    #[test]
    fn splits_outside_quotes() {
        assert_eq!(split_statements("select 1; set a = 'x;y'; "), vec!["select 1", " set a = 'x;y'", " "]);
    }
}
