//! String functions, as PostgreSQL 15 defines them (character positions count
//! characters, not bytes; the database encoding is UTF-8). Case mapping is the
//! C locale's (ASCII letters only), the locale `initdb --no-locale` gives and
//! the one whose (bytewise) collation ferrogres implements.

use super::{int, text};
use ferrogres_datum::errors::{check_enlarge, check_result_len, length_too_large, Interrupts, Result, SqlError, MAX_ALLOC_SIZE};
use ferrogres_datum::types::{self, Value};

fn t(s: impl Into<String>) -> Result<Value> {
    Ok(Value::Text(s.into()))
}

pub fn length(a: &[Value]) -> Result<Value> {
    Ok(Value::Int4(text(&a[0]).chars().count() as i32))
}

pub fn octet_length(a: &[Value]) -> Result<Value> {
    Ok(Value::Int4(text(&a[0]).len() as i32))
}

pub fn bit_length(a: &[Value]) -> Result<Value> {
    Ok(Value::Int4(text(&a[0]).len() as i32 * 8))
}

pub fn upper(a: &[Value]) -> Result<Value> {
    t(text(&a[0]).to_ascii_uppercase())
}

pub fn lower(a: &[Value]) -> Result<Value> {
    t(text(&a[0]).to_ascii_lowercase())
}

/// The first letter of each run of letters and digits upper case, the rest lower.
pub fn initcap(a: &[Value]) -> Result<Value> {
    let mut out = String::new();
    let mut in_word = false;
    for c in text(&a[0]).chars() {
        out.push(if in_word { c.to_ascii_lowercase() } else { c.to_ascii_uppercase() });
        in_word = c.is_alphanumeric();
    }
    t(out)
}

/// Characters `start` .. `start + count` (1-based; `count` absent: to the end).
fn substring_chars(s: &str, start: i64, count: Option<i64>) -> Result<String> {
    let end = match count {
        Some(c) if c < 0 => return Err(SqlError::new(b"22011", "negative substring length not allowed")),
        Some(c) => Some(start.saturating_add(c)),
        None => None,
    };
    let from = start.max(1);
    let n = match end {
        Some(e) if e <= from => return Ok(String::new()),
        Some(e) => (e - from) as usize,
        None => usize::MAX,
    };
    Ok(s.chars().skip((from - 1) as usize).take(n).collect())
}

pub fn substr(a: &[Value]) -> Result<Value> {
    t(substring_chars(text(&a[0]), int(&a[1]), a.get(2).map(int))?)
}

/// `substring(text FROM pattern)`: the part matching the first parenthesized
/// subexpression, or the whole match when there is none; NULL when no match.
pub fn substring_regex(a: &[Value]) -> Result<Value> {
    let re = ferrogres_datum::pgregex::compile(text(&a[1]), false)?;
    Ok(match re.captures(text(&a[0])) {
        None => Value::Null,
        Some(c) if c.len() > 1 => c.get(1).map_or(Value::Null, |m| Value::Text(m.as_str().to_string())),
        Some(c) => Value::Text(c.get(0).map_or("", |m| m.as_str()).to_string()),
    })
}

/// 1-based character position of the first occurrence, 0 if none.
pub fn strpos(a: &[Value]) -> Result<Value> {
    let (s, sub) = (text(&a[0]), text(&a[1]));
    Ok(Value::Int4(match s.find(sub) {
        Some(byte) => s[..byte].chars().count() as i32 + 1,
        None => 0,
    }))
}

pub fn replace(a: &[Value]) -> Result<Value> {
    let (s, from, to) = (text(&a[0]), text(&a[1]), text(&a[2]));
    t(if from.is_empty() { s.to_string() } else { s.replace(from, to) })
}

pub fn translate(a: &[Value]) -> Result<Value> {
    let from: Vec<char> = text(&a[1]).chars().collect();
    let to: Vec<char> = text(&a[2]).chars().collect();
    let mut out = String::new();
    for c in text(&a[0]).chars() {
        match from.iter().position(|x| *x == c) {
            Some(i) => out.extend(to.get(i)),
            None => out.push(c),
        }
    }
    t(out)
}

