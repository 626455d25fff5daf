//! COPY's binary format (`FORMAT binary`), in and out.
//!
//! ```text
//!  header   "PGCOPY\n\xff\r\n\0"   11-byte signature
//!           int32 flags            bit 16: WITH OIDS (refused); bits 17-31:
//!                                  critical, must be 0; bits 0-15: ignored
//!           int32 n, n bytes       header extension, skipped
//!  tuple    int16 field count      = the number of copied columns
//!           per field: int32 length (-1 = NULL), then the bytes of the
//!           type's binary send/receive form
//!  trailer  int16 -1               then nothing more (COPY FROM checks)
//! ```
//! All integers are big-endian. COPY TO writes flags 0 and no extension.
//! Reading, an end of data where a tuple's field count starts also ends the
//! data (a missing trailer is accepted, as PostgreSQL does).
//!
//! Both directions stream: COPY TO sends one CopyData per row, COPY FROM keeps
//! only the bytes of the field being read (plus the rest of the last chunk).
//! Errors are PostgreSQL 15's: 22P04 for the file's structure, the receive
//! functions' own (22P03, 08P01, 22021, 22001, ...) for a field; their CONTEXT
//! is `COPY t, line N[, column c]` with N the tuple's number, and the header's
//! errors have none.

use super::{CopyStmt, Sink, Source};
use crate::catalog::Table;
use crate::exec::{self, Ctx};
use ferrogres_datum::errors::{Result, SqlError};
use ferrogres_datum::types::{self, Value};

/// The 11-byte signature that starts every binary COPY file.
pub const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";

/// The largest field COPY FROM reads (PostgreSQL's MaxAllocSize - 1).
const MAX_FIELD: usize = 0x3fff_fffe;

/// Flag bit 16 of the header: the file has OIDs (PostgreSQL before 12).
const FLAG_WITH_OIDS: u32 = 1 << 16;

fn bad_format(msg: &str) -> SqlError {
    SqlError::new(b"22P04", msg)
}

/// The bytes of COPY FROM as the reader asks for them: chunks from the source
/// are appended to `buf`, and consumed bytes are dropped before the next
/// append, so `buf` holds at most one chunk plus the field being read.
struct Input<'s, 'o> {
    source: &'s mut Source<'o>,
    buf: Vec<u8>,
    pos: usize,
    /// The source has ended (CopyDone or the end of the file); it is never
    /// asked again after that.
    eof: bool,
}

impl Input<'_, '_> {
    /// Reads until `n` bytes are buffered; false if the data ends before.
    fn fill(&mut self, n: usize) -> Result<bool> {
        while self.buf.len() - self.pos < n && !self.eof {
            if self.pos > 0 {
                self.buf.drain(..self.pos);
                self.pos = 0;
            }
            match self.source.next_chunk()? {
                Some(chunk) => self.buf.extend_from_slice(&chunk),
                None => self.eof = true,
            }
        }
        Ok(self.buf.len() - self.pos >= n)
    }

    /// The next `n` bytes, or `None` (nothing consumed) if the data ends before.
    fn take(&mut self, n: usize) -> Result<Option<&[u8]>> {
        if !self.fill(n)? {
            return Ok(None);
        }
        let start = self.pos;
        self.pos += n;
        Ok(Some(&self.buf[start..start + n]))
    }

    fn int16(&mut self) -> Result<Option<i16>> {
        Ok(self.take(2)?.map(|b| i16::from_be_bytes([b[0], b[1]])))
    }

    fn int32(&mut self) -> Result<Option<i32>> {
        Ok(self.take(4)?.map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]])))
    }
}

/// Reads and checks the header (signature, flags, extension).
fn read_header(input: &mut Input) -> Result<()> {
    match input.take(SIGNATURE.len())? {
        Some(sig) if sig == SIGNATURE => {}
        _ => return Err(bad_format("COPY file signature not recognized")),
    }
    let flags = input.int32()?.ok_or_else(|| bad_format("invalid COPY file header (missing flags)"))? as u32;
    if flags & FLAG_WITH_OIDS != 0 {
        return Err(bad_format("invalid COPY file header (WITH OIDS)"));
    }
    if (flags & !FLAG_WITH_OIDS) >> 16 != 0 {
        return Err(bad_format("unrecognized critical flags in COPY file header"));
    }
    let ext = input.int32()?.ok_or_else(|| bad_format("invalid COPY file header (missing length)"))?;
    // A negative length reads as a huge unsigned one: never satisfied.
    let mut left = ext as u32 as u64;
    while left > 0 {
        let step = left.min(64 * 1024) as usize;
        if input.take(step)?.is_none() {
            return Err(bad_format("invalid COPY file header (wrong length)"));
        }
        left -= step as u64;
    }
    Ok(())
}

/// A received field converted to the column: the type's receive function, then
/// the column's typmod (varchar(n)'s length, numeric(p,s)'s rounding and
/// overflow), as PostgreSQL's receive functions apply it.
fn receive(table: &Table, ci: usize, bytes: &[u8]) -> Result<Value> {
    let col = &table.columns[ci];
    let v = types::recv(col.ty, bytes)?;
    if col.typmod >= 0 && col.ty.typmod_matters() {
        return types::cast(v, col.ty, col.ty, col.typmod, false);
    }
    Ok(v)
}

