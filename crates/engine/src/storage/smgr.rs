//! The storage manager (PostgreSQL's smgr + md.c): relation forks as sequences of
//! 8 kB blocks in 1 GB segment files. See docs/format/relation-files.md.
//!
//! Paths, relative to the data directory:
//! - tablespace 1663 (pg_default): `base/<db_oid>/<rel_number>[_fsm|_vm|_init][.<segno>]`
//! - tablespace 1664 (pg_global):  `global/<rel_number>[...]`
//! - other tablespaces:            `pg_tblspc/<spc_oid>/<db_oid>/<rel_number>[...]`
//!
//! Segment 0 has no suffix; segment `s` > 0 is `.<s>`. Every segment but the last
//! holds exactly `segment_blocks` blocks (131072 = 1 GB).
//!
//! Concurrency: all methods take `&self` and may be called from many threads. Open
//! files are cached in a partitioned map of `Arc<File>` (a read takes one partition's
//! read lock to clone the `Arc`, then does `pread` without any lock). Writes record the
//! segment in the pending-sync set; `sync_all` fsyncs exactly those files (the
//! checkpoint's job), `sync_rel` those of one fork.
//!
//! What keeps two writers of one block apart is the buffer manager (one buffer per
//! block, I/O-in-progress flag); what keeps extenders apart is the relation
//! extension lock. The smgr itself only guarantees that each call is one pread/pwrite.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use crate::config::BLCKSZ;
use crate::error::{Error, Result};
use crate::storage::{BlockNumber, ForkNumber, Oid, RelFileLocator};

/// Blocks per segment file: 1 GB / 8 kB (PostgreSQL's RELSEG_SIZE).
pub const RELSEG_SIZE: u32 = 131072;
/// The default tablespace (pg_default): files under `base/`.
pub const DEFAULTTABLESPACE_OID: Oid = 1663;
/// The global tablespace (pg_global): files under `global/`.
pub const GLOBALTABLESPACE_OID: Oid = 1664;

const FD_PARTITIONS: usize = 16;
/// Open files kept per cache partition before the cache drops some (PostgreSQL's
/// max_files_per_process = 1000, shared here by all backends).
const FD_PER_PARTITION: usize = 64;

/// One segment file of one fork.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct SegKey {
    rel: RelFileLocator,
    fork: ForkNumber,
    segno: u32,
}

impl SegKey {
    fn partition(&self) -> usize {
        let h = (self.rel.rel_number as usize)
            .wrapping_mul(31)
            .wrapping_add(self.rel.db_oid as usize)
            .wrapping_mul(31)
            .wrapping_add(self.segno as usize * 4 + self.fork as usize);
        (h ^ (h >> 7)) % FD_PARTITIONS
    }
}

/// Open files of one cache partition.
type FdMap = HashMap<SegKey, Arc<File>>;

/// The storage manager of one data directory.
pub struct Smgr {
    data_dir: PathBuf,
    /// Blocks per segment; RELSEG_SIZE except in tests.
    segment_blocks: u32,
    /// Whether fsync is done at all (the `fsync` setting).
    fsync: bool,
    /// Open segment files. Each partition's lock protects its map only; file I/O is
    /// done on a cloned `Arc<File>` outside the lock.
    files: Box<[RwLock<FdMap>]>,
    /// Segments written (or created) since they were last fsynced.
    /// Protected by its mutex; taken after (never while holding) a `files` lock.
    pending_sync: Mutex<HashSet<SegKey>>,
    /// Directories in which files were created or removed since the last sync_all.
    pending_dirs: Mutex<HashSet<PathBuf>>,
}

impl Smgr {
    /// A storage manager over `data_dir` (created if missing).
    pub fn new(data_dir: impl Into<PathBuf>, fsync: bool) -> Result<Smgr> {
        Smgr::with_segment_blocks(data_dir, fsync, RELSEG_SIZE)
    }

