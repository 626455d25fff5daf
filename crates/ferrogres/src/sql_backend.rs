//! The adapter between the wire server and the SQL layer: a
//! `ferrogres_server::Backend` whose sessions are `ferrogres_sql::Session`s.
//!
//! This is where the wire formats live: a value's text or binary form per the
//! result format codes, RowDescription's type OID / typlen / typmod, parameter
//! format codes, and the conversion of errors and notices between the two
//! crates' types. Neither crate depends on the other.

use bytes::Bytes;
use ferrogres_engine::config::guc;
use ferrogres_engine::engine::Engine;
use ferrogres_server::handler::{
    pg15_reported_parameters, version_string, ExecuteOutcome, FieldInfo, IdleTimeouts, Interrupts, ResultSink, StartupInfo,
    StatementDescription, TransactionStatus, SERVER_VERSION_NUM,
};
use ferrogres_server::{Backend, PgError, Session, Severity};
use ferrogres_sql::copy::CopyInEvent;
use ferrogres_sql::{session, ColumnDesc, Output, ParamValue, SqlError, Value};
use std::sync::Arc;

pub struct SqlBackend {
    engine: Arc<Engine>,
    /// Settings given at start (`-c`, the configuration files), canonical: the
    /// sessions' defaults. A reload replaces the list; sessions that started
    /// before keep theirs.
    overrides: std::sync::RwLock<Arc<Vec<(String, String)>>>,
}

impl SqlBackend {
    /// Bootstraps the catalog if the data directory is new. `overrides` are the
    /// settings given at start, checked already (options.rs), in SHOW's form.
    pub fn new(engine: Arc<Engine>, overrides: Vec<(String, String)>) -> Result<SqlBackend, String> {
        ferrogres_sql::catalog::bootstrap(&engine).map_err(|e| format!("could not bootstrap the catalog: {}", e.message))?;
        // In every database: temporary tables of sessions of a server that
        // stopped or crashed (a failure leaves them in place, invisible to new
        // sessions), then relation files a crash left without a pg_class row
        // (engine txn::pending_delete).
        ferrogres_sql::database::for_each_database(&engine, |_| {
            if let Err(e) = ferrogres_sql::namespace::remove_orphan_temp_schemas(&engine) {
                eprintln!("WARNING:  could not remove old temporary schemas: {}", e.message);
            }
            ferrogres_sql::catalog::remove_orphan_files(&engine).map(|_| ())
        })
        .map_err(|e| format!("could not remove orphan relation files: {}", e.message))?;
        Ok(SqlBackend { engine, overrides: std::sync::RwLock::new(Arc::new(overrides)) })
    }

    /// The session defaults after a reload of the configuration files.
    pub fn set_overrides(&self, overrides: Vec<(String, String)>) {
        *self.overrides.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(overrides);
    }
}

fn to_pg(e: SqlError) -> PgError {
    let severity = match e.severity {
        ferrogres_sql::Severity::Error => Severity::Error,
        ferrogres_sql::Severity::Fatal => Severity::Fatal,
        ferrogres_sql::Severity::Warning => Severity::Warning,
        ferrogres_sql::Severity::Notice => Severity::Notice,
    };
    let objects = e.objects.map(|o| Box::new(ferrogres_server::error::ObjectFields(o.wire_fields())));
    PgError { severity, code: e.code, message: e.message, detail: e.detail, hint: e.hint, position: e.position, context: e.context, objects }
}

fn to_sql(e: PgError) -> SqlError {
    let severity = match e.severity {
        Severity::Fatal | Severity::Panic => ferrogres_sql::Severity::Fatal,
        _ => ferrogres_sql::Severity::Error,
    };
    SqlError { severity, code: e.code, message: e.message, detail: e.detail, hint: e.hint, position: e.position, context: e.context, objects: None }
}

impl Backend for SqlBackend {
    fn role_auth(&self, user: &str, pid: i32) -> Option<ferrogres_server::handler::RoleAuth> {
        let mut backend = self.engine.backend(pid).ok()?;
        let row = ferrogres_sql::roles::login_role(&mut backend, user).ok()??;
        Some(ferrogres_server::handler::RoleAuth { superuser: row.superuser, expired: row.expired(), password: row.password })
    }

