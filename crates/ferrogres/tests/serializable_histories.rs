//! SERIALIZABLE under real interleaved sessions: a bank-style workload with
//! write-skew opportunities (each transaction reads both accounts of a
//! customer, withdraws from one if the sum allows it), run by several
//! concurrent raw-protocol sessions. Every committed transaction records the
//! row versions it read and wrote; the test then builds the dependency graph
//! of the committed history (wr, ww and rw edges from the version order of
//! each row) and checks it is acyclic, i.e. the history is serializable. The
//! business invariant (no customer's total below zero) must hold too, and the
//! run must have had serialization failures (the workload does conflict).

mod common;
use common::client::Client;
use common::pg15::Pg15;
use common::server::Server;
use std::collections::{HashMap, HashSet};

const SESSIONS: usize = 6;
const TXNS_PER_SESSION: usize = 60;
const CUSTOMERS: i64 = 3;

#[derive(Debug, Default, Clone)]
struct Txn {
    /// (row id, version read)
    reads: Vec<(i64, i64)>,
    /// (row id, version written)
    writes: Vec<(i64, i64)>,
}

/// A tiny deterministic generator (no external crates).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

fn run_session(port: u16, seed: u64) -> (Vec<Txn>, usize) {
    let mut c = Client::connect(port);
    let mut rng = Lcg(seed);
    let mut committed = Vec::new();
    let mut failures = 0;
    for _ in 0..TXNS_PER_SESSION {
        let cust = (rng.next() % CUSTOMERS as u64) as i64;
        let (a, b) = (cust * 2, cust * 2 + 1);
        let from = if rng.next().is_multiple_of(2) { a } else { b };
        let amount = 1 + (rng.next() % 60) as i64;
        let mut t = Txn::default();
        let r = c.query("BEGIN ISOLATION LEVEL SERIALIZABLE");
        assert!(r.error.is_none(), "{:?}", r.error);
        let read = c.query(&format!("SELECT id, balance, version FROM acct WHERE id IN ({a}, {b}) ORDER BY id"));
        let ok = (|| -> Result<(), String> {
            if let Some(e) = &read.error {
                return Err(e[&b'C'].clone());
            }
            let mut sum = 0;
            for row in &read.rows {
                let id: i64 = row[0].as_ref().unwrap().parse().unwrap();
                sum += row[1].as_ref().unwrap().parse::<i64>().unwrap();
                t.reads.push((id, row[2].as_ref().unwrap().parse().unwrap()));
            }
            if sum >= amount {
                let u = c.query(&format!(
                    "UPDATE acct SET balance = balance - {amount}, version = version + 1 WHERE id = {from} RETURNING version"
                ));
                if let Some(e) = &u.error {
                    return Err(e[&b'C'].clone());
                }
                let v: i64 = u.rows[0][0].as_ref().unwrap().parse().unwrap();
                t.reads.push((from, v - 1));
                t.writes.push((from, v));
            }
            let cm = c.query("COMMIT");
            if let Some(e) = &cm.error {
                return Err(e[&b'C'].clone());
            }
            Ok(())
        })();
        match ok {
            Ok(()) => committed.push(t),
            Err(code) => {
                assert_eq!(code, "40001", "only serialization failures are expected");
                failures += 1;
                let r = c.query("ROLLBACK");
                assert!(r.error.is_none());
            }
        }
    }
    (committed, failures)
}

