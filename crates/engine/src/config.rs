//! Engine settings, with PostgreSQL's names, defaults and units.
//!
//! The binary fills a [`Settings`] from `-c name=value` flags (and later from
//! `postgresql.conf` and SET); the engine reads it at startup. Sizes accept PostgreSQL's
//! memory units (`kB`, `MB`, `GB`, `TB`, or a bare number of the setting's base unit)
//! and times its time units (`us`, `ms`, `s`, `min`, `h`, `d`).

use crate::error::{Error, Result, SqlState};

/// Size of a page in bytes (PostgreSQL's BLCKSZ).
pub const BLCKSZ: usize = 8192;

/// Size of a WAL segment file in bytes (PostgreSQL's default wal_segment_size).
pub const WAL_SEGMENT_SIZE: u64 = 16 * 1024 * 1024;

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
    /// Maximum number of client backends.
    pub max_connections: usize,
    /// Whether data is fsynced at all (PostgreSQL's `fsync`). Off is unsafe.
    pub fsync: bool,
    /// Whether a commit waits for its WAL to be durable.
    pub synchronous_commit: bool,
    /// Whether the first change of a page after a checkpoint logs the whole page.
    pub full_page_writes: bool,
    /// WAL buffer size in bytes.
    pub wal_buffers: usize,
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
    /// Milliseconds a lock wait lasts before the deadlock check runs.
    pub deadlock_timeout_ms: u64,
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
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            shared_buffers: 16384,
            buffer_mapping_partitions: 128,
            lwlock_fair: true,
            max_connections: 100,
            fsync: true,
            synchronous_commit: true,
            full_page_writes: true,
            wal_buffers: 16 * 1024 * 1024,
            commit_delay_us: 0,
            commit_siblings: 5,
            checkpoint_timeout_s: 300,
            max_wal_size: 1024 * 1024 * 1024,
            bgwriter_delay_ms: 200,
            bgwriter_lru_maxpages: 100,
            max_locks_per_transaction: 64,
            deadlock_timeout_ms: 1000,
            lock_timeout_ms: 0,
            vacuum_freeze_min_age: 50_000_000,
            autovacuum: true,
            autovacuum_naptime_ms: 60_000,
            autovacuum_vacuum_threshold: 50,
            autovacuum_vacuum_scale_factor: 0.2,
            autovacuum_vacuum_insert_threshold: 1000,
            autovacuum_vacuum_insert_scale_factor: 0.2,
        }
    }
}

fn invalid(name: &str, value: &str) -> Error {
    Error::user(
        SqlState::INVALID_PARAMETER_VALUE,
        format!("invalid value for parameter \"{name}\": \"{value}\""),
    )
}

/// Parses a size; `base` is the setting's unit in bytes (8192 for shared_buffers).
/// Returns a count of base units.
pub fn parse_size(name: &str, value: &str, base: u64) -> Result<u64> {
    let v = value.trim();
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let n: u64 = num.parse().map_err(|_| invalid(name, value))?;
    let mult: u64 = match unit.trim() {
        "" => return Ok(n),
        "B" => 1,
        "kB" => 1024,
        "MB" => 1024 * 1024,
        "GB" => 1024 * 1024 * 1024,
        "TB" => 1024u64.pow(4),
        _ => return Err(invalid(name, value)),
    };
    Ok((n * mult) / base)
}

/// Parses a duration; `base_us` is the setting's unit in microseconds.
/// Returns a count of base units.
pub fn parse_duration(name: &str, value: &str, base_us: u64) -> Result<u64> {
    let v = value.trim();
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let n: u64 = num.parse().map_err(|_| invalid(name, value))?;
    let mult: u64 = match unit.trim() {
        "" => return Ok(n),
        "us" => 1,
        "ms" => 1_000,
        "s" => 1_000_000,
        "min" => 60_000_000,
        "h" => 3_600_000_000,
        "d" => 86_400_000_000,
        _ => return Err(invalid(name, value)),
    };
    Ok((n * mult) / base_us)
}

/// Parses a boolean the way PostgreSQL does (on/off, true/false, yes/no, 1/0).
pub fn parse_bool(name: &str, value: &str) -> Result<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" | "t" | "y" => Ok(true),
        "off" | "false" | "no" | "0" | "f" | "n" => Ok(false),
        _ => Err(Error::user(
            SqlState::INVALID_PARAMETER_VALUE,
            format!("parameter \"{name}\" requires a Boolean value"),
        )),
    }
}

