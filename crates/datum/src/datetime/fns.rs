//! Date/time functions called through `functions::BUILTINS`: age, justify_*,
//! make_date/make_time/make_timestamp[tz]/make_interval, date_bin, isfinite,
//! and the interval aggregate steps (sum/avg of interval).

use super::*;

fn iv_range() -> SqlError {
    SqlError::new(b"22015", "interval out of range")
}

fn interval(v: &Value) -> Interval {
    match v {
        Value::Interval(iv) => *iv,
        _ => Interval { micros: 0, days: 0, months: 0 },
    }
}

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

fn float(v: &Value) -> f64 {
    match v {
        Value::Float8(f) => *f,
        Value::Float4(f) => *f as f64,
        v => v.as_i64().unwrap_or(0) as f64,
    }
}

// ---- justify ------------------------------------------------------------------

/// Moves one day across so that the days and the time of day have one sign.
fn days_and_time_agree(r: &mut Interval) {
    if r.days > 0 && r.micros < 0 {
        r.micros += USECS_PER_DAY;
        r.days -= 1;
    } else if r.days < 0 && r.micros > 0 {
        r.micros -= USECS_PER_DAY;
        r.days += 1;
    }
}

/// Whole days out of the microseconds; signs made to agree.
fn justify_hours_iv(iv: Interval) -> Result<Interval> {
    let mut r = iv;
    let whole = r.micros / USECS_PER_DAY;
    r.micros -= whole * USECS_PER_DAY;
    r.days = r.days.checked_add(i32::try_from(whole).map_err(|_| iv_range())?).ok_or_else(iv_range)?;
    days_and_time_agree(&mut r);
    Ok(r)
}

/// Whole 30-day months out of the days; signs made to agree.
fn justify_days_iv(iv: Interval) -> Result<Interval> {
    let mut r = iv;
    let whole = r.days / 30;
    r.days -= whole * 30;
    r.months = r.months.checked_add(whole).ok_or_else(iv_range)?;
    if r.months > 0 && r.days < 0 {
        r.days += 30;
        r.months -= 1;
    } else if r.months < 0 && r.days > 0 {
        r.days -= 30;
        r.months += 1;
    }
    Ok(r)
}

pub fn justify_hours(a: &[Value]) -> Result<Value> {
    justify_hours_iv(interval(&a[0])).map(Value::Interval)
}

pub fn justify_days(a: &[Value]) -> Result<Value> {
    justify_days_iv(interval(&a[0])).map(Value::Interval)
}

pub fn justify_interval(a: &[Value]) -> Result<Value> {
    let iv = interval(&a[0]);
    let mut r = iv;
    let whole_days = r.micros / USECS_PER_DAY;
    r.micros -= whole_days * USECS_PER_DAY;
    r.days = r.days.checked_add(i32::try_from(whole_days).map_err(|_| iv_range())?).ok_or_else(iv_range)?;
    let whole_months = r.days / 30;
    r.days -= whole_months * 30;
    r.months = r.months.checked_add(whole_months).ok_or_else(iv_range)?;
    if r.months > 0 && (r.days < 0 || (r.days == 0 && r.micros < 0)) {
        r.days += 30;
        r.months -= 1;
    } else if r.months < 0 && (r.days > 0 || (r.days == 0 && r.micros > 0)) {
        r.days -= 30;
        r.months += 1;
    }
    days_and_time_agree(&mut r);
    Ok(Value::Interval(r))
}

// ---- age --------------------------------------------------------------------

/// Field-wise difference of two local timestamps, computed on the absolute
/// value and borrowing downward as PostgreSQL's age does: a borrowed month is
/// as long as the second argument's month (the first's when t1 < t2).
fn age_local(t1: i64, t2: i64) -> Result<Interval> {
    if [t1, t2].iter().any(|t| *t == DT_NOEND || *t == DT_NOBEGIN) {
        return Err(SqlError::new(b"22008", "timestamp out of range"));
    }
    let split = |t: i64| {
        let (d, us) = ts_parts(t);
        let (y, m, dd) = civil_from_days(d);
        (y, m as i64, dd as i64, us)
    };
    let (y1, m1, d1, us1) = split(t1);
    let (y2, m2, d2, us2) = split(t2);
    let neg = t1 < t2;
    let s = if neg { -1 } else { 1 };
    let mut us = s * (us1 - us2);
    let mut mday = s * (d1 - d2);
    let mut mon = s * (m1 - m2);
    let mut year = s * (y1 - y2);
    while us < 0 {
        us += USECS_PER_DAY;
        mday -= 1;
    }
    while mday < 0 {
        let (y, m) = if neg { (y1, m1) } else { (y2, m2) };
        mday += days_in_month(y, m as u32) as i64;
        mon -= 1;
    }
    while mon < 0 {
        mon += 12;
        year -= 1;
    }
    let months = s * (year * 12 + mon);
    let days = s * mday;
    Ok(Interval {
        months: i32::try_from(months).map_err(|_| iv_range())?,
        days: i32::try_from(days).map_err(|_| iv_range())?,
        micros: s * us,
    })
}

