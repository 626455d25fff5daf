//! Parsing with PostgreSQL's own grammar (libpg_query through the `pg_query`
//! crate). The protobuf parse tree is decoded into `pg_query::protobuf` types.
//!
//! `pg_query::parse` drops the error's cursor position, which PostgreSQL reports
//! with every syntax error; so this module calls libpg_query's C entry point
//! (linked by the `pg_query` crate) itself and keeps `cursorpos`.

use crate::errors::{Result, SqlError};
use pg_query::protobuf::{ParseResult, RawStmt};
use prost::Message;
use std::ffi::{c_char, c_int, CStr, CString};

#[repr(C)]
struct PgQueryError {
    message: *mut c_char,
    funcname: *mut c_char,
    filename: *mut c_char,
    lineno: c_int,
    cursorpos: c_int,
    context: *mut c_char,
}

#[repr(C)]
struct PgQueryProtobuf {
    len: usize,
    data: *mut c_char,
}

#[repr(C)]
struct PgQueryProtobufParseResult {
    parse_tree: PgQueryProtobuf,
    stderr_buffer: *mut c_char,
    error: *mut PgQueryError,
}

extern "C" {
    fn pg_query_parse_protobuf(input: *const c_char) -> PgQueryProtobufParseResult;
    fn pg_query_free_protobuf_parse_result(result: PgQueryProtobufParseResult);
}

/// One statement of a query string: its parse tree and its own text.
#[derive(Clone, Debug)]
pub struct ParsedStmt {
    pub node: pg_query::NodeEnum,
    /// The statement's text (locations in `node` are relative to `sql` below).
    pub sql: std::sync::Arc<str>,
}

/// Parses a query string into its statements. Errors are 42601 (or 22021 /
/// 0A000 for what the scanner rejects) with PostgreSQL's message and position.
pub fn parse(sql: &str) -> Result<Vec<ParsedStmt>> {
    let c = CString::new(sql).map_err(|_| SqlError::new(b"22021", "invalid byte sequence for encoding \"UTF8\": 0x00"))?;
    // SAFETY: `c` is a valid NUL-terminated string; the result is freed below and
    // nothing borrowed from it outlives this block.
    let decoded = unsafe {
        let r = pg_query_parse_protobuf(c.as_ptr());
        let out = if !r.error.is_null() {
            let e = &*r.error;
            let msg = CStr::from_ptr(e.message).to_string_lossy().into_owned();
            let pos = e.cursorpos;
            Err((msg, pos))
        } else {
            let data = std::slice::from_raw_parts(r.parse_tree.data as *const u8, r.parse_tree.len);
            Ok(ParseResult::decode(data))
        };
        pg_query_free_protobuf_parse_result(r);
        out
    };
    let tree = match decoded {
        Err((msg, pos)) => {
            let code: &[u8; 5] = if msg.starts_with("syntax error") || msg.starts_with("unterminated") || msg.contains("at end of input") {
                b"42601"
            } else if msg.contains("nested too deeply") || msg.starts_with("stack depth limit exceeded") {
                b"54001"
            } else if msg.starts_with("invalid byte sequence") {
                b"22021"
            } else if msg.starts_with("frame start") || msg.starts_with("frame end") || msg.starts_with("frame starting from") {
                // gram.y's window frame checks (ERRCODE_WINDOWING_ERROR).
                b"42P20"
            } else if msg.contains("is not supported") || msg.contains("not implemented") {
                b"0A000"
            } else {
                b"42601"
            };
            let mut e = SqlError::new(code, msg);
            if pos > 0 {
                e.position = Some(pos as u32);
            }
            return Err(e);
        }
        Ok(Err(e)) => return Err(SqlError::internal(format!("could not decode parse tree: {e}"))),
        Ok(Ok(t)) => t,
    };
    let whole: std::sync::Arc<str> = sql.into();
    let mut out = Vec::with_capacity(tree.stmts.len());
    for RawStmt { stmt, .. } in tree.stmts {
        let Some(node) = stmt.and_then(|n| n.node) else { continue };
        out.push(ParsedStmt { node, sql: whole.clone() });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_error_has_postgres_message_and_position() {
        let e = parse("select 1 frm t").unwrap_err();
        assert_eq!(e.sqlstate(), "42601");
        assert_eq!(e.message, "syntax error at or near \"t\"");
        assert_eq!(e.position, Some(14));
        let e = parse("select (1").unwrap_err();
        assert_eq!(e.message, "syntax error at end of input");
        assert_eq!(parse("select 1; select 2").unwrap().len(), 2);
        assert_eq!(parse("").unwrap().len(), 0);
        // Too deep to hand over: an error (54001), not a crash.
        let deep = format!("select {}1", "1+".repeat(5000));
        assert_eq!(parse(&deep).unwrap_err().sqlstate(), "54001");
    }
}
