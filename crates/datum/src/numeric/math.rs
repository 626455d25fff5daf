//! numeric's transcendental functions (exp, ln, log, power) with PostgreSQL's
//! result scales, and the variance/stddev aggregates' arithmetic.
//!
//! Each function first chooses the result scale as PostgreSQL does (at least
//! 16 significant digits, at least the inputs' display scales, at most 1000),
//! then computes in fixed point with guard digits beyond it and rounds half
//! away from zero. ln reduces its argument to [1, 10) by the decimal exponent
//! and then towards 1 by square roots before the atanh series; exp halves its
//! argument below 0.01, sums the Taylor series and squares back. Integral
//! powers square and multiply on wide limbs ([`super::nat`]), keeping only the
//! significant digits the result scale needs (plus guard digits for the error
//! each truncation adds), so `10 ^ 131071` or `1.0001 ^ 2000000000` costs a few
//! dozen multiplications; factorial multiplies a balanced product tree.
//!
//! Limits as PostgreSQL's: exp(x) overflows from x >= 6000 (and is zero from
//! x <= -6000), a non-integral power whose `y × ln(x)` passes 6020 overflows
//! (or is zero), an integral power or factorial overflows when the result has
//! more than 131072 digits before the point. Every loop polls the statement's
//! [`Interrupts`].

use super::nat::{self, Nat};
use super::{isqrt_mag, overflow, shift, Numeric, MAX_DISPLAY_SCALE, MAX_INT_DIGITS, MIN_SIG_DIGITS};
use crate::errors::{Interrupts, Result, SqlError};
use crate::types::Value;

/// log10(e) as PostgreSQL writes it (15 digits, not `f64::consts::LOG10_E`):
/// result scales are chosen from `(int) (x * 0.434294481903252)`, and the
/// same literal keeps the same integer at the boundaries.
#[allow(clippy::approx_constant)]
const PG_LOG10_E: f64 = 0.434_294_481_903_252;

/// PostgreSQL's NUMERIC_MAX_RESULT_SCALE: exp's argument must stay below 3
/// times it (in magnitude), a power's `y × ln(x)` below 3.01 times it.
const MAX_RESULT_SCALE: f64 = 2000.0;

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
fn ln_fixed(x: &Numeric, w: u32, ck: &dyn Interrupts) -> Result<Numeric> {
    let e = dweight(x);
    let ew = (e.unsigned_abs() as f64 + 1.0).log10().ceil() as u32;
    let wide = w + ew + 12;
    // m = x / 10^e in [1, 10): the same digits with the point moved after the
    // first one, truncated to the working precision (a 100000-digit x needs
    // only its leading digits, and a display scale is at most 16 bits).
    let d = x.digits();
    let m = Numeric::finite(false, d[..d.len().min(wide as usize + 2)].to_vec(), (d.len().min(wide as usize + 2) - 1) as u32);
    let mut r = ln_near(&m, wide, ck)?;
    if e != 0 {
        let ln10 = ln_near(&num("10"), wide, ck)?;
        r = r.add(&ln10.mul(&Numeric::from_i64(e))?)?;
    }
    Ok(r.rescale(w, false))
}

/// ln(y) for y in (0, 10]: square roots until |y - 1| < 0.01, then the series.
fn ln_near(y: &Numeric, w: u32, ck: &dyn Interrupts) -> Result<Numeric> {
    let one = num("1");
    let small = num("0.01");
    let mut k = 0u32;
    let wide = w + 12;
    let mut y = y.rescale(wide, false);
    while y.sub(&one)?.abs() > small {
        ck.check()?;
        y = sqrtw(&y, wide);
        k += 1;
    }
    let z = divw(&y.sub(&one)?, &y.add(&one)?, wide);
    let z2 = mulw(&z, &z, wide)?;
    let mut term = z.clone();
    let mut sum = z;
    let mut i = 1i64;
    loop {
        ck.check()?;
        term = mulw(&term, &z2, wide)?;
        i += 2;
        let t = divw(&term, &Numeric::from_i64(i), wide);
        if t.is_zero() {
            break;
        }
        sum = sum.add(&t)?;
    }
    let factor = Numeric::from_i128(2i128 << k);
    mulw(&sum, &factor, w)
}

