//! The engine's error type.
//!
//! Three kinds are kept apart (STYLE.md):
//! - a *user* error: something the client asked for cannot be done (a lock timeout, a
//!   serialization failure, a value too large); it carries PostgreSQL's SQLSTATE and
//!   message text and the session goes on;
//! - *corruption*: bytes read from disk are not what they must be (bad checksum, bad
//!   CRC, impossible offsets); returned as an error, never a panic;
//! - an *internal* invariant broken: a bug in ferrogres.
//!
//! Plus I/O errors from the operating system, kept with the path they concern.

use std::fmt;

/// A five-character SQLSTATE code, as PostgreSQL reports it in ErrorResponse.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SqlState(pub [u8; 5]);

impl SqlState {
    pub const SUCCESSFUL_COMPLETION: SqlState = SqlState(*b"00000");
    pub const FEATURE_NOT_SUPPORTED: SqlState = SqlState(*b"0A000");
    pub const INVALID_PARAMETER_VALUE: SqlState = SqlState(*b"22023");
    pub const PROGRAM_LIMIT_EXCEEDED: SqlState = SqlState(*b"54000");
    pub const T_R_SERIALIZATION_FAILURE: SqlState = SqlState(*b"40001");
    pub const T_R_DEADLOCK_DETECTED: SqlState = SqlState(*b"40P01");
    pub const LOCK_NOT_AVAILABLE: SqlState = SqlState(*b"55P03");
    pub const QUERY_CANCELED: SqlState = SqlState(*b"57014");
    pub const ADMIN_SHUTDOWN: SqlState = SqlState(*b"57P01");
    pub const IO_ERROR: SqlState = SqlState(*b"58030");
    pub const DISK_FULL: SqlState = SqlState(*b"53100");
    pub const INSUFFICIENT_RESOURCES: SqlState = SqlState(*b"53000");
    pub const INSUFFICIENT_PRIVILEGE: SqlState = SqlState(*b"42501");
    pub const UNDEFINED_FILE: SqlState = SqlState(*b"58P01");
    pub const DUPLICATE_FILE: SqlState = SqlState(*b"58P02");
    pub const DATA_CORRUPTED: SqlState = SqlState(*b"XX001");
    pub const INDEX_CORRUPTED: SqlState = SqlState(*b"XX002");
    pub const INTERNAL_ERROR: SqlState = SqlState(*b"XX000");
    pub const OUT_OF_MEMORY: SqlState = SqlState(*b"53200");
    pub const CONFIGURATION_LIMIT_EXCEEDED: SqlState = SqlState(*b"53400");
    pub const INVALID_TRANSACTION_STATE: SqlState = SqlState(*b"25000");
    pub const OBJECT_NOT_IN_PREREQUISITE_STATE: SqlState = SqlState(*b"55000");

    pub fn as_str(&self) -> &str {
        // Constructed only from ASCII literals above or validated input.
        std::str::from_utf8(&self.0).unwrap_or("XX000")
    }
}

