#![doc = include_str!("../README.md")]
//!
//! Module map (each subsystem folder has a README.md with its invariants and lock
//! ordering, included as the module's documentation):
//! - [`sync`]: the one place atomics, mutexes and threads come from (std, or loom
//!   under `cfg(loom)`).
//! - [`error`]: the engine's error type, carrying a SQLSTATE.
//! - [`config`]: engine settings, with PostgreSQL's names and units.
//! - [`lmgr`]: spinlocks, LWLocks, the heavyweight lock manager.
//! - [`pgstat`]: wait events and per-backend activity, read by the diagnostic views.
//! - [`storage`]: page layout and the storage manager (relation files on disk).
//! - [`buffer`]: the shared buffer pool.
//! - [`wal`]: the write-ahead log: insertion, group flush, checkpoints, recovery.
//! - [`heap`]: heap pages and tuples, free space, relation extension, TOAST.
//! - [`nbtree`]: B-tree indexes (Lehman & Yao, with PostgreSQL's refinements).
//! - [`hash`]: hash indexes (linear hashing with PostgreSQL 10's concurrency), and
//!   PostgreSQL's hash functions.
//! - [`txn`]: transaction ids, commit log, ProcArray, snapshots, visibility.
//! - [`sinval`]: the shared queue of catalog-cache invalidations sent at commit.
//! - [`engine`]: one open data directory: startup, recovery, checkpoints, backends.
//! - [`memacct`]: per-thread accounting of the process allocator (the SQL
//!   layer's per-statement memory limit reads it).
//!
//! Under `cfg(loom)` only the parts that are model-checked are compiled; each module
//! gates the rest with `#[cfg(not(loom))]`.

pub mod buffer;
pub mod config;
#[cfg(not(loom))]
pub mod engine;
pub mod error;
pub mod hash;
pub mod heap;
#[cfg(not(loom))]
pub mod latch;
pub mod lmgr;
pub mod memacct;
#[cfg(not(loom))]
pub mod nbtree;
#[cfg(not(loom))]
pub mod notify;
pub mod pgstat;
pub mod replication;
pub mod sinval;
pub mod storage;
pub mod sync;
pub mod txn;
pub mod wal;

pub use error::{Error, Result, SqlState};
