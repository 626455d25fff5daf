//! Continuous WAL archiving and point-in-time recovery (issue 17), with real
//! processes and PostgreSQL 15's clients:
//! - a server archives with `archive_command = 'cp %p ARCHIVE/%f'`; a base
//!   backup (pg_basebackup) is taken, more rows are written, pg_switch_wal()
//!   completes the segment, the archiver copies it, more rows are committed
//!   into the next (never archived) segment, and the server is killed; the
//!   backup started with `recovery.signal` and `restore_command` has exactly
//!   the rows committed before the end of the last archived segment;
//! - point-in-time recovery from the same kind of backup to a restore point,
//!   an LSN, a transaction id and a time: each copy has the rows committed up
//!   to its target and none committed after it;
//! - an archive_command that fails leaves `.ready` files, counts failures in
//!   pg_stat_archiver, keeps the segments through checkpoints, and archiving
//!   resumes once the command is fixed and pg_reload_conf() is called;
//! - the settings' names and contexts and pg_stat_archiver's columns are
//!   PostgreSQL 15's.

mod common;
use common::pg15::Pg15;
use common::server::Server;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

fn one(srv: &Server, sql: &str) -> String {
    let (out, err) = srv.sql(sql);
    assert!(err.is_empty(), "{sql}: {err}\n{}", srv.log());
    out.trim().to_string()
}

/// A directory the server (which drops root to another account) can write to.
fn shared_dir(parent: &Path, name: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let d = parent.join(name);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o1777)).unwrap();
    std::fs::set_permissions(parent, std::fs::Permissions::from_mode(0o1777)).unwrap();
    d
}

fn wait_until(what: &str, srv: &Server, secs: u64, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}\n{}", srv.log());
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A server archiving into `archive` with cp.
fn archiving_server(archive: &Path) -> Server {
    Server::start_temp(&["-c", "archive_mode=on", "-c", &format!("archive_command=cp %p {}/%f", archive.display())])
}

/// pg_basebackup (plain, WAL streamed) of `srv` into `target`.
fn base_backup(srv: &Server, target: &Path) {
    let o = Command::new(Path::new(PG_BIN).join("pg_basebackup"))
        .arg("-h")
        .arg(&srv.dir)
        .args(["-p", &srv.port.to_string(), "-U", "postgres", "-c", "fast", "-D"])
        .arg(target)
        .env_remove("PGOPTIONS")
        .output()
        .unwrap();
    assert!(o.status.success(), "pg_basebackup: {}{}", String::from_utf8_lossy(&o.stderr), srv.log());
}

/// Completes the current segment and waits until the archiver has copied it;
/// returns its name.
fn switch_and_wait_archived(srv: &Server, archive: &Path) -> String {
    let seg = one(srv, "SELECT pg_walfile_name(pg_switch_wal())");
    wait_until("the archiver", srv, 30, || one(srv, "SELECT last_archived_wal FROM pg_stat_archiver") >= seg);
    assert!(archive.join(&seg).exists(), "{seg} is not in the archive");
    seg
}

/// Copies the backup `backup` to `dir/data` with `recovery.signal`, starts a
/// server on it with restore_command and `extra` settings.
fn restore(backup: &Path, dir: &Path, archive: &Path, extra: &[&str]) -> Server {
    let data = dir.join("data");
    let o = Command::new("cp").arg("-a").arg(backup).arg(&data).output().unwrap();
    assert!(o.status.success());
    std::fs::write(data.join("recovery.signal"), "").unwrap();
    let restore = format!("restore_command=cp {}/%f %p", archive.display());
    let mut args = vec!["-c", &restore];
    args.extend_from_slice(extra);
    let srv = Server::start_with(dir, &args);
    assert!(srv.log().contains("restored log file"), "nothing was restored from the archive:\n{}", srv.log());
    assert!(!data.join("recovery.signal").exists(), "recovery.signal is still there after archive recovery");
    srv
}

const DIGEST: &str = "SELECT count(*), coalesce(max(id), 0), md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM t";

