//! Sequences and foreign keys end to end, where a psql script cannot show it:
//! nextval from concurrent sessions, nextval after a crash (kill -9), and a
//! foreign-key check racing a DELETE of the referenced row.

mod common;
use common::server::Server;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// An interactive psql session: statements written to its stdin, output lines
/// collected by a reader thread. stdout and stderr share one pipe, so an error
/// (stderr) is read before the marker row (stdout) of the query sent after it.
struct Session {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
}

impl Session {
    fn open(srv: &Server) -> Session {
        let (out, writer) = std::io::pipe().unwrap();
        let mut child = srv
            .psql_cmd()
            .args(["-At", "-q", "-v", "ON_ERROR_STOP=0"])
            .stdin(Stdio::piped())
            .stdout(writer.try_clone().unwrap())
            .stderr(writer)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(|l| l.ok()) {
                let _ = tx.send(l);
            }
        });
        Session { child, stdin, lines }
    }

    fn send(&mut self, sql: &str) {
        self.stdin.write_all(sql.as_bytes()).unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Lines until one containing `marker` (which is returned last).
    fn until(&mut self, marker: &str) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut got = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let l = self.lines.recv_timeout(left).unwrap_or_else(|_| panic!("no \"{marker}\" within 30 s; got {got:?}"));
            let done = l.contains(marker);
            got.push(l);
            if done {
                return got;
            }
        }
    }

    /// Runs `sql` and waits for its output, ended by a marker row.
    fn run(&mut self, sql: &str) -> Vec<String> {
        self.send(sql);
        self.send("SELECT 'done-marker';");
        let mut v = self.until("done-marker");
        v.pop();
        v
    }

    /// Nothing printed within `d` (the session is blocked).
    fn quiet_for(&mut self, d: Duration) -> bool {
        self.lines.recv_timeout(d).is_err()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn nextval_gives_distinct_values_to_concurrent_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    srv.sql_ok("CREATE SEQUENCE s; CREATE TABLE t (id serial PRIMARY KEY, who int);");
    const SESSIONS: usize = 4;
    const CALLS: usize = 150;
    let handles: Vec<_> = (0..SESSIONS)
        .map(|w| {
            let mut c = srv.psql_cmd();
            let script: String =
                (0..CALLS).map(|_| format!("SELECT nextval('s');\nINSERT INTO t (who) VALUES ({w});\n")).collect();
            std::thread::spawn(move || {
                let mut p = c.args(["-At", "-q", "-v", "ON_ERROR_STOP=1"]).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
                p.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
                let o = p.wait_with_output().unwrap();
                assert!(o.status.success());
                String::from_utf8(o.stdout).unwrap()
            })
        })
        .collect();
    let mut all: Vec<i64> = Vec::new();
    for h in handles {
        all.extend(h.join().unwrap().lines().map(|l| l.parse::<i64>().unwrap()));
    }
    all.sort();
    let n = (SESSIONS * CALLS) as i64;
    assert_eq!(all, (1..=n).collect::<Vec<_>>(), "every value handed out once");
    // The SERIAL column: distinct ids too (the primary key would have refused a duplicate).
    let out = srv.sql_ok("SELECT count(*), count(DISTINCT id), max(id) FROM t;");
    assert_eq!(out, format!("{n}|{n}|{n}\n"));
}

#[test]
fn nextval_never_repeats_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let mut srv = Server::start(dir.path());
    srv.sql_ok("CREATE SEQUENCE s; CREATE SEQUENCE d INCREMENT -3; CREATE TABLE t (id serial PRIMARY KEY);");
    let out = srv.sql_ok("SELECT max(nextval('s')) FROM generate_series(1, 40);");
    let before: i64 = out.trim().parse().unwrap();
    assert_eq!(before, 40);
    let out = srv.sql_ok("SELECT min(nextval('d')) FROM generate_series(1, 5);");
    assert_eq!(out.trim(), "-13");
    srv.sql_ok("INSERT INTO t DEFAULT VALUES; INSERT INTO t DEFAULT VALUES; INSERT INTO t DEFAULT VALUES;");
    // Values handed out inside a transaction that never ends count too.
    let mut open = Session::open(&srv);
    let got = open.run("BEGIN; SELECT nextval('s');");
    assert_eq!(got, vec!["41"]);
    srv.signal(libc::SIGKILL);
    drop(open);

    let srv = Server::start(dir.path());
    let after: i64 = srv.sql_ok("SELECT nextval('s');").trim().parse().unwrap();
    assert!(after > 41, "nextval after the crash returned {after}");
    let d: i64 = srv.sql_ok("SELECT nextval('d');").trim().parse().unwrap();
    assert!(d < -13, "descending nextval after the crash returned {d}");
    // The SERIAL column goes on without a duplicate key.
    let out = srv.sql_ok("INSERT INTO t DEFAULT VALUES RETURNING id > 3;");
    assert_eq!(out.lines().next(), Some("t"));
    // setval is written through at once.
    srv.sql_ok("SELECT setval('s', 1000);");
    let mut srv = srv;
    srv.signal(libc::SIGKILL);
    let srv = Server::start(dir.path());
    assert_eq!(srv.sql_ok("SELECT nextval('s');"), "1001\n");
}

