//! EXPLAIN and planner statistics end to end: the scan the planner takes
//! switches between an index scan and a sequential scan with what ANALYZE
//! found (and survives a restart: pg_statistic is stored), EXPLAIN ANALYZE's
//! actual row counts are the rows each step produced, and EXPLAIN ANALYZE of
//! an UPDATE really updates. The PostgreSQL-15 comparison of the same
//! features is tests/sql/explain.sql (sql_basic.rs).

mod common;
use common::server::Server;

fn plan(srv: &Server, sql: &str) -> String {
    srv.sql_ok(&format!("EXPLAIN (COSTS OFF) {sql}"))
}

/// `rows=N` of the first line naming `node`.
fn actual_rows(out: &str, node: &str) -> u64 {
    let line = out.lines().find(|l| l.contains(node)).unwrap_or_else(|| panic!("no {node} in {out}"));
    let at = line.find("rows=").unwrap_or_else(|| panic!("no rows= in {line}")) + 5;
    line[at..].split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap()
}

#[test]
fn statistics_switch_index_and_sequential_scans() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    srv.sql_ok(
        "CREATE TABLE s (id int PRIMARY KEY, flag int, grp int);
         INSERT INTO s SELECT i, i % 2, i / 100 FROM generate_series(1, 5000) i;
         CREATE INDEX s_flag_idx ON s (flag);
         CREATE INDEX s_grp_idx ON s (grp);",
    );
    // Without statistics every usable index is taken.
    assert!(plan(&srv, "SELECT * FROM s WHERE flag = 1").contains("Index Scan using s_flag_idx on s"));
    srv.sql_ok("ANALYZE s;");
    // A key with two values: half the table; a sequential scan reads less.
    let p = plan(&srv, "SELECT * FROM s WHERE flag = 1");
    assert!(p.starts_with("Seq Scan on s\n"), "{p}");
    assert!(p.contains("Filter: (flag = 1)"), "{p}");
    // A selective key (50 rows of 5000): the index.
    let p = plan(&srv, "SELECT * FROM s WHERE grp = 7");
    assert!(p.starts_with("Index Scan using s_grp_idx on s\n"), "{p}");
    // The cheaper index of two usable ones.
    let p = plan(&srv, "SELECT * FROM s WHERE flag = 1 AND id < 20");
    assert!(p.starts_with("Index Scan using s_pkey on s\n"), "{p}");
    assert!(p.contains("Index Cond: (id < 20)") && p.contains("Filter: (flag = 1)"), "{p}");
    // A range covering most of the table: sequential.
    assert!(plan(&srv, "SELECT * FROM s WHERE id > 10").starts_with("Seq Scan on s\n"));
    // The results do not depend on the choice.
    assert_eq!(srv.sql_ok("SELECT count(*) FROM s WHERE flag = 1;").trim(), "2500");
    assert_eq!(srv.sql_ok("SELECT count(*) FROM s WHERE grp = 7;").trim(), "100");
    // pg_stats shows what the choice used.
    assert_eq!(
        srv.sql_ok("SELECT n_distinct, most_common_vals, most_common_freqs FROM pg_stats WHERE tablename = 's' AND attname = 'flag';").trim(),
        "2|{0,1}|{0.5,0.5}"
    );
    assert_eq!(srv.sql_ok("SELECT reltuples FROM pg_class WHERE relname = 's';").trim(), "5000");
    // After the table changes, a new ANALYZE changes the plan: flag is now
    // nearly unique.
    srv.sql_ok("UPDATE s SET flag = id; ANALYZE s;");
    assert!(plan(&srv, "SELECT * FROM s WHERE flag = 1").starts_with("Index Scan using s_flag_idx on s\n"));
}

#[test]
fn statistics_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    {
        let srv = Server::start(dir.path());
        srv.sql_ok(
            "CREATE TABLE r (id int PRIMARY KEY, flag int);
             INSERT INTO r SELECT i, i % 2 FROM generate_series(1, 3000) i;
             CREATE INDEX r_flag_idx ON r (flag);
             VACUUM ANALYZE r;",
        );
        assert!(plan(&srv, "SELECT * FROM r WHERE flag = 0").starts_with("Seq Scan on r\n"));
    }
    let srv = Server::start(dir.path());
    assert!(plan(&srv, "SELECT * FROM r WHERE flag = 0").starts_with("Seq Scan on r\n"));
    assert_eq!(srv.sql_ok("SELECT most_common_vals FROM pg_stats WHERE tablename = 'r' AND attname = 'flag';").trim(), "{0,1}");
}

