//! Sequences: CREATE / ALTER / DROP SEQUENCE, nextval, currval, setval, lastval,
//! and the sequences behind SERIAL columns.
//!
//! A sequence is a `pg_class` row (relkind `S`, written by the user's
//! transaction: CREATE and DROP commit or roll back with it) and a small state
//! file `base/<db>/pg_seq/<oid>` (in its database's directory, so CREATE
//! DATABASE copies it with the template) holding its options and its
//! counter. The counter is not transactional, as in PostgreSQL: a value handed
//! out is never handed out again, whether the transaction that took it commits
//! or not.
//!
//! ## Crash safety: logging ahead
//!
//! PostgreSQL WAL-logs a sequence 32 values ahead of what it hands out
//! (`SEQ_LOG_VALS`, `log_cnt` counting down the values still covered) and after
//! a crash continues from the logged value. We do the same with the state file:
//!
//! - `logged` is the value the file vouches for: every value handed out so far
//!   is at or before it in the sequence's direction (`is_called` in the file).
//! - `log_cnt` (0 <= log_cnt <= 32) counts the values after `last_value` that
//!   the file already covers; nextval with `log_cnt == 0` first rewrites the
//!   file with the value 32 steps ahead (write to a temporary file, fsync,
//!   rename, fsync the directory) and only then returns its value.
//! - setval and ALTER SEQUENCE RESTART write the file at once (`log_cnt = 0`).
//!
//! After a restart the file is read with `log_cnt = 0` and `is_called` as
//! stored, so the first nextval returns the value after `logged`: strictly
//! beyond every value returned before the crash (up to 32 values are skipped,
//! as in PostgreSQL).
//!
//! ## Concurrency
//!
//! Each sequence's in-memory state is behind its own mutex in a process-wide
//! registry keyed by (engine, OID); nextval takes it, steps, writes the file if
//! needed, and releases it, so concurrent sessions get distinct values.
//! `currval`/`lastval` are per session ([`SeqSession`], kept in the session's
//! `LockCtx`).

use crate::catalog::{self, class_rel};
use ferrogres_datum::errors::{Result, SqlError};
use crate::plan::{Expr, Func};
use crate::rowio::{insert_row, scan_rows};
use ferrogres_datum::types::{Type, Value};
use ferrogres_engine::engine::{Backend, Engine};
use ferrogres_engine::txn::snapshot::Snapshot;
use ferrogres_engine::txn::visibility::TmResult;
use pg_query::protobuf as pb;
use pg_query::NodeEnum;
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};

/// Values logged ahead (PostgreSQL's SEQ_LOG_VALS).
const SEQ_LOG_VALS: i64 = 32;

/// The sequence functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeqFunc {
    /// args: (oid, name)
    Nextval,
    /// args: (oid, name)
    Currval,
    /// args: (oid, name, value [, is_called])
    Setval,
    /// no args
    Lastval,
}

/// A sequence's options (PostgreSQL's pg_sequence row).
#[derive(Clone, Debug, PartialEq)]
pub struct SeqOptions {
    pub ty: Type,
    pub start: i64,
    pub increment: i64,
    pub min: i64,
    pub max: i64,
    pub cache: i64,
    pub cycle: bool,
}

/// The state: options, counter, and what the file vouches for.
#[derive(Clone, Debug)]
struct SeqState {
    opts: SeqOptions,
    last_value: i64,
    is_called: bool,
    /// Values after `last_value` already covered by the file (0..=32).
    log_cnt: i64,
    /// Owning column (table OID, attnum) of a SERIAL sequence, 0 if none.
    owner: (u32, i16),
}

struct Entry {
    engine: Weak<Engine>,
    state: Mutex<Option<SeqState>>,
}

/// (engine, database, sequence OID) -> state.
type Registry = HashMap<(usize, u32, u32), Arc<Entry>>;
static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

fn entry(engine: &Arc<Engine>, oid: u32) -> Arc<Entry> {
    let mut m = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    let map = m.get_or_insert_with(HashMap::new);
    let key = (Arc::as_ptr(engine) as usize, crate::database::current(), oid);
    if let Some(e) = map.get(&key) {
        if e.engine.upgrade().is_some_and(|x| Arc::ptr_eq(&x, engine)) {
            return e.clone();
        }
    }
    let e = Arc::new(Entry { engine: Arc::downgrade(engine), state: Mutex::new(None) });
    map.insert(key, e.clone());
    e
}

fn seq_dir(engine: &Engine) -> PathBuf {
    engine.datadir().join(format!("base/{}/pg_seq", crate::database::current()))
}

/// Forgets the cached state of a dropped database's sequences.
pub fn forget_database(engine: &Arc<Engine>, db: u32) {
    let mut m = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(map) = m.as_mut() {
        map.retain(|k, _| !(k.0 == Arc::as_ptr(engine) as usize && k.1 == db));
    }
}

fn io(e: std::io::Error) -> SqlError {
    SqlError::new(b"58030", format!("could not write sequence state: {e}"))
}

