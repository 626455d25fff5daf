//! Roles and password authentication (issue 14, items 1 and 3): roles made
//! with SQL and kept in the shared catalogs across a restart, PostgreSQL 15's
//! errors for role commands, and the authentication matrix: for each of
//! scram-sha-256, md5 and password over the Unix socket and TCP, the right
//! password gets in, a wrong or missing one gets 28P01, a user no rule covers
//! gets 28000; `+group` rules; LOGIN, CONNECTION LIMIT, VALID UNTIL and
//! superuser_reserved_connections. Two clients: psql (libpq) with PGPASSWORD,
//! and `auth_client.py`, the protocol and SCRAM written with Python's standard
//! library. Both must be installed: a missing one fails the test.

mod common;
use common::server::Server;
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

fn write(path: &std::path::Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666)).unwrap();
}

/// psql as `user` with `password` (None: no PGPASSWORD, -w) over `host`:
/// Ok(current_user) or Err(stderr).
fn psql(srv: &Server, host: &str, user: &str, password: Option<&str>) -> Result<String, String> {
    let mut c = std::process::Command::new("psql");
    c.args(["-X", "-At", "-w", "-h", host, "-p", &srv.port.to_string(), "-U", user, "-d", "postgres", "-c", "SELECT current_user"])
        .env_remove("PGPASSWORD")
        .env_remove("PGSSLMODE")
        .env_remove("PGOPTIONS")
        .env_remove("PGPASSFILE")
        .env("PGPASSFILE", "/nonexistent");
    if let Some(p) = password {
        c.env("PGPASSWORD", p);
    }
    let o = c.output().expect("psql runs");
    if o.status.success() {
        Ok(String::from_utf8_lossy(&o.stdout).trim().to_string())
    } else {
        Err(String::from_utf8_lossy(&o.stderr).into_owned())
    }
}

