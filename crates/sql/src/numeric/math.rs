//! numeric's transcendental functions (exp, ln, log, power) with PostgreSQL's
//! result scales, and the variance/stddev aggregates' arithmetic.
//!
//! Each function first chooses the result scale as PostgreSQL does (at least
//! 16 significant digits, at least the inputs' display scales, at most 1000),
//! then computes in fixed point with guard digits beyond it and rounds half
//! away from zero. ln reduces its argument to [1, 10) by the decimal exponent
//! and then towards 1 by square roots before the atanh series; exp halves its
//! argument below 0.01, sums the Taylor series and squares back.

use super::{isqrt_mag, overflow, shift, Numeric, MAX_DISPLAY_SCALE, MIN_SIG_DIGITS};
use crate::errors::{Result, SqlError};
use crate::types::Value;

fn num(s: &str) -> Numeric {
    Numeric::parse(s).expect("constant")
}

/// `a × b` truncated to `w` fraction digits.
fn mulw(a: &Numeric, b: &Numeric, w: u32) -> Result<Numeric> {
    Ok(a.mul(b)?.rescale(w, false))
}

/// `a / b` truncated to `w` fraction digits.
fn divw(a: &Numeric, b: &Numeric, w: u32) -> Numeric {
    a.div_round(b, w, false)
}

/// sqrt of a non-negative value, truncated to `w` fraction digits.
fn sqrtw(x: &Numeric, w: u32) -> Numeric {
    let x = x.rescale(w, false);
    // sqrt(mag × 10^-w) × 10^w = sqrt(mag × 10^w)
    let n = shift(x.digits(), w);
    Numeric::finite(false, isqrt_mag(&n), w)
}

/// The decimal exponent of the leading digit of a nonzero finite value.
fn dweight(x: &Numeric) -> i64 {
    x.digits().len() as i64 - 1 - x.dscale() as i64
}

/// ln(x) for x > 0, to `w` fraction digits (a few units in the last place).
fn ln_fixed(x: &Numeric, w: u32) -> Result<Numeric> {
    let e = dweight(x);
    // m = x / 10^e in [1, 10): the same digits with the point moved.
    let m = if e >= 0 {
        Numeric::finite(false, x.digits().to_vec(), x.dscale() + e as u32)
    } else {
        Numeric::finite(false, x.digits().to_vec(), (x.dscale() as i64 + e) as u32)
    };
    let ew = (e.unsigned_abs() as f64 + 1.0).log10().ceil() as u32;
    let wide = w + ew + 12;
    let mut r = ln_near(&m, wide)?;
    if e != 0 {
        let ln10 = ln_near(&num("10"), wide)?;
        r = r.add(&ln10.mul(&Numeric::from_i64(e))?)?;
    }
    Ok(r.rescale(w, false))
}

/// ln(y) for y in (0, 10]: square roots until |y - 1| < 0.01, then the series.
fn ln_near(y: &Numeric, w: u32) -> Result<Numeric> {
    let one = num("1");
    let small = num("0.01");
    let mut k = 0u32;
    let wide = w + 12;
    let mut y = y.rescale(wide, false);
    while y.sub(&one)?.abs() > small {
        y = sqrtw(&y, wide);
        k += 1;
    }
    let z = divw(&y.sub(&one)?, &y.add(&one)?, wide);
    let z2 = mulw(&z, &z, wide)?;
    let mut term = z.clone();
    let mut sum = z;
    let mut i = 1i64;
    loop {
        term = mulw(&term, &z2, wide)?;
        i += 2;
        let t = divw(&term, &Numeric::from_i64(i), wide);
        if t.is_zero() {
            break;
        }
        sum = sum.add(&t)?;
    }
    let factor = Numeric::from_i128(2i128 << k);
    Ok(mulw(&sum, &factor, w)?)
}