    fn is_member(&self, user: &str, group: &str) -> bool {
        // Before a slot is taken: a backend of the startup's own (pid 0 is never a session's).
        let Ok(mut backend) = self.engine.backend(0) else { return false };
        ferrogres_sql::roles::user_in_group(&mut backend, user, group).unwrap_or(false)
    }

    fn connection_stack_size(&self) -> usize {
        ferrogres_datum::stack_depth::connection_stack_size()
    }

    fn engine(&self) -> Option<Arc<Engine>> {
        Some(self.engine.clone())
    }

    fn pid_in_use(&self, pid: i32) -> bool {
        // Auxiliary threads are listed by their thread ids.
        self.engine.activity.backend_of_pid(pid).is_some()
    }

    fn new_session(&self, startup: &StartupInfo, interrupts: Arc<Interrupts>) -> Result<Box<dyn Session>, PgError> {
        let mut backend = self.engine.backend(startup.backend_pid).map_err(|e| {
            let mut p = to_pg(e.into());
            p.severity = Severity::Fatal;
            p
        })?;
        // The role must exist and may log in (28000), within its connection
        // limit (53300), checked before the database, as PostgreSQL's
        // InitPostgres does; its ALTER ROLE ... SET settings apply below.
        let engine = self.engine.clone();
        let role = ferrogres_sql::roles::connect(&mut backend, &startup.user, |role| {
            engine.activity.rows().iter().filter(|r| r.info.backend_type == "client backend" && r.info.usesysid == Some(role)).count()
        })
        .map_err(|e| {
            let mut p = to_pg(e);
            p.severity = Severity::Fatal;
            p
        })?;
        let role_oid = role.oid;
        let role_settings = role.settings();
        // The database must exist and accept connections (3D000, 55000: FATAL).
        // A physical walsender belongs to no database (PostgreSQL's); its SHOW
        // runs in a session of "postgres".
        let database = if startup.replication == ferrogres_server::handler::Replication::Physical {
            "postgres"
        } else {
            startup.database.as_str()
        };
        ferrogres_sql::database::connect(&mut backend, database).map_err(|e| {
            let mut p = to_pg(e);
            p.severity = Severity::Fatal;
            p
        })?;
        // Every known setting (the table in ferrogres_engine::config::guc), with
        // its boot value, then what this connection's startup says (user,
        // application_name, TimeZone, server_version), then the server's `-c`
        // settings; custom placeholders (`ext.name`) given at start too.
        let mut settings: Vec<session::Setting> = guc::GUCS
            .iter()
            .map(|g| session::Setting { name: g.name.into(), value: g.boot.into(), default: g.boot.into(), reported: g.report })
            .collect();
        let mut put = |name: &str, v: &str| match settings.iter_mut().find(|s| s.name.eq_ignore_ascii_case(name)) {
            Some(s) => {
                s.value = v.to_string();
                s.default = v.to_string();
            }
            None => settings.push(session::Setting { name: name.into(), value: v.into(), default: v.into(), reported: false }),
        };
        let reported = pg15_reported_parameters(startup);
        for (k, v) in &reported {
            put(k, v);
        }
        put("server_version_num", SERVER_VERSION_NUM);
        put("is_superuser", if role.superuser { "on" } else { "off" });
        // This thread's: the default, or less on a smaller stack (stack_depth).
        put("max_stack_depth", &ferrogres_datum::stack_depth::default_setting());
        let overrides = self.overrides.read().unwrap_or_else(|p| p.into_inner()).clone();
        for (k, v) in overrides.iter() {
            put(k, v);
        }
        if !startup.application_name.is_empty() {
            put("application_name", &startup.application_name);
        }
        {
            // A cancel request also wakes a heavyweight lock wait (57014).
            let locks = self.engine.locks.clone();
            let id = backend.id();
            interrupts.set_on_cancel(Box::new(move || {
                let _ = locks.cancel(id);
            }));
        }
        {
            // pg_stat_activity's slot, and how pg_cancel_backend /
            // pg_terminate_backend reach this session.
            use ferrogres_engine::pgstat::activity::{BackendInfo, BackendSignal, BackendState};
            let (client_addr, client_port) = match startup.client_addr.rsplit_once(':') {
                Some((a, p)) if startup.client_addr != "[local]" => {
                    (Some(a.trim_start_matches('[').trim_end_matches(']').to_string()), p.parse().ok())
                }
                _ => (None, Some(-1)),
            };
            let info = BackendInfo {
                pid: startup.backend_pid,
                backend_type: if startup.replication == ferrogres_server::handler::Replication::No {
                    "client backend"
                } else {
                    "walsender"
                },
                datid: Some(backend.database()),
                datname: Some(startup.database.clone()),
                usesysid: Some(role_oid),
                usename: Some(startup.user.clone()),
                application_name: startup.application_name.clone(),
                client_addr,
                client_port,
                ssl: startup.ssl.as_ref().map(|t| (t.version.clone(), t.cipher.clone(), t.bits)),
            };
            let activity = &self.engine.activity;
            activity.start(backend.id(), info, BackendState::Idle);
            let int = interrupts.clone();
            activity.set_signal_hook(
                backend.id(),
                Arc::new(move |sig| match sig {
                    BackendSignal::Cancel => int.request_cancel(),
                    BackendSignal::Terminate => int.request_terminate(),
                }),
            );
        }
        let int = interrupts.clone();
        let timer = interrupts.clone();
        let env = session::SessionEnv {
            settings,
            changed: Vec::new(),
            pid: startup.backend_pid,
            version: version_string(),
            interrupts: Box::new(move || int.check().map_err(to_sql)),
            statement_timer: Box::new(move |t| timer.set_statement_deadline(t)),
            locks: None,
            settings_gen: 0,
        };
        let mut s = ferrogres_sql::Session::new(backend, env);
        // Settings from the startup packet: `options` (PGOPTIONS) first, then the
        // packet's own pairs, which win. A bad one is FATAL, as in PostgreSQL.
        let mut gucs: Vec<(String, String)> = Vec::new();
        for (k, v) in &startup.parameters {
            if k == "options" {
                gucs.splice(0..0, ferrogres_server::handler::parse_startup_options(v));
            } else if !matches!(k.as_str(), "user" | "database" | "application_name" | "replication") && !k.starts_with("_pq_.") {
                gucs.push((k.clone(), v.clone()));
            }
        }
        // A superuser-only setting from the packet needs SET on it (pg_parameter_acl),
        // as in PostgreSQL 15; the role's own settings (ALTER ROLE ... SET) were
        // checked when they were stored.
        if !role.superuser {
            let names: Vec<&str> = gucs.iter().map(|(k, _)| k.as_str()).filter(|k| ferrogres_sql::param_acl::set_needs_check(k)).collect();
            if !names.is_empty() {
                s.check_startup_settings(&names).map_err(|e| {
                    let mut p = to_pg(e);
                    p.severity = Severity::Fatal;
                    p
                })?;
            }
        }
        // The role's own settings come before the startup packet's (PostgreSQL:
        // pg_db_role_setting is applied in InitPostgres, the packet's options after).
        for (k, v) in role_settings.iter().rev() {
            gucs.insert(0, (k.clone(), v.clone()));
        }
        for (k, v) in &gucs {
            s.env.set(k, Some(v)).map_err(|e| {
                let mut p = to_pg(e);
                p.severity = Severity::Fatal;
                p
            })?;
        }
        s.env.changed.clear();
        // PostgreSQL counts client backends' sessions only (not walsenders').
        if startup.replication == ferrogres_server::handler::Replication::No {
            s.report_connect();
        }
        Ok(Box::new(SqlSession { s, portal_formats: PortalFormats::default(), fields_memo: None }))
    }
}

