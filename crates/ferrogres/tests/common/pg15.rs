#![allow(dead_code)]
//! A real PostgreSQL 15 (from /usr/lib/postgresql/15/bin) on a private directory,
//! for the tests that compare ferrogres with it side by side. Run as root, the
//! server runs as the `postgres` account (initdb refuses root). Stopped on drop.

use std::path::{Path, PathBuf};
use std::process::Command;

pub const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

pub struct Pg15 {
    /// The socket directory; the cluster is in `dir/data`, its log in `dir/log`.
    pub dir: PathBuf,
    pub port: u16,
}

/// `cmd` run by a shell as the `postgres` account when we are root, else as
/// ourselves.
fn as_postgres(cmd: &str) -> Command {
    if super::server::running_as_root() {
        let mut c = Command::new("su");
        c.args(["postgres", "-c", cmd]);
        c
    } else {
        let mut c = Command::new("sh");
        c.args(["-c", cmd]);
        c
    }
}

impl Pg15 {
    /// initdb (no locale, UTF8, superuser `postgres`) and start on a free port,
    /// with its socket in `dir`.
    pub fn start(dir: &Path) -> Pg15 {
        Pg15::start_with(dir, "")
    }

    /// [`Pg15::start`] with extra server options (`-c name=value ...`).
    pub fn start_with(dir: &Path, options: &str) -> Pg15 {
        assert!(
            Path::new(PG_BIN).join("postgres").exists(),
            "PostgreSQL 15 is missing from {PG_BIN}: run scripts/deps.sh test"
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        std::fs::create_dir_all(dir).unwrap();
        if super::server::running_as_root() {
            // The postgres account must own the directory and reach it: the
            // temporary directories above it are root's and 0700.
            let _ = Command::new("chown").args(["-R", "postgres"]).arg(dir).status();
            use std::os::unix::fs::PermissionsExt;
            let mut p = dir.parent();
            while let Some(d) = p {
                if !d.starts_with(std::env::temp_dir()) || d == std::env::temp_dir() {
                    break;
                }
                let mode = std::fs::metadata(d).unwrap().permissions().mode();
                std::fs::set_permissions(d, std::fs::Permissions::from_mode(mode | 0o711)).unwrap();
                p = d.parent();
            }
        }
        let d = dir.display();
        let ok = as_postgres(&format!("{PG_BIN}/initdb --no-locale -E UTF8 -U postgres -D {d}/data >/dev/null"))
            .status()
            .unwrap();
        assert!(ok.success(), "initdb failed");
        let ok = as_postgres(&format!("{PG_BIN}/pg_ctl -D {d}/data -o '-p {port} -k {d} {options}' -l {d}/log -w start >/dev/null"))
            .status()
            .unwrap();
        assert!(ok.success(), "pg_ctl start failed: {}", std::fs::read_to_string(dir.join("log")).unwrap_or_default());
        Pg15 { dir: dir.to_path_buf(), port }
    }

    /// A client program (`psql`, `pgbench`) pointed at this server's socket.
    pub fn cmd(&self, prog: &str) -> Command {
        let mut c = Command::new(prog);
        c.arg("-h").arg(&self.dir).args(["-p", &self.port.to_string(), "-U", "postgres"]);
        c.env_remove("PGOPTIONS").env_remove("PGSERVICE");
        c
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
    }
}

impl Drop for Pg15 {
    fn drop(&mut self) {
        let _ = as_postgres(&format!("{PG_BIN}/pg_ctl -D {}/data -m immediate stop >/dev/null", self.dir.display())).status();
    }
}
