//! Transaction ids, full (epoch-extended) transaction ids, command ids, and the
//! shared xid generator with its wraparound stop limit.
//!
//! Xids are 32 bits, compared modulo 2^32 (see the README, "Transaction ids"):
//! `a` precedes `b` when `(a - b) mod 2^32`, read as a signed 32-bit number, is
//! negative. The generator hands out [`FullTransactionId`]s (epoch << 32 | xid) so
//! the engine itself never confuses two xids of different epochs.

use crate::error::{Error, Result, SqlState};
use crate::lmgr::lwlock::{LwLock, Tranche};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;

/// A 32-bit transaction id, as stored in tuple headers (t_xmin, t_xmax).
pub type TransactionId = u32;

/// No transaction.
pub const INVALID_XID: TransactionId = 0;
/// The transaction that initialised the cluster; always committed.
pub const BOOTSTRAP_XID: TransactionId = 1;
/// Marks a frozen tuple: committed and older than every snapshot.
pub const FROZEN_XID: TransactionId = 2;
/// The first xid handed out to a real transaction (after every wraparound too).
pub const FIRST_NORMAL_XID: TransactionId = 3;

/// Xids that remain usable when the stop limit has been passed: none. The margin
/// PostgreSQL keeps between the stop limit and the wraparound point.
pub const STOP_LIMIT_MARGIN: u32 = 3_000_000;
/// Warnings begin this many xids before the stop limit.
pub const WARN_LIMIT_MARGIN: u32 = 40_000_000;

/// Is `xid` a normal (not special) xid?
#[inline]
pub fn xid_is_normal(xid: TransactionId) -> bool {
    xid >= FIRST_NORMAL_XID
}

/// `a < b` in transaction order. Special xids compare as plain unsigned numbers
/// (they precede every normal xid); normal xids compare modulo 2^32, so each xid
/// has 2^31 - 1 predecessors and 2^31 successors.
#[inline]
pub fn xid_precedes(a: TransactionId, b: TransactionId) -> bool {
    if !xid_is_normal(a) || !xid_is_normal(b) {
        return a < b;
    }
    (a.wrapping_sub(b) as i32) < 0
}

/// `a <= b` in transaction order.
#[inline]
pub fn xid_precedes_or_equals(a: TransactionId, b: TransactionId) -> bool {
    a == b || xid_precedes(a, b)
}

/// `a > b` in transaction order.
#[inline]
pub fn xid_follows(a: TransactionId, b: TransactionId) -> bool {
    xid_precedes(b, a)
}

/// `a >= b` in transaction order.
#[inline]
pub fn xid_follows_or_equals(a: TransactionId, b: TransactionId) -> bool {
    a == b || xid_precedes(b, a)
}

/// The later of two xids in transaction order.
#[inline]
pub fn xid_max(a: TransactionId, b: TransactionId) -> TransactionId {
    if xid_precedes(a, b) {
        b
    } else {
        a
    }
}

/// The xid after `xid`, skipping the special xids at wraparound.
#[inline]
pub fn xid_advance(xid: TransactionId) -> TransactionId {
    let n = xid.wrapping_add(1);
    if n < FIRST_NORMAL_XID {
        FIRST_NORMAL_XID
    } else {
        n
    }
}

/// The xid before `xid`, skipping the special xids at wraparound.
#[inline]
pub fn xid_retreat(xid: TransactionId) -> TransactionId {
    let p = xid.wrapping_sub(1);
    if p < FIRST_NORMAL_XID {
        u32::MAX
    } else {
        p
    }
}

/// A 64-bit transaction id: epoch in the high 32 bits, xid in the low 32 bits
/// (PostgreSQL 13's FullTransactionId). Never wraps in practice.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FullTransactionId(pub u64);

impl FullTransactionId {
    pub const INVALID: FullTransactionId = FullTransactionId(0);
    /// Epoch 0, xid 3: where a new cluster starts.
    pub const FIRST_NORMAL: FullTransactionId = FullTransactionId(FIRST_NORMAL_XID as u64);

    pub fn from_epoch_xid(epoch: u32, xid: TransactionId) -> Self {
        FullTransactionId((epoch as u64) << 32 | xid as u64)
    }
    pub fn epoch(self) -> u32 {
        (self.0 >> 32) as u32
    }
    pub fn xid(self) -> TransactionId {
        self.0 as u32
    }
    pub fn is_valid(self) -> bool {
        self.xid() != INVALID_XID
    }
    /// The next full xid, skipping xids 0..=2 of each new epoch.
    pub fn advance(self) -> Self {
        let mut n = self.0 + 1;
        while (n as u32) < FIRST_NORMAL_XID {
            n += 1;
        }
        FullTransactionId(n)
    }
}

