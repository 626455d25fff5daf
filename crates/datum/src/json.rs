//! json and jsonb: the JSON parser with PostgreSQL 15's errors (message,
//! DETAIL and the `JSON data, line N: ...` CONTEXT), the value tree jsonb is
//! made of, jsonb's canonical text, its B-tree order, containment and the
//! navigation the `-> ->> #> #>>` operators do.
//!
//! | type | oid | array | Value |
//! |---|---|---|---|
//! | json | 114 | 199 | `Json(String)`: the input text, kept as written |
//! | jsonb | 3802 | 3807 | `Jsonb(String)`: the canonical text ([`Jv::to_text`]) |
//!
//! jsonb is held in its canonical text form (keys unique and sorted shorter
//! first then bytewise, `{"a": 1, "b": [1, 2]}` spacing, numbers as numeric
//! prints them) and parsed back into a [`Jv`] by the operators that need the
//! tree. Stored on disk as that text (a varlena, TOASTed like text); its binary
//! wire format is PostgreSQL's: version byte 1 and the text.
//!
//! Nesting. The parser recurses once per nested array or object and checks
//! the stack ([`crate::stack_depth::check`]); besides, each level is charged
//! [`LEVEL_BYTES`] against `max_stack_depth`, so that JSON nests as deep here
//! as in PostgreSQL at the default setting (PostgreSQL 15 reads 14,543 nested
//! arrays with its 2 MB and fails deeper with 54001; our default limit is 32
//! times larger because our frames are, and a JSON level costs far less than
//! 1/32 of it). Values built by functions (`jsonb_build_array(j)` of a value
//! at that depth) go one level deeper at most before the next parse of them
//! fails with 54001; the walks over a tree ([`Jv::to_text`], [`compare`],
//! [`contains`], dropping it) therefore recurse at most that deep and fit in
//! the room kept below the limit (`stack_depth::STACK_DEPTH_SLOP`).

use crate::errors::{Result, SqlError};
use crate::numeric::Numeric;
use std::cmp::Ordering;

/// What one level of JSON nesting costs against `max_stack_depth`, in bytes:
/// 32 (our default limit over PostgreSQL's 2 MB) times PostgreSQL's 144 (2 MB
/// over the 14,543 levels it reads), so the default allows 14,563 levels.
pub const LEVEL_BYTES: usize = 4608;

/// The deepest nesting the current `max_stack_depth` allows.
fn depth_limit() -> usize {
    crate::stack_depth::limit_kb() * 1024 / LEVEL_BYTES
}

/// A JSON value (jsonb's tree; objects hold unique keys in jsonb's key order).
#[derive(Clone, Debug)]
pub enum Jv {
    Null,
    Bool(bool),
    Num(Numeric),
    Str(String),
    Arr(Vec<Jv>),
    Obj(Vec<(String, Jv)>),
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Tok {
    ObjStart,
    ObjEnd,
    ArrStart,
    ArrEnd,
    Comma,
    Colon,
    Str,
    Num,
    True,
    False,
    Null,
    End,
}

/// Why the input is not JSON (PostgreSQL's JsonParseErrorType).
enum JErr {
    InvalidToken,
    EscapingInvalid,
    EscapingRequired(u8),
    UnicodeFormat,
    HighSurrogate,
    LowSurrogate,
    CodePointZero,
    ExpectedArrayFirst,
    ExpectedArrayNext,
    ExpectedColon,
    ExpectedEnd,
    ExpectedJson,
    ExpectedMore,
    ExpectedObjectFirst,
    ExpectedObjectNext,
    ExpectedString,
}

struct Lexer<'a> {
    s: &'a [u8],
    text: &'a str,
    /// Whether strings are decoded (jsonb; json only validates).
    decode: bool,
    tok: Tok,
    start: usize,
    end: usize,
    /// The decoded value of a string token.
    strval: String,
    line: usize,
    line_start: usize,
}

fn alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