/// Writes the file: options, the logged value and is_called, the owner.
fn write_file(engine: &Engine, oid: u32, s: &SeqState, logged: i64, is_called: bool) -> Result<()> {
    let dir = seq_dir(engine);
    std::fs::create_dir_all(&dir).map_err(io)?;
    let o = &s.opts;
    let text = format!(
        "{} {} {} {} {} {} {} {} {} {} {}\n",
        logged,
        is_called as u8,
        o.ty.oid(),
        o.start,
        o.increment,
        o.min,
        o.max,
        o.cache,
        o.cycle as u8,
        s.owner.0,
        s.owner.1
    );
    let tmp = dir.join(format!("{oid}.tmp"));
    let path = dir.join(oid.to_string());
    let mut f = std::fs::File::create(&tmp).map_err(io)?;
    f.write_all(text.as_bytes()).map_err(io)?;
    f.sync_all().map_err(io)?;
    drop(f);
    std::fs::rename(&tmp, &path).map_err(io)?;
    if let Ok(d) = std::fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

fn read_file(engine: &Engine, oid: u32) -> Result<Option<SeqState>> {
    let path = seq_dir(engine).join(oid.to_string());
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(e)),
    };
    let f: Vec<i64> = text.split_whitespace().filter_map(|x| x.parse().ok()).collect();
    if f.len() != 11 {
        return Err(SqlError::new(b"XX001", format!("invalid sequence state file \"{}\"", path.display())));
    }
    let ty = Type::from_oid(f[2] as u32).unwrap_or(Type::Int8);
    let opts = SeqOptions { ty, start: f[3], increment: f[4], min: f[5], max: f[6], cache: f[7], cycle: f[8] != 0 };
    Ok(Some(SeqState { opts, last_value: f[0], is_called: f[1] != 0, log_cnt: 0, owner: (f[9] as u32, f[10] as i16) }))
}

/// Runs `f` on the sequence's state (loaded from its file on first use).
fn with_state<T>(engine: &Arc<Engine>, oid: u32, name: &str, f: impl FnOnce(&mut SeqState) -> Result<T>) -> Result<T> {
    let e = entry(engine, oid);
    let mut g = e.state.lock().unwrap_or_else(|e| e.into_inner());
    if g.is_none() {
        *g = read_file(engine, oid)?;
    }
    match g.as_mut() {
        Some(s) => f(s),
        None => Err(SqlError::new(b"42P01", format!("relation \"{name}\" does not exist"))),
    }
}

/// The options of sequence `oid` (pg_sequence's row), `None` if it has no state
/// file (dropped, or created by a transaction that has not written it yet).
pub fn options_of(engine: &Arc<Engine>, oid: u32) -> Result<Option<SeqOptions>> {
    let e = entry(engine, oid);
    let mut g = e.state.lock().unwrap_or_else(|e| e.into_inner());
    if g.is_none() {
        *g = read_file(engine, oid)?;
    }
    Ok(g.as_ref().map(|s| s.opts.clone()))
}

/// The value after `v`, or `None` at the end of a non-cycling sequence.
fn step(o: &SeqOptions, v: i64) -> Option<i64> {
    let next = v.checked_add(o.increment);
    if o.increment > 0 {
        match next {
            Some(n) if n <= o.max => Some(n),
            _ if o.cycle => Some(o.min),
            _ => None,
        }
    } else {
        match next {
            Some(n) if n >= o.min => Some(n),
            _ if o.cycle => Some(o.max),
            _ => None,
        }
    }
}

fn nextval_state(engine: &Engine, oid: u32, name: &str, s: &mut SeqState) -> Result<i64> {
    let value = if !s.is_called {
        s.last_value
    } else {
        match step(&s.opts, s.last_value) {
            Some(v) => v,
            None => {
                let (what, lim) = if s.opts.increment > 0 { ("maximum", s.opts.max) } else { ("minimum", s.opts.min) };
                return Err(SqlError::new(b"2200H", format!("nextval: reached {what} value of sequence \"{name}\" ({lim})")));
            }
        }
    };
    if s.log_cnt <= 0 {
        // Log ahead: the file vouches for SEQ_LOG_VALS values after this one.
        let mut logged = value;
        let mut n = 0;
        while n < SEQ_LOG_VALS {
            match step(&s.opts, logged) {
                Some(v) => logged = v,
                None => break,
            }
            n += 1;
        }
        write_file(engine, oid, s, logged, true)?;
        s.log_cnt = n;
    } else {
        s.log_cnt -= 1;
    }
    s.last_value = value;
    s.is_called = true;
    Ok(value)
}

/// The session's side: currval values and the last sequence used.
pub struct SeqSession {
    engine: Arc<Engine>,
    currvals: HashMap<u32, i64>,
    last: Option<(u32, String)>,
    /// The session's non-exclusive backup between pg_backup_start and
    /// pg_backup_stop (PostgreSQL keeps it per session too); dropped with the
    /// session, which aborts it. It lives here because this is the session
    /// state that functions reach (`Env::seq_ctx`).
    backup: Option<ferrogres_engine::replication::backup::Backup>,
}

impl SeqSession {
    pub fn new(engine: Arc<Engine>) -> SeqSession {
        SeqSession { engine, currvals: HashMap::new(), last: None, backup: None }
    }

    /// DISCARD SEQUENCES: currval and lastval are undefined again.
    pub fn discard(&mut self) {
        self.currvals.clear();
        self.last = None;
    }