fn trim_set(a: &[Value]) -> Vec<char> {
    match a.get(1) {
        Some(v) => text(v).chars().collect(),
        None => vec![' '],
    }
}

pub fn btrim(a: &[Value]) -> Result<Value> {
    let set = trim_set(a);
    t(text(&a[0]).trim_matches(|c| set.contains(&c)))
}

pub fn ltrim(a: &[Value]) -> Result<Value> {
    let set = trim_set(a);
    t(text(&a[0]).trim_start_matches(|c| set.contains(&c)))
}

pub fn rtrim(a: &[Value]) -> Result<Value> {
    let set = trim_set(a);
    t(text(&a[0]).trim_end_matches(|c| set.contains(&c)))
}

/// lpad/rpad: `len` characters, the fill repeated on one side. PostgreSQL
/// sizes the result for 4-byte characters first: past 1 GB that is 54000.
fn pad(a: &[Value], left: bool, ck: &dyn Interrupts) -> Result<Value> {
    let len = int(&a[1]).max(0) as usize;
    if len.saturating_mul(4).saturating_add(4) > MAX_ALLOC_SIZE {
        return Err(length_too_large());
    }
    let s = text(&a[0]);
    let fill = match a.get(2) {
        Some(v) => text(v),
        None => " ",
    };
    let have = s.chars().count();
    if have >= len || fill.is_empty() {
        let end = s.char_indices().nth(len).map_or(s.len(), |(i, _)| i);
        return t(&s[..end]);
    }
    // The padding in whole copies of the fill, then its first characters.
    let want = len - have;
    let fill_chars = fill.chars().count();
    let mut padding = repeat_str(fill, want / fill_chars, ck)?;
    padding.extend(fill.chars().take(want % fill_chars));
    t(if left { padding + s } else { [s, padding.as_str()].concat() })
}

pub fn lpad(a: &[Value], ck: &dyn Interrupts) -> Result<Value> {
    pad(a, true, ck)
}

pub fn rpad(a: &[Value], ck: &dyn Interrupts) -> Result<Value> {
    pad(a, false, ck)
}

pub fn left(a: &[Value]) -> Result<Value> {
    let s = text(&a[0]);
    let n = int(&a[1]);
    let take = if n >= 0 { n as usize } else { s.chars().count().saturating_sub(n.unsigned_abs() as usize) };
    t(s.chars().take(take).collect::<String>())
}

pub fn right(a: &[Value]) -> Result<Value> {
    let s = text(&a[0]);
    let n = int(&a[1]);
    let len = s.chars().count();
    let skip = if n >= 0 { len.saturating_sub(n as usize) } else { (n.unsigned_abs() as usize).min(len) };
    t(s.chars().skip(skip).collect::<String>())
}

/// repeat(s, n): past 1 GB (with the 4-byte header) it is 54000, as in
/// PostgreSQL. Built by doubling, with an interrupt check per step.
pub fn repeat(a: &[Value], ck: &dyn Interrupts) -> Result<Value> {
    let s = text(&a[0]);
    let n = int(&a[1]).max(0) as usize;
    if s.len().saturating_mul(n).saturating_add(4) > MAX_ALLOC_SIZE {
        return Err(length_too_large());
    }
    t(repeat_str(s, n, ck)?)
}

/// `s` repeated `n` times (the caller bounds the size), built by doubling
/// what is there, polling `ck` between the copies.
fn repeat_str(s: &str, n: usize, ck: &dyn Interrupts) -> Result<String> {
    let total = s.len() * n;
    crate::memory::reserve(total)?;
    let mut out = String::with_capacity(total);
    if n > 0 {
        out.push_str(s);
    }
    while out.len() < total {
        ck.check()?;
        let more = (total - out.len()).min(out.len());
        out.extend_from_within(..more);
    }
    Ok(out)
}

pub fn reverse(a: &[Value]) -> Result<Value> {
    t(text(&a[0]).chars().rev().collect::<String>())
}

