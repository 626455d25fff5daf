//! authentication_timeout bounds the whole start-up handshake (issue 18, item 8).
//!
//! A client that trickles its startup packet one byte at a time used to keep its
//! connection (and its thread, one of the 2 * max_connections + 10 the server
//! admits) forever: the timeout applied to each read. Now the handshake as a
//! whole must end within authentication_timeout, as in PostgreSQL.

mod common;
use common::server::Server;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Sends `packet` one byte every `gap` until the server closes the connection or
/// the packet is done; returns how long the server kept it.
fn trickle(port: u16, packet: &[u8], gap: Duration) -> (Duration, bool) {
    let t0 = Instant::now();
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    for b in packet {
        if s.write_all(&[*b]).is_err() {
            return (t0.elapsed(), true);
        }
        std::thread::sleep(gap);
        // A closed connection shows as EOF (or a reset) on a non-blocking peek.
        s.set_nonblocking(true).unwrap();
        let mut buf = [0u8; 1];
        let closed = match s.read(&mut buf) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
        };
        s.set_nonblocking(false).unwrap();
        if closed {
            return (t0.elapsed(), true);
        }
    }
    (t0.elapsed(), false)
}

#[test]
fn a_trickling_client_is_dropped_when_the_whole_handshake_exceeds_the_timeout() {
    let srv = Server::start_temp(&["-c", "authentication_timeout=2s"]);
    let packet = common::startup(&[("user", "postgres"), ("database", "postgres"), ("application_name", "trickle")]);
    // 40+ bytes at one byte per 300 ms would take 12 s; each read alone is quick.
    assert!(packet.len() > 40);
    let (kept, closed) = trickle(srv.port, &packet, Duration::from_millis(300));
    assert!(closed, "the server kept a trickling handshake open for {kept:?}");
    assert!(kept >= Duration::from_millis(1500), "closed too early: {kept:?}");
    assert!(kept < Duration::from_secs(5), "closed after {kept:?}, not within authentication_timeout=2s");
    // A normal client still connects, and the SSLRequest dance counts too: a
    // client that asks for SSL and then stalls is dropped as well.
    assert_eq!(srv.sql_ok("SELECT 1;").trim(), "1");
    let t0 = Instant::now();
    let mut s = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
    s.write_all(&[0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]).unwrap(); // SSLRequest
    let mut n = [0u8; 1];
    s.read_exact(&mut n).unwrap();
    assert_eq!(&n, b"N");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    assert!(t0.elapsed() < Duration::from_secs(5), "a stalled client after SSLRequest kept for {:?}", t0.elapsed());
}

#[test]
fn half_open_handshakes_free_their_slots() {
    // max_connections=1 and max_wal_senders=0 admit 2 * (1 + 0) + 10 = 12
    // connection threads in all.
    let srv = Server::start_temp(&["-c", "authentication_timeout=2s", "-c", "max_connections=1", "-c", "max_wal_senders=0"]);
    let held: Vec<TcpStream> = (0..12)
        .map(|_| {
            let mut s = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
            s.write_all(&[0, 0]).unwrap(); // half a length word, then nothing
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    // Every slot is held: a real client is refused now (without SSL, so that
    // psql shows the server's message)...
    let out = srv.psql_cmd().env("PGSSLMODE", "disable").args(["-At", "-c", "select 1"]).arg("-h").arg("127.0.0.1").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("sorry, too many clients already"), "expected the slots to be full: {err}");
    // ...and admitted once authentication_timeout has dropped the half-open ones.
    std::thread::sleep(Duration::from_millis(2500));
    let out = srv.psql_tcp(&["-At", "-c", "select 1"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "1\n", "{}", String::from_utf8_lossy(&out.stderr));
    drop(held);
}
