//! Rows between executor values and heap tuples: forming (with TOAST) on insert,
//! deforming (with detoasting) on scan. Shared by the catalog and the executor.

use ferrogres_datum::errors::{Result, SqlError};
use ferrogres_datum::types::{self, Type, Value};
use ferrogres_engine::engine::Backend;
use ferrogres_engine::heap::heapam;
use ferrogres_engine::heap::tuple::{deform_tuple, deform_tuple_each, AttrDesc, Datum, Tid};
use ferrogres_engine::storage::RelFileLocator;
use ferrogres_engine::txn::snapshot::Snapshot;

/// A relation's storage: where it lives and its column types.
#[derive(Clone, Debug)]
pub struct RelStorage {
    pub rel: RelFileLocator,
    pub toast: Option<RelFileLocator>,
    pub types: Vec<Type>,
    /// Columns added by ALTER TABLE ... ADD COLUMN with a constant default
    /// (pg_attribute.attmissingval): (column index, value). A stored tuple with
    /// fewer attributes than the column's number reads this value instead of
    /// NULL, so the ADD did not rewrite the table ([`crate::alter`]).
    pub missing: Vec<(usize, Value)>,
    /// The columns a query's scan of this relation reads (`None`: all of them),
    /// set on the plan's copy of a table by [`crate::optimizer::projection`].
    /// The other columns deform as `Value::Null` (not decoded, not detoasted);
    /// positions do not move, so no expression is renumbered.
    pub proj: Option<std::sync::Arc<ScanProj>>,
    /// `Some(table OID)`: the rows made from this relation's tuples carry
    /// PostgreSQL's system columns after its own ([`SYSTEM_COLUMNS`], in that
    /// order), set on a query's copy of a table that reads one of them
    /// ([`crate::catalog::with_system_columns`]).
    pub system: Option<u32>,
}

/// The system columns of a heap relation, PostgreSQL's attnums -1 to -6:
/// (name, type). `ctid` is the tuple's own place (not its header's forward
/// link), `xmin` and `xmax` its header's raw transaction ids, `cmin` and
/// `cmax` both its header's raw command id (a combo id when it has one),
/// `tableoid` the relation's OID.
pub const SYSTEM_COLUMNS: [(&str, Type); 6] =
    [("ctid", Type::Tid), ("xmin", Type::Xid), ("cmin", Type::Cid), ("xmax", Type::Xid), ("cmax", Type::Cid), ("tableoid", Type::Oid)];

/// Whether `name` is a system column's (CREATE TABLE refuses it: 42701).
pub fn is_system_column(name: &str) -> bool {
    SYSTEM_COLUMNS.iter().any(|(n, _)| *n == name)
}

/// PostgreSQL's refusal of a new column (CREATE TABLE, ADD COLUMN, RENAME
/// COLUMN) named as a system column.
pub fn check_not_system_column(name: &str) -> Result<()> {
    if is_system_column(name) {
        return Err(SqlError::new(b"42701", format!("column name \"{name}\" conflicts with a system column name")));
    }
    Ok(())
}

/// Appends the system column values of the tuple `t` at `tid` to `row` when
/// `st` carries them.
fn push_system(st: &RelStorage, tid: Tid, t: &[u8], row: &mut Vec<Value>) {
    use ferrogres_engine::heap::tuple::{tuple_cid, tuple_xmax, tuple_xmin};
    if let Some(oid) = st.system {
        let cid = tuple_cid(t);
        row.extend([
            Value::Tid(tid.block, tid.offset),
            Value::Oid(tuple_xmin(t)),
            Value::Oid(cid),
            Value::Oid(tuple_xmax(t)),
            Value::Oid(cid),
            Value::Oid(oid),
        ]);
    }
}

/// Which columns a scan reads and which it passes up (issue 19).
///
/// `out[i]` implies `read[i]`; a column in `read` but not in `out` is read only
/// by the scan's own filter. Both have one entry per column of the relation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanProj {
    /// The columns deformed: read above the scan or by its filter.
    pub read: Vec<bool>,
    /// The columns the scan's rows carry to the nodes above it (EXPLAIN's
    /// and the cost model's `width`, as PostgreSQL's reltarget).
    pub out: Vec<bool>,
}

impl ScanProj {
    /// One past the last column read (how far a tuple must be deformed).
    pub fn read_upto(&self) -> usize {
        self.read.iter().rposition(|&r| r).map_or(0, |i| i + 1)
    }
}

