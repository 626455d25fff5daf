//! ALTER TABLE on columns, and RENAME (execution). Analysis
//! (`analyze::ddl_alter_column`) resolves and locks the table
//! (AccessExclusiveLock, held to the end of the transaction); each subcommand
//! then runs in order against the table as the previous ones left it (reloaded
//! after a command-counter increment), so a failure of any one undoes them all
//! with the transaction.
//!
//! How the rows follow the catalog, as in PostgreSQL:
//! - ADD COLUMN appends an attribute. Rows stored before it have fewer
//!   attributes and read it as its *missing value* (`pg_attribute.attmissingval`,
//!   [`crate::rowio::RelStorage::missing`]): the constant default, or NULL. No
//!   rewrite. A volatile default (or an identity) rewrites the table, each row
//!   getting its own value.
//! - DROP COLUMN marks the attribute dropped (`attisdropped`, name
//!   `........pg.dropped.N........`, [`crate::catalog::Column::is_dropped`]):
//!   rows keep the datum, `*`, INSERT and COPY skip it. Indexes, CHECK and
//!   FOREIGN KEY constraints over it are dropped with it; a foreign key of
//!   another table that references it needs CASCADE (2BP01 otherwise).
//! - ALTER COLUMN TYPE rewrites: the rows are read with the old layout,
//!   converted (USING or an assignment cast), and inserted into new relation
//!   files (new relfilenodes, like TRUNCATE's) through `exec::insert_one`, which
//!   rebuilds the indexes and checks the constraints.
//!
//! Every subcommand bumps the catalog version (it is a `Statement::Ddl`), so
//! cached and prepared plans are analyzed again.

use crate::analyze::Analyzer;
use crate::catalog::{self, attribute_rel, attrdef_rel, Table};
use crate::constraints::{self, deparse_expr};
use ferrogres_datum::errors::{Result, SqlError};
use crate::exec::{eval_pure, Ctx, Env};
use crate::plan::{Expr, Statement};
use crate::rowio::scan_rows;
use ferrogres_datum::types::{self, CastContext, Type, Value};
use ferrogres_engine::engine::Backend;
use ferrogres_engine::txn::snapshot::Snapshot;
use ferrogres_engine::txn::visibility::TmResult;
use pg_query::protobuf as pb;
use pg_query::NodeEnum;

/// `ALTER TABLE [IF EXISTS] name subcommand [, ...]` (analyzed: table locked).
#[derive(Clone, Debug)]
pub struct AlterCmd {
    /// `None`: IF EXISTS and there is no such table (a NOTICE).
    pub table_oid: Option<u32>,
    pub relname: String,
    pub cmds: Vec<pb::AlterTableCmd>,
    /// The statement's text (positions of errors in expressions).
    pub sql: String,
}

