//! Date and time input beyond ISO 8601: the forms PostgreSQL 15 reads in every
//! DateStyle.
//!
//! | form | example | read as |
//! |---|---|---|
//! | ISO | `2024-01-05`, `2024-1-5`, `2024/01/05` | year first (a first field of 3+ digits) |
//! | numeric with order | `01/05/2024`, `01-05-2024`, `05.01.2024` | by the DateStyle order: MDY, DMY or YMD |
//! | month names | `Jan 5 2024`, `5 January 2024`, `2024 Jan 5`, `05-Jan-2024` | the number of 3+ digits is the year; otherwise YMD takes the first number as the year, MDY/DMY the second |
//! | concatenated | `20240105`, `240105` | YYYYMMDD, YYMMDD |
//! | weekday | `Fri Jan 05 10:11:12 2024 PST` | the weekday is ignored (DateStyle Postgres output reads back) |
//! | day of year, Julian day | `1999.008`, `J2451187` | |
//!
//! Fields are read in order, each number's role following from the fields
//! already seen and the order (`DateState::number`), as PostgreSQL does: a
//! month name after a numeric month turns that number into the day
//! (`5 January 2024` in MDY), a two-digit year followed by a longer number
//! after a month name was the day (`5 Jan 2024` in YMD).
//!
//! Years of one or two digits are read as 1970..2069 (not with BC). A month
//! outside 1..12 or a day outside 1..31 is 22008 with PostgreSQL's hint
//! `Perhaps you need a different "datestyle" setting.`; a day past the month's
//! end or year 0 is 22008 without it. Times take `AM`/`PM`; zones are offsets
//! (`+05`, `-08:00`, `Z`), abbreviations (`PST`) or zone names.

use super::*;
use crate::datestyle::DateOrder;

const MONTH_NAMES: [&str; 12] =
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];
const WEEKDAY_NAMES: [&str; 7] = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"];

/// A month's number from its name or three-letter abbreviation (`sept` too).
fn month_word(w: &str) -> Option<u32> {
    let w = w.strip_suffix('.').unwrap_or(w);
    if w.len() < 3 {
        return None;
    }
    if w == "sept" {
        return Some(9);
    }
    MONTH_NAMES.iter().position(|m| *m == w || (w.len() == 3 && m.starts_with(w))).map(|i| i as u32 + 1)
}

fn weekday_word(w: &str) -> bool {
    let w = w.strip_suffix('.').unwrap_or(w);
    w.len() >= 3 && WEEKDAY_NAMES.iter().any(|d| *d == w || (w.len() == 3 && d.starts_with(w)) || (w == "tues" || w == "wednes" || w == "thur" || w == "thurs"))
}

/// Which date fields are set so far.
#[derive(Clone, Copy, Default, PartialEq)]
struct Mask {
    year: bool,
    month: bool,
    day: bool,
}