impl<'a> Lexer<'a> {
    fn err(&self, e: JErr) -> SqlError {
        let tok = String::from_utf8_lossy(&self.s[self.start.min(self.end)..self.end]).into_owned();
        let (code, msg): (&[u8; 5], &str) = match e {
            JErr::CodePointZero => (b"22P05", "unsupported Unicode escape sequence"),
            _ => (b"22P02", "invalid input syntax for type json"),
        };
        let detail = match e {
            JErr::InvalidToken => format!("Token \"{tok}\" is invalid."),
            JErr::EscapingInvalid => format!("Escape sequence \"{tok}\" is invalid."),
            JErr::EscapingRequired(c) => format!("Character with value 0x{c:02x} must be escaped."),
            JErr::UnicodeFormat => "\"\\u\" must be followed by four hexadecimal digits.".into(),
            JErr::HighSurrogate => "Unicode high surrogate must not follow a high surrogate.".into(),
            JErr::LowSurrogate => "Unicode low surrogate must follow a high surrogate.".into(),
            JErr::CodePointZero => "\\u0000 cannot be converted to text.".into(),
            JErr::ExpectedArrayFirst => format!("Expected array element or \"]\", but found \"{tok}\"."),
            JErr::ExpectedArrayNext => format!("Expected \",\" or \"]\", but found \"{tok}\"."),
            JErr::ExpectedColon => format!("Expected \":\", but found \"{tok}\"."),
            JErr::ExpectedEnd => format!("Expected end of input, but found \"{tok}\"."),
            JErr::ExpectedJson => format!("Expected JSON value, but found \"{tok}\"."),
            JErr::ExpectedMore => "The input string ended unexpectedly.".into(),
            JErr::ExpectedObjectFirst => format!("Expected string or \"}}\", but found \"{tok}\"."),
            JErr::ExpectedObjectNext => format!("Expected \",\" or \"}}\", but found \"{tok}\"."),
            JErr::ExpectedString => format!("Expected string, but found \"{tok}\"."),
        };
        SqlError::new(code, msg).with_detail(detail).with_context(self.context())
    }

    /// PostgreSQL's report_json_context: the current line up to the end of the
    /// offending token, at most 50 bytes of it, with `...` where it was cut.
    fn context(&self) -> String {
        let end = self.end.min(self.s.len());
        let mut start = self.line_start.min(end);
        let mut prefix = "";
        if end - start >= 50 {
            start = end - 49;
            while start < end && !self.text.is_char_boundary(start) {
                start += 1;
            }
            prefix = "...";
        }
        let suffix = if self.tok != Tok::End && end < self.s.len() && self.s[end] != b'\n' && self.s[end] != b'\r' { "..." } else { "" };
        format!("JSON data, line {}: {prefix}{}{suffix}", self.line, &self.text[start..end])
    }

    /// Lexes the next token into `tok`, `start..end`.
    fn next(&mut self) -> Result<()> {
        let s = self.s;
        let mut p = self.end;
        while p < s.len() && matches!(s[p], b' ' | b'\t' | b'\n' | b'\r') {
            if s[p] == b'\n' {
                self.line += 1;
                self.line_start = p + 1;
            }
            p += 1;
        }
        self.start = p;
        if p >= s.len() {
            self.tok = Tok::End;
            self.end = p;
            return Ok(());
        }
        let one = |this: &mut Self, t: Tok| {
            this.tok = t;
            this.end = p + 1;
            Ok(())
        };
        match s[p] {
            b'{' => one(self, Tok::ObjStart),
            b'}' => one(self, Tok::ObjEnd),
            b'[' => one(self, Tok::ArrStart),
            b']' => one(self, Tok::ArrEnd),
            b',' => one(self, Tok::Comma),
            b':' => one(self, Tok::Colon),
            b'"' => self.string(p),
            b'-' | b'0'..=b'9' => self.number(p),
            _ => {
                let mut q = p;
                while q < s.len() && alnum(s[q]) {
                    q += 1;
                }
                if q == p {
                    // One (possibly multibyte) character.
                    q = p + 1;
                    while q < s.len() && !self.text.is_char_boundary(q) {
                        q += 1;
                    }
                    self.tok = Tok::Null;
                    self.end = q;
                    return Err(self.err(JErr::InvalidToken));
                }
                self.end = q;
                self.tok = match &s[p..q] {
                    b"true" => Tok::True,
                    b"false" => Tok::False,
                    b"null" => Tok::Null,
                    _ => return Err(self.err(JErr::InvalidToken)),
                };
                Ok(())
            }
        }
    }

    fn number(&mut self, p0: usize) -> Result<()> {
        let s = self.s;
        let mut p = p0;
        let mut bad = false;
        if s[p] == b'-' {
            p += 1;
        }
        if p < s.len() && s[p] == b'0' {
            p += 1;
        } else if p < s.len() && s[p].is_ascii_digit() {
            while p < s.len() && s[p].is_ascii_digit() {
                p += 1;
            }
        } else {
            bad = true;
        }
        if !bad && p < s.len() && s[p] == b'.' {
            p += 1;
            if p >= s.len() || !s[p].is_ascii_digit() {
                bad = true;
            }
            while p < s.len() && s[p].is_ascii_digit() {
                p += 1;
            }
        }
        if !bad && p < s.len() && (s[p] == b'e' || s[p] == b'E') {
            p += 1;
            if p < s.len() && (s[p] == b'+' || s[p] == b'-') {
                p += 1;
            }
            if p >= s.len() || !s[p].is_ascii_digit() {
                bad = true;
            }
            while p < s.len() && s[p].is_ascii_digit() {
                p += 1;
            }
        }
        // Trailing garbage makes the whole run one invalid token.
        while p < s.len() && alnum(s[p]) {
            p += 1;
            bad = true;
        }
        self.end = p;
        self.tok = Tok::Num;
        if bad {
            return Err(self.err(JErr::InvalidToken));
        }
        Ok(())
    }

