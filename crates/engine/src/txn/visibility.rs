//! Tuple visibility: PostgreSQL's HeapTupleSatisfies* rules over a tuple header's
//! xmin, xmax, t_cid and infomask (the rules table is in the README).
//!
//! The functions never modify the tuple: they return the hint bits the caller may
//! set on the page (under a shared content lock; setting hint bits is idempotent).
//! A committed hint (XMIN_COMMITTED / XMAX_COMMITTED) is only returned once the
//! WAL is durable past the transaction's commit record ([`XidOracle::hint_allowed`]:
//! the async-commit LSN interlock); INVALID hints are always safe.

use super::snapshot::Snapshot;
use super::xid::*;
use super::XidStatus;
use crate::Result;

// t_infomask bits: the heap's own constants (PostgreSQL's values, htup_details.h),
// so visibility reads exactly what the heap writes.
pub use crate::heap::tuple::{
    HEAP_COMBOCID, HEAP_HASEXTERNAL, HEAP_HASNULL, HEAP_HASVARWIDTH, HEAP_LOCK_MASK, HEAP_UPDATED,
    HEAP_XMAX_COMMITTED, HEAP_XMAX_EXCL_LOCK, HEAP_XMAX_INVALID, HEAP_XMAX_IS_MULTI, HEAP_XMAX_KEYSHR_LOCK,
    HEAP_XMAX_LOCK_ONLY, HEAP_XMAX_SHR_LOCK, HEAP_XMIN_COMMITTED, HEAP_XMIN_FROZEN, HEAP_XMIN_INVALID,
};
/// The hint bits.
pub const HEAP_XACT_HINT_MASK: u16 =
    HEAP_XMIN_COMMITTED | HEAP_XMIN_INVALID | HEAP_XMAX_COMMITTED | HEAP_XMAX_INVALID;

/// The visibility-relevant part of a heap tuple header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct TupleVisibilityInfo {
    /// Inserting transaction.
    pub xmin: TransactionId,
    /// Deleting/updating/locking transaction, or INVALID.
    pub xmax: TransactionId,
    /// t_cid: cmin for a tuple inserted by a running transaction, cmax for one it
    /// deleted, a combo cid when both (HEAP_COMBOCID).
    pub cid: CommandId,
    /// t_infomask.
    pub infomask: u16,
    /// t_ctid points to the tuple itself (no newer version): a committed xmax then
    /// means "deleted", else "updated". PostgreSQL compares t_ctid with t_self.
    pub ctid_is_self: bool,
}

impl TupleVisibilityInfo {
    pub fn xmin_committed(&self) -> bool {
        self.infomask & HEAP_XMIN_COMMITTED != 0
    }
    pub fn xmin_invalid(&self) -> bool {
        self.infomask & HEAP_XMIN_FROZEN == HEAP_XMIN_INVALID
    }
    pub fn xmin_frozen(&self) -> bool {
        self.infomask & HEAP_XMIN_FROZEN == HEAP_XMIN_FROZEN || self.xmin == FROZEN_XID
    }
    /// xmax is only a row lock (or is invalid), not a delete.
    pub fn xmax_is_locked_only(&self) -> bool {
        self.infomask & HEAP_XMAX_INVALID != 0
            || self.infomask & HEAP_XMAX_LOCK_ONLY != 0
            // Old-style "exclusive lock only" encoding (pg_upgrade'd pre-9.3 tuples).
            || self.infomask & (HEAP_XMAX_IS_MULTI | HEAP_LOCK_MASK) == HEAP_XMAX_EXCL_LOCK
    }
}

/// What visibility needs to know about transactions.
pub trait XidOracle {
    /// Is `xid` the current transaction or one of its not-aborted subtransactions?
    fn is_current_xid(&self, xid: TransactionId) -> bool;
    /// Is `xid` running (ProcArray)?
    fn is_in_progress(&self, xid: TransactionId) -> bool;
    /// Final status from the clog, sub-committed resolved through the parent
    /// (InProgress if the tree is still running). Only asked after
    /// `is_in_progress` said no, or for an xid outside the snapshot.
    fn status(&self, xid: TransactionId) -> Result<XidStatus>;
    /// May a committed hint be set for `xid` now? False while its commit record is
    /// not durable (asynchronous commit).
    fn hint_allowed(&self, xid: TransactionId) -> bool;
    /// cmin of a tuple inserted by the current transaction.
    fn cmin(&self, t: &TupleVisibilityInfo) -> CommandId;
    /// cmax of a tuple deleted by the current transaction.
    fn cmax(&self, t: &TupleVisibilityInfo) -> CommandId;
    /// Is `xid` running according to `snap` (snapshot + subtrans)? Never for an
    /// xid preceding `snap.xmin` (callers skip the call then).
    fn in_snapshot(&self, xid: TransactionId, snap: &Snapshot) -> bool;
    /// The members of multixact `multi` (None: forgotten, every member ended
    /// without a committed update; see txn::multixact's retention rule).
    fn multi_members(&self, multi: u32) -> Option<std::sync::Arc<[super::multixact::Member]>>;
}

/// A tuple whose xmax is a multixact (and not hinted invalid).
fn xmax_is_multi(t: &TupleVisibilityInfo) -> bool {
    t.infomask & HEAP_XMAX_IS_MULTI != 0 && t.infomask & HEAP_XMAX_INVALID == 0 && t.xmax != INVALID_XID
}

