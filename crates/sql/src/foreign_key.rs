//! FOREIGN KEY constraints: definition (CREATE TABLE column `REFERENCES` and
//! table `FOREIGN KEY (...) REFERENCES`), storage, and enforcement on both sides.
//!
//! A foreign key is a `pg_constraint` row with `contype = 'f'`, `conrelid` the
//! referencing (child) table, `conindid` the referenced table's unique index,
//! `conkey` the child's column numbers, and `conbin` holding
//! `"<confrelid> <confkey,...> <confupdtype> <confdeltype>"` (actions as
//! PostgreSQL's letters: `a` NO ACTION, `r` RESTRICT, `c` CASCADE, `n` SET
//! NULL, `d` SET DEFAULT), followed by ` notvalid` for a key added NOT VALID
//! and not validated since (`pg_constraint.convalidated` false: enforced on
//! new and changed rows, existing rows unchecked until VALIDATE CONSTRAINT,
//! [`validate_existing`]). MATCH SIMPLE only: a key with a NULL column
//! references nothing.
//!
//! Locks, as PostgreSQL's: ADD FOREIGN KEY takes ShareRowExclusiveLock on both
//! tables (readers and FOR UPDATE go on, writers wait); VALIDATE CONSTRAINT
//! takes ShareUpdateExclusiveLock on the referencing table and RowShareLock on
//! the referenced one (readers and writers of both go on). The existing rows
//! are checked without row locks (PostgreSQL's RI_Initial_Check).
//!
//! Enforcement, as PostgreSQL's RI triggers do it:
//! - a new or changed child row ([`check_child`], from `exec::insert_one` and
//!   `exec::update` after the heap and index changes): the parent row with the
//!   key is looked up (through the parent's unique index, `index::scan_table`)
//!   and locked FOR KEY SHARE, so that a concurrent DELETE or key UPDATE of it
//!   waits for this transaction, and this check waits for one in progress (if
//!   that one commits, the row is gone and the check fails);
//! - a deleted parent row or a changed parent key ([`on_parent_delete`],
//!   [`on_parent_update`], from `exec::delete` / `exec::update`): referencing
//!   rows are looked for (sequentially unless the child has an index on the
//!   columns, as in PostgreSQL); NO ACTION / RESTRICT fail with 23503, CASCADE
//!   deletes or updates them, SET NULL / SET DEFAULT update them.
//!
//! In READ COMMITTED both lookups use a fresh snapshot (PostgreSQL's RI queries
//! see the latest committed rows), so a child row inserted by a transaction
//! that committed while the parent's DELETE waited for its KEY SHARE lock is
//! seen. In REPEATABLE READ they use the transaction's snapshot (PostgreSQL
//! adds a crosscheck snapshot and fails with 40001; not done here).

use crate::catalog::Table;
use ferrogres_datum::errors::{Result, SqlError};
use crate::exec::{compare, Ctx};
use crate::plan::{CmpOp, Expr};
use ferrogres_datum::types::{self, Value};
use ferrogres_engine::heap::heapam::{heap_lock_tuple, LockOutcome, WaitPolicy};
use ferrogres_engine::heap::page::RowLockMode;

/// A foreign key, as seen from either side.
#[derive(Clone, Debug)]
pub struct ForeignKey {
    pub name: String,
    /// The referencing table and its key columns (0-based).
    pub child: u32,
    pub cols: Vec<usize>,
    /// The referenced table and its key columns (0-based), same order.
    pub parent: u32,
    pub parent_cols: Vec<usize>,
    pub on_update: char,
    pub on_delete: char,
    /// The referenced table, loaded with the child (absent when the child was
    /// itself loaded as some table's parent: loaded at execution then).
    pub parent_table: Option<Box<Table>>,
    /// `pg_constraint.convalidated`: false after ADD ... NOT VALID until
    /// VALIDATE CONSTRAINT.
    pub validated: bool,
}

/// Encodes the `conbin` of a foreign key.
pub fn encode(parent: u32, parent_cols: &[usize], on_update: char, on_delete: char, validated: bool) -> String {
    let keys: Vec<String> = parent_cols.iter().map(|c| (c + 1).to_string()).collect();
    let suffix = if validated { "" } else { " notvalid" };
    format!("{parent} {} {on_update} {on_delete}{suffix}", keys.join(","))
}

