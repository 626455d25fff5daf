//! to_char and to_number over numbers (PostgreSQL's formatting.c "NUM"
//! templates), and to_char / to_date / to_timestamp over dates and times
//! (the "DCH" templates, [`dch`]).
//!
//! A template is parsed into nodes: keywords (`9 0 . , D G S PR MI PL SG L RN
//! TH V EEEE FM B C SP`, longest match at each position, case-sensitive as in
//! PostgreSQL: `th` and `rn` have lowercase variants) and literal characters
//! (text in double quotes, `\"` outside quotes). The keywords set the
//! description of the number ([`NumDesc`]: digits before and after the decimal
//! point, where `0` padding starts and ends, the sign placement); the number is
//! then printed into the digit positions with the sign written just before the
//! first printed digit (or in the position MI/PL/SG/PR asks for).
//!
//! Locale: the C locale, so `D` is `.`, `G` is `,`, `L` is a space and `S`
//! writes `+`/`-` (what PostgreSQL does when lc_numeric/lc_monetary give
//! empty strings).

use crate::errors::{Result, SqlError};
use crate::numeric::Numeric;
use crate::types::Value;

pub mod dch;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Key {
    Comma,
    Dec,
    Zero,
    Nine,
    B,
    C,
    D,
    E,
    Fm,
    G,
    L,
    Mi,
    Pl,
    Pr,
    Rn,
    RnLower,
    Sg,
    Sp,
    S,
    Th,
    ThLower,
    V,
}

/// The keywords in matching order (a longer keyword before its prefixes).
const KEYWORDS: &[(&str, Key)] = &[
    (",", Key::Comma),
    (".", Key::Dec),
    ("0", Key::Zero),
    ("9", Key::Nine),
    ("B", Key::B),
    ("C", Key::C),
    ("D", Key::D),
    ("EEEE", Key::E),
    ("FM", Key::Fm),
    ("G", Key::G),
    ("L", Key::L),
    ("MI", Key::Mi),
    ("PL", Key::Pl),
    ("PR", Key::Pr),
    ("RN", Key::Rn),
    ("SG", Key::Sg),
    ("SP", Key::Sp),
    ("S", Key::S),
    ("TH", Key::Th),
    ("V", Key::V),
    ("b", Key::B),
    ("c", Key::C),
    ("d", Key::D),
    ("eeee", Key::E),
    ("fm", Key::Fm),
    ("g", Key::G),
    ("l", Key::L),
    ("mi", Key::Mi),
    ("pl", Key::Pl),
    ("pr", Key::Pr),
    ("rn", Key::RnLower),
    ("sg", Key::Sg),
    ("sp", Key::Sp),
    ("s", Key::S),
    ("th", Key::ThLower),
    ("v", Key::V),
];

