//! TOAST: compression and out-of-line storage of large attribute values. Format in
//! docs/format/toast.md.
//!
//! A row whose tuple would exceed [`TOAST_TUPLE_THRESHOLD`] (a quarter page) is shrunk
//! to [`TOAST_TUPLE_TARGET`] by [`toast_plan`]: first the largest `Extended` values are
//! compressed inline, then the largest `Extended`/`External` values move out of line,
//! then `Main` values are compressed, and `Main` values move out only if the tuple
//! still does not fit on a page. A value moved out of line is cut into chunks of
//! [`TOAST_MAX_CHUNK_SIZE`] bytes ([`make_chunks`]), stored as rows
//! `(chunk_id oid, chunk_seq int4, chunk_data bytea)` of the table's toast relation,
//! and replaced in the main tuple by an 18-byte [`ToastPointer`]. [`reassemble`] puts
//! the chunks back together and checks them.
//!
//! Compression is ferrogres's own LZ77 variant ("fglz", [`compress`] and
//! [`decompress`]); it is not bitstream-compatible with PostgreSQL's pglz (files are
//! never shared with PostgreSQL).

use std::borrow::Cow;

use crate::config::BLCKSZ;
use crate::error::{Error, Result};
use crate::heap::tuple::*;
use crate::storage::page::{maxalign, maxalign_down, ITEM_ID_SIZE, PAGE_HEADER_SIZE};
use crate::storage::Oid;

/// Tuples per page TOAST aims for (PostgreSQL's TOAST_TUPLES_PER_PAGE).
pub const TOAST_TUPLES_PER_PAGE: usize = 4;
/// A row larger than this is toasted: a quarter page, less header and line
/// pointers (2032 bytes with 8 kB pages).
pub const TOAST_TUPLE_THRESHOLD: usize = maxalign_down(
    (BLCKSZ - maxalign(PAGE_HEADER_SIZE + TOAST_TUPLES_PER_PAGE * ITEM_ID_SIZE)) / TOAST_TUPLES_PER_PAGE,
);
/// Toasting shrinks a row until it is at most this big (if it can).
pub const TOAST_TUPLE_TARGET: usize = TOAST_TUPLE_THRESHOLD;
/// Largest tuple that fits on an empty heap page (PostgreSQL's MaxHeapTupleSize).
pub const MAX_HEAP_TUPLE_SIZE: usize = BLCKSZ - maxalign(PAGE_HEADER_SIZE + ITEM_ID_SIZE);
/// Data bytes per chunk: a chunk row (header, oid, int4, 4-byte varlena header, data)
/// is exactly [`TOAST_TUPLE_THRESHOLD`] bytes, so four fit on a page (1996 bytes).
pub const TOAST_MAX_CHUNK_SIZE: usize = TOAST_TUPLE_THRESHOLD - maxalign(HEAP_TUPLE_HEADER_SIZE) - 4 - 4 - 4;
/// Values smaller than this are not worth compressing.
pub const MIN_COMPRESS_SIZE: usize = 32;
/// Compression method id stored in va_tcinfo / va_extinfo: ferrogres LZ.
pub const COMPRESSION_FGLZ: u8 = 0;

const _: () = assert!(TOAST_TUPLE_THRESHOLD == 2032);
const _: () = assert!(TOAST_MAX_CHUNK_SIZE == 1996);
const _: () = assert!(TOAST_TUPLES_PER_PAGE * (TOAST_TUPLE_THRESHOLD + ITEM_ID_SIZE) <= BLCKSZ - PAGE_HEADER_SIZE);

// ---------------------------------------------------------------------------------
// fglz: a small LZ77 compressor.
//
// The stream is a sequence of groups: a control byte whose bits (least significant
// first) say, for each of up to 8 items, literal (0) or match (1). A literal is one
// byte. A match is a u16 LE `(distance - 1) << 4 | n`, distance 1..=4096, followed,
// if n == 15, by one extra byte e: the match length is 3 + n, or 18 + e if n == 15
// (3..=273). A match copies `length` bytes starting `distance` bytes back in the
// output (overlapping copies repeat, as in run-length encoding).
// ---------------------------------------------------------------------------------

