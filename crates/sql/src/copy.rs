//! COPY: `COPY t [(cols)] FROM STDIN | 'file'` and `COPY t [(cols)] | (query) TO
//! STDOUT | 'file'`, in PostgreSQL's text, CSV and binary formats (the binary
//! file format is in [`binary`]).
//!
//! ```text
//!  client CopyData ──▶ chunk ──▶ Reader (buffer, line/record split, `\.`)
//!     ──▶ fields (NULL marker, de-escaping / de-quoting) ──▶ type input
//!     ──▶ row (defaults for unlisted columns) ──▶ bulk_insert::BulkInsert
//! ```
//!
//! - Rows are parsed and inserted as the data streams in: the reader keeps only
//!   the current incomplete line (or CSV record) between chunks, and
//!   [`crate::bulk_insert`] at most 1000 rows / 64 kB of tuples, which it stores
//!   with one heap multi-insert per batch and then the index entries row by row
//!   (or one row at a time where PostgreSQL's COPY would: foreign keys, ...).
//! - Errors carry PostgreSQL's CONTEXT (`COPY t, line 3, column b: "x"`) in
//!   [`SqlError::context`], sent as the ErrorResponse `W` field; an error of a
//!   batch's index entries (a unique violation) gives the line number only
//!   (`COPY t, line 3`), as PostgreSQL's buffered COPY does.
//! - FREEZE (PostgreSQL's rules, checked against it): allowed when the table's
//!   visible pg_class row was written by the current subtransaction (created, or
//!   rewritten by TRUNCATE, in it: the rows land in a file no other transaction
//!   can see before this one commits); otherwise 55000 `cannot perform COPY
//!   FREEZE because the table was not created or truncated in the current
//!   subtransaction`. The rows are then inserted frozen (HEAP_XMIN_FROZEN, the
//!   xmin kept, as PostgreSQL): visible to every snapshot once the transaction
//!   commits, the documented exception to MVCC. Not checked yet: PostgreSQL's
//!   25000 `cannot perform COPY FREEZE because of prior transaction activity`
//!   (an open cursor or registered snapshot in the transaction), and a table
//!   created in a subtransaction since released counts as not created here.
//! - Server-side files: every ferrogres user is a superuser, so COPY to and from
//!   files is always allowed (PostgreSQL requires superuser or
//!   pg_read_server_files / pg_write_server_files). Relative paths are refused
//!   (42602 for TO, as PostgreSQL; 0A000 for FROM, which PostgreSQL reads relative
//!   to the data directory). PROGRAM is 0A000.
//! - COPY TO of a table reads it a page at a time ([`crate::rowio::RowScan`]);
//!   COPY TO of a query streams from the executor.

use crate::analyze::Analyzer;
use crate::catalog::Table;
use ferrogres_datum::errors::{Result, SqlError};
use crate::exec::{self, Ctx};
use crate::plan::{Query, Statement};
use crate::session::Output;
use ferrogres_datum::types::{self, Value};
use pg_query::protobuf::{self as pb};
use pg_query::NodeEnum;
use ferrogres_engine::lmgr::lock::LockMode;
use std::io::{Read, Write};

pub mod binary;

