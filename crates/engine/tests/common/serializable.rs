//! Serializable transactions of two threads in lockstep, for the predicate
//! lock tests of the index access methods.

use ferrogres_engine::config::Settings;
use ferrogres_engine::engine::Engine;
use ferrogres_engine::lmgr::predicate::SerializableXact;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Barrier};

/// A fresh engine with 256 shared buffers.
pub fn open_engine() -> (tempfile::TempDir, Arc<Engine>) {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Settings::default();
    s.set("shared_buffers", "256").unwrap();
    let (engine, _) = Engine::open(dir.path(), s).unwrap();
    (dir, engine)
}

/// `rounds` rounds of two serializable transactions, side 0 and side 1, each
/// on its own thread and released together by barriers: both `read(side,
/// round, x)`, then both `write(side, round, x)` (true: the write
/// succeeded), then both try to commit. Returns how many rounds committed
/// both transactions.
pub fn lockstep_pairs<R, W>(engine: &Engine, rounds: u32, read: R, write: W) -> usize
where
    R: Fn(u32, u32, &Arc<SerializableXact>) + Sync,
    W: Fn(u32, u32, &SerializableXact) -> bool + Sync,
{
    let barrier = Barrier::new(2);
    let committed = AtomicUsize::new(0);
    let both = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for side in 0..2u32 {
            let (barrier, committed, both, read, write) = (&barrier, &committed, &both, &read, &write);
            s.spawn(move || {
                let pm = &engine.txn.predicate;
                for round in 0..rounds {
                    let x = pm.register(side as i32 + 1, format!("{}/{round}", side + 3), false);
                    barrier.wait();
                    read(side, round, &x);
                    barrier.wait();
                    let ok = write(side, round, &x);
                    barrier.wait();
                    let ok = ok && pm.pre_commit(&x).is_ok();
                    pm.release(&x, ok);
                    if ok {
                        committed.fetch_add(1, SeqCst);
                    }
                    // Both sides have counted this round before side 0 reads it.
                    barrier.wait();
                    if side == 0 && committed.swap(0, SeqCst) == 2 {
                        both.fetch_add(1, SeqCst);
                    }
                    barrier.wait();
                }
            });
        }
    });
    both.load(SeqCst)
}