pub fn split_part(a: &[Value]) -> Result<Value> {
    let (s, delim, n) = (text(&a[0]), text(&a[1]), int(&a[2]));
    if n == 0 {
        return Err(SqlError::new(b"22023", "field position must not be zero"));
    }
    let fields: Vec<&str> = if delim.is_empty() {
        if s.is_empty() { vec![] } else { vec![s] }
    } else {
        s.split(delim).collect()
    };
    let i = if n > 0 { n - 1 } else { fields.len() as i64 + n };
    t(if i >= 0 { fields.get(i as usize).copied().unwrap_or("") } else { "" })
}

pub fn ascii(a: &[Value]) -> Result<Value> {
    Ok(Value::Int4(text(&a[0]).chars().next().map_or(0, |c| c as i32)))
}

pub fn chr(a: &[Value]) -> Result<Value> {
    let n = int(&a[0]);
    if n == 0 {
        return Err(SqlError::new(b"54000", "null character not permitted"));
    }
    if n < 0 {
        return Err(SqlError::new(b"22023", "character number must be positive"));
    }
    if n > 0x10FFFF {
        return Err(SqlError::new(b"54000", format!("requested character too large for encoding: {n}")));
    }
    match char::from_u32(n as u32) {
        Some(c) => t(c.to_string()),
        None => Err(SqlError::new(b"54000", format!("requested character not valid for encoding: {n}"))),
    }
}

pub fn concat(a: &[Value]) -> Result<Value> {
    let mut out = String::new();
    for v in a {
        if let Some(s) = types::output(v) {
            check_enlarge(out.len(), s.len())?;
            crate::memory::reserve_growth(out.len(), out.capacity(), s.len())?;
            out.push_str(&s);
        }
    }
    check_result_len(out.len())?;
    t(out)
}

pub fn concat_ws(a: &[Value]) -> Result<Value> {
    let Value::Text(sep) = &a[0] else { return Ok(Value::Null) };
    let mut out = String::new();
    let mut first = true;
    for v in &a[1..] {
        let Some(s) = types::output(v) else { continue };
        if !first {
            check_enlarge(out.len(), sep.len())?;
            out.push_str(sep);
        }
        first = false;
        check_enlarge(out.len(), s.len())?;
        crate::memory::reserve_growth(out.len(), out.capacity(), s.len())?;
        out.push_str(&s);
    }
    check_result_len(out.len())?;
    t(out)
}