/// One step of COPY FROM STDIN as the session pulls it from the client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CopyInEvent {
    Data(Vec<u8>),
    /// CopyDone: the data is complete.
    Done,
    /// CopyFail with the client's message.
    Fail(String),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyFormat {
    Text,
    Csv,
    /// PostgreSQL's binary file format (see [`binary`]).
    Binary,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Header {
    No,
    Yes,
    /// FROM only: the header line's names must match the columns.
    Match,
}

/// The options, validated and defaulted as PostgreSQL does.
#[derive(Clone, Debug)]
pub struct CopyOptions {
    pub format: CopyFormat,
    pub header: Header,
    pub delimiter: u8,
    pub null: String,
    pub quote: u8,
    pub escape: u8,
    pub freeze: bool,
    /// Indexes into the copied columns.
    pub force_quote: Vec<usize>,
    pub force_not_null: Vec<usize>,
    pub force_null: Vec<usize>,
}

#[derive(Clone, Debug)]
pub enum CopyEndpoint {
    /// STDIN / STDOUT: the COPY sub-protocol.
    Client,
    File(String),
}

#[derive(Clone, Debug)]
pub struct CopyStmt {
    /// The table copied from or to (`None` for `COPY (query) TO`).
    pub table: Option<Table>,
    /// Table column indexes, in COPY order.
    pub columns: Vec<usize>,
    pub query: Option<Query>,
    pub is_from: bool,
    pub endpoint: CopyEndpoint,
    pub options: CopyOptions,
    /// Names of the copied columns (the header line).
    pub names: Vec<String>,
}

// ---- analysis -------------------------------------------------------------------

enum OptArg {
    None,
    Str(String),
    Int(i64),
    List(Vec<String>),
    Star,
}

fn opt_arg(d: &pb::DefElem) -> OptArg {
    match d.arg.as_ref().and_then(|n| n.node.as_ref()) {
        None => OptArg::None,
        Some(NodeEnum::String(s)) => OptArg::Str(s.sval.clone()),
        Some(NodeEnum::Integer(i)) => OptArg::Int(i.ival as i64),
        Some(NodeEnum::Float(f)) => OptArg::Str(f.fval.clone()),
        Some(NodeEnum::Boolean(b)) => OptArg::Str(if b.boolval { "true" } else { "false" }.into()),
        Some(NodeEnum::AStar(_)) => OptArg::Star,
        Some(NodeEnum::List(l)) => OptArg::List(
            l.items
                .iter()
                .filter_map(|n| match n.node.as_ref() {
                    Some(NodeEnum::String(s)) => Some(s.sval.clone()),
                    _ => None,
                })
                .collect(),
        ),
        Some(NodeEnum::AConst(c)) => match &c.val {
            Some(pb::a_const::Val::Sval(s)) => OptArg::Str(s.sval.clone()),
            Some(pb::a_const::Val::Ival(i)) => OptArg::Int(i.ival as i64),
            Some(pb::a_const::Val::Boolval(b)) => OptArg::Str(if b.boolval { "true" } else { "false" }.into()),
            _ => OptArg::None,
        },
        Some(_) => OptArg::None,
    }
}

fn opt_bool(name: &str, arg: &OptArg) -> Result<bool> {
    let bad = || SqlError::new(b"22023", format!("{name} requires a Boolean value"));
    match arg {
        OptArg::None => Ok(true),
        OptArg::Int(0) => Ok(false),
        OptArg::Int(1) => Ok(true),
        OptArg::Str(s) => match s.to_ascii_lowercase().as_str() {
            "true" | "on" => Ok(true),
            "false" | "off" => Ok(false),
            _ => Err(bad()),
        },
        _ => Err(bad()),
    }
}

fn opt_string(name: &str, arg: &OptArg) -> Result<String> {
    match arg {
        OptArg::Str(s) => Ok(s.clone()),
        OptArg::Int(i) => Ok(i.to_string()),
        _ => Err(SqlError::new(b"42601", format!("{name} requires a parameter"))),
    }
}

/// Raw options before defaults: which were given.
#[derive(Default)]
struct RawOptions {
    format: Option<CopyFormat>,
    header: Option<Header>,
    delimiter: Option<String>,
    null: Option<String>,
    quote: Option<String>,
    escape: Option<String>,
    freeze: Option<bool>,
    force_quote: Option<Option<Vec<String>>>,
    force_not_null: Option<Vec<String>>,
    force_null: Option<Vec<String>>,
}

/// `COPY ...` to a statement.
pub(crate) fn analyze(a: &mut Analyzer<'_>, s: &pb::CopyStmt) -> Result<Statement> {
    if s.is_program {
        return Err(SqlError::not_supported("COPY to or from an external program"));
    }
    if s.where_clause.is_some() {
        return Err(SqlError::not_supported("COPY FROM ... WHERE"));
    }
    let endpoint = if s.filename.is_empty() {
        CopyEndpoint::Client
    } else {
        if !s.filename.starts_with('/') {
            if s.is_from {
                return Err(SqlError::not_supported("COPY FROM a relative path"));
            }
            return Err(SqlError::new(b"42602", "relative path not allowed for COPY to file"));
        }
        // PostgreSQL 15: server files for superusers and pg_{read,write}_server_files.
        let roles = crate::acl::role_graph(a.backend, a.snap)?;
        let (role, dir) = if s.is_from { (4569, ("pg_read_server_files", "from")) } else { (4570, ("pg_write_server_files", "to")) };
        if !roles.has_privs_of(a.backend.current_user, role) {
            return Err(SqlError::new(b"42501", format!("must be superuser or have privileges of the {} role to COPY {} a file", dir.0, dir.1))
                .with_hint("Anyone can COPY to stdout or from stdin. psql's \\copy command also works for anyone."));
        }
        CopyEndpoint::File(s.filename.clone())
    };
    // Options, in either syntax (the grammar turns the old one into the same list).
    let mut raw = RawOptions::default();
    for o in &s.options {
        let Some(NodeEnum::DefElem(d)) = &o.node else { continue };
        let arg = opt_arg(d);
        let redundant = || a_err(a, SqlError::new(b"42601", "conflicting or redundant options"), d.location);
        match d.defname.as_str() {
            "format" => {
                if raw.format.is_some() {
                    return Err(redundant());
                }
                let f = opt_string("format", &arg)?;
                raw.format = Some(match f.as_str() {
                    "text" => CopyFormat::Text,
                    "csv" => CopyFormat::Csv,
                    "binary" => CopyFormat::Binary,
                    _ => return Err(a_err(a, SqlError::new(b"22023", format!("COPY format \"{f}\" not recognized")), d.location)),
                });
            }
            "freeze" => {
                if raw.freeze.is_some() {
                    return Err(redundant());
                }
                raw.freeze = Some(opt_bool("freeze", &arg)?);
            }
            "delimiter" => {
                if raw.delimiter.is_some() {
                    return Err(redundant());
                }
                raw.delimiter = Some(opt_string("delimiter", &arg)?);
            }
            "null" => {
                if raw.null.is_some() {
                    return Err(redundant());
                }
                raw.null = Some(opt_string("null", &arg)?);
            }
            "header" => {
                if raw.header.is_some() {
                    return Err(redundant());
                }
                raw.header = Some(match &arg {
                    OptArg::Str(m) if m.eq_ignore_ascii_case("match") => {
                        if !s.is_from {
                            return Err(SqlError::new(b"0A000", "cannot use \"match\" with HEADER in COPY TO"));
                        }
                        Header::Match
                    }
                    _ => match opt_bool("header", &arg) {
                        Ok(true) => Header::Yes,
                        Ok(false) => Header::No,
                        Err(_) => return Err(SqlError::new(b"22023", "header requires a Boolean value or \"match\"")),
                    },
                });
            }
            "quote" => {
                if raw.quote.is_some() {
                    return Err(redundant());
                }
                raw.quote = Some(opt_string("quote", &arg)?);
            }
            "escape" => {
                if raw.escape.is_some() {
                    return Err(redundant());
                }
                raw.escape = Some(opt_string("escape", &arg)?);
            }
            "force_quote" => {
                if raw.force_quote.is_some() {
                    return Err(redundant());
                }
                raw.force_quote = Some(match arg {
                    OptArg::Star => None,
                    OptArg::List(l) => Some(l),
                    _ => {
                        return Err(a_err(
                            a,
                            SqlError::new(b"42601", "argument to option \"force_quote\" must be a list of column names"),
                            d.location,
                        ))
                    }
                });
            }
            "force_not_null" | "force_null" => {
                let list = match arg {
                    OptArg::List(l) => l,
                    _ => {
                        return Err(a_err(
                            a,
                            SqlError::new(b"42601", format!("argument to option \"{}\" must be a list of column names", d.defname)),
                            d.location,
                        ))
                    }
                };
                let slot = if d.defname == "force_null" { &mut raw.force_null } else { &mut raw.force_not_null };
                if slot.is_some() {
                    return Err(redundant());
                }
                *slot = Some(list);
            }
            "encoding" => {
                let e = opt_string("encoding", &arg)?;
                if !matches!(e.to_ascii_uppercase().as_str(), "UTF8" | "UTF-8" | "UNICODE") {
                    return Err(SqlError::not_supported(format!("COPY with ENCODING '{e}' (ferrogres serves UTF8 only)")));
                }
            }
            other => {
                return Err(a_err(a, SqlError::new(b"42601", format!("option \"{other}\" not recognized")), d.location));
            }
        }
    }
    let format = raw.format.unwrap_or(CopyFormat::Text);
    let csv = format == CopyFormat::Csv;
    let binary = format == CopyFormat::Binary;
    if binary && raw.delimiter.is_some() {
        return Err(SqlError::new(b"42601", "cannot specify DELIMITER in BINARY mode"));
    }
    if binary && raw.null.is_some() {
        return Err(SqlError::new(b"42601", "cannot specify NULL in BINARY mode"));
    }
    let delimiter = raw.delimiter.clone().unwrap_or_else(|| if csv { ",".into() } else { "\t".into() });
    let null = raw.null.clone().unwrap_or_else(|| if csv { String::new() } else { "\\N".into() });
    if delimiter.len() != 1 {
        return Err(SqlError::new(b"0A000", "COPY delimiter must be a single one-byte character"));
    }
    let delim = delimiter.as_bytes()[0];
    if delim == b'\n' || delim == b'\r' {
        return Err(SqlError::new(b"22023", "COPY delimiter cannot be newline or carriage return"));
    }
    if null.contains('\n') || null.contains('\r') {
        return Err(SqlError::new(b"22023", "COPY null representation cannot use newline or carriage return"));
    }
    if !csv && b"\\.abcdefghijklmnopqrstuvwxyz0123456789".contains(&delim) {
        return Err(SqlError::new(b"22023", format!("COPY delimiter cannot be \"{delimiter}\"")));
    }
    if binary && raw.header.is_some_and(|h| h != Header::No) {
        return Err(SqlError::new(b"0A000", "cannot specify HEADER in BINARY mode"));
    }
    if !csv && raw.quote.is_some() {
        return Err(SqlError::new(b"0A000", "COPY quote available only in CSV mode"));
    }
    let quote = raw.quote.clone().unwrap_or_else(|| "\"".into());
    if csv && quote.len() != 1 {
        return Err(SqlError::new(b"0A000", "COPY quote must be a single one-byte character"));
    }
    if csv && delim == quote.as_bytes()[0] {
        return Err(SqlError::new(b"22023", "COPY delimiter and quote must be different"));
    }
    if !csv && raw.escape.is_some() {
        return Err(SqlError::new(b"0A000", "COPY escape available only in CSV mode"));
    }
    let escape = raw.escape.clone().unwrap_or_else(|| quote.clone());
    if csv && escape.len() != 1 {
        return Err(SqlError::new(b"0A000", "COPY escape must be a single one-byte character"));
    }
    if !csv && raw.force_quote.is_some() {
        return Err(SqlError::new(b"0A000", "COPY force quote available only in CSV mode"));
    }
    if raw.force_quote.is_some() && s.is_from {
        return Err(SqlError::new(b"0A000", "COPY force quote only available using COPY TO"));
    }
    if !csv && raw.force_not_null.is_some() {
        return Err(SqlError::new(b"0A000", "COPY force not null available only in CSV mode"));
    }
    if raw.force_not_null.is_some() && !s.is_from {
        return Err(SqlError::new(b"0A000", "COPY force not null only available using COPY FROM"));
    }
    if !csv && raw.force_null.is_some() {
        return Err(SqlError::new(b"0A000", "COPY force null available only in CSV mode"));
    }
    if raw.force_null.is_some() && !s.is_from {
        return Err(SqlError::new(b"0A000", "COPY force null only available using COPY FROM"));
    }
    if null.as_bytes().contains(&delim) {
        return Err(SqlError::new(b"22023", "COPY delimiter must not appear in the NULL specification"));
    }
    if csv && null.as_bytes().contains(&quote.as_bytes()[0]) {
        return Err(SqlError::new(b"22023", "CSV quote character must not appear in the NULL specification"));
    }

    // The table or query, and the copied columns.
    let (table, query, columns, names) = match (&s.relation, s.query.as_ref().and_then(|q| q.node.as_ref())) {
        (Some(rv), _) => {
            // PostgreSQL reports a missing COPY table without a position. COPY
            // FROM writes (RowExclusiveLock), COPY TO reads (AccessShareLock).
            let mode = if s.is_from { LockMode::RowExclusive } else { LockMode::AccessShare };
            let table = a.range_table_locked(rv, mode).map_err(|mut e| {
                e.position = None;
                e
            })?;
            let privilege = if s.is_from { crate::acl::INSERT } else { crate::acl::SELECT };
            a.require_tracked(table.oid, privilege);
            let mut cols = Vec::new();
            for n in &s.attlist {
                let Some(NodeEnum::String(name)) = &n.node else { continue };
                let Some(i) = table.columns.iter().position(|c| c.name == name.sval) else {
                    return Err(SqlError::new(
                        b"42703",
                        format!("column \"{}\" of relation \"{}\" does not exist", name.sval, table.name),
                    ));
                };
                if cols.contains(&i) {
                    return Err(SqlError::new(b"42701", format!("column \"{}\" specified more than once", name.sval)));
                }
                cols.push(i);
            }
            if s.attlist.is_empty() {
                cols = (0..table.columns.len()).filter(|&i| !table.columns[i].is_dropped()).collect();
            }
            // Column privileges: each copied column (PostgreSQL's DoCopy).
            for &i in &cols {
                a.require_column(table.oid, privilege, i as i16 + 1);
            }
            let names = cols.iter().map(|&i| table.columns[i].name.clone()).collect();
            (Some(table), None, cols, names)
        }
        (None, Some(q @ NodeEnum::SelectStmt(_))) => {
            let Statement::Query(q) = a.statement(q)? else {
                return Err(SqlError::internal("COPY query is not a query"));
            };
            let names: Vec<String> = q.targets.iter().map(|t| t.name.clone()).collect();
            let cols = (0..names.len()).collect();
            (None, Some(q), cols, names)
        }
        (None, Some(_)) => return Err(SqlError::not_supported("COPY of a data-modifying statement")),
        (None, None) => return Err(SqlError::internal("COPY without table or query")),
    };
    let force = |list: Option<Vec<String>>, what: &str| -> Result<Vec<usize>> {
        let mut out = Vec::new();
        for n in list.unwrap_or_default() {
            let Some(pos) = names.iter().position(|x| *x == n) else {
                if let Some(t) = &table {
                    if !t.columns.iter().any(|c| c.name == n) {
                        return Err(SqlError::new(b"42703", format!("column \"{n}\" of relation \"{}\" does not exist", t.name)));
                    }
                }
                return Err(SqlError::new(b"42P10", format!("{what} column \"{n}\" not referenced by COPY")));
            };
            out.push(pos);
        }
        Ok(out)
    };
    let force_quote = match raw.force_quote.clone() {
        Some(None) => (0..names.len()).collect(),
        Some(Some(l)) => force(Some(l), "FORCE_QUOTE")?,
        None => vec![],
    };
    let force_not_null = force(raw.force_not_null.clone(), "FORCE_NOT_NULL")?;
    let force_null = force(raw.force_null.clone(), "FORCE_NULL")?;
    let options = CopyOptions {
        format,
        header: raw.header.unwrap_or(Header::No),
        delimiter: delim,
        null,
        quote: quote.as_bytes()[0],
        escape: escape.as_bytes()[0],
        freeze: raw.freeze.unwrap_or(false),
        force_quote,
        force_not_null,
        force_null,
    };
    Ok(Statement::Copy(Box::new(CopyStmt { table, columns, query, is_from: s.is_from, endpoint, options, names })))
}

fn a_err(a: &Analyzer<'_>, e: SqlError, loc: i32) -> SqlError {
    e.at(a.sql, loc)
}

// ---- execution --------------------------------------------------------------------

/// Runs a COPY; returns its tag (`COPY n`).
pub fn execute(c: &CopyStmt, ctx: &mut Ctx, out: &mut dyn Output) -> Result<String> {
    if c.is_from {
        copy_from(c, ctx, out)
    } else {
        copy_to(c, ctx, out)
    }
}

/// Where COPY FROM reads its bytes.
enum Source<'o> {
    Client(&'o mut dyn Output),
    File(std::fs::File),
}

impl Source<'_> {
    /// The next chunk, `None` at the end. A client's CopyFail is 57014.
    fn next_chunk(&mut self) -> Result<Option<Vec<u8>>> {
        match self {
            Source::Client(out) => match out.copy_in_read()? {
                CopyInEvent::Data(d) => Ok(Some(d)),
                CopyInEvent::Done => Ok(None),
                CopyInEvent::Fail(m) => Err(SqlError::new(b"57014", format!("COPY from stdin failed: {m}"))),
            },
            Source::File(f) => {
                let mut buf = vec![0u8; 64 * 1024];
                let n = f.read(&mut buf).map_err(|e| SqlError::new(b"58030", format!("could not read from COPY file: {e}")))?;
                if n == 0 {
                    return Ok(None);
                }
                buf.truncate(n);
                Ok(Some(buf))
            }
        }
    }
}

