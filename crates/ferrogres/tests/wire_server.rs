//! The `ferrogres` binary as a PostgreSQL server, driven by real clients: psql
//! over TCP and the Unix socket, and a raw-socket client for what psql cannot
//! send (extended protocol with row limits, CancelRequest, malformed messages).

mod common;
use common::server::Server;
use common::*;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::process::Command;
use std::time::{Duration, Instant};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

// ---- a raw protocol client ------------------------------------------------

trait Io: Read + Write {
    fn shutdown_write(&self);
}
impl Io for TcpStream {
    fn shutdown_write(&self) {
        let _ = self.shutdown(std::net::Shutdown::Write);
    }
}
impl Io for UnixStream {
    fn shutdown_write(&self) {
        let _ = self.shutdown(std::net::Shutdown::Write);
    }
}

struct Raw {
    s: Box<dyn Io>,
    params: HashMap<String, String>,
    pid: i32,
    secret: i32,
}

impl Raw {
    fn tcp(port: u16) -> Raw {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Raw { s: Box::new(s), params: HashMap::new(), pid: 0, secret: 0 }
    }

    fn startup_packet(version: i32, params: &[(&str, &str)]) -> Vec<u8> {
        let mut b = version.to_be_bytes().to_vec();
        for (k, v) in params {
            b.extend(cstr(k));
            b.extend(cstr(v));
        }
        b.push(0);
        let mut p = ((b.len() + 4) as i32).to_be_bytes().to_vec();
        p.extend(b);
        p
    }

    /// Connect and finish startup; panics unless the server says ReadyForQuery 'I'.
    fn connect(port: u16) -> Raw {
        let mut r = Raw::tcp(port);
        r.send(&Raw::startup_packet(196608, &[("user", "postgres"), ("database", "postgres"), ("application_name", "rawtest")]));
        r.finish_startup();
        r
    }

    fn finish_startup(&mut self) {
        loop {
            let (t, b) = self.read().expect("startup reply");
            match t {
                b'R' => assert_eq!(b, [0, 0, 0, 0], "AuthenticationOk"),
                b'S' => {
                    let f: Vec<&[u8]> = b.split(|&c| c == 0).collect();
                    self.params.insert(text(f[0]), text(f[1]));
                }
                b'K' => {
                    self.pid = i32::from_be_bytes(b[0..4].try_into().unwrap());
                    self.secret = i32::from_be_bytes(b[4..8].try_into().unwrap());
                }
                b'Z' => {
                    assert_eq!(b, b"I");
                    return;
                }
                b'E' => panic!("startup failed: {:?}", fields(&b)),
                other => panic!("unexpected {}", other as char),
            }
        }
    }

    fn send(&mut self, b: &[u8]) {
        self.s.write_all(b).unwrap();
    }

    /// One backend message, or None at EOF.
    fn read(&mut self) -> Option<(u8, Vec<u8>)> {
        let mut h = [0u8; 5];
        if self.s.read_exact(&mut h).is_err() {
            return None;
        }
        let len = i32::from_be_bytes(h[1..5].try_into().unwrap()) as usize;
        let mut b = vec![0; len - 4];
        self.s.read_exact(&mut b).ok()?;
        Some((h[0], b))
    }

    /// Messages up to and including ReadyForQuery.
    fn until_ready(&mut self) -> Vec<(u8, Vec<u8>)> {
        let mut v = Vec::new();
        loop {
            let m = self.read().expect("connection closed before ReadyForQuery");
            let done = m.0 == b'Z';
            v.push(m);
            if done {
                return v;
            }
        }
    }

    /// Expect FATAL with `code`, then EOF.
    fn expect_fatal_then_eof(&mut self, code: &str) -> String {
        let (t, b) = self.read().expect("an ErrorResponse before EOF");
        assert_eq!(t, b'E');
        let f = fields(&b);
        assert_eq!(f[&b'S'], "FATAL");
        assert_eq!(f[&b'V'], "FATAL");
        assert_eq!(f[&b'C'], code, "{f:?}");
        assert!(self.read().is_none(), "connection should be closed after FATAL");
        f[&b'M'].clone()
    }
}


fn simple_select_1_works(port: u16) {
    let mut r = Raw::connect(port);
    r.send(&query("select 1"));
    let v = r.until_ready();
    assert_eq!(types(&v), "TDCZ");
}

// ---- tests -------------------------------------------------------------------

