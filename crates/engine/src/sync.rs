//! The one synchronization facade of the engine.
//!
//! Every atomic, mutex, condition variable, cell and thread used by code that is
//! model-checked comes from here: `std` in normal builds and `loom` under
//! `cfg(loom)`. Code that is never model-checked (file I/O, background workers) may use
//! `std` directly, but a lock-free structure must take its atomics from this module or
//! its loom tests prove nothing.
//!
//! Note for `static`s: loom's atomics are not `const`-constructible, so a `static`
//! atomic uses `std::sync::atomic` explicitly and says why it is outside the model.

#[cfg(loom)]
pub use loom::sync::atomic;
#[cfg(loom)]
pub use loom::sync::{Arc, Condvar, Mutex, MutexGuard};
#[cfg(loom)]
pub use loom::thread;
#[cfg(loom)]
pub use loom::hint::spin_loop;

#[cfg(not(loom))]
pub use std::sync::atomic;
#[cfg(not(loom))]
pub use std::sync::{Arc, Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
pub use std::thread;
#[cfg(not(loom))]
pub use std::hint::spin_loop;
