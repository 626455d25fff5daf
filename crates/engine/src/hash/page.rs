//! Hash index pages: the special space, the metapage, bitmap pages and index
//! entries. Byte diagrams: docs/format/hash.md.

use super::buckets::NUM_UNITS;
use crate::config::BLCKSZ;
use crate::error::{Error, Result};
use crate::heap::tuple::Tid;
use crate::storage::page::{
    maxalign, page_get_item, page_init, page_max_offset_number, page_special, page_special_mut, OffsetNumber, ITEM_ID_SIZE,
    PAGE_HEADER_SIZE, PD_LOWER,
};
use crate::storage::{BlockNumber, INVALID_BLOCK};

/// Size of the special space at the end of every hash page.
pub const HASH_SPECIAL_SIZE: usize = 16;
/// Identifies a hash page in its special space ("HF").
pub const HASHO_PAGE_ID: u16 = 0x4846;

/// Page types (one of them, or none: a free overflow page).
pub const LH_OVERFLOW_PAGE: u16 = 1 << 0;
pub const LH_BUCKET_PAGE: u16 = 1 << 1;
pub const LH_BITMAP_PAGE: u16 = 1 << 2;
pub const LH_META_PAGE: u16 = 1 << 3;
const LH_PAGE_TYPE: u16 = 0x000f;
/// New bucket of an unfinished split: its entries are being copied in from the
/// bucket being split (primary bucket pages only).
pub const LH_BUCKET_BEING_POPULATED: u16 = 1 << 4;
/// Old bucket of an unfinished split (primary bucket pages only).
pub const LH_BUCKET_BEING_SPLIT: u16 = 1 << 5;
/// The bucket still holds copies of entries that a finished split moved to the
/// new bucket (primary bucket pages only).
pub const LH_BUCKET_NEEDS_SPLIT_CLEANUP: u16 = 1 << 6;
const LH_VALID: u16 = 0x007f;

/// Block 0 is the metapage.
pub const METAPAGE_BLOCK: BlockNumber = 0;

/// The special space (PostgreSQL's HashPageOpaqueData).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HashOpaque {
    /// Overflow page: the previous page of its bucket chain. **Primary bucket
    /// page: the index's `maxbucket` right after this bucket was last split or
    /// created** (PostgreSQL's trick for validating a cached metapage).
    pub prev: BlockNumber,
    /// The next page of the bucket chain, `INVALID_BLOCK` at its end.
    pub next: BlockNumber,
    /// The bucket the page belongs to (`INVALID_BLOCK` on other pages).
    pub bucket: u32,
    pub flags: u16,
}

impl HashOpaque {
    pub fn page_type(&self) -> u16 {
        self.flags & LH_PAGE_TYPE
    }
    pub fn is_bucket_page(&self) -> bool {
        self.page_type() == LH_BUCKET_PAGE
    }
    pub fn is_overflow_page(&self) -> bool {
        self.page_type() == LH_OVERFLOW_PAGE
    }
    pub fn being_split(&self) -> bool {
        self.flags & LH_BUCKET_BEING_SPLIT != 0
    }
    pub fn being_populated(&self) -> bool {
        self.flags & LH_BUCKET_BEING_POPULATED != 0
    }
    pub fn needs_split_cleanup(&self) -> bool {
        self.flags & LH_BUCKET_NEEDS_SPLIT_CLEANUP != 0
    }
    /// The `maxbucket` stored on a primary bucket page.
    pub fn split_maxbucket(&self) -> u32 {
        self.prev
    }
    /// An empty page of `bucket`'s chain.
    pub fn overflow(bucket: u32, prev: BlockNumber) -> HashOpaque {
        HashOpaque { prev, next: INVALID_BLOCK, bucket, flags: LH_OVERFLOW_PAGE }
    }
    /// A free overflow page (PostgreSQL's LH_UNUSED_PAGE).
    pub fn unused() -> HashOpaque {
        HashOpaque { prev: INVALID_BLOCK, next: INVALID_BLOCK, bucket: INVALID_BLOCK, flags: 0 }
    }
}

/// Byte offset of the special space of an initialized hash page.
pub const SPECIAL_OFF: usize = BLCKSZ - HASH_SPECIAL_SIZE;

