//! B-tree WAL records and their redo.
//!
//! Every B-tree record is a list of block references. A block either carries a
//! full-page image (forced for pages a split or a new root rebuilds, and taken by
//! the usual rule at a page's first change after a checkpoint) or per-block data: a
//! list of page operations, applied in order if the page has not seen the record
//! (page LSN < record end). So redo is one routine for every record kind; the info
//! code says what the record was, for reading the WAL.

use super::page::{opaque, set_opaque};
use crate::buffer::LockedBuffer;
use crate::engine::Engine;
use crate::error::{Error, Result};
use crate::storage::page::{page_add_item, page_index_tuple_delete, page_is_new, page_lsn, set_page_lsn, OffsetNumber};
use crate::storage::{BlockNumber, BufferTag};
use crate::wal::{regbuf, DecodedRecord, RecordBuilder, RmgrId};

/// Info codes.
pub const XLOG_BTREE_CREATE: u8 = 0x00;
pub const XLOG_BTREE_INSERT_LEAF: u8 = 0x10;
pub const XLOG_BTREE_INSERT_UPPER: u8 = 0x20;
pub const XLOG_BTREE_SPLIT: u8 = 0x30;
pub const XLOG_BTREE_NEWROOT: u8 = 0x40;
pub const XLOG_BTREE_VACUUM: u8 = 0x50;
/// A page written whole by a bottom-up build (`build.rs`): an image.
pub const XLOG_BTREE_BUILD: u8 = 0x60;

const OP_INSERT: u8 = 1;
const OP_SET_LEFT: u8 = 2;
const OP_CLEAR_FLAGS: u8 = 3;
const OP_DELETE: u8 = 4;

/// One page operation, as logged in a block's data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PageOp {
    /// Add `item` at `offset`, shifting later line pointers up.
    Insert { offset: OffsetNumber, item: Vec<u8> },
    /// Set the left-sibling link.
    SetLeft(BlockNumber),
    /// Clear special-space flags.
    ClearFlags(u16),
    /// Delete the items at these offsets (descending order).
    Delete(Vec<OffsetNumber>),
}

impl PageOp {
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            PageOp::Insert { offset, item } => {
                out.push(OP_INSERT);
                out.extend_from_slice(&offset.to_le_bytes());
                out.extend_from_slice(&(item.len() as u16).to_le_bytes());
                out.extend_from_slice(item);
            }
            PageOp::SetLeft(b) => {
                out.push(OP_SET_LEFT);
                out.extend_from_slice(&b.to_le_bytes());
            }
            PageOp::ClearFlags(f) => {
                out.push(OP_CLEAR_FLAGS);
                out.extend_from_slice(&f.to_le_bytes());
            }
            PageOp::Delete(offs) => {
                out.push(OP_DELETE);
                out.extend_from_slice(&(offs.len() as u16).to_le_bytes());
                for o in offs {
                    out.extend_from_slice(&o.to_le_bytes());
                }
            }
        }
    }

    pub fn decode_all(mut b: &[u8]) -> Result<Vec<PageOp>> {
        let bad = || Error::corrupt("malformed btree WAL block data");
        let mut ops = Vec::new();
        let take = |b: &mut &[u8], n: usize| -> Result<Vec<u8>> {
            if b.len() < n {
                return Err(Error::corrupt("malformed btree WAL block data"));
            }
            let (h, t) = b.split_at(n);
            *b = t;
            Ok(h.to_vec())
        };
        while !b.is_empty() {
            let op = take(&mut b, 1)?[0];
            let u16v = |v: Vec<u8>| u16::from_le_bytes([v[0], v[1]]);
            ops.push(match op {
                OP_INSERT => {
                    let offset = u16v(take(&mut b, 2)?);
                    let len = u16v(take(&mut b, 2)?) as usize;
                    PageOp::Insert { offset, item: take(&mut b, len)? }
                }
                OP_SET_LEFT => PageOp::SetLeft(u32::from_le_bytes(take(&mut b, 4)?.try_into().unwrap())),
                OP_CLEAR_FLAGS => PageOp::ClearFlags(u16v(take(&mut b, 2)?)),
                OP_DELETE => {
                    let n = u16v(take(&mut b, 2)?) as usize;
                    let mut offs = Vec::with_capacity(n);
                    for _ in 0..n {
                        offs.push(u16v(take(&mut b, 2)?));
                    }
                    PageOp::Delete(offs)
                }
                _ => return Err(bad()),
            });
        }
        Ok(ops)
    }

    /// Applies the operation to a page (used by the original change and by redo, so
    /// both do exactly the same thing).
    pub fn apply(&self, page: &mut [u8]) -> Result<()> {
        match self {
            PageOp::Insert { offset, item } => {
                if page_add_item(page, item, Some(*offset), 0)?.is_none() {
                    return Err(Error::corrupt(format!("btree item of {} bytes does not fit at {offset}", item.len())));
                }
            }
            PageOp::SetLeft(b) => {
                let mut o = opaque(page)?;
                o.left = *b;
                set_opaque(page, &o)?;
            }
            PageOp::ClearFlags(f) => {
                let mut o = opaque(page)?;
                o.flags &= !*f;
                set_opaque(page, &o)?;
            }
            PageOp::Delete(offs) => {
                for &off in offs {
                    page_index_tuple_delete(page, off)?;
                }
            }
        }
        Ok(())
    }
}

/// A page taking part in a record.
pub enum Change<'p, 'a> {
    /// Logged as a forced full-page image (the page was rebuilt).
    Image(&'p mut LockedBuffer<'a>),
    /// Logged as operations (already applied to the page by the caller).
    Ops(&'p mut LockedBuffer<'a>, Vec<PageOp>),
}

/// A failure between changing pages and logging them: see heapam's
/// critical_section_failed (the process stops; recovery restores consistency).
#[cold]
pub(crate) fn critical_section_failed(what: &str, e: Error) -> ! {
    eprintln!("PANIC:  {what}: {e}");
    std::process::abort();
}

/// Logs a change of several pages as one record (block ids in order), then sets
/// each page's LSN and marks it dirty. The caller holds every page exclusively.
pub fn log_changes(engine: &Engine, info: u8, changes: &mut [Change<'_, '_>]) {
    let mut datas: Vec<Vec<u8>> = Vec::with_capacity(changes.len());
    for c in changes.iter() {
        let mut d = Vec::new();
        if let Change::Ops(_, ops) = c {
            for op in ops {
                op.encode(&mut d);
            }
        }
        datas.push(d);
    }
    let end = {
        let mut rb = RecordBuilder::new(RmgrId::Btree, info);
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
            Err(e) => critical_section_failed("could not insert btree WAL record", e),
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

/// Redo of a B-tree record: per block, restore its image or apply its operations
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
                // The page never reached the disk: make the file cover it first, so
                // that later records of this page read it back from the pool.
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
                "btree WAL record at {} changes block {} beyond the end of the index without an image",
                rec.lsn, tag.block
            )));
        }
        let mut page = engine.buffers.read_buffer(tag, None)?.into_locked();
        if page_lsn(&page[..]) >= rec.end {
            continue;
        }
        if page_is_new(&page[..]) {
            return Err(Error::corrupt(format!(
                "btree WAL record at {} changes uninitialized block {}",
                rec.lsn, tag.block
            )));
        }
        for op in PageOp::decode_all(&block.data)? {
            op.apply(&mut page[..])?;
        }
        set_page_lsn(&mut page[..], rec.end);
        page.mark_dirty();
    }
    Ok(())
}
