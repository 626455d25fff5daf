//! UPDATE, DELETE and row locks through the whole engine, with sessions that really
//! interleave: each session is a thread with its own Backend, steps are ordered with
//! channels, and "session B is blocked" is observed in pg_locks (an ungranted lock
//! of B's pid), never guessed from a sleep.
//!
//! Covered: HOT and cross-page updates and what READ COMMITTED / REPEATABLE READ
//! sessions see; a writer waiting for a concurrent writer (commit: Updated / 40001,
//! abort: proceeds); delete vs update; the row-lock strengths against updates;
//! NOWAIT and SKIP LOCKED; a deadlock through two rows; savepoint rollback of an
//! update; redo of updates after a clean restart and after a crash.

#![cfg(not(loom))]

mod common;
use common::*;
use ferrogres_engine::engine::{Backend, Engine};
use ferrogres_engine::heap::heapam::{
    heap_delete_ext, heap_fetch, heap_fetch_latest, heap_hot_fetch, heap_insert, heap_lock_tuple, heap_scan, heap_update,
    DeleteOptions, DeleteOutcome, LockOutcome, UpdateOptions, UpdateOutcome, WaitPolicy,
};
use ferrogres_engine::heap::page::RowLockMode;
use ferrogres_engine::heap::tuple::Tid;
use ferrogres_engine::storage::RelFileLocator;
use ferrogres_engine::txn::IsolationLevel;
use std::time::{Duration, Instant};


/// (key, length, first character) of each row: readable failure messages.
fn summary(rows: &[(u64, String)]) -> Vec<(u64, usize, Option<char>)> {
    rows.iter().map(|(k, v)| (*k, v.len(), v.chars().next())).collect()
}


#[test]
fn hot_update_and_what_rc_and_rr_sessions_see() {
    let (_dir, engine, r, tids) = setup(3);
    let reader_rr: Session<Vec<(u64, String)>> = Session::start(&engine, 11, IsolationLevel::RepeatableRead);
    let reader_rc: Session<Vec<(u64, String)>> = Session::start(&engine, 12, IsolationLevel::ReadCommitted);
    // The RR session takes its snapshot before the update.
    let before = reader_rr.run(move |b| scan(b, r));
    assert_eq!(before[1], (2, "v2".to_string()));

    let mut w = engine.backend(2).unwrap();
    w.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let out = heap_update(&mut w, r, tids[1], &row(2, "two"), upd(true)).unwrap();
    let UpdateOutcome::Ok { new_tid, hot } = out else { panic!("{out:?}") };
    assert!(hot, "a small update on a page with room is HOT");
    assert_eq!(new_tid.block, tids[1].block, "a HOT update stays on the page");
    assert_ne!(new_tid, tids[1]);
    // The writer sees its own new version at once (next command).
    w.txn.command_counter_increment().unwrap();
    assert_eq!(scan(&mut w, r)[1], (2, "two".to_string()));
    // Others do not before the commit.
    assert_eq!(reader_rc.run(move |b| scan(b, r))[1], (2, "v2".to_string()));
    assert_eq!(reader_rr.run(move |b| scan(b, r))[1], (2, "v2".to_string()));
    w.txn.commit().unwrap();
    // After it: READ COMMITTED sees the new version, REPEATABLE READ keeps the old.
    let rc = reader_rc.run(move |b| scan(b, r));
    assert_eq!(rc, vec![(1, "v1".into()), (2, "two".into()), (3, "v3".into())]);
    let rr = reader_rr.run(move |b| scan(b, r));
    assert_eq!(rr, before);
    // Following the chain from the old TID reaches the new version.
    let mut b = engine.backend(3).unwrap();
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let snap = b.txn.statement_snapshot().unwrap();
    let (tid, t) = heap_fetch_latest(&b, r, tids[1], &snap).unwrap().unwrap();
    assert_eq!((tid, decode(&t)), (new_tid, (2, "two".to_string())));
    assert!(heap_fetch(&b, r, tids[1], &snap).unwrap().is_none(), "the old version is dead to new snapshots");
    b.txn.commit().unwrap();
}

#[test]
fn update_goes_to_another_page_when_the_page_is_full() {
    let (_dir, engine, r, _) = setup(0);
    let mut b = engine.backend(1).unwrap();
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    // Fill block 0.
    let filler = "x".repeat(700);
    let mut first_page = Vec::new();
    for k in 0.. {
        let tid = heap_insert(&mut b, r, &row(k, &filler)).unwrap();
        if tid.block != 0 {
            break;
        }
        first_page.push(tid);
    }
    b.txn.commit().unwrap();
    assert!(first_page.len() > 5);
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    // A bigger version of a row on the full page, HOT allowed: it cannot be HOT.
    let out = heap_update(&mut b, r, first_page[2], &row(2, &"y".repeat(1500)), upd(true)).unwrap();
    let UpdateOutcome::Ok { new_tid, hot } = out else { panic!("{out:?}") };
    assert!(!hot);
    assert_ne!(new_tid.block, 0, "the new version is on another page");
    b.txn.commit().unwrap();
    let all = rows(&engine, r);
    assert_eq!(all.len(), first_page.len() + 1);
    assert_eq!(all.iter().find(|x| x.0 == 2).unwrap().1, "y".repeat(1500));
    assert_eq!(all.iter().filter(|x| x.0 == 2).count(), 1);
}

