//! DateStyle and IntervalStyle: the settings' values as PostgreSQL 15 checks and
//! normalizes them, and the text forms of dates, timestamps and intervals in each
//! style.
//!
//! | DateStyle | date | timestamp(tz) |
//! |---|---|---|
//! | ISO | `2024-01-05` | `2024-01-05 10:11:12.5-08` |
//! | SQL, MDY | `01/05/2024` | `01/05/2024 10:11:12.5 PST` |
//! | SQL, DMY | `05/01/2024` | `05/01/2024 10:11:12.5 PST` |
//! | Postgres, MDY | `01-05-2024` | `Fri Jan 05 10:11:12.5 2024 PST` |
//! | Postgres, DMY | `05-01-2024` | `Fri 05 Jan 10:11:12.5 2024 PST` |
//! | German | `05.01.2024` | `05.01.2024 10:11:12.5 PST` |
//!
//! (YMD orders like MDY in output; the order part matters for input.) `time`
//! and `timetz` print the same in every style. BC dates end in ` BC`.
//!
//! | IntervalStyle | `-1 day +02:00:00` | `1 year 2 mons 3 days 04:05:06` |
//! |---|---|---|
//! | postgres | `-1 days +02:00:00` | `1 year 2 mons 3 days 04:05:06` |
//! | postgres_verbose | `@ 1 day -2 hours ago` | `@ 1 year 2 mons 3 days 4 hours 5 mins 6 secs` |
//! | sql_standard | `+0-0 -1 +2:00:00` | `+1-2 +3 +4:05:06` |
//! | iso_8601 | `P-1DT2H` | `P1Y2M3DT4H5M6S` |
//!
//! The styles in force live per thread, like the TimeZone of `datetime`: the
//! session calls [`sync`] with its settings before analysis, Bind and execution,
//! so the output functions (`types::output`, used by result columns, casts to
//! text, concat/format, COPY TO and array output) need no extra argument.

use crate::errors::{Result, SqlError};
use std::cell::Cell;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DateStyle {
    Iso,
    Sql,
    Postgres,
    German,
}

