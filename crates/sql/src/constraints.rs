//! Expression DEFAULTs (volatile ones: `now()`, `nextval(...)`, `random()`),
//! CHECK constraints, SERIAL columns, and the DDL statements that create them.
//!
//! Storage:
//! - an expression default is a `pg_attrdef` row whose `adbin` is NULL and
//!   whose `adsrc` holds the expression as SQL text (deparsed by libpg_query);
//!   a constant default keeps its constant's text in `adbin` as before.
//! - a CHECK constraint is a `pg_constraint` row with `contype = 'c'`,
//!   `conkey` the referenced column numbers and `conbin` the expression's SQL
//!   text.
//!
//! Both are analyzed again each time the table is loaded ([`load`]), against
//! the table's columns, so they are evaluated per row as PostgreSQL does
//! (`exec::insert_one` and `exec::update` call [`check_row`] after the NOT NULL
//! checks; the rows INSERT, INSERT ... SELECT and COPY build take their
//! defaults from [`default_expr`] / [`default_values`]).
//!
//! CHECK constraints are evaluated in name order (as PostgreSQL's relcache
//! sorts them); a NULL result passes.

use crate::catalog::{self, class_rel, Table};
use ferrogres_datum::errors::{Result, SqlError};
use crate::exec::{eval_pure, Ctx};
use crate::plan::Expr;
use crate::rowio::{insert_row, scan_rows};
use ferrogres_datum::types::{self, Value};
use ferrogres_engine::engine::Backend;
use ferrogres_engine::txn::snapshot::Snapshot;
use pg_query::protobuf as pb;
use pg_query::NodeEnum;

/// A column's expression default, analyzed.
#[derive(Clone, Debug)]
pub struct ExprDefault {
    pub column: usize,
    pub sql: String,
    pub expr: Expr,
}

/// A CHECK constraint, analyzed over the table's row.
#[derive(Clone, Debug)]
pub struct Check {
    pub name: String,
    pub sql: String,
    pub expr: Expr,
}

/// What a table has beyond its columns and indexes (loaded with it).
#[derive(Clone, Debug, Default)]
pub struct TableExtras {
    pub defaults: Vec<ExprDefault>,
    /// In name order.
    pub checks: Vec<Check>,
    /// Foreign keys of this table (it is the referencing side).
    pub fkeys: Vec<crate::foreign_key::ForeignKey>,
    /// Foreign keys of other tables referencing this one.
    pub referenced_by: Vec<crate::foreign_key::ForeignKey>,
    /// Identity columns: (column index, pg_attribute.attidentity 'a' | 'd'), see [`crate::identity`].
    pub identity: Vec<(usize, String)>,
    /// WITH CHECK OPTION conditions of the views a statement writes this
    /// table through (empty when loaded; added by `analyze::view_dml`),
    /// innermost view first: (view name, its WHERE over the table's row).
    pub view_checks: Vec<(String, Expr)>,
}