/// The Python client's one-line answer.
fn pyclient(srv: &Server, host: &str, user: &str, password: &str) -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/auth_client.py");
    let o = std::process::Command::new("python3")
        .args([script, host, &srv.port.to_string(), user, "postgres", password])
        .output()
        .expect("python3 runs");
    assert!(o.status.success(), "auth_client.py: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

fn reload(srv: &Server, n: usize) {
    assert_eq!(srv.sql_ok("SELECT pg_reload_conf();"), "t\n");
    let deadline = Instant::now() + Duration::from_secs(10);
    while srv.log().matches("received SIGHUP").count() < n {
        assert!(Instant::now() < deadline, "no reload: {}", srv.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(100));
}

/// Runs `sql` as a psql script (each statement on its own, errors do not
/// stop it): (stdout, stderr).
fn script(srv: &Server, sql: &str) -> (String, String) {
    use std::io::Write;
    let mut c = srv
        .psql_cmd()
        .args(["-At", "-q", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(sql.as_bytes()).unwrap();
    let o = c.wait_with_output().unwrap();
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

const FAILED: &str = "FATAL:  password authentication failed for user";

#[test]
fn password_methods_matrix() {
    let srv = Server::start_temp(&[]);
    let sock = srv.dir.to_str().unwrap().to_string();
    let (_, err) = script(
        &srv,
        "CREATE USER scram_u PASSWORD 'scram pw';\n\
         CREATE ROLE staff;\nCREATE USER member_u PASSWORD 'member pw' IN ROLE staff;\n\
         SET password_encryption = md5;\nCREATE USER md5_u PASSWORD 'md5 pw';\n\
         CREATE USER plain_u PASSWORD 'plain pw';\n\
         CREATE USER nopass_u;\nCREATE ROLE nologin_u PASSWORD 'x';\n\
         CREATE USER expired_u PASSWORD 'old pw' VALID UNTIL '2001-01-01';\n",
    );
    assert_eq!(err, "");
    // Stored in PostgreSQL's formats.
    let stored = srv.sql_ok("SELECT rolname, rolpassword FROM pg_authid WHERE rolname IN ('scram_u', 'md5_u') ORDER BY 1;");
    let mut lines = stored.lines();
    let md5 = lines.next().unwrap();
    assert!(md5.starts_with("md5_u|md5") && md5.len() == "md5_u|".len() + 35, "{md5}");
    let scram = lines.next().unwrap();
    assert!(scram.starts_with("scram_u|SCRAM-SHA-256$4096:"), "{scram}");
    // A verifier given as the password is stored as it is.
    let verifier = scram.trim_start_matches("scram_u|").to_string();
    assert_eq!(script(&srv, &format!("CREATE USER copy_u PASSWORD '{verifier}';\n")).1, "");
    assert_eq!(srv.sql_ok("SELECT rolpassword FROM pg_authid WHERE rolname = 'copy_u';").trim(), verifier);

    let hba = srv.dir.join("data").join("pg_hba.conf");
    let mut reloads = 0;
    for method in ["scram-sha-256", "md5", "password"] {
        write(
            &hba,
            &format!(
                "local all postgres trust\nhost all postgres 127.0.0.1/32 trust\n\
                 local all +staff {method}\nhost all +staff 127.0.0.1/32 {method}\n\
                 local all scram_u,md5_u,plain_u,nopass_u,nologin_u,expired_u,copy_u,ghost {method}\n\
                 host all scram_u,md5_u,plain_u,nopass_u,nologin_u,expired_u,copy_u,ghost 127.0.0.1/32 {method}\n"
            ),
        );
        reloads += 1;
        reload(&srv, reloads);
        for host in [sock.as_str(), "127.0.0.1"] {
            let ctx = format!("{method} via {host}");
            // The right password gets in, through both clients.
            assert_eq!(psql(&srv, host, "scram_u", Some("scram pw")).as_deref(), Ok("scram_u"), "{ctx}");
            assert_eq!(psql(&srv, host, "copy_u", Some("scram pw")).as_deref(), Ok("copy_u"), "{ctx}");
            assert_eq!(psql(&srv, host, "member_u", Some("member pw")).as_deref(), Ok("member_u"), "+staff, {ctx}");
            // md5 passwords serve md5 and password, never SCRAM (PostgreSQL's rule).
            let md5_in = psql(&srv, host, "md5_u", Some("md5 pw"));
            if method == "scram-sha-256" {
                assert!(md5_in.as_ref().unwrap_err().contains(FAILED), "{ctx}: {md5_in:?}");
            } else {
                assert_eq!(md5_in.as_deref(), Ok("md5_u"), "{ctx}");
            }
            let expect_method = match method {
                // md5 with a SCRAM verifier runs SCRAM.
                "md5" => "scram-sha-256",
                m => m,
            };
            assert_eq!(pyclient(&srv, host, "scram_u", "scram pw"), format!("OK {expect_method} scram_u"), "{ctx}");
            if method != "scram-sha-256" {
                assert_eq!(pyclient(&srv, host, "md5_u", "md5 pw"), format!("OK {method} md5_u"), "{ctx}");
            }
            // Wrong, missing, no password, expired, no such role: 28P01, same text.
            for (user, pw) in [("scram_u", Some("wrong")), ("md5_u", Some("wrong")), ("nopass_u", Some("x")), ("expired_u", Some("old pw")), ("ghost", Some("x"))]
            {
                let e = psql(&srv, host, user, pw).unwrap_err();
                assert!(e.contains(&format!("{FAILED} \"{user}\"")), "{ctx} {user}: {e}");
                assert!(pyclient(&srv, host, user, pw.unwrap()).starts_with("ERROR 28P01 password authentication failed"), "{ctx} {user}");
            }
            let e = psql(&srv, host, "scram_u", None).unwrap_err();
            assert!(e.contains("no password supplied") || e.contains(FAILED), "{ctx}: {e}");
            assert_eq!(pyclient(&srv, host, "scram_u", "-"), "EOF", "{ctx}");
            // A role without LOGIN passes authentication, then 28000.
            let e = psql(&srv, host, "nologin_u", Some("x"));
            assert!(e.as_ref().unwrap_err().contains(FAILED) || e.as_ref().unwrap_err().contains("is not permitted to log in"), "{e:?}");
        }
        // A user no rule covers: 28000.
        let e = psql(&srv, "127.0.0.1", "other_u", Some("x")).unwrap_err();
        assert!(e.contains("FATAL:  no pg_hba.conf entry for host \"127.0.0.1\", user \"other_u\", database \"postgres\", no encryption"), "{e}");
        assert_eq!(pyclient(&srv, "127.0.0.1", "other_u", "x").split(' ').nth(1), Some("28000"));
    }
    // The server log says why, as PostgreSQL's does.
    let log = srv.log();
    assert!(log.contains("DETAIL:  Role \"ghost\" does not exist."), "{log}");
    assert!(log.contains("DETAIL:  User \"expired_u\" has an expired password."), "{log}");
    assert!(log.contains("Connection matched pg_hba.conf line 5: \"local all scram_u,md5_u"), "{log}");
}

#[test]
fn login_connection_limit_and_reserved_slots() {
    let srv = Server::start_temp(&["-c", "max_connections=4", "-c", "superuser_reserved_connections=2"]);
    let sock = srv.dir.to_str().unwrap().to_string();
    assert_eq!(script(&srv, "CREATE ROLE nologin;\nCREATE USER limited CONNECTION LIMIT 1;\nCREATE USER u2;\n").1, "");
    let e = psql(&srv, &sock, "nologin", None).unwrap_err();
    assert!(e.contains("FATAL:  role \"nologin\" is not permitted to log in"), "{e}");
    let e = psql(&srv, &sock, "ghost", None).unwrap_err();
    assert!(e.contains("FATAL:  role \"ghost\" does not exist"), "{e}");
    // Hold one session of `limited` open with the raw client, then a second is refused.
    // The poll below is a session too: when it overlaps the held session's
    // login, that login can find only reserved slots left (PostgreSQL would
    // refuse it as well), and is tried again.
    let hold = |user: &str| {
        let spawn = || {
            std::process::Command::new("psql")
                .args(["-X", "-h", &sock, "-p", &srv.port.to_string(), "-U", user, "-d", "postgres", "-c", "SELECT pg_sleep(4)"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let mut c = spawn();
        let deadline = Instant::now() + Duration::from_secs(30);
        while srv.sql_ok(&format!("SELECT count(*) FROM pg_stat_activity WHERE usename = '{user}';")).trim() != "1" {
            if let Ok(Some(_)) = c.try_wait() {
                let o = c.wait_with_output().unwrap();
                let err = String::from_utf8_lossy(&o.stderr).into_owned();
                assert!(err.contains("remaining connection slots are reserved"), "{user} could not connect: {err}");
                c = spawn();
            }
            assert!(Instant::now() < deadline, "{user} not in pg_stat_activity");
            std::thread::sleep(Duration::from_millis(50));
        }
        c
    };
    let held = hold("limited");
    let e = psql(&srv, &sock, "limited", None).unwrap_err();
    assert!(e.contains("FATAL:  too many connections for role \"limited\""), "{e}");
    // max_connections 4, 2 reserved: with `limited` in, a second ordinary
    // session takes slot 2, a third is refused; the superuser still gets in.
    let held2 = hold("u2");
    let e = psql(&srv, &sock, "u2", None).unwrap_err();
    assert!(e.contains("FATAL:  remaining connection slots are reserved for non-replication superuser connections"), "{e}");
    assert_eq!(psql(&srv, &sock, "postgres", None).as_deref(), Ok("postgres"));
    for c in [held, held2] {
        assert!(c.wait_with_output().unwrap().status.success());
    }
}

#[test]
fn role_commands_and_catalogs_survive_restart() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    let (out, err) = script(
        &srv,
        "CREATE ROLE a;\nCREATE ROLE a;\nCREATE USER u1 PASSWORD 'x' CONNECTION LIMIT 2 CREATEDB IN ROLE a;\n\
         DROP ROLE nope;\nGRANT a TO a;\nGRANT u1 TO a;\nCREATE ROLE pg_x;\nDROP ROLE pg_monitor;\nDROP ROLE postgres;\n\
         CREATE DATABASE dbx OWNER u1;\nDROP ROLE u1;\nDROP DATABASE dbx;\n\
         ALTER ROLE u1 SET work_mem = '8MB';\nALTER ROLE a RENAME TO b;\nGRANT b TO u1 WITH ADMIN OPTION;\n\
         SELECT rolname, rolconfig FROM pg_roles WHERE rolname = 'u1';\n\
         SELECT r.rolname, m.rolname, a.admin_option FROM pg_auth_members a JOIN pg_roles r ON r.oid = a.roleid JOIN pg_roles m ON m.oid = a.member WHERE m.rolname = 'u1';\n",
    );
    for e in [
        "ERROR:  role \"a\" already exists",
        "ERROR:  role \"nope\" does not exist",
        "ERROR:  role \"a\" is a member of role \"a\"",
        "ERROR:  role \"u1\" is a member of role \"a\"",
        "ERROR:  role name \"pg_x\" is reserved\nDETAIL:  Role names starting with \"pg_\" are reserved.",
        "ERROR:  cannot drop role pg_monitor because it is required by the database system",
        "ERROR:  current user cannot be dropped",
        "ERROR:  role \"u1\" cannot be dropped because some objects depend on it\nDETAIL:  owner of database dbx",
    ] {
        assert!(err.contains(e), "missing {e:?} in {err}");
    }
    assert_eq!(out, "u1|{work_mem=8MB}\nb|u1|t\n");
    // A non-superuser: no pg_authid, no CREATE ROLE; SET ROLE to its groups only.
    let (out, err) = script(
        &srv,
        "SET SESSION AUTHORIZATION u1;\nSELECT current_user, session_user;\nSELECT count(*) FROM pg_authid;\n\
         CREATE ROLE z;\nSET ROLE b;\nSELECT current_user;\nSET ROLE postgres;\nRESET ROLE;\nSELECT current_user;\n",
    );
    assert_eq!(out, "u1|u1\nb\nu1\n", "{err}");
    assert!(err.contains("ERROR:  permission denied for table pg_authid"), "{err}");
    assert!(err.contains("ERROR:  permission denied to create role"), "{err}");
    assert!(err.contains("ERROR:  permission denied to set role \"postgres\""), "{err}");
    // Transactional: a rolled-back CREATE ROLE leaves nothing.
    assert_eq!(script(&srv, "BEGIN;\nCREATE ROLE gone;\nROLLBACK;\n").1, "");
    drop(srv);
    let srv = Server::start(dir.path());
    assert_eq!(
        srv.sql_ok("SELECT rolname, rolcanlogin, rolcreatedb, rolconnlimit FROM pg_roles WHERE rolname IN ('b', 'u1', 'gone') ORDER BY 1;"),
        "b|f|f|-1\nu1|t|t|2\n"
    );
    // psql's \du as PostgreSQL 15 prints it.
    let out = srv.psql_cmd().args(["-c", "\\du"]).output().unwrap();
    let du = String::from_utf8_lossy(&out.stdout);
    assert!(du.contains(" postgres  | Superuser, Create role, Create DB, Replication, Bypass RLS | {}"), "{du}");
    assert!(du.contains(" b         | Cannot login                                               | {}"), "{du}");
    assert!(du.contains(" u1        | Create DB                                                 +| {b}"), "{du}");
}
