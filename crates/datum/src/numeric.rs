//! numeric: arbitrary-precision decimals as PostgreSQL 15 has them.
//!
//! A [`Numeric`] is NaN, +Infinity, -Infinity or a finite `±mag × 10^-dscale`,
//! where `mag` is a natural number held as decimal digits and `dscale` (the
//! display scale, 0..=16383) is the number of digits shown after the point:
//! `1.50` keeps its two fractional digits through I/O and arithmetic, as in
//! PostgreSQL. Finite values have at most 131072 digits before the point.
//!
//! The value's bytes are its stored (varlena payload) form, so a heap or index
//! datum borrows them without copying:
//!
//! ```text
//! byte 0      kind: 0 = positive (or zero), 1 = negative, 2 = NaN, 3 = +Infinity, 4 = -Infinity
//! bytes 1..3  dscale, u16 little-endian (0 for the special values)
//! bytes 3..   the magnitude's decimal digits (0..=9, one per byte), most significant
//!             first, without leading zeros (zero has none)
//! ```
//!
//! Result scales follow PostgreSQL: `+ -` keep the larger dscale, `*` adds them,
//! `/` gives at least 16 significant digits (select_div_scale, computed on the
//! base-10000 digits PostgreSQL would hold), `%` keeps the larger dscale;
//! rounding is half away from zero. The wire's binary form (numeric_send/recv:
//! ndigits, weight, sign, dscale, base-10000 digits) is made from the decimal
//! digits by [`Numeric::send`] and [`Numeric::recv`].

pub mod math;
pub(crate) mod nat;

use crate::errors::{Result, SqlError};
use std::cmp::Ordering;

/// Most digits before the decimal point (PostgreSQL's limit).
pub const MAX_INT_DIGITS: usize = 131072;
/// Largest display scale.
pub const MAX_DSCALE: u32 = 16383;
/// PostgreSQL's NUMERIC_MIN_SIG_DIGITS: division and sqrt give at least this many.
const MIN_SIG_DIGITS: i64 = 16;
/// NUMERIC_MAX_DISPLAY_SCALE: the largest scale a division or function chooses.
const MAX_DISPLAY_SCALE: i64 = 1000;
/// numeric(p, s): largest precision.
pub const MAX_PRECISION: i32 = 1000;

const POS: u8 = 0;
const NEG: u8 = 1;
const NAN: u8 = 2;
const PINF: u8 = 3;
const NINF: u8 = 4;

#[derive(Clone)]
pub struct Numeric {
    raw: Vec<u8>,
}

impl std::fmt::Debug for Numeric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Numeric({})", self.to_text())
    }
}

