//! GROUP BY GROUPING SETS / ROLLUP / CUBE and GROUPING(...) ([`crate::analyze`]
//! expands the clause, `analyze::grouping_sets`).
//!
//! The grouping is one pass over the input that feeds every grouping set at
//! once: each set has its own ordered map of groups keyed by the values of the
//! set's GROUP BY expressions (the same [`Key`] order as plain GROUP BY), so a
//! row advances one group's aggregates per set. PostgreSQL sorts or hashes per
//! set (GroupAggregate / HashAggregate / MixedAggregate); the results are the
//! same, the order of rows without ORDER BY may differ.
//!
//! The output expressions (targets, hidden sort columns, HAVING) of such a
//! query are rewritten at analysis to read a *grouped row* instead of the
//! group's first input row:
//!
//! ```text
//!   [ key 0 .. key k-1 | GROUPING call 0 .. call c-1 | first input row ... ]
//! ```
//!
//! A key slot holds the GROUP BY expression's value when the key is in the
//! set the group belongs to, NULL otherwise (so `a + 1` over a rolled-up `a`
//! is NULL, `coalesce(a, 0)` is 0); a GROUPING slot holds the call's bit mask
//! (bit `n-1-i` set when argument `i` is not grouped in the set). Column
//! references outside the GROUP BY expressions (allowed by a primary key
//! grouped in every set) read the first input row, shifted by `k + c`.
//! Invariants: every set's indices are `< keys.len()`; `calls[i]`'s indices
//! are `< keys.len()`; a group of the empty set `()` exists even without input
//! rows (its first-row part is then empty, and no rewritten expression reads it:
//! nothing is grouped in every set when `()` is one of them).

use ferrogres_datum::errors::Result;
use crate::exec::{eval_pure, Ctx, RowIter};
use crate::grouping::{AggState, Grouping, Key};
use crate::plan::{Aggregate, Expr};
use ferrogres_datum::types::Value;
use std::collections::BTreeMap;

/// The grouping sets of a query and its GROUPING calls.
#[derive(Clone, Debug)]
pub struct GroupingSets {
    /// Each set: indices into [`Grouping::keys`] (no index twice in one set;
    /// a set may occur several times: each occurrence makes its own groups).
    pub sets: Vec<Vec<usize>>,
    /// GROUPING(...) calls by placeholder number: their arguments' key indices.
    pub calls: Vec<Vec<usize>>,
}

impl GroupingSets {
    /// The grouped row's slots before the first input row.
    pub fn slots(&self, nkeys: usize) -> usize {
        nkeys + self.calls.len()
    }

    /// GROUPING(call)'s value in `set`.
    fn mask(&self, call: &[usize], set: &[usize]) -> i32 {
        call.iter().fold(0, |m, k| (m << 1) | i32::from(!set.contains(k)))
    }
}

struct SetGroups {
    index: BTreeMap<Key, usize>,
    groups: Vec<(Vec<Value>, Vec<Value>, Vec<AggState>)>,
}

