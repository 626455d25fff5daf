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
//! After the header comes the line pointer array (4 bytes per item, growing up from
//! `pd_lower`), free space, the items themselves (growing down from `pd_upper`), and the
//! special space (`pd_special` to the end, used by index access methods).
//!
//! Invariants of a valid page:
//! `PAGE_HEADER_SIZE <= pd_lower <= pd_upper <= pd_special <= BLCKSZ`,
//! `(pd_lower - PAGE_HEADER_SIZE) % 4 == 0`, `pd_special % MAXALIGN == 0`, and every
//! item with storage lies in `[pd_upper, pd_special)`. Pages read from disk are checked
//! by [`page_validate`]; the accessors re-check what they touch and return
//! `Error::corrupt` rather than panic or slice out of bounds.
//!
//! `page_lsn`, `set_page_lsn`, `page_is_new`, `page_checksum`, `set_page_checksum` and
//! `page_verify` are the contract the buffer manager and the WAL use.

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

// ---------------------------------------------------------------------------------
// Slotted page: header fields, line pointers, items, free space, special space.
// ---------------------------------------------------------------------------------

use crate::error::{Error, Result};

/// Alignment of items on a page and of the special space (PostgreSQL's MAXALIGN).
pub const MAXALIGN: usize = 8;

/// Rounds `n` up to a multiple of [`MAXALIGN`].
#[inline]
pub const fn maxalign(n: usize) -> usize {
    (n + MAXALIGN - 1) & !(MAXALIGN - 1)
}

/// Rounds `n` down to a multiple of [`MAXALIGN`].
#[inline]
pub const fn maxalign_down(n: usize) -> usize {
    n & !(MAXALIGN - 1)
}

/// Page layout version stored in the low byte of `pd_pagesize_version`.
pub const PG_PAGE_LAYOUT_VERSION: u16 = 4;

/// `pd_flags`: there are (probably) unused line pointers before `pd_lower`; a hint
/// for [`page_add_item`], set by pruning/vacuum, cleared when a search finds none.
pub const PD_HAS_FREE_LINES: u16 = 0x0001;
/// `pd_flags`: an UPDATE found no room on the page: a hint that pruning is due.
pub const PD_PAGE_FULL: u16 = 0x0002;
/// `pd_flags`: every tuple on the page is visible to every transaction (set by vacuum
/// together with the visibility-map bit; cleared by any insert, update or delete).
pub const PD_ALL_VISIBLE: u16 = 0x0004;
/// All defined `pd_flags` bits; other bits set means corruption.
pub const PD_VALID_FLAG_BITS: u16 = 0x0007;

/// An item's position on a page, 1-based (PostgreSQL's OffsetNumber). 0 is invalid.
pub type OffsetNumber = u16;
pub const INVALID_OFFSET_NUMBER: OffsetNumber = 0;
pub const FIRST_OFFSET_NUMBER: OffsetNumber = 1;
/// Size of one line pointer.
pub const ITEM_ID_SIZE: usize = 4;
/// Upper bound of line pointers on any page (PostgreSQL's MaxOffsetNumber).
pub const MAX_OFFSET_NUMBER: OffsetNumber = (BLCKSZ / ITEM_ID_SIZE) as OffsetNumber;
/// Largest item length a line pointer can describe (15 bits).
pub const MAX_ITEM_LEN: usize = (1 << 15) - 1;

/// `page_add_item` flag: place the item at the given offset, which must be an unused
/// line pointer without storage or the next new one (heap, and redo of any insert).
/// Without it a given offset shifts the following line pointers up (index pages).
pub const PAI_OVERWRITE: u8 = 0x01;
/// `page_add_item` flag: a heap page: at most [`MAX_HEAP_TUPLES_PER_PAGE`] items.
pub const PAI_IS_HEAP: u8 = 0x02;

/// Size of the smallest heap tuple (a MAXALIGNed 23-byte header, no data) plus its
/// line pointer bounds the number of line pointers on a heap page.
pub const MAX_HEAP_TUPLES_PER_PAGE: usize =
    (BLCKSZ - PAGE_HEADER_SIZE) / (maxalign(23) + ITEM_ID_SIZE);

/// State of a line pointer (2 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum LpFlags {
    /// Free for reuse; `off == 0 && len == 0`.
    Unused = 0,
    /// Points to an item of `len` bytes at `off`.
    Normal = 1,
    /// Heap HOT chain: `off` is the offset number of the chain's next member; `len == 0`.
    Redirect = 2,
    /// The item is dead; it may keep storage (index pages) or not (heap after pruning).
    Dead = 3,
}

/// A line pointer (PostgreSQL's ItemIdData). Stored as one little-endian u32:
/// bits 0..15 `lp_off`, bits 15..17 `lp_flags`, bits 17..32 `lp_len`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ItemId {
    pub off: u16,
    pub flags: LpFlags,
    pub len: u16,
}

impl ItemId {
    pub const UNUSED: ItemId = ItemId { off: 0, flags: LpFlags::Unused, len: 0 };

    pub fn normal(off: usize, len: usize) -> ItemId {
        debug_assert!(off <= MAX_ITEM_LEN && len <= MAX_ITEM_LEN);
        ItemId { off: off as u16, flags: LpFlags::Normal, len: len as u16 }
    }

