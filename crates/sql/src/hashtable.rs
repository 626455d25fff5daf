//! The hash join's in-memory table (PostgreSQL's HashJoinTable, nodeHash.c:
//! the ideas, not the code): build rows kept as compact encoded bytes in
//! chunks, chained from a bucket array, decoded only when a probe row's hash
//! reaches them.
//!
//! Why bytes. A row held as `Vec<Value>` costs a vector header, an allocation
//! and 32 bytes per value (the size of [`Value`]), plus a copy of its key: a
//! two-integer row took ~240 bytes where PostgreSQL's minimal tuple and
//! HashJoinTuple header take ~50, so a table PostgreSQL holds in `work_mem`
//! went to batches here (TPC-H Q9's orders and partsupp). Encoded, an int4 is
//! five bytes.
//!
//! Data structures:
//! - `chunks`: byte buffers of [`CHUNK`] bytes (the first ones smaller,
//!   doubling from [`FIRST_CHUNK`]; a larger one for a row that does not
//!   fit), filled in order; an entry's bytes never cross a chunk.
//!   Each entry is its key values then its row: `[key value; nkeys][varint
//!   ncols][value; ncols]`, a value being a tag byte and its payload
//!   ([`encode`]).
//! - `entries`: per entry its hash, its place in `chunks` and the next entry
//!   of its bucket, in segments of [`SEGMENT`] entries (so growth is by
//!   segment, never a doubling copy of the whole array; the first segment
//!   grows by doubling from 64 entries, so a small table stays small).
//! - `buckets`: a power of two of chain heads (entry numbers, `NONE` for an
//!   empty bucket), at least one per entry (PostgreSQL's NTUP_PER_BUCKET 1):
//!   doubled and rechained when the entries pass it.
//! - `matched`: one bit per entry (outer joins' unmatched build rows).
//! - `boxed`: values without a byte form here (arrays, records), kept as
//!   they are; their place in it is their payload.
//!
//! Invariants:
//! 1. `mem` = bytes the table holds: the capacity of every chunk, segment,
//!    bucket array, bitmap and the boxed values ([`crate::sort::row_mem`]),
//!    plus the vectors holding them: it never counts less than what is
//!    allocated.
//! 2. `buckets.len()` is a power of two >= `len` (or 1024 when fewer); entry
//!    i's chain is reached from `buckets[hash & (buckets.len() - 1)]`, newer
//!    entries first.
//! 3. `len < NONE`: the table refuses more (the caller splits the batch as
//!    when memory is full, [`Table::full`]).

use ferrogres_datum::datetime::Interval;
use ferrogres_datum::errors::{Result, SqlError};
use ferrogres_datum::numeric::Numeric;
use ferrogres_datum::types::Value;

/// Bytes per chunk of entries.
const CHUNK: usize = 32 * 1024;
/// Bytes of the first chunk (the next ones double up to [`CHUNK`]).
const FIRST_CHUNK: usize = 1024;
/// Entries per segment.
const SEGMENT: usize = 4096;
/// No entry (an empty bucket, a chain's end).
pub(crate) const NONE: u32 = u32::MAX;
/// The bucket count of an empty table (PostgreSQL's smallest is 1024 too).
const MIN_BUCKETS: usize = 1024;

#[derive(Clone, Copy)]
struct Entry {
    hash: u32,
    next: u32,
    chunk: u32,
    off: u32,
}

/// The rows of the current batch (or chunk); see the module doc.
pub(crate) struct Table {
    nkeys: usize,
    chunks: Vec<Vec<u8>>,
    entries: Vec<Vec<Entry>>,
    len: usize,
    buckets: Vec<u32>,
    matched: Vec<u64>,
    boxed: Vec<Value>,
    pub(crate) mem: usize,
    scratch: Vec<u8>,
}

impl Table {
    /// An empty table whose entries carry `nkeys` key values.
    pub(crate) fn new(nkeys: usize) -> Table {
        let mut t = Table { nkeys, chunks: Vec::new(), entries: Vec::new(), len: 0, buckets: Vec::new(), matched: Vec::new(), boxed: Vec::new(), mem: 0, scratch: Vec::new() };
        t.clear();
        t
    }

    /// Empties the table, keeping only an empty bucket array.
    pub(crate) fn clear(&mut self) {
        self.chunks = Vec::new();
        self.entries = Vec::new();
        self.len = 0;
        self.buckets = vec![NONE; MIN_BUCKETS];
        self.matched = Vec::new();
        self.boxed = Vec::new();
        self.mem = self.buckets.capacity() * 4;
    }

