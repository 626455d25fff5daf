//! `bytea` (oid 17): text input in hex (`\x4142`) and escape (`ab\001\\`) forms,
//! hex output (bytea_output = hex, the default), raw bytes in binary.

use crate::errors::{Result, SqlError};

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// byteain: `\x` then hex digit pairs (blanks allowed between pairs), else the
/// escape format (`\\` is a backslash, `\ooo` an octal byte).
pub fn input(s: &str) -> Result<Vec<u8>> {
    let b = s.as_bytes();
    if b.len() >= 2 && b[0] == b'\\' && (b[1] == b'x' || b[1] == b'X') {
        return hex_decode(s, 2);
    }
    escape_decode(s)
}

/// Hex digit pairs of `s` from byte `from` on, blanks allowed between pairs
/// (PostgreSQL's hex_decode).
fn hex_decode(s: &str, from: usize) -> Result<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len().saturating_sub(from) / 2);
    let mut i = from;
    while i < b.len() {
        let c = b[i];
        if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
            continue;
        }
        let bad_digit = |c: u8| {
            let ch = s[i..].chars().next().unwrap_or(c as char);
            SqlError::new(b"22023", format!("invalid hexadecimal digit: \"{ch}\""))
        };
        let hi = hex_value(c).ok_or_else(|| bad_digit(c))?;
        let Some(&c2) = b.get(i + 1) else {
            return Err(SqlError::new(b"22023", "invalid hexadecimal data: odd number of digits"));
        };
        i += 1;
        let lo = hex_value(c2).ok_or_else(|| {
            let ch = s[i..].chars().next().unwrap_or(c2 as char);
            SqlError::new(b"22023", format!("invalid hexadecimal digit: \"{ch}\""))
        })?;
        out.push(hi << 4 | lo);
        i += 1;
    }
    Ok(out)
}

/// The escape format: `\\` is a backslash, `\ooo` an octal byte, other bytes
/// stand for themselves (PostgreSQL's esc_decode).
fn escape_decode(s: &str) -> Result<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
        } else if b.get(i + 1) == Some(&b'\\') {
            out.push(b'\\');
            i += 2;
        } else if i + 3 < b.len() && (b'0'..=b'3').contains(&b[i + 1]) && (b'0'..=b'7').contains(&b[i + 2]) && (b'0'..=b'7').contains(&b[i + 3]) {
            out.push((b[i + 1] - b'0') << 6 | (b[i + 2] - b'0') << 3 | (b[i + 3] - b'0'));
            i += 4;
        } else {
            return Err(SqlError::new(b"22P02", "invalid input syntax for type bytea"));
        }
    }
    Ok(out)
}

/// encode(bytea, format): `hex`, `base64` (a newline after every 76
/// characters, as PostgreSQL writes it) or `escape` (NUL and bytes with the
/// high bit as `\ooo`, a backslash doubled).
pub fn encode(b: &[u8], format: &str) -> Result<String> {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    match format.to_ascii_lowercase().as_str() {
        "hex" => Ok(b.iter().flat_map(|&x| [HEX[(x >> 4) as usize] as char, HEX[(x & 15) as usize] as char]).collect()),
        "base64" => {
            let mut out = String::with_capacity(b.len().div_ceil(3) * 4 + b.len() / 57 + 1);
            let mut line = 0;
            for chunk in b.chunks(3) {
                let n = (chunk[0] as u32) << 16 | (*chunk.get(1).unwrap_or(&0) as u32) << 8 | *chunk.get(2).unwrap_or(&0) as u32;
                for k in 0..4 {
                    out.push(if k <= chunk.len() { B64[(n >> (18 - 6 * k) & 63) as usize] as char } else { '=' });
                }
                // A full group ends a 76-character line, the last one too.
                line += 4;
                if chunk.len() == 3 && line >= 76 {
                    out.push('\n');
                    line = 0;
                }
            }
            Ok(out)
        }
        "escape" => {
            let mut out = String::with_capacity(b.len());
            for &x in b {
                match x {
                    0 | 0x80..=0xff => out.push_str(&format!("\\{x:03o}")),
                    b'\\' => out.push_str("\\\\"),
                    _ => out.push(x as char),
                }
            }
            Ok(out)
        }
        _ => Err(unknown_encoding(format)),
    }
}

