//! Interval input in the forms beyond PostgreSQL's own (`1 day 02:00:00`,
//! `@ 1 day ago`, which `interval_in` reads):
//!
//! - ISO 8601 with designators: `P1Y2M3DT4H5M6.5S`, `P1W`, `PT-1H30M`
//!   (each number signed on its own; fractions spill down as in the other
//!   forms: 1.5 years = 1 year 6 months);
//! - ISO 8601's alternative form: `P0001-02-03T04:05:06`;
//! - SQL standard year-month fields `1-2` (`-1-2`: both negative), read by
//!   `interval_in` through [`year_month`].

use super::*;

/// Sums of the fields read, before the fractions spill down.
#[derive(Default)]
pub(super) struct Acc {
    pub months: f64,
    pub days: f64,
    pub micros: f64,
}

impl Acc {
    /// The interval, fractions of months going to days (30 per month) and of
    /// days to microseconds; 22015 when a field leaves its range.
    pub fn finish(mut self) -> Result<Interval> {
        let whole_months = self.months.trunc();
        self.days += (self.months - whole_months) * 30.0;
        let whole_days = self.days.trunc();
        self.micros += (self.days - whole_days) * USECS_PER_DAY as f64;
        if whole_months.abs() > i32::MAX as f64 || whole_days.abs() > i32::MAX as f64 || self.micros.abs() > 9.2e18 {
            return Err(SqlError::new(b"22015", "interval out of range"));
        }
        Ok(Interval { micros: self.micros.round() as i64, days: whole_days as i32, months: whole_months as i32 })
    }
}

/// `[+-]Y-M`: (years, months) with one sign for both; `None` if the token is
/// not of that form, `Err` for months past 11.
pub(super) fn year_month(tok: &str, whole: &str) -> Option<Result<f64>> {
    let (neg, body) = match tok.as_bytes().first()? {
        b'-' => (true, &tok[1..]),
        b'+' => (false, &tok[1..]),
        _ => (false, tok),
    };
    let (y, m) = body.split_once('-')?;
    if y.is_empty() || m.is_empty() || !y.bytes().all(|b| b.is_ascii_digit()) || !m.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (y, m): (f64, f64) = (y.parse().ok()?, m.parse().ok()?);
    if m > 11.0 {
        return Some(Err(SqlError::new(b"22015", format!("interval field value out of range: \"{whole}\""))));
    }
    let months = y * 12.0 + m;
    Some(Ok(if neg { -months } else { months }))
}

/// An ISO 8601 duration (`P...`); `None` when `s` does not start with P.
pub(super) fn iso8601(s: &str) -> Option<Result<Interval>> {
    let t = s.trim();
    let body = t.strip_prefix(['P', 'p'])?;
    let bad = || syntax(Type::Interval, s);
    if body.is_empty() {
        return Some(Err(bad()));
    }
    let mut acc = Acc::default();
    let (date, time) = match body.find(['T', 't']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let r = (|| -> Result<Interval> {
        if date.contains('-') && date.bytes().next().is_some_and(|b| b.is_ascii_digit()) && !date.contains(['Y', 'y', 'M', 'm', 'D', 'd', 'W', 'w']) {
            // Alternative form: YYYY-MM-DD
            let f: Vec<&str> = date.split('-').collect();
            let vals: Vec<f64> = f.iter().map(|x| x.parse::<f64>().map_err(|_| bad())).collect::<Result<_>>()?;
            let [y, m, d] = match vals.as_slice() {
                [y] => [*y, 0.0, 0.0],
                [y, m] => [*y, *m, 0.0],
                [y, m, d] => [*y, *m, *d],
                _ => return Err(bad()),
            };
            acc.months += y * 12.0 + m;
            acc.days += d;
        } else {
            for (v, unit) in designated(date).ok_or_else(bad)? {
                match unit {
                    'y' => acc.months += v * 12.0,
                    'm' => acc.months += v,
                    'w' => acc.days += v * 7.0,
                    'd' => acc.days += v,
                    _ => return Err(bad()),
                }
            }
        }
        if let Some(time) = time {
            if time.contains(':') {
                let f: Vec<&str> = time.split(':').collect();
                let vals: Vec<f64> = f.iter().map(|x| x.parse::<f64>().map_err(|_| bad())).collect::<Result<_>>()?;
                let secs = match vals.as_slice() {
                    [h, m] => h * 3600.0 + m * 60.0,
                    [h, m, s] => h * 3600.0 + m * 60.0 + s,
                    _ => return Err(bad()),
                };
                acc.micros += secs * 1e6;
            } else {
                for (v, unit) in designated(time).ok_or_else(bad)? {
                    match unit {
                        'h' => acc.micros += v * 3.6e9,
                        'm' => acc.micros += v * 6e7,
                        's' => acc.micros += v * 1e6,
                        _ => return Err(bad()),
                    }
                }
            }
        }
        Acc { months: acc.months, days: acc.days, micros: acc.micros }.finish()
    })();
    Some(r)
}

/// `1Y-2M3.5D` -> [(1, 'y'), (-2, 'm'), (3.5, 'd')]; `None` on bad syntax.
fn designated(s: &str) -> Option<Vec<(f64, char)>> {
    let mut out = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let end = rest.find(|c: char| c.is_ascii_alphabetic())?;
        let v: f64 = rest[..end].parse().ok()?;
        let unit = rest[end..].chars().next()?.to_ascii_lowercase();
        out.push((v, unit));
        rest = &rest[end + 1..];
    }
    Some(out)
}

