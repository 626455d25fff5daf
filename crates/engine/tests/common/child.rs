//! A crash test's child process: the test binary itself, re-run on one ignored
//! test, which prints `READY` once it is set up and then reports its progress
//! on stdout, a line at a time, until the parent kills it.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How a child ended: its exit status, the lines it printed (READY left out)
/// and its standard error.
pub struct ChildEnd {
    pub status: ExitStatus,
    pub lines: Vec<String>,
    pub stderr: String,
}

/// Spawns `cmd` with stdout and stderr piped here, waits up to `start_timeout`
/// for its READY line (a child that exits first fails the test with its
/// stderr), lets it run for `run_for` or until it exits by itself, then sends
/// SIGKILL.
pub fn run_then_kill(mut cmd: Command, start_timeout: Duration, run_for: Duration) -> ChildEnd {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    let deadline = Instant::now() + start_timeout;
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(l) if l.ends_with("READY") => break,
            Ok(l) => lines.push(l),
            Err(_) if Instant::now() > deadline => panic!("child did not start"),
            Err(_) => {
                if let Some(status) = child.try_wait().unwrap() {
                    let mut err = String::new();
                    child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
                    panic!("child exited before READY: {status}\n{err}");
                }
            }
        }
    }
    let until = Instant::now() + run_for;
    while Instant::now() < until && child.try_wait().unwrap().is_none() {
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.kill(); // SIGKILL (the child may have ended by itself already)
    let status = child.wait().unwrap();
    reader.join().unwrap();
    lines.extend(rx.try_iter());
    let mut stderr = String::new();
    let _ = child.stderr.take().map(|mut e| e.read_to_string(&mut stderr));
    ChildEnd { status, lines, stderr }
}
