//! Math functions and integer operators over int2/int4/int8/float4/float8, with
//! PostgreSQL's range errors. Each receives values of its declared types, so an
//! integer function sees one integer width and answers in it.

use super::{float, int, SetIter};
use ferrogres_datum::errors::{Result, SqlError};
use ferrogres_datum::types::{out_of_range, Type, Value};
use std::cell::Cell;

/// An integer result in the width of `like` (the first argument), or 22003.
fn int_like(like: &Value, r: i128) -> Result<Value> {
    Ok(match like {
        Value::Int2(_) => Value::Int2(i16::try_from(r).map_err(|_| out_of_range(Type::Int2))?),
        Value::Int4(_) => Value::Int4(i32::try_from(r).map_err(|_| out_of_range(Type::Int4))?),
        _ => Value::Int8(i64::try_from(r).map_err(|_| out_of_range(Type::Int8))?),
    })
}

fn f8(r: f64) -> Result<Value> {
    Ok(Value::Float8(r))
}

/// The overflow and underflow checks of float results (PostgreSQL's float_overflow_error).
fn checked(r: f64, inputs_finite: bool, zero_ok: bool) -> Result<Value> {
    if r.is_infinite() && inputs_finite {
        return Err(SqlError::new(b"22003", "value out of range: overflow"));
    }
    if r == 0.0 && !zero_ok {
        return Err(SqlError::new(b"22003", "value out of range: underflow"));
    }
    f8(r)
}

pub fn abs(a: &[Value]) -> Result<Value> {
    match &a[0] {
        Value::Float8(f) => f8(f.abs()),
        Value::Float4(f) => Ok(Value::Float4(f.abs())),
        v => int_like(v, (int(v) as i128).abs()),
    }
}

pub fn modulo(a: &[Value]) -> Result<Value> {
    let (x, y) = (int(&a[0]), int(&a[1]));
    if y == 0 {
        return Err(SqlError::new(b"22012", "division by zero"));
    }
    int_like(&a[0], if y == -1 { 0 } else { (x % y) as i128 })
}

pub fn round(a: &[Value]) -> Result<Value> {
    f8(float(&a[0]).round_ties_even())
}

pub fn trunc(a: &[Value]) -> Result<Value> {
    f8(float(&a[0]).trunc())
}

pub fn ceil(a: &[Value]) -> Result<Value> {
    f8(float(&a[0]).ceil())
}

pub fn floor(a: &[Value]) -> Result<Value> {
    f8(float(&a[0]).floor())
}

pub fn sign(a: &[Value]) -> Result<Value> {
    let x = float(&a[0]);
    f8(if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        0.0
    })
}

pub fn sqrt(a: &[Value]) -> Result<Value> {
    let x = float(&a[0]);
    if x < 0.0 {
        return Err(SqlError::new(b"2201F", "cannot take square root of a negative number"));
    }
    f8(x.sqrt())
}

/// Rust's cube root: correctly rounded, so it can differ from glibc's (which
/// PostgreSQL calls) in the last bit: cbrt(27) is 3 here, 3.0000000000000004 there.
pub fn cbrt(a: &[Value]) -> Result<Value> {
    f8(float(&a[0]).cbrt())
}

pub fn exp(a: &[Value]) -> Result<Value> {
    let x = float(&a[0]);
    if x.is_nan() {
        return f8(x);
    }
    checked(x.exp(), x.is_finite(), !x.is_finite())
}

fn log_check(x: f64) -> Result<()> {
    if x == 0.0 {
        return Err(SqlError::new(b"2201E", "cannot take logarithm of zero"));
    }
    if x < 0.0 {
        return Err(SqlError::new(b"2201E", "cannot take logarithm of a negative number"));
    }
    Ok(())
}

pub fn ln(a: &[Value]) -> Result<Value> {
    let x = float(&a[0]);
    log_check(x)?;
    f8(x.ln())
}

pub fn log10(a: &[Value]) -> Result<Value> {
    let x = float(&a[0]);
    log_check(x)?;
    f8(x.log10())
}