#[derive(Clone, Debug)]
enum Node {
    Key(Key),
    Char(String),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
enum LSign {
    #[default]
    None,
    Pre,
    Post,
}

/// What the template says about the number (PostgreSQL's NUMDesc).
#[derive(Clone, Debug, Default)]
struct NumDesc {
    pre: usize,
    post: usize,
    lsign: LSign,
    pre_lsign_num: usize,
    multi: usize,
    zero_start: usize,
    zero_end: usize,
    decimal: bool,
    ldecimal: bool,
    zero: bool,
    blank: bool,
    fillmode: bool,
    lsign_flag: bool,
    bracket: bool,
    minus: bool,
    plus: bool,
    roman: bool,
    multi_flag: bool,
    eeee: bool,
}

fn syntax(msg: &str) -> SqlError {
    SqlError::new(b"42601", msg)
}

impl NumDesc {
    fn prepare(&mut self, k: Key) -> Result<()> {
        if self.eeee && k != Key::E {
            return Err(syntax("\"EEEE\" must be the last pattern used"));
        }
        match k {
            Key::Nine => {
                if self.bracket {
                    return Err(syntax("\"9\" must be ahead of \"PR\""));
                }
                if self.multi_flag {
                    self.multi += 1;
                } else if self.decimal {
                    self.post += 1;
                } else {
                    self.pre += 1;
                }
            }
            Key::Zero => {
                if self.bracket {
                    return Err(syntax("\"0\" must be ahead of \"PR\""));
                }
                if !self.zero && !self.decimal {
                    self.zero = true;
                    self.zero_start = self.pre + 1;
                }
                if !self.decimal {
                    self.pre += 1;
                } else {
                    self.post += 1;
                }
                self.zero_end = self.pre + self.post;
            }
            Key::B => {
                if self.pre == 0 && self.post == 0 && !self.zero {
                    self.blank = true;
                }
            }
            Key::D | Key::Dec => {
                if k == Key::D {
                    self.ldecimal = true;
                }
                if self.decimal {
                    return Err(syntax("multiple decimal points"));
                }
                if self.multi_flag {
                    return Err(syntax("cannot use \"V\" and decimal point together"));
                }
                self.decimal = true;
            }
            Key::Fm => self.fillmode = true,
            Key::S => {
                if self.lsign_flag {
                    return Err(syntax("cannot use \"S\" twice"));
                }
                if self.plus || self.minus || self.bracket {
                    return Err(syntax("cannot use \"S\" and \"PL\"/\"MI\"/\"SG\"/\"PR\" together"));
                }
                if !self.decimal {
                    self.lsign = LSign::Pre;
                    self.pre_lsign_num = self.pre;
                    self.lsign_flag = true;
                } else if self.lsign == LSign::None {
                    self.lsign = LSign::Post;
                    self.lsign_flag = true;
                }
            }
            Key::Mi => {
                if self.lsign_flag {
                    return Err(syntax("cannot use \"S\" and \"MI\" together"));
                }
                self.minus = true;
            }
            Key::Pl => {
                if self.lsign_flag {
                    return Err(syntax("cannot use \"S\" and \"PL\" together"));
                }
                self.plus = true;
            }
            Key::Sg => {
                if self.lsign_flag {
                    return Err(syntax("cannot use \"S\" and \"SG\" together"));
                }
                self.minus = true;
                self.plus = true;
            }
            Key::Pr => {
                if self.lsign_flag || self.plus || self.minus {
                    return Err(syntax("cannot use \"PR\" and \"S\"/\"PL\"/\"MI\"/\"SG\" together"));
                }
                self.bracket = true;
            }
            Key::Rn | Key::RnLower => self.roman = true,
            Key::V => {
                if self.decimal {
                    return Err(syntax("cannot use \"V\" and decimal point together"));
                }
                self.multi_flag = true;
            }
            Key::E => {
                if self.eeee {
                    return Err(syntax("cannot use \"EEEE\" twice"));
                }
                if self.blank || self.fillmode || self.lsign_flag || self.bracket || self.minus || self.plus || self.roman || self.multi_flag {
                    return Err(syntax("\"EEEE\" is incompatible with other formats")
                        .with_detail("\"EEEE\" may only be used together with digit and decimal point patterns."));
                }
                self.eeee = true;
            }
            Key::L | Key::G | Key::Comma | Key::C | Key::Sp | Key::Th | Key::ThLower => {}
        }
        Ok(())
    }
}

/// Splits a template into nodes: keywords and literal characters.
fn parse_num_format(fmt: &str) -> Result<(Vec<Node>, NumDesc)> {
    let mut nodes = Vec::new();
    let mut desc = NumDesc::default();
    let mut rest = fmt;
    while let Some(c) = rest.chars().next() {
        if let Some((kw, k)) = KEYWORDS.iter().find(|(kw, _)| rest.starts_with(kw)) {
            desc.prepare(*k)?;
            nodes.push(Node::Key(*k));
            rest = &rest[kw.len()..];
            continue;
        }
        if c == '"' {
            rest = &rest[1..];
            let mut chars = rest.char_indices().peekable();
            let mut consumed = rest.len();
            while let Some((i, ch)) = chars.next() {
                if ch == '"' {
                    consumed = i + 1;
                    break;
                }
                let ch = if ch == '\\' {
                    match chars.next() {
                        Some((_, n)) => n,
                        None => ch,
                    }
                } else {
                    ch
                };
                nodes.push(Node::Char(ch.to_string()));
            }
            rest = &rest[consumed..];
            continue;
        }
        let mut c = c;
        if c == '\\' && rest[1..].starts_with('"') {
            rest = &rest[1..];
            c = '"';
        }
        nodes.push(Node::Char(c.to_string()));
        rest = &rest[c.len_utf8()..];
    }
    Ok((nodes, desc))
}

/// The Roman numeral of 1..=3999 (15 '#' otherwise).
fn int_to_roman(n: i64) -> String {
    if !(1..=3999).contains(&n) {
        return "#".repeat(15);
    }
    const R: [(i64, &str); 13] =
        [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"), (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")];
    let mut n = n;
    let mut out = String::new();
    for (v, s) in R {
        while n >= v {
            out.push_str(s);
            n -= v;
        }
    }
    out
}