pub fn age_timestamp(a: &[Value]) -> Result<Value> {
    let (Value::Timestamp(x), Value::Timestamp(y)) = (&a[0], &a[1]) else { return Err(SqlError::internal("age arguments")) };
    age_local(*x, *y).map(Value::Interval)
}

pub fn age_timestamptz(a: &[Value]) -> Result<Value> {
    let (Value::Timestamptz(x), Value::Timestamptz(y)) = (&a[0], &a[1]) else { return Err(SqlError::internal("age arguments")) };
    age_local(timestamptz_to_timestamp(*x), timestamptz_to_timestamp(*y)).map(Value::Interval)
}

/// age(ts) = age(current_date, ts).
pub fn age_from_today(a: &[Value]) -> Result<Value> {
    let today = local_midnight_today();
    match &a[0] {
        Value::Timestamp(t) => age_local(today, *t).map(Value::Interval),
        Value::Timestamptz(t) => age_local(today, timestamptz_to_timestamp(*t)).map(Value::Interval),
        _ => Err(SqlError::internal("age argument")),
    }
}

// ---- make_* -----------------------------------------------------------------

fn date_from_fields(y: i64, m: i64, d: i64) -> Result<i64> {
    let bad = || SqlError::new(b"22008", format!("date field value out of range: {y}-{m:02}-{d:02}"));
    if y == 0 || !(1..=12).contains(&m) || d < 1 || d > days_in_month(if y < 0 { y + 1 } else { y }, m as u32) as i64 {
        return Err(bad());
    }
    // Negative years are BC: -1 is 1 BC (astronomical 0).
    let days = days_from_civil(if y < 0 { y + 1 } else { y }, m as u32, d as u32);
    if !(MIN_DATE_DAYS..END_DATE_DAYS).contains(&days) {
        return Err(SqlError::new(b"22008", format!("date out of range: {y}-{m:02}-{d:02}")));
    }
    Ok(days)
}

fn time_from_fields(h: i64, mi: i64, sec: f64) -> Result<i64> {
    let bad = || SqlError::new(b"22008", format!("time field value out of range: {h}:{mi:02}:{}", float8_text(sec)));
    if !(0..=24).contains(&h) || !(0..=59).contains(&mi) || !(0.0..=60.0).contains(&sec) || !sec.is_finite() {
        return Err(bad());
    }
    let us = (h * 3600 + mi * 60) * USECS_PER_SEC + (sec * 1e6).round() as i64;
    if us > USECS_PER_DAY {
        return Err(bad());
    }
    Ok(us)
}

/// Seconds as PostgreSQL's messages print them (`%02g`).
fn float8_text(f: f64) -> String {
    let s = crate::types::float8_out(f);
    if s.len() < 2 { format!("0{s}") } else { s }
}

pub fn make_date(a: &[Value]) -> Result<Value> {
    Ok(Value::Date(date_from_fields(int(&a[0]), int(&a[1]), int(&a[2]))? as i32))
}

pub fn make_time(a: &[Value]) -> Result<Value> {
    Ok(Value::Time(time_from_fields(int(&a[0]), int(&a[1]), float(&a[2]))?))
}

fn make_ts_local(a: &[Value]) -> Result<i64> {
    let (y, m, d) = (int(&a[0]), int(&a[1]), int(&a[2]));
    let (h, mi, sec) = (int(&a[3]), int(&a[4]), float(&a[5]));
    if y == 0 || !(1..=12).contains(&m) || d < 1 || d > days_in_month(if y < 0 { y + 1 } else { y }, m as u32) as i64 {
        return Err(SqlError::new(b"22008", format!("date field value out of range: {y}-{m:02}-{d:02}")));
    }
    let days = date_from_fields(y, m, d)?;
    let t = time_from_fields(h, mi, sec)?;
    check_ts(days * USECS_PER_DAY + t).map_err(|_| {
        SqlError::new(b"22008", format!("timestamp out of range: {y}-{m:02}-{d:02} {h}:{mi:02}:{}", float8_text(sec)))
    })
}

pub fn make_timestamp(a: &[Value]) -> Result<Value> {
    Ok(Value::Timestamp(make_ts_local(a)?))
}

pub fn make_timestamptz(a: &[Value]) -> Result<Value> {
    Ok(Value::Timestamptz(timestamp_to_timestamptz(make_ts_local(a)?)))
}

pub fn make_timestamptz_zone(a: &[Value]) -> Result<Value> {
    let local = make_ts_local(a)?;
    let name = text_arg(&a[6]);
    let zone = parse_zone_setting(&name)
        .or_else(|| zone_word(&name))
        .ok_or_else(|| SqlError::new(b"22023", format!("time zone \"{name}\" not recognized")))?;
    Ok(Value::Timestamptz(local - offset_for_local(&zone, local) as i64 * USECS_PER_SEC))
}

