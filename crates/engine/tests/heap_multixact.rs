//! MultiXacts through the whole engine, with sessions that really interleave (each
//! a thread with its own Backend; "blocked" is observed in pg_locks, never guessed
//! from a sleep): several lockers of one row, lockers next to a no-key updater, a
//! key updater waiting for all of them, deadlocks through a multixact member,
//! subtransactions, and multixact-locked rows across a crash.

#![cfg(not(loom))]

mod common;
use common::*;
use ferrogres_engine::engine::{Backend, Engine};
use ferrogres_engine::heap::heapam::{
    heap_delete_ext, heap_fetch_latest, heap_insert, heap_lock_tuple, heap_scan, heap_update, DeleteOutcome, LockOutcome, UpdateOutcome, WaitPolicy,
};
use ferrogres_engine::heap::page::RowLockMode;
use ferrogres_engine::heap::tuple::Tid;
use ferrogres_engine::storage::RelFileLocator;
use ferrogres_engine::txn::IsolationLevel;
use std::time::Duration;




fn lock(b: &mut Backend, r: RelFileLocator, tid: Tid, m: RowLockMode) -> Out {
    Ok(format!("{:?}", heap_lock_tuple(b, r, tid, m, WaitPolicy::Block, REL).map_err(err)?))
}

fn ok(s: &str) -> Out {
    Ok(s.to_string())
}

fn commit(s: &Session<Out>) {
    s.run(|b| {
        b.txn.commit().map_err(err)?;
        Ok(String::new())
    })
    .unwrap();
}

/// Two FOR KEY SHARE lockers and a no-key UPDATE proceed together; a key update
/// (and a delete) waits for both lockers and for the updater, each in turn.
#[test]
fn key_share_lockers_and_a_no_key_update_coexist_and_a_key_update_waits_for_all() {
    let (_dir, engine, r, tids) = setup(1);
    let tid = tids[0];
    let t1: Session<Out> = Session::start(&engine, 201, IsolationLevel::ReadCommitted);
    let t2: Session<Out> = Session::start(&engine, 202, IsolationLevel::ReadCommitted);
    let t3: Session<Out> = Session::start(&engine, 203, IsolationLevel::ReadCommitted);
    let t4: Session<Out> = Session::start(&engine, 204, IsolationLevel::ReadCommitted);
    assert_eq!(t1.run(move |b| lock(b, r, tid, RowLockMode::KeyShare)), ok("Locked"));
    assert_eq!(t2.run(move |b| lock(b, r, tid, RowLockMode::KeyShare)), ok("Locked"));
    let out = t3.run(move |b| Ok(format!("{:?}", heap_update(b, r, tid, &row(1, "nku"), upd(true)).map_err(err)?)));
    // Not HOT: the old version's xmax is a multixact (README "MultiXacts").
    assert!(out.as_ref().is_ok_and(|s| s.starts_with("Ok") && s.contains("hot: false")), "{out:?}");
    assert_not_blocked(&engine, 203);
    assert!(engine.txn.multixacts.len() >= 2, "old and new version each name a multixact");
    // FOR SHARE conflicts with the no-key updater only: it waits for T3.
    // A delete of the row (through its newest version, once T3 commits) must wait
    // for both key-share lockers, which the update carried to the new version.
    commit(&t3);
    let newest = {
        let mut b = engine.backend(299).unwrap();
        b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        let snap = b.txn.statement_snapshot().unwrap();
        let (t, _) = heap_fetch_latest(&b, r, tid, &snap).unwrap().unwrap();
        b.txn.commit().unwrap();
        t
    };
    assert_ne!(newest, tid);
    t4.send(move |b| Ok(format!("{:?}", heap_delete_ext(b, r, newest, del()).map_err(err)?)));
    wait_until_blocked(&engine, 204);
    commit(&t1);
    std::thread::sleep(Duration::from_millis(50));
    assert!(t4.try_recv().is_none(), "the delete went ahead while T2 still holds FOR KEY SHARE");
    wait_until_blocked(&engine, 204);
    commit(&t2);
    assert_eq!(t4.recv(), ok("Ok"));
    commit(&t4);
    assert_eq!(rows(&engine, r), vec![]);
}