/// Hint bits about xmax are never set for a multixact xmax: they would describe
/// the member the resolution picked, not the multixact.
const XMAX_HINTS: u16 = HEAP_XMAX_COMMITTED | HEAP_XMAX_INVALID;

/// A visibility answer with the hint bits the caller may set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Visibility {
    pub visible: bool,
    /// Bits to OR into t_infomask.
    pub hints: u16,
}

/// Result of the update test (PostgreSQL's TM_Result).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TmResult {
    /// The tuple may be updated/deleted/locked.
    Ok,
    /// Not visible to the command at all (inserted later, or by an aborted xact).
    Invisible,
    /// Already updated/deleted by the current command or a later one of this
    /// transaction.
    SelfModified,
    /// Updated by a committed transaction (t_ctid leads to the new version).
    Updated,
    /// Deleted by a committed transaction.
    Deleted,
    /// xmax is running (or is our own row lock): wait for it on its xid lock, or
    /// check the lock mode.
    BeingModified,
    /// Returned by the row-locking caller (NOWAIT / SKIP LOCKED), never by
    /// [`satisfies_update`] itself.
    WouldBlock,
}

/// Result of the vacuum test (PostgreSQL's HTSV_Result).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HtsvResult {
    /// Dead to everyone: may be removed.
    Dead,
    /// Deleted, but some snapshot may still see it.
    RecentlyDead,
    /// Visible (or will be) to everyone.
    Live,
    /// Inserter still running.
    InsertInProgress,
    /// Deleter still running.
    DeleteInProgress,
}

/// Result of the dirty test: visible, plus the running xids the caller must wait
/// for (unique checks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirtyResult {
    pub visible: bool,
    pub hints: u16,
    /// Running inserter (INVALID if none).
    pub xmin_in_progress: TransactionId,
    /// Running deleter (INVALID if none).
    pub xmax_in_progress: TransactionId,
}

fn committed_hint(o: &dyn XidOracle, xid: TransactionId, bit: u16) -> u16 {
    if o.hint_allowed(xid) {
        bit
    } else {
        0
    }
}

/// Outcome of examining xmin for the "current-state" tests (self, update, dirty,
/// vacuum all share it).
enum XminState {
    Invalid,
    Mine,
    Running,
    Committed,
}

/// Common xmin examination for the non-MVCC tests. Appends hints.
fn examine_xmin(t: &TupleVisibilityInfo, o: &dyn XidOracle, hints: &mut u16) -> Result<XminState> {
    if t.xmin_committed() || t.xmin_frozen() {
        return Ok(XminState::Committed);
    }
    if t.xmin_invalid() {
        return Ok(XminState::Invalid);
    }
    if o.is_current_xid(t.xmin) {
        return Ok(XminState::Mine);
    }
    if o.is_in_progress(t.xmin) {
        return Ok(XminState::Running);
    }
    if o.status(t.xmin)? == XidStatus::Committed {
        *hints |= committed_hint(o, t.xmin, HEAP_XMIN_COMMITTED);
        Ok(XminState::Committed)
    } else {
        // Aborted, or running when the server crashed.
        *hints |= HEAP_XMIN_INVALID;
        Ok(XminState::Invalid)
    }
}

/// `o.in_snapshot`, answering without the call for an xid older than every xid the
/// snapshot saw running (the common case on a HOT chain of old versions).
#[inline]
fn in_snapshot(o: &dyn XidOracle, xid: TransactionId, snap: &Snapshot) -> bool {
    !xid_precedes(xid, snap.xmin) && o.in_snapshot(xid, snap)
}

/// MVCC visibility (HeapTupleSatisfiesMVCC): is the tuple visible to `snap`, given
/// the current transaction's own changes up to `snap.curcid`?
pub fn satisfies_mvcc(t: &TupleVisibilityInfo, snap: &Snapshot, o: &dyn XidOracle) -> Result<Visibility> {
    if xmax_is_multi(t) {
        let mut v = satisfies_mvcc(&super::multixact::resolve(t, o)?, snap, o)?;
        v.hints &= !XMAX_HINTS;
        return Ok(v);
    }
    let mut hints = 0u16;
    let no = |hints| Ok(Visibility { visible: false, hints });
    let yes = |hints| Ok(Visibility { visible: true, hints });

    // 1. xmin
    if !t.xmin_committed() && !t.xmin_frozen() {
        if t.xmin_invalid() {
            return no(hints);
        }
        if o.is_current_xid(t.xmin) {
            if o.cmin(t) >= snap.curcid {
                return no(hints); // inserted by this or a later command
            }
            if t.infomask & HEAP_XMAX_INVALID != 0 || t.xmax == INVALID_XID {
                return yes(hints);
            }
            if t.xmax_is_locked_only() {
                return yes(hints);
            }
            if !o.is_current_xid(t.xmax) {
                // Deleted by a subtransaction of ours that aborted.
                return yes(hints | HEAP_XMAX_INVALID);
            }
            return if o.cmax(t) >= snap.curcid { yes(hints) } else { no(hints) };
        }
        if in_snapshot(o, t.xmin, snap) {
            return no(hints);
        }
        // Not running for the snapshot, so finished before it was taken; the clog
        // has the final status (clog is set before the ProcArray is cleared).
        if o.status(t.xmin)? == XidStatus::Committed {
            hints |= committed_hint(o, t.xmin, HEAP_XMIN_COMMITTED);
        } else {
            return no(hints | HEAP_XMIN_INVALID);
        }
    } else if !t.xmin_frozen() && in_snapshot(o, t.xmin, snap) && !o.is_current_xid(t.xmin) {
        // Committed (hint set) but after our snapshot was taken.
        return no(hints);
    }

    // 2. xmin is visible; now xmax.
    if t.infomask & HEAP_XMAX_INVALID != 0 || t.xmax == INVALID_XID {
        return yes(hints);
    }
    if t.xmax_is_locked_only() {
        return yes(hints);
    }
    if t.infomask & HEAP_XMAX_COMMITTED == 0 {
        if o.is_current_xid(t.xmax) {
            return if o.cmax(t) >= snap.curcid { yes(hints) } else { no(hints) };
        }
        if in_snapshot(o, t.xmax, snap) {
            return yes(hints);
        }
        if o.status(t.xmax)? != XidStatus::Committed {
            return yes(hints | HEAP_XMAX_INVALID);
        }
        hints |= committed_hint(o, t.xmax, HEAP_XMAX_COMMITTED);
    } else if in_snapshot(o, t.xmax, snap) {
        return yes(hints);
    }
    no(hints)
}

