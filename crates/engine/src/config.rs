//! Engine settings, with PostgreSQL's names, defaults and units.
//!
//! The binary fills a [`Settings`] from `-c name=value` flags (and later from
//! `postgresql.conf`); the engine reads it at startup. Every value is checked against
//! the table of known settings in [`guc`] (type, unit, range, PostgreSQL's error
//! texts); sizes accept PostgreSQL's memory units (`B`, `kB`, `MB`, `GB`, `TB`, or a
//! bare number of the setting's base unit) and times its time units (`us`, `ms`, `s`,
//! `min`, `h`, `d`).

use crate::error::{Error, Result, SqlState};

/// Size of a page in bytes (PostgreSQL's BLCKSZ).
pub const BLCKSZ: usize = 8192;

/// Size of a WAL segment file in bytes (PostgreSQL's default wal_segment_size).
pub const WAL_SEGMENT_SIZE: u64 = 16 * 1024 * 1024;

/// `pg_stat_statements.max`'s default, PostgreSQL's (the table is
/// `pgstat::statements`, which loom builds leave out).
pub const PG_STAT_STATEMENTS_MAX_DEFAULT: usize = 5000;

/// Engine settings. Field names are PostgreSQL's setting names.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Number of shared buffers (8 kB pages). PostgreSQL default 128MB = 16384.
    pub shared_buffers: usize,
    /// Number of buffer-mapping partitions, each under its own LWLock. PostgreSQL
    /// hard-codes 128 (NUM_BUFFER_PARTITIONS); seed 003 went to 512. Power of two.
    pub buffer_mapping_partitions: usize,
    /// LWLock fairness: `true` (ours, default) makes a new shared request queue
    /// behind a waiting exclusive request; `false` is PostgreSQL's behaviour.
    pub lwlock_fair: bool,
    /// Count every LWLock acquisition per tranche and mode
    /// (ferrogres_stat_lwlocks.acquired_*; like PostgreSQL's compile-time
    /// LWLOCK_STATS). Off by default: it costs about 1 % of a select-only
    /// transaction's instructions. Blocked acquisitions are always counted.
    pub lwlock_stats: bool,
    /// Maximum number of client backends.
    pub max_connections: usize,
    /// Whether data is fsynced at all (PostgreSQL's `fsync`). Off is unsafe.
    pub fsync: bool,
    /// Whether a commit waits for its WAL to be durable.
    pub synchronous_commit: bool,
    /// Whether the first change of a page after a checkpoint logs the whole page.
    pub full_page_writes: bool,
    /// WAL buffer size in bytes (see [`Settings::wal_buffer_bytes`]).
    pub wal_buffers: usize,
    /// `wal_buffers = -1`: sized from shared_buffers.
    pub wal_buffers_auto: bool,
    /// Microseconds a committer sleeps before flushing, to gather a group.
    pub commit_delay_us: u64,
    /// Minimum other active transactions for `commit_delay` to apply.
    pub commit_siblings: usize,
    /// Seconds between automatic checkpoints.
    pub checkpoint_timeout_s: u64,
    /// WAL volume in bytes that triggers a checkpoint.
    pub max_wal_size: u64,
    /// Milliseconds the background writer sleeps between rounds.
    pub bgwriter_delay_ms: u64,
    /// Maximum buffers the background writer writes per round.
    pub bgwriter_lru_maxpages: usize,
    /// Lock slots per transaction (heavyweight lock table sizing; PG 18 also sizes
    /// fast-path slots from it).
    pub max_locks_per_transaction: usize,
    /// Predicate-lock promotion thresholds (max_pred_locks_per_transaction,
    /// _per_relation, _per_page): `lmgr::predicate`.
    pub max_pred_locks_per_transaction: i64,
    pub max_pred_locks_per_relation: i64,
    pub max_pred_locks_per_page: i64,
    /// Milliseconds a lock wait lasts before the deadlock check runs.
    pub deadlock_timeout_ms: u64,
    /// log_lock_waits: log a lock wait that outlasts deadlock_timeout.
    pub log_lock_waits: bool,
    /// pg_wait_sampling.period: ms between two samples of the wait-event
    /// sampler (pgstat::sampler); 0 turns it off.
    pub wait_sampling_period_ms: u64,
    /// pg_stat_statements.max: entries of the statement statistics table
    /// (pgstat::statements), read at start.
    pub pg_stat_statements_max: usize,
    /// Milliseconds a lock wait may last before failing with 55P03; 0 = forever.
    pub lock_timeout_ms: u64,
    /// Age (in transactions) an xmin must reach before VACUUM freezes it.
    pub vacuum_freeze_min_age: u32,
    /// Whether the autovacuum launcher runs.
    pub autovacuum: bool,
    /// Milliseconds between autovacuum rounds (PostgreSQL: `autovacuum_naptime`, 1min).
    pub autovacuum_naptime_ms: u64,
    /// Dead tuples needed before a relation is vacuumed, plus the scale factor part.
    pub autovacuum_vacuum_threshold: u64,
    /// Fraction of reltuples added to `autovacuum_vacuum_threshold`.
    pub autovacuum_vacuum_scale_factor: f64,
    /// Inserted tuples (since the last vacuum) that trigger a vacuum (PG 13+).
    pub autovacuum_vacuum_insert_threshold: u64,
    /// Fraction of reltuples added to `autovacuum_vacuum_insert_threshold`.
    pub autovacuum_vacuum_insert_scale_factor: f64,
    /// Most replication slots (pg_replslot) the server keeps.
    pub max_replication_slots: usize,
    /// Most concurrent walsender connections (replication=true/database).
    pub max_wal_senders: usize,
    /// Milliseconds a walsender waits for its client's reply before ending the
    /// connection; 0 = never.
    pub wal_sender_timeout_ms: u64,
    /// wal_keep_size in bytes: WAL kept before the insert position at
    /// checkpoints, slot or not (PostgreSQL 13+); 0 = none.
    pub wal_keep_size: u64,
    /// archive_mode on or always (crate::replication::archive: segments are
    /// marked .ready and archived).
    pub archive_mode: bool,
    /// archive_command at start (reloads reach the archiver through
    /// `Archiver::set_command`).
    pub archive_command: String,
    /// archive_timeout in seconds; 0 = off.
    pub archive_timeout_s: u64,
    /// archive_library: must stay empty (archive modules are not supported).
    pub archive_library: String,
    /// restore_command for archive recovery (`recovery.signal`).
    pub restore_command: String,
    /// The recovery_target* settings as given (checked by
    /// `replication::archive::RecoveryTarget::from_settings`).
    pub recovery_target: String,
    pub recovery_target_lsn: String,
    pub recovery_target_xid: String,
    pub recovery_target_name: String,
    pub recovery_target_time: String,
    /// recovery_target_time as microseconds since 2000-01-01 UTC, filled by the
    /// binary (the engine has no timestamp parser); None while not converted.
    pub recovery_target_time_us: Option<i64>,
    pub recovery_target_inclusive: bool,
    /// pause, promote or shutdown.
    pub recovery_target_action: String,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            shared_buffers: 16384,
            buffer_mapping_partitions: 128,
            lwlock_fair: true,
            lwlock_stats: false,
            max_connections: 100,
            fsync: true,
            synchronous_commit: true,
            full_page_writes: true,
            wal_buffers: 16 * 1024 * 1024,
            wal_buffers_auto: false,
            commit_delay_us: 0,
            commit_siblings: 5,
            checkpoint_timeout_s: 300,
            max_wal_size: 1024 * 1024 * 1024,
            bgwriter_delay_ms: 200,
            bgwriter_lru_maxpages: 100,
            max_locks_per_transaction: 64,
            max_pred_locks_per_transaction: 64,
            max_pred_locks_per_relation: -2,
            max_pred_locks_per_page: 2,
            deadlock_timeout_ms: 1000,
            log_lock_waits: false,
            wait_sampling_period_ms: 10,
            pg_stat_statements_max: PG_STAT_STATEMENTS_MAX_DEFAULT,
            lock_timeout_ms: 0,
            vacuum_freeze_min_age: 50_000_000,
            autovacuum: true,
            autovacuum_naptime_ms: 60_000,
            autovacuum_vacuum_threshold: 50,
            autovacuum_vacuum_scale_factor: 0.2,
            autovacuum_vacuum_insert_threshold: 1000,
            autovacuum_vacuum_insert_scale_factor: 0.2,
            max_replication_slots: 10,
            max_wal_senders: 10,
            wal_sender_timeout_ms: 60_000,
            wal_keep_size: 0,
            archive_mode: false,
            archive_command: String::new(),
            archive_timeout_s: 0,
            archive_library: String::new(),
            restore_command: String::new(),
            recovery_target: String::new(),
            recovery_target_lsn: String::new(),
            recovery_target_xid: String::new(),
            recovery_target_name: String::new(),
            recovery_target_time: String::new(),
            recovery_target_time_us: None,
            recovery_target_inclusive: true,
            recovery_target_action: "pause".into(),
        }
    }
}