/// exp(x) with `w` fraction digits correct (relative precision kept through the squarings).
fn exp_fixed(x: &Numeric, w: u32) -> Result<Numeric> {
    if x.is_neg() {
        let big = exp_fixed(&x.abs(), w + 4)?;
        return Ok(divw(&num("1"), &big, w));
    }
    let xf = x.to_f64().unwrap_or(0.0);
    let mut k = 0u32;
    while xf / 2f64.powi(k as i32) > 0.01 {
        k += 1;
    }
    let int_digits = (xf * 0.434_294_481_903_252).max(0.0) as u32;
    let wide = w + int_digits + k / 3 + 12;
    let r = divw(x, &Numeric::from_i128(1i128 << k), wide);
    let mut term = num("1");
    let mut sum = num("1");
    let mut i = 1i64;
    loop {
        term = divw(&mulw(&term, &r, wide)?, &Numeric::from_i64(i), wide);
        if term.is_zero() {
            break;
        }
        sum = sum.add(&term)?;
        i += 1;
    }
    for _ in 0..k {
        sum = mulw(&sum, &sum, wide)?;
    }
    Ok(sum.rescale(w, false))
}

/// PostgreSQL's estimate_ln_dweight: the decimal weight of ln(x).
fn ln_dweight(x: &Numeric) -> i64 {
    if x.is_neg() || x.is_zero() {
        return 0;
    }
    if *x >= num("0.9") && *x <= num("1.1") {
        let d = x.sub(&num("1")).unwrap_or_else(|_| Numeric::zero());
        return if d.is_zero() { 0 } else { dweight(&d) };
    }
    let l = x.to_f64().map(f64::ln).unwrap_or_else(|| (dweight(x) as f64 + 0.5) * std::f64::consts::LN_10);
    if l == 0.0 {
        0
    } else {
        l.abs().log10() as i64
    }
}

fn clamp_scale(r: i64) -> u32 {
    r.clamp(0, MAX_DISPLAY_SCALE) as u32
}

fn log_err(x: &Numeric) -> Option<SqlError> {
    if x.is_zero() {
        Some(SqlError::new(b"2201E", "cannot take logarithm of zero"))
    } else if x.is_neg() {
        Some(SqlError::new(b"2201E", "cannot take logarithm of a negative number"))
    } else {
        None
    }
}

impl Numeric {
    /// ln(x).
    pub fn ln(&self) -> Result<Numeric> {
        if self.is_nan() {
            return Ok(self.clone());
        }
        if let Some(e) = log_err(self) {
            return Err(e);
        }
        if self.is_inf() {
            return Ok(self.clone());
        }
        let rscale = clamp_scale((MIN_SIG_DIGITS - ln_dweight(self)).max(self.dscale() as i64));
        Ok(ln_fixed(self, rscale + 4)?.rescale(rscale, true))
    }

    /// log(base, x).
    pub fn log(base: &Numeric, x: &Numeric) -> Result<Numeric> {
        if base.is_nan() || x.is_nan() {
            return Ok(Numeric::nan());
        }
        if let Some(e) = log_err(base).or_else(|| log_err(x)) {
            return Err(e);
        }
        if base.is_inf() || x.is_inf() {
            if base.is_inf() && x.is_inf() {
                return Ok(Numeric::nan());
            }
            if x.is_inf() {
                return Ok(if *base < num("1") { Numeric::infinity(true) } else if *base == num("1") { Numeric::infinity(false) } else { x.clone() });
            }
            return Ok(Numeric::zero());
        }
        if *base == num("1") {
            return Err(super::division_by_zero());
        }
        let result_dweight = ln_dweight(x) - ln_dweight(base);
        let rscale = clamp_scale((MIN_SIG_DIGITS - result_dweight).max(base.dscale() as i64).max(x.dscale() as i64));
        // |ln(x)/ln(b)|: enough digits of each for rscale digits of the quotient.
        let lb_w = rscale as i64 + 10 + (result_dweight.max(0)) + (-ln_dweight(base)).max(0);
        let lb = ln_fixed(base, lb_w as u32)?;
        let lx = ln_fixed(x, lb_w as u32)?;
        Ok(divw(&lx, &lb, rscale + 4).rescale(rscale, true))
    }

