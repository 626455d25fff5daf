//! Join order by dynamic programming (PostgreSQL's `standard_join_search`,
//! written from its idea): the inner joins of one query level are a graph
//! whose nodes are base relations and whose edges are join clauses. The
//! search builds, level by level, the cheapest plan for every connected set
//! of relations (level k joins a set of level i with one of level k - i);
//! a split with no clause between its sides (a cross product) is
//! considered only when the relations cannot be joined otherwise. Beyond
//! `join_collapse_limit` / `from_collapse_limit` relations, or from
//! `geqo_threshold` on, a greedy search takes its place: it starts from the
//! smallest relation and adds, each step, the relation whose join is
//! cheapest (connected ones first).
//!
//! Only the cheapest plan of each set is kept (PostgreSQL also keeps plans
//! with a cheaper startup or a useful order: there is no merge join or
//! sorted path here yet). Methods:
//! - hash join, the side with fewer estimated rows the inner (build) side;
//! - nested loop over a kept inner side, for joins without an equality;
//! - parameterized nested loop: the inner side a single table probed by an
//!   index on the join column with each outer row's value
//!   ([`crate::nestloop`]).
//!
//! This module sees plain numbers ([`Rel`], [`Clause`]): `crate::prep`
//! derives them from the query and the statistics, and turns the [`Tree`]
//! back into joins.

use super::cost;
use super::PlannerSettings;

/// A base relation of the join problem.
#[derive(Clone, Debug)]
pub struct Rel {
    /// Estimated rows after its restriction clauses.
    pub rows: f64,
    /// Cost of reading it with its restrictions (the cheapest scan).
    pub cost: f64,
    /// Average row width in bytes.
    pub width: f64,
    /// For a table: its rows and pages before restrictions, the number of
    /// restriction clauses, and the indexes that can be probed with one
    /// value: (index number, leading column).
    pub table: Option<TableRel>,
}

#[derive(Clone, Debug)]
pub struct TableRel {
    pub tuples: f64,
    pub pages: f64,
    pub nquals: usize,
    pub indexes: Vec<(usize, usize)>,
    /// For each of `indexes`, the correlation of its leading column with
    /// the heap's order (pg_stats.correlation; 0 without statistics).
    pub correlation: Vec<f64>,
}

/// A clause reading two or more relations.
#[derive(Clone, Debug)]
pub struct Clause {
    /// The relations it reads (bit i: relation i).
    pub rels: u32,
    /// Its selectivity over the cross product of those relations.
    pub sel: f64,
    /// An equality whose two sides read `sides.0` and `sides.1` only: a hash
    /// key when the join puts them on different sides.
    pub sides: Option<(u32, u32)>,
    /// The equality is `column = expression` with the column (relation,
    /// column number) of one relation, the expression reading others only
    /// and of a type an index key of that column accepts: (relation,
    /// column, mask of the other side); both ways round when both sides are
    /// columns.
    pub param: Vec<(usize, usize, u32)>,
    /// An equality of two columns of one equivalence class (its name, see
    /// `estimate::equivalence_classes`): in a set of relations, a class's
    /// clauses multiply the rows only as far as they join relations not
    /// yet joined by that class (k relations: k - 1 selectivities), since
    /// the implied ones (`estimate::implied_equalities`) add no condition.
    pub ec: Option<usize>,
    /// Part of a foreign key's join (`estimate::foreign_key_joins`): the
    /// key's number and its selectivity (1 / the referenced table's rows),
    /// which a set holding both tables counts once in place of its clauses'.
    pub fk: Option<(usize, f64)>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Hash,
    NestLoop,
    /// The inner relation probed by its index `index` per outer row.
    ParamIndex { index: usize },
}

/// The chosen plan.
#[derive(Clone, Debug)]
pub enum Tree {
    Leaf(usize),
    Join { left: Box<Tree>, right: Box<Tree>, method: Method, rows: f64, cost: f64 },
}

