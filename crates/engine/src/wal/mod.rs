#![doc = include_str!("README.md")]
//!
//! Files: [`layout`] (WAL pages, positions, segment names), [`record`] (building,
//! encoding, decoding records; checkpoint record), [`xlog`] (the [`Wal`]: insertion,
//! group flush, checkpoints, recovery), [`reader`], [`control`] (pg_control),
//! [`background`] (WAL writer, checkpointer loop). Byte layouts: docs/format/wal.md
//! and docs/format/control-file.md.

// `x % n == 0` stays: `is_multiple_of` needs Rust 1.87, the workspace supports 1.80.
#![allow(clippy::manual_is_multiple_of)]

mod reserve;

#[cfg(not(loom))]
pub mod background;
#[cfg(not(loom))]
pub mod control;
#[cfg(not(loom))]
pub mod layout;
#[cfg(not(loom))]
pub mod reader;
#[cfg(not(loom))]
pub mod record;
#[cfg(not(loom))]
pub mod xlog;

#[cfg(not(loom))]
pub use background::{start_checkpointer, WorkerLatch, start_checkpointer_with, start_wal_writer, start_wal_writer_with, BackgroundWorker, OnStart};
#[cfg(not(loom))]
pub use control::{ControlFile, DbState};
#[cfg(not(loom))]
pub use reader::WalReader;
#[cfg(not(loom))]
pub use record::{
    regbuf, restore_full_page_image, BlockImage, CheckpointInfo, CheckpointRecord, DecodedBlock, DecodedRecord,
    RecordBuilder, RmgrId, XLOG_BACKUP_END, XLOG_CHECKPOINT_ONLINE, XLOG_CHECKPOINT_SHUTDOWN, XLOG_RESTORE_POINT,
    XLOG_SWITCH,
};
#[cfg(not(loom))]
pub use xlog::{RecoveryResult, RecoveryStart, Wal, WalOptions, WalStats};