/// The update test (HeapTupleSatisfiesUpdate): may the command `curcid` of the
/// current transaction update, delete or lock this tuple? Looks at the *current*
/// state (ProcArray and clog), not at a snapshot.
pub fn satisfies_update(t: &TupleVisibilityInfo, curcid: CommandId, o: &dyn XidOracle) -> Result<(TmResult, u16)> {
    if xmax_is_multi(t) {
        let (r, hints) = satisfies_update(&super::multixact::resolve(t, o)?, curcid, o)?;
        return Ok((r, hints & !XMAX_HINTS));
    }
    let mut hints = 0u16;
    match examine_xmin(t, o, &mut hints)? {
        XminState::Invalid | XminState::Running => return Ok((TmResult::Invisible, hints)),
        XminState::Mine => {
            if o.cmin(t) >= curcid {
                return Ok((TmResult::Invisible, hints));
            }
            if t.infomask & HEAP_XMAX_INVALID != 0 || t.xmax == INVALID_XID {
                return Ok((TmResult::Ok, hints));
            }
            if t.xmax_is_locked_only() {
                // Locked only; by us (still running) or by a finished locker.
                return Ok(if o.is_current_xid(t.xmax) || o.is_in_progress(t.xmax) {
                    (TmResult::BeingModified, hints)
                } else {
                    (TmResult::Ok, hints | HEAP_XMAX_INVALID)
                });
            }
            if !o.is_current_xid(t.xmax) {
                return Ok((TmResult::Ok, hints | HEAP_XMAX_INVALID)); // our deleting subxact aborted
            }
            return Ok(if o.cmax(t) >= curcid {
                (TmResult::SelfModified, hints)
            } else {
                (TmResult::Invisible, hints)
            });
        }
        XminState::Committed => {}
    }
    if t.infomask & HEAP_XMAX_INVALID != 0 || t.xmax == INVALID_XID {
        return Ok((TmResult::Ok, hints));
    }
    let gone = if t.ctid_is_self { TmResult::Deleted } else { TmResult::Updated };
    if t.infomask & HEAP_XMAX_COMMITTED != 0 {
        return Ok(if t.xmax_is_locked_only() { (TmResult::Ok, hints) } else { (gone, hints) });
    }
    if o.is_current_xid(t.xmax) {
        if t.xmax_is_locked_only() {
            return Ok((TmResult::BeingModified, hints));
        }
        return Ok(if o.cmax(t) >= curcid {
            (TmResult::SelfModified, hints)
        } else {
            (TmResult::Invisible, hints)
        });
    }
    if o.is_in_progress(t.xmax) {
        return Ok((TmResult::BeingModified, hints));
    }
    if o.status(t.xmax)? != XidStatus::Committed {
        return Ok((TmResult::Ok, hints | HEAP_XMAX_INVALID));
    }
    if t.xmax_is_locked_only() {
        // The locker committed: its lock is gone.
        return Ok((TmResult::Ok, hints | HEAP_XMAX_INVALID));
    }
    Ok((gone, hints | committed_hint(o, t.xmax, HEAP_XMAX_COMMITTED)))
}