const MAX_DISTANCE: usize = 4096;
const MIN_MATCH: usize = 3;
const MAX_MATCH: usize = 18 + 255;
const HASH_BITS: u32 = 13;

#[inline]
fn hash3(b: &[u8]) -> usize {
    let v = (b[0] as u32) | (b[1] as u32) << 8 | (b[2] as u32) << 16;
    (v.wrapping_mul(2_654_435_761) >> (32 - HASH_BITS)) as usize
}

/// Compresses `input`; `None` if the result would not be smaller than the input.
pub fn compress(input: &[u8]) -> Option<Vec<u8>> {
    if input.len() < MIN_COMPRESS_SIZE {
        return None;
    }
    let limit = input.len() - 1;
    let mut out = Vec::with_capacity(input.len() / 2);
    // table[h] = 1 + last position with hash h (0 = none).
    let mut table = vec![0usize; 1 << HASH_BITS];
    let mut i = 0;
    let mut ctrl_at = 0;
    let mut nitems = 8;
    while i < input.len() {
        if nitems == 8 {
            ctrl_at = out.len();
            out.push(0);
            nitems = 0;
        }
        let mut best = 0;
        let mut dist = 0;
        if i + MIN_MATCH <= input.len() {
            let h = hash3(&input[i..]);
            let cand = table[h];
            table[h] = i + 1;
            if cand != 0 && i - (cand - 1) <= MAX_DISTANCE {
                let c = cand - 1;
                let max = MAX_MATCH.min(input.len() - i);
                let mut n = 0;
                while n < max && input[c + n] == input[i + n] {
                    n += 1;
                }
                if n >= MIN_MATCH {
                    best = n;
                    dist = i - c;
                }
            }
        }
        if best > 0 {
            out[ctrl_at] |= 1 << nitems;
            let n = (best - MIN_MATCH).min(15);
            out.extend_from_slice(&((((dist - 1) << 4) | n) as u16).to_le_bytes());
            if n == 15 {
                out.push((best - 18) as u8);
            }
            // Index the positions inside the match so later data can refer to them.
            for p in i + 1..(i + best).min(input.len().saturating_sub(MIN_MATCH - 1)) {
                table[hash3(&input[p..])] = p + 1;
            }
            i += best;
        } else {
            out.push(input[i]);
            i += 1;
        }
        nitems += 1;
        if out.len() >= limit {
            return None;
        }
    }
    Some(out)
}

/// Decompresses an fglz stream that must expand to exactly `raw_size` bytes.
/// Anything else (truncation, a distance before the start, too much or too little
/// output) is `Error::corrupt`.
pub fn decompress(input: &[u8], raw_size: usize) -> Result<Vec<u8>> {
    let bad = |why: &str| Error::corrupt(format!("compressed data is corrupt: {why}"));
    let mut out: Vec<u8> = Vec::with_capacity(raw_size);
    let mut i = 0;
    while i < input.len() {
        let ctrl = input[i];
        i += 1;
        for bit in 0..8 {
            if i >= input.len() {
                break;
            }
            if ctrl & (1 << bit) == 0 {
                out.push(input[i]);
                i += 1;
            } else {
                let v = u16::from_le_bytes([input[i], *input.get(i + 1).ok_or_else(|| bad("truncated match"))?]);
                i += 2;
                let dist = (v >> 4) as usize + 1;
                let mut len = (v & 15) as usize + MIN_MATCH;
                if v & 15 == 15 {
                    len = 18 + *input.get(i).ok_or_else(|| bad("truncated match length"))? as usize;
                    i += 1;
                }
                if dist > out.len() {
                    return Err(bad("match distance before the start"));
                }
                if out.len() + len > raw_size {
                    return Err(bad("output longer than the recorded size"));
                }
                let start = out.len() - dist;
                for k in 0..len {
                    let b = out[start + k];
                    out.push(b);
                }
            }
            if out.len() > raw_size {
                return Err(bad("output longer than the recorded size"));
            }
        }
    }
    if out.len() != raw_size {
        return Err(bad("output shorter than the recorded size"));
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------
// Planning: what to compress, what to move out of line.
// ---------------------------------------------------------------------------------

/// What happens to one attribute value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToastAction {
    /// Stored as given.
    Keep,
    /// Compressed inline: stored as `Datum::Compressed { raw_size, data }`.
    Compress { raw_size: u32, data: Vec<u8> },
    /// Moved out of line: `data` (compressed if `compressed`) is chunked into the
    /// toast relation and the tuple holds a [`ToastPointer`].
    External { raw_size: u32, data: Vec<u8>, compressed: bool },
}

/// The result of [`toast_plan`]: one action per attribute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToastPlan {
    pub actions: Vec<ToastAction>,
}

