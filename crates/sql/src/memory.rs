//! The per-statement memory limit: `statement_memory_limit`.
//!
//! PostgreSQL bounds a backend's memory per operation (`work_mem`, spilling to
//! disk beyond it) and per value (1 GB, [`ferrogres_datum::errors::MAX_ALLOC_SIZE`]).
//! ferrogres's executor still materializes sorts, joins and results in memory
//! (issue 19 replaces that by spilling under `work_mem`), so one statement could
//! grow the whole server until the machine runs out. This module bounds it:
//!
//! - the process allocator counts, per thread, bytes allocated minus bytes
//!   freed (`ferrogres_engine::memacct`, installed by the binary);
//! - at the start of each statement ([`start_statement`]) the session arms the
//!   thread's soft limit at its current level plus `statement_memory_limit`;
//! - the executor's interrupt check ([`check`], called from the session's
//!   `check_interrupts`, which every long loop polls) fails the statement with
//!   53200 `out of memory`, DETAIL `Failed on request of size N in memory
//!   context "ExecutorState".` (N: the allocation that passed the limit), once
//!   the statement's growth passed the limit. The statement's memory is freed
//!   as its error unwinds; the session and the other sessions go on;
//! - a large allocation whose size is known before it is made (a string built
//!   to a requested length, a string or `||` result that grows its buffer) is
//!   checked first ([`reserve`], [`reserve_growth`]), so it fails without
//!   being made.
//!
//! The limit is a user setting (PostgreSQL has none): an amount of memory with
//! PostgreSQL's units (`kB` when none is given; `B`, `kB`, `MB`, `GB`, `TB`),
//! or -1 for no limit; default [`DEFAULT`] (a materialized sort of 4M rows
//! takes ~1.2 GB; the machine this runs on has 24 GB for several servers).
//! Memory is counted between interrupt checks, so a statement can pass the
//! limit by what it allocates between two checks (the rows of 1024 loop
//! iterations, or a value whose size was not known in advance) before it
//! stops.

use ferrogres_datum::errors::{Result, SqlError};
use ferrogres_engine::memacct;

/// The setting's name.
pub const SETTING: &str = "statement_memory_limit";
/// Its default value.
pub const DEFAULT: &str = "4GB";
/// pg_settings' description of it.
pub const SHORT_DESC: &str = "Sets the maximum memory one statement may allocate; -1 means no limit.";

