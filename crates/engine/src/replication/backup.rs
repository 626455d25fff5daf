//! Online backups (PostgreSQL's do_pg_backup_start / do_pg_backup_stop in
//! `access/transam/xlog.c`, `backup_label`): what BASE_BACKUP and
//! pg_backup_start/pg_backup_stop share. See README.md, "Online backups".

use crate::engine::Engine;
use crate::error::{Error, Result, SqlState};
use crate::storage::Lsn;
use crate::wal::layout::{segment_file_name, TIMELINE};
use crate::wal::{RecordBuilder, RmgrId, XLOG_BACKUP_END};
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

/// The label file's name in the data directory (and first member of a backup).
pub const BACKUP_LABEL: &str = "backup_label";
/// What a finished recovery renames the label to.
pub const BACKUP_LABEL_OLD: &str = "backup_label.old";
/// The tablespace map's name.
pub const TABLESPACE_MAP: &str = "tablespace_map";

/// The fields of a `backup_label` that recovery needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackupLabel {
    /// START WAL LOCATION: the backup checkpoint's redo pointer.
    pub start: Lsn,
    /// CHECKPOINT LOCATION: that checkpoint record's start.
    pub checkpoint: Lsn,
}

fn parse_lsn(s: &str) -> Option<Lsn> {
    let (hi, lo) = s.split_once('/')?;
    Some(Lsn((u64::from_str_radix(hi, 16).ok()? << 32) | u64::from_str_radix(lo, 16).ok()?))
}

impl BackupLabel {
    /// Reads `datadir/backup_label` if there is one. A label without its two
    /// locations is PostgreSQL's FATAL `invalid data in file "backup_label"`.
    pub fn read(datadir: &Path) -> Result<Option<BackupLabel>> {
        let path = datadir.join(BACKUP_LABEL);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(path.display(), e)),
        };
        BackupLabel::parse(&text).map(Some)
    }

    pub fn parse(text: &str) -> Result<BackupLabel> {
        let field = |name: &str| -> Option<Lsn> {
            let line = text.lines().find_map(|l| l.strip_prefix(name))?;
            parse_lsn(line.split_whitespace().next()?)
        };
        match (field("START WAL LOCATION: "), field("CHECKPOINT LOCATION: ")) {
            (Some(start), Some(checkpoint)) if start <= checkpoint => Ok(BackupLabel { start, checkpoint }),
            _ => Err(Error::User {
                code: SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE,
                message: format!("invalid data in file \"{BACKUP_LABEL}\""),
                detail: None,
                hint: None,
            }),
        }
    }
}

/// A running online backup. While it lives, full-page images are forced and
/// the WAL from `start` on is kept; dropping it (after `stop`, or when the
/// client went away) releases both.
pub struct Backup {
    engine: Arc<Engine>,
    /// The backup checkpoint's redo pointer (START WAL LOCATION).
    pub start: Lsn,
    /// The backup checkpoint record (CHECKPOINT LOCATION).
    pub checkpoint: Lsn,
    pub start_time: SystemTime,
    /// The `backup_label` contents.
    pub label_file: String,
    registered: bool,
}

impl Backup {
    /// Starts a backup (PostgreSQL's do_pg_backup_start), in this order:
    /// 1. full-page images are forced (every insertion slot held for an instant);
    /// 2. a checkpoint: its redo pointer is after step 1, so every page changed
    ///    after it logs an image on its first change, and every page changed
    ///    before it is on disk before the copy starts;
    /// 3. the last checkpoint is read and registered under the checkpoint lock,
    ///    so its WAL is kept from then on.
    ///
    /// `fast` is accepted for both of PostgreSQL's modes: ferrogres'
    /// checkpoint is always immediate. BACKUP METHOD is "streamed", as
    /// PostgreSQL 15 writes for every non-exclusive backup.
    pub fn start(engine: &Arc<Engine>, label: &str, _fast: bool) -> Result<Backup> {
        if label.len() > 1024 {
            return Err(Error::user(SqlState::INVALID_PARAMETER_VALUE, "backup label too long (max 1024 bytes)"));
        }
        engine.wal.force_page_writes_for_backup();
        let mut b = Backup {
            engine: engine.clone(),
            start: Lsn(0),
            checkpoint: Lsn(0),
            start_time: SystemTime::now(),
            label_file: String::new(),
            registered: false,
        };
        engine.checkpoint()?;
        let (checkpoint, start) = engine.wal.register_backup();
        b.registered = true;
        b.start = start;
        b.checkpoint = checkpoint;
        b.start_time = SystemTime::now();
        let seg = start.0 / engine.wal.segment_size();
        b.label_file = format!(
            "START WAL LOCATION: {start} (file {})\nCHECKPOINT LOCATION: {checkpoint}\nBACKUP METHOD: streamed\n\
             BACKUP FROM: primary\nSTART TIME: {}\nLABEL: {label}\nSTART TIMELINE: {TIMELINE}\n",
            segment_file_name(TIMELINE, seg, engine.wal.segment_size()),
            format_utc(b.start_time, "UTC"),
        );
        Ok(b)
    }

    /// Ends the backup (PostgreSQL's do_pg_backup_stop): writes and flushes an
    /// XLOG_BACKUP_END record naming the start; its end is the backup's end
    /// location, which recovery of the copy must reach. The WAL stays held
    /// until the `Backup` is dropped (BASE_BACKUP still sends it).
    pub fn stop(&self) -> Result<Lsn> {
        let mut rb = RecordBuilder::new(RmgrId::Xlog, XLOG_BACKUP_END);
        rb.append_main_data(&self.start.0.to_le_bytes());
        let end = self.engine.wal.insert(&rb)?;
        self.engine.wal.flush(end)?;
        Ok(end)
    }
}

impl Drop for Backup {
    fn drop(&mut self) {
        self.engine.wal.end_backup(self.registered.then_some(self.start));
    }
}

/// `t` as "YYYY-MM-DD HH:MM:SS" followed by `zone` (UTC).
pub fn format_utc(t: SystemTime, zone: &str) -> String {
    let secs = t.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} {zone}", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_round_trip_and_errors() {
        let text = "START WAL LOCATION: 0/2000028 (file 000000010000000000000002)\nCHECKPOINT LOCATION: 0/2000060\n\
                    BACKUP METHOD: streamed\nLABEL: x\n";
        assert_eq!(
            BackupLabel::parse(text).unwrap(),
            BackupLabel { start: Lsn(0x2000028), checkpoint: Lsn(0x2000060) }
        );
        assert!(BackupLabel::parse("LABEL: x\n").is_err());
    }

    #[test]
    fn utc_dates() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_795_831_926);
        assert_eq!(format_utc(t, "GMT"), "2026-11-28 02:12:06 GMT");
        assert_eq!(format_utc(SystemTime::UNIX_EPOCH, "UTC"), "1970-01-01 00:00:00 UTC");
    }
}