/// Equality is numeric equality (`1.5 = 1.50`, `NaN = NaN`).
impl PartialEq for Numeric {
    fn eq(&self, other: &Numeric) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Numeric {}
impl PartialOrd for Numeric {
    fn partial_cmp(&self, other: &Numeric) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// PostgreSQL's order: -Infinity < finite values < +Infinity < NaN.
impl Ord for Numeric {
    fn cmp(&self, other: &Numeric) -> Ordering {
        let rank = |n: &Numeric| match n.raw[0] {
            NINF => 0,
            POS | NEG => 1,
            PINF => 2,
            _ => 3,
        };
        match rank(self).cmp(&rank(other)) {
            Ordering::Equal if rank(self) == 1 => {}
            o => return o,
        }
        let (sa, sb) = (self.signum(), other.signum());
        if sa != sb {
            return sa.cmp(&sb);
        }
        let m = cmp_scaled(self.digits(), self.dscale(), other.digits(), other.dscale());
        if sa < 0 { m.reverse() } else { m }
    }
}

pub fn overflow() -> SqlError {
    SqlError::new(b"22003", "value overflows numeric format")
}

pub fn division_by_zero() -> SqlError {
    SqlError::new(b"22012", "division by zero")
}

fn invalid_syntax(s: &str) -> SqlError {
    SqlError::new(b"22P02", format!("invalid input syntax for type numeric: \"{s}\""))
}

// ---- magnitudes: decimal digits, most significant first ----

fn strip(mut d: Vec<u8>) -> Vec<u8> {
    let z = d.iter().take_while(|&&x| x == 0).count();
    d.drain(..z);
    d
}

fn cmp_mag(a: &[u8], b: &[u8]) -> Ordering {
    let a = &a[a.iter().take_while(|&&x| x == 0).count()..];
    let b = &b[b.iter().take_while(|&&x| x == 0).count()..];
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// `d × 10^k`.
fn shift(d: &[u8], k: u32) -> Vec<u8> {
    if d.is_empty() {
        return Vec::new();
    }
    let mut v = d.to_vec();
    v.extend(std::iter::repeat_n(0, k as usize));
    v
}

/// Compares `a × 10^-sa` with `b × 10^-sb` (digits without leading zeros).
fn cmp_scaled(a: &[u8], sa: u32, b: &[u8], sb: u32) -> Ordering {
    let a = &a[a.iter().take_while(|&&x| x == 0).count()..];
    let b = &b[b.iter().take_while(|&&x| x == 0).count()..];
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        (true, false) => return Ordering::Less,
        (false, true) => return Ordering::Greater,
        _ => {}
    }
    // The decimal exponent of the leading digit decides, then the digits from
    // there on, the shorter one padded with zeros.
    let (ea, eb) = (a.len() as i64 - sa as i64, b.len() as i64 - sb as i64);
    ea.cmp(&eb).then_with(|| {
        let n = a.len().min(b.len());
        a[..n].cmp(&b[..n]).then_with(|| {
            let nonzero = |rest: &[u8]| rest.iter().any(|&d| d != 0);
            match (nonzero(&a[n..]), nonzero(&b[n..])) {
                (true, _) => Ordering::Greater,
                (_, true) => Ordering::Less,
                _ => Ordering::Equal,
            }
        })
    })
}

fn add_mag(a: &[u8], b: &[u8]) -> Vec<u8> {
    let n = a.len().max(b.len()) + 1;
    let mut out = vec![0u8; n];
    let mut carry = 0;
    for i in 0..n {
        let x = if i < a.len() { a[a.len() - 1 - i] } else { 0 };
        let y = if i < b.len() { b[b.len() - 1 - i] } else { 0 };
        let s = x + y + carry;
        out[n - 1 - i] = s % 10;
        carry = s / 10;
    }
    strip(out)
}

/// `a - b`, requires `a >= b`.
fn sub_mag(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut out = a.to_vec();
    let mut borrow = 0i8;
    for i in 0..a.len() {
        let y = if i < b.len() { b[b.len() - 1 - i] as i8 } else { 0 };
        let mut x = a[a.len() - 1 - i] as i8 - y - borrow;
        borrow = 0;
        if x < 0 {
            x += 10;
            borrow = 1;
        }
        out[a.len() - 1 - i] = x as u8;
    }
    strip(out)
}

fn mul_mag(a: &[u8], b: &[u8]) -> Vec<u8> {
    nat::to_digits(&nat::mul(&nat::from_digits(a), &nat::from_digits(b)))
}

/// Most digits of a [`Numeric::small`] operand: 10^36 - 1 leaves room in an
/// i128 (up to 1.7 × 10^38) for a sum's carry.
const SMALL_DIGITS: usize = 36;

/// `10^k` as an i128, `None` past 10^38.
#[inline]
fn pow10_i128(k: u32) -> Option<i128> {
    10i128.checked_pow(k)
}

fn to_u128(d: &[u8]) -> Option<u128> {
    let d = &d[d.iter().take_while(|&&x| x == 0).count()..];
    if d.len() > 38 {
        return None;
    }
    Some(d.iter().fold(0u128, |acc, &x| acc * 10 + x as u128))
}

fn from_u128(mut v: u128) -> Vec<u8> {
    let mut out = Vec::new();
    while v > 0 {
        out.push((v % 10) as u8);
        v /= 10;
    }
    out.reverse();
    out
}

/// Truncating division of magnitudes: (quotient, remainder). `b` is not zero.
fn divmod_mag(a: &[u8], b: &[u8]) -> (Vec<u8>, Vec<u8>) {
    let (q, r) = nat::divmod(&nat::from_digits(a), &nat::from_digits(b));
    (nat::to_digits(&q), nat::to_digits(&r))
}

/// Floor of the square root of a magnitude.
fn isqrt_mag(n: &[u8]) -> Vec<u8> {
    nat::to_digits(&nat::isqrt(&nat::from_digits(n)))
}

impl Numeric {
    fn finite(neg: bool, digits: Vec<u8>, dscale: u32) -> Numeric {
        debug_assert!(dscale <= u16::MAX as u32, "display scale {dscale} does not fit the stored form");
        let digits = strip(digits);
        let kind = if neg && !digits.is_empty() { NEG } else { POS };
        let mut raw = Vec::with_capacity(3 + digits.len());
        raw.push(kind);
        raw.extend_from_slice(&(dscale as u16).to_le_bytes());
        raw.extend_from_slice(&digits);
        Numeric { raw }
    }
    /// A finite value, checked against the format's limits.
    fn make(neg: bool, digits: Vec<u8>, dscale: u32) -> Result<Numeric> {
        let n = Numeric::finite(neg, digits, dscale);
        if dscale > MAX_DSCALE || n.int_digits() > MAX_INT_DIGITS {
            return Err(overflow());
        }
        Ok(n)
    }
    fn special(kind: u8) -> Numeric {
        Numeric { raw: vec![kind, 0, 0] }
    }
    pub fn nan() -> Numeric {
        Numeric::special(NAN)
    }
    pub fn infinity(neg: bool) -> Numeric {
        Numeric::special(if neg { NINF } else { PINF })
    }
    pub fn zero() -> Numeric {
        Numeric::finite(false, Vec::new(), 0)
    }
    pub fn from_i64(v: i64) -> Numeric {
        Numeric::finite(v < 0, from_u128(v.unsigned_abs() as u128), 0)
    }
    pub fn from_i128(v: i128) -> Numeric {
        Numeric::finite(v < 0, from_u128(v.unsigned_abs()), 0)
    }
    /// The stored form (see the module doc).
    pub fn as_bytes(&self) -> &[u8] {
        &self.raw
    }
    /// A value from its stored form; bad bytes are corruption (XX001).
    pub fn from_bytes(b: &[u8]) -> Result<Numeric> {
        let bad = || SqlError::new(b"XX001", "invalid stored numeric value");
        if b.len() < 3 || b[0] > NINF || b[3..].iter().any(|&d| d > 9) || b.get(3) == Some(&0) {
            return Err(bad());
        }
        if b[0] >= NAN && b.len() != 3 {
            return Err(bad());
        }
        Ok(Numeric { raw: b.to_vec() })
    }
    pub fn is_nan(&self) -> bool {
        self.raw[0] == NAN
    }
    pub fn is_inf(&self) -> bool {
        matches!(self.raw[0], PINF | NINF)
    }
    pub fn is_finite(&self) -> bool {
        self.raw[0] <= NEG
    }
    pub fn is_neg(&self) -> bool {
        matches!(self.raw[0], NEG | NINF)
    }
    pub fn is_zero(&self) -> bool {
        self.is_finite() && self.digits().is_empty()
    }
    /// -1, 0 or 1 (NaN is 0).
    fn signum(&self) -> i32 {
        match self.raw[0] {
            NEG | NINF => -1,
            PINF => 1,
            POS if !self.digits().is_empty() => 1,
            _ => 0,
        }
    }
    fn digits(&self) -> &[u8] {
        &self.raw[3..]
    }
    pub fn dscale(&self) -> u32 {
        u16::from_le_bytes([self.raw[1], self.raw[2]]) as u32
    }
    /// Digits before the decimal point (0 for |x| < 1).
    fn int_digits(&self) -> usize {
        self.digits().len().saturating_sub(self.dscale() as usize)
    }
    /// The same value with display scale `s`, digits beyond it rounded half away
    /// from zero (or truncated).
    fn rescale(&self, s: u32, round: bool) -> Numeric {
        if !self.is_finite() {
            return self.clone();
        }
        let cur = self.dscale();
        if s >= cur {
            return Numeric::finite(self.is_neg(), shift(self.digits(), s - cur), s);
        }
        let drop = (cur - s) as usize;
        let d = self.digits();
        if d.len() < drop {
            return Numeric::finite(false, Vec::new(), s);
        }
        let keep = &d[..d.len() - drop];
        let up = round && d[d.len() - drop] >= 5;
        let mag = if up { add_mag(keep, &[1]) } else { strip(keep.to_vec()) };
        Numeric::finite(self.is_neg(), mag, s)
    }
    /// The base-10000 weight and first digit of the value's first nonzero group,
    /// as PostgreSQL holds it (zero: weight 0, digit 0).
    fn nbase_lead(&self) -> (i64, u32) {
        let d = self.digits();
        if d.is_empty() {
            return (0, 0);
        }
        // Decimal exponent of the leading digit.
        let p = d.len() as i64 - 1 - self.dscale() as i64;
        let w = p.div_euclid(4);
        // The group holds positions 4w .. 4w+3; take the digits of `d` in it.
        let mut first = 0u32;
        for pos in (4 * w..4 * w + 4).rev() {
            let idx = d.len() as i64 - 1 - self.dscale() as i64 - pos;
            let digit = if idx >= 0 && (idx as usize) < d.len() { d[idx as usize] as u32 } else { 0 };
            first = first * 10 + digit;
        }
        (w, first)
    }
    /// The stored weight PostgreSQL's NumericVar has (for sqrt's scale).
    fn nbase_weight(&self) -> i64 {
        self.nbase_lead().0
    }

    // ---- text I/O ----

