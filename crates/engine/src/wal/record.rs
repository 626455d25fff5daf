//! WAL records: building (the caller's side of XLogInsert), encoding and decoding.
//! Byte layout in docs/format/wal.md.

use crate::config::BLCKSZ;
use crate::error::{Error, Result};
use crate::storage::page::{page_lsn, PAGE_HEADER_SIZE as PAGE_HDR, PD_LOWER, PD_UPPER};
use crate::storage::{BlockNumber, BufferTag, ForkNumber, Lsn, RelFileLocator};

/// Size of the record header.
pub const RECORD_HEADER_SIZE: usize = 24;
/// Largest record accepted (PostgreSQL's limit is 1020 MB; ours is smaller so that a
/// damaged length cannot make the reader allocate much).
pub const MAX_RECORD_SIZE: usize = 256 * 1024 * 1024;
/// Block references per record (PostgreSQL's XLR_MAX_BLOCK_ID + 1).
pub const MAX_BLOCKS: usize = 32;

/// Resource managers: who owns a record and redoes it. The id space only; each module
/// defines its own `info` codes (high nibble) and record bodies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum RmgrId {
    /// Checkpoints, and other records of the WAL itself.
    Xlog = 0,
    /// Transaction commit / abort.
    Xact = 1,
    /// Relation file creation / truncation.
    Smgr = 2,
    /// Commit log (CLOG) page zeroing / truncation.
    Clog = 3,
    Database = 4,
    Tablespace = 5,
    MultiXact = 6,
    RelMap = 7,
    Standby = 8,
    Heap2 = 9,
    Heap = 10,
    Btree = 11,
    Hash = 12,
    Gin = 13,
    Gist = 14,
    Sequence = 15,
    SpGist = 16,
    Brin = 17,
    /// Records written by tests and benchmarks.
    Test = 255,
}

impl RmgrId {
    pub fn from_u8(v: u8) -> Option<RmgrId> {
        use RmgrId::*;
        Some(match v {
            0 => Xlog,
            1 => Xact,
            2 => Smgr,
            3 => Clog,
            4 => Database,
            5 => Tablespace,
            6 => MultiXact,
            7 => RelMap,
            8 => Standby,
            9 => Heap2,
            10 => Heap,
            11 => Btree,
            12 => Hash,
            13 => Gin,
            14 => Gist,
            15 => Sequence,
            16 => SpGist,
            17 => Brin,
            255 => Test,
            _ => return None,
        })
    }
}

/// Flags for [`RecordBuilder::register_buffer`] (PostgreSQL's REGBUF_*).
pub mod regbuf {
    /// Always log a full-page image.
    pub const FORCE_IMAGE: u8 = 0x01;
    /// Never log a full-page image (the redo does not need the page's old content).
    pub const NO_IMAGE: u8 = 0x02;
    /// Redo reinitializes the page from scratch; implies NO_IMAGE.
    pub const WILL_INIT: u8 = 0x04 | NO_IMAGE;
    /// The page has the standard layout: the hole between pd_lower and pd_upper may
    /// be left out of an image.
    pub const STANDARD: u8 = 0x08;
}

// Block-reference flag byte: low 4 bits fork number, then:
const BKP_HAS_IMAGE: u8 = 0x10;
const BKP_HAS_DATA: u8 = 0x20;
const BKP_WILL_INIT: u8 = 0x40;
const BKP_SAME_REL: u8 = 0x80;
// Image flag byte:
const BIMG_HAS_HOLE: u8 = 0x01;

struct BlockReg<'a> {
    id: u8,
    tag: BufferTag,
    page: Option<&'a [u8]>,
    flags: u8,
    data: Vec<u8>,
}

/// A record being built: resource manager, info, xid, block references and main data.
/// Pages are borrowed: the caller holds each page's content lock (exclusive) from
/// registering until it has set the page LSN to the returned end LSN.
pub struct RecordBuilder<'a> {
    rmgr: RmgrId,
    info: u8,
    xid: u32,
    blocks: Vec<BlockReg<'a>>,
    main: Vec<u8>,
}

