//! Raw-protocol regression tests for what the protocol fuzzer
//! (`protocol_fuzz.rs`, issue 18) found, each against the real server binary
//! and checked against PostgreSQL 15's answers to the same bytes.

mod common;
use common::server::Server;
use common::*;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

fn connect(srv: &Server) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

/// Backend messages in `b` (an 'N' answer to an encryption request is `('N', [])`
/// when `negotiated` such answers lead the reply).
fn messages(mut b: &[u8], negotiated: usize) -> Vec<(u8, Vec<u8>)> {
    let mut v = Vec::new();
    for _ in 0..negotiated {
        assert_eq!(b.first(), Some(&b'N'), "an 'N' answer to an encryption request");
        v.push((b'N', Vec::new()));
        b = &b[1..];
    }
    while !b.is_empty() {
        assert!(b.len() >= 5, "a partial message: {b:?}");
        let len = i32::from_be_bytes(b[1..5].try_into().unwrap()) as usize;
        v.push((b[0], b[5..1 + len].to_vec()));
        b = &b[1 + len..];
    }
    v
}

/// Sends `bytes` on a fresh connection, closes our side, returns all the server said.
fn exchange(srv: &Server, bytes: &[u8]) -> Vec<u8> {
    let mut s = connect(srv);
    s.write_all(bytes).unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).expect("the server ends the connection");
    out
}

/// A session's replies after startup (AuthenticationOk ... ReadyForQuery dropped).
fn session(srv: &Server, after_startup: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut bytes = startup(&[("user", "postgres"), ("database", "postgres")]);
    bytes.extend_from_slice(after_startup);
    bytes.extend(msg(b'X', &[]));
    let all = messages(&exchange(srv, &bytes), 0);
    let k = all.iter().position(|(t, _)| *t == b'K').expect("BackendKeyData");
    assert_eq!(all[k + 1].0, b'Z');
    all[k + 2..].to_vec()
}

fn error(m: &(u8, Vec<u8>)) -> HashMap<u8, String> {
    assert_eq!(m.0, b'E', "an ErrorResponse, got '{}'", m.0 as char);
    fields(&m.1)
}

fn close(kind: u8, name: &str) -> Vec<u8> {
    let mut b = vec![kind];
    b.extend(cstr(name));
    msg(b'C', &b)
}

/// A client byte quoted in an error message used to end the message's field
/// early (fields are NUL-terminated), so the client read a broken ErrorResponse.
/// PostgreSQL rejects a NUL in any client text (22021 `0x00`): in COPY data, in
/// text parameters and in the binary form of text types.
#[test]
fn nul_in_client_text_is_22021() {
    let srv = Server::start_temp(&[]);
    srv.sql_ok("create table t(a int, b text)");
    let utf8 = "invalid byte sequence for encoding \"UTF8\": 0x00";

    // COPY FROM STDIN: a raw NUL, and one written as \000.
    for data in [&b"1\tab\0c\n"[..], b"1\tab\\000\n", b"1\0\tx\n"] {
        let mut b = query("copy t from stdin");
        b.extend(msg(b'd', data));
        b.extend(msg(b'c', &[]));
        b.extend(query("select count(*) from t"));
        let v = session(&srv, &b);
        assert_eq!(types(&v), "GEZTDCZ", "{data:?}");
        let f = error(&v[1]);
        assert_eq!((f[&b'C'].as_str(), f[&b'M'].as_str(), f[&b'W'].as_str()), ("22021", utf8, "COPY t, line 1"), "{data:?}");
        assert_eq!(v[4].1, [0, 1, 0, 0, 0, 1, b'0'], "nothing copied");
    }

    // Bind: a text parameter, and binary text, each with a NUL; the error names
    // the parameter (PostgreSQL's CONTEXT for Bind).
    for (portal, format, ty, value) in
        [("", 0i16, 23u32, &b"1\0"[..]), ("p", 0, 25, b"a\0b"), ("", 1, 25, b"a\0b"), ("", 1, 3802, b"\x01\"\0\"")]
    {
        let mut b = parse("", "select $1", &[ty]);
        b.extend(bind(portal, "", &[format], &[Some(value)], &[]));
        b.extend(execute(portal, 0));
        b.extend(sync());
        let v = session(&srv, &b);
        assert_eq!(types(&v), "1EZ", "{value:?}");
        let f = error(&v[1]);
        let ctx = if portal.is_empty() { "unnamed portal parameter $1".to_string() } else { format!("portal \"{portal}\" parameter $1") };
        assert_eq!((f[&b'C'].as_str(), f[&b'M'].as_str(), f[&b'W'].as_str()), ("22021", utf8, ctx.as_str()), "{value:?}");
    }
    // Other bad input in a text parameter names the parameter and (cut to
    // log_parameter_max_length_on_error = 0) its value.
    let mut b = parse("", "select $1::int4, $2::int4", &[]);
    b.extend(bind("", "", &[], &[Some(b"1"), Some(b"x")], &[]));
    b.extend(sync());
    let v = session(&srv, &b);
    let f = error(&v[1]);
    assert_eq!(
        (f[&b'C'].as_str(), f[&b'M'].as_str(), f[&b'W'].as_str()),
        ("22P02", "invalid input syntax for type integer: \"x\"", "unnamed portal parameter $2 = '...'")
    );
    // The session goes on.
    assert_eq!(types(&session(&srv, &query("select 1"))), "TDCZ");
}