    /// numeric_in without a typmod.
    pub fn parse(s: &str) -> Result<Numeric> {
        let t = s.trim_matches(|c: char| c.is_ascii_whitespace());
        let lower = t.to_ascii_lowercase();
        match lower.as_str() {
            "nan" => return Ok(Numeric::nan()),
            "infinity" | "+infinity" | "inf" | "+inf" => return Ok(Numeric::infinity(false)),
            "-infinity" | "-inf" => return Ok(Numeric::infinity(true)),
            _ => {}
        }
        let b = t.as_bytes();
        let mut i = 0;
        let mut neg = false;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            neg = b[i] == b'-';
            i += 1;
        }
        let mut digits = Vec::new();
        let mut scale: i64 = 0;
        let mut seen_digit = false;
        let mut seen_point = false;
        while i < b.len() {
            match b[i] {
                c @ b'0'..=b'9' => {
                    digits.push(c - b'0');
                    seen_digit = true;
                    if seen_point {
                        scale += 1;
                    }
                }
                b'.' if !seen_point => seen_point = true,
                _ => break,
            }
            i += 1;
        }
        if !seen_digit {
            return Err(invalid_syntax(s));
        }
        let mut exp: i64 = 0;
        if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
            i += 1;
            let mut eneg = false;
            if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
                eneg = b[i] == b'-';
                i += 1;
            }
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                exp = (exp * 10 + (b[i] - b'0') as i64).min(10_000_000);
                i += 1;
            }
            if i == start {
                return Err(invalid_syntax(s));
            }
            if eneg {
                exp = -exp;
            }
        }
        if i != b.len() {
            return Err(invalid_syntax(s));
        }
        // value = digits × 10^(exp - scale); display scale = max(scale - exp, 0).
        let shift_by = exp - scale;
        let dscale = (scale - exp).max(0);
        if dscale > MAX_DSCALE as i64 || digits.len() as i64 + shift_by > MAX_INT_DIGITS as i64 + 1 {
            return Err(overflow());
        }
        let digits = if shift_by >= 0 {
            shift(&digits, shift_by as u32)
        } else {
            // Negative shift: the digits already sit at scale `scale - exp`.
            digits
        };
        Numeric::make(neg, digits, dscale as u32)
    }

    /// numeric_out.
    pub fn to_text(&self) -> String {
        match self.raw[0] {
            NAN => return "NaN".into(),
            PINF => return "Infinity".into(),
            NINF => return "-Infinity".into(),
            _ => {}
        }
        let d = self.digits();
        let s = self.dscale() as usize;
        let mut out = String::with_capacity(d.len() + s + 3);
        if self.is_neg() {
            out.push('-');
        }
        let ch = |x: &u8| (b'0' + x) as char;
        if d.len() <= s {
            out.push('0');
            if s > 0 {
                out.push('.');
                out.extend(std::iter::repeat_n('0', s - d.len()));
                out.extend(d.iter().map(ch));
            }
        } else {
            out.extend(d[..d.len() - s].iter().map(ch));
            if s > 0 {
                out.push('.');
                out.extend(d[d.len() - s..].iter().map(ch));
            }
        }
        out
    }

    // ---- typmod ----

    /// numeric(p, s): rounds to the scale and checks the precision (22003).
    pub fn apply_typmod(&self, typmod: i32) -> Result<Numeric> {
        let Some((p, s)) = typmod_parts(typmod) else { return Ok(self.clone()) };
        if self.is_nan() {
            return Ok(self.clone());
        }
        if self.is_inf() {
            return Err(SqlError::new(b"22003", "numeric field overflow")
                .with_detail(format!("A field with precision {p}, scale {s} cannot hold an infinite value.")));
        }
        // A negative scale rounds to a power of ten: round at scale 0 of x / 10^-s.
        let r = if s >= 0 {
            self.rescale(s as u32, true)
        } else {
            let sh = (-s) as u32;
            let moved = Numeric::finite(self.is_neg(), self.digits().to_vec(), self.dscale() + sh);
            let r = moved.rescale(0, true);
            Numeric::finite(r.is_neg(), shift(r.digits(), sh), 0)
        };
        // |r| < 10^maxdigits: the leading digit's power of ten is below maxdigits.
        let maxdigits = p - s;
        let lead = r.digits().len() as i64 - r.dscale() as i64;
        if !r.digits().is_empty() && lead > maxdigits as i64 {
            let limit = if maxdigits != 0 { format!("10^{maxdigits}") } else { "1".into() };
            return Err(SqlError::new(b"22003", "numeric field overflow")
                .with_detail(format!("A field with precision {p}, scale {s} must round to an absolute value less than {limit}.")));
        }
        Ok(r)
    }

    // ---- arithmetic ----

    fn neg_of(&self) -> Numeric {
        match self.raw[0] {
            PINF => Numeric::infinity(true),
            NINF => Numeric::infinity(false),
            NAN => self.clone(),
            _ => Numeric::finite(!self.is_neg(), self.digits().to_vec(), self.dscale()),
        }
    }
    pub fn negate(&self) -> Numeric {
        self.neg_of()
    }
    pub fn abs(&self) -> Numeric {
        if self.is_neg() { self.neg_of() } else { self.clone() }
    }

    /// The value as a signed integer of its digits (`self = v × 10^-dscale`)
    /// when it is finite and has at most [`SMALL_DIGITS`] digits: the operands
    /// of the fast paths of `+ - *`, which give the same digits and display
    /// scale as the digit-by-digit paths without allocating per step.
    #[inline]
    fn small(&self) -> Option<i128> {
        let d = self.digits();
        if !self.is_finite() || d.len() > SMALL_DIGITS {
            return None;
        }
        let mut v: i128 = 0;
        for &x in d {
            v = v * 10 + x as i128;
        }
        Some(if self.is_neg() { -v } else { v })
    }

    /// The finite value `v × 10^-dscale` (the stored form built in one allocation).
    fn from_small(v: i128, dscale: u32) -> Numeric {
        let mut buf = [0u8; 40];
        let mut n = 0;
        let mut m = v.unsigned_abs();
        // Digit by digit, in u64 (a division by a constant) once it fits.
        while m > u64::MAX as u128 {
            buf[n] = (m % 10) as u8;
            m /= 10;
            n += 1;
        }
        let mut m = m as u64;
        while m > 0 {
            buf[n] = (m % 10) as u8;
            m /= 10;
            n += 1;
        }
        let mut raw = Vec::with_capacity(3 + n);
        raw.push(if v < 0 { NEG } else { POS });
        raw.extend_from_slice(&(dscale as u16).to_le_bytes());
        raw.extend(buf[..n].iter().rev());
        Numeric { raw }
    }

    /// `self + o` (or `self - o` with `negate_o`) on [`Numeric::small`]
    /// operands, `None` when an operand or the result does not fit an i128.
    #[inline]
    fn add_small(&self, o: &Numeric, negate_o: bool) -> Option<Numeric> {
        let (a, b) = (self.small()?, o.small()?);
        let b = if negate_o { -b } else { b };
        let (da, db) = (self.dscale(), o.dscale());
        let s = da.max(db);
        let a = a.checked_mul(pow10_i128(s - da)?)?;
        let b = b.checked_mul(pow10_i128(s - db)?)?;
        Some(Numeric::from_small(a.checked_add(b)?, s))
    }

    pub fn add(&self, o: &Numeric) -> Result<Numeric> {
        match self.add_small(o, false) {
            Some(r) => Ok(r),
            None => self.add_digits(o),
        }
    }

    /// `self + o` digit by digit (any size, the special values).
    fn add_digits(&self, o: &Numeric) -> Result<Numeric> {
        if !self.is_finite() || !o.is_finite() {
            return Ok(match (self.raw[0], o.raw[0]) {
                (NAN, _) | (_, NAN) => Numeric::nan(),
                (PINF, NINF) | (NINF, PINF) => Numeric::nan(),
                (PINF | NINF, _) => self.clone(),
                _ => o.clone(),
            });
        }
        let s = self.dscale().max(o.dscale());
        let a = shift(self.digits(), s - self.dscale());
        let b = shift(o.digits(), s - o.dscale());
        let r = if self.is_neg() == o.is_neg() {
            Numeric::finite(self.is_neg(), add_mag(&a, &b), s)
        } else {
            match cmp_mag(&a, &b) {
                Ordering::Less => Numeric::finite(o.is_neg(), sub_mag(&b, &a), s),
                _ => Numeric::finite(self.is_neg(), sub_mag(&a, &b), s),
            }
        };
        Numeric::check(r)
    }

    fn check(r: Numeric) -> Result<Numeric> {
        if r.is_finite() && (r.dscale() > MAX_DSCALE || r.int_digits() > MAX_INT_DIGITS) {
            return Err(overflow());
        }
        Ok(r)
    }

    pub fn sub(&self, o: &Numeric) -> Result<Numeric> {
        if let Some(r) = self.add_small(o, true) {
            return Ok(r);
        }
        self.add(&o.neg_of())
    }

    pub fn mul(&self, o: &Numeric) -> Result<Numeric> {
        let s = self.dscale() + o.dscale();
        if s <= MAX_DSCALE {
            if let (Some(a), Some(b)) = (self.small(), o.small()) {
                if let Some(p) = a.checked_mul(b) {
                    return Ok(Numeric::from_small(p, s));
                }
            }
        }
        self.mul_digits(o)
    }

    /// `self × o` on `nat` limbs (any size, the special values).
    fn mul_digits(&self, o: &Numeric) -> Result<Numeric> {
        if !self.is_finite() || !o.is_finite() {
            if self.is_nan() || o.is_nan() {
                return Ok(Numeric::nan());
            }
            // Infinity × 0 is NaN; otherwise an infinity of the product's sign.
            let (sa, sb) = (self.signum(), o.signum());
            if sa == 0 || sb == 0 {
                return Ok(Numeric::nan());
            }
            return Ok(Numeric::infinity(sa * sb < 0));
        }
        let s = self.dscale() + o.dscale();
        if s > MAX_DSCALE {
            // PostgreSQL rounds the product to the largest display scale.
            let full = Numeric::finite(self.is_neg() != o.is_neg(), mul_mag(self.digits(), o.digits()), s);
            return Numeric::check(full.rescale(MAX_DSCALE, true));
        }
        Numeric::check(Numeric::finite(self.is_neg() != o.is_neg(), mul_mag(self.digits(), o.digits()), s))
    }

    /// select_div_scale: at least 16 significant digits, no less than either
    /// input's display scale, at most 1000.
    fn div_scale(&self, o: &Numeric) -> u32 {
        let (w1, f1) = self.nbase_lead();
        let (w2, f2) = o.nbase_lead();
        let mut qweight = w1 - w2;
        if f1 <= f2 {
            qweight -= 1;
        }
        let r = (MIN_SIG_DIGITS - qweight * 4).max(self.dscale() as i64).max(o.dscale() as i64).max(0);
        r.min(MAX_DISPLAY_SCALE) as u32
    }

    /// `self / o` rounded to `rscale` fractional digits (half away from zero).
    fn div_round(&self, o: &Numeric, rscale: u32, round: bool) -> Numeric {
        // q = self.mag × 10^(rscale + 1 + o.dscale - self.dscale) / o.mag, one extra digit to round on.
        let e = rscale as i64 + 1 + o.dscale() as i64 - self.dscale() as i64;
        let (n, d) = if e >= 0 {
            (shift(self.digits(), e as u32), o.digits().to_vec())
        } else {
            (self.digits().to_vec(), shift(o.digits(), (-e) as u32))
        };
        let (q, _) = divmod_mag(&n, &d);
        Numeric::finite(self.is_neg() != o.is_neg(), q, rscale + 1).rescale(rscale, round)
    }

    fn special_div(&self, o: &Numeric) -> Result<Option<Numeric>> {
        if self.is_nan() || o.is_nan() {
            return Ok(Some(Numeric::nan()));
        }
        if o.is_zero() {
            return Err(division_by_zero());
        }
        if self.is_inf() {
            if o.is_inf() {
                return Ok(Some(Numeric::nan()));
            }
            return Ok(Some(Numeric::infinity((self.signum() * o.signum()) < 0)));
        }
        if o.is_inf() {
            return Ok(Some(Numeric::zero()));
        }
        Ok(None)
    }

    pub fn div(&self, o: &Numeric) -> Result<Numeric> {
        if let Some(r) = self.special_div(o)? {
            return Ok(r);
        }
        let rscale = self.div_scale(o);
        Numeric::check(self.div_round(o, rscale, true))
    }

    /// div(a, b): the quotient truncated toward zero.
    pub fn div_trunc(&self, o: &Numeric) -> Result<Numeric> {
        if let Some(r) = self.special_div(o)? {
            return Ok(if r.is_inf() || r.is_nan() { r } else { Numeric::zero() });
        }
        Numeric::check(self.div_round(o, 0, false))
    }

    /// `%`: the remainder of the quotient truncated toward zero, with the
    /// dividend's sign and the larger display scale.
    pub fn rem(&self, o: &Numeric) -> Result<Numeric> {
        if self.is_nan() || o.is_nan() {
            return Ok(Numeric::nan());
        }
        if o.is_zero() {
            return Err(division_by_zero());
        }
        if self.is_inf() {
            return Ok(Numeric::nan());
        }
        if o.is_inf() {
            return Ok(self.clone());
        }
        let s = self.dscale().max(o.dscale());
        let a = shift(self.digits(), s - self.dscale());
        let b = shift(o.digits(), s - o.dscale());
        let (_, r) = divmod_mag(&a, &b);
        Numeric::check(Numeric::finite(self.is_neg(), r, s))
    }

    /// round(x, s) (s may be negative: rounds to tens, hundreds...).
    pub fn round(&self, s: i32, round: bool) -> Numeric {
        if !self.is_finite() {
            return self.clone();
        }
        let s = s.clamp(-(MAX_INT_DIGITS as i32) - 1, MAX_DSCALE as i32);
        if s >= 0 {
            return self.rescale(s as u32, round);
        }
        let sh = (-s) as u32;
        let moved = Numeric::finite(self.is_neg(), self.digits().to_vec(), self.dscale() + sh);
        let r = moved.rescale(0, round);
        Numeric::finite(r.is_neg(), shift(r.digits(), sh), 0)
    }

    /// ceil (`up`) or floor: an integral value, display scale 0.
    pub fn ceil_floor(&self, up: bool) -> Numeric {
        if !self.is_finite() {
            return self.clone();
        }
        let t = self.rescale(0, false);
        let exact = cmp_scaled(t.digits(), 0, self.digits(), self.dscale()) == Ordering::Equal;
        if exact {
            return t;
        }
        // Truncation moved toward zero: step away from it when that is the direction wanted.
        if up != self.is_neg() {
            Numeric::finite(self.is_neg(), add_mag(t.digits(), &[1]), 0)
        } else {
            t
        }
    }

    pub fn sign(&self) -> Numeric {
        match self.raw[0] {
            NAN => Numeric::nan(),
            _ => Numeric::from_i64(self.signum() as i64),
        }
    }

    /// sqrt, with PostgreSQL's result scale.
    pub fn sqrt(&self) -> Result<Numeric> {
        if self.is_nan() || self.raw[0] == PINF {
            return Ok(self.clone());
        }
        if self.is_neg() {
            return Err(SqlError::new(b"2201F", "cannot take square root of a negative number"));
        }
        let sweight = (self.nbase_weight() + 1) * 4 / 2 - 1;
        let rscale = (MIN_SIG_DIGITS - sweight).max(self.dscale() as i64).clamp(0, MAX_DISPLAY_SCALE) as u32;
        // sqrt(mag × 10^-ds) × 10^(rscale+1) = sqrt(mag × 10^(2 rscale + 2 - ds)).
        let e = 2 * rscale as i64 + 2 - self.dscale() as i64;
        let n = shift(self.digits(), e.max(0) as u32);
        let root = isqrt_mag(&n);
        Ok(Numeric::finite(false, root, rscale + 1).rescale(rscale, true))
    }

    /// scale(): the display scale (NULL for NaN and infinities is the caller's).
    pub fn scale(&self) -> Option<i32> {
        self.is_finite().then(|| self.dscale() as i32)
    }

    /// min_scale(): the fewest fractional digits that represent the value exactly.
    pub fn min_scale(&self) -> Option<i32> {
        if !self.is_finite() {
            return None;
        }
        let d = self.digits();
        if d.is_empty() {
            return Some(0);
        }
        let tz = d.iter().rev().take_while(|&&x| x == 0).count() as i32;
        Some((self.dscale() as i32 - tz).max(0))
    }

    pub fn trim_scale(&self) -> Numeric {
        match self.min_scale() {
            Some(s) => self.rescale(s as u32, false),
            None => self.clone(),
        }
    }

    // ---- conversions ----

    /// To an integer, rounding half away from zero; `None` when out of i64 range.
    /// NaN and infinities are errors naming `what` ("integer", "smallint", "bigint").
    pub fn to_i64(&self, what: &str) -> Result<Option<i64>> {
        match self.raw[0] {
            NAN => return Err(SqlError::new(b"0A000", format!("cannot convert NaN to {what}"))),
            PINF | NINF => return Err(SqlError::new(b"0A000", format!("cannot convert infinity to {what}"))),
            _ => {}
        }
        let r = self.rescale(0, true);
        let Some(m) = to_u128(r.digits()) else { return Ok(None) };
        let v = if r.is_neg() { -(m as i128) } else { m as i128 };
        Ok(i64::try_from(v).ok())
    }

    /// float8's value as numeric: its 15 significant digits (%.15g) as
    /// PostgreSQL's float8_numeric; `digits` is 6 for float4.
    pub fn from_f64(f: f64, digits: usize) -> Result<Numeric> {
        if f.is_nan() {
            return Ok(Numeric::nan());
        }
        if f.is_infinite() {
            return Ok(Numeric::infinity(f < 0.0));
        }
        if f == 0.0 {
            return Ok(Numeric::zero());
        }
        let e = format!("{:.*e}", digits - 1, f.abs());
        let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
        let exp: i64 = exp.parse().unwrap_or(0);
        let mut ds: Vec<u8> = mant.bytes().filter(u8::is_ascii_digit).map(|b| b - b'0').collect();
        while ds.len() > 1 && ds.last() == Some(&0) {
            ds.pop();
        }
        // value = ds × 10^(exp - (len - 1)).
        let p = exp - (ds.len() as i64 - 1);
        if p >= 0 {
            Numeric::make(f < 0.0, shift(&ds, p as u32), 0)
        } else {
            Numeric::make(f < 0.0, ds, (-p) as u32)
        }
    }

    /// numeric_float8: the nearest double; `None` when out of range.
    pub fn to_f64(&self) -> Option<f64> {
        match self.raw[0] {
            NAN => return Some(f64::NAN),
            PINF => return Some(f64::INFINITY),
            NINF => return Some(f64::NEG_INFINITY),
            _ => {}
        }
        let t = self.to_text();
        let f: f64 = t.parse().ok()?;
        if f.is_infinite() {
            return None;
        }
        Some(f)
    }

    // ---- binary (numeric_send / numeric_recv) ----

    /// Base-10000 digits and weight (first group's power of 10000), trimmed of
    /// leading and trailing zero groups.
    fn nbase(&self) -> (Vec<i16>, i16) {
        let d = self.digits();
        if d.is_empty() || !self.is_finite() {
            return (Vec::new(), 0);
        }
        let s = self.dscale() as usize;
        let int_len = d.len().saturating_sub(s);
        // Integer part padded on the left, fraction (with leading zeros) on the right, to multiples of 4.
        let mut int: Vec<u8> = d[..int_len].to_vec();
        let mut frac: Vec<u8> = if d.len() >= s { d[int_len..].to_vec() } else {
            let mut f = vec![0u8; s - d.len()];
            f.extend_from_slice(d);
            f
        };
        while !int.len().is_multiple_of(4) {
            int.insert(0, 0);
        }
        while !frac.len().is_multiple_of(4) {
            frac.push(0);
        }
        let groups: Vec<i16> = int
            .chunks(4)
            .chain(frac.chunks(4))
            .map(|c| c.iter().fold(0i16, |a, &x| a * 10 + x as i16))
            .collect();
        let mut weight = (int.len() / 4) as i32 - 1;
        let lead = groups.iter().take_while(|&&g| g == 0).count();
        let trail = groups.iter().rev().take_while(|&&g| g == 0).count();
        weight -= lead as i32;
        let groups = groups[lead..groups.len() - trail].to_vec();
        (groups, weight as i16)
    }

    /// PostgreSQL's `hash_numeric`: the hash of the base-10000 digits without
    /// leading and trailing zero groups (little-endian int16s, as PostgreSQL holds
    /// them in memory), XORed with the weight; not the display scale (`1.5 =
    /// 1.50`) nor the sign. Zero hashes to -1, NaN and the infinities to 0.
    pub fn hash(&self) -> u32 {
        if !self.is_finite() {
            return 0;
        }
        let (groups, weight) = self.nbase();
        if groups.is_empty() {
            return u32::MAX;
        }
        let bytes: Vec<u8> = groups.iter().flat_map(|g| g.to_le_bytes()).collect();
        ferrogres_engine::hash::hashfunc::hash_bytes(&bytes) ^ (weight as i32 as u32)
    }

    pub fn send(&self) -> Vec<u8> {
        let (groups, weight) = self.nbase();
        let sign: u16 = match self.raw[0] {
            NEG => 0x4000,
            NAN => 0xC000,
            PINF => 0xD000,
            NINF => 0xF000,
            _ => 0,
        };
        let mut out = Vec::with_capacity(8 + 2 * groups.len());
        out.extend_from_slice(&(groups.len() as i16).to_be_bytes());
        out.extend_from_slice(&weight.to_be_bytes());
        out.extend_from_slice(&sign.to_be_bytes());
        // PostgreSQL 15 sends 32 as the display scale of the infinities.
        let dscale = if self.is_inf() { 32 } else { self.dscale() as u16 };
        out.extend_from_slice(&dscale.to_be_bytes());
        for g in groups {
            out.extend_from_slice(&g.to_be_bytes());
        }
        out
    }

    /// numeric_recv: ndigits (read unsigned, as PostgreSQL does), weight,
    /// sign, dscale, then the base-10000 digits. A short message is 08P01;
    /// a bad sign, scale or digit 22P03; bytes left over 22P03 "incorrect
    /// binary data format" (the Bind names the parameter). Any weight is
    /// accepted: digits below the display scale are truncated away (a weight
    /// of -32768 reads as zero), and the largest weight still fits the format.
    pub fn recv(b: &[u8]) -> Result<Numeric> {
        let short = || SqlError::new(b"08P01", "insufficient data left in message");
        let ext = |what: &str| SqlError::new(b"22P03", format!("invalid {what} in external \"numeric\" value"));
        let rd = |i: usize| -> Result<u16> { b.get(i..i + 2).map(|x| u16::from_be_bytes([x[0], x[1]])).ok_or_else(short) };
        let ndigits = rd(0)? as usize;
        let weight = rd(2)? as i16 as i64;
        let sign = rd(4)?;
        let dscale = rd(6)?;
        if b.len() != 8 + 2 * ndigits {
            return Err(if b.len() < 8 + 2 * ndigits { short() } else { SqlError::new(b"22P03", "incorrect binary data format") });
        }
        match sign {
            0x0000 | 0x4000 => {}
            0xC000 => return Ok(Numeric::nan()),
            0xD000 => return Ok(Numeric::infinity(false)),
            0xF000 => return Ok(Numeric::infinity(true)),
            _ => return Err(ext("sign")),
        }
        if dscale as u32 > MAX_DSCALE {
            return Err(ext("scale"));
        }
        let mut digits = Vec::with_capacity(4 * ndigits);
        for i in 0..ndigits {
            let g = rd(8 + 2 * i)? as i16;
            if !(0..10000).contains(&g) {
                return Err(ext("digit"));
            }
            digits.extend_from_slice(&[(g / 1000) as u8, (g / 100 % 10) as u8, (g / 10 % 10) as u8, (g % 10) as u8]);
        }
        // The groups' value is digits × 10^(4 (weight + 1 - ndigits)).
        let p = 4 * (weight + 1 - ndigits as i64);
        let n = if p >= 0 {
            Numeric::finite(sign == 0x4000, shift(&digits, p as u32), 0)
        } else {
            // Only the digits at or above the display scale survive (truncation).
            let frac = (-p) as usize;
            let keep = digits.len().saturating_sub(frac.saturating_sub(dscale as usize));
            digits.truncate(keep);
            Numeric::finite(sign == 0x4000, digits, frac.min(dscale as usize) as u32)
        };
        Numeric::check(n.rescale(dscale as u32, false))
    }
}

