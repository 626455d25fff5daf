//! Subtransaction parent links (PostgreSQL's pg_subtrans): xid -> parent xid, for
//! every subtransaction that got an xid. Used to map a subtransaction to its top
//! transaction when a snapshot's or a backend's subxid cache overflowed, and to
//! resolve a sub-committed status.
//!
//! Like pg_subtrans it is not crash-safe and need not be: after a restart no
//! transaction older than the restart is running, so no lookup needs an old link
//! (a sub-committed xid whose link is gone belongs to a top that crashed: aborted).
//! Kept in memory, in 16 partitions each under its own mutex; entries older than
//! the global xmin are dropped by [`SubTrans::truncate`].

use super::xid::*;
use std::collections::HashMap;
use std::sync::RwLock;

const PARTITIONS: usize = 16;

/// xid -> parent xid map.
pub struct SubTrans {
    /// Partition `xid % 16`: the links of xids in that partition.
    parts: Box<[RwLock<HashMap<TransactionId, TransactionId>>]>,
}

impl Default for SubTrans {
    fn default() -> Self {
        Self::new()
    }
}

impl SubTrans {
    pub fn new() -> SubTrans {
        SubTrans { parts: (0..PARTITIONS).map(|_| RwLock::new(HashMap::new())).collect() }
    }

    fn part(&self, xid: TransactionId) -> &RwLock<HashMap<TransactionId, TransactionId>> {
        &self.parts[xid as usize % PARTITIONS]
    }

    /// Records `parent` as `xid`'s parent. `parent` precedes `xid`.
    pub fn set_parent(&self, xid: TransactionId, parent: TransactionId) {
        debug_assert!(xid_precedes(parent, xid));
        self.part(xid).write().unwrap_or_else(|e| e.into_inner()).insert(xid, parent);
    }

    /// `xid`'s parent, or `None` for a top-level (or forgotten) xid.
    pub fn parent(&self, xid: TransactionId) -> Option<TransactionId> {
        self.part(xid).read().unwrap_or_else(|e| e.into_inner()).get(&xid).copied()
    }

    /// The top-level ancestor of `xid` (`xid` itself if it has no parent).
    pub fn top_parent(&self, xid: TransactionId) -> TransactionId {
        let mut cur = xid;
        while let Some(p) = self.parent(cur) {
            if !xid_precedes(p, cur) {
                break; // corrupt link; never loop
            }
            cur = p;
        }
        cur
    }

    /// Forgets links of xids preceding `oldest_xmin`: no snapshot or ProcArray
    /// entry can ask about them any more.
    pub fn truncate(&self, oldest_xmin: TransactionId) {
        for p in self.parts.iter() {
            p.write().unwrap_or_else(|e| e.into_inner()).retain(|&x, _| !xid_precedes(x, oldest_xmin));
        }
    }

    /// Number of links held (tests).
    pub fn len(&self) -> usize {
        self.parts.iter().map(|p| p.read().unwrap_or_else(|e| e.into_inner()).len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_parent_follows_chain_and_truncates() {
        let s = SubTrans::new();
        s.set_parent(11, 10);
        s.set_parent(12, 11);
        assert_eq!(s.top_parent(12), 10);
        assert_eq!(s.top_parent(10), 10);
        assert_eq!(s.parent(11), Some(10));
        s.truncate(12);
        assert_eq!(s.parent(11), None);
        assert_eq!(s.parent(12), Some(11));
    }
}
