//! Hash joins within `work_mem` (issue 19, item 4; `ferrogres_sql::hashjoin`):
//! beyond it the build side is split into batches written to temporary files,
//! and a batch that cannot be split (one key with more rows than fit, or a join
//! without hash keys) is joined a chunk at a time. Every join kind gives the
//! answer computed here from the tables' formulas, and the same answer at
//! `work_mem = 64kB` as at 1GB; EXPLAIN ANALYZE shows the batches; no temporary
//! file is left (also after a statement_timeout in the middle of a join); a join
//! of two million-row tables keeps the server's peak RSS growth under a stated
//! bound.

mod common;
use common::server::{hwm_kb, ok_after_sets as ok, temp_files, with_temp_file_watch, Server};
use std::collections::HashMap;

const NA: i64 = 30_000;
const NB: i64 = 24_000;

/// a(id, k, v): k = NULL every 13th row, else g % 5000 (duplicates); v = g.
fn a_key(g: i64) -> Option<i64> {
    (g % 13 != 0).then_some(g % 5000)
}
/// b(id, k, w): k = NULL every 11th row, else (g * 7) % 7000 (keys 5000..7000
/// match nothing in a); w = 2g.
fn b_key(g: i64) -> Option<i64> {
    (g % 11 != 0).then_some((g * 7) % 7000)
}

fn load(srv: &Server) {
    ok(
        srv,
        &format!(
            "CREATE TABLE a (id int, k int, v int, pad text);
             INSERT INTO a SELECT g, CASE WHEN g % 13 <> 0 THEN g % 5000 END, g, repeat('a', 30) FROM generate_series(1, {NA}) g;
             CREATE TABLE b (id int, k int, w int, pad text);
             INSERT INTO b SELECT g, CASE WHEN g % 11 <> 0 THEN (g * 7) % 7000 END, 2 * g, repeat('b', 30) FROM generate_series(1, {NB}) g;
             CREATE TABLE skew (id int, k int);
             INSERT INTO skew SELECT g, CASE WHEN g <= 20000 THEN 7 ELSE g END FROM generate_series(1, 25000) g;"
        ),
    );
}

/// Per key: (rows, sum of the value column).
fn per_key(n: i64, key: fn(i64) -> Option<i64>, val: fn(i64) -> i64) -> HashMap<i64, (i64, i64)> {
    let mut m: HashMap<i64, (i64, i64)> = HashMap::new();
    for g in 1..=n {
        if let Some(k) = key(g) {
            let e = m.entry(k).or_default();
            e.0 += 1;
            e.1 += val(g);
        }
    }
    m
}

/// `count(*), count(a.id), count(b.id), sum(a.v), sum(b.w)` of each outer join
/// kind, computed from the formulas.
fn expected(kind: &str) -> String {
    let ka = per_key(NA, a_key, |g| g);
    let kb = per_key(NB, b_key, |g| 2 * g);
    let (mut inner, mut sum_v, mut sum_w) = (0i64, 0i64, 0i64);
    for (k, (ca, sa)) in &ka {
        if let Some((cb, sb)) = kb.get(k) {
            inner += ca * cb;
            sum_v += sa * cb;
            sum_w += sb * ca;
        }
    }
    let a_unmatched: Vec<i64> = (1..=NA).filter(|&g| a_key(g).is_none_or(|k| !kb.contains_key(&k))).collect();
    let b_unmatched: Vec<i64> = (1..=NB).filter(|&g| b_key(g).is_none_or(|k| !ka.contains_key(&k))).collect();
    let (lu, ru) = (a_unmatched.len() as i64, b_unmatched.len() as i64);
    let (luv, ruw) = (a_unmatched.iter().sum::<i64>(), b_unmatched.iter().map(|g| 2 * g).sum::<i64>());
    let (count, ca, cb, sv, sw) = match kind {
        "JOIN" => (inner, inner, inner, sum_v, sum_w),
        "LEFT JOIN" => (inner + lu, inner + lu, inner, sum_v + luv, sum_w),
        "RIGHT JOIN" => (inner + ru, inner, inner + ru, sum_v, sum_w + ruw),
        "FULL JOIN" => (inner + lu + ru, inner + lu, inner + ru, sum_v + luv, sum_w + ruw),
        _ => unreachable!(),
    };
    format!("{count}|{ca}|{cb}|{sv}|{sw}\n")
}