/// FOR SHARE by two sessions at once; FOR UPDATE NOWAIT by either then fails, and
/// a blocking FOR UPDATE waits for the other sharer only.
#[test]
fn two_sharers_and_an_upgrade() {
    let (_dir, engine, r, tids) = setup(1);
    let tid = tids[0];
    let t1: Session<Out> = Session::start(&engine, 211, IsolationLevel::ReadCommitted);
    let t2: Session<Out> = Session::start(&engine, 212, IsolationLevel::ReadCommitted);
    assert_eq!(t1.run(move |b| lock(b, r, tid, RowLockMode::Share)), ok("Locked"));
    assert_eq!(t2.run(move |b| lock(b, r, tid, RowLockMode::Share)), ok("Locked"));
    let res = t2.run(move |b| {
        Ok(format!("{:?}", heap_lock_tuple(b, r, tid, RowLockMode::Exclusive, WaitPolicy::NoWait, REL).map_err(err)?))
    });
    assert_eq!(res, Err(("55P03".into(), "could not obtain lock on row in relation \"t\"".into())));
    let res = t2.run(move |b| {
        Ok(format!("{:?}", heap_lock_tuple(b, r, tid, RowLockMode::Exclusive, WaitPolicy::SkipLocked, REL).map_err(err)?))
    });
    assert_eq!(res, ok("Skipped"));
    t2.send(move |b| lock(b, r, tid, RowLockMode::Exclusive));
    wait_until_blocked(&engine, 212);
    commit(&t1);
    assert_eq!(t2.recv(), ok("Locked"));
    // Now T2 alone holds FOR UPDATE: a new FOR KEY SHARE NOWAIT fails.
    let t3: Session<Out> = Session::start(&engine, 213, IsolationLevel::ReadCommitted);
    let res = t3.run(move |b| {
        Ok(format!("{:?}", heap_lock_tuple(b, r, tid, RowLockMode::KeyShare, WaitPolicy::NoWait, REL).map_err(err)?))
    });
    assert!(res.is_err());
    commit(&t2);
}