/// The vacuum test (HeapTupleSatisfiesVacuum): can the tuple be removed, given
/// `oldest_xmin` (the horizon from `ProcArray::oldest_xmin`)?
pub fn satisfies_vacuum(t: &TupleVisibilityInfo, oldest_xmin: TransactionId, o: &dyn XidOracle) -> Result<(HtsvResult, u16)> {
    if xmax_is_multi(t) {
        let (r, hints) = satisfies_vacuum(&super::multixact::resolve(t, o)?, oldest_xmin, o)?;
        return Ok((r, hints & !XMAX_HINTS));
    }
    let mut hints = 0u16;
    if !t.xmin_committed() && !t.xmin_frozen() {
        if t.xmin_invalid() {
            return Ok((HtsvResult::Dead, hints));
        }
        if o.is_current_xid(t.xmin) || o.is_in_progress(t.xmin) {
            let deleting = t.xmax != INVALID_XID
                && t.infomask & HEAP_XMAX_INVALID == 0
                && !t.xmax_is_locked_only()
                && (o.is_current_xid(t.xmax) || o.is_in_progress(t.xmax));
            return Ok(if deleting {
                (HtsvResult::DeleteInProgress, hints)
            } else {
                (HtsvResult::InsertInProgress, hints)
            });
        }
        if o.status(t.xmin)? == XidStatus::Committed {
            hints |= committed_hint(o, t.xmin, HEAP_XMIN_COMMITTED);
        } else {
            return Ok((HtsvResult::Dead, hints | HEAP_XMIN_INVALID));
        }
    }
    if t.infomask & HEAP_XMAX_INVALID != 0 || t.xmax == INVALID_XID {
        return Ok((HtsvResult::Live, hints));
    }
    if t.xmax_is_locked_only() {
        if t.infomask & HEAP_XMAX_COMMITTED == 0
            && !o.is_current_xid(t.xmax)
            && !o.is_in_progress(t.xmax)
        {
            hints |= HEAP_XMAX_INVALID; // locker gone
        }
        return Ok((HtsvResult::Live, hints));
    }
    if t.infomask & HEAP_XMAX_COMMITTED == 0 {
        if o.is_current_xid(t.xmax) || o.is_in_progress(t.xmax) {
            return Ok((HtsvResult::DeleteInProgress, hints));
        }
        if o.status(t.xmax)? == XidStatus::Committed {
            hints |= committed_hint(o, t.xmax, HEAP_XMAX_COMMITTED);
        } else {
            return Ok((HtsvResult::Live, hints | HEAP_XMAX_INVALID));
        }
    }
    if xid_follows_or_equals(t.xmax, oldest_xmin) {
        return Ok((HtsvResult::RecentlyDead, hints));
    }
    Ok((HtsvResult::Dead, hints))
}

/// The self test (HeapTupleSatisfiesSelf): visible as of now, counting every
/// change of the current transaction (all command ids) and every committed one.
pub fn satisfies_self(t: &TupleVisibilityInfo, o: &dyn XidOracle) -> Result<Visibility> {
    // Self is dirty minus rows whose inserter is still running (and not us).
    let r = satisfies_dirty(t, o)?;
    Ok(Visibility { visible: r.visible && r.xmin_in_progress == INVALID_XID, hints: r.hints })
}

/// The dirty test (HeapTupleSatisfiesDirty): like self, but a row inserted by a
/// running transaction counts as visible and one deleted by a running transaction
/// too; the running xids are returned for the caller to wait on (unique checks).
pub fn satisfies_dirty(t: &TupleVisibilityInfo, o: &dyn XidOracle) -> Result<DirtyResult> {
    if xmax_is_multi(t) {
        let mut r = satisfies_dirty(&super::multixact::resolve(t, o)?, o)?;
        r.hints &= !XMAX_HINTS;
        return Ok(r);
    }
    let mut r = DirtyResult {
        visible: false,
        hints: 0,
        xmin_in_progress: INVALID_XID,
        xmax_in_progress: INVALID_XID,
    };
    match examine_xmin(t, o, &mut r.hints)? {
        XminState::Invalid => return Ok(r),
        XminState::Mine => {
            r.visible = if t.infomask & HEAP_XMAX_INVALID != 0
                || t.xmax == INVALID_XID
                || t.xmax_is_locked_only()
            {
                true
            } else if !o.is_current_xid(t.xmax) {
                r.hints |= HEAP_XMAX_INVALID; // our deleting subxact aborted
                true
            } else {
                false // deleted by us
            };
            return Ok(r);
        }
        XminState::Running => {
            // Inserted by someone still running: visible to a dirty look, unless
            // that same transaction already deleted it.
            r.xmin_in_progress = t.xmin;
            let self_deleted = t.xmax != INVALID_XID
                && t.infomask & HEAP_XMAX_INVALID == 0
                && !t.xmax_is_locked_only()
                && t.xmax == t.xmin;
            r.visible = !self_deleted;
            return Ok(r);
        }
        XminState::Committed => {}
    }
    if t.infomask & HEAP_XMAX_INVALID != 0 || t.xmax == INVALID_XID {
        r.visible = true;
        return Ok(r);
    }
    if t.infomask & HEAP_XMAX_COMMITTED != 0 {
        r.visible = t.xmax_is_locked_only();
        return Ok(r);
    }
    if o.is_current_xid(t.xmax) {
        r.visible = t.xmax_is_locked_only();
        return Ok(r);
    }
    if o.is_in_progress(t.xmax) {
        if !t.xmax_is_locked_only() {
            r.xmax_in_progress = t.xmax;
        }
        r.visible = true;
        return Ok(r);
    }
    if o.status(t.xmax)? != XidStatus::Committed {
        r.hints |= HEAP_XMAX_INVALID;
        r.visible = true;
        return Ok(r);
    }
    if t.xmax_is_locked_only() {
        r.hints |= HEAP_XMAX_INVALID;
        r.visible = true;
        return Ok(r);
    }
    r.hints |= committed_hint(o, t.xmax, HEAP_XMAX_COMMITTED);
    Ok(r)
}

/// The any test (SnapshotAny): every tuple.
pub fn satisfies_any(_t: &TupleVisibilityInfo) -> bool {
    true
}

/// Combo command ids (per backend, per transaction): when a transaction deletes a
/// tuple it inserted itself, both cmin and cmax must be remembered but t_cid
/// holds one number; it then holds an index into this map and HEAP_COMBOCID is
/// set. Forgotten at transaction end (no other backend ever needs them: only
/// the inserting transaction looks at cmin/cmax).
#[derive(Default, Debug)]
pub struct ComboCids {
    pairs: Vec<(CommandId, CommandId)>,
    index: std::collections::HashMap<(CommandId, CommandId), CommandId>,
}