impl fmt::Debug for SqlState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Display for SqlState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug)]
pub enum Error {
    /// Something the client asked for cannot be done; PostgreSQL's code and text.
    User {
        code: SqlState,
        message: String,
        detail: Option<String>,
        hint: Option<String>,
    },
    /// Bytes read from disk are not valid. `what` names the file and offset.
    Corrupt { what: String },
    /// An operating-system I/O error on `path`.
    Io { path: String, source: std::io::Error },
    /// A broken internal invariant: a bug.
    Internal(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn user(code: SqlState, message: impl Into<String>) -> Error {
        Error::User { code, message: message.into(), detail: None, hint: None }
    }

    pub fn corrupt(what: impl Into<String>) -> Error {
        Error::Corrupt { what: what.into() }
    }

    pub fn internal(what: impl Into<String>) -> Error {
        Error::Internal(what.into())
    }

    pub fn io(path: impl fmt::Display, source: std::io::Error) -> Error {
        Error::Io { path: path.to_string(), source }
    }

    pub fn with_detail(mut self, text: impl Into<String>) -> Error {
        if let Error::User { detail, .. } = &mut self {
            *detail = Some(text.into());
        }
        self
    }

    pub fn with_hint(mut self, text: impl Into<String>) -> Error {
        if let Error::User { hint, .. } = &mut self {
            *hint = Some(text.into());
        }
        self
    }

    /// `could not extend file "PATH": REASON` with PostgreSQL's HINT "Check free
    /// disk space." (mdextend), coded by the errno: 53100 for a full disk.
    pub fn extend(path: impl fmt::Display, source: &std::io::Error) -> Error {
        Error::User {
            code: errcode_for_file_access(source),
            message: format!("could not extend file \"{path}\": {}", strerror(source)),
            detail: None,
            hint: Some("Check free disk space.".into()),
        }
    }

    /// The SQLSTATE a client sees for this error.
    pub fn sqlstate(&self) -> SqlState {
        match self {
            Error::User { code, .. } => *code,
            Error::Corrupt { .. } => SqlState::DATA_CORRUPTED,
            Error::Io { source, .. } => errcode_for_file_access(source),
            Error::Internal(_) => SqlState::INTERNAL_ERROR,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::User { message, .. } => f.write_str(message),
            Error::Corrupt { what } => write!(f, "data corrupted: {what}"),
            Error::Io { path, source } => write!(f, "could not access file \"{path}\": {}", strerror(source)),
            Error::Internal(what) => write!(f, "internal error: {what}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The SQLSTATE of a failed file operation, by its errno (PostgreSQL's
/// errcode_for_file_access): a full disk is 53100, not a generic I/O error.
pub fn errcode_for_file_access(e: &std::io::Error) -> SqlState {
    match e.raw_os_error() {
        Some(libc::ENOSPC) => SqlState::DISK_FULL,
        Some(libc::EACCES | libc::EPERM | libc::EROFS) => SqlState::INSUFFICIENT_PRIVILEGE,
        Some(libc::ENOENT) => SqlState::UNDEFINED_FILE,
        Some(libc::EEXIST) => SqlState::DUPLICATE_FILE,
        Some(libc::EMFILE | libc::ENFILE) => SqlState::INSUFFICIENT_RESOURCES,
        _ => SqlState::IO_ERROR,
    }
}

/// The operating system's text for an error, as PostgreSQL's `%m` prints it ("No
/// space left on device", without Rust's " (os error 28)").
pub fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) if e.raw_os_error().is_some() => s[..i].to_string(),
        _ => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_map_to_their_sqlstates() {
        assert_eq!(Error::corrupt("x").sqlstate().as_str(), "XX001");
        assert_eq!(Error::internal("x").sqlstate().as_str(), "XX000");
        let e = Error::user(SqlState::LOCK_NOT_AVAILABLE, "could not obtain lock on relation \"t\"")
            .with_hint("h");
        assert_eq!(e.sqlstate().as_str(), "55P03");
        assert_eq!(e.to_string(), "could not obtain lock on relation \"t\"");
    }

    #[test]
    fn file_errors_are_coded_by_errno() {
        let full = std::io::Error::from_raw_os_error(libc::ENOSPC);
        let e = Error::extend("base/5/16384", &full);
        assert_eq!(e.sqlstate().as_str(), "53100");
        assert_eq!(e.to_string(), "could not extend file \"base/5/16384\": No space left on device");
        assert_eq!(Error::io("x", std::io::Error::from_raw_os_error(libc::ENOSPC)).sqlstate().as_str(), "53100");
        assert_eq!(Error::io("x", std::io::Error::from_raw_os_error(libc::EACCES)).sqlstate().as_str(), "42501");
        assert_eq!(Error::io("x", std::io::Error::from_raw_os_error(libc::EIO)).sqlstate().as_str(), "58030");
        assert_eq!(
            Error::io("x", std::io::Error::from_raw_os_error(libc::EIO)).to_string(),
            "could not access file \"x\": Input/output error"
        );
    }
}