fn io_error(e: &std::io::Error, what: String) -> SqlError {
    let code: &[u8; 5] = match e.kind() {
        std::io::ErrorKind::NotFound => b"58P01",
        std::io::ErrorKind::PermissionDenied => b"42501",
        _ => b"58030",
    };
    let reason = match e.kind() {
        std::io::ErrorKind::NotFound => "No such file or directory".to_string(),
        std::io::ErrorKind::PermissionDenied => "Permission denied".to_string(),
        _ => {
            let s = e.to_string();
            s.split(" (os error").next().unwrap_or(&s).to_string()
        }
    };
    SqlError::new(code, format!("{what}: {reason}"))
}

/// The text PostgreSQL shows of a line in a CONTEXT: at most 100 bytes, then "...".
fn shown(line: &[u8]) -> String {
    let s = String::from_utf8_lossy(line);
    if s.len() <= 100 {
        return s.into_owned();
    }
    let mut end = 100;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

/// Whether the table's visible pg_class row was written by the current
/// subtransaction (the table was created, or truncated, in it): COPY FREEZE's
/// precondition.
fn created_in_this_transaction(ctx: &mut Ctx, table: &Table) -> Result<bool> {
    use ferrogres_engine::heap::heapam;
    use ferrogres_engine::heap::tuple::{deform_tuple, AttrDesc, Datum, TupleHeader};
    let pg_class = crate::catalog::locator(crate::catalog::PG_CLASS);
    let mut xmin = None;
    let oid_desc = [AttrDesc::fixed(4)];
    heapam::heap_scan(ctx.backend, pg_class, &ctx.snap, &mut |_, t| {
        if let [Some(Datum::ByVal(oid))] = deform_tuple(&oid_desc, t)?.as_slice() {
            if *oid as u32 == table.oid {
                xmin = Some(TupleHeader::read(t)?.xmin);
            }
        }
        Ok(())
    })?;
    // The current subtransaction only, as PostgreSQL's rd_createSubid /
    // rd_newRelfilenodeSubid == GetCurrentSubTransactionId().
    Ok(xmin.is_some_and(|x| x == ctx.backend.txn.current_xid()))
}

/// Splits the input into lines (text) or records (CSV, where a quoted field may
/// hold newlines), keeping only the unfinished one between chunks.
struct Reader {
    buf: Vec<u8>,
    /// Start of the unconsumed part of `buf`.
    pos: usize,
    csv: bool,
    quote: u8,
    escape: u8,
    /// Physical line number of the last record returned (1-based).
    line: u64,
    /// The end of line, decided by the first line: true for "\r\n".
    crlf: Option<bool>,
    /// For error contexts.
    relname: String,
    /// How far past `pos` the search for the end of the current record got
    /// (offset, inside a CSV quote, newlines inside quotes), so that a record
    /// arriving in many small CopyData messages is scanned once, not once per
    /// message (quadratic: a 1 MB line in 10-byte messages took minutes).
    scan: (usize, bool, u64),
}

impl Reader {
    fn new(csv: bool, quote: u8, escape: u8, relname: String) -> Reader {
        Reader { buf: Vec::new(), pos: 0, csv, quote, escape, line: 0, crlf: None, relname, scan: (0, false, 0) }
    }

    /// Forget the buffered data (after the end-of-data marker).
    fn clear(&mut self) {
        self.buf.clear();
        self.pos = 0;
        self.scan = (0, false, 0);
    }

    /// The next complete record (without its line end), if the buffer holds one.
    /// At `eof`, a final record without a line end counts as complete.
    fn next_record(&mut self, eof: bool) -> Result<Option<Vec<u8>>> {
        let data = &self.buf[self.pos..];
        if data.is_empty() {
            return Ok(None);
        }
        let (mut i, mut in_quote, mut newlines) = self.scan;
        let end = loop {
            if i >= data.len() {
                if !eof {
                    self.scan = (i, in_quote, newlines);
                    return Ok(None);
                }
                if in_quote {
                    return Err(SqlError::new(b"22P04", "unterminated CSV quoted field")
                        .with_context(format!("COPY {}, line {}: \"{}\"", self.relname, self.line + 1, shown(data))));
                }
                break None;
            }
            let b = data[i];
            if self.csv {
                if in_quote {
                    if b == self.escape && self.escape != self.quote {
                        if i + 1 >= data.len() && !eof {
                            // Whether it escapes depends on the next byte: wait for it.
                            self.scan = (i, in_quote, newlines);
                            return Ok(None);
                        }
                        if i + 1 < data.len() && (data[i + 1] == self.quote || data[i + 1] == self.escape) {
                            i += 2;
                            continue;
                        }
                    }
                    if b == self.quote {
                        in_quote = false;
                    } else if b == b'\n' {
                        newlines += 1;
                    }
                    i += 1;
                    continue;
                }
                if b == self.quote {
                    in_quote = true;
                    i += 1;
                    continue;
                }
            }
            if b == b'\n' {
                break Some(i);
            }
            i += 1;
        };
        let (rec_end, next) = match end {
            Some(i) => (i, i + 1),
            None => (data.len(), data.len()),
        };
        let mut rec = data[..rec_end].to_vec();
        self.pos += next;
        self.scan = (0, false, 0);
        self.line += 1 + newlines;
        if self.crlf.is_none() && end.is_some() {
            self.crlf = Some(rec.last() == Some(&b'\r'));
        }
        if self.crlf == Some(true) && rec.last() == Some(&b'\r') {
            rec.pop();
        }
        // Drop what was consumed once it is a good part of the buffer.
        if self.pos > 64 * 1024 && self.pos * 2 > self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        Ok(Some(rec))
    }
}

/// One field as read: its bytes (de-escaped / de-quoted) or NULL.
type Field = Option<Vec<u8>>;

/// Splits a text-format line into fields: the NULL marker is compared before
/// de-escaping; `\b \f \n \r \t \v`, `\NNN` octal and `\xHH` hex are decoded; any
/// other backslashed character is itself.
fn text_fields(line: &[u8], o: &CopyOptions) -> Result<Vec<Field>> {
    if line.contains(&b'\r') {
        return Err(SqlError::new(b"22P04", "literal carriage return found in data")
            .with_hint("Use \"\\r\" to represent carriage return."));
    }
    let mut fields = Vec::new();
    let mut i = 0;
    loop {
        // Find the field's raw end: the next unescaped delimiter.
        let start = i;
        while i < line.len() && line[i] != o.delimiter {
            if line[i] == b'\\' && i + 1 < line.len() {
                i += 2;
            } else {
                i += 1;
            }
        }
        let raw = &line[start..i.min(line.len())];
        if raw == o.null.as_bytes() {
            fields.push(None);
        } else {
            let mut v = Vec::with_capacity(raw.len());
            let mut j = 0;
            while j < raw.len() {
                let b = raw[j];
                if b != b'\\' || j + 1 >= raw.len() {
                    v.push(b);
                    j += 1;
                    continue;
                }
                let c = raw[j + 1];
                j += 2;
                match c {
                    b'b' => v.push(8),
                    b'f' => v.push(12),
                    b'n' => v.push(b'\n'),
                    b'r' => v.push(b'\r'),
                    b't' => v.push(b'\t'),
                    b'v' => v.push(11),
                    b'0'..=b'7' => {
                        let mut n = (c - b'0') as u32;
                        for _ in 0..2 {
                            match raw.get(j) {
                                Some(d @ b'0'..=b'7') => {
                                    n = n * 8 + (d - b'0') as u32;
                                    j += 1;
                                }
                                _ => break,
                            }
                        }
                        v.push((n & 0xff) as u8);
                    }
                    b'x' if raw.get(j).is_some_and(|d| d.is_ascii_hexdigit()) => {
                        let mut n = 0u32;
                        for _ in 0..2 {
                            match raw.get(j) {
                                Some(d) if d.is_ascii_hexdigit() => {
                                    n = n * 16 + (*d as char).to_digit(16).unwrap_or(0);
                                    j += 1;
                                }
                                _ => break,
                            }
                        }
                        v.push(n as u8);
                    }
                    other => v.push(other),
                }
            }
            fields.push(Some(v));
        }
        if i >= line.len() {
            break;
        }
        i += 1; // the delimiter
    }
    Ok(fields)
}

/// Splits a CSV record into fields. An unquoted field equal to the NULL string
/// is NULL (FORCE_NOT_NULL columns never; FORCE_NULL columns also when quoted).
fn csv_fields(rec: &[u8], o: &CopyOptions) -> Vec<Field> {
    let mut fields = Vec::new();
    let mut i = 0;
    loop {
        let idx = fields.len();
        let start = i;
        let mut v = Vec::new();
        let mut quoted = false;
        let mut in_quote = false;
        while i < rec.len() {
            let b = rec[i];
            if in_quote {
                // Inside quotes the escape character makes the next quote (or
                // escape) character literal; with escape = quote that is "".
                if b == o.escape && i + 1 < rec.len() && (rec[i + 1] == o.quote || rec[i + 1] == o.escape) {
                    v.push(rec[i + 1]);
                    i += 2;
                    continue;
                }
                if b == o.quote {
                    in_quote = false;
                } else {
                    v.push(b);
                }
                i += 1;
                continue;
            }
            if b == o.delimiter {
                break;
            }
            if b == o.quote {
                in_quote = true;
                quoted = true;
                i += 1;
                continue;
            }
            v.push(b);
            i += 1;
        }
        let raw = &rec[start..i];
        let is_null_text = if quoted { v == o.null.as_bytes() } else { raw == o.null.as_bytes() };
        let null = if o.force_not_null.contains(&idx) {
            false
        } else if quoted {
            is_null_text && o.force_null.contains(&idx)
        } else {
            is_null_text
        };
        fields.push(if null { None } else { Some(v) });
        if i >= rec.len() {
            break;
        }
        i += 1;
    }
    fields
}

/// A field as text: valid UTF-8 without NUL (a raw or de-escaped NUL is 22021
/// `0x00`, as PostgreSQL's encoding check reports it).
fn utf8(bytes: Vec<u8>) -> Result<String> {
    ferrogres_datum::types::verify_utf8(&bytes)?;
    String::from_utf8(bytes).map_err(|_| SqlError::internal("COPY field verified as UTF-8 is not"))
}

fn copy_from(c: &CopyStmt, ctx: &mut Ctx, out: &mut dyn Output) -> Result<String> {
    let table = c.table.as_ref().ok_or_else(|| SqlError::internal("COPY FROM without a table"))?;
    let o = &c.options;
    let mut source = match &c.endpoint {
        CopyEndpoint::Client => {
            out.copy_in_start(c.columns.len(), o.format == CopyFormat::Binary)?;
            Source::Client(out)
        }
        CopyEndpoint::File(path) => {
            if std::path::Path::new(path).is_dir() {
                return Err(SqlError::new(b"42809", format!("\"{path}\" is a directory")));
            }
            let f = std::fs::File::open(path).map_err(|e| {
                io_error(&e, format!("could not open file \"{path}\" for reading")).with_hint(
                    "COPY FROM instructs the PostgreSQL server process to read a file. You may want a client-side facility such as psql's \\copy.",
                )
            })?;
            Source::File(f)
        }
    };
    if o.freeze && !created_in_this_transaction(ctx, table)? {
        return Err(SqlError::new(
            b"55000",
            "cannot perform COPY FREEZE because the table was not created or truncated in the current subtransaction",
        ));
    }
    if o.format == CopyFormat::Binary {
        return binary::copy_from(c, table, &mut source, ctx);
    }
    let csv = o.format == CopyFormat::Csv;
    let mut reader = Reader::new(csv, o.quote, o.escape, table.name.clone());
    let mut eof = false;
    let mut ended = false; // saw the `\.` marker
    let mut header_pending = o.header != Header::No;
    let mut n: u64 = 0;
    let ctx_line = |line: u64, rec: &[u8]| format!("COPY {}, line {line}: \"{}\"", table.name, shown(rec));
    let single = crate::bulk_insert::row_at_a_time(table, &c.columns, false);
    let mut batch = crate::bulk_insert::BulkInsert::new(table, single, o.freeze, true);
    loop {
        let rec = match reader.next_record(eof)? {
            Some(r) => r,
            None if eof => break,
            None => {
                match source.next_chunk() {
                    Ok(Some(chunk)) => {
                        if !ended {
                            reader.buf.extend_from_slice(&chunk);
                        }
                    }
                    Ok(None) => eof = true,
                    Err(e) if e.code == *b"57014" => {
                        // The line being read when the client gave up, as PostgreSQL counts.
                        return Err(e.with_context(format!("COPY {}, line {}", table.name, reader.line + 1)));
                    }
                    Err(e) => return Err(e),
                }
                continue;
            }
        };
        if ended {
            continue;
        }
        let line = reader.line;
        if rec == b"\\." {
            // End-of-data marker: the rest (until CopyDone) is ignored.
            ended = true;
            reader.clear();
            if matches!(source, Source::File(_)) {
                break;
            }
            continue;
        }
        let fields = if csv { csv_fields(&rec, o) } else { text_fields(&rec, o).map_err(|e| e.with_context(ctx_line(line, &rec)))? };
        if header_pending {
            header_pending = false;
            if o.header == Header::Match {
                if fields.len() != c.names.len() {
                    return Err(SqlError::new(
                        b"22P04",
                        format!("wrong number of fields in header line: got {}, expected {}", fields.len(), c.names.len()),
                    )
                    .with_context(ctx_line(line, &rec)));
                }
                for (i, (f, want)) in fields.iter().zip(&c.names).enumerate() {
                    let got = f.as_ref().map(|b| String::from_utf8_lossy(b).into_owned());
                    if got.as_deref() != Some(want.as_str()) {
                        let e = match got {
                            None => SqlError::new(b"22P04", format!("column name mismatch in header line field {}: got null value (\"{}\"), expected \"{want}\"", i + 1, o.null)),
                            Some(g) => SqlError::new(b"22P04", format!("column name mismatch in header line field {}: got \"{g}\", expected \"{want}\"", i + 1)),
                        };
                        return Err(e.with_context(ctx_line(line, &rec)));
                    }
                }
            }
            continue;
        }
        let mut row: Vec<Value> = crate::constraints::default_values(table, &c.columns, ctx)?;
        let mut fields = fields.into_iter();
        for &ci in &c.columns {
            let col = &table.columns[ci];
            let Some(f) = fields.next() else {
                return Err(SqlError::new(b"22P04", format!("missing data for column \"{}\"", col.name)).with_context(ctx_line(line, &rec)));
            };
            row[ci] = match f {
                None => Value::Null,
                Some(bytes) => {
                    let col_ctx = |s: &str| format!("COPY {}, line {line}, column {}: \"{}\"", table.name, col.name, shown(s.as_bytes()));
                    let s = utf8(bytes).map_err(|e| e.with_context(format!("COPY {}, line {line}", table.name)))?;
                    types::input(col.ty, &s, col.typmod).map_err(|e| e.with_context(col_ctx(&s)))?
                }
            };
        }
        if fields.next().is_some() || (c.columns.is_empty() && !rec.is_empty()) {
            return Err(SqlError::new(b"22P04", "extra data after last expected column").with_context(ctx_line(line, &rec)));
        }
        // A foreign-key failure has no line (PostgreSQL checks it after the rows, in an AFTER trigger).
        batch.add(row, line, ctx).map_err(|e| if e.context.is_some() || &e.code == b"23503" { e } else { e.with_context(ctx_line(line, &rec)) })?;
        n += 1;
        if n.is_multiple_of(1024) {
            ctx.env.check_interrupts()?;
        }
    }
    batch.finish(ctx)?;
    Ok(format!("COPY {n}"))
}

/// Where COPY TO writes.
enum Sink<'o> {
    Client(&'o mut dyn Output),
    File(std::io::BufWriter<std::fs::File>, String),
}

impl Sink<'_> {
    fn write(&mut self, data: &[u8]) -> Result<()> {
        match self {
            Sink::Client(out) => out.copy_data(data),
            Sink::File(f, path) => f.write_all(data).map_err(|e| io_error(&e, format!("could not write to file \"{path}\""))),
        }
    }
    fn finish(self) -> Result<()> {
        match self {
            Sink::Client(out) => out.copy_done(),
            Sink::File(mut f, path) => f.flush().map_err(|e| io_error(&e, format!("could not write to file \"{path}\""))),
        }
    }
}

