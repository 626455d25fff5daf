//! What drivers and ORMs send at connect and in their first introspection
//! queries (issue 22): client_encoding's aliases, the pool-reset commands
//! (asyncpg: `CLOSE ALL; RESET ALL; DISCARD ALL`), to_regtype & co.
//! (psycopg's TypeInfo), three-part column names (SQLAlchemy), read-only
//! transactions (pgx), the error fields drivers expose, LISTEN/NOTIFY between
//! two sessions, pg_range / _pg_expandarray / max_index_keys (asyncpg,
//! pgjdbc). Each against the real server binary over the raw protocol, with
//! PostgreSQL 15's answers (checked on a PostgreSQL 15 server) as expectations.

mod common;
use common::server::Server;
use common::*;
use std::collections::HashMap;
use std::io::Write;
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// Everything one simple query answered, up to ReadyForQuery.
#[derive(Debug, Default)]
struct Answer {
    tags: Vec<String>,
    columns: Vec<String>,
    rows: Vec<Vec<Option<String>>>,
    error: Option<HashMap<u8, String>>,
    notices: Vec<HashMap<u8, String>>,
    /// NotificationResponses: (pid, channel, payload).
    notifications: Vec<(i32, String, String)>,
    status: u8,
}

impl Answer {
    fn code(&self) -> &str {
        self.error.as_ref().map_or("", |e| e[&b'C'].as_str())
    }
    fn message(&self) -> &str {
        self.error.as_ref().map_or("", |e| e[&b'M'].as_str())
    }
    fn one(&self) -> String {
        assert!(self.error.is_none(), "unexpected error {:?}", self.error);
        self.rows[0][0].clone().unwrap_or_default()
    }
    fn ok(self) -> Answer {
        assert!(self.error.is_none(), "unexpected error {:?}", self.error);
        self
    }
}

struct Conn {
    s: TcpStream,
    pid: i32,
    /// ParameterStatus values of the startup.
    params: HashMap<String, String>,
}

fn cstrings(b: &[u8]) -> Vec<String> {
    b.split(|c| *c == 0).map(|s| String::from_utf8_lossy(s).into_owned()).collect()
}

fn notification(b: &[u8]) -> (i32, String, String) {
    let pid = i32::from_be_bytes(b[0..4].try_into().unwrap());
    let s = cstrings(&b[4..]);
    (pid, s[0].clone(), s[1].clone())
}

impl Conn {
    fn connect_with(port: u16, params: &[(&str, &str)]) -> Result<Conn, HashMap<u8, String>> {
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let mut all = vec![("user", "postgres"), ("database", "postgres")];
        all.extend_from_slice(params);
        s.write_all(&startup(&all)).unwrap();
        let mut c = Conn { s, pid: 0, params: HashMap::new() };
        loop {
            let (t, b) = read_message(&mut c.s);
            match t {
                b'K' => c.pid = i32::from_be_bytes(b[0..4].try_into().unwrap()),
                b'S' => {
                    let kv = cstrings(&b);
                    c.params.insert(kv[0].clone(), kv[1].clone());
                }
                b'E' => return Err(fields(&b)),
                b'Z' => return Ok(c),
                _ => {}
            }
        }
    }

    fn connect(port: u16) -> Conn {
        Conn::connect_with(port, &[]).unwrap_or_else(|e| panic!("startup failed: {e:?}"))
    }

    fn answer(&mut self) -> Answer {
        let mut a = Answer::default();
        loop {
            let (t, b) = read_message(&mut self.s);
            match t {
                b'T' => {
                    let n = i16::from_be_bytes([b[0], b[1]]) as usize;
                    let mut pos = 2;
                    for _ in 0..n {
                        let end = pos + b[pos..].iter().position(|c| *c == 0).unwrap();
                        a.columns.push(String::from_utf8_lossy(&b[pos..end]).into_owned());
                        pos = end + 1 + 18;
                    }
                }
                b'D' => {
                    let n = i16::from_be_bytes([b[0], b[1]]) as usize;
                    let mut pos = 2;
                    let mut row = Vec::new();
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
                    a.rows.push(row);
                }
                b'C' => a.tags.push(cstrings(&b)[0].clone()),
                b'E' => a.error = Some(fields(&b)),
                b'N' => a.notices.push(fields(&b)),
                b'A' => a.notifications.push(notification(&b)),
                b'Z' => {
                    a.status = b[0];
                    return a;
                }
                _ => {}
            }
        }
    }

    fn q(&mut self, sql: &str) -> Answer {
        self.s.write_all(&query(sql)).unwrap();
        self.answer()
    }