/// The ordinal suffix of the number written in `num` (its last digits).
fn get_th(num: &str, upper: bool) -> Result<&'static str> {
    let b = num.as_bytes();
    let Some(&last) = b.last() else { return Ok("") };
    if !last.is_ascii_digit() {
        return Err(SqlError::new(b"22023", format!("\"{num}\" is not a number")));
    }
    let last = if b.len() > 1 && b[b.len() - 2] == b'1' { b'0' } else { last };
    Ok(match (last, upper) {
        (b'1', true) => "ST",
        (b'1', false) => "st",
        (b'2', true) => "ND",
        (b'2', false) => "nd",
        (b'3', true) => "RD",
        (b'3', false) => "rd",
        (_, true) => "TH",
        (_, false) => "th",
    })
}

/// `#` in every digit position, `.` at the decimal point (the number does not fit).
fn overflow_fill(pre: usize, post: usize) -> String {
    let mut s = "#".repeat(pre + post + 1);
    s.replace_range(pre..pre + 1, ".");
    s
}

/// The digits, their sign and the leading blanks for the number's text `orgnum`.
fn layout(orgnum: &str, desc: &NumDesc) -> (String, char, usize) {
    let (sign, numstr) = match orgnum.strip_prefix('-') {
        Some(r) => ('-', r),
        None => ('+', orgnum),
    };
    let pre_len = numstr.find('.').unwrap_or(numstr.len());
    if pre_len < desc.pre {
        (numstr.to_string(), sign, desc.pre - pre_len)
    } else if pre_len > desc.pre {
        (overflow_fill(desc.pre, desc.post), sign, 0)
    } else {
        (numstr.to_string(), sign, 0)
    }
}

/// Scientific notation with `post` fraction digits: `1.50e+03`.
fn numeric_sci(n: &Numeric, post: usize) -> Result<String> {
    let t = n.abs().to_text();
    let digits: Vec<u8> = t.bytes().filter(u8::is_ascii_digit).collect();
    let point = t.find('.').unwrap_or(t.len()) as i64;
    let exp = match digits.iter().position(|&d| d != b'0') {
        Some(i) => point - 1 - i as i64,
        None => 0,
    };
    let sig = Numeric::parse(&format!("{t}e{}", -exp))?.round(post as i32, true);
    let sign = if n.is_neg() { "-" } else { "" };
    Ok(format!("{sign}{}e{}{:02}", sig.to_text(), if exp < 0 { '-' } else { '+' }, exp.abs()))
}

/// C's `%+.*e`.
fn float_sci(v: f64, post: usize) -> String {
    let s = format!("{:.*e}", post, v.abs());
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i32 = e.parse().unwrap_or(0);
    format!("{}{m}e{}{:02}", if v.is_sign_negative() { '-' } else { '+' }, if e < 0 { '-' } else { '+' }, e.abs())
}

/// to_char(value, template) as a built-in: numbers or dates/times.
pub fn to_char(a: &[Value]) -> Result<Value> {
    match (&a[0], &a[1]) {
        (Value::Int2(_) | Value::Int4(_) | Value::Int8(_) | Value::Float4(_) | Value::Float8(_) | Value::Numeric(_), Value::Text(f)) => to_char_number(&a[0], f),
        (v, f) => dch::to_char(v, f),
    }
}

