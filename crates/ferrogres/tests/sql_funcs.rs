//! Built-in functions and operators end to end (strings, math and integer
//! operators, regular expressions, set-returning functions in the select list):
//! psql scripts `tests/sql/NAME.sql` run against the `ferrogres` binary, output
//! compared byte for byte with `tests/expected/NAME.out`, which PostgreSQL 15
//! printed for the same script (`psql -X -a -q -v ON_ERROR_STOP=0 -f sql/NAME.sql`).

mod common;
use common::server::check_script;

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

#[test]
fn md5_and_sha2_digests_match_postgres_15() {
    check_script("digests");
}

#[test]
fn encode_and_decode_match_postgres_15() {
    check_script("encode");
}
