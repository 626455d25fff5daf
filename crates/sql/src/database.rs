//! Databases: the shared catalog pg_database, the database a session works in,
//! CREATE / DROP / ALTER DATABASE, and the checks made at connection time.
//!
//! As in PostgreSQL, each database has its own catalogs (pg_class, pg_attribute,
//! ... in `base/<dboid>/`) and user relations; pg_database itself is shared
//! (`global/1262`). Bootstrap ([`bootstrap`]) makes PostgreSQL 15 initdb's three
//! databases: template1 (OID 1), template0 (OID 4, no connections) and postgres
//! (OID 5), each with catalogs of its own. CREATE DATABASE copies the template's
//! directory (`Engine::create_database_dir`, WAL-logged, see the engine's
//! `engine::dbcommands`); DROP DATABASE removes it after the row's deletion commits.
//!
//! The current database: a session is bound to one database for its life (psql's
//! `\c` opens a new connection). Its OID is kept in the engine `Backend`
//! (`Backend::database`, which also makes the backend count as a user of the
//! database for the 55006 checks) and, for the catalog code that builds relation
//! locators without a backend at hand ([`crate::catalog::locator`]), in a
//! per-thread value set at connection and again before each statement
//! ([`sync`]): a backend is used only on the thread that started it.
//!
//! Serialization: connecting, CREATE DATABASE and DROP DATABASE hold
//! [`DATABASE_LOCK`] while they check for other users and change pg_database and
//! the files (PostgreSQL takes a lock on the database object instead), so no
//! session connects to a database being dropped or to a template being copied.
//!
//! Stored columns of pg_database (the view in [`crate::pgcatalog`] adds
//! PostgreSQL 15's constant ones): oid, datname, datdba, encoding, datistemplate,
//! datallowconn, datconnlimit, datcollate, datctype, datacl (text form or NULL).

use ferrogres_datum::errors::{Result, SqlError};
use crate::rowio::{insert_row, scan_rows, RelStorage};
use crate::session::Output;
use ferrogres_datum::types::{Type, Value};
use ferrogres_engine::engine::{Backend, Engine, POSTGRES_DATABASE_OID};
use ferrogres_engine::heap::tuple::Tid;
use ferrogres_engine::storage::smgr::GLOBALTABLESPACE_OID;
use ferrogres_engine::storage::{ForkNumber, RelFileLocator};
use ferrogres_engine::txn::snapshot::Snapshot;
use ferrogres_engine::txn::visibility::TmResult;
use ferrogres_engine::txn::IsolationLevel;
use pg_query::protobuf as pb;
use pg_query::NodeEnum;
use std::cell::Cell;
use std::sync::{Arc, Mutex};

/// pg_database's relation OID and relfilenode (in `global/`).
pub const PG_DATABASE: u32 = 1262;
pub const TEMPLATE1_OID: u32 = 1;
pub const TEMPLATE0_OID: u32 = 4;
/// UTF8 (PostgreSQL's PG_UTF8).
const ENCODING_UTF8: i32 = 6;
/// datacl of template0 and template1 after initdb.
const TEMPLATE_ACL: &str = "{=c/postgres,postgres=CTc/postgres}";
/// PostgreSQL's CountOtherDBBackends waits up to 5 s for other sessions to go.
const BUSY_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Held while connecting and while CREATE / DROP / ALTER DATABASE run.
pub static DATABASE_LOCK: Mutex<()> = Mutex::new(());

thread_local! {
    static CURRENT: Cell<u32> = const { Cell::new(POSTGRES_DATABASE_OID) };
}

/// The database of the session running on this thread.
pub fn current() -> u32 {
    CURRENT.with(|c| c.get())
}

/// Makes `db` the current database of this thread.
pub fn enter(db: u32) {
    CURRENT.with(|c| c.set(db));
}

/// Points the thread's current database at the backend's (before each statement).
pub fn sync(backend: &Backend) {
    enter(backend.database());
}

/// Runs `f` with `db` as this thread's current database.
fn with_db<T>(db: u32, f: impl FnOnce() -> T) -> T {
    let saved = current();
    enter(db);
    let r = f();
    enter(saved);
    r
}

