//! Online base backups with the unmodified `pg_basebackup` (PostgreSQL 15's
//! client) and recovery from them (issue 17, stage 3): a backup taken while
//! pgbench tpcb-like transactions and an insert loop run, a server started on
//! the copy, and what it holds.
//!
//! What is checked on the restored server:
//! - it replayed from the backup's checkpoint to the backup's end
//!   ("consistent recovery state reached") and renamed `backup_label` to
//!   `backup_label.old`;
//! - the insert loop's rows (one writer, ids 1, 2, ... in order) are exactly
//!   1..=N with N at least the rows acknowledged before pg_basebackup started
//!   and at most one more than those acknowledged when it ended: every commit
//!   before the backup is there, nothing torn or half-committed is, and the
//!   rows' contents equal the original's;
//! - pgbench's books balance (sum(abalance) = sum(tbalance) = sum(bbalance) =
//!   sum(delta)), so no transaction is half there;
//! - `pg_verifybackup -n` (PostgreSQL 15's, without WAL parsing: ferrogres'
//!   WAL is its own) accepts the manifest, and rejects it once a file changed.

mod common;
use common::server::{run_with_stdin, Server};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn one(srv: &Server, sql: &str) -> String {
    let (out, err) = srv.sql(sql);
    assert!(err.is_empty(), "{sql}: {err}\n{}", srv.log());
    out.trim().to_string()
}

fn pg_tool(name: &str) -> Command {
    let path = Path::new(PG_BIN).join(name);
    assert!(path.exists(), "{} is missing: install postgresql-15", path.display());
    let mut c = Command::new(path);
    c.env_remove("PGOPTIONS").env_remove("PGSERVICE");
    c
}

/// The load: pgbench tpcb-like with 2 clients, and an insert loop whose
/// acknowledged count is `acked`.
struct Load {
    stop: Arc<AtomicBool>,
    acked: Arc<AtomicU64>,
    writer: Option<std::thread::JoinHandle<()>>,
    pgbench: Child,
}

impl Load {
    fn start(srv: &Server) -> Load {
        let o = Command::new("pgbench")
            .arg("-h")
            .arg(&srv.dir)
            .args(["-p", &srv.port.to_string(), "-U", "postgres", "-i", "-s", "1", "postgres"])
            .env_remove("PGOPTIONS")
            .output()
            .expect("pgbench (postgresql-client-15) must be installed");
        assert!(o.status.success(), "pgbench -i: {}", text(&o));
        one(srv, "CREATE TABLE ins (id int PRIMARY KEY, v text NOT NULL)");
        let pgbench = Command::new("pgbench")
            .arg("-h")
            .arg(&srv.dir)
            .args(["-p", &srv.port.to_string(), "-U", "postgres", "-c", "2", "-T", "120", "postgres"])
            .env_remove("PGOPTIONS")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let acked = Arc::new(AtomicU64::new(0));
        let (s, a) = (stop.clone(), acked.clone());
        let mut psql = srv.psql_cmd();
        psql.args(["-At", "-v", "ON_ERROR_STOP=1"]);
        let writer = std::thread::spawn(move || {
            let mut id = 1u64;
            while !s.load(Ordering::SeqCst) {
                let sql = format!("INSERT INTO ins VALUES ({id}, md5('{id}') || repeat('x', {}))", id % 200);
                let o = Command::new(psql.get_program()).args(psql.get_args()).args(["-c", &sql]).output().unwrap();
                assert!(o.status.success(), "{sql}: {}", text(&o));
                a.store(id, Ordering::SeqCst);
                id += 1;
            }
        });
        Load { stop, acked, writer: Some(writer), pgbench }
    }

    fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.writer.take().unwrap().join().unwrap();
        let _ = self.pgbench.kill();
        let _ = self.pgbench.wait();
    }
}

