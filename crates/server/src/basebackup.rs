//! BASE_BACKUP (PostgreSQL 15's `backup/basebackup.c`, `basebackup_copy.c`,
//! `backup_manifest.c`): an online copy of the data directory streamed to the
//! client as tar archives inside one COPY OUT stream, with the WAL and a
//! backup manifest. See the replication README, "Online backups".

use crate::connection::{Io, WireSink};
use crate::error::PgError;
use crate::handler::{FieldInfo, Interrupts, ResultSink};
use crate::walsender::engine_error;
use ferrogres_engine::engine::Engine;
use ferrogres_engine::replication::backup::{format_utc, Backup, BACKUP_LABEL, TABLESPACE_MAP};
use ferrogres_engine::storage::Lsn;
use ferrogres_engine::wal::layout::{segment_file_name, TIMELINE};
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

const TEXT_OID: u32 = 25;
const INT8_OID: u32 = 20;
const OID_OID: u32 = 26;
/// Archive data is sent in CopyData messages of at most this many bytes.
const CHUNK: usize = 32 * 1024;
/// At most one progress message per this interval (PostgreSQL's 1 s).
const PROGRESS_INTERVAL: Duration = Duration::from_secs(1);

/// Files never sent (PostgreSQL 15's excludeFiles; `pg_internal.init` as a
/// prefix), wherever they are.
const EXCLUDE_FILES: &[&str] = &[
    "postgresql.auto.conf.tmp",
    "current_logfiles.tmp",
    "backup_label",
    "tablespace_map",
    "backup_manifest",
    "postmaster.pid",
    "postmaster.opts",
];
/// Directories sent empty (PostgreSQL 15's excludeDirContents), plus pg_wal,
/// whose WAL goes separately (and only its archive_status directory is made).
const EXCLUDE_DIR_CONTENTS: &[&str] =
    &["pg_stat_tmp", "pg_replslot", "pg_dynshmem", "pg_notify", "pg_serial", "pg_snapshots", "pg_subtrans"];
/// PostgreSQL's PG_TEMP_FILE_PREFIX: temporary files and directories are skipped.
const TEMP_PREFIX: &str = "pgsql_tmp";

/// MANIFEST_CHECKSUMS.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ChecksumKind {
    None,
    Crc32c,
    Sha224,
    Sha256,
    Sha384,
    Sha512,
}

impl ChecksumKind {
    fn name(self) -> &'static str {
        match self {
            ChecksumKind::None => "NONE",
            ChecksumKind::Crc32c => "CRC32C",
            ChecksumKind::Sha224 => "SHA224",
            ChecksumKind::Sha256 => "SHA256",
            ChecksumKind::Sha384 => "SHA384",
            ChecksumKind::Sha512 => "SHA512",
        }
    }
}

/// A running checksum of one file's bytes.
enum Checksum {
    None,
    Crc(u32),
    Sha(Box<ring::digest::Context>),
    Sha224(Box<sha2::Sha224>),
}