    /// The engine of the session (for functions that read engine state: `crate::walstat`).
    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// pg_backup_start(label, fast): starts the session's non-exclusive
    /// backup; its start LSN.
    pub fn start_backup(&mut self, label: &str, fast: bool) -> Result<u64> {
        if self.backup.is_some() {
            return Err(SqlError::new(b"55000", "a backup is already in progress in this session"));
        }
        if label.len() > 1024 {
            return Err(SqlError::new(b"22023", "backup label too long (max 1024 bytes)"));
        }
        let b = ferrogres_engine::replication::backup::Backup::start(&self.engine, label, fast)?;
        let start = b.start.0;
        self.backup = Some(b);
        Ok(start)
    }

    /// pg_backup_stop(): ends the session's backup: (end LSN, label file).
    pub fn stop_backup(&mut self) -> Result<(u64, String)> {
        let Some(b) = self.backup.as_ref() else {
            return Err(SqlError::new(b"55000", "backup is not in progress").with_hint("Did you call pg_backup_start()?"));
        };
        let end = b.stop()?;
        let label = self.backup.take().map(|b| b.label_file.clone()).unwrap_or_default();
        Ok((end.0, label))
    }
}

/// Evaluates a sequence function (`exec::call`).
pub fn call(f: SeqFunc, vals: &[Value], env: &mut dyn crate::exec::Env) -> Result<Value> {
    // The sequence is locked RowExclusiveLock for the transaction, as
    // PostgreSQL's lock_and_open_sequence does: an uncommitted ALTER SEQUENCE
    // (ShareRowExclusiveLock) makes this call wait, and ALTER waits for this
    // transaction.
    if let (Some(Value::Oid(oid)), Some(lc)) = (vals.first(), env.lock_ctx()) {
        crate::locking::lock_relation_in(&lc.manager, lc.backend, *oid, ferrogres_engine::lmgr::lock::LockMode::RowExclusive)?;
    }
    let Some(ss) = env.seq_ctx() else {
        return Err(SqlError::not_supported("sequence functions outside a session"));
    };
    let oid = match vals.first() {
        Some(Value::Oid(o)) => *o,
        _ if f == SeqFunc::Lastval => 0,
        _ => return Ok(Value::Null),
    };
    let name = match vals.get(1) {
        Some(Value::Text(n)) => n.clone(),
        _ => String::new(),
    };
    let engine = ss.engine.clone();
    match f {
        SeqFunc::Nextval => {
            let v = with_state(&engine, oid, &name, |s| nextval_state(&engine, oid, &name, s))?;
            ss.currvals.insert(oid, v);
            ss.last = Some((oid, name));
            Ok(Value::Int8(v))
        }
        SeqFunc::Currval => match ss.currvals.get(&oid) {
            Some(v) => Ok(Value::Int8(*v)),
            None => Err(SqlError::new(b"55000", format!("currval of sequence \"{name}\" is not yet defined in this session"))),
        },
        SeqFunc::Lastval => match &ss.last {
            Some((oid, _)) => Ok(Value::Int8(ss.currvals.get(oid).copied().unwrap_or(0))),
            None => Err(SqlError::new(b"55000", "lastval is not yet defined in this session")),
        },
        SeqFunc::Setval => {
            let Some(v) = vals.get(2).and_then(|v| v.as_i64()) else { return Ok(Value::Null) };
            let is_called = match vals.get(3) {
                Some(Value::Bool(b)) => *b,
                Some(Value::Null) => return Ok(Value::Null),
                _ => true,
            };
            with_state(&engine, oid, &name, |s| {
                if v < s.opts.min || v > s.opts.max {
                    return Err(SqlError::new(
                        b"22003",
                        format!("setval: value {v} is out of bounds for sequence \"{name}\" ({}..{})", s.opts.min, s.opts.max),
                    ));
                }
                write_file(&engine, oid, s, v, is_called)?;
                s.last_value = v;
                s.is_called = is_called;
                s.log_cnt = 0;
                Ok(())
            })?;
            if is_called {
                ss.currvals.insert(oid, v);
                ss.last = Some((oid, name));
            }
            Ok(Value::Int8(v))
        }
    }
}

// ---- catalog ------------------------------------------------------------------

/// A sequence in the catalog: (oid, namespace).
pub fn lookup(backend: &Backend, snap: &Snapshot, ns: u32, name: &str) -> Result<Option<(u32, String)>> {
    crate::index::find_relation(backend, snap, ns, name)
}

/// Creates the sequence's catalog row and its state file.
pub fn create(backend: &mut Backend, ns: u32, name: &str, opts: &SeqOptions, owner: (u32, i16)) -> Result<u32> {
    let ns = crate::namespace::materialize(backend, ns)?;
    let engine = backend.engine().clone();
    let oid = engine.new_oid();
    let seq_owner = backend.current_user;
    let relacl = crate::default_acl::initial_stored(backend, crate::default_acl::SEQUENCE, ns, seq_owner)?;
    insert_row(
        backend,
        &class_rel(),
        &[
            Value::Oid(oid),
            Value::Text(name.to_string()),
            Value::Oid(ns),
            Value::Oid(oid),
            Value::Oid(0),
            Value::Text("S".into()),
            Value::Int2(3),
            Value::Oid(0),
            Value::Int4(1),
            Value::Float8(1.0),
            Value::Oid(seq_owner),
            relacl,
        ],
    )?;
    let state = SeqState { opts: opts.clone(), last_value: opts.start, is_called: false, log_cnt: 0, owner };
    write_file(&engine, oid, &state, opts.start, false)?;
    *entry(&engine, oid).state.lock().unwrap_or_else(|e| e.into_inner()) = Some(state);
    Ok(oid)
}

