//! EXPLAIN [ANALYZE]: the plan the executor runs, printed as PostgreSQL 15's
//! text format (one `QUERY PLAN` column), with PostgreSQL's cost model.
//!
//! The executor has no separate physical plan: it runs the analyzed
//! [`plan::Query`] through a fixed pipeline (`crate::exec::run_query`). This
//! module walks the same structure and names each step as PostgreSQL names the
//! node doing that work (a table scan with the query's WHERE is `Seq Scan` with
//! `Filter`, or `Index Scan` with `Index Cond` when `index::choose_path` picks
//! an index, ...). A node kind is one arm of [`Builder::query`] /
//! [`Builder::source`]; a new executor step adds one arm there.
//!
//! ANALYZE: the statement runs with instrumentation switched on for the thread
//! ([`Instr`]); the executor wraps its row iterators in counters keyed by the
//! address of the plan structure they run (`Query`, `Source`, a DML filter).
//! When not explaining, the only cost is reading one thread-local flag per
//! operator built ([`instrumenting`]).

use crate::catalog::Table;
use ferrogres_datum::errors::{Result, SqlError};
use crate::exec::{Ctx, RowIter};
use crate::plan::*;
use ferrogres_datum::types::{Type, Value};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::time::Instant;

// ----- the statement -----------------------------------------------------------------------

#[derive(Clone, Debug, Default)]
pub struct Options {
    pub analyze: bool,
    pub verbose: bool,
    pub costs: bool,
    pub timing: bool,
    pub summary: bool,
    pub buffers: bool,
    pub format: crate::explain_format::Format,
}

#[derive(Clone, Debug)]
pub struct Explain {
    pub options: Options,
    pub stmt: Statement,
    /// `EXPLAIN EXECUTE name(args)`: the prepared statement's parameters,
    /// evaluated when the EXPLAIN runs (empty otherwise).
    pub args: Vec<Expr>,
}

/// The one output column: text, or json for `FORMAT JSON` (as PostgreSQL's).
pub fn target(e: &Explain) -> Target {
    let ty = if e.options.format == crate::explain_format::Format::Json { Type::Json } else { Type::Text };
    Target { name: "QUERY PLAN".into(), expr: Expr::Const(Value::Null, ty), typmod: -1, origin: None }
}

/// `EXPLAIN [(option [, ...])] statement`.
pub fn analyze(a: &mut crate::analyze::Analyzer, s: &pg_query::protobuf::ExplainStmt) -> Result<Statement> {
    use pg_query::NodeEnum;
    let o = options(a, s)?;
    let Some(inner) = s.query.as_ref().and_then(|n| n.node.as_ref()) else {
        return Err(SqlError::internal("EXPLAIN without a statement"));
    };
    let stmt = match inner {
        NodeEnum::SelectStmt(_) | NodeEnum::InsertStmt(_) | NodeEnum::UpdateStmt(_) | NodeEnum::DeleteStmt(_) => a.statement(inner)?,
        // Without ANALYZE only the query is planned (no table is made).
        NodeEnum::CreateTableAsStmt(_) => match a.statement(inner)? {
            Statement::CreateTableAs(c) if !o.analyze => {
                if !c.if_not_exists && crate::index::find_relation(a.backend, a.snap, c.namespace, &c.name)?.is_some() {
                    return Err(SqlError::new(b"42P07", format!("relation \"{}\" already exists", c.name)));
                }
                *c.query
            }
            st => st,
        },
        NodeEnum::ExecuteStmt(_) => return Err(SqlError::internal("EXPLAIN EXECUTE is run by the session")),
        _ => return Err(SqlError::not_supported("EXPLAIN of this statement")),
    };
    explain_of(o, stmt)
}

/// The EXPLAIN of an analyzed statement (a query or DML).
pub fn explain_of(options: Options, stmt: Statement) -> Result<Statement> {
    match &stmt {
        Statement::Query(_) | Statement::Insert { .. } | Statement::Update { .. } | Statement::Delete { .. } => {}
        Statement::InsertSelect(_) | Statement::CreateTableAs(_) => {}
        _ => return Err(SqlError::not_supported("EXPLAIN of this statement")),
    }
    Ok(Statement::Explain(Box::new(Explain { options, stmt, args: Vec::new() })))
}

/// EXPLAIN's options, checked as PostgreSQL checks them.
pub fn options(a: &crate::analyze::Analyzer, s: &pg_query::protobuf::ExplainStmt) -> Result<Options> {
    use pg_query::protobuf::a_const::Val;
    use pg_query::NodeEnum;
    let mut o = Options { costs: true, ..Default::default() };
    let mut timing = None;
    let mut summary = None;
    for opt in &s.options {
        let Some(NodeEnum::DefElem(d)) = &opt.node else { continue };
        let arg = d.arg.as_ref().and_then(|n| n.node.as_ref());
        let word = match arg {
            None => None,
            Some(NodeEnum::String(s)) => Some(s.sval.to_ascii_lowercase()),
            Some(NodeEnum::AConst(c)) => match &c.val {
                Some(Val::Sval(s)) => Some(s.sval.to_ascii_lowercase()),
                Some(Val::Ival(i)) => Some(i.ival.to_string()),
                Some(Val::Boolval(b)) => Some(b.boolval.to_string()),
                _ => None,
            },
            _ => None,
        };
        let on = match word.as_deref() {
            None | Some("true" | "on" | "1" | "yes") => true,
            Some("false" | "off" | "0" | "no") => false,
            Some(w) if d.defname == "format" => {
                use crate::explain_format::Format;
                o.format = match w {
                    "text" => Format::Text,
                    "json" => Format::Json,
                    "yaml" => Format::Yaml,
                    "xml" => Format::Xml,
                    _ => return Err(a.err_at(SqlError::new(b"22023", format!("unrecognized value for EXPLAIN option \"format\": \"{w}\"")), d.location)),
                };
                true
            }
            Some(_) => {
                return Err(SqlError::new(b"22023", format!("{} requires a Boolean value", d.defname)));
            }
        };
        match d.defname.as_str() {
            "analyze" => o.analyze = on,
            "verbose" => o.verbose = on,
            "costs" => o.costs = on,
            "timing" => timing = Some(on),
            "summary" => summary = Some(on),
            "buffers" => o.buffers = on,
            "format" => {}
            "settings" | "wal" if !on => {}
            other => return Err(a.err_at(SqlError::new(b"42601", format!("unrecognized EXPLAIN option \"{other}\"")), d.location)),
        }
    }
    if timing == Some(true) && !o.analyze {
        return Err(SqlError::new(b"22023", "EXPLAIN option TIMING requires ANALYZE"));
    }
    o.timing = timing.unwrap_or(o.analyze);
    o.summary = summary.unwrap_or(o.analyze);
    Ok(o)
}

// ----- instrumentation ----------------------------------------------------------------------

/// What one step did: rows emitted over all its runs, the runs, and (with
/// TIMING) the time to its first and last row, summed over runs.
#[derive(Clone, Copy, Debug, Default)]
pub struct Counter {
    pub rows: u64,
    pub loops: u64,
    pub first_ms: f64,
    pub total_ms: f64,
    /// A Sort step: how its last run sorted (`Sort Method: ...`).
    pub sort: Option<crate::sort::SortStats>,
    /// A hash join's table (`Buckets: ...`), under its join's key.
    pub hash: Option<crate::hashjoin::HashStats>,
}

/// Which output of a plan structure a counter counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// The rows a source produced (before the filter placed on it).
    Scan,
    /// The rows that passed the source's filter (the query's WHERE, or a join
    /// input's pushed-down conjuncts, or a DML statement's WHERE).
    Filter,
    /// Aggregation / projection output.
    Agg,
    Sort,
    /// The query's output (after LIMIT).
    Top,
}

/// The counters of one EXPLAIN ANALYZE run.
pub type Counters = HashMap<(usize, Stage), Counter>;

#[derive(Default)]
struct Instr {
    timing: bool,
    start: Option<Instant>,
    counters: HashMap<(usize, Stage), Counter>,
    /// Copies of plan structures being run (a query with its InitPlans bound)
    /// mapped to the original the printer walks.
    aliases: HashMap<usize, usize>,
}

thread_local! {
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    static INSTR: RefCell<Instr> = RefCell::new(Instr::default());
}

/// Whether the thread runs an EXPLAIN ANALYZE (one thread-local read).
#[inline]
pub fn instrumenting() -> bool {
    ACTIVE.with(|a| a.get())
}

/// Switches the thread's counters on (EXPLAIN ANALYZE).
pub fn start(timing: bool) {
    INSTR.with(|i| *i.borrow_mut() = Instr { timing, start: Some(Instant::now()), ..Default::default() });
    ACTIVE.with(|a| a.set(true));
}

/// Switches the counters off and returns them.
pub fn stop() -> Counters {
    ACTIVE.with(|a| a.set(false));
    INSTR.with(|i| std::mem::take(&mut *i.borrow_mut()).counters)
}

