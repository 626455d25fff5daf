#![doc = include_str!("README.md")]

pub mod buf_state;
#[cfg(not(loom))]
mod bgwriter;
#[cfg(not(loom))]
mod buf_table;
#[cfg(not(loom))]
mod bufmgr;
#[cfg(not(loom))]
mod freelist;
// Compiled under loom too: its wait/wake protocol is model-checked.
#[cfg_attr(loom, allow(dead_code))]
mod io_wait;

#[cfg(not(loom))]
pub use bgwriter::{BgWriter, BgWriterStats, BgWriterTotals};
#[cfg(not(loom))]
pub use bufmgr::{BufferPool, BufferReadGuard, BufferStats, BufferWriteGuard, LockedBuffer, PinnedBuffer};
#[cfg(not(loom))]
pub use freelist::{Strategy, StrategyKind};

#[cfg(all(test, not(loom)))]
mod tests;