/// T1 updates a row; T2's update of it blocks; T1 commits. READ COMMITTED: T2 gets
/// Updated{new_tid}, re-fetches the newest version and updates that one.
/// REPEATABLE READ: 40001.
#[test]
fn concurrent_update_waits_then_sees_the_commit() {
    for iso in [IsolationLevel::ReadCommitted, IsolationLevel::RepeatableRead] {
        let (_dir, engine, r, tids) = setup(2);
        let old = tids[0];
        let t2: Session<Out> = Session::start(&engine, 22, iso);
        // T2's snapshot is taken first (matters for RR).
        t2.run(move |b| Ok(format!("{:?}", scan(b, r)))).unwrap();
        let mut t1 = engine.backend(21).unwrap();
        t1.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        let UpdateOutcome::Ok { new_tid: t1_tid, .. } = heap_update(&mut t1, r, old, &row(1, "t1"), upd(true)).unwrap()
        else {
            panic!()
        };
        t2.send(move |b| {
            let out = heap_update(b, r, old, &row(1, "t2"), upd(true)).map_err(err)?;
            let UpdateOutcome::Updated { new_tid } = out else { return Ok(format!("{out:?}")) };
            assert_eq!(new_tid, t1_tid);
            // EvalPlanQual: the newest version, under a new snapshot.
            b.txn.command_counter_increment().unwrap();
            let snap = b.txn.statement_snapshot().unwrap();
            let (latest, t) = heap_fetch_latest(b, r, old, &snap).unwrap().unwrap();
            assert_eq!(latest, t1_tid);
            assert_eq!(decode(&t).1, "t1");
            let again = heap_update(b, r, latest, &row(1, "t1+t2"), upd(true)).map_err(err)?;
            assert!(matches!(again, UpdateOutcome::Ok { .. }), "{again:?}");
            b.txn.commit().unwrap();
            Ok("updated latest".into())
        });
        wait_until_blocked(&engine, 22);
        assert!(t2.try_recv().is_none());
        t1.txn.commit().unwrap();
        let res = t2.recv();
        match iso {
            IsolationLevel::ReadCommitted => {
                assert_eq!(res, Ok("updated latest".into()));
                assert_eq!(rows(&engine, r)[0], (1, "t1+t2".into()));
            }
            _ => {
                assert_eq!(
                    res,
                    Err(("40001".into(), "could not serialize access due to concurrent update".into()))
                );
                assert_eq!(rows(&engine, r)[0], (1, "t1".into()));
            }
        }
        drop(t2);
        drop(t1);
    }
}

#[test]
fn concurrent_update_proceeds_on_the_original_when_the_first_writer_aborts() {
    for iso in [IsolationLevel::ReadCommitted, IsolationLevel::RepeatableRead] {
        let (_dir, engine, r, tids) = setup(1);
        let old = tids[0];
        let t2: Session<Out> = Session::start(&engine, 32, iso);
        t2.run(move |b| Ok(format!("{:?}", scan(b, r)))).unwrap();
        let mut t1 = engine.backend(31).unwrap();
        t1.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        assert!(matches!(heap_update(&mut t1, r, old, &row(1, "t1"), upd(false)).unwrap(), UpdateOutcome::Ok { .. }));
        t2.send(move |b| {
            let out = heap_update(b, r, old, &row(1, "t2"), upd(false)).map_err(err)?;
            b.txn.commit().unwrap();
            Ok(format!("{out:?}").split_whitespace().next().unwrap().to_string())
        });
        wait_until_blocked(&engine, 32);
        t1.txn.abort().unwrap();
        assert_eq!(t2.recv(), Ok("Ok".into()));
        assert_eq!(rows(&engine, r), vec![(1, "t2".into())]);
    }
}

