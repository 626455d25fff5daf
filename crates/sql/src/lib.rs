#![doc = include_str!("../README.md")]

pub mod analyze;
pub mod catalog;
pub mod errors;
pub mod exec;
pub mod locking;
pub mod parser;
pub mod plan;
pub mod rowio;
pub mod session;
pub mod sysviews;
pub mod types;

pub use errors::{Result, Severity, SqlError};
pub use session::{ColumnDesc, ExecOutcome, Output, ParamValue, Session, SessionEnv, Setting, TxnStatus};
pub use types::{Type, Value};
