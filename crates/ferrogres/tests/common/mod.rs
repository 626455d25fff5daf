//! Frontend message builders for the raw-protocol tests (PostgreSQL protocol 3.0),
//! shared by the test files of this crate.
#![allow(dead_code)]

pub mod client;
pub mod session_client;
pub mod pg15;
pub mod server;

/// A protocol 3.0 StartupMessage with the given parameters.
pub fn startup(params: &[(&str, &str)]) -> Vec<u8> {
    let mut b = 196608i32.to_be_bytes().to_vec();
    for (k, v) in params {
        b.extend(cstr(k));
        b.extend(cstr(v));
    }
    b.push(0);
    let mut p = ((b.len() + 4) as i32).to_be_bytes().to_vec();
    p.extend(b);
    p
}

/// One backend message: its type byte and body.
pub fn read_message(s: &mut impl std::io::Read) -> (u8, Vec<u8>) {
    let mut h = [0u8; 5];
    s.read_exact(&mut h).expect("a reply from the server");
    let len = i32::from_be_bytes(h[1..5].try_into().unwrap()) as usize;
    let mut b = vec![0; len - 4];
    s.read_exact(&mut b).unwrap();
    (h[0], b)
}

pub fn msg(t: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![t];
    v.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    v.extend_from_slice(body);
    v
}
pub fn cstr(s: &str) -> Vec<u8> {
    let mut v = s.as_bytes().to_vec();
    v.push(0);
    v
}
pub fn parse(name: &str, q: &str, types: &[u32]) -> Vec<u8> {
    let mut b = cstr(name);
    b.extend(cstr(q));
    b.extend((types.len() as i16).to_be_bytes());
    for t in types {
        b.extend(t.to_be_bytes());
    }
    msg(b'P', &b)
}
pub fn bind(portal: &str, stmt: &str, formats: &[i16], params: &[Option<&[u8]>], result_formats: &[i16]) -> Vec<u8> {
    let mut b = cstr(portal);
    b.extend(cstr(stmt));
    b.extend((formats.len() as i16).to_be_bytes());
    for f in formats {
        b.extend(f.to_be_bytes());
    }
    b.extend((params.len() as i16).to_be_bytes());
    for p in params {
        match p {
            None => b.extend((-1i32).to_be_bytes()),
            Some(v) => {
                b.extend((v.len() as i32).to_be_bytes());
                b.extend_from_slice(v);
            }
        }
    }
    b.extend((result_formats.len() as i16).to_be_bytes());
    for f in result_formats {
        b.extend(f.to_be_bytes());
    }
    msg(b'B', &b)
}
pub fn describe(kind: u8, name: &str) -> Vec<u8> {
    let mut b = vec![kind];
    b.extend(cstr(name));
    msg(b'D', &b)
}
pub fn execute(portal: &str, max_rows: i32) -> Vec<u8> {
    let mut b = cstr(portal);
    b.extend(max_rows.to_be_bytes());
    msg(b'E', &b)
}
pub fn sync() -> Vec<u8> {
    msg(b'S', &[])
}


/// A simple Query message.
pub fn query(q: &str) -> Vec<u8> {
    msg(b'Q', &cstr(q))
}

/// The message type bytes of a list of backend messages, as a string ("1tT2...").
pub fn types(v: &[(u8, Vec<u8>)]) -> String {
    v.iter().map(|(t, _)| *t as char).collect()
}

/// Fields of an ErrorResponse/NoticeResponse body, by field code.
pub fn fields(body: &[u8]) -> std::collections::HashMap<u8, String> {
    let mut m = std::collections::HashMap::new();
    let mut i = 0;
    while i < body.len() && body[i] != 0 {
        let code = body[i];
        let end = body[i + 1..].iter().position(|&b| b == 0).unwrap() + i + 1;
        m.insert(code, String::from_utf8_lossy(&body[i + 1..end]).into_owned());
        i = end + 1;
    }
    m
}
