//! The predicate-lock manager (`lmgr::predicate`) under threads that really
//! interleave: many serializable transactions take SIREAD locks on random
//! tuples, pages and relations (so promotion runs in every partition at once),
//! check writes against each other, commit or abort, while a reader takes
//! pg_locks snapshots. Each transaction checks its own lock set after every
//! step (no target held together with a coarser one of the same relation,
//! every held target visible in the shared table), and at the end nothing is
//! left. A second test runs write skew between pairs of threads released by a
//! barrier: never do both commit.
#![cfg(not(loom))]

use ferrogres_engine::lmgr::predicate::{PredConfig, PredTarget, PredicateLockManager};
use ferrogres_engine::storage::RelFileLocator;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

fn rel(n: u32) -> RelFileLocator {
    RelFileLocator { spc_oid: 1663, db_oid: 5, rel_number: 16384 + n }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn random_target(r: &mut Rng) -> PredTarget {
    let rl = rel(r.next(4) as u32);
    match r.next(10) {
        0 => PredTarget::Relation(rl),
        1..=3 => PredTarget::Page(rl, r.next(40) as u32),
        _ => PredTarget::Tuple(rl, r.next(40) as u32, 1 + r.next(6) as u16),
    }
}

/// No held target is covered by another held target.
fn check_own_set(held: &[PredTarget]) {
    let set: HashSet<PredTarget> = held.iter().copied().collect();
    for t in held {
        let mut p = t.parent();
        while let Some(c) = p {
            assert!(!set.contains(&c), "{t:?} held together with {c:?}");
            p = c.parent();
        }
    }
}

#[test]
fn partitions_under_concurrent_lock_check_commit_and_abort() {
    const THREADS: usize = 8;
    const ROUNDS: usize = 150;
    let m = Arc::new(PredicateLockManager::new(PredConfig::default()));
    let done = Arc::new(AtomicBool::new(false));
    let failures = Arc::new(AtomicUsize::new(0));
    let commits = Arc::new(AtomicUsize::new(0));
    let reader = {
        let (m, done) = (m.clone(), done.clone());
        std::thread::spawn(move || {
            let mut snapshots = 0;
            while !done.load(Ordering::Relaxed) {
                for row in m.lock_status() {
                    assert!(row.virtualtransaction.contains('/'));
                }
                snapshots += 1;
            }
            snapshots
        })
    };
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (m, failures, commits) = (m.clone(), failures.clone(), commits.clone());
            std::thread::spawn(move || {
                let mut r = Rng(0x9E37_79B9_7F4A_7C15 ^ ((t as u64 + 1) * 0x1234_5678));
                for round in 0..ROUNDS {
                    let vxid = format!("{t}/{round}");
                    let x = m.register(t as i32 + 1, vxid.clone(), false);
                    m.set_top_xid(&x, 1000 + (t * ROUNDS + round) as u32);
                    let mut failed = false;
                    for _ in 0..(1 + r.next(60)) {
                        m.acquire(&x, random_target(&mut r));
                        if r.next(8) == 0 {
                            let held = m.held_targets(&x);
                            check_own_set(&held);
                            // Our own locks are in the shared table (only we
                            // add or remove them while we run).
                            let shared: HashSet<PredTarget> =
                                m.lock_status().into_iter().filter(|l| l.virtualtransaction == vxid).map(|l| l.target).collect();
                            assert_eq!(shared, held.iter().copied().collect(), "thread {t} round {round}");
                        }
                        if r.next(10) == 0 {
                            let t = random_target(&mut r);
                            let mut ts = vec![t];
                            let mut p = t.parent();
                            while let Some(c) = p {
                                ts.push(c);
                                p = c.parent();
                            }
                            if m.check_conflict_in(&x, &ts).is_err() {
                                failed = true;
                                break;
                            }
                        }
                    }
                    check_own_set(&m.held_targets(&x));
                    if !failed && r.next(4) != 0 && m.pre_commit(&x).is_ok() {
                        m.release(&x, true);
                        commits.fetch_add(1, Ordering::Relaxed);
                    } else {
                        m.release(&x, false);
                        failures.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    done.store(true, Ordering::Relaxed);
    let snapshots = reader.join().unwrap();
    eprintln!(
        "{} commits, {} aborts or failures, {snapshots} pg_locks snapshots",
        commits.load(Ordering::Relaxed),
        failures.load(Ordering::Relaxed)
    );
    assert!(commits.load(Ordering::Relaxed) > 0);
    assert_eq!(m.xact_count(), 0, "every transaction ended: nothing kept");
    assert!(m.lock_status().is_empty(), "every lock released");
}

#[test]
fn concurrent_write_skew_never_commits_both() {
    const PAIRS: usize = 4;
    const ROUNDS: usize = 200;
    let m = Arc::new(PredicateLockManager::new(PredConfig::default()));
    let mut handles = Vec::new();
    let mut all_outcomes = Vec::new();
    for p in 0..PAIRS {
        let barrier = Arc::new(Barrier::new(2));
        let outcomes = Arc::new(std::sync::Mutex::new(vec![[false; 2]; ROUNDS]));
        all_outcomes.push(outcomes.clone());
        for side in 0..2 {
            let (m, barrier, outcomes) = (m.clone(), barrier.clone(), outcomes.clone());
            handles.push(std::thread::spawn(move || {
                for round in 0..ROUNDS {
                    // Each pair has its own relations per round: side 0 reads
                    // x and writes y, side 1 reads y and writes x.
                    let base = (p * ROUNDS + round) as u32 * 2;
                    let (mine, other) = if side == 0 { (rel(base), rel(base + 1)) } else { (rel(base + 1), rel(base)) };
                    barrier.wait();
                    let x = m.register(side as i32, format!("{p}{side}/{round}"), false);
                    m.set_top_xid(&x, 10 + base + side as u32);
                    m.acquire(&x, PredTarget::Relation(mine));
                    barrier.wait();
                    let ok = m.check_conflict_in(&x, &[PredTarget::Relation(other)]).is_ok() && m.pre_commit(&x).is_ok();
                    m.release(&x, ok);
                    outcomes.lock().unwrap()[round][side] = ok;
                    barrier.wait();
                }
            }));
        }
    }
    for h in handles {
        h.join().unwrap();
    }
    let mut one_side = 0;
    for outcomes in &all_outcomes {
        for (round, r) in outcomes.lock().unwrap().iter().enumerate() {
            assert!(!(r[0] && r[1]), "round {round}: write skew committed on both sides");
            one_side += (r[0] || r[1]) as usize;
        }
    }
    assert!(one_side > 0, "some rounds commit one side");
    assert_eq!(m.xact_count(), 0);
    assert!(m.lock_status().is_empty());
}
