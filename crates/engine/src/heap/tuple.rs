//! The heap tuple: header (xmin, xmax, cid, ctid, infomasks, t_hoff, null bitmap) and
//! the generic datum layer that forms and deforms rows. Byte diagram in
//! docs/format/heap-tuple.md.
//!
//! ```text
//! offset size field
//!      0    4 t_xmin       u32 LE: inserting transaction
//!      4    4 t_xmax       u32 LE: deleting / updating / locking transaction, 0 = none
//!      8    4 t_cid        u32 LE: command id (cmin or cmax; combo cids later)
//!     12    4 t_ctid.block u32 LE: this tuple's TID, or its newer version's
//!     16    2 t_ctid.off   u16 LE
//!     18    2 t_infomask2  u16 LE: natts (11 bits) | HEAP_KEYS_UPDATED | HOT flags
//!     20    2 t_infomask   u16 LE: flag bits below
//!     22    1 t_hoff       u8: offset of the data, MAXALIGNed (>= 24)
//!     23    n t_bits       null bitmap (bit set = not null), if HEAP_HASNULL
//! t_hoff      data, each attribute aligned to its own alignment relative to the tuple
//! ```

use crate::error::{Error, Result, SqlState};
use crate::storage::page::{maxalign, OffsetNumber, INVALID_OFFSET_NUMBER};
use crate::storage::{BlockNumber, INVALID_BLOCK};

/// A transaction id as the heap stores it. The transaction layer defines its own
/// type in `txn/`; the integrator unifies the two (both are 32-bit).
pub type TransactionId = u32;
/// A command id within a transaction.
pub type CommandId = u32;

pub const INVALID_TRANSACTION_ID: TransactionId = 0;
pub const BOOTSTRAP_TRANSACTION_ID: TransactionId = 1;
/// Stands in for "committed before every snapshot" (xmin of a frozen tuple).
pub const FROZEN_TRANSACTION_ID: TransactionId = 2;
pub const FIRST_NORMAL_TRANSACTION_ID: TransactionId = 3;

/// Whether `a` is logically older than `b` (modulo-2^31 comparison for normal xids;
/// the special xids 0..=2 precede every normal xid).
pub fn xid_precedes(a: TransactionId, b: TransactionId) -> bool {
    if a < FIRST_NORMAL_TRANSACTION_ID || b < FIRST_NORMAL_TRANSACTION_ID {
        return a < b;
    }
    (a.wrapping_sub(b) as i32) < 0
}

/// Size of the fixed part of the header (before the null bitmap).
pub const HEAP_TUPLE_HEADER_SIZE: usize = 23;
/// Maximum number of attributes (11 bits of t_infomask2; PostgreSQL's limit).
pub const MAX_HEAP_ATTRIBUTE_NUMBER: usize = 1600;

// ---- t_infomask -----------------------------------------------------------------
/// Some attribute is null (the null bitmap is present).
pub const HEAP_HASNULL: u16 = 0x0001;
/// Some attribute is variable-width.
pub const HEAP_HASVARWIDTH: u16 = 0x0002;
/// Some attribute is stored out of line (an external TOAST pointer).
pub const HEAP_HASEXTERNAL: u16 = 0x0004;
/// xmax is a key-share locker.
pub const HEAP_XMAX_KEYSHR_LOCK: u16 = 0x0010;
/// t_cid is a combo command id (reserved; not produced yet).
pub const HEAP_COMBOCID: u16 = 0x0020;
/// xmax is an exclusive locker.
pub const HEAP_XMAX_EXCL_LOCK: u16 = 0x0040;
/// xmax, if valid, only locks the row (SELECT FOR ...), it did not delete it.
pub const HEAP_XMAX_LOCK_ONLY: u16 = 0x0080;
/// xmax is a share locker (both lock bits).
pub const HEAP_XMAX_SHR_LOCK: u16 = HEAP_XMAX_EXCL_LOCK | HEAP_XMAX_KEYSHR_LOCK;
pub const HEAP_LOCK_MASK: u16 = HEAP_XMAX_SHR_LOCK | HEAP_XMAX_EXCL_LOCK | HEAP_XMAX_KEYSHR_LOCK;
/// Hint: xmin committed.
pub const HEAP_XMIN_COMMITTED: u16 = 0x0100;
/// Hint: xmin aborted (or invalid).
pub const HEAP_XMIN_INVALID: u16 = 0x0200;
/// Both bits: the tuple is frozen; xmin is kept for forensics but means "long ago".
pub const HEAP_XMIN_FROZEN: u16 = HEAP_XMIN_COMMITTED | HEAP_XMIN_INVALID;
/// Hint: xmax committed.
pub const HEAP_XMAX_COMMITTED: u16 = 0x0400;
/// Hint: xmax aborted, or there is no xmax.
pub const HEAP_XMAX_INVALID: u16 = 0x0800;
/// xmax is a MultiXactId (txn::multixact; heap README "MultiXacts").
pub const HEAP_XMAX_IS_MULTI: u16 = 0x1000;
/// This tuple is the new version of an updated row.
pub const HEAP_UPDATED: u16 = 0x2000;
/// Moved by an old-style VACUUM FULL (never set by ferrogres; kept for the layout).
pub const HEAP_MOVED_OFF: u16 = 0x4000;
pub const HEAP_MOVED_IN: u16 = 0x8000;
pub const HEAP_MOVED: u16 = HEAP_MOVED_OFF | HEAP_MOVED_IN;
/// Every bit that describes xmax; cleared whenever a new xmax is stored.
pub const HEAP_XMAX_BITS: u16 = HEAP_XMAX_COMMITTED
    | HEAP_XMAX_INVALID
    | HEAP_XMAX_IS_MULTI
    | HEAP_LOCK_MASK
    | HEAP_XMAX_LOCK_ONLY;
/// The hint bits: set by the visibility checks (txn layer) without WAL.
pub const HEAP_HINT_BITS: u16 =
    HEAP_XMIN_COMMITTED | HEAP_XMIN_INVALID | HEAP_XMAX_COMMITTED | HEAP_XMAX_INVALID;

// ---- t_infomask2 ----------------------------------------------------------------
/// Number of attributes.
pub const HEAP_NATTS_MASK: u16 = 0x07FF;
/// The update or delete changed a key column (or deleted the row): key-share lockers
/// conflict with it.
pub const HEAP_KEYS_UPDATED: u16 = 0x2000;
/// This tuple was updated and the new version is a heap-only tuple on the same page.
pub const HEAP_HOT_UPDATED: u16 = 0x4000;
/// This tuple is a heap-only tuple: no index entry points to it directly.
pub const HEAP_ONLY_TUPLE: u16 = 0x8000;
pub const HEAP2_XACT_MASK: u16 = 0xE000;

