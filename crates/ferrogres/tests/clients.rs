//! The client suite (issue 22): real drivers and ORMs, side by side with PostgreSQL 15.
//!
//! Each client has one program under `clients/<name>/` that takes HOST PORT USER
//! DBNAME SOCKETDIR, runs a fixed scenario (connect over TCP and the unix socket,
//! round trips of the common types in text and binary, transactions and savepoints,
//! constraint errors with their fields, a 10,000-row result, a cursor read in chunks,
//! COPY, cancel, statement_timeout, LISTEN/NOTIFY, the client's own introspection)
//! and prints a transcript of what the client decoded. Every test runs its program
//! against a real PostgreSQL 15 and against ferrogres, each in a fresh database of
//! its own, and asserts that both runs succeeded and printed the same transcript: the
//! expectation is PostgreSQL's behaviour itself, so it cannot drift from it.
//!
//! The clients' tools are installed by `scripts/deps.sh test` (pip packages pinned in
//! `clients/requirements.txt`, node-postgres from `clients/node/package-lock.json`,
//! Debian's pgjdbc and pgx v4). A missing tool fails the test, it never skips.
//!
//! One ferrogres and one PostgreSQL 15 serve all the tests of this file that run at
//! the same time (they are stopped when the last of them ends).

mod common;
use common::pg15::Pg15;
use common::server::Server;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

struct Servers {
    // Field order is drop order: the servers stop before their directories go.
    fg: Server,
    pg: Pg15,
    _fg_dir: tempfile::TempDir,
    _pg_dir: tempfile::TempDir,
}

static SHARED: Mutex<Weak<Servers>> = Mutex::new(Weak::new());

/// The servers shared by the tests running now; started by the first of them.
fn servers() -> Arc<Servers> {
    let mut shared = SHARED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = shared.upgrade() {
        return s;
    }
    let pg_dir = tempfile::tempdir().unwrap();
    let pg = Pg15::start(&pg_dir.path().join("pg"));
    let fg_dir = tempfile::tempdir().unwrap();
    let fg = Server::start(fg_dir.path());
    let s = Arc::new(Servers { fg, pg, _fg_dir: fg_dir, _pg_dir: pg_dir });
    *shared = Arc::downgrade(&s);
    s
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// Where a server listens, as the client programs take it.
struct Target<'a> {
    port: u16,
    sockdir: &'a Path,
}

