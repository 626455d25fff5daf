//! Lock files, as PostgreSQL's postmaster keeps them: `postmaster.pid` in the data
//! directory (no second server may open it) and `.s.PGSQL.PORT.lock` beside each
//! Unix socket (no second server may take the socket path).
//!
//! A lock file holds lines in PostgreSQL's layout (miscinit.c, `LOCK_FILE_LINE_*`):
//!
//! ```text
//! 1 pid                      4 port                   7 shared memory key line
//! 2 data directory (abs.)    5 first socket directory 8 status: starting / ready / stopping
//! 3 start time (epoch s)     6 first listen address
//! ```
//!
//! (a socket lock file stops after line 5). pg_ctl and other tools read it.
//!
//! Taking a lock (`LockFile::acquire`):
//! 1. create the file with `O_CREAT | O_EXCL` and at once `flock(LOCK_EX)` it; write
//!    the lines and fsync. The flock is held as long as the process lives and is
//!    dropped by the kernel when it dies, however it dies.
//! 2. if the file exists, it is *live* when either its flock is held by someone, or
//!    the pid it names is a running process, not this one or its parent, not a
//!    zombie, and that process is a server on the same data directory: its working
//!    directory is the data directory named in line 2 (ferrogres and PostgreSQL both
//!    chdir there), or, when its working directory cannot be read (another user's
//!    process), its name is `ferrogres`, `postgres` or `postmaster`. A live file
//!    is FATAL `lock file "..." already exists` with PostgreSQL's HINT.
//! 3. otherwise the file is stale (its server died: kill -9, a power cut; its pid
//!    may have been reused by an unrelated process): it is removed and step 1 runs
//!    again (PostgreSQL tries 100 times before giving up).
//!
//! A lock file is removed when the [`LockFile`] is dropped (clean shutdown), if the
//! path still names the file this process created.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// What a lock file guards; decides the HINT of the "already exists" error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockKind {
    /// `postmaster.pid`; the reference is the data directory.
    DataDir,
    /// `.s.PGSQL.PORT.lock`; the reference is the socket path.
    Socket,
}

/// Why a lock could not be taken: PostgreSQL's message and hint.
#[derive(Debug)]
pub struct LockError {
    pub message: String,
    pub hint: Option<String>,
}

impl std::fmt::Display for LockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        if let Some(h) = &self.hint {
            write!(f, "\nHINT:  {h}")?;
        }
        Ok(())
    }
}

/// Status values of line 8 (PostgreSQL's PM_STATUS_*: all eight bytes long, so the
/// line can be rewritten in place).
pub const STATUS_STARTING: &str = "starting";
pub const STATUS_READY: &str = "ready   ";
pub const STATUS_STOPPING: &str = "stopping";

/// A lock file this process holds.
#[derive(Debug)]
pub struct LockFile {
    path: PathBuf,
    file: File,
    lines: Vec<String>,
    /// (device, inode) of the file created, to remove only our own.
    id: (u64, u64),
    removed: bool,
}