/// The order of day, month and year in ambiguous input (and in SQL/Postgres output).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DateOrder {
    Ymd,
    Dmy,
    Mdy,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntervalStyle {
    Postgres,
    PostgresVerbose,
    SqlStandard,
    Iso8601,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Styles {
    pub date: DateStyle,
    pub order: DateOrder,
    pub interval: IntervalStyle,
    /// bytea_output = escape (else hex).
    pub bytea_escape: bool,
}

pub const DEFAULT: Styles = Styles { date: DateStyle::Iso, order: DateOrder::Mdy, interval: IntervalStyle::Postgres, bytea_escape: false };

thread_local! {
    static STYLES: Cell<Styles> = const { Cell::new(DEFAULT) };
}

/// The styles of the session running on this thread.
pub fn current() -> Styles {
    STYLES.with(Cell::get)
}

/// Makes the thread's styles follow the session's DateStyle, IntervalStyle and
/// bytea_output values (already normalized by [`check_datestyle`] and the
/// other settings' checks).
pub fn sync(datestyle: &str, intervalstyle: &str, bytea_output: &str) {
    let (date, order) = parse_normalized(datestyle).unwrap_or((DEFAULT.date, DEFAULT.order));
    let interval = match intervalstyle {
        "postgres_verbose" => IntervalStyle::PostgresVerbose,
        "sql_standard" => IntervalStyle::SqlStandard,
        "iso_8601" => IntervalStyle::Iso8601,
        _ => IntervalStyle::Postgres,
    };
    STYLES.with(|s| s.set(Styles { date, order, interval, bytea_escape: bytea_output == "escape" }));
}

fn parse_normalized(v: &str) -> Option<(DateStyle, DateOrder)> {
    let (s, o) = v.split_once(", ")?;
    let style = match s {
        "ISO" => DateStyle::Iso,
        "SQL" => DateStyle::Sql,
        "Postgres" => DateStyle::Postgres,
        "German" => DateStyle::German,
        _ => return None,
    };
    let order = match o {
        "YMD" => DateOrder::Ymd,
        "DMY" => DateOrder::Dmy,
        "MDY" => DateOrder::Mdy,
        _ => return None,
    };
    Some((style, order))
}

fn normalized(style: DateStyle, order: DateOrder) -> String {
    let s = match style {
        DateStyle::Iso => "ISO",
        DateStyle::Sql => "SQL",
        DateStyle::Postgres => "Postgres",
        DateStyle::German => "German",
    };
    let o = match order {
        DateOrder::Ymd => "YMD",
        DateOrder::Dmy => "DMY",
        DateOrder::Mdy => "MDY",
    };
    format!("{s}, {o}")
}

/// Splits a list setting as PostgreSQL's identifier lists are split: items
/// separated by commas, blanks around them, `"quoted"` items kept as written,
/// others lowercased. `None`: the list syntax is invalid.
fn split_identifier_list(v: &str) -> Option<Vec<String>> {
    let b: Vec<char> = v.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    let skip_ws = |i: &mut usize| {
        while *i < b.len() && b[*i].is_whitespace() {
            *i += 1;
        }
    };
    skip_ws(&mut i);
    if i == b.len() {
        return Some(out);
    }
    loop {
        let mut item = String::new();
        if b.get(i) == Some(&'"') {
            i += 1;
            loop {
                match b.get(i) {
                    None => return None,
                    Some('"') if b.get(i + 1) == Some(&'"') => {
                        item.push('"');
                        i += 2;
                    }
                    Some('"') => {
                        i += 1;
                        break;
                    }
                    Some(c) => {
                        item.push(*c);
                        i += 1;
                    }
                }
            }
            if item.is_empty() {
                return None;
            }
        } else {
            while i < b.len() && b[i] != ',' && !b[i].is_whitespace() {
                item.push(b[i].to_ascii_lowercase());
                i += 1;
            }
            if item.is_empty() {
                return None;
            }
        }
        out.push(item);
        skip_ws(&mut i);
        match b.get(i) {
            None => return Some(out),
            Some(',') => {
                i += 1;
                skip_ws(&mut i);
            }
            Some(_) => return None,
        }
    }
}

/// SET DateStyle: the value as SHOW prints it (`"Postgres, MDY"`), from a list of
/// a style (ISO, SQL, Postgres, German) and/or an order (YMD; DMY, Euro,
/// European; MDY, US, NonEuro, NonEuropean) or DEFAULT. What the value leaves
/// out is kept from `current`; German alone also means DMY.
pub fn check_datestyle(value: &str, current: &str) -> Result<String> {
    let invalid = |detail: String| {
        SqlError::new(b"22023", format!("invalid value for parameter \"DateStyle\": \"{value}\"")).with_detail(detail)
    };
    let Some(items) = split_identifier_list(value) else {
        return Err(invalid("List syntax is invalid.".into()));
    };
    let (mut style, mut order) = parse_normalized(current).unwrap_or((DEFAULT.date, DEFAULT.order));
    let (mut have_style, mut have_order) = (false, false);
    let mut conflict = false;
    for item in &items {
        let new_style = match item.to_ascii_lowercase().as_str() {
            "iso" => Some(DateStyle::Iso),
            "sql" => Some(DateStyle::Sql),
            "postgres" => Some(DateStyle::Postgres),
            "german" => Some(DateStyle::German),
            _ => None,
        };
        let new_order = match item.to_ascii_lowercase().as_str() {
            "ymd" => Some(DateOrder::Ymd),
            "dmy" | "euro" | "european" => Some(DateOrder::Dmy),
            "mdy" | "us" | "noneuro" | "noneuropean" => Some(DateOrder::Mdy),
            _ => None,
        };
        if let Some(s) = new_style {
            conflict |= have_style && s != style;
            style = s;
            have_style = true;
            if s == DateStyle::German && !have_order {
                order = DateOrder::Dmy;
            }
        } else if let Some(o) = new_order {
            conflict |= have_order && o != order;
            order = o;
            have_order = true;
        } else if item.eq_ignore_ascii_case("default") {
            style = DEFAULT.date;
            order = DEFAULT.order;
        } else {
            return Err(invalid(format!("Unrecognized key word: \"{item}\".")));
        }
    }
    if conflict {
        return Err(invalid("Conflicting \"datestyle\" specifications.".into()));
    }
    Ok(normalized(style, order))
}

// ---- output -------------------------------------------------------------------

/// bytea in the escape format: printable ASCII as is, a backslash doubled,
/// other bytes as a backslash and three octal digits.
pub fn bytea_escape_text(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len());
    for &x in b {
        match x {
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(x as char),
            _ => s.push_str(&format!("\\{x:03o}")),
        }
    }
    s
}