impl ToastPlan {
    /// Whether anything changes.
    pub fn is_noop(&self) -> bool {
        self.actions.iter().all(|a| *a == ToastAction::Keep)
    }

    /// Attributes moving out of line, with the bytes to chunk.
    pub fn externals(&self) -> impl Iterator<Item = (usize, &[u8])> {
        self.actions.iter().enumerate().filter_map(|(i, a)| match a {
            ToastAction::External { data, .. } => Some((i, &data[..])),
            _ => None,
        })
    }

    /// The values to pass to `form_tuple`: `value_oids` holds the chunk_id chosen for
    /// each external value, in attribute order (as [`Self::externals`] yields them).
    pub fn finish<'a>(
        &'a self,
        values: &[Option<Datum<'a>>],
        toast_relid: Oid,
        value_oids: &[Oid],
    ) -> Result<Vec<Option<Datum<'a>>>> {
        if values.len() != self.actions.len() || value_oids.len() != self.externals().count() {
            return Err(Error::internal("toast plan applied to other values"));
        }
        let mut oids = value_oids.iter();
        Ok(values
            .iter()
            .zip(&self.actions)
            .map(|(v, a)| match a {
                ToastAction::Keep => *v,
                ToastAction::Compress { raw_size, data } => Some(Datum::Compressed { raw_size: *raw_size, data }),
                ToastAction::External { raw_size, data, compressed } => Some(Datum::External(ToastPointer {
                    raw_size: *raw_size,
                    ext_size: data.len() as u32,
                    compressed: *compressed,
                    value_oid: *oids.next().unwrap(),
                    toast_relid,
                })),
            })
            .collect())
    }
}

