//! SQL behaviour in sqllogictest files: every `tests/slt/*.slt` runs against a live
//! server (the `ferrogres` binary) twice, once through the simple query protocol
//! and once through the extended protocol (unnamed Parse, Bind with every result
//! column in text format, Describe portal, Execute, Sync), each time in a database
//! of its own (`CREATE DATABASE slt_<file>_<protocol>`).
//!
//! The client is a minimal one over `std::net::TcpStream`. What it hands to the
//! runner: DataRow values as text, NULL as `NULL` and the empty string as
//! `(empty)` (sqllogictest's conventions); column types from RowDescription's type
//! OIDs (`I` for int2/int4/int8, `R` for float4/float8/numeric, `T` otherwise),
//! checked strictly against the `query` line; CommandComplete's row count for
//! `statement count`; an ErrorResponse as an error whose text is
//! `<message> (SQLSTATE <code>)`, so `statement error <regex>` matches either.
//!
//! The expected results are PostgreSQL 15's. To check a file against a real
//! PostgreSQL, set `FERROGRES_SLT_PORT` to its TCP port on 127.0.0.1 (user
//! postgres, trust authentication): the tests then run there instead of starting
//! the server.

mod common;
use common::server::Server;
use common::*;
use sqllogictest::{DBOutput, DefaultColumnType};
use std::io::Write;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The protocol a [`Client`] speaks for each statement.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Protocol {
    Simple,
    Extended,
}

/// An ErrorResponse, or a protocol failure of the client itself.
#[derive(Debug)]
struct DbError {
    sqlstate: String,
    message: String,
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (SQLSTATE {})", self.message, self.sqlstate)
    }
}

impl std::error::Error for DbError {}

struct Client {
    s: TcpStream,
    protocol: Protocol,
}

impl Client {
    fn connect(port: u16, database: &str, protocol: Protocol) -> Client {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let mut c = Client { s, protocol };
        c.s.write_all(&startup(&[("user", "postgres"), ("database", database), ("client_encoding", "UTF8")])).unwrap();
        loop {
            match c.read() {
                (b'Z', _) => return c,
                (b'E', b) => panic!("startup failed: {:?}", fields(&b)),
                _ => {}
            }
        }
    }

    fn read(&mut self) -> (u8, Vec<u8>) {
        read_message(&mut self.s)
    }

    /// Sends `sql` in this client's protocol and reads the reply up to
    /// ReadyForQuery. With several statements in one simple Query, the last
    /// result counts and the first error wins.
    fn exec(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, DbError> {
        match self.protocol {
            Protocol::Simple => self.s.write_all(&query(sql)).unwrap(),
            Protocol::Extended => {
                let mut m = parse("", sql, &[]);
                m.extend(bind("", "", &[], &[], &[]));
                m.extend(describe(b'P', ""));
                m.extend(execute("", 0));
                m.extend(sync());
                self.s.write_all(&m).unwrap();
            }
        }
        let mut types: Option<Vec<DefaultColumnType>> = None;
        let mut rows = Vec::new();
        let mut out = None;
        let mut error = None;
        loop {
            let (t, b) = self.read();
            match t {
                b'T' => {
                    types = Some(column_types(&b));
                    rows.clear();
                }
                b'D' => rows.push(data_row(&b)),
                b'C' => {
                    let tag = String::from_utf8_lossy(&b[..b.len() - 1]).into_owned();
                    out = Some(match types.take() {
                        Some(types) => DBOutput::Rows { types, rows: std::mem::take(&mut rows) },
                        None => DBOutput::StatementComplete(row_count(&tag)),
                    });
                }
                // An empty query: nothing to report but completion.
                b'I' => out = Some(DBOutput::StatementComplete(0)),
                b'E' => {
                    let f = fields(&b);
                    error.get_or_insert(DbError { sqlstate: f[&b'C'].clone(), message: f[&b'M'].clone() });
                }
                b'Z' => break,
                _ => {}
            }
        }
        match (error, out) {
            (Some(e), _) => Err(e),
            (None, Some(out)) => Ok(out),
            (None, None) => Err(DbError { sqlstate: "XX000".into(), message: "no CommandComplete".into() }),
        }
    }
}

impl sqllogictest::DB for Client {
    type Error = DbError;
    type ColumnType = DefaultColumnType;

    fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, DbError> {
        self.exec(sql)
    }

    fn engine_name(&self) -> &str {
        "ferrogres"
    }
}

/// The column types of a RowDescription, from each field's type OID.
fn column_types(b: &[u8]) -> Vec<DefaultColumnType> {
    let n = i16::from_be_bytes([b[0], b[1]]) as usize;
    let mut i = 2;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        i += b[i..].iter().position(|&c| c == 0).unwrap() + 1; // name
        i += 4 + 2; // table OID, column number
        let oid = u32::from_be_bytes(b[i..i + 4].try_into().unwrap());
        i += 4 + 2 + 4 + 2; // type OID, size, modifier, format
        v.push(match oid {
            20 | 21 | 23 => DefaultColumnType::Integer,
            700 | 701 | 1700 => DefaultColumnType::FloatingPoint,
            _ => DefaultColumnType::Text,
        });
    }
    v
}

/// A DataRow's values as text: NULL as `NULL`, '' as `(empty)`.
fn data_row(b: &[u8]) -> Vec<String> {
    let n = i16::from_be_bytes([b[0], b[1]]) as usize;
    let mut i = 2;
    let mut row = Vec::with_capacity(n);
    for _ in 0..n {
        let len = i32::from_be_bytes(b[i..i + 4].try_into().unwrap());
        i += 4;
        if len < 0 {
            row.push("NULL".to_string());
        } else if len == 0 {
            row.push("(empty)".to_string());
        } else {
            row.push(String::from_utf8_lossy(&b[i..i + len as usize]).into_owned());
            i += len as usize;
        }
    }
    row
}

/// The row count at the end of a command tag ("INSERT 0 3", "UPDATE 2"), or 0.
fn row_count(tag: &str) -> u64 {
    tag.rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0)
}

fn slt_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/slt");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "slt"))
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no .slt files in {}", dir.display());
    v
}

/// Runs every .slt file through `protocol`, each in a new database; panics with
/// every file's failure.
fn run_all(protocol: Protocol) {
    let (_srv, port) = match std::env::var("FERROGRES_SLT_PORT") {
        Ok(p) => (None, p.parse().expect("FERROGRES_SLT_PORT is a port number")),
        Err(_) => {
            let srv = Server::start_temp(&[]);
            let port = srv.port;
            (Some(srv), port)
        }
    };
    let mut admin = Client::connect(port, "postgres", Protocol::Simple);
    let mut failures = Vec::new();
    for file in slt_files() {
        let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
        let db = format!("slt_{stem}_{protocol:?}").to_lowercase();
        admin.exec(&format!("DROP DATABASE IF EXISTS {db}")).unwrap();
        admin.exec(&format!("CREATE DATABASE {db}")).unwrap();
        let mut runner = sqllogictest::Runner::new(move || {
            let db = db.clone();
            async move { Ok::<_, DbError>(Client::connect(port, &db, protocol)) }
        });
        runner.with_column_validator(sqllogictest::strict_column_validator);
        if let Err(e) = runner.run_file(&file) {
            failures.push(format!("{} ({protocol:?} protocol):\n{}", file.display(), e.display(false)));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn slt_files_pass_in_the_simple_protocol() {
    run_all(Protocol::Simple);
}

#[test]
fn slt_files_pass_in_the_extended_protocol() {
    run_all(Protocol::Extended);
}