/// to_char(number, template).
pub fn to_char_number(v: &Value, fmt: &str) -> Result<Value> {
    if fmt.is_empty() {
        return Ok(Value::Text(String::new()));
    }
    let (nodes, mut desc) = parse_num_format(fmt)?;
    let mut out_pre_spaces = 0;
    let mut sign = '+';
    let numstr: String;
    match v {
        Value::Int2(_) | Value::Int4(_) | Value::Int8(_) => {
            let i = v.as_i64().unwrap_or(0);
            let width_err = || crate::types::out_of_range(if matches!(v, Value::Int8(_)) { crate::types::Type::Int8 } else { crate::types::Type::Int4 });
            if desc.roman {
                numstr = int_to_roman(i);
            } else if desc.eeee {
                let s = numeric_sci(&Numeric::from_i64(i), desc.post)?;
                numstr = if s.starts_with('-') { s } else { format!(" {s}") };
            } else {
                let val = if desc.multi_flag {
                    let m = 10i64.checked_pow(desc.multi as u32).ok_or_else(width_err)?;
                    let r = i.checked_mul(m).ok_or_else(width_err)?;
                    if !matches!(v, Value::Int8(_)) && i32::try_from(r).is_err() {
                        return Err(width_err());
                    }
                    desc.pre += desc.multi;
                    r
                } else {
                    i
                };
                let org = val.to_string();
                let (s, digits) = match org.strip_prefix('-') {
                    Some(r) => ('-', r.to_string()),
                    None => ('+', org.clone()),
                };
                sign = s;
                let pre_len = digits.len();
                let mut n = digits;
                if desc.post > 0 {
                    n.push('.');
                    n.push_str(&"0".repeat(desc.post));
                }
                if pre_len < desc.pre {
                    out_pre_spaces = desc.pre - pre_len;
                    numstr = n;
                } else if pre_len > desc.pre {
                    numstr = overflow_fill(desc.pre, desc.post);
                } else {
                    numstr = n;
                }
            }
        }
        Value::Float4(_) | Value::Float8(_) => {
            let (value, dig) = match v {
                Value::Float4(f) => (*f as f64, 6usize),
                Value::Float8(f) => (*f, 15usize),
                _ => unreachable!(),
            };
            if desc.roman {
                numstr = int_to_roman(value.round_ties_even() as i64);
            } else if desc.eeee {
                if value.is_nan() || value.is_infinite() {
                    let mut s = "#".repeat(desc.pre + desc.post + 6);
                    s.replace_range(0..1, " ");
                    s.replace_range(desc.pre + 1..desc.pre + 2, ".");
                    numstr = s;
                } else {
                    let s = float_sci(value, desc.post);
                    numstr = match s.strip_prefix('+') {
                        Some(r) => format!(" {r}"),
                        None => s,
                    };
                }
            } else {
                let mut val = value;
                if desc.multi_flag {
                    val = value * 10f64.powi(desc.multi as i32);
                    desc.pre += desc.multi;
                }
                let pre_len = format!("{:.0}", val.abs()).len();
                if pre_len >= dig {
                    desc.post = 0;
                } else if pre_len + desc.post > dig {
                    desc.post = dig - pre_len;
                }
                let org = if val.is_finite() { format!("{:.*}", desc.post, val) } else { crate::types::float8_out(val) };
                let (n, s, sp) = layout(&org, &desc);
                numstr = n;
                sign = s;
                out_pre_spaces = sp;
            }
        }
        Value::Numeric(n) => {
            if desc.roman {
                let r = n.round(0, true);
                let i = r.to_i64("integer")?.filter(|i| i32::try_from(*i).is_ok()).ok_or_else(|| crate::types::out_of_range(crate::types::Type::Int4))?;
                numstr = int_to_roman(i);
            } else if desc.eeee {
                if !n.is_finite() {
                    let mut s = "#".repeat(desc.pre + desc.post + 6);
                    s.replace_range(0..1, " ");
                    s.replace_range(desc.pre + 1..desc.pre + 2, ".");
                    numstr = s;
                } else {
                    let s = numeric_sci(n, desc.post)?;
                    numstr = if s.starts_with('-') { s } else { format!(" {s}") };
                }
            } else {
                let mut val = n.clone();
                if desc.multi_flag {
                    val = val.mul(&Numeric::parse(&format!("1e{}", desc.multi))?)?;
                    desc.pre += desc.multi;
                }
                let org = val.round(desc.post as i32, true).to_text();
                let (n, s, sp) = layout(&org, &desc);
                numstr = n;
                sign = s;
                out_pre_spaces = sp;
            }
        }
        other => return Err(SqlError::internal(format!("to_char of {other:?}"))),
    }
    Ok(Value::Text(num_processor(&nodes, &mut desc, &numstr, out_pre_spaces, sign)?))
}

