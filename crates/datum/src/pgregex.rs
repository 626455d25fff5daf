//! PostgreSQL's regular expressions (POSIX AREs) on the `regex` crate.
//!
//! A pattern is translated before it is compiled, where the two dialects differ:
//! `.` and bracket negations match newlines (PostgreSQL is not newline-sensitive
//! unless asked with the `n` flag); `\m` `\M` `\y` `\Y` `\Z` and `[[:<:]]`
//! `[[:>:]]` become Rust's word boundaries; `[` `&` `~` inside a bracket
//! expression are literal characters (Rust would read nested classes and set
//! operations); the `***=` (literal) and `***:` directors. Back references and
//! lookaround (which the `regex` crate lacks) are 0A000. Syntax errors get
//! PostgreSQL's 2201B messages (`invalid regular expression: parentheses () not
//! balanced`). Compiled patterns are cached per thread.

use crate::errors::{Result, SqlError};
use regex::Regex;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
struct Options {
    case_insensitive: bool,
    newline_sensitive: bool,
    expanded: bool,
    literal: bool,
}

impl Options {
    /// One letter of a regexp function's `flags` argument other than `g`
    /// (which each function treats its own way).
    fn apply_flag(&mut self, c: char) -> Result<()> {
        match c {
            'i' => self.case_insensitive = true,
            'c' => self.case_insensitive = false,
            'n' | 'm' => self.newline_sensitive = true,
            's' | 'p' | 'w' => self.newline_sensitive = false,
            'x' => self.expanded = true,
            'q' => self.literal = true,
            'b' | 'e' | 't' => {}
            other => return Err(SqlError::new(b"22023", format!("invalid regular expression option: \"{other}\""))),
        }
        Ok(())
    }
}

thread_local! {
    static CACHE: RefCell<HashMap<(String, Options), Rc<Regex>>> = RefCell::new(HashMap::new());
}

fn invalid(what: &str) -> SqlError {
    SqlError::new(b"2201B", format!("invalid regular expression: {what}"))
}

/// Compiles `pattern` as `~` (`~*` with `case_insensitive`) reads it.
pub fn compile(pattern: &str, case_insensitive: bool) -> Result<Rc<Regex>> {
    compile_with(pattern, Options { case_insensitive, ..Options::default() })
}

fn compile_with(pattern: &str, opts: Options) -> Result<Rc<Regex>> {
    let key = (pattern.to_string(), opts);
    if let Some(r) = CACHE.with(|c| c.borrow().get(&key).cloned()) {
        return Ok(r);
    }
    let translated = translate(pattern, opts)?;
    let re = regex::RegexBuilder::new(&translated).size_limit(64 << 20).build().map_err(|e| map_error(&e))?;
    let re = Rc::new(re);
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= 64 {
            c.clear();
        }
        c.insert(key, re.clone());
    });
    Ok(re)
}

/// PostgreSQL's message for a pattern the Rust parser refused.
fn map_error(e: &regex::Error) -> SqlError {
    let text = e.to_string();
    let what = if text.contains("unclosed group") || text.contains("unopened group") {
        "parentheses () not balanced"
    } else if text.contains("unclosed character class") {
        "brackets [] not balanced"
    } else if text.contains("repetition operator missing expression") {
        "quantifier operand invalid"
    } else if text.contains("escape") {
        "invalid escape \\ sequence"
    } else if text.contains("unclosed counted repetition") {
        "braces {} not balanced"
    } else if text.contains("repetition") || text.contains("decimal") {
        "invalid repetition count(s)"
    } else if text.contains("too big") {
        "regular expression is too complex"
    } else if text.contains("character class range") || text.contains("range") {
        "invalid character range"
    } else {
        "invalid regular expression"
    };
    invalid(what)
}

