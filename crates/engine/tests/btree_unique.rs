//! Unique B-tree indexes with MVCC, through the real heap and transactions:
//! a committed duplicate is refused with 23505 and PostgreSQL's message and
//! detail; a duplicate whose inserter is still running makes the second inserter
//! wait for it, then fail if it committed or succeed if it aborted; a committed
//! deleted row does not conflict.
#![cfg(not(loom))]

use ferrogres_engine::config::Settings;
use ferrogres_engine::engine::{Backend, Engine, DEFAULT_TABLESPACE_OID, POSTGRES_DATABASE_OID};
use ferrogres_engine::heap::heapam;
use ferrogres_engine::heap::page::heap_page_get_tuple;
use ferrogres_engine::heap::tuple::{form_tuple, AttrDesc, Datum, Tid, TupleHeader};
use ferrogres_engine::nbtree::{BTree, BuiltinComparator, HeapVisibility, KeyKind, UniqueCheck};
use ferrogres_engine::storage::{BufferTag, ForkNumber, RelFileLocator};
use ferrogres_engine::txn::visibility::{satisfies_dirty, DirtyResult, TupleVisibilityInfo};
use ferrogres_engine::txn::IsolationLevel;
use ferrogres_engine::Result;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

const HEAP: RelFileLocator = RelFileLocator { spc_oid: DEFAULT_TABLESPACE_OID, db_oid: POSTGRES_DATABASE_OID, rel_number: 42000 };
const INDEX: RelFileLocator = RelFileLocator { spc_oid: DEFAULT_TABLESPACE_OID, db_oid: POSTGRES_DATABASE_OID, rel_number: 42001 };

/// The heap side of the unique check: satisfies_dirty on the heap tuple.
struct HeapCheck<'a> {
    backend: &'a Backend,
}

impl HeapVisibility for HeapCheck<'_> {
    fn satisfies_dirty(&self, tid: Tid) -> Result<DirtyResult> {
        let engine = self.backend.engine();
        let pin = engine.buffers.read_buffer(BufferTag::new(HEAP, ForkNumber::Main, tid.block), None)?;
        let page = pin.lock_shared();
        let t = heap_page_get_tuple(&page, tid.offset)?;
        let h = TupleHeader::read(t)?;
        let info = TupleVisibilityInfo { xmin: h.xmin, xmax: h.xmax, cid: h.cid, infomask: h.infomask, ctid_is_self: h.ctid == tid };
        satisfies_dirty(&info, &*self.backend.txn)
    }
}

fn tree() -> BTree {
    BTree::new(INDEX, vec![AttrDesc::fixed(8)], Arc::new(BuiltinComparator(vec![KeyKind::Int8])), true)
}

fn format_key(v: &[Option<Datum>]) -> (String, String) {
    match v[0] {
        Some(Datum::ByVal(x)) => ("id".into(), (x as i64).to_string()),
        _ => ("id".into(), "NULL".into()),
    }
}

/// INSERT INTO t VALUES (key): heap row, then the unique index entry.
fn insert_row(b: &mut Backend, t: &BTree, key: i64) -> Result<Tid> {
    let vals = [Some(Datum::ByVal(key as u64))];
    let tid = heapam::heap_insert(b, HEAP, &form_tuple(&[AttrDesc::fixed(8)], &vals)?)?;
    let check = HeapCheck { backend: b };
    let uc = UniqueCheck { backend: b.id(), heap: &check, index_name: "t_pkey", format_key: &format_key };
    t.insert(b.engine(), &vals, tid, Some(&uc))?;
    Ok(tid)
}

fn open() -> (tempfile::TempDir, Arc<Engine>) {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Settings::default();
    s.set("shared_buffers", "64").unwrap();
    let (engine, _) = Engine::open(dir.path(), s).unwrap();
    engine.create_relation(HEAP).unwrap();
    tree().create(&engine).unwrap();
    (dir, engine)
}

#[test]
fn committed_duplicate_is_refused_and_deleted_one_is_not() {
    let (_dir, engine) = open();
    let t = tree();
    let mut b = engine.backend(1).unwrap();
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    for k in 0..3000 {
        insert_row(&mut b, &t, k).unwrap();
    }
    b.txn.commit().unwrap();
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let e = insert_row(&mut b, &t, 1234).unwrap_err();
    assert_eq!(e.sqlstate().as_str(), "23505");
    assert_eq!(e.to_string(), "duplicate key value violates unique constraint \"t_pkey\"");
    match &e {
        ferrogres_engine::Error::User { detail, .. } => {
            assert_eq!(detail.as_deref(), Some("Key (id)=(1234) already exists."))
        }
        other => panic!("{other:?}"),
    }
    b.txn.abort().unwrap();
    // Our own uncommitted row conflicts too.
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    insert_row(&mut b, &t, 5000).unwrap();
    assert_eq!(insert_row(&mut b, &t, 5000).unwrap_err().sqlstate().as_str(), "23505");
    b.txn.abort().unwrap();
    // A row deleted by a committed transaction does not conflict; an aborted
    // insert's entry does not either.
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let tid = find_heap_tid(&b, &t, 77);
    assert_eq!(heapam::heap_delete(&mut b, HEAP, tid).unwrap(), ferrogres_engine::txn::visibility::TmResult::Ok);
    b.txn.commit().unwrap();
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    insert_row(&mut b, &t, 77).unwrap();
    insert_row(&mut b, &t, 5000).unwrap();
    b.txn.commit().unwrap();
    t.check_invariants(&engine).unwrap();
}

