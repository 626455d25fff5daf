#![doc = include_str!("README.md")]

use crate::sync::atomic::{AtomicU64, Ordering};
use crate::sync::Mutex;

/// Messages kept in the ring; a reader further behind resets its caches.
pub const QUEUE_SIZE: usize = 4096;

/// What a committed transaction changed in the catalogs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InvalMessage {
    /// Relation `rel` of database `db`: its descriptor changed, or it was created
    /// or dropped.
    Relation { db: u32, rel: u32 },
    /// Rows of catalog `catalog` (by its OID) changed in `db` (0: a shared catalog):
    /// every cached lookup through it is stale.
    Catalog { db: u32, catalog: u32 },
}

/// The shared queue (one per engine).
pub struct InvalQueue {
    /// Sequence number of the next message. Written under `ring`'s mutex with
    /// Release, after the messages are in the ring; loaded with Acquire by the
    /// lock-free check.
    next: AtomicU64,
    /// Message `s` at `s % QUEUE_SIZE`, for the last `QUEUE_SIZE` sequence numbers.
    ring: Mutex<Vec<InvalMessage>>,
}

/// A backend's place in the queue. Owned by the backend; `pos <= queue.next`.
#[derive(Debug)]
pub struct InvalReader {
    pos: u64,
}

impl InvalReader {
    /// The sequence number of the next message this reader has not read.
    pub fn position(&self) -> u64 {
        self.pos
    }
}

/// What [`InvalQueue::receive`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Catchup {
    /// No message since the last read.
    UpToDate,
    /// These messages, in the order they were sent.
    Messages(Vec<InvalMessage>),
    /// The reader fell more than [`QUEUE_SIZE`] messages behind: it must discard
    /// every cache entry.
    Reset,
}

impl Default for InvalQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl InvalQueue {
    pub fn new() -> InvalQueue {
        let filler = InvalMessage::Catalog { db: 0, catalog: 0 };
        InvalQueue { next: AtomicU64::new(0), ring: Mutex::new(vec![filler; QUEUE_SIZE]) }
    }

    /// A reader that starts at the current end of the queue (a new backend, whose
    /// caches are empty).
    pub fn reader(&self) -> InvalReader {
        InvalReader { pos: self.next.load(Ordering::Acquire) }
    }

    /// Appends `msgs` (a committed transaction's, in order).
    pub fn send(&self, msgs: &[InvalMessage]) {
        if msgs.is_empty() {
            return;
        }
        let mut ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        // Relaxed: `next` is only written under this mutex.
        let mut next = self.next.load(Ordering::Relaxed);
        for m in msgs {
            ring[(next % QUEUE_SIZE as u64) as usize] = *m;
            next += 1;
        }
        self.next.store(next, Ordering::Release);
    }

    /// Whether messages were sent since `r` last read (one atomic load).
    #[inline]
    pub fn has_news(&self, r: &InvalReader) -> bool {
        self.next.load(Ordering::Acquire) != r.pos
    }

