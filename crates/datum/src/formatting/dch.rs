//! Date/time templates (PostgreSQL's "DCH" patterns): to_char of date,
//! timestamp, timestamptz and interval; to_date and to_timestamp.
//!
//! Keywords are case-sensitive and matched longest first (`MONTH`, `Month`,
//! `month` choose the capitalization of the name); `FM` and `TM` prefixes and
//! `TH`/`th`/`SP` suffixes modify one field. Names are English (C locale).

use crate::datetime::{civil_from_days, days_from_civil, days_in_month, Interval, USECS_PER_DAY, USECS_PER_SEC};
use crate::errors::{Result, SqlError};
use crate::types::Value;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum K {
    ADDot,
    AMDot,
    AD,
    AM,
    BCDot,
    PMDot,
    BC,
    PM,
    CC,
    Day,
    Ddd,
    Dd,
    Dy,
    D,
    Ff(u8),
    Fx,
    Hh24,
    Hh12,
    Hh,
    Iddd,
    Id,
    Iw,
    Iyyy,
    Iyy,
    Iy,
    I,
    J,
    Mi,
    Mm,
    Month,
    Mon,
    Ms,
    Of,
    Q,
    Rm,
    Sssss,
    Ss,
    Tzh,
    Tzm,
    Tz,
    Us,
    Ww,
    W,
    YComma,
    Yyyy,
    Yyy,
    Yy,
    Y,
}

/// How a name is capitalized: `MONTH`, `Month`, `month`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Case {
    Upper,
    Cap,
    Lower,
}

use Case::*;

const KEYWORDS: &[(&str, K, Case)] = &[
    ("A.D.", K::ADDot, Upper),
    ("A.M.", K::AMDot, Upper),
    ("AD", K::AD, Upper),
    ("AM", K::AM, Upper),
    ("B.C.", K::BCDot, Upper),
    ("BC", K::BC, Upper),
    ("CC", K::CC, Upper),
    ("DAY", K::Day, Upper),
    ("DDD", K::Ddd, Upper),
    ("DD", K::Dd, Upper),
    ("DY", K::Dy, Upper),
    ("Day", K::Day, Cap),
    ("Dy", K::Dy, Cap),
    ("D", K::D, Upper),
    ("FF1", K::Ff(1), Upper),
    ("FF2", K::Ff(2), Upper),
    ("FF3", K::Ff(3), Upper),
    ("FF4", K::Ff(4), Upper),
    ("FF5", K::Ff(5), Upper),
    ("FF6", K::Ff(6), Upper),
    ("FX", K::Fx, Upper),
    ("HH24", K::Hh24, Upper),
    ("HH12", K::Hh12, Upper),
    ("HH", K::Hh, Upper),
    ("IDDD", K::Iddd, Upper),
    ("ID", K::Id, Upper),
    ("IW", K::Iw, Upper),
    ("IYYY", K::Iyyy, Upper),
    ("IYY", K::Iyy, Upper),
    ("IY", K::Iy, Upper),
    ("I", K::I, Upper),
    ("J", K::J, Upper),
    ("MI", K::Mi, Upper),
    ("MM", K::Mm, Upper),
    ("MONTH", K::Month, Upper),
    ("MON", K::Mon, Upper),
    ("MS", K::Ms, Upper),
    ("Month", K::Month, Cap),
    ("Mon", K::Mon, Cap),
    ("OF", K::Of, Upper),
    ("P.M.", K::PMDot, Upper),
    ("PM", K::PM, Upper),
    ("Q", K::Q, Upper),
    ("RM", K::Rm, Upper),
    ("SSSSS", K::Sssss, Upper),
    ("SSSS", K::Sssss, Upper),
    ("SS", K::Ss, Upper),
    ("TZH", K::Tzh, Upper),
    ("TZM", K::Tzm, Upper),
    ("TZ", K::Tz, Upper),
    ("US", K::Us, Upper),
    ("WW", K::Ww, Upper),
    ("W", K::W, Upper),
    ("Y,YYY", K::YComma, Upper),
    ("YYYY", K::Yyyy, Upper),
    ("YYY", K::Yyy, Upper),
    ("YY", K::Yy, Upper),
    ("Y", K::Y, Upper),
    ("a.d.", K::ADDot, Lower),
    ("a.m.", K::AMDot, Lower),
    ("ad", K::AD, Lower),
    ("am", K::AM, Lower),
    ("b.c.", K::BCDot, Lower),
    ("bc", K::BC, Lower),
    ("cc", K::CC, Lower),
    ("day", K::Day, Lower),
    ("ddd", K::Ddd, Lower),
    ("dd", K::Dd, Lower),
    ("dy", K::Dy, Lower),
    ("d", K::D, Lower),
    ("ff1", K::Ff(1), Lower),
    ("ff2", K::Ff(2), Lower),
    ("ff3", K::Ff(3), Lower),
    ("ff4", K::Ff(4), Lower),
    ("ff5", K::Ff(5), Lower),
    ("ff6", K::Ff(6), Lower),
    ("fx", K::Fx, Lower),
    ("hh24", K::Hh24, Lower),
    ("hh12", K::Hh12, Lower),
    ("hh", K::Hh, Lower),
    ("iddd", K::Iddd, Lower),
    ("id", K::Id, Lower),
    ("iw", K::Iw, Lower),
    ("iyyy", K::Iyyy, Lower),
    ("iyy", K::Iyy, Lower),
    ("iy", K::Iy, Lower),
    ("i", K::I, Lower),
    ("j", K::J, Lower),
    ("mi", K::Mi, Lower),
    ("mm", K::Mm, Lower),
    ("month", K::Month, Lower),
    ("mon", K::Mon, Lower),
    ("ms", K::Ms, Lower),
    ("of", K::Of, Lower),
    ("p.m.", K::PMDot, Lower),
    ("pm", K::PM, Lower),
    ("q", K::Q, Lower),
    ("rm", K::Rm, Lower),
    ("sssss", K::Sssss, Lower),
    ("ssss", K::Sssss, Lower),
    ("ss", K::Ss, Lower),
    ("tz", K::Tz, Lower),
    ("us", K::Us, Lower),
    ("ww", K::Ww, Lower),
    ("w", K::W, Lower),
    ("y,yyy", K::YComma, Lower),
    ("yyyy", K::Yyyy, Lower),
    ("yyy", K::Yyy, Lower),
    ("yy", K::Yy, Lower),
    ("y", K::Y, Lower),
];

