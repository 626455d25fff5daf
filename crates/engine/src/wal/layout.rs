//! WAL page layout and position arithmetic. See docs/format/wal.md.
//!
//! Every WAL page (8 kB) starts with a 24-byte page header:
//!
//! ```text
//! offset size field
//!      0    2 xlp_magic     u16 LE: WAL_PAGE_MAGIC
//!      2    2 xlp_info      u16 LE: flags (XLP_FIRST_IS_CONTRECORD, ...)
//!      4    4 xlp_tli       u32 LE: timeline
//!      8    8 xlp_pageaddr  u64 LE: LSN of the first byte of this page
//!     16    4 xlp_rem_len   u32 LE: bytes of a continued record on this page and later
//!     20    4 reserved      zero
//! ```
//!
//! A *usable byte position* counts only the bytes after page headers; an LSN counts
//! every byte. Records start at 8-byte aligned usable positions; because the header is
//! 24 bytes and a page 8192, that is also 8-byte alignment of LSNs.

use crate::storage::Lsn;

/// Size of a WAL page (PostgreSQL's XLOG_BLCKSZ).
pub const WAL_PAGE_SIZE: u64 = 8192;
/// Size of the page header at the start of every WAL page.
pub const PAGE_HEADER_SIZE: u64 = 24;
/// Usable bytes per WAL page.
pub const USABLE_PER_PAGE: u64 = WAL_PAGE_SIZE - PAGE_HEADER_SIZE;
/// Magic number of a WAL page header ("FW" for ferrogres WAL, format version 1).
pub const WAL_PAGE_MAGIC: u16 = 0xF701;
/// The page begins with the continuation of a record started on an earlier page.
pub const XLP_FIRST_IS_CONTRECORD: u16 = 0x0001;
/// All flag bits a valid page may carry.
pub const XLP_ALL_FLAGS: u16 = XLP_FIRST_IS_CONTRECORD;
/// Record alignment (PostgreSQL's MAXALIGN).
pub const RECORD_ALIGN: u64 = 8;
/// The timeline we write (no point-in-time recovery yet: always 1).
pub const TIMELINE: u32 = 1;

/// Rounds `n` up to the record alignment.
#[inline]
pub fn align_record(n: u64) -> u64 {
    (n + RECORD_ALIGN - 1) & !(RECORD_ALIGN - 1)
}

/// The LSN at which a record starting at usable position `pos` starts (never on a page
/// header: a position at a page boundary maps to just after that page's header).
#[inline]
pub fn bytepos_to_lsn(pos: u64) -> Lsn {
    let page = pos / USABLE_PER_PAGE;
    let off = pos % USABLE_PER_PAGE;
    Lsn(page * WAL_PAGE_SIZE + PAGE_HEADER_SIZE + off)
}

/// The LSN at which a record ending at usable position `pos` ends: like
/// [`bytepos_to_lsn`], except that an end exactly at a page boundary is that boundary
/// (the next page's header is not part of the record).
#[inline]
pub fn bytepos_to_end_lsn(pos: u64) -> Lsn {
    let page = pos / USABLE_PER_PAGE;
    let off = pos % USABLE_PER_PAGE;
    if off == 0 && page > 0 {
        Lsn(page * WAL_PAGE_SIZE)
    } else {
        Lsn(page * WAL_PAGE_SIZE + PAGE_HEADER_SIZE + off)
    }
}

/// The usable position of `lsn`; `None` if it points into a page header (other than
/// exactly at the page boundary, which counts as the position of the page's first
/// usable byte).
#[inline]
pub fn lsn_to_bytepos(lsn: Lsn) -> Option<u64> {
    let page = lsn.0 / WAL_PAGE_SIZE;
    let off = lsn.0 % WAL_PAGE_SIZE;
    if off == 0 {
        Some(page * USABLE_PER_PAGE)
    } else if off < PAGE_HEADER_SIZE {
        None
    } else {
        Some(page * USABLE_PER_PAGE + off - PAGE_HEADER_SIZE)
    }
}

