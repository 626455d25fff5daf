//! pg_stat_statements built in, query ids (compute_query_id) and
//! pg_stat_bgwriter (issue 13) against a real server, through raw-protocol
//! sessions (simple and extended query) and psql.

mod common;

use common::server::Server;
use common::session_client::{ok, Client};
use common::{bind, execute, parse, sync};
use std::io::Write;
use std::time::{Duration, Instant};

fn rows(c: &mut Client, sql: &str) -> Vec<Vec<String>> {
    let r = c.q(sql);
    ok(&r);
    r.rows.into_iter().map(|r| r.into_iter().map(|v| v.unwrap_or_else(|| "NULL".into())).collect()).collect()
}

fn num(c: &mut Client, sql: &str) -> f64 {
    c.q(sql).one().parse().unwrap()
}

fn setup(c: &mut Client) {
    ok(&c.q("CREATE TABLE t (a int, b text)"));
    ok(&c.q("INSERT INTO t SELECT g, 'x' || g FROM generate_series(1, 10) g"));
    ok(&c.q("SELECT pg_stat_statements_reset()"));
}

#[test]
fn calls_rows_and_one_entry_per_shape() {
    let srv = Server::start_temp(&[]);
    let mut c = Client::connect(srv.port);
    setup(&mut c);
    // Three runs differing only in their constants: 2 + 5 + 9 rows.
    for n in [3, 6, 10] {
        ok(&c.q(&format!("SELECT * FROM t WHERE a < {n}")));
    }
    // Four inserts: calls 4, rows 4.
    for i in 0..4 {
        ok(&c.q(&format!("INSERT INTO t VALUES ({}, 'y')", 100 + i)));
    }
    ok(&c.q("UPDATE t SET b = 'z' WHERE a >= 100"));
    let r = rows(
        &mut c,
        "SELECT query, calls, rows, total_exec_time >= max_exec_time, max_exec_time >= min_exec_time, mean_exec_time > 0 \
         FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY query",
    );
    let t = |s: &str| s.to_string();
    assert_eq!(
        r,
        vec![
            vec![t("INSERT INTO t VALUES ($1, $2)"), t("4"), t("4"), t("t"), t("t"), t("t")],
            vec![t("SELECT * FROM t WHERE a < $1"), t("3"), t("16"), t("t"), t("t"), t("t")],
            vec![t("UPDATE t SET b = $1 WHERE a >= $2"), t("1"), t("4"), t("t"), t("t"), t("t")],
        ]
    );
    // The seq scan read the table's buffers.
    assert!(num(&mut c, "SELECT shared_blks_hit + shared_blks_read FROM pg_stat_statements WHERE query = 'SELECT * FROM t WHERE a < $1'") >= 3.0);
    // One query id for the shape, the one EXPLAIN VERBOSE prints.
    // (compute_query_id = on: under the default auto, EXPLAIN VERBOSE prints
    // what a stock PostgreSQL 15 prints, without the id.)
    let id = c.q("SELECT queryid FROM pg_stat_statements WHERE query = 'SELECT * FROM t WHERE a < $1'").one();
    let plan = rows(&mut c, "EXPLAIN VERBOSE SELECT * FROM t WHERE a < 77");
    assert!(!plan.iter().any(|l| l[0].starts_with("Query Identifier")), "{plan:?}");
    ok(&c.q("SET compute_query_id = on"));
    let plan = rows(&mut c, "EXPLAIN VERBOSE SELECT * FROM t WHERE a < 77");
    assert_eq!(plan.last().unwrap()[0], format!("Query Identifier: {id}"), "{plan:?}");
    // A different shape has a different id.
    let other = c.q("SELECT queryid FROM pg_stat_statements WHERE query LIKE 'UPDATE%'").one();
    assert_ne!(id, other);
    // PostgreSQL 15's columns, in its order.
    let r = rows(&mut c, "SELECT count(*) FROM (SELECT * FROM pg_stat_statements) s");
    assert!(r[0][0].parse::<i32>().unwrap() >= 4);
    let desc = srv.sql_ok("SELECT * FROM pg_stat_statements LIMIT 0 \\gdesc");
    assert!(desc.starts_with("userid|oid\ndbid|oid\ntoplevel|boolean\nqueryid|bigint\nquery|text\nplans|bigint\n"), "{desc}");
    assert!(desc.contains("\nwal_bytes|numeric\njit_functions|bigint\n"), "{desc}");
    assert_eq!(desc.lines().count(), 43, "{desc}");
}

