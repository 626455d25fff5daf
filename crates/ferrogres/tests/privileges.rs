//! Object privileges (issue 14, item 2) through real clients: psql sessions as
//! different roles (SET ROLE, and logins of their own).
//!
//! `sql/privileges.sql` runs through psql and its output is compared byte for
//! byte with `expected/privileges.out`, which PostgreSQL 15 printed for the same
//! script: every check path (SELECT, INSERT, UPDATE, DELETE, TRUNCATE, COPY,
//! DDL ownership, schema USAGE and CREATE, sequences), GRANT ... WITH GRANT
//! OPTION chains and REVOKE ... CASCADE, the warnings, INHERIT, PUBLIC, views
//! read and written as their owner, plans kept by the session (prepared
//! statements and the simple-query plan cache) failing after a REVOKE,
//! superuser bypass, the ACLs printed in pg_class / pg_namespace /
//! pg_database, has_*_privilege, ALTER ... OWNER TO.

mod common;
use common::server::{check_script, Server};
use std::io::Write;
use std::process::Stdio;

#[test]
fn privileges_script_matches_postgresql_15() {
    check_script("privileges");
}

/// `sql/privileges_parameters.sql` against PostgreSQL 15's output: ALTER
/// SYSTEM and SET of superuser settings (SET, RESET, set_config) refused to a
/// plain role with 42501, allowed after GRANT ALTER SYSTEM / SET ON PARAMETER
/// (also through a group), refused again after REVOKE; RESET ALL superuser
/// only; pg_parameter_acl rows made and removed; grant options and CASCADE;
/// bad names and privilege types.
#[test]
fn parameter_privileges_match_postgresql_15() {
    check_script("privileges_parameters");
}

/// `sql/privileges_inquiry.sql` against PostgreSQL 15's output: the
/// has_*_privilege functions with the role and the object taken from each
/// row (a table of role names, pg_class.oid), their NULLs (unknown OID or
/// attnum) and errors (unknown names, bad privilege types, a schema without
/// USAGE); information_schema.table_privileges and role_table_grants as a
/// superuser and as a plain role.
#[test]
fn privilege_inquiry_matches_postgresql_15() {
    check_script("privileges_inquiry");
}

/// `sql/privileges_columns.sql` against PostgreSQL 15's output: GRANT /
/// REVOKE on columns (pg_attribute.attacl, `\dp`'s column privileges, 0LP01
/// and 42703, grant options on columns and their warnings, CASCADE), the
/// checks of exactly the columns each statement names (the SELECT list,
/// WHERE, ORDER BY, GROUP BY, JOIN ON and USING, outer references from
/// subqueries, `*` and `t.*`, `count(*)` needing any column; UPDATE's SET
/// targets and the columns it reads; INSERT's column list with defaulted
/// columns not inserted; RETURNING; COPY's column list; a foreign key's
/// REFERENCES on the referenced columns), 42501 `permission denied for table`
/// as PostgreSQL 15 words a column denial, a table-level REVOKE clearing the
/// columns' grants, grants through a group, a prepared statement failing
/// after a column REVOKE, views reading columns as their owner, and
/// has_column_privilege / has_any_column_privilege from attacl.
#[test]
fn column_privileges_match_postgresql_15() {
    check_script("privileges_columns");
}

/// `sql/privileges_defaults.sql` against PostgreSQL 15's output: ALTER
/// DEFAULT PRIVILEGES global and per-schema entries (pg_default_acl, `\ddp`),
/// the ACLs new tables, views, sequences (serial ones too) and schemas get
/// from them (`\dp`, `\dn+`), a plain role denied with 42501 before and
/// allowed after, the owner revoking from itself, entries removed when back
/// at their default, grant options and groups, FOR ROLE (membership) and IN
/// SCHEMA with their errors, functions' and types' entries, a rolled back
/// change, DROP SCHEMA taking its entries.
#[test]
fn default_privileges_match_postgresql_15() {
    check_script("privileges_defaults");
}

