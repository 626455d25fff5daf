#![doc = include_str!("README.md")]

#[cfg(not(loom))]
pub mod deadlock;
pub mod fastpath;
#[cfg(not(loom))]
pub mod lock;
pub mod lwlock;
#[cfg(not(loom))]
pub mod predicate;
pub mod spin;