#[test]
fn pg_stat_activity_and_the_sampler_show_the_running_query_id() {
    let srv = Server::start_temp(&["-c", "pg_wait_sampling.period=10"]);
    let mut ctl = Client::connect(srv.port);
    let mut b = Client::connect(srv.port);
    ok(&ctl.q("SELECT pg_stat_statements_reset()"));
    b.send("SELECT pg_sleep(1.5)");
    let start = Instant::now();
    let running = loop {
        let r = rows(&mut ctl, &format!("SELECT query_id FROM pg_stat_activity WHERE pid = {} AND state = 'active'", b.pid));
        if let Some(row) = r.first().filter(|r| r[0] != "NULL") {
            break row[0].clone();
        }
        assert!(start.elapsed() < Duration::from_secs(5), "no query_id for the running statement");
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(300));
    let sampled = num(&mut ctl, &format!("SELECT count(*) FROM pg_wait_sampling_history WHERE pid = {} AND queryid = {running}", b.pid));
    ok(&b.reply());
    assert!(sampled >= 1.0, "the sampler saw no sample with the query id");
    // The finished statement's entry has the id pg_stat_activity showed.
    let r = rows(&mut ctl, "SELECT queryid, calls FROM pg_stat_statements WHERE query = 'SELECT pg_sleep($1)'");
    assert_eq!(r, vec![vec![running.clone(), "1".to_string()]]);
    // An idle session keeps showing its last statement's id, as PostgreSQL.
    let idle = rows(&mut ctl, &format!("SELECT query_id, state FROM pg_stat_activity WHERE pid = {}", b.pid));
    assert_eq!(idle, vec![vec![running, "idle".to_string()]]);
}

#[test]
fn reset_clears_entries_and_info() {
    let srv = Server::start_temp(&[]);
    let mut c = Client::connect(srv.port);
    setup(&mut c);
    ok(&c.q("SELECT * FROM t WHERE a = 1"));
    ok(&c.q("SELECT count(*) FROM t"));
    let id = c.q("SELECT queryid FROM pg_stat_statements WHERE query = 'SELECT * FROM t WHERE a = $1'").one();
    let reset_before = c.q("SELECT stats_reset FROM pg_stat_statements_info").one();
    // By query id: only that entry goes.
    ok(&c.q(&format!("SELECT pg_stat_statements_reset(0, 0, {id})")));
    assert_eq!(num(&mut c, "SELECT count(*) FROM pg_stat_statements WHERE query = 'SELECT * FROM t WHERE a = $1'"), 0.0);
    assert_eq!(num(&mut c, "SELECT count(*) FROM pg_stat_statements WHERE query = 'SELECT count(*) FROM t'"), 1.0);
    // All: only the reset call itself is left, and the info starts again.
    std::thread::sleep(Duration::from_millis(5));
    ok(&c.q("SELECT pg_stat_statements_reset()"));
    let r = rows(&mut c, "SELECT query, calls FROM pg_stat_statements");
    assert_eq!(r, vec![vec!["SELECT pg_stat_statements_reset()".to_string(), "1".to_string()]]);
    let r = rows(&mut c, &format!("SELECT dealloc, stats_reset > '{reset_before}' FROM pg_stat_statements_info"));
    assert_eq!(r, vec![vec!["0".to_string(), "t".to_string()]]);
}

#[test]
fn track_none_and_compute_query_id_off() {
    let srv = Server::start_temp(&[]);
    let mut c = Client::connect(srv.port);
    setup(&mut c);
    ok(&c.q("SET pg_stat_statements.track = none"));
    ok(&c.q("SELECT * FROM t WHERE a = 5"));
    ok(&c.q("RESET pg_stat_statements.track"));
    assert_eq!(num(&mut c, "SELECT count(*) FROM pg_stat_statements WHERE query LIKE 'SELECT * FROM t%'"), 0.0);
    ok(&c.q("SET compute_query_id = off"));
    let r = rows(&mut c, "SELECT query_id FROM pg_stat_activity WHERE pid = pg_backend_pid()");
    assert_eq!(r, vec![vec!["NULL".to_string()]]);
    let plan = rows(&mut c, "EXPLAIN VERBOSE SELECT * FROM t WHERE a = 5");
    assert!(!plan.iter().any(|l| l[0].starts_with("Query Identifier")), "{plan:?}");
    ok(&c.q("SELECT * FROM t WHERE a = 6"));
    ok(&c.q("SET compute_query_id = on"));
    assert_eq!(num(&mut c, "SELECT count(*) FROM pg_stat_statements WHERE query LIKE 'SELECT * FROM t%'"), 0.0);
    // Utility statements are tracked unless track_utility is off.
    ok(&c.q("SET work_mem = '8MB'"));
    ok(&c.q("SET pg_stat_statements.track_utility = off"));
    ok(&c.q("SET work_mem = '16MB'"));
    let r = rows(&mut c, "SELECT query FROM pg_stat_statements WHERE query LIKE 'SET work_mem%'");
    assert_eq!(r, vec![vec!["SET work_mem = '8MB'".to_string()]]);
}

