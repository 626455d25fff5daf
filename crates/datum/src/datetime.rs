//! Date/time types: `date`, `time`, `timestamp`, `timestamptz` and `interval`,
//! with PostgreSQL 15's representations, text forms (ISO and IntervalStyle
//! postgres here; the other DateStyles and IntervalStyles in
//! [`crate::datestyle`]), error texts, operators and functions.
//!
//! | type | oid | stored as | binary wire format |
//! |---|---|---|---|
//! | date | 1082 | i32 days since 2000-01-01 | int4 |
//! | time | 1083 | i64 microseconds since midnight | int8 |
//! | timestamp | 1114 | i64 microseconds since 2000-01-01 00:00 | int8 |
//! | timestamptz | 1184 | i64 microseconds since 2000-01-01 00:00 UTC | int8 |
//! | timetz | 1266 | (i64 us since midnight, i32 zone in seconds west of UTC), 12 bytes, align d | int8, int4 |
//! | interval | 1186 | (i64 us, i32 days, i32 months), 16 bytes, align d | int8, int4, int4 |
//!
//! `infinity` / `-infinity` are `i64::MAX` / `i64::MIN` (date: `i32::MAX` / `i32::MIN`).
//!
//! Session state the type I/O functions need (the TimeZone setting, the
//! transaction's start time for `now`; DateStyle in `datestyle`) lives in a per-thread [`DtSession`]: every
//! connection runs on its own thread, and the session refreshes it
//! ([`sync_timezone`], [`set_xact_start`]) before it analyzes or runs a statement,
//! so `types::input`/`output` keep their context-free signatures.

use crate::errors::{Result, SqlError};
use crate::types::{Type, Value};
use std::cell::RefCell;

pub mod fns;
mod input;
mod interval_input;
pub use interval_input::{adjust as interval_adjust, interval_in_typmod, make_typmod as interval_typmod, range as interval_range};

pub const USECS_PER_SEC: i64 = 1_000_000;
pub const USECS_PER_DAY: i64 = 86_400 * USECS_PER_SEC;
/// Days from 1970-01-01 to 2000-01-01.
const UNIX_TO_PG_DAYS: i64 = 10_957;
pub const DT_NOBEGIN: i64 = i64::MIN;
pub const DT_NOEND: i64 = i64::MAX;
/// Julian day limits as PostgreSQL has them (4714-11-24 BC .. 294277-01-01 for
/// timestamps; dates go to 5874898-01-01).
const MIN_DATE_DAYS: i64 = -2_451_545; // 4714-11-24 BC
const END_TS_DAYS: i64 = 106_741_034; // 294277-01-01
const END_DATE_DAYS: i64 = 2_145_031_948; // 5874898-01-01

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Interval {
    pub micros: i64,
    pub days: i32,
    pub months: i32,
}

impl Interval {
    /// The value interval comparison orders by (30-day months, 24-hour days).
    pub fn span(&self) -> i128 {
        (self.months as i128 * 30 + self.days as i128) * USECS_PER_DAY as i128 + self.micros as i128
    }
    pub fn to_bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.micros.to_le_bytes());
        b[8..12].copy_from_slice(&self.days.to_le_bytes());
        b[12..].copy_from_slice(&self.months.to_le_bytes());
        b
    }
    pub fn from_bytes(b: &[u8]) -> Option<Interval> {
        if b.len() != 16 {
            return None;
        }
        Some(Interval {
            micros: i64::from_le_bytes(b[..8].try_into().ok()?),
            days: i32::from_le_bytes(b[8..12].try_into().ok()?),
            months: i32::from_le_bytes(b[12..].try_into().ok()?),
        })
    }
}

// ---- session state -------------------------------------------------------------

#[derive(Clone, Debug)]
pub enum Zone {
    /// Seconds east of UTC.
    Fixed(i32),
    Named(chrono_tz::Tz),
}

/// Per-connection date/time context (see the module doc).
pub struct DtSession {
    pub tz_name: String,
    pub zone: Zone,
    pub xact_start: i64,
    pub stmt_start: i64,
    /// Input read the clock (`'now'`, `'today'`, ...) since the last
    /// [`take_clock_read`]: the plan cache keeps no plan that folded such a
    /// value (`ferrogres_sql::plan_cache::mark_uncacheable`).
    pub clock_read: bool,
}

thread_local! {
    static SESSION: RefCell<DtSession> = RefCell::new(DtSession {
        tz_name: "UTC".into(),
        zone: Zone::Fixed(0),
        xact_start: 0,
        stmt_start: 0,
        clock_read: false,
    });
}

/// Input depending on when it is read was parsed (see [`DtSession::clock_read`]).
pub fn mark_clock_read() {
    SESSION.with(|s| s.borrow_mut().clock_read = true);
}

/// Whether input read the clock since the last call; clears the mark.
pub fn take_clock_read() -> bool {
    SESSION.with(|s| std::mem::replace(&mut s.borrow_mut().clock_read, false))
}

/// The current wall-clock time as a timestamp (microseconds since 2000-01-01 UTC).
pub fn clock_now() -> i64 {
    system_time_to_timestamptz(std::time::SystemTime::now())
}

/// A wall-clock instant as a timestamptz (microseconds since 2000-01-01 UTC).
pub fn system_time_to_timestamptz(t: std::time::SystemTime) -> i64 {
    let d = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    d.as_micros() as i64 - UNIX_TO_PG_DAYS * USECS_PER_DAY
}

/// A transaction started now: `now()` answers this until the next one.
pub fn set_xact_start() {
    let t = clock_now();
    SESSION.with(|s| {
        let mut s = s.borrow_mut();
        s.xact_start = t;
        s.stmt_start = t;
    });
}

/// A statement started now (statement_timestamp()).
pub fn set_stmt_start() {
    let t = clock_now();
    SESSION.with(|s| s.borrow_mut().stmt_start = t);
}

pub fn xact_start() -> i64 {
    SESSION.with(|s| {
        let s = s.borrow();
        if s.xact_start == 0 { clock_now() } else { s.xact_start }
    })
}

pub fn stmt_start() -> i64 {
    SESSION.with(|s| {
        let s = s.borrow();
        if s.stmt_start == 0 { clock_now() } else { s.stmt_start }
    })
}

/// Makes the thread's zone follow the TimeZone setting's value.
pub fn sync_timezone(name: &str) {
    SESSION.with(|s| {
        let mut s = s.borrow_mut();
        if s.tz_name != name {
            if let Some(z) = parse_zone_setting(name) {
                s.zone = z;
                s.tz_name = name.to_string();
            }
        }
    });
}

fn session_zone() -> Zone {
    SESSION.with(|s| s.borrow().zone.clone())
}

/// The session zone's offset (seconds east of UTC) and abbreviation at UTC
/// instant `ts` (to_char's TZ and OF).
pub fn session_offset_abbrev(ts: i64) -> (i32, String) {
    use chrono::TimeZone;
    let zone = session_zone();
    let off = offset_at_utc(&zone, ts);
    let abbrev = match &zone {
        Zone::Named(tz) => match unix_naive(ts.clamp(-200_000 * 365 * USECS_PER_DAY, 200_000 * 365 * USECS_PER_DAY)) {
            Some(n) => tz.offset_from_utc_datetime(&n).to_string(),
            None => String::new(),
        },
        Zone::Fixed(_) => fixed_zone_abbrev(off),
    };
    (off, abbrev)
}

/// The abbreviation of a fixed-offset TimeZone setting, as PostgreSQL names
/// zones set by offset: `<-08>+08` -> `-08`; UTC/GMT by name; otherwise the
/// offset (`+05:30`).
fn fixed_zone_abbrev(off: i32) -> String {
    let name = SESSION.with(|s| s.borrow().tz_name.clone());
    let n = name.trim();
    if let Some(inner) = n.strip_prefix('<').and_then(|r| r.split_once('>')).map(|(a, _)| a) {
        return inner.to_string();
    }
    match n.to_ascii_lowercase().as_str() {
        "gmt" | "etc/gmt" => return "GMT".into(),
        "utc" | "etc/utc" | "universal" | "z" | "zulu" => return "UTC".into(),
        _ => {}
    }
    offset_text(off)
}

/// Seconds east of UTC in the session zone for local time `local`.
pub fn session_offset_for_local(local: i64) -> i32 {
    offset_for_local(&session_zone(), local)
}

/// A TimeZone setting value: a zone name, UTC/GMT, or a POSIX-style offset
/// (`+05` = five hours west, as in POSIX), or the `<-08>+08` form SET TIME ZONE n shows.
pub fn parse_zone_setting(name: &str) -> Option<Zone> {
    let n = name.trim();
    let lower = n.to_ascii_lowercase();
    if matches!(lower.as_str(), "utc" | "gmt" | "z" | "zulu" | "etc/utc" | "etc/gmt" | "universal") {
        return Some(Zone::Fixed(0));
    }
    if let Some(rest) = n.strip_prefix('<') {
        let (_, posix) = rest.split_once('>')?;
        return parse_offset(posix).map(|o| Zone::Fixed(-o));
    }
    if n.starts_with(['+', '-']) || n.bytes().all(|b| b.is_ascii_digit()) && !n.is_empty() {
        return parse_offset(n).map(|o| Zone::Fixed(-o));
    }
    named_zone(n).map(Zone::Named)
}

/// A zone of the tz database by name, matched case-insensitively as PostgreSQL does.
fn named_zone(n: &str) -> Option<chrono_tz::Tz> {
    n.parse::<chrono_tz::Tz>()
        .ok()
        .or_else(|| chrono_tz::TZ_VARIANTS.iter().copied().find(|tz| tz.name().eq_ignore_ascii_case(n)))
}