/// Writes the number into the template (PostgreSQL's NUM_processor, to_char direction).
fn num_processor(nodes: &[Node], num: &mut NumDesc, number: &str, out_pre_spaces: usize, sign: char) -> Result<String> {
    if num.zero_start > 0 {
        num.zero_start -= 1;
    }
    if num.eeee {
        return Ok(number.to_string());
    }
    let mut sign = sign;
    let mut out_pre_spaces = out_pre_spaces;
    if num.roman {
        num.lsign = LSign::None;
        num.pre_lsign_num = 0;
        num.post = 0;
        num.pre = 0;
        out_pre_spaces = 0;
        sign = '\0';
        let fm = num.fillmode;
        *num = NumDesc { fillmode: fm, roman: true, ..NumDesc::default() };
    }
    let mut p = NumProc { num: num.clone(), number: number.as_bytes(), number_p: 0, out: String::new(), sign, sign_wrote: false, num_in: false, num_curr: 0, num_count: 0, out_pre_spaces, last_relevant: None };
    if p.num.plus || p.num.minus {
        p.sign_wrote = !p.num.plus || p.num.minus;
    } else {
        if p.sign != '-' && p.num.fillmode {
            p.num.bracket = false;
        }
        p.sign_wrote = p.sign == '+' && p.num.fillmode && !p.num.lsign_flag;
        if p.num.lsign == LSign::Pre && p.num.pre == p.num.pre_lsign_num {
            p.num.lsign = LSign::Post;
        }
    }
    p.num_count = (p.num.post + p.num.pre) as i64 - 1;
    if p.num.fillmode && p.num.decimal {
        p.last_relevant = number.find('.').map(|dot| {
            let mut r = dot;
            for (i, c) in number.bytes().enumerate().skip(dot + 1) {
                if c != b'0' {
                    r = i;
                }
            }
            r
        });
        if let Some(lr) = p.last_relevant {
            if p.num.zero_end > p.out_pre_spaces {
                let last_zero = (number.len() - 1).min(p.num.zero_end - p.out_pre_spaces);
                if lr < last_zero {
                    p.last_relevant = Some(last_zero);
                }
            }
        }
    }
    if !p.sign_wrote && p.out_pre_spaces == 0 {
        p.num_count += 1;
    }
    for n in nodes {
        match n {
            Node::Char(c) => p.out.push_str(c),
            Node::Key(k) => match k {
                Key::Nine | Key::Zero | Key::Dec | Key::D => p.numpart(*k),
                Key::Comma => {
                    if !p.num_in {
                        if !p.num.fillmode {
                            p.out.push(' ');
                        }
                    } else {
                        p.out.push(',');
                    }
                }
                Key::G => {
                    if !p.num_in {
                        if !p.num.fillmode {
                            p.out.push(' ');
                        }
                    } else {
                        p.out.push(',');
                    }
                }
                Key::L => p.out.push(' '),
                Key::Rn | Key::RnLower => {
                    let r = &number[p.number_p.min(number.len())..];
                    let r = if *k == Key::RnLower { r.to_ascii_lowercase() } else { r.to_string() };
                    if p.num.fillmode {
                        p.out.push_str(&r);
                    } else {
                        p.out.push_str(&format!("{r:>15}"));
                    }
                }
                Key::Th | Key::ThLower => {
                    if p.num.roman || number.starts_with('#') || p.sign == '-' || p.num.decimal {
                        continue;
                    }
                    p.out.push_str(get_th(number, *k == Key::Th)?);
                }
                Key::Mi => {
                    if p.sign == '-' {
                        p.out.push('-');
                    } else if !p.num.fillmode {
                        p.out.push(' ');
                    }
                }
                Key::Pl => {
                    if p.sign == '+' {
                        p.out.push('+');
                    } else if !p.num.fillmode {
                        p.out.push(' ');
                    }
                }
                Key::Sg
                    if p.sign != '\0' => {
                        p.out.push(p.sign);
                    }
                _ => {}
            },
        }
    }
    Ok(p.out)
}