const MONTHS: [&str; 12] = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];
const DAYS: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const RM: [&str; 12] = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII"];

#[derive(Clone, Debug)]
enum Node {
    Key { k: K, case: Case, fm: bool, tm: bool, th: Option<bool>, text: &'static str },
    /// A literal character; `sep` for a separator or space (to_date skips it loosely).
    Char { c: char, sep: bool },
}

fn is_digit_key(k: K) -> bool {
    !matches!(
        k,
        K::ADDot | K::AMDot | K::AD | K::AM | K::BCDot | K::PMDot | K::BC | K::PM | K::Day | K::Dy | K::Fx | K::Month | K::Mon | K::Rm | K::Tz
    )
}

fn parse(fmt: &str) -> Vec<Node> {
    let mut out = Vec::new();
    let mut rest = fmt;
    while let Some(c) = rest.chars().next() {
        let mut fm = false;
        let mut tm = false;
        let mut r = rest;
        loop {
            if r.starts_with("FM") || r.starts_with("fm") {
                fm = true;
                r = &r[2..];
            } else if r.starts_with("TM") || r.starts_with("tm") {
                tm = true;
                r = &r[2..];
            } else {
                break;
            }
        }
        let best = KEYWORDS.iter().filter(|(kw, _, _)| r.starts_with(kw)).max_by_key(|(kw, _, _)| kw.len());
        if let Some((kw, k, case)) = best {
            r = &r[kw.len()..];
            let mut th = None;
            loop {
                if r.starts_with("TH") {
                    th = Some(true);
                    r = &r[2..];
                } else if r.starts_with("th") {
                    th = Some(false);
                    r = &r[2..];
                } else if r.starts_with("SP") || r.starts_with("sp") {
                    r = &r[2..];
                } else {
                    break;
                }
            }
            out.push(Node::Key { k: *k, case: *case, fm, tm, th, text: kw });
            rest = r;
            continue;
        }
        if fm || tm {
            // A prefix with no keyword after it is literal text.
            rest = r;
            continue;
        }
        if c == '"' {
            rest = &rest[1..];
            let mut chars = rest.char_indices();
            let mut consumed = rest.len();
            while let Some((i, ch)) = chars.next() {
                if ch == '"' {
                    consumed = i + 1;
                    break;
                }
                let ch = if ch == '\\' { chars.next().map_or(ch, |(_, n)| n) } else { ch };
                out.push(Node::Char { c: ch, sep: false });
            }
            rest = &rest[consumed..];
            continue;
        }
        let mut c = c;
        if c == '\\' && rest[1..].starts_with('"') {
            rest = &rest[1..];
            c = '"';
        }
        let sep = c.is_whitespace() || "+-*/,.:;".contains(c) || c == '\'' || c == '(' || c == ')' || c == '#' || c == '^' || c == '_' || c == '=' || c == '|' || c == '`';
        out.push(Node::Char { c, sep });
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// Broken-down time for to_char.
#[derive(Default, Clone)]
struct Tm {
    year: i64,
    mon: i64,
    mday: i64,
    hour: i64,
    min: i64,
    sec: i64,
    usec: i64,
    /// 0 = Sunday.
    wday: i64,
    yday: i64,
    julian: i64,
    tz: Option<(i32, String)>,
    interval: bool,
}

fn ordinal(n: i64, upper: bool) -> &'static str {
    let a = n.abs();
    let s = if a % 100 / 10 == 1 {
        "th"
    } else {
        match a % 10 {
            1 => "st",
            2 => "nd",
            3 => "rd",
            _ => "th",
        }
    };
    if upper {
        match s {
            "st" => "ST",
            "nd" => "ND",
            "rd" => "RD",
            _ => "TH",
        }
    } else {
        s
    }
}

fn cased(s: &str, case: Case) -> String {
    match case {
        Upper => s.to_uppercase(),
        Lower => s.to_lowercase(),
        Cap => s.to_string(),
    }
}

/// ISO 8601 week-numbering year and week of a date (days since 2000-01-01).
fn iso_week(days: i64) -> (i64, i64) {
    let (y, _, _) = civil_from_days(days);
    // Monday = 0.
    let wd = |d: i64| (d + 5).rem_euclid(7);
    let week1 = |year: i64| {
        let jan4 = days_from_civil(year, 1, 4);
        jan4 - wd(jan4)
    };
    let mut iy = y;
    if days < week1(y) {
        iy = y - 1;
    } else if days >= week1(y + 1) {
        iy = y + 1;
    }
    (iy, (days - week1(iy)) / 7 + 1)
}

fn tm_of_days(days: i64, us: i64) -> Tm {
    let (y, m, d) = civil_from_days(days);
    let secs = us / USECS_PER_SEC;
    Tm {
        year: y,
        mon: m as i64,
        mday: d as i64,
        hour: secs / 3600,
        min: secs / 60 % 60,
        sec: secs % 60,
        usec: us % USECS_PER_SEC,
        wday: (days + 6).rem_euclid(7),
        yday: days - days_from_civil(y, 1, 1) + 1,
        julian: days + 2_451_545,
        tz: None,
        interval: false,
    }
}

fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::Text(s) => Some(s.clone()),
        _ => None,
    }
}