/// The original a copy's key counts for, through copies of copies (a
/// CREATE TABLE AS's query copied into its insert, then bound with its
/// InitPlans); a chain is as long as the copies nested, a handful at most.
fn resolve(p: usize) -> usize {
    INSTR.with(|i| {
        let i = i.borrow();
        let mut p = p;
        for _ in 0..16 {
            match i.aliases.get(&p) {
                Some(&o) if o != p => p = o,
                _ => break,
            }
        }
        p
    })
}

/// The key of a plan structure.
pub fn key<T>(p: &T) -> usize {
    p as *const T as usize
}

/// Adds `rows` rows and one run to a counter (for steps that produce their
/// rows at once). No-op unless instrumenting.
#[inline]
pub fn count(p: usize, stage: Stage, rows: u64) {
    if !instrumenting() {
        return;
    }
    count_slow(p, stage, rows, true);
}

/// Adds one row (no new run) to a counter. No-op unless instrumenting.
#[inline]
pub fn count_row(p: usize, stage: Stage) {
    if instrumenting() {
        count_slow(p, stage, 1, false);
    }
}

#[cold]
fn count_slow(p: usize, stage: Stage, rows: u64, new_loop: bool) {
    let p = resolve(p);
    INSTR.with(|i| {
        let mut i = i.borrow_mut();
        let c = i.counters.entry((p, stage)).or_default();
        c.rows += rows;
        if new_loop {
            c.loops += 1;
        }
    });
}

/// Records how a Sort step sorted (EXPLAIN ANALYZE's `Sort Method:` line). No-op
/// unless instrumenting.
#[inline]
pub fn record_sort(p: usize, stats: crate::sort::SortStats) {
    if !instrumenting() {
        return;
    }
    let p = resolve(p);
    INSTR.with(|i| i.borrow_mut().counters.entry((p, Stage::Sort)).or_default().sort = Some(stats));
}

/// Records a hash join's table figures (EXPLAIN ANALYZE's `Buckets:` line under
/// Hash). No-op unless instrumenting.
#[inline]
pub fn record_hash(p: usize, stats: crate::hashjoin::HashStats) {
    if !instrumenting() {
        return;
    }
    let p = resolve(p);
    INSTR.with(|i| i.borrow_mut().counters.entry((p, Stage::Agg)).or_default().hash = Some(stats));
}

/// Wraps an operator's output in a counter when instrumenting.
#[inline]
pub fn wrap(it: Box<dyn RowIter>, p: usize, stage: Stage) -> Box<dyn RowIter> {
    if !instrumenting() {
        return it;
    }
    wrap_slow(it, p, stage)
}

#[cold]
fn wrap_slow(it: Box<dyn RowIter>, p: usize, stage: Stage) -> Box<dyn RowIter> {
    let key = resolve(p);
    count_slow(key, stage, 0, true);
    let timing = INSTR.with(|i| i.borrow().timing);
    Box::new(Counted { input: it, key: (key, stage), timing, first: true })
}

struct Counted {
    input: Box<dyn RowIter>,
    key: (usize, Stage),
    timing: bool,
    first: bool,
}

impl RowIter for Counted {
    fn next(&mut self, ctx: &mut Ctx) -> Result<Option<Vec<Value>>> {
        let r = self.input.next(ctx)?;
        let now = if self.timing { INSTR.with(|i| i.borrow().start.map(|s| s.elapsed().as_secs_f64() * 1000.0)) } else { None };
        INSTR.with(|i| {
            let mut i = i.borrow_mut();
            let c = i.counters.entry(self.key).or_default();
            if r.is_some() {
                c.rows += 1;
            }
            if let Some(ms) = now {
                if self.first {
                    c.first_ms += ms;
                }
                if r.is_none() {
                    c.total_ms += ms;
                }
            }
        });
        self.first = false;
        Ok(r)
    }
}

/// The counter keys of a data-modifying statement's copy (its InitPlans
/// installed, `crate::subquery::statement_init_plans`) paired with the
/// original's: (copy, original).
pub fn statement_key_pairs(orig: &Statement, copy: &Statement) -> Vec<(usize, usize)> {
    match (orig, copy) {
        (Statement::Update { filter: o, .. }, Statement::Update { filter: c, .. }) | (Statement::Delete { filter: o, .. }, Statement::Delete { filter: c, .. }) => {
            vec![(key(c), key(o))]
        }
        (Statement::InsertSelect(o), Statement::InsertSelect(c)) => {
            let mut pairs = Vec::new();
            pair_query(&o.query, &c.query, &mut pairs);
            pairs
        }
        _ => Vec::new(),
    }
}

/// Runs `f` with the counter keys `pairs` (copy, original) counted as the
/// originals'.
pub fn with_key_aliases<R>(pairs: &[(usize, usize)], f: impl FnOnce() -> R) -> R {
    if !instrumenting() || pairs.is_empty() {
        return f();
    }
    INSTR.with(|i| i.borrow_mut().aliases.extend(pairs.iter().copied()));
    let r = f();
    INSTR.with(|i| {
        let mut i = i.borrow_mut();
        for (c, _) in pairs {
            i.aliases.remove(c);
        }
    });
    r
}

/// Runs `f` over a copy `copy` of `orig` (the query with its InitPlans bound)
/// with the copy's plan structures counted as the original's.
pub fn with_alias<R>(orig: &Query, copy: &Query, f: impl FnOnce() -> R) -> R {
    if !instrumenting() {
        return f();
    }
    let mut pairs = Vec::new();
    pair_query(orig, copy, &mut pairs);
    INSTR.with(|i| i.borrow_mut().aliases.extend(pairs.iter().map(|(c, o)| (*c, *o))));
    let r = f();
    INSTR.with(|i| {
        let mut i = i.borrow_mut();
        for (c, _) in &pairs {
            i.aliases.remove(c);
        }
    });
    r
}

fn pair_query(o: &Query, c: &Query, out: &mut Vec<(usize, usize)>) {
    out.push((key(c), key(o)));
    pair_source(&o.source, &c.source, out);
}

fn pair_source(o: &Source, c: &Source, out: &mut Vec<(usize, usize)>) {
    out.push((key(c), key(o)));
    match (o, c) {
        (Source::Join(a), Source::Join(b)) => {
            pair_source(&a.left, &b.left, out);
            pair_source(&a.right, &b.right, out);
        }
        (Source::Subquery(a), Source::Subquery(b)) => pair_query(a, b, out),
        (Source::SetOp(a), Source::SetOp(b)) => {
            pair_query(&a.left, &b.left, out);
            pair_query(&a.right, &b.right, out);
        }
        (Source::Recursive(a), Source::Recursive(b)) => {
            pair_query(&a.base, &b.base, out);
            pair_query(&a.step, &b.step, out);
        }
        _ => {}
    }
}

// ----- execution -----------------------------------------------------------------------------

/// Table sizes and settings the cost model reads.
pub struct CostEnv {
    pub seq_page_cost: f64,
    pub random_page_cost: f64,
    pub cpu_tuple_cost: f64,
    pub cpu_index_tuple_cost: f64,
    pub cpu_operator_cost: f64,
    /// A hash table's memory bound in bytes (`work_mem` times
    /// `hash_mem_multiplier`), for the hash join's build side.
    pub hash_mem: f64,
    sizes: HashMap<u32, (f64, f64)>,
}

impl CostEnv {
    pub fn load(env: &dyn crate::exec::Env) -> CostEnv {
        let f = |n: &str, d: f64| env.get_setting(n).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
        CostEnv {
            seq_page_cost: f("seq_page_cost", 1.0),
            random_page_cost: f("random_page_cost", 4.0),
            cpu_tuple_cost: f("cpu_tuple_cost", 0.01),
            cpu_index_tuple_cost: f("cpu_index_tuple_cost", 0.005),
            cpu_operator_cost: f("cpu_operator_cost", 0.0025),
            hash_mem: {
                let p = crate::optimizer::PlannerSettings::from_env(env);
                p.work_mem * 1024.0 * p.hash_mem_multiplier
            },
            sizes: HashMap::new(),
        }
    }
}

