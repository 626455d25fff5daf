//! From a query level's FROM items and conjuncts to the join search's
//! numbers ([`super::joinsearch::Rel`], [`super::joinsearch::Clause`]), and
//! the check that the chosen methods still apply once the conditions are
//! placed ([`check_methods`]).

use super::joinsearch::{Clause, Rel, TableRel};
use super::selectivity::{conjunction_selectivity, eqjoinsel, DEFAULT_EQ_SEL, DEFAULT_INEQ_SEL};
use super::{cost, JoinMethod};
use crate::catalog::Table;
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
    let mut clauses = Vec::new();
    for q in quals {
        let m = mask_of(q);
        if m.count_ones() < 2 {
            continue;
        }
        let ec = column_equality(q).and_then(|(a, _, _)| classes.get(&a).copied()).filter(|_| m.count_ones() == 2);
        let mut c = Clause { rels: m, sel: DEFAULT_INEQ_SEL, sides: None, param: Vec::new(), ec };
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
    (rels, clauses)
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
