//! The data-directory lock (`postmaster.pid`) and the socket lock
//! (`.s.PGSQL.PORT.lock`), through the binary (issue 18, item 1).
//!
//! Two servers on one data directory once both ran recovery and accepted writes,
//! and rows were lost. A second server must fail at once with PostgreSQL's FATAL
//! while the first goes on losing nothing, across a kill -9 of the first too; a
//! stale lock (a killed server's, or one naming a pid since reused by another
//! process) must not block a restart.

mod common;
use common::server::{run_to_exit, unused_port, Server};
use std::path::Path;
use std::time::Duration;

/// Starts a second server on `dir`'s data directory (another port, same socket
/// directory unless `sockdir` says otherwise): its exit code and log.
fn second_server(dir: &Path, sockdir: &Path, port: u16) -> (Option<i32>, String) {
    let data = dir.join("data");
    let port = port.to_string();
    run_to_exit(
        &["-D", data.to_str().unwrap(), "-p", &port, "-k", sockdir.to_str().unwrap()],
        Duration::from_secs(30),
    )
}

fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p).unwrap().lines().map(str::to_string).collect()
}

#[test]
fn a_second_server_on_the_same_directory_fails_and_the_first_loses_nothing_across_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let mut srv = Server::start(dir.path());
    srv.sql_ok("CREATE TABLE acked (id int PRIMARY KEY, v text);");
    srv.sql_ok("INSERT INTO acked SELECT g, 'before' FROM generate_series(1, 2000) g;");

    // While the first runs: a second server on the same data directory stops at
    // the lock, before it reads anything (no recovery, no writes).
    let (code, log) = second_server(dir.path(), dir.path(), unused_port());
    assert_eq!(code, Some(1), "the second server must exit with status 1: {log}");
    assert!(log.contains("FATAL:  lock file \"postmaster.pid\" already exists"), "{log}");
    let datadir = std::fs::canonicalize(dir.path().join("data")).unwrap();
    let hint = format!("HINT:  Is another postmaster (PID {}) running in data directory \"{}\"?", srv.pid(), datadir.display());
    assert!(log.contains(&hint), "want {hint}\ngot {log}");
    assert!(!log.contains("recovery") && !log.contains("ready to accept"), "{log}");

    // The first server goes on: rows acknowledged after the attempt too.
    srv.sql_ok("INSERT INTO acked SELECT g, 'after' FROM generate_series(2001, 4000) g;");
    srv.sql_ok("UPDATE acked SET v = 'updated' WHERE id % 10 = 0;");
    // And once more, now that it has written since.
    let (code, log) = second_server(dir.path(), dir.path(), unused_port());
    assert_eq!(code, Some(1), "{log}");

    // kill -9: the pid file stays behind; the restart must not be blocked by it
    // (the dead server's flock went with it, its pid is no server of this directory).
    srv.signal(libc::SIGKILL);
    assert!(dir.path().join("data/postmaster.pid").exists(), "kill -9 leaves the pid file");
    let srv = Server::start(dir.path());
    assert!(srv.log().contains("automatic recovery"), "{}", srv.log());
    // Nothing acknowledged is lost; the primary-key index and a sequential scan agree.
    let by_seq = srv.sql_ok("SELECT count(*), sum(id), count(*) FILTER (WHERE v = 'updated') FROM acked WHERE v || '' <> '';");
    assert_eq!(by_seq.trim(), "4000|8002000|400");
    let probes: String = (1..=4000).step_by(37).map(|i| format!("SELECT id FROM acked WHERE id = {i};\n")).collect();
    let want: Vec<String> = (1..=4000).step_by(37).map(|i| i.to_string()).collect();
    let got: Vec<String> = srv.sql_ok(&probes).lines().map(str::to_string).collect();
    assert_eq!(got, want, "index lookups");
    assert_eq!(srv.sql_ok("SET enable_seqscan = off; SELECT count(*) FROM acked WHERE id > 0;"), "SET\n4000\n");
    assert_eq!(srv.sql_ok("SET enable_indexscan = off; SELECT count(*) FROM acked WHERE id > 0;"), "SET\n4000\n");
    // The restarted server holds the lock in turn.
    let (code, log) = second_server(dir.path(), dir.path(), unused_port());
    assert_eq!(code, Some(1), "{log}");
    assert!(log.contains(&format!("(PID {})", srv.pid())), "{log}");
}

