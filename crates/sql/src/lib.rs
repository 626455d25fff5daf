#![doc = include_str!("../README.md")]

pub mod analyze;
pub mod bytea;
pub mod catalog;
pub mod copy;
pub mod datetime;
pub mod errors;
pub mod exec;
pub mod functions;
pub mod grouping;
pub mod index;
pub mod insert_select;
pub mod like;
pub mod locking;
pub mod parser;
pub mod pgregex;
pub mod plan;
pub mod project_set;
pub mod reloptions;
pub mod rowio;
pub mod session;
pub mod srf;
pub mod sysviews;
pub mod types;

pub use errors::{Result, Severity, SqlError};
pub use session::{ColumnDesc, ExecOutcome, Output, ParamValue, Session, SessionEnv, Setting, TxnStatus};
pub use types::{Type, Value};