impl Checksum {
    fn new(kind: ChecksumKind) -> Checksum {
        use ring::digest::{Context, SHA256, SHA384, SHA512};
        match kind {
            ChecksumKind::None => Checksum::None,
            ChecksumKind::Crc32c => Checksum::Crc(0),
            ChecksumKind::Sha224 => Checksum::Sha224(Box::default()),
            ChecksumKind::Sha256 => Checksum::Sha(Box::new(Context::new(&SHA256))),
            ChecksumKind::Sha384 => Checksum::Sha(Box::new(Context::new(&SHA384))),
            ChecksumKind::Sha512 => Checksum::Sha(Box::new(Context::new(&SHA512))),
        }
    }
    fn update(&mut self, b: &[u8]) {
        match self {
            Checksum::None => {}
            Checksum::Crc(c) => *c = crc32c::crc32c_append(*c, b),
            Checksum::Sha(ctx) => ctx.update(b),
            Checksum::Sha224(h) => sha2::Digest::update(h.as_mut(), b),
        }
    }
    /// Lower-case hex of the checksum's bytes as PostgreSQL stores them (a
    /// CRC-32C in the machine's byte order, little-endian here).
    fn hex(self) -> Option<String> {
        match self {
            Checksum::None => None,
            Checksum::Crc(c) => Some(hex(&c.to_le_bytes())),
            Checksum::Sha(ctx) => Some(hex(ctx.finish().as_ref())),
            Checksum::Sha224(h) => Some(hex(&sha2::Digest::finalize(*h))),
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// BASE_BACKUP's options (PostgreSQL 15's names and checks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Options {
    label: String,
    progress: bool,
    fast: bool,
    wal: bool,
    manifest: Option<bool>, // None: no manifest; Some(force_encode)
    checksums: ChecksumKind,
    tablespace_map: bool,
    /// Bytes per second, 0: unlimited.
    max_rate: u64,
}

impl Options {
    pub(crate) fn parse(opts: Vec<(String, Option<String>)>) -> Result<Options, PgError> {
        let mut o = Options {
            label: "base backup".into(),
            progress: false,
            fast: false,
            wal: false,
            manifest: None,
            checksums: ChecksumKind::Crc32c,
            tablespace_map: false,
            max_rate: 0,
        };
        let mut seen: Vec<String> = Vec::new();
        let mut checksums_given = false;
        for (name, value) in opts {
            if seen.contains(&name) {
                return Err(PgError::error(b"42601", format!("duplicate option \"{name}\"")));
            }
            seen.push(name.clone());
            let string = |v: &Option<String>| -> Result<String, PgError> {
                v.clone().ok_or_else(|| PgError::error(b"42601", format!("{name} requires a parameter")))
            };
            match name.as_str() {
                "label" => o.label = string(&value)?,
                "progress" => o.progress = crate::walsender::bool_option(&name, &value)?,
                "checkpoint" => {
                    o.fast = match string(&value)?.to_ascii_lowercase().as_str() {
                        "fast" => true,
                        "spread" => false,
                        _ => {
                            return Err(PgError::error(
                                b"22023",
                                format!("unrecognized checkpoint type: \"{}\"", value.unwrap_or_default()),
                            ))
                        }
                    }
                }
                "wal" => o.wal = crate::walsender::bool_option(&name, &value)?,
                "wait" | "noverify_checksums" => {
                    crate::walsender::bool_option(&name, &value)?;
                }
                "max_rate" => {
                    let v = string(&value)?;
                    let n: i64 = v.parse().map_err(|_| PgError::error(b"42601", format!("{name} requires a numeric value")))?;
                    if n != 0 && !(32..=1_048_576).contains(&n) {
                        return Err(PgError::error(
                            b"22023",
                            format!("{n} is outside the valid range for parameter \"MAX_RATE\" (32 .. 1048576)"),
                        ));
                    }
                    o.max_rate = n as u64 * 1024;
                }
                "tablespace_map" => o.tablespace_map = crate::walsender::bool_option(&name, &value)?,
                "manifest" => {
                    let v = string(&value)?.to_ascii_lowercase();
                    o.manifest = match v.as_str() {
                        "force-encode" => Some(true),
                        _ => match crate::walsender::bool_option(&name, &Some(v.clone())) {
                            Ok(true) => Some(false),
                            Ok(false) => None,
                            Err(_) => {
                                return Err(PgError::error(
                                    b"22023",
                                    format!("unrecognized manifest option: \"{}\"", value.unwrap_or_default()),
                                ))
                            }
                        },
                    }
                }
                "manifest_checksums" => {
                    let v = string(&value)?;
                    checksums_given = true;
                    o.checksums = match v.to_ascii_uppercase().as_str() {
                        "NONE" => ChecksumKind::None,
                        "CRC32C" => ChecksumKind::Crc32c,
                        "SHA256" => ChecksumKind::Sha256,
                        "SHA384" => ChecksumKind::Sha384,
                        "SHA512" => ChecksumKind::Sha512,
                        "SHA224" => ChecksumKind::Sha224,
                        _ => return Err(PgError::error(b"22023", format!("unrecognized checksum algorithm: \"{v}\""))),
                    }
                }
                "target" => {
                    let v = string(&value)?;
                    if v != "client" {
                        return Err(PgError::error(b"0A000", format!("backup target \"{v}\" is not supported by ferrogres")));
                    }
                }
                "target_detail" => {
                    return Err(PgError::error(b"22023", "target detail cannot be used without target"));
                }
                "compression" | "compression_detail" => {
                    let v = string(&value)?;
                    if v != "none" {
                        return Err(PgError::error(b"0A000", "server-side compression is not supported by ferrogres"));
                    }
                }
                other => return Err(PgError::error(b"42601", format!("unrecognized base backup option: \"{other}\""))),
            }
        }
        if o.manifest.is_none() && checksums_given {
            return Err(PgError::error(b"42601", "manifest checksums require a backup manifest"));
        }
        Ok(o)
    }
}

fn field(name: &str, oid: u32) -> FieldInfo {
    let size = match oid {
        INT8_OID => 8,
        OID_OID => 4,
        _ => -1,
    };
    FieldInfo { name: name.into(), table_oid: 0, column_id: 0, type_oid: oid, type_size: size, type_modifier: -1, format: 0 }
}

/// The (recptr, tli) result set that starts and ends a backup.
fn send_lsn_result(io: &mut Io, lsn: Lsn) -> Result<(), PgError> {
    let mut sink = WireSink { io, in_execute: false };
    sink.row_description(&[field("recptr", TEXT_OID), field("tli", INT8_OID)])?;
    let (l, t) = (lsn.to_string(), TIMELINE.to_string());
    sink.data_row(&[Some(l.as_bytes()), Some(t.as_bytes())])?;
    sink.command_complete("SELECT")
}

/// Writes the archive bytes as CopyData messages ('d' + data), counts them for
/// progress reports, and holds the rate to MAX_RATE.
struct Out<'a> {
    io: &'a mut Io,
    interrupts: &'a Interrupts,
    buf: Vec<u8>,
    done: u64,
    started: Instant,
    max_rate: u64,
    progress: bool,
    last_progress: Instant,
}

impl Out<'_> {
    fn write(&mut self, mut b: &[u8]) -> Result<(), PgError> {
        while !b.is_empty() {
            let n = (CHUNK - self.buf.len()).min(b.len());
            self.buf.extend_from_slice(&b[..n]);
            b = &b[n..];
            if self.buf.len() == CHUNK {
                self.send_buf()?;
            }
        }
        Ok(())
    }

