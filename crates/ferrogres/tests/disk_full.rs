//! A full disk while a relation grows (issue 18, item 12): PostgreSQL's 53100
//! `could not extend file "base/...": No space left on device` with the HINT
//! "Check free disk space.", the session goes on, another is unaffected, nothing
//! acknowledged is lost, and once space is back everything works.
//!
//! The data directory lives on a small tmpfs mounted for the test, so this test
//! needs root (CI runs as root); run as another user it fails, it does not skip.

mod common;
use common::server::{running_as_root, Server};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs mounted for the test, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(at: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(at).unwrap();
        let st = Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={size},mode=0755"), "tmpfs"]).arg(at).status().unwrap();
        assert!(st.success(), "could not mount a tmpfs at {}", at.display());
        Tmpfs(at.to_path_buf())
    }

    fn free_bytes(&self) -> u64 {
        let c = std::ffi::CString::new(self.0.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: statvfs fills a zeroed struct for a valid path.
        unsafe {
            let mut s: libc::statvfs = std::mem::zeroed();
            assert_eq!(libc::statvfs(c.as_ptr(), &mut s), 0);
            s.f_bavail as u64 * s.f_frsize as u64
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

fn verbose(srv: &Server, sql: &str) -> (String, String) {
    let out = srv.psql_cmd().args(["-At", "-v", "VERBOSITY=verbose", "-c", sql]).output().unwrap();
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn extending_a_relation_on_a_full_disk_is_53100_and_loses_nothing() {
    assert!(running_as_root(), "disk_full mounts a tmpfs: run it as root (CI does)");
    let dir = tempfile::tempdir().unwrap();
    let fs = Tmpfs::mount(&dir.path().join("mnt"), "64m");
    let mut srv = Server::start_with(&fs.0, &["-c", "autovacuum=off", "-c", "checkpoint_timeout=1h"]);
    srv.sql_ok("CREATE TABLE big (id int, pad text); INSERT INTO big SELECT g, repeat(md5(g::text), 15) FROM generate_series(1, 1000) g;");
    // Leave about 1.5 MB free (the WAL segment in use is preallocated, so WAL
    // writes need no new space; the table's growth does).
    let filler = fs.0.join("filler");
    let fill = fs.free_bytes().saturating_sub(1536 * 1024);
    let st = Command::new("fallocate").args(["-l", &fill.to_string()]).arg(&filler).status().unwrap();
    assert!(st.success());
    // ~5 MB of rows that do not compress away (under the TOAST threshold).
    let (_, err) = verbose(&srv, "INSERT INTO big SELECT g, repeat(md5(g::text), 15) FROM generate_series(1001, 11000) g");
    let line = err.lines().find(|l| l.starts_with("ERROR:")).unwrap_or_else(|| panic!("no error on a full disk: {err}\n{}", srv.log()));
    assert!(
        line.starts_with("ERROR:  53100: could not extend file \"base/") && line.ends_with("\": No space left on device"),
        "{line}\n{err}"
    );
    assert!(err.lines().any(|l| l == "HINT:  Check free disk space."), "{err}");
    // The server is up, the acknowledged rows are there, another session works.
    assert_eq!(srv.sql_ok("SELECT count(*) FROM big;").trim(), "1000");
    assert_eq!(srv.sql_ok("SELECT 1;").trim(), "1");
    // Space back: the same insert succeeds.
    std::fs::remove_file(&filler).unwrap();
    srv.sql_ok("INSERT INTO big SELECT g, repeat(md5(g::text), 15) FROM generate_series(1001, 11000) g;");
    assert_eq!(srv.sql_ok("SELECT count(*), count(DISTINCT id) FROM big;").trim(), "11000|11000");
    // Nothing acknowledged is lost across a crash either.
    srv.signal(libc::SIGKILL);
    let srv = Server::start_with(&fs.0, &["-c", "autovacuum=off"]);
    assert_eq!(srv.sql_ok("SELECT count(*), sum(id) FROM big;").trim(), "11000|60505500");
    drop(srv);
}

#[test]
fn a_full_disk_under_the_wal_is_a_panic_and_recovery_loses_nothing() {
    assert!(running_as_root(), "disk_full mounts a tmpfs: run it as root (CI does)");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let mut srv = Server::start_with(dir.path(), &["-c", "autovacuum=off", "-c", "checkpoint_timeout=1h", "-c", "max_wal_size=1GB"]);
    srv.sql_ok("CREATE TABLE w (id int PRIMARY KEY, pad text);");
    srv.signal(libc::SIGTERM);
    // pg_wal on a tmpfs of its own (a symbolic link, as initdb -X makes), owned by
    // the data directory's owner.
    let fs = Tmpfs::mount(&dir.path().join("walfs"), "40m");
    use std::os::unix::fs::MetadataExt;
    let md = std::fs::metadata(&data).unwrap();
    std::os::unix::fs::chown(&fs.0, Some(md.uid()), Some(md.gid())).unwrap();
    let st = Command::new("sh")
        .arg("-c")
        .arg(format!("cp -a {0}/pg_wal/. {1}/ && rm -rf {0}/pg_wal && ln -s {1} {0}/pg_wal", data.display(), fs.0.display()))
        .status()
        .unwrap();
    assert!(st.success());
    let mut srv = Server::start_with(dir.path(), &["-c", "autovacuum=off", "-c", "checkpoint_timeout=1h", "-c", "max_wal_size=1GB"]);
    // Room for the segment in use (preallocated) but not for a second one.
    let filler = fs.0.join("filler");
    let fill = fs.free_bytes().saturating_sub(4 * 1024 * 1024);
    assert!(Command::new("fallocate").args(["-l", &fill.to_string()]).arg(&filler).status().unwrap().success());
    // Commit ~1 MB at a time until the WAL needs its next segment.
    let mut acked = 0;
    let mut failed = String::new();
    for batch in 0..40 {
        let (a, b) = (batch * 1000 + 1, batch * 1000 + 1000);
        let (out, err) = srv.sql(&format!("INSERT INTO w SELECT g, repeat(md5(g::text), 30) FROM generate_series({a}, {b}) g"));
        if out.trim() == "INSERT 0 1000" {
            acked = b;
        } else {
            failed = err;
            break;
        }
    }
    assert!(acked > 0 && !failed.is_empty(), "the WAL never ran out of space (acked {acked})");
    // The server is gone (aborted), saying why.
    let mut child = srv.child.take().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(std::time::Instant::now() < deadline, "the server did not stop after a WAL write failed: {}", srv.log());
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert!(!status.success());
    let log = srv.log();
    assert!(log.lines().any(|l| l.starts_with("PANIC:  ") && l.ends_with("No space left on device")), "{log}");
    // Space back: recovery finds every acknowledged row, and nothing torn.
    std::fs::remove_file(&filler).unwrap();
    let srv = Server::start_with(dir.path(), &["-c", "autovacuum=off"]);
    assert!(srv.log().contains("automatic recovery"), "{}", srv.log());
    let counts = srv.sql_ok(&format!("SELECT count(*) FILTER (WHERE id <= {acked}), count(*) FROM w;"));
    let (le, all) = counts.trim().split_once('|').unwrap();
    assert_eq!(le, acked.to_string(), "acknowledged rows lost: {counts}");
    // The failed batch committed or not, as a whole.
    let all: u64 = all.parse().unwrap();
    assert!(all == acked as u64 || all == acked as u64 + 1000, "{counts}");
    assert_eq!(srv.sql_ok("SET enable_seqscan = off; SELECT count(*) FROM w WHERE id > 0;"), format!("SET\n{all}\n"));
    drop(srv);
    drop(fs);
}