/// exp(x) with `w` fraction digits correct (relative precision kept through the squarings).
fn exp_fixed(x: &Numeric, w: u32, ck: &dyn Interrupts) -> Result<Numeric> {
    if x.is_neg() {
        let big = exp_fixed(&x.abs(), w + 4, ck)?;
        return Ok(divw(&num("1"), &big, w));
    }
    let xf = x.to_f64().unwrap_or(0.0);
    let int_digits = (xf * PG_LOG10_E).max(0.0) as u32;
    // Halve the argument k times until it is below 10^-t, sum the Taylor series
    // (about wide/t terms) and square k times. t = 2 suits the usual 20-40
    // digits; a long result (exp(5000) has 2172 digits) balances the two
    // halves with t near sqrt(wide)/2.
    let t = ((w + int_digits) as f64).sqrt() / 2.0;
    let limit = 10f64.powf(-t.max(2.0));
    let mut k = 0u32;
    while xf / 2f64.powi(k as i32) > limit {
        k += 1;
    }
    let wide = w + int_digits + k / 3 + 12;
    let r = divw(x, &Numeric::from_i128(1i128 << k.min(126)), wide);
    let r = if k > 126 { divw(&r, &Numeric::from_i128(1i128 << (k - 126)), wide) } else { r };
    let mut term = num("1");
    let mut sum = num("1");
    let mut i = 1i64;
    loop {
        ck.check()?;
        term = divw(&mulw(&term, &r, wide)?, &Numeric::from_i64(i), wide);
        if term.is_zero() {
            break;
        }
        sum = sum.add(&term)?;
        i += 1;
    }
    for _ in 0..k {
        ck.check()?;
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
    pub fn ln(&self, ck: &dyn Interrupts) -> Result<Numeric> {
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
        Ok(ln_fixed(self, rscale + 4, ck)?.rescale(rscale, true))
    }

    /// log(base, x).
    pub fn log(base: &Numeric, x: &Numeric, ck: &dyn Interrupts) -> Result<Numeric> {
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
        let lb = ln_fixed(base, lb_w as u32, ck)?;
        let lx = ln_fixed(x, lb_w as u32, ck)?;
        Ok(divw(&lx, &lb, rscale + 4).rescale(rscale, true))
    }

    /// exp(x).
    pub fn exp(&self, ck: &dyn Interrupts) -> Result<Numeric> {
        if self.is_nan() {
            return Ok(self.clone());
        }
        if self.is_inf() {
            return Ok(if self.is_neg() { Numeric::zero() } else { self.clone() });
        }
        let x = self.to_f64().unwrap_or(if self.is_neg() { f64::MIN } else { f64::MAX });
        let val = (x * PG_LOG10_E).clamp(-(MAX_DISPLAY_SCALE as f64), MAX_DISPLAY_SCALE as f64);
        let rscale = clamp_scale((MIN_SIG_DIGITS - val as i64).max(self.dscale() as i64));
        exp_scaled(self, x, rscale, ck)
    }

    /// power(x, y) and `x ^ y`.
    pub fn power(&self, y: &Numeric, ck: &dyn Interrupts) -> Result<Numeric> {
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
                return power_int(self, n, ck);
            }
        }
        if self.is_zero() {
            return Ok(Numeric::finite(false, Vec::new(), MIN_SIG_DIGITS as u32));
        }
        // Sign of the result: a negative base has an integral exponent here.
        let neg = self.is_neg() && y.round(0, false).digits().last().is_some_and(|d| d % 2 == 1);
        let base = self.abs();
        // y × ln(x), roughly: past 3.01 × NUMERIC_MAX_RESULT_SCALE the result
        // overflows (or is zero, at the largest display scale), as in PostgreSQL.
        let ln_est = base.to_f64().map(f64::ln).unwrap_or((dweight(&base) as f64 + 0.5) * std::f64::consts::LN_10);
        let val = ln_est * y.to_f64().unwrap_or(if y.is_neg() { f64::MIN } else { f64::MAX });
        if val.abs() > MAX_RESULT_SCALE * 3.01 {
            if val > 0.0 {
                return Err(overflow());
            }
            return Ok(Numeric::finite(false, Vec::new(), MAX_DISPLAY_SCALE as u32));
        }
        let dval = val * PG_LOG10_E;
        let rscale = clamp_scale((MIN_SIG_DIGITS - dval as i64).max(base.dscale() as i64).max(y.dscale() as i64));
        let sig = (rscale as i64 + dval.max(0.0) as i64).max(0);
        let yw = (y.to_f64().unwrap_or(1.0).abs().max(1.0)).log10().ceil() as i64;
        let lw = (sig + yw + 12).max(rscale as i64 + 12) as u32;
        let t = mulw(&ln_fixed(&base, lw, ck)?, y, lw)?;
        let tf = t.to_f64().unwrap_or(val);
        let r = exp_scaled(&t, tf, rscale, ck)?;
        let r = if neg { r.negate() } else { r };
        Numeric::check(r)
    }

    /// sqrt to `rscale` digits, rounded (stddev's final step).
    fn sqrt_scale(&self, rscale: u32) -> Numeric {
        sqrtw(self, rscale + 1).rescale(rscale, true)
    }
}