/// `(precision, scale)` of a numeric typmod, `None` for -1.
pub fn typmod_parts(typmod: i32) -> Option<(i32, i32)> {
    if typmod < 4 {
        return None;
    }
    let t = typmod - 4;
    let p = (t >> 16) & 0xffff;
    // The scale is an 11-bit two's-complement field.
    let s = ((t & 0x7ff) ^ 0x400) - 0x400;
    Some((p, s))
}

/// The typmod of numeric(p, s), or the 22023 error for bad arguments.
pub fn make_typmod(p: i32, s: i32) -> Result<i32> {
    if !(1..=MAX_PRECISION).contains(&p) {
        return Err(SqlError::new(b"22023", format!("NUMERIC precision {p} must be between 1 and {MAX_PRECISION}")));
    }
    if !(-1000..=1000).contains(&s) {
        return Err(SqlError::new(b"22023", format!("NUMERIC scale {s} must be between -1000 and 1000")));
    }
    Ok(((p << 16) | (s & 0x7ff)) + 4)
}

/// format_type's name for numeric with a typmod.
pub fn type_name(typmod: i32) -> String {
    match typmod_parts(typmod) {
        Some((p, s)) => format!("numeric({p},{s})"),
        None => "numeric".into(),
    }
}

// ---- SQL glue: casts, aggregates, functions ----