/// Reads the special space; a page that is not a hash page is corruption.
pub fn opaque(page: &[u8]) -> Result<HashOpaque> {
    let s = page_special(page)?;
    if s.len() != HASH_SPECIAL_SIZE {
        return Err(Error::corrupt(format!("hash page has a special space of {} bytes", s.len())));
    }
    let u32_at = |i: usize| u32::from_le_bytes(s[i..i + 4].try_into().unwrap());
    let page_id = u16::from_le_bytes([s[14], s[15]]);
    let o = HashOpaque { prev: u32_at(0), next: u32_at(4), bucket: u32_at(8), flags: u16::from_le_bytes([s[12], s[13]]) };
    if page_id != HASHO_PAGE_ID || o.flags & !LH_VALID != 0 || o.page_type().count_ones() > 1 {
        return Err(Error::corrupt(format!("index page is not a valid hash page: {o:?}, page id {page_id:#x}")));
    }
    Ok(o)
}

/// The special space bytes of `o` (for `PageOp::Write` at [`SPECIAL_OFF`]).
pub fn opaque_bytes(o: &HashOpaque) -> [u8; HASH_SPECIAL_SIZE] {
    let mut s = [0u8; HASH_SPECIAL_SIZE];
    s[0..4].copy_from_slice(&o.prev.to_le_bytes());
    s[4..8].copy_from_slice(&o.next.to_le_bytes());
    s[8..12].copy_from_slice(&o.bucket.to_le_bytes());
    s[12..14].copy_from_slice(&o.flags.to_le_bytes());
    s[14..16].copy_from_slice(&HASHO_PAGE_ID.to_le_bytes());
    s
}

pub fn set_opaque(page: &mut [u8], o: &HashOpaque) -> Result<()> {
    page_special_mut(page)?.copy_from_slice(&opaque_bytes(o));
    Ok(())
}

/// Initializes an empty hash page.
pub fn hash_page_init(page: &mut [u8], o: &HashOpaque) {
    page_init(page, HASH_SPECIAL_SIZE);
    // The special space was just made: cannot fail.
    let _ = set_opaque(page, o);
}

// ----- the metapage --------------------------------------------------------------

pub const HASH_MAGIC: u32 = 0x4652_4853; // "FRHS"
pub const HASH_VERSION: u32 = 1;
/// Bitmap pages the metapage can name (each covers [`BITS_PER_MAP`] blocks: 64 GB
/// of index in all).
pub const MAX_BITMAPS: usize = 256;
/// Where the metapage's contents start.
pub const META_OFF: usize = PAGE_HEADER_SIZE;
const META_FIXED: usize = 40;
/// Size of the metapage's contents.
pub const META_SIZE: usize = META_FIXED + NUM_UNITS * 4 + MAX_BITMAPS * 4;
const _: () = assert!(META_OFF + META_SIZE < SPECIAL_OFF, "the metapage's contents fit before the special space");

/// Default and bounds of the `fillfactor` storage parameter (PostgreSQL's).
pub const HASH_DEFAULT_FILLFACTOR: u16 = 75;
pub const HASH_MIN_FILLFACTOR: u16 = 10;

/// The metapage's contents (PostgreSQL's HashMetaPageData).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HashMeta {
    /// Entries in the index, approximately: exact after VACUUM; between, inserts
    /// are added when a split folds them in (README, "When to split").
    pub ntuples: u64,
    /// Target entries per bucket: a split is due when `ntuples > ffactor *
    /// (maxbucket + 1)`.
    pub ffactor: u32,
    /// The `fillfactor` the index was created with (percent).
    pub fillfactor: u16,
    /// The highest bucket number.
    pub maxbucket: u32,
    /// No block below this is a free overflow page (a hint for the bitmap search).
    pub first_free: BlockNumber,
    /// Number of free overflow pages (bits set in the bitmaps).
    pub nfree: u32,
    /// First block of each allocation unit (`INVALID_BLOCK`: not allocated).
    pub units: [BlockNumber; NUM_UNITS],
    /// Bitmap page `k` covers blocks `[k * BITS_PER_MAP, (k + 1) * BITS_PER_MAP)`.
    pub bitmaps: Vec<BlockNumber>,
}

impl HashMeta {
    /// Entries per bucket for a fill factor: the entries (with their line
    /// pointers) that fill `fillfactor` percent of a page (PostgreSQL's formula; at
    /// least 10).
    pub fn ffactor_for(fillfactor: u16) -> u32 {
        let target = BLCKSZ * fillfactor as usize / 100;
        ((target / (ENTRY_SPACE + ITEM_ID_SIZE)) as u32).max(10)
    }