pub fn power(a: &[Value]) -> Result<Value> {
    let (x, y) = (float(&a[0]), float(&a[1]));
    if x.is_nan() {
        return f8(if y == 0.0 { 1.0 } else { f64::NAN });
    }
    if y.is_nan() {
        return f8(if x == 1.0 { 1.0 } else { f64::NAN });
    }
    if x == 0.0 && y < 0.0 {
        return Err(SqlError::new(b"2201F", "zero raised to a negative power is undefined"));
    }
    if x < 0.0 && y.is_finite() && y.floor() != y {
        return Err(SqlError::new(b"2201F", "a negative number raised to a non-integer power yields a complex result"));
    }
    let r = x.powf(y);
    let finite = x.is_finite() && y.is_finite();
    if r.is_infinite() && finite {
        return Err(SqlError::new(b"22003", "value out of range: overflow"));
    }
    if r == 0.0 && x != 0.0 && finite {
        return Err(SqlError::new(b"22003", "value out of range: underflow"));
    }
    f8(r)
}

pub fn pi(_: &[Value]) -> Result<Value> {
    f8(std::f64::consts::PI)
}

pub fn degrees(a: &[Value]) -> Result<Value> {
    let x = float(&a[0]);
    checked(x.to_degrees(), x.is_finite(), true)
}

pub fn radians(a: &[Value]) -> Result<Value> {
    let x = float(&a[0]);
    checked(x.to_radians(), x.is_finite(), true)
}

fn out_of_input_range() -> SqlError {
    SqlError::new(b"22003", "input is out of range")
}

/// sin/cos/tan/cot: NaN stays NaN; an infinite input is out of range.
fn trig(a: &[Value], fun: fn(f64) -> f64) -> Result<Value> {
    let x = float(&a[0]);
    if x.is_nan() {
        return f8(x);
    }
    if x.is_infinite() {
        return Err(out_of_input_range());
    }
    f8(fun(x))
}

pub fn sin(a: &[Value]) -> Result<Value> {
    trig(a, f64::sin)
}

pub fn cos(a: &[Value]) -> Result<Value> {
    trig(a, f64::cos)
}

pub fn tan(a: &[Value]) -> Result<Value> {
    trig(a, f64::tan)
}

pub fn cot(a: &[Value]) -> Result<Value> {
    trig(a, |x| 1.0 / x.tan())
}

pub fn asin(a: &[Value]) -> Result<Value> {
    let x = float(&a[0]);
    if !x.is_nan() && !(-1.0..=1.0).contains(&x) {
        return Err(out_of_input_range());
    }
    f8(x.asin())
}

pub fn acos(a: &[Value]) -> Result<Value> {
    let x = float(&a[0]);
    if !x.is_nan() && !(-1.0..=1.0).contains(&x) {
        return Err(out_of_input_range());
    }
    f8(x.acos())
}

pub fn atan(a: &[Value]) -> Result<Value> {
    f8(float(&a[0]).atan())
}

pub fn atan2(a: &[Value]) -> Result<Value> {
    f8(float(&a[0]).atan2(float(&a[1])))
}

pub fn sinh(a: &[Value]) -> Result<Value> {
    f8(float(&a[0]).sinh())
}

pub fn cosh(a: &[Value]) -> Result<Value> {
    f8(float(&a[0]).cosh())
}

pub fn tanh(a: &[Value]) -> Result<Value> {
    f8(float(&a[0]).tanh())
}

thread_local! {
    /// random()'s state (xorshift64*), per thread; seeded from the clock and the
    /// thread on first use, or by setseed().
    static SEED: Cell<u64> = const { Cell::new(0) };
}

fn next_random() -> f64 {
    SEED.with(|s| {
        let mut x = s.get();
        if x == 0 {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64);
            let here = &x as *const u64 as u64;
            x = (now ^ here.rotate_left(32)) | 1;
        }
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        s.set(x);
        // 53 random bits in [0, 1).
        (x.wrapping_mul(0x2545F4914F6CDD1D) >> 11) as f64 / (1u64 << 53) as f64
    })
}

pub fn random(_: &[Value]) -> Result<Value> {
    f8(next_random())
}

pub fn setseed(a: &[Value]) -> Result<Value> {
    let x = float(&a[0]);
    if !(-1.0..=1.0).contains(&x) {
        return Err(SqlError::new(
            b"22023",
            format!("setseed parameter {} is out of allowed range [-1,1]", ferrogres_datum::types::float8_out(x)),
        ));
    }
    let bits = ((x * 2147483647.0) as i64 as u64).wrapping_mul(0x9E3779B97F4A7C15) | 1;
    SEED.with(|s| s.set(bits));
    Ok(Value::Null)
}

