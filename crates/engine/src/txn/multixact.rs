//! MultiXacts: one xmax standing for several transactions that lock (and at most
//! one that updates) a row at once (README "MultiXacts").
//!
//! A [`MultiXactId`] names an immutable member list: `(xid, status)` pairs. A row
//! whose xmax is a multixact has `HEAP_XMAX_IS_MULTI` in t_infomask. Adding a
//! locker never changes a multixact: it creates a new one with the old members
//! that still matter plus the new one, and stores that id in the row (under the
//! page's exclusive content lock, WAL-logged).
//!
//! Storage: the members live in memory, in a map under one mutex. Each creation is
//! WAL-logged (MultiXact CREATE, inserted before the heap record that stores the
//! id, so redo re-creates it first). A checkpoint writes the map, minus the
//! multixacts that no longer matter, to `pg_multixact/members` (written to a
//! temporary file, fsynced, renamed), after the redo pointer is fixed: so the file
//! plus the WAL after the redo pointer hold every multixact that matters.

use super::visibility::{TupleVisibilityInfo, XidOracle};
use super::xid::TransactionId;
use super::XidStatus;
use crate::error::{Error, Result};
use crate::heap::tuple::{
    HEAP_LOCK_MASK, HEAP_XMAX_COMMITTED, HEAP_XMAX_EXCL_LOCK, HEAP_XMAX_INVALID, HEAP_XMAX_IS_MULTI,
    HEAP_XMAX_KEYSHR_LOCK, HEAP_XMAX_LOCK_ONLY, HEAP_XMAX_SHR_LOCK,
};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A multixact id: its own 32-bit counter, unrelated to xids. 0 is invalid.
pub type MultiXactId = u32;

/// What a member does to the row (PostgreSQL's MultiXactStatus, same order).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum MemberStatus {
    ForKeyShare = 0,
    ForShare = 1,
    ForNoKeyUpdate = 2,
    ForUpdate = 3,
    /// An UPDATE that changed no key column (the row's updater).
    NoKeyUpdate = 4,
    /// An UPDATE of a key column, or a DELETE (the row's updater).
    Update = 5,
}

impl MemberStatus {
    pub fn from_u8(b: u8) -> Option<MemberStatus> {
        Some(match b {
            0 => MemberStatus::ForKeyShare,
            1 => MemberStatus::ForShare,
            2 => MemberStatus::ForNoKeyUpdate,
            3 => MemberStatus::ForUpdate,
            4 => MemberStatus::NoKeyUpdate,
            5 => MemberStatus::Update,
            _ => return None,
        })
    }

    /// The member changed the row (at most one member of a multixact does).
    pub fn is_update(self) -> bool {
        matches!(self, MemberStatus::NoKeyUpdate | MemberStatus::Update)
    }

    /// The row-lock strength the member holds, 0 (key share) ..= 3 (update): an
    /// update holds the lock of its strength.
    pub fn strength(self) -> u8 {
        match self {
            MemberStatus::ForKeyShare => 0,
            MemberStatus::ForShare => 1,
            MemberStatus::ForNoKeyUpdate | MemberStatus::NoKeyUpdate => 2,
            MemberStatus::ForUpdate | MemberStatus::Update => 3,
        }
    }

    /// PostgreSQL's row-lock conflict table over strengths:
    ///
    /// ```text
    ///                 KEY SHARE  SHARE  NO KEY UPDATE  UPDATE
    /// KEY SHARE                                          X
    /// SHARE                                  X           X
    /// NO KEY UPDATE               X          X           X
    /// UPDATE             X        X          X           X
    /// ```
    pub fn conflicts(a: u8, b: u8) -> bool {
        const TABLE: [[bool; 4]; 4] = [
            [false, false, false, true],
            [false, false, true, true],
            [false, true, true, true],
            [true, true, true, true],
        ];
        TABLE[a as usize][b as usize]
    }