pub mod conffile;
pub mod hba;
pub mod password;
pub mod guc;

impl Settings {
    /// Sets one setting by PostgreSQL name, checked against the table of known
    /// settings ([`guc`]): an unknown name is 42704 (`unrecognized configuration
    /// parameter`), a bad value 22023 with PostgreSQL's text. Known settings the
    /// engine does not own (the server's, the SQL layer's) are checked and otherwise
    /// left alone here; custom placeholders (`ext.name`) are accepted.
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        let Some(g) = guc::find(name) else {
            return if guc::is_custom(name) { Ok(()) } else { Err(guc::unrecognized(name)) };
        };
        let v = g.parse(name, value)?;
        let n = v.as_int();
        match g.name {
            "shared_buffers" => self.shared_buffers = n as usize,
            "buffer_mapping_partitions" => {
                if !(n as usize).is_power_of_two() {
                    return Err(Error::user(
                        SqlState::INVALID_PARAMETER_VALUE,
                        format!("invalid value for parameter \"{name}\": \"{value}\""),
                    )
                    .with_detail("buffer_mapping_partitions must be a power of two."));
                }
                self.buffer_mapping_partitions = n as usize;
            }
            "lwlock_fair" => self.lwlock_fair = v.as_bool(),
            "lwlock_stats" => self.lwlock_stats = v.as_bool(),
            "max_connections" => self.max_connections = n as usize,
            "fsync" => self.fsync = v.as_bool(),
            "synchronous_commit" => {
                self.synchronous_commit = !matches!(&v, guc::Value::Text(t) if matches!(t.as_str(), "off" | "false" | "no" | "0"))
            }
            "full_page_writes" => self.full_page_writes = v.as_bool(),
            "wal_buffers" => {
                // -1: chosen from shared_buffers (PostgreSQL's XLOGChooseNumBuffers);
                // fewer than 4 pages are raised to 4, as PostgreSQL does.
                self.wal_buffers_auto = n == -1;
                self.wal_buffers = (n.max(4) as usize) * BLCKSZ;
            }
            "commit_delay" => self.commit_delay_us = n as u64,
            "commit_siblings" => self.commit_siblings = n as usize,
            "checkpoint_timeout" => self.checkpoint_timeout_s = n as u64,
            "max_wal_size" => self.max_wal_size = n as u64 * 1024 * 1024,
            "bgwriter_delay" => self.bgwriter_delay_ms = n as u64,
            "bgwriter_lru_maxpages" => self.bgwriter_lru_maxpages = n as usize,
            "max_locks_per_transaction" => self.max_locks_per_transaction = n as usize,
            "max_pred_locks_per_transaction" => self.max_pred_locks_per_transaction = n,
            "max_pred_locks_per_relation" => self.max_pred_locks_per_relation = n,
            "max_pred_locks_per_page" => self.max_pred_locks_per_page = n,
            "deadlock_timeout" => self.deadlock_timeout_ms = n as u64,
            "log_lock_waits" => self.log_lock_waits = v.as_bool(),
            "pg_wait_sampling.period" => self.wait_sampling_period_ms = n as u64,
            "pg_stat_statements.max" => self.pg_stat_statements_max = n as usize,
            "lock_timeout" => self.lock_timeout_ms = n as u64,
            "vacuum_freeze_min_age" => self.vacuum_freeze_min_age = n as u32,
            "autovacuum" => self.autovacuum = v.as_bool(),
            "autovacuum_naptime" => self.autovacuum_naptime_ms = n as u64 * 1000,
            "autovacuum_vacuum_threshold" => self.autovacuum_vacuum_threshold = n as u64,
            "autovacuum_vacuum_scale_factor" => self.autovacuum_vacuum_scale_factor = v.as_real(),
            "autovacuum_vacuum_insert_threshold" => {
                // -1: use autovacuum_vacuum_threshold's rule off (PostgreSQL: disables
                // insert-triggered vacuums).
                self.autovacuum_vacuum_insert_threshold = if n < 0 { u64::MAX } else { n as u64 }
            }
            "autovacuum_vacuum_insert_scale_factor" => self.autovacuum_vacuum_insert_scale_factor = v.as_real(),
            "max_replication_slots" => self.max_replication_slots = n as usize,
            "max_wal_senders" => self.max_wal_senders = n as usize,
            "wal_sender_timeout" => self.wal_sender_timeout_ms = n as u64,
            "wal_keep_size" => self.wal_keep_size = n as u64 * 1024 * 1024,
            "archive_mode" => self.archive_mode = matches!(&v, guc::Value::Text(t) if matches!(t.as_str(), "on" | "always" | "true" | "yes" | "1")),
            "archive_timeout" => self.archive_timeout_s = n as u64,
            "recovery_target_inclusive" => self.recovery_target_inclusive = v.as_bool(),
            "archive_command" | "archive_library" | "restore_command" | "recovery_target" | "recovery_target_lsn"
            | "recovery_target_xid" | "recovery_target_name" | "recovery_target_time" | "recovery_target_action" => {
                let t = match v {
                    guc::Value::Text(t) => t,
                    _ => String::new(),
                };
                match g.name {
                    "archive_command" => self.archive_command = t,
                    "archive_library" => self.archive_library = t,
                    "restore_command" => self.restore_command = t,
                    "recovery_target" => self.recovery_target = t,
                    "recovery_target_lsn" => self.recovery_target_lsn = t,
                    "recovery_target_xid" => self.recovery_target_xid = t,
                    "recovery_target_name" => self.recovery_target_name = t,
                    "recovery_target_time" => self.recovery_target_time = t,
                    _ => self.recovery_target_action = t,
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// WAL buffer bytes: `wal_buffers`, or with `-1` 1/32 of shared_buffers between
    /// 64 kB and one WAL segment (PostgreSQL's XLOGChooseNumBuffers).
    pub fn wal_buffer_bytes(&self) -> usize {
        if self.wal_buffers_auto {
            (self.shared_buffers / 32).clamp(8, WAL_SEGMENT_SIZE as usize / BLCKSZ) * BLCKSZ
        } else {
            self.wal_buffers
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_follow_postgresql() {
        let mut s = Settings::default();
        s.set("shared_buffers", "128MB").unwrap();
        assert_eq!(s.shared_buffers, 16384);
        s.set("shared_buffers", "1000").unwrap();
        assert_eq!(s.shared_buffers, 1000);
        s.set("checkpoint_timeout", "5min").unwrap();
        assert_eq!(s.checkpoint_timeout_s, 300);
        s.set("deadlock_timeout", "1s").unwrap();
        assert_eq!(s.deadlock_timeout_ms, 1000);
        s.set("max_wal_size", "1GB").unwrap();
        assert_eq!(s.max_wal_size, 1 << 30);
        s.set("synchronous_commit", "off").unwrap();
        assert!(!s.synchronous_commit);
        s.set("synchronous_commit", "remote_apply").unwrap();
        assert!(s.synchronous_commit);
        s.set("wal_buffers", "-1").unwrap();
        assert_eq!(s.wal_buffer_bytes(), 1000 / 32 * BLCKSZ);
        s.set("wal_buffers", "1MB").unwrap();
        assert_eq!(s.wal_buffer_bytes(), 1 << 20);
    }

    #[test]
    fn bad_values_are_user_errors() {
        let mut s = Settings::default();
        assert_eq!(s.set("shared_buffers", "lots").unwrap_err().sqlstate().as_str(), "22023");
        assert_eq!(s.set("shared_buffers", "0").unwrap_err().sqlstate().as_str(), "22023");
        assert_eq!(s.set("no_such", "1").unwrap_err().sqlstate().as_str(), "42704");
        assert!(s.set("buffer_mapping_partitions", "100").is_err());
        assert!(s.set("max_connections", "100000000").is_err());
        // Known settings of other layers and custom placeholders are accepted.
        s.set("work_mem", "8MB").unwrap();
        s.set("myext.knob", "anything").unwrap();
        assert!(s.set("work_mem", "1").is_err(), "below work_mem's minimum of 64kB");
    }

    #[test]
    fn vacuum_settings_parse_like_postgresql() {
        let mut s = Settings::default();
        assert_eq!(s.autovacuum_naptime_ms, 60_000);
        assert_eq!((s.autovacuum_vacuum_threshold, s.autovacuum_vacuum_insert_threshold), (50, 1000));
        assert_eq!(s.vacuum_freeze_min_age, 50_000_000);
        s.set("autovacuum_naptime", "15").unwrap();
        assert_eq!(s.autovacuum_naptime_ms, 15_000, "seconds without a unit");
        s.set("autovacuum_naptime", "1min").unwrap();
        assert_eq!(s.autovacuum_naptime_ms, 60_000);
        assert!(s.set("autovacuum_naptime", "100ms").is_err(), "rounds to 0 s, below the minimum of 1 s");
        assert!(s.set("autovacuum_naptime", "0").is_err());
        s.set("autovacuum_vacuum_scale_factor", "0.05").unwrap();
        assert_eq!(s.autovacuum_vacuum_scale_factor, 0.05);
        assert!(s.set("autovacuum_vacuum_scale_factor", "-1").is_err());
        assert!(s.set("autovacuum_vacuum_insert_scale_factor", "x").is_err());
        s.set("autovacuum", "off").unwrap();
        assert!(!s.autovacuum);
        s.set("vacuum_freeze_min_age", "0").unwrap();
        assert_eq!(s.vacuum_freeze_min_age, 0);
        assert!(s.set("vacuum_freeze_min_age", "2000000000").is_err());
    }
}
