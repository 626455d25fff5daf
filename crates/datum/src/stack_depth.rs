//! Stack depth checking: PostgreSQL's `check_stack_depth()` and its
//! `max_stack_depth` setting.
//!
//! Every walk that can recurse as deep as its input is nested (analysis of
//! expressions, FROM items, subqueries, set operations, CTEs, views and SQL
//! functions; the executor's expression evaluation and plan recursion;
//! EXPLAIN; JSON and array I/O; the parse tree's decode) calls [`check`] at
//! the top of the recursive function. `check` compares the address of a local
//! variable (the current stack pointer, give or take a frame) with the base of
//! the thread's stack; past `max_stack_depth` it fails with 54001 `stack depth
//! limit exceeded` and PostgreSQL's HINT, the statement is rolled back and the
//! session goes on. Without it a deep enough input overflows the stack, and a
//! stack overflow aborts the whole process (every session).
//!
//! ```text
//!   base (highest address: where the thread's stack starts)
//!    │  session, protocol loop, statement ...
//!    │  recursive walks: each call of check() measures  depth = base - sp
//!    ▼
//!   base - limit            <- check() fails below here (max_stack_depth)
//!    │  STACK_DEPTH_SLOP: error unwinding, code between checks, and the
//!    │  leaf walks that cannot check (libpg_query's parser and prost's decode
//!    │  of its parse tree, bounded on their own; see `parser`)
//!   base - stack size       <- guard page: an overflow here kills the process
//! ```
//!
//! Invariant: `100 kB <= limit <= thread stack size - slop`, where the slop
//! is [`STACK_DEPTH_SLOP`] (half the stack on a thread smaller than twice
//! that: the main thread, test threads), checked when the setting is set;
//! [`set_limit_kb`] clamps.
//!
//! Where the state lives, and why:
//! - The base and the size of the stack are properties of the thread, not of
//!   a session, so they are per-thread (a `thread_local!`), read once from
//!   `pthread_getattr_np` (the exact bounds of the thread's stack, whoever
//!   created the thread; PostgreSQL records its base in main() instead).
//! - The limit is the session's `max_stack_depth`. Passing it explicitly would
//!   mean a parameter on every recursive function of the analyzer, executor,
//!   JSON and array code (dozens, including leaf data-type code that has no
//!   session); instead the session that runs on the thread sets a per-thread
//!   limit: when it starts, whenever it pushes its settings to the thread
//!   (`Session::sync_datetime`, at every statement after a SET) and when
//!   `max_stack_depth` is set. A connection thread serves exactly one session,
//!   so the per-thread limit is always that session's.
//!
//! Sizes. Rust frames are larger than PostgreSQL's C frames (and the tests run
//! a debug build at opt-level 1), so the same nesting needs more stack here:
//! see [`DEFAULT_MAX_STACK_DEPTH_KB`] for the default and how it was chosen,
//! and `ferrogres_server`'s connection-thread stack size, which is the default
//! limit plus [`STACK_DEPTH_SLOP`] (or the process's `ulimit -s`, if larger).

use crate::errors::{Result, SqlError};
use std::cell::Cell;

/// The default `max_stack_depth`, in kB: 64 MB. PostgreSQL's is 2 MB (2048kB).
///
/// Chosen so that everything PostgreSQL 15 accepts at its defaults is
/// accepted here (`crates/ferrogres/tests/deep_nesting.rs` holds PostgreSQL's
/// measured limits: 1,000 nested views, 2,111 nested scalar subqueries, 4,091
/// nested function calls, 14,543-deep JSON text, ...), with frames of a debug
/// build; only the touched pages of a thread's stack cost memory.
pub const DEFAULT_MAX_STACK_DEPTH_KB: usize = 64 * 1024;

/// Stack kept free below the limit (PostgreSQL's STACK_DEPTH_SLOP is 512 kB):
/// for error handling, for code that runs between two checks, and for the
/// parser, which cannot call [`check`] while it works: libpg_query (C, which
/// stops itself at 2 MB of its own stack) and prost's decode of the parse tree
/// it returns (at most `parser::MAX_PROTOBUF_DEPTH` nested messages; see the
/// test there that decodes the deepest on a stack of this size).
pub const STACK_DEPTH_SLOP: usize = 32 << 20;

