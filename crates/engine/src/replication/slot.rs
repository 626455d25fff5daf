//! Physical replication slots (PostgreSQL's `replication/slot.c`), persisted under
//! `pg_replslot/NAME/state`. See README.md for the on-disk protocol.

use crate::error::{Error, Result, SqlState};
use crate::storage::Lsn;
use crate::wal::Wal;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// Directory of the slots, relative to the data directory.
pub const SLOT_DIR: &str = "pg_replslot";
/// Magic number of a slot state file ("FRS1": ferrogres replication slot, format 1).
const STATE_MAGIC: u32 = 0x4652_5331;
/// Size of a state file: magic u32, crc32c u32 (of the bytes after it), restart_lsn
/// u64, name length u32, name bytes (<= 63), zero padding to 88 bytes.
const STATE_SIZE: usize = 88;
/// PostgreSQL's NAMEDATALEN - 1.
const MAX_NAME_LEN: usize = 63;

/// One slot as the views and commands see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotInfo {
    pub name: String,
    /// The oldest WAL the slot's consumer may still need (0/0: none reserved yet).
    pub restart_lsn: Lsn,
    /// The walsender streaming from it (pg_replication_slots.active_pid).
    pub active_pid: Option<i32>,
}

/// The slots of one data directory.
///
/// Invariant: `wal.keep_floor` = min(restart_lsn of the slots with one) or 0, after
/// every change made under `slots` (`publish_floor`), and a restart_lsn only ever
/// points at WAL that existed when it was set: creation reserves under the WAL's
/// checkpoint lock (`Wal::reserve_wal`), and advancing moves it forward only.
pub struct SlotManager {
    dir: PathBuf,
    max_slots: usize,
    fsync: bool,
    wal: Arc<Wal>,
    /// The slots, in creation order. Protected by this mutex (PostgreSQL's
    /// ReplicationSlotControlLock + each slot's spinlock in one).
    slots: Mutex<Vec<SlotInfo>>,
    /// Slots whose restart_lsn advanced since they were last written (written at
    /// the next checkpoint, as PostgreSQL does for physical slots: losing an advance
    /// in a crash only keeps more WAL).
    dirty: Mutex<Vec<String>>,
}

fn io(p: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |e| Error::io(p.display(), e)
}

/// PostgreSQL's ReplicationSlotValidateName: 42602 / 42622 with its texts.
pub fn validate_name(name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::user(SqlState(*b"42602"), format!("replication slot name \"{name}\" is too short")));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(Error::user(SqlState(*b"42622"), format!("replication slot name \"{name}\" is too long")));
    }
    if !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') {
        return Err(Error::user(SqlState(*b"42602"), format!("replication slot name \"{name}\" contains invalid character"))
            .with_hint("Replication slot names may only contain lower case letters, numbers, and the underscore character."));
    }
    Ok(())
}

fn encode_state(name: &str, restart_lsn: Lsn) -> [u8; STATE_SIZE] {
    let mut b = [0u8; STATE_SIZE];
    b[0..4].copy_from_slice(&STATE_MAGIC.to_le_bytes());
    b[8..16].copy_from_slice(&restart_lsn.0.to_le_bytes());
    b[16..20].copy_from_slice(&(name.len() as u32).to_le_bytes());
    b[20..20 + name.len()].copy_from_slice(name.as_bytes());
    let crc = crc32c::crc32c(&b[8..]);
    b[4..8].copy_from_slice(&crc.to_le_bytes());
    b
}

fn decode_state(b: &[u8], path: &Path) -> Result<(String, Lsn)> {
    let bad = |what: &str| Error::corrupt(format!("replication slot file \"{}\" {what}", path.display()));
    if b.len() != STATE_SIZE {
        return Err(bad(&format!("has wrong size {}", b.len())));
    }
    if u32::from_le_bytes(b[0..4].try_into().unwrap()) != STATE_MAGIC {
        return Err(bad("has wrong magic number"));
    }
    if u32::from_le_bytes(b[4..8].try_into().unwrap()) != crc32c::crc32c(&b[8..]) {
        return Err(bad("has a checksum mismatch"));
    }
    let lsn = Lsn(u64::from_le_bytes(b[8..16].try_into().unwrap()));
    let len = u32::from_le_bytes(b[16..20].try_into().unwrap()) as usize;
    if len > MAX_NAME_LEN {
        return Err(bad("has a bad name length"));
    }
    let name = std::str::from_utf8(&b[20..20 + len]).map_err(|_| bad("has a bad name"))?.to_string();
    Ok((name, lsn))
}

