#![doc = include_str!("README.md")]

use std::fmt;

#[cfg(not(loom))]
pub mod buffile;
#[cfg(not(loom))]
pub mod page;
#[cfg(not(loom))]
pub mod smgr;

/// An object identifier, as in PostgreSQL.
pub type Oid = u32;

/// A block (page) number within one fork of a relation.
pub type BlockNumber = u32;

/// No block: PostgreSQL's InvalidBlockNumber.
pub const INVALID_BLOCK: BlockNumber = u32::MAX;

/// Which file of a relation (PostgreSQL's ForkNumber).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ForkNumber {
    Main = 0,
    Fsm = 1,
    VisibilityMap = 2,
    Init = 3,
    /// Not in PostgreSQL: the chunk index of a TOAST relation, a B-tree on
    /// (chunk_id, chunk_seq) kept beside the TOAST heap in its own fork instead
    /// of a relation with its own catalog row (PostgreSQL's pg_toast_N_index).
    /// It is created, dropped and truncated with the TOAST relation (heap README
    /// "TOAST at relation level").
    ToastIndex = 4,
}

impl ForkNumber {
    pub const ALL: [ForkNumber; 5] =
        [ForkNumber::Main, ForkNumber::Fsm, ForkNumber::VisibilityMap, ForkNumber::Init, ForkNumber::ToastIndex];

    /// The file-name suffix PostgreSQL uses for this fork ("" for main).
    pub fn suffix(self) -> &'static str {
        match self {
            ForkNumber::Main => "",
            ForkNumber::Fsm => "_fsm",
            ForkNumber::VisibilityMap => "_vm",
            ForkNumber::Init => "_init",
            ForkNumber::ToastIndex => "_tidx",
        }
    }

    pub fn from_u8(v: u8) -> Option<ForkNumber> {
        ForkNumber::ALL.get(v as usize).copied()
    }
}

/// Names a relation's files on disk (PostgreSQL's RelFileLocator): tablespace,
/// database, and relation file number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct RelFileLocator {
    pub spc_oid: Oid,
    pub db_oid: Oid,
    pub rel_number: Oid,
}

/// Identifies one page: the key of the buffer-mapping table (PostgreSQL's BufferTag).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BufferTag {
    pub rel: RelFileLocator,
    pub fork: ForkNumber,
    pub block: BlockNumber,
}

impl BufferTag {
    pub fn new(rel: RelFileLocator, fork: ForkNumber, block: BlockNumber) -> Self {
        BufferTag { rel, fork, block }
    }

    /// A well-mixed 64-bit hash, used to choose the buffer-mapping partition and the
    /// bucket. Deterministic across runs (no random state), cheap.
    #[inline]
    pub fn hash_code(&self) -> u64 {
        let a = (self.rel.spc_oid as u64) << 32 | self.rel.db_oid as u64;
        let b = (self.rel.rel_number as u64) << 32 | ((self.fork as u64) << 24 ^ self.block as u64);
        let mut h = a.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ b;
        h ^= h >> 29;
        h = h.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        h ^= h >> 32;
        h
    }
}

/// A position in the write-ahead log: a byte offset into the infinite WAL stream
/// (PostgreSQL's XLogRecPtr). 0 is invalid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Lsn(pub u64);

impl Lsn {
    pub const INVALID: Lsn = Lsn(0);

    pub fn is_valid(self) -> bool {
        self.0 != 0
    }
}

impl fmt::Display for Lsn {
    /// PostgreSQL's `%X/%X` form, as in pg_current_wal_lsn().
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:X}/{:X}", self.0 >> 32, self.0 as u32)
    }
}

/// What the buffer manager needs from the WAL: *WAL before data*. Before a dirty
/// page is written, the WAL up to the page's LSN must be durable.
pub trait WalFlush: Send + Sync {
    /// Returns once the WAL up to `upto` is on durable storage.
    fn flush_wal(&self, upto: Lsn) -> crate::Result<()>;
}

/// A WAL that does nothing: for tests of the buffer manager alone.
pub struct NoWal;

impl WalFlush for NoWal {
    fn flush_wal(&self, _upto: Lsn) -> crate::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lsn_prints_like_postgresql() {
        assert_eq!(Lsn(0x1_6B37_4D48).to_string(), "1/6B374D48");
        assert_eq!(Lsn(0x100).to_string(), "0/100");
    }

    #[test]
    fn tag_hash_spreads_consecutive_blocks() {
        let rel = RelFileLocator { spc_oid: 1663, db_oid: 5, rel_number: 16384 };
        let mut parts = std::collections::HashSet::new();
        for b in 0..1024 {
            parts.insert(BufferTag::new(rel, ForkNumber::Main, b).hash_code() % 128);
        }
        assert!(parts.len() > 100, "only {} of 128 partitions used", parts.len());
    }
}
