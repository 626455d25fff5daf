#![allow(dead_code)]
//! A ferrogres server started from the binary under test, on a private data and
//! socket directory, for the end-to-end tests; psql and signals against it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Server {
    pub child: Option<Child>,
    pub port: u16,
    pub dir: PathBuf,
    pub log: PathBuf,
    /// The temporary directory holding `dir`, when the server owns it
    /// ([`Server::start_temp`]); removed after the server is stopped.
    pub tmp: Option<tempfile::TempDir>,
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

impl Server {
    /// Starts the server on `dir` (data in dir/data, socket in dir); retries on
    /// another port if the chosen one was taken meanwhile.
    pub fn start(dir: &Path) -> Server {
        Server::start_with(dir, &[])
    }

    /// [`Server::start`] with extra command-line arguments (`-c name=value`).
    pub fn start_with(dir: &Path, args: &[&str]) -> Server {
        if running_as_root() {
            // Started by root, the server runs as another account (it drops root),
            // which must be able to remove its socket and lock file from the
            // socket directory at shutdown: make it like /tmp (sticky, writable).
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
        }
        for _ in 0..5 {
            let port = free_port();
            let log = dir.join(format!("server-{port}.log"));
            let child = Command::new(env!("CARGO_BIN_EXE_ferrogres"))
                .arg("-D")
                .arg(dir.join("data"))
                .args(["-p", &port.to_string(), "-k"])
                .arg(dir)
                .args(args)
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(&log).unwrap())
                .spawn()
                .unwrap();
            let mut s = Server { child: Some(child), port, dir: dir.to_path_buf(), log, tmp: None };
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                if s.child.as_mut().unwrap().try_wait().unwrap().is_some() {
                    break;
                }
                if s.log().contains("database system is ready to accept connections") {
                    return s;
                }
                assert!(Instant::now() < deadline, "server did not start: {}", s.log());
                std::thread::sleep(Duration::from_millis(20));
            }
            s.child = None;
        }
        panic!("could not start the server");
    }

    /// [`Server::start_with`] on a temporary directory of its own.
    pub fn start_temp(args: &[&str]) -> Server {
        let tmp = tempfile::tempdir().unwrap();
        let mut s = Server::start_with(tmp.path(), args);
        s.tmp = Some(tmp);
        s
    }

    pub fn socket_path(&self) -> PathBuf {
        self.dir.join(format!(".s.PGSQL.{}", self.port))
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().unwrap().id() as i32
    }

    /// psql connected through `host` (a socket directory or an address), with
    /// `args`; its whole output.
    pub fn psql(&self, host: &str, args: &[&str]) -> std::process::Output {
        Command::new("psql")
            .args(["-X", "-h", host, "-p", &self.port.to_string(), "-U", "postgres", "-d", "postgres"])
            .args(args)
            .env("PGCONNECT_TIMEOUT", "5")
            .env_remove("PGPASSWORD")
            .env_remove("PGOPTIONS")
            .env_remove("PGSSLMODE")
            .env_remove("PGSERVICE")
            .output()
            .expect("psql runs")
    }

    pub fn psql_tcp(&self, args: &[&str]) -> std::process::Output {
        self.psql("127.0.0.1", args)
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn psql_cmd(&self) -> Command {
        let mut c = Command::new("psql");
        c.args(["-X", "-h"])
            .arg(&self.dir)
            .args(["-p", &self.port.to_string(), "-U", "postgres", "-d", "postgres"])
            .env_remove("PGOPTIONS")
            .env_remove("PGSERVICE")
            .env_remove("PGAPPNAME");
        c
    }

    /// Runs SQL with `-At`; returns (stdout, stderr).
    pub fn sql(&self, sql: &str) -> (String, String) {
        let out = self.psql_cmd().args(["-At", "-v", "ON_ERROR_STOP=0", "-c", sql]).output().unwrap();
        (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    }

    pub fn signal(&mut self, sig: i32) {
        let mut child = self.child.take().unwrap();
        // SAFETY: signalling our own child process.
        assert_eq!(unsafe { libc::kill(child.id() as i32, sig) }, 0);
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(st) = child.try_wait().unwrap() {
                if sig == libc::SIGTERM {
                    assert!(st.success(), "exit status {st:?}: {}", self.log());
                }
                return;
            }
            assert!(Instant::now() < deadline, "server did not stop");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Server {
    /// A client program (`psql`, `pgbench`) pointed at the server.
    pub fn cmd(&self, prog: &str) -> Command {
        let mut c = Command::new(prog);
        c.arg("-h").arg(&self.dir).args(["-p", &self.port.to_string(), "-U", "postgres"]);
        c.env_remove("PGOPTIONS").env_remove("PGSERVICE");
        c
    }

    /// Runs SQL through psql's stdin, stopping at the first error, which fails
    /// the test; returns stdout.
    pub fn sql_ok(&self, sql: &str) -> String {
        use std::io::Write;
        let mut p = self
            .cmd("psql")
            .args(["-X", "-At", "-v", "ON_ERROR_STOP=1", "-d", "postgres"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        p.stdin.take().unwrap().write_all(sql.as_bytes()).unwrap();
        let o = p.wait_with_output().unwrap();
        assert!(o.status.success(), "{sql}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }
}

/// Runs the binary with `args` until it exits (killed after `timeout`): its exit
/// code (`None` if it had to be killed) and its stderr.
pub fn run_to_exit(args: &[&str], timeout: Duration) -> (Option<i32>, String) {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("stderr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ferrogres"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + timeout;
    let code = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st.code();
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (code, std::fs::read_to_string(&log).unwrap_or_default())
}

/// A free TCP port (nobody listens on it right now).
pub fn unused_port() -> u16 {
    free_port()
}

/// (real uid, effective uid) of a process, from /proc/PID/status.
pub fn process_uids(pid: i32) -> (u32, u32) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("Uid:")).expect("a Uid line");
    let ids: Vec<u32> = line.split_whitespace().skip(1).map(|v| v.parse().unwrap()).collect();
    (ids[0], ids[1])
}

impl Server {
    /// A directory the server's account may read and write, for server-side COPY
    /// files: a server started by root runs as another account (it drops root),
    /// which cannot enter the test's own 0700 temporary directories.
    pub fn exchange_dir(&self) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        let id = |key: &str| -> u32 {
            let line = status.lines().find(|l| l.starts_with(key)).unwrap();
            line.split_whitespace().nth(2).unwrap().parse().unwrap() // the effective id
        };
        std::os::unix::fs::chown(d.path(), Some(id("Uid:")), Some(id("Gid:"))).unwrap();
        d
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Runs tests/sql/NAME.sql through psql as pg_regress does (`-a -q`, stdout and
/// stderr in one stream) against a fresh server and compares the output byte for
/// byte with tests/expected/NAME.out, which PostgreSQL 15 printed for the script.
pub fn check_script(name: &str) {
    use std::io::Read;
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

/// Whether the tests run as root (a server started then runs as another account).
pub fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Runs `sql` (one simple-query string: SET commands, then one query) with
/// psql and returns the last statement's rows; any error fails the test.
pub fn ok_after_sets(srv: &Server, sql: &str) -> String {
    let (out, err) = srv.sql(sql);
    assert_eq!(err, "", "{sql}");
    // psql 15 prints every statement's result: drop the SETs' tags.
    let mut rest = out.as_str();
    while let Some(r) = rest.strip_prefix("SET\n") {
        rest = r;
    }
    rest.to_string()
}

/// The files in `base/pgsql_tmp` of the data directory a test server made in `dir`.
pub fn temp_files(dir: &Path) -> Vec<String> {
    match std::fs::read_dir(dir.join("data/base/pgsql_tmp")) {
        Ok(d) => d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect(),
        Err(_) => Vec::new(),
    }
}

/// A field of `/proc/PID/status` in kB (`"VmRSS:"`, `"VmHWM:"`), or `None`
/// if the process or the field is gone.
pub fn proc_status_kb(pid: i32, field: &str) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The resident set of process `pid` now (kB).
pub fn rss_kb(pid: i32) -> u64 {
    proc_status_kb(pid, "VmRSS:").expect("VmRSS of the server")
}

/// The peak resident set of process `pid` so far (kB).
pub fn hwm_kb(pid: i32) -> u64 {
    proc_status_kb(pid, "VmHWM:").expect("VmHWM of the server")
}

/// Runs `f` while a thread lists `base/pgsql_tmp` of the test data directory
/// in `dir` every 2 ms; returns f's result and the most files seen at once.
pub fn with_temp_file_watch<T>(dir: &Path, f: impl FnOnce() -> T) -> (T, usize) {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(AtomicUsize::new(0));
    let watcher = {
        let (stop, seen, d) = (stop.clone(), seen.clone(), dir.to_path_buf());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                seen.fetch_max(temp_files(&d).len(), Ordering::Relaxed);
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        })
    };
    let r = f();
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    (r, seen.load(Ordering::Relaxed))
}

/// Runs `cmd` (a psql command line, usually) with `input` on its standard
/// input; returns its standard output and standard error.
pub fn run_with_stdin(mut cmd: Command, input: &str) -> (String, String) {
    use std::io::Write;
    let mut p = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    p.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let o = p.wait_with_output().unwrap();
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}