/// T1 and T2 share row 1 (a multixact); T1 also holds row 2 FOR UPDATE. T2 waits
/// for row 2; T1 then asks row 1 FOR UPDATE, which must wait for T2, a member of
/// the multixact: a cycle through a multixact member, found by the detector.
#[test]
fn deadlock_through_a_multixact_member_is_detected() {
    let (_dir, engine, r, tids) = setup(2);
    let (r1, r2) = (tids[0], tids[1]);
    let t1: Session<Out> = Session::start(&engine, 221, IsolationLevel::ReadCommitted);
    let t2: Session<Out> = Session::start(&engine, 222, IsolationLevel::ReadCommitted);
    assert_eq!(t1.run(move |b| lock(b, r, r1, RowLockMode::Share)), ok("Locked"));
    assert_eq!(t2.run(move |b| lock(b, r, r1, RowLockMode::Share)), ok("Locked"));
    assert_eq!(t1.run(move |b| lock(b, r, r2, RowLockMode::Exclusive)), ok("Locked"));
    t2.send(move |b| lock(b, r, r2, RowLockMode::Exclusive));
    wait_until_blocked(&engine, 222);
    t1.send(move |b| lock(b, r, r1, RowLockMode::Exclusive));
    let (first, who) = loop {
        if let Some(res) = t1.try_recv() {
            break (res, 1);
        }
        if let Some(res) = t2.try_recv() {
            break (res, 2);
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let (state, text) = first.expect_err("the first to return is the deadlock victim");
    assert_eq!(state, "40P01", "{text}");
    let (victim, survivor) = if who == 1 { (&t1, &t2) } else { (&t2, &t1) };
    victim
        .run(|b| {
            b.txn.abort().unwrap();
            Ok(String::new())
        })
        .unwrap();
    assert_eq!(survivor.recv(), ok("Locked"));
    commit(survivor);
}

/// A lock taken before a savepoint survives a DELETE made and rolled back after it
/// (the delete's xmax is a multixact of the top-level lock and the subxact), and
/// the savepoint's own stronger lock goes away with it.
#[test]
fn savepoint_rollback_keeps_the_earlier_lock_and_drops_the_later_one() {
    let (_dir, engine, r, tids) = setup(1);
    let tid = tids[0];
    let mut t1 = engine.backend(231).unwrap();
    t1.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(lock(&mut t1, r, tid, RowLockMode::KeyShare), ok("Locked"));
    t1.txn.savepoint("s").unwrap();
    assert_eq!(heap_delete_ext(&mut t1, r, tid, del()).unwrap(), DeleteOutcome::Ok);
    t1.txn.rollback_to("s").unwrap();
    let t2: Session<Out> = Session::start(&engine, 232, IsolationLevel::ReadCommitted);
    // FOR SHARE is compatible with T1's remaining KEY SHARE; FOR UPDATE is not.
    assert_eq!(t2.run(move |b| lock(b, r, tid, RowLockMode::Share)), ok("Locked"));
    let res = t2.run(move |b| {
        Ok(format!("{:?}", heap_lock_tuple(b, r, tid, RowLockMode::Exclusive, WaitPolicy::NoWait, REL).map_err(err)?))
    });
    assert!(res.is_err(), "T1's KEY SHARE was lost with the savepoint: {res:?}");
    commit(&t2);
    // A FOR UPDATE taken in a savepoint that is rolled back is gone: only the
    // earlier KEY SHARE remains, so a FOR SHARE by another session is granted.
    t1.txn.savepoint("s2").unwrap();
    assert_eq!(lock(&mut t1, r, tid, RowLockMode::Exclusive), ok("Locked"));
    t1.txn.rollback_to("s2").unwrap();
    let t3: Session<Out> = Session::start(&engine, 233, IsolationLevel::ReadCommitted);
    let res = t3.run(move |b| {
        Ok(format!("{:?}", heap_lock_tuple(b, r, tid, RowLockMode::Share, WaitPolicy::NoWait, REL).map_err(err)?))
    });
    assert_eq!(res, ok("Locked"));
    commit(&t3);
    t1.txn.commit().unwrap();
    assert_eq!(rows(&engine, r), vec![(1, "v1".into())]);
}

/// Rows locked by several transactions and updated next to a key-share locker,
/// then a crash: redo re-creates the multixacts before the heap records that name
/// them, and a checkpoint's pg_multixact/members carries those older than the
/// redo pointer. Afterwards the rows read right and can be locked and changed.
#[test]
fn multixact_locked_rows_survive_a_crash() {
    for checkpoint_first in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let r = rel(40002);
        {
            let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
            engine.create_relation(r).unwrap();
            let mut b = engine.backend(1).unwrap();
            b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
            let tids: Vec<Tid> = (1..=3u64).map(|k| heap_insert(&mut b, r, &row(k, &format!("v{k}"))).unwrap()).collect();
            b.txn.commit().unwrap();
            let mut l1 = engine.backend(2).unwrap();
            let mut l2 = engine.backend(3).unwrap();
            l1.txn.begin(IsolationLevel::ReadCommitted).unwrap();
            l2.txn.begin(IsolationLevel::ReadCommitted).unwrap();
            for &t in &tids {
                assert_eq!(lock(&mut l1, r, t, RowLockMode::KeyShare), ok("Locked"));
                assert_eq!(lock(&mut l2, r, t, RowLockMode::KeyShare), ok("Locked"));
            }
            // Row 1: a committed no-key update next to the lockers.
            b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
            assert!(matches!(heap_update(&mut b, r, tids[0], &row(1, "u1"), upd(true)).unwrap(), UpdateOutcome::Ok { hot: false, .. }));
            b.txn.commit().unwrap();
            l1.txn.commit().unwrap();
            if checkpoint_first {
                engine.checkpoint().unwrap();
            }
            // Row 2: an update that never commits (crash), next to l2's lock.
            b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
            assert!(matches!(heap_update(&mut b, r, tids[1], &row(2, "lost"), upd(true)).unwrap(), UpdateOutcome::Ok { .. }));
            engine.wal.flush(engine.wal.insert_position()).unwrap();
            drop(b);
            drop(l1);
            drop(l2);
            drop(engine);
        }
        let (engine, report) = Engine::open(dir.path(), settings()).unwrap();
        assert!(report.recovered);
        assert_eq!(rows(&engine, r), vec![(1, "u1".into()), (2, "v2".into()), (3, "v3".into())], "checkpoint_first = {checkpoint_first}");
        // Nobody holds the rows any more: FOR UPDATE NOWAIT and a delete succeed.
        let mut b = engine.backend(4).unwrap();
        b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        let snap = b.txn.statement_snapshot().unwrap();
        let mut tids = Vec::new();
        heap_scan(&b, r, &snap, &mut |t, _| {
            tids.push(t);
            Ok(())
        })
        .unwrap();
        assert_eq!(tids.len(), 3);
        for &t in &tids {
            let o = heap_lock_tuple(&mut b, r, t, RowLockMode::Exclusive, WaitPolicy::NoWait, REL).unwrap();
            assert_eq!(o, LockOutcome::Locked);
            assert_eq!(heap_delete_ext(&mut b, r, t, del()).unwrap(), DeleteOutcome::Ok);
        }
        b.txn.commit().unwrap();
        drop(b);
        assert_eq!(rows(&engine, r), vec![]);
    }
}