fn find_heap_tid(b: &Backend, t: &BTree, key: i64) -> Tid {
    let tids: Vec<Tid> = t
        .scan(b.engine(), ferrogres_engine::nbtree::ScanBounds::eq(vec![Some(Datum::ByVal(key as u64))]))
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(tids.len(), 1);
    tids[0]
}

/// Two transactions insert the same key: the second waits for the first, then
/// gets 23505 if the first commits, or goes ahead if it aborts.
fn racing_duplicates(first_commits: bool, key: i64) {
    let (_dir, engine) = open();
    let (to_a, a_rx) = mpsc::channel::<bool>();
    let (a_ready_tx, a_ready) = mpsc::channel::<()>();
    let ea = engine.clone();
    let a = std::thread::spawn(move || {
        let t = tree();
        let mut b = ea.backend(1).unwrap();
        b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        insert_row(&mut b, &t, key).unwrap();
        a_ready_tx.send(()).unwrap();
        if a_rx.recv().unwrap() {
            b.txn.commit().unwrap();
        } else {
            b.txn.abort().unwrap();
        }
    });
    a_ready.recv().unwrap();
    let (b_done_tx, b_done) = mpsc::channel::<Result<Tid>>();
    let eb = engine.clone();
    let bth = std::thread::spawn(move || {
        let t = tree();
        let mut b = eb.backend(2).unwrap();
        b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        let r = insert_row(&mut b, &t, key);
        let ok = r.is_ok();
        b_done_tx.send(r).unwrap();
        if ok {
            b.txn.commit().unwrap();
        } else {
            b.txn.abort().unwrap();
        }
    });
    // B must be waiting for A.
    assert!(b_done.recv_timeout(Duration::from_millis(300)).is_err(), "second inserter did not wait");
    to_a.send(first_commits).unwrap();
    let r = b_done.recv_timeout(Duration::from_secs(10)).expect("second inserter still waiting");
    if first_commits {
        let e = r.unwrap_err();
        assert_eq!(e.sqlstate().as_str(), "23505", "{e}");
    } else {
        r.unwrap();
    }
    a.join().unwrap();
    bth.join().unwrap();
    tree().check_invariants(&engine).unwrap();
}

#[test]
fn second_inserter_waits_then_fails_when_first_commits() {
    racing_duplicates(true, 10);
}

#[test]
fn second_inserter_waits_then_succeeds_when_first_aborts() {
    racing_duplicates(false, 11);
}

/// 4 threads insert the same 1000 keys, each in its own transaction (3 in the same
/// order, so that they meet each other's uncommitted entries, one shuffled): every key ends with exactly one committed row, and exactly one thread
/// succeeded for it (the others waited or saw the committed row and got 23505).
#[test]
fn concurrent_inserters_of_the_same_keys_leave_exactly_one_each() {
    let (_dir, engine) = open();
    const N: i64 = 1000;
    let wins: Vec<_> = (0..4u64)
        .map(|th| {
            let engine = engine.clone();
            std::thread::spawn(move || {
                use rand::{Rng, SeedableRng};
                let t = tree();
                let mut b = engine.backend(10 + th as i32).unwrap();
                let mut keys: Vec<i64> = (0..N).collect();
                let mut rng = rand::rngs::SmallRng::seed_from_u64(th);
                if th == 3 {
                    for i in (1..keys.len()).rev() {
                        keys.swap(i, rng.gen_range(0..=i));
                    }
                }
                let mut won = Vec::new();
                for k in keys {
                    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
                    match insert_row(&mut b, &t, k) {
                        Ok(_) => {
                            // Widen the window between the entry and the commit
                            // now and then, so that others meet it in progress.
                            if k % 4 == 0 {
                                std::thread::sleep(std::time::Duration::from_micros(200));
                            }
                            b.txn.commit().unwrap();
                            won.push(k);
                        }
                        Err(e) => {
                            assert_eq!(e.sqlstate().as_str(), "23505", "{e}");
                            b.txn.abort().unwrap();
                        }
                    }
                }
                won
            })
        })
        .collect::<Vec<_>>() // all threads run before any is joined
        .into_iter()
        .map(|h| h.join().unwrap())
        .collect::<Vec<_>>();
    let mut all: Vec<i64> = wins.into_iter().flatten().collect();
    all.sort();
    assert_eq!(all, (0..N).collect::<Vec<_>>(), "each key must be inserted exactly once");
    // The heap agrees: one visible row per key.
    let mut b = engine.backend(1).unwrap();
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let snap = b.txn.statement_snapshot().unwrap();
    let mut n = 0;
    heapam::heap_scan(&b, HEAP, &snap, &mut |_, _| {
        n += 1;
        Ok(())
    })
    .unwrap();
    assert_eq!(n, N as usize);
    b.txn.commit().unwrap();
    tree().check_invariants(&engine).unwrap();
}
