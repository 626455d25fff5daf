//! What a backend has used so far: WAL records, full-page images and bytes
//! it inserted, shared buffers it dirtied and wrote, temporary-file blocks it
//! read and wrote, temporary files it closed (PostgreSQL's pgWalUsage and
//! pgBufferUsage, and what pgstat_report_tempfile counts).
//!
//! The counters are per backend: a [`UsageCounters`] in the backend's slot of
//! the backend status array (`wait_event::SlotCounters`), set to zero when a
//! backend registers on the slot. They are counted where no backend is at
//! hand (the WAL insertion, `mark_dirty`, the eviction of a dirty victim,
//! the temporary files), so the counting functions find the slot of the
//! calling thread through `wait_event`'s one thread-local: the thread-to-slot
//! binding, per-thread state (which backend this thread runs), not session
//! state. Each count is a relaxed load and store on a counter only that
//! backend writes ([`OwnedCounter`]): no read-modify-write, no line shared
//! with another backend. A thread that is no registered backend counts
//! nothing.
//!
//! Whoever has the backend reads its counters by its number ([`of`]): the
//! session takes differences around a statement (pg_stat_statements), and
//! `Backend::pgstat_report` passes them to `BackendStats::take_if_due`,
//! which adds the temporary files since its last flush to the database's
//! `temp_files` / `temp_bytes`. Auxiliary threads (checkpointer, background
//! writer) count into their own slots, which nobody reads.

use crate::pgstat::lwlock_stats::OwnedCounter;

/// The counters of one thread since it started (they only grow).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub wal_records: u64,
    pub wal_fpi: u64,
    pub wal_bytes: u64,
    /// Shared buffers this thread made dirty (clean before).
    pub shared_blks_dirtied: u64,
    /// Shared buffers this thread wrote out (a dirty victim it evicted).
    pub shared_blks_written: u64,
    /// Temporary-file blocks (8 kB) read and written.
    pub temp_blks_read: u64,
    pub temp_blks_written: u64,
    /// Temporary files removed, and their total size in bytes
    /// (pg_stat_database.temp_files / temp_bytes).
    pub temp_files: u64,
    pub temp_bytes: u64,
}

impl Usage {
    /// What was used between `before` and `self`.
    pub fn since(&self, before: &Usage) -> Usage {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        Usage {
            wal_records: d(self.wal_records, before.wal_records),
            wal_fpi: d(self.wal_fpi, before.wal_fpi),
            wal_bytes: d(self.wal_bytes, before.wal_bytes),
            shared_blks_dirtied: d(self.shared_blks_dirtied, before.shared_blks_dirtied),
            shared_blks_written: d(self.shared_blks_written, before.shared_blks_written),
            temp_blks_read: d(self.temp_blks_read, before.temp_blks_read),
            temp_blks_written: d(self.temp_blks_written, before.temp_blks_written),
            temp_files: d(self.temp_files, before.temp_files),
            temp_bytes: d(self.temp_bytes, before.temp_bytes),
        }
    }
}

/// One backend's counters (a field of its `SlotCounters`). Only the backend
/// registered on the slot writes them; anyone reads.
#[derive(Default)]
pub struct UsageCounters {
    wal_records: OwnedCounter,
    wal_fpi: OwnedCounter,
    wal_bytes: OwnedCounter,
    shared_blks_dirtied: OwnedCounter,
    shared_blks_written: OwnedCounter,
    temp_blks_read: OwnedCounter,
    temp_blks_written: OwnedCounter,
    temp_files: OwnedCounter,
    temp_bytes: OwnedCounter,
}

impl UsageCounters {
    /// The counters now (each read separately: a sample, exact for the owner).
    pub fn read(&self) -> Usage {
        Usage {
            wal_records: self.wal_records.get(),
            wal_fpi: self.wal_fpi.get(),
            wal_bytes: self.wal_bytes.get(),
            shared_blks_dirtied: self.shared_blks_dirtied.get(),
            shared_blks_written: self.shared_blks_written.get(),
            temp_blks_read: self.temp_blks_read.get(),
            temp_blks_written: self.temp_blks_written.get(),
            temp_files: self.temp_files.get(),
            temp_bytes: self.temp_bytes.get(),
        }
    }