/// A record assembled for given redo pointer / full_page_writes: everything but
/// xl_prev and the CRC, which are known only once space is reserved. Page images
/// are not copied: they stay borrowed from the registered pages (whose content
/// locks the caller holds) until the record is copied into the WAL buffers, as
/// PostgreSQL's rdata chain does.
pub(crate) struct Assembled<'a> {
    /// The record without its images.
    pub(crate) bytes: Vec<u8>,
    /// The image pieces, each inserted before `bytes[at..]`, in order (an image
    /// with a hole is two pieces at the same position).
    pub(crate) images: Vec<(usize, &'a [u8])>,
    /// Total length of the record: `bytes` plus the image pieces.
    pub(crate) len: usize,
    /// CRC-32C of the record after its header.
    pub(crate) payload_crc: u32,
    /// Bit i set: block reference i carries an image.
    pub(crate) image_mask: u64,
}

impl<'a> Assembled<'a> {
    /// The record's pieces in order: runs of `bytes` and image pieces.
    pub(crate) fn chunks(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let mut from = 0;
        let mut images = self.images.iter();
        let mut pending: Option<&[u8]> = None;
        std::iter::from_fn(move || loop {
            if let Some(img) = pending.take() {
                return Some(img);
            }
            match images.next() {
                Some(&(at, img)) => {
                    pending = Some(img);
                    if at > from {
                        let run = &self.bytes[from..at];
                        from = at;
                        return Some(run);
                    }
                }
                None if from < self.bytes.len() => {
                    let run = &self.bytes[from..];
                    from = self.bytes.len();
                    return Some(run);
                }
                None => return None,
            }
        })
    }

    /// The whole record in one buffer (tests, and readers of a record just built).
    #[cfg(test)]
    pub(crate) fn to_vec(&self) -> Vec<u8> {
        self.chunks().flat_map(|c| c.iter().copied()).collect()
    }
}

impl<'a> RecordBuilder<'a> {
    pub fn new(rmgr: RmgrId, info: u8) -> Self {
        RecordBuilder { rmgr, info, xid: 0, blocks: Vec::new(), main: Vec::new() }
    }

    pub fn set_xid(&mut self, xid: u32) -> &mut Self {
        self.xid = xid;
        self
    }

    /// References a page the record changes. `page` is the page as it is now (before
    /// or after the change: PostgreSQL logs it after), used for the full-page image
    /// decision (its LSN against the redo pointer) and for the image itself.
    pub fn register_buffer(&mut self, block_id: u8, tag: BufferTag, page: &'a [u8], flags: u8) -> &mut Self {
        assert_eq!(page.len(), BLCKSZ, "register_buffer: page must be BLCKSZ bytes");
        self.push_block(block_id, tag, Some(page), flags)
    }

    /// References a block without its page (no image can be taken): for pages the
    /// redo re-creates (`regbuf::WILL_INIT`).
    pub fn register_block(&mut self, block_id: u8, tag: BufferTag, flags: u8) -> &mut Self {
        self.push_block(block_id, tag, None, flags | regbuf::NO_IMAGE)
    }

    fn push_block(&mut self, block_id: u8, tag: BufferTag, page: Option<&'a [u8]>, flags: u8) -> &mut Self {
        assert!((block_id as usize) < MAX_BLOCKS, "block id {block_id} too large");
        assert!(
            !matches!(self.blocks.last(), Some(b) if b.id >= block_id),
            "block ids must be registered in increasing order"
        );
        self.blocks.push(BlockReg { id: block_id, tag, page, flags, data: Vec::new() });
        self
    }

    /// Appends per-block data to a registered block (at most 64 kB). Redo always gets
    /// it, image or not; it is the redo routine's choice whether to use it when it
    /// restores an image.
    pub fn register_block_data(&mut self, block_id: u8, data: &[u8]) -> &mut Self {
        let b = self.blocks.iter_mut().find(|b| b.id == block_id).expect("block not registered");
        b.data.extend_from_slice(data);
        assert!(b.data.len() <= u16::MAX as usize, "per-block data over 64 kB");
        self
    }

    /// Appends to the main data.
    pub fn append_main_data(&mut self, data: &[u8]) -> &mut Self {
        self.main.extend_from_slice(data);
        self
    }

    /// Whether block `b` gets an image given the redo pointer and full_page_writes.
    fn needs_image(b: &BlockReg<'_>, redo: Lsn, fpw: bool) -> bool {
        let Some(page) = b.page else { return false };
        if b.flags & regbuf::FORCE_IMAGE != 0 {
            return true;
        }
        if b.flags & regbuf::NO_IMAGE != 0 || !fpw {
            return false;
        }
        page_lsn(page) <= redo
    }