    fn send_buf(&mut self) -> Result<(), PgError> {
        if self.buf.len() <= 1 {
            return Ok(());
        }
        if self.interrupts.terminate_requested() {
            return Err(PgError::admin_shutdown());
        }
        self.io.send_raw(b'd', &self.buf)?;
        self.done += self.buf.len() as u64 - 1;
        self.buf.truncate(1);
        if self.max_rate > 0 {
            // Sleep until the bytes sent are within the rate (PostgreSQL's
            // throttling sleeps the same way, in short steps).
            let due = Duration::from_secs_f64(self.done as f64 / self.max_rate as f64);
            while self.started.elapsed() < due {
                self.io.flush()?;
                if self.interrupts.terminate_requested() {
                    return Err(PgError::admin_shutdown());
                }
                std::thread::sleep((due - self.started.elapsed()).min(Duration::from_millis(100)));
            }
        }
        if self.progress && self.last_progress.elapsed() >= PROGRESS_INTERVAL {
            self.send_progress()?;
        }
        Ok(())
    }

    fn send_progress(&mut self) -> Result<(), PgError> {
        self.last_progress = Instant::now();
        let mut m = vec![b'p'];
        m.extend_from_slice(&(self.done as i64).to_be_bytes());
        self.io.send_raw(b'd', &m)?;
        self.io.flush()
    }