impl RelStorage {
    /// The column descriptors when the relation has a TOAST relation (what
    /// UPDATE and DELETE pass the engine so that old values' chunks go too).
    pub fn toast_descs(&self) -> Result<Option<Vec<AttrDesc>>> {
        self.toast.map(|_| self.descs()).transpose()
    }

    pub fn descs(&self) -> Result<Vec<AttrDesc>> {
        self.types
            .iter()
            .map(|t| t.attr_desc().ok_or_else(|| SqlError::internal(format!("column of type {} stored", t.typname()))))
            .collect()
    }
}

/// The datums of `row` in `st`'s column types; `fixed` holds the images of the
/// fixed-length by-reference values (`types::fixed_bytes`), which the datums borrow.
fn datums_of<'a>(st: &RelStorage, row: &'a [Value], fixed: &'a [Option<Vec<u8>>]) -> Result<Vec<Option<Datum<'a>>>> {
    datums_typed(&st.types, row, fixed)
}

fn datums_typed<'a>(types: &[Type], row: &'a [Value], fixed: &'a [Option<Vec<u8>>]) -> Result<Vec<Option<Datum<'a>>>> {
    types
        .iter()
        .zip(row)
        .zip(fixed)
        .map(|((t, v), f)| match f {
            // An array's image is a varlena (`ferrogres_datum::array`: the binary send format).
            Some(b) if matches!(t, Type::Array(_) | Type::Int2Vector | Type::OidVector | Type::PgSnapshot | Type::TxidSnapshot) => {
                Ok(Some(Datum::Varlena(b.as_slice())))
            }
            Some(b) => Ok(Some(Datum::Fixed(b.as_slice()))),
            None => types::to_datum(*t, v),
        })
        .collect()
}

/// Inserts one row as the backend's current command.
///
/// A row shorter than the relation's columns gets NULLs for the rest (catalog
/// rows written by code that predates a column added to the catalog).
pub fn insert_row(backend: &mut Backend, st: &RelStorage, row: &[Value]) -> Result<Tid> {
    let tuple = form_row(backend, st, row)?;
    let tid = heapam::heap_insert(backend, st.rel, &tuple)?;
    crate::catcache::catalog_row_inserted(backend, st.rel, row);
    Ok(tid)
}

/// The heap tuple of one new row of `st` (its oversized values compressed or
/// stored in the TOAST relation now, by the current transaction), for
/// [`insert_row`] and for batched inserts (`heapam::heap_multi_insert`).
pub fn form_row(backend: &mut Backend, st: &RelStorage, row: &[Value]) -> Result<Vec<u8>> {
    let padded;
    let row = if row.len() < st.types.len() {
        let mut r = row.to_vec();
        r.resize(st.types.len(), Value::Null);
        padded = r;
        &padded[..]
    } else {
        row
    };
    let descs = st.descs()?;
    let fixed: Vec<Option<Vec<u8>>> = row.iter().map(types::fixed_bytes).collect();
    let datums = datums_of(st, row, &fixed)?;
    Ok(heapam::heap_toast_form_tuple(backend, st.toast, &descs, &datums)?)
}

/// Every row of the relation visible to `snapshot`, with its TID, in physical order,
/// collected (catalog reads; the executor streams with [`RowScan`]).
pub fn scan_rows(backend: &Backend, st: &RelStorage, snapshot: &Snapshot) -> Result<Vec<(Tid, Vec<Value>)>> {
    let mut scan = RowScan::new(backend, st)?;
    let mut out = Vec::new();
    while let Some(r) = scan.next(backend, snapshot)? {
        out.push(r);
    }
    Ok(out)
}

/// A sequential scan of a relation as rows, one heap page at a time
/// (`heapam::HeapScan`, with its BulkRead ring for a large relation): the visible
/// tuples of a page are copied into one reused buffer while the page is pinned
/// and locked, and deformed (and detoasted) after the lock is released. It holds
/// one page's tuples, whatever the relation's size, and stops reading where its
/// caller stops asking (LIMIT).
pub struct RowScan {
    scan: heapam::HeapScan,
    st: RelStorage,
    descs: Vec<AttrDesc>,
    /// The current page's visible tuples, back to back, and where each one is.
    page: Vec<u8>,
    items: Vec<(Tid, std::ops::Range<usize>)>,
    /// The next item of `items` to return.
    at: usize,
    /// The tuple [`RowScan::step`] stopped at, in `page`.
    cur: std::ops::Range<usize>,
    /// Where the attributes of `cur` read so far begin ([`RowScan::fill`]).
    walk: ferrogres_engine::heap::tuple::AttrWalk,
    /// The relation's pending statistics (seq_tup_read counted row by row).
    stat: ferrogres_engine::pgstat::tabstat::TabHandle,
}

