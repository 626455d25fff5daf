//! PostgreSQL 15's own isolation tests (`/work/shared/pg15-tests/isolation`,
//! see its ORIGIN.md) run against the `ferrogres` binary by PostgreSQL's
//! `pg_isolation_regress` (which drives `isolationtester`). `PASSING` lists the
//! specs that pass; a failure prints `regression.diffs`.
//!
//! Skipped (with a message) when PostgreSQL 15's test programs or the specs are
//! not installed.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const PG_ISOLATION_REGRESS: &str = "/usr/lib/postgresql/15/lib/pgxs/src/test/isolation/pg_isolation_regress";
const SPECS: &str = "/work/shared/pg15-tests/isolation";

/// Specs that pass, in schedule order.
const PASSING: &[&str] = &[
    "deadlock-simple",
    "deadlock-hard",
    "deadlock-soft",
    "nowait",
    "nowait-2",
    "nowait-3",
    "skip-locked",
    "skip-locked-2",
    "tuplelock-conflict",
    "delete-abort-savept",
    "lock-update-delete",
];

struct Server {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(dir: &Path) -> Server {
    for _ in 0..5 {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let log = dir.join(format!("server-{port}.log"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_ferrogres"))
            .arg("-D")
            .arg(dir.join("data"))
            .args(["-p", &port.to_string(), "-k"])
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            if std::fs::read_to_string(&log).unwrap_or_default().contains("ready to accept connections") {
                return Server { child, port, dir: dir.to_path_buf() };
            }
            assert!(Instant::now() < deadline, "server did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    panic!("could not start the server");
}

#[test]
fn pg15_isolation_specs() {
    if !Path::new(PG_ISOLATION_REGRESS).exists() || !Path::new(SPECS).join("specs").exists() {
        eprintln!("skipped: {PG_ISOLATION_REGRESS} or {SPECS} missing");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let server = start(tmp.path());
    let out = tmp.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let status = Command::new(PG_ISOLATION_REGRESS)
        .args(["--use-existing", "--dbname=postgres", "--user=postgres"])
        .arg(format!("--host={}", server.dir.display()))
        .arg(format!("--port={}", server.port))
        .arg(format!("--inputdir={SPECS}"))
        .arg(format!("--outputdir={}", out.display()))
        .args(PASSING)
        .env_remove("PGOPTIONS")
        .env_remove("PGSERVICE")
        .status()
        .unwrap();
    if !status.success() {
        let diffs = std::fs::read_to_string(out.join("regression.diffs")).unwrap_or_default();
        panic!("isolation specs failed:\n{diffs}");
    }
}