#[test]
fn explain_analyze_counts_rows_and_runs_the_statement() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    srv.sql_ok(
        "CREATE TABLE a (id int PRIMARY KEY, v int);
         INSERT INTO a SELECT i, i % 10 FROM generate_series(1, 1000) i;
         CREATE TABLE b (id int PRIMARY KEY, name text);
         INSERT INTO b SELECT i, 'b' || i FROM generate_series(0, 4) i;
         ANALYZE a; ANALYZE b;",
    );
    let ea = |sql: &str| srv.sql_ok(&format!("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) {sql}"));
    // Filter: rows kept and removed.
    let out = ea("SELECT * FROM a WHERE v = 3");
    assert_eq!(actual_rows(&out, "Seq Scan on a"), 100, "{out}");
    assert!(out.contains("Rows Removed by Filter: 900"), "{out}");
    // Limit stops the pipeline: the sort emits only what Limit took.
    let out = ea("SELECT * FROM a ORDER BY v DESC, id LIMIT 7");
    assert_eq!(actual_rows(&out, "Limit"), 7, "{out}");
    assert_eq!(actual_rows(&out, "Sort"), 7, "{out}");
    assert_eq!(actual_rows(&out, "Seq Scan on a"), 1000, "{out}");
    // Aggregates and groups.
    let out = ea("SELECT v, count(*) FROM a GROUP BY v");
    assert_eq!(actual_rows(&out, "HashAggregate"), 10, "{out}");
    assert_eq!(actual_rows(&out, "Seq Scan on a"), 1000, "{out}");
    // A hash join: each input's rows and the join's.
    let out = ea("SELECT * FROM a JOIN b ON a.v = b.id");
    assert_eq!(actual_rows(&out, "Hash Join"), 500, "{out}");
    assert_eq!(actual_rows(&out, "Seq Scan on a"), 1000, "{out}");
    assert_eq!(actual_rows(&out, "Seq Scan on b"), 5, "{out}");
    // An index scan's rows.
    let out = ea("SELECT * FROM a WHERE id BETWEEN 10 AND 19");
    assert_eq!(actual_rows(&out, "Index Scan using a_pkey on a"), 10, "{out}");
    // UPDATE really updates; its scan counts the rows it changed.
    let out = ea("UPDATE a SET v = -1 WHERE v = 5");
    assert_eq!(actual_rows(&out, "Update on a"), 0, "{out}");
    assert_eq!(actual_rows(&out, "Seq Scan on a"), 100, "{out}");
    assert_eq!(srv.sql_ok("SELECT count(*) FROM a WHERE v = -1;").trim(), "100");
    // DELETE too, and inside a rolled-back transaction nothing stays.
    srv.sql_ok("BEGIN; EXPLAIN ANALYZE DELETE FROM a; ROLLBACK;");
    assert_eq!(srv.sql_ok("SELECT count(*) FROM a;").trim(), "1000");
    // With timing and summary: the figures are there.
    let out = srv.sql_ok("EXPLAIN ANALYZE SELECT * FROM a WHERE id = 1;");
    assert!(out.contains("(cost=") && out.contains("(actual time="), "{out}");
    assert!(out.contains("Planning Time:") && out.contains("Execution Time:"), "{out}");
    // Plain EXPLAIN does not run the statement.
    srv.sql_ok("EXPLAIN DELETE FROM a;");
    assert_eq!(srv.sql_ok("SELECT count(*) FROM a;").trim(), "1000");
}

