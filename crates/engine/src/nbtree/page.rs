//! B-tree page layout: the special space, the metapage, index tuples, and the
//! comparison of a scan key with an index tuple. Byte diagrams: docs/format/btree.md.

use crate::config::BLCKSZ;
use crate::error::{Error, Result};
use crate::heap::tuple::{bitmap_len, deform_data_each, fill_data, heap_compute_data_size, AttrDesc, Datum, Tid};
use crate::storage::page::{
    page_get_item, page_init, page_max_offset_number, page_special, page_special_mut, OffsetNumber, PAGE_HEADER_SIZE,
};
use crate::storage::{BlockNumber, INVALID_BLOCK};
use std::cmp::Ordering;
use std::sync::Arc;

/// Size of the B-tree special space at the end of every page.
pub const BT_SPECIAL_SIZE: usize = 16;

/// Page flags (special space, `btpo_flags`).
pub const BTP_LEAF: u16 = 0x0001;
/// The page is the root (the metapage points to it).
pub const BTP_ROOT: u16 = 0x0002;
/// Unlinked from the tree (never set yet: no page deletion).
pub const BTP_DELETED: u16 = 0x0004;
/// Half-dead: on its way to deletion (never set yet).
pub const BTP_HALF_DEAD: u16 = 0x0008;
/// The right sibling has no downlink in the parent yet.
pub const BTP_INCOMPLETE_SPLIT: u16 = 0x0010;
/// The metapage.
pub const BTP_META: u16 = 0x0020;
const BTP_VALID: u16 = 0x003f;

/// Magic number and version of the metapage.
pub const BTREE_MAGIC: u32 = 0x4652_4254; // "FRBT"
pub const BTREE_VERSION: u32 = 2;
pub const METAPAGE_BLOCK: BlockNumber = 0;
const META_OFF: usize = PAGE_HEADER_SIZE;
const META_SIZE: usize = 24;

/// Offset number of the high key on a non-rightmost page.
pub const P_HIKEY: OffsetNumber = 1;

/// Index tuple header size: the heap TID and the flags. A pivot's downlink
/// (4 bytes) follows when [`ITUP_PIVOT`] is set, then the key image.
pub const ITUP_HEADER: usize = 8;
/// Index tuple flag: a pivot without key (the first item of an internal page: minus
/// infinity).
pub const ITUP_MINUS_INF: u16 = 0x0001;
/// Index tuple flag: the key has NULLs, and its image starts with a null bitmap.
pub const ITUP_HAS_NULLS: u16 = 0x0002;
/// Index tuple flag: a downlink (child block) follows the header (every item of
/// an internal page; never a leaf item or a high key).
pub const ITUP_PIVOT: u16 = 0x0004;
const ITUP_FLAGS: u16 = ITUP_MINUS_INF | ITUP_HAS_NULLS | ITUP_PIVOT;

/// Largest index tuple: three must fit on a page (plus a high key).
pub const BTREE_MAX_ITEM: usize = (BLCKSZ - PAGE_HEADER_SIZE - BT_SPECIAL_SIZE) / 3 - 4 - 8;

/// The special space of a B-tree page (PostgreSQL's BTPageOpaqueData).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BtOpaque {
    pub left: BlockNumber,
    pub right: BlockNumber,
    pub level: u32,
    pub flags: u16,
}

impl BtOpaque {
    pub fn is_leaf(&self) -> bool {
        self.flags & BTP_LEAF != 0
    }
    pub fn is_root(&self) -> bool {
        self.flags & BTP_ROOT != 0
    }
    pub fn is_rightmost(&self) -> bool {
        self.right == INVALID_BLOCK
    }
    pub fn is_leftmost(&self) -> bool {
        self.left == INVALID_BLOCK
    }
    pub fn incomplete_split(&self) -> bool {
        self.flags & BTP_INCOMPLETE_SPLIT != 0
    }
    /// First offset holding a data item (after the high key, if any).
    pub fn first_data_key(&self) -> OffsetNumber {
        if self.is_rightmost() {
            1
        } else {
            2
        }
    }
}