    /// exp(x).
    pub fn exp(&self) -> Result<Numeric> {
        if self.is_nan() {
            return Ok(self.clone());
        }
        if self.is_inf() {
            return Ok(if self.is_neg() { Numeric::zero() } else { self.clone() });
        }
        let val = self.to_f64().unwrap_or(f64::MAX) * 0.434_294_481_903_252;
        if val > 131072.0 * 1.01 {
            return Err(overflow());
        }
        let val = val.clamp(-(MAX_DISPLAY_SCALE as f64), MAX_DISPLAY_SCALE as f64);
        let rscale = clamp_scale((MIN_SIG_DIGITS - val as i64).max(self.dscale() as i64));
        if val < -(MAX_DISPLAY_SCALE as f64) + 1.0 && val + 1.0 < -(rscale as f64) {
            return Ok(Numeric::finite(false, Vec::new(), rscale));
        }
        let r = exp_fixed(self, rscale + 4)?.rescale(rscale, true);
        Numeric::check(r)
    }

    /// power(x, y) and `x ^ y`.
    pub fn power(&self, y: &Numeric) -> Result<Numeric> {
        let one = num("1");
        if self.is_nan() || y.is_nan() {
            if self.is_nan() {
                return Ok(if !y.is_nan() && y.is_zero() { one } else { Numeric::nan() });
            }
            return Ok(if *self == one { one } else { Numeric::nan() });
        }
        if self.is_zero() && y.is_neg() {
            return Err(SqlError::new(b"2201F", "zero raised to a negative power is undefined"));
        }
        let y_int = y.is_finite() && y.min_scale() == Some(0);
        if self.is_neg() && y.is_finite() && !y_int {
            return Err(SqlError::new(b"2201F", "a negative number raised to a non-integer power yields a complex result"));
        }
        if !self.is_finite() || !y.is_finite() {
            return Ok(power_special(self, y, y_int));
        }
        if y_int {
            if let Some(n) = y.to_i64("integer")?.filter(|n| i32::try_from(*n).is_ok()) {
                return power_int(self, n, y.dscale());
            }
        }
        if self.is_zero() {
            return Ok(Numeric::finite(false, Vec::new(), MIN_SIG_DIGITS as u32));
        }
        // Sign of the result: a negative base has an integral exponent here.
        let neg = self.is_neg() && y.round(0, false).digits().last().is_some_and(|d| d % 2 == 1);
        let base = self.abs();
        let ln_est = base.to_f64().map(f64::ln).unwrap_or((dweight(&base) as f64 + 0.5) * std::f64::consts::LN_10);
        let val = ln_est * y.to_f64().unwrap_or(0.0);
        if val.abs() > 1000.0 * 3.01 * std::f64::consts::LN_10 * 10.0 {
            if val > 0.0 {
                return Err(overflow());
            }
            return Ok(Numeric::finite(false, Vec::new(), MAX_DISPLAY_SCALE as u32));
        }
        let val = val * 0.434_294_481_903_252;
        if val > 131072.0 {
            return Err(overflow());
        }
        let rscale = clamp_scale((MIN_SIG_DIGITS - val as i64).max(base.dscale() as i64).max(y.dscale() as i64));
        if val + 1.0 < -(MAX_DISPLAY_SCALE as f64) {
            return Ok(Numeric::finite(false, Vec::new(), MAX_DISPLAY_SCALE as u32));
        }
        let sig = (rscale as i64 + val.max(0.0) as i64).max(0);
        let yw = (y.to_f64().unwrap_or(1.0).abs().max(1.0)).log10().ceil() as i64;
        let lw = (sig + yw + 12).max(rscale as i64 + 12) as u32;
        let t = mulw(&ln_fixed(&base, lw)?, y, lw)?;
        let r = exp_fixed(&t, rscale + 4)?.rescale(rscale, true);
        let r = if neg { r.negate() } else { r };
        Numeric::check(r)
    }