/// Is the committed history's dependency graph acyclic? Nodes: transactions
/// (0 = the initial load). For each row, versions are totally ordered:
/// writer(v) -ww-> writer(v+1); writer(v) -wr-> every reader of v; every
/// reader of v -rw-> writer(v+1).
fn acyclic(txns: &[Txn]) -> Result<(), String> {
    let mut writer: HashMap<(i64, i64), usize> = HashMap::new();
    for (i, t) in txns.iter().enumerate() {
        for &w in &t.writes {
            assert!(writer.insert(w, i + 1).is_none(), "version {w:?} written twice");
        }
    }
    let who = |row: i64, v: i64| if v == 0 { Some(0) } else { writer.get(&(row, v)).copied() };
    let n = txns.len() + 1;
    let mut edges: Vec<HashSet<usize>> = vec![HashSet::new(); n];
    for (i, t) in txns.iter().enumerate() {
        let me = i + 1;
        for &(row, v) in &t.reads {
            let w = who(row, v).ok_or(format!("read of a version no committed transaction wrote: {row} v{v}"))?;
            if w != me {
                edges[w].insert(me);
            }
            if let Some(next) = who(row, v + 1) {
                if next != me {
                    edges[me].insert(next);
                }
            }
        }
        for &(row, v) in &t.writes {
            if let Some(prev) = who(row, v - 1) {
                if prev != me {
                    edges[prev].insert(me);
                }
            }
        }
    }
    // Kahn's algorithm.
    let mut indeg = vec![0usize; n];
    for e in &edges {
        for &j in e {
            indeg[j] += 1;
        }
    }
    let mut stack: Vec<usize> = (0..n).filter(|&i| indeg[i] == 0).collect();
    let mut seen = 0;
    while let Some(i) = stack.pop() {
        seen += 1;
        for &j in &edges[i] {
            indeg[j] -= 1;
            if indeg[j] == 0 {
                stack.push(j);
            }
        }
    }
    if seen == n {
        Ok(())
    } else {
        Err(format!("dependency cycle among {} committed transactions", n - seen))
    }
}

#[test]
fn the_checker_finds_write_skew() {
    // T1 reads x0,y0 writes x1; T2 reads x0,y0 writes y1: a cycle.
    let t1 = Txn { reads: vec![(0, 0), (1, 0)], writes: vec![(0, 1)] };
    let t2 = Txn { reads: vec![(0, 0), (1, 0)], writes: vec![(1, 1)] };
    assert!(acyclic(&[t1.clone(), t2]).is_err());
    let t2 = Txn { reads: vec![(0, 1), (1, 0)], writes: vec![(1, 1)] };
    assert!(acyclic(&[t1, t2]).is_ok());
}

/// Runs the workload against the server on `port`; checks the history and
/// the invariant; returns (committed, serialization failures).
fn run_workload(port: u16) -> (usize, usize) {
    let mut c = Client::connect(port);
    let _ = c.query("DROP TABLE IF EXISTS acct");
    let r = c.query("CREATE TABLE acct (id int PRIMARY KEY, balance int NOT NULL, version int NOT NULL)");
    assert!(r.error.is_none(), "{:?}", r.error);
    for id in 0..CUSTOMERS * 2 {
        assert!(c.query(&format!("INSERT INTO acct VALUES ({id}, 50, 0)")).error.is_none());
    }
    let handles: Vec<_> = (0..SESSIONS).map(|s| std::thread::spawn(move || run_session(port, 17 + s as u64))).collect();
    let mut all = Vec::new();
    let mut failures = 0;
    for h in handles {
        let (t, f) = h.join().unwrap();
        all.extend(t);
        failures += f;
    }
    let total = SESSIONS * TXNS_PER_SESSION;
    eprintln!(
        "committed {} of {total}, {failures} serialization failures ({:.1} %)",
        all.len(),
        100.0 * failures as f64 / total as f64
    );
    acyclic(&all).unwrap();
    // No customer overdrawn: the write skew SERIALIZABLE prevents.
    for cust in 0..CUSTOMERS {
        let sum = c.query(&format!("SELECT sum(balance) FROM acct WHERE id IN ({}, {})", cust * 2, cust * 2 + 1)).one();
        assert!(sum.parse::<i64>().unwrap() >= 0, "customer {cust} overdrawn: {sum}");
    }
    // The final versions agree with the history.
    for id in 0..CUSTOMERS * 2 {
        let v: i64 = c.query(&format!("SELECT version FROM acct WHERE id = {id}")).one().parse().unwrap();
        let writes = all.iter().flat_map(|t| &t.writes).filter(|w| w.0 == id).count() as i64;
        assert_eq!(v, writes, "row {id}");
    }
    (all.len(), failures)
}

#[test]
fn write_skew_workload_commits_only_serializable_histories() {
    let tmp = tempfile::tempdir().unwrap();
    let server = Server::start(tmp.path());
    let (committed, failures) = run_workload(server.port);
    assert!(failures > 0, "the workload should have conflicted");
    assert!(committed > 0);
}