/// to_number(text, template): the digits, decimal point and sign the template
/// reads, as numeric with the template's digits after the point.
pub fn to_number(a: &[Value]) -> Result<Value> {
    let (Value::Text(input), Value::Text(fmt)) = (&a[0], &a[1]) else { return Ok(Value::Null) };
    let (nodes, desc) = parse_num_format(fmt)?;
    if desc.eeee {
        return Err(SqlError::new(b"0A000", "\"EEEE\" not supported for input"));
    }
    if desc.roman {
        return Err(SqlError::new(b"0A000", "\"RN\" not supported for input"));
    }
    let b = input.as_bytes();
    let mut i = 0;
    let mut neg = false;
    let mut digits = String::new();
    let mut seen_dec = false;
    for n in &nodes {
        match n {
            Node::Char(_) => {
                if i < b.len() {
                    i += input[i..].chars().next().map_or(1, char::len_utf8);
                }
            }
            Node::Key(k) => match k {
                Key::Nine | Key::Zero => {
                    while digits.is_empty() && i < b.len() && (b[i] == b' ' || b[i] == b'-' || b[i] == b'+' || b[i] == b'<') {
                        if b[i] == b'-' || b[i] == b'<' {
                            neg = true;
                        }
                        i += 1;
                    }
                    if i < b.len() && b[i].is_ascii_digit() {
                        digits.push(b[i] as char);
                        i += 1;
                    }
                }
                Key::Dec | Key::D
                    if i < b.len() && b[i] == b'.' && !seen_dec => {
                        digits.push('.');
                        seen_dec = true;
                        i += 1;
                    }
                Key::Comma | Key::G
                    if i < b.len() && b[i] == b',' => {
                        i += 1;
                    }
                Key::S | Key::Mi | Key::Pl | Key::Sg
                    if i < b.len() && (b[i] == b'-' || b[i] == b'+') => {
                        neg |= b[i] == b'-';
                        i += 1;
                    }
                Key::Pr
                    if i < b.len() && b[i] == b'>' => {
                        i += 1;
                    }
                Key::L
                    if i < b.len() && b[i] == b' ' => {
                        i += 1;
                    }
                Key::Th | Key::ThLower => i = (i + 2).min(b.len()),
                _ => {}
            },
        }
    }
    let text = format!("{}{}", if neg { "-" } else { "" }, if digits.is_empty() { " " } else { digits.as_str() });
    let mut n = Numeric::parse(&text)?;
    if desc.multi_flag && desc.multi > 0 {
        n = n.mul(&Numeric::parse(&format!("1e-{}", desc.multi))?)?;
    }
    Ok(Value::Numeric(n))
}

struct NumProc<'a> {
    num: NumDesc,
    number: &'a [u8],
    number_p: usize,
    out: String,
    sign: char,
    sign_wrote: bool,
    num_in: bool,
    num_curr: i64,
    num_count: i64,
    out_pre_spaces: usize,
    last_relevant: Option<usize>,
}