impl ComboCids {
    /// cmin of a tuple inserted by the current transaction.
    pub fn cmin(&self, t: &TupleVisibilityInfo) -> CommandId {
        if t.infomask & HEAP_COMBOCID != 0 {
            self.pairs.get(t.cid as usize).map(|p| p.0).unwrap_or(INVALID_COMMAND_ID)
        } else {
            t.cid
        }
    }

    /// cmax of a tuple deleted by the current transaction.
    pub fn cmax(&self, t: &TupleVisibilityInfo) -> CommandId {
        if t.infomask & HEAP_COMBOCID != 0 {
            self.pairs.get(t.cid as usize).map(|p| p.1).unwrap_or(INVALID_COMMAND_ID)
        } else {
            t.cid
        }
    }

    /// The t_cid to store when command `cmax` deletes/locks tuple `t`, and
    /// whether HEAP_COMBOCID must be set. `inserted_by_me`: t.xmin is the current
    /// transaction (or one of its subtransactions).
    pub fn cid_for_delete(&mut self, t: &TupleVisibilityInfo, cmax: CommandId, inserted_by_me: bool) -> (CommandId, bool) {
        if !inserted_by_me {
            return (cmax, false);
        }
        let cmin = self.cmin(t);
        let key = (cmin, cmax);
        if let Some(&c) = self.index.get(&key) {
            return (c, true);
        }
        let c = self.pairs.len() as CommandId;
        self.pairs.push(key);
        self.index.insert(key, c);
        (c, true)
    }

    /// Forgets everything (transaction end).
    pub fn reset(&mut self) {
        self.pairs.clear();
        self.index.clear();
    }
}

#[cfg(test)]
mod tests {
    //! The truth table, one named test per rule. A fake oracle describes the world:
    //! which xids are mine, running, committed, aborted, and whether WAL is flushed.
    use super::*;
    use std::collections::HashSet;

    const ME: u32 = 100;
    const MY_SUB: u32 = 101;
    const MY_ABORTED_SUB: u32 = 102;
    const RUNNING: u32 = 110;
    const COMMITTED: u32 = 90;
    const ABORTED: u32 = 91;
    const COMMITTED_AFTER_SNAP: u32 = 120;
    const ASYNC_COMMITTED: u32 = 92;

    struct World {
        mine: HashSet<u32>,
        running: HashSet<u32>,
        committed: HashSet<u32>,
        unflushed: HashSet<u32>,
        combo: ComboCids,
        multis: std::collections::HashMap<u32, std::sync::Arc<[super::super::multixact::Member]>>,
    }

    impl World {
        fn new() -> World {
            World {
                mine: [ME, MY_SUB].into_iter().collect(),
                running: [ME, MY_SUB, RUNNING].into_iter().collect(),
                committed: [COMMITTED, COMMITTED_AFTER_SNAP, ASYNC_COMMITTED].into_iter().collect(),
                unflushed: [ASYNC_COMMITTED].into_iter().collect(),
                combo: ComboCids::default(),
                multis: multis(),
            }
        }
    }

    impl XidOracle for World {
        fn is_current_xid(&self, xid: TransactionId) -> bool {
            self.mine.contains(&xid)
        }
        fn is_in_progress(&self, xid: TransactionId) -> bool {
            self.running.contains(&xid)
        }
        fn status(&self, xid: TransactionId) -> Result<XidStatus> {
            Ok(if !xid_is_normal(xid) {
                if xid == 0 { XidStatus::Aborted } else { XidStatus::Committed }
            } else if self.committed.contains(&xid) {
                XidStatus::Committed
            } else if self.running.contains(&xid) {
                XidStatus::InProgress
            } else {
                XidStatus::Aborted
            })
        }
        fn hint_allowed(&self, xid: TransactionId) -> bool {
            !self.unflushed.contains(&xid)
        }
        fn cmin(&self, t: &TupleVisibilityInfo) -> CommandId {
            self.combo.cmin(t)
        }
        fn cmax(&self, t: &TupleVisibilityInfo) -> CommandId {
            self.combo.cmax(t)
        }
        fn in_snapshot(&self, xid: TransactionId, snap: &Snapshot) -> bool {
            snap.xid_in_snapshot(xid, &super::super::subtrans::SubTrans::new())
        }
        fn multi_members(&self, multi: u32) -> Option<std::sync::Arc<[super::super::multixact::Member]>> {
            self.multis.get(&multi).cloned()
        }
    }

    use super::super::multixact::{Member, MemberStatus as Ms};
    /// Multixact 1: RUNNING key-share + COMMITTED no-key update; 2: RUNNING share +
    /// COMMITTED share (lock only); 3: ABORTED updater + COMMITTED locker (all over);
    /// 4: MY_SUB's key share + MY_ABORTED_SUB's delete.
    fn multis() -> std::collections::HashMap<u32, std::sync::Arc<[Member]>> {
        let m = |xid, status| Member { xid, status };
        [
            (1, vec![m(RUNNING, Ms::ForKeyShare), m(COMMITTED, Ms::NoKeyUpdate)]),
            (2, vec![m(COMMITTED, Ms::ForShare), m(RUNNING, Ms::ForShare)]),
            (3, vec![m(ABORTED, Ms::Update), m(COMMITTED, Ms::ForShare)]),
            (4, vec![m(MY_SUB, Ms::ForKeyShare), m(MY_ABORTED_SUB, Ms::Update)]),
        ]
        .into_iter()
        .map(|(id, v)| (id, v.into()))
        .collect()
    }

