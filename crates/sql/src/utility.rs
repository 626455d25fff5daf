//! Session-level utility commands that drivers send when they reset a pooled
//! connection (asyncpg's pool runs `CLOSE ALL; RESET ALL; DISCARD ALL`), and the
//! read-only transaction check.
//!
//! | statement | effect | tag |
//! |---|---|---|
//! | `DISCARD PLANS` | the session's cached simple-query plans are dropped | `DISCARD PLANS` |
//! | `DISCARD SEQUENCES` | currval/lastval forgotten | `DISCARD SEQUENCES` |
//! | `DISCARD TEMP` | the session's temporary relations dropped (in the current transaction) | `DISCARD TEMP` |
//! | `DISCARD ALL` | `CLOSE ALL`, `RESET ALL`, `DEALLOCATE ALL`, `pg_advisory_unlock_all()`, `DISCARD PLANS/SEQUENCES/TEMP`; 25001 inside a transaction block | `DISCARD ALL` |
//! | `RESET ALL` | every setting a session may change back to its default (transactional, like SET) | `RESET` |
//! | `CLOSE ALL` / `CLOSE name` | closes cursors (34000 `cursor "name" does not exist`) | `CLOSE CURSOR ALL` / `CLOSE CURSOR` |
//! | `DECLARE` / `FETCH` / `MOVE` through Parse/Bind/Execute | the cursor opened or read at Execute, with Bind's parameters; Describe of a FETCH gives the cursor's columns | `DECLARE CURSOR` / `FETCH n` / `MOVE n` |
//!
//! Read-only transactions (`START TRANSACTION READ ONLY`, `SET TRANSACTION READ
//! ONLY`, `default_transaction_read_only`): [`read_only_violation`] names the
//! command a plan would run that writes, as PostgreSQL's
//! `PreventCommandIfReadOnly` / `ExecCheckXactReadOnly` do (25006 `cannot
//! execute INSERT in a read-only transaction`); DML on a temporary table is
//! allowed, as in PostgreSQL.

use ferrogres_datum::errors::{Result, SqlError};
use crate::plan::Statement;
use pg_query::protobuf as pb;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiscardKind {
    All,
    Plans,
    Sequences,
    Temp,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionCmd {
    Discard(DiscardKind),
    ResetAll,
    /// `CLOSE name`; `None` is `CLOSE ALL`.
    Close(Option<String>),
    /// LISTEN, UNLISTEN (`None`: `*`), NOTIFY ([`crate::notify`]).
    Listen(String),
    Unlisten(Option<String>),
    Notify { channel: String, payload: String },
    /// `DECLARE name CURSOR FOR query` and `FETCH`/`MOVE` sent through the
    /// extended protocol (psycopg's named cursors, pgx): the session runs them
    /// at Execute (`Session::execute`); a simple query runs them directly.
    Declare(Box<DeclareCmd>),
    Fetch(FetchCmd),
    /// CREATE / DROP EXTENSION of an extension ferrogres has built in
    /// (pg_stat_statements): accepted, nothing to do. `true`: CREATE.
    BuiltinExtension(bool),
}

/// A DECLARE CURSOR whose query was analyzed at Parse (its `$n` parameters
/// come from Bind).
#[derive(Clone, Debug)]
pub struct DeclareCmd {
    pub name: String,
    /// parsenodes.h's CURSOR_OPT_* bits.
    pub options: i32,
    pub query: std::sync::Arc<Statement>,
    /// The privileges the query needs ([`crate::acl`]), checked when it opens.
    pub perms: std::sync::Arc<Vec<crate::acl::PermReq>>,
}

impl PartialEq for DeclareCmd {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name && self.options == other.options && std::sync::Arc::ptr_eq(&self.query, &other.query)
    }
}
impl Eq for DeclareCmd {}

/// FETCH / MOVE: the fields of pg_query's FetchStmt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchCmd {
    pub portalname: String,
    pub direction: i32,
    pub how_many: i64,
    pub ismove: bool,
}

impl FetchCmd {
    pub fn from_stmt(f: &pb::FetchStmt) -> FetchCmd {
        FetchCmd { portalname: f.portalname.clone(), direction: f.direction, how_many: f.how_many, ismove: f.ismove }
    }

    pub fn to_stmt(&self) -> pb::FetchStmt {
        pb::FetchStmt { portalname: self.portalname.clone(), direction: self.direction, how_many: self.how_many, ismove: self.ismove }
    }
}