/// Runs a grouping over sets: per set, one output row per group that passes
/// HAVING (sets in their expanded order, groups in the order first seen).
pub fn run(g: &Grouping, gs: &GroupingSets, aggs: &[Aggregate], input: &mut Box<dyn RowIter>, exprs: &[Expr], ctx: &mut Ctx) -> Result<Vec<Vec<Value>>> {
    let mut per_set: Vec<SetGroups> = gs.sets.iter().map(|_| SetGroups { index: BTreeMap::new(), groups: Vec::new() }).collect();
    for (set, sg) in gs.sets.iter().zip(per_set.iter_mut()) {
        if set.is_empty() {
            sg.groups.push((vec![], vec![], aggs.iter().map(AggState::new).collect()));
        }
    }
    let mut n: u64 = 0;
    while let Some(row) = input.next(ctx)? {
        n += 1;
        if n.is_multiple_of(1024) {
            ctx.env.check_interrupts()?;
        }
        let params = ctx.params;
        let keys: Vec<Value> = g.keys.iter().map(|k| eval_pure(k, &row, params, &[], ctx)).collect::<Result<_>>()?;
        for (set, sg) in gs.sets.iter().zip(per_set.iter_mut()) {
            let gi = if set.is_empty() {
                if sg.groups[0].0.is_empty() {
                    sg.groups[0].0 = row.clone();
                }
                0
            } else {
                let key = Key(set.iter().map(|i| keys[*i].clone()).collect());
                match sg.index.get(&key) {
                    Some(i) => *i,
                    None => {
                        sg.index.insert(key, sg.groups.len());
                        sg.groups.push((row.clone(), keys.clone(), aggs.iter().map(AggState::new).collect()));
                        sg.groups.len() - 1
                    }
                }
            };
            for (a, st) in aggs.iter().zip(sg.groups[gi].2.iter_mut()) {
                st.advance(a, &row, ctx)?;
            }
        }
    }
    let mut out = Vec::new();
    for (set, sg) in gs.sets.iter().zip(per_set) {
        for (first, keys, states) in sg.groups {
            let results: Vec<Value> = aggs.iter().zip(states).map(|(a, s)| s.finish(a)).collect::<Result<_>>()?;
            let mut row: Vec<Value> = (0..g.keys.len()).map(|i| if set.contains(&i) { keys[i].clone() } else { Value::Null }).collect();
            row.extend(gs.calls.iter().map(|c| Value::Int4(gs.mask(c, set))));
            row.extend(first);
            let params = ctx.params;
            if let Some(h) = &g.having {
                if eval_pure(h, &row, params, &results, ctx)? != Value::Bool(true) {
                    continue;
                }
            }
            out.push(exprs.iter().map(|e| eval_pure(e, &row, params, &results, ctx)).collect::<Result<_>>()?);
        }
    }
    Ok(out)
}

/// EXPLAIN's node name and key lines for a grouping over sets, as PostgreSQL
/// prints a hashed plan: `HashAggregate` with a `Hash Key:` per non-empty set,
/// `MixedAggregate` when the empty set `()` is among them (`Group Key: ()`),
/// `Aggregate` when every set is empty. `keys`: the GROUP BY expressions deparsed.
pub fn explain_keys(keys: &[String], gs: &GroupingSets) -> (&'static str, Vec<String>) {
    let mut lines: Vec<String> = gs
        .sets
        .iter()
        .filter(|s| !s.is_empty())
        .map(|s| format!("Hash Key: {}", s.iter().map(|i| keys[*i].as_str()).collect::<Vec<_>>().join(", ")))
        .collect();
    let empties = gs.sets.iter().filter(|s| s.is_empty()).count();
    lines.extend((0..empties).map(|_| "Group Key: ()".to_string()));
    let name = match (empties, lines.len() - empties) {
        (0, _) => "HashAggregate",
        (_, 0) => "Aggregate",
        _ => "MixedAggregate",
    };
    (name, lines)
}

/// `e` (an output expression rewritten onto the grouped row) read over the
/// input row again, for EXPLAIN: key slots become the GROUP BY expressions,
/// GROUPING slots `GROUPING(...)` placeholders over them.
pub fn input_form(e: &Expr, keys: &[Expr], gs: &GroupingSets) -> Expr {
    let slots = gs.slots(keys.len());
    match e {
        Expr::Column(i, _) if *i < keys.len() => keys[*i].clone(),
        Expr::Column(i, ty) if *i < slots => Expr::Func {
            func: crate::plan::Func::Grouping(*i - keys.len()),
            args: gs.calls[*i - keys.len()].iter().map(|k| keys[*k].clone()).collect(),
            ty: *ty,
        },
        Expr::Column(i, ty) => Expr::Column(*i - slots, *ty),
        other => {
            let mut out = other.clone();
            for c in crate::subquery::children_mut(&mut out) {
                *c = input_form(c, keys, gs);
            }
            out
        }
    }
}