    pub(crate) fn image_mask(&self, redo: Lsn, fpw: bool) -> u64 {
        let mut m = 0;
        for (i, b) in self.blocks.iter().enumerate() {
            if Self::needs_image(b, redo, fpw) {
                m |= 1 << i;
            }
        }
        m
    }

    /// Encodes the record (xl_prev and xl_crc left zero).
    pub(crate) fn assemble(&self, redo: Lsn, fpw: bool) -> Result<Assembled<'a>> {
        let data: usize = self.blocks.iter().map(|b| b.data.len() + 24).sum();
        let mut out = Vec::with_capacity(RECORD_HEADER_SIZE + data + self.main.len());
        out.resize(RECORD_HEADER_SIZE, 0);
        let mut images: Vec<(usize, &'a [u8])> = Vec::new();
        let mut image_len = 0;
        let mut mask = 0;
        let mut prev_rel: Option<RelFileLocator> = None;
        for (i, b) in self.blocks.iter().enumerate() {
            let image = Self::needs_image(b, redo, fpw);
            let mut fl = b.tag.fork as u8;
            if image {
                fl |= BKP_HAS_IMAGE;
                mask |= 1 << i;
            }
            if !b.data.is_empty() {
                fl |= BKP_HAS_DATA;
            }
            if b.flags & 0x04 != 0 {
                fl |= BKP_WILL_INIT;
            }
            if prev_rel == Some(b.tag.rel) {
                fl |= BKP_SAME_REL;
            }
            out.push(b.id);
            out.push(fl);
            out.extend_from_slice(&(b.data.len() as u16).to_le_bytes());
            let mut hole = (0usize, 0usize);
            if image {
                let page = b.page.unwrap();
                if b.flags & regbuf::STANDARD != 0 {
                    let lower = u16::from_le_bytes([page[PD_LOWER], page[PD_LOWER + 1]]) as usize;
                    let upper = u16::from_le_bytes([page[PD_UPPER], page[PD_UPPER + 1]]) as usize;
                    if lower >= PAGE_HDR && lower < upper && upper <= BLCKSZ {
                        hole = (lower, upper - lower);
                    }
                }
                let stored = BLCKSZ - hole.1;
                out.extend_from_slice(&(stored as u16).to_le_bytes());
                out.extend_from_slice(&(hole.0 as u16).to_le_bytes());
                out.push(if hole.1 > 0 { BIMG_HAS_HOLE } else { 0 });
                out.push(0);
            }
            if fl & BKP_SAME_REL == 0 {
                out.extend_from_slice(&b.tag.rel.spc_oid.to_le_bytes());
                out.extend_from_slice(&b.tag.rel.db_oid.to_le_bytes());
                out.extend_from_slice(&b.tag.rel.rel_number.to_le_bytes());
            }
            out.extend_from_slice(&b.tag.block.to_le_bytes());
            if image {
                let page: &'a [u8] = b.page.unwrap();
                images.push((out.len(), &page[..hole.0]));
                images.push((out.len(), &page[hole.0 + hole.1..]));
                image_len += BLCKSZ - hole.1;
            }
            out.extend_from_slice(&b.data);
            prev_rel = Some(b.tag.rel);
        }
        out.extend_from_slice(&self.main);
        let total = out.len() + image_len;
        if total > MAX_RECORD_SIZE {
            return Err(Error::user(
                crate::SqlState::PROGRAM_LIMIT_EXCEEDED,
                format!("WAL record of {total} bytes is too large"),
            ));
        }
        out[0..4].copy_from_slice(&(total as u32).to_le_bytes());
        out[4..8].copy_from_slice(&self.xid.to_le_bytes());
        out[16] = self.info;
        out[17] = self.rmgr as u8;
        out[18] = self.blocks.len() as u8;
        let mut a = Assembled { bytes: out, images, len: total, payload_crc: 0, image_mask: mask };
        // The header is the first RECORD_HEADER_SIZE bytes of the first chunk.
        let mut crc = 0;
        let mut skip = RECORD_HEADER_SIZE;
        for c in a.chunks() {
            let k = skip.min(c.len());
            skip -= k;
            crc = crc32c::crc32c_append(crc, &c[k..]);
        }
        a.payload_crc = crc;
        Ok(a)
    }
}

