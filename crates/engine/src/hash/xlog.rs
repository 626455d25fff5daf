//! Hash index WAL records and their redo.
//!
//! As for the B-tree (`nbtree::xlog`), every record is a list of block
//! references, each carrying either a full-page image (forced for pages a change
//! rebuilds or initializes, and taken by the usual rule at a page's first change
//! after a checkpoint) or a list of page operations applied in order when the page
//! has not seen the record yet (page LSN < record end). Redo is one routine for
//! every record kind; the info code names what the record was (PostgreSQL's
//! record names), for reading the WAL. A change that spans several pages (an
//! overflow page added to a chain together with its bitmap bit and the metapage;
//! a split's metapage, old and new bucket) is **one record**, so redo never sees
//! half of it.

use super::page::opaque;
use crate::buffer::LockedBuffer;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::storage::page::{page_add_item, page_index_tuple_delete, page_is_new, page_lsn, set_page_lsn, OffsetNumber};
use crate::storage::BufferTag;
use crate::wal::{regbuf, DecodedRecord, RecordBuilder, RmgrId};

/// Info codes.
/// A new index: the metapage and the first bucket pages (several records for many
/// buckets, each with up to 31 pages).
pub const XLOG_HASH_INIT: u8 = 0x00;
/// One entry added to a bucket page.
pub const XLOG_HASH_INSERT: u8 = 0x10;
/// An overflow page linked at the end of a chain (new page, tail page's link,
/// bitmap bit and metapage when a free page was reused).
pub const XLOG_HASH_ADD_OVFL_PAGE: u8 = 0x20;
/// A split begins: metapage (maxbucket, entry count, a new unit), the old bucket's
/// flags, the new bucket's page (and the last page of a new unit).
pub const XLOG_HASH_SPLIT_ALLOCATE_PAGE: u8 = 0x30;
/// Entries copied into a page of the new bucket.
pub const XLOG_HASH_SPLIT_PAGE: u8 = 0x40;
/// A split ends: both buckets' flags.
pub const XLOG_HASH_SPLIT_COMPLETE: u8 = 0x50;
/// Squeeze: entries moved from a later page of a chain to an earlier one.
pub const XLOG_HASH_MOVE_PAGE_CONTENTS: u8 = 0x60;
/// Squeeze: an empty overflow page unlinked from its chain and freed.
pub const XLOG_HASH_SQUEEZE_PAGE: u8 = 0x70;
/// Entries deleted from a page (VACUUM's dead entries, a split's leftovers).
pub const XLOG_HASH_DELETE: u8 = 0x80;
/// The bucket's split-cleanup flag cleared.
pub const XLOG_HASH_SPLIT_CLEANUP: u8 = 0x90;
/// The metapage's entry count (end of VACUUM).
pub const XLOG_HASH_UPDATE_META_PAGE: u8 = 0xa0;
/// A new bitmap page named in the metapage.
pub const XLOG_HASH_INIT_BITMAP_PAGE: u8 = 0xb0;

const OP_INSERT: u8 = 1;
const OP_DELETE: u8 = 2;
const OP_WRITE: u8 = 3;

/// One page operation, as logged in a block's data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PageOp {
    /// Add `item` at `offset`, shifting later line pointers up.
    Insert { offset: OffsetNumber, item: Vec<u8> },
    /// Delete the items at these offsets (descending order).
    Delete(Vec<OffsetNumber>),
    /// Overwrite bytes at a page offset (special space fields, metapage contents,
    /// a bitmap byte). Never the page header or line pointers.
    Write { at: u16, bytes: Vec<u8> },
}