impl LockFile {
    /// Takes the lock file `path` (named `shown` in messages) holding `lines`;
    /// `reference` is the data directory or socket path the HINT names.
    pub fn acquire(path: &Path, shown: &str, kind: LockKind, reference: &str, lines: Vec<String>) -> Result<LockFile, LockError> {
        let fail = |what: &str, e: io::Error| LockError { message: format!("could not {what} lock file \"{shown}\": {e}"), hint: None };
        for _ in 0..100 {
            match OpenOptions::new().read(true).write(true).create_new(true).mode(0o600).custom_flags(libc::O_CLOEXEC).open(path) {
                Ok(file) => {
                    // Blocking: a starter checking the file we just made holds the
                    // flock only while it reads it.
                    flock(&file, libc::LOCK_EX).map_err(|e| fail("lock", e))?;
                    let md = file.metadata().map_err(|e| fail("open", e))?;
                    let mut lf = LockFile { path: path.to_path_buf(), file, lines, id: (md.dev(), md.ino()), removed: false };
                    if let Err(e) = lf.rewrite() {
                        let _ = std::fs::remove_file(path);
                        lf.removed = true;
                        return Err(fail("write", e));
                    }
                    return Ok(lf);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(fail("create", e)),
            }
            let mut file = match OpenOptions::new().read(true).custom_flags(libc::O_CLOEXEC).open(path) {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue, // removed meanwhile: try again
                Err(e) => return Err(fail("open", e)),
            };
            let held = match flock(&file, libc::LOCK_EX | libc::LOCK_NB) {
                Ok(()) => false,
                Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => true,
                Err(e) => return Err(fail("lock", e)),
            };
            let mut content = String::new();
            file.read_to_string(&mut content).map_err(|e| fail("read", e))?;
            let mut it = content.lines();
            let pid_line = it.next().unwrap_or("").trim();
            let owner_dir = it.next().unwrap_or("").to_string();
            if pid_line.is_empty() && !held {
                return Err(LockError {
                    message: format!("lock file \"{shown}\" is empty"),
                    hint: Some(
                        "Either another server is starting, or the lock file is the remnant of a previous server startup crash."
                            .into(),
                    ),
                });
            }
            let pid: i32 = match pid_line.parse::<i64>() {
                // PostgreSQL writes -pid for a standalone backend.
                Ok(p) => p.unsigned_abs().min(i32::MAX as u64) as i32,
                Err(_) if held => 0,
                Err(_) => {
                    return Err(LockError { message: format!("bogus data in lock file \"{shown}\": \"{pid_line}\""), hint: None })
                }
            };
            if held || (pid > 0 && owner_is_alive(pid, &owner_dir)) {
                let hint = match kind {
                    LockKind::DataDir => format!("Is another postmaster (PID {pid}) running in data directory \"{reference}\"?"),
                    LockKind::Socket => format!("Is another postmaster (PID {pid}) using socket file \"{reference}\"?"),
                };
                return Err(LockError { message: format!("lock file \"{shown}\" already exists"), hint: Some(hint) });
            }
            // Stale: remove it if the path still names the file we inspected.
            let md = file.metadata().map_err(|e| fail("open", e))?;
            match std::fs::metadata(path) {
                Ok(now) if (now.dev(), now.ino()) == (md.dev(), md.ino()) => {
                    if let Err(e) = std::fs::remove_file(path) {
                        if e.kind() != io::ErrorKind::NotFound {
                            return Err(LockError {
                                message: format!("could not remove old lock file \"{shown}\": {e}"),
                                hint: Some(
                                    "The file seems accidentally left over, but it could not be removed. Please remove the file by hand and try again."
                                        .into(),
                                ),
                            });
                        }
                    }
                }
                _ => {}
            }
            drop(file);
        }
        Err(LockError { message: format!("could not create lock file \"{shown}\": too many attempts"), hint: None })
    }

    /// Replaces line `n` (1-based), padding with empty lines, and rewrites the file.
    pub fn set_line(&mut self, n: usize, value: &str) -> io::Result<()> {
        while self.lines.len() < n {
            self.lines.push(String::new());
        }
        self.lines[n - 1] = value.to_string();
        self.rewrite()
    }

    fn rewrite(&mut self) -> io::Result<()> {
        let mut text = self.lines.join("\n");
        text.push('\n');
        self.file.set_len(0)?;
        use std::os::unix::fs::FileExt;
        self.file.write_all_at(text.as_bytes(), 0)?;
        self.file.flush()?;
        self.file.sync_all()
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the file now (clean shutdown), if it is still ours.
    pub fn remove(&mut self) {
        if self.removed {
            return;
        }
        self.removed = true;
        if let Ok(md) = std::fs::metadata(&self.path) {
            if (md.dev(), md.ino()) == self.id {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }
}

impl Drop for LockFile {
    fn drop(&mut self) {
        self.remove();
    }
}

fn flock(f: &File, op: libc::c_int) -> io::Result<()> {
    loop {
        // SAFETY: flock(2) on a descriptor we own.
        if unsafe { libc::flock(f.as_raw_fd(), op) } == 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Is `pid` a live server that could own a lock file naming `owner_dir` as its data
/// directory? Not us, not our parent (a pid file copied with the data directory may
/// name the process that started us), not a zombie.
fn owner_is_alive(pid: i32, owner_dir: &str) -> bool {
    let me = std::process::id() as i32;
    // SAFETY: getppid has no preconditions.
    let parent = unsafe { libc::getppid() };
    if pid == me || pid == parent {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    if unsafe { libc::kill(pid, 0) } != 0 && io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
        return false;
    }
    let proc_dir = PathBuf::from(format!("/proc/{pid}"));
    let Ok(stat) = std::fs::read_to_string(proc_dir.join("stat")) else {
        // No /proc: trust kill(), as PostgreSQL does.
        return true;
    };
    // "pid (comm) S ...": the state follows the last ')'.
    let state = stat.rsplit_once(')').and_then(|(_, rest)| rest.trim_start().chars().next());
    if matches!(state, Some('Z' | 'X')) {
        return false;
    }
    match std::fs::read_link(proc_dir.join("cwd")) {
        Ok(cwd) => {
            let owner = Path::new(owner_dir);
            cwd == owner || std::fs::canonicalize(owner).is_ok_and(|o| o == cwd)
        }
        Err(_) => {
            let comm = std::fs::read_to_string(proc_dir.join("comm")).unwrap_or_default();
            matches!(comm.trim(), "ferrogres" | "postgres" | "postmaster")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(dir: &Path) -> Vec<String> {
        vec![std::process::id().to_string(), dir.display().to_string(), "0".into(), "5433".into(), String::new()]
    }

    #[test]
    fn second_acquire_fails_and_drop_removes() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("postmaster.pid");
        let a = LockFile::acquire(&p, "postmaster.pid", LockKind::DataDir, "/x", lines(d.path())).unwrap();
        let e = LockFile::acquire(&p, "postmaster.pid", LockKind::DataDir, "/x", lines(d.path())).unwrap_err();
        assert_eq!(e.message, "lock file \"postmaster.pid\" already exists");
        assert_eq!(e.hint.unwrap(), format!("Is another postmaster (PID {}) running in data directory \"/x\"?", std::process::id()));
        drop(a);
        assert!(!p.exists());
    }

    #[test]
    fn stale_files_are_replaced() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("postmaster.pid");
        // A dead pid: a child that has exited and been reaped.
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let dead = c.id();
        c.wait().unwrap();
        std::fs::write(&p, format!("{dead}\n{}\n0\n5433\n\n", d.path().display())).unwrap();
        let l = LockFile::acquire(&p, "postmaster.pid", LockKind::DataDir, "/x", lines(d.path())).unwrap();
        assert!(std::fs::read_to_string(&p).unwrap().starts_with(&format!("{}\n", std::process::id())));
        drop(l);
        // A live pid that is not a server on this directory (pid reused): stale too.
        let mut sleeper = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        std::fs::write(&p, format!("{}\n{}\n0\n5433\n\n", sleeper.id(), d.path().display())).unwrap();
        let l = LockFile::acquire(&p, "postmaster.pid", LockKind::DataDir, "/x", lines(d.path()));
        let _ = sleeper.kill();
        let _ = sleeper.wait();
        assert!(l.is_ok(), "{:?}", l.err());
        // An empty file: PostgreSQL's FATAL.
        drop(l);
        std::fs::write(&p, "").unwrap();
        let e = LockFile::acquire(&p, "postmaster.pid", LockKind::DataDir, "/x", lines(d.path())).unwrap_err();
        assert_eq!(e.message, "lock file \"postmaster.pid\" is empty");
    }

    #[test]
    fn lines_are_rewritten_in_place() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("l");
        let mut l = LockFile::acquire(&p, "l", LockKind::Socket, "/s", lines(d.path())).unwrap();
        l.set_line(8, STATUS_READY).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.lines().count(), 8);
        assert_eq!(text.lines().nth(7), Some("ready   "));
    }
}