/// Decides how to shrink a row whose tuple would exceed [`TOAST_TUPLE_THRESHOLD`]
/// (see the module doc for the order). Values already compressed are candidates for
/// moving out; values already external stay. If the row is small enough, every
/// action is `Keep`. If even after everything it does not fit on a page, the caller
/// gets a plan anyway and `form_tuple` + `heap_page_add_tuple` will fail: PostgreSQL
/// reports 54000 "row is too big" then.
pub fn toast_plan(desc: &[AttrDesc], values: &[Option<Datum>]) -> Result<ToastPlan> {
    if desc.len() != values.len() {
        return Err(Error::internal("toast_plan: descriptor and values differ in length"));
    }
    let mut actions = vec![ToastAction::Keep; desc.len()];
    let size_of = |actions: &[ToastAction]| -> Result<usize> {
        let vals: Vec<Option<Datum>> = values
            .iter()
            .zip(actions)
            .map(|(v, a)| match a {
                ToastAction::Keep => *v,
                ToastAction::Compress { raw_size, data } => Some(Datum::Compressed { raw_size: *raw_size, data }),
                ToastAction::External { .. } => Some(Datum::External(ToastPointer {
                    raw_size: 0,
                    ext_size: 0,
                    compressed: false,
                    value_oid: 0,
                    toast_relid: 0,
                })),
            })
            .collect();
        heap_compute_tuple_size(desc, &vals)
    };
    if size_of(&actions)? <= TOAST_TUPLE_THRESHOLD {
        return Ok(ToastPlan { actions });
    }
    // Bytes attribute `i` takes now (0 for nulls and fixed-width).
    let cur_len = |i: usize, actions: &[ToastAction]| -> usize {
        match (&actions[i], values[i]) {
            (ToastAction::Compress { data, .. }, _) => data.len() + 8,
            (ToastAction::External { .. }, _) => TOAST_POINTER_SIZE,
            (ToastAction::Keep, Some(Datum::Varlena(p))) => p.len() + 4,
            (ToastAction::Keep, Some(Datum::Compressed { data, .. })) => data.len() + 8,
            _ => 0,
        }
    };
    let mut incompressible = vec![false; desc.len()];
    // Steps 1 and 3: compress the largest candidates with the given storage.
    let compress_step = |storage: Storage, actions: &mut Vec<ToastAction>, tried: &mut Vec<bool>, limit: usize| -> Result<()> {
        while size_of(actions)? > limit {
            let pick = (0..desc.len())
                .filter(|&i| desc[i].is_varlena() && desc[i].storage == storage && !tried[i])
                .filter(|&i| matches!((&actions[i], values[i]), (ToastAction::Keep, Some(Datum::Varlena(_)))))
                .max_by_key(|&i| cur_len(i, actions));
            let Some(i) = pick else { break };
            tried[i] = true;
            let Some(Datum::Varlena(p)) = values[i] else { unreachable!() };
            if let Some(c) = compress(p) {
                if c.len() + 8 < p.len() + 4 {
                    actions[i] = ToastAction::Compress { raw_size: p.len() as u32, data: c };
                }
            }
        }
        Ok(())
    };
    // Steps 2 and 4: move the largest candidates out of line.
    let external_step = |storages: &[Storage], actions: &mut Vec<ToastAction>, limit: usize| -> Result<()> {
        while size_of(actions)? > limit {
            let pick = (0..desc.len())
                .filter(|&i| desc[i].is_varlena() && storages.contains(&desc[i].storage))
                .filter(|&i| cur_len(i, actions) > TOAST_POINTER_SIZE)
                .max_by_key(|&i| cur_len(i, actions));
            let Some(i) = pick else { break };
            actions[i] = match (&actions[i], values[i]) {
                (ToastAction::Compress { raw_size, data }, _) => {
                    ToastAction::External { raw_size: *raw_size, data: data.clone(), compressed: true }
                }
                (ToastAction::Keep, Some(Datum::Compressed { raw_size, data })) => {
                    ToastAction::External { raw_size, data: data.to_vec(), compressed: true }
                }
                (ToastAction::Keep, Some(Datum::Varlena(p))) => {
                    ToastAction::External { raw_size: p.len() as u32, data: p.to_vec(), compressed: false }
                }
                _ => break,
            };
        }
        Ok(())
    };
    compress_step(Storage::Extended, &mut actions, &mut incompressible, TOAST_TUPLE_TARGET)?;
    external_step(&[Storage::Extended, Storage::External], &mut actions, TOAST_TUPLE_TARGET)?;
    compress_step(Storage::Main, &mut actions, &mut incompressible, TOAST_TUPLE_TARGET)?;
    external_step(&[Storage::Main], &mut actions, MAX_HEAP_TUPLE_SIZE)?;
    Ok(ToastPlan { actions })
}

// ---------------------------------------------------------------------------------
// Chunks.
// ---------------------------------------------------------------------------------

/// The toast relation's row layout: (chunk_id oid, chunk_seq int4, chunk_data bytea).
pub const TOAST_DESC: [AttrDesc; 3] =
    [AttrDesc::fixed(4), AttrDesc::fixed(4), AttrDesc::varlena().with_storage(Storage::Plain)];

/// Cuts `data` into chunk rows (formed tuples, ready for `heap_page_add_tuple` into the
/// toast relation and for its (chunk_id, chunk_seq) index), in chunk_seq order.
pub fn make_chunks(value_oid: Oid, data: &[u8]) -> Result<Vec<Vec<u8>>> {
    data.chunks(TOAST_MAX_CHUNK_SIZE)
        .enumerate()
        .map(|(seq, chunk)| {
            form_tuple(
                &TOAST_DESC,
                &[Some(Datum::ByVal(value_oid as u64)), Some(Datum::ByVal(seq as u64)), Some(Datum::Varlena(chunk))],
            )
        })
        .collect()
}

/// Number of chunks a value of `ext_size` stored bytes has.
pub fn chunk_count(ext_size: usize) -> usize {
    ext_size.div_ceil(TOAST_MAX_CHUNK_SIZE)
}

