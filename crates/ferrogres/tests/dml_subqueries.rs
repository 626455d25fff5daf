//! Data-modifying statements with subqueries (issue 18, item 16), against a
//! real server through a raw client: an uncorrelated subquery in DELETE,
//! UPDATE, UPDATE ... FROM, DELETE ... USING, INSERT ... SELECT, ON CONFLICT
//! and MERGE runs once per statement (PostgreSQL's InitPlan) and an equality
//! on an indexed column with its value uses the index, giving PostgreSQL 15's
//! results on 10,000-row tables (each statement's time is logged, not
//! asserted); a long DML stops at a CancelRequest, changing nothing, while
//! another session goes on.

mod common;
use common::session_client::{ok, Client};
use common::server::Server;
use std::time::{Duration, Instant};

fn tables(c: &mut Client) {
    ok(&c.q("CREATE TABLE tabx (id int PRIMARY KEY, v int); CREATE TABLE taby (id int PRIMARY KEY, v int)"));
    ok(&c.q("INSERT INTO tabx SELECT g, g FROM generate_series(1, 10000) g; INSERT INTO taby SELECT g, g FROM generate_series(1, 10000) g"));
}

#[test]
fn uncorrelated_subqueries_in_dml_run_once_and_give_postgres_15_results() {
    let srv = Server::start_temp(&[]);
    let (mut a, mut b) = (Client::connect(srv.port), Client::connect(srv.port));
    tables(&mut a);
    // The DELETE of the issue: an index scan with the InitPlan's value.
    let plan = a.q("EXPLAIN DELETE FROM taby WHERE id = (SELECT min(id) FROM tabx)");
    let plan: Vec<String> = plan.rows.iter().map(|r| r[0].clone().unwrap_or_default()).collect();
    assert!(plan.iter().any(|l| l.contains("Index Scan using taby_pkey on taby")), "{plan:#?}");
    assert!(plan.iter().any(|l| l.contains("Index Cond: (id = (SubPlan))")), "{plan:#?}");
    // (statement, PostgreSQL 15's tag, its RETURNING rows)
    let steps: &[(&str, &str, &[&str])] = &[
        ("DELETE FROM taby WHERE id = (SELECT min(id) FROM tabx)", "DELETE 1", &[]),
        ("DELETE FROM taby WHERE v = (SELECT min(id) FROM tabx)", "DELETE 0", &[]),
        ("UPDATE taby SET v = v + (SELECT max(v) FROM tabx) WHERE id = (SELECT max(id) FROM tabx) RETURNING *", "UPDATE 1", &["10000|20000"]),
        ("UPDATE taby SET v = 0 WHERE v < (SELECT min(v) + 10 FROM tabx)", "UPDATE 9", &[]),
        ("DELETE FROM taby USING tabx WHERE taby.id = tabx.id AND tabx.v = (SELECT max(v) FROM tabx)", "DELETE 1", &[]),
        ("UPDATE taby SET v = tabx.v FROM tabx WHERE taby.id = tabx.id AND tabx.v = (SELECT max(v) - 1 FROM tabx)", "UPDATE 1", &[]),
        ("INSERT INTO taby SELECT id + 100000, (SELECT count(*) FROM tabx) FROM tabx WHERE id < 5", "INSERT 0 4", &[]),
        (
            "INSERT INTO taby VALUES (200000, (SELECT max(v) FROM tabx)) ON CONFLICT (id) DO UPDATE SET v = (SELECT min(v) FROM tabx)",
            "INSERT 0 1",
            &[],
        ),
        (
            "INSERT INTO taby VALUES (200000, (SELECT max(v) FROM tabx)) ON CONFLICT (id) DO UPDATE SET v = (SELECT min(v) FROM tabx) \
             WHERE taby.v < (SELECT max(v) FROM tabx) RETURNING *",
            "INSERT 0 0",
            &[],
        ),
        (
            "MERGE INTO taby t USING (SELECT id FROM tabx WHERE id < 4) s ON t.id = s.id \
             WHEN MATCHED AND t.v < (SELECT min(v) FROM tabx) THEN UPDATE SET v = (SELECT max(v) FROM tabx) \
             WHEN NOT MATCHED THEN INSERT VALUES (s.id, (SELECT min(v) + 1 FROM tabx))",
            "MERGE 3",
            &[],
        ),
    ];
    for (sql, tag, rows) in steps {
        let started = Instant::now();
        let r = a.q(sql);
        println!("{:>10.1?}  {sql}", started.elapsed());
        ok(&r);
        assert_eq!(r.tags, vec![tag.to_string()], "{sql}");
        let got: Vec<String> = r.rows.iter().map(|row| row.iter().map(|v| v.clone().unwrap_or_default()).collect::<Vec<_>>().join("|")).collect();
        assert_eq!(got, rows.iter().map(|s| s.to_string()).collect::<Vec<_>>(), "{sql}");
    }
    // PostgreSQL 15's final state; another session sees the same.
    assert_eq!(b.q("SELECT count(*) || '|' || sum(v) FROM taby").one(), "10004|50064947");
    let r = b.q("SELECT string_agg(id || '=' || v, ',' ORDER BY id) FROM taby WHERE id < 4 OR id > 9998");
    assert_eq!(r.one(), "1=2,2=10000,3=10000,9999=9999,100001=10000,100002=10000,100003=10000,100004=10000,200000=10000");
}

/// A DML whose WHERE holds a correlated subquery (a scan of tabx for each
/// row of taby: tens of seconds) stops at a CancelRequest with 57014, its
/// changes rolled back; the session and another one go on.
#[test]
fn a_cancel_stops_a_long_dml() {
    let srv = Server::start_temp(&[]);
    let (mut a, mut b) = (Client::connect(srv.port), Client::connect(srv.port));
    tables(&mut a);
    // A correlation without an equality: a per-row subplan that scans tabx for
    // every row (an equality would make INSERT ... SELECT's EXISTS a hash
    // semi-join, done before the cancel arrives). It is never true.
    let slow = "EXISTS (SELECT 1 FROM tabx WHERE tabx.v > taby.v * 3 + 20000 + taby.id)";
    for sql in [
        format!("UPDATE taby SET v = v + 1 WHERE {slow}"),
        format!("DELETE FROM taby WHERE {slow}"),
        format!("DELETE FROM taby USING tabx t2 WHERE t2.id = taby.id AND {slow}"),
        format!("INSERT INTO taby SELECT id + 100000, v FROM taby WHERE {slow}"),
    ] {
        a.send(&sql);
        std::thread::sleep(Duration::from_millis(300));
        let started = Instant::now();
        a.cancel(srv.port);
        let r = a.reply();
        println!("cancelled after {:?}: {sql}", started.elapsed());
        let (code, msg, _) = r.error.clone().unwrap_or_else(|| panic!("{sql} was not cancelled: {r:?}"));
        assert_eq!((code.as_str(), msg.as_str()), ("57014", "canceling statement due to user request"), "{sql}");
        // Nothing changed; both sessions go on.
        assert_eq!(a.q("SELECT count(*) FROM taby WHERE v <> id").one(), "0");
        assert_eq!(b.q("SELECT count(*) FROM taby").one(), "10000");
    }
}
