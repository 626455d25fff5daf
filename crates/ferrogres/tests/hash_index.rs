//! Hash indexes end to end through the `ferrogres` binary and psql: CREATE INDEX
//! ... USING hash (with fillfactor), the errors PostgreSQL 15 gives for what a
//! hash index cannot do, equality scans (EXPLAIN's `Index Scan using`), index
//! maintenance by INSERT / UPDATE / DELETE, VACUUM, REINDEX, DROP INDEX, the
//! catalog's view of them (`\d`, pg_indexes, pg_get_indexdef, pg_class), the
//! SQL-callable hash functions, and the index after a crash.
//!
//! Expected values and messages were produced by PostgreSQL 15 (psql against
//! a local PostgreSQL 15 server, the same statements).

mod common;
use common::server::Server;

/// psql -At, each statement on its own: (stdout, stderr).
fn run(srv: &Server, sql: &str) -> (String, String) {
    srv.sql(sql)
}

fn err(srv: &Server, sql: &str) -> String {
    let (out, e) = run(srv, sql);
    assert!(out.trim().is_empty(), "{sql}: unexpected output {out}");
    e.lines().filter(|l| !l.trim().is_empty()).collect::<Vec<_>>().join("\n")
}

/// Count through the index and through a sequential scan (an expression on the
/// column that no index answers): both must agree.
fn count_both(srv: &Server, table: &str, col: &str, lit: &str) -> (String, String) {
    let via_index = srv.sql_ok(&format!("SELECT count(*) FROM {table} WHERE {col} = {lit};"));
    let via_seq = srv.sql_ok(&format!("SELECT count(*) FROM {table} WHERE ({col} = {lit}) IS NOT DISTINCT FROM true AND random() >= 0;"));
    (via_index.trim().to_string(), via_seq.trim().to_string())
}

#[test]
fn sql_hash_functions_give_postgresql_15_values() {
    let srv = Server::start_temp(&[]);
    // SELECT ... on PostgreSQL 15.
    let got = srv.sql_ok(
        "SELECT hashint4(1), hashint8(1), hashtext('x'), hashbpchar('ab  '), hash_numeric(1.50), hashint2(7::int2), \
         hashfloat8(1.5), hashfloat4(-0.0), uuid_hash('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'), \
         timestamp_hash('2020-01-02 03:04:05'), interval_hash('1 day 2 hours'), hashoid(1259), hashname('abc'), \
         hashchar('a'), time_hash('12:34:56'), hashint8(-5), hash_numeric(-123456789.000123), hashtext('');",
    );
    assert_eq!(
        got.trim(),
        "-1905060026|-1905060026|1074944137|1718550461|692967894|-978793473|630860146|0|1154666245|-1338732270|-857330346|-215855226|-785388649|463612535|1578700661|1412886042|1112070425|-1477818771"
    );
    // Equal values of different scale / trailing blanks hash alike.
    assert_eq!(srv.sql_ok("SELECT hash_numeric(1.5) = hash_numeric(1.500), hashbpchar('a') = hashbpchar('a   '), hashtext('a') = hashtext('a ');").trim(), "t|t|f");
}

#[test]
fn hash_index_ddl_errors_are_postgresqls() {
    let srv = Server::start_temp(&[]);
    srv.sql_ok("CREATE TABLE e (id int, k text, j jsonb);");
    let cases = [
        ("CREATE UNIQUE INDEX ON e USING hash (id)", "ERROR:  access method \"hash\" does not support unique indexes"),
        ("CREATE INDEX ON e USING hash (id, k)", "ERROR:  access method \"hash\" does not support multicolumn indexes"),
        ("CREATE INDEX ON e USING hash (id DESC)", "ERROR:  access method \"hash\" does not support ASC/DESC options"),
        ("CREATE INDEX ON e USING hash (id NULLS FIRST)", "ERROR:  access method \"hash\" does not support NULLS FIRST/LAST options"),
        ("CREATE INDEX ON e USING hash (id) INCLUDE (k)", "ERROR:  access method \"hash\" does not support included columns"),
        (
            "CREATE INDEX ON e USING hash (id) WITH (fillfactor = 5)",
            "ERROR:  value 5 out of bounds for option \"fillfactor\"\nDETAIL:  Valid values are between \"10\" and \"100\".",
        ),
        ("CREATE INDEX ON e USING hash (id) WITH (pages_per_range = 5)", "ERROR:  unrecognized parameter \"pages_per_range\""),
        ("CREATE INDEX ON e USING nosuch (id)", "ERROR:  access method \"nosuch\" does not exist"),
        ("REINDEX INDEX nosuch", "ERROR:  relation \"nosuch\" does not exist"),
    ];
    for (sql, want) in cases {
        assert_eq!(err(&srv, sql), want, "{sql}");
    }
    // The session goes on, nothing was created.
    assert_eq!(srv.sql_ok("SELECT count(*) FROM pg_indexes WHERE tablename = 'e';").trim(), "0");
}