/// Puts an external value back together from its chunk rows (in chunk_seq order, as
/// an index scan on (chunk_id, chunk_seq) returns them) and decompresses it if it was
/// compressed. Missing, extra, out-of-order, foreign or wrongly sized chunks are
/// `Error::corrupt`.
pub fn reassemble<T: AsRef<[u8]>>(ptr: &ToastPointer, chunks: &[T]) -> Result<Vec<u8>> {
    let ext = ptr.ext_size as usize;
    let expected = chunk_count(ext);
    let bad = |what: String| Error::corrupt(format!("toast value {} in {}: {what}", ptr.value_oid, ptr.toast_relid));
    if chunks.len() != expected {
        return Err(bad(format!("{} chunks found, {expected} expected", chunks.len())));
    }
    let mut out = Vec::with_capacity(ext);
    for (seq, c) in chunks.iter().enumerate() {
        let vals = deform_tuple(&TOAST_DESC, c.as_ref())?;
        let (Some(Datum::ByVal(id)), Some(Datum::ByVal(s)), Some(Datum::Varlena(data))) = (vals[0], vals[1], vals[2])
        else {
            return Err(bad(format!("chunk {seq} malformed")));
        };
        if id != ptr.value_oid as u64 {
            return Err(bad(format!("chunk {seq} belongs to value {id}")));
        }
        if s != seq as u64 {
            return Err(bad(format!("unexpected chunk number {s} (expected {seq})")));
        }
        let want = if seq + 1 < expected { TOAST_MAX_CHUNK_SIZE } else { ext - seq * TOAST_MAX_CHUNK_SIZE };
        if data.len() != want {
            return Err(bad(format!("chunk {seq} has size {} (expected {want})", data.len())));
        }
        out.extend_from_slice(data);
    }
    if ptr.compressed {
        decompress(&out, ptr.raw_size as usize)
    } else {
        Ok(out)
    }
}