/// Reads the special space; a page that is not a valid B-tree page is corruption.
pub fn opaque(page: &[u8]) -> Result<BtOpaque> {
    let s = page_special(page)?;
    if s.len() != BT_SPECIAL_SIZE {
        return Err(Error::corrupt(format!("B-tree page has a special space of {} bytes", s.len())));
    }
    let u32_at = |i: usize| u32::from_le_bytes(s[i..i + 4].try_into().unwrap());
    let o = BtOpaque {
        left: u32_at(0),
        right: u32_at(4),
        level: u32_at(8),
        flags: u16::from_le_bytes([s[12], s[13]]),
    };
    if o.flags & !BTP_VALID != 0 || (o.level == 0) != o.is_leaf() && o.flags & BTP_META == 0 {
        return Err(Error::corrupt(format!("B-tree page has invalid special space {o:?}")));
    }
    Ok(o)
}

pub fn set_opaque(page: &mut [u8], o: &BtOpaque) -> Result<()> {
    let s = page_special_mut(page)?;
    s[0..4].copy_from_slice(&o.left.to_le_bytes());
    s[4..8].copy_from_slice(&o.right.to_le_bytes());
    s[8..12].copy_from_slice(&o.level.to_le_bytes());
    s[12..14].copy_from_slice(&o.flags.to_le_bytes());
    s[14..16].fill(0);
    Ok(())
}

/// Initializes an empty B-tree page.
pub fn bt_page_init(page: &mut [u8], o: &BtOpaque) {
    page_init(page, BT_SPECIAL_SIZE);
    // The special space was just made: cannot fail.
    let _ = set_opaque(page, o);
}

/// The metapage's contents (PostgreSQL's BTMetaPageData).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BtMeta {
    pub root: BlockNumber,
    pub level: u32,
    pub fast_root: BlockNumber,
    pub fast_level: u32,
}

pub fn meta_init(page: &mut [u8], m: &BtMeta) {
    bt_page_init(page, &BtOpaque { left: INVALID_BLOCK, right: INVALID_BLOCK, level: 0, flags: BTP_META });
    write_meta(page, m);
    // pd_lower past the metadata, so that a full-page image keeps it.
    page[12..14].copy_from_slice(&((META_OFF + META_SIZE) as u16).to_le_bytes());
}

pub fn write_meta(page: &mut [u8], m: &BtMeta) {
    let p = &mut page[META_OFF..META_OFF + META_SIZE];
    p[0..4].copy_from_slice(&BTREE_MAGIC.to_le_bytes());
    p[4..8].copy_from_slice(&BTREE_VERSION.to_le_bytes());
    p[8..12].copy_from_slice(&m.root.to_le_bytes());
    p[12..16].copy_from_slice(&m.level.to_le_bytes());
    p[16..20].copy_from_slice(&m.fast_root.to_le_bytes());
    p[20..24].copy_from_slice(&m.fast_level.to_le_bytes());
}

pub fn read_meta(page: &[u8]) -> Result<BtMeta> {
    let o = opaque(page)?;
    let p = &page[META_OFF..META_OFF + META_SIZE];
    let u = |i: usize| u32::from_le_bytes(p[i..i + 4].try_into().unwrap());
    if o.flags & BTP_META == 0 || u(0) != BTREE_MAGIC {
        return Err(Error::corrupt("index is not a btree (bad metapage magic)"));
    }
    if u(4) != BTREE_VERSION {
        return Err(Error::corrupt(format!("btree version mismatch: {} vs {BTREE_VERSION}", u(4))));
    }
    Ok(BtMeta { root: u(8), level: u(12), fast_root: u(16), fast_level: u(20) })
}

// ----- index tuples ----------------------------------------------------------------

/// Builds an index tuple: header (heap TID, flags), the downlink when `child`
/// is a block ([`ITUP_PIVOT`]), and the key image. `flags` carries
/// [`ITUP_MINUS_INF`] or the image's [`ITUP_HAS_NULLS`].
pub fn make_itup(child: BlockNumber, heap_tid: Tid, flags: u16, key: &[u8]) -> Vec<u8> {
    let (flags, kstart) = if child == INVALID_BLOCK { (flags & !ITUP_PIVOT, ITUP_HEADER) } else { (flags | ITUP_PIVOT, ITUP_HEADER + 4) };
    let mut t = vec![0u8; kstart + key.len()];
    t[0..6].copy_from_slice(&heap_tid.encode());
    t[6..8].copy_from_slice(&flags.to_le_bytes());
    if child != INVALID_BLOCK {
        t[8..12].copy_from_slice(&child.to_le_bytes());
    }
    t[kstart..].copy_from_slice(key);
    t
}

