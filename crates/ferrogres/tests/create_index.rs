//! CREATE INDEX by sort and bottom-up build (issue 20), through the real server
//! and psql: a million-row build with a small `maintenance_work_mem` keeps the
//! server's peak RSS growth under a stated bound (its sort spills to temporary
//! files, none left behind) and gives a working index; a kill -9 in the middle of
//! CREATE INDEX leaves, after recovery, no index (no catalog row, no file) and
//! the table intact, and the same CREATE INDEX then succeeds; `maintenance_work_mem`
//! is a setting with PostgreSQL's default; B-tree `fillfactor` is accepted with
//! PostgreSQL's bounds.

mod common;
use common::server::{hwm_kb, temp_files, Server};
use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

fn ok(srv: &Server, sql: &str) -> String {
    let (out, err) = srv.sql(sql);
    assert_eq!(err, "", "{sql}");
    out
}



/// Main-fork relation files of every database (segments included; the other
/// forks come and go with VACUUM).
fn relation_files(dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for db in std::fs::read_dir(dir.join("data/base")).unwrap() {
        let db = db.unwrap();
        if !db.file_type().unwrap().is_dir() || db.file_name() == "pgsql_tmp" {
            continue;
        }
        for f in std::fs::read_dir(db.path()).unwrap() {
            let name = f.unwrap().file_name().to_string_lossy().into_owned();
            if name.chars().all(|c| c.is_ascii_digit() || c == '.') {
                out.insert(format!("{}/{name}", db.file_name().to_string_lossy()));
            }
        }
    }
    out
}

/// The bound this test states: a CREATE INDEX over a million rows with
/// maintenance_work_mem = 1MB (and shared_buffers = 16MB) grows the server's peak
/// RSS by less than 48 MB.
const BOUND_KB: u64 = 48 * 1024;

#[test]
fn a_million_row_create_index_stays_within_maintenance_work_mem() {
    let dir = tempfile::tempdir().unwrap();
    // Small shared buffers: the index's new pages touch at most 16 MB of shared
    // memory, which counts in the RSS too.
    let args = ["-c", "shared_buffers=16MB"];
    let mut srv = Server::start_with(dir.path(), &args);
    ok(&srv, "CREATE TABLE big (id int, s text); INSERT INTO big SELECT (g::bigint * 7919) % 1000003, md5(g::text) FROM generate_series(1, 1000000) g;");
    // A fresh server: its peak RSS is not the load's.
    srv.signal(libc::SIGTERM);
    let srv = Server::start_with(dir.path(), &args);
    assert_eq!(ok(&srv, "SHOW maintenance_work_mem"), "64MB\n");
    ok(&srv, "SELECT count(*) FROM big");
    let before = hwm_kb(srv.pid());
    let t0 = Instant::now();
    ok(&srv, "SET maintenance_work_mem = '1MB'; CREATE INDEX big_s ON big (s)");
    let growth = hwm_kb(srv.pid()).saturating_sub(before);
    eprintln!("CREATE INDEX over 1M text keys, maintenance_work_mem 1MB: {:?}, peak RSS growth {growth} kB", t0.elapsed());
    assert!(growth < BOUND_KB, "CREATE INDEX grew the peak RSS by {growth} kB (bound {BOUND_KB} kB)");
    assert_eq!(temp_files(dir.path()), Vec::<String>::new(), "the sort's temporary files are removed");
    // The index works: lookups through it find what a sequential scan finds.
    for g in [1, 4242, 999_999] {
        let q = format!("SELECT id FROM big WHERE s = md5('{g}')");
        let plan = ok(&srv, &format!("EXPLAIN {q}"));
        assert!(plan.contains("big_s"), "{plan}");
        assert_eq!(ok(&srv, &q), format!("{}\n", (g as i64 * 7919) % 1000003));
    }
    // The bound is a real one: the same build with memory enough to sort in memory
    // grows the peak RSS past it.
    let before = hwm_kb(srv.pid());
    ok(&srv, "SET maintenance_work_mem = '2GB'; CREATE INDEX big_s2 ON big (s)");
    let in_memory = hwm_kb(srv.pid()).saturating_sub(before);
    eprintln!("the same with maintenance_work_mem 2GB: peak RSS growth {in_memory} kB");
    assert!(in_memory > BOUND_KB, "an in-memory sort of a million keys grew the peak RSS by only {in_memory} kB");
}

