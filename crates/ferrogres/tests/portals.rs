//! Suspendable portals of the extended protocol (issues 19 and 22): an
//! Execute with a row limit sends that many DataRows then PortalSuspended,
//! and the next Execute continues where it stopped, from the executor the
//! portal keeps open (not from a materialized result); portals interleave
//! within a transaction, keep their snapshot, end at Sync or Close, and an
//! error while one runs fails the transaction without losing the session.
//! The server's memory stays flat while a 1M-row portal is read in pieces.

mod common;
use common::client::Client;
use common::server::{rss_kb, Server};
use common::{bind, describe, execute, parse, read_message, sync};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The messages up to ReadyForQuery, each written compactly: a DataRow as its
/// first column's text, CommandComplete as `C:tag`, an error as `E:sqlstate`,
/// others as their type byte.
fn trace(c: &mut Client) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let (t, b) = read_message(&mut c.s);
        out.push(match t {
            b'D' => {
                let len = i32::from_be_bytes(b[2..6].try_into().unwrap());
                if len < 0 {
                    "NULL".to_string()
                } else {
                    String::from_utf8_lossy(&b[6..6 + len as usize]).into_owned()
                }
            }
            b'C' => format!("C:{}", String::from_utf8_lossy(&b[..b.len() - 1])),
            b'E' => format!("E:{}", common::fields(&b)[&b'C']),
            b'Z' => format!("Z:{}", b[0] as char),
            t => (t as char).to_string(),
        });
        if t == b'Z' {
            return out;
        }
    }
}

fn close_portal(name: &str) -> Vec<u8> {
    let mut b = vec![b'P'];
    b.extend(common::cstr(name));
    common::msg(b'C', &b)
}