/// `sql/privileges_owned.sql` against PostgreSQL 15's output: DROP ROLE's
/// 2BP01 with the DETAIL of what depends on the role (owned relations,
/// schemas and default privileges; privileges on tables, columns, views,
/// schemas and in default privileges), REASSIGN OWNED and DROP OWNED with
/// their 42501 / 42704 / 2BP01 errors, ownership and the owner's grants
/// moved (column grants too; default privileges left), DROP OWNED revoking
/// with CASCADE and removing default privileges, a plain role losing access
/// and the new owner gaining it, a rolled back REASSIGN.
#[test]
fn reassign_and_drop_owned_match_postgresql_15() {
    check_script("privileges_owned");
}

/// `sql/privileges_functions.sql` against PostgreSQL 15's output: EXECUTE on
/// SQL functions. pg_proc.proowner and proacl (NULL: the owner's default with
/// EXECUTE for PUBLIC), GRANT / REVOKE ON FUNCTION | ROUTINE | PROCEDURE and
/// ON ALL FUNCTIONS IN SCHEMA with their errors (42725 an overloaded name
/// without arguments, 42883, 42809, 0LP01) and warnings, grant options and
/// CASCADE, groups; 42501 `permission denied for function f1` at call time in
/// the SELECT list and WHERE, through a view (checked as the querying role),
/// and for a prepared statement after a REVOKE; has_function_privilege by
/// signature and by OID; ALTER FUNCTION OWNER TO, DROP and CREATE OR REPLACE
/// needing ownership, CREATE FUNCTION needing CREATE on the schema; default
/// privileges on new functions; DROP ROLE's list of functions, REASSIGN
/// OWNED and DROP OWNED.
#[test]
fn function_privileges_match_postgresql_15() {
    check_script("privileges_functions");
}

/// A function's owner and ACL are its pg_proc row: after a crash (kill -9:
/// the change is only in the WAL) the REVOKE still holds and the GRANT too.
#[test]
fn function_acl_survives_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let mut srv = Server::start(dir.path());
    srv.sql_ok(
        "CREATE ROLE fr1 LOGIN; CREATE ROLE fr2 LOGIN;
         CREATE FUNCTION inc(int) RETURNS int LANGUAGE sql AS 'SELECT $1 + 1';
         REVOKE EXECUTE ON FUNCTION inc(int) FROM PUBLIC;
         GRANT EXECUTE ON FUNCTION inc(int) TO fr1;
         ALTER FUNCTION inc(int) OWNER TO fr2;",
    );
    srv.signal(libc::SIGKILL);
    let srv = Server::start(dir.path());
    assert_eq!(srv.sql_ok("SELECT pg_get_userbyid(proowner), proacl::text FROM pg_proc WHERE proname = 'inc';"), "fr2|{fr2=X/fr2,fr1=X/fr2}\n");
    assert_eq!(srv.sql_ok("SET ROLE fr1;\nSELECT inc(1);"), "SET\n2\n");
    let (_, err) = srv.sql("CREATE ROLE fr3; SET ROLE fr3; SELECT inc(1);");
    assert!(err.contains("ERROR:  permission denied for function inc"), "{err}");
}