// ---- field qualifiers (`interval '1' day`, `interval hour to minute`) --------

/// The range bits of an interval typmod, as PostgreSQL numbers them
/// (`typmod = range << 16 | precision`; precision 0xFFFF = none).
pub mod range {
    pub const MONTH: i32 = 1 << 1;
    pub const YEAR: i32 = 1 << 2;
    pub const DAY: i32 = 1 << 3;
    pub const HOUR: i32 = 1 << 10;
    pub const MINUTE: i32 = 1 << 11;
    pub const SECOND: i32 = 1 << 12;
    pub const FULL: i32 = 0x7FFF;
}

/// (range, precision) of an interval typmod; `None` for -1 (no qualifier).
pub fn typmod_parts(typmod: i32) -> Option<(i32, i32)> {
    if typmod < 0 {
        return None;
    }
    Some(((typmod >> 16) & 0x7FFF, typmod & 0xFFFF))
}

pub fn make_typmod(range: i32, precision: Option<i32>) -> i32 {
    (range << 16) | precision.unwrap_or(0xFFFF)
}

/// The unit of the qualifier's last field (a bare number is read in it).
fn lowest_unit(range: i32) -> Option<&'static str> {
    use range::*;
    if range == FULL {
        return None;
    }
    Some(if range & SECOND != 0 {
        "second"
    } else if range & MINUTE != 0 {
        "minute"
    } else if range & HOUR != 0 {
        "hour"
    } else if range & DAY != 0 {
        "day"
    } else if range & MONTH != 0 {
        "month"
    } else {
        "year"
    })
}

/// interval input under a typmod: a bare number is in the qualifier's last
/// field (`'1' day`), `M:S` under MINUTE TO SECOND, `D H` under DAY TO HOUR/
/// MINUTE/SECOND; then [`adjust`].
pub fn interval_in_typmod(s: &str, typmod: i32) -> Result<Interval> {
    let Some((rng, _)) = typmod_parts(typmod) else { return interval_in(s) };
    let t = s.trim();
    let is_num = |x: &str| !x.is_empty() && x.parse::<f64>().is_ok() && x.bytes().any(|b| b.is_ascii_digit()) && !x.contains(['e', 'E', 'i', 'n', 'N', 'I']);
    let iv = match lowest_unit(rng) {
        Some(unit) if is_num(t) => interval_in(&format!("{t} {unit}"))?,
        Some(_) if rng == range::MINUTE | range::SECOND && t.matches(':').count() == 1 && !t.contains(' ') => {
            let (m, sec) = t.split_once(':').unwrap_or((t, "0"));
            interval_in(&format!("{m} minutes {sec} seconds")).map_err(|_| syntax(Type::Interval, s))?
        }
        Some(unit) if rng == range::DAY | range::HOUR => {
            let toks: Vec<&str> = t.split_ascii_whitespace().collect();
            match toks.as_slice() {
                [d, x] if is_num(d) && is_num(x) => interval_in(&format!("{d} days {x} {unit}s")).map_err(|_| syntax(Type::Interval, s))?,
                _ => interval_in(s)?,
            }
        }
        _ => interval_in(s)?,
    };
    adjust(iv, typmod)
}

/// Applies a typmod to an interval: fields below the qualifier's last one
/// dropped (toward zero), seconds rounded to the precision (half away from zero).
pub fn adjust(iv: Interval, typmod: i32) -> Result<Interval> {
    use range::*;
    let Some((rng, prec)) = typmod_parts(typmod) else { return Ok(iv) };
    let mut iv = iv;
    const HOUR_US: i64 = 3_600_000_000;
    const MINUTE_US: i64 = 60_000_000;
    if rng == YEAR {
        iv = Interval { months: iv.months / 12 * 12, days: 0, micros: 0 };
    } else if rng == MONTH || rng == YEAR | MONTH {
        iv = Interval { months: iv.months, days: 0, micros: 0 };
    } else if rng == DAY {
        iv.micros = 0;
    } else if rng == HOUR || rng == DAY | HOUR {
        iv.micros = iv.micros / HOUR_US * HOUR_US;
    } else if rng == MINUTE || rng == HOUR | MINUTE || rng == DAY | HOUR | MINUTE {
        iv.micros = iv.micros / MINUTE_US * MINUTE_US;
    }
    if (0..6).contains(&prec) {
        let scale = 10i64.pow(6 - prec as u32);
        let half = scale / 2;
        iv.micros = if iv.micros >= 0 { (iv.micros + half) / scale * scale } else { -((-iv.micros + half) / scale * scale) };
    }
    Ok(iv)
}
