//! Temporary files of one query (PostgreSQL's fd.c temporary files, read and
//! written through a buffer as its BufFile does): the runs of an external sort,
//! the rows a hash aggregate spills.
//!
//! A file lives in `base/pgsql_tmp` of the data directory and is named as
//! PostgreSQL names them, `pgsql_tmp<PID>.<N>`: the session's pid, then a
//! sequence number unique in the server process. It is written sequentially,
//! then rewound and read sequentially ([`TempFile::rewind`]). The file is
//! removed when its [`TempFile`] is dropped, so a query that ends, fails or is
//! cancelled leaves none; files left by a crash are removed at the next start
//! ([`remove_stray`], PostgreSQL's RemovePgTempFiles).

use crate::error::{Error, Result};
use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The folder of temporary files, relative to the data directory.
pub const TEMP_DIR: &str = "base/pgsql_tmp";
/// The prefix of every temporary file's name (PostgreSQL's PG_TEMP_FILE_PREFIX).
pub const TEMP_PREFIX: &str = "pgsql_tmp";

/// Buffer size of a temporary file's reader and writer (PostgreSQL's BLCKSZ).
const BUF_SIZE: usize = 8192;

/// The `N` of the next file's name. Process-wide because every session of the
/// server shares one process (PostgreSQL's per-backend tempFileCounter, made
/// unique across backends that share a pid namespace). Relaxed: only
/// uniqueness matters, and fetch_add gives it.
static NEXT_FILE: AtomicU64 = AtomicU64::new(0);

enum Mode {
    Writing(BufWriter<File>),
    Reading(BufReader<File>),
    /// Between the two, and after a failed rewind.
    Closed,
}

/// One temporary file: written, then rewound and read; removed on drop.
pub struct TempFile {
    path: PathBuf,
    /// The path relative to the data directory, for messages.
    shown: String,
    mode: Mode,
    /// Bytes written.
    size: u64,
    /// Bytes read, and whether the written blocks were counted
    /// (`crate::pgstat::usage`: temp_blks_read / _written, counted once
    /// writing ends and at drop).
    read: u64,
    write_counted: bool,
}