struct SqlSession {
    s: ferrogres_sql::Session,
    /// Result format codes of each bound portal (the wire layer's business).
    /// Portals end with their transaction inside the SQL session; entries of
    /// ended ones are dropped where transactions end (after a simple query and
    /// at Sync), so the map never outgrows the live portals.
    portal_formats: PortalFormats,
    /// The last description sent, for the columns (the session's shared
    /// description) and result formats it was made for: a prepared
    /// statement's Describe per execution builds nothing.
    fields_memo: Option<FieldsMemo>,
}

/// A description sent: the session's columns (compared by pointer), the
/// result formats, and the fields made from them.
type FieldsMemo = (Arc<[ColumnDesc]>, Vec<i16>, Arc<[FieldInfo]>);

impl SqlSession {
    fn forget_ended_portals(&mut self) {
        let s = &self.s;
        self.portal_formats.named.retain(|name, _| s.has_portal(name));
        if !s.has_portal("") {
            self.portal_formats.unnamed.clear();
        }
    }
}

/// Result format codes of the bound portals. The unnamed portal's (the one
/// every driver's extended-protocol query uses) live in a buffer reused from
/// Bind to Bind: no allocation and no hashing on that path.
#[derive(Default)]
struct PortalFormats {
    unnamed: Vec<i16>,
    named: rustc_hash::FxHashMap<String, Vec<i16>>,
}