/// The lines of an EXPLAIN; `ran`: ANALYZE's counters and execution time
/// (the session ran the statement between [`start`] and [`stop`]).
pub fn execute(
    e: &Explain,
    backend: &ferrogres_engine::engine::Backend,
    snap: &ferrogres_engine::txn::snapshot::Snapshot,
    env: &dyn crate::exec::Env,
    ran: Option<(Counters, std::time::Duration)>,
    query_id: Option<i64>,
) -> Result<Vec<Vec<Value>>> {
    let t0 = Instant::now();
    let mut cost = CostEnv::load(env);
    let mut oids = Vec::new();
    tables_of_stmt(&e.stmt, &mut oids);
    for (oid, ncols) in oids {
        let (pages, tuples) = crate::stats::rel_size(backend, snap, oid, ncols)?;
        cost.sizes.insert(oid, (pages, tuples));
    }
    let planning_ms = t0.elapsed().as_secs_f64() * 1000.0;
    let exec_ms = ran.as_ref().map_or(0.0, |r| r.1.as_secs_f64() * 1000.0);
    let counters = ran.map(|r| r.0);
    let multi = multi_rel_stmt(&e.stmt);
    let mut b = Builder { o: &e.options, cost: &cost, counters: counters.as_ref(), qualify: e.options.verbose || multi, multi, subplans: 0, backend, snap, too_deep: false };
    let root = b.statement(&e.stmt);
    if b.too_deep {
        return Err(ferrogres_datum::stack_depth::too_deep());
    }
    if e.options.format != crate::explain_format::Format::Text {
        let doc = crate::explain_format::document(&root, &e.options, e.options.format, query_id.filter(|_| e.options.verbose), planning_ms, exec_ms);
        return Ok(vec![vec![if e.options.format == crate::explain_format::Format::Json { Value::Json(doc) } else { Value::Text(doc) }]]);
    }
    let mut lines = Vec::new();
    render(&root, &e.options, 0, true, &mut lines);
    // PostgreSQL prints it after the plan, before the summary.
    if let (true, Some(id)) = (e.options.verbose, query_id) {
        lines.push(format!("Query Identifier: {id}"));
    }
    if e.options.summary {
        lines.push(format!("Planning Time: {planning_ms:.3} ms"));
    }
    if e.options.summary && e.options.analyze {
        lines.push(format!("Execution Time: {exec_ms:.3} ms"));
    }
    Ok(lines.into_iter().map(|l| vec![Value::Text(l)]).collect())
}

fn tables_of_stmt(s: &Statement, out: &mut Vec<(u32, usize)>) {
    match s {
        Statement::Query(q) => tables_of_query(q, out),
        Statement::Insert { table, .. } | Statement::Update { table, .. } | Statement::Delete { table, .. } => {
            out.push((table.oid, table.columns.len()))
        }
        Statement::InsertSelect(i) => {
            out.push((i.table.oid, i.table.columns.len()));
            tables_of_query(&i.query, out);
        }
        Statement::CreateTableAs(c) => tables_of_stmt(&c.query, out),
        _ => {}
    }
}

fn tables_of_query(q: &Query, out: &mut Vec<(u32, usize)>) {
    fn source(s: &Source, out: &mut Vec<(u32, usize)>) {
        match s {
            Source::Table(t) if t.oid != 0 => out.push((t.oid, t.columns.len())),
            Source::Join(j) => {
                source(&j.left, out);
                source(&j.right, out);
            }
            Source::Subquery(q) => tables_of_query(q, out),
            Source::SetOp(s) => {
                tables_of_query(&s.left, out);
                tables_of_query(&s.right, out);
            }
            Source::Recursive(r) => {
                tables_of_query(&r.base, out);
                tables_of_query(&r.step, out);
            }
            _ => {}
        }
    }
    source(&q.source, out);
}

/// PostgreSQL qualifies column names when the plan reads more than one relation.
fn multi_rel_stmt(s: &Statement) -> bool {
    fn rels(q: &Query) -> usize {
        fn src(s: &Source) -> usize {
            match s {
                Source::Join(j) => src(&j.left) + src(&j.right),
                Source::Subquery(q) => rels(q),
                Source::SetOp(s) => rels(&s.left) + rels(&s.right),
                Source::Recursive(r) => rels(&r.base) + rels(&r.step),
                Source::OneRow => 0,
                _ => 1,
            }
        }
        src(&q.source)
    }
    match s {
        Statement::Query(q) => rels(q) > 1,
        Statement::InsertSelect(i) => rels(&i.query) >= 1,
        Statement::CreateTableAs(c) => multi_rel_stmt(&c.query),
        _ => false,
    }
}

// ----- the plan tree --------------------------------------------------------------------------

/// One printed node.
#[derive(Debug, Default)]
pub struct Node {
    pub name: String,
    pub details: Vec<String>,
    pub output: Vec<String>,
    pub children: Vec<Node>,
    /// InitPlans and SubPlans: (label, plan).
    pub subplans: Vec<(String, Node)>,
    pub startup: f64,
    pub total: f64,
    pub rows: f64,
    pub width: i32,
    pub actual: Option<Counter>,
    /// Rows read but rejected by the node's Filter (ANALYZE).
    pub removed: Option<u64>,
    /// Whether the node ran at all (ANALYZE); printed "never executed" otherwise.
    pub executed: bool,
}

/// A column-name scope: (relation name, column name) per input column.
type Scope = Vec<(String, String)>;

struct Builder<'a> {
    o: &'a Options,
    cost: &'a CostEnv,
    counters: Option<&'a HashMap<(usize, Stage), Counter>>,
    /// Qualify column names in conditions (several relations, or VERBOSE).
    qualify: bool,
    /// Qualify them in Output lines (several relations).
    multi: bool,
    subplans: usize,
    backend: &'a ferrogres_engine::engine::Backend,
    snap: &'a ferrogres_engine::txn::snapshot::Snapshot,
    /// The plan nests deeper than `max_stack_depth` allows: the walk stopped
    /// (its nodes return no Result) and EXPLAIN fails with 54001.
    too_deep: bool,
}

fn type_width(t: Type) -> i32 {
    match t.typlen() {
        n if n > 0 => n as i32,
        _ => 32,
    }
}

fn table_scope(t: &Table, name: &str) -> Scope {
    t.columns.iter().map(|c| (name.to_string(), c.name.clone())).collect()
}