/// Deletes the sequence's pg_class row (the state file stays, as dropped
/// relations' files do).
pub fn drop_sequence(backend: &mut Backend, snap: &Snapshot, oid: u32, name: &str) -> Result<()> {
    for (tid, row) in scan_rows(backend, &class_rel(), snap)? {
        if row[0] == Value::Oid(oid) {
            match crate::catcache::heap_delete(backend, class_rel().rel, tid, Some(&row))? {
                TmResult::Ok | TmResult::SelfModified => {}
                _ => {
                    return Err(SqlError::new(b"40001", "could not serialize access due to concurrent update")
                        .with_detail(format!("sequence \"{name}\" was changed by a concurrent transaction")))
                }
            }
        }
    }
    Ok(())
}

/// The sequences owned by a column of `table` (SERIAL), for DROP TABLE.
pub fn owned_by(backend: &Backend, snap: &Snapshot, table: u32) -> Result<Vec<(u32, String)>> {
    let mut out = Vec::new();
    for (_, row) in scan_rows(backend, &class_rel(), snap)? {
        if let [Value::Oid(oid), Value::Text(n), _, _, _, Value::Text(kind), ..] = row.as_slice() {
            if kind == "S" {
                if let Some(s) = read_file(backend.engine(), *oid)? {
                    if s.owner.0 == table {
                        out.push((*oid, n.clone()));
                    }
                }
            }
        }
    }
    Ok(out)
}

// ---- analysis -------------------------------------------------------------------

fn type_range(ty: Type) -> (i64, i64) {
    match ty {
        Type::Int2 => (i16::MIN as i64, i16::MAX as i64),
        Type::Int4 => (i32::MIN as i64, i32::MAX as i64),
        _ => (i64::MIN, i64::MAX),
    }
}

fn def_int(d: &pb::DefElem) -> Result<Option<i64>> {
    match d.arg.as_ref().and_then(|n| n.node.as_ref()) {
        None => Ok(None),
        Some(NodeEnum::Integer(i)) => Ok(Some(i.ival as i64)),
        Some(NodeEnum::Float(f)) => f
            .fval
            .parse::<i64>()
            .map(Some)
            .map_err(|_| SqlError::new(b"22003", format!("value \"{}\" is out of range for type bigint", f.fval))),
        _ => Err(SqlError::not_supported(format!("this value for sequence option {}", d.defname))),
    }
}

/// Options given to CREATE / ALTER SEQUENCE, before defaults.
#[derive(Default, Clone, Debug)]
pub struct RawOptions {
    ty: Option<Type>,
    increment: Option<i64>,
    min: Option<Option<i64>>,
    max: Option<Option<i64>>,
    start: Option<i64>,
    restart: Option<Option<i64>>,
    cache: Option<i64>,
    cycle: Option<bool>,
    owned_by: Option<Vec<String>>,
}

fn parse_options(a: &crate::analyze::Analyzer, options: &[pb::Node]) -> Result<RawOptions> {
    let mut r = RawOptions::default();
    let mut seen: Vec<String> = Vec::new();
    for o in options {
        let Some(NodeEnum::DefElem(d)) = &o.node else { continue };
        if seen.contains(&d.defname) {
            return Err(SqlError::new(b"42601", "conflicting or redundant options").at(a.sql, d.location));
        }
        seen.push(d.defname.clone());
        match d.defname.as_str() {
            "as" => {
                let tn = match d.arg.as_ref().and_then(|n| n.node.as_ref()) {
                    Some(NodeEnum::TypeName(t)) => t,
                    _ => return Err(SqlError::internal("AS without a type")),
                };
                let (ty, _) = a.type_name(Some(tn))?;
                if !matches!(ty, Type::Int2 | Type::Int4 | Type::Int8) {
                    return Err(SqlError::new(b"22023", "sequence type must be smallint, integer, or bigint"));
                }
                r.ty = Some(ty);
            }
            "increment" => r.increment = def_int(d)?,
            "minvalue" => r.min = Some(def_int(d)?),
            "maxvalue" => r.max = Some(def_int(d)?),
            "start" => r.start = def_int(d)?,
            "restart" => r.restart = Some(def_int(d)?),
            "cache" => r.cache = def_int(d)?,
            "cycle" => {
                r.cycle = Some(match d.arg.as_ref().and_then(|n| n.node.as_ref()) {
                    Some(NodeEnum::Boolean(b)) => b.boolval,
                    Some(NodeEnum::Integer(i)) => i.ival != 0,
                    _ => true,
                })
            }
            "owned_by" => {
                let names = match d.arg.as_ref().and_then(|n| n.node.as_ref()) {
                    Some(NodeEnum::List(l)) => l
                        .items
                        .iter()
                        .filter_map(|n| match &n.node {
                            Some(NodeEnum::String(s)) => Some(s.sval.clone()),
                            _ => None,
                        })
                        .collect(),
                    _ => Vec::new(),
                };
                r.owned_by = Some(names);
            }
            other => return Err(SqlError::not_supported(format!("sequence option {other}"))),
        }
    }
    Ok(r)
}

