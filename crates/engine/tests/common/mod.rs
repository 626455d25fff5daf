//! Helpers shared by the engine's multi-session heap tests: a session on its
//! own thread that runs closures in one transaction, and waits on pg_locks.
#![allow(dead_code)]

use ferrogres_engine::engine::{Backend, Engine};
use ferrogres_engine::txn::IsolationLevel;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Waits until the backend with `pid` waits for a lock (an ungranted row in pg_locks).
pub fn wait_until_blocked(engine: &Engine, pid: i32) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if engine.locks.lock_status().iter().any(|l| l.pid == Some(pid) && !l.granted) {
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    panic!("backend {pid} never blocked on a lock");
}

/// Asserts that the backend with `pid` is not waiting for any lock now.
pub fn assert_not_blocked(engine: &Engine, pid: i32) {
    assert!(
        !engine.locks.lock_status().iter().any(|l| l.pid == Some(pid) && !l.granted),
        "backend {pid} waits for a lock"
    );
}

/// A session on its own thread: runs the closures sent to it, in order, on its
/// own Backend, and sends back their results.
type Job<T> = Box<dyn FnOnce(&mut Backend) -> T + Send>;

pub struct Session<T: Send + 'static> {
    tx: Option<Sender<Job<T>>>,
    rx: Receiver<T>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl<T: Send + 'static> Session<T> {
    pub fn start(engine: &Arc<Engine>, pid: i32, iso: IsolationLevel) -> Session<T> {
        let (tx, jobs) = channel::<Job<T>>();
        let (done, rx) = channel();
        let engine = engine.clone();
        let handle = std::thread::spawn(move || {
            let mut b = engine.backend(pid).unwrap();
            b.txn.begin(iso).unwrap();
            for job in jobs {
                if done.send(job(&mut b)).is_err() {
                    break;
                }
            }
        });
        Session { tx: Some(tx), rx, handle: Some(handle) }
    }

    /// Starts `f` on the session without waiting for it.
    pub fn send(&self, f: impl FnOnce(&mut Backend) -> T + Send + 'static) {
        self.tx.as_ref().unwrap().send(Box::new(f)).unwrap();
    }

    /// The result of the oldest job sent.
    pub fn recv(&self) -> T {
        self.rx.recv_timeout(Duration::from_secs(30)).expect("session step did not finish")
    }

    pub fn run(&self, f: impl FnOnce(&mut Backend) -> T + Send + 'static) -> T {
        self.send(f);
        self.recv()
    }

    pub fn try_recv(&self) -> Option<T> {
        self.rx.try_recv().ok()
    }
}

impl<T: Send + 'static> Drop for Session<T> {
    fn drop(&mut self) {
        drop(self.tx.take());
        // A failing test may leave the session waiting for a lock that the test
        // thread still holds: do not join then, or the failure becomes a hang.
        if std::thread::panicking() {
            return;
        }
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

pub type Out = Result<String, (String, String)>;

pub fn err(e: ferrogres_engine::error::Error) -> (String, String) {
    (e.sqlstate().as_str().to_string(), e.to_string())
}
