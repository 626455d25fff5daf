//! COPY FROM in batches (heap multi-insert, then each row's index entries),
//! and INSERT ... SELECT (row by row, as in PostgreSQL) beside it, through psql, side by side with PostgreSQL 15: the same
//! script gives the same output on both (rows, index lookups, errors with
//! their DETAIL and CONTEXT lines): tables with indexes, a unique violation in
//! the middle of a batch (nothing inserted; CONTEXT names the line only), a
//! CHECK failure (CONTEXT with the line's text), and COPY FREEZE's rules. Then
//! COPY FREEZE's visibility with two sessions: frozen rows are seen by a
//! REPEATABLE READ snapshot older than their transaction, unfrozen ones are not
//! (ignored for now: see its comment).

mod common;
use common::client::Client;
use common::pg15::Pg15;
use common::server::{run_with_stdin, Server};
use std::process::Command;

/// Runs `script` through `psql -f -` against `cmd`'s server; stdout and stderr.
fn psql_script(mut cmd: Command, script: &str) -> String {
    cmd.args(["-X", "-At", "-q", "-v", "ON_ERROR_STOP=0", "-d", "postgres", "-f", "-"]);
    let (out, err) = run_with_stdin(cmd, script);
    // stderr after stdout: psql writes each to its own stream, so their
    // interleaving is not stable; each stream's order is.
    format!("{out}--- stderr ---\n{err}")
}

fn script() -> String {
    let mut s = String::new();
    s.push_str("CREATE TABLE t (a int PRIMARY KEY, b text, c numeric);\nCREATE INDEX t_b ON t (b);\nCOPY t FROM stdin;\n");
    // 3,000 rows: three batches of 1,000 (and more than one 64 kB flush).
    for i in 1..=3000 {
        s.push_str(&format!("{i}\trow {i}\t{}.{}\n", i * 7, i % 100));
    }
    s.push_str("\\.\n");
    s.push_str(
        "SELECT count(*), sum(a), sum(c), count(DISTINCT b) FROM t;
SELECT a, b, c FROM t WHERE a = 2345;
SELECT a FROM t WHERE b = 'row 1717';
SELECT count(*) FROM t WHERE a BETWEEN 990 AND 1010;
CREATE TABLE t2 (a int PRIMARY KEY, b text, c numeric);
CREATE INDEX t2_b ON t2 (b);
INSERT INTO t2 SELECT a, b, c FROM t WHERE a % 3 <> 0;
SELECT count(*), sum(a), sum(c) FROM t2;
SELECT b FROM t2 WHERE a = 2000;
SELECT a FROM t2 WHERE b = 'row 1001';
SELECT count(*) FROM t2 WHERE a = 999;
CREATE TABLE u (a int PRIMARY KEY, b text);
COPY u FROM stdin;
",
    );
    // Line 1500 repeats line 200's key: the violation is in the second batch.
    for i in 1..=2000 {
        let k = if i == 1500 { 200 } else { i };
        s.push_str(&format!("{k}\tu{i}\n"));
    }
    s.push_str("\\.\n");
    s.push_str(
        "SELECT count(*) FROM u;
INSERT INTO u SELECT g, 'x' FROM generate_series(1, 2500) g UNION ALL SELECT 700, 'dup';
SELECT count(*) FROM u;
INSERT INTO u SELECT g, 'y' FROM generate_series(1, 2500) g;
SELECT count(*), min(a), max(a) FROM u;
SELECT b FROM u WHERE a = 2222;
CREATE TABLE ck (a int CHECK (a > 0), b text NOT NULL);
COPY ck FROM stdin;
1\tx
2\ty
-3\tz
\\.
COPY ck FROM stdin;
1\tx
2\t\\N
\\.
SELECT count(*) FROM ck;
CREATE TABLE fz (a int);
COPY fz FROM stdin (FREEZE);
1
\\.
BEGIN;
CREATE TABLE fz2 (a int PRIMARY KEY);
COPY fz2 FROM stdin (FREEZE);
1
2
3
\\.
SELECT count(*), sum(a) FROM fz2;
SELECT a FROM fz2 WHERE a = 2;
COMMIT;
SELECT count(*), sum(a) FROM fz2;
BEGIN;
TRUNCATE fz;
SAVEPOINT s;
COPY fz FROM stdin (FREEZE);
1
\\.
ROLLBACK;
BEGIN;
TRUNCATE fz;
COPY fz FROM stdin (FREEZE);
4
5
\\.
COMMIT;
SELECT count(*), sum(a) FROM fz;
",
    );
    s
}