/// The four pgbench sums, which agree after tpcb-like transactions only.
fn books(srv: &Server) -> [String; 4] {
    [
        one(srv, "select coalesce(sum(abalance), 0) from pgbench_accounts"),
        one(srv, "select coalesce(sum(tbalance), 0) from pgbench_tellers"),
        one(srv, "select coalesce(sum(bbalance), 0) from pgbench_branches"),
        one(srv, "select coalesce(sum(delta), 0) from pgbench_history"),
    ]
}

/// Takes a backup with `args` (into `target`) while the load runs; returns the
/// acknowledged insert counts before and after, and the original server.
fn backup_under_load(args: &[&str], target: &Path) -> (Server, u64, u64, String) {
    let srv = Server::start_temp(&[]);
    let load = Load::start(&srv);
    // Let the load get going (some rows and some pgbench transactions).
    while load.acked.load(Ordering::SeqCst) < 20 {
        std::thread::sleep(Duration::from_millis(50));
    }
    let before = load.acked.load(Ordering::SeqCst);
    let o = pg_tool("pg_basebackup")
        .arg("-h")
        .arg(&srv.dir)
        .args(["-p", &srv.port.to_string(), "-U", "postgres", "-c", "fast", "-v", "-D"])
        .arg(target)
        .args(args)
        .output()
        .unwrap();
    let after = load.acked.load(Ordering::SeqCst);
    load.stop();
    let out = text(&o);
    assert!(o.status.success(), "pg_basebackup {args:?} failed:\n{out}\nserver log:\n{}", srv.log());
    assert!(after > before, "the insert loop made no progress during the backup");
    (srv, before, after, out)
}

/// Starts a server on the restored directory `dir/data` and checks it against
/// the original.
fn check_restored(orig: &Server, dir: &Path, before: u64, after: u64) -> Server {
    let data = dir.join("data");
    assert!(data.join("backup_label").exists(), "the backup has no backup_label");
    let label = std::fs::read_to_string(data.join("backup_label")).unwrap();
    for f in ["START WAL LOCATION: ", "CHECKPOINT LOCATION: ", "BACKUP METHOD: streamed", "BACKUP FROM: primary", "START TIME: ", "LABEL: pg_basebackup base backup", "START TIMELINE: 1"] {
        assert!(label.contains(f), "backup_label lacks {f:?}:\n{label}");
    }
    assert!(!data.join("postmaster.pid").exists());
    let srv = Server::start(dir);
    assert!(srv.log().contains("consistent recovery state reached"), "{}", srv.log());
    assert!(!data.join("backup_label").exists() && data.join("backup_label.old").exists());
    let n: u64 = one(&srv, "SELECT count(*) FROM ins").parse().unwrap();
    assert!(n >= before, "rows acknowledged before the backup are missing: {n} < {before}");
    assert!(n <= after + 1, "more rows than were ever inserted: {n} > {after} + 1");
    assert_eq!(one(&srv, "SELECT coalesce(max(id), 0) FROM ins"), n.to_string(), "the rows are not 1..=N");
    let digest = format!("SELECT md5(string_agg(id || ':' || v, ',' ORDER BY id)) FROM ins WHERE id <= {n}");
    assert_eq!(one(&srv, &digest), one(orig, &digest));
    let b = books(&srv);
    assert!(b.iter().all(|s| *s == b[0]), "pgbench's books do not balance on the restored server: {b:?}");
    assert_ne!(one(&srv, "SELECT count(*) FROM pgbench_history"), "0", "no pgbench transaction was in the backup");
    assert_eq!(one(&srv, "SELECT count(*) FROM pgbench_accounts"), "100000");
    // And it takes writes.
    one(&srv, "INSERT INTO ins VALUES (1000000, 'after restore')");
    srv
}

fn verify(dir: &Path) -> Output {
    pg_tool("pg_verifybackup").args(["-n"]).arg(dir).output().unwrap()
}