    /// A CopyData message of its own (after what is buffered).
    fn message(&mut self, body: &[u8]) -> Result<(), PgError> {
        self.send_buf()?;
        self.io.send_raw(b'd', body)
    }
}

/// The manifest, written to a temporary file as the files are sent (one line
/// per file: a large cluster's manifest does not live in memory) and hashed
/// with SHA-256 as it goes.
struct Manifest {
    path: PathBuf,
    w: BufWriter<File>,
    sha: ring::digest::Context,
    first: bool,
    kind: ChecksumKind,
    force_encode: bool,
}

impl Manifest {
    fn new(dir: &Path, pid: i32, kind: ChecksumKind, force_encode: bool) -> Result<Manifest, PgError> {
        std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
        let path = dir.join(format!("{TEMP_PREFIX}{pid}.backup_manifest"));
        let f = File::create(&path).map_err(|e| io_error(&path, e))?;
        let mut m =
            Manifest { path, w: BufWriter::new(f), sha: ring::digest::Context::new(&ring::digest::SHA256), first: true, kind, force_encode };
        m.put("{ \"PostgreSQL-Backup-Manifest-Version\": 1,\n\"Files\": [")?;
        Ok(m)
    }

    fn put(&mut self, s: &str) -> Result<(), PgError> {
        self.sha.update(s.as_bytes());
        self.w.write_all(s.as_bytes()).map_err(|e| io_error(&self.path, e))
    }

    fn add(&mut self, path: &str, size: u64, mtime: SystemTime, sum: Checksum) -> Result<(), PgError> {
        let mut line = String::from(if self.first { "\n" } else { ",\n" });
        self.first = false;
        if self.force_encode {
            line.push_str(&format!("{{ \"Encoded-Path\": \"{}\", ", hex(path.as_bytes())));
        } else {
            line.push_str(&format!("{{ \"Path\": \"{}\", ", json_escape(path)));
        }
        line.push_str(&format!("\"Size\": {size}, \"Last-Modified\": \"{}\"", format_utc(mtime, "GMT")));
        if let Some(h) = sum.hex() {
            line.push_str(&format!(", \"Checksum-Algorithm\": \"{}\", \"Checksum\": \"{h}\"", self.kind.name()));
        }
        line.push_str(" }");
        self.put(&line)
    }

    /// Closes the file list, adds the WAL range and the manifest's own checksum,
    /// and sends it all ('m', then CopyData chunks).
    fn finish(mut self, out: &mut Out<'_>, start: Lsn, end: Lsn) -> Result<(), PgError> {
        self.put(&format!(
            "\n],\n\"WAL-Ranges\": [\n{{ \"Timeline\": {TIMELINE}, \"Start-LSN\": \"{start}\", \"End-LSN\": \"{end}\" }}\n],\n"
        ))?;
        let sum = hex(self.sha.clone().finish().as_ref());
        let last = format!("\"Manifest-Checksum\": \"{sum}\"}}\n");
        self.w.write_all(last.as_bytes()).map_err(|e| io_error(&self.path, e))?;
        self.w.flush().map_err(|e| io_error(&self.path, e))?;
        out.message(b"m")?;
        let mut f = File::open(&self.path).map_err(|e| io_error(&self.path, e))?;
        let mut buf = vec![0u8; CHUNK];
        buf[0] = b'd';
        loop {
            let n = f.read(&mut buf[1..]).map_err(|e| io_error(&self.path, e))?;
            if n == 0 {
                break;
            }
            out.message(&buf[..n + 1])?;
        }
        Ok(())
    }
}

impl Drop for Manifest {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn json_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o
}

