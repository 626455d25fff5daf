#![doc = include_str!("../README.md")]

pub mod error;
pub mod handler;

pub mod lockfile;
pub mod minimal;
pub mod protocol;
pub mod server;
pub mod tls;

mod auth;
mod basebackup;
mod connection;
mod stream;
mod walsender;

pub use error::{PgError, Severity};
pub use ferrogres_engine::config::hba;
pub use handler::{Backend, Session};
pub use server::{install_signal_handlers, Listeners, Server, ServerConfig, ShutdownHandle};