/// make_interval(years, months, weeks, days, hours, mins, secs): missing
/// trailing arguments are 0.
pub fn make_interval(a: &[Value]) -> Result<Value> {
    let get = |i: usize| a.get(i).map(int).unwrap_or(0);
    let secs = a.get(6).map(float).unwrap_or(0.0);
    if !secs.is_finite() {
        return Err(iv_range());
    }
    let months = get(0).checked_mul(12).and_then(|y| y.checked_add(get(1))).ok_or_else(iv_range)?;
    let days = get(2).checked_mul(7).and_then(|w| w.checked_add(get(3))).ok_or_else(iv_range)?;
    let micros = (get(4) as f64 * 3600.0 + get(5) as f64 * 60.0 + secs) * 1e6;
    if micros.abs() > 9.2e18 {
        return Err(iv_range());
    }
    Ok(Value::Interval(Interval {
        months: i32::try_from(months).map_err(|_| iv_range())?,
        days: i32::try_from(days).map_err(|_| iv_range())?,
        micros: micros.round() as i64,
    }))
}

// ---- date_bin, isfinite ------------------------------------------------------

/// date_bin(stride, source, origin): the start of the stride-wide bin of
/// `source`, bins aligned on `origin`.
pub fn date_bin(a: &[Value]) -> Result<Value> {
    let stride = interval(&a[0]);
    let (src, origin, tz) = match (&a[1], &a[2]) {
        (Value::Timestamp(s), Value::Timestamp(o)) => (*s, *o, false),
        (Value::Timestamptz(s), Value::Timestamptz(o)) => (*s, *o, true),
        _ => return Err(SqlError::internal("date_bin arguments")),
    };
    if src == DT_NOEND || src == DT_NOBEGIN {
        return Err(SqlError::new(b"0A000", "timestamps cannot be binned into infinite intervals"));
    }
    if stride.months != 0 {
        return Err(SqlError::new(b"0A000", "timestamps cannot be binned into intervals containing months or years"));
    }
    let step = (stride.days as i64).checked_mul(USECS_PER_DAY).and_then(|d| d.checked_add(stride.micros)).ok_or_else(iv_range)?;
    if step <= 0 {
        return Err(SqlError::new(b"22023", "stride must be greater than zero"));
    }
    let diff = src.checked_sub(origin).ok_or_else(|| SqlError::new(b"22008", "interval out of range"))?;
    let mut bin = diff / step * step;
    if diff < 0 && diff % step != 0 {
        bin -= step;
    }
    let r = check_ts(origin + bin)?;
    Ok(if tz { Value::Timestamptz(r) } else { Value::Timestamp(r) })
}

pub fn isfinite(a: &[Value]) -> Result<Value> {
    Ok(Value::Bool(match &a[0] {
        Value::Date(d) => *d != i32::MAX && *d != i32::MIN,
        Value::Timestamp(t) | Value::Timestamptz(t) => *t != DT_NOEND && *t != DT_NOBEGIN,
        _ => true,
    }))
}

// ---- sum(interval), avg(interval) --------------------------------------------

/// The running sum of sum/avg over intervals.
pub fn interval_agg_add(acc: Value, v: &Value) -> Result<Value> {
    let v = interval(v);
    Ok(Value::Interval(match acc {
        Value::Interval(s) => iv_add(s, v)?,
        _ => v,
    }))
}

/// avg(interval): the sum divided by the count, as interval / float8 does.
pub fn interval_avg_final(sum: Value, n: i64) -> Result<Value> {
    if sum.is_null() || n == 0 {
        return Ok(Value::Null);
    }
    call(DtFunc::IntervalDivFloat, &[sum, Value::Float8(n as f64)])
}

/// interval * k (or / k when `divide`): each field scaled, the fractions of
/// months cascading into days (30 per month) and of days into time, the
/// carried seconds rounded to microseconds first, as PostgreSQL computes it
/// (dividing, not multiplying by the reciprocal, so that avg of three months
/// is exactly one month).
pub fn interval_scale(iv: Interval, k: f64, divide: bool) -> Result<Interval> {
    let op = |x: f64| if divide { x / k } else { x * k };
    let months_f = op(iv.months as f64);
    let days_f = op(iv.days as f64);
    if !months_f.is_finite() || !days_f.is_finite() || months_f.abs() > i32::MAX as f64 || days_f.abs() > i32::MAX as f64 {
        return Err(iv_range());
    }
    let months = months_f.trunc() as i32;
    let mut days = days_f.trunc() as i32;
    let month_rem_days = ((months_f - months as f64) * 30.0 * 1e6).round_ties_even() / 1e6;
    let mut sec_rem = (days_f - days as f64 + month_rem_days - month_rem_days.trunc()) * 86_400.0;
    sec_rem = (sec_rem * 1e6).round_ties_even() / 1e6;
    if sec_rem.abs() >= 86_400.0 {
        let whole = (sec_rem / 86_400.0).trunc();
        days += whole as i32;
        sec_rem -= whole * 86_400.0;
    }
    days = days.checked_add(month_rem_days.trunc() as i32).ok_or_else(iv_range)?;
    let micros = (op(iv.micros as f64) + sec_rem * 1e6).round_ties_even();
    if !micros.is_finite() || micros.abs() > 9.2e18 {
        return Err(iv_range());
    }
    Ok(Interval { months, days, micros: micros as i64 })
}