impl Tree {
    /// Its relations from left to right (the order of the joined row).
    pub fn leaves(&self, out: &mut Vec<usize>) {
        match self {
            Tree::Leaf(i) => out.push(*i),
            Tree::Join { left, right, .. } => {
                left.leaves(out);
                right.leaves(out);
            }
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    cost: f64,
    rows: f64,
    width: f64,
    /// (left set, right set, method); None for a base relation.
    split: Option<(u32, u32, Method)>,
}

/// Estimated rows of the join of the relations in `set`.
///
/// A clause of an equivalence class counts only when it joins two groups of
/// relations that the class's clauses before it (in `clauses`' order) have
/// not joined: the result depends on the set, never on a join order.
fn set_rows(rels: &[Rel], clauses: &[Clause], set: u32) -> f64 {
    let mut rows: f64 = (0..rels.len()).filter(|i| set & (1 << i) != 0).map(|i| rels[i].rows).product();
    // Per class: a union-find over the relations (at most 32).
    let mut groups: Vec<(usize, [u8; 32])> = Vec::new();
    fn find(p: &[u8; 32], mut x: usize) -> usize {
        while p[x] as usize != x {
            x = p[x] as usize;
        }
        x
    }
    // Joins `c`'s two relations in its class; whether they were apart.
    let mut join_in_class = |c: &Clause, ec: usize| -> bool {
        let at = match groups.iter().position(|g| g.0 == ec) {
            Some(i) => i,
            None => {
                let mut p = [0u8; 32];
                for (i, x) in p.iter_mut().enumerate() {
                    *x = i as u8;
                }
                groups.push((ec, p));
                groups.len() - 1
            }
        };
        let p = &mut groups[at].1;
        let (a, b) = (c.rels.trailing_zeros() as usize, 31 - c.rels.leading_zeros() as usize);
        let (ra, rb) = (find(p, a), find(p, b));
        p[ra] = rb as u8;
        ra != rb
    };
    // Foreign keys first: a key's selectivity once, and its clauses join
    // their relations in their classes, so that a class's other clauses
    // between the same relations (implied ones) add nothing more.
    let mut keys_done: Vec<usize> = Vec::new();
    for c in clauses.iter().filter(|c| c.rels & !set == 0) {
        let Some((key, sel)) = c.fk else { continue };
        if !keys_done.contains(&key) {
            keys_done.push(key);
            rows *= sel;
        }
        if let Some(ec) = c.ec {
            join_in_class(c, ec);
        }
    }
    for c in clauses.iter().filter(|c| c.rels & !set == 0 && c.fk.is_none()) {
        match c.ec {
            None => rows *= c.sel,
            Some(ec) => {
                if join_in_class(c, ec) {
                    rows *= c.sel;
                }
            }
        }
    }
    rows.max(1.0)
}

/// The cheapest way to join `l` (outer) with `r` (inner), already planned,
/// into a set of `rows` rows; `None` if no method applies.
#[allow(clippy::too_many_arguments)]
fn best_join(rels: &[Rel], clauses: &[Clause], p: &PlannerSettings, l: u32, le: &Entry, r: u32, re: &Entry, rows: f64) -> Option<(f64, Method)> {
    let mut best: Option<(f64, Method)> = None;
    let mut consider = |c: f64, m: Method| {
        if best.is_none_or(|b| c < b.0) {
            best = Some((c, m));
        }
    };
    let keys = clauses
        .iter()
        .filter(|c| match c.sides {
            Some((a, b)) => (a & !l == 0 && b & !r == 0) || (a & !r == 0 && b & !l == 0),
            None => false,
        })
        .count();
    // Hash join: the executor builds on the input that ends first (the
    // smaller one), so the build is charged to the smaller estimated side
    // whichever side it is written on; on a tie the written order stays.
    if keys > 0 {
        let (outer, inner) = if le.rows >= re.rows { (le, re) } else { (re, le) };
        let c = le.cost + re.cost + cost::hash_join(p, outer.rows, inner.rows, inner.width, outer.width, keys, rows);
        consider(c, Method::Hash);
    }
    // A plain nested loop (the inner side kept): the only way without keys.
    if keys == 0 || !p.enable_hashjoin {
        consider(le.cost + re.cost + cost::nested_loop(p, le.rows, re.rows, rows), Method::NestLoop);
    }
    // Parameterized nested loop: the inner side one table with an index on
    // a column equated with the outer side.
    if r.count_ones() == 1 {
        let ri = r.trailing_zeros() as usize;
        if let Some(t) = &rels[ri].table {
            for &(index, col) in &t.indexes {
                let probe = clauses.iter().find(|c| c.param.iter().any(|&(rel, c2, other)| rel == ri && c2 == col && other & !l == 0));
                if let Some(pc) = probe {
                    // Rows one probe fetches: the table's rows matching one value.
                    let per_loop = (t.tuples * pc.sel).max(1e-9);
                    let nquals = t.nquals + clauses.iter().filter(|c| c.rels & r != 0 && c.rels & !(l | r) == 0).count().saturating_sub(1);
                    // The pages one probe reads are costed as if the scan ran
                    // once per row of the smallest relation giving the probe
                    // value (PostgreSQL's get_loop_count): the same for every
                    // join the probe can appear in, charged per outer row.
                    let other = pc.param.iter().find(|&&(rel, c2, o)| rel == ri && c2 == col && o & !l == 0).map_or(l, |x| x.2);
                    let loop_count = (0..rels.len()).filter(|i| other & (1 << i) != 0).map(|i| rels[i].rows).fold(f64::INFINITY, f64::min);
                    let loop_count = if loop_count.is_finite() { loop_count } else { le.rows };
                    let corr = t.correlation.get(t.indexes.iter().position(|&(ix, _)| ix == index).unwrap_or(usize::MAX)).copied().unwrap_or(0.0);
                    let inner = le.rows.max(1.0) * cost::param_index_scan(p, t.tuples, t.pages, per_loop, loop_count, nquals, corr);
                    let c = le.cost + inner + rows * p.cpu_tuple_cost + if p.enable_nestloop { 0.0 } else { cost::DISABLE_COST };
                    consider(c, Method::ParamIndex { index });
                }
            }
        }
    }
    best
}

fn connected(clauses: &[Clause], a: u32, b: u32) -> bool {
    clauses.iter().any(|c| c.rels & a != 0 && c.rels & b != 0 && c.rels & !(a | b) == 0)
}

/// The plan of the join of all `rels` (at least one) under `clauses`.
/// `check` is called once per set of relations planned (the caller's
/// interrupt check: a search of 2^n sets polls as it works).
pub fn search(rels: &[Rel], clauses: &[Clause], p: &PlannerSettings, check: &mut dyn FnMut() -> bool) -> Tree {
    let n = rels.len();
    let limit = p.join_collapse_limit.min(p.from_collapse_limit).max(1);
    if n > limit || (p.geqo && n >= p.geqo_threshold) || n > 20 {
        return greedy(rels, clauses, p);
    }
    let full: u32 = if n == 32 { u32::MAX } else { (1u32 << n) - 1 };
    let mut best: Vec<Option<Entry>> = vec![None; 1 << n];
    for (i, r) in rels.iter().enumerate() {
        best[1 << i] = Some(Entry { cost: r.cost, rows: r.rows, width: r.width, split: None });
    }
    for allow_cross in [false, true] {
        for size in 2..=n {
            for set in 1..=full {
                if set.count_ones() as usize != size || (allow_cross && best[set as usize].is_some()) {
                    continue;
                }
                if !check() {
                    return greedy(rels, clauses, p);
                }
                let rows = set_rows(rels, clauses, set);
                let mut here: Option<Entry> = None;
                // Splits in increasing order of the left set, so that on a
                // tie the written order (lower relations left) wins.
                let mut sub = 0u32;
                loop {
                    sub = sub.wrapping_sub(set) & set;
                    if sub == set {
                        break;
                    }
                    let (l, r) = (sub, set & !sub);
                    if let (Some(le), Some(re)) = (best[l as usize], best[r as usize]) {
                        if allow_cross || connected(clauses, l, r) {
                            if let Some((c, m)) = best_join(rels, clauses, p, l, &le, r, &re, rows) {
                                if here.is_none_or(|h| c < h.cost) {
                                    here = Some(Entry { cost: c, rows, width: le.width + re.width, split: Some((l, r, m)) });
                                }
                            }
                        }
                    }
                }
                if here.is_some() {
                    best[set as usize] = here;
                }
            }
        }
        if best[full as usize].is_some() {
            break;
        }
    }
    build(&best, full)
}

fn build(best: &[Option<Entry>], set: u32) -> Tree {
    let e = best[set as usize].expect("a planned set");
    match e.split {
        None => Tree::Leaf(set.trailing_zeros() as usize),
        Some((l, r, method)) => Tree::Join { left: Box::new(build(best, l)), right: Box::new(build(best, r)), method, rows: e.rows, cost: e.cost },
    }
}

/// Left-deep, greedily: the smallest relation first, then each step the
/// relation whose join with what is joined so far is cheapest, among the
/// connected ones while there are some.
fn greedy(rels: &[Rel], clauses: &[Clause], p: &PlannerSettings) -> Tree {
    let n = rels.len();
    let first = (0..n).min_by(|&a, &b| rels[a].rows.total_cmp(&rels[b].rows)).expect("a relation");
    let mut set = 1u32 << first;
    let mut tree = Tree::Leaf(first);
    let mut entry = Entry { cost: rels[first].cost, rows: rels[first].rows, width: rels[first].width, split: None };
    while set.count_ones() as usize != n {
        let cands: Vec<usize> = (0..n).filter(|&i| set & (1 << i) == 0).collect();
        let conn: Vec<usize> = cands.iter().copied().filter(|&i| connected(clauses, set, 1 << i)).collect();
        let pool = if conn.is_empty() { cands } else { conn };
        let mut pick: Option<(f64, usize, Method, f64)> = None;
        for i in pool {
            let r = 1u32 << i;
            let rows = set_rows(rels, clauses, set | r);
            let re = Entry { cost: rels[i].cost, rows: rels[i].rows, width: rels[i].width, split: None };
            let m = best_join(rels, clauses, p, set, &entry, r, &re, rows)
                .or_else(|| Some((entry.cost + re.cost + cost::nested_loop(p, entry.rows, re.rows, rows), Method::NestLoop)));
            if let Some((c, m)) = m {
                if pick.is_none_or(|b| c < b.0) {
                    pick = Some((c, i, m, rows));
                }
            }
        }
        let (c, i, m, rows) = pick.expect("a relation left");
        set |= 1 << i;
        tree = Tree::Join { left: Box::new(tree), right: Box::new(Tree::Leaf(i)), method: m, rows, cost: c };
        entry = Entry { cost: c, rows, width: entry.width + rels[i].width, split: None };
    }
    tree
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(rows: f64, tuples: f64, indexes: Vec<(usize, usize)>) -> Rel {
        let pages = (tuples / 100.0).max(1.0);
        Rel { rows, cost: pages + tuples * 0.0125, width: 16.0, table: Some(TableRel { tuples, pages, nquals: 1, correlation: vec![0.0; indexes.len()], indexes }) }
    }

    fn eq(a: usize, ca: usize, b: usize, cb: usize, sel: f64) -> Clause {
        Clause { rels: (1 << a) | (1 << b), sel, sides: Some((1 << a, 1 << b)), param: vec![(a, ca, 1 << b), (b, cb, 1 << a)], ec: None, fk: None }
    }

    fn order(t: &Tree) -> Vec<usize> {
        let mut v = Vec::new();
        t.leaves(&mut v);
        v
    }

    #[test]
    fn a_star_join_starts_from_the_selective_dimension() {
        // fact (1M rows) joined to d1 (10 rows after a selective filter) and
        // d2 (1000 rows); fact has indexes on both foreign keys (columns 1, 2).
        let rels = vec![table(1_000_000.0, 1_000_000.0, vec![(0, 1), (1, 2)]), table(10.0, 10_000.0, vec![(0, 0)]), table(1000.0, 1000.0, vec![(0, 0)])];
        let clauses = vec![eq(0, 1, 1, 0, 1.0 / 10_000.0), eq(0, 2, 2, 0, 1.0 / 1000.0)];
        let t = search(&rels, &clauses, &PlannerSettings::default(), &mut || true);
        // The fact table is reached from d1 through its index, never scanned whole.
        fn has_param_into(t: &Tree, rel: usize) -> bool {
            match t {
                Tree::Leaf(_) => false,
                Tree::Join { left, right, method, .. } => {
                    matches!((method, &**right), (Method::ParamIndex { .. }, Tree::Leaf(r)) if *r == rel) || has_param_into(left, rel) || has_param_into(right, rel)
                }
            }
        }
        assert!(has_param_into(&t, 0), "{t:?}");
        assert_eq!(order(&t)[0], 1, "{t:?}");
    }

    #[test]
    fn no_cross_product_while_a_connected_join_exists() {
        // a - b - c chain, a and c tiny: joining a with c first would be a
        // cross product; the search joins along the chain.
        let rels = vec![Rel { rows: 2.0, cost: 1.0, width: 8.0, table: None }, Rel { rows: 100_000.0, cost: 1000.0, width: 8.0, table: None }, Rel { rows: 2.0, cost: 1.0, width: 8.0, table: None }];
        let clauses = vec![
            Clause { rels: 0b011, sel: 1e-5, sides: Some((0b001, 0b010)), param: vec![], ec: None, fk: None },
            Clause { rels: 0b110, sel: 1e-5, sides: Some((0b010, 0b100)), param: vec![], ec: None, fk: None },
        ];
        let t = search(&rels, &clauses, &PlannerSettings::default(), &mut || true);
        let Tree::Join { left, right, .. } = &t else { panic!() };
        let (mut l, mut r) = (Vec::new(), Vec::new());
        left.leaves(&mut l);
        right.leaves(&mut r);
        // Neither side is {a, c}.
        l.sort();
        r.sort();
        assert!(l != vec![0, 2] && r != vec![0, 2], "{t:?}");
    }

    #[test]
    fn disconnected_relations_still_join() {
        let rels = vec![Rel { rows: 3.0, cost: 1.0, width: 8.0, table: None }, Rel { rows: 4.0, cost: 1.0, width: 8.0, table: None }];
        let t = search(&rels, &[], &PlannerSettings::default(), &mut || true);
        assert!(matches!(t, Tree::Join { method: Method::NestLoop, rows, .. } if rows == 12.0));
    }

    #[test]
    fn greedy_beyond_the_collapse_limit_covers_every_relation() {
        let rels: Vec<Rel> = (0..14).map(|i| Rel { rows: 10.0 + i as f64, cost: 1.0, width: 8.0, table: None }).collect();
        let clauses: Vec<Clause> = (0..13).map(|i| Clause { rels: (1 << i) | (1 << (i + 1)), sel: 0.1, sides: Some((1 << i, 1 << (i + 1))), param: vec![], ec: None, fk: None }).collect();
        let t = search(&rels, &clauses, &PlannerSettings::default(), &mut || true);
        let mut o = order(&t);
        o.sort();
        assert_eq!(o, (0..14).collect::<Vec<_>>());
    }

    #[test]
    fn disabled_hash_join_gives_way() {
        let rels = vec![Rel { rows: 1000.0, cost: 10.0, width: 8.0, table: None }, Rel { rows: 1000.0, cost: 10.0, width: 8.0, table: None }];
        let clauses = vec![Clause { rels: 0b11, sel: 0.001, sides: Some((1, 2)), param: vec![], ec: None, fk: None }];
        let on = search(&rels, &clauses, &PlannerSettings::default(), &mut || true);
        assert!(matches!(on, Tree::Join { method: Method::Hash, .. }));
        let p = PlannerSettings { enable_hashjoin: false, ..PlannerSettings::default() };
        let off = search(&rels, &clauses, &p, &mut || true);
        assert!(matches!(off, Tree::Join { method: Method::NestLoop, .. }));
    }

    #[test]
    fn an_equivalence_class_counts_each_join_once() {
        // a.x = b.y, b.y = c.z written; a.x = c.z implied: three relations
        // of one class take two selectivities, whichever clauses are there.
        let rels = vec![table(100.0, 100.0, vec![]), table(100.0, 100.0, vec![]), table(100.0, 100.0, vec![])];
        let ec = |a: usize, b: usize| Clause { ec: Some(0), ..eq(a, 0, b, 0, 0.01) };
        let clauses = vec![ec(0, 1), ec(1, 2), ec(0, 2)];
        assert!((set_rows(&rels, &clauses, 0b111) - 100.0).abs() < 1e-9);
        // Two of them: the implied clause alone joins a and c.
        assert!((set_rows(&rels, &clauses, 0b101) - 100.0).abs() < 1e-9);
        // Without classes every clause would multiply.
        let plain = vec![eq(0, 0, 1, 0, 0.01), eq(1, 0, 2, 0, 0.01), eq(0, 0, 2, 0, 0.01)];
        assert!((set_rows(&rels, &plain, 0b111) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_foreign_key_join_keeps_one_parent_row_per_child_row() {
        // child (1000 rows) references parent (100 of its 400 rows after a
        // filter) by two columns, each clause 1/20 on its own: the key
        // counts 1/400 once, so 1000 * 100 / 400 rows.
        let rels = vec![table(1000.0, 1000.0, vec![]), table(100.0, 400.0, vec![])];
        let key = |col: usize, ec: usize| Clause { ec: Some(ec), fk: Some((0, 1.0 / 400.0)), ..eq(0, col, 1, col, 0.05) };
        let clauses = vec![key(0, 0), key(1, 1)];
        assert!((set_rows(&rels, &clauses, 0b11) - 250.0).abs() < 1e-9);
        // A third relation in the first key column's class, joined to the
        // child too: the implied parent-third clause adds nothing more.
        let mut rels3 = rels.clone();
        rels3.push(table(50.0, 50.0, vec![]));
        let mut clauses3 = clauses.clone();
        clauses3.push(Clause { ec: Some(0), ..eq(0, 0, 2, 0, 0.02) });
        clauses3.push(Clause { ec: Some(0), ..eq(1, 0, 2, 0, 0.02) });
        assert!((set_rows(&rels3, &clauses3, 0b111) - 250.0 * 50.0 * 0.02).abs() < 1e-9);
    }
}