/// A portal whose statement ran to completion was dropped at once (and a
/// DML portal run again reported its tag again); PostgreSQL keeps every portal
/// until its transaction ends, answers a second Execute of a portal without
/// rows with 55000 `portal "" cannot be run`, of an empty one with another
/// EmptyQueryResponse, of a SHOW/SELECT one with no rows; Sync ends the
/// portals of the implicit transaction; a COMMIT portal goes with the
/// transaction it ended.
#[test]
fn portals_run_to_completion_behave_as_in_postgres() {
    let srv = Server::start_temp(&[]);
    srv.sql_ok("create table t(a int)");
    let twice = |sql: &str| {
        let mut b = parse("", sql, &[]);
        b.extend(bind("", "", &[], &[], &[]));
        b.extend(execute("", 0));
        b.extend(execute("", 0));
        b.extend(sync());
        session(&srv, &b)
    };
    assert_eq!(types(&twice("")), "12IIZ");
    let v = twice("show server_version");
    assert_eq!(types(&v), "12DCCZ");
    assert_eq!((v[3].1.as_slice(), v[4].1.as_slice()), (&b"SHOW\0"[..], &b"SHOW\0"[..]));
    let v = twice("select 1");
    assert_eq!((v[3].1.as_slice(), v[4].1.as_slice()), (&b"SELECT 1\0"[..], &b"SELECT 0\0"[..]));
    for sql in ["insert into t values (1)", "begin"] {
        let v = twice(sql);
        assert_eq!(types(&v), "12CEZ", "{sql}");
        let f = error(&v[3]);
        assert_eq!((f[&b'C'].as_str(), f[&b'M'].as_str()), ("55000", "portal \"\" cannot be run"), "{sql}");
    }
    // The error rolled back the pipeline's implicit transaction, INSERT and all
    // (the old code, reporting INSERT 0 1 again, committed it).
    assert_eq!(srv.sql_ok("select count(*) from t"), "0\n");

    // COMMIT's portal ends with its transaction; a named SHOW portal ends at Sync.
    let mut b = query("begin");
    b.extend(parse("", "commit", &[]));
    b.extend(bind("", "", &[], &[], &[]));
    b.extend(execute("", 0));
    b.extend(execute("", 0));
    b.extend(sync());
    b.extend(parse("s", "show server_version", &[]));
    b.extend(bind("p", "s", &[], &[], &[]));
    b.extend(execute("p", 0));
    b.extend(sync());
    b.extend(execute("p", 0));
    b.extend(sync());
    let v = session(&srv, &b);
    assert_eq!(types(&v), "CZ12CEZ12DCZEZ");
    assert_eq!(error(&v[5])[&b'M'], "portal \"\" does not exist");
    assert_eq!(error(&v[12])[&b'M'], "portal \"p\" does not exist");

    // Inside a block a portal outlives Sync and ends at COMMIT.
    let mut b = query("begin");
    b.extend(bind("p", "s", &[], &[], &[]));
    b.extend(sync());
    b.extend(query("commit"));
    b.extend(execute("p", 0));
    b.extend(sync());
    b.extend(close(b'S', "s"));
    b.extend(sync());
    let mut all = parse("s", "show server_version", &[]);
    all.extend(sync());
    all.extend(b);
    let v = session(&srv, &all);
    assert_eq!(types(&v), "1ZCZ2ZCZEZ3Z");
}