use crate::types::{Type, Value};

/// An integer or numeric value as numeric.
pub fn of_value(v: &Value) -> Option<Numeric> {
    match v {
        Value::Numeric(n) => Some(n.clone()),
        v => v.as_i64().map(Numeric::from_i64),
    }
}

/// A cast to or from numeric (string types are the caller's: they go through
/// the text I/O). `typmod` is numeric(p, s)'s when `to` is numeric.
pub fn cast(v: Value, from: Type, to: Type, typmod: i32) -> Result<Value> {
    Ok(match (v, to) {
        (Value::Null, _) => Value::Null,
        (Value::Numeric(n), Type::Numeric) => Value::Numeric(n.apply_typmod(typmod)?),
        (Value::Numeric(n), Type::Int2 | Type::Int4 | Type::Int8) => {
            let i = n.to_i64(to.sql_name())?.ok_or_else(|| crate::types::out_of_range(to))?;
            match to {
                Type::Int2 => Value::Int2(i16::try_from(i).map_err(|_| crate::types::out_of_range(to))?),
                Type::Int4 => Value::Int4(i32::try_from(i).map_err(|_| crate::types::out_of_range(to))?),
                _ => Value::Int8(i),
            }
        }
        (Value::Numeric(n), Type::Float8) => Value::Float8(n.to_f64().ok_or_else(|| {
            SqlError::new(b"22003", format!("\"{}\" is out of range for type double precision", n.to_text()))
        })?),
        (Value::Numeric(n), Type::Float4) => {
            let t = n.to_text();
            crate::types::input(Type::Float4, &t, -1)?
        }
        (Value::Float8(f), Type::Numeric) => Value::Numeric(Numeric::from_f64(f, 15)?.apply_typmod(typmod)?),
        (Value::Float4(f), Type::Numeric) => Value::Numeric(Numeric::from_f64(f as f64, 6)?.apply_typmod(typmod)?),
        (v, Type::Numeric) if v.as_i64().is_some() && from != Type::Oid => {
            Value::Numeric(Numeric::from_i64(v.as_i64().unwrap_or(0)).apply_typmod(typmod)?)
        }
        _ => return Err(crate::types::cannot_cast(from, to)),
    })
}