#[test]
fn psql_over_tcp_and_unix_socket() {
    let srv = Server::start_temp(&[]);
    let out = srv.psql_tcp(&["-At", "-c", "select 1"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "1\n");

    let sock = srv.dir.to_str().unwrap().to_string();
    let out = srv.psql(&sock, &["-At", "-c", "select 1"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "1\n");

    // An unsupported statement fails with 0A000 and the same session goes on.
    let out = srv.psql(
        &sock,
        &["-At", "-v", "VERBOSITY=verbose", "-c", "select 1", "-c", "create publication p", "-c", "select 2", "-c", "show server_version"],
    );
    let (so, se) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(so, "1\n2\n15.18\n", "stderr: {se}");
    assert!(se.contains("ERROR:  0A000: feature not supported: statement type CreatePublicationStmt"), "{se}");

    // Settings from the startup packet's options (PGOPTIONS) and application_name.
    let out = Command::new("psql")
        .args(["-X", "-At", "-h", "127.0.0.1", "-p", &srv.port.to_string(), "-U", "postgres", "-d", "postgres"])
        .args(["-c", "show statement_timeout", "-c", "show application_name"])
        .env("PGOPTIONS", "-c statement_timeout=5000")
        .env("PGAPPNAME", "wire-test")
        .env_remove("PGSSLMODE")
        .output()
        .unwrap();
    // SHOW prints the canonical form, as PostgreSQL 15 does: 5000 ms is "5s".
    assert_eq!(text(&out.stdout), "5s\nwire-test\n", "{}", text(&out.stderr));
}

#[test]
fn startup_reports_postgres_15_parameters_and_key() {
    let srv = Server::start_temp(&[]);
    // SSLRequest and GSSENCRequest are refused with 'N'; startup goes on in clear.
    let mut r = Raw::tcp(srv.port);
    for code in [80877103i32, 80877104] {
        let mut p = 8i32.to_be_bytes().to_vec();
        p.extend(code.to_be_bytes());
        r.send(&p);
        let mut n = [0u8; 1];
        r.s.read_exact(&mut n).unwrap();
        assert_eq!(&n, b"N");
    }
    r.send(&Raw::startup_packet(196608, &[("user", "postgres"), ("database", "postgres"), ("application_name", "rawtest")]));
    r.finish_startup();
    let p = &r.params;
    for (k, v) in [
        ("server_version", "15.18"),
        ("server_encoding", "UTF8"),
        ("client_encoding", "UTF8"),
        ("DateStyle", "ISO, MDY"),
        ("IntervalStyle", "postgres"),
        ("integer_datetimes", "on"),
        ("standard_conforming_strings", "on"),
        ("is_superuser", "on"),
        ("session_authorization", "postgres"),
        ("application_name", "rawtest"),
        ("default_transaction_read_only", "off"),
        ("in_hot_standby", "off"),
    ] {
        assert_eq!(p.get(k).map(String::as_str), Some(v), "{k}");
    }
    assert!(p.contains_key("TimeZone"));
    assert!(r.pid > 0);
    // pg_backend_pid() is the BackendKeyData pid.
    r.send(&query("select pg_backend_pid()"));
    let v = r.until_ready();
    assert_eq!(types(&v), "TDCZ");
    assert!(text(&v[1].1).ends_with(&r.pid.to_string()));
    // SET of a reported parameter sends ParameterStatus before ReadyForQuery.
    r.send(&query("set application_name = 'renamed'"));
    let v = r.until_ready();
    assert_eq!(types(&v), "CSZ");
    assert_eq!(v[1].1, b"application_name\0renamed\0");

    // Two sessions never share a pid.
    let r2 = Raw::connect(srv.port);
    assert_ne!(r.pid, r2.pid);

    // A replication value that is neither a boolean nor `database` is refused
    // (walsender connections themselves: tests/replication.rs).
    let mut r = Raw::tcp(srv.port);
    r.send(&Raw::startup_packet(196608, &[("user", "postgres"), ("replication", "maybe")]));
    let m = r.expect_fatal_then_eof("22023");
    assert_eq!(m, "invalid value for parameter \"replication\": \"maybe\"");

    // Protocol 4.0 is refused with PostgreSQL's message.
    let mut r = Raw::tcp(srv.port);
    r.send(&Raw::startup_packet(4 << 16, &[("user", "postgres")]));
    let m = r.expect_fatal_then_eof("0A000");
    assert_eq!(m, "unsupported frontend protocol 4.0: server supports 3.0 to 3.0");
}

#[test]
fn extended_query_with_row_limit_and_error_recovery() {
    let srv = Server::start_temp(&[]);
    let mut r = Raw::connect(srv.port);

    // Parse / Describe statement / Bind / Describe portal / Execute x3 with max_rows 2 / Sync
    let mut b = parse("s1", "select generate_series(1, 5)", &[]);
    b.extend(describe(b'S', "s1"));
    b.extend(bind("p1", "s1", &[], &[], &[]));
    b.extend(describe(b'P', "p1"));
    b.extend(execute("p1", 2));
    b.extend(execute("p1", 2));
    b.extend(execute("p1", 2));
    b.extend(sync());
    r.send(&b);
    let v = r.until_ready();
    assert_eq!(types(&v), "1tT2TDDsDDsDCZ");
    let rows: Vec<String> = v.iter().filter(|m| m.0 == b'D').map(|m| text(&m.1[6..])).collect();
    assert_eq!(rows, ["1", "2", "3", "4", "5"]);
    assert_eq!(v[12].1, b"SELECT 1\0");
    assert_eq!(v.last().unwrap().1, b"I");

    // Binary result format: int4 as 4 big-endian bytes.
    let mut b = parse("", "select 42", &[]);
    b.extend(bind("", "", &[], &[], &[1]));
    b.extend(execute("", 0));
    b.extend(sync());
    r.send(&b);
    let v = r.until_ready();
    assert_eq!(types(&v), "12DCZ");
    assert_eq!(&v[2].1[2..], &[0, 0, 0, 4, 0, 0, 0, 42]);

    // An error in Bind: everything up to Sync is skipped, then ReadyForQuery 'I'.
    let mut b = bind("", "no_such_statement", &[], &[], &[]);
    b.extend(execute("", 0));
    b.extend(parse("", "select 1", &[]));
    b.extend(sync());
    r.send(&b);
    let v = r.until_ready();
    assert_eq!(types(&v), "EZ", "after the error only ReadyForQuery");
    assert_eq!(fields(&v[0].1)[&b'C'], "26000");
    assert_eq!(v[1].1, b"I");

    // An unsupported statement fails at Parse with 0A000; the session goes on.
    let mut b = parse("", "create publication p", &[]);
    b.extend(bind("", "", &[], &[], &[]));
    b.extend(execute("", 0));
    b.extend(sync());
    r.send(&b);
    let v = r.until_ready();
    assert_eq!(types(&v), "EZ");
    assert_eq!(fields(&v[0].1)[&b'C'], "0A000");

    // Inside a transaction block an error fails the block ('E') until ROLLBACK.
    r.send(&query("begin"));
    assert_eq!(r.until_ready().last().unwrap().1, b"T");
    r.send(&[parse("", "select nothing_known", &[]), sync()].concat());
    assert_eq!(r.until_ready().last().unwrap().1, b"E");
    r.send(&query("select 1"));
    let v = r.until_ready();
    assert_eq!(fields(&v[0].1)[&b'C'], "25P02");
    r.send(&query("rollback"));
    assert_eq!(r.until_ready().last().unwrap().1, b"I");

    // Empty query through both protocols.
    r.send(&query(""));
    assert_eq!(types(&r.until_ready()), "IZ");
    r.send(&[parse("", "", &[]), bind("", "", &[], &[], &[]), describe(b'P', ""), execute("", 0), sync()].concat());
    assert_eq!(types(&r.until_ready()), "12nIZ");
}

#[test]
fn cancel_request_interrupts_pg_sleep() {
    let srv = Server::start_temp(&[]);
    let mut r = Raw::connect(srv.port);

    // A cancel with the wrong secret does nothing.
    r.send(&query("select pg_sleep(0.3)"));
    std::thread::sleep(Duration::from_millis(50));
    send_cancel(srv.port, r.pid, r.secret.wrapping_add(1));
    assert_eq!(types(&r.until_ready()), "TDCZ");

    let started = Instant::now();
    r.send(&query("select pg_sleep(30)"));
    std::thread::sleep(Duration::from_millis(200));
    send_cancel(srv.port, r.pid, r.secret);
    let v = r.until_ready();
    let e = v.iter().find(|m| m.0 == b'E').expect("an error");
    let f = fields(&e.1);
    assert_eq!(f[&b'C'], "57014");
    assert_eq!(f[&b'M'], "canceling statement due to user request");
    assert!(started.elapsed() < Duration::from_secs(5), "cancel took {:?}", started.elapsed());
    assert_eq!(v.last().unwrap().1, b"I");

    // The session goes on.
    r.send(&query("select 1"));
    assert_eq!(types(&r.until_ready()), "TDCZ");
}

fn send_cancel(port: u16, pid: i32, secret: i32) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut p = 16i32.to_be_bytes().to_vec();
    p.extend(80877102i32.to_be_bytes());
    p.extend(pid.to_be_bytes());
    p.extend(secret.to_be_bytes());
    s.write_all(&p).unwrap();
    // The server answers a cancel by closing the connection.
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 1];
    assert_eq!(s.read(&mut buf).unwrap(), 0);
}

