//! Never serving as root.
//!
//! PostgreSQL refuses to start as root (`"root" execution of the PostgreSQL server
//! is not permitted`). ferrogres instead gives root away at start: a newcomer who is
//! root on a fresh machine can still run README's command, and the server still
//! cannot read `/etc/shadow` for a client's `COPY ... FROM` nor write root-owned
//! files with `COPY ... TO`.
//!
//! Started with euid 0, the binary (main.rs, in this order):
//! 1. creates the data directory if needed and picks the account: the owner of the
//!    data directory when that is not root, else `nobody`;
//! 2. hands the data directory to it (`lchown`, recursively);
//! 3. chdir()s into the data directory (every later path is relative to it, so a
//!    parent directory the account cannot traverse, say a 0700 temporary directory
//!    of root's, does not matter);
//! 4. takes `postmaster.pid`, binds its sockets and takes their lock files, and
//!    hands those files to the account too;
//! 5. drops root for good: supplementary groups, then the gid, then the uid
//!    ([`drop_to`]), each checked, and checks that root cannot be regained.
//!
//! Only then is anything in the data directory read (recovery) or a thread started.

use crate::options::Fatal;
use std::ffi::{CStr, CString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The unprivileged account the server runs as.
#[derive(Clone, Debug)]
pub struct Account {
    pub name: String,
    pub uid: libc::uid_t,
    pub gid: libc::gid_t,
    /// Why this account (for the LOG line).
    pub why: &'static str,
}

pub fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The owner of `datadir` unless that is root, else `nobody`.
pub fn choose_account(datadir: &Path) -> Result<Account, Fatal> {
    if let Ok(md) = std::fs::metadata(datadir) {
        if md.uid() != 0 {
            let (name, gid) = match passwd_by_uid(md.uid()) {
                Some((name, _, gid)) => (name, gid),
                // An owner without a passwd entry: its uid, with the directory's group.
                None => (md.uid().to_string(), md.gid()),
            };
            return Ok(Account { name, uid: md.uid(), gid, why: "the owner of the data directory" });
        }
    }
    match passwd_by_name("nobody") {
        Some((name, uid, gid)) if uid != 0 => Ok(Account { name, uid, gid, why: "the data directory is root's" }),
        _ => Err(Fatal {
            message: "\"root\" execution of the PostgreSQL server is not permitted.".into(),
            detail: Some("There is no \"nobody\" account to run as, and root owns the data directory.".into()),
            hint: Some(
                "Start the server as an unprivileged user, or give the data directory to one (chown -R user DATADIR)."
                    .into(),
            ),
            usage: false,
        }),
    }
}

/// Gives `dir` and everything under it to the account (symbolic links themselves,
/// never their targets).
pub fn chown_tree(dir: &Path, a: &Account) -> Result<(), Fatal> {
    let fail = |p: &Path, e: io::Error| Fatal::new(format!("could not change owner of \"{}\": {e}", p.display()));
    lchown(dir, a).map_err(|e| fail(dir, e))?;
    let md = std::fs::symlink_metadata(dir).map_err(|e| fail(dir, e))?;
    if md.is_dir() {
        // Depth-first with an explicit stack: no recursion on deep trees.
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for entry in std::fs::read_dir(&d).map_err(|e| fail(&d, e))? {
                let entry = entry.map_err(|e| fail(&d, e))?;
                let p = entry.path();
                lchown(&p, a).map_err(|e| fail(&p, e))?;
                if entry.file_type().map_err(|e| fail(&p, e))?.is_dir() {
                    stack.push(p);
                }
            }
        }
    }
    Ok(())
}

/// Gives one file to the account.
pub fn lchown(p: &Path, a: &Account) -> io::Result<()> {
    let c = CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: a valid NUL-terminated path.
    if unsafe { libc::lchown(c.as_ptr(), a.uid, a.gid) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Drops root permanently: supplementary groups, gid, uid, in that order (the
/// groups and gid can only be changed while still root), each checked; then checks
/// that uid 0 cannot be taken back.
pub fn drop_to(a: &Account) -> Result<(), Fatal> {
    let fail = |what: &str| Fatal::new(format!("could not {what}: {}", io::Error::last_os_error()));
    // SAFETY: plain system calls on this process's credentials; setgroups gets a
    // one-element array that outlives the call.
    unsafe {
        if libc::setgroups(1, &a.gid) != 0 {
            return Err(fail("drop supplementary groups"));
        }
        if libc::setgid(a.gid) != 0 {
            return Err(fail(&format!("set group ID to {}", a.gid)));
        }
        if libc::setuid(a.uid) != 0 {
            return Err(fail(&format!("set user ID to {}", a.uid)));
        }
        let (uid, euid, gid, egid) = (libc::getuid(), libc::geteuid(), libc::getgid(), libc::getegid());
        if (uid, euid, gid, egid) != (a.uid, a.uid, a.gid, a.gid) {
            return Err(Fatal::new(format!(
                "could not drop root privileges: uid {uid}, euid {euid}, gid {gid}, egid {egid} after switching to \"{}\"",
                a.name
            )));
        }
        if libc::setuid(0) == 0 {
            return Err(Fatal::new("could not drop root privileges: root could be regained"));
        }
    }
    Ok(())
}

fn passwd_by_name(name: &str) -> Option<(String, libc::uid_t, libc::gid_t)> {
    let c = CString::new(name).ok()?;
    lookup(|pw, buf, len, out| {
        // SAFETY: getpwnam_r with a valid name, record, buffer and result pointer.
        unsafe { libc::getpwnam_r(c.as_ptr(), pw, buf, len, out) }
    })
}

fn passwd_by_uid(uid: libc::uid_t) -> Option<(String, libc::uid_t, libc::gid_t)> {
    lookup(|pw, buf, len, out| {
        // SAFETY: getpwuid_r with a valid record, buffer and result pointer.
        unsafe { libc::getpwuid_r(uid, pw, buf, len, out) }
    })
}

fn lookup(
    f: impl FnOnce(*mut libc::passwd, *mut libc::c_char, libc::size_t, *mut *mut libc::passwd) -> libc::c_int,
) -> Option<(String, libc::uid_t, libc::gid_t)> {
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: a zeroed passwd is a valid out-parameter; the result pointer is only
    // read when the call succeeded and then points into `pw`/`buf`, both alive.
    unsafe {
        let mut pw: libc::passwd = std::mem::zeroed();
        let mut out: *mut libc::passwd = std::ptr::null_mut();
        if f(&mut pw, buf.as_mut_ptr(), buf.len(), &mut out) != 0 || out.is_null() {
            return None;
        }
        let name = CStr::from_ptr(pw.pw_name).to_string_lossy().into_owned();
        Some((name, pw.pw_uid, pw.pw_gid))
    }
}