fn database_rel() -> RelStorage {
    RelStorage {
        rel: RelFileLocator { spc_oid: GLOBALTABLESPACE_OID, db_oid: 0, rel_number: PG_DATABASE },
        toast: None,
        types: vec![
            Type::Oid,
            Type::Text,
            Type::Oid,
            Type::Int4,
            Type::Bool,
            Type::Bool,
            Type::Int4,
            Type::Text,
            Type::Text,
            Type::Text,
        ],
        missing: Vec::new(),
        proj: None,
        system: None,
    }
}

/// One row of pg_database.
#[derive(Clone, Debug, PartialEq)]
pub struct DbRow {
    pub oid: u32,
    pub name: String,
    pub dba: u32,
    pub encoding: i32,
    pub is_template: bool,
    pub allow_conn: bool,
    pub conn_limit: i32,
    pub collate: String,
    pub ctype: String,
    pub acl: Option<String>,
}

impl DbRow {
    fn values(&self) -> Vec<Value> {
        vec![
            Value::Oid(self.oid),
            Value::Text(self.name.clone()),
            Value::Oid(self.dba),
            Value::Int4(self.encoding),
            Value::Bool(self.is_template),
            Value::Bool(self.allow_conn),
            Value::Int4(self.conn_limit),
            Value::Text(self.collate.clone()),
            Value::Text(self.ctype.clone()),
            self.acl.clone().map_or(Value::Null, Value::Text),
        ]
    }

    fn from_values(r: &[Value]) -> Option<DbRow> {
        match r {
            [Value::Oid(oid), Value::Text(name), Value::Oid(dba), Value::Int4(enc), Value::Bool(t), Value::Bool(a), Value::Int4(l), Value::Text(co), Value::Text(ct), acl] => {
                Some(DbRow {
                    oid: *oid,
                    name: name.clone(),
                    dba: *dba,
                    encoding: *enc,
                    is_template: *t,
                    allow_conn: *a,
                    conn_limit: *l,
                    collate: co.clone(),
                    ctype: ct.clone(),
                    acl: match acl {
                        Value::Text(s) => Some(s.clone()),
                        _ => None,
                    },
                })
            }
            _ => None,
        }
    }
}

/// Runs `f` once for each database, with it as this thread's current database
/// (startup work that is per database: orphaned temporary schemas and files).
pub fn for_each_database(engine: &Arc<Engine>, mut f: impl FnMut(u32) -> Result<()>) -> Result<()> {
    let mut backend = engine.backend(std::process::id() as i32)?;
    backend.txn.begin(ferrogres_engine::txn::IsolationLevel::ReadCommitted)?;
    let oids = backend.txn.statement_snapshot().map_err(SqlError::from).and_then(|snap| list(&backend, &snap));
    backend.txn.commit()?;
    drop(backend);
    for (_, d) in oids? {
        with_db(d.oid, || f(d.oid))?;
    }
    Ok(())
}

/// Every database as `snap` sees pg_database, with the row's TID.
pub fn list(backend: &Backend, snap: &Snapshot) -> Result<Vec<(Tid, DbRow)>> {
    let mut out = Vec::new();
    for (tid, r) in scan_rows(backend, &database_rel(), snap)? {
        let row = DbRow::from_values(&r).ok_or_else(|| SqlError::new(b"XX001", "malformed pg_database row"))?;
        out.push((tid, row));
    }
    Ok(out)
}

/// Every row of pg_database.
pub fn list_rows(backend: &Backend, snap: &Snapshot) -> Result<Vec<DbRow>> {
    Ok(list(backend, snap)?.into_iter().map(|x| x.1).collect())
}

/// Every row of pg_database through the catalog cache (privilege checks and
/// per-row functions; DDL reads [`list`] for the rows' TIDs).
pub fn cached(backend: &Backend, snap: &Snapshot) -> Result<std::sync::Arc<Vec<DbRow>>> {
    crate::catcache::databases(backend, snap, || list_rows(backend, snap))
}

fn find(backend: &Backend, snap: &Snapshot, name: &str) -> Result<Option<(Tid, DbRow)>> {
    Ok(list(backend, snap)?.into_iter().find(|(_, d)| d.name == name))
}