/// A record-start LSN normalized: a page boundary becomes the first byte after the
/// page header.
#[inline]
pub fn normalize_start(lsn: Lsn) -> Lsn {
    if lsn.0 % WAL_PAGE_SIZE == 0 {
        Lsn(lsn.0 + PAGE_HEADER_SIZE)
    } else {
        lsn
    }
}

/// Segment number holding `lsn`.
#[inline]
pub fn segno(lsn: u64, seg_size: u64) -> u64 {
    lsn / seg_size
}

/// PostgreSQL's segment file name: 24 hex digits, timeline, "log" and "seg".
pub fn segment_file_name(tli: u32, segno: u64, seg_size: u64) -> String {
    let per_id = 0x1_0000_0000u64 / seg_size;
    format!("{:08X}{:08X}{:08X}", tli, segno / per_id, segno % per_id)
}

/// Parses a segment file name back into (timeline, segno).
pub fn parse_segment_file_name(name: &str, seg_size: u64) -> Option<(u32, u64)> {
    if name.len() != 24 || !name.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let tli = u32::from_str_radix(&name[0..8], 16).ok()?;
    let log = u64::from_str_radix(&name[8..16], 16).ok()?;
    let seg = u64::from_str_radix(&name[16..24], 16).ok()?;
    let per_id = 0x1_0000_0000u64 / seg_size;
    if seg >= per_id {
        return None;
    }
    Some((tli, log * per_id + seg))
}

/// A decoded WAL page header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageHeader {
    pub magic: u16,
    pub info: u16,
    pub tli: u32,
    pub pageaddr: u64,
    pub rem_len: u32,
}

impl PageHeader {
    pub fn encode(&self, out: &mut [u8]) {
        out[0..2].copy_from_slice(&self.magic.to_le_bytes());
        out[2..4].copy_from_slice(&self.info.to_le_bytes());
        out[4..8].copy_from_slice(&self.tli.to_le_bytes());
        out[8..16].copy_from_slice(&self.pageaddr.to_le_bytes());
        out[16..20].copy_from_slice(&self.rem_len.to_le_bytes());
        out[20..24].copy_from_slice(&[0; 4]);
    }

    pub fn decode(b: &[u8]) -> PageHeader {
        PageHeader {
            magic: u16::from_le_bytes([b[0], b[1]]),
            info: u16::from_le_bytes([b[2], b[3]]),
            tli: u32::from_le_bytes(b[4..8].try_into().unwrap()),
            pageaddr: u64::from_le_bytes(b[8..16].try_into().unwrap()),
            rem_len: u32::from_le_bytes(b[16..20].try_into().unwrap()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_round_trip_and_skip_headers() {
        assert_eq!(bytepos_to_lsn(0), Lsn(24));
        assert_eq!(bytepos_to_lsn(USABLE_PER_PAGE), Lsn(8192 + 24));
        assert_eq!(bytepos_to_end_lsn(USABLE_PER_PAGE), Lsn(8192));
        assert_eq!(bytepos_to_end_lsn(0), Lsn(24));
        for pos in [0, 8, 8160, 8168, 8176, 100_000, 16 * 1024 * 1024] {
            let l = bytepos_to_lsn(pos);
            assert_eq!(lsn_to_bytepos(l), Some(pos));
            assert_eq!(lsn_to_bytepos(bytepos_to_end_lsn(pos)), Some(pos));
        }
        assert_eq!(lsn_to_bytepos(Lsn(8192 + 3)), None);
        assert_eq!(USABLE_PER_PAGE % RECORD_ALIGN, 0);
    }

    #[test]
    fn segment_names_like_postgresql() {
        let ss = 16 * 1024 * 1024;
        assert_eq!(segment_file_name(1, 1, ss), "000000010000000000000001");
        assert_eq!(segment_file_name(1, 256 + 0x2A, ss), "00000001000000010000002A");
        assert_eq!(parse_segment_file_name("00000001000000010000002A", ss), Some((1, 256 + 0x2A)));
        assert_eq!(parse_segment_file_name("00000001000000010000012A", ss), None);
        assert_eq!(parse_segment_file_name("xyz", ss), None);
    }
}