impl SlotManager {
    /// Loads the slots of `datadir` (PostgreSQL's StartupReplicationSlots): a
    /// `NAME.tmp` directory is a creation or drop cut short by a crash and is
    /// removed; a slot whose state file is damaged is corruption (the server does
    /// not start, as PostgreSQL's PANIC).
    pub fn open(datadir: &Path, max_slots: usize, fsync: bool, wal: Arc<Wal>) -> Result<SlotManager> {
        let dir = datadir.join(SLOT_DIR);
        fs::create_dir_all(&dir).map_err(io(&dir))?;
        let mut slots = Vec::new();
        let mut removed = false;
        let mut entries: Vec<_> = fs::read_dir(&dir).map_err(io(&dir))?.collect::<std::io::Result<_>>().map_err(io(&dir))?;
        entries.sort_by_key(|e| e.file_name());
        for ent in entries {
            let path = ent.path();
            let Some(name) = ent.file_name().to_str().map(str::to_string) else { continue };
            if !path.is_dir() {
                continue;
            }
            if name.ends_with(".tmp") {
                fs::remove_dir_all(&path).map_err(io(&path))?;
                removed = true;
                continue;
            }
            let state = path.join("state");
            let b = fs::read(&state).map_err(io(&state))?;
            let (sname, restart_lsn) = decode_state(&b, &state)?;
            if sname != name {
                return Err(Error::corrupt(format!("replication slot file \"{}\" names slot \"{sname}\"", state.display())));
            }
            slots.push(SlotInfo { name, restart_lsn, active_pid: None });
        }
        if removed && fsync {
            crate::wal::control::fsync_dir(&dir)?;
        }
        if slots.len() > max_slots {
            return Err(Error::user(
                SqlState::CONFIGURATION_LIMIT_EXCEEDED,
                "too many replication slots active before shutdown",
            )
            .with_hint("Increase max_replication_slots and try again."));
        }
        let m = SlotManager { dir, max_slots, fsync, wal, slots: Mutex::new(slots), dirty: Mutex::new(Vec::new()) };
        m.publish_floor(&m.lock());
        Ok(m)
    }

    fn lock(&self) -> MutexGuard<'_, Vec<SlotInfo>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Stores min(restart_lsn) as the WAL's keep floor. Called with `slots` held.
    fn publish_floor(&self, slots: &[SlotInfo]) {
        let min = slots.iter().map(|s| s.restart_lsn.0).filter(|&l| l > 0).min().unwrap_or(0);
        self.wal.set_keep_floor(Lsn(min));
    }

    /// Writes `NAME.tmp/state` ... or, for an existing slot, `NAME/state.tmp` then
    /// renames it over `NAME/state`; fsyncs file and directory.
    fn write_state(&self, slot_dir: &Path, name: &str, restart_lsn: Lsn) -> Result<()> {
        let tmp = slot_dir.join("state.tmp");
        let dst = slot_dir.join("state");
        let mut f = fs::File::create(&tmp).map_err(io(&tmp))?;
        f.write_all(&encode_state(name, restart_lsn)).map_err(io(&tmp))?;
        if self.fsync {
            f.sync_all().map_err(io(&tmp))?;
        }
        drop(f);
        fs::rename(&tmp, &dst).map_err(io(&dst))?;
        if self.fsync {
            crate::wal::control::fsync_dir(slot_dir)?;
        }
        Ok(())
    }

