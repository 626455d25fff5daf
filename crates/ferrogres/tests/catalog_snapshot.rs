//! Relation lookups read the catalogs with a catalog snapshot (their latest
//! committed state), not with the transaction's snapshot, as PostgreSQL 15
//! does: a REPEATABLE READ transaction whose snapshot predates another
//! session's TRUNCATE, REINDEX or table rewrite reads the relation's new
//! files (it failed before with XX001 "could not read block 0 in file ...:
//! file does not exist"), sees a dropped or renamed table as gone and a new
//! column as there, while the rows it reads stay those its snapshot sees. A
//! READ COMMITTED statement that waited for the DDL's lock and a prepared
//! statement run after the DDL do the same. Every scenario runs on a real
//! PostgreSQL 15 and on ferrogres, and the answers of session A must be equal.

mod common;
use common::pg15::Pg15;
use common::server::Server;
use common::session_client::{ok, wait_blocked, Client, Reply};

/// The table every scenario starts from: `t (a int, b int)`, three rows, an
/// index on `a`.
const SETUP: &[&str] = &[
    "DROP TABLE IF EXISTS t",
    "DROP TABLE IF EXISTS t2",
    "DROP TABLE IF EXISTS n",
    "CREATE TABLE t (a int, b int)",
    "CREATE INDEX t_a ON t (a)",
    "INSERT INTO t SELECT g, g * 10 FROM generate_series(1, 3) g",
];

/// One answer as text: the rows (columns joined by `|`, rows by `;`) or the
/// error's SQLSTATE and message.
fn answer(r: &Reply) -> String {
    match &r.error {
        Some((code, msg, _)) => format!("ERROR {code}: {msg}"),
        None => r.rows.iter().map(|row| row.iter().map(|v| v.clone().unwrap_or_else(|| "NULL".into())).collect::<Vec<_>>().join("|")).collect::<Vec<_>>().join(";"),
    }
}

/// Session A begins (`begin`, then a statement that takes its snapshot and
/// touches no table), session B runs `ddl` and commits, then A runs `after`
/// and commits. Returns A's answers to `after` and to its COMMIT.
fn after_commit(port: u16, begin: &str, ddl: &str, after: &[&str]) -> Vec<String> {
    let mut a = Client::connect(port);
    let mut b = Client::connect(port);
    for s in SETUP {
        ok(&b.q(s));
    }
    ok(&a.q(begin));
    ok(&a.q("SELECT 1"));
    ok(&b.q(ddl));
    let mut got: Vec<String> = after.iter().map(|s| format!("{s} -> {}", answer(&a.q(s)))).collect();
    let commit = a.q("COMMIT");
    got.push(format!("COMMIT -> {} {:?}", answer(&commit), commit.tags));
    got
}

const RR: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ";

/// The REPEATABLE READ scenarios: (B's DDL, A's statements after it).
const RR_SCENARIOS: &[(&str, &[&str])] = &[
    ("TRUNCATE t", &["SELECT count(*) FROM t"]),
    ("TRUNCATE t", &["SET enable_seqscan = off", "SELECT a FROM t WHERE a = 2"]),
    ("TRUNCATE t", &["INSERT INTO t VALUES (9, 9)", "SELECT * FROM t ORDER BY a"]),
    ("TRUNCATE t", &["UPDATE t SET b = 0", "DELETE FROM t"]),
    ("ALTER TABLE t ALTER COLUMN b TYPE bigint", &["SELECT count(*) FROM t"]),
    ("ALTER TABLE t ALTER COLUMN b TYPE bigint", &["SET enable_seqscan = off", "SELECT a FROM t WHERE a = 2"]),
    ("ALTER TABLE t ALTER COLUMN b TYPE bigint", &["INSERT INTO t VALUES (9, 9)", "SELECT * FROM t ORDER BY a", "SELECT pg_typeof(b) FROM t"]),
    ("ALTER TABLE t ADD COLUMN c float8 DEFAULT random()", &["SELECT a, b FROM t ORDER BY a"]),
    ("REINDEX TABLE t", &["SET enable_seqscan = off", "SELECT a FROM t WHERE a = 2", "SELECT count(*) FROM t"]),
    ("REINDEX INDEX t_a", &["SET enable_seqscan = off", "SELECT a FROM t WHERE a = 3"]),
    ("CREATE INDEX t_b ON t (b)", &["SET enable_seqscan = off", "SELECT a FROM t WHERE b = 20"]),
    ("DROP TABLE t", &["SELECT count(*) FROM t"]),
    ("ALTER TABLE t RENAME TO t2", &["SELECT count(*) FROM t"]),
    ("ALTER TABLE t ADD COLUMN c int DEFAULT 7", &["SELECT * FROM t ORDER BY a"]),
    ("ALTER TABLE t ADD COLUMN c int", &["SELECT * FROM t ORDER BY a"]),
    ("ALTER TABLE t DROP COLUMN b", &["SELECT * FROM t ORDER BY a"]),
    ("CREATE TABLE n (x int)", &["SELECT count(*) FROM n", "SELECT count(*) FROM pg_class WHERE relname = 'n'"]),
    // DDL of A's own on the table B changed.
    ("TRUNCATE t", &["ALTER TABLE t ADD COLUMN d int", "SELECT * FROM t"]),
    ("ALTER TABLE t ALTER COLUMN b TYPE bigint", &["TRUNCATE t", "SELECT count(*) FROM t"]),
    ("TRUNCATE t", &["DROP TABLE t"]),
];