thread_local! {
    /// Tables being loaded on this thread: a table loaded as another table's
    /// foreign-key parent does not load its own parents (no cycles).
    static LOAD_DEPTH: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// The SQL text of an expression node (libpg_query's deparser).
pub fn deparse_expr(n: &NodeEnum) -> Result<String> {
    // Replace the `1` of a parsed `SELECT 1` (every other field keeps valid enum values).
    let mut pr = pg_query::parse("SELECT 1", 0).map_err(|e| SqlError::internal(format!("deparse: {e}")))?.protobuf;
    let stmt = pr.stmts.get_mut(0).and_then(|s| s.stmt.as_mut()).and_then(|s| s.node.as_mut());
    let Some(NodeEnum::SelectStmt(sel)) = stmt else { return Err(SqlError::internal("deparse: no SELECT")) };
    let Some(NodeEnum::ResTarget(rt)) = sel.target_list.get_mut(0).and_then(|t| t.node.as_mut()) else {
        return Err(SqlError::internal("deparse: no target"));
    };
    rt.val = Some(Box::new(pb::Node { node: Some(n.clone()) }));
    let text = pg_query::deparse(&pr, Default::default()).map_err(|e| SqlError::internal(format!("deparse: {e}")))?;
    Ok(text.strip_prefix("SELECT ").unwrap_or(&text).to_string())
}

/// Parses the SQL text of an expression back into a node.
pub(crate) fn parse_expr(sql: &str) -> Result<NodeEnum> {
    let full = format!("SELECT {sql}");
    let stmts = crate::parser::parse(&full)?;
    let Some(NodeEnum::SelectStmt(s)) = stmts.into_iter().next().map(|s| s.node) else {
        return Err(SqlError::internal("stored expression is not an expression"));
    };
    match s.target_list.first().and_then(|t| t.node.as_ref()) {
        Some(NodeEnum::ResTarget(rt)) => rt.val.as_ref().and_then(|v| v.node.clone()).ok_or_else(|| SqlError::internal("empty stored expression")),
        _ => Err(SqlError::internal("stored expression is not an expression")),
    }
}

fn analyzer<'a>(backend: &'a Backend, snap: &'a Snapshot, sql: &'a str) -> crate::analyze::Analyzer<'a> {
    crate::analyze::Analyzer { backend, snap, sql, params: Vec::new(), params_allowed: false, views: Default::default(), upper: Default::default(), planner: Default::default(), fold_error: None }
}

/// Analyzes a default's text for column `ci` of `table` (coerced to its type).
fn analyze_default(backend: &Backend, snap: &Snapshot, table: &Table, ci: usize, sql: &str) -> Result<Expr> {
    let node = parse_expr(sql)?;
    let full = format!("SELECT {sql}");
    let mut a = analyzer(backend, snap, &full);
    let e = a.scalar_expr(&node)?;
    let c = &table.columns[ci];
    a.coerce_assignment(e, c.ty, c.typmod)
}

/// Analyzes a CHECK's text over the row of `table` (boolean).
pub fn analyze_check(backend: &Backend, snap: &Snapshot, table: &Table, node: &NodeEnum, sql: &str) -> Result<Expr> {
    let mut a = analyzer(backend, snap, sql);
    a.check_expr(node, table)
}

/// The columns an expression reads.
pub fn columns_of(e: &Expr, out: &mut Vec<usize>) {
    if let Expr::Column(i, _) = e {
        if !out.contains(i) {
            out.push(*i);
        }
    }
    for c in crate::grouping::children(e) {
        columns_of(c, out);
    }
}

/// Whether no table is being loaded on this thread (a table loaded now gets
/// its foreign-key parents: a complete descriptor, which the cache may keep).
pub(crate) fn loading_top_level() -> bool {
    LOAD_DEPTH.with(|d| d.get()) == 0
}

/// Adds the expression defaults (from pg_attrdef, `raw`) and the CHECK
/// constraints (from pg_constraint) of a table being loaded.
pub fn load(backend: &Backend, snap: &Snapshot, table: &mut Table, raw: Vec<(usize, String)>) -> Result<()> {
    let mut checks = Vec::new();
    for (_, row) in scan_rows(backend, &crate::index::constraint_rel(), snap)? {
        if let [_, Value::Text(name), _, Value::Text(kind), Value::Oid(rel), _, Value::Text(conkey), Value::Text(sql)] = row.as_slice() {
            if *rel == table.oid && kind == "c" {
                checks.push((name.clone(), sql.clone()));
            }
            if kind == "f" {
                if let Some(fk) = crate::foreign_key::decode(name, *rel, conkey, sql) {
                    if fk.parent == table.oid {
                        table.extras.referenced_by.push(fk.clone());
                    }
                    if *rel == table.oid {
                        table.extras.fkeys.push(fk);
                    }
                }
            }
        }
    }
    if !table.extras.fkeys.is_empty() && LOAD_DEPTH.with(|d| d.get()) == 0 {
        LOAD_DEPTH.with(|d| d.set(d.get() + 1));
        let r = (|| -> Result<()> {
            for i in 0..table.extras.fkeys.len() {
                let p = table.extras.fkeys[i].parent;
                let parent = if p == table.oid { None } else { table_by_oid(backend, snap, p)? };
                table.extras.fkeys[i].parent_table = parent.map(Box::new);
            }
            Ok(())
        })();
        LOAD_DEPTH.with(|d| d.set(d.get() - 1));
        r?;
    }
    if raw.is_empty() && checks.is_empty() {
        return Ok(());
    }
    for (ci, sql) in raw {
        if ci < table.columns.len() {
            let expr = analyze_default(backend, snap, table, ci, &sql)?;
            table.extras.defaults.push(ExprDefault { column: ci, sql, expr });
        }
    }
    checks.sort();
    for (name, sql) in checks {
        let full = format!("SELECT {sql}");
        let node = parse_expr(&sql)?;
        let _ = full;
        let expr = analyze_check(backend, snap, table, &node, &sql)?;
        table.extras.checks.push(Check { name, sql, expr });
    }
    Ok(())
}