/// Appends one value in text format: backslash escapes for the special bytes
/// and the delimiter.
fn text_value(line: &mut Vec<u8>, s: &str, delim: u8) {
    for &b in s.as_bytes() {
        match b {
            b'\\' => line.extend_from_slice(b"\\\\"),
            8 => line.extend_from_slice(b"\\b"),
            12 => line.extend_from_slice(b"\\f"),
            b'\n' => line.extend_from_slice(b"\\n"),
            b'\r' => line.extend_from_slice(b"\\r"),
            b'\t' => line.extend_from_slice(b"\\t"),
            11 => line.extend_from_slice(b"\\v"),
            b if b == delim => {
                line.push(b'\\');
                line.push(b);
            }
            b => line.push(b),
        }
    }
}

/// Appends one value in CSV format, quoted when it must be (it holds the
/// delimiter, the quote, a line end, equals the NULL string, or is `\.`) or
/// when FORCE_QUOTE asks.
fn csv_value(line: &mut Vec<u8>, s: &str, o: &CopyOptions, force: bool, single_column: bool) {
    let b = s.as_bytes();
    let must = force
        || b.is_empty() && o.null.is_empty()
        || s == o.null
        || b.iter().any(|&x| x == o.delimiter || x == o.quote || x == b'\n' || x == b'\r')
        || (single_column && s == "\\.");
    if !must {
        line.extend_from_slice(b);
        return;
    }
    line.push(o.quote);
    for &x in b {
        if x == o.quote || x == o.escape {
            line.push(o.escape);
        }
        line.push(x);
    }
    line.push(o.quote);
}