/// A tuple identifier: block and line pointer (PostgreSQL's ItemPointerData).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Tid {
    pub block: BlockNumber,
    pub offset: OffsetNumber,
}

impl Tid {
    pub const INVALID: Tid = Tid { block: INVALID_BLOCK, offset: INVALID_OFFSET_NUMBER };

    pub fn new(block: BlockNumber, offset: OffsetNumber) -> Tid {
        Tid { block, offset }
    }

    pub fn is_valid(self) -> bool {
        self.offset != INVALID_OFFSET_NUMBER
    }

    pub fn encode(self) -> [u8; 6] {
        let mut b = [0u8; 6];
        b[..4].copy_from_slice(&self.block.to_le_bytes());
        b[4..].copy_from_slice(&self.offset.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Tid {
        Tid {
            block: u32::from_le_bytes(b[..4].try_into().unwrap()),
            offset: u16::from_le_bytes(b[4..6].try_into().unwrap()),
        }
    }
}

const T_XMIN: usize = 0;
const T_XMAX: usize = 4;
const T_CID: usize = 8;
const T_CTID: usize = 12;
/// Offset of t_infomask2 in the tuple.
pub const T_INFOMASK2: usize = 18;
/// Offset of t_infomask in the tuple (2-byte aligned, since tuples are MAXALIGNed on
/// the page: hint bits can be set with an atomic 16-bit OR, see heap/README.md).
pub const T_INFOMASK: usize = 20;
const T_HOFF: usize = 22;
const T_BITS: usize = 23;

/// A decoded copy of a tuple header (without the null bitmap).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TupleHeader {
    pub xmin: TransactionId,
    pub xmax: TransactionId,
    pub cid: CommandId,
    pub ctid: Tid,
    pub infomask2: u16,
    pub infomask: u16,
    pub hoff: u8,
}

impl TupleHeader {
    /// Reads and checks a header: the tuple must hold the header, `t_hoff` must be
    /// MAXALIGNed, cover the null bitmap, and lie within the tuple.
    pub fn read(tuple: &[u8]) -> Result<TupleHeader> {
        if tuple.len() < HEAP_TUPLE_HEADER_SIZE {
            return Err(Error::corrupt(format!("heap tuple of {} bytes", tuple.len())));
        }
        let u32_at = |p: usize| u32::from_le_bytes(tuple[p..p + 4].try_into().unwrap());
        let u16_at = |p: usize| u16::from_le_bytes(tuple[p..p + 2].try_into().unwrap());
        let h = TupleHeader {
            xmin: u32_at(T_XMIN),
            xmax: u32_at(T_XMAX),
            cid: u32_at(T_CID),
            ctid: Tid::decode(&tuple[T_CTID..T_CTID + 6]),
            infomask2: u16_at(T_INFOMASK2),
            infomask: u16_at(T_INFOMASK),
            hoff: tuple[T_HOFF],
        };
        let hoff = h.hoff as usize;
        let min_hoff = if h.infomask & HEAP_HASNULL != 0 {
            T_BITS + bitmap_len(h.natts())
        } else {
            T_BITS
        };
        if !hoff.is_multiple_of(8) || hoff < min_hoff || hoff > tuple.len() {
            return Err(Error::corrupt(format!(
                "heap tuple t_hoff {hoff} invalid (natts {}, length {})",
                h.natts(),
                tuple.len()
            )));
        }
        Ok(h)
    }

    /// Writes the fixed header fields (not the bitmap) into `tuple`.
    pub fn write(&self, tuple: &mut [u8]) {
        tuple[T_XMIN..T_XMIN + 4].copy_from_slice(&self.xmin.to_le_bytes());
        tuple[T_XMAX..T_XMAX + 4].copy_from_slice(&self.xmax.to_le_bytes());
        tuple[T_CID..T_CID + 4].copy_from_slice(&self.cid.to_le_bytes());
        tuple[T_CTID..T_CTID + 6].copy_from_slice(&self.ctid.encode());
        tuple[T_INFOMASK2..T_INFOMASK2 + 2].copy_from_slice(&self.infomask2.to_le_bytes());
        tuple[T_INFOMASK..T_INFOMASK + 2].copy_from_slice(&self.infomask.to_le_bytes());
        tuple[T_HOFF] = self.hoff;
    }

