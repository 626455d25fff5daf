//! LISTEN / NOTIFY: the shared notification queue (PostgreSQL's
//! `commands/async.c`).
//!
//! PostgreSQL keeps one queue of notifications in SLRU pages, each listening
//! backend with its read position; the sender signals the listeners, which read
//! the queue when they are idle. Here each listening backend has its own queue
//! of pending notifications, filled by the committing sender (the notification
//! is copied once per listener of its channel, in the same database), and the
//! backend drains it when it is idle or its transaction ends. What a client
//! sees is the same: notifications of transactions that committed after its
//! LISTEN committed, in commit order, its own included, never inside a
//! transaction block.
//!
//! Data structures, all under one mutex (`NotifyQueue::inner`), taken for a
//! LISTEN / UNLISTEN commit, a NOTIFY commit and a drain:
//! - `listeners: backend id -> Listener { database, channels, pending, bytes }`.
//! - `bytes`: the sum of the listeners' `bytes` (payload + channel lengths).
//!
//! Invariants: `0 <= bytes <= max_bytes` after every commit of NOTIFY; a
//! commit that would pass `max_bytes` fails before it commits, with
//! PostgreSQL's 54000 `too many notifications in the NOTIFY queue`
//! ([`NotifyQueue::check_room`]). A listener's [`NotifySignal`] is set when
//! its queue may be non-empty and cleared when it is drained, both under the
//! mutex. The idle loop of the wire server reads it without the mutex (one
//! atomic load) and waits on its eventfd beside the client's socket, so a
//! committed NOTIFY wakes an idle listener at once, as PostgreSQL's
//! SIGUSR1 + latch do, instead of being found by a timer.

use std::collections::{HashMap, VecDeque};
use crate::sync::{Arc, Mutex, MutexGuard};

/// A listener's wake-up ("notifications may be waiting"): set by a committing
/// sender and reset by the drain ([`NotifyQueue::take`]), both under the
/// queue's mutex, so a set after a reset is never lost.
pub type NotifySignal = crate::latch::Latch;

/// One notification as the client receives it (NotificationResponse).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notification {
    /// The sending backend's pid.
    pub pid: i32,
    pub channel: String,
    pub payload: String,
}

struct Listener {
    database: u32,
    /// In the order LISTEN added them (pg_listening_channels' order).
    channels: Vec<String>,
    pending: VecDeque<Notification>,
    bytes: usize,
    flag: Arc<NotifySignal>,
}

#[derive(Default)]
struct Inner {
    listeners: HashMap<u32, Listener>,
    bytes: usize,
}

pub struct NotifyQueue {
    inner: Mutex<Inner>,
    max_bytes: usize,
}

/// The default bound of queued notification bytes (PostgreSQL's queue is 8 GB
/// of SLRU pages on disk; ours is in memory).
pub const DEFAULT_MAX_BYTES: usize = 64 * 1024 * 1024;

fn cost(n: &Notification) -> usize {
    n.channel.len() + n.payload.len() + 32
}

impl Default for NotifyQueue {
    fn default() -> Self {
        NotifyQueue::new(DEFAULT_MAX_BYTES)
    }
}