    pub fn redirect(to: OffsetNumber) -> ItemId {
        ItemId { off: to, flags: LpFlags::Redirect, len: 0 }
    }

    /// A dead line pointer without storage (heap pruning).
    pub fn dead() -> ItemId {
        ItemId { off: 0, flags: LpFlags::Dead, len: 0 }
    }

    #[inline]
    pub fn encode(self) -> u32 {
        (self.off as u32 & 0x7fff) | ((self.flags as u32) << 15) | ((self.len as u32 & 0x7fff) << 17)
    }

    #[inline]
    pub fn decode(v: u32) -> ItemId {
        let flags = match (v >> 15) & 3 {
            0 => LpFlags::Unused,
            1 => LpFlags::Normal,
            2 => LpFlags::Redirect,
            _ => LpFlags::Dead,
        };
        ItemId { off: (v & 0x7fff) as u16, flags, len: (v >> 17) as u16 }
    }

    /// Whether the item occupies bytes on the page (PostgreSQL's ItemIdHasStorage).
    #[inline]
    pub fn has_storage(self) -> bool {
        self.len != 0 && matches!(self.flags, LpFlags::Normal | LpFlags::Dead)
    }

    #[inline]
    pub fn is_used(self) -> bool {
        self.flags != LpFlags::Unused
    }
}

#[inline]
fn get_u16(page: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([page[at], page[at + 1]])
}

#[inline]
fn put_u16(page: &mut [u8], at: usize, v: u16) {
    page[at..at + 2].copy_from_slice(&v.to_le_bytes());
}

#[inline]
fn check_len(page: &[u8]) -> Result<()> {
    if page.len() != BLCKSZ {
        return Err(bad_len(page.len()));
    }
    Ok(())
}

// The error paths of the item accessors are out of line and cold: the accessors run
// for every tuple a scan or a B-tree search steps over, and inlined they are a few
// compares and loads (the checks stay; only their messages move away).
#[cold]
#[inline(never)]
fn bad_len(len: usize) -> Error {
    Error::internal(format!("page buffer of {len} bytes, not {BLCKSZ}"))
}

#[inline]
pub fn page_lower(page: &[u8]) -> usize {
    get_u16(page, PD_LOWER) as usize
}
#[inline]
pub fn page_upper(page: &[u8]) -> usize {
    get_u16(page, PD_UPPER) as usize
}
#[inline]
pub fn page_special_offset(page: &[u8]) -> usize {
    get_u16(page, PD_SPECIAL) as usize
}
pub fn page_flags(page: &[u8]) -> u16 {
    get_u16(page, PD_FLAGS)
}
pub fn page_has_flag(page: &[u8], flag: u16) -> bool {
    page_flags(page) & flag != 0
}
pub fn page_set_flag(page: &mut [u8], flag: u16) {
    let f = page_flags(page) | flag;
    put_u16(page, PD_FLAGS, f);
}
pub fn page_clear_flag(page: &mut [u8], flag: u16) {
    let f = page_flags(page) & !flag;
    put_u16(page, PD_FLAGS, f);
}
fn set_lower(page: &mut [u8], v: usize) {
    put_u16(page, PD_LOWER, v as u16);
}
fn set_upper(page: &mut [u8], v: usize) {
    put_u16(page, PD_UPPER, v as u16);
}

/// The oldest xid that may have left something prunable on the page (0 = none).
pub fn page_prune_xid(page: &[u8]) -> u32 {
    u32::from_le_bytes(page[PD_PRUNE_XID..PD_PRUNE_XID + 4].try_into().unwrap())
}

pub fn set_page_prune_xid(page: &mut [u8], xid: u32) {
    page[PD_PRUNE_XID..PD_PRUNE_XID + 4].copy_from_slice(&xid.to_le_bytes());
}

/// Initializes an empty page with `special_size` bytes (rounded up to MAXALIGN) of
/// special space at its end. The LSN and checksum are zero; everything else too.
pub fn page_init(page: &mut [u8], special_size: usize) {
    assert_eq!(page.len(), BLCKSZ, "page_init on a buffer that is not a page");
    let special = BLCKSZ - maxalign(special_size);
    assert!(special >= PAGE_HEADER_SIZE, "special space of {special_size} bytes does not fit");
    page.fill(0);
    set_lower(page, PAGE_HEADER_SIZE);
    set_upper(page, special);
    put_u16(page, PD_SPECIAL, special as u16);
    put_u16(page, PD_PAGESIZE_VERSION, BLCKSZ as u16 | PG_PAGE_LAYOUT_VERSION);
}

