//! TLS (issue 14, item 4): `ssl = on` with `ssl_cert_file` / `ssl_key_file`, an
//! SSLRequest answered 'S' and the session encrypted (psql `sslmode=require` and
//! `verify-full` against a test CA made here with openssl), `pg_stat_ssl`,
//! `hostssl` / `hostnossl` rules deciding by the real encryption, and a server
//! with `ssl = on` and no usable certificate or key refusing to start with
//! PostgreSQL 15's messages. Through psql and the real server binary.

mod common;
use common::server::{run_to_exit, unused_port, Server};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn openssl(dir: &Path, args: &[&str]) {
    let o = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl runs (scripts/deps.sh installs it)");
    assert!(o.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&o.stderr));
}

/// A CA (ca.crt) and a server certificate it signed for localhost / 127.0.0.1
/// (server.crt, server.key with mode 0600), in `dir`; and `other-ca.crt`, a CA
/// that signed nothing.
fn make_certs(dir: &Path) {
    let days = ["-days", "2"];
    openssl(dir, &["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.crt", days[0], days[1], "-subj", "/CN=ferrogres test CA"]);
    openssl(dir, &["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "other-ca.key", "-out", "other-ca.crt", days[0], days[1], "-subj", "/CN=another CA"]);
    openssl(dir, &["req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"]);
    std::fs::write(dir.join("san.ext"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n").unwrap();
    openssl(
        dir,
        &["x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.crt", days[0], days[1], "-extfile", "san.ext"],
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.join("server.key"), std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// psql with a connection string: (stdout, stderr).
fn psql(conninfo: &str, sql: &str) -> (String, String) {
    let o = Command::new("psql")
        .args(["-X", "-At", conninfo, "-c", sql])
        .env("PGCONNECT_TIMEOUT", "5")
        .env_remove("PGPASSWORD")
        .env_remove("PGSSLMODE")
        .env_remove("PGSSLROOTCERT")
        .env_remove("PGOPTIONS")
        .output()
        .expect("psql runs");
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

const MINE: &str = "SELECT ssl, version, cipher, bits, client_dn IS NULL FROM pg_stat_ssl WHERE pid = pg_backend_pid()";

#[test]
fn sessions_are_encrypted_verified_and_matched_by_hostssl() {
    let certs = tempfile::tempdir().unwrap();
    make_certs(certs.path());
    let cert = format!("ssl_cert_file={}", certs.path().join("server.crt").display());
    let key = format!("ssl_key_file={}", certs.path().join("server.key").display());
    let srv = Server::start_temp(&["-c", "ssl=on", "-c", &cert, "-c", &key]);
    let port = srv.port;
    let ca = certs.path().join("ca.crt");

    // sslmode=require: encrypted, whatever the certificate.
    let (out, err) = psql(&format!("host=127.0.0.1 port={port} user=postgres dbname=postgres sslmode=require"), MINE);
    let fields: Vec<&str> = out.trim_end().split('|').collect();
    assert_eq!(fields.len(), 5, "{out} {err}");
    assert_eq!(fields[0], "t", "{out} {err}");
    assert!(fields[1] == "TLSv1.3" || fields[1] == "TLSv1.2", "{out}");
    assert!(fields[2].starts_with("TLS_"), "{out}");
    assert!(fields[3] == "128" || fields[3] == "256", "{out}");
    assert_eq!(fields[4], "t", "no client certificate: {out}");

    // verify-full: the chain to the test CA and the host name both checked.
    let (out, err) = psql(
        &format!("host=localhost port={port} user=postgres dbname=postgres sslmode=verify-full sslrootcert={}", ca.display()),
        "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
    );
    assert_eq!(out, "t\n", "{err}");
    // ... and refused against a CA that did not sign the server's certificate.
    let (out, err) = psql(
        &format!(
            "host=localhost port={port} user=postgres dbname=postgres sslmode=verify-full sslrootcert={}",
            certs.path().join("other-ca.crt").display()
        ),
        "SELECT 1",
    );
    assert_eq!(out, "", "{err}");
    assert!(err.contains("certificate verify failed"), "{err}");

    // In clear over TCP and over the Unix socket: ssl false.
    let (out, err) = psql(&format!("host=127.0.0.1 port={port} user=postgres dbname=postgres sslmode=disable"), MINE);
    assert_eq!(out, "f||||t\n", "{err}");
    assert_eq!(srv.sql_ok("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid();"), "f\n");

    // hostnossl / hostssl decide by the session's real encryption.
    let hba = srv.dir.join("data").join("pg_hba.conf");
    std::fs::write(
        &hba,
        "local all all trust\n\
         hostnossl all all 127.0.0.1/32 reject\n\
         hostssl all all 127.0.0.1/32 trust\n",
    )
    .unwrap();
    reload_and_wait(&srv, 1);
    let (out, err) = psql(&format!("host=127.0.0.1 port={port} user=postgres dbname=postgres sslmode=require"), "SELECT 'in'");
    assert_eq!(out, "in\n", "{err}");
    let (out, err) = psql(&format!("host=127.0.0.1 port={port} user=postgres dbname=postgres sslmode=disable"), "SELECT 'in'");
    assert_eq!(out, "");
    assert!(
        err.contains("FATAL:  pg_hba.conf rejects connection for host \"127.0.0.1\", user \"postgres\", database \"postgres\", no encryption"),
        "{err}"
    );
    std::fs::write(
        &hba,
        "local all all trust\n\
         hostssl all all 127.0.0.1/32 reject\n\
         hostnossl all all 127.0.0.1/32 trust\n",
    )
    .unwrap();
    reload_and_wait(&srv, 2);
    let (out, err) = psql(&format!("host=127.0.0.1 port={port} user=postgres dbname=postgres sslmode=disable"), "SELECT 'in'");
    assert_eq!(out, "in\n", "{err}");
    let (out, err) = psql(&format!("host=127.0.0.1 port={port} user=postgres dbname=postgres sslmode=require"), "SELECT 'in'");
    assert_eq!(out, "");
    assert!(
        err.contains("FATAL:  pg_hba.conf rejects connection for host \"127.0.0.1\", user \"postgres\", database \"postgres\", SSL encryption"),
        "{err}"
    );
}

#[test]
fn ssl_off_answers_n_and_ssl_on_needs_a_certificate_and_a_private_key() {
    // ssl = off (the default): sslmode=require is refused by the client.
    let srv = Server::start_temp(&[]);
    let (out, err) = psql(&format!("host=127.0.0.1 port={} user=postgres dbname=postgres sslmode=require", srv.port), "SELECT 1");
    assert_eq!(out, "");
    assert!(err.contains("server does not support SSL, but SSL was required"), "{err}");
    drop(srv);

    // ssl = on without server.crt in the data directory: no start.
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let port = unused_port().to_string();
    let base = ["-D", data.to_str().unwrap(), "-p", &port, "-k", tmp.path().to_str().unwrap(), "-c", "ssl=on"];
    let (code, log) = run_to_exit(&base, Duration::from_secs(30));
    assert_eq!(code, Some(1), "{log}");
    assert!(log.contains("FATAL:  could not load server certificate file \"server.crt\": No such file or directory"), "{log}");
    assert!(!log.contains("ready to accept connections"), "{log}");

    // A private key others may read: refused as PostgreSQL refuses it.
    let certs = tempfile::tempdir().unwrap();
    make_certs(certs.path());
    use std::os::unix::fs::PermissionsExt;
    let key_path = certs.path().join("server.key");
    std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let cert = format!("ssl_cert_file={}", certs.path().join("server.crt").display());
    let key = format!("ssl_key_file={}", key_path.display());
    let args: Vec<&str> = base.iter().copied().chain(["-c", &cert, "-c", &key]).collect();
    let (code, log) = run_to_exit(&args, Duration::from_secs(30));
    assert_eq!(code, Some(1), "{log}");
    assert!(log.contains(&format!("FATAL:  private key file \"{}\" has group or world access", key_path.display())), "{log}");
    assert!(log.contains("DETAIL:  File must have permissions u=rw (0600) or less"), "{log}");
    // A missing key file.
    let key = format!("ssl_key_file={}", certs.path().join("nope.key").display());
    let args: Vec<&str> = base.iter().copied().chain(["-c", &cert, "-c", &key]).collect();
    let (code, log) = run_to_exit(&args, Duration::from_secs(30));
    assert_eq!(code, Some(1), "{log}");
    assert!(log.contains("FATAL:  could not access private key file"), "{log}");
    assert!(log.contains("nope.key\": No such file or directory"), "{log}");
}