impl Builder<'_> {
    /// Whether the executor is expected to hash the left input of inner or
    /// outer join `j` (inputs estimated as `l`, `r`): `hashjoin::start` reads
    /// both a row at a time in turn and hashes the one that ends first while
    /// the rows read fit in the hash memory, else the right one. Semi- and
    /// anti-joins always hash the right one.
    fn builds_left(&self, j: &crate::join::Join, l: &Node, r: &Node) -> bool {
        /// Bytes a row read while choosing costs beyond its values
        /// (`sort::row_mem`: its vector and an allocation).
        const ROW_OVERHEAD: f64 = 40.0;
        /// Bytes of one value slot in such a row.
        const VALUE: f64 = 32.0;
        let two_sided = matches!(j.kind, crate::join::JoinKind::Inner | crate::join::JoinKind::Left | crate::join::JoinKind::Right | crate::join::JoinKind::Full);
        // The rows are cut to the columns the join keeps as they are read.
        let cols = |left: bool, all: usize| crate::hashjoin::kept_columns(j, left).map_or(all, |k| k.len()) as f64;
        let per_pair = 2.0 * ROW_OVERHEAD + VALUE * (cols(true, j.lw) + cols(false, j.rw)) + l.width as f64 + r.width as f64;
        // One row of each input per left row, until the left one ends.
        let held = l.rows * per_pair;
        two_sided && l.rows < r.rows && held <= self.cost.hash_mem
    }

    fn counter(&self, p: usize, s: Stage) -> Option<Counter> {
        self.counters.map(|c| c.get(&(p, s)).copied().unwrap_or_default())
    }

    /// Sets a node's actual figures from a counter.
    fn actual(&self, n: &mut Node, c: Option<Counter>) {
        if let Some(c) = c {
            if let Some(s) = c.sort {
                n.details.push(s.line());
            }
            n.executed = c.loops > 0;
            n.actual = Some(c);
        }
    }

    fn statement(&mut self, s: &Statement) -> Node {
        match s {
            Statement::Query(q) => self.query(q).0,
            Statement::Insert { table, rows, .. } => {
                let child = if rows.len() == 1 {
                    Node { name: "Result".into(), rows: 1.0, total: 0.01, width: row_width(&table.columns), ..Default::default() }
                } else {
                    Node {
                        name: "Values Scan on \"*VALUES*\"".into(),
                        rows: rows.len() as f64,
                        total: rows.len() as f64 * self.cost.cpu_operator_cost * table.columns.len() as f64,
                        width: row_width(&table.columns),
                        ..Default::default()
                    }
                };
                let mut child = child;
                if self.counters.is_some() {
                    child.executed = true;
                    child.actual = Some(Counter { rows: rows.len() as u64, loops: 1, ..Default::default() });
                }
                self.modify("Insert", table, child)
            }
            Statement::InsertSelect(i) => {
                let (child, _) = self.query(&i.query);
                self.modify("Insert", &i.table, child)
            }
            // PostgreSQL shows the query's plan alone (the rows go to a
            // DestReceiver, not through a ModifyTable node).
            Statement::CreateTableAs(c) => self.statement(&c.query),
            Statement::Update { table, filter, .. } | Statement::Delete { table, filter, .. } => {
                let scope = table_scope(table, &table.name);
                let mut scan = self.table_scan(table, filter.as_ref(), &scope, None);
                if self.counters.is_some() {
                    let p = key(filter);
                    let raw = self.counter(p, Stage::Scan).unwrap_or_default();
                    let passed = self.counter(p, Stage::Filter).unwrap_or_default();
                    let shown = if filter.is_some() { passed } else { raw };
                    self.actual(&mut scan, Some(Counter { loops: raw.loops, ..shown }));
                    if filter.is_some() && scan.details.iter().any(|d| d.starts_with("Filter:")) {
                        scan.removed = Some(raw.rows.saturating_sub(passed.rows));
                    }
                }
                let what = if matches!(s, Statement::Update { .. }) { "Update" } else { "Delete" };
                self.modify(what, table, scan)
            }
            _ => Node { name: "Result".into(), ..Default::default() },
        }
    }

    fn modify(&self, what: &str, table: &Table, child: Node) -> Node {
        let name = if self.o.verbose { format!("{what} on public.{}", table.name) } else { format!("{what} on {}", table.name) };
        let mut n = Node { name, startup: 0.0, total: child.total + child.rows * self.cost.cpu_tuple_cost, rows: 0.0, width: 0, ..Default::default() };
        if self.counters.is_some() {
            n.executed = true;
            n.actual = Some(Counter { rows: 0, loops: 1, ..Default::default() });
        }
        n.children.push(child);
        n
    }

    /// The nodes of a query, bottom up as `exec::run_query_inner` builds its
    /// operators; also the scope of its output columns.
    fn query(&mut self, q: &Query) -> (Node, Scope) {
        if self.too_deep || ferrogres_datum::stack_depth::stack_is_too_deep() {
            self.too_deep = true;
            return (Node::default(), Vec::new());
        }
        let qk = key(q);
        let (mut node, scope) = self.source_with_filter(q);
        let qual = |b: &Builder, e: &Expr, sc: &Scope| deparse(e, sc, b.qualify, &q.aggregates);
        let mut exprs: Vec<&Expr> = q.targets.iter().map(|t| &t.expr).collect();
        exprs.extend(q.hidden.iter());
        let outputs: Vec<String> = q.targets.iter().map(|t| deparse(&t.expr, &scope, self.multi, &q.aggregates)).collect();
        // A plain column's width is its table's average (pg_statistic's
        // stawidth), as PostgreSQL estimates it; other expressions by type.
        let col_widths = self.row_col_widths(&q.source);
        let width: i32 = q
            .targets
            .iter()
            .map(|t| match (&t.expr, &col_widths) {
                (Expr::Column(i, _), Some(ws)) if *i < ws.len() => ws[*i],
                _ => type_width(t.expr.ty()),
            })
            .sum();
        // Subqueries in expressions.
        let mut subs = Vec::new();
        for e in exprs.iter().copied().chain(q.filter.iter()) {
            self.collect_subplans(e, &mut subs);
        }
        let srfs = exprs.iter().any(|e| crate::project_set::contains_srf(e));
        if let Some(g) = &q.grouping {
            let keys: Vec<String> = g.keys.iter().map(|k| qual(self, k, &scope)).collect();
            let groups = if keys.is_empty() { 1.0 } else { (node.rows / 10.0).clamp(1.0, 200.0) };
            let mut n = Node {
                name: if keys.is_empty() { "Aggregate".into() } else { "HashAggregate".into() },
                startup: node.total + node.rows * self.cost.cpu_operator_cost * (q.aggregates.len().max(1)) as f64,
                rows: groups,
                width,
                ..Default::default()
            };
            n.total = n.startup + groups * self.cost.cpu_tuple_cost;
            if let Some(gs) = &g.sets {
                let (name, lines) = crate::grouping_sets::explain_keys(&keys, gs);
                n.name = name.into();
                n.details.extend(lines);
            } else if !keys.is_empty() {
                n.details.push(format!("Group Key: {}", keys.join(", ")));
            }
            if let Some(h) = &g.having {
                let h = match &g.sets {
                    Some(gs) => crate::grouping_sets::input_form(h, &g.keys, gs),
                    None => h.clone(),
                };
                n.details.push(format!("Filter: {}", qual(self, &h, &scope)));
            }
            self.actual(&mut n, self.counter(qk, Stage::Agg));
            n.children.push(node);
            node = n;
        } else if !q.aggregates.is_empty() {
            let mut n = Node { name: "Aggregate".into(), rows: 1.0, width, ..Default::default() };
            n.startup = node.total + node.rows * self.cost.cpu_operator_cost * q.aggregates.len() as f64;
            n.total = n.startup + self.cost.cpu_tuple_cost;
            self.actual(&mut n, self.counter(qk, Stage::Agg));
            n.children.push(node);
            node = n;
        } else if srfs {
            let mut n = Node { name: "ProjectSet".into(), startup: node.startup, total: node.total + 10.0 * 0.01, rows: node.rows * 10.0, width, ..Default::default() };
            self.actual(&mut n, self.counter(qk, Stage::Agg));
            n.children.push(node);
            node = n;
        } else {
            node.width = width;
        }
        if self.o.verbose {
            node.output = outputs;
        }
        // Sort (skipped when an ordered index scan already yields the order).
        let ordered = ordered_index(q).is_some();
        let sort_keys: Vec<String> = q
            .order
            .iter()
            .map(|k| {
                let e = exprs.get(k.column).copied();
                let mut s = e.map_or("?".into(), |e| qual(self, e, &scope));
                if matches!(e, Some(Expr::Const(..))) {
                    s = format!("({s})");
                }
                if k.desc {
                    s.push_str(" DESC");
                    if !k.nulls_first {
                        s.push_str(" NULLS LAST");
                    }
                } else if k.nulls_first {
                    s.push_str(" NULLS FIRST");
                }
                s
            })
            .collect();
        if let Some(keys) = &q.distinct {
            let mut sort = self.sort_node(&node, &sort_keys, keys, &exprs, &scope, q);
            self.actual(&mut sort, self.counter(qk, Stage::Sort));
            let mut n = Node { name: "Unique".into(), startup: sort.startup, total: sort.total + sort.rows * self.cost.cpu_operator_cost, rows: sort.rows, width, ..Default::default() };
            // The executor emits DISTINCT's rows once sorted: one counter for both
            // (the Sort Method line is the Sort's).
            self.actual(&mut n, self.counter(qk, Stage::Sort).map(|c| Counter { sort: None, ..c }));
            sort.children.push(node);
            n.children.push(sort);
            node = n;
        } else if !q.order.is_empty() && !ordered {
            let mut sort = self.sort_node(&node, &sort_keys, &[], &exprs, &scope, q);
            self.actual(&mut sort, self.counter(qk, Stage::Sort));
            sort.children.push(node);
            node = sort;
        }
        if q.limit.is_some() || q.offset.is_some() {
            let lim = match &q.limit {
                Some(Expr::Const(v, _)) => v.as_i64().map(|n| n as f64),
                _ => None,
            };
            let rows = lim.map_or(node.rows, |l| l.min(node.rows));
            let frac = if node.rows > 0.0 { rows / node.rows } else { 1.0 };
            let mut n = Node { name: "Limit".into(), startup: node.startup, total: node.startup + (node.total - node.startup) * frac, rows, width, ..Default::default() };
            self.actual(&mut n, self.counter(qk, Stage::Top));
            n.children.push(node);
            node = n;
        }
        node.subplans.extend(subs);
        (node, q.targets.iter().map(|t| (String::new(), t.name.clone())).collect())
    }

    fn sort_node(&self, input: &Node, keys: &[String], distinct: &[usize], exprs: &[&Expr], scope: &Scope, q: &Query) -> Node {
        let mut keys = keys.to_vec();
        for &c in distinct {
            if !q.order.iter().any(|k| k.column == c) {
                if let Some(e) = exprs.get(c) {
                    keys.push(deparse(e, scope, self.qualify, &q.aggregates));
                }
            }
        }
        let n = input.rows.max(1.0);
        let startup = input.total + 2.0 * self.cost.cpu_operator_cost * n * n.log2().max(1.0);
        let mut s = Node { name: "Sort".into(), startup, total: startup + n * self.cost.cpu_operator_cost, rows: input.rows, width: input.width, ..Default::default() };
        s.details.push(format!("Sort Key: {}", keys.join(", ")));
        s
    }

    /// The query's source with its WHERE (a scan node with Filter).
    fn source_with_filter(&mut self, q: &Query) -> (Node, Scope) {
        let qk = key(q);
        let sk = key(&q.source);
        match &q.source {
            Source::Table(t) if t.oid != 0 => {
                let scope = table_scope(t, &t.name);
                let mut n = self.table_scan(t, q.filter.as_ref(), &scope, ordered_index(q));
                if self.counters.is_some() {
                    let raw = self.counter(sk, Stage::Scan).unwrap_or_default();
                    let passed = if q.filter.is_some() { self.counter(qk, Stage::Filter).unwrap_or_default() } else { raw };
                    self.actual(&mut n, Some(Counter { loops: raw.loops, ..passed }));
                    if n.details.iter().any(|d| d.starts_with("Filter:")) {
                        n.removed = Some(raw.rows.saturating_sub(passed.rows));
                    }
                }
                (n, scope)
            }
            _ => {
                let (mut n, scope) = self.source(&q.source);
                if let Some(f) = &q.filter {
                    let text = deparse(f, &scope, self.qualify, &[]);
                    let label = if matches!(q.source, Source::OneRow) { "One-Time Filter" } else { "Filter" };
                    n.details.push(format!("{label}: {text}"));
                    n.rows *= 0.33;
                    if self.counters.is_some() {
                        let raw = self.counter(sk, Stage::Scan).unwrap_or_default();
                        let passed = self.counter(qk, Stage::Filter).unwrap_or_default();
                        self.actual(&mut n, Some(Counter { loops: raw.loops, ..passed }));
                        if label == "Filter" {
                            n.removed = Some(raw.rows.saturating_sub(passed.rows));
                        }
                    }
                } else if n.actual.is_none() {
                    self.actual(&mut n, self.counter(sk, Stage::Scan));
                }
                (n, scope)
            }
        }
    }

    /// A source other than a query's own table scan; join inputs count under
    /// the source's key (Scan: rows made, Filter: rows passing its filter).
    fn source(&mut self, s: &Source) -> (Node, Scope) {
        if self.too_deep || ferrogres_datum::stack_depth::stack_is_too_deep() {
            self.too_deep = true;
            return (Node::default(), Vec::new());
        }
        let sk = key(s);
        match s {
            Source::OneRow => (Node { name: "Result".into(), total: 0.01, rows: 1.0, ..Default::default() }, Vec::new()),
            Source::Table(t) => {
                let scope = table_scope(t, &t.name);
                (self.table_scan(t, None, &scope, None), scope)
            }
            Source::Virtual(_) => (Node { name: "Function Scan on pg_catalog_view".into(), total: 10.0, rows: 1000.0, ..Default::default() }, Vec::new()),
            Source::Series(..) => {
                let mut n = Node { name: "ProjectSet".into(), total: 5.02, rows: 1000.0, width: 4, ..Default::default() };
                n.children.push(Node { name: "Result".into(), total: 0.01, rows: 1.0, ..Default::default() });
                (n, vec![(String::new(), "generate_series".into())])
            }
            Source::Function(f) => {
                let name = if f.unnest.is_some() { "unnest" } else { "generate_series" };
                let mut n = Node { name: format!("Function Scan on {name}"), total: 10.0, rows: 1000.0, width: type_width(f.ty), ..Default::default() };
                if self.o.verbose {
                    n.name = format!("Function Scan on pg_catalog.{name}");
                }
                (n, vec![(name.to_string(), name.to_string())])
            }
            Source::Values(rows) => {
                let width = rows.first().map_or(0, |r| r.iter().map(|e| type_width(e.ty())).sum());
                let n = Node {
                    name: "Values Scan on \"*VALUES*\"".into(),
                    total: rows.len() as f64 * 0.0125,
                    rows: rows.len() as f64,
                    width,
                    ..Default::default()
                };
                let ncols = rows.first().map_or(0, |r| r.len());
                (n, (1..=ncols).map(|i| ("*VALUES*".to_string(), format!("column{i}"))).collect())
            }
            Source::WindowAgg(w) => {
                // PostgreSQL's WindowAgg (one node per window here; the input's
                // sort by partition and order keys is part of it).
                let (child, _) = self.query(&w.input);
                let mut n = Node {
                    name: "WindowAgg".into(),
                    startup: child.total,
                    total: child.total + child.rows * 0.0025 * w.funcs.len().max(1) as f64,
                    rows: child.rows,
                    width: child.width + w.funcs.iter().map(|f| type_width(f.ty)).sum::<i32>(),
                    ..Default::default()
                };
                n.children.push(child);
                let inner_names: Scope = w.input.targets.iter().map(|t| (String::new(), t.name.clone())).collect();
                let mut scope: Scope = w.funcs.iter().map(|f| (String::new(), crate::window::func_name(&f.kind).to_string())).collect();
                scope.extend(inner_names);
                (n, scope)
            }
            Source::Subquery(q) => {
                let (n, _) = self.query(q);
                // PostgreSQL pulls a simple subquery up into its parent; the
                // subquery's plan stands for it. Its columns keep their names.
                (n, q.targets.iter().map(|t| ("unnamed_subquery".to_string(), t.name.clone())).collect())
            }
            Source::Join(j) => {
                let (mut l, mut ls) = self.join_input(&j.left, &j.left_filter);
                let (mut r, rs) = self.join_input(&j.right, &j.right_filter);
                ls.extend(rs.iter().cloned());
                let scope = ls;
                let kind = match j.kind {
                    crate::join::JoinKind::Inner => "",
                    crate::join::JoinKind::Left => " Left",
                    crate::join::JoinKind::Right => " Right",
                    crate::join::JoinKind::Full => " Full",
                    crate::join::JoinKind::Semi => " Semi",
                    crate::join::JoinKind::Anti => " Anti",
                };
                // The columns read above the join (`projection`), else all.
                let width = match (&j.plan.out, self.row_col_widths(s)) {
                    (Some(out), Some(ws)) => ws.iter().zip(out).filter(|(_, &o)| o).map(|(w, _)| *w).sum(),
                    _ => l.width + r.width,
                };
                let mut n = Node { width, ..Default::default() };
                let param = match j.plan.method {
                    crate::optimizer::JoinMethod::ParamIndex { index } => crate::nestloop::probe_keys(j, index).map(|k| (index, k)),
                    _ => None,
                };
                match (&j.hash, param) {
                    (Some((lk, rk)), Some((index, keys))) => {
                        // A parameterized nested loop: the inner index scan
                        // runs once per outer row with its key values.
                        n.name = "Nested Loop".into();
                        if let Source::Table(t) = &j.right {
                            let rscope: Scope = scope[j.lw..].to_vec();
                            let ix = &t.indexes[index];
                            let rel = if self.o.verbose { format!("public.{}", t.name) } else { t.name.clone() };
                            let conds: Vec<String> = keys
                                .used
                                .iter()
                                // The indexed column unqualified, as PostgreSQL prints it.
                                .map(|&i| format!("({} = {})", strip(deparse(&rk[i], &rscope, false, &[])), strip(deparse(&lk[i], &scope, self.qualify, &[]))))
                                .collect();
                            let loops = l.rows.max(1.0);
                            let per_loop = (j.plan.rows.unwrap_or(l.rows) / loops).max(1.0);
                            let inner_total = j.plan.cost.map_or(r.total, |c| ((c - l.total) / loops).max(0.0));
                            let mut inner = Node {
                                name: format!("Index Scan using {} on {rel}", ix.name),
                                startup: 0.29_f64.min(inner_total),
                                total: inner_total,
                                rows: per_loop,
                                width: r.width,
                                ..Default::default()
                            };
                            inner.details.push(format!("Index Cond: {}", and_list(conds)));
                            if let Some(f) = &j.right_filter {
                                inner.details.push(format!("Filter: {}", deparse(f, &rscope, self.qualify, &[])));
                            }
                            let others: Vec<String> = (0..lk.len())
                                .filter(|i| !keys.used.contains(i))
                                .map(|i| format!("({} = {})", strip(deparse(&lk[i], &scope, self.qualify, &[])), strip(deparse(&rk[i], &rscope, self.qualify, &[]))))
                                .collect();
                            if !others.is_empty() {
                                n.details.push(format!("Join Filter: {}", and_list(others)));
                            }
                            if self.counters.is_some() {
                                let rk_key = key(&j.right);
                                let raw = self.counter(rk_key, Stage::Scan);
                                let passed = if j.right_filter.is_some() { self.counter(rk_key, Stage::Filter).map(|c| Counter { loops: raw.as_ref().map_or(0, |r| r.loops), ..c }) } else { raw };
                                self.actual(&mut inner, passed);
                            }
                            r = inner;
                        }
                        n.rows = j.plan.rows.unwrap_or(l.rows);
                        n.startup = l.startup;
                        n.total = j.plan.cost.unwrap_or(l.total + l.rows * r.total);
                    }
                    (Some((lk, rk)), None) if !j.lateral => {
                        let (lrows, rrows) = (l.rows, r.rows);
                        // A join whose left input the executor hashes
                        // (`hashjoin::start`: the input that ends first) is
                        // printed with the inputs swapped, as PostgreSQL
                        // hashes its inner side: the right input probes, the
                        // left one is the Hash (a left join so is a Hash
                        // Right Join).
                        let swap = self.builds_left(j, &l, &r);
                        let kind = match (swap, j.kind) {
                            (true, crate::join::JoinKind::Left) => " Right",
                            (true, crate::join::JoinKind::Right) => " Left",
                            _ => kind,
                        };
                        n.name = format!("Hash{kind} Join");
                        let rscope: Scope = scope[j.lw..].to_vec();
                        let conds: Vec<String> = lk
                            .iter()
                            .zip(rk)
                            .map(|(a, b)| {
                                let (a, b) = (strip(deparse(a, &scope, self.qualify, &[])), strip(deparse(b, &rscope, self.qualify, &[])));
                                if swap { format!("({b} = {a})") } else { format!("({a} = {b})") }
                            })
                            .collect();
                        n.details.push(format!("Hash Cond: {}", and_list(conds)));
                        if swap {
                            std::mem::swap(&mut l, &mut r);
                        }
                        let hash_rows = r.rows;
                        let mut h = Node { name: "Hash".into(), startup: r.total, total: r.total, rows: r.rows, width: r.width, ..Default::default() };
                        if self.counters.is_some() {
                            h.actual = r.actual;
                            h.executed = r.executed;
                            if let Some(hs) = self.counter(key(&**j), Stage::Agg).and_then(|c| c.hash) {
                                h.details.push(hs.line());
                            }
                        }
                        h.children.push(r);
                        r = h;
                        n.rows = j.plan.rows.or_else(|| semi_rows(j, lrows)).or_else(|| outer_rows(j, lrows, rrows)).unwrap_or_else(|| (l.rows * hash_rows / hash_rows.max(l.rows).max(1.0)).max(1.0));
                        n.startup = r.total;
                        n.total = j.plan.cost.unwrap_or(r.total + l.total + l.rows * self.cost.cpu_operator_cost + n.rows * self.cost.cpu_tuple_cost);
                    }
                    _ => {
                        n.name = format!("Nested Loop{kind} Join");
                        if kind.is_empty() {
                            n.name = "Nested Loop".into();
                        }
                        n.rows = j.plan.rows.or_else(|| semi_rows(j, l.rows)).unwrap_or_else(|| (l.rows * r.rows * if j.cond.is_some() { 0.33 } else { 1.0 }).max(1.0));
                        n.total = j.plan.cost.unwrap_or(l.total + r.total + l.rows * r.rows * self.cost.cpu_operator_cost);
                        // The inner side is read once and kept (Materialize).
                        if !j.lateral && r.name != "Result" && !r.name.starts_with("Values") {
                            let mut m = Node { name: "Materialize".into(), startup: r.startup, total: r.total + r.rows * 0.005, rows: r.rows, width: r.width, ..Default::default() };
                            if let Some(c) = r.actual {
                                m.executed = true;
                                m.actual = Some(Counter { rows: c.rows * l.actual.map_or(1, |x| x.rows), loops: l.actual.map_or(1, |x| x.rows), ..c });
                            }
                            m.children.push(r);
                            r = m;
                        }
                    }
                }
                // The hash keys are not part of `cond` (`join::place_conditions`
                // takes them out): what is left is the Join Filter.
                if let Some(c) = &j.cond {
                    let text = deparse(c, &scope, self.qualify, &[]);
                    n.details.push(format!("Join Filter: {text}"));
                }
                if self.counters.is_some() {
                    let c = self.counter(sk, Stage::Scan);
                    self.actual(&mut n, c);
                    if l.actual.is_none() {
                        self.actual(&mut l, Some(Counter::default()));
                    }
                }
                // A semi- or anti-join returns the left row alone, at most once.
                let scope = if j.kind.left_only() {
                    n.width = l.width;
                    n.rows = n.rows.min(l.rows).max(1.0);
                    scope[..j.lw.min(scope.len())].to_vec()
                } else {
                    scope
                };
                n.children.push(l);
                n.children.push(r);
                (n, scope)
            }
            Source::SetOp(s) => {
                let (l, ls) = self.query(&s.left);
                let (r, _) = self.query(&s.right);
                let rows = l.rows + r.rows;
                let width = l.width.max(r.width);
                let mut app = Node { name: "Append".into(), total: l.total + r.total, rows, width, ..Default::default() };
                let ncols = s.left.targets.len();
                app.children.push(l);
                app.children.push(r);
                let scope: Scope = ls.iter().map(|(_, c)| ("*SELECT*".to_string(), c.clone())).collect();
                let keys: Vec<String> = (0..ncols).map(|i| set_col(&s.left, i)).collect();
                let n = match (s.kind, s.all) {
                    (crate::setop::SetOpKind::Union, true) => app,
                    (crate::setop::SetOpKind::Union, false) => {
                        let mut sort = Node { name: "Sort".into(), startup: app.total, total: app.total + rows * 0.01, rows, width, ..Default::default() };
                        sort.details.push(format!("Sort Key: {}", keys.join(", ")));
                        sort.children.push(app);
                        let mut u = Node { name: "Unique".into(), startup: sort.startup, total: sort.total, rows, width, ..Default::default() };
                        u.children.push(sort);
                        u
                    }
                    (kind, all) => {
                        let op = if kind == crate::setop::SetOpKind::Intersect { "Intersect" } else { "Except" };
                        let mut h = Node { name: format!("HashSetOp {op}{}", if all { " All" } else { "" }), startup: app.total, total: app.total, rows, width, ..Default::default() };
                        h.children.push(app);
                        h
                    }
                };
                let mut n = n;
                self.actual(&mut n, self.counter(sk, Stage::Scan));
                (n, scope)
            }
            Source::Recursive(r) => {
                let (b, scope) = self.query(&r.base);
                let (st, _) = self.query(&r.step);
                let mut n = Node { name: "Recursive Union".into(), total: b.total + st.total * 10.0, rows: b.rows * 10.0 + st.rows, width: b.width, ..Default::default() };
                n.children.push(b);
                n.children.push(st);
                self.actual(&mut n, self.counter(sk, Stage::Scan));
                (n, scope)
            }
            Source::WorkTable(_) => (Node { name: "WorkTable Scan".into(), total: 0.2, rows: 10.0, ..Default::default() }, Vec::new()),
        }
    }

    fn join_input(&mut self, s: &Source, filter: &Option<Expr>) -> (Node, Scope) {
        let sk = key(s);
        match s {
            Source::Table(t) => {
                let scope = table_scope(t, &t.name);
                let mut n = self.table_scan(t, filter.as_ref(), &scope, None);
                if self.counters.is_some() {
                    let raw = self.counter(sk, Stage::Scan).unwrap_or_default();
                    let passed = if filter.is_some() { self.counter(sk, Stage::Filter).unwrap_or_default() } else { raw };
                    self.actual(&mut n, Some(Counter { loops: raw.loops, ..passed }));
                    if n.details.iter().any(|d| d.starts_with("Filter:")) {
                        n.removed = Some(raw.rows.saturating_sub(passed.rows));
                    }
                }
                (n, scope)
            }
            other => {
                let (mut n, scope) = self.source(other);
                if let Some(f) = filter {
                    n.details.push(format!("Filter: {}", deparse(f, &scope, self.qualify, &[])));
                }
                if self.counters.is_some() && n.actual.is_none() {
                    let st = if filter.is_some() { Stage::Filter } else { Stage::Scan };
                    self.actual(&mut n, self.counter(sk, st));
                }
                (n, scope)
            }
        }
    }

    /// A scan of `t` with `filter`: an index scan if the executor takes one.
    fn table_scan(&mut self, t: &Table, filter: Option<&Expr>, scope: &Scope, ordered: Option<(usize, bool)>) -> Node {
        let (pages, tuples) = self.cost.sizes.get(&t.oid).copied().unwrap_or((10.0, 1000.0));
        let width = self.scan_width(t);
        let c = self.cost;
        let rel = if self.o.verbose { format!("public.{}", t.name) } else { t.name.clone() };
        let qual = |e: &Expr| deparse(e, scope, self.qualify, &[]);
        let parts: Vec<&Expr> = match filter {
            Some(Expr::And(v)) => v.iter().collect(),
            Some(e) => vec![e],
            None => vec![],
        };
        let stats = crate::stats::get(self.backend, self.snap, t);
        let sel = crate::stats::selectivity_with(t, stats.as_deref(), filter, &[]);
        let rows = (tuples * sel).round().max(1.0);
        let path = crate::stats::choose_scan_loaded(self.backend, self.snap, t, filter, &[]);
        if let Some((ix, backward)) = ordered {
            let ixi = &t.indexes[ix];
            let mut n = Node {
                name: format!("Index Scan{} using {} on {rel}", if backward { " Backward" } else { "" }, ixi.name),
                startup: 0.29,
                total: 0.29 + tuples * (c.random_page_cost / 4.0 + c.cpu_index_tuple_cost + c.cpu_tuple_cost),
                rows,
                width,
                ..Default::default()
            };
            if let Some(f) = filter {
                n.details.push(format!("Filter: {}", qual(f)));
            }
            return n;
        }
        if let Some((k, _)) = crate::index::tid_qual(t, filter) {
            // PostgreSQL's cost of fetching one tuple by its place.
            let mut n = Node {
                name: format!("Tid Scan on {rel}"),
                startup: 0.0,
                total: c.random_page_cost + c.cpu_tuple_cost + c.cpu_operator_cost * (parts.len() - 1) as f64,
                rows: 1.0,
                width,
                ..Default::default()
            };
            n.details.push(format!("TID Cond: {}", qual(parts[k])));
            let rest: Vec<String> = parts.iter().enumerate().filter(|(j, _)| *j != k).map(|(_, p)| qual(p)).collect();
            if !rest.is_empty() {
                n.details.push(format!("Filter: {}", and_list(rest)));
            }
            return n;
        }
        if let Some(path) = path {
            let ixi = &t.indexes[path.index];
            // The conjuncts the index answers: equalities on its prefix, one range.
            let hash = ixi.am == crate::index::IndexAm::Hash;
            let key_cols: Vec<usize> = ixi.columns.iter().take(path.eq.len() + 1).copied().collect();
            let mut conds = Vec::new();
            let mut rest = Vec::new();
            for p in &parts {
                let used = match p {
                    Expr::Compare { op, l, r } if *op != CmpOp::Ne => {
                        let col = crate::stats::column_of(l).filter(|_| crate::stats::row_free(r)).or_else(|| crate::stats::column_of(r).filter(|_| crate::stats::row_free(l)));
                        col.is_some_and(|col| {
                            let k = key_cols.iter().position(|c| *c == col);
                            match k {
                                Some(k) if k < path.eq.len() => *op == CmpOp::Eq,
                                Some(_) => !hash && (path.lower.is_some() || path.upper.is_some()),
                                None => false,
                            }
                        })
                    }
                    _ => false,
                };
                if used { conds.push(qual(p)) } else { rest.push(qual(p)) }
            }
            let irows = rows.max(1.0);
            let total = match &stats {
                Some(s) => crate::stats::index_cost(t, filter, &[], s, &path),
                None => irows.min(pages) * c.random_page_cost + irows * (c.cpu_index_tuple_cost + c.cpu_tuple_cost),
            };
            // A hash index has no tree to descend before its first entry.
            let startup = if hash { 0.0 } else { 0.29 };
            let mut n = Node {
                name: format!("Index Scan using {} on {rel}", ixi.name),
                startup,
                total: startup + total,
                rows: irows,
                width,
                ..Default::default()
            };
            if !conds.is_empty() {
                n.details.push(format!("Index Cond: {}", and_list(conds)));
            }
            if !rest.is_empty() {
                n.details.push(format!("Filter: {}", and_list(rest)));
            }
            return n;
        }
        let mut n = Node {
            name: format!("Seq Scan on {rel}"),
            startup: 0.0,
            total: pages * c.seq_page_cost + tuples * (c.cpu_tuple_cost + c.cpu_operator_cost * parts.len() as f64),
            rows: if filter.is_some() { rows } else { tuples },
            width,
            ..Default::default()
        };
        if let Some(f) = filter {
            n.details.push(format!("Filter: {}", qual(f)));
        }
        n
    }

    fn collect_subplans(&mut self, e: &Expr, out: &mut Vec<(String, Node)>) {
        if let Expr::SubPlan(sp) = e {
            self.subplans += 1;
            let label = if sp.correlated { format!("SubPlan {}", self.subplans) } else { format!("InitPlan {} (returns ${})", self.subplans, self.subplans - 1) };
            let saved = self.qualify;
            let (mut n, _) = self.query(&sp.query);
            self.qualify = saved;
            // A subquery runs on a copy of its plan (its InitPlan result or
            // its outer row bound in), which the counters do not follow:
            // no actual figures for it.
            fn uncounted(n: &mut Node) {
                n.actual = None;
                n.executed = true;
                n.removed = None;
                n.children.iter_mut().for_each(uncounted);
                n.subplans.iter_mut().for_each(|s| uncounted(&mut s.1));
            }
            if self.counters.is_some() {
                uncounted(&mut n);
            }
            out.push((label, n));
            if let Some(l) = &sp.lhs {
                self.collect_subplans(l, out);
            }
            return;
        }
        for c in crate::grouping::children(e) {
            self.collect_subplans(c, out);
        }
    }
}