impl SessionCmd {
    pub fn tag(&self) -> &'static str {
        match self {
            SessionCmd::Discard(DiscardKind::All) => "DISCARD ALL",
            SessionCmd::Discard(DiscardKind::Plans) => "DISCARD PLANS",
            SessionCmd::Discard(DiscardKind::Sequences) => "DISCARD SEQUENCES",
            SessionCmd::Discard(DiscardKind::Temp) => "DISCARD TEMP",
            SessionCmd::ResetAll => "RESET",
            SessionCmd::Close(None) => "CLOSE CURSOR ALL",
            SessionCmd::Close(Some(_)) => "CLOSE CURSOR",
            SessionCmd::Listen(_) => "LISTEN",
            SessionCmd::Unlisten(_) => "UNLISTEN",
            SessionCmd::Notify { .. } => "NOTIFY",
            SessionCmd::Declare(_) => "DECLARE CURSOR",
            SessionCmd::Fetch(f) if f.ismove => "MOVE",
            SessionCmd::Fetch(_) => "FETCH",
            SessionCmd::BuiltinExtension(true) => "CREATE EXTENSION",
            SessionCmd::BuiltinExtension(false) => "DROP EXTENSION",
        }
    }
}

/// Extensions ferrogres has built in: CREATE / DROP EXTENSION of them is a no-op.
pub const BUILTIN_EXTENSIONS: &[&str] = &["pg_stat_statements"];

/// CREATE EXTENSION: a built-in one is accepted; any other is not available
/// (PostgreSQL's error when its control file is missing).
pub fn analyze_create_extension(s: &pb::CreateExtensionStmt) -> Result<Statement> {
    if BUILTIN_EXTENSIONS.contains(&s.extname.as_str()) {
        return Ok(Statement::Utility(SessionCmd::BuiltinExtension(true)));
    }
    Err(SqlError::new(b"0A000", format!("extension \"{}\" is not available", s.extname))
        .with_hint("The extension must first be installed on the system where PostgreSQL is running."))
}

/// DROP EXTENSION of built-in ones only (anything else does not exist).
pub fn analyze_drop_extension(s: &pb::DropStmt) -> Result<Statement> {
    for o in &s.objects {
        let name = match o.node.as_ref() {
            Some(pb::node::Node::String(n)) => n.sval.clone(),
            _ => String::new(),
        };
        if !BUILTIN_EXTENSIONS.contains(&name.as_str()) && !s.missing_ok {
            return Err(SqlError::new(b"42704", format!("extension \"{name}\" does not exist")));
        }
    }
    Ok(Statement::Utility(SessionCmd::BuiltinExtension(false)))
}

pub fn analyze_discard(d: &pb::DiscardStmt) -> Result<Statement> {
    use pb::DiscardMode as M;
    let kind = match M::try_from(d.target).unwrap_or(M::Undefined) {
        M::DiscardAll => DiscardKind::All,
        M::DiscardPlans => DiscardKind::Plans,
        M::DiscardSequences => DiscardKind::Sequences,
        M::DiscardTemp => DiscardKind::Temp,
        M::Undefined => return Err(SqlError::internal("DISCARD without a target")),
    };
    Ok(Statement::Utility(SessionCmd::Discard(kind)))
}

pub fn analyze_close(c: &pb::ClosePortalStmt) -> Statement {
    Statement::Utility(SessionCmd::Close((!c.portalname.is_empty()).then(|| c.portalname.clone())))
}

/// Settings RESET ALL leaves alone (PostgreSQL's GUC_NO_RESET_ALL).
pub fn reset_all_skips(name: &str) -> bool {
    matches!(
        name.to_ascii_lowercase().as_str(),
        "transaction_isolation" | "transaction_read_only" | "transaction_deferrable" | "session_authorization" | "role"
    )
}

