//! The walsenders' shared state (PostgreSQL's WalSndCtl): one entry per
//! connection that is streaming, read by pg_stat_replication.

use crate::storage::Lsn;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

/// What pg_stat_replication shows of one walsender.
#[derive(Clone, Debug)]
pub struct WalSndInfo {
    pub pid: i32,
    /// "startup", "catchup", "streaming", "backup", "stopping".
    pub state: &'static str,
    /// End of the WAL sent so far.
    pub sent: Lsn,
    /// The standby's last reported write, flush and apply positions.
    pub write: Lsn,
    pub flush: Lsn,
    pub replay: Lsn,
    /// The standby's send time of its last reply (µs since 2000-01-01), 0: none.
    pub reply_time_us: i64,
    pub started: SystemTime,
}

/// Every registered walsender. The mutex protects the list and each entry; it
/// is held only to copy or update one entry (never across I/O).
#[derive(Default)]
pub struct WalSenders {
    list: Mutex<Vec<WalSndInfo>>,
}

/// A registration, removed when dropped (the walsender stopped streaming).
pub struct WalSndHandle {
    owner: Arc<WalSenders>,
    pid: i32,
}

impl WalSenders {
    fn with<R>(&self, f: impl FnOnce(&mut Vec<WalSndInfo>) -> R) -> R {
        f(&mut self.list.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Registers walsender `pid` (state "startup").
    pub fn register(self: &Arc<Self>, pid: i32) -> WalSndHandle {
        self.with(|l| {
            l.retain(|w| w.pid != pid);
            l.push(WalSndInfo {
                pid,
                state: "startup",
                sent: Lsn(0),
                write: Lsn(0),
                flush: Lsn(0),
                replay: Lsn(0),
                reply_time_us: 0,
                started: SystemTime::now(),
            })
        });
        WalSndHandle { owner: self.clone(), pid }
    }

    /// A copy of every entry (pg_stat_replication).
    pub fn list(&self) -> Vec<WalSndInfo> {
        self.with(|l| l.clone())
    }
}

impl WalSndHandle {
    fn update(&self, f: impl FnOnce(&mut WalSndInfo)) {
        self.owner.with(|l| {
            if let Some(w) = l.iter_mut().find(|w| w.pid == self.pid) {
                f(w)
            }
        })
    }
    pub fn set_state(&self, state: &'static str) {
        self.update(|w| w.state = state)
    }
    pub fn set_sent(&self, lsn: Lsn) {
        self.update(|w| w.sent = lsn)
    }
    /// A standby status update.
    pub fn set_reply(&self, write: Lsn, flush: Lsn, replay: Lsn, time_us: i64) {
        self.update(|w| {
            w.write = write;
            w.flush = flush;
            w.replay = replay;
            w.reply_time_us = time_us;
        })
    }
}

impl Drop for WalSndHandle {
    fn drop(&mut self) {
        let pid = self.pid;
        self.owner.with(|l| l.retain(|w| w.pid != pid));
    }
}