    #[test]
    fn multi_with_committed_updater_reads_as_updated_and_gets_no_xmax_hint() {
        let t = TupleVisibilityInfo { ctid_is_self: false, ..tup(COMMITTED, 1, 0, HEAP_XMIN_COMMITTED | HEAP_XMAX_IS_MULTI) };
        let v = mvcc(t);
        assert!(!v.visible);
        assert_eq!(v.hints & (HEAP_XMAX_COMMITTED | HEAP_XMAX_INVALID), 0);
        assert_eq!(upd(t).0, TmResult::Updated);
    }

    #[test]
    fn multi_of_lockers_is_being_modified_while_one_runs() {
        let lock_only = HEAP_XMIN_COMMITTED | HEAP_XMAX_IS_MULTI | HEAP_XMAX_LOCK_ONLY | HEAP_XMAX_SHR_LOCK;
        assert!(mvcc(tup(COMMITTED, 2, 0, lock_only)).visible);
        assert_eq!(upd(tup(COMMITTED, 2, 0, lock_only)).0, TmResult::BeingModified);
        // All members over (3), or forgotten (99): free to change.
        assert_eq!(upd(tup(COMMITTED, 3, 0, HEAP_XMIN_COMMITTED | HEAP_XMAX_IS_MULTI)).0, TmResult::Ok);
        assert_eq!(upd(tup(COMMITTED, 99, 0, lock_only)).0, TmResult::Ok);
        assert_eq!(vac(tup(COMMITTED, 3, 0, HEAP_XMIN_COMMITTED | HEAP_XMAX_IS_MULTI), 200).0, HtsvResult::Live);
    }

    #[test]
    fn multi_whose_updater_subxact_aborted_keeps_our_lock_and_the_row() {
        let t = tup(COMMITTED, 4, 0, HEAP_XMIN_COMMITTED | HEAP_XMAX_IS_MULTI);
        assert!(mvcc(t).visible);
        assert_eq!(upd(t).0, TmResult::BeingModified);
    }

    /// Snapshot taken by ME at command 5: RUNNING and ME running; 120 is after xmax.
    fn snap() -> Snapshot {
        Snapshot {
            xmin: 100,
            xmax: 115,
            xip: vec![ME, RUNNING].into(),
            subxip: vec![MY_SUB].into(),
            suboverflowed: false,
            curcid: 5,
            completion_count: 0,
        }
    }

    fn tup(xmin: u32, xmax: u32, cid: u32, infomask: u16) -> TupleVisibilityInfo {
        TupleVisibilityInfo { xmin, xmax, cid, infomask, ctid_is_self: true }
    }

    fn mvcc(t: TupleVisibilityInfo) -> Visibility {
        satisfies_mvcc(&t, &snap(), &World::new()).unwrap()
    }

    #[test]
    fn mvcc_committed_insert_is_visible_and_hinted() {
        assert_eq!(mvcc(tup(COMMITTED, 0, 0, HEAP_XMAX_INVALID)), Visibility { visible: true, hints: HEAP_XMIN_COMMITTED });
    }

    #[test]
    fn mvcc_aborted_insert_is_invisible_and_hinted_invalid() {
        assert_eq!(mvcc(tup(ABORTED, 0, 0, 0)), Visibility { visible: false, hints: HEAP_XMIN_INVALID });
    }

    #[test]
    fn mvcc_xmin_invalid_hint_is_invisible() {
        assert!(!mvcc(tup(COMMITTED, 0, 0, HEAP_XMIN_INVALID)).visible);
    }

    #[test]
    fn mvcc_running_insert_is_invisible() {
        assert_eq!(mvcc(tup(RUNNING, 0, 0, 0)), Visibility { visible: false, hints: 0 });
    }

    #[test]
    fn mvcc_insert_committed_after_snapshot_is_invisible_even_with_hint() {
        assert!(!mvcc(tup(COMMITTED_AFTER_SNAP, 0, 0, 0)).visible);
        assert!(!mvcc(tup(COMMITTED_AFTER_SNAP, 0, 0, HEAP_XMIN_COMMITTED)).visible);
    }

    #[test]
    fn mvcc_own_insert_by_earlier_command_is_visible() {
        assert!(mvcc(tup(ME, 0, 4, HEAP_XMAX_INVALID)).visible);
    }

    #[test]
    fn mvcc_own_insert_by_current_or_later_command_is_invisible() {
        assert!(!mvcc(tup(ME, 0, 5, HEAP_XMAX_INVALID)).visible);
        assert!(!mvcc(tup(ME, 0, 6, 0)).visible);
    }

    #[test]
    fn mvcc_own_subxact_insert_counts_as_mine() {
        assert!(mvcc(tup(MY_SUB, 0, 1, 0)).visible);
    }

    #[test]
    fn mvcc_aborted_subxact_insert_is_invisible() {
        assert_eq!(mvcc(tup(MY_ABORTED_SUB, 0, 1, 0)), Visibility { visible: false, hints: HEAP_XMIN_INVALID });
    }

    #[test]
    fn mvcc_own_delete_by_earlier_command_hides_with_combo_cid() {
        let mut w = World::new();
        let t = tup(ME, ME, 1, 0);
        let (cid, combo) = w.combo.cid_for_delete(&t, 3, true);
        assert!(combo);
        let t = tup(ME, ME, cid, HEAP_COMBOCID);
        assert_eq!(w.combo.cmin(&t), 1);
        assert_eq!(w.combo.cmax(&t), 3);
        assert!(!satisfies_mvcc(&t, &snap(), &w).unwrap().visible);
        let mut s = snap();
        s.curcid = 3; // the deleting command's own scan still sees it
        assert!(satisfies_mvcc(&t, &s, &w).unwrap().visible);
        s.curcid = 1; // the inserting command does not
        assert!(!satisfies_mvcc(&t, &s, &w).unwrap().visible);
    }