/// Default privileges are catalog rows: they survive a crash (kill -9, so
/// the entry is only in the WAL) and still apply to new objects afterwards.
#[test]
fn default_privileges_survive_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let mut srv = Server::start(dir.path());
    srv.sql_ok(
        "CREATE ROLE dr LOGIN; CREATE SCHEMA ds;
         ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO dr;
         ALTER DEFAULT PRIVILEGES IN SCHEMA ds GRANT INSERT ON TABLES TO dr;
         GRANT USAGE ON SCHEMA ds TO dr;",
    );
    srv.signal(libc::SIGKILL);
    let srv = Server::start(dir.path());
    let ddp = "SELECT pg_get_userbyid(defaclrole), coalesce(n.nspname, '-'), defaclobjtype, defaclacl::text \
               FROM pg_default_acl d LEFT JOIN pg_namespace n ON n.oid = d.defaclnamespace ORDER BY 2;";
    assert_eq!(srv.sql_ok(ddp), "postgres|-|r|{postgres=arwdDxt/postgres,dr=r/postgres}\npostgres|ds|r|{dr=a/postgres}\n");
    srv.sql_ok("CREATE TABLE ds.t (a int); INSERT INTO ds.t VALUES (1);");
    assert_eq!(srv.sql_ok("SET ROLE dr;\nINSERT INTO ds.t VALUES (2);\nSELECT count(*) FROM ds.t;"), "SET\nINSERT 0 1\n2\n");
    let (_, err) = srv.sql("SET ROLE dr; DELETE FROM ds.t;");
    assert!(err.contains("ERROR:  permission denied for table t"), "{err}");
    assert_eq!(srv.sql_ok("SELECT relacl::text FROM pg_class WHERE relname = 't';"), "{postgres=arwdDxt/postgres,dr=ar/postgres}\n");
}

/// A session of its own (logged in as `alice`) keeps a prepared plan; a REVOKE
/// committed by another session makes its next execution fail, and a GRANT
/// makes it work again.
#[test]
fn revoke_from_another_session_fails_the_kept_plan() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    srv.sql_ok("CREATE ROLE alice LOGIN; CREATE TABLE t (a int); INSERT INTO t VALUES (1), (2); GRANT SELECT ON t TO alice;");
    let mut a = std::process::Command::new("psql")
        .arg("-h")
        .arg(srv.socket_path().parent().unwrap())
        .args(["-X", "-At", "-p", &port_of(&srv), "-U", "alice", "-d", "postgres", "-v", "ON_ERROR_STOP=0"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = a.stdin.take().unwrap();
    // psql sends each line as it reads it: the REVOKE below commits between them.
    stdin.write_all(b"PREPARE p AS SELECT sum(a) FROM t;\nEXECUTE p;\nSELECT pg_sleep(2.01);\nEXECUTE p;\nSELECT pg_sleep(2.02);\nEXECUTE p;\n").unwrap();
    stdin.flush().unwrap();
    wait_for_query(&srv, "SELECT pg_sleep(2.01);");
    srv.sql_ok("REVOKE SELECT ON t FROM alice;");
    wait_for_query(&srv, "SELECT pg_sleep(2.02);");
    srv.sql_ok("GRANT SELECT ON t TO alice;");
    drop(stdin);
    let out = a.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stdout, "PREPARE\n3\n\n\n3\n", "stderr: {stderr}");
    assert!(stderr.contains("ERROR:  permission denied for table t"), "{stderr}");
}

/// EXPLAIN [ANALYZE] EXECUTE checks the prepared statement's privileges as
/// EXECUTE does (PostgreSQL checks them at executor start, which EXPLAIN
/// reaches too): after a REVOKE both fail with 42501, after the GRANT both run.
#[test]
fn explain_execute_checks_the_prepared_statements_privileges() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    srv.sql_ok("CREATE ROLE bob; CREATE TABLE s (a int); INSERT INTO s VALUES (1); GRANT SELECT ON s TO bob;");
    let script = [
        "SET ROLE bob",
        "PREPARE q AS SELECT a FROM s",
        "RESET ROLE",
        "REVOKE SELECT ON s FROM bob",
        "SET ROLE bob",
        "EXPLAIN (COSTS OFF) EXECUTE q",
        "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE q",
        "EXECUTE q",
        "RESET ROLE",
        "GRANT SELECT ON s TO bob",
        "SET ROLE bob",
        "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE q",
    ];
    let mut cmd = srv.psql_cmd();
    cmd.args(["-At", "-v", "ON_ERROR_STOP=0"]);
    for st in script {
        cmd.args(["-c", st]);
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("ERROR:  permission denied for table s").count(), 3, "{stderr}");
    assert!(stdout.contains("Seq Scan on s (actual rows=1 loops=1)"), "{stdout}\n{stderr}");
}

