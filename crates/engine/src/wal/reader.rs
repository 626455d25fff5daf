//! Reading the WAL back: records in order from an LSN, each validated (page headers,
//! continuation lengths, record length, xl_prev chain, CRC). The first invalid record
//! is the end of the WAL: a torn or damaged tail is not an error, it is where the log
//! stops (as in PostgreSQL, a damaged record in the middle also ends it).

use std::fs::File;
use std::io::ErrorKind;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::layout::*;
use super::record::{decode_record, record_crc_ok, DecodedRecord, RecordHeader, MAX_RECORD_SIZE, RECORD_HEADER_SIZE};
use crate::error::{Error, Result};
use crate::storage::Lsn;

/// Sequential reader over the segment files of `pg_wal/`.
pub struct WalReader {
    dir: PathBuf,
    seg_size: u64,
    file: Option<(u64, File)>,
    page: Vec<u8>,
    /// LSN of the page in `page`, if any.
    page_addr: Option<u64>,
    /// Where the next record should start.
    next: Lsn,
    /// Start of the last record returned (its successor's xl_prev must equal it).
    prev: Option<Lsn>,
    /// End of the last valid record read (the start position if none yet).
    end_of_valid: Lsn,
    end_reason: Option<String>,
    /// Archive recovery: called with a segment's file name before the reader
    /// opens it (restore_command fetches it into pg_wal if the archive has it).
    restore: Option<RestoreFn>,
}

/// See `WalReader::with_restore`.
pub type RestoreFn = Box<dyn FnMut(&str) + Send>;

enum Invalid {
    /// The WAL ends here; the string says why.
    End(String),
}

/// Continuation whose length cannot be checked yet (record header split).
const ANY_REM: u64 = u64::MAX;

type Step<T> = std::result::Result<T, Invalid>;

fn end<T>(why: String) -> Result<Step<T>> {
    Ok(Err(Invalid::End(why)))
}

impl WalReader {
    /// A reader positioned at `start`, which must be the start of a record.
    /// `prev`, if known, is the start of the record before it (to check xl_prev).
    pub fn new(pg_wal: &Path, seg_size: u64, start: Lsn, prev: Option<Lsn>) -> WalReader {
        WalReader {
            dir: pg_wal.to_path_buf(),
            seg_size,
            file: None,
            page: vec![0; WAL_PAGE_SIZE as usize],
            page_addr: None,
            next: normalize_start(start),
            prev,
            end_of_valid: start,
            end_reason: None,
            restore: None,
        }
    }

    /// Fetches each segment through `f(file name)` before opening it
    /// (archive recovery: the archive's copy is preferred, as PostgreSQL does).
    pub fn with_restore(mut self, f: RestoreFn) -> WalReader {
        self.restore = Some(f);
        self
    }

    /// End of the last valid record read: where the WAL ends once `next_record`
    /// returned `None`.
    pub fn end_of_valid(&self) -> Lsn {
        self.end_of_valid
    }

    /// Start of the last valid record read.
    pub fn last_record(&self) -> Option<Lsn> {
        self.prev
    }

    /// Why reading stopped (after `next_record` returned `None`).
    pub fn end_reason(&self) -> Option<&str> {
        self.end_reason.as_deref()
    }

    /// The next valid record, or `None` at the end of the valid WAL. I/O errors other
    /// than a missing or short segment file are errors.
    pub fn next_record(&mut self) -> Result<Option<DecodedRecord>> {
        if self.end_reason.is_some() {
            return Ok(None);
        }
        let start = self.next;
        match self.read_at(start)? {
            Ok((bytes, end_lsn)) => {
                let rec = match decode_record(&bytes, start, end_lsn) {
                    Ok(r) => r,
                    Err(e) => {
                        self.end_reason = Some(e.to_string());
                        return Ok(None);
                    }
                };
                self.prev = Some(start);
                self.end_of_valid = end_lsn;
                if rec.rmgr == super::record::RmgrId::Xlog && rec.info == super::record::XLOG_SWITCH {
                    // The rest of the segment is unused: the WAL goes on at the
                    // next segment's start.
                    let seg_end = (segno(start.0, self.seg_size) + 1) * self.seg_size;
                    self.end_of_valid = Lsn(seg_end);
                }
                self.next = normalize_start(self.end_of_valid);
                Ok(Some(rec))
            }
            Err(Invalid::End(why)) => {
                self.end_reason = Some(why);
                Ok(None)
            }
        }
    }