/// sum/avg's transition over numeric: the running sum (NULL before the first row).
pub fn agg_add(acc: Value, v: &Value) -> Result<Value> {
    let x = of_value(v).ok_or_else(|| SqlError::internal(format!("numeric sum of {v:?}")))?;
    Ok(Value::Numeric(match acc {
        Value::Numeric(a) => a.add(&x)?,
        _ => x,
    }))
}

/// sum and avg's running total of numeric values (PostgreSQL's
/// NumericSumAccum plays this part): exact, held as `small × 10^-dscale` in an
/// i128 at the largest display scale seen while that fits, as a [`Numeric`]
/// from the first value that does not fit on (or NaN, ±Infinity). Adding to
/// it allocates nothing on the first path; its value is the one the row-by-row
/// [`Numeric::add`]s give, digits and display scale alike.
#[derive(Clone, Debug, Default)]
pub struct SumAccum {
    small: i128,
    dscale: u32,
    /// The total, once it left the i128 path.
    big: Option<Numeric>,
}

impl SumAccum {
    pub fn add(&mut self, v: &Numeric) -> Result<()> {
        if self.big.is_none() {
            if let Some(x) = v.small() {
                let d = v.dscale();
                let s = self.dscale.max(d);
                let a = pow10_i128(s - self.dscale).and_then(|p| self.small.checked_mul(p));
                let b = pow10_i128(s - d).and_then(|p| x.checked_mul(p));
                if let Some(sum) = a.zip(b).and_then(|(a, b)| a.checked_add(b)) {
                    self.small = sum;
                    self.dscale = s;
                    return Ok(());
                }
            }
        }
        let total = match self.big.take() {
            Some(b) => b,
            None => Numeric::from_small(self.small, self.dscale),
        };
        self.big = Some(total.add(v)?);
        Ok(())
    }

    /// The total so far.
    pub fn value(&self) -> Numeric {
        match &self.big {
            Some(b) => b.clone(),
            None => Numeric::from_small(self.small, self.dscale),
        }
    }
}

/// avg's final step: the sum divided by the count, with division's result scale.
pub fn avg_final(sum: Value, n: i64) -> Result<Value> {
    match sum {
        Value::Numeric(s) if n > 0 => Ok(Value::Numeric(s.div(&Numeric::from_i64(n))?)),
        _ => Ok(Value::Null),
    }
}

/// The numeric functions ([`resolve`] picks them, [`call`] runs them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumFunc {
    Abs,
    Round,
    Trunc,
    Ceil,
    Floor,
    Sign,
    Mod,
    Div,
    Sqrt,
    Scale,
    MinScale,
    TrimScale,
}

/// The numeric function `name(args)` resolves to, as (function, argument types
/// to coerce to, result type); `None` when it is not one of them for these types.
/// One-argument functions that float8 also has (round, abs, sqrt...) are chosen
/// only for a numeric argument, as PostgreSQL's resolution does (`round(5)` is
/// float8's).
pub fn resolve(name: &str, args: &[Type]) -> Option<(NumFunc, Vec<Type>, Type)> {
    use NumFunc::*;
    let num = |t: &Type| *t == Type::Numeric;
    let int_or_num = |t: &Type| t.is_integer() || *t == Type::Numeric;
    let f = match (name, args) {
        ("abs", [t]) if num(t) => Abs,
        ("round", [t]) if num(t) => Round,
        ("trunc", [t]) if num(t) => Trunc,
        ("ceil" | "ceiling", [t]) if num(t) => Ceil,
        ("floor", [t]) if num(t) => Floor,
        ("sign", [t]) if num(t) => Sign,
        ("sqrt", [t]) if num(t) => Sqrt,
        ("round", [t, s]) if int_or_num(t) && (s.is_integer() || *s == Type::Unknown) => {
            return Some((if name == "round" { Round } else { Trunc }, vec![Type::Numeric, Type::Int4], Type::Numeric))
        }
        ("trunc", [t, s]) if int_or_num(t) && (s.is_integer() || *s == Type::Unknown) => {
            return Some((Trunc, vec![Type::Numeric, Type::Int4], Type::Numeric))
        }
        ("mod", [a, b]) if (num(a) || num(b)) && int_or_num(a) && int_or_num(b) => Mod,
        ("div", [a, b]) if int_or_num(a) && int_or_num(b) => Div,
        ("scale", [t]) if int_or_num(t) => return Some((Scale, vec![Type::Numeric], Type::Int4)),
        ("min_scale", [t]) if int_or_num(t) => return Some((MinScale, vec![Type::Numeric], Type::Int4)),
        ("trim_scale", [t]) if int_or_num(t) => TrimScale,
        _ => return None,
    };
    Some((f, vec![Type::Numeric; args.len()], Type::Numeric))
}

