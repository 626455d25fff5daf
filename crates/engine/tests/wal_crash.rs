//! Crash test: a child process (this test binary, re-executed with WAL_CRASH_CHILD
//! set) inserts numbered records from several threads, flushing after each and
//! printing "durable <gen> <thread> <seq>" once the flush returned. The parent kills it
//! with SIGKILL at a random moment, recovers the WAL, and checks that every record
//! reported durable is there and intact, and that nothing follows a gap.
//!
//! WAL_CRASH_ITERATIONS (default 30) sets the number of kill/recover rounds.
#![cfg(not(loom))]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ferrogres_engine::storage::Lsn;
use ferrogres_engine::wal::*;
use rand::Rng;

const THREADS: u32 = 4;

fn opts() -> WalOptions {
    WalOptions {
        fsync: true,
        wal_buffers: 8 * 8192,
        segment_size: 128 * 1024,
        ..WalOptions::default()
    }
}

fn body(generation: u32, t: u32, seq: u32) -> Vec<u8> {
    let len = match seq % 41 {
        0 => 30_000,
        1..=4 => 9_000,
        _ => (seq as usize * 53 + t as usize * 11) % 400,
    };
    let mut v = Vec::with_capacity(12 + len);
    v.extend_from_slice(&generation.to_le_bytes());
    v.extend_from_slice(&t.to_le_bytes());
    v.extend_from_slice(&seq.to_le_bytes());
    v.extend((0..len).map(|j| (j as u32 ^ seq ^ (t << 3) ^ generation) as u8));
    v
}

fn child(dir: &Path, generation: u32) {
    let (wal, _rs) = Wal::open_with(dir, opts()).unwrap();
    wal.recover(&mut |_, _| Ok(())).unwrap();
    // End-of-recovery checkpoint (no buffers in this test).
    let redo = wal.begin_checkpoint().unwrap();
    wal.finish_checkpoint(redo, CheckpointInfo::default()).unwrap();
    println!("ready");
    std::io::stdout().flush().unwrap();
    let wal = Arc::new(wal);
    let hs: Vec<_> = (0..THREADS)
        .map(|t| {
            let wal = wal.clone();
            std::thread::spawn(move || {
                let mut rng = rand::thread_rng();
                for seq in 0.. {
                    let mut rb = RecordBuilder::new(RmgrId::Test, 0);
                    rb.set_xid(t).append_main_data(&body(generation, t, seq));
                    let end = wal.insert(&rb).unwrap();
                    if rng.gen_bool(0.1) {
                        std::thread::sleep(Duration::from_micros(rng.gen_range(0..300)));
                    }
                    wal.flush(end).unwrap();
                    let out = std::io::stdout();
                    let mut o = out.lock();
                    writeln!(o, "durable {generation} {t} {seq}").unwrap();
                    o.flush().unwrap();
                }
            })
        })
        .collect();
    // Safety net: never outlive the parent for long.
    std::thread::sleep(Duration::from_secs(20));
    drop(hs);
    std::process::exit(3);
}

#[test]
fn crash_child_entry() {
    if let (Ok(dir), Ok(g)) = (std::env::var("WAL_CRASH_CHILD"), std::env::var("WAL_CRASH_GEN")) {
        child(Path::new(&dir), g.parse().unwrap());
    }
}

#[test]
fn kill_9_never_loses_a_flushed_record() {
    let iterations: u32 = std::env::var("WAL_CRASH_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(30);
    let dir = tempfile::tempdir().unwrap();
    Wal::init(dir.path(), &opts(), CheckpointInfo::default()).unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut rng = rand::thread_rng();
    let mut total_durable = 0u64;
    let t0 = Instant::now();
    for generation in 0..iterations {
        let mut c = Command::new(&exe)
            .args(["crash_child_entry", "--exact", "--nocapture", "--test-threads=1", "--quiet"])
            .env("WAL_CRASH_CHILD", dir.path())
            .env("WAL_CRASH_GEN", generation.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout = c.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                match line {
                    Ok(l) => {
                        if tx.send(l).is_err() {
                            break;
                        }
                    }
                    Err(_) => break,
                }
            }
        });
        // Wait for the child to be running, then let it work for a random while.
        let ready_deadline = Instant::now() + Duration::from_secs(20);
        let mut durable: HashMap<u32, u32> = HashMap::new();
        let note = |l: &str, durable: &mut HashMap<u32, u32>| {
            let f: Vec<&str> = l.split_whitespace().collect();
            if f.len() == 4 && f[0] == "durable" {
                assert_eq!(f[1].parse::<u32>().unwrap(), generation);
                let (t, s): (u32, u32) = (f[2].parse().unwrap(), f[3].parse().unwrap());
                let e = durable.entry(t).or_insert(0);
                *e = (*e).max(s + 1);
            }
        };
        loop {
            let l = rx.recv_timeout(ready_deadline.saturating_duration_since(Instant::now())).expect("child not ready");
            if l == "ready" {
                break;
            }
        }
        let run = Duration::from_millis(rng.gen_range(5..120));
        let stop_at = Instant::now() + run;
        while let Ok(l) = rx.recv_timeout(stop_at.saturating_duration_since(Instant::now())) {
            note(&l, &mut durable);
            if Instant::now() >= stop_at {
                break;
            }
        }
        c.kill().unwrap(); // SIGKILL
        let _ = c.wait();
        // Lines already printed before the kill were reported durable too.
        while let Ok(l) = rx.recv() {
            note(&l, &mut durable);
        }
        reader.join().unwrap();

        // Recover and check.
        let (wal, rs) = Wal::open_with(dir.path(), opts()).unwrap();
        assert!(rs.needed, "a killed server must need recovery");
        let mut found: HashMap<u32, u32> = HashMap::new();
        let mut last = Lsn(0);
        wal.recover(&mut |r: &DecodedRecord, _| {
            assert!(r.lsn > last);
            last = r.lsn;
            if r.rmgr != RmgrId::Test {
                return Ok(());
            }
            let g = u32::from_le_bytes(r.main_data[0..4].try_into().unwrap());
            let t = u32::from_le_bytes(r.main_data[4..8].try_into().unwrap());
            let s = u32::from_le_bytes(r.main_data[8..12].try_into().unwrap());
            assert_eq!(g, generation, "record of an older generation replayed after its checkpoint");
            assert_eq!(r.main_data, body(g, t, s), "record ({g},{t},{s}) damaged");
            // Nothing after a gap: per thread, sequence numbers come 0, 1, 2, ...
            let next = found.entry(t).or_insert(0);
            assert_eq!(s, *next, "gap before ({g},{t},{s})");
            *next += 1;
            Ok(())
        })
        .unwrap();
        for (t, &n) in &durable {
            let have = found.get(t).copied().unwrap_or(0);
            assert!(have >= n, "generation {generation} thread {t}: {n} reported durable, {have} recovered");
            total_durable += n as u64;
        }
        drop(wal);
    }
    eprintln!("{iterations} kills, {total_durable} durable records checked, {:?}", t0.elapsed());
    assert!(total_durable > 0);
}
