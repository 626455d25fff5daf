//! Memory bounds of one statement (issue 18, item 9): PostgreSQL's 1 GB limit
//! on one value (54000 / XX000 with PostgreSQL 15's messages, before anything
//! that size is allocated) and `statement_memory_limit`, the per-statement
//! bound on what a statement allocates (53200), measured by the counting
//! allocator. The server's RSS (from /proc) stays under the stated bound
//! while the statements run, and another session is unaffected.

mod common;
use common::client::Client;
use common::server::{rss_kb, Server};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};


/// Runs `f` while a thread samples the server's RSS every 20 ms; returns f's
/// result and the largest RSS seen (kB).
fn with_peak_rss<T>(pid: i32, f: impl FnOnce() -> T) -> (T, u64) {
    let stop = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicU64::new(rss_kb(pid)));
    let sampler = {
        let (stop, peak) = (stop.clone(), peak.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                peak.fetch_max(rss_kb(pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let r = f();
    stop.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    (r, peak.load(Ordering::Relaxed))
}

fn e(code: &str, msg: &str) -> (String, String) {
    (code.to_string(), msg.to_string())
}

/// PostgreSQL 15's answers past 1 GB per value.
#[test]
fn values_past_one_gigabyte_fail_like_postgres() {
    let srv = Server::start_temp(&[]);
    let mut c = Client::connect(srv.port);
    for (q, want) in [
        ("select length(repeat('x', 1073741820))", e("54000", "requested length too large")),
        ("select length(repeat('xx', 600000000))", e("54000", "requested length too large")),
        ("select length(repeat('x', 2147483647))", e("54000", "requested length too large")),
        ("select length(lpad('x', 268435455))", e("54000", "requested length too large")),
        ("select length(rpad('x', 536870912))", e("54000", "requested length too large")),
        ("select length(lpad('x', 1073741824, 'ab'))", e("54000", "requested length too large")),
        ("select length(repeat('x', 600000000) || repeat('x', 473741820))", e("XX000", "invalid memory alloc request size 1073741824")),
        ("select length(repeat('x', 600000000)::bytea || repeat('x', 473741820)::bytea)", e("XX000", "invalid memory alloc request size 1073741824")),
        ("select length(concat(repeat('x', 600000000), repeat('x', 473741822)))", e("XX000", "invalid memory alloc request size 1073741826")),
        ("select length(concat_ws(',', repeat('x', 600000000), repeat('x', 473741822)))", e("54000", "out of memory")),
        ("select length(string_agg(repeat('x', 100000000), '')) from generate_series(1, 11)", e("54000", "out of memory")),
        (
            "select length(string_agg(x, '')) from (values (repeat('x', 600000000)), (repeat('x', 473741822))) v(x)",
            e("XX000", "invalid memory alloc request size 1073741826"),
        ),
    ] {
        let t = Instant::now();
        let r = c.query(q);
        assert_eq!(r.err(), want, "{q}");
        assert!(t.elapsed() < Duration::from_secs(60), "{q} took {:?}", t.elapsed());
    }
    let r = c.query("select length(string_agg(repeat('x', 100000000), '')) from generate_series(1, 11)");
    assert_eq!(r.error.unwrap()[&b'D'], "Cannot enlarge string buffer containing 1000000000 bytes by 100000000 more bytes.");
    let r = c.query("select length(concat_ws(',', repeat('x', 600000000), repeat('x', 473741822)))");
    assert_eq!(r.error.unwrap()[&b'D'], "Cannot enlarge string buffer containing 600000001 bytes by 473741822 more bytes.");
    // Just under the limits, as in PostgreSQL: these succeed.
    for (q, want) in [
        ("select length(repeat('x', 1073741819))", "1073741819"),
        ("select length(repeat('x', 1000000000))", "1000000000"),
        ("select length(lpad('x', 268435454))", "268435454"),
        ("select length(repeat('x', 600000000) || repeat('x', 473741819))", "1073741819"),
    ] {
        let t = Instant::now();
        assert_eq!(c.query(q).one(), want, "{q}");
        assert!(t.elapsed() < Duration::from_secs(60), "{q} took {:?}", t.elapsed());
    }
    assert_eq!(Client::connect(srv.port).query("select 1").one(), "1");
}

/// The setting: PostgreSQL's memory units, -1 for no limit, validated, shown
/// in pg_settings with a description.
#[test]
fn statement_memory_limit_is_a_setting() {
    let srv = Server::start_temp(&[]);
    let mut c = Client::connect(srv.port);
    assert_eq!(c.query("show statement_memory_limit").one(), "4GB");
    assert!(c.query("set statement_memory_limit = '512MB'").error.is_none());
    assert_eq!(c.query("show statement_memory_limit").one(), "512MB");
    assert!(c.query("set statement_memory_limit = 1048576").error.is_none());
    assert_eq!(c.query("show statement_memory_limit").one(), "1GB");
    assert!(c.query("set statement_memory_limit = -1").error.is_none());
    assert_eq!(c.query("show statement_memory_limit").one(), "-1");
    let r = c.query("set statement_memory_limit = '12 parsecs'");
    assert_eq!(r.err(), e("22023", "invalid value for parameter \"statement_memory_limit\": \"12 parsecs\""));
    assert_eq!(c.query("set statement_memory_limit = '10kB'").err().0, "22023");
    assert!(c.query("reset statement_memory_limit").error.is_none());
    let r = c.query("select setting, boot_val, short_desc from pg_settings where name = 'statement_memory_limit'");
    assert_eq!(r.rows[0][0].as_deref(), Some("4GB"));
    assert_eq!(r.rows[0][1].as_deref(), Some("4GB"));
    assert!(r.rows[0][2].as_deref().unwrap_or("").contains("maximum memory one statement"));
}

/// The issue's statements under a 256 MB limit: each fails with 53200 while
/// the server stays under the limit plus a margin, and the session and
/// another one go on.
#[test]
fn statements_past_the_limit_fail_and_the_server_stays_small() {
    let srv = Server::start_temp(&[]);
    let mut c = Client::connect(srv.port);
    let mut other = Client::connect(srv.port);
    assert!(c.query("set statement_memory_limit = '256MB'").error.is_none());
    let base = rss_kb(srv.pid());
    // The bound stated: the limit plus 200 MB (rows or a value allocated
    // between two checks, pages the allocator has not returned yet).
    let bound = base + (256 + 200) * 1024;
    for q in [
        // The issue's unbounded recursive CTE of 1 kB rows (3.6 GB in 15 s).
        "with recursive r(n, s) as (select 1, repeat('x', 1000) union all select n + 1, s from r) select count(*) from r",
        // string_agg growing below the 1 GB value limit.
        "select length(string_agg(repeat('z', 1000), ',')) from generate_series(1, 900000)",
        // array_agg of wide values.
        "select cardinality(array_agg(repeat('w', 500))) from generate_series(1, 2000000)",
        // A value just under 1 GB is allowed but passes this limit.
        "select length(repeat('u', 1000000000))",
    ] {
        let t = Instant::now();
        let (r, peak) = with_peak_rss(srv.pid(), || c.query(q));
        let (code, msg) = r.err();
        assert_eq!((code.as_str(), msg.as_str()), ("53200", "out of memory"), "{q}");
        let detail = &r.error.as_ref().unwrap()[&b'D'];
        assert!(detail.starts_with("Failed on request of size ") && detail.ends_with(" in memory context \"ExecutorState\"."), "{detail}");
        assert!(peak < bound, "{q}: server RSS reached {peak} kB, bound {bound} kB (base {base} kB)");
        assert!(t.elapsed() < Duration::from_secs(120), "{q} took {:?}", t.elapsed());
        assert_eq!(c.query("select 1").one(), "1", "{q}: session broken");
        // The failed statement's memory went back to the operating system
        // when the session was next ready (after its error), not when the
        // allocator would next purge: the next statement starts from base.
        let after = rss_kb(srv.pid());
        assert!(after < base + 64 * 1024, "{q}: server RSS {after} kB after the statement (base {base} kB)");
        assert_eq!(other.query("select count(*) from generate_series(1, 1000)").one(), "1000");
    }
    // A sort of more rows than 256 MB holds no longer passes the limit: it
    // spills beyond work_mem (issue 19, `ferrogres_sql::sort`), and the server
    // stays within the bound.
    let q = "select g, repeat('y', 100) from generate_series(1, 5000000) g order by g desc offset 4999999";
    let (r, peak) = with_peak_rss(srv.pid(), || c.query(q));
    assert_eq!(r.one(), "1", "{q}");
    assert!(peak < bound, "{q}: server RSS reached {peak} kB, bound {bound} kB (base {base} kB)");
    // A hash join whose build side is larger than 256 MB no longer passes
    // the limit either: it splits into batches on temporary files beyond
    // work_mem (`ferrogres_sql::hashjoin`).
    let q = "select count(*) from generate_series(1, 3000000) a join generate_series(1, 3000000) b on a = b";
    let (r, peak) = with_peak_rss(srv.pid(), || c.query(q));
    assert_eq!(r.one(), "3000000", "{q}");
    assert!(peak < bound, "{q}: server RSS reached {peak} kB, bound {bound} kB (base {base} kB)");
    // A result of more than 256 MB is no longer materialized before it is sent:
    // a simple-query SELECT streams its rows.
    let q = "select repeat('v', 100000) from generate_series(1, 3000)";
    let (r, peak) = with_peak_rss(srv.pid(), || c.query(q));
    assert!(r.error.is_none() && r.rows.len() == 3000, "{q}: {:?}", r.error);
    assert!(peak < bound, "{q}: server RSS reached {peak} kB, bound {bound} kB (base {base} kB)");
    // Without the lower limit a sort held in memory succeeds too.
    assert!(c.query("reset statement_memory_limit").error.is_none());
    assert!(c.query("set work_mem = '1GB'").error.is_none());
    assert_eq!(c.query("select g from generate_series(1, 2000000) g order by g desc limit 1").one(), "2000000");
}