#[test]
fn the_table_is_bounded_by_max_and_evicts() {
    let srv = Server::start_temp(&["-c", "pg_stat_statements.max=100"]);
    let mut c = Client::connect(srv.port);
    ok(&c.q("SELECT pg_stat_statements_reset()"));
    // A statement run often survives a stream of statements run once.
    for _ in 0..30 {
        ok(&c.q("SELECT 'hot'"));
    }
    for i in 0..150 {
        ok(&c.q(&format!("SELECT 1 AS c{i}")));
    }
    assert!(num(&mut c, "SELECT count(*) FROM pg_stat_statements") <= 100.0);
    assert!(num(&mut c, "SELECT dealloc FROM pg_stat_statements_info") >= 1.0);
    assert_eq!(num(&mut c, "SELECT calls FROM pg_stat_statements WHERE query = 'SELECT $1'"), 30.0);
    assert_eq!(srv.sql_ok("SHOW pg_stat_statements.max").trim_end(), "100");
}

#[test]
fn a_portal_run_in_pieces_counts_once() {
    let srv = Server::start_temp(&[]);
    let mut c = Client::connect(srv.port);
    setup(&mut c);
    let mut m = parse("s", "SELECT a FROM t WHERE a > $1", &[23]);
    m.extend(bind("p", "s", &[0], &[Some(b"5")], &[]));
    m.extend(execute("p", 2));
    m.extend(execute("p", 2));
    m.extend(execute("p", 0));
    m.extend(sync());
    c.s.write_all(&m).unwrap();
    let mut data_rows = 0;
    loop {
        let (t, b) = c.read();
        match t {
            b'D' => data_rows += 1,
            b'E' => panic!("{:?}", common::fields(&b)),
            b'Z' => break,
            _ => {}
        }
    }
    assert_eq!(data_rows, 5);
    let r = rows(&mut c, "SELECT calls, rows FROM pg_stat_statements WHERE query = 'SELECT a FROM t WHERE a > $1'");
    assert_eq!(r, vec![vec!["1".to_string(), "5".to_string()]]);
}

#[test]
fn create_extension_is_accepted() {
    let srv = Server::start_temp(&[]);
    let mut c = Client::connect(srv.port);
    let r = c.q("CREATE EXTENSION pg_stat_statements");
    ok(&r);
    assert_eq!(r.tags, vec!["CREATE EXTENSION".to_string()]);
    ok(&c.q("CREATE EXTENSION IF NOT EXISTS pg_stat_statements"));
    let r = c.q("DROP EXTENSION pg_stat_statements");
    ok(&r);
    assert_eq!(r.tags, vec!["DROP EXTENSION".to_string()]);
    assert_eq!(c.q("CREATE EXTENSION no_such_thing").code(), "0A000");
    assert_eq!(c.q("DROP EXTENSION no_such_thing").code(), "42704");
    ok(&c.q("SELECT 1"));
}