/// The name of the current database (current_database(), current_catalog).
pub fn current_name(backend: &Backend, snap: &Snapshot) -> Result<String> {
    let db = backend.database();
    Ok(cached(backend, snap)?.iter().find(|d| d.oid == db).map_or_else(|| "postgres".to_string(), |d| d.name.clone()))
}

/// pg_database_size(name or oid): the bytes of the database's directory.
pub fn size_of(backend: &Backend, snap: &Snapshot, arg: &Value) -> Result<Option<i64>> {
    let dbs = list(backend, snap)?;
    let row = match arg {
        Value::Null => return Ok(None),
        Value::Oid(o) => dbs.into_iter().find(|(_, d)| d.oid == *o).map(|x| x.1),
        Value::Text(n) => match dbs.into_iter().find(|(_, d)| &d.name == n) {
            Some((_, d)) => Some(d),
            None => return Err(SqlError::new(b"3D000", format!("database \"{n}\" does not exist"))),
        },
        _ => None,
    };
    let Some(row) = row else { return Ok(None) };
    fn dir_size(p: &std::path::Path) -> u64 {
        std::fs::read_dir(p)
            .map(|rd| {
                rd.flatten()
                    .map(|e| match e.file_type() {
                        Ok(t) if t.is_dir() => dir_size(&e.path()),
                        _ => e.metadata().map_or(0, |m| m.len()),
                    })
                    .sum()
            })
            .unwrap_or(0)
    }
    Ok(Some(dir_size(&backend.engine().datadir().join(format!("base/{}", row.oid))) as i64))
}

/// Runs `f` in a transaction of its own (committed if `f` succeeds).
fn in_txn<T>(backend: &mut Backend, f: impl FnOnce(&mut Backend, &Snapshot) -> Result<T>) -> Result<T> {
    backend.txn.begin(IsolationLevel::ReadCommitted)?;
    let r = (|| {
        let snap = backend.txn.statement_snapshot()?;
        f(backend, &snap)
    })();
    match r {
        Ok(v) => {
            backend.txn.commit()?;
            Ok(v)
        }
        Err(e) => {
            let _ = backend.txn.abort();
            Err(e)
        }
    }
}

/// Makes the cluster's databases on the first start: pg_database in `global/`,
/// and for each of template1, template0 and postgres its catalogs, made by
/// `init` (which fills the current database's catalogs and is idempotent). A
/// data directory from before databases existed has its catalogs in `base/5`
/// already; `init` leaves them as they are.
pub fn bootstrap(engine: &Arc<Engine>, init: fn(&Arc<Engine>) -> Result<()>) -> Result<()> {
    let st = database_rel();
    if !engine.smgr.exists(st.rel, ForkNumber::Main) {
        engine.create_relation(st.rel)?;
    }
    let mut backend = engine.backend(std::process::id() as i32)?;
    if !in_txn(&mut backend, |b, snap| list(b, snap))?.is_empty() {
        return Ok(());
    }
    for db in [TEMPLATE1_OID, TEMPLATE0_OID, POSTGRES_DATABASE_OID] {
        with_db(db, || init(engine))?;
    }
    in_txn(&mut backend, |b, _| {
        for (oid, name, template, allow) in
            [(TEMPLATE1_OID, "template1", true, true), (TEMPLATE0_OID, "template0", true, false), (POSTGRES_DATABASE_OID, "postgres", false, true)]
        {
            let row = DbRow {
                oid,
                name: name.into(),
                dba: crate::pgcatalog::BOOTSTRAP_SUPERUSER,
                encoding: ENCODING_UTF8,
                is_template: template,
                allow_conn: allow,
                conn_limit: -1,
                collate: "C".into(),
                ctype: "C".into(),
                acl: template.then(|| TEMPLATE_ACL.to_string()),
            };
            insert_row(b, &st, &row.values())?;
        }
        Ok(())
    })
}

