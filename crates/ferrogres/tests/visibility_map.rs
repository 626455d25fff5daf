//! The visibility map through the server (issue 20): a second VACUUM of an
//! unchanged table reads no heap page and keeps pg_class.reltuples as PostgreSQL
//! 15 keeps it; after kill -9, the deletes whose map clears were only in memory
//! are still seen by the next VACUUM (redo cleared the bits), so it removes them
//! and counts what PostgreSQL 15 counts; pg_class.relallvisible as PostgreSQL 15
//! stores it (VACUUM, ANALYZE, TRUNCATE). The engine-level checks of every marked
//! page are in crates/engine/tests/visibility_map.rs.

mod common;
use common::pg15::Pg15;
use common::server::{run_with_stdin, Server};
use std::process::Command;

/// `script` run by psql (`-At`, errors in the output) through `cmd`.
fn run(mut cmd: Command, script: &str) -> String {
    cmd.args(["-X", "-At", "-v", "ON_ERROR_STOP=0", "-d", "postgres"]);
    let (out, err) = run_with_stdin(cmd, script);
    format!("{out}{err}")
}

const SETUP: &str = "\\set VERBOSITY terse
CREATE TABLE vm_t (id int, v text);
INSERT INTO vm_t SELECT g, repeat('x', 100) FROM generate_series(1, 20000) g;
VACUUM vm_t;
SELECT relpages > 100, reltuples, relallvisible = relpages FROM pg_class WHERE relname = 'vm_t';
VACUUM vm_t;
SELECT reltuples, relallvisible = relpages FROM pg_class WHERE relname = 'vm_t';
CHECKPOINT;
DELETE FROM vm_t WHERE id % 10 = 0;
";

const AFTER: &str = "\\set VERBOSITY terse
SELECT relallvisible = relpages FROM pg_class WHERE relname = 'vm_t';
VACUUM vm_t;
SELECT reltuples, relallvisible = relpages FROM pg_class WHERE relname = 'vm_t';
SELECT count(*), sum(id) FROM vm_t;
ANALYZE vm_t;
SELECT reltuples, relallvisible = relpages FROM pg_class WHERE relname = 'vm_t';
TRUNCATE vm_t;
SELECT relallvisible FROM pg_class WHERE relname = 'vm_t';
";

/// Whether `table` has a `_vm` file in a database directory under `data`.
fn has_vm_file(cmd: Command, data: &std::path::Path, table: &str) -> bool {
    let node = run(cmd, &format!("SELECT relfilenode FROM pg_class WHERE relname = '{table}'"));
    std::fs::read_dir(data.join("base")).unwrap().flatten().any(|db| db.path().join(format!("{}_vm", node.trim())).exists())
}

#[test]
fn vacuum_skips_all_visible_pages_and_redo_clears_bits_as_postgres_15_counts() {
    let pg_dir = tempfile::tempdir().unwrap();
    let pg = Pg15::start_with(&pg_dir.path().join("pg"), "-c autovacuum=off");
    let dir = tempfile::tempdir().unwrap();
    let mut srv = Server::start_with(dir.path(), &["-c", "autovacuum=off"]);

    let want = run(pg.cmd("psql"), SETUP);
    let got = run(srv.cmd("psql"), SETUP);
    assert_eq!(got, want);
    assert!(want.contains("t|20000|t\nVACUUM\n20000|t\n"), "{want}");
    assert!(has_vm_file(srv.cmd("psql"), &dir.path().join("data"), "vm_t"), "the _vm fork is a file as PostgreSQL names it");
    // The second VACUUM read no heap page: the visibility map skipped them all.
    let log = srv.log();
    let second = log.lines().filter(|l| l.contains("INFO:  vacuuming relation")).count();
    assert_eq!(second, 0, "VACUUM without VERBOSE logs nothing");
    assert_eq!(run(srv.cmd("psql"), "VACUUM (VERBOSE) vm_t"), "VACUUM\n");
    let log = srv.log();
    let line = log.lines().rfind(|l| l.contains("INFO:  vacuuming relation")).unwrap();
    assert!(line.contains("pages: 0 scanned, ") && line.contains(" skipped using visibility map"), "{line}");

    // kill -9: the DELETE's map clears were in memory only (the map and heap
    // pages on disk, from the CHECKPOINT, still have every bit set).
    srv.signal(libc::SIGKILL);
    let srv = Server::start_with(dir.path(), &["-c", "autovacuum=off"]);
    let want = run(pg.cmd("psql"), AFTER);
    let got = run(srv.cmd("psql"), AFTER);
    assert_eq!(got, want);
    assert_eq!(want, "t\nVACUUM\n18000|t\n18000|180000000\nANALYZE\n18000|t\nTRUNCATE TABLE\n0\n");
}
