//! GROUP BY / HAVING, aggregates per group (with FILTER, DISTINCT and avg), and
//! SELECT DISTINCT [ON].
//!
//! Grouping is sort-free: groups are found by the GROUP BY values, equal as
//! [`Key`] orders them ([`crate::exec::compare`] with NULLs equal to each other,
//! as GROUP BY treats them), through a hash table of group numbers by
//! [`crate::hashjoin::key_hash`] (which follows that equality) when every key's
//! type hashes, else through an ordered map of the keys ([`GroupIndex`]); a
//! row's key values are read in place (borrowed from the row), so finding an
//! existing group copies nothing. Groups are kept in the order they were first
//! seen. A group keeps its first input row, cut down to the columns the target
//! list, the hidden sort expressions and HAVING read (NULL in the others when
//! it comes out): those are evaluated over that row and the group's
//! aggregate results. That is sound because analysis rejects (42803) any column
//! reference outside an aggregate that is not inside a GROUP BY expression, so
//! every column such an expression reads has one value in the group.
//!
//! Groups are kept in memory up to `work_mem` times `hash_mem_multiplier`
//! (PostgreSQL 15's bound of a hash aggregation); the rows of groups beyond it are
//! spilled to an external sort and aggregated from it ([`run`]).
//!
//! DISTINCT sorts the projected rows by the ORDER BY keys and then by the
//! remaining DISTINCT columns (ties in ORDER BY may come out in any order) and
//! keeps the first row of each run of equal DISTINCT values: for DISTINCT ON,
//! analysis has checked that ORDER BY starts with the DISTINCT ON expressions
//! (42P10), so the row kept is the first in ORDER BY order, as in PostgreSQL.

use ferrogres_datum::errors::Result;
use crate::exec::{compare, eval_pure, operand, Ctx, RowIter};
use rustc_hash::FxHashMap;
use std::borrow::Cow;
use crate::plan::{AggKind, Aggregate, Expr, SortKey};
use ferrogres_datum::types::{out_of_range, Type, Value};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

/// A grouped query's GROUP BY and HAVING.
#[derive(Clone, Debug)]
pub struct Grouping {
    /// GROUP BY expressions over the input row; empty: one group, which exists
    /// even when no row does (an aggregate query).
    pub keys: Vec<Expr>,
    /// HAVING over the group's first row and its aggregate results.
    pub having: Option<Expr>,
    /// GROUPING SETS / ROLLUP / CUBE or GROUPING(...) calls: the sets, and the
    /// output expressions read the grouped row of [`crate::grouping_sets`].
    pub sets: Option<Box<crate::grouping_sets::GroupingSets>>,
}

/// Values compared as GROUP BY and DISTINCT compare them: NULLs equal, after
/// every other value.
#[derive(Clone, Debug)]
pub struct Key(pub Vec<Value>);

fn cmp_nulls_last(a: &Value, b: &Value) -> Ordering {
    match (a.is_null(), b.is_null()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => compare(a, b),
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Key) -> Ordering {
        for (a, b) in self.0.iter().zip(&other.0) {
            let o = cmp_nulls_last(a, b);
            if o != Ordering::Equal {
                return o;
            }
        }
        self.0.len().cmp(&other.0.len())
    }
}
impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Key) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Key {}

/// One aggregate's running state in one group (or one window frame, `crate::window`).
pub(crate) struct AggState {
    /// count: Int8; sum/min/max/avg: the running value (NULL before the first row).
    acc: Value,
    /// Rows aggregated (avg's divisor).
    n: i64,
    /// DISTINCT: the values seen.
    seen: Option<BTreeSet<Key>>,
    /// `agg(... ORDER BY ...)`: the rows given so far, fed in at the end.
    buffer: Option<crate::agg_order::Buffer>,
    /// sum/avg of numeric: the running total, kept here rather than in `acc`
    /// so that a row's value is added without allocating (`None` before the
    /// first non-NULL value; `acc` stays NULL until [`AggState::finish`]).
    num: Option<ferrogres_datum::numeric::SumAccum>,
}

impl AggState {
    pub(crate) fn new(a: &Aggregate) -> AggState {
        let acc = if matches!(a.kind, AggKind::CountStar | AggKind::Count) { Value::Int8(0) } else { Value::Null };
        let buffer = (!a.order.is_empty()).then(crate::agg_order::Buffer::default);
        AggState { acc, n: 0, seen: a.distinct.then(BTreeSet::new), buffer, num: None }
    }