    /// Parse/Bind (text parameters)/Execute/Sync.
    fn extended(&mut self, sql: &str, params: &[&str]) -> Answer {
        let vals: Vec<Option<&[u8]>> = params.iter().map(|p| Some(p.as_bytes())).collect();
        let bytes = [parse("", sql, &[]), bind("", "", &[], &vals, &[]), describe(b'P', ""), execute("", 0), sync()].concat();
        self.s.write_all(&bytes).unwrap();
        self.answer()
    }

    /// Messages that arrive within `wait` without our asking (NotificationResponses).
    fn unsolicited(&mut self, wait: Duration) -> Vec<(i32, String, String)> {
        let mut out = Vec::new();
        self.s.set_read_timeout(Some(wait)).unwrap();
        let deadline = Instant::now() + wait;
        while Instant::now() < deadline {
            let mut t = [0u8; 1];
            match std::io::Read::read(&mut self.s, &mut t) {
                Ok(1) => {
                    let mut len = [0u8; 4];
                    std::io::Read::read_exact(&mut self.s, &mut len).unwrap();
                    let mut body = vec![0u8; i32::from_be_bytes(len) as usize - 4];
                    std::io::Read::read_exact(&mut self.s, &mut body).unwrap();
                    assert_eq!(t[0], b'A', "only NotificationResponses arrive unasked");
                    out.push(notification(&body));
                }
                _ => break,
            }
        }
        self.s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        out
    }
}

#[test]
fn client_encoding_takes_utf8_aliases_at_startup_and_in_set() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    // asyncpg's startup packet: quoted, lower case, with a dash.
    for v in ["'utf-8'", "UTF8", "unicode", "Utf_8"] {
        let c = Conn::connect_with(srv.port, &[("client_encoding", v)]).unwrap_or_else(|e| panic!("{v}: {e:?}"));
        assert_eq!(c.params["client_encoding"], "UTF8", "{v}");
    }
    let mut c = Conn::connect(srv.port);
    c.q("SET client_encoding = 'unicode'").ok();
    assert_eq!(c.q("SHOW client_encoding").one(), "UTF8");
    c.q("SET client_encoding TO 'sql-ascii'").ok();
    assert_eq!(c.q("SHOW client_encoding").one(), "SQL_ASCII");
    let a = c.q("SET client_encoding = 'foo'");
    assert_eq!((a.code(), a.message()), ("22023", "invalid value for parameter \"client_encoding\": \"foo\""));
    // Known encodings this server does not convert: PostgreSQL's answer for an
    // unsupported conversion (PostgreSQL itself converts LATIN1; we do not yet).
    let a = c.q("SET client_encoding = 'MULE_INTERNAL'");
    assert_eq!((a.code(), a.message()), ("0A000", "invalid value for parameter \"client_encoding\": \"MULE_INTERNAL\""));
    assert_eq!(a.error.as_ref().unwrap()[&b'D'], "Conversion between MULE_INTERNAL and UTF8 is not supported.");
    let e = Conn::connect_with(srv.port, &[("client_encoding", "LATIN1")]).err().expect("LATIN1 is refused at startup");
    assert_eq!(e[&b'C'], "0A000");
    assert_eq!(c.q("SELECT 1").one(), "1", "the session goes on");
}

