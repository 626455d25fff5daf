//! COPY end to end: the COPY sub-protocol through a raw client (CopyFail, a
//! connection broken in the middle of COPY, COPY in the extended protocol),
//! server-side COPY to and from files, and pgbench's initialization (`pgbench -i`)
//! run by the real pgbench binary.

mod common;
use common::server::Server;
use common::*;
use std::io::{Read, Write};
use std::process::Command;
use std::time::Duration;

/// pgbench's initialization steps the pgbench test runs: d(rop), t(ables),
/// g (client-side generate: COPY) / G (server-side: INSERT ... SELECT
/// generate_series), v(acuum), p(rimary keys).
const PGBENCH_INIT_STEPS: [&str; 3] = ["dtgvp", "dtGvp", "dtGvpf"];

struct Raw(std::net::TcpStream);

impl Raw {
    fn connect(port: u16) -> Raw {
        let s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut r = Raw(s);
        let mut body = 196608i32.to_be_bytes().to_vec();
        for kv in ["user", "postgres", "database", "postgres"] {
            body.extend(cstr(kv));
        }
        body.push(0);
        let mut p = ((body.len() + 4) as i32).to_be_bytes().to_vec();
        p.extend(body);
        r.0.write_all(&p).unwrap();
        r.until(b'Z');
        r
    }
    fn read(&mut self) -> (u8, Vec<u8>) {
        let mut h = [0u8; 5];
        self.0.read_exact(&mut h).unwrap();
        let len = i32::from_be_bytes(h[1..5].try_into().unwrap()) as usize;
        let mut b = vec![0; len - 4];
        self.0.read_exact(&mut b).unwrap();
        (h[0], b)
    }
    /// Messages up to and including the first of type `t`.
    fn until(&mut self, t: u8) -> Vec<(u8, Vec<u8>)> {
        let mut v = Vec::new();
        loop {
            let m = self.read();
            let done = m.0 == t;
            v.push(m);
            if done {
                return v;
            }
        }
    }
    fn write(&mut self, parts: &[Vec<u8>]) {
        self.0.write_all(&parts.concat()).unwrap();
    }
}

fn copy_data(d: &[u8]) -> Vec<u8> {
    msg(b'd', d)
}
fn copy_done() -> Vec<u8> {
    msg(b'c', &[])
}
fn copy_fail(m: &str) -> Vec<u8> {
    msg(b'f', &cstr(m))
}

fn error_field(b: &[u8], code: u8) -> String {
    let mut i = 0;
    while i < b.len() && b[i] != 0 {
        let end = b[i + 1..].iter().position(|&c| c == 0).unwrap() + i + 1;
        if b[i] == code {
            return String::from_utf8_lossy(&b[i + 1..end]).into_owned();
        }
        i = end + 1;
    }
    String::new()
}

fn tag(b: &[u8]) -> String {
    String::from_utf8_lossy(&b[..b.len() - 1]).into_owned()
}

#[test]
fn copy_fail_and_broken_connection_insert_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let (_, err) = srv.sql("CREATE TABLE t (a int, b text)");
    assert_eq!(err, "");

    // CopyFail from the client: 57014 with the client's message, nothing inserted.
    let mut c = Raw::connect(srv.port);
    c.write(&[query("COPY t FROM STDIN")]);
    let m = c.read();
    assert_eq!(m.0, b'G', "CopyInResponse expected");
    assert_eq!(&m.1[..3], &[0, 0, 2], "text format, two columns");
    c.write(&[copy_data(b"1\tone\n2\ttwo\n"), copy_fail("client gave up")]);
    let v = c.until(b'Z');
    assert_eq!(types(&v), "EZ");
    assert_eq!(error_field(&v[0].1, b'C'), "57014");
    assert_eq!(error_field(&v[0].1, b'M'), "COPY from stdin failed: client gave up");
    assert_eq!(error_field(&v[0].1, b'W'), "COPY t, line 3");
    assert_eq!(v[1].1, b"I");

    // The session goes on; a good COPY with the old `\.` end marker, then CopyDone.
    c.write(&[query("COPY t FROM STDIN")]);
    assert_eq!(c.read().0, b'G');
    c.write(&[copy_data(b"1\tone\n2\t"), copy_data(b"two\n\\.\n"), copy_done()]);
    let v = c.until(b'Z');
    assert_eq!(types(&v), "CZ");
    assert_eq!(tag(&v[0].1), "COPY 2");

    // A data error: the CONTEXT travels in the W field.
    c.write(&[query("COPY t FROM STDIN")]);
    assert_eq!(c.read().0, b'G');
    c.write(&[copy_data(b"3\tthree\nx\tbad\n"), copy_done()]);
    let v = c.until(b'Z');
    assert_eq!(error_field(&v[0].1, b'C'), "22P02");
    assert_eq!(error_field(&v[0].1, b'W'), "COPY t, line 2, column a: \"x\"");

    // COPY TO STDOUT: CopyOutResponse, one CopyData per row, CopyDone, COPY n.
    c.write(&[query("COPY t TO STDOUT WITH (FORMAT csv)")]);
    let v = c.until(b'Z');
    assert_eq!(types(&v), "HddcCZ");
    assert_eq!(v[1].1, b"1,one\n");
    assert_eq!(tag(&v[4].1), "COPY 2");

    // The connection breaks in the middle of a COPY: nothing of it stays.
    let mut c2 = Raw::connect(srv.port);
    c2.write(&[query("COPY t FROM STDIN")]);
    assert_eq!(c2.read().0, b'G');
    c2.write(&[copy_data(b"10\tten\n11\televen\n")]);
    drop(c2);
    std::thread::sleep(Duration::from_millis(300));
    let (out, err) = srv.sql("SELECT count(*), sum(a) FROM t");
    assert_eq!((out.as_str(), err.as_str()), ("2|3\n", ""));

    // COPY inside the extended protocol (Sync during COPY IN is ignored).
    c.write(&[parse("", "COPY t FROM STDIN WITH (FORMAT csv)", &[]), bind("", "", &[], &[], &[]), describe(b'P', ""), execute("", 0), sync()]);
    let v = c.until(b'G');
    assert_eq!(types(&v), "12nG");
    c.write(&[copy_data(b"20,\"twenty, quoted\"\n"), copy_done(), sync()]);
    let v = c.until(b'Z');
    assert_eq!(types(&v), "CZ");
    assert_eq!(tag(&v[0].1), "COPY 1");
    c.write(&[parse("", "COPY (SELECT b FROM t WHERE a = 20) TO STDOUT", &[]), bind("", "", &[], &[], &[]), execute("", 0), sync()]);
    let v = c.until(b'Z');
    assert_eq!(types(&v), "12HdcCZ");
    assert_eq!(v[3].1, b"twenty, quoted\n");
    let (out, _) = srv.sql("SELECT count(*) FROM t");
    assert_eq!(out, "3\n");
}

