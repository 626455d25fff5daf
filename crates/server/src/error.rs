//! `PgError`: what the server tells a client in an ErrorResponse or NoticeResponse.

use std::fmt;

/// Severity of a report, as PostgreSQL names it (the `S` and `V` fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Ends the statement (and, in a transaction block, fails the transaction).
    Error,
    /// Ends the session: the server closes the connection after sending it.
    Fatal,
    /// Ends every session (PostgreSQL restarts); ferrogres treats it as FATAL.
    Panic,
    Warning,
    Notice,
    Debug,
    Info,
    Log,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "ERROR",
            Severity::Fatal => "FATAL",
            Severity::Panic => "PANIC",
            Severity::Warning => "WARNING",
            Severity::Notice => "NOTICE",
            Severity::Debug => "DEBUG",
            Severity::Info => "INFO",
            Severity::Log => "LOG",
        }
    }

    /// True when the session cannot go on after this report.
    pub fn ends_session(self) -> bool {
        matches!(self, Severity::Fatal | Severity::Panic)
    }
}

/// An error or notice with PostgreSQL's fields. `code` is the five-character
/// SQLSTATE (`*b"0A000"`); `position` is 1-based, in characters of the query string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgError {
    pub severity: Severity,
    pub code: [u8; 5],
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
    pub position: Option<u32>,
    /// The `W` field (psql's CONTEXT line): where the error happened.
    pub context: Option<String>,
    /// The schema, table, column, data type and constraint fields (`s` `t` `c`
    /// `d` `n`), in that order, as the SQL layer gives them; boxed, as most
    /// errors have none (and `Result<_, PgError>` stays small).
    pub objects: Option<Box<ObjectFields>>,
}

/// [`PgError::objects`]: (field code, value) pairs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ObjectFields(pub Vec<(u8, String)>);

/// `s` as a protocol string (NUL-terminated on the wire): up to its first NUL.
pub fn wire_str(s: &str) -> String {
    match s.find('\0') {
        Some(n) => s[..n].to_string(),
        None => s.to_string(),
    }
}

impl PgError {
    pub fn new(severity: Severity, code: &[u8; 5], message: impl Into<String>) -> PgError {
        PgError { severity, code: *code, message: message.into(), detail: None, hint: None, position: None, context: None, objects: None }
    }
    pub fn error(code: &[u8; 5], message: impl Into<String>) -> PgError {
        PgError::new(Severity::Error, code, message)
    }
    pub fn fatal(code: &[u8; 5], message: impl Into<String>) -> PgError {
        PgError::new(Severity::Fatal, code, message)
    }
    pub fn warning(code: &[u8; 5], message: impl Into<String>) -> PgError {
        PgError::new(Severity::Warning, code, message)
    }
    pub fn with_detail(mut self, detail: impl Into<String>) -> PgError {
        self.detail = Some(detail.into());
        self
    }
    pub fn with_hint(mut self, hint: impl Into<String>) -> PgError {
        self.hint = Some(hint.into());
        self
    }
    pub fn with_position(mut self, position: u32) -> PgError {
        self.position = Some(position);
        self
    }
    pub fn sqlstate(&self) -> &str {
        // Codes are built from ASCII literals; a bad one is a bug, shown as-is.
        std::str::from_utf8(&self.code).unwrap_or("XX000")
    }

    /// The fields of an ErrorResponse/NoticeResponse, in PostgreSQL's order.
    /// Each is a C string on the wire: text after a NUL (a client's byte quoted
    /// in a message) is cut off, as PostgreSQL's C strings cut it, instead of
    /// breaking the message into bogus fields.
    pub fn wire_fields(&self) -> Vec<(u8, String)> {
        let sev = self.severity.as_str().to_string();
        let mut f = vec![(b'S', sev.clone()), (b'V', sev), (b'C', wire_str(self.sqlstate()))];
        f.push((b'M', wire_str(&self.message)));
        if let Some(d) = &self.detail {
            f.push((b'D', wire_str(d)));
        }
        if let Some(h) = &self.hint {
            f.push((b'H', wire_str(h)));
        }
        if let Some(p) = self.position {
            f.push((b'P', p.to_string()));
        }
        if let Some(w) = &self.context {
            f.push((b'W', wire_str(w)));
        }
        if let Some(o) = &self.objects {
            f.extend(o.0.iter().map(|(c, v)| (*c, wire_str(v))));
        }
        f
    }