/// Connection time: the database named in the startup packet must exist and
/// accept connections; the backend is then bound to it. Errors are FATAL.
pub fn connect(backend: &mut Backend, name: &str) -> Result<()> {
    let _g = DATABASE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let row = in_txn(backend, |b, snap| find(b, snap, name))?;
    let fatal = |e: SqlError| SqlError { severity: ferrogres_datum::errors::Severity::Fatal, ..e };
    let Some((_, row)) = row else {
        return Err(fatal(SqlError::new(b"3D000", format!("database \"{name}\" does not exist"))));
    };
    if !row.allow_conn {
        return Err(fatal(SqlError::new(b"55000", format!("database \"{name}\" is not currently accepting connections"))));
    }
    // CONNECT on the database (its datacl), as the role that logged in;
    // superusers always hold it.
    let user = backend.current_user;
    let have = in_txn(backend, |b, snap| crate::acl::privs_on_database(b, snap, user, &row))?;
    if have & crate::acl::CONNECT == 0 {
        return Err(fatal(SqlError::new(b"42501", format!("permission denied for database \"{name}\"")).with_detail("User does not have CONNECT privilege.")));
    }
    if row.conn_limit >= 0 && backend.engine().backends_in_database(row.oid, None).len() >= row.conn_limit as usize {
        return Err(fatal(SqlError::new(b"53300", format!("too many connections for database \"{name}\""))));
    }
    backend.set_database(row.oid);
    enter(row.oid);
    Ok(())
}

// ---- statements ------------------------------------------------------------------

/// CREATE / DROP / ALTER DATABASE, analyzed. They run outside any transaction block.
#[derive(Clone, Debug)]
pub enum DbCmd {
    Create { name: String, template: Option<String>, row: DbRow },
    Drop { name: String, missing_ok: bool, force: bool },
    Rename { name: String, new_name: String },
    Alter { name: String, is_template: Option<bool>, allow_conn: Option<bool>, conn_limit: Option<i32> },
}

impl DbCmd {
    /// The statement's name in the 25001 message, or None if it may run in a block.
    pub fn block_name(&self) -> Option<&'static str> {
        match self {
            DbCmd::Create { .. } => Some("CREATE DATABASE"),
            DbCmd::Drop { .. } => Some("DROP DATABASE"),
            _ => None,
        }
    }
}

/// The error for a database command inside a transaction block.
pub fn in_block_error(cmd: &DbCmd) -> SqlError {
    match cmd.block_name() {
        Some(n) => SqlError::new(b"25001", format!("{n} cannot run inside a transaction block")),
        None => SqlError::not_supported("ALTER DATABASE inside a transaction block"),
    }
}

/// 25001 for CREATE / DROP DATABASE in a multi-statement query string (an
/// implicit transaction block).
pub fn node_in_block_error(node: &NodeEnum) -> Option<SqlError> {
    let n = match node {
        NodeEnum::CreatedbStmt(_) => "CREATE DATABASE",
        NodeEnum::DropdbStmt(_) => "DROP DATABASE",
        _ => return None,
    };
    Some(SqlError::new(b"25001", format!("{n} cannot run inside a transaction block")))
}

fn arg_text(d: &pb::DefElem) -> Option<String> {
    match d.arg.as_ref().and_then(|n| n.node.as_ref()) {
        Some(NodeEnum::String(s)) => Some(s.sval.clone()),
        Some(NodeEnum::Integer(i)) => Some(i.ival.to_string()),
        Some(NodeEnum::Float(f)) => Some(f.fval.clone()),
        Some(NodeEnum::Boolean(b)) => Some(b.boolval.to_string()),
        Some(NodeEnum::TypeName(t)) => t
            .names
            .iter()
            .filter_map(|n| match n.node.as_ref() {
                Some(NodeEnum::String(s)) => Some(s.sval.clone()),
                _ => None,
            })
            .next_back(),
        Some(NodeEnum::RoleSpec(r)) => Some(if r.rolename.is_empty() { "postgres".into() } else { r.rolename.clone() }),
        _ => None,
    }
}

/// PostgreSQL's defGetBoolean.
fn def_bool(d: &pb::DefElem) -> Result<bool> {
    let err = || SqlError::new(b"42601", format!("{} requires a Boolean value", d.defname));
    match d.arg.as_ref().and_then(|n| n.node.as_ref()) {
        None => Ok(true),
        Some(NodeEnum::Integer(i)) => match i.ival {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(err()),
        },
        _ => match arg_text(d).map(|s| s.to_ascii_lowercase()).as_deref() {
            Some("true" | "on" | "t" | "tr" | "tru" | "yes" | "y" | "ye" | "1") => Ok(true),
            Some("false" | "off" | "f" | "fa" | "fal" | "fals" | "no" | "n" | "0") => Ok(false),
            _ => Err(err()),
        },
    }
}