#[test]
fn server_side_copy_to_and_from_files() {
    let srv = Server::start_temp(&[]);
    // Files the server itself reads and writes: in a directory its account owns.
    let dir = srv.exchange_dir();
    let input = dir.path().join("in.data");
    // Enough rows to span several read chunks.
    let mut data = String::new();
    for i in 1..=20000 {
        data.push_str(&format!("{i}\tname {i}\t{}\n", if i % 2 == 0 { "\\N" } else { "x\\ty" }));
    }
    std::fs::write(&input, &data).unwrap();
    let (_, err) = srv.sql("CREATE TABLE f (id int NOT NULL, name text, note text)");
    assert_eq!(err, "");
    let (out, err) = srv.sql(&format!("COPY f FROM '{}'", input.display()));
    assert_eq!((out.as_str(), err.as_str()), ("COPY 20000\n", ""));
    let (out, _) = srv.sql("SELECT count(*), sum(id), count(note) FROM f");
    assert_eq!(out, "20000|200010000|10000\n");
    let (out, _) = srv.sql("SELECT note FROM f WHERE id = 1");
    assert_eq!(out, "x\ty\n");

    // Out and back in: the same bytes.
    let output = dir.path().join("out.data");
    let (out, err) = srv.sql(&format!("COPY f TO '{}'", output.display()));
    assert_eq!((out.as_str(), err.as_str()), ("COPY 20000\n", ""));
    assert_eq!(std::fs::read_to_string(&output).unwrap(), data);
    let csv = dir.path().join("out.csv");
    let (_, err) = srv.sql(&format!("COPY (SELECT id, note FROM f WHERE id <= 2) TO '{}' WITH (FORMAT csv, HEADER)", csv.display()));
    assert_eq!(err, "");
    assert_eq!(std::fs::read_to_string(&csv).unwrap(), "id,note\n1,x\ty\n2,\n");

    // Errors.
    let (_, err) = srv.sql("COPY f TO 'relative.data'");
    assert!(err.contains("ERROR:  relative path not allowed for COPY to file"), "{err}");
    let (_, err) = srv.sql(&format!("COPY f FROM '{}'", dir.path().join("missing").display()));
    assert!(err.contains("could not open file") && err.contains("for reading: No such file or directory"), "{err}");
    let (_, err) = srv.sql("COPY f FROM PROGRAM 'cat /etc/passwd'");
    assert!(err.contains("feature not supported"), "{err}");
    let (out, _) = srv.sql("SELECT count(*) FROM f");
    assert_eq!(out, "20000\n");
}

/// `pgbench -i` as pgbench runs it, then the counts through psql.
#[test]
fn pgbench_initializes_against_ferrogres() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    for steps in PGBENCH_INIT_STEPS {
        let out = Command::new("pgbench")
            .args(["-i", "-s", "1", "-I", steps, "-h"])
            .arg(&srv.dir)
            .args(["-p", &srv.port.to_string(), "-U", "postgres", "postgres"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "pgbench -i -I {steps} failed: {stderr}");
        assert!(stderr.contains("done in"), "{stderr}");
        for (table, balance, want) in [
            ("pgbench_accounts", "abalance", "100000|0"),
            ("pgbench_branches", "bbalance", "1|0"),
            ("pgbench_tellers", "tbalance", "10|0"),
            ("pgbench_history", "delta", "0|"),
        ] {
            let (got, err) = srv.sql(&format!("SELECT count(*), sum({balance}) FROM {table}"));
            assert_eq!((got.as_str(), err.as_str()), (format!("{want}\n").as_str(), ""), "{table} after -I {steps}");
        }
        // Step f: pgbench's five foreign keys.
        let fks = if steps.contains('f') { "5\n" } else { "0\n" };
        assert_eq!(srv.sql("SELECT count(*) FROM pg_constraint WHERE contype = 'f'"), (fks.to_string(), String::new()), "-I {steps}");
    }
}