    pub(crate) fn advance(&mut self, a: &Aggregate, row: &[Value], ctx: &mut Ctx) -> Result<()> {
        if let Some(f) = &a.filter {
            let params = ctx.params;
            if eval_pure(f, row, params, &[], ctx)? != Value::Bool(true) {
                return Ok(());
            }
        }
        let params = ctx.params;
        // The argument borrowed where it is a column or constant.
        let v = match &a.arg {
            Some(e) => operand(e, row, params, &[], ctx)?,
            None => Cow::Owned(Value::Bool(true)),
        };
        let v2 = match &a.arg2 {
            Some(e) => eval_pure(e, row, params, &[], ctx)?,
            None => Value::Null,
        };
        if let Some(buf) = &mut self.buffer {
            let keys = a.order.iter().map(|k| eval_pure(&k.expr, row, params, &[], ctx)).collect::<Result<_>>()?;
            buf.0.push((keys, v.into_owned(), v2));
            return Ok(());
        }
        self.accumulate(a, v, v2)
    }

    /// The transition for one row's argument values (after FILTER and ORDER BY).
    fn accumulate(&mut self, a: &Aggregate, v: Cow<'_, Value>, v2: Value) -> Result<()> {
        let keeps_nulls = matches!(a.kind, AggKind::ArrayAgg | AggKind::JsonAgg { .. } | AggKind::JsonObjectAgg { .. });
        if v.is_null() && !keeps_nulls {
            return Ok(());
        }
        if let Some(seen) = &mut self.seen {
            let key = if a.arg2.is_some() { vec![v.as_ref().clone(), v2.clone()] } else { vec![v.as_ref().clone()] };
            if !seen.insert(Key(key)) {
                return Ok(());
            }
        }
        self.n += 1;
        if matches!(a.kind, AggKind::Sum | AggKind::Avg) && a.ty == Type::Numeric {
            let total = self.num.get_or_insert_with(Default::default);
            return match &*v {
                Value::Numeric(x) => total.add(x),
                // sum(int8) and avg of integers total in numeric.
                other => total.add(&ferrogres_datum::numeric::of_value(other).ok_or_else(|| {
                    ferrogres_datum::errors::SqlError::internal(format!("numeric sum of {other:?}"))
                })?),
            };
        }
        let v = v.into_owned();
        self.acc = match (a.kind, std::mem::replace(&mut self.acc, Value::Null)) {
            (AggKind::JsonAgg { .. }, acc) => crate::agg_order::json_agg(acc, &v, a.delim.is_some())?,
            (AggKind::JsonObjectAgg { .. }, acc) => crate::agg_order::json_object_agg(acc, &v, &v2)?,
            (AggKind::Variance { .. }, acc) => ferrogres_datum::numeric::math::var_accum(acc, &v, self.n)?,
            (AggKind::Sum | AggKind::Avg, acc) if a.ty == Type::Interval => ferrogres_datum::datetime::fns::interval_agg_add(acc, &v)?,
            (AggKind::CountStar | AggKind::Count, Value::Int8(n)) => Value::Int8(n + 1),
            (AggKind::Sum | AggKind::Avg, Value::Null) => match v {
                Value::Float8(f) => Value::Float8(f),
                Value::Float4(f) if a.kind == AggKind::Avg => Value::Float8(f as f64),
                Value::Float4(f) => Value::Float4(f),
                v => Value::Int8(v.as_i64().unwrap_or(0)),
            },
            (AggKind::Sum | AggKind::Avg, Value::Float4(s)) => Value::Float4(s + if let Value::Float4(f) = v { f } else { 0.0 }),
            (AggKind::Sum | AggKind::Avg, Value::Float8(s)) => Value::Float8(
                s + match v {
                    Value::Float8(f) => f,
                    Value::Float4(f) => f as f64,
                    _ => 0.0,
                },
            ),
            (AggKind::Sum | AggKind::Avg, Value::Int8(s)) => {
                Value::Int8(s.checked_add(v.as_i64().unwrap_or(0)).ok_or_else(|| out_of_range(Type::Int8))?)
            }
            (AggKind::Min, cur) => if cur.is_null() || compare(&v, &cur) == Ordering::Less { v } else { cur },
            (AggKind::Max, cur) => if cur.is_null() || compare(&v, &cur) == Ordering::Greater { v } else { cur },
            (AggKind::ArrayAgg, Value::Array(mut arr)) => {
                if arr.items.len() >= ferrogres_datum::array::MAX_ARRAY_SIZE {
                    return Err(ferrogres_datum::array::too_many_elements());
                }
                arr.items.push(v);
                Value::Array(arr)
            }
            (AggKind::StringAgg, acc) => {
                let Value::Text(v) = v else { return Err(ferrogres_datum::errors::SqlError::internal("string_agg of a non-text value")) };
                match acc {
                    Value::Text(mut s) => {
                        let delim = a.delim.as_deref().unwrap_or("");
                        ferrogres_datum::errors::check_enlarge(s.len(), delim.len())?;
                        ferrogres_datum::errors::check_enlarge(s.len() + delim.len(), v.len())?;
                        crate::memory::reserve_growth(s.len(), s.capacity(), delim.len() + v.len())?;
                        s.push_str(delim);
                        s.push_str(&v);
                        Value::Text(s)
                    }
                    _ => Value::Text(v),
                }
            }
            (AggKind::BoolAnd, Value::Bool(b)) => Value::Bool(b && v == Value::Bool(true)),
            (AggKind::BoolOr, Value::Bool(b)) => Value::Bool(b || v == Value::Bool(true)),
            (AggKind::BoolAnd | AggKind::BoolOr, _) => v,
            (AggKind::ArrayAgg, _) => {
                let elem = match a.ty {
                    Type::Array(e) => *e,
                    t => t,
                };
                Value::Array(Box::new(ferrogres_datum::array::Array::new(elem, vec![v])))
            }
            (_, other) => other,
        };
        Ok(())
    }