#[test]
fn foreign_key_check_waits_for_a_concurrent_delete_of_the_parent() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    srv.sql_ok("CREATE TABLE p (id int PRIMARY KEY); CREATE TABLE c (p int REFERENCES p); INSERT INTO p VALUES (1), (2);");
    let mut a = Session::open(&srv);
    let mut b = Session::open(&srv);

    // The deleter commits: the waiting insert fails.
    assert!(a.run("BEGIN; DELETE FROM p WHERE id = 1;").is_empty());
    b.send("INSERT INTO c VALUES (1);");
    assert!(b.quiet_for(Duration::from_millis(700)), "the insert did not wait for the deleting transaction");
    a.send("COMMIT;");
    let got = b.run("");
    assert!(
        got.iter().any(|l| l.contains("violates foreign key constraint \"c_p_fkey\"")),
        "insert after the committed delete: {got:?}"
    );

    // The deleter rolls back: the waiting insert succeeds.
    assert!(a.run("BEGIN; DELETE FROM p WHERE id = 2;").is_empty());
    b.send("INSERT INTO c VALUES (2);");
    assert!(b.quiet_for(Duration::from_millis(700)), "the insert did not wait for the deleting transaction");
    a.send("ROLLBACK;");
    let got = b.run("");
    assert!(got.is_empty(), "insert after the rolled-back delete: {got:?}");

    // The other way round: an uncommitted referencing insert holds KEY SHARE
    // on the parent row; the DELETE waits, then sees the committed child row.
    srv.sql_ok("INSERT INTO p VALUES (3);");
    assert!(a.run("BEGIN; INSERT INTO c VALUES (3);").is_empty());
    b.send("DELETE FROM p WHERE id = 3;");
    assert!(b.quiet_for(Duration::from_millis(700)), "the delete did not wait for the referencing transaction");
    a.send("COMMIT;");
    let got = b.run("");
    assert!(got.iter().any(|l| l.contains("is still referenced from table \"c\"")), "delete after the committed insert: {got:?}");
    assert_eq!(srv.sql_ok("SELECT count(*) FROM p WHERE id = 3;"), "1\n");
}

#[test]
fn oids_are_never_handed_out_twice_across_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let mut srv = Server::start(dir.path());
    // Objects created after the last checkpoint: their OIDs exist only in the WAL.
    srv.sql_ok("CREATE TABLE a (x int PRIMARY KEY); INSERT INTO a VALUES (1), (2);");
    let before: i64 = srv.sql_ok("SELECT max(oid::int8) FROM pg_class;").trim().parse().unwrap();
    srv.signal(libc::SIGKILL);

    let srv = Server::start(dir.path());
    srv.sql_ok("CREATE TABLE b (y int PRIMARY KEY);");
    let b: i64 = srv.sql_ok("SELECT 'b'::regclass::oid::int8;").trim().parse().unwrap();
    assert!(b > before, "table b got OID {b}, not above the {before} handed out before the crash");
    // No OID is shared, and both tables read back what they hold.
    assert_eq!(srv.sql_ok("SELECT count(*) - count(DISTINCT oid) FROM pg_class;"), "0\n");
    assert_eq!(srv.sql_ok("SELECT count(*) FROM b;"), "0\n");
    assert_eq!(srv.sql_ok("SELECT sum(x) FROM a;"), "3\n");
    // And again after a clean restart followed by a crash.
    let mut srv2 = srv;
    srv2.signal(libc::SIGTERM);
    let mut srv = Server::start(dir.path());
    srv.sql_ok("CREATE TABLE c (z int);");
    let c: i64 = srv.sql_ok("SELECT 'c'::regclass::oid::int8;").trim().parse().unwrap();
    srv.signal(libc::SIGKILL);
    let srv = Server::start(dir.path());
    srv.sql_ok("CREATE TABLE d (w int);");
    let d: i64 = srv.sql_ok("SELECT 'd'::regclass::oid::int8;").trim().parse().unwrap();
    assert!(c > b && d > c, "OIDs b {b}, c {c}, d {d}");
    assert_eq!(srv.sql_ok("SELECT count(*) - count(DISTINCT oid) FROM pg_class;"), "0\n");
}