    fn string(&mut self, p0: usize) -> Result<()> {
        let s = self.s;
        let mut p = p0 + 1;
        self.strval.clear();
        self.tok = Tok::Str;
        let mut high: Option<u32> = None;
        let mut run_start = p;
        loop {
            if p >= s.len() {
                self.end = p;
                return Err(self.err(JErr::InvalidToken));
            }
            let c = s[p];
            if c == b'"' {
                if self.decode {
                    self.strval.push_str(&self.text[run_start..p]);
                }
                if high.is_some() {
                    self.end = p + 1;
                    return Err(self.err(JErr::LowSurrogate));
                }
                self.end = p + 1;
                return Ok(());
            }
            if c < 0x20 {
                self.end = p;
                return Err(self.err(JErr::EscapingRequired(c)));
            }
            if c != b'\\' {
                if high.is_some() && self.decode {
                    self.end = p;
                    return Err(self.err(JErr::LowSurrogate));
                }
                p += 1;
                continue;
            }
            if self.decode {
                self.strval.push_str(&self.text[run_start..p]);
            }
            p += 1;
            if p >= s.len() {
                self.end = p;
                return Err(self.err(JErr::InvalidToken));
            }
            if s[p] == b'u' {
                p += 1;
                let mut cp: u32 = 0;
                for _ in 0..4 {
                    if p >= s.len() || !s[p].is_ascii_hexdigit() {
                        self.end = if p < s.len() { p + 1 } else { p };
                        while self.end < s.len() && !self.text.is_char_boundary(self.end) {
                            self.end += 1;
                        }
                        return Err(self.err(JErr::UnicodeFormat));
                    }
                    cp = cp * 16 + (s[p] as char).to_digit(16).unwrap_or(0);
                    p += 1;
                }
                if self.decode {
                    self.end = p;
                    if (0xD800..0xDC00).contains(&cp) {
                        if high.is_some() {
                            return Err(self.err(JErr::HighSurrogate));
                        }
                        high = Some(cp);
                    } else if (0xDC00..0xE000).contains(&cp) {
                        let Some(h) = high.take() else { return Err(self.err(JErr::LowSurrogate)) };
                        let full = 0x10000 + ((h - 0xD800) << 10) + (cp - 0xDC00);
                        self.strval.push(char::from_u32(full).unwrap_or('\u{fffd}'));
                    } else {
                        if high.is_some() {
                            return Err(self.err(JErr::LowSurrogate));
                        }
                        if cp == 0 {
                            return Err(self.err(JErr::CodePointZero));
                        }
                        self.strval.push(char::from_u32(cp).unwrap_or('\u{fffd}'));
                    }
                }
            } else {
                if high.is_some() && self.decode {
                    self.end = p;
                    return Err(self.err(JErr::LowSurrogate));
                }
                let ch = match s[p] {
                    b'"' => '"',
                    b'\\' => '\\',
                    b'/' => '/',
                    b'b' => '\u{8}',
                    b'f' => '\u{c}',
                    b'n' => '\n',
                    b'r' => '\r',
                    b't' => '\t',
                    _ => {
                        let mut q = p + 1;
                        while q < s.len() && !self.text.is_char_boundary(q) {
                            q += 1;
                        }
                        self.start = p - 1;
                        self.end = q;
                        return Err(self.err(JErr::EscapingInvalid));
                    }
                };
                if self.decode {
                    self.strval.push(ch);
                }
                p += 1;
            }
            run_start = p;
        }
    }
}

struct Parser<'a> {
    lx: Lexer<'a>,
    /// Arrays and objects open around the current token.
    depth: usize,
    /// Past this depth: 54001 ([`LEVEL_BYTES`]).
    max_depth: usize,
    /// Check the stack at each value (not for [`tree_stored`], which is bounded by `max_depth`).
    check_stack: bool,
}

impl<'a> Parser<'a> {
    fn fail(&self, e: JErr) -> SqlError {
        if self.lx.tok == Tok::End {
            return self.lx.err(JErr::ExpectedMore);
        }
        self.lx.err(e)
    }

    fn value(&mut self) -> Result<Jv> {
        if self.check_stack {
            crate::stack_depth::check()?;
        }
        let v = match self.lx.tok {
            Tok::ObjStart => return self.object(),
            Tok::ArrStart => return self.array(),
            Tok::Str => Jv::Str(std::mem::take(&mut self.lx.strval)),
            Tok::Num => {
                if self.lx.decode {
                    Jv::Num(Numeric::parse(&self.lx.text[self.lx.start..self.lx.end])?)
                } else {
                    Jv::Null
                }
            }
            Tok::True => Jv::Bool(true),
            Tok::False => Jv::Bool(false),
            Tok::Null => Jv::Null,
            _ => return Err(self.fail(JErr::ExpectedJson)),
        };
        self.lx.next()?;
        Ok(v)
    }

