//! The lock-free group list used by the two commit-time group protocols
//! (ProcArray xid clearing and commit-log status update; see the README,
//! "Group update protocols").
//!
//! Members are backend slots, named by index. The list is a Treiber stack whose
//! head is one atomic word; members only ever *push* themselves, and the leader
//! *detaches the whole list* with one swap. Because nobody pops a single element,
//! the ABA problem of Treiber stacks cannot arise: a push's CAS compares the head
//! with the value it just stored in its own `next`, so whatever the head went
//! through in between, the link it installs is correct.
//!
//! Protocol, for a backend `me` with a request `r`:
//! 1. `join(me, r)` stores `r` in slot `me`, marks the slot pending, and pushes it.
//!    It returns `true` when the list was empty: `me` is the leader.
//! 2. A follower calls `wait(me)`: it sleeps until the leader has processed it.
//! 3. The leader acquires the protected lock, calls `take_all()` (which detaches
//!    the list, including itself, and returns every member with its request),
//!    applies every request, releases the lock, then calls `wake(&members)`.
//!
//! A member pushed after the leader's swap finds the head empty and becomes the
//! leader of the next group, so nobody is left behind (no lost wakeup: the pending
//! flag is under the slot's mutex and the follower re-checks it before sleeping).

use crate::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use crate::sync::{Condvar, Mutex};

/// The empty list / end of list.
const NIL: u32 = u32::MAX;

/// One member slot (one per backend).
pub struct GroupSlot<R> {
    /// The next member below this one in the list. Written by the owner before its
    /// push (the CAS publishes it, Release), read by the leader after its swap
    /// (Acquire).
    next: AtomicU32,
    /// The member's request. Written by the owner before joining, taken by the
    /// leader. The mutex is never contended (owner and leader are ordered by the
    /// list), it only makes the hand-over safe Rust.
    request: Mutex<Option<R>>,
    /// True from `join` until the leader has processed the request.
    pending: Mutex<bool>,
    wakeup: Condvar,
}

/// A group list over `n` member slots.
pub struct GroupList<R> {
    /// Index of the last member pushed, or NIL.
    head: AtomicU32,
    slots: Box<[GroupSlot<R>]>,
    /// Number of groups led (Relaxed: statistics).
    leaders: AtomicU64,
    /// Number of members processed by a leader other than themselves (Relaxed).
    followers: AtomicU64,
}

impl<R> GroupList<R> {
    pub fn new(n: usize) -> Self {
        assert!(n < NIL as usize);
        let slots = (0..n)
            .map(|_| GroupSlot {
                next: AtomicU32::new(NIL),
                request: Mutex::new(None),
                pending: Mutex::new(false),
                wakeup: Condvar::new(),
            })
            .collect::<Vec<_>>()
            .into_boxed_slice();
        GroupList {
            head: AtomicU32::new(NIL),
            slots,
            leaders: AtomicU64::new(0),
            followers: AtomicU64::new(0),
        }
    }

    /// Pushes member `me` with its request. Returns `true` if `me` is the leader.
    pub fn join(&self, me: usize, request: R) -> bool {
        let slot = &self.slots[me];
        *slot.request.lock().unwrap_or_else(|e| e.into_inner()) = Some(request);
        *slot.pending.lock().unwrap_or_else(|e| e.into_inner()) = true;
        let mut head = self.head.load(Ordering::Acquire);
        loop {
            // Relaxed: published by the Release CAS below.
            slot.next.store(head, Ordering::Relaxed);
            match self.head.compare_exchange_weak(
                head,
                me as u32,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return head == NIL,
                Err(h) => head = h,
            }
        }
    }

    /// Leader only, with the protected lock held: detaches the whole list and
    /// returns every member (the leader included) with its request, most recently
    /// pushed first.
    pub fn take_all(&self, leader: usize) -> Vec<(usize, R)> {
        let mut out = Vec::new();
        // AcqRel: Acquire pairs with the members' Release CAS (their `next` and
        // request are visible); Release so later pushes see a consistent list.
        let mut cur = self.head.swap(NIL, Ordering::AcqRel);
        while cur != NIL {
            let slot = &self.slots[cur as usize];
            let req = slot.request.lock().unwrap_or_else(|e| e.into_inner()).take();
            let next = slot.next.load(Ordering::Relaxed);
            if let Some(r) = req {
                out.push((cur as usize, r));
            }
            cur = next;
        }
        self.leaders.fetch_add(1, Ordering::Relaxed);
        let nfollowers = out.iter().filter(|(m, _)| *m != leader).count() as u64;
        self.followers.fetch_add(nfollowers, Ordering::Relaxed);
        out
    }

    /// Leader only, after releasing the protected lock: wakes every member but
    /// itself (and clears its own pending flag).
    pub fn wake(&self, members: &[usize]) {
        for &m in members {
            let slot = &self.slots[m];
            let mut p = slot.pending.lock().unwrap_or_else(|e| e.into_inner());
            *p = false;
            slot.wakeup.notify_one();
        }
    }

