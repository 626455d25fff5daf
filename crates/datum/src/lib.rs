#![doc = include_str!("../README.md")]

pub mod array;
pub mod bytea;
pub mod datestyle;
pub mod datetime;
pub mod encoding;
pub mod errors;
pub mod formatting;
pub mod json;
pub mod like;
pub mod numeric;
pub mod ops;
pub mod pg_lsn;
pub mod pg_snapshot;
pub mod pgregex;
pub mod record;
pub mod stack_depth;
pub mod tid;
pub mod types;
pub mod uuid;

pub use errors::{Result, Severity, SqlError};
pub use types::{Type, Value};
