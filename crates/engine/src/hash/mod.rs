#![doc = include_str!("README.md")]

pub mod buckets;
pub mod hashfunc;
pub mod metacache;

#[cfg(not(loom))]
pub mod check;
#[cfg(not(loom))]
pub mod index;
#[cfg(not(loom))]
pub mod page;
#[cfg(not(loom))]
pub mod scan;
#[cfg(not(loom))]
pub mod vacuum;
#[cfg(not(loom))]
pub mod xlog;

#[cfg(not(loom))]
pub use check::HashReport;
#[cfg(not(loom))]
pub use index::{testing, CacheRegistry, HashIndex};
#[cfg(not(loom))]
pub use page::{HashMeta, HASH_DEFAULT_FILLFACTOR, HASH_MIN_FILLFACTOR};
#[cfg(not(loom))]
pub use scan::HashScan;
#[cfg(not(loom))]
pub use vacuum::HashBulkDeleteStats;

/// Redo of a hash WAL record (dispatched by the engine for `RmgrId::Hash`).
#[cfg(not(loom))]
pub fn redo(engine: &crate::engine::Engine, rec: &crate::wal::DecodedRecord) -> crate::error::Result<()> {
    xlog::redo(engine, rec)
}
