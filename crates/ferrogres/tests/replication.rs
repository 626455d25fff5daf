//! Issue 17, stages 1 and 2: replication connections (`replication=true` /
//! `database`), the walsender's commands with PostgreSQL 15's result shapes,
//! physical replication slots (persisted, crash-safe, holding WAL back),
//! max_wal_senders, pg_hba.conf's `replication` keyword, pg_replication_slots,
//! and START_REPLICATION streaming to the unmodified `pg_receivewal`. Through psql,
//! pg_receivewal and the real server binary.

mod common;
use common::server::Server;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// psql with a replication connection string (`replication=MODE`), running
/// each `-c` command: (stdout, stderr).
fn repl(srv: &Server, mode: &str, cmds: &[&str]) -> (String, String) {
    let mut c = Command::new("psql");
    c.arg("-X")
        .arg("-At")
        .arg(format!("host={} port={} user=postgres dbname=postgres replication={mode}", srv.dir.display(), srv.port))
        .env_remove("PGOPTIONS")
        .env_remove("PGSERVICE");
    for cmd in cmds {
        c.args(["-c", cmd]);
    }
    let o = c.output().unwrap();
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

fn lsn(s: &str) -> u64 {
    let (hi, lo) = s.trim().split_once('/').unwrap_or_else(|| panic!("not an LSN: {s:?}"));
    (u64::from_str_radix(hi, 16).unwrap() << 32) | u64::from_str_radix(lo, 16).unwrap()
}

#[test]
fn commands_answer_like_postgresql_15() {
    let srv = Server::start_temp(&[]);
    let (out, err) = repl(&srv, "true", &["IDENTIFY_SYSTEM"]);
    assert_eq!(err, "");
    let f: Vec<&str> = out.trim_end().split('|').collect();
    assert_eq!(f.len(), 4, "{out}");
    assert!(f[0].parse::<u64>().unwrap() > 0, "systemid {out}");
    assert_eq!(f[1], "1");
    let pos = lsn(f[2]);
    assert_eq!(pos, lsn(&srv.sql_ok("SELECT pg_current_wal_flush_lsn()")), "xlogpos is the flush position");
    assert_eq!(f[3], "", "a physical walsender has no database");
    // The same system identifier from a database walsender, which names its database.
    let (out2, _) = repl(&srv, "database", &["IDENTIFY_SYSTEM"]);
    let g: Vec<&str> = out2.trim_end().split('|').collect();
    assert_eq!((g[0], g[3]), (f[0], "postgres"));

    // SHOW, as pg_receivewal and pg_basebackup ask it.
    let (out, err) = repl(&srv, "true", &["SHOW wal_segment_size", "SHOW max_wal_senders", "SHOW nope"]);
    assert_eq!(out, "16MB\n10\n");
    assert!(err.contains("ERROR:  unrecognized configuration parameter \"nope\""), "{err}");

    // SQL: refused by a physical walsender (PostgreSQL's 0A000), run by a database one.
    let (out, err) = repl(&srv, "1", &["SELECT 1", "IDENTIFY_SYSTEM x"]);
    assert_eq!(out, "");
    assert!(err.contains("ERROR:  cannot execute SQL commands in WAL sender for physical replication"), "{err}");
    assert!(err.contains("ERROR:  syntax error"), "{err}");
    let (out, err) = repl(&srv, "database", &["SELECT 40 + 2"]);
    assert_eq!((out.as_str(), err.as_str()), ("42\n", ""));

    // TIMELINE_HISTORY: timeline 1 has no history file, as in PostgreSQL.
    let (_, err) = repl(&srv, "true", &["TIMELINE_HISTORY 1"]);
    assert!(err.contains("ERROR:  could not open file \"pg_wal/00000001.history\": No such file or directory"), "{err}");

    // Slots: created with and without WAL, read, listed, dropped; PostgreSQL's errors.
    let (out, err) = repl(
        &srv,
        "true",
        &[
            "CREATE_REPLICATION_SLOT s1 PHYSICAL RESERVE_WAL",
            "CREATE_REPLICATION_SLOT \"s2\" PHYSICAL",
            "READ_REPLICATION_SLOT s2",
            "READ_REPLICATION_SLOT nope",
            "CREATE_REPLICATION_SLOT s1 PHYSICAL",
            "CREATE_REPLICATION_SLOT \"a-b\" PHYSICAL",
            "DROP_REPLICATION_SLOT nope",
        ],
    );
    assert_eq!(out, "s1|0/0||\ns2|0/0||\nphysical||\n||\n");
    assert!(err.contains("ERROR:  replication slot \"s1\" already exists"), "{err}");
    assert!(err.contains("ERROR:  replication slot name \"a-b\" contains invalid character"), "{err}");
    assert!(err.contains("ERROR:  replication slot \"nope\" does not exist"), "{err}");
    let (out, _) = repl(&srv, "true", &["READ_REPLICATION_SLOT s1"]);
    let f: Vec<&str> = out.trim_end().split('|').collect();
    assert_eq!((f[0], f[2]), ("physical", "1"));
    let restart = lsn(f[1]);
    assert!(restart > 0 && restart <= pos, "restart_lsn {} is the last redo pointer", f[1]);
    assert_eq!(
        srv.sql_ok("SELECT slot_name, slot_type, temporary, active, restart_lsn IS NOT NULL, wal_status FROM pg_replication_slots ORDER BY 1"),
        "s1|physical|f|f|t|reserved\ns2|physical|f|f|f|\n"
    );
    let (out, err) = repl(&srv, "true", &["DROP_REPLICATION_SLOT s2"]);
    assert_eq!((out.as_str(), err.as_str()), ("DROP_REPLICATION_SLOT\n", ""));
    assert_eq!(srv.sql_ok("SELECT slot_name FROM pg_replication_slots"), "s1\n");

    // A temporary slot lives as long as its connection.
    let (out, _) = repl(&srv, "true", &["CREATE_REPLICATION_SLOT t1 TEMPORARY PHYSICAL (RESERVE_WAL)", "READ_REPLICATION_SLOT t1"]);
    assert!(out.starts_with("t1|0/0||\nphysical|"), "{out}");
    assert_eq!(srv.sql_ok("SELECT slot_name FROM pg_replication_slots"), "s1\n");

    // A bad replication value is PostgreSQL's FATAL.
    let (_, err) = repl(&srv, "bogus", &["IDENTIFY_SYSTEM"]);
    assert!(err.contains("FATAL:  invalid value for parameter \"replication\": \"bogus\""), "{err}");
    assert!(err.contains("HINT:  Valid values are: \"false\", 0, \"true\", 1, \"database\"."), "{err}");
}

#[test]
fn slots_survive_crashes_and_hold_wal_back() {
    let tmp = tempfile::tempdir().unwrap();
    let mut srv = Server::start_with(tmp.path(), &[]);
    repl(&srv, "true", &["CREATE_REPLICATION_SLOT keep PHYSICAL RESERVE_WAL"]);
    let restart = srv.sql_ok("SELECT restart_lsn FROM pg_replication_slots");
    let wal_dir = tmp.path().join("data/pg_wal");
    let first_seg = |dir: &std::path::Path| {
        let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).filter(|n| n.len() == 24).collect();
        v.sort();
        v[0].clone()
    };
    let before = first_seg(&wal_dir);
    // More than a segment of WAL and checkpoints: without the slot, the old
    // segments would go.
    srv.sql_ok("CREATE TABLE t (a int, b text)");
    for _ in 0..3 {
        srv.sql_ok("INSERT INTO t SELECT g, repeat('x', 200) FROM generate_series(1, 40000) g; CHECKPOINT;");
    }
    assert_eq!(first_seg(&wal_dir), before, "the slot keeps its segment");
    // kill -9: the slot is still there, with its restart_lsn.
    srv.signal(libc::SIGKILL);
    let mut srv = Server::start_with(tmp.path(), &[]);
    assert_eq!(srv.sql_ok("SELECT slot_name, restart_lsn FROM pg_replication_slots"), format!("keep|{restart}"));
    // A creation cut short by a crash (NAME.tmp) is removed at start.
    srv.signal(libc::SIGKILL);
    std::fs::create_dir(tmp.path().join("data/pg_replslot/half.tmp")).unwrap();
    let srv = Server::start_with(tmp.path(), &[]);
    assert!(!tmp.path().join("data/pg_replslot/half.tmp").exists());
    assert_eq!(srv.sql_ok("SELECT slot_name FROM pg_replication_slots"), "keep\n");
    // Dropped: the next checkpoint removes the old segments.
    repl(&srv, "true", &["DROP_REPLICATION_SLOT keep"]);
    srv.sql_ok("CHECKPOINT");
    assert!(first_seg(&wal_dir) > before, "segments before the redo pointer are removed once no slot needs them");
    assert!(!tmp.path().join("data/pg_replslot/keep").exists());
}