/// Checks the header of an initialized page: size and version, defined flag bits, and
/// `PAGE_HEADER_SIZE <= pd_lower <= pd_upper <= pd_special <= BLCKSZ` with
/// line-pointer-sized `pd_lower` steps and a MAXALIGNed `pd_special`.
pub fn page_validate_header(page: &[u8]) -> Result<()> {
    check_len(page)?;
    let (lower, upper, special) = (page_lower(page), page_upper(page), page_special_offset(page));
    let psv = get_u16(page, PD_PAGESIZE_VERSION);
    let bad = |why: &str| {
        Err(Error::corrupt(format!(
            "page header invalid ({why}): lower {lower} upper {upper} special {special} \
             pagesize_version {psv:#x} flags {:#x}",
            page_flags(page)
        )))
    };
    if psv != (BLCKSZ as u16 | PG_PAGE_LAYOUT_VERSION) {
        return bad("page size or layout version");
    }
    if page_flags(page) & !PD_VALID_FLAG_BITS != 0 {
        return bad("unknown flag bits");
    }
    if !(PAGE_HEADER_SIZE <= lower && lower <= upper && upper <= special && special <= BLCKSZ) {
        return bad("bounds out of order");
    }
    if !(lower - PAGE_HEADER_SIZE).is_multiple_of(ITEM_ID_SIZE) || special % MAXALIGN != 0 {
        return bad("misaligned bound");
    }
    Ok(())
}

/// Checks the header and every line pointer: items with storage lie within
/// `[pd_upper, pd_special)`, are MAXALIGNed and do not overlap; redirects point to an
/// existing offset; unused and redirect pointers have no length. A page that passes
/// can be read with the accessors below without any error.
pub fn page_validate(page: &[u8]) -> Result<()> {
    page_validate_items(page, |_, _| Ok(()))
}

/// [`page_validate`], calling `each(off, id)` for every line pointer once it
/// passed its checks (in offset order, before the next is checked): a caller
/// that reads every line pointer anyway (heap pruning) validates in the same
/// pass. An error from `each` ends the walk and is returned.
#[inline]
pub fn page_validate_items(page: &[u8], mut each: impl FnMut(OffsetNumber, ItemId) -> Result<()>) -> Result<()> {
    page_validate_header(page)?;
    let (upper, special) = (page_upper(page), page_special_offset(page));
    let max = page_max_offset_number(page);
    // The MAXALIGN units items occupy (an item ends at its maxaligned length): two
    // items overlap when they share a unit.
    let mut units = [0u64; BLCKSZ / MAXALIGN / 64];
    for off in FIRST_OFFSET_NUMBER..=max {
        let id = read_item_id(page, off);
        let bad = |why: &str| Err(Error::corrupt(format!("line pointer {off} {why}: {id:?}")));
        match id.flags {
            LpFlags::Unused if id.len != 0 || id.off != 0 => return bad("unused but not empty"),
            LpFlags::Redirect if id.len != 0 || id.off == 0 || id.off > max => {
                return bad("redirects outside the line pointer array")
            }
            LpFlags::Normal if id.len == 0 => return bad("normal with zero length"),
            _ => {}
        }
        if id.has_storage() {
            let (s, e) = (id.off as usize, id.off as usize + id.len as usize);
            if s < upper || e > special || s % MAXALIGN != 0 {
                return bad("points outside the item area");
            }
            if !mark_units(&mut units, s / MAXALIGN, maxalign(e) / MAXALIGN) {
                return Err(Error::corrupt(format!("items overlap at page offset {s}")));
            }
        }
        each(off, id)?;
    }
    Ok(())
}

/// Marks units `[from, to)` of `bits` (`to` at most its length in bits); false when
/// one of them was marked already.
fn mark_units(bits: &mut [u64], from: usize, to: usize) -> bool {
    let mut u = from;
    while u < to {
        let (w, lo) = (u / 64, u % 64);
        let hi = (to - w * 64).min(64);
        let mask = if hi - lo == 64 { !0 } else { ((1u64 << (hi - lo)) - 1) << lo };
        if bits[w] & mask != 0 {
            return false;
        }
        bits[w] |= mask;
        u = w * 64 + hi;
    }
    true
}

/// Number of line pointers (the largest offset number in use or not).
#[inline]
pub fn page_max_offset_number(page: &[u8]) -> OffsetNumber {
    let lower = page_lower(page);
    if lower <= PAGE_HEADER_SIZE {
        0
    } else {
        // Capped so that a corrupt pd_lower never indexes past the page.
        (((lower - PAGE_HEADER_SIZE) / ITEM_ID_SIZE).min((BLCKSZ - PAGE_HEADER_SIZE) / ITEM_ID_SIZE))
            as OffsetNumber
    }
}

#[inline]
fn item_id_pos(off: OffsetNumber) -> usize {
    PAGE_HEADER_SIZE + (off as usize - 1) * ITEM_ID_SIZE
}

#[inline]
fn read_item_id(page: &[u8], off: OffsetNumber) -> ItemId {
    let p = item_id_pos(off);
    ItemId::decode(u32::from_le_bytes(page[p..p + 4].try_into().unwrap()))
}

/// The line pointer at `off`; `Error::corrupt` if `off` is outside the array.
#[inline]
pub fn page_get_item_id(page: &[u8], off: OffsetNumber) -> Result<ItemId> {
    check_len(page)?;
    if off == 0 || off > page_max_offset_number(page) {
        return Err(bad_offset(page, off));
    }
    Ok(read_item_id(page, off))
}

#[cold]
#[inline(never)]
fn bad_offset(page: &[u8], off: OffsetNumber) -> Error {
    Error::corrupt(format!("offset number {off} out of range 1..={}", page_max_offset_number(page)))
}