/// Finishes a record once its position is known: sets xl_prev and the CRC.
pub(crate) fn finish_record(bytes: &mut [u8], payload_crc: u32, prev: Lsn) {
    bytes[8..16].copy_from_slice(&prev.0.to_le_bytes());
    let crc = crc32c::crc32c_append(payload_crc, &bytes[..20]);
    bytes[20..24].copy_from_slice(&crc.to_le_bytes());
}

/// The fixed part of a record header, as read from the WAL.
#[derive(Clone, Copy, Debug)]
pub struct RecordHeader {
    pub tot_len: u32,
    pub xid: u32,
    pub prev: Lsn,
    pub info: u8,
    pub rmid: u8,
    pub nblocks: u8,
    pub crc: u32,
}

impl RecordHeader {
    pub fn decode(b: &[u8]) -> RecordHeader {
        RecordHeader {
            tot_len: u32::from_le_bytes(b[0..4].try_into().unwrap()),
            xid: u32::from_le_bytes(b[4..8].try_into().unwrap()),
            prev: Lsn(u64::from_le_bytes(b[8..16].try_into().unwrap())),
            info: b[16],
            rmid: b[17],
            nblocks: b[18],
            crc: u32::from_le_bytes(b[20..24].try_into().unwrap()),
        }
    }
}

/// Checks a whole record's CRC.
pub fn record_crc_ok(bytes: &[u8]) -> bool {
    let stored = u32::from_le_bytes(bytes[20..24].try_into().unwrap());
    let crc = crc32c::crc32c_append(crc32c::crc32c(&bytes[RECORD_HEADER_SIZE..]), &bytes[..20]);
    crc == stored
}

/// A full-page image as stored: the page without its hole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockImage {
    pub bytes: Vec<u8>,
    pub hole_offset: u16,
    pub hole_length: u16,
}

/// A decoded block reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodedBlock {
    pub id: u8,
    pub tag: BufferTag,
    /// Redo re-creates the page from scratch.
    pub will_init: bool,
    pub image: Option<BlockImage>,
    pub data: Vec<u8>,
}

/// A record read back from the WAL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodedRecord {
    /// Where the record starts.
    pub lsn: Lsn,
    /// Where it ends (the LSN a page changed by it gets).
    pub end: Lsn,
    pub xid: u32,
    pub prev: Lsn,
    pub rmgr: RmgrId,
    pub info: u8,
    pub blocks: Vec<DecodedBlock>,
    pub main_data: Vec<u8>,
}

impl DecodedRecord {
    pub fn block(&self, id: u8) -> Option<&DecodedBlock> {
        self.blocks.iter().find(|b| b.id == id)
    }
}

