//! PostgreSQL 15's own isolation tests (`tests/pg15/isolation`, see
//! its ORIGIN.md) run against the `ferrogres` binary by PostgreSQL's
//! `pg_isolation_regress` (which drives `isolationtester`). `PASSING` lists the
//! specs that pass; a failure prints `regression.diffs`.
//!
//! pg_isolation_regress comes with PostgreSQL 15's client package (`.ci/run`
//! installs it); without it the test fails.

mod common;
use common::server::Server;
use std::path::Path;
use std::process::Command;

const PG_ISOLATION_REGRESS: &str = "/usr/lib/postgresql/15/lib/pgxs/src/test/isolation/pg_isolation_regress";
const SPECS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/pg15/isolation");

/// Specs that pass, in schedule order.
const PASSING: &[&str] = &[
    "deadlock-simple",
    "deadlock-hard",
    "deadlock-soft",
    "nowait",
    "nowait-2",
    "nowait-3",
    "skip-locked",
    "skip-locked-2",
    "tuplelock-conflict",
    "delete-abort-savept",
    "lock-update-delete",
    "tuplelock-update",
    "update-locked-tuple",
    "lock-committed-update",
    "lock-update-traversal",
];

#[test]
fn pg15_isolation_specs() {
    run_specs(PASSING);
}

/// The specs of INSERT ... ON CONFLICT and MERGE (`crate::upsert`, `crate::merge`) that pass.
const DML_PASSING: &[&str] = &[
    "insert-conflict-do-nothing",
    "insert-conflict-do-update",
    "insert-conflict-do-nothing-2",
    "merge-insert-update",
];

#[test]
fn pg15_isolation_specs_upsert_and_merge() {
    run_specs(DML_PASSING);
}

/// The specs of ALTER TABLE and DDL lock levels and of foreign keys that pass
/// (issue 18, item 15): ADD FOREIGN KEY ... NOT VALID under
/// ShareRowExclusiveLock (alter-table-2), VALIDATE CONSTRAINT under
/// ShareUpdateExclusiveLock (alter-table-1), ALTER SEQUENCE against nextval
/// (sequence-ddl). alter-table-3 needs triggers and PL/pgSQL, alter-table-4
/// inheritance, create-trigger triggers, truncate-conflict and vacuum-conflict
/// CREATE ROLE, vacuum-skip-locked and vacuum-concurrent-drop partitioned
/// tables, drop-index-concurrently-1 DROP INDEX CONCURRENTLY: not done yet.
const DDL_LOCK_PASSING: &[&str] = &["alter-table-1", "alter-table-2", "sequence-ddl", "fk-contention", "fk-deadlock", "fk-deadlock2", "lock-committed-keyupdate"];

#[test]
fn pg15_isolation_specs_ddl_lock_levels() {
    run_specs(DDL_LOCK_PASSING);
}

/// The specs of SERIALIZABLE (issue 21: SSI, `lmgr::predicate`) that pass.
/// Not here yet: read-write-unique-3 (needs the `void` type), ri-trigger
/// (PL/pgSQL triggers), partial-index (partial indexes), predicate-hash
/// (enable_bitmapscan and friends), serializable-parallel* (parallel query,
/// CREATE TABLE AS), predicate-gin / predicate-gist (those index methods),
/// prepared-transactions (two-phase commit), fk-partitioned-2 and
/// partition-key-update-3 (partitioned tables).
const SERIALIZABLE_PASSING: &[&str] = &[
    "simple-write-skew",
    "receipt-report",
    "temporal-range-integrity",
    "project-manager",
    "classroom-scheduling",
    "total-cash",
    "referential-integrity",
    "read-write-unique",
    "read-write-unique-2",
    "read-write-unique-4",
    "two-ids",
    "multiple-row-versions",
    "index-only-scan",
    "predicate-lock-hot-tuple",
    "update-conflict-out",
    "read-only-anomaly-2",
    "read-only-anomaly-3",
];

#[test]
fn pg15_isolation_specs_serializable() {
    run_specs(SERIALIZABLE_PASSING);
}

fn run_specs(specs: &[&str]) {
    assert!(Path::new(PG_ISOLATION_REGRESS).exists(), "{PG_ISOLATION_REGRESS} is missing: install postgresql-client-15 (.ci/run does)");
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start(tmp.path());
    let out = tmp.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let status = Command::new(PG_ISOLATION_REGRESS)
        .args(["--use-existing", "--dbname=postgres", "--user=postgres"])
        .arg(format!("--host={}", server.dir.display()))
        .arg(format!("--port={}", server.port))
        .arg(format!("--inputdir={SPECS}"))
        .arg(format!("--outputdir={}", out.display()))
        .args(specs)
        .env_remove("PGOPTIONS")
        .env_remove("PGSERVICE")
        .status()
        .unwrap();
    if !status.success() {
        let diffs = std::fs::read_to_string(out.join("regression.diffs")).unwrap_or_default();
        panic!("isolation specs failed:\n{diffs}");
    }
}