    /// One level deeper (an array or object opens): 54001 past the limit.
    fn enter(&mut self) -> Result<()> {
        self.depth += 1;
        if self.depth > self.max_depth {
            return Err(crate::stack_depth::too_deep());
        }
        Ok(())
    }

    fn object(&mut self) -> Result<Jv> {
        self.enter()?;
        let v = self.object_members();
        self.depth -= 1;
        v
    }

    fn object_members(&mut self) -> Result<Jv> {
        self.lx.next()?;
        let mut pairs: Vec<(String, Jv)> = Vec::new();
        if self.lx.tok == Tok::ObjEnd {
            self.lx.next()?;
            return Ok(Jv::Obj(pairs));
        }
        let mut first = true;
        loop {
            if self.lx.tok != Tok::Str {
                return Err(self.fail(if first { JErr::ExpectedObjectFirst } else { JErr::ExpectedString }));
            }
            first = false;
            let key = std::mem::take(&mut self.lx.strval);
            self.lx.next()?;
            if self.lx.tok != Tok::Colon {
                return Err(self.fail(JErr::ExpectedColon));
            }
            self.lx.next()?;
            let v = self.value()?;
            if self.lx.decode {
                pairs.push((key, v));
            }
            match self.lx.tok {
                Tok::Comma => self.lx.next()?,
                Tok::ObjEnd => {
                    self.lx.next()?;
                    break;
                }
                _ => return Err(self.fail(JErr::ExpectedObjectNext)),
            }
        }
        Ok(Jv::Obj(normalize_pairs(pairs)))
    }

    fn array(&mut self) -> Result<Jv> {
        self.enter()?;
        let v = self.array_items();
        self.depth -= 1;
        v
    }

    fn array_items(&mut self) -> Result<Jv> {
        self.lx.next()?;
        let mut items = Vec::new();
        if self.lx.tok == Tok::ArrEnd {
            self.lx.next()?;
            return Ok(Jv::Arr(items));
        }
        let mut first = true;
        loop {
            let starts_value = matches!(self.lx.tok, Tok::ObjStart | Tok::ArrStart | Tok::Str | Tok::Num | Tok::True | Tok::False | Tok::Null);
            if !starts_value {
                return Err(self.fail(if first { JErr::ExpectedArrayFirst } else { JErr::ExpectedJson }));
            }
            first = false;
            let v = self.value()?;
            if self.lx.decode {
                items.push(v);
            }
            match self.lx.tok {
                Tok::Comma => self.lx.next()?,
                Tok::ArrEnd => {
                    self.lx.next()?;
                    break;
                }
                _ => return Err(self.fail(JErr::ExpectedArrayNext)),
            }
        }
        Ok(Jv::Arr(items))
    }
}

/// jsonb's key order: shorter keys first, then bytewise.
pub fn key_cmp(a: &str, b: &str) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

/// Sorts an object's pairs in jsonb's key order; of duplicate keys the last wins.
pub fn normalize_pairs(pairs: Vec<(String, Jv)>) -> Vec<(String, Jv)> {
    let mut indexed: Vec<(usize, String, Jv)> = pairs.into_iter().enumerate().map(|(i, (k, v))| (i, k, v)).collect();
    indexed.sort_by(|a, b| key_cmp(&a.1, &b.1).then(b.0.cmp(&a.0)));
    let mut out: Vec<(String, Jv)> = Vec::with_capacity(indexed.len());
    for (_, k, v) in indexed {
        if out.last().is_some_and(|(lk, _)| *lk == k) {
            continue;
        }
        out.push((k, v));
    }
    out
}

fn parse_with(s: &str, decode: bool) -> Result<Jv> {
    parse_bounded(s, decode, depth_limit(), true)
}

fn parse_bounded(s: &str, decode: bool, max_depth: usize, check_stack: bool) -> Result<Jv> {
    let lx = Lexer { s: s.as_bytes(), text: s, decode, tok: Tok::End, start: 0, end: 0, strval: String::new(), line: 1, line_start: 0 };
    let mut p = Parser { lx, depth: 0, max_depth, check_stack };
    p.lx.next()?;
    let v = p.value()?;
    if p.lx.tok != Tok::End {
        return Err(p.lx.err(JErr::ExpectedEnd));
    }
    Ok(v)
}

/// json_in: validates `s` (the value keeps the text as written).
pub fn json_in(s: &str) -> Result<String> {
    parse_with(s, false)?;
    Ok(s.to_string())
}

/// Parses JSON text into a tree (jsonb_in).
pub fn parse(s: &str) -> Result<Jv> {
    parse_with(s, true)
}

/// jsonb_in: the canonical text of `s`.
pub fn jsonb_in(s: &str) -> Result<String> {
    Ok(parse(s)?.to_text())
}

/// The tree of a stored/canonical jsonb text: 54001 when it nests deeper
/// than the current `max_stack_depth` allows (a value built one level deeper
/// than its input: `jsonb_build_array` of a value at the limit).
pub fn tree(canonical: &str) -> Result<Jv> {
    parse(canonical)
}