/// The TimeZone value SET stores and SHOW prints: a zone name in its canonical
/// spelling (`america/new_york` -> `America/New_York`), other forms as given.
pub fn canonical_zone_setting(value: &str) -> Option<String> {
    let v = value.trim();
    if let Some(tz) = named_zone(v) {
        return Some(tz.name().to_string());
    }
    parse_zone_setting(v).map(|_| v.to_string())
}

/// The TimeZone value `SET TIME ZONE <hours>` stores (hours east of UTC).
pub fn zone_setting_from_hours(hours: i32) -> String {
    let (s, p) = if hours <= 0 { ('-', '+') } else { ('+', '-') };
    format!("<{s}{:02}>{p}{:02}", hours.abs(), hours.abs())
}

/// `+HH`, `+HH:MM`, `+HHMM`, `+HH:MM:SS`: seconds east of UTC (ISO sign).
fn parse_offset(s: &str) -> Option<i32> {
    let (sign, rest) = match s.as_bytes().first()? {
        b'+' => (1, &s[1..]),
        b'-' => (-1, &s[1..]),
        _ => (1, s),
    };
    let parts: Vec<&str> = rest.split(':').collect();
    if parts.iter().any(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    let (h, m, sec) = match parts.as_slice() {
        [hm] if hm.len() == 4 => (hm[..2].parse().ok()?, hm[2..].parse().ok()?, 0),
        [h] if h.len() <= 2 => (h.parse().ok()?, 0, 0),
        [h, m] => (h.parse().ok()?, m.parse().ok()?, 0),
        [h, m, s] => (h.parse().ok()?, m.parse().ok()?, s.parse().ok()?),
        _ => return None,
    };
    let (h, m, sec): (i32, i32, i32) = (h, m, sec);
    if h > 15 || m > 59 || sec > 59 {
        return None;
    }
    Some(sign * (h * 3600 + m * 60 + sec))
}

fn unix_naive(ts: i64) -> Option<chrono::NaiveDateTime> {
    let secs = ts.div_euclid(USECS_PER_SEC) + UNIX_TO_PG_DAYS * 86_400;
    chrono::DateTime::from_timestamp(secs, 0).map(|d| d.naive_utc())
}

/// Seconds east of UTC in `zone` at UTC instant `ts`.
pub fn offset_at_utc(zone: &Zone, ts: i64) -> i32 {
    use chrono::{Offset, TimeZone};
    match zone {
        Zone::Fixed(o) => *o,
        Zone::Named(tz) => match unix_naive(ts.clamp(-200_000 * 365 * USECS_PER_DAY, 200_000 * 365 * USECS_PER_DAY)) {
            Some(n) => tz.offset_from_utc_datetime(&n).fix().local_minus_utc(),
            None => 0,
        },
    }
}

/// Seconds east of UTC in `zone` for local time `local`. In a spring-forward
/// gap the offset before the transition applies (02:30 reads as 03:30 daylight
/// time); in a fall-back overlap, the later (standard-time) reading is taken.
pub fn offset_for_local(zone: &Zone, local: i64) -> i32 {
    use chrono::{LocalResult, Offset, TimeZone};
    match zone {
        Zone::Fixed(o) => *o,
        Zone::Named(tz) => {
            let Some(n) = unix_naive(local.clamp(-200_000 * 365 * USECS_PER_DAY, 200_000 * 365 * USECS_PER_DAY)) else { return 0 };
            match tz.offset_from_local_datetime(&n) {
                LocalResult::Single(o) => o.fix().local_minus_utc(),
                LocalResult::Ambiguous(_, b) => b.fix().local_minus_utc(),
                LocalResult::None => offset_at_utc(zone, local - 86_400 * USECS_PER_SEC / 8 - offset_at_utc(zone, local) as i64 * USECS_PER_SEC),
            }
        }
    }
}

// ---- calendar ----------------------------------------------------------------

/// Days since 2000-01-01 of proleptic Gregorian (astronomical year numbering:
/// 1 BC = year 0).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468 - UNIX_TO_PG_DAYS
}

pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + UNIX_TO_PG_DAYS + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

pub fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

pub fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ => if is_leap(y) { 29 } else { 28 },
    }
}

// ---- input ------------------------------------------------------------------

fn syntax(ty: Type, s: &str) -> SqlError {
    let name = match ty {
        Type::Timestamp => "timestamp",
        Type::Timestamptz => "timestamp with time zone",
        Type::Time => "time",
        Type::Interval => "interval",
        Type::TimeTz => "time with time zone",
        _ => "date",
    };
    SqlError::new(b"22007", format!("invalid input syntax for type {name}: \"{s}\""))
}

fn field_range(s: &str) -> SqlError {
    SqlError::new(b"22008", format!("date/time field value out of range: \"{s}\""))
}