/// The index `exec` reads in order for ORDER BY ... LIMIT (`index::ordered_scan`'s test).
fn ordered_index(q: &Query) -> Option<(usize, bool)> {
    let Source::Table(t) = &q.source else { return None };
    if q.grouping.is_some() || q.distinct.is_some() || !q.aggregates.is_empty() || q.order.len() != 1 || q.limit.is_none() {
        return None;
    }
    let k = &q.order[0];
    if k.nulls_first != k.desc {
        return None;
    }
    let e = if k.column < q.targets.len() { &q.targets[k.column].expr } else { &q.hidden[k.column - q.targets.len()] };
    let Expr::Column(col, _) = e else { return None };
    let ix = t.indexes.iter().position(|ix| ix.columns[0] == *col && !ix.desc[0])?;
    Some((ix, k.desc))
}

fn set_col(q: &Query, i: usize) -> String {
    match q.targets.get(i).map(|t| &t.expr) {
        Some(Expr::Const(..)) | None => format!("({})", q.targets.get(i).map_or("?".into(), |t| deparse(&t.expr, &Vec::new(), false, &[]))),
        Some(_) => format!("\"*SELECT*\".{}", q.targets[i].name),
    }
}

impl Builder<'_> {
    /// The average width of each column of `t` (pg_statistic's stawidth when
    /// ANALYZE stored one, else by type), as PostgreSQL's `get_attavgwidth`.
    fn table_col_widths(&self, t: &Table) -> Vec<i32> {
        let stats = crate::stats::get(self.backend, self.snap, t);
        (0..t.columns.len())
            .map(|i| match stats.as_ref().and_then(|s| s.cols.get(i)).and_then(|c| c.as_ref()) {
                Some(c) if c.width > 0 => c.width,
                _ => type_width(t.columns[i].ty),
            })
            .collect()
    }

    /// The width of a scan of `t`: the columns it outputs (its projection's
    /// `out`, [`crate::optimizer::projection`]), all without one.
    fn scan_width(&self, t: &Table) -> i32 {
        let ws = self.table_col_widths(t);
        crate::optimizer::projection::scan_width(t, &|i| ws[i] as f64) as i32
    }

    /// The width of each column of `s`'s row, where it is known column by
    /// column (tables, joins of them, subqueries' typed targets).
    fn row_col_widths(&self, s: &Source) -> Option<Vec<i32>> {
        match s {
            Source::Table(t) => Some(self.table_col_widths(t)),
            Source::Join(j) => {
                let mut l = self.row_col_widths(&j.left)?;
                if j.kind.left_only() {
                    return Some(l);
                }
                l.extend(self.row_col_widths(&j.right)?);
                Some(l)
            }
            Source::Subquery(q) => Some(q.targets.iter().map(|t| type_width(t.expr.ty())).collect()),
            _ => None,
        }
    }
}