/// The plain bytes of a varlena datum: as is, decompressed, or fetched out of line
/// (`fetch_chunks` returns the value's chunk rows in chunk_seq order).
pub fn detoast<'a, F, T>(d: &Datum<'a>, fetch_chunks: F) -> Result<Cow<'a, [u8]>>
where
    F: FnOnce(&ToastPointer) -> Result<Vec<T>>,
    T: AsRef<[u8]>,
{
    match *d {
        Datum::Varlena(p) => Ok(Cow::Borrowed(p)),
        Datum::Compressed { raw_size, data } => Ok(Cow::Owned(decompress(data, raw_size as usize)?)),
        Datum::External(ptr) => Ok(Cow::Owned(reassemble(&ptr, &fetch_chunks(&ptr)?)?)),
        _ => Err(Error::internal("detoast of a fixed-width datum")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{rngs::SmallRng, Rng, SeedableRng};

    fn letters(n: usize, seed: u64) -> Vec<u8> {
        let mut rng = SmallRng::seed_from_u64(seed);
        (0..n).map(|_| b'a' + rng.gen_range(0..26)).collect()
    }

    #[test]
    fn compression_round_trips() {
        let mut rng = SmallRng::seed_from_u64(1);
        let mut inputs: Vec<Vec<u8>> = vec![
            vec![0u8; 10_000],
            b"abcabcabcabcabcabcabcabcabcabcabcabcabcabc".repeat(50),
            (0..5000u32).flat_map(|i| (i % 251).to_le_bytes()).collect(),
            "the quick brown fox jumps over the lazy dog; ".repeat(300).into_bytes(),
        ];
        inputs.push(vec![7u8; 32]);
        for n in [100, 4097, 70_000] {
            inputs.push((0..n).map(|_| rng.gen_range(0..4u8)).collect());
        }
        for inp in &inputs {
            let c = compress(inp).expect("compressible input");
            assert!(c.len() < inp.len());
            assert_eq!(&decompress(&c, inp.len()).unwrap(), inp);
            // Wrong recorded sizes are caught.
            assert!(decompress(&c, inp.len() + 1).is_err());
            assert!(decompress(&c, inp.len() - 1).is_err());
        }
        assert!(compress(&vec![0u8; 10_000]).unwrap().len() < 200);
        // Random bytes do not compress; short inputs are not tried.
        let noise: Vec<u8> = (0..5000).map(|_| rng.gen()).collect();
        assert_eq!(compress(&noise), None);
        assert_eq!(compress(b"short"), None);
    }

    #[test]
    fn decompressing_garbage_never_panics() {
        let mut rng = SmallRng::seed_from_u64(2);
        let good = compress(&"hello world ".repeat(100).into_bytes()).unwrap();
        for _ in 0..5000 {
            let mut g = good.clone();
            for _ in 0..rng.gen_range(1..5) {
                let at = rng.gen_range(0..g.len());
                g[at] = rng.gen();
            }
            g.truncate(rng.gen_range(0..=g.len()));
            let _ = decompress(&g, 1200);
            let n = rng.gen_range(0..64);
            let junk: Vec<u8> = (0..n).map(|_| rng.gen()).collect();
            let _ = decompress(&junk, rng.gen_range(0..300));
        }
    }

    /// Stores the external values of a plan in a "toast relation" (a map of chunk
    /// rows) and returns the finished values.
    fn store<'a>(
        plan: &'a ToastPlan,
        values: &[Option<Datum<'a>>],
        rel: &mut std::collections::HashMap<Oid, Vec<Vec<u8>>>,
    ) -> Vec<Option<Datum<'a>>> {
        let mut oids = Vec::new();
        for (i, data) in plan.externals() {
            let oid = 50_000 + i as Oid;
            rel.insert(oid, make_chunks(oid, data).unwrap());
            oids.push(oid);
        }
        plan.finish(values, 9999, &oids).unwrap()
    }

    #[test]
    fn ten_thousand_characters_go_out_of_line_and_come_back() {
        let desc = [AttrDesc::fixed(4), AttrDesc::varlena()];
        let text = letters(10_000, 3);
        let values = [Some(Datum::ByVal(1)), Some(Datum::Varlena(&text))];
        assert!(heap_compute_tuple_size(&desc, &values).unwrap() > TOAST_TUPLE_THRESHOLD);
        let plan = toast_plan(&desc, &values).unwrap();
        assert_eq!(plan.actions[0], ToastAction::Keep);
        assert!(matches!(plan.actions[1], ToastAction::External { .. }), "{:?}", plan.actions[1]);
        let mut rel = Default::default();
        let fin = store(&plan, &values, &mut rel);
        let tuple = form_tuple(&desc, &fin).unwrap();
        assert!(tuple.len() <= TOAST_TUPLE_TARGET);
        assert!(TupleHeader::read(&tuple).unwrap().has_external());
        let back = deform_tuple(&desc, &tuple).unwrap();
        let Some(d @ Datum::External(ptr)) = back[1] else { panic!("{:?}", back[1]) };
        assert_eq!(ptr.raw_size, 10_000);
        let got = detoast(&d, |p| Ok(rel[&p.value_oid].clone())).unwrap();
        assert_eq!(&got[..], &text[..]);
        // Each chunk row is small enough for four per page.
        for c in &rel[&ptr.value_oid] {
            assert!(c.len() <= TOAST_TUPLE_THRESHOLD);
        }
    }

    #[test]
    fn compressible_values_stay_inline_and_a_megabyte_goes_out() {
        let desc = [AttrDesc::varlena(), AttrDesc::varlena(), AttrDesc::varlena().with_storage(Storage::Main)];
        let rep = "ferrogres ".repeat(1000).into_bytes(); // compresses well
        let big = letters(1 << 20, 4); // 1 MB, barely compressible
        let small = b"tiny".to_vec();
        let values = [Some(Datum::Varlena(&rep)), Some(Datum::Varlena(&big)), Some(Datum::Varlena(&small))];
        let plan = toast_plan(&desc, &values).unwrap();
        assert!(matches!(plan.actions[0], ToastAction::Compress { .. }));
        assert!(matches!(plan.actions[1], ToastAction::External { .. }));
        assert_eq!(plan.actions[2], ToastAction::Keep);
        let mut rel = Default::default();
        let fin = store(&plan, &values, &mut rel);
        let tuple = form_tuple(&desc, &fin).unwrap();
        assert!(tuple.len() <= TOAST_TUPLE_TARGET, "{}", tuple.len());
        let back = deform_tuple(&desc, &tuple).unwrap();
        let fetch = |p: &ToastPointer| Ok(rel[&p.value_oid].clone());
        assert_eq!(&detoast(back[0].as_ref().unwrap(), fetch).unwrap()[..], &rep[..]);
        assert_eq!(&detoast(back[1].as_ref().unwrap(), fetch).unwrap()[..], &big[..]);
        assert_eq!(&detoast(back[2].as_ref().unwrap(), fetch).unwrap()[..], &small[..]);
        // Small rows are left alone.
        let plan = toast_plan(&desc, &[Some(Datum::Varlena(&small)), None, None]).unwrap();
        assert!(plan.is_noop());
        // Storage External never compresses; Plain never moves.
        let desc2 = [AttrDesc::varlena().with_storage(Storage::External)];
        let plan = toast_plan(&desc2, &[Some(Datum::Varlena(&rep))]).unwrap();
        assert!(matches!(plan.actions[0], ToastAction::External { compressed: false, .. }));
        let desc3 = [AttrDesc::varlena().with_storage(Storage::Plain)];
        assert!(toast_plan(&desc3, &[Some(Datum::Varlena(&rep))]).unwrap().is_noop());
    }

    #[test]
    fn damaged_chunks_are_corrupt() {
        let data = letters(5000, 5);
        let ptr = ToastPointer { raw_size: 5000, ext_size: 5000, compressed: false, value_oid: 7, toast_relid: 1 };
        let chunks = make_chunks(7, &data).unwrap();
        assert_eq!(chunks.len(), 3);
        assert_eq!(reassemble(&ptr, &chunks).unwrap(), data);
        let is_corrupt = |r: Result<Vec<u8>>| matches!(r, Err(Error::Corrupt { .. }));
        // Missing chunk, extra chunk, swapped order, another value's chunk.
        assert!(is_corrupt(reassemble(&ptr, &chunks[..2])));
        let mut extra = chunks.clone();
        extra.push(chunks[2].clone());
        assert!(is_corrupt(reassemble(&ptr, &extra)));
        let swapped = vec![chunks[1].clone(), chunks[0].clone(), chunks[2].clone()];
        assert!(is_corrupt(reassemble(&ptr, &swapped)));
        let other = make_chunks(8, &data).unwrap();
        assert!(is_corrupt(reassemble(&ptr, &[chunks[0].clone(), other[1].clone(), chunks[2].clone()])));
        // Wrong size: the pointer claims one byte more.
        let ptr2 = ToastPointer { raw_size: 5001, ext_size: 5001, ..ptr };
        assert!(is_corrupt(reassemble(&ptr2, &chunks)));
        // A short last chunk.
        let short = make_chunks(7, &data[..4999]).unwrap();
        assert!(is_corrupt(reassemble(&ptr, &short)));
        // A compressed value with a damaged stream.
        let rep = "abc".repeat(3000).into_bytes();
        let c = compress(&rep).unwrap();
        let cptr = ToastPointer { raw_size: 9000, ext_size: c.len() as u32, compressed: true, value_oid: 7, toast_relid: 1 };
        assert_eq!(reassemble(&cptr, &make_chunks(7, &c).unwrap()).unwrap(), rep);
        // (The first item must be a literal: a match there reaches before the start.
        // A changed literal byte cannot be detected: there is no checksum.)
        let mut bad = c.clone();
        bad[0] |= 1;
        assert!(is_corrupt(reassemble(&cptr, &make_chunks(7, &bad).unwrap())));
    }

    #[test]
    fn pointer_encoding() {
        let p = ToastPointer { raw_size: 1_000_000, ext_size: 600_000, compressed: true, value_oid: 123, toast_relid: 456 };
        let b = p.encode();
        assert_eq!(b.len(), 18);
        assert_eq!(ToastPointer::decode(&b).unwrap(), p);
        let mut bad = b;
        bad[1] = 17;
        assert!(ToastPointer::decode(&bad).is_err());
        let u = ToastPointer { compressed: false, ext_size: 1_000_000, ..p };
        assert_eq!(ToastPointer::decode(&u.encode()).unwrap(), u);
        // Uncompressed with a different stored size is impossible.
        let w = ToastPointer { compressed: false, ..p };
        assert!(ToastPointer::decode(&w.encode()).is_err());
    }
}