/// to_char(date/time value, template).
pub fn to_char(v: &Value, fmt: &Value) -> Result<Value> {
    let Some(fmt) = text_of(fmt) else { return Ok(Value::Null) };
    if fmt.is_empty() {
        return Ok(Value::Null);
    }
    let tm = match v {
        Value::Date(d) => {
            if *d == i32::MIN || *d == i32::MAX {
                return Ok(Value::Null);
            }
            tm_of_days(*d as i64, 0)
        }
        Value::Timestamp(ts) => {
            if *ts == i64::MIN || *ts == i64::MAX {
                return Ok(Value::Null);
            }
            // A timestamp has no zone: TZ prints nothing, OF/TZH/TZM a zero offset.
            let mut tm = tm_of_days(ts.div_euclid(USECS_PER_DAY), ts.rem_euclid(USECS_PER_DAY));
            tm.tz = Some((0, String::new()));
            tm
        }
        Value::Timestamptz(ts) => {
            if *ts == i64::MIN || *ts == i64::MAX {
                return Ok(Value::Null);
            }
            let (off, abbrev) = crate::datetime::session_offset_abbrev(*ts);
            let local = ts + off as i64 * USECS_PER_SEC;
            let mut tm = tm_of_days(local.div_euclid(USECS_PER_DAY), local.rem_euclid(USECS_PER_DAY));
            tm.tz = Some((off, abbrev));
            tm
        }
        Value::Interval(Interval { micros, days, months }) => {
            let secs = micros / USECS_PER_SEC;
            Tm {
                year: (*months / 12) as i64,
                mon: (*months % 12) as i64,
                mday: *days as i64,
                hour: secs / 3600,
                min: secs / 60 % 60,
                sec: secs % 60,
                usec: micros % USECS_PER_SEC,
                wday: 0,
                yday: (((*months / 12) as i64 * 12 + (*months % 12) as i64) * 30 + *days as i64),
                julian: 0,
                tz: None,
                interval: true,
            }
        }
        other => return Err(SqlError::internal(format!("to_char of {other:?}"))),
    };
    Ok(Value::Text(format_tm(&tm, &parse(&fmt))))
}