impl PageOp {
    /// The `Write` ops that turn `old` into `new` (equal-length byte images at page
    /// offset `at`): one per run of changed bytes, runs closer than 8 bytes merged.
    pub fn diff(at: usize, old: &[u8], new: &[u8]) -> Vec<PageOp> {
        let mut ops: Vec<PageOp> = Vec::new();
        let mut i = 0;
        while i < new.len() {
            if old[i] == new[i] {
                i += 1;
                continue;
            }
            let start = i;
            let mut end = i + 1;
            let mut j = end;
            while j < new.len() && j < end + 8 {
                if old[j] != new[j] {
                    end = j + 1;
                }
                j += 1;
            }
            ops.push(PageOp::Write { at: (at + start) as u16, bytes: new[start..end].to_vec() });
            i = end;
        }
        ops
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            PageOp::Insert { offset, item } => {
                out.push(OP_INSERT);
                out.extend_from_slice(&offset.to_le_bytes());
                out.extend_from_slice(&(item.len() as u16).to_le_bytes());
                out.extend_from_slice(item);
            }
            PageOp::Delete(offs) => {
                out.push(OP_DELETE);
                out.extend_from_slice(&(offs.len() as u16).to_le_bytes());
                for o in offs {
                    out.extend_from_slice(&o.to_le_bytes());
                }
            }
            PageOp::Write { at, bytes } => {
                out.push(OP_WRITE);
                out.extend_from_slice(&at.to_le_bytes());
                out.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
                out.extend_from_slice(bytes);
            }
        }
    }

    pub fn decode_all(mut b: &[u8]) -> Result<Vec<PageOp>> {
        let take = |b: &mut &[u8], n: usize| -> Result<Vec<u8>> {
            if b.len() < n {
                return Err(Error::corrupt("malformed hash WAL block data"));
            }
            let (h, t) = b.split_at(n);
            *b = t;
            Ok(h.to_vec())
        };
        let u16v = |v: Vec<u8>| u16::from_le_bytes([v[0], v[1]]);
        let mut ops = Vec::new();
        while !b.is_empty() {
            let op = take(&mut b, 1)?[0];
            ops.push(match op {
                OP_INSERT => {
                    let offset = u16v(take(&mut b, 2)?);
                    let len = u16v(take(&mut b, 2)?) as usize;
                    PageOp::Insert { offset, item: take(&mut b, len)? }
                }
                OP_DELETE => {
                    let n = u16v(take(&mut b, 2)?) as usize;
                    let mut offs = Vec::with_capacity(n);
                    for _ in 0..n {
                        offs.push(u16v(take(&mut b, 2)?));
                    }
                    PageOp::Delete(offs)
                }
                OP_WRITE => {
                    let at = u16v(take(&mut b, 2)?);
                    let len = u16v(take(&mut b, 2)?) as usize;
                    PageOp::Write { at, bytes: take(&mut b, len)? }
                }
                _ => return Err(Error::corrupt("malformed hash WAL block data")),
            });
        }
        Ok(ops)
    }

    /// Applies the operation to a page: used by the change itself and by redo, so
    /// both do exactly the same thing.
    pub fn apply(&self, page: &mut [u8]) -> Result<()> {
        match self {
            PageOp::Insert { offset, item } => {
                if page_add_item(page, item, Some(*offset), 0)?.is_none() {
                    return Err(Error::corrupt(format!("hash entry of {} bytes does not fit at {offset}", item.len())));
                }
            }
            PageOp::Delete(offs) => {
                for &off in offs {
                    page_index_tuple_delete(page, off)?;
                }
            }
            PageOp::Write { at, bytes } => {
                let at = *at as usize;
                if at < crate::storage::page::PAGE_HEADER_SIZE || at + bytes.len() > page.len() {
                    return Err(Error::corrupt(format!("hash WAL write of {} bytes at {at}", bytes.len())));
                }
                page[at..at + bytes.len()].copy_from_slice(bytes);
            }
        }
        Ok(())
    }
}

/// A page taking part in a record.
pub enum Change<'p, 'a> {
    /// Logged as a forced full-page image (the page was rebuilt or initialized).
    Image(&'p mut LockedBuffer<'a>),
    /// Logged as operations (already applied to the page by the caller).
    Ops(&'p mut LockedBuffer<'a>, Vec<PageOp>),
}

/// A failure between changing pages and logging them: the process stops
/// (PostgreSQL's PANIC in a critical section); recovery restores consistency.
#[cold]
pub(crate) fn critical_section_failed(what: &str, e: Error) -> ! {
    eprintln!("PANIC:  {what}: {e}");
    std::process::abort();
}

/// Applies `ops` to `page` inside a critical section.
pub(crate) fn apply_all(page: &mut [u8], ops: &[PageOp], what: &str) {
    for op in ops {
        op.apply(page).unwrap_or_else(|e| critical_section_failed(what, e));
    }
}

