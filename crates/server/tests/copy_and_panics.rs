//! The wire layer with a test Backend (in-process): the COPY sub-protocols driven
//! by a session, notices, and a panicking session that must not take the server
//! (or any other connection) down.

use bytes::Bytes;
use ferrogres_server::handler::{
    Backend, CopyInEvent, ExecuteOutcome, FieldInfo, Interrupts, ResultSink, Session, StartupInfo,
    StatementDescription, TransactionStatus,
};
use ferrogres_server::{PgError, Server, ServerConfig, Severity};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

struct TestBackend;

impl Backend for TestBackend {
    fn new_session(&self, startup: &StartupInfo, _i: Arc<Interrupts>) -> Result<Box<dyn Session>, PgError> {
        if startup.database == "nosuchdb" {
            return Err(PgError::fatal(b"3D000", "database \"nosuchdb\" does not exist"));
        }
        Ok(Box::new(TestSession { stmts: HashMap::new() }))
    }
}

struct TestSession {
    stmts: HashMap<String, String>,
}

impl TestSession {
    fn copy_in(&mut self, sink: &mut dyn ResultSink) -> Result<String, PgError> {
        sink.copy_in_start(0, &[0])?;
        let mut data = Vec::new();
        loop {
            match sink.copy_in_read()? {
                CopyInEvent::Data(b) => data.extend_from_slice(&b),
                CopyInEvent::Done => break,
                CopyInEvent::Fail(m) => {
                    return Err(PgError::error(b"57014", format!("COPY from stdin failed: {m}")))
                }
            }
        }
        Ok(format!("COPY {}", data.iter().filter(|&&b| b == b'\n').count()))
    }

    fn run(&mut self, sql: &str, sink: &mut dyn ResultSink) -> Result<String, PgError> {
        match sql {
            "copy in" => self.copy_in(sink),
            "copy out" => {
                sink.copy_out_start(0, &[0])?;
                sink.copy_data(b"1\n")?;
                sink.copy_data(b"2\n")?;
                sink.copy_done()?;
                Ok("COPY 2".into())
            }
            "notice" => {
                sink.notice(&PgError::new(Severity::Notice, b"00000", "hello from the session"))?;
                Ok("DO".into())
            }
            "panic" => panic!("test session panicked on purpose"),
            _ => Ok("OK".into()),
        }
    }
}

impl Session for TestSession {
    fn reported_parameters(&self) -> Vec<(String, String)> {
        vec![("server_version".into(), "15.18".into())]
    }
    fn take_parameter_changes(&mut self) -> Vec<(String, String)> {
        Vec::new()
    }
    fn transaction_status(&self) -> TransactionStatus {
        TransactionStatus::Idle
    }
    fn execute_simple(&mut self, sql: &str, sink: &mut dyn ResultSink) -> Result<(), PgError> {
        let tag = self.run(sql, sink)?;
        sink.command_complete(&tag)
    }
    fn parse(&mut self, name: &str, sql: &str, _t: &[u32]) -> Result<(), PgError> {
        self.stmts.insert(name.into(), sql.into());
        Ok(())
    }
    fn bind(&mut self, portal: &str, stmt: &str, _pf: &[i16], _p: &[Option<Bytes>], _rf: &[i16]) -> Result<(), PgError> {
        let sql = self.stmts.get(stmt).cloned().unwrap_or_default();
        self.stmts.insert(format!("portal:{portal}"), sql);
        Ok(())
    }
    fn describe_statement(&mut self, _name: &str) -> Result<StatementDescription, PgError> {
        Ok(StatementDescription { param_types: vec![], fields: None })
    }
    fn describe_portal(&mut self, _name: &str) -> Result<Option<std::sync::Arc<[FieldInfo]>>, PgError> {
        Ok(None)
    }
    fn execute(&mut self, portal: &str, _max: u32, sink: &mut dyn ResultSink) -> Result<ExecuteOutcome, PgError> {
        let sql = self.stmts.get(&format!("portal:{portal}")).cloned().unwrap_or_default();
        Ok(ExecuteOutcome::Completed(self.run(&sql, sink)?))
    }
    fn close_statement(&mut self, _n: &str) -> Result<(), PgError> {
        Ok(())
    }
    fn close_portal(&mut self, _n: &str) -> Result<(), PgError> {
        Ok(())
    }
    fn sync(&mut self) -> Result<(), PgError> {
        Ok(())
    }
    fn error_reported(&mut self) {}
    fn terminate(&mut self) {}
}

fn start() -> (u16, ferrogres_server::ShutdownHandle, std::thread::JoinHandle<()>) {
    let config = ServerConfig { listen_addresses: "127.0.0.1".into(), port: 0, socket_dirs: vec![], max_connections: 10, ..Default::default() };
    let server = Server::bind(&config, Arc::new(TestBackend)).unwrap();
    let port = server.local_port().unwrap();
    let h = server.shutdown_handle();
    let t = std::thread::spawn(move || server.run().unwrap());
    (port, h, t)
}

fn msg(t: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![t];
    v.extend_from_slice(&((body.len() + 4) as i32).to_be_bytes());
    v.extend_from_slice(body);
    v
}
fn query(q: &str) -> Vec<u8> {
    msg(b'Q', format!("{q}\0").as_bytes())
}

struct Client(TcpStream);