impl TempFile {
    /// Creates a new empty file `base/pgsql_tmp/pgsql_tmp<pid>.<N>` (and the
    /// folder, the first time).
    pub fn create(datadir: &Path, pid: i32) -> Result<TempFile> {
        let dir = datadir.join(TEMP_DIR);
        let n = NEXT_FILE.fetch_add(1, Ordering::Relaxed);
        let name = format!("{TEMP_PREFIX}{pid}.{n}");
        let path = dir.join(&name);
        let shown = format!("{TEMP_DIR}/{name}");
        let open = || OpenOptions::new().read(true).write(true).create_new(true).open(&path);
        let file = match open() {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(&dir).map_err(|e| Error::io(format!("could not create directory \"{TEMP_DIR}\""), e))?;
                open().map_err(|e| Error::io(format!("could not create temporary file \"{shown}\""), e))?
            }
            Err(e) => return Err(Error::io(format!("could not create temporary file \"{shown}\""), e)),
        };
        Ok(TempFile { path, shown, mode: Mode::Writing(BufWriter::with_capacity(BUF_SIZE, file)), size: 0, read: 0, write_counted: false })
    }

    /// The path relative to the data directory (`base/pgsql_tmp/pgsql_tmp42.7`).
    pub fn name(&self) -> &str {
        &self.shown
    }

    /// Bytes written so far.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Appends `b`. The file must not have been rewound.
    pub fn write_all(&mut self, b: &[u8]) -> Result<()> {
        let Mode::Writing(w) = &mut self.mode else {
            return Err(Error::internal(format!("write to temporary file \"{}\" after rewind", self.shown)));
        };
        w.write_all(b).map_err(|e| Error::io(format!("could not write to file \"{}\"", self.shown), e))?;
        self.size += b.len() as u64;
        Ok(())
    }

    /// Counts the blocks written, once (PostgreSQL's BufFile counts each
    /// BLCKSZ buffer it writes out).
    fn count_written(&mut self) {
        if !self.write_counted {
            self.write_counted = true;
            crate::pgstat::usage::count_temp_blocks(0, self.size.div_ceil(BUF_SIZE as u64));
        }
    }

    /// Ends writing and positions the file at its start for reading.
    pub fn rewind(&mut self) -> Result<()> {
        self.count_written();
        let shown = self.shown.clone();
        let err = |e: std::io::Error| Error::io(format!("could not seek in file \"{shown}\""), e);
        let mut file = match std::mem::replace(&mut self.mode, Mode::Closed) {
            Mode::Writing(w) => w.into_inner().map_err(|e| err(e.into_error()))?,
            Mode::Reading(r) => r.into_inner(),
            Mode::Closed => return Err(Error::internal(format!("rewind of closed temporary file \"{shown}\""))),
        };
        file.seek(SeekFrom::Start(0)).map_err(err)?;
        self.mode = Mode::Reading(BufReader::with_capacity(BUF_SIZE, file));
        Ok(())
    }

    /// Fills `buf` from the file. `Ok(false)` at the end of the file before the
    /// first byte; a file that ends inside `buf` is corrupt.
    pub fn read_exact_or_eof(&mut self, buf: &mut [u8]) -> Result<bool> {
        let Mode::Reading(r) = &mut self.mode else {
            return Err(Error::internal(format!("read of temporary file \"{}\" before rewind", self.shown)));
        };
        let mut got = 0;
        while got < buf.len() {
            match r.read(&mut buf[got..]) {
                Ok(0) if got == 0 => return Ok(false),
                Ok(0) => {
                    return Err(Error::corrupt(format!(
                        "could not read from file \"{}\": read only {got} of {} bytes",
                        self.shown,
                        buf.len()
                    )))
                }
                Ok(n) => {
                    got += n;
                    self.read += n as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(format!("could not read from file \"{}\"", self.shown), e)),
            }
        }
        Ok(true)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        // Nothing to report to: a file that cannot be removed now is removed at
        // the next start by `remove_stray`.
        let _ = std::fs::remove_file(&self.path);
        self.count_written();
        crate::pgstat::usage::count_temp_blocks(self.read.div_ceil(BUF_SIZE as u64), 0);
        crate::pgstat::usage::count_temp_file(self.size);
    }
}

/// Removes every `pgsql_tmp*` file of `base/pgsql_tmp` (left by a crash: no
/// query runs yet). Returns how many were removed.
pub fn remove_stray(datadir: &Path) -> Result<usize> {
    let dir = datadir.join(TEMP_DIR);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(Error::io(dir.display(), e)),
    };
    let mut n = 0;
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(dir.display(), e))?;
        if entry.file_name().to_string_lossy().starts_with(TEMP_PREFIX) {
            let p = entry.path();
            std::fs::remove_file(&p).map_err(|e| Error::io(p.display(), e))?;
            n += 1;
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_rewind_read_and_removed_on_drop() {
        let dir = std::env::temp_dir().join(format!("ferrogres-buffile-{}", std::process::id()));
        let mut f = TempFile::create(&dir, 42).unwrap();
        assert!(f.name().starts_with("base/pgsql_tmp/pgsql_tmp42."));
        let data: Vec<u8> = (0..20_000u32).map(|i| i as u8).collect();
        f.write_all(&data).unwrap();
        assert_eq!(f.size(), 20_000);
        f.rewind().unwrap();
        let mut back = vec![0; 20_000];
        assert!(f.read_exact_or_eof(&mut back).unwrap());
        assert_eq!(back, data);
        assert!(!f.read_exact_or_eof(&mut [0; 4]).unwrap());
        let path = dir.join(f.name());
        assert!(path.exists());
        drop(f);
        assert!(!path.exists());
        // A stray file (as after a crash) goes at the next start.
        std::fs::write(dir.join(TEMP_DIR).join("pgsql_tmp7.3"), b"x").unwrap();
        assert_eq!(remove_stray(&dir).unwrap(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