fn row_width(cols: &[crate::catalog::Column]) -> i32 {
    cols.iter().map(|c| type_width(c.ty)).sum()
}

/// `a AND b` conjuncts as PostgreSQL prints a qual list: one is bare, several
/// are parenthesized together.
fn and_list(v: Vec<String>) -> String {
    if v.len() == 1 { v.into_iter().next().expect("one") } else { format!("({})", v.join(" AND ")) }
}

/// A semi-join's rows: its outer rows times the fraction that has a match
/// (`JoinPlan::semi_frac`, PostgreSQL's eqjoinsel_semi); an anti-join's,
/// times the fraction that has none. `None` when not estimated.
/// The estimated rows of an outer join from its keys' selectivity
/// (`JoinPlan::outer_sel`): the matched pairs, and at least every row of
/// each preserved side, as PostgreSQL's calc_joinrel_size_estimate.
fn outer_rows(j: &crate::join::Join, lrows: f64, rrows: f64) -> Option<f64> {
    let pairs = lrows * rrows * j.plan.outer_sel?;
    let rows = match j.kind {
        crate::join::JoinKind::Left => pairs.max(lrows),
        crate::join::JoinKind::Right => pairs.max(rrows),
        crate::join::JoinKind::Full => pairs.max(lrows).max(rrows),
        _ => return None,
    };
    Some(rows.max(1.0))
}