/// The same workload on PostgreSQL 15 (TCP port in `SSI_COMPARE_PGPORT`,
/// user postgres, trust), for the failure fraction side by side:
/// `SSI_COMPARE_PGPORT=55492 cargo test -p ferrogres --test
/// serializable_histories -- --ignored --nocapture`. Not in the default run.
#[test]
#[ignore]
fn write_skew_workload_on_postgresql() {
    let port: u16 = std::env::var("SSI_COMPARE_PGPORT").expect("set SSI_COMPARE_PGPORT").parse().unwrap();
    run_workload(port);
}

/// The SIREAD rows of pg_locks: locktype, relation, page, tuple, pid.
fn sireads(obs: &mut Client) -> Vec<Vec<Option<String>>> {
    let r = obs.query(
        "SELECT locktype, relation::regclass::text, page, tuple, pid FROM pg_locks WHERE mode = 'SIReadLock' ORDER BY pid, locktype",
    );
    assert!(r.error.is_none(), "{:?}", r.error);
    r.rows
}

/// A server on `dir` with table `t (id int PRIMARY KEY, v int)` holding ids
/// 1..10 (v = id), two sessions and a third that watches pg_locks.
fn two_sessions_and_an_observer(dir: &std::path::Path) -> (Server, Client, Client, Client) {
    let server = Server::start(dir);
    let mut a = Client::connect(server.port);
    let b = Client::connect(server.port);
    let obs = Client::connect(server.port);
    assert!(a.query("CREATE TABLE t (id int PRIMARY KEY, v int)").error.is_none());
    assert!(a.query("INSERT INTO t SELECT g, g FROM generate_series(1, 10) g").error.is_none());
    (server, a, b, obs)
}

/// A serializable index probe locks the B-tree leaf page it read (not the
/// whole index) and the row it returned, as PostgreSQL 15 shows them (its
/// rows for the same statements: `page t_pkey 1`, `tuple t 0 5`); a probe
/// that finds nothing locks the leaf where its key would be (the same page
/// here: nothing new). An insert into another leaf of the index is no
/// conflict, so two transactions each reading and inserting their own keys
/// both commit.
#[test]
fn index_probe_locks_the_leaf_page_it_read() {
    let tmp = tempfile::tempdir().unwrap();
    let (_server, mut a, mut b, mut obs) = two_sessions_and_an_observer(tmp.path());
    assert!(a.query("BEGIN ISOLATION LEVEL SERIALIZABLE").error.is_none());
    assert_eq!(a.query("SELECT v FROM t WHERE id = 5").one(), "5");
    let pid = Some(a.pid.to_string());
    let want = vec![
        vec![Some("page".into()), Some("t_pkey".into()), Some("1".into()), None, pid.clone()],
        vec![Some("tuple".into()), Some("t".into()), Some("0".into()), Some("5".into()), pid.clone()],
    ];
    assert_eq!(sireads(&mut obs), want);
    assert!(a.query("SELECT v FROM t WHERE id = 50").rows.is_empty());
    assert_eq!(sireads(&mut obs), want);
    assert!(a.query("COMMIT").error.is_none());

    // Every tenth key up to 20000: several leaves. a and b each probe for a
    // missing key and insert it, a near 1000 and b near 15000 (other leaves):
    // no rw-conflict, both commit. With the whole index locked by each probe,
    // each insert was a conflict with the other's read: write skew, b failed.
    assert!(a.query("INSERT INTO t SELECT g * 10, g FROM generate_series(2, 2000) g").error.is_none());
    assert!(a.query("ANALYZE t").error.is_none());
    for round in 0..5 {
        let (ka, kb) = (1001 + round, 15001 + round);
        for (c, k) in [(&mut a, ka), (&mut b, kb)] {
            assert!(c.query("BEGIN ISOLATION LEVEL SERIALIZABLE").error.is_none());
            assert_eq!(c.query(&format!("SELECT count(*) FROM t WHERE id = {k}")).one(), "0");
        }
        assert!(a.query(&format!("INSERT INTO t VALUES ({ka}, 0)")).error.is_none());
        assert!(b.query(&format!("INSERT INTO t VALUES ({kb}, 0)")).error.is_none());
        assert!(a.query("COMMIT").error.is_none(), "round {round}");
        assert!(b.query("COMMIT").error.is_none(), "round {round}");
    }
    // The same with both near 1000 (one leaf): write skew through the page.
    for (c, k) in [(&mut a, 1101), (&mut b, 1102)] {
        assert!(c.query("BEGIN ISOLATION LEVEL SERIALIZABLE").error.is_none());
        assert_eq!(c.query(&format!("SELECT count(*) FROM t WHERE id = {k}")).one(), "0");
    }
    assert!(a.query("INSERT INTO t VALUES (1102, 0)").error.is_none());
    assert!(b.query("INSERT INTO t VALUES (1101, 0)").error.is_none());
    assert!(a.query("COMMIT").error.is_none());
    // PostgreSQL 15 fails b's commit the same way (checked by hand).
    let e = b.query("COMMIT").error.expect("b is the pivot");
    assert_eq!(e[&b'C'], "40001");
    assert_eq!(e[&b'D'], "Reason code: Canceled on identification as a pivot, during commit attempt.");
}

