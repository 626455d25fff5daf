//! The control file, `global/pg_control`. Layout in docs/format/control-file.md.
//!
//! Written atomically: the new content goes to `global/pg_control.tmp`, which is
//! fsynced, renamed over `global/pg_control`, and the directory fsynced. A crash leaves
//! either the old or the new file, never a mix; the CRC catches anything else.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::record::{CheckpointInfo, CHECKPOINT_INFO_SIZE};
use crate::error::{Error, Result};
use crate::storage::Lsn;

pub const CONTROL_FILE_SIZE: usize = 512;
const CONTROL_MAGIC: u32 = 0x4647_4354; // "FGCT"
const CONTROL_VERSION: u32 = 1;
const CRC_OFFSET: usize = CONTROL_FILE_SIZE - 4;

/// The cluster state recorded in the control file (PostgreSQL's DBState).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum DbState {
    /// Cleanly shut down: the last checkpoint is a shutdown checkpoint, no redo.
    ShutDown = 1,
    /// Crash recovery is running (a crash now means: run it again).
    InCrashRecovery = 2,
    /// Running normally: after a crash, redo from the last checkpoint.
    InProduction = 3,
}

impl DbState {
    fn from_u32(v: u32) -> Option<DbState> {
        match v {
            1 => Some(DbState::ShutDown),
            2 => Some(DbState::InCrashRecovery),
            3 => Some(DbState::InProduction),
            _ => None,
        }
    }
}

/// Contents of the control file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControlFile {
    pub system_identifier: u64,
    pub state: DbState,
    pub timeline: u32,
    /// Seconds since the epoch at the last update.
    pub time: u64,
    /// Start of the last checkpoint record.
    pub checkpoint: Lsn,
    /// Its redo pointer.
    pub redo: Lsn,
    /// Seconds since the epoch when the last checkpoint was taken.
    pub checkpoint_time: u64,
    pub info: CheckpointInfo,
    pub wal_page_size: u32,
    pub wal_segment_size: u32,
    pub block_size: u32,
}

pub(crate) fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

impl ControlFile {
    pub fn path(datadir: &Path) -> PathBuf {
        datadir.join("global").join("pg_control")
    }