/// Builds the leaf index tuple of (key `values`, `heap_tid`) into `out`: the
/// key image is a null bitmap over the key columns (only when a value is NULL)
/// followed by the non-null values, each aligned relative to the start of the
/// data as in a heap tuple's data area (no heap tuple header).
pub fn form_leaf_itup(out: &mut Vec<u8>, desc: &[AttrDesc], values: &[Option<Datum>], heap_tid: Tid) -> Result<()> {
    if desc.len() != values.len() {
        return Err(Error::internal(format!("index tuple of {} values for {} columns", values.len(), desc.len())));
    }
    let has_nulls = values.iter().any(|v| v.is_none());
    let data = ITUP_HEADER + if has_nulls { bitmap_len(desc.len()) } else { 0 };
    let size = data + heap_compute_data_size(desc, values)?;
    out.clear();
    out.resize(size, 0);
    out[0..6].copy_from_slice(&heap_tid.encode());
    let flags = if has_nulls { ITUP_HAS_NULLS } else { 0 };
    out[6..8].copy_from_slice(&flags.to_le_bytes());
    if has_nulls {
        for (i, v) in values.iter().enumerate() {
            if v.is_some() {
                out[ITUP_HEADER + i / 8] |= 1 << (i % 8);
            }
        }
    }
    let (_, end) = fill_data(desc, values, out, data);
    debug_assert_eq!(end, size);
    Ok(())
}

/// The first `n` key columns of a key image (as [`ITup::key`]; `has_nulls`
/// from its flags), in order, to `push`. `desc` is the whole key descriptor:
/// the null bitmap covers every column.
#[inline]
pub fn deform_key_each<'a>(
    desc: &[AttrDesc],
    n: usize,
    key: &'a [u8],
    has_nulls: bool,
    push: impl FnMut(Option<Datum<'a>>),
) -> Result<()> {
    if !has_nulls {
        return deform_data_each(&desc[..n], key, 0, |_| false, "index tuple", push);
    }
    let start = bitmap_len(desc.len());
    if key.len() < start {
        return Err(Error::corrupt(format!("index tuple key of {} bytes has no null bitmap", key.len())));
    }
    deform_data_each(&desc[..n], key, start, |i| key[i / 8] & (1 << (i % 8)) == 0, "index tuple", push)
}

/// Every key column of a key image.
pub fn deform_key<'a>(desc: &[AttrDesc], key: &'a [u8], has_nulls: bool) -> Result<Vec<Option<Datum<'a>>>> {
    let mut out = Vec::with_capacity(desc.len());
    deform_key_each(desc, desc.len(), key, has_nulls, |d| out.push(d))?;
    Ok(out)
}

/// The first key column when it is stored by value and the key has no NULLs:
/// read in place. `None` means "use the general path".
#[inline(always)]
fn first_key_byval(a: &AttrDesc, key: &[u8], has_nulls: bool) -> Option<u64> {
    let n = a.len as usize;
    if has_nulls || !a.by_val || !matches!(n, 1 | 2 | 4 | 8) {
        return None;
    }
    let b = key.get(..n)?;
    let mut v = [0u8; 8];
    v[..n].copy_from_slice(b);
    Some(u64::from_le_bytes(v))
}

/// A view of an index tuple's header fields.
#[derive(Clone, Copy, Debug)]
pub struct ITup<'a> {
    /// The downlink of a pivot; `INVALID_BLOCK` for leaf items and high keys.
    pub child: BlockNumber,
    pub heap_tid: Tid,
    pub flags: u16,
    /// The key image: null bitmap (if [`ITUP_HAS_NULLS`]) and data.
    pub key: &'a [u8],
}

