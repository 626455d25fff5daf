//! The 8 kB page layout. See docs/format/page.md.
//!
//! Every page (heap, index, FSM) starts with the same 24-byte header, so the buffer
//! manager and the WAL can read a page's LSN and checksum without knowing its kind:
//!
//! ```text
//! offset size field
//!      0    8 pd_lsn              u64 LE: LSN of the last WAL record that changed the page
//!      8    2 pd_checksum         u16 LE: page checksum, 0 = not yet set (new page)
//!     10    2 pd_flags            u16 LE
//!     12    2 pd_lower            u16 LE: offset to start of free space
//!     14    2 pd_upper            u16 LE: offset to end of free space
//!     16    2 pd_special          u16 LE: offset to start of special space
//!     18    2 pd_pagesize_version u16 LE: page size | layout version
//!     20    4 pd_prune_xid        u32 LE: oldest prunable xid, 0 if none
//! ```
//!
//! (The slotted-page functions, line pointers and free-space accounting are added by
//! the heap work; the functions below are the contract the buffer manager and WAL use.)

use crate::config::BLCKSZ;
use crate::storage::{BlockNumber, Lsn};

pub const PD_LSN: usize = 0;
pub const PD_CHECKSUM: usize = 8;
pub const PD_FLAGS: usize = 10;
pub const PD_LOWER: usize = 12;
pub const PD_UPPER: usize = 14;
pub const PD_SPECIAL: usize = 16;
pub const PD_PAGESIZE_VERSION: usize = 18;
pub const PD_PRUNE_XID: usize = 20;
/// Size of the common page header.
pub const PAGE_HEADER_SIZE: usize = 24;

/// The LSN stored in a page header.
#[inline]
pub fn page_lsn(page: &[u8]) -> Lsn {
    Lsn(u64::from_le_bytes(page[PD_LSN..PD_LSN + 8].try_into().unwrap()))
}

#[inline]
pub fn set_page_lsn(page: &mut [u8], lsn: Lsn) {
    page[PD_LSN..PD_LSN + 8].copy_from_slice(&lsn.0.to_le_bytes());
}

/// A page of all zeroes: never initialized (a fresh block from relation extension, or
/// a hole left by a crash). Such a page has no checksum and is valid.
pub fn page_is_new(page: &[u8]) -> bool {
    page.iter().all(|&b| b == 0)
}

/// The checksum of a page as it would be stored: CRC-32C over the page with the
/// checksum field taken as zero, mixed with the block number (so a page written to the
/// wrong block is caught), folded to 16 bits and never zero.
pub fn page_checksum(page: &[u8], block: BlockNumber) -> u16 {
    debug_assert_eq!(page.len(), BLCKSZ);
    let mut crc = crc32c::crc32c(&page[..PD_CHECKSUM]);
    crc = crc32c::crc32c_append(crc, &[0, 0]);
    crc = crc32c::crc32c_append(crc, &page[PD_CHECKSUM + 2..]);
    crc = crc32c::crc32c_append(crc, &block.to_le_bytes());
    ((crc ^ (crc >> 16)) % 65535) as u16 + 1
}

/// Sets the checksum field; called just before a page is written out.
pub fn set_page_checksum(page: &mut [u8], block: BlockNumber) {
    let c = page_checksum(page, block);
    page[PD_CHECKSUM..PD_CHECKSUM + 2].copy_from_slice(&c.to_le_bytes());
}

/// Checks a page just read from disk: an all-zero page, or one whose checksum matches.
pub fn page_verify(page: &[u8], block: BlockNumber) -> bool {
    if page_is_new(page) {
        return true;
    }
    let stored = u16::from_le_bytes(page[PD_CHECKSUM..PD_CHECKSUM + 2].try_into().unwrap());
    stored == page_checksum(page, block)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_catches_a_flipped_bit_and_a_wrong_block() {
        let mut page = vec![0u8; BLCKSZ];
        assert!(page_verify(&page, 7));
        set_page_lsn(&mut page, Lsn(0x1234));
        page[100] = 42;
        set_page_checksum(&mut page, 7);
        assert!(page_verify(&page, 7));
        assert_eq!(page_lsn(&page), Lsn(0x1234));
        assert!(!page_verify(&page, 8));
        page[5000] ^= 0x10;
        assert!(!page_verify(&page, 7));
    }
}