/// Applies `r` over `base` (the defaults for CREATE, the current options for
/// ALTER) and checks the result as PostgreSQL's init_params does.
fn resolve(r: &RawOptions, base: Option<&SeqOptions>) -> Result<SeqOptions> {
    let ty = r.ty.or(base.map(|b| b.ty)).unwrap_or(Type::Int8);
    let increment = r.increment.or(base.map(|b| b.increment)).unwrap_or(1);
    if increment == 0 {
        return Err(SqlError::new(b"22023", "INCREMENT must not be zero"));
    }
    let (tmin, tmax) = type_range(ty);
    let type_changed = r.ty.is_some() && base.is_some_and(|b| b.ty != ty);
    let max = match r.max {
        Some(Some(v)) => v,
        Some(None) => {
            if increment > 0 {
                tmax
            } else {
                -1
            }
        }
        None => match base {
            Some(b) if !type_changed && (r.increment.is_none() || (b.increment > 0) == (increment > 0)) => b.max,
            _ => {
                if increment > 0 {
                    tmax
                } else {
                    -1
                }
            }
        },
    };
    let min = match r.min {
        Some(Some(v)) => v,
        Some(None) => {
            if increment > 0 {
                1
            } else {
                tmin
            }
        }
        None => match base {
            Some(b) if !type_changed && (r.increment.is_none() || (b.increment > 0) == (increment > 0)) => b.min,
            _ => {
                if increment > 0 {
                    1
                } else {
                    tmin
                }
            }
        },
    };
    let tyname = ty.sql_name();
    if max < tmin || max > tmax {
        return Err(SqlError::new(b"22023", format!("MAXVALUE ({max}) is out of range for sequence data type {tyname}")));
    }
    if min < tmin || min > tmax {
        return Err(SqlError::new(b"22023", format!("MINVALUE ({min}) is out of range for sequence data type {tyname}")));
    }
    if min >= max {
        return Err(SqlError::new(b"22023", format!("MINVALUE ({min}) must be less than MAXVALUE ({max})")));
    }
    let start = r.start.or(base.map(|b| b.start)).unwrap_or(if increment > 0 { min } else { max });
    if start < min {
        return Err(SqlError::new(b"22023", format!("START value ({start}) cannot be less than MINVALUE ({min})")));
    }
    if start > max {
        return Err(SqlError::new(b"22023", format!("START value ({start}) cannot be greater than MAXVALUE ({max})")));
    }
    let cache = r.cache.or(base.map(|b| b.cache)).unwrap_or(1);
    if cache <= 0 {
        return Err(SqlError::new(b"22023", format!("CACHE ({cache}) must be greater than zero")));
    }
    let cycle = r.cycle.or(base.map(|b| b.cycle)).unwrap_or(false);
    Ok(SeqOptions { ty, start, increment, min, max, cache, cycle })
}

/// The default options of a SERIAL column's sequence.
pub fn serial_options(ty: Type) -> SeqOptions {
    resolve(&RawOptions { ty: Some(ty), ..Default::default() }, None).expect("valid defaults")
}

/// The statements of this module, analyzed.
#[derive(Clone, Debug)]
pub enum SeqCmd {
    Create { namespace: u32, name: String, opts: SeqOptions, if_not_exists: bool, owned_by: Option<Vec<String>> },
    Alter { oid: u32, name: String, raw: RawOptions, missing: bool },
    Drop { names: Vec<(Option<String>, String)>, missing_ok: bool, cascade: bool },
}

pub fn analyze_create(a: &crate::analyze::Analyzer, s: &pb::CreateSeqStmt) -> Result<SeqCmd> {
    let rv = s.sequence.as_ref().ok_or_else(|| SqlError::internal("CREATE SEQUENCE without a name"))?;
    let schema = (!rv.schemaname.is_empty()).then_some(rv.schemaname.as_str());
    let namespace = crate::namespace::creation_namespace(a.backend, a.snap, schema, rv.relpersistence == "t", &rv.relname)
        .map_err(|e| if e.sqlstate() == "3F000" && schema.is_some() { e.at(a.sql, rv.location) } else { e })?;
    crate::acl::check_create_in(a.backend, a.snap, namespace).map_err(|e| e.at(a.sql, rv.location))?;
    let raw = parse_options(a, &s.options)?;
    if raw.restart.is_some() {
        return Err(SqlError::not_supported("RESTART in CREATE SEQUENCE"));
    }
    let opts = resolve(&raw, None)?;
    Ok(SeqCmd::Create { namespace, name: rv.relname.clone(), opts, if_not_exists: s.if_not_exists, owned_by: raw.owned_by })
}

pub fn analyze_alter(a: &crate::analyze::Analyzer, s: &pb::AlterSeqStmt) -> Result<SeqCmd> {
    let rv = s.sequence.as_ref().ok_or_else(|| SqlError::internal("ALTER SEQUENCE without a name"))?;
    let raw = parse_options(a, &s.options)?;
    if raw.owned_by.is_some() {
        return Err(SqlError::not_supported("ALTER SEQUENCE ... OWNED BY"));
    }
    let schema = (!rv.schemaname.is_empty()).then_some(rv.schemaname.as_str());
    let ns = match crate::namespace::relation_namespace(a.backend, a.snap, schema, &rv.relname) {
        Ok(Some(ns)) => ns,
        Ok(None) => crate::catalog::PUBLIC_NAMESPACE,
        Err(_) if s.missing_ok => return Ok(SeqCmd::Alter { oid: 0, name: rv.relname.clone(), raw, missing: true }),
        Err(e) => return Err(e.at(a.sql, rv.location)),
    };
    match lookup(a.backend, a.snap, ns, &rv.relname)? {
        Some((oid, kind)) if kind == "S" => Ok(SeqCmd::Alter { oid, name: rv.relname.clone(), raw, missing: false }),
        Some(_) => Err(SqlError::new(b"42809", format!("\"{}\" is not a sequence", rv.relname))),
        None if s.missing_ok => Ok(SeqCmd::Alter { oid: 0, name: rv.relname.clone(), raw, missing: true }),
        None => Err(SqlError::new(b"42P01", format!("relation \"{}\" does not exist", rv.relname))),
    }
}

