//! Costs with PostgreSQL's parameters (`optimizer/path/costsize.c`'s ideas):
//! a cost is in units of one sequential page read (`seq_page_cost`), and a
//! disabled method (`enable_* = off`) is charged [`DISABLE_COST`] instead of
//! being refused, so a plan is still found when nothing else works.

use super::PlannerSettings;

/// What a disabled method costs on top of its own cost (PostgreSQL's
/// disable_cost).
pub const DISABLE_COST: f64 = 1.0e10;

/// A sequential scan of `pages` pages and `tuples` rows evaluating `nquals`
/// restriction clauses on each row.
pub fn seq_scan(p: &PlannerSettings, pages: f64, tuples: f64, nquals: usize) -> f64 {
    let c = pages * p.seq_page_cost + tuples * (p.cpu_tuple_cost + p.cpu_operator_cost * nquals as f64);
    if p.enable_seqscan { c } else { c + DISABLE_COST }
}

/// The heap pages an index scan fetches for `tuples_fetched` rows over all
/// its executions, on a table of `pages` pages, with `cache` pages of cache
/// (effective_cache_size): the Mackert-Lohman approximation PostgreSQL uses
/// (index_pages_fetched), which counts a page read by an earlier loop as
/// still cached while the table fits.
pub fn index_pages_fetched(tuples_fetched: f64, pages: f64, cache: f64) -> f64 {
    let t = pages.max(1.0);
    let n = tuples_fetched;
    let b = cache.max(1.0);
    let pf = if t <= b {
        (2.0 * t * n / (2.0 * t + n)).min(t)
    } else {
        let lim = 2.0 * t * b / (2.0 * t - b);
        if n <= lim { 2.0 * t * n / (2.0 * t + n) } else { b + (n - lim) * (t - b) / t }
    };
    pf.ceil()
}

/// An index scan run `loops` times (the inner side of a parameterized
/// nested loop), each fetching `rows_per_loop` rows of a table of `pages`
/// pages and `tuples` rows, evaluating `nquals` more clauses per row: the
/// total over all loops. Each loop descends the tree (PostgreSQL charges
/// `log2(tuples)` comparisons plus 50 operator costs per level); the heap
/// pages come from [`index_pages_fetched`] at `random_page_cost` each.
pub fn param_index_scan(p: &PlannerSettings, tuples: f64, pages: f64, rows_per_loop: f64, loops: f64, nquals: usize) -> f64 {
    let loops = loops.max(1.0);
    let height = (tuples.max(2.0).ln() / 256f64.ln()).ceil().max(1.0);
    let descent = (tuples.max(2.0).log2() + (height + 1.0) * 50.0) * p.cpu_operator_cost;
    let fetched = rows_per_loop * loops;
    let heap_pages = index_pages_fetched(fetched, pages, p.effective_cache_size);
    let cpu = fetched * (p.cpu_index_tuple_cost + p.cpu_tuple_cost + p.cpu_operator_cost * nquals as f64);
    let c = loops * descent + heap_pages * p.random_page_cost + cpu;
    if p.enable_indexscan { c } else { c + DISABLE_COST }
}

/// A hash join: the inner (build) side hashed, the outer side probing it,
/// `nkeys` hash clauses. Beyond `work_mem` the build side goes to disk in
/// batches: its pages and the outer side's written and read once more.
pub fn hash_join(p: &PlannerSettings, outer_rows: f64, inner_rows: f64, inner_width: f64, outer_width: f64, nkeys: usize, out_rows: f64) -> f64 {
    let k = nkeys.max(1) as f64;
    let build = inner_rows * (p.cpu_operator_cost * k + p.cpu_tuple_cost);
    let probe = outer_rows * p.cpu_operator_cost * k;
    let emit = out_rows * p.cpu_tuple_cost;
    let inner_bytes = inner_rows * (inner_width + 24.0);
    let spill = if inner_bytes > p.work_mem * 1024.0 {
        let pages = (inner_bytes + outer_rows * (outer_width + 24.0)) / 8192.0;
        2.0 * pages * p.seq_page_cost
    } else {
        0.0
    };
    let c = build + probe + emit + spill;
    if p.enable_hashjoin { c } else { c + DISABLE_COST }
}

/// A nested loop whose inner side is read once and kept (every outer row
/// meets every inner row, one operator each).
pub fn nested_loop(p: &PlannerSettings, outer_rows: f64, inner_rows: f64, out_rows: f64) -> f64 {
    let c = outer_rows * inner_rows * p.cpu_operator_cost + out_rows * p.cpu_tuple_cost;
    if p.enable_nestloop { c } else { c + DISABLE_COST }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mackert_lohman_counts_cached_pages_once() {
        // A table that fits the cache: never more pages than it has.
        assert_eq!(index_pages_fetched(1_000_000.0, 100.0, 524_288.0), 100.0);
        // Few rows: about one page each.
        assert_eq!(index_pages_fetched(10.0, 10_000.0, 524_288.0), 10.0);
    }

    #[test]
    fn disabled_methods_cost_disable_cost_more() {
        let on = PlannerSettings::default();
        let off = PlannerSettings { enable_hashjoin: false, enable_nestloop: false, enable_seqscan: false, ..PlannerSettings::default() };
        assert_eq!(hash_join(&off, 10.0, 10.0, 8.0, 8.0, 1, 10.0) - hash_join(&on, 10.0, 10.0, 8.0, 8.0, 1, 10.0), DISABLE_COST);
        assert_eq!(nested_loop(&off, 10.0, 10.0, 10.0) - nested_loop(&on, 10.0, 10.0, 10.0), DISABLE_COST);
        // PostgreSQL's seq scan of 10 pages, 1000 rows, one qual: 22.5.
        assert_eq!(seq_scan(&on, 10.0, 1000.0, 1), 22.5);
        assert_eq!(seq_scan(&off, 10.0, 1000.0, 1), 22.5 + DISABLE_COST);
    }
}
