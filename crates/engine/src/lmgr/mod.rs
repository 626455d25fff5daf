#![doc = include_str!("README.md")]

#[cfg(not(loom))]
pub mod deadlock;
pub mod fastpath;
#[cfg(not(loom))]
pub mod lock;
pub mod lwlock;
pub mod spin;