/// Delete vs update, both orders, READ COMMITTED and REPEATABLE READ, with
/// PostgreSQL 15's texts.
#[test]
fn delete_versus_update() {
    // T1 deletes, T2 updates.
    for iso in [IsolationLevel::ReadCommitted, IsolationLevel::RepeatableRead] {
        let (_dir, engine, r, tids) = setup(1);
        let old = tids[0];
        let t2: Session<Out> = Session::start(&engine, 42, iso);
        t2.run(move |b| Ok(format!("{:?}", scan(b, r)))).unwrap();
        let mut t1 = engine.backend(41).unwrap();
        t1.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        assert_eq!(heap_delete_ext(&mut t1, r, old, del()).unwrap(), DeleteOutcome::Ok);
        t2.send(move |b| Ok(format!("{:?}", heap_update(b, r, old, &row(1, "t2"), upd(true)).map_err(err)?)));
        wait_until_blocked(&engine, 42);
        t1.txn.commit().unwrap();
        let expect = match iso {
            IsolationLevel::ReadCommitted => Ok("Deleted".to_string()),
            _ => Err(("40001".into(), "could not serialize access due to concurrent delete".into())),
        };
        assert_eq!(t2.recv(), expect);
        drop(t2);
        assert!(rows(&engine, r).is_empty());
    }
    // T1 updates, T2 deletes.
    for iso in [IsolationLevel::ReadCommitted, IsolationLevel::RepeatableRead] {
        let (_dir, engine, r, tids) = setup(1);
        let old = tids[0];
        let t2: Session<Out> = Session::start(&engine, 44, iso);
        t2.run(move |b| Ok(format!("{:?}", scan(b, r)))).unwrap();
        let mut t1 = engine.backend(43).unwrap();
        t1.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        let UpdateOutcome::Ok { new_tid, .. } = heap_update(&mut t1, r, old, &row(1, "t1"), upd(true)).unwrap() else {
            panic!()
        };
        t2.send(move |b| Ok(format!("{:?}", heap_delete_ext(b, r, old, del()).map_err(err)?)));
        wait_until_blocked(&engine, 44);
        t1.txn.commit().unwrap();
        let expect = match iso {
            IsolationLevel::ReadCommitted => Ok(format!("{:?}", DeleteOutcome::Updated { new_tid })),
            _ => Err(("40001".into(), "could not serialize access due to concurrent update".into())),
        };
        assert_eq!(t2.recv(), expect);
        drop(t2);
        assert_eq!(rows(&engine, r), vec![(1, "t1".into())]);
    }
}

#[test]
fn for_update_blocks_update_until_the_locker_ends() {
    let (_dir, engine, r, tids) = setup(1);
    let tid = tids[0];
    let mut t1 = engine.backend(51).unwrap();
    t1.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(heap_lock_tuple(&mut t1, r, tid, RowLockMode::Exclusive, WaitPolicy::Block, REL).unwrap(), LockOutcome::Locked);
    // Locking again, or weaker, by the same transaction: already covered.
    assert_eq!(heap_lock_tuple(&mut t1, r, tid, RowLockMode::Share, WaitPolicy::Block, REL).unwrap(), LockOutcome::Locked);
    let t2: Session<Out> = Session::start(&engine, 52, IsolationLevel::ReadCommitted);
    t2.send(move |b| {
        let out = heap_update(b, r, tid, &row(1, "t2"), upd(true)).map_err(err)?;
        b.txn.commit().unwrap();
        Ok(format!("{out:?}").split_whitespace().next().unwrap().to_string())
    });
    wait_until_blocked(&engine, 52);
    // The locker's commit ends the lock: the row itself is unchanged, T2 updates it.
    t1.txn.commit().unwrap();
    assert_eq!(t2.recv(), Ok("Ok".into()));
    assert_eq!(rows(&engine, r), vec![(1, "t2".into())]);
}

/// The row lock of T1 against a change or lock by T2: does T2 wait?
fn blocks(held: RowLockMode, attempt: impl FnOnce(&mut Backend, Tid, RelFileLocator) -> Out + Send + 'static) -> bool {
    let (_dir, engine, r, tids) = setup(1);
    let tid = tids[0];
    let mut t1 = engine.backend(61).unwrap();
    t1.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(heap_lock_tuple(&mut t1, r, tid, held, WaitPolicy::Block, REL).unwrap(), LockOutcome::Locked);
    let t2: Session<Out> = Session::start(&engine, 62, IsolationLevel::ReadCommitted);
    t2.send(move |b| attempt(b, tid, r));
    // Either T2 finishes, or it waits for a lock.
    let deadline = Instant::now() + Duration::from_secs(20);
    let blocked = loop {
        if let Some(res) = t2.try_recv() {
            assert!(res.is_ok(), "{res:?}");
            break false;
        }
        if engine.locks.lock_status().iter().any(|l| l.pid == Some(62) && !l.granted) {
            break true;
        }
        assert!(Instant::now() < deadline, "neither finished nor blocked");
        std::thread::sleep(Duration::from_millis(1));
    };
    if blocked {
        t1.txn.commit().unwrap();
        assert!(t2.recv().is_ok());
    }
    assert_not_blocked(&engine, 62);
    blocked
}

