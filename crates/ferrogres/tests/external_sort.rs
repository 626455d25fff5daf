//! Sorts, DISTINCT and GROUP BY within `work_mem` (issue 19): beyond it rows go
//! to temporary files under `base/pgsql_tmp` and are merged back
//! (`ferrogres_sql::sort`), the answers are the ones an in-memory run gives
//! (checked against orders computed here from the same formulas), no file is
//! left behind (also after a statement_timeout in the middle of a sort), and a
//! sort or grouping of a million rows keeps the server's peak RSS growth under
//! a stated bound with the default work_mem.

mod common;
use common::server::{hwm_kb, ok_after_sets as ok, temp_files, with_temp_file_watch, Server};

const ROWS: i64 = 20_000;

/// The table's columns as the INSERT below computes them, for row `g`.
struct Row {
    id: i64,
    /// Many ties, NULL for every 17th row.
    k: Option<i64>,
    /// Text compared bytewise: `((g * 31) % 5000)::text`.
    s: String,
    /// numeric `((g * 37) % 1000) / 8`: ordered as the integer.
    n: i64,
}

fn rows() -> Vec<Row> {
    (1..=ROWS)
        .map(|g| Row { id: g, k: (g % 17 != 0).then_some((g * 7919) % 1000), s: ((g * 31) % 5000).to_string(), n: (g * 37) % 1000 })
        .collect()
}

fn load(srv: &Server) {
    ok(
        srv,
        &format!(
            "CREATE TABLE t (id int, k int, s text, n numeric, pad text);
             INSERT INTO t SELECT g, CASE WHEN g % 17 <> 0 THEN (g * 7919) % 1000 END, ((g * 31) % 5000)::text,
                                  ((g * 37) % 1000)::numeric / 8, repeat('p', 40)
             FROM generate_series(1, {ROWS}) g;"
        ),
    );
}

fn explain_analyze(srv: &Server, work_mem: &str, q: &str) -> String {
    ok(srv, &format!("SET work_mem = '{work_mem}'; EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) {q}"))
}

fn lines<T: std::fmt::Display>(v: impl IntoIterator<Item = T>) -> String {
    v.into_iter().map(|x| format!("{x}\n")).collect()
}