fn format_tm(tm: &Tm, nodes: &[Node]) -> String {
    let mut out = String::new();
    for n in nodes {
        let Node::Key { k, case, fm, tm: tmode, th, .. } = n else {
            if let Node::Char { c, .. } = n {
                out.push(*c);
            }
            continue;
        };
        let (k, case, fm, tmode) = (*k, *case, *fm, *tmode);
        let num = |w: usize, v: i64| -> String {
            if fm {
                v.to_string()
            } else if v < 0 {
                format!("-{:0w$}", -v, w = w.saturating_sub(1))
            } else {
                format!("{v:0w$}")
            }
        };
        let adjust_year = |y: i64| if tm.interval { y } else if y <= 0 { 1 - y } else { y };
        let mut written: Option<i64> = None;
        let s: String = match k {
            K::AMDot | K::PMDot => cased(if tm.hour % 24 >= 12 { "P.M." } else { "A.M." }, case),
            K::AM | K::PM => cased(if tm.hour % 24 >= 12 { "PM" } else { "AM" }, case),
            K::ADDot | K::BCDot => cased(if tm.year <= 0 { "B.C." } else { "A.D." }, case),
            K::AD | K::BC => cased(if tm.year <= 0 { "BC" } else { "AD" }, case),
            K::Hh | K::Hh12 => {
                let h = if tm.hour % 12 == 0 { 12 } else { tm.hour % 12 };
                written = Some(h);
                num(2, h)
            }
            K::Hh24 => {
                written = Some(tm.hour);
                num(if tm.hour < 0 { 3 } else { 2 }, tm.hour)
            }
            K::Mi => {
                written = Some(tm.min);
                num(if tm.min < 0 { 3 } else { 2 }, tm.min)
            }
            K::Ss => {
                written = Some(tm.sec);
                num(if tm.sec < 0 { 3 } else { 2 }, tm.sec)
            }
            K::Ff(d) => {
                let v = tm.usec / 10i64.pow(6 - d as u32);
                written = Some(v);
                format!("{v:0w$}", w = d as usize)
            }
            K::Ms => {
                written = Some(tm.usec / 1000);
                format!("{:03}", tm.usec / 1000)
            }
            K::Us => {
                written = Some(tm.usec);
                format!("{:06}", tm.usec)
            }
            K::Sssss => {
                let v = tm.hour * 3600 + tm.min * 60 + tm.sec;
                written = Some(v);
                v.to_string()
            }
            K::Tz => match &tm.tz {
                Some((_, a)) => {
                    if case == Lower {
                        a.to_lowercase()
                    } else {
                        a.clone()
                    }
                }
                None => String::new(),
            },
            K::Tzh => match &tm.tz {
                Some((off, _)) => format!("{}{}", if *off < 0 { '-' } else { '+' }, num(2, (off.abs() / 3600) as i64)),
                None => String::new(),
            },
            K::Tzm => match &tm.tz {
                Some((off, _)) => num(2, (off.abs() / 60 % 60) as i64),
                None => String::new(),
            },
            K::Of => match &tm.tz {
                Some((off, _)) => {
                    let mut s = format!("{}{}", if *off < 0 { '-' } else { '+' }, num(2, (off.abs() / 3600) as i64));
                    if off.abs() % 3600 != 0 {
                        s.push_str(&format!(":{:02}", off.abs() / 60 % 60));
                    }
                    s
                }
                None => String::new(),
            },
            K::Month => {
                if tm.mon == 0 {
                    continue;
                }
                let name = cased(MONTHS[(tm.mon - 1) as usize], case);
                if fm || tmode {
                    name
                } else {
                    format!("{name:<9}")
                }
            }
            K::Mon => {
                if tm.mon == 0 {
                    continue;
                }
                cased(&MONTHS[(tm.mon - 1) as usize][..3], case)
            }
            K::Mm => {
                written = Some(tm.mon);
                num(if tm.mon < 0 { 3 } else { 2 }, tm.mon)
            }
            K::Day => {
                let name = cased(DAYS[tm.wday as usize], case);
                if fm || tmode {
                    name
                } else {
                    format!("{name:<9}")
                }
            }
            K::Dy => cased(&DAYS[tm.wday as usize][..3], case),
            K::Ddd => {
                written = Some(tm.yday);
                num(3, tm.yday)
            }
            K::Iddd => {
                let days = tm.julian - 2_451_545;
                let (iy, _) = iso_week(days);
                let jan4 = days_from_civil(iy, 1, 4);
                let start = jan4 - (jan4 + 5).rem_euclid(7);
                let v = days - start + 1;
                written = Some(v);
                num(3, v)
            }
            K::Dd => {
                written = Some(tm.mday);
                num(2, tm.mday)
            }
            K::D => {
                written = Some(tm.wday + 1);
                (tm.wday + 1).to_string()
            }
            K::Id => {
                let v = if tm.wday == 0 { 7 } else { tm.wday };
                written = Some(v);
                v.to_string()
            }
            K::Ww => {
                let v = (tm.yday - 1) / 7 + 1;
                written = Some(v);
                num(2, v)
            }
            K::Iw => {
                let v = iso_week(tm.julian - 2_451_545).1;
                written = Some(v);
                num(2, v)
            }
            K::Q => {
                if tm.mon == 0 {
                    continue;
                }
                let v = (tm.mon - 1) / 3 + 1;
                written = Some(v);
                v.to_string()
            }
            K::CC => {
                let i = if tm.interval {
                    tm.year / 100
                } else if tm.year > 0 {
                    (tm.year + 99) / 100
                } else {
                    -((99 - (tm.year - 1)) / 100)
                };
                written = Some(i);
                if (-99..=99).contains(&i) {
                    num(2, i)
                } else {
                    i.to_string()
                }
            }
            K::YComma => {
                let y = adjust_year(tm.year);
                written = Some(y);
                format!("{},{:03}", y / 1000, y % 1000)
            }
            K::Yyyy | K::Iyyy => {
                let y = if k == K::Iyyy { adjust_year(iso_week(tm.julian - 2_451_545).0) } else { adjust_year(tm.year) };
                written = Some(y);
                num(4, y)
            }
            K::Yyy | K::Iyy => {
                let y = if k == K::Iyy { adjust_year(iso_week(tm.julian - 2_451_545).0) } else { adjust_year(tm.year) };
                written = Some(y % 1000);
                num(3, y % 1000)
            }
            K::Yy | K::Iy => {
                let y = if k == K::Iy { adjust_year(iso_week(tm.julian - 2_451_545).0) } else { adjust_year(tm.year) };
                written = Some(y % 100);
                num(2, y % 100)
            }
            K::Y | K::I => {
                let y = if k == K::I { adjust_year(iso_week(tm.julian - 2_451_545).0) } else { adjust_year(tm.year) };
                written = Some(y % 10);
                (y % 10).to_string()
            }
            K::Rm => {
                if tm.mon == 0 {
                    continue;
                }
                let r = cased(RM[(tm.mon - 1) as usize], case);
                if fm {
                    r
                } else {
                    format!("{r:<4}")
                }
            }
            K::W => {
                let v = (tm.mday - 1) / 7 + 1;
                written = Some(v);
                v.to_string()
            }
            K::J => {
                written = Some(tm.julian);
                tm.julian.to_string()
            }
            K::Fx => String::new(),
        };
        out.push_str(&s);
        if let (Some(upper), Some(v)) = (th, written) {
            out.push_str(ordinal(v, *upper));
        }
    }
    out
}