#[test]
fn row_lock_strengths_against_updates_and_deletes() {
    let key_update = |b: &mut Backend, tid, r| {
        let o = UpdateOptions { keys_updated: true, ..upd(false) };
        Ok(format!("{:?}", heap_update(b, r, tid, &row(9, "k"), o).map_err(err)?))
    };
    let no_key_update = |b: &mut Backend, tid, r| Ok(format!("{:?}", heap_update(b, r, tid, &row(1, "n"), upd(true)).map_err(err)?));
    let delete = |b: &mut Backend, tid, r| Ok(format!("{:?}", heap_delete_ext(b, r, tid, del()).map_err(err)?));
    // FOR KEY SHARE blocks a key update and a delete.
    assert!(blocks(RowLockMode::KeyShare, key_update));
    assert!(blocks(RowLockMode::KeyShare, delete));
    // FOR SHARE, FOR NO KEY UPDATE and FOR UPDATE block every update and delete.
    for m in [RowLockMode::Share, RowLockMode::NoKeyExclusive, RowLockMode::Exclusive] {
        assert!(blocks(m, no_key_update));
        assert!(blocks(m, key_update));
        assert!(blocks(m, delete));
    }
    // FOR KEY SHARE does not conflict with a no-key update, nor with another FOR
    // KEY SHARE: both proceed, the row's xmax becoming a multixact (README
    // "MultiXacts"; before multixacts both waited).
    assert!(!blocks(RowLockMode::KeyShare, no_key_update));
    assert!(!blocks(RowLockMode::KeyShare, |b: &mut Backend, tid, r| Ok(format!(
        "{:?}",
        heap_lock_tuple(b, r, tid, RowLockMode::KeyShare, WaitPolicy::Block, REL).map_err(err)?
    ))));
    // FOR SHARE next to FOR SHARE, too.
    assert!(!blocks(RowLockMode::Share, |b: &mut Backend, tid, r| Ok(format!(
        "{:?}",
        heap_lock_tuple(b, r, tid, RowLockMode::Share, WaitPolicy::Block, REL).map_err(err)?
    ))));
}

/// A lock-only xmax of a transaction that ended does not block anyone, and a
/// weaker lock of our own is upgraded in place.
#[test]
fn ended_lockers_do_not_block_and_own_locks_upgrade() {
    let (_dir, engine, r, tids) = setup(1);
    let tid = tids[0];
    let mut t1 = engine.backend(71).unwrap();
    t1.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    assert_eq!(heap_lock_tuple(&mut t1, r, tid, RowLockMode::KeyShare, WaitPolicy::Block, REL).unwrap(), LockOutcome::Locked);
    assert_eq!(heap_lock_tuple(&mut t1, r, tid, RowLockMode::Exclusive, WaitPolicy::Block, REL).unwrap(), LockOutcome::Locked);
    // Now FOR UPDATE: another session's KEY SHARE NOWAIT must fail.
    let t2: Session<Out> = Session::start(&engine, 72, IsolationLevel::ReadCommitted);
    let res = t2.run(move |b| {
        Ok(format!("{:?}", heap_lock_tuple(b, r, tid, RowLockMode::KeyShare, WaitPolicy::NoWait, REL).map_err(err)?))
    });
    assert_eq!(res, Err(("55P03".into(), "could not obtain lock on row in relation \"t\"".into())));
    t1.txn.commit().unwrap();
    let res = t2.run(move |b| {
        Ok(format!("{:?}", heap_lock_tuple(b, r, tid, RowLockMode::Exclusive, WaitPolicy::NoWait, REL).map_err(err)?))
    });
    assert_eq!(res, Ok("Locked".into()));
}

#[test]
fn nowait_errors_and_skip_locked_skips() {
    let (_dir, engine, r, tids) = setup(2);
    let (a, b_tid) = (tids[0], tids[1]);
    let mut t1 = engine.backend(81).unwrap();
    t1.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    // Row a: locked FOR UPDATE; row b: updated (uncommitted).
    heap_lock_tuple(&mut t1, r, a, RowLockMode::Exclusive, WaitPolicy::Block, REL).unwrap();
    heap_update(&mut t1, r, b_tid, &row(2, "t1"), upd(true)).unwrap();
    let t2: Session<Out> = Session::start(&engine, 82, IsolationLevel::ReadCommitted);
    let nowait_err = Err(("55P03".to_string(), "could not obtain lock on row in relation \"t\"".to_string()));
    for tid in [a, b_tid] {
        let res = t2.run(move |b| {
            Ok(format!("{:?}", heap_lock_tuple(b, r, tid, RowLockMode::Share, WaitPolicy::NoWait, REL).map_err(err)?))
        });
        assert_eq!(res, nowait_err);
        let res = t2.run(move |b| {
            let o = UpdateOptions { wait_policy: WaitPolicy::NoWait, ..upd(true) };
            Ok(format!("{:?}", heap_update(b, r, tid, &row(1, "x"), o).map_err(err)?))
        });
        assert_eq!(res, nowait_err);
        let res = t2.run(move |b| {
            let o = DeleteOptions { wait_policy: WaitPolicy::NoWait, relname: REL, toast_desc: None };
            Ok(format!("{:?}", heap_delete_ext(b, r, tid, o).map_err(err)?))
        });
        assert_eq!(res, nowait_err);
        let res = t2.run(move |b| {
            Ok(format!("{:?}", heap_lock_tuple(b, r, tid, RowLockMode::Exclusive, WaitPolicy::SkipLocked, REL).map_err(err)?))
        });
        assert_eq!(res, Ok("Skipped".into()));
        let res = t2.run(move |b| {
            let o = UpdateOptions { wait_policy: WaitPolicy::SkipLocked, ..upd(true) };
            Ok(format!("{:?}", heap_update(b, r, tid, &row(1, "x"), o).map_err(err)?))
        });
        assert_eq!(res, Ok("Skipped".into()));
    }
    assert_not_blocked(&engine, 82);
    // NOWAIT and SKIP LOCKED left no lock of T2 behind: T1 can still change row a.
    assert!(matches!(heap_update(&mut t1, r, a, &row(1, "t1"), upd(true)).unwrap(), UpdateOutcome::Ok { .. }));
    assert!(!engine.locks.lock_status().iter().any(|l| l.pid == Some(82) && l.locktype == "tuple"));
    t1.txn.commit().unwrap();
    drop(t2);
    assert_eq!(rows(&engine, r), vec![(1, "t1".into()), (2, "t1".into())]);
}

