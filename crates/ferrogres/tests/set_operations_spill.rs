//! UNION / INTERSECT / EXCEPT [ALL] within `work_mem` (issue 19, item 4;
//! `ferrogres_sql::setop`): their inputs, ten times `work_mem` and more, are
//! deduplicated through the external sort, and the answers equal the ones
//! computed here from the tables' formulas and the ones an in-memory run gives;
//! no temporary file is left.

mod common;
use common::server::{ok_after_sets as ok, temp_files, Server};
use std::collections::HashMap;

/// s1's row g: (x, t); x NULL every 101st row.
fn s1(g: i64) -> (Option<i64>, String) {
    ((g % 101 != 0).then_some(g % 7000), format!("v{}", g % 300))
}
/// s2's row g.
fn s2(g: i64) -> (Option<i64>, String) {
    ((g % 97 != 0).then_some((g * 3) % 9000), format!("v{}", g % 300))
}

const N1: i64 = 40_000;
const N2: i64 = 30_000;

type Counts = HashMap<(Option<i64>, String), (i64, i64)>;

fn counts() -> Counts {
    let mut c: Counts = HashMap::new();
    for g in 1..=N1 {
        c.entry(s1(g)).or_default().0 += 1;
    }
    for g in 1..=N2 {
        c.entry(s2(g)).or_default().1 += 1;
    }
    c
}

/// `count(*), count(x), sum(x)` of the rows a set operation returns, each row
/// `times(m, n)` times.
fn expected(c: &Counts, times: fn(i64, i64) -> i64) -> String {
    let (mut rows, mut nonnull, mut sum) = (0i64, 0i64, 0i64);
    for ((x, _), (m, n)) in c {
        let t = times(*m, *n);
        rows += t;
        if let Some(x) = x {
            nonnull += t;
            sum += t * x;
        }
    }
    let sum = if nonnull == 0 { String::new() } else { sum.to_string() };
    format!("{rows}|{nonnull}|{sum}\n")
}

#[test]
fn set_operations_beyond_work_mem_equal_the_computed_and_in_memory_answers() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    ok(
        &srv,
        &format!(
            "CREATE TABLE s1 (x int, t text); INSERT INTO s1 SELECT CASE WHEN g % 101 <> 0 THEN g % 7000 END, 'v' || (g % 300) FROM generate_series(1, {N1}) g;
             CREATE TABLE s2 (x int, t text); INSERT INTO s2 SELECT CASE WHEN g % 97 <> 0 THEN (g * 3) % 9000 END, 'v' || (g % 300) FROM generate_series(1, {N2}) g;"
        ),
    );
    let c = counts();
    /// The count of a value in the result from its counts in s1 and s2.
    type Count = fn(i64, i64) -> i64;
    let cases: [(&str, Count); 6] = [
        ("UNION", |m, n| i64::from(m + n > 0)),
        ("UNION ALL", |m, n| m + n),
        ("INTERSECT", |m, n| i64::from(m > 0 && n > 0)),
        ("INTERSECT ALL", |m, n| m.min(n)),
        ("EXCEPT", |m, n| i64::from(m > 0 && n == 0)),
        ("EXCEPT ALL", |m, n| (m - n).max(0)),
    ];
    for (op, times) in cases {
        let q = format!("SELECT count(*), count(x), sum(x) FROM (SELECT x, t FROM s1 {op} SELECT x, t FROM s2) u;");
        let want = expected(&c, times);
        assert_eq!(ok(&srv, &format!("SET work_mem = '64kB'; {q}")), want, "{q} at 64kB");
        assert_eq!(ok(&srv, &format!("SET work_mem = '1GB'; {q}")), want, "{q} at 1GB");
        assert_eq!(temp_files(dir.path()), Vec::<String>::new(), "{q}");
    }
    // Without ORDER BY, the deduplicated rows come in sort order (NULLs last),
    // spilled or not; the first and last rows and the row count show it.
    let q = "SELECT x, t FROM s1 UNION SELECT x, t FROM s2";
    let small = ok(&srv, &format!("SET work_mem = '64kB'; {q};"));
    assert_eq!(small, ok(&srv, &format!("SET work_mem = '1GB'; {q};")));
    let mut want: Vec<(Option<i64>, String)> = c.keys().cloned().collect();
    want.sort_by(|a, b| match (a.0, b.0) {
        (Some(x), Some(y)) => x.cmp(&y).then_with(|| a.1.as_bytes().cmp(b.1.as_bytes())),
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, None) => a.1.as_bytes().cmp(b.1.as_bytes()),
    });
    let want: String = want.iter().map(|(x, t)| format!("{}|{t}\n", x.map_or(String::new(), |x| x.to_string()))).collect();
    assert_eq!(small, want);
    // Chained set operations and a set operation under a join.
    for q in [
        "SELECT count(*) FROM (SELECT x FROM s1 UNION SELECT x FROM s2 EXCEPT SELECT x FROM s1 WHERE x % 2 = 0) u;",
        "SELECT count(*), sum(u.x) FROM (SELECT x, t FROM s1 INTERSECT ALL SELECT x, t FROM s2) u JOIN s2 ON s2.x = u.x;",
    ] {
        assert_eq!(ok(&srv, &format!("SET work_mem = '64kB'; {q}")), ok(&srv, &format!("SET work_mem = '1GB'; {q}")), "{q}");
    }
    assert_eq!(temp_files(dir.path()), Vec::<String>::new());
}