#[test]
fn a_backup_plus_the_archive_restores_every_row_of_the_archived_segments() {
    let tmp = tempfile::tempdir().unwrap();
    let archive = shared_dir(tmp.path(), "archive");
    let mut srv = archiving_server(&archive);
    one(&srv, "CREATE TABLE t (id int PRIMARY KEY, v text NOT NULL)");
    one(&srv, "INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, 1000) g");
    let backup = tmp.path().join("backup");
    base_backup(&srv, &backup);
    // After the backup: rows in WAL that only the archive will have.
    for i in 0..10 {
        one(&srv, &format!("INSERT INTO t SELECT g, repeat('x', 500) FROM generate_series({}, {}) g", 1001 + i * 100, 1100 + i * 100));
    }
    one(&srv, "UPDATE t SET v = 'updated' WHERE id % 7 = 0");
    let last = switch_and_wait_archived(&srv, &archive);
    let want = one(&srv, DIGEST);
    assert!(want.starts_with("2000|2000|"), "{want}");
    // Committed, but only in the segment after the last archived one.
    one(&srv, "INSERT INTO t SELECT g, 'lost' FROM generate_series(2001, 2100) g");
    assert_eq!(one(&srv, "SELECT count(*) FROM t"), "2100");
    srv.signal(libc::SIGKILL);

    let rdir = shared_dir(tmp.path(), "restored");
    let restored = restore(&backup, &rdir, &archive, &[]);
    assert!(restored.log().contains(&format!("restored log file \"{last}\" from archive")), "{}", restored.log());
    assert_eq!(one(&restored, DIGEST), want, "the restored server does not hold exactly the archived rows");
    // It is a primary now: it takes writes, and archives nothing (archive_mode off).
    one(&restored, "INSERT INTO t VALUES (3000, 'after recovery')");
    assert_eq!(one(&restored, "SELECT count(*) FROM t"), "2001");
    assert_eq!(one(&restored, "SELECT pg_is_in_recovery()"), "f");
}

/// (txid, insert LSN after it, now()) of a committed transaction inserting
/// ids `from..=to`.
fn committed_batch(srv: &Server, from: u32, to: u32) -> (String, String, String) {
    let out = srv.sql_ok(&format!(
        "BEGIN;\nINSERT INTO t SELECT g, md5(g::text) FROM generate_series({from}, {to}) g;\nSELECT backend_xid FROM pg_stat_activity WHERE pid = pg_backend_pid();\nCOMMIT;\n\
         SELECT pg_current_wal_insert_lsn();\nSELECT now();\n"
    ));
    let lines: Vec<&str> = out.lines().filter(|l| !l.is_empty() && !matches!(*l, "BEGIN" | "COMMIT") && !l.starts_with("INSERT")).collect();
    assert_eq!(lines.len(), 3, "{out}");
    (lines[0].to_string(), lines[1].to_string(), lines[2].to_string())
}