/// T1 updates row 1, T2 row 2; then each updates the other's row: a cycle through
/// the xid locks. Exactly one gets 40P01; the other then finishes.
#[test]
fn deadlock_between_two_row_updates() {
    let (_dir, engine, r, tids) = setup(2);
    let (r1, r2) = (tids[0], tids[1]);
    let t1: Session<Out> = Session::start(&engine, 91, IsolationLevel::ReadCommitted);
    let t2: Session<Out> = Session::start(&engine, 92, IsolationLevel::ReadCommitted);
    let step = |tid: Tid, v: &'static str| {
        move |b: &mut Backend| Ok(format!("{:?}", heap_update(b, r, tid, &row(0, v), upd(true)).map_err(err)?))
    };
    assert!(t1.run(step(r1, "a")).unwrap().starts_with("Ok"));
    assert!(t2.run(step(r2, "b")).unwrap().starts_with("Ok"));
    t1.send(step(r2, "c"));
    wait_until_blocked(&engine, 91);
    t2.send(step(r1, "d"));
    // The victim's error comes back; it then rolls back and the other finishes.
    let (first, second) = loop {
        if let Some(res) = t1.try_recv() {
            break (res, 1);
        }
        if let Some(res) = t2.try_recv() {
            break (res, 2);
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let (e_state, e_text) = first.expect_err("the first to return is the deadlock victim");
    assert_eq!(e_state, "40P01", "{e_text}");
    let (victim, survivor) = if second == 1 { (&t1, &t2) } else { (&t2, &t1) };
    victim
        .run(|b| {
            b.txn.abort().unwrap();
            Ok(String::new())
        })
        .unwrap();
    let res = survivor.recv();
    assert!(res.as_ref().is_ok_and(|s| s.starts_with("Ok")), "{res:?}");
    survivor
        .run(|b| {
            b.txn.commit().unwrap();
            Ok(String::new())
        })
        .unwrap();
    let vals: Vec<String> = rows(&engine, r).into_iter().map(|x| x.1).collect();
    let expect: Vec<String> = if second == 1 { vec!["d".into(), "b".into()] } else { vec!["a".into(), "c".into()] };
    let mut got = vals.clone();
    got.sort();
    let mut exp = expect.clone();
    exp.sort();
    assert_eq!(got, exp, "only the survivor's changes remain");
}

#[test]
fn savepoint_rollback_makes_the_old_version_live_again() {
    let (_dir, engine, r, tids) = setup(1);
    let mut b = engine.backend(101).unwrap();
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    b.txn.savepoint("s").unwrap();
    let UpdateOutcome::Ok { new_tid, .. } = heap_update(&mut b, r, tids[0], &row(1, "sub"), upd(true)).unwrap() else {
        panic!()
    };
    b.txn.command_counter_increment().unwrap();
    assert_eq!(scan(&mut b, r), vec![(1, "sub".into())]);
    b.txn.rollback_to("s").unwrap();
    b.txn.command_counter_increment().unwrap();
    assert_eq!(scan(&mut b, r), vec![(1, "v1".into())]);
    // The old version can be updated again, and another session is not blocked by
    // the aborted subtransaction.
    let out = heap_update(&mut b, r, tids[0], &row(1, "again"), upd(true)).unwrap();
    assert!(matches!(out, UpdateOutcome::Ok { .. }), "{out:?}");
    assert_ne!(out, UpdateOutcome::Ok { new_tid, hot: true });
    b.txn.commit().unwrap();
    assert_eq!(rows(&engine, r), vec![(1, "again".into())]);
}

/// Updates inserted and updated in the same transaction set HEAP_COMBOCID: the
/// transaction still sees the right version at each command.
#[test]
fn update_of_own_insert_uses_combo_cid() {
    let (_dir, engine, r, _) = setup(0);
    let mut b = engine.backend(111).unwrap();
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let tid = heap_insert(&mut b, r, &row(1, "ins")).unwrap();
    b.txn.command_counter_increment().unwrap();
    let snap_after_insert = b.txn.statement_snapshot().unwrap();
    let UpdateOutcome::Ok { new_tid, .. } = heap_update(&mut b, r, tid, &row(1, "upd"), upd(true)).unwrap() else {
        panic!()
    };
    b.txn.command_counter_increment().unwrap();
    // The snapshot of the command between insert and update sees the inserted version.
    assert_eq!(decode(&heap_fetch(&b, r, tid, &snap_after_insert).unwrap().unwrap()).1, "ins");
    assert!(heap_fetch(&b, r, new_tid, &snap_after_insert).unwrap().is_none());
    assert_eq!(scan(&mut b, r), vec![(1, "upd".into())]);
    b.txn.commit().unwrap();
    assert_eq!(rows(&engine, r), vec![(1, "upd".into())]);
}

/// Same-page and cross-page updates, a delete, a row lock and an uncommitted
/// update, then a restart: after a clean shutdown, and after a crash (the engine
/// dropped without shutdown, so redo replays the update records).
#[test]
fn updates_survive_restart_and_crash_redo() {
    for crash in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let r = rel(40001);
        let expect;
        {
            let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
            engine.create_relation(r).unwrap();
            let mut b = engine.backend(1).unwrap();
            b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
            let filler = "f".repeat(900);
            let mut tids = Vec::new();
            for k in 0..12u64 {
                tids.push(heap_insert(&mut b, r, &row(k, &filler)).unwrap());
            }
            b.txn.commit().unwrap();
            assert!(tids.iter().any(|t| t.block > 0));
            b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
            // Same page: the last row, on the last (emptier) page.
            let last = *tids.last().unwrap();
            let UpdateOutcome::Ok { new_tid: same, hot } = heap_update(&mut b, r, last, &row(11, "small"), upd(true)).unwrap()
            else {
                panic!()
            };
            assert!(hot && same.block == last.block);
            // Cross-page: a large version of a row on full block 0.
            let UpdateOutcome::Ok { new_tid: cross, hot } =
                heap_update(&mut b, r, tids[0], &row(0, &"c".repeat(3000)), upd(true)).unwrap()
            else {
                panic!()
            };
            assert!(!hot && cross.block != 0);
            // Non-HOT same-or-other page update, a delete and a lock.
            assert!(matches!(heap_update(&mut b, r, tids[1], &row(1, "nonhot"), upd(false)).unwrap(), UpdateOutcome::Ok { .. }));
            assert_eq!(heap_delete_ext(&mut b, r, tids[2], del()).unwrap(), DeleteOutcome::Ok);
            assert_eq!(heap_lock_tuple(&mut b, r, tids[3], RowLockMode::Exclusive, WaitPolicy::Block, REL).unwrap(), LockOutcome::Locked);
            b.txn.commit().unwrap();
            // An update that never commits.
            b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
            heap_update(&mut b, r, tids[4], &row(4, "uncommitted"), upd(true)).unwrap();
            let mut e: Vec<(u64, String)> = (0..12u64)
                .filter(|&k| k != 2)
                .map(|k| {
                    let v = match k {
                        0 => "c".repeat(3000),
                        1 => "nonhot".into(),
                        11 => "small".into(),
                        _ => filler.clone(),
                    };
                    (k, v)
                })
                .collect();
            e.sort();
            expect = e;
            if crash {
                // Crash: the engine goes away without a shutdown checkpoint (dropping
                // the backend only writes an abort record for the open transaction,
                // as a crash would leave it unfinished). Redo from the last
                // checkpoint replays every heap record above.
                drop(b);
                drop(engine);
            } else {
                b.txn.abort().unwrap();
                drop(b);
                assert_eq!(rows(&engine, r), expect);
                engine.shutdown().unwrap();
            }
        }
        let (engine, report) = Engine::open(dir.path(), settings()).unwrap();
        assert_eq!(report.recovered, crash);
        if crash {
            assert!(report.redo_records > 0);
        }
        let got = rows(&engine, r);
        assert!(got == expect, "crash = {crash}: got {:?}", summary(&got));
        // The recovered rows can be updated again.
        let mut b = engine.backend(2).unwrap();
        b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        let snap = b.txn.statement_snapshot().unwrap();
        let mut tid1 = None;
        heap_scan(&b, r, &snap, &mut |tid, t| {
            if decode(t).0 == 1 {
                tid1 = Some(tid);
            }
            Ok(())
        })
        .unwrap();
        assert!(matches!(heap_update(&mut b, r, tid1.unwrap(), &row(1, "after"), upd(true)).unwrap(), UpdateOutcome::Ok { .. }));
        b.txn.commit().unwrap();
        drop(b);
        engine.shutdown().unwrap();
    }
}