impl PortalFormats {
    fn get(&self, portal: &str) -> &[i16] {
        if portal.is_empty() {
            &self.unnamed
        } else {
            self.named.get(portal).map_or(&[], |v| v.as_slice())
        }
    }

    fn set(&mut self, portal: &str, formats: &[i16]) {
        if portal.is_empty() {
            self.unnamed.clear();
            self.unnamed.extend_from_slice(formats);
        } else {
            self.named.insert(portal.to_string(), formats.to_vec());
        }
    }

    fn remove(&mut self, portal: &str) {
        if portal.is_empty() {
            self.unnamed.clear();
        } else {
            self.named.remove(portal);
        }
    }

    fn clear(&mut self) {
        self.unnamed.clear();
        self.named.clear();
    }
}

fn field(c: &ColumnDesc, format: i16) -> FieldInfo {
    FieldInfo {
        name: c.name.clone(),
        table_oid: c.table_oid,
        column_id: c.column_id,
        type_oid: c.ty.oid(),
        type_size: c.ty.typlen(),
        type_modifier: c.typmod,
        format,
    }
}

fn format_of(formats: &[i16], i: usize) -> i16 {
    match formats.len() {
        0 => 0,
        1 => formats[0],
        _ => formats.get(i).copied().unwrap_or(0),
    }
}

/// Sends results to the wire sink in the given formats.
struct Sink<'a> {
    sink: &'a mut dyn ResultSink,
    formats: &'a [i16],
}

impl Output for Sink<'_> {
    fn row_description(&mut self, cols: &[ColumnDesc]) -> ferrogres_sql::Result<()> {
        let f: Vec<FieldInfo> = cols.iter().enumerate().map(|(i, c)| field(c, format_of(self.formats, i))).collect();
        self.sink.row_description(&f).map_err(to_sql)
    }
    fn row(&mut self, row: &[Value]) -> ferrogres_sql::Result<()> {
        let encoded: Vec<Option<Vec<u8>>> = row
            .iter()
            .enumerate()
            .map(|(i, v)| {
                if format_of(self.formats, i) == 1 {
                    ferrogres_datum::types::send(v)
                } else {
                    ferrogres_datum::types::output(v).map(String::into_bytes)
                }
            })
            .collect();
        let refs: Vec<Option<&[u8]>> = encoded.iter().map(|v| v.as_deref()).collect();
        self.sink.data_row(&refs).map_err(to_sql)
    }
    fn command_complete(&mut self, tag: &str) -> ferrogres_sql::Result<()> {
        self.sink.command_complete(tag).map_err(to_sql)
    }
    fn empty_query(&mut self) -> ferrogres_sql::Result<()> {
        self.sink.empty_query().map_err(to_sql)
    }
    fn notice(&mut self, n: &SqlError) -> ferrogres_sql::Result<()> {
        self.sink.notice(&to_pg(n.clone())).map_err(to_sql)
    }
    fn copy_in_start(&mut self, ncols: usize, binary: bool) -> ferrogres_sql::Result<()> {
        let f = binary as i16;
        self.sink.copy_in_start(f as i8, &vec![f; ncols]).map_err(to_sql)
    }
    fn copy_in_read(&mut self) -> ferrogres_sql::Result<CopyInEvent> {
        Ok(match self.sink.copy_in_read().map_err(to_sql)? {
            ferrogres_server::handler::CopyInEvent::Data(b) => CopyInEvent::Data(b.to_vec()),
            ferrogres_server::handler::CopyInEvent::Done => CopyInEvent::Done,
            ferrogres_server::handler::CopyInEvent::Fail(m) => CopyInEvent::Fail(m),
        })
    }
    fn copy_out_start(&mut self, ncols: usize, binary: bool) -> ferrogres_sql::Result<()> {
        let f = binary as i16;
        self.sink.copy_out_start(f as i8, &vec![f; ncols]).map_err(to_sql)
    }
    fn copy_data(&mut self, data: &[u8]) -> ferrogres_sql::Result<()> {
        self.sink.copy_data(data).map_err(to_sql)
    }
    fn copy_done(&mut self) -> ferrogres_sql::Result<()> {
        self.sink.copy_done().map_err(to_sql)
    }
}