/// SSLRequest and GSSENCRequest were answered 'N' as often as a client asked,
/// and bytes a client pipelined behind one were read as its next packet.
/// PostgreSQL answers each request once (a second one is FATAL 0A000
/// "unsupported frontend protocol 1234.5679") and refuses data that came
/// before its answer (FATAL 08P01, CVE-2021-23214).
#[test]
fn encryption_requests_are_answered_once_and_not_pipelined() {
    let srv = Server::start_temp(&[]);
    let request = |code: i32| [8i32.to_be_bytes(), code.to_be_bytes()].concat();
    let (ssl, gss) = (request(80_877_103), request(80_877_104));

    // Waiting for each answer: SSL then GSS then the startup works (and GSS then SSL).
    for order in [[&ssl, &gss], [&gss, &ssl]] {
        let mut s = connect(&srv);
        for r in order {
            s.write_all(r).unwrap();
            let mut n = [0u8; 1];
            s.read_exact(&mut n).unwrap();
            assert_eq!(&n, b"N");
        }
        s.write_all(&startup(&[("user", "postgres")])).unwrap();
        s.write_all(&query("select 1")).unwrap();
        loop {
            let (t, b) = read_message(&mut s);
            assert_ne!(t, b'E', "{:?}", fields(&b));
            if t == b'D' {
                assert_eq!(b, [0, 1, 0, 0, 0, 1, b'1']);
                break;
            }
        }
    }

    // The same request twice, or the first one again after the other.
    for (seq, version) in [(vec![&ssl, &ssl], "1234.5679"), (vec![&gss, &gss], "1234.5680"), (vec![&ssl, &gss, &ssl], "1234.5679")] {
        let mut s = connect(&srv);
        let n = seq.len() - 1;
        for r in &seq[..n] {
            s.write_all(r).unwrap();
            let mut b = [0u8; 1];
            s.read_exact(&mut b).unwrap();
            assert_eq!(&b, b"N");
        }
        s.write_all(seq[n]).unwrap();
        let mut out = Vec::new();
        s.read_to_end(&mut out).unwrap();
        let v = messages(&out, 0);
        assert_eq!(types(&v), "E");
        let f = error(&v[0]);
        assert_eq!(
            (f[&b'S'].as_str(), f[&b'C'].as_str(), f[&b'M'].clone()),
            ("FATAL", "0A000", format!("unsupported frontend protocol {version}: server supports 3.0 to 3.0"))
        );
    }

    // A startup packet sent without waiting for the answer.
    for (req, what) in [(&ssl, "SSL request"), (&gss, "GSSAPI encryption request")] {
        let mut b = req.clone();
        b.extend(startup(&[("user", "postgres")]));
        let v = messages(&exchange(&srv, &b), 1);
        assert_eq!(types(&v), "NE");
        let f = error(&v[1]);
        assert_eq!((f[&b'S'].as_str(), f[&b'C'].as_str()), ("FATAL", "08P01"));
        assert_eq!(f[&b'M'], format!("received unencrypted data after {what}"));
        assert_eq!(f[&b'D'], "This could be either a client-software bug or evidence of an attempted man-in-the-middle attack.");
    }
    // An SSLRequest with extra bytes is still one (PostgreSQL 15 reads the whole packet).
    let mut s = connect(&srv);
    s.write_all(&[12i32.to_be_bytes(), 80_877_103i32.to_be_bytes(), [0; 4]].concat()).unwrap();
    let mut n = [0u8; 1];
    s.read_exact(&mut n).unwrap();
    assert_eq!(&n, b"N");
}

