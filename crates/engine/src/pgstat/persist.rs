//! Cumulative statistics kept across a clean restart (PostgreSQL's
//! pg_stat/pgstat.stat): a clean shutdown writes the shared counters to
//! `pg_stat/pgstat.stat` after the backends have ended; the next start reads
//! them back when it needed no crash recovery, and removes the file either
//! way, so a crash (whose recovery starts from a file written at an earlier
//! shutdown, if any) resets them, as in PostgreSQL.
//!
//! What is kept: every relation's counters (pg_stat_all_tables /
//! _all_indexes / statio: `autovacuum::RelCounters`), every database's
//! (pg_stat_database), pg_stat_bgwriter's, and the pg_stat_statements
//! entries with their text. Not kept: pg_stat_wal (its counters are the WAL
//! writer's own atomics, restarted at zero) and the wait-sampling profile.
//!
//! Format (text, one record a line, fields separated by one space; floats as
//! the hex of their bits, so they come back exact):
//!
//! ```text
//! ferrogres-pgstat 1
//! rel <spc> <db> <relnumber> <RelCounters fields, in rel_fields' order>
//! db <oid> <DbCounters fields, in db_fields' order>
//! bgwriter <BgWriterStats fields>
//! stmt <userid> <dbid> <queryid> <toplevel 0|1> <Counters fields> <text, \ and newline escaped>
//! ```
//!
//! The file is written to a temporary name, synced and renamed; a file that
//! does not parse is ignored (statistics, not data) with a LOG line.

use crate::buffer::BgWriterStats;
use crate::engine::Engine;
use crate::heap::autovacuum::RelCounters;
use crate::pgstat::statements::{Counters, StatementKey};
use crate::pgstat::tabstat::DbCounters;
use crate::storage::RelFileLocator;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

/// The file, relative to the data directory (PostgreSQL's PGSTAT_STAT_PERMANENT_FILENAME).
pub const STAT_FILE: &str = "pg_stat/pgstat.stat";
const MAGIC: &str = "ferrogres-pgstat 1";