/// Decodes a foreign key row (`conkey` and `conbin`).
pub fn decode(name: &str, child: u32, conkey: &str, conbin: &str) -> Option<ForeignKey> {
    let nums = |s: &str| -> Option<Vec<usize>> {
        s.trim_matches(|c| c == '{' || c == '}').split(',').map(|x| x.trim().parse::<usize>().ok().map(|n| n - 1)).collect()
    };
    let f: Vec<&str> = conbin.split(' ').collect();
    let validated = match (f.len(), f.get(4)) {
        (4, _) => true,
        (5, Some(&"notvalid")) => false,
        _ => return None,
    };
    Some(ForeignKey {
        name: name.to_string(),
        child,
        cols: nums(conkey)?,
        parent: f[0].parse().ok()?,
        parent_cols: nums(f[1])?,
        on_update: f[2].chars().next()?,
        on_delete: f[3].chars().next()?,
        parent_table: None,
        validated,
    })
}

/// The existing rows of `child` checked against foreign key `fk` (ADD FOREIGN
/// KEY without NOT VALID, VALIDATE CONSTRAINT): each row whose key has no
/// NULL must have its referenced row, as the statement's snapshot sees the
/// parent. No row is locked (PostgreSQL's RI_Initial_Check): ADD holds
/// ShareRowExclusiveLock on the parent, so its keys cannot change meanwhile,
/// and a key added NOT VALID has been enforced on every change since. The
/// child is read a page at a time.
pub fn validate_existing(child: &Table, fk: &ForeignKey, ctx: &mut Ctx) -> Result<()> {
    let parent = match &fk.parent_table {
        Some(p) => (**p).clone(),
        None => load(ctx, fk.parent)?,
    };
    let mut pages = crate::rowio::PageRows::new(&child.storage)?;
    while let Some(rows) = pages.next_page(ctx.backend, &ctx.snap)? {
        ctx.env.check_interrupts()?;
        for (_, row) in rows {
            let key: Vec<Value> = fk.cols.iter().map(|c| row[*c].clone()).collect();
            if key.iter().any(Value::is_null) {
                continue;
            }
            let filter = key_filter(&parent, &fk.parent_cols, &key);
            let mut found = false;
            for (_, prow) in crate::index::scan_table(&parent, Some(&filter), ctx)? {
                if passes(&filter, &prow, ctx)? {
                    found = true;
                    break;
                }
            }
            if !found {
                return Err(SqlError::new(b"23503", format!("insert or update on table \"{}\" violates foreign key constraint \"{}\"", child.name, fk.name))
                    .with_detail(format!("Key {} is not present in table \"{}\".", key_text(child, &fk.cols, &key), parent.name))
                    .with_objects(child.error_objects(Some(&fk.name), None)));
            }
        }
    }
    Ok(())
}

/// The snapshot RI lookups use (see the module doc).
/// The statement's own changes so far are made visible first (a command
/// counter increment), as PostgreSQL's AFTER triggers see them.
fn ri_snapshot(ctx: &mut Ctx) -> Result<ferrogres_engine::txn::snapshot::Snapshot> {
    ctx.backend.txn.command_counter_increment()?;
    Ok(ctx.backend.txn.statement_snapshot()?)
}

/// `col1 = v1 AND col2 = v2 ...` over `table`'s row.
fn key_filter(table: &Table, cols: &[usize], key: &[Value]) -> Expr {
    let parts: Vec<Expr> = cols
        .iter()
        .zip(key)
        .map(|(c, v)| {
            let ty = table.columns[*c].ty;
            Expr::Compare { op: CmpOp::Eq, l: Box::new(Expr::Column(*c, ty)), r: Box::new(Expr::Const(v.clone(), ty)) }
        })
        .collect();
    Expr::And(parts)
}

fn passes(e: &Expr, row: &[Value], ctx: &mut Ctx) -> Result<bool> {
    Ok(crate::exec::eval_pure(e, row, ctx.params, &[], ctx.env)? == Value::Bool(true))
}

