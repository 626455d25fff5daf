//! Restrictions implied by a join's OR clause (the idea of PostgreSQL's
//! `optimizer/util/orclauses.c`, written from its design).
//!
//! A conjunct that reads several items of a join, such as TPC-H Q7's
//!
//! ```text
//! (n1.n_name = 'FRANCE' AND n2.n_name = 'GERMANY')
//!     OR (n1.n_name = 'GERMANY' AND n2.n_name = 'FRANCE')
//! ```
//!
//! can only be evaluated once both items are joined. But each of its arms
//! holds conjuncts over `n1` alone, so it implies the OR of those:
//! `n1.n_name = 'FRANCE' OR n1.n_name = 'GERMANY'`. That restriction is
//! added as a filter of `n1`'s scan (and the same for `n2`), which cuts the
//! item's rows before any join and enters its estimate; the original OR
//! stays, as the join's filter, so the answer is the same rows.
//!
//! Why it is correct, in three-valued logic: the OR is true only if some
//! arm is true; an arm is true only if each of its conjuncts is, so the
//! arm's conjuncts over the item are true, so the derived OR is true. A row
//! of the item for which the derived OR is false or NULL therefore can make
//! no joined row pass the original OR: dropping it early loses nothing, and
//! the original OR, still evaluated above, adds nothing.
//!
//! An item gets a restriction only when every arm has at least one conjunct
//! over that item alone (an arm without one implies nothing about it), that
//! conjunct holds no subquery and calls nothing volatile (it is evaluated
//! one more time), and the item is a table. Whether it is worth adding (its
//! selectivity below 0.9, as PostgreSQL requires) and how the OR's own
//! selectivity is then corrected are decided by [`super::estimate`].

use crate::join::{and_of, conjuncts};
use crate::plan::Expr;
use crate::subquery::{columns_read, visit_expr};

/// The arms of an OR, nested ORs flattened (`a OR (b OR c)` has three).
fn arms(e: &Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::Or(v) => v.iter().for_each(|b| arms(b, out)),
        e => out.push(e.clone()),
    }
}

/// Whether evaluating `e` once more is harmless: no subquery, no aggregate,
/// no column of an enclosing level, no call that is not immutable.
fn duplicable(e: &Expr) -> bool {
    let mut ok = true;
    visit_expr(e, 0, false, &mut |e, _| match e {
        Expr::SubPlan(_) | Expr::AggRef(..) | Expr::OuterColumn { .. } | Expr::OuterAggRef { .. } => ok = false,
        Expr::Func { func, .. } if !super::fold::func_immutable(func) => ok = false,
        _ => {}
    });
    ok
}

