//! PostgreSQL 15's own regression tests (tests/pg15/regress, see its ORIGIN.md) through
//! pg_regress against ferrogres: `test_setup` first (its C functions fail, its
//! tables load), then `PASSING`, whose output must match PostgreSQL's expected
//! files byte for byte. `scripts/pg_regress.sh` shows how far the others are.
//!
//! pg_regress comes with PostgreSQL 15's client package (`.ci/run` installs it);
//! without it the test fails.

mod common;
use common::server::Server;
use std::path::Path;
use std::process::Command;

const PG_REGRESS: &str = "/usr/lib/postgresql/15/lib/pgxs/src/test/regress/pg_regress";
const REGRESS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/pg15/regress");

/// Tests whose output matches PostgreSQL's exactly.
const PASSING: &[&str] = &["boolean", "char", "varchar", "text", "int2", "int4", "int8", "delete"];

fn pg_regress(srv: &Server, input: &Path, out: &Path, tests: &[&str]) -> bool {
    Command::new(PG_REGRESS)
        .args(["--use-existing", "--dbname=postgres", "--user=postgres", "--host=127.0.0.1"])
        .arg(format!("--port={}", srv.port))
        .arg("--bindir=/usr/lib/postgresql/15/bin")
        .arg(format!("--inputdir={}", input.display()))
        .arg(format!("--outputdir={}", out.display()))
        .args(tests)
        .env_remove("PGOPTIONS")
        .env_remove("PGSERVICE")
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap()
        .success()
}

#[test]
fn pg15_regression_tests() {
    assert!(Path::new(PG_REGRESS).exists(), "{PG_REGRESS} is missing: install postgresql-client-15 (.ci/run does)");
    let tmp = tempfile::tempdir().unwrap();
    let srv_dir = tmp.path().join("srv");
    std::fs::create_dir_all(&srv_dir).unwrap();
    let srv = Server::start(&srv_dir);
    // pg_regress writes into its input directory's tree: work on a copy, where the
    // server's account can read the data files test_setup COPYs in.
    let exchange = srv.exchange_dir();
    let input = exchange.path().join("regress");
    let st = Command::new("cp").arg("-r").arg(REGRESS).arg(&input).status().unwrap();
    assert!(st.success());
    let out = tmp.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    // test_setup fails on its C functions; what matters is the tables it loads.
    pg_regress(&srv, &input, &out, &["test_setup"]);
    let out2 = tmp.path().join("out2");
    std::fs::create_dir_all(&out2).unwrap();
    if !pg_regress(&srv, &input, &out2, PASSING) {
        let diffs = std::fs::read_to_string(out2.join("regression.diffs")).unwrap_or_default();
        panic!("regression tests failed:\n{diffs}\nserver log: {}", srv.log());
    }
}