fn at(srv: &Server, work_mem: &str, q: &str) -> String {
    ok(srv, &format!("SET work_mem = '{work_mem}'; {q}"))
}

fn explain_analyze(srv: &Server, work_mem: &str, q: &str) -> String {
    at(srv, work_mem, &format!("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) {q}"))
}

#[test]
fn every_join_kind_beyond_work_mem_equals_the_computed_and_in_memory_answers() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    load(&srv);
    for kind in ["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"] {
        let q = format!("SELECT count(*), count(a.id), count(b.id), sum(a.v), sum(b.w) FROM a {kind} b ON a.k = b.k");
        let want = expected(kind);
        assert_eq!(at(&srv, "64kB", &format!("{q};")), want, "{q} at 64kB");
        assert_eq!(at(&srv, "1GB", &format!("{q};")), want, "{q} at 1GB");
        let plan = explain_analyze(&srv, "64kB", &format!("{q};"));
        let batches = plan.lines().find_map(|l| l.trim().strip_prefix("Buckets: ")).unwrap_or_else(|| panic!("no Buckets line:\n{plan}"));
        let n: u64 = batches.split("Batches: ").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
        assert!(n > 1, "{q} at 64kB ran in {n} batch(es):\n{plan}");
        let plan = explain_analyze(&srv, "1GB", &format!("{q};"));
        assert!(plan.contains("Batches: 1  Memory Usage: "), "{q} at 1GB:\n{plan}");
    }
    // Semi- and anti-joins (EXISTS / NOT EXISTS), NULL keys on both sides.
    let kb = per_key(NB, b_key, |g| g);
    let semi: Vec<i64> = (1..=NA).filter(|&g| a_key(g).is_some_and(|k| kb.contains_key(&k))).collect();
    let anti: Vec<i64> = (1..=NA).filter(|&g| a_key(g).is_none_or(|k| !kb.contains_key(&k))).collect();
    for (q, rows) in [
        ("SELECT count(*), sum(v) FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.k = a.k);", &semi),
        ("SELECT count(*), sum(v) FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.k = a.k);", &anti),
    ] {
        let want = format!("{}|{}\n", rows.len(), rows.iter().sum::<i64>());
        assert_eq!(at(&srv, "64kB", q), want, "{q} at 64kB");
        assert_eq!(at(&srv, "1GB", q), want, "{q} at 1GB");
    }
    // A residual condition beside the keys, and joins of derived inputs: the
    // same answer in batches as in memory.
    for q in [
        "SELECT count(*), sum(a.v), sum(b.w) FROM a JOIN b ON a.k = b.k AND (a.v + b.w) % 3 = 0;",
        "SELECT count(*), count(b.id), sum(a.v) FROM a LEFT JOIN b ON a.k = b.k AND b.w % 5 = 0;",
        "SELECT count(*), count(a.id), count(b.id) FROM a FULL JOIN b ON a.k = b.k AND a.v < b.w;",
        "SELECT count(*), sum(v) FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.k = a.k AND b.w > a.v);",
        "SELECT count(*), sum(v) FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.k = a.k AND b.w > a.v);",
        "SELECT count(*), sum(x.v) FROM (SELECT k, v FROM a WHERE v % 2 = 0) x JOIN (SELECT k, w FROM b UNION ALL SELECT k, w FROM b) y ON x.k = y.k;",
    ] {
        let small = at(&srv, "64kB", q);
        assert_eq!(small, at(&srv, "1GB", q), "{q}");
        assert!(!small.starts_with("0|"), "{q}: {small}");
    }
    assert_eq!(temp_files(dir.path()), Vec::<String>::new());
}

