//! pg_lsn (OID 3220, array `_pg_lsn` 3221): a WAL position, `Value::PgLsn(u64)`,
//! stored by value in 8 bytes (typalign d) as PostgreSQL does.
//!
//! - Text input: two groups of 1 to 8 hex digits separated by `/` and nothing
//!   else (no blanks); anything else is 22P02 `invalid input syntax for type
//!   pg_lsn: "..."`. Output: `%X/%X` (upper-case hex, no padding).
//! - Binary I/O: the position as a big-endian uint64.
//! - Order: unsigned (comparisons, ORDER BY, min/max, B-tree keys go through
//!   `exec::compare`).
//! - Operators (procedures of `functions::BUILTINS`, looked up through
//!   [`OPERATORS`]): `pg_lsn - pg_lsn` -> numeric (may be negative), `pg_lsn +
//!   numeric`, `numeric + pg_lsn`, `pg_lsn - numeric` -> pg_lsn (the numeric
//!   rounded half away from zero; NaN is 0A000, a result outside 0..2^64 is
//!   22023 `pg_lsn out of range`); pg_lsn(numeric); pg_wal_lsn_diff.
//! - Casts: only the I/O conversions to and from the string types (PostgreSQL
//!   has no pg_cast row for pg_lsn).

use crate::errors::{Result, SqlError};
use crate::numeric::Numeric;
use crate::types::{Type, Value};

pub const PG_LSN_OID: u32 = 3220;

/// `pg_lsn` operators other than comparisons: (operator, procedure).
pub static OPERATORS: &[(&str, &str)] = &[("-", "pg_lsn_mi"), ("+", "pg_lsn_pli"), ("+", "numeric_pl_pg_lsn"), ("-", "pg_lsn_mii")];

/// pg_lsn_in.
pub fn input(s: &str) -> Result<u64> {
    let bad = || SqlError::new(b"22P02", format!("invalid input syntax for type pg_lsn: \"{s}\""));
    let (hi, lo) = s.split_once('/').ok_or_else(bad)?;
    let part = |p: &str| -> Result<u64> {
        if p.is_empty() || p.len() > 8 || !p.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        u64::from_str_radix(p, 16).map_err(|_| bad())
    };
    Ok(part(hi)? << 32 | part(lo)?)
}

/// pg_lsn_out.
pub fn output(lsn: u64) -> String {
    format!("{:X}/{:X}", lsn >> 32, lsn as u32)
}

/// pg_lsn_recv: 8 bytes, big-endian.
pub fn recv(b: &[u8]) -> Result<u64> {
    match <[u8; 8]>::try_from(b) {
        Ok(a) => Ok(u64::from_be_bytes(a)),
        Err(_) if b.len() < 8 => Err(SqlError::new(b"08P01", "insufficient data left in message")),
        Err(_) => Err(SqlError::new(b"22P03", "incorrect binary data format")),
    }
}

fn out_of_range() -> SqlError {
    SqlError::new(b"22023", "pg_lsn out of range")
}

fn lsn_arg(v: &Value) -> Result<u64> {
    match v {
        Value::PgLsn(l) => Ok(*l),
        v => Err(SqlError::internal(format!("pg_lsn argument {v:?}"))),
    }
}

fn num_arg(v: &Value) -> Result<Numeric> {
    crate::numeric::of_value(v).ok_or_else(|| SqlError::internal(format!("numeric argument {v:?}")))
}

fn as_numeric(lsn: u64) -> Numeric {
    Numeric::from_i128(lsn as i128)
}

/// numeric_pg_lsn: rounded to an integer, which must fit in 0..2^64.
fn from_numeric(n: &Numeric) -> Result<u64> {
    if n.is_nan() {
        return Err(SqlError::new(b"22P02", "invalid input syntax for type pg_lsn: \"NaN\""));
    }
    if !n.is_finite() {
        return Err(out_of_range());
    }
    n.round(0, true).to_text().parse::<u64>().map_err(|_| out_of_range())
}