    /// CREATE_REPLICATION_SLOT name PHYSICAL [RESERVE_WAL]: the slot is on disk
    /// (crash-safe) before this returns. With `reserve_wal` its restart_lsn is the
    /// last checkpoint's redo pointer, as in PostgreSQL 15.
    pub fn create(&self, name: &str, reserve_wal: bool) -> Result<SlotInfo> {
        validate_name(name)?;
        let mut slots = self.lock();
        if slots.iter().any(|s| s.name == name) {
            return Err(Error::user(SqlState(*b"42710"), format!("replication slot \"{name}\" already exists")));
        }
        if slots.len() >= self.max_slots {
            return Err(Error::user(SqlState::CONFIGURATION_LIMIT_EXCEEDED, "all replication slots are in use")
                .with_hint("Free one or increase max_replication_slots."));
        }
        // The floor is lowered under the WAL's checkpoint lock, so the redo
        // pointer's segment cannot be removed between reading it and keeping it.
        let restart_lsn = if reserve_wal {
            self.wal.reserve_wal(|redo| {
                let floor = slots.iter().map(|s| s.restart_lsn.0).filter(|&l| l > 0).chain([redo.0]).min().unwrap_or(0);
                self.wal.set_keep_floor(Lsn(floor));
                redo
            })
        } else {
            Lsn(0)
        };
        // Crash safety: a crash before the rename leaves NAME.tmp, removed at the
        // next start; after it, the slot exists with its state.
        let tmp_dir = self.dir.join(format!("{name}.tmp"));
        let final_dir = self.dir.join(name);
        let made = (|| {
            if tmp_dir.exists() {
                fs::remove_dir_all(&tmp_dir).map_err(io(&tmp_dir))?;
            }
            fs::create_dir(&tmp_dir).map_err(io(&tmp_dir))?;
            self.write_state(&tmp_dir, name, restart_lsn)?;
            fs::rename(&tmp_dir, &final_dir).map_err(io(&final_dir))?;
            if self.fsync {
                crate::wal::control::fsync_dir(&self.dir)?;
            }
            Ok(())
        })();
        if let Err(e) = made {
            self.publish_floor(&slots);
            let _ = fs::remove_dir_all(&tmp_dir);
            return Err(e);
        }
        let info = SlotInfo { name: name.to_string(), restart_lsn, active_pid: None };
        slots.push(info.clone());
        self.publish_floor(&slots);
        Ok(info)
    }

    /// DROP_REPLICATION_SLOT name: 42704 if there is none, 55006 while a walsender
    /// streams from it.
    pub fn drop_slot(&self, name: &str) -> Result<()> {
        let mut slots = self.lock();
        let Some(i) = slots.iter().position(|s| s.name == name) else {
            return Err(not_found(name));
        };
        if let Some(pid) = slots[i].active_pid {
            return Err(active(name, pid));
        }
        // Renamed to NAME.tmp first: a crash in the middle of the removal leaves a
        // directory that the next start removes, never a half-removed slot.
        let dir = self.dir.join(name);
        let tmp = self.dir.join(format!("{name}.tmp"));
        fs::rename(&dir, &tmp).map_err(io(&dir))?;
        if self.fsync {
            crate::wal::control::fsync_dir(&self.dir)?;
        }
        slots.remove(i);
        self.publish_floor(&slots);
        drop(slots);
        self.dirty.lock().unwrap_or_else(|e| e.into_inner()).retain(|n| n != name);
        fs::remove_dir_all(&tmp).map_err(io(&tmp))?;
        if self.fsync {
            crate::wal::control::fsync_dir(&self.dir)?;
        }
        Ok(())
    }

    /// The slot `name`, if it exists.
    pub fn get(&self, name: &str) -> Option<SlotInfo> {
        self.lock().iter().find(|s| s.name == name).cloned()
    }

    /// Every slot, in creation order (pg_replication_slots).
    pub fn list(&self) -> Vec<SlotInfo> {
        self.lock().clone()
    }

    /// START_REPLICATION SLOT name: marks the slot active for `pid` (55006 if
    /// another walsender has it, 42704 if there is none).
    pub fn acquire(&self, name: &str, pid: i32) -> Result<SlotInfo> {
        let mut slots = self.lock();
        let s = slots.iter_mut().find(|s| s.name == name).ok_or_else(|| not_found(name))?;
        if let Some(other) = s.active_pid {
            return Err(active(name, other));
        }
        s.active_pid = Some(pid);
        Ok(s.clone())
    }

    /// The walsender stopped streaming from the slot.
    pub fn release(&self, name: &str, pid: i32) {
        let mut slots = self.lock();
        if let Some(s) = slots.iter_mut().find(|s| s.name == name && s.active_pid == Some(pid)) {
            s.active_pid = None;
        }
    }

    /// A standby's flush position: the slot's restart_lsn moves forward to `lsn`
    /// (never back), WAL before it may be removed at the next checkpoint, and the
    /// slot is written at that checkpoint.
    pub fn advance(&self, name: &str, lsn: Lsn) {
        let mut slots = self.lock();
        let Some(s) = slots.iter_mut().find(|s| s.name == name) else { return };
        if lsn <= s.restart_lsn {
            return;
        }
        s.restart_lsn = lsn;
        self.publish_floor(&slots);
        drop(slots);
        let mut d = self.dirty.lock().unwrap_or_else(|e| e.into_inner());
        if !d.iter().any(|n| n == name) {
            d.push(name.to_string());
        }
    }