#[test]
fn hash_index_scans_maintenance_vacuum_reindex_and_catalog() {
    let srv = Server::start_temp(&[]);
    srv.sql_ok(
        "CREATE TABLE h (id int, k text, n numeric, b char(4));
         INSERT INTO h SELECT g, 'k' || (g % 100), g % 50, 'x' || (g % 10) FROM generate_series(1, 20000) g;
         INSERT INTO h VALUES (NULL, NULL, NULL, NULL);
         CREATE INDEX h_id ON h USING hash (id);
         CREATE INDEX h_k ON h USING hash (k) WITH (fillfactor = 60);
         CREATE INDEX h_n ON h USING HASH (n);
         CREATE INDEX h_b ON h USING hash (b);
         ANALYZE h;",
    );
    // Catalog views as PostgreSQL 15 shows them.
    assert_eq!(srv.sql_ok("SELECT pg_get_indexdef('h_k'::regclass);").trim(), "CREATE INDEX h_k ON public.h USING hash (k) WITH (fillfactor='60')");
    assert_eq!(
        srv.sql_ok("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'h' ORDER BY 1;").trim(),
        "h_b|CREATE INDEX h_b ON public.h USING hash (b)\n\
         h_id|CREATE INDEX h_id ON public.h USING hash (id)\n\
         h_k|CREATE INDEX h_k ON public.h USING hash (k) WITH (fillfactor='60')\n\
         h_n|CREATE INDEX h_n ON public.h USING hash (n)"
    );
    assert_eq!(
        srv.sql_ok("SELECT c.relname, a.amname, c.reloptions FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE c.relname IN ('h_id', 'h_k') ORDER BY 1;").trim(),
        "h_id|hash|\nh_k|hash|{fillfactor=60}"
    );
    let d = srv.psql_cmd().args(["-c", "\\d h"]).output().unwrap();
    let d = String::from_utf8_lossy(&d.stdout).into_owned();
    assert!(
        d.contains("Indexes:\n    \"h_b\" hash (b)\n    \"h_id\" hash (id)\n    \"h_k\" hash (k) WITH (fillfactor='60')\n    \"h_n\" hash (n)\n"),
        "{d}"
    );
    // \d of the index: the column holds the int4 hash code, as PostgreSQL 15 shows.
    let d = srv.psql_cmd().args(["-c", "\\d h_k"]).output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&d.stdout),
        "          Index \"public.h_k\"\n Column |  Type   | Key? | Definition \n--------+---------+------+------------\n k      | integer | yes  | k\nhash, for table \"public.h\"\n\n"
    );
    // Equality is answered by the index (PostgreSQL 15: the same plan shape).
    let plan = srv.sql_ok("EXPLAIN (COSTS OFF) SELECT * FROM h WHERE id = 42;");
    assert_eq!(plan.trim(), "Index Scan using h_id on h\n  Index Cond: (id = 42)");
    let plan = srv.sql_ok("EXPLAIN (COSTS OFF) SELECT * FROM h WHERE id = 42 AND k = 'k42';");
    assert!(plan.starts_with("Index Scan using h_id on h\n  Index Cond: (id = 42)\n  Filter: (k = 'k42'::text)"), "{plan}");
    // A range is not (a hash index keeps no order).
    let plan = srv.sql_ok("EXPLAIN (COSTS OFF) SELECT * FROM h WHERE id < 42;");
    assert!(plan.starts_with("Seq Scan on h"), "{plan}");
    assert_eq!(srv.sql_ok("SELECT id, k, n, b FROM h WHERE id = 42;").trim_end_matches('\n'), "42|k42|42|x2  ");
    assert_eq!(srv.sql_ok("SELECT count(*) FROM h WHERE id IS NULL;").trim(), "1");
    assert_eq!(srv.sql_ok("SELECT count(*) FROM h WHERE id = NULL;").trim(), "0");
    // Keys of other types are converted to the column's: numeric 1.0 = 1, char(4)'s blanks.
    assert_eq!(srv.sql_ok("SELECT count(*) FROM h WHERE n = 7.000;").trim(), "400");
    assert_eq!(srv.sql_ok("SELECT count(*) FROM h WHERE b = 'x3';").trim(), "2000");
    assert_eq!(srv.sql_ok("SELECT count(*) FROM h WHERE id = 42::bigint;").trim(), "1");
    assert_eq!(count_both(&srv, "h", "k", "'k5'"), ("200".into(), "200".into()));
    // Parameters ($1) through a prepared statement.
    assert_eq!(srv.sql_ok("PREPARE p(int) AS SELECT k FROM h WHERE id = $1; EXECUTE p(77); EXECUTE p(-1);").trim(), "PREPARE\nk77");

    // UPDATE (non-HOT: the key changes) and DELETE keep the index right.
    srv.sql_ok("UPDATE h SET id = -id WHERE id % 1000 = 0;");
    assert_eq!(srv.sql_ok("SELECT k FROM h WHERE id = -3000;").trim(), "k0");
    assert_eq!(srv.sql_ok("SELECT count(*) FROM h WHERE id = 3000;").trim(), "0");
    srv.sql_ok("UPDATE h SET k = 'moved' WHERE id BETWEEN 1 AND 500;");
    assert_eq!(count_both(&srv, "h", "k", "'moved'"), ("500".into(), "500".into()));
    assert_eq!(count_both(&srv, "h", "k", "'k7'"), ("195".into(), "195".into()));
    // Mass delete, VACUUM (removes the dead entries), then the space is reused.
    srv.sql_ok("DELETE FROM h WHERE id % 4 <> 1;");
    assert_eq!(count_both(&srv, "h", "k", "'k6'"), ("0".into(), "0".into()));
    assert_eq!(count_both(&srv, "h", "k", "'k9'"), ("195".into(), "195".into()));
    let before = srv.sql_ok("SELECT pg_relation_size('h_k');");
    srv.sql_ok("VACUUM h;");
    assert_eq!(count_both(&srv, "h", "k", "'k9'"), ("195".into(), "195".into()));
    srv.sql_ok("INSERT INTO h SELECT g, 'k' || (g % 100), g % 50, 'y' FROM generate_series(100001, 110000) g; VACUUM h;");
    let after = srv.sql_ok("SELECT pg_relation_size('h_k');");
    // The 10000 new entries (about 40 pages' worth) go into the space VACUUM
    // freed; the one page more is the free-space bitmap page, which the first
    // freed overflow page brings into being (PostgreSQL creates it with the index).
    let (before, after): (u64, u64) = (before.trim().parse().unwrap(), after.trim().parse().unwrap());
    assert!(after <= before + 8192, "VACUUM's freed space is reused: {before} bytes before, {after} after");
    assert_eq!(count_both(&srv, "h", "k", "'k9'"), ("295".into(), "295".into()));
    assert_eq!(srv.sql_ok("SELECT count(*) FROM h WHERE b = 'y';").trim(), "10000");

    // REINDEX gives the index a new file with the same contents.
    let file = srv.sql_ok("SELECT relfilenode FROM pg_class WHERE relname = 'h_k';");
    srv.sql_ok("REINDEX INDEX h_k;");
    assert_ne!(srv.sql_ok("SELECT relfilenode FROM pg_class WHERE relname = 'h_k';"), file);
    srv.sql_ok("REINDEX TABLE h;");
    assert_eq!(count_both(&srv, "h", "k", "'k9'"), ("295".into(), "295".into()));
    assert_eq!(srv.sql_ok("SELECT k FROM h WHERE id = 100077;").trim(), "k77");
    // A rolled-back REINDEX leaves the old file in use.
    let file = srv.sql_ok("SELECT relfilenode FROM pg_class WHERE relname = 'h_id';");
    srv.sql_ok("BEGIN; REINDEX INDEX h_id; ROLLBACK;");
    assert_eq!(srv.sql_ok("SELECT relfilenode FROM pg_class WHERE relname = 'h_id';"), file);
    assert_eq!(srv.sql_ok("SELECT k FROM h WHERE id = 100078;").trim(), "k78");

    // DROP INDEX: the plan goes back to a sequential scan.
    srv.sql_ok("DROP INDEX h_id;");
    let plan = srv.sql_ok("EXPLAIN (COSTS OFF) SELECT * FROM h WHERE id = 42;");
    assert!(plan.starts_with("Seq Scan on h"), "{plan}");
    assert_eq!(srv.sql_ok("SELECT count(*) FROM pg_indexes WHERE tablename = 'h';").trim(), "3");
}