/// The command a plan runs that a read-only transaction refuses, with the
/// namespace of the table it writes when it is DML (a temporary table's may be
/// written). `None`: the plan does not write.
pub fn read_only_violation(plan: &Statement) -> Option<(&'static str, Option<u32>)> {
    use crate::constraints::DdlCmd;
    use crate::index::IndexCmd;
    Some(match plan {
        Statement::Insert { table, .. } => ("INSERT", Some(table.namespace)),
        Statement::InsertSelect(i) => ("INSERT", Some(i.table.namespace)),
        Statement::Upsert(u) => ("INSERT", Some(u.table.namespace)),
        Statement::Update { table, .. } => ("UPDATE", Some(table.namespace)),
        Statement::Delete { table, .. } => ("DELETE", Some(table.namespace)),
        Statement::JoinedDml(j) => match j.action {
            crate::dml_join::JoinedAction::Update(_) => ("UPDATE", Some(j.table.namespace)),
            crate::dml_join::JoinedAction::Delete => ("DELETE", Some(j.table.namespace)),
        },
        Statement::Merge(m) => ("MERGE", Some(m.table.namespace)),
        Statement::Copy(c) if c.is_from => ("COPY FROM", c.table.as_ref().map(|t| t.namespace)),
        Statement::WithDml(w) => {
            // The first data-modifying statement is the one PostgreSQL names.
            return w.ctes.iter().map(|(_, s)| s).chain(std::iter::once(&w.main)).find_map(read_only_violation);
        }
        Statement::Explain(_) => return None,
        Statement::CreateTable { .. } => ("CREATE TABLE", None),
        Statement::CreateTableAs(c) if c.form == crate::plan::CtasForm::SelectInto => ("SELECT INTO", None),
        Statement::CreateTableAs(_) => ("CREATE TABLE AS", None),
        Statement::DropTables { .. } => ("DROP TABLE", None),
        Statement::Lock { mode, .. } if (*mode as u8) > (ferrogres_engine::lmgr::lock::LockMode::RowExclusive as u8) => ("LOCK TABLE", None),
        Statement::Index(cmd) => match cmd {
            IndexCmd::CreateIndex { .. } => ("CREATE INDEX", None),
            IndexCmd::CreateTable { .. } => ("CREATE TABLE", None),
            IndexCmd::AddConstraints { .. } => ("ALTER TABLE", None),
            IndexCmd::DropIndexes { .. } => ("DROP INDEX", None),
            IndexCmd::Truncate { .. } => ("TRUNCATE TABLE", None),
            _ => return None,
        },
        Statement::Ddl(d) => match &**d {
            DdlCmd::Seq(crate::sequence::SeqCmd::Create { .. }) => ("CREATE SEQUENCE", None),
            DdlCmd::Seq(crate::sequence::SeqCmd::Alter { .. }) => ("ALTER SEQUENCE", None),
            DdlCmd::Seq(crate::sequence::SeqCmd::Drop { .. }) => ("DROP SEQUENCE", None),
            DdlCmd::CreateTable { .. } => ("CREATE TABLE", None),
            DdlCmd::AddConstraint { .. } | DdlCmd::Alter(_) => ("ALTER TABLE", None),
            DdlCmd::Rename(_) => ("ALTER TABLE", None),
            DdlCmd::Schema(crate::namespace::ddl::SchemaCmd::Create { .. }) => ("CREATE SCHEMA", None),
            DdlCmd::Schema(crate::namespace::ddl::SchemaCmd::Drop { .. }) => ("DROP SCHEMA", None),
            DdlCmd::Schema(crate::namespace::ddl::SchemaCmd::Rename { .. }) => ("ALTER SCHEMA", None),
            DdlCmd::View(crate::view::ViewCmd::Create { .. }) => ("CREATE VIEW", None),
            DdlCmd::View(crate::view::ViewCmd::Drop { .. }) => ("DROP VIEW", None),
            DdlCmd::View(crate::view::ViewCmd::DropTablesCascade { .. }) => ("DROP TABLE", None),
            DdlCmd::Func(crate::sqlfunc::FuncCmd::Create { .. }) => ("CREATE FUNCTION", None),
            DdlCmd::Func(crate::sqlfunc::FuncCmd::Drop { .. }) => ("DROP FUNCTION", None),
        },
        Statement::Database(cmd) => match cmd {
            crate::database::DbCmd::Create { .. } => ("CREATE DATABASE", None),
            crate::database::DbCmd::Drop { .. } => ("DROP DATABASE", None),
            _ => ("ALTER DATABASE", None),
        },
        _ => return None,
    })
}

/// PostgreSQL's 25006 for a write in a read-only transaction.
pub fn read_only_error(cmd: &str) -> SqlError {
    SqlError::new(b"25006", format!("cannot execute {cmd} in a read-only transaction"))
}