/// What a date/time string says.
#[derive(Default, Debug)]
struct Parsed {
    date: Option<(i64, u32, u32)>,
    /// Microseconds since midnight.
    time: Option<i64>,
    /// Seconds east of UTC, or a named zone.
    zone: Option<Zone>,
    special: Option<Special>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Special {
    Epoch,
    Infinity,
    NegInfinity,
    Now,
    Today,
    Tomorrow,
    Yesterday,
    Allballs,
}

fn zone_word(w: &str) -> Option<Zone> {
    let fixed = |h: i32| Some(Zone::Fixed(h * 3600));
    match w.to_ascii_lowercase().as_str() {
        "z" | "utc" | "gmt" | "zulu" | "ut" => fixed(0),
        "pst" => fixed(-8),
        "pdt" => fixed(-7),
        "mst" => fixed(-7),
        "mdt" => fixed(-6),
        "cst" => fixed(-6),
        "cdt" => fixed(-5),
        "est" => fixed(-5),
        "edt" => fixed(-4),
        "cet" => fixed(1),
        "cest" => fixed(2),
        "jst" => fixed(9),
        _ => {
            if w.len() > 3 || w.contains('/') {
                parse_zone_setting(w).filter(|z| matches!(z, Zone::Named(_)))
            } else {
                None
            }
        }
    }
}

/// Parses `HH:MM[:SS[.frac]]` to microseconds (24:00:00 allowed); `Err(true)` is a
/// field out of range, `Err(false)` bad syntax.
fn parse_time(t: &str) -> std::result::Result<i64, bool> {
    let parts: Vec<&str> = t.split(':').collect();
    if !(2..=3).contains(&parts.len()) {
        return Err(false);
    }
    let num = |p: &str| -> std::result::Result<i64, bool> {
        if p.is_empty() || p.len() > 9 || !p.bytes().all(|b| b.is_ascii_digit()) {
            return Err(false);
        }
        p.parse().map_err(|_| false)
    };
    let h = num(parts[0])?;
    let m = num(parts[1])?;
    let mut us = 0i64;
    let mut sec = 0i64;
    if let Some(sp) = parts.get(2) {
        let (whole, frac) = sp.split_once('.').unwrap_or((sp, ""));
        sec = num(whole)?;
        if !frac.is_empty() || sp.contains('.') {
            if !frac.bytes().all(|b| b.is_ascii_digit()) {
                return Err(false);
            }
            // Round to microseconds, half away from zero.
            let mut digits: Vec<u8> = frac.bytes().map(|b| b - b'0').collect();
            digits.resize(digits.len().max(7), 0);
            let mut v: i64 = 0;
            for d in &digits[..6] {
                v = v * 10 + *d as i64;
            }
            if digits[6] >= 5 {
                v += 1;
            }
            us = v;
        }
    }
    if m > 59 || sec > 60 || h > 24 || (h == 24 && (m > 0 || sec > 0 || us > 0)) || ((h * 60 + m) * 60 + sec) * USECS_PER_SEC + us > USECS_PER_DAY {
        return Err(true);
    }
    Ok(((h * 60 + m) * 60 + sec) * USECS_PER_SEC + us)
}

fn parse_datetime(s: &str, ty: Type) -> Result<Parsed> {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let special = match lower.as_str() {
        "epoch" => Some(Special::Epoch),
        "infinity" | "+infinity" => Some(Special::Infinity),
        "-infinity" => Some(Special::NegInfinity),
        "now" => Some(Special::Now),
        "today" => Some(Special::Today),
        "tomorrow" => Some(Special::Tomorrow),
        "yesterday" => Some(Special::Yesterday),
        "allballs" => Some(Special::Allballs),
        _ => None,
    };
    if special.is_some() {
        if matches!(special, Some(Special::Now | Special::Today | Special::Tomorrow | Special::Yesterday)) {
            // Its value depends on when it is read: a plan holding it is not reused.
            mark_clock_read();
        }
        return Ok(Parsed { special, ..Parsed::default() });
    }
    input::decode(s, ty)
}

fn ts_out_of_range(ty: Type, s: &str) -> SqlError {
    let what = if ty == Type::Date { "date" } else { "timestamp" };
    SqlError::new(b"22008", format!("{what} out of range: \"{s}\""))
}

fn local_midnight_today() -> i64 {
    let now = xact_start();
    let local = now + offset_at_utc(&session_zone(), now) as i64 * USECS_PER_SEC;
    local.div_euclid(USECS_PER_DAY) * USECS_PER_DAY
}

/// The local timestamp a string names (for timestamp, and for timestamptz before
/// its zone is applied); `zone` is set when the string carries one.
fn parse_timestamp(s: &str, ty: Type) -> Result<(i64, Option<Zone>)> {
    let p = parse_datetime(s, ty)?;
    if let Some(sp) = p.special {
        return Ok(match sp {
            Special::Epoch => (-UNIX_TO_PG_DAYS * USECS_PER_DAY, Some(Zone::Fixed(0))),
            Special::Infinity => (DT_NOEND, Some(Zone::Fixed(0))),
            Special::NegInfinity => (DT_NOBEGIN, Some(Zone::Fixed(0))),
            Special::Now => {
                let now = xact_start();
                (now, Some(Zone::Fixed(0)))
            }
            Special::Today => (local_midnight_today(), None),
            Special::Tomorrow => (local_midnight_today() + USECS_PER_DAY, None),
            Special::Yesterday => (local_midnight_today() - USECS_PER_DAY, None),
            Special::Allballs => return Err(syntax(ty, s)),
        });
    }
    let Some((y, m, d)) = p.date else { return Err(syntax(ty, s)) };
    let days = days_from_civil(y, m, d);
    if !(MIN_DATE_DAYS..END_TS_DAYS).contains(&days) {
        return Err(ts_out_of_range(ty, s));
    }
    Ok((days * USECS_PER_DAY + p.time.unwrap_or(0), p.zone))
}

pub fn timestamp_in(s: &str) -> Result<i64> {
    let (ts, zone) = parse_timestamp(s, Type::Timestamp)?;
    if ts == DT_NOEND || ts == DT_NOBEGIN {
        return Ok(ts);
    }
    // `now` is an instant: the session's local time of it. Other zones are ignored.
    if s.trim().eq_ignore_ascii_case("now") {
        return Ok(timestamptz_to_timestamp(ts));
    }
    let _ = zone;
    Ok(ts)
}

pub fn timestamptz_in(s: &str) -> Result<i64> {
    let (ts, zone) = parse_timestamp(s, Type::Timestamptz)?;
    if ts == DT_NOEND || ts == DT_NOBEGIN {
        return Ok(ts);
    }
    let off = match zone {
        Some(Zone::Fixed(o)) => o,
        Some(z @ Zone::Named(_)) => offset_for_local(&z, ts),
        None => offset_for_local(&session_zone(), ts),
    };
    Ok(ts - off as i64 * USECS_PER_SEC)
}

pub fn date_in(s: &str) -> Result<i32> {
    let p = parse_datetime(s, Type::Date)?;
    if let Some(sp) = p.special {
        let today = local_midnight_today().div_euclid(USECS_PER_DAY) as i32;
        return Ok(match sp {
            Special::Epoch => -(UNIX_TO_PG_DAYS as i32),
            Special::Infinity => i32::MAX,
            Special::NegInfinity => i32::MIN,
            Special::Now | Special::Today => today,
            Special::Tomorrow => today + 1,
            Special::Yesterday => today - 1,
            Special::Allballs => return Err(syntax(Type::Date, s)),
        });
    }
    let Some((y, m, d)) = p.date else { return Err(syntax(Type::Date, s)) };
    let days = days_from_civil(y, m, d);
    if !(MIN_DATE_DAYS..END_DATE_DAYS).contains(&days) {
        return Err(ts_out_of_range(Type::Date, s));
    }
    Ok(days as i32)
}

/// timetz input: a time and an optional zone (default: the session's zone now).
/// Returns (microseconds, zone in seconds west of UTC).
pub fn timetz_in(s: &str) -> Result<(i64, i32)> {
    let p = parse_datetime(s, Type::TimeTz)?;
    if let Some(sp) = p.special {
        return match sp {
            Special::Allballs => Ok((0, 0)),
            Special::Now => Ok(current_timetz(-1)),
            _ => Err(syntax(Type::TimeTz, s)),
        };
    }
    let t = p.time.ok_or_else(|| syntax(Type::TimeTz, s))?;
    let off = match p.zone {
        Some(Zone::Fixed(o)) => o,
        Some(z @ Zone::Named(_)) => offset_at_utc(&z, xact_start()),
        None => offset_at_utc(&session_zone(), xact_start()),
    };
    Ok((t, -off))
}

/// CURRENT_TIME: the transaction start's local time with the session's offset.
pub fn current_timetz(p: i32) -> (i64, i32) {
    let now = xact_start();
    let off = offset_at_utc(&session_zone(), now);
    let local = now + off as i64 * USECS_PER_SEC;
    (round_precision(local.rem_euclid(USECS_PER_DAY), p).min(USECS_PER_DAY), -off)
}

pub fn timetz_out(t: i64, zone: i32) -> String {
    format!("{}{}", time_text(t), offset_text(-zone))
}

/// timetz ordering: by the UTC time, then by zone.
pub fn timetz_cmp(a: (i64, i32), b: (i64, i32)) -> std::cmp::Ordering {
    let utc = |x: (i64, i32)| x.0 + x.1 as i64 * USECS_PER_SEC;
    utc(a).cmp(&utc(b)).then(a.1.cmp(&b.1))
}

pub fn timetz_bytes(t: i64, zone: i32) -> Vec<u8> {
    let mut b = t.to_le_bytes().to_vec();
    b.extend_from_slice(&zone.to_le_bytes());
    b
}

pub fn time_in(s: &str) -> Result<i64> {
    let p = parse_datetime(s, Type::Time)?;
    if let Some(sp) = p.special {
        return match sp {
            Special::Allballs => Ok(0),
            Special::Now => {
                let local = timestamptz_to_timestamp(xact_start());
                Ok(local.rem_euclid(USECS_PER_DAY))
            }
            _ => Err(syntax(Type::Time, s)),
        };
    }
    p.time.ok_or_else(|| syntax(Type::Time, s))
}

/// Interval input: `[@] quantity unit ... [HH:MM[:SS]] [ago]`, a bare number of seconds.
pub fn interval_in(s: &str) -> Result<Interval> {
    if let Some(r) = interval_input::iso8601(s) {
        return r;
    }
    let bad = || syntax(Type::Interval, s);
    let range = || SqlError::new(b"22015", "interval out of range");
    let mut months: f64 = 0.0;
    let mut days: f64 = 0.0;
    let mut micros: f64 = 0.0;
    let mut toks: Vec<String> = s.split_ascii_whitespace().map(str::to_string).collect();
    if toks.first().map(String::as_str) == Some("@") {
        toks.remove(0);
    } else if let Some(rest) = toks.first().and_then(|t| t.strip_prefix('@')).map(str::to_string) {
        toks[0] = rest;
    }
    let mut ago = false;
    let mut seen_any = false;
    // Each unit may be given once (a time `H:M:S` gives hours, minutes and
    // seconds with their fractions).
    let mut seen_units: Vec<&'static str> = Vec::new();
    let mut once = |units: &[&'static str]| -> Result<()> {
        if units.iter().any(|u| seen_units.contains(u)) {
            return Err(syntax(Type::Interval, s));
        }
        seen_units.extend_from_slice(units);
        Ok(())
    };
    let field_range = || SqlError::new(b"22015", format!("interval field value out of range: \"{s}\""));
    let mut i = 0;
    while i < toks.len() {
        let tok = toks[i].to_ascii_lowercase();
        i += 1;
        if tok == "ago" && i == toks.len() && seen_any {
            ago = true;
            continue;
        }
        if tok.contains(':') {
            let (neg, body) = match tok.as_bytes()[0] {
                b'-' => (true, &tok[1..]),
                b'+' => (false, &tok[1..]),
                _ => (false, &tok[..]),
            };
            let us = match parse_time_unbounded(body) {
                Some(us) => us,
                None => return Err(bad()),
            };
            micros += if neg { -(us as f64) } else { us as f64 };
            once(&["hour", "minute", "second", "millisecond", "microsecond"])?;
            seen_any = true;
            continue;
        }
        if let Some(ym) = interval_input::year_month(&tok, s) {
            once(&["year", "month"])?;
            months += ym?;
            seen_any = true;
            continue;
        }
        // A number, with its unit glued on or as the next token.
        let num_end = tok.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+')).unwrap_or(tok.len());
        let (num, mut unit) = (tok[..num_end].to_string(), tok[num_end..].to_string());
        let v: f64 = num.parse().map_err(|_| bad())?;
        if unit.is_empty() {
            if i < toks.len() && toks[i].bytes().next().is_some_and(|b| b.is_ascii_alphabetic()) && toks[i] != "ago" {
                unit = toks[i].to_ascii_lowercase();
                i += 1;
            } else if i < toks.len() && toks[i].contains(':') {
                // SQL standard `D H:M:S`: the number before a time is days.
                unit = "day".into();
            } else if i < toks.len() && toks[i] != "ago" {
                return Err(bad());
            } else {
                unit = "second".into();
            }
        }
        seen_any = true;
        // A day/month field beyond int4 is a field error; their sum, an interval one.
        let whole = |x: f64| if x.trunc().abs() > i32::MAX as f64 + if x < 0.0 { 1.0 } else { 0.0 } { Err(field_range()) } else { Ok(x) };
        match unit.as_str() {
            "microsecond" | "microseconds" | "us" | "usec" | "usecs" => {
                once(&["microsecond"])?;
                micros += v
            }
            "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" => {
                once(&["millisecond"])?;
                micros += v * 1000.0
            }
            "second" | "seconds" | "s" | "sec" | "secs" => {
                // A fraction of a second gives the milli- and microseconds too.
                if v.fract() != 0.0 {
                    once(&["second", "millisecond", "microsecond"])?;
                } else {
                    once(&["second"])?;
                }
                micros += v * 1e6
            }
            "minute" | "minutes" | "m" | "min" | "mins" => {
                once(&["minute"])?;
                micros += v * 6e7
            }
            "hour" | "hours" | "h" | "hr" | "hrs" => {
                once(&["hour"])?;
                micros += v * 3.6e9
            }
            "day" | "days" | "d" => {
                once(&["day"])?;
                days += whole(v)?
            }
            "week" | "weeks" | "w" => {
                once(&["week"])?;
                days += whole(v * 7.0)?
            }
            "month" | "months" | "mon" | "mons" => {
                once(&["month"])?;
                months += whole(v)?
            }
            "year" | "years" | "y" | "yr" | "yrs" => {
                once(&["year"])?;
                months += whole(v * 12.0)?
            }
            "decade" | "decades" => {
                once(&["decade"])?;
                months += whole(v * 120.0)?
            }
            "century" | "centuries" => {
                once(&["century"])?;
                months += whole(v * 1200.0)?
            }
            "millennium" | "millennia" | "millenniums" => {
                once(&["millennium"])?;
                months += whole(v * 12000.0)?
            }
            _ => return Err(bad()),
        }
    }
    if !seen_any {
        return Err(bad());
    }
    // Fractions spill down: months -> days (30), days -> microseconds.
    let whole_months = months.trunc();
    days += (months - whole_months) * 30.0;
    let whole_days = days.trunc();
    micros += (days - whole_days) * USECS_PER_DAY as f64;
    let int4 = |x: f64| (i32::MIN as f64..=i32::MAX as f64).contains(&x);
    if !int4(whole_months) || !int4(whole_days) || micros.abs() > 9.2e18 {
        return Err(range());
    }
    let iv = Interval { micros: micros.round() as i64, days: whole_days as i32, months: whole_months as i32 };
    if ago {
        return neg(iv);
    }
    Ok(iv)
}

fn parse_time_unbounded(t: &str) -> Option<i64> {
    let parts: Vec<&str> = t.split(':').collect();
    if !(2..=3).contains(&parts.len()) {
        return None;
    }
    let h: i64 = parts[0].parse().ok()?;
    let m: i64 = parts[1].parse().ok()?;
    let sec: f64 = match parts.get(2) {
        Some(p) => p.parse().ok()?,
        None => 0.0,
    };
    if m > 59 || !(0.0..60.0).contains(&sec) || h > 2_562_047_788 {
        return None;
    }
    Some((h * 3600 + m * 60) * USECS_PER_SEC + (sec * 1e6).round() as i64)
}

// ---- output -----------------------------------------------------------------

fn push_secs_frac(out: &mut String, us: i64) {
    let frac = us % USECS_PER_SEC;
    if frac != 0 {
        let f = format!("{:06}", frac);
        out.push('.');
        out.push_str(f.trim_end_matches('0'));
    }
}

fn date_text(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    if y <= 0 {
        format!("{:04}-{m:02}-{d:02} BC", 1 - y)
    } else {
        format!("{y:04}-{m:02}-{d:02}")
    }
}

fn time_text(us: i64) -> String {
    let secs = us / USECS_PER_SEC;
    let mut s = format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60);
    push_secs_frac(&mut s, us);
    s
}

