#![allow(dead_code)]
//! A small raw-protocol client for tests that interleave real sessions: a
//! query can be sent and its reply read later, so one session can be left
//! waiting while another acts; SQLSTATEs, notices and tags come back as
//! sent; `cancel` sends a CancelRequest as libpq does.

use super::*;
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// What one simple-query round trip returned.
#[derive(Debug, Default)]
pub struct Reply {
    pub rows: Vec<Vec<Option<String>>>,
    /// (SQLSTATE, message, detail) of the error, if any.
    pub error: Option<(String, String, String)>,
    pub notices: Vec<(String, String)>,
    pub tags: Vec<String>,
}

impl Reply {
    pub fn code(&self) -> &str {
        self.error.as_ref().map_or("", |e| e.0.as_str())
    }
    pub fn one(&self) -> String {
        assert!(self.error.is_none(), "unexpected error {:?}", self.error);
        self.rows[0][0].clone().unwrap_or_default()
    }
}

pub struct Client {
    pub s: TcpStream,
    pub pid: i32,
    pub secret: i32,
}

impl Client {
    pub fn connect(port: u16) -> Client {
        Client::connect_as(port, "postgres")
    }

    /// A session of role `user` (the test servers trust local TCP).
    pub fn connect_as(port: u16, user: &str) -> Client {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut c = Client { s, pid: 0, secret: 0 };
        c.s.write_all(&startup(&[("user", user), ("database", "postgres")])).unwrap();
        loop {
            let (t, b) = c.read();
            match t {
                b'K' => {
                    c.pid = i32::from_be_bytes(b[0..4].try_into().unwrap());
                    c.secret = i32::from_be_bytes(b[4..8].try_into().unwrap());
                }
                b'Z' => return c,
                b'E' => panic!("startup failed: {:?}", fields(&b)),
                _ => {}
            }
        }
    }

    pub fn read(&mut self) -> (u8, Vec<u8>) {
        read_message(&mut self.s)
    }

    /// Sends a query without waiting for its reply.
    pub fn send(&mut self, q: &str) {
        self.s.write_all(&query(q)).unwrap();
    }

    /// Reads the reply of the query sent last.
    pub fn reply(&mut self) -> Reply {
        let mut r = Reply::default();
        loop {
            let (t, b) = self.read();
            match t {
                b'D' => {
                    let n = i16::from_be_bytes([b[0], b[1]]) as usize;
                    let mut i = 2;
                    let mut row = Vec::new();
                    for _ in 0..n {
                        let len = i32::from_be_bytes(b[i..i + 4].try_into().unwrap());
                        i += 4;
                        if len < 0 {
                            row.push(None);
                        } else {
                            row.push(Some(String::from_utf8_lossy(&b[i..i + len as usize]).into_owned()));
                            i += len as usize;
                        }
                    }
                    r.rows.push(row);
                }
                b'E' => {
                    let f = fields(&b);
                    r.error = Some((f[&b'C'].clone(), f[&b'M'].clone(), f.get(&b'D').cloned().unwrap_or_default()));
                }
                b'N' => {
                    let f = fields(&b);
                    r.notices.push((f[&b'S'].clone(), f[&b'M'].clone()));
                }
                b'C' => r.tags.push(String::from_utf8_lossy(&b[..b.len() - 1]).into_owned()),
                b'Z' => return r,
                _ => {}
            }
        }
    }

    pub fn q(&mut self, q: &str) -> Reply {
        self.send(q);
        self.reply()
    }

    /// Sends a CancelRequest for this session on a new connection (as libpq's
    /// PQcancel does).
    pub fn cancel(&self, port: u16) {
        let mut c = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut p = 16i32.to_be_bytes().to_vec();
        p.extend(80877102i32.to_be_bytes());
        p.extend(self.pid.to_be_bytes());
        p.extend(self.secret.to_be_bytes());
        c.write_all(&p).unwrap();
    }
}

/// Polls until `pid` waits for a heavyweight lock held or awaited by one of `by`.
pub fn wait_blocked(ctl: &mut Client, pid: i32, by: &[i32]) {
    let list: Vec<String> = by.iter().map(|p| p.to_string()).collect();
    let q = format!("SELECT pg_isolation_test_session_is_blocked({pid}, '{{{}}}')", list.join(","));
    let deadline = Instant::now() + Duration::from_secs(20);
    while ctl.q(&q).one() != "t" {
        assert!(Instant::now() < deadline, "backend {pid} never blocked");
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub fn ok(r: &Reply) {
    assert!(r.error.is_none(), "unexpected error {:?}", r.error);
}


/// The rows of `sql`, each as its columns joined by `|` (NULL as `NULL`); the
/// query must succeed.
pub fn rows(c: &mut Client, sql: &str) -> Vec<String> {
    let r = c.q(sql);
    assert!(r.error.is_none(), "{sql}: {:?}", r.error);
    r.rows.iter().map(|row| row.iter().map(|v| v.clone().unwrap_or_else(|| "NULL".into())).collect::<Vec<_>>().join("|")).collect()
}

/// `EXPLAIN sql`, its lines joined by newlines.
pub fn plan(c: &mut Client, sql: &str) -> String {
    rows(c, &format!("EXPLAIN {sql}")).join("\n")
}
