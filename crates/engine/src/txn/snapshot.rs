//! MVCC snapshots: which transactions were running when the snapshot was taken.
//!
//! Invariants of a snapshot `s` (see the README, "Snapshots"):
//! - `s.xmin <= x < s.xmax` for every `x` in `s.xip` (transaction order);
//! - every xid `x < s.xmin` had finished (committed or aborted, clog final) when the
//!   snapshot was taken;
//! - every xid `x >= s.xmax` is treated as running;
//! - an xid `s.xmin <= x < s.xmax` was running iff it is in `xip`, or in `subxip`,
//!   or (when `suboverflowed`) its top-level parent is in `xip`.

use super::subtrans::SubTrans;
use super::xid::*;
use std::sync::Arc;

/// An MVCC snapshot (PostgreSQL's SnapshotData, the MVCC fields).
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// Every xid preceding it had finished.
    pub xmin: TransactionId,
    /// Every xid at or after it is treated as running (latest completed + 1).
    pub xmax: TransactionId,
    /// Top-level xids running, each in `[xmin, xmax)`. Shared (`Arc`) so a reused
    /// snapshot costs no copy.
    pub xip: Arc<[TransactionId]>,
    /// Subtransaction xids running (only meaningful if `!suboverflowed`).
    pub subxip: Arc<[TransactionId]>,
    /// Some backend had more than 64 subxids: `subxip` is incomplete and a
    /// subxid must be mapped to its top-level xid through pg_subtrans.
    pub suboverflowed: bool,
    /// Rows inserted by the own transaction with a command id `>= curcid` are not
    /// visible (they were made by this or a later command).
    pub curcid: CommandId,
    /// The ProcArray's completed-transactions counter when this was computed; the
    /// snapshot may be reused while the counter has not moved.
    pub completion_count: u64,
}

impl Snapshot {
    /// Is `xid` running as far as this snapshot is concerned (PostgreSQL's
    /// XidInMVCCSnapshot)? Does not know about the own transaction: callers test
    /// "is it mine" first.
    pub fn xid_in_snapshot(&self, xid: TransactionId, subtrans: &SubTrans) -> bool {
        if xid_precedes(xid, self.xmin) {
            return false;
        }
        if xid_follows_or_equals(xid, self.xmax) {
            return true;
        }
        if !self.suboverflowed {
            if self.subxip.contains(&xid) {
                return true;
            }
            return self.xip.contains(&xid);
        }
        // Overflowed: map a subxact to its top-level xact, which is in xip if the
        // tree was running.
        let top = subtrans.top_parent(xid);
        if xid_precedes(top, self.xmin) {
            return false;
        }
        self.xip.contains(&top)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(xmin: u32, xmax: u32, xip: &[u32], subxip: &[u32], over: bool) -> Snapshot {
        Snapshot {
            xmin,
            xmax,
            xip: xip.into(),
            subxip: subxip.into(),
            suboverflowed: over,
            curcid: 0,
            completion_count: 0,
        }
    }

    #[test]
    fn in_snapshot_bounds_and_lists() {
        let st = SubTrans::new();
        let s = snap(10, 20, &[10, 15], &[16], false);
        assert!(!s.xid_in_snapshot(9, &st));
        assert!(s.xid_in_snapshot(10, &st));
        assert!(!s.xid_in_snapshot(11, &st));
        assert!(s.xid_in_snapshot(16, &st));
        assert!(s.xid_in_snapshot(20, &st));
        assert!(s.xid_in_snapshot(25, &st));
    }

    #[test]
    fn overflowed_maps_through_subtrans() {
        let st = SubTrans::new();
        st.set_parent(17, 15);
        st.set_parent(18, 12);
        let s = snap(10, 20, &[10, 15], &[], true);
        assert!(s.xid_in_snapshot(17, &st));
        assert!(!s.xid_in_snapshot(18, &st));
    }
}