    pub fn natts(&self) -> usize {
        (self.infomask2 & HEAP_NATTS_MASK) as usize
    }
    pub fn has_nulls(&self) -> bool {
        self.infomask & HEAP_HASNULL != 0
    }
    pub fn xmin_committed(&self) -> bool {
        self.infomask & HEAP_XMIN_COMMITTED != 0
    }
    pub fn xmin_invalid(&self) -> bool {
        self.infomask & HEAP_XMIN_FROZEN == HEAP_XMIN_INVALID
    }
    /// Frozen by the bits, or by the old convention xmin = FrozenTransactionId.
    pub fn xmin_frozen(&self) -> bool {
        self.infomask & HEAP_XMIN_FROZEN == HEAP_XMIN_FROZEN || self.xmin == FROZEN_TRANSACTION_ID
    }
    pub fn xmax_committed(&self) -> bool {
        self.infomask & HEAP_XMAX_COMMITTED != 0
    }
    pub fn xmax_invalid(&self) -> bool {
        self.infomask & HEAP_XMAX_INVALID != 0
    }
    pub fn xmax_is_lock_only(&self) -> bool {
        self.infomask & HEAP_XMAX_LOCK_ONLY != 0
    }
    pub fn xmax_is_multi(&self) -> bool {
        self.infomask & HEAP_XMAX_IS_MULTI != 0
    }
    pub fn is_updated_version(&self) -> bool {
        self.infomask & HEAP_UPDATED != 0
    }
    pub fn keys_updated(&self) -> bool {
        self.infomask2 & HEAP_KEYS_UPDATED != 0
    }
    pub fn is_hot_updated(&self) -> bool {
        self.infomask2 & HEAP_HOT_UPDATED != 0
    }
    pub fn is_heap_only(&self) -> bool {
        self.infomask2 & HEAP_ONLY_TUPLE != 0
    }
    pub fn has_external(&self) -> bool {
        self.infomask & HEAP_HASEXTERNAL != 0
    }
}

// In-place accessors on a tuple's bytes (e.g. a slice of a page under the buffer's
// content lock). They assume a tuple of at least HEAP_TUPLE_HEADER_SIZE bytes, which
// `TupleHeader::read` or `heap::page::heap_page_get_tuple` has checked.

pub fn tuple_xmin(t: &[u8]) -> TransactionId {
    u32::from_le_bytes(t[T_XMIN..T_XMIN + 4].try_into().unwrap())
}
pub fn tuple_set_xmin(t: &mut [u8], x: TransactionId) {
    t[T_XMIN..T_XMIN + 4].copy_from_slice(&x.to_le_bytes());
}
pub fn tuple_xmax(t: &[u8]) -> TransactionId {
    u32::from_le_bytes(t[T_XMAX..T_XMAX + 4].try_into().unwrap())
}
pub fn tuple_set_xmax(t: &mut [u8], x: TransactionId) {
    t[T_XMAX..T_XMAX + 4].copy_from_slice(&x.to_le_bytes());
}
pub fn tuple_cid(t: &[u8]) -> CommandId {
    u32::from_le_bytes(t[T_CID..T_CID + 4].try_into().unwrap())
}
pub fn tuple_set_cid(t: &mut [u8], c: CommandId) {
    t[T_CID..T_CID + 4].copy_from_slice(&c.to_le_bytes());
}
pub fn tuple_ctid(t: &[u8]) -> Tid {
    Tid::decode(&t[T_CTID..T_CTID + 6])
}
pub fn tuple_set_ctid(t: &mut [u8], tid: Tid) {
    t[T_CTID..T_CTID + 6].copy_from_slice(&tid.encode());
}
pub fn tuple_infomask(t: &[u8]) -> u16 {
    u16::from_le_bytes([t[T_INFOMASK], t[T_INFOMASK + 1]])
}
pub fn tuple_set_infomask(t: &mut [u8], m: u16) {
    t[T_INFOMASK..T_INFOMASK + 2].copy_from_slice(&m.to_le_bytes());
}
pub fn tuple_infomask2(t: &[u8]) -> u16 {
    u16::from_le_bytes([t[T_INFOMASK2], t[T_INFOMASK2 + 1]])
}
pub fn tuple_set_infomask2(t: &mut [u8], m: u16) {
    t[T_INFOMASK2..T_INFOMASK2 + 2].copy_from_slice(&m.to_le_bytes());
}
/// ORs `bits` into t_infomask (any flag; for hint bits see [`tuple_set_hint_bits`]).
pub fn tuple_or_infomask(t: &mut [u8], bits: u16) {
    let m = tuple_infomask(t) | bits;
    tuple_set_infomask(t, m);
}
pub fn tuple_clear_infomask(t: &mut [u8], bits: u16) {
    let m = tuple_infomask(t) & !bits;
    tuple_set_infomask(t, m);
}
pub fn tuple_or_infomask2(t: &mut [u8], bits: u16) {
    let m = tuple_infomask2(t) | bits;
    tuple_set_infomask2(t, m);
}
pub fn tuple_clear_infomask2(t: &mut [u8], bits: u16) {
    let m = tuple_infomask2(t) & !bits;
    tuple_set_infomask2(t, m);
}
/// Sets hint bits (a subset of [`HEAP_HINT_BITS`]); the caller holds the content lock.
/// Hint bits are idempotent and not WAL-logged.
pub fn tuple_set_hint_bits(t: &mut [u8], bits: u16) {
    debug_assert_eq!(bits & !HEAP_HINT_BITS, 0, "not hint bits: {bits:#x}");
    tuple_or_infomask(t, bits & HEAP_HINT_BITS);
}
pub fn tuple_set_xmin_committed(t: &mut [u8]) {
    tuple_set_hint_bits(t, HEAP_XMIN_COMMITTED)
}
pub fn tuple_set_xmin_invalid(t: &mut [u8]) {
    tuple_set_hint_bits(t, HEAP_XMIN_INVALID)
}
pub fn tuple_set_xmax_committed(t: &mut [u8]) {
    tuple_set_hint_bits(t, HEAP_XMAX_COMMITTED)
}
pub fn tuple_set_xmax_invalid(t: &mut [u8]) {
    tuple_set_hint_bits(t, HEAP_XMAX_INVALID)
}

/// Bytes of null bitmap for `natts` attributes.
pub fn bitmap_len(natts: usize) -> usize {
    natts.div_ceil(8)
}

// ---------------------------------------------------------------------------------
// The datum layer.
// ---------------------------------------------------------------------------------

/// Storage strategy of an attribute (PostgreSQL's attstorage), used by TOAST.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    /// Never compressed, never out of line (fixed-width types, and TOAST chunks).
    Plain,
    /// May go out of line, never compressed.
    External,
    /// May be compressed; out of line only as a last resort.
    Main,
    /// May be compressed and go out of line (the default for varlena types).
    Extended,
}

/// What the tuple format needs to know about an attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttrDesc {
    /// Width in bytes; -1 for a varlena.
    pub len: i16,
    /// Alignment: b'c' (1), b's' (2), b'i' (4), b'd' (8).
    pub align: u8,
    /// Passed by value (fixed width of 1, 2, 4 or 8 bytes).
    pub by_val: bool,
    pub storage: Storage,
}

impl AttrDesc {
    /// A by-value fixed-width attribute of 1, 2, 4 or 8 bytes, aligned to its width
    /// (bool/char: c, int2: s, int4/oid/float4: i, int8/float8/timestamp: d).
    pub const fn fixed(len: i16) -> AttrDesc {
        let align = match len {
            1 => b'c',
            2 => b's',
            4 => b'i',
            _ => b'd',
        };
        AttrDesc { len, align, by_val: true, storage: Storage::Plain }
    }
    /// A fixed-width attribute passed by reference (name: 64 c, uuid: 16 c, ...).
    pub const fn fixed_by_ref(len: i16, align: u8) -> AttrDesc {
        AttrDesc { len, align, by_val: false, storage: Storage::Plain }
    }
    /// A varlena (text, bytea, numeric: align i, storage extended).
    pub const fn varlena() -> AttrDesc {
        AttrDesc { len: -1, align: b'i', by_val: false, storage: Storage::Extended }
    }
    pub const fn with_storage(mut self, storage: Storage) -> AttrDesc {
        self.storage = storage;
        self
    }
    pub const fn with_align(mut self, align: u8) -> AttrDesc {
        self.align = align;
        self
    }

