#![doc = include_str!("../README.md")]

pub mod analyze;
pub mod array;
pub mod bytea;
pub mod catalog;
pub mod constraints;
pub mod copy;
pub mod datetime;
pub mod errors;
pub mod exec;
pub mod foreign_key;
pub mod functions;
pub mod grouping;
pub mod index;
pub mod insert_select;
pub mod join;
pub mod like;
pub mod locking;
pub mod numeric;
pub mod parser;
pub mod pgcatalog;
pub mod plan_cache;
pub mod pgregex;
pub mod plan;
pub mod project_set;
pub mod reloptions;
pub mod rowio;
pub mod sequence;
pub mod session;
pub mod setop;
pub mod srf;
pub mod subquery;
pub mod sysviews;
pub mod types;

pub use errors::{Result, Severity, SqlError};
pub use session::{ColumnDesc, ExecOutcome, Output, ParamValue, Session, SessionEnv, Setting, TxnStatus};
pub use types::{Type, Value};