const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const WEEKDAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];

/// `(year as printed, bc)` of an astronomical year (1 BC = 0).
fn era_year(y: i64) -> (i64, bool) {
    if y <= 0 { (1 - y, true) } else { (y, false) }
}

/// A date's text in `st` (not ISO: the caller prints ISO itself).
pub fn date_text(st: Styles, y: i64, m: u32, d: u32) -> String {
    let (yy, bc) = era_year(y);
    let mut s = match (st.date, st.order) {
        (DateStyle::Iso, _) => format!("{yy:04}-{m:02}-{d:02}"),
        (DateStyle::Sql, DateOrder::Dmy) => format!("{d:02}/{m:02}/{yy:04}"),
        (DateStyle::Sql, _) => format!("{m:02}/{d:02}/{yy:04}"),
        (DateStyle::German, _) => format!("{d:02}.{m:02}.{yy:04}"),
        (DateStyle::Postgres, DateOrder::Dmy) => format!("{d:02}-{m:02}-{yy:04}"),
        (DateStyle::Postgres, _) => format!("{m:02}-{d:02}-{yy:04}"),
    };
    if bc {
        s.push_str(" BC");
    }
    s
}

/// A timestamp's text in a non-ISO style. `days` counts from 2000-01-01 (for the
/// weekday), `time` is the time of day's text, `zone` the zone abbreviation of
/// a timestamptz.
pub fn timestamp_text(st: Styles, days: i64, (y, m, d): (i64, u32, u32), time: &str, zone: Option<&str>) -> String {
    let (yy, bc) = era_year(y);
    let mut s = match (st.date, st.order) {
        (DateStyle::Postgres, order) => {
            // 2000-01-01 was a Saturday.
            let wday = WEEKDAYS[(days + 6).rem_euclid(7) as usize];
            let mon = MONTHS[m as usize - 1];
            if order == DateOrder::Dmy {
                format!("{wday} {d:02} {mon} {time} {yy:04}")
            } else {
                format!("{wday} {mon} {d:02} {time} {yy:04}")
            }
        }
        _ => {
            let date = date_text(st, y, m, d);
            let date = date.strip_suffix(" BC").unwrap_or(&date).to_string();
            format!("{date} {time}")
        }
    };
    if let Some(z) = zone {
        s.push(' ');
        s.push_str(z);
    }
    if bc {
        s.push_str(" BC");
    }
    s
}

/// Seconds with the fraction's trailing zeros removed; `pad`: two digits at least.
fn seconds_text(secs: i64, frac_us: i64, pad: bool) -> String {
    let mut s = if pad { format!("{:02}", secs.abs()) } else { secs.abs().to_string() };
    let f = frac_us.abs();
    if f != 0 {
        let t = format!("{f:06}");
        s.push('.');
        s.push_str(t.trim_end_matches('0'));
    }
    s
}