    /// The result over the rows advanced so far, the state kept for more rows.
    pub(crate) fn peek(&self, a: &Aggregate) -> Result<Value> {
        AggState { acc: self.acc.clone(), n: self.n, seen: self.seen.clone(), buffer: self.buffer.clone(), num: self.num.clone() }.finish(a)
    }

    pub(crate) fn finish(mut self, a: &Aggregate) -> Result<Value> {
        if let Some(buf) = self.buffer.take() {
            if crate::agg_order::is_ordered_set(a.kind) {
                return crate::agg_order::ordered_set(a.kind, buf.sorted(&a.order));
            }
            for (v, v2) in buf.sorted(&a.order) {
                self.accumulate(a, Cow::Owned(v), v2)?;
            }
        }
        if let Some(total) = self.num.take() {
            self.acc = Value::Numeric(total.value());
        }
        Ok(match (a.kind, self.acc) {
            (AggKind::JsonAgg { jsonb }, acc) => crate::agg_order::json_final(acc, false, jsonb)?,
            (AggKind::JsonObjectAgg { jsonb }, acc) => crate::agg_order::json_final(acc, true, jsonb)?,
            (AggKind::Avg, Value::Float8(s)) => Value::Float8(s / self.n as f64),
            (AggKind::Avg, s @ Value::Numeric(_)) => ferrogres_datum::numeric::avg_final(s, self.n).unwrap_or(Value::Null),
            (AggKind::Avg, s @ Value::Interval(_)) => ferrogres_datum::datetime::fns::interval_avg_final(s, self.n).unwrap_or(Value::Null),
            (AggKind::Variance { sample, sqrt }, acc) => ferrogres_datum::numeric::math::var_final(acc, self.n, sample, sqrt).unwrap_or(Value::Null),
            (AggKind::StringAgg, Value::Text(s)) => {
                ferrogres_datum::errors::check_result_len(s.len())?;
                Value::Text(s)
            }
            (_, v) => v,
        })
    }
}