fn v(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[test]
fn execute_with_a_row_limit_suspends_and_resumes() {
    let srv = Server::start_temp(&[]);
    let mut c = Client::connect(srv.port);
    assert!(c.query("CREATE TABLE t (a int); INSERT INTO t SELECT g FROM generate_series(1, 10) g").error.is_none());
    c.send(&[parse("", "SELECT a FROM t ORDER BY a", &[]), bind("", "", &[], &[], &[]), execute("", 3), execute("", 3)].concat());
    c.send(&[execute("", 0), execute("", 0), sync()].concat());
    assert_eq!(
        trace(&mut c),
        v(&["1", "2", "1", "2", "3", "s", "4", "5", "6", "s", "7", "8", "9", "10", "C:SELECT 4", "C:SELECT 0", "Z:I"])
    );
    // Exactly the rows that are left is still PortalSuspended, as in
    // PostgreSQL (its executor does not look for another row); the next
    // Execute completes with none.
    c.send(&[parse("", "SELECT a FROM t WHERE a > 8 ORDER BY a", &[]), bind("", "", &[], &[], &[]), execute("", 2), execute("", 2), sync()].concat());
    assert_eq!(trace(&mut c), v(&["1", "2", "9", "10", "s", "C:SELECT 0", "Z:I"]));
}

/// The portal pulls from a live executor: a query with a billion rows answers
/// its first rows at once, and a row that fails is reached only by the Execute
/// that asks for it.
#[test]
fn a_portal_pulls_only_the_rows_asked_for() {
    let srv = Server::start_temp(&[]);
    let mut c = Client::connect(srv.port);
    let t = Instant::now();
    c.send(&[parse("", "SELECT g FROM generate_series(1, 1000000000) g", &[]), bind("", "", &[], &[], &[]), execute("", 3), sync()].concat());
    assert_eq!(trace(&mut c), v(&["1", "2", "1", "2", "3", "s", "Z:I"]));
    assert!(t.elapsed() < Duration::from_secs(20), "took {:?}", t.elapsed());

    // Error mid-portal: the first Execute succeeds, the second fails on the
    // fifth row; the messages up to Sync are skipped, the session goes on.
    c.send(&[parse("", "SELECT 10 / (5 - g) FROM generate_series(1, 10) g", &[]), bind("", "", &[], &[], &[]), execute("", 3)].concat());
    c.send(&[execute("", 3), execute("", 3), sync()].concat());
    assert_eq!(trace(&mut c), v(&["1", "2", "2", "3", "5", "s", "10", "E:22012", "Z:I"]));
    assert_eq!(c.query("SELECT 1").one(), "1");
}

#[test]
fn portals_interleave_in_a_transaction_and_end_with_it() {
    let srv = Server::start_temp(&[]);
    let mut c = Client::connect(srv.port);
    assert!(c.query("CREATE TABLE t (a int); INSERT INTO t SELECT g FROM generate_series(1, 6) g").error.is_none());
    assert!(c.query("BEGIN").error.is_none());
    c.send(&[parse("s1", "SELECT a FROM t ORDER BY a", &[]), parse("s2", "SELECT a * 100 FROM t ORDER BY a DESC", &[])].concat());
    c.send(&[bind("p1", "s1", &[], &[], &[]), bind("p2", "s2", &[], &[], &[]), execute("p1", 2), execute("p2", 2)].concat());
    // Another statement runs between the portal's Executes; its change is not
    // seen by the portals, which keep the snapshot they started with.
    c.send(&[parse("", "INSERT INTO t VALUES (0), (7)", &[]), bind("", "", &[], &[], &[]), execute("", 0)].concat());
    c.send(&[execute("p1", 2), execute("p2", 0), execute("p1", 0), sync()].concat());
    assert_eq!(
        trace(&mut c),
        v(&[
            "1", "1", "2", "2", "1", "2", "s", "600", "500", "s", "1", "2", "C:INSERT 0 2", "3", "4", "s", "400", "300", "200",
            "100", "C:SELECT 4", "5", "6", "C:SELECT 2", "Z:T"
        ])
    );
    // Close of a named portal. A portal started now sees the rows inserted.
    c.send(&[bind("p3", "s1", &[], &[], &[]), execute("p3", 1), close_portal("p3"), execute("p3", 1), sync()].concat());
    assert_eq!(trace(&mut c), v(&["2", "0", "s", "3", "E:34000", "Z:E"]));
    assert!(c.query("ROLLBACK").error.is_none());
    // A portal of an implicit transaction ends at Sync.
    c.send(&[bind("p4", "s1", &[], &[], &[]), execute("p4", 1), sync()].concat());
    assert_eq!(trace(&mut c), v(&["2", "1", "s", "Z:I"]));
    c.send(&[execute("p4", 1), sync()].concat());
    assert_eq!(trace(&mut c), v(&["E:34000", "Z:I"]));
    // In a block, COMMIT ends them.
    assert!(c.query("BEGIN").error.is_none());
    c.send(&[bind("p5", "s1", &[], &[], &[]), execute("p5", 1), sync()].concat());
    assert_eq!(trace(&mut c), v(&["2", "1", "s", "Z:T"]));
    assert!(c.query("COMMIT").error.is_none());
    c.send(&[execute("p5", 1), sync()].concat());
    assert_eq!(trace(&mut c), v(&["E:34000", "Z:I"]));
}


/// A 1M-row portal read 100 rows at a time: the server's resident memory
/// stays within 40 MB of where it started (materialized, the rows alone
/// would take over 200 MB).
#[test]
fn a_million_row_portal_read_in_pieces_keeps_memory_flat() {
    let srv = Server::start_temp(&[]);
    let pid = srv.pid();
    let mut c = Client::connect(srv.port);
    let before = rss_kb(pid);
    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(before));
    let sampler = {
        let (stop, peak) = (stop.clone(), peak.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(rss_kb(pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    assert!(c.query("BEGIN").error.is_none());
    c.send(&[parse("big", "SELECT g, repeat('x', 100) FROM generate_series(1, 1000000) g", &[]), bind("p", "big", &[], &[], &[])].concat());
    let mut rows = 0u64;
    let mut last = String::new();
    loop {
        c.send(&[execute("p", 100), common::msg(b'H', &[])].concat());
        let mut done = false;
        loop {
            let (t, b) = read_message(&mut c.s);
            match t {
                b'1' | b'2' => {}
                b'D' => {
                    rows += 1;
                    let len = i32::from_be_bytes(b[2..6].try_into().unwrap()) as usize;
                    last = String::from_utf8_lossy(&b[6..6 + len]).into_owned();
                }
                b's' => break,
                b'C' => {
                    done = true;
                    break;
                }
                t => panic!("unexpected message {}: {:?}", t as char, String::from_utf8_lossy(&b)),
            }
        }
        if done {
            break;
        }
    }
    c.send(&sync());
    let _ = trace(&mut c);
    assert!(c.query("COMMIT").error.is_none());
    stop.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    let grew = peak.load(Ordering::Relaxed).saturating_sub(before);
    eprintln!("1M rows read 100 at a time: server RSS {before} kB before, grew by {grew} kB at peak");
    assert_eq!((rows, last.as_str()), (1_000_000, "1000000"));
    assert!(grew < 40 * 1024, "server RSS grew by {grew} kB");
}

/// SQL cursors (forward-only): DECLARE, FETCH and MOVE in their forward
/// forms, CLOSE and CLOSE ALL, with PostgreSQL 15's errors.
#[test]
fn sql_cursors_fetch_move_close() {
    let srv = Server::start_temp(&[]);
    let mut c = Client::connect(srv.port);
    let e = |r: common::client::Reply| r.err();
    let rows = |r: common::client::Reply| -> Vec<String> {
        assert!(r.error.is_none(), "{:?}", r.error);
        r.rows.into_iter().map(|r| r[0].clone().unwrap()).collect()
    };
    assert_eq!(
        e(c.query("DECLARE c CURSOR FOR SELECT 1")),
        ("25P01".into(), "DECLARE CURSOR can only be used in transaction blocks".into())
    );
    assert!(c.query("CREATE TABLE t (a int); INSERT INTO t SELECT g FROM generate_series(1, 10) g").error.is_none());
    assert!(c.query("BEGIN").error.is_none());
    assert!(c.query("DECLARE c NO SCROLL CURSOR FOR SELECT a FROM t ORDER BY a").error.is_none());
    assert_eq!(e(c.query("DECLARE c CURSOR FOR SELECT 1")), ("42P03".into(), "cursor \"c\" already exists".into()));
    assert!(c.query("ROLLBACK").error.is_none());
    assert!(c.query("BEGIN").error.is_none());
    assert!(c.query("DECLARE c CURSOR FOR SELECT a FROM t ORDER BY a").error.is_none());
    // A cursor over an endless query answers at once.
    assert!(c.query("DECLARE big CURSOR FOR SELECT g FROM generate_series(1, 1000000000) g").error.is_none());
    assert_eq!(rows(c.query("FETCH 2 FROM big")), v(&["1", "2"]));
    assert_eq!(rows(c.query("FETCH c")), v(&["1"]));
    assert_eq!(rows(c.query("FETCH NEXT FROM c")), v(&["2"]));
    assert_eq!(rows(c.query("FETCH FORWARD 3 FROM c")), v(&["3", "4", "5"]));
    assert_eq!(rows(c.query("MOVE 1 IN c")), Vec::<String>::new());
    assert_eq!(rows(c.query("FETCH ABSOLUTE 8 FROM c")), v(&["8"]));
    assert_eq!(rows(c.query("FETCH RELATIVE 2 FROM c")), v(&["10"]));
    let r = c.query("FETCH BACKWARD 1 FROM c");
    assert_eq!(r.err(), ("55000".into(), "cursor can only scan forward".into()));
    assert_eq!(r.error.unwrap()[&b'H'], "Declare it with SCROLL option to enable backward scan.");
    assert!(c.query("ROLLBACK").error.is_none());
    assert_eq!(e(c.query("FETCH c")), ("34000".into(), "cursor \"c\" does not exist".into()));
    // CLOSE, CLOSE ALL; FETCH ALL; the tags.
    assert!(c.query("BEGIN").error.is_none());
    assert!(c.query("DECLARE c CURSOR FOR SELECT a FROM t ORDER BY a").error.is_none());
    assert!(c.query("DECLARE d CURSOR FOR SELECT a FROM t ORDER BY a").error.is_none());
    assert_eq!(rows(c.query("FETCH ALL FROM c")).len(), 10);
    assert_eq!(rows(c.query("FETCH c")), Vec::<String>::new());
    assert!(c.query("CLOSE c").error.is_none());
    assert!(c.query("CLOSE ALL").error.is_none());
    assert_eq!(e(c.query("FETCH d")), ("34000".into(), "cursor \"d\" does not exist".into()));
    assert!(c.query("ROLLBACK").error.is_none());
    assert_eq!(e(c.query("CLOSE c")), ("34000".into(), "cursor \"c\" does not exist".into()));
    // Command tags, through psql.
    let out = srv.sql_ok("BEGIN; DECLARE c CURSOR FOR SELECT a FROM t ORDER BY a; MOVE FORWARD 4 IN c; FETCH 2 FROM c; MOVE ALL IN c; FETCH c; COMMIT;");
    assert_eq!(out, "BEGIN\nDECLARE CURSOR\nMOVE 4\n5\n6\nMOVE 4\nCOMMIT\n", "{out}");
}

/// DECLARE and FETCH / MOVE through Parse/Bind/Execute, as psycopg's named
/// cursors and pgx send them: DECLARE takes Bind's parameters and describes as
/// NoData, a FETCH describes as its cursor's columns; the answers and tags are
/// PostgreSQL 15's. A FETCH portal run with a row limit: see
/// `fetch_with_a_row_limit_matches_postgres_15`.
#[test]
fn declare_and_fetch_through_the_extended_protocol() {
    let srv = Server::start_temp(&[]);
    let mut c = Client::connect(srv.port);
    let decl = "DECLARE c CURSOR FOR SELECT g AS n FROM generate_series(1, $1) g WHERE g > $2";
    // Outside a transaction block: 25P01, at Execute.
    c.send(&[parse("", decl, &[23, 23]), bind("", "", &[], &[Some(b"5"), Some(b"1")], &[]), execute("", 0), sync()].concat());
    assert_eq!(trace(&mut c), v(&["1", "2", "E:25P01", "Z:I"]));
    assert!(c.query("BEGIN").error.is_none());
    c.send(&[parse("d", decl, &[23, 23]), describe(b'S', "d"), bind("", "d", &[], &[Some(b"5"), Some(b"1")], &[]), describe(b'P', ""), execute("", 0), sync()].concat());
    assert_eq!(trace(&mut c), v(&["1", "t", "n", "2", "n", "C:DECLARE CURSOR", "Z:T"]));
    c.send(&[parse("f", "FETCH 2 FROM c", &[]), describe(b'S', "f"), bind("", "f", &[], &[], &[]), describe(b'P', ""), execute("", 0), sync()].concat());
    assert_eq!(trace(&mut c), v(&["1", "t", "T", "2", "T", "2", "3", "C:FETCH 2", "Z:T"]));
    c.send(&[parse("", "MOVE 1 IN c", &[]), bind("", "", &[], &[], &[]), describe(b'P', ""), execute("", 0), sync()].concat());
    assert_eq!(trace(&mut c), v(&["1", "2", "n", "C:MOVE 1", "Z:T"]));
    c.send(&[parse("", "FETCH ALL FROM c", &[]), bind("", "", &[], &[], &[]), execute("", 0), bind("", "", &[], &[], &[]), execute("", 0), sync()].concat());
    assert_eq!(trace(&mut c), v(&["1", "2", "5", "C:FETCH 1", "2", "C:FETCH 0", "Z:T"]));
    c.send(&[parse("", "FETCH 1 FROM nope", &[]), bind("", "", &[], &[], &[]), execute("", 0), sync()].concat());
    assert_eq!(trace(&mut c), v(&["1", "2", "E:34000", "Z:E"]));
    assert!(c.query("ROLLBACK").error.is_none());
    assert_eq!(c.query("SELECT 'usable'").rows[0][0].as_deref(), Some("usable"));
}

/// The messages of [`fetch_limit_script`] as one server answers them.
fn fetch_limit_trace(port: u16) -> Vec<Vec<String>> {
    let mut c = Client::connect(port);
    let mut out = Vec::new();
    assert!(c.query("BEGIN").error.is_none());
    assert!(c.query("DECLARE c CURSOR FOR SELECT g FROM generate_series(1, 10) g").error.is_none());
    let fetch = |sql: &str, limits: &[i32]| {
        let mut m = vec![parse("", sql, &[]), bind("", "", &[], &[], &[])];
        m.extend(limits.iter().map(|&n| execute("", n)));
        m.push(sync());
        m.concat()
    };
    // FETCH n in pieces: exactly the last rows is a suspension, then FETCH 0.
    c.send(&fetch("FETCH 4 FROM c", &[2, 2, 2]));
    out.push(trace(&mut c));
    // FETCH ALL in pieces of 3; the last Execute without a limit.
    c.send(&fetch("FETCH ALL FROM c", &[3, 1, 0]));
    out.push(trace(&mut c));
    // The cursor is at its end.
    c.send(&fetch("FETCH 3 FROM c", &[5]));
    out.push(trace(&mut c));
    // A limit larger than the FETCH's count: one Execute completes it.
    assert!(c.query("DECLARE d CURSOR FOR SELECT g, g * 10 AS t FROM generate_series(1, 5) g").error.is_none());
    c.send(&fetch("FETCH 2 FROM d", &[5]));
    out.push(trace(&mut c));
    // FETCH ALL stopping short of the limit; ABSOLUTE / RELATIVE with a limit.
    c.send(&fetch("FETCH ALL FROM d", &[2, 2]));
    out.push(trace(&mut c));
    assert!(c.query("DECLARE e CURSOR FOR SELECT g FROM generate_series(1, 5) g").error.is_none());
    c.send(&fetch("FETCH ABSOLUTE 2 FROM e", &[1, 1]));
    out.push(trace(&mut c));
    c.send(&fetch("FETCH RELATIVE 2 FROM e", &[3]));
    out.push(trace(&mut c));
    // MOVE sends no rows: a limit does not suspend it.
    c.send(&fetch("MOVE ALL IN e", &[1]));
    out.push(trace(&mut c));
    // A named portal suspended while the unnamed one runs a query.
    c.send(&[parse("", "DECLARE f CURSOR FOR SELECT g FROM generate_series(1, 6) g", &[]), bind("", "", &[], &[], &[]), execute("", 0)].concat());
    c.send(&[parse("fs", "FETCH 5 FROM f", &[]), bind("p", "fs", &[], &[], &[]), execute("p", 2)].concat());
    c.send(&[parse("", "SELECT 'between'", &[]), bind("", "", &[], &[], &[]), execute("", 0), execute("p", 2), execute("p", 2), sync()].concat());
    out.push(trace(&mut c));
    // A FETCH portal of a cursor that does not exist.
    c.send(&fetch("FETCH 2 FROM nope", &[1]));
    out.push(trace(&mut c));
    assert!(c.query("ROLLBACK").error.is_none());
    assert_eq!(c.query("SELECT 'usable'").rows[0][0].as_deref(), Some("usable"));
    out
}

/// An Execute with a row limit on a FETCH portal (pgjdbc's fetch size on a
/// cursor, psycopg's named cursors with itersize): at most that many rows,
/// then PortalSuspended, the rest at the next Execute, and the tags, answered
/// as PostgreSQL 15 answers them (run side by side).
#[test]
fn fetch_with_a_row_limit_matches_postgres_15() {
    use common::pg15::Pg15;
    let pg_dir = tempfile::tempdir().unwrap();
    let pg = Pg15::start(&pg_dir.path().join("pg"));
    let srv = Server::start_temp(&[]);
    let want = fetch_limit_trace(pg.port);
    let got = fetch_limit_trace(srv.port);
    assert_eq!(got, want);
    // The traces say what they should (not only that both servers agree).
    assert_eq!(want[0], v(&["1", "2", "1", "2", "s", "3", "4", "s", "C:FETCH 0", "Z:T"]));
}

/// psql's FETCH_COUNT reads a result through a cursor (DECLARE, FETCH
/// FORWARD n, CLOSE) and prints every row.
#[test]
fn psql_fetch_count_reads_through_a_cursor() {
    let srv = Server::start_temp(&[]);
    let out = srv.psql_tcp(&["-A", "-t", "-v", "FETCH_COUNT=100", "-c", "SELECT g FROM generate_series(1, 1050) g"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let got: Vec<&str> = text.lines().collect();
    assert_eq!((got.len(), got[0], got[1049]), (1050, "1", "1050"));
}