/// Overwrites the line pointer at `off` (which must exist).
pub fn page_set_item_id(page: &mut [u8], off: OffsetNumber, id: ItemId) -> Result<()> {
    page_get_item_id(page, off)?;
    let p = item_id_pos(off);
    page[p..p + 4].copy_from_slice(&id.encode().to_le_bytes());
    Ok(())
}

#[inline]
fn item_range(page: &[u8], off: OffsetNumber) -> Result<std::ops::Range<usize>> {
    let id = page_get_item_id(page, off)?;
    if id.flags != LpFlags::Normal && !(id.flags == LpFlags::Dead && id.len != 0) {
        return Err(no_item(off, id));
    }
    let (s, e) = (id.off as usize, id.off as usize + id.len as usize);
    if id.len == 0 || s < page_upper(page) || e > page_special_offset(page).min(BLCKSZ) {
        return Err(item_outside(page, off, id));
    }
    Ok(s..e)
}

#[cold]
#[inline(never)]
fn no_item(off: OffsetNumber, id: ItemId) -> Error {
    Error::corrupt(format!("line pointer {off} has no item: {id:?}"))
}

#[cold]
#[inline(never)]
fn item_outside(page: &[u8], off: OffsetNumber, id: ItemId) -> Error {
    Error::corrupt(format!(
        "line pointer {off} points outside the item area [{}, {}): {id:?}",
        page_upper(page),
        page_special_offset(page)
    ))
}

/// The bytes of the item at `off` (a normal line pointer, or a dead one that kept its
/// storage). Bad offsets or lengths are `Error::corrupt`.
#[inline]
pub fn page_get_item(page: &[u8], off: OffsetNumber) -> Result<&[u8]> {
    let r = item_range(page, off)?;
    Ok(&page[r])
}

/// A page's items read many times in a row (a binary search): the page's
/// length, item count and item area are read once, and each
/// [`PageItems::get`] is what [`page_get_item`] is (the same checks and
/// errors) with those reads saved.
pub struct PageItems<'p> {
    page: &'p [u8],
    max: OffsetNumber,
    upper: usize,
    end: usize,
}

impl<'p> PageItems<'p> {
    #[inline]
    pub fn new(page: &'p [u8]) -> Result<PageItems<'p>> {
        check_len(page)?;
        Ok(PageItems { page, max: page_max_offset_number(page), upper: page_upper(page), end: page_special_offset(page).min(BLCKSZ) })
    }

    /// The item at `off`, as [`page_get_item`]. Always inlined: a B-tree
    /// binary search calls it for every probe.
    #[inline(always)]
    pub fn get(&self, off: OffsetNumber) -> Result<&'p [u8]> {
        if off == 0 || off > self.max {
            return Err(bad_offset(self.page, off));
        }
        let id = read_item_id(self.page, off);
        if id.flags != LpFlags::Normal && !(id.flags == LpFlags::Dead && id.len != 0) {
            return Err(no_item(off, id));
        }
        let (s, e) = (id.off as usize, id.off as usize + id.len as usize);
        if id.len == 0 || s < self.upper || e > self.end {
            return Err(item_outside(self.page, off, id));
        }
        Ok(&self.page[s..e])
    }

    /// The number of line pointers.
    #[inline]
    pub fn max(&self) -> OffsetNumber {
        self.max
    }

    /// The item at `off` if its line pointer is LP_NORMAL (`None` for an
    /// offset beyond the array, or any other kind), with [`PageItems::get`]'s
    /// checks: one read of the line pointer (a HOT chain walk).
    #[inline]
    pub fn normal(&self, off: OffsetNumber) -> Result<Option<&'p [u8]>> {
        if off == 0 || off > self.max {
            return Ok(None);
        }
        let id = read_item_id(self.page, off);
        if id.flags != LpFlags::Normal {
            return Ok(None);
        }
        let (s, e) = (id.off as usize, id.off as usize + id.len as usize);
        if id.len == 0 || s < self.upper || e > self.end {
            return Err(item_outside(self.page, off, id));
        }
        Ok(Some(&self.page[s..e]))
    }
}

pub fn page_get_item_mut(page: &mut [u8], off: OffsetNumber) -> Result<&mut [u8]> {
    let r = item_range(page, off)?;
    Ok(&mut page[r])
}

/// Free space between line pointers and items, minus one new line pointer: the
/// largest item [`page_add_item`] can add (before MAXALIGN of the item). 0 if none,
/// or if the header is bad.
pub fn page_free_space(page: &[u8]) -> usize {
    page_exact_free_space(page).saturating_sub(ITEM_ID_SIZE)
}

/// `pd_upper - pd_lower`, or 0 if they are out of order.
pub fn page_exact_free_space(page: &[u8]) -> usize {
    page_upper(page).saturating_sub(page_lower(page))
}