/// Runs `program` (with its arguments) against `target` and database `db`:
/// (exit status success, stdout, stderr). Killed after four minutes.
fn run_program(program: &[String], env: &[(&str, String)], target: &Target, db: &str) -> (bool, String, String) {
    let (first, rest) = program.split_first().unwrap();
    let mut cmd = Command::new(first);
    cmd.args(rest)
        .args(["127.0.0.1", &target.port.to_string(), "postgres", db])
        .arg(target.sockdir)
        .current_dir(repo_root())
        .env_remove("PGOPTIONS")
        .env_remove("PGSERVICE")
        .env_remove("PGPASSWORD")
        .env_remove("PGTZ")
        .env_remove("PGDATESTYLE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = cmd.spawn().unwrap_or_else(|e| {
        panic!("cannot run {first} ({e}): the client suite's tools are installed by scripts/deps.sh test")
    });
    let pid = child.id() as i32;
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watchdog = {
        let done = done.clone();
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(240);
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                if Instant::now() > deadline {
                    // SAFETY: signalling our own child, which has not been reaped yet
                    // (wait_with_output below has not returned).
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    let out = child.wait_with_output().unwrap();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    watchdog.join().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The lines where two transcripts differ, numbered, for the failure message.
fn line_diff(want: &str, got: &str) -> String {
    let (w, g): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    let mut d = String::new();
    for i in 0..w.len().max(g.len()) {
        let (a, b) = (w.get(i).copied(), g.get(i).copied());
        if a != b {
            d += &format!("line {}:\n  PostgreSQL 15: {}\n  ferrogres:     {}\n", i + 1, a.unwrap_or("<none>"), b.unwrap_or("<none>"));
        }
    }
    d
}

/// Runs one client's program against PostgreSQL 15 and ferrogres (each on a fresh
/// database named `db`) and asserts that both succeed with the same transcript.
fn check_client(db: &str, program: &[String], env: &[(&str, String)]) {
    let s = servers();
    let create = format!("CREATE DATABASE {db}");
    let out = s.pg.cmd("psql").args(["-X", "-q", "-d", "postgres", "-c", &create]).output().unwrap();
    assert!(out.status.success(), "PostgreSQL 15: {}", String::from_utf8_lossy(&out.stderr));
    let out = s.fg.cmd("psql").args(["-X", "-q", "-d", "postgres", "-c", &create]).output().unwrap();
    assert!(out.status.success(), "ferrogres: {}", String::from_utf8_lossy(&out.stderr));

    let started = Instant::now();
    let (pg_ok, want, pg_err) = run_program(program, env, &Target { port: s.pg.port, sockdir: &s.pg.dir }, db);
    assert!(pg_ok, "{db}: the program failed against PostgreSQL 15 (a broken program or tool):\n{want}\n{pg_err}");
    assert!(want.trim_end().ends_with("done"), "{db}: the transcript against PostgreSQL 15 does not end with `done`:\n{want}");
    let pg_time = started.elapsed();
    let started = Instant::now();
    let (fg_ok, got, fg_err) = run_program(program, env, &Target { port: s.fg.port, sockdir: &s.fg.dir }, db);
    eprintln!("{db}: PostgreSQL 15 {pg_time:?}, ferrogres {:?}", started.elapsed());
    let diff = line_diff(&want, &got);
    assert!(
        fg_ok && diff.is_empty(),
        "{db} against ferrogres (success: {fg_ok}):\n{diff}\n--- stderr:\n{fg_err}\n--- whole transcript:\n{got}\n--- server log:\n{}",
        s.fg.log()
    );
}

/// The python of the client suite: clients/.venv's when scripts/deps.sh made one
/// (on Debian's own python), else the python3 on the PATH.
fn python(script: &str) -> Vec<String> {
    let venv = repo_root().join("clients/.venv/bin/python3");
    let py = if venv.exists() { venv.display().to_string() } else { "python3".into() };
    vec![py, "-u".into(), format!("clients/{script}")]
}

#[test]
fn psycopg3() {
    check_client("client_psycopg", &python("psycopg/scenario.py"), &[]);
}

#[test]
fn psycopg2() {
    check_client("client_psycopg2", &python("psycopg2/scenario.py"), &[]);
}

#[test]
fn asyncpg() {
    check_client("client_asyncpg", &python("asyncpg/scenario.py"), &[]);
}

#[test]
fn sqlalchemy2_over_psycopg() {
    check_client("client_sqlalchemy", &python("sqlalchemy/scenario.py"), &[]);
}

#[test]
fn node_postgres() {
    let modules = repo_root().join("clients/node/node_modules/pg");
    assert!(modules.exists(), "{} is missing: scripts/deps.sh test installs node-postgres (npm ci)", modules.display());
    check_client("client_node", &["node".into(), "clients/node/scenario.js".into()], &[]);
}

#[test]
fn pgjdbc() {
    let jar = "/usr/share/java/postgresql.jar";
    assert!(Path::new(jar).exists(), "{jar} is missing: scripts/deps.sh test installs libpostgresql-jdbc-java");
    // The source-file launcher compiles and runs the one class.
    check_client("client_pgjdbc", &["java".into(), "-cp".into(), jar.into(), "clients/pgjdbc/Scenario.java".into()], &[]);
}

#[test]
fn pgx() {
    let gopath = "/usr/share/gocode";
    assert!(
        Path::new(gopath).join("src/github.com/jackc/pgx/v4").exists(),
        "pgx v4 is missing from {gopath}: scripts/deps.sh test installs golang-github-jackc-pgx-v4-dev"
    );
    // GOPATH mode against Debian's packaged sources (there is no module proxy);
    // the build cache stays in the target directory.
    let cache = Path::new(env!("CARGO_TARGET_TMPDIR")).join("go-build");
    check_client(
        "client_pgx",
        &["go".into(), "run".into(), "clients/pgx/main.go".into()],
        &[
            ("GO111MODULE", "off".into()),
            ("GOPATH", gopath.into()),
            ("GOFLAGS", String::new()),
            ("GOCACHE", cache.display().to_string()),
        ],
    );
}

/// The Rust drivers' program (`clients/rust`, its own cargo project and lock
/// file), built once per test run into the target directory; its path.
fn rust_program() -> String {
    static BUILT: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let target = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().unwrap().join("clients-rust");
        let started = Instant::now();
        let out = Command::new(env!("CARGO"))
            .args(["build", "--locked", "--quiet", "--manifest-path"])
            .arg(repo_root().join("clients/rust/Cargo.toml"))
            .env("CARGO_TARGET_DIR", &target)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run cargo: {e}"))?;
        eprintln!("clients/rust built in {:?}", started.elapsed());
        if !out.status.success() {
            return Err(format!("building clients/rust failed:\n{}", String::from_utf8_lossy(&out.stderr)));
        }
        Ok(target.join("debug/ferrogres-client-scenarios"))
    });
    match built {
        Ok(p) => p.display().to_string(),
        Err(e) => panic!("{e}"),
    }
}

#[test]
fn tokio_postgres() {
    check_client("client_tokio_postgres", &[rust_program(), "tokio-postgres".into()], &[]);
}

#[test]
fn sqlx() {
    check_client("client_sqlx", &[rust_program(), "sqlx".into()], &[]);
}