/// PostgreSQL's defGetInt32.
fn def_int(d: &pb::DefElem) -> Result<i32> {
    match d.arg.as_ref().and_then(|n| n.node.as_ref()) {
        Some(NodeEnum::Integer(i)) => Ok(i.ival),
        _ => Err(SqlError::new(b"42601", format!("{} requires an integer value", d.defname))),
    }
}

fn conn_limit(d: &pb::DefElem) -> Result<i32> {
    let l = def_int(d)?;
    if l < -1 {
        return Err(SqlError::new(b"22023", format!("invalid connection limit: {l}")));
    }
    Ok(l)
}

/// Encoding names PostgreSQL knows (normalized: lower case, alphanumerics only).
const ENCODINGS: &[&str] = &[
    "sqlascii", "eucjp", "euccn", "euckr", "euctw", "eucjis2004", "utf8", "unicode", "muleinternal", "latin1", "latin2", "latin3",
    "latin4", "latin5", "latin6", "latin7", "latin8", "latin9", "latin10", "win1256", "win1258", "win866", "win874", "koi8r", "win1251",
    "win1252", "iso88595", "iso88596", "iso88597", "iso88598", "win1250", "win1253", "win1254", "win1255", "win1257", "koi8u", "sjis",
    "big5", "gbk", "uhc", "gb18030", "johab", "shiftjis2004",
];

fn valid_locale(s: &str) -> bool {
    matches!(s, "C" | "POSIX" | "")
}