/// decode(text, format): the inverse of [`encode`], with PostgreSQL's errors
/// (blanks are skipped in hex and base64).
pub fn decode(s: &str, format: &str) -> Result<Vec<u8>> {
    match format.to_ascii_lowercase().as_str() {
        "hex" => hex_decode(s, 0),
        "base64" => base64_decode(s),
        "escape" => escape_decode(s),
        _ => Err(unknown_encoding(format)),
    }
}

fn unknown_encoding(format: &str) -> SqlError {
    SqlError::new(b"22023", format!("unrecognized encoding: \"{format}\""))
}

/// PostgreSQL's base64 decoding: blanks skipped, `=` ends the data (one or
/// two of them, at the third or fourth place of a group).
fn base64_decode(s: &str) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    let (mut buf, mut pos, mut end) = (0u32, 0, 0);
    for (i, c) in s.char_indices() {
        if matches!(c, ' ' | '\t' | '\n' | '\r') {
            continue;
        }
        let v = if c == '=' {
            if end == 0 {
                end = match pos {
                    2 => 1,
                    3 => 2,
                    _ => return Err(SqlError::new(b"22023", "unexpected \"=\" while decoding base64 sequence")),
                };
            }
            0
        } else {
            match c {
                'A'..='Z' => c as u32 - 'A' as u32,
                'a'..='z' => c as u32 - 'a' as u32 + 26,
                '0'..='9' => c as u32 - '0' as u32 + 52,
                '+' => 62,
                '/' => 63,
                _ => {
                    let sym = &s[i..i + c.len_utf8()];
                    return Err(SqlError::new(b"22023", format!("invalid symbol \"{sym}\" found while decoding base64 sequence")));
                }
            }
        };
        buf = buf << 6 | v;
        pos += 1;
        if pos == 4 {
            out.push((buf >> 16) as u8);
            if end == 0 || end > 1 {
                out.push((buf >> 8) as u8);
            }
            if end == 0 || end > 2 {
                out.push(buf as u8);
            }
            buf = 0;
            pos = 0;
        }
    }
    if pos != 0 {
        return Err(SqlError::new(b"22023", "invalid base64 end sequence")
            .with_hint("Input data is missing padding, is truncated, or is otherwise corrupted."));
    }
    Ok(out)
}

/// byteaout in hex (or escape, under bytea_output = escape).
pub fn output(b: &[u8]) -> String {
    if crate::datestyle::current().bytea_escape {
        return crate::datestyle::bytea_escape_text(b);
    }
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(2 + 2 * b.len());
    s.push_str("\\x");
    for &x in b {
        s.push(HEX[(x >> 4) as usize] as char);
        s.push(HEX[(x & 15) as usize] as char);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_and_escape_forms() {
        assert_eq!(input("\\x4142").unwrap(), b"AB");
        assert_eq!(input("\\x41 42").unwrap(), b"AB");
        assert_eq!(input("abc").unwrap(), b"abc");
        assert_eq!(input("\\001\\\\x").unwrap(), b"\x01\\x");
        assert_eq!(input("\\x4").unwrap_err().message, "invalid hexadecimal data: odd number of digits");
        assert_eq!(input("\\xzz").unwrap_err().message, "invalid hexadecimal digit: \"z\"");
        let e = input("\\9").unwrap_err();
        assert_eq!((e.sqlstate(), e.message.as_str()), ("22P02", "invalid input syntax for type bytea"));
        assert_eq!(output(b"abc"), "\\x616263");
        assert_eq!(output(b""), "\\x");
    }
}