/// The tree of a stored jsonb text for a walk that cannot fail (the B-tree
/// order): without stack checks, bounded by the depth any session on this
/// thread could have stored (the largest `max_stack_depth` its stack allows,
/// plus the levels functions add), which fits in the stack's slop.
fn tree_stored(canonical: &str) -> Result<Jv> {
    let most = crate::stack_depth::max_allowed_kb().unwrap_or(crate::stack_depth::DEFAULT_MAX_STACK_DEPTH_KB) * 1024 / LEVEL_BYTES;
    parse_bounded(canonical, true, most + 64, false)
}

/// escape_json: a JSON string literal.
pub fn quote(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

impl Jv {
    /// jsonb_out: `{"a": 1, "b": [1, 2]}`.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        match self {
            Jv::Null => out.push_str("null"),
            Jv::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Jv::Num(n) => out.push_str(&n.to_text()),
            Jv::Str(s) => quote(out, s),
            Jv::Arr(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    v.write(out);
                }
                out.push(']');
            }
            Jv::Obj(pairs) => {
                out.push('{');
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    quote(out, k);
                    out.push_str(": ");
                    v.write(out);
                }
                out.push('}');
            }
        }
    }

    /// jsonb_pretty's layout (four-space indent).
    pub fn pretty(&self) -> String {
        let mut out = String::new();
        self.write_pretty(&mut out, 0);
        out
    }

    fn write_pretty(&self, out: &mut String, level: usize) {
        let pad = |out: &mut String, n: usize| out.extend(std::iter::repeat_n("    ", n));
        match self {
            Jv::Arr(items) if !items.is_empty() => {
                out.push_str("[\n");
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(",\n");
                    }
                    pad(out, level + 1);
                    v.write_pretty(out, level + 1);
                }
                out.push('\n');
                pad(out, level);
                out.push(']');
            }
            Jv::Obj(pairs) if !pairs.is_empty() => {
                out.push_str("{\n");
                for (i, (k, v)) in pairs.iter().enumerate() {
                    if i > 0 {
                        out.push_str(",\n");
                    }
                    pad(out, level + 1);
                    quote(out, k);
                    out.push_str(": ");
                    v.write_pretty(out, level + 1);
                }
                out.push('\n');
                pad(out, level);
                out.push('}');
            }
            Jv::Arr(_) | Jv::Obj(_) => {
                let (open, close) = if matches!(self, Jv::Arr(_)) { ('[', ']') } else { ('{', '}') };
                out.push(open);
                out.push('\n');
                pad(out, level);
                out.push(close);
            }
            v => v.write(out),
        }
    }

    /// jsonb_typeof.
    pub fn type_name(&self) -> &'static str {
        match self {
            Jv::Null => "null",
            Jv::Bool(_) => "boolean",
            Jv::Num(_) => "number",
            Jv::Str(_) => "string",
            Jv::Arr(_) => "array",
            Jv::Obj(_) => "object",
        }
    }

    fn rank(&self) -> u8 {
        match self {
            Jv::Null => 0,
            Jv::Str(_) => 1,
            Jv::Num(_) => 2,
            Jv::Bool(_) => 3,
            Jv::Arr(_) => 4,
            Jv::Obj(_) => 5,
        }
    }

    /// The text `->>` gives: strings unquoted, null as SQL NULL, else the JSON text.
    pub fn as_text(&self) -> Option<String> {
        match self {
            Jv::Null => None,
            Jv::Str(s) => Some(s.clone()),
            v => Some(v.to_text()),
        }
    }

    pub fn get_key(&self, k: &str) -> Option<&Jv> {
        match self {
            Jv::Obj(pairs) => pairs.iter().find(|(pk, _)| pk == k).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn get_index(&self, i: i64) -> Option<&Jv> {
        match self {
            Jv::Arr(items) => {
                let n = items.len() as i64;
                let i = if i < 0 { n + i } else { i };
                if i < 0 || i >= n {
                    None
                } else {
                    items.get(i as usize)
                }
            }
            _ => None,
        }
    }

    /// `#>`: follows a path of keys and (for arrays) integer indexes.
    pub fn get_path(&self, path: &[Option<String>]) -> Option<&Jv> {
        let mut cur = self;
        for step in path {
            let step = step.as_deref()?;
            cur = match cur {
                Jv::Obj(_) => cur.get_key(step)?,
                Jv::Arr(_) => cur.get_index(step.trim().parse::<i64>().ok()?)?,
                _ => return None,
            };
        }
        Some(cur)
    }
}

/// jsonb's B-tree order (compareJsonbContainers): Object > Array > Boolean >
/// Number > String > Null; containers with more members are greater; members
/// in storage order. `top` marks the top level, where a scalar is a raw-scalar
/// pseudo array (so `[] < null` as in PostgreSQL).
pub fn compare(a: &Jv, b: &Jv) -> Ordering {
    let scalar = |v: &Jv| !matches!(v, Jv::Arr(_) | Jv::Obj(_));
    match (a, b) {
        (Jv::Arr(x), s) if scalar(s) => {
            // raw scalar: one element
            if x.len() != 1 { x.len().cmp(&1) } else { Ordering::Greater }
        }
        (s, Jv::Arr(y)) if scalar(s) => {
            if y.len() != 1 { 1.cmp(&y.len()) } else { Ordering::Less }
        }
        _ => compare_inner(a, b),
    }
}

fn compare_inner(a: &Jv, b: &Jv) -> Ordering {
    if a.rank() != b.rank() {
        return a.rank().cmp(&b.rank());
    }
    match (a, b) {
        (Jv::Null, Jv::Null) => Ordering::Equal,
        (Jv::Str(x), Jv::Str(y)) => x.as_bytes().cmp(y.as_bytes()),
        (Jv::Num(x), Jv::Num(y)) => x.cmp(y),
        (Jv::Bool(x), Jv::Bool(y)) => x.cmp(y),
        (Jv::Arr(x), Jv::Arr(y)) => {
            if x.len() != y.len() {
                return x.len().cmp(&y.len());
            }
            for (p, q) in x.iter().zip(y) {
                let o = compare_inner(p, q);
                if o != Ordering::Equal {
                    return o;
                }
            }
            Ordering::Equal
        }
        (Jv::Obj(x), Jv::Obj(y)) => {
            if x.len() != y.len() {
                return x.len().cmp(&y.len());
            }
            for ((kx, vx), (ky, vy)) in x.iter().zip(y) {
                let o = kx.as_bytes().cmp(ky.as_bytes()).then_with(|| compare_inner(vx, vy));
                if o != Ordering::Equal {
                    return o;
                }
            }
            Ordering::Equal
        }
        _ => Ordering::Equal,
    }
}

/// Compares two canonical jsonb texts.
pub fn compare_text(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    match (tree_stored(a), tree_stored(b)) {
        (Ok(x), Ok(y)) => compare(&x, &y),
        // Not reached for values sessions stored (see tree_stored); an order
        // all the same rather than a failure inside a sort.
        _ => a.as_bytes().cmp(b.as_bytes()),
    }
}

fn scalar_eq(a: &Jv, b: &Jv) -> bool {
    compare_inner(a, b) == Ordering::Equal
}

/// `a @> b` (jsonb_contains).
pub fn contains(a: &Jv, b: &Jv, top: bool) -> bool {
    match (a, b) {
        (Jv::Obj(x), Jv::Obj(y)) => y.iter().all(|(k, vb)| match x.iter().find(|(ka, _)| ka == k) {
            Some((_, va)) => match (va, vb) {
                (Jv::Obj(_), Jv::Obj(_)) | (Jv::Arr(_), Jv::Arr(_)) => contains(va, vb, false),
                (Jv::Obj(_) | Jv::Arr(_), _) | (_, Jv::Obj(_) | Jv::Arr(_)) => false,
                _ => scalar_eq(va, vb),
            },
            None => false,
        }),
        (Jv::Arr(x), Jv::Arr(y)) => y.iter().all(|eb| match eb {
            Jv::Arr(_) | Jv::Obj(_) => x.iter().any(|ea| std::mem::discriminant(ea) == std::mem::discriminant(eb) && contains(ea, eb, false)),
            _ => x.iter().any(|ea| !matches!(ea, Jv::Arr(_) | Jv::Obj(_)) && scalar_eq(ea, eb)),
        }),
        // A top-level array contains a top-level scalar it has as an element.
        (Jv::Arr(x), s) if top && !matches!(s, Jv::Obj(_)) => x.iter().any(|ea| !matches!(ea, Jv::Arr(_) | Jv::Obj(_)) && scalar_eq(ea, s)),
        (Jv::Arr(_) | Jv::Obj(_), _) | (_, Jv::Arr(_) | Jv::Obj(_)) => false,
        _ => scalar_eq(a, b),
    }
}

/// `a ? key`: a top-level key, array string element, or the scalar string itself.
pub fn exists(a: &Jv, key: &str) -> bool {
    match a {
        Jv::Obj(p) => p.iter().any(|(k, _)| k == key),
        Jv::Arr(items) => items.iter().any(|v| matches!(v, Jv::Str(s) if s == key)),
        Jv::Str(s) => s == key,
        _ => false,
    }
}

// --- json (text) navigation: the operators return the text of the member as written.

struct Walk<'a> {
    s: &'a [u8],
    p: usize,
}