    /// The messages sent since `r` last read, moving `r` to the end of the queue.
    pub fn receive(&self, r: &mut InvalReader) -> Catchup {
        if !self.has_news(r) {
            return Catchup::UpToDate;
        }
        let ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        // Relaxed: under the mutex that every writer of `next` holds.
        let next = self.next.load(Ordering::Relaxed);
        debug_assert!(r.pos <= next, "reader ahead of the queue");
        let behind = next - r.pos;
        let out = if behind > QUEUE_SIZE as u64 {
            Catchup::Reset
        } else {
            Catchup::Messages((r.pos..next).map(|s| ring[(s % QUEUE_SIZE as u64) as usize]).collect())
        };
        r.pos = next;
        out
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn rel(n: u32) -> InvalMessage {
        InvalMessage::Relation { db: 5, rel: n }
    }

    #[test]
    fn readers_see_each_message_once_in_order() {
        let q = InvalQueue::new();
        let mut a = q.reader();
        q.send(&[rel(1), rel(2)]);
        let mut b = q.reader();
        q.send(&[rel(3)]);
        assert_eq!(q.receive(&mut a), Catchup::Messages(vec![rel(1), rel(2), rel(3)]));
        assert_eq!(q.receive(&mut a), Catchup::UpToDate);
        assert_eq!(q.receive(&mut b), Catchup::Messages(vec![rel(3)]));
        assert!(!q.has_news(&a) && !q.has_news(&b));
    }

    #[test]
    fn a_reader_too_far_behind_resets() {
        let q = InvalQueue::new();
        let mut slow = q.reader();
        let mut fast = q.reader();
        for i in 0..QUEUE_SIZE as u32 {
            q.send(&[rel(i)]);
            if i % 100 == 0 {
                assert!(matches!(q.receive(&mut fast), Catchup::Messages(_)));
            }
        }
        // Exactly QUEUE_SIZE behind: every message is still in the ring.
        let mut exact = InvalReader { pos: slow.pos };
        match q.receive(&mut exact) {
            Catchup::Messages(m) => assert_eq!(m.len(), QUEUE_SIZE),
            other => panic!("{other:?}"),
        }
        q.send(&[rel(999_999)]);
        assert_eq!(q.receive(&mut slow), Catchup::Reset);
        assert_eq!(q.receive(&mut slow), Catchup::UpToDate);
        match q.receive(&mut fast) {
            Catchup::Messages(m) => assert_eq!(*m.last().unwrap(), rel(999_999)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn concurrent_senders_and_readers_lose_nothing() {
        let q = std::sync::Arc::new(InvalQueue::new());
        let mut reader = q.reader();
        let senders: Vec<_> = (0..4u32)
            .map(|t| {
                let q = q.clone();
                std::thread::spawn(move || {
                    for i in 0..500u32 {
                        q.send(&[InvalMessage::Relation { db: t, rel: i }]);
                    }
                })
            })
            .collect();
        let mut seen: Vec<Vec<u32>> = vec![Vec::new(); 4];
        let mut done = false;
        while !done {
            done = senders.iter().all(|s| s.is_finished());
            match q.receive(&mut reader) {
                Catchup::Messages(m) => {
                    for msg in m {
                        let InvalMessage::Relation { db, rel } = msg else { panic!() };
                        seen[db as usize].push(rel);
                    }
                }
                Catchup::UpToDate => std::thread::yield_now(),
                Catchup::Reset => panic!("2000 messages fit in the ring"),
            }
        }
        for s in senders {
            s.join().unwrap();
        }
        // The last receive ran after every sender finished.
        for per_sender in seen {
            assert_eq!(per_sender, (0..500).collect::<Vec<_>>(), "each sender's messages once, in order");
        }
    }
}

#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use crate::sync::atomic::AtomicBool;
    use crate::sync::{thread, Arc};

    /// The lock-free check cannot miss a message: a reader that learns (through
    /// any Release/Acquire edge, here a flag; in the server, the heavyweight
    /// lock the sender held) that a transaction's messages were sent finds them.
    #[test]
    fn loom_a_reader_after_the_sender_sees_its_message() {
        loom::model(|| {
            let q = Arc::new(InvalQueue::new());
            let sent = Arc::new(AtomicBool::new(false));
            let mut r = q.reader();
            let (q2, sent2) = (q.clone(), sent.clone());
            let t = thread::spawn(move || {
                q2.send(&[InvalMessage::Relation { db: 1, rel: 42 }]);
                sent2.store(true, Ordering::Release);
            });
            if sent.load(Ordering::Acquire) {
                assert!(q.has_news(&r));
                assert_eq!(q.receive(&mut r), Catchup::Messages(vec![InvalMessage::Relation { db: 1, rel: 42 }]));
            } else {
                // Before or during the send: nothing, or the whole message.
                match q.receive(&mut r) {
                    Catchup::UpToDate => {}
                    Catchup::Messages(m) => assert_eq!(m, vec![InvalMessage::Relation { db: 1, rel: 42 }]),
                    Catchup::Reset => panic!("one message cannot overflow the ring"),
                }
            }
            t.join().unwrap();
            let _ = q.receive(&mut r);
            assert!(!q.has_news(&r));
        });
    }
}
