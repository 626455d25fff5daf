//! Password authentication: the exchanges of pg_hba.conf's `password`, `md5`
//! and `scram-sha-256` methods, after the startup packet and before
//! AuthenticationOk (PostgreSQL's auth.c, in behaviour).
//!
//! | method | what the server sends | what the client answers |
//! |---|---|---|
//! | password | AuthenticationCleartextPassword (3) | PasswordMessage: the password |
//! | md5, role with an MD5 verifier | AuthenticationMD5Password (5) with a 4-byte salt | `md5` + md5(md5(password + user) + salt) |
//! | md5 with a SCRAM verifier or none; scram-sha-256 | AuthenticationSASL (10) offering `SCRAM-SHA-256` | SASLInitialResponse, then SASLResponse to each SASLContinue (11); the server ends with SASLFinal (12) |
//!
//! Every client message here must be a PasswordMessage ('p'), at most
//! [`MAX_AUTH_TOKEN`] bytes, arriving before the handshake's deadline
//! (`authentication_timeout`); anything else is FATAL 08P01 and the
//! connection ends. A wrong password, a role that does not exist or has no
//! password, or an expired one (VALID UNTIL in the past) is FATAL 28P01
//! `password authentication failed for user "x"`, the same text for all of
//! them, with the reason only in the server log (PostgreSQL's DETAIL lines).
//! A client that closes the connection when asked for a password (psql does,
//! then asks the user and reconnects) ends the attempt without a log line.
//!
//! Verifiers and the SCRAM state machine: [`ferrogres_engine::config::password`].

use crate::error::PgError;
use crate::handler::RoleAuth;
use crate::hba::{Method, Rule};
use ferrogres_engine::config::password::{self as pw, PasswordType, ScramOutcome, ScramServer};
use std::time::Instant;

/// PostgreSQL's PG_MAX_AUTH_TOKEN_LENGTH.
pub const MAX_AUTH_TOKEN: usize = 65535;

/// What authentication needs from the connection.
pub(crate) trait AuthIo {
    /// Sends one backend message (type byte and body; the length is added) and flushes.
    fn send_message(&mut self, t: u8, body: &[u8]) -> Result<(), PgError>;
    /// The next message before `deadline`: `Ok(None)` on EOF or timeout; a
    /// message that is not 'p' or is longer than `max` is an `Err` (08P01).
    fn read_password_message(&mut self, deadline: Instant, expected: &str) -> Result<Option<Vec<u8>>, PgError>;
}

/// Why authentication did not succeed.
pub(crate) enum AuthFailure {
    /// Send this FATAL and close.
    Fatal(PgError),
    /// The client went away: close without a word.
    Eof,
}

fn auth_request(code: i32, extra: &[u8]) -> Vec<u8> {
    let mut b = code.to_be_bytes().to_vec();
    b.extend_from_slice(extra);
    b
}

fn failed(user: &str, rule: &Rule, detail: Option<String>) -> AuthFailure {
    // The server log gets the reason; the client only the message.
    eprintln!("FATAL:  password authentication failed for user \"{user}\"");
    let matched = format!("Connection matched pg_hba.conf line {}: \"{}\"", rule.line, rule.raw);
    match detail {
        Some(d) => eprintln!("DETAIL:  {d}\n\t{matched}"),
        None => eprintln!("DETAIL:  {matched}"),
    }
    AuthFailure::Fatal(PgError::fatal(b"28P01", format!("password authentication failed for user \"{user}\"")))
}

/// A cstring body (the password, the md5 answer): its text without the NUL.
fn cstring(body: &[u8]) -> Result<String, AuthFailure> {
    match body.split_last() {
        Some((0, s)) if !s.contains(&0) => Ok(String::from_utf8_lossy(s).into_owned()),
        _ => Err(AuthFailure::Fatal(PgError::protocol_fatal("invalid password packet size"))),
    }
}