/// Free space as a heap page reports it to the FSM: 0 once the page has
/// [`MAX_HEAP_TUPLES_PER_PAGE`] line pointers and none of them is reusable.
pub fn page_heap_free_space(page: &[u8]) -> usize {
    let space = page_free_space(page);
    if space > 0 && page_max_offset_number(page) as usize >= MAX_HEAP_TUPLES_PER_PAGE {
        let max = page_max_offset_number(page);
        let reusable = page_has_flag(page, PD_HAS_FREE_LINES)
            && (FIRST_OFFSET_NUMBER..=max).any(|o| read_item_id(page, o) == ItemId::UNUSED);
        if !reusable {
            return 0;
        }
    }
    space
}

/// Adds `item` to the page and returns its offset number, or `Ok(None)` if it does
/// not fit (space, or the heap line-pointer limit).
///
/// - `offset == None`: reuse the first unused line pointer if `PD_HAS_FREE_LINES` is
///   set (clearing the flag if none is found), else append a new one.
/// - `offset == Some(n)` with [`PAI_OVERWRITE`]: `n` must be an unused line pointer or
///   `max + 1` (redo replays inserts this way).
/// - `offset == Some(n)` without it: line pointers `n..` shift up by one (index pages).
///
/// The item goes at the new `pd_upper`, MAXALIGNed below the previous one. Errors:
/// `Error::corrupt` for a bad header; `Error::internal` for a bad offset argument.
pub fn page_add_item(
    page: &mut [u8],
    item: &[u8],
    offset: Option<OffsetNumber>,
    flags: u8,
) -> Result<Option<OffsetNumber>> {
    page_validate_header(page)?;
    if item.is_empty() || item.len() > MAX_ITEM_LEN {
        return Err(Error::internal(format!("page_add_item of {} bytes", item.len())));
    }
    let max = page_max_offset_number(page);
    let limit = max + 1;
    let mut needs_new_lp = true;
    let mut shift = false;
    let target = match offset {
        Some(n) => {
            if n == 0 || n > limit {
                return Err(Error::internal(format!("page_add_item at offset {n} beyond {limit}")));
            }
            if flags & PAI_OVERWRITE != 0 {
                if n < limit {
                    let id = read_item_id(page, n);
                    if id.is_used() || id.has_storage() {
                        return Err(Error::internal(format!(
                            "page_add_item would overwrite line pointer {n}: {id:?}"
                        )));
                    }
                    needs_new_lp = false;
                }
            } else if n < limit {
                shift = true;
            }
            n
        }
        None => {
            let mut found = None;
            if page_has_flag(page, PD_HAS_FREE_LINES) {
                found = (FIRST_OFFSET_NUMBER..=max).find(|&o| read_item_id(page, o) == ItemId::UNUSED);
                if found.is_none() {
                    page_clear_flag(page, PD_HAS_FREE_LINES);
                }
            }
            match found {
                Some(o) => {
                    needs_new_lp = false;
                    o
                }
                None => limit,
            }
        }
    };
    if flags & PAI_IS_HEAP != 0 && needs_new_lp && target as usize > MAX_HEAP_TUPLES_PER_PAGE {
        return Ok(None);
    }
    let lower = page_lower(page) + if needs_new_lp { ITEM_ID_SIZE } else { 0 };
    let size = maxalign(item.len());
    let upper = page_upper(page);
    if upper < size || lower > upper - size {
        return Ok(None);
    }
    let new_upper = upper - size;
    if shift {
        let from = item_id_pos(target);
        let to = item_id_pos(limit);
        page.copy_within(from..to, from + ITEM_ID_SIZE);
    }
    page[new_upper..new_upper + item.len()].copy_from_slice(item);
    page[new_upper + item.len()..upper].fill(0);
    set_lower(page, lower);
    set_upper(page, new_upper);
    let p = item_id_pos(target);
    page[p..p + 4].copy_from_slice(&ItemId::normal(new_upper, item.len()).encode().to_le_bytes());
    Ok(Some(target))
}

/// Compacts the item storage of a page so that all free space is contiguous, keeping
/// every offset number (heap TIDs stay valid). Items with storage (normal, or dead
/// with a length) keep their bytes; unused line pointers are reset to empty.
/// Afterwards `PD_HAS_FREE_LINES` says whether any line pointer is unused.
pub fn page_repair_fragmentation(page: &mut [u8]) -> Result<()> {
    page_validate(page)?;
    page_repair_fragmentation_valid(page);
    Ok(())
}