    #[test]
    fn mvcc_own_insert_deleted_by_aborted_subxact_is_visible() {
        assert_eq!(mvcc(tup(ME, MY_ABORTED_SUB, 1, 0)), Visibility { visible: true, hints: HEAP_XMAX_INVALID });
    }

    #[test]
    fn mvcc_own_insert_locked_only_is_visible() {
        assert!(mvcc(tup(ME, ME, 1, HEAP_XMAX_LOCK_ONLY | HEAP_XMAX_EXCL_LOCK)).visible);
    }

    #[test]
    fn mvcc_delete_by_committed_hides_and_hints() {
        assert_eq!(
            mvcc(tup(COMMITTED, COMMITTED, 0, HEAP_XMIN_COMMITTED)),
            Visibility { visible: false, hints: HEAP_XMAX_COMMITTED }
        );
    }

    #[test]
    fn mvcc_delete_by_running_keeps_visible() {
        assert!(mvcc(tup(COMMITTED, RUNNING, 0, HEAP_XMIN_COMMITTED)).visible);
    }

    #[test]
    fn mvcc_delete_committed_after_snapshot_keeps_visible() {
        assert!(mvcc(tup(COMMITTED, COMMITTED_AFTER_SNAP, 0, HEAP_XMIN_COMMITTED)).visible);
        assert!(mvcc(tup(COMMITTED, COMMITTED_AFTER_SNAP, 0, HEAP_XMIN_COMMITTED | HEAP_XMAX_COMMITTED)).visible);
    }

    #[test]
    fn mvcc_delete_by_aborted_keeps_visible_and_hints_invalid() {
        assert_eq!(
            mvcc(tup(COMMITTED, ABORTED, 0, HEAP_XMIN_COMMITTED)),
            Visibility { visible: true, hints: HEAP_XMAX_INVALID }
        );
    }

    #[test]
    fn mvcc_lock_only_xmax_is_not_a_delete() {
        assert!(mvcc(tup(COMMITTED, COMMITTED, 0, HEAP_XMIN_COMMITTED | HEAP_XMAX_LOCK_ONLY)).visible);
        assert!(mvcc(tup(COMMITTED, RUNNING, 0, HEAP_XMIN_COMMITTED | HEAP_XMAX_EXCL_LOCK)).visible);
    }

    #[test]
    fn mvcc_own_delete_of_committed_row() {
        assert!(!mvcc(tup(COMMITTED, ME, 2, HEAP_XMIN_COMMITTED)).visible);
        assert!(mvcc(tup(COMMITTED, ME, 5, HEAP_XMIN_COMMITTED)).visible);
    }

    #[test]
    fn mvcc_frozen_xmin_is_always_visible() {
        assert!(mvcc(tup(FROZEN_XID, 0, 0, 0)).visible);
        assert!(mvcc(tup(RUNNING, 0, 0, HEAP_XMIN_FROZEN | HEAP_XMAX_INVALID)).visible);
    }

    #[test]
    fn mvcc_async_commit_defers_committed_hint() {
        assert_eq!(mvcc(tup(ASYNC_COMMITTED, 0, 0, 0)), Visibility { visible: true, hints: 0 });
        assert_eq!(
            mvcc(tup(COMMITTED, ASYNC_COMMITTED, 0, HEAP_XMIN_COMMITTED)),
            Visibility { visible: false, hints: 0 }
        );
    }

    fn upd(t: TupleVisibilityInfo) -> (TmResult, u16) {
        satisfies_update(&t, 5, &World::new()).unwrap()
    }

    #[test]
    fn update_live_committed_row_is_ok() {
        assert_eq!(upd(tup(COMMITTED, 0, 0, HEAP_XMAX_INVALID)), (TmResult::Ok, HEAP_XMIN_COMMITTED));
    }

    #[test]
    fn update_row_of_running_inserter_is_invisible() {
        assert_eq!(upd(tup(RUNNING, 0, 0, 0)).0, TmResult::Invisible);
        assert_eq!(upd(tup(ABORTED, 0, 0, 0)), (TmResult::Invisible, HEAP_XMIN_INVALID));
    }

    #[test]
    fn update_row_being_deleted_is_being_modified() {
        assert_eq!(upd(tup(COMMITTED, RUNNING, 0, HEAP_XMIN_COMMITTED)).0, TmResult::BeingModified);
        assert_eq!(
            upd(tup(COMMITTED, RUNNING, 0, HEAP_XMIN_COMMITTED | HEAP_XMAX_LOCK_ONLY)).0,
            TmResult::BeingModified
        );
    }

    #[test]
    fn update_row_deleted_or_updated_by_committed() {
        assert_eq!(upd(tup(COMMITTED, COMMITTED, 0, HEAP_XMIN_COMMITTED)), (TmResult::Deleted, HEAP_XMAX_COMMITTED));
        let mut t = tup(COMMITTED, COMMITTED, 0, HEAP_XMIN_COMMITTED | HEAP_XMAX_COMMITTED);
        t.ctid_is_self = false;
        assert_eq!(upd(t), (TmResult::Updated, 0));
    }