/// PostgreSQL's startup-packet limit (MAX_STARTUP_PACKET_LENGTH, 10000) does
/// not count the length word: 10004 bytes in all are accepted, 10005 are not.
/// ferrogres refused 10001 to 10004.
#[test]
fn startup_packet_limit_excludes_the_length_word() {
    let srv = Server::start_temp(&[]);
    let packet = |total: usize| {
        let base = startup(&[("user", "postgres"), ("application_name", "")]).len();
        let p = startup(&[("user", "postgres"), ("application_name", &"a".repeat(total - base))]);
        assert_eq!(p.len(), total);
        p
    };
    let v = messages(&exchange(&srv, &[packet(10_004), msg(b'X', &[])].concat()), 0);
    assert!(types(&v).starts_with('R') && types(&v).ends_with('Z'), "{}", types(&v));
    let v = messages(&exchange(&srv, &packet(10_005)), 0);
    assert_eq!(types(&v), "E");
    assert_eq!(error(&v[0])[&b'M'], "invalid length of startup packet");
}

/// A CancelRequest of the wrong length is logged and ignored (PostgreSQL);
/// it used to be read as a StartupMessage of protocol 1234.5678.
#[test]
fn cancel_request_of_wrong_length_is_ignored() {
    let srv = Server::start_temp(&[]);
    for len in [8i32, 20] {
        let mut b = len.to_be_bytes().to_vec();
        b.extend(80_877_102i32.to_be_bytes());
        b.resize(len as usize, 0);
        assert_eq!(exchange(&srv, &b), b"", "length {len}: closed without a word");
    }
    assert!(srv.log().contains("LOG:  invalid length of startup packet"));
}

/// A COPY line arriving in many small CopyData messages was rescanned from its
/// start for every message: a 1 MB line in 10-byte messages kept a core busy
/// for minutes (PostgreSQL: 0.06 s). Now each byte is scanned once.
#[test]
fn copy_line_in_small_messages_is_linear() {
    let srv = Server::start_temp(&[]);
    srv.sql_ok("create table t(a int, b text)");
    let mut line = b"1\t".to_vec();
    line.extend(std::iter::repeat_n(b'x', 1 << 20));
    line.push(b'\n');
    let mut b = query("copy t from stdin");
    for c in line.chunks(10) {
        b.extend(msg(b'd', c));
    }
    b.extend(msg(b'c', &[]));
    b.extend(query("select length(b) from t"));
    let t = std::time::Instant::now();
    let v = session(&srv, &b);
    assert!(t.elapsed() < Duration::from_secs(30), "took {:?}", t.elapsed());
    assert_eq!(types(&v), "GCZTDCZ");
    assert_eq!(v[4].1, [&[0, 1, 0, 0, 0, 7][..], b"1048576"].concat());
}

fn rss_mb(srv: &Server) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{}/status", srv.pid())).unwrap();
    let l = s.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    l.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() / 1024
}