fn gcd_u(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

pub fn gcd(a: &[Value]) -> Result<Value> {
    let (x, y) = (int(&a[0]) as i128, int(&a[1]) as i128);
    int_like(&a[0], gcd_u(x.unsigned_abs(), y.unsigned_abs()) as i128)
}

pub fn lcm(a: &[Value]) -> Result<Value> {
    let (x, y) = (int(&a[0]) as i128, int(&a[1]) as i128);
    if x == 0 || y == 0 {
        return int_like(&a[0], 0);
    }
    let g = gcd_u(x.unsigned_abs(), y.unsigned_abs()) as i128;
    int_like(&a[0], (x / g * y).abs())
}

pub fn width_bucket(a: &[Value]) -> Result<Value> {
    let (op, lo, hi, count) = (float(&a[0]), float(&a[1]), float(&a[2]), int(&a[3]));
    let e = |m: &str| SqlError::new(b"2201G", m.to_string());
    if count <= 0 {
        return Err(e("count must be greater than zero"));
    }
    if op.is_nan() || lo.is_nan() || hi.is_nan() {
        return Err(e("operand, lower bound, and upper bound cannot be NaN"));
    }
    if lo.is_infinite() || hi.is_infinite() {
        return Err(e("lower and upper bounds must be finite"));
    }
    if lo == hi {
        return Err(e("lower bound cannot equal upper bound"));
    }
    let c = count as f64;
    let r: i64 = if lo < hi {
        if op < lo {
            0
        } else if op >= hi {
            count + 1
        } else {
            ((op - lo) / (hi - lo) * c).floor() as i64 + 1
        }
    } else if op > lo {
        0
    } else if op <= hi {
        count + 1
    } else {
        ((lo - op) / (lo - hi) * c).floor() as i64 + 1
    };
    Ok(Value::Int4(i32::try_from(r).map_err(|_| out_of_range(Type::Int4))?))
}

pub fn and(a: &[Value]) -> Result<Value> {
    int_like(&a[0], (int(&a[0]) & int(&a[1])) as i128)
}

pub fn or(a: &[Value]) -> Result<Value> {
    int_like(&a[0], (int(&a[0]) | int(&a[1])) as i128)
}

pub fn xor(a: &[Value]) -> Result<Value> {
    int_like(&a[0], (int(&a[0]) ^ int(&a[1])) as i128)
}

pub fn not(a: &[Value]) -> Result<Value> {
    int_like(&a[0], !int(&a[0]) as i128)
}

/// `<<` as C on the platform PostgreSQL runs on: the count is taken modulo the
/// width of the computation (32 bits for int2 and int4, 64 for int8); int2
/// keeps the low 16 bits.
pub fn shl(a: &[Value]) -> Result<Value> {
    let n = int(&a[1]) as u32;
    Ok(match &a[0] {
        Value::Int2(x) => Value::Int2((*x as i32).wrapping_shl(n) as i16),
        Value::Int4(x) => Value::Int4(x.wrapping_shl(n)),
        v => Value::Int8(int(v).wrapping_shl(n)),
    })
}

pub fn shr(a: &[Value]) -> Result<Value> {
    let n = int(&a[1]) as u32;
    Ok(match &a[0] {
        Value::Int2(x) => Value::Int2((*x as i32).wrapping_shr(n) as i16),
        Value::Int4(x) => Value::Int4(x.wrapping_shr(n)),
        v => Value::Int8(int(v).wrapping_shr(n)),
    })
}

/// generate_series(start, stop [, step]) over int4 or int8 (the argument's width).
pub fn series(a: &[Value]) -> Result<SetIter> {
    let (start, stop) = (int(&a[0]), int(&a[1]));
    let step = a.get(2).map_or(1, int);
    if step == 0 {
        return Err(SqlError::new(b"22023", "step size cannot equal zero"));
    }
    let wide = matches!(a[0], Value::Int8(_));
    let mut cur = Some(start);
    Ok(Box::new(std::iter::from_fn(move || {
        let c = cur?;
        if (step > 0 && c > stop) || (step < 0 && c < stop) {
            return None;
        }
        // Stop after the last value without overflowing.
        cur = c.checked_add(step).filter(|n| wide || i32::try_from(*n).is_ok());
        Some(Ok(if wide { Value::Int8(c) } else { Value::Int4(c as i32) }))
    })))
}
