//! Views and SQL functions are catalog rows: they survive a clean restart and
//! a crash (kill -9), with their dependencies (DROP TABLE still refuses to
//! drop a table a view reads).

mod common;
use common::server::Server;

#[test]
fn views_and_sql_functions_survive_restart_and_crash() {
    let dir = tempfile::tempdir().unwrap();
    let mut srv = Server::start(dir.path());
    srv.sql_ok(
        "CREATE TABLE t (a int, b text); INSERT INTO t VALUES (1, 'x'), (2, 'y'), (3, 'z');
         CREATE VIEW v AS SELECT a, b FROM t WHERE a > 1;
         CREATE VIEW vv (n) AS SELECT count(*) FROM v;
         CREATE FUNCTION sq(x int) RETURNS int LANGUAGE sql IMMUTABLE RETURN x * x;
         CREATE FUNCTION upto(n int) RETURNS SETOF int LANGUAGE sql AS 'SELECT a FROM t WHERE a <= n ORDER BY a';",
    );
    let check = |srv: &Server| {
        assert_eq!(srv.sql_ok("SELECT a, b FROM v ORDER BY a;"), "2|y\n3|z\n");
        assert_eq!(srv.sql_ok("SELECT n FROM vv;"), "2\n");
        assert_eq!(srv.sql_ok("SELECT sq(a) FROM t ORDER BY a;"), "1\n4\n9\n");
        assert_eq!(srv.sql_ok("SELECT * FROM upto(2);"), "1\n2\n");
        assert_eq!(srv.sql_ok("SELECT relkind FROM pg_class WHERE relname = 'v';"), "v\n");
        let (_, err) = srv.sql("DROP TABLE t;");
        assert!(err.contains("cannot drop table t because other objects depend on it"), "{err}");
    };
    check(&srv);
    srv.signal(libc::SIGTERM);
    let mut srv = Server::start(dir.path());
    check(&srv);
    // Created after the last checkpoint: only in the WAL when the server dies.
    srv.sql_ok("CREATE VIEW late AS SELECT sq(a) AS s FROM v; CREATE FUNCTION cube(x int) RETURNS int LANGUAGE sql RETURN x * x * x;");
    srv.signal(libc::SIGKILL);
    let srv = Server::start(dir.path());
    check(&srv);
    assert_eq!(srv.sql_ok("SELECT s, cube(s) FROM late ORDER BY s;"), "4|64\n9|729\n");
    srv.sql_ok("DROP VIEW late; DROP FUNCTION cube(int); DROP TABLE t CASCADE;");
    assert_eq!(srv.sql_ok("SELECT count(*) FROM pg_views WHERE schemaname = 'public';"), "0\n");
}
