//! LIKE / ILIKE matching (PostgreSQL's `MatchText` in like_match.c): `%` matches
//! any run of characters, `_` exactly one, and the escape character (backslash
//! unless `ESCAPE` says otherwise; `ESCAPE ''` means none) makes the next
//! character literal. ILIKE lowercases both sides first.

use crate::errors::{Result, SqlError};
use crate::types::Value;

enum Tok {
    /// `%`
    Any,
    /// `_`
    One,
    Lit(char),
}

fn tokens(pat: &str, escape: Option<char>) -> Result<Vec<Tok>> {
    let mut out = Vec::new();
    let mut it = pat.chars();
    while let Some(c) = it.next() {
        out.push(match c {
            c if Some(c) == escape => match it.next() {
                Some(n) => Tok::Lit(n),
                None => return Err(SqlError::new(b"22025", "LIKE pattern must not end with escape character")),
            },
            '%' => Tok::Any,
            '_' => Tok::One,
            c => Tok::Lit(c),
        });
    }
    Ok(out)
}

/// Whether `s` matches the pattern: greedy with backtracking to the last `%`,
/// O(len(s) * len(pattern)) at worst.
fn matches(s: &[char], p: &[Tok]) -> bool {
    let (mut si, mut pi) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        match p.get(pi) {
            Some(Tok::Any) => {
                star = Some((pi, si));
                pi += 1;
            }
            Some(Tok::One) => {
                si += 1;
                pi += 1;
            }
            Some(Tok::Lit(c)) if *c == s[si] => {
                si += 1;
                pi += 1;
            }
            _ => match star {
                Some((sp, ss)) => {
                    pi = sp + 1;
                    si = ss + 1;
                    star = Some((sp, ss + 1));
                }
                None => return false,
            },
        }
    }
    p[pi..].iter().all(|t| matches!(t, Tok::Any))
}

/// `s LIKE pat [ESCAPE esc]`; NULL if any operand is NULL.
pub fn like(s: &Value, pat: &Value, escape: Option<&Value>, ci: bool) -> Result<Value> {
    let (Value::Text(s), Value::Text(pat)) = (s, pat) else { return Ok(Value::Null) };
    let escape = match escape {
        None => Some('\\'),
        Some(Value::Text(e)) => {
            let mut cs = e.chars();
            match (cs.next(), cs.next()) {
                (None, _) => None,
                (Some(c), None) => Some(c),
                _ => {
                    return Err(SqlError::new(b"22019", "invalid escape string")
                        .with_hint("Escape string must be empty or one character."))
                }
            }
        }
        Some(_) => return Ok(Value::Null),
    };
    let (s, pat) = if ci { (s.to_lowercase(), pat.to_lowercase()) } else { (s.clone(), pat.clone()) };
    let toks = tokens(&pat, escape)?;
    let chars: Vec<char> = s.chars().collect();
    Ok(Value::Bool(matches(&chars, &toks)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str, p: &str) -> bool {
        like(&Value::Text(s.into()), &Value::Text(p.into()), None, false).unwrap() == Value::Bool(true)
    }

    #[test]
    fn wildcards_and_escapes() {
        assert!(t("abc", "a%"));
        assert!(t("abc", "%c"));
        assert!(t("abc", "a_c"));
        assert!(!t("abc", "a_"));
        assert!(t("", "%"));
        assert!(t("a%c", "a\\%c"));
        assert!(!t("abc", "a\\%c"));
        assert!(t("aXbXc", "%b%c"));
        assert!(t("mississippi", "%iss%ppi"));
        let e = like(&Value::Text("a".into()), &Value::Text("a\\".into()), None, false).unwrap_err();
        assert_eq!(e.sqlstate(), "22025");
        assert_eq!(like(&Value::Null, &Value::Text("a".into()), None, false).unwrap(), Value::Null);
    }
}