/// For a conjunct `q` of a join level (columns of the level's row) that is
/// an OR reading two or more items, the restriction it implies on each item
/// `leaf` for which one can be derived: `(leaf, restriction)`, the
/// restriction over the level's row. `leaf_of` maps a column to its item,
/// `is_table` says whether an item is a table. Nothing for any other
/// conjunct.
pub fn implied_restrictions(q: &Expr, nleaves: usize, leaf_of: &dyn Fn(usize) -> usize, is_table: &dyn Fn(usize) -> bool) -> Vec<(usize, Expr)> {
    if !matches!(q, Expr::Or(_)) {
        return Vec::new();
    }
    let mut leaves_read: Vec<usize> = columns_read(q).into_iter().map(leaf_of).collect();
    leaves_read.sort_unstable();
    leaves_read.dedup();
    if leaves_read.len() < 2 {
        return Vec::new();
    }
    let mut branches = Vec::new();
    arms(q, &mut branches);
    let split: Vec<Vec<Expr>> = branches
        .into_iter()
        .map(|b| {
            let mut v = Vec::new();
            conjuncts(b, &mut v);
            v
        })
        .collect();
    let mut out = Vec::new();
    for leaf in leaves_read.into_iter().filter(|&l| l < nleaves && is_table(l)) {
        let only_leaf = |c: &Expr| {
            let cols = columns_read(c);
            !cols.is_empty() && cols.iter().all(|&x| leaf_of(x) == leaf) && duplicable(c)
        };
        let mut derived = Vec::with_capacity(split.len());
        for arm in &split {
            let mine: Vec<Expr> = arm.iter().filter(|c| only_leaf(c)).cloned().collect();
            match and_of(mine) {
                Some(e) => derived.push(e),
                // This arm says nothing about the item: neither does the OR.
                None => break,
            }
        }
        if derived.len() == split.len() {
            // Arms that are the same restriction need not be repeated.
            let mut seen = Vec::new();
            derived.retain(|e| {
                let f = format!("{e:?}");
                let new = !seen.contains(&f);
                seen.push(f);
                new
            });
            let r = if derived.len() == 1 { derived.pop().expect("one") } else { Expr::Or(derived) };
            out.push((leaf, r));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::CmpOp;
    use ferrogres_datum::types::{Type, Value};

    fn col(i: usize) -> Expr {
        Expr::Column(i, Type::Int4)
    }
    fn k(v: i32) -> Expr {
        Expr::Const(Value::Int4(v), Type::Int4)
    }
    fn eq(l: Expr, r: Expr) -> Expr {
        Expr::Compare { op: CmpOp::Eq, l: Box::new(l), r: Box::new(r) }
    }

    /// Two items of two columns each: columns 0, 1 are item 0; 2, 3 item 1.
    fn leaf_of(c: usize) -> usize {
        c / 2
    }

    #[test]
    fn each_item_gets_the_or_of_its_conjuncts() {
        // (c0 = 1 AND c2 = 2) OR (c0 = 2 AND c2 = 1)
        let q = Expr::Or(vec![Expr::And(vec![eq(col(0), k(1)), eq(col(2), k(2))]), Expr::And(vec![eq(col(0), k(2)), eq(col(2), k(1))])]);
        let r = implied_restrictions(&q, 2, &leaf_of, &|_| true);
        assert_eq!(r.len(), 2);
        assert_eq!(format!("{:?}", r[0].1), format!("{:?}", Expr::Or(vec![eq(col(0), k(1)), eq(col(0), k(2))])));
        assert_eq!(r[1].0, 1);
        assert_eq!(format!("{:?}", r[1].1), format!("{:?}", Expr::Or(vec![eq(col(2), k(2)), eq(col(2), k(1))])));
    }

    #[test]
    fn an_arm_without_a_restriction_of_the_item_gives_nothing() {
        // (c0 = 1 AND c2 = 2) OR c2 = 3: item 0 is unrestricted by the
        // second arm; item 1 gets c2 = 2 OR c2 = 3.
        let q = Expr::Or(vec![Expr::And(vec![eq(col(0), k(1)), eq(col(2), k(2))]), eq(col(2), k(3))]);
        let r = implied_restrictions(&q, 2, &leaf_of, &|_| true);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].0, 1);
        // A conjunct reading both items is no restriction of either.
        let q = Expr::Or(vec![eq(col(0), col(2)), Expr::And(vec![eq(col(0), k(1)), eq(col(2), k(1))])]);
        assert!(implied_restrictions(&q, 2, &leaf_of, &|_| true).is_empty());
        // Not a table: nothing.
        let q = Expr::Or(vec![Expr::And(vec![eq(col(0), k(1)), eq(col(2), k(2))]), Expr::And(vec![eq(col(0), k(2)), eq(col(2), k(1))])]);
        assert_eq!(implied_restrictions(&q, 2, &leaf_of, &|l| l == 1).len(), 1);
        // An OR over one item is a restriction already.
        assert!(implied_restrictions(&Expr::Or(vec![eq(col(0), k(1)), eq(col(1), k(2))]), 2, &leaf_of, &|_| true).is_empty());
    }
}