/// Splits a timestamp into (date text, time text), BC moved to the end by the caller.
fn ts_parts(ts: i64) -> (i64, i64) {
    (ts.div_euclid(USECS_PER_DAY), ts.rem_euclid(USECS_PER_DAY))
}

pub fn date_out(d: i32) -> String {
    let st = crate::datestyle::current();
    match d {
        i32::MAX => "infinity".into(),
        i32::MIN => "-infinity".into(),
        d if st.date == crate::datestyle::DateStyle::Iso => date_text(d as i64),
        d => {
            let (y, m, day) = civil_from_days(d as i64);
            crate::datestyle::date_text(st, y, m, day)
        }
    }
}

pub fn time_out(us: i64) -> String {
    time_text(us)
}

pub fn timestamp_out(ts: i64) -> String {
    let st = crate::datestyle::current();
    match ts {
        DT_NOEND => "infinity".into(),
        DT_NOBEGIN => "-infinity".into(),
        ts if st.date != crate::datestyle::DateStyle::Iso => {
            let (days, us) = ts_parts(ts);
            crate::datestyle::timestamp_text(st, days, civil_from_days(days), &time_text(us), None)
        }
        ts => {
            let (days, us) = ts_parts(ts);
            let date = date_text(days);
            match date.strip_suffix(" BC") {
                Some(d) => format!("{d} {} BC", time_text(us)),
                None => format!("{date} {}", time_text(us)),
            }
        }
    }
}

fn offset_text(off: i32) -> String {
    let sign = if off < 0 { '-' } else { '+' };
    let a = off.abs();
    let mut s = format!("{sign}{:02}", a / 3600);
    if a % 3600 != 0 {
        s.push_str(&format!(":{:02}", a / 60 % 60));
        if a % 60 != 0 {
            s.push_str(&format!(":{:02}", a % 60));
        }
    }
    s
}

pub fn timestamptz_out(ts: i64) -> String {
    let st = crate::datestyle::current();
    match ts {
        DT_NOEND => "infinity".into(),
        DT_NOBEGIN => "-infinity".into(),
        ts if st.date != crate::datestyle::DateStyle::Iso => {
            let (off, abbrev) = session_offset_abbrev(ts);
            let (days, us) = ts_parts(ts + off as i64 * USECS_PER_SEC);
            crate::datestyle::timestamp_text(st, days, civil_from_days(days), &time_text(us), Some(&abbrev))
        }
        ts => {
            let off = offset_at_utc(&session_zone(), ts);
            let local = ts + off as i64 * USECS_PER_SEC;
            let (days, us) = ts_parts(local);
            let date = date_text(days);
            match date.strip_suffix(" BC") {
                Some(d) => format!("{d} {}{} BC", time_text(us), offset_text(off)),
                None => format!("{date} {}{}", time_text(us), offset_text(off)),
            }
        }
    }
}

/// IntervalStyle postgres: `1 year 2 mons -3 days +04:05:06.5` (the other
/// styles: `datestyle::interval_text`).
pub fn interval_out(iv: &Interval) -> String {
    let style = crate::datestyle::current().interval;
    if style != crate::datestyle::IntervalStyle::Postgres {
        return crate::datestyle::interval_text(style, iv.months, iv.days, iv.micros);
    }
    let mut out = String::new();
    let mut is_zero = true;
    let mut is_before = false;
    let part = |out: &mut String, v: i64, unit: &str, is_zero: &mut bool, is_before: &mut bool| {
        if v == 0 {
            return;
        }
        if !*is_zero {
            out.push(' ');
        }
        if *is_before && v > 0 {
            out.push('+');
        }
        out.push_str(&format!("{v} {unit}{}", if v != 1 { "s" } else { "" }));
        *is_before = v < 0;
        *is_zero = false;
    };
    part(&mut out, iv.months as i64 / 12, "year", &mut is_zero, &mut is_before);
    part(&mut out, iv.months as i64 % 12, "mon", &mut is_zero, &mut is_before);
    part(&mut out, iv.days as i64, "day", &mut is_zero, &mut is_before);
    if iv.micros != 0 || is_zero {
        let minus = iv.micros < 0;
        let a = iv.micros.unsigned_abs() as i64;
        if !is_zero {
            out.push(' ');
        }
        out.push_str(if minus { "-" } else if is_before { "+" } else { "" });
        let secs = a / USECS_PER_SEC;
        out.push_str(&format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60));
        push_secs_frac(&mut out, a);
    }
    out
}

// ---- conversions ----------------------------------------------------------------

pub fn timestamptz_to_timestamp(ts: i64) -> i64 {
    if ts == DT_NOEND || ts == DT_NOBEGIN {
        return ts;
    }
    ts + offset_at_utc(&session_zone(), ts) as i64 * USECS_PER_SEC
}

pub fn timestamp_to_timestamptz(ts: i64) -> i64 {
    if ts == DT_NOEND || ts == DT_NOBEGIN {
        return ts;
    }
    ts - offset_for_local(&session_zone(), ts) as i64 * USECS_PER_SEC
}

/// A date as a timestamp; dates past the timestamp range saturate (only
/// date_part uses this: the checked form is [`date_to_ts_checked`]).
fn date_to_ts(d: i32) -> i64 {
    match d {
        i32::MAX => DT_NOEND,
        i32::MIN => DT_NOBEGIN,
        d => (d as i64).saturating_mul(USECS_PER_DAY),
    }
}

fn date_to_ts_checked(d: i32) -> Result<i64> {
    if d != i32::MAX && d != i32::MIN && !(MIN_DATE_DAYS..END_TS_DAYS).contains(&(d as i64)) {
        return Err(SqlError::new(b"22008", "date out of range for timestamp"));
    }
    Ok(date_to_ts(d))
}

fn ts_to_date(ts: i64) -> i32 {
    match ts {
        DT_NOEND => i32::MAX,
        DT_NOBEGIN => i32::MIN,
        ts => ts.div_euclid(USECS_PER_DAY) as i32,
    }
}

/// Rounds to `typmod` fractional digits (timestamp(p), time(p)); -1 keeps all.
pub fn round_precision(us: i64, typmod: i32) -> i64 {
    if !(0..6).contains(&typmod) || us == DT_NOEND || us == DT_NOBEGIN {
        return us;
    }
    let unit = 10i64.pow(6 - typmod as u32);
    let r = us.rem_euclid(unit);
    let base = us - r;
    if r * 2 >= unit { base + unit } else { base }
}

