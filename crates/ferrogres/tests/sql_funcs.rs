//! Built-in functions and operators end to end (strings, math and integer
//! operators, regular expressions, set-returning functions in the select list):
//! psql scripts `tests/sql/NAME.sql` run against the `ferrogres` binary, output
//! compared byte for byte with `tests/expected/NAME.out`, which PostgreSQL 15
//! printed for the same script (`psql -X -a -q -v ON_ERROR_STOP=0 -f sql/NAME.sql`).

mod common;
use common::server::Server;
use std::io::Read;
use std::path::Path;

fn check_script(name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let (mut reader, writer) = std::io::pipe().unwrap();
    let mut child = srv
        .psql_cmd()
        .current_dir(&tests)
        .args(["-a", "-q", "-v", "ON_ERROR_STOP=0", "-f"])
        .arg(format!("sql/{name}.sql"))
        .stdout(writer.try_clone().unwrap())
        .stderr(writer)
        .spawn()
        .unwrap();
    let mut got = String::new();
    reader.read_to_string(&mut got).unwrap();
    child.wait().unwrap();
    let expected = std::fs::read_to_string(tests.join(format!("expected/{name}.out"))).unwrap();
    if got != expected {
        let out = std::env::temp_dir().join(format!("ferrogres-{name}.out"));
        std::fs::write(&out, &got).unwrap();
        panic!(
            "output of sql/{name}.sql differs from expected/{name}.out; got {} (diff it against the expected file)\nserver log: {}",
            out.display(),
            srv.log()
        );
    }
}

#[test]
fn string_functions_match_postgres_15() {
    check_script("strings");
}

#[test]
fn math_functions_and_integer_operators_match_postgres_15() {
    check_script("math");
}

#[test]
fn regular_expressions_match_postgres_15() {
    check_script("regex");
}

#[test]
fn set_returning_functions_in_select_list_match_postgres_15() {
    check_script("srf");
}
