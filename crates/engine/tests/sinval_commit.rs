//! Catalog-cache invalidations go out with the commit, never with an abort, and
//! before the committing transaction's locks are released (`sinval` README,
//! "Protocol").

#![cfg(not(loom))]

use ferrogres_engine::config::Settings;
use ferrogres_engine::engine::Engine;
use ferrogres_engine::lmgr::lock::{LockMode, LockOptions, LockTag};
use ferrogres_engine::sinval::{Catchup, InvalMessage};
use ferrogres_engine::txn::IsolationLevel;

const DB: u32 = 5;

#[test]
fn messages_are_sent_at_commit_only_and_before_the_locks_go() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(dir.path(), Settings::default()).unwrap();
    let q = &engine.txn.sinval;
    let mut reader = q.reader();
    let mut b = engine.backend(1).unwrap();

    // Aborted: nothing is sent.
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    b.txn.assign_xid_if_needed().unwrap();
    b.txn.register_inval(InvalMessage::Relation { db: DB, rel: 100 });
    b.txn.abort().unwrap();
    assert_eq!(q.receive(&mut reader), Catchup::UpToDate);

    // Committed: sent once (a second registration of the same message is one).
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    b.txn.assign_xid_if_needed().unwrap();
    b.txn.register_inval(InvalMessage::Relation { db: DB, rel: 101 });
    b.txn.register_inval(InvalMessage::Catalog { db: DB, catalog: 2615 });
    b.txn.register_inval(InvalMessage::Relation { db: DB, rel: 101 });
    assert_eq!(q.receive(&mut reader), Catchup::UpToDate, "nothing before the commit");
    b.txn.commit().unwrap();
    assert_eq!(
        q.receive(&mut reader),
        Catchup::Messages(vec![InvalMessage::Relation { db: DB, rel: 101 }, InvalMessage::Catalog { db: DB, catalog: 2615 }])
    );

    // A reader that waited for the committer's relation lock finds the messages
    // as soon as it has the lock.
    let tag = LockTag::Relation { db: DB, rel: 102 };
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    b.txn.assign_xid_if_needed().unwrap();
    engine.locks.lock(b.id(), tag, LockMode::AccessExclusive, LockOptions::default()).unwrap();
    b.txn.register_inval(InvalMessage::Relation { db: DB, rel: 102 });
    let engine2 = engine.clone();
    let waiter = std::thread::spawn(move || {
        let mut other = engine2.backend(2).unwrap();
        let mut reader = engine2.txn.sinval.reader();
        other.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        engine2.locks.lock(other.id(), tag, LockMode::AccessShare, LockOptions::default()).unwrap();
        let got = engine2.txn.sinval.receive(&mut reader);
        other.txn.commit().unwrap();
        got
    });
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(!waiter.is_finished(), "the reader waits for the lock");
    b.txn.commit().unwrap();
    assert_eq!(waiter.join().unwrap(), Catchup::Messages(vec![InvalMessage::Relation { db: DB, rel: 102 }]));
}