#[test]
fn pool_reset_commands_discard_reset_close_deallocate() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let mut c = Conn::connect(srv.port);
    // asyncpg's pool reset, in its order.
    c.q("SET work_mem = '8MB'").ok();
    c.q("SET application_name = 'pool'").ok();
    c.q("PREPARE p AS SELECT 1").ok();
    c.q("CREATE TEMP TABLE tmp (a int)").ok();
    c.q("CREATE SEQUENCE s").ok();
    assert_eq!(c.q("SELECT nextval('s')").one(), "1");
    assert_eq!(c.q("SELECT pg_advisory_lock(42)").one(), "");
    let a = c.q("CLOSE ALL").ok();
    assert_eq!(a.tags, ["CLOSE CURSOR ALL"]);
    let a = c.q("RESET ALL").ok();
    assert_eq!(a.tags, ["RESET"]);
    assert_eq!(c.q("SHOW work_mem").one(), "4MB");
    assert_eq!(c.q("SHOW application_name").one(), "");
    c.q("SET work_mem = '8MB'").ok();
    let a = c.q("DISCARD ALL").ok();
    assert_eq!(a.tags, ["DISCARD ALL"]);
    assert_eq!(c.q("SHOW work_mem").one(), "4MB");
    let a = c.q("EXECUTE p");
    assert_eq!((a.code(), a.message()), ("26000", "prepared statement \"p\" does not exist"));
    let a = c.q("SELECT * FROM tmp");
    assert_eq!((a.code(), a.message()), ("42P01", "relation \"tmp\" does not exist"));
    let a = c.q("SELECT currval('s')");
    assert_eq!((a.code(), a.message()), ("55000", "currval of sequence \"s\" is not yet defined in this session"));
    assert_eq!(c.q("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'").one(), "0");
    // Each part alone.
    assert_eq!(c.q("DISCARD PLANS").ok().tags, ["DISCARD PLANS"]);
    assert_eq!(c.q("DISCARD SEQUENCES").ok().tags, ["DISCARD SEQUENCES"]);
    c.q("CREATE TEMP TABLE tmp2 (a int)").ok();
    assert_eq!(c.q("BEGIN; DISCARD TEMP; COMMIT").ok().tags, ["BEGIN", "DISCARD TEMP", "COMMIT"]);
    assert_eq!(c.q("SELECT * FROM tmp2").code(), "42P01");
    c.q("CREATE TEMP TABLE tmp3 (a int)").ok();
    c.q("INSERT INTO tmp3 VALUES (1)").ok();
    assert_eq!(c.q("SELECT count(*) FROM tmp3").one(), "1", "a temporary table after DISCARD TEMP works");
    assert_eq!(c.q("DEALLOCATE ALL").ok().tags, ["DEALLOCATE ALL"]);
    let a = c.q("CLOSE nosuch");
    assert_eq!((a.code(), a.message()), ("34000", "cursor \"nosuch\" does not exist"));
    // DISCARD ALL in a block is PostgreSQL's 25001.
    c.q("BEGIN").ok();
    let a = c.q("DISCARD ALL");
    assert_eq!((a.code(), a.message()), ("25001", "DISCARD ALL cannot run inside a transaction block"));
    c.q("ROLLBACK").ok();
    // RESET ALL is transactional, like SET.
    c.q("SET work_mem = '8MB'").ok();
    c.q("BEGIN; RESET ALL; ROLLBACK").ok();
    assert_eq!(c.q("SHOW work_mem").one(), "8MB");
}

#[test]
fn to_reg_functions_and_reg_casts_of_text() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let mut c = Conn::connect(srv.port);
    c.q("CREATE TABLE Mixed (a int)").ok();
    let a = c.q("SELECT to_regtype('integer') = 23, to_regtype('pg_catalog.int4') = 23, to_regtype('character varying(10)') = 1043, \
                 to_regtype('text[]') = 1009, to_regtype('nosuch') IS NULL, to_regclass('pg_class') = 1259, \
                 to_regclass('pg_catalog.pg_class') = 1259, to_regclass('mixed') = 'mixed'::regclass, \
                 to_regclass('public.mixed') = 'mixed'::regclass, to_regclass('\"Mixed\"') IS NULL, to_regclass('nosuch') IS NULL, \
                 to_regnamespace('public') = 2200, to_regnamespace('nosuch') IS NULL, to_regproc('array_in'), \
                 to_regproc('pg_catalog.textin'), to_regproc('nosuch') IS NULL, 'pg_catalog.array_in'::regproc")
        .ok();
    let row: Vec<String> = a.rows[0].iter().map(|v| v.clone().unwrap_or_default()).collect();
    assert_eq!(row, ["t", "t", "t", "t", "t", "t", "t", "t", "t", "t", "t", "t", "t", "array_in", "textin", "t", "array_in"]);
    // pgjdbc compares pg_type's I/O functions with a regproc literal.
    assert_eq!(c.q("SELECT count(*) > 0 FROM pg_type WHERE typinput = 'pg_catalog.array_in'::regproc").one(), "t");
    let a = c.q("SELECT 'nosuch_fn'::regproc");
    assert_eq!((a.code(), a.message()), ("42883", "function \"nosuch_fn\" does not exist"));
    // psycopg's TypeInfo.fetch, with the name as a parameter.
    let a = c.extended("SELECT t.oid, typarray FROM pg_type t WHERE t.oid = to_regtype($1)", &["int4"]).ok();
    assert_eq!(a.rows, [[Some("23".to_string()), Some("1007".to_string())]]);
    let a = c.extended("SELECT $1::text::regtype::oid", &["text"]).ok();
    assert_eq!(a.one(), "25");
    let a = c.extended("SELECT $1::text::regtype::oid", &["nosuch"]);
    assert_eq!((a.code(), a.message()), ("42704", "type \"nosuch\" does not exist"));
    let a = c.extended("SELECT $1::text::regclass::oid", &["pg_catalog.pg_type"]).ok();
    assert_eq!(a.one(), "1247");
    assert_eq!(c.q("SELECT format_type(1043, 14)").one(), "character varying(10)");
}