/// The waiting protocol: the first waiter holds the tuple lock and waits on the
/// writer's xid; later waiters queue on the tuple lock behind it (so they are
/// served in arrival order when the writer ends).
#[test]
fn waiters_queue_on_the_tuple_lock_behind_the_first() {
    let (_dir, engine, r, tids) = setup(1);
    let tid = tids[0];
    let mut t1 = engine.backend(121).unwrap();
    t1.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let UpdateOutcome::Ok { new_tid, .. } = heap_update(&mut t1, r, tid, &row(1, "t1"), upd(true)).unwrap() else {
        panic!()
    };
    let waiter = |pid| {
        let s: Session<Out> = Session::start(&engine, pid, IsolationLevel::ReadCommitted);
        s.send(move |b| Ok(format!("{:?}", heap_update(b, r, tid, &row(1, "w"), upd(true)).map_err(err)?)));
        s
    };
    let t2 = waiter(122);
    wait_until_blocked(&engine, 122);
    let t3 = waiter(123);
    wait_until_blocked(&engine, 123);
    let waits: Vec<(i32, &str)> = engine
        .locks
        .lock_status()
        .into_iter()
        .filter(|l| !l.granted)
        .map(|l| (l.pid.unwrap(), l.locktype))
        .collect();
    assert!(waits.contains(&(122, "transactionid")), "{waits:?}");
    assert!(waits.contains(&(123, "tuple")), "{waits:?}");
    // The first waiter holds the tuple lock (granted, mode Exclusive for a no-key update).
    assert!(engine
        .locks
        .lock_status()
        .iter()
        .any(|l| l.pid == Some(122) && l.locktype == "tuple" && l.granted && l.mode == "ExclusiveLock"));
    t1.txn.commit().unwrap();
    let expect = Ok(format!("{:?}", UpdateOutcome::Updated { new_tid }));
    assert_eq!(t2.recv(), expect);
    assert_eq!(t3.recv(), expect);
    // Nobody keeps a tuple lock after the call.
    assert!(!engine.locks.lock_status().iter().any(|l| l.locktype == "tuple"));
}