/// Runs a numeric function on (already coerced, non-null-checked) arguments.
pub fn call(f: NumFunc, vals: &[Value]) -> Result<Value> {
    if vals.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    let a = match vals.first() {
        Some(Value::Numeric(n)) => n,
        other => return Err(SqlError::internal(format!("numeric function on {other:?}"))),
    };
    let second = || -> Result<Numeric> {
        match vals.get(1) {
            Some(Value::Numeric(n)) => Ok(n.clone()),
            other => Err(SqlError::internal(format!("numeric function on {other:?}"))),
        }
    };
    let places = || -> i32 {
        match vals.get(1) {
            Some(Value::Int4(i)) => *i,
            _ => 0,
        }
    };
    let n = |x: Numeric| Ok(Value::Numeric(x));
    match f {
        NumFunc::Abs => n(a.abs()),
        NumFunc::Round => n(a.round(places(), true)),
        NumFunc::Trunc => n(a.round(places(), false)),
        NumFunc::Ceil => n(a.ceil_floor(true)),
        NumFunc::Floor => n(a.ceil_floor(false)),
        NumFunc::Sign => n(a.sign()),
        NumFunc::Sqrt => n(a.sqrt()?),
        NumFunc::Mod => n(a.rem(&second()?)?),
        NumFunc::Div => n(a.div_trunc(&second()?)?),
        NumFunc::Scale => Ok(a.scale().map_or(Value::Null, Value::Int4)),
        NumFunc::MinScale => Ok(a.min_scale().map_or(Value::Null, Value::Int4)),
        NumFunc::TrimScale => n(a.trim_scale()),
    }
}