fn port_of(srv: &Server) -> String {
    // The socket is .s.PGSQL.<port>.
    srv.socket_path().file_name().unwrap().to_string_lossy().rsplit('.').next().unwrap().to_string()
}

/// Waits until some session runs `query` (pg_stat_activity).
fn wait_for_query(srv: &Server, query: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let sql = format!("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query = '{query}'");
    while srv.sql_ok(&sql).trim() != "1" {
        assert!(std::time::Instant::now() < deadline, "no session ran {query}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Connecting needs CONNECT on the database (PostgreSQL 15's texts): after
/// `REVOKE CONNECT ... FROM PUBLIC` a plain role is refused with a FATAL
/// 42501, a superuser is not; `GRANT CONNECT` lets the role in again.
#[test]
fn connect_needs_the_connect_privilege() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    srv.sql_ok("CREATE ROLE alice LOGIN; CREATE DATABASE cdb; REVOKE CONNECT ON DATABASE cdb FROM PUBLIC;");
    let connect = |user: &str| {
        let out = std::process::Command::new("psql")
            .arg("-h")
            .arg(&srv.dir)
            .args(["-X", "-At", "-p", &srv.port.to_string(), "-U", user, "-d", "cdb", "-c", "SELECT current_user"])
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, stdout, stderr) = connect("alice");
    assert_eq!((code, stdout.as_str()), (Some(2), ""), "{stderr}");
    assert!(
        stderr.ends_with("FATAL:  permission denied for database \"cdb\"\nDETAIL:  User does not have CONNECT privilege.\n"),
        "{stderr}"
    );
    assert_eq!(connect("postgres").1, "postgres\n");
    srv.sql_ok("GRANT CONNECT ON DATABASE cdb TO alice;");
    let (code, stdout, stderr) = connect("alice");
    assert_eq!((code, stdout.as_str()), (Some(0), "alice\n"), "{stderr}");
}

/// A superuser-only setting in a plain role's startup packet (PGOPTIONS
/// `-c`) needs SET on the parameter, as in PostgreSQL 15: FATAL 42501
/// `permission denied to set parameter "x"` before, the setting after GRANT
/// SET ON PARAMETER; ordinary settings and superusers are not checked.
#[test]
fn startup_options_need_set_on_superuser_settings() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    srv.sql_ok("CREATE ROLE plain LOGIN;");
    let connect = |user: &str, options: &str, query: &str| {
        let out = std::process::Command::new("psql")
            .arg("-h")
            .arg(&srv.dir)
            .args(["-X", "-At", "-p", &srv.port.to_string(), "-U", user, "-d", "postgres", "-c", query])
            .env("PGOPTIONS", options)
            .env_remove("PGSERVICE")
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    for setting in ["deadlock_timeout=5s", "log_lock_waits=on"] {
        let (code, stdout, stderr) = connect("plain", &format!("-c {setting}"), "SELECT 1");
        let name = setting.split('=').next().unwrap();
        assert_eq!((code, stdout.as_str()), (Some(2), ""), "{stderr}");
        assert!(stderr.ends_with(&format!("FATAL:  permission denied to set parameter \"{name}\"\n")), "{stderr}");
    }
    // A user setting needs nothing; a superuser needs nothing.
    assert_eq!(connect("plain", "-c work_mem=1MB", "SHOW work_mem").1, "1MB\n");
    assert_eq!(connect("postgres", "-c deadlock_timeout=5s", "SHOW deadlock_timeout").1, "5s\n");
    srv.sql_ok("GRANT SET ON PARAMETER deadlock_timeout TO plain;");
    let (code, stdout, stderr) = connect("plain", "-c deadlock_timeout=5s", "SHOW deadlock_timeout");
    assert_eq!((code, stdout.as_str()), (Some(0), "5s\n"), "{stderr}");
    // The other one is still refused.
    assert_eq!(connect("plain", "-c log_lock_waits=on", "SELECT 1").0, Some(2));
}