/// pg_locks shows SIREAD locks as PostgreSQL does (locktype, mode SIReadLock,
/// the holder's pid); a committed transaction's locks stay while an
/// overlapping serializable transaction runs, and go when it ends; READ
/// COMMITTED reads take none; a write into a read relation fails the pivot
/// with PostgreSQL's DETAIL and HINT.
#[test]
fn siread_locks_in_pg_locks_and_their_lifetime() {
    let tmp = tempfile::tempdir().unwrap();
    let (_server, mut a, mut b, mut obs) = two_sessions_and_an_observer(tmp.path());
    // READ COMMITTED: no predicate locks.
    assert!(a.query("SELECT count(*) FROM t").error.is_none());
    assert!(sireads(&mut obs).is_empty());
    // A serializable sequential scan: a relation lock held by a's pid.
    assert!(a.query("BEGIN ISOLATION LEVEL SERIALIZABLE").error.is_none());
    assert!(b.query("BEGIN ISOLATION LEVEL SERIALIZABLE").error.is_none());
    assert!(b.query("SELECT 1").error.is_none());
    assert!(a.query("SELECT sum(v) FROM t").error.is_none());
    let rows = sireads(&mut obs);
    assert_eq!(rows, vec![vec![Some("relation".into()), Some("t".into()), None, None, Some(a.pid.to_string())]]);
    // Committed, but b overlaps it: the lock stays.
    assert!(a.query("COMMIT").error.is_none());
    assert_eq!(sireads(&mut obs).len(), 1);
    assert!(b.query("COMMIT").error.is_none());
    assert!(sireads(&mut obs).is_empty(), "no overlapping transaction left");
    // Write skew through SQL: the second committer is the pivot.
    for c in [&mut a, &mut b] {
        assert!(c.query("BEGIN ISOLATION LEVEL SERIALIZABLE").error.is_none());
        assert!(c.query("SELECT sum(v) FROM t").error.is_none());
    }
    assert!(a.query("UPDATE t SET v = v + 1 WHERE id = 1").error.is_none());
    assert!(b.query("UPDATE t SET v = v + 1 WHERE id = 2").error.is_none());
    assert!(a.query("COMMIT").error.is_none());
    let r = b.query("COMMIT");
    let e = r.error.expect("b must fail");
    assert_eq!(e[&b'C'], "40001");
    assert_eq!(e[&b'M'], "could not serialize access due to read/write dependencies among transactions");
    assert_eq!(e[&b'D'], "Reason code: Canceled on identification as a pivot, during commit attempt.");
    assert_eq!(e[&b'H'], "The transaction might succeed if retried.");
    // The failed commit ended the transaction; the session goes on.
    assert_eq!(b.query("SELECT v FROM t WHERE id = 2").one(), "2");
    assert!(sireads(&mut obs).is_empty());
}

/// Runs `sql` and panics on an error.
fn ok(c: &mut Client, sql: &str) {
    let r = c.query(sql);
    assert!(r.error.is_none(), "{sql}: {:?}", r.error);
}

/// The SIREAD rows of pg_locks without pids: locktype, relation, page,
/// tuple, whether `a_pid` holds it; in a fixed order.
fn sireads_of(obs: &mut Client, a_pid: i32) -> Rows {
    let r = obs.query(&format!(
        "SELECT locktype, relation::regclass::text, page, tuple, pid = {a_pid} FROM pg_locks WHERE mode = 'SIReadLock' \
         ORDER BY 5 DESC, 1, 2, 3, 4"
    ));
    assert!(r.error.is_none(), "{:?}", r.error);
    r.rows
}