/// The stack size a connection thread needs: the default limit plus the
/// slop, or the process's `ulimit -s` when that is larger (so that PostgreSQL's
/// HINT for a `max_stack_depth` above the stack, "Increase the platform's stack
/// depth limit via "ulimit -s"", holds here too).
pub fn connection_stack_size() -> usize {
    let ours = DEFAULT_MAX_STACK_DEPTH_KB * 1024 + STACK_DEPTH_SLOP;
    // SAFETY: getrlimit writes the plain struct it is given.
    let rlimit = unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_STACK, &mut r) == 0 && r.rlim_cur != libc::RLIM_INFINITY {
            usize::try_from(r.rlim_cur).unwrap_or(0)
        } else {
            0
        }
    };
    ours.max(rlimit)
}

/// The smallest `max_stack_depth`, in kB (PostgreSQL's).
pub const MIN_MAX_STACK_DEPTH_KB: usize = 100;

/// A thread's stack as [`check`] sees it.
struct ThreadStack {
    /// Highest address of the thread's stack (its start; stacks grow down);
    /// 0 until [`ThreadStack::base`] first reads it.
    base: Cell<usize>,
    /// Size of the thread's stack in bytes (0: unknown).
    size: Cell<usize>,
    /// `max_stack_depth` in bytes, as the session running here set it.
    limit: Cell<usize>,
}

thread_local! {
    static STACK: ThreadStack = const {
        ThreadStack { base: Cell::new(0), size: Cell::new(0), limit: Cell::new(DEFAULT_MAX_STACK_DEPTH_KB * 1024) }
    };
}

/// The current stack pointer, near enough: the address of a local.
#[inline(always)]
fn stack_pointer() -> usize {
    let marker = 0u8;
    std::hint::black_box(&marker) as *const u8 as usize
}

impl ThreadStack {
    #[inline]
    fn base(&self) -> usize {
        match self.base.get() {
            0 => self.init(),
            b => b,
        }
    }

    /// Reads the thread's stack bounds (once per thread).
    #[cold]
    fn init(&self) -> usize {
        let (base, size) = thread_stack_bounds().unwrap_or_else(|| {
            // Unknown bounds: measure from here (this thread's first check),
            // assuming the stack of a connection thread.
            (stack_pointer() + 64 * 1024, 0)
        });
        self.base.set(base);
        self.size.set(size);
        // Until a session sets it, the limit is the default, lowered to what
        // this thread's stack allows.
        if size > 0 && self.limit.get() > size - slop(size) {
            self.limit.set(((size - slop(size)) / 1024).max(MIN_MAX_STACK_DEPTH_KB) * 1024);
        }
        base
    }
}

/// The stack a thread of `size` bytes keeps below its limit.
fn slop(size: usize) -> usize {
    STACK_DEPTH_SLOP.min(size / 2)
}

/// (highest address, size) of the calling thread's stack.
fn thread_stack_bounds() -> Option<(usize, usize)> {
    // SAFETY: `attr` is initialized by pthread_getattr_np before it is read and
    // destroyed after; the out-parameters are plain integers and a pointer.
    unsafe {
        let mut attr: libc::pthread_attr_t = std::mem::zeroed();
        if libc::pthread_getattr_np(libc::pthread_self(), &mut attr) != 0 {
            return None;
        }
        let mut addr: *mut libc::c_void = std::ptr::null_mut();
        let mut size: libc::size_t = 0;
        let ok = libc::pthread_attr_getstack(&attr, &mut addr, &mut size) == 0;
        libc::pthread_attr_destroy(&mut attr);
        (ok && !addr.is_null() && size > 0).then(|| (addr as usize + size, size))
    }
}

/// How deep the calling thread's stack is now, in bytes.
pub fn depth() -> usize {
    let here = stack_pointer();
    STACK.with(|s| s.base().saturating_sub(here))
}

/// Whether the stack is deeper than `max_stack_depth` (PostgreSQL's
/// `stack_is_too_deep`): for callers that recover instead of failing.
#[inline]
pub fn stack_is_too_deep() -> bool {
    let here = stack_pointer();
    STACK.with(|s| s.base().saturating_sub(here) > s.limit.get())
}

/// PostgreSQL's `check_stack_depth()`: 54001 when the stack is deeper than
/// `max_stack_depth`. Call it at the top of every function that can recurse
/// as deep as its input is nested; it costs a thread-local read and a compare.
#[inline]
pub fn check() -> Result<()> {
    if stack_is_too_deep() {
        return Err(too_deep());
    }
    Ok(())
}

/// The 54001 error, with PostgreSQL's HINT naming the current limit.
#[cold]
pub fn too_deep() -> SqlError {
    SqlError::new(b"54001", "stack depth limit exceeded").with_hint(format!(
        "Increase the configuration parameter \"max_stack_depth\" (currently {}kB), after ensuring the platform's stack depth limit is adequate.",
        limit_kb()
    ))
}