/// Casts among the date/time types (the text forms go through input/output).
pub fn cast(v: Value, to: Type, typmod: i32) -> Option<Result<Value>> {
    Some(match (v, to) {
        (Value::Date(d), Type::Timestamp) => date_to_ts_checked(d).map(Value::Timestamp),
        (Value::Date(d), Type::Timestamptz) => date_to_ts_checked(d).map(|t| Value::Timestamptz(timestamp_to_timestamptz(t))),
        (Value::Timestamp(t), Type::Date) => Ok(Value::Date(ts_to_date(t))),
        (Value::Timestamptz(t), Type::Date) => Ok(Value::Date(ts_to_date(timestamptz_to_timestamp(t)))),
        (Value::Timestamp(t), Type::Timestamptz) => Ok(Value::Timestamptz(round_precision(timestamp_to_timestamptz(t), typmod))),
        (Value::Timestamptz(t), Type::Timestamp) => Ok(Value::Timestamp(round_precision(timestamptz_to_timestamp(t), typmod))),
        (Value::Timestamp(t), Type::Timestamp) => Ok(Value::Timestamp(round_precision(t, typmod))),
        (Value::Timestamptz(t), Type::Timestamptz) => Ok(Value::Timestamptz(round_precision(t, typmod))),
        (Value::Timestamp(t), Type::Time) if t != DT_NOEND && t != DT_NOBEGIN => Ok(Value::Time(t.rem_euclid(USECS_PER_DAY))),
        (Value::Timestamptz(t), Type::Time) if t != DT_NOEND && t != DT_NOBEGIN => {
            Ok(Value::Time(timestamptz_to_timestamp(t).rem_euclid(USECS_PER_DAY)))
        }
        (Value::Time(t), Type::Time) => Ok(Value::Time(round_precision(t, typmod).min(USECS_PER_DAY))),
        (Value::TimeTz(t, _), Type::Time) => Ok(Value::Time(t)),
        (Value::TimeTz(t, z), Type::TimeTz) => Ok(Value::TimeTz(round_precision(t, typmod).min(USECS_PER_DAY), z)),
        (Value::Time(t), Type::TimeTz) => Ok(Value::TimeTz(t, -offset_at_utc(&session_zone(), xact_start()))),
        (Value::Timestamptz(t), Type::TimeTz) if t != DT_NOEND && t != DT_NOBEGIN => {
            let off = offset_at_utc(&session_zone(), t);
            Ok(Value::TimeTz((t + off as i64 * USECS_PER_SEC).rem_euclid(USECS_PER_DAY), -off))
        }
        (Value::Time(t), Type::Interval) => Ok(Value::Interval(Interval { micros: t, days: 0, months: 0 })),
        (Value::Interval(iv), Type::Time) => Ok(Value::Time(iv.micros.rem_euclid(USECS_PER_DAY))),
        (Value::Interval(iv), Type::Interval) => interval_adjust(iv, typmod).map(Value::Interval),
        (v @ Value::Date(_), Type::Date) => Ok(v),
        _ => return None,
    })
}

/// pg_cast entries among the date/time types: (implicit, assignment) per pair.
pub fn cast_context(from: Type, to: Type) -> Option<(bool, bool)> {
    use Type::*;
    Some(match (from, to) {
        (Date, Timestamp | Timestamptz) | (Timestamp, Timestamptz) | (Time, Interval) | (Time, TimeTz) => (true, true),
        (TimeTz, Time) | (Timestamptz, TimeTz) => (false, true),
        (Timestamptz, Timestamp) | (Timestamp | Timestamptz, Date) | (Timestamp | Timestamptz, Time) | (Interval, Time) => {
            (false, true)
        }
        _ => return None,
    })
}

pub fn is_datetime(t: Type) -> bool {
    matches!(t, Type::Date | Type::Time | Type::Timestamp | Type::Timestamptz | Type::Interval | Type::TimeTz)
}

// ---- operators and functions -------------------------------------------------

/// Date/time functions and operators (one `plan::Func` variant carries these).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DtFunc {
    /// now(), transaction_timestamp(), CURRENT_TIMESTAMP (precision in the i32; -1 none).
    Now(i32),
    StatementTimestamp,
    ClockTimestamp,
    CurrentDate,
    LocalTimestamp(i32),
    LocalTime(i32),
    /// CURRENT_TIME[(p)] (timetz).
    CurrentTime(i32),
    /// `ts AT TIME ZONE zone` = timezone(zone, ts), for a timestamp or timestamptz `ts`.
    AtTimeZone(Type),
    DatePlusInt,
    DateMinusInt,
    DateMinusDate,
    TsPlusInterval(Type),
    TsMinusInterval(Type),
    TsMinusTs(Type),
    DatePlusInterval,
    DateMinusInterval,
    IntervalPlus,
    IntervalMinus,
    IntervalNeg,
    IntervalMulFloat,
    IntervalDivFloat,
    DatePlusTime,
    DatePart(Type),
    DateTrunc(Type),
    /// EXTRACT(field FROM x): numeric ([`extract_text`]).
    Extract(Type),
}

fn add_months_days(ts: i64, months: i32, days: i32) -> Result<i64> {
    let mut ts = ts;
    if months != 0 {
        let (d, us) = ts_parts(ts);
        let (y, m, dd) = civil_from_days(d);
        let total = y * 12 + (m as i64 - 1) + months as i64;
        let (ny, nm) = (total.div_euclid(12), (total.rem_euclid(12) + 1) as u32);
        let nd = dd.min(days_in_month(ny, nm));
        let days = days_from_civil(ny, nm, nd);
        if !(MIN_DATE_DAYS..END_TS_DAYS).contains(&days) {
            return Err(SqlError::new(b"22008", "timestamp out of range"));
        }
        ts = days * USECS_PER_DAY + us;
    }
    if days != 0 {
        ts = ts.checked_add(days as i64 * USECS_PER_DAY).ok_or_else(|| SqlError::new(b"22008", "timestamp out of range"))?;
    }
    Ok(ts)
}

/// Range checks of binary input (typreceive), as PostgreSQL's receive functions do.
pub fn check_received(v: Value) -> Result<Value> {
    let bad = |what: &str| Err(SqlError::new(b"22008", format!("{what} out of range")));
    match v {
        Value::Timestamp(t) | Value::Timestamptz(t)
            if t != DT_NOEND && t != DT_NOBEGIN && !(MIN_DATE_DAYS..END_TS_DAYS).contains(&t.div_euclid(USECS_PER_DAY)) =>
        {
            return bad("timestamp")
        }
        Value::Date(d) if d != i32::MAX && d != i32::MIN && !(MIN_DATE_DAYS..END_DATE_DAYS).contains(&(d as i64)) => {
            return bad("date")
        }
        Value::Time(t) | Value::TimeTz(t, _) if !(0..=USECS_PER_DAY).contains(&t) => return bad("time"),
        // TZDISP_LIMIT: 16 hours, exclusive.
        Value::TimeTz(_, z) if z.abs() >= 16 * 3600 => {
            return Err(SqlError::new(b"22009", "time zone displacement out of range"));
        }
        _ => {}
    }
    Ok(v)
}

fn check_ts(ts: i64) -> Result<i64> {
    let days = ts.div_euclid(USECS_PER_DAY);
    if !(MIN_DATE_DAYS..END_TS_DAYS).contains(&days) {
        return Err(SqlError::new(b"22008", "timestamp out of range"));
    }
    Ok(ts)
}

/// timestamp + interval: months and days in local time, then the microseconds.
fn ts_plus(ty: Type, ts: i64, iv: Interval) -> Result<i64> {
    if ts == DT_NOEND || ts == DT_NOBEGIN {
        return Ok(ts);
    }
    let r = if ty == Type::Timestamptz && (iv.months != 0 || iv.days != 0) {
        let local = timestamptz_to_timestamp(ts);
        let local = add_months_days(local, iv.months, iv.days)?;
        timestamp_to_timestamptz(local)
    } else {
        add_months_days(ts, iv.months, iv.days)?
    };
    check_ts(r.checked_add(iv.micros).ok_or_else(|| SqlError::new(b"22008", "timestamp out of range"))?)
}

fn neg(iv: Interval) -> Result<Interval> {
    let r = || SqlError::new(b"22015", "interval out of range");
    Ok(Interval {
        micros: iv.micros.checked_neg().ok_or_else(r)?,
        days: iv.days.checked_neg().ok_or_else(r)?,
        months: iv.months.checked_neg().ok_or_else(r)?,
    })
}

fn iv_add(a: Interval, b: Interval) -> Result<Interval> {
    let r = || SqlError::new(b"22015", "interval out of range");
    Ok(Interval {
        micros: a.micros.checked_add(b.micros).ok_or_else(r)?,
        days: a.days.checked_add(b.days).ok_or_else(r)?,
        months: a.months.checked_add(b.months).ok_or_else(r)?,
    })
}

/// timestamp - timestamp: days and microseconds (justify_hours as PostgreSQL does).
fn ts_diff(a: i64, b: i64) -> Result<Interval> {
    if [a, b].iter().any(|t| *t == DT_NOEND || *t == DT_NOBEGIN) {
        return Err(SqlError::new(b"22008", "cannot subtract infinite timestamps"));
    }
    let us = a - b;
    let days = us / USECS_PER_DAY;
    Ok(Interval { micros: us - days * USECS_PER_DAY, days: days as i32, months: 0 })
}

fn text_arg(v: &Value) -> String {
    match v {
        Value::Text(s) => s.to_ascii_lowercase(),
        _ => String::new(),
    }
}

fn unit_error(unit: &str, ty: Type) -> SqlError {
    SqlError::new(b"0A000", format!("unit \"{unit}\" not supported for type {}", ty.sql_name()))
}

fn unit_unknown(unit: &str, ty: Type) -> SqlError {
    SqlError::new(b"22023", format!("unit \"{unit}\" not recognized for type {}", ty.sql_name()))
}

fn canonical_unit(u: &str) -> Option<&'static str> {
    Some(match u {
        "microsecond" | "microseconds" | "us" | "usec" | "usecs" | "microsecon" => "microseconds",
        "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" | "millisecon" => "milliseconds",
        "second" | "seconds" | "s" | "sec" | "secs" => "second",
        "minute" | "minutes" | "m" | "min" | "mins" => "minute",
        "hour" | "hours" | "h" | "hr" | "hrs" => "hour",
        "day" | "days" | "d" => "day",
        "week" | "weeks" | "w" => "week",
        "month" | "months" | "mon" | "mons" => "month",
        "quarter" | "qtr" => "quarter",
        "year" | "years" | "y" | "yr" | "yrs" => "year",
        "decade" | "decades" | "dec" => "decade",
        "century" | "centuries" | "c" | "cent" => "century",
        "millennium" | "millennia" | "mil" | "mils" | "millenniums" => "millennium",
        "dow" => "dow",
        "doy" => "doy",
        "isodow" => "isodow",
        "epoch" => "epoch",
        "julian" => "julian",
        "timezone" => "timezone",
        _ => return None,
    })
}

