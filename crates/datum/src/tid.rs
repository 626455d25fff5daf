//! tid (OID 27, array `_tid` 1010): a tuple's physical place, (block number,
//! line pointer offset), `Value::Tid(block, offset)`; the type of the system
//! column `ctid`. Stored as PostgreSQL stores it: 6 bytes by reference, typalign
//! s (the block number as two 16-bit halves, high first, then the offset).
//!
//! - Text input, as PostgreSQL's tidin accepts it: anything up to a `(`, then
//!   the block number up to a `,`, the offset up to a `)`, and anything after
//!   it. Each number may have leading blanks and a sign and is decimal; an
//!   empty one is 0. The block number must fit in 32 bits unsigned or signed
//!   (`-1` is 4294967295), the offset in 0..=65535. Anything else is 22P02
//!   `invalid input syntax for type tid: "..."`. Output: `(block,offset)`.
//! - Binary I/O: the block number as a big-endian uint32, then the offset as a
//!   big-endian uint16.
//! - Order: by block, then offset (=, <>, <, <=, >, >=, ORDER BY, min/max).
//! - Casts: only the I/O conversions to and from the string types.

use crate::errors::{Result, SqlError};

pub const TID_OID: u32 = 27;
pub const TID_ARRAY_OID: u32 = 1010;

fn bad(s: &str) -> SqlError {
    SqlError::new(b"22P02", format!("invalid input syntax for type tid: \"{s}\""))
}

/// C's strtol/strtoul on `s`: leading blanks, an optional sign, decimal
/// digits. The magnitude (saturated past u64), whether it was negative, and
/// the rest after the number (all of `s` when there are no digits).
fn leading_number(s: &str) -> (u128, bool, &str) {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let digits = t.bytes().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return (0, false, s);
    }
    let mut v: u128 = 0;
    for b in t[..digits].bytes() {
        v = (v * 10 + (b - b'0') as u128).min(u64::MAX as u128 + 1);
    }
    (v, neg, &t[digits..])
}

/// tidin.
pub fn input(s: &str) -> Result<(u32, u16)> {
    // The two numbers start after the first `(` and after the `,` that follows.
    let mut starts = Vec::with_capacity(2);
    for (i, c) in s.char_indices() {
        if starts.len() == 2 || c == ')' {
            break;
        }
        if c == ',' || (c == '(' && starts.is_empty()) {
            starts.push(i + 1);
        }
    }
    let [b, o] = starts[..] else { return Err(bad(s)) };
    let (mag, neg, rest) = leading_number(&s[b..]);
    if mag > u64::MAX as u128 || !rest.starts_with(',') {
        return Err(bad(s));
    }
    let block = match (neg, mag) {
        (false, m) if m <= u32::MAX as u128 => m as u32,
        // A negative block number within int32's range wraps, as a cast of
        // strtoul's result does.
        (true, m) if m <= 1 << 31 => (m as i64).wrapping_neg() as u32,
        _ => return Err(bad(s)),
    };
    let (mag, neg, rest) = leading_number(&s[o..]);
    if !rest.starts_with(')') || (mag > 65535) || (neg && mag != 0) {
        return Err(bad(s));
    }
    Ok((block, mag as u16))
}

/// tidout.
pub fn output(block: u32, offset: u16) -> String {
    format!("({block},{offset})")
}

/// tidsend.
pub fn send(block: u32, offset: u16) -> Vec<u8> {
    let mut b = block.to_be_bytes().to_vec();
    b.extend_from_slice(&offset.to_be_bytes());
    b
}

/// tidrecv: 6 bytes.
pub fn recv(b: &[u8]) -> Result<(u32, u16)> {
    match <[u8; 6]>::try_from(b) {
        Ok(a) => Ok((u32::from_be_bytes([a[0], a[1], a[2], a[3]]), u16::from_be_bytes([a[4], a[5]]))),
        Err(_) if b.len() < 6 => Err(SqlError::new(b"08P01", "insufficient data left in message")),
        Err(_) => Err(SqlError::new(b"22P03", "incorrect binary data format")),
    }
}

/// The 6 stored bytes (ItemPointerData: block high and low halves, offset).
pub fn to_bytes(block: u32, offset: u16) -> Vec<u8> {
    let mut b = ((block >> 16) as u16).to_le_bytes().to_vec();
    b.extend_from_slice(&(block as u16).to_le_bytes());
    b.extend_from_slice(&offset.to_le_bytes());
    b
}

/// A stored tid.
pub fn from_bytes(b: &[u8]) -> Option<(u32, u16)> {
    let a = <[u8; 6]>::try_from(b).ok()?;
    let hi = u16::from_le_bytes([a[0], a[1]]) as u32;
    let lo = u16::from_le_bytes([a[2], a[3]]) as u32;
    Some((hi << 16 | lo, u16::from_le_bytes([a[4], a[5]])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_accepts_what_tidin_accepts() {
        assert_eq!(input("(0,1)").unwrap(), (0, 1));
        assert_eq!(input(" (1,2)").unwrap(), (1, 2));
        assert_eq!(input("(+1, 2)junk").unwrap(), (1, 2));
        assert_eq!(input("(,)").unwrap(), (0, 0));
        assert_eq!(input("(-1,1)").unwrap(), (u32::MAX, 1));
        assert_eq!(input("(4294967295,65535)").unwrap(), (u32::MAX, 65535));
        assert_eq!(input("(1,-0)").unwrap(), (1, 0));
        for s in ["x", "()", "(1,2", "(1 ,2)", "(0x1,2)", "(1,2,3)", "(4294967296,1)", "(1,65536)", "(1,-1)", "(-4294967295,1)", "( 1 , 2 )", "(1.5,2)"] {
            assert_eq!(input(s).unwrap_err().sqlstate(), "22P02", "{s}");
        }
    }

    #[test]
    fn binary_and_stored_forms_round_trip() {
        let t = (0x0102_0304, 0x0506);
        assert_eq!(send(t.0, t.1), vec![1, 2, 3, 4, 5, 6]);
        assert_eq!(recv(&send(t.0, t.1)).unwrap(), t);
        assert_eq!(recv(&[0; 5]).unwrap_err().sqlstate(), "08P01");
        assert_eq!(from_bytes(&to_bytes(t.0, t.1)), Some(t));
    }
}
