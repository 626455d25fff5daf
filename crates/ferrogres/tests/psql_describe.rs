//! psql's describe commands (`\dt`, `\d`, `\d pgbench_accounts`, `\di`, `\dn`,
//! `\d+ t`, `\d t`) against ferrogres print what they print against PostgreSQL
//! 15 after the same setup (`pgbench -i` and one table with a default, an
//! array column and a unique index). The test starts its own PostgreSQL 15
//! (/usr/lib/postgresql/15/bin; as the `postgres` account when run as root).
//! `\l` is compared whole, after a CREATE DATABASE on both.

mod common;
use common::pg15::Pg15;
use common::server::Server;
use std::process::Command;
use std::time::{Duration, Instant};

const SETUP: &str = "CREATE TABLE t (a int PRIMARY KEY, b text[] DEFAULT '{}', c varchar(10) NOT NULL, d bigint DEFAULT -1);\n\
                     CREATE UNIQUE INDEX t_c_idx ON t (c DESC);\n\
                     CREATE SCHEMA s;\n\
                     CREATE TABLE s.st (x int NOT NULL, y text);\n\
                     CREATE TABLE s.t (z int);\n";

const COMMANDS: &[&str] = &["\\dt", "\\d", "\\d pgbench_accounts", "\\di", "\\dn", "\\d+ t", "\\d t", "\\dt s.*", "\\d s.st"];

/// psql commands run after `SET search_path` (the visible tables change).
const WITH_PATH: &[&str] = &["\\dt", "\\d t"];

fn run(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn psql_describe_commands_match_postgres_15() {
    let pgdir = tempfile::tempdir().unwrap();
    let pg = Pg15::start(&pgdir.path().join("pg"));
    let fgdir = tempfile::tempdir().unwrap();
    let fg = Server::start(fgdir.path());
    let init = ["-i", "-q", "-s", "1", "postgres"];
    let out = pg.cmd("pgbench").args(init).output().unwrap();
    assert!(out.status.success(), "pgbench -i on PostgreSQL: {}", String::from_utf8_lossy(&out.stderr));
    let out = fg.cmd("pgbench").args(init).output().unwrap();
    assert!(out.status.success(), "pgbench -i on ferrogres: {}\n{}", String::from_utf8_lossy(&out.stderr), fg.log());
    let setup_pg = run(pg.cmd("psql").args(["-X", "-q", "-d", "postgres", "-c", SETUP]));
    let setup_fg = run(fg.cmd("psql").args(["-X", "-q", "-d", "postgres", "-c", SETUP]));
    assert_eq!(setup_fg, setup_pg);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut failures = Vec::new();
    for c in COMMANDS {
        let want = run(pg.cmd("psql").args(["-X", "-d", "postgres", "-c", c]));
        let got = run(fg.cmd("psql").args(["-X", "-d", "postgres", "-c", c]));
        if got != want {
            failures.push(format!("{c}\n--- PostgreSQL 15:\n{want}\n--- ferrogres:\n{got}"));
        }
        assert!(Instant::now() < deadline, "psql commands took too long");
    }
    for c in WITH_PATH {
        let args = ["-X", "-d", "postgres", "-c", "SET search_path = s, public", "-c", c];
        let want = run(pg.cmd("psql").args(args));
        let got = run(fg.cmd("psql").args(args));
        if got != want {
            failures.push(format!("SET search_path = s, public; {c}\n--- PostgreSQL 15:\n{want}\n--- ferrogres:\n{got}"));
        }
    }
    // \l: template0, template1, postgres and a created database.
    let create = ["-X", "-q", "-d", "postgres", "-c", "CREATE DATABASE newdb"];
    assert_eq!(run(fg.cmd("psql").args(create)), run(pg.cmd("psql").args(create)));
    let want = run(pg.cmd("psql").args(["-X", "-d", "postgres", "-c", "\\l"]));
    let got = run(fg.cmd("psql").args(["-X", "-d", "postgres", "-c", "\\l"]));
    if got != want {
        failures.push(format!("\\l\n--- PostgreSQL 15:\n{want}\n--- ferrogres:\n{got}"));
    }
    assert!(failures.is_empty(), "{}\nserver log: {}", failures.join("\n"), fg.log());
}