#[test]
fn plain_backup_with_streamed_wal_under_load_restores_the_committed_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("data");
    let (orig, before, after, out) = backup_under_load(&["-Fp", "-X", "stream"], &target);
    assert!(out.contains("write-ahead log end point"), "{out}");
    // The manifest checks out, and fails once a file changed.
    let v = verify(&target);
    assert!(v.status.success(), "pg_verifybackup -n: {}", text(&v));
    let restored = check_restored(&orig, tmp.path(), before, after);
    drop(restored);
    let v = verify(&target);
    assert!(!v.status.success(), "pg_verifybackup accepted a directory that changed since the backup");
    assert!(text(&v).contains("backup_label"), "{}", text(&v));
}

#[test]
fn tar_backup_with_fetched_wal_under_load_restores_the_committed_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let tar_dir = tmp.path().join("tar");
    let (orig, before, after, _) = backup_under_load(&["-Ft", "-X", "fetch"], &tar_dir);
    let mut names: Vec<String> =
        std::fs::read_dir(&tar_dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, ["backup_manifest", "base.tar"]);
    let list = Command::new("tar").arg("tf").arg(tar_dir.join("base.tar")).output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout).into_owned();
    let members: Vec<&str> = list.lines().collect();
    assert_eq!(&members[..2], ["backup_label", "tablespace_map"], "label and map come first");
    assert!(members.contains(&"global/pg_control") && members.contains(&"pg_wal/"));
    assert!(members.iter().any(|m| m.starts_with("pg_wal/0000000100000000")), "no WAL in the archive");
    assert!(!members.iter().any(|m| m.contains("postmaster.pid") || m.starts_with("pg_replslot/x")));
    let data = tmp.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let x = Command::new("tar").arg("xf").arg(tar_dir.join("base.tar")).arg("-C").arg(&data).output().unwrap();
    assert!(x.status.success(), "tar: {}", text(&x));
    std::fs::copy(tar_dir.join("backup_manifest"), data.join("backup_manifest")).unwrap();
    let v = verify(&data);
    assert!(v.status.success(), "pg_verifybackup -n: {}", text(&v));
    std::fs::remove_file(data.join("backup_manifest")).unwrap();
    check_restored(&orig, tmp.path(), before, after);
}

