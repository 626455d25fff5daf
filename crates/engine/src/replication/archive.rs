//! Continuous archiving and archive recovery (PostgreSQL's `pgarch.c`,
//! `xlogarchive.c` and the recovery-target checks of `xlogrecovery.c`, written
//! from their documented behaviour; see the README's "Archiving").
//!
//! - The WAL writer marks every completed, durable segment with
//!   `pg_wal/archive_status/NAME.ready` (`mark_ready`).
//! - The archiver thread (`Archiver`) runs `archive_command` for each `.ready`
//!   file in name order and renames it to `.done` on exit status 0.
//! - A checkpoint removes a segment only if it is archived (`archived_or_mark`).
//! - Archive recovery (`recovery.signal`) fetches segments with
//!   `restore_command` (`restore_segment`) and stops at a `RecoveryTarget`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use crate::config::Settings;
use crate::error::{Error, Result, SqlState};
use crate::pgstat::wait_event::{report_wait_end, report_wait_start, WaitEvent};
use crate::storage::Lsn;
use crate::wal::{OnStart, Wal};

/// The folder of the archive status files, inside pg_wal.
pub const ARCHIVE_STATUS: &str = "archive_status";
/// The file whose presence asks for archive recovery at start.
pub const RECOVERY_SIGNAL: &str = "recovery.signal";
/// Where restore_command writes a segment before it is renamed into place.
pub const RECOVERY_XLOG: &str = "RECOVERYXLOG";
/// Tries of archive_command per pass before the archiver waits (PostgreSQL's
/// NUM_ARCHIVE_RETRIES).
const TRIES: u32 = 3;
/// How long the archiver waits after a pass that failed, unless woken by a new
/// segment or a reload (PostgreSQL's PGARCH_AUTOWAKE_INTERVAL).
const RETRY_WAIT: Duration = Duration::from_secs(60);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn status_file(wal_dir: &Path, name: &str, ext: &str) -> PathBuf {
    wal_dir.join(ARCHIVE_STATUS).join(format!("{name}.{ext}"))
}

/// Writes `archive_status/NAME.ready` (an empty file), creating the folder if
/// needed. Errors are logged and ignored: the checkpoint that would remove the
/// segment finds neither `.ready` nor `.done` and writes it then.
pub fn mark_ready(wal_dir: &Path, name: &str) {
    let dir = wal_dir.join(ARCHIVE_STATUS);
    let _ = fs::create_dir_all(&dir);
    // A segment restored from the archive (`.done`) and then completed with
    // new WAL after recovery must be archived again.
    let _ = fs::remove_file(status_file(wal_dir, name, "done"));
    if let Err(e) = fs::write(status_file(wal_dir, name, "ready"), b"") {
        eprintln!("WARNING:  could not create archive status file \"{name}.ready\": {e}");
    }
}

/// Writes `archive_status/NAME.done`: the segment needs no archiving (it was
/// restored from the archive).
pub fn mark_done(wal_dir: &Path, name: &str) {
    let _ = fs::create_dir_all(wal_dir.join(ARCHIVE_STATUS));
    let _ = fs::remove_file(status_file(wal_dir, name, "ready"));
    let _ = fs::write(status_file(wal_dir, name, "done"), b"");
}

/// Whether segment NAME may be removed: it has been archived (`.done`). If it
/// has neither status file (a crash came between its fsync and its `.ready`, or
/// archiving was just turned on), `.ready` is written now and it is kept
/// (PostgreSQL's XLogArchiveCheckDone).
pub fn archived_or_mark(wal_dir: &Path, name: &str) -> bool {
    if status_file(wal_dir, name, "done").exists() {
        return true;
    }
    if !status_file(wal_dir, name, "ready").exists() {
        mark_ready(wal_dir, name);
    }
    false
}

/// Removes the status files of a removed segment.
pub fn forget(wal_dir: &Path, name: &str) {
    let _ = fs::remove_file(status_file(wal_dir, name, "done"));
    let _ = fs::remove_file(status_file(wal_dir, name, "ready"));
}

/// `command` with %p, %f (and %r: PostgreSQL's last restart point, here always
/// the first segment name) and %% replaced.
fn substitute(command: &str, path: &str, file: &str) -> String {
    let mut out = String::with_capacity(command.len() + path.len());
    let mut it = command.chars().peekable();
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match it.peek() {
            Some('p') => {
                out.push_str(path);
                it.next();
            }
            Some('f') => {
                out.push_str(file);
                it.next();
            }
            Some('r') => {
                out.push_str("000000010000000000000001");
                it.next();
            }
            Some('%') => {
                out.push('%');
                it.next();
            }
            _ => out.push('%'),
        }
    }
    out
}