/// Logs a change of several pages as one record (block ids in order), then sets
/// each page's LSN and marks it dirty. The caller holds every page exclusively
/// and has applied the operations already.
pub fn log_changes(engine: &Engine, info: u8, changes: &mut [Change<'_, '_>]) {
    let datas: Vec<Vec<u8>> = changes
        .iter()
        .map(|c| {
            let mut d = Vec::new();
            if let Change::Ops(_, ops) = c {
                for op in ops {
                    op.encode(&mut d);
                }
            }
            d
        })
        .collect();
    let end = {
        let mut rb = RecordBuilder::new(RmgrId::Hash, info);
        for (i, c) in changes.iter().enumerate() {
            match c {
                Change::Image(p) => {
                    rb.register_buffer(i as u8, p.tag(), &p[..], regbuf::FORCE_IMAGE | regbuf::STANDARD);
                }
                Change::Ops(p, _) => {
                    rb.register_buffer(i as u8, p.tag(), &p[..], regbuf::STANDARD);
                    rb.register_block_data(i as u8, &datas[i]);
                }
            }
        }
        match engine.wal.insert(&rb) {
            Ok(end) => end,
            Err(e) => critical_section_failed("could not insert hash WAL record", e),
        }
    };
    for c in changes.iter_mut() {
        let p = match c {
            Change::Image(p) => p,
            Change::Ops(p, _) => p,
        };
        set_page_lsn(&mut p[..], end);
        p.mark_dirty();
    }
}

/// Redo of a hash record: per block, restore its image or apply its operations
/// (skipped when the page LSN shows the page has them already).
pub fn redo(engine: &Engine, rec: &DecodedRecord) -> Result<()> {
    for block in &rec.blocks {
        let tag: BufferTag = block.tag;
        if !engine.smgr.exists(tag.rel, tag.fork) {
            engine.smgr.create(tag.rel, tag.fork)?;
        }
        let nblocks = engine.buffers.nblocks(tag.rel, tag.fork)?;
        if let Some(image) = crate::wal::restore_full_page_image(block) {
            if tag.block >= nblocks {
                // The page never reached the disk (or a new allocation unit: its
                // last page is logged so that this extends the file over it).
                engine.smgr.zero_extend(tag.rel, tag.fork, nblocks, tag.block + 1 - nblocks)?;
            }
            // Not read: the page on disk may be torn; the image replaces all of it.
            let mut page = engine.buffers.read_buffer_zero(tag, None)?;
            page[..].copy_from_slice(&image);
            set_page_lsn(&mut page[..], rec.end);
            page.mark_dirty();
            continue;
        }
        if tag.block >= nblocks {
            return Err(Error::corrupt(format!(
                "hash WAL record at {} changes block {} beyond the end of the index without an image",
                rec.lsn, tag.block
            )));
        }
        let mut page = engine.buffers.read_buffer(tag, None)?.into_locked();
        if page_lsn(&page[..]) >= rec.end {
            continue;
        }
        if page_is_new(&page[..]) {
            return Err(Error::corrupt(format!("hash WAL record at {} changes uninitialized block {}", rec.lsn, tag.block)));
        }
        opaque(&page[..])?;
        for op in PageOp::decode_all(&block.data)? {
            op.apply(&mut page[..])?;
        }
        set_page_lsn(&mut page[..], rec.end);
        page.mark_dirty();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ops_round_trip_and_diff() {
        let ops = vec![
            PageOp::Insert { offset: 3, item: vec![1, 2, 3] },
            PageOp::Delete(vec![9, 4, 1]),
            PageOp::Write { at: 8176, bytes: vec![7; 16] },
        ];
        let mut b = Vec::new();
        for o in &ops {
            o.encode(&mut b);
        }
        assert_eq!(PageOp::decode_all(&b).unwrap(), ops);
        assert!(PageOp::decode_all(&b[..b.len() - 1]).is_err());
        let old = [0u8; 64];
        let mut new = old;
        new[3] = 1;
        new[6] = 2;
        new[40] = 3;
        assert_eq!(
            PageOp::diff(100, &old, &new),
            vec![PageOp::Write { at: 103, bytes: vec![1, 0, 0, 2] }, PageOp::Write { at: 140, bytes: vec![3] }]
        );
        assert!(PageOp::diff(0, &old, &old).is_empty());
    }
}