fn date_part(unit_raw: &str, ty: Type, v: &Value) -> Result<Value> {
    let unit = canonical_unit(unit_raw).ok_or_else(|| unit_unknown(unit_raw, ty))?;
    let (ts, tzoff) = match *v {
        Value::Timestamp(t) => (t, None),
        Value::Timestamptz(t) => {
            let off = offset_at_utc(&session_zone(), t);
            (if t == DT_NOEND || t == DT_NOBEGIN { t } else { t + off as i64 * USECS_PER_SEC }, Some(off))
        }
        Value::Date(d) => (date_to_ts(d), None),
        Value::Interval(iv) => return interval_part(unit, unit_raw, iv),
        Value::Time(t) => {
            let s = t as f64 / 1e6;
            return Ok(Value::Float8(match unit {
                "microseconds" => (t % 60_000_000) as f64,
                "milliseconds" => (t % 60_000_000) as f64 / 1000.0,
                "second" => (t % 60_000_000) as f64 / 1e6,
                "minute" => (t / 60_000_000 % 60) as f64,
                "hour" => (t / 3_600_000_000) as f64,
                "epoch" => s,
                _ => return Err(unit_error(unit_raw, Type::Time)),
            }));
        }
        _ => return Err(SqlError::internal("date_part of a non-date/time value")),
    };
    if ts == DT_NOEND || ts == DT_NOBEGIN {
        let inf = if ts == DT_NOEND { f64::INFINITY } else { f64::NEG_INFINITY };
        return Ok(match unit {
            "epoch" | "year" | "decade" | "century" | "millennium" | "julian" => Value::Float8(inf),
            _ => Value::Null,
        });
    }
    let (days, us) = ts_parts(ts);
    let (y, m, d) = civil_from_days(days);
    let dow = (days + 6).rem_euclid(7); // 2000-01-01 was a Saturday (6).
    Ok(Value::Float8(match unit {
        "microseconds" => (us % 60_000_000) as f64,
        "milliseconds" => (us % 60_000_000) as f64 / 1000.0,
        "second" => (us % 60_000_000) as f64 / 1e6,
        "minute" => (us / 60_000_000 % 60) as f64,
        "hour" => (us / 3_600_000_000) as f64,
        "day" => d as f64,
        "month" => m as f64,
        "quarter" => ((m - 1) / 3 + 1) as f64,
        "year" => if y <= 0 { (y - 1) as f64 } else { y as f64 },
        "decade" => y.div_euclid(10) as f64,
        "century" => if y > 0 { ((y + 99) / 100) as f64 } else { -(((99 - (y - 1)) / 100) as f64) },
        "millennium" => if y > 0 { ((y + 999) / 1000) as f64 } else { -(((999 - (y - 1)) / 1000) as f64) },
        "dow" => dow as f64,
        "isodow" => if dow == 0 { 7.0 } else { dow as f64 },
        "doy" => (days - days_from_civil(y, 1, 1) + 1) as f64,
        "week" => {
            // ISO week: the week with the year's first Thursday is week 1.
            let thursday = days - ((dow + 6) % 7) + 3;
            let (ty_, _, _) = civil_from_days(thursday);
            ((thursday - days_from_civil(ty_, 1, 1)) / 7 + 1) as f64
        }
        "epoch" => {
            let utc = match tzoff {
                Some(off) => ts - off as i64 * USECS_PER_SEC,
                None => ts,
            };
            (utc + UNIX_TO_PG_DAYS * USECS_PER_DAY) as f64 / 1e6
        }
        "julian" => (days + 2_451_545) as f64 + us as f64 / USECS_PER_DAY as f64,
        "timezone" if tzoff.is_some() => tzoff.unwrap_or(0) as f64,
        _ => return Err(unit_error(unit_raw, ty)),
    }))
}

fn interval_part(unit: &str, raw: &str, iv: Interval) -> Result<Value> {
    Ok(Value::Float8(match unit {
        "microseconds" => (iv.micros % 60_000_000) as f64,
        "milliseconds" => (iv.micros % 60_000_000) as f64 / 1000.0,
        "second" => (iv.micros % 60_000_000) as f64 / 1e6,
        "minute" => (iv.micros / 60_000_000 % 60) as f64,
        "hour" => (iv.micros / 3_600_000_000) as f64,
        "day" => iv.days as f64,
        "month" => (iv.months % 12) as f64,
        "quarter" => ((iv.months % 12) / 3 + 1) as f64,
        "year" => (iv.months / 12) as f64,
        "decade" => (iv.months / 120) as f64,
        "century" => (iv.months / 1200) as f64,
        "millennium" => (iv.months / 12000) as f64,
        "epoch" => {
            let days = iv.months as f64 / 12.0 * 365.25 + iv.days as f64;
            days * 86400.0 + iv.micros as f64 / 1e6
        }
        _ => return Err(unit_error(raw, Type::Interval)),
    }))
}

fn date_trunc(unit_raw: &str, ty: Type, v: &Value) -> Result<Value> {
    let unit = canonical_unit(unit_raw).ok_or_else(|| unit_unknown(unit_raw, ty))?;
    let (ts, tz) = match *v {
        Value::Timestamp(t) => (t, false),
        Value::Timestamptz(t) => (timestamptz_to_timestamp(t), true),
        _ => return Err(SqlError::internal("date_trunc of a non-timestamp")),
    };
    if ts == DT_NOEND || ts == DT_NOBEGIN {
        return Ok(v.clone());
    }
    let (days, us) = ts_parts(ts);
    let (y, m, _) = civil_from_days(days);
    let day_us = |d: i64| d * USECS_PER_DAY;
    let r = match unit {
        "microseconds" => ts,
        "milliseconds" => day_us(days) + us - us % 1000,
        "second" => day_us(days) + us - us % USECS_PER_SEC,
        "minute" => day_us(days) + us - us % 60_000_000,
        "hour" => day_us(days) + us - us % 3_600_000_000,
        "day" => day_us(days),
        "week" => day_us(days - (days + 5).rem_euclid(7)),
        "month" => day_us(days_from_civil(y, m, 1)),
        "quarter" => day_us(days_from_civil(y, (m - 1) / 3 * 3 + 1, 1)),
        "year" => day_us(days_from_civil(y, 1, 1)),
        "decade" => day_us(days_from_civil(y - y.rem_euclid(10), 1, 1)),
        "century" => {
            let c = if y > 0 { (y - 1) / 100 * 100 + 1 } else { -((-y) / 100 * 100) - 99 };
            day_us(days_from_civil(c, 1, 1))
        }
        "millennium" => {
            let c = if y > 0 { (y - 1) / 1000 * 1000 + 1 } else { -((-y) / 1000 * 1000) - 999 };
            day_us(days_from_civil(c, 1, 1))
        }
        _ => return Err(unit_error(unit_raw, ty)),
    };
    Ok(if tz { Value::Timestamptz(timestamp_to_timestamptz(r)) } else { Value::Timestamp(r) })
}