#[test]
fn point_in_time_recovery_stops_at_its_target() {
    let tmp = tempfile::tempdir().unwrap();
    let archive = shared_dir(tmp.path(), "archive");
    let mut srv = archiving_server(&archive);
    one(&srv, "CREATE TABLE t (id int PRIMARY KEY, v text NOT NULL)");
    one(&srv, "INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, 100) g");
    let backup = tmp.path().join("backup");
    base_backup(&srv, &backup);
    let (xid, lsn, _) = committed_batch(&srv, 101, 200);
    let rp = one(&srv, "SELECT pg_create_restore_point('before_300')");
    assert!(rp.contains('/'), "{rp}");
    let at_200 = one(&srv, DIGEST);
    // Commit timestamps are in microseconds: leave a gap around the time target.
    std::thread::sleep(Duration::from_millis(300));
    let time = one(&srv, "SELECT now()");
    std::thread::sleep(Duration::from_millis(300));
    committed_batch(&srv, 201, 300);
    let at_300 = one(&srv, DIGEST);
    switch_and_wait_archived(&srv, &archive);
    srv.signal(libc::SIGKILL);
    assert!(at_200.starts_with("200|200|") && at_300.starts_with("300|300|"));

    let targets: [(&str, String); 4] = [
        ("name", "recovery_target_name=before_300".into()),
        ("lsn", format!("recovery_target_lsn={lsn}")),
        ("xid", format!("recovery_target_xid={xid}")),
        ("time", format!("recovery_target_time={time}")),
    ];
    for (what, target) in &targets {
        let dir = shared_dir(tmp.path(), &format!("pitr-{what}"));
        let srv = restore(&backup, &dir, &archive, &["-c", target, "-c", "recovery_target_action=promote"]);
        assert!(srv.log().contains("recovery stopping at"), "{what}: {}", srv.log());
        assert_eq!(one(&srv, DIGEST), at_200, "recovery to {target} does not hold exactly the rows committed before it");
        one(&srv, "INSERT INTO t VALUES (1000, 'new history')");
    }
    // Without a target the same backup replays the whole archive.
    let dir = shared_dir(tmp.path(), "pitr-all");
    let all = restore(&backup, &dir, &archive, &[]);
    assert_eq!(one(&all, DIGEST), at_300);
    drop(all);
    // recovery_target_xid exclusive stops before the transaction.
    let dir = shared_dir(tmp.path(), "pitr-xid-exclusive");
    let before = restore(&backup, &dir, &archive, &["-c", &format!("recovery_target_xid={xid}"), "-c", "recovery_target_inclusive=off", "-c", "recovery_target_action=promote"]);
    assert_eq!(one(&before, "SELECT count(*) FROM t"), "100");
    drop(before);
    // recovery_target_action = shutdown: replays to the target and stops,
    // changing nothing (recovery.signal and backup_label stay); a start with
    // promote then ends recovery at the same point.
    let dir = shared_dir(tmp.path(), "pitr-shutdown");
    let data = dir.join("data");
    assert!(Command::new("cp").arg("-a").arg(&backup).arg(&data).status().unwrap().success());
    std::fs::write(data.join("recovery.signal"), "").unwrap();
    let restore_cmd = format!("restore_command=cp {}/%f %p", archive.display());
    let port = common::server::unused_port().to_string();
    let (code, log) = common::server::run_to_exit(
        &["-D", data.to_str().unwrap(), "-p", &port, "-k", dir.to_str().unwrap(), "-c", &restore_cmd, "-c", "recovery_target_name=before_300", "-c", "recovery_target_action=shutdown"],
        Duration::from_secs(30),
    );
    assert!(code.is_some(), "{log}");
    assert!(log.contains("shutdown at recovery target") && !log.contains("ready to accept connections"), "{log}");
    assert!(data.join("recovery.signal").exists() && data.join("backup_label").exists());
    let srv = Server::start_with(&dir, &["-c", &restore_cmd, "-c", "recovery_target_name=before_300", "-c", "recovery_target_action=promote"]);
    assert_eq!(one(&srv, DIGEST), at_200);
}

#[test]
fn pause_two_targets_and_an_unreached_target_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let archive = shared_dir(tmp.path(), "archive");
    let mut srv = archiving_server(&archive);
    one(&srv, "CREATE TABLE t (id int PRIMARY KEY, v text NOT NULL)");
    let backup = tmp.path().join("backup");
    base_backup(&srv, &backup);
    switch_and_wait_archived(&srv, &archive);
    srv.signal(libc::SIGTERM);
    for (what, args, want) in [
        ("pause", vec!["-c", "recovery_target_name=x"], "recovery_target_action = pause is not supported"),
        (
            "two",
            vec!["-c", "recovery_target_name=x", "-c", "recovery_target_xid=1000", "-c", "recovery_target_action=promote"],
            "multiple recovery targets specified",
        ),
        (
            "unreached",
            vec!["-c", "recovery_target_name=nowhere", "-c", "recovery_target_action=promote"],
            "recovery ended before configured recovery target was reached",
        ),
    ] {
        let dir = shared_dir(tmp.path(), what);
        let data = dir.join("data");
        assert!(Command::new("cp").arg("-a").arg(&backup).arg(&data).status().unwrap().success());
        std::fs::write(data.join("recovery.signal"), "").unwrap();
        let restore = format!("restore_command=cp {}/%f %p", archive.display());
        let port = common::server::unused_port().to_string();
        let mut all = vec!["-D", data.to_str().unwrap(), "-p", &port, "-k", dir.to_str().unwrap(), "-c", &restore];
        all.extend(args);
        let (code, log) = common::server::run_to_exit(&all, Duration::from_secs(20));
        assert_ne!(code, Some(0), "{log}");
        assert!(log.contains(want), "{log}");
    }
}