fn io_error(path: &Path, e: std::io::Error) -> PgError {
    let code: &[u8; 5] = if e.kind() == std::io::ErrorKind::NotFound { b"58P01" } else { b"58030" };
    PgError::error(code, format!("could not access file \"{}\": {e}", path.display()))
}

/// A tar member header (ustar, as PostgreSQL's tarCreateHeader writes it:
/// octal numbers NUL-terminated, a directory's and a symlink's name ending in
/// '/' only for directories).
fn tar_header(name: &str, link: Option<&str>, size: u64, mode: u32, mtime: u64, kind: u8) -> Result<[u8; 512], PgError> {
    let mut h = [0u8; 512];
    let mut name = name.to_string();
    if kind == b'5' {
        name.push('/');
    }
    if name.len() > 99 {
        // PostgreSQL fails the same way: ustar's name field is 100 bytes.
        return Err(PgError::error(b"XX000", format!("file name too long for tar format: \"{name}\"")));
    }
    h[..name.len()].copy_from_slice(name.as_bytes());
    let num = |h: &mut [u8; 512], off: usize, len: usize, v: u64| {
        let s = format!("{:0width$o}", v, width = len - 1);
        h[off..off + len - 1].copy_from_slice(&s.as_bytes()[s.len() - (len - 1)..]);
    };
    num(&mut h, 100, 8, (mode & 0o7777) as u64);
    num(&mut h, 108, 8, 0); // uid
    num(&mut h, 116, 8, 0); // gid
    num(&mut h, 124, 12, size);
    num(&mut h, 136, 12, mtime);
    h[156] = kind;
    if let Some(l) = link {
        let n = l.len().min(99);
        h[157..157 + n].copy_from_slice(&l.as_bytes()[..n]);
    }
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    for (o, v) in [(265, "postgres"), (297, "postgres")] {
        h[o..o + v.len()].copy_from_slice(v.as_bytes());
    }
    num(&mut h, 329, 8, 0);
    num(&mut h, 337, 8, 0);
    // Checksum: the sum of the header's bytes with the field as spaces.
    h[148..156].fill(b' ');
    let sum: u32 = h.iter().map(|b| *b as u32).sum();
    let s = format!("{sum:06o}\0 ");
    h[148..156].copy_from_slice(s.as_bytes());
    Ok(h)
}

/// One backup in progress on a walsender connection.
struct Sender<'a> {
    datadir: PathBuf,
    out: Out<'a>,
    manifest: Option<Manifest>,
}