#[test]
fn max_wal_senders_and_hba_replication_keyword() {
    let srv = Server::start_temp(&["-c", "max_wal_senders=1"]);
    // One walsender streaming holds the only slot.
    let mut holder = Command::new("pg_receivewal")
        .args(["-h"])
        .arg(&srv.dir)
        .args(["-p", &srv.port.to_string(), "-U", "postgres", "-n", "-D"])
        .arg(srv.dir.join("recv"))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::fs::create_dir_all(srv.dir.join("recv")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while srv.sql_ok("SELECT count(*) FROM pg_stat_replication") != "1\n" {
        assert!(Instant::now() < deadline, "pg_receivewal did not start streaming");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (_, err) = repl(&srv, "true", &["IDENTIFY_SYSTEM"]);
    assert!(err.contains("FATAL:  number of requested standby connections exceeds max_wal_senders (currently 1)"), "{err}");
    // Ordinary sessions do not count against max_wal_senders.
    assert_eq!(srv.sql_ok("SELECT state, sync_state FROM pg_stat_replication"), "streaming|async\n");
    assert_eq!(srv.sql_ok("SELECT backend_type FROM pg_stat_activity WHERE backend_type = 'walsender'"), "walsender\n");
    let _ = holder.kill();
    let _ = holder.wait();

    // pg_hba.conf: `replication` matches physical walsenders only; `all` does not.
    let hba = srv.dir.join("data/pg_hba.conf");
    std::fs::write(&hba, "local all all trust\n").unwrap();
    assert_eq!(srv.sql_ok("SELECT pg_reload_conf()"), "t\n");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (_, err) = repl(&srv, "true", &["IDENTIFY_SYSTEM"]);
        if err.contains("FATAL:  no pg_hba.conf entry for replication connection from host \"[local]\", user \"postgres\", no encryption") {
            break;
        }
        assert!(Instant::now() < deadline, "the reload did not take: {err}");
        std::thread::sleep(Duration::from_millis(100));
    }
    // A database walsender matches ordinary database lines.
    let (out, err) = repl(&srv, "database", &["SELECT 1"]);
    assert_eq!((out.as_str(), err.as_str()), ("1\n", ""));
}

#[test]
fn pg_receivewal_receives_segments_identical_to_ours() {
    let srv = Server::start_temp(&[]);
    let recv = srv.dir.join("recv");
    std::fs::create_dir_all(&recv).unwrap();
    repl(&srv, "true", &["CREATE_REPLICATION_SLOT rw PHYSICAL RESERVE_WAL"]);
    let mut child = Command::new("pg_receivewal")
        .args(["-h"])
        .arg(&srv.dir)
        .args(["-p", &srv.port.to_string(), "-U", "postgres", "-n", "-S", "rw", "-s", "1", "-D"])
        .arg(&recv)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Over a segment of WAL, so that at least one segment is complete.
    srv.sql_ok("CREATE TABLE t (a int, b text)");
    srv.sql_ok("INSERT INTO t SELECT g, repeat('y', 300) FROM generate_series(1, 80000) g");
    srv.sql_ok("SELECT pg_current_wal_lsn()");
    let wal_dir = srv.dir.join("data/pg_wal");
    let deadline = Instant::now() + Duration::from_secs(60);
    let complete = loop {
        let mut done: Vec<String> = std::fs::read_dir(&recv)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.len() == 24)
            .collect();
        done.sort();
        if !done.is_empty() {
            break done;
        }
        assert!(Instant::now() < deadline, "no complete segment received");
        std::thread::sleep(Duration::from_millis(100));
    };
    for name in &complete {
        let ours = std::fs::read(wal_dir.join(name)).unwrap();
        let theirs = std::fs::read(recv.join(name)).unwrap();
        assert_eq!(ours.len(), 16 << 20);
        assert!(ours == theirs, "segment {name} differs");
    }
    // The standby status updates move the slot's restart_lsn and show in
    // pg_stat_replication.
    let seg_end = {
        let (_, seg) = (0, u64::from_str_radix(&complete[0][16..24], 16).unwrap() + (u64::from_str_radix(&complete[0][8..16], 16).unwrap() << 8));
        (seg + 1) << 24
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = srv.sql_ok("SELECT flush_lsn, (SELECT restart_lsn FROM pg_replication_slots), (SELECT active_pid FROM pg_replication_slots) = pid FROM pg_stat_replication");
        let f: Vec<&str> = r.trim_end().split('|').collect();
        if f.len() == 3 && !f[0].is_empty() && lsn(f[0]) >= seg_end && f[0] == f[1] && f[2] == "t" {
            break;
        }
        assert!(Instant::now() < deadline, "no status updates: {r}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // A slot in use cannot be dropped.
    let (_, err) = repl(&srv, "true", &["DROP_REPLICATION_SLOT rw"]);
    assert!(err.contains("ERROR:  replication slot \"rw\" is active for PID"), "{err}");
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(!log.contains("error"), "pg_receivewal: {log}");
}
