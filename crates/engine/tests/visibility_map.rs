//! The visibility map is never wrong: after VACUUMs, inserts, HOT and cross-page
//! updates, deletes, row locks, concurrent workloads, crashes and kill -9, every
//! heap page whose map bit is set has PD_ALL_VISIBLE and only tuples visible to
//! every snapshot (all-frozen: only frozen ones). And a VACUUM of an unchanged
//! table reads no heap page.
#![cfg(not(loom))]

mod common;

use common::child::run_then_kill;
use common::{del, rel, row, settings, upd};
use ferrogres_engine::engine::{Backend, Engine};
use ferrogres_engine::heap::heapam::{self, heap_delete_ext, heap_insert, heap_lock_tuple, heap_update, UpdateOutcome, WaitPolicy};
use ferrogres_engine::heap::page::RowLockMode;
use ferrogres_engine::heap::pruneheap::visibility_info;
use ferrogres_engine::heap::tuple::{Tid, TupleHeader};
use ferrogres_engine::heap::vacuum::{vacuum_rel, VacuumOptions, VacuumStats};
use ferrogres_engine::heap::visibilitymap::{vm_count, vm_get_status, VM_ALL_FROZEN, VM_ALL_VISIBLE};
use ferrogres_engine::storage::page::{page_get_item, page_get_item_id, page_has_flag, page_max_offset_number, LpFlags, PD_ALL_VISIBLE};
use ferrogres_engine::storage::{BufferTag, ForkNumber, RelFileLocator};
use ferrogres_engine::txn::visibility::{satisfies_mvcc, satisfies_vacuum, HtsvResult};
use ferrogres_engine::txn::xid::{xid_is_normal, xid_precedes};
use ferrogres_engine::txn::IsolationLevel;
use rand::{Rng, SeedableRng};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn nblocks(engine: &Engine, r: RelFileLocator) -> u32 {
    engine.buffers.nblocks(r, ForkNumber::Main).unwrap()
}

fn vacuum(engine: &Arc<Engine>, r: RelFileLocator, freeze: bool) -> VacuumStats {
    let mut opts = VacuumOptions::from_settings(engine.settings());
    opts.freeze = freeze;
    // No index: dead TIDs need no cleanup elsewhere.
    vacuum_rel(engine, None, r, opts, &mut |_| Ok(())).unwrap()
}

/// Checks the map's promise for every heap page of `r`, each under the heap page's
/// shared lock (the map bit cannot change while it is held: clears happen under the
/// exclusive lock, sets under the cleanup lock). A page marked all-visible must have
/// PD_ALL_VISIBLE and no LP_DEAD item, and each of its tuples must be `Live` for the
/// current horizon with an xmin frozen or before it, and visible to a snapshot taken
/// now; all-frozen also needs frozen xmins and no xmax. Returns the number of pages
/// marked all-visible and all-frozen.
fn check_vm(engine: &Arc<Engine>, r: RelFileLocator) -> (u32, u32) {
    let mut b = engine.backend(900).unwrap();
    let (mut visible, mut frozen) = (0, 0);
    for blk in 0..nblocks(engine, r) {
        b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        let snap = b.txn.statement_snapshot().unwrap();
        let pin = engine.buffers.read_buffer(BufferTag::new(r, ForkNumber::Main, blk), None).unwrap();
        let page = pin.lock_shared();
        let bits = vm_get_status(engine, r, blk).unwrap();
        let horizon = engine.txn.oldest_xmin();
        if bits != 0 {
            assert!(bits & VM_ALL_VISIBLE != 0, "block {blk}: all-frozen without all-visible");
            assert!(page_has_flag(&page[..], PD_ALL_VISIBLE), "block {blk}: map bit set, PD_ALL_VISIBLE not");
            visible += 1;
            frozen += (bits & VM_ALL_FROZEN != 0) as u32;
            for off in 1..=page_max_offset_number(&page[..]) {
                match page_get_item_id(&page[..], off).unwrap().flags {
                    LpFlags::Dead => panic!("block {blk} marked all-visible has LP_DEAD item {off}"),
                    LpFlags::Normal => {}
                    _ => continue,
                }
                let h = TupleHeader::read(page_get_item(&page[..], off).unwrap()).unwrap();
                let info = visibility_info(&h, Tid::new(blk, off));
                let (res, _) = satisfies_vacuum(&info, horizon, &*b.txn).unwrap();
                assert_eq!(res, HtsvResult::Live, "block {blk} offset {off} marked all-visible: {h:?}");
                let xmin_frozen = h.xmin_frozen() || !xid_is_normal(h.xmin);
                assert!(xmin_frozen || xid_precedes(h.xmin, horizon), "block {blk} offset {off}: xmin {} not before horizon {horizon}", h.xmin);
                assert!(satisfies_mvcc(&info, &snap, &*b.txn).unwrap().visible, "block {blk} offset {off} not visible to a new snapshot");
                if bits & VM_ALL_FROZEN != 0 {
                    assert!(xmin_frozen && !xid_is_normal(h.xmax), "block {blk} offset {off} marked all-frozen: {h:?}");
                }
            }
        }
        drop(page);
        b.txn.commit().unwrap();
    }
    (visible, frozen)
}

