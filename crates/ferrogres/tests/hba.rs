//! Client authentication by pg_hba.conf (issue 14, item 3, first part): the
//! initdb default (trust on the Unix socket and loopback), rules by type,
//! database, user and address, `reject`, PostgreSQL's 28000 messages, the file
//! re-read on reload and refused (whole) when it has an error. Through psql and
//! the real server binary.

mod common;
use common::server::{run_to_exit, Server};
use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

fn write(path: &std::path::Path, text: &str) {
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666)).unwrap();
}

/// psql over TCP to 127.0.0.1 as `user` to `db`: (stdout, stderr).
fn tcp(srv: &Server, user: &str, db: &str) -> (String, String) {
    let o = std::process::Command::new("psql")
        .args(["-X", "-At", "-h", "127.0.0.1", "-p", &srv.port.to_string(), "-U", user, "-d", db, "-c", "SELECT 'in'"])
        .env_remove("PGPASSWORD")
        .env_remove("PGSSLMODE")
        .env_remove("PGOPTIONS")
        .output()
        .unwrap();
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

fn reload_and_wait(srv: &Server, marker_count: usize) {
    assert_eq!(srv.sql_ok("SELECT pg_reload_conf();"), "t\n");
    let deadline = Instant::now() + Duration::from_secs(10);
    while srv.log().matches("received SIGHUP").count() < marker_count {
        assert!(Instant::now() < deadline, "no reload: {}", srv.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(100));
}

#[test]
fn rules_decide_who_connects_and_reload_replaces_them() {
    let srv = Server::start_temp(&[]);
    let hba = srv.dir.join("data").join("pg_hba.conf");
    // The default: loopback TCP is trusted.
    assert_eq!(tcp(&srv, "postgres", "postgres").0, "in\n");

    write(
        &hba,
        "# TYPE DATABASE USER ADDRESS METHOD\n\
         local all all trust\n\
         host all mallory 127.0.0.1/32 reject\n\
         host postgres,\"template1\" postgres 127.0.0.1 255.255.255.255 trust\n\
         host sameuser all 127.0.0.0/8 trust\n",
    );
    reload_and_wait(&srv, 1);
    assert_eq!(tcp(&srv, "postgres", "postgres").0, "in\n");
    assert_eq!(tcp(&srv, "postgres", "template1").0, "in\n");
    let (_, err) = tcp(&srv, "postgres", "template0");
    assert!(
        err.contains("FATAL:  no pg_hba.conf entry for host \"127.0.0.1\", user \"postgres\", database \"template0\", no encryption"),
        "{err}"
    );
    let (_, err) = tcp(&srv, "mallory", "postgres");
    assert!(
        err.contains("FATAL:  pg_hba.conf rejects connection for host \"127.0.0.1\", user \"mallory\", database \"postgres\", no encryption"),
        "{err}"
    );
    // sameuser matched (then the role does not exist: a later check).
    let (_, err) = tcp(&srv, "ghost", "ghost");
    assert!(!err.contains("pg_hba.conf"), "{err}");
    // The Unix socket still works.
    assert_eq!(srv.sql_ok("SELECT 1;"), "1\n");

    // A file with an error is not loaded at all: the previous rules stay.
    write(&hba, "local all all trust\nhost all all 127.0.0.1/32 trust\nhost all all 127.0.0.1/33 trust\nhots all all trust\n");
    reload_and_wait(&srv, 2);
    let log = srv.log();
    let shown = std::fs::canonicalize(&hba).unwrap().display().to_string();
    assert!(log.contains(&format!("LOG:  invalid CIDR mask in address \"127.0.0.1/33\"\nCONTEXT:  line 3 of configuration file \"{shown}\"")), "{log}");
    assert!(log.contains(&format!("LOG:  invalid connection type \"hots\"\nCONTEXT:  line 4 of configuration file \"{shown}\"")), "{log}");
    assert!(log.contains("LOG:  pg_hba.conf was not reloaded"), "{log}");
    assert!(tcp(&srv, "postgres", "template0").1.contains("no pg_hba.conf entry"));

    // reject for everyone on TCP.
    write(&hba, "local all all trust\nhost all all 0.0.0.0/0 reject\n");
    reload_and_wait(&srv, 3);
    assert!(tcp(&srv, "postgres", "postgres").1.contains("pg_hba.conf rejects connection for host \"127.0.0.1\""));
}

#[test]
fn a_bad_file_stops_the_start() {
    let tmp = tempfile::tempdir().unwrap();
    {
        let mut srv = Server::start_with(tmp.path(), &[]);
        srv.signal(libc::SIGTERM);
    }
    let hba = tmp.path().join("data").join("pg_hba.conf");
    write(&hba, "local all all scram-sha-255\n");
    let shown = std::fs::canonicalize(&hba).unwrap().display().to_string();
    let port = common::server::unused_port().to_string();
    let d = tmp.path().join("data");
    let (code, stderr) =
        run_to_exit(&["-D", d.to_str().unwrap(), "-p", &port, "-k", tmp.path().to_str().unwrap()], Duration::from_secs(20));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "LOG:  invalid authentication method \"scram-sha-255\"\nCONTEXT:  line 1 of configuration file \"{shown}\"\nFATAL:  could not load pg_hba.conf\n"
        )),
        "{stderr}"
    );
}