    /// The primary page of `bucket` (`None`: its unit is not allocated, corruption
    /// for a bucket `<= maxbucket`).
    pub fn block_of(&self, bucket: u32) -> Option<BlockNumber> {
        let (u, off) = super::buckets::unit_of(bucket);
        let first = self.units[u];
        (first != INVALID_BLOCK).then_some(first + off)
    }

    pub fn encode(&self) -> [u8; META_SIZE] {
        let mut p = [0u8; META_SIZE];
        p[0..4].copy_from_slice(&HASH_MAGIC.to_le_bytes());
        p[4..8].copy_from_slice(&HASH_VERSION.to_le_bytes());
        p[8..16].copy_from_slice(&self.ntuples.to_le_bytes());
        p[16..20].copy_from_slice(&self.ffactor.to_le_bytes());
        p[20..22].copy_from_slice(&self.fillfactor.to_le_bytes());
        p[24..28].copy_from_slice(&self.maxbucket.to_le_bytes());
        p[28..32].copy_from_slice(&self.first_free.to_le_bytes());
        p[32..36].copy_from_slice(&self.nfree.to_le_bytes());
        p[36..40].copy_from_slice(&(self.bitmaps.len() as u32).to_le_bytes());
        for (i, u) in self.units.iter().enumerate() {
            p[META_FIXED + i * 4..META_FIXED + i * 4 + 4].copy_from_slice(&u.to_le_bytes());
        }
        let b0 = META_FIXED + NUM_UNITS * 4;
        for (i, b) in self.bitmaps.iter().enumerate() {
            p[b0 + i * 4..b0 + i * 4 + 4].copy_from_slice(&b.to_le_bytes());
        }
        p
    }

    pub fn decode(p: &[u8]) -> Result<HashMeta> {
        if p.len() < META_SIZE {
            return Err(Error::corrupt("hash metapage too short"));
        }
        let u32_at = |i: usize| u32::from_le_bytes(p[i..i + 4].try_into().unwrap());
        if u32_at(0) != HASH_MAGIC {
            return Err(Error::corrupt("index is not a hash index (bad metapage magic)"));
        }
        if u32_at(4) != HASH_VERSION {
            return Err(Error::corrupt(format!("hash index version mismatch: {} vs {HASH_VERSION}", u32_at(4))));
        }
        let nbitmaps = u32_at(36) as usize;
        if nbitmaps > MAX_BITMAPS {
            return Err(Error::corrupt(format!("hash metapage names {nbitmaps} bitmap pages")));
        }
        let mut units = [INVALID_BLOCK; NUM_UNITS];
        for (i, u) in units.iter_mut().enumerate() {
            *u = u32_at(META_FIXED + i * 4);
        }
        let b0 = META_FIXED + NUM_UNITS * 4;
        Ok(HashMeta {
            ntuples: u64::from_le_bytes(p[8..16].try_into().unwrap()),
            ffactor: u32_at(16),
            fillfactor: u16::from_le_bytes([p[20], p[21]]),
            maxbucket: u32_at(24),
            first_free: u32_at(28),
            nfree: u32_at(32),
            units,
            bitmaps: (0..nbitmaps).map(|i| u32_at(b0 + i * 4)).collect(),
        })
    }
}

/// Initializes the metapage (pd_lower past the contents, so that a full-page
/// image keeps them).
pub fn meta_init(page: &mut [u8], m: &HashMeta) {
    hash_page_init(page, &HashOpaque { prev: INVALID_BLOCK, next: INVALID_BLOCK, bucket: INVALID_BLOCK, flags: LH_META_PAGE });
    page[META_OFF..META_OFF + META_SIZE].copy_from_slice(&m.encode());
    page[PD_LOWER..PD_LOWER + 2].copy_from_slice(&((META_OFF + META_SIZE) as u16).to_le_bytes());
}

pub fn read_meta(page: &[u8]) -> Result<HashMeta> {
    let o = opaque(page)?;
    if o.page_type() != LH_META_PAGE {
        return Err(Error::corrupt("hash metapage has the wrong page type"));
    }
    HashMeta::decode(&page[META_OFF..])
}

// ----- bitmap pages ----------------------------------------------------------------