#[test]
fn a_backup_without_its_wal_does_not_start() {
    let srv = Server::start_temp(&[]);
    one(&srv, "CREATE TABLE t (g int)");
    one(&srv, "INSERT INTO t SELECT g FROM generate_series(1, 1000) g");
    let tmp = tempfile::tempdir().unwrap();
    let o = pg_tool("pg_basebackup")
        .arg("-h")
        .arg(&srv.dir)
        .args(["-p", &srv.port.to_string(), "-U", "postgres", "-c", "fast", "-X", "none", "-D"])
        .arg(tmp.path().join("data"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let (code, log) = common::server::run_to_exit(
        &["-D", tmp.path().join("data").to_str().unwrap(), "-p", &common::server::unused_port().to_string(), "-k", tmp.path().to_str().unwrap()],
        Duration::from_secs(20),
    );
    assert_ne!(code, Some(0), "{log}");
    assert!(!log.contains("ready to accept connections"), "{log}");
    // The label's checkpoint record is in WAL that was not copied.
    assert!(log.contains("could not locate a valid checkpoint record"), "{log}");
}

/// pg_backup_start / pg_backup_stop through psql: PostgreSQL 15's names, result
/// columns and errors, and a low-level backup made with them (files copied by
/// `cp` between the two calls, the returned labelfile written as
/// `backup_label`) from which a server recovers.
#[test]
fn pg_backup_start_and_stop_through_psql() {
    let srv = Server::start_temp(&[]);
    one(&srv, "CREATE TABLE t (id int PRIMARY KEY, v text)");
    one(&srv, "INSERT INTO t SELECT g, md5(g::text) FROM generate_series(1, 5000) g");
    let tmp = tempfile::tempdir().unwrap();
    let copy = tmp.path().join("data");
    let label = tmp.path().join("label");
    let data = srv.dir.join("data");
    let script = format!(
        "SELECT pg_backup_stop();\n\
         SELECT pg_backup_start('low level', true) IS NOT NULL AS started;\n\
         SELECT pg_backup_start('again');\n\
         \\! cp -a {data} {copy} && rm -f {copy}/postmaster.pid && rm -f {copy}/pg_wal/0*\n\
         INSERT INTO t SELECT g, md5(g::text) FROM generate_series(5001, 6000) g;\n\
         UPDATE t SET v = 'changed during the backup' WHERE id <= 100;\n\
         \\o {label}\n\
         SELECT labelfile FROM pg_backup_stop();\n\
         \\o\n\
         SELECT * FROM pg_backup_stop(false);\n\
         \\! cp {data}/pg_wal/0* {copy}/pg_wal/\n\
         SELECT 'done';\n",
        data = data.display(),
        copy = copy.display(),
        label = label.display(),
    );
    let mut psql = srv.psql_cmd();
    psql.args(["-At", "-v", "ON_ERROR_STOP=0"]);
    let (out, err) = run_with_stdin(psql, &script);
    // PostgreSQL 15's errors; the session goes on after each.
    let errors: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(
        errors,
        [
            "ERROR:  backup is not in progress",
            "HINT:  Did you call pg_backup_start()?",
            "ERROR:  a backup is already in progress in this session",
            "ERROR:  backup is not in progress",
            "HINT:  Did you call pg_backup_start()?",
        ],
        "stdout:\n{out}"
    );
    assert!(out.starts_with("t\n") && out.trim_end().ends_with("done"), "{out}");
    let labelfile = std::fs::read_to_string(&label).unwrap();
    assert!(labelfile.contains("LABEL: low level\n") && labelfile.contains("CHECKPOINT LOCATION: "), "{labelfile}");
    std::fs::write(copy.join("backup_label"), labelfile.trim_end().to_string() + "\n").unwrap();
    let digest = "SELECT count(*), md5(string_agg(id || v, ',' ORDER BY id)) FROM t";
    let want = one(&srv, digest);
    drop(srv);
    let restored = Server::start(tmp.path());
    assert!(restored.log().contains("consistent recovery state reached"), "{}", restored.log());
    assert_eq!(one(&restored, digest), want);
}

/// Every manifest checksum algorithm PostgreSQL 15's pg_basebackup offers is
/// accepted, written as PostgreSQL writes it, and verified by pg_verifybackup.
#[test]
fn every_manifest_checksum_algorithm_verifies() {
    let srv = Server::start_temp(&[]);
    one(&srv, "CREATE TABLE t (g int)");
    one(&srv, "INSERT INTO t SELECT g FROM generate_series(1, 1000) g");
    for alg in ["CRC32C", "SHA224", "SHA256", "SHA384", "SHA512"] {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("data");
        let o = pg_tool("pg_basebackup")
            .arg("-h")
            .arg(&srv.dir)
            .args(["-p", &srv.port.to_string(), "-U", "postgres", "-c", "fast", "-X", "fetch", "-D"])
            .arg(&target)
            .arg(format!("--manifest-checksums={alg}"))
            .output()
            .unwrap();
        assert!(o.status.success(), "pg_basebackup --manifest-checksums={alg}: {}\n{}", text(&o), srv.log());
        let manifest = std::fs::read_to_string(target.join("backup_manifest")).unwrap();
        assert!(manifest.contains(&format!("\"Checksum-Algorithm\": \"{alg}\"")), "{alg}: {}", &manifest[..manifest.len().min(600)]);
        let v = verify(&target);
        assert!(v.status.success(), "pg_verifybackup -n ({alg}): {}", text(&v));
        // A changed file fails the check (the size stays, so the checksum finds it).
        let pg_version = target.join("PG_VERSION");
        let old = std::fs::read(&pg_version).unwrap();
        let mut changed = old.clone();
        changed[0] ^= 1;
        std::fs::write(&pg_version, &changed).unwrap();
        let v = verify(&target);
        assert!(!v.status.success(), "pg_verifybackup ({alg}) accepted a changed PG_VERSION");
    }
}