impl Client {
    fn connect(port: u16, db: &str) -> Client {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut c = Client(s);
        let mut b = 196608i32.to_be_bytes().to_vec();
        b.extend(format!("user\0u\0database\0{db}\0\0").as_bytes());
        let mut p = ((b.len() + 4) as i32).to_be_bytes().to_vec();
        p.extend(b);
        c.0.write_all(&p).unwrap();
        c
    }
    fn read(&mut self) -> Option<(u8, Vec<u8>)> {
        let mut h = [0u8; 5];
        self.0.read_exact(&mut h).ok()?;
        let len = i32::from_be_bytes(h[1..5].try_into().unwrap()) as usize;
        let mut b = vec![0; len - 4];
        self.0.read_exact(&mut b).ok()?;
        Some((h[0], b))
    }
    fn until_ready(&mut self) -> Vec<(u8, Vec<u8>)> {
        let mut v = Vec::new();
        loop {
            let m = self.read().expect("closed before ReadyForQuery");
            let z = m.0 == b'Z';
            v.push(m);
            if z {
                return v;
            }
        }
    }
    fn send(&mut self, b: &[u8]) {
        self.0.write_all(b).unwrap();
    }
}

fn types(v: &[(u8, Vec<u8>)]) -> String {
    v.iter().map(|(t, _)| *t as char).collect()
}
fn has(body: &[u8], s: &str) -> bool {
    body.windows(s.len()).any(|w| w == s.as_bytes())
}

#[test]
fn copy_in_and_out_sub_protocols() {
    let (port, h, t) = start();
    let mut c = Client::connect(port, "db");
    assert_eq!(types(&c.until_ready()), "RSKZ");

    // COPY FROM STDIN: CopyInResponse, then data, then CopyDone -> CommandComplete.
    c.send(&query("copy in"));
    let (g, body) = c.read().unwrap();
    assert_eq!(g, b'G');
    assert_eq!(body, [0, 0, 1, 0, 0]); // text, one column, text
    // Flush and Sync in the middle of COPY are ignored.
    c.send(&[msg(b'd', b"1\n2\n"), msg(b'H', b""), msg(b'S', b""), msg(b'd', b"3\n"), msg(b'c', b"")].concat());
    let v = c.until_ready();
    assert_eq!(types(&v), "CZ");
    assert_eq!(v[0].1, b"COPY 3\0");

    // CopyFail -> the session's 57014 error, the session goes on.
    c.send(&query("copy in"));
    assert_eq!(c.read().unwrap().0, b'G');
    c.send(&msg(b'f', b"client gave up\0"));
    let v = c.until_ready();
    assert_eq!(types(&v), "EZ");
    assert!(has(&v[0].1, "C57014") && has(&v[0].1, "COPY from stdin failed: client gave up"));

    // COPY TO STDOUT: CopyOutResponse, CopyData*, CopyDone, CommandComplete.
    c.send(&query("copy out"));
    let v = c.until_ready();
    assert_eq!(types(&v), "HddcCZ");
    assert_eq!(v[1].1, b"1\n");

    // COPY IN through the extended protocol.
    let mut b = msg(b'P', b"\0copy in\0\0\0");
    b.extend(msg(b'B', b"\0\0\0\0\0\0\0\0"));
    b.extend(msg(b'E', b"\0\0\0\0\0"));
    b.extend(msg(b'S', b""));
    c.send(&b);
    assert_eq!(types(&[c.read().unwrap(), c.read().unwrap(), c.read().unwrap()]), "12G");
    // The Sync above was swallowed by COPY (as in PostgreSQL); like libpq, the
    // client sends another one after CopyDone.
    c.send(&[msg(b'd', b"x\n"), msg(b'c', b""), msg(b'S', b"")].concat());
    let v = c.until_ready();
    assert_eq!(types(&v), "CZ");
    assert_eq!(v[0].1, b"COPY 1\0");

    // A foreign message during COPY IN: 08P01 error, then FATAL, connection closed.
    c.send(&query("copy in"));
    assert_eq!(c.read().unwrap().0, b'G');
    c.send(&query("select 1"));
    let (t1, e1) = c.read().unwrap();
    assert_eq!(t1, b'E');
    assert!(has(&e1, "SERROR") && has(&e1, "C08P01") && has(&e1, "unexpected message type 0x51 during COPY from stdin"));
    let (t2, e2) = c.read().unwrap();
    assert_eq!(t2, b'E');
    assert!(has(&e2, "SFATAL") && has(&e2, "protocol synchronization was lost"));
    assert!(c.read().is_none());

    h.shutdown();
    t.join().unwrap();
}

#[test]
fn notices_backend_errors_and_panics() {
    let (port, h, t) = start();

    let mut c = Client::connect(port, "db");
    c.until_ready();
    c.send(&query("notice"));
    let v = c.until_ready();
    assert_eq!(types(&v), "NCZ");
    assert!(has(&v[0].1, "SNOTICE") && has(&v[0].1, "hello from the session"));

    // new_session failing: AuthenticationOk (it comes first, as in
    // PostgreSQL), then FATAL with the backend's code, then EOF.
    let mut bad = Client::connect(port, "nosuchdb");
    assert_eq!(bad.read().unwrap().0, b'R');
    let (t1, e) = bad.read().unwrap();
    assert_eq!(t1, b'E');
    assert!(has(&e, "SFATAL") && has(&e, "C3D000"));
    assert!(bad.read().is_none());

    // A panicking session ends its own connection with FATAL XX000 ...
    let mut p = Client::connect(port, "db");
    p.until_ready();
    p.send(&query("panic"));
    let (t2, e) = p.read().expect("an ErrorResponse from the panic handler");
    assert_eq!(t2, b'E');
    assert!(has(&e, "SFATAL") && has(&e, "CXX000"), "{}", String::from_utf8_lossy(&e));
    assert!(p.read().is_none());

    // ... and nothing else: the other session and new ones still work.
    c.send(&query("anything"));
    assert_eq!(types(&c.until_ready()), "CZ");
    let mut n = Client::connect(port, "db");
    n.until_ready();

    h.shutdown();
    t.join().unwrap();
}