impl<'a> ITup<'a> {
    pub fn parse(t: &'a [u8]) -> Result<ITup<'a>> {
        if t.len() < ITUP_HEADER {
            return Err(Error::corrupt(format!("index tuple of {} bytes", t.len())));
        }
        let flags = u16::from_le_bytes([t[6], t[7]]);
        if flags & !ITUP_FLAGS != 0 {
            return Err(Error::corrupt(format!("index tuple flags {flags:#x}")));
        }
        let (child, kstart) = if flags & ITUP_PIVOT != 0 {
            let c = t.get(8..12).ok_or_else(|| Error::corrupt(format!("pivot index tuple of {} bytes", t.len())))?;
            (u32::from_le_bytes(c.try_into().unwrap()), ITUP_HEADER + 4)
        } else {
            (INVALID_BLOCK, ITUP_HEADER)
        };
        Ok(ITup { child, heap_tid: Tid::decode(&t[0..6]), flags, key: &t[kstart..] })
    }
    pub fn minus_inf(&self) -> bool {
        self.flags & ITUP_MINUS_INF != 0
    }
    pub fn has_nulls(&self) -> bool {
        self.flags & ITUP_HAS_NULLS != 0
    }
    /// Every key column.
    pub fn values(&self, desc: &[AttrDesc]) -> Result<Vec<Option<Datum<'a>>>> {
        deform_key(desc, self.key, self.has_nulls())
    }
}

pub fn page_itup(page: &[u8], off: OffsetNumber) -> Result<ITup<'_>> {
    ITup::parse(page_get_item(page, off)?)
}

/// The same tuple with another downlink (the separator keeps key and heap TID).
/// `INVALID_BLOCK` makes it a high key (no downlink).
pub fn with_child(t: &[u8], child: BlockNumber) -> Vec<u8> {
    let it = ITup::parse(t).expect("tuple parsed before");
    make_itup(child, it.heap_tid, it.flags, it.key)
}

/// The minus-infinity version of a pivot: its key is dropped.
pub fn minus_inf_of(t: &[u8]) -> Vec<u8> {
    let it = ITup::parse(t).expect("tuple parsed before");
    make_itup(it.child, Tid::INVALID, ITUP_MINUS_INF, &[])
}

pub fn max_offset(page: &[u8]) -> OffsetNumber {
    page_max_offset_number(page)
}

// ----- comparison --------------------------------------------------------------------

/// Per-column comparison supplied by the caller (the SQL layer's operator classes).
/// Never called with a NULL: NULLs are ordered by the tree (last, as ASC NULLS LAST).
pub trait KeyComparator: Send + Sync {
    fn compare(&self, col: usize, a: &Datum, b: &Datum) -> Ordering;

    /// `Some` when column `col` is ordered as a signed integer stored by
    /// value (int2, int4, int8): [`compare`](KeyComparator::compare) on two
    /// by-value datums of the column must then equal [`IntKey::order`] of
    /// them. The B-tree search compares such a first column in place, with
    /// no call through the trait.
    fn int_key(&self, col: usize) -> Option<IntKey> {
        let _ = col;
        None
    }
}

/// A key column ordered as a signed integer of `width` bytes (2, 4 or 8)
/// stored by value, descending if `desc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntKey {
    pub width: u8,
    pub desc: bool,
}

impl IntKey {
    /// The value of a by-value datum of the column (sign-extended).
    #[inline]
    pub fn value(self, raw: u64) -> i64 {
        match self.width {
            2 => raw as u16 as i16 as i64,
            4 => raw as u32 as i32 as i64,
            _ => raw as i64,
        }
    }

    /// The order of two by-value datums of the column.
    #[inline]
    pub fn order(self, a: u64, b: u64) -> Ordering {
        let o = self.value(a).cmp(&self.value(b));
        if self.desc {
            o.reverse()
        } else {
            o
        }
    }
}

/// Built-in column kinds for tests and internal indexes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyKind {
    /// int8 as i64 (by value, 8 bytes).
    Int8,
    /// int4 as i32 (by value, 4 bytes).
    Int4,
    /// text compared as bytes (C collation).
    Text,
}

/// A comparator over built-in kinds, one per column.
pub struct BuiltinComparator(pub Vec<KeyKind>);

fn datum_bytes<'a>(d: &'a Datum) -> &'a [u8] {
    match d {
        Datum::Varlena(b) | Datum::Fixed(b) => b,
        Datum::Compressed { data, .. } => data,
        _ => &[],
    }
}

impl KeyComparator for BuiltinComparator {
    fn compare(&self, col: usize, a: &Datum, b: &Datum) -> Ordering {
        match (self.0.get(col), a, b) {
            (Some(KeyKind::Int8), Datum::ByVal(x), Datum::ByVal(y)) => (*x as i64).cmp(&(*y as i64)),
            (Some(KeyKind::Int4), Datum::ByVal(x), Datum::ByVal(y)) => (*x as u32 as i32).cmp(&(*y as u32 as i32)),
            _ => datum_bytes(a).cmp(datum_bytes(b)),
        }
    }