/// The default of column `ci` as an expression (NULL if none).
pub fn default_expr(table: &Table, ci: usize) -> Expr {
    if let Some(d) = table.extras.defaults.iter().find(|d| d.column == ci) {
        return d.expr.clone();
    }
    let c = &table.columns[ci];
    Expr::Const(c.default.clone().unwrap_or(Value::Null), c.ty)
}

/// A new row of defaults, for COPY: expression defaults are evaluated for the
/// columns not in `given` only (a nextval is not spent on a column COPY fills).
pub fn default_values(table: &Table, given: &[usize], ctx: &mut Ctx) -> Result<Vec<Value>> {
    let mut row: Vec<Value> = table.columns.iter().map(|c| c.default.clone().unwrap_or(Value::Null)).collect();
    for d in &table.extras.defaults {
        if !given.contains(&d.column) {
            row[d.column] = eval_pure(&d.expr, &[], ctx.params, &[], &mut *ctx)?;
        }
    }
    Ok(row)
}

/// Whether a column default of `table` calls nextval on sequence `seq`.
pub fn default_uses(table: &Table, seq: &str) -> bool {
    table.extras.defaults.iter().any(|d| d.sql.contains(&format!("'{seq}'")))
}

/// The CHECK constraints of `table` on a new row (INSERT, UPDATE, COPY),
/// then the check options of the views it is written through.
pub fn check_row(table: &Table, row: &[Value], ctx: &mut Ctx) -> Result<()> {
    check_constraints(table, row, ctx)?;
    check_view_options(table, row, ctx)
}

/// The CHECK constraints of `table` on a new row.
pub fn check_constraints(table: &Table, row: &[Value], ctx: &mut Ctx) -> Result<()> {
    for c in &table.extras.checks {
        if eval_pure(&c.expr, row, ctx.params, &[], ctx.env)? == Value::Bool(false) {
            let shown: Vec<String> =
                row.iter().zip(&table.columns[..table.user_columns()]).filter(|(_, c)| !c.is_dropped()).map(|(v, _)| types::output(v).unwrap_or_else(|| "null".into())).collect();
            return Err(SqlError::new(b"23514", format!("new row for relation \"{}\" violates check constraint \"{}\"", table.name, c.name))
                .with_detail(format!("Failing row contains ({}).", shown.join(", ")))
                .with_objects(table.error_objects(Some(&c.name), None)));
        }
    }
    Ok(())
}

/// The check options of the views `table` is written through: the row must
/// satisfy each view's WHERE (NULL fails).
pub fn check_view_options(table: &Table, row: &[Value], ctx: &mut Ctx) -> Result<()> {
    for (view, e) in &table.extras.view_checks {
        if eval_pure(e, row, ctx.params, &[], ctx.env)? != Value::Bool(true) {
            let shown: Vec<String> =
                row.iter().zip(&table.columns[..table.user_columns()]).filter(|(_, c)| !c.is_dropped()).map(|(v, _)| types::output(v).unwrap_or_else(|| "null".into())).collect();
            return Err(SqlError::new(b"44000", format!("new row violates check option for view \"{view}\""))
                .with_detail(format!("Failing row contains ({}).", shown.join(", "))));
        }
    }
    Ok(())
}