pub fn analyze_drop(s: &pb::DropStmt) -> Result<SeqCmd> {
    let mut names = Vec::new();
    for o in &s.objects {
        let Some(NodeEnum::List(l)) = &o.node else { continue };
        let parts: Vec<String> = l
            .items
            .iter()
            .filter_map(|n| match &n.node {
                Some(NodeEnum::String(s)) => Some(s.sval.clone()),
                _ => None,
            })
            .collect();
        match parts.as_slice() {
            [n] => names.push((None, n.clone())),
            [s, n] => names.push((Some(s.clone()), n.clone())),
            _ => return Err(SqlError::not_supported("cross-database references")),
        }
    }
    Ok(SeqCmd::Drop { names, missing_ok: s.missing_ok, cascade: s.behavior == pb::DropBehavior::DropCascade as i32 })
}

/// Runs a sequence statement in the current transaction; returns the tag.
pub fn execute(cmd: &SeqCmd, backend: &mut Backend, snap: &Snapshot, notice: &mut dyn FnMut(SqlError) -> Result<()>) -> Result<String> {
    match cmd {
        SeqCmd::Create { namespace, name, opts, if_not_exists, owned_by } => {
            if lookup(backend, snap, *namespace, name)?.is_some() {
                if *if_not_exists {
                    notice(SqlError::notice(b"42P07", format!("relation \"{name}\" already exists, skipping")))?;
                    return Ok("CREATE SEQUENCE".into());
                }
                return Err(SqlError::new(b"42P07", format!("relation \"{name}\" already exists")));
            }
            let owner = match owned_by.as_deref() {
                None => (0, 0),
                Some([none]) if none.eq_ignore_ascii_case("none") => (0, 0),
                Some([table, col]) => {
                    let t = catalog::lookup_table(backend, snap, None, table)?
                        .ok_or_else(|| SqlError::new(b"42P01", format!("relation \"{table}\" does not exist")))?;
                    let Some(i) = t.columns.iter().position(|c| &c.name == col) else {
                        return Err(SqlError::new(b"42703", format!("column \"{col}\" of relation \"{table}\" does not exist")));
                    };
                    if t.namespace != *namespace {
                        return Err(SqlError::new(b"55000", "sequence must be in same schema as table it is linked to"));
                    }
                    (t.oid, i as i16 + 1)
                }
                Some(_) => return Err(SqlError::not_supported("this OWNED BY form")),
            };
            create(backend, *namespace, name, opts, owner)?;
            Ok("CREATE SEQUENCE".into())
        }
        SeqCmd::Alter { missing: true, name, .. } => {
            notice(SqlError::notice(b"00000", format!("relation \"{name}\" does not exist, skipping")))?;
            Ok("ALTER SEQUENCE".into())
        }
        SeqCmd::Alter { oid, name, raw, .. } => {
            // ShareRowExclusiveLock, as PostgreSQL's ALTER SEQUENCE: it waits
            // for transactions that used the sequence, and they for it.
            crate::locking::lock_relation(backend, *oid, ferrogres_engine::lmgr::lock::LockMode::ShareRowExclusive, false, name)?;
            let engine = backend.engine().clone();
            with_state(&engine, *oid, name, |s| {
                let opts = resolve(raw, Some(&s.opts))?;
                let (mut last, mut called) = (s.last_value, s.is_called);
                if let Some(restart) = &raw.restart {
                    last = restart.unwrap_or(opts.start);
                    called = false;
                }
                if last < opts.min && !called {
                    return Err(SqlError::new(b"22023", format!("RESTART value ({last}) cannot be less than MINVALUE ({})", opts.min)));
                }
                if last > opts.max && !called {
                    return Err(SqlError::new(b"22023", format!("RESTART value ({last}) cannot be greater than MAXVALUE ({})", opts.max)));
                }
                s.opts = opts;
                s.last_value = last;
                s.is_called = called;
                s.log_cnt = 0;
                write_file(&engine, *oid, s, last, called)
            })?;
            Ok("ALTER SEQUENCE".into())
        }
        SeqCmd::Drop { names, missing_ok, .. } => {
            let mut found = Vec::new();
            for (schema, name) in names {
                let shown = match schema {
                    Some(s) => format!("{s}.{name}"),
                    None => name.clone(),
                };
                let ns = match crate::namespace::relation_namespace(backend, snap, schema.as_deref(), name) {
                    Ok(Some(ns)) => Some(ns),
                    Ok(None) => Some(catalog::PUBLIC_NAMESPACE),
                    Err(e) if e.sqlstate() == "3F000" => None,
                    Err(e) => return Err(e),
                };
                let hit = match ns {
                    Some(ns) => lookup(backend, snap, ns, name)?,
                    None if *missing_ok => None,
                    None => return Err(SqlError::new(b"3F000", format!("schema \"{}\" does not exist", schema.clone().unwrap_or_default()))),
                };
                match hit {
                    Some((oid, kind)) if kind == "S" => found.push((oid, name.clone())),
                    Some((_, kind)) => {
                        let e = SqlError::new(b"42809", format!("\"{name}\" is not a sequence"));
                        return Err(match kind.as_str() {
                            "r" => e.with_hint("Use DROP TABLE to remove a table."),
                            "i" => e.with_hint("Use DROP INDEX to remove an index."),
                            _ => e,
                        });
                    }
                    None if *missing_ok => notice(SqlError::notice(b"00000", format!("sequence \"{shown}\" does not exist, skipping")))?,
                    None => return Err(SqlError::new(b"42P01", format!("sequence \"{shown}\" does not exist"))),
                }
            }
            for (oid, name) in &found {
                crate::locking::lock_relation(backend, *oid, ferrogres_engine::lmgr::lock::LockMode::AccessExclusive, false, name)?;
            }
            for (oid, name) in &found {
                if let Some(s) = with_state(backend.engine(), *oid, name, |s| Ok(s.owner)).ok().filter(|o| o.0 != 0) {
                    // A SERIAL column's default depends on it.
                    if let Some(t) = crate::constraints::table_by_oid(backend, snap, s.0)? {
                        if crate::constraints::default_uses(&t, name) {
                            let col = t.columns.get(s.1 as usize - 1).map_or(String::new(), |c| c.name.clone());
                            return Err(SqlError::new(b"2BP01", format!("cannot drop sequence {name} because other objects depend on it"))
                                .with_detail(format!("default value for column {col} of table {} depends on sequence {name}", t.name))
                                .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
                        }
                    }
                }
                drop_sequence(backend, snap, *oid, name)?;
            }
            Ok("DROP SEQUENCE".into())
        }
    }
}

/// Splits a regclass literal (`s`, `sch.s`, `"S"`) into schema and name, as
/// PostgreSQL's identifier rules do (unquoted parts are lowercased).
fn parse_qualified(s: &str) -> Option<(Option<String>, String)> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut chars = s.trim().chars().peekable();
    let mut quoted_any = false;
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quoted_any = true;
                loop {
                    match chars.next() {
                        Some('"') if chars.peek() == Some(&'"') => {
                            chars.next();
                            cur.push('"');
                        }
                        Some('"') => break,
                        Some(c) => cur.push(c),
                        None => return None,
                    }
                }
            }
            '.' => parts.push(std::mem::take(&mut cur)),
            c => cur.push(c.to_ascii_lowercase()),
        }
    }
    parts.push(cur);
    let _ = quoted_any;
    match parts.as_slice() {
        [n] => Some((None, n.clone())),
        [s, n] => Some((Some(s.clone()), n.clone())),
        _ => None,
    }
}

