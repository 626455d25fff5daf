#![doc = include_str!("README.md")]

pub mod activity;
pub mod lwlock_stats;
#[cfg(not(loom))]
pub mod persist;
#[cfg(not(loom))]
pub mod sampler;
#[cfg(not(loom))]
pub mod statements;
#[cfg(not(loom))]
pub mod tabstat;
pub mod usage;
pub mod wait_event;

/// A backend's number: its slot in every per-backend array (wait events, ProcArray,
/// fast-path lock slots). Like PostgreSQL's ProcNumber: 0 <= id < max_backends, reused
/// after the backend exits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BackendId(pub u32);