/// A command id within one transaction (t_cid / cmin / cmax).
pub type CommandId = u32;
/// The first command of a transaction.
pub const FIRST_COMMAND_ID: CommandId = 0;
/// No command; also the overflow limit (2^32 - 1 is never handed out).
pub const INVALID_COMMAND_ID: CommandId = u32::MAX;

/// The command id after `cid`, or PostgreSQL's 54000 error when the transaction
/// has used up 2^32 - 2 commands.
pub fn next_command_id(cid: CommandId) -> Result<CommandId> {
    let n = cid.wrapping_add(1);
    if n == INVALID_COMMAND_ID || n == FIRST_COMMAND_ID {
        return Err(Error::user(
            SqlState::PROGRAM_LIMIT_EXCEEDED,
            "cannot have more than 2^32-2 commands in a transaction",
        ));
    }
    Ok(n)
}

/// Limits computed from the oldest unfrozen xid of the cluster.
#[derive(Clone, Debug)]
struct Limits {
    /// Oldest xid that may still appear unfrozen in some table.
    oldest_frozen: TransactionId,
    /// Database holding that oldest xid, for the error text.
    oldest_db: String,
    /// New xids are refused from here on.
    stop: TransactionId,
    /// Warnings from here on.
    warn: TransactionId,
}

impl Limits {
    fn from_oldest(oldest: TransactionId, db: &str) -> Limits {
        // Wraparound point: 2^31 - 1 xids after `oldest`.
        let mut wrap = oldest.wrapping_add(i32::MAX as u32);
        if wrap < FIRST_NORMAL_XID {
            wrap = wrap.wrapping_add(FIRST_NORMAL_XID);
        }
        let mut stop = wrap.wrapping_sub(STOP_LIMIT_MARGIN);
        if stop < FIRST_NORMAL_XID {
            stop = stop.wrapping_sub(FIRST_NORMAL_XID);
        }
        let mut warn = stop.wrapping_sub(WARN_LIMIT_MARGIN);
        if warn < FIRST_NORMAL_XID {
            warn = warn.wrapping_sub(FIRST_NORMAL_XID);
        }
        Limits { oldest_frozen: oldest, oldest_db: db.to_string(), stop, warn }
    }
}

/// The shared xid counter (PostgreSQL's nextXid in TransamVariables), guarded by
/// the XidGen LWLock.
pub struct XidGenerator {
    /// Held exclusive while an xid is handed out and published (see
    /// [`XidGenerator::assign`]); shared to read a consistent `next`.
    lock: LwLock,
    /// The next full xid to hand out. Written only under `lock` exclusive; read
    /// without the lock by monitoring code (a stale value is harmless there).
    next: AtomicU64,
    /// Wraparound limits; changed by [`XidGenerator::set_oldest_frozen_xid`].
    limits: Mutex<Limits>,
    /// Copy of `limits.warn` readable without the mutex (Relaxed: only a filter
    /// for the fast path; the decision is re-made under `limits`).
    warn_cached: AtomicU32,
}

impl XidGenerator {
    pub fn new(next: FullTransactionId) -> XidGenerator {
        let next = if next.xid() < FIRST_NORMAL_XID { next.advance() } else { next };
        // Until the integrator tells us, assume nothing older than `next` is unfrozen.
        let limits = Limits::from_oldest(next.xid(), "postgres");
        XidGenerator {
            lock: LwLock::new(Tranche::XidGen),
            next: AtomicU64::new(next.0),
            warn_cached: AtomicU32::new(limits.warn),
            limits: Mutex::new(limits),
        }
    }

    /// The next full xid that will be handed out (for checkpoints).
    pub fn next_full_xid(&self) -> FullTransactionId {
        let _g = self.lock.shared();
        FullTransactionId(self.next.load(Ordering::Acquire))
    }

    /// Sets the next full xid (recovery, from the checkpoint record or redo).
    pub fn set_next_full_xid(&self, next: FullTransactionId) {
        let _g = self.lock.exclusive();
        let next = if next.xid() < FIRST_NORMAL_XID { next.advance() } else { next };
        self.next.store(next.0, Ordering::Release);
    }

    /// Makes sure `next` is after `xid` (redo of a record written by `xid`).
    pub fn advance_past(&self, xid: TransactionId) {
        let _g = self.lock.exclusive();
        let cur = FullTransactionId(self.next.load(Ordering::Acquire));
        if xid_follows_or_equals(xid, cur.xid()) {
            let mut epoch = cur.epoch();
            if xid < cur.xid() {
                epoch += 1; // xid is in the next epoch
            }
            let n = FullTransactionId::from_epoch_xid(epoch, xid).advance();
            self.next.store(n.0, Ordering::Release);
        }
    }