/// Fields read by to_date / to_timestamp.
#[derive(Default, Debug)]
struct Parsed {
    year: Option<i64>,
    yy_digits: usize,
    bc: bool,
    mon: Option<i64>,
    mday: Option<i64>,
    yday: Option<i64>,
    hour: i64,
    pm: Option<bool>,
    hh12: bool,
    min: i64,
    sec: i64,
    usec: i64,
    julian: Option<i64>,
    cc: Option<i64>,
    tz: Option<i32>,
    ssss: Option<i64>,
}

fn bad_value(v: &str, field: &str) -> SqlError {
    SqlError::new(b"22007", format!("invalid value \"{v}\" for \"{field}\""))
}

fn from_char(input: &str, fmt: &str) -> Result<Parsed> {
    let nodes = parse(fmt);
    let mut p = Parsed::default();
    let b = input.as_bytes();
    let mut i = 0;
    let mut fx = false;
    for (ni, n) in nodes.iter().enumerate() {
        match n {
            Node::Char { sep, .. } => {
                if *sep && !fx {
                    if i < b.len() && (b[i].is_ascii_whitespace() || !b[i].is_ascii_alphanumeric()) {
                        i += 1;
                    }
                } else if i < b.len() {
                    i += input[i..].chars().next().map_or(1, char::len_utf8);
                }
            }
            Node::Key { k, fm, text, .. } => {
                let k = *k;
                if k == K::Fx {
                    fx = true;
                    continue;
                }
                if !fx {
                    while i < b.len() && b[i].is_ascii_whitespace() {
                        i += 1;
                    }
                }
                if is_digit_key(k) {
                    let next_sep = match nodes.get(ni + 1) {
                        None => true,
                        Some(Node::Key { k, .. }) => !is_digit_key(*k),
                        Some(Node::Char { c, .. }) => !c.is_ascii_digit(),
                    };
                    let len = match k {
                        K::Yyyy | K::Iyyy => 4,
                        K::Ddd | K::Iddd | K::Yyy | K::Iyy | K::Ms => 3,
                        K::YComma => 5,
                        K::Us => 6,
                        K::Ff(d) => d as usize,
                        K::D | K::Id | K::Q | K::W | K::Y | K::I => 1,
                        K::J | K::Sssss => usize::MAX,
                        _ => 2,
                    };
                    let start = i;
                    let mut neg = false;
                    if i < b.len() && (b[i] == b'-' || b[i] == b'+') && matches!(k, K::Yyyy | K::Tzh | K::J) {
                        neg = b[i] == b'-';
                        i += 1;
                    }
                    let dstart = i;
                    if *fm || next_sep || len == usize::MAX {
                        while i < b.len() && (b[i].is_ascii_digit() || (k == K::YComma && b[i] == b',')) {
                            i += 1;
                        }
                    } else {
                        while i < b.len() && i - dstart < len && b[i].is_ascii_digit() {
                            i += 1;
                        }
                        if i - dstart < len && i < b.len() {
                            return Err(bad_value(&input[start..(start + len).min(input.len())], text));
                        }
                        if i - dstart < len {
                            return Err(SqlError::new(b"22007", format!("source string too short for \"{text}\" formatting field"))
                                .with_detail(format!("Field requires {len} characters, but only {} remain.", i - start))
                                .with_hint("If your source string is not fixed-width, try using the \"FM\" modifier."));
                        }
                    }
                    let digits: String = input[dstart..i].chars().filter(char::is_ascii_digit).collect();
                    if digits.is_empty() {
                        let shown: String = input[start..].chars().take(if len == usize::MAX { 1 } else { len }).collect();
                        return Err(SqlError::new(b"22007", format!("invalid value \"{shown}\" for \"{text}\""))
                            .with_detail("Value must be an integer."));
                    }
                    let v: i64 = digits.parse().map_err(|_| SqlError::new(b"22008", format!("value for \"{text}\" in source string is out of range")))?;
                    let v = if neg { -v } else { v };
                    match k {
                        K::Yyyy | K::Iyyy | K::YComma => {
                            p.year = Some(v);
                            p.yy_digits = 4;
                        }
                        K::Yyy | K::Iyy => {
                            p.year = Some(v);
                            p.yy_digits = digits.len().min(3);
                        }
                        K::Yy | K::Iy => {
                            p.year = Some(v);
                            p.yy_digits = digits.len().min(2);
                        }
                        K::Y | K::I => {
                            p.year = Some(v);
                            p.yy_digits = 1;
                        }
                        K::Mm => p.mon = Some(v),
                        K::Dd => p.mday = Some(v),
                        K::Ddd | K::Iddd => p.yday = Some(v),
                        K::Hh | K::Hh12 => {
                            p.hour = v;
                            p.hh12 = true;
                        }
                        K::Hh24 => p.hour = v,
                        K::Mi => p.min = v,
                        K::Ss => p.sec = v,
                        // "5" is 0.5 s: the digits read are a fraction.
                        K::Ms => p.usec = v * 10i64.pow(6 - digits.len().min(3) as u32),
                        K::Us | K::Ff(_) => p.usec = v * 10i64.pow(6 - digits.len().min(6) as u32),
                        K::J => p.julian = Some(v),
                        K::CC => p.cc = Some(v),
                        K::Sssss => p.ssss = Some(v),
                        K::Tzh => p.tz = Some(v as i32 * 3600),
                        K::Tzm => p.tz = Some(p.tz.unwrap_or(0) + v as i32 * 60 * if p.tz.unwrap_or(0) < 0 { -1 } else { 1 }),
                        _ => {}
                    }
                } else {
                    let rest = &input[i..];
                    let lower = rest.to_ascii_lowercase();
                    let pick = |names: &[&str]| -> Option<(usize, usize)> {
                        names.iter().enumerate().find(|(_, n)| lower.starts_with(&n.to_ascii_lowercase())).map(|(ix, n)| (ix, n.len()))
                    };
                    let fail = || {
                        let shown: String = rest.split_whitespace().next().unwrap_or("").to_string();
                        bad_value(&shown, text).with_detail("The given value did not match any of the allowed values for this field.")
                    };
                    match k {
                        K::Month => {
                            let (ix, l) = pick(&MONTHS).ok_or_else(fail)?;
                            p.mon = Some(ix as i64 + 1);
                            i += l;
                        }
                        K::Mon => {
                            let abbr: Vec<&str> = MONTHS.iter().map(|m| &m[..3]).collect();
                            let (ix, l) = pick(&abbr).ok_or_else(fail)?;
                            p.mon = Some(ix as i64 + 1);
                            i += l;
                        }
                        K::Day => {
                            let (_, l) = pick(&DAYS).ok_or_else(fail)?;
                            i += l;
                        }
                        K::Dy => {
                            let abbr: Vec<&str> = DAYS.iter().map(|m| &m[..3]).collect();
                            let (_, l) = pick(&abbr).ok_or_else(fail)?;
                            i += l;
                        }
                        K::AM | K::PM => {
                            let (ix, l) = pick(&["AM", "PM"]).ok_or_else(fail)?;
                            p.pm = Some(ix == 1);
                            i += l;
                        }
                        K::AMDot | K::PMDot => {
                            let (ix, l) = pick(&["A.M.", "P.M."]).ok_or_else(fail)?;
                            p.pm = Some(ix == 1);
                            i += l;
                        }
                        K::AD | K::BC => {
                            let (ix, l) = pick(&["AD", "BC"]).ok_or_else(fail)?;
                            p.bc = ix == 1;
                            i += l;
                        }
                        K::ADDot | K::BCDot => {
                            let (ix, l) = pick(&["A.D.", "B.C."]).ok_or_else(fail)?;
                            p.bc = ix == 1;
                            i += l;
                        }
                        K::Rm => {
                            let names = ["XII", "XI", "X", "IX", "VIII", "VII", "VI", "V", "IV", "III", "II", "I"];
                            let (ix, l) = pick(&names).ok_or_else(fail)?;
                            p.mon = Some(12 - ix as i64);
                            i += l;
                        }
                        _ => return Err(SqlError::not_supported(format!("formatting field \"{text}\" is only supported in to_char"))),
                    }
                }
            }
        }
    }
    Ok(p)
}