/// REPEATABLE READ row locking of a row changed by a transaction that committed:
/// PostgreSQL 15 says "concurrent update" both for an updated and a deleted row.
#[test]
fn rr_row_lock_after_concurrent_change() {
    for delete in [false, true] {
        let (_dir, engine, r, tids) = setup(1);
        let tid = tids[0];
        let t2: Session<Out> = Session::start(&engine, 132, IsolationLevel::RepeatableRead);
        t2.run(move |b| Ok(format!("{:?}", scan(b, r)))).unwrap();
        let mut t1 = engine.backend(131).unwrap();
        t1.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        if delete {
            assert_eq!(heap_delete_ext(&mut t1, r, tid, del()).unwrap(), DeleteOutcome::Ok);
        } else {
            assert!(matches!(heap_update(&mut t1, r, tid, &row(1, "t1"), upd(true)).unwrap(), UpdateOutcome::Ok { .. }));
        }
        t1.txn.commit().unwrap();
        // Already committed: no wait, the error at once.
        let res = t2.run(move |b| {
            Ok(format!("{:?}", heap_lock_tuple(b, r, tid, RowLockMode::Share, WaitPolicy::Block, REL).map_err(err)?))
        });
        assert_eq!(res, Err(("40001".into(), "could not serialize access due to concurrent update".into())));
        // READ COMMITTED gets the outcome instead.
        let mut t3 = engine.backend(133).unwrap();
        t3.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        let out = heap_lock_tuple(&mut t3, r, tid, RowLockMode::Share, WaitPolicy::Block, REL).unwrap();
        if delete {
            assert_eq!(out, LockOutcome::Deleted);
        } else {
            assert!(matches!(out, LockOutcome::Updated { .. }), "{out:?}");
        }
    }
}