/// The wire adapter kept every bound portal's result formats, by name, until
/// the session ended, long after the portal itself was gone: a client binding
/// new portal names in every transaction grew the server without bound. Here
/// 4,000 portals with 25 kB names (100 MB of names) must not stay behind.
#[test]
fn ended_portals_leave_nothing_behind() {
    let srv = Server::start_temp(&[]);
    let mut s = connect(&srv);
    s.write_all(&startup(&[("user", "postgres"), ("database", "postgres")])).unwrap();
    while read_message(&mut s).0 != b'Z' {}
    s.write_all(&[parse("s", "select 1", &[]), sync()].concat()).unwrap();
    while read_message(&mut s).0 != b'Z' {}
    let before = rss_mb(&srv);
    let pad = "x".repeat(25_000);
    for batch in 0..40 {
        let mut b = Vec::new();
        for i in 0..100 {
            b.extend(bind(&format!("p{batch}_{i}_{pad}"), "s", &[], &[], &[1]));
            b.extend(sync());
        }
        s.write_all(&b).unwrap();
        for _ in 0..100 {
            assert_eq!(read_message(&mut s).0, b'2');
            assert_eq!(read_message(&mut s).0, b'Z');
        }
    }
    let grew = rss_mb(&srv).saturating_sub(before);
    assert!(grew < 40, "the server grew by {grew} MB for 100 MB of ended portals' names");
    s.write_all(&query("select 1")).unwrap();
    while read_message(&mut s).0 != b'Z' {}
}

/// An ERROR the wire layer raised itself (a malformed message) did not reach
/// the session, so a transaction block went on as if nothing had happened and
/// an implicit transaction committed at Sync. In PostgreSQL every ERROR fails
/// the block (25P02 until ROLLBACK) or rolls the implicit transaction back. The
/// same held for the adapter's own Bind checks (format counts).
#[test]
fn wire_level_errors_fail_the_transaction() {
    let srv = Server::start_temp(&[]);
    srv.sql_ok("create table t(a int)");
    let no_data = msg(b'D', b""); // Describe without its kind byte
    // In a block.
    let mut b = query("begin");
    b.extend(parse("", "select 1", &[]));
    b.extend(&no_data);
    b.extend(sync());
    b.extend(query("select 1"));
    b.extend(query("rollback"));
    let v = session(&srv, &b);
    assert_eq!(types(&v), "CZ1EZEZCZ");
    assert_eq!(error(&v[3])[&b'M'], "no data left in message");
    assert_eq!(v[4].1, b"E", "the block failed");
    assert_eq!(error(&v[5])[&b'C'], "25P02");
    // The implicit transaction of a pipeline: the INSERT before the bad message
    // is rolled back.
    let mut b = parse("", "insert into t values (1)", &[]);
    b.extend(bind("", "", &[], &[], &[]));
    b.extend(execute("", 0));
    b.extend(&no_data);
    b.extend(sync());
    assert_eq!(types(&session(&srv, &b)), "12CEZ");
    assert_eq!(srv.sql_ok("select count(*) from t"), "0\n");
    // Bind's format-count check, in a block.
    let mut b = query("begin");
    b.extend(parse("", "select $1::int", &[]));
    b.extend(bind("", "", &[0, 0], &[Some(b"1")], &[]));
    b.extend(sync());
    b.extend(query("rollback"));
    let v = session(&srv, &b);
    assert_eq!(types(&v), "CZ1EZCZ");
    assert_eq!(error(&v[3])[&b'M'], "bind message has 2 parameter formats but 1 parameters");
    assert_eq!(v[4].1, b"E");
    // PostgreSQL looks the statement up before it counts the formats.
    let v = session(&srv, &[bind("", "nostmt", &[0, 0], &[Some(b"1")], &[]), sync()].concat());
    assert_eq!(error(&v[0])[&b'C'], "26000");
}