/// The calling thread's `max_stack_depth`, in kB.
pub fn limit_kb() -> usize {
    STACK.with(|s| s.limit.get() / 1024)
}

/// The calling thread's stack size in bytes, if known.
pub fn thread_stack_size() -> Option<usize> {
    STACK.with(|s| {
        s.base();
        Some(s.size.get()).filter(|&n| n > 0)
    })
}

/// The largest `max_stack_depth` this thread's stack allows, in kB
/// (PostgreSQL: the stack rlimit minus STACK_DEPTH_SLOP); `None`: unknown.
pub fn max_allowed_kb() -> Option<usize> {
    thread_stack_size().map(|n| (n - slop(n)) / 1024)
}

/// Sets the calling thread's limit (the session's `max_stack_depth`), clamped
/// to what the thread's stack allows.
pub fn set_limit_kb(kb: usize) {
    let kb = match max_allowed_kb() {
        Some(max) => kb.min(max),
        None => kb,
    }
    .max(MIN_MAX_STACK_DEPTH_KB);
    STACK.with(|s| s.limit.set(kb * 1024));
}

/// The default `max_stack_depth` for a session on the calling thread, as the
/// setting's text: [`DEFAULT_MAX_STACK_DEPTH_KB`], or less when the thread's
/// stack is smaller (PostgreSQL likewise lowers its 2 MB default under a small
/// `ulimit -s`).
pub fn default_setting() -> String {
    let kb = match max_allowed_kb() {
        Some(max) => DEFAULT_MAX_STACK_DEPTH_KB.min(max).max(MIN_MAX_STACK_DEPTH_KB),
        None => DEFAULT_MAX_STACK_DEPTH_KB,
    };
    format_kb(kb)
}

/// A memory size in kB as PostgreSQL shows it: in the largest unit that
/// divides it (`2MB`, `1536kB`).
pub fn format_kb(kb: usize) -> String {
    for (unit, mult) in [("TB", 1usize << 30), ("GB", 1 << 20), ("MB", 1 << 10)] {
        if kb != 0 && kb.is_multiple_of(mult) {
            return format!("{}{unit}", kb / mult);
        }
    }
    format!("{kb}kB")
}

