//! What the SQL layer's unit tests share: a session over a real engine, and an
//! [`Output`] that keeps what the session sends.

use ferrogres_datum::errors::{Result, SqlError};
use crate::session::{ColumnDesc, Output, Session, SessionEnv, Setting};
use ferrogres_datum::types::{self, Value};
use ferrogres_engine::engine::Engine;
use std::sync::Arc;

/// What a statement sent: column names, rows as text, command tags, notices.
#[derive(Default)]
pub(crate) struct Collect {
    pub cols: Vec<String>,
    pub rows: Vec<Vec<Option<String>>>,
    pub tags: Vec<String>,
    pub notices: Vec<String>,
}

impl Output for Collect {
    fn row_description(&mut self, cols: &[ColumnDesc]) -> Result<()> {
        self.cols = cols.iter().map(|c| c.name.clone()).collect();
        Ok(())
    }
    fn row(&mut self, row: &[Value]) -> Result<()> {
        self.rows.push(row.iter().map(types::output).collect());
        Ok(())
    }
    fn command_complete(&mut self, tag: &str) -> Result<()> {
        self.tags.push(tag.to_string());
        Ok(())
    }
    fn empty_query(&mut self) -> Result<()> {
        self.tags.push("EMPTY".into());
        Ok(())
    }
    fn notice(&mut self, n: &SqlError) -> Result<()> {
        self.notices.push(n.message.clone());
        Ok(())
    }
}

/// A session of backend `pid` with client_min_messages = notice and `settings`.
pub(crate) fn session(engine: &Arc<Engine>, pid: i32, settings: &[(&str, &str)]) -> Session {
    let set = |name: &str, value: &str| Setting { name: name.into(), value: value.into(), default: value.into(), reported: false };
    let mut all = vec![set("client_min_messages", "notice")];
    all.extend(settings.iter().map(|(n, v)| set(n, v)));
    let env = SessionEnv {
        settings: all,
        changed: vec![],
        pid,
        version: "v".into(),
        interrupts: Box::new(|| Ok(())),
        statement_timer: Box::new(|_| {}),
        locks: None,
        settings_gen: 0,
    };
    Session::new(engine.backend(pid).unwrap(), env)
}

/// The rows `sql` returns, sorted; panics on an error.
pub(crate) fn query_sorted(s: &mut Session, sql: &str) -> Vec<Vec<Option<String>>> {
    let mut out = Collect::default();
    s.execute_simple(sql, &mut out).unwrap_or_else(|e| panic!("{sql}: {e}"));
    let mut rows = out.rows;
    rows.sort();
    rows
}