fn status_files(srv: &Server, ext: &str) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(srv.dir.join("data/pg_wal/archive_status"))
        .map(|rd| rd.flatten().filter_map(|e| e.file_name().to_str().and_then(|n| n.strip_suffix(ext)).map(String::from)).collect())
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn a_failing_archive_command_keeps_the_segments_until_it_is_fixed() {
    let tmp = tempfile::tempdir().unwrap();
    let archive = shared_dir(tmp.path(), "archive");
    let srv = Server::start_temp(&["-c", "archive_mode=on"]);
    one(&srv, "ALTER SYSTEM SET archive_command = 'false'");
    assert_eq!(one(&srv, "SELECT pg_reload_conf()"), "t");
    wait_until("the reload", &srv, 10, || one(&srv, "SHOW archive_command") == "false");
    one(&srv, "CREATE TABLE t (id int PRIMARY KEY, v text NOT NULL)");
    one(&srv, "INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, 1000) g");
    let first = one(&srv, "SELECT pg_walfile_name(pg_switch_wal())");
    one(&srv, "INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1001, 2000) g");
    let second = one(&srv, "SELECT pg_walfile_name(pg_switch_wal())");
    wait_until("a failure", &srv, 30, || one(&srv, "SELECT failed_count >= 3 FROM pg_stat_archiver") == "t");
    assert_eq!(
        one(&srv, "SELECT archived_count, last_archived_wal IS NULL, last_failed_wal, last_failed_time IS NOT NULL FROM pg_stat_archiver"),
        format!("0|t|{first}|t"),
        "segments are archived in order: the first one is retried"
    );
    assert!(status_files(&srv, ".ready").contains(&first) && status_files(&srv, ".ready").contains(&second));
    assert!(status_files(&srv, ".done").is_empty());
    // Checkpoints keep what is not archived.
    one(&srv, "CHECKPOINT");
    one(&srv, "CHECKPOINT");
    for seg in [&first, &second] {
        assert!(srv.dir.join("data/pg_wal").join(seg).exists(), "{seg} was removed before it was archived");
    }
    assert!(srv.log().contains("archive command failed with exit code 1"), "{}", srv.log());

    // Fixed and reloaded: the archiver does not wait out its 60 s pause.
    one(&srv, &format!("ALTER SYSTEM SET archive_command = 'cp %p {}/%f'", archive.display()));
    one(&srv, "SELECT pg_reload_conf()");
    wait_until("archiving to resume", &srv, 20, || one(&srv, "SELECT last_archived_wal FROM pg_stat_archiver") == second);
    let st = one(&srv, "SELECT archived_count >= 2, failed_count >= 3, last_archived_time >= last_failed_time FROM pg_stat_archiver");
    assert_eq!(st, "t|t|t");
    for seg in [&first, &second] {
        let a = std::fs::read(archive.join(seg)).unwrap();
        assert_eq!(a.len() as u64, 16 << 20, "{seg} archived whole");
    }
    assert!(status_files(&srv, ".done").contains(&second));
    // Archived and behind the redo pointer: the next checkpoint removes them.
    one(&srv, "INSERT INTO t VALUES (5000, 'x')");
    one(&srv, "CHECKPOINT");
    assert!(!srv.dir.join("data/pg_wal").join(&first).exists(), "an archived old segment was kept");
    // pg_stat_reset_shared('archiver').
    one(&srv, "SELECT pg_stat_reset_shared('archiver')");
    assert_eq!(one(&srv, "SELECT archived_count, failed_count, last_archived_wal IS NULL FROM pg_stat_archiver"), "0|0|t");
}

