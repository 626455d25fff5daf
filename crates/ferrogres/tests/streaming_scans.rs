//! Sequential scans stream (issue 19, first step): a query's scan of a table reads
//! it page by page through a BulkRead ring, so `LIMIT 1` reads a handful of pages
//! of a table much larger than shared_buffers, and `count(*)` over it keeps the
//! server's memory flat instead of holding the table.
//!
//! Pages read are counted from the server process's `rchar` (/proc/PID/io: bytes
//! the process read through read()/pread(), page cache or not), after a restart so
//! the table is not in shared buffers; memory from its VmHWM (/proc/PID/status).

mod common;
use common::server::Server;

fn proc_field(pid: i32, file: &str, key: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/{file}")).unwrap();
    let line = text.lines().find(|l| l.starts_with(key)).unwrap_or_else(|| panic!("{key} in /proc/{pid}/{file}"));
    line[key.len()..].trim().trim_end_matches(" kB").trim().parse().unwrap()
}

fn ok(srv: &Server, sql: &str) -> String {
    let (out, err) = srv.sql(sql);
    assert_eq!(err, "", "{sql}");
    out
}

#[test]
fn limit_reads_a_few_pages_and_count_keeps_memory_flat() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["-c", "shared_buffers=16MB"];
    let mut srv = Server::start_with(dir.path(), &args);
    // About 45 MB of heap: almost three times shared_buffers.
    ok(&srv, "CREATE TABLE big (a int, b text); INSERT INTO big SELECT g, repeat(md5(g::text), 12) FROM generate_series(1, 100000) g");
    let table_bytes: u64 = ok(&srv, "SELECT pg_relation_size('big')").trim().parse().unwrap();
    assert!(table_bytes > 40 << 20, "table of {table_bytes} bytes");
    // A fresh server: nothing of the table in shared buffers.
    srv.signal(libc::SIGTERM);
    let srv = Server::start_with(dir.path(), &args);
    let pid = srv.pid();
    // Load the catalog entries the queries need, without reading the table.
    ok(&srv, "EXPLAIN SELECT * FROM big LIMIT 1");

    let before = proc_field(pid, "io", "rchar:");
    assert_eq!(ok(&srv, "SELECT a FROM big LIMIT 1"), "1\n");
    let limit_read = proc_field(pid, "io", "rchar:") - before;

    let hwm_before = proc_field(pid, "status", "VmHWM:") * 1024;
    let before = proc_field(pid, "io", "rchar:");
    assert_eq!(ok(&srv, "SELECT count(*), sum(length(b)) FROM big"), "100000|38400000\n");
    let count_read = proc_field(pid, "io", "rchar:") - before;
    let hwm_growth = (proc_field(pid, "status", "VmHWM:") * 1024).saturating_sub(hwm_before);
    eprintln!(
        "table {table_bytes} bytes; LIMIT 1 read {limit_read} bytes; count(*) read {count_read} bytes and grew the peak RSS by {hwm_growth} bytes"
    );
    // A handful of pages (plus the client's messages): not the table.
    assert!(limit_read < 32 * 8192, "LIMIT 1 read {limit_read} bytes of a {table_bytes}-byte table");
    // The full scan reads the table, through a ring that spares the pool ...
    assert!(count_read >= table_bytes / 2, "count(*) read only {count_read} bytes");
    // ... and holds a page at a time, not the table.
    assert!(hwm_growth < table_bytes / 4, "count(*) over {table_bytes} bytes grew the peak RSS by {hwm_growth} bytes");
}

/// Joins stream their outer input and their result, and UPDATE and DELETE
/// stream the rows they visit: over a table about three times shared_buffers,
/// none of them grows the server's peak RSS by more than a quarter of the
/// table, plus shared_buffers for the writes (each held the whole table
/// before).
#[test]
fn joins_updates_and_deletes_keep_memory_flat() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["-c", "shared_buffers=16MB"];
    let mut srv = Server::start_with(dir.path(), &args);
    ok(&srv, "CREATE TABLE big (a int, b text); INSERT INTO big SELECT g, repeat(md5(g::text), 12) FROM generate_series(1, 100000) g");
    ok(&srv, "CREATE TABLE small (k int, v text); INSERT INTO small SELECT g, 'v' || g FROM generate_series(0, 99) g");
    ok(&srv, "ANALYZE big; ANALYZE small");
    let table_bytes: u64 = ok(&srv, "SELECT pg_relation_size('big')").trim().parse().unwrap();
    srv.signal(libc::SIGTERM);
    let srv = Server::start_with(dir.path(), &args);
    let pid = srv.pid();
    ok(&srv, "EXPLAIN SELECT * FROM big JOIN small ON big.a = small.k");
    let cases = [
        ("SELECT count(*), sum(length(b)) FROM big JOIN small ON big.a % 100 = small.k", "100000|38400000\n"),
        ("SELECT count(*), sum(length(b)) FROM small JOIN big ON small.k = big.a % 100", "100000|38400000\n"),
        ("SELECT count(*), count(v), sum(length(b)) FROM big LEFT JOIN small ON big.a = small.k", "100000|99|38400000\n"),
        ("SELECT count(*), sum(length(b)) FROM big JOIN small ON big.a > small.k * 1000 AND small.k < 2", "199000|76416000\n"),
        ("UPDATE big SET b = b || 'x' WHERE a % 2 = 0", "UPDATE 50000\n"),
        ("DELETE FROM big WHERE a % 2 = 1", "DELETE 50000\n"),
    ];
    for (sql, want) in cases {
        let hwm_before = proc_field(pid, "status", "VmHWM:") * 1024;
        let out = ok(&srv, sql);
        let hwm_growth = (proc_field(pid, "status", "VmHWM:") * 1024).saturating_sub(hwm_before);
        eprintln!("{sql}: peak RSS grew by {hwm_growth} bytes (table {table_bytes} bytes)");
        assert_eq!(out, want, "{sql}");
        // Writes put new pages in shared buffers, whose memory the process
        // touches for the first time then: 16 MB at most.
        let bound = if sql.starts_with("SELECT") { table_bytes / 4 } else { table_bytes / 4 + (16 << 20) };
        assert!(hwm_growth < bound, "{sql}: over a {table_bytes}-byte table the peak RSS grew by {hwm_growth} bytes");
    }
    assert_eq!(ok(&srv, "SELECT count(*), min(a), sum(length(b)) FROM big"), "50000|2|19250000\n");
}
