#![doc = include_str!("README.md")]

pub mod build;
pub mod check;
pub mod page;
pub mod scan;
pub mod tree;
pub mod vacuum;
pub mod xlog;

pub use build::{BTreeBuild, BuildStats, BTREE_DEFAULT_FILLFACTOR};
pub use check::TreeReport;
pub use page::{BuiltinComparator, IntKey, KeyComparator, KeyKind};
pub use scan::{BTreeScan, IndexEntry, ScanBounds};
pub use tree::{testing, BTree, HeapVisibility, KeyFormatter, UniqueCheck};
pub use vacuum::BulkDeleteStats;

/// Redo of a B-tree WAL record (dispatched by the engine for `RmgrId::Btree`).
pub fn redo(engine: &crate::engine::Engine, rec: &crate::wal::DecodedRecord) -> crate::error::Result<()> {
    xlog::redo(engine, rec)
}