/// Runs `f` with `ctx.snap` replaced by the RI snapshot.
fn with_ri_snapshot<T>(ctx: &mut Ctx, f: impl FnOnce(&mut Ctx) -> Result<T>) -> Result<T> {
    let snap = ri_snapshot(ctx)?;
    let saved = std::mem::replace(&mut ctx.snap, snap);
    let r = f(ctx);
    ctx.snap = saved;
    r
}

fn key_text(table: &Table, cols: &[usize], key: &[Value]) -> String {
    let names: Vec<&str> = cols.iter().map(|c| table.columns[*c].name.as_str()).collect();
    let vals: Vec<String> = key.iter().map(|v| types::output(v).unwrap_or_else(|| "null".into())).collect();
    format!("({})=({})", names.join(", "), vals.join(", "))
}

fn load(ctx: &mut Ctx, oid: u32) -> Result<Table> {
    crate::constraints::table_by_oid(ctx.backend, &ctx.snap, oid)?
        .ok_or_else(|| SqlError::new(b"XX000", format!("could not open relation with OID {oid}")))
}

/// A new or changed row of `table` (the child): every foreign key whose
/// columns are all non-null must find its parent row, which is locked FOR KEY
/// SHARE. `old`: the row before an UPDATE (keys left unchanged are not checked).
pub fn check_child(table: &Table, row: &[Value], old: Option<&[Value]>, ctx: &mut Ctx) -> Result<()> {
    for fk in &table.extras.fkeys {
        let key: Vec<Value> = fk.cols.iter().map(|c| row[*c].clone()).collect();
        if key.iter().any(Value::is_null) {
            continue;
        }
        if let Some(old) = old {
            if fk.cols.iter().all(|c| !old[*c].is_null() && compare(&old[*c], &row[*c]) == std::cmp::Ordering::Equal) {
                continue;
            }
        }
        let loaded;
        let parent: &Table = match &fk.parent_table {
            Some(p) => p,
            None => {
                loaded = load(ctx, fk.parent)?;
                &loaded
            }
        };
        let filter = key_filter(parent, &fk.parent_cols, &key);
        let found = with_ri_snapshot(ctx, |ctx| {
            for (tid, prow) in crate::index::scan_table(parent, Some(&filter), ctx)? {
                if !passes(&filter, &prow, ctx)? {
                    continue;
                }
                let mut tid = tid;
                loop {
                    match heap_lock_tuple(ctx.backend, parent.storage.rel, tid, RowLockMode::KeyShare, WaitPolicy::Block, &parent.name)? {
                        LockOutcome::Locked | LockOutcome::SelfModified => return Ok(true),
                        LockOutcome::Updated { new_tid } => {
                            let q = |r: &[Value], ctx: &mut Ctx| passes(&filter, r, ctx);
                            match crate::exec::newest_qualifying(parent, new_tid, &q, ctx)? {
                                Some((latest, _)) => tid = latest,
                                None => break,
                            }
                        }
                        _ => break,
                    }
                }
            }
            Ok(false)
        })?;
        if !found {
            return Err(SqlError::new(b"23503", format!("insert or update on table \"{}\" violates foreign key constraint \"{}\"", table.name, fk.name))
                .with_detail(format!("Key {} is not present in table \"{}\".", key_text(table, &fk.cols, &key), parent.name))
                .with_objects(table.error_objects(Some(&fk.name), None)));
        }
    }
    Ok(())
}