#[test]
fn the_pid_file_has_postgresql_layout_and_goes_at_clean_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let mut srv = Server::start(dir.path());
    let pidfile = dir.path().join("data/postmaster.pid");
    let l = lines(&pidfile);
    assert_eq!(l.len(), 8, "{l:?}");
    assert_eq!(l[0], srv.pid().to_string());
    assert_eq!(l[1], std::fs::canonicalize(dir.path().join("data")).unwrap().display().to_string());
    assert!(l[2].parse::<u64>().unwrap() > 1_600_000_000, "start time in seconds since the epoch: {}", l[2]);
    assert_eq!(l[3], srv.port.to_string());
    assert_eq!(l[4], dir.path().display().to_string());
    assert_eq!(l[5], "localhost"); // listen_addresses as given, as PostgreSQL writes it
    assert_eq!(l[7], "ready   ");
    // The socket's lock file: pid, data directory, start time, port, socket directory.
    let socklock = dir.path().join(format!(".s.PGSQL.{}.lock", srv.port));
    let s = lines(&socklock);
    assert_eq!(s.len(), 5, "{s:?}");
    assert_eq!((s[0].as_str(), s[1].as_str(), s[3].as_str()), (l[0].as_str(), l[1].as_str(), l[3].as_str()));
    srv.signal(libc::SIGTERM);
    assert!(!pidfile.exists(), "a clean shutdown removes postmaster.pid");
    assert!(!socklock.exists() && !srv.socket_path().exists(), "and the socket with its lock file");
}

#[test]
fn stale_lock_files_do_not_block_a_start() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // A first start creates the directory; stop it cleanly.
    let mut srv = Server::start(dir.path());
    srv.signal(libc::SIGTERM);
    // A pid file naming a dead process.
    let mut c = std::process::Command::new("true").spawn().unwrap();
    let dead = c.id();
    c.wait().unwrap();
    std::fs::write(data.join("postmaster.pid"), format!("{dead}\n{}\n0\n5433\n\n\n\nready   \n", data.display())).unwrap();
    let mut srv = Server::start(dir.path());
    assert_eq!(lines(&data.join("postmaster.pid"))[0], srv.pid().to_string());
    srv.signal(libc::SIGTERM);
    // A pid file naming a live process that is no server of this directory (the pid
    // of a killed server, reused).
    let mut sleeper = std::process::Command::new("sleep").arg("60").spawn().unwrap();
    std::fs::write(data.join("postmaster.pid"), format!("{}\n{}\n0\n5433\n\n\n\nready   \n", sleeper.id(), data.display()))
        .unwrap();
    let mut srv = Server::start(dir.path());
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert_eq!(srv.sql_ok("SELECT 1;").trim(), "1");
    // A leftover socket and socket lock file of a dead server on the same port.
    let port = srv.port;
    srv.signal(libc::SIGKILL);
    assert!(dir.path().join(format!(".s.PGSQL.{port}.lock")).exists());
    let (code, log) = {
        // Same port on purpose: the dead server's socket path.
        let data = data.to_str().unwrap().to_string();
        let sock = dir.path().to_str().unwrap().to_string();
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_ferrogres"))
            .args(["-D", &data, "-p", &port.to_string(), "-k", &sock])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let sock_path = dir.path().join(format!(".s.PGSQL.{port}"));
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let mut ok = false;
        while std::time::Instant::now() < deadline {
            if std::process::Command::new("psql")
                .args(["-X", "-At", "-h", &sock, "-p", &port.to_string(), "-U", "postgres", "-d", "postgres", "-c", "select 42"])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "42")
            {
                ok = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(sock_path.exists());
        // SAFETY: signalling our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let out = child.wait_with_output().unwrap();
        (if ok { out.status.code() } else { None }, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    assert_eq!(code, Some(0), "restart on the dead server's port and socket: {log}");
}

#[test]
fn two_servers_cannot_share_a_socket_path() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Server::start(dir.path());
    // Another data directory, the same port and socket directory, no TCP.
    let other = dir.path().join("other");
    let port = srv.port.to_string();
    let (code, log) = run_to_exit(
        &["-D", other.to_str().unwrap(), "-p", &port, "-k", dir.path().to_str().unwrap(), "-h", ""],
        Duration::from_secs(30),
    );
    assert_eq!(code, Some(1), "{log}");
    let sock = dir.path().join(format!(".s.PGSQL.{port}"));
    assert!(log.contains(&format!("FATAL:  lock file \"{}.lock\" already exists", sock.display())), "{log}");
    assert!(
        log.contains(&format!("HINT:  Is another postmaster (PID {}) using socket file \"{}\"?", srv.pid(), sock.display())),
        "{log}"
    );
    // The first server's socket is untouched.
    assert_eq!(srv.sql_ok("SELECT 7;").trim(), "7");
}
