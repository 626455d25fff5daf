//! COPY in PostgreSQL's binary format through the raw protocol: the COPY
//! responses say binary, every common type round-trips byte for byte (the
//! bytes COPY TO sends are the bytes COPY FROM took), NULLs, data split in
//! one-byte CopyData messages, a file without trailer, and malformed input
//! answered with PostgreSQL 15's SQLSTATE, message and CONTEXT, nothing of the
//! failed COPY kept and the session going on.

mod common;
use common::server::Server;
use common::*;
use std::io::{Read, Write};
use std::time::Duration;

struct Raw(std::net::TcpStream);

impl Raw {
    fn connect(port: u16) -> Raw {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        s.write_all(&startup(&[("user", "postgres"), ("database", "postgres")])).unwrap();
        let mut r = Raw(s);
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
    /// A simple query's error fields (panics if it succeeds).
    fn error_of(&mut self, sql: &str) -> std::collections::HashMap<u8, String> {
        self.write(&[query(sql)]);
        let v = self.until(b'Z');
        let e = v.iter().find(|m| m.0 == b'E').unwrap_or_else(|| panic!("{sql}: expected an error, got {}", types(&v)));
        fields(&e.1)
    }
    /// Runs `COPY ... FROM STDIN` with `data` split into CopyData messages of
    /// `chunk` bytes; the messages after the CopyInResponse up to ReadyForQuery.
    fn copy_in(&mut self, sql: &str, data: &[u8], chunk: usize) -> Vec<(u8, Vec<u8>)> {
        self.write(&[query(sql)]);
        let g = self.read();
        assert_eq!(g.0, b'G', "{sql}: CopyInResponse expected, got {:?}", fields(&g.1));
        let mut msgs: Vec<Vec<u8>> = data.chunks(chunk.max(1)).map(|c| msg(b'd', c)).collect();
        msgs.push(msg(b'c', &[]));
        self.write(&msgs);
        self.until(b'Z')
    }
    /// The count of rows of `bt`: the session still answers.
    fn count(&mut self) -> String {
        self.write(&[query("SELECT count(*) FROM bt")]);
        let v = self.until(b'Z');
        let d = v.iter().find(|m| m.0 == b'D').expect("a row");
        String::from_utf8_lossy(&d.1[6..]).into_owned()
    }
}

const SIG: &[u8] = b"PGCOPY\n\xff\r\n\0";

fn header() -> Vec<u8> {
    [SIG, &[0u8; 8][..]].concat()
}

fn field(b: &[u8]) -> Vec<u8> {
    [&(b.len() as i32).to_be_bytes()[..], b].concat()
}

const NULL: [u8; 4] = [0xff; 4];

/// A one-dimensional array in the binary format: elements of type `oid`, `None` = NULL.
fn array(oid: u32, elems: &[Option<&[u8]>]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend(1i32.to_be_bytes());
    b.extend((elems.iter().any(|e| e.is_none()) as i32).to_be_bytes());
    b.extend(oid.to_be_bytes());
    b.extend((elems.len() as i32).to_be_bytes());
    b.extend(1i32.to_be_bytes());
    for e in elems {
        match e {
            Some(x) => b.extend(field(x)),
            None => b.extend(NULL),
        }
    }
    b
}

const TABLE: &str = "CREATE TABLE bt (a int4, b text, c varchar(3), d numeric(5,2), e bool, f int8, g float8, \
                     h bytea, i date, j timestamptz, k uuid, l jsonb, m int4[], n text[], o int2, p float4, q interval)";

/// Two rows of every column of `bt`: values in their canonical binary form
/// (what PostgreSQL's send functions produce), then all NULLs.
fn rows() -> Vec<u8> {
    let mut d = Vec::new();
    d.extend(17i16.to_be_bytes());
    d.extend(field(&(-42i32).to_be_bytes()));
    d.extend(field("héllo\ttab\n".as_bytes()));
    d.extend(field(b"abc"));
    // numeric 12.5: ndigits 2, weight 0, sign +, dscale 1, base-10000 digits 12, 5000.
    d.extend(field(&[0, 2, 0, 0, 0, 0, 0, 1, 0, 12, 0x13, 0x88]));
    d.extend(field(&[1]));
    d.extend(field(&i64::MIN.to_be_bytes()));
    d.extend(field(&(-0.5f64).to_bits().to_be_bytes()));
    d.extend(field(&[0, 1, 0xfe, 0xff]));
    d.extend(field(&(-1i32).to_be_bytes())); // 1999-12-31
    d.extend(field(&1_000_000i64.to_be_bytes())); // 2000-01-01 00:00:01+00
    d.extend(field(&[0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11]));
    d.extend(field(b"\x01{\"k\": [1, null]}"));
    d.extend(field(&array(23, &[Some(&1i32.to_be_bytes()), None, Some(&3i32.to_be_bytes())])));
    d.extend(field(&array(25, &[Some(b"x"), Some(b"")])));
    d.extend(field(&(-2i16).to_be_bytes()));
    d.extend(field(&1.25f32.to_bits().to_be_bytes()));
    d.extend(field(&[&5_000_000i64.to_be_bytes()[..], &3i32.to_be_bytes(), &2i32.to_be_bytes()].concat()));
    d.extend(17i16.to_be_bytes());
    for _ in 0..17 {
        d.extend(NULL);
    }
    d
}

#[test]
fn binary_copy_round_trips_and_refuses_malformed_input() {
    let srv = Server::start_temp(&[]);
    let mut c = Raw::connect(srv.port);
    c.write(&[query(TABLE)]);
    assert_eq!(types(&c.until(b'Z')), "CZ");

    // COPY FROM: the CopyInResponse says binary for the whole and every column.
    let data = [header(), rows(), (-1i16).to_be_bytes().to_vec()].concat();
    c.write(&[query("COPY bt FROM STDIN (FORMAT binary)")]);
    let g = c.read();
    assert_eq!(g.0, b'G');
    assert_eq!(g.1, [&[1u8, 0, 17][..], &[0, 1].repeat(17)].concat());
    c.write(&[msg(b'd', &data), msg(b'c', &[])]);
    let v = c.until(b'Z');
    assert_eq!(types(&v), "CZ", "{:?}", v.first().map(|m| fields(&m.1)));
    assert_eq!(String::from_utf8_lossy(&v[0].1), "COPY 2\0");

    // The values as text: what was stored.
    c.write(&[query("SELECT a, b, c, d, e, f, g, h, i, j AT TIME ZONE 'UTC', k, l, m, n, o, p, q FROM bt WHERE a IS NOT NULL")]);
    let v = c.until(b'Z');
    let row = &v.iter().find(|m| m.0 == b'D').expect("a row").1;
    let text = String::from_utf8_lossy(row);
    for want in ["-42", "héllo\ttab\n", "abc", "12.50", "-9223372036854775808", "-0.5", "\\x0001feff", "1999-12-31", "2000-01-01 00:00:01",
        "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", "{\"k\": [1, null]}", "{1,NULL,3}", "{x,\"\"}", "-2", "1.25", "3 days 00:00:05"] {
        assert!(text.contains(want), "{want:?} missing from the stored row {text:?}");
    }

    // COPY TO: a CopyOutResponse in binary, then the same bytes, except the
    // numeric, now at its column's scale 2 (12.50: dscale 2).
    c.write(&[query("COPY bt TO STDOUT (FORMAT binary)")]);
    let v = c.until(b'Z');
    assert_eq!(v[0].0, b'H');
    assert_eq!(v[0].1, [&[1u8, 0, 17][..], &[0, 1].repeat(17)].concat());
    let out: Vec<u8> = v.iter().filter(|m| m.0 == b'd').flat_map(|m| m.1.clone()).collect();
    let (sent, scaled): (&[u8], &[u8]) = (&[0, 2, 0, 0, 0, 0, 0, 1, 0, 12, 0x13, 0x88], &[0, 2, 0, 0, 0, 0, 0, 2, 0, 12, 0x13, 0x88]);
    let at = data.windows(sent.len()).position(|w| w == sent).expect("the numeric's bytes");
    let want = [&data[..at], scaled, &data[at + sent.len()..]].concat();
    assert_eq!(out, want);
    assert_eq!(String::from_utf8_lossy(&v[v.len() - 2].1), "COPY 2\0");

    // A query's rows, and a column list.
    c.write(&[query("COPY (SELECT 1::int2, NULL::text, 'x'::varchar) TO STDOUT (FORMAT binary)")]);
    let v = c.until(b'Z');
    let out: Vec<u8> = v.iter().filter(|m| m.0 == b'd').flat_map(|m| m.1.clone()).collect();
    assert_eq!(out, [header(), vec![0, 3, 0, 0, 0, 2, 0, 1, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1, b'x', 0xff, 0xff]].concat());

    // One byte per CopyData message; no trailer (the data may just end).
    let mut two = header();
    two.extend(2i16.to_be_bytes());
    two.extend(field(&7i32.to_be_bytes()));
    two.extend(field(b"seven"));
    let v = c.copy_in("COPY bt (a, b) FROM STDIN (FORMAT binary)", &two, 1);
    assert_eq!(types(&v), "CZ", "{:?}", v.first().map(|m| fields(&m.1)));
    assert_eq!(c.count(), "3");
    // A header extension is skipped; flag bits 0-15 are ignored.
    let mut ext = [SIG, &1i32.to_be_bytes(), &3i32.to_be_bytes(), b"abc"].concat();
    ext.extend(2i16.to_be_bytes());
    ext.extend(field(&8i32.to_be_bytes()));
    ext.extend(NULL);
    ext.extend((-1i16).to_be_bytes());
    let v = c.copy_in("COPY bt (a, b) FROM STDIN (FORMAT binary)", &ext, 5);
    assert_eq!(types(&v), "CZ", "{:?}", v.first().map(|m| fields(&m.1)));
    assert_eq!(c.count(), "4");

    // Malformed input: PostgreSQL 15's SQLSTATE, message and CONTEXT; nothing
    // of the COPY kept, the session goes on.
    let row1 = |a: &[u8]| [&2i16.to_be_bytes()[..], a, &field(b"x")].concat();
    let int = field(&1i32.to_be_bytes());
    let cases: Vec<(&str, Vec<u8>, &str, &str, &str)> = vec![
        ("bad signature", b"PGCOPX\n\xff\r\n\0\0\0\0\0\0\0\0\0".to_vec(), "22P04", "COPY file signature not recognized", ""),
        ("empty", Vec::new(), "22P04", "COPY file signature not recognized", ""),
        ("no flags", [SIG, &[0, 0][..]].concat(), "22P04", "invalid COPY file header (missing flags)", ""),
        ("with oids", [SIG, &(1i32 << 16).to_be_bytes(), &[0; 4]].concat(), "22P04", "invalid COPY file header (WITH OIDS)", ""),
        ("critical flag", [SIG, &(1i32 << 17).to_be_bytes(), &[0; 4]].concat(), "22P04", "unrecognized critical flags in COPY file header", ""),
        ("no extension length", [SIG, &[0; 4][..]].concat(), "22P04", "invalid COPY file header (missing length)", ""),
        ("short extension", [SIG, &[0; 4], &10i32.to_be_bytes(), b"abc"].concat(), "22P04", "invalid COPY file header (wrong length)", ""),
        ("field count", [header(), row1(&int), 3i16.to_be_bytes().to_vec()].concat(), "22P04", "row field count is 3, expected 2", "COPY bt, line 2"),
        ("zero fields", [header(), 0i16.to_be_bytes().to_vec()].concat(), "22P04", "row field count is 0, expected 2", "COPY bt, line 1"),
        ("after trailer", [header(), row1(&int), (-1i16).to_be_bytes().to_vec(), b"x".to_vec()].concat(), "22P04", "received copy data after EOF marker", "COPY bt, line 2"),
        ("negative size", [header(), 2i16.to_be_bytes().to_vec(), (-5i32).to_be_bytes().to_vec()].concat(), "22P04", "invalid field size", "COPY bt, line 1, column a"),
        // A field of 1 GB is refused before any of it is read (PostgreSQL 15's
        // enlargeStringInfo error, seen for the same bytes).
        ("1 GB field", [header(), 2i16.to_be_bytes().to_vec(), 0x3fff_ffffi32.to_be_bytes().to_vec()].concat(), "54000", "out of memory", "COPY bt, line 1, column a"),
        ("field cut", [header(), 2i16.to_be_bytes().to_vec(), 4i32.to_be_bytes().to_vec(), vec![0, 0]].concat(), "22P04", "unexpected EOF in COPY data", "COPY bt, line 1, column a"),
        ("length cut", [header(), 2i16.to_be_bytes().to_vec(), vec![0]].concat(), "22P04", "unexpected EOF in COPY data", "COPY bt, line 1, column a"),
        ("int4 of 5 bytes", [header(), row1(&int), row1(&field(&[0; 5]))].concat(), "22P03", "incorrect binary data format", "COPY bt, line 2, column a"),
        ("int4 of 2 bytes", [header(), row1(&field(&[0; 2]))].concat(), "08P01", "insufficient data left in message", "COPY bt, line 1, column a"),
        ("bad utf-8", [header(), 2i16.to_be_bytes().to_vec(), int.clone(), field(b"\xff")].concat(), "22021", "invalid byte sequence for encoding \"UTF8\": 0xff", "COPY bt, line 1, column b"),
    ];
    for (what, data, code, message, context) in cases {
        for chunk in [data.len().max(1), 3] {
            let v = c.copy_in("COPY bt (a, b) FROM STDIN (FORMAT binary)", &data, chunk);
            let e = v.iter().find(|m| m.0 == b'E').unwrap_or_else(|| panic!("{what}: no error, got {}", types(&v)));
            let f = fields(&e.1);
            assert_eq!((f[&b'C'].as_str(), f[&b'M'].as_str()), (code, message), "{what} (chunks of {chunk})");
            assert_eq!(f.get(&b'W').map_or("", String::as_str), context, "{what}: CONTEXT");
            assert_eq!(c.count(), "4", "{what}: nothing kept");
        }
    }
    // The column's typmod applies, as PostgreSQL's receive functions apply it.
    let v = c.copy_in("COPY bt (c) FROM STDIN (FORMAT binary)", &[header(), 1i16.to_be_bytes().to_vec(), field(b"abcd")].concat(), 64);
    let f = fields(&v[0].1);
    assert_eq!((f[&b'C'].as_str(), f[&b'M'].as_str(), f[&b'W'].as_str()), ("22001", "value too long for type character varying(3)", "COPY bt, line 1, column c"));
    let big = [0, 2, 0, 1, 0, 0, 0, 0, 0, 12, 0x13, 0x88]; // 120005000: too big for numeric(5,2)
    let v = c.copy_in("COPY bt (d) FROM STDIN (FORMAT binary)", &[header(), 1i16.to_be_bytes().to_vec(), field(&big)].concat(), 64);
    let f = fields(&v[0].1);
    assert_eq!((f[&b'C'].as_str(), f[&b'M'].as_str()), ("22003", "numeric field overflow"));
    assert_eq!(c.count(), "4");

    // Options that binary COPY refuses.
    for (sql, code, message) in [
        ("COPY bt TO STDOUT (FORMAT binary, HEADER)", "0A000", "cannot specify HEADER in BINARY mode"),
        ("COPY bt FROM STDIN (FORMAT binary, HEADER true)", "0A000", "cannot specify HEADER in BINARY mode"),
        ("COPY bt TO STDOUT (FORMAT binary, DELIMITER ',')", "42601", "cannot specify DELIMITER in BINARY mode"),
        ("COPY bt TO STDOUT (FORMAT binary, NULL 'x')", "42601", "cannot specify NULL in BINARY mode"),
        ("COPY bt TO STDOUT (FORMAT binary, QUOTE 'x')", "0A000", "COPY quote available only in CSV mode"),
        ("COPY bt TO STDOUT (FORMAT binary, FORCE_QUOTE *)", "0A000", "COPY force quote available only in CSV mode"),
    ] {
        let f = c.error_of(sql);
        assert_eq!((f[&b'C'].as_str(), f[&b'M'].as_str()), (code, message), "{sql}");
    }
    assert_eq!(c.count(), "4");
}

/// COPY TO of a table of many pages in binary (read by a page-at-a-time
/// scan): every row comes out, one CopyData each, then the trailer.
#[test]
fn binary_copy_out_of_a_large_table() {
    let srv = Server::start_temp(&[]);
    let mut c = Raw::connect(srv.port);
    c.write(&[query("CREATE TABLE big (a int4, b text)")]);
    assert_eq!(types(&c.until(b'Z')), "CZ");
    c.write(&[query("INSERT INTO big SELECT g, repeat('x', 100) FROM generate_series(1, 50000) g")]);
    assert_eq!(types(&c.until(b'Z')), "CZ");
    c.write(&[query("COPY big TO STDOUT (FORMAT binary)")]);
    let mut data = Vec::new();
    let mut messages = 0;
    loop {
        let (t, b) = c.read();
        match t {
            b'd' => {
                data.extend_from_slice(&b);
                messages += 1;
            }
            b'Z' => break,
            b'E' => panic!("{:?}", fields(&b)),
            _ => {}
        }
    }
    assert!(messages >= 50000, "{messages} CopyData messages");
    assert_eq!(&data[..19], &header()[..]);
    let (mut pos, mut rows, mut sum) = (19, 0u64, 0i64);
    loop {
        let count = i16::from_be_bytes([data[pos], data[pos + 1]]);
        pos += 2;
        if count == -1 {
            break;
        }
        assert_eq!(count, 2);
        assert_eq!(&data[pos..pos + 4], &[0, 0, 0, 4]);
        sum += i32::from_be_bytes(data[pos + 4..pos + 8].try_into().unwrap()) as i64;
        assert_eq!(&data[pos + 8..pos + 12], &[0, 0, 0, 100]);
        pos += 112;
        rows += 1;
    }
    assert_eq!(pos, data.len(), "nothing after the trailer");
    assert_eq!((rows, sum), (50000, 50000 * 50001 / 2));
}