#[test]
fn three_and_four_part_column_names() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let mut c = Conn::connect(srv.port);
    // SQLAlchemy's has_table / reflection queries.
    let a = c
        .q("SELECT pg_catalog.pg_class.relname FROM pg_catalog.pg_class JOIN pg_catalog.pg_namespace \
            ON pg_catalog.pg_namespace.oid = pg_catalog.pg_class.relnamespace \
            WHERE pg_catalog.pg_class.relname = 'pg_class' AND pg_catalog.pg_namespace.nspname = 'pg_catalog'")
        .ok();
    assert_eq!(a.one(), "pg_class");
    c.q("CREATE TABLE t (a int)").ok();
    c.q("INSERT INTO t VALUES (7)").ok();
    assert_eq!(c.q("SELECT public.t.a FROM t").one(), "7");
    assert_eq!(c.q("SELECT postgres.public.t.a FROM public.t WHERE public.t.a = 7").one(), "7");
    assert_eq!(c.q("SELECT (SELECT public.t.a) FROM t").one(), "7");
    let a = c.q("SELECT foo.public.t.a FROM t");
    assert_eq!((a.code(), a.message()), ("0A000", "cross-database references are not implemented: foo.public.t.a"));
    let a = c.q("SELECT a.b.c.d.e FROM t");
    assert_eq!((a.code(), a.message()), ("42601", "improper qualified name (too many dotted names): a.b.c.d.e"));
}

#[test]
fn read_only_transactions() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let mut c = Conn::connect(srv.port);
    c.q("CREATE TABLE t (a int)").ok();
    assert_eq!(c.q("SHOW transaction_read_only").one(), "off");
    assert_eq!(c.q("START TRANSACTION READ ONLY").ok().tags, ["START TRANSACTION"]);
    assert_eq!(c.q("SHOW transaction_read_only").one(), "on");
    assert_eq!(c.q("SELECT count(*) FROM t").one(), "0");
    let a = c.q("INSERT INTO t VALUES (1)");
    assert_eq!((a.code(), a.message()), ("25006", "cannot execute INSERT in a read-only transaction"));
    c.q("ROLLBACK").ok();
    // A temporary table may be written.
    c.q("CREATE TEMP TABLE tmp (a int)").ok();
    c.q("BEGIN READ ONLY").ok();
    c.q("INSERT INTO tmp VALUES (1)").ok();
    for (sql, cmd) in [("UPDATE t SET a = 2", "UPDATE"), ("DELETE FROM t", "DELETE"), ("CREATE TABLE u (a int)", "CREATE TABLE")] {
        c.q("SAVEPOINT s").ok();
        let a = c.q(sql);
        assert_eq!((a.code(), a.message().to_string()), ("25006", format!("cannot execute {cmd} in a read-only transaction")));
        c.q("ROLLBACK TO s").ok();
    }
    let a = c.q("SET TRANSACTION READ WRITE");
    assert_eq!((a.code(), a.message()), ("25001", "transaction read-write mode must be set before any query"));
    c.q("ROLLBACK").ok();
    // SET TRANSACTION before any query, and the session default.
    c.q("BEGIN").ok();
    c.q("SET TRANSACTION READ ONLY").ok();
    assert_eq!(c.q("INSERT INTO t VALUES (1)").code(), "25006");
    c.q("ROLLBACK").ok();
    c.q("SET default_transaction_read_only = on").ok();
    assert_eq!(c.q("SHOW transaction_read_only").one(), "on");
    assert_eq!(c.q("INSERT INTO t VALUES (1)").code(), "25006");
    c.q("BEGIN").ok();
    c.q("SET TRANSACTION READ WRITE").ok();
    c.q("INSERT INTO t VALUES (1)").ok();
    c.q("COMMIT").ok();
    c.q("SET default_transaction_read_only = off").ok();
    c.q("BEGIN; SET transaction_read_only = on").ok();
    assert_eq!(c.q("INSERT INTO t VALUES (1)").code(), "25006");
    c.q("ROLLBACK").ok();
    assert_eq!(c.q("SELECT count(*) FROM t").one(), "1");
    // DEFERRABLE is recorded (it changes nothing without SERIALIZABLE's SSI).
    assert_eq!(c.q("SHOW transaction_deferrable").one(), "off");
    c.q("BEGIN ISOLATION LEVEL SERIALIZABLE, READ ONLY, DEFERRABLE").ok();
    assert_eq!(c.q("SHOW transaction_deferrable").one(), "on");
    assert_eq!(c.q("SHOW transaction_read_only").one(), "on");
    c.q("COMMIT").ok();
    // Outside a block: PostgreSQL's WARNING.
    let a = c.q("SET TRANSACTION READ ONLY").ok();
    assert_eq!(a.notices[0][&b'M'], "SET TRANSACTION can only be used in transaction blocks");
}