/// Runs `sh -c command` in the data directory; Ok(exit code) or the spawn error.
fn run_shell(datadir: &Path, command: &str) -> std::io::Result<std::process::ExitStatus> {
    Command::new("sh").arg("-c").arg(command).current_dir(datadir).status()
}

/// The archiver's wake-up: a pending flag, so that a notification that arrives
/// while the archiver is busy is not lost (the next wait returns at once).
#[derive(Default)]
pub struct Notify {
    /// (stop requested, notified since the last wait).
    state: Mutex<(bool, bool)>,
    cv: std::sync::Condvar,
}

impl Notify {
    /// A new segment is ready, or the settings changed.
    pub fn notify(&self) {
        lock(&self.state).1 = true;
        self.cv.notify_all();
    }

    fn request_stop(&self) {
        lock(&self.state).0 = true;
        self.cv.notify_all();
    }

    /// Waits until notified, asked to stop, or `timeout`; true if asked to stop.
    fn wait(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut g = lock(&self.state);
        while !g.0 && !g.1 {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            g = self.cv.wait_timeout(g, deadline - now).unwrap_or_else(|e| e.into_inner()).0;
        }
        g.1 = false;
        g.0
    }
}

/// pg_stat_archiver's values.
#[derive(Clone, Debug, Default)]
pub struct ArchiverStats {
    pub archived_count: i64,
    pub last_archived_wal: Option<String>,
    pub last_archived_time: Option<SystemTime>,
    pub failed_count: i64,
    pub last_failed_wal: Option<String>,
    pub last_failed_time: Option<SystemTime>,
    pub stats_reset: Option<SystemTime>,
}

