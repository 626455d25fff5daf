//! Helpers shared by the engine's multi-session heap tests: a session on its
//! own thread that runs closures in one transaction, waits on pg_locks, and a
//! fresh engine with one two-column relation (`setup`) and its rows.
#![allow(dead_code)]

pub mod child;
pub mod serializable;

use ferrogres_engine::config::Settings;
use ferrogres_engine::engine::{Backend, Engine, DEFAULT_TABLESPACE_OID, POSTGRES_DATABASE_OID};
use ferrogres_engine::heap::heapam::{heap_insert, heap_scan, DeleteOptions, UpdateOptions, WaitPolicy};
use ferrogres_engine::heap::tuple::{deform_tuple, form_tuple, AttrDesc, Datum, Tid};
use ferrogres_engine::storage::RelFileLocator;
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

pub const REL: &str = "t";

pub fn rel(n: u32) -> RelFileLocator {
    RelFileLocator { spc_oid: DEFAULT_TABLESPACE_OID, db_oid: POSTGRES_DATABASE_OID, rel_number: n }
}

pub fn settings() -> Settings {
    let mut s = Settings::default();
    s.set("shared_buffers", "64").unwrap();
    s.set("deadlock_timeout", "50ms").unwrap();
    s
}

pub fn desc() -> Vec<AttrDesc> {
    vec![AttrDesc::fixed(4), AttrDesc::varlena()]
}

pub fn row(k: u64, v: &str) -> Vec<u8> {
    form_tuple(&desc(), &[Some(Datum::ByVal(k)), Some(Datum::Varlena(v.as_bytes()))]).unwrap()
}

pub fn decode(t: &[u8]) -> (u64, String) {
    let v = deform_tuple(&desc(), t).unwrap();
    let (Some(Datum::ByVal(k)), Some(Datum::Varlena(s))) = (v[0], v[1]) else { panic!("bad row") };
    (k, String::from_utf8(s.to_vec()).unwrap())
}

pub fn upd(hot: bool) -> UpdateOptions<'static> {
    UpdateOptions { hot_allowed: hot, keys_updated: false, wait_policy: WaitPolicy::Block, relname: REL, toast_desc: None }
}

pub fn del() -> DeleteOptions<'static> {
    DeleteOptions { wait_policy: WaitPolicy::Block, relname: REL, toast_desc: None }
}

/// A fresh engine with one relation holding rows `k -> "v{k}"`, committed.
pub fn setup(rows: u64) -> (tempfile::TempDir, Arc<Engine>, RelFileLocator, Vec<Tid>) {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    let r = rel(40000);
    engine.create_relation(r).unwrap();
    let mut b = engine.backend(1).unwrap();
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let tids = (1..=rows).map(|k| heap_insert(&mut b, r, &row(k, &format!("v{k}"))).unwrap()).collect();
    b.txn.commit().unwrap();
    (dir, engine, r, tids)
}

/// Every row visible to a new READ COMMITTED transaction, sorted by key.
pub fn rows(engine: &Arc<Engine>, r: RelFileLocator) -> Vec<(u64, String)> {
    let mut b = engine.backend(999).unwrap();
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let mut out = scan(&mut b, r);
    b.txn.commit().unwrap();
    out.sort();
    out
}

/// Rows visible to the backend's next statement snapshot.
pub fn scan(b: &mut Backend, r: RelFileLocator) -> Vec<(u64, String)> {
    let snap = b.txn.statement_snapshot().unwrap();
    let mut out = Vec::new();
    heap_scan(b, r, &snap, &mut |_, t| {
        out.push(decode(t));
        Ok(())
    })
    .unwrap();
    out.sort();
    out
}