/// A PostgreSQL ARE as a Rust regex.
fn translate(pattern: &str, mut opts: Options) -> Result<String> {
    let mut p = pattern;
    if let Some(rest) = p.strip_prefix("***=") {
        opts.literal = true;
        p = rest;
    } else if let Some(rest) = p.strip_prefix("***:") {
        p = rest;
    }
    // Embedded options at the start: (?flags).
    if !opts.literal && p.starts_with("(?") && !p.starts_with("(?:") && !p.starts_with("(?=") && !p.starts_with("(?!") && !p.starts_with("(?<") {
        if let Some(end) = p.find(')') {
            for c in p[2..end].chars() {
                match c {
                    'i' => opts.case_insensitive = true,
                    'c' => opts.case_insensitive = false,
                    'n' | 'm' => opts.newline_sensitive = true,
                    's' => opts.newline_sensitive = false,
                    'x' => opts.expanded = true,
                    't' | 'b' | 'e' | 'p' | 'w' => {}
                    'q' => opts.literal = true,
                    _ => return Err(invalid("invalid embedded option")),
                }
            }
            p = &p[end + 1..];
        }
    }
    let mut out = String::new();
    out.push_str("(?");
    if opts.case_insensitive {
        out.push('i');
    }
    if opts.newline_sensitive {
        out.push('m');
    } else {
        out.push('s');
    }
    if opts.expanded {
        out.push('x');
    }
    out.push(')');
    if opts.literal {
        out.push_str(&regex::escape(p));
        return Ok(out);
    }
    let chars: Vec<char> = p.chars().collect();
    let mut i = 0;
    let unsupported = |what: &str| SqlError::not_supported(format!("{what} in regular expressions"));
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' => {
                let Some(&n) = chars.get(i + 1) else { return Err(invalid("invalid escape \\ sequence")) };
                match n {
                    'm' => out.push_str(r"\b{start}"),
                    'M' => out.push_str(r"\b{end}"),
                    'y' => out.push_str(r"\b"),
                    'Y' => out.push_str(r"\B"),
                    'Z' => out.push_str(r"\z"),
                    '1'..='9' => return Err(unsupported("back references")),
                    _ => {
                        out.push('\\');
                        out.push(n);
                    }
                }
                i += 2;
            }
            '(' if chars.get(i + 1) == Some(&'?') && matches!(chars.get(i + 2), Some('=' | '!' | '<')) => {
                return Err(unsupported("lookahead and lookbehind constraints"));
            }
            '[' => {
                let rest: String = chars[i..].iter().take(7).collect();
                if rest == "[[:<:]]" {
                    out.push_str(r"\b{start}");
                    i += 7;
                    continue;
                }
                if rest == "[[:>:]]" {
                    out.push_str(r"\b{end}");
                    i += 7;
                    continue;
                }
                i = bracket(&chars, i, &mut out)?;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// Copies the bracket expression starting at `chars[start]` (a `[`), escaping
/// what Rust would read as nested classes or set operators. Returns the index
/// after it.
fn bracket(chars: &[char], start: usize, out: &mut String) -> Result<usize> {
    let mut i = start + 1;
    out.push('[');
    if chars.get(i) == Some(&'^') {
        out.push('^');
        i += 1;
    }
    // A `]` first is a literal.
    if chars.get(i) == Some(&']') {
        out.push_str(r"\]");
        i += 1;
    }
    while i < chars.len() {
        let c = chars[i];
        match c {
            ']' => {
                out.push(']');
                return Ok(i + 1);
            }
            '[' if matches!(chars.get(i + 1), Some(':' | '.' | '=')) => {
                let kind = chars[i + 1];
                // Up to the matching `:]`, `.]` or `=]`.
                let mut j = i + 2;
                while j + 1 < chars.len() && !(chars[j] == kind && chars[j + 1] == ']') {
                    j += 1;
                }
                if j + 1 >= chars.len() {
                    return Err(invalid("brackets [] not balanced"));
                }
                let inner: String = chars[i + 2..j].iter().collect();
                match kind {
                    ':' => {
                        out.push_str("[:");
                        out.push_str(&inner);
                        out.push_str(":]");
                    }
                    // A collating element or equivalence class of one character.
                    _ if inner.chars().count() == 1 => out.push_str(&regex::escape(&inner)),
                    _ => return Err(invalid("invalid collating element")),
                }
                i = j + 2;
            }
            '[' | '&' | '~' => {
                out.push('\\');
                out.push(c);
                i += 1;
            }
            '\\' => {
                let Some(&n) = chars.get(i + 1) else { return Err(invalid("invalid escape \\ sequence")) };
                out.push('\\');
                out.push(n);
                i += 2;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    Err(invalid("brackets [] not balanced"))
}

/// regexp_replace(source, pattern, replacement, flags): `g` every match (else
/// the first), `i` case-insensitive; `\1`..`\9` and `\&` in the replacement.
pub fn replace(source: &str, pattern: &str, replacement: &str, flags: &str) -> Result<String> {
    let mut opts = Options::default();
    let mut global = false;
    for c in flags.chars() {
        match c {
            'g' => global = true,
            c => opts.apply_flag(c)?,
        }
    }
    let re = compile_with(pattern, opts)?;
    let rep: Vec<char> = replacement.chars().collect();
    let expand = |caps: &regex::Captures, out: &mut String| {
        let mut i = 0;
        while i < rep.len() {
            if rep[i] == '\\' && i + 1 < rep.len() {
                let n = rep[i + 1];
                if let Some(d) = n.to_digit(10) {
                    if d >= 1 {
                        out.push_str(caps.get(d as usize).map_or("", |m| m.as_str()));
                        i += 2;
                        continue;
                    }
                } else if n == '&' {
                    out.push_str(caps.get(0).map_or("", |m| m.as_str()));
                    i += 2;
                    continue;
                } else if n == '\\' {
                    out.push('\\');
                    i += 2;
                    continue;
                }
            }
            out.push(rep[i]);
            i += 1;
        }
    };
    // As PostgreSQL: after an empty match the search moves one character on;
    // an empty match right after a non-empty one counts (`a*` on `aaa` matches twice).
    let mut out = String::new();
    let mut last = 0;
    let mut pos = 0;
    while pos <= source.len() {
        let Some(caps) = re.captures_at(source, pos) else { break };
        let m = caps.get(0).expect("group 0 always matches");
        out.push_str(&source[last..m.start()]);
        expand(&caps, &mut out);
        last = m.end();
        if !global {
            break;
        }
        pos = if m.end() > m.start() {
            m.end()
        } else {
            match source[m.end()..].chars().next() {
                Some(c) => m.end() + c.len_utf8(),
                None => break,
            }
        };
    }
    out.push_str(&source[last..]);
    Ok(out)
}

/// regexp_split_to_table(source, pattern, flags): the pieces between matches.
/// Zero-length matches at the start or end of the string, or right after the
/// previous match, split nothing (so `''` splits into characters).
pub fn split(source: &str, pattern: &str, flags: &str) -> Result<Vec<String>> {
    let mut opts = Options::default();
    for c in flags.chars() {
        match c {
            'g' => return Err(SqlError::new(b"22023", "regexp_split_to_table() does not support the \"global\" option")),
            c => opts.apply_flag(c)?,
        }
    }
    let re = compile_with(pattern, opts)?;
    let mut out = Vec::new();
    let mut piece_start = 0;
    let mut prev_end: Option<usize> = None;
    for m in re.find_iter(source) {
        if m.start() == m.end() && (m.start() == 0 || m.start() == source.len() || prev_end == Some(m.start())) {
            continue;
        }
        out.push(source[piece_start..m.start()].to_string());
        piece_start = m.end();
        prev_end = Some(m.end());
    }
    out.push(source[piece_start..].to_string());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialect_differences() {
        assert!(compile("a.b", false).unwrap().is_match("a\nb"));
        assert!(compile(r"\mfoo\M", false).unwrap().is_match("a foo b"));
        assert!(!compile(r"\mfoo\M", false).unwrap().is_match("afoob"));
        assert!(compile("[[a]", false).unwrap().is_match("["));
        assert!(compile("[[:digit:]]+", false).unwrap().is_match("x12"));
        assert!(compile("ABC", true).unwrap().is_match("xabcx"));
        assert_eq!(compile("(", false).unwrap_err().message, "invalid regular expression: parentheses () not balanced");
        assert_eq!(compile("[a", false).unwrap_err().message, "invalid regular expression: brackets [] not balanced");
        assert_eq!(compile("*", false).unwrap_err().message, "invalid regular expression: quantifier operand invalid");
        assert_eq!(compile(r"(a)\1", false).unwrap_err().sqlstate(), "0A000");
    }

    #[test]
    fn replacement() {
        assert_eq!(replace("abcabc", "b", "X", "").unwrap(), "aXcabc");
        assert_eq!(replace("abcabc", "B", "X", "gi").unwrap(), "aXcaXc");
        assert_eq!(replace("abc", "(b)(c)", r"[\2\1\&]", "").unwrap(), "a[cbbc]");
        assert_eq!(replace("abc", "b", "x", "z").unwrap_err().message, "invalid regular expression option: \"z\"");
    }
}