/// nextval / currval / setval / lastval in an expression: the sequence named by
/// a constant argument is resolved here; `None` if `name` is not one of them.
pub fn analyze_call(a: &mut crate::analyze::Analyzer, name: &str, f: &pb::FuncCall) -> Result<Option<Expr>> {
    let func = match name {
        "nextval" => SeqFunc::Nextval,
        "currval" => SeqFunc::Currval,
        "setval" => SeqFunc::Setval,
        "lastval" => SeqFunc::Lastval,
        _ => return Ok(None),
    };
    let want = match func {
        SeqFunc::Lastval => 0..=0,
        SeqFunc::Setval => 2..=3,
        _ => 1..=1,
    };
    if !want.contains(&f.args.len()) {
        return Ok(None); // the caller reports the missing function
    }
    if func == SeqFunc::Lastval {
        return Ok(Some(Expr::Func { func: Func::Seq(func), args: vec![], ty: Type::Int8 }));
    }
    // The first argument: 'name' or 'name'::regclass (or ::text).
    let mut arg = f.args[0].node.as_ref();
    if let Some(NodeEnum::TypeCast(tc)) = arg {
        arg = tc.arg.as_ref().and_then(|n| n.node.as_ref());
    }
    let (lit, loc) = match arg {
        Some(NodeEnum::AConst(c)) => match &c.val {
            Some(pb::a_const::Val::Sval(s)) => (s.sval.clone(), c.location),
            _ => return Err(SqlError::not_supported(format!("{name}() of a non-text constant")).at(a.sql, f.location)),
        },
        _ => return Err(SqlError::not_supported(format!("{name}() of a non-constant argument")).at(a.sql, f.location)),
    };
    let Some((schema, rel)) = parse_qualified(&lit) else {
        return Err(SqlError::new(b"42602", "invalid name syntax".to_string()).at(a.sql, loc));
    };
    let shown = match &schema {
        Some(s) => format!("{s}.{rel}"),
        None => rel.clone(),
    };
    let ns = match crate::namespace::relation_namespace(a.backend, a.snap, schema.as_deref(), &rel) {
        Ok(Some(ns)) => Some(ns),
        Ok(None) => Some(catalog::PUBLIC_NAMESPACE),
        Err(e) => return Err(e.at(a.sql, loc)),
    };
    let hit = match ns {
        Some(ns) => lookup(a.backend, a.snap, ns, &rel)?,
        None => None,
    };
    let oid = match hit {
        Some((oid, kind)) if kind == "S" => oid,
        Some(_) => return Err(SqlError::new(b"42809", format!("\"{rel}\" is not a sequence"))),
        None => return Err(SqlError::new(b"42P01", format!("relation \"{shown}\" does not exist")).at(a.sql, loc)),
    };
    // PostgreSQL's checks: nextval USAGE or UPDATE, currval SELECT or USAGE, setval UPDATE.
    let (privs, any) = match func {
        SeqFunc::Nextval => (crate::acl::USAGE | crate::acl::UPDATE, true),
        SeqFunc::Currval => (crate::acl::SELECT | crate::acl::USAGE, true),
        _ => (crate::acl::UPDATE, false),
    };
    crate::catcache::require(a.backend, crate::acl::PermReq { rel: oid, privs, any, check_as: a.views.check_as, cols: None, func: false });
    let mut args = vec![Expr::Const(Value::Oid(oid), Type::Oid), Expr::Const(Value::Text(rel), Type::Text)];
    if func == SeqFunc::Setval {
        for (i, n) in f.args[1..].iter().enumerate() {
            let n = n.node.as_ref().ok_or_else(|| SqlError::internal("empty argument"))?;
            let e = a.scalar_expr(n)?;
            let to = if i == 0 { Type::Int8 } else { Type::Bool };
            let e = a.coerce(e, to, ferrogres_datum::types::CastContext::Implicit, f.location)?;
            args.push(e);
        }
    }
    Ok(Some(Expr::Func { func: Func::Seq(func), args, ty: Type::Int8 }))
}

