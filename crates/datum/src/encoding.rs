//! Client encodings: the names PostgreSQL accepts for `client_encoding`.
//!
//! PostgreSQL compares encoding names after dropping every character that is not
//! a letter or a digit and folding case (`clean_encoding_name`), so `'utf-8'`,
//! `UTF8`, `Unicode` and `"UTF_8"` all name UTF8, and `Latin-1` names LATIN1.
//! The server encoding is always UTF8. A client encoding is accepted when the
//! wire layer can serve it: UTF8 and SQL_ASCII (bytes passed through, as
//! PostgreSQL does for SQL_ASCII) here; any other known encoding is PostgreSQL's
//! 0A000 with `Conversion between X and UTF8 is not supported.`, an unknown
//! name its 22023.

use crate::errors::{Result, SqlError};

/// PostgreSQL's encoding names (`pg_encname_tbl`), cleaned, with the canonical
/// name each stands for.
const NAMES: &[(&str, &str)] = &[
    ("abc", "WIN1258"),
    ("alt", "WIN866"),
    ("big5", "BIG5"),
    ("euccn", "EUC_CN"),
    ("eucjis2004", "EUC_JIS_2004"),
    ("eucjp", "EUC_JP"),
    ("euckr", "EUC_KR"),
    ("euctw", "EUC_TW"),
    ("gb18030", "GB18030"),
    ("gbk", "GBK"),
    ("iso88591", "LATIN1"),
    ("iso885910", "LATIN6"),
    ("iso885913", "LATIN7"),
    ("iso885914", "LATIN8"),
    ("iso885915", "LATIN9"),
    ("iso885916", "LATIN10"),
    ("iso88592", "LATIN2"),
    ("iso88593", "LATIN3"),
    ("iso88594", "LATIN4"),
    ("iso88595", "ISO_8859_5"),
    ("iso88596", "ISO_8859_6"),
    ("iso88597", "ISO_8859_7"),
    ("iso88598", "ISO_8859_8"),
    ("iso88599", "LATIN5"),
    ("johab", "JOHAB"),
    ("koi8", "KOI8R"),
    ("koi8r", "KOI8R"),
    ("koi8u", "KOI8U"),
    ("latin1", "LATIN1"),
    ("latin10", "LATIN10"),
    ("latin2", "LATIN2"),
    ("latin3", "LATIN3"),
    ("latin4", "LATIN4"),
    ("latin5", "LATIN5"),
    ("latin6", "LATIN6"),
    ("latin7", "LATIN7"),
    ("latin8", "LATIN8"),
    ("latin9", "LATIN9"),
    ("mskanji", "SJIS"),
    ("muleinternal", "MULE_INTERNAL"),
    ("shiftjis", "SJIS"),
    ("shiftjis2004", "SHIFT_JIS_2004"),
    ("sjis", "SJIS"),
    ("sqlascii", "SQL_ASCII"),
    ("tcvn", "WIN1258"),
    ("tcvn5712", "WIN1258"),
    ("uhc", "UHC"),
    ("unicode", "UTF8"),
    ("utf8", "UTF8"),
    ("vscii", "WIN1258"),
    ("win", "WIN1251"),
    ("win1250", "WIN1250"),
    ("win1251", "WIN1251"),
    ("win1252", "WIN1252"),
    ("win1253", "WIN1253"),
    ("win1254", "WIN1254"),
    ("win1255", "WIN1255"),
    ("win1256", "WIN1256"),
    ("win1257", "WIN1257"),
    ("win1258", "WIN1258"),
    ("win866", "WIN866"),
    ("win874", "WIN874"),
    ("win932", "SJIS"),
    ("win936", "GBK"),
    ("win949", "UHC"),
    ("win950", "BIG5"),
    ("windows1250", "WIN1250"),
    ("windows1251", "WIN1251"),
    ("windows1252", "WIN1252"),
    ("windows1253", "WIN1253"),
    ("windows1254", "WIN1254"),
    ("windows1255", "WIN1255"),
    ("windows1256", "WIN1256"),
    ("windows1257", "WIN1257"),
    ("windows1258", "WIN1258"),
    ("windows866", "WIN866"),
    ("windows874", "WIN874"),
    ("windows932", "SJIS"),
    ("windows936", "GBK"),
    ("windows949", "UHC"),
    ("windows950", "BIG5"),
];

/// The canonical name of an encoding name as PostgreSQL reads it, or None.
pub fn canonical(name: &str) -> Option<&'static str> {
    let clean: String = name.chars().filter(|c| c.is_ascii_alphanumeric()).map(|c| c.to_ascii_lowercase()).collect();
    NAMES.iter().find(|(n, _)| *n == clean).map(|(_, c)| *c)
}

/// The encodings this server's wire layer serves to a client.
pub const SERVED: &[&str] = &["UTF8", "SQL_ASCII"];

/// SET client_encoding's check: the canonical name SHOW prints.
pub fn check_client_encoding(value: &str) -> Result<String> {
    let invalid = |code: &[u8; 5]| SqlError::new(code, format!("invalid value for parameter \"client_encoding\": \"{value}\""));
    match canonical(value) {
        Some(enc) if SERVED.contains(&enc) => Ok(enc.to_string()),
        Some(enc) => Err(invalid(b"0A000").with_detail(format!("Conversion between {enc} and UTF8 is not supported."))),
        None => Err(invalid(b"22023")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_aliases_in_any_case_and_punctuation() {
        for v in ["UTF8", "utf8", "'utf-8'", "Unicode", "UTF_8", " utf 8 "] {
            assert_eq!(check_client_encoding(v).unwrap(), "UTF8", "{v}");
        }
        assert_eq!(check_client_encoding("sql_ascii").unwrap(), "SQL_ASCII");
    }

    #[test]
    fn unknown_and_unserved_encodings() {
        let e = check_client_encoding("foo").unwrap_err();
        assert_eq!(&e.code, b"22023");
        assert_eq!(e.message, "invalid value for parameter \"client_encoding\": \"foo\"");
        let e = check_client_encoding("MULE_INTERNAL").unwrap_err();
        assert_eq!(&e.code, b"0A000");
        assert_eq!(e.detail.as_deref(), Some("Conversion between MULE_INTERNAL and UTF8 is not supported."));
    }
}
