//! uuid (OID 2950, array 2951): 16 bytes, `Value::Uuid`. Text input accepts
//! what PostgreSQL's uuid_in does (32 hex digits, optionally in braces, with a
//! `-` allowed after any group of four digits); output is the standard
//! 8-4-4-4-12 lowercase form; binary I/O is the 16 bytes; order is bytewise.
//! Stored as a 16-byte varlena here (PostgreSQL: fixed length 16, typalign c).

use crate::errors::{Result, SqlError};

pub fn input(s: &str) -> Result<[u8; 16]> {
    let bad = || SqlError::new(b"22P02", format!("invalid input syntax for type uuid: \"{s}\""));
    let b = s.as_bytes();
    let (mut p, braces) = if b.first() == Some(&b'{') { (1, true) } else { (0, false) };
    let mut out = [0u8; 16];
    for (i, byte) in out.iter_mut().enumerate() {
        let hex = |c: Option<&u8>| c.and_then(|c| (*c as char).to_digit(16)).ok_or_else(bad);
        let hi = hex(b.get(p))?;
        let lo = hex(b.get(p + 1))?;
        *byte = (hi * 16 + lo) as u8;
        p += 2;
        if i % 2 == 1 && i < 15 && b.get(p) == Some(&b'-') {
            p += 1;
        }
    }
    if braces {
        if b.get(p) != Some(&b'}') {
            return Err(bad());
        }
        p += 1;
    }
    if p != b.len() {
        return Err(bad());
    }
    Ok(out)
}

pub fn output(u: &[u8; 16]) -> String {
    let mut s = String::with_capacity(36);
    for (i, b) in u.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        s.push_str(&format!("{b:02x}"));
    }
    s
}

pub fn recv(b: &[u8]) -> Result<[u8; 16]> {
    // pq_copymsgbytes: a protocol violation when fewer than 16 bytes came.
    if b.len() < 16 {
        return Err(SqlError::new(b"08P01", "insufficient data left in message"));
    }
    b.try_into().map_err(|_| SqlError::new(b"22P03", "incorrect binary data format"))
}

/// gen_random_uuid(): a version 4 UUID from the operating system's generator.
pub fn random_v4() -> Result<[u8; 16]> {
    let mut u = [0u8; 16];
    getrandom_fill(&mut u)?;
    u[6] = (u[6] & 0x0f) | 0x40;
    u[8] = (u[8] & 0x3f) | 0x80;
    Ok(u)
}

fn getrandom_fill(buf: &mut [u8]) -> Result<()> {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(buf))
        .map_err(|e| SqlError::internal(format!("could not generate random values: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_postgres_accepts() {
        let want = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11";
        for s in ["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "{a0eebc99-9c0b4ef8-bb6d6bb9-bd380a11}", "A0EEBC999C0B4EF8BB6D6BB9BD380A11", "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11"] {
            assert_eq!(output(&input(s).unwrap()), want, "{s}");
        }
        for s in ["x", "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1", "a0eebc999c0b4ef8bb6d6bb9bd380a11-", "a0e-ebc99-9c0b-4ef8-bb6d-6bb9bd380a11"] {
            assert_eq!(input(s).unwrap_err().message, format!("invalid input syntax for type uuid: \"{s}\""));
        }
        let r = random_v4().unwrap();
        assert_eq!(output(&r).as_bytes()[14], b'4');
    }
}
