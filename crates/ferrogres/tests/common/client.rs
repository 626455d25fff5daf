#![allow(dead_code)]
//! A small raw-protocol client for the hardening tests: startup, simple and
//! extended queries with binary parameters, CancelRequest; errors as their
//! ErrorResponse fields.

use super::{bind, cstr, execute, fields, msg, parse, query, read_message, startup, sync};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

pub struct Client {
    pub s: TcpStream,
    pub pid: i32,
    pub secret: i32,
}

/// What a query gave: its rows (text columns, None for NULL) or its error.
#[derive(Debug)]
pub struct Reply {
    pub rows: Vec<Vec<Option<String>>>,
    pub error: Option<HashMap<u8, String>>,
}

impl Reply {
    /// The error's SQLSTATE and message, or panics with the rows.
    pub fn err(&self) -> (String, String) {
        let e = self.error.as_ref().unwrap_or_else(|| panic!("expected an error, got rows {:?}", self.rows));
        (e[&b'C'].clone(), e[&b'M'].clone())
    }
    /// The first column of the first row, or panics with the error.
    pub fn one(&self) -> String {
        if let Some(e) = &self.error {
            panic!("expected a row, got error {e:?}");
        }
        self.rows[0][0].clone().expect("not NULL")
    }
}

impl Client {
    pub fn connect(port: u16) -> Client {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
        s.write_all(&startup(&[("user", "postgres"), ("database", "postgres")])).unwrap();
        let (mut pid, mut secret) = (0, 0);
        loop {
            let (t, b) = read_message(&mut s);
            match t {
                b'K' => {
                    pid = i32::from_be_bytes(b[0..4].try_into().unwrap());
                    secret = i32::from_be_bytes(b[4..8].try_into().unwrap());
                }
                b'E' => panic!("startup failed: {:?}", fields(&b)),
                b'Z' => break,
                _ => {}
            }
        }
        Client { s, pid, secret }
    }

    pub fn send(&mut self, b: &[u8]) {
        self.s.write_all(b).unwrap();
    }

    /// Reads messages up to ReadyForQuery.
    pub fn reply(&mut self) -> Reply {
        let mut r = Reply { rows: Vec::new(), error: None };
        loop {
            let (t, b) = read_message(&mut self.s);
            match t {
                b'D' => {
                    let n = i16::from_be_bytes([b[0], b[1]]) as usize;
                    let mut pos = 2;
                    let mut row = Vec::with_capacity(n);
                    for _ in 0..n {
                        let len = i32::from_be_bytes(b[pos..pos + 4].try_into().unwrap());
                        pos += 4;
                        if len < 0 {
                            row.push(None);
                        } else {
                            row.push(Some(String::from_utf8_lossy(&b[pos..pos + len as usize]).into_owned()));
                            pos += len as usize;
                        }
                    }
                    r.rows.push(row);
                }
                b'E' => r.error = Some(fields(&b)),
                b'Z' => return r,
                _ => {}
            }
        }
    }

    pub fn query(&mut self, sql: &str) -> Reply {
        self.send(&query(sql));
        self.reply()
    }

    /// Parse `sql` with parameter types `oids`, Bind binary `params`, Execute, Sync.
    pub fn bind_binary(&mut self, sql: &str, oids: &[u32], params: &[Option<&[u8]>]) -> Reply {
        let formats = vec![1i16; params.len()];
        self.send(&[parse("", sql, oids), bind("", "", &formats, params, &[]), execute("", 0), sync()].concat());
        self.reply()
    }

    /// A CancelRequest for this session, on a connection of its own.
    pub fn cancel(&self, port: u16) {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut p = 16i32.to_be_bytes().to_vec();
        p.extend(80877102i32.to_be_bytes());
        p.extend(self.pid.to_be_bytes());
        p.extend(self.secret.to_be_bytes());
        s.write_all(&p).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut buf = [0u8; 1];
        let _ = s.read(&mut buf);
    }
}

/// A Terminate message, for a clean goodbye.
pub fn terminate() -> Vec<u8> {
    msg(b'X', &[])
}

/// A C string (re-exported for tests building bodies by hand).
pub fn c(s: &str) -> Vec<u8> {
    cstr(s)
}