const UNITS: [(&str, u64); 5] = [("TB", 1 << 40), ("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10), ("B", 1)];

fn invalid(value: &str) -> SqlError {
    SqlError::new(b"22023", format!("invalid value for parameter \"{SETTING}\": \"{value}\""))
        .with_hint("Valid units for this parameter are \"B\", \"kB\", \"MB\", \"GB\", and \"TB\".")
}

/// Parses a value of the setting: `Ok(None)` for -1 (no limit), else bytes.
pub fn parse_limit(value: &str) -> Result<Option<u64>> {
    let v = value.trim();
    let digits = v.find(|c: char| !(c.is_ascii_digit() || c == '-')).unwrap_or(v.len());
    let (num, unit) = v.split_at(digits);
    let n: i64 = num.parse().map_err(|_| invalid(value))?;
    let unit = unit.trim();
    if n == -1 && unit.is_empty() {
        return Ok(None);
    }
    let mult = match unit {
        "" => 1024,
        u => UNITS.iter().find(|(name, _)| *name == u).map(|(_, m)| *m).ok_or_else(|| invalid(value))?,
    };
    // 1 MB .. 2^53 bytes, whole kilobytes.
    let bytes = u64::try_from(n).ok().and_then(|n| n.checked_mul(mult)).filter(|b| *b < 1 << 53);
    match bytes {
        Some(b) if b >= 1 << 20 => Ok(Some(b / 1024 * 1024)),
        _ => Err(SqlError::new(
            b"22023",
            format!("{} kB is outside the valid range for parameter \"{SETTING}\" (1024 kB .. 8796093022208 kB)", n.saturating_mul(mult as i64) / 1024),
        )),
    }
}

/// The value as SHOW prints it: the largest unit that divides it exactly.
pub fn normalize(value: &str) -> Result<String> {
    Ok(match parse_limit(value)? {
        None => "-1".into(),
        Some(b) => {
            let (name, m) = UNITS.iter().find(|(_, m)| b % m == 0 && *m >= 1024).copied().unwrap_or(("kB", 1024));
            format!("{}{name}", b / m)
        }
    })
}

/// Arms the thread's soft limit for a statement starting now.
pub fn start_statement(limit: Option<u64>) {
    match limit {
        Some(l) => memacct::arm(memacct::thread_net().saturating_add(l.min(isize::MAX as u64) as isize)),
        None => memacct::disarm(),
    }
}

/// Disarms it when the statement is over.
pub fn end_statement() {
    memacct::disarm();
}

/// Runs `f` under a tighter bound: at most `budget` more bytes (never more
/// than the statement's own limit), then puts the statement's limit back.
/// Returns `f`'s result, whether the bound was crossed, and the bytes `f`
/// left allocated (what its result holds; 0 without the counting allocator).
/// Constant folding evaluates under it, so a large value is computed when
/// the statement runs, under the statement's limit, not at planning time.
pub fn with_budget<T>(budget: usize, f: impl FnOnce() -> T) -> (T, bool, usize) {
    let saved = memacct::state();
    let before = memacct::thread_net();
    memacct::arm(saved.0.min(before.saturating_add(budget.min(isize::MAX as usize) as isize)));
    let r = f();
    let crossed = memacct::crossed().is_some();
    let kept = memacct::thread_net().saturating_sub(before).max(0) as usize;
    memacct::restore(saved);
    (r, crossed, kept)
}

/// 53200 when the running statement passed its limit.
pub fn check() -> Result<()> {
    match memacct::crossed() {
        None => Ok(()),
        Some(size) => Err(out_of_memory(size)),
    }
}

/// Before a large allocation (a value that grows, a string built to a
/// requested length): 53200 if `size` more bytes would take the statement
/// past its limit, so the allocation is not even tried.
pub fn reserve(size: usize) -> Result<()> {
    if size as isize > memacct::headroom() {
        return Err(out_of_memory(size));
    }
    Ok(())
}

/// [`reserve`] for `more` bytes appended to a string of capacity `cap`
/// holding `len`: the growth a `String` makes (doubling) when it must.
pub fn reserve_growth(len: usize, cap: usize, more: usize) -> Result<()> {
    if len + more > cap {
        reserve((len + more).max(cap.saturating_mul(2)))?;
    }
    Ok(())
}

/// PostgreSQL's out-of-memory error for a request of `size` bytes.
pub fn out_of_memory(size: usize) -> SqlError {
    SqlError::new(b"53200", "out of memory")
        .with_detail(format!("Failed on request of size {size} in memory context \"ExecutorState\"."))
        .with_hint(format!("The statement passed {SETTING}."))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_units() {
        assert_eq!(parse_limit("4GB").unwrap(), Some(4 << 30));
        assert_eq!(parse_limit("2048").unwrap(), Some(2 << 20));
        assert_eq!(parse_limit(" 100 MB").unwrap(), Some(100 << 20));
        assert_eq!(parse_limit("-1").unwrap(), None);
        assert_eq!(normalize("4096MB").unwrap(), "4GB");
        assert_eq!(normalize("1536MB").unwrap(), "1536MB");
        assert_eq!(normalize("1048576").unwrap(), "1GB");
        let e = parse_limit("4 parsecs").unwrap_err();
        assert_eq!((e.sqlstate(), e.message.as_str()), ("22023", "invalid value for parameter \"statement_memory_limit\": \"4 parsecs\""));
        assert_eq!(parse_limit("10kB").unwrap_err().sqlstate(), "22023");
        assert_eq!(parse_limit("-2").unwrap_err().sqlstate(), "22023");
    }
}