/// Execute with a row limit answered CommandComplete when exactly that many
/// rows were left; PostgreSQL's executor stops at the limit without looking
/// further, so it answers PortalSuspended and the next Execute `SELECT 0`.
#[test]
fn exactly_max_rows_rows_is_portal_suspended() {
    let srv = Server::start_temp(&[]);
    let run = |sql: &str, limits: &[i32]| {
        let mut b = parse("", sql, &[]);
        b.extend(bind("", "", &[], &[], &[]));
        for &n in limits {
            b.extend(execute("", n));
        }
        b.extend(sync());
        let v = session(&srv, &b);
        let tags: Vec<String> = v.iter().filter(|m| m.0 == b'C').map(|m| String::from_utf8_lossy(&m.1).trim_end_matches('\0').to_string()).collect();
        (types(&v), tags)
    };
    assert_eq!(run("select 1", &[1, 1, 0]), ("12DsCCZ".into(), vec!["SELECT 0".to_string(), "SELECT 0".into()]));
    assert_eq!(run("select generate_series(1, 3)", &[3, 0]), ("12DDDsCZ".into(), vec!["SELECT 0".to_string()]));
    assert_eq!(run("select generate_series(1, 3)", &[2, 2, 2]), ("12DDsDCCZ".into(), vec!["SELECT 1".to_string(), "SELECT 0".into()]));
    assert_eq!(run("select 1 where false", &[1]), ("12CZ".into(), vec!["SELECT 0".to_string()]));
}

/// Replies in PostgreSQL's order during startup: NegotiateProtocolVersion as
/// soon as the packet is read (before a missing user is reported), and
/// AuthenticationOk before what InitPostgres finds (an unknown database, a bad
/// setting). Bytes that are not UTF-8 in a parameter are no layout error.
#[test]
fn startup_replies_come_in_postgres_order() {
    let srv = Server::start_temp(&[]);
    let packet = |version: i32, params: &[(&[u8], &[u8])]| {
        let mut b = version.to_be_bytes().to_vec();
        for (k, v) in params {
            b.extend(*k);
            b.push(0);
            b.extend(*v);
            b.push(0);
        }
        b.push(0);
        [((b.len() + 4) as i32).to_be_bytes().to_vec(), b].concat()
    };
    let fatal = |bytes: Vec<u8>, want_types: &str, code: &str| {
        let v = messages(&exchange(&srv, &bytes), 0);
        assert_eq!(types(&v), want_types);
        let f = error(v.last().unwrap());
        assert_eq!((f[&b'S'].as_str(), f[&b'C'].as_str()), ("FATAL", code), "{f:?}");
        f[&b'M'].clone()
    };
    let m = fatal(packet(196_608, &[(b"user", b"postgres"), (b"database", b"nosuchdb")]), "RE", "3D000");
    assert_eq!(m, "database \"nosuchdb\" does not exist");
    let m = fatal(packet(196_608, &[(b"user", b"postgres"), (b"nosuchguc", b"1")]), "RE", "42704");
    assert_eq!(m, "unrecognized configuration parameter \"nosuchguc\"");
    let m = fatal(packet(196_609, &[(b"database", b"postgres")]), "vE", "28000");
    assert_eq!(m, "no PostgreSQL user name specified in startup packet");
    fatal(packet(196_608, &[(b"user", b"postgres"), (b"database", b"no\xffdb")]), "RE", "3D000");
}

/// During COPY FROM STDIN a message of an unknown type is PostgreSQL's
/// "unexpected message type" ERROR, then the FATAL for lost synchronization
/// (it was a FATAL "invalid frontend message type" at once).
#[test]
fn unknown_message_during_copy_in() {
    let srv = Server::start_temp(&[]);
    srv.sql_ok("create table t(a int)");
    let mut b = query("copy t from stdin");
    b.extend(msg(b'@', b"xyz"));
    let mut all = startup(&[("user", "postgres")]);
    all.extend(b);
    let v = messages(&exchange(&srv, &all), 0);
    let k = v.iter().position(|m| m.0 == b'G').expect("CopyInResponse");
    assert_eq!(types(&v[k..]), "GEE");
    let e = error(&v[k + 1]);
    assert_eq!((e[&b'S'].as_str(), e[&b'C'].as_str(), e[&b'M'].as_str()), ("ERROR", "08P01", "unexpected message type 0x40 during COPY from stdin"));
    let f = error(&v[k + 2]);
    assert_eq!((f[&b'S'].as_str(), f[&b'M'].as_str()), ("FATAL", "terminating connection because protocol synchronization was lost"));
}

