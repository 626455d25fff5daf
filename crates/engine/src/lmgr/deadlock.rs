//! Deadlock detection: a search of the waits-for graph from one waiting backend.
//!
//! Run by a waiter whose wait has lasted `deadlock_timeout`, with every partition of
//! the shared lock table locked, so the graph cannot change under the search.
//! Edges from a waiting backend W (waiting for mode m on lock L):
//! - *hard*: to every other backend holding on L a mode that conflicts with m;
//! - *soft*: to every backend queued before W on L whose requested mode conflicts
//!   with m (W cannot be granted before it, by the FIFO rule).
//!
//! A backend that is not waiting has no outgoing edges. A cycle through the starting
//! backend is a deadlock and the starting backend is the victim. Cycles that do not
//! pass through it are left to the backends on them (each runs its own check).
//! Soft cycles are not resolved by reordering wait queues (PostgreSQL does); see the
//! README, "Differences from PostgreSQL".

use std::collections::{HashMap, HashSet};

use crate::error::{Error, SqlState};
use crate::lmgr::lock::{LockMode, LockTag, PartitionTable};
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

/// Searches for a cycle of the waits-for graph through `start`, which waits for
/// `mode` on `tag`. `tables` are all partitions, locked; `part` maps a tag to its
/// partition index. Returns the cycle's edges starting at `start`.
pub(crate) fn find_cycle(
    start: BackendId,
    tag: LockTag,
    mode: LockMode,
    tables: &[&PartitionTable],
    part: &dyn Fn(&LockTag) -> usize,
) -> Option<Vec<Edge>> {
    // Every waiting backend: what it waits for.
    let mut waiting: HashMap<BackendId, (LockTag, LockMode)> = HashMap::new();
    for t in tables {
        for (tg, l) in &t.locks {
            for w in &l.waiters {
                waiting.insert(w.backend, (*tg, w.mode));
            }
        }
    }
    if waiting.get(&start) != Some(&(tag, mode)) {
        return None; // no longer waiting (granted or gone)
    }
    let mut visited = HashSet::new();
    visited.insert(start);
    let mut path = Vec::new();
    if search(start, start, &waiting, tables, part, &mut visited, &mut path) {
        Some(path)
    } else {
        None
    }
}

/// Depth-first search from `node`; true if `start` is reached (edges in `path`).
fn search(
    node: BackendId,
    start: BackendId,
    waiting: &HashMap<BackendId, (LockTag, LockMode)>,
    tables: &[&PartitionTable],
    part: &dyn Fn(&LockTag) -> usize,
    visited: &mut HashSet<BackendId>,
    path: &mut Vec<Edge>,
) -> bool {
    let Some(&(tag, mode)) = waiting.get(&node) else {
        return false;
    };
    let Some(lock) = tables[part(&tag)].locks.get(&tag) else {
        return false;
    };
    let hard = lock
        .holders
        .iter()
        .filter(|h| h.backend != node && mode.conflict_mask() & h.hold_mask != 0)
        .map(|h| (h.backend, false));
    let soft = lock
        .waiters
        .iter()
        .take_while(|w| w.backend != node)
        .filter(|w| mode.conflicts_with(w.mode))
        .map(|w| (w.backend, true));
    let next: Vec<(BackendId, bool)> = hard.chain(soft).collect();
    for (blocker, soft) in next {
        path.push(Edge { waiter: node, mode, tag, blocker, soft });
        if blocker == start {
            return true;
        }
        if visited.insert(blocker) && search(blocker, start, waiting, tables, part, visited, path) {
            return true;
        }
        path.pop();
    }
    false
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