    /// sqrt to `rscale` digits, rounded (stddev's final step).
    fn sqrt_scale(&self, rscale: u32) -> Numeric {
        sqrtw(self, rscale + 1).rescale(rscale, true)
    }
}

/// x ^ n for an integral n (PostgreSQL's power_var_int).
fn power_int(x: &Numeric, n: i64, exp_dscale: u32) -> Result<Numeric> {
    let f = if x.is_zero() { 0.0 } else { n as f64 * x.abs().to_f64().map(f64::log10).unwrap_or(dweight(x) as f64) };
    if f > 131072.0 + 4.0 {
        return Err(overflow());
    }
    if f + 1.0 < -(MAX_DISPLAY_SCALE as f64) {
        return Ok(Numeric::finite(false, Vec::new(), MAX_DISPLAY_SCALE as u32));
    }
    // PostgreSQL 15 gives integral powers at least 16 digits after the point
    // (and the base's display scale), whatever the result's magnitude.
    let _ = exp_dscale;
    let rscale = clamp_scale(MIN_SIG_DIGITS.max(x.dscale() as i64));
    match n {
        0 => return Ok(Numeric::finite(false, vec![1], 0).rescale(rscale, false)),
        1 => return Ok(x.round(rscale as i32, true)),
        -1 => return Ok(num("1").div_round(x, rscale, true)),
        _ => {}
    }
    if x.is_zero() {
        if n < 0 {
            return Err(super::division_by_zero());
        }
        return Ok(Numeric::finite(false, Vec::new(), rscale));
    }
    let m = n.unsigned_abs();
    // Exact when the digits stay reasonable; through exp/ln otherwise.
    let exact_digits = x.digits().len() as f64 * m as f64;
    let p = if exact_digits < 4000.0 {
        let mut acc = num("1");
        let mut base = x.clone();
        let mut e = m;
        while e > 0 {
            if e & 1 == 1 {
                acc = acc.mul(&base)?;
            }
            e >>= 1;
            if e > 0 {
                base = base.mul(&base)?;
            }
        }
        acc
    } else {
        let wide = rscale + f.abs() as u32 + 20;
        let lnx = ln_fixed(&x.abs(), wide + 10)?;
        let mag = exp_fixed(&mulw(&lnx, &Numeric::from_i64(m as i64), wide + 10)?, wide)?;
        if x.is_neg() && m % 2 == 1 {
            mag.negate()
        } else {
            mag
        }
    };
    let r = if n < 0 { num("1").div_round(&p, rscale, true) } else { p.round(rscale as i32, true) };
    Numeric::check(r)
}

/// power() with an infinite operand (PostgreSQL's rules).
fn power_special(x: &Numeric, y: &Numeric, y_int: bool) -> Numeric {
    let one = num("1");
    if y.is_finite() && y.is_zero() {
        return one;
    }
    if *x == one {
        return one;
    }
    if y.is_inf() {
        let ax = x.abs();
        if x.is_finite() && x.is_zero() {
            return if y.is_neg() { Numeric::infinity(false) } else { Numeric::zero() };
        }
        let cmp = ax.cmp(&one);
        return match (cmp, y.is_neg()) {
            (std::cmp::Ordering::Equal, _) => one,
            (std::cmp::Ordering::Greater, false) | (std::cmp::Ordering::Less, true) => Numeric::infinity(false),
            _ => Numeric::zero(),
        };
    }
    // x infinite, y finite nonzero.
    if y.is_neg() {
        return Numeric::zero();
    }
    let odd = y_int && y.round(0, false).digits().last().is_some_and(|d| d % 2 == 1);
    Numeric::infinity(x.is_neg() && odd)
}