#[test]
fn constraint_errors_carry_schema_table_column_constraint_fields() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let mut c = Conn::connect(srv.port);
    c.q("CREATE TABLE p (id int PRIMARY KEY)").ok();
    c.q("CREATE TABLE c (id int PRIMARY KEY, pid int REFERENCES p, v int CHECK (v > 0), w int NOT NULL)").ok();
    c.q("INSERT INTO p VALUES (1)").ok();
    let field = |a: &Answer, f: u8| a.error.as_ref().unwrap().get(&f).cloned();
    let a = c.q("INSERT INTO p VALUES (1)");
    assert_eq!(a.code(), "23505");
    assert_eq!((field(&a, b's'), field(&a, b't'), field(&a, b'n'), field(&a, b'c')), (Some("public".into()), Some("p".into()), Some("p_pkey".into()), None));
    let a = c.q("INSERT INTO c VALUES (1, 2, 1, 1)");
    assert_eq!(a.code(), "23503");
    assert_eq!((field(&a, b's'), field(&a, b't'), field(&a, b'n')), (Some("public".into()), Some("c".into()), Some("c_pid_fkey".into())));
    let a = c.q("INSERT INTO c VALUES (1, 1, 0, 1)");
    assert_eq!(a.code(), "23514");
    assert_eq!((field(&a, b's'), field(&a, b't'), field(&a, b'n')), (Some("public".into()), Some("c".into()), Some("c_v_check".into())));
    let a = c.q("INSERT INTO c VALUES (1, 1, 1, NULL)");
    assert_eq!(a.code(), "23502");
    assert_eq!((field(&a, b's'), field(&a, b't'), field(&a, b'c'), field(&a, b'n')), (Some("public".into()), Some("c".into()), Some("w".into()), None));
    c.q("INSERT INTO c VALUES (1, 1, 1, 1)").ok();
    // Deleting a referenced row names the referencing table, as PostgreSQL does.
    let a = c.q("DELETE FROM p");
    assert_eq!(a.code(), "23503");
    assert_eq!((field(&a, b's'), field(&a, b't'), field(&a, b'n')), (Some("public".into()), Some("c".into()), Some("c_pid_fkey".into())));
    // In another schema, and in a block: the session goes on after ROLLBACK.
    c.q("CREATE SCHEMA s2; CREATE TABLE s2.u (k int UNIQUE)").ok();
    c.q("BEGIN").ok();
    c.q("INSERT INTO s2.u VALUES (1)").ok();
    let a = c.q("INSERT INTO s2.u VALUES (1)");
    assert_eq!((field(&a, b's'), field(&a, b't'), field(&a, b'n')), (Some("s2".into()), Some("u".into()), Some("u_k_key".into())));
    c.q("ROLLBACK").ok();
    assert_eq!(c.q("SELECT count(*) FROM s2.u").one(), "0");
}