#[test]
fn copy_and_insert_select_in_batches_match_postgres() {
    let srv = Server::start_temp(&[]);
    let pgdir = tempfile::tempdir().unwrap();
    let pg = Pg15::start(&pgdir.path().join("pg"));
    let script = script();
    let ours = psql_script(srv.cmd("psql"), &script);
    let theirs = psql_script(pg.cmd("psql"), &script);
    assert_eq!(ours, theirs, "ferrogres and PostgreSQL 15 differ");
    // What the comparison guards, spelled out.
    for want in [
        "3000|4501500|31512106.50|3000\n",
        "2345|row 2345|16415.45\n",
        "2000|3000000|21001071.00\n",
        "ERROR:  duplicate key value violates unique constraint \"u_pkey\"\nDETAIL:  Key (a)=(200) already exists.\nCONTEXT:  COPY u, line 1500\n",
        "ERROR:  duplicate key value violates unique constraint \"u_pkey\"\nDETAIL:  Key (a)=(700) already exists.\n",
        "2500|1|2500\n",
        "CONTEXT:  COPY ck, line 3: \"-3\tz\"\n",
        "ERROR:  cannot perform COPY FREEZE because the table was not created or truncated in the current subtransaction\n",
        "3|6\n",
        "2|9\n",
    ] {
        assert!(ours.contains(want), "{want:?} missing from:\n{ours}");
    }
    assert_eq!(ours.matches("cannot perform COPY FREEZE").count(), 2, "{ours}");
}

/// PostgreSQL's documented exception to MVCC: rows COPY FREEZE loaded are seen by
/// every snapshot once their transaction commits, even one taken before it.
fn freeze_visibility(port: u16, dir: &std::path::Path) -> (String, String) {
    use std::os::unix::fs::PermissionsExt;
    let data = dir.join("f.data");
    let rows: String = (1..=1000).map(|i| format!("{i}\tn{i}\n")).collect();
    std::fs::write(&data, rows).unwrap();
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut a = Client::connect(port);
    let mut b = Client::connect(port);
    for q in ["CREATE TABLE f (a int, b text)", "CREATE TABLE o (x int)", "INSERT INTO f VALUES (0, 'old')"] {
        assert!(a.query(q).error.is_none(), "{q}");
    }
    let mut counts = Vec::new();
    for freeze in [true, false] {
        assert!(b.query("BEGIN ISOLATION LEVEL REPEATABLE READ").error.is_none());
        assert_eq!(b.query("SELECT count(*) FROM o").one(), "0");
        let opts = if freeze { " (FREEZE)" } else { "" };
        for q in ["BEGIN".to_string(), "TRUNCATE f".into(), format!("COPY f FROM '{}'{opts}", data.display()), "COMMIT".into()] {
            let r = a.query(&q);
            assert!(r.error.is_none(), "{q}: {:?}", r.error);
        }
        counts.push(b.query("SELECT count(*) FROM f").one());
        assert!(b.query("COMMIT").error.is_none());
        assert_eq!(a.query("SELECT count(*) FROM f").one(), "1000");
    }
    (counts[0].clone(), counts[1].clone())
}

/// The old REPEATABLE READ session finds TRUNCATE's new file because table
/// names and files are looked up with a catalog snapshot, as in PostgreSQL
/// (`crate::catcache::catalog_snapshot` of crates/sql; before, it looked them
/// up with its own snapshot and counted 0 in both cases), and counts the 1000
/// frozen rows there, as PostgreSQL does. The engine half (frozen tuples seen
/// by an older snapshot) is tested in crates/engine/tests/heap_multi_insert.rs.
#[test]
fn copy_freeze_rows_are_visible_to_older_snapshots_as_in_postgres() {
    let srv = Server::start_temp(&[]);
    let dir = tempfile::tempdir().unwrap();
    let ours = freeze_visibility(srv.port, dir.path());
    let pgdir = tempfile::tempdir().unwrap();
    let pg = Pg15::start(&pgdir.path().join("pg"));
    let dir2 = tempfile::tempdir().unwrap();
    let theirs = freeze_visibility(pg.port, dir2.path());
    assert_eq!(theirs, ("1000".to_string(), "0".to_string()), "PostgreSQL's behaviour as documented");
    assert_eq!(ours, theirs);
}