fn copy_to(c: &CopyStmt, ctx: &mut Ctx, out: &mut dyn Output) -> Result<String> {
    let o = &c.options;
    let csv = o.format == CopyFormat::Csv;
    let mut sink = match &c.endpoint {
        CopyEndpoint::Client => Sink::Client(out),
        CopyEndpoint::File(path) => {
            if std::path::Path::new(path).is_dir() {
                return Err(SqlError::new(b"42809", format!("\"{path}\" is a directory")));
            }
            let f = std::fs::File::create(path).map_err(|e| {
                io_error(&e, format!("could not open file \"{path}\" for writing")).with_hint(
                    "COPY TO instructs the PostgreSQL server process to write a file. You may want a client-side facility such as psql's \\copy.",
                )
            })?;
            Sink::File(std::io::BufWriter::new(f), path.clone())
        }
    };
    // The rows: the table's visible rows projected to the columns, or the query's.
    let mut rows: Box<dyn exec::RowIter> = match (&c.table, &c.query) {
        (_, Some(q)) => exec::run_query(q, ctx)?,
        (Some(t), None) => Box::new(Projected { scan: crate::rowio::RowScan::new(ctx.backend, &t.storage)?, cols: c.columns.clone() }),
        (None, None) => return Err(SqlError::internal("COPY TO without table or query")),
    };
    if let Sink::Client(out) = &mut sink {
        out.copy_out_start(c.names.len(), o.format == CopyFormat::Binary)?;
    }
    let ncols = c.names.len();
    let mut line = Vec::new();
    let write_fields = |line: &mut Vec<u8>, vals: &mut dyn Iterator<Item = Option<String>>| {
        for (i, v) in vals.enumerate() {
            if i > 0 {
                line.push(o.delimiter);
            }
            match v {
                None => line.extend_from_slice(o.null.as_bytes()),
                Some(s) if csv => csv_value(line, &s, o, o.force_quote.contains(&i), ncols == 1),
                Some(s) => text_value(line, &s, o.delimiter),
            }
        }
        line.push(b'\n');
    };
    if o.format == CopyFormat::Binary {
        return binary::copy_to(ncols, rows.as_mut(), sink, ctx);
    }
    if o.header == Header::Yes {
        write_fields(&mut line, &mut c.names.iter().map(|n| Some(n.clone())));
        sink.write(&line)?;
    }
    let mut n: u64 = 0;
    while let Some(row) = rows.next(ctx)? {
        line.clear();
        write_fields(&mut line, &mut row.iter().map(types::output));
        sink.write(&line)?;
        n += 1;
        if n.is_multiple_of(1024) {
            ctx.env.check_interrupts()?;
        }
    }
    sink.finish()?;
    Ok(format!("COPY {n}"))
}