    fn int_key(&self, col: usize) -> Option<IntKey> {
        match self.0.get(col)? {
            KeyKind::Int8 => Some(IntKey { width: 8, desc: false }),
            KeyKind::Int4 => Some(IntKey { width: 4, desc: false }),
            KeyKind::Text => None,
        }
    }
}

/// How a scan key's heap TID compares with equal keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TidBound {
    /// Before every tuple with an equal key (find the first equal key).
    MinusInf,
    /// Exactly this heap TID (insertion: every entry is unique by key + TID).
    Exact(Tid),
    /// After every tuple with an equal key.
    PlusInf,
}

/// A search key: a prefix of the key columns (possibly empty) and a TID bound.
#[derive(Clone, Debug)]
pub struct ScanKey<'a> {
    pub values: Vec<Option<Datum<'a>>>,
    pub tid: TidBound,
}

/// Key columns deformed on the stack by [`KeyCtx::compare`]; wider keys use a vector.
const INLINE_KEYS: usize = 8;

/// Comparison context: key descriptor and column comparator.
pub struct KeyCtx<'a> {
    pub desc: &'a [AttrDesc],
    pub cmp: &'a Arc<dyn KeyComparator>,
    /// The first column's integer order, when it has one and is stored by
    /// value with the comparator's width (see [`KeyComparator::int_key`]).
    pub int0: Option<IntKey>,
}

/// The first key column of an index tuple read in place, for a search whose
/// first column is an integer ([`KeyCtx::int_probe`]).
enum InPlace {
    /// A minus-infinity pivot (below every key).
    MinusInf,
    /// The first column's raw by-value datum.
    Value(u64),
}

/// Reads `item`'s first key column in place without parsing the tuple: `None`
/// for anything but a plain by-value first column of a tuple without nulls
/// (the general path handles it, and reports corruption).
#[inline(always)]
fn first_key_in_place(a: &AttrDesc, item: &[u8]) -> Option<InPlace> {
    let flags = u16::from_le_bytes([*item.get(6)?, *item.get(7)?]);
    let kstart = match flags {
        0 => ITUP_HEADER,
        ITUP_PIVOT => ITUP_HEADER + 4,
        f if f == ITUP_PIVOT | ITUP_MINUS_INF => return Some(InPlace::MinusInf),
        _ => return None,
    };
    first_key_byval(a, item.get(kstart..)?, false).map(InPlace::Value)
}