    /// Loads the WAL page starting at `addr` into `self.page` and checks its header.
    /// `cont`: Some(remaining) if a record continues onto this page.
    fn load_page(&mut self, addr: u64, cont: Option<u64>) -> Result<Step<()>> {
        if self.page_addr != Some(addr) {
            self.page_addr = None;
            let seg = segno(addr, self.seg_size);
            if self.file.as_ref().map(|f| f.0) != Some(seg) {
                self.file = None;
                let name = segment_file_name(TIMELINE, seg, self.seg_size);
                if let Some(f) = self.restore.as_mut() {
                    f(&name);
                }
                let path = self.dir.join(name);
                match File::open(&path) {
                    Ok(f) => self.file = Some((seg, f)),
                    Err(e) if e.kind() == ErrorKind::NotFound => {
                        return end(format!("segment file {} missing", path.display()))
                    }
                    Err(e) => return Err(Error::io(path.display(), e)),
                }
            }
            let f = &self.file.as_ref().unwrap().1;
            match f.read_exact_at(&mut self.page, addr % self.seg_size) {
                Ok(()) => self.page_addr = Some(addr),
                Err(e) if e.kind() == ErrorKind::UnexpectedEof => {
                    return end(format!("short segment file at {}", Lsn(addr)))
                }
                Err(e) => return Err(Error::io(format!("WAL segment at {}", Lsn(addr)), e)),
            }
        }
        let h = PageHeader::decode(&self.page);
        if h.magic != WAL_PAGE_MAGIC {
            return end(format!("invalid magic number {:04X} in WAL page at {}", h.magic, Lsn(addr)));
        }
        if h.pageaddr != addr {
            return end(format!("unexpected pageaddr {} in WAL page at {}", Lsn(h.pageaddr), Lsn(addr)));
        }
        if h.tli != TIMELINE || h.info & !XLP_ALL_FLAGS != 0 {
            return end(format!("invalid page header at {}", Lsn(addr)));
        }
        let is_cont = h.info & XLP_FIRST_IS_CONTRECORD != 0;
        match cont {
            Some(rem) => {
                if !is_cont || (rem != ANY_REM && h.rem_len as u64 != rem) {
                    return end(format!("missing or wrong continuation record at {}", Lsn(addr)));
                }
            }
            None => {
                if is_cont && self.next.0 == addr + PAGE_HEADER_SIZE {
                    return end(format!("record expected but continuation found at {}", Lsn(addr)));
                }
            }
        }
        Ok(Ok(()))
    }

    fn read_at(&mut self, start: Lsn) -> Result<Step<(Vec<u8>, Lsn)>> {
        let mut pos = start.0;
        if pos % WAL_PAGE_SIZE < PAGE_HEADER_SIZE || pos % RECORD_ALIGN != 0 {
            return end(format!("invalid record position {start}"));
        }
        if let Err(e) = self.load_page(pos - pos % WAL_PAGE_SIZE, None)? {
            return Ok(Err(e));
        }
        let mut buf: Vec<u8> = Vec::with_capacity(RECORD_HEADER_SIZE);
        let mut need = RECORD_HEADER_SIZE;
        let mut have_len = false;
        let mut split_check: Option<(u64, usize)> = None;
        loop {
            let off = pos % WAL_PAGE_SIZE;
            if off == 0 {
                // Crossing into the next page: it must continue this record, with the
                // remaining length in its header (checked once the length is known
                // if the record header itself is split).
                let rem = if have_len { (need - buf.len()) as u64 } else { ANY_REM };
                if let Err(e) = self.load_page(pos, Some(rem))? {
                    return Ok(Err(e));
                }
                if !have_len {
                    split_check = Some((PageHeader::decode(&self.page).rem_len as u64, buf.len()));
                }
                pos += PAGE_HEADER_SIZE;
                continue;
            }
            let avail = (WAL_PAGE_SIZE - off) as usize;
            let n = avail.min(need - buf.len());
            buf.extend_from_slice(&self.page[off as usize..off as usize + n]);
            pos += n as u64;
            if buf.len() == RECORD_HEADER_SIZE && !have_len {
                let h = RecordHeader::decode(&buf);
                let len = h.tot_len as usize;
                if !(RECORD_HEADER_SIZE..=MAX_RECORD_SIZE).contains(&len) {
                    return end(format!("invalid record length {len} at {start}"));
                }
                if let Some(p) = self.prev {
                    if h.prev != p {
                        return end(format!("record at {start} has incorrect prev-link {}", h.prev));
                    }
                }
                if let Some((rem, before)) = split_check {
                    if rem != (len - before) as u64 {
                        return end(format!("wrong continuation length for record at {start}"));
                    }
                }
                have_len = true;
                need = len;
                buf.reserve(len.min(1 << 20));
            }
            if have_len && buf.len() == need {
                break;
            }
        }
        if !record_crc_ok(&buf) {
            return end(format!("incorrect resource manager data checksum in record at {start}"));
        }
        // The record ends, like the insert position, after its alignment padding.
        Ok(Ok((buf, Lsn(align_record(pos)))))
    }
}
