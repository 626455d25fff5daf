//! Framing and strict decoding of frontend messages.
//!
//! Backend messages are encoded with `pgwire::messages`. Frontend messages are
//! *decoded* here, into pgwire's message types, because pgwire's decoders are
//! written for trusted peers: they read past the end of a truncated body (or
//! panic, `bytes` panics on a short buffer), accept a string without its
//! terminator, replace invalid UTF-8 silently and ignore trailing bytes. A server
//! must answer each of those with PostgreSQL's 08P01/22021 error instead.

use crate::error::PgError;
use bytes::Bytes;
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail};
use pgwire::messages::extendedquery::{Bind, Close, Describe, Execute, Flush, Parse, Sync};
use pgwire::messages::simplequery::Query;
use pgwire::messages::terminate::Terminate;
use pgwire::messages::PgWireFrontendMessage;

/// Largest startup-phase packet (SSLRequest, StartupMessage, CancelRequest).
pub const MAX_STARTUP_PACKET_LEN: usize = 10_000;
/// PostgreSQL's PQ_LARGE_MESSAGE_LIMIT (1 GB - 1) for messages that carry data.
pub const LARGE_MESSAGE_LIMIT: usize = 0x3fff_ffff - 1;
/// PostgreSQL's PQ_SMALL_MESSAGE_LIMIT for every other message.
pub const SMALL_MESSAGE_LIMIT: usize = 10_000;

pub const SSL_REQUEST_CODE: i32 = 80_877_103;
pub const GSSENC_REQUEST_CODE: i32 = 80_877_104;
pub const CANCEL_REQUEST_CODE: i32 = 80_877_102;

/// Frontend message types PostgreSQL 15 accepts after startup.
pub fn is_known_type(t: u8) -> bool {
    matches!(t, b'Q' | b'P' | b'B' | b'E' | b'D' | b'C' | b'S' | b'H' | b'X' | b'F' | b'd' | b'c' | b'f')
}

/// Longest body+length a message of type `t` may declare (as PostgreSQL checks it).
pub fn max_length(t: u8) -> usize {
    match t {
        b'Q' | b'P' | b'B' | b'F' | b'd' => LARGE_MESSAGE_LIMIT,
        _ => SMALL_MESSAGE_LIMIT,
    }
}

/// A frontend message after startup. `FunctionCall` (fastpath 'F') is kept as
/// its raw body: pgwire has no type for it, and ferrogres does not run it yet.
#[derive(Debug)]
pub enum Frontend {
    Msg(PgWireFrontendMessage),
    FunctionCall,
}