/// An interval's text in postgres_verbose, sql_standard or iso_8601.
pub fn interval_text(style: IntervalStyle, months: i32, days: i32, micros: i64) -> String {
    let year = (months / 12) as i64;
    let mon = (months % 12) as i64;
    let mday = days as i64;
    let hour = micros / 3_600_000_000;
    let min = micros / 60_000_000 % 60;
    let sec = micros / 1_000_000 % 60;
    let fsec = micros % 1_000_000;
    match style {
        IntervalStyle::SqlStandard => {
            let fields = [year, mon, mday, hour, min, sec, fsec];
            let neg = fields.iter().any(|&v| v < 0);
            let pos = fields.iter().any(|&v| v > 0);
            let has_ym = year != 0 || mon != 0;
            let has_dt = mday != 0 || hour != 0 || min != 0 || sec != 0 || fsec != 0;
            let standard = !((neg && pos) || (has_ym && has_dt));
            let secs = seconds_text(sec, fsec, true);
            if !neg && !pos {
                "0".into()
            } else if !standard {
                let ys = if year < 0 || mon < 0 { '-' } else { '+' };
                let ds = if mday < 0 { '-' } else { '+' };
                let ts = if hour < 0 || min < 0 || sec < 0 || fsec < 0 { '-' } else { '+' };
                format!("{ys}{}-{} {ds}{} {ts}{}:{:02}:{secs}", year.abs(), mon.abs(), mday.abs(), hour.abs(), min.abs())
            } else {
                let sign = if neg { "-" } else { "" };
                if has_ym {
                    format!("{sign}{}-{}", year.abs(), mon.abs())
                } else if mday != 0 {
                    format!("{sign}{} {}:{:02}:{secs}", mday.abs(), hour.abs(), min.abs())
                } else {
                    format!("{sign}{}:{:02}:{secs}", hour.abs(), min.abs())
                }
            }
        }
        IntervalStyle::Iso8601 => {
            if months == 0 && days == 0 && micros == 0 {
                return "PT0S".into();
            }
            let mut s = String::from("P");
            let part = |s: &mut String, v: i64, unit: char| {
                if v != 0 {
                    s.push_str(&format!("{v}{unit}"));
                }
            };
            part(&mut s, year, 'Y');
            part(&mut s, mon, 'M');
            part(&mut s, mday, 'D');
            if micros != 0 {
                s.push('T');
            }
            part(&mut s, hour, 'H');
            part(&mut s, min, 'M');
            if sec != 0 || fsec != 0 {
                if sec < 0 || fsec < 0 {
                    s.push('-');
                }
                s.push_str(&seconds_text(sec, fsec, false));
                s.push('S');
            }
            s
        }
        IntervalStyle::PostgresVerbose | IntervalStyle::Postgres => {
            let mut s = String::from("@");
            let mut is_zero = true;
            let mut is_before = false;
            for (v, unit) in [(year, "year"), (mon, "mon"), (mday, "day"), (hour, "hour"), (min, "min")] {
                if v == 0 {
                    continue;
                }
                // The first field's sign becomes "ago"; later fields are printed
                // relative to it.
                let shown = if is_zero {
                    is_before = v < 0;
                    v.abs()
                } else if is_before {
                    -v
                } else {
                    v
                };
                s.push_str(&format!(" {shown} {unit}{}", if shown == 1 { "" } else { "s" }));
                is_zero = false;
            }
            if sec != 0 || fsec != 0 {
                s.push(' ');
                if sec < 0 || (sec == 0 && fsec < 0) {
                    if is_zero {
                        is_before = true;
                    } else if !is_before {
                        s.push('-');
                    }
                } else if is_before {
                    s.push('-');
                }
                s.push_str(&seconds_text(sec, fsec, false));
                s.push_str(if sec.abs() != 1 || fsec != 0 { " secs" } else { " sec" });
                is_zero = false;
            }
            if is_zero {
                s.push_str(" 0");
            }
            if is_before {
                s.push_str(" ago");
            }
            s
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datestyle_values() {
        assert_eq!(check_datestyle("Postgres, MDY", "ISO, MDY").unwrap(), "Postgres, MDY");
        assert_eq!(check_datestyle("european", "ISO, MDY").unwrap(), "ISO, DMY");
        assert_eq!(check_datestyle("German", "ISO, MDY").unwrap(), "German, DMY");
        assert_eq!(check_datestyle("ymd, german", "ISO, MDY").unwrap(), "German, YMD");
        assert_eq!(check_datestyle("", "SQL, DMY").unwrap(), "SQL, DMY");
        assert!(check_datestyle("iso, sql", "ISO, MDY").is_err());
        assert!(check_datestyle("sql iso", "ISO, MDY").is_err());
    }

    #[test]
    fn verbose_intervals() {
        let v = |m, d, us| interval_text(IntervalStyle::PostgresVerbose, m, d, us);
        assert_eq!(v(0, 0, 0), "@ 0");
        assert_eq!(v(0, -1, 7_200_000_000), "@ 1 day -2 hours ago");
        assert_eq!(v(0, 1, -1_000_000), "@ 1 day -1 sec");
        assert_eq!(interval_text(IntervalStyle::SqlStandard, 0, -1, 7_200_000_000), "+0-0 -1 +2:00:00");
        assert_eq!(interval_text(IntervalStyle::Iso8601, 0, -1, 7_200_000_000), "P-1DT2H");
    }
}