/// A parent row was deleted (`new == None`) or its key changed: the actions
/// of every foreign key referencing `table`.
fn on_parent_change(table: &Table, old: &[Value], new: Option<&[Value]>, ctx: &mut Ctx) -> Result<()> {
    for fk in &table.extras.referenced_by {
        let key: Vec<Value> = fk.parent_cols.iter().map(|c| old[*c].clone()).collect();
        if key.iter().any(Value::is_null) {
            continue;
        }
        if let Some(new) = new {
            if fk.parent_cols.iter().all(|c| !new[*c].is_null() && compare(&old[*c], &new[*c]) == std::cmp::Ordering::Equal) {
                continue;
            }
        }
        let child = load(ctx, fk.child)?;
        let filter = Some(key_filter(&child, &fk.cols, &key));
        let action = if new.is_some() { fk.on_update } else { fk.on_delete };
        with_ri_snapshot(ctx, |ctx| -> Result<()> {
            match action {
                'c' if new.is_none() => {
                    crate::exec::delete(&child, &filter, &[], &Default::default(), ctx)?;
                }
                'c' => {
                    let new = new.unwrap_or_default();
                    let sets = fk.cols.iter().zip(&fk.parent_cols).map(|(c, p)| (*c, Expr::Const(new[*p].clone(), child.columns[*c].ty))).collect::<Vec<_>>();
                    crate::exec::update(&child, &sets, &filter, &[], &Default::default(), ctx)?;
                }
                'n' | 'd' => {
                    let sets: Vec<(usize, Expr)> = fk
                        .cols
                        .iter()
                        .map(|c| {
                            let e = if action == 'n' { Expr::Const(Value::Null, child.columns[*c].ty) } else { crate::constraints::default_expr(&child, *c) };
                            (*c, e)
                        })
                        .collect();
                    crate::exec::update(&child, &sets, &filter, &[], &Default::default(), ctx)?;
                }
                _ => {
                    let f = filter.as_ref().expect("filter");
                    for (_, crow) in crate::index::scan_table(&child, Some(f), ctx)? {
                        if passes(f, &crow, ctx)? {
                            return Err(SqlError::new(
                                b"23503",
                                format!("update or delete on table \"{}\" violates foreign key constraint \"{}\" on table \"{}\"", table.name, fk.name, child.name),
                            )
                            .with_detail(format!(
                                "Key {} is still referenced from table \"{}\".",
                                key_text(table, &fk.parent_cols, &key),
                                child.name
                            ))
                            .with_objects(child.error_objects(Some(&fk.name), None)));
                        }
                    }
                }
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// A row of `table` was deleted.
pub fn on_parent_delete(table: &Table, old: &[Value], ctx: &mut Ctx) -> Result<()> {
    if table.extras.referenced_by.is_empty() {
        return Ok(());
    }
    on_parent_change(table, old, None, ctx)
}

/// A row of `table` was updated.
pub fn on_parent_update(table: &Table, old: &[Value], new: &[Value], ctx: &mut Ctx) -> Result<()> {
    if table.extras.referenced_by.is_empty() {
        return Ok(());
    }
    on_parent_change(table, old, Some(new), ctx)
}

/// A foreign key of a table being created (or altered), analyzed.
#[derive(Clone, Debug)]
pub struct FkSpec {
    pub name: Option<String>,
    pub cols: Vec<usize>,
    pub parent: u32,
    pub parent_cols: Vec<usize>,
    /// The referenced table's unique index (checked at definition; not stored).
    pub index: u32,
    pub on_update: char,
    pub on_delete: char,
    /// Added NOT VALID: the existing rows are not checked.
    pub not_valid: bool,
}

/// Analyzes a FOREIGN KEY / REFERENCES constraint of a table with `columns`
/// (`column`: the column of a column constraint).
pub fn analyze(
    a: &crate::analyze::Analyzer,
    table: &str,
    columns: &[crate::catalog::Column],
    c: &pg_query::protobuf::Constraint,
    column: Option<usize>,
) -> Result<FkSpec> {
    use pg_query::NodeEnum;
    let names = |l: &[pg_query::protobuf::Node]| -> Vec<String> {
        l.iter()
            .filter_map(|n| match &n.node {
                Some(NodeEnum::String(s)) => Some(s.sval.clone()),
                _ => None,
            })
            .collect()
    };
    if c.deferrable || c.initdeferred {
        return Err(SqlError::not_supported("deferrable constraints"));
    }
    if c.fk_matchtype == "f" || c.fk_matchtype == "p" {
        return Err(SqlError::not_supported("MATCH FULL / MATCH PARTIAL"));
    }
    let rv = c.pktable.as_ref().ok_or_else(|| SqlError::internal("REFERENCES without a table"))?;
    if rv.relname == table && rv.schemaname.is_empty() {
        return Err(SqlError::not_supported("a foreign key referencing its own table"));
    }
    // The referenced table is locked as the referencing one is for ADD
    // FOREIGN KEY and CREATE TABLE ... REFERENCES: ShareRowExclusiveLock.
    let parent = a.range_table_locked(rv, ferrogres_engine::lmgr::lock::LockMode::ShareRowExclusive).map_err(|mut e| {
        e.position = None;
        e
    })?;
    let mut cols = Vec::new();
    let fk_names = match column {
        Some(i) => vec![columns[i].name.clone()],
        None => names(&c.fk_attrs),
    };
    for n in &fk_names {
        match columns.iter().position(|x| &x.name == n) {
            Some(i) => cols.push(i),
            None => return Err(SqlError::new(b"42703", format!("column \"{n}\" referenced in foreign key constraint does not exist"))),
        }
    }
    let pk_names = names(&c.pk_attrs);
    let (parent_cols, index) = if pk_names.is_empty() {
        match parent.indexes.iter().find(|ix| ix.primary) {
            Some(ix) => (ix.columns.clone(), ix.oid),
            None => return Err(SqlError::new(b"42830", format!("there is no primary key for referenced table \"{}\"", parent.name))),
        }
    } else {
        let mut pc = Vec::new();
        for n in &pk_names {
            match parent.columns.iter().position(|x| &x.name == n) {
                Some(i) => pc.push(i),
                None => return Err(SqlError::new(b"42703", format!("column \"{n}\" referenced in foreign key constraint does not exist"))),
            }
        }
        let mut want = pc.clone();
        want.sort();
        let hit = parent.indexes.iter().find(|ix| {
            let mut k = ix.columns.clone();
            k.sort();
            ix.unique && k == want
        });
        match hit {
            Some(ix) => (pc, ix.oid),
            None => {
                return Err(SqlError::new(
                    b"42830",
                    format!("there is no unique constraint matching given keys for referenced table \"{}\"", parent.name),
                ))
            }
        }
    };
    if parent_cols.len() != cols.len() {
        return Err(SqlError::new(b"42830", "number of referencing and referenced columns for foreign key disagree"));
    }
    let conname = if c.conname.is_empty() {
        let n: Vec<&str> = cols.iter().map(|i| columns[*i].name.as_str()).collect();
        format!("{table}_{}_fkey", n.join("_"))
    } else {
        c.conname.clone()
    };
    for (ci, pi) in cols.iter().zip(&parent_cols) {
        let (ct, pt) = (columns[*ci].ty, parent.columns[*pi].ty);
        let ints = |t: types::Type| matches!(t, types::Type::Int2 | types::Type::Int4 | types::Type::Int8);
        if ct != pt && !(ints(ct) && ints(pt)) {
            return Err(SqlError::new(b"42804", format!("foreign key constraint \"{conname}\" cannot be implemented")).with_detail(format!(
                "Key columns \"{}\" and \"{}\" are of incompatible types: {} and {}.",
                columns[*ci].name,
                parent.columns[*pi].name,
                ct.sql_name(),
                pt.sql_name()
            )));
        }
    }
    let action = |s: &str| -> Result<char> {
        match s.chars().next().unwrap_or('a') {
            ' ' => Ok('a'),
            ch @ ('a' | 'r' | 'c' | 'n' | 'd') => Ok(ch),
            _ => Err(SqlError::not_supported("this referential action")),
        }
    };
    Ok(FkSpec {
        name: (!c.conname.is_empty()).then(|| c.conname.clone()),
        cols,
        parent: parent.oid,
        parent_cols,
        index,
        on_update: action(&c.fk_upd_action)?,
        on_delete: action(&c.fk_del_action)?,
        not_valid: c.skip_validation,
    })
}

/// The default name of a foreign key: `<table>_<col>[_<col>...]_fkey`.
pub fn default_name(table: &Table, cols: &[usize]) -> String {
    let n: Vec<&str> = cols.iter().map(|i| table.columns[*i].name.as_str()).collect();
    format!("{}_{}_fkey", table.name, n.join("_"))
}