/// pg_lsn_mi, pg_wal_lsn_diff: a - b as numeric.
pub fn mi(a: &[Value]) -> Result<Value> {
    let (x, y) = (lsn_arg(&a[0])?, lsn_arg(&a[1])?);
    Ok(Value::Numeric(Numeric::from_i128(x as i128 - y as i128)))
}

/// pg_lsn_pli(pg_lsn, numeric).
pub fn pli(a: &[Value]) -> Result<Value> {
    add(lsn_arg(&a[0])?, &num_arg(&a[1])?, false)
}

/// numeric_pl_pg_lsn(numeric, pg_lsn).
pub fn numeric_pl(a: &[Value]) -> Result<Value> {
    add(lsn_arg(&a[1])?, &num_arg(&a[0])?, false)
}

/// pg_lsn_mii(pg_lsn, numeric).
pub fn mii(a: &[Value]) -> Result<Value> {
    add(lsn_arg(&a[0])?, &num_arg(&a[1])?, true)
}

fn add(lsn: u64, n: &Numeric, sub: bool) -> Result<Value> {
    if n.is_nan() {
        let msg = if sub { "cannot subtract NaN from pg_lsn" } else { "cannot add NaN to pg_lsn" };
        return Err(SqlError::new(b"0A000", msg));
    }
    let l = as_numeric(lsn);
    let r = if sub { l.sub(n)? } else { l.add(n)? };
    Ok(Value::PgLsn(from_numeric(&r)?))
}

/// pg_lsn(numeric).
pub fn from_numeric_fn(a: &[Value]) -> Result<Value> {
    Ok(Value::PgLsn(from_numeric(&num_arg(&a[0])?)?))
}

/// pg_lsn_larger / pg_lsn_smaller.
pub fn larger(a: &[Value]) -> Result<Value> {
    Ok(Value::PgLsn(lsn_arg(&a[0])?.max(lsn_arg(&a[1])?)))
}
pub fn smaller(a: &[Value]) -> Result<Value> {
    Ok(Value::PgLsn(lsn_arg(&a[0])?.min(lsn_arg(&a[1])?)))
}

/// The type, for the builtin table.
pub const LSN: Type = Type::PgLsn;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_io_as_postgres() {
        assert_eq!(input("16/B374D848").unwrap(), 0x16_B374_D848);
        assert_eq!(output(0x16_B374_D848), "16/B374D848");
        assert_eq!(output(0), "0/0");
        assert_eq!(input("ffffffff/FFFFFFFF").unwrap(), u64::MAX);
        for s in [" 0/1", "0/1 ", "123456789/1", "0/", "/1", "01", "0/x", "", "+1/2", "0/1/2"] {
            let e = input(s).unwrap_err();
            assert_eq!((e.sqlstate(), e.message.as_str()), ("22P02", format!("invalid input syntax for type pg_lsn: \"{s}\"").as_str()));
        }
        assert_eq!(recv(&5u64.to_be_bytes()).unwrap(), 5);
        assert!(recv(&[0; 7]).is_err());
    }

    #[test]
    fn arithmetic_and_errors() {
        let n = |s: &str| Value::Numeric(Numeric::parse(s).unwrap());
        let l = |s: &str| Value::PgLsn(input(s).unwrap());
        assert_eq!(pli(&[l("0/10"), n("1.5")]).unwrap(), l("0/12"));
        assert_eq!(pli(&[l("0/10"), n("1.4")]).unwrap(), l("0/11"));
        assert_eq!(mii(&[l("0/10"), n("16")]).unwrap(), l("0/0"));
        assert_eq!(mii(&[l("0/10"), n("20")]).unwrap_err().message, "pg_lsn out of range");
        assert_eq!(pli(&[l("FFFFFFFF/FFFFFFFF"), n("1")]).unwrap_err().sqlstate(), "22023");
        assert_eq!(pli(&[l("0/10"), n("NaN")]).unwrap_err().message, "cannot add NaN to pg_lsn");
        assert_eq!(mi(&[l("0/5"), l("0/10")]).unwrap(), n("-11"));
        assert_eq!(mi(&[l("1/0"), l("0/1")]).unwrap(), n("4294967295"));
    }
}