fn out_of_range(input: &str) -> SqlError {
    SqlError::new(b"22008", format!("date/time field value out of range: \"{input}\""))
}

/// The date (days since 2000-01-01) and time of day the parsed fields name.
fn resolve(p: &Parsed, input: &str) -> Result<(i64, i64)> {
    let mut year = p.year;
    if let (Some(y), 1..=3) = (year, p.yy_digits) {
        // Two-digit years near 2020; one and three digits likewise.
        year = Some(match p.yy_digits {
            1 => y + 2000,
            2 => {
                if y < 70 {
                    y + 2000
                } else {
                    y + 1900
                }
            }
            _ => {
                if y < 100 {
                    y + 2000
                } else {
                    y + 1000
                }
            }
        });
    }
    if year.is_none() {
        if let Some(cc) = p.cc {
            year = Some(if cc >= 0 { (cc - 1) * 100 + 1 } else { cc * 100 + 1 });
        }
    }
    let mut y = year.unwrap_or(1);
    if p.bc {
        y = -y + 1;
    } else if y <= 0 && year.is_some() && p.yy_digits == 4 {
        // Year 0 does not exist: -1 is 1 BC.
        y += 1;
    }
    let days = if let Some(j) = p.julian {
        j - 2_451_545
    } else if let (Some(yd), None) = (p.yday, p.mon) {
        days_from_civil(y, 1, 1) + yd - 1
    } else {
        let m = p.mon.unwrap_or(1);
        let d = p.mday.unwrap_or(1);
        if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m as u32) as i64 {
            return Err(out_of_range(input));
        }
        days_from_civil(y, m as u32, d as u32)
    };
    let mut hour = p.hour;
    if p.hh12 || p.pm.is_some() {
        if p.hh12 && !(1..=12).contains(&hour) {
            return Err(SqlError::new(b"22008", format!("hour \"{hour}\" is invalid for the 12-hour clock"))
                .with_hint("Use the 24-hour clock, or give an hour between 1 and 12."));
        }
        if p.pm == Some(true) && hour < 12 {
            hour += 12;
        } else if p.pm == Some(false) && hour == 12 {
            hour = 0;
        }
    }
    let mut us = ((hour * 60 + p.min) * 60 + p.sec) * USECS_PER_SEC + p.usec;
    if let Some(s) = p.ssss {
        us = s * USECS_PER_SEC + p.usec;
    }
    if hour > 24 || p.min > 59 || p.sec > 60 || us > USECS_PER_DAY {
        return Err(out_of_range(input));
    }
    Ok((days, us))
}