#[test]
fn kill_9_during_create_index_leaves_no_index() {
    let dir = tempfile::tempdir().unwrap();
    let mut srv = Server::start(dir.path());
    ok(&srv, "CREATE TABLE t (id int, s text); INSERT INTO t SELECT g, repeat(md5(g::text), 4) FROM generate_series(1, 300000) g; CHECKPOINT;");
    let sum = ok(&srv, "SELECT count(*), sum(id), sum(length(s)) FROM t");
    let files = relation_files(dir.path());
    // Kill at different points of the build: early (scan / sort), later (pages
    // being written and logged).
    let mut killed_mid_build = 0;
    for (round, delay_ms) in [150u64, 700, 2000].into_iter().enumerate() {
        let mut p = srv
            .psql_cmd()
            .args(["-At", "-c", "SET maintenance_work_mem = '1MB'; CREATE INDEX t_s ON t (s, id)"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Wait until the statement runs, then a little more.
        let deadline = Instant::now() + Duration::from_secs(20);
        while !ok(&srv, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%CREATE INDEX t_s%' AND state = 'active' AND pid <> pg_backend_pid()")
            .starts_with('1')
        {
            assert!(Instant::now() < deadline, "CREATE INDEX did not start");
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(delay_ms));
        let still_running = p.try_wait().unwrap().is_none();
        srv.signal(libc::SIGKILL);
        let _ = p.wait();
        srv = Server::start(dir.path());
        if !still_running {
            // The build finished before the kill: then it is all there.
            assert_eq!(ok(&srv, "SELECT count(*) FROM pg_class WHERE relname = 't_s'"), "1\n", "round {round}");
            assert_eq!(ok(&srv, "SELECT id FROM t WHERE s = repeat(md5('4242'), 4)"), "4242\n");
            ok(&srv, "DROP INDEX t_s; CHECKPOINT");
        }
        killed_mid_build += still_running as usize;
        assert_eq!(ok(&srv, "SELECT count(*) FROM pg_class WHERE relname = 't_s'"), "0\n", "round {round}");
        assert_eq!(ok(&srv, "SELECT count(*), sum(id), sum(length(s)) FROM t"), sum, "round {round}");
        assert_eq!(relation_files(dir.path()), files, "round {round}: the half-built index's file is removed");
        assert_eq!(temp_files(dir.path()), Vec::<String>::new());
        eprintln!("round {round}: killed after {delay_ms} ms (statement still running: {still_running})");
    }
    assert!(killed_mid_build >= 2, "only {killed_mid_build} kill(s) hit a running CREATE INDEX");
    // The same CREATE INDEX now succeeds and is used.
    ok(&srv, "CREATE INDEX t_s ON t (s, id)");
    let q = "SELECT id FROM t WHERE s = repeat(md5('777'), 4)";
    assert!(ok(&srv, &format!("EXPLAIN {q}")).contains("t_s"));
    assert_eq!(ok(&srv, q), "777\n");
    // And survives a crash once committed (its pages come back from the WAL).
    srv.signal(libc::SIGKILL);
    let srv = Server::start(dir.path());
    assert_eq!(ok(&srv, q), "777\n");
    assert_eq!(ok(&srv, "SELECT count(*) FROM t WHERE s >= repeat(md5('1'), 4)"), ok(&srv, "SELECT count(*) FROM t WHERE s || '' >= repeat(md5('1'), 4)"));
}

#[test]
fn build_settings_and_errors_are_postgresql_s() {
    let srv = Server::start_temp(&[]);
    ok(&srv, "CREATE TABLE f (a int, b text); INSERT INTO f SELECT g % 1000, 'v' || g FROM generate_series(1, 20000) g");
    // maintenance_work_mem: PostgreSQL's default, units and minimum.
    assert_eq!(ok(&srv, "SHOW maintenance_work_mem"), "64MB\n");
    assert_eq!(ok(&srv, "SELECT unit, context FROM pg_settings WHERE name = 'maintenance_work_mem'"), "kB|user\n");
    let (_, err) = srv.sql("SET maintenance_work_mem = '512kB'");
    assert!(err.contains("512 kB is outside the valid range for parameter \"maintenance_work_mem\" (1024 .. 2147483647)"), "{err}");
    // B-tree fillfactor: accepted 10..100, PostgreSQL's message outside.
    ok(&srv, "CREATE INDEX f_a ON f (a) WITH (fillfactor = 50)");
    assert_eq!(ok(&srv, "SELECT reloptions FROM pg_class WHERE relname = 'f_a'"), "{fillfactor=50}\n");
    let (_, err) = srv.sql("CREATE INDEX f_b ON f (b) WITH (fillfactor = 5)");
    assert!(err.contains("value 5 out of bounds for option \"fillfactor\""), "{err}");
    // A lower fill factor makes a bigger index.
    ok(&srv, "CREATE INDEX f_a90 ON f (a)");
    let sizes = ok(&srv, "SELECT pg_relation_size('f_a'), pg_relation_size('f_a90')");
    let v: Vec<i64> = sizes.trim().split('|').map(|x| x.parse().unwrap()).collect();
    assert!(v[0] > v[1] * 3 / 2, "fillfactor 50 vs 90: {sizes}");
    // A duplicate in a unique build: PostgreSQL's error, with DETAIL.
    let out = srv
        .psql_cmd()
        .args(["-v", "VERBOSITY=verbose", "-c", "CREATE UNIQUE INDEX f_u ON f (a)"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("ERROR:  23505: could not create unique index \"f_u\""), "{err}");
    assert!(err.contains("DETAIL:  Key (a)=(") && err.contains(") is duplicated."), "{err}");
    // PRIMARY KEY over NULLs: 23502 from the build's scan; nothing is left.
    ok(&srv, "INSERT INTO f VALUES (NULL, 'n')");
    let (_, err) = srv.sql("ALTER TABLE f ADD PRIMARY KEY (b, a)");
    assert!(err.contains("column \"a\" of relation \"f\" contains null values"), "{err}");
    assert_eq!(ok(&srv, "SELECT count(*) FROM pg_class WHERE relname = 'f_pkey'"), "0\n");
}