    // Errors the wire layer itself raises, with PostgreSQL's texts.

    /// 08P01: a message broke the protocol, reported as ERROR (the stream is still in sync).
    pub fn protocol(message: impl Into<String>) -> PgError {
        PgError::error(b"08P01", message)
    }
    /// 08P01 FATAL: the stream can no longer be followed.
    pub fn protocol_fatal(message: impl Into<String>) -> PgError {
        PgError::fatal(b"08P01", message)
    }
    /// 57014: the statement was canceled by a CancelRequest.
    pub fn query_canceled() -> PgError {
        PgError::error(b"57014", "canceling statement due to user request")
    }
    /// 57014: the statement ran past statement_timeout.
    pub fn statement_timeout() -> PgError {
        PgError::error(b"57014", "canceling statement due to statement timeout")
    }
    /// 25P03: a transaction stayed idle past idle_in_transaction_session_timeout.
    pub fn idle_in_transaction_timeout() -> PgError {
        PgError::fatal(b"25P03", "terminating connection due to idle-in-transaction timeout")
    }
    /// 57P05: a session stayed idle past idle_session_timeout.
    pub fn idle_session_timeout() -> PgError {
        PgError::fatal(b"57P05", "terminating connection due to idle-session timeout")
    }
    /// 57P01: the server is shutting down.
    pub fn admin_shutdown() -> PgError {
        PgError::fatal(b"57P01", "terminating connection due to administrator command")
    }
    /// 08006: the client went away or the socket failed; nobody will read it.
    pub fn connection_failure(message: impl Into<String>) -> PgError {
        PgError::fatal(b"08006", message)
    }
    /// XX000: a bug (an invariant broken, a panic caught).
    pub fn internal(message: impl Into<String>) -> PgError {
        PgError::error(b"XX000", message)
    }
}

impl fmt::Display for PgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:  {}", self.severity.as_str(), self.message)
    }
}

impl std::error::Error for PgError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_fields_in_postgres_order() {
        let e = PgError::error(b"42703", "column \"x\" does not exist").with_hint("h").with_detail("d").with_position(8);
        let f = e.wire_fields();
        let codes: Vec<u8> = f.iter().map(|(c, _)| *c).collect();
        assert_eq!(codes, b"SVCMDHP");
        assert_eq!(f[2].1, "42703");
        assert_eq!(f[6].1, "8");
        assert!(!e.severity.ends_session());
        let mut c = PgError::error(b"22P02", "bad");
        c.context = Some("COPY t, line 1".into());
        c.position = Some(3);
        let codes: Vec<u8> = c.wire_fields().iter().map(|(c, _)| *c).collect();
        assert_eq!(codes, b"SVCMPW", "W (context) comes after P, as PostgreSQL sends it");
        assert!(PgError::admin_shutdown().severity.ends_session());
    }

    #[test]
    fn wire_fields_end_at_a_nul() {
        let mut e = PgError::error(b"22P02", "invalid input syntax for type integer: \"1\0x\"").with_detail("a\0b");
        e.context = Some("COPY t, line 1: \"1\0\"".into());
        let f = e.wire_fields();
        assert_eq!(f[3], (b'M', "invalid input syntax for type integer: \"1".to_string()));
        assert_eq!(f[4], (b'D', "a".to_string()));
        assert_eq!(f[5], (b'W', "COPY t, line 1: \"1".to_string()));
    }
}