    fn align_bytes(&self) -> usize {
        match self.align {
            b'c' => 1,
            b's' => 2,
            b'i' => 4,
            _ => 8,
        }
    }

    pub fn is_varlena(&self) -> bool {
        self.len == -1
    }
}

#[inline]
fn align_to(off: usize, a: usize) -> usize {
    (off + a - 1) & !(a - 1)
}

/// The external TOAST pointer stored in a tuple in place of a value moved out of line
/// (see heap/toast.rs and docs/format/toast.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToastPointer {
    /// Size of the original value's payload (no varlena header).
    pub raw_size: u32,
    /// Bytes stored in the toast relation (compressed size, or raw_size).
    pub ext_size: u32,
    /// Compressed before chunking (method [`crate::heap::toast::COMPRESSION_FGLZ`]).
    pub compressed: bool,
    /// chunk_id of the value's chunks.
    pub value_oid: u32,
    /// The toast relation holding the chunks.
    pub toast_relid: u32,
}

/// varlena tag of an on-disk external pointer (PostgreSQL's VARTAG_ONDISK).
pub const VARTAG_ONDISK: u8 = 18;
/// Bytes of an external pointer datum: 1-byte header, tag, 16 bytes of pointer.
pub const TOAST_POINTER_SIZE: usize = 18;
/// Largest varlena payload (30-bit lengths, header included).
pub const MAX_VARLENA_SIZE: usize = (1 << 30) - 1 - 4;