    #[test]
    fn update_row_with_aborted_or_finished_locker_is_ok() {
        assert_eq!(upd(tup(COMMITTED, ABORTED, 0, HEAP_XMIN_COMMITTED)), (TmResult::Ok, HEAP_XMAX_INVALID));
        assert_eq!(
            upd(tup(COMMITTED, COMMITTED, 0, HEAP_XMIN_COMMITTED | HEAP_XMAX_LOCK_ONLY)),
            (TmResult::Ok, HEAP_XMAX_INVALID)
        );
    }

    #[test]
    fn update_own_row_self_modified_or_invisible() {
        assert_eq!(upd(tup(COMMITTED, ME, 5, HEAP_XMIN_COMMITTED)).0, TmResult::SelfModified);
        assert_eq!(upd(tup(COMMITTED, ME, 4, HEAP_XMIN_COMMITTED)).0, TmResult::Invisible);
        assert_eq!(upd(tup(ME, 0, 6, 0)).0, TmResult::Invisible);
        assert_eq!(upd(tup(ME, 0, 2, HEAP_XMAX_INVALID)).0, TmResult::Ok);
        assert_eq!(upd(tup(COMMITTED, ME, 5, HEAP_XMIN_COMMITTED | HEAP_XMAX_LOCK_ONLY)).0, TmResult::BeingModified);
    }

    fn vac(t: TupleVisibilityInfo, oldest: u32) -> (HtsvResult, u16) {
        satisfies_vacuum(&t, oldest, &World::new()).unwrap()
    }

    #[test]
    fn vacuum_aborted_insert_is_dead() {
        assert_eq!(vac(tup(ABORTED, 0, 0, 0), 100), (HtsvResult::Dead, HEAP_XMIN_INVALID));
    }

    #[test]
    fn vacuum_running_insert_and_delete() {
        assert_eq!(vac(tup(RUNNING, 0, 0, 0), 100).0, HtsvResult::InsertInProgress);
        assert_eq!(vac(tup(RUNNING, RUNNING, 0, 0), 100).0, HtsvResult::DeleteInProgress);
        assert_eq!(vac(tup(COMMITTED, RUNNING, 0, HEAP_XMIN_COMMITTED), 100).0, HtsvResult::DeleteInProgress);
    }

    #[test]
    fn vacuum_live_rows() {
        assert_eq!(vac(tup(COMMITTED, 0, 0, HEAP_XMAX_INVALID), 100), (HtsvResult::Live, HEAP_XMIN_COMMITTED));
        assert_eq!(
            vac(tup(COMMITTED, ABORTED, 0, HEAP_XMIN_COMMITTED), 100),
            (HtsvResult::Live, HEAP_XMAX_INVALID)
        );
        assert_eq!(
            vac(tup(COMMITTED, RUNNING, 0, HEAP_XMIN_COMMITTED | HEAP_XMAX_LOCK_ONLY), 100),
            (HtsvResult::Live, 0)
        );
    }

    #[test]
    fn vacuum_deleted_dead_only_before_horizon() {
        let t = tup(COMMITTED, COMMITTED, 0, HEAP_XMIN_COMMITTED);
        assert_eq!(vac(t, COMMITTED), (HtsvResult::RecentlyDead, HEAP_XMAX_COMMITTED));
        assert_eq!(vac(t, COMMITTED + 1), (HtsvResult::Dead, HEAP_XMAX_COMMITTED));
    }

    #[test]
    fn self_sees_own_and_committed_not_running() {
        let w = World::new();
        assert!(satisfies_self(&tup(ME, 0, 9, 0), &w).unwrap().visible);
        assert!(!satisfies_self(&tup(ME, ME, 9, 0), &w).unwrap().visible);
        assert!(satisfies_self(&tup(COMMITTED_AFTER_SNAP, 0, 0, 0), &w).unwrap().visible);
        assert!(!satisfies_self(&tup(RUNNING, 0, 0, 0), &w).unwrap().visible);
        assert!(satisfies_self(&tup(COMMITTED, RUNNING, 0, HEAP_XMIN_COMMITTED), &w).unwrap().visible);
        assert!(!satisfies_self(&tup(COMMITTED, COMMITTED, 0, HEAP_XMIN_COMMITTED), &w).unwrap().visible);
        assert!(!satisfies_self(&tup(ABORTED, 0, 0, 0), &w).unwrap().visible);
    }

    #[test]
    fn dirty_reports_running_inserter_and_deleter() {
        let w = World::new();
        let r = satisfies_dirty(&tup(RUNNING, 0, 0, 0), &w).unwrap();
        assert!(r.visible);
        assert_eq!((r.xmin_in_progress, r.xmax_in_progress), (RUNNING, INVALID_XID));
        let r = satisfies_dirty(&tup(COMMITTED, RUNNING, 0, HEAP_XMIN_COMMITTED), &w).unwrap();
        assert!(r.visible);
        assert_eq!((r.xmin_in_progress, r.xmax_in_progress), (INVALID_XID, RUNNING));
        let r = satisfies_dirty(&tup(COMMITTED, COMMITTED, 0, HEAP_XMIN_COMMITTED), &w).unwrap();
        assert!(!r.visible);
        let r = satisfies_dirty(&tup(RUNNING, RUNNING, 0, 0), &w).unwrap();
        assert!(!r.visible);
    }

    #[test]
    fn any_sees_everything() {
        assert!(satisfies_any(&tup(ABORTED, 0, 0, HEAP_XMIN_INVALID)));
    }
}