/// Where a bitmap page's bits start, and how many bytes they take.
pub const BITMAP_OFF: usize = PAGE_HEADER_SIZE;
pub const BITMAP_BYTES: usize = 4096;
/// Blocks covered by one bitmap page.
pub const BITS_PER_MAP: u32 = (BITMAP_BYTES * 8) as u32;
const _: () = assert!(BITMAP_OFF + BITMAP_BYTES < SPECIAL_OFF, "the bits fit before the special space");

/// Initializes a bitmap page with every bit clear.
pub fn bitmap_init(page: &mut [u8]) {
    hash_page_init(page, &HashOpaque { prev: INVALID_BLOCK, next: INVALID_BLOCK, bucket: INVALID_BLOCK, flags: LH_BITMAP_PAGE });
    page[PD_LOWER..PD_LOWER + 2].copy_from_slice(&((BITMAP_OFF + BITMAP_BYTES) as u16).to_le_bytes());
}

/// (byte offset in the page, bit mask) of block `blk`'s bit in its bitmap page.
pub fn bitmap_bit(blk: BlockNumber) -> (usize, u8) {
    let bit = (blk % BITS_PER_MAP) as usize;
    (BITMAP_OFF + bit / 8, 1 << (bit % 8))
}

/// The first block `>= from` (in the page's range) whose bit is set on bitmap page
/// `k`.
pub fn bitmap_first_set(page: &[u8], k: u32, from: BlockNumber) -> Option<BlockNumber> {
    let base = k * BITS_PER_MAP;
    let start = from.saturating_sub(base).min(BITS_PER_MAP) as usize;
    let bits = &page[BITMAP_OFF..BITMAP_OFF + BITMAP_BYTES];
    let mut i = start / 8;
    let mut mask = 0xffu8 << (start % 8);
    while i < BITMAP_BYTES {
        let b = bits[i] & mask;
        if b != 0 {
            return Some(base + (i * 8) as u32 + b.trailing_zeros());
        }
        i += 1;
        mask = 0xff;
    }
    None
}

// ----- entries --------------------------------------------------------------------------

/// An entry's bytes: hash code (4), heap TID (6), flags (2).
pub const ENTRY_SIZE: usize = 12;
/// Its space on a page, without the line pointer.
pub const ENTRY_SPACE: usize = maxalign(ENTRY_SIZE);
/// Entry flag: copied into a new bucket by a split (scans of a bucket being
/// populated skip these: they read the originals in the old bucket).
pub const ENTRY_MOVED_BY_SPLIT: u16 = 1;
/// Entries per page.
pub const ENTRIES_PER_PAGE: usize = (BLCKSZ - PAGE_HEADER_SIZE - HASH_SPECIAL_SIZE) / (ENTRY_SPACE + ITEM_ID_SIZE);

/// One index entry: the hash code of the key and the heap TID (PostgreSQL stores
/// only the hash code too: every match is re-checked on the heap tuple).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HashEntry {
    pub hash: u32,
    pub tid: Tid,
    pub flags: u16,
}

impl HashEntry {
    pub fn new(hash: u32, tid: Tid) -> HashEntry {
        HashEntry { hash, tid, flags: 0 }
    }

    pub fn moved_by_split(&self) -> bool {
        self.flags & ENTRY_MOVED_BY_SPLIT != 0
    }

    /// The order within a page: by hash code, then heap TID.
    pub fn key(&self) -> (u32, Tid) {
        (self.hash, self.tid)
    }