/// Stores an expression default.
pub fn store_default(backend: &mut Backend, table_oid: u32, attnum: i16, sql: &str) -> Result<()> {
    insert_row(
        backend,
        &catalog::attrdef_rel(),
        &[Value::Oid(table_oid), Value::Int2(attnum), Value::Null, Value::Text(sql.to_string())],
    )?;
    Ok(())
}

/// Names of every constraint of namespace `ns`.
fn constraint_names(backend: &Backend, snap: &Snapshot, ns: u32) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for (_, row) in scan_rows(backend, &crate::index::constraint_rel(), snap)? {
        if let [_, Value::Text(name), Value::Oid(n), ..] = row.as_slice() {
            if *n == ns {
                out.push(name.clone());
            }
        }
    }
    Ok(out)
}

/// PostgreSQL's ChooseConstraintName: `base`, else `base1`, `base2`, ...
fn choose_name(base: &str, taken: &[String]) -> String {
    if !taken.iter().any(|t| t == base) {
        return base.to_string();
    }
    (1..).map(|i| format!("{base}{i}")).find(|n| !taken.iter().any(|t| t == n)).unwrap_or_default()
}

/// Stores a pg_constraint row of kind `contype` over `cols` with `bin` (the
/// CHECK's SQL text, or the foreign key's encoding).
fn store_constraint(backend: &mut Backend, table: &Table, name: &str, contype: &str, cols: &[usize], bin: String) -> Result<()> {
    let oid = backend.engine().new_oid();
    let keys: Vec<String> = cols.iter().map(|c| (c + 1).to_string()).collect();
    insert_row(
        backend,
        &crate::index::constraint_rel(),
        &[
            Value::Oid(oid),
            Value::Text(name.to_string()),
            Value::Oid(table.namespace),
            Value::Text(contype.into()),
            Value::Oid(table.oid),
            // conindid: PostgreSQL stores a foreign key's referenced unique index
            // here; 0 keeps the row out of index.rs's DROP INDEX cleanup (which
            // matches conindid).
            Value::Oid(0),
            Value::Text(format!("{{{}}}", keys.join(","))),
            Value::Text(bin),
        ],
    )?;
    Ok(())
}

/// Stores a CHECK constraint row.
fn store_check(backend: &mut Backend, table: &Table, name: &str, sql: &str, cols: &[usize]) -> Result<()> {
    store_constraint(backend, table, name, "c", cols, sql.to_string())
}

/// Stores a FOREIGN KEY constraint row (see `crate::foreign_key`).
pub fn store_fkey(backend: &mut Backend, table: &Table, name: &str, f: &crate::foreign_key::FkSpec) -> Result<()> {
    let bin = crate::foreign_key::encode(f.parent, &f.parent_cols, f.on_update, f.on_delete, !f.not_valid);
    store_constraint(backend, table, name, "f", &f.cols, bin)
}

/// Deletes the CHECK rows of a dropped table and drops the sequences its
/// SERIAL columns own (`catalog::drop_table`).
pub fn drop_for_table(backend: &mut Backend, snap: &Snapshot, table: &Table) -> Result<()> {
    let st = crate::index::constraint_rel();
    let mut doomed = Vec::new();
    for (tid, row) in scan_rows(backend, &st, snap)? {
        if let [_, _, _, Value::Text(kind), Value::Oid(rel), ..] = row.as_slice() {
            if *rel == table.oid && (kind == "c" || kind == "f") {
                doomed.push((tid, row.clone()));
            }
        }
    }
    for (tid, row) in doomed {
        crate::catcache::heap_delete(backend, st.rel, tid, Some(&row))?;
    }
    drop_owned_sequences(backend, snap, table)
}