/// Decodes a record whose CRC has been checked. Malformed content is corruption.
pub fn decode_record(bytes: &[u8], lsn: Lsn, end: Lsn) -> Result<DecodedRecord> {
    let bad = |why: &str| Error::corrupt(format!("invalid WAL record at {lsn}: {why}"));
    if bytes.len() < RECORD_HEADER_SIZE {
        return Err(bad("too short"));
    }
    let h = RecordHeader::decode(bytes);
    if h.tot_len as usize != bytes.len() {
        return Err(bad("length mismatch"));
    }
    let rmgr = RmgrId::from_u8(h.rmid).ok_or_else(|| bad("unknown resource manager"))?;
    if h.nblocks as usize > MAX_BLOCKS {
        return Err(bad("too many block references"));
    }
    let mut p = RECORD_HEADER_SIZE;
    let take = |p: &mut usize, n: usize| -> Result<&[u8]> {
        if bytes.len() - *p < n {
            return Err(bad("block reference overruns the record"));
        }
        let s = &bytes[*p..*p + n];
        *p += n;
        Ok(s)
    };
    let u16_at = |s: &[u8]| u16::from_le_bytes([s[0], s[1]]);
    let u32_at = |s: &[u8]| u32::from_le_bytes(s[..4].try_into().unwrap());
    let mut blocks = Vec::with_capacity(h.nblocks as usize);
    let mut prev_rel: Option<RelFileLocator> = None;
    for _ in 0..h.nblocks {
        let hd = take(&mut p, 4)?;
        let (id, fl, data_len) = (hd[0], hd[1], u16_at(&hd[2..4]) as usize);
        if id as usize >= MAX_BLOCKS || blocks.last().is_some_and(|b: &DecodedBlock| b.id >= id) {
            return Err(bad("bad block id"));
        }
        let fork = ForkNumber::from_u8(fl & 0x0F).ok_or_else(|| bad("bad fork number"))?;
        if (fl & BKP_HAS_DATA != 0) != (data_len > 0) {
            return Err(bad("block data flag and length disagree"));
        }
        let mut img = None;
        if fl & BKP_HAS_IMAGE != 0 {
            let ih = take(&mut p, 6)?;
            let stored = u16_at(&ih[0..2]) as usize;
            let hole_off = u16_at(&ih[2..4]) as usize;
            let has_hole = ih[4] & BIMG_HAS_HOLE != 0;
            if ih[4] & !BIMG_HAS_HOLE != 0 || ih[5] != 0 || stored > BLCKSZ {
                return Err(bad("bad image header"));
            }
            let hole_len = BLCKSZ - stored;
            if has_hole != (hole_len > 0) || (!has_hole && hole_off != 0) || hole_off + hole_len > BLCKSZ {
                return Err(bad("bad image hole"));
            }
            img = Some((stored, hole_off, hole_len));
        }
        let rel = if fl & BKP_SAME_REL != 0 {
            prev_rel.ok_or_else(|| bad("SAME_REL on first block"))?
        } else {
            let r = take(&mut p, 12)?;
            RelFileLocator { spc_oid: u32_at(&r[0..]), db_oid: u32_at(&r[4..]), rel_number: u32_at(&r[8..]) }
        };
        let block: BlockNumber = u32_at(take(&mut p, 4)?);
        let image = match img {
            Some((stored, off, len)) => Some(BlockImage {
                bytes: take(&mut p, stored)?.to_vec(),
                hole_offset: off as u16,
                hole_length: len as u16,
            }),
            None => None,
        };
        let data = take(&mut p, data_len)?.to_vec();
        prev_rel = Some(rel);
        blocks.push(DecodedBlock {
            id,
            tag: BufferTag::new(rel, fork, block),
            will_init: fl & BKP_WILL_INIT != 0,
            image,
            data,
        });
    }
    Ok(DecodedRecord {
        lsn,
        end,
        xid: h.xid,
        prev: h.prev,
        rmgr,
        info: h.info,
        blocks,
        main_data: bytes[p..].to_vec(),
    })
}

/// Rebuilds the 8 kB page from a block's full-page image, putting the hole back as
/// zeroes. `None` if the block carries no image.
pub fn restore_full_page_image(block: &DecodedBlock) -> Option<[u8; BLCKSZ]> {
    let img = block.image.as_ref()?;
    let mut page = [0u8; BLCKSZ];
    let (off, len) = (img.hole_offset as usize, img.hole_length as usize);
    // Lengths were validated by decode_record: bytes.len() + len == BLCKSZ.
    page[..off].copy_from_slice(&img.bytes[..off]);
    page[off + len..].copy_from_slice(&img.bytes[off..]);
    Some(page)
}

/// Checkpoint record info codes (rmgr Xlog).
pub const XLOG_CHECKPOINT_SHUTDOWN: u8 = 0x00;
pub const XLOG_CHECKPOINT_ONLINE: u8 = 0x10;
/// End of an online backup (PostgreSQL's XLOG_BACKUP_END): main data is the
/// backup's start LSN (u64 LE). Recovery from that backup is consistent once it
/// has replayed this record.
pub const XLOG_BACKUP_END: u8 = 0x50;
/// A WAL segment switch (PostgreSQL's XLOG_SWITCH, `pg_switch_wal()`): no main
/// data; the rest of its segment after it is unused, and the next record starts
/// at the next segment's first page.
pub const XLOG_SWITCH: u8 = 0x40;
/// A named restore point (PostgreSQL's XLOG_RESTORE_POINT,
/// `pg_create_restore_point()`): main data is the timestamp (i64 LE, µs since
/// 2000-01-01) and the name (UTF-8).
pub const XLOG_RESTORE_POINT: u8 = 0x70;