#[derive(Clone, Debug)]
pub enum RenameKind {
    /// A relation of this relkind: ALTER TABLE / INDEX / SEQUENCE ... RENAME TO.
    Relation(&'static str),
    Column(String),
    Constraint(String),
}

#[derive(Clone, Debug)]
pub struct RenameCmd {
    pub relname: String,
    pub kind: RenameKind,
    pub newname: String,
    pub missing_ok: bool,
}

type Notice<'a> = &'a mut dyn FnMut(SqlError) -> Result<()>;

fn fresh(backend: &mut Backend) -> Result<Snapshot> {
    backend.txn.command_counter_increment()?;
    crate::catcache::ddl_snapshot(backend)
}

fn reload(backend: &mut Backend, oid: u32) -> Result<(Table, Snapshot)> {
    let snap = fresh(backend)?;
    let t = constraints::table_by_oid(backend, &snap, oid)?.ok_or_else(|| SqlError::internal("altered table vanished"))?;
    Ok((t, snap))
}

fn no_column(col: &str, table: &str) -> SqlError {
    SqlError::new(b"42703", format!("column \"{col}\" of relation \"{table}\" does not exist"))
}

fn find_column(t: &Table, name: &str) -> Result<usize> {
    t.columns.iter().position(|c| c.name == name).ok_or_else(|| no_column(name, &t.name))
}

fn concurrent(what: &str) -> SqlError {
    SqlError::new(b"40001", "could not serialize access due to concurrent update")
        .with_detail(format!("\"{what}\" was changed by a concurrent transaction"))
}

/// Deletes catalog row `row` at `tid` (its invalidations registered).
fn delete_tid(backend: &mut Backend, rel: ferrogres_engine::storage::RelFileLocator, tid: ferrogres_engine::heap::tuple::Tid, row: &[Value], what: &str) -> Result<()> {
    match crate::catcache::heap_delete(backend, rel, tid, Some(row))? {
        TmResult::Ok | TmResult::SelfModified => Ok(()),
        _ => Err(concurrent(what)),
    }
}

/// Replaces the pg_attribute row (table, attnum) by a version changed by `f`
/// (given the nine stored columns; older rows are padded with NULLs).
fn update_attribute(backend: &mut Backend, snap: &Snapshot, t: &Table, col: usize, f: &dyn Fn(&mut Vec<Value>)) -> Result<()> {
    let st = attribute_rel();
    let attnum = Value::Int2(col as i16 + 1);
    let Some((tid, mut row)) = scan_rows(backend, &st, snap)?.into_iter().find(|(_, r)| r[0] == Value::Oid(t.oid) && r[3] == attnum) else {
        return Err(SqlError::internal("no pg_attribute row"));
    };
    delete_tid(backend, st.rel, tid, &row, &t.name)?;
    row.resize(st.types.len(), Value::Null);
    if row[6].is_null() {
        row[6] = Value::Bool(false);
    }
    f(&mut row);
    crate::rowio::insert_row(backend, &st, &row)?;
    Ok(())
}

/// Deletes the pg_attrdef row of a column, if it has one.
fn delete_default(backend: &mut Backend, snap: &Snapshot, t: &Table, col: usize) -> Result<()> {
    let st = attrdef_rel();
    let attnum = Value::Int2(col as i16 + 1);
    let doomed: Vec<_> = scan_rows(backend, &st, snap)?.into_iter().filter(|(_, r)| r[0] == Value::Oid(t.oid) && r[1] == attnum).collect();
    for (tid, row) in doomed {
        delete_tid(backend, st.rel, tid, &row, &t.name)?;
    }
    Ok(())
}

/// Stores a column default: a constant in `adbin`, an expression as SQL in `adsrc`.
fn store_default(backend: &mut Backend, t: &Table, col: usize, d: &ColDefault) -> Result<()> {
    match d {
        ColDefault::Const(v) => {
            if let Some(text) = types::output(v) {
                crate::rowio::insert_row(backend, &attrdef_rel(), &[Value::Oid(t.oid), Value::Int2(col as i16 + 1), Value::Text(text), Value::Null])?;
            }
            Ok(())
        }
        ColDefault::Expr(sql, _) => constraints::store_default(backend, t.oid, col as i16 + 1, sql),
    }
}

/// An analyzed DEFAULT.
enum ColDefault {
    Const(Value),
    /// Its SQL and expression (evaluated per row: volatile).
    Expr(String, Expr),
}

fn analyzer<'a>(backend: &'a Backend, snap: &'a Snapshot, sql: &'a str) -> Analyzer<'a> {
    Analyzer { backend, snap, sql, params: Vec::new(), params_allowed: false, views: Default::default(), upper: Default::default(), planner: Default::default(), fold_error: None }
}

fn analyze_default(backend: &Backend, snap: &Snapshot, sql: &str, raw: &NodeEnum, ty: Type, typmod: i32) -> Result<ColDefault> {
    let mut a = analyzer(backend, snap, sql);
    let e = a.default_expr_for(raw, ty, typmod)?;
    if crate::project_set::contains_srf(&e) {
        return Err(SqlError::new(b"0A000", "set-returning functions are not allowed in DEFAULT expressions"));
    }
    match crate::exec::eval_const(&e).map_err(|e| e.at(sql, crate::analyze::node_location(raw)))? {
        Some(v) => Ok(ColDefault::Const(v)),
        None => Ok(ColDefault::Expr(deparse_expr(raw)?, e)),
    }
}

/// Runs a statement built for a subcommand (ADD CONSTRAINT forms) in this transaction.
fn run_statement(stmt: &Statement, backend: &mut Backend, snap: &Snapshot, env: &mut dyn Env, notice: Notice) -> Result<()> {
    match stmt {
        Statement::Ddl(cmd) => constraints::execute(cmd, backend, snap, env, notice).map(|_| ()),
        Statement::Index(cmd) => crate::index::execute(cmd, backend, snap, &*env, notice).map(|_| ()),
        _ => Err(SqlError::internal("unexpected ALTER TABLE subcommand statement")),
    }
}

