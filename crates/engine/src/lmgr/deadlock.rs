//! Deadlock detection: a search of the waits-for graph from one waiting backend, and
//! a simple resolution of soft deadlocks by reordering one wait queue.
//!
//! Run by a waiter whose wait has lasted `deadlock_timeout`, with every partition of
//! the shared lock table locked, so the graph cannot change under the search.
//! Edges from a waiting backend W (waiting for mode m on lock L):
//! - *hard*: to every other backend holding on L a mode that conflicts with m;
//! - *soft*: to every backend queued before W on L whose requested mode conflicts
//!   with m (W cannot be granted before it, by the FIFO rule).
//!
//! A backend that is not waiting has no outgoing edges. A cycle through the starting
//! backend is a deadlock, unless it has a soft edge X -> W on some lock L such that
//! moving X just before W in L's queue leaves the whole graph without any cycle; then
//! the queue is reordered that way instead (one move; PostgreSQL searches sets of
//! such moves). Cycles not through the starting backend are left to the backends on
//! them (each runs its own check).

use std::collections::{HashMap, HashSet};

use crate::error::{Error, SqlState};
use crate::lmgr::lock::{LockMask, LockMode, LockTag, PartitionTable};
use crate::pgstat::BackendId;

/// One edge of a deadlock cycle: `waiter` waits for `mode` on `tag`, blocked by
/// `blocker`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    pub waiter: BackendId,
    pub mode: LockMode,
    pub tag: LockTag,
    pub blocker: BackendId,
    /// A soft edge (blocker queued ahead) rather than a hard one (blocker holds).
    pub soft: bool,
}

/// What the check found.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// No cycle through the starting backend (or it no longer waits).
    NoDeadlock,
    /// A cycle that reordering one queue cannot break: the starter must fail.
    Deadlock(Vec<Edge>),
    /// Reorder the wait queue of `tag` to `order` (backends, front first) and wake
    /// whoever that lets through; no cycle remains.
    Rearrange { tag: LockTag, order: Vec<BackendId> },
}

/// The part of the lock table the graph needs: locks with waiters.
#[derive(Clone)]
struct SnapLock {
    holders: Vec<(BackendId, LockMask)>,
    queue: Vec<(BackendId, LockMode)>,
}

#[derive(Clone)]
struct Graph {
    locks: HashMap<LockTag, SnapLock>,
    /// Every waiting backend: the lock it waits for.
    waiting: HashMap<BackendId, LockTag>,
}

impl Graph {
    fn new(tables: &[&PartitionTable]) -> Graph {
        let mut g = Graph {
            locks: HashMap::new(),
            waiting: HashMap::new(),
        };
        for t in tables {
            for (tag, l) in &t.locks {
                if l.waiters.is_empty() {
                    continue;
                }
                for w in &l.waiters {
                    g.waiting.insert(w.backend, *tag);
                }
                g.locks.insert(
                    *tag,
                    SnapLock {
                        holders: l.holders.iter().map(|h| (h.backend, h.hold_mask)).collect(),
                        queue: l.waiters.iter().map(|w| (w.backend, w.mode)).collect(),
                    },
                );
            }
        }
        g
    }

    /// Outgoing edges of `node` (hard ones first).
    fn edges(&self, node: BackendId) -> Vec<Edge> {
        let Some(tag) = self.waiting.get(&node) else {
            return Vec::new();
        };
        let l = &self.locks[tag];
        let Some(&(_, mode)) = l.queue.iter().find(|(b, _)| *b == node) else {
            return Vec::new();
        };
        let hard = l
            .holders
            .iter()
            .filter(|(b, mask)| *b != node && mode.conflict_mask() & mask != 0)
            .map(|(b, _)| (*b, false));
        let soft = l
            .queue
            .iter()
            .take_while(|(b, _)| *b != node)
            .filter(|(_, m)| mode.conflicts_with(*m))
            .map(|(b, _)| (*b, true));
        hard.chain(soft)
            .map(|(blocker, soft)| Edge {
                waiter: node,
                mode,
                tag: *tag,
                blocker,
                soft,
            })
            .collect()
    }

    /// A cycle through `start`, as its edges beginning at `start`.
    fn cycle_from(&self, start: BackendId) -> Option<Vec<Edge>> {
        let mut visited = HashSet::new();
        visited.insert(start);
        let mut path = Vec::new();
        self.search(start, start, &mut visited, &mut path)
            .then_some(path)
    }

    fn search(
        &self,
        node: BackendId,
        start: BackendId,
        visited: &mut HashSet<BackendId>,
        path: &mut Vec<Edge>,
    ) -> bool {
        for e in self.edges(node) {
            path.push(e);
            if e.blocker == start {
                return true;
            }
            if visited.insert(e.blocker) && self.search(e.blocker, start, visited, path) {
                return true;
            }
            path.pop();
        }
        false
    }

    fn has_any_cycle(&self) -> bool {
        self.waiting.keys().any(|b| self.cycle_from(*b).is_some())
    }
}

/// Checks for a deadlock through `start`, which waits for `mode` on `tag`.
/// `tables` are all partitions, locked.
pub(crate) fn check(
    start: BackendId,
    tag: LockTag,
    mode: LockMode,
    tables: &[&PartitionTable],
) -> Outcome {
    let g = Graph::new(tables);
    let waits_as_expected = g.waiting.get(&start) == Some(&tag)
        && g.locks[&tag]
            .queue
            .iter()
            .any(|&(b, m)| b == start && m == mode);
    if !waits_as_expected {
        return Outcome::NoDeadlock; // granted or gone meanwhile
    }
    let Some(cycle) = g.cycle_from(start) else {
        return Outcome::NoDeadlock;
    };
    // Soft edges are tried from the end of the cycle back (the edge nearest the
    // return to `start` first), the order in which PostgreSQL's FindLockCycle
    // records them and DeadLockCheckRecurse tries them; which edge is reversed
    // decides which waiter goes first (isolation test deadlock-soft).
    for e in cycle.iter().rev().filter(|e| e.soft) {
        // Try: e.waiter goes just before e.blocker in the queue of e.tag.
        let mut candidate = g.clone();
        let q = &mut candidate
            .locks
            .get_mut(&e.tag)
            .expect("lock with waiters")
            .queue;
        let from = q
            .iter()
            .position(|(b, _)| *b == e.waiter)
            .expect("waiter queued");
        let to = q
            .iter()
            .position(|(b, _)| *b == e.blocker)
            .expect("blocker queued");
        let moved = q.remove(from);
        q.insert(to, moved);
        if !candidate.has_any_cycle() {
            let order = candidate.locks[&e.tag]
                .queue
                .iter()
                .map(|(b, _)| *b)
                .collect();
            return Outcome::Rearrange { tag: e.tag, order };
        }
    }
    Outcome::Deadlock(cycle)
}

/// The 40P01 error for a cycle, with PostgreSQL's DETAIL lines and HINT.
pub(crate) fn deadlock_error(cycle: &[Edge], pid_of: &dyn Fn(BackendId) -> i32) -> Error {
    let detail = cycle
        .iter()
        .map(|e| {
            format!(
                "Process {} waits for {} on {}; blocked by process {}.",
                pid_of(e.waiter),
                e.mode.name(),
                e.tag,
                pid_of(e.blocker)
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    Error::user(SqlState::T_R_DEADLOCK_DETECTED, "deadlock detected")
        .with_detail(detail)
        .with_hint("See server log for query details.")
}