/// `a op b` for numeric operands (`op` one of `+ - * / %`).
pub fn arith(op: crate::ops::ArithOp, a: &Numeric, b: &Numeric) -> Result<Numeric> {
    use crate::ops::ArithOp;
    match op {
        ArithOp::Add => a.add(b),
        ArithOp::Sub => a.sub(b),
        ArithOp::Mul => a.mul(b),
        ArithOp::Div => a.div(b),
        ArithOp::Mod => a.rem(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Numeric {
        Numeric::parse(s).unwrap()
    }

    /// A [`SumAccum`] totals as the row-by-row additions do, across the
    /// move from its i128 to digits and through the special values.
    #[test]
    fn sum_accum_matches_repeated_add() {
        let series: [&[&str]; 4] = [
            &["1.5", "-2.25", "0", "3", "0.125"],
            &["99999999999999999999999999999999.99", "99999999999999999999999999999999.99", "1", "-0.001", "12"],
            &["5", "NaN", "1"],
            &["-0.50", "0.5"],
        ];
        for vals in series {
            let mut acc = SumAccum::default();
            let mut total: Option<Numeric> = None;
            for v in vals {
                let x = n(v);
                acc.add(&x).unwrap();
                total = Some(match total {
                    Some(t) => t.add_digits(&x).unwrap(),
                    None => x,
                });
                assert_eq!(acc.value().as_bytes(), total.as_ref().unwrap().as_bytes(), "{vals:?} up to {v}");
            }
        }
    }

    /// The i128 fast paths of `+ - *` give the digits and display scale of
    /// the digit-by-digit paths, signs and zeros included.
    #[test]
    fn small_fast_paths_match_digit_paths() {
        let vals = [
            "0", "-0", "0.00", "1", "-1", "0.05", "-0.07", "1.50", "123456.78", "-99999.99", "0.000001", "1e20", "-3.000",
            "999999999999999999", "-999999999999999999.999999999999999999", "12345678901234567890123456.1234567890",
        ];
        for a in vals {
            for b in vals {
                let (x, y) = (n(a), n(b));
                let slow_sub = x.add_digits(&y.neg_of()).unwrap();
                for (fast, slow, op) in [
                    (x.add(&y).unwrap(), x.add_digits(&y).unwrap(), "+"),
                    (x.sub(&y).unwrap(), slow_sub, "-"),
                    (x.mul(&y).unwrap(), x.mul_digits(&y).unwrap(), "*"),
                ] {
                    assert_eq!(fast.as_bytes(), slow.as_bytes(), "{a} {op} {b}: {} vs {}", fast.to_text(), slow.to_text());
                }
            }
        }
        // Past 36 digits the digit paths answer.
        let big = n("123456789012345678901234567890123456789");
        assert_eq!(big.add(&n("1")).unwrap().to_text(), "123456789012345678901234567890123456790");
        assert_eq!(big.mul(&n("10")).unwrap().to_text(), "1234567890123456789012345678901234567890");
    }

    #[test]
    fn text_io_keeps_display_scale() {
        for (i, o) in [
            ("1.50", "1.50"),
            ("1e3", "1000"),
            ("  -0.001  ", "-0.001"),
            ("-0", "0"),
            ("-0.00", "0.00"),
            (".5", "0.5"),
            ("5.", "5"),
            ("1.5e-3", "0.0015"),
            ("1.50e1", "15.0"),
            ("NaN", "NaN"),
            ("-inf", "-Infinity"),
            ("+Infinity", "Infinity"),
            ("000123.4500", "123.4500"),
        ] {
            assert_eq!(n(i).to_text(), o, "{i}");
        }
        for bad in ["", "abc", "1.2.3", "1e", "- 1", "1 2", "e5", "."] {
            let e = Numeric::parse(bad).unwrap_err();
            assert_eq!((e.sqlstate(), e.message.clone()), ("22P02", format!("invalid input syntax for type numeric: \"{bad}\"")));
        }
        assert_eq!(Numeric::parse("1e131072").unwrap_err().message, "value overflows numeric format");
        assert!(Numeric::parse("1e131071").is_ok());
        assert_eq!(Numeric::parse("1e-16384").unwrap_err().sqlstate(), "22003");
    }

    #[test]
    fn arithmetic_scales() {
        assert_eq!(n("1.5").add(&n("2.25")).unwrap().to_text(), "3.75");
        assert_eq!(n("1.50").sub(&n("1.5")).unwrap().to_text(), "0.00");
        assert_eq!(n("1.5").mul(&n("-2.25")).unwrap().to_text(), "-3.375");
        assert_eq!(n("1.0").div(&n("3")).unwrap().to_text(), "0.33333333333333333333");
        assert_eq!(n("10").div(&n("4")).unwrap().to_text(), "2.5000000000000000");
        assert_eq!(n("3").div(&n("2")).unwrap().to_text(), "1.5000000000000000");
        assert_eq!(n("2").div(&n("3")).unwrap().to_text(), "0.66666666666666666667");
        assert_eq!(n("1").div(&n("0")).unwrap_err().sqlstate(), "22012");
        assert_eq!(n("7.5").rem(&n("2")).unwrap().to_text(), "1.5");
        assert_eq!(n("-7").rem(&n("3")).unwrap().to_text(), "-1");
        assert_eq!(n("-7.5").div_trunc(&n("2")).unwrap().to_text(), "-3");
        assert_eq!(n("2.0").sqrt().unwrap().to_text(), "1.414213562373095");
        assert_eq!(n("100").sqrt().unwrap().to_text(), "10.000000000000000");
        assert_eq!(n("inf").add(&n("-inf")).unwrap().to_text(), "NaN");
        assert_eq!(n("inf").mul(&n("0")).unwrap().to_text(), "NaN");
        assert_eq!(n("-inf").mul(&n("-2")).unwrap().to_text(), "Infinity");
    }

    #[test]
    fn rounding_and_typmod() {
        assert_eq!(n("2.5").round(0, true).to_text(), "3");
        assert_eq!(n("-2.5").round(0, true).to_text(), "-3");
        assert_eq!(n("1234.5678").round(-2, true).to_text(), "1200");
        assert_eq!(n("1234.5678").round(2, false).to_text(), "1234.56");
        assert_eq!(n("0.0049").round(2, true).to_text(), "0.00");
        assert_eq!(n("9.995").round(2, true).to_text(), "10.00");
        assert_eq!(n("-1.5").ceil_floor(true).to_text(), "-1");
        assert_eq!(n("-1.5").ceil_floor(false).to_text(), "-2");
        assert_eq!(n("1.5").ceil_floor(true).to_text(), "2");
        assert_eq!(n("2.000").ceil_floor(true).to_text(), "2");
        let tm = make_typmod(5, 2).unwrap();
        assert_eq!(typmod_parts(tm), Some((5, 2)));
        assert_eq!(n("123.456").apply_typmod(tm).unwrap().to_text(), "123.46");
        let e = n("999.999").apply_typmod(tm).unwrap_err();
        assert_eq!(e.message, "numeric field overflow");
        assert_eq!(typmod_parts(make_typmod(3, -1).unwrap()), Some((3, -1)));
        assert_eq!(n("12345").apply_typmod(make_typmod(5, -1).unwrap()).unwrap().to_text(), "12350");
        assert_eq!(n("1.23").min_scale(), Some(2));
        assert_eq!(n("1.2300").trim_scale().to_text(), "1.23");
        assert_eq!((n("0.000").min_scale(), n("0.000").trim_scale().to_text()), (Some(0), "0".to_string()));
    }

    #[test]
    fn conversions() {
        assert_eq!(n("2.5").to_i64("integer").unwrap(), Some(3));
        assert_eq!(n("-2.5").to_i64("integer").unwrap(), Some(-3));
        assert_eq!(n("99999999999999999999").to_i64("bigint").unwrap(), None);
        assert_eq!(n("NaN").to_i64("integer").unwrap_err().message, "cannot convert NaN to integer");
        assert_eq!(Numeric::from_f64(0.1, 15).unwrap().to_text(), "0.1");
        assert_eq!(Numeric::from_f64(0.1 + 0.2, 15).unwrap().to_text(), "0.3");
        assert_eq!(Numeric::from_f64(1e-7, 15).unwrap().to_text(), "0.0000001");
        assert_eq!(Numeric::from_f64(1e20, 15).unwrap().to_text(), "100000000000000000000");
        assert_eq!(Numeric::from_f64(-1.5, 6).unwrap().to_text(), "-1.5");
        assert_eq!(n("1.5").to_f64(), Some(1.5));
    }

    #[test]
    fn binary_round_trip_and_layout() {
        // 12345.678: groups 1, 2345, 6780; weight 1; dscale 3.
        let b = n("12345.678").send();
        assert_eq!(b, [0, 3, 0, 1, 0, 0, 0, 3, 0, 1, 0x09, 0x29, 0x1a, 0x7c]);
        // PostgreSQL 15's numeric_send of -0.00012, 0.000, 100000000 and -Infinity.
        assert_eq!(n("-0.00012").send(), [0, 2, 0xff, 0xff, 0x40, 0, 0, 5, 0, 1, 0x07, 0xd0]);
        assert_eq!(n("0.000").send(), [0, 0, 0, 0, 0, 0, 0, 3]);
        assert_eq!(n("100000000").send(), [0, 1, 0, 2, 0, 0, 0, 0, 0, 1]);
        assert_eq!(n("-inf").send(), [0, 0, 0, 0, 0xf0, 0, 0, 0x20]);
        for s in ["0", "0.000", "-1", "10000", "0.0001", "-123456789.000000001", "NaN", "Infinity", "-Infinity", "1e100", "1e-100"] {
            let v = n(s);
            let back = Numeric::recv(&v.send()).unwrap();
            assert_eq!(back.to_text(), v.to_text(), "{s}");
            assert_eq!(Numeric::from_bytes(v.as_bytes()).unwrap().to_text(), v.to_text());
        }
        // dscale 1 truncates the digits beyond it.
        let b = [0, 1, 0xff, 0xff, 0, 0, 0, 1, 0x13, 0x88]; // 0.5000 (weight -1), dscale 1
        assert_eq!(Numeric::recv(&b).unwrap().to_text(), "0.5");
        assert_eq!(Numeric::recv(&[0, 0, 0, 0, 0x12, 0, 0, 0]).unwrap_err().message, "invalid sign in external \"numeric\" value");
    }

    #[test]
    fn order() {
        let mut v: Vec<Numeric> = ["NaN", "1", "-inf", "inf", "-2.5", "0", "1.00", "0.001"].iter().map(|s| n(s)).collect();
        v.sort();
        let t: Vec<String> = v.iter().map(Numeric::to_text).collect();
        assert_eq!(t, ["-Infinity", "-2.5", "0", "0.001", "1", "1.00", "Infinity", "NaN"]);
        assert_eq!(n("NaN"), n("nan"));
    }

    /// A small deterministic generator (no dependency on a property-test crate).
    fn lcg(seed: &mut u64) -> u64 {
        *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *seed >> 11
    }

    #[test]
    fn property_integer_arithmetic_matches_i128() {
        let mut seed = 42;
        for _ in 0..3000 {
            let a = (lcg(&mut seed) as i64 >> (lcg(&mut seed) % 60)) as i128 * if lcg(&mut seed).is_multiple_of(2) { 1 } else { -1 };
            let b = (lcg(&mut seed) as i64 >> (lcg(&mut seed) % 60)) as i128 * if lcg(&mut seed).is_multiple_of(2) { 1 } else { -1 };
            let (x, y) = (Numeric::from_i128(a), Numeric::from_i128(b));
            assert_eq!(x.add(&y).unwrap(), Numeric::from_i128(a + b), "{a} + {b}");
            assert_eq!(x.sub(&y).unwrap(), Numeric::from_i128(a - b), "{a} - {b}");
            assert_eq!(x.mul(&y).unwrap(), Numeric::from_i128(a * b), "{a} * {b}");
            assert_eq!(x.cmp(&y), a.cmp(&b));
            if b != 0 {
                assert_eq!(x.div_trunc(&y).unwrap(), Numeric::from_i128(a / b), "{a} div {b}");
                assert_eq!(x.rem(&y).unwrap(), Numeric::from_i128(a % b), "{a} % {b}");
            }
            assert_eq!(Numeric::parse(&a.to_string()).unwrap().to_text(), a.to_string());
        }
    }

    #[test]
    fn property_scaled_values_match_i128() {
        // Values with scale 0..6 against fixed-point i128 arithmetic.
        let mut seed = 7;
        for _ in 0..2000 {
            let (sa, sb) = ((lcg(&mut seed) % 7) as u32, (lcg(&mut seed) % 7) as u32);
            let a = (lcg(&mut seed) % 2_000_000_000) as i128 - 1_000_000_000;
            let b = (lcg(&mut seed) % 2_000_000) as i128 - 1_000_000;
            let mk = |v: i128, s: u32| Numeric::finite(v < 0, from_u128(v.unsigned_abs()), s);
            let (x, y) = (mk(a, sa), mk(b, sb));
            let s = sa.max(sb);
            let (ai, bi) = (a * 10i128.pow(s - sa), b * 10i128.pow(s - sb));
            assert_eq!(x.add(&y).unwrap(), mk(ai + bi, s));
            assert_eq!(x.add(&y).unwrap().dscale(), s);
            assert_eq!(x.mul(&y).unwrap(), mk(a * b, sa + sb));
            assert_eq!(x.cmp(&y), ai.cmp(&bi));
            if b != 0 {
                assert_eq!(x.rem(&y).unwrap(), mk(ai % bi, s));
                // The quotient, rounded to its scale, is within half a unit of the exact one.
                let q = x.div(&y).unwrap();
                let qs = q.dscale();
                let qv: i128 = q.to_text().replace(['.', '-'], "").parse::<i128>().unwrap_or(0) * if q.is_neg() { -1 } else { 1 };
                // |q × 10^-qs - ai/bi| <= 0.5 × 10^-qs  <=>  |2 (qv bi - ai 10^qs)| <= |bi|
                if qs <= 20 {
                    let lhs = 2 * (qv * bi - ai * 10i128.pow(qs));
                    assert!(lhs.abs() <= bi.abs(), "{x:?} / {y:?} = {q:?}");
                }
            }
            let t = x.to_text();
            assert_eq!(Numeric::parse(&t).unwrap().to_text(), t);
            assert_eq!(Numeric::recv(&x.send()).unwrap().to_text(), t);
        }
    }
}