/// `ALTER TABLE relname ADD <constraint>` analyzed and run now.
fn add_constraint(relname: &str, c: pb::Constraint, sql: &str, backend: &mut Backend, env: &mut dyn Env, notice: Notice) -> Result<()> {
    let snap = fresh(backend)?;
    let cmd = pb::AlterTableCmd {
        subtype: pb::AlterTableType::AtAddConstraint as i32,
        def: Some(Box::new(pb::Node { node: Some(NodeEnum::Constraint(Box::new(c))) })),
        behavior: pb::DropBehavior::DropRestrict as i32,
        ..Default::default()
    };
    let stmt = pb::AlterTableStmt {
        relation: Some(pb::RangeVar { relname: relname.to_string(), inh: true, relpersistence: "p".into(), location: -1, ..Default::default() }),
        cmds: vec![pb::Node { node: Some(NodeEnum::AlterTableCmd(Box::new(cmd))) }],
        objtype: pb::ObjectType::ObjectTable as i32,
        missing_ok: false,
    };
    let plan = {
        let mut a = analyzer(backend, &snap, sql);
        a.statement(&NodeEnum::AlterTableStmt(stmt))?
    };
    run_statement(&plan, backend, &snap, env, notice)
}

/// Runs an ALTER TABLE of this module in the current transaction.
pub fn execute(cmd: &AlterCmd, backend: &mut Backend, env: &mut dyn Env, notice: Notice) -> Result<String> {
    let Some(oid) = cmd.table_oid else {
        notice(SqlError::notice(b"00000", format!("relation \"{}\" does not exist, skipping", cmd.relname)))?;
        return Ok("ALTER TABLE".into());
    };
    use pb::AlterTableType as A;
    for sub in &cmd.cmds {
        let (t, snap) = reload(backend, oid)?;
        match A::try_from(sub.subtype).unwrap_or(A::Undefined) {
            A::AtAddColumn => add_column(cmd, sub, t, &snap, backend, env, notice)?,
            A::AtDropColumn => drop_column(sub, t, &snap, backend, notice)?,
            A::AtColumnDefault => {
                let col = find_column(&t, &sub.name)?;
                if crate::identity::of(&t, col).is_some() && sub.def.is_some() {
                    return Err(SqlError::new(b"42601", format!("column \"{}\" of relation \"{}\" is an identity column", sub.name, t.name))
                        .with_hint("Use ALTER TABLE ... ALTER COLUMN ... DROP IDENTITY instead."));
                }
                delete_default(backend, &snap, &t, col)?;
                if let Some(raw) = sub.def.as_ref().and_then(|d| d.node.as_ref()) {
                    let c = &t.columns[col];
                    let d = analyze_default(backend, &snap, &cmd.sql, raw, c.ty, c.typmod)?;
                    if !matches!(&d, ColDefault::Const(v) if v.is_null()) {
                        store_default(backend, &t, col, &d)?;
                    }
                }
            }
            A::AtSetNotNull => {
                let col = find_column(&t, &sub.name)?;
                if !t.columns[col].not_null {
                    let rows = scan_rows(backend, &t.storage, &snap)?;
                    if rows.iter().any(|(_, r)| r[col].is_null()) {
                        return Err(SqlError::new(b"23502", format!("column \"{}\" of relation \"{}\" contains null values", sub.name, t.name)));
                    }
                    update_attribute(backend, &snap, &t, col, &|r| r[5] = Value::Bool(true))?;
                }
            }
            A::AtDropNotNull => {
                let col = find_column(&t, &sub.name)?;
                if t.indexes.iter().any(|ix| ix.primary && ix.columns.contains(&col)) {
                    return Err(SqlError::new(b"42P16", format!("column \"{}\" is in a primary key", sub.name)));
                }
                if crate::identity::of(&t, col).is_some() {
                    return Err(SqlError::new(b"42P16", format!("column \"{}\" of relation \"{}\" is an identity column", sub.name, t.name)));
                }
                update_attribute(backend, &snap, &t, col, &|r| r[5] = Value::Bool(false))?;
            }
            A::AtAlterColumnType => alter_type(cmd, sub, t, &snap, backend, env)?,
            A::AtAddIdentity | A::AtDropIdentity | A::AtSetIdentity => crate::identity::alter(cmd, sub, &t, &snap, backend, notice)?,
            A::AtAddConstraint => {
                let Some(NodeEnum::Constraint(c)) = sub.def.as_ref().and_then(|d| d.node.as_ref()) else {
                    return Err(SqlError::not_supported("this form of ALTER TABLE"));
                };
                add_constraint(&t.name, (**c).clone(), &cmd.sql, backend, env, notice)?;
            }
            A::AtValidateConstraint => validate_constraint(&t, &sub.name, &snap, backend, env)?,
            _ => return Err(SqlError::not_supported("this form of ALTER TABLE")),
        }
    }
    Ok("ALTER TABLE".into())
}

