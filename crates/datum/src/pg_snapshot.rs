//! pg_snapshot (5038) and txid_snapshot (2970, its older name with bigint
//! functions): which full transaction ids a snapshot saw as finished, as
//! `xmin:xmax:xip,...`. Every id below xmin had finished, none at or above
//! xmax had, and those listed in xip (sorted, each in `[xmin, xmax)`) were
//! still running.

use crate::errors::{Result, SqlError};

pub const PG_SNAPSHOT_OID: u32 = 5038;
pub const TXID_SNAPSHOT_OID: u32 = 2970;

/// The largest full transaction id the types accept (PostgreSQL keeps them
/// below 2^63).
const MAX_FULL_XID: u64 = i64::MAX as u64;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgSnapshot {
    pub xmin: u64,
    pub xmax: u64,
    /// Running ids, ascending, without duplicates.
    pub xip: Vec<u64>,
}

impl PgSnapshot {
    /// pg_visible_in_snapshot: had `xid` committed or aborted for this snapshot?
    pub fn visible(&self, xid: u64) -> bool {
        xid < self.xmin || (xid < self.xmax && self.xip.binary_search(&xid).is_err())
    }
}

fn bad(s: &str) -> SqlError {
    SqlError::new(b"22P02", format!("invalid input syntax for type pg_snapshot: \"{s}\""))
}

/// Reads a decimal id at the start of `s`: (value, rest).
fn id(s: &str) -> Option<(u64, &str)> {
    let n = s.bytes().take_while(u8::is_ascii_digit).count();
    let v: u64 = s[..n].parse().ok()?;
    (v <= MAX_FULL_XID).then_some((v, &s[n..]))
}

/// pg_snapshot_in: `xmin:xmax:` then ids in ascending order, each in
/// `[xmin, xmax)`, separated by commas; a repeated id is kept once. xmin must
/// be valid (not 0) and xmax not below it. 22P02 otherwise.
pub fn input(text: &str) -> Result<PgSnapshot> {
    let parse = || -> Option<PgSnapshot> {
        let (xmin, rest) = id(text)?;
        let rest = rest.strip_prefix(':')?;
        let (xmax, rest) = id(rest)?;
        let mut rest = rest.strip_prefix(':')?;
        if xmin == 0 || xmax == 0 || xmax < xmin {
            return None;
        }
        let mut xip: Vec<u64> = Vec::new();
        while !rest.is_empty() {
            let (v, r) = id(rest)?;
            if v < xmin || v >= xmax || xip.last().is_some_and(|&last| v < last) {
                return None;
            }
            if xip.last() != Some(&v) {
                xip.push(v);
            }
            rest = match r.strip_prefix(',') {
                Some(r) => r,
                None if r.is_empty() => r,
                None => return None,
            };
        }
        Some(PgSnapshot { xmin, xmax, xip })
    };
    parse().ok_or_else(|| bad(text))
}

pub fn output(s: &PgSnapshot) -> String {
    let xip: Vec<String> = s.xip.iter().map(u64::to_string).collect();
    format!("{}:{}:{}", s.xmin, s.xmax, xip.join(","))
}

/// pg_snapshot_send: int4 count, int8 xmin, int8 xmax, an int8 per running id.
pub fn send(s: &PgSnapshot) -> Vec<u8> {
    let mut out = Vec::with_capacity(20 + 8 * s.xip.len());
    out.extend_from_slice(&(s.xip.len() as i32).to_be_bytes());
    out.extend_from_slice(&s.xmin.to_be_bytes());
    out.extend_from_slice(&s.xmax.to_be_bytes());
    for x in &s.xip {
        out.extend_from_slice(&x.to_be_bytes());
    }
    out
}

/// pg_snapshot_recv, with its checks (22P03 "invalid external pg_snapshot data").
pub fn recv(b: &[u8]) -> Result<PgSnapshot> {
    let bad = || SqlError::new(b"22P03", "invalid external pg_snapshot data");
    let word = |i: usize| b.get(i..i + 8).map(|w| u64::from_be_bytes(w.try_into().unwrap()));
    let n = b.get(..4).map(|w| i32::from_be_bytes(w.try_into().unwrap())).ok_or_else(bad)?;
    let (xmin, xmax) = (word(4).ok_or_else(bad)?, word(12).ok_or_else(bad)?);
    if n < 0 || b.len() != 20 + 8 * n as usize || xmin == 0 || xmax == 0 || xmax < xmin || xmax > MAX_FULL_XID {
        return Err(bad());
    }
    let mut xip: Vec<u64> = Vec::with_capacity(n as usize);
    for i in 0..n as usize {
        let v = word(20 + 8 * i).ok_or_else(bad)?;
        if v < xmin || v >= xmax || xip.last().is_some_and(|&last| v < last) {
            return Err(bad());
        }
        if xip.last() != Some(&v) {
            xip.push(v);
        }
    }
    Ok(PgSnapshot { xmin, xmax, xip })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_forms() {
        assert_eq!(output(&input("12:18:14,16").unwrap()), "12:18:14,16");
        assert_eq!(output(&input("12:16:14,14").unwrap()), "12:16:14");
        assert_eq!(output(&input("12:13:").unwrap()), "12:13:");
        for bad in ["31:12:", "0:1:", "12:13:0", "12:16:14,13", "1:9223372036854775808:3", "12:13", "12:20:,13", "x"] {
            assert_eq!(&input(bad).unwrap_err().code, b"22P02", "{bad}");
        }
        let s = input("12:20:13,15,18").unwrap();
        assert_eq!(recv(&send(&s)).unwrap(), s);
        assert!(s.visible(11) && !s.visible(13) && s.visible(14) && !s.visible(20));
    }
}