    /// The lock-only infomask bits of this strength (for a multixact, those of
    /// its strongest member).
    pub fn lock_bits(self) -> u16 {
        match self.strength() {
            0 => HEAP_XMAX_KEYSHR_LOCK,
            1 => HEAP_XMAX_SHR_LOCK,
            _ => HEAP_XMAX_EXCL_LOCK,
        }
    }
}

/// One member of a multixact.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    pub xid: TransactionId,
    pub status: MemberStatus,
}

/// The members of every multixact that may still matter.
pub struct MultiXacts {
    /// `pg_multixact` (the checkpoint file `members` is in it).
    dir: PathBuf,
    /// Protected by the mutex (a leaf lock: nothing is taken under it).
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The next id to hand out; ids below it were handed out (or skipped).
    next: MultiXactId,
    members: BTreeMap<MultiXactId, Arc<[Member]>>,
}

const FILE_MAGIC: &[u8; 8] = b"FGMXACT1";
const FIRST_MULTI: MultiXactId = 1;

/// The WAL payload of MultiXact CREATE: id u32, n u16, then n x (xid u32,
/// status u8), little-endian (docs in the txn README).
pub fn encode_create(id: MultiXactId, members: &[Member]) -> Vec<u8> {
    let mut out = Vec::with_capacity(6 + 5 * members.len());
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&(members.len() as u16).to_le_bytes());
    for m in members {
        out.extend_from_slice(&m.xid.to_le_bytes());
        out.push(m.status as u8);
    }
    out
}

fn decode_entry(b: &[u8]) -> Result<(MultiXactId, Vec<Member>, usize)> {
    let bad = || Error::corrupt("multixact entry is truncated or has a bad status");
    if b.len() < 6 {
        return Err(bad());
    }
    let id = u32::from_le_bytes(b[0..4].try_into().unwrap());
    let n = u16::from_le_bytes(b[4..6].try_into().unwrap()) as usize;
    let end = 6 + 5 * n;
    if b.len() < end {
        return Err(bad());
    }
    let mut members = Vec::with_capacity(n);
    for i in 0..n {
        let p = 6 + 5 * i;
        let xid = u32::from_le_bytes(b[p..p + 4].try_into().unwrap());
        let status = MemberStatus::from_u8(b[p + 4]).ok_or_else(bad)?;
        members.push(Member { xid, status });
    }
    Ok((id, members, end))
}