impl ToastPointer {
    pub fn encode(&self) -> [u8; TOAST_POINTER_SIZE] {
        let mut b = [0u8; TOAST_POINTER_SIZE];
        b[0] = 0x01;
        b[1] = VARTAG_ONDISK;
        b[2..6].copy_from_slice(&self.raw_size.to_le_bytes());
        let extinfo = (self.ext_size & 0x3fff_ffff) | if self.compressed { 1 << 30 } else { 0 };
        b[6..10].copy_from_slice(&extinfo.to_le_bytes());
        b[10..14].copy_from_slice(&self.value_oid.to_le_bytes());
        b[14..18].copy_from_slice(&self.toast_relid.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Result<ToastPointer> {
        if b.len() < TOAST_POINTER_SIZE || b[0] != 0x01 || b[1] != VARTAG_ONDISK {
            return Err(Error::corrupt("bad external TOAST pointer"));
        }
        let u = |p: usize| u32::from_le_bytes(b[p..p + 4].try_into().unwrap());
        let extinfo = u(6);
        let p = ToastPointer {
            raw_size: u(2),
            ext_size: extinfo & 0x3fff_ffff,
            compressed: extinfo >> 30 == 1,
            value_oid: u(10),
            toast_relid: u(14),
        };
        if extinfo >> 30 > 1
            || p.raw_size as usize > MAX_VARLENA_SIZE
            || (!p.compressed && p.ext_size != p.raw_size)
            || (p.compressed && p.ext_size >= p.raw_size)
        {
            return Err(Error::corrupt(format!("bad external TOAST pointer {p:?}")));
        }
        Ok(p)
    }
}

/// One attribute value, as given to [`form_tuple`] and returned (borrowing from the
/// tuple) by [`deform_tuple`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Datum<'a> {
    /// A by-value fixed-width attribute: the low `len` bytes (stored little-endian;
    /// deform zero-extends, the type's code sign-extends if it needs to).
    ByVal(u64),
    /// A fixed-width attribute passed by reference: exactly `len` bytes.
    Fixed(&'a [u8]),
    /// A varlena's payload; form_tuple chooses the header (1 byte if it fits).
    Varlena(&'a [u8]),
    /// A varlena compressed inline: payload size before compression, and the
    /// compressed bytes (see heap/toast.rs).
    Compressed { raw_size: u32, data: &'a [u8] },
    /// A value stored out of line.
    External(ToastPointer),
}

/// Largest payload a 1-byte varlena header can carry (length 7 bits, header included).
pub const VARLENA_SHORT_MAX: usize = 0x7f - 1;

/// Bytes `d` takes in the tuple (without alignment padding) for attribute `a`.
fn datum_size(a: &AttrDesc, d: &Datum) -> Result<usize> {
    match (a.len, d) {
        (-1, Datum::Varlena(p)) => {
            if p.len() > MAX_VARLENA_SIZE {
                return Err(Error::user(
                    SqlState::PROGRAM_LIMIT_EXCEEDED,
                    format!("invalid memory alloc request size {}", p.len()),
                ));
            }
            Ok(if p.len() <= VARLENA_SHORT_MAX { 1 + p.len() } else { 4 + p.len() })
        }
        (-1, Datum::Compressed { raw_size, data }) => {
            if data.len() > MAX_VARLENA_SIZE - 4 || *raw_size as usize > MAX_VARLENA_SIZE {
                return Err(Error::internal("compressed datum too large"));
            }
            Ok(8 + data.len())
        }
        (-1, Datum::External(_)) => Ok(TOAST_POINTER_SIZE),
        (n, Datum::ByVal(_)) if a.by_val && matches!(n, 1 | 2 | 4 | 8) => Ok(n as usize),
        (n, Datum::Fixed(b)) if !a.by_val && n > 0 && b.len() == n as usize => Ok(b.len()),
        _ => Err(Error::internal(format!("datum {d:?} does not match attribute {a:?}"))),
    }
}

/// Whether a varlena datum is placed without alignment (1-byte header forms).
fn datum_is_short(d: &Datum) -> bool {
    match d {
        Datum::Varlena(p) => p.len() <= VARLENA_SHORT_MAX,
        Datum::External(_) => true,
        _ => false,
    }
}

/// Size of the data part of a tuple formed from `values` (after t_hoff).
pub fn heap_compute_data_size(desc: &[AttrDesc], values: &[Option<Datum>]) -> Result<usize> {
    let mut off = 0;
    for (a, v) in desc.iter().zip(values) {
        if let Some(d) = v {
            if !(a.is_varlena() && datum_is_short(d)) {
                off = align_to(off, a.align_bytes());
            }
            off += datum_size(a, d)?;
        }
    }
    Ok(off)
}

/// Header size (t_hoff) of a tuple of `natts` attributes with or without nulls.
pub fn heap_header_size(natts: usize, has_nulls: bool) -> usize {
    maxalign(T_BITS + if has_nulls { bitmap_len(natts) } else { 0 })
}

/// Total size of the tuple [`form_tuple`] would build.
pub fn heap_compute_tuple_size(desc: &[AttrDesc], values: &[Option<Datum>]) -> Result<usize> {
    let has_nulls = values.iter().any(|v| v.is_none());
    Ok(heap_header_size(desc.len(), has_nulls) + heap_compute_data_size(desc, values)?)
}

/// Builds a tuple from `values` (one per attribute; `None` is SQL NULL). The header
/// has natts, HASNULL/HASVARWIDTH/HASEXTERNAL as applicable, xmin = xmax = cid = 0,
/// HEAP_XMAX_INVALID set (no xmax), and an invalid ctid (set when placed on a page).
/// Padding bytes are zero. A value not matching its attribute is `Error::internal`.
pub fn form_tuple(desc: &[AttrDesc], values: &[Option<Datum>]) -> Result<Vec<u8>> {
    if desc.len() != values.len() || desc.len() > MAX_HEAP_ATTRIBUTE_NUMBER {
        return Err(Error::internal(format!(
            "form_tuple with {} attributes and {} values",
            desc.len(),
            values.len()
        )));
    }
    let natts = desc.len();
    let has_nulls = values.iter().any(|v| v.is_none());
    let hoff = heap_header_size(natts, has_nulls);
    let size = hoff + heap_compute_data_size(desc, values)?;
    let mut t = vec![0u8; size];
    let mut infomask = HEAP_XMAX_INVALID;
    if has_nulls {
        infomask |= HEAP_HASNULL;
        for (i, v) in values.iter().enumerate() {
            if v.is_some() {
                t[T_BITS + i / 8] |= 1 << (i % 8);
            }
        }
    }
    let (bits, off) = fill_data(desc, values, &mut t, hoff);
    infomask |= bits;
    debug_assert_eq!(off, size);
    let h = TupleHeader {
        xmin: 0,
        xmax: 0,
        cid: 0,
        ctid: Tid::INVALID,
        infomask2: natts as u16,
        infomask,
        hoff: hoff as u8,
    };
    h.write(&mut t);
    Ok(t)
}

/// Writes the non-null `values` into `t` from `start` on, each aligned relative
/// to `start` (the data area of a heap tuple at t_hoff, or of a B-tree key after
/// its null bitmap; `t` is zeroed and large enough, as
/// [`heap_compute_data_size`] says). Returns the HASVARWIDTH and HASEXTERNAL
/// infomask bits the values call for, and the end of the data.
pub fn fill_data(desc: &[AttrDesc], values: &[Option<Datum>], t: &mut [u8], start: usize) -> (u16, usize) {
    let mut infomask = 0;
    let mut off = start;
    for (a, v) in desc.iter().zip(values) {
        let Some(d) = v else { continue };
        if a.is_varlena() {
            infomask |= HEAP_HASVARWIDTH;
        }
        if !(a.is_varlena() && datum_is_short(d)) {
            off = start + align_to(off - start, a.align_bytes());
        }
        match d {
            Datum::ByVal(v) => {
                let n = a.len as usize;
                t[off..off + n].copy_from_slice(&v.to_le_bytes()[..n]);
                off += n;
            }
            Datum::Fixed(b) => {
                t[off..off + b.len()].copy_from_slice(b);
                off += b.len();
            }
            Datum::Varlena(p) => {
                if p.len() <= VARLENA_SHORT_MAX {
                    t[off] = (((p.len() + 1) << 1) | 1) as u8;
                    t[off + 1..off + 1 + p.len()].copy_from_slice(p);
                    off += 1 + p.len();
                } else {
                    let hdr = ((p.len() + 4) as u32) << 2;
                    t[off..off + 4].copy_from_slice(&hdr.to_le_bytes());
                    t[off + 4..off + 4 + p.len()].copy_from_slice(p);
                    off += 4 + p.len();
                }
            }
            Datum::Compressed { raw_size, data } => {
                let hdr = (((data.len() + 8) as u32) << 2) | 0b10;
                t[off..off + 4].copy_from_slice(&hdr.to_le_bytes());
                // va_tcinfo: raw size (30 bits) | method (2 bits, 0 = fglz).
                t[off + 4..off + 8].copy_from_slice(&(raw_size & 0x3fff_ffff).to_le_bytes());
                t[off + 8..off + 8 + data.len()].copy_from_slice(data);
                off += 8 + data.len();
            }
            Datum::External(p) => {
                infomask |= HEAP_HASEXTERNAL;
                t[off..off + TOAST_POINTER_SIZE].copy_from_slice(&p.encode());
                off += TOAST_POINTER_SIZE;
            }
        }
    }
    (infomask, off)
}

/// Whether attribute `i` (0-based) of the tuple is null. Attributes beyond the
/// tuple's natts (added by a later ALTER TABLE) are null.
pub fn tuple_attr_is_null(tuple: &[u8], h: &TupleHeader, i: usize) -> bool {
    i >= h.natts() || (h.has_nulls() && tuple[T_BITS + i / 8] & (1 << (i % 8)) == 0)
}

/// Splits a tuple into its attribute values, borrowing from `tuple`. Returns one value
/// per attribute of `desc` (attributes the tuple does not have are null; extra
/// attributes of the tuple are ignored). Bad bytes are `Error::corrupt`.
pub fn deform_tuple<'a>(desc: &[AttrDesc], tuple: &'a [u8]) -> Result<Vec<Option<Datum<'a>>>> {
    let mut out = Vec::with_capacity(desc.len());
    deform_tuple_each(desc, tuple, |d| out.push(d))?;
    Ok(out)
}

/// The first attribute of `tuple` when it is a non-null by-value attribute and
/// the tuple has no nulls at all: the value [`deform_tuple_each`] would give,
/// read without parsing the whole header. `None` means "use the general path"
/// (also for any malformed tuple, which the general path reports).
#[inline(always)]
pub fn first_attr_byval(a: &AttrDesc, tuple: &[u8]) -> Option<u64> {
    if !a.by_val || a.is_varlena() || tuple.len() < HEAP_TUPLE_HEADER_SIZE {
        return None;
    }
    let infomask = u16::from_le_bytes([tuple[T_INFOMASK], tuple[T_INFOMASK + 1]]);
    let infomask2 = u16::from_le_bytes([tuple[T_INFOMASK2], tuple[T_INFOMASK2 + 1]]);
    let hoff = tuple[T_HOFF] as usize;
    let n = a.len as usize;
    if infomask & HEAP_HASNULL != 0
        || infomask2 & HEAP_NATTS_MASK == 0
        || !hoff.is_multiple_of(8)
        || hoff < T_BITS
        || !matches!(n, 1 | 2 | 4 | 8)
    {
        return None;
    }
    let b = tuple.get(hoff..hoff + n)?;
    let mut v = [0u8; 8];
    v[..n].copy_from_slice(b);
    Some(u64::from_le_bytes(v))
}

/// [`deform_tuple`] without the vector: `push` gets each attribute's value in
/// order (hot paths such as B-tree key comparisons deform into a stack buffer).
pub fn deform_tuple_each<'a>(desc: &[AttrDesc], tuple: &'a [u8], push: impl FnMut(Option<Datum<'a>>)) -> Result<()> {
    let h = TupleHeader::read(tuple)?;
    deform_data_each(desc, tuple, h.hoff as usize, |i| tuple_attr_is_null(tuple, &h, i), "heap tuple", push)
}

/// Reads the data area of `tuple` from `start` on (laid out by [`fill_data`]):
/// `push` gets each attribute of `desc` in order, `None` where `is_null` says
/// so. `what` names the tuple in corruption errors.
#[inline]
pub fn deform_data_each<'a>(
    desc: &[AttrDesc],
    tuple: &'a [u8],
    start: usize,
    is_null: impl Fn(usize) -> bool,
    what: &str,
    mut push: impl FnMut(Option<Datum<'a>>),
) -> Result<()> {
    let mut off = start;
    for (i, a) in desc.iter().enumerate() {
        if is_null(i) {
            push(None);
            continue;
        }
        push(Some(read_attr(a, tuple, start, &mut off, i, what)?));
    }
    Ok(())
}

/// Reads the non-null attribute `i` (described by `a`) of a data area that
/// begins at `hoff`, where the previous attribute ended at `*off`: aligns,
/// decodes, and leaves `*off` where the attribute ends.
#[inline(always)]
fn read_attr<'a>(a: &AttrDesc, tuple: &'a [u8], hoff: usize, off: &mut usize, i: usize, what: &str) -> Result<Datum<'a>> {
    let corrupt = |e: &str| Error::corrupt(format!("{what} attribute {} {e} (tuple length {})", i + 1, tuple.len()));
    if a.is_varlena() {
        // A zero byte at an unaligned position is padding before a 4-byte
        // header; a nonzero one is a 1-byte header (always odd).
        if *off < tuple.len() && tuple[*off] == 0 {
            *off = hoff + align_to(*off - hoff, a.align_bytes());
        }
        let o = *off;
        let b0 = *tuple.get(o).ok_or_else(|| corrupt("past the end"))?;
        if b0 & 1 == 1 {
            if b0 == 0x01 {
                let end = o + TOAST_POINTER_SIZE;
                let b = tuple.get(o..end).ok_or_else(|| corrupt("truncated pointer"))?;
                *off = end;
                return Ok(Datum::External(ToastPointer::decode(b)?));
            }
            let end = o + (b0 >> 1) as usize;
            let b = tuple.get(o + 1..end).ok_or_else(|| corrupt("short varlena overruns"))?;
            *off = end;
            return Ok(Datum::Varlena(b));
        }
        if !(o - hoff).is_multiple_of(a.align_bytes()) {
            return Err(corrupt("4-byte varlena header misaligned"));
        }
        let hb = tuple.get(o..o + 4).ok_or_else(|| corrupt("truncated header"))?;
        let hdr = u32::from_le_bytes(hb.try_into().unwrap());
        let len = (hdr >> 2) as usize;
        let end = o + len;
        if end > tuple.len() {
            return Err(corrupt("varlena overruns"));
        }
        *off = end;
        if hdr & 0b11 == 0 {
            if len < 4 {
                return Err(corrupt("varlena length below header"));
            }
            return Ok(Datum::Varlena(&tuple[o + 4..end]));
        }
        if hdr & 0b11 == 0b10 {
            if len < 8 {
                return Err(corrupt("compressed varlena length below header"));
            }
            let info = u32::from_le_bytes(tuple[o + 4..o + 8].try_into().unwrap());
            if info >> 30 != 0 {
                return Err(corrupt("unknown compression method"));
            }
            return Ok(Datum::Compressed { raw_size: info, data: &tuple[o + 8..end] });
        }
        return Err(corrupt("invalid varlena header"));
    }
    let o = hoff + align_to(*off - hoff, a.align_bytes());
    let n = a.len.max(0) as usize;
    let b = tuple.get(o..o + n).ok_or_else(|| corrupt("past the end"))?;
    if n == 0 {
        return Err(Error::internal(format!("attribute {a:?} has no width")));
    }
    *off = o + n;
    if a.by_val {
        if !matches!(n, 1 | 2 | 4 | 8) {
            return Err(Error::internal(format!("by-value attribute of width {n}")));
        }
        let mut v = [0u8; 8];
        v[..n].copy_from_slice(b);
        return Ok(Datum::ByVal(u64::from_le_bytes(v)));
    }
    Ok(Datum::Fixed(b))
}