#[test]
fn malformed_messages_end_only_their_connection() {
    let srv = Server::start_temp(&[]);
    let mut idle = Raw::connect(srv.port);

    // Garbage instead of a startup packet (an HTTP request).
    let mut r = Raw::tcp(srv.port);
    r.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(r.expect_fatal_then_eof("08P01"), "invalid length of startup packet");

    // After startup: a length of 3, a 2 GB length, an unknown message type.
    let cases: [(&[u8], &str); 4] = [
        (b"Q\x00\x00\x00\x03", "invalid message length"),
        (b"Q\x7f\xff\xff\xff", "invalid message length"),
        (b"S\x00\x00\x4e\x20", "invalid message length"), // 20000 > small-message limit
        (b"@\x00\x00\x00\x04", "invalid frontend message type 64"),
    ];
    for (bytes, text) in cases {
        let mut r = Raw::connect(srv.port);
        r.send(bytes);
        assert_eq!(r.expect_fatal_then_eof("08P01"), text);
    }

    // Bad message contents keep the stream in sync: ERROR, and the session goes on
    // (PostgreSQL does the same).
    let mut r = Raw::connect(srv.port);
    r.send(&msg(b'Q', b"select \xff\0"));
    let v = r.until_ready();
    let f = fields(&v[0].1);
    assert_eq!((f[&b'S'].as_str(), f[&b'C'].as_str()), ("ERROR", "22021"));
    assert_eq!(f[&b'M'], "invalid byte sequence for encoding \"UTF8\": 0xff");
    r.send(&msg(b'Q', b"select 1")); // no terminator
    assert_eq!(fields(&r.until_ready()[0].1)[&b'M'], "invalid string in message");
    r.send(&[msg(b'E', b"\0\0"), sync()].concat()); // truncated Execute
    assert_eq!(fields(&r.until_ready()[0].1)[&b'M'], "insufficient data left in message");
    r.send(&query("select 1"));
    assert_eq!(types(&r.until_ready()), "TDCZ");

    // Nothing else was harmed: the idle session and new clients still work.
    idle.send(&query("select 1"));
    assert_eq!(types(&idle.until_ready()), "TDCZ");
    let out = srv.psql_tcp(&["-At", "-c", "select 1"]);
    assert_eq!(text(&out.stdout), "1\n", "{}", text(&out.stderr));
}

