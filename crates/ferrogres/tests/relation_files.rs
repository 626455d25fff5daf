//! Removal of relation files (engine `txn::pending_delete`): the files of a
//! dropped, truncated or rewritten relation go when its transaction commits and
//! stay after ROLLBACK; files created by a rolled-back transaction go; after a
//! crash (kill -9), the files no committed pg_class row references are removed
//! at startup.

mod common;
use common::server::Server;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// The main-fork file of relfilenode `n` (database `postgres`, OID 5).
fn file(dir: &Path, n: &str) -> PathBuf {
    dir.join("data/base/5").join(n.trim())
}

fn ok(srv: &Server, sql: &str) -> String {
    let (out, err) = srv.sql(sql);
    assert_eq!(err, "", "{sql}");
    out
}

/// Relfilenodes of the relation `name` and of its TOAST relation (0 if none).
fn filenodes(srv: &Server, name: &str) -> (String, String) {
    let out = ok(srv, &format!("SELECT relfilenode || ' ' || reltoastrelid FROM pg_class WHERE relname = '{name}'"));
    let mut it = out.split_whitespace();
    (it.next().expect("relation exists").to_string(), it.next().unwrap_or("0").to_string())
}

#[test]
fn dropped_relation_files_are_removed_at_commit_kept_at_rollback_and_after_crash() {
    let dir = tempfile::tempdir().unwrap();
    let mut srv = Server::start(dir.path());
    let d = dir.path();

    // DROP TABLE: ROLLBACK keeps the files, COMMIT removes table, TOAST and index files.
    ok(&srv, "CREATE TABLE d (a int PRIMARY KEY, b text); INSERT INTO d SELECT g, repeat('x', g) FROM generate_series(1, 500) g");
    let (heap, toast) = filenodes(&srv, "d");
    let (ix, _) = filenodes(&srv, "d_pkey");
    assert_ne!(toast, "0");
    for n in [&heap, &toast, &ix] {
        assert!(file(d, n).exists(), "{n}");
    }
    ok(&srv, "BEGIN; DROP TABLE d; ROLLBACK");
    for n in [&heap, &toast, &ix] {
        assert!(file(d, n).exists(), "file {n} removed by a rolled-back DROP");
    }
    assert_eq!(ok(&srv, "SELECT count(*) FROM d"), "500\n");
    ok(&srv, "DROP TABLE d");
    for n in [&heap, &toast, &ix] {
        assert!(!file(d, n).exists(), "file {n} of a dropped table is still there");
    }

    // A table created by a rolled-back transaction: its file goes with it.
    let out = ok(&srv, "BEGIN; CREATE TABLE r (a int); SELECT relfilenode FROM pg_class WHERE relname = 'r'; ROLLBACK");
    let r = out.lines().find(|l| l.trim().parse::<u32>().is_ok()).expect("relfilenode").to_string();
    assert!(!file(d, &r).exists(), "file {r} of a rolled-back CREATE TABLE is still there");

    // TRUNCATE and a table rewrite (ALTER COLUMN TYPE): the old files go at commit.
    ok(&srv, "CREATE TABLE t (a int); CREATE INDEX t_a ON t (a); INSERT INTO t VALUES (1), (2)");
    let (old, _) = filenodes(&srv, "t");
    let (old_ix, _) = filenodes(&srv, "t_a");
    ok(&srv, "TRUNCATE t");
    assert!(!file(d, &old).exists() && !file(d, &old_ix).exists());
    let (old, _) = filenodes(&srv, "t");
    ok(&srv, "INSERT INTO t VALUES (3); ALTER TABLE t ALTER COLUMN a TYPE bigint");
    assert!(!file(d, &old).exists());
    let (new, _) = filenodes(&srv, "t");
    assert!(file(d, &new).exists());
    assert_eq!(ok(&srv, "SELECT a FROM t WHERE a = 3"), "3\n");

    // Crash with a transaction open that created a table: its file is an orphan,
    // removed at the next start. So is a file no pg_class row names (what a
    // crash between a commit that dropped a relation and the unlink leaves).
    let orphan = file(d, "999999");
    std::fs::write(&orphan, vec![0u8; 8192]).unwrap();
    let mut open = srv.psql_cmd().args(["-At", "-v", "ON_ERROR_STOP=1"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut stdin = open.stdin.take().unwrap();
    stdin.write_all(b"BEGIN;\nCREATE TABLE c (a int);\nINSERT INTO c VALUES (1);\nSELECT 'fn=' || relfilenode FROM pg_class WHERE relname = 'c';\n").unwrap();
    stdin.flush().unwrap();
    let mut stdout = open.stdout.take().unwrap();
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !String::from_utf8_lossy(&seen).contains('\n') || !String::from_utf8_lossy(&seen).contains("fn=") {
        let mut buf = [0u8; 256];
        let n = stdout.read(&mut buf).unwrap();
        assert!(n > 0 && Instant::now() < deadline, "psql ended: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    let seen = String::from_utf8_lossy(&seen).into_owned();
    let c = seen.split("fn=").nth(1).and_then(|s| s.lines().next()).unwrap().trim().to_string();
    assert!(file(d, &c).exists());
    srv.signal(libc::SIGKILL);
    drop(stdin);
    let _ = open.wait();
    let srv = Server::start(d);
    assert!(!file(d, &c).exists(), "file {c} of a table created by a transaction cut by the crash is still there");
    assert!(!orphan.exists(), "orphan file still there after restart");
    assert!(file(d, &new).exists(), "a live table's file was removed");
    assert_eq!(ok(&srv, "SELECT a FROM t ORDER BY a"), "3\n");
}

/// CHECKPOINT writes the dirty pages: with the background writer off and no
/// timed checkpoint, a new table's file holds only the zeroes of its
/// extension until CHECKPOINT writes the rows into it.
#[test]
fn checkpoint_writes_dirty_pages_to_the_relation_files() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start_with(dir.path(), &["-c", "bgwriter_lru_maxpages=0", "-c", "checkpoint_timeout=1h"]);
    ok(&srv, "CREATE TABLE c (a int, b text); INSERT INTO c SELECT g, repeat('x', 50) FROM generate_series(1, 2000) g");
    let (heap, _) = filenodes(&srv, "c");
    let nonzero = || std::fs::read(file(dir.path(), &heap)).unwrap().iter().filter(|b| **b != 0).count();
    assert_eq!(nonzero(), 0, "rows reached the file before CHECKPOINT");
    assert_eq!(ok(&srv, "CHECKPOINT"), "CHECKPOINT\n");
    assert!(nonzero() > 2000 * 50, "CHECKPOINT did not write the table's pages");
    // Inside a transaction block too, as in PostgreSQL.
    assert_eq!(ok(&srv, "BEGIN; CHECKPOINT; COMMIT"), "BEGIN\nCHECKPOINT\nCOMMIT\n");
}
