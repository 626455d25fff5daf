#![doc = include_str!("README.md")]
//!
//! Files: [`archive`] (continuous archiving, the archiver thread, archive
//! recovery's restore_command and targets), [`backup`] (online backups: start, stop, `backup_label`), [`slot`] (physical replication slots: creation, drop, persistence,
//! the WAL they hold back), [`walsnd`] (what each streaming walsender reports,
//! for pg_stat_replication).

#[cfg(not(loom))]
pub mod archive;
#[cfg(not(loom))]
pub mod backup;
#[cfg(not(loom))]
pub mod slot;
#[cfg(not(loom))]
pub mod walsnd;

#[cfg(not(loom))]
pub use slot::{SlotInfo, SlotManager};