/// Runs the grouping: one output row (the projected `exprs`) per group that
/// passes HAVING.
///
/// Groups live in an ordered map while their memory (key, first row cut down
/// to the columns the output and HAVING read, states: [`group_mem`]) stays
/// within `work_mem`. Past it, no new group is made in
/// memory: a row of a group already there still advances it, and a row of any
/// other group is spilled, with its key in front, into an external sort on that
/// key ([`crate::sort::Sorter`]; PostgreSQL 13 spills such rows too, by hash
/// partitions; sorting them needs no hash function consistent with every
/// type's equality). The output is the groups in memory, in the order they
/// were first seen, then the spilled groups in key order, each aggregated over
/// its run of equal keys as the sorted rows stream by.
pub fn run(g: &Grouping, aggs: &[Aggregate], mut input: Box<dyn RowIter>, exprs: &[Expr], ctx: &mut Ctx) -> Result<Box<dyn RowIter>> {
    if let Some(gs) = &g.sets {
        let rows = crate::grouping_sets::run(g, gs, aggs, &mut input, exprs, ctx)?;
        return Ok(Box::new(crate::exec::rows_iter(rows)));
    }
    let mem = crate::sort::sort_mem(ctx)?;
    // The groups' bound: work_mem times hash_mem_multiplier, as PostgreSQL's
    // hash aggregation (the sort it spills into keeps work_mem).
    let work_mem = mem.hash_mem;
    let nkeys = g.keys.len();
    let mut index = if g.keys.iter().all(|k| hashable(k.ty())) {
        GroupIndex::Hash(FxHashMap::default(), Vec::new())
    } else {
        GroupIndex::Ordered(BTreeMap::new())
    };
    let mut groups: Vec<(Vec<Value>, Vec<AggState>)> = Vec::new();
    let mut used = 0usize;
    let mut spill: Option<crate::sort::Sorter> = None;
    if g.keys.is_empty() {
        groups.push((vec![], aggs.iter().map(AggState::new).collect()));
    }
    let mut layout = FirstRow::new(g, exprs);
    let mut n: u64 = 0;
    while let Some(row) = input.next(ctx)? {
        layout.width = row.len();
        n += 1;
        if n.is_multiple_of(1024) {
            ctx.env.check_interrupts()?;
        }
        let gi = if g.keys.is_empty() {
            0
        } else {
            let params = ctx.params;
            // The key values borrowed from the row where they are columns:
            // finding an existing group copies nothing.
            let mut key: Vec<Cow<'_, Value>> = Vec::with_capacity(nkeys);
            for k in &g.keys {
                key.push(operand(k, &row, params, &[], ctx)?);
            }
            match index.find(&key) {
                Some(i) => i,
                None if spill.is_none() && used <= work_mem => {
                    let key: Vec<Value> = key.into_iter().map(Cow::into_owned).collect();
                    let first = layout.cut(&row);
                    used += group_mem(&key, &first, aggs.len());
                    index.insert(key, groups.len());
                    groups.push((first, aggs.iter().map(AggState::new).collect()));
                    groups.len() - 1
                }
                None => {
                    let keys = (0..nkeys).map(|column| SortKey { column, desc: false, nulls_first: false }).collect();
                    let sorter = spill.get_or_insert_with(|| crate::sort::Sorter::new(keys, None, mem.clone()));
                    let mut spilled: Vec<Value> = key.into_iter().map(Cow::into_owned).collect();
                    spilled.extend(row);
                    sorter.put(spilled, &*ctx.env)?;
                    continue;
                }
            }
        };
        let states = &mut groups[gi].1;
        for (a, st) in aggs.iter().zip(states.iter_mut()) {
            st.advance(a, &row, ctx)?;
        }
    }
    drop(input);
    let keys = index.into_keys(groups.len());
    let spilled = match spill {
        Some(s) => Some(s.finish(&*ctx.env)?.0),
        None => None,
    };
    Ok(Box::new(GroupOutput {
        aggs: aggs.to_vec(),
        exprs: exprs.to_vec(),
        having: g.having.clone(),
        in_memory: groups.into_iter().zip(keys),
        layout,
        spilled,
        nkeys,
        pending: None,
        tick: crate::exec::Ticker::default(),
    }))
}

/// Whether GROUP BY values of type `t` may be found by hash: the types whose
/// equality under [`Key`]'s order [`crate::hashjoin::value_hash`] follows and
/// spreads (arrays and json hash to one value: an ordered map finds those).
fn hashable(t: Type) -> bool {
    use Type::*;
    matches!(
        t,
        Bool | Int2 | Int4 | Int8 | Oid | Xid | Float4 | Float8 | Numeric | Text | Varchar | Unknown | Bpchar | Name | Char | Date | Time
            | Timestamp | Timestamptz | Interval | TimeTz | Bytea | Uuid | PgLsn | Xid8
    )
}