#[test]
fn archive_timeout_switches_a_segment_with_wal() {
    let tmp = tempfile::tempdir().unwrap();
    let archive = shared_dir(tmp.path(), "archive");
    let srv = Server::start_temp(&[
        "-c",
        "archive_mode=on",
        "-c",
        &format!("archive_command=cp %p {}/%f", archive.display()),
        "-c",
        "archive_timeout=1",
    ]);
    one(&srv, "CREATE TABLE t (id int)");
    let seg = one(&srv, "SELECT pg_walfile_name(pg_current_wal_insert_lsn())");
    wait_until("archive_timeout", &srv, 20, || archive.join(&seg).exists());
}

/// The settings' names, contexts, types and defaults, pg_stat_archiver's
/// columns, and what a failing archive_command does to pg_stat_archiver and
/// archive_status, side by side with PostgreSQL 15.
#[test]
fn settings_and_pg_stat_archiver_match_postgresql_15() {
    let tmp = tempfile::tempdir().unwrap();
    let pg = Pg15::start_with(&tmp.path().join("pg"), "-c archive_mode=on -c archive_command=false");
    let srv = Server::start_temp(&["-c", "archive_mode=on", "-c", "archive_command=false"]);
    let settings = "SELECT name, context, vartype, setting, coalesce(unit, ''), coalesce(array_to_string(enumvals, ','), '') \
                    FROM pg_settings WHERE name ~ '^(archive_|restore_command|recovery_target)' ORDER BY 1";
    let columns = "SELECT * FROM pg_stat_archiver LIMIT 0";
    let long_name = "SELECT pg_create_restore_point(repeat('a', 64))";
    let pg_out = |sql: &str| {
        let o = pg.cmd("psql").args(["-X", "-d", "postgres", "-c", sql]).output().unwrap();
        (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let ours = |sql: &str| {
        let o = srv.psql_cmd().args(["-c", sql]).output().unwrap();
        (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    for sql in [settings, columns, long_name, "SHOW archive_command", "SELECT pg_create_restore_point('p') IS NOT NULL"] {
        assert_eq!(ours(sql), pg_out(sql), "{sql}");
    }
    // A segment with WAL, switched: both fail three times in a row on it and
    // leave it .ready.
    let setup = "CREATE TABLE t (g int); INSERT INTO t SELECT generate_series(1, 1000)";
    assert_eq!(ours(setup).1, pg_out(setup).1);
    let seg_sql = "SELECT pg_walfile_name(pg_switch_wal())";
    let (our_seg, pg_seg) = (ours(seg_sql).0, pg_out(seg_sql).0);
    let seg = |out: &str| out.lines().nth(2).unwrap().trim().to_string();
    let (our_seg, pg_seg) = (seg(&our_seg), seg(&pg_seg));
    let failing = "SELECT failed_count >= 3 FROM pg_stat_archiver";
    let deadline = Instant::now() + Duration::from_secs(30);
    while !(ours(failing).0.contains(" t\n") && pg_out(failing).0.contains(" t\n")) {
        assert!(Instant::now() < deadline, "no failures counted:\n{}\n{}", srv.log(), pg.log());
        std::thread::sleep(Duration::from_millis(200));
    }
    let shape = |s: &str| {
        format!("SELECT archived_count, last_archived_wal IS NULL, last_failed_wal = '{s}', last_failed_time IS NOT NULL, stats_reset IS NOT NULL FROM pg_stat_archiver")
    };
    assert_eq!(ours(&shape(&our_seg)), pg_out(&shape(&pg_seg)));
    let ready = |dir: &Path, s: &str| dir.join("data/pg_wal/archive_status").join(format!("{s}.ready")).exists();
    assert!(ready(&srv.dir, &our_seg) && ready(&pg.dir, &pg_seg));
    let reset = "SELECT pg_stat_reset_shared('archiver')";
    assert_eq!(ours(reset), pg_out(reset));
    let after = "SELECT archived_count, last_failed_wal IS NULL, failed_count <= 3 FROM pg_stat_archiver";
    assert_eq!(ours(after), pg_out(after));
}