pub fn call(f: DtFunc, vals: &[Value]) -> Result<Value> {
    if vals.iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    let a = vals.first();
    let b = vals.get(1);
    let date_range = || SqlError::new(b"22008", "date out of range");
    Ok(match (f, a, b) {
        (DtFunc::Now(p), _, _) => Value::Timestamptz(round_precision(xact_start(), p)),
        (DtFunc::StatementTimestamp, _, _) => Value::Timestamptz(stmt_start()),
        (DtFunc::ClockTimestamp, _, _) => Value::Timestamptz(clock_now()),
        (DtFunc::CurrentDate, _, _) => Value::Date(ts_to_date(timestamptz_to_timestamp(xact_start()))),
        (DtFunc::LocalTimestamp(p), _, _) => Value::Timestamp(round_precision(timestamptz_to_timestamp(xact_start()), p)),
        (DtFunc::LocalTime(p), _, _) => {
            Value::Time(round_precision(timestamptz_to_timestamp(xact_start()).rem_euclid(USECS_PER_DAY), p).min(USECS_PER_DAY))
        }
        (DtFunc::AtTimeZone(_), Some(Value::Text(z)), Some(v)) => {
            let zone = zone_word(z.trim())
                .or_else(|| parse_zone_setting(z))
                .ok_or_else(|| SqlError::new(b"22023", format!("time zone \"{z}\" not recognized")))?;
            match *v {
                Value::Timestamptz(t) if t == DT_NOEND || t == DT_NOBEGIN => Value::Timestamp(t),
                Value::Timestamp(t) if t == DT_NOEND || t == DT_NOBEGIN => Value::Timestamptz(t),
                Value::Timestamptz(t) => Value::Timestamp(check_ts(t + offset_at_utc(&zone, t) as i64 * USECS_PER_SEC)?),
                Value::Timestamp(t) => Value::Timestamptz(check_ts(t - offset_for_local(&zone, t) as i64 * USECS_PER_SEC)?),
                _ => return Err(SqlError::internal("AT TIME ZONE of a non-timestamp")),
            }
        }
        (DtFunc::CurrentTime(p), _, _) => {
            let (t, z) = current_timetz(p);
            Value::TimeTz(t, z)
        }
        (DtFunc::DatePlusInt | DtFunc::DateMinusInt, Some(Value::Date(d)), Some(n)) => {
            let n = n.as_i64().unwrap_or(0);
            let n = if f == DtFunc::DateMinusInt { -n } else { n };
            if *d == i32::MAX || *d == i32::MIN {
                return Ok(Value::Date(*d));
            }
            let r = *d as i64 + n;
            if !(MIN_DATE_DAYS..END_DATE_DAYS).contains(&r) {
                return Err(date_range());
            }
            Value::Date(r as i32)
        }
        (DtFunc::DateMinusDate, Some(Value::Date(x)), Some(Value::Date(y))) => {
            if [*x, *y].iter().any(|d| *d == i32::MAX || *d == i32::MIN) {
                return Err(SqlError::new(b"22008", "cannot subtract infinite dates"));
            }
            Value::Int4(x - y)
        }
        (DtFunc::TsPlusInterval(t), Some(Value::Timestamp(x) | Value::Timestamptz(x)), Some(Value::Interval(iv))) => {
            wrap(t, ts_plus(t, *x, *iv)?)
        }
        (DtFunc::TsMinusInterval(t), Some(Value::Timestamp(x) | Value::Timestamptz(x)), Some(Value::Interval(iv))) => {
            wrap(t, ts_plus(t, *x, neg(*iv)?)?)
        }
        (DtFunc::TsMinusTs(_), Some(Value::Timestamp(x) | Value::Timestamptz(x)), Some(Value::Timestamp(y) | Value::Timestamptz(y))) => {
            Value::Interval(ts_diff(*x, *y)?)
        }
        (DtFunc::DatePlusInterval, Some(Value::Date(d)), Some(Value::Interval(iv))) => {
            Value::Timestamp(ts_plus(Type::Timestamp, date_to_ts_checked(*d)?, *iv)?)
        }
        (DtFunc::DateMinusInterval, Some(Value::Date(d)), Some(Value::Interval(iv))) => {
            Value::Timestamp(ts_plus(Type::Timestamp, date_to_ts_checked(*d)?, neg(*iv)?)?)
        }
        (DtFunc::IntervalPlus, Some(Value::Interval(x)), Some(Value::Interval(y))) => Value::Interval(iv_add(*x, *y)?),
        (DtFunc::IntervalMinus, Some(Value::Interval(x)), Some(Value::Interval(y))) => Value::Interval(iv_add(*x, neg(*y)?)?),
        (DtFunc::IntervalNeg, Some(Value::Interval(x)), _) => Value::Interval(neg(*x)?),
        (DtFunc::DatePlusTime, Some(Value::Date(d)), Some(Value::Time(t))) => {
            let ts = date_to_ts_checked(*d)?;
            if ts == DT_NOEND || ts == DT_NOBEGIN {
                return Ok(Value::Timestamp(ts));
            }
            Value::Timestamp(check_ts(ts + t)?)
        }
        (DtFunc::IntervalMulFloat | DtFunc::IntervalDivFloat, Some(Value::Interval(x)), Some(v)) => {
            let k = match v {
                Value::Float8(f) => *f,
                v => v.as_i64().unwrap_or(0) as f64,
            };
            if f == DtFunc::IntervalDivFloat && k == 0.0 {
                return Err(SqlError::new(b"22012", "division by zero"));
            }
            Value::Interval(fns::interval_scale(*x, k, f == DtFunc::IntervalDivFloat)?)
        }
        (DtFunc::DatePart(t), Some(u), Some(v)) => date_part(&text_arg(u), t, v)?,
        (DtFunc::DateTrunc(t), Some(u), Some(v)) => date_trunc(&text_arg(u), t, v)?,
        (DtFunc::Extract(t), Some(u), Some(v)) => {
            Value::Numeric(crate::numeric::Numeric::parse(&extract_text(&text_arg(u), t, v)?)?)
        }
        _ => return Err(SqlError::internal(format!("date/time function {f:?} on {vals:?}"))),
    })
}

/// EXTRACT's result as PostgreSQL 15 prints it (a numeric: `30.500000` for
/// seconds, `30500.000` for milliseconds, exact epochs): the value EXTRACT returns.
pub fn extract_text(unit_raw: &str, ty: Type, v: &Value) -> Result<String> {
    let unit = canonical_unit(&unit_raw.to_ascii_lowercase()).ok_or_else(|| unit_unknown(unit_raw, ty))?;
    let fixed = |us: i64, scale: u32| -> String {
        let div = 10i64.pow(scale);
        let sign = if us < 0 { "-" } else { "" };
        let a = us.unsigned_abs() as i64;
        if scale == 0 { format!("{sign}{a}") } else { format!("{sign}{}.{:0w$}", a / div, a % div, w = scale as usize) }
    };
    let secs_part = |us: i64| us % 60_000_000;
    let (us_of_day, epoch_us): (Option<i64>, Option<i64>) = match *v {
        Value::Timestamp(t) | Value::Timestamptz(t) if t == DT_NOEND || t == DT_NOBEGIN => {
            let f = date_part(unit_raw, ty, v)?;
            return Ok(match f {
                Value::Float8(x) if x > 0.0 => "Infinity".into(),
                Value::Float8(_) => "-Infinity".into(),
                _ => String::new(),
            });
        }
        Value::Timestamp(t) => (Some(t.rem_euclid(USECS_PER_DAY)), Some(t + UNIX_TO_PG_DAYS * USECS_PER_DAY)),
        Value::Timestamptz(t) => (Some(timestamptz_to_timestamp(t).rem_euclid(USECS_PER_DAY)), Some(t + UNIX_TO_PG_DAYS * USECS_PER_DAY)),
        Value::Time(t) => (Some(t), Some(t)),
        Value::Interval(iv) => {
            let secs = (iv.months / 12) as i64 * 31_557_600 + (iv.months % 12) as i64 * 2_592_000 + iv.days as i64 * 86_400;
            (Some(iv.micros), Some(secs * USECS_PER_SEC + iv.micros))
        }
        Value::Date(d) if unit == "epoch" => {
            return Ok(fixed((d as i64 + UNIX_TO_PG_DAYS) * 86_400, 0));
        }
        _ => (None, None),
    };
    Ok(match (unit, us_of_day, epoch_us) {
        ("second", Some(us), _) => fixed(secs_part(us), 6),
        ("milliseconds", Some(us), _) => fixed(secs_part(us), 3),
        ("microseconds", Some(us), _) => fixed(secs_part(us), 0),
        ("epoch", _, Some(e)) => fixed(e, 6),
        _ => match date_part(unit_raw, ty, v)? {
            Value::Float8(x) => format!("{}", x as i64),
            _ => String::new(),
        },
    })
}

fn wrap(t: Type, v: i64) -> Value {
    if t == Type::Timestamptz { Value::Timestamptz(v) } else { Value::Timestamp(v) }
}

/// Resolves a binary operator with a date/time operand (after unknown literals
/// took the other side's type): `Some((func, result type, casts))`, where casts
/// say which type each side must be converted to first; `None`: no such operator.
pub fn resolve_operator(op: &str, l: Type, r: Type) -> Option<(Option<DtFunc>, Type, Type, Type)> {
    use Type::*;
    let cmp = matches!(op, "=" | "<>" | "!=" | "<" | "<=" | ">" | ">=");
    if cmp {
        let common = match (l, r) {
            (a, b) if a == b && is_datetime(a) => a,
            (Date, Timestamp) | (Timestamp, Date) => Timestamp,
            (Date | Timestamp, Timestamptz) | (Timestamptz, Date | Timestamp) => Timestamptz,
            _ => return None,
        };
        return Some((None, Bool, common, common));
    }
    Some(match (op, l, r) {
        ("+", Date, Int4 | Int2) => (Some(DtFunc::DatePlusInt), Date, Date, Int4),
        ("+", Int4 | Int2, Date) => return None,
        ("-", Date, Int4 | Int2) => (Some(DtFunc::DateMinusInt), Date, Date, Int4),
        ("-", Date, Date) => (Some(DtFunc::DateMinusDate), Int4, Date, Date),
        ("+", Timestamp | Timestamptz, Interval) => (Some(DtFunc::TsPlusInterval(l)), l, l, Interval),
        ("-", Timestamp | Timestamptz, Interval) => (Some(DtFunc::TsMinusInterval(l)), l, l, Interval),
        ("-", Timestamp, Timestamp) => (Some(DtFunc::TsMinusTs(Timestamp)), Interval, Timestamp, Timestamp),
        ("-", Timestamptz, Timestamptz) => (Some(DtFunc::TsMinusTs(Timestamptz)), Interval, Timestamptz, Timestamptz),
        ("+", Date, Interval) => (Some(DtFunc::DatePlusInterval), Timestamp, Date, Interval),
        ("-", Date, Interval) => (Some(DtFunc::DateMinusInterval), Timestamp, Date, Interval),
        ("+", Interval, Interval) => (Some(DtFunc::IntervalPlus), Interval, Interval, Interval),
        ("-", Interval, Interval) => (Some(DtFunc::IntervalMinus), Interval, Interval, Interval),
        ("*", Interval, Float8 | Float4 | Int4 | Int2 | Int8) => (Some(DtFunc::IntervalMulFloat), Interval, Interval, Float8),
        ("/", Interval, Float8 | Float4 | Int4 | Int2 | Int8) => (Some(DtFunc::IntervalDivFloat), Interval, Interval, Float8),
        ("+", Date, Time) => (Some(DtFunc::DatePlusTime), Timestamp, Date, Time),
        // Mixed timestamp kinds subtract after the implicit cast up (date -> timestamp -> timestamptz).
        ("-", Date, Timestamp) | ("-", Timestamp, Date) => (Some(DtFunc::TsMinusTs(Timestamp)), Interval, Timestamp, Timestamp),
        ("-", Date | Timestamp, Timestamptz) | ("-", Timestamptz, Date | Timestamp) => {
            (Some(DtFunc::TsMinusTs(Timestamptz)), Interval, Timestamptz, Timestamptz)
        }
        _ => return None,
    })
}