impl Sender<'_> {
    /// Sends a member with `content` (backup_label, tablespace_map, .done files).
    fn send_content(&mut self, name: &str, content: &[u8], mtime: SystemTime) -> Result<(), PgError> {
        let secs = mtime.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
        self.out.write(&tar_header(name, None, content.len() as u64, 0o600, secs, b'0')?)?;
        self.out.write(content)?;
        self.pad(content.len() as u64)?;
        if let Some(m) = &mut self.manifest {
            let mut sum = Checksum::new(m.kind);
            sum.update(content);
            m.add(name, content.len() as u64, mtime, sum)?;
        }
        Ok(())
    }

    fn pad(&mut self, size: u64) -> Result<(), PgError> {
        let rem = (512 - size % 512) % 512;
        self.out.write(&vec![0u8; rem as usize])
    }

    /// Sends the file at `rel` as it is now: its size when opened; a file that
    /// shrinks meanwhile is padded with zeros, one that grows is cut (WAL
    /// replay repairs both, as it repairs torn pages). A file gone before it
    /// is opened is skipped. `in_manifest`: WAL segments are not listed.
    fn send_file(&mut self, rel: &str, size_override: Option<u64>, in_manifest: bool) -> Result<(), PgError> {
        let path = self.datadir.join(rel);
        let mut f = match File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io_error(&path, e)),
        };
        let md = f.metadata().map_err(|e| io_error(&path, e))?;
        let size = size_override.unwrap_or(md.len());
        self.out.write(&tar_header(rel, None, size, md.permissions().mode(), md.mtime().max(0) as u64, b'0')?)?;
        let mut sum = Checksum::new(self.manifest.as_ref().map_or(ChecksumKind::None, |m| m.kind));
        let mut buf = vec![0u8; CHUNK];
        let mut left = size;
        while left > 0 {
            let want = (left as usize).min(CHUNK);
            let n = f.read(&mut buf[..want]).map_err(|e| io_error(&path, e))?;
            if n == 0 {
                // Shorter than at open: zeros for the rest.
                buf[..want].fill(0);
                sum.update(&buf[..want]);
                self.out.write(&buf[..want])?;
                left -= want as u64;
                continue;
            }
            sum.update(&buf[..n]);
            self.out.write(&buf[..n])?;
            left -= n as u64;
        }
        self.pad(size)?;
        if in_manifest {
            if let Some(m) = &mut self.manifest {
                m.add(rel, size, md.modified().unwrap_or(SystemTime::UNIX_EPOCH), sum)?;
            }
        }
        Ok(())
    }

    fn send_dir_entry(&mut self, rel: &str, md: &std::fs::Metadata) -> Result<(), PgError> {
        self.out.write(&tar_header(rel, None, 0, md.permissions().mode(), md.mtime().max(0) as u64, b'5')?)
    }

    /// Sends directory `rel` ("" for the data directory) and everything under
    /// it but the exclusions. `global/pg_control` is left for the caller.
    fn send_dir(&mut self, rel: &str) -> Result<(), PgError> {
        let dir = if rel.is_empty() { self.datadir.clone() } else { self.datadir.join(rel) };
        let rd = match std::fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(io_error(&dir, e)),
        };
        let mut names: Vec<String> = Vec::new();
        for e in rd {
            let e = e.map_err(|e| io_error(&dir, e))?;
            match e.file_name().into_string() {
                Ok(n) => names.push(n),
                Err(n) => {
                    return Err(PgError::error(b"58030", format!("file name \"{}\" is not valid UTF-8", n.to_string_lossy())))
                }
            }
        }
        names.sort();
        for name in names {
            let child = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
            if name.starts_with(TEMP_PREFIX) || EXCLUDE_FILES.contains(&name.as_str()) || name.starts_with("pg_internal.init") {
                continue;
            }
            if child == "global/pg_control" {
                continue;
            }
            let md = match std::fs::symlink_metadata(self.datadir.join(&child)) {
                Ok(md) => md,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(io_error(&self.datadir.join(&child), e)),
            };
            let ft = md.file_type();
            if ft.is_dir() {
                self.send_dir_entry(&child, &md)?;
                if child == "pg_wal" {
                    // Only pg_wal/archive_status (PostgreSQL's basebackup
                    // creates it so a restored server can archive).
                    let st = self.datadir.join("pg_wal/archive_status");
                    let md2 = std::fs::metadata(&st).unwrap_or(md.clone());
                    self.send_dir_entry("pg_wal/archive_status", &md2)?;
                    continue;
                }
                if EXCLUDE_DIR_CONTENTS.contains(&child.as_str()) {
                    continue;
                }
                self.send_dir(&child)?;
            } else if ft.is_symlink() {
                let target = std::fs::read_link(self.datadir.join(&child)).map_err(|e| io_error(&self.datadir.join(&child), e))?;
                let t = target.to_string_lossy().into_owned();
                self.out.write(&tar_header(&child, Some(&t), 0, 0o777, md.mtime().max(0) as u64, b'2')?)?;
            } else if ft.is_file() {
                self.send_file(&child, None, true)?;
            }
            // Sockets, fifos and devices are skipped, as PostgreSQL does.
        }
        Ok(())
    }
}