impl RowScan {
    pub fn new(backend: &Backend, st: &RelStorage) -> Result<RowScan> {
        crate::catcache::note_scan(backend, st.rel);
        // Statistics: a sequential scan (seq_scan; its rows are seq_tup_read).
        let stat = backend.txn.pgstat.handle(st.rel);
        backend.txn.pgstat.count_scan_h(&stat);
        Ok(RowScan {
            scan: heapam::HeapScan::new(backend, st.rel)?,
            st: st.clone(),
            descs: st.descs()?,
            page: Vec::new(),
            items: Vec::new(),
            at: 0,
            cur: 0..0,
            walk: Default::default(),
            stat,
        })
    }

    /// Whether the next call reads a new page (a place to check for interrupts).
    pub fn at_page_boundary(&self) -> bool {
        self.at >= self.items.len()
    }

    /// The next visible tuple: its TID and where it is in `page`, or `None`
    /// after the last page. Counts it as returned (seq_tup_read).
    fn next_tuple(&mut self, backend: &Backend, snapshot: &Snapshot) -> Result<Option<(Tid, std::ops::Range<usize>)>> {
        while self.at >= self.items.len() {
            self.page.clear();
            self.items.clear();
            self.at = 0;
            let (page, items) = (&mut self.page, &mut self.items);
            let more = self.scan.next_page(backend, snapshot, &mut |tid, t| {
                let start = page.len();
                page.extend_from_slice(t);
                items.push((tid, start..page.len()));
                Ok(())
            })?;
            if !more {
                return Ok(None);
            }
        }
        let item = self.items[self.at].clone();
        self.at += 1;
        backend.txn.pgstat.count_returned_h(&self.stat, 1);
        Ok(Some(item))
    }

    /// The next visible row and its TID, or `None` after the last page.
    pub fn next(&mut self, backend: &Backend, snapshot: &Snapshot) -> Result<Option<(Tid, Vec<Value>)>> {
        let Some((tid, range)) = self.next_tuple(backend, snapshot)? else { return Ok(None) };
        Ok(Some((tid, deform_row(backend, &self.st, &self.descs, tid, &self.page[range], snapshot)?)))
    }

