//! From a query level's FROM items and conjuncts to the join search's
//! numbers ([`super::joinsearch::Rel`], [`super::joinsearch::Clause`]), and
//! the check that the chosen methods still apply once the conditions are
//! placed ([`check_methods`]).

use super::joinsearch::{Clause, Rel, TableRel};
use super::selectivity::{conjunction_selectivity, distinct_values, eqjoinsel, DEFAULT_EQ_SEL, DEFAULT_INEQ_SEL};
use crate::stats::ColStats;
use super::{cost, JoinMethod};
use crate::catalog::Table;
use crate::join::JoinKind;
use crate::plan::{CmpOp, Expr, Source};
use crate::prep::PlanCtx;
use crate::stats::TableStats;
use crate::subquery::{columns_read, shift_columns};
use ferrogres_datum::types::Type;
use std::sync::Arc;

/// A table's size for planning: its statistics (pg_statistic, with
/// relpages/reltuples), else pg_class's relpages/reltuples, else
/// PostgreSQL's guess for a never-analyzed table (10 pages).
pub struct TableSize {
    pub stats: Option<Arc<TableStats>>,
    pub pages: f64,
    pub tuples: f64,
}

pub fn table_size(t: &Table, pc: &PlanCtx) -> TableSize {
    let stats = crate::stats::get(pc.backend, pc.snap, t);
    let (pages, tuples) = match &stats {
        Some(s) if s.tuples > 0.0 => (s.pages.max(1.0), s.tuples),
        _ => crate::stats::rel_size(pc.backend, pc.snap, t.oid, t.columns.len()).unwrap_or((10.0, 1000.0)),
    };
    TableSize { stats, pages, tuples }
}

/// Estimated rows of a subquery item (no statistics of derived relations
/// yet): one row for an aggregate without GROUP BY, its LIMIT when it is a
/// constant, else PostgreSQL's 1000 for a relation it knows nothing of.
fn subquery_rows(q: &crate::plan::Query) -> f64 {
    if !q.aggregates.is_empty() && q.grouping.as_ref().is_none_or(|g| g.keys.is_empty() && g.sets.is_none()) {
        return 1.0;
    }
    if let Some(Expr::Const(v, _)) = &q.limit {
        if let Some(n) = v.as_i64() {
            return (n as f64).max(1.0);
        }
    }
    1000.0
}

/// Column `i`'s average width: ANALYZE's (pg_statistic.stawidth) when it
/// stored one, else by type.
fn column_width(t: &crate::catalog::Table, stats: Option<&crate::stats::TableStats>, i: usize) -> f64 {
    match stats.and_then(|s| s.cols.get(i)).and_then(|c| c.as_ref()) {
        Some(c) if c.width > 0 => c.width as f64,
        _ => type_width(t.columns[i].ty),
    }
}

fn type_width(t: Type) -> f64 {
    match t {
        Type::Bool => 1.0,
        Type::Int2 => 2.0,
        Type::Int4 | Type::Date | Type::Oid => 4.0,
        Type::Int8 | Type::Float8 | Type::Timestamp | Type::Timestamptz | Type::Time => 8.0,
        _ => 32.0,
    }
}

/// Whether an index key of type `key` can be probed with a value of `by`
/// (as `index::as_key` converts: integers among themselves, text and
/// varchar, else the same type).
fn probe_compatible(key: Type, by: Type) -> bool {
    let int = |t: Type| t.is_integer() || t == Type::Oid;
    let text = |t: Type| matches!(t, Type::Text | Type::Varchar);
    (int(key) && int(by)) || (text(key) && text(by)) || key == by
}