/// A serialization failure's (SQLSTATE, DETAIL).
type Failure = (String, String);

/// Rows of a query, as text.
type Rows = Vec<Vec<Option<String>>>;

/// (SQLSTATE, DETAIL) of a reply's error, if any.
fn failure(r: &common::client::Reply) -> Option<Failure> {
    r.error.as_ref().map(|e| (e[&b'C'].clone(), e.get(&b'D').cloned().unwrap_or_default()))
}

/// The hash index probe of the same statements on the server on `port`:
/// `h (k int, v int)` with k 1..1000 (ANALYZEd, then a hash index on k: 4
/// buckets on both servers), a serializable probe for k = 500 through the
/// index; the SIREAD rows of the index, then the outcome of two rounds of
/// probe-and-insert by two sessions: keys of different buckets, then keys
/// of one bucket. `planner` turns off the other plans (PostgreSQL would
/// take a bitmap scan). Returns (index rows, (both committed, b's COMMIT
/// failure) per round).
fn hash_probe_session(port: u16, planner: &[&str]) -> (Rows, Vec<(bool, Option<Failure>)>) {
    let mut a = Client::connect(port);
    let mut b = Client::connect(port);
    let mut obs = Client::connect(port);
    ok(&mut a, "CREATE TABLE h (k int, v int)");
    ok(&mut a, "INSERT INTO h SELECT g, g FROM generate_series(1, 1000) g");
    ok(&mut a, "ANALYZE h");
    ok(&mut a, "CREATE INDEX h_k ON h USING hash (k)");
    for c in [&mut a, &mut b] {
        for s in planner {
            ok(c, s);
        }
    }
    ok(&mut a, "BEGIN ISOLATION LEVEL SERIALIZABLE");
    assert_eq!(a.query("SELECT v FROM h WHERE k = 500").one(), "500");
    let r = obs.query(&format!(
        "SELECT locktype, relation::regclass::text, page, tuple, pid = {} FROM pg_locks \
         WHERE mode = 'SIReadLock' AND relation = 'h_k'::regclass",
        a.pid
    ));
    assert!(r.error.is_none(), "{:?}", r.error);
    let index_rows = r.rows;
    ok(&mut a, "COMMIT");
    // Keys past 1000 (not in the table) by bucket: hashint4(k) & 3.
    let by_bucket = |obs: &mut Client, bucket: i32| -> Vec<i32> {
        let r = obs.query(&format!("SELECT k FROM generate_series(2001, 2100) k WHERE hashint4(k) & 3 = {bucket} ORDER BY k LIMIT 2"));
        r.rows.iter().map(|row| row[0].as_ref().unwrap().parse().unwrap()).collect()
    };
    let (zero, one) = (by_bucket(&mut obs, 0), by_bucket(&mut obs, 1));
    let mut rounds = Vec::new();
    // Each probes its key and inserts it: (a's key, b's key) in different
    // buckets, then in one bucket, crossed (each inserts the other's key).
    for (ka, kb) in [(zero[0], one[0]), (zero[0], zero[1])] {
        for (c, k) in [(&mut a, ka), (&mut b, kb)] {
            ok(c, "BEGIN ISOLATION LEVEL SERIALIZABLE");
            assert_eq!(c.query(&format!("SELECT count(*) FROM h WHERE k = {k}")).one(), "0");
        }
        let same = ka == zero[0] && kb == zero[1];
        let (ia, ib) = if same { (kb, ka) } else { (ka, kb) };
        ok(&mut a, &format!("INSERT INTO h VALUES ({ia}, 0)"));
        let rb = b.query(&format!("INSERT INTO h VALUES ({ib}, 0)"));
        let ca = a.query("COMMIT");
        let cb = if rb.error.is_none() { b.query("COMMIT") } else { rb };
        if cb.error.is_some() {
            ok(&mut b, "ROLLBACK");
        }
        rounds.push((ca.error.is_none() && cb.error.is_none(), failure(&cb)));
        ok(&mut a, &format!("DELETE FROM h WHERE k IN ({ka}, {kb})"));
    }
    (index_rows, rounds)
}