#[test]
fn order_by_beyond_work_mem_spills_merges_and_equals_the_computed_order() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    load(&srv);
    let data = rows();

    // k NULLS FIRST, ties by id DESC.
    let mut by_k: Vec<&Row> = data.iter().collect();
    by_k.sort_by(|a, b| match (a.k, b.k) {
        (None, None) => b.id.cmp(&a.id),
        (None, Some(_)) => std::cmp::Ordering::Less,
        (Some(_), None) => std::cmp::Ordering::Greater,
        (Some(x), Some(y)) => x.cmp(&y).then(b.id.cmp(&a.id)),
    });
    let want_k = lines(by_k.iter().map(|r| format!("{}|{}", r.id, r.k.map_or(String::new(), |k| k.to_string()))));
    // k DESC (NULLS FIRST by default for DESC), ties by id.
    let mut by_k_desc: Vec<&Row> = data.iter().collect();
    by_k_desc.sort_by(|a, b| match (a.k, b.k) {
        (None, None) => a.id.cmp(&b.id),
        (None, Some(_)) => std::cmp::Ordering::Less,
        (Some(_), None) => std::cmp::Ordering::Greater,
        (Some(x), Some(y)) => y.cmp(&x).then(a.id.cmp(&b.id)),
    });
    let want_k_desc = lines(by_k_desc.iter().map(|r| r.id));
    // text bytewise, then numeric DESC, then id.
    let mut by_s: Vec<&Row> = data.iter().collect();
    by_s.sort_by(|a, b| a.s.as_bytes().cmp(b.s.as_bytes()).then(b.n.cmp(&a.n)).then(a.id.cmp(&b.id)));
    let want_s = lines(by_s.iter().map(|r| r.id));
    // k NULLS LAST with LIMIT (top-N), OFFSET.
    let mut by_k_last: Vec<&Row> = data.iter().collect();
    by_k_last.sort_by(|a, b| match (a.k, b.k) {
        (None, None) => a.id.cmp(&b.id),
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (Some(_), None) => std::cmp::Ordering::Less,
        (Some(x), Some(y)) => x.cmp(&y).then(a.id.cmp(&b.id)),
    });
    let want_top = lines(by_k_last.iter().skip(5).take(100).map(|r| r.id));
    let want_tail = lines(by_k_last.iter().skip(ROWS as usize - 30).map(|r| r.id));

    let queries: [(&str, &String); 5] = [
        ("SELECT id, k FROM t ORDER BY k NULLS FIRST, id DESC", &want_k),
        ("SELECT id FROM t ORDER BY k DESC, id", &want_k_desc),
        ("SELECT id FROM t ORDER BY s, n DESC, id", &want_s),
        ("SELECT id FROM t ORDER BY k NULLS LAST, id LIMIT 100 OFFSET 5", &want_top),
        ("SELECT id FROM t ORDER BY k NULLS LAST, id OFFSET 19970", &want_tail),
    ];
    for work_mem in ["64kB", "4MB", "1GB"] {
        for (q, want) in &queries {
            let got = ok(&srv, &format!("SET work_mem = '{work_mem}'; {q}"));
            assert!(got == **want, "work_mem {work_mem}: {q}: {} lines, first difference at line {:?}", got.lines().count(),
                got.lines().zip(want.lines()).position(|(a, b)| a != b));
        }
    }
    // Ties keep the input order (a stable sort, as before): every id in order within k.
    let stable = ok(&srv, "SET work_mem = '64kB'; SELECT id FROM t ORDER BY k NULLS LAST;");
    let mut stable_want: Vec<&Row> = data.iter().collect();
    stable_want.sort_by_key(|r| (r.k.is_none(), r.k));
    assert_eq!(stable, lines(stable_want.iter().map(|r| r.id)));

    // EXPLAIN ANALYZE tells how each sorted, as PostgreSQL does.
    let q = "SELECT * FROM t ORDER BY s, id";
    let ext = explain_analyze(&srv, "64kB", q);
    assert!(ext.contains("Sort Method: external merge  Disk: "), "{ext}");
    let disk_kb: u64 = ext.split("Disk: ").nth(1).unwrap().split("kB").next().unwrap().parse().unwrap();
    assert!(disk_kb > 640, "{ROWS} rows of about 100 bytes spilled only {disk_kb} kB:\n{ext}");
    let mem = explain_analyze(&srv, "64MB", q);
    assert!(mem.contains("Sort Method: quicksort  Memory: "), "{mem}");
    let top = explain_analyze(&srv, "64kB", "SELECT * FROM t ORDER BY s, id LIMIT 10");
    assert!(top.contains("Sort Method: top-N heapsort  Memory: "), "{top}");
    let uniq = explain_analyze(&srv, "64kB", "SELECT DISTINCT s FROM t");
    assert_eq!(uniq.matches("Sort Method: external merge").count(), 1, "{uniq}");

    // temp_file_limit stops a sort that writes more, with PostgreSQL's error; the
    // session goes on.
    let (out, err) = srv.sql("SET work_mem = '64kB'; SET temp_file_limit = '100kB'; SELECT * FROM t ORDER BY s");
    assert!(err.contains("ERROR:  temporary file size exceeds temp_file_limit (100kB)"), "out {out:?} err {err:?}");
    assert_eq!(ok(&srv, "SET temp_file_limit = '100kB'; SELECT count(*) FROM t;"), "20000\n");

    // Nothing left behind.
    assert_eq!(temp_files(dir.path()), Vec::<String>::new());
}

#[test]
fn group_by_and_distinct_beyond_work_mem_equal_the_in_memory_answer() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    load(&srv);
    let data = rows();
    let queries = [
        // 5000 groups: far more than 64 kB of them.
        "SELECT s, count(*), sum(id), min(id), max(n), avg(n) FROM t GROUP BY s ORDER BY s",
        "SELECT k, count(*), sum(id) FROM t GROUP BY k HAVING count(*) > 18 ORDER BY k NULLS FIRST",
        "SELECT s, k, count(*) FROM t GROUP BY s, k ORDER BY 3 DESC, 1, 2 LIMIT 50",
        "SELECT DISTINCT s FROM t ORDER BY s",
        "SELECT DISTINCT ON (k) k, id FROM t ORDER BY k, id DESC",
        "SELECT count(*), sum(c) FROM (SELECT s, count(*) AS c FROM t GROUP BY s) g",
    ];
    for q in queries {
        let small = ok(&srv, &format!("SET work_mem = '64kB'; {q}"));
        let large = ok(&srv, &format!("SET work_mem = '1GB'; {q}"));
        assert_eq!(small, large, "{q}");
        assert!(!small.is_empty(), "{q}");
    }
    // And against the formulas: groups of s (count, sum of ids).
    let mut groups: std::collections::BTreeMap<&[u8], (i64, i64)> = Default::default();
    for r in &data {
        let e = groups.entry(r.s.as_bytes()).or_default();
        e.0 += 1;
        e.1 += r.id;
    }
    let want = lines(groups.iter().map(|(s, (c, sum))| format!("{}|{c}|{sum}", String::from_utf8_lossy(s))));
    let got = ok(&srv, "SET work_mem = '64kB'; SELECT s, count(*), sum(id) FROM t GROUP BY s ORDER BY s;");
    assert!(got == want, "GROUP BY s: {} groups, want {}", got.lines().count(), groups.len());
    // Without ORDER BY the groups come in some order; the set is the same.
    let mut unordered: Vec<String> = ok(&srv, "SET work_mem = '64kB'; SELECT s, count(*), sum(id) FROM t GROUP BY s;").lines().map(String::from).collect();
    unordered.sort_by(|a, b| a.split('|').next().unwrap().as_bytes().cmp(b.split('|').next().unwrap().as_bytes()));
    assert_eq!(lines(unordered), want);
    assert_eq!(temp_files(dir.path()), Vec::<String>::new());
}