#[test]
fn max_connections_is_enforced() {
    let srv = Server::start_temp(&["-c", "max_connections=2"]);
    let a = Raw::connect(srv.port);
    let _b = Raw::connect(srv.port);
    let mut c = Raw::tcp(srv.port);
    c.send(&Raw::startup_packet(196608, &[("user", "postgres")]));
    assert_eq!(c.expect_fatal_then_eof("53300"), "sorry, too many clients already");
    let out = srv.psql_tcp(&["-At", "-c", "select 1"]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("sorry, too many clients already"), "{}", text(&out.stderr));

    // A slot frees when a session ends.
    drop(a);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let out = srv.psql_tcp(&["-At", "-c", "select 1"]);
        if out.status.success() {
            assert_eq!(text(&out.stdout), "1\n");
            break;
        }
        assert!(Instant::now() < deadline, "slot never freed: {}", text(&out.stderr));
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn sigterm_stops_the_server_cleanly() {
    let mut srv = Server::start_temp(&[]);
    let mut idle = Raw::connect(srv.port);
    let mut busy = Raw::connect(srv.port);
    busy.send(&query("select pg_sleep(30)"));
    std::thread::sleep(Duration::from_millis(100));
    let sock = srv.socket_path();
    assert!(sock.exists());

    let t0 = Instant::now();
    // SAFETY: signalling our own child process.
    assert_eq!(unsafe { libc::kill(srv.pid(), libc::SIGTERM) }, 0);
    idle.expect_fatal_then_eof("57P01");
    // The busy session may first get its RowDescription; then the FATAL.
    let (mut t, mut b) = busy.read().expect("an ErrorResponse");
    if t == b'T' {
        (t, b) = busy.read().expect("an ErrorResponse");
    }
    assert_eq!(t, b'E');
    assert_eq!(fields(&b)[&b'C'], "57P01");
    assert_eq!(fields(&b)[&b'M'], "terminating connection due to administrator command");
    assert!(busy.read().is_none());

    let mut child = srv.child.take().unwrap();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(t0.elapsed() < Duration::from_secs(3), "server did not exit");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "exit status {status:?}");
    assert!(!sock.exists(), "socket file left behind");
    assert!(TcpStream::connect(("127.0.0.1", srv.port)).is_err());
}