impl Mask {
    fn full(self) -> bool {
        self.year && self.month && self.day
    }
    fn any(self) -> bool {
        self.year || self.month || self.day
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Field {
    Year,
    Month,
    Day,
}

/// The date being assembled from its fields, in the order they come.
#[derive(Default)]
struct DateState {
    mask: Mask,
    year: i64,
    month: i64,
    day: i64,
    /// The year was written with one or two digits (1970..2069 unless BC).
    two_digit_year: bool,
    /// A month name was seen (it settles which numbers are day and year).
    text_month: bool,
    /// The date came from a Julian day or today/tomorrow/yesterday: its year
    /// is astronomical (no BC step, no two-digit years).
    julian: bool,
}

/// `None`: the fields cannot make a date (22007).
type Step = Option<()>;

impl DateState {
    fn set(&mut self, f: Field, v: i64) -> Step {
        let slot = match f {
            Field::Year => &mut self.mask.year,
            Field::Month => &mut self.mask.month,
            Field::Day => &mut self.mask.day,
        };
        if *slot {
            return None;
        }
        *slot = true;
        match f {
            Field::Year => self.year = v,
            Field::Month => self.month = v,
            Field::Day => self.day = v,
        }
        Some(())
    }

    /// One numeric field of `digits` digits: which field it is follows from
    /// the fields already seen and the DateStyle order. A first field of three
    /// or more digits is a year (ISO's year first); after a month name, a
    /// two-digit field is a day unless the order is YMD; a year of two digits
    /// followed, after a month name, by a number of three or more digits was
    /// the day.
    fn number(&mut self, digits: &str, text_month: bool, order: DateOrder) -> Step {
        let v: i64 = digits.parse().ok()?;
        let long = digits.len() >= 3;
        let m = self.mask;
        let f = match (m.year, m.month, m.day) {
            (false, false, false) => {
                if long || order == DateOrder::Ymd {
                    Field::Year
                } else if order == DateOrder::Dmy {
                    Field::Day
                } else {
                    Field::Month
                }
            }
            (true, false, false) => Field::Month,
            (true, true, false) => {
                if text_month && long && self.two_digit_year {
                    // YY MON DDDD: the first number was the day.
                    self.day = self.year;
                    self.mask.day = true;
                    self.year = v;
                    self.two_digit_year = false;
                    return Some(());
                }
                Field::Day
            }
            (false, true, false) => {
                if text_month && (long || order == DateOrder::Ymd) {
                    Field::Year
                } else {
                    Field::Day
                }
            }
            (false, true, true) => Field::Year,
            (false, false, true) => Field::Month,
            _ => return None,
        };
        if f == Field::Year {
            self.two_digit_year = digits.len() <= 2;
        }
        self.set(f, v)
    }

    /// A month name; a numeric month already read (without a day) becomes the day.
    fn month_name(&mut self, m: u32) -> Step {
        if self.mask.month && !self.text_month && !self.mask.day && (1..=31).contains(&self.month) {
            self.day = self.month;
            self.mask.day = true;
            self.month = m as i64;
            self.text_month = true;
            return Some(());
        }
        self.text_month = true;
        self.set(Field::Month, m as i64)
    }

    /// A field with separators (`2024-01-05`, `01/05/2024`, `05-Jan-2024`):
    /// its month name first, then its numbers in order; it must complete the date.
    fn group(&mut self, parts: &[&str], order: DateOrder) -> Step {
        let mut text_month = false;
        for p in parts.iter().filter(|p| !all_digits(p)) {
            if weekday_word(p) {
                continue;
            }
            let m = month_word(p)?;
            self.set(Field::Month, m as i64)?;
            text_month = true;
        }
        self.text_month |= text_month;
        for p in parts.iter().filter(|p| all_digits(p)) {
            self.number(p, text_month, order)?;
        }
        self.mask.full().then_some(())
    }
}

/// `1999.008`: four digits, a dot, three digits.
fn is_year_day(s: &str) -> bool {
    s.split_once('.').is_some_and(|(y, d)| y.len() == 4 && d.len() == 3 && all_digits(y) && all_digits(d))
}

fn all_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// Splits a word at the end of a date with separators that has more after it
/// (`99-08-jan` -> `99-08-`, `jan`): a numeric date continues over digits and
/// its own separator only.
fn split_date_word(w: &str) -> (String, Option<String>) {
    let b = w.as_bytes();
    let mut i = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let Some(&delim) = b.get(i).filter(|c| matches!(c, b'-' | b'/' | b'.')) else { return (w.to_string(), None) };
    if !b.get(i + 1).is_some_and(|c| c.is_ascii_digit()) {
        // 05-jan-2024: text month inside, the rest is the date.
        return (w.to_string(), None);
    }
    i += 1;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    if b.get(i) == Some(&delim) {
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == delim) {
            i += 1;
        }
    }
    if i < b.len() {
        (w[..i].to_string(), Some(w[i..].to_string()))
    } else {
        (w.to_string(), None)
    }
}

/// Reads `s` (already stripped of the special words) for `ty`.
pub(super) fn decode(s: &str, ty: Type) -> Result<Parsed> {
    let mut p = Parsed::default();
    let t = s.trim();
    let order = crate::datestyle::current().order;
    let bad = || syntax(ty, s);
    // Words: split on blanks and commas; a 'T' between an ISO date and a time
    // splits too, as does text after a numeric date (`99-08-Jan`).
    let mut tokens: Vec<String> = Vec::new();
    for w in t.split(|c: char| c.is_ascii_whitespace() || c == ',').filter(|w| !w.is_empty()) {
        let mut w = w.to_string();
        if let Some((d, rest)) = w.split_once(['T', 't']) {
            if d.contains('-') && d.bytes().next().is_some_and(|b| b.is_ascii_digit()) && !rest.is_empty() {
                let (d, rest) = (d.to_string(), rest.to_string());
                tokens.push(d);
                w = rest;
            }
        }
        // 5:32PM: the meridiem glued to the time.
        if w.contains(':') {
            let l = w.to_ascii_lowercase();
            if let Some(t) = l.strip_suffix("am").or_else(|| l.strip_suffix("pm")) {
                if t.bytes().next_back().is_some_and(|b| b.is_ascii_digit()) {
                    tokens.push(w[..t.len()].to_string());
                    tokens.push(w[t.len()..].to_string());
                    continue;
                }
            }
        }
        // 97FEB10: digits and a month name run together.
        if w.as_bytes()[0].is_ascii_digit() && !w.contains([':', '-', '/', '.']) && w.bytes().any(|b| b.is_ascii_alphabetic()) {
            let mut runs: Vec<String> = Vec::new();
            for c in w.chars() {
                match runs.last_mut() {
                    Some(r) if r.chars().next().is_some_and(|f| f.is_ascii_digit() == c.is_ascii_digit()) => r.push(c),
                    _ => runs.push(c.to_string()),
                }
            }
            if runs.iter().any(|r| month_word(&r.to_ascii_lowercase()).is_some()) {
                tokens.push(runs.join("-"));
                continue;
            }
        }
        if w.as_bytes()[0].is_ascii_digit() && !w.contains(':') {
            let (head, tail) = split_date_word(&w);
            tokens.push(head);
            if let Some(tail) = tail {
                tokens.push(tail);
            }
            continue;
        }
        tokens.push(w);
    }
    if tokens.is_empty() {
        return Err(bad());
    }
    let mut ds = DateState::default();
    let mut bc = false;
    let mut range_error = false;
    let mut ampm: Option<bool> = None;
    for tok in &tokens {
        let lower = tok.to_ascii_lowercase();
        let first = tok.as_bytes()[0];
        let delim = lower.bytes().find(|b| matches!(b, b'-' | b'/' | b'.')).map(|b| b as char);
        let month_led = first.is_ascii_alphabetic()
            && delim.is_some_and(|d| lower.split(d).next().and_then(month_word).is_some());
        if first.is_ascii_digit() && tok.contains(':') && p.time.is_none() {
            // The time, possibly with a zone glued on: 10:00:00+02, 10:00Z.
            let cut = tok.find(['+', '-', 'z', 'Z']).unwrap_or(tok.len());
            match parse_time(&tok[..cut]) {
                Ok(us) => p.time = Some(us),
                Err(true) => range_error = true,
                Err(false) => return Err(bad()),
            }
            let z = &tok[cut..];
            if !z.is_empty() {
                p.zone = Some(if z.eq_ignore_ascii_case("z") { Zone::Fixed(0) } else { Zone::Fixed(parse_offset(z).ok_or_else(bad)?) });
            }
        } else if first.is_ascii_digit() && delim == Some('.') && !ds.mask.any() && is_year_day(&lower) {
            // YYYY.DDD: a day of the year.
            let (y, doy) = lower.split_once('.').unwrap_or_default();
            let (y, doy): (i64, i64) = (y.parse().map_err(|_| bad())?, doy.parse().map_err(|_| bad())?);
            let days = days_from_civil(y, 1, 1) + doy - 1;
            let (yy, m, d) = civil_from_days(days);
            if yy != y {
                return Err(field_range(s));
            }
            ds.set(Field::Year, y);
            ds.set(Field::Month, m as i64);
            ds.set(Field::Day, d as i64);
        } else if (lower.starts_with('j') && lower.len() > 1 && all_digits(&lower[1..])) && !ds.mask.any() {
            // Jnnnnnnn: a Julian day number.
            let jd: i64 = lower[1..].parse().map_err(|_| bad())?;
            let (y, m, d) = civil_from_days(jd - 2_451_545);
            ds.set(Field::Year, y);
            ds.set(Field::Month, m as i64);
            ds.set(Field::Day, d as i64);
            ds.julian = true;
        } else if (first.is_ascii_digit() && delim.is_some()) || month_led {
            let d = delim.unwrap_or('-');
            let parts: Vec<&str> = lower.split(d).filter(|x| !x.is_empty()).collect();
            if parts.iter().any(|x| x.bytes().all(|b| b.is_ascii_digit()) && x.len() > 9) {
                return Err(ts_out_of_range(ty, s));
            }
            ds.group(&parts, order).ok_or_else(bad)?;
        } else if all_digits(tok) {
            if !ds.mask.any() && (tok.len() == 8 || tok.len() == 6) {
                // YYYYMMDD / YYMMDD.
                let yl = tok.len() - 4;
                ds.set(Field::Year, tok[..yl].parse().unwrap_or(0));
                ds.two_digit_year = yl == 2;
                ds.set(Field::Month, tok[yl..yl + 2].parse().unwrap_or(0));
                ds.set(Field::Day, tok[yl + 2..].parse().unwrap_or(0));
            } else if ds.mask.full() && p.time.is_none() && tok.len() == 6 {
                // 19970210 173201: HHMMSS after the date.
                let t = format!("{}:{}:{}", &tok[..2], &tok[2..4], &tok[4..]);
                match parse_time(&t) {
                    Ok(us) => p.time = Some(us),
                    Err(true) => range_error = true,
                    Err(false) => return Err(bad()),
                }
            } else if tok.len() > 9 {
                return Err(ts_out_of_range(ty, s));
            } else {
                let text_month = ds.text_month;
                ds.number(tok, text_month, order).ok_or_else(bad)?;
            }
        } else if (first == b'+' || first == b'-') && p.zone.is_none() && (p.time.is_some() || ds.mask.any()) {
            p.zone = Some(Zone::Fixed(parse_offset(tok).ok_or_else(bad)?));
        } else if matches!(lower.as_str(), "today" | "tomorrow" | "yesterday") && !ds.mask.any() {
            // With other fields (`tomorrow EST`, `today 10:00`): that day's date.
            super::mark_clock_read();
            let shift = match lower.as_str() {
                "tomorrow" => 1,
                "yesterday" => -1,
                _ => 0,
            };
            let (y, m, d) = civil_from_days(local_midnight_today().div_euclid(USECS_PER_DAY) + shift);
            ds.set(Field::Year, y);
            ds.set(Field::Month, m as i64);
            ds.set(Field::Day, d as i64);
            ds.julian = true;
        } else if lower == "allballs" && p.time.is_none() {
            p.time = Some(0);
            p.zone = Some(Zone::Fixed(0));
        } else if lower == "bc" && !bc {
            bc = true;
        } else if lower == "ad" {
        } else if (lower == "am" || lower == "pm" || lower == "a.m." || lower == "p.m.") && ampm.is_none() {
            ampm = Some(lower.starts_with('p'));
        } else if let Some(m) = month_word(&lower) {
            ds.month_name(m).ok_or_else(bad)?;
        } else if weekday_word(&lower) {
        } else if first.is_ascii_alphabetic() && p.zone.is_none() && tok.contains(['+', '-']) && !tok.contains('/') {
            // POSIX style: an abbreviation and hours west of UTC (GMT+8 = UTC-8).
            let cut = tok.find(['+', '-']).unwrap_or(tok.len());
            zone_word(&tok[..cut]).ok_or_else(bad)?;
            p.zone = Some(Zone::Fixed(-parse_offset(&tok[cut..]).ok_or_else(bad)?));
        } else if first.is_ascii_alphabetic() && p.zone.is_none() {
            p.zone = Some(zone_word(tok).ok_or_else(bad)?);
        } else {
            return Err(bad());
        }
    }
    if let (Some(pm), Some(us)) = (ampm, p.time) {
        let hour = us / (3600 * USECS_PER_SEC);
        if hour > 12 {
            range_error = true;
        } else if hour == 12 && !pm {
            p.time = Some(us - 12 * 3600 * USECS_PER_SEC);
        } else if hour < 12 && pm {
            p.time = Some(us + 12 * 3600 * USECS_PER_SEC);
        }
    } else if ampm.is_some() {
        return Err(bad());
    }
    if ds.mask.any() {
        if !ds.mask.full() {
            return Err(bad());
        }
        let mut year = ds.year;
        if ds.julian {
        } else if bc {
            if year <= 0 {
                return Err(field_range(s));
            }
            year = 1 - year;
        } else if ds.two_digit_year {
            year += if year < 70 { 2000 } else { 1900 };
        }
        let (m, day) = (ds.month, ds.day);
        if !(1..=12).contains(&m) || !(1..=31).contains(&day) {
            return Err(field_range(s).with_hint("Perhaps you need a different \"datestyle\" setting."));
        }
        if (year == 0 && !bc) || day as u32 > days_in_month(year, m as u32) {
            range_error = true;
        }
        p.date = Some((year, m as u32, day as u32));
    } else if bc {
        return Err(bad());
    }
    if range_error {
        return Err(field_range(s));
    }
    if p.date.is_none() && p.time.is_none() {
        return Err(bad());
    }
    // A time alone cannot name a zone whose offset depends on the date.
    if p.date.is_none() && matches!(p.zone, Some(Zone::Named(_))) {
        return Err(bad());
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(s: &str) -> Option<(i64, u32, u32)> {
        decode(s, Type::Date).ok().and_then(|p| p.date)
    }

    #[test]
    fn forms() {
        assert_eq!(date("01/02/2024"), Some((2024, 1, 2)));
        assert_eq!(date("Jan 5 2024"), Some((2024, 1, 5)));
        assert_eq!(date("5 January 2024"), Some((2024, 1, 5)));
        assert_eq!(date("20240105"), Some((2024, 1, 5)));
        assert_eq!(date("05-jan-24"), Some((2024, 1, 5)));
        assert_eq!(date("Friday, January 5, 2024"), Some((2024, 1, 5)));
        assert_eq!(date("Mar 15 44 BC"), Some((-43, 3, 15)));
        assert!(date("1/2").is_none());
    }
}