/// Whether `s` needs no quotes as an identifier: lower-case letters, digits,
/// underscores (not first a digit), and not a keyword that is not unreserved.
pub fn quote_ident(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && !RESERVED_KEYWORDS.contains(&s);
    if plain {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}

pub fn quote_ident_fn(a: &[Value]) -> Result<Value> {
    t(quote_ident(text(&a[0])))
}

fn quote_literal_str(s: &str) -> String {
    let mut out = String::new();
    if s.contains('\\') {
        out.push('E');
    }
    out.push('\'');
    for c in s.chars() {
        if c == '\'' || c == '\\' {
            out.push(c);
        }
        out.push(c);
    }
    out.push('\'');
    out
}

pub fn quote_literal(a: &[Value]) -> Result<Value> {
    t(quote_literal_str(text(&a[0])))
}

pub fn quote_nullable(a: &[Value]) -> Result<Value> {
    match &a[0] {
        Value::Null => t("NULL"),
        v => t(quote_literal_str(text(v))),
    }
}

pub fn to_hex32(a: &[Value]) -> Result<Value> {
    t(format!("{:x}", int(&a[0]) as i32 as u32))
}

pub fn to_hex64(a: &[Value]) -> Result<Value> {
    t(format!("{:x}", int(&a[0]) as u64))
}

pub fn md5(a: &[Value]) -> Result<Value> {
    t(match &a[0] {
        Value::Bytea(b) => md5_hex(b),
        v => md5_hex(text(v).as_bytes()),
    })
}

pub fn starts_with(a: &[Value]) -> Result<Value> {
    Ok(Value::Bool(text(&a[0]).starts_with(text(&a[1]))))
}

/// `overlay(s PLACING p FROM start [FOR count])`: count defaults to length(p).
pub fn overlay(a: &[Value]) -> Result<Value> {
    let (s, p, start) = (text(&a[0]), text(&a[1]), int(&a[2]));
    let count = a.get(3).map_or(p.chars().count() as i64, int);
    let head = substring_chars(s, 1, Some(start - 1))?;
    let tail = substring_chars(s, start.saturating_add(count), None)?;
    t(head + p + &tail)
}

pub fn regexp_replace(a: &[Value]) -> Result<Value> {
    let flags = a.get(3).map_or("", text);
    t(ferrogres_datum::pgregex::replace(text(&a[0]), text(&a[1]), text(&a[2]), flags)?)
}

pub fn regex_eq(a: &[Value]) -> Result<Value> {
    Ok(Value::Bool(ferrogres_datum::pgregex::compile(text(&a[1]), false)?.is_match(text(&a[0]))))
}

pub fn regex_ne(a: &[Value]) -> Result<Value> {
    Ok(Value::Bool(!ferrogres_datum::pgregex::compile(text(&a[1]), false)?.is_match(text(&a[0]))))
}

pub fn iregex_eq(a: &[Value]) -> Result<Value> {
    Ok(Value::Bool(ferrogres_datum::pgregex::compile(text(&a[1]), true)?.is_match(text(&a[0]))))
}

pub fn iregex_ne(a: &[Value]) -> Result<Value> {
    Ok(Value::Bool(!ferrogres_datum::pgregex::compile(text(&a[1]), true)?.is_match(text(&a[0]))))
}

/// `similar_to_escape(pattern [, escape])`: a SIMILAR TO pattern as the POSIX
/// regular expression `~` runs (`%` any string, `_` any character, `(` a
/// non-capturing group, `.` `^` `$` literal, anchored at both ends).
pub fn similar_to_escape(a: &[Value]) -> Result<Value> {
    let pat = text(&a[0]);
    let escape: Option<char> = match a.get(1) {
        None => Some('\\'),
        Some(v) => {
            let e = text(v);
            match e.chars().count() {
                0 => None,
                1 => e.chars().next(),
                _ => {
                    return Err(SqlError::new(b"22025", "invalid escape string").with_hint("Escape string must be empty or one character."));
                }
            }
        }
    };
    let mut out = String::from("^(?:");
    let mut after_escape = false;
    let mut in_class = false;
    for c in pat.chars() {
        if after_escape {
            out.push('\\');
            out.push(c);
            after_escape = false;
        } else if Some(c) == escape {
            after_escape = true;
        } else if in_class {
            if c == '\\' {
                out.push('\\');
            }
            out.push(c);
            if c == ']' {
                in_class = false;
            }
        } else {
            match c {
                '[' => {
                    out.push(c);
                    in_class = true;
                }
                '%' => out.push_str(".*"),
                '_' => out.push('.'),
                '(' => out.push_str("(?:"),
                '\\' | '.' | '^' | '$' => {
                    out.push('\\');
                    out.push(c);
                }
                c => out.push(c),
            }
        }
    }
    out.push_str(")$");
    t(out)
}

fn format_err(msg: impl Into<String>) -> SqlError {
    SqlError::new(b"22023", msg)
}

/// `format(fmt, args...)`: `%[n$][-][width]{s|I|L}` and `%%`; `*` widths take
/// an argument (`*n$` a given one).
pub fn format(a: &[Value]) -> Result<Value> {
    let Value::Text(fmt) = &a[0] else { return Ok(Value::Null) };
    let args = &a[1..];
    let hint = "For a single \"%\" use \"%%\".";
    let unterminated = || format_err("unterminated format() type specifier").with_hint(hint);
    let chars: Vec<char> = fmt.chars().collect();
    let mut out = String::new();
    let mut next_arg = 0usize;
    let mut i = 0;
    // A number at chars[i..]: (value, index after it).
    let number = |i: usize| -> Result<Option<(usize, usize)>> {
        let mut j = i;
        let mut n: usize = 0;
        while j < chars.len() && chars[j].is_ascii_digit() {
            n = n.checked_mul(10).and_then(|n| n.checked_add(chars[j] as usize - '0' as usize)).ok_or_else(|| format_err("number is out of range"))?;
            j += 1;
        }
        Ok(if j > i { Some((n, j)) } else { None })
    };
    while i < chars.len() {
        if chars[i] != '%' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        i += 1;
        if i >= chars.len() {
            return Err(unterminated());
        }
        if chars[i] == '%' {
            out.push('%');
            i += 1;
            continue;
        }
        // Argument position `n$`.
        let mut position = None;
        if let Some((n, j)) = number(i)? {
            if j < chars.len() && chars[j] == '$' {
                if n == 0 {
                    return Err(format_err("format specifies argument 0, but arguments are numbered from 1"));
                }
                position = Some(n - 1);
                i = j + 1;
            }
        }
        if i >= chars.len() {
            return Err(unterminated());
        }
        let mut left_align = false;
        while i < chars.len() && chars[i] == '-' {
            left_align = true;
            i += 1;
        }
        let mut width: Option<i64> = None;
        if i < chars.len() && chars[i] == '*' {
            i += 1;
            let mut wpos = None;
            if let Some((n, j)) = number(i)? {
                if j < chars.len() && chars[j] == '$' {
                    if n == 0 {
                        return Err(format_err("format specifies argument 0, but arguments are numbered from 1"));
                    }
                    wpos = Some(n - 1);
                    i = j + 1;
                } else {
                    return Err(unterminated());
                }
            }
            let k = wpos.unwrap_or_else(|| {
                let k = next_arg;
                next_arg += 1;
                k
            });
            let v = args.get(k).ok_or_else(|| format_err("too few arguments for format()"))?;
            if let Some(wpos) = wpos {
                next_arg = wpos + 1;
            }
            width = match v {
                Value::Null => None,
                v => Some(match v.as_i64() {
                    Some(w) => w,
                    None => types::output(v)
                        .and_then(|s| s.trim().parse::<i64>().ok())
                        .ok_or_else(|| SqlError::new(b"22P02", format!("invalid input syntax for type integer: \"{}\"", types::output(v).unwrap_or_default())))?,
                }),
            };
        } else if let Some((n, j)) = number(i)? {
            width = Some(n as i64);
            i = j;
        }
        if i >= chars.len() {
            return Err(unterminated());
        }
        let conv = chars[i];
        i += 1;
        if !matches!(conv, 's' | 'I' | 'L') {
            return Err(format_err(format!("unrecognized format() type specifier \"{conv}\"")).with_hint(hint));
        }
        let k = match position {
            Some(p) => p,
            None => next_arg,
        };
        next_arg = k + 1;
        let v = args.get(k).ok_or_else(|| format_err("too few arguments for format()"))?;
        let s = match (conv, v) {
            ('s', Value::Null) => String::new(),
            ('s', v) => types::output(v).unwrap_or_default(),
            ('I', Value::Null) => return Err(SqlError::new(b"22004", "null values cannot be formatted as an SQL identifier")),
            ('I', v) => quote_ident(&types::output(v).unwrap_or_default()),
            (_, Value::Null) => "NULL".to_string(),
            (_, v) => quote_literal_str(&types::output(v).unwrap_or_default()),
        };
        let (left_align, w) = match width {
            Some(w) if w < 0 => (true, w.unsigned_abs() as usize),
            Some(w) => (left_align, w as usize),
            None => (left_align, 0),
        };
        let len = s.chars().count();
        if len >= w {
            out.push_str(&s);
        } else if left_align {
            out.push_str(&s);
            out.extend(std::iter::repeat_n(' ', w - len));
        } else {
            out.extend(std::iter::repeat_n(' ', w - len));
            out.push_str(&s);
        }
    }
    t(out)
}

pub use ferrogres_engine::config::password::md5_hex;

/// encode(bytea, text): hex, base64 or escape text of the bytes.
pub fn encode(a: &[Value]) -> Result<Value> {
    let Value::Bytea(b) = &a[0] else { return Err(SqlError::internal("encode of a non-bytea value")) };
    // The longest result (hex, or escape's 4 bytes per byte) must be
    // allocatable, as PostgreSQL checks before encoding.
    check_result_len(b.len().saturating_mul(4))?;
    t(ferrogres_datum::bytea::encode(b, text(&a[1]))?)
}

/// decode(text, text): the bytes that hex, base64 or escape text stands for.
pub fn decode(a: &[Value]) -> Result<Value> {
    Ok(Value::Bytea(ferrogres_datum::bytea::decode(text(&a[0]), text(&a[1]))?))
}

/// sha224(bytea), sha256, sha384, sha512 (PostgreSQL 11+): the digest as
/// bytea (the sha2 crate).
pub fn sha224(a: &[Value]) -> Result<Value> {
    sha::<sha2::Sha224>(a)
}
pub fn sha256(a: &[Value]) -> Result<Value> {
    sha::<sha2::Sha256>(a)
}
pub fn sha384(a: &[Value]) -> Result<Value> {
    sha::<sha2::Sha384>(a)
}
pub fn sha512(a: &[Value]) -> Result<Value> {
    sha::<sha2::Sha512>(a)
}
fn sha<D: sha2::Digest>(a: &[Value]) -> Result<Value> {
    let digest = match &a[0] {
        Value::Bytea(b) => D::digest(b),
        v => D::digest(text(v).as_bytes()),
    };
    Ok(Value::Bytea(digest.to_vec()))
}

/// PostgreSQL 15's keywords that are not unreserved (quote_ident quotes them):
/// `select word from pg_get_keywords() where catcode <> 'U'`.
const RESERVED_KEYWORDS: &[&str] = &[
    "all", "analyse", "analyze", "and", "any", "array", "as", "asc", "asymmetric", "authorization",
    "between", "bigint", "binary", "bit", "boolean", "both", "case", "cast", "char", "character",
    "check", "coalesce", "collate", "collation", "column", "concurrently", "constraint", "create",
    "cross", "current_catalog", "current_date", "current_role", "current_schema", "current_time",
    "current_timestamp", "current_user", "dec", "decimal", "default", "deferrable", "desc",
    "distinct", "do", "else", "end", "except", "exists", "extract", "false", "fetch", "float",
    "for", "foreign", "freeze", "from", "full", "grant", "greatest", "group", "grouping", "having",
    "ilike", "in", "initially", "inner", "inout", "int", "integer", "intersect", "interval", "into",
    "is", "isnull", "join", "lateral", "leading", "least", "left", "like", "limit", "localtime",
    "localtimestamp", "national", "natural", "nchar", "none", "normalize", "not", "notnull", "null",
    "nullif", "numeric", "offset", "on", "only", "or", "order", "out", "outer", "overlaps",
    "overlay", "placing", "position", "precision", "primary", "real", "references", "returning",
    "right", "row", "select", "session_user", "setof", "similar", "smallint", "some", "substring",
    "symmetric", "table", "tablesample", "then", "time", "timestamp", "to", "trailing", "treat",
    "trim", "true", "union", "unique", "user", "using", "values", "varchar", "variadic", "verbose",
    "when", "where", "window", "with", "xmlattributes", "xmlconcat", "xmlelement", "xmlexists",
    "xmlforest", "xmlnamespaces", "xmlparse", "xmlpi", "xmlroot", "xmlserialize", "xmltable",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_known_values() {
        assert_eq!(md5_hex(b""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(md5_hex(b"abc"), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(md5_hex(&[b'a'; 100]), "36a92cc94a9e0fa21f625f8bfb007adf");
    }

    #[test]
    fn identifiers() {
        assert_eq!(quote_ident("foo_1"), "foo_1");
        assert_eq!(quote_ident("Foo"), "\"Foo\"");
        assert_eq!(quote_ident("select"), "\"select\"");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
    }
}