#[test]
fn unix_socket_raw_client() {
    let srv = Server::start_temp(&[]);
    let s = UnixStream::connect(srv.socket_path()).unwrap_or_else(|e| panic!("{e}; server log: {}", srv.log()));
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut r = Raw { s: Box::new(s), params: HashMap::new(), pid: 0, secret: 0 };
    r.send(&Raw::startup_packet(196608, &[("user", "postgres")]));
    r.finish_startup();
    simple_select_1_works(srv.port);
    r.send(&query("select version()"));
    let v = r.until_ready();
    assert!(text(&v[1].1).contains("ferrogres"), "{}", text(&v[1].1));
}

#[test]
fn pgbench_runs_in_every_query_mode() {
    let srv = Server::start_temp(&[]);
    let script = srv.dir.join("select1.sql");
    std::fs::write(&script, "select 1;\n").unwrap();
    for mode in ["simple", "extended", "prepared"] {
        let out = Command::new("pgbench")
            .args(["-n", "-h", "127.0.0.1", "-p", &srv.port.to_string(), "-U", "postgres", "-c", "2", "-t", "50", "-M", mode, "-f"])
            .arg(&script)
            .arg("postgres")
            .output()
            .expect("pgbench runs");
        let so = text(&out.stdout);
        assert!(out.status.success(), "{mode}: {so} {}", text(&out.stderr));
        assert!(so.contains("number of transactions actually processed: 100/100"), "{mode}: {so}");
        assert!(so.contains("number of failed transactions: 0 (0.000%)"), "{mode}: {so}");
    }
}

/// xorshift64*: a fixed-seed generator, so a failure replays.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[test]
fn random_messages_never_crash_the_server() {
    let srv = Server::start_temp(&[]);
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let types = b"QPBEDCSHXFdcf@p\x00";
    for _ in 0..300 {
        let mut r = Raw::connect(srv.port);
        let len = rng.below(48) as usize;
        let mut body: Vec<u8> = (0..len).map(|_| rng.below(256) as u8).collect();
        if rng.below(3) == 0 {
            // Mostly-valid shapes: printable text and NULs, where decoders look.
            for b in body.iter_mut() {
                *b = b"select 1\0$\x00\x01SP"[rng.below(14) as usize];
            }
        }
        if rng.below(10) == 0 {
            // Broken framing: raw bytes, then EOF from our side.
            let _ = r.s.write_all(&body);
            r.s.shutdown_write();
        } else {
            let t = types[rng.below(types.len() as u64) as usize];
            // The server may already have hung up (FATAL): then writes fail.
            let _ = r.s.write_all(&[msg(t, &body), sync(), query("select 1")].concat());
        }
        // Either the session answers `select 1` (after whatever the garbage caused)
        // or it ends the connection; it never hangs and never panics.
        let mut got_one = false;
        loop {
            match r.read() {
                None => break,
                Some((b'D', b)) if b.ends_with(b"1") => got_one = true,
                Some((b'Z', _)) if got_one => break,
                Some(_) => {}
            }
        }
    }
    let log = srv.log();
    assert!(!log.contains("internal error"), "a connection panicked: {log}");
    let out = srv.psql_tcp(&["-At", "-c", "select 1"]);
    assert_eq!(text(&out.stdout), "1\n", "{}", text(&out.stderr));
}