/// Validates a `max_stack_depth` value as PostgreSQL does (an integer or
/// decimal number of kB, or with a unit B/kB/MB/GB/TB; 100 .. 2147483647 kB;
/// no more than the thread's stack allows): (the value as SHOW prints it, kB).
pub fn parse_setting(value: &str) -> Result<(String, usize)> {
    let name = "max_stack_depth";
    let invalid = || SqlError::new(b"22023", format!("invalid value for parameter \"{name}\": \"{value}\""));
    let t = value.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E')).unwrap_or(t.len());
    // "1e3kB": the exponent letter belongs to the number only before a digit.
    let (num, unit) = t.split_at(split);
    let (num, unit) = if num.ends_with(['e', 'E']) { (&num[..num.len() - 1], &t[split - 1..]) } else { (num, unit) };
    let unit = unit.trim();
    let mult: f64 = match unit {
        "" | "kB" => 1.0,
        "B" => 1.0 / 1024.0,
        "MB" => 1024.0,
        "GB" => 1024.0 * 1024.0,
        "TB" => 1024.0 * 1024.0 * 1024.0,
        _ => {
            return Err(if num.is_empty() {
                invalid()
            } else {
                invalid().with_hint("Valid units for this parameter are \"B\", \"kB\", \"MB\", \"GB\", and \"TB\".")
            })
        }
    };
    let n: f64 = num.parse().map_err(|_| invalid())?;
    if !n.is_finite() {
        return Err(invalid());
    }
    let kb = (n * mult).round_ties_even();
    if kb < i32::MIN as f64 || kb > i32::MAX as f64 {
        return Err(invalid().with_hint("Value exceeds integer range."));
    }
    let kb = kb as i64;
    if kb < MIN_MAX_STACK_DEPTH_KB as i64 {
        return Err(SqlError::new(
            b"22023",
            format!("{kb} kB is outside the valid range for parameter \"{name}\" ({MIN_MAX_STACK_DEPTH_KB} .. {})", i32::MAX),
        ));
    }
    let kb = kb as usize;
    if let Some(max) = max_allowed_kb() {
        if kb > max {
            return Err(SqlError::new(b"22023", format!("invalid value for parameter \"{name}\": {kb}"))
                .with_detail(format!("\"{name}\" must not exceed {max}kB."))
                .with_hint("Increase the platform's stack depth limit via \"ulimit -s\" or local equivalent."));
        }
    }
    Ok((format_kb(kb), kb))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Recurses until the check fails; the depth reached, in bytes.
    fn recurse(n: usize) -> Result<usize, usize> {
        if check().is_err() {
            return Err(depth());
        }
        let pad = std::hint::black_box([0u8; 512]);
        Ok(recurse(n + 1)? + pad[n % 512] as usize)
    }

    #[test]
    fn deep_recursion_fails_with_54001_instead_of_overflowing() {
        // A thread whose stack is twice the slop plus 1 MB: a limit of the slop plus 1 MB.
        let h = std::thread::Builder::new()
            .stack_size(2 * STACK_DEPTH_SLOP + (1 << 20))
            .spawn(|| {
                // The default is lowered to what the thread's stack allows.
                let max = max_allowed_kb().unwrap();
                assert!((STACK_DEPTH_SLOP / 1024..STACK_DEPTH_SLOP / 1024 + 1100).contains(&max), "{max}");
                assert_eq!(limit_kb(), max);
                set_limit_kb(1024);
                // Stopped at the limit, give or take a frame.
                let reached = recurse(0).unwrap_err();
                assert!((1 << 20..(1 << 20) + 4096).contains(&reached), "{reached}");
                let e = too_deep();
                assert_eq!(e.sqlstate(), "54001");
                assert_eq!(e.message, "stack depth limit exceeded");
                assert_eq!(
                    e.hint.as_deref(),
                    Some("Increase the configuration parameter \"max_stack_depth\" (currently 1024kB), after ensuring the platform's stack depth limit is adequate.")
                );
                // A smaller limit: fails sooner.
                set_limit_kb(200);
                let reached = recurse(0).unwrap_err();
                assert!((200 << 10..(200 << 10) + 4096).contains(&reached), "{reached}");
            })
            .unwrap();
        h.join().unwrap();
    }

    #[test]
    fn setting_values_as_postgres() {
        std::thread::Builder::new()
            .stack_size(STACK_DEPTH_SLOP + (8 << 20))
            .spawn(|| {
                // Half of a stack smaller than twice the slop is kept free.
                let max = max_allowed_kb().unwrap();
                assert!(((STACK_DEPTH_SLOP + (8 << 20)) / 2048..(STACK_DEPTH_SLOP + (8 << 20)) / 2048 + 100).contains(&max), "{max}");
                assert_eq!(parse_setting("2048").unwrap(), ("2MB".into(), 2048));
                assert_eq!(parse_setting(" 3000 ").unwrap(), ("3000kB".into(), 3000));
                assert_eq!(parse_setting("1.5MB").unwrap(), ("1536kB".into(), 1536));
                assert_eq!(parse_setting("4 MB").unwrap(), ("4MB".into(), 4096));
                assert_eq!(parse_setting("8MB").unwrap().1, 8192);
                let e = parse_setting("10kb").unwrap_err();
                assert_eq!(e.message, "invalid value for parameter \"max_stack_depth\": \"10kb\"");
                assert_eq!(e.hint.as_deref(), Some("Valid units for this parameter are \"B\", \"kB\", \"MB\", \"GB\", and \"TB\"."));
                assert_eq!(parse_setting("abc").unwrap_err().hint, None);
                assert_eq!(
                    parse_setting("50").unwrap_err().message,
                    "50 kB is outside the valid range for parameter \"max_stack_depth\" (100 .. 2147483647)"
                );
                assert_eq!(parse_setting("0.5").unwrap_err().message.split(' ').next(), Some("0"));
                assert_eq!(parse_setting("3000000000").unwrap_err().hint.as_deref(), Some("Value exceeds integer range."));
                let max = max_allowed_kb().unwrap();
                let e = parse_setting(&format!("{}", max + 1)).unwrap_err();
                assert_eq!(e.message, format!("invalid value for parameter \"max_stack_depth\": {}", max + 1));
                assert_eq!(e.detail, Some(format!("\"max_stack_depth\" must not exceed {max}kB.")));
                assert_eq!(e.hint.as_deref(), Some("Increase the platform's stack depth limit via \"ulimit -s\" or local equivalent."));
                assert_eq!(parse_setting(&format!("{max}kB")).unwrap().1, max);
            })
            .unwrap()
            .join()
            .unwrap();
    }
}
