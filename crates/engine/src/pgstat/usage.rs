//! What the calling backend has used so far: WAL records, full-page images
//! and bytes it inserted, shared buffers it dirtied and wrote, temporary-file
//! blocks it read and wrote, temporary files it closed (PostgreSQL's
//! pgWalUsage and pgBufferUsage, and what pgstat_report_tempfile counts).
//!
//! The counters are per thread, and a backend is one thread for its whole
//! life (the server runs each connection on a thread of its own): the WAL
//! insertion, `mark_dirty` and the temporary files are reached from code
//! that has no backend at hand (PostgreSQL keeps these counters in backend
//! globals for the same reason). They are plain `Cell`s: no atomic and no
//! shared cache line on the per-record or per-buffer path. A backend reads
//! its own counters ([`current`]) at a statement's start and end and keeps
//! the difference (pg_stat_statements); nobody reads another thread's.
//! Auxiliary threads (checkpointer, background writer) count into their
//! own cells, which nobody reads.

use std::cell::Cell;

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

thread_local! {
    static USAGE: Cell<Usage> = const {
        Cell::new(Usage {
            wal_records: 0,
            wal_fpi: 0,
            wal_bytes: 0,
            shared_blks_dirtied: 0,
            shared_blks_written: 0,
            temp_blks_read: 0,
            temp_blks_written: 0,
            temp_files: 0,
            temp_bytes: 0,
        })
    };
}

#[inline]
fn update(f: impl FnOnce(&mut Usage)) {
    USAGE.with(|c| {
        let mut u = c.get();
        f(&mut u);
        c.set(u);
    });
}

/// The calling thread's counters now.
pub fn current() -> Usage {
    USAGE.with(Cell::get)
}

/// One WAL record of `bytes` bytes carrying `fpi` full-page images.
#[inline]
pub fn count_wal(bytes: u64, fpi: u64) {
    update(|u| {
        u.wal_records += 1;
        u.wal_fpi += fpi;
        u.wal_bytes += bytes;
    });
}

/// A clean shared buffer made dirty.
#[inline]
pub fn count_dirtied() {
    update(|u| u.shared_blks_dirtied += 1);
}

/// A shared buffer written out by this thread.
#[inline]
pub fn count_written() {
    update(|u| u.shared_blks_written += 1);
}

/// Temporary-file blocks read / written.
pub fn count_temp_blocks(read: u64, written: u64) {
    update(|u| {
        u.temp_blks_read += read;
        u.temp_blks_written += written;
    });
}

/// A temporary file of `bytes` bytes removed.
pub fn count_temp_file(bytes: u64) {
    update(|u| {
        u.temp_files += 1;
        u.temp_bytes += bytes;
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_thread_and_differences() {
        let before = current();
        count_wal(100, 1);
        count_wal(50, 0);
        count_dirtied();
        count_temp_blocks(2, 3);
        count_temp_file(8192);
        let d = current().since(&before);
        assert_eq!((d.wal_records, d.wal_fpi, d.wal_bytes), (2, 1, 150));
        assert_eq!((d.shared_blks_dirtied, d.temp_blks_read, d.temp_blks_written, d.temp_files, d.temp_bytes), (1, 2, 3, 1, 8192));
        // Another thread's counters are its own.
        let other = std::thread::spawn(|| {
            count_wal(1, 0);
            current().wal_records
        })
        .join()
        .unwrap();
        assert_eq!(other, 1);
        assert_eq!(current().since(&before).wal_records, 2);
    }
}