/// What other layers put into a checkpoint (and the control file): the transaction
/// layer's counters. Extend by appending fields (the encoding has room: readers accept
/// longer bodies).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckpointInfo {
    /// Next transaction id to assign (full 64-bit form).
    pub next_xid: u64,
    /// Next OID to assign.
    pub next_oid: u32,
    /// Oldest xid still present in any database (freeze horizon).
    pub oldest_xid: u32,
    /// Database holding `oldest_xid`.
    pub oldest_xid_db: u32,
    /// Oldest xid still running at checkpoint time (0 if none).
    pub oldest_active_xid: u32,
    pub next_multi: u32,
    pub next_multi_offset: u32,
}

pub(crate) const CHECKPOINT_INFO_SIZE: usize = 32;

impl CheckpointInfo {
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.next_xid.to_le_bytes());
        for v in [
            self.next_oid,
            self.oldest_xid,
            self.oldest_xid_db,
            self.oldest_active_xid,
            self.next_multi,
            self.next_multi_offset,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }

    pub(crate) fn decode(b: &[u8]) -> CheckpointInfo {
        let u = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        CheckpointInfo {
            next_xid: u64::from_le_bytes(b[0..8].try_into().unwrap()),
            next_oid: u(8),
            oldest_xid: u(12),
            oldest_xid_db: u(16),
            oldest_active_xid: u(20),
            next_multi: u(24),
            next_multi_offset: u(28),
        }
    }
}

/// The body of a checkpoint record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointRecord {
    /// Where redo starts.
    pub redo: Lsn,
    pub timeline: u32,
    pub full_page_writes: bool,
    /// Seconds since the Unix epoch.
    pub time: u64,
    pub info: CheckpointInfo,
}

pub(crate) const CHECKPOINT_RECORD_SIZE: usize = 24 + CHECKPOINT_INFO_SIZE;