fn semi_rows(j: &crate::join::Join, outer_rows: f64) -> Option<f64> {
    let f = j.plan.semi_frac?;
    let rows = match j.kind {
        crate::join::JoinKind::Semi => outer_rows * f,
        crate::join::JoinKind::Anti => outer_rows * (1.0 - f),
        _ => return None,
    };
    Some(rows.max(1.0))
}

fn strip(s: String) -> String {
    if s.starts_with('(') && s.ends_with(')') && balanced(&s[1..s.len() - 1]) { s[1..s.len() - 1].to_string() } else { s }
}

fn balanced(s: &str) -> bool {
    let mut d = 0i32;
    for c in s.chars() {
        match c {
            '(' => d += 1,
            ')' => {
                d -= 1;
                if d < 0 {
                    return false;
                }
            }
            _ => {}
        }
    }
    d == 0
}

// ----- expressions ---------------------------------------------------------------------------

fn quote_literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// An expression as PostgreSQL's ruleutils prints it in a plan.
pub fn deparse(e: &Expr, scope: &Scope, qualify: bool, aggs: &[Aggregate]) -> String {
    let d = |x: &Expr| deparse(x, scope, qualify, aggs);
    match e {
        Expr::Const(v, t) => match v {
            Value::Null => format!("NULL::{}", t.sql_name()),
            Value::Int4(i) if *i >= 0 => i.to_string(),
            Value::Bool(b) => b.to_string(),
            Value::Numeric(_) => {
                let s = ferrogres_datum::types::output(v).unwrap_or_default();
                if s.starts_with('-') { format!("{}::numeric", quote_literal(&s)) } else { s }
            }
            other => format!("{}::{}", quote_literal(&ferrogres_datum::types::output(other).unwrap_or_default()), t.sql_name()),
        },
        Expr::Column(i, _) => match scope.get(*i) {
            Some((rel, col)) if qualify && !rel.is_empty() => format!("{}.{}", ident(rel), ident(col)),
            Some((_, col)) => ident(col),
            None => format!("${i}"),
        },
        Expr::Param(i, _) => format!("${}", i + 1),
        Expr::AggRef(i, _) => match aggs.get(*i) {
            Some(a) => agg_text(a, scope, qualify),
            None => "?".into(),
        },
        Expr::Cast { arg, from, to, typmod, explicit } if matches!(**arg, Expr::Const(..)) => {
            // A cast of a constant is folded, as PostgreSQL's planner does.
            let Expr::Const(v, _) = &**arg else { unreachable!("matched a constant") };
            match ferrogres_datum::types::cast(v.clone(), *from, *to, *typmod, *explicit) {
                Ok(v) => d(&Expr::Const(v, *to)),
                Err(_) => format!("({})::{}", d(arg), to.sql_name()),
            }
        }
        Expr::Cast { arg, to, .. } => {
            let inner = d(arg);
            let inner = if inner.starts_with('(') || matches!(**arg, Expr::Func { .. }) { inner } else { format!("({inner})") };
            format!("{inner}::{}", to.sql_name())
        }
        Expr::Arith { op, l, r, .. } => {
            let o = match op {
                ArithOp::Add => "+",
                ArithOp::Sub => "-",
                ArithOp::Mul => "*",
                ArithOp::Div => "/",
                ArithOp::Mod => "%",
            };
            format!("({} {o} {})", d(l), d(r))
        }
        Expr::Neg(a, _) => format!("(- {})", d(a)),
        Expr::Compare { op, l, r } => format!("({} {} {})", d(l), cmp_symbol(*op), d(r)),
        Expr::Concat(l, r) => format!("({} || {})", d(l), d(r)),
        Expr::And(v) => format!("({})", v.iter().map(d).collect::<Vec<_>>().join(" AND ")),
        Expr::Or(v) => format!("({})", v.iter().map(d).collect::<Vec<_>>().join(" OR ")),
        Expr::Not(a) => format!("(NOT {})", d(a)),
        Expr::IsNull { arg, negated } => format!("({} IS {}NULL)", d(arg), if *negated { "NOT " } else { "" }),
        Expr::Func { func: Func::Array(ferrogres_datum::array::ArrayFunc::AnyAll { op, all }), args, .. } if args.len() == 2 => {
            format!("({} {} {} ({}))", d(&args[0]), cmp_symbol(*op), if *all { "ALL" } else { "ANY" }, d(&args[1]))
        }
        Expr::Func { func, args, .. } => {
            let name = match func {
                Func::Builtin(id) => id.get().name.to_string(),
                Func::Length => "length".into(),
                Func::Upper => "upper".into(),
                Func::Lower => "lower".into(),
                Func::Abs => "abs".into(),
                Func::Grouping(_) => "GROUPING".into(),
                other => format!("{other:?}").to_ascii_lowercase(),
            };
            format!("{name}({})", args.iter().map(d).collect::<Vec<_>>().join(", "))
        }
        Expr::Like { arg, pat, ci, .. } => format!("({} {} {})", d(arg), if *ci { "~~*" } else { "~~" }, d(pat)),
        Expr::Coalesce(v, _) => format!("COALESCE({})", v.iter().map(d).collect::<Vec<_>>().join(", ")),
        Expr::Case { whens, default, .. } => {
            let mut s = "CASE".to_string();
            for (c, r) in whens {
                s.push_str(&format!(" WHEN {} THEN {}", d(c), d(r)));
            }
            s.push_str(&format!(" ELSE {} END", d(default)));
            s
        }
        Expr::Distinct { l, r, negated } => format!("({} IS {}DISTINCT FROM {})", d(l), if *negated { "NOT " } else { "" }, d(r)),
        Expr::SubPlan(_) => "(SubPlan)".into(),
        Expr::OuterColumn { index, .. } => format!("$outer{index}"),
        Expr::OuterAggRef { index, .. } => format!("$outeragg{index}"),
        Expr::NullIf { arg, .. } => format!("NULLIF({}, ...)", d(arg)),
        Expr::MinMax { args, greatest, .. } => {
            format!("{}({})", if *greatest { "GREATEST" } else { "LEAST" }, args.iter().map(d).collect::<Vec<_>>().join(", "))
        }
    }
}