/// exp(x) rounded to `rscale` (`xf`: x as a float), with PostgreSQL's limits:
/// overflow from x >= 6000, zero from x <= -6000.
fn exp_scaled(x: &Numeric, xf: f64, rscale: u32, ck: &dyn Interrupts) -> Result<Numeric> {
    if xf.abs() >= MAX_RESULT_SCALE * 3.0 {
        if xf > 0.0 {
            return Err(overflow());
        }
        return Ok(Numeric::finite(false, Vec::new(), rscale));
    }
    // A result that rounds to zero at rscale: exp(x) < 10^(-rscale-1).
    if xf * PG_LOG10_E + 1.0 < -(rscale as f64) {
        return Ok(Numeric::finite(false, Vec::new(), rscale));
    }
    Numeric::check(exp_fixed(x, rscale + 4, ck)?.rescale(rscale, true))
}

/// A positive value `m × 10^e` held to a bounded number of significant digits.
struct Approx {
    m: Nat,
    e: i64,
}

impl Approx {
    fn of(x: &Numeric) -> Approx {
        Approx { m: nat::from_digits(x.digits()), e: -(x.dscale() as i64) }
    }
    /// `self × o`, keeping `digits` significant digits (truncated).
    fn mul(&self, o: &Approx, digits: usize) -> Approx {
        let mut m = nat::mul(&self.m, &o.m);
        let mut e = self.e + o.e;
        let d = nat::digit_count(&m);
        if d > digits {
            m = nat::div_pow10(&m, d - digits).0;
            e += (d - digits) as i64;
        }
        Approx { m, e }
    }
    /// The digits of the value rounded (half away from zero) to `rscale`
    /// fraction digits.
    fn round(&self, rscale: u32) -> Vec<u8> {
        let s = self.e + rscale as i64;
        if s >= 0 {
            return nat::to_digits(&nat::mul_pow10(&self.m, s as usize));
        }
        let (q, dropped) = nat::div_pow10(&self.m, (-s) as usize);
        nat::to_digits(&if dropped.half { nat::add_small(&q, 1) } else { q })
    }
    /// The digits of `1 / self` rounded (half away from zero) to `rscale` fraction digits.
    fn recip_round(&self, rscale: u32) -> Vec<u8> {
        // round(10^(rscale - e) / m) from one more digit: floor(10^(k) / m), k = rscale - e + 1.
        let k = rscale as i64 - self.e + 1;
        if k < 0 {
            return Vec::new();
        }
        let (q10, _) = nat::divmod(&nat::pow10(k as usize), &self.m);
        let (q, last) = nat::divmod_small(&q10, 10);
        nat::to_digits(&if last >= 5 { nat::add_small(&q, 1) } else { q })
    }
}