/// `ALTER TABLE t VALIDATE CONSTRAINT name`: a foreign key added NOT VALID
/// has the existing rows checked (`foreign_key::validate_existing`) and is
/// marked validated (its pg_constraint row replaced); a validated one, or a
/// CHECK constraint (always validated here), is left as it is. `t` is locked
/// ShareUpdateExclusiveLock (analysis: readers and writers go on), the
/// referenced table RowShareLock here, as in PostgreSQL.
fn validate_constraint(t: &Table, name: &str, snap: &Snapshot, backend: &mut Backend, env: &mut dyn Env) -> Result<()> {
    let st = crate::index::constraint_rel();
    let found = scan_rows(backend, &st, snap)?.into_iter().find(|(_, r)| r[4] == Value::Oid(t.oid) && r[1] == Value::Text(name.to_string()));
    let Some((tid, mut row)) = found else {
        return Err(SqlError::new(b"42704", format!("constraint \"{name}\" of relation \"{}\" does not exist", t.name)));
    };
    match &row[3] {
        Value::Text(k) if k == "f" => {}
        Value::Text(k) if k == "c" => return Ok(()),
        _ => {
            return Err(SqlError::new(b"42809", format!("constraint \"{name}\" of relation \"{}\" is not a foreign key or check constraint", t.name)))
        }
    }
    let fk = t.extras.fkeys.iter().find(|f| f.name == name).ok_or_else(|| SqlError::internal("foreign key not loaded with its table"))?;
    if fk.validated {
        return Ok(());
    }
    let parent_name = fk.parent_table.as_ref().map_or_else(String::new, |p| p.name.clone());
    crate::locking::lock_relation(backend, fk.parent, ferrogres_engine::lmgr::lock::LockMode::RowShare, false, &parent_name)?;
    {
        let mut ctx = Ctx { backend: &mut *backend, snap: snap.clone(), params: &[], env };
        crate::foreign_key::validate_existing(t, fk, &mut ctx)?;
    }
    let Value::Text(bin) = &row[7] else { return Err(SqlError::internal("foreign key without conbin")) };
    let validated = bin.strip_suffix(" notvalid").unwrap_or(bin).to_string();
    delete_tid(backend, st.rel, tid, &row, &t.name)?;
    row[7] = Value::Text(validated);
    crate::rowio::insert_row(backend, &st, &row)?;
    Ok(())
}

