//! CREATE TABLE ... AS and SELECT ... INTO (issue 22): the SQL behaviour is
//! `sql/create_table_as.sql`, compared with PostgreSQL 15's output; here are
//! what a psql script with `-q` cannot show (the command tags, side by side
//! with PostgreSQL 15) and the streaming of the rows into the new table (a
//! result far larger than the statement's memory bound goes in).

mod common;
use common::client::Client;
use common::pg15::Pg15;
use common::server::{check_script, run_with_stdin, Server};
use std::process::Command;

#[test]
fn create_table_as_matches_postgres_15() {
    check_script("create_table_as");
}

/// `script` run by psql (`-At`, tags shown, errors in the output) through `cmd`.
fn tags_of(mut cmd: Command, script: &str) -> String {
    cmd.args(["-X", "-At", "-v", "ON_ERROR_STOP=0", "-d", "postgres"]);
    let (out, err) = run_with_stdin(cmd, script);
    format!("{out}{err}")
}

const TAGS: &str = "\\set VERBOSITY terse
CREATE TABLE src (a int, b text);
INSERT INTO src SELECT g, 'v' || g FROM generate_series(1, 5) g;
CREATE TABLE t1 AS SELECT * FROM src;
CREATE TABLE t2 AS SELECT * FROM src WHERE a > 3;
CREATE TABLE t3 AS SELECT * FROM src WHERE false;
CREATE TABLE t4 AS SELECT * FROM src WITH NO DATA;
CREATE TABLE IF NOT EXISTS t1 AS SELECT 1;
CREATE TABLE IF NOT EXISTS t1 AS SELECT 1 WITH NO DATA;
SELECT * INTO t5 FROM src WHERE a <= 2;
CREATE TEMP TABLE t6 AS VALUES (1), (2), (3);
PREPARE q(int) AS SELECT a FROM src WHERE a >= $1;
CREATE TABLE t7 AS EXECUTE q(4);
CREATE TABLE t8 AS EXECUTE q(4) WITH NO DATA;
CREATE TABLE IF NOT EXISTS t7 AS EXECUTE q(1);
CREATE TABLE t1 AS SELECT 1;
CREATE TABLE t9 (x, y, z) AS SELECT 1, 2;
EXPLAIN (COSTS OFF) CREATE TABLE t10 AS SELECT 1 AS a;
SELECT (SELECT count(*) FROM t1), (SELECT count(*) FROM t2), (SELECT count(*) FROM t5), (SELECT count(*) FROM t6), (SELECT count(*) FROM t7);
";

/// The tags (`SELECT n`; `CREATE TABLE AS` for WITH NO DATA and a skipped
/// IF NOT EXISTS; `SELECT 0` for AS EXECUTE ... WITH NO DATA), NOTICEs and
/// errors, as PostgreSQL 15 answers them.
#[test]
fn command_tags_match_postgres_15() {
    let pg_dir = tempfile::tempdir().unwrap();
    let pg = Pg15::start(&pg_dir.path().join("pg"));
    let srv = Server::start_temp(&[]);
    let want = tags_of(pg.cmd("psql"), TAGS);
    let got = tags_of(srv.cmd("psql"), TAGS);
    assert_eq!(got, want);
    // What PostgreSQL answers, written out: the comparison is not of two empty outputs.
    for line in ["SELECT 5", "SELECT 2\n", "SELECT 0", "CREATE TABLE AS", "SELECT 3", "5|2|2|3|2"] {
        assert!(want.contains(line), "{line:?} not in {want}");
    }
}

/// The query's rows go into the table as they are made: a CREATE TABLE AS
/// of about 60 MB of rows runs under a 16 MB statement memory bound (which
/// collecting them first would exceed), and SELECT INTO likewise.
#[test]
fn rows_stream_into_the_new_table() {
    let srv = Server::start_temp(&[]);
    let mut c = Client::connect(srv.port);
    assert!(c.query("SET statement_memory_limit = '16MB'").error.is_none());
    let r = c.query("CREATE TABLE big AS SELECT g, repeat('x', 200) AS pad FROM generate_series(1, 300000) g");
    assert!(r.error.is_none(), "{:?}", r.error);
    let r = c.query("SELECT g, pad INTO big2 FROM big");
    assert!(r.error.is_none(), "{:?}", r.error);
    assert!(c.query("RESET statement_memory_limit").error.is_none());
    let r = c.query("SELECT count(*), sum(g), sum(length(pad)) FROM big2");
    assert_eq!(r.rows[0].iter().map(|v| v.clone().unwrap()).collect::<Vec<_>>(), ["300000", "45000150000", "60000000"]);
    // The bound holds: collecting the same data in one value fails.
    assert!(c.query("SET statement_memory_limit = '16MB'").error.is_none());
    let r = c.query("SELECT array_agg(pad) FROM big");
    assert!(r.error.is_some(), "array_agg of 60 MB fit a 16 MB bound");
}