enum Field<'a> {
    U(&'a AtomicU64),
    I(&'a AtomicI64),
}

fn rel_fields(c: &RelCounters) -> [Field<'_>; 23] {
    use Field::*;
    [
        U(&c.inserted),
        U(&c.updated),
        U(&c.deleted),
        U(&c.dead_since_vacuum),
        U(&c.inserted_since_vacuum),
        U(&c.reltuples),
        U(&c.autovacuum_count),
        U(&c.vacuum_count),
        U(&c.numscans),
        U(&c.tuples_returned),
        U(&c.tuples_fetched),
        U(&c.hot_updated),
        I(&c.live),
        I(&c.dead),
        U(&c.changed_since_analyze),
        U(&c.blocks_fetched),
        U(&c.blocks_hit),
        I(&c.last_vacuum),
        I(&c.last_autovacuum),
        I(&c.last_analyze),
        I(&c.last_autoanalyze),
        U(&c.analyze_count),
        U(&c.autoanalyze_count),
    ]
}

fn db_fields(c: &DbCounters) -> [Field<'_>; 20] {
    use Field::*;
    [
        U(&c.xact_commit),
        U(&c.xact_rollback),
        U(&c.blks_read),
        U(&c.blks_hit),
        U(&c.tup_returned),
        U(&c.tup_fetched),
        U(&c.tup_inserted),
        U(&c.tup_updated),
        U(&c.tup_deleted),
        U(&c.deadlocks),
        U(&c.temp_files),
        U(&c.temp_bytes),
        U(&c.sessions),
        U(&c.session_time_us),
        U(&c.active_time_us),
        U(&c.idle_in_transaction_time_us),
        U(&c.sessions_abandoned),
        U(&c.sessions_fatal),
        U(&c.sessions_killed),
        I(&c.stats_reset),
    ]
}

fn bgwriter_fields(c: &BgWriterStats) -> [Field<'_>; 10] {
    use Field::*;
    [
        U(&c.checkpoints_timed),
        U(&c.checkpoints_req),
        U(&c.checkpoint_write_us),
        U(&c.checkpoint_sync_us),
        U(&c.buffers_checkpoint),
        U(&c.buffers_clean),
        U(&c.maxwritten_clean),
        U(&c.buffers_backend),
        U(&c.buffers_backend_fsync),
        I(&c.stats_reset),
    ]
}

fn put(out: &mut String, fields: &[Field<'_>]) {
    for f in fields {
        match f {
            Field::U(a) => out.push_str(&format!(" {}", a.load(Relaxed))),
            Field::I(a) => out.push_str(&format!(" {}", a.load(Relaxed))),
        }
    }
}

/// Stores `vals` into `fields` (added to what is there: the counters are
/// zero at start, and a backend may have flushed already).
fn get(fields: &[Field<'_>], vals: &[&str]) -> Option<()> {
    if vals.len() != fields.len() {
        return None;
    }
    let mut parsed = Vec::with_capacity(vals.len());
    for (f, v) in fields.iter().zip(vals) {
        parsed.push(match f {
            Field::U(_) => v.parse::<u64>().ok()? as i128,
            Field::I(_) => v.parse::<i64>().ok()? as i128,
        });
    }
    for (f, v) in fields.iter().zip(parsed) {
        match f {
            Field::U(a) => {
                a.fetch_add(v as u64, Relaxed);
            }
            Field::I(a) => {
                a.fetch_add(v as i64, Relaxed);
            }
        }
    }
    Some(())
}

fn counters_out(c: &Counters) -> String {
    let f = |x: f64| format!("{:x}", x.to_bits());
    format!(
        "{} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {}",
        c.calls,
        f(c.total_exec_time),
        f(c.min_exec_time),
        f(c.max_exec_time),
        f(c.mean_exec_time),
        f(c.sum_var_exec_time),
        c.rows,
        c.shared_blks_hit,
        c.shared_blks_read,
        c.shared_blks_dirtied,
        c.shared_blks_written,
        c.temp_blks_read,
        c.temp_blks_written,
        c.wal_records,
        c.wal_fpi,
        c.wal_bytes,
        f(c.usage),
    )
}

fn counters_in(v: &[&str]) -> Option<Counters> {
    let [calls, tot, min, max, mean, var, rows, hit, read, dirt, wr, tr, tw, wrec, wfpi, wbytes, usage] = v else { return None };
    let u = |s: &str| s.parse::<u64>().ok();
    let f = |s: &str| u64::from_str_radix(s, 16).ok().map(f64::from_bits);
    Some(Counters {
        calls: u(calls)?,
        total_exec_time: f(tot)?,
        min_exec_time: f(min)?,
        max_exec_time: f(max)?,
        mean_exec_time: f(mean)?,
        sum_var_exec_time: f(var)?,
        rows: u(rows)?,
        shared_blks_hit: u(hit)?,
        shared_blks_read: u(read)?,
        shared_blks_dirtied: u(dirt)?,
        shared_blks_written: u(wr)?,
        temp_blks_read: u(tr)?,
        temp_blks_written: u(tw)?,
        wal_records: u(wrec)?,
        wal_fpi: u(wfpi)?,
        wal_bytes: u(wbytes)?,
        usage: f(usage)?,
    })
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('\n', "\\n").replace('\r', "\\r")
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.next() {
                Some('n') => out.push('\n'),
                Some('r') => out.push('\r'),
                Some(o) => out.push(o),
                None => {}
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn path(engine: &Engine) -> PathBuf {
    engine.datadir().join(STAT_FILE)
}

/// Writes the shared counters (clean shutdown, after the backends ended).
/// Line by line to a buffered file: nothing holds all of it in memory but
/// the statement table's snapshot, which the view takes too (bounded by
/// pg_stat_statements.max).
pub fn save(engine: &Engine) -> std::io::Result<()> {
    let final_path = path(engine);
    let dir = final_path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join("pgstat.tmp");
    let mut w = std::io::BufWriter::new(std::fs::File::create(&tmp)?);
    writeln!(w, "{MAGIC}")?;
    let tables = &engine.pgstat_tables;
    for (r, c) in tables.all_rels() {
        let mut line = format!("rel {} {} {}", r.spc_oid, r.db_oid, r.rel_number);
        put(&mut line, &rel_fields(&c));
        writeln!(w, "{line}")?;
    }
    for (db, c) in tables.all_dbs() {
        let mut line = format!("db {db}");
        put(&mut line, &db_fields(&c));
        writeln!(w, "{line}")?;
    }
    let mut line = "bgwriter".to_string();
    put(&mut line, &bgwriter_fields(&engine.buffers.bgstats));
    writeln!(w, "{line}")?;
    for (e, c) in engine.statements.snapshot() {
        let k = e.key;
        writeln!(w, "stmt {} {} {} {} {} {}", k.userid, k.dbid, k.queryid, k.toplevel as u8, counters_out(&c), escape(&e.query))?;
    }
    let f = w.into_inner().map_err(|e| e.into_error())?;
    f.sync_all()?;
    std::fs::rename(&tmp, &final_path)?;
    Ok(())
}

/// At start: reads the file back if `clean` (no crash recovery was needed),
/// then removes it. Returns how many records were restored.
pub fn load(engine: &Engine, clean: bool) -> usize {
    let p = path(engine);
    let text = if clean { std::fs::read_to_string(&p).ok() } else { None };
    let _ = std::fs::remove_file(&p);
    let Some(text) = text else { return 0 };
    let mut lines = text.lines();
    if lines.next() != Some(MAGIC) {
        eprintln!("LOG:  statistics file \"{STAT_FILE}\" is not ferrogres' format: ignored");
        return 0;
    }
    let mut n = 0;
    for line in lines {
        let ok = (|| -> Option<()> {
            let (kind, rest) = line.split_once(' ')?;
            match kind {
                "rel" => {
                    let v: Vec<&str> = rest.split(' ').collect();
                    let (spc, db, rel) = (v.first()?.parse().ok()?, v.get(1)?.parse().ok()?, v.get(2)?.parse().ok()?);
                    let c: Arc<RelCounters> = engine.pgstat_tables.rel(RelFileLocator { spc_oid: spc, db_oid: db, rel_number: rel });
                    get(&rel_fields(&c), &v[3..])
                }
                "db" => {
                    let v: Vec<&str> = rest.split(' ').collect();
                    let c = engine.pgstat_tables.db(v.first()?.parse().ok()?);
                    // stats_reset is a time, not a count: set, not added.
                    c.stats_reset.store(0, Relaxed);
                    get(&db_fields(&c), &v[1..])
                }
                "bgwriter" => {
                    let s = &engine.buffers.bgstats;
                    s.stats_reset.store(0, Relaxed);
                    get(&bgwriter_fields(s), &rest.split(' ').collect::<Vec<_>>())
                }
                "stmt" => {
                    let mut parts = rest.splitn(22, ' ');
                    let mut next = || parts.next();
                    let key = StatementKey {
                        userid: next()?.parse().ok()?,
                        dbid: next()?.parse().ok()?,
                        queryid: next()?.parse().ok()?,
                        toplevel: next()? == "1",
                    };
                    let vals: Vec<&str> = (0..17).map(|_| next()).collect::<Option<_>>()?;
                    let c = counters_in(&vals)?;
                    let text = unescape(next().unwrap_or(""));
                    engine.statements.restore(key, Arc::from(text), c);
                    Some(())
                }
                _ => None,
            }
        })();
        match ok {
            Some(()) => n += 1,
            None => eprintln!("LOG:  statistics file \"{STAT_FILE}\": a corrupt line ignored"),
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_counters_round_trip() {
        for s in ["select $1", "a\\b\nc\r", ""] {
            assert_eq!(unescape(&escape(s)), s);
        }
        let c = Counters { calls: 3, total_exec_time: 1.25, min_exec_time: 0.1, sum_var_exec_time: 1e-9, wal_bytes: 77, usage: 2.97, ..Default::default() };
        let out = counters_out(&c);
        let back = counters_in(&out.split(' ').collect::<Vec<_>>()).unwrap();
        assert_eq!(format!("{back:?}"), format!("{c:?}"));
    }
}
