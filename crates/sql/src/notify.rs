//! LISTEN, UNLISTEN, NOTIFY and pg_notify(): the session's side of
//! PostgreSQL's `commands/async.c` (the shared queue is
//! `ferrogres_engine::notify`).
//!
//! A transaction's LISTEN / UNLISTEN actions and its notifications are kept in
//! the session's [`NotifyState`] (reached by the executor through
//! `Env::lock_ctx`, for pg_notify) and take effect only at commit: the
//! session's channel set is recomputed and registered, then the notifications
//! go to every listener of their channel in the database. A rollback drops
//! them. Within a transaction a notification equal to one already queued
//! (same channel and payload) is dropped, as PostgreSQL 15 does. Each
//! savepoint marks how many actions and notifications were queued before it
//! ([`NotifyState::at_savepoint`]); ROLLBACK TO drops those queued after it,
//! RELEASE keeps them for the enclosing level, as PostgreSQL's
//! subtransaction-level lists do.
//!
//! Errors as PostgreSQL's: 22023 `channel name cannot be empty`, `channel
//! name too long` (63 bytes at most), `payload string too long` (8000 bytes
//! at most); 54000 `too many notifications in the NOTIFY queue` at commit.

use ferrogres_datum::errors::{Result, SqlError};
use crate::plan::Statement;
use crate::utility::SessionCmd;
use ferrogres_engine::engine::Backend;
use ferrogres_engine::notify::Notification;
use pg_query::protobuf as pb;

/// PostgreSQL's NOTIFY_PAYLOAD_MAX_LENGTH (BLCKSZ - NAMEDATALEN - 128) - 1.
const MAX_PAYLOAD: usize = 7999;
/// NAMEDATALEN - 1.
const MAX_CHANNEL: usize = 63;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ListenAction {
    Listen(String),
    Unlisten(String),
    UnlistenAll,
}

/// The session's LISTEN/NOTIFY state.
#[derive(Default)]
pub struct NotifyState {
    /// The channels the session listens on (committed), in LISTEN order.
    pub listening: Vec<String>,
    /// This transaction's LISTEN / UNLISTEN, in order.
    pub actions: Vec<ListenAction>,
    /// This transaction's notifications (channel, payload), deduplicated, in order.
    pub pending: Vec<(String, String)>,
    /// Set by a sender when notifications wait for this session (engine queue).
    pub flag: Option<std::sync::Arc<ferrogres_engine::notify::NotifySignal>>,
    /// Open savepoints, innermost last: (nesting level, `actions.len()`,
    /// `pending.len()`) when each was set.
    marks: Vec<(usize, usize, usize)>,
}

pub fn analyze_listen(s: &pb::ListenStmt) -> Statement {
    Statement::Utility(SessionCmd::Listen(s.conditionname.clone()))
}

pub fn analyze_unlisten(s: &pb::UnlistenStmt) -> Statement {
    Statement::Utility(SessionCmd::Unlisten((!s.conditionname.is_empty()).then(|| s.conditionname.clone())))
}

pub fn analyze_notify(s: &pb::NotifyStmt) -> Statement {
    Statement::Utility(SessionCmd::Notify { channel: s.conditionname.clone(), payload: s.payload.clone() })
}

impl NotifyState {
    /// NOTIFY channel, 'payload' / pg_notify(channel, payload).
    pub fn queue(&mut self, channel: &str, payload: &str) -> Result<()> {
        if channel.is_empty() {
            return Err(SqlError::new(b"22023", "channel name cannot be empty"));
        }
        if channel.len() > MAX_CHANNEL {
            return Err(SqlError::new(b"22023", "channel name too long"));
        }
        if payload.len() > MAX_PAYLOAD {
            return Err(SqlError::new(b"22023", "payload string too long"));
        }
        if !self.pending.iter().any(|(c, p)| c == channel && p == payload) {
            self.pending.push((channel.to_string(), payload.to_string()));
        }
        Ok(())
    }

    /// Before the commit: the queue must have room for this transaction's
    /// notifications.
    pub fn pre_commit(&self, backend: &Backend) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let notes = self.notes(backend);
        backend.engine().notify.check_room(crate::database::current(), &notes)?;
        Ok(())
    }

    fn notes(&self, backend: &Backend) -> Vec<Notification> {
        let pid = backend.pid();
        self.pending.iter().map(|(c, p)| Notification { pid, channel: c.clone(), payload: p.clone() }).collect()
    }

    /// After the commit: LISTEN / UNLISTEN take effect, then the notifications
    /// are sent. True when the channel set was recomputed (plans that read
    /// pg_listening_channels() are stale).
    pub fn at_commit(&mut self, backend: &Backend) -> bool {
        let db = crate::database::current();
        self.marks.clear();
        let listen_changed = !self.actions.is_empty();
        if listen_changed {
            for a in std::mem::take(&mut self.actions) {
                match a {
                    ListenAction::Listen(c) => {
                        if !self.listening.contains(&c) {
                            self.listening.push(c);
                        }
                    }
                    ListenAction::Unlisten(c) => self.listening.retain(|x| *x != c),
                    ListenAction::UnlistenAll => self.listening.clear(),
                }
            }
            self.flag = backend.engine().notify.set_channels(backend.id().0, db, &self.listening);
        }
        if !self.pending.is_empty() {
            let notes = self.notes(backend);
            self.pending.clear();
            backend.engine().notify.send(db, &notes);
        }
        listen_changed
    }

    /// After a rollback: nothing of the transaction's takes effect.
    pub fn at_abort(&mut self) {
        self.actions.clear();
        self.pending.clear();
        self.marks.clear();
    }

    /// After SAVEPOINT opened nesting level `level`.
    pub fn at_savepoint(&mut self, level: usize) {
        self.marks.push((level, self.actions.len(), self.pending.len()));
    }

    /// After RELEASE SAVEPOINT left the transaction at nesting level `level`:
    /// what the released levels queued now belongs to the enclosing one.
    pub fn at_release(&mut self, level: usize) {
        self.marks.retain(|&(l, _, _)| l <= level);
    }

    /// After ROLLBACK TO SAVEPOINT re-opened nesting level `level`: what was
    /// queued since that savepoint was set is dropped; the savepoint stays.
    pub fn at_rollback_to(&mut self, level: usize) {
        self.marks.retain(|&(l, _, _)| l <= level);
        if let Some(&(l, actions, pending)) = self.marks.last() {
            if l == level {
                self.actions.truncate(actions);
                self.pending.truncate(pending);
            }
        }
    }
}