    /// Zeroes every counter: a new backend took the slot. Owner only.
    pub fn reset(&self) {
        for c in [
            &self.wal_records,
            &self.wal_fpi,
            &self.wal_bytes,
            &self.shared_blks_dirtied,
            &self.shared_blks_written,
            &self.temp_blks_read,
            &self.temp_blks_written,
            &self.temp_files,
            &self.temp_bytes,
        ] {
            c.reset();
        }
    }
}

#[cfg(not(loom))]
pub use counting::*;

#[cfg(not(loom))]
mod counting {
    use super::{Usage, UsageCounters};
    use crate::pgstat::wait_event::{slots, with_my_counters};
    use crate::pgstat::BackendId;

    /// Counts into the calling backend's slot; nothing for a thread with none.
    #[inline]
    fn update(f: impl FnOnce(&UsageCounters)) {
        with_my_counters(|mine| {
            if let Some(c) = mine {
                f(&c.usage);
            }
        });
    }

    /// Backend `id`'s counters since it started (zero for a number out of
    /// range). Exact when called by that backend, a sample from another thread.
    pub fn of(id: BackendId) -> Usage {
        slots().get(id.0 as usize).and_then(|s| s.counters()).map(|c| c.usage.read()).unwrap_or_default()
    }

    /// One WAL record of `bytes` bytes carrying `fpi` full-page images.
    #[inline]
    pub fn count_wal(bytes: u64, fpi: u64) {
        update(|u| {
            u.wal_records.bump();
            u.wal_fpi.add(fpi);
            u.wal_bytes.add(bytes);
        });
    }

    /// A clean shared buffer made dirty.
    #[inline]
    pub fn count_dirtied() {
        update(|u| u.shared_blks_dirtied.bump());
    }

    /// A shared buffer written out by this thread.
    #[inline]
    pub fn count_written() {
        update(|u| u.shared_blks_written.bump());
    }

    /// Temporary-file blocks read / written.
    pub fn count_temp_blocks(read: u64, written: u64) {
        update(|u| {
            u.temp_blks_read.add(read);
            u.temp_blks_written.add(written);
        });
    }

    /// A temporary file of `bytes` bytes removed.
    pub fn count_temp_file(bytes: u64) {
        update(|u| {
            u.temp_files.bump();
            u.temp_bytes.add(bytes);
        });
    }
}

/// Under loom the backend slots do not exist: counting is a no-op.
#[cfg(loom)]
mod counting_loom {
    #[inline]
    pub fn count_wal(_bytes: u64, _fpi: u64) {}
    #[inline]
    pub fn count_dirtied() {}
    #[inline]
    pub fn count_written() {}
    pub fn count_temp_blocks(_read: u64, _written: u64) {}
    pub fn count_temp_file(_bytes: u64) {}
}
#[cfg(loom)]
pub use counting_loom::*;

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::pgstat::wait_event::{register_backend, unregister_backend};
    use crate::pgstat::BackendId;

    #[test]
    fn counts_per_backend_and_differences() {
        // Numbers used by no other test of this crate.
        let (me, other) = (BackendId(1020), BackendId(1021));
        std::thread::scope(|s| {
            s.spawn(|| {
                register_backend(me).unwrap();
                let before = of(me);
                count_wal(100, 1);
                count_wal(50, 0);
                count_dirtied();
                count_temp_blocks(2, 3);
                count_temp_file(8192);
                let d = of(me).since(&before);
                assert_eq!((d.wal_records, d.wal_fpi, d.wal_bytes), (2, 1, 150));
                assert_eq!((d.shared_blks_dirtied, d.temp_blks_read, d.temp_blks_written, d.temp_files, d.temp_bytes), (1, 2, 3, 1, 8192));
                // Another backend's counters are its own.
                s.spawn(|| {
                    register_backend(other).unwrap();
                    count_wal(1, 0);
                    assert_eq!(of(other).wal_records, 1);
                    unregister_backend();
                })
                .join()
                .unwrap();
                assert_eq!(of(me).since(&before).wal_records, 2);
                unregister_backend();
                // Unregistered: counted nowhere.
                count_wal(1, 0);
                assert_eq!(of(me).since(&before).wal_records, 2);
            });
        });
        // A new backend on the number starts from zero; the old counts stay
        // readable until then.
        assert_eq!(of(me).wal_records, 2);
        std::thread::spawn(move || {
            register_backend(me).unwrap();
            assert_eq!(of(me), Usage::default());
            unregister_backend();
        })
        .join()
        .unwrap();
    }
}