    /// Sets the oldest unfrozen xid of the cluster (datfrozenxid's minimum) and the
    /// database holding it; recomputes the stop limit.
    pub fn set_oldest_frozen_xid(&self, oldest: TransactionId, db: &str) {
        let l = Limits::from_oldest(oldest, db);
        self.warn_cached.store(l.warn, Ordering::Relaxed);
        *self.limits.lock().unwrap_or_else(|e| e.into_inner()) = l;
    }

    /// The oldest unfrozen xid last set.
    pub fn oldest_frozen_xid(&self) -> TransactionId {
        self.limits.lock().unwrap_or_else(|e| e.into_inner()).oldest_frozen
    }

    /// Hands out a new xid. `publish` runs while the XidGen lock is still held: it
    /// must extend the commit log to cover the xid and store the xid in the caller's
    /// ProcArray slot, so that every xid below `next` is either visible in the
    /// ProcArray or finished (the snapshot invariant in the README). If `publish`
    /// fails the xid is not consumed.
    pub fn assign(
        &self,
        publish: impl FnOnce(FullTransactionId) -> Result<()>,
    ) -> Result<FullTransactionId> {
        let _g = self.lock.exclusive();
        let full = FullTransactionId(self.next.load(Ordering::Acquire));
        let xid = full.xid();
        let warn = self.warn_cached.load(Ordering::Relaxed);
        if xid_follows_or_equals(xid, warn) {
            let l = self.limits.lock().unwrap_or_else(|e| e.into_inner()).clone();
            if xid_follows_or_equals(xid, l.stop) {
                return Err(Error::user(
                    SqlState::PROGRAM_LIMIT_EXCEEDED,
                    format!(
                        "database is not accepting commands to avoid wraparound data loss in database \"{}\"",
                        l.oldest_db
                    ),
                )
                .with_hint(
                    "Stop the postmaster and vacuum that database in single-user mode.\n\
                     You might also need to commit or roll back old prepared transactions, or drop stale replication slots.",
                ));
            }
            // Between the warn and stop limits PostgreSQL emits a WARNING; the
            // engine has no notice channel yet, so the xid is simply handed out.
        }
        publish(full)?;
        self.next.store(full.advance().0, Ordering::Release);
        Ok(full)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedes_is_modulo_2_31() {
        assert!(xid_precedes(3, 4));
        assert!(!xid_precedes(4, 3));
        assert!(xid_precedes(u32::MAX, 3 + 5)); // across wraparound
        assert!(xid_precedes(100, 100 + (1 << 31) - 1));
        assert!(!xid_precedes(100, 100 + (1 << 31) + 1));
        assert!(xid_precedes(FROZEN_XID, 5));
        assert!(xid_precedes(INVALID_XID, BOOTSTRAP_XID));
        assert_eq!(xid_advance(u32::MAX), FIRST_NORMAL_XID);
        assert_eq!(xid_retreat(FIRST_NORMAL_XID), u32::MAX);
    }

    #[test]
    fn full_xid_skips_specials_at_epoch_change() {
        let f = FullTransactionId::from_epoch_xid(0, u32::MAX).advance();
        assert_eq!(f.epoch(), 1);
        assert_eq!(f.xid(), FIRST_NORMAL_XID);
    }

    #[test]
    fn command_id_overflow_is_54000() {
        assert_eq!(next_command_id(0).unwrap(), 1);
        let e = next_command_id(u32::MAX - 1).unwrap_err();
        assert_eq!(e.sqlstate().as_str(), "54000");
        assert_eq!(e.to_string(), "cannot have more than 2^32-2 commands in a transaction");
    }

    #[test]
    fn stop_limit_refuses_new_xids() {
        let g = XidGenerator::new(FullTransactionId::FIRST_NORMAL);
        g.set_oldest_frozen_xid(FIRST_NORMAL_XID, "db1");
        let stop = FIRST_NORMAL_XID + i32::MAX as u32 - STOP_LIMIT_MARGIN;
        g.set_next_full_xid(FullTransactionId::from_epoch_xid(0, stop - 1));
        assert_eq!(g.assign(|_| Ok(())).unwrap().xid(), stop - 1);
        let e = g.assign(|_| Ok(())).unwrap_err();
        assert_eq!(e.sqlstate().as_str(), "54000");
        assert_eq!(
            e.to_string(),
            "database is not accepting commands to avoid wraparound data loss in database \"db1\""
        );
        // VACUUM advanced the oldest frozen xid: new xids again.
        g.set_oldest_frozen_xid(stop - 10, "db1");
        assert_eq!(g.assign(|_| Ok(())).unwrap().xid(), stop);
    }

    #[test]
    fn failed_publish_does_not_consume() {
        let g = XidGenerator::new(FullTransactionId::FIRST_NORMAL);
        assert!(g.assign(|_| Err(Error::internal("x"))).is_err());
        assert_eq!(g.assign(|_| Ok(())).unwrap().xid(), FIRST_NORMAL_XID);
    }
}