    /// Follower: sleeps until the leader has processed `me`.
    pub fn wait(&self, me: usize) {
        let slot = &self.slots[me];
        let mut p = slot.pending.lock().unwrap_or_else(|e| e.into_inner());
        while *p {
            p = slot.wakeup.wait(p).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// (groups led, members processed on another's behalf).
    pub fn stats(&self) -> (u64, u64) {
        (self.leaders.load(Ordering::Relaxed), self.followers.load(Ordering::Relaxed))
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::atomic::AtomicUsize;
    use crate::sync::{thread, Arc};

    /// Three members join concurrently; a leader (anyone who found the list empty)
    /// takes a stand-in lock, processes the group and wakes it. Every member is
    /// processed exactly once and every follower returns from `wait`.
    #[test]
    fn loom_group_list_every_member_processed_once() {
        loom::model(|| {
            let g = Arc::new(GroupList::<usize>::new(3));
            let lock = Arc::new(Mutex::new(()));
            let counts: Arc<Vec<AtomicUsize>> =
                Arc::new((0..3).map(|_| AtomicUsize::new(0)).collect());
            let run = |me: usize,
                       g: Arc<GroupList<usize>>,
                       lock: Arc<Mutex<()>>,
                       counts: Arc<Vec<AtomicUsize>>| {
                if g.join(me, me * 10) {
                    let members = {
                        let _l = lock.lock().unwrap();
                        let all = g.take_all(me);
                        for (m, r) in &all {
                            assert_eq!(*r, m * 10);
                            counts[*m].fetch_add(1, Ordering::SeqCst);
                        }
                        all.into_iter().map(|(m, _)| m).collect::<Vec<_>>()
                    };
                    assert!(members.contains(&me));
                    g.wake(&members);
                } else {
                    g.wait(me);
                }
                // Once back, the request has been processed.
                assert_eq!(counts[me].load(Ordering::SeqCst), 1);
            };
            let mut hs = Vec::new();
            for me in 1..3 {
                let (g, l, c) = (g.clone(), lock.clone(), counts.clone());
                hs.push(thread::spawn(move || run(me, g, l, c)));
            }
            run(0, g.clone(), lock.clone(), counts.clone());
            for h in hs {
                h.join().unwrap();
            }
            for c in counts.iter() {
                assert_eq!(c.load(Ordering::SeqCst), 1);
            }
            let (leaders, followers) = g.stats();
            assert_eq!(leaders + followers, 3);
        });
    }

    /// A member re-joins right after being woken (its slot is reused while another
    /// leader may be walking a newer list): still processed exactly once per join.
    #[test]
    fn loom_group_list_rejoin() {
        loom::model(|| {
            let g = Arc::new(GroupList::<usize>::new(2));
            let lock = Arc::new(Mutex::new(()));
            let total = Arc::new(AtomicUsize::new(0));
            let run = |me: usize, rounds: usize, g: Arc<GroupList<usize>>, lock: Arc<Mutex<()>>,
                       total: Arc<AtomicUsize>| {
                for _ in 0..rounds {
                    if g.join(me, me) {
                        let members = {
                            let _l = lock.lock().unwrap();
                            let all = g.take_all(me);
                            total.fetch_add(all.len(), Ordering::SeqCst);
                            all.into_iter().map(|(m, _)| m).collect::<Vec<_>>()
                        };
                        g.wake(&members);
                    } else {
                        g.wait(me);
                    }
                }
            };
            let (g2, l2, t2) = (g.clone(), lock.clone(), total.clone());
            let h = thread::spawn(move || run(1, 1, g2, l2, t2));
            run(0, 2, g.clone(), lock.clone(), total.clone());
            h.join().unwrap();
            assert_eq!(total.load(Ordering::SeqCst), 3);
        });
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    #[test]
    fn group_list_threads_all_processed() {
        let n = 8;
        let g = Arc::new(GroupList::<u64>::new(n));
        let lock = Arc::new(std::sync::Mutex::new(0u64));
        let done = Arc::new(AtomicUsize::new(0));
        let hs: Vec<_> = (0..n)
            .map(|me| {
                let (g, lock, done) = (g.clone(), lock.clone(), done.clone());
                std::thread::spawn(move || {
                    for i in 0..500u64 {
                        if g.join(me, i) {
                            let members = {
                                let mut sum = lock.lock().unwrap();
                                let all = g.take_all(me);
                                for (_, r) in &all {
                                    *sum += r;
                                }
                                done.fetch_add(all.len(), Ordering::SeqCst);
                                all.into_iter().map(|(m, _)| m).collect::<Vec<_>>()
                            };
                            g.wake(&members);
                        } else {
                            g.wait(me);
                        }
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(done.load(Ordering::SeqCst), n * 500);
        assert_eq!(*lock.lock().unwrap(), n as u64 * (499 * 500 / 2));
    }
}