#[test]
fn bgwriter_counters_move_with_checkpoints_and_writes() {
    let srv = Server::start_temp(&["-c", "shared_buffers=1MB", "-c", "bgwriter_delay=10ms"]);
    let mut c = Client::connect(srv.port);
    let cols = srv.sql_ok("SELECT * FROM pg_stat_bgwriter \\gdesc").trim_end().to_string();
    assert_eq!(
        cols,
        "checkpoints_timed|bigint\ncheckpoints_req|bigint\ncheckpoint_write_time|double precision\ncheckpoint_sync_time|double precision\n\
         buffers_checkpoint|bigint\nbuffers_clean|bigint\nmaxwritten_clean|bigint\nbuffers_backend|bigint\nbuffers_backend_fsync|bigint\n\
         buffers_alloc|bigint\nstats_reset|timestamp with time zone"
    );
    ok(&c.q("SELECT pg_stat_reset_shared('bgwriter')"));
    let z = rows(&mut c, "SELECT checkpoints_req, buffers_checkpoint, buffers_clean, buffers_backend, buffers_alloc FROM pg_stat_bgwriter");
    assert_eq!(z[0][..4], ["0", "0", "0", "0"]);
    // A write-heavy load far larger than shared_buffers (128 pages).
    ok(&c.q("CREATE TABLE w (a int, b text)"));
    ok(&c.q("INSERT INTO w SELECT g, repeat('x', 200) FROM generate_series(1, 40000) g"));
    ok(&c.q("CHECKPOINT"));
    let r = rows(
        &mut c,
        "SELECT checkpoints_req, buffers_checkpoint > 0, buffers_clean + buffers_backend > 0, buffers_alloc > 500, \
         checkpoint_write_time >= 0 AND checkpoint_sync_time >= 0, buffers_backend_fsync FROM pg_stat_bgwriter",
    );
    assert_eq!(r, vec![["1", "t", "t", "t", "t", "0"].map(String::from).to_vec()]);
    // A second checkpoint with nothing to write: counted, no buffers.
    let before = num(&mut c, "SELECT buffers_checkpoint FROM pg_stat_bgwriter");
    ok(&c.q("CHECKPOINT"));
    let r = rows(&mut c, &format!("SELECT checkpoints_req, buffers_checkpoint - {before} FROM pg_stat_bgwriter"));
    assert_eq!(r, vec![vec!["2".to_string(), "0".to_string()]]);
    // archive_mode is off: nothing archived or failed (zeros).
    let r = rows(&mut c, "SELECT archived_count, last_archived_wal, failed_count FROM pg_stat_archiver");
    assert_eq!(r, vec![["0", "NULL", "0"].map(String::from).to_vec()]);
    assert_eq!(c.q("SELECT pg_stat_reset_shared('nope')").code(), "22023");
}

/// One entry's (shared_blks_dirtied, shared_blks_written, temp_blks_read,
/// temp_blks_written, wal_records, wal_fpi, wal_bytes).
fn usage_of(c: &mut Client, like: &str) -> [i64; 7] {
    let r = rows(
        c,
        &format!(
            "SELECT shared_blks_dirtied, shared_blks_written, temp_blks_read, temp_blks_written, wal_records, wal_fpi, wal_bytes \
             FROM pg_stat_statements WHERE query LIKE '{like}'"
        ),
    );
    assert_eq!(r.len(), 1, "one entry like {like}: {r:?}");
    r[0].iter().map(|v| v.parse().unwrap()).collect::<Vec<i64>>().try_into().unwrap()
}

