#![doc = include_str!("README.md")]

#[cfg(not(loom))]
pub mod tuple;
#[cfg(not(loom))]
pub mod page;
#[cfg(not(loom))]
pub mod toast;
#[cfg(not(loom))]
pub mod toastam;
#[cfg(not(loom))]
pub mod fsm;
#[cfg(not(loom))]
pub mod heapam;
#[cfg(not(loom))]
pub mod freespace;
#[cfg(not(loom))]
pub mod pruneheap;
#[cfg(not(loom))]
pub mod vacuum;
#[cfg(not(loom))]
pub mod autovacuum;
#[cfg(not(loom))]
pub mod visibilitymap;