#[test]
fn a_skewed_key_and_a_join_without_keys_finish_in_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    load(&srv);
    // skew: 20000 rows of key 7, 5000 of distinct keys 20001..25000; a has
    // key 7 in rows g = 7 (mod 5000), not every 13th: count them.
    let a7: Vec<i64> = (1..=NA).filter(|&g| a_key(g) == Some(7)).collect();
    let want = format!("{}|{}\n", a7.len() as i64 * 20000, a7.iter().sum::<i64>() * 20000);
    for q in ["SELECT count(*), sum(a.v) FROM a JOIN skew s ON a.k = s.k;", "SELECT count(*), sum(a.v) FROM skew s JOIN a ON a.k = s.k;"] {
        assert_eq!(at(&srv, "64kB", q), want, "{q} at 64kB");
        assert_eq!(at(&srv, "1GB", q), want, "{q} at 1GB");
    }
    // Outer: every skew row but those of key 7 is unmatched.
    let q = "SELECT count(*), count(a.id), count(s.id) FROM a RIGHT JOIN skew s ON a.k = s.k;";
    let matched = a7.len() as i64 * 20000;
    assert_eq!(at(&srv, "64kB", q), format!("{}|{}|{}\n", matched + 5000, matched, matched + 5000));
    let q = "SELECT count(*), count(a.id), count(s.id) FROM a FULL JOIN skew s ON a.k = s.k;";
    let small = at(&srv, "64kB", q);
    assert_eq!(small, at(&srv, "1GB", q));
    let plan = explain_analyze(&srv, "64kB", q);
    assert!(plan.contains("Batches: "), "{plan}");
    // No hash keys: a nested loop over a build side larger than work_mem.
    for q in [
        "SELECT count(*), sum(x.v) FROM (SELECT v FROM a WHERE v <= 1500) x JOIN (SELECT w FROM b WHERE w <= 3000) y ON x.v * 2 > y.w;",
        "SELECT count(*), count(y.w) FROM (SELECT v FROM a WHERE v <= 1500) x LEFT JOIN (SELECT w FROM b WHERE w <= 3000) y ON x.v > y.w;",
        "SELECT count(*), count(x.v) FROM (SELECT v FROM a WHERE v <= 1500) x RIGHT JOIN (SELECT w FROM b WHERE w <= 3000) y ON x.v > y.w;",
    ] {
        assert_eq!(at(&srv, "64kB", q), at(&srv, "1GB", q), "{q}");
    }
    // The nested loop's answer, computed: pairs with 2v > w, v <= 1500, w = 2g <= 3000.
    let want: i64 = (1..=1500i64).map(|v| (1..=1500i64).filter(|g| 2 * v > 2 * g).count() as i64).sum();
    let got = at(&srv, "64kB", "SELECT count(*) FROM (SELECT v FROM a WHERE v <= 1500) x JOIN (SELECT w FROM b WHERE w <= 3000) y ON x.v * 2 > y.w;");
    assert_eq!(got, format!("{want}\n"));
    assert_eq!(temp_files(dir.path()), Vec::<String>::new());
}

#[test]
fn files_are_removed_after_a_timeout_mid_join() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    ok(&srv, "CREATE TABLE x (id int, k int); INSERT INTO x SELECT g, g FROM generate_series(1, 300000) g;");
    let ((out, err), seen) = with_temp_file_watch(dir.path(), || {
        srv.sql(
            "SET work_mem = '64kB'; SET statement_timeout = '1500ms';
             SELECT count(*) FROM x JOIN x y ON x.k = y.k JOIN x z ON z.k = y.k JOIN x w ON w.k = z.k JOIN x v ON v.k % 1000 = w.k % 1000;",
        )
    });
    assert!(err.contains("canceling statement due to statement timeout"), "out {out:?} err {err:?}");
    assert!(seen > 0, "the join wrote no temporary file before the timeout");
    assert_eq!(temp_files(dir.path()), Vec::<String>::new(), "files left after the cancel");
    // The session goes on.
    assert_eq!(ok(&srv, "SET work_mem = '64kB'; SELECT count(*) FROM x JOIN x y ON x.k = y.k;"), "300000\n");
    assert_eq!(temp_files(dir.path()), Vec::<String>::new());
}