/// to_date(text, text).
pub fn to_date(a: &[Value]) -> Result<Value> {
    let (Some(s), Some(f)) = (text_of(&a[0]), text_of(&a[1])) else { return Ok(Value::Null) };
    let p = from_char(&s, &f)?;
    let (days, _) = resolve(&p, &s)?;
    Ok(Value::Date(days as i32))
}

/// to_timestamp(text, text): local time in the session zone (or the TZH/TZM given).
pub fn to_timestamp(a: &[Value]) -> Result<Value> {
    let (Some(s), Some(f)) = (text_of(&a[0]), text_of(&a[1])) else { return Ok(Value::Null) };
    let p = from_char(&s, &f)?;
    let (days, us) = resolve(&p, &s)?;
    let local = days * USECS_PER_DAY + us;
    let off = match p.tz {
        Some(o) => o,
        None => crate::datetime::session_offset_for_local(local),
    };
    Ok(Value::Timestamptz(local - off as i64 * USECS_PER_SEC))
}

/// to_timestamp(double precision): seconds since the Unix epoch.
pub fn to_timestamp_epoch(a: &[Value]) -> Result<Value> {
    let f = crate::types::arg_float(&a[0]);
    if f.is_nan() {
        return Err(SqlError::new(b"22008", "timestamp cannot be NaN"));
    }
    if f.is_infinite() {
        return Ok(Value::Timestamptz(if f > 0.0 { i64::MAX } else { i64::MIN }));
    }
    let us = (f * 1e6).round() - 946_684_800e6;
    if !(-211_813_488_000e6..9_224_318_016_000e6).contains(&us) {
        return Err(SqlError::new(b"22008", format!("timestamp out of range: \"{}\"", crate::types::float8_out(f))));
    }
    Ok(Value::Timestamptz(us as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: Value, f: &str) -> String {
        match to_char(&v, &Value::Text(f.into())).unwrap() {
            Value::Text(s) => s,
            _ => unreachable!(),
        }
    }

    #[test]
    fn to_char_dates() {
        let d = days_from_civil(2010, 3, 9);
        let ts = Value::Timestamp(d * USECS_PER_DAY + (13 * 3600 + 5 * 60 + 7) * USECS_PER_SEC);
        assert_eq!(t(ts.clone(), "YYYY-MM-DD HH24:MI:SS"), "2010-03-09 13:05:07");
        assert_eq!(t(ts.clone(), "Day, DDth Month YYYY HH12 PM"), "Tuesday  , 09th March     2010 01 PM");
        assert_eq!(t(ts.clone(), "FMDay, FMDDth FMMonth"), "Tuesday, 9th March");
        assert_eq!(t(ts.clone(), "DDD IW WW Q J"), "068 10 10 1 2455265");
        assert_eq!(t(ts, "\"text\" Y,YYY"), "text 2,010");
    }

    #[test]
    fn to_date_reads_fields() {
        let d = to_date(&[Value::Text("20100309".into()), Value::Text("YYYYMMDD".into())]).unwrap();
        assert!(matches!(d, Value::Date(x) if x as i64 == days_from_civil(2010, 3, 9)));
        let d = to_date(&[Value::Text("05 Dec 2000".into()), Value::Text("DD Mon YYYY".into())]).unwrap();
        assert!(matches!(d, Value::Date(x) if x as i64 == days_from_civil(2000, 12, 5)));
    }
}