/// [`page_repair_fragmentation`] of a page known to pass [`page_validate`]
/// (validated by the caller, then changed only by line pointers losing
/// their storage or becoming redirects within the array: pruning).
pub(crate) fn page_repair_fragmentation_valid(page: &mut [u8]) {
    let max = page_max_offset_number(page);
    let special = page_special_offset(page);
    let old_upper = page_upper(page);
    // Items are packed toward the special space in line pointer order: offset 1
    // highest. When they already lie in that order (each new item is placed below
    // the last, so a page that only had inserts is), each slides up in place,
    // highest first, never over an item not yet moved. Otherwise (HOT updates
    // reuse space out of order) the item area is copied aside first and the items
    // placed from the copy: no sort (PostgreSQL's compactify_tuples does the same).
    let mut presorted = true;
    let mut any_unused = false;
    let mut last = usize::MAX;
    for o in FIRST_OFFSET_NUMBER..=max {
        let id = read_item_id(page, o);
        any_unused |= id.flags == LpFlags::Unused;
        if id.has_storage() {
            presorted &= (id.off as usize) < last;
            last = id.off as usize;
        }
    }
    let scratch: Vec<u8> = if presorted { Vec::new() } else { page[old_upper..special].to_vec() };
    let mut upper = special;
    for o in FIRST_OFFSET_NUMBER..=max {
        let mut id = read_item_id(page, o);
        if !id.has_storage() {
            continue;
        }
        let (src, len) = (id.off as usize, id.len as usize);
        let size = maxalign(len);
        upper -= size;
        if src != upper {
            if presorted {
                page.copy_within(src..src + len, upper);
            } else {
                page[upper..upper + len].copy_from_slice(&scratch[src - old_upper..src - old_upper + len]);
            }
            page[upper + len..upper + size].fill(0);
            id.off = upper as u16;
            let p = item_id_pos(o);
            page[p..p + 4].copy_from_slice(&id.encode().to_le_bytes());
        }
    }
    // The free space between pd_lower and the new pd_upper keeps whatever bytes it
    // had (PostgreSQL does not clear it either): nothing reads them, and a
    // full-page image leaves that hole out.
    set_upper(page, upper);
    if any_unused {
        for o in FIRST_OFFSET_NUMBER..=max {
            if read_item_id(page, o).flags == LpFlags::Unused {
                let p = item_id_pos(o);
                page[p..p + 4].fill(0);
            }
        }
        page_set_flag(page, PD_HAS_FREE_LINES);
    } else {
        page_clear_flag(page, PD_HAS_FREE_LINES);
    }
}

/// Deletes the item at `off` from an index page: its storage is removed, the items
/// below it slide up, and line pointers after it shift down by one (offset numbers
/// after `off` change, which is why this is for index pages only).
pub fn page_index_tuple_delete(page: &mut [u8], off: OffsetNumber) -> Result<()> {
    page_validate(page)?;
    let r = item_range(page, off)?;
    let max = page_max_offset_number(page);
    let (start, size) = (r.start, maxalign(r.end - r.start));
    let upper = page_upper(page);
    // Slide everything between pd_upper and the deleted item up by `size`.
    page.copy_within(upper..start, upper + size);
    page[upper..upper + size].fill(0);
    for o in FIRST_OFFSET_NUMBER..=max {
        let mut id = read_item_id(page, o);
        if id.has_storage() && (id.off as usize) < start {
            id.off += size as u16;
            let p = item_id_pos(o);
            page[p..p + 4].copy_from_slice(&id.encode().to_le_bytes());
        }
    }
    let from = item_id_pos(off) + ITEM_ID_SIZE;
    let to = item_id_pos(max) + ITEM_ID_SIZE;
    page.copy_within(from..to, from - ITEM_ID_SIZE);
    page[to - ITEM_ID_SIZE..to].fill(0);
    set_lower(page, page_lower(page) - ITEM_ID_SIZE);
    set_upper(page, upper + size);
    Ok(())
}

/// The special space (`pd_special..BLCKSZ`).
pub fn page_special(page: &[u8]) -> Result<&[u8]> {
    page_validate_header(page)?;
    Ok(&page[page_special_offset(page)..])
}