impl Session for SqlSession {
    fn reported_parameters(&self) -> Vec<(String, String)> {
        self.s.env.settings.iter().filter(|s| s.reported).map(|s| (s.name.clone(), s.value.clone())).collect()
    }

    fn take_parameter_changes(&mut self) -> Vec<(String, String)> {
        self.s.take_parameter_changes()
    }

    fn transaction_status(&self) -> TransactionStatus {
        match self.s.status() {
            ferrogres_sql::TxnStatus::Idle => TransactionStatus::Idle,
            ferrogres_sql::TxnStatus::InBlock => TransactionStatus::Transaction,
            ferrogres_sql::TxnStatus::Failed => TransactionStatus::Error,
        }
    }

    fn execute_simple(&mut self, sql: &str, sink: &mut dyn ResultSink) -> Result<(), PgError> {
        let mut out = Sink { sink, formats: &[] };
        let r = self.s.execute_simple(sql, &mut out).map_err(to_pg);
        self.forget_ended_portals();
        r
    }

    fn parse(&mut self, name: &str, sql: &str, param_types: &[u32]) -> Result<(), PgError> {
        self.s.parse(name, sql, param_types).map_err(to_pg)
    }

    fn bind(
        &mut self,
        portal: &str,
        statement: &str,
        param_formats: &[i16],
        params: &[Option<Bytes>],
        result_formats: &[i16],
    ) -> Result<(), PgError> {
        // PostgreSQL looks the statement up first (26000 from `s.bind`), then
        // checks the counts. These errors fail the transaction like any other.
        if self.s.has_statement(statement) {
            if param_formats.len() > 1 && param_formats.len() != params.len() {
                self.s.fail_transaction();
                return Err(PgError::protocol(format!(
                    "bind message has {} parameter formats but {} parameters",
                    param_formats.len(),
                    params.len()
                )));
            }
            // Parameter format codes are checked where they apply, as PostgreSQL
            // reads each parameter; result format codes when rows are sent
            // (`execute`), as printtup does.
            if let Some(f) = param_formats.iter().find(|f| **f != 0 && **f != 1).filter(|_| !params.is_empty()) {
                self.s.fail_transaction();
                return Err(PgError::error(b"22023", format!("unsupported format code: {f}")));
            }
        }
        let values: Vec<ParamValue<'_>> = params
            .iter()
            .enumerate()
            .map(|(i, p)| match p {
                None => ParamValue::Null,
                Some(b) if format_of(param_formats, i) == 1 => ParamValue::Binary(b),
                Some(b) => ParamValue::Text(b),
            })
            .collect();
        self.s.bind(portal, statement, &values).map_err(to_pg)?;
        // A portal without a result (BEGIN, INSERT) takes any result formats, as
        // PostgreSQL's PortalSetResultFormat does.
        let ncols = self.s.describe_portal(portal).map_err(to_pg)?.map(|c| c.len());
        if let Some(ncols) = ncols.filter(|&n| result_formats.len() > 1 && result_formats.len() != n) {
            self.s.close_portal(portal);
            self.s.fail_transaction();
            return Err(PgError::protocol(format!(
                "bind message has {} result formats but query has {ncols} columns",
                result_formats.len()
            )));
        }
        self.portal_formats.set(portal, result_formats);
        Ok(())
    }