#[test]
fn files_are_removed_after_a_timeout_mid_sort_and_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut srv = Server::start(dir.path());
    // Watch base/pgsql_tmp while the sort runs: files must appear, then go.
    let ((out, err), seen) = with_temp_file_watch(dir.path(), || {
        srv.sql(
            "SET work_mem = '64kB'; SET statement_timeout = '1500ms';
             SELECT g FROM generate_series(1, 20000000) g ORDER BY g DESC LIMIT 10000000 OFFSET 9999999",
        )
    });
    assert!(err.contains("canceling statement due to statement timeout"), "out {out:?} err {err:?}");
    assert!(seen > 0, "the sort wrote no temporary file before the timeout");
    assert_eq!(temp_files(dir.path()), Vec::<String>::new(), "files left after the cancel");
    // The session goes on.
    assert_eq!(ok(&srv, "SET work_mem = '64kB'; SELECT g FROM generate_series(1, 50000) g ORDER BY g DESC LIMIT 2;"), "50000\n49999\n");

    // Stray files (as a crash leaves them) are removed at the next start.
    srv.signal(libc::SIGTERM);
    std::fs::create_dir_all(dir.path().join("data/base/pgsql_tmp")).unwrap();
    std::fs::write(dir.path().join("data/base/pgsql_tmp/pgsql_tmp4242.0"), b"left by a crash").unwrap();
    assert_eq!(temp_files(dir.path()).len(), 1);
    let _srv = Server::start(dir.path());
    assert_eq!(temp_files(dir.path()), Vec::<String>::new());
}


/// Runs `q` through psql with its rows discarded; returns the growth of the
/// server's peak RSS (kB) and the row count psql reports.
fn peak_growth(srv: &Server, q: &str) -> u64 {
    let before = hwm_kb(srv.pid());
    let out = srv.psql_cmd().args(["-At", "-v", "ON_ERROR_STOP=1", "-o", "/dev/null", "-c", q]).output().unwrap();
    assert!(out.status.success(), "{q}: {}", String::from_utf8_lossy(&out.stderr));
    hwm_kb(srv.pid()).saturating_sub(before)
}

/// The bound this test states: a sort or grouping of a million rows with the
/// default work_mem (4MB) grows the server's peak RSS by less than 64 MB.
const BOUND_KB: u64 = 64 * 1024;

#[test]
fn a_million_row_sort_and_group_by_stay_within_a_bound() {
    let dir = tempfile::tempdir().unwrap();
    let mut srv = Server::start(dir.path());
    ok(&srv, "CREATE TABLE big (id int, s text); INSERT INTO big SELECT g, md5(g::text) FROM generate_series(1, 1000000) g;");
    // A fresh server: its peak RSS is not the load's.
    srv.signal(libc::SIGTERM);
    let srv = Server::start(dir.path());
    ok(&srv, "SELECT count(*) FROM big");
    let sort = peak_growth(&srv, "SELECT id, s FROM big ORDER BY s");
    let group = peak_growth(&srv, "SELECT s, count(*), max(id) FROM big GROUP BY s");
    let distinct = peak_growth(&srv, "SELECT DISTINCT s FROM big");
    eprintln!("peak RSS growth, default work_mem: ORDER BY {sort} kB, GROUP BY {group} kB, DISTINCT {distinct} kB");
    // The answers are right (one group per row, sorted output checked by count and ends).
    assert_eq!(ok(&srv, "SELECT count(*) FROM (SELECT s, count(*) FROM big GROUP BY s) g"), "1000000\n");
    assert_eq!(
        ok(&srv, "SELECT s FROM (SELECT s FROM big ORDER BY s) o LIMIT 1"),
        ok(&srv, "SELECT min(s) FROM big")
    );
    for (what, kb) in [("ORDER BY", sort), ("GROUP BY", group), ("DISTINCT", distinct)] {
        assert!(kb < BOUND_KB, "{what} over a million rows grew the peak RSS by {kb} kB (bound {BOUND_KB} kB)");
    }
    assert_eq!(temp_files(dir.path()), Vec::<String>::new());
    // The same sort held in memory (work_mem large enough: the old executor's
    // behaviour) grows it far more: the bound is a real one.
    let in_memory = peak_growth(&srv, "SET work_mem = '2GB'; SELECT id, s FROM big ORDER BY s");
    eprintln!("peak RSS growth, work_mem 2GB: ORDER BY {in_memory} kB");
    assert!(in_memory > BOUND_KB, "an in-memory sort of a million rows grew the peak RSS by only {in_memory} kB");
}