impl crate::analyze::Analyzer<'_> {
    /// CREATE DATABASE name [WITH] options.
    pub(crate) fn create_database(&mut self, s: &pb::CreatedbStmt) -> Result<crate::plan::Statement> {
        let mut row = DbRow {
            oid: 0,
            name: s.dbname.clone(),
            dba: crate::pgcatalog::BOOTSTRAP_SUPERUSER,
            encoding: ENCODING_UTF8,
            is_template: false,
            allow_conn: true,
            conn_limit: -1,
            collate: "C".into(),
            ctype: "C".into(),
            acl: None,
        };
        let mut template = None;
        let mut seen: Vec<String> = Vec::new();
        let mut encoding: Option<(String, i32)> = None;
        for o in &s.options {
            let Some(NodeEnum::DefElem(d)) = &o.node else { continue };
            let at = |e: SqlError| e.at(self.sql, d.location);
            if seen.contains(&d.defname) {
                return Err(at(SqlError::new(b"42601", "conflicting or redundant options")));
            }
            seen.push(d.defname.clone());
            let text = arg_text(d);
            match d.defname.as_str() {
                "owner" => {
                    let name = text.unwrap_or_default();
                    row.dba = crate::roles::oid_of(self.backend, self.snap, &name)?
                        .ok_or_else(|| SqlError::new(b"42704", format!("role \"{name}\" does not exist")))?;
                }
                "template" => template = text,
                "encoding" => {
                    let t = text.unwrap_or_default();
                    let code = match d.arg.as_ref().and_then(|n| n.node.as_ref()) {
                        Some(NodeEnum::Integer(i)) => i.ival,
                        _ => {
                            let norm: String = t.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase();
                            if !ENCODINGS.contains(&norm.as_str()) {
                                return Err(at(SqlError::new(b"42704", format!("{t} is not a valid encoding name"))));
                            }
                            if matches!(norm.as_str(), "utf8" | "unicode") {
                                ENCODING_UTF8
                            } else {
                                -2
                            }
                        }
                    };
                    encoding = Some((t.to_ascii_uppercase(), code));
                }
                "locale" | "lc_collate" | "lc_ctype" => {
                    let t = text.unwrap_or_default();
                    if !valid_locale(&t) {
                        return Err(SqlError::new(b"42809", format!("invalid locale name: \"{t}\"")));
                    }
                    // PostgreSQL canonicalizes POSIX (and the empty locale) to C.
                    let t = if t.is_empty() || t == "POSIX" { "C".to_string() } else { t };
                    if d.defname != "lc_ctype" {
                        row.collate = t.clone();
                    }
                    if d.defname != "lc_collate" {
                        row.ctype = t;
                    }
                }
                "locale_provider" => match text.as_deref() {
                    Some("libc") => {}
                    Some("icu") => return Err(SqlError::not_supported("ICU locales")),
                    other => {
                        return Err(SqlError::new(b"42601", format!("unrecognized locale provider: {}", other.unwrap_or(""))))
                    }
                },
                "icu_locale" | "collation_version" => return Err(SqlError::not_supported(format!("CREATE DATABASE option \"{}\"", d.defname))),
                "is_template" => row.is_template = def_bool(d)?,
                "allow_connections" => row.allow_conn = def_bool(d)?,
                "connection_limit" => row.conn_limit = conn_limit(d)?,
                "strategy" => {
                    let t = text.unwrap_or_default();
                    if !matches!(t.to_ascii_lowercase().as_str(), "wal_log" | "file_copy") {
                        return Err(SqlError::new(b"22023", format!("invalid create database strategy \"{t}\""))
                            .with_hint("Valid strategies are \"wal_log\" and \"file_copy\"."));
                    }
                }
                "tablespace" => {
                    let t = text.unwrap_or_default();
                    if t != "pg_default" {
                        return Err(SqlError::new(b"42704", format!("tablespace \"{t}\" does not exist")));
                    }
                }
                "oid" => {
                    let oid = def_int(d)?;
                    if (oid as u32) < ferrogres_engine::engine::FIRST_NORMAL_OBJECT_ID {
                        return Err(SqlError::new(b"22023", "OIDs less than 16384 are reserved for system objects"));
                    }
                    return Err(SqlError::not_supported("CREATE DATABASE ... OID"));
                }
                other => return Err(at(SqlError::new(b"42601", format!("option \"{other}\" not recognized")))),
            }
        }
        let dbs = list(self.backend, self.snap)?;
        let tname = template.clone().unwrap_or_else(|| "template1".into());
        let Some((_, src)) = dbs.iter().find(|(_, d)| d.name == tname) else {
            return Err(SqlError::new(b"3D000", format!("template database \"{tname}\" does not exist")));
        };
        if let Some((name, code)) = encoding {
            if code != src.encoding {
                if src.oid == TEMPLATE0_OID {
                    return Err(SqlError::not_supported(format!("encoding {name}")));
                }
                return Err(SqlError::new(
                    b"22023",
                    format!("new encoding ({name}) is incompatible with the encoding of the template database (UTF8)"),
                )
                .with_hint("Use the same encoding as in the template database, or use template0 as template."));
            }
        }
        Ok(crate::plan::Statement::Database(DbCmd::Create { name: s.dbname.clone(), template, row }))
    }

    /// DROP DATABASE [IF EXISTS] name [WITH (FORCE)].
    pub(crate) fn drop_database(&mut self, s: &pb::DropdbStmt) -> Result<crate::plan::Statement> {
        let mut force = false;
        for o in &s.options {
            let Some(NodeEnum::DefElem(d)) = &o.node else { continue };
            match d.defname.as_str() {
                "force" => force = true,
                other => {
                    return Err(SqlError::new(b"42601", format!("unrecognized DROP DATABASE option \"{other}\"")).at(self.sql, d.location))
                }
            }
        }
        Ok(crate::plan::Statement::Database(DbCmd::Drop { name: s.dbname.clone(), missing_ok: s.missing_ok, force }))
    }

    /// ALTER DATABASE name RENAME TO new.
    pub(crate) fn rename_database(&mut self, s: &pb::RenameStmt) -> Result<crate::plan::Statement> {
        Ok(crate::plan::Statement::Database(DbCmd::Rename { name: s.subname.clone(), new_name: s.newname.clone() }))
    }

    /// ALTER DATABASE name [WITH] IS_TEMPLATE / ALLOW_CONNECTIONS / CONNECTION LIMIT.
    pub(crate) fn alter_database(&mut self, s: &pb::AlterDatabaseStmt) -> Result<crate::plan::Statement> {
        let (mut is_template, mut allow_conn, mut limit) = (None, None, None);
        for o in &s.options {
            let Some(NodeEnum::DefElem(d)) = &o.node else { continue };
            match d.defname.as_str() {
                "is_template" => is_template = Some(def_bool(d)?),
                "allow_connections" => allow_conn = Some(def_bool(d)?),
                "connection_limit" => limit = Some(conn_limit(d)?),
                "tablespace" => return Err(SqlError::not_supported("ALTER DATABASE ... SET TABLESPACE")),
                other => return Err(SqlError::new(b"42601", format!("option \"{other}\" not recognized")).at(self.sql, d.location)),
            }
        }
        Ok(crate::plan::Statement::Database(DbCmd::Alter { name: s.dbname.clone(), is_template, allow_conn, conn_limit: limit }))
    }
}