impl NotifyQueue {
    pub fn new(max_bytes: usize) -> NotifyQueue {
        NotifyQueue { inner: Mutex::new(Inner::default()), max_bytes }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// At the commit of LISTEN / UNLISTEN: `backend` (connected to `database`)
    /// listens on exactly `channels` from now on (none: it is no listener).
    /// Returns the flag that says notifications may be pending for it.
    pub fn set_channels(&self, backend: u32, database: u32, channels: &[String]) -> Option<Arc<NotifySignal>> {
        let mut g = self.lock();
        if channels.is_empty() {
            if let Some(l) = g.listeners.get(&backend) {
                // Notifications already queued stay until drained.
                if !l.pending.is_empty() {
                    let l = g.listeners.get_mut(&backend).expect("present");
                    l.channels.clear();
                    return Some(l.flag.clone());
                }
                g.listeners.remove(&backend);
            }
            return None;
        }
        let l = g.listeners.entry(backend).or_insert_with(|| Listener {
            database,
            channels: Vec::new(),
            pending: VecDeque::new(),
            bytes: 0,
            flag: Arc::new(NotifySignal::new()),
        });
        l.database = database;
        l.channels = channels.to_vec();
        Some(l.flag.clone())
    }

    /// Before the commit of a transaction that sends `notes`: PostgreSQL's
    /// 54000 when the queue has no room for them.
    pub fn check_room(&self, database: u32, notes: &[Notification]) -> crate::error::Result<()> {
        let g = self.lock();
        let mut need = 0usize;
        for l in g.listeners.values().filter(|l| l.database == database) {
            need += notes.iter().filter(|n| l.channels.contains(&n.channel)).map(cost).sum::<usize>();
        }
        if g.bytes + need > self.max_bytes {
            return Err(crate::error::Error::user(
                crate::error::SqlState(*b"54000"),
                "too many notifications in the NOTIFY queue",
            ));
        }
        Ok(())
    }

    /// After the commit of a transaction that sent `notes` (in the order sent):
    /// each listener of their channel in `database` gets them.
    pub fn send(&self, database: u32, notes: &[Notification]) {
        if notes.is_empty() {
            return;
        }
        let mut g = self.lock();
        let mut added = 0usize;
        for l in g.listeners.values_mut().filter(|l| l.database == database) {
            let mut any = false;
            for n in notes.iter().filter(|n| l.channels.contains(&n.channel)) {
                l.bytes += cost(n);
                added += cost(n);
                l.pending.push_back(n.clone());
                any = true;
            }
            if any {
                // Release: the idle loop that sees the flag then takes the mutex.
                l.flag.set();
            }
        }
        g.bytes += added;
    }

    /// The notifications pending for `backend`, oldest first; they leave the queue.
    pub fn take(&self, backend: u32) -> Vec<Notification> {
        let mut g = self.lock();
        let Some(l) = g.listeners.get_mut(&backend) else { return Vec::new() };
        l.flag.reset(); // under the mutex: no send in between
        let out: Vec<Notification> = l.pending.drain(..).collect();
        let freed = std::mem::take(&mut l.bytes);
        let gone = l.channels.is_empty();
        g.bytes -= freed;
        if gone {
            g.listeners.remove(&backend);
        }
        out
    }

    /// The channels `backend` listens on (committed LISTENs), in LISTEN order.
    pub fn channels(&self, backend: u32) -> Vec<String> {
        self.lock().listeners.get(&backend).map(|l| l.channels.clone()).unwrap_or_default()
    }

    /// The end of a session: it listens no more and its pending notifications go.
    pub fn remove(&self, backend: u32) {
        let mut g = self.lock();
        if let Some(l) = g.listeners.remove(&backend) {
            g.bytes -= l.bytes;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the signal's eventfd polls readable right now.
    fn readable(s: &NotifySignal) -> bool {
        let mut p = libc::pollfd { fd: s.fd().expect("eventfd"), events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd, no wait.
        unsafe { libc::poll(&mut p, 1, 0) == 1 }
    }

    fn note(ch: &str, p: &str) -> Notification {
        Notification { pid: 7, channel: ch.into(), payload: p.into() }
    }

    #[test]
    fn delivered_to_listeners_of_the_channel_in_the_same_database_only() {
        let q = NotifyQueue::default();
        let chans = ["a".to_string()];
        let flag = q.set_channels(1, 5, &chans).expect("listener");
        q.set_channels(2, 6, &chans);
        q.send(5, &[note("a", "x"), note("b", "y")]);
        assert!(flag.is_set());
        assert!(readable(&flag));
        assert_eq!(q.take(1), vec![note("a", "x")]);
        assert!(q.take(2).is_empty());
        assert!(!flag.is_set());
        assert!(!readable(&flag));
        q.remove(1);
        q.remove(2);
        assert_eq!(q.lock().bytes, 0);
    }

    #[test]
    fn a_full_queue_refuses_the_commit() {
        let q = NotifyQueue::new(150); // one 80-byte notification costs 113
        let chans = ["a".to_string()];
        q.set_channels(1, 5, &chans);
        let big = note("a", &"x".repeat(80));
        q.check_room(5, std::slice::from_ref(&big)).expect("room");
        q.send(5, std::slice::from_ref(&big));
        let e = q.check_room(5, std::slice::from_ref(&big)).unwrap_err();
        assert_eq!(e.sqlstate().0, *b"54000");
        q.take(1);
        q.check_room(5, &[big]).expect("room after the drain");
    }
}