    /// At a checkpoint (PostgreSQL's CheckPointReplicationSlots): writes the slots
    /// whose restart_lsn advanced since they were last written.
    pub fn checkpoint(&self) -> Result<()> {
        let names = std::mem::take(&mut *self.dirty.lock().unwrap_or_else(|e| e.into_inner()));
        for name in names {
            let Some(s) = self.get(&name) else { continue };
            self.write_state(&self.dir.join(&name), &name, s.restart_lsn)?;
        }
        Ok(())
    }
}

fn not_found(name: &str) -> Error {
    Error::user(SqlState(*b"42704"), format!("replication slot \"{name}\" does not exist"))
}

fn active(name: &str, pid: i32) -> Error {
    Error::user(SqlState(*b"55006"), format!("replication slot \"{name}\" is active for PID {pid}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_round_trips_and_detects_damage() {
        let b = encode_state("s_1", Lsn(0x1500718));
        let p = Path::new("x/state");
        assert_eq!(decode_state(&b, p).unwrap(), ("s_1".to_string(), Lsn(0x1500718)));
        let mut bad = b;
        bad[9] ^= 1;
        assert!(decode_state(&bad, p).is_err());
        assert!(decode_state(&b[..40], p).is_err());
    }

    fn wal(dir: &Path) -> Arc<Wal> {
        let o = crate::wal::WalOptions { fsync: false, ..Default::default() };
        Wal::init(dir, &o, crate::wal::CheckpointInfo { next_xid: 3, next_oid: 16384, ..Default::default() }).unwrap();
        Arc::new(Wal::open_with(dir, o).unwrap().0)
    }

    #[test]
    fn slots_persist_and_set_the_keep_floor() {
        let dir = tempfile::tempdir().unwrap();
        let w = wal(dir.path());
        let m = SlotManager::open(dir.path(), 2, false, w.clone()).unwrap();
        let a = m.create("a", true).unwrap();
        assert_eq!(a.restart_lsn, w.control_file().redo, "reserved at the last redo pointer");
        assert_eq!(m.create("b", false).unwrap().restart_lsn, Lsn(0));
        assert_eq!(m.create("c", false).unwrap_err().sqlstate().0, *b"53400");
        assert_eq!(m.create("a", false).unwrap_err().sqlstate().0, *b"42710");
        m.acquire("a", 7).unwrap();
        assert_eq!(m.drop_slot("a").unwrap_err().sqlstate().0, *b"55006");
        assert_eq!(m.acquire("a", 8).unwrap_err().sqlstate().0, *b"55006");
        m.advance("a", Lsn(a.restart_lsn.0 + 100));
        m.advance("a", Lsn(1)); // never back
        m.release("a", 7);
        m.checkpoint().unwrap();
        drop(m);
        // A drop cut short by a crash leaves NAME.tmp: removed at the next open.
        fs::create_dir(dir.path().join("pg_replslot/x.tmp")).unwrap();
        let m = SlotManager::open(dir.path(), 2, false, w.clone()).unwrap();
        let names: Vec<(String, Lsn)> = m.list().into_iter().map(|s| (s.name, s.restart_lsn)).collect();
        assert_eq!(names, vec![("a".to_string(), Lsn(a.restart_lsn.0 + 100)), ("b".to_string(), Lsn(0))]);
        assert!(!dir.path().join("pg_replslot/x.tmp").exists());
        assert_eq!(w.keep_floor.load(std::sync::atomic::Ordering::SeqCst), a.restart_lsn.0 + 100);
        m.drop_slot("a").unwrap();
        assert_eq!(w.keep_floor.load(std::sync::atomic::Ordering::SeqCst), 0);
        assert_eq!(m.drop_slot("a").unwrap_err().sqlstate().0, *b"42704");
        // A damaged state file stops the start (corruption).
        fs::write(dir.path().join("pg_replslot/b/state"), [0u8; 10]).unwrap();
        assert!(SlotManager::open(dir.path(), 2, false, w).is_err());
    }

    #[test]
    fn names_like_postgresql() {
        assert!(validate_name("abc_09").is_ok());
        assert_eq!(validate_name("a-b").unwrap_err().sqlstate().0, *b"42602");
        assert_eq!(validate_name("").unwrap_err().sqlstate().0, *b"42602");
        assert_eq!(validate_name(&"a".repeat(64)).unwrap_err().sqlstate().0, *b"42622");
    }
}