/// Seed 002's table: ANALYZE of 100 md5 texts needs pg_statistic's TOAST
/// relation; the hash index is kept under concurrent UPDATEs from pgbench.
#[test]
fn seed_002_hash_update_workload_runs() {
    let srv = Server::start_temp(&[]);
    srv.sql_ok(
        "create table hash_idx_test(id int primary key, info text);
         insert into hash_idx_test select generate_series(1,5000), md5(random()::text);
         create index idx_1 on hash_idx_test using hash(info);
         vacuum analyze hash_idx_test;",
    );
    assert_eq!(srv.sql_ok("SELECT count(*) FROM pg_stats WHERE tablename = 'hash_idx_test' AND attname = 'info' AND histogram_bounds IS NOT NULL;").trim(), "1");
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("up.sql");
    std::fs::write(&script, "\\set id random(1, 5000)\nupdate hash_idx_test set info=md5(random()::text) where id=:id;\n").unwrap();
    let out = srv
        .cmd("pgbench")
        .args(["-n", "-M", "prepared", "-c", "4", "-j", "2", "-t", "300", "-f"])
        .arg(&script)
        .arg("postgres")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("number of transactions actually processed: 1200/1200"), "{text}{}", String::from_utf8_lossy(&out.stderr));
    // Every row is found through the hash index by its current value.
    let found = srv.sql_ok("SELECT count(*) FROM hash_idx_test t WHERE (SELECT count(*) FROM hash_idx_test u WHERE u.info = t.info AND u.id = t.id) = 1;");
    assert_eq!(found.trim(), "5000");
    srv.sql_ok("VACUUM hash_idx_test;");
    let found = srv.sql_ok("SELECT count(*) FROM hash_idx_test t WHERE (SELECT count(*) FROM hash_idx_test u WHERE u.info = t.info AND u.id = t.id) = 1;");
    assert_eq!(found.trim(), "5000");
}