/// One heap tuple's attributes read in any order, each found once: where
/// each attribute walked so far begins is remembered, so reading an earlier
/// attribute again, or a later one, starts from there instead of from the
/// first attribute (the idea of PostgreSQL's slot that keeps how far its
/// tuple was deformed; a scan evaluating its filter conjunct by conjunct
/// reads a few columns at a time). Invariants, between [`AttrWalk::reset`]
/// calls on the same tuple: `1 <= starts.len() <= desc.len() + 1`, and
/// `starts[k]` is the offset at which the read of attribute `k` begins
/// (before its alignment), `starts[0]` the data area's start.
#[derive(Debug, Default)]
pub struct AttrWalk {
    starts: Vec<usize>,
    header: Option<TupleHeader>,
}

impl AttrWalk {
    /// Starts over on a new tuple: reads and checks its header.
    pub fn reset(&mut self, tuple: &[u8]) -> Result<()> {
        let h = TupleHeader::read(tuple)?;
        self.starts.clear();
        self.starts.push(h.hoff as usize);
        self.header = Some(h);
        Ok(())
    }

    /// The number of attributes the tuple stores (those past it read as
    /// NULL here: a column added later has its missing value, the caller's).
    pub fn natts(&self) -> usize {
        self.header.map_or(0, |h| h.natts())
    }