fn add_column(cmd: &AlterCmd, sub: &pb::AlterTableCmd, t: Table, snap: &Snapshot, backend: &mut Backend, env: &mut dyn Env, notice: Notice) -> Result<()> {
    let Some(NodeEnum::ColumnDef(cd)) = sub.def.as_ref().and_then(|d| d.node.as_ref()) else {
        return Err(SqlError::internal("ADD COLUMN without a column"));
    };
    crate::rowio::check_not_system_column(&cd.colname)?;
    if t.columns.iter().any(|c| c.name == cd.colname) {
        let msg = format!("column \"{}\" of relation \"{}\" already exists", cd.colname, t.name);
        if sub.missing_ok {
            return notice(SqlError::notice(b"42701", format!("{msg}, skipping")));
        }
        return Err(SqlError::new(b"42701", msg));
    }
    if t.columns.len() >= 1600 {
        return Err(SqlError::new(b"54011", "tables can have at most 1600 columns"));
    }
    let serial = crate::analyze::ddl_alter_column::serial_type_of(cd.type_name.as_ref());
    let (ty, typmod) = match serial {
        Some(ty) => (ty, -1),
        None => analyzer(backend, snap, &cmd.sql).type_name(cd.type_name.as_ref()).map_err(|e| {
            let mut e = e;
            e.position = None;
            e
        })?,
    };
    let col = t.columns.len();
    let mut not_null = cd.is_not_null;
    let mut later: Vec<pb::Constraint> = Vec::new();
    let mut identity: Option<(String, Vec<pb::Node>)> = None;
    for c in &cd.constraints {
        let Some(NodeEnum::Constraint(c)) = &c.node else { continue };
        use pb::ConstrType as C;
        match C::try_from(c.contype).unwrap_or(C::Undefined) {
            C::ConstrNotnull => not_null = true,
            C::ConstrNull => not_null = false,
            C::ConstrDefault => {}
            C::ConstrIdentity => identity = Some((c.generated_when.clone(), c.options.clone())),
            C::ConstrPrimary | C::ConstrUnique => {
                let mut c = (**c).clone();
                c.keys = vec![pb::Node { node: Some(NodeEnum::String(pb::String { sval: cd.colname.clone() })) }];
                later.push(c);
            }
            C::ConstrForeign => {
                let mut c = (**c).clone();
                c.fk_attrs = vec![pb::Node { node: Some(NodeEnum::String(pb::String { sval: cd.colname.clone() })) }];
                later.push(c);
            }
            C::ConstrCheck => later.push((**c).clone()),
            other => return Err(SqlError::not_supported(format!("column constraint {other:?} in ADD COLUMN"))),
        }
    }
    let raw_default = crate::analyze::ddl_alter_column::column_default(cd);
    if identity.is_some() && raw_default.is_some() {
        return Err(SqlError::new(b"42601", format!("both default and identity specified for column \"{}\" of table \"{}\"", cd.colname, t.name)));
    }
    let mut default = match raw_default {
        Some(raw) => Some(analyze_default(backend, snap, &cmd.sql, raw, ty, typmod)?),
        None => None,
    };
    if identity.is_some() {
        not_null = true;
    }
    if serial.is_some() {
        if default.is_some() {
            return Err(SqlError::new(b"42601", format!("multiple default values specified for column \"{}\" of table \"{}\"", cd.colname, t.name)));
        }
        not_null = true;
    }
    // The attribute, with its missing value when the default is a constant.
    let missing = match &default {
        Some(ColDefault::Const(v)) if !v.is_null() => types::output(v),
        _ => None,
    };
    crate::rowio::insert_row(
        backend,
        &attribute_rel(),
        &[
            Value::Oid(t.oid),
            Value::Text(cd.colname.clone()),
            Value::Oid(ty.oid()),
            Value::Int2(col as i16 + 1),
            Value::Int4(typmod),
            Value::Bool(not_null),
            Value::Bool(false),
            Value::Null,
            missing.map_or(Value::Null, Value::Text),
        ],
    )?;
    crate::index::update_class_row(backend, snap, t.oid, &|r| r[6] = Value::Int2(col as i16 + 2 - 1))?;
    // SERIAL and identity: a sequence owned by the column and a nextval default.
    let seq_default = match &identity {
        Some((when, opts)) => {
            let (_, snap2) = reload(backend, t.oid)?;
            Some(crate::identity::create(backend, &snap2, &cmd.sql, &t, col, &cd.colname, ty, when, opts)?)
        }
        None if serial.is_some() => Some(crate::identity::serial_sequence(backend, snap, &t, col, &cd.colname, ty)?),
        None => None,
    };
    if let Some(sql) = seq_default {
        let node = crate::constraints::parse_expr(&sql)?;
        let (_, snap2) = reload(backend, t.oid)?;
        default = Some(analyze_default(backend, &snap2, &sql, &node, ty, typmod)?);
    }
    if let Some(d) = &default {
        if !matches!(d, ColDefault::Const(v) if v.is_null()) {
            store_default(backend, &t, col, d)?;
        }
    }
    let (nt, snap) = reload(backend, t.oid)?;
    match &default {
        // Volatile: a rewrite, each row with its own value.
        Some(ColDefault::Expr(_, e)) => {
            let e = e.clone();
            let rows: Vec<Vec<Value>> = scan_rows(backend, &nt.storage, &snap)?.into_iter().map(|r| r.1).collect();
            rewrite(backend, &nt, rows, env, &mut |row, ctx| {
                row[col] = eval_pure(&e, &[], &[], &[], ctx.env)?;
                Ok(())
            })?;
        }
        _ if nt.columns[col].not_null
            && !scan_rows(backend, &nt.storage, &snap)?.iter().all(|(_, r)| !r[col].is_null()) => {
                return Err(SqlError::new(b"23502", format!("column \"{}\" of relation \"{}\" contains null values", cd.colname, t.name)));
            }
        _ => {}
    }
    for c in later {
        add_constraint(&t.name, c, &cmd.sql, backend, env, notice)?;
    }
    Ok(())
}

/// Moves the rows `rows` (in the table's current layout) into new relation
/// files, each changed by `f` first; the indexes get new files and entries.
/// The old files are left to the pending-delete list (`engine::smgr` README).
fn rewrite(backend: &mut Backend, t: &Table, rows: Vec<Vec<Value>>, env: &mut dyn Env, f: &mut dyn FnMut(&mut Vec<Value>, &mut Ctx) -> Result<()>) -> Result<()> {
    let snap = fresh(backend)?;
    crate::index::truncate_files(backend, &snap, std::slice::from_ref(t))?;
    let (mut nt, snap) = reload(backend, t.oid)?;
    if nt.storage.toast.is_none() && nt.columns.iter().any(|c| c.ty.typlen() == -1) {
        let engine = backend.engine().clone();
        let n = engine.new_oid();
        engine.create_relation(catalog::locator(n))?;
        backend.txn.pending_deletes.at_abort(catalog::locator(n));
        crate::index::update_class_row(backend, &snap, t.oid, &|r| r[4] = Value::Oid(n))?;
        nt.storage.toast = Some(catalog::locator(n));
    }
    let mut ctx = Ctx { backend, snap, params: &[], env };
    for mut row in rows {
        f(&mut row, &mut ctx)?;
        crate::exec::insert_one(&nt, &row, &mut ctx)?;
    }
    // SERIALIZABLE: the SIREAD locks on the old files move to the new heap
    // now that the rows are in (not before: these inserts are no write
    // anyone read, PostgreSQL's rewrite goes to a relation nobody locked).
    crate::index::transfer_predicate_locks(ctx.backend.engine(), t, nt.storage.rel);
    Ok(())
}