impl CheckpointRecord {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(CHECKPOINT_RECORD_SIZE);
        out.extend_from_slice(&self.redo.0.to_le_bytes());
        out.extend_from_slice(&self.timeline.to_le_bytes());
        out.push(self.full_page_writes as u8);
        out.extend_from_slice(&[0; 3]);
        out.extend_from_slice(&self.time.to_le_bytes());
        self.info.encode(&mut out);
        out
    }

    pub fn decode(b: &[u8]) -> Result<CheckpointRecord> {
        if b.len() < CHECKPOINT_RECORD_SIZE {
            return Err(Error::corrupt("checkpoint record too short"));
        }
        Ok(CheckpointRecord {
            redo: Lsn(u64::from_le_bytes(b[0..8].try_into().unwrap())),
            timeline: u32::from_le_bytes(b[8..12].try_into().unwrap()),
            full_page_writes: b[12] != 0,
            time: u64::from_le_bytes(b[16..24].try_into().unwrap()),
            info: CheckpointInfo::decode(&b[24..]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::page::set_page_lsn;

    fn tag(rel: u32, block: u32) -> BufferTag {
        BufferTag::new(RelFileLocator { spc_oid: 1663, db_oid: 5, rel_number: rel }, ForkNumber::Main, block)
    }

    fn std_page(lsn: u64) -> Vec<u8> {
        let mut p = vec![0u8; BLCKSZ];
        set_page_lsn(&mut p, Lsn(lsn));
        p[PD_LOWER..PD_LOWER + 2].copy_from_slice(&40u16.to_le_bytes());
        p[PD_UPPER..PD_UPPER + 2].copy_from_slice(&8000u16.to_le_bytes());
        for (i, b) in p.iter_mut().enumerate().skip(24) {
            if !(40..8000).contains(&i) {
                *b = (i % 251) as u8;
            }
        }
        p
    }

    fn roundtrip(rb: &RecordBuilder, redo: Lsn, fpw: bool) -> DecodedRecord {
        let mut a = rb.assemble(redo, fpw).unwrap();
        finish_record(&mut a.bytes, a.payload_crc, Lsn(0x1234));
        let bytes = a.to_vec();
        assert_eq!(bytes.len(), a.len);
        assert!(record_crc_ok(&bytes));
        decode_record(&bytes, Lsn(0x2000), Lsn(0x2000 + bytes.len() as u64)).unwrap()
    }

    #[test]
    fn encode_decode_round_trip_with_images_and_hole() {
        let p1 = std_page(100);
        let p2 = std_page(500);
        let mut rb = RecordBuilder::new(RmgrId::Heap, 0x20);
        rb.set_xid(77)
            .register_buffer(0, tag(16384, 3), &p1, regbuf::STANDARD)
            .register_block_data(0, b"tuple bytes")
            .register_buffer(1, tag(16384, 9), &p2, regbuf::STANDARD)
            .register_block(2, tag(16385, 0), regbuf::WILL_INIT)
            .register_block_data(2, b"init")
            .append_main_data(b"main data here");
        // Redo pointer 200: block 0 (LSN 100) needs an image, block 1 (LSN 500) not.
        let d = roundtrip(&rb, Lsn(200), true);
        assert_eq!((d.rmgr, d.info, d.xid, d.prev), (RmgrId::Heap, 0x20, 77, Lsn(0x1234)));
        assert_eq!(d.main_data, b"main data here");
        assert_eq!(d.blocks.len(), 3);
        let img = d.blocks[0].image.as_ref().unwrap();
        assert_eq!((img.hole_offset, img.hole_length), (40, 7960));
        assert_eq!(restore_full_page_image(&d.blocks[0]).unwrap().to_vec(), p1);
        assert_eq!(d.blocks[0].data, b"tuple bytes");
        assert!(d.blocks[1].image.is_none());
        assert_eq!(d.blocks[1].tag, tag(16384, 9));
        assert!(d.blocks[2].will_init && d.blocks[2].image.is_none());
        assert_eq!(d.blocks[2].tag, tag(16385, 0));
        assert_eq!(d.blocks[2].data, b"init");
        // full_page_writes off: no images unless forced.
        let d = roundtrip(&rb, Lsn(200), false);
        assert!(d.blocks.iter().all(|b| b.image.is_none()));
        // A non-standard page is imaged whole.
        let mut rb = RecordBuilder::new(RmgrId::Btree, 0);
        rb.register_buffer(0, tag(1, 1), &p2, regbuf::FORCE_IMAGE);
        let d = roundtrip(&rb, Lsn(0), true);
        assert_eq!(d.blocks[0].image.as_ref().unwrap().bytes.len(), BLCKSZ);
        assert_eq!(restore_full_page_image(&d.blocks[0]).unwrap().to_vec(), p2);
    }

    #[test]
    fn flipped_bits_fail_the_crc_and_bad_structure_is_an_error() {
        let p1 = std_page(1);
        let mut rb = RecordBuilder::new(RmgrId::Heap, 0);
        rb.register_buffer(0, tag(1, 2), &p1, regbuf::STANDARD).append_main_data(&[9; 50]);
        let mut a = rb.assemble(Lsn(10), true).unwrap();
        finish_record(&mut a.bytes, a.payload_crc, Lsn(0));
        let a_bytes = a.to_vec();
        for i in 0..a_bytes.len() {
            let mut c = a_bytes.clone();
            c[i] ^= 0x04;
            assert!(!record_crc_ok(&c), "flip at {i} not detected");
        }
        // Structure errors (after a valid CRC) are errors, not panics.
        let mut c = a_bytes.clone();
        c[18] = 40; // nblocks
        assert!(decode_record(&c, Lsn(24), Lsn(24)).is_err());
        let mut c = a_bytes.clone();
        c[RECORD_HEADER_SIZE + 4] = 0xFF; // image length
        c[RECORD_HEADER_SIZE + 5] = 0xFF;
        assert!(decode_record(&c, Lsn(24), Lsn(24)).is_err());
        for cut in [0, 10, 24, 30, 60] {
            let mut c = a_bytes[..cut.min(a_bytes.len())].to_vec();
            if c.len() >= 4 {
                let n = c.len() as u32;
                c[0..4].copy_from_slice(&n.to_le_bytes());
            }
            assert!(decode_record(&c, Lsn(24), Lsn(24)).is_err());
        }
    }

    #[test]
    fn checkpoint_record_round_trip() {
        let c = CheckpointRecord {
            redo: Lsn(0x1_0000_0028),
            timeline: 1,
            full_page_writes: true,
            time: 1_700_000_000,
            info: CheckpointInfo { next_xid: 1 << 33, next_oid: 16384, oldest_xid: 3, ..Default::default() },
        };
        assert_eq!(CheckpointRecord::decode(&c.encode()).unwrap(), c);
        assert!(CheckpointRecord::decode(&c.encode()[..20]).is_err());
    }
}