/// The per-statement WAL, dirtied / written buffer and temporary block
/// counters, and pg_stat_database's temp_files / temp_bytes, move by what
/// each statement did.
#[test]
fn wal_buffer_and_temp_usage_per_statement() {
    let srv = Server::start_temp(&[]);
    let mut c = Client::connect(srv.port);
    ok(&c.q("CREATE TABLE u (a int, b text)"));
    ok(&c.q("SELECT pg_stat_statements_reset()"));
    let wal = |c: &mut Client| -> (i64, i64) {
        let r = rows(c, "SELECT wal_records, wal_bytes FROM pg_stat_wal");
        (r[0][0].parse().unwrap(), r[0][1].parse().unwrap())
    };

    // 100 rows inserted: one heap record each (the commit record comes after
    // the statement's end, as in PostgreSQL), within what pg_stat_wal saw.
    let w0 = wal(&mut c);
    ok(&c.q("INSERT INTO u SELECT g, 'x' FROM generate_series(1, 100) g"));
    let w1 = wal(&mut c);
    let ins = usage_of(&mut c, "INSERT INTO u %");
    assert_eq!(ins[4], 100, "{ins:?}");
    assert!(ins[6] > 100 * 20 && ins[6] <= w1.1 - w0.1, "{ins:?} {w0:?} {w1:?}");
    assert_eq!(ins[2..4], [0, 0]);

    // After a checkpoint, updating every row of the one-page table: the page
    // is dirtied once and its first change carries a full-page image.
    assert_eq!(c.q("SELECT pg_relation_size('u') / 8192").one(), "1");
    ok(&c.q("CHECKPOINT"));
    ok(&c.q("UPDATE u SET a = a + 1"));
    let upd = usage_of(&mut c, "UPDATE u %");
    assert_eq!((upd[0], upd[4], upd[5]), (1, 100, 1), "{upd:?}");
    // A query that writes nothing has no WAL and dirties nothing.
    ok(&c.q("SELECT count(*) FROM u WHERE a > 0"));
    assert_eq!(usage_of(&mut c, "SELECT count(*) FROM u %"), [0; 7]);

    // A sort that spills: every block written is read back; the files'
    // bytes reach pg_stat_database at the next flush.
    let db = |c: &mut Client| -> (i64, i64) {
        let r = rows(c, "SELECT temp_files, temp_bytes FROM pg_stat_database WHERE datname = current_database()");
        (r[0][0].parse().unwrap(), r[0][1].parse().unwrap())
    };
    let d0 = db(&mut c);
    ok(&c.q("SET work_mem = '64kB'"));
    ok(&c.q("SELECT count(*) FROM (SELECT g FROM generate_series(1, 50000) g ORDER BY g DESC) s"));
    ok(&c.q("SELECT pg_stat_force_next_flush()"));
    ok(&c.q("SELECT 1"));
    let d1 = db(&mut c);
    let sort = usage_of(&mut c, "SELECT count(*) FROM (SELECT g FROM generate_series%");
    let (files, bytes) = (d1.0 - d0.0, d1.1 - d0.1);
    assert!(files > 0 && sort[3] > 0 && sort[2] == sort[3], "{sort:?} {files} {bytes}");
    // Each file's blocks are its bytes rounded up to 8 kB.
    assert!(bytes <= sort[3] * 8192 && bytes > (sort[3] - files) * 8192, "{sort:?} {files} {bytes}");
    assert_eq!(sort[4..], [0, 0, 0]);

    // A backend that evicts dirty pages writes them: with 16 buffers, a
    // table of 64 pages written in one statement.
    drop(c);
    drop(srv);
    let srv = Server::start_temp(&["-c", "shared_buffers=16"]);
    let mut c = Client::connect(srv.port);
    ok(&c.q("CREATE TABLE big (a int, b text)"));
    ok(&c.q("SELECT pg_stat_statements_reset()"));
    let b0: i64 = c.q("SELECT buffers_backend FROM pg_stat_bgwriter").one().parse().unwrap();
    ok(&c.q("INSERT INTO big SELECT g, repeat('y', 200) FROM generate_series(1, 2000) g"));
    let b1: i64 = c.q("SELECT buffers_backend FROM pg_stat_bgwriter").one().parse().unwrap();
    let big = usage_of(&mut c, "INSERT INTO big %");
    let pages: i64 = c.q("SELECT pg_relation_size('big') / 8192").one().parse().unwrap();
    assert!(pages > 16, "{pages}");
    // Every page of the new table was dirtied by it; the ones it evicted
    // are among what pg_stat_bgwriter counts as written by backends.
    assert!(big[0] >= pages && big[1] > 0 && big[1] <= b1 - b0, "{big:?} {pages} {b0} {b1}");
}

/// pg_stat_statements.track = all with an SQL function: it is inlined into
/// the calling statement (there is no PL/pgSQL yet), so only the top-level
/// statements have entries, as PostgreSQL 15.18 records this script (its
/// inlinable function runs no nested statement either). Not done: PostgreSQL
/// also records EXPLAIN ANALYZE's inner statement as nested (toplevel false).
#[test]
fn track_all_records_top_level_statements_as_postgres() {
    let srv = Server::start_temp(&[]);
    let mut c = Client::connect(srv.port);
    ok(&c.q("SET pg_stat_statements.track = 'all'"));
    ok(&c.q("CREATE FUNCTION f(int) RETURNS int LANGUAGE sql AS 'SELECT $1 + 1'"));
    ok(&c.q("CREATE TABLE ct (a int)"));
    ok(&c.q("SELECT pg_stat_statements_reset()"));
    ok(&c.q("INSERT INTO ct VALUES (1)"));
    assert_eq!(c.q("SELECT f(3)").one(), "4");
    assert_eq!(c.q("SELECT f(a) FROM ct").one(), "2");
    let got = rows(&mut c, "SELECT toplevel, calls, query FROM pg_stat_statements WHERE query NOT LIKE '%pg_stat_statements%' ORDER BY query");
    let want: Vec<Vec<String>> = [["t", "1", "INSERT INTO ct VALUES ($1)"], ["t", "1", "SELECT f($1)"], ["t", "1", "SELECT f(a) FROM ct"]]
        .iter()
        .map(|r| r.iter().map(|s| s.to_string()).collect())
        .collect();
    assert_eq!(got, want);
}