    /// Steps to the next visible tuple without making any value of it (see
    /// [`RowScan::fill`]); false after the last page.
    pub fn step(&mut self, backend: &Backend, snapshot: &Snapshot) -> Result<bool> {
        match self.next_tuple(backend, snapshot)? {
            Some((_, range)) => {
                self.walk.reset(&self.page[range.clone()])?;
                self.cur = range;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Whether the rows made carry the system columns after the relation's.
    pub fn has_system_columns(&self) -> bool {
        self.st.system.is_some()
    }

    /// The relation's column count (the width of the rows made).
    pub fn width(&self) -> usize {
        self.st.types.len()
    }

    /// The columns the scan reads: all, or those of its projection.
    pub fn reads(&self, i: usize) -> bool {
        self.st.proj.as_ref().is_none_or(|p| p.read.get(i).copied().unwrap_or(true))
    }

    /// Makes the values of columns `cols` of the tuple [`RowScan::step`]
    /// stopped at into their places in `row` (one place per column of the
    /// relation). Each attribute of the tuple is walked over once however
    /// many calls read it: a call starts from where an earlier one found the
    /// nearest attribute ([`ferrogres_engine::heap::tuple::AttrWalk`]).
    pub fn fill(&mut self, backend: &Backend, snapshot: &Snapshot, cols: &[usize], row: &mut [Value]) -> Result<()> {
        if cols.is_empty() {
            return Ok(());
        }
        let t = &self.page[self.cur.clone()];
        let natts = if self.st.missing.is_empty() { usize::MAX } else { self.walk.natts() };
        for &c in cols {
            let d = self.walk.attr(&self.descs, t, c)?;
            row[c] = datum_value(backend, &self.st, d, natts, c, snapshot)?;
        }
        Ok(())
    }

    /// [`RowScan::next`] with only the columns `cols` (in that order) made into
    /// values: an index build needs its key columns, not the whole row.
    pub fn next_columns(&mut self, backend: &Backend, snapshot: &Snapshot, cols: &[usize]) -> Result<Option<(Tid, Vec<Value>)>> {
        let Some((tid, range)) = self.next_tuple(backend, snapshot)? else { return Ok(None) };
        Ok(Some((tid, deform_columns(backend, &self.st, &self.descs, &self.page[range], snapshot, cols)?)))
    }
}

/// A row of a relation with its TID.
pub type TidRow = (Tid, Vec<Value>);

/// The rows of a relation a page at a time, for loops that do more per row
/// than a scan callback may (which runs under the page lock): memory is one
/// page's rows, unlike [`scan_rows`]. The relation's length is taken when the
/// scan starts.
pub struct PageRows<'s> {
    st: &'s RelStorage,
    descs: Vec<AttrDesc>,
    next: u32,
    nblocks: Option<u32>,
}

impl<'s> PageRows<'s> {
    pub fn new(st: &'s RelStorage) -> Result<PageRows<'s>> {
        Ok(PageRows { st, descs: st.descs()?, next: 0, nblocks: None })
    }

    /// The visible rows of the next page (possibly none), or `None` at the end.
    pub fn next_page(&mut self, backend: &Backend, snapshot: &Snapshot) -> Result<Option<Vec<TidRow>>> {
        let nblocks = match self.nblocks {
            Some(n) => n,
            None => {
                // SERIALIZABLE: the relation's SIREAD lock before its length is read.
                heapam::predicate_lock_relation(backend, self.st.rel);
                *self.nblocks.insert(heapam::heap_nblocks(backend, self.st.rel)?)
            }
        };
        if self.next >= nblocks {
            return Ok(None);
        }
        let mut raw: Vec<(Tid, Vec<u8>)> = Vec::new();
        heapam::heap_scan_block(backend, self.st.rel, self.next, snapshot, &mut |tid, t| {
            raw.push((tid, t.to_vec()));
            Ok(())
        })?;
        self.next += 1;
        let mut out = Vec::with_capacity(raw.len());
        for (tid, t) in raw {
            out.push((tid, deform_row(backend, self.st, &self.descs, tid, &t, snapshot)?));
        }
        Ok(Some(out))
    }
}

/// Values of a stored tuple of `st` at `tid` (detoasting with `snapshot`),
/// then its system columns when `st` carries them.
///
/// With a projection (`st.proj`), the columns it does not read are NULL: the
/// tuple is deformed only up to the last column read, and an unread column's
/// value is neither decoded nor fetched from the TOAST relation.
pub fn deform_row(backend: &Backend, st: &RelStorage, descs: &[AttrDesc], tid: Tid, t: &[u8], snapshot: &Snapshot) -> Result<Vec<Value>> {
    let upto = st.proj.as_ref().map_or(descs.len(), |p| p.read_upto().min(descs.len()));
    let natts = if st.missing.is_empty() { usize::MAX } else { ferrogres_engine::heap::tuple::TupleHeader::read(t)?.natts() };
    let reads = |i: usize| st.proj.as_ref().is_none_or(|p| p.read.get(i).copied().unwrap_or(true));
    // Each value made as the tuple is walked, straight into the row.
    let mut row = Vec::with_capacity(st.types.len());
    let mut failed = None;
    deform_tuple_each(&descs[..upto], t, |d| {
        let i = row.len();
        row.push(match (reads(i) && failed.is_none()).then(|| datum_value(backend, st, d, natts, i, snapshot)) {
            Some(Ok(v)) => v,
            Some(Err(e)) => {
                failed = Some(e);
                Value::Null
            }
            None => Value::Null,
        });
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    for i in row.len()..st.types.len() {
        row.push(if reads(i) { datum_value(backend, st, None, natts, i, snapshot)? } else { Value::Null });
    }
    push_system(st, tid, t, &mut row);
    Ok(row)
}

/// The values of columns `cols` (in that order) of a stored tuple of `st`: the
/// tuple is deformed only up to the last of them.
pub fn deform_columns(backend: &Backend, st: &RelStorage, descs: &[AttrDesc], t: &[u8], snapshot: &Snapshot, cols: &[usize]) -> Result<Vec<Value>> {
    let upto = cols.iter().max().map_or(0, |m| m + 1).min(descs.len());
    let datums = deform_tuple(&descs[..upto], t)?;
    let natts = if st.missing.is_empty() { usize::MAX } else { ferrogres_engine::heap::tuple::TupleHeader::read(t)?.natts() };
    cols.iter().map(|&i| column_value(backend, st, &datums, natts, i, snapshot)).collect()
}

/// Column `i`'s value from the tuple's deformed `datums` (`natts` attributes stored).
fn column_value(backend: &Backend, st: &RelStorage, datums: &[Option<Datum>], natts: usize, i: usize, snapshot: &Snapshot) -> Result<Value> {
    datum_value(backend, st, datums.get(i).copied().flatten(), natts, i, snapshot)
}

/// Column `i`'s value from its datum `d` (`natts` attributes stored).
fn datum_value(backend: &Backend, st: &RelStorage, d: Option<Datum>, natts: usize, i: usize, snapshot: &Snapshot) -> Result<Value> {
    let ty = st.types[i];
    // A column added after the row was written reads as its missing value, else NULL.
    if i >= natts {
        if let Some((_, v)) = st.missing.iter().find(|m| m.0 == i) {
            return Ok(v.clone());
        }
    }
    Ok(match d {
        None => Value::Null,
        Some(Datum::ByVal(raw)) => types::from_byval(ty, raw)?,
        Some(Datum::Varlena(b)) => types::from_varlena_typed(ty, b)?,
        Some(d @ (Datum::Compressed { .. } | Datum::External(_))) => {
            types::from_varlena_typed(ty, &heapam::heap_detoast(backend, st.rel, &d, snapshot)?)?
        }
        Some(Datum::Fixed(b)) => types::from_fixed(ty, b)?,
    })
}

/// Forms the tuple of a row as it will be stored: varlena values that make it too
/// big are compressed, and moved out of line into the TOAST relation (their chunks
/// are inserted now, by the current transaction). For UPDATE, whose engine call
/// takes a formed tuple.
pub fn form_row_toasted(backend: &mut Backend, st: &RelStorage, row: &[Value]) -> Result<Vec<u8>> {
    use ferrogres_engine::heap::{toast, tuple::form_tuple};
    let descs = st.descs()?;
    let fixed: Vec<Option<Vec<u8>>> = row.iter().map(types::fixed_bytes).collect();
    let datums = datums_of(st, row, &fixed)?;
    let plan = toast::toast_plan(&descs, &datums)?;
    if plan.is_noop() {
        return Ok(form_tuple(&descs, &datums)?);
    }
    let Some(toast_rel) = st.toast else {
        return Ok(form_tuple(&descs, &datums)?);
    };
    let mut oids = Vec::new();
    for (_, data) in plan.externals() {
        oids.push(ferrogres_engine::heap::toastam::toast_save_value(backend, toast_rel, data)?);
    }
    let finished = plan.finish(&datums, toast_rel.rel_number, &oids)?;
    Ok(form_tuple(&descs, &finished)?)
}

/// The heap tuple of `row` read as columns of `types` (no TOAST: a temporary
/// file's row, `crate::sort`).
pub fn form_values(types: &[Type], row: &[Value]) -> Result<Vec<u8>> {
    let descs = types
        .iter()
        .map(|t| t.attr_desc().ok_or_else(|| SqlError::internal(format!("value of type {} spilled", t.typname()))))
        .collect::<Result<Vec<_>>>()?;
    let fixed: Vec<Option<Vec<u8>>> = row.iter().map(types::fixed_bytes).collect();
    let datums = datums_typed(types, row, &fixed)?;
    Ok(ferrogres_engine::heap::tuple::form_tuple(&descs, &datums)?)
}

/// The values of a tuple made by [`form_values`] with the same `types`.
pub fn deform_values(types: &[Type], t: &[u8]) -> Result<Vec<Value>> {
    let descs = types
        .iter()
        .map(|t| t.attr_desc().ok_or_else(|| SqlError::internal(format!("value of type {} spilled", t.typname()))))
        .collect::<Result<Vec<_>>>()?;
    let datums = deform_tuple(&descs, t)?;
    let mut row = Vec::with_capacity(types.len());
    for (ty, d) in types.iter().zip(datums) {
        row.push(match d {
            None => Value::Null,
            Some(Datum::ByVal(raw)) => types::from_byval(*ty, raw)?,
            Some(Datum::Varlena(b)) => types::from_varlena_typed(*ty, b)?,
            Some(Datum::Fixed(b)) => types::from_fixed(*ty, b)?,
            Some(Datum::Compressed { .. } | Datum::External(_)) => {
                return Err(SqlError::internal("a temporary file's row holds a toasted value"))
            }
        });
    }
    Ok(row)
}