    fn describe_statement(&mut self, name: &str) -> Result<StatementDescription, PgError> {
        let (params, cols) = self.s.describe_statement(name).map_err(to_pg)?;
        Ok(StatementDescription {
            param_types: params.iter().map(|t| t.oid()).collect(),
            fields: cols.map(|c| c.iter().map(|c| field(c, 0)).collect()),
        })
    }

    fn describe_portal(&mut self, name: &str) -> Result<Option<Arc<[FieldInfo]>>, PgError> {
        let Some(cols) = self.s.describe_portal(name).map_err(to_pg)? else { return Ok(None) };
        let formats = self.portal_formats.get(name);
        if let Some((c, f, fields)) = &self.fields_memo {
            if Arc::ptr_eq(c, &cols) && f.as_slice() == formats {
                return Ok(Some(fields.clone()));
            }
        }
        let fields: Arc<[FieldInfo]> = cols.iter().enumerate().map(|(i, c)| field(c, format_of(formats, i))).collect();
        self.fields_memo = Some((cols, formats.to_vec(), fields.clone()));
        Ok(Some(fields))
    }

    fn execute(&mut self, portal: &str, max_rows: u32, sink: &mut dyn ResultSink) -> Result<ExecuteOutcome, PgError> {
        let formats = self.portal_formats.get(portal);
        if let Some(f) = formats.iter().find(|f| **f != 0 && **f != 1) {
            if self.s.describe_portal(portal).map_err(to_pg)?.is_some_and(|c| !c.is_empty()) {
                self.s.fail_transaction();
                return Err(PgError::error(b"22023", format!("unsupported format code: {f}")));
            }
        }
        let mut out = Sink { sink, formats };
        Ok(match self.s.execute(portal, max_rows, &mut out).map_err(to_pg)? {
            ferrogres_sql::ExecOutcome::Completed(tag) => ExecuteOutcome::Completed(tag),
            ferrogres_sql::ExecOutcome::Suspended => ExecuteOutcome::Suspended,
            ferrogres_sql::ExecOutcome::EmptyQuery => ExecuteOutcome::EmptyQuery,
        })
    }

    fn close_statement(&mut self, name: &str) -> Result<(), PgError> {
        self.s.close_statement(name);
        Ok(())
    }

    fn close_portal(&mut self, name: &str) -> Result<(), PgError> {
        self.s.close_portal(name);
        self.portal_formats.remove(name);
        Ok(())
    }

    fn sync(&mut self) -> Result<(), PgError> {
        let r = self.s.sync().map_err(to_pg);
        self.forget_ended_portals();
        r
    }

    fn error_reported(&mut self) {
        self.s.fail_transaction();
    }

    fn disconnected(&mut self, how: ferrogres_server::handler::Disconnect) {
        use ferrogres_engine::engine::DisconnectCause as C;
        use ferrogres_server::handler::Disconnect as D;
        self.s.report_disconnect(match how {
            D::Normal => C::Normal,
            D::ClientEof => C::ClientEof,
            D::Fatal => C::Fatal,
            D::Killed => C::Killed,
        });
    }

    fn terminate(&mut self) {
        self.s.terminate();
        self.portal_formats.clear();
    }

    fn idle_timeouts(&self) -> IdleTimeouts {
        let (session, in_transaction) = self.s.idle_timeouts();
        IdleTimeouts { session, in_transaction }
    }

    fn stats_flush_due(&self) -> Option<std::time::Duration> {
        self.s.pgstat_flush_due()
    }

    fn flush_stats(&mut self) {
        self.s.pgstat_flush();
    }

    fn take_notifications(&mut self) -> Vec<(i32, String, String)> {
        self.s.take_notifications().into_iter().map(|n| (n.pid, n.channel, n.payload)).collect()
    }

    fn notify_flag(&self) -> Option<Arc<ferrogres_engine::notify::NotifySignal>> {
        self.s.notify_flag()
    }
}