impl<'a> Walk<'a> {
    fn ws(&mut self) {
        while self.p < self.s.len() && matches!(self.s[self.p], b' ' | b'\t' | b'\n' | b'\r') {
            self.p += 1;
        }
    }
    fn peek(&self) -> u8 {
        self.s.get(self.p).copied().unwrap_or(0)
    }
    /// Skips one (valid) value; returns its span.
    fn skip(&mut self) -> (usize, usize) {
        self.ws();
        let start = self.p;
        match self.peek() {
            b'"' => {
                self.p += 1;
                while self.p < self.s.len() && self.s[self.p] != b'"' {
                    if self.s[self.p] == b'\\' {
                        self.p += 1;
                    }
                    self.p += 1;
                }
                self.p += 1;
            }
            b'{' | b'[' => {
                let mut depth = 0i32;
                while self.p < self.s.len() {
                    match self.s[self.p] {
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.p += 1;
                                break;
                            }
                        }
                        b'"' => {
                            self.skip();
                            continue;
                        }
                        _ => {}
                    }
                    self.p += 1;
                }
            }
            _ => {
                while self.p < self.s.len() && !matches!(self.s[self.p], b' ' | b'\t' | b'\n' | b'\r' | b',' | b'}' | b']' | b':') {
                    self.p += 1;
                }
            }
        }
        (start, self.p)
    }
    #[allow(clippy::type_complexity)] // (key span, value span) pairs
    fn members(&mut self) -> Vec<(Option<(usize, usize)>, (usize, usize))> {
        self.ws();
        let obj = self.peek() == b'{';
        self.p += 1;
        let mut out = Vec::new();
        loop {
            self.ws();
            if matches!(self.peek(), b'}' | b']' | 0) {
                break;
            }
            let key = if obj {
                let k = self.skip();
                self.ws();
                self.p += 1; // ':'
                Some(k)
            } else {
                None
            };
            let v = self.skip();
            out.push((key, v));
            self.ws();
            if self.peek() == b',' {
                self.p += 1;
            }
        }
        out
    }
}