/// After another session's TRUNCATE, rewrite, REINDEX, DROP, RENAME or
/// ADD/DROP COLUMN, a REPEATABLE READ transaction that took its snapshot
/// before answers as on PostgreSQL 15 (TRUNCATE: 0 rows, the new empty file;
/// a rewrite: 0 rows, its copies are newer than the snapshot; REINDEX: the
/// rows through the new index; DROP and RENAME: 42P01; a new column is there).
#[test]
fn repeatable_read_after_another_sessions_ddl_as_postgresql_15() {
    let (tmp, fg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let pg = Pg15::start(&tmp.path().join("pg"));
    let server = Server::start(fg.path());
    for (ddl, after) in RR_SCENARIOS {
        let want = after_commit(pg.port, RR, ddl, after);
        let got = after_commit(server.port, RR, ddl, after);
        assert_eq!(got, want, "after {ddl}");
    }
    // What PostgreSQL answers, so that the comparison above means something.
    assert_eq!(after_commit(pg.port, RR, "TRUNCATE t", &["SELECT count(*) FROM t"])[0], "SELECT count(*) FROM t -> 0");
    assert_eq!(after_commit(pg.port, RR, "DROP TABLE t", &["SELECT 1 FROM t"])[0], "SELECT 1 FROM t -> ERROR 42P01: relation \"t\" does not exist");
}

/// SERIALIZABLE reads the catalogs the same way.
#[test]
fn serializable_after_another_sessions_rewrite_as_postgresql_15() {
    let (tmp, fg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let pg = Pg15::start(&tmp.path().join("pg"));
    let server = Server::start(fg.path());
    let begin = "BEGIN ISOLATION LEVEL SERIALIZABLE";
    for (ddl, after) in [
        ("TRUNCATE t", &["SELECT count(*) FROM t"][..]),
        ("ALTER TABLE t ALTER COLUMN b TYPE bigint", &["SELECT * FROM t", "INSERT INTO t VALUES (4, 40)"][..]),
        ("REINDEX TABLE t", &["SET enable_seqscan = off", "SELECT a FROM t WHERE a = 1"][..]),
    ] {
        let want = after_commit(pg.port, begin, ddl, after);
        let got = after_commit(server.port, begin, ddl, after);
        assert_eq!(got, want, "after {ddl}");
    }
}

/// A prepared statement whose plan was made before another session's DDL is
/// planned again (the plan named the old files) and answers as on
/// PostgreSQL 15, inside a REPEATABLE READ transaction that began before
/// the DDL and in READ COMMITTED.
fn prepared_after_ddl(port: u16, begin: &str, ddl: &str) -> Vec<String> {
    let mut a = Client::connect(port);
    let mut b = Client::connect(port);
    for s in SETUP {
        ok(&b.q(s));
    }
    ok(&a.q("SET enable_seqscan = off"));
    ok(&a.q("PREPARE p AS SELECT a, b FROM t WHERE a >= $1 ORDER BY a"));
    ok(&a.q("PREPARE c AS SELECT count(*) FROM t"));
    let mut got = vec![answer(&a.q("EXECUTE p(2)")), answer(&a.q("EXECUTE c"))];
    ok(&a.q(begin));
    ok(&a.q("SELECT 1"));
    ok(&b.q(ddl));
    got.push(answer(&a.q("EXECUTE p(2)")));
    got.push(answer(&a.q("EXECUTE c")));
    ok(&a.q("COMMIT"));
    got.push(answer(&a.q("EXECUTE p(1)")));
    got
}

#[test]
fn prepared_statements_after_another_sessions_ddl_as_postgresql_15() {
    let (tmp, fg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let pg = Pg15::start(&tmp.path().join("pg"));
    let server = Server::start(fg.path());
    for begin in [RR, "BEGIN"] {
        for ddl in ["TRUNCATE t", "ALTER TABLE t ALTER COLUMN b TYPE bigint", "REINDEX TABLE t", "ALTER TABLE t ADD COLUMN c int DEFAULT 7"] {
            let want = prepared_after_ddl(pg.port, begin, ddl);
            let got = prepared_after_ddl(server.port, begin, ddl);
            assert_eq!(got, want, "{begin}; {ddl}");
        }
    }
}

/// A READ COMMITTED statement that waits for the lock of another session's
/// DDL reads the table as the DDL left it once it commits: the name is
/// looked up again after the lock is granted, and the statement's snapshot
/// is taken after that.
fn waits_for_ddl(port: u16, ddl: &str, stmt: &str) -> (String, String) {
    let mut a = Client::connect(port);
    let mut b = Client::connect(port);
    let mut ctl = Client::connect(port);
    for s in SETUP {
        ok(&b.q(s));
    }
    ok(&a.q(stmt)); // planned (and cached) before the DDL
    ok(&b.q("BEGIN"));
    ok(&b.q(ddl));
    a.send(stmt);
    wait_blocked(&mut ctl, a.pid, &[b.pid]);
    ok(&b.q("COMMIT"));
    let first = answer(&a.reply());
    (first, answer(&a.q("SELECT * FROM t ORDER BY a")))
}

#[test]
fn read_committed_statement_that_waited_for_ddl_as_postgresql_15() {
    let (tmp, fg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let pg = Pg15::start(&tmp.path().join("pg"));
    let server = Server::start(fg.path());
    for ddl in ["TRUNCATE t", "ALTER TABLE t ALTER COLUMN b TYPE bigint", "ALTER TABLE t ADD COLUMN c int DEFAULT 5", "DROP TABLE t"] {
        for stmt in ["SELECT count(*) FROM t", "SELECT * FROM t ORDER BY a", "INSERT INTO t (a, b) VALUES (7, 70)"] {
            let want = waits_for_ddl(pg.port, ddl, stmt);
            let got = waits_for_ddl(server.port, ddl, stmt);
            assert_eq!(got, want, "{ddl}; {stmt}");
        }
    }
}