/// Runs `q` through psql; returns its output and the growth of the server's
/// peak RSS (kB).
fn peak_growth(srv: &Server, q: &str) -> (String, u64) {
    let before = hwm_kb(srv.pid());
    let out = srv.psql_cmd().args(["-At", "-v", "ON_ERROR_STOP=1", "-c", q]).output().unwrap();
    assert!(out.status.success(), "{q}: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (text.trim_start_matches("SET\n").to_string(), hwm_kb(srv.pid()).saturating_sub(before))
}

/// The bound this test states: a hash join of two million-row tables at
/// `work_mem = 64kB` grows the server's peak RSS by less than 64 MB (the
/// batches' file buffers, at most 1024 batches x 2 files x 8 kB = 16 MB, plus
/// the scans and the allocator's slack).
const BOUND_KB: u64 = 64 * 1024;

#[test]
fn a_join_of_two_million_row_tables_stays_within_a_bound() {
    let dir = tempfile::tempdir().unwrap();
    let mut srv = Server::start(dir.path());
    ok(
        &srv,
        "CREATE TABLE l (id int, k int, v int); INSERT INTO l SELECT g, g % 700000, g % 1000 FROM generate_series(1, 1000000) g;
         CREATE TABLE r (id int, k int, w int); INSERT INTO r SELECT g, (g * 3) % 900000, g % 777 FROM generate_series(1, 1000000) g;",
    );
    // Computed: per key, rows and sums on each side.
    let mut lk: HashMap<i64, (i64, i64)> = HashMap::new();
    for g in 1..=1_000_000i64 {
        let e = lk.entry(g % 700_000).or_default();
        e.0 += 1;
        e.1 += g % 1000;
    }
    let (mut count, mut sv, mut sw, mut right_unmatched) = (0i64, 0i64, 0i64, 0i64);
    for g in 1..=1_000_000i64 {
        match lk.get(&((g * 3) % 900_000)) {
            Some((c, s)) => {
                count += c;
                sv += s;
                sw += c * (g % 777);
            }
            None => right_unmatched += 1,
        }
    }
    srv.signal(libc::SIGTERM);
    let srv = Server::start(dir.path());
    ok(&srv, "SELECT count(*) FROM l; SELECT count(*) FROM r;");
    let q = "SET work_mem = '64kB'; SELECT count(*), sum(l.v), sum(r.w) FROM l JOIN r ON l.k = r.k;";
    let (out, grew) = peak_growth(&srv, q);
    eprintln!("peak RSS growth, join of 1M x 1M at work_mem 64kB: {grew} kB");
    assert_eq!(out, format!("{count}|{sv}|{sw}\n"));
    assert!(grew < BOUND_KB, "the join grew the peak RSS by {grew} kB (bound {BOUND_KB} kB)");
    let q = "SET work_mem = '64kB'; SELECT count(*), count(l.id) FROM l RIGHT JOIN r ON l.k = r.k;";
    assert_eq!(peak_growth(&srv, q).0, format!("{}|{}\n", count + right_unmatched, count));
    assert_eq!(temp_files(dir.path()), Vec::<String>::new());
    // The same join in memory (work_mem 1GB): the same answer, and far more memory.
    let (out, in_memory) = peak_growth(&srv, "SET work_mem = '1GB'; SELECT count(*), sum(l.v), sum(r.w) FROM l JOIN r ON l.k = r.k;");
    eprintln!("peak RSS growth, the same join at work_mem 1GB: {in_memory} kB");
    assert_eq!(out, format!("{count}|{sv}|{sw}\n"));
    assert!(in_memory > BOUND_KB, "an in-memory join of a million rows grew the peak RSS by only {in_memory} kB");
}
