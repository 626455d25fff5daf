//! TOAST through the server: UPDATE and DELETE take the old value's chunks
//! (so a table whose 1 MB value is updated again and again stays bounded once
//! VACUUM has run), a rolled-back DELETE keeps the value, and values read back
//! after kill -9 and recovery.

mod common;
use common::server::Server;

/// A value of about 1 MB that does not compress much (hex digits).
fn big(seed: u32) -> String {
    format!("(SELECT string_agg(md5((g + {seed})::text), '') FROM generate_series(1, 32000) g)")
}

#[test]
fn update_delete_take_the_chunks_rollback_keeps_them_crash_keeps_values() {
    let dir = tempfile::tempdir().unwrap();
    let mut srv = Server::start(dir.path());
    srv.sql_ok(&format!("CREATE TABLE t (id int PRIMARY KEY, n int, v text); INSERT INTO t VALUES (1, 0, {}), (2, 0, {})", big(0), big(1)));
    let md5 = |srv: &Server| srv.sql_ok("SELECT id, md5(v), length(v) FROM t ORDER BY id");
    assert_eq!(md5(&srv).lines().next().unwrap().split('|').nth(2), Some("1024000"));

    // Repeated UPDATEs of the toasted column, VACUUM after each round: the
    // table's size (TOAST relation and chunk index included) stops growing.
    let mut sizes = Vec::new();
    let toast_node = srv.sql_ok("SELECT reltoastrelid FROM pg_class WHERE relname = 't'");
    let toast_file = dir.path().join("data/base/5").join(toast_node.trim());
    let mut heap_sizes = Vec::new();
    for round in 0..8u32 {
        for i in 0..3u32 {
            srv.sql_ok(&format!("UPDATE t SET v = {}, n = n + 1 WHERE id = 1", big(10 + round * 3 + i)));
        }
        // A HOT-eligible update that changes only the toasted column.
        srv.sql_ok(&format!("UPDATE t SET v = {} WHERE id = 1", big(1000 + round)));
        srv.sql_ok("VACUUM t");
        sizes.push(srv.sql_ok("SELECT pg_table_size('t')").trim().parse::<i64>().unwrap());
        heap_sizes.push(std::fs::metadata(&toast_file).unwrap().len());
    }
    // The TOAST heap stops growing: freed chunks' space is reused.
    assert!(heap_sizes[7] <= heap_sizes[1], "the TOAST relation grew across vacuumed rounds: {heap_sizes:?}");
    // Each round stores 4 MB of new values; without chunk deletion the table would
    // grow by that much per round. What still grows is the chunk index: B-tree
    // pages emptied by VACUUM are not deleted or reused yet (no page deletion),
    // and new chunk_ids always go to the right edge (a known limitation).
    let per_round = (sizes[7] - sizes[1]) / 6;
    assert!(per_round < 200 * 1024, "the table grew {per_round} bytes per round: {sizes:?}");
    let expect = srv.sql_ok(&format!("SELECT md5({}), md5({})", big(1007), big(1)));
    let (m1, m2) = expect.trim().split_once('|').unwrap();
    let want = format!("1|{m1}|1024000\n2|{m2}|1024000\n");
    assert_eq!(md5(&srv), want);

    // A rolled-back DELETE keeps both values readable.
    srv.sql_ok("BEGIN; DELETE FROM t; ROLLBACK");
    assert_eq!(md5(&srv), want);
    // A committed DELETE of row 2, then VACUUM: the space is reusable.
    srv.sql_ok("DELETE FROM t WHERE id = 2; VACUUM t");
    srv.sql_ok(&format!("INSERT INTO t VALUES (3, 0, {})", big(2)));
    let after = std::fs::metadata(&toast_file).unwrap().len();
    assert!(after <= heap_sizes[7], "{after} > {}", heap_sizes[7]);

    // pg_statio_user_tables counts the TOAST relation's blocks; NULL without one.
    srv.sql_ok("CREATE TABLE plain (a int); INSERT INTO plain VALUES (1)");
    assert_eq!(
        srv.sql_ok("SELECT relname, toast_blks_read + toast_blks_hit > 0, toast_blks_hit IS NULL FROM pg_statio_user_tables WHERE relname IN ('t', 'plain') ORDER BY 1"),
        "plain||t\nt|t|f\n"
    );

    // kill -9 with a committed UPDATE and a rolled-back one not checkpointed.
    srv.sql_ok(&format!("UPDATE t SET v = {} WHERE id = 3", big(3)));
    srv.sql_ok(&format!("BEGIN; UPDATE t SET v = {} WHERE id = 1; ROLLBACK", big(4)));
    let before = md5(&srv);
    srv.signal(libc::SIGKILL);
    let srv = Server::start(dir.path());
    assert_eq!(md5(&srv), before);
    let (m3,) = (srv.sql_ok(&format!("SELECT md5({})", big(3))),);
    assert!(before.contains(m3.trim()), "{before}");
}