/// 55006 when other sessions use `db`, after waiting up to 5 s for them to go
/// (PostgreSQL's CountOtherDBBackends).
fn check_unused(backend: &Backend, db: u32, message: String) -> Result<()> {
    let start = std::time::Instant::now();
    loop {
        let n = backend.engine().backends_in_database(db, Some(backend)).len();
        if n == 0 {
            return Ok(());
        }
        if start.elapsed() >= BUSY_WAIT {
            let detail = if n == 1 {
                "There is 1 other session using the database.".to_string()
            } else {
                format!("There are {n} other sessions using the database.")
            };
            return Err(SqlError::new(b"55006", message).with_detail(detail));
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Sets database `oid`'s datacl (GRANT / REVOKE ON DATABASE, [`crate::grant`])
/// in the current transaction.
pub(crate) fn set_acl(backend: &mut Backend, snap: &Snapshot, oid: u32, acl: Option<String>) -> Result<()> {
    let Some((tid, mut row)) = list(backend, snap)?.into_iter().find(|(_, d)| d.oid == oid) else {
        return Err(SqlError::internal(format!("no pg_database row for database {oid}")));
    };
    delete_row(backend, tid, &row.name.clone())?;
    row.acl = acl;
    insert_row(backend, &database_rel(), &row.values())?;
    Ok(())
}

/// Sets database `oid`'s owner and datacl (ALTER DATABASE ... OWNER TO,
/// REASSIGN OWNED) in the current transaction.
pub(crate) fn set_owner(backend: &mut Backend, snap: &Snapshot, oid: u32, dba: u32, acl: Option<String>) -> Result<()> {
    let Some((tid, mut row)) = list(backend, snap)?.into_iter().find(|(_, d)| d.oid == oid) else {
        return Err(SqlError::internal(format!("no pg_database row for database {oid}")));
    };
    delete_row(backend, tid, &row.name.clone())?;
    row.dba = dba;
    row.acl = acl;
    insert_row(backend, &database_rel(), &row.values())?;
    Ok(())
}

fn delete_row(backend: &mut Backend, tid: Tid, name: &str) -> Result<()> {
    match crate::catcache::heap_delete(backend, database_rel().rel, tid, None)? {
        TmResult::Ok | TmResult::SelfModified => Ok(()),
        _ => Err(SqlError::new(b"40001", "could not serialize access due to concurrent update")
            .with_detail(format!("database \"{name}\" was changed by a concurrent transaction"))),
    }
}

/// Runs a database command outside any transaction (the session has ended its
/// implicit one); returns the command tag.
pub fn execute(backend: &mut Backend, cmd: &DbCmd, out: &mut dyn Output) -> Result<String> {
    let _g = DATABASE_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    match cmd {
        DbCmd::Create { name, template, row } => {
            let tname = template.clone().unwrap_or_else(|| "template1".into());
            let engine = backend.engine().clone();
            let mut row = row.clone();
            row.oid = engine.new_oid();
            let (src, oid) = in_txn(backend, |b, snap| {
                let dbs = list(b, snap)?;
                let Some((_, src)) = dbs.iter().find(|(_, d)| d.name == tname) else {
                    return Err(SqlError::new(b"3D000", format!("template database \"{tname}\" does not exist")));
                };
                if !src.is_template && src.dba != crate::pgcatalog::BOOTSTRAP_SUPERUSER {
                    return Err(SqlError::new(b"42501", format!("permission denied to copy database \"{tname}\"")));
                }
                if dbs.iter().any(|(_, d)| &d.name == name) {
                    return Err(SqlError::new(b"42P04", format!("database \"{name}\" already exists")));
                }
                check_unused(b, src.oid, format!("source database \"{tname}\" is being accessed by other users"))?;
                row.encoding = src.encoding;
                insert_row(b, &database_rel(), &row.values())?;
                // The copy is made before the row commits: a failure leaves no row,
                // a crash before the commit at worst an orphan directory.
                if let Err(e) = engine.create_database_dir(src.oid, row.oid) {
                    let _ = engine.drop_database_dir(row.oid);
                    return Err(e.into());
                }
                Ok((src.oid, row.oid))
            })?;
            let _ = (src, oid);
            Ok("CREATE DATABASE".into())
        }
        DbCmd::Drop { name, missing_ok, force } => {
            let me = backend.database();
            let dropped = in_txn(backend, |b, snap| {
                let Some((tid, row)) = find(b, snap, name)? else {
                    if *missing_ok {
                        out.notice(&SqlError::notice(b"00000", format!("database \"{name}\" does not exist, skipping")))?;
                        return Ok(None);
                    }
                    return Err(SqlError::new(b"3D000", format!("database \"{name}\" does not exist")));
                };
                if row.is_template {
                    return Err(SqlError::new(b"42809", "cannot drop a template database"));
                }
                if row.oid == me {
                    return Err(SqlError::new(b"55006", "cannot drop the currently open database"));
                }
                if *force && !b.engine().backends_in_database(row.oid, Some(b)).is_empty() {
                    return Err(SqlError::not_supported("DROP DATABASE ... WITH (FORCE) while other sessions use the database"));
                }
                check_unused(b, row.oid, format!("database \"{name}\" is being accessed by other users"))?;
                delete_row(b, tid, name)?;
                Ok(Some(row.oid))
            })?;
            if let Some(oid) = dropped {
                // The row's deletion is committed: remove the files.
                backend.engine().drop_database_dir(oid)?;
                crate::sequence::forget_database(backend.engine(), oid);
            }
            Ok("DROP DATABASE".into())
        }
        DbCmd::Rename { name, new_name } => {
            let me = backend.database();
            in_txn(backend, |b, snap| {
                let dbs = list(b, snap)?;
                let Some((tid, row)) = dbs.iter().find(|(_, d)| &d.name == name).cloned() else {
                    return Err(SqlError::new(b"3D000", format!("database \"{name}\" does not exist")));
                };
                if dbs.iter().any(|(_, d)| &d.name == new_name) {
                    return Err(SqlError::new(b"42P04", format!("database \"{new_name}\" already exists")));
                }
                if row.oid == me {
                    return Err(SqlError::new(b"0A000", "current database cannot be renamed"));
                }
                check_unused(b, row.oid, format!("database \"{name}\" is being accessed by other users"))?;
                delete_row(b, tid, name)?;
                insert_row(b, &database_rel(), &DbRow { name: new_name.clone(), ..row }.values())?;
                Ok(())
            })?;
            Ok("ALTER DATABASE".into())
        }
        DbCmd::Alter { name, is_template, allow_conn, conn_limit } => {
            let me = backend.database();
            in_txn(backend, |b, snap| {
                let Some((tid, mut row)) = find(b, snap, name)? else {
                    return Err(SqlError::new(b"3D000", format!("database \"{name}\" does not exist")));
                };
                if *allow_conn == Some(false) && row.oid == me {
                    return Err(SqlError::new(b"55006", "cannot disallow connections for current database"));
                }
                row.is_template = is_template.unwrap_or(row.is_template);
                row.allow_conn = allow_conn.unwrap_or(row.allow_conn);
                row.conn_limit = conn_limit.unwrap_or(row.conn_limit);
                delete_row(b, tid, name)?;
                insert_row(b, &database_rel(), &row.values())?;
                Ok(())
            })?;
            Ok("ALTER DATABASE".into())
        }
    }
}