    /// Attribute `i` of the tuple given to the last [`AttrWalk::reset`]
    /// (`None`: NULL, or not stored), walking from the nearest attribute
    /// whose start is known.
    pub fn attr<'a>(&mut self, desc: &[AttrDesc], tuple: &'a [u8], i: usize) -> Result<Option<Datum<'a>>> {
        let h = self.header.ok_or_else(|| Error::internal("AttrWalk::attr before reset"))?;
        if i >= desc.len() {
            return Ok(None);
        }
        let hoff = self.starts[0];
        while self.starts.len() <= i {
            let k = self.starts.len() - 1;
            let mut off = self.starts[k];
            if !tuple_attr_is_null(tuple, &h, k) {
                read_attr(&desc[k], tuple, hoff, &mut off, k, "heap tuple")?;
            }
            self.starts.push(off);
        }
        if tuple_attr_is_null(tuple, &h, i) {
            if self.starts.len() == i + 1 {
                self.starts.push(self.starts[i]);
            }
            return Ok(None);
        }
        let mut off = self.starts[i];
        let d = read_attr(&desc[i], tuple, hoff, &mut off, i, "heap tuple")?;
        if self.starts.len() == i + 1 {
            self.starts.push(off);
        }
        Ok(Some(d))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::SmallRng, Rng, SeedableRng};

    fn sample_desc() -> Vec<AttrDesc> {
        vec![
            AttrDesc::fixed(1),
            AttrDesc::fixed(8),
            AttrDesc::varlena(),
            AttrDesc::fixed(2),
            AttrDesc::fixed(4),
            AttrDesc::varlena(),
            AttrDesc::fixed_by_ref(16, b'c'),
            AttrDesc::varlena().with_align(b'd'),
            AttrDesc::fixed(8),
        ]
    }

    #[test]
    fn header_layout_and_accessors() {
        let desc = [AttrDesc::fixed(4)];
        let mut t = form_tuple(&desc, &[Some(Datum::ByVal(7))]).unwrap();
        assert_eq!(t.len(), 24 + 4);
        assert_eq!(t[22], 24);
        assert_eq!(&t[24..28], &7u32.to_le_bytes());
        tuple_set_xmin(&mut t, 100);
        tuple_set_xmax(&mut t, 0x0102_0304);
        tuple_set_cid(&mut t, 5);
        tuple_set_ctid(&mut t, Tid::new(0xAABBCCDD, 0x1234));
        assert_eq!(&t[4..8], &[4, 3, 2, 1]);
        assert_eq!(&t[12..18], &[0xDD, 0xCC, 0xBB, 0xAA, 0x34, 0x12]);
        tuple_set_xmin_committed(&mut t);
        tuple_set_xmax_invalid(&mut t);
        tuple_or_infomask2(&mut t, HEAP_HOT_UPDATED);
        let h = TupleHeader::read(&t).unwrap();
        assert_eq!((h.xmin, h.xmax, h.cid), (100, 0x0102_0304, 5));
        assert_eq!(h.ctid, Tid::new(0xAABBCCDD, 0x1234));
        assert!(h.xmin_committed() && h.xmax_invalid() && !h.xmin_frozen() && !h.xmin_invalid());
        assert!(h.is_hot_updated() && !h.is_heap_only());
        assert_eq!(h.natts(), 1);
        tuple_set_xmin_invalid(&mut t);
        assert!(TupleHeader::read(&t).unwrap().xmin_frozen());
        tuple_clear_infomask(&mut t, HEAP_XMIN_COMMITTED);
        assert!(TupleHeader::read(&t).unwrap().xmin_invalid());
        let mut w = vec![0u8; 28];
        h.write(&mut w);
        assert_eq!(TupleHeader::read(&w).unwrap(), h);
        // Bad t_hoff values.
        for hoff in [0u8, 20, 25, 32] {
            let mut b = t.clone();
            b[22] = hoff;
            assert!(TupleHeader::read(&b).is_err(), "{hoff}");
        }
        assert!(TupleHeader::read(&t[..20]).is_err());
    }

    #[test]
    fn round_trip_with_nulls_and_alignment() {
        let desc = sample_desc();
        let long = vec![b'x'; 300];
        let uuid = [9u8; 16];
        let vals: Vec<Option<Datum>> = vec![
            Some(Datum::ByVal(0xAB)),
            Some(Datum::ByVal(u64::MAX - 5)),
            Some(Datum::Varlena(b"hi")),
            None,
            Some(Datum::ByVal(0xDEAD_BEEF)),
            Some(Datum::Varlena(&long)),
            Some(Datum::Fixed(&uuid)),
            Some(Datum::Varlena(b"")),
            Some(Datum::ByVal(42)),
        ];
        let t = form_tuple(&desc, &vals).unwrap();
        let h = TupleHeader::read(&t).unwrap();
        assert!(h.has_nulls());
        assert_eq!(h.infomask & HEAP_HASVARWIDTH, HEAP_HASVARWIDTH);
        assert_eq!(h.hoff, 32); // 23 + 2 bytes of bitmap -> 25 -> MAXALIGN 32
        let back = deform_tuple(&desc, &t).unwrap();
        assert_eq!(back, vals);
        assert_eq!(t.len(), heap_compute_tuple_size(&desc, &vals).unwrap());
        // Alignment: the int8 at attr 2 is 8-aligned relative to the data start.
        let hoff = h.hoff as usize;
        assert_eq!(&t[hoff..hoff + 1], &[0xAB]);
        assert_eq!(&t[hoff + 8..hoff + 16], &(u64::MAX - 5).to_le_bytes());
        // Short varlena right after, unaligned: 1-byte header (len 3 -> 3<<1|1 = 7).
        assert_eq!(&t[hoff + 16..hoff + 19], &[7, b'h', b'i']);
        // Re-forming the deformed values gives the same bytes.
        assert_eq!(form_tuple(&desc, &back).unwrap(), t);
    }

    #[test]
    fn null_bitmap_sets_t_hoff() {
        let desc = vec![AttrDesc::fixed(4); 20];
        let mut vals = vec![Some(Datum::ByVal(1)); 20];
        vals[17] = None;
        let t = form_tuple(&desc, &vals).unwrap();
        // 23 + 3 bytes of bitmap -> 32.
        assert_eq!(t[22], 32);
        assert_eq!(t[23], 0xff);
        assert_eq!(t[25], 0b0000_1101);
        assert_eq!(deform_tuple(&desc, &t).unwrap(), vals);
        // A tuple with fewer attributes than the descriptor: the rest read as null.
        let mut more = desc.clone();
        more.push(AttrDesc::varlena());
        let back = deform_tuple(&more, &t).unwrap();
        assert_eq!(back.len(), 21);
        assert_eq!(back[20], None);
    }

    #[test]
    fn varlena_headers_and_forms() {
        let desc = [AttrDesc::varlena(), AttrDesc::varlena(), AttrDesc::varlena()];
        let p126 = vec![1u8; 126];
        let p127 = vec![2u8; 127];
        let ptr = ToastPointer { raw_size: 5000, ext_size: 1200, compressed: true, value_oid: 77, toast_relid: 9 };
        let vals = [Some(Datum::Varlena(&p126)), Some(Datum::Varlena(&p127)), Some(Datum::External(ptr))];
        let t = form_tuple(&desc, &vals).unwrap();
        assert_eq!(t[24], (127 << 1) | 1);
        // The 127-byte payload needs a 4-byte header, aligned to 4: 24+127 = 151 -> 152.
        assert_eq!(&t[152..156], &((131u32) << 2).to_le_bytes());
        assert_eq!(t[151], 0);
        let ext_at = 156 + 127;
        assert_eq!(&t[ext_at..ext_at + 2], &[0x01, VARTAG_ONDISK]);
        assert!(TupleHeader::read(&t).unwrap().has_external());
        assert_eq!(deform_tuple(&desc, &t).unwrap(), vals);
        let comp = [Some(Datum::Compressed { raw_size: 999, data: b"zzz" }), None, None];
        let t = form_tuple(&desc, &comp).unwrap();
        assert_eq!(deform_tuple(&desc, &t).unwrap(), comp);
    }

    #[test]
    fn mismatched_values_are_internal_errors() {
        let desc = [AttrDesc::fixed(4)];
        assert!(matches!(form_tuple(&desc, &[Some(Datum::Varlena(b"x"))]), Err(Error::Internal(_))));
        assert!(form_tuple(&desc, &[]).is_err());
        let desc = [AttrDesc::fixed_by_ref(16, b'c')];
        assert!(form_tuple(&desc, &[Some(Datum::Fixed(b"short"))]).is_err());
    }

    /// Random descriptors and values round-trip; random damage never panics.
    #[test]
    fn random_round_trips_and_damage() {
        let mut rng = SmallRng::seed_from_u64(42);
        let kinds = [
            AttrDesc::fixed(1),
            AttrDesc::fixed(2),
            AttrDesc::fixed(4),
            AttrDesc::fixed(8),
            AttrDesc::fixed_by_ref(6, b's'),
            AttrDesc::varlena(),
            AttrDesc::varlena().with_align(b'd'),
            AttrDesc::varlena().with_align(b'c'),
        ];
        let mut bufs: Vec<Vec<u8>> = Vec::new();
        for _ in 0..64 {
            let n = rng.gen_range(0..400);
            bufs.push((0..n).map(|_| rng.gen()).collect());
        }
        for _ in 0..2000 {
            let natts = rng.gen_range(1..12);
            let desc: Vec<AttrDesc> = (0..natts).map(|_| kinds[rng.gen_range(0..kinds.len())]).collect();
            let vals: Vec<Option<Datum>> = desc
                .iter()
                .map(|a| {
                    if rng.gen_bool(0.2) {
                        return None;
                    }
                    Some(match (a.len, a.by_val) {
                        (-1, _) => Datum::Varlena(&bufs[rng.gen_range(0..bufs.len())]),
                        (n, true) => Datum::ByVal(rng.gen::<u64>() >> (64 - 8 * n as u32)),
                        (n, false) => Datum::Fixed(&[3u8; 6][..n as usize]),
                    })
                })
                .collect();
            let t = form_tuple(&desc, &vals).unwrap();
            assert_eq!(deform_tuple(&desc, &t).unwrap(), vals);
            // Attributes read through an AttrWalk in a random order (some
            // twice, some past the descriptor) are the deformed values.
            let mut walk = AttrWalk::default();
            walk.reset(&t).unwrap();
            assert_eq!(walk.natts(), natts);
            for _ in 0..2 * natts {
                let i = rng.gen_range(0..natts + 1);
                assert_eq!(walk.attr(&desc, &t, i).unwrap(), vals.get(i).copied().flatten(), "attribute {i}");
            }
            // The fast first-attribute read agrees with deforming, and applies
            // whenever the tuple has no nulls and starts with a by-value column.
            let fast = first_attr_byval(&desc[0], &t);
            if let Some(v) = fast {
                assert_eq!(vals[0], Some(Datum::ByVal(v)));
            }
            assert_eq!(fast.is_some(), desc[0].by_val && vals.iter().all(Option::is_some));
            let mut bad = t.clone();
            for _ in 0..3 {
                let at = rng.gen_range(0..bad.len());
                bad[at] = rng.gen();
            }
            let _ = deform_tuple(&desc, &bad);
            if let (Some(v), Ok(d)) = (first_attr_byval(&desc[0], &bad), deform_tuple(&desc, &bad)) {
                assert_eq!(d[0], Some(Datum::ByVal(v)), "damaged tuple read differently");
            }
            let cut = rng.gen_range(0..t.len());
            let _ = deform_tuple(&desc, &t[..cut]);
            let _ = first_attr_byval(&desc[0], &t[..cut]);
        }
    }

    /// The worked example of docs/format/heap-tuple.md, byte for byte.
    #[test]
    fn documented_example() {
        let desc = [AttrDesc::fixed(4), AttrDesc::varlena(), AttrDesc::fixed(4), AttrDesc::fixed(8)];
        let vals = [Some(Datum::ByVal(7)), Some(Datum::Varlena(b"hi")), None, Some(Datum::ByVal(42))];
        let t = form_tuple(&desc, &vals).unwrap();
        assert_eq!(t.len(), 40);
        assert_eq!(tuple_infomask(&t), HEAP_HASNULL | HEAP_HASVARWIDTH | HEAP_XMAX_INVALID);
        assert_eq!((t[22], t[23]), (24, 0b1011));
        assert_eq!(&t[24..40], &[7, 0, 0, 0, 7, b'h', b'i', 0, 42, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn xid_comparison_wraps() {
        assert!(xid_precedes(3, 4));
        assert!(xid_precedes(u32::MAX, 3 + 5));
        assert!(!xid_precedes(10, 10));
        assert!(xid_precedes(FROZEN_TRANSACTION_ID, 3));
    }
}