/// The table's visible rows, projected to the copied columns, read a page at a
/// time (the table is never held in memory).
struct Projected {
    scan: crate::rowio::RowScan,
    cols: Vec<usize>,
}

impl exec::RowIter for Projected {
    fn next(&mut self, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        Ok(self.scan.next_columns(ctx.backend, &ctx.snap, &self.cols)?.map(|(_, r)| r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(csv: bool) -> CopyOptions {
        CopyOptions {
            format: if csv { CopyFormat::Csv } else { CopyFormat::Text },
            header: Header::No,
            delimiter: if csv { b',' } else { b'\t' },
            null: if csv { String::new() } else { "\\N".into() },
            quote: b'"',
            escape: b'"',
            freeze: false,
            force_quote: vec![],
            force_not_null: vec![],
            force_null: vec![],
        }
    }

    #[test]
    fn text_fields_unescape() {
        let o = opts(false);
        let f = text_fields(b"a\\tb\t\\N\t\\101\\x41\\\\\t\\\t", &o).unwrap();
        assert_eq!(f, vec![Some(b"a\tb".to_vec()), None, Some(b"AA\\".to_vec()), Some(b"\t".to_vec())]);
        assert_eq!(text_fields(b"", &o).unwrap(), vec![Some(vec![])]);
        let mut line = Vec::new();
        text_value(&mut line, "a\tb\\c\nd", b'\t');
        assert_eq!(line, b"a\\tb\\\\c\\nd");
    }

    #[test]
    fn csv_fields_quotes_and_nulls() {
        let o = opts(true);
        let f = csv_fields(b"1,\"a,b\",,\"\",\"x\"\"y\"", &o);
        assert_eq!(f, vec![Some(b"1".to_vec()), Some(b"a,b".to_vec()), None, Some(vec![]), Some(b"x\"y".to_vec())]);
        let mut line = Vec::new();
        csv_value(&mut line, "x\"y", &o, false, false);
        assert_eq!(line, b"\"x\"\"y\"");
    }

    #[test]
    fn reader_splits_records_across_chunks() {
        let mut r = Reader::new(false, b'"', b'"', String::new());
        r.buf = b"1\t2\n3".to_vec();
        assert_eq!(r.next_record(false).unwrap(), Some(b"1\t2".to_vec()));
        assert_eq!(r.next_record(false).unwrap(), None);
        r.buf.extend_from_slice(b"\t4\n");
        assert_eq!(r.next_record(false).unwrap(), Some(b"3\t4".to_vec()));
        assert_eq!(r.line, 2);
        let mut r = Reader::new(true, b'"', b'"', String::new());
        r.buf = b"\"a\nb\",1\nx".to_vec();
        assert_eq!(r.next_record(false).unwrap(), Some(b"\"a\nb\",1".to_vec()));
        assert_eq!(r.next_record(true).unwrap(), Some(b"x".to_vec()));
    }

    /// Records fed one byte at a time come out as when fed whole, quotes,
    /// escapes and newlines inside quotes included; the search for a record's
    /// end resumes where it stopped (a long line in small chunks is linear).
    #[test]
    fn reader_resumes_its_scan_across_chunks() {
        let cases: [(bool, u8, &[u8], usize); 3] = [
            (false, b'"', b"1\tab\n2\t\\n\n3\tlast", 3),
            (true, b'"', b"1,\"a\nb\"\"c\"\n2,\"\"\n\"x,\ny\",3", 3),
            (true, b'\\', b"1,\"a\\\"\nb\\\\\",2\n3,\"\\\"\"\n", 2),
        ];
        for (csv, escape, input, records) in cases {
            let whole = {
                let mut r = Reader::new(csv, b'"', escape, String::new());
                r.buf = input.to_vec();
                let mut v = Vec::new();
                while let Some(rec) = r.next_record(true).unwrap() {
                    v.push((rec, r.line));
                }
                v
            };
            let mut r = Reader::new(csv, b'"', escape, String::new());
            let mut v = Vec::new();
            for &b in input {
                r.buf.push(b);
                while let Some(rec) = r.next_record(false).unwrap() {
                    v.push((rec, r.line));
                }
            }
            while let Some(rec) = r.next_record(true).unwrap() {
                v.push((rec, r.line));
            }
            assert_eq!(v, whole, "{:?}", String::from_utf8_lossy(input));
            assert_eq!(whole.len(), records, "{:?}", String::from_utf8_lossy(input));
        }
        // 400 kB in one-byte chunks: 8e10 byte visits when each chunk rescanned
        // the line (a minute or more), 4e5 now.
        let t = std::time::Instant::now();
        let mut r = Reader::new(true, b'"', b'"', String::new());
        for _ in 0..400_000 {
            r.buf.push(b'x');
            assert_eq!(r.next_record(false).unwrap(), None);
        }
        r.buf.push(b'\n');
        assert_eq!(r.next_record(false).unwrap().map(|v| v.len()), Some(400_000));
        assert!(t.elapsed() < std::time::Duration::from_secs(5), "{:?}", t.elapsed());
    }
}
