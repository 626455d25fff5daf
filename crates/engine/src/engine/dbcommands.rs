//! Databases at the storage level (PostgreSQL's dbcommands.c, FILE_COPY strategy):
//! which database each backend is connected to, copying a template database's
//! directory for CREATE DATABASE, and removing a database's directory for DROP
//! DATABASE. The catalog row (pg_database) is the SQL layer's business.
//!
//! CREATE DATABASE (`create_database_dir`), crash-safe as PostgreSQL's FILE_COPY:
//! 1. checkpoint: every dirty buffer of the source is written and fsynced, so its
//!    files on disk are the source's current state (no other backend is connected
//!    to the source: the SQL layer checks that first, 55006);
//! 2. a `XLOG_DBASE_CREATE` record (source, destination) is written and flushed;
//! 3. `base/<src>` is copied to `base/<dst>` (recursively: the sequence files of
//!    `base/<db>/pg_seq` come along), each file and directory fsynced;
//! 4. a second checkpoint, so that redo never starts before the record and never
//!    copies a source that changed after the copy was made.
//!
//! Redo of `XLOG_DBASE_CREATE` removes the destination and copies the source again
//! (the source as redo has rebuilt it up to that record is the state that was
//! copied). DROP DATABASE (`drop_database_dir`): the database's buffers are
//! discarded unwritten, its open files forgotten, a `XLOG_DBASE_DROP` record is
//! flushed, then the directory is removed; redo does the same.
//!
//! Invariant: a backend's database is in `Engine::databases` from
//! `Backend::set_database` until the backend is dropped; the SQL layer serializes
//! connects with CREATE/DROP DATABASE, so "no other backend in db" checked under
//! its lock stays true until the files are copied or removed.

use super::{Backend, Engine};
use crate::error::{Error, Result};
use crate::storage::Oid;
use crate::wal::{DecodedRecord, RecordBuilder, RmgrId};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;

/// Info code of the Database resource manager: copy a database directory.
const XLOG_DBASE_CREATE: u8 = 0x00;
/// Info code: remove a database directory.
const XLOG_DBASE_DROP: u8 = 0x10;

/// Which database each connected backend works in (PostgreSQL's PGPROC.databaseId).
/// Backend number -> (database OID, pid). Protected by its mutex.
#[derive(Default)]
pub(crate) struct DatabaseRegistry(Mutex<HashMap<u32, (Oid, i32)>>);

impl DatabaseRegistry {
    pub(crate) fn set(&self, backend: u32, db: Oid, pid: i32) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).insert(backend, (db, pid));
    }

    pub(crate) fn remove(&self, backend: u32) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).remove(&backend);
    }
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |e| Error::io(path.display(), e)
}

impl Engine {
    /// The pids of the backends connected to `db`, other than `except`
    /// (PostgreSQL's CountOtherDBBackends, without the wait).
    pub fn backends_in_database(&self, db: Oid, except: Option<&Backend>) -> Vec<i32> {
        let m = self.databases.0.lock().unwrap_or_else(|e| e.into_inner());
        let mut pids: Vec<i32> =
            m.iter().filter(|(id, (d, _))| *d == db && except.is_none_or(|b| b.id.0 != **id)).map(|(_, (_, p))| *p).collect();
        pids.sort_unstable();
        pids
    }

    fn db_dir(&self, db: Oid) -> std::path::PathBuf {
        self.datadir.join(format!("base/{db}"))
    }

    /// Whether `base/<db>` exists.
    pub fn database_dir_exists(&self, db: Oid) -> bool {
        self.db_dir(db).is_dir()
    }

    /// CREATE DATABASE's file copy: `base/<src>` to `base/<dst>`, WAL-logged (see
    /// the module documentation for the order of steps).
    pub fn create_database_dir(&self, src: Oid, dst: Oid) -> Result<()> {
        self.checkpoint()?;
        let mut body = Vec::with_capacity(8);
        body.extend_from_slice(&src.to_le_bytes());
        body.extend_from_slice(&dst.to_le_bytes());
        let mut rb = RecordBuilder::new(RmgrId::Database, XLOG_DBASE_CREATE);
        rb.append_main_data(&body);
        let end = self.wal.insert(&rb)?;
        self.wal.flush(end)?;
        self.copy_db_dir(src, dst)?;
        self.checkpoint()?;
        Ok(())
    }

    /// DROP DATABASE's removal of `base/<db>`: buffers discarded unwritten, files
    /// forgotten, the record flushed, the directory removed.
    pub fn drop_database_dir(&self, db: Oid) -> Result<()> {
        let mut rb = RecordBuilder::new(RmgrId::Database, XLOG_DBASE_DROP);
        rb.append_main_data(&db.to_le_bytes());
        let end = self.wal.insert(&rb)?;
        self.wal.flush(end)?;
        self.remove_db_dir(db)
    }

    fn remove_db_dir(&self, db: Oid) -> Result<()> {
        self.buffers.drop_database_buffers(db);
        self.smgr.forget_database(db);
        self.pgstat_tables.forget_database(db);
        let dir = self.db_dir(db);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(dir.display(), e)),
        }
        self.sync_dir(&self.datadir.join("base"))
    }

    fn copy_db_dir(&self, src: Oid, dst: Oid) -> Result<()> {
        let to = self.db_dir(dst);
        match std::fs::remove_dir_all(&to) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(to.display(), e)),
        }
        self.copy_tree(&self.db_dir(src), &to)?;
        self.sync_dir(&self.datadir.join("base"))
    }

    fn copy_tree(&self, from: &Path, to: &Path) -> Result<()> {
        std::fs::create_dir_all(to).map_err(io_err(to))?;
        for entry in std::fs::read_dir(from).map_err(io_err(from))? {
            let entry = entry.map_err(io_err(from))?;
            let (src, dst) = (entry.path(), to.join(entry.file_name()));
            if entry.file_type().map_err(io_err(&src))?.is_dir() {
                self.copy_tree(&src, &dst)?;
            } else {
                std::fs::copy(&src, &dst).map_err(io_err(&src))?;
                if self.settings.fsync {
                    std::fs::File::open(&dst).and_then(|f| f.sync_all()).map_err(io_err(&dst))?;
                }
            }
        }
        self.sync_dir(to)
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        if self.settings.fsync {
            std::fs::File::open(dir).and_then(|f| f.sync_all()).map_err(io_err(dir))?;
        }
        Ok(())
    }

    /// Redo of a Database record.
    pub(super) fn redo_dbase(&self, rec: &DecodedRecord) -> Result<()> {
        let u = |i: usize| -> Result<Oid> {
            rec.main_data
                .get(i..i + 4)
                .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
                .ok_or_else(|| Error::corrupt("database WAL record too short"))
        };
        match rec.info {
            XLOG_DBASE_CREATE => {
                let (src, dst) = (u(0)?, u(4)?);
                // Pages of the source replayed so far must be on disk before the copy.
                self.buffers.flush_all_dirty()?;
                self.buffers.drop_database_buffers(dst);
                self.smgr.forget_database(dst);
                self.copy_db_dir(src, dst)
            }
            XLOG_DBASE_DROP => self.remove_db_dir(u(0)?),
            other => Err(Error::corrupt(format!("unknown database WAL record info {other:#x}"))),
        }
    }
}