    pub(crate) fn nkeys(&self) -> usize {
        self.nkeys
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn buckets(&self) -> usize {
        self.buckets.len()
    }

    /// Whether the table holds more than `limit` bytes or as many entries as
    /// it can number.
    pub(crate) fn full(&self, limit: usize) -> bool {
        self.mem > limit || self.len >= NONE as usize - 1
    }

    fn entry(&self, i: u32) -> &Entry {
        &self.entries[i as usize / SEGMENT][i as usize % SEGMENT]
    }

    /// Adds a row with its key values and their hash.
    pub(crate) fn insert(&mut self, hash: u32, key: &[Value], row: &[Value]) {
        debug_assert_eq!(key.len(), self.nkeys);
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        for v in key {
            self.encode(&mut buf, v);
        }
        put_varint(&mut buf, row.len());
        for v in row {
            self.encode(&mut buf, v);
        }
        let fits = self.chunks.last().is_some_and(|c| c.capacity() - c.len() >= buf.len());
        if !fits {
            // Chunks double from FIRST_CHUNK to CHUNK, so a small table stays small.
            let size = self.chunks.last().map_or(FIRST_CHUNK, |c| (c.capacity() * 2).min(CHUNK));
            let c = Vec::with_capacity(size.max(buf.len()));
            self.mem += c.capacity();
            self.count_chunk_array_growth();
            self.chunks.push(c);
        }
        let chunk = self.chunks.len() - 1;
        let c = &mut self.chunks[chunk];
        let off = c.len();
        c.extend_from_slice(&buf);
        self.scratch = buf;
        if self.len.is_multiple_of(SEGMENT) {
            let cap_before = self.entries.capacity();
            // The first segment grows as a vector does (a small table stays
            // small); the later ones are made whole.
            let segment = if self.len == 0 { Vec::new() } else { Vec::with_capacity(SEGMENT) };
            self.mem += segment.capacity() * std::mem::size_of::<Entry>();
            self.entries.push(segment);
            self.mem += (self.entries.capacity() - cap_before) * std::mem::size_of::<Vec<Entry>>();
        }
        let i = self.len as u32;
        let b = hash as usize & (self.buckets.len() - 1);
        let next = self.buckets[b];
        self.buckets[b] = i;
        let segment = &mut self.entries[self.len / SEGMENT];
        let cap_before = segment.capacity();
        if segment.len() == segment.capacity() {
            segment.reserve_exact((segment.capacity() * 2).clamp(64, SEGMENT) - segment.len());
        }
        segment.push(Entry { hash, next, chunk: chunk as u32, off: off as u32 });
        self.mem += (segment.capacity() - cap_before) * std::mem::size_of::<Entry>();
        self.len += 1;
        if self.len % 64 == 1 {
            let before = self.matched.capacity();
            self.matched.push(0);
            self.mem += (self.matched.capacity() - before) * 8;
        }
        if self.len > self.buckets.len() {
            self.rechain();
        }
    }

    /// Counts the growth of `chunks`' own array before a push.
    fn count_chunk_array_growth(&mut self) {
        if self.chunks.len() == self.chunks.capacity() {
            let before = self.chunks.capacity();
            self.chunks.reserve(1);
            self.mem += (self.chunks.capacity() - before) * std::mem::size_of::<Vec<u8>>();
        }
    }

    /// Doubles the buckets and rechains every entry (newer first).
    fn rechain(&mut self) {
        self.mem -= self.buckets.capacity() * 4;
        let n = self.buckets.len() * 2;
        self.buckets = vec![NONE; n];
        self.mem += self.buckets.capacity() * 4;
        for i in 0..self.len {
            let e = &mut self.entries[i / SEGMENT][i % SEGMENT];
            let b = e.hash as usize & (n - 1);
            e.next = self.buckets[b];
            self.buckets[b] = i as u32;
        }
    }

    /// The first entry whose hash may be `hash` (then follow [`Table::next`]).
    pub(crate) fn head(&self, hash: u32) -> u32 {
        self.buckets[hash as usize & (self.buckets.len() - 1)]
    }

    /// Entry `i`'s hash and the next entry of its chain.
    pub(crate) fn hash_next(&self, i: u32) -> (u32, u32) {
        let e = self.entry(i);
        (e.hash, e.next)
    }

    fn bytes(&self, i: u32) -> &[u8] {
        let e = self.entry(i);
        &self.chunks[e.chunk as usize][e.off as usize..]
    }

    /// Whether entry `i`'s key equals `key` (by `eq`, value by value).
    pub(crate) fn key_matches(&self, i: u32, key: &[Value], eq: impl Fn(&Value, &Value) -> bool) -> Result<bool> {
        let mut r = Reader { b: self.bytes(i), at: 0 };
        for k in key {
            let v = r.value(&self.boxed)?;
            if !eq(&v, k) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Entry `i`'s row.
    pub(crate) fn row(&self, i: u32) -> Result<Vec<Value>> {
        let mut r = Reader { b: self.bytes(i), at: 0 };
        for _ in 0..self.nkeys {
            r.skip()?;
        }
        let n = r.varint()?;
        (0..n).map(|_| r.value(&self.boxed)).collect()
    }

    /// Entry `i`'s key values and row.
    pub(crate) fn key_and_row(&self, i: u32) -> Result<(Vec<Value>, Vec<Value>)> {
        let mut r = Reader { b: self.bytes(i), at: 0 };
        let key = (0..self.nkeys).map(|_| r.value(&self.boxed)).collect::<Result<Vec<_>>>()?;
        let n = r.varint()?;
        let row = (0..n).map(|_| r.value(&self.boxed)).collect::<Result<Vec<_>>>()?;
        Ok((key, row))
    }

    pub(crate) fn set_matched(&mut self, i: u32) {
        self.matched[i as usize / 64] |= 1 << (i % 64);
    }

    pub(crate) fn is_matched(&self, i: u32) -> bool {
        self.matched[i as usize / 64] & (1 << (i % 64)) != 0
    }

    /// Appends `v`'s tag and payload.
    fn encode(&mut self, out: &mut Vec<u8>, v: &Value) {
        match v {
            Value::Null => out.push(T_NULL),
            Value::Bool(b) => out.extend_from_slice(&[T_BOOL, *b as u8]),
            Value::Int2(i) => {
                out.push(T_INT2);
                out.extend_from_slice(&i.to_le_bytes());
            }
            Value::Int4(i) => {
                out.push(T_INT4);
                out.extend_from_slice(&i.to_le_bytes());
            }
            Value::Int8(i) => {
                out.push(T_INT8);
                out.extend_from_slice(&i.to_le_bytes());
            }
            Value::Oid(i) => {
                out.push(T_OID);
                out.extend_from_slice(&i.to_le_bytes());
            }
            Value::Float8(f) => {
                out.push(T_FLOAT8);
                out.extend_from_slice(&f.to_le_bytes());
            }
            Value::Float4(f) => {
                out.push(T_FLOAT4);
                out.extend_from_slice(&f.to_le_bytes());
            }
            Value::Date(d) => {
                out.push(T_DATE);
                out.extend_from_slice(&d.to_le_bytes());
            }
            Value::Time(t) => {
                out.push(T_TIME);
                out.extend_from_slice(&t.to_le_bytes());
            }
            Value::Timestamp(t) => {
                out.push(T_TIMESTAMP);
                out.extend_from_slice(&t.to_le_bytes());
            }
            Value::Timestamptz(t) => {
                out.push(T_TIMESTAMPTZ);
                out.extend_from_slice(&t.to_le_bytes());
            }
            Value::PgLsn(l) => {
                out.push(T_PGLSN);
                out.extend_from_slice(&l.to_le_bytes());
            }
            Value::Xid8(x) => {
                out.push(T_XID8);
                out.extend_from_slice(&x.to_le_bytes());
            }
            Value::Interval(i) => {
                out.push(T_INTERVAL);
                out.extend_from_slice(&i.micros.to_le_bytes());
                out.extend_from_slice(&i.days.to_le_bytes());
                out.extend_from_slice(&i.months.to_le_bytes());
            }
            Value::TimeTz(t, z) => {
                out.push(T_TIMETZ);
                out.extend_from_slice(&t.to_le_bytes());
                out.extend_from_slice(&z.to_le_bytes());
            }
            Value::Tid(b, o) => {
                out.push(T_TID);
                out.extend_from_slice(&b.to_le_bytes());
                out.extend_from_slice(&o.to_le_bytes());
            }
            Value::Uuid(u) => {
                out.push(T_UUID);
                out.extend_from_slice(u);
            }
            Value::Text(s) => bytes_of(out, T_TEXT, s.as_bytes()),
            Value::Json(s) => bytes_of(out, T_JSON, s.as_bytes()),
            Value::Jsonb(s) => bytes_of(out, T_JSONB, s.as_bytes()),
            Value::Bytea(b) => bytes_of(out, T_BYTEA, b),
            Value::Numeric(n) => bytes_of(out, T_NUMERIC, n.as_bytes()),
            Value::Array(_) | Value::Record(_) | Value::PgSnapshot(_) => {
                out.push(T_BOXED);
                put_varint(out, self.boxed.len());
                let before = self.boxed.capacity();
                self.boxed.push(v.clone());
                // The value's own heap share, without the row header row_mem adds.
                self.mem += crate::sort::row_mem(std::slice::from_ref(v)) + (self.boxed.capacity() - before) * std::mem::size_of::<Value>();
            }
        }
    }
}

const T_NULL: u8 = 0;
const T_BOOL: u8 = 1;
const T_INT2: u8 = 2;
const T_INT4: u8 = 3;
const T_INT8: u8 = 4;
const T_OID: u8 = 5;
const T_FLOAT8: u8 = 6;
const T_FLOAT4: u8 = 7;
const T_DATE: u8 = 8;
const T_TIME: u8 = 9;
const T_TIMESTAMP: u8 = 10;
const T_TIMESTAMPTZ: u8 = 11;
const T_PGLSN: u8 = 12;
const T_INTERVAL: u8 = 13;
const T_TIMETZ: u8 = 14;
const T_TID: u8 = 15;
const T_UUID: u8 = 16;
const T_TEXT: u8 = 17;
const T_JSON: u8 = 18;
const T_JSONB: u8 = 19;
const T_BYTEA: u8 = 20;
const T_NUMERIC: u8 = 21;
const T_BOXED: u8 = 22;
const T_XID8: u8 = 23;

fn bytes_of(out: &mut Vec<u8>, tag: u8, b: &[u8]) {
    out.push(tag);
    put_varint(out, b.len());
    out.extend_from_slice(b);
}

/// LEB128: seven bits a byte, low first.
fn put_varint(out: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Reads the values of one entry.
struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

fn corrupt() -> SqlError {
    SqlError::internal("hash table entry ends early or holds an unknown tag")
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8]> {
        let s = self.b.get(self.at..self.at + n).ok_or_else(corrupt)?;
        self.at += n;
        Ok(s)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        self.take(N)?.try_into().map_err(|_| corrupt())
    }

    fn varint(&mut self) -> Result<usize> {
        let mut n = 0usize;
        let mut shift = 0;
        loop {
            let b = self.array::<1>()?[0];
            n |= ((b & 0x7f) as usize) << shift;
            if b & 0x80 == 0 {
                return Ok(n);
            }
            shift += 7;
            if shift > 63 {
                return Err(corrupt());
            }
        }
    }

    fn string(&mut self) -> Result<String> {
        let n = self.varint()?;
        String::from_utf8(self.take(n)?.to_vec()).map_err(|_| corrupt())
    }

    /// Passes over one value.
    fn skip(&mut self) -> Result<()> {
        let tag = self.array::<1>()?[0];
        let n = match tag {
            T_NULL => 0,
            T_BOOL => 1,
            T_INT2 => 2,
            T_INT4 | T_OID | T_FLOAT4 | T_DATE => 4,
            T_INT8 | T_FLOAT8 | T_TIME | T_TIMESTAMP | T_TIMESTAMPTZ | T_PGLSN => 8,
            T_INTERVAL | T_UUID => 16,
            T_TIMETZ => 12,
            T_TID => 6,
            T_TEXT | T_JSON | T_JSONB | T_BYTEA | T_NUMERIC | T_BOXED => {
                let n = self.varint()?;
                if tag == T_BOXED {
                    0
                } else {
                    n
                }
            }
            _ => return Err(corrupt()),
        };
        self.take(n)?;
        Ok(())
    }

    fn value(&mut self, boxed: &[Value]) -> Result<Value> {
        let tag = self.array::<1>()?[0];
        Ok(match tag {
            T_NULL => Value::Null,
            T_BOOL => Value::Bool(self.array::<1>()?[0] != 0),
            T_INT2 => Value::Int2(i16::from_le_bytes(self.array()?)),
            T_INT4 => Value::Int4(i32::from_le_bytes(self.array()?)),
            T_INT8 => Value::Int8(i64::from_le_bytes(self.array()?)),
            T_OID => Value::Oid(u32::from_le_bytes(self.array()?)),
            T_FLOAT8 => Value::Float8(f64::from_le_bytes(self.array()?)),
            T_FLOAT4 => Value::Float4(f32::from_le_bytes(self.array()?)),
            T_DATE => Value::Date(i32::from_le_bytes(self.array()?)),
            T_TIME => Value::Time(i64::from_le_bytes(self.array()?)),
            T_TIMESTAMP => Value::Timestamp(i64::from_le_bytes(self.array()?)),
            T_TIMESTAMPTZ => Value::Timestamptz(i64::from_le_bytes(self.array()?)),
            T_PGLSN => Value::PgLsn(u64::from_le_bytes(self.array()?)),
            T_XID8 => Value::Xid8(u64::from_le_bytes(self.array()?)),
            T_INTERVAL => {
                let micros = i64::from_le_bytes(self.array()?);
                let days = i32::from_le_bytes(self.array()?);
                let months = i32::from_le_bytes(self.array()?);
                Value::Interval(Interval { micros, days, months })
            }
            T_TIMETZ => {
                let t = i64::from_le_bytes(self.array()?);
                Value::TimeTz(t, i32::from_le_bytes(self.array()?))
            }
            T_TID => {
                let b = u32::from_le_bytes(self.array()?);
                Value::Tid(b, u16::from_le_bytes(self.array()?))
            }
            T_UUID => Value::Uuid(self.array()?),
            T_TEXT => Value::Text(self.string()?),
            T_JSON => Value::Json(self.string()?),
            T_JSONB => Value::Jsonb(self.string()?),
            T_BYTEA => {
                let n = self.varint()?;
                Value::Bytea(self.take(n)?.to_vec())
            }
            T_NUMERIC => {
                let n = self.varint()?;
                Value::Numeric(Numeric::from_bytes(self.take(n)?)?)
            }
            T_BOXED => boxed.get(self.varint()?).cloned().ok_or_else(corrupt)?,
            _ => return Err(corrupt()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_read_back_equal_and_chain_by_hash() {
        let rows = [
            vec![Value::Int4(-7), Value::Null, Value::Text("héllo".into()), Value::Float8(1.5)],
            vec![Value::Int8(i64::MIN), Value::Bool(true), Value::Bytea(vec![0, 1, 2]), Value::Date(-3)],
            vec![
                Value::Numeric(Numeric::parse("-12.3400").unwrap()),
                Value::Interval(Interval { months: 1, days: 2, micros: 3 }),
                Value::Array(Box::new(ferrogres_datum::array::Array::new(ferrogres_datum::types::Type::Int4, vec![Value::Int4(1), Value::Null]))),
                Value::Uuid([7; 16]),
            ],
            vec![Value::TimeTz(5, -3600), Value::Tid(9, 2), Value::PgLsn(77), Value::Xid8(u64::MAX), Value::Jsonb("{}".into())],
        ];
        let mut t = Table::new(1);
        // Enough entries to rechain the buckets a few times.
        for n in 0..5000 {
            let r = &rows[n % rows.len()];
            t.insert(n as u32 % 7, &r[..1], r);
        }
        // A row larger than a chunk gets one of its own.
        let big = vec![Value::Text("x".repeat(3 * CHUNK))];
        t.insert(3, &big, &big);
        assert_eq!(t.row(5000).unwrap(), big);
        assert_eq!(t.len(), 5001);
        assert!(t.buckets() >= 5000 && t.buckets().is_power_of_two());
        for n in 0..5000u32 {
            let r = &rows[n as usize % rows.len()];
            assert_eq!(&t.row(n).unwrap(), r);
            assert!(t.key_matches(n, &r[..1], |a, b| a == b).unwrap());
        }
        // Each chain from hash 3's bucket passes through every entry of hash 3, newest first.
        let mut seen = Vec::new();
        let mut i = t.head(3);
        while i != NONE {
            let (h, next) = t.hash_next(i);
            if h == 3 {
                seen.push(i);
            }
            i = next;
        }
        let want: Vec<u32> = std::iter::once(5000).chain((0..5000u32).rev().filter(|n| n % 7 == 3)).collect();
        assert_eq!(seen, want);
        // Memory counts at least the bytes the chunks and entries hold.
        assert!(t.mem >= 5001 * std::mem::size_of::<Entry>() + 3 * CHUNK + 5000 * 4);
        // Every segment's allocation is counted: two whole ones here.
        assert!(t.mem >= 2 * SEGMENT * std::mem::size_of::<Entry>() + t.buckets() * 4 + 3 * CHUNK);
        t.set_matched(4999);
        assert!(t.is_matched(4999) && !t.is_matched(4998));
    }
}