    /// As `new`, with a different segment size (tests use a few blocks so that
    /// crossing segment boundaries is cheap). Real data directories use RELSEG_SIZE.
    pub fn with_segment_blocks(
        data_dir: impl Into<PathBuf>,
        fsync: bool,
        segment_blocks: u32,
    ) -> Result<Smgr> {
        let data_dir = data_dir.into();
        std::fs::create_dir_all(&data_dir).map_err(|e| Error::io(data_dir.display(), e))?;
        assert!(segment_blocks > 0);
        Ok(Smgr {
            data_dir,
            segment_blocks,
            fsync,
            files: (0..FD_PARTITIONS).map(|_| RwLock::new(HashMap::new())).collect(),
            pending_sync: Mutex::new(HashSet::new()),
            pending_dirs: Mutex::new(HashSet::new()),
        })
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    pub fn segment_blocks(&self) -> u32 {
        self.segment_blocks
    }

    /// The directory holding a relation's files, relative to the data directory.
    pub fn rel_dir(rel: RelFileLocator) -> String {
        match rel.spc_oid {
            DEFAULTTABLESPACE_OID => format!("base/{}", rel.db_oid),
            GLOBALTABLESPACE_OID => "global".to_string(),
            spc => format!("pg_tblspc/{}/{}", spc, rel.db_oid),
        }
    }

    /// A segment's path relative to the data directory, e.g. `base/5/16384_fsm.2`
    /// (PostgreSQL's relpath plus segment suffix).
    pub fn rel_path(rel: RelFileLocator, fork: ForkNumber, segno: u32) -> String {
        let mut p = format!("{}/{}{}", Smgr::rel_dir(rel), rel.rel_number, fork.suffix());
        if segno > 0 {
            p.push_str(&format!(".{segno}"));
        }
        p
    }

    fn full_path(&self, key: SegKey) -> PathBuf {
        self.data_dir.join(Smgr::rel_path(key.rel, key.fork, key.segno))
    }

    fn key(&self, rel: RelFileLocator, fork: ForkNumber, block: BlockNumber) -> (SegKey, u64) {
        let segno = block / self.segment_blocks;
        let off = (block % self.segment_blocks) as u64 * BLCKSZ as u64;
        (SegKey { rel, fork, segno }, off)
    }

    /// The open file of a segment; `create` creates it if missing. `Ok(None)` if it
    /// does not exist and `create` is false.
    fn open_seg(&self, key: SegKey, create: bool) -> Result<Option<Arc<File>>> {
        let part = &self.files[key.partition()];
        if let Some(f) = part.read().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return Ok(Some(f.clone()));
        }
        let path = self.full_path(key);
        let file = match OpenOptions::new().read(true).write(true).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound && create => {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir.display(), e))?;
                    self.pending_dirs.lock().unwrap_or_else(|e| e.into_inner()).insert(dir.into());
                }
                let f = OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(&path)
                    .map_err(|e| Error::io(path.display(), e))?;
                self.pending_sync.lock().unwrap_or_else(|e| e.into_inner()).insert(key);
                f
            }
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(path.display(), e)),
        };
        let file = Arc::new(file);
        let mut map = part.write().unwrap_or_else(|e| e.into_inner());
        if map.len() >= FD_PER_PARTITION {
            // Close some descriptors. Users holding an Arc keep theirs until done.
            let victims: Vec<SegKey> = map.keys().take(FD_PER_PARTITION / 4).copied().collect();
            for v in victims {
                map.remove(&v);
            }
        }
        Ok(Some(map.entry(key).or_insert(file).clone()))
    }

    fn forget_fds(&self, rel: RelFileLocator, fork: ForkNumber, from_segno: u32) {
        for part in self.files.iter() {
            part.write()
                .unwrap_or_else(|e| e.into_inner())
                .retain(|k, _| !(k.rel == rel && k.fork == fork && k.segno >= from_segno));
        }
        self.pending_sync
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|k| !(k.rel == rel && k.fork == fork && k.segno >= from_segno));
    }

    /// Closes every open file of database `db` and forgets its pending fsyncs
    /// (DROP DATABASE, before its directory is removed).
    pub fn forget_database(&self, db: Oid) {
        for part in self.files.iter() {
            part.write().unwrap_or_else(|e| e.into_inner()).retain(|k, _| k.rel.db_oid != db);
        }
        self.pending_sync.lock().unwrap_or_else(|e| e.into_inner()).retain(|k| k.rel.db_oid != db);
    }

    /// Creates the fork's first segment (empty). Succeeds if it already exists (as
    /// PostgreSQL's smgrcreate in redo).
    pub fn create(&self, rel: RelFileLocator, fork: ForkNumber) -> Result<()> {
        self.open_seg(SegKey { rel, fork, segno: 0 }, true)?;
        Ok(())
    }

    /// Whether the fork exists (its first segment does).
    pub fn exists(&self, rel: RelFileLocator, fork: ForkNumber) -> bool {
        matches!(self.open_seg(SegKey { rel, fork, segno: 0 }, false), Ok(Some(_)))
    }

    /// Number of blocks in the fork: full segments plus the last one's length.
    /// A missing fork has 0 blocks.
    pub fn nblocks(&self, rel: RelFileLocator, fork: ForkNumber) -> Result<BlockNumber> {
        let mut total: u64 = 0;
        for segno in 0.. {
            let key = SegKey { rel, fork, segno };
            let Some(f) = self.open_seg(key, false)? else { break };
            let len = f.metadata().map_err(|e| Error::io(self.full_path(key).display(), e))?.len();
            let blocks = len / BLCKSZ as u64;
            total += blocks;
            if blocks < self.segment_blocks as u64 {
                break;
            }
        }
        BlockNumber::try_from(total)
            .map_err(|_| Error::corrupt(format!("relation {} has too many blocks", Smgr::rel_path(rel, fork, 0))))
    }

    /// Reads one block into `buf` (BLCKSZ bytes). A block that is not in the file
    /// (short read) is corruption: the caller asked for a block that should exist.
    pub fn read_block(
        &self,
        rel: RelFileLocator,
        fork: ForkNumber,
        block: BlockNumber,
        buf: &mut [u8],
    ) -> Result<()> {
        debug_assert_eq!(buf.len(), BLCKSZ);
        let (key, off) = self.key(rel, fork, block);
        let Some(f) = self.open_seg(key, false)? else {
            return Err(Error::corrupt(format!(
                "could not read block {block} in file \"{}\": file does not exist",
                Smgr::rel_path(rel, fork, key.segno)
            )));
        };
        let mut done = 0;
        while done < BLCKSZ {
            match f.read_at(&mut buf[done..], off + done as u64) {
                Ok(0) => {
                    return Err(Error::corrupt(format!(
                        "could not read block {block} in file \"{}\": read only {done} of {BLCKSZ} bytes",
                        Smgr::rel_path(rel, fork, key.segno)
                    )))
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(self.full_path(key).display(), e)),
            }
        }
        Ok(())
    }

    /// Writes one block. Segments before the block's are filled out to full size if
    /// missing (redo may write past the end); normal callers write existing blocks.
    pub fn write_block(
        &self,
        rel: RelFileLocator,
        fork: ForkNumber,
        block: BlockNumber,
        buf: &[u8],
    ) -> Result<()> {
        debug_assert_eq!(buf.len(), BLCKSZ);
        let (key, off) = self.key(rel, fork, block);
        let f = self.segment_for_write(key)?;
        f.write_all_at(buf, off).map_err(|e| Error::io(self.full_path(key).display(), e))?;
        self.pending_sync.lock().unwrap_or_else(|e| e.into_inner()).insert(key);
        Ok(())
    }

    /// Opens (creating if needed) a segment for writing; makes sure every earlier
    /// segment exists at full size so that `nblocks` stays consistent.
    fn segment_for_write(&self, key: SegKey) -> Result<Arc<File>> {
        if let Some(f) = self.open_seg(key, false)? {
            return Ok(f);
        }
        let full = self.segment_blocks as u64 * BLCKSZ as u64;
        for segno in 0..key.segno {
            let k = SegKey { segno, ..key };
            let f = self.open_seg(k, true)?.expect("created");
            let len = f.metadata().map_err(|e| Error::io(self.full_path(k).display(), e))?.len();
            if len < full {
                f.set_len(full).map_err(|e| Error::io(self.full_path(k).display(), e))?;
                self.pending_sync.lock().unwrap_or_else(|e| e.into_inner()).insert(k);
            }
        }
        Ok(self.open_seg(key, true)?.expect("created"))
    }

    /// Writes `nblocks` zero blocks starting at `first` (relation extension; the
    /// caller holds the relation extension lock and `first` is the current end).
    /// Crosses segment boundaries as needed, one pwrite per segment touched.
    pub fn zero_extend(
        &self,
        rel: RelFileLocator,
        fork: ForkNumber,
        first: BlockNumber,
        nblocks: u32,
    ) -> Result<()> {
        let end = first
            .checked_add(nblocks)
            .filter(|&e| e < crate::storage::INVALID_BLOCK)
            .ok_or_else(|| {
                Error::user(
                    crate::error::SqlState::PROGRAM_LIMIT_EXCEEDED,
                    format!("cannot extend file \"{}\" beyond {} blocks", Smgr::rel_path(rel, fork, 0), u32::MAX - 1),
                )
            })?;
        let mut blk = first;
        while blk < end {
            let (key, off) = self.key(rel, fork, blk);
            let in_seg = (self.segment_blocks - blk % self.segment_blocks).min(end - blk);
            let f = self.segment_for_write(key)?;
            let zeros = vec![0u8; in_seg as usize * BLCKSZ];
            f.write_all_at(&zeros, off).map_err(|e| Error::extend(Smgr::rel_path(key.rel, key.fork, key.segno), &e))?;
            self.pending_sync.lock().unwrap_or_else(|e| e.into_inner()).insert(key);
            blk += in_seg;
        }
        Ok(())
    }

    /// Writes one block at the end of the fork (`block` must be nblocks). A
    /// failure is PostgreSQL's `could not extend file` (53100 when the disk is full).
    pub fn extend(
        &self,
        rel: RelFileLocator,
        fork: ForkNumber,
        block: BlockNumber,
        buf: &[u8],
    ) -> Result<()> {
        debug_assert_eq!(buf.len(), BLCKSZ);
        let (key, off) = self.key(rel, fork, block);
        let f = self.segment_for_write(key)?;
        f.write_all_at(buf, off).map_err(|e| Error::extend(Smgr::rel_path(key.rel, key.fork, key.segno), &e))?;
        self.pending_sync.lock().unwrap_or_else(|e| e.into_inner()).insert(key);
        Ok(())
    }

    /// Cuts the fork to `nblocks` blocks: later segments are removed, the last kept
    /// one is shortened. The caller has dropped the buffers of the removed blocks.
    pub fn truncate(&self, rel: RelFileLocator, fork: ForkNumber, nblocks: BlockNumber) -> Result<()> {
        let keep_segs = if nblocks == 0 { 1 } else { (nblocks - 1) / self.segment_blocks + 1 };
        // Remove whole segments from the last backwards, so a crash leaves a prefix.
        let mut last = keep_segs;
        while self.full_path(SegKey { rel, fork, segno: last }).exists() {
            last += 1;
        }
        self.forget_fds(rel, fork, keep_segs);
        for segno in (keep_segs..last).rev() {
            let p = self.full_path(SegKey { rel, fork, segno });
            std::fs::remove_file(&p).map_err(|e| Error::io(p.display(), e))?;
        }
        // Again: a descriptor opened meanwhile would point at a removed file.
        self.forget_fds(rel, fork, keep_segs);
        let key = SegKey { rel, fork, segno: keep_segs - 1 };
        if let Some(f) = self.open_seg(key, false)? {
            let len = (nblocks - (keep_segs - 1) * self.segment_blocks) as u64 * BLCKSZ as u64;
            f.set_len(len).map_err(|e| Error::io(self.full_path(key).display(), e))?;
            // Truncation must be durable before the checkpoint that follows it ends.
            self.pending_sync.lock().unwrap_or_else(|e| e.into_inner()).insert(key);
        }
        if last > keep_segs {
            let dir = self.data_dir.join(Smgr::rel_dir(rel));
            self.pending_dirs.lock().unwrap_or_else(|e| e.into_inner()).insert(dir);
        }
        Ok(())
    }

    /// Removes every segment of the fork (or of every fork when `fork` is None).
    /// A missing file is not an error.
    pub fn unlink(&self, rel: RelFileLocator, fork: Option<ForkNumber>) -> Result<()> {
        let forks: Vec<ForkNumber> = match fork {
            Some(f) => vec![f],
            None => ForkNumber::ALL.to_vec(),
        };
        for fork in forks {
            self.forget_fds(rel, fork, 0);
            for segno in 0.. {
                let p = self.full_path(SegKey { rel, fork, segno });
                match std::fs::remove_file(&p) {
                    Ok(()) => {}
                    Err(e) if e.kind() == ErrorKind::NotFound => break,
                    Err(e) => return Err(Error::io(p.display(), e)),
                }
            }
            // Again: a descriptor opened meanwhile would point at a removed file.
            self.forget_fds(rel, fork, 0);
        }
        let dir = self.data_dir.join(Smgr::rel_dir(rel));
        self.pending_dirs.lock().unwrap_or_else(|e| e.into_inner()).insert(dir);
        Ok(())
    }

    fn fsync_keys(&self, keys: Vec<SegKey>) -> Result<()> {
        for (i, key) in keys.iter().enumerate() {
            let res = match self.open_seg(*key, false) {
                Ok(Some(f)) if self.fsync => {
                    f.sync_all().map_err(|e| Error::io(self.full_path(*key).display(), e))
                }
                Ok(_) => Ok(()), // removed since (unlink/truncate): nothing to sync
                Err(e) => Err(e),
            };
            if let Err(e) = res {
                // Keep the ones not synced so the next attempt retries them.
                let mut p = self.pending_sync.lock().unwrap_or_else(|e| e.into_inner());
                p.extend(keys[i..].iter().copied());
                return Err(e);
            }
        }
        Ok(())
    }

    /// Fsyncs the files of one fork written since their last sync
    /// (PostgreSQL's smgrimmedsync, used after a WAL-skipping bulk load).
    pub fn sync_rel(&self, rel: RelFileLocator, fork: ForkNumber) -> Result<()> {
        let keys: Vec<SegKey> = {
            let mut p = self.pending_sync.lock().unwrap_or_else(|e| e.into_inner());
            let keys: Vec<SegKey> = p.iter().filter(|k| k.rel == rel && k.fork == fork).copied().collect();
            for k in &keys {
                p.remove(k);
            }
            keys
        };
        self.fsync_keys(keys)
    }

    /// Fsyncs every file written since the last sync, and the directories where
    /// files were created or removed (the checkpoint's sync phase). Writes that happen
    /// while this runs are synced by the next call.
    pub fn sync_all(&self) -> Result<()> {
        let mut keys: Vec<SegKey> =
            std::mem::take(&mut *self.pending_sync.lock().unwrap_or_else(|e| e.into_inner()))
                .into_iter()
                .collect();
        keys.sort();
        self.fsync_keys(keys)?;
        let dirs = std::mem::take(&mut *self.pending_dirs.lock().unwrap_or_else(|e| e.into_inner()));
        if self.fsync {
            for d in dirs {
                match File::open(&d).and_then(|f| f.sync_all()) {
                    Ok(()) => {}
                    Err(e) if e.kind() == ErrorKind::NotFound => {}
                    Err(e) => return Err(Error::io(d.display(), e)),
                }
            }
        }
        Ok(())
    }

    /// Number of segment files waiting for fsync (for tests and statistics).
    pub fn pending_sync_count(&self) -> usize {
        self.pending_sync.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(n: Oid) -> RelFileLocator {
        RelFileLocator { spc_oid: DEFAULTTABLESPACE_OID, db_oid: 5, rel_number: n }
    }

    fn page(fill: u8) -> Vec<u8> {
        vec![fill; BLCKSZ]
    }

    #[test]
    fn smgr_paths_follow_postgresql() {
        assert_eq!(Smgr::rel_path(rel(16384), ForkNumber::Main, 0), "base/5/16384");
        assert_eq!(Smgr::rel_path(rel(16384), ForkNumber::Fsm, 2), "base/5/16384_fsm.2");
        assert_eq!(Smgr::rel_path(rel(1), ForkNumber::VisibilityMap, 0), "base/5/1_vm");
        let g = RelFileLocator { spc_oid: GLOBALTABLESPACE_OID, db_oid: 0, rel_number: 1262 };
        assert_eq!(Smgr::rel_path(g, ForkNumber::Main, 0), "global/1262");
        let t = RelFileLocator { spc_oid: 16500, db_oid: 5, rel_number: 7 };
        assert_eq!(Smgr::rel_path(t, ForkNumber::Init, 1), "pg_tblspc/16500/5/7_init.1");
    }

    #[test]
    fn smgr_create_extend_read_write() {
        let dir = tempfile::tempdir().unwrap();
        let s = Smgr::new(dir.path(), true).unwrap();
        let r = rel(16384);
        assert!(!s.exists(r, ForkNumber::Main));
        assert_eq!(s.nblocks(r, ForkNumber::Main).unwrap(), 0);
        s.create(r, ForkNumber::Main).unwrap();
        assert!(s.exists(r, ForkNumber::Main));
        assert!(dir.path().join("base/5/16384").exists());
        s.zero_extend(r, ForkNumber::Main, 0, 3).unwrap();
        assert_eq!(s.nblocks(r, ForkNumber::Main).unwrap(), 3);
        s.write_block(r, ForkNumber::Main, 1, &page(7)).unwrap();
        s.extend(r, ForkNumber::Main, 3, &page(9)).unwrap();
        let mut buf = page(0);
        s.read_block(r, ForkNumber::Main, 1, &mut buf).unwrap();
        assert_eq!(buf, page(7));
        s.read_block(r, ForkNumber::Main, 3, &mut buf).unwrap();
        assert_eq!(buf, page(9));
        s.read_block(r, ForkNumber::Main, 0, &mut buf).unwrap();
        assert_eq!(buf, page(0));
        // A block past the end: short read -> corruption.
        let e = s.read_block(r, ForkNumber::Main, 4, &mut buf).unwrap_err();
        assert!(matches!(e, Error::Corrupt { .. }), "{e}");
        assert!(e.to_string().contains("read only 0 of 8192 bytes"), "{e}");
        // Other forks are separate files.
        s.create(r, ForkNumber::Fsm).unwrap();
        assert_eq!(s.nblocks(r, ForkNumber::Fsm).unwrap(), 0);
    }

    #[test]
    fn smgr_crosses_segment_boundaries() {
        let dir = tempfile::tempdir().unwrap();
        let s = Smgr::with_segment_blocks(dir.path(), false, 4).unwrap();
        let r = rel(20);
        s.create(r, ForkNumber::Main).unwrap();
        s.zero_extend(r, ForkNumber::Main, 0, 10).unwrap();
        assert_eq!(s.nblocks(r, ForkNumber::Main).unwrap(), 10);
        assert!(dir.path().join("base/5/20.1").exists());
        assert!(dir.path().join("base/5/20.2").exists());
        assert_eq!(std::fs::metadata(dir.path().join("base/5/20.2")).unwrap().len(), 2 * BLCKSZ as u64);
        for b in 0..10u32 {
            s.write_block(r, ForkNumber::Main, b, &page(b as u8 + 1)).unwrap();
        }
        let mut buf = page(0);
        for b in 0..10u32 {
            s.read_block(r, ForkNumber::Main, b, &mut buf).unwrap();
            assert_eq!(buf[0], b as u8 + 1, "block {b}");
        }
        // Exactly a full segment: nblocks must look at the (missing) next one.
        s.truncate(r, ForkNumber::Main, 8).unwrap();
        assert_eq!(s.nblocks(r, ForkNumber::Main).unwrap(), 8);
        assert!(!dir.path().join("base/5/20.2").exists());
        s.truncate(r, ForkNumber::Main, 5).unwrap();
        assert_eq!(s.nblocks(r, ForkNumber::Main).unwrap(), 5);
        s.read_block(r, ForkNumber::Main, 4, &mut buf).unwrap();
        assert_eq!(buf[0], 5);
        // Writing far past the end (redo) fills the missing segments.
        s.write_block(r, ForkNumber::Main, 13, &page(99)).unwrap();
        assert_eq!(s.nblocks(r, ForkNumber::Main).unwrap(), 14);
        s.unlink(r, None).unwrap();
        assert!(!s.exists(r, ForkNumber::Main));
        assert!(!dir.path().join("base/5/20.1").exists());
    }

    #[test]
    fn smgr_real_segment_size_block_131072() {
        let dir = tempfile::tempdir().unwrap();
        let s = Smgr::new(dir.path(), false).unwrap();
        let r = rel(30);
        s.create(r, ForkNumber::Main).unwrap();
        // Sparse: writing block 131072 makes segment 0 a full (sparse) 1 GB file.
        s.write_block(r, ForkNumber::Main, RELSEG_SIZE, &page(3)).unwrap();
        assert_eq!(s.nblocks(r, ForkNumber::Main).unwrap(), RELSEG_SIZE + 1);
        assert_eq!(std::fs::metadata(dir.path().join("base/5/30.1")).unwrap().len(), BLCKSZ as u64);
        let mut buf = page(0);
        s.read_block(r, ForkNumber::Main, RELSEG_SIZE, &mut buf).unwrap();
        assert_eq!(buf, page(3));
        s.read_block(r, ForkNumber::Main, RELSEG_SIZE - 1, &mut buf).unwrap();
        assert_eq!(buf, page(0));
    }

    #[test]
    fn smgr_sync_all_syncs_exactly_what_was_written() {
        let dir = tempfile::tempdir().unwrap();
        let s = Smgr::with_segment_blocks(dir.path(), true, 4).unwrap();
        let (a, b) = (rel(1), rel(2));
        s.create(a, ForkNumber::Main).unwrap();
        s.create(b, ForkNumber::Main).unwrap();
        s.zero_extend(a, ForkNumber::Main, 0, 6).unwrap();
        assert_eq!(s.pending_sync_count(), 3, "a.0, a.1 and b.0");
        s.sync_rel(a, ForkNumber::Main).unwrap();
        assert_eq!(s.pending_sync_count(), 1);
        s.sync_all().unwrap();
        assert_eq!(s.pending_sync_count(), 0);
        s.write_block(a, ForkNumber::Main, 5, &page(1)).unwrap();
        assert_eq!(s.pending_sync_count(), 1);
        s.unlink(a, None).unwrap();
        assert_eq!(s.pending_sync_count(), 0, "unlinked files need no sync");
        s.sync_all().unwrap();
    }

    #[test]
    fn smgr_concurrent_readers_and_writers() {
        let dir = tempfile::tempdir().unwrap();
        let s = Arc::new(Smgr::with_segment_blocks(dir.path(), false, 8).unwrap());
        let r = rel(40);
        s.create(r, ForkNumber::Main).unwrap();
        s.zero_extend(r, ForkNumber::Main, 0, 64).unwrap();
        let threads: Vec<_> = (0..4u8)
            .map(|t| {
                let s = s.clone();
                std::thread::spawn(move || {
                    let mut buf = page(0);
                    for i in 0..16u32 {
                        let b = i * 4 + t as u32;
                        s.write_block(r, ForkNumber::Main, b, &page(t + 1)).unwrap();
                        s.read_block(r, ForkNumber::Main, b, &mut buf).unwrap();
                        assert_eq!(buf[100], t + 1);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
}