/// BASE_BACKUP on a walsender connection: start the backup, stream the base
/// archive (label first, pg_control last, then the WAL if asked), stop it,
/// send the manifest and the end location. The `Backup` guard ends the backup
/// however this returns.
pub(crate) fn base_backup(
    engine: &Arc<Engine>,
    io: &mut Io,
    opts: Options,
    pid: i32,
    interrupts: &Interrupts,
) -> Result<(), PgError> {
    let reg = engine.walsenders.register(pid);
    reg.set_state("backup");
    let backup = Backup::start(engine, &opts.label, opts.fast).map_err(engine_error)?;
    let datadir = engine.datadir().to_path_buf();
    send_lsn_result(io, backup.start)?;
    // The tablespace list: only the data directory's (ferrogres has no
    // tablespaces of its own), with its size in kB when PROGRESS asked for it.
    let total = if opts.progress { Some(dir_size(&datadir, "", interrupts)?) } else { None };
    {
        let mut sink = WireSink { io, in_execute: false };
        sink.row_description(&[field("spcoid", OID_OID), field("spclocation", TEXT_OID), field("size", INT8_OID)])?;
        let size = total.map(|t| (t / 1024).to_string());
        sink.data_row(&[None, None, size.as_deref().map(str::as_bytes)])?;
        sink.command_complete("SELECT")?;
    }
    // CopyOutResponse: one COPY stream for every archive and the manifest.
    io.send_raw(b'H', &[0, 0, 0])?;
    let manifest = match opts.manifest {
        Some(force) => Some(Manifest::new(&datadir.join("base").join(TEMP_PREFIX), pid, opts.checksums, force)?),
        None => None,
    };
    let now = Instant::now();
    let mut s = Sender {
        datadir: datadir.clone(),
        out: Out {
            io,
            interrupts,
            buf: vec![b'd'],
            done: 0,
            started: now,
            max_rate: opts.max_rate,
            progress: opts.progress,
            last_progress: now,
        },
        manifest,
    };
    // 'n': a new archive, its name and tablespace path ("" for the main one).
    s.out.message(b"nbase.tar\0\0")?;
    s.send_content(BACKUP_LABEL, backup.label_file.as_bytes(), SystemTime::now())?;
    if opts.tablespace_map {
        s.send_content(TABLESPACE_MAP, b"", SystemTime::now())?;
    }
    s.send_dir("")?;
    if !datadir.join("pg_tblspc").exists() {
        // ferrogres keeps no tablespaces, but PostgreSQL's data directory always
        // has pg_tblspc and pg_basebackup -Fp syncs it: an empty one.
        let md = std::fs::metadata(&datadir).map_err(|e| io_error(&datadir, e))?;
        s.send_dir_entry("pg_tblspc", &md)?;
    }
    // pg_control last, as PostgreSQL does: the copy is not started on before
    // recovery has reached the backup's end anyway (backup_label).
    s.send_file("global/pg_control", None, true)?;
    let end = backup.stop().map_err(engine_error)?;
    if opts.wal {
        let seg_size = engine.wal.segment_size();
        let first = backup.start.0 / seg_size;
        let last = (end.0 - 1) / seg_size;
        for seg in first..=last {
            let name = segment_file_name(TIMELINE, seg, seg_size);
            let rel = format!("pg_wal/{name}");
            if !datadir.join(&rel).exists() {
                return Err(PgError::error(b"58P01", format!("could not find WAL file \"{name}\"")));
            }
            s.send_file(&rel, Some(seg_size), false)?;
            s.send_content(&format!("pg_wal/archive_status/{name}.done"), b"", SystemTime::now())?;
        }
    }
    s.out.send_buf()?;
    s.out.send_progress()?;
    if let Some(m) = s.manifest.take() {
        m.finish(&mut s.out, backup.start, end)?;
    }
    let io = s.out.io;
    io.send_raw(b'c', &[])?;
    send_lsn_result(io, end)?;
    drop(backup);
    drop(reg);
    Ok(())
}

