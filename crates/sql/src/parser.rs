//! Parsing with PostgreSQL's own grammar (libpg_query through the `pg_query`
//! crate). The protobuf parse tree is decoded into `pg_query::protobuf` types.
//!
//! `pg_query::parse` drops the error's cursor position, which PostgreSQL reports
//! with every syntax error; so this module calls libpg_query's C entry point
//! (linked by the `pg_query` crate) itself and keeps `cursorpos`.
//!
//! Deep input. PostgreSQL's grammar keeps its own stack (bison's, at most
//! 10,000 entries: 42601 `memory exhausted` past it) and the C code that turns
//! the tree into protobuf checks its stack depth (54001) and stops at
//! [`MAX_PROTOBUF_DEPTH`] nested messages; prost then decodes the message
//! recursively, with its recursion limit (100) off, so that what PostgreSQL
//! accepts decodes. None of those can call [`ferrogres_datum::stack_depth::check`]
//! while they run: [`parse`] checks the depth when it starts, and
//! [`ferrogres_datum::stack_depth::STACK_DEPTH_SLOP`] holds what they need below the
//! limit (the test `deepest_parse_trees_decode_within_the_slop` decodes,
//! clones and drops the deepest trees on a stack of that size).

use ferrogres_datum::errors::{Result, SqlError};
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

/// The most nested protobuf messages libpg_query encodes
/// (PG_QUERY_PROTOBUF_MAX_DEPTH); deeper trees are refused with "parse tree is
/// nested too deeply to serialize to protobuf", reported as 54001.
pub const MAX_PROTOBUF_DEPTH: usize = 10_000;

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
    let tree = match with_protobuf(sql, |data| ParseResult::decode(data))? {
        Err(e) => return Err(SqlError::internal(format!("could not decode parse tree: {e}"))),
        Ok(t) => t,
    };
    let whole: std::sync::Arc<str> = sql.into();
    let mut out = Vec::with_capacity(tree.stmts.len());
    for RawStmt { stmt, .. } in tree.stmts {
        let Some(node) = stmt.and_then(|n| n.node) else { continue };
        out.push(ParsedStmt { node, sql: whole.clone() });
    }
    Ok(out)
}

/// Runs libpg_query's parser on `sql` and `f` on the protobuf parse tree it
/// returns; its errors as PostgreSQL's.
fn with_protobuf<R>(sql: &str, f: impl FnOnce(&[u8]) -> R) -> Result<R> {
    // Called at any depth (a view's text is parsed while the query reading it
    // is analyzed): the C parser and `f` run in the slop under the limit.
    ferrogres_datum::stack_depth::check()?;
    let c = CString::new(sql).map_err(|_| SqlError::new(b"22021", "invalid byte sequence for encoding \"UTF8\": 0x00"))?;
    // SAFETY: `c` is a valid NUL-terminated string; the result is freed below and
    // nothing borrowed from it outlives this block.
    let out = unsafe {
        let r = pg_query_parse_protobuf(c.as_ptr());
        let out = if !r.error.is_null() {
            let e = &*r.error;
            let msg = CStr::from_ptr(e.message).to_string_lossy().into_owned();
            let pos = e.cursorpos;
            Err((msg, pos))
        } else {
            let data = std::slice::from_raw_parts(r.parse_tree.data as *const u8, r.parse_tree.len);
            Ok(f(data))
        };
        pg_query_free_protobuf_parse_result(r);
        out
    };
    let (msg, pos) = match out {
        Ok(r) => return Ok(r),
        Err(e) => e,
    };
    let code: &[u8; 5] = if msg.starts_with("syntax error") || msg.starts_with("unterminated") || msg.contains("at end of input") {
        b"42601"
    } else if msg.contains("nested too deeply") || msg.starts_with("stack depth limit exceeded") {
        // libpg_query's check_stack_depth() (its own limit: 2 MB of C stack)
        // or its protobuf depth limit: PostgreSQL's 54001, with its HINT.
        let mut e = ferrogres_datum::stack_depth::too_deep();
        if pos > 0 {
            e.position = Some(pos as u32);
        }
        return Err(e);
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
    Err(e)
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
        let e = parse(&deep).unwrap_err();
        assert_eq!(e.sqlstate(), "54001");
        assert_eq!(e.message, "stack depth limit exceeded");
        assert!(e.hint.is_some_and(|h| h.starts_with("Increase the configuration parameter \"max_stack_depth\"")));
    }

    /// The deepest trees libpg_query hands over (one level more exceeds its
    /// protobuf depth limit, 54001, or bison's stack, 42601), parsed, decoded, cloned and dropped on a
    /// thread whose whole stack is STACK_DEPTH_SLOP: what the parser may use
    /// below the limit. A debug build's decode of these takes up to ~18 MB and
    /// a clone as much; should that grow past the slop, this test overflows
    /// its stack and fails.
    #[test]
    fn deepest_parse_trees_decode_within_the_slop() {
        let r = |open: &str, mid: &str, close: &str, n: usize| format!("{}{mid}{}", open.repeat(n), close.repeat(n));
        type Shape = Box<dyn Fn(usize) -> String + Send>;
        let shapes: Vec<(usize, Shape)> = vec![
            (4995, Box::new(move |n| format!("select {}", r("abs(", "1", ")", n)))),
            (4995, Box::new(move |n| format!("select {}", r("not ", "true", "", n)))),
            (4995, Box::new(move |n| format!("select {}", r("coalesce(", "1", ")", n)))),
            (4995, Box::new(move |n| format!("select {}", r("array[", "1", "]", n)))),
            (4995, Box::new(|n| format!("select {}1", "1+".repeat(n)))),
            (1999, Box::new(move |n| format!("select {}", r("case when true then ", "1", " end", n)))),
            (1665, Box::new(move |n| format!("select {}", r("(select ", "1", ")", n)))),
            (1663, Box::new(move |n| format!("select * from {}", r("(select * from ", "(select 1) s", ") s", n)))),
            (2497, Box::new(move |n| format!("select {}", r("1 in (", "1", ")", n)))),
            (9986, Box::new(move |n| r("(", "select 1", " union select 1)", n))),
        ];
        std::thread::Builder::new()
            .stack_size(ferrogres_datum::stack_depth::STACK_DEPTH_SLOP)
            .spawn(move || {
                for (n, make) in &shapes {
                    let deepest = parse(&make(*n)).unwrap();
                    let copy = deepest.clone();
                    drop(deepest);
                    drop(copy);
                    // One more: past the protobuf depth (54001) or bison's stack (42601).
                    let e = parse(&make(n + 1)).unwrap_err();
                    assert!(matches!(e.sqlstate(), "54001" | "42601"), "{}: {e:?}", make(1));
                }
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
