//! The SQL layer's error: PostgreSQL's ErrorResponse fields, with a SQLSTATE.
//!
//! Kinds kept apart (STYLE.md): a user error (bad SQL, a constraint, bad input) has
//! its PostgreSQL SQLSTATE; engine errors (corruption XX001, I/O 58030, internal
//! XX000) keep the engine's code and text. `Fatal` severity ends the session.

use ferrogres_engine::Error as EngineError;

pub type Result<T, E = SqlError> = std::result::Result<T, E>;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Fatal,
    Warning,
    Notice,
}

/// An error (or notice) as the client will see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SqlError {
    pub severity: Severity,
    pub code: [u8; 5],
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
    /// 1-based character position in the statement text.
    pub position: Option<u32>,
    /// Where the error happened (the ErrorResponse `W` field, psql's CONTEXT line),
    /// e.g. `COPY t, line 3, column b: "x"`.
    pub context: Option<String>,
    /// The objects the error is about (constraint violations): the
    /// ErrorResponse's `s` `t` `c` `d` `n` fields.
    pub objects: Option<Box<ErrorObjects>>,
}

/// PostgreSQL's schema, table, column, data type and constraint fields of an
/// error (`err_generic_string(PG_DIAG_SCHEMA_NAME, ...)`): drivers expose them
/// (psycopg's `Diagnostics`, asyncpg's `schema_name`, ...), ORMs map
/// constraint names to exceptions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ErrorObjects {
    pub schema: Option<String>,
    pub table: Option<String>,
    pub column: Option<String>,
    pub datatype: Option<String>,
    pub constraint: Option<String>,
    /// The OID of the schema, when the code that raised the error had no
    /// catalog snapshot at hand: the session fills `schema` from it before
    /// the error leaves ([`ErrorObjects::of_table`]). Not sent.
    pub namespace: Option<u32>,
}

impl ErrorObjects {
    /// PostgreSQL's `errtable` / `errtableconstraint` / `errtablecol`: the
    /// table's schema (by OID) and name, plus a constraint or a column.
    /// The catalog's `Table::error_objects` passes a table's name and schema OID.
    pub fn of_table(table: &str, namespace: u32, constraint: Option<&str>, column: Option<&str>) -> ErrorObjects {
        ErrorObjects {
            table: Some(table.to_string()),
            namespace: Some(namespace),
            constraint: constraint.map(str::to_string),
            column: column.map(str::to_string),
            ..Default::default()
        }
    }

    /// The wire fields in PostgreSQL's order (`s t c d n`).
    pub fn wire_fields(&self) -> Vec<(u8, String)> {
        [(b's', &self.schema), (b't', &self.table), (b'c', &self.column), (b'd', &self.datatype), (b'n', &self.constraint)]
            .into_iter()
            .filter_map(|(c, v)| v.clone().map(|v| (c, v)))
            .collect()
    }
}

impl SqlError {
    pub fn new(code: &[u8; 5], message: impl Into<String>) -> SqlError {
        SqlError { severity: Severity::Error, code: *code, message: message.into(), detail: None, hint: None, position: None, context: None, objects: None }
    }
    pub fn notice(code: &[u8; 5], message: impl Into<String>) -> SqlError {
        SqlError { severity: Severity::Notice, ..SqlError::new(code, message) }
    }
    pub fn warning(code: &[u8; 5], message: impl Into<String>) -> SqlError {
        SqlError { severity: Severity::Warning, ..SqlError::new(code, message) }
    }
    pub fn with_detail(mut self, d: impl Into<String>) -> SqlError {
        self.detail = Some(d.into());
        self
    }
    pub fn with_hint(mut self, h: impl Into<String>) -> SqlError {
        self.hint = Some(h.into());
        self
    }
    /// The schema and table of a constraint violation, its constraint or column.
    pub fn with_objects(mut self, o: ErrorObjects) -> SqlError {
        self.objects = Some(Box::new(o));
        self
    }
    pub fn with_context(mut self, c: impl Into<String>) -> SqlError {
        self.context = Some(c.into());
        self
    }
    /// Sets the position from a parse-tree location (0-based byte offset into
    /// `sql`, or -1 for none), converting to PostgreSQL's 1-based character count.
    pub fn at(mut self, sql: &str, location: i32) -> SqlError {
        if location >= 0 && self.position.is_none() {
            let loc = (location as usize).min(sql.len());
            let chars = sql.get(..loc).map_or(loc, |s| s.chars().count());
            self.position = Some(chars as u32 + 1);
        }
        self
    }
    pub fn sqlstate(&self) -> &str {
        std::str::from_utf8(&self.code).unwrap_or("XX000")
    }