    pub fn encode(&self) -> [u8; CONTROL_FILE_SIZE] {
        let mut b = [0u8; CONTROL_FILE_SIZE];
        b[0..4].copy_from_slice(&CONTROL_MAGIC.to_le_bytes());
        b[4..8].copy_from_slice(&CONTROL_VERSION.to_le_bytes());
        b[8..16].copy_from_slice(&self.system_identifier.to_le_bytes());
        b[16..20].copy_from_slice(&(self.state as u32).to_le_bytes());
        b[20..24].copy_from_slice(&self.timeline.to_le_bytes());
        b[24..32].copy_from_slice(&self.time.to_le_bytes());
        b[32..40].copy_from_slice(&self.checkpoint.0.to_le_bytes());
        b[40..48].copy_from_slice(&self.redo.0.to_le_bytes());
        b[48..56].copy_from_slice(&self.checkpoint_time.to_le_bytes());
        let mut info = Vec::with_capacity(CHECKPOINT_INFO_SIZE);
        self.info.encode(&mut info);
        b[56..56 + CHECKPOINT_INFO_SIZE].copy_from_slice(&info);
        b[88..92].copy_from_slice(&self.wal_page_size.to_le_bytes());
        b[92..96].copy_from_slice(&self.wal_segment_size.to_le_bytes());
        b[96..100].copy_from_slice(&self.block_size.to_le_bytes());
        let crc = crc32c::crc32c(&b[..CRC_OFFSET]);
        b[CRC_OFFSET..].copy_from_slice(&crc.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Result<ControlFile> {
        let bad = |why: &str| Error::corrupt(format!("control file \"global/pg_control\": {why}"));
        if b.len() != CONTROL_FILE_SIZE {
            return Err(bad(&format!("size {} instead of {}", b.len(), CONTROL_FILE_SIZE)));
        }
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        if crc32c::crc32c(&b[..CRC_OFFSET]) != u32_at(CRC_OFFSET) {
            return Err(bad("incorrect checksum"));
        }
        if u32_at(0) != CONTROL_MAGIC || u32_at(4) != CONTROL_VERSION {
            return Err(bad("bad magic number or version"));
        }
        Ok(ControlFile {
            system_identifier: u64_at(8),
            state: DbState::from_u32(u32_at(16)).ok_or_else(|| bad("bad state"))?,
            timeline: u32_at(20),
            time: u64_at(24),
            checkpoint: Lsn(u64_at(32)),
            redo: Lsn(u64_at(40)),
            checkpoint_time: u64_at(48),
            info: CheckpointInfo::decode(&b[56..56 + CHECKPOINT_INFO_SIZE]),
            wal_page_size: u32_at(88),
            wal_segment_size: u32_at(92),
            block_size: u32_at(96),
        })
    }

    pub fn read(datadir: &Path) -> Result<ControlFile> {
        let p = Self::path(datadir);
        let b = fs::read(&p).map_err(|e| Error::io(p.display(), e))?;
        Self::decode(&b)
    }

    /// Writes the file atomically (temp file, fsync, rename, directory fsync).
    pub fn write(&self, datadir: &Path, fsync: bool) -> Result<()> {
        let dir = datadir.join("global");
        let tmp = dir.join("pg_control.tmp");
        let dst = Self::path(datadir);
        let io = |p: &Path| {
            let p = p.display().to_string();
            move |e| Error::io(p, e)
        };
        let mut f = fs::File::create(&tmp).map_err(io(&tmp))?;
        f.write_all(&self.encode()).map_err(io(&tmp))?;
        if fsync {
            f.sync_all().map_err(io(&tmp))?;
        }
        drop(f);
        fs::rename(&tmp, &dst).map_err(io(&dst))?;
        if fsync {
            fsync_dir(&dir)?;
        }
        Ok(())
    }
}

/// Makes a directory's entries (created, renamed, removed files) durable.
pub(crate) fn fsync_dir(dir: &Path) -> Result<()> {
    let f = fs::File::open(dir).map_err(|e| Error::io(dir.display(), e))?;
    f.sync_all().map_err(|e| Error::io(dir.display(), e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> ControlFile {
        ControlFile {
            system_identifier: 0x1234_5678_9ABC,
            state: DbState::InProduction,
            timeline: 1,
            time: 99,
            checkpoint: Lsn(0x3000),
            redo: Lsn(0x2018),
            checkpoint_time: 98,
            info: CheckpointInfo { next_xid: 1000, next_oid: 20000, ..Default::default() },
            wal_page_size: 8192,
            wal_segment_size: 16 << 20,
            block_size: 8192,
        }
    }

    #[test]
    fn round_trip_and_crc_detects_damage() {
        let c = sample();
        let b = c.encode();
        assert_eq!(ControlFile::decode(&b).unwrap(), c);
        for i in [0, 9, 17, 33, 60, 200, 507, 509] {
            let mut d = b;
            d[i] ^= 0x01;
            let e = ControlFile::decode(&d).unwrap_err();
            assert_eq!(e.sqlstate().as_str(), "XX001", "{e}");
        }
        assert!(ControlFile::decode(&b[..100]).is_err());
    }

    #[test]
    fn atomic_write_replaces_the_file() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("global")).unwrap();
        let mut c = sample();
        c.write(dir.path(), true).unwrap();
        c.checkpoint = Lsn(0x9000);
        c.write(dir.path(), true).unwrap();
        assert_eq!(ControlFile::read(dir.path()).unwrap(), c);
        assert!(!dir.path().join("global/pg_control.tmp").exists());
    }
}