impl KeyCtx<'_> {
    /// Compares `values` with `other` column by column (NULLS LAST).
    pub fn compare_values(&self, a: &[Option<Datum>], b: &[Option<Datum>]) -> Ordering {
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            let o = match (x, y) {
                (None, None) => Ordering::Equal,
                (None, Some(_)) => Ordering::Greater,
                (Some(_), None) => Ordering::Less,
                (Some(x), Some(y)) => self.cmp.compare(i, x, y),
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    }

    /// The scan key's first column when the search can compare it in place
    /// as an integer ([`KeyCtx::compare_probe`]): read once per search.
    #[inline]
    pub fn int_probe(&self, sk: &ScanKey) -> Option<(IntKey, u64)> {
        match (self.int0, sk.values.first()) {
            (Some(k), Some(Some(Datum::ByVal(x)))) => Some((k, *x)),
            _ => None,
        }
    }

    /// `sk` compared with `item`, as [`KeyCtx::compare`], through `probe`
    /// (from [`KeyCtx::int_probe`]) when it has one: the item's first column
    /// is read in place and compared as an integer, and only an equal first
    /// column of a multi-column key (or an unusual tuple) takes the general
    /// path.
    #[inline(always)]
    pub fn compare_probe(&self, sk: &ScanKey, probe: Option<(IntKey, u64)>, item: &[u8]) -> Result<Ordering> {
        if let Some((k, x)) = probe {
            match first_key_in_place(&self.desc[0], item) {
                Some(InPlace::MinusInf) => return Ok(Ordering::Greater),
                Some(InPlace::Value(v)) => {
                    let o = k.order(x, v);
                    if o != Ordering::Equal {
                        return Ok(o);
                    }
                    if sk.values.len().min(self.desc.len()) == 1 {
                        return Ok(Self::tid_order(sk, &ITup::parse(item)?));
                    }
                }
                None => {}
            }
        }
        self.compare(sk, item)
    }

    /// `sk` compared with the index tuple `item` (a minus-infinity item is below
    /// every key).
    pub fn compare(&self, sk: &ScanKey, item: &[u8]) -> Result<Ordering> {
        let it = ITup::parse(item)?;
        if it.minus_inf() {
            return Ok(Ordering::Greater);
        }
        // The scan key's columns only, into a stack buffer (this runs for every
        // tuple a search steps over: no allocation).
        let n = sk.values.len().min(self.desc.len());
        // Fast path: a by-value first column of a tuple without nulls (integer
        // keys) is read straight from its place after the header.
        if n >= 1 {
            if let Some(x) = &sk.values[0] {
                if let Some(v) = first_key_byval(&self.desc[0], it.key, it.has_nulls()) {
                    let o = self.cmp.compare(0, x, &Datum::ByVal(v));
                    if o != Ordering::Equal {
                        return Ok(o);
                    }
                    if n == 1 {
                        return Ok(Self::tid_order(sk, &it));
                    }
                }
            }
        }
        let o = if n <= INLINE_KEYS {
            let mut buf: [Option<Datum>; INLINE_KEYS] = Default::default();
            let mut k = 0;
            deform_key_each(self.desc, n, it.key, it.has_nulls(), |d| {
                buf[k] = d;
                k += 1;
            })?;
            self.compare_values(&sk.values, &buf[..n])
        } else {
            let vals = it.values(self.desc)?;
            self.compare_values(&sk.values, &vals[..sk.values.len().min(vals.len())])
        };
        if o != Ordering::Equal {
            return Ok(o);
        }
        Ok(Self::tid_order(sk, &it))
    }

    /// The order of equal keys: by the scan key's heap-TID bound.
    fn tid_order(sk: &ScanKey, it: &ITup<'_>) -> Ordering {
        match sk.tid {
            TidBound::MinusInf => Ordering::Less,
            TidBound::PlusInf => Ordering::Greater,
            TidBound::Exact(t) => t.cmp(&it.heap_tid),
        }
    }

    /// Orders two index tuples (key, then heap TID); for the invariant checker.
    pub fn compare_items(&self, a: &[u8], b: &[u8]) -> Result<Ordering> {
        let ia = ITup::parse(a)?;
        if ia.minus_inf() {
            return Ok(Ordering::Less);
        }
        let va = ia.values(self.desc)?;
        self.compare(&ScanKey { values: va, tid: TidBound::Exact(ia.heap_tid) }, b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A comparator that orders its first column as an integer but never says
    /// so (`int_key` is `None`): the general path, to check the in-place one.
    struct Plain(BuiltinComparator);
    impl KeyComparator for Plain {
        fn compare(&self, col: usize, a: &Datum, b: &Datum) -> Ordering {
            self.0.compare(col, a, b)
        }
    }

    #[test]
    fn index_tuples_round_trip_and_carry_no_heap_header() {
        let desc = vec![AttrDesc::fixed(2), AttrDesc::varlena(), AttrDesc::fixed(8), AttrDesc::fixed_by_ref(16, b'c')];
        let long = vec![b'x'; 300];
        let uuid = [7u8; 16];
        let rows: Vec<Vec<Option<Datum>>> = vec![
            vec![Some(Datum::ByVal(0xfffe)), Some(Datum::Varlena(b"abc")), Some(Datum::ByVal(u64::MAX)), Some(Datum::Fixed(&uuid))],
            vec![None, Some(Datum::Varlena(&long)), None, Some(Datum::Fixed(&uuid))],
            vec![None, None, None, None],
            vec![Some(Datum::ByVal(1)), Some(Datum::Varlena(b"")), Some(Datum::ByVal(5)), None],
        ];
        for (n, vals) in rows.iter().enumerate() {
            let tid = Tid::new(n as u32 * 1000 + 7, n as u16 + 1);
            let mut t = Vec::new();
            form_leaf_itup(&mut t, &desc, vals, tid).unwrap();
            let it = ITup::parse(&t).unwrap();
            assert_eq!((it.child, it.heap_tid, it.minus_inf()), (INVALID_BLOCK, tid, false));
            assert_eq!(it.has_nulls(), vals.iter().any(|v| v.is_none()));
            assert_eq!(&it.values(&desc).unwrap(), vals);
            // A prefix of the columns reads the same values.
            for k in 0..=desc.len() {
                let mut got = Vec::new();
                deform_key_each(&desc, k, it.key, it.has_nulls(), |d| got.push(d)).unwrap();
                assert_eq!(&got[..], &vals[..k]);
            }
            // A downlink added and removed: the key and TID stay, the flag follows.
            let p = with_child(&t, 42);
            let pit = ITup::parse(&p).unwrap();
            assert_eq!((pit.child, pit.heap_tid, pit.flags & ITUP_PIVOT), (42, tid, ITUP_PIVOT));
            assert_eq!(&pit.values(&desc).unwrap(), vals);
            assert_eq!(with_child(&p, INVALID_BLOCK), t);
            let mi = minus_inf_of(&p);
            let m = ITup::parse(&mi).unwrap();
            assert_eq!((m.child, m.minus_inf(), m.key.len()), (42, true, 0));
        }
        // The header is all the overhead: 8 bytes plus the value.
        for (len, width) in [(4i16, 12usize), (8, 16)] {
            let mut t = Vec::new();
            form_leaf_itup(&mut t, &[AttrDesc::fixed(len)], &[Some(Datum::ByVal(3))], Tid::new(1, 1)).unwrap();
            assert_eq!(t.len(), width);
        }
        // Unknown flags and a pivot cut short are corruption.
        let mut t = Vec::new();
        form_leaf_itup(&mut t, &[AttrDesc::fixed(4)], &[Some(Datum::ByVal(3))], Tid::new(1, 1)).unwrap();
        t[6] = 0x40;
        assert!(ITup::parse(&t).is_err());
        t[6] = ITUP_PIVOT as u8;
        assert!(ITup::parse(&t[..10]).is_err());
    }

    #[test]
    fn in_place_integer_compare_agrees_with_the_general_path() {
        for (kinds, width) in [(vec![KeyKind::Int4, KeyKind::Int8], 4i16), (vec![KeyKind::Int8, KeyKind::Int4], 8)] {
            let desc = vec![AttrDesc::fixed(width), AttrDesc::fixed(12 - width)];
            let fast: Arc<dyn KeyComparator> = Arc::new(BuiltinComparator(kinds.clone()));
            let slow: Arc<dyn KeyComparator> = Arc::new(Plain(BuiltinComparator(kinds)));
            let k = fast.int_key(0);
            assert_eq!(k, Some(IntKey { width: width as u8, desc: false }));
            let fctx = KeyCtx { desc: &desc, cmp: &fast, int0: k };
            let sctx = KeyCtx { desc: &desc, cmp: &slow, int0: None };
            let vals: [i64; 7] = [i32::MIN as i64, -5, -1, 0, 1, 7, i32::MAX as i64];
            let raw = |v: i64| if width == 4 { v as i32 as u32 as u64 } else { v as u64 };
            let mut items = vec![make_itup(3, Tid::INVALID, ITUP_MINUS_INF, &[])];
            for (n, &a) in vals.iter().enumerate() {
                for b in [0i64, 2] {
                    let mut t = Vec::new();
                    let vals = [Some(Datum::ByVal(raw(a))), Some(Datum::ByVal(raw(b)))];
                    form_leaf_itup(&mut t, &desc, &vals, Tid::new(n as u32, 1 + b as u16)).unwrap();
                    items.push(t);
                }
                // A NULL second column: the general path reads it.
                let mut t = Vec::new();
                form_leaf_itup(&mut t, &desc, &[Some(Datum::ByVal(raw(a))), None], Tid::new(n as u32, 9)).unwrap();
                items.push(t);
            }
            for &a in &vals {
                for second in [None, Some(None), Some(Some(1i64))] {
                    for tid in [TidBound::MinusInf, TidBound::PlusInf, TidBound::Exact(Tid::new(3, 1))] {
                        let mut values = vec![Some(Datum::ByVal(raw(a)))];
                        if let Some(s) = second {
                            values.push(s.map(|s| Datum::ByVal(raw(s))));
                        }
                        let sk = ScanKey { values, tid };
                        let probe = fctx.int_probe(&sk);
                        assert!(probe.is_some());
                        for it in &items {
                            assert_eq!(
                                fctx.compare_probe(&sk, probe, it).unwrap(),
                                sctx.compare(&sk, it).unwrap(),
                                "width {width}, key {a}, second {second:?}, {tid:?}"
                            );
                        }
                    }
                }
            }
        }
    }
}