    pub fn encode(&self) -> [u8; ENTRY_SIZE] {
        let mut b = [0u8; ENTRY_SIZE];
        b[0..4].copy_from_slice(&self.hash.to_le_bytes());
        b[4..10].copy_from_slice(&self.tid.encode());
        b[10..12].copy_from_slice(&self.flags.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Result<HashEntry> {
        if b.len() != ENTRY_SIZE {
            return Err(Error::corrupt(format!("hash index entry of {} bytes", b.len())));
        }
        let flags = u16::from_le_bytes([b[10], b[11]]);
        if flags & !ENTRY_MOVED_BY_SPLIT != 0 {
            return Err(Error::corrupt(format!("hash index entry flags {flags:#x}")));
        }
        Ok(HashEntry { hash: u32::from_le_bytes(b[0..4].try_into().unwrap()), tid: Tid::decode(&b[4..10]), flags })
    }
}

pub fn page_entry(page: &[u8], off: OffsetNumber) -> Result<HashEntry> {
    HashEntry::decode(page_get_item(page, off)?)
}

pub fn max_offset(page: &[u8]) -> OffsetNumber {
    page_max_offset_number(page)
}

/// The offset where an entry with `key` goes to keep the page sorted: the first
/// offset whose entry is greater (binary search).
pub fn insert_position(page: &[u8], key: (u32, Tid)) -> Result<OffsetNumber> {
    let (mut lo, mut hi) = (1, max_offset(page) + 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if page_entry(page, mid)?.key() > key {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Ok(lo)
}

/// The first offset whose entry's hash code is `>= hash`.
pub fn first_with_hash(page: &[u8], hash: u32) -> Result<OffsetNumber> {
    let (mut lo, mut hi) = (1, max_offset(page) + 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if page_entry(page, mid)?.hash >= hash {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Ok(lo)
}

/// Whether one more entry fits.
pub fn has_room(page: &[u8]) -> bool {
    crate::storage::page::page_free_space(page) >= ENTRY_SPACE
}

/// Builds a page of `o` holding `entries` (sorted here): for pages rebuilt whole
/// (split, squeeze), logged as images.
pub fn build_page(o: &HashOpaque, entries: &mut [HashEntry]) -> Result<Vec<u8>> {
    entries.sort_unstable_by_key(|e| e.key());
    let mut page = vec![0u8; BLCKSZ];
    hash_page_init(&mut page, o);
    for e in entries.iter() {
        if crate::storage::page::page_add_item(&mut page, &e.encode(), None, 0)?.is_none() {
            return Err(Error::internal(format!("{} hash entries do not fit on a page", entries.len())));
        }
    }
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_constants() {
        assert_eq!(ENTRY_SPACE, 16);
        assert_eq!(ENTRIES_PER_PAGE, 407);
        assert_eq!(HashMeta::ffactor_for(75), 307, "PostgreSQL's ffactor for fillfactor 75");
        assert_eq!(HashMeta::ffactor_for(10), 40);
    }

    #[test]
    fn metapage_and_bitmap_round_trip() {
        let mut units = [INVALID_BLOCK; NUM_UNITS];
        units[0] = 1;
        units[1] = 2;
        units[2] = 7;
        let m = HashMeta { ntuples: 12345, ffactor: 307, fillfactor: 75, maxbucket: 3, first_free: 9, nfree: 2, units, bitmaps: vec![5, 70000] };
        let mut page = vec![0u8; BLCKSZ];
        meta_init(&mut page, &m);
        assert_eq!(read_meta(&page).unwrap(), m);
        assert_eq!(m.block_of(3), Some(8));
        assert_eq!(m.block_of(4), None);
        let mut bm = vec![0u8; BLCKSZ];
        bitmap_init(&mut bm);
        assert_eq!(opaque(&bm).unwrap().page_type(), LH_BITMAP_PAGE);
        for blk in [BITS_PER_MAP + 3, BITS_PER_MAP + 40_000 % BITS_PER_MAP] {
            let (at, bit) = bitmap_bit(blk);
            bm[at] |= bit;
        }
        assert_eq!(bitmap_first_set(&bm, 1, 0), Some(BITS_PER_MAP + 3));
        assert_eq!(bitmap_first_set(&bm, 1, BITS_PER_MAP + 4), Some(BITS_PER_MAP + 40_000 % BITS_PER_MAP));
        assert_eq!(bitmap_first_set(&bm, 1, 2 * BITS_PER_MAP), None);
    }

    #[test]
    fn pages_stay_sorted() {
        let mut entries: Vec<HashEntry> = (0..50u32).map(|i| HashEntry::new(i.wrapping_mul(2654435761) % 17, Tid::new(i, 1))).collect();
        let page = build_page(&HashOpaque::overflow(3, 1), &mut entries).unwrap();
        for off in 2..=max_offset(&page) {
            assert!(page_entry(&page, off - 1).unwrap().key() < page_entry(&page, off).unwrap().key());
        }
        let first = first_with_hash(&page, 5).unwrap();
        assert_eq!(page_entry(&page, first).unwrap().hash, 5);
        assert!(first == 1 || page_entry(&page, first - 1).unwrap().hash < 5);
        assert_eq!(insert_position(&page, (100, Tid::new(0, 1))).unwrap(), 51);
        assert_eq!(insert_position(&page, (0, Tid::new(0, 0))).unwrap(), 1);
    }
}