/// How the groups in memory are found from a row's GROUP BY values.
enum GroupIndex {
    /// Key types that hash ([`hashable`]): the group numbers of each key hash
    /// ([`crate::hashjoin::key_hash`]), and each group's key by its number.
    Hash(FxHashMap<u32, Vec<usize>>, Vec<Vec<Value>>),
    /// Other key types: an ordered map of the keys.
    Ordered(BTreeMap<Key, usize>),
}

impl GroupIndex {
    /// The number of the group whose key equals `key` (NULLs equal), if any.
    fn find(&self, key: &[Cow<'_, Value>]) -> Option<usize> {
        match self {
            GroupIndex::Hash(map, keys) => {
                let candidates = map.get(&hash_of(key))?;
                candidates.iter().copied().find(|&gi| keys[gi].iter().zip(key).all(|(a, b)| cmp_nulls_last(a, b) == Ordering::Equal))
            }
            GroupIndex::Ordered(map) => map.get(&Key(key.iter().map(|v| v.as_ref().clone()).collect())).copied(),
        }
    }

    /// The keys by group number, `n` groups (a group without an entry, the
    /// one group of a query without GROUP BY, gets the empty key).
    fn into_keys(self, n: usize) -> Vec<Vec<Value>> {
        let mut keys = match self {
            GroupIndex::Hash(_, keys) => keys,
            GroupIndex::Ordered(map) => {
                let mut keys = vec![Vec::new(); n];
                for (k, gi) in map {
                    keys[gi] = k.0;
                }
                keys
            }
        };
        keys.resize(n, Vec::new());
        keys
    }

    /// Adds group `gi` with key `key`.
    fn insert(&mut self, key: Vec<Value>, gi: usize) {
        match self {
            GroupIndex::Hash(map, keys) => {
                debug_assert_eq!(keys.len(), gi);
                map.entry(crate::hashjoin::key_hash(&key)).or_default().push(gi);
                keys.push(key);
            }
            GroupIndex::Ordered(map) => {
                map.insert(Key(key), gi);
            }
        }
    }
}

/// [`crate::hashjoin::key_hash`] of borrowed values.
fn hash_of(key: &[Cow<'_, Value>]) -> u32 {
    key.iter().fold(0u32, |h, v| h.rotate_left(1) ^ crate::hashjoin::value_hash(v))
}

/// What a group keeps of its first row: the columns its output and HAVING
/// read (the aggregates read every row as it passes), but for those that are
/// a GROUP BY column, which come back from the group's key (equal values:
/// the key is the first row's).
struct FirstRow {
    /// The columns kept, ascending.
    kept: Vec<usize>,
    /// (column, its position in the key).
    from_key: Vec<(usize, usize)>,
    /// The input row's width.
    width: usize,
}

impl FirstRow {
    fn new(g: &Grouping, exprs: &[Expr]) -> FirstRow {
        let mut read: Vec<usize> = exprs.iter().chain(g.having.as_ref()).flat_map(crate::subquery::columns_read).collect();
        read.sort_unstable();
        read.dedup();
        let key_of = |c: usize| g.keys.iter().position(|k| matches!(k, Expr::Column(i, _) if *i == c));
        let (mut kept, mut from_key) = (Vec::new(), Vec::new());
        for c in read {
            match key_of(c) {
                Some(k) => from_key.push((c, k)),
                None => kept.push(c),
            }
        }
        FirstRow { kept, from_key, width: 0 }
    }

    fn cut(&self, row: &[Value]) -> Vec<Value> {
        self.kept.iter().map(|&i| row.get(i).cloned().unwrap_or(Value::Null)).collect()
    }

    /// The first row again at the input's width, NULL where nothing reads.
    fn widen(&self, kept: Vec<Value>, mut key: Vec<Value>) -> Vec<Value> {
        let last = self.kept.iter().chain(self.from_key.iter().map(|(c, _)| c)).max().map_or(0, |&c| c + 1);
        let mut row = vec![Value::Null; self.width.max(last)];
        for (v, &i) in kept.into_iter().zip(&self.kept) {
            row[i] = v;
        }
        for &(c, k) in &self.from_key {
            if let Some(v) = key.get_mut(k) {
                row[c] = std::mem::replace(v, Value::Null);
            }
        }
        row
    }
}

/// The memory a new group holds: its key, its first row, its aggregate states
/// and its map entry (aggregates that collect values, array_agg or DISTINCT,
/// grow past this: not counted).
fn group_mem(key: &[Value], row: &[Value], naggs: usize) -> usize {
    crate::sort::row_mem(key) + crate::sort::row_mem(row) + naggs * std::mem::size_of::<AggState>() + 64
}

/// The groups in memory as they come out: (first row, states), key.
type InMemory = std::iter::Zip<std::vec::IntoIter<(Vec<Value>, Vec<AggState>)>, std::vec::IntoIter<Vec<Value>>>;

/// The grouped rows as they are asked for (see [`run`]).
struct GroupOutput {
    aggs: Vec<Aggregate>,
    exprs: Vec<Expr>,
    having: Option<Expr>,
    /// The groups in memory: their first rows as `layout` cut them, their
    /// states, their keys.
    in_memory: InMemory,
    layout: FirstRow,
    /// The spilled rows, `[key..., row...]`, sorted on the key.
    spilled: Option<crate::sort::Sorted>,
    nkeys: usize,
    /// The first spilled row of the next group.
    pending: Option<Vec<Value>>,
    tick: crate::exec::Ticker,
}

impl GroupOutput {
    /// The output row of a finished group, or `None` if HAVING rejects it.
    fn emit(&self, row: &[Value], states: Vec<AggState>, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        let results: Vec<Value> = self.aggs.iter().zip(states).map(|(a, s)| s.finish(a)).collect::<Result<_>>()?;
        let params = ctx.params;
        if let Some(h) = &self.having {
            if eval_pure(h, row, params, &results, ctx)? != Value::Bool(true) {
                return Ok(None);
            }
        }
        Ok(Some(self.exprs.iter().map(|e| eval_pure(e, row, params, &results, ctx)).collect::<Result<_>>()?))
    }

    /// The next spilled group, aggregated over its run of equal keys.
    fn next_spilled(&mut self, ctx: &mut Ctx) -> Result<Option<(Vec<Value>, Vec<AggState>)>> {
        let Some(sorted) = &mut self.spilled else { return Ok(None) };
        let first = match self.pending.take() {
            Some(r) => r,
            None => match sorted.next_row(&*ctx.env)? {
                Some(r) => r,
                None => return Ok(None),
            },
        };
        let nk = self.nkeys;
        let key = Key(first[..nk].to_vec());
        let row = first[nk..].to_vec();
        let mut states: Vec<AggState> = self.aggs.iter().map(AggState::new).collect();
        for (a, st) in self.aggs.iter().zip(states.iter_mut()) {
            st.advance(a, &row, ctx)?;
        }
        while let Some(next) = sorted.next_row(&*ctx.env)? {
            if Key(next[..nk].to_vec()) != key {
                self.pending = Some(next);
                break;
            }
            for (a, st) in self.aggs.iter().zip(states.iter_mut()) {
                st.advance(a, &next[nk..], ctx)?;
            }
        }
        Ok(Some((row, states)))
    }
}

impl RowIter for GroupOutput {
    fn next(&mut self, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        loop {
            self.tick.tick(&*ctx.env)?;
            let (row, states) = match self.in_memory.next() {
                Some(((first, states), key)) => (self.layout.widen(first, key), states),
                None => match self.next_spilled(ctx)? {
                    Some(g) => g,
                    None => return Ok(None),
                },
            };
            if let Some(out) = self.emit(&row, states, ctx)? {
                return Ok(Some(out));
            }
        }
    }
}

/// SELECT DISTINCT [ON]: sorts the rows by `order`, then by the DISTINCT
/// columns `keys` ([`crate::sort`], within `work_mem`), and passes the first
/// row of each run of equal `keys` values.
pub fn distinct(mut input: Box<dyn RowIter>, order: &[SortKey], keys: &[usize], plan_key: usize, ctx: &mut Ctx) -> Result<Box<dyn RowIter>> {
    let mut sort_keys = order.to_vec();
    sort_keys.extend(keys.iter().map(|&column| SortKey { column, desc: false, nulls_first: false }));
    let mut sorter = crate::sort::Sorter::new(sort_keys, None, crate::sort::sort_mem(ctx)?);
    while let Some(r) = input.next(ctx)? {
        sorter.put(r, &*ctx.env)?;
    }
    drop(input);
    let (sorted, stats) = sorter.finish(&*ctx.env)?;
    crate::explain::record_sort(plan_key, stats);
    Ok(Box::new(Unique { input: sorted, keys: keys.to_vec(), last: None }))
}

/// Passes the first row of each run of rows equal in `keys`.
struct Unique {
    input: crate::sort::Sorted,
    keys: Vec<usize>,
    /// The `keys` values of the last row passed.
    last: Option<Vec<Value>>,
}

impl RowIter for Unique {
    fn next(&mut self, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        while let Some(r) = self.input.next_row(&*ctx.env)? {
            let same = self.last.as_ref().is_some_and(|last| {
                self.keys.iter().zip(last).all(|(&k, v)| cmp_nulls_last(v, &r[k]) == Ordering::Equal)
            });
            if !same {
                self.last = Some(self.keys.iter().map(|&k| r[k].clone()).collect());
                return Ok(Some(r));
            }
        }
        Ok(None)
    }
}

/// The direct subexpressions of `e`.
pub fn children(e: &Expr) -> Children<'_> {
    use Children::{Fixed, Listed, Slice};
    match e {
        Expr::Const(..) | Expr::Column(..) | Expr::Param(..) | Expr::AggRef(..) | Expr::OuterColumn { .. } | Expr::OuterAggRef { .. } => Fixed([None, None]),
        Expr::SubPlan(sp) => Listed(sp.lhs.iter().chain(sp.row_lhs.iter()).collect::<Vec<_>>().into_iter()),
        Expr::Cast { arg, .. } | Expr::Neg(arg, _) | Expr::Not(arg) | Expr::IsNull { arg, .. } => Fixed([Some(arg), None]),
        Expr::Arith { l, r, .. } | Expr::Compare { l, r, .. } | Expr::Concat(l, r) | Expr::Distinct { l, r, .. } => Fixed([Some(l), Some(r)]),
        Expr::And(v) | Expr::Or(v) | Expr::Func { args: v, .. } | Expr::Coalesce(v, _) | Expr::MinMax { args: v, .. } => Slice(v.iter()),
        Expr::Case { whens, default, .. } => {
            let mut out: Vec<&Expr> = whens.iter().flat_map(|(c, r)| [c, r]).collect();
            out.push(default);
            Listed(out.into_iter())
        }
        Expr::NullIf { arg, eq } => Fixed([Some(arg), Some(eq)]),
        Expr::Like { arg, pat, escape, .. } => {
            let mut out: Vec<&Expr> = vec![arg, pat];
            out.extend(escape.as_deref());
            Listed(out.into_iter())
        }
    }
}

/// The direct subexpressions of an expression ([`children`]): up to two held
/// inline, so walking the common nodes allocates nothing.
pub enum Children<'a> {
    Fixed([Option<&'a Expr>; 2]),
    Slice(std::slice::Iter<'a, Expr>),
    Listed(std::vec::IntoIter<&'a Expr>),
}

impl<'a> Iterator for Children<'a> {
    type Item = &'a Expr;

    fn next(&mut self) -> Option<&'a Expr> {
        match self {
            Children::Fixed(pair) => pair[0].take().or_else(|| pair[1].take()),
            Children::Slice(it) => it.next(),
            Children::Listed(it) => it.next(),
        }
    }
}

/// The first column that `e` reads outside every subexpression equal to one
/// of `keys` (GROUP BY expressions, compared as their debug forms, which spell
/// out the whole typed tree), as (column number, how many references to that
/// column came before it). `seen` counts the column references visited so far
/// (also those inside grouped subexpressions), across calls.
pub fn ungrouped_column(e: &Expr, keys: &[String], seen: &mut Vec<usize>) -> Option<(usize, usize)> {
    fn count(e: &Expr, seen: &mut Vec<usize>) {
        if let Expr::Column(i, _) = e {
            seen.push(*i);
        }
        for c in children(e) {
            count(c, seen);
        }
    }
    // GROUPING(...)'s arguments are checked by `analyze::grouping_sets`.
    if matches!(e, Expr::Func { func: crate::plan::Func::Grouping(_), .. }) {
        return None;
    }
    if !keys.is_empty() && keys.contains(&format!("{e:?}")) {
        count(e, seen);
        return None;
    }
    if let Expr::Column(i, _) = e {
        let before = seen.iter().filter(|c| **c == *i).count();
        return Some((*i, before));
    }
    children(e).into_iter().find_map(|c| ungrouped_column(c, keys, seen))
}