    /// 0A000 for anything this SQL layer does not do yet.
    pub fn not_supported(what: impl std::fmt::Display) -> SqlError {
        SqlError::new(b"0A000", format!("feature not supported: {what}"))
    }
    pub fn syntax(message: impl Into<String>) -> SqlError {
        SqlError::new(b"42601", message)
    }
    pub fn internal(message: impl Into<String>) -> SqlError {
        SqlError::new(b"XX000", message)
    }
}

impl std::fmt::Display for SqlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.sqlstate(), self.message)
    }
}

impl std::error::Error for SqlError {}

impl From<EngineError> for SqlError {
    fn from(e: EngineError) -> SqlError {
        let code = e.sqlstate().0;
        match e {
            EngineError::User { message, detail, hint, .. } => {
                SqlError { detail, hint, ..SqlError::new(&code, message) }
            }
            other => SqlError::new(&code, other.to_string()),
        }
    }
}

/// CHECK_FOR_INTERRUPTS for code below the executor: a function that can run
/// long (numeric math, string building, series) polls this between steps, so
/// that a cancel, a shutdown or a statement past its memory limit
/// (`ferrogres_sql::memory`) stops it. The executor passes its `Env`
/// (`exec::EnvInterrupts`); code with no session behind it passes
/// [`NoInterrupts`].
pub trait Interrupts {
    fn check(&self) -> Result<()>;
}

/// Nothing can interrupt (constant folding, unit tests).
pub struct NoInterrupts;

impl Interrupts for NoInterrupts {
    fn check(&self) -> Result<()> {
        Ok(())
    }
}

/// PostgreSQL's MaxAllocSize: no value (text, bytea, array, json) may be
/// longer than 1 GB - 1 bytes.
pub const MAX_ALLOC_SIZE: usize = 0x3fff_ffff;

/// 54000 "requested length too large": what repeat/lpad/rpad say when the
/// result would pass [`MAX_ALLOC_SIZE`].
pub fn length_too_large() -> SqlError {
    SqlError::new(b"54000", "requested length too large")
}

/// 54000 "out of memory" from a growing string buffer (string_agg, concat,
/// format), with PostgreSQL's DETAIL.
pub fn string_buffer_full(have: usize, more: usize) -> SqlError {
    SqlError::new(b"54000", "out of memory")
        .with_detail(format!("Cannot enlarge string buffer containing {have} bytes by {more} more bytes."))
}

/// XX000 "invalid memory alloc request size N": one allocation past
/// [`MAX_ALLOC_SIZE`] (`||` of two large values, array_agg).
pub fn invalid_alloc_size(n: usize) -> SqlError {
    SqlError::new(b"XX000", format!("invalid memory alloc request size {n}"))
}

/// Checks that a string buffer holding `have` bytes can take `more` (with
/// its terminating zero byte, PostgreSQL's StringInfo needs `have + more + 1`
/// bytes, at most [`MAX_ALLOC_SIZE`]): [`string_buffer_full`] otherwise.
pub fn check_enlarge(have: usize, more: usize) -> Result<()> {
    if have.saturating_add(more) >= MAX_ALLOC_SIZE {
        return Err(string_buffer_full(have, more));
    }
    Ok(())
}

/// Checks that a text or bytea result of `len` bytes fits one allocation with
/// its 4-byte varlena header: [`invalid_alloc_size`] otherwise (PostgreSQL's
/// palloc of the result in `||`, concat, string_agg's final step...).
pub fn check_result_len(len: usize) -> Result<()> {
    let request = len.saturating_add(4);
    if request > MAX_ALLOC_SIZE {
        return Err(invalid_alloc_size(request));
    }
    Ok(())
}