/// COPY FROM in binary: the header, then tuple by tuple into the table.
pub(super) fn copy_from(c: &CopyStmt, table: &Table, source: &mut Source, ctx: &mut Ctx) -> Result<String> {
    let mut input = Input { source, buf: Vec::new(), pos: 0, eof: false };
    read_header(&mut input)?;
    let ncols = c.columns.len();
    let mut line: u64 = 0;
    let mut n: u64 = 0;
    let single = crate::bulk_insert::row_at_a_time(table, &c.columns, false);
    let mut batch = crate::bulk_insert::BulkInsert::new(table, single, c.options.freeze, true);
    loop {
        line += 1;
        let at_line = |line: u64| format!("COPY {}, line {line}", table.name);
        let count = match input.int16() {
            Ok(Some(count)) => count,
            // The end of the data where a tuple starts (a partial count too).
            Ok(None) => break,
            Err(e) => return Err(e.with_context(at_line(line))),
        };
        if count == -1 {
            // The trailer: the data must end here.
            if input.take(1).map_err(|e| e.with_context(at_line(line)))?.is_some() {
                return Err(bad_format("received copy data after EOF marker").with_context(at_line(line)));
            }
            break;
        }
        if count as i64 != ncols as i64 {
            return Err(bad_format(&format!("row field count is {count}, expected {ncols}")).with_context(at_line(line)));
        }
        let mut row: Vec<Value> = crate::constraints::default_values(table, &c.columns, ctx)?;
        for &ci in &c.columns {
            let at_col = || format!("COPY {}, line {line}, column {}", table.name, table.columns[ci].name);
            let len = input.int32().map_err(|e| e.with_context(at_col()))?.ok_or_else(|| bad_format("unexpected EOF in COPY data").with_context(at_col()))?;
            row[ci] = match len {
                -1 => Value::Null,
                len if len < 0 => return Err(bad_format("invalid field size").with_context(at_col())),
                // PostgreSQL's enlargeStringInfo refuses a field past
                // MaxAllocSize before reading it: no field of 1 GB or more
                // is buffered.
                len if len as usize > MAX_FIELD => {
                    return Err(SqlError::new(b"54000", "out of memory")
                        .with_detail(format!("Cannot enlarge string buffer containing 0 bytes by {len} more bytes."))
                        .with_context(at_col()))
                }
                len => {
                    let bytes = input.take(len as usize).map_err(|e| e.with_context(at_col()))?;
                    let bytes = bytes.ok_or_else(|| bad_format("unexpected EOF in COPY data").with_context(at_col()))?;
                    receive(table, ci, bytes).map_err(|e| e.with_context(at_col()))?
                }
            };
        }
        // A foreign-key failure has no line (PostgreSQL checks it after the rows).
        batch.add(row, line, ctx).map_err(|e| if e.context.is_some() || &e.code == b"23503" { e } else { e.with_context(at_line(line)) })?;
        n += 1;
        if n.is_multiple_of(1024) {
            ctx.env.check_interrupts()?;
        }
    }
    batch.finish(ctx)?;
    Ok(format!("COPY {n}"))
}

/// Appends one tuple in the binary format.
fn encode_row(out: &mut Vec<u8>, row: &[Value]) {
    out.extend_from_slice(&(row.len() as i16).to_be_bytes());
    for v in row {
        match types::send(v) {
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(b) => {
                out.extend_from_slice(&(b.len() as i32).to_be_bytes());
                out.extend_from_slice(&b);
            }
        }
    }
}

/// The header COPY TO writes: the signature, flags 0, no extension.
fn header() -> Vec<u8> {
    let mut h = SIGNATURE.to_vec();
    h.extend_from_slice(&0u32.to_be_bytes());
    h.extend_from_slice(&0u32.to_be_bytes());
    h
}

/// COPY TO in binary: the header with the first row, a row per write, the trailer.
pub(super) fn copy_to(ncols: usize, rows: &mut dyn exec::RowIter, mut sink: Sink, ctx: &mut Ctx) -> Result<String> {
    let mut buf = header();
    let mut n: u64 = 0;
    while let Some(row) = rows.next(ctx)? {
        if row.len() != ncols {
            return Err(SqlError::internal(format!("COPY row has {} columns, expected {ncols}", row.len())));
        }
        encode_row(&mut buf, &row);
        sink.write(&buf)?;
        buf.clear();
        n += 1;
        if n.is_multiple_of(1024) {
            ctx.env.check_interrupts()?;
        }
    }
    buf.extend_from_slice(&(-1i16).to_be_bytes());
    sink.write(&buf)?;
    sink.finish()?;
    Ok(format!("COPY {n}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_nulls_and_values() {
        let mut b = Vec::new();
        encode_row(&mut b, &[Value::Int4(7), Value::Null, Value::Text("ab".into())]);
        assert_eq!(b, [&[0, 3][..], &[0, 0, 0, 4, 0, 0, 0, 7], &[0xff; 4], &[0, 0, 0, 2, b'a', b'b']].concat());
        assert_eq!(header().len(), 19);
    }
}
