//! A server started as root does not serve as root (issue 18, item 11).
//!
//! It takes its sockets and lock files, then drops to the owner of the data
//! directory (or `nobody` when root owns it) for good: supplementary groups, gid,
//! uid. So a superuser's server-side COPY cannot read /etc/shadow nor leave
//! root-owned files behind, and everything else works as before.
//!
//! These tests need root (CI runs as root); run as another user they fail, they do
//! not skip.

mod common;
use common::server::{running_as_root, Server};

fn require_root() {
    assert!(
        running_as_root(),
        "run_as_root tests check what a server started by root does: run them as root (CI does)"
    );
}

/// The four uids (real, effective, saved, filesystem) and the groups of a process.
fn credentials(pid: i32) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let ids = |key: &str| -> Vec<u32> {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .unwrap()
            .split_whitespace()
            .skip(1)
            .map(|v| v.parse().unwrap())
            .collect()
    };
    (ids("Uid:"), ids("Gid:"), ids("Groups:"))
}

fn verbose_error(srv: &Server, sql: &str) -> String {
    let out = srv.psql_cmd().args(["-At", "-v", "VERBOSITY=verbose", "-c", sql]).output().unwrap();
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_server_started_as_root_drops_root_for_good() {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let mut srv = Server::start(dir.path());
    let (uids, gids, groups) = credentials(srv.pid());
    assert!(uids.iter().all(|&u| u != 0), "uids {uids:?}");
    assert!(gids.iter().all(|&g| g != 0), "gids {gids:?}");
    assert!(!groups.contains(&0), "supplementary groups {groups:?}");
    let log = srv.log();
    assert!(log.contains("LOG:  started as root: running as user \"nobody\""), "{log}");
    // The data directory now belongs to that account, all the way down.
    let data = dir.path().join("data");
    use std::os::unix::fs::MetadataExt;
    assert_eq!(std::fs::metadata(&data).unwrap().uid(), uids[0]);
    assert_eq!(std::fs::metadata(data.join("global/pg_control")).unwrap().uid(), uids[0]);

    // Server-side COPY is the server's account's, not root's.
    let err = verbose_error(&srv, "CREATE TABLE s (line text); COPY s FROM '/etc/shadow'");
    assert!(
        err.contains("ERROR:  42501: could not open file \"/etc/shadow\" for reading: Permission denied"),
        "{err}"
    );
    let err = verbose_error(&srv, "COPY (SELECT 1) TO '/root/ferrogres-run-as-root-test'");
    assert!(err.contains("ERROR:  42501: could not open file \"/root/ferrogres-run-as-root-test\" for writing: Permission denied"), "{err}");
    assert!(!std::path::Path::new("/root/ferrogres-run-as-root-test").exists());
    // What it may write is owned by it, not by root.
    let exchange = srv.exchange_dir();
    let out = exchange.path().join("out.txt");
    srv.sql_ok(&format!("COPY (SELECT 'written') TO '{}';", out.display()));
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "written\n");
    assert_eq!(std::fs::metadata(&out).unwrap().uid(), uids[0]);

    // Everything else works: DDL, DML, an index, a restart on the same directory.
    srv.sql_ok("CREATE TABLE t (id int PRIMARY KEY, v text); INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 1000) g;");
    srv.signal(libc::SIGTERM);
    let srv = Server::start(dir.path());
    assert_ne!(credentials(srv.pid()).0[1], 0);
    assert_eq!(srv.sql_ok("SELECT count(*), max(v) FROM t WHERE id > 0;").trim(), "1000|v999");
    // Another session is unaffected by the errors above.
    assert_eq!(srv.sql_ok("SELECT 1;").trim(), "1");
}

#[test]
fn the_owner_of_an_existing_data_directory_is_the_account() {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    // An owner without a passwd entry works too: the uid itself.
    let (uid, gid) = (54321, 54321);
    std::os::unix::fs::chown(&data, Some(uid), Some(gid)).unwrap();
    let srv = Server::start(dir.path());
    let (uids, gids, _) = credentials(srv.pid());
    assert_eq!(uids, vec![uid; 4]);
    assert_eq!(gids, vec![gid; 4]);
    assert!(srv.log().contains(&format!("running as user \"{uid}\" (uid {uid}, gid {gid}), the owner of the data directory")), "{}", srv.log());
    assert_eq!(srv.sql_ok("CREATE TABLE t (a int); INSERT INTO t VALUES (1); SELECT count(*) FROM t;").lines().last(), Some("1"));
}