/// DROP TABLE of a table another table's foreign key references: 2BP01 (no
/// CASCADE yet). Called before anything of the table is dropped.
/// `dropping`: the tables the statement drops (foreign keys among them do not
/// hold the drop back).
pub fn check_drop(backend: &mut Backend, table: &Table, dropping: &[u32]) -> Result<()> {
    let st = crate::index::constraint_rel();
    // Tables dropped earlier in the same statement are gone for this check: the
    // current command's own deletions are seen as done (curcid + 1), without a
    // command counter increment (which would make a second drop of the same
    // table in `DROP TABLE w, w` fail).
    let mut now = crate::catcache::ddl_snapshot(backend)?;
    now.curcid = now.curcid.wrapping_add(1);
    let mut deps: Vec<String> = Vec::new();
    for (_, row) in scan_rows(backend, &st, &now)? {
        if let [_, Value::Text(name), _, Value::Text(kind), Value::Oid(rel), _, Value::Text(conkey), Value::Text(bin)] = row.as_slice() {
            if kind == "f" && *rel != table.oid && !dropping.contains(rel) {
                if let Some(fk) = crate::foreign_key::decode(name, *rel, conkey, bin) {
                    if fk.parent == table.oid {
                        let child = table_by_oid(backend, &now, *rel)?.map_or_else(|| rel.to_string(), |t| t.name);
                        deps.push(format!("constraint {name} on table {child} depends on table {}", table.name));
                    }
                }
            }
        }
    }
    if !deps.is_empty() {
        return Err(SqlError::new(b"2BP01", format!("cannot drop table {} because other objects depend on it", table.name))
            .with_detail(deps.join("\n"))
            .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
    }
    Ok(())
}

fn drop_owned_sequences(backend: &mut Backend, snap: &Snapshot, table: &Table) -> Result<()> {
    for (oid, name) in crate::sequence::owned_by(backend, snap, table.oid)? {
        crate::sequence::drop_sequence(backend, snap, oid, &name)?;
    }
    Ok(())
}

// ---- CREATE TABLE with SERIAL, expression defaults and CHECK --------------------

/// A CHECK of a table being created: its name if given, SQL text, columns.
#[derive(Clone, Debug)]
pub struct CheckSpec {
    pub name: Option<String>,
    pub sql: String,
    pub columns: Vec<usize>,
}

/// The parts of CREATE TABLE this module adds after the table exists.
#[derive(Clone, Debug, Default)]
pub struct CreateExtras {
    /// SERIAL: (column index, sequence name, options).
    pub sequences: Vec<(usize, String, crate::sequence::SeqOptions)>,
    /// Expression defaults: (column index, SQL text).
    pub defaults: Vec<(usize, String)>,
    pub checks: Vec<CheckSpec>,
    pub fkeys: Vec<crate::foreign_key::FkSpec>,
    /// Identity columns: (column index, 'a' | 'd') ([`crate::identity`]).
    pub identity: Vec<(usize, String)>,
}

impl CreateExtras {
    pub fn is_empty(&self) -> bool {
        self.sequences.is_empty() && self.defaults.is_empty() && self.checks.is_empty() && self.fkeys.is_empty() && self.identity.is_empty()
    }
}

/// The statements of this module and of `crate::sequence`.
#[derive(Clone, Debug)]
pub enum DdlCmd {
    Seq(crate::sequence::SeqCmd),
    /// CREATE TABLE (run as `base`) with SERIAL columns, expression defaults or CHECKs.
    CreateTable { base: crate::index::IndexCmd, extras: CreateExtras },
    /// ALTER TABLE ... ADD CHECK / FOREIGN KEY: existing rows validated first.
    AddConstraint { table: Table, check: Option<CheckSpec>, fkey: Option<crate::foreign_key::FkSpec> },
    /// CREATE / DROP / ALTER SCHEMA ([`crate::namespace::ddl`]).
    Schema(crate::namespace::ddl::SchemaCmd),
    /// ALTER TABLE on columns, several subcommands, IF EXISTS ([`crate::alter`]).
    Alter(Box<crate::alter::AlterCmd>),
    /// ALTER TABLE / INDEX / SEQUENCE ... RENAME ([`crate::alter`]).
    Rename(crate::alter::RenameCmd),
    /// CREATE / DROP VIEW, DROP TABLE ... CASCADE ([`crate::view`]).
    View(crate::view::ViewCmd),
    /// CREATE / DROP FUNCTION ([`crate::sqlfunc`]).
    Func(crate::sqlfunc::FuncCmd),
}

/// Runs a statement of this module in the current transaction.
pub fn execute(
    cmd: &DdlCmd,
    backend: &mut Backend,
    snap: &Snapshot,
    env: &mut dyn crate::exec::Env,
    notice: &mut dyn FnMut(SqlError) -> Result<()>,
) -> Result<String> {
    match cmd {
        DdlCmd::AddConstraint { table, check, fkey } => {
            let taken = constraint_names(backend, snap, table.namespace)?;
            let mut t = table.clone();
            t.extras = TableExtras::default();
            let name = match (check, fkey) {
                (Some(c), _) => c.name.clone().unwrap_or_else(|| {
                    let base = match c.columns.as_slice() {
                        [one] => format!("{}_{}_check", t.name, t.columns[*one].name),
                        _ => format!("{}_check", t.name),
                    };
                    choose_name(&base, &taken)
                }),
                (None, Some(f)) => f.name.clone().unwrap_or_else(|| choose_name(&crate::foreign_key::default_name(&t, &f.cols), &taken)),
                _ => return Err(SqlError::internal("ADD CONSTRAINT without a constraint")),
            };
            // Validate the existing rows with the new constraint alone.
            if let Some(c) = check {
                let node = parse_expr(&c.sql)?;
                let expr = analyze_check(backend, snap, &t, &node, &c.sql)?;
                t.extras.checks.push(Check { name: name.clone(), sql: c.sql.clone(), expr });
            }
            if let Some(f) = fkey {
                let parent = table_by_oid(backend, snap, f.parent)?.map(Box::new);
                t.extras.fkeys.push(crate::foreign_key::ForeignKey {
                    name: name.clone(),
                    child: t.oid,
                    cols: f.cols.clone(),
                    parent: f.parent,
                    parent_cols: f.parent_cols.clone(),
                    on_update: f.on_update,
                    on_delete: f.on_delete,
                    parent_table: parent,
                    validated: !f.not_valid,
                });
            }
            let mut ctx = Ctx { backend: &mut *backend, snap: snap.clone(), params: &[], env };
            if check.is_some() {
                let mut pages = crate::rowio::PageRows::new(&t.storage)?;
                while let Some(rows) = pages.next_page(ctx.backend, &ctx.snap)? {
                    ctx.env.check_interrupts()?;
                    for (_, row) in rows {
                        check_row(&t, &row, &mut ctx).map_err(|e| {
                            if &e.code == b"23514" {
                                SqlError::new(b"23514", format!("check constraint \"{name}\" of relation \"{}\" is violated by some row", t.name))
                            } else {
                                e
                            }
                        })?;
                    }
                }
            } else if let Some(fk) = t.extras.fkeys.first().filter(|fk| fk.validated) {
                crate::foreign_key::validate_existing(&t, fk, &mut ctx)?;
            }
            match (check, fkey) {
                (Some(c), _) => store_check(backend, &t, &name, &c.sql, &c.columns)?,
                (None, Some(f)) => store_fkey(backend, &t, &name, f)?,
                _ => {}
            }
            Ok("ALTER TABLE".into())
        }
        DdlCmd::Seq(s) => crate::sequence::execute(s, backend, snap, notice),
        DdlCmd::Schema(s) => crate::namespace::ddl::execute(s, backend, snap, notice),
        DdlCmd::Alter(a) => crate::alter::execute(a, backend, env, notice),
        DdlCmd::Rename(r) => crate::alter::rename(r, backend, notice),
        DdlCmd::View(v) => crate::view::execute(v, backend, snap, notice),
        DdlCmd::Func(f) => crate::sqlfunc::execute(f, backend, snap, notice),
        DdlCmd::CreateTable { base, extras } => {
            let crate::index::IndexCmd::CreateTable { namespace, name, if_not_exists, .. } = base else {
                return Err(SqlError::internal("not a CREATE TABLE"));
            };
            let namespace = &crate::namespace::materialize(backend, *namespace)?;
            if *if_not_exists && crate::index::find_relation(backend, snap, *namespace, name)?.is_some() {
                return crate::index::execute(base, backend, snap, &*env, notice);
            }
            for (_, seq, _) in &extras.sequences {
                if crate::index::find_relation(backend, snap, *namespace, seq)?.is_some() {
                    return Err(SqlError::new(b"42P07", format!("relation \"{seq}\" already exists")));
                }
            }
            let tag = crate::index::execute(base, backend, snap, &*env, notice)?;
            backend.txn.command_counter_increment()?;
            let snap = crate::catcache::ddl_snapshot(backend)?;
            let table = lookup_in(backend, &snap, *namespace, name)?;
            for (ci, seq, opts) in &extras.sequences {
                crate::sequence::create(backend, *namespace, seq, opts, (table.oid, *ci as i16 + 1))?;
            }
            for (ci, sql) in &extras.defaults {
                store_default(backend, table.oid, *ci as i16 + 1, sql)?;
            }
            crate::identity::store_created(backend, &table, &extras.identity)?;
            let mut taken = constraint_names(backend, &snap, *namespace)?;
            for c in &extras.checks {
                let n = match &c.name {
                    // Named: unique among the table's constraints (checked at analysis).
                    Some(n) => n.clone(),
                    None => {
                        let base = match c.columns.as_slice() {
                            [one] => format!("{name}_{}_check", table.columns[*one].name),
                            _ => format!("{name}_check"),
                        };
                        choose_name(&base, &taken)
                    }
                };
                store_check(backend, &table, &n, &c.sql, &c.columns)?;
                taken.push(n);
            }
            for f in &extras.fkeys {
                let n = match &f.name {
                    Some(n) => n.clone(),
                    None => choose_name(&crate::foreign_key::default_name(&table, &f.cols), &taken),
                };
                store_fkey(backend, &table, &n, f)?;
                taken.push(n);
            }
            Ok(tag)
        }
    }
}

/// A table by OID (any schema).
pub fn table_by_oid(backend: &Backend, snap: &Snapshot, oid: u32) -> Result<Option<Table>> {
    if let Some(t) = crate::catcache::table(backend, oid) {
        return Ok(Some((*t).clone()));
    }
    for (_, row) in scan_rows(backend, &class_rel(), snap)? {
        if let [Value::Oid(o), Value::Text(n), Value::Oid(ns), _, _, Value::Text(kind), ..] = row.as_slice() {
            if *o == oid && kind == "r" {
                let schema = namespace_name(backend, snap, *ns)?;
                return catalog::lookup_table(backend, snap, Some(&schema), n);
            }
        }
    }
    Ok(None)
}

fn lookup_in(backend: &Backend, snap: &Snapshot, ns: u32, name: &str) -> Result<Table> {
    let schema = namespace_name(backend, snap, ns)?;
    catalog::lookup_table(backend, snap, Some(&schema), name)?.ok_or_else(|| SqlError::internal("created table not found"))
}

fn namespace_name(backend: &Backend, snap: &Snapshot, ns: u32) -> Result<String> {
    crate::namespace::namespaces_arc(backend, snap)?
        .iter()
        .find(|(o, _)| *o == ns)
        .map(|(_, n)| n.clone())
        .ok_or_else(|| SqlError::internal("namespace not found"))
}