/// The column name PostgreSQL gives a SQLValueFunction (CURRENT_DATE etc.).
pub fn sql_value_function_name(op: i32) -> &'static str {
    match op {
        1 => "current_date",
        2 | 3 => "current_time",
        4 | 5 => "current_timestamp",
        6 | 7 => "localtime",
        8 | 9 => "localtimestamp",
        // Session information (`ferrogres_sql::pgcatalog`).
        10 => "current_role",
        11 => "current_user",
        12 => "user",
        13 => "session_user",
        14 => "current_catalog",
        15 => "current_schema",
        _ => "?column?",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trip_and_leap_years() {
        assert_eq!(days_from_civil(2000, 1, 1), 0);
        assert_eq!(days_from_civil(1970, 1, 1), -10_957);
        assert_eq!(civil_from_days(days_from_civil(2024, 2, 29)), (2024, 2, 29));
        assert_eq!(days_from_civil(2024, 3, 1) - days_from_civil(2024, 2, 1), 29);
        assert_eq!(days_from_civil(1900, 3, 1) - days_from_civil(1900, 2, 1), 28);
        assert_eq!(days_from_civil(2000, 3, 1) - days_from_civil(2000, 2, 1), 29);
        for d in [-800_000i64, -1, 0, 1, 59, 60, 365, 366, 2_000_000] {
            let (y, m, dd) = civil_from_days(d);
            assert_eq!(days_from_civil(y, m, dd), d);
        }
        assert_eq!(date_in("2021-02-30").unwrap_err().message, "date/time field value out of range: \"2021-02-30\"");
        assert!(date_in("2024-02-29").is_ok());
        assert_eq!(date_in("2023-02-29").unwrap_err().sqlstate(), "22008");
    }

    #[test]
    fn timestamp_text_forms() {
        let ts = timestamp_in("2021-01-01 10:00:00.1234567").unwrap();
        assert_eq!(timestamp_out(ts), "2021-01-01 10:00:00.123457");
        assert_eq!(timestamp_out(timestamp_in("2024-05-17T08:09:10").unwrap()), "2024-05-17 08:09:10");
        assert_eq!(timestamp_out(timestamp_in("2024-05-17").unwrap()), "2024-05-17 00:00:00");
        assert_eq!(timestamp_out(timestamp_in("epoch").unwrap()), "1970-01-01 00:00:00");
        assert_eq!(timestamp_out(timestamp_in(" infinity ").unwrap()), "infinity");
        assert_eq!(date_out(date_in("0001-01-01 BC").unwrap()), "0001-01-01 BC");
        assert_eq!(date_out(date_in("0001-12-31 BC").unwrap() + 1), "0001-01-01");
        assert_eq!(timestamp_in("abc").unwrap_err().message, "invalid input syntax for type timestamp: \"abc\"");
        assert_eq!(timestamp_in("294277-01-01").unwrap_err().message, "timestamp out of range: \"294277-01-01\"");
        assert_eq!(timestamp_in("2021-01-01 25:00").unwrap_err().sqlstate(), "22008");
        assert_eq!(time_out(time_in("allballs").unwrap()), "00:00:00");
        assert_eq!(time_out(time_in("23:59:59.9999995").unwrap()), "24:00:00");
        let (t, z) = timetz_in("10:20:30.5-0330").unwrap();
        assert_eq!(timetz_out(t, z), "10:20:30.5-03:30");
        let a = timetz_in("10:00+02").unwrap();
        let b = timetz_in("08:00+00").unwrap();
        assert_ne!(timetz_cmp(a, b), std::cmp::Ordering::Equal);
        assert_eq!(timetz_cmp(a, timetz_in("09:00+00").unwrap()), std::cmp::Ordering::Less);
    }

    #[test]
    fn zones() {
        sync_timezone("America/New_York");
        assert_eq!(timestamptz_out(timestamptz_in("2024-07-01 12:00").unwrap()), "2024-07-01 12:00:00-04");
        assert_eq!(timestamptz_out(timestamptz_in("2024-01-01 12:00+00").unwrap()), "2024-01-01 07:00:00-05");
        assert_eq!(timestamptz_out(timestamptz_in("2024-03-10 02:30").unwrap()), "2024-03-10 03:30:00-04");
        assert_eq!(canonical_zone_setting("america/new_york").as_deref(), Some("America/New_York"));
        assert_eq!(canonical_zone_setting("utc").as_deref(), Some("UTC"));
        assert_eq!(canonical_zone_setting("nowhere/at_all"), None);
        sync_timezone("UTC");
        assert_eq!(timestamptz_out(timestamptz_in("2024-01-01 00:00+05:30").unwrap()), "2023-12-31 18:30:00+00");
        assert_eq!(timestamptz_out(timestamptz_in("2024-01-01 10:00:00-0330").unwrap()), "2024-01-01 13:30:00+00");
        assert_eq!(timestamptz_out(timestamptz_in("2024-01-01 10:00:00 PST").unwrap()), "2024-01-01 18:00:00+00");
        sync_timezone("<-08>+08");
        assert_eq!(timestamptz_out(timestamptz_in("2024-01-01 00:00+00").unwrap()), "2023-12-31 16:00:00-08");
        sync_timezone("UTC");
    }

    #[test]
    fn intervals() {
        let f = |s: &str| interval_out(&interval_in(s).unwrap());
        assert_eq!(f("-1 day 2 hours"), "-1 days +02:00:00");
        assert_eq!(f("1 year 2 months 3 days 04:05:06.5"), "1 year 2 mons 3 days 04:05:06.5");
        assert_eq!(f("@ 1 minute ago"), "-00:01:00");
        assert_eq!(f("-1 mons -2 days"), "-1 mons -2 days");
        assert_eq!(f("0"), "00:00:00");
        assert_eq!(f("100 hours"), "100:00:00");
        assert_eq!(f("1.5 days"), "1 day 12:00:00");
        assert_eq!(f("1 week"), "7 days");
        assert_eq!(interval_in("abc").unwrap_err().message, "invalid input syntax for type interval: \"abc\"");
        let ts = timestamp_in("2024-01-31 10:00").unwrap();
        let r = ts_plus(Type::Timestamp, ts, interval_in("1 month").unwrap()).unwrap();
        assert_eq!(timestamp_out(r), "2024-02-29 10:00:00");
        let d = ts_diff(timestamp_in("2024-01-01").unwrap(), timestamp_in("2023-12-25 12:00").unwrap()).unwrap();
        assert_eq!(interval_out(&d), "6 days 12:00:00");
    }

    #[test]
    fn fields() {
        let ts = Value::Timestamp(timestamp_in("2024-01-01 10:20:30.5").unwrap());
        assert_eq!(date_part("dow", Type::Timestamp, &ts).unwrap(), Value::Float8(1.0));
        assert_eq!(date_part("second", Type::Timestamp, &ts).unwrap(), Value::Float8(30.5));
        let e = Value::Timestamp(timestamp_in("2024-01-01").unwrap());
        assert_eq!(date_part("epoch", Type::Timestamp, &e).unwrap(), Value::Float8(1704067200.0));
        assert_eq!(date_part("week", Type::Timestamp, &e).unwrap(), Value::Float8(1.0));
        let m = Value::Timestamp(timestamp_in("2024-05-17 10:00").unwrap());
        assert_eq!(date_trunc("month", Type::Timestamp, &m).unwrap(), Value::Timestamp(timestamp_in("2024-05-01").unwrap()));
        assert_eq!(date_trunc("week", Type::Timestamp, &m).unwrap(), Value::Timestamp(timestamp_in("2024-05-13").unwrap()));
        assert_eq!(round_precision(1_500_000, 0), 2_000_000);
        // Extremes are errors, not overflows.
        assert_eq!(date_in("999999999999999999-01-01").unwrap_err().sqlstate(), "22008");
        assert_eq!(interval_in("99999999999999999:00").unwrap_err().sqlstate(), "22007");
        let far = ts_plus(Type::Timestamp, 0, interval_in("178000000 years").unwrap()).unwrap_err();
        assert_eq!(far.message, "timestamp out of range");
        // EXTRACT's numeric text, as PostgreSQL 15 prints it.
        let ts = Value::Timestamp(timestamp_in("2024-01-01 10:20:30.5").unwrap());
        let x = |u: &str, t: Type, v: &Value| extract_text(u, t, v).unwrap();
        assert_eq!(x("second", Type::Timestamp, &ts), "30.500000");
        assert_eq!(x("milliseconds", Type::Timestamp, &ts), "30500.000");
        assert_eq!(x("microseconds", Type::Timestamp, &ts), "30500000");
        assert_eq!(x("epoch", Type::Timestamp, &ts), "1704104430.500000");
        assert_eq!(x("year", Type::Date, &Value::Date(date_in("2024-05-01").unwrap())), "2024");
        assert_eq!(x("epoch", Type::Date, &Value::Date(date_in("2024-05-01").unwrap())), "1714521600");
        assert_eq!(x("epoch", Type::Interval, &Value::Interval(interval_in("1 day 1.5 seconds").unwrap())), "86401.500000");
        assert_eq!(x("second", Type::Interval, &Value::Interval(interval_in("1.5 seconds").unwrap())), "1.500000");
        assert_eq!(x("epoch", Type::Time, &Value::Time(time_in("10:00:00.25").unwrap())), "36000.250000");
        assert_eq!(x("dow", Type::Timestamp, &Value::Timestamp(timestamp_in("2024-01-01").unwrap())), "1");
        assert_eq!(x("epoch", Type::Timestamp, &Value::Timestamp(DT_NOEND)), "Infinity");
    }
}
