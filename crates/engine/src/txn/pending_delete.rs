//! Pending deletes (PostgreSQL's `storage.c` PendingRelDelete): relation files
//! to remove when the transaction ends.
//!
//! - A relation dropped by a transaction (DROP TABLE / INDEX, the old
//!   relfilenode replaced by TRUNCATE or a table rewrite) is registered with
//!   [`PendingDeletes::at_commit`]: its files go after the commit record is in
//!   the WAL (flushed when synchronous_commit is on), before the transaction's
//!   locks are released, so no backend can be reading it (it held
//!   AccessExclusiveLock) and no later transaction can see it in the catalog.
//! - A relation created by a transaction is registered with
//!   [`PendingDeletes::at_abort`]: its files go if the transaction aborts.
//!
//! Removing a relation = dropping its buffers (dirty or not, never written:
//! `BufferPool::drop_relation_buffers`) and then unlinking every fork
//! (`Smgr::unlink`), in that order, so that no buffer of a removed file can be
//! written back later and re-create it. The engine installs that function with
//! `TxnShared::set_file_dropper` when it opens.
//!
//! Crash safety: the list lives in memory. A crash between the commit record and
//! the unlink (or during a transaction that created files) leaves orphan files;
//! the catalog owner (the SQL layer, which knows which relfilenodes pg_class
//! references) removes every unreferenced relation file at startup, after
//! recovery and before accepting connections. Recovery itself may re-create a
//! dropped relation's file while replaying records written before the drop
//! (redo creates missing files); that sweep removes it too.
//!
//! Savepoints: entries are per top-level transaction; a ROLLBACK TO does not
//! remove the files created after the savepoint (they become orphans, removed
//! at the next startup).

use crate::storage::RelFileLocator;

/// Removes a relation's buffers and files (installed by the engine).
pub type FileDropper = Box<dyn Fn(RelFileLocator) + Send + Sync>;

/// The files a transaction removes when it ends.
#[derive(Debug, Default)]
pub struct PendingDeletes {
    /// (relation, at commit?): `true` removed at commit, `false` at abort.
    list: Vec<(RelFileLocator, bool)>,
}

impl PendingDeletes {
    /// `rel` was dropped: remove its files if the transaction commits.
    pub fn at_commit(&mut self, rel: RelFileLocator) {
        self.list.push((rel, true));
    }

    /// `rel` was created: remove its files if the transaction aborts.
    pub fn at_abort(&mut self, rel: RelFileLocator) {
        self.list.push((rel, false));
    }

    /// Takes the relations to remove now that the transaction ended
    /// (`committed`), clearing the list.
    pub fn take(&mut self, committed: bool) -> Vec<RelFileLocator> {
        let mut out: Vec<RelFileLocator> = self.list.drain(..).filter(|(_, c)| *c == committed).map(|(r, _)| r).collect();
        out.dedup();
        out
    }
}