fn insert_rows(b: &mut Backend, r: RelFileLocator, keys: std::ops::Range<u64>, len: usize) -> Vec<Tid> {
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let tids = keys.map(|k| heap_insert(b, r, &row(k, &"x".repeat(len))).unwrap()).collect();
    b.txn.commit().unwrap();
    tids
}

fn pool_accesses(engine: &Engine) -> u64 {
    let s = engine.buffers.stats();
    s.hits + s.reads
}

#[test]
fn vacuum_sets_bits_changes_clear_them_and_unchanged_pages_are_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    let r = rel(61000);
    engine.create_relation(r).unwrap();
    let mut b = engine.backend(1).unwrap();
    let tids = insert_rows(&mut b, r, 0..6000, 200);
    let n = nblocks(&engine, r);
    assert!(n >= 100, "{n} blocks");
    assert_eq!(check_vm(&engine, r), (0, 0), "nothing is marked before a VACUUM");

    let before = pool_accesses(&engine);
    let st = vacuum(&engine, r, false);
    let first_accesses = pool_accesses(&engine) - before;
    assert_eq!((st.pages_scanned, st.pages_skipped_vm), (n as u64, 0));
    assert_eq!((st.pages_set_all_visible, st.pages_set_all_frozen), (n as u64, 0), "young xmins are not frozen");
    assert_eq!(check_vm(&engine, r), (n, 0));
    assert_eq!(vm_count(&engine, r, n).unwrap(), (n, 0));
    assert!(dir.path().join(ferrogres_engine::storage::smgr::Smgr::rel_path(r, ForkNumber::VisibilityMap, 0)).exists(), "the _vm file");

    // A second VACUUM of the unchanged table reads no heap page.
    let before = pool_accesses(&engine);
    let st = vacuum(&engine, r, false);
    let second_accesses = pool_accesses(&engine) - before;
    assert_eq!((st.pages_scanned, st.pages_skipped_vm, st.pages_skipped_unfrozen), (0, n as u64, n as u64));
    assert_eq!(st.new_relfrozenxid, 0, "unfrozen pages skipped: relfrozenxid cannot advance");
    assert!(first_accesses >= n as u64, "first VACUUM: {first_accesses} buffer accesses");
    assert!(second_accesses <= 10, "second VACUUM: {second_accesses} buffer accesses for {n} heap pages");

    // VACUUM FREEZE reads the all-visible pages that are not all-frozen and freezes them.
    let st = vacuum(&engine, r, true);
    assert_eq!((st.pages_scanned, st.pages_set_all_frozen), (n as u64, n as u64));
    assert_ne!(st.new_relfrozenxid, 0);
    assert_eq!(check_vm(&engine, r), (n, n));
    assert_eq!(vm_count(&engine, r, n).unwrap(), (n, n));
    let st = vacuum(&engine, r, true);
    assert_eq!((st.pages_scanned, st.pages_skipped_unfrozen), (0, 0), "an all-frozen table is skipped by VACUUM FREEZE");
    assert_ne!(st.new_relfrozenxid, 0, "only all-frozen pages skipped: relfrozenxid may advance");

    // Each kind of change takes its page's bits away.
    let (upd_blk, del_blk, lock_blk) = (tids[200].block, tids[2000].block, tids[4000].block);
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let UpdateOutcome::Ok { new_tid, .. } = heap_update(&mut b, r, tids[200], &row(200, "short"), upd(true)).unwrap() else {
        panic!("update")
    };
    assert_eq!(vm_get_status(&engine, r, upd_blk).unwrap(), 0, "update clears its page");
    assert_eq!(vm_get_status(&engine, r, new_tid.block).unwrap(), 0, "and the new version's page");
    heap_delete_ext(&mut b, r, tids[2000], del()).unwrap();
    assert_eq!(vm_get_status(&engine, r, del_blk).unwrap(), 0, "delete clears its page");
    heap_lock_tuple(&mut b, r, tids[4000], RowLockMode::Share, WaitPolicy::Block, "t").unwrap();
    assert_eq!(vm_get_status(&engine, r, lock_blk).unwrap(), VM_ALL_VISIBLE, "a row lock clears only all-frozen");
    let ins = heap_insert(&mut b, r, &row(9999, "new")).unwrap();
    assert_eq!(vm_get_status(&engine, r, ins.block).unwrap(), 0, "insert clears its page");
    check_vm(&engine, r);
    b.txn.commit().unwrap();
    check_vm(&engine, r);

    // The next VACUUM reads the changed pages (and short runs around them), skips
    // the long runs, and marks the changed pages again once their dead tuples are gone.
    let st = vacuum(&engine, r, false);
    assert!(st.pages_scanned < n as u64 / 2 && st.pages_skipped_vm > n as u64 / 2, "{st:?}");
    assert!(st.tuples_removed + st.dead_items_removed >= 2, "{st:?}");
    let (visible, _) = check_vm(&engine, r);
    assert_eq!(visible, nblocks(&engine, r), "every page all-visible again");
    drop(b);
    engine.shutdown().unwrap();
}