/// The join problem of items `leaves` ((source, first column, width)) and
/// the movable conjuncts `quals` over their joined row; `leaf_of` maps a
/// column of that row to its item.
pub fn join_problem(leaves: &[(&Source, usize, usize)], quals: &[&Expr], leaf_of: &dyn Fn(usize) -> usize, pc: &PlanCtx) -> (Vec<Rel>, Vec<Clause>) {
    let p = pc.settings;
    let mask_of = |e: &Expr| columns_read(e).into_iter().fold(0u32, |m, c| m | (1 << leaf_of(c)));
    // The columns a scan passes up: read above the FROM tree, or by a
    // conjunct over two or more items (a join condition). A column only its
    // own restrictions read is not carried (PostgreSQL's reltarget).
    let carried: Option<Vec<bool>> = pc.needed.as_ref().map(|needed| {
        let mut c = needed.clone();
        for q in quals.iter().filter(|q| mask_of(q).count_ones() > 1) {
            for i in columns_read(q) {
                if i >= c.len() {
                    c.resize(i + 1, false);
                }
                c[i] = true;
            }
        }
        c
    });
    let carried_width = |offset: usize, ncols: usize, w: &dyn Fn(usize) -> f64| -> f64 {
        (0..ncols).filter(|&i| carried.as_ref().is_none_or(|c| c.get(offset + i).copied().unwrap_or(false))).map(w).sum()
    };
    let mut sizes: Vec<Option<TableSize>> = Vec::new();
    let mut rels = Vec::new();
    for (i, &(src, offset, ncols)) in leaves.iter().enumerate() {
        // The item's own restrictions, over its own columns.
        let own: Vec<Expr> = quals
            .iter()
            .filter(|q| mask_of(q) == 1 << i)
            .map(|q| {
                let mut q = (*q).clone();
                shift_columns(&mut q, -(offset as isize));
                q
            })
            .collect();
        match src {
            Source::Table(t) => {
                let size = table_size(t, pc);
                let sel = conjunction_selectivity(size.stats.as_deref(), own.iter(), &[]);
                let rows = (size.tuples * sel).max(1.0);
                let mut scan = cost::seq_scan(p, size.pages, size.tuples, own.len());
                let filter = crate::join::and_of(own.clone());
                if let (Some(s), Some(_)) = (&size.stats, &filter) {
                    for (_, path) in crate::index::candidate_paths(t, filter.as_ref()) {
                        let c = crate::stats::index_cost(t, filter.as_ref(), &[], s, &path) + if p.enable_indexscan { 0.0 } else { cost::DISABLE_COST };
                        scan = scan.min(c);
                    }
                }
                let indexes: Vec<(usize, usize)> = t.indexes.iter().enumerate().filter(|(_, ix)| !ix.columns.is_empty()).map(|(k, ix)| (k, ix.columns[0])).collect();
                // A hash index's order says nothing of the heap's (correlation 0).
                let correlation = indexes
                    .iter()
                    .map(|&(k, c)| match t.indexes[k].am {
                        crate::index::IndexAm::Hash => 0.0,
                        _ => size.stats.as_ref().and_then(|s| s.cols.get(c).and_then(|x| x.as_ref())).map_or(0.0, |cs| cs.correlation),
                    })
                    .collect();
                rels.push(Rel {
                    rows,
                    cost: scan,
                    width: carried_width(offset, t.columns.len(), &|i| column_width(t, size.stats.as_deref(), i)),
                    table: Some(TableRel { tuples: size.tuples, pages: size.pages, nquals: own.len(), indexes, correlation }),
                });
                sizes.push(Some(size));
            }
            Source::Subquery(q) => {
                let sel = conjunction_selectivity(None, own.iter(), &[]);
                let rows = (subquery_rows(q) * sel).max(1.0);
                rels.push(Rel { rows, cost: rows * p.cpu_tuple_cost * 10.0, width: carried_width(offset, ncols, &|i| q.targets.get(i).map_or(8.0, |t| type_width(t.expr.ty()))), table: None });
                sizes.push(None);
            }
            _ => {
                rels.push(Rel { rows: 1000.0, cost: 10.0, width: ncols as f64 * 8.0, table: None });
                sizes.push(None);
            }
        }
    }
    // The column of item `leaf` an expression is, with its statistics.
    let col_of = |e: &Expr| -> Option<(usize, usize)> {
        let c = crate::index::column_of(e)?;
        let leaf = leaf_of(c);
        Some((leaf, c - leaves[leaf].1))
    };
    let table_of = |leaf: usize| match leaves[leaf].0 {
        Source::Table(t) => Some(t),
        _ => None,
    };
    let classes = equivalence_classes(quals);
    // A restriction of one item, over the level's row: its selectivity
    // with the item's statistics.
    let leaf_sel = |leaf: usize, e: &Expr| -> f64 {
        let mut e = e.clone();
        shift_columns(&mut e, -(leaves[leaf].1 as isize));
        let stats = sizes[leaf].as_ref().and_then(|s| s.stats.as_deref());
        conjunction_selectivity(stats, std::iter::once(&e), &[])
    };
    let is_table = |leaf: usize| matches!(leaves[leaf].0, Source::Table(_));
    let mut clauses = Vec::new();
    // For each clause, the two (item, column) it equates, when it is an
    // equality of two item columns: what a foreign key is matched against.
    let mut equated: Vec<Option<Equated>> = Vec::new();
    for q in quals {
        let m = mask_of(q);
        if m.count_ones() < 2 {
            continue;
        }
        let ec = column_equality(q).and_then(|(a, _, _)| classes.get(&a).copied()).filter(|_| m.count_ones() == 2);
        let mut c = Clause { rels: m, sel: DEFAULT_INEQ_SEL, sides: None, param: Vec::new(), ec, fk: None };
        equated.push(match q {
            Expr::Compare { op: CmpOp::Eq, l, r } => col_of(l).zip(col_of(r)).filter(|(a, b)| a.0 != b.0),
            _ => None,
        });
        if matches!(q, Expr::Or(_) | Expr::Not(_)) {
            c.sel = join_clause_sel(q, &mask_of, &|e| leaf_sel(leaf_of(columns_read(e)[0]), e));
            // The restrictions this OR implies were added as filters of
            // their items ([`or_restrictions`]) and cut those items' rows:
            // the OR's own selectivity is divided by theirs, so that the
            // estimate of the join where it is evaluated stays what it was
            // (PostgreSQL's orclauses.c corrects it the same way).
            for (leaf, r) in super::orclauses::implied_restrictions(q, leaves.len(), leaf_of, &is_table) {
                let s = leaf_sel(leaf, &r);
                if s <= MAX_OR_RESTRICTION_SEL && s > 0.0 {
                    c.sel /= s;
                }
            }
            c.sel = c.sel.clamp(0.0, 1.0);
        }
        if let Expr::Compare { op: CmpOp::Eq, l, r } = q {
            let (ml, mr) = (mask_of(l), mask_of(r));
            c.sel = DEFAULT_EQ_SEL;
            if ml != 0 && mr != 0 && ml & mr == 0 {
                c.sides = Some((ml, mr));
                if let (Some((a, ca)), Some((b, cb))) = (col_of(l), col_of(r)) {
                    let st = |leaf: usize, col: usize| sizes[leaf].as_ref().and_then(|s| s.stats.as_ref()).and_then(|s| s.cols.get(col).cloned().flatten());
                    let tup = |leaf: usize| sizes[leaf].as_ref().map_or(rels[leaf].rows, |s| s.tuples);
                    c.sel = eqjoinsel(st(a, ca).as_ref(), tup(a), st(b, cb).as_ref(), tup(b));
                }
                for (side, other, mo) in [(l, r, mr), (r, l, ml)] {
                    if let Some((leaf, col)) = col_of(side) {
                        if mask_of(side) == 1 << leaf && mo & (1 << leaf) == 0 {
                            if let Some(t) = table_of(leaf) {
                                if let Some(ix) = t.indexes.iter().find(|ix| ix.columns.first() == Some(&col)) {
                                    if probe_compatible(ix.types[0], other.ty()) && matches!(**side, Expr::Column(..)) {
                                        c.param.push((leaf, col, mo));
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        clauses.push(c);
    }
    foreign_key_joins(leaves, &sizes, &equated, &mut clauses);
    (rels, clauses)
}

/// The two (item, column) a clause `x = y` equates.
type Equated = ((usize, usize), (usize, usize));

/// Marks the clauses that make up a declared foreign key's join
/// (PostgreSQL's get_foreign_key_join_selectivity, from its reasoning):
/// when every column pair of a foreign key of item `c` referencing item `p`
/// is equated by a clause, each row of `c` with no NULL key matches exactly
/// one row of `p`'s table, so those clauses together keep
/// `1 / rows(p's table)` of the cross product, whatever the columns'
/// statistics say (multiplying per-column selectivities counts the
/// correlation of the key's columns as independence: TPC-H Q9's
/// lineitem-partsupp join on `(l_partkey, l_suppkey)`). The table's rows
/// are before its restrictions: a restricted parent keeps the matches of
/// the rows it keeps. A clause serves one foreign key at most; a key whose
/// clauses another key took is not used. NOT VALID keys count, as in
/// PostgreSQL (which reads every foreign key of a relation).
fn foreign_key_joins(leaves: &[(&Source, usize, usize)], sizes: &[Option<TableSize>], equated: &[Option<Equated>], clauses: &mut [Clause]) {
    let mut next = 0;
    for (ci, &(csrc, ..)) in leaves.iter().enumerate() {
        let Source::Table(child) = csrc else { continue };
        for fk in &child.extras.fkeys {
            for (pi, &(psrc, ..)) in leaves.iter().enumerate() {
                let Source::Table(parent) = psrc else { continue };
                if pi == ci || parent.oid != fk.parent {
                    continue;
                }
                let pair = |k: usize, e: &Option<Equated>| {
                    let want = ((ci, fk.cols[k]), (pi, fk.parent_cols[k]));
                    e.is_some_and(|(a, b)| (a, b) == want || (b, a) == want)
                };
                let found: Option<Vec<usize>> = (0..fk.cols.len()).map(|k| (0..clauses.len()).find(|&i| clauses[i].fk.is_none() && pair(k, &equated[i]))).collect();
                let Some(found) = found.filter(|f| !f.is_empty()) else { continue };
                let tuples = sizes[pi].as_ref().map_or(1.0, |s| s.tuples).max(1.0);
                for i in found {
                    clauses[i].fk = Some((next, 1.0 / tuples));
                }
                next += 1;
            }
        }
    }
}

/// A restriction implied by a join's OR is added only when it keeps at most
/// this fraction of its item's rows (PostgreSQL's orclauses.c: above it, the
/// extra evaluations cost more than the rows they save).
pub const MAX_OR_RESTRICTION_SEL: f64 = 0.9;

/// The restrictions that the multi-item OR conjuncts of a level imply on
/// its table items ([`super::orclauses`]), each over the level's row, kept
/// when selective enough ([`MAX_OR_RESTRICTION_SEL`]); the caller adds them
/// to the level's conjuncts (and keeps the ORs).
pub fn or_restrictions(leaves: &[(&Source, usize, usize)], quals: &[&Expr], leaf_of: &dyn Fn(usize) -> usize, pc: &PlanCtx) -> Vec<Expr> {
    let is_table = |leaf: usize| matches!(leaves[leaf].0, Source::Table(_));
    let mut out = Vec::new();
    for q in quals {
        for (leaf, r) in super::orclauses::implied_restrictions(q, leaves.len(), leaf_of, &is_table) {
            let Source::Table(t) = leaves[leaf].0 else { continue };
            let stats = table_size(t, pc).stats;
            let mut local = r.clone();
            shift_columns(&mut local, -(leaves[leaf].1 as isize));
            if conjunction_selectivity(stats.as_deref(), std::iter::once(&local), &[]) <= MAX_OR_RESTRICTION_SEL {
                out.push(r);
            }
        }
    }
    out
}

/// The selectivity of a conjunct reading several items that is not an
/// equality between them (an OR, a NOT): its parts over one item each
/// estimated with that item's statistics (`leaf_sel`), combined as
/// PostgreSQL's clause_selectivity combines them (AND multiplies, OR is
/// `s1 + s2 - s1 * s2`, NOT is `1 - s`); a part reading several items
/// takes the default of its kind.
fn join_clause_sel(e: &Expr, mask_of: &dyn Fn(&Expr) -> u32, leaf_sel: &dyn Fn(&Expr) -> f64) -> f64 {
    let sel = match e {
        e if mask_of(e).count_ones() == 1 => leaf_sel(e),
        Expr::And(v) => v.iter().map(|b| join_clause_sel(b, mask_of, leaf_sel)).product(),
        Expr::Or(v) => v.iter().fold(0.0, |s, b| {
            let b = join_clause_sel(b, mask_of, leaf_sel);
            s + b - s * b
        }),
        Expr::Not(inner) => 1.0 - join_clause_sel(inner, mask_of, leaf_sel),
        Expr::Compare { op: CmpOp::Eq, .. } => DEFAULT_EQ_SEL,
        _ => DEFAULT_INEQ_SEL,
    };
    sel.clamp(0.0, 1.0)
}

/// The equivalence classes of a level's columns (PostgreSQL's
/// EquivalenceClass, for plain columns only): two columns are in one class
/// when a chain of conjuncts `x = y` between columns of the same type
/// links them. Returns each linked column's class (its smallest member).
pub fn equivalence_classes(quals: &[&Expr]) -> std::collections::BTreeMap<usize, usize> {
    fn find(p: &mut std::collections::BTreeMap<usize, usize>, x: usize) -> usize {
        let mut r = x;
        while let Some(&up) = p.get(&r).filter(|&&up| up != r) {
            r = up;
        }
        p.insert(x, r);
        r
    }
    let mut parent = std::collections::BTreeMap::new();
    for q in quals {
        if let Some((a, b, _)) = column_equality(q) {
            let (ra, rb) = (find(&mut parent, a), find(&mut parent, b));
            // The smaller column is the class's name.
            let (lo, hi) = (ra.min(rb), ra.max(rb));
            parent.insert(hi, lo);
            parent.entry(lo).or_insert(lo);
        }
    }
    let cols: Vec<usize> = parent.keys().copied().collect();
    cols.into_iter().map(|c| (c, find(&mut parent, c))).collect()
}

/// `x = y` between two distinct columns of the same type: (x, y, type).
fn column_equality(q: &Expr) -> Option<(usize, usize, Type)> {
    match q {
        Expr::Compare { op: CmpOp::Eq, l, r } => match (&**l, &**r) {
            (Expr::Column(a, ta), Expr::Column(b, tb)) if ta == tb && a != b => Some((*a, *b, *ta)),
            _ => None,
        },
        _ => None,
    }
}

/// The equalities between columns of different items (`leaf_of`) that the
/// conjuncts imply by transitivity and do not state (`a = b AND b = c`
/// gives `a = c`), so that the join search can join the items of `a` and
/// `c` directly, hash on that key or probe an index with it, as
/// PostgreSQL's equivalence classes allow (TPC-H Q5 joins customer with
/// nation through `c_nationkey = s_nationkey AND s_nationkey =
/// n_nationkey`). Their selectivity is not counted twice: the search
/// multiplies, per class, only the clauses that join items not already
/// joined ([`crate::optimizer::joinsearch`]'s `set_rows`).
pub fn implied_equalities(quals: &[&Expr], leaf_of: &dyn Fn(usize) -> usize) -> Vec<Expr> {
    let classes = equivalence_classes(quals);
    let mut stated = std::collections::BTreeSet::new();
    let mut types = std::collections::BTreeMap::new();
    for q in quals {
        if let Some((a, b, t)) = column_equality(q) {
            stated.insert((a.min(b), a.max(b)));
            types.insert(a, t);
            types.insert(b, t);
        }
    }
    let mut members: std::collections::BTreeMap<usize, Vec<usize>> = std::collections::BTreeMap::new();
    for (&c, &class) in &classes {
        members.entry(class).or_default().push(c);
    }
    let mut out = Vec::new();
    for cols in members.values() {
        for (i, &a) in cols.iter().enumerate() {
            for &b in &cols[i + 1..] {
                if leaf_of(a) != leaf_of(b) && !stated.contains(&(a, b)) {
                    let t = types[&a];
                    out.push(Expr::Compare { op: CmpOp::Eq, l: Box::new(Expr::Column(a, t)), r: Box::new(Expr::Column(b, t)) });
                }
            }
        }
    }
    out
}

/// For the joins of a tree whose conditions are placed: a parameterized
/// nested loop needs its right input to be a table and a hash key pair
/// whose right side is the index's leading column; where that is not so
/// (the placement put the equality elsewhere), the join falls back to the
/// default method.
pub fn check_methods(s: &mut Source) {
    let Source::Join(j) = s else { return };
    check_methods(&mut j.left);
    check_methods(&mut j.right);
    if let JoinMethod::ParamIndex { index } = j.plan.method {
        if crate::nestloop::probe_keys(j, index).is_none() {
            j.plan.method = JoinMethod::Auto;
        }
    }
}

/// What the estimates of a semi- or anti-join know of one of its key
/// columns: its statistics (`None`: never analyzed), its table's rows, and
/// the rows of its side after that side's restrictions.
struct KeyColumn {
    stats: Option<ColStats>,
    tuples: f64,
    rows: f64,
}

/// The table column that expression `e` (over `src`'s row, `filter`
/// restricting `src`) reads, through inner joins and plain subqueries.
fn key_column(src: &Source, filter: Option<&Expr>, e: &Expr, pc: &PlanCtx) -> Option<KeyColumn> {
    let c = crate::index::column_of(e)?;
    match src {
        Source::Table(t) => {
            let size = table_size(t, pc);
            let cols: Vec<&Expr> = filter.into_iter().collect();
            let sel = conjunction_selectivity(size.stats.as_deref(), cols.into_iter(), &[]);
            let stats = size.stats.as_ref().and_then(|s| s.cols.get(c).cloned().flatten());
            Some(KeyColumn { stats, tuples: size.tuples, rows: (size.tuples * sel).max(1.0) })
        }
        Source::Join(j) if !j.lateral => {
            let ty = e.ty();
            if c < j.lw {
                key_column(&j.left, j.left_filter.as_ref(), &Expr::Column(c, ty), pc)
            } else if !j.kind.left_only() && c < j.lw + j.rw {
                key_column(&j.right, j.right_filter.as_ref(), &Expr::Column(c - j.lw, ty), pc)
            } else {
                None
            }
        }
        Source::Subquery(q) if q.aggregates.is_empty() && q.grouping.is_none() => {
            let t = q.targets.get(c)?;
            key_column(&q.source, q.filter.as_ref(), &t.expr, pc)
        }
        _ => None,
    }
}

/// PostgreSQL's DEFAULT_NUM_DISTINCT: the distinct values assumed of a
/// column without statistics in a table of at least that many rows.
const DEFAULT_NUM_DISTINCT: f64 = 200.0;

/// The fraction of outer rows with at least one inner row of an equal key
/// (PostgreSQL's eqjoinsel_semi, written from its reasoning): with MCV
/// lists on both sides, the outer MCVs found among the inner ones match for
/// certain; of the other outer rows, all match when the outer side has no
/// more distinct values than the inner side, else the share `nd2 / nd1`
/// (after taking the matched MCVs off both counts). Without MCVs the same
/// `nd2 / nd1` rule on all non-null rows; without statistics on either
/// side, half of them. The inner side's distinct count is never more than
/// its rows after its restrictions.
fn eqjoinsel_semi(outer: &KeyColumn, inner: &KeyColumn) -> f64 {
    let nd = |k: &KeyColumn| match &k.stats {
        Some(s) => (distinct_values(s, k.tuples), false),
        None if k.tuples < DEFAULT_NUM_DISTINCT => (k.tuples.max(1.0), false),
        None => (DEFAULT_NUM_DISTINCT, true),
    };
    let (mut nd1, default1) = nd(outer);
    let (mut nd2, mut default2) = nd(inner);
    if nd2 >= inner.rows {
        nd2 = inner.rows;
        default2 = false;
    }
    let nullfrac1 = outer.stats.as_ref().map_or(0.0, |s| s.null_frac);
    let sel = match (&outer.stats, &inner.stats) {
        (Some(a), Some(b)) if !default1 && !default2 && !a.mcv.is_empty() && !b.mcv.is_empty() => {
            // Only as many inner MCVs as the inner side can still hold
            // distinct values.
            let n2 = b.mcv.len().min(nd2.max(0.0) as usize);
            let mut matched2 = vec![false; n2];
            let (mut matchfreq1, mut nmatches) = (0.0, 0.0);
            for (v1, f1) in a.mcv.iter().zip(&a.mcf) {
                if let Some(j) = (0..n2).find(|&j| !matched2[j] && crate::exec::compare(v1, &b.mcv[j]) == std::cmp::Ordering::Equal) {
                    matched2[j] = true;
                    matchfreq1 += f1;
                    nmatches += 1.0;
                }
            }
            nd1 -= nmatches;
            nd2 -= nmatches;
            let uncertainfrac = if nd1 <= nd2 || nd2 < 0.0 { 1.0 } else { nd2 / nd1 };
            let uncertain = (1.0 - matchfreq1 - nullfrac1).clamp(0.0, 1.0);
            matchfreq1 + uncertainfrac * uncertain
        }
        _ if !default1 && !default2 => {
            if nd1 <= nd2 || nd2 < 0.0 {
                1.0 - nullfrac1
            } else {
                nd2 / nd1 * (1.0 - nullfrac1)
            }
        }
        _ => 0.5 * (1.0 - nullfrac1),
    };
    sel.clamp(0.0, 1.0)
}

/// Sets `JoinPlan::semi_frac` on the semi- and anti-joins of `s` (those
/// `prep` pulled up from EXISTS / NOT EXISTS / IN, their hash keys placed):
/// from the first hash key pair that reads a table column on each side,
/// [`eqjoinsel_semi`]. EXPLAIN multiplies the outer rows by it (an
/// anti-join by `1 - frac`), as PostgreSQL's join size estimate does.
pub fn semi_join_estimates(s: &mut Source, pc: &PlanCtx) {
    match s {
        Source::Join(j) => {
            semi_join_estimates(&mut j.left, pc);
            semi_join_estimates(&mut j.right, pc);
            if j.lateral {
                return;
            }
            let Some((lk, rk)) = &j.hash else { return };
            if matches!(j.kind, JoinKind::Left | JoinKind::Right | JoinKind::Full) {
                // Each key pair's eqjoinsel (its default without a table
                // column on both sides), multiplied.
                let sel: f64 = lk
                    .iter()
                    .zip(rk)
                    .map(|(l, r)| {
                        let outer = key_column(&j.left, j.left_filter.as_ref(), l, pc);
                        let inner = key_column(&j.right, j.right_filter.as_ref(), r, pc);
                        match (outer, inner) {
                            (Some(a), Some(b)) => eqjoinsel(a.stats.as_ref(), a.tuples, b.stats.as_ref(), b.tuples),
                            _ => DEFAULT_EQ_SEL,
                        }
                    })
                    .product();
                j.plan.outer_sel = Some(sel);
                return;
            }
            if !j.kind.left_only() {
                return;
            }
            let frac = lk.iter().zip(rk).find_map(|(l, r)| {
                let outer = key_column(&j.left, j.left_filter.as_ref(), l, pc)?;
                let inner = key_column(&j.right, j.right_filter.as_ref(), r, pc)?;
                Some(eqjoinsel_semi(&outer, &inner))
            });
            j.plan.semi_frac = frac;
        }
        Source::Subquery(q) => semi_join_estimates(&mut q.source, pc),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferrogres_datum::types::Value;

    fn distinct(nd: f64, null_frac: f64) -> Option<ColStats> {
        Some(ColStats { null_frac, width: 4, n_distinct: nd, ..Default::default() })
    }

    #[test]
    fn semi_join_fraction() {
        // 1,000 outer keys, 300 inner: 30 % of the outer rows match.
        let outer = KeyColumn { stats: distinct(1000.0, 0.0), tuples: 10_000.0, rows: 10_000.0 };
        let inner = KeyColumn { stats: distinct(300.0, 0.0), tuples: 3_000.0, rows: 3_000.0 };
        assert!((eqjoinsel_semi(&outer, &inner) - 0.3).abs() < 1e-12);
        // Fewer outer keys than inner ones: every non-null outer row.
        let few = KeyColumn { stats: distinct(300.0, 0.1), tuples: 3_000.0, rows: 3_000.0 };
        assert!((eqjoinsel_semi(&few, &outer) - 0.9).abs() < 1e-12);
        // The inner side restricted to 150 rows holds at most 150 keys.
        let cut = KeyColumn { rows: 150.0, ..KeyColumn { stats: distinct(300.0, 0.0), tuples: 3_000.0, rows: 0.0 } };
        assert!((eqjoinsel_semi(&outer, &cut) - 0.15).abs() < 1e-12);
        // No statistics on a large side: half of the rows.
        let unknown = KeyColumn { stats: None, tuples: 10_000.0, rows: 10_000.0 };
        assert!((eqjoinsel_semi(&unknown, &inner) - 0.5).abs() < 1e-12);
        // MCVs on both sides: the matched outer MCV counts for certain.
        let m1 = Some(ColStats { null_frac: 0.0, width: 4, n_distinct: 100.0, mcv: vec![Value::Int4(1)], mcf: vec![0.5], ..Default::default() });
        let m2 = Some(ColStats { null_frac: 0.0, width: 4, n_distinct: 11.0, mcv: vec![Value::Int4(1)], mcf: vec![0.2], ..Default::default() });
        let o = KeyColumn { stats: m1, tuples: 1000.0, rows: 1000.0 };
        let i = KeyColumn { stats: m2, tuples: 1000.0, rows: 1000.0 };
        // 0.5 + (10 / 99) * 0.5
        assert!((eqjoinsel_semi(&o, &i) - (0.5 + 10.0 / 99.0 * 0.5)).abs() < 1e-12);
    }
}