fn drop_column(sub: &pb::AlterTableCmd, t: Table, snap: &Snapshot, backend: &mut Backend, notice: Notice) -> Result<()> {
    let Some(col) = t.columns.iter().position(|c| c.name == sub.name) else {
        if sub.missing_ok {
            return notice(SqlError::notice(b"00000", format!("column \"{}\" of relation \"{}\" does not exist, skipping", sub.name, t.name)));
        }
        return Err(no_column(&sub.name, &t.name));
    };
    let cascade = sub.behavior == pb::DropBehavior::DropCascade as i32;
    // Foreign keys of other tables referencing this column.
    let deps: Vec<&crate::foreign_key::ForeignKey> =
        t.extras.referenced_by.iter().filter(|fk| fk.child != t.oid && fk.parent_cols.contains(&col)).collect();
    if !deps.is_empty() {
        let mut lines = Vec::new();
        for fk in &deps {
            let child = constraints::table_by_oid(backend, snap, fk.child)?.map_or_else(|| fk.child.to_string(), |c| c.name);
            lines.push((format!("constraint {} on table {child} depends on column {} of table {}", fk.name, sub.name, t.name), format!("drop cascades to constraint {} on table {child}", fk.name)));
        }
        if !cascade {
            return Err(SqlError::new(b"2BP01", format!("cannot drop column {} of table {} because other objects depend on it", sub.name, t.name))
                .with_detail(lines.iter().map(|l| l.0.clone()).collect::<Vec<_>>().join("\n"))
                .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
        }
        let msg = if lines.len() == 1 {
            lines[0].1.clone()
        } else {
            format!("drop cascades to {} other objects", lines.len())
        };
        let mut n = SqlError::notice(b"00000", msg);
        if lines.len() > 1 {
            n = n.with_detail(lines.iter().map(|l| l.1.clone()).collect::<Vec<_>>().join("\n"));
        }
        notice(n)?;
        for fk in deps {
            delete_constraint(backend, snap, fk.child, &fk.name)?;
        }
    }
    // Indexes over it (and their PRIMARY KEY / UNIQUE constraints).
    for ix in t.indexes.iter().filter(|ix| ix.columns.contains(&col)) {
        crate::index::drop_index(backend, snap, ix)?;
    }
    // CHECK constraints reading it, and this table's foreign keys over it.
    for c in t.extras.checks.iter().filter(|c| {
        let mut cols = Vec::new();
        constraints::columns_of(&c.expr, &mut cols);
        cols.contains(&col)
    }) {
        delete_constraint(backend, snap, t.oid, &c.name)?;
    }
    for fk in t.extras.fkeys.iter().filter(|fk| fk.cols.contains(&col)) {
        delete_constraint(backend, snap, t.oid, &fk.name)?;
    }
    for (oid, name) in crate::sequence::owned_by(backend, snap, t.oid)? {
        if crate::identity::owner_column(backend, oid)? == Some(col) {
            crate::sequence::drop_sequence(backend, snap, oid, &name)?;
        }
    }
    delete_default(backend, snap, &t, col)?;
    let dropped = format!("........pg.dropped.{}........", col + 1);
    update_attribute(backend, snap, &t, col, &|r| {
        r[1] = Value::Text(dropped.clone());
        r[5] = Value::Bool(false);
        r[6] = Value::Bool(true);
        r[7] = Value::Null;
        r[8] = Value::Null;
    })
}

/// Deletes the pg_constraint row `name` of table `rel` (CHECK or FOREIGN KEY).
fn delete_constraint(backend: &mut Backend, snap: &Snapshot, rel: u32, name: &str) -> Result<()> {
    let st = crate::index::constraint_rel();
    let doomed: Vec<_> = scan_rows(backend, &st, snap)?
        .into_iter()
        .filter(|(_, r)| r[4] == Value::Oid(rel) && r[1] == Value::Text(name.to_string()))
        .collect();
    for (tid, row) in doomed {
        delete_tid(backend, st.rel, tid, &row, name)?;
    }
    Ok(())
}

fn alter_type(cmd: &AlterCmd, sub: &pb::AlterTableCmd, t: Table, snap: &Snapshot, backend: &mut Backend, env: &mut dyn Env) -> Result<()> {
    let col = find_column(&t, &sub.name)?;
    let Some(NodeEnum::ColumnDef(cd)) = sub.def.as_ref().and_then(|d| d.node.as_ref()) else {
        return Err(SqlError::internal("ALTER TYPE without a definition"));
    };
    let old = t.columns[col].clone();
    let (ty, typmod) = {
        let a = analyzer(backend, snap, &cmd.sql);
        a.type_name(cd.type_name.as_ref())?
    };
    if t.extras.referenced_by.iter().any(|fk| fk.parent_cols.contains(&col)) || t.extras.fkeys.iter().any(|fk| fk.cols.contains(&col)) {
        return Err(SqlError::not_supported("ALTER COLUMN TYPE of a column in a foreign key"));
    }
    // The conversion of each row's value.
    let conv: Expr = {
        let mut a = analyzer(backend, snap, &cmd.sql);
        match crate::analyze::ddl_alter_column::raw_node(&cd.raw_default) {
            Some(using) => {
                let e = a.row_expr(using, &t)?;
                a.coerce_assignment(e, ty, typmod).map_err(|_| {
                    SqlError::new(b"42804", format!("result of USING clause for column \"{}\" cannot be cast automatically to type {}", old.name, ty.name_with_typmod(typmod)))
                        .with_hint("You might need to add an explicit cast.")
                        .at(&cmd.sql, -1)
                })
?
            }
            None => {
                let e = Expr::Column(col, old.ty);
                if old.ty != ty && !types::cast_allowed(old.ty, ty, CastContext::Assignment) {
                    return Err(SqlError::new(b"42804", format!("column \"{}\" cannot be cast automatically to type {}", old.name, ty.name_with_typmod(typmod)))
                        .with_hint(format!("You might need to specify \"USING {}::{}\".", quote_ident(&old.name), ty.name_with_typmod(typmod))));
                }
                a.coerce_assignment(e, ty, typmod)?
            }
        }
    };
    // A constant default follows the type (an expression default is analyzed again at load).
    let new_default = match &old.default {
        Some(v) => {
            if !types::cast_allowed(old.ty, ty, CastContext::Assignment) && old.ty != ty {
                return Err(SqlError::new(b"42804", format!("default for column \"{}\" cannot be cast automatically to type {}", old.name, ty.name_with_typmod(typmod))));
            }
            Some(types::cast(v.clone(), old.ty, ty, typmod, false)?)
        }
        None => None,
    };
    let rows: Vec<Vec<Value>> = scan_rows(backend, &t.storage, snap)?.into_iter().map(|r| r.1).collect();
    update_attribute(backend, snap, &t, col, &|r| {
        r[2] = Value::Oid(ty.oid());
        r[4] = Value::Int4(typmod);
        r[8] = Value::Null;
    })?;
    if let Some(v) = &new_default {
        delete_default(backend, snap, &t, col)?;
        store_default(backend, &t, col, &ColDefault::Const(v.clone()))?;
    }
    let (nt, _) = reload(backend, t.oid)?;
    let conv = &conv;
    rewrite(backend, &nt, rows, env, &mut |row, ctx| {
        let v = eval_pure(conv, row, &[], &[], ctx.env)?;
        row[col] = v;
        Ok(())
    })
}

pub(crate) fn quote_ident(s: &str) -> String {
    let plain = s.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}

// ---- RENAME ----------------------------------------------------------------------

/// Runs a RENAME in the current transaction.
pub fn rename(cmd: &RenameCmd, backend: &mut Backend, notice: Notice) -> Result<String> {
    let snap = fresh(backend)?;
    let ns = catalog::PUBLIC_NAMESPACE;
    let found = crate::index::find_relation(backend, &snap, ns, &cmd.relname)?;
    let tag = match cmd.kind {
        RenameKind::Relation("i") => "ALTER INDEX",
        RenameKind::Relation("S") => "ALTER SEQUENCE",
        RenameKind::Relation("v") => "ALTER VIEW",
        _ => "ALTER TABLE",
    };
    let Some((oid, kind)) = found else {
        if cmd.missing_ok {
            notice(SqlError::notice(b"00000", format!("relation \"{}\" does not exist, skipping", cmd.relname)))?;
            return Ok(tag.into());
        }
        return Err(SqlError::new(b"42P01", format!("relation \"{}\" does not exist", cmd.relname)));
    };
    match &cmd.kind {
        RenameKind::Relation(want) => {
            if *want == "S" && kind != "S" {
                return Err(SqlError::new(b"42809", format!("\"{}\" is not a sequence", cmd.relname)));
            }
            // ALTER TABLE and ALTER INDEX may rename any relation, as in
            // PostgreSQL (the lock taken differs: `ddl_alter_column::rename`).
            if crate::index::find_relation(backend, &snap, ns, &cmd.newname)?.is_some() {
                return Err(SqlError::new(b"42P07", format!("relation \"{}\" already exists", cmd.newname)));
            }
            let newname = cmd.newname.clone();
            crate::index::update_class_row(backend, &snap, oid, &|r| r[1] = Value::Text(newname.clone()))?;
        }
        RenameKind::Column(old) => {
            let t = constraints::table_by_oid(backend, &snap, oid)?.ok_or_else(|| SqlError::new(b"42809", format!("\"{}\" is not a table", cmd.relname)))?;
            let col = t.columns.iter().position(|c| &c.name == old).ok_or_else(|| SqlError::new(b"42703", format!("column \"{old}\" does not exist")))?;
            crate::rowio::check_not_system_column(&cmd.newname)?;
            if t.columns.iter().any(|c| c.name == cmd.newname) {
                return Err(SqlError::new(b"42701", format!("column \"{}\" of relation \"{}\" already exists", cmd.newname, t.name)));
            }
            let newname = cmd.newname.clone();
            update_attribute(backend, &snap, &t, col, &|r| r[1] = Value::Text(newname.clone()))?;
            // CHECK constraints are stored as SQL text: rename the column there too.
            let st = crate::index::constraint_rel();
            for (tid, mut row) in scan_rows(backend, &st, &snap)? {
                if row[4] == Value::Oid(t.oid) && row[3] == Value::Text("c".into()) {
                    if let Value::Text(sql) = &row[7] {
                        let renamed = rename_identifier(sql, old, &cmd.newname)?;
                        if &renamed != sql {
                            delete_tid(backend, st.rel, tid, &row, &t.name)?;
                            row[7] = Value::Text(renamed);
                            crate::rowio::insert_row(backend, &st, &row)?;
                        }
                    }
                }
            }
        }
        RenameKind::Constraint(old) => {
            let t = constraints::table_by_oid(backend, &snap, oid)?.ok_or_else(|| SqlError::new(b"42809", format!("\"{}\" is not a table", cmd.relname)))?;
            let st = crate::index::constraint_rel();
            let rows = scan_rows(backend, &st, &snap)?;
            let Some((tid, mut row)) = rows.iter().find(|(_, r)| r[4] == Value::Oid(t.oid) && r[1] == Value::Text(old.clone())).cloned() else {
                return Err(SqlError::new(b"42704", format!("constraint \"{old}\" for table \"{}\" does not exist", t.name)));
            };
            if rows.iter().any(|(_, r)| r[4] == Value::Oid(t.oid) && r[1] == Value::Text(cmd.newname.clone())) {
                return Err(SqlError::new(b"42710", format!("constraint \"{}\" for relation \"{}\" already exists", cmd.newname, t.name)));
            }
            // An index-backed constraint renames its index too.
            if let Value::Oid(ix) = row[5] {
                if ix != 0 {
                    if crate::index::find_relation(backend, &snap, ns, &cmd.newname)?.is_some() {
                        return Err(SqlError::new(b"42P07", format!("relation \"{}\" already exists", cmd.newname)));
                    }
                    let newname = cmd.newname.clone();
                    crate::index::update_class_row(backend, &snap, ix, &|r| r[1] = Value::Text(newname.clone()))?;
                }
            }
            delete_tid(backend, st.rel, tid, &row, &t.name)?;
            row[1] = Value::Text(cmd.newname.clone());
            crate::rowio::insert_row(backend, &st, &row)?;
        }
    }
    Ok(tag.into())
}

/// `sql` with every identifier token naming `old` replaced by `new` (quoted as needed).
fn rename_identifier(sql: &str, old: &str, new: &str) -> Result<String> {
    let scan = pg_query::scan(sql).map_err(|e| SqlError::internal(format!("scan: {e}")))?;
    let mut out = String::new();
    let mut at = 0usize;
    for tok in scan.tokens {
        let (s, e) = (tok.start as usize, tok.end as usize);
        let text = &sql[s..e];
        let ident = if text.starts_with('"') { text[1..text.len() - 1].replace("\"\"", "\"") } else { text.to_ascii_lowercase() };
        if tok.token == pg_query::protobuf::Token::Ident as i32 && ident == old {
            out.push_str(&sql[at..s]);
            out.push_str(&quote_ident(new));
            at = e;
        }
    }
    out.push_str(&sql[at..]);
    Ok(out)
}