fn cmp_symbol(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Eq => "=",
        CmpOp::Ne => "<>",
        CmpOp::Lt => "<",
        CmpOp::Le => "<=",
        CmpOp::Gt => ">",
        CmpOp::Ge => ">=",
    }
}

fn agg_text(a: &Aggregate, scope: &Scope, qualify: bool) -> String {
    let name = match a.kind {
        AggKind::CountStar => return "count(*)".into(),
        AggKind::Count => "count",
        AggKind::Sum => "sum",
        AggKind::Min => "min",
        AggKind::Max => "max",
        AggKind::Avg => "avg",
        AggKind::ArrayAgg => "array_agg",
        AggKind::StringAgg => "string_agg",
        AggKind::BoolAnd => "bool_and",
        AggKind::BoolOr => "bool_or",
        AggKind::Variance { sample: true, sqrt: true } => "stddev",
        AggKind::Variance { sample: false, sqrt: true } => "stddev_pop",
        AggKind::Variance { sample: true, sqrt: false } => "variance",
        AggKind::Variance { sample: false, sqrt: false } => "var_pop",
        AggKind::JsonAgg { jsonb: false } => "json_agg",
        AggKind::JsonAgg { jsonb: true } => "jsonb_agg",
        AggKind::JsonObjectAgg { jsonb: false } => "json_object_agg",
        AggKind::JsonObjectAgg { jsonb: true } => "jsonb_object_agg",
        AggKind::PercentileCont => "percentile_cont",
        AggKind::PercentileDisc => "percentile_disc",
        AggKind::Mode => "mode",
    };
    let arg = a.arg.as_ref().map_or(String::new(), |e| deparse(e, scope, qualify, &[]));
    format!("{name}({}{arg})", if a.distinct { "DISTINCT " } else { "" })
}

fn ident(s: &str) -> String {
    let plain = s.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain { s.to_string() } else { format!("\"{}\"", s.replace('"', "\"\"")) }
}

// ----- text output -------------------------------------------------------------------------

fn render(n: &Node, o: &Options, indent: usize, root: bool, out: &mut Vec<String>) {
    let mut head = String::new();
    if !root {
        head.push_str(&" ".repeat(indent));
        head.push_str("->  ");
    }
    head.push_str(&n.name);
    if o.costs {
        head.push_str(&format!("  (cost={:.2}..{:.2} rows={} width={})", n.startup, n.total.max(n.startup), n.rows.round().max(0.0) as u64, n.width));
    }
    if o.analyze {
        let sep = " ";
        match n.actual.filter(|_| n.executed) {
            None if n.executed => {}
            Some(c) => {
                let loops = c.loops.max(1);
                let rows = (c.rows as f64 / loops as f64).round() as u64;
                if o.timing {
                    head.push_str(&format!(
                        "{sep}(actual time={:.3}..{:.3} rows={rows} loops={})",
                        c.first_ms / loops as f64,
                        c.total_ms.max(c.first_ms) / loops as f64,
                        c.loops
                    ));
                } else {
                    head.push_str(&format!("{sep}(actual rows={rows} loops={})", c.loops));
                }
            }
            None => head.push_str(&format!("{sep}(never executed)")),
        }
    }
    out.push(head);
    let detail = if root { 2 } else { indent + 6 };
    let pad = " ".repeat(detail);
    if o.verbose && !n.output.is_empty() {
        out.push(format!("{pad}Output: {}", n.output.join(", ")));
    }
    for d in &n.details {
        out.push(format!("{pad}{d}"));
        if d.starts_with("Filter:") && o.analyze {
            if let Some(r) = n.removed.filter(|r| *r > 0) {
                out.push(format!("{pad}Rows Removed by Filter: {r}"));
            }
        }
    }
    for (label, sp) in &n.subplans {
        out.push(format!("{pad}{label}"));
        render(sp, o, detail + 2, false, out);
    }
    for c in &n.children {
        render(c, o, detail, false, out);
    }
}