/// A serializable hash index probe locks the primary page of the key's
/// bucket, as PostgreSQL 15 shows it (`page h_k <block>`, the same block:
/// both servers have 4 buckets and PostgreSQL's hash functions); two
/// sessions probing and inserting keys of different buckets both commit;
/// of one bucket, the second committer fails as on PostgreSQL 15.
#[test]
fn hash_index_probe_locks_its_bucket_page_as_postgresql_15() {
    let (tmp, fg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let pg = Pg15::start(&tmp.path().join("pg"));
    let server = Server::start(fg.path());
    let want = hash_probe_session(pg.port, &["SET enable_seqscan = off", "SET enable_bitmapscan = off"]);
    let got = hash_probe_session(server.port, &["SET enable_seqscan = off"]);
    assert_eq!(want.0.len(), 1, "{want:?}");
    assert_eq!(want.0[0][0].as_deref(), Some("page"));
    assert_eq!(got, want);
    assert_eq!(want.1[0], (true, None), "different buckets: no conflict");
    assert_eq!(want.1[1].1.as_ref().map(|f| f.0.as_str()), Some("40001"), "one bucket: write skew");
}

/// Session B reads `u`; session A reads table `t` (`read`), writes `u` and
/// commits; then B runs `rewrite` on `t` (new files for `t` or its index)
/// and inserts into `t`: a write skew (B -rw-> A through u, A -rw-> B
/// through t) that must still fail B although A's SIREAD locks were taken on
/// `t`'s old files. `by_other`: a third session runs the rewrite (and
/// commits it) instead of B, after B took its snapshot: B then reads the
/// catalogs with a catalog snapshot and inserts into `t`'s new files.
/// Returns the statement of B that failed (0: the rewrite, 1: the insert, 2:
/// the commit) and its (SQLSTATE, DETAIL).
fn skew_across_rewrite(port: u16, planner: &[&str], read: &str, rewrite: &str, by_other: bool) -> Option<(usize, Failure)> {
    let mut a = Client::connect(port);
    let mut b = Client::connect(port);
    let mut c = Client::connect(port);
    for s in ["DROP TABLE IF EXISTS t", "DROP TABLE IF EXISTS u", "CREATE TABLE t (id int, v int)", "CREATE INDEX t_id ON t (id)", "CREATE TABLE u (k int)"] {
        ok(&mut c, s);
    }
    ok(&mut c, "INSERT INTO t SELECT g, g FROM generate_series(1, 10) g");
    for s in planner {
        ok(&mut a, s);
    }
    ok(&mut b, "BEGIN ISOLATION LEVEL SERIALIZABLE");
    ok(&mut b, "SELECT count(*) FROM u");
    ok(&mut a, "BEGIN ISOLATION LEVEL SERIALIZABLE");
    ok(&mut a, read);
    ok(&mut a, "INSERT INTO u VALUES (1)");
    ok(&mut a, "COMMIT");
    let mut failed = None;
    for (i, s) in [rewrite, "INSERT INTO t VALUES (5, 0)", "COMMIT"].into_iter().enumerate() {
        let r = if i == 0 && by_other { c.query(s) } else { b.query(s) };
        if let Some(f) = failure(&r) {
            failed = Some((i, f));
            break;
        }
    }
    ok(&mut b, "ROLLBACK");
    failed
}

/// A write skew is detected across TRUNCATE, ALTER TABLE ... TYPE (a table
/// rewrite), REINDEX and DROP INDEX, whether the reader read the table by
/// an index probe (locks on the index's pages and a tuple) or a sequential
/// scan (a lock on the table): the rewrite moved its locks to the table's
/// new file. Both servers fail B at the same statement with the same
/// SQLSTATE and DETAIL (TRUNCATE is itself a write of every row: it fails).
#[test]
fn write_skew_is_detected_across_rewrites_as_on_postgresql_15() {
    let (tmp, fg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let pg = Pg15::start(&tmp.path().join("pg"));
    let server = Server::start(fg.path());
    let probe = "SELECT count(*) FROM t WHERE id = 5";
    let seq = "SELECT sum(v) FROM t";
    let rewrites = ["TRUNCATE t", "ALTER TABLE t ALTER COLUMN v TYPE bigint", "REINDEX TABLE t", "DROP INDEX t_id"];
    for rewrite in rewrites {
        for (read, pg_planner, fg_planner) in [
            (probe, &["SET enable_seqscan = off", "SET enable_bitmapscan = off"][..], &["SET enable_seqscan = off"][..]),
            (seq, &["SET enable_indexscan = off", "SET enable_bitmapscan = off"][..], &["SET enable_indexscan = off"][..]),
        ] {
            let want = skew_across_rewrite(pg.port, pg_planner, read, rewrite, false);
            let got = skew_across_rewrite(server.port, fg_planner, read, rewrite, false);
            assert_eq!(got, want, "{rewrite} after {read}");
            assert_eq!(want.as_ref().map(|f| f.1 .0.as_str()), Some("40001"), "{rewrite} after {read}");
        }
    }
}

/// The same write skew when another session runs the rewrite and commits it
/// between A's commit and B's insert: B's snapshot predates the rewrite, so
/// it finds `t`'s new files through a catalog snapshot (before, its own
/// snapshot named the old, removed ones: XX001), and fails as on PostgreSQL 15.
#[test]
fn write_skew_is_detected_across_another_sessions_rewrite_as_postgresql_15() {
    let (tmp, fg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let pg = Pg15::start(&tmp.path().join("pg"));
    let server = Server::start(fg.path());
    let probe = "SELECT count(*) FROM t WHERE id = 5";
    let seq = "SELECT sum(v) FROM t";
    for rewrite in ["TRUNCATE t", "ALTER TABLE t ALTER COLUMN v TYPE bigint", "REINDEX TABLE t", "DROP INDEX t_id"] {
        for (read, pg_planner, fg_planner) in [
            (probe, &["SET enable_seqscan = off", "SET enable_bitmapscan = off"][..], &["SET enable_seqscan = off"][..]),
            (seq, &["SET enable_indexscan = off", "SET enable_bitmapscan = off"][..], &["SET enable_indexscan = off"][..]),
        ] {
            let want = skew_across_rewrite(pg.port, pg_planner, read, rewrite, true);
            let got = skew_across_rewrite(server.port, fg_planner, read, rewrite, true);
            assert_eq!(got, want, "{rewrite} by another session after {read}");
            assert_eq!(want.as_ref().map(|f| (f.0, f.1 .0.as_str())), Some((1, "40001")), "{rewrite} by another session after {read}");
        }
    }
}

/// pg_locks names a relation by its OID after a rewrite gave it a file
/// number of its own (the locks name files): a committed reader's lock on
/// a table later rewritten by ALTER TABLE shows as a lock on the table, as
/// on PostgreSQL 15 (before, `relation` was the new file number).
fn sireads_after_rewrite(port: u16) -> Rows {
    let mut a = Client::connect(port);
    let mut b = Client::connect(port);
    let mut c = Client::connect(port);
    for s in ["CREATE TABLE w (id int, v int)", "INSERT INTO w SELECT g, g FROM generate_series(1, 10) g"] {
        ok(&mut c, s);
    }
    ok(&mut b, "BEGIN ISOLATION LEVEL SERIALIZABLE");
    ok(&mut b, "SELECT 1");
    ok(&mut a, "BEGIN ISOLATION LEVEL SERIALIZABLE");
    ok(&mut a, "SELECT sum(v) FROM w");
    ok(&mut a, "COMMIT");
    ok(&mut c, "ALTER TABLE w ALTER COLUMN v TYPE bigint");
    let rows = sireads_of(&mut c, a.pid);
    ok(&mut b, "COMMIT");
    rows
}

#[test]
fn pg_locks_names_a_rewritten_relation_by_its_oid() {
    let (tmp, fg) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let pg = Pg15::start(&tmp.path().join("pg"));
    let server = Server::start(fg.path());
    let want = sireads_after_rewrite(pg.port);
    assert_eq!(want, vec![vec![Some("relation".into()), Some("w".into()), None, None, Some("t".into())]]);
    let mut c = Client::connect(server.port);
    let got = sireads_after_rewrite(server.port);
    assert_eq!(got, want);
    // The file number differs from the OID now: the test could tell them apart.
    let r = c.query("SELECT oid <> relfilenode FROM pg_class WHERE relname = 'w'");
    assert_eq!(r.one(), "t");
}