// ---- the functions of the built-in table (functions.rs) ----

fn arg(v: &Value) -> Result<Numeric> {
    super::of_value(v).ok_or_else(|| SqlError::internal(format!("numeric function of {v:?}")))
}

pub fn exp_fn(a: &[Value]) -> Result<Value> {
    Ok(Value::Numeric(arg(&a[0])?.exp()?))
}

pub fn ln_fn(a: &[Value]) -> Result<Value> {
    Ok(Value::Numeric(arg(&a[0])?.ln()?))
}

/// log(x) (base 10) and log(b, x).
pub fn log_fn(a: &[Value]) -> Result<Value> {
    Ok(Value::Numeric(match a {
        [x] => Numeric::log(&num("10"), &arg(x)?)?,
        [b, x] => Numeric::log(&arg(b)?, &arg(x)?)?,
        _ => return Err(SqlError::internal("log arity")),
    }))
}

pub fn power_fn(a: &[Value]) -> Result<Value> {
    Ok(Value::Numeric(arg(&a[0])?.power(&arg(&a[1])?)?))
}

/// width_bucket(operand, b1, b2, count) over numeric.
pub fn width_bucket_fn(a: &[Value]) -> Result<Value> {
    let (op, b1, b2) = (arg(&a[0])?, arg(&a[1])?, arg(&a[2])?);
    let count = crate::functions::int(&a[3]);
    if count <= 0 {
        return Err(SqlError::new(b"2201G", "count must be greater than zero"));
    }
    if op.is_nan() || b1.is_nan() || b2.is_nan() {
        return Err(SqlError::new(b"2201G", "operand, lower bound, and upper bound cannot be NaN"));
    }
    if !b1.is_finite() || !b2.is_finite() {
        return Err(SqlError::new(b"2201G", "lower and upper bounds must be finite"));
    }
    if b1 == b2 {
        return Err(SqlError::new(b"2201G", "lower bound cannot equal upper bound"));
    }
    let cnt = Numeric::from_i64(count);
    let r = if b1 < b2 {
        if op < b1 {
            0
        } else if op >= b2 {
            count + 1
        } else {
            op.sub(&b1)?.mul(&cnt)?.div_trunc(&b2.sub(&b1)?)?.to_i64("integer")?.unwrap_or(0) + 1
        }
    } else if op > b1 {
        0
    } else if op <= b2 {
        count + 1
    } else {
        b1.sub(&op)?.mul(&cnt)?.div_trunc(&b1.sub(&b2)?)?.to_i64("integer")?.unwrap_or(0) + 1
    };
    i32::try_from(r).map(Value::Int4).map_err(|_| crate::types::out_of_range(crate::types::Type::Int4))
}

/// factorial(bigint).
pub fn factorial_fn(a: &[Value]) -> Result<Value> {
    let n = crate::functions::int(&a[0]);
    if n < 0 {
        return Err(SqlError::new(b"22023", "factorial of a negative number is undefined"));
    }
    if n > 32177 {
        return Err(overflow());
    }
    let mut acc = num("1");
    for i in 2..=n {
        acc = acc.mul(&Numeric::from_i64(i))?;
    }
    Ok(Value::Numeric(acc))
}

// ---- variance and standard deviation ----