/// The archiver: its settings, statistics and thread.
pub struct Archiver {
    datadir: PathBuf,
    wal_dir: PathBuf,
    /// archive_mode on/always at start (postmaster context).
    enabled: bool,
    /// archive_command; changed by a reload.
    command: Mutex<String>,
    /// archive_timeout in seconds (0 = off); changed by a reload.
    timeout_s: AtomicU64,
    stats: Mutex<ArchiverStats>,
    /// Set by the WAL writer for each new `.ready` and by a reload.
    latch: Arc<Notify>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl Archiver {
    pub fn new(datadir: &Path, settings: &Settings, latch: Arc<Notify>) -> Arc<Archiver> {
        Arc::new(Archiver {
            datadir: datadir.to_path_buf(),
            wal_dir: datadir.join("pg_wal"),
            enabled: settings.archive_mode,
            command: Mutex::new(settings.archive_command.clone()),
            timeout_s: AtomicU64::new(settings.archive_timeout_s),
            stats: Mutex::new(ArchiverStats { stats_reset: Some(SystemTime::now()), ..Default::default() }),
            latch,
            thread: Mutex::new(None),
        })
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// A reload: the new archive_command and archive_timeout; wakes the thread
    /// (a failing command may just have been fixed).
    pub fn reload(&self, command: &str, timeout_s: u64) {
        *lock(&self.command) = command.to_string();
        // Relaxed: a lone value; the latch's SeqCst swap publishes it to the thread.
        self.timeout_s.store(timeout_s, Ordering::Relaxed);
        self.latch.notify();
    }

    pub fn stats(&self) -> ArchiverStats {
        lock(&self.stats).clone()
    }

    /// pg_stat_reset_shared('archiver').
    pub fn reset_stats(&self) {
        *lock(&self.stats) = ArchiverStats { stats_reset: Some(SystemTime::now()), ..Default::default() };
    }

    /// Starts the thread if archive_mode is on.
    pub fn start(self: &Arc<Self>, wal: Arc<Wal>, on_start: OnStart) {
        if !self.enabled {
            return;
        }
        let me = self.clone();
        let h = std::thread::Builder::new()
            .name("archiver".into())
            .spawn(move || {
                on_start();
                me.main_loop(&wal);
            })
            .expect("spawn archiver");
        *lock(&self.thread) = Some(h);
    }

    /// Stops the thread (after the pass it is in).
    pub fn stop(&self) {
        self.latch.request_stop();
        if let Some(h) = lock(&self.thread).take() {
            let _ = h.join();
        }
    }

    fn main_loop(&self, wal: &Wal) {
        let mut seg_seen = wal.insert_position().0 / wal.segment_size();
        let mut seg_since = Instant::now();
        loop {
            // archive_timeout (PostgreSQL's checkpointer does this): a segment
            // that has had WAL for that long is switched so it gets archived.
            // Relaxed: see `reload`.
            let timeout = self.timeout_s.load(Ordering::Relaxed);
            let pos = wal.insert_position().0;
            if pos / wal.segment_size() != seg_seen {
                seg_seen = pos / wal.segment_size();
                seg_since = Instant::now();
            }
            if timeout > 0 && seg_since.elapsed() >= Duration::from_secs(timeout) {
                if let Err(e) = wal.switch_segment() {
                    eprintln!("WARNING:  archive_timeout: could not switch WAL segment: {e}");
                }
                seg_since = Instant::now();
            }
            let failed = !self.archive_pass();
            // After a failure: wait RETRY_WAIT unless a new segment or a reload
            // comes first. archive_timeout shortens the wait when it is on.
            let mut wait = RETRY_WAIT;
            if timeout > 0 && !failed {
                wait = Duration::from_secs(timeout).saturating_sub(seg_since.elapsed()).max(Duration::from_millis(100));
            }
            report_wait_start(WaitEvent::Activity("ArchiverMain"));
            let stop = self.latch.wait(wait);
            report_wait_end();
            if stop {
                // One last pass, as PostgreSQL's archiver does at shutdown.
                self.archive_pass();
                return;
            }
        }
    }

    /// Archives every `.ready` segment in order. False if one failed TRIES
    /// times (the later ones wait: segments are archived in order).
    fn archive_pass(&self) -> bool {
        let mut ready: Vec<String> = match fs::read_dir(self.wal_dir.join(ARCHIVE_STATUS)) {
            Ok(rd) => rd
                .flatten()
                .filter_map(|e| e.file_name().to_str().and_then(|n| n.strip_suffix(".ready")).map(str::to_string))
                .collect(),
            Err(_) => return true,
        };
        ready.sort();
        for name in ready {
            let command = lock(&self.command).clone();
            if command.is_empty() {
                eprintln!("WARNING:  archive_mode enabled, yet archiving is not configured");
                return false;
            }
            let mut ok = false;
            for attempt in 0..TRIES {
                if self.archive_one(&command, &name) {
                    ok = true;
                    break;
                }
                if attempt + 1 < TRIES {
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
            if !ok {
                eprintln!("WARNING:  archiving write-ahead log file \"{name}\" failed too many times, will try again later");
                return false;
            }
            let _ = fs::rename(status_file(&self.wal_dir, &name, "ready"), status_file(&self.wal_dir, &name, "done"));
            let mut st = lock(&self.stats);
            st.archived_count += 1;
            st.last_archived_wal = Some(name);
            st.last_archived_time = Some(SystemTime::now());
        }
        true
    }

    /// One run of archive_command for segment `name`: true on exit status 0.
    fn archive_one(&self, command: &str, name: &str) -> bool {
        let cmd = substitute(command, &format!("pg_wal/{name}"), name);
        let r = run_shell(&self.datadir, &cmd);
        let ok = matches!(&r, Ok(s) if s.success());
        if !ok {
            let why = match r {
                Ok(s) => match s.code() {
                    Some(c) => format!("archive command failed with exit code {c}"),
                    None => format!("archive command was terminated by signal: {s}"),
                },
                Err(e) => format!("archive command could not be run: {e}"),
            };
            eprintln!("WARNING:  {why}\nDETAIL:  The failed archive command was: {cmd}");
            let mut st = lock(&self.stats);
            st.failed_count += 1;
            st.last_failed_wal = Some(name.to_string());
            st.last_failed_time = Some(SystemTime::now());
        }
        ok
    }
}

/// pg_create_restore_point(name): an XLOG_RESTORE_POINT record (flushed) that
/// recovery_target_name can stop at. Returns its end LSN. PostgreSQL's
/// limit on the name is 64 bytes (MAXFNAMELEN).
pub fn create_restore_point(wal: &Wal, name: &str) -> Result<Lsn> {
    if name.len() >= 64 {
        return Err(Error::user(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("value too long for restore point (maximum {} characters)", 63),
        ));
    }
    let mut rb = crate::wal::RecordBuilder::new(crate::wal::RmgrId::Xlog, crate::wal::XLOG_RESTORE_POINT);
    rb.append_main_data(&crate::txn::xact::now_timestamp().to_le_bytes());
    rb.append_main_data(name.as_bytes());
    let end = wal.insert(&rb)?;
    wal.flush(end)?;
    eprintln!("LOG:  restore point \"{name}\" created at {end}");
    Ok(end)
}

/// Fetches segment `name` with `restore_command` into `pg_wal/RECOVERYXLOG`,
/// then renames it over `pg_wal/NAME` and marks it `.done` (it is in the
/// archive already). False if the command failed (the end of the archive, or
/// a segment it does not have).
pub fn restore_segment(datadir: &Path, command: &str, name: &str) -> bool {
    let wal_dir = datadir.join("pg_wal");
    let tmp = wal_dir.join(RECOVERY_XLOG);
    let _ = fs::remove_file(&tmp);
    let cmd = substitute(command, &format!("pg_wal/{RECOVERY_XLOG}"), name);
    let ok = matches!(run_shell(datadir, &cmd), Ok(s) if s.success());
    if !ok || !tmp.exists() {
        let _ = fs::remove_file(&tmp);
        return false;
    }
    if let Err(e) = fs::rename(&tmp, wal_dir.join(name)) {
        eprintln!("WARNING:  could not rename \"pg_wal/{RECOVERY_XLOG}\" to \"pg_wal/{name}\": {e}");
        return false;
    }
    mark_done(&wal_dir, name);
    eprintln!("LOG:  restored log file \"{name}\" from archive");
    true
}

/// Where archive recovery stops (PostgreSQL's recovery_target_*; at most one).
#[derive(Clone, Debug, PartialEq)]
pub enum TargetKind {
    Lsn(Lsn),
    Xid(u32),
    Name(String),
    /// Microseconds since 2000-01-01 UTC.
    Time(i64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetAction {
    Promote,
    Shutdown,
}

#[derive(Clone, Debug, PartialEq)]
pub struct RecoveryTarget {
    pub kind: TargetKind,
    pub inclusive: bool,
    pub action: TargetAction,
}

/// What a record means for the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Continue,
    /// Stop without replaying this record.
    Before,
    /// Replay this record, then stop.
    After,
}

fn invalid(name: &str, value: &str) -> Error {
    Error::user(SqlState::INVALID_PARAMETER_VALUE, format!("invalid value for parameter \"{name}\": \"{value}\""))
}

impl RecoveryTarget {
    /// The target the settings ask for, if any. More than one is PostgreSQL's
    /// `multiple recovery targets specified`; recovery_target_action = pause is
    /// refused (ferrogres has no hot standby to pause in).
    pub fn from_settings(s: &Settings) -> Result<Option<RecoveryTarget>> {
        let mut kinds = Vec::new();
        if !s.recovery_target.is_empty() {
            return Err(Error::user(
                SqlState::FEATURE_NOT_SUPPORTED,
                format!("recovery_target = '{}' is not supported", s.recovery_target),
            ));
        }
        if !s.recovery_target_lsn.is_empty() {
            let l = parse_lsn(&s.recovery_target_lsn).ok_or_else(|| invalid("recovery_target_lsn", &s.recovery_target_lsn))?;
            kinds.push(TargetKind::Lsn(l));
        }
        if !s.recovery_target_xid.is_empty() {
            let x: u64 =
                s.recovery_target_xid.trim().parse().map_err(|_| invalid("recovery_target_xid", &s.recovery_target_xid))?;
            kinds.push(TargetKind::Xid(x as u32));
        }
        if !s.recovery_target_name.is_empty() {
            kinds.push(TargetKind::Name(s.recovery_target_name.clone()));
        }
        if !s.recovery_target_time.is_empty() {
            let t = s.recovery_target_time_us.ok_or_else(|| invalid("recovery_target_time", &s.recovery_target_time))?;
            kinds.push(TargetKind::Time(t));
        }
        if kinds.len() > 1 {
            return Err(Error::user(SqlState::INVALID_PARAMETER_VALUE, "multiple recovery targets specified").with_detail(
                "At most one of \"recovery_target\", \"recovery_target_lsn\", \"recovery_target_name\", \"recovery_target_time\", \"recovery_target_xid\" may be set.",
            ));
        }
        let Some(kind) = kinds.pop() else { return Ok(None) };
        let action = match s.recovery_target_action.as_str() {
            "promote" => TargetAction::Promote,
            "shutdown" => TargetAction::Shutdown,
            _ => {
                return Err(Error::user(
                    SqlState::FEATURE_NOT_SUPPORTED,
                    "recovery_target_action = pause is not supported: set it to promote or shutdown",
                ))
            }
        };
        Ok(Some(RecoveryTarget { kind, inclusive: s.recovery_target_inclusive, action }))
    }

    /// Whether recovery stops at the record starting at `start`: `xact` is
    /// (xid, commit timestamp) of a commit or abort record, `restore_point` the
    /// name of a restore point record.
    pub fn check(&self, start: Lsn, xact: Option<(u32, i64)>, restore_point: Option<&str>) -> Stop {
        let (before_or_after, hit) = match &self.kind {
            TargetKind::Lsn(l) => (self.inclusive, start >= *l),
            TargetKind::Xid(x) => (self.inclusive, xact.is_some_and(|(xid, _)| xid == *x)),
            TargetKind::Time(t) => match xact {
                // Inclusive: a transaction at exactly the target time is replayed.
                Some((_, ts)) if self.inclusive => {
                    return if ts > *t { Stop::Before } else if ts == *t { Stop::After } else { Stop::Continue }
                }
                Some((_, ts)) => (false, ts >= *t),
                None => (false, false),
            },
            TargetKind::Name(n) => (true, restore_point == Some(n.as_str())),
        };
        match (hit, before_or_after) {
            (false, _) => Stop::Continue,
            (true, true) => Stop::After,
            (true, false) => Stop::Before,
        }
    }

    pub fn describe(&self) -> String {
        match &self.kind {
            TargetKind::Lsn(l) => format!("WAL location (LSN) \"{l}\""),
            TargetKind::Xid(x) => format!("transaction {x}"),
            TargetKind::Name(n) => format!("restore point \"{n}\""),
            TargetKind::Time(t) => format!("time {t} µs after 2000-01-01"),
        }
    }
}

/// "X/Y" in hexadecimal.
pub fn parse_lsn(s: &str) -> Option<Lsn> {
    let (hi, lo) = s.trim().split_once('/')?;
    let hi = u64::from_str_radix(hi, 16).ok()?;
    let lo = u64::from_str_radix(lo, 16).ok()?;
    (hi <= u32::MAX as u64 && lo <= u32::MAX as u64).then_some(Lsn((hi << 32) | lo))
}

/// Archive recovery's settings, read at start (`Wal::open`).
#[derive(Clone, Debug, Default)]
pub struct ArchiveRecovery {
    /// `recovery.signal` exists in the data directory.
    pub requested: bool,
    pub restore_command: String,
    pub target: Option<RecoveryTarget>,
}

impl ArchiveRecovery {
    pub fn from_settings(datadir: &Path, s: &Settings) -> Result<ArchiveRecovery> {
        let requested = datadir.join(RECOVERY_SIGNAL).exists();
        if !requested {
            return Ok(ArchiveRecovery::default());
        }
        if s.restore_command.is_empty() {
            return Err(Error::user(
                SqlState::INVALID_PARAMETER_VALUE,
                "must specify restore_command when standby mode is not enabled",
            ));
        }
        Ok(ArchiveRecovery { requested, restore_command: s.restore_command.clone(), target: RecoveryTarget::from_settings(s)? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitution_follows_postgresql() {
        assert_eq!(substitute("cp %p /a/%f", "pg_wal/X", "X"), "cp pg_wal/X /a/X");
        assert_eq!(substitute("echo 100%% %q %", "p", "f"), "echo 100% %q %");
    }

    #[test]
    fn lsn_targets_stop_before_or_after() {
        let t = |inclusive| RecoveryTarget { kind: TargetKind::Lsn(Lsn(0x100)), inclusive, action: TargetAction::Promote };
        assert_eq!(t(true).check(Lsn(0xF8), None, None), Stop::Continue);
        assert_eq!(t(true).check(Lsn(0x100), None, None), Stop::After);
        assert_eq!(t(false).check(Lsn(0x100), None, None), Stop::Before);
        let x = RecoveryTarget { kind: TargetKind::Time(50), inclusive: true, action: TargetAction::Promote };
        assert_eq!(x.check(Lsn(1), Some((5, 49)), None), Stop::Continue);
        assert_eq!(x.check(Lsn(1), Some((5, 50)), None), Stop::After);
        assert_eq!(x.check(Lsn(1), Some((5, 51)), None), Stop::Before);
        assert_eq!(parse_lsn("0/16B3748"), Some(Lsn(0x16B3748)));
        assert_eq!(parse_lsn("x"), None);
    }
}