pub fn page_special_mut(page: &mut [u8]) -> Result<&mut [u8]> {
    page_validate_header(page)?;
    let s = page_special_offset(page);
    Ok(&mut page[s..])
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

    fn new_page(special: usize) -> Vec<u8> {
        let mut p = vec![0u8; BLCKSZ];
        page_init(&mut p, special);
        p
    }

    #[test]
    fn item_id_layout_is_postgresqls() {
        let id = ItemId { off: 8000, flags: LpFlags::Normal, len: 150 };
        let v = id.encode();
        assert_eq!(v & 0x7fff, 8000);
        assert_eq!((v >> 15) & 3, 1);
        assert_eq!(v >> 17, 150);
        assert_eq!(ItemId::decode(v), id);
        for f in [LpFlags::Unused, LpFlags::Normal, LpFlags::Redirect, LpFlags::Dead] {
            let id = ItemId { off: 0x7fff, flags: f, len: 0x7fff };
            assert_eq!(ItemId::decode(id.encode()), id);
        }
    }

    #[test]
    fn init_add_get_and_free_space() {
        let mut p = new_page(16);
        page_validate(&p).unwrap();
        assert_eq!(page_special(&p).unwrap().len(), 16);
        assert_eq!(page_free_space(&p), BLCKSZ - 16 - PAGE_HEADER_SIZE - 4);
        let a = page_add_item(&mut p, b"hello", None, 0).unwrap().unwrap();
        let b = page_add_item(&mut p, &[7u8; 100], None, 0).unwrap().unwrap();
        assert_eq!((a, b), (1, 2));
        assert_eq!(page_get_item(&p, 1).unwrap(), b"hello");
        assert_eq!(page_get_item(&p, 2).unwrap(), &[7u8; 100][..]);
        assert_eq!(page_upper(&p), BLCKSZ - 16 - 8 - 104);
        assert_eq!(page_lower(&p), PAGE_HEADER_SIZE + 8);
        page_validate(&p).unwrap();
        assert!(page_get_item(&p, 3).is_err());
        assert!(page_get_item(&p, 0).is_err());
        // Insert in the middle shifts line pointers (index page behaviour).
        let c = page_add_item(&mut p, b"mid", Some(1), 0).unwrap().unwrap();
        assert_eq!(c, 1);
        assert_eq!(page_get_item(&p, 2).unwrap(), b"hello");
        page_index_tuple_delete(&mut p, 1).unwrap();
        page_validate(&p).unwrap();
        assert_eq!(page_get_item(&p, 1).unwrap(), b"hello");
        assert_eq!(page_get_item(&p, 2).unwrap(), &[7u8; 100][..]);
        assert_eq!(page_max_offset_number(&p), 2);
        page_set_flag(&mut p, PD_ALL_VISIBLE);
        assert!(page_has_flag(&p, PD_ALL_VISIBLE));
        page_clear_flag(&mut p, PD_ALL_VISIBLE);
        assert_eq!(page_flags(&p), 0);
        set_page_prune_xid(&mut p, 1234);
        assert_eq!(page_prune_xid(&p), 1234);
    }

    #[test]
    fn page_fills_up_exactly() {
        let mut p = new_page(0);
        let item = [1u8; 96];
        let mut n = 0;
        while page_add_item(&mut p, &item, None, 0).unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, (BLCKSZ - PAGE_HEADER_SIZE) / (96 + 4));
        assert!(page_free_space(&p) < 96);
        page_validate(&p).unwrap();
        // The heap limit on line pointers.
        let mut p = new_page(0);
        let mut n = 0;
        while page_add_item(&mut p, &[1u8], None, PAI_IS_HEAP).unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, MAX_HEAP_TUPLES_PER_PAGE);
        assert_eq!(page_heap_free_space(&p), 0);
        assert!(page_free_space(&p) > 0);
    }

    #[test]
    fn repair_fragmentation_keeps_offsets_and_reuses_line_pointers() {
        let mut p = new_page(0);
        for i in 0..10u8 {
            page_add_item(&mut p, &vec![i; 50 + i as usize], None, PAI_IS_HEAP).unwrap().unwrap();
        }
        let before = page_free_space(&p);
        page_set_item_id(&mut p, 3, ItemId::UNUSED).unwrap();
        page_set_item_id(&mut p, 5, ItemId::dead()).unwrap();
        page_set_item_id(&mut p, 7, ItemId::redirect(8)).unwrap();
        page_repair_fragmentation(&mut p).unwrap();
        page_validate(&p).unwrap();
        assert_eq!(page_free_space(&p), before + 56 + 56 + 56);
        for i in [0u8, 1, 3, 5, 7, 8, 9] {
            assert_eq!(page_get_item(&p, i as u16 + 1).unwrap(), &vec![i; 50 + i as usize][..]);
        }
        for off in [3, 5, 7] {
            assert!(page_get_item(&p, off).is_err());
        }
        assert_eq!(page_get_item_id(&p, 7).unwrap(), ItemId::redirect(8));
        assert!(page_has_flag(&p, PD_HAS_FREE_LINES));
        // The unused line pointer 3 is reused; then the flag goes once none is left.
        assert_eq!(page_add_item(&mut p, b"x", None, PAI_IS_HEAP).unwrap(), Some(3));
        assert_eq!(page_add_item(&mut p, b"y", None, PAI_IS_HEAP).unwrap(), Some(11));
        assert!(!page_has_flag(&p, PD_HAS_FREE_LINES));
        // Overwrite rules.
        assert!(page_add_item(&mut p, b"z", Some(3), PAI_OVERWRITE).is_err());
        assert!(page_add_item(&mut p, b"z", Some(13), PAI_OVERWRITE).is_err());
        assert_eq!(page_add_item(&mut p, b"z", Some(12), PAI_OVERWRITE).unwrap(), Some(12));
    }

    #[test]
    fn validation_rejects_impossible_headers() {
        let good = new_page(8);
        let cases: Vec<(usize, u16)> = vec![
            (PD_LOWER, 10),                 // lower below header
            (PD_LOWER, 8188),               // lower > upper
            (PD_LOWER, 27),                 // not a whole line pointer
            (PD_UPPER, 8190),               // upper > special
            (PD_SPECIAL, 9000),             // special > BLCKSZ
            (PD_SPECIAL, 8185),             // misaligned special
            (PD_FLAGS, 0x80),               // unknown flag
            (PD_PAGESIZE_VERSION, 0x1004),  // wrong page size
        ];
        for (field, v) in cases {
            let mut p = good.clone();
            p[field..field + 2].copy_from_slice(&v.to_le_bytes());
            assert!(matches!(page_validate(&p), Err(Error::Corrupt { .. })), "{field} {v}");
        }
        // An item pointing past the special space.
        let mut p = good.clone();
        page_add_item(&mut p, b"abc", None, 0).unwrap().unwrap();
        let pos = PAGE_HEADER_SIZE;
        p[pos..pos + 4].copy_from_slice(&ItemId::normal(8184, 100).encode().to_le_bytes());
        assert!(page_validate(&p).is_err());
        assert!(page_get_item(&p, 1).is_err());
        // Overlapping items.
        let mut p = good.clone();
        page_add_item(&mut p, &[1u8; 40], None, 0).unwrap().unwrap();
        page_add_item(&mut p, &[2u8; 40], None, 0).unwrap().unwrap();
        let id1 = page_get_item_id(&p, 1).unwrap();
        page_set_item_id(&mut p, 2, ItemId::normal(id1.off as usize, 40)).unwrap();
        assert!(page_validate(&p).is_err());
        assert!(page_repair_fragmentation(&mut p).is_err());
    }

    /// Random bytes and randomly damaged valid pages: every function returns (an
    /// error or a value) and never panics or slices out of bounds.
    #[test]
    fn random_bytes_never_panic() {
        use rand::{rngs::SmallRng, Rng, SeedableRng};
        let mut rng = SmallRng::seed_from_u64(0x0510_77ed);
        let mut base = new_page(0);
        for i in 0..40u8 {
            page_add_item(&mut base, &vec![i; 20 + i as usize], None, 0).unwrap();
        }
        for round in 0..1500 {
            let mut p = if round % 2 == 0 {
                let mut p = vec![0u8; BLCKSZ];
                rng.fill(&mut p[..]);
                // Make the header plausible often enough to reach the item checks.
                if round % 4 == 0 {
                    p[PD_PAGESIZE_VERSION..PD_PAGESIZE_VERSION + 2]
                        .copy_from_slice(&(BLCKSZ as u16 | PG_PAGE_LAYOUT_VERSION).to_le_bytes());
                    p[PD_FLAGS..PD_FLAGS + 2].copy_from_slice(&[0, 0]);
                }
                p
            } else {
                let mut p = base.clone();
                for _ in 0..rng.gen_range(1..6) {
                    let at = rng.gen_range(0..PAGE_HEADER_SIZE + 200);
                    p[at] = rng.gen();
                }
                p
            };
            let valid = page_validate(&p).is_ok();
            let max = page_max_offset_number(&p);
            for off in 0..=max.saturating_add(1).min(MAX_OFFSET_NUMBER) {
                let r = page_get_item(&p, off);
                if valid && off >= 1 && off <= max {
                    let id = page_get_item_id(&p, off).unwrap();
                    assert_eq!(r.is_ok(), id.has_storage());
                }
            }
            let _ = page_free_space(&p);
            let _ = page_heap_free_space(&p);
            let _ = page_special(&p);
            let _ = page_add_item(&mut p, b"new item", None, PAI_IS_HEAP);
            let _ = page_repair_fragmentation(&mut p);
            if valid {
                page_validate(&p).unwrap();
            }
        }
    }

    /// Random inserts (appending, reusing, shifting), index deletes, and line pointer
    /// kills followed by compaction, checked against a model of the page's items.
    #[test]
    fn random_operations_match_a_model() {
        use rand::{rngs::SmallRng, Rng, SeedableRng};
        let mut rng = SmallRng::seed_from_u64(77);
        for _ in 0..30 {
            let mut p = new_page(16);
            // model[i] = contents of offset i + 1 (None: no storage).
            let mut model: Vec<Option<Vec<u8>>> = Vec::new();
            for step in 0..400 {
                let len = rng.gen_range(1..200);
                let item: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                match rng.gen_range(0..4) {
                    0 => {
                        if let Some(off) = page_add_item(&mut p, &item, None, 0).unwrap() {
                            let i = off as usize - 1;
                            if i == model.len() {
                                model.push(Some(item));
                            } else {
                                assert!(model[i].is_none(), "reused a used slot");
                                model[i] = Some(item);
                            }
                        }
                    }
                    1 if !model.is_empty() && model.iter().all(|m| m.is_some()) => {
                        // Insert in the middle (index page): shifts the rest up.
                        let at = rng.gen_range(1..=model.len() as u16 + 1);
                        if page_add_item(&mut p, &item, Some(at), 0).unwrap().is_some() {
                            model.insert(at as usize - 1, Some(item));
                        }
                    }
                    2 if !model.is_empty() && model.iter().all(|m| m.is_some()) => {
                        let at = rng.gen_range(1..=model.len() as u16);
                        page_index_tuple_delete(&mut p, at).unwrap();
                        model.remove(at as usize - 1);
                    }
                    _ if !model.is_empty() => {
                        let at = rng.gen_range(0..model.len());
                        if model[at].is_some() {
                            page_set_item_id(&mut p, at as u16 + 1, ItemId::UNUSED).unwrap();
                            model[at] = None;
                            page_repair_fragmentation(&mut p).unwrap();
                        }
                    }
                    _ => {}
                }
                page_validate(&p).unwrap();
                assert_eq!(page_max_offset_number(&p) as usize, model.len(), "step {step}");
                for (i, m) in model.iter().enumerate() {
                    let got = page_get_item(&p, i as u16 + 1).ok();
                    assert_eq!(got, m.as_deref(), "step {step} offset {}", i + 1);
                }
                let used: usize = model.iter().flatten().map(|m| maxalign(m.len())).sum();
                assert_eq!(page_exact_free_space(&p), BLCKSZ - 16 - PAGE_HEADER_SIZE - 4 * model.len() - used);
            }
        }
    }
}