impl MultiXacts {
    /// Loads `dir/members` if a checkpoint wrote one (a new cluster has none).
    pub fn open(dir: impl Into<PathBuf>) -> Result<MultiXacts> {
        let dir = dir.into();
        let mut state = State { next: FIRST_MULTI, members: BTreeMap::new() };
        let path = dir.join("members");
        match std::fs::read(&path) {
            Ok(bytes) => {
                if bytes.len() < 12 || &bytes[0..8] != FILE_MAGIC {
                    return Err(Error::corrupt(format!("\"{}\" is not a multixact members file", path.display())));
                }
                state.next = u32::from_le_bytes(bytes[8..12].try_into().unwrap()).max(FIRST_MULTI);
                let mut rest = &bytes[12..];
                while !rest.is_empty() {
                    let (id, members, used) = decode_entry(rest)
                        .map_err(|e| Error::corrupt(format!("\"{}\": {e}", path.display())))?;
                    state.members.insert(id, members.into());
                    rest = &rest[used..];
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(path.display(), e)),
        }
        Ok(MultiXacts { dir, state: Mutex::new(state) })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands out a new id for `members` and records them. The caller WAL-logs the
    /// creation ([`encode_create`]) before the heap change that stores the id.
    pub fn create(&self, members: &[Member]) -> MultiXactId {
        let mut st = self.lock();
        let id = st.next;
        st.next = match id.wrapping_add(1) {
            0 => FIRST_MULTI,
            n => n,
        };
        st.members.insert(id, members.into());
        id
    }

    /// The members of `id`; `None` if it was forgotten (every member had ended
    /// and none updated the row: the retention rule) or never existed.
    pub fn members(&self, id: MultiXactId) -> Option<Arc<[Member]>> {
        self.lock().members.get(&id).cloned()
    }

    /// Redo of MultiXact CREATE: idempotent.
    pub fn redo(&self, payload: &[u8]) -> Result<()> {
        let (id, members, _) = decode_entry(payload)?;
        let mut st = self.lock();
        st.members.insert(id, members.into());
        if id >= st.next {
            st.next = id.wrapping_add(1).max(FIRST_MULTI);
        }
        Ok(())
    }

    /// Forgets the multixacts `keep` rejects, then writes the rest (and the next
    /// id) to `pg_multixact/members` durably. Called by the checkpoint after its
    /// redo pointer is fixed.
    pub fn checkpoint(&self, keep: &dyn Fn(&[Member]) -> bool) -> Result<()> {
        let bytes = {
            let mut st = self.lock();
            st.members.retain(|_, m| keep(m));
            let mut out = Vec::new();
            out.extend_from_slice(FILE_MAGIC);
            out.extend_from_slice(&st.next.to_le_bytes());
            for (id, m) in &st.members {
                out.extend_from_slice(&encode_create(*id, m));
            }
            out
        };
        write_durably(&self.dir, "members", &bytes)
    }

    /// How many multixacts are remembered (tests, monitoring).
    pub fn len(&self) -> usize {
        self.lock().members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn write_durably(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir.display(), e))?;
    let tmp = dir.join(format!("{name}.tmp"));
    let path = dir.join(name);
    let io = |p: &Path, e: std::io::Error| Error::io(p.display(), e);
    let mut f = std::fs::File::create(&tmp).map_err(|e| io(&tmp, e))?;
    f.write_all(bytes).map_err(|e| io(&tmp, e))?;
    f.sync_all().map_err(|e| io(&tmp, e))?;
    drop(f);
    std::fs::rename(&tmp, &path).map_err(|e| io(&path, e))?;
    if let Ok(d) = std::fs::File::open(dir) {
        d.sync_all().map_err(|e| io(dir, e))?;
    }
    Ok(())
}

/// Whether a member still counts: running (or ours), or an updater that committed.
pub fn member_is_live(o: &dyn XidOracle, m: &Member) -> Result<bool> {
    if o.is_current_xid(m.xid) || o.is_in_progress(m.xid) {
        return Ok(true);
    }
    Ok(m.status.is_update() && o.status(m.xid)? == XidStatus::Committed)
}

/// The retention rule (checkpoint): a multixact is kept while a member runs, or
/// while it has an updater that did not abort (its tuple's fate depends on that
/// updater until VACUUM removes the tuple). A lock-only multixact whose members
/// all ended is forgotten: a row still pointing at it reads as unlocked, which is
/// what it is.
pub fn worth_keeping(members: &[Member], running: &dyn Fn(TransactionId) -> bool, aborted: &dyn Fn(TransactionId) -> bool) -> bool {
    members.iter().any(|m| running(m.xid) || (m.status.is_update() && !aborted(m.xid)))
}

/// The xmax visibility should look at for a tuple whose xmax is a multixact
/// (PostgreSQL's HeapTupleGetUpdateXid plus "is any locker running"):
/// - an updater that is running, ours, or committed: the tuple reads as updated
///   (or being updated) by that xid;
/// - else a running locker (ours first): the tuple reads as locked by it, with
///   that member's strength;
/// - else: no xmax (every member ended, and no updater committed).
///
/// The result never has HEAP_XMAX_IS_MULTI nor xmax hint bits (the caller must
/// not set xmax hints from it). A missing multixact reads as the last case (the
/// retention rule).
pub fn resolve(t: &TupleVisibilityInfo, o: &dyn XidOracle) -> Result<TupleVisibilityInfo> {
    let members = o.multi_members(t.xmax);
    let mut e = *t;
    e.infomask &= !(HEAP_XMAX_IS_MULTI | HEAP_XMAX_COMMITTED | HEAP_XMAX_INVALID | HEAP_XMAX_LOCK_ONLY | HEAP_LOCK_MASK);
    let Some(members) = members else {
        e.xmax = 0;
        e.infomask |= HEAP_XMAX_INVALID;
        return Ok(e);
    };
    if let Some(u) = members.iter().find(|m| m.status.is_update()) {
        if member_is_live(o, u)? {
            // No lock bits: EXCL_LOCK without IS_MULTI would read as the old
            // (pre-9.3) "locked only" encoding.
            e.xmax = u.xid;
            return Ok(e);
        }
    }
    let mut lockers = members.iter().filter(|m| !m.status.is_update());
    let ours = members.iter().filter(|m| !m.status.is_update()).find(|m| o.is_current_xid(m.xid));
    if let Some(m) = ours.or_else(|| lockers.find(|m| o.is_in_progress(m.xid))) {
        e.xmax = m.xid;
        e.infomask |= HEAP_XMAX_LOCK_ONLY | m.status.lock_bits();
        return Ok(e);
    }
    e.xmax = 0;
    e.infomask |= HEAP_XMAX_INVALID;
    Ok(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_lookup_checkpoint_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let m = MultiXacts::open(dir.path().join("pg_multixact")).unwrap();
        let a = m.create(&[
            Member { xid: 100, status: MemberStatus::ForKeyShare },
            Member { xid: 101, status: MemberStatus::NoKeyUpdate },
        ]);
        let b = m.create(&[Member { xid: 102, status: MemberStatus::ForShare }, Member { xid: 103, status: MemberStatus::ForShare }]);
        assert_eq!((a, b), (1, 2));
        assert_eq!(m.members(a).unwrap()[1].status, MemberStatus::NoKeyUpdate);
        // 102 and 103 ended: the lock-only multixact is forgotten; the one with an
        // updater (101, not aborted) is kept.
        m.checkpoint(&|ms| worth_keeping(ms, &|_| false, &|_| false)).unwrap();
        let r = MultiXacts::open(dir.path().join("pg_multixact")).unwrap();
        assert_eq!(r.members(a).unwrap().len(), 2);
        assert!(r.members(b).is_none());
        // Ids are not reused after the restart.
        assert_eq!(r.create(&[]), 3);
    }

    #[test]
    fn redo_recreates_and_advances_next() {
        let dir = tempfile::tempdir().unwrap();
        let m = MultiXacts::open(dir.path()).unwrap();
        let rec = encode_create(7, &[Member { xid: 5, status: MemberStatus::Update }]);
        m.redo(&rec).unwrap();
        m.redo(&rec).unwrap();
        assert_eq!(m.members(7).unwrap()[0], Member { xid: 5, status: MemberStatus::Update });
        assert_eq!(m.create(&[]), 8);
        assert!(m.redo(&rec[..7]).is_err());
    }

    #[test]
    fn corrupt_file_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("members"), b"FGMXACT1\x05\0\0\0\x01\0\0\0\x01\0").unwrap();
        assert!(MultiXacts::open(dir.path()).is_err());
    }

    #[test]
    fn conflict_table_is_symmetric_and_postgresqls() {
        for a in 0..4 {
            for b in 0..4 {
                assert_eq!(MemberStatus::conflicts(a, b), MemberStatus::conflicts(b, a));
                // Conflict iff the strengths (KS=0 .. U=3) sum to 3 or more.
                assert_eq!(MemberStatus::conflicts(a, b), a + b >= 3);
            }
        }
        assert!(!MemberStatus::conflicts(0, 2));
        assert!(MemberStatus::conflicts(1, 2));
    }
}