/// The options of an identity column's sequence (`GENERATED ... AS IDENTITY
/// (options)`, CREATE SEQUENCE's) over the column's type (`crate::identity`).
pub fn identity_options(a: &crate::analyze::Analyzer, ty: Type, options: &[pb::Node]) -> Result<SeqOptions> {
    let mut raw = parse_options(a, options)?;
    if raw.ty.is_none() {
        raw.ty = Some(ty);
    }
    resolve(&raw, None)
}

/// Every sequence owned by a column (SERIAL, identity): (table OID, column
/// name, the sequence's schema-qualified name quoted as needed), for
/// pg_get_serial_sequence.
pub fn owned_sequences(backend: &Backend, snap: &Snapshot) -> Result<Vec<(u32, String, String)>> {
    let schemas: std::collections::HashMap<u32, String> = crate::namespace::namespaces(backend, snap)?.into_iter().collect();
    let mut owned = Vec::new();
    for (_, row) in scan_rows(backend, &class_rel(), snap)? {
        if let [Value::Oid(oid), Value::Text(n), Value::Oid(ns), _, _, Value::Text(kind), ..] = row.as_slice() {
            if kind == "S" {
                if let Some((table, attnum)) = owner_of(backend, *oid)? {
                    let schema = schemas.get(ns).map(String::as_str).unwrap_or("public");
                    let name = format!("{}.{}", crate::pgcatalog::quote_ident(schema), crate::pgcatalog::quote_ident(n));
                    owned.push((table, attnum, name));
                }
            }
        }
    }
    if owned.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for (_, row) in scan_rows(backend, &catalog::attribute_rel(), snap)? {
        if let [Value::Oid(rel), Value::Text(att), _, Value::Int2(num), ..] = row.as_slice() {
            for (table, attnum, name) in &owned {
                if table == rel && attnum == num {
                    out.push((*table, att.clone(), name.clone()));
                }
            }
        }
    }
    Ok(out)
}

/// The owning column (table OID, attnum) of sequence `oid`, if it has one.
pub fn owner_of(backend: &Backend, oid: u32) -> Result<Option<(u32, i16)>> {
    Ok(read_file(backend.engine(), oid)?.map(|s| s.owner).filter(|o| o.0 != 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_and_cycles() {
        let o = SeqOptions { ty: Type::Int4, start: 1, increment: 2, min: 1, max: 5, cache: 1, cycle: false };
        assert_eq!(step(&o, 1), Some(3));
        assert_eq!(step(&o, 5), None);
        let c = SeqOptions { cycle: true, ..o.clone() };
        assert_eq!(step(&c, 5), Some(1));
        let d = SeqOptions { increment: -1, min: -3, max: -1, start: -1, ..o };
        assert_eq!(step(&d, -3), None);
    }

    #[test]
    fn qualified_names() {
        assert_eq!(parse_qualified("S"), Some((None, "s".into())));
        assert_eq!(parse_qualified("\"S\""), Some((None, "S".into())));
        assert_eq!(parse_qualified("a.B"), Some((Some("a".into()), "b".into())));
    }

    #[test]
    fn defaults_and_checks() {
        let o = serial_options(Type::Int4);
        assert_eq!((o.min, o.max, o.start), (1, i32::MAX as i64, 1));
        let r = RawOptions { increment: Some(0), ..Default::default() };
        assert_eq!(resolve(&r, None).unwrap_err().sqlstate(), "22023");
        let r = RawOptions { increment: Some(-1), ..Default::default() };
        let o = resolve(&r, None).unwrap();
        assert_eq!((o.min, o.max, o.start), (i64::MIN, -1, -1));
    }
}