#[test]
fn hash_index_entries_survive_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let mut srv = Server::start(dir.path());
    // Enough rows for many bucket splits after the index exists.
    srv.sql_ok("CREATE TABLE c (id int, k text); CREATE INDEX c_k ON c USING hash (k);");
    for chunk in 0..6 {
        srv.sql_ok(&format!("INSERT INTO c SELECT g, 'v' || g FROM generate_series({}, {}) g;", chunk * 5000 + 1, chunk * 5000 + 5000));
    }
    srv.sql_ok("DELETE FROM c WHERE id % 3 = 0;");
    srv.signal(libc::SIGKILL);
    let srv = Server::start(dir.path());
    let probes: String = (1..=30000).step_by(997).map(|i| format!("SELECT count(*) FROM c WHERE k = 'v{i}';\n")).collect();
    let got: Vec<String> = srv.sql_ok(&probes).lines().map(str::to_string).collect();
    let want: Vec<String> = (1..=30000).step_by(997).map(|i| if i % 3 == 0 { "0".to_string() } else { "1".to_string() }).collect();
    assert_eq!(got, want);
    let plan = srv.sql_ok("EXPLAIN (COSTS OFF) SELECT * FROM c WHERE k = 'v5';");
    assert!(plan.starts_with("Index Scan using c_k on c"), "{plan}");
    srv.sql_ok("INSERT INTO c VALUES (0, 'after');");
    assert_eq!(srv.sql_ok("SELECT id FROM c WHERE k = 'after';").trim(), "0");
}