/// A scale factor: a float from 0 to 100 (PostgreSQL's range for these settings).
fn parse_fraction(name: &str, value: &str) -> Result<f64> {
    match value.trim().parse::<f64>() {
        Ok(f) if (0.0..=100.0).contains(&f) => Ok(f),
        _ => Err(invalid(name, value)),
    }
}

impl Settings {
    /// Sets one setting by PostgreSQL name. Unknown names are an error (42704 in
    /// PostgreSQL: unrecognized configuration parameter).
    pub fn set(&mut self, name: &str, value: &str) -> Result<()> {
        let key = name.to_ascii_lowercase();
        match key.as_str() {
            "shared_buffers" => self.shared_buffers = parse_size(&key, value, 8192)? as usize,
            "buffer_mapping_partitions" => {
                let n = parse_size(&key, value, 1)? as usize;
                if !n.is_power_of_two() || n > 4096 {
                    return Err(invalid(&key, value));
                }
                self.buffer_mapping_partitions = n;
            }
            "lwlock_fair" => self.lwlock_fair = parse_bool(&key, value)?,
            "max_connections" => self.max_connections = parse_size(&key, value, 1)? as usize,
            "fsync" => self.fsync = parse_bool(&key, value)?,
            "synchronous_commit" => {
                self.synchronous_commit = match value.trim() {
                    "local" | "remote_write" | "remote_apply" => true,
                    other => parse_bool(&key, other)?,
                }
            }
            "full_page_writes" => self.full_page_writes = parse_bool(&key, value)?,
            "wal_buffers" => self.wal_buffers = parse_size(&key, value, 8192)? as usize * 8192,
            "commit_delay" => self.commit_delay_us = parse_duration(&key, value, 1)?,
            "commit_siblings" => self.commit_siblings = parse_size(&key, value, 1)? as usize,
            "checkpoint_timeout" => {
                self.checkpoint_timeout_s = parse_duration(&key, value, 1_000_000)?
            }
            "max_wal_size" => self.max_wal_size = parse_size(&key, value, 1024 * 1024)? * 1024 * 1024,
            "bgwriter_delay" => self.bgwriter_delay_ms = parse_duration(&key, value, 1_000)?,
            "bgwriter_lru_maxpages" => {
                self.bgwriter_lru_maxpages = parse_size(&key, value, 1)? as usize
            }
            "max_locks_per_transaction" => {
                self.max_locks_per_transaction = parse_size(&key, value, 1)? as usize
            }
            "deadlock_timeout" => self.deadlock_timeout_ms = parse_duration(&key, value, 1_000)?,
            "lock_timeout" => self.lock_timeout_ms = parse_duration(&key, value, 1_000)?,
            "vacuum_freeze_min_age" => {
                let n = parse_size(&key, value, 1)?;
                if n > 1_000_000_000 {
                    return Err(invalid(&key, value));
                }
                self.vacuum_freeze_min_age = n as u32;
            }
            "autovacuum" => self.autovacuum = parse_bool(&key, value)?,
            "autovacuum_naptime" => {
                // The unit is seconds, as in PostgreSQL; "100ms" etc. also work.
                let v = value.trim();
                let ms = if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
                    parse_duration(&key, v, 1)?.saturating_mul(1_000)
                } else {
                    parse_duration(&key, v, 1_000)?
                };
                if ms == 0 {
                    return Err(invalid(&key, value));
                }
                self.autovacuum_naptime_ms = ms;
            }
            "autovacuum_vacuum_threshold" => self.autovacuum_vacuum_threshold = parse_size(&key, value, 1)?,
            "autovacuum_vacuum_scale_factor" => self.autovacuum_vacuum_scale_factor = parse_fraction(&key, value)?,
            "autovacuum_vacuum_insert_threshold" => {
                self.autovacuum_vacuum_insert_threshold = parse_size(&key, value, 1)?
            }
            "autovacuum_vacuum_insert_scale_factor" => {
                self.autovacuum_vacuum_insert_scale_factor = parse_fraction(&key, value)?
            }
            _ => {
                return Err(Error::user(
                    SqlState(*b"42704"),
                    format!("unrecognized configuration parameter \"{name}\""),
                ))
            }
        }
        Ok(())
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
    }

    #[test]
    fn bad_values_are_user_errors() {
        let mut s = Settings::default();
        assert_eq!(s.set("shared_buffers", "lots").unwrap_err().sqlstate().as_str(), "22023");
        assert_eq!(s.set("no_such", "1").unwrap_err().sqlstate().as_str(), "42704");
        assert!(s.set("buffer_mapping_partitions", "100").is_err());
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
        s.set("autovacuum_naptime", "100ms").unwrap();
        assert_eq!(s.autovacuum_naptime_ms, 100);
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