/// Redo: a VACUUM's bits are set again from the WAL after a crash that lost the
/// pages, and a delete's clear is redone after a crash that lost it while the page
/// and map on disk still had the bits.
#[test]
fn redo_sets_and_clears_the_bits() {
    let dir = tempfile::tempdir().unwrap();
    let r = rel(61001);
    let n;
    let victim;
    {
        let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
        engine.create_relation(r).unwrap();
        let mut b = engine.backend(1).unwrap();
        let tids = insert_rows(&mut b, r, 0..3000, 200);
        victim = tids[1500];
        engine.checkpoint().unwrap();
        vacuum(&engine, r, false);
        n = nblocks(&engine, r);
        engine.wal.background_flush().unwrap();
        drop(b);
        // Crash: no page written since the checkpoint.
    }
    {
        let (engine, rep) = Engine::open(dir.path(), settings()).unwrap();
        assert!(rep.recovered);
        assert_eq!(check_vm(&engine, r), (n, 0), "redo of the VACUUM's records set every page's bits");
        // Bits on disk, then a delete whose clear is lost with the crash.
        engine.checkpoint().unwrap();
        let mut b = engine.backend(1).unwrap();
        b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
        heap_delete_ext(&mut b, r, victim, del()).unwrap();
        b.txn.commit().unwrap();
        engine.wal.background_flush().unwrap();
        drop(b);
    }
    let (engine, rep) = Engine::open(dir.path(), settings()).unwrap();
    assert!(rep.recovered);
    assert_eq!(vm_get_status(&engine, r, victim.block).unwrap(), 0, "redo of the delete cleared the bit");
    assert_eq!(check_vm(&engine, r), (n - 1, 0));
    engine.shutdown().unwrap();
}

/// A random workload: `threads` sessions inserting, updating (HOT or not),
/// deleting and locking rows, committing or aborting, until `stop`.
fn workload(engine: &Arc<Engine>, r: RelFileLocator, threads: usize, seed: u64, stop: &Arc<AtomicBool>) -> Vec<std::thread::JoinHandle<()>> {
    let live: Arc<Mutex<Vec<Tid>>> = Arc::new(Mutex::new(Vec::new()));
    (0..threads)
        .map(|t| {
            let (engine, live, stop) = (engine.clone(), live.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut rng = rand::rngs::SmallRng::seed_from_u64(seed ^ (t as u64 * 7919));
                let mut b = engine.backend(100 + t as i32).unwrap();
                let mut key = (t as u64) << 40;
                while !stop.load(Ordering::Relaxed) {
                    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
                    let mut made = Vec::new();
                    for _ in 0..rng.gen_range(1..8) {
                        let pick = {
                            let l = live.lock().unwrap();
                            (!l.is_empty()).then(|| l[rng.gen_range(0..l.len())])
                        };
                        let r_ = match (rng.gen_range(0..10), pick) {
                            (0..=3, _) | (_, None) => {
                                key += 1;
                                heap_insert(&mut b, r, &row(key, &"i".repeat(rng.gen_range(10..300)))).map(|tid| made.push(tid))
                            }
                            (4..=6, Some(tid)) => {
                                let new = row(key, &"u".repeat(rng.gen_range(10..300)));
                                heap_update(&mut b, r, tid, &new, upd(rng.gen_bool(0.7))).map(|o| {
                                    if let UpdateOutcome::Ok { new_tid, .. } = o {
                                        made.push(new_tid)
                                    }
                                })
                            }
                            (7..=8, Some(tid)) => heap_delete_ext(&mut b, r, tid, del()).map(|_| ()),
                            (_, Some(tid)) => heap_lock_tuple(&mut b, r, tid, RowLockMode::KeyShare, WaitPolicy::Block, "t").map(|_| ()),
                        };
                        if r_.is_err() {
                            // A deadlock victim: give up the transaction.
                            made.clear();
                            break;
                        }
                    }
                    if made.is_empty() && rng.gen_ratio(1, 2) || rng.gen_ratio(1, 6) {
                        b.txn.abort().unwrap();
                    } else {
                        b.txn.commit().unwrap();
                        let mut l = live.lock().unwrap();
                        l.extend(made);
                        if l.len() > 3000 {
                            let cut = l.len() - 3000;
                            l.drain(..cut);
                        }
                    }
                }
            })
        })
        .collect()
}