#[test]
fn listen_notify_between_two_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let mut a = Conn::connect(srv.port);
    let mut b = Conn::connect(srv.port);
    assert!(a.q("SELECT pg_listening_channels()").ok().rows.is_empty());
    assert_eq!(a.q("LISTEN ch").ok().tags, ["LISTEN"]);
    a.q("BEGIN; LISTEN other2; LISTEN \"Quoted,\"\"x\"; COMMIT").ok();
    let ans = a.q("SELECT pg_listening_channels()").ok();
    assert_eq!(ans.columns, ["pg_listening_channels"]);
    assert_eq!(ans.rows, [[Some("ch".to_string())], [Some("other2".to_string())], [Some("Quoted,\"x".to_string())]]);
    a.q("UNLISTEN other2").ok();
    a.q("UNLISTEN \"Quoted,\"\"x\"").ok();
    let ans = a.q("SELECT * FROM pg_listening_channels()").ok();
    assert_eq!(ans.columns, ["pg_listening_channels"]);
    assert_eq!(ans.rows, [[Some("ch".to_string())]]);
    // An idle listener gets it promptly, without sending anything.
    assert_eq!(b.q("NOTIFY ch, 'hello'").ok().tags, ["NOTIFY"]);
    let got = a.unsolicited(Duration::from_secs(5));
    assert_eq!(got, [(b.pid, "ch".to_string(), "hello".to_string())]);
    // Delivered at commit, equal ones once, in order; pg_notify too.
    b.q("BEGIN").ok();
    b.q("NOTIFY ch, 'x'").ok();
    b.q("NOTIFY ch, 'x'").ok();
    b.q("SELECT pg_notify('ch', 'y')").ok();
    b.q("NOTIFY other, 'z'").ok();
    assert!(a.unsolicited(Duration::from_millis(300)).is_empty(), "nothing before the commit");
    b.q("COMMIT").ok();
    let got = a.unsolicited(Duration::from_secs(5));
    assert_eq!(got, [(b.pid, "ch".into(), "x".into()), (b.pid, "ch".into(), "y".into())]);
    // A rolled-back NOTIFY is never sent.
    b.q("BEGIN; NOTIFY ch, 'lost'; ROLLBACK").ok();
    assert!(a.unsolicited(Duration::from_millis(300)).is_empty());
    // A listener inside a transaction block gets it when its block ends.
    a.q("BEGIN").ok();
    b.q("NOTIFY ch, 'later'").ok();
    assert!(a.unsolicited(Duration::from_millis(300)).is_empty(), "not inside a block");
    let ans = a.q("COMMIT").ok();
    assert_eq!(ans.notifications, [(b.pid, "ch".into(), "later".into())]);
    // The sender hears itself when it listens.
    b.q("LISTEN ch").ok();
    let ans = b.q("NOTIFY ch, 'self'").ok();
    assert_eq!(ans.notifications, [(b.pid, "ch".into(), "self".into())]);
    assert_eq!(a.unsolicited(Duration::from_secs(5)), [(b.pid, "ch".into(), "self".into())]);
    // UNLISTEN, and LISTEN in a rolled-back block, stop nothing / start nothing.
    a.q("UNLISTEN *").ok();
    a.q("BEGIN; LISTEN ch; ROLLBACK").ok();
    assert!(a.q("SELECT pg_listening_channels()").ok().rows.is_empty());
    b.q("UNLISTEN ch").ok();
    b.q("NOTIFY ch, 'nobody'").ok();
    assert!(a.unsolicited(Duration::from_millis(300)).is_empty());
    assert!(a.q("SELECT 1").ok().notifications.is_empty());
    // PostgreSQL's errors.
    let ans = b.q("SELECT pg_notify('', 'x')");
    assert_eq!((ans.code(), ans.message()), ("22023", "channel name cannot be empty"));
    let long = "x".repeat(8000);
    let ans = b.q(&format!("NOTIFY ch, '{long}'"));
    assert_eq!((ans.code(), ans.message()), ("22023", "payload string too long"));
}

#[test]
fn savepoints_scope_notify_listen_and_unlisten() {
    // The same script's output on PostgreSQL 15: what a rolled-back savepoint
    // queued is dropped, what a released one queued commits with the block.
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let mut a = Conn::connect(srv.port);
    a.q("LISTEN a").ok();
    let ans = a.q("BEGIN; SAVEPOINT s; NOTIFY a, 'rolled back'; ROLLBACK TO s; NOTIFY a, 'kept'; \
                   SAVEPOINT t; NOTIFY a, 'released'; RELEASE t; COMMIT").ok();
    assert_eq!(ans.notifications, [(a.pid, "a".into(), "kept".into()), (a.pid, "a".into(), "released".into())]);
    // A duplicate dropped at NOTIFY time stays sent when its savepoint rolls back.
    let ans = a.q("BEGIN; NOTIFY a, 'dup'; SAVEPOINT s; NOTIFY a, 'dup'; ROLLBACK TO s; COMMIT").ok();
    assert_eq!(ans.notifications, [(a.pid, "a".into(), "dup".into())]);
    // ROLLBACK TO keeps the savepoint: a second rollback to it drops again.
    let ans = a.q("BEGIN; SAVEPOINT s; NOTIFY a, 'x'; ROLLBACK TO s; NOTIFY a, 'y'; ROLLBACK TO s; COMMIT").ok();
    assert!(ans.notifications.is_empty(), "{:?}", ans.notifications);
    a.q("BEGIN; SAVEPOINT s; LISTEN b; ROLLBACK TO s; COMMIT").ok();
    assert_eq!(a.q("SELECT pg_listening_channels()").ok().rows, [[Some("a".to_string())]]);
    a.q("BEGIN; SAVEPOINT s; UNLISTEN a; ROLLBACK TO s; SAVEPOINT s2; LISTEN c; RELEASE s2; COMMIT").ok();
    assert_eq!(a.q("SELECT pg_listening_channels()").ok().rows, [[Some("a".to_string())], [Some("c".to_string())]]);
}