/// The kind of a json text's top-level value.
pub fn json_kind(s: &str) -> u8 {
    let mut w = Walk { s: s.as_bytes(), p: 0 };
    w.ws();
    w.peek()
}

/// A json text's members: (key text with quotes, value text) for an object,
/// (None, element text) for an array; None for a scalar.
pub fn json_members(s: &str) -> Option<Vec<(Option<&str>, &str)>> {
    let k = json_kind(s);
    if k != b'{' && k != b'[' {
        return None;
    }
    let mut w = Walk { s: s.as_bytes(), p: 0 };
    Some(w.members().into_iter().map(|(k, v)| (k.map(|(a, b)| &s[a..b]), &s[v.0..v.1])).collect())
}

/// The decoded string of a JSON string literal (valid JSON).
pub fn unquote(lit: &str) -> String {
    match parse(lit) {
        Ok(Jv::Str(s)) => s,
        _ => lit.trim_matches('"').to_string(),
    }
}

/// `json -> key`: the last member with that key (as PostgreSQL returns it).
pub fn json_get_key<'a>(s: &'a str, key: &str) -> Option<&'a str> {
    if json_kind(s) != b'{' {
        return None;
    }
    json_members(s)?.into_iter().filter(|(k, _)| k.is_some_and(|k| unquote(k) == key)).map(|(_, v)| v).next_back()
}

pub fn json_get_index(s: &str, i: i64) -> Option<&str> {
    if json_kind(s) != b'[' {
        return None;
    }
    let m = json_members(s)?;
    let n = m.len() as i64;
    let i = if i < 0 { n + i } else { i };
    if i < 0 || i >= n {
        return None;
    }
    Some(m[i as usize].1)
}