/// log10 of a nonzero finite value's magnitude, from its leading 17 digits.
fn log10_abs(x: &Numeric) -> f64 {
    let d = x.digits();
    let lead = &d[..d.len().min(17)];
    let t = lead.iter().fold(0f64, |a, &x| a * 10.0 + x as f64);
    t.log10() + (d.len() - lead.len()) as f64 - x.dscale() as f64
}

/// x ^ n for an integral n (PostgreSQL's power_var_int): at least 16 digits
/// after the point (and the base's display scale).
fn power_int(x: &Numeric, n: i64, ck: &dyn Interrupts) -> Result<Numeric> {
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
    // f ~ log10 |x^n|: its integral part + 1 is the result's digit count
    // before the point.
    let f = n as f64 * log10_abs(x);
    if f > MAX_INT_DIGITS as f64 + 1.0 {
        return Err(overflow());
    }
    if f + 1.0 < -(rscale as f64) {
        return Ok(Numeric::finite(false, Vec::new(), rscale));
    }
    // The significant digits the rounded result needs, plus guard digits for
    // the truncation error of up to ~2 log2 |n| multiplications (it grows
    // like |n| times one truncation's).
    let m = n.unsigned_abs();
    let guard = (m as f64).log10().ceil() as i64 + 6;
    let digits = (f.floor() as i64 + 1 + rscale as i64 + guard).max(guard) as usize;
    let mut base = Approx::of(&x.abs());
    let mut acc: Option<Approx> = None;
    let mut e = m;
    loop {
        ck.check()?;
        if e & 1 == 1 {
            acc = Some(match acc {
                None => Approx { m: base.m.clone(), e: base.e },
                Some(a) => a.mul(&base, digits),
            });
        }
        e >>= 1;
        if e == 0 {
            break;
        }
        base = base.mul(&base, digits);
    }
    let p = acc.unwrap_or(Approx { m: vec![1], e: 0 });
    let mag = if n < 0 { p.recip_round(rscale) } else { p.round(rscale) };
    let neg = x.is_neg() && m % 2 == 1;
    Numeric::check(Numeric::finite(neg, mag, rscale))
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

pub fn exp_fn(a: &[Value], ck: &dyn Interrupts) -> Result<Value> {
    Ok(Value::Numeric(arg(&a[0])?.exp(ck)?))
}

pub fn ln_fn(a: &[Value], ck: &dyn Interrupts) -> Result<Value> {
    Ok(Value::Numeric(arg(&a[0])?.ln(ck)?))
}

/// log(x) (base 10) and log(b, x).
pub fn log_fn(a: &[Value], ck: &dyn Interrupts) -> Result<Value> {
    Ok(Value::Numeric(match a {
        [x] => Numeric::log(&num("10"), &arg(x)?, ck)?,
        [b, x] => Numeric::log(&arg(b)?, &arg(x)?, ck)?,
        _ => return Err(SqlError::internal("log arity")),
    }))
}

pub fn power_fn(a: &[Value], ck: &dyn Interrupts) -> Result<Value> {
    Ok(Value::Numeric(arg(&a[0])?.power(&arg(&a[1])?, ck)?))
}

/// width_bucket(operand, b1, b2, count) over numeric.
pub fn width_bucket_fn(a: &[Value]) -> Result<Value> {
    let (op, b1, b2) = (arg(&a[0])?, arg(&a[1])?, arg(&a[2])?);
    let count = crate::types::arg_int(&a[3]);
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

/// factorial(bigint): the product of 2..=n as a balanced tree of products
/// (operands of similar length, so that Karatsuba applies).
pub fn factorial_fn(a: &[Value], ck: &dyn Interrupts) -> Result<Value> {
    let n = crate::types::arg_int(&a[0]);
    if n < 0 {
        return Err(SqlError::new(b"22023", "factorial of a negative number is undefined"));
    }
    if n > 32177 {
        return Err(overflow());
    }
    fn product(lo: u64, hi: u64, ck: &dyn Interrupts) -> Result<Nat> {
        if hi.saturating_sub(lo) < 32 {
            let mut acc: Nat = vec![1];
            for i in lo..hi {
                acc = nat::mul_small(&acc, i as u32);
            }
            return Ok(acc);
        }
        ck.check()?;
        let mid = lo + (hi - lo) / 2;
        Ok(nat::mul(&product(lo, mid, ck)?, &product(mid, hi, ck)?))
    }
    let p = product(2, n as u64 + 1, ck)?;
    Ok(Value::Numeric(Numeric::finite(false, nat::to_digits(&p), 0)))
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
            let x = crate::types::arg_float(v);
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
        let ck = &crate::errors::NoInterrupts;
        assert_eq!(n("1").exp(ck).unwrap().to_text(), "2.7182818284590452");
        assert_eq!(n("2").ln(ck).unwrap().to_text(), "0.6931471805599453");
        assert_eq!(n("10").ln(ck).unwrap().to_text(), "2.3025850929940457");
        assert_eq!(Numeric::log(&n("10"), &n("1000"), ck).unwrap().to_text(), "3.0000000000000000");
        assert_eq!(Numeric::log(&n("2"), &n("64"), ck).unwrap().to_text(), "6.0000000000000000");
        assert_eq!(n("2").power(&n("10"), ck).unwrap().to_text(), "1024.0000000000000000");
        assert_eq!(n("2").power(&n("0.5"), ck).unwrap().to_text(), "1.4142135623730950");
        assert_eq!(n("0").ln(ck).unwrap_err().message, "cannot take logarithm of zero");
    }

    #[test]
    fn limits_as_postgres() {
        let ck = &crate::errors::NoInterrupts;
        // PostgreSQL 15: exp overflows from 6000, a non-integral power from y ln x > 6020.
        assert_eq!(n("6000").exp(ck).unwrap_err().message, "value overflows numeric format");
        assert_eq!(n("-6000").exp(ck).unwrap().to_text(), format!("0.{}", "0".repeat(1000)));
        assert_eq!(n("2.5").power(&n("14000.5"), ck).unwrap_err().sqlstate(), "22003");
        assert_eq!(n("0.5").power(&n("50000.5"), ck).unwrap().to_text(), format!("0.{}", "0".repeat(1000)));
        // Integral powers: exact when the digits allow, zero below the scale.
        let p = n("10").power(&n("131071"), ck).unwrap().to_text();
        assert_eq!(p, format!("1{}.{}", "0".repeat(131071), "0".repeat(16)));
        assert_eq!(n("10").power(&n("131072"), ck).unwrap_err().sqlstate(), "22003");
        assert_eq!(n("3").power(&n("-200000"), ck).unwrap().to_text(), "0.0000000000000000");
        assert_eq!(n("3").power(&n("-5"), ck).unwrap().to_text(), "0.0041152263374486");
        assert_eq!(n("-2").power(&n("3"), ck).unwrap().to_text(), "-8.0000000000000000");
        assert_eq!(n("1.1").power(&n("100"), ck).unwrap().to_text(), "13780.6123398222701841");
        let f = factorial_fn(&[Value::Int8(25)], ck).unwrap();
        assert_eq!(crate::types::output(&f).unwrap(), "15511210043330985984000000");
        for (n, want) in [(0, "1"), (1, "1"), (2, "2"), (33, "8683317618811886495518194401280000000")] {
            assert_eq!(crate::types::output(&factorial_fn(&[Value::Int8(n)], ck).unwrap()).unwrap(), want);
        }
    }
}