#[test]
fn the_startup_role_must_exist_and_may_log_in() {
    let srv = Server::start_temp(&[]);
    // Checked after authentication (trust here), before the database.
    for (user, db, msg) in [
        ("nosuch", "postgres", "FATAL:  role \"nosuch\" does not exist"),
        ("nosuch", "nosuchdb", "FATAL:  role \"nosuch\" does not exist"),
        ("pg_monitor", "postgres", "FATAL:  role \"pg_monitor\" is not permitted to log in"),
        ("pg_monitor", "nosuchdb", "FATAL:  role \"pg_monitor\" is not permitted to log in"),
        ("postgres", "nosuchdb", "FATAL:  database \"nosuchdb\" does not exist"),
    ] {
        let (out, err) = tcp(&srv, user, db);
        assert_eq!(out, "", "{user}/{db}");
        assert!(err.contains(msg), "{user}/{db}: {err}");
    }
    assert_eq!(tcp(&srv, "postgres", "postgres").0, "in\n");
}

#[test]
fn pg_hba_file_rules_shows_the_file_on_disk() {
    let srv = Server::start_temp(&[]);
    // The initdb default, as PostgreSQL 15 shows it.
    let rows = srv.sql_ok("SELECT type, database, user_name, address, netmask, auth_method, options, error FROM pg_hba_file_rules ORDER BY line_number;");
    assert_eq!(
        rows,
        "local|{all}|{all}|||trust||\n\
         host|{all}|{all}|127.0.0.1|255.255.255.255|trust||\n\
         host|{all}|{all}|::1|ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff|trust||\n\
         local|{replication}|{all}|||trust||\n\
         host|{replication}|{all}|127.0.0.1|255.255.255.255|trust||\n\
         host|{replication}|{all}|::1|ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff|trust||\n"
    );
    // Edited, not reloaded: the view reads the file, errors included.
    write(&srv.dir.join("data").join("pg_hba.conf"), "local all all trust\n\nhost db1,db2 +admins 10.0.0.0/8 reject\nhost all all 10.0.0.0/40 trust\n");
    assert_eq!(
        srv.sql_ok("SELECT line_number, type, database, user_name, address, netmask, auth_method, error FROM pg_hba_file_rules;"),
        "1|local|{all}|{all}|||trust|\n\
         3|host|{db1,db2}|{+admins}|10.0.0.0|255.0.0.0|reject|\n\
         4|||||||invalid CIDR mask in address \"10.0.0.0/40\"\n"
    );
}