impl NumProc<'_> {
    fn cur(&self) -> u8 {
        self.number.get(self.number_p).copied().unwrap_or(0)
    }
    fn last_relevant_is_dot(&self) -> bool {
        self.last_relevant.is_some_and(|i| self.number.get(i) == Some(&b'.'))
    }
    /// "0.1" with "9.9" prints " .1": the leading zero is blank.
    fn predec_space(&self) -> bool {
        !self.num.zero && self.number_p == 0 && self.number.first() == Some(&b'0') && self.num.post != 0
    }
    fn write_sign(&mut self, post: bool) {
        let _ = post;
        self.out.push(if self.sign == '-' { '-' } else { '+' });
    }
    fn numpart(&mut self, id: Key) {
        self.num_in = false;
        let curr = self.num_curr;
        let zs = self.num.zero_start as i64;
        if !self.sign_wrote
            && (curr >= self.out_pre_spaces as i64 || (self.num.zero && zs == curr))
            && (!self.predec_space() || self.last_relevant_is_dot())
        {
            if self.num.lsign_flag {
                if self.num.lsign == LSign::Pre {
                    self.write_sign(false);
                    self.sign_wrote = true;
                }
            } else if self.num.bracket {
                self.out.push(if self.sign == '+' { ' ' } else { '<' });
                self.sign_wrote = true;
            } else if self.sign == '+' {
                if !self.num.fillmode {
                    self.out.push(' ');
                }
                self.sign_wrote = true;
            } else if self.sign == '-' {
                self.out.push('-');
                self.sign_wrote = true;
            }
        }
        if matches!(id, Key::Nine | Key::Zero | Key::D | Key::Dec) {
            if curr < self.out_pre_spaces as i64 && (zs > curr || !self.num.zero) {
                if !self.num.fillmode {
                    self.out.push(' ');
                }
            } else if self.num.zero && curr < self.out_pre_spaces as i64 && zs <= curr {
                self.out.push('0');
                self.num_in = true;
            } else {
                if self.cur() == b'.' {
                    if !self.last_relevant_is_dot() || self.num.fillmode {
                        self.out.push('.');
                    }
                } else if self.last_relevant.is_some_and(|lr| self.number_p > lr) && id != Key::Zero {
                } else if self.predec_space() {
                    if !self.num.fillmode {
                        self.out.push(' ');
                    } else if self.last_relevant_is_dot() {
                        self.out.push('0');
                    }
                } else if self.cur() != 0 {
                    self.out.push(self.cur() as char);
                    self.num_in = true;
                }
                if self.cur() != 0 {
                    self.number_p += 1;
                }
            }
            let mut end = self.num_count + if self.out_pre_spaces > 0 { 1 } else { 0 } + if self.num.decimal { 1 } else { 0 };
            if self.last_relevant.is_some_and(|lr| lr == self.number_p) {
                end = curr;
            }
            if curr + 1 == end {
                if self.sign_wrote && self.num.bracket {
                    self.out.push(if self.sign == '+' { ' ' } else { '>' });
                } else if self.num.lsign_flag && self.num.lsign == LSign::Post {
                    self.write_sign(true);
                }
            }
        }
        self.num_curr += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tc(v: Value, f: &str) -> String {
        match to_char_number(&v, f).unwrap() {
            Value::Text(s) => s,
            _ => unreachable!(),
        }
    }

    #[test]
    fn integers_as_postgres() {
        let q = Value::Int8(4567890123456789);
        assert_eq!(tc(q.clone(), "9G999G999G999G999G999"), " 4,567,890,123,456,789");
        assert_eq!(tc(Value::Int8(-4567890123456789), "9999999999999999PR"), "<4567890123456789>");
        assert_eq!(tc(Value::Int8(123), "9999999999999999PR"), "              123 ");
        assert_eq!(tc(Value::Int8(-123), "9999999999999999S"), "             123-");
        assert_eq!(tc(Value::Int8(456), "FMS9999999999999999"), "+456");
        assert_eq!(tc(Value::Int8(456), "0999999999999999"), " 0000000000000456");
        assert_eq!(tc(Value::Int8(-4567890123456789), "FM9999999999999999THPR"), "<4567890123456789>");
        assert_eq!(tc(Value::Int8(456), "FM9999999999999999THPR"), "456TH");
        assert_eq!(tc(Value::Int4(1), "FMRN"), "I");
        assert_eq!(tc(Value::Int4(1999), "RN"), "        MCMXCIX");
    }

    #[test]
    fn fractions() {
        let n = |s: &str| Value::Numeric(Numeric::parse(s).unwrap());
        assert_eq!(tc(n("0.5"), "9.9"), "  .5");
        assert_eq!(tc(n("0"), "FM9.9"), "0.");
        assert_eq!(tc(n("-0.1"), "9.9"), " -.1");
        assert_eq!(tc(n("12.345"), "999.99"), "  12.35");
        assert_eq!(tc(n("1234.5"), "99.9"), " ##.#");
        assert_eq!(tc(n("12345.678"), "9.99EEEE"), " 1.23e+04");
        assert_eq!(tc(Value::Float8(0.00012), "9.99EEEE"), " 1.20e-04");
    }
}