/// Runs the exchange `rule.method` asks for. `role`: the role's row as
/// authentication sees it, `None` when there is no such role.
pub(crate) fn authenticate(io: &mut dyn AuthIo, rule: &Rule, user: &str, role: Option<&RoleAuth>, deadline: Instant) -> Result<(), AuthFailure> {
    let stored = role.and_then(|r| r.password.as_deref());
    // Why a login fails even with the right password (the log's DETAIL).
    let refusal = match role {
        None => Some(format!("Role \"{user}\" does not exist.")),
        Some(r) if r.password.is_none() => Some(format!("User \"{user}\" has no password assigned.")),
        Some(r) if r.expired => Some(format!("User \"{user}\" has an expired password.")),
        Some(_) => None,
    };
    let read = |io: &mut dyn AuthIo, what: &str| -> Result<Vec<u8>, AuthFailure> {
        match io.read_password_message(deadline, what) {
            Ok(Some(b)) => Ok(b),
            Ok(None) => Err(AuthFailure::Eof),
            Err(e) => Err(AuthFailure::Fatal(e)),
        }
    };
    let send = |io: &mut dyn AuthIo, body: Vec<u8>| io.send_message(b'R', &body).map_err(|_| AuthFailure::Eof);
    let use_md5 = rule.method == Method::Md5 && !matches!(stored, Some(s) if pw::password_type(s) != PasswordType::Md5);
    match rule.method {
        Method::Trust => Ok(()),
        Method::Reject => Err(AuthFailure::Fatal(PgError::fatal(b"28000", "pg_hba.conf rejects connection"))),
        Method::Password => {
            send(io, auth_request(3, &[]))?;
            let body = read(io, "password")?;
            let given = cstring(&body)?;
            if given.is_empty() {
                return Err(failed(user, rule, Some("Empty password returned by client.".into())));
            }
            match (refusal, stored) {
                (Some(why), _) => Err(failed(user, rule, Some(why))),
                (None, Some(s)) if pw::plaintext_matches(s, user, &given) => Ok(()),
                (None, _) => Err(failed(user, rule, Some(format!("Password does not match for user \"{user}\".")))),
            }
        }
        Method::Md5 if use_md5 => {
            let salt = pw::md5_salt();
            send(io, auth_request(5, &salt))?;
            let body = read(io, "password")?;
            let answer = cstring(&body)?;
            match (refusal, stored) {
                (Some(why), _) => Err(failed(user, rule, Some(why))),
                (None, Some(s)) if pw::md5_response_matches(s, salt, &answer) => Ok(()),
                (None, _) => Err(failed(user, rule, Some(format!("Password does not match for user \"{user}\".")))),
            }
        }
        Method::Md5 | Method::ScramSha256 => {
            // An MD5 verifier cannot serve SCRAM: the exchange runs with a mock
            // verifier and fails at the proof, as in PostgreSQL.
            send(io, auth_request(10, b"SCRAM-SHA-256\0\0"))?;
            let body = read(io, "SASL")?;
            // SASLInitialResponse: mechanism (cstring), int32 length (-1: none), data.
            let Some(nul) = body.iter().position(|b| *b == 0) else {
                return Err(AuthFailure::Fatal(PgError::protocol_fatal("invalid SASL authentication message")));
            };
            if &body[..nul] != b"SCRAM-SHA-256" {
                return Err(AuthFailure::Fatal(PgError::protocol_fatal("client selected an invalid SASL authentication mechanism")));
            }
            let rest = &body[nul + 1..];
            if rest.len() < 4 {
                return Err(AuthFailure::Fatal(PgError::protocol_fatal("invalid SASL authentication message")));
            }
            let len = i32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]);
            let data = &rest[4..];
            if len < 0 || len as usize != data.len() {
                return Err(AuthFailure::Fatal(PgError::protocol_fatal("invalid SASL authentication message")));
            }
            let usable = stored.filter(|s| pw::password_type(s) == PasswordType::ScramSha256 && refusal.is_none());
            let mut scram = ScramServer::new(usable, user);
            let scram_err = |e: pw::ScramError| {
                let mut p = PgError::protocol_fatal(e.message);
                p.detail = e.detail;
                AuthFailure::Fatal(p)
            };
            let first = scram.client_first(data).map_err(scram_err)?;
            send(io, auth_request(11, &first))?;
            let body = read(io, "SASL")?;
            match scram.client_final(&body).map_err(scram_err)? {
                ScramOutcome::Success(fin) => {
                    send(io, auth_request(12, &fin))?;
                    Ok(())
                }
                ScramOutcome::Failure => {
                    let why = refusal.or_else(|| match stored.map(pw::password_type) {
                        Some(PasswordType::Md5) => Some(format!("User \"{user}\" does not have a valid SCRAM secret.")),
                        _ => Some(format!("Password does not match for user \"{user}\".")),
                    });
                    Err(failed(user, rule, why))
                }
            }
        }
    }
}
