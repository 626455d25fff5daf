//! The per-backend catalog cache and per-object plan invalidation, through a
//! real server and real psql sessions: a plan-cache miss on a warm cache scans
//! no catalog heap (`ferrogres_catalog_scans()`); DDL on one table invalidates
//! another session's plans on it and not its plans on other tables
//! (`ferrogres_plan_analyses()`); a session that waited for ALTER TABLE's lock
//! sees the altered table; a rolled-back DDL leaves no stale entry; a reader
//! that fell more than the queue's length behind resets and answers right.

mod common;
use common::server::Server;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdout, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// An interactive psql session: one backend, so its counters are one backend's.
struct Psql {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl Psql {
    fn start(srv: &Server) -> Psql {
        let mut child = srv
            .cmd("psql")
            .args(["-X", "-At", "-v", "ON_ERROR_STOP=0", "-d", "postgres"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("psql (the PostgreSQL client) must be installed");
        let out: ChildStdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines() {
                if tx.send(l.unwrap()).is_err() {
                    break;
                }
            }
        });
        let mut p = Psql { child, lines };
        // The marker query's plan is cached from here on.
        p.collect();
        p
    }

    fn send(&mut self, sql: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        stdin.write_all(sql.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Runs `sql` and returns its output lines, up to a marker line.
    fn run(&mut self, sql: &str) -> Vec<String> {
        self.send(sql);
        self.collect()
    }

    /// The output lines up to a marker line sent now.
    fn collect(&mut self) -> Vec<String> {
        self.send("SELECT '--done--';");
        let mut out = Vec::new();
        loop {
            let l = self.lines.recv_timeout(Duration::from_secs(60)).expect("psql output");
            if l == "--done--" {
                return out;
            }
            out.push(l);
        }
    }

    fn number(&mut self, sql: &str) -> i64 {
        let out = self.run(sql);
        assert_eq!(out.len(), 1, "{sql}: {out:?}");
        out[0].parse().unwrap_or_else(|_| panic!("{sql}: {out:?}"))
    }

    fn scans(&mut self) -> i64 {
        self.number("SELECT ferrogres_catalog_scans();")
    }

    fn analyses(&mut self) -> i64 {
        self.number("SELECT ferrogres_plan_analyses();")
    }

    fn finish(mut self) {
        drop(self.child.stdin.take());
        assert!(self.child.wait().unwrap().success());
    }
}

fn setup(srv: &Server) {
    srv.sql_ok(
        "CREATE TABLE a (id int PRIMARY KEY, v text, n int DEFAULT 7 CHECK (n > 0));
         INSERT INTO a VALUES (1, 'one'), (2, 'two');
         CREATE TABLE b (id int PRIMARY KEY, w text);
         INSERT INTO b VALUES (1, 'uno');",
    );
}

#[test]
fn a_plan_cache_miss_on_a_warm_cache_scans_no_catalog() {
    let srv = Server::start_temp(&[]);
    setup(&srv);
    let mut s = Psql::start(&srv);
    let cold = s.scans();
    assert_eq!(s.run("SELECT v FROM a WHERE id = 1;"), ["one"]);
    let warm = s.scans();
    // The counter counts: the first lookup of `a` read the catalogs.
    assert!(warm > cold, "a cold lookup scanned no catalog ({cold} -> {warm})");
    // Other texts (plan-cache misses), DML with defaults and CHECK, and a
    // PREPARE after DEALLOCATE: analyzed again from the warm cache.
    assert_eq!(s.run("SELECT v FROM a WHERE id = 2;"), ["two"]);
    assert_eq!(s.run("INSERT INTO a (id, v) VALUES (3, 'three');"), ["INSERT 0 1"]);
    assert_eq!(s.run("UPDATE a SET v = 'drei' WHERE id = 3 AND n = 7;"), ["UPDATE 1"]);
    assert_eq!(s.run("PREPARE p AS SELECT v FROM a WHERE id = $1; EXECUTE p(3); DEALLOCATE p;"), ["PREPARE", "drei", "DEALLOCATE"]);
    assert_eq!(s.run("PREPARE p AS SELECT v FROM a WHERE id = $1; EXECUTE p(1);"), ["PREPARE", "one"]);
    assert_eq!(s.run("SELECT count(*) FROM a WHERE id > 0;"), ["3"]);
    let after = s.scans();
    assert_eq!(after, warm, "plan-cache misses on a warm cache scanned catalogs");
    // A CHECK from the cached descriptor still applies.
    let out = s.run("INSERT INTO a VALUES (4, 'x', -1);");
    assert!(out.is_empty(), "{out:?}");
    s.finish();
}

/// The analyses `sql` caused (the counter statements' own are taken out).
fn analyses_of(s: &mut Psql, sql: &str, expect: &[&str]) -> i64 {
    let n = s.analyses();
    assert_eq!(s.run(sql), expect, "{sql}");
    s.analyses() - n - 1
}

/// The catalog scans `sql` caused.
fn scans_of(s: &mut Psql, sql: &str, expect: &[&str]) -> i64 {
    let n = s.scans();
    assert_eq!(s.run(sql), expect, "{sql}");
    s.scans() - n
}

#[test]
fn ddl_on_one_table_invalidates_only_the_plans_on_it() {
    let srv = Server::start_temp(&[]);
    setup(&srv);
    srv.sql_ok("CREATE SCHEMA s2; CREATE TABLE s2.b (id int, w text); INSERT INTO s2.b VALUES (1, 'eins');");
    let mut s = Psql::start(&srv);
    let qa = "SELECT * FROM a WHERE id = 1;";
    let qb = "SELECT * FROM b WHERE id = 1;";
    assert_eq!(analyses_of(&mut s, qa, &["1|one|7"]), 1);
    assert_eq!(analyses_of(&mut s, qb, &["1|uno"]), 1);
    // Cached.
    assert_eq!(analyses_of(&mut s, qa, &["1|one|7"]), 0);
    assert_eq!(analyses_of(&mut s, qb, &["1|uno"]), 0);

    // Another session alters a: the plan on a goes, the plan on b and b's
    // descriptor stay.
    srv.sql_ok("ALTER TABLE a ADD COLUMN z int DEFAULT 5;");
    assert_eq!(analyses_of(&mut s, qb, &["1|uno"]), 0, "the plan on b was invalidated by DDL on a");
    assert_eq!(scans_of(&mut s, "SELECT w FROM b WHERE id = 1;", &["uno"]), 0, "b's descriptor was dropped by DDL on a");
    assert_eq!(analyses_of(&mut s, qa, &["1|one|7|5"]), 1, "the plan on a was kept after DDL on a");

    // TRUNCATE gives a a new relfilenode: the plan on a must read the new one.
    srv.sql_ok("TRUNCATE a; INSERT INTO a (id, v) VALUES (1, 'new');");
    assert_eq!(analyses_of(&mut s, qa, &["1|new|7|5"]), 1, "the plan on a was kept after TRUNCATE");
    assert_eq!(analyses_of(&mut s, qb, &["1|uno"]), 0, "the plan on b was invalidated by TRUNCATE of a");
    // CREATE INDEX on a: a's descriptor (its indexes) changed.
    srv.sql_ok("CREATE INDEX a_v ON a (v);");
    assert_eq!(analyses_of(&mut s, qa, &["1|new|7|5"]), 1, "the plan on a was kept after CREATE INDEX");
    assert_eq!(analyses_of(&mut s, qb, &["1|uno"]), 0, "the plan on b was invalidated by CREATE INDEX on a");

    // DROP of a: the plan on a fails as a fresh analysis would; b is untouched.
    srv.sql_ok("DROP TABLE a;");
    let out = s.run(qa);
    assert!(out.is_empty(), "{out:?}");
    assert_eq!(analyses_of(&mut s, qb, &["1|uno"]), 0, "the plan on b was invalidated by DROP of a");

    // SET in another session touches no plan of this one.
    srv.sql_ok("SET search_path = s2, public; SET TimeZone = 'UTC';");
    assert_eq!(analyses_of(&mut s, qb, &["1|uno"]), 0, "another session's SET invalidated this session's plan");
    // Its own SET search_path does: names resolve differently.
    s.run("SET search_path = s2, public;");
    assert_eq!(analyses_of(&mut s, qb, &["1|eins"]), 1);
    s.finish();
}

#[test]
fn a_session_that_waited_for_alter_table_sees_the_altered_table() {
    let srv = Server::start_temp(&[]);
    setup(&srv);
    let mut s = Psql::start(&srv);
    for _ in 0..2 {
        assert_eq!(s.run("SELECT * FROM a WHERE id = 1;"), ["1|one|7"]);
    }
    // Round 1: a new text, analyzed from the cached descriptor, waits in
    // analysis; round 2: the cached plan waits when its locks are taken.
    let rounds = [
        ("ALTER TABLE a ADD COLUMN z int DEFAULT 5;", "SELECT * FROM a WHERE id = 2;", "2|two|7|5"),
        ("ALTER TABLE a DROP COLUMN n;", "SELECT * FROM a WHERE id = 1;", "1|one|5"),
    ];
    for (alter, query, expect) in rounds {
        let mut ddl = Psql::start(&srv);
        assert_eq!(ddl.run(&format!("BEGIN; {alter}")), ["BEGIN", "ALTER TABLE"]);
        s.send(query);
        let mut waited = false;
        for _ in 0..1500 {
            if srv.sql_ok("SELECT count(*) FROM pg_locks WHERE NOT granted").trim() != "0" {
                waited = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(waited, "{query} did not wait for the ALTER's lock");
        assert_eq!(ddl.run("COMMIT;"), ["COMMIT"]);
        assert_eq!(s.collect(), [expect]);
        ddl.finish();
    }
    s.finish();
}

#[test]
fn rolled_back_ddl_leaves_no_stale_entry() {
    let srv = Server::start_temp(&[]);
    setup(&srv);
    let mut s = Psql::start(&srv);
    assert_eq!(s.run("SELECT * FROM a WHERE id = 1;"), ["1|one|7"]);
    assert_eq!(
        s.run("BEGIN; ALTER TABLE a ADD COLUMN z int DEFAULT 5; SELECT * FROM a WHERE id = 1;"),
        ["BEGIN", "ALTER TABLE", "1|one|7|5"]
    );
    assert_eq!(s.run("SELECT * FROM a WHERE id = 2;"), ["2|two|7|5"]);
    assert_eq!(s.run("ROLLBACK;"), ["ROLLBACK"]);
    assert_eq!(s.run("SELECT * FROM a WHERE id = 1;"), ["1|one|7"]);
    assert_eq!(s.run("SELECT * FROM a WHERE id = 2;"), ["2|two|7"]);
    // A savepoint rolled back: the same.
    assert_eq!(
        s.run("BEGIN; SAVEPOINT sp; ALTER TABLE a DROP COLUMN v; SELECT * FROM a WHERE id = 1; ROLLBACK TO sp; SELECT * FROM a WHERE id = 1; COMMIT;"),
        ["BEGIN", "SAVEPOINT", "ALTER TABLE", "1|7", "ROLLBACK", "1|one|7", "COMMIT"]
    );
    // Another session saw nothing of it either.
    assert_eq!(srv.sql_ok("SELECT * FROM a WHERE id = 1").trim(), "1|one|7");
    s.finish();
}

#[test]
fn a_reader_more_than_the_queue_behind_resets_and_answers_right() {
    let srv = Server::start_temp(&[]);
    setup(&srv);
    srv.sql_ok("CREATE TABLE c (k int); INSERT INTO c VALUES (9);");
    let mut s = Psql::start(&srv);
    for _ in 0..2 {
        assert_eq!(s.run("SELECT * FROM a WHERE id = 1;"), ["1|one|7"]);
        assert_eq!(s.run("SELECT * FROM c;"), ["9"]);
    }
    assert_eq!(analyses_of(&mut s, "SELECT * FROM c;", &["9"]), 0);
    // Another session: one change of a, then more than 4096 messages about b
    // (each statement is a transaction sending at least one).
    let mut script = String::from("ALTER TABLE a ADD COLUMN z int DEFAULT 5;\n");
    for i in 0..4200 {
        script.push_str(&format!("ALTER TABLE b ALTER COLUMN w SET DEFAULT 'd{i}';\n"));
    }
    let file = srv.dir.join("flood.sql");
    std::fs::write(&file, script).unwrap();
    let out = srv.cmd("psql").args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", "postgres", "-f"]).arg(&file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Reset: every entry and plan went, even c's, which no message named (and
    // the marker query's of `Psql::run`, analyzed again after the counter
    // statement).
    assert_eq!(analyses_of(&mut s, "SELECT * FROM c;", &["9"]), 2, "the reader did not reset");
    assert_eq!(s.run("SELECT * FROM a WHERE id = 1;"), ["1|one|7|5"]);
    assert_eq!(s.run("INSERT INTO b (id) VALUES (2) RETURNING w;"), ["d4199", "INSERT 0 1"]);
    s.finish();
}

/// REINDEX writes only the index's pg_class row, but the table's cached
/// descriptor and plans embed the index's file: a session with both warm must
/// insert into the new file, or its rows are missing from the index.
#[test]
fn reindex_in_another_session_moves_cached_plans_to_the_new_index_file() {
    let srv = Server::start_temp(&[]);
    setup(&srv);
    srv.sql_ok("CREATE INDEX a_v ON a (v); CREATE INDEX a_h ON a USING hash (n);");
    let mut s = Psql::start(&srv);
    // Warm: the descriptor of `a` and a cached INSERT plan.
    assert_eq!(s.run("INSERT INTO a (id, v, n) VALUES (10, 'ten', 10);"), ["INSERT 0 1"]);
    srv.sql_ok("REINDEX TABLE a;");
    assert_eq!(s.run("INSERT INTO a (id, v, n) VALUES (11, 'eleven', 11);"), ["INSERT 0 1"]);
    assert_eq!(s.run("INSERT INTO a (id, v, n) VALUES (12, 'twelve', 12);"), ["INSERT 0 1"]);
    // Through each index (a fresh session plans the lookups by index).
    let (out, err) = srv.sql(
        "SET enable_seqscan = off; SELECT id FROM a WHERE id = 11; SELECT id FROM a WHERE v = 'twelve'; SELECT id FROM a WHERE n = 12;",
    );
    assert_eq!(err, "");
    assert_eq!(out, "SET\n11\n12\n12\n", "rows inserted after REINDEX are missing from an index");
    s.finish();
}

/// pg_database is read through the cache by privilege checks and per-row
/// functions: a warm `has_database_privilege` over many rows scans no
/// catalog, and a GRANT or REVOKE in another session is seen at the next
/// statement.
#[test]
fn database_privileges_come_from_the_cache_and_follow_grants() {
    let srv = Server::start_temp(&[]);
    srv.sql_ok("CREATE ROLE u LOGIN; CREATE DATABASE other;");
    let mut s = Psql::start(&srv);
    let q = "SELECT count(*) FILTER (WHERE has_database_privilege('u', 'other', 'CREATE')) FROM generate_series(1, 500);";
    assert_eq!(s.run(q), ["0"]);
    assert_eq!(scans_of(&mut s, q, &["0"]), 0, "a warm has_database_privilege scanned catalogs");
    let mut t = Psql::start(&srv);
    assert_eq!(t.run("GRANT CREATE ON DATABASE other TO u;"), ["GRANT"]);
    assert_eq!(s.run(q), ["500"]);
    assert_eq!(t.run("REVOKE CREATE ON DATABASE other FROM u;"), ["REVOKE"]);
    assert_eq!(s.run(q), ["0"]);
    t.finish();
    s.finish();
}