#[test]
fn catalog_gaps_pg_range_expandarray_max_index_keys() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let mut c = Conn::connect(srv.port);
    let a = c.q("SELECT * FROM pg_catalog.pg_range").ok();
    assert_eq!(a.columns, ["rngtypid", "rngsubtype", "rngmultitypid", "rngcollation", "rngsubopc", "rngcanonical", "rngsubdiff"]);
    assert!(a.rows.is_empty(), "no range types yet");
    let a = c.q("SELECT x, n FROM information_schema._pg_expandarray(ARRAY[10, 20])").ok();
    assert_eq!(a.rows, [[Some("10".to_string()), Some("1".to_string())], [Some("20".to_string()), Some("2".to_string())]]);
    let a = c.q("SELECT setting, context, vartype, min_val, max_val FROM pg_settings WHERE name = 'max_index_keys'").ok();
    let row: Vec<String> = a.rows[0].iter().map(|v| v.clone().unwrap_or_default()).collect();
    assert_eq!(row, ["32", "internal", "integer", "32", "32"]);
    assert_eq!(c.q("SHOW max_identifier_length").one(), "63");
}

/// Expression defaults (SERIAL's nextval, now()) are visible to
/// information_schema.columns and pg_attrdef (pgjdbc's getColumns and
/// isAutoIncrement, SQLAlchemy's reflection), and pg_sequence has the
/// sequences' options (SQLAlchemy reads it for every column), as in
/// PostgreSQL 15.
#[test]
fn expression_defaults_and_pg_sequence_are_visible() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let mut c = Conn::connect(srv.port);
    c.q("CREATE TABLE sq (id serial, b timestamp DEFAULT now(), c int DEFAULT 5, d text DEFAULT 'x')").ok();
    c.q("CREATE SEQUENCE q INCREMENT 5 START 10 CYCLE").ok();
    let rows = |a: Answer| -> Vec<String> {
        assert!(a.error.is_none(), "unexpected error {:?}", a.error);
        a.rows.iter().map(|r| r.iter().map(|v| v.clone().unwrap_or_default()).collect::<Vec<_>>().join("|")).collect()
    };
    assert_eq!(
        rows(c.q("SELECT column_name, column_default FROM information_schema.columns WHERE table_name = 'sq' ORDER BY ordinal_position")),
        ["id|nextval('sq_id_seq'::regclass)", "b|now()", "c|5", "d|'x'::text"]
    );
    assert_eq!(
        rows(c.q("SELECT adnum, pg_get_expr(adbin, adrelid) FROM pg_attrdef ORDER BY adnum")),
        ["1|nextval('sq_id_seq'::regclass)", "2|now()", "3|5", "4|'x'::text"]
    );
    assert_eq!(
        rows(c.q("SELECT attname, atthasdef FROM pg_attribute WHERE attrelid = 'sq'::regclass AND attnum > 0 ORDER BY attnum")),
        ["id|t", "b|t", "c|t", "d|t"]
    );
    let a = c.q("SELECT * FROM pg_sequence WHERE false");
    assert_eq!(a.columns, ["seqrelid", "seqtypid", "seqstart", "seqincrement", "seqmax", "seqmin", "seqcache", "seqcycle"]);
    assert_eq!(
        rows(c.q("SELECT seqtypid, seqstart, seqincrement, seqmax, seqmin, seqcache, seqcycle FROM pg_sequence \
                  WHERE seqrelid IN ('sq_id_seq'::regclass, 'q'::regclass) ORDER BY seqstart")),
        ["23|1|1|2147483647|1|1|f", "20|10|5|9223372036854775807|1|1|t"]
    );
    c.q("DROP SEQUENCE q").ok();
    assert_eq!(rows(c.q("SELECT count(*) FROM pg_sequence")), ["1"]);
}

#[test]
fn upsert_returning_star_skips_dropped_columns() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let mut c = Conn::connect(srv.port);
    c.q("CREATE TABLE t (a int PRIMARY KEY, b int, c int)").ok();
    c.q("ALTER TABLE t DROP COLUMN b").ok();
    let a = c.q("INSERT INTO t VALUES (1, 3) ON CONFLICT (a) DO UPDATE SET c = excluded.c RETURNING *").ok();
    assert_eq!(a.columns, ["a", "c"]);
    assert_eq!(a.rows, [[Some("1".to_string()), Some("3".to_string())]]);
    let a = c.q("INSERT INTO t VALUES (1, 4) ON CONFLICT (a) DO UPDATE SET c = excluded.c + t.c RETURNING *").ok();
    assert_eq!(a.columns, ["a", "c"]);
    assert_eq!(a.rows, [[Some("1".to_string()), Some("7".to_string())]]);
    let a = c.q("UPDATE t SET c = 0 FROM (SELECT 1 AS k) s WHERE t.a = s.k RETURNING *").ok();
    assert_eq!(a.columns, ["a", "c", "k"]);
    let a = c.q("INSERT INTO t VALUES (1, 5) ON CONFLICT (a) DO UPDATE SET c = excluded.\"........pg.dropped.2........\" RETURNING *");
    assert_eq!(a.code(), "42703");
}