#[test]
fn concurrent_changes_and_vacuums_never_leave_a_wrong_bit() {
    let dir = tempfile::tempdir().unwrap();
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    let r = rel(61002);
    engine.create_relation(r).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let workers = workload(&engine, r, 4, 0xA11_715, &stop);
    let deadline = Instant::now() + Duration::from_secs(8);
    let mut rounds = 0;
    let mut marked = 0;
    while Instant::now() < deadline {
        vacuum(&engine, r, rounds % 3 == 2);
        marked += check_vm(&engine, r).0;
        rounds += 1;
    }
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    vacuum(&engine, r, false);
    let (visible, _) = check_vm(&engine, r);
    assert!(rounds >= 3 && marked > 0 && visible > 0, "{rounds} rounds, {marked} pages seen marked, {visible} at the end");
    engine.shutdown().unwrap();
}

const CHILD_ENV: &str = "FERROGRES_VM_CHILD_DIR";
const CRASH_REL: u32 = 61003;

/// The child of the kill -9 test: the random workload, VACUUMs and checkpoints,
/// until killed.
#[test]
#[ignore = "child process of vm_is_right_after_kill_9"]
fn vm_crash_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else { return };
    let seed: u64 = std::env::var("FERROGRES_VM_SEED").unwrap().parse().unwrap();
    let (engine, _) = Engine::open(&dir, settings()).unwrap();
    let r = rel(CRASH_REL);
    if !engine.smgr.exists(r, ForkNumber::Main) {
        engine.create_relation(r).unwrap();
    }
    println!("READY");
    let stop = Arc::new(AtomicBool::new(false));
    let _workers = workload(&engine, r, 3, seed, &stop);
    for round in 0u64.. {
        vacuum(&engine, r, round % 3 == 1);
        if round % 4 == 3 {
            engine.checkpoint().unwrap();
        }
        println!("V {round}");
    }
}

#[test]
fn vm_is_right_after_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let r = rel(CRASH_REL);
    let mut vacuums = 0;
    for kill in 0..4u64 {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args(["--ignored", "--exact", "vm_crash_child", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, dir.path())
            .env("FERROGRES_VM_SEED", (0x5EED + kill).to_string());
        let end = run_then_kill(cmd, Duration::from_secs(60), Duration::from_millis(2500 + 700 * kill));
        assert!(end.status.code().is_none(), "the child was killed, not ended: {}\n{}", end.status, end.stderr);
        vacuums += end.lines.iter().filter(|l| l.starts_with("V ")).count();
        let (engine, rep) = Engine::open(dir.path(), settings()).unwrap();
        assert!(rep.recovered);
        check_vm(&engine, r);
        // And it stays right when used after recovery.
        vacuum(&engine, r, false);
        check_vm(&engine, r);
        engine.shutdown().unwrap();
    }
    assert!(vacuums >= 4, "the children ran {vacuums} VACUUMs");
    let (engine, _) = Engine::open(dir.path(), settings()).unwrap();
    assert!(check_vm(&engine, r).0 > 0, "pages are marked after the last VACUUM");
    // The table is usable: every row a scan returns decodes.
    let mut b = engine.backend(1).unwrap();
    b.txn.begin(IsolationLevel::ReadCommitted).unwrap();
    let snap = b.txn.statement_snapshot().unwrap();
    heapam::heap_scan(&b, r, &snap, &mut |_, t| {
        common::decode(t);
        Ok(())
    })
    .unwrap();
    b.txn.commit().unwrap();
    drop(b);
    engine.shutdown().unwrap();
}