/// The running state of var_*/stddev_* kept in an aggregate's accumulator:
/// numeric inputs `[sumX, sumX2]` (exact), float inputs `[Sx, Sxx]`
/// (Youngs-Cramer, as float8_accum).
pub fn var_accum(acc: Value, v: &Value, n: i64) -> Result<Value> {
    use crate::array::Array;
    use crate::types::Type;
    let items = match acc {
        Value::Array(a) => a.items,
        _ => Vec::new(),
    };
    match v {
        Value::Float4(_) | Value::Float8(_) => {
            let x = crate::functions::float(v);
            let (sx, sxx) = match items.as_slice() {
                [Value::Float8(a), Value::Float8(b)] => (*a, *b),
                _ => (0.0, 0.0),
            };
            let nn = n as f64;
            let sx2 = sx + x;
            let sxx2 = if n > 1 {
                let tmp = x * nn - sx2;
                sxx + tmp * tmp / (nn * (nn - 1.0))
            } else if x.is_finite() {
                0.0
            } else {
                f64::NAN
            };
            Ok(Value::Array(Box::new(Array::new(Type::Float8, vec![Value::Float8(sx2), Value::Float8(sxx2)]))))
        }
        _ => {
            let x = super::of_value(v).ok_or_else(|| SqlError::internal(format!("variance of {v:?}")))?;
            let (sx, sxx) = match items.as_slice() {
                [Value::Numeric(a), Value::Numeric(b)] => (a.clone(), b.clone()),
                _ => (Numeric::zero(), Numeric::zero()),
            };
            let sq = if x.is_finite() { x.mul(&x)? } else { Numeric::nan() };
            let sxx2 = if sxx.is_finite() && sq.is_finite() { sxx.add(&sq)? } else { Numeric::nan() };
            Ok(Value::Array(Box::new(Array::new(Type::Numeric, vec![Value::Numeric(sx.add(&x)?), Value::Numeric(sxx2)]))))
        }
    }
}

/// The final value of var_samp/var_pop (`sample`) or stddev_* (`sqrt`).
pub fn var_final(acc: Value, n: i64, sample: bool, sqrt: bool) -> Result<Value> {
    let Value::Array(a) = acc else { return Ok(Value::Null) };
    if n == 0 || (sample && n <= 1) {
        return Ok(Value::Null);
    }
    match a.items.as_slice() {
        [Value::Float8(_), Value::Float8(sxx)] => {
            let nn = n as f64;
            let v = sxx / if sample { nn - 1.0 } else { nn };
            Ok(Value::Float8(if sqrt { v.sqrt() } else { v }))
        }
        [Value::Numeric(sx), Value::Numeric(sxx)] => {
            if !sx.is_finite() || !sxx.is_finite() {
                return Ok(Value::Numeric(Numeric::nan()));
            }
            let vn = Numeric::from_i64(n);
            let rscale = sx.dscale() * 2;
            let sx2 = sx.mul(sx)?.round(rscale as i32, true);
            let nsxx = vn.mul(sxx)?.round(rscale as i32, true);
            let num = nsxx.sub(&sx2)?;
            if num.is_neg() || num.is_zero() {
                return Ok(Value::Numeric(Numeric::zero()));
            }
            let den = if sample { vn.mul(&Numeric::from_i64(n - 1))? } else { vn.mul(&vn)? };
            let q = num.div(&den)?;
            Ok(Value::Numeric(if sqrt { q.sqrt_scale(q.dscale()) } else { q }))
        }
        _ => Ok(Value::Null),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Numeric {
        Numeric::parse(s).unwrap()
    }

    #[test]
    fn transcendental_as_postgres() {
        assert_eq!(n("1").exp().unwrap().to_text(), "2.7182818284590452");
        assert_eq!(n("2").ln().unwrap().to_text(), "0.6931471805599453");
        assert_eq!(n("10").ln().unwrap().to_text(), "2.3025850929940457");
        assert_eq!(Numeric::log(&n("10"), &n("1000")).unwrap().to_text(), "3.0000000000000000");
        assert_eq!(Numeric::log(&n("2"), &n("64")).unwrap().to_text(), "6.0000000000000000");
        assert_eq!(n("2").power(&n("10")).unwrap().to_text(), "1024.0000000000000000");
        assert_eq!(n("2").power(&n("0.5")).unwrap().to_text(), "1.4142135623730950");
        assert_eq!(n("0").ln().unwrap_err().message, "cannot take logarithm of zero");
    }
}