/// A WITH query that reads a column of an enclosing query, recursive or not,
/// inside a scalar subquery (asyncpg's type introspection has one): bound to
/// each outer row, as in PostgreSQL 15.
#[test]
fn correlated_cte_in_a_scalar_subquery() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let mut c = Conn::connect(srv.port);
    let a = c
        .q("SELECT t.x, (WITH RECURSIVE r(v, d) AS (SELECT t.x, 0 UNION ALL SELECT v + 1, d + 1 FROM r WHERE d < 2) SELECT max(v) FROM r), \
            (WITH c AS (SELECT t.x * 2 AS y) SELECT y FROM c) FROM (VALUES (1), (10)) t(x)")
        .ok();
    let rows: Vec<Vec<String>> = a.rows.iter().map(|r| r.iter().map(|v| v.clone().unwrap_or_default()).collect()).collect();
    assert_eq!(rows, [["1", "3", "2"], ["10", "12", "20"]]);
}

/// What SQLAlchemy's reflection calls (issue 22): pg_get_serial_sequence
/// (serial, bigserial and identity columns, quoted and qualified names, a
/// missing relation), a parameter cast to regclass, and pg_get_constraintdef
/// of foreign keys and check constraints, pretty and not; PostgreSQL 15's
/// answers.
#[test]
fn serial_sequences_regclass_parameters_and_constraint_definitions() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let mut c = Conn::connect(srv.port);
    c.q("CREATE SCHEMA s").ok();
    c.q("CREATE TABLE s.parent (id int PRIMARY KEY)").ok();
    c.q("CREATE TABLE \"Mixed\" (k serial PRIMARY KEY, \"Col\" bigserial, n int GENERATED ALWAYS AS IDENTITY, plain int, \
         pid int REFERENCES s.parent ON DELETE SET NULL ON UPDATE RESTRICT, CONSTRAINT pos CHECK (plain > 0))")
        .ok();
    let a = c.q("SELECT pg_get_serial_sequence('\"Mixed\"', 'k'), pg_get_serial_sequence('public.\"Mixed\"', 'Col'), \
                 pg_get_serial_sequence('\"Mixed\"', 'n'), pg_get_serial_sequence('\"Mixed\"', 'plain') IS NULL")
        .ok();
    let row: Vec<String> = a.rows[0].iter().map(|v| v.clone().unwrap_or_default()).collect();
    assert_eq!(row, ["public.\"Mixed_k_seq\"", "public.\"Mixed_Col_seq\"", "public.\"Mixed_n_seq\"", "t"]);
    let a = c.q("SELECT pg_get_serial_sequence('nosuch', 'k')");
    assert_eq!((a.code(), a.message()), ("42P01", "relation \"nosuch\" does not exist"));
    // SQLAlchemy's form: the sequence's name cast back to regclass, then oid.
    let a = c.q("SELECT CAST(CAST(pg_get_serial_sequence(CAST(CAST(attrelid AS REGCLASS) AS TEXT), attname) AS REGCLASS) AS OID) = \
                 'public.\"Mixed_k_seq\"'::regclass FROM pg_attribute WHERE attrelid = '\"Mixed\"'::regclass AND attname = 'k'")
        .ok();
    assert_eq!(a.one(), "t");
    let a = c.extended("SELECT CAST($1 AS REGCLASS) = 'pg_catalog.pg_constraint'::regclass", &["pg_catalog.pg_constraint"]).ok();
    assert_eq!(a.one(), "t");
    let a = c.extended("SELECT CAST($1 AS REGCLASS)", &["nosuch"]);
    assert_eq!((a.code(), a.message()), ("42P01", "relation \"nosuch\" does not exist"));
    let a = c.q("SELECT conname, pg_get_constraintdef(oid, true), pg_get_constraintdef(oid) FROM pg_constraint \
                 WHERE conrelid = '\"Mixed\"'::regclass ORDER BY conname")
        .ok();
    let rows: Vec<String> = a.rows.iter().map(|r| r.iter().map(|v| v.clone().unwrap_or_default()).collect::<Vec<_>>().join("|")).collect();
    assert_eq!(
        rows,
        [
            "Mixed_pid_fkey|FOREIGN KEY (pid) REFERENCES s.parent(id) ON UPDATE RESTRICT ON DELETE SET NULL|FOREIGN KEY (pid) REFERENCES s.parent(id) ON UPDATE RESTRICT ON DELETE SET NULL",
            "Mixed_pkey|PRIMARY KEY (k)|PRIMARY KEY (k)",
            "pos|CHECK (plain > 0)|CHECK ((plain > 0))",
        ]
    );
}