/// A simple Query destroys the unnamed prepared statement and the unnamed
/// portal (the protocol documentation says so and PostgreSQL does); both
/// outlived it. Named ones live on.
#[test]
fn simple_query_destroys_the_unnamed_statement_and_portal() {
    let srv = Server::start_temp(&[]);
    let mut b = parse("", "select 1", &[]);
    b.extend(sync());
    b.extend(query("select 2"));
    b.extend(bind("", "", &[], &[], &[]));
    b.extend(sync());
    let v = session(&srv, &b);
    assert_eq!(types(&v), "1ZTDCZEZ");
    assert_eq!(error(&v[6])[&b'M'], "unnamed prepared statement does not exist");

    let mut b = query("begin");
    b.extend(parse("s", "select 1", &[]));
    b.extend(bind("", "s", &[], &[], &[]));
    b.extend(bind("p", "s", &[], &[], &[]));
    b.extend(sync());
    b.extend(query("select 2"));
    b.extend(execute("p", 0));
    b.extend(sync());
    b.extend(execute("", 0));
    b.extend(sync());
    b.extend(query("rollback"));
    let v = session(&srv, &b);
    assert_eq!(types(&v), "CZ122ZTDCZDCZEZCZ");
    assert_eq!(error(&v[13])[&b'M'], "portal \"\" does not exist");
}

/// A Sync with a body is an error, but still a Sync: PostgreSQL ends the
/// skipping and answers ReadyForQuery after the error (ferrogres kept skipping
/// until a well-formed Sync). A Terminate with a body still terminates
/// (ferrogres answered an error and went on).
#[test]
fn malformed_sync_and_terminate_still_do_their_job() {
    let srv = Server::start_temp(&[]);
    let mut b = parse("", "select nothing_known", &[]);
    b.extend(msg(b'S', b"x"));
    b.extend(query("select 1"));
    let v = session(&srv, &b);
    assert_eq!(types(&v), "EEZTDCZ");
    assert_eq!(error(&v[1])[&b'M'], "invalid message format");
    let mut all = startup(&[("user", "postgres")]);
    all.extend(msg(b'X', b"bye"));
    all.extend(query("select 1"));
    let v = messages(&exchange(&srv, &all), 0);
    assert!(types(&v).ends_with("KZ"), "nothing after Terminate: {}", types(&v));
}

/// Format codes are judged where PostgreSQL judges them: result formats of a
/// portal without a result are accepted (Bind used to refuse three formats
/// for BEGIN), a bad result format code fails the Execute that would use it
/// (not the Bind), and parameter format codes with no parameters are unused.
#[test]
fn format_codes_are_checked_where_they_apply() {
    let srv = Server::start_temp(&[]);
    let mut b = parse("", "select 1", &[]);
    b.extend(bind("", "", &[], &[], &[2]));
    b.extend(describe(b'P', ""));
    b.extend(execute("", 0));
    b.extend(sync());
    let v = session(&srv, &b);
    assert_eq!(types(&v), "12TEZ");
    assert_eq!((error(&v[3])[&b'C'].as_str(), error(&v[3])[&b'M'].as_str()), ("22023", "unsupported format code: 2"));
    let mut b = parse("", "begin", &[]);
    b.extend(bind("", "", &[], &[], &[1, 1, 1]));
    b.extend(execute("", 0));
    b.extend(sync());
    b.extend(query("rollback"));
    assert_eq!(types(&session(&srv, &b)), "12CZCZ");
    let mut b = parse("", "select 1", &[]);
    b.extend(bind("", "", &[7], &[], &[]));
    b.extend(execute("", 0));
    b.extend(sync());
    assert_eq!(types(&session(&srv, &b)), "12DCZ");
}