/// The bytes BASE_BACKUP will send of directory `rel` (for PROGRESS): files
/// and 512-byte headers, before exclusions of contents (an estimate, as
/// PostgreSQL's is).
fn dir_size(datadir: &Path, rel: &str, interrupts: &Interrupts) -> Result<u64, PgError> {
    let dir = datadir.join(rel);
    let mut total = 0;
    let rd = match std::fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(_) => return Ok(0),
    };
    for e in rd.flatten() {
        if interrupts.terminate_requested() {
            return Err(PgError::admin_shutdown());
        }
        let name = e.file_name().to_string_lossy().into_owned();
        let child = if rel.is_empty() { name.clone() } else { format!("{rel}/{name}") };
        if name.starts_with(TEMP_PREFIX) || child == "pg_wal" || EXCLUDE_DIR_CONTENTS.contains(&child.as_str()) {
            total += 512;
            continue;
        }
        match e.metadata() {
            Ok(md) if md.is_dir() => total += 512 + dir_size(datadir, &child, interrupts)?,
            Ok(md) => total += 512 + md.len().div_ceil(512) * 512,
            Err(_) => {}
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tar_headers_like_postgresql() {
        let h = tar_header("global/1262", None, 8192, 0o100600, 0o14000000000, b'0').unwrap();
        assert_eq!(&h[..11], b"global/1262");
        assert_eq!(&h[100..108], b"0000600\0");
        assert_eq!(&h[124..136], b"00000020000\0");
        assert_eq!(&h[257..265], b"ustar\x0000");
        let d = tar_header("pg_wal", None, 0, 0o40700, 0, b'5').unwrap();
        assert_eq!(&d[..7], b"pg_wal/");
        assert_eq!(d[156], b'5');
        // The checksum is the byte sum with its own field as spaces.
        let mut c = d;
        c[148..156].fill(b' ');
        let sum: u32 = c.iter().map(|b| *b as u32).sum();
        assert_eq!(&d[148..156], format!("{sum:06o}\0 ").as_bytes());
    }

    #[test]
    fn options_and_their_errors() {
        let o = |v: &[(&str, Option<&str>)]| {
            Options::parse(v.iter().map(|(k, v)| (k.to_string(), v.map(str::to_string))).collect())
        };
        let ok = o(&[("label", Some("x")), ("progress", None), ("checkpoint", Some("fast")), ("wait", Some("0")), ("manifest", Some("yes"))]).unwrap();
        assert!(ok.progress && ok.fast && ok.manifest == Some(false) && ok.label == "x");
        assert_eq!(o(&[("label", Some("a")), ("label", Some("b"))]).unwrap_err().message, "duplicate option \"label\"");
        assert_eq!(o(&[("checkpoint", Some("slow"))]).unwrap_err().message, "unrecognized checkpoint type: \"slow\"");
        assert_eq!(o(&[("manifest", Some("maybe"))]).unwrap_err().message, "unrecognized manifest option: \"maybe\"");
        assert_eq!(o(&[("max_rate", Some("5"))]).unwrap_err().code, *b"22023");
        assert_eq!(o(&[("foo", None)]).unwrap_err().message, "unrecognized base backup option: \"foo\"");
        assert_eq!(o(&[("manifest_checksums", Some("md5")), ("manifest", Some("yes"))]).unwrap_err().message, "unrecognized checksum algorithm: \"md5\"");
    }

    #[test]
    fn crc32c_hex_in_postgresql_byte_order() {
        // PostgreSQL 15's manifest gave "00000000" for an empty file and
        // "8a744722" for PG_VERSION ("15\n").
        let mut c = Checksum::new(ChecksumKind::Crc32c);
        c.update(b"15\n");
        assert_eq!(c.hex().unwrap(), "8a744722");
        assert_eq!(Checksum::new(ChecksumKind::Crc32c).hex().unwrap(), "00000000");
    }
}