/// Numbers that depend on the machine, the data's physical layout or the cost
/// model's width estimates, masked in all three structured formats.
fn mask(out: &str) -> String {
    const KEYS: [&str; 10] = [
        "Startup Cost", "Total Cost", "Plan Rows", "Plan Width", "Actual Startup Time", "Actual Total Time",
        "Peak Memory Usage", "Planning Time", "Execution Time", "Sort Space Used",
    ];
    out.lines()
        .map(|l| {
            for k in KEYS {
                let json = format!("\"{k}\": ");
                let yaml = format!("{k}: ");
                let tag = k.replace(' ', "-");
                let xml = format!("<{tag}>");
                let t = l.trim_start();
                let indent = &l[..l.len() - t.len()];
                if t.starts_with(&json) {
                    return format!("{indent}{json}N{}", if t.ends_with(',') { "," } else { "" });
                }
                if t.starts_with(&yaml) || t.strip_prefix("- ").is_some_and(|r| r.starts_with(&yaml)) {
                    return format!("{indent}{}{yaml}N", if t.starts_with("- ") { "- " } else { "" });
                }
                if t.starts_with(&xml) {
                    return format!("{indent}{xml}N</{tag}>");
                }
            }
            l.to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// EXPLAIN (FORMAT JSON | YAML | XML) gives PostgreSQL 15's documents, key
/// for key and in its layout, where the two servers choose the same plan
/// (costs, widths and times masked; actual rows and loops compared); the
/// column is json for FORMAT JSON; EXPLAIN EXECUTE explains a prepared
/// statement, also one prepared through the extended protocol (what sqlx's
/// query macros send), with its arguments bound when ANALYZE runs it.
#[test]
fn structured_formats_match_postgresql_15() {
    use common::pg15::Pg15;
    let pgdir = tempfile::tempdir().unwrap();
    let pg = Pg15::start(&pgdir.path().join("pg"));
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let setup = "CREATE TABLE t (a int PRIMARY KEY, b text); CREATE TABLE u (a int, c int);
        INSERT INTO t SELECT g, g::text FROM generate_series(1, 1000) g;
        INSERT INTO u SELECT g % 100, g FROM generate_series(1, 5000) g; ANALYZE t; ANALYZE u;";
    let run = |cmd: &mut std::process::Command, sql: &str| {
        let out = cmd.args(["-X", "-At", "-d", "postgres", "-c", sql]).output().unwrap();
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
    };
    run(&mut pg.cmd("psql"), setup);
    srv.sql_ok(setup);
    for q in [
        "EXPLAIN (FORMAT JSON) SELECT * FROM t WHERE a > 10 AND b LIKE 'x%' ORDER BY b LIMIT 5",
        "EXPLAIN (FORMAT YAML) SELECT * FROM t WHERE a = 3",
        "EXPLAIN (FORMAT YAML, ANALYZE, TIMING OFF) SELECT count(*) FROM t",
        "EXPLAIN (FORMAT XML, ANALYZE, TIMING OFF) SELECT b FROM t WHERE a < 3 ORDER BY b",
        "EXPLAIN (FORMAT JSON, ANALYZE) SELECT * FROM t WHERE a > 990 AND b <> '995'",
        "EXPLAIN (FORMAT JSON, SUMMARY) SELECT 1",
        "EXPLAIN (FORMAT JSON) INSERT INTO u VALUES (1, 2)",
        "EXPLAIN (FORMAT JSON) SELECT a, count(*) FROM u GROUP BY a",
        "EXPLAIN (FORMAT JSON, COSTS OFF) SELECT a, count(*) FROM u GROUP BY a",
    ] {
        let ours = mask(&run(&mut srv.psql_cmd(), q));
        let theirs = mask(&run(&mut pg.cmd("psql"), q));
        assert!(theirs.contains("Node Type") || theirs.contains("Node-Type"), "{q}: {theirs}");
        assert_eq!(ours, theirs, "{q}");
    }
    // Errors as PostgreSQL's.
    for q in ["EXPLAIN (FORMAT foo) SELECT 1", "EXPLAIN EXECUTE nope", "EXPLAIN (TIMING) SELECT 1"] {
        assert_eq!(run(&mut srv.psql_cmd(), q), run(&mut pg.cmd("psql"), q), "{q}");
    }
    // The column's type: json (114) for FORMAT JSON, as PostgreSQL's.
    let mut c = common::client::Client::connect(srv.port);
    let r = c.bind_binary("EXPLAIN (FORMAT JSON) SELECT 1", &[], &[]);
    assert!(r.error.is_none(), "{:?}", r.error);
    c.send(&[common::parse("p1", "EXPLAIN (FORMAT JSON) SELECT 1", &[]), common::describe(b'S', "p1"), common::sync()].concat());
    let mut type_oid = None;
    loop {
        let (t, body) = common::read_message(&mut c.s);
        if t == b'T' {
            // one field: name, table oid (4), column (2), type oid (4), ...
            let at = body[2..].iter().position(|b| *b == 0).unwrap() + 2 + 1 + 6;
            type_oid = Some(u32::from_be_bytes(body[at..at + 4].try_into().unwrap()));
        }
        if t == b'Z' {
            break;
        }
    }
    assert_eq!(type_oid, Some(114), "RowDescription of EXPLAIN (FORMAT JSON)");
    // EXPLAIN EXECUTE of a statement prepared by SQL and by Parse.
    assert!(c.query("PREPARE q(int) AS SELECT b FROM t WHERE a = $1").error.is_none());
    let r = c.query("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE q('7')");
    let text: Vec<String> = r.rows.iter().map(|row| row[0].clone().unwrap()).collect();
    assert_eq!(text, ["Index Scan using t_pkey on t (actual rows=1 loops=1)", "  Index Cond: (a = $1)"]);
    c.send(&[common::parse("sqlx_s_1", "SELECT b FROM t WHERE a = $1", &[23]), common::sync()].concat());
    c.reply();
    let r = c.bind_binary("EXPLAIN (VERBOSE, FORMAT JSON) EXECUTE sqlx_s_1(NULL)", &[], &[]);
    let doc = r.one();
    assert!(doc.contains("\"Node Type\": \"Index Scan\"") && doc.contains("\"Output\": [\"b\"]"), "{doc}");
    let r = c.query("EXPLAIN EXECUTE sqlx_s_1(1, 2)");
    assert_eq!(r.err(), ("42601".into(), "wrong number of parameters for prepared statement \"sqlx_s_1\"".into()));
}