pub fn json_get_path<'a>(s: &'a str, path: &[Option<String>]) -> Option<&'a str> {
    let mut cur = s;
    for step in path {
        let step = step.as_deref()?;
        cur = match json_kind(cur) {
            b'{' => json_get_key(cur, step)?,
            b'[' => json_get_index(cur, step.trim().parse::<i64>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// `->>` of a json member: strings de-escaped, null as SQL NULL.
pub fn json_member_text(v: &str) -> Option<String> {
    match json_kind(v) {
        b'"' => Some(unquote(v)),
        b'n' => None,
        _ => Some(v.to_string()),
    }
}

/// json_typeof.
pub fn json_typeof(s: &str) -> &'static str {
    match json_kind(s) {
        b'{' => "object",
        b'[' => "array",
        b'"' => "string",
        b't' | b'f' => "boolean",
        b'n' => "null",
        _ => "number",
    }
}

// --- casts (pg_cast: json <-> jsonb on assignment, jsonb -> bool and numbers explicitly)

/// Whether a cast involving json/jsonb exists in `context`; None when neither
/// side is json/jsonb or the general string rules apply.
pub fn cast_allowed(from: crate::types::Type, to: crate::types::Type, context: crate::types::CastContext) -> Option<bool> {
    use crate::types::{CastContext, Type};
    match (from, to) {
        (Type::Json, Type::Jsonb) | (Type::Jsonb, Type::Json) => Some(context != CastContext::Implicit),
        (Type::Jsonb, Type::Bool | Type::Numeric | Type::Int2 | Type::Int4 | Type::Int8 | Type::Float4 | Type::Float8) => {
            Some(context == CastContext::Explicit)
        }
        (Type::Json | Type::Jsonb | Type::Uuid, t) if !t.is_string() && t != from => Some(false),
        (f, Type::Json | Type::Jsonb | Type::Uuid) if !f.is_string() && f != to && f != Type::Unknown => Some(false),
        _ => None,
    }
}

/// The json/jsonb conversions of `types::cast`; None for the others.
pub fn cast(v: &crate::types::Value, from: crate::types::Type, to: crate::types::Type) -> Option<Result<crate::types::Value>> {
    use crate::types::{Type, Value};
    Some(match (from, to, v) {
        (Type::Json, Type::Jsonb, Value::Json(s)) => jsonb_in(s).map(Value::Jsonb),
        (Type::Jsonb, Type::Json, Value::Jsonb(s)) => Ok(Value::Json(s.clone())),
        (Type::Jsonb, t, Value::Jsonb(s)) if matches!(t, Type::Bool | Type::Numeric | Type::Int2 | Type::Int4 | Type::Int8 | Type::Float4 | Type::Float8) => {
            let j = match tree(s) {
                Ok(j) => j,
                Err(e) => return Some(Err(e)),
            };
            let bad = |j: &Jv| SqlError::new(b"22023", format!("cannot cast jsonb {} to type {}", j.type_name(), t.sql_name()));
            match (&j, t) {
                (Jv::Bool(b), Type::Bool) => Ok(Value::Bool(*b)),
                (Jv::Num(n), Type::Numeric) => Ok(Value::Numeric(n.clone())),
                (Jv::Num(n), t) if t != Type::Bool => crate::types::cast(Value::Numeric(n.clone()), Type::Numeric, t, -1, true),
                (j, _) => Err(bad(j)),
            }
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(s: &str, jsonb: bool) -> (String, String, String) {
        let e = if jsonb { jsonb_in(s).unwrap_err() } else { json_in(s).unwrap_err() };
        (e.message, e.detail.unwrap_or_default(), e.context.unwrap_or_default())
    }

    #[test]
    fn canonical_jsonb() {
        assert_eq!(jsonb_in(r#"{"a":1, "a":2, "bb":3, "c": [1, 2.50, {"x":null}]}"#).unwrap(), r#"{"a": 2, "c": [1, 2.50, {"x": null}], "bb": 3}"#);
        assert_eq!(jsonb_in(r#""\u00e9\n""#).unwrap(), "\"é\\n\"");
        assert_eq!(jsonb_in("1E+2").unwrap(), "100");
        assert_eq!(json_in("  {\"a\" :  1 }  ").unwrap(), "  {\"a\" :  1 }  ");
    }

    #[test]
    fn errors_as_postgres() {
        assert_eq!(err(r#"{"a":1,}"#, false).1, "Expected string, but found \"}\".");
        assert_eq!(err(r#"{"a" 1}"#, true).2, "JSON data, line 1: {\"a\" 1...");
        assert_eq!(err("[1,2", false).1, "The input string ended unexpectedly.");
        assert_eq!(err("01", false).1, "Token \"01\" is invalid.");
        assert_eq!(err("\"a\tb\"", false), ("invalid input syntax for type json".into(), "Character with value 0x09 must be escaped.".into(), "JSON data, line 1: \"a...".into()));
        assert_eq!(err("\"\\u0000\"", true).0, "unsupported Unicode escape sequence");
        assert!(json_in("\"\\u0000\"").is_ok());
        assert_eq!(err("{\"a\":\n  1,\n \"b\"  x  }", false).2, "JSON data, line 3:  \"b\"  x...");
        assert_eq!(
            err("[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25 x]", false).2,
            "JSON data, line 1: ... 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25 x..."
        );
    }

    #[test]
    fn order_and_containment() {
        let j = |s: &str| parse(s).unwrap();
        assert_eq!(compare(&j(r#"{"b":1}"#), &j(r#"{"aa":1}"#)), Ordering::Greater);
        assert_eq!(compare(&j("[]"), &j("null")), Ordering::Less);
        assert_eq!(compare(&j("\"a\""), &j("1")), Ordering::Less);
        assert!(contains(&j(r#"{"a":1,"b":[1,2]}"#), &j(r#"{"b":[2]}"#), true));
        assert!(contains(&j(r#"["foo","bar"]"#), &j(r#""foo""#), true));
        assert!(!contains(&j(r#"{"a":1}"#), &j(r#"{"a":2}"#), true));
        assert_eq!(json_get_key(r#"{"a":1, "b":2, "a":3}"#, "a"), Some("3"));
        assert_eq!(json_get_key(r#"{"a": [1,  2]}"#, "a"), Some("[1,  2]"));
    }
}