/// Reads one message body, PostgreSQL's pq_getmsg* family with its error texts.
pub struct BodyReader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> BodyReader<'a> {
    pub fn new(buf: &'a [u8]) -> BodyReader<'a> {
        BodyReader { buf, pos: 0 }
    }
    fn insufficient() -> PgError {
        PgError::protocol("insufficient data left in message")
    }
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], PgError> {
        if self.buf.len() - self.pos < n {
            return Err(Self::insufficient());
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    /// pq_getmsgbyte, whose complaint differs from the other readers'.
    pub fn u8(&mut self) -> Result<u8, PgError> {
        if self.pos >= self.buf.len() {
            return Err(PgError::protocol("no data left in message"));
        }
        Ok(self.bytes(1)?[0])
    }
    pub fn i16(&mut self) -> Result<i16, PgError> {
        let b = self.bytes(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }
    pub fn i32(&mut self) -> Result<i32, PgError> {
        let b = self.bytes(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    /// A NUL-terminated string as bytes (no encoding check).
    pub fn cstring_bytes(&mut self) -> Result<&'a [u8], PgError> {
        let rest = &self.buf[self.pos..];
        let Some(nul) = rest.iter().position(|&b| b == 0) else {
            return Err(PgError::protocol("invalid string in message"));
        };
        self.pos += nul + 1;
        Ok(&rest[..nul])
    }

    /// A NUL-terminated string that must be valid UTF-8 (the only encoding we serve).
    pub fn cstring(&mut self) -> Result<String, PgError> {
        let rest = &self.buf[self.pos..];
        let Some(nul) = rest.iter().position(|&b| b == 0) else {
            return Err(PgError::protocol("invalid string in message"));
        };
        let s = check_utf8(&rest[..nul])?;
        self.pos += nul + 1;
        Ok(s.to_string())
    }
    /// pq_getmsgend: the whole body must have been consumed.
    pub fn end(&self) -> Result<(), PgError> {
        if self.pos != self.buf.len() {
            return Err(PgError::protocol("invalid message format"));
        }
        Ok(())
    }
}

/// Validate UTF-8 the way PostgreSQL reports it: 22021 naming the bad bytes.
pub fn check_utf8(b: &[u8]) -> Result<&str, PgError> {
    match std::str::from_utf8(b) {
        Ok(s) => Ok(s),
        Err(e) => {
            let bad = &b[e.valid_up_to()..];
            let first = bad[0];
            let want = if first & 0xe0 == 0xc0 {
                2
            } else if first & 0xf0 == 0xe0 {
                3
            } else if first & 0xf8 == 0xf0 {
                4
            } else {
                1
            };
            let shown: Vec<String> = bad.iter().take(want).map(|x| format!("0x{x:02x}")).collect();
            Err(PgError::error(
                b"22021",
                format!("invalid byte sequence for encoding \"UTF8\": {}", shown.join(" ")),
            ))
        }
    }
}

fn opt_name(s: String) -> Option<String> {
    if s.is_empty() {
        None
    } else {
        Some(s)
    }
}

/// Decode the body of a message whose type byte is known (see [`is_known_type`]).
/// Errors are ERROR-level 08P01/22021: the framing is intact, so the session can
/// go on, as in PostgreSQL.
pub fn decode(t: u8, body: &[u8]) -> Result<Frontend, PgError> {
    let mut r = BodyReader::new(body);
    let msg = match t {
        b'Q' => {
            let q = r.cstring()?;
            r.end()?;
            PgWireFrontendMessage::Query(Query::new(q))
        }
        b'P' => {
            let name = r.cstring()?;
            let query = r.cstring()?;
            let n = r.i16()? as u16;
            let mut oids = Vec::with_capacity(n.min(1024) as usize);
            for _ in 0..n {
                oids.push(r.i32()? as u32);
            }
            r.end()?;
            PgWireFrontendMessage::Parse(Parse::new(opt_name(name), query, oids))
        }
        b'B' => {
            let portal = r.cstring()?;
            let stmt = r.cstring()?;
            let nf = r.i16()? as u16;
            let mut pformats = Vec::with_capacity(nf.min(1024) as usize);
            for _ in 0..nf {
                pformats.push(r.i16()?);
            }
            let np = r.i16()? as u16;
            let mut params = Vec::with_capacity(np.min(1024) as usize);
            for _ in 0..np {
                let len = r.i32()?;
                if len == -1 {
                    params.push(None);
                } else if len < 0 {
                    return Err(BodyReader::insufficient());
                } else {
                    params.push(Some(Bytes::copy_from_slice(r.bytes(len as usize)?)));
                }
            }
            let nr = r.i16()? as u16;
            let mut rformats = Vec::with_capacity(nr.min(1024) as usize);
            for _ in 0..nr {
                rformats.push(r.i16()?);
            }
            r.end()?;
            PgWireFrontendMessage::Bind(Bind::new(opt_name(portal), opt_name(stmt), pformats, params, rformats))
        }
        b'E' => {
            let portal = r.cstring()?;
            let max_rows = r.i32()?;
            r.end()?;
            PgWireFrontendMessage::Execute(Execute::new(opt_name(portal), max_rows))
        }
        b'D' | b'C' => {
            let kind = r.u8()?;
            let name = r.cstring()?;
            r.end()?;
            if kind != b'S' && kind != b'P' {
                let what = if t == b'D' { "DESCRIBE" } else { "CLOSE" };
                return Err(PgError::protocol(format!("invalid {what} message subtype {kind}")));
            }
            if t == b'D' {
                PgWireFrontendMessage::Describe(Describe::new(kind, opt_name(name)))
            } else {
                PgWireFrontendMessage::Close(Close::new(kind, opt_name(name)))
            }
        }
        b'S' => {
            r.end()?;
            PgWireFrontendMessage::Sync(Sync::new())
        }
        b'H' => {
            r.end()?;
            PgWireFrontendMessage::Flush(Flush::new())
        }
        // PostgreSQL does not read a Terminate's body: the session ends anyway.
        b'X' => PgWireFrontendMessage::Terminate(Terminate::new()),
        b'd' => PgWireFrontendMessage::CopyData(CopyData::new(Bytes::copy_from_slice(body))),
        b'c' => PgWireFrontendMessage::CopyDone(CopyDone::new()),
        b'f' => {
            let m = r.cstring()?;
            PgWireFrontendMessage::CopyFail(CopyFail::new(m))
        }
        b'F' => return Ok(Frontend::FunctionCall),
        _ => return Err(PgError::protocol_fatal(format!("invalid frontend message type {t}"))),
    };
    Ok(Frontend::Msg(msg))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(e: PgError) -> String {
        format!("{} {}", e.sqlstate(), e.message)
    }

    #[test]
    fn query_must_be_terminated_and_exact() {
        assert!(matches!(decode(b'Q', b"select 1\0"), Ok(Frontend::Msg(PgWireFrontendMessage::Query(_)))));
        assert_eq!(code(decode(b'Q', b"select 1").unwrap_err()), "08P01 invalid string in message");
        assert_eq!(code(decode(b'Q', b"select 1\0ab").unwrap_err()), "08P01 invalid message format");
    }

    #[test]
    fn bad_utf8_is_22021_with_the_bytes() {
        assert_eq!(
            code(decode(b'Q', b"select \xff\0").unwrap_err()),
            "22021 invalid byte sequence for encoding \"UTF8\": 0xff"
        );
        assert_eq!(
            code(decode(b'Q', b"x\xe2\x82\0").unwrap_err()),
            "22021 invalid byte sequence for encoding \"UTF8\": 0xe2 0x82"
        );
    }

    #[test]
    fn truncated_bodies_are_errors_not_panics() {
        assert_eq!(code(decode(b'E', b"\0\0\0").unwrap_err()), "08P01 insufficient data left in message");
        assert_eq!(code(decode(b'B', b"\0\0\0").unwrap_err()), "08P01 insufficient data left in message");
        // a parameter claiming more bytes than the message has
        assert!(decode(b'B', b"\0\0\0\0\0\x01\x00\x00\x10\x00ab\0\0").is_err());
        assert!(decode(b'P', b"s\0select 1\0\x00\x05\0\0\0\x17").is_err());
        assert_eq!(code(decode(b'S', b"\0\0").unwrap_err()), "08P01 invalid message format");
        assert_eq!(code(decode(b'D', b"").unwrap_err()), "08P01 no data left in message");
        assert_eq!(code(decode(b'C', b"").unwrap_err()), "08P01 no data left in message");
        assert_eq!(code(decode(b'D', b"X\0").unwrap_err()), "08P01 invalid DESCRIBE message subtype 88");
        assert_eq!(code(decode(b'C', b"X\0").unwrap_err()), "08P01 invalid CLOSE message subtype 88");
    }

    #[test]
    fn bind_decodes_into_pgwire_types() {
        let body = b"p1\0s1\0\x00\x01\x00\x01\x00\x02\x00\x00\x00\x02hi\xff\xff\xff\xff\x00\x01\x00\x01";
        let Ok(Frontend::Msg(PgWireFrontendMessage::Bind(b))) = decode(b'B', body) else { panic!() };
        assert_eq!(b.portal_name.as_deref(), Some("p1"));
        assert_eq!(b.statement_name.as_deref(), Some("s1"));
        assert_eq!(b.parameter_format_codes, vec![1]);
        assert_eq!(b.parameters, vec![Some(Bytes::from_static(b"hi")), None]);
        assert_eq!(b.result_column_format_codes, vec![1]);
    }

    #[test]
    fn limits_follow_postgres() {
        assert_eq!(max_length(b'Q'), LARGE_MESSAGE_LIMIT);
        assert_eq!(max_length(b'S'), SMALL_MESSAGE_LIMIT);
        assert!(!is_known_type(b'@'));
        assert!(!is_known_type(b'p'));
    }
}