/// Read-modify-write of counters by several sessions at once, READ COMMITTED,
/// with the EvalPlanQual-style retry on `Updated`: no increment is lost. Each
/// transaction increments two of the rows in a random order (so deadlocks
/// happen: the victim rolls back and retries), and some transactions abort on
/// purpose. At the end every counter equals the number of committed increments
/// of that row.
#[test]
fn concurrent_increments_lose_nothing() {
    use rand::{Rng, SeedableRng};
    const THREADS: u64 = 4;
    const TXNS: u64 = 40;
    const ROWS: u64 = 3;
    let (_dir, engine, r, _) = setup(0);
    {
        let mut b = engine.backend(1).unwrap();
        b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        for k in 0..ROWS {
            heap_insert(&mut b, r, &row(k, "0")).unwrap();
        }
        b.txn.commit().unwrap();
    }
    let committed: Vec<Vec<u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let engine = engine.clone();
                s.spawn(move || {
                    let mut rng = rand::rngs::SmallRng::seed_from_u64(t);
                    let mut b = engine.backend(200 + t as i32).unwrap();
                    let mut done = vec![0u64; ROWS as usize];
                    for i in 0..TXNS {
                        let a = rng.gen_range(0..ROWS);
                        let c = (a + rng.gen_range(1..ROWS)) % ROWS;
                        let abort = i % 7 == 3;
                        'retry: loop {
                            b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
                            for k in [a, c] {
                                if let Err(e) = increment(&mut b, r, k) {
                                    assert_eq!(e.sqlstate().as_str(), "40P01", "{e}");
                                    b.txn.abort().unwrap();
                                    continue 'retry;
                                }
                            }
                            if abort {
                                b.txn.abort().unwrap();
                            } else {
                                b.txn.commit().unwrap();
                                done[a as usize] += 1;
                                done[c as usize] += 1;
                            }
                            break;
                        }
                    }
                    done
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let expect: Vec<(u64, String)> =
        (0..ROWS).map(|k| (k, committed.iter().map(|d| d[k as usize]).sum::<u64>().to_string())).collect();
    assert_eq!(rows(&engine, r), expect);
}

/// Regression (lost updates through a primary key under pgbench): sessions
/// increment one row found the way an index scan finds it, through the chain
/// roots an index would hold (the first version, then every non-HOT new version)
/// and `heap_hot_fetch`. The versions pile up as HOT chain members until the page
/// is full and pruning starts. Concurrent updaters take their xids before queueing
/// for the row, so the xmaxes along the chain are out of order; pruning used to
/// stop at a RecentlyDead member and free a Dead member behind it, which cut the
/// chain: the row could no longer be found from its root, and every later
/// increment found nothing.
#[test]
fn concurrent_hot_updates_keep_the_row_reachable_from_its_root() {
    const THREADS: u64 = 4;
    const UPDATES: u64 = 250;
    let (_dir, engine, r, tids) = setup(1);
    // The "index": every root an index entry would point to.
    let roots = std::sync::Mutex::new(tids);
    let find = |b: &mut Backend, snap: &ferrogres_engine::txn::snapshot::Snapshot| -> Option<(Tid, Vec<u8>)> {
        let roots = roots.lock().unwrap().clone();
        roots.iter().find_map(|root| heap_hot_fetch(b, r, *root, snap).unwrap())
    };
    let done: u64 = std::thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                let (engine, roots, find) = (engine.clone(), &roots, &find);
                s.spawn(move || {
                    let mut b = engine.backend(300 + t as i32).unwrap();
                    for i in 0..UPDATES {
                        b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
                        let snap = b.txn.statement_snapshot().unwrap();
                        let found = find(&mut b, &snap);
                        let (mut tid, mut t) = found.unwrap_or_else(|| panic!("session {t}, update {i}: the row is not reachable from any root"));
                        loop {
                            let (k, v) = decode(&t);
                            let v: u64 = v.parse().unwrap_or(0);
                            match heap_update(&mut b, r, tid, &row(k, &(v + 1).to_string()), upd(true)).unwrap() {
                                UpdateOutcome::Ok { new_tid, hot } => {
                                    if !hot {
                                        roots.lock().unwrap().push(new_tid);
                                    }
                                    break;
                                }
                                UpdateOutcome::Updated { .. } => {
                                    let snap = b.txn.statement_snapshot().unwrap();
                                    (tid, t) = heap_fetch_latest(&b, r, tid, &snap).unwrap().expect("the row is never deleted");
                                }
                                other => panic!("unexpected {other:?}"),
                            }
                        }
                        b.txn.commit().unwrap();
                    }
                    UPDATES
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).sum()
    });
    let mut b = engine.backend(999).unwrap();
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let snap = b.txn.statement_snapshot().unwrap();
    let (_, t) = find(&mut b, &snap).expect("the row is reachable from a root");
    // The first version's "v1" reads as 0: the value is the number of increments.
    assert_eq!(decode(&t).1, done.to_string());
    assert_eq!(scan(&mut b, r), vec![(1, done.to_string())]);
    b.txn.commit().unwrap();
}

/// One statement `UPDATE t SET v = v + 1 WHERE k = key` in READ COMMITTED: find the
/// row with a statement snapshot, update it; on `Updated`, re-fetch the newest
/// version with a new snapshot and try again on it (EvalPlanQual).
fn increment(b: &mut Backend, r: RelFileLocator, key: u64) -> ferrogres_engine::error::Result<()> {
    let snap = b.txn.statement_snapshot()?;
    let mut found = None;
    heap_scan(b, r, &snap, &mut |tid, t| {
        if decode(t).0 == key {
            found = Some((tid, t.to_vec()));
        }
        Ok(())
    })?;
    let (mut tid, mut t) = found.expect("the row exists");
    loop {
        let v: u64 = decode(&t).1.parse().unwrap();
        match heap_update(b, r, tid, &row(key, &(v + 1).to_string()), upd(true))? {
            UpdateOutcome::Ok { .. } => break,
            UpdateOutcome::Updated { .. } => {
                let snap = b.txn.statement_snapshot()?;
                let (latest, lt) = heap_fetch_latest(b, r, tid, &snap)?.expect("counters are never deleted");
                tid = latest;
                t = lt;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    b.txn.command_counter_increment()?;
    Ok(())
}
