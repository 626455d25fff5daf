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
        let mut out = Vec::with_capacity((b.len() - 2) / 2);
        let mut i = 2;
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
        return Ok(out);
    }
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
